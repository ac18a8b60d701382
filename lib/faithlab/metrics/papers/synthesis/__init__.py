"""The rival metrics the study sets beside the papers' (issue 72), on the book's synthesis page (slug
``synthesis``): ``road_curves`` (ROAD, Rong et al., ICML 2022: removal curves with noisy linear imputation, no
retraining, F-Fidelity's rival fix of the out-of-distribution problem, also in F-Fidelity's chapter) and
``explanation_infidelity`` (Yeh et al., NeurIPS 2019, through captum). Their public names (``road``,
``infidelity``, …) are gathered here and in :mod:`faithlab.metrics`; no module is named like a function, which
the package's name would then hide.
"""

from faithlab.metrics.papers.synthesis import explanation_infidelity, road_curves
from faithlab.metrics.papers.synthesis.explanation_infidelity import *  # noqa: F401,F403  (the package is the namespace)
from faithlab.metrics.papers.synthesis.road_curves import *  # noqa: F401,F403

__all__ = [*explanation_infidelity.__all__, *road_curves.__all__]

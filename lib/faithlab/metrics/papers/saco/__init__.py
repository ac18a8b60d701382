"""SaCo (Wu et al., CVPR 2024; spec §3): ``consistency`` (the Salience-guided Faithfulness Coefficient) and
``cumulative`` (accuracy AUC, AOPC, log-odds and comprehensiveness, the cumulative-removal metrics the paper compares
SaCo with). Their public names are gathered here and in :mod:`faithlab.metrics` (``fl.metrics.saco(...)``).
"""

from faithlab.metrics.papers.saco import consistency, cumulative
from faithlab.metrics.papers.saco.consistency import *  # noqa: F401,F403  (the package is the paper's namespace)
from faithlab.metrics.papers.saco.cumulative import *  # noqa: F401,F403

__all__ = ["consistency", "cumulative", *consistency.__all__, *cumulative.__all__]

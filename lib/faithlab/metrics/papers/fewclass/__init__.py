"""Few-class Fidelity (Marchadour, Soto Vega, Vermet, Hatt; spec §2): ``blurs`` (the candidate perturbed images and
their grids), ``fidelity`` (the candidate search, MIF/LIF curves and the Fid score) and ``localisation`` (the IoU
and Dice ground truth the paper compares Fid with). Their public names are gathered here:
``fl.metrics.fewclass.fewclass_fid(...)``, ``fl.metrics.fewclass.localisation_iou``.
"""

from faithlab.metrics.papers.fewclass import blurs, fidelity, localisation
from faithlab.metrics.papers.fewclass.blurs import *  # noqa: F401,F403
from faithlab.metrics.papers.fewclass.fidelity import *  # noqa: F401,F403  (the package is the paper's namespace)
from faithlab.metrics.papers.fewclass.localisation import *  # noqa: F401,F403

__all__ = ["blurs", "fidelity", "localisation", *blurs.__all__, *fidelity.__all__, *localisation.__all__]

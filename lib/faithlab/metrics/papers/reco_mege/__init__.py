"""ReCo and MeGe (Fel & Vigouroux 2020; spec §4): ``crossfold`` (the two metrics, read across k cross-trained
models), ``baselines`` (Bhatt et al.'s μF and S_avg, which the paper compares them with) and ``distances`` (the map
distances of its sanity checks, :func:`~faithlab.metrics.papers.reco_mege.distances.map_distance`). The public names
of ``crossfold`` and ``baselines`` and ``map_distance`` are gathered here and in :mod:`faithlab.metrics`
(``fl.metrics.reco_mege(...)``, ``fl.metrics.mu_fidelity(...)``). ``DISTANCES`` here is ``crossfold``'s (the two
Spearman distances of ReCo/MeGe); the six kinds of the sanity checks are ``distances.DISTANCES``.
"""

from faithlab.metrics.papers.reco_mege import baselines, crossfold, distances
from faithlab.metrics.papers.reco_mege.baselines import *  # noqa: F401,F403  (the package is the paper's namespace)
from faithlab.metrics.papers.reco_mege.crossfold import *  # noqa: F401,F403
from faithlab.metrics.papers.reco_mege.distances import map_distance

__all__ = ["crossfold", "baselines", "distances", "map_distance", *crossfold.__all__, *baselines.__all__]

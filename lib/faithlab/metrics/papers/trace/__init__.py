"""TRACE (Wang & Wang; spec §5): ``trajectories`` (the patch grid, trajectories, deletion curves and the ΣLeRF −
ΣMoRF metric) and ``search`` (the searches for the trajectories that optimise them, one module per search). The
public names of ``trajectories`` are gathered here: ``fl.metrics.trace.lerf_morf(...)``;
``fl.metrics.search.anneal(...)`` is ``fl.metrics.trace.search.anneal``.
"""

from faithlab.metrics.papers.trace import trajectories
from faithlab.metrics.papers.trace.trajectories import *  # noqa: F401,F403  (the package is the paper's namespace)
from faithlab.metrics.papers.trace import search

__all__ = ["trajectories", "search", *trajectories.__all__]

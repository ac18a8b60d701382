"""TRACE's searches (Wang & Wang, spec §5.2–5.6): the trajectories that optimise the patch deletion curves of
:mod:`faithlab.metrics.papers.trace.trajectories`, the bounds of the complete search and the random deletion test; one
module per search, each beside its cost twin.

The optimisation problems (the paper's definitions, not the released code's, whose ``'Le'``/``'Mo'`` labels are
swapped): ``"le"`` maximise ΣLeRF(τ); ``"mo"`` minimise ΣMoRF(τ); ``"le-mo"`` maximise ΣLeRF(τ) − ΣMoRF(τ)
(:func:`objective_value`, in :mod:`~faithlab.metrics.papers.trace.search.base` with :class:`Search`). :func:`greedy`
(:mod:`~faithlab.metrics.papers.trace.search.greedy_search`: TRACE-Greedy, exact for additive models), :func:`anneal`
(:mod:`~faithlab.metrics.papers.trace.search.annealing`: TRACE-SA with the swap neighbourhood, incremental energy and
all images in one batch), the other meta-heuristics of the paper's Appendix E, :func:`genetic`
(:mod:`~faithlab.metrics.papers.trace.search.genetic_algorithm`) and :func:`tabu`
(:mod:`~faithlab.metrics.papers.trace.search.tabu_search`), whose details are ours, and :func:`complete_search`
(:mod:`~faithlab.metrics.papers.trace.search.complete`: the CS bounds for small t) search them, each returning a
:class:`Search` (or the CS bounds) with the curves it evaluated;
:func:`random_deletion_curves` (:mod:`~faithlab.metrics.papers.trace.search.random_orders`) draws uniformly random
orders (Fig. 4). A searched trajectory maps back to an attribution with
:func:`faithlab.metrics.papers.trace.trajectories.trajectory_attribution`.

Every function evaluates its perturbed inputs through the removal engine, at most ``batch_size`` per forward
call, so results do not depend on ``batch_size``; randomness comes only from ``generator``.

Cost: a search is many forward passes of the model (at 224 px, TRACE's 7 × 7 grid, a CPU ResNet-18 spends ~20 ms
per input). :func:`anneal_cost` says exactly how many inputs :func:`anneal` will evaluate before it runs, and
:func:`anneal` shows it on its progress bar (:func:`genetic_cost` and :func:`tabu_cost` do the same for the other
meta-heuristics). Its default :data:`ITERATIONS` (50) polishes the greedy start in minutes
on a CPU for a few images; the paper's K = 5,000 (:data:`PAPER_ITERATIONS`) is ``iterations=PAPER_ITERATIONS``.
Used as ``fl.metrics.search.anneal(...)``.
"""

from faithlab.metrics.papers.trace.search.base import OBJECTIVES, Search, objective_value
from faithlab.metrics.papers.trace.search.greedy_search import greedy
from faithlab.metrics.papers.trace.search.annealing import ITERATIONS, PAPER_ITERATIONS, T0, anneal, anneal_cost
from faithlab.metrics.papers.trace.search.genetic_algorithm import ELITE, GENERATIONS, POPULATION, genetic, genetic_cost
from faithlab.metrics.papers.trace.search.tabu_search import NEIGHBOURS, TENURE, tabu, tabu_cost
from faithlab.metrics.papers.trace.search.complete import complete_search
from faithlab.metrics.papers.trace.search.random_orders import random_deletion_curves

__all__ = ["OBJECTIVES", "T0", "ITERATIONS", "PAPER_ITERATIONS", "POPULATION", "GENERATIONS", "ELITE", "NEIGHBOURS",
           "TENURE", "Search", "objective_value", "greedy", "anneal", "anneal_cost", "genetic", "genetic_cost", "tabu",
           "tabu_cost", "complete_search", "random_deletion_curves"]

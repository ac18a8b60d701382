"""Tabu search over TRACE's trajectories with the swap neighbourhood (Wang & Wang, Appendix E; the variant and its
settings are ours) and :func:`tabu_cost`, its exact count of model inputs before it runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics.papers.trace import trajectories as T
from faithlab.metrics.papers.trace.search._chain import Chain, chain_result, start
from faithlab.metrics.papers.trace.search.annealing import ITERATIONS
from faithlab.metrics.papers.trace.search.base import (OBJECTIVES, NAMES, Search, at_least_two, init_kind,
                                                       non_negative_int, pair, image_shape, swap, objective_value,
                                                       search_setup)
from faithlab.metrics.papers.trace.trajectories import Setup
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["NEIGHBOURS", "TENURE", "tabu", "tabu_cost"]

NEIGHBOURS = 8
""":func:`tabu`'s default number of sampled swap moves per iteration (our choice)."""
TENURE = 7
""":func:`tabu`'s default tenure: a swapped pair of patches may not be swapped back for this many iterations unless
that beats the best trajectory found (our choice, the textbook order of magnitude)."""


def tabu(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le-mo",
         init: Search | torch.Tensor | None = None, iterations: int = ITERATIONS, n_neighbours: int = NEIGHBOURS,
         tenure: int = TENURE, generator: torch.Generator | int | None = None, reference: Reference = "zero",
         output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = None,
         sample_index: torch.Tensor | None = None, progress: bool | None = None) -> Search:
    """Tabu search over trajectories with the swap neighbourhood: one of the other meta-heuristics the paper
    explores in its Appendix E (the text we have only refers to that appendix and cites Glover, who introduced tabu
    search; it gives none of its details, so the variant and its settings here are our choices).

    Every iteration samples, for every image, ``n_neighbours`` swaps of two positions (each uniform over the
    C(t, 2) pairs, independently, so a pair may repeat: our choice, the full neighbourhood is C(t, 2) = 1,176
    swaps at t = 49) and moves to the best admissible one even when it is worse than the current trajectory. A
    swap of the patches p and q is tabu for ``tenure`` iterations after the search swapped them (the tabu list
    holds patch pairs, so the move that would undo a recent one is refused), unless it beats the best trajectory
    found so far (aspiration). When no sampled swap is admissible the search stays. It keeps the best trajectory
    seen. ``init``: as in :func:`anneal` (None: TRACE-Greedy-Le, or -Mo for ``"mo"``; a :class:`Search` or a
    ``(B, t)`` trajectory). ``iterations`` = 0 returns the start. Defaults: :data:`ITERATIONS`,
    :data:`NEIGHBOURS`, :data:`TENURE` (a small run, not the paper's).

    Batched and incremental as :func:`anneal`: a swap of positions i < j changes only the j − i points per curve
    between them, and the neighbours of all images go through the removal engine in one call per iteration,
    ``batch_size`` inputs at a time. Cost: exactly :func:`tabu_cost` model inputs (it depends on the pairs drawn,
    not on the model). Draws: two float64 uniforms per neighbour and iteration, keyed to the sample as in
    :func:`anneal` (``generator`` required; ``sample_index``). progress: a tqdm bar, as in :func:`anneal`.
    Returns the best trajectory per image with both its curves (:class:`Search`: ``passes`` and ``energy`` after
    the start and each iteration, ``accepted`` the moves made per image).
    """
    objective, iterations, n_neighbours, tenure = _tabu_settings(objective, iterations, n_neighbours, tenure)
    predicted = target is None
    s, show = search_setup(model, x, edge=edge, init=init, reference=reference, output=output, target=target,
                           batch_size=batch_size, progress=progress, search="tabu search")
    b, t, dev = x.shape[0], s.t, x.device
    seeds = perturb.sample_seeds(generator, sample_index, b, why="for the tabu search's neighbours")
    draws = _orders.uniform((b, iterations, n_neighbours, 2), seeds, dev)
    lo_all, hi_all = pair(draws[..., 0], draws[..., 1], t)  # (B, K, N)
    cost = _tabu_cost(b, t, objective, init_kind(init), lo_all, hi_all, predicted)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-Tabu-{NAMES[objective]}: {b} images × {iterations:,} iterations × {n_neighbours} "
                   f"neighbours, t = {t}: {cost:,} model inputs") as bar:
        bar.update(b if predicted else 0)
        tau, lerf, morf, start_passes = start(model, x, s, init, objective=objective, edge=edge, output=output,
                                              batch_size=batch_size, done=bar.update)
        passes = [start_passes]
        need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))
        chain = Chain.starting_at(tau, lerf, morf, -objective_value(lerf, morf, objective))
        history = [chain.best_energy.clone()]
        rows = torch.arange(b, device=dev)
        images = rows.repeat_interleave(n_neighbours)
        until = torch.zeros(b, t, t, dtype=torch.int64, device=dev)  # swapping p and q is tabu while step < until
        for step in range(iterations):
            lo, hi = lo_all[:, step], hi_all[:, step]  # (B, N)
            new_tau = swap(chain.tau[images], lo.flatten(), hi.flatten())
            new_lerf, new_morf, evaluated = _neighbour_curves(s, chain.lerf[images], chain.morf[images], new_tau,
                                                              lo.flatten(), hi.flatten(), images, need)
            energy = -objective_value(new_lerf, new_morf, objective).view(b, n_neighbours)
            p, q = chain.tau.gather(1, lo), chain.tau.gather(1, hi)  # the patches each swap exchanges
            allowed = (until[rows[:, None], p, q] <= step) | (energy < chain.best_energy[:, None])
            pick = torch.where(allowed, energy, math.inf).argmin(1)  # the first best admissible neighbour
            take = allowed.any(1)
            chosen = rows * n_neighbours + pick
            chain.move(new_tau[chosen], new_lerf[chosen], new_morf[chosen], energy[rows, pick], take)
            pp, qq = p[rows, pick], q[rows, pick]
            mark = torch.where(take, step + 1 + tenure, until[rows, pp, qq])
            until[rows, pp, qq] = mark
            until[rows, qq, pp] = mark
            passes.append(passes[-1] + evaluated)
            bar.update(evaluated)
            history.append(chain.best_energy.clone())
        before = passes[-1]
        result = chain_result(model, x, s, output, chain, need, passes, history, batch_size)
        bar.update(int(result.passes[-1]) - before)
    return result


def tabu_cost(x: torch.Tensor | Sequence[int], *, edge: int, objective: str = "le-mo",
              init: Search | torch.Tensor | None = None, iterations: int = ITERATIONS,
              n_neighbours: int = NEIGHBOURS, generator: torch.Generator | int | None = None,
              target: torch.Tensor | None = None, sample_index: torch.Tensor | None = None) -> int:
    """The number of model inputs :func:`tabu` evaluates with these arguments (the rest of its arguments, the
    tenure included, do not change it), exactly, without running the model.

    x: the images ``(B, C, H, W)`` or their shape. The parts: B when ``target`` is None; the start, as in
    :func:`anneal_cost`; every sampled swap of positions i < j, j − i inputs per curve the objective reads (two for
    ``"le-mo"``), ≈ (t + 1)/3 each, whether the swap is taken or not; the curve the objective ignores, once at the
    end (B(t + 1) for ``"le"`` and ``"mo"``). The count depends on the pairs drawn, so ``generator`` is required as
    in :func:`tabu` (a torch.Generator is read without being advanced) with the same ``sample_index``.
    """
    objective, iterations, n_neighbours, _ = _tabu_settings(objective, iterations, n_neighbours, 0)
    shape = image_shape(x)
    t = T.patch_grid(torch.empty(shape, device="meta"), edge).n
    at_least_two(t, "tabu search", edge)
    seeds = perturb.sample_seeds(_copy(generator), sample_index, shape[0], why="for the tabu search's neighbours")
    draws = _orders.uniform((shape[0], iterations, n_neighbours, 2), seeds, torch.device("cpu"))
    lo, hi = pair(draws[..., 0], draws[..., 1], t)
    return _tabu_cost(shape[0], t, objective, init_kind(init), lo, hi, target is None)


def _copy(generator):
    """A copy of a torch.Generator (read without advancing the caller's), anything else as it is."""
    if isinstance(generator, torch.Generator):
        copy = torch.Generator(device=generator.device)
        return copy.set_state(generator.get_state())
    return generator


def _tabu_settings(objective: str, iterations: int, n_neighbours: int, tenure: int) -> tuple[str, int, int, int]:
    """The tabu search's settings, checked, each error naming its argument."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    return (objective, non_negative_int(iterations, "iterations"),
            _validate.positive_int(n_neighbours, "n_neighbours"), non_negative_int(tenure, "tenure"))


def _tabu_cost(b: int, t: int, objective: str, init: str, lo: torch.Tensor, hi: torch.Tensor,
               predicted: bool) -> int:
    """Model inputs of :func:`tabu` (see :func:`tabu_cost`); ``lo``, ``hi`` the positions of every sampled swap."""
    curves = 2 if objective == "le-mo" else 1
    cost = b if predicted else 0
    cost += {"greedy": b * (t * (t + 1) // 2 + t + 2), "trajectory": 2 * b * (t + 1), "search": 0}[init]
    cost += curves * int((hi - lo).sum())
    return cost + (0 if objective == "le-mo" else b * (t + 1))


def _neighbour_curves(s: Setup, lerf: torch.Tensor, morf: torch.Tensor, new_tau: torch.Tensor, lo: torch.Tensor,
                      hi: torch.Tensor, images: torch.Tensor, need: tuple[bool, bool]
                      ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The curves of swap neighbours ``new_tau`` ``(R, t)`` (positions lo < hi of trajectories whose curves are
    ``lerf``, ``morf`` ``(R, t + 1)``, of images ``images``), re-evaluating only the points a swap changes (LeRF
    k ∈ (lo, hi], MoRF k ∈ [t − hi, t − lo)), every neighbour's points in one engine call, masks built per chunk →
    (LeRF, MoRF, model inputs spent)."""
    need_le, need_mo = need
    t, dev = s.t, new_tau.device
    new_rank = _orders.ranks(new_tau)
    new_lerf, new_morf = lerf.clone(), morf.clone()
    d = hi - lo
    prop = torch.arange(new_tau.shape[0], device=dev).repeat_interleave(d)
    offset = torch.arange(prop.numel(), device=dev) - (d.cumsum(0) - d).repeat_interleave(d)
    low, high = [], []
    if need_le:
        k_le = lo[prop] + 1 + offset
        low.append(torch.zeros_like(k_le))
        high.append(k_le)
    if need_mo:
        k_mo = t - hi[prop] + offset
        low.append(t - k_mo)
        high.append(torch.full_like(k_mo, t))
    low, high = torch.cat(low), torch.cat(high)
    point = prop.repeat(need_le + need_mo)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        r = new_rank[point[b0:b1]]
        return ((r >= low[b0:b1, None]) & (r < high[b0:b1, None]))[:, None, :]

    out = s.runner.masked(masks, n_variants=1, sample=images[point])[:, 0]
    n_each = prop.numel()
    if need_le:
        new_lerf[prop, k_le] = out[:n_each].to(new_lerf.dtype)
    if need_mo:
        new_morf[prop, k_mo] = out[-n_each:].to(new_morf.dtype)
    return new_lerf, new_morf, out.numel()

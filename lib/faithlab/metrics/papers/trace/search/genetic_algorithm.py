"""A genetic algorithm over TRACE's trajectories (Wang & Wang, Appendix E; its operators and settings are ours) and
:func:`genetic_cost`, its exact count of model inputs before it runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics.papers.trace import trajectories as T
from faithlab.metrics.papers.trace.search.base import (OBJECTIVES, NAMES, Search, at_least_two, init_kind,
                                                       non_negative_int, pair, image_shape, swap, objective_value,
                                                       search_setup)
from faithlab.metrics.papers.trace.trajectories import check_trajectory, outputs, Setup
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["POPULATION", "GENERATIONS", "ELITE", "genetic", "genetic_cost"]

POPULATION = 16
""":func:`genetic`'s default population size (our choice: the text of the paper we have gives no setting of the other
meta-heuristics of its Appendix E)."""
GENERATIONS = 10
""":func:`genetic`'s default number of generations (our choice): at t = 49 with the defaults, ~1,300 inputs per
generation per image for ``"le-mo"``, ~15,000 in all, about five times :func:`anneal`'s default run."""
ELITE = 2
""":func:`genetic`'s default number of elites, the fittest individuals carried unchanged into the next generation
(our choice; at least one, so that the best never gets worse)."""


def genetic(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le-mo",
            init: Search | torch.Tensor | None = None, population: int = POPULATION, generations: int = GENERATIONS,
            elite: int = ELITE, tournament: int = 3, crossover: float = 0.9, mutation: float = 0.5,
            generator: torch.Generator | int | None = None, reference: Reference = "zero", output: Output = "prob",
            target: torch.Tensor | None = None, batch_size: BatchSize = None, sample_index: torch.Tensor | None = None,
            progress: bool | None = None) -> Search:
    """A genetic algorithm over trajectories: one of the other meta-heuristics the paper explores in its Appendix E
    (the text we have only refers to that appendix and cites Holland's book on genetic algorithms; it gives none of
    its details, so every operator and setting here is our choice).

    Each image has its own population of ``population`` trajectories: uniformly random ones, or, with ``init`` (a
    :class:`Search`, e.g. TRACE-Greedy's, or a ``(B, t)`` trajectory), that trajectory and ``population − 1``
    random ones. The fitness is the objective (:func:`objective_value`, maximised). Every generation keeps the
    ``elite`` fittest unchanged (elitism: the best never gets worse) and breeds ``population − elite`` children:
    two parents by tournament selection (the fittest of ``tournament`` individuals drawn uniformly with
    replacement; ties to the first drawn), with probability ``crossover`` the order crossover OX1 (a segment of
    the first parent kept in place, the other positions filled with the remaining patches in the second parent's
    order, read from after the segment and wrapping round) or else a copy of the first parent, then with
    probability ``mutation`` one swap of two positions (the SA neighbourhood, uniform over the C(t, 2) pairs).
    ``generations`` = 0 returns the best of the first population. All our choices; the defaults
    (:data:`POPULATION`, :data:`GENERATIONS`, :data:`ELITE`, 3, 0.9, 0.5) are a small run, not the paper's.

    Batched: every generation's children of all images go through the removal engine in one call, ``batch_size``
    inputs at a time. A child's curve points have no parent's to reuse, so each child costs the t − 1 inner
    points of every curve the objective reads (the first and last points, the clean and the fully deleted image,
    are the same for every trajectory and evaluated once); the elites are not re-evaluated. Cost: exactly
    :func:`genetic_cost` model inputs, which does not depend on the draws. Draws: keyed to the sample as in
    :func:`anneal` (``generator`` required; ``sample_index``), so an image's search does not depend on the other
    images in the call. progress: a tqdm bar over the inputs, as in :func:`anneal`.
    Returns the best trajectory per image with both its curves (the curve the objective ignores evaluated once at
    the end); ``passes`` after the first population and each generation (excluding the pass that predicts the
    target when ``target`` is None, as in :func:`anneal`), ``energy`` ``(generations + 1, B)`` the best energy
    (−objective) after each, ``accepted`` None.
    """
    objective, population, generations, elite, tournament, crossover, mutation = _ga_settings(
        objective, population, generations, elite, tournament, crossover, mutation)
    predicted = target is None
    s, show = search_setup(model, x, edge=edge, init=init, reference=reference, output=output, target=target,
                           batch_size=batch_size, progress=progress, search="the genetic algorithm")
    b, t, dev = x.shape[0], s.t, x.device
    first = _population_start(init, b, t, edge, dev)
    seeds = perturb.sample_seeds(generator, sample_index, b, why="for the genetic algorithm's draws")
    pop = _orders.uniform((b, population, t), seeds, dev).argsort(-1)  # (B, P, t) random trajectories
    draws = _orders.uniform((b, generations, population - elite, 2 * tournament + 6), seeds, dev)
    cost = _genetic_cost(b, t, objective, init_kind(init), population, generations, elite, predicted)
    need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))
    rows = torch.arange(b, device=dev)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-GA-{NAMES[objective]}: {b} images × {generations:,} generations of {population}, "
                   f"t = {t}: {cost:,} model inputs") as bar:
        bar.update(b if predicted else 0)
        if isinstance(first, Search):  # its curves are known: the others are evaluated
            pop[:, 0] = first.trajectory
            ends = (first.lerf[:, 0], first.lerf[:, t])
            lerf, morf, spent = _population_curves(s, pop[:, 1:].reshape(-1, t), rows.repeat_interleave(
                population - 1), need, ends)
            lerf = torch.cat([first.lerf[:, None].to(lerf.dtype), lerf.view(b, population - 1, t + 1)], 1)
            morf = torch.cat([first.morf[:, None].to(morf.dtype), morf.view(b, population - 1, t + 1)], 1)
        else:
            if first is not None:
                pop[:, 0] = first
            ends = outputs(model, x, s, output, torch.arange(2, device=dev).repeat_interleave(b)[:, None].expand(
                -1, t).bool(), rows.repeat(2), batch_size).view(2, b)
            lerf, morf, spent = _population_curves(s, pop.reshape(-1, t), rows.repeat_interleave(population), need,
                                                   (ends[0], ends[1]))
            lerf, morf, spent = lerf.view(b, population, t + 1), morf.view(b, population, t + 1), spent + 2 * b
        bar.update(spent)
        fitness = objective_value(lerf, morf, objective)  # (B, P)
        passes, history = [spent], [-fitness.max(1).values]
        n_children = population - elite
        parents_of = rows.repeat_interleave(n_children)
        k = tournament
        for step in range(generations):
            u = draws[:, step]  # (B, children, 2k + 6)
            mothers = _individuals(pop, _tournament(fitness, u[..., :k]))
            fathers = _individuals(pop, _tournament(fitness, u[..., k:2 * k]))
            u = u.reshape(b * n_children, -1)
            children = torch.where((u[:, 2 * k] < crossover)[:, None],
                                   _order_crossover(mothers, fathers, u[:, 2 * k + 1], u[:, 2 * k + 2]), mothers)
            lo, hi = pair(u[:, 2 * k + 4], u[:, 2 * k + 5], t)
            children = torch.where((u[:, 2 * k + 3] < mutation)[:, None], swap(children, lo, hi), children)
            c_lerf, c_morf, spent = _population_curves(s, children, parents_of, need, ends)
            keep = fitness.sort(dim=1, descending=True, stable=True).indices[:, :elite]  # ties: the earlier individual
            pop = torch.cat([_individuals(pop, keep).view(b, elite, t), children.view(b, n_children, t)], 1)
            lerf = torch.cat([_gather_rows(lerf, keep), c_lerf.view(b, n_children, t + 1)], 1)
            morf = torch.cat([_gather_rows(morf, keep), c_morf.view(b, n_children, t + 1)], 1)
            fitness = objective_value(lerf, morf, objective)
            passes.append(passes[-1] + spent)
            history.append(-fitness.max(1).values)
            bar.update(spent)
        best = fitness.argmax(1)  # the first fittest: an elite when it ties with a child
        tau, lerf, morf = pop[rows, best], lerf[rows, best], morf[rows, best]
        if not (need[0] and need[1]):  # the curve the objective ignores, once for the best
            other_le, other_mo, spent = _population_curves(s, tau, rows, (not need[0], not need[1]), ends)
            lerf, morf = (lerf, other_mo) if need[0] else (other_le, morf)
            passes[-1] += spent
            bar.update(spent)
    return Search(tau, lerf, morf, torch.tensor(passes), torch.stack(history))


def genetic_cost(x: torch.Tensor | Sequence[int], *, edge: int, objective: str = "le-mo",
                 init: Search | torch.Tensor | None = None, population: int = POPULATION,
                 generations: int = GENERATIONS, elite: int = ELITE, target: torch.Tensor | None = None) -> int:
    """The number of model inputs :func:`genetic` evaluates with these arguments (its other arguments, the draws
    included, do not change it), exactly, without running the model.

    x: the images ``(B, C, H, W)`` or their shape. With c the number of curves the objective reads (two for
    ``"le-mo"``): B when ``target`` is None (the prediction on the clean images); the first population,
    B·c·(t − 1) per individual evaluated (all ``population`` of them, or ``population − 1`` when ``init`` is a
    :class:`Search`, whose curves are known) plus 2B for the clean and the fully deleted images (none with a
    :class:`Search`, which has them); every generation B·c·(t − 1)·(population − elite); the curve the objective
    ignores, once for the best at the end, B(t − 1) for ``"le"`` and ``"mo"``.
    """
    _, population, generations, elite, *_ = _ga_settings(objective, population, generations, elite, 1, 0.0, 0.0)
    shape = image_shape(x)
    t = T.patch_grid(torch.empty(shape, device="meta"), edge).n
    at_least_two(t, "the genetic algorithm", edge)
    return _genetic_cost(shape[0], t, objective, init_kind(init), population, generations, elite, target is None)


def _ga_settings(objective: str, population: int, generations: int, elite: int, tournament: int, crossover: float,
                 mutation: float) -> tuple[str, int, int, int, int, float, float]:
    """The genetic algorithm's settings, checked, each error naming its argument."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    population = _validate.positive_int(population, "population")
    if population < 2:
        raise ValueError(f"population must be at least 2, got {population}")
    generations = non_negative_int(generations, "generations")
    elite = _validate.positive_int(elite, "elite")
    if elite >= population:
        raise ValueError(f"elite must be smaller than population ({population}), so that children are bred, got "
                         f"{elite}")
    tournament = _validate.positive_int(tournament, "tournament")
    return (objective, population, generations, elite, tournament, _validate.fraction(crossover, "crossover"),
            _validate.fraction(mutation, "mutation"))


def _genetic_cost(b: int, t: int, objective: str, init: str, population: int, generations: int, elite: int,
                  predicted: bool) -> int:
    """Model inputs of :func:`genetic` (see :func:`genetic_cost`)."""
    per = (2 if objective == "le-mo" else 1) * (t - 1)  # inner curve points per individual
    cost = b if predicted else 0
    cost += b * per * (population - 1) if init == "search" else 2 * b + b * per * population
    cost += b * per * (population - elite) * generations
    return cost + (0 if objective == "le-mo" else b * (t - 1))


def _population_start(init: Search | torch.Tensor | None, b: int, t: int, edge: int, dev: torch.device
                      ) -> Search | torch.Tensor | None:
    """The genetic algorithm's ``init``, checked before any forward pass: a :class:`Search` on x's device, a
    trajectory, or None."""
    if init is None:
        return None
    if isinstance(init, Search):
        tau = check_trajectory(init.trajectory, "init", b, t).to(dev)
        if init.lerf.shape != (b, t + 1) or init.morf.shape != (b, t + 1):
            raise ValueError(f"init's curves must be ({b}, {t + 1}) for these images and edge={edge}, got lerf "
                             f"{tuple(init.lerf.shape)} and morf {tuple(init.morf.shape)}")
        return Search(tau, init.lerf.to(dev), init.morf.to(dev), init.passes)
    return check_trajectory(init, "init", b, t, dev)


def _individuals(pop: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Individuals ``index`` ``(B, n)`` of every image's population ``(B, P, t)`` → ``(B·n, t)``."""
    return pop.gather(1, index[..., None].expand(-1, -1, pop.shape[2])).reshape(-1, pop.shape[2])


def _gather_rows(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows ``index`` ``(B, n)`` of ``(B, P, m)`` values → ``(B, n, m)``."""
    return values.gather(1, index[..., None].expand(-1, -1, values.shape[2]))


def _tournament(fitness: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Tournament selection: ``fitness`` ``(B, P)``, ``u`` ``(B, n, k)`` uniforms → ``(B, n)`` winners, each the
    fittest of k individuals drawn uniformly with replacement (ties: the first drawn)."""
    size = fitness.shape[1]
    drawn = (u * size).long().clamp_max(size - 1)
    f = fitness.gather(1, drawn.flatten(1)).view(drawn.shape)
    return drawn.gather(2, f.argmax(2, keepdim=True)).squeeze(2)


def _order_crossover(first: torch.Tensor, second: torch.Tensor, u0: torch.Tensor, u1: torch.Tensor) -> torch.Tensor:
    """OX1 of parents ``(R, t)`` with a segment [a, c] per row from two uniforms (a ≤ c, each position uniform):
    the child keeps ``first[a..c]`` in place and fills positions c + 1, …, t − 1, 0, …, a − 1 with the other
    patches in the order ``second`` holds them, read from position c + 1 on, wrapping round."""
    t = first.shape[1]
    i, j = (u0 * t).long().clamp_max(t - 1), (u1 * t).long().clamp_max(t - 1)
    a, c = torch.minimum(i, j), torch.maximum(i, j)
    steps = torch.arange(t, device=first.device)
    pos = (c[:, None] + 1 + steps) % t  # the outside positions in fill order, then a..c
    donor = second.gather(1, pos)
    where = _orders.ranks(first).gather(1, donor)  # each donor patch's position in the first parent
    in_segment = (where >= a[:, None]) & (where <= c[:, None])
    outside = donor.gather(1, in_segment.to(torch.uint8).sort(dim=1, stable=True).indices)  # donor order, outside first
    n_out = t - (c - a + 1)
    values = torch.where(steps < n_out[:, None], outside, first.gather(1, pos))
    return torch.empty_like(first).scatter_(1, pos, values)


def _population_curves(s: Setup, tau: torch.Tensor, images: torch.Tensor, need: tuple[bool, bool],
                       ends: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The curves the objective reads of trajectories ``(R, t)`` of images ``images`` ``(R,)``: their t − 1 inner
    points in one engine call, the ends (``(B,)`` clean and fully deleted outputs) copied → (LeRF, MoRF, model
    inputs spent); a curve not in ``need`` is NaN."""
    need_le, need_mo = need
    t, dev = s.t, tau.device
    rank = _orders.ranks(tau)
    per = t - 1
    ks = torch.arange(1, t, device=dev)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        v = torch.arange(v0, v1, device=dev)
        k = ks[v % per]
        morf = v >= per if need_le else torch.ones_like(v, dtype=torch.bool)  # LeRF's variants first
        low = torch.where(morf, t - k, 0)  # LeRF at k: the first k patches deleted; MoRF: the last k
        high = torch.where(morf, t, k)
        r = rank[b0:b1, None, :]
        return (r >= low[None, :, None]) & (r < high[None, :, None])

    out = s.runner.masked(masks, n_variants=per * (need_le + need_mo), sample=images)
    clean, full = (e.to(device=dev, dtype=out.dtype)[images, None] for e in ends)
    missing = torch.full((tau.shape[0], t + 1), math.nan, dtype=out.dtype, device=dev)
    lerf = torch.cat([clean, out[:, :per], full], 1) if need_le else missing
    morf = torch.cat([clean, out[:, -per:], full], 1) if need_mo else missing.clone()
    return lerf, morf, out.numel()

"""TRACE's searches (Wang & Wang, spec §5.2–5.6): the trajectories that optimise the patch deletion curves of
:mod:`faithlab.metrics.trace`, the bounds of the complete search and the random deletion test.

The optimisation problems (the paper's definitions, not the released code's, whose ``'Le'``/``'Mo'`` labels are
swapped): ``"le"`` maximise ΣLeRF(τ); ``"mo"`` minimise ΣMoRF(τ); ``"le-mo"`` maximise ΣLeRF(τ) − ΣMoRF(τ)
(:func:`objective_value`). :func:`greedy` (TRACE-Greedy, exact for additive models), :func:`anneal` (TRACE-SA with
the swap neighbourhood, incremental energy and all images in one batch), the other meta-heuristics of the paper's
Appendix E, :func:`genetic` (a genetic algorithm) and :func:`tabu` (tabu search), whose details are ours, and
:func:`complete_search` (the CS bounds for small t) search them, each returning a :class:`Search` (or the
CS bounds) with the curves it evaluated; :func:`random_deletion_curves` draws uniformly random orders (Fig. 4). A
searched trajectory maps back to an attribution with :func:`faithlab.metrics.trace.trajectory_attribution`.

Every function evaluates its perturbed inputs through the removal engine, at most ``batch_size`` per forward
call, so results do not depend on ``batch_size``; randomness comes only from ``generator``.

Cost: a search is many forward passes of the model (at 224 px, TRACE's 7 × 7 grid, a CPU ResNet-18 spends ~20 ms
per input). :func:`anneal_cost` says exactly how many inputs :func:`anneal` will evaluate before it runs, and
:func:`anneal` shows it on its progress bar (:func:`genetic_cost` and :func:`tabu_cost` do the same for the other
meta-heuristics). Its default :data:`ITERATIONS` (50) polishes the greedy start in minutes
on a CPU for a few images; the paper's K = 5,000 (:data:`PAPER_ITERATIONS`) is ``iterations=PAPER_ITERATIONS``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics import trace as T
from faithlab.metrics.trace import _check_trajectory, _curves, _outputs, _Setup, _setup
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["OBJECTIVES", "T0", "ITERATIONS", "PAPER_ITERATIONS", "POPULATION", "GENERATIONS", "ELITE", "NEIGHBOURS",
           "TENURE", "Search", "objective_value", "greedy", "anneal", "anneal_cost", "genetic", "genetic_cost", "tabu",
           "tabu_cost", "complete_search", "random_deletion_curves"]

OBJECTIVES = ("le", "mo", "le-mo")
"""TRACE-Le (maximise ΣLeRF), TRACE-Mo (minimise ΣMoRF), TRACE-Le−Mo (maximise ΣLeRF − ΣMoRF)."""
T0 = {"prob": 0.1, "logit": 2.0}
"""The paper's initial SA temperatures per output: T0 = 0.1 for -p (``"prob"``, the probability) and 2 for -y
(``"logit"``) (spec §5.4); :func:`anneal` takes them when its ``t0`` is None."""
PAPER_ITERATIONS = 5000
"""The paper's number of annealing iterations K (spec §5.4; the released code's default is 2,000)."""
ITERATIONS = 50
""":func:`anneal`'s default K: a short polish of the greedy start that finishes in minutes on a CPU for a few
224-px images (4 images, t = 49, a ResNet-18: 1,276 greedy inputs + ~33 per iteration per image, ~11,800 inputs,
~4 min at ~20 ms per input). The paper's K is :data:`PAPER_ITERATIONS`; pass it for the paper's search."""
_MAX_COMPLETE = 20


@dataclass(frozen=True)
class Search:
    """A searched trajectory and its curves.

    trajectory: ``(B, t)`` int64 patch ids, bottom-to-top (first = deleted first under LeRF). lerf, morf:
    ``(B, t + 1)`` deletion curves of τ and of rev(τ). passes: ``(S,)`` int64, the cumulative number of model
    inputs evaluated after each step of the search (greedy: per deletion step; annealing and tabu search: after the
    start and each iteration; genetic algorithm: after the first population and each generation). energy:
    ``(S, B)`` float64, the best energy (−objective) reached after each step, or None. accepted: ``(B,)`` accepted
    moves per image (annealing, tabu search), or None.
    """

    trajectory: torch.Tensor
    lerf: torch.Tensor
    morf: torch.Tensor
    passes: torch.Tensor
    energy: torch.Tensor | None = None
    accepted: torch.Tensor | None = None


def objective_value(lerf: torch.Tensor, morf: torch.Tensor, objective: str) -> torch.Tensor:
    """The value TRACE maximises, in float64 → ``(B,)``: ``"le"`` ΣLeRF, ``"mo"`` −ΣMoRF, ``"le-mo"`` their sum
    ΣLeRF − ΣMoRF. The annealing energy is its negative."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    le, mo = lerf.double().sum(-1), morf.double().sum(-1)
    return le if objective == "le" else -mo if objective == "mo" else le - mo


def greedy(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le", reference: Reference = "zero",
           output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = None) -> Search:
    """TRACE-Greedy (spec §5.3): from the full image, repeatedly delete the remaining patch whose deletion leaves
    the highest (``"le"``) or lowest (``"mo"``) output, ties by the smaller patch id.

    Each step evaluates every remaining patch of every image in one engine call (t(t+1)/2 − 1 inputs per image
    over the steps, plus the clean and the fully deleted image). Exact for a model whose target output is a
    monotone function of an additive score of the patches kept. For ``"mo"`` the greedy deletion order is rev(τ),
    so the returned trajectory is its flip. The other curve (MoRF for ``"le"``, LeRF for ``"mo"``) is evaluated too
    (t + 1 more inputs) for cross-tests.
    """
    _validate.one_of(objective, "objective", ("le", "mo"))
    s = _setup(model, x, edge, reference, output, target, batch_size)
    return _greedy(model, x, s, objective, output, batch_size, lambda n: None)


def _greedy(model: Callable, x: torch.Tensor, s: _Setup, objective: str, output: Output, batch_size: int,
            done: Callable[[int], None]) -> Search:
    """:func:`greedy` after its validation; ``done(n)`` is told the number of model inputs of every step."""
    b, t, dev = x.shape[0], s.t, x.device
    rows = torch.arange(b, device=dev)
    deleted = torch.zeros(b, t, dtype=torch.bool, device=dev)
    order = torch.empty(b, t, dtype=torch.int64, device=dev)
    start = _outputs(model, x, s, output, deleted, None, batch_size)
    done(b)
    curve = torch.empty(b, t + 1, dtype=start.dtype, device=dev)
    curve[:, 0] = start
    passes = [b]
    for step in range(t - 1):
        remaining = (~deleted).nonzero()[:, 1].view(b, t - step)  # ascending patch ids

        def masks(b0: int, b1: int, v0: int, v1: int, remaining: torch.Tensor = remaining) -> torch.Tensor:
            m = deleted[b0:b1, None, :].expand(-1, v1 - v0, -1).clone()
            return m.scatter_(2, remaining[b0:b1, v0:v1, None], True)

        out = s.runner.masked(masks, n_variants=t - step)
        pick = out.argmax(1) if objective == "le" else out.argmin(1)  # first extremum = smaller patch id
        chosen = remaining.gather(1, pick[:, None]).squeeze(1)
        order[:, step] = chosen
        deleted[rows, chosen] = True
        curve[:, step + 1] = out.gather(1, pick[:, None]).squeeze(1)
        passes.append(passes[-1] + b * (t - step))
        done(b * (t - step))
    order[:, t - 1] = (~deleted).nonzero()[:, 1]
    curve[:, t] = _outputs(model, x, s, output, torch.ones_like(deleted), None, batch_size)
    tau = order if objective == "le" else order.flip(1)
    other = _curves(model, x, s, output, order.flip(1), None, batch_size)
    passes.append(passes[-1] + b * (t + 2))
    done(b * (t + 2))
    lerf, morf = (curve, other) if objective == "le" else (other, curve)
    return Search(tau, lerf, morf, torch.tensor(passes))


def _swap(tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """τ with positions lo[b] and hi[b] exchanged in every row."""
    new = tau.clone()
    a, c = tau.gather(1, lo[:, None]), tau.gather(1, hi[:, None])
    return new.scatter_(1, lo[:, None], c).scatter_(1, hi[:, None], a)


def anneal(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le-mo",
           init: Search | torch.Tensor | None = None, iterations: int = ITERATIONS, t0: float | None = None,
           eta: float = 0.999, generator: torch.Generator | int | None = None, reference: Reference = "zero",
           output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = None,
           incremental: bool = True, sample_index: torch.Tensor | None = None,
           progress: bool | None = None) -> Search:
    """TRACE-SA (spec §5.4): simulated annealing over trajectories with the swap neighbourhood.

    Every iteration proposes, for every image, τ' = τ with two distinct positions i < j swapped (uniform over the
    C(t, 2) pairs), accepts it if the energy E = −objective drops, else with probability exp(−ΔE/T), keeps the
    best trajectory seen, and cools T ← η·T. ``iterations``: K, default :data:`ITERATIONS` = 50 (a short polish of
    the greedy start that a CPU finishes in minutes for a few 224-px images); the paper's K = 5000 is
    ``iterations=PAPER_ITERATIONS``. The other paper values are the defaults: ``t0`` 0.1 for ``output="prob"`` and
    2 for ``"logit"`` (when None), ``eta`` 0.999. ``init``: None starts from
    TRACE-Greedy-Le (the code's and the paper's recommendation) for ``"le"`` and ``"le-mo"`` and from
    TRACE-Greedy-Mo for ``"mo"`` (so that SA-Mo ≤ Greedy-Mo holds as the paper's Fig. 2a assumes; the released
    code starts every objective from Greedy-Le); the greedy inputs are counted in ``passes``. Or pass a
    :class:`Search` / ``(B, t)`` trajectory.

    incremental (default): a swap of positions i < j changes LeRF points k ∈ (i, j] and MoRF points
    k ∈ [t − j, t − i) only, so only those j − i inputs per curve are evaluated (≈ t/3 on average instead of
    t + 1), and all images' proposals go through the model together, ``batch_size`` at a time.
    ``incremental=False`` re-evaluates the whole curve(s) the objective needs per proposal (both for ``"le-mo"``),
    the published algorithm's cost (kept for tests and benchmarks); with the same generator both give the same
    trajectories up to float rounding.
    Draws: three float64 uniforms per image and iteration, keyed to the sample: one root seed from ``generator``
    (required), image i's draws from its own stream keyed by the root and ``sample_index[i]`` (its global index,
    default its position 0 … B − 1), so an image's search does not depend on the other images in the call.
    Cost: exactly :func:`anneal_cost` model inputs (same arguments), known before the first forward pass; progress:
    a tqdm bar over them (the greedy start's steps, then the iterations) whose description states that number
    (None: on unless the environment sets ``FAITHLAB_PROGRESS=0``).
    Returns the best trajectory per image with both its curves (:class:`Search`; the curve the objective ignores is
    evaluated once at the end; ``energy`` is the best energy after the start and after each iteration,
    ``accepted`` the accepted moves).
    """
    iterations, t0, eta = _schedule(objective, iterations, t0, eta, output)
    show = _validate.progress(progress)
    predicted = target is None
    _validate.one_device(x=x, init=init, target=target)  # before the target's forward pass
    s = _setup(model, x, edge, reference, output, target, batch_size)
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the annealing proposals")
    b, t, dev = x.shape[0], s.t, x.device
    if t < 2:
        raise ValueError(f"annealing needs at least 2 patches, got edge={edge}")
    draws = _orders.uniform((b, iterations, 3), seeds, dev)  # every iteration's draws at once: one call per image
    cost = _anneal_cost(b, t, objective, _init_kind(init), iterations, draws, incremental, predicted)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-SA-{_NAMES[objective]}: {b} images × {iterations:,} iterations, t = {t}: {cost:,} model "
                   "inputs") as bar:
        bar.update(b if predicted else 0)  # the prediction that fixed the target (see anneal_cost)
        tau, lerf, morf, start_passes = _start(model, x, s, init, objective=objective, edge=edge, output=output,
                                               batch_size=batch_size, done=bar.update)
        passes = [start_passes]
        need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))  # the curves the objective reads
        chain = _Chain.starting_at(tau, lerf, morf, -objective_value(lerf, morf, objective))
        history = [chain.best_energy.clone()]
        proposal_curves = _swapped_points if incremental else _whole_curves
        temperature = t0
        for step in range(iterations):
            u = draws[:, step]
            new_tau, lo, hi = _propose(chain.tau, u, t)
            new_lerf, new_morf, evaluated = proposal_curves(model, x, s, output, chain, new_tau, lo, hi, need,
                                                            batch_size)
            passes.append(passes[-1] + evaluated)
            bar.update(evaluated)
            new_energy = -objective_value(new_lerf, new_morf, objective)
            chain.move(new_tau, new_lerf, new_morf, new_energy, _metropolis(new_energy - chain.energy, u[:, 2],
                                                                            temperature))
            history.append(chain.best_energy.clone())
            temperature *= eta
        before = passes[-1]
        result = _result(model, x, s, output, chain, need, passes, history, batch_size)
        bar.update(int(result.passes[-1]) - before)  # the curve the objective did not track
    return result


def anneal_cost(x: torch.Tensor | Sequence[int], *, edge: int, objective: str = "le-mo",
                init: Search | torch.Tensor | None = None, iterations: int = ITERATIONS,
                generator: torch.Generator | int | None = None, target: torch.Tensor | None = None,
                incremental: bool = True, sample_index: torch.Tensor | None = None) -> int:
    """The number of model inputs :func:`anneal` evaluates with these arguments (the rest of its arguments do not
    change it), exactly, without running the model: ask before a long call.

    x: the images ``(B, C, H, W)`` or their shape. The parts: the prediction that fixes the target when ``target``
    is None (B: one pass over the clean images); the start (``init`` None:
    TRACE-Greedy, B·(t(t + 1)/2 + t + 2), 1,276 per image for t = 49; a trajectory: both its curves, 2B(t + 1); a
    :class:`Search`: none); the iterations (``incremental``: the j − i
    points a swap of positions i < j changes, per curve the objective reads (two for ``"le-mo"``), ≈ (t + 1)/3
    each; ``incremental=False``: (t + 1) per curve); the curve the objective ignores, once at the end (B(t + 1) for
    ``"le"`` and ``"mo"``). The incremental count depends on the pairs drawn, so ``generator`` is then required as
    in :func:`anneal` (a torch.Generator is read without being advanced) with the same ``sample_index``.
    Multiply by the time per input of the model (about 20 ms for a ResNet-18 at 224 px on a 2-core CPU) for the
    wall time.
    """
    _validate.one_of(objective, "objective", OBJECTIVES)
    iterations = _validate.positive_int(iterations, "iterations")
    shape = _shape(x)
    t = T.patch_grid(torch.empty(shape, device="meta"), edge).n
    if t < 2:
        raise ValueError(f"annealing needs at least 2 patches, got edge={edge}")
    draws = None
    if incremental:
        if isinstance(generator, torch.Generator):  # read a copy: the caller's generator is not advanced
            copy = torch.Generator(device=generator.device)
            generator = copy.set_state(generator.get_state())
        seeds = perturb.sample_seeds(generator, sample_index, shape[0], why="for the annealing proposals")
        draws = _orders.uniform((shape[0], iterations, 3), seeds, torch.device("cpu"))
    return _anneal_cost(shape[0], t, objective, _init_kind(init), iterations, draws, incremental, target is None)


_NAMES = {"le": "Le", "mo": "Mo", "le-mo": "Le−Mo"}


def _shape(x) -> tuple[int, int, int, int]:
    """Images or their shape → the shape ``(B, C, H, W)``, checked (naming ``x``)."""
    if isinstance(x, torch.Tensor):
        _validate.tensor(x, "x", ndim=4)
        return tuple(x.shape)
    if (isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != 4
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in x)):
        raise TypeError(f"x must be images (B, C, H, W) or their shape, four positive ints, got {x!r:.80}")
    return tuple(x)


def _init_kind(init) -> str:
    """How the annealing starts, for its cost: ``"greedy"`` (None), ``"search"`` or ``"trajectory"``."""
    return "greedy" if init is None else "search" if isinstance(init, Search) else "trajectory"


def _pair(u0: torch.Tensor, u1: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two distinct positions lo < hi from two uniforms each, uniform over the C(t, 2) pairs (any shape)."""
    i = (u0 * t).long().clamp_max(t - 1)
    j = (u1 * (t - 1)).long().clamp_max(t - 2)
    j = j + (j >= i).long()
    return torch.minimum(i, j), torch.maximum(i, j)


def _anneal_cost(b: int, t: int, objective: str, init: str, iterations: int, draws: torch.Tensor | None,
                 incremental: bool, predicted: bool) -> int:
    """Model inputs of :func:`anneal` (see :func:`anneal_cost`); ``draws`` ``(B, K, 3)``, read when
    ``incremental``."""
    curves = 2 if objective == "le-mo" else 1
    cost = b if predicted else 0  # the prediction of the target on the clean images
    cost += {"greedy": b * (t * (t + 1) // 2 + t + 2), "trajectory": 2 * b * (t + 1), "search": 0}[init]
    if incremental:
        lo, hi = _pair(draws[..., 0], draws[..., 1], t)
        cost += curves * int((hi - lo).sum())
    else:
        cost += curves * b * (t + 1) * iterations
    return cost + (0 if objective == "le-mo" else b * (t + 1))


def _schedule(objective: str, iterations: int, t0: float | None, eta: float, output: Output
              ) -> tuple[int, float, float]:
    """Validated annealing settings → (iterations K, initial temperature T0, cooling factor η); T0 None takes the
    paper's value for ``output`` (:data:`T0`)."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    iterations = _validate.positive_int(iterations, "iterations")
    if t0 is None:
        if callable(output) or output not in T0:
            raise ValueError(f"t0 has no paper default for output={output!r}; pass t0")
        t0 = T0[output]
    t0 = _validate.number(t0, "t0")
    eta = _validate.number(eta, "eta")
    if not 0 < t0 < math.inf:
        raise ValueError(f"t0 must be positive and finite, got {t0!r}")
    if not 0 < eta <= 1:
        raise ValueError(f"eta must lie in (0, 1], got {eta!r}")
    return iterations, t0, eta


def _start(model: Callable, x: torch.Tensor, s: _Setup, init: Search | torch.Tensor | None, *, objective: str,
           edge: int, output: Output, batch_size: int, done: Callable[[int], None]
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The starting trajectory and its two curves → (τ, LeRF, MoRF, model inputs spent): TRACE-Greedy for None
    (-Mo for ``"mo"``, -Le otherwise), a :class:`Search` as given, or a trajectory whose curves are evaluated;
    ``done(n)`` is told the model inputs as they are spent."""
    b, t, dev = x.shape[0], s.t, x.device
    passes = 0
    if init is None:
        init = _greedy(model, x, s, "mo" if objective == "mo" else "le", output, batch_size, done)
        passes = int(init.passes[-1])
    if isinstance(init, Search):
        tau, lerf, morf = init.trajectory.to(dev), init.lerf.to(dev), init.morf.to(dev)
        _check_trajectory(tau, "init", b, t)
        if lerf.shape != (b, t + 1) or morf.shape != (b, t + 1):
            raise ValueError(f"init's curves must be ({b}, {t + 1}) for these images and edge={edge}, got lerf "
                             f"{tuple(lerf.shape)} and morf {tuple(morf.shape)}")
    else:
        tau = _check_trajectory(init, "init", b, t, dev)
        both = _curves(model, x, s, output, torch.cat([tau, tau.flip(1)]), torch.arange(b, device=dev).repeat(2),
                       batch_size)
        lerf, morf = both[:b], both[b:]
        passes += 2 * b * (t + 1)
        done(2 * b * (t + 1))
    return tau, lerf, morf, passes


@dataclass
class _Chain:
    """The annealing state of every image: the current trajectory, its curves and energy, the best seen so far
    (``best``, with ``best_energy``) and the number of accepted moves."""

    tau: torch.Tensor
    lerf: torch.Tensor
    morf: torch.Tensor
    energy: torch.Tensor
    best: Search
    best_energy: torch.Tensor
    accepted: torch.Tensor

    @classmethod
    def starting_at(cls, tau: torch.Tensor, lerf: torch.Tensor, morf: torch.Tensor, energy: torch.Tensor
                    ) -> _Chain:
        return cls(tau, lerf, morf, energy, Search(tau.clone(), lerf.clone(), morf.clone(), torch.empty(0)),
                   energy.clone(), torch.zeros(tau.shape[0], dtype=torch.int64, device=tau.device))

    def move(self, new_tau: torch.Tensor, new_lerf: torch.Tensor, new_morf: torch.Tensor, new_energy: torch.Tensor,
             take: torch.Tensor) -> None:
        """Move the images where ``take`` holds to their proposal; keep the best state seen."""
        self.tau = torch.where(take[:, None], new_tau, self.tau)
        self.lerf = torch.where(take[:, None], new_lerf, self.lerf)
        self.morf = torch.where(take[:, None], new_morf, self.morf)
        self.energy = torch.where(take, new_energy, self.energy)
        self.accepted += take.long()
        better = self.energy < self.best_energy
        best = self.best
        self.best = Search(torch.where(better[:, None], self.tau, best.trajectory),
                           torch.where(better[:, None], self.lerf, best.lerf),
                           torch.where(better[:, None], self.morf, best.morf), best.passes)
        self.best_energy = torch.where(better, self.energy, self.best_energy)


def _propose(tau: torch.Tensor, u: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The swap proposal of every image from its uniforms ``u[:, 0]``, ``u[:, 1]`` → (τ', lo, hi): two distinct
    positions lo < hi, uniform over the C(t, 2) pairs, exchanged."""
    lo, hi = _pair(u[:, 0], u[:, 1], t)
    return _swap(tau, lo, hi), lo, hi


def _swapped_points(model: Callable, x: torch.Tensor, s: _Setup, output: Output, chain: _Chain,
                    new_tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, need: tuple[bool, bool],
                    batch_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The proposals' curves by re-evaluating only the points a swap changes (LeRF k ∈ (lo, hi], MoRF
    k ∈ [t − hi, t − lo)), all images' points in one engine call → (LeRF, MoRF, model inputs spent)."""
    need_le, need_mo = need
    t, dev = s.t, x.device
    new_rank = _orders.ranks(new_tau)
    new_lerf, new_morf = chain.lerf.clone(), chain.morf.clone()
    d = hi - lo
    rows = torch.arange(x.shape[0], device=dev).repeat_interleave(d)
    offset = torch.arange(rows.numel(), device=dev) - (d.cumsum(0) - d).repeat_interleave(d)
    masks = []
    if need_le:
        k_le = lo[rows] + 1 + offset
        masks.append(new_rank[rows] < k_le[:, None])
    if need_mo:
        k_mo = t - hi[rows] + offset
        masks.append(new_rank[rows] >= (t - k_mo)[:, None])
    n_each = rows.numel()
    out = _outputs(model, x, s, output, torch.cat(masks), rows.repeat(len(masks)), batch_size)
    if need_le:
        new_lerf[rows, k_le] = out[:n_each]
    if need_mo:
        new_morf[rows, k_mo] = out[-n_each:]
    return new_lerf, new_morf, out.numel()


def _whole_curves(model: Callable, x: torch.Tensor, s: _Setup, output: Output, chain: _Chain,
                  new_tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, need: tuple[bool, bool],
                  batch_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The proposals' curves re-evaluated whole (the published algorithm's cost; ``lo``, ``hi`` unused) → (LeRF,
    MoRF, model inputs spent)."""
    need_le, need_mo = need
    b = x.shape[0]
    new_lerf, new_morf = chain.lerf.clone(), chain.morf.clone()
    orders = [o for o, needed in ((new_tau, need_le), (new_tau.flip(1), need_mo)) if needed]
    both = _curves(model, x, s, output, torch.cat(orders), torch.arange(b, device=x.device).repeat(len(orders)),
                   batch_size)
    if need_le:
        new_lerf = both[:b]
    if need_mo:
        new_morf = both[-b:]
    return new_lerf, new_morf, both.numel()


def _metropolis(delta: torch.Tensor, u: torch.Tensor, temperature: float) -> torch.Tensor:
    """Accept a move that lowers the energy, else with probability exp(−ΔE/T) (``u`` uniform in [0, 1))."""
    return (delta < 0) | (u < torch.exp(-delta / temperature))


def _result(model: Callable, x: torch.Tensor, s: _Setup, output: Output, chain: _Chain, need: tuple[bool, bool],
            passes: list[int], history: list[torch.Tensor], batch_size: int) -> Search:
    """The best trajectory with both its curves: the curve the objective ignores was not tracked and is evaluated
    once here."""
    need_le, need_mo = need
    best = chain.best
    lerf, morf = best.lerf, best.morf
    if not (need_le and need_mo):
        other = _curves(model, x, s, output, best.trajectory if need_mo else best.trajectory.flip(1), None,
                        batch_size)
        lerf, morf = (other, morf) if need_mo else (lerf, other)
        passes[-1] += other.numel()
    return Search(best.trajectory, lerf, morf, torch.tensor(passes), torch.stack(history), chain.accepted)


# ------------------------------------------------------------------------------ the other meta-heuristics
POPULATION = 16
""":func:`genetic`'s default population size (our choice: the text of the paper we have gives no setting of the other
meta-heuristics of its Appendix E)."""
GENERATIONS = 10
""":func:`genetic`'s default number of generations (our choice): at t = 49 with the defaults, ~1,300 inputs per
generation per image for ``"le-mo"``, ~15,000 in all, about five times :func:`anneal`'s default run."""
ELITE = 2
""":func:`genetic`'s default number of elites, the fittest individuals carried unchanged into the next generation
(our choice; at least one, so that the best never gets worse)."""
NEIGHBOURS = 8
""":func:`tabu`'s default number of sampled swap moves per iteration (our choice)."""
TENURE = 7
""":func:`tabu`'s default tenure: a swapped pair of patches may not be swapped back for this many iterations unless
that beats the best trajectory found (our choice, the textbook order of magnitude)."""


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
    show = _validate.progress(progress)
    predicted = target is None
    _validate.one_device(x=x, init=init, target=target)  # before the target's forward pass
    s = _setup(model, x, edge, reference, output, target, batch_size)
    b, t, dev = x.shape[0], s.t, x.device
    _at_least_two(t, "the genetic algorithm", edge)
    first = _population_start(init, b, t, edge, dev)
    seeds = perturb.sample_seeds(generator, sample_index, b, why="for the genetic algorithm's draws")
    pop = _orders.uniform((b, population, t), seeds, dev).argsort(-1)  # (B, P, t) random trajectories
    draws = _orders.uniform((b, generations, population - elite, 2 * tournament + 6), seeds, dev)
    cost = _genetic_cost(b, t, objective, _init_kind(init), population, generations, elite, predicted)
    need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))
    rows = torch.arange(b, device=dev)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-GA-{_NAMES[objective]}: {b} images × {generations:,} generations of {population}, "
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
            ends = _outputs(model, x, s, output, torch.arange(2, device=dev).repeat_interleave(b)[:, None].expand(
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
            lo, hi = _pair(u[:, 2 * k + 4], u[:, 2 * k + 5], t)
            children = torch.where((u[:, 2 * k + 3] < mutation)[:, None], _swap(children, lo, hi), children)
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
    shape = _shape(x)
    t = T.patch_grid(torch.empty(shape, device="meta"), edge).n
    _at_least_two(t, "the genetic algorithm", edge)
    return _genetic_cost(shape[0], t, objective, _init_kind(init), population, generations, elite, target is None)


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
    show = _validate.progress(progress)
    predicted = target is None
    _validate.one_device(x=x, init=init, target=target)  # before the target's forward pass
    s = _setup(model, x, edge, reference, output, target, batch_size)
    b, t, dev = x.shape[0], s.t, x.device
    _at_least_two(t, "tabu search", edge)
    seeds = perturb.sample_seeds(generator, sample_index, b, why="for the tabu search's neighbours")
    draws = _orders.uniform((b, iterations, n_neighbours, 2), seeds, dev)
    lo_all, hi_all = _pair(draws[..., 0], draws[..., 1], t)  # (B, K, N)
    cost = _tabu_cost(b, t, objective, _init_kind(init), lo_all, hi_all, predicted)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-Tabu-{_NAMES[objective]}: {b} images × {iterations:,} iterations × {n_neighbours} "
                   f"neighbours, t = {t}: {cost:,} model inputs") as bar:
        bar.update(b if predicted else 0)
        tau, lerf, morf, start_passes = _start(model, x, s, init, objective=objective, edge=edge, output=output,
                                               batch_size=batch_size, done=bar.update)
        passes = [start_passes]
        need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))
        chain = _Chain.starting_at(tau, lerf, morf, -objective_value(lerf, morf, objective))
        history = [chain.best_energy.clone()]
        rows = torch.arange(b, device=dev)
        images = rows.repeat_interleave(n_neighbours)
        until = torch.zeros(b, t, t, dtype=torch.int64, device=dev)  # swapping p and q is tabu while step < until
        for step in range(iterations):
            lo, hi = lo_all[:, step], hi_all[:, step]  # (B, N)
            new_tau = _swap(chain.tau[images], lo.flatten(), hi.flatten())
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
        result = _result(model, x, s, output, chain, need, passes, history, batch_size)
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
    shape = _shape(x)
    t = T.patch_grid(torch.empty(shape, device="meta"), edge).n
    _at_least_two(t, "tabu search", edge)
    seeds = perturb.sample_seeds(_copy(generator), sample_index, shape[0], why="for the tabu search's neighbours")
    draws = _orders.uniform((shape[0], iterations, n_neighbours, 2), seeds, torch.device("cpu"))
    lo, hi = _pair(draws[..., 0], draws[..., 1], t)
    return _tabu_cost(shape[0], t, objective, _init_kind(init), lo, hi, target is None)


def _copy(generator):
    """A copy of a torch.Generator (read without advancing the caller's), anything else as it is."""
    if isinstance(generator, torch.Generator):
        copy = torch.Generator(device=generator.device)
        return copy.set_state(generator.get_state())
    return generator


def _non_negative_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _at_least_two(t: int, search: str, edge: int) -> None:
    if t < 2:
        raise ValueError(f"{search} needs at least 2 patches, got edge={edge}")


def _ga_settings(objective: str, population: int, generations: int, elite: int, tournament: int, crossover: float,
                 mutation: float) -> tuple[str, int, int, int, int, float, float]:
    """The genetic algorithm's settings, checked, each error naming its argument."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    population = _validate.positive_int(population, "population")
    if population < 2:
        raise ValueError(f"population must be at least 2, got {population}")
    generations = _non_negative_int(generations, "generations")
    elite = _validate.positive_int(elite, "elite")
    if elite >= population:
        raise ValueError(f"elite must be smaller than population ({population}), so that children are bred, got "
                         f"{elite}")
    tournament = _validate.positive_int(tournament, "tournament")
    return (objective, population, generations, elite, tournament, _validate.fraction(crossover, "crossover"),
            _validate.fraction(mutation, "mutation"))


def _tabu_settings(objective: str, iterations: int, n_neighbours: int, tenure: int) -> tuple[str, int, int, int]:
    """The tabu search's settings, checked, each error naming its argument."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    return (objective, _non_negative_int(iterations, "iterations"),
            _validate.positive_int(n_neighbours, "n_neighbours"), _non_negative_int(tenure, "tenure"))


def _genetic_cost(b: int, t: int, objective: str, init: str, population: int, generations: int, elite: int,
                  predicted: bool) -> int:
    """Model inputs of :func:`genetic` (see :func:`genetic_cost`)."""
    per = (2 if objective == "le-mo" else 1) * (t - 1)  # inner curve points per individual
    cost = b if predicted else 0
    cost += b * per * (population - 1) if init == "search" else 2 * b + b * per * population
    cost += b * per * (population - elite) * generations
    return cost + (0 if objective == "le-mo" else b * (t - 1))


def _tabu_cost(b: int, t: int, objective: str, init: str, lo: torch.Tensor, hi: torch.Tensor,
               predicted: bool) -> int:
    """Model inputs of :func:`tabu` (see :func:`tabu_cost`); ``lo``, ``hi`` the positions of every sampled swap."""
    curves = 2 if objective == "le-mo" else 1
    cost = b if predicted else 0
    cost += {"greedy": b * (t * (t + 1) // 2 + t + 2), "trajectory": 2 * b * (t + 1), "search": 0}[init]
    cost += curves * int((hi - lo).sum())
    return cost + (0 if objective == "le-mo" else b * (t + 1))


def _population_start(init: Search | torch.Tensor | None, b: int, t: int, edge: int, dev: torch.device
                      ) -> Search | torch.Tensor | None:
    """The genetic algorithm's ``init``, checked before any forward pass: a :class:`Search` on x's device, a
    trajectory, or None."""
    if init is None:
        return None
    if isinstance(init, Search):
        tau = _check_trajectory(init.trajectory, "init", b, t).to(dev)
        if init.lerf.shape != (b, t + 1) or init.morf.shape != (b, t + 1):
            raise ValueError(f"init's curves must be ({b}, {t + 1}) for these images and edge={edge}, got lerf "
                             f"{tuple(init.lerf.shape)} and morf {tuple(init.morf.shape)}")
        return Search(tau, init.lerf.to(dev), init.morf.to(dev), init.passes)
    return _check_trajectory(init, "init", b, t, dev)


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


def _population_curves(s: _Setup, tau: torch.Tensor, images: torch.Tensor, need: tuple[bool, bool],
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


def _neighbour_curves(s: _Setup, lerf: torch.Tensor, morf: torch.Tensor, new_tau: torch.Tensor, lo: torch.Tensor,
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


def complete_search(model: Callable, x: torch.Tensor, *, edge: int = 4, reference: Reference = "zero",
                    output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """Complete search (CS, spec §5.5): the output after deleting every subset of the t patches, reduced per
    subset size k → ``{"min": (B, t + 1), "max": (B, t + 1)}``.

    ``min[:, k]`` is the lowest output over all size-k deletions (CS-Mo: ΣCS-Mo ≤ ΣMoRF of any trajectory),
    ``max[:, k]`` the highest (CS-Le: ΣCS-Le ≥ ΣLeRF of any trajectory). All 2^t masked inputs per image go through
    the engine, ``batch_size`` at a time; t ≤ 20 (the paper uses t = 16, 65,536 inputs per image).
    """
    s = _setup(model, x, edge, reference, output, target, batch_size)
    t = s.t
    if t > _MAX_COMPLETE:
        raise ValueError(f"complete search evaluates 2^t inputs per image; edge={edge} gives t={t} > "
                         f"{_MAX_COMPLETE}")
    dev = x.device
    subsets = torch.arange(2 ** t, device=dev)
    bits = (subsets[:, None] >> torch.arange(t, device=dev)) & 1 == 1  # (2^t, t)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        return bits[v0:v1].expand(b1 - b0, -1, -1)

    out = s.runner.masked(masks, n_variants=2 ** t)
    size = bits.sum(1).expand(x.shape[0], -1)
    init = torch.full((x.shape[0], t + 1), math.inf, dtype=out.dtype, device=dev)
    return {"min": init.scatter_reduce(1, size, out, "amin", include_self=False),
            "max": (-init).scatter_reduce(1, size, out, "amax", include_self=False)}


def random_deletion_curves(model: Callable, x: torch.Tensor, *, edge: int, n_orders: int,
                           generator: torch.Generator | int | None, reference: Reference = "zero",
                           output: Output = "prob", target: torch.Tensor | None = None,
                           batch_size: BatchSize = None, sample_index: torch.Tensor | None = None) -> torch.Tensor:
    """The random deletion test (Fig. 4, spec §5.6): deletion curves along ``n_orders`` uniformly random orders per
    image → ``(B, n_orders, t + 1)``; plot the mean against k/t for several ``edge`` values and references. The
    orders are keyed to the sample: image i's come from a stream keyed by a root seed drawn from ``generator`` and
    ``sample_index[i]`` (its global index, default its position)."""
    s = _setup(model, x, edge, reference, output, target, batch_size)
    n_orders = _validate.positive_int(n_orders, "n_orders")
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the random orders")
    b = x.shape[0]
    perm = _orders.uniform((b, n_orders, s.t), seeds, x.device).reshape(b * n_orders, s.t).argsort(dim=1)
    rows = torch.arange(b, device=x.device).repeat_interleave(n_orders)
    return _curves(model, x, s, output, perm, rows, batch_size).view(b, n_orders, s.t + 1)


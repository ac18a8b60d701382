"""TRACE-SA (Wang & Wang, spec §5.4): simulated annealing over trajectories with the swap neighbourhood, incremental
energy and all images in one batch, and :func:`anneal_cost`, its exact count of model inputs before it runs.

Its default :data:`ITERATIONS` (50) polishes the greedy start in minutes on a CPU for a few images; the paper's
K = 5,000 (:data:`PAPER_ITERATIONS`) is ``iterations=PAPER_ITERATIONS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics.papers.trace import trajectories as T
from faithlab.metrics.papers.trace.search._chain import Chain, chain_result, start
from faithlab.metrics.papers.trace.search.base import (OBJECTIVES, NAMES, Search, init_kind, pair, image_shape, swap,
                                                       objective_value)
from faithlab.metrics.papers.trace.trajectories import order_curves, outputs, Setup, setup
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["T0", "ITERATIONS", "PAPER_ITERATIONS", "anneal", "anneal_cost"]

T0 = {"prob": 0.1, "logit": 2.0}
"""The paper's initial SA temperatures per output: T0 = 0.1 for -p (``"prob"``, the probability) and 2 for -y
(``"logit"``) (spec §5.4); :func:`anneal` takes them when its ``t0`` is None."""
PAPER_ITERATIONS = 5000
"""The paper's number of annealing iterations K (spec §5.4; the released code's default is 2,000)."""
ITERATIONS = 50
""":func:`anneal`'s default K: a short polish of the greedy start that finishes in minutes on a CPU for a few
224-px images (4 images, t = 49, a ResNet-18: 1,276 greedy inputs + ~33 per iteration per image, ~11,800 inputs,
~4 min at ~20 ms per input). The paper's K is :data:`PAPER_ITERATIONS`; pass it for the paper's search."""


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
    s = setup(model, x, edge, reference, output, target, batch_size)
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the annealing proposals")
    b, t, dev = x.shape[0], s.t, x.device
    if t < 2:
        raise ValueError(f"annealing needs at least 2 patches, got edge={edge}")
    draws = _orders.uniform((b, iterations, 3), seeds, dev)  # every iteration's draws at once: one call per image
    cost = _anneal_cost(b, t, objective, init_kind(init), iterations, draws, incremental, predicted)
    with tqdm(total=cost, unit="input", disable=not show, leave=False,
              desc=f"TRACE-SA-{NAMES[objective]}: {b} images × {iterations:,} iterations, t = {t}: {cost:,} model "
                   "inputs") as bar:
        bar.update(b if predicted else 0)  # the prediction that fixed the target (see anneal_cost)
        tau, lerf, morf, start_passes = start(model, x, s, init, objective=objective, edge=edge, output=output,
                                              batch_size=batch_size, done=bar.update)
        passes = [start_passes]
        need = (objective in ("le", "le-mo"), objective in ("mo", "le-mo"))  # the curves the objective reads
        chain = Chain.starting_at(tau, lerf, morf, -objective_value(lerf, morf, objective))
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
        result = chain_result(model, x, s, output, chain, need, passes, history, batch_size)
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
    shape = image_shape(x)
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
    return _anneal_cost(shape[0], t, objective, init_kind(init), iterations, draws, incremental, target is None)


def _anneal_cost(b: int, t: int, objective: str, init: str, iterations: int, draws: torch.Tensor | None,
                 incremental: bool, predicted: bool) -> int:
    """Model inputs of :func:`anneal` (see :func:`anneal_cost`); ``draws`` ``(B, K, 3)``, read when
    ``incremental``."""
    curves = 2 if objective == "le-mo" else 1
    cost = b if predicted else 0  # the prediction of the target on the clean images
    cost += {"greedy": b * (t * (t + 1) // 2 + t + 2), "trajectory": 2 * b * (t + 1), "search": 0}[init]
    if incremental:
        lo, hi = pair(draws[..., 0], draws[..., 1], t)
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


def _propose(tau: torch.Tensor, u: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The swap proposal of every image from its uniforms ``u[:, 0]``, ``u[:, 1]`` → (τ', lo, hi): two distinct
    positions lo < hi, uniform over the C(t, 2) pairs, exchanged."""
    lo, hi = pair(u[:, 0], u[:, 1], t)
    return swap(tau, lo, hi), lo, hi


def _swapped_points(model: Callable, x: torch.Tensor, s: Setup, output: Output, chain: Chain,
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
    out = outputs(model, x, s, output, torch.cat(masks), rows.repeat(len(masks)), batch_size)
    if need_le:
        new_lerf[rows, k_le] = out[:n_each]
    if need_mo:
        new_morf[rows, k_mo] = out[-n_each:]
    return new_lerf, new_morf, out.numel()


def _whole_curves(model: Callable, x: torch.Tensor, s: Setup, output: Output, chain: Chain,
                  new_tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, need: tuple[bool, bool],
                  batch_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The proposals' curves re-evaluated whole (the published algorithm's cost; ``lo``, ``hi`` unused) → (LeRF,
    MoRF, model inputs spent)."""
    need_le, need_mo = need
    b = x.shape[0]
    new_lerf, new_morf = chain.lerf.clone(), chain.morf.clone()
    orders = [o for o, needed in ((new_tau, need_le), (new_tau.flip(1), need_mo)) if needed]
    both = order_curves(model, x, s, output, torch.cat(orders), torch.arange(b, device=x.device).repeat(len(orders)),
                   batch_size)
    if need_le:
        new_lerf = both[:b]
    if need_mo:
        new_morf = both[-b:]
    return new_lerf, new_morf, both.numel()


def _metropolis(delta: torch.Tensor, u: torch.Tensor, temperature: float) -> torch.Tensor:
    """Accept a move that lowers the energy, else with probability exp(−ΔE/T) (``u`` uniform in [0, 1))."""
    return (delta < 0) | (u < torch.exp(-delta / temperature))

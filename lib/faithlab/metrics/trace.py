"""TRACE (Wang & Wang): deletion metrics on a patch grid and the trajectories that optimise them, on the shared
removal engine.

An image is cut into a grid of t = e×e square patches (spec §5.1). A *trajectory* τ is a permutation of the patch
ids read bottom-to-top: ``τ[0]`` is the least important patch, ``τ[-1]`` the most important. Its LeRF curve
deletes the patches in the order τ, its MoRF curve in the order rev(τ); each curve has t + 1 points
``c(k) = f(x with the first k patches of the order deleted)`` and its AUC is the plain sum (no normalisation, the
paper's Table 1 scale). f is the softmax probability (``"prob"``, TRACE-p) or the logit (``"logit"``, TRACE-y) of
the target class, the ground-truth label in the paper. An attribution map defines τ by sorting its patch means
ascending, ties by the smaller patch id (:func:`trajectory_from_map`).

The optimisation problems (spec §5.2; the paper's definitions, not the released code's, whose ``'Le'``/``'Mo'``
labels are swapped): ``"le"`` maximise ΣLeRF(τ); ``"mo"`` minimise ΣMoRF(τ); ``"le-mo"`` maximise
ΣLeRF(τ) − ΣMoRF(τ). :func:`greedy` (TRACE-Greedy, exact for additive models), :func:`anneal` (TRACE-SA with the
swap neighbourhood, incremental energy and all images in one batch) and :func:`complete_search` (the CS bounds for
small t) search them; :func:`trajectory_attribution` maps a trajectory back to an attribution π(τ).

Every function evaluates its perturbed inputs through the removal engine, at most ``batch_size`` per forward
call, so results do not depend on ``batch_size``; randomness comes only from ``generator``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from faithlab import _validate, perturb
from faithlab.perturb import orders as _orders
from faithlab.perturb.engine import Output, _prepare, _run
from faithlab.perturb.references import Reference, make_reference
from faithlab.perturb.units import Units, patch_units, unit_scores

__all__ = ["OBJECTIVES", "Search", "patch_grid", "patch_mean_reference", "trajectory_from_map",
           "trajectory_attribution", "trajectory_map", "deletion_curve", "insertion_curve", "lerf_morf",
           "lerf_morf_details", "objective_value", "greedy", "anneal", "complete_search", "random_deletion_curves"]

OBJECTIVES = ("le", "mo", "le-mo")
"""TRACE-Le (maximise ΣLeRF), TRACE-Mo (minimise ΣMoRF), TRACE-Le−Mo (maximise ΣLeRF − ΣMoRF)."""
_T0 = {"prob": 0.1, "logit": 2.0}
"""The paper's initial SA temperatures: T0 = 0.1 for -p (probability) and 2 for -y (logit) (spec §5.4)."""
_MAX_COMPLETE = 20


@dataclass(frozen=True)
class Search:
    """A searched trajectory and its curves.

    trajectory: ``(B, t)`` int64 patch ids, bottom-to-top (first = deleted first under LeRF). lerf, morf:
    ``(B, t + 1)`` deletion curves of τ and of rev(τ). passes: ``(S,)`` int64, the cumulative number of model
    inputs evaluated after each step of the search (greedy: per deletion step; annealing: after the start and each
    iteration). energy: ``(S, B)`` float64, the best energy (−objective) reached after each step, or None.
    accepted: ``(B,)`` accepted moves per image (annealing), or None.
    """

    trajectory: torch.Tensor
    lerf: torch.Tensor
    morf: torch.Tensor
    passes: torch.Tensor
    energy: torch.Tensor | None = None
    accepted: torch.Tensor | None = None


# --------------------------------------------------------------------------------------------------- patches
def patch_grid(x: torch.Tensor, edge: int) -> Units:
    """The t = edge² square patches of square images x ``(B, C, H, W)`` (H = W divisible by edge), row-major ids."""
    _validate.tensor(x, "x", ndim=4)
    e = _validate.positive_int(edge, "edge")
    h, w = x.shape[-2:]
    if h != w or h % e:
        raise ValueError(f"edge={e} must divide the height and width of square images, got {h}x{w}")
    return patch_units(x, h // e)


def patch_mean_reference(x: torch.Tensor, edge: int) -> torch.Tensor:
    """TRACE's extra ``patch_mean`` reference (spec §5.1, code): every patch replaced by its own per-channel mean
    → ``(B, C, H, W)``; pass it as ``reference=``."""
    patch_grid(x, edge)
    side = x.shape[-1] // edge
    return F.interpolate(F.avg_pool2d(x, side), scale_factor=side, mode="nearest")


def trajectory_from_map(attributions: torch.Tensor, x: torch.Tensor, *, edge: int,
                        reduce: str = "mean") -> torch.Tensor:
    """The trajectory σ(ψ) of a pixel map → ``(B, t)``: patch scores by average pooling (``reduce="mean"``, the
    code's area interpolation; ``"mean_abs"`` for |·|, as the paper treats IG and I×G), sorted ascending with ties
    by the smaller patch id (spec §5.1). attributions: ``(B, C|1, H, W)`` (C = x's channels) or ``(B, H, W)``; or
    ``(B, t)`` patch scores directly. A constant map (no ranking) gives the patch ids in order and is counted by a
    ``perturb.ConstantMapWarning``."""
    units = patch_grid(x, edge)
    a = _validate.tensor(attributions, "attributions")
    if a.ndim == 2 and a.shape == (x.shape[0], units.n):
        _validate.finite(a, "attributions")
        scores = a
    else:
        if a.ndim == 4 and a.shape[1] not in (1, x.shape[1]):
            shapes = "(B, 1, H, W)" if x.shape[1] == 1 else f"(B, {x.shape[1]}, H, W), (B, 1, H, W)"
            raise ValueError(f"attributions has {a.shape[1]} channels but x has {x.shape[1]}: pass a map of shape "
                             f"{shapes} or (B, H, W), got {tuple(a.shape)}")
        scores = unit_scores(a, units, reduce=reduce)
        _validate.batch_match(x, scores, "x", "attributions")
    perturb.warn_constant(perturb.constant_maps(scores), "their trajectory is the patch ids in order (ties by id)")
    return _orders.order(scores, "lerf")


def trajectory_attribution(trajectory: torch.Tensor, *, alpha: float = 2.0) -> torch.Tensor:
    """π(τ) = ((rank + 1)/t)^α per patch → ``(B, t)`` float (spec §5.2): the last patch of τ (most important)
    gets 1, the first 1/tᵅ. Sorting π ascending gives τ back. alpha: > 0 (Fig. 3 uses 2, the code 3)."""
    tau = _check_trajectory(trajectory, "trajectory")
    a = _validate.number(alpha, "alpha")
    if not 0 < a < math.inf:
        raise ValueError(f"alpha must be a positive finite number, got {alpha!r}")
    t = tau.shape[1]
    return ((_orders.ranks(tau) + 1).double() / t).pow(a).float()


def trajectory_map(trajectory: torch.Tensor, size: int, *, alpha: float = 2.0) -> torch.Tensor:
    """π(τ) upsampled bilinearly to a ``size``² image for display → ``(B, 1, size, size)`` (Fig. 3a)."""
    pi = trajectory_attribution(trajectory, alpha=alpha)
    e = math.isqrt(pi.shape[1])
    if e * e != pi.shape[1]:
        raise ValueError(f"trajectory must cover a square grid of patches, got t={pi.shape[1]}")
    size = _validate.positive_int(size, "size")
    return F.interpolate(pi.view(-1, 1, e, e), size=(size, size), mode="bilinear", align_corners=False)


def _check_trajectory(trajectory, name: str, batch: int | None = None, t: int | None = None) -> torch.Tensor:
    tau = _validate.tensor(trajectory, name, ndim=2)
    if tau.dtype != torch.int64:
        raise TypeError(f"{name} must be an int64 tensor of patch ids, got dtype {tau.dtype}")
    if (batch is not None and tau.shape[0] != batch) or (t is not None and tau.shape[1] != t):
        raise ValueError(f"{name} must have shape ({batch}, {t}), got {tuple(tau.shape)}")
    if tau.shape[1] == 0:
        raise ValueError(f"{name} must order at least one patch, got shape {tuple(tau.shape)}")
    ids = torch.arange(tau.shape[1], device=tau.device).expand_as(tau)
    if not torch.equal(tau.sort(dim=1).values, ids):
        raise ValueError(f"{name} must hold a permutation of the {tau.shape[1]} patch ids in every row")
    return tau


# --------------------------------------------------------------------------------------------------- curves
@dataclass(frozen=True)
class _Setup:
    units: Units
    reference: torch.Tensor
    target: torch.Tensor
    t: int


def _setup(model: Callable, x: torch.Tensor, edge: int, reference: Reference, output: Output,
           target: torch.Tensor | None, batch_size: int) -> _Setup:
    """Validation shared by every entry point; the target is resolved once (the prediction on the clean x)."""
    units = patch_grid(x, edge)
    _validate.model(model, "model")
    _validate.model_accepts(model, x, "model", "x")  # before _prepare's finiteness check, which cannot read a meta x
    _prepare(model, x, units, output, target, batch_size)
    if target is None:
        none = torch.zeros(x.shape[0], 1, units.n, dtype=torch.bool, device=x.device)
        target = _run(model, x, units, make_reference(x, "zero"), "predicted", None, 1,
                      lambda b0, b1, v0, v1: none[b0:b1], batch_size).squeeze(1)
    return _Setup(units, make_reference(x, reference), target, units.n)


def _outputs(model: Callable, x: torch.Tensor, s: _Setup, output: Output, removed: torch.Tensor,
             rows: torch.Tensor | None, batch_size: int) -> torch.Tensor:
    """Model output on ``(R, t)`` patch masks applied to ``x[rows]`` (rows None: R = B, one mask per sample)."""
    return _run(model, x, s.units, s.reference, output, s.target, 1, lambda b0, b1, v0, v1: removed[b0:b1, None],
                batch_size, rows=rows).squeeze(1)


def _curves(model: Callable, x: torch.Tensor, s: _Setup, output: Output, deletion_order: torch.Tensor,
            rows: torch.Tensor | None, batch_size: int, insertion: bool = False) -> torch.Tensor:
    """Deletion (or insertion) curves ``(R, t + 1)`` of the orders ``(R, t)`` on ``x[rows]``."""
    rank = _orders.ranks(deletion_order)
    counts = torch.arange(s.t + 1, device=x.device)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        kept_first = _orders.top_masks(rank[b0:b1], counts[v0:v1])
        return ~kept_first if insertion else kept_first

    return _run(model, x, s.units, s.reference, output, s.target, s.t + 1, masks, batch_size, rows=rows)


def deletion_curve(model: Callable, x: torch.Tensor, order: torch.Tensor, *, edge: int,
                   reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                   batch_size: int = 256) -> torch.Tensor:
    """Model output after deleting the first k patches of ``order`` for k = 0..t → ``(B, t + 1)`` (spec §5.1).

    x: ``(B, C, H, W)`` square images; order: ``(B, t)`` int64 deletion order (a trajectory for LeRF, its flip for
    MoRF). reference: ``"zero"`` (0 in the model's input space, the dataset mean for normalised images),
    ``"mean"`` (the image's scalar mean), ``"blur"`` (Gaussian blur, 31×31, σ = 56 at 224 px; pass
    ``perturb.make_reference(x, "blur", kernel_size=..., sigma=...)`` for other sizes), :func:`patch_mean_reference`
    or any tensor. output: ``"prob"`` (TRACE-p) or ``"logit"`` (TRACE-y) of target (``(B,)``; None → prediction).
    """
    s = _setup(model, x, edge, reference, output, target, batch_size)
    tau = _check_trajectory(order, "order", x.shape[0], s.t).to(x.device)
    return _curves(model, x, s, output, tau, None, batch_size)


def insertion_curve(model: Callable, x: torch.Tensor, order: torch.Tensor, *, edge: int,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: int = 256) -> torch.Tensor:
    """Model output after inserting the first k patches of ``order`` into the fully deleted image, k = 0..t →
    ``(B, t + 1)``. Thm 3.1: inserting in MoRF order gives the LeRF deletion curve reversed, so the AUCs agree.
    Arguments as in :func:`deletion_curve`."""
    s = _setup(model, x, edge, reference, output, target, batch_size)
    tau = _check_trajectory(order, "order", x.shape[0], s.t).to(x.device)
    return _curves(model, x, s, output, tau, None, batch_size, insertion=True)


def lerf_morf_details(model: Callable, x: torch.Tensor, trajectory: torch.Tensor, *, edge: int,
                      reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                      batch_size: int = 256) -> dict[str, torch.Tensor]:
    """LeRF and MoRF deletion curves of a trajectory and their sums (Table 1, Fig. 2b).

    trajectory: ``(B, t)`` bottom-to-top (:func:`trajectory_from_map` for a pixel map). Returns ``lerf``, ``morf``
    ``(B, t + 1)``; ``lerf_auc``, ``morf_auc`` ``(B,)`` plain sums; ``lerf_morf`` ``(B,)`` ΣLeRF − ΣMoRF (higher =
    better). Both curves go through one engine call. Other arguments as in :func:`deletion_curve`.
    """
    s = _setup(model, x, edge, reference, output, target, batch_size)
    tau = _check_trajectory(trajectory, "trajectory", x.shape[0], s.t).to(x.device)
    b = x.shape[0]
    both = _curves(model, x, s, output, torch.cat([tau, tau.flip(1)]), torch.arange(b, device=x.device).repeat(2),
                   batch_size)
    lerf, morf = both[:b], both[b:]
    return {"lerf": lerf, "morf": morf, "lerf_auc": lerf.sum(1), "morf_auc": morf.sum(1),
            "lerf_morf": lerf.sum(1) - morf.sum(1)}


def lerf_morf(model: Callable, x: torch.Tensor, trajectory: torch.Tensor, *, edge: int, reference: Reference = "zero",
              output: Output = "prob", target: torch.Tensor | None = None, batch_size: int = 256) -> torch.Tensor:
    """ΣLeRF − ΣMoRF of a trajectory → ``(B,)``, higher = better (Table 1). See :func:`lerf_morf_details`."""
    return lerf_morf_details(model, x, trajectory, edge=edge, reference=reference, output=output, target=target,
                             batch_size=batch_size)["lerf_morf"]


def objective_value(lerf: torch.Tensor, morf: torch.Tensor, objective: str) -> torch.Tensor:
    """The value TRACE maximises, in float64 → ``(B,)``: ``"le"`` ΣLeRF, ``"mo"`` −ΣMoRF, ``"le-mo"`` their sum
    ΣLeRF − ΣMoRF. The annealing energy is its negative."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    le, mo = lerf.double().sum(-1), morf.double().sum(-1)
    return le if objective == "le" else -mo if objective == "mo" else le - mo


# --------------------------------------------------------------------------------------------------- search
def greedy(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le", reference: Reference = "zero",
           output: Output = "prob", target: torch.Tensor | None = None, batch_size: int = 256) -> Search:
    """TRACE-Greedy (spec §5.3): from the full image, repeatedly delete the remaining patch whose deletion leaves
    the highest (``"le"``) or lowest (``"mo"``) output, ties by the smaller patch id.

    Each step evaluates every remaining patch of every image in one engine call (t(t+1)/2 − 1 inputs per image
    over the steps, plus the clean and the fully deleted image). Exact for a model whose target output is a monotone function of an additive score of the patches
    kept. For ``"mo"`` the greedy deletion order is rev(τ), so the returned trajectory is its flip. The other
    curve (MoRF for ``"le"``, LeRF for ``"mo"``) is evaluated too (t + 1 more inputs) for cross-tests.
    """
    _validate.one_of(objective, "objective", ("le", "mo"))
    s = _setup(model, x, edge, reference, output, target, batch_size)
    b, t, dev = x.shape[0], s.t, x.device
    rows = torch.arange(b, device=dev)
    deleted = torch.zeros(b, t, dtype=torch.bool, device=dev)
    order = torch.empty(b, t, dtype=torch.int64, device=dev)
    start = _outputs(model, x, s, output, deleted, None, batch_size)
    curve = torch.empty(b, t + 1, dtype=start.dtype, device=dev)
    curve[:, 0] = start
    passes = [b]
    for step in range(t - 1):
        remaining = (~deleted).nonzero()[:, 1].view(b, t - step)  # ascending patch ids

        def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
            m = deleted[b0:b1, None, :].expand(-1, v1 - v0, -1).clone()
            return m.scatter_(2, remaining[b0:b1, v0:v1, None], True)

        out = _run(model, x, s.units, s.reference, output, s.target, t - step, masks, batch_size)
        pick = out.argmax(1) if objective == "le" else out.argmin(1)  # first extremum = smaller patch id
        chosen = remaining.gather(1, pick[:, None]).squeeze(1)
        order[:, step] = chosen
        deleted[rows, chosen] = True
        curve[:, step + 1] = out.gather(1, pick[:, None]).squeeze(1)
        passes.append(passes[-1] + b * (t - step))
    order[:, t - 1] = (~deleted).nonzero()[:, 1]
    curve[:, t] = _outputs(model, x, s, output, torch.ones_like(deleted), None, batch_size)
    tau = order if objective == "le" else order.flip(1)
    other = _curves(model, x, s, output, order.flip(1), None, batch_size)
    passes.append(passes[-1] + b * (t + 2))
    lerf, morf = (curve, other) if objective == "le" else (other, curve)
    return Search(tau, lerf, morf, torch.tensor(passes))


def _swap(tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """τ with positions lo[b] and hi[b] exchanged in every row."""
    new = tau.clone()
    a, c = tau.gather(1, lo[:, None]), tau.gather(1, hi[:, None])
    return new.scatter_(1, lo[:, None], c).scatter_(1, hi[:, None], a)


def anneal(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le-mo",
           init: Search | torch.Tensor | None = None, iterations: int = 5000, t0: float | None = None,
           eta: float = 0.999, generator: torch.Generator | int | None = None, reference: Reference = "zero",
           output: Output = "prob", target: torch.Tensor | None = None, batch_size: int = 256,
           incremental: bool = True, sample_index: torch.Tensor | None = None) -> Search:
    """TRACE-SA (spec §5.4): simulated annealing over trajectories with the swap neighbourhood.

    Every iteration proposes, for every image, τ' = τ with two distinct positions i < j swapped (uniform over the
    C(t, 2) pairs), accepts it if the energy E = −objective drops, else with probability exp(−ΔE/T), keeps the
    best trajectory seen, and cools T ← η·T. Paper values: ``iterations`` K = 5000, ``t0`` 0.1 for
    ``output="prob"`` and 2 for ``"logit"`` (the default when None), ``eta`` 0.999. ``init``: None starts from
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
    Returns the best trajectory per image with both its curves (:class:`Search`; the curve the objective ignores is
    evaluated once at the end; ``energy`` is the best energy after the start and after each iteration,
    ``accepted`` the accepted moves).
    """
    _validate.one_of(objective, "objective", OBJECTIVES)
    iterations = _validate.positive_int(iterations, "iterations")
    if t0 is None:
        if callable(output) or output not in _T0:
            raise ValueError(f"t0 has no paper default for output={output!r}; pass t0")
        t0 = _T0[output]
    t0 = _validate.number(t0, "t0")
    eta = _validate.number(eta, "eta")
    if not 0 < t0 < math.inf:
        raise ValueError(f"t0 must be positive and finite, got {t0!r}")
    if not 0 < eta <= 1:
        raise ValueError(f"eta must lie in (0, 1], got {eta!r}")
    s = _setup(model, x, edge, reference, output, target, batch_size)
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the annealing proposals")
    b, t, dev = x.shape[0], s.t, x.device
    if t < 2:
        raise ValueError(f"annealing needs at least 2 patches, got edge={edge}")
    passes = [0]
    if init is None:
        init = greedy(model, x, edge=edge, objective="mo" if objective == "mo" else "le", reference=reference,
                      output=output, target=s.target,
                      batch_size=batch_size)
        passes[0] = int(init.passes[-1])
    if isinstance(init, Search):
        tau, lerf, morf = init.trajectory.to(dev), init.lerf.to(dev), init.morf.to(dev)
        _check_trajectory(tau, "init", b, t)
        if lerf.shape != (b, t + 1) or morf.shape != (b, t + 1):
            raise ValueError(f"init's curves must be ({b}, {t + 1}) for these images and edge={edge}, got lerf "
                             f"{tuple(lerf.shape)} and morf {tuple(morf.shape)}")
    else:
        tau = _check_trajectory(init, "init", b, t).to(dev)
        both = _curves(model, x, s, output, torch.cat([tau, tau.flip(1)]), torch.arange(b, device=dev).repeat(2),
                       batch_size)
        lerf, morf = both[:b], both[b:]
        passes[0] += 2 * b * (t + 1)
    need_le, need_mo = objective in ("le", "le-mo"), objective in ("mo", "le-mo")
    energy = -objective_value(lerf, morf, objective)
    best = Search(tau.clone(), lerf.clone(), morf.clone(), torch.empty(0))
    best_energy = energy.clone()
    history = [best_energy.clone()]
    accepted = torch.zeros(b, dtype=torch.int64, device=dev)
    rows_all = torch.arange(b, device=dev)
    temperature = t0
    draws = _orders.uniform((b, iterations, 3), seeds, dev)  # every iteration's draws at once: one call per image
    for step in range(iterations):
        u = draws[:, step]
        i = (u[:, 0] * t).long().clamp_max(t - 1)
        j = (u[:, 1] * (t - 1)).long().clamp_max(t - 2)
        j = j + (j >= i).long()
        lo, hi = torch.minimum(i, j), torch.maximum(i, j)
        new_tau = _swap(tau, lo, hi)
        new_rank = _orders.ranks(new_tau)
        new_lerf, new_morf = lerf.clone(), morf.clone()
        if incremental:
            d = hi - lo
            rows = rows_all.repeat_interleave(d)
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
            passes.append(passes[-1] + out.numel())
        else:
            orders = [o for o, need in ((new_tau, need_le), (new_tau.flip(1), need_mo)) if need]
            both = _curves(model, x, s, output, torch.cat(orders), rows_all.repeat(len(orders)), batch_size)
            if need_le:
                new_lerf = both[:b]
            if need_mo:
                new_morf = both[-b:]
            passes.append(passes[-1] + both.numel())
        new_energy = -objective_value(new_lerf, new_morf, objective)
        delta = new_energy - energy
        take = (delta < 0) | (u[:, 2] < torch.exp(-delta / temperature))
        tau = torch.where(take[:, None], new_tau, tau)
        lerf = torch.where(take[:, None], new_lerf, lerf)
        morf = torch.where(take[:, None], new_morf, morf)
        energy = torch.where(take, new_energy, energy)
        accepted += take.long()
        better = energy < best_energy
        best = Search(torch.where(better[:, None], tau, best.trajectory), torch.where(better[:, None], lerf, best.lerf),
                      torch.where(better[:, None], morf, best.morf), best.passes)
        best_energy = torch.where(better, energy, best_energy)
        history.append(best_energy.clone())
        temperature *= eta
    lerf, morf = best.lerf, best.morf
    if not (need_le and need_mo):  # the curve the objective ignores was not tracked: evaluate it once, at the end
        other = _curves(model, x, s, output, best.trajectory if need_mo else best.trajectory.flip(1), None,
                        batch_size)
        lerf, morf = (other, morf) if need_mo else (lerf, other)
        passes[-1] += other.numel()
    return Search(best.trajectory, lerf, morf, torch.tensor(passes), torch.stack(history), accepted)


def complete_search(model: Callable, x: torch.Tensor, *, edge: int = 4, reference: Reference = "zero",
                    output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: int = 256) -> dict[str, torch.Tensor]:
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

    out = _run(model, x, s.units, s.reference, output, s.target, 2 ** t, masks, batch_size)
    size = bits.sum(1).expand(x.shape[0], -1)
    init = torch.full((x.shape[0], t + 1), math.inf, dtype=out.dtype, device=dev)
    return {"min": init.scatter_reduce(1, size, out, "amin", include_self=False),
            "max": (-init).scatter_reduce(1, size, out, "amax", include_self=False)}


def random_deletion_curves(model: Callable, x: torch.Tensor, *, edge: int, n_orders: int,
                           generator: torch.Generator | int | None, reference: Reference = "zero",
                           output: Output = "prob", target: torch.Tensor | None = None,
                           batch_size: int = 256, sample_index: torch.Tensor | None = None) -> torch.Tensor:
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


"""TRACE (Wang & Wang): deletion metrics on a patch grid, on the shared removal engine; the searches for the
trajectories that optimise them live in :mod:`faithlab.metrics.papers.trace.search`.

An image is cut into a grid of t = e×e square patches (spec §5.1). A *trajectory* τ is a permutation of the patch
ids read bottom-to-top: ``τ[0]`` is the least important patch, ``τ[-1]`` the most important. Its LeRF curve
deletes the patches in the order τ, its MoRF curve in the order rev(τ); each curve has t + 1 points
``c(k) = f(x with the first k patches of the order deleted)`` and its AUC is the plain sum (no normalisation, the
paper's Table 1 scale). f is the softmax probability (``"prob"``, TRACE-p) or the logit (``"logit"``, TRACE-y) of
the target class, the ground-truth label in the paper. An attribution map defines τ by sorting its patch means
ascending, ties by the smaller patch id (:func:`trajectory_from_map`).

:func:`lerf_morf` / :func:`lerf_morf_details` score attribution maps (ΣLeRF − ΣMoRF of their trajectories, the
metric's call shape); :func:`trajectory_scores` / :func:`trajectory_scores_details` score trajectories themselves
(the searches'); :func:`deletion_curve` and :func:`insertion_curve` follow any order;
:func:`trajectory_attribution` maps a trajectory back to an attribution π(τ).

Every function evaluates its perturbed inputs through the removal engine, at most ``batch_size`` per forward
call, so results do not depend on ``batch_size``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from faithlab import _validate, perturb
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference
from faithlab.perturb.units import Units, patch_units, unit_scores
from faithlab.metrics.registry import Metric, Option, plain, register

__all__ = ["patch_grid", "default_edge", "patch_mean_reference", "trajectory_from_map", "trajectory_attribution",
           "trajectory_map", "deletion_curve", "insertion_curve", "lerf_morf", "lerf_morf_details", "trajectory_scores",
           "trajectory_scores_details"]


# --------------------------------------------------------------------------------------------------- patches
def patch_grid(x: torch.Tensor, edge: int) -> Units:
    """The t = edge² square patches of square images x ``(B, C, H, W)`` (H = W divisible by edge), row-major ids."""
    _validate.tensor(x, "x", ndim=4)
    e = _validate.positive_int(edge, "edge")
    h, w = x.shape[-2:]
    if h != w or h % e:
        raise ValueError(f"edge={e} must divide the height and width of square images, got {h}x{w}")
    return patch_units(x, h // e)


def default_edge(x: torch.Tensor, edge: int | None = None) -> int:
    """The patch grid's edge for images x ``(B, C, H, W)``: ``edge`` itself when given, else TRACE's default 7 (the
    paper's 7 × 7 grid), 4 or 2, the first that divides the side of square images; raises naming ``edge`` when
    none does."""
    if edge is not None:
        e = _validate.positive_int(edge, "edge")
        if e < 2:  # one patch: every map has the same one-step trajectory
            raise ValueError(f"edge={e} measures nothing: a {e}×{e} grid is one patch, so every map has the same "
                             "trajectory (LeRF = MoRF); use at least 2 (TRACE's grid is 7)")
        return e
    _validate.tensor(x, "x", ndim=4)
    side = x.shape[-1]
    for e in (7, 4, 2):
        if x.shape[-2] == side and side % e == 0:
            return e
    raise ValueError(f"edge: no default patch grid divides images of {x.shape[-2]}×{side}; pass edge=")


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
    _validate.one_device(x=x, attributions=attributions)
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
    tau = check_trajectory(trajectory, "trajectory")
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


def check_trajectory(trajectory, name: str, batch: int | None = None, t: int | None = None,
                     device: torch.device | None = None) -> torch.Tensor:
    """A ``(batch, t)`` int64 permutation per row, on x's ``device`` when given (checked before any value is read)."""
    if device is not None and isinstance(trajectory, torch.Tensor) and trajectory.device != device:
        raise ValueError(f"{name} is on {trajectory.device} but x is on {device}; move them to the same device (e.g. "
                         f"{name}.to(x.device))")
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
class Setup:
    runner: perturb.Removal  # model, x, patch units, reference, read-out, target and batch size, checked once
    t: int


def setup(model: Callable, x: torch.Tensor, edge: int, reference: Reference, output: Output,
          target: torch.Tensor | None, batch_size: int) -> Setup:
    """Validation shared by every entry point; the target is resolved once (the prediction on the clean x, from the
    logits that are also every deletion curve's first point)."""
    units = patch_grid(x, edge)
    _validate.model(model, "model")
    _validate.model_accepts(model, x, "model", "x")  # before the runner's finiteness check, which cannot read a meta x
    return Setup(perturb.Removal(model, x, units=units, reference=reference, output=output, target=target,
                                 batch_size=batch_size), units.n)


def outputs(model: Callable, x: torch.Tensor, s: Setup, output: Output, removed: torch.Tensor,
            rows: torch.Tensor | None, batch_size: int) -> torch.Tensor:
    """Model output on ``(R, t)`` patch masks applied to ``x[rows]`` (rows None: R = B, one mask per sample)."""
    return s.runner.outputs(removed, sample=rows)


def order_curves(model: Callable, x: torch.Tensor, s: Setup, output: Output, deletion_order: torch.Tensor,
            rows: torch.Tensor | None, batch_size: int, insertion: bool = False) -> torch.Tensor:
    """Deletion (or insertion) curves ``(R, t + 1)`` of the orders ``(R, t)`` on ``x[rows]``."""
    rank = _orders.ranks(deletion_order)
    counts = torch.arange(s.t + 1, device=x.device)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        kept_first = _orders.top_masks(rank[b0:b1], counts[v0:v1])
        return ~kept_first if insertion else kept_first

    return s.runner.masked(masks, n_variants=s.t + 1, sample=rows)


def deletion_curve(model: Callable, x: torch.Tensor, order: torch.Tensor, *, edge: int,
                   reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                   batch_size: BatchSize = None) -> torch.Tensor:
    """Model output after deleting the first k patches of ``order`` for k = 0..t → ``(B, t + 1)`` (spec §5.1).

    x: ``(B, C, H, W)`` square images; order: ``(B, t)`` int64 deletion order (a trajectory for LeRF, its flip for
    MoRF). reference: ``"zero"`` (0 in the model's input space, the dataset mean for normalised images),
    ``"mean"`` (the image's scalar mean), ``"blur"`` (Gaussian blur, 31×31, σ = 56 at 224 px; pass
    ``perturb.make_reference(x, "blur", kernel_size=..., sigma=...)`` for other sizes), :func:`patch_mean_reference`
    or any tensor. output: ``"prob"`` (TRACE-p) or ``"logit"`` (TRACE-y) of target (``(B,)``; None → prediction).
    """
    _validate.one_device(x=x, order=order, target=target)  # before the target's forward pass
    s = setup(model, x, edge, reference, output, target, batch_size)
    tau = check_trajectory(order, "order", x.shape[0], s.t)
    return order_curves(model, x, s, output, tau, None, batch_size)


def insertion_curve(model: Callable, x: torch.Tensor, order: torch.Tensor, *, edge: int,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = None) -> torch.Tensor:
    """Model output after inserting the first k patches of ``order`` into the fully deleted image, k = 0..t →
    ``(B, t + 1)``. Thm 3.1: inserting in MoRF order gives the LeRF deletion curve reversed, so the AUCs agree.
    Arguments as in :func:`deletion_curve`."""
    _validate.one_device(x=x, order=order, target=target)  # before the target's forward pass
    s = setup(model, x, edge, reference, output, target, batch_size)
    tau = check_trajectory(order, "order", x.shape[0], s.t)
    return order_curves(model, x, s, output, tau, None, batch_size, insertion=True)


def trajectory_scores_details(model: Callable, x: torch.Tensor, trajectory: torch.Tensor, *, edge: int,
                              reference: Reference = "zero", output: Output = "prob",
                              target: torch.Tensor | None = None,
                              batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """LeRF and MoRF deletion curves of a trajectory and their sums (Table 1, Fig. 2b; the searches' trajectories).

    trajectory: ``(B, t)`` bottom-to-top (:func:`trajectory_from_map` for a pixel map; :func:`lerf_morf_details`
    takes the map itself). Returns ``lerf``, ``morf`` ``(B, t + 1)``; ``lerf_auc``, ``morf_auc`` ``(B,)`` plain
    sums; ``lerf_morf`` ``(B,)`` ΣLeRF − ΣMoRF (higher = better). Both curves go through one engine run, sharing their
    end points (the clean and the fully deleted image: 2·B·t inputs in all, not 2·B·(t + 1)). Other
    arguments as in :func:`deletion_curve`.
    """
    _validate.one_device(x=x, trajectory=trajectory, target=target)  # before the target's forward pass
    s = setup(model, x, edge, reference, output, target, batch_size)
    tau = check_trajectory(trajectory, "trajectory", x.shape[0], s.t)
    # one run: the clean and the fully deleted image are both curves' end points, each evaluated once
    fractions = torch.arange(s.t + 1, dtype=torch.float64, device="cpu") / s.t  # host-side, as the runner reads them
    lerf, morf = s.runner.curves(None, fractions, orders=(tau, tau.flip(1)))
    return {"lerf": lerf, "morf": morf, "lerf_auc": lerf.sum(1), "morf_auc": morf.sum(1),
            "lerf_morf": lerf.sum(1) - morf.sum(1)}


trajectory_scores = plain(trajectory_scores_details, "lerf_morf", """
    ΣLeRF − ΣMoRF of a trajectory → ``(B,)``, higher = better (Table 1). See :func:`trajectory_scores_details`.""")


def lerf_morf_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                      target: torch.Tensor | None = None, edge: int | None = None, reduce: str = "mean",
                      reference: Reference = "zero", output: Output = "prob",
                      batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """TRACE's score of attribution maps with its curves: the map's trajectory (:func:`trajectory_from_map`, patch
    means with ``reduce``, sorted ascending, ties by the smaller patch id) scored by
    :func:`trajectory_scores_details`.

    attributions: ``(B, C|1, H, W)`` or ``(B, H, W)`` maps of x (or ``(B, t)`` patch scores). edge: the grid is
    edge × edge patches; None → 7 (the paper's grid), 4 or 2, the first that divides the side
    (:func:`default_edge`). reduce: ``"mean"`` (the code's area interpolation) or ``"mean_abs"`` (|·| first, as
    the paper treats IG and I×G). target: the class read (``(B,)``; None → the model's prediction on x; the paper
    reads the true labels: pass ``target=y``). Other arguments as in :func:`deletion_curve`. Returns ``trajectory``
    ``(B, t)`` and the curves and sums of :func:`trajectory_scores_details` (``lerf``, ``morf``, ``lerf_auc``,
    ``morf_auc``, ``lerf_morf``).
    """
    _validate.one_device(x=x, attributions=attributions, target=target)
    edge = default_edge(x, edge)
    tau = trajectory_from_map(attributions, x, edge=edge, reduce=reduce)
    d = trajectory_scores_details(model, x, tau, edge=edge, reference=reference, output=output, target=target,
                                  batch_size=batch_size)
    return {"trajectory": tau, **d}


lerf_morf = plain(lerf_morf_details, "lerf_morf", """
    ΣLeRF − ΣMoRF of attribution maps → ``(B,)``, higher = better (Table 1): the trajectory of each map's patch
    means scored by its LeRF and MoRF deletion curves. See :func:`lerf_morf_details`.
    """)


def _edge_option(value, name, x):
    return None if value is None else _validate.positive_int(value, name)


def _check_edge(options: dict, x: torch.Tensor, name) -> None:
    patch_grid(x, default_edge(x, options["edge"]))  # the edge must divide the side: before any work


_EDGE = Option("edge", doc="TRACE: the patch grid edge (None: 7, 4 or 2, the first that divides the image side)",
               check=_edge_option)
_TIP = ("edge", 4, "a coarser patch grid")
_ONE_PATCH = ({"edge": 1},)  # one patch: the same trajectory for every map (refused)
# one run of lerf_morf_details per map serves the three (the map's patch trajectory and its two deletion curves)
register(Metric("lerf", "ΣLeRF", "trace", True, lerf_morf_details, score="lerf_auc", group="trace",
                needs=("images",), options=(_EDGE,), check=_check_edge, tip=_TIP, degenerate=_ONE_PATCH,
                doc="area under the probability curve, patches removed least relevant first"))
register(Metric("morf", "ΣMoRF", "trace", False, lerf_morf_details, score="morf_auc", group="trace",
                needs=("images",), options=(_EDGE,), check=_check_edge, tip=_TIP, degenerate=_ONE_PATCH,
                doc="area under the probability curve, patches removed most relevant first"))
register(Metric("le-mo", "ΣLeRF − ΣMoRF", "trace", True, lerf_morf, details=lerf_morf_details, score="lerf_morf",
                group="trace", needs=("images",), options=(_EDGE,), check=_check_edge, tip=_TIP, degenerate=_ONE_PATCH,
                doc="ΣLeRF − ΣMoRF: the gap between the two patch deletion curves"))

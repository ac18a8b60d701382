"""SaCo, the Salience-guided Faithfulness Coefficient (Wu et al., CVPR 2024), and the four cumulative-removal
metrics it is compared with (accuracy AUC, AOPC, log-odds, comprehensiveness), all on the shared removal engine.

SaCo (Algorithm 1, spec §3.1). Units (pixels by default) are sorted by salience, most salient first, and split into
K groups G_1..G_K of equal size (sizes differ by one when K does not divide n: unit of rank r goes to group
⌊r·K/n⌋). Each group is removed *alone* and ∇pred(G_i) = p(ŷ|x) − p(ŷ|x without G_i). Over all pairs i < j,
w = s(G_i) − s(G_j) with s(G) the sum of the salience in G; F accumulates +w if ∇pred(G_i) ≥ ∇pred(G_j) else −w,
and W accumulates |w|. SaCo = F / W ∈ [−1, 1], higher = more faithful. A map that is constant over the units
gives W = 0: the score is then 0 (spec §6.12) and ``saco_details`` reports it in ``undefined``.

The cumulative metrics (spec §3.2) remove the top (or bottom) 0, 10, …, 100 % of units, 11 points, with the same
reference (per-image per-channel mean) and the same signed-sum unit salience as SaCo. The fractions must include
0: p(ŷ|x) is read there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from faithlab import _validate, perturb, stats

__all__ = ["saco", "saco_details", "auc_accuracy", "aopc", "log_odds", "comprehensiveness", "FRACTIONS"]

FRACTIONS = tuple(i / 10 for i in range(11))  # 0, 10, ..., 100 % (spec §3.2)
_EPS = 1e-12


def _units_scores(x: torch.Tensor, attributions: torch.Tensor, units: perturb.Units | None) -> tuple:
    """Units (pixels when None) and the signed-sum salience of each unit ``(B, n)``."""
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    units = perturb.default_units(x) if units is None else units
    scores = perturb.unit_scores(attributions, units, reduce="sum")
    _validate.batch_match(x, scores, "x", "attributions")
    return units, scores


def saco_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, k: int = 10,
                 reference: perturb.Reference = "channel_mean", target: torch.Tensor | None = None,
                 units: perturb.Units | None = None, batch_size: int = 256) -> dict[str, torch.Tensor]:
    """SaCo with its ingredients (Algorithm 1; Fig. 3 case study).

    x: ``(B, C, H, W)`` images (or any layout the removal engine accepts); attributions: see
    ``perturb.unit_scores`` (e.g. ``(B, 1, H, W)``). k: number of groups (≤ number of units). target: ``(B,)``
    classes; None → the model's prediction ŷ (the paper). All B·(K+1) inputs (the clean one and K single-group
    removals per sample) go through one batched ``perturb.removal_outputs`` call, ``batch_size`` at a time.

    Returns a dict of tensors: ``saco`` ``(B,)`` in [−1, 1] (higher = more faithful); ``salience`` ``(B, K)``
    s(G_i), most salient group first; ``drop`` ``(B, K)`` ∇pred(G_i); ``prob`` ``(B,)`` p(target|x); ``groups``
    ``(B, n)`` group index of every unit; ``undefined`` ``(B,)`` bool, True where W = 0 (score set to 0).
    """
    units, scores = _units_scores(x, attributions, units)
    k = _validate.positive_int(k, "k")
    n = units.n
    if k > n:
        raise ValueError(f"k must be at most the number of units ({n}), got {k}")
    b = scores.shape[0]
    ranks = perturb.ranks(perturb.order(scores, "morf"))  # 0 = most salient; ties by lower unit id
    groups = torch.div(ranks * k, n, rounding_mode="floor")  # (B, n), near-equal groups
    ids = torch.arange(k, device=scores.device)
    member = groups[:, None, :] == ids[None, :, None]  # (B, K, n)
    salience = (member * scores[:, None, :]).sum(-1)  # s(G_i)
    removed = torch.cat([torch.zeros(b, 1, n, dtype=torch.bool, device=member.device), member], dim=1)
    out = perturb.removal_outputs(model, x, removed, units, reference, "prob", target, batch_size)
    prob, drop = out[:, 0], out[:, :1] - out[:, 1:]
    i, j = torch.triu_indices(k, k, offset=1, device=scores.device)
    w = salience[:, i] - salience[:, j]
    signed = torch.where(drop[:, i] >= drop[:, j], w, -w).sum(1)
    total = w.abs().sum(1)
    undefined = total == 0
    value = torch.where(undefined, torch.zeros_like(total), signed / torch.where(undefined, 1.0, total))
    return {"saco": value, "salience": salience, "drop": drop, "prob": prob, "groups": groups,
            "undefined": undefined}


def saco(model: Callable, x: torch.Tensor, attributions: torch.Tensor, k: int = 10,
         reference: perturb.Reference = "channel_mean", target: torch.Tensor | None = None,
         units: perturb.Units | None = None, batch_size: int = 256) -> torch.Tensor:
    """Salience-guided Faithfulness Coefficient per sample → ``(B,)`` in [−1, 1]; higher = more faithful.

    Wu et al. 2024, Algorithm 1 (see the module docstring; arguments as in :func:`saco_details`). Invariant to
    positive scaling of the map, and to adding a constant when k divides the number of units. A constant map
    (W = 0) scores 0; a uniform random map scores 0 in expectation.
    """
    return saco_details(model, x, attributions, k, reference, target, units, batch_size)["saco"]


def _clean_index(fractions: Sequence[float]) -> int:
    """Position of fraction 0 (the clean input, read as p(ŷ|x)); the fractions must include it."""
    values = [float(f) for f in fractions]
    if 0.0 not in values:
        raise ValueError(f"fractions must include 0 (the clean input), got {values}")
    return values.index(0.0)


def _curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor, direction: str, output: str,
           target: torch.Tensor | None, units: perturb.Units | None, reference: perturb.Reference,
           fractions: Sequence[float], batch_size: int) -> torch.Tensor:
    """Cumulative removal curve ``(B, F)`` and its clean value ``(B, 1)``, units ordered by signed-sum salience (ties by lower unit id)."""
    units, scores = _units_scores(x, attributions, units)
    curve = perturb.removal_curve(model, x, None, fractions, perturb.order(scores, direction), reference, output,
                                  target, units, batch_size)
    return curve, curve[:, _clean_index(fractions), None]


def auc_accuracy(model: Callable, x: torch.Tensor, attributions: torch.Tensor, y: torch.Tensor,
                 reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
                 fractions: Sequence[float] = FRACTIONS, batch_size: int = 256) -> torch.Tensor:
    """Per-sample accuracy AUC (spec §3.2; Ancona et al.): trapezoid area, x = fraction removed, under the 0/1
    indicator argmax f(x̃_top) = y as the most salient units are removed cumulatively → ``(B,)`` in [0, 1].
    The dataset AUC is the mean over samples. y: ``(B,)`` ground-truth labels. Lower = more faithful."""
    _validate.tensor(y, "y", ndim=1)
    curve, _ = _curve(model, x, attributions, "morf", "correct", y, units, reference, fractions, batch_size)
    return stats.trapezoid_auc(curve, torch.as_tensor(fractions, dtype=curve.dtype, device=curve.device))


def aopc(model: Callable, x: torch.Tensor, attributions: torch.Tensor, target: torch.Tensor | None = None,
         reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
         fractions: Sequence[float] = FRACTIONS, batch_size: int = 256) -> torch.Tensor:
    """AOPC (spec §3.2; Samek et al.): mean over the fractions of p(ŷ|x) − p(ŷ|x̃_top) → ``(B,)``; target None
    → ŷ. Higher = more faithful."""
    curve, clean = _curve(model, x, attributions, "morf", "prob", target, units, reference, fractions, batch_size)
    return (clean - curve).mean(1)


def log_odds(model: Callable, x: torch.Tensor, attributions: torch.Tensor, target: torch.Tensor | None = None,
             reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
             fractions: Sequence[float] = FRACTIONS, batch_size: int = 256) -> torch.Tensor:
    """LOdds (spec §3.2; Shrikumar et al., ATTCAT): mean over the fractions of log((p(ŷ|x̃_top) + ε) / (p(ŷ|x) +
    ε)), ε = 1e-12 → ``(B,)``, ≤ 0 when removal only lowers p. Lower = more faithful."""
    curve, clean = _curve(model, x, attributions, "morf", "prob", target, units, reference, fractions, batch_size)
    return (torch.log(curve + _EPS) - torch.log(clean + _EPS)).mean(1)


def comprehensiveness(model: Callable, x: torch.Tensor, attributions: torch.Tensor,
                      target: torch.Tensor | None = None, reference: perturb.Reference = "channel_mean",
                      units: perturb.Units | None = None, fractions: Sequence[float] = FRACTIONS,
                      batch_size: int = 256) -> torch.Tensor:
    """Comprehensiveness, SaCo's least-salient-first variant (spec §3.2; DeYoung et al.): mean over the fractions
    of p(ŷ|x) − p(ŷ|x̃_bot) → ``(B,)``; removing unimportant units should change little. Lower = more faithful."""
    curve, clean = _curve(model, x, attributions, "lerf", "prob", target, units, reference, fractions, batch_size)
    return (clean - curve).mean(1)

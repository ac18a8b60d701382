"""F-Fidelity's ground-truth-ranking analysis (spec §1.8–1.9): explainers degraded at known noise levels ξ, their
curves' macro and micro Spearman correlations with the ground truth and with each other, the micro ranks and the
methods' mean ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from faithlab import _validate
from faithlab.metrics.statistics import as_float, rankdata, spearman, trapezoid_auc

__all__ = ["DIRECTIONS", "macro_correlations", "micro_correlations", "micro_ranks", "ground_truth_ranking",
           "rank_methods"]

#: Ideal direction of each F-Fidelity correlation (spec §1.9): "min" means −1 is ideal, "max" means +1 is ideal.
DIRECTIONS: dict[str, str] = {"morf_vs_gt": "min", "lerf_vs_gt": "max", "morf_vs_lerf": "min"}


def _check_pqg(P: torch.Tensor, Q: torch.Tensor, gt: torch.Tensor) -> None:
    _validate.tensor(P, "P", ndim=3)
    _validate.tensor(Q, "Q", ndim=3)
    _validate.tensor(gt, "gt", ndim=1)
    _validate.one_device(P=P, Q=Q, gt=gt)
    if P.shape != Q.shape:
        raise ValueError(f"Q must have P's shape {tuple(P.shape)} (n_seeds, n_explainers, n_levels), got "
                         f"{tuple(Q.shape)}")
    if gt.shape[0] != P.shape[1]:
        raise ValueError(f"gt must have one value per explainer ({P.shape[1]}), got {gt.shape[0]}")


def _check_levels(levels: torch.Tensor | None, P: torch.Tensor, name: str) -> None:
    """Raise unless ``levels`` (None: uniform) is a 1-D tensor on P's device with one abscissa per level of P."""
    if levels is None:
        return
    _validate.tensor(levels, name, ndim=1)
    _validate.one_device(P=P, **{name: levels})
    if P.ndim >= 1 and levels.shape[0] != P.shape[-1]:
        raise ValueError(f"{name} must give one abscissa per level of P ({P.shape[-1]}), got {levels.shape[0]}")


def macro_correlations(
    P: torch.Tensor, Q: torch.Tensor, gt: torch.Tensor, levels: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """F-Fidelity macro correlations (spec §1.9): Spearman across explainers of the curves' trapezoid AUCs.

    P: (n_seeds, n_explainers, n_levels) "+" curves (MoRF-like), Q: same for "−" curves (LeRF-like), gt:
    (n_explainers,) ground-truth quality order (noise level ξ; higher = worse). levels: optional abscissae for the AUC.
    Returns {"morf_vs_gt", "lerf_vs_gt", "morf_vs_lerf"} → (n_seeds,) each; ideal values in ``DIRECTIONS``
    (−1, +1, −1).
    """
    _check_pqg(P, Q, gt)
    _check_levels(levels, P, "levels")
    auc_p, auc_q = trapezoid_auc(P, levels), trapezoid_auc(Q, levels)
    return {
        "morf_vs_gt": spearman(auc_p, gt),
        "lerf_vs_gt": spearman(auc_q, gt),
        "morf_vs_lerf": spearman(auc_p, auc_q),
    }


def micro_correlations(P: torch.Tensor, Q: torch.Tensor, gt: torch.Tensor) -> dict[str, torch.Tensor]:
    """F-Fidelity micro correlations (spec §1.9): Spearman across explainers at every seed and level.

    P, Q: (n_seeds, n_explainers, n_levels); gt: (n_explainers,). Returns the same three keys as
    :func:`macro_correlations`, each (n_seeds, n_levels), NaN where a vector is constant (average with nan-mean).
    """
    _check_pqg(P, Q, gt)
    g = gt.view(1, -1, 1)
    return {
        "morf_vs_gt": spearman(P, g, dim=1),
        "lerf_vs_gt": spearman(Q, g, dim=1),
        "morf_vs_lerf": spearman(P, Q, dim=1),
    }


def micro_ranks(corrs: torch.Tensor, *, direction: str) -> torch.Tensor:
    """F-Fidelity micro rank (spec §1.9): rank evaluation methods (dim 0) by their correlation, best = 1.

    corrs: (n_methods, ...) correlations, e.g. (n_methods, n_seeds, n_levels). direction: "min" (most negative is
    best) or "max" (most positive is best), see ``DIRECTIONS``. Ties share the minimum rank; NaN ranks last.
    Returns float ranks shaped like corrs. Lower is better.
    """
    _validate.tensor(corrs, "corrs")
    if direction not in ("min", "max"):
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")
    oriented = as_float(corrs) if direction == "min" else -as_float(corrs)
    return rankdata(oriented.nan_to_num(nan=torch.inf), dim=0, method="min")


def ground_truth_ranking(P: torch.Tensor, Q: torch.Tensor, noise_levels: Sequence[float] | torch.Tensor,
                         sparsity: Sequence[float] | torch.Tensor | None = None) -> dict[str, dict[str, torch.Tensor]]:
    """F-Fidelity correlation analysis (spec §1.8–1.9) of explainers degraded at known noise levels ξ.

    P: (n_seeds, n_explainers, n_levels) mean "+" scores (Fid+/RFid+/FFid+, MoRF-like); Q: same for "−"
    (LeRF-like). noise_levels: (n_explainers,) ξ of each explainer (the ground truth: lower is better).
    sparsity: optional abscissae of the levels for the macro AUC (default: uniform).
    Returns ``{"macro": {key: (n_seeds,)}, "micro": {key: (n_seeds, n_levels)}}`` with keys ``morf_vs_gt`` (ideal
    −1), ``lerf_vs_gt`` (ideal +1), ``morf_vs_lerf`` (ideal −1) — see ``DIRECTIONS``. The micro correlations
    are the inputs of :func:`rank_methods`. NaN where a vector is constant.
    """
    _validate.tensor(P, "P", ndim=3)
    gt = torch.as_tensor(noise_levels, dtype=P.dtype if P.is_floating_point() else torch.float64).to(P.device)
    _validate.tensor(gt, "noise_levels", ndim=1)
    if gt.shape[0] != P.shape[1]:
        raise ValueError(f"noise_levels must give one ξ per explainer ({P.shape[1]}), got {gt.shape[0]}")
    lv = None if sparsity is None else _validate.fractions(sparsity, "sparsity").to(P.device)
    _check_levels(lv, P, "sparsity")
    return {"macro": macro_correlations(P, Q, gt, lv), "micro": micro_correlations(P, Q, gt)}


def rank_methods(micro: Mapping[str, Mapping[str, torch.Tensor]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Micro ranks of evaluation methods (spec §1.9): at every seed and level rank the methods by their micro
    correlation (best = 1 in the ``DIRECTIONS`` sense, ties share the minimum rank, NaN last).

    micro: ``{method: ground_truth_ranking(...)["micro"]}``, all tensors (n_seeds, n_levels) of the same shape.
    Returns ``{key: {method: (mean rank, std rank)}}`` over all seeds × levels (population std). Lower is better.
    """
    if not isinstance(micro, Mapping) or len(micro) < 1:
        raise ValueError("micro must be a non-empty mapping {method: {correlation key: tensor}}")
    methods = list(micro)
    result: dict[str, dict[str, tuple[float, float]]] = {}
    for key, direction in DIRECTIONS.items():
        missing = [m for m in methods if key not in micro[m]]
        if missing:
            raise ValueError(f"micro[{missing[0]!r}] lacks the correlation {key!r}")
        shapes = {tuple(micro[m][key].shape) for m in methods}
        if len(shapes) != 1:
            raise ValueError(f"micro tensors for {key!r} must share one shape, got {sorted(shapes)}")
        ranks = micro_ranks(torch.stack([micro[m][key] for m in methods]), direction=direction).flatten(1)
        mean, std = ranks.mean(dim=1), ranks.std(dim=1, correction=0)
        result[key] = {m: (float(mean[i]), float(std[i])) for i, m in enumerate(methods)}
    return result

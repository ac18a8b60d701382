"""Rank statistics, curve areas and the F-Fidelity correlation analysis (torch in, torch out, vectorised).

All functions accept any leading batch shape and work on the inputs' device. Correlations of a constant vector are
NaN (undefined), never 0.
"""

from __future__ import annotations

import torch

from faithlab import _validate

__all__ = [
    "DIRECTIONS",
    "rankdata",
    "pearson",
    "spearman",
    "trapezoid_auc",
    "macro_correlations",
    "micro_correlations",
    "micro_ranks",
    "nan_mean_std",
]

#: Ideal direction of each F-Fidelity correlation (spec §1.9): "min" means −1 is ideal, "max" means +1 is ideal.
DIRECTIONS: dict[str, str] = {"morf_vs_gt": "min", "lerf_vs_gt": "max", "morf_vs_lerf": "min"}


def _float(x: torch.Tensor) -> torch.Tensor:
    return x if x.is_floating_point() else x.to(torch.get_default_dtype())


def rankdata(x: torch.Tensor, dim: int = -1, method: str = "average") -> torch.Tensor:
    """Ranks (1 = smallest) along ``dim``, ties sharing the ``"average"`` or the ``"min"`` rank (scipy's conventions).

    x: any shape. Returns a float tensor shaped like x. A row holding NaN gets NaN ranks (scipy's ``propagate``).
    """
    _validate.tensor(x, "x")
    if method not in ("average", "min"):
        raise ValueError(f"method must be 'average' or 'min', got {method!r}")
    v = _float(x).movedim(dim, -1)
    n = v.shape[-1]
    sorted_v, order = v.sort(dim=-1, stable=True)
    pos = torch.arange(n, device=v.device).expand_as(sorted_v)
    starts = torch.ones_like(sorted_v, dtype=torch.bool)
    starts[..., 1:] = sorted_v[..., 1:] != sorted_v[..., :-1]
    first = torch.where(starts, pos, 0).cummax(dim=-1).values  # index of the first member of each tie group
    if method == "min":
        ranks = first.to(v.dtype) + 1
    else:
        ends = torch.ones_like(starts)
        ends[..., :-1] = starts[..., 1:]
        last = torch.where(ends, pos, n).flip(-1).cummin(dim=-1).values.flip(-1)
        ranks = (first + last).to(v.dtype) / 2 + 1
    out = torch.empty_like(ranks).scatter_(-1, order, ranks)
    out = torch.where(v.isnan().any(dim=-1, keepdim=True), torch.nan, out)
    return out.movedim(-1, dim)


def pearson(a: torch.Tensor, b: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Pearson correlation along ``dim`` of broadcastable ``a`` and ``b``; NaN where either vector is constant.

    Returns the broadcast shape without ``dim``.
    """
    _validate.tensor(a, "a")
    _validate.tensor(b, "b")
    a, b = torch.broadcast_tensors(_float(a), _float(b))
    constant = (a.amax(dim) == a.amin(dim)) | (b.amax(dim) == b.amin(dim))
    ac = a - a.mean(dim, keepdim=True)
    bc = b - b.mean(dim, keepdim=True)
    r = (ac * bc).sum(dim) / ((ac * ac).sum(dim) * (bc * bc).sum(dim)).sqrt()
    return torch.where(constant, torch.nan, r.clamp(-1.0, 1.0))


def spearman(a: torch.Tensor, b: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Spearman rank correlation along ``dim`` (Pearson of average ranks); NaN where either vector is constant.

    a, b: broadcastable tensors. Returns the broadcast shape without ``dim``.
    """
    _validate.tensor(a, "a")
    _validate.tensor(b, "b")
    a, b = torch.broadcast_tensors(_float(a), _float(b))
    return pearson(rankdata(a, dim), rankdata(b, dim), dim)


def trapezoid_auc(curve: torch.Tensor, x: torch.Tensor | None = None, dim: int = -1) -> torch.Tensor:
    """Area under ``curve`` along ``dim`` by the trapezoid rule.

    With ``x=None`` the points are taken as uniformly spaced on [0, 1] (so the area equals the mean-like normalised
    AUC); with ``x`` given (1-D, one abscissa per point) it integrates over x. Returns curve's shape without ``dim``.
    """
    _validate.tensor(curve, "curve")
    n = curve.shape[dim]
    if n < 2:
        raise ValueError(f"curve needs at least 2 points along dim {dim}, got {n}")
    curve = _float(curve)
    if x is None:
        return torch.trapezoid(curve, dx=1.0 / (n - 1), dim=dim)
    _validate.tensor(x, "x", ndim=1)
    if x.shape[0] != n:
        raise ValueError(f"x has {x.shape[0]} points but curve has {n} along dim {dim}")
    return torch.trapezoid(curve, x=x.to(curve), dim=dim)


def _check_pqg(P: torch.Tensor, Q: torch.Tensor, gt: torch.Tensor) -> None:
    _validate.tensor(P, "P", ndim=3)
    _validate.tensor(Q, "Q", ndim=3)
    _validate.tensor(gt, "gt", ndim=1)
    if P.shape != Q.shape:
        raise ValueError(f"Q must have P's shape {tuple(P.shape)} (n_seeds, n_explainers, n_levels), got {tuple(Q.shape)}")
    if gt.shape[0] != P.shape[1]:
        raise ValueError(f"gt must have one value per explainer ({P.shape[1]}), got {gt.shape[0]}")


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


def micro_ranks(corrs: torch.Tensor, direction: str) -> torch.Tensor:
    """F-Fidelity micro rank (spec §1.9): rank evaluation methods (dim 0) by their correlation, best = 1.

    corrs: (n_methods, ...) correlations, e.g. (n_methods, n_seeds, n_levels). direction: "min" (most negative is
    best) or "max" (most positive is best), see ``DIRECTIONS``. Ties share the minimum rank; NaN ranks last.
    Returns float ranks shaped like corrs. Lower is better.
    """
    _validate.tensor(corrs, "corrs")
    if direction not in ("min", "max"):
        raise ValueError(f"direction must be 'min' or 'max', got {direction!r}")
    oriented = _float(corrs) if direction == "min" else -_float(corrs)
    return rankdata(oriented.nan_to_num(nan=torch.inf), dim=0, method="min")


def nan_mean_std(x: torch.Tensor, dim: int | None = None, correction: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation ignoring NaN (over all elements, or along ``dim``).

    correction: 0 → population std (numpy's default), 1 → sample std. Where no (or too few) finite values exist the
    result is NaN.
    """
    _validate.tensor(x, "x")
    if dim is None:
        x, dim = x.flatten(), 0
    x = _float(x)
    keep = ~x.isnan()
    n = keep.sum(dim, keepdim=True)
    mean = x.nansum(dim, keepdim=True) / n
    dev = torch.where(keep, x - mean, 0.0)
    var = (dev * dev).sum(dim, keepdim=True) / (n - correction)
    std = torch.where(n > correction, var, torch.nan).sqrt()
    return mean.squeeze(dim), std.squeeze(dim)

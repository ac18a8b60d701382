"""Rank statistics and curve areas shared by the metric families (torch in, torch out, vectorised): ranks with
scipy's tie conventions, Pearson and Spearman correlations, the trapezoid area under a curve, NaN-aware summaries. Pure torch (the metric
core); the t interval of a mean that the report and the study share is :mod:`faithlab.intervals`.

All functions accept any leading batch shape and work on the inputs' device. Correlations of a constant vector are
NaN (undefined), never 0. Analysis code uses them too (with :func:`nan_mean_std`).
"""

from __future__ import annotations

import torch

from faithlab import _validate

__all__ = ["rankdata", "pearson", "spearman", "trapezoid_auc", "nan_mean_std", "as_float"]


def as_float(x: torch.Tensor) -> torch.Tensor:
    """``x`` as a floating tensor: itself when floating, else in the default dtype."""
    return x if x.is_floating_point() else x.to(torch.get_default_dtype())


def rankdata(x: torch.Tensor, *, dim: int = -1, method: str = "average") -> torch.Tensor:
    """Ranks (1 = smallest) along ``dim``, ties sharing the ``"average"`` or the ``"min"`` rank (scipy's conventions).

    x: any shape. Returns a float tensor shaped like x. A row holding NaN gets NaN ranks (scipy's ``propagate``).
    """
    _validate.tensor(x, "x")
    if method not in ("average", "min"):
        raise ValueError(f"method must be 'average' or 'min', got {method!r}")
    _dim(x, dim, "x")
    v = as_float(x).movedim(dim, -1)
    n = v.shape[-1]
    sorted_v, order = v.sort(dim=-1)  # tie order is irrelevant: tied values share one rank
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


def _dim(x: torch.Tensor, dim, name: str) -> None:
    """Raise unless ``dim`` is an int naming one of x's dimensions (a 0-d tensor has none to rank or correlate)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if x.ndim == 0:
        raise ValueError(f"{name} is a 0-d tensor: it needs at least one dimension along dim (e.g. {name}[None])")
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim={dim} is out of range for {name} of shape {tuple(x.shape)}")


def _pair(a: torch.Tensor, b: torch.Tensor, dim) -> tuple[torch.Tensor, torch.Tensor]:
    """a and b checked (tensors, one device, broadcastable, dim in range) and broadcast, as floats."""
    _validate.tensor(a, "a")
    _validate.tensor(b, "b")
    _validate.one_device(a=a, b=b)
    try:
        a, b = torch.broadcast_tensors(as_float(a), as_float(b))
    except RuntimeError:
        raise ValueError(f"a of shape {tuple(a.shape)} and b of shape {tuple(b.shape)} do not broadcast: give vectors "
                         f"of the same length along dim") from None
    _vectors(a)
    _dim(a, dim, "a")
    return a, b


def _vectors(broadcast: torch.Tensor) -> None:
    """Raise if ``a`` and ``b`` broadcast to a 0-d tensor (both are single numbers: nothing to correlate)."""
    if broadcast.ndim == 0:
        raise ValueError("a and b are 0-d tensors: a correlation needs vectors along dim (at least 1 dimension)")


def pearson(a: torch.Tensor, b: torch.Tensor, *, dim: int = -1) -> torch.Tensor:
    """Pearson correlation along ``dim`` of broadcastable ``a`` and ``b``; NaN where either vector is constant.

    Returns the broadcast shape without ``dim``. Two 0-d tensors raise: a single number is no vector to correlate
    (torch would reduce it along any ``dim`` and give NaN).
    """
    a, b = _pair(a, b, dim)
    constant = (a.amax(dim) == a.amin(dim)) | (b.amax(dim) == b.amin(dim))
    ac = a - a.mean(dim, keepdim=True)
    bc = b - b.mean(dim, keepdim=True)
    r = (ac * bc).sum(dim) / ((ac * ac).sum(dim) * (bc * bc).sum(dim)).sqrt()
    return torch.where(constant, torch.nan, r.clamp(-1.0, 1.0))


def spearman(a: torch.Tensor, b: torch.Tensor, *, dim: int = -1) -> torch.Tensor:
    """Spearman rank correlation along ``dim`` (Pearson of average ranks); NaN where either vector is constant.

    a, b: broadcastable tensors. Returns the broadcast shape without ``dim``; two 0-d tensors raise.
    """
    a, b = _pair(a, b, dim)
    return pearson(rankdata(a, dim=dim), rankdata(b, dim=dim), dim=dim)


def trapezoid_auc(curve: torch.Tensor, x: torch.Tensor | None = None, *, dim: int = -1) -> torch.Tensor:
    """Area under ``curve`` along ``dim`` by the trapezoid rule.

    With ``x=None`` the points are taken as uniformly spaced on [0, 1] (so the area equals the mean-like normalised
    AUC); with ``x`` given (1-D, strictly increasing, one abscissa per point) it integrates over x. Returns curve's
    shape without ``dim``. NaN in the curve gives NaN.
    """
    _validate.tensor(curve, "curve")
    if curve.is_complex() or curve.dtype == torch.bool:
        raise TypeError(f"curve must be real, got dtype {curve.dtype}")
    if curve.ndim == 0:
        raise ValueError("curve must have at least one dimension, got a 0-d tensor")
    n = curve.shape[dim]
    if n < 2:
        raise ValueError(f"curve needs at least 2 points along dim {dim}, got {n}")
    curve = as_float(curve)
    if x is None:
        return torch.trapezoid(curve, dx=1.0 / (n - 1), dim=dim)
    _validate.tensor(x, "x", ndim=1)
    if x.shape[0] != n:
        raise ValueError(f"x has {x.shape[0]} points but curve has {n} along dim {dim}")
    if x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"x must hold real abscissae, got dtype {x.dtype}")
    _validate.finite(x, "x")
    if bool((x[1:] <= x[:-1]).any()):  # a non-monotone x gives a signed, meaningless area
        raise ValueError(f"x must be strictly increasing, got {x.tolist()}")
    return torch.trapezoid(curve, x=x.to(curve), dim=dim)


def nan_mean_std(x: torch.Tensor, *, dim: int | None = None, correction: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation ignoring NaN (over all elements, or along ``dim``).

    correction: 0 → population std (numpy's default), 1 → sample std. Where no (or too few) finite values exist the
    result is NaN.
    """
    _validate.tensor(x, "x")
    if dim is None:
        x, dim = x.flatten(), 0
    x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
    keep = ~x.isnan()
    n = keep.sum(dim, keepdim=True)
    mean = x.nansum(dim, keepdim=True) / n
    dev = torch.where(keep, x - mean, 0.0)
    var = (dev * dev).sum(dim, keepdim=True) / (n - correction)
    std = torch.where(n > correction, var, torch.nan).sqrt()
    return mean.squeeze(dim), std.squeeze(dim)

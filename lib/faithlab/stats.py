"""Statistics for analysis code (torch in, torch out, vectorised): the rank statistics and curve areas that the
metrics use (homed in :mod:`faithlab.metrics.statistics`, re-exported here) and NaN-aware summaries.

All functions accept any leading batch shape and work on the inputs' device. Correlations of a constant vector are
NaN (undefined), never 0.
"""

from __future__ import annotations

import torch

from faithlab import _validate
from faithlab.metrics.statistics import pearson, rankdata, spearman, trapezoid_auc

__all__ = ["rankdata", "pearson", "spearman", "trapezoid_auc", "nan_mean_std"]


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

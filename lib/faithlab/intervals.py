"""The t interval of a mean, used by the report's separations (:mod:`faithlab.report`) and by the study's
verdicts (which test its coverage by simulation): :func:`t_interval` (numbers in),
its vectorised kernel :func:`t_rows` and the quantile :func:`t_quantile` (scipy). numpy in, so it stays out of the
metric core (:mod:`faithlab.metrics` is pure torch)."""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["confidence_level", "t_quantile", "t_rows", "t_interval"]


def confidence_level(level) -> float:
    """``level`` as a float in [0.5, 1) (TypeError for text or a bool, ValueError outside)."""
    if isinstance(level, (str, bytes, bool)):
        raise TypeError(f"level must be a number in [0.5, 1), got {level!r}")
    level = float(level)
    if not 0.5 <= level < 1:
        raise ValueError(f"level must lie in [0.5, 1), got {level!r}")
    return level


@functools.lru_cache(maxsize=256)
def _t_ppf(q: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(q, df))


def t_quantile(level: float, df: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (scipy)."""
    return _t_ppf(1 - (1 - confidence_level(level)) / 2, int(df))


def t_rows(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The t interval of the mean of each row of ``values`` (S × k, k ≥ 2): ``(estimate, low, high, se)``, each of
    length S — the kernel of :func:`t_interval` (and of the study's intervals), vectorised so that a coverage test
    can run it on thousands of simulated data sets."""
    k = values.shape[-1]
    estimate = values.mean(-1)
    se = values.std(-1, ddof=1) / math.sqrt(k)
    half = t_quantile(level, k - 1) * se
    return estimate, estimate - half, estimate + half, se


def t_interval(values, *, level: float = 0.95) -> tuple[float, float, float, float]:
    """The ``level`` t interval of the mean of ``values`` (numbers; NaN dropped; n − 1 degrees of freedom) →
    ``(estimate, low, high, se)``. Raises ValueError when fewer than 2 values remain."""
    level = confidence_level(level)
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[~np.isnan(x)]
    if x.size < 2:
        raise ValueError(f"an interval needs at least 2 units without NaN, got {x.size}")
    estimate, low, high, se = (float(v[0]) for v in t_rows(x[None, :], level))
    return estimate, low, high, se

"""The study's confidence intervals, each with its coverage tested by simulation (tests/faithlab_study/verdicts/test_coverage.py).

Why these and not a bootstrap: with the trained model as the unit of replication and three to eight replicas, the
two-stage percentile bootstrap (replicas, then units within them) is close to the range of the replica means and
covers about 0.74 of the time for a nominal 0.95 when replicas differ as much as images do. A t interval on the
replica-level statistics (one value per trained model, R − 1 degrees of freedom) is exact for normal replica means
whatever the between/within variance ratio, needs no resampling (so no bootstrap seed can move it), and its coverage
holds at 0.93–0.97 over the grid the test simulates (R ∈ {3, 5, 8}, 20–200 units per replica, between/within SD
0–2, normal and skewed units, paired differences). Its price is width at R = 3 (t = 4.30 on 2 degrees of freedom):
the power analysis (:func:`decided_probability`) uses the same interval and asks for more replicas where needed.

- :func:`mean_interval` — the mean of per-unit values (a paired difference is ``a − b`` per unit): a t interval on
  the replica means (each replica weighs the same) with ≥ 2 replicas; a t interval on the units with one.
- :func:`replica_interval` — any statistic computed once per replica (a correlation, a ReCo gap, a share): a t
  interval on those R values.
- :func:`correlation_interval` — a correlation computed once per replica: the t interval on the replicas' Fisher z
  (atanh r), mapped back by tanh, so that it never passes ±1 and is as skewed as a correlation near its bound.
- :func:`share_interval` — a share of binary units: the hull of the t interval on the replica shares and the Wilson
  score interval of the pooled count, so that 30 of 30 is never an interval of zero width.
- :func:`draws_interval` — a statistic of one model's units that is not a mean (published weights: no replica to
  repeat), from percentile bootstrap draws over the units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from faithlab.intervals import confidence_level, t_interval, t_quantile, t_rows

__all__ = ["Interval", "mean_interval", "replica_interval", "correlation_interval", "share_interval",
           "draws_interval", "wilson",
           "t_quantile", "decided_probability", "INTERVAL_METHODS", "t_rows", "wilson_rows",
           "replica_means", "noncentral_t_outside"]

INTERVAL_METHODS = {
    "t on replica means": "a t interval on the mean of each trained replica (R − 1 degrees of freedom)",
    "t on units": "a t interval on the units of one model (n − 1 degrees of freedom)",
    "t on replica statistics": "a t interval on the statistic computed once per trained replica (R − 1 degrees of "
                               "freedom)",
    "t on Fisher z of replica correlations": "a t interval on the Fisher z (atanh) of the correlation computed once "
                                             "per trained replica (R − 1 degrees of freedom), mapped back by tanh",
    "share: t on replica shares ∪ Wilson": "the hull of a t interval on the replica shares and the Wilson score "
                                          "interval of the pooled count",
    "Wilson": "the Wilson score interval of a count of binary units",
    "percentile bootstrap over units": "the percentile interval of bootstrap draws over one model's units",
}
"""The interval methods the claims use, by the name an :class:`Interval` carries, with one phrase each."""


@dataclass(frozen=True)
class Interval:
    """A ``level`` confidence interval [low, high] of ``estimate``: ``method`` (one of :data:`INTERVAL_METHODS`),
    ``units`` (all units behind it), ``replicas`` (trained replicas; 1 for one model) and ``df`` (the t quantile's
    degrees of freedom; None for Wilson and percentile intervals). ``se`` is the standard error the t interval used
    (None otherwise), kept for the power analysis. ``values``: the replica-level values the interval rests on (the
    replica means, shares or statistics; empty for an interval on one model's units), published in a claim's cell
    table. ``pooled`` (successes, n) of a share and ``draws`` of a percentile interval let :meth:`at` give the same
    interval at another level."""

    estimate: float
    low: float
    high: float
    level: float
    method: str
    units: int
    replicas: int
    df: int | None = None
    se: float | None = None
    values: tuple = ()
    pooled: tuple | None = field(default=None, repr=False)
    draws: object = field(default=None, repr=False, compare=False)

    def describe(self, digits: int = 3) -> str:
        """"m [low, high] (method, R replicas, n units)"."""
        who = f"{self.replicas} replicas, {self.units} units" if self.replicas > 1 else f"{self.units} units"
        return (f"{self.estimate:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}] "
                f"({self.method}, {who})")

    @property
    def rebuildable(self) -> bool:
        """Whether :meth:`at` can give this interval at another level (it was made by this module's functions)."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return False
        if self.method == "Wilson":
            return self.pooled is not None
        if self.method == "percentile bootstrap over units":
            return self.draws is not None
        return self.df is not None and self.se is not None and (
            not self.method.startswith("share") or self.pooled is not None)

    def at(self, level: float) -> Interval:
        """The same interval at ``level`` (e.g. the two-sided 0.90 interval whose ends are the one-sided 5 % bounds
        the decisions use); itself when ``level`` is its own or it cannot be rebuilt (:attr:`rebuildable`)."""
        level = confidence_level(level)
        if abs(level - self.level) < 1e-12 or not self.rebuildable:
            return self
        if self.method == "Wilson":
            low, high = wilson_rows(self.pooled[0], self.pooled[1], level)
        elif self.method == "percentile bootstrap over units":
            tail = (1 - level) / 2
            low, high = np.quantile(np.asarray(self.draws), [tail, 1 - tail]).tolist()
        elif self.method == FISHER:
            half = t_quantile(level, int(self.df)) * float(self.se) if self.se > 0 else 0.0
            z = math.atanh(self.estimate)
            low, high = math.tanh(z - half), math.tanh(z + half)
        else:
            half = t_quantile(level, int(self.df)) * float(self.se) if self.se > 0 else 0.0
            low, high = self.estimate - half, self.estimate + half
            if self.method.startswith("share"):
                w_low, w_high = wilson_rows(self.pooled[0], self.pooled[1], level)
                low, high = max(0.0, min(low, float(w_low))), min(1.0, max(high, float(w_high)))
        # built field by field: dataclasses.replace costs more than the arithmetic in Holm's loops
        return Interval(self.estimate, float(low), float(high), level, self.method, self.units, self.replicas,
                        self.df, self.se, self.values, self.pooled, self.draws)


def as_array(values, name: str) -> np.ndarray:
    """``values`` (a sequence, array or tensor) as a flat float64 array; TypeError, naming ``name``, otherwise."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be numbers (a sequence, array or tensor), got {values!r}")
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().double().numpy()
    try:
        return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers (a sequence, array or tensor), got {type(values).__name__}") from None


def group_codes(groups, n: int, name: str = "groups") -> np.ndarray:
    """Each unit's replica (``groups``: ids as numbers or text, one per unit of ``n``) as codes 0, 1, …"""
    raw = groups.to_numpy() if hasattr(groups, "to_numpy") else groups
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    raw = np.asarray(raw)
    if raw.dtype.kind not in "iub":  # replica ids given as text or objects: compared as text
        raw = raw.astype(object).astype(str)
    codes = np.unique(raw, return_inverse=True)[1].reshape(-1)
    if codes.size != n:
        raise ValueError(f"{name} must give one replica per unit, got {codes.size} for {n} units")
    return codes


def _t(values: np.ndarray, level: float, method: str, units: int, replicas: int) -> Interval:
    estimate, low, high, se = (float(v[0]) for v in t_rows(values[None, :], level))
    return Interval(estimate, low, high, level, method, units, replicas, values.size - 1, se,
                    tuple(float(v) for v in values))


def replica_means(values, groups) -> tuple[np.ndarray, np.ndarray]:
    """Per replica (sorted by its id as text): its mean of ``values`` and its count of units, NaN units dropped."""
    x = as_array(values, "values")
    codes = group_codes(groups, x.size)
    keep = ~np.isnan(x)
    x, codes = x[keep], codes[keep]
    k = int(codes.max()) + 1 if codes.size else 0
    counts = np.bincount(codes, minlength=k)
    sums = np.bincount(codes, weights=x, minlength=k)
    present = counts > 0
    return sums[present] / counts[present], counts[present]


def mean_interval(values, *, groups=None, level: float = 0.95) -> Interval:
    """The ``level`` interval of the mean of per-unit ``values`` (NaN units dropped).

    groups: the trained replica of each unit. With ≥ 2 replicas the estimate is the mean of the replica means (each
    trained model weighs the same) and the interval a t interval on those R means (R − 1 degrees of freedom): the
    training run is the unit of replication. Without groups, or with one replica, a t interval on the units (n − 1
    degrees of freedom). Raises ValueError when fewer than 2 units (or, grouped, 2 units in one replica) remain."""
    level = confidence_level(level)
    x = as_array(values, "values")
    if groups is not None:
        means, counts = replica_means(x, groups)
        if means.size >= 2:
            return _t(means, level, "t on replica means", int(counts.sum()), int(means.size))
    x = x[~np.isnan(x)]
    estimate, low, high, se = t_interval(x, level=level)  # the library's t interval of a mean
    return Interval(estimate, low, high, level, "t on units", int(x.size), 1, x.size - 1, se)


def replica_interval(values, *, units: int | None = None, level: float = 0.95) -> Interval:
    """The ``level`` t interval of a statistic computed once per trained replica (``values``: R numbers, NaN
    dropped; R − 1 degrees of freedom). units: how many units the R statistics rest on, all replicas together (for
    the claim's unit count; default R). Raises ValueError below 2 replicas."""
    level = confidence_level(level)
    x = as_array(values, "values")
    x = x[~np.isnan(x)]
    if x.size < 2:
        raise ValueError(f"a replica-level interval needs at least 2 replicas with a defined statistic, got {x.size}")
    return _t(x, level, "t on replica statistics", int(units if units is not None else x.size), int(x.size))


FISHER = "t on Fisher z of replica correlations"
FISHER_BOUND = 0.9999
"""The largest |r| :func:`correlation_interval` takes as it is: a replica correlation of exactly ±1 (a perfect
ranking of six explainers) has an infinite Fisher z, so it is read as ±0.9999 (z = ±4.95)."""


def correlation_interval(values, *, units: int | None = None, level: float = 0.95) -> Interval:
    """The ``level`` interval of a correlation computed once per trained replica (``values``: R numbers in [−1, 1],
    NaN dropped): a t interval on their Fisher z = atanh(r) (R − 1 degrees of freedom; |r| above
    :data:`FISHER_BOUND` read as that bound), mapped back by tanh — the estimate is tanh of the mean z. A t interval on
    the raw correlations passes ±1 near the bound (F2's 0.70 [0.38, 1.02]); this one is bounded and skewed as the
    correlation is. units: the units behind the R statistics (default R). Raises ValueError below 2 replicas or
    outside [−1, 1]."""
    level = confidence_level(level)
    x = as_array(values, "values")
    x = x[~np.isnan(x)]
    if x.size < 2:
        raise ValueError(f"a replica-level interval needs at least 2 replicas with a defined statistic, got {x.size}")
    if np.any(np.abs(x) > 1 + 1e-9):
        raise ValueError(f"values must be correlations in [-1, 1], got {x.min():.3g} … {x.max():.3g}")
    z = np.arctanh(np.clip(x, -FISHER_BOUND, FISHER_BOUND))
    zbar, z_low, z_high, se = (float(v[0]) for v in t_rows(z[None, :], level))
    return Interval(math.tanh(zbar), math.tanh(z_low), math.tanh(z_high), level, FISHER,
                    int(units if units is not None else x.size), int(x.size), x.size - 1, se,
                    tuple(float(v) for v in x))


def wilson_rows(successes, n, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval (low, high) of ``successes`` of ``n`` binary units, elementwise (arrays allowed),
    clipped to [0, 1]."""
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    successes, n = np.asarray(successes, dtype=np.float64), np.asarray(n, dtype=np.float64)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return np.maximum(0.0, centre - half), np.minimum(1.0, centre + half)


def wilson(successes: float, n: float, *, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (low, high) of ``successes`` of ``n`` binary units."""
    level = confidence_level(level)
    if not n > 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 ≤ successes ≤ n and n > 0, got {successes} of {n}")
    low, high = wilson_rows(successes, n, level)
    return float(low), float(high)


def share_interval(flags, *, groups=None, level: float = 0.95) -> Interval:
    """The ``level`` interval of the share of binary units ``flags`` that hold (NaN units dropped).

    With ≥ 2 replicas (``groups``): the estimate is the mean of the replica shares, the interval the hull of the t
    interval on the replica shares and the Wilson interval of the pooled count (the t part carries the training
    run's variance, the Wilson part keeps a share of 0 or 1 from an interval of zero width). With one model: the
    Wilson interval of the count. Both are clipped to [0, 1]."""
    level = confidence_level(level)
    x = as_array(flags, "flags")
    if not np.all(np.isnan(x) | (x == 0) | (x == 1)):
        raise ValueError("flags must be binary (0/1, False/True; NaN for a missing unit)")
    if groups is not None:
        shares, counts = replica_means(x, groups)
        if shares.size >= 2:
            t = _t(shares, level, "share: t on replica shares ∪ Wilson", int(counts.sum()), int(shares.size))
            pooled = (float((shares * counts).sum()), float(counts.sum()))
            w_low, w_high = wilson(*pooled, level=level)
            return Interval(t.estimate, max(0.0, min(t.low, w_low)), min(1.0, max(t.high, w_high)), level,
                            t.method, t.units, t.replicas, t.df, t.se, t.values, pooled)
    x = x[~np.isnan(x)]
    if x.size < 1:
        raise ValueError("a share needs at least 1 unit without NaN")
    low, high = wilson(float(x.sum()), float(x.size), level=level)
    return Interval(float(x.mean()), low, high, level, "Wilson", int(x.size), 1, pooled=(float(x.sum()), float(x.size)))


def draws_interval(estimate, draws, *, units: int, level: float = 0.95) -> Interval:
    """The ``level`` percentile interval of ``estimate`` from bootstrap ``draws`` over one model's ``units`` (NaN
    draws dropped; at least 100 left): for a statistic that is not a mean, of a model that is not trained here."""
    level = confidence_level(level)
    x = as_array(draws, "draws")
    x = x[~np.isnan(x)]
    if x.size < 100:
        raise ValueError(f"draws must hold at least 100 bootstrap values without NaN, got {x.size}")
    tail = (1 - level) / 2
    low, high = np.quantile(x, [tail, 1 - tail]).tolist()
    return Interval(float(estimate), float(low), float(high), level, "percentile bootstrap over units", int(units), 1,
                    draws=x)


def decided_probability(mean: float, var_between: float, var_within: float, replicas: int, units: float, *,
                        margin: float = 0.0, level: float = 0.95) -> float:
    """Probability that the t interval on ``replicas`` replica means (each of ``units`` units) of an effect ``mean``
    with those variance components lies wholly on one side of ``margin`` — a decided outcome — from the noncentral t
    distribution (R − 1 degrees of freedom; the replica mean's variance is var_between + var_within / units)."""
    from scipy import stats

    r = int(replicas)
    if r < 2:
        return 0.0
    sd = math.sqrt(max(var_between + var_within / max(float(units), 1.0), 0.0))
    if sd == 0:
        return 1.0 if mean != margin else 0.0
    ncp = (mean - margin) / (sd / math.sqrt(r))
    crit = t_quantile(level, r - 1)
    return noncentral_t_outside(crit, r - 1, ncp)


def noncentral_t_outside(crit: float, df: int, ncp: float) -> float:
    """P(T > crit) + P(T < −crit) for T noncentral t (``df``, ``ncp``): the chance a t interval lies wholly on one
    side of its boundary. Both tails by ``sf`` of ±ncp (scipy's ``nct.cdf(−crit, df, ncp)`` returns NaN once ncp
    exceeds about 8, which read a cell decided with P ≈ 1 as undecided)."""
    from scipy import stats

    upper = float(stats.nct.sf(crit, df, ncp))
    lower = float(stats.nct.sf(crit, df, -ncp))  # P(T < −crit | ncp) = P(−T > crit), −T noncentral t with −ncp
    total = (upper if math.isfinite(upper) else float(ncp > 0)) + (lower if math.isfinite(lower) else float(ncp < 0))
    return min(1.0, max(0.0, total))

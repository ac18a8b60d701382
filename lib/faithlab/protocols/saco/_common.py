"""Shared pieces of SaCo's claim functions: the (replica, sample) × method tables, a batched two-stage bootstrap
(replicas, then images within them) that resamples every column the same way, the three-valued outcome of a
comparison, and the premise that the trained ViTs are accurate enough."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from faithlab import verdicts
from faithlab.protocols.saco.scores import HIGHER_IS_BETTER

MIN_ACCURACY = 0.8
"""Test accuracy a ViT must reach for its explanations to explain a model that learned the task (premise)."""
ACCURACY_TOLERANCE = 0.05
"""Tolerance of the accuracy premise: a ViT fails it only when its accuracy lies below :data:`MIN_ACCURACY` by more
than this."""


def unit_index(frame: pd.DataFrame) -> list[str]:
    """The columns that name one unit: ``["replica", "sample"]`` with replicas, else ``["sample"]``."""
    return ["replica", "sample"] if "replica" in frame.columns else ["sample"]


def wide(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """((replica,) sample × method) table of one metric, oriented so that higher is better (methods in order of
    appearance; a unit a method lacks is NaN)."""
    sign = 1.0 if HIGHER_IS_BETTER.get(metric, True) else -1.0
    table = frame.set_index([*unit_index(frame), "method"])[metric].unstack("method").sort_index()
    return table[list(dict.fromkeys(frame["method"]))] * sign


def groups_of(table: pd.DataFrame):
    """The replica of every row of a :func:`wide` table (None without replicas)."""
    if isinstance(table.index, pd.MultiIndex) and "replica" in table.index.names:
        return table.index.get_level_values("replica").to_numpy()
    return None


def _codes(groups, n: int):
    if groups is None:
        return None
    codes = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)[1].reshape(-1)
    if codes.size != n:
        raise ValueError(f"groups must give one replica per unit, got {codes.size} for {n}")
    return torch.from_numpy(codes.astype(np.int64))


_WEIGHTS: dict = {}
_WEIGHTS_KEPT = 8


def _weights(codes, n: int, n_boot: int, seed: int) -> torch.Tensor:
    """(n_boot, n) resample weights (each row sums to 1) of the two-stage bootstrap of
    :func:`faithlab.verdicts.hierarchical_means`, drawn the same way from the generator ``seed``; kept for the few
    last unit structures, since a claim bootstraps many columns on the same units with the same seed."""
    key = (n, n_boot, int(seed), None if codes is None else codes.numpy().tobytes())
    if key in _WEIGHTS:
        return _WEIGHTS[key]
    g = torch.Generator().manual_seed(int(seed))
    if codes is None or int(codes.max()) == 0:
        idx = torch.randint(n, (n_boot, n), generator=g)
        w = torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(
            1, idx, torch.full(idx.shape, 1.0 / n, dtype=torch.float64))
    else:
        order = torch.argsort(codes, stable=True)
        n_groups = int(codes.max()) + 1
        sizes = torch.bincount(codes, minlength=n_groups)
        starts = torch.cumsum(sizes, 0) - sizes
        width = int(sizes.max())
        picked = torch.randint(n_groups, (n_boot, n_groups), generator=g)
        c = sizes[picked]
        within = (torch.rand(n_boot, n_groups, width, generator=g, dtype=torch.float64) * c[..., None]).long()
        taken = (torch.arange(width)[None, None, :] < c[..., None]).double()
        index = (starts[picked][..., None] + within.clamp_(max=width - 1)).clamp_(max=n - 1)
        w_sorted = torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(1, index.flatten(1), taken.flatten(1))
        w_sorted /= taken.sum((1, 2))[:, None]
        w = torch.empty_like(w_sorted)
        w[:, order] = w_sorted  # back to the units' own order
    if len(_WEIGHTS) >= _WEIGHTS_KEPT:
        _WEIGHTS.pop(next(iter(_WEIGHTS)))
    _WEIGHTS[key] = w
    return w


def mean_draws(x, groups=None, *, n_boot: int = 2000, seed: int = 0) -> torch.Tensor:
    """(n_boot, m) bootstrap draws of the column means of ``x`` ((n units, m columns), no NaN), every column with the
    same resamples: the draws of :func:`faithlab.verdicts.hierarchical_means` (replicas with replacement, then the
    units within each drawn replica, each keeping its own count; the plain bootstrap with fewer than 2 replicas),
    taken the same way from the generator ``seed``, for all columns at once (resample weights times the columns)."""
    x = torch.tensor(np.asarray(x, dtype=np.float64))
    if x.ndim == 1:
        x = x[:, None]
    n = x.shape[0]
    return _weights(_codes(groups, n), n, n_boot, seed) @ x


def paired(diffs, groups=None, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> list[verdicts.Comparison]:
    """:func:`faithlab.verdicts.bootstrap_diff` (with ``groups``: two-stage, replicas then images) of every column of
    ``diffs`` ((n units, m comparisons), > 0 favours the target), all columns with the same resamples; without NaN it
    equals ``bootstrap_diff(column, groups=groups, n_boot=n_boot, level=level, seed=seed)`` column by column (to float
    rounding); a column holding NaN goes through ``bootstrap_diff``, which drops its NaN units."""
    x = torch.tensor(np.asarray(diffs, dtype=np.float64))
    if x.ndim == 1:
        x = x[:, None]
    n, m = x.shape
    finite = ~x.isnan().any(0)
    out: list[verdicts.Comparison | None] = [None] * m
    if n >= 2 and bool(finite.any()):
        cols = x[:, finite]
        means = mean_draws(cols, groups, n_boot=n_boot, seed=seed)
        tail = (1 - level) / 2
        bounds = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64), dim=0)
        centre = cols.mean(0)
        for j, col in enumerate(finite.nonzero().flatten().tolist()):
            mean, low, high = float(centre[j]), float(bounds[0, j]), float(bounds[1, j])
            spread = 1e-12 * max(1.0, abs(mean))
            outcome = "win" if low > spread else "loss" if high < -spread else "tie"
            out[col] = verdicts.Comparison(mean, low, high, float(level), n, outcome)
    for col in range(m):
        if out[col] is None:
            out[col] = verdicts.bootstrap_diff(x[:, col], n_boot=n_boot, level=level, seed=seed,
                                               groups=None if groups is None else np.asarray(groups))
    return out


def against(table: pd.DataFrame, pairs, *, n_boot: int = 2000, seed: int = 0) -> list[verdicts.Comparison]:
    """Paired (two-stage) bootstraps over the rows of a :func:`wide` table of ``table[a] − table[b]`` for every
    ``(a, b)`` of ``pairs`` (> 0 favours a), the same resamples for every pair."""
    diffs = np.stack([table[a].to_numpy(np.float64) - table[b].to_numpy(np.float64) for a, b in pairs], axis=1)
    return paired(diffs, groups_of(table), n_boot=n_boot, seed=seed)


def flag(c: verdicts.Comparison) -> bool | None:
    """A comparison's outcome as a part of a claim: True (win), False (loss), None (tie: undecided)."""
    return True if c.outcome == "win" else False if c.outcome == "loss" else None


def all_of(flags) -> bool | None:
    """Three-valued "and": False when any part fails, True when all hold, else None (undecided)."""
    flags = list(flags)
    if any(f is False for f in flags):
        return False
    return True if all(f is True for f in flags) else None


def at_least(flags, k: float) -> bool | None:
    """Three-valued "at least ``k`` of the parts hold": True when the holding parts reach k, False when not even the
    holding and undecided parts together do, else None."""
    flags = list(flags)
    yes, maybe = sum(f is True for f in flags), sum(f is None for f in flags)
    return True if yes >= k else False if yes + maybe < k else None


def settings(frame: pd.DataFrame):
    """(setting, rows) for every setting of ``frame`` in order of appearance (one setting "all" without a
    ``setting`` column)."""
    if "setting" not in frame:
        return [("all", frame)]
    return list(frame.groupby("setting", sort=False))


def accuracy_premise(accuracy: pd.DataFrame | None, setting, *, min_accuracy: float = MIN_ACCURACY,
                     tolerance: float = ACCURACY_TOLERANCE) -> str | None:
    """Premise of every claim about the trained ViTs: each replica of ``setting`` must have learned the task — its
    test accuracy (``accuracy``: columns setting, accuracy and, with replicas, replica) at least ``min_accuracy``
    within ``tolerance``. The reason it fails, or None (also when ``accuracy`` is None: not checked)."""
    if accuracy is None:
        return None
    rows = accuracy[accuracy["setting"] == setting] if "setting" in accuracy else accuracy
    if not len(rows):
        return f"no test accuracy for setting {setting!r}"
    worst = float(rows["accuracy"].min())
    if worst < min_accuracy - tolerance:
        return (f"a ViT of {setting} reaches a test accuracy of only {worst:.3f}, below {min_accuracy:g} by more "
                f"than the tolerance {tolerance:g}: its maps explain a model that has not learned the task")
    return None


def accuracy_text(accuracy: pd.DataFrame | None, *, min_accuracy: float = MIN_ACCURACY,
                  tolerance: float = ACCURACY_TOLERANCE) -> str:
    """The accuracy premise in one phrase for a claim's premise sentence."""
    if accuracy is None:
        return "the ViTs' accuracy was not given (premise not checked)"
    return (f"every ViT must reach a test accuracy of {min_accuracy:g} within {tolerance:g} (lowest "
            f"{float(accuracy['accuracy'].min()):.3f})")


def min_units(frame: pd.DataFrame, by) -> int:
    """The number of units (images pooled over replicas) in the smallest cell of ``frame`` grouped ``by``."""
    keys = unit_index(frame)
    return int(frame.groupby(by, sort=False)[keys].apply(lambda d: len(d.drop_duplicates())).min()) if len(frame) \
        else 0

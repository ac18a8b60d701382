"""Paired bootstraps over the samples of D (the same resamples for every method and family on it): ReCo and MeGe
under resampling weights (:func:`score_draws`, :func:`bootstrap_scores`), the interval of a difference of two scores
(:func:`comparison`), and the chance level of every method's S= distances (:func:`null_frame`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from faithlab import _validate, verdicts
from faithlab.metrics.crossfold import Pairs

__all__ = ["score_draws", "bootstrap_scores", "comparison", "null_frame"]


def score_draws(pairs: Pairs, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ReCo and MeGe of one method under sample weights ``(n_boot, N)`` (bootstrap multiplicities) → two
    ``(n_boot,)`` tensors; the weighted form of the exact ReCo (same cuts, weighted counts)."""
    d = pairs.distance.double()
    keep = ~torch.isnan(d) & (pairs.kind < 2)
    sample = torch.arange(d.shape[0])[:, None].expand_as(d)[keep]
    values, is_eq = d[keep], (pairs.kind[keep] == 0)
    if values.numel() == 0:
        nan = torch.full((weights.shape[0],), math.nan, dtype=torch.float64)
        return nan, nan.clone()
    order = torch.argsort(values, stable=True)
    values, is_eq, sample = values[order], is_eq[order], sample[order]
    w = weights.double()[:, sample]                                        # (n_boot, m)
    w_eq, w_ne = w * is_eq, w * ~is_eq
    tot_eq, tot_ne = w_eq.sum(1, keepdim=True), w_ne.sum(1, keepdim=True)
    last = torch.ones_like(values, dtype=torch.bool)                       # a cut after the last of equal values
    last[:-1] = values[1:] != values[:-1]
    j = w_eq.cumsum(1) / tot_eq + (tot_ne - w_ne.cumsum(1)) / tot_ne - 1.0
    reco = j[:, last].max(1).values.clamp(min=0.0)
    mege = 1.0 / (1.0 + (w_eq * values).sum(1) / tot_eq[:, 0])
    return reco, mege


def _boot_weights(n: int, n_boot: int, seed: int) -> torch.Tensor:
    """Bootstrap multiplicities ``(n_boot, n)`` float64 of n samples (generator ``seed``): the same resamples for any
    method or family on the same D."""
    idx = torch.randint(n, (n_boot, n), generator=torch.Generator().manual_seed(seed))
    return torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(1, idx, torch.ones(n_boot, n, dtype=torch.float64))


def bootstrap_scores(details: dict[str, dict], *, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap over samples (the same resamples for every method): ``n_boot`` draws of ReCo and MeGe per
    method → tidy frame (``method``, ``draw``, ``ReCo``, ``MeGe``)."""
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed)
    frames = []
    for m, d in details.items():
        reco, mege = score_draws(d["pairs"], weights)
        frames.append(pd.DataFrame({"method": m, "draw": np.arange(n_boot), "ReCo": reco.numpy(),
                                    "MeGe": mege.numpy()}))
    return pd.concat(frames, ignore_index=True)


def comparison(draws: pd.DataFrame, estimates: dict[str, float], *, a: str, b: str, score: str = "ReCo",
               level: float = 0.95):
    """Percentile interval of score(a) − score(b) from paired bootstrap draws → :class:`faithlab.verdicts.Comparison`
    (outcome win / loss / tie for ``a``; ``"undefined"`` with NaN bounds when a score is undefined, e.g. S≠ empty,
    in the data or in most draws)."""
    from faithlab.verdicts import Comparison, comparison_from_draws
    da = draws[draws.method == a].sort_values("draw")[score].to_numpy()
    db = draws[draws.method == b].sort_values("draw")[score].to_numpy()
    diff, estimate = da - db, estimates[a] - estimates[b]
    if math.isnan(estimate) or np.isfinite(diff).sum() < max(100, len(diff) // 2):
        return Comparison(math.nan, math.nan, math.nan, level, 0, "undefined")
    return comparison_from_draws(estimate, diff, level=level)


def _undefined(level: float) -> verdicts.Comparison:
    return verdicts.Comparison(math.nan, math.nan, math.nan, float(level), 0, "undefined")


def null_frame(details: Mapping[str, dict], *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
               **columns) -> pd.DataFrame:
    """The chance level of every method's S= distances (one row per method, + ``columns``).

    details: ``{method: distance_sets(...)}`` of one family (each with ``"shuffled"``, see :func:`with_null`). For the
    pairs of S=, ``S= mean`` is the mean distance (MeGe's), ``shuffled mean`` the mean of the same pairs with the
    second model's map of another image; ``MeGe`` and ``MeGe (shuffled)`` = 1/(1 + each). ``shuffled − S=``, ``low``,
    ``high``: the mean difference over the pairs where both are defined and its ``level`` percentile interval from
    ``n_boot`` paired bootstrap resamples of the images (generator ``seed``; the same resamples for every method);
    ``below chance``: the interval lies above 0, i.e. S= is significantly below its shuffled level (False when
    undefined: fewer than two images with an S= pair defined both ways). A method whose S= is not below chance has
    a MeGe, and a ReCo, that compare noise."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map at least one method to its distance_sets(...) dict")
    n_boot = _validate.positive_int(n_boot, "n_boot")
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100 (the percentile interval needs them), got {n_boot}")
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed)
    rows = []
    for m, d in details.items():
        if d.get("shuffled") is None:
            raise ValueError(f"details[{m!r}] has no 'shuffled' distances: compute them with distance_sets (or "
                             "with_null)")
        pairs = d["pairs"]
        if pairs.distance.shape[0] != n:
            raise ValueError(f"details must hold the same N samples for every method, got {pairs.distance.shape[0]} "
                             f"for {m!r} and {n} for the first")
        eq, sh = pairs.distance.double(), d["shuffled"].double()
        in_eq = pairs.kind == 0
        eq_ok, sh_ok = in_eq & ~eq.isnan(), in_eq & ~sh.isnan()
        both = eq_ok & sh_ok
        per_image = torch.where(both, sh - eq, 0.0).sum(1)             # (N,) summed over the image's S= pairs
        count = both.sum(1).double()
        mean_eq = float(eq[eq_ok].mean()) if eq_ok.any() else math.nan
        mean_sh = float(sh[sh_ok].mean()) if sh_ok.any() else math.nan
        c = _undefined(level)
        if int((count > 0).sum()) >= 2:                                 # pairs weigh alike, as in MeGe's mean
            draws = (weights @ per_image) / (weights @ count)           # NaN for a resample without S= pairs
            if int(draws.isfinite().sum()) >= max(100, n_boot // 2):
                c = verdicts.comparison_from_draws(float(per_image.sum() / count.sum()), draws, level=level)
        rows.append({**columns, "method": m, "n S=": int(eq_ok.sum()), "S= mean": mean_eq, "shuffled mean": mean_sh,
                     "MeGe": 1.0 / (1.0 + mean_eq), "MeGe (shuffled)": 1.0 / (1.0 + mean_sh),
                     "shuffled − S=": c.mean, "low": c.low, "high": c.high, "below chance": c.outcome == "win"})
    return pd.DataFrame(rows)

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
from faithlab.metrics.papers.reco_mege.crossfold import Pairs

__all__ = ["score_draws", "bootstrap_scores", "comparison", "null_frame", "two_stage_weights", "pooled_sets"]


def score_draws(pairs: Pairs, weights: torch.Tensor, *, dtype: torch.dtype = torch.float64
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """ReCo and MeGe of one method under sample weights ``(n_boot, N)`` (bootstrap multiplicities) → two
    ``(n_boot,)`` float64 tensors; the weighted form of the exact ReCo (same cuts, weighted counts). ``dtype``: of
    the running sums over the sorted pairs (float32 halves the time of a bootstrap: integer multiplicities sum
    exactly below 2**24; the scores then carry float32's ~1e-7 relative error, far inside any interval)."""
    d = pairs.distance.double()
    keep = ~torch.isnan(d) & (pairs.kind < 2)
    sample = torch.arange(d.shape[0])[:, None].expand_as(d)[keep]
    values, is_eq = d[keep], (pairs.kind[keep] == 0)
    if values.numel() == 0:
        nan = torch.full((weights.shape[0],), math.nan, dtype=torch.float64)
        return nan, nan.clone()
    order = torch.argsort(values, stable=True)
    values, is_eq, sample = values[order], is_eq[order], sample[order]
    weights = weights.double()
    n = weights.shape[1]
    # totals per draw as products of the weights with per-sample counts (no (n_boot, m) pass needed)
    eq_count = torch.zeros(n, dtype=torch.float64).index_add_(0, sample[is_eq], torch.ones(int(is_eq.sum()),
                                                                                           dtype=torch.float64))
    all_count = torch.zeros(n, dtype=torch.float64).index_add_(0, sample, torch.ones(sample.numel(),
                                                                                    dtype=torch.float64))
    eq_sum = torch.zeros(n, dtype=torch.float64).index_add_(0, sample[is_eq], values[is_eq])
    tot_eq = weights @ eq_count
    tot_ne = weights @ all_count - tot_eq
    last = torch.ones_like(values, dtype=torch.bool)                       # a cut after the last of equal values
    last[:-1] = values[1:] != values[:-1]
    cuts = torch.nonzero(last).flatten()
    w = weights.to(dtype)[:, sample]                                       # (n_boot, m)
    below_all = w.cumsum(1)[:, cuts].double()                              # weight at or below each cut
    below_eq = (w * is_eq).cumsum(1)[:, cuts].double()
    j = below_eq / tot_eq[:, None] + (tot_ne[:, None] - (below_all - below_eq)) / tot_ne[:, None] - 1.0
    reco = j.max(1).values.clamp(min=0.0)
    mege = 1.0 / (1.0 + (weights @ eq_sum) / tot_eq)
    return reco, mege


def _boot_weights(n: int, n_boot: int, seed: int) -> torch.Tensor:
    """Bootstrap multiplicities ``(n_boot, n)`` float64 of n samples (generator ``seed``): the same resamples for any
    method or family on the same D."""
    idx = torch.randint(n, (n_boot, n), generator=torch.Generator().manual_seed(seed))
    return torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(1, idx, torch.ones(n_boot, n, dtype=torch.float64))


def two_stage_weights(groups, n_boot: int, seed: int) -> torch.Tensor:
    """Bootstrap multiplicities ``(n_boot, U)`` float64 of U units nested in replicas (``groups``: one replica code
    per unit, e.g. the (replica, sample) rows of :func:`pooled_sets`): each draw resamples the replicas with
    replacement, then the units within every drawn replica (each keeps its own number of units) — the two-stage
    bootstrap of :func:`faithlab.verdicts.hierarchical_means`, as weights, so that ReCo (a maximum over thresholds,
    not a mean) can be recomputed per draw (:func:`score_draws`). One replica: the plain bootstrap of the units."""
    codes = torch.as_tensor(np.unique(np.asarray(groups).astype(str), return_inverse=True)[1].reshape(-1))
    n_units, n_groups = int(codes.numel()), int(codes.max()) + 1 if codes.numel() else 0
    if n_groups < 2:
        return _boot_weights(n_units, n_boot, seed)
    g = torch.Generator().manual_seed(int(seed))
    picked = torch.randint(n_groups, (n_boot, n_groups), generator=g)
    weights = torch.zeros(n_boot, n_units, dtype=torch.float64)
    for j in range(n_groups):
        members = torch.nonzero(codes == j).flatten()
        times = (picked == j).sum(1)                                           # (n_boot,) times replica j is drawn
        width = int(times.max()) * members.numel()
        if width == 0:
            continue
        idx = torch.randint(members.numel(), (n_boot, width), generator=g)
        taken = (torch.arange(width)[None, :] < (times * members.numel())[:, None]).double()
        weights.scatter_add_(1, members[idx], taken)
    return weights


def pooled_sets(frame: pd.DataFrame) -> tuple[dict[str, dict], np.ndarray]:
    """The S= / S≠ sets of every method of one setting, pooled over its replicas, from a :func:`pairs_frame` (rows:
    one per method × replica × sample) → ``({method: {"pairs", "shuffled", "reco", "mege", "counts"}}, replicas)``
    with one unit per (replica, sample) in the same order for every method and ``replicas`` the replica of each
    unit. ReCo and MeGe are those of the pooled sets (every replica's distances in one S= and one S≠)."""
    columns = sorted(c for c in frame.columns if c.startswith("distance "))
    if not columns:
        raise ValueError("frame must be a pairs_frame (columns 'distance 0', 'kind 0', 'shuffled 0', ...)")
    replica = frame["replica"] if "replica" in frame else pd.Series(0, index=frame.index)
    frame = frame.assign(replica=replica.to_numpy()).sort_values(["method", "replica", "sample"], kind="stable")
    out, groups = {}, None
    for m, rows in frame.groupby("method", sort=False):
        get = {c: torch.from_numpy(rows[[f"{c} {j}" for j in range(len(columns))]].to_numpy()) for c in
               ("distance", "kind", "shuffled")}
        pairs = Pairs(get["distance"].double(), torch.zeros_like(get["kind"], dtype=torch.int64),
                      get["kind"].to(torch.int8))
        reco, mege = score_draws(pairs, torch.ones(1, len(rows), dtype=torch.float64))
        ok = ~pairs.distance.isnan()
        out[m] = {"pairs": pairs, "shuffled": get["shuffled"].double(), "reco": float(reco[0]),
                  "mege": float(mege[0]), "counts": {"S=": int(((pairs.kind == 0) & ok).sum()),
                                                     "S≠": int(((pairs.kind == 1) & ok).sum())}}
        keys = (rows["replica"].astype(str).to_numpy(), rows["sample"].to_numpy())
        if groups is None:
            groups, first = rows["replica"].to_numpy(), keys
        elif len(keys[0]) != len(first[0]) or any((a != b).any() for a, b in zip(keys, first)):
            raise ValueError(f"every method must hold the same (replica, sample) units; {m!r} differs")
    return out, groups


def bootstrap_scores(details: dict[str, dict], *, n_boot: int = 200, seed: int = 0,
                     weights: torch.Tensor | None = None) -> pd.DataFrame:
    """Paired bootstrap over samples (the same resamples for every method): ``n_boot`` draws of ReCo and MeGe per
    method → tidy frame (``method``, ``draw``, ``ReCo``, ``MeGe``). ``weights``: given multiplicities ``(n_boot,
    N)`` instead (e.g. :func:`two_stage_weights` over replicas and samples)."""
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed) if weights is None else weights
    n_boot = weights.shape[0]
    frames = []
    for m, d in details.items():
        reco, mege = score_draws(d["pairs"], weights, dtype=torch.float32)
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
               weights: torch.Tensor | None = None, **columns) -> pd.DataFrame:
    """The chance level of every method's S= distances (one row per method, + ``columns``).

    details: ``{method: distance_sets(...)}`` of one family (each with ``"shuffled"``, see :func:`with_null`). For the
    pairs of S=, ``S= mean`` is the mean distance (MeGe's), ``shuffled mean`` the mean of the same pairs with the
    second model's map of another image; ``MeGe`` and ``MeGe (shuffled)`` = 1/(1 + each). ``shuffled − S=``, ``low``,
    ``high``: the mean difference over the pairs where both are defined and its ``level`` percentile interval from
    ``n_boot`` paired bootstrap resamples of the images (generator ``seed``; the same resamples for every method);
    ``below chance``: the interval lies above 0, i.e. S= is significantly below its shuffled level (False when
    undefined: fewer than two images with an S= pair defined both ways). A method whose S= is not below chance has
    a MeGe, and a ReCo, that compare noise. ``weights``: given multiplicities ``(n_boot, N)`` instead of the plain
    bootstrap (e.g. :func:`two_stage_weights` over replicas and samples)."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map at least one method to its distance_sets(...) dict")
    n_boot = _validate.positive_int(n_boot, "n_boot")
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100 (the percentile interval needs them), got {n_boot}")
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed) if weights is None else weights
    n_boot = weights.shape[0]
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

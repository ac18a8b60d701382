"""ReCo and MeGe under sample weights (:func:`score_draws`, the weighted form of the exact ReCo), the S= / S≠ sets of
a setting pooled or per replica from a pairs frame (:func:`pooled_sets`), and the chance level of every method's S=
(:func:`null_frame`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from faithlab_study import verdicts
from faithlab_study.verdicts import replication
from faithlab.metrics.papers.reco_mege.crossfold import Pairs

__all__ = ["score_draws", "null_frame", "pooled_sets"]


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


def pooled_sets(frame: pd.DataFrame) -> tuple[dict[str, dict], np.ndarray]:
    """The S= / S≠ sets of every method of one setting, pooled over its replicas, from a :func:`pairs_frame` (rows:
    one per method × replica × sample) → ``({method: {"pairs", "shuffled", "reco", "mege", "counts"}}, replicas)``
    with one unit per (replica, sample) in the same order for every method and ``replicas`` the replica of each
    unit. ReCo and MeGe are those of the pooled sets (every replica's distances in one S= and one S≠)."""
    columns = sorted(c for c in frame.columns if c.startswith("distance "))
    if not columns:
        raise ValueError("frame must be a pairs_frame (columns 'distance 0', 'kind 0', 'shuffled 0', ...)")
    replica = replication.column(frame)
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


def null_frame(details: Mapping[str, dict], *, level: float = 0.95, **columns) -> pd.DataFrame:
    """The chance level of every method's S= distances (one row per method, + ``columns``).

    details: ``{method: distance_sets(...)}`` of one family (each with ``"shuffled"``, see :func:`with_null`). For the
    pairs of S=, ``S= mean`` is the mean distance (MeGe's), ``shuffled mean`` the mean of the same pairs with the
    second model's map of another image; ``MeGe`` and ``MeGe (shuffled)`` = 1/(1 + each). ``shuffled − S=``, ``low``,
    ``high``: per image, the mean over its S= pairs of the shuffled minus the S= distance, and the ``level`` t
    interval of their mean over the images (:func:`faithlab_study.verdicts.mean_interval`); ``below chance``: the interval
    lies above 0, i.e. S= is below its shuffled level (False when fewer than two images have an S= pair defined both
    ways). A method whose S= is not below chance has a MeGe, and a ReCo, that compare noise."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map at least one method to its distance_sets(...) dict")
    n = next(iter(details.values()))["pairs"].distance.shape[0]
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
        count = both.sum(1)
        per_image = torch.where(both, sh - eq, 0.0).sum(1) / count.clamp(min=1)
        per_image[count == 0] = math.nan
        mean_eq = float(eq[eq_ok].mean()) if eq_ok.any() else math.nan
        mean_sh = float(sh[sh_ok].mean()) if sh_ok.any() else math.nan
        estimate = low = high = math.nan
        if int((count > 0).sum()) >= 2:
            i = verdicts.mean_interval(per_image.numpy(), level=level)
            estimate, low, high = i.estimate, i.low, i.high
        rows.append({**columns, "method": m, "n S=": int(eq_ok.sum()), "S= mean": mean_eq, "shuffled mean": mean_sh,
                     "MeGe": 1.0 / (1.0 + mean_eq), "MeGe (shuffled)": 1.0 / (1.0 + mean_sh),
                     "shuffled − S=": estimate, "low": low, "high": high, "below chance": bool(low > 0)})
    return pd.DataFrame(rows)

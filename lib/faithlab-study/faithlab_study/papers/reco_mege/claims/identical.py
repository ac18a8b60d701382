"""R5 (eq. 8): k identical models give MeGe = 1 and every distance 0, an identity of the definitions and so a
check of the pipeline by construction, decided by its rule (:func:`claim_identical_models`) on the frame of
:func:`~faithlab_study.papers.reco_mege.experiments.identical.identical_models`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from faithlab import _validate

from faithlab_study import verdicts
from faithlab_study.papers.reco_mege.claims.registration import CHECKS

__all__ = ["claim_identical_models"]


@CHECKS.registered(
    "R5", claim="R5: k identical models give MeGe = 1 (every distance 0)",
    statistic=("per (task × method) cell, the mean over images of the S= distance between the maps of k copies of "
               "one model"),
    direction="below", margin=1e-06, margin_source="float error (an identity of eq. 8: every distance is exactly 0)",
    over="(task × method) cells",
    null="the same method's MeGe on maps of different images (the contrast must lie below 1)",
    premises=["the cell has S= pairs", "maps of different images give MeGe below 1"], unit="image of D",
    note=("an identity of the definitions: checks the pipeline by construction, so it is a study check, not a claim "
          "of the paper; no model is trained for it"),
    fingerprint="4d640f7e35b3",
)
def claim_identical_models(identical: pd.DataFrame, contrast: pd.DataFrame | None = None, *,
                           tolerance: float | None = None) -> verdicts.Claim:
    """Study check R5 (eq. 8): k identical models give MeGe = 1 (every distance 0), decided by its rule
    (``verdicts.rule("R5")``; ``tolerance`` overrides its margin, float error).

    identical: :func:`identical_models` rows of every cell, each with the cell's key columns (e.g. ``task``,
    ``method``): per sample, its mean S= distance. Per cell: the mean S= distance over the images with an S= pair,
    its t interval on those images, judged below the margin; every testable cell must hold. With k copies of one
    model every distance is 0: an identity of the definitions, so this checks the pipeline by construction (a study
    check, not a claim of the paper). contrast: optional, the chapter's null for the same cells
    (:func:`~faithlab_study.papers.reco_mege.experiments.bootstrap.null_frame` rows: the key columns and ``MeGe (shuffled)``, the
    same method's MeGe when the second model explains another image). Premise per cell: at least 2 images with an S=
    pair and, given the contrast, maps of different images give MeGe below 1 (else MeGe = 1 is met by any maps and
    the check could not tell a correct pipeline from one that returns 0 for every distance); a cell that fails it is
    not testable, and without a testable cell the check is not testable here. Table: one row per cell."""
    rule = verdicts.rule("R5")
    margin = rule.margin_for() if tolerance is None else _validate.number(tolerance, "tolerance")
    if not 0 <= margin < 0.1:
        raise ValueError(f"tolerance must lie in [0, 0.1) (float error, not a loose match), got {margin!r}")
    need = ("sample", "S= distance", "MeGe")
    if not isinstance(identical, pd.DataFrame) or identical.empty or any(c not in identical for c in need):
        raise ValueError(f"identical must be a non-empty frame of identical_models(...) rows with the columns "
                         f"{list(need)} and the cells' keys")
    keys = [c for c in identical.columns if c not in need]
    if not keys:
        raise ValueError("identical must name its cells: key columns such as task and method")
    other = {}
    if contrast is not None:
        if not isinstance(contrast, pd.DataFrame):
            raise TypeError(f"contrast must be a DataFrame (e.g. null_frame rows) or None, got "
                            f"{type(contrast).__name__}")
        lacking = [c for c in [*keys, "MeGe (shuffled)"] if c not in contrast.columns]
        if lacking:
            raise ValueError(f"contrast lacks the columns {lacking}: it needs identical's key columns {keys} and "
                             "'MeGe (shuffled)' (null_frame(...) rows)")
        if contrast.duplicated(keys).any():
            raise ValueError(f"contrast must hold one row per cell ({keys}), got duplicates")
        other = {tuple(r[keys]): float(r["MeGe (shuffled)"]) for _, r in contrast.iterrows()}
    cells, rows = {}, []
    for key, part in identical.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        name = " ".join(map(str, key))
        values = part["S= distance"].to_numpy(float)
        n = int((~np.isnan(values)).sum())
        status = "testable"
        if n < 2:
            status = "fewer than 2 images with an S= pair (MeGe undefined)"
        elif contrast is not None:
            c = other.get(key, math.nan)
            if math.isnan(c):
                status = "no contrast (the shuffled pairs are undefined)"
            elif c >= 1 - margin:
                status = "maps of different images also give MeGe = 1"
        j = None
        if status == "testable":
            j = verdicts.judge(verdicts.mean_interval(values), rule, what=name,
                               margin=None if tolerance is None else margin)
            cells[name] = j
        rows.append({**dict(zip(keys, key)), "MeGe": float(part["MeGe"].iloc[0]), "images": n,
                     "MeGe (different images)": other.get(key, math.nan),
                     **({"estimate": j.interval.estimate, "low": j.interval.low, "high": j.interval.high,
                         "margin": margin, "outcome": j.outcome} if j is not None else {"outcome": "not testable"}),
                     "status": status})
    table = pd.DataFrame(rows)
    skipped = table[table.status != "testable"]
    untestable = None if cells else "no testable cell: " + "; ".join(
        f"{' '.join(str(r[k]) for k in keys)} ({r.status})" for _, r in skipped.iterrows())
    v = verdicts.decide(cells, rule, untestable=untestable)
    testable = table[table.status == "testable"]
    if contrast is None:
        contrast_text = "no contrast given: a pipeline that returned 0 for every distance would pass as well"
    else:
        c = table["MeGe (different images)"]
        contrast_text = ("contrast, the chapter's null (the same method's MeGe when the second model explains another "
                         "image): " + (f"MeGe {c.min():.3f}–{c.max():.3f}" if c.notna().any() else "undefined"))
    return verdicts.Claim(
        rule.claim, rule=rule,
        premise="an identity of the definitions (eq. 8: with k copies of one model every distance is 0, so MeGe = "
                "1/(1 + 0)), a check of the pipeline by construction; a cell is testable when it has S= pairs and "
                f"its contrast lies below 1; {contrast_text}; not testable: "
                + ("; ".join(f"{' '.join(str(r[k]) for k in keys)} ({r.status})" for _, r in skipped.iterrows())
                   or "none"),
        paper_value="by construction (eq. 8)",
        our_value=(f"max |MeGe − 1| = {float((testable['MeGe'] - 1).abs().max()):.1e}, largest mean S= distance "
                   f"{float(testable['high'].max()):.1e} (interval's upper end) over {len(testable)} testable cells"
                   if len(testable) else "no testable cell") + f" ({len(skipped)} of {len(table)} not testable)",
        verdict=v, table=table, trained=False,
        units=int(testable["images"].min()) if len(testable) else 0)

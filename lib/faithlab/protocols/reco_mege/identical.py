"""R5 (eq. 8): k identical models give MeGe = 1 and every distance 0, an identity of the definitions and so a check of
the pipeline by construction: the family's first model standing in for all k (:func:`identical_models`) and the
claim (:func:`claim_identical_models`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from faithlab import _validate, explainers, verdicts
from faithlab.metrics.papers.reco_mege.crossfold import reco_mege_details_from_predictions
from faithlab.protocols.reco_mege.kfold import Family
from faithlab.protocols.reco_mege.tasks import method_options

__all__ = ["identical_models", "claim_identical_models"]


def identical_models(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, **settings) -> dict:
    """R5 check: the family's first model standing in for all k (its maps and predictions copied k times) →
    ``{"MeGe", "max distance", "n S="}``; MeGe must be 1 and every distance 0."""
    name, options = method_options(method, **settings)
    model = fam.cross.models[0]
    maps = explainers.explain(model, fam.data.x, fam.predictions[0].to(fam.data.x.device), method=name,
                              batch_size=batch_size, generator=seed, **options)
    k = fam.cross.k
    copies = maps[None].expand(k, *maps.shape)
    preds = fam.predictions[:1].expand(k, -1).to(maps.device)
    d = reco_mege_details_from_predictions(copies, preds, fam.data.y.to(maps.device), fam.cross.folds.to(maps.device),
                                           channel_dim=-3 if maps.ndim == 4 else None, batch_size=batch_size)
    dist = d["pairs"].distance
    return {"MeGe": d["mege"], "max distance": float(dist[~dist.isnan()].max()) if (~dist.isnan()).any() else 0.0,
            "n S=": d["counts"]["S="]}


_R5_VALUES = ("MeGe", "max distance", "n S=")


def claim_identical_models(identical: pd.DataFrame, contrast: pd.DataFrame | None = None, *,
                           tolerance: float = 1e-6) -> verdicts.Claim:
    """Claim R5 (eq. 8): k identical models give MeGe = 1 (every distance 0).

    identical: one row per cell (e.g. task × method) with :func:`identical_models`' ``MeGe``, ``max distance`` and
    ``n S=``; every other column is the cell's key. contrast: optional, the chapter's null for the same cells, e.g.
    :func:`null_frame` rows (the key columns and ``MeGe (shuffled)``, the same method's MeGe when the second model
    explains another image). With k copies of one model every distance is 0 and MeGe = 1/(1 + 0) = 1: an identity of
    the definitions, so the claim checks the pipeline by construction and no null can apply to its value (a correct
    pipeline gives exactly 1). Premise, per cell: it has an S= pair (else MeGe is undefined) and, given the contrast,
    maps of different images give MeGe below 1 − ``tolerance`` (else MeGe = 1 is met by any maps and the check could
    not tell a correct pipeline from one that returns 0 for every distance); a cell that fails the premise is not
    testable here. Rule (:func:`faithlab.verdicts.from_settings` with both shares 1): reproduced when every testable
    cell has |MeGe − 1| ≤ ``tolerance`` and max distance ≤ ``tolerance``, not reproduced when any cell misses (no
    partly: one miss is a broken pipeline); not testable here without a testable cell. A cell whose MeGe misses 1
    fails whatever its contrast. Table: ``identical`` with ``MeGe (different images)``, ``status`` (holds / fails /
    no S= pair / contrast at 1 / contrast undefined) and ``testable``."""
    if not isinstance(identical, pd.DataFrame) or identical.empty:
        raise ValueError("identical must be a non-empty DataFrame of identical_models(...) rows")
    missing = [c for c in _R5_VALUES if c not in identical.columns]
    if missing:
        raise ValueError(f"identical lacks the columns {missing} (rows of identical_models(...))")
    tolerance = _validate.number(tolerance, "tolerance")
    if not 0 <= tolerance < 0.1:
        raise ValueError(f"tolerance must lie in [0, 0.1) (float error, not a loose match), got {tolerance!r}")
    keys = [c for c in identical.columns if c not in _R5_VALUES]
    table = identical.copy()
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
        table = table.merge(contrast[[*keys, "MeGe (shuffled)"]].rename(
            columns={"MeGe (shuffled)": "MeGe (different images)"}), on=keys, how="left", validate="one_to_one")
    mege = table["MeGe"].astype(float)
    far = table["max distance"].astype(float)
    has_pairs = table["n S="].astype(float) > 0
    at_one = ((mege - 1).abs() <= tolerance) & (far.abs() <= tolerance)   # NaN compares False: a miss
    status = pd.Series(np.where(~has_pairs, "no S= pair", np.where(at_one, "holds", "fails")), index=table.index)
    if contrast is not None:
        other = table["MeGe (different images)"].astype(float)
        status = status.mask((status == "holds") & other.isna(), "contrast undefined")
        status = status.mask((status == "holds") & (other >= 1 - tolerance), "contrast at 1")
    table["status"] = status
    table["testable"] = status.isin(["holds", "fails"])
    testable = table[table["testable"]]

    def cell(row) -> str:
        return " ".join(str(row[k]) for k in keys) or f"row {row.name}"

    skipped = {s: [cell(r) for _, r in table[table.status == s].iterrows()]
               for s in ("no S= pair", "contrast at 1", "contrast undefined")}
    reasons = {"no S= pair": "no S= pair (MeGe undefined)",
               "contrast at 1": "maps of different images also give MeGe = 1",
               "contrast undefined": "no contrast (the shuffled pairs are undefined)"}
    untestable = None
    if testable.empty:
        untestable = "no testable cell: " + "; ".join(f"{reasons[s]} in {', '.join(c)}" for s, c in skipped.items()
                                                      if c)
    v = verdicts.from_settings((testable.status == "holds").tolist(), reproduced=1.0, partly=1.0,
                               untestable=untestable, what="testable cells")
    if contrast is None:
        contrast_text = ("no contrast given: a pipeline that returned 0 for every distance would pass as well")
    else:
        other = table["MeGe (different images)"]
        contrast_text = (f"contrast, the chapter's null (the same method's MeGe when the second model explains "
                         f"another image): MeGe {other.min():.3f}–{other.max():.3f}, below 1, so MeGe = 1 is not "
                         "met by any maps" if other.notna().any() and other.max() < 1 - tolerance else
                         "contrast, the chapter's null (the same method's MeGe on maps of different images): "
                         + (f"MeGe {other.min():.3f}–{other.max():.3f}" if other.notna().any() else "undefined"))
    skipped_text = "; ".join(f"{reasons[s]}: {', '.join(c)}" for s, c in skipped.items() if c) or "none"
    worst = float((testable["MeGe"].astype(float) - 1).abs().max()) if len(testable) else math.nan
    farthest = float(testable["max distance"].astype(float).abs().max()) if len(testable) else math.nan
    return verdicts.Claim(
        "R5: k identical models give MeGe = 1 (every distance 0)",
        rule=f"per testable cell, |MeGe − 1| and the largest distance, each against the tolerance {tolerance:g} "
             "(float error); an identity, so exact values and every cell must meet it (no partial share: one miss is "
             "a broken pipeline)",
        premise="an identity of the definitions (eq. 8: with k copies of one model every distance is 0, so MeGe = "
                "1/(1 + 0)): a check of the pipeline by construction, so no null can apply to its value; a cell is "
                f"testable when it has an S= pair and its contrast lies below 1; {contrast_text}; not testable: "
                f"{skipped_text}",
        paper_value="by construction (eq. 8)",
        our_value=(f"max |MeGe − 1| = {worst:.1e}, max distance {farthest:.1e} over {len(testable)} testable cells"
                   if len(testable) else "no testable cell")
                  + f" ({len(table) - len(testable)} of {len(table)} not testable)",
        verdict=v, table=table, kind="study check", trained=False)  # identical copies: an identity

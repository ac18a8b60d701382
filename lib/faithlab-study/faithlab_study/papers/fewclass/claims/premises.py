"""Few-class Fidelity's mechanism premise (:func:`mechanism`, :func:`mechanism_table`) and what the chapter's claim
functions share: a unit's replica, the replica groups, the paired values of a model × alteration, one judged cell and
the thresholds of the premises."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.verdicts import replication

__all__ = ["SWITCH_AT", "UNCERTAIN_AT", "ROOM_BELOW", "RANDOM_CANDIDATE_BELOW", "SELECTED", "UNIT", "mechanism",
           "mechanism_table", "with_replica", "replica_groups", "paired_values", "cell_of", "share_of",
           "both_premises", "mechanism_if"]

UNIT = ["replica", "image"]
"""A unit of the Fid and localisation frames: one XAI image of one trained replica."""
SELECTED = "selected perturbation"
"""The replacement name of the selected perturbation in :func:`~faithlab_study.papers.fewclass.experiments.flip_frame`."""
SWITCH_AT = 0.1
"""The mechanism premise's threshold (C1's rule, its premise): under the fixed zero reference at least this
share of the XAI images switch class with confidence (U ≥ Δ) — the few-class failure the paper describes is present."""
UNCERTAIN_AT = 0.5
"""The mechanism premise's threshold: the selected perturbation reaches U < Δ for at least this share of the images —
MIF has an uncertain end point to fall to."""
ROOM_BELOW = 0.98
"""C3's premise: the unaltered mean Fid lies below this (it has room to rise)."""
RANDOM_CANDIDATE_BELOW = 0.9
"""C2's premise: a candidate drawn at random reaches U < Δ for less than this share of the images."""


def with_replica(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``replica`` column (0 for a frame of one model per setting)."""
    return replication.with_replica(frame)


def replica_groups(frame: pd.DataFrame | pd.Index) -> np.ndarray:
    """The replica of every row of ``frame`` (a frame with a ``replica`` column, or an index with a replica level)."""
    if isinstance(frame, pd.DataFrame):
        return frame["replica"].astype(str).to_numpy()
    return frame.get_level_values("replica").astype(str).to_numpy()


def paired_values(frame: pd.DataFrame, value: str, model: str, alteration: str) -> pd.DataFrame:
    """``value`` of ``model``'s ``alteration`` maps, one row per unit (replica, image), one column per method (NaN
    where a method lacks the unit)."""
    cell = with_replica(frame)
    cell = cell[(cell.model == model) & (cell.alteration == alteration)]
    return cell.pivot_table(index=UNIT, columns="method", values=value, aggfunc="mean")


def cell_of(make):
    """A judged cell, or None (undecided: no interval) when its units are too few for one (fewer than 2 without
    NaN, e.g. the paper-dry profile's single image)."""
    try:
        return make()
    except ValueError as err:
        if "at least 2" in str(err):
            return None
        raise


def share_of(flags, groups) -> verdicts.Interval:
    return verdicts.share_interval(np.asarray(flags, dtype=np.float64), groups=groups)


def both_premises(premises: Sequence[verdicts.Premise], what: str) -> verdicts.Premise:
    """Premises that must all hold: holds when each does, fails when one fails, else undecided."""
    values = [p.holds for p in premises]
    holds = False if False in values else True if values and all(v is True for v in values) else None
    return verdicts.Premise(holds, f"{what}: " + "; ".join(p.text for p in premises))


# ------------------------------------------------------------------------------------------- mechanism premise
def _mechanism_checks(rows: pd.DataFrame) -> tuple[verdicts.Premise, verdicts.Premise, verdicts.Interval,
                                                   verdicts.Interval]:
    """The two checks of the mechanism premise on one task × model's :func:`flip_frame` rows."""
    zero = rows[rows.replacement == "zero"]
    selected = rows[rows.replacement == SELECTED]
    if zero.empty or selected.empty:
        raise ValueError("flips must hold the rows of the zero reference and of the selected perturbation "
                         "(flip_frame with 'Δ' among its labels)")
    switched = share_of(zero["flipped"].astype(bool) & (zero["U"] >= zero["Δ"]), replica_groups(zero))
    uncertain = share_of(selected["U"] < selected["Δ"], replica_groups(selected))
    return (verdicts.premise_interval(switched, threshold=SWITCH_AT,
                                      what="share of images the zero reference switches with confidence (U ≥ Δ)"),
            verdicts.premise_interval(uncertain, threshold=UNCERTAIN_AT,
                                      what="share of images the selected perturbation makes uncertain (U < Δ)"),
            switched, uncertain)


def mechanism(flips: pd.DataFrame, *, model: str | None = None) -> verdicts.Premise:
    """The chapter's mechanism premise (C1's rule, its premise) on the :func:`flip_frame` rows ``flips`` (one
    task; columns model, replacement, flipped, U, Δ and ``replica``), for ``model`` or, when None, for every model
    of the frame: few classes and class switches — under the fixed zero reference at least :data:`SWITCH_AT` of the
    images switch class with confidence (U ≥ Δ) — and an uncertain end point — the selected perturbation reaches
    U < Δ for at least :data:`UNCERTAIN_AT` of them. Each a share interval at the replica level (t on the replica
    shares ∪ Wilson) against its threshold; holds when every check of every model does, fails when one fails,
    undecided otherwise."""
    frame = with_replica(flips)
    models = [model] if model is not None else list(dict.fromkeys(frame["model"]))
    checks = []
    for m in models:
        rows = frame[frame["model"] == m]
        if rows.empty:
            raise ValueError(f"flips hold no rows of model {m!r}")
        switched, uncertain, _, _ = _mechanism_checks(rows)
        checks.append(both_premises([switched, uncertain], m))
    return both_premises(checks, "the paper's mechanism on the stand-in (few classes switch under a fixed reference; the "
                         "selected perturbation leaves the model uncertain)")


def mechanism_table(flips: pd.DataFrame) -> pd.DataFrame:
    """The mechanism premise's diagnostic for the chapter page: per task (when the frame has a ``task`` column) ×
    model × check, the share, its interval at the replica level, the threshold and the outcome (holds / fails /
    undecided), with the replicas and images behind it."""
    frame = with_replica(flips)
    keys = ["task", "model"] if "task" in frame.columns else ["model"]
    rows = []
    for key, part in frame.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        p_switch, p_uncertain, switched, uncertain = _mechanism_checks(part)
        for name, p, i, t in (("zero reference: switched with confidence (U ≥ Δ)", p_switch, switched, SWITCH_AT),
                              ("selected perturbation: uncertain (U < Δ)", p_uncertain, uncertain, UNCERTAIN_AT)):
            rows.append({**dict(zip(keys, key)), "check": name, "share": i.estimate, "low": i.low, "high": i.high,
                         "at least": t, "outcome": {True: "holds", False: "fails", None: "undecided"}[p.holds],
                         "replicas": i.replicas, "images": i.units})
    return pd.DataFrame(rows)


def mechanism_if(flips: pd.DataFrame | None, model: str | None = None) -> verdicts.Premise | None:
    return None if flips is None else mechanism(flips, model=model)



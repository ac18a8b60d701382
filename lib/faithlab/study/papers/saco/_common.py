"""Shared pieces of SaCo's claim functions: the (model, image) × method tables, the trained model of every row (the
unit of replication: a setting × replica), and the two premises every claim checks before its outcome — the ViTs
learned the digits, and removal matters group by group (the chapter's mechanism)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faithlab.study import verdicts

HIGHER_IS_BETTER = {"SaCo": True, "AUC": False, "AOPC": True, "LOdds": False, "Comprehensiveness": False}
"""Direction of each metric of the SaCo comparison (spec §3.2): True when a higher score means more faithful."""

MIN_ACCURACY = 0.8
"""Test accuracy a ViT must reach for its explanations to explain a model that learned the task (premise)."""
ACCURACY_TOLERANCE = 0.05
"""Tolerance of the accuracy premise: a ViT fails it only when its accuracy lies below :data:`MIN_ACCURACY` by more
than this."""
GROUP_DROP_MIN = 0.05
"""The mechanism premise's threshold: removing the most salient of the K groups alone must lower p(ŷ|x) by more than
removing the least salient one, by at least this much on average (5 points of probability; a convention, the paper
reports no group drops)."""
PREMISE_METHOD = "Transformer Attribution"
"""The map whose groups the mechanism premise removes: the case study's good explanation (Fig. 3), present in both
notebooks."""
FIRST, LAST = "first group drop", "last group drop"
"""Columns of the per-image frames: ∇pred of the most and of the least salient of the K groups, each removed alone."""


def unit_index(frame: pd.DataFrame) -> list[str]:
    """The columns that name one unit (an image of a trained model): setting, replica and sample where present."""
    return [c for c in ("setting", "replica", "sample") if c in frame.columns]


def model_of(index_or_frame) -> np.ndarray | None:
    """The trained model (``"<setting>/<replica>"``) of every row of a frame or of a :func:`wide` table's index; None
    when the rows carry no replica and no setting (one model)."""
    if isinstance(index_or_frame, pd.DataFrame) and not isinstance(index_or_frame.index, pd.MultiIndex):
        frame = index_or_frame
        parts = [frame[c].astype(str).to_numpy() for c in ("setting", "replica") if c in frame.columns]
    else:
        index = index_or_frame.index if isinstance(index_or_frame, pd.DataFrame) else index_or_frame
        names = [n for n in ("setting", "replica") if n in (index.names or [])]
        parts = [index.get_level_values(n).astype(str).to_numpy() for n in names]
    if not parts:
        return None
    out = parts[0].astype(object)
    for p in parts[1:]:
        out = out + "/" + p
    return out


def n_models(frame: pd.DataFrame) -> int:
    """How many trained models (setting × replica) the rows of ``frame`` come from."""
    groups = model_of(frame)
    return 1 if groups is None else len(set(groups))


def wide(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """((setting,) (replica,) sample × method) table of one metric, oriented so that higher is better (methods in
    order of appearance; a unit a method lacks is NaN)."""
    sign = 1.0 if HIGHER_IS_BETTER.get(metric, True) else -1.0
    table = frame.set_index([*unit_index(frame), "method"])[metric].unstack("method").sort_index()
    return table[list(dict.fromkeys(frame["method"]))] * sign


def model_means(table: pd.DataFrame) -> pd.DataFrame:
    """The mean over each trained model's images of every column of a :func:`wide` table (one row per model)."""
    groups = model_of(table)
    if groups is None:
        return table.mean().to_frame().T
    return table.groupby(groups, sort=True).mean()


def units_of(frame: pd.DataFrame) -> int:
    """Independent units (images of the trained models, pooled) that a cell of ``frame`` rests on: the distinct
    (setting, replica, sample) of its rows."""
    return int(len(frame[unit_index(frame)].drop_duplicates())) if len(frame) else 0


def accuracy_reason(accuracy: pd.DataFrame | None, *, min_accuracy: float = MIN_ACCURACY,
                    tolerance: float = ACCURACY_TOLERANCE) -> str | None:
    """Premise of every claim about the trained ViTs: each one learned the task — its test accuracy (``accuracy``:
    columns accuracy and, where present, setting and replica) at least ``min_accuracy`` within ``tolerance``. The
    reason it fails, or None (also when ``accuracy`` is None: not checked)."""
    if accuracy is None or not len(accuracy):
        return None
    worst = accuracy.loc[accuracy["accuracy"].idxmin()]
    if float(worst["accuracy"]) < min_accuracy - tolerance:
        who = "/".join(str(worst[c]) for c in ("setting", "replica") if c in accuracy.columns) or "the ViT"
        return (f"ViT {who} reaches a test accuracy of only {float(worst['accuracy']):.3f}, below {min_accuracy:g} by "
                f"more than the tolerance {tolerance:g}: its maps explain a model that has not learned the task")
    return None


def accuracy_text(accuracy: pd.DataFrame | None, *, min_accuracy: float = MIN_ACCURACY,
                  tolerance: float = ACCURACY_TOLERANCE) -> str:
    """The accuracy premise in one phrase for a claim's premise sentence."""
    if accuracy is None or not len(accuracy):
        return "the ViTs' accuracy was not given (premise not checked)"
    return (f"every ViT must reach a test accuracy of {min_accuracy:g} within {tolerance:g} (lowest "
            f"{float(accuracy['accuracy'].min()):.3f} of {len(accuracy)} models)")


def removal_premise(frame: pd.DataFrame | None, *, method: str = PREMISE_METHOD, threshold: float = GROUP_DROP_MIN,
                    level: float = 0.95) -> tuple[verdicts.Premise | None, dict]:
    """The chapter's mechanism premise, removal matters group by group: per image of ``method``'s rows of
    ``frame`` (columns :data:`FIRST`, :data:`LAST`: the drop of p(ŷ|x) when the most / least salient of the K groups
    is removed alone), the difference first − last; its mean per trained model and the t interval on those means
    (:func:`faithlab.study.verdicts.mean_interval`) must lie above ``threshold``
    (:func:`faithlab.study.verdicts.premise_interval`). Returns the premise (None when ``frame`` is None: not checked) and
    a row for the page (estimate, low, high, threshold, outcome, models, images)."""
    if frame is None:
        return None, {}
    rows = frame[frame["method"] == method]
    if not len(rows) or FIRST not in rows or LAST not in rows:
        raise ValueError(f"frame must hold {method!r} rows with the columns {FIRST!r} and {LAST!r}")
    diff = (rows[FIRST] - rows[LAST]).to_numpy(np.float64)
    interval = verdicts.mean_interval(diff, groups=model_of(rows), level=level)
    premise = verdicts.premise_interval(
        interval, threshold=threshold, what=f"removal matters group by group: p(ŷ|x) drops more when the most "
                                            f"salient of {method}'s groups is removed alone than the least salient")
    state = {True: "holds", False: "fails", None: "undecided"}[premise.holds]
    return premise, {"method": method, "most − least salient group drop": interval.estimate, "low": interval.low,
                     "high": interval.high, "threshold": threshold, "outcome": state, "models": interval.replicas,
                     "images": interval.units, "interval": interval.method}


def gate(v: verdicts.Verdict, premise: verdicts.Premise | None) -> verdicts.Verdict:
    """A verdict under the mechanism premise (:meth:`faithlab.study.verdicts.Premise.apply`; unchanged when not checked or
    when the verdict is already "not testable here")."""
    if premise is None or str(v) == verdicts.NOT_TESTABLE:
        return v
    return premise.apply(v)


def premise_sentence(accuracy, premise: verdicts.Premise | None, *, min_accuracy: float = MIN_ACCURACY,
                     tolerance: float = ACCURACY_TOLERANCE) -> str:
    """The premises of a claim in one sentence: the accuracy check and the mechanism's interval."""
    mechanism = premise.text if premise is not None else "removal by groups was not checked (no per-image drops given)"
    return f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=tolerance)}; {mechanism}"


def state(judgement) -> str:
    """A judgement's outcome for a table ("holds", "fails", "undecided")."""
    return "undecided" if judgement is None else judgement.outcome

"""SaCo's premises, which every claim checks before its outcome — the ViTs learned the digits (:data:`MIN_ACCURACY`,
:data:`ACCURACY_TOLERANCE`: :func:`accuracy_reason`, :func:`accuracy_text`) and removal matters group by group (the
chapter's mechanism: :func:`removal_premise`, :data:`GROUP_DROP_MIN`) — and what the claim functions share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.saco.experiments import FIRST, HIGHER_IS_BETTER, LAST, model_of

__all__ = ["MIN_ACCURACY", "ACCURACY_TOLERANCE", "GROUP_DROP_MIN", "PREMISE_METHOD", "removal_premise",
           "accuracy_reason", "accuracy_text", "gate", "premise_sentence", "state", "narrow", "CUMULATIVE",
           "premises_of", "methods_present", "judged_rows"]


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
    (:func:`faithlab_study.verdicts.mean_interval`) must lie above ``threshold``
    (:func:`faithlab_study.verdicts.premise_interval`). Returns the premise (None when ``frame`` is None: not checked) and
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
    """A verdict under the mechanism premise (:meth:`faithlab_study.verdicts.Premise.apply`; unchanged when not checked or
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
    """A judgement's outcome for a table (one of :data:`faithlab_study.verdicts.decisions.OUTCOMES`: "holds",
    "weaker", "absent", "undecided"; "undecided" for a cell without an interval)."""
    return "undecided" if judgement is None else judgement.outcome


CUMULATIVE = tuple(m for m in HIGHER_IS_BETTER if m != "SaCo")
"""The four cumulative-removal metrics the paper compares SaCo with."""


def narrow(table: pd.DataFrame, keep: Sequence[str], intervals: Mapping[str, tuple[str, str, str]], *,
           digits: int = 3) -> pd.DataFrame:
    """A claim table narrowed for a page: the ``keep`` columns, then each ``intervals`` entry ``{name: (mean, low,
    high)}`` as one text column "mean [low, high]" (signed, ``digits`` decimals); the full table stays in the
    notebook's outputs."""
    missing = [c for c in [*keep, *(c for cols in intervals.values() for c in cols)] if c not in table]
    if missing:
        raise ValueError(f"table has no column {missing[0]!r} (columns: {list(table.columns)})")
    out = table[list(keep)].copy()
    for name, (mean, low, high) in intervals.items():
        out[name] = [f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
                     for m, lo, hi in zip(table[mean], table[low], table[high])]
    return out


def premises_of(frame: pd.DataFrame, accuracy, min_accuracy: float, accuracy_tolerance: float):
    """(the accuracy premise's reason or None, the mechanism premise or None, its sentence) of a claim on ``frame``."""
    reason = accuracy_reason(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)
    premise = removal_premise(frame)[0] if FIRST in frame.columns else None
    return reason, premise, premise_sentence(accuracy, premise, min_accuracy=min_accuracy,
                                             tolerance=accuracy_tolerance)


def methods_present(frame: pd.DataFrame, wanted: Sequence[str], *, need: Sequence[str] = ()) -> list[str]:
    names = set(frame["method"])
    missing = [m for m in need if m not in names]
    if missing:
        raise ValueError(f"the frame lacks the methods {missing} (it holds {sorted(names)})")
    present = [m for m in wanted if m in names]
    if not present:
        raise ValueError(f"the frame holds none of the methods {list(wanted)} (it holds {sorted(names)})")
    return present


def judged_rows(judgements, **columns) -> list[dict]:
    return verdicts.judgement_table(judgements, **columns)



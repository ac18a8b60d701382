"""The chapter's mechanism premise (spec §4.1): a family's k models beat chance clearly and are of comparable accuracy
— the paper's ±3 % — on images none of them saw, each decided with a t interval over the independently trained
replicas of the family (:func:`premise_row`, :func:`decide_premise`), and the accuracy tables of the chapter
(:func:`accuracy_frame`, :func:`accuracy_summary`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from faithlab import data

from faithlab_study import verdicts
from faithlab_study.papers.reco_mege.setup import Family

__all__ = ["test_accuracy", "premise_row", "decide_premise", "premise_table", "accuracy_frame", "accuracy_summary",
           "TOLERANCE", "CHANCE_FACTOR"]

TOLERANCE = 0.03
"""The paper's "comparable accuracy (±3 %)" (§4.1): each of the k models within 0.03 of the family's mean."""
CHANCE_FACTOR = 2.0
"""A family beats chance clearly when its mean accuracy exceeds this many times 1 / number of classes."""


def test_accuracy(fam: Family, test: data.TensorData, *, batch_size: int = 256) -> torch.Tensor:
    """Accuracy ``(k,)`` of each of the family's models on the same images ``test`` (none of which they saw)."""
    if not isinstance(test, data.TensorData) or len(test) == 0:
        raise ValueError(f"test must be a non-empty faithlab.data.TensorData, got {type(test).__name__}")
    preds = fam.cross.predictions(test.x.to(fam.data.x.device), batch_size=batch_size)
    return (preds == test.y.cpu()).double().mean(1)


def premise_row(fam: Family, heldout: data.TensorData, *, batch_size: int = 256, **columns) -> dict:
    """The premise's statistics of one trained family on images none of its models saw (``heldout``, e.g.
    :meth:`~faithlab_study.papers.reco_mege.setup.FamilySettings.heldout`): ``accuracy`` (the k models' mean),
    ``lowest``, ``highest``, ``spread`` (the largest distance of a model's accuracy from that mean, the paper's ±3 %),
    ``bar`` (:data:`CHANCE_FACTOR` / number of classes), ``models`` (k) and ``images`` → one row (+ ``columns``, e.g.
    ``task=``, ``replica=``) for :func:`decide_premise`."""
    acc = test_accuracy(fam, heldout, batch_size=batch_size)
    mean = float(acc.mean())
    return {**columns, "family": fam.name, "models": int(acc.numel()), "images": len(heldout), "accuracy": mean,
            "lowest": float(acc.min()), "highest": float(acc.max()), "spread": float((acc - mean).abs().max()),
            "bar": CHANCE_FACTOR / fam.data.n_classes}


def _interval(values, units: int) -> verdicts.Interval:
    return verdicts.replica_interval(np.asarray(values, dtype=float), units=units)


def decide_premise(rows: pd.DataFrame, *, tolerance: float = TOLERANCE, what: str = "") -> verdicts.Premise:
    """The mechanism premise of a family decided over its replicas (``rows``: :func:`premise_row` rows, one per
    replica, at least two): (a) the models beat chance clearly — the t interval on the replicas' mean accuracy minus
    the bar lies above 0 — and (b) they are of comparable accuracy — the t interval on the replicas' ``spread`` lies
    below ``tolerance`` (the paper's ±3 %). Holds when both hold; fails (the mechanism is absent: "not testable here")
    when either interval lies wholly on the wrong side; undecided when either straddles its threshold."""
    if not isinstance(rows, pd.DataFrame) or not {"accuracy", "spread", "bar", "images"} <= set(rows.columns):
        raise ValueError("rows must be premise_row(...) rows (accuracy, spread, bar, images), one per replica")
    if not 0 < float(tolerance) < 1:
        raise ValueError(f"tolerance must lie in (0, 1), got {tolerance!r}")
    if len(rows) < 2:
        raise ValueError(f"the premise is decided over at least 2 trained replicas, got {len(rows)}")
    units = int(rows["images"].sum())
    prefix = f"{what}: " if what else ""
    chance = verdicts.premise_interval(_interval(rows["accuracy"] - rows["bar"], units), threshold=0.0,
                                       what=f"{prefix}mean accuracy minus {CHANCE_FACTOR:g} × chance "
                                            f"({float(rows['bar'].mean()):.2f}) on images no model saw")
    spread = verdicts.premise_interval(_interval(rows["spread"], units), threshold=float(tolerance),
                                       direction="below",
                                       what=f"{prefix}largest distance of one of the {int(rows['models'].max())} "
                                            "models' accuracies from their mean (the paper's ±3 %)")
    parts = (chance, spread)
    failed = [p for p in parts if p.holds is False]
    holds = False if failed else None if any(p.holds is None for p in parts) else True
    return verdicts.Premise(holds, "; ".join(p.text for p in (failed or parts)))


def premise_table(rows: pd.DataFrame, by: str = "task", *, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """The premise per ``by`` (e.g. task or family) for the chapter page: the replicas, the mean accuracy and the
    spread with their t intervals over the replicas, the thresholds and the outcome (holds / fails / undecided)."""
    out = []
    for name, part in rows.groupby(by, sort=False):
        units = int(part["images"].sum())
        row = {by: name, "replicas": len(part), "images per replica": int(part["images"].iloc[0])}
        if len(part) >= 2:
            acc = _interval(part["accuracy"], units)
            spread = _interval(part["spread"], units)
            premise = decide_premise(part, tolerance=tolerance)
            row.update({"accuracy": acc.estimate, "accuracy low": acc.low, "accuracy high": acc.high,
                        "2 × chance": float(part["bar"].mean()), "spread": spread.estimate, "spread low": spread.low,
                        "spread high": spread.high, "tolerance": float(tolerance),
                        "premise": {True: "holds", False: "fails", None: "undecided"}[premise.holds]})
        else:
            row.update({"accuracy": float(part["accuracy"].mean()), "spread": float(part["spread"].mean()),
                        "tolerance": float(tolerance), "premise": "one replica: undecided"})
        out.append(row)
    return pd.DataFrame(out)


def accuracy_frame(families: list[Family], tests: Mapping[str, data.TensorData] | None = None, *,
                   tolerance: float = TOLERANCE, batch_size: int = 256) -> pd.DataFrame:
    """Held-out block accuracy of every model of every family and, given ``tests`` (``{task: images no model
    saw}``), the models' accuracy there and whether each is within ``tolerance`` of their mean (the point estimate;
    the premise itself is decided over the replicas by :func:`decide_premise`)."""
    rows = []
    for f in families:
        acc = f.cross.accuracy
        row = {"task": f.task, "family": f.name, "k": f.cross.k, "mean accuracy": float(acc.mean()),
               "min": float(acc.min()), "max": float(acc.max())}
        test = (tests or {}).get(f.task)
        if test is not None:
            t = test_accuracy(f, test, batch_size=batch_size)
            row.update({"test images": len(test), "test accuracy": float(t.mean()), "test min": float(t.min()),
                        "test max": float(t.max()),
                        "test within ±3 %": bool(((t - t.mean()).abs() <= tolerance + 1e-12).all())})
        row.update({"trained on": int(np.mean(f.cross.degradation["train_sizes"])),
                    "labels switched": f.cross.degradation["labels_switched"],
                    "layers randomised": len(f.cross.degradation["randomised_layers"])})
        rows.append(row)
    return pd.DataFrame(rows)


def accuracy_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`accuracy_frame` narrowed for a page: per family, the held-out and test accuracies as "mean (min–max)"
    and whether the models are within ±3 % of their mean there."""
    def span(prefix: str) -> pd.Series:
        mean, low, high = (f"{prefix}accuracy" if prefix else "mean accuracy", f"{prefix}min", f"{prefix}max")
        return frame.apply(lambda r: f"{r[mean]:.3f} ({r[low]:.3f}–{r[high]:.3f})", axis=1)

    out = frame[["task", "family"]].copy()
    out["held-out accuracy"] = span("")
    if "test accuracy" in frame:
        out["test accuracy"] = span("test ")
        out["within ±3 % (test)"] = frame["test within ±3 %"]
    return out

"""The premises of every verdict on a family (spec §4.1): its k models beat chance clearly
(:func:`chance_premise`) and are of comparable accuracy on the test set (:func:`comparable_premise`,
:func:`family_premise`), with the accuracy tables of the chapter (:func:`accuracy_frame`, :func:`accuracy_summary`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from faithlab import data, verdicts
from faithlab.protocols.reco_mege.kfold import Family

__all__ = ["chance_premise", "test_accuracy", "comparable_premise", "family_premise", "accuracy_frame",
           "accuracy_summary"]


_Z = 1.959963984540054  # a premise fails only when its 95 % interval lies wholly on the wrong side


def chance_premise(fam: Family, *, factor: float = 2.0) -> str | None:
    """Premise of every verdict on a family: its models must beat chance clearly (mean held-out accuracy ≥
    ``factor`` / n_classes); else S= is tiny and ReCo/MeGe compare explanations of guesses → the reason, or None.
    It fails only when it demonstrably fails: the mean accuracy's 95 % binomial interval (over the D held-out
    predictions) lies wholly below the bar, so a family at the bar is not "not testable" by sampling noise."""
    chance = 1.0 / fam.data.n_classes
    acc = float(fam.cross.accuracy.mean())
    n = max(1, len(fam.data))
    if acc + _Z * float(np.sqrt(acc * (1 - acc) / n)) < factor * chance:
        return (f"{fam.task} {fam.name}: mean held-out accuracy {acc:.2f} < {factor * chance:.2f} "
                f"({factor:g} × chance)")
    return None


def test_accuracy(fam: Family, test: data.TensorData, *, batch_size: int = 256) -> torch.Tensor:
    """Accuracy ``(k,)`` of each of the family's models on the same test set (the paper's comparability check)."""
    if not isinstance(test, data.TensorData) or len(test) == 0:
        raise ValueError(f"test must be a non-empty faithlab.data.TensorData, got {type(test).__name__}")
    preds = fam.cross.predictions(test.x.to(fam.data.x.device), batch_size=batch_size)
    return (preds == test.y.cpu()).double().mean(1)


def comparable_premise(fam: Family, test: data.TensorData | None = None, *, tolerance: float = 0.03,
                       batch_size: int = 256) -> str | None:
    """Premise of every verdict on a family (§4.1, "comparable accuracy (±3 %) on the test set"): each model's
    accuracy on ``test`` lies within ``tolerance`` of the family's mean → None, else the reason. Without ``test`` the
    held-out block accuracies are used (each model on its own block: blocks of a small D add their sampling noise).
    It fails only when it demonstrably fails: some model's distance from the mean, less its 95 % binomial margin on
    the images it was scored on, still exceeds ``tolerance`` (a measured accuracy is itself a sample)."""
    if not 0 <= float(tolerance) < 1:
        raise ValueError(f"tolerance must lie in [0, 1), got {tolerance!r}")
    acc = test_accuracy(fam, test, batch_size=batch_size) if test is not None else fam.cross.accuracy.double()
    n = len(test) if test is not None else max(1, len(fam.data) // max(1, fam.cross.k))
    margin = _Z * (acc * (1 - acc) / n).sqrt()
    spread = float((acc - acc.mean()).abs().max())
    if float(((acc - acc.mean()).abs() - margin).max()) > tolerance + 1e-12:
        where = f"on the test set ({len(test)} images)" if test is not None else "on their held-out blocks"
        return (f"{fam.task} {fam.name}: the {fam.cross.k} models are not of comparable accuracy {where}: "
                f"{float(acc.min()):.3f}–{float(acc.max()):.3f}, up to {spread:.3f} from their mean "
                f"(the paper keeps them within ±{tolerance:.0%}; at least one lies beyond it by more than its own "
                "95 % binomial margin)")
    return None


def family_premise(fam: Family, test: data.TensorData | None = None, *, tolerance: float = 0.03,
                   batch_size: int = 256) -> str | None:
    """Both premises of a normally trained family: its models beat chance clearly (:func:`chance_premise`) and are of
    comparable accuracy (:func:`comparable_premise`) → the first that fails, or None."""
    return verdicts.first_reason(chance_premise(fam),
                                 comparable_premise(fam, test, tolerance=tolerance, batch_size=batch_size))


def accuracy_frame(families: list[Family], tests: Mapping[str, data.TensorData] | None = None, *,
                   tolerance: float = 0.03, batch_size: int = 256) -> pd.DataFrame:
    """Held-out block accuracy of every model of every family and, given ``tests`` (``{task: test set}``), the
    models' accuracy on that test set and whether they meet the paper's ±3 % there (the premise of the family's
    verdicts, :func:`comparable_premise`)."""
    rows = []
    for f in families:
        acc = f.cross.accuracy
        row = {"task": f.task, "family": f.name, "k": f.cross.k, "mean accuracy": float(acc.mean()),
               "min": float(acc.min()), "max": float(acc.max()), "within ±3 %": f.cross.comparable(tolerance)}
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
    and whether the models meet the paper's ±3 % on the test split."""
    def span(prefix: str) -> pd.Series:
        mean, low, high = (f"{prefix}accuracy" if prefix else "mean accuracy", f"{prefix}min", f"{prefix}max")
        return frame.apply(lambda r: f"{r[mean]:.3f} ({r[low]:.3f}–{r[high]:.3f})", axis=1)

    out = frame[["task", "family"]].copy()
    out["held-out accuracy"] = span("")
    if "test accuracy" in frame:
        out["test accuracy"] = span("test ")
        out["within ±3 % (test)"] = frame["test within ±3 %"]
    return out

"""The paper's numbers (TRACE, Table 1), typed from its table, and the margins the registered rules derive from them.

:data:`TABLE1` holds all 18 rows (six models × three references); :data:`TABLE1_RESNET18` its ResNet-18 rows (the
model of the paper's Fig. 1, 2 and 4, and of our first stand-in). The notebook prints them beside ours, the claims
quote them, and the functions below recompute each registered margin of the chapter's rules from them
(tests/faithlab_study/papers/trace/test_paper_tables.py fails when the file drifts from these numbers); nothing else types
them."""

from __future__ import annotations

import pandas as pd

__all__ = ["TABLE1", "TABLE1_RESNET18", "TABLE1_METHOD_COLUMNS", "TABLE1_MODELS", "versus_best", "shortfalls",
           "probability_gaps", "reference_spreads", "margin_beats_methods", "margin_probability_gap",
           "margin_search_bound", "margin_reference_robust"]

_COLUMNS = ["reference", "model", "T-y", "T-p", "Grad", "GC", "IBA", "RISE", "EP", "EBP", "IG", "IxG"]
TABLE1 = pd.DataFrame(  # Table 1 of the paper, every row
    [["zero", "ResNet-18", 24.98, 31.69, 11.52, 16.24, 15.92, 14.52, 13.41, 15.39, 10.28, 8.21],
     ["zero", "VGG-16", 25.80, 31.25, 14.03, 16.28, 18.77, 17.07, 15.63, 16.36, 13.71, 10.86],
     ["zero", "AlexNet", 15.40, 21.83, 7.05, 7.55, 8.13, 7.43, 7.63, 7.55, 6.64, 5.86],
     ["zero", "GoogLeNet", 23.70, 28.13, 11.31, 14.31, 14.06, 12.53, 11.98, 13.67, 10.29, 8.72],
     ["zero", "MobileNetV3", 27.55, 33.86, 8.15, 16.78, 13.06, 10.0, 11.08, 10.74, 8.49, 6.20],
     ["zero", "DenseNet-161", 28.00, 35.25, 11.35, 19.82, 18.87, 18.18, 17.04, 19.17, 12.20, 9.33],
     ["mean", "ResNet-18", 25.64, 32.51, 11.45, 16.22, 15.66, 14.57, 12.96, 15.40, 10.51, 8.48],
     ["mean", "VGG-16", 26.66, 32.64, 14.09, 17.00, 19.06, 17.63, 15.73, 16.58, 13.83, 10.77],
     ["mean", "AlexNet", 16.33, 23.32, 8.91, 9.82, 9.20, 10.65, 9.83, 9.82, 8.48, 6.73],
     ["mean", "GoogLeNet", 24.02, 29.17, 11.63, 14.49, 14.14, 12.70, 11.85, 13.89, 10.63, 9.06],
     ["mean", "MobileNetV3", 27.25, 34.26, 8.25, 17.07, 13.64, 10.82, 11.69, 11.45, 8.36, 5.99],
     ["mean", "DenseNet-161", 29.02, 36.19, 11.26, 20.06, 18.80, 18.06, 17.70, 19.48, 12.15, 8.96],
     ["blur", "ResNet-18", 27.34, 33.84, 10.93, 17.38, 16.41, 16.01, 14.98, 16.24, 10.04, 7.57],
     ["blur", "VGG-16", 27.50, 34.09, 14.51, 17.89, 19.27, 18.15, 15.81, 17.06, 14.73, 11.46],
     ["blur", "AlexNet", 19.55, 26.78, 8.90, 9.81, 9.20, 10.65, 10.00, 9.81, 8.47, 6.73],
     ["blur", "GoogLeNet", 24.86, 29.83, 11.60, 14.50, 14.31, 13.44, 12.55, 13.89, 10.95, 9.24],
     ["blur", "MobileNetV3", 24.74, 31.57, 9.43, 15.63, 14.09, 10.22, 12.71, 12.97, 9.81, 7.56],
     ["blur", "DenseNet-161", 29.69, 36.87, 10.93, 19.20, 18.11, 17.95, 17.28, 18.63, 11.55, 8.07]],
    columns=_COLUMNS)
"""Table 1 (ILSVRC2012, first 200 validation images, t = 49 patches, probabilities): mean ΣLeRF − ΣMoRF per
reference (zero, mean, blur) and model (i)–(vi), for TRACE-SA-Le−Mo optimised for the logit (T-y) and the
probability (T-p), and the eight attribution methods. A curve has t + 1 = 50 points, so the score lies in
[−50, 50]."""

TABLE1_MODELS = list(dict.fromkeys(TABLE1["model"]))
"""The paper's six models, rows (i)–(vi) of Table 1."""

TABLE1_RESNET18 = TABLE1[TABLE1["model"] == "ResNet-18"].drop(columns="model").reset_index(drop=True)
"""Table 1, rows (i) ResNet-18 of the three references (zero, mean, blur)."""

TABLE1_METHOD_COLUMNS = ["Grad", "GC", "IBA", "RISE", "EP", "EBP", "IG", "IxG"]
"""The attribution methods among Table 1's columns (the others: the reference, the model and TRACE's two)."""

CURVE_POINTS = 50
"""t + 1 points of Table 1's curves (t = 49)."""


def versus_best(reference: str = "zero") -> str:
    """TRACE-p's value against the best attribution method's in :data:`TABLE1_RESNET18`'s row of ``reference``, and
    their ratio (e.g. ``"31.69 vs best 16.24, ×1.95"``)."""
    row = TABLE1_RESNET18.set_index("reference").loc[reference]
    tp, best = float(row["T-p"]), float(row[TABLE1_METHOD_COLUMNS].max())
    return f"{tp:.2f} vs best {best:.2f}, ×{tp / best:.2f}"


def shortfalls() -> pd.Series:
    """Per Table 1 cell (reference, model): the best attribution method's shortfall from T-p as a share of T-p's
    score, 1 − best / T-p (ResNet-18, zero: 1 − 16.24 / 31.69 = 0.488, the ×1.95 of the text)."""
    t = TABLE1.set_index(["reference", "model"])
    return 1 - t[TABLE1_METHOD_COLUMNS].max(axis=1) / t["T-p"]


def probability_gaps() -> pd.Series:
    """Per Table 1 cell: T-p's lead over T-y as a share of T-p's score, (T-p − T-y) / T-p — the gap the paper calls
    "non-negligible" (Sec. 5.2)."""
    t = TABLE1.set_index(["reference", "model"])
    return (t["T-p"] - t["T-y"]) / t["T-p"]


def reference_spreads(model: str = "ResNet-18") -> dict[str, float]:
    """How far the reference moves T-p's score in Table 1 for ``model`` (the paper's "consistent scores across
    reference types", Sec. 5.2): max − min over the three references, relative to the mean of the three
    (``"relative"``) and per curve point (``"per point"``, over :data:`CURVE_POINTS`)."""
    tp = TABLE1[TABLE1["model"] == model]["T-p"]
    spread = float(tp.max() - tp.min())
    return {"relative": spread / float(tp.mean()), "per point": spread / CURVE_POINTS}


def margin_beats_methods() -> float:
    """T2's margin: half the smallest shortfall of the best method from T-p over Table 1's 18 cells
    (VGG-16, zero: 1 − 18.77 / 31.25 = 0.399 → 0.200), to three decimals."""
    return round(float(shortfalls().min()) / 2, 3)


def margin_probability_gap() -> float:
    """T2b's margin: half the smallest T-p − T-y gap relative to T-p over Table 1's 18 cells, the gap the paper
    still calls "non-negligible" (GoogLeNet, zero: (28.13 − 23.70) / 28.13 = 0.157 → 0.079), to three decimals."""
    return round(float(probability_gaps().min()) / 2, 3)


def margin_search_bound() -> float:
    """T1's margin: a gap the paper calls "almost negligible" (Fig. 2a) lies below half of the smallest gap it calls
    "non-negligible" (:func:`margin_probability_gap`, the same share of the way from a random order to the best
    trajectory)."""
    return margin_probability_gap()


def margin_reference_robust() -> dict[str, float]:
    """T5's margins: T-p's own spread over the references in Table 1 for ResNet-18, the paper's "barely moves"
    (:func:`reference_spreads`, to three decimals): a pixel-level method must move by more than this beyond TRACE's
    spread."""
    return {k: round(v, 3) for k, v in reference_spreads().items()}

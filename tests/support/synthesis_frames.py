"""What the tests of the synthesis protocol (tests/faithlab_study/papers/synthesis/) share: an ``fl.evaluate``-like
frame built by hand from per-sample scores (:func:`scores_frame`)."""

from __future__ import annotations

import pandas as pd

import faithlab as fl


def scores_frame(scores: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """An evaluate-like frame from {metric: {explainer: per-sample scores}}."""
    rows = []
    for metric, by in scores.items():
        info = fl.evaluation.METRICS[metric]
        for explainer, values in by.items():
            rows += [{"explainer": explainer, "sample": i, "metric": metric, "label": info.label,
                      "paper": info.paper, "level": "sample", "score": v, "higher_is_better": info.higher_is_better,
                      "direction": ""} for i, v in enumerate(values)]
    frame = pd.DataFrame(rows)
    frame["sample"] = frame["sample"].astype("Int64")
    return frame

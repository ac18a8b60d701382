"""SaCo's experimental protocol (Wu et al., CVPR 2024, spec §3): SaCo and the four cumulative metrics per sample,
their orientation (higher = more faithful), the radar rescaling of Fig. 4 and the Random-separation test of S1.
Tables are pandas frames with one column per metric."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch

from faithlab import metrics

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "oriented", "radar_scale", "random_separation"]

HIGHER_IS_BETTER = {"SaCo": True, "AUC": False, "AOPC": True, "LOdds": False, "Comprehensiveness": False}
"""Direction of each metric of the SaCo comparison (spec §3.2): True when a higher score means more faithful."""


def per_sample_metrics(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor, *, k: int = 10,
                       batch_size: int = 256) -> dict[str, torch.Tensor]:
    """SaCo (K = ``k`` groups) and the cumulative metrics of one map → ``{metric: (B,)}`` in
    :data:`HIGHER_IS_BETTER` order; every removal uses the metrics' defaults (per-channel mean, signed-sum salience).
    AUC is read against the labels ``y``, the others against the predicted class."""
    return {
        "SaCo": metrics.saco(model, x, attributions, k=k, batch_size=batch_size),
        "AUC": metrics.auc_accuracy(model, x, attributions, y, batch_size=batch_size),
        "AOPC": metrics.aopc(model, x, attributions, batch_size=batch_size),
        "LOdds": metrics.log_odds(model, x, attributions, batch_size=batch_size),
        "Comprehensiveness": metrics.comprehensiveness(model, x, attributions, batch_size=batch_size),
    }


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The metric columns of ``table`` signed so that higher is better (lower-is-better metrics negated)."""
    sign = pd.Series({m: 1.0 if higher else -1.0 for m, higher in HIGHER_IS_BETTER.items()})
    return table[list(HIGHER_IS_BETTER)] * sign


def radar_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's axes (spec §3.5): each metric oriented, then min–max scaled across the rows (methods) to [0, 1],
    1 = best; a metric on which every method ties is set to 0.5."""
    o = oriented(table)
    return ((o - o.min()) / (o.max() - o.min()).replace(0, float("nan"))).fillna(0.5)


def random_separation(table: pd.DataFrame, *, random: str = "Random", tolerance: float = 0.05) -> dict:
    """Claim S1's test on a (method × metric) table of means: does SaCo set ``random`` apart, and do the cumulative
    metrics fail to?

    SaCo's part holds when SaCo(random) lies within ±``tolerance`` of 0 and below every other method; a cumulative
    metric fails to separate when at least one method scores worse than ``random`` on it after orientation.
    Returns ``{"SaCo(Random)", "min SaCo(method)", "SaCo part holds", "beaten": {metric: n methods worse}}``.
    """
    others = [m for m in table.index if m != random]
    o = oriented(table)
    saco = table["SaCo"]
    saco_ok = abs(saco[random]) < tolerance and bool((saco[others] > saco[random]).all())
    beaten = {metric: int((o.loc[others, metric] < o.loc[random, metric]).sum())
              for metric in HIGHER_IS_BETTER if metric != "SaCo"}
    return {"SaCo(Random)": saco[random], "min SaCo(method)": saco[others].min(), "SaCo part holds": saco_ok,
            "beaten": beaten}

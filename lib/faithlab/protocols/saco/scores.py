"""SaCo and the four cumulative metrics per sample (spec §3.2), their orientation (higher = more faithful) and the
radar rescaling of Fig. 4."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pandas as pd
import torch

from faithlab import metrics, perturb

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "oriented", "radar_scale"]

HIGHER_IS_BETTER = {"SaCo": True, "AUC": False, "AOPC": True, "LOdds": False, "Comprehensiveness": False}
"""Direction of each metric of the SaCo comparison (spec §3.2): True when a higher score means more faithful."""


def per_sample_metrics(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor, *, k: int = 10,
                       batch_size: int = 256) -> dict[str, torch.Tensor]:
    """SaCo (K = ``k`` groups) and the cumulative metrics of one map → ``{metric: (B,)}`` in
    :data:`HIGHER_IS_BETTER` order; every removal uses the metrics' defaults (per-channel mean, signed-sum salience).
    AUC is read against the labels ``y``, the others against the predicted class. A last entry ``"constant map"``
    ``(B,)`` bool flags the maps that are constant over the pixels (no ranking: SaCo 0, the cumulative metrics
    remove pixels in index order); the metrics' per-call warnings are silenced here, report the flags instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        scores = {
            "SaCo": metrics.saco(model, x, attributions, k=k, batch_size=batch_size),
            "AUC": metrics.auc_accuracy(model, x, attributions, target=y, batch_size=batch_size),
            "AOPC": metrics.aopc(model, x, attributions, batch_size=batch_size),
            "LOdds": metrics.log_odds(model, x, attributions, batch_size=batch_size),
            "Comprehensiveness": metrics.comprehensiveness(model, x, attributions, batch_size=batch_size),
        }
    units = perturb.default_units(x)
    return {**scores, "constant map": perturb.constant_maps(perturb.unit_scores(attributions, units, reduce="sum"))}


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The metric columns of ``table`` signed so that higher is better (lower-is-better metrics negated)."""
    sign = pd.Series({m: 1.0 if higher else -1.0 for m, higher in HIGHER_IS_BETTER.items()})
    return table[list(HIGHER_IS_BETTER)] * sign


def radar_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's axes (spec §3.5): each metric oriented, then min–max scaled across the rows (methods) to [0, 1],
    1 = best; a metric on which every method ties is set to 0.5."""
    o = oriented(table)
    return ((o - o.min()) / (o.max() - o.min()).replace(0, float("nan"))).fillna(0.5)

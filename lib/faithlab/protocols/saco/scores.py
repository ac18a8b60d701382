"""SaCo and the four cumulative metrics per sample (spec §3.2), the maps they score and their per-image table (the
random-vs-methods notebook's work, computable in parts), their orientation (higher = more faithful), the radar
rescaling of Fig. 4 and the interval of a mean over settings."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import explainers, metrics, perturb, verdicts

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "pixel_map", "per_image_frame", "oriented", "radar_scale",
           "settings_mean_interval"]

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


def pixel_map(model: Callable, x: torch.Tensor, target: torch.Tensor, method: str, options: Mapping, signed: bool, *,
              batch_size: int = 256, generator=None) -> torch.Tensor:
    """The ``(B, 1, H, W)`` pixel map the comparison scores for a registered explainer ``method`` with its
    ``options``, explaining ``target``: its channels summed, signed for a signed relevance method (``signed``: LRP,
    ATTCAT, whose authors rank pixels by evidence for the class), of |a| for the others."""
    a = explainers.explain(model, x, target, method=method, batch_size=batch_size, generator=generator, **options)
    return a.sum(1, keepdim=True) if signed else a.abs().sum(1, keepdim=True)


def per_image_frame(models: Mapping[tuple, tuple], methods: Mapping[str, tuple], images, *,
                    predicted: Mapping[tuple, torch.Tensor], random_maps: Mapping[tuple, torch.Tensor], k: int = 10,
                    k_values: Sequence[int] = (), random: str = "Random", batch_size: int = 256,
                    generator=None) -> pd.DataFrame:
    """One row per (setting, replica, method, image) for the images ``images`` (indices; those beyond a setting's
    test set are skipped): :func:`per_sample_metrics` of the method's map and SaCo at every K of ``k_values``
    (columns ``"SaCo K=<K>"``).

    models: ``{(setting, replica): (model, x, y)}``; methods: ``{name: (method, options, signed)}`` for
    :func:`pixel_map`, explaining the class in ``predicted[(setting, replica)]``; the ``random`` method's maps are
    read from ``random_maps`` (drawn beforehand for every image, so that a shard of the images gets the maps of the
    whole run). Computing the frame in parts of ``images`` and concatenating gives the whole frame."""
    frames = []
    for key, (model, x, y) in models.items():
        idx = torch.tensor([i for i in images if i < len(x)], dtype=torch.long)
        if not len(idx):
            continue
        for name, spec in methods.items():
            a = (random_maps[key][idx] if name == random else
                 pixel_map(model, x[idx], predicted[key][idx], *spec, batch_size=batch_size, generator=generator))
            scores = per_sample_metrics(model, x[idx], y[idx], a, k=k, batch_size=batch_size)
            with warnings.catch_warnings():  # constant maps (SaCo 0) are flagged by per_sample_metrics
                warnings.simplefilter("ignore", perturb.ConstantMapWarning)
                by_k = {f"SaCo K={kk}": metrics.saco(model, x[idx], a, k=kk, batch_size=batch_size) for kk in k_values}
            frames.append(pd.DataFrame({"setting": key[0], "replica": key[1], "method": name, "sample": idx.numpy(),
                                        **{c: v.cpu().numpy() for c, v in {**scores, **by_k}.items()}}))
    return pd.concat(frames, ignore_index=True)


def settings_mean_interval(rows: pd.DataFrame, metric: str, *, n_boot: int = 2000, seed: int = 0,
                           level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval of the mean over settings of each setting's mean of ``metric`` (NaN left out): per
    setting a two-stage bootstrap (its replicas, then the images within them,
    :func:`faithlab.verdicts.hierarchical_means`), the settings' draws averaged."""
    draws = []
    for _, part in rows.groupby("setting", sort=False):
        values = torch.tensor(part[metric].to_numpy(dtype=np.float64))
        keep = ~torch.isnan(values)
        groups = torch.tensor(pd.factorize(part["replica"])[0], dtype=torch.long)[keep]
        draws.append(verdicts.hierarchical_means(values[keep], groups=groups, n_boot=n_boot, seed=seed))
    mean = torch.stack(draws).mean(0)
    tail = round((1 - level) / 2, 12)  # 0.025 exactly for 0.95
    return float(torch.quantile(mean, tail)), float(torch.quantile(mean, 1 - tail))


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The metric columns of ``table`` signed so that higher is better (lower-is-better metrics negated)."""
    sign = pd.Series({m: 1.0 if higher else -1.0 for m, higher in HIGHER_IS_BETTER.items()})
    return table[list(HIGHER_IS_BETTER)] * sign


def radar_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's axes (spec §3.5): each metric oriented, then min–max scaled across the rows (methods) to [0, 1],
    1 = best; a metric on which every method ties is set to 0.5."""
    o = oriented(table)
    return ((o - o.min()) / (o.max() - o.min()).replace(0, float("nan"))).fillna(0.5)

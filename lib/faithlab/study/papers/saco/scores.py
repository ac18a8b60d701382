"""SaCo and the four cumulative metrics per sample (spec §3.2), the maps they score and their per-image table (the
random-vs-methods notebook's work, computable in parts), their orientation (higher = more faithful), the radar
rescaling of Fig. 4 and the interval of a mean over the trained models."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import explainers, metrics, perturb

from faithlab.study import verdicts
from faithlab.study.papers.saco._common import HIGHER_IS_BETTER, model_of

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "pixel_map", "per_image_frame", "random_saco_frame", "oriented",
           "radar_scale", "models_mean_interval"]


def per_sample_metrics(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor, *, k: int = 10,
                       target: torch.Tensor | None = None, batch_size: int = 256) -> dict[str, torch.Tensor]:
    """SaCo (K = ``k`` groups) and the cumulative metrics of one map → ``{metric: (B,)}`` in
    :data:`HIGHER_IS_BETTER` order; every removal uses the metrics' defaults (per-channel mean, signed-sum salience).
    AUC is read against the labels ``y``, the others against ``target`` (None: the predicted class). AUC, AOPC and
    LOdds read one most-salient-first curve (:func:`faithlab.metrics.papers.saco.morf_details`, equal to the three
    calls). Then ``"first group drop"`` and ``"last group drop"`` ``(B,)``: ∇pred of the most and of the least
    salient of the K groups, each removed alone (the mechanism premise), and ``"constant map"`` ``(B,)`` bool,
    flagging the maps that are constant over the pixels (no ranking: SaCo 0, the cumulative metrics remove pixels in
    index order); the metrics' per-call warnings are silenced here, report the flags instead."""
    from faithlab.metrics.papers.saco import morf_details

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        saco = metrics.saco_details(model, x, attributions, k=k, target=target, batch_size=batch_size)
        morf = morf_details(model, x, attributions, target=target, labels=y, batch_size=batch_size)
        scores = {
            "SaCo": saco["saco"],
            "AUC": morf["auc_accuracy"],
            "AOPC": morf["aopc"],
            "LOdds": morf["log_odds"],
            "Comprehensiveness": metrics.comprehensiveness(model, x, attributions, target=target,
                                                           batch_size=batch_size),
        }
    units = perturb.default_units(x)
    return {**scores, "first group drop": saco["drop"][:, 0], "last group drop": saco["drop"][:, -1],
            "constant map": perturb.constant_maps(perturb.unit_scores(attributions, units, reduce="sum"))}


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
            scores = per_sample_metrics(model, x[idx], y[idx], a, k=k, target=predicted[key][idx],
                                        batch_size=batch_size)
            with warnings.catch_warnings():  # constant maps (SaCo 0) are flagged by per_sample_metrics
                warnings.simplefilter("ignore", perturb.ConstantMapWarning)
                by_k = {f"SaCo K={kk}": scores["SaCo"] if kk == k else
                        metrics.saco(model, x[idx], a, k=kk, target=predicted[key][idx], batch_size=batch_size)
                        for kk in k_values}
            frames.append(pd.DataFrame({"setting": key[0], "replica": key[1], "method": name, "sample": idx.numpy(),
                                        **{c: v.cpu().numpy() for c, v in {**scores, **by_k}.items()}}))
    return pd.concat(frames, ignore_index=True)


def random_saco_frame(models: Mapping[tuple, tuple], *, k: int = 10, seed: int = 0,
                      batch_size: int = 256) -> pd.DataFrame:
    """SaCo (K = ``k``) of a uniform random map (U(0, 1) per pixel) on every image of every model → one row per
    (setting, replica, sample) (columns setting, replica, sample, SaCo). models: ``{(setting, replica): (model, x,
    target)}`` with the images ``x`` and the classes ``target`` the maps explain. The maps are drawn per sample
    (``explain``'s ``sample_seeds``: ``seed`` + the sample's index), so a model's rows do not depend on the others.
    Random's SaCo is the cheapest of the comparison (one map, K + 1 passes per image): S1's "near 0" part reads it
    on more images than the other methods are scored on."""
    frames = []
    for (setting, replica), (model, x, target) in models.items():
        seeds = torch.arange(len(x), dtype=torch.int64) + int(seed)
        a = explainers.explain(model, x, target, method="random", batch_size=batch_size, sample_seeds=seeds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            value = metrics.saco(model, x, a.abs().sum(1, keepdim=True), k=k, target=target, batch_size=batch_size)
        frames.append(pd.DataFrame({"setting": setting, "replica": replica, "sample": np.arange(len(x)),
                                    "SaCo": value.cpu().double().numpy()}))
    return pd.concat(frames, ignore_index=True)


def models_mean_interval(rows: pd.DataFrame, metric: str, *, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``metric`` over the trained models of ``rows`` (each model's mean over its images; NaN left out) and
    its ``level`` t interval on those model means (:func:`faithlab.study.verdicts.mean_interval`, the claims' interval) →
    ``(mean, low, high)``; with equal replicas per setting the mean is the mean over settings of each setting's mean."""

    i = verdicts.mean_interval(rows[metric].to_numpy(dtype=np.float64), groups=model_of(rows), level=level)
    return i.estimate, i.low, i.high


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The metric columns of ``table`` signed so that higher is better (lower-is-better metrics negated)."""
    sign = pd.Series({m: 1.0 if higher else -1.0 for m, higher in HIGHER_IS_BETTER.items()})
    return table[list(HIGHER_IS_BETTER)] * sign


def radar_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's axes (spec §3.5): each metric oriented, then min–max scaled across the rows (methods) to [0, 1],
    1 = best; a metric on which every method ties is set to 0.5."""
    o = oriented(table)
    return ((o - o.min()) / (o.max() - o.min()).replace(0, float("nan"))).fillna(0.5)

"""SaCo's experiments: SaCo and the four cumulative metrics per sample (spec §3.2), the maps they score and their
per-image table (the random-vs-methods notebook's work, computable in parts), their orientation (higher = more
faithful), the radar rescaling of Fig. 4 and the interval of a mean over the trained models; the (model, image) ×
method tables and the trained model of every row (the unit of replication: a setting × replica); Fig. 3's case study
per image and method (:func:`case_study_frame`); and Fig. 2's rank correlations between the metrics per trained model
and method, each with its chance level (:func:`rank_correlations`, :func:`per_model_correlations`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import explainers, metrics, perturb
from faithlab_study import verdicts
from faithlab_study.verdicts import replication

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "pixel_map", "map_seeds", "random_maps", "per_image_frame",
           "random_saco_frame", "oriented", "radar_scale", "models_mean_interval", "case_study_frame",
           "rank_correlations", "per_model_correlations"]

HIGHER_IS_BETTER = {"SaCo": True, "AUC": False, "AOPC": True, "LOdds": False, "Comprehensiveness": False}
"""Direction of each metric of the SaCo comparison (spec §3.2): True when a higher score means more faithful."""
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
              batch_size: int = 256, generator=None, sample_seeds: torch.Tensor | None = None) -> torch.Tensor:
    """The ``(B, 1, H, W)`` pixel map the comparison scores for a registered explainer ``method`` with its
    ``options``, explaining ``target``: its channels summed, signed for a signed relevance method (``signed``: LRP,
    ATTCAT, whose authors rank pixels by evidence for the class), of |a| for the others. A random method draws from
    ``sample_seeds`` (one seed per row, ``explain``'s; see :func:`map_seeds`) when given, else from ``generator``."""
    a = explainers.explain(model, x, target, method=method, batch_size=batch_size, generator=generator,
                           sample_seeds=sample_seeds, **options)
    return a.sum(1, keepdim=True) if signed else a.abs().sum(1, keepdim=True)


def map_seeds(seed: int, setting: str, replica: int, draw: str, index) -> torch.Tensor:
    """The per-image seeds of a random map of trained model (``setting``, ``replica``) under the notebook's ``seed``:
    ``keyed_seed(draw_seed(seed, setting, replica, draw), i)`` for every global image index ``i`` of ``index``, so
    that each replica, setting, notebook seed and draw (e.g. ``"random map"``) gets its own maps, and an image its
    own whatever batch or shard it is drawn in."""
    key = replication.draw_seed(seed, str(setting), int(replica), draw)
    return perturb.keyed_seeds(key, torch.as_tensor(list(index), dtype=torch.int64))


def random_maps(models: Mapping[tuple, tuple], predicted: Mapping[tuple, torch.Tensor], spec: tuple, *, seed: int,
                batch_size: int = 256) -> dict[tuple, torch.Tensor]:
    """The Random method's maps (``spec``: its ``(method, options, signed)``) of every image of every model of
    ``models`` (``{(setting, replica): (model, x, y)}``), explaining ``predicted[(setting, replica)]``, each image
    drawn from :func:`map_seeds` (draw ``"random map"``): drawn up front for the whole run, so that a shard of the
    images reads the maps of the whole."""
    return {key: pixel_map(model, x, predicted[key], *spec, batch_size=batch_size,
                           sample_seeds=map_seeds(seed, key[0], key[1], "random map", range(len(x))).to(x.device))
            for key, (model, x, _) in models.items()}


def per_image_frame(models: Mapping[tuple, tuple], methods: Mapping[str, tuple], images, *,
                    predicted: Mapping[tuple, torch.Tensor], random_maps: Mapping[tuple, torch.Tensor], k: int = 10,
                    k_values: Sequence[int] = (), random: str = "Random", batch_size: int = 256,
                    generator=None, seed: int | None = None) -> pd.DataFrame:
    """One row per (setting, replica, method, image) for the images ``images`` (indices; those beyond a setting's
    test set are skipped): :func:`per_sample_metrics` of the method's map and SaCo at every K of ``k_values``
    (columns ``"SaCo K=<K>"``).

    models: ``{(setting, replica): (model, x, y)}``; methods: ``{name: (method, options, signed)}`` for
    :func:`pixel_map`, explaining the class in ``predicted[(setting, replica)]``; the ``random`` method's maps are
    read from ``random_maps`` (drawn beforehand for every image, so that a shard of the images gets the maps of the
    whole run). Another random method draws, with the notebook's ``seed`` given, per image from :func:`map_seeds`
    (its setting, replica and name: each trained model its own draws, a shard the whole's), else from
    ``generator``. Computing the frame in parts of ``images`` and concatenating gives the whole frame."""
    frames = []
    for key, (model, x, y) in models.items():
        idx = torch.tensor([i for i in images if i < len(x)], dtype=torch.long)
        if not len(idx):
            continue
        for name, spec in methods.items():
            keyed = seed is not None and name != random and explainers.is_random(spec[0])
            seeds = map_seeds(seed, key[0], key[1], name, idx.tolist()).to(x.device) if keyed else None
            a = (random_maps[key][idx] if name == random else
                 pixel_map(model, x[idx], predicted[key][idx], *spec, batch_size=batch_size, generator=generator,
                           sample_seeds=seeds))
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
    (``explain``'s ``sample_seeds``: :func:`map_seeds` of ``seed``, the model's setting and replica, draw ``"random
    saco"`` and the sample's index), so every trained model draws its own maps, and its rows do not depend on the
    others.
    Random's SaCo is the cheapest of the comparison (one map, K + 1 passes per image): S1's "near 0" part reads it
    on more images than the other methods are scored on."""
    frames = []
    for (setting, replica), (model, x, target) in models.items():
        seeds = map_seeds(seed, setting, replica, "random saco", range(len(x))).to(x.device)
        a = explainers.explain(model, x, target, method="random", batch_size=batch_size, sample_seeds=seeds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            value = metrics.saco(model, x, a.abs().sum(1, keepdim=True), k=k, target=target, batch_size=batch_size)
        frames.append(pd.DataFrame({"setting": setting, "replica": replica, "sample": np.arange(len(x)),
                                    "SaCo": value.cpu().double().numpy()}))
    return pd.concat(frames, ignore_index=True)


def models_mean_interval(rows: pd.DataFrame, metric: str, *, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``metric`` over the trained models of ``rows`` (each model's mean over its images; NaN left out) and
    its ``level`` t interval on those model means (:func:`faithlab_study.verdicts.mean_interval`, the claims' interval) →
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


def case_study_frame(model: Callable, x: torch.Tensor, maps: dict[str, torch.Tensor], *, k: int = 10,
                     saturation: float = 0.9, at: float = 0.3, batch_size: int = 256) -> pd.DataFrame:
    """Fig. 3's quantities for every image of ``x`` and every map of ``maps`` (``{method: (B, 1, H, W)}``),
    explaining the predicted class: SaCo (K = ``k``), AOPC, p(ŷ|x), the cumulative drop p(ŷ|x) − p(ŷ|x̃_top) after
    removing the top ``at`` of the pixels, the largest cumulative drop, and ``saturated`` (the drop at ``at`` is at
    least ``saturation`` of the largest: the paper's "almost unchanged after the removal of the top 30 %"), and the
    drops ∇pred of the most and of the least salient group removed alone (the mechanism premise). One row per image ×
    method (columns image, method, SaCo, AOPC, p, drop at 30 %, max drop, saturated, first group drop, last group
    drop)."""
    rows = []
    for name, a in maps.items():
        details = metrics.saco_details(model, x, a, k=k, batch_size=batch_size)
        aopc = metrics.aopc_details(model, x, a, batch_size=batch_size)
        fractions = aopc["fractions"].to("cpu", torch.float64)
        j = int((fractions - at).abs().argmin())
        drop = aopc["drop"].to("cpu", torch.float64)
        at_drop, top = drop[:, j], drop.amax(1)
        rows.append(pd.DataFrame({"image": range(len(x)), "method": name,
                                  "SaCo": details["saco"].cpu().double().numpy(),
                                  "AOPC": aopc["score"].cpu().double().numpy(),
                                  "p": details["prob"].cpu().double().numpy(),
                                  f"drop at {at:.0%}": at_drop.numpy(), "max drop": top.numpy(),
                                  "saturated": (at_drop >= saturation * top).numpy(),
                                  FIRST: details["drop"][:, 0].cpu().double().numpy(),
                                  LAST: details["drop"][:, -1].cpu().double().numpy()}))
    return pd.concat(rows, ignore_index=True)


def rank_correlations(per_sample: pd.DataFrame, *, methods, n_null: int = 200, seed: int = 0) -> pd.DataFrame:
    """Fig. 2's correlations (spec §3.3): per setting × method of ``methods``, Spearman's ρ across the samples
    between SaCo and each cumulative metric ("SaCo vs existing") and among the four cumulative metrics ("among
    existing"), the metrics oriented so that higher is better; columns setting, (replica,) method, pair, kind, rho,
    |rho|, images (the samples it rests on), and
    the chance level of each pair: ``null rho`` / ``null |rho|``, the mean of ρ / |ρ| over ``n_null`` shufflings of
    the second metric's samples (|ρ| is above 0 at chance, about 0.8 / √n for n samples), drawn per trained model
    and method from ``draw_seed(seed, setting, replica, "shuffles", method)`` (replica 0 without a replica column):
    each unit its own shufflings, whatever the other units of the frame)."""
    from faithlab.metrics import statistics as stats

    existing = [m for m in HIGHER_IS_BETTER if m != "SaCo"]
    pairs = [(a, b) for i, a in enumerate(["SaCo", *existing]) for b in existing[max(0, i):] if a != b]
    rows = []
    frame = per_sample[per_sample["method"].isin(list(methods))]
    keys = ["setting", *replication.unit_keys(frame, "method")]
    for key, unit in frame.groupby(keys, sort=False):
        names = dict(zip(keys, key, strict=True))
        values = {m: torch.tensor(v.to_numpy(dtype=np.float64)) for m, v in oriented(unit).items()}
        n = len(unit)
        g = torch.Generator().manual_seed(replication.draw_seed(seed, str(names["setting"]), int(names.get(
            "replica", 0)), "shuffles", str(names["method"])))
        perm = torch.argsort(torch.rand(n_null, n, generator=g), dim=1)  # the same shufflings for every pair
        for a, b in pairs:
            rho = stats.spearman(values[a], values[b]).item()
            null = stats.spearman(values[a].expand(n_null, -1), values[b][perm])
            rows.append({**names, "pair": f"{a} vs {b}",
                         "kind": "SaCo vs existing" if a == "SaCo" else "among existing", "rho": rho,
                         "|rho|": abs(rho), "images": n, "null rho": float(null.nanmean()),
                         "null |rho|": float(null.abs().nanmean())})
    return pd.DataFrame(rows)


def model_keys(corr: pd.DataFrame) -> list[str]:
    return [c for c in ("setting", "replica") if c in corr.columns]


def per_model_correlations(corr: pd.DataFrame, *, methods=None) -> pd.DataFrame:
    """Per trained model (setting × replica): the mean over the methods (``methods`` present; None: all) of ρ for
    each "SaCo vs <metric>" pair, the mean ρ among the existing metrics (all six pairs), the mean ρ of SaCo with them,
    the gap among − SaCo, and the images per method (columns named so; NaN ρ of a constant metric skipped)."""
    if methods is not None:
        corr = corr[corr["method"].isin(list(methods))]
    if not len(corr):
        raise ValueError("corr holds no correlation of the given methods")
    by = model_keys(corr)
    if not by:
        raise ValueError("corr must name the trained model of every row (a setting and/or replica column)")
    saco = corr[corr["kind"] == "SaCo vs existing"]
    out = saco.pivot_table(index=by, columns="pair", values="rho", aggfunc="mean")
    out.columns.name = None
    out["among existing"] = corr[corr["kind"] == "among existing"].groupby(by)["rho"].mean()
    out["SaCo vs existing"] = saco.groupby(by)["rho"].mean()
    out["gap"] = out["among existing"] - out["SaCo vs existing"]
    out["images"] = corr.groupby(by)["images"].max() if "images" in corr else np.nan
    return out

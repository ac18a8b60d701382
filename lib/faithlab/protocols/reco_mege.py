"""ReCo/MeGe protocols (spec §4): the four tasks and their stand-ins, k-fold families of models (normal, degraded,
1-Lipschitz), every model's explanations of every sample, the S= / S≠ sets per method with the chance level of every
pair (the image pairings shuffled; cached on disk, so the notebooks that need the same sets compute them once),
paired bootstrap draws of ReCo and MeGe, tidy frames, and the claims R1 (:func:`claim_gradcam_best_reco`) and R2
(:func:`claim_mege_falls`), each with that chance level as its null.

The metric lives in :mod:`faithlab.metrics.crossfold`; the training in :func:`faithlab.train.cross_train`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import torch

import faithlab
from faithlab import _validate, data, explainers, paths, perturb, train, verdicts
from faithlab.metrics.crossfold import (Pairs, average_stability_details, details_from_pairs, explanation_distance,
                                        flatten_maps, mu_fidelity_details, reco_mege_details_from_predictions,
                                        shuffled_distances, shuffled_partners)
from faithlab.protocols.setup import Setting
from faithlab.train.cache import cache_key

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "Family", "load_task", "family", "method_options", "explain_family",
           "with_null", "distance_sets", "null_frame", "claim_gradcam_best_reco", "claim_mege_falls", "scores",
           "bootstrap_scores", "score_draws", "histogram_frame", "comparison", "accuracy_frame", "chance_premise",
           "test_accuracy", "comparable_premise", "family_premise", "accuracy_summary", "claim_table3", "claim_lipschitz",
           "steps_diagnostic",
           "fidelity_stability", "PAPER", "rank_agreement", "beside", "identical_models", "cam_grid", "families",
           "FamilySettings", "claim_identical_models"]


def _tasks(p: Mapping) -> str:
    """The datasets in a set-up table: the paper's, or the stand-ins' loaders (:data:`TASKS`)."""
    if p["dataset"] == "paper":
        return f"{', '.join(p['tasks'])}, {p['image_size']} px"
    loaders = dict.fromkeys(TASKS[t]["stand_in"].replace("_", " ") for t in p["tasks"])
    return f"{len(p['tasks'])} stand-ins ({', '.join(loaders)}), {p['image_size']} px"


def _degradations(names) -> str:
    """Degradation names folded by kind, ``Normal`` left out: ``Limited 50%, Limited 25%`` → ``Limited 50/25 %``."""
    kinds: dict[str, list[str]] = {}
    for name in names:
        kind, _, level = name.partition(" ")
        if level:
            kinds.setdefault(kind, []).append(level.rstrip("%"))
    return ", ".join(f"{kind} {'/'.join(levels)}" for kind, levels in kinds.items()) + " %" if kinds else "none"


SETUP: tuple[Setting, ...] = (
    Setting("datasets", "Fashion-MNIST, EuroSAT, CIFAR-10, CIFAR-100", "reco_mege/tables", _tasks),
    Setting("images in D (k-fold data)", "not stated in the text", "reco_mege/tables", "{n:,} per dataset"),
    Setting("k folds (models per family)", "k = 5, accuracies within ±3 %", "reco_mege/tables", "k = {k}"),
    Setting("model, training", "ResNet-18 (base width 26–46), epochs not stated", "reco_mege/tables",
            lambda p: f"ResNet-18 at {p['width_scale']:g}× width, {p['epochs']} epochs"),
    Setting("methods (Tables 1–2)", "SM, GI, IG, SG, GC", "reco_mege/tables",
            lambda p: ", ".join("SM" if m == "SA" else m for m in p["methods"])),
    Setting("IG points, SmoothGrad samples", "IG m = 60; SG m = 60, σ = 0.2", "reco_mege/tables",
            lambda p: f"IG m = {p['ig_steps']}; SG m = {p['sg_samples']}, σ = {METHODS['SG'][1]['stdevs']:g}"),
    Setting("degradations (Tables 7–14)", "Limited 75/50/25, Randomized 5/10/30, Switched 5/10/30 %",
            "reco_mege/degradations", lambda p: _degradations(p["degradations"])),
    Setting("degradations on", "all four datasets", "reco_mege/degradations", lambda p: ", ".join(p["tasks"])),
    Setting("1-Lipschitz family (Tables 4–5)", "Deel-Lip CNN 48-96-96, CIFAR-10", "reco_mege/lipschitz",
            lambda p: f"1-Lipschitz CNN at {p['lipschitz_width']:g}× width, {p['lipschitz_epochs']} epochs"),
    Setting("μF (Table 3)", "15 % subsets, 10,000 test images", "reco_mege/comparison",
            lambda p: f"{p['n_subsets']} subsets of {p['subset_fraction'] * 100:g} %, {p['n_eval']:,} images"),
    Setting("S_avg (Table 3)", "radius r = 0.1, 10,000 test images", "reco_mege/comparison",
            lambda p: f"r = {p['radius']:g}, {p['n_neighbours']} neighbours, {p['n_eval']:,} images"),
    Setting("distance checks (Figs. 2–3)", "32×32 masks, 100 interpolation steps", "reco_mege/distances",
            "{size}×{size} masks, {steps} steps; {repeats} noise repeats"),
)
"""The chapter's set-up table, paper (spec §4.1–4.8) against ours (the executed notebooks' parameters)."""

TASKS: dict[str, dict] = {
    "FashionMNIST": {"stand_in": "digits", "kwargs": {"color": False}, "paper": "fashion_mnist",
                     "base_width": 26, "dropout": 0.4, "note": "real 8×8 handwritten digits, grey"},
    "EuroSAT": {"stand_in": "canvas_digits", "kwargs": {"color": False, "r": 0.3}, "paper": "eurosat",
                "base_width": 46, "dropout": 0.25, "note": "a digit placed at random on a grey canvas"},
    "CIFAR-10": {"stand_in": "digits", "kwargs": {"color": True}, "paper": "cifar10",
                 "base_width": 32, "dropout": 0.25,
                 "note": "real handwritten digits painted with random foreground and background colours"},
    "CIFAR-100": {"stand_in": "canvas_digits", "kwargs": {"color": False, "r": 0.2}, "paper": "cifar100",
                  "base_width": 32, "dropout": 0.25,
                  "note": "as EuroSAT's stand-in with a smaller digit (harder; still 10 classes)"},
}
"""The paper's four datasets (§4.2), their embedded stand-ins of increasing difficulty, and the ResNet-18 base
widths and dropout of appendix A.3."""

METHODS: dict[str, tuple[str, dict]] = {
    "IG": ("integrated_gradients", {"n_steps": 60, "integration": "riemann_trapezoid"}),
    "SG": ("smoothgrad", {"nt_samples": 60, "stdevs": 0.2, "relative": True}),
    "SA": ("saliency", {}),
    "GI": ("input_x_gradient", {}),
    "GC": ("gradcam", {}),
    "SHAP": ("expected_gradients", {"n_samples": 60}),
}
"""§4.7: IG zero baseline, 60 points, trapezoid rule; SmoothGrad 60 samples, σ = 0.2 of the input range; Saliency;
Gradient ⊙ Input; Grad-CAM at the model's last conv layer (positive part); SHAP as Expected Gradients (a background
of training images; CIFAR-10 only in the paper)."""

DEGRADATIONS: dict[str, dict] = {
    "Normal": {},
    "Limited 75%": {"limited": 0.75}, "Limited 50%": {"limited": 0.5}, "Limited 25%": {"limited": 0.25},
    "Randomized 5%": {"randomised": 0.05}, "Randomized 10%": {"randomised": 0.1}, "Randomized 30%": {"randomised": 0.3},
    "Switched 5%": {"switched": 0.05}, "Switched 10%": {"switched": 0.1}, "Switched 30%": {"switched": 0.3},
}
"""Rows of Tables 7–14 (spec §4.5)."""


@dataclass
class Family:
    """k cross-trained models on a task's D: the models, the data, their predictions ``(k, N)``, and a key that
    identifies them (the models' cache keys and the degradation)."""

    name: str
    task: str
    cross: train.CrossTrained
    data: data.TensorData
    predictions: torch.Tensor
    key: str


def load_task(task: str, *, n: int, image_size: int, seed: int = 0, dataset: str | None = None,
              data_dir: str | None = None, split: str = "train") -> data.TensorData:
    """D for a task: the first ``n`` images of the stand-in's ``split`` (``dataset=None``) or of the paper's dataset
    (``dataset="paper"``: :data:`TASKS`' loader reading ``data_dir``, resized to ``image_size`` by the loader's own
    transform where it has one). ``split="test"`` gives the test set on which the paper checks that the k models
    have comparable accuracy (:func:`comparable_premise`)."""
    _validate.one_of(task, "task", tuple(TASKS))
    _validate.one_of(split, "split", ("train", "test"))
    n = _validate.positive_int(n, "n")
    spec = TASKS[task]
    if dataset == "paper":
        ds = data.load(spec["paper"], split=split, data_dir=data_dir)
        x, y = data.to_tensors(ds, n)
        info = {**getattr(ds, "info", {}), "name": spec["paper"], "n_classes": int(y.max()) + 1}
        info.setdefault("class_names", [str(c) for c in range(info["n_classes"])])
        info.setdefault("mean", None)
        info.setdefault("std", None)
        return data.TensorData(x, y, info=info)
    if dataset is not None:
        raise ValueError(f"dataset must be None (the stand-in) or 'paper', got {dataset!r}")
    ds = data.load(spec["stand_in"], split=split, size=image_size, seed=seed, **spec["kwargs"])
    return ds.subset(torch.arange(min(n, len(ds))))


def family(task: str, d: data.TensorData, *, model: str = "resnet18_cifar", width_scale: float = 1.0,
           model_config: dict | None = None, config: train.TrainConfig, k: int = 5, degradation: str = "Normal",
           seed: int = 0, device: str | torch.device = "cpu", batch_size: int = 256, name: str | None = None) -> Family:
    """Cross-train (or load from the cache) the k models of one family on D.

    model "resnet18_cifar": the task's base width (appendix A.3) × ``width_scale`` and its dropout; any other
    registered model takes ``model_config`` (e.g. ``"lipschitz_cnn"``). degradation: a row of
    :data:`DEGRADATIONS`."""
    _validate.one_of(degradation, "degradation", tuple(DEGRADATIONS))
    spec = TASKS[task]
    if model == "resnet18_cifar" and model_config is None:
        model_config = {"base_width": max(2, round(spec["base_width"] * width_scale)), "dropout": spec["dropout"]}
    cfg = {"in_channels": d.x.shape[1], "n_classes": d.n_classes, **(model_config or {})}
    data_key = {"task": task, "dataset": d.info.get("name"), "n": len(d), "shape": list(d.x.shape[1:]),
                "seed": seed}
    ct = train.cross_train(model, cfg, d, config, data_key=data_key, k=k, seed=seed, device=device, progress=False,
                           **DEGRADATIONS[degradation])
    d = d.to(next(ct.models[0].parameters()).device)
    key = cache_key({"models": [h["key"] for h in ct.histories], "degradation": DEGRADATIONS[degradation],
                     "seed": seed, "version": faithlab.__version__})
    return Family(name or degradation, task, ct, d, ct.predictions(d.x, batch_size=batch_size), key)


def method_options(method: str, *, ig_steps: int | None = None, sg_samples: int | None = None,
                   background: torch.Tensor | None = None) -> tuple[str, dict]:
    """The registered explainer and its options for a method of :data:`METHODS`, with optional cheaper settings."""
    _validate.one_of(method, "method", tuple(METHODS))
    name, options = METHODS[method]
    options = dict(options)
    if method == "IG" and ig_steps:
        options["n_steps"] = ig_steps
    if method == "SG" and sg_samples:
        options["nt_samples"] = sg_samples
    if method == "SHAP":
        if background is None:
            raise ValueError("method 'SHAP' (expected gradients) needs background images")
        options["background"] = background
    return name, options


def explain_family(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, **settings) -> torch.Tensor:
    """Every model's explanation of every sample of D → ``(k, N, *map_shape)``, each for the class that model
    predicts (the paper, spec §6.15)."""
    name, options = method_options(method, **settings)
    maps = [explainers.explain(m, fam.data.x, fam.predictions[i].to(fam.data.x.device), method=name,
                               batch_size=batch_size, generator=seed + i, **options)
            for i, m in enumerate(fam.cross.models)]
    return torch.stack(maps)


_NULL_VERSION = 1
"""What the cached null of :func:`distance_sets` is (shuffled_partners over the samples with an S= pair, stream
:data:`_NULL_STREAM` of the seed); a cache file without it, or with another version, is recomputed."""
_NULL_STREAM = 1  # the shuffled pairings' generator: keyed_seed(seed, _NULL_STREAM), apart from the explainers' seeds


def with_null(pairs: Pairs, shuffled: torch.Tensor, partners: torch.Tensor | None = None) -> dict:
    """The dict of :func:`faithlab.metrics.crossfold.details_from_pairs` with the chance level of its pairs added:
    ``shuffled`` ``(N, k − 1)`` (:func:`faithlab.metrics.crossfold.shuffled_distances`, the same pairs with the second
    model's map of another image) and ``partners`` ``(N,)`` (that other image; None when unknown)."""
    if not isinstance(shuffled, torch.Tensor) or tuple(shuffled.shape) != tuple(pairs.distance.shape):
        raise ValueError(f"shuffled must be a tensor shaped like pairs.distance {tuple(pairs.distance.shape)}, got "
                         f"{tuple(getattr(shuffled, 'shape', ()))}")
    return {**details_from_pairs(pairs), "shuffled": shuffled, "partners": partners}


def distance_sets(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, distance: str = "sqrt",
                  cache: bool = True, **settings) -> dict:
    """:func:`faithlab.metrics.crossfold.reco_mege_details_from_predictions` for one family and method (the family's
    predictions), with the chance level of every pair (``"shuffled"``, see :func:`with_null`): the same distance
    with the second model's map of another image, the image pairings shuffled within the samples that have an S=
    pair (:func:`faithlab.metrics.shuffled_partners`, generator ``keyed_seed(seed, 1)``, drawn once per family, so
    every method of a family gets the same pairings and batch_size changes nothing). Both are computed from the same
    maps and cached under ``<cache>/reco_mege/`` (keyed by the models, the method and its settings), so another
    notebook asking for the same sets loads them (``torch.load(weights_only=True)``); a cache file written before
    the null existed is recomputed."""
    name, options = method_options(method, **settings)
    key = cache_key({"family": fam.key, "method": name, "options": {k: v for k, v in options.items()
                                                                    if not isinstance(v, torch.Tensor)},
                     "background": "train" if "background" in options else None, "distance": distance, "seed": seed,
                     "n": len(fam.data)})
    file = paths.cache_dir() / "reco_mege" / f"{key}.pt"
    labels, folds = fam.data.y.cpu(), fam.cross.folds
    if cache and file.exists():
        try:
            state = torch.load(file, weights_only=True)
            if state.get("null_version") == _NULL_VERSION:
                return with_null(Pairs(state["distance"], state["other"], state["kind"]), state["shuffled"],
                                 state["partners"])
        except Exception:  # noqa: BLE001 — any unreadable file (truncated, not a torch file) is recomputed
            pass
        file.unlink(missing_ok=True)  # unreadable, or written before the null existed: recomputed below
    maps = explain_family(fam, method, batch_size=batch_size, seed=seed, **settings)
    channel_dim = -3 if maps.ndim == 5 else None
    details = reco_mege_details_from_predictions(maps, fam.predictions.to(maps.device), labels.to(maps.device),
                                                 folds.to(maps.device), distance=distance, channel_dim=channel_dim,
                                                 batch_size=batch_size)
    pairs = Pairs(*(t.cpu() for t in (details["pairs"].distance, details["pairs"].other, details["pairs"].kind)))
    partners = shuffled_partners((pairs.kind == 0).any(1), generator=perturb.keyed_seed(seed, _NULL_STREAM))
    shuffled = shuffled_distances(maps, folds.to(maps.device), partners.to(maps.device), distance=distance,
                                  channel_dim=channel_dim, batch_size=batch_size).cpu()
    if cache:
        paths.atomic_write(file, lambda tmp: torch.save({"distance": pairs.distance, "other": pairs.other,
                                                         "kind": pairs.kind, "shuffled": shuffled,
                                                         "partners": partners, "null_version": _NULL_VERSION}, tmp))
    return with_null(pairs, shuffled, partners)


def scores(details: dict[str, dict], **columns) -> pd.DataFrame:
    """One row per method: ReCo, MeGe, xplique's scan, ReCo_AUC, |S=|, |S≠| and the dropped counts (+ ``columns``)."""
    rows = [{**columns, "method": m, "ReCo": d["reco"], "MeGe": d["mege"], "ReCo (xplique scan)": d["reco_scan"],
             "ReCo_AUC": d["reco_auc"], **{f"n {k}": v for k, v in d["counts"].items()}}
            for m, d in details.items()]
    return pd.DataFrame(rows)


def score_draws(pairs: Pairs, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ReCo and MeGe of one method under sample weights ``(n_boot, N)`` (bootstrap multiplicities) → two
    ``(n_boot,)`` tensors; the weighted form of the exact ReCo (same cuts, weighted counts)."""
    d = pairs.distance.double()
    keep = ~torch.isnan(d) & (pairs.kind < 2)
    sample = torch.arange(d.shape[0])[:, None].expand_as(d)[keep]
    values, is_eq = d[keep], (pairs.kind[keep] == 0)
    if values.numel() == 0:
        nan = torch.full((weights.shape[0],), math.nan, dtype=torch.float64)
        return nan, nan.clone()
    order = torch.argsort(values, stable=True)
    values, is_eq, sample = values[order], is_eq[order], sample[order]
    w = weights.double()[:, sample]                                        # (n_boot, m)
    w_eq, w_ne = w * is_eq, w * ~is_eq
    tot_eq, tot_ne = w_eq.sum(1, keepdim=True), w_ne.sum(1, keepdim=True)
    last = torch.ones_like(values, dtype=torch.bool)                       # a cut after the last of equal values
    last[:-1] = values[1:] != values[:-1]
    j = w_eq.cumsum(1) / tot_eq + (tot_ne - w_ne.cumsum(1)) / tot_ne - 1.0
    reco = j[:, last].max(1).values.clamp(min=0.0)
    mege = 1.0 / (1.0 + (w_eq * values).sum(1) / tot_eq[:, 0])
    return reco, mege


def _boot_weights(n: int, n_boot: int, seed: int) -> torch.Tensor:
    """Bootstrap multiplicities ``(n_boot, n)`` float64 of n samples (generator ``seed``): the same resamples for any
    method or family on the same D."""
    idx = torch.randint(n, (n_boot, n), generator=torch.Generator().manual_seed(seed))
    return torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(1, idx, torch.ones(n_boot, n, dtype=torch.float64))


def bootstrap_scores(details: dict[str, dict], *, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap over samples (the same resamples for every method): ``n_boot`` draws of ReCo and MeGe per
    method → tidy frame (``method``, ``draw``, ``ReCo``, ``MeGe``)."""
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed)
    frames = []
    for m, d in details.items():
        reco, mege = score_draws(d["pairs"], weights)
        frames.append(pd.DataFrame({"method": m, "draw": np.arange(n_boot), "ReCo": reco.numpy(),
                                    "MeGe": mege.numpy()}))
    return pd.concat(frames, ignore_index=True)


def comparison(draws: pd.DataFrame, estimates: dict[str, float], *, a: str, b: str, score: str = "ReCo",
               level: float = 0.95):
    """Percentile interval of score(a) − score(b) from paired bootstrap draws → :class:`faithlab.verdicts.Comparison`
    (outcome win / loss / tie for ``a``; ``"undefined"`` with NaN bounds when a score is undefined, e.g. S≠ empty,
    in the data or in most draws)."""
    from faithlab.verdicts import Comparison, comparison_from_draws
    da = draws[draws.method == a].sort_values("draw")[score].to_numpy()
    db = draws[draws.method == b].sort_values("draw")[score].to_numpy()
    diff, estimate = da - db, estimates[a] - estimates[b]
    if math.isnan(estimate) or np.isfinite(diff).sum() < max(100, len(diff) // 2):
        return Comparison(math.nan, math.nan, math.nan, level, 0, "undefined")
    return comparison_from_draws(estimate, diff, level=level)


def histogram_frame(details: dict[str, dict], **columns) -> pd.DataFrame:
    """S= and S≠ distances per method, tidy (``method``, ``set``, ``distance``) for Fig. 5."""
    frames = []
    for m, d in details.items():
        for name, values in (("S=", d["s_equal"]), ("S≠", d["s_unequal"])):
            frames.append(pd.DataFrame({**columns, "method": m, "set": name, "distance": values.numpy()}))
    return pd.concat(frames, ignore_index=True)


def chance_premise(fam: Family, *, factor: float = 2.0) -> str | None:
    """Premise of every verdict on a family: its models must beat chance clearly (mean held-out accuracy ≥
    ``factor`` / n_classes); else S= is tiny and ReCo/MeGe compare explanations of guesses → the reason, or None."""
    chance = 1.0 / fam.data.n_classes
    acc = float(fam.cross.accuracy.mean())
    if acc < factor * chance:
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
    held-out block accuracies are used (each model on its own block: blocks of a small D add their sampling noise)."""
    if not 0 <= float(tolerance) < 1:
        raise ValueError(f"tolerance must lie in [0, 1), got {tolerance!r}")
    acc = test_accuracy(fam, test, batch_size=batch_size) if test is not None else fam.cross.accuracy.double()
    spread = float((acc - acc.mean()).abs().max())
    if spread > tolerance + 1e-12:
        where = f"on the test set ({len(test)} images)" if test is not None else "on their held-out blocks"
        return (f"{fam.task} {fam.name}: the {fam.cross.k} models are not of comparable accuracy {where}: "
                f"{float(acc.min()):.3f}–{float(acc.max()):.3f}, up to {spread:.3f} from their mean "
                f"(the paper keeps them within ±{tolerance:.0%})")
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


def fidelity_stability(model, x: torch.Tensor, y: torch.Tensor, method: str, *, n_subsets: int = 200,
                       subset_fraction: float = 0.15, n_neighbours: int = 200, radius: float = 0.1,
                       output: str = "prob", seed: int = 0, batch_size: int = 256, **settings) -> pd.DataFrame:
    """Per-sample μF (Pearson, zero baseline, 15 % pixel subsets) and S_avg (squared ℓ2, ‖u‖₁ ≤ radius, common
    random numbers: a sample and its neighbours are explained with the same seed) of one method on one model
    (Table 3), explaining the label → frame (``sample``, ``μF``, ``μF (shuffled)``, ``S_avg``).

    ``μF (shuffled)`` is μF's chance level: the same subsets and output drops scored with the method's map of
    another image (:func:`faithlab.metrics.shuffled_partners` over the samples, generator ``keyed_seed(seed, 1)``),
    so a method whose μF does not exceed it orders pixels no better than an unrelated map of its own kind."""
    name, options = method_options(method, **settings)
    explain = functools.partial(explainers.explain, method=name, batch_size=batch_size, generator=seed, **options)
    attributions = explain(model, x, y)
    mu_options = dict(n_subsets=n_subsets, subset_fraction=subset_fraction, output=output, generator=seed,
                      batch_size=batch_size)
    mu = mu_fidelity_details(model, x, attributions, target=y, **mu_options)["mu_f"]
    partners = shuffled_partners(torch.ones(len(x), dtype=torch.bool, device=x.device),
                                 generator=perturb.keyed_seed(seed, _NULL_STREAM))
    mu_null = mu_fidelity_details(model, x, attributions[partners], target=y, **mu_options)["mu_f"]
    # common random numbers: each sample and its neighbours share one seed, so a stochastic method's S_avg measures
    # how its map changes within the radius, not its Monte-Carlo noise. S_avg explains x itself (attributions None):
    # the attributions for μF draw their noise from `generator`, not from the samples' seeds
    def explainer(m, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None) -> torch.Tensor:
        return explain(m, z, t, sample_seeds=seeds)

    s = average_stability_details(model, x, None, explainer=explainer, target=y, n_neighbours=n_neighbours,
                                  radius=radius, generator=seed, batch_size=batch_size)["s_avg"]
    return pd.DataFrame({"method": method, "sample": np.arange(len(x)), "μF": mu.cpu().numpy(),
                         "μF (shuffled)": mu_null.cpu().numpy(), "S_avg": s.cpu().numpy()})


def claim_table3(per_sample: pd.DataFrame, *, premise: str | None = None, target: str = "GC",
                 stable: Sequence[str] = ("GC", "SG"), n_boot: int = 4000, level: float = 0.95,
                 seed: int = 0) -> verdicts.Claim:
    """Claim of Table 3: Grad-CAM (``target``) has the highest μF, and Grad-CAM and SmoothGrad (``stable``) the
    lowest S_avg (CIFAR-10).

    per_sample: :func:`fidelity_stability` frames of every method, concatenated (``method``, ``sample``, ``μF``,
    ``μF (shuffled)``, ``S_avg``); a NaN μF (a constant map) counts as 0, as xplique does. premise: a reason the
    family cannot be tested (:func:`family_premise`), or None. Null: each method's μF against the same μF with its
    map of another image (paired bootstrap over samples); without any method above that chance level μF does not
    discriminate on this model and the claim is not testable here. Rule, two parts, each decided by paired
    bootstraps over samples (``level``): (a) ``target``'s μF is above the best other method's; (b) every method of
    ``stable`` has a lower S_avg than every other method. Reproduced when both hold, partly when one does, not
    reproduced when neither. Table: one row per method (means, chance level, comparisons)."""
    need = {"method", "sample", "μF", "μF (shuffled)", "S_avg"}
    if not isinstance(per_sample, pd.DataFrame) or not need <= set(per_sample.columns):
        raise ValueError(f"per_sample must be a frame with columns {sorted(need)} (fidelity_stability)")
    methods = list(dict.fromkeys(per_sample["method"]))
    if target not in methods or len(methods) < 2:
        raise ValueError(f"per_sample must hold {target!r} and at least one other method, got {methods}")
    lacking = [m for m in stable if m not in methods]
    if lacking or len(methods) <= len(set(stable)):
        reason = (f"the run lacks {', '.join(lacking)}" if lacking else
                  f"the run has no method besides {', '.join(stable)} to compare their S_avg with")
        means = per_sample.groupby("method", sort=False)[["μF", "μF (shuffled)", "S_avg"]].mean().reset_index()
        return verdicts.Claim(
            "Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (CIFAR-10)",
            rule="(a) Grad-CAM's μF above every other method's and (b) Grad-CAM's and SmoothGrad's S_avg below every "
                 "other method's, paired bootstraps over samples",
            premise=reason, paper_value="μF GC 0.907 (next SG 0.305); S_avg GC 0.012, SG 0.024, others > 2",
            our_value="; ".join(f"{r.method} μF {r['μF']:.3f}, S_avg {r['S_avg']:.3g}" for _, r in means.iterrows()),
            verdict=verdicts.ladder(False, untestable=reason), table=means)
    wide = {c: per_sample.pivot(index="sample", columns="method", values=c).reindex(columns=methods)
            for c in ("μF", "μF (shuffled)", "S_avg")}
    mu, mu_null, s_avg = wide["μF"].fillna(0.0), wide["μF (shuffled)"].fillna(0.0), wide["S_avg"]
    boot = dict(n_boot=n_boot, level=level, seed=seed)
    chance = {m: verdicts.bootstrap_diff(mu[m].to_numpy(), mu_null[m].to_numpy(), **boot) for m in methods}
    above = [m for m in methods if chance[m].outcome == "win"]
    rival = mu.drop(columns=target).mean().idxmax()
    a = verdicts.bootstrap_diff(mu[target].to_numpy(), mu[rival].to_numpy(), **boot)
    others = [m for m in methods if m not in stable]
    b = {(m, o): verdicts.bootstrap_diff(s_avg[m].to_numpy(), s_avg[o].to_numpy(), higher_is_better=False, **boot)
         for m in stable for o in others}
    a_holds, b_holds = a.outcome == "win", all(c.outcome == "win" for c in b.values())
    untestable = verdicts.first_reason(
        premise, None if above else
        f"no method's μF lies above its chance level (the same method's map of another image, paired bootstrap "
        f"over {a.n} samples): μF does not discriminate on this model")
    v = verdicts.ladder(a_holds and b_holds, a_holds or b_holds, untestable=untestable)
    if untestable is None:
        v = verdicts.Verdict(v, f"(a) {target} − {rival} μF {a.mean:+.3f} [{a.low:+.3f}, {a.high:+.3f}] → "
                                f"{'holds' if a_holds else 'fails'}; (b) {', '.join(stable)} below every other "
                                f"S_avg → {'holds' if b_holds else 'fails'}")
    table = pd.DataFrame([{"method": m, "μF": float(mu[m].mean()), "μF (shuffled)": float(mu_null[m].mean()),
                           "μF − chance": chance[m].mean, "low": chance[m].low, "high": chance[m].high,
                           "μF above chance": m in above, "S_avg": float(s_avg[m].mean()),
                           "S_avg rank": int(s_avg.mean().rank().loc[m])} for m in methods])
    lowest = list(s_avg.mean().sort_values().index[:len(stable)])
    worst_b = max(b.items(), key=lambda kv: kv[1].high)
    return verdicts.Claim(
        "Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (CIFAR-10)",
        rule=f"(a) {target}'s μF minus the best other method's and (b) each of {', '.join(stable)}'s S_avg minus "
             f"each other method's, paired bootstrap over samples ({level * 100:g} %): reproduced when both hold "
             "significantly, partly when one does",
        premise="the model beats chance, and μF discriminates: at least one method's "
                "μF lies significantly above the same method's μF with the map of another image (chance); "
                + ", ".join(f"{m} {mu[m].mean():.3f} vs {mu_null[m].mean():.3f}" for m in methods)
                + (f" — {premise}" if premise else ""),
        paper_value="μF GC 0.907 (next SG 0.305); S_avg GC 0.012, SG 0.024, others > 2",
        our_value=f"μF {target} − {rival} = {a.mean:.3f} [{a.low:.3f}, {a.high:.3f}]; two lowest S_avg: "
                  f"{', '.join(lowest)}; weakest S_avg comparison {worst_b[0][0]} − {worst_b[0][1]} = "
                  f"{worst_b[1].mean:.3g} [{worst_b[1].low:.3g}, {worst_b[1].high:.3g}] (lower is better)",
        verdict=v, table=table)


def claim_lipschitz(details: Mapping[str, Mapping[str, dict]], *, gradient_methods: Sequence[str],
                    premises: Sequence[str | None] = (), lipschitz: str = "1-Lipschitz", resnet: str = "ResNet-18",
                    n_boot: int = 500, null_boot: int = 2000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Claim R3 (Tables 4–5): 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method.

    details: ``{family: {method: distance_sets(...)}}`` with the ``lipschitz`` and ``resnet`` families explaining the
    same D. premises: reasons a family cannot be tested (:func:`family_premise` of both), None where it can.
    Cells: ReCo of every method of ``gradient_methods`` and MeGe of every method; per cell, 1-Lipschitz minus
    ResNet-18 with a ``level`` percentile interval of ``n_boot`` paired bootstrap resamples of the samples. Null: a
    cell counts only when at least one family's S= of that method lies below its shuffled-pairings chance level
    (:func:`null_frame`) and both scores are defined; where both explain an image no more alike than two different images, a difference in
    their scores compares noise. Rule (:func:`faithlab.verdicts.from_settings`): reproduced when the score rises
    significantly in at least 2/3 of the testable cells, partly in at least 1/3. Table: one row per cell."""
    for name in (lipschitz, resnet):
        if name not in details:
            raise ValueError(f"details must hold the {name!r} family, got {list(details)}")
    methods = [m for m in details[lipschitz] if m in details[resnet]]
    if not methods:
        raise ValueError("details' two families share no method")
    nulls = {f: null_frame({m: details[f][m] for m in methods}, n_boot=null_boot, level=level, seed=seed)
             .set_index("method") for f in (lipschitz, resnet)}
    both = {**{f"L:{m}": details[lipschitz][m] for m in methods}, **{f"R:{m}": details[resnet][m] for m in methods}}
    draws = bootstrap_scores(both, n_boot=n_boot, seed=seed)
    rows = []
    for m in methods:
        informative = bool(nulls[lipschitz].loc[m, "below chance"] or nulls[resnet].loc[m, "below chance"])
        for score in ("ReCo", "MeGe"):
            if score == "ReCo" and m not in gradient_methods:
                continue
            c = comparison(draws, {key: v[score.lower()] for key, v in both.items()}, a=f"L:{m}", b=f"R:{m}",
                           score=score, level=level)
            vs = {f: f"{nulls[f].loc[m, 'S= mean']:.3f} vs {nulls[f].loc[m, 'shuffled mean']:.3f}"
                  for f in (lipschitz, resnet)}
            rows.append({"method": m, "score": score, "Lipschitz − ResNet": c.mean, "low": c.low, "high": c.high,
                         "outcome": c.outcome, "Lipschitz S= vs shuffled": vs[lipschitz],
                         "ResNet S= vs shuffled": vs[resnet],
                         "testable": informative and c.outcome != "undefined"})  # undefined: a NaN score
    table = pd.DataFrame(rows)
    cells = table[table.testable]
    reason = verdicts.first_reason(*premises)
    if reason is None and not len(cells):
        reason = "in no cell does either family's S= lie below its shuffled-pairings chance level"
    v = verdicts.from_settings((cells.outcome == "win").tolist(), untestable=reason,
                               what="testable (method × score) cells")
    return verdicts.Claim(
        "R3: 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method (CIFAR-10)",
        rule=f"per cell (ReCo of {', '.join(gradient_methods)}; MeGe of every method), 1-Lipschitz minus ResNet-18, "
             f"paired bootstrap over samples ({level * 100:g} %): reproduced when the score rises significantly in at "
             "least 2/3 of the testable cells, partly in at least 1/3",
        premise="both families beat chance and are of comparable accuracy, and a cell is testable only if at least "
                "one family's S= distances lie significantly below the same distances with the image pairings "
                "shuffled: " + "; ".join(f"{r.method} L {r['Lipschitz S= vs shuffled']}, R {r['ResNet S= vs shuffled']}"
                                         for _, r in table.drop_duplicates("method").iterrows()),
        paper_value="Tables 4–5: ReCo e.g. SG 0.154 → 0.898, SA 0.151 → 0.810; MeGe higher for all six methods",
        our_value=f"{int((cells.outcome == 'win').sum())} of {len(cells)} testable cells rise "
                  f"({len(table) - len(cells)} not testable); " + "; ".join(
                      f"{r.score} {r.method} {r['Lipschitz − ResNet']:+.3f}" for _, r in cells.iterrows()),
        verdict=v, table=table)


# ------------------------------------------------------------------------------------------- the paper's numbers
_M5 = ("IG", "SG", "SA", "GI", "GC")
PAPER: dict[str, pd.DataFrame] = {
    "Table 1": pd.DataFrame([[0.369, 0.125, 0.1, 0.369, 0.517], [0.309, 0.182, 0.177, 0.241, 0.591],
                             [0.107, 0.154, 0.151, 0.088, 0.637], [0.018, 0.132, 0.131, 0.004, 0.8]],
                            index=["FashionMNIST", "EuroSAT", "CIFAR-10", "CIFAR-100"], columns=_M5),
    "Table 2": pd.DataFrame([[0.904, 0.362, 0.304, 0.906, 0.765], [0.404, 0.415, 0.41, 0.412, 0.667],
                             [0.584, 0.457, 0.449, 0.552, 0.723], [0.595, 0.499, 0.495, 0.571, 0.777]],
                            index=["FashionMNIST", "EuroSAT", "CIFAR-10", "CIFAR-100"], columns=_M5),
    "Table 3": pd.DataFrame([[0.107, 0.305, 0.229, 0.101, 0.907], [2.112, 0.024, 2.389, 2.579, 0.012]],
                            index=["μF", "S_avg"], columns=_M5),
    "Table 4": pd.DataFrame([[0.107, 0.154, 0.151, 0.088, 0.637, 0.387], [0.598, 0.898, 0.81, 0.5, 0.668, 0.38]],
                            index=["ResNet-18", "1-Lipschitz"], columns=[*_M5, "SHAP"]),
    "Table 5": pd.DataFrame([[0.584, 0.457, 0.449, 0.552, 0.723, 0.459], [0.719, 0.606, 0.575, 0.67, 0.749, 0.621]],
                            index=["ResNet-18", "1-Lipschitz"], columns=[*_M5, "SHAP"]),
    "Table 10": pd.DataFrame(
        [[0.584, 0.457, 0.449, 0.552, 0.723], [0.574, 0.445, 0.435, 0.548, 0.698], [0.576, 0.461, 0.451, 0.555, 0.697],
         [0.556, 0.445, 0.435, 0.542, 0.641], [0.575, 0.455, 0.447, 0.545, 0.686], [0.571, 0.449, 0.441, 0.537, 0.667],
         [0.544, 0.41, 0.401, 0.507, 0.588], [0.571, 0.424, 0.414, 0.54, 0.642], [0.556, 0.413, 0.404, 0.528, 0.627],
         [0.542, 0.393, 0.381, 0.511, 0.531]], index=list(DEGRADATIONS), columns=_M5),
}
"""The paper's (HAL v1) values, typed from its tables for the side-by-side columns: Tables 1–2 (ReCo, MeGe of normally
trained ResNet-18s), 3 (μF, S_avg on CIFAR-10), 4–5 (ResNet-18 vs 1-Lipschitz on CIFAR-10) and 10 (MeGe on CIFAR-10
per degradation, Fig. 4). Several MeGe values elsewhere in v1 fall below 0.5, impossible for 1/(1 + mean d) with
d ∈ [0, 1] (spec §4.2): compare rankings, not absolute numbers."""


def rank_agreement(ours: pd.Series, paper: pd.Series) -> float:
    """Spearman correlation between our and the paper's values over the methods both have (NaN if < 3)."""
    common = [m for m in ours.index if m in paper.index and not (pd.isna(ours[m]) or pd.isna(paper[m]))]
    if len(common) < 3:
        return math.nan
    return float(pd.Series(ours[common]).rank().corr(pd.Series(paper[common]).rank()))


def beside(ours: pd.DataFrame, paper: pd.DataFrame, *, name: str = "row") -> pd.DataFrame:
    """Our wide table (rows × methods) and the paper's, interleaved: for each row ``ours`` then ``paper`` (where the
    paper has that row), with the rank agreement (Spearman over methods) on our line."""
    rows = []
    for idx, values in ours.iterrows():
        rows.append({name: idx, "source": "ours", **values.to_dict(),
                     "rank ρ vs paper": rank_agreement(values, paper.loc[idx]) if idx in paper.index else math.nan})
        if idx in paper.index:
            rows.append({name: idx, "source": "paper", **paper.loc[idx].to_dict()})
    return pd.DataFrame(rows)


def identical_models(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, **settings) -> dict:
    """R5 check: the family's first model standing in for all k (its maps and predictions copied k times) →
    ``{"MeGe", "max distance", "n S="}``; MeGe must be 1 and every distance 0."""
    name, options = method_options(method, **settings)
    model = fam.cross.models[0]
    maps = explainers.explain(model, fam.data.x, fam.predictions[0].to(fam.data.x.device), method=name,
                              batch_size=batch_size, generator=seed, **options)
    k = fam.cross.k
    copies = maps[None].expand(k, *maps.shape)
    preds = fam.predictions[:1].expand(k, -1).to(maps.device)
    d = reco_mege_details_from_predictions(copies, preds, fam.data.y.to(maps.device), fam.cross.folds.to(maps.device),
                                           channel_dim=-3 if maps.ndim == 4 else None, batch_size=batch_size)
    dist = d["pairs"].distance
    return {"MeGe": d["mege"], "max distance": float(dist[~dist.isnan()].max()) if (~dist.isnan()).any() else 0.0,
            "n S=": d["counts"]["S="]}


@torch.no_grad()
def steps_diagnostic(fam: Family, details: Mapping[str, dict], *, used: Mapping[str, int],
                     paper: int = 60, n_images: int = 50, seed: int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Does IG's step count (SmoothGrad's sample count) matter for ReCo and MeGe? For the methods of ``used``
    (``{"IG": steps, "SG": samples}`` the notebook ran with) among ``details``: the first model's maps of the first
    ``n_images`` images at the ``used`` count and at the ``paper``'s (60), and the mean Spearman distance between
    the two (the distance ReCo and MeGe use), beside that method's mean S= distance (two models' maps of one image)
    and its shuffled level. A distance far below S= says the cheaper count changes the maps less than another model
    does. One row per method."""
    rows = []
    model, x = fam.cross.models[0], fam.data.x[:n_images]
    target = fam.predictions[0, :n_images].to(x.device)
    channel_dim = -3 if x.ndim == 4 else None
    for method, count in used.items():
        if method not in details or method not in ("IG", "SG"):
            continue
        key = "ig_steps" if method == "IG" else "sg_samples"
        maps = []
        for c in (count, paper):
            name, options = method_options(method, **{key: c})
            maps.append(explainers.explain(model, x, target, method=name, batch_size=batch_size, generator=seed,
                                           **options))
        a, b = (flatten_maps(m, channel_dim=channel_dim) for m in maps)
        d = explanation_distance(a.flatten(1), b.flatten(1))
        pairs = details[method]["pairs"]
        s_equal = pairs.distance[pairs.kind == 0]
        shuffled = details[method]["shuffled"][pairs.kind == 0]
        rows.append({"method": method, "used": count, "paper": paper, "images": len(x),
                     f"d({count}, {paper}) mean": float(d.nanmean()), "S= mean": float(s_equal.nanmean()),
                     "shuffled mean": float(shuffled.nanmean())})
    return pd.DataFrame(rows)


def cam_grid(model, x: torch.Tensor) -> tuple[int, ...]:
    """Spatial size of the model's ``cam_layer`` output on inputs like x (the resolution of its Grad-CAM maps before
    upsampling)."""
    seen = []
    handle = model.cam_layer.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape[2:])))
    try:
        model(x[:1])
    finally:
        handle.remove()
    return seen[0]


@dataclass(frozen=True)
class FamilySettings:
    """How the ReCo/MeGe notebooks build a task's ResNet-18 family, as one object (:func:`families`).

    n, image_size, dataset, data_dir: the k-fold data D of :func:`load_task`; k: models per family; width_scale: the
    ResNet-18's width; epochs, train_batch, lr, scheduler, seed: their training (:meth:`config`; ``"cosine"`` anneals
    the rate to 0, so the k models end at comparable accuracy rather than at wherever a constant rate leaves them);
    device, batch_size: where and how many images per forward pass. The notebooks of ``reco_mege/`` share these
    parameter names: :meth:`from_parameters` reads them from a notebook's parameters.
    """

    n: int
    image_size: int
    k: int = 5
    width_scale: float = 1.0
    epochs: int = 15
    train_batch: int = 32
    lr: float = 3e-3
    scheduler: str | None = None
    seed: int = 0
    dataset: str | None = None
    data_dir: str | None = None
    device: str | torch.device = "cpu"
    batch_size: int = 256

    @classmethod
    def from_parameters(cls, parameters: Mapping) -> FamilySettings:
        """The settings of the names a notebook's ``parameters`` (e.g. its ``globals()``) define; the others keep
        their defaults (``n`` and ``image_size`` have none: a missing one raises TypeError)."""
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in parameters.items() if name in names})

    def config(self) -> train.TrainConfig:
        """The models' ``TrainConfig(epochs, train_batch, lr, seed, scheduler)``."""
        return train.TrainConfig(epochs=self.epochs, batch_size=self.train_batch, lr=self.lr, seed=self.seed,
                                 scheduler=self.scheduler)

    def load_task(self, task: str, *, n: int | None = None, split: str = "train") -> data.TensorData:
        """:func:`load_task` of ``task`` at these settings' image size, seed and data (``n`` images, default D's)."""
        return load_task(task, n=self.n if n is None else n, image_size=self.image_size, seed=self.seed,
                         dataset=self.dataset, data_dir=self.data_dir, split=split)


def families(tasks: list[str], settings: FamilySettings, *, degradation: str = "Normal") -> dict[str, Family]:
    """The normally trained (or ``degradation``) ResNet-18 family of every task, as the notebooks' parameters state
    it (``settings``, e.g. ``FamilySettings.from_parameters(globals())``): D = :func:`load_task`, models by
    :func:`family` with :meth:`FamilySettings.config`."""
    if not isinstance(settings, FamilySettings):
        raise TypeError(f"settings must be a FamilySettings, got {type(settings).__name__}")
    s = settings
    config = s.config()
    return {t: family(t, s.load_task(t), width_scale=s.width_scale, config=config, k=s.k, degradation=degradation,
                      seed=s.seed, device=s.device, batch_size=s.batch_size, name=degradation) for t in tasks}


# ------------------------------------------------------------------------------------- the chance level and claims
def _undefined(level: float) -> verdicts.Comparison:
    return verdicts.Comparison(math.nan, math.nan, math.nan, float(level), 0, "undefined")


def null_frame(details: Mapping[str, dict], *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
               **columns) -> pd.DataFrame:
    """The chance level of every method's S= distances (one row per method, + ``columns``).

    details: ``{method: distance_sets(...)}`` of one family (each with ``"shuffled"``, see :func:`with_null`). For the
    pairs of S=, ``S= mean`` is the mean distance (MeGe's), ``shuffled mean`` the mean of the same pairs with the
    second model's map of another image; ``MeGe`` and ``MeGe (shuffled)`` = 1/(1 + each). ``shuffled − S=``, ``low``,
    ``high``: the mean difference over the pairs where both are defined and its ``level`` percentile interval from
    ``n_boot`` paired bootstrap resamples of the images (generator ``seed``; the same resamples for every method);
    ``below chance``: the interval lies above 0, i.e. S= is significantly below its shuffled level (False when
    undefined: fewer than two images with an S= pair defined both ways). A method whose S= is not below chance has
    a MeGe, and a ReCo, that compare noise."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map at least one method to its distance_sets(...) dict")
    n_boot = _validate.positive_int(n_boot, "n_boot")
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100 (the percentile interval needs them), got {n_boot}")
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    weights = _boot_weights(n, n_boot, seed)
    rows = []
    for m, d in details.items():
        if d.get("shuffled") is None:
            raise ValueError(f"details[{m!r}] has no 'shuffled' distances: compute them with distance_sets (or "
                             "with_null)")
        pairs = d["pairs"]
        if pairs.distance.shape[0] != n:
            raise ValueError(f"details must hold the same N samples for every method, got {pairs.distance.shape[0]} "
                             f"for {m!r} and {n} for the first")
        eq, sh = pairs.distance.double(), d["shuffled"].double()
        in_eq = pairs.kind == 0
        eq_ok, sh_ok = in_eq & ~eq.isnan(), in_eq & ~sh.isnan()
        both = eq_ok & sh_ok
        per_image = torch.where(both, sh - eq, 0.0).sum(1)             # (N,) summed over the image's S= pairs
        count = both.sum(1).double()
        mean_eq = float(eq[eq_ok].mean()) if eq_ok.any() else math.nan
        mean_sh = float(sh[sh_ok].mean()) if sh_ok.any() else math.nan
        c = _undefined(level)
        if int((count > 0).sum()) >= 2:                                 # pairs weigh alike, as in MeGe's mean
            draws = (weights @ per_image) / (weights @ count)           # NaN for a resample without S= pairs
            if int(draws.isfinite().sum()) >= max(100, n_boot // 2):
                c = verdicts.comparison_from_draws(float(per_image.sum() / count.sum()), draws, level=level)
        rows.append({**columns, "method": m, "n S=": int(eq_ok.sum()), "S= mean": mean_eq, "shuffled mean": mean_sh,
                     "MeGe": 1.0 / (1.0 + mean_eq), "MeGe (shuffled)": 1.0 / (1.0 + mean_sh),
                     "shuffled − S=": c.mean, "low": c.low, "high": c.high, "below chance": c.outcome == "win"})
    return pd.DataFrame(rows)


def _at_chance(row, name: str) -> str:
    """One phrase: "<name> S= 0.660 vs shuffled 0.662 (below chance | at chance)"."""
    return (f"{name} S= {row['S= mean']:.3f} vs shuffled {row['shuffled mean']:.3f} "
            f"({'below chance' if row['below chance'] else 'at chance'})")


def claim_gradcam_best_reco(details: Mapping[str, Mapping[str, dict]], *,
                            premises: Mapping[str, str | None] | None = None, target: str = "GC",
                            min_pairs: int = 20, n_boot: int = 500, null_boot: int = 2000, level: float = 0.95,
                            seed: int = 0) -> verdicts.Claim:
    """Claim R1 (Table 1): Grad-CAM (``target``) has the best ReCo of the methods on every task.

    details: ``{task: {method: distance_sets(...)}}`` of the normally trained families. premises: ``{task: reason
    or None}``, e.g. :func:`chance_premise` of each family (the models must beat chance). Null, per method: its S=
    distances with the image pairings shuffled (:func:`null_frame`, ``null_boot`` resamples); a method whose S= is
    not significantly below that level explains an image by two agreeing models no more alike than two different
    images, so its ReCo separates noise. Premises, per task: the models beat chance, every method has at least
    ``min_pairs`` distances in S= and in S≠, Grad-CAM's S= lies below its chance level, and at least one competitor's
    does (competitors at their chance level do not count); else the task is not testable here, with the reason.
    Rule: on each testable task, Grad-CAM's ReCo minus the best counted competitor's, percentile interval of
    ``n_boot`` paired bootstrap resamples of the samples (:func:`bootstrap_scores`, :func:`comparison`);
    reproduced when Grad-CAM wins on every testable task, partly when on at least
    :data:`~faithlab.verdicts.PARTLY_SHARE` of them (:func:`~faithlab.verdicts.from_settings`). premises would
    normally be :func:`family_premise` of each family (models beat chance and are within ±3 % on the test set).
    Table: one row per task."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map at least one task to {method: distance_sets(...)}")
    premises = dict(premises or {})
    rows = []
    for task, d in details.items():
        if target not in d or len(d) < 2:
            raise ValueError(f"details[{task!r}] must hold target {target!r} and at least one competitor, got "
                             f"{list(d)}")
        nulls = null_frame(d, n_boot=null_boot, level=level, seed=seed).set_index("method")
        competitors = [m for m in d if m != target]
        counted = [m for m in competitors if nulls.loc[m, "below chance"]]
        fewest = {s: min(v["counts"][s] for v in d.values()) for s in ("S=", "S≠")}
        reason = verdicts.first_reason(
            premises.get(task),
            *[f"{task}: only {c} distances in {s} (< {min_pairs})" for s, c in fewest.items() if c < min_pairs],
            None if nulls.loc[target, "below chance"] else
            f"{task}: {_at_chance(nulls.loc[target], target)}: its S= distances are not significantly below their "
            "shuffled-pairings chance level, so its ReCo compares noise",
            None if counted else f"{task}: no competitor's S= lies below its shuffled-pairings chance level "
                                 f"({', '.join(competitors)} at chance), so there is nothing to compare {target} with")
        pool = counted or competitors
        draws = bootstrap_scores({m: d[m] for m in [target, *pool]}, n_boot=n_boot, seed=seed)
        rival = max(pool, key=lambda m: -math.inf if math.isnan(d[m]["reco"]) else d[m]["reco"])
        c = comparison(draws, {m: d[m]["reco"] for m in [target, *pool]}, a=target, b=rival, level=level)
        rows.append({"task": task, f"{target} S=": nulls.loc[target, "S= mean"],
                     f"{target} shuffled": nulls.loc[target, "shuffled mean"],
                     f"{target} below chance": bool(nulls.loc[target, "below chance"]),
                     "counted": ", ".join(counted), "at chance": ", ".join(m for m in competitors if m not in counted),
                     "rival": rival, f"{target} − rival": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome,
                     "untestable": reason})
    table = pd.DataFrame(rows)
    testable = table[table.untestable.isna()]
    wins = int((testable.outcome == "win").sum())
    if len(testable):
        v = verdicts.from_settings((testable.outcome == "win").tolist(), reproduced=1.0, what="testable tasks")
        v = verdicts.Verdict(v, f"{v.why} ({len(table) - len(testable)} not testable)")
    else:
        v = verdicts.ladder(False, untestable="; ".join(table.untestable))
    return verdicts.Claim(
        "R1: Grad-CAM has the best ReCo of the five methods on every dataset (normally trained ResNet-18)",
        rule=f"on each task, {target}'s ReCo minus the best ReCo among the competitors whose S= distances lie "
             f"significantly below their shuffled-pairings chance level ({level * 100:g} % paired bootstrap over "
             f"samples): reproduced when it wins on every testable task, partly when on at least "
             f"{verdicts.PARTLY_SHARE:.0%} of them",
        premise=f"per task: the models beat chance and are of comparable accuracy (the caller's premises), every "
                f"method has at least {min_pairs} distances in S= and S≠, "
                f"and {target}'s S= distances lie significantly below the same distances with the image pairings "
                "shuffled (paired bootstrap over images), as must a competitor's for it to count: "
                + "; ".join(f"{r.task} {r[f'{target} S=']:.3f} vs {r[f'{target} shuffled']:.3f}"
                            + ("" if r[f"{target} below chance"] else " (at chance)")
                            + (f", {r['at chance']} at chance" if r["at chance"] else "")
                            for _, r in table.iterrows()),
        paper_value="Table 1: GC best on all 4 datasets (0.517–0.800)",
        our_value=f"{target} wins on {wins} of {len(testable)} testable tasks; " + "; ".join(
            f"{r.task} {target} − {r.rival} = {r[f'{target} − rival']:.3f} [{r.low:.3f}, {r.high:.3f}]"
            + ("" if pd.isna(r.untestable) else " (not testable)")
            for _, r in table.iterrows()),
        verdict=v, table=table)


def claim_mege_falls(details: Mapping[tuple[str, str], Mapping[str, dict]], types: Mapping[str, Sequence[str]], *,
                     premises: Mapping[str, str | None] | None = None, normal: str = "Normal", n_boot: int = 500,
                     null_boot: int = 2000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Claim R2 (Fig. 4, Tables 7–14): MeGe (and ReCo) fall as the k models are degraded.

    details: ``{(task, degradation): {method: distance_sets(...)}}``, the ``normal`` family of every task among them.
    types: ``{type: [normal, level, …, strongest]}`` (e.g. Randomized: Normal, 5 %, 10 %, 30 %). premises:
    ``{task: reason or None}`` (:func:`chance_premise` of the normal family). Per (task × method × type) cell: the
    normal family's score minus the strongest level's, percentile interval of ``n_boot`` paired bootstrap resamples
    of the samples (the same D); "falls" when it lies above 0. Null and premise: a cell is testable only if its
    task's normal models beat chance and the normal family's S= distances of that method lie significantly below
    the same distances with the image pairings shuffled (:func:`null_frame`); otherwise the normal models already
    explain an image no more alike than two different images and there is nothing for a degradation to destroy.
    Rule (:func:`faithlab.verdicts.from_settings`): reproduced when MeGe falls in at least 2/3 of the testable
    cells, partly in at least 1/3; not testable here without a testable cell. ReCo is reported the same way.
    Table: one row per cell and score."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map (task, degradation) to {method: distance_sets(...)}")
    if not isinstance(types, Mapping) or not types:
        raise ValueError("types must map at least one degradation type to its levels, normal first")
    premises = dict(premises or {})
    tasks = list(dict.fromkeys(t for t, _ in details))
    rows, phrases = [], []
    for task in tasks:
        if (task, normal) not in details:
            raise ValueError(f"details must hold the {normal!r} family of task {task!r}")
        base = details[task, normal]
        nulls = null_frame(base, n_boot=null_boot, level=level, seed=seed).set_index("method")
        phrases += [f"{task} {_at_chance(nulls.loc[m], m)}" for m in base]
        for kind, levels in types.items():
            levels = list(levels)
            if len(levels) < 2 or levels[0] != normal:
                raise ValueError(f"types[{kind!r}] must list {normal!r} and at least one degradation, got {levels}")
            strongest = levels[-1]
            if (task, strongest) not in details:
                raise ValueError(f"details has no family ({task!r}, {strongest!r}) for types[{kind!r}]")
            both = {**{f"N:{m}": base[m] for m in base}, **{f"D:{m}": details[task, strongest][m] for m in base}}
            draws = bootstrap_scores(both, n_boot=n_boot, seed=seed)
            for m in base:
                null = nulls.loc[m]
                reason = verdicts.first_reason(
                    premises.get(task), None if null["below chance"] else
                    f"{task} {normal} {_at_chance(null, m)}")
                for score in ("MeGe", "ReCo"):
                    c = comparison(draws, {key: v[score.lower()] for key, v in both.items()}, a=f"N:{m}", b=f"D:{m}",
                                   score=score, level=level)
                    rows.append({"task": task, "type": kind, "level": strongest, "method": m, "score": score,
                                 "normal S=": null["S= mean"], "normal shuffled": null["shuffled mean"],
                                 "normal below chance": bool(null["below chance"]), "normal − degraded": c.mean,
                                 "low": c.low, "high": c.high, "falls": c.outcome == "win",
                                 "testable": reason is None, "untestable": reason})
    table = pd.DataFrame(rows)
    mege_cells = table[(table.score == "MeGe") & table.testable]
    reco_cells = table[(table.score == "ReCo") & table.testable]
    n_cells = int((table.score == "MeGe").sum())
    chance = [premises.get(t) for t in tasks]
    untestable = None
    if not len(mege_cells):
        untestable = (verdicts.first_reason(*chance) if all(chance) else
                      f"in none of the {n_cells} (task × method × type) cells does the normal family's S= lie "
                      "significantly below its shuffled-pairings chance level")
    v = verdicts.from_settings(mege_cells.falls.tolist(), untestable=untestable,
                               what="testable (task × method × type) cells")
    at_chance = table[(table.score == "MeGe") & ~table["normal below chance"]].drop_duplicates(["task", "method"])
    return verdicts.Claim(
        "R2: MeGe (and ReCo) fall as the k models are degraded (randomised weights, switched labels, less data)",
        rule=f"per (task × method × type) cell, the normal family's MeGe minus the strongest level's "
             f"({level * 100:g} % paired bootstrap over samples): reproduced when it falls significantly in at "
             "least 2/3 of the testable cells, partly in at least 1/3 (ReCo reported the same way)",
        premise="the normal models beat chance, and a cell is testable only if the normal family's S= distances lie "
                "significantly below the same method's distances with the image pairings shuffled (paired bootstrap "
                "over images), else there is nothing for a degradation to destroy: "
                + "; ".join(phrases),
        paper_value="Fig. 4 / Tables 7–14: MeGe decreases with randomisation and label switching on CIFAR-10",
        our_value=f"MeGe falls significantly at the strongest level in {int(mege_cells.falls.sum())} of "
                  f"{len(mege_cells)} testable (task × method × type) cells; ReCo in {int(reco_cells.falls.sum())} "
                  f"of {len(reco_cells)}; {n_cells - len(mege_cells)} of {n_cells} cells not testable"
                  + (f" ({', '.join(sorted(set(at_chance.method)))} at chance)" if len(at_chance) else ""),
        verdict=v, table=table)


# ---- R5: identical models (an identity of the definitions: a check of the pipeline by construction)
_R5_VALUES = ("MeGe", "max distance", "n S=")


def claim_identical_models(identical: pd.DataFrame, contrast: pd.DataFrame | None = None, *,
                           tolerance: float = 1e-6) -> verdicts.Claim:
    """Claim R5 (eq. 8): k identical models give MeGe = 1 (every distance 0).

    identical: one row per cell (e.g. task × method) with :func:`identical_models`' ``MeGe``, ``max distance`` and
    ``n S=``; every other column is the cell's key. contrast: optional, the chapter's null for the same cells, e.g.
    :func:`null_frame` rows (the key columns and ``MeGe (shuffled)``, the same method's MeGe when the second model
    explains another image). With k copies of one model every distance is 0 and MeGe = 1/(1 + 0) = 1: an identity of
    the definitions, so the claim checks the pipeline by construction and no null can apply to its value (a correct
    pipeline gives exactly 1). Premise, per cell: it has an S= pair (else MeGe is undefined) and, given the contrast,
    maps of different images give MeGe below 1 − ``tolerance`` (else MeGe = 1 is met by any maps and the check could
    not tell a correct pipeline from one that returns 0 for every distance); a cell that fails the premise is not
    testable here. Rule (:func:`faithlab.verdicts.from_settings` with both shares 1): reproduced when every testable
    cell has |MeGe − 1| ≤ ``tolerance`` and max distance ≤ ``tolerance``, not reproduced when any cell misses (no
    partly: one miss is a broken pipeline); not testable here without a testable cell. A cell whose MeGe misses 1
    fails whatever its contrast. Table: ``identical`` with ``MeGe (different images)``, ``status`` (holds / fails /
    no S= pair / contrast at 1 / contrast undefined) and ``testable``."""
    if not isinstance(identical, pd.DataFrame) or identical.empty:
        raise ValueError("identical must be a non-empty DataFrame of identical_models(...) rows")
    missing = [c for c in _R5_VALUES if c not in identical.columns]
    if missing:
        raise ValueError(f"identical lacks the columns {missing} (rows of identical_models(...))")
    tolerance = _validate.number(tolerance, "tolerance")
    if not 0 <= tolerance < 0.1:
        raise ValueError(f"tolerance must lie in [0, 0.1) (float error, not a loose match), got {tolerance!r}")
    keys = [c for c in identical.columns if c not in _R5_VALUES]
    table = identical.copy()
    if contrast is not None:
        if not isinstance(contrast, pd.DataFrame):
            raise TypeError(f"contrast must be a DataFrame (e.g. null_frame rows) or None, got "
                            f"{type(contrast).__name__}")
        lacking = [c for c in [*keys, "MeGe (shuffled)"] if c not in contrast.columns]
        if lacking:
            raise ValueError(f"contrast lacks the columns {lacking}: it needs identical's key columns {keys} and "
                             "'MeGe (shuffled)' (null_frame(...) rows)")
        if contrast.duplicated(keys).any():
            raise ValueError(f"contrast must hold one row per cell ({keys}), got duplicates")
        table = table.merge(contrast[[*keys, "MeGe (shuffled)"]].rename(
            columns={"MeGe (shuffled)": "MeGe (different images)"}), on=keys, how="left", validate="one_to_one")
    mege = table["MeGe"].astype(float)
    far = table["max distance"].astype(float)
    has_pairs = table["n S="].astype(float) > 0
    at_one = ((mege - 1).abs() <= tolerance) & (far.abs() <= tolerance)   # NaN compares False: a miss
    status = pd.Series(np.where(~has_pairs, "no S= pair", np.where(at_one, "holds", "fails")), index=table.index)
    if contrast is not None:
        other = table["MeGe (different images)"].astype(float)
        status = status.mask((status == "holds") & other.isna(), "contrast undefined")
        status = status.mask((status == "holds") & (other >= 1 - tolerance), "contrast at 1")
    table["status"] = status
    table["testable"] = status.isin(["holds", "fails"])
    testable = table[table["testable"]]

    def cell(row) -> str:
        return " ".join(str(row[k]) for k in keys) or f"row {row.name}"

    skipped = {s: [cell(r) for _, r in table[table.status == s].iterrows()]
               for s in ("no S= pair", "contrast at 1", "contrast undefined")}
    reasons = {"no S= pair": "no S= pair (MeGe undefined)",
               "contrast at 1": "maps of different images also give MeGe = 1",
               "contrast undefined": "no contrast (the shuffled pairs are undefined)"}
    untestable = None
    if testable.empty:
        untestable = "no testable cell: " + "; ".join(f"{reasons[s]} in {', '.join(c)}" for s, c in skipped.items()
                                                      if c)
    v = verdicts.from_settings((testable.status == "holds").tolist(), reproduced=1.0, partly=1.0,
                               untestable=untestable, what="testable cells")
    if contrast is None:
        contrast_text = ("no contrast given: a pipeline that returned 0 for every distance would pass as well")
    else:
        other = table["MeGe (different images)"]
        contrast_text = (f"contrast, the chapter's null (the same method's MeGe when the second model explains "
                         f"another image): MeGe {other.min():.3f}–{other.max():.3f}, below 1, so MeGe = 1 is not "
                         "met by any maps" if other.notna().any() and other.max() < 1 - tolerance else
                         "contrast, the chapter's null (the same method's MeGe on maps of different images): "
                         + (f"MeGe {other.min():.3f}–{other.max():.3f}" if other.notna().any() else "undefined"))
    skipped_text = "; ".join(f"{reasons[s]}: {', '.join(c)}" for s, c in skipped.items() if c) or "none"
    worst = float((testable["MeGe"].astype(float) - 1).abs().max()) if len(testable) else math.nan
    farthest = float(testable["max distance"].astype(float).abs().max()) if len(testable) else math.nan
    return verdicts.Claim(
        "R5: k identical models give MeGe = 1 (every distance 0)",
        rule=f"reproduced when every testable cell has |MeGe − 1| ≤ {tolerance:g} and every distance ≤ "
             f"{tolerance:g}; not reproduced when any cell misses (no partly: one miss is a broken pipeline)",
        premise="an identity of the definitions (eq. 8: with k copies of one model every distance is 0, so MeGe = "
                "1/(1 + 0)): a check of the pipeline by construction, so no null can apply to its value; a cell is "
                f"testable when it has an S= pair and its contrast lies below 1; {contrast_text}; not testable: "
                f"{skipped_text}",
        paper_value="by construction (eq. 8)",
        our_value=(f"max |MeGe − 1| = {worst:.1e}, max distance {farthest:.1e} over {len(testable)} testable cells"
                   if len(testable) else "no testable cell")
                  + f" ({len(table) - len(testable)} of {len(table)} not testable)",
        verdict=v, table=table)

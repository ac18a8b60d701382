"""ReCo/MeGe protocols (spec §4): the four tasks and their stand-ins, k-fold families of models (normal, degraded,
1-Lipschitz), every model's explanations of every sample, the S= / S≠ sets per method (cached on disk, so the
notebooks that need the same sets compute them once), paired bootstrap draws of ReCo and MeGe, and tidy frames.

The metric lives in :mod:`faithlab.metrics.reco_mege`; the training in :func:`faithlab.train.cross_train`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

import faithlab
from faithlab import _validate, data, explainers, paths, train
from faithlab.metrics.reco_mege import (Pairs, average_stability_details, details_from_pairs, mu_fidelity_details,
                                        reco_mege_details)
from faithlab.train.cache import cache_key

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "Family", "load_task", "family", "method_options", "explain_family",
           "distance_sets", "scores", "bootstrap_scores", "score_draws", "histogram_frame", "comparison",
           "accuracy_frame", "chance_premise", "fidelity_stability", "PAPER", "rank_agreement", "beside", "identical_models", "cam_grid", "families"]

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
              data_dir: str | None = None) -> data.TensorData:
    """D for a task: the first ``n`` images of the stand-in's train split (``dataset=None``) or of the paper's dataset
    (``dataset="paper"``: :data:`TASKS`' loader reading ``data_dir``, resized to ``image_size`` by the loader's own
    transform where it has one)."""
    _validate.one_of(task, "task", tuple(TASKS))
    n = _validate.positive_int(n, "n")
    spec = TASKS[task]
    if dataset == "paper":
        ds = data.load(spec["paper"], split="train", data_dir=data_dir)
        x, y = data.to_tensors(ds, n)
        info = {**getattr(ds, "info", {}), "name": spec["paper"], "n_classes": int(y.max()) + 1}
        info.setdefault("class_names", [str(c) for c in range(info["n_classes"])])
        info.setdefault("mean", None)
        info.setdefault("std", None)
        return data.TensorData(x, y, info=info)
    if dataset is not None:
        raise ValueError(f"dataset must be None (the stand-in) or 'paper', got {dataset!r}")
    ds = data.load(spec["stand_in"], split="train", size=image_size, seed=seed, **spec["kwargs"])
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


def distance_sets(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, distance: str = "sqrt",
                  cache: bool = True, **settings) -> dict:
    """:func:`faithlab.metrics.reco_mege.reco_mege_details` for one family and method; the pair distances are cached
    under ``<cache>/reco_mege/`` (keyed by the models, the method and its settings), so another notebook asking for
    the same sets loads them (``torch.load(weights_only=True)``)."""
    name, options = method_options(method, **settings)
    key = cache_key({"family": fam.key, "method": name, "options": {k: v for k, v in options.items()
                                                                    if not isinstance(v, torch.Tensor)},
                     "background": "train" if "background" in options else None, "distance": distance, "seed": seed,
                     "n": len(fam.data)})
    file = paths.cache_dir() / "reco_mege" / f"{key}.pt"
    labels, folds = fam.data.y.cpu(), fam.cross.folds
    pairs = None
    if cache and file.exists():
        try:
            state = torch.load(file, weights_only=True)
            pairs = Pairs(state["distance"], state["other"], state["kind"])
        except (RuntimeError, KeyError, OSError):
            file.unlink(missing_ok=True)
    if pairs is None:
        maps = explain_family(fam, method, batch_size=batch_size, seed=seed, **settings)
        channel_dim = -3 if maps.ndim == 5 else None
        details = reco_mege_details(maps, fam.predictions.to(maps.device), labels.to(maps.device),
                                    folds.to(maps.device), distance=distance, channel_dim=channel_dim,
                                    batch_size=batch_size)
        pairs = Pairs(*(t.cpu() for t in (details["pairs"].distance, details["pairs"].other, details["pairs"].kind)))
        if cache:
            paths.atomic_write(file, lambda tmp: torch.save({"distance": pairs.distance, "other": pairs.other,
                                                             "kind": pairs.kind}, tmp))
    return details_from_pairs(pairs)


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


def bootstrap_scores(details: dict[str, dict], *, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap over samples (the same resamples for every method): ``n_boot`` draws of ReCo and MeGe per
    method → tidy frame (``method``, ``draw``, ``ReCo``, ``MeGe``)."""
    n = next(iter(details.values()))["pairs"].distance.shape[0]
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(n, (n_boot, n), generator=g)
    weights = torch.zeros(n_boot, n, dtype=torch.float64).scatter_add_(1, idx, torch.ones(n_boot, n,
                                                                                           dtype=torch.float64))
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


def accuracy_frame(families: list[Family]) -> pd.DataFrame:
    """Held-out block accuracy of every model of every family, and whether the family meets the paper's ±3 %."""
    rows = []
    for f in families:
        acc = f.cross.accuracy
        rows.append({"task": f.task, "family": f.name, "k": f.cross.k, "mean accuracy": float(acc.mean()),
                     "min": float(acc.min()), "max": float(acc.max()), "within ±3 %": f.cross.comparable(0.03),
                     "trained on": int(np.mean(f.cross.degradation["train_sizes"])),
                     "labels switched": f.cross.degradation["labels_switched"],
                     "layers randomised": len(f.cross.degradation["randomised_layers"])})
    return pd.DataFrame(rows)


def fidelity_stability(model, x: torch.Tensor, y: torch.Tensor, method: str, *, n_subsets: int = 200,
                       subset_fraction: float = 0.15, n_neighbours: int = 200, radius: float = 0.1,
                       output: str = "prob", seed: int = 0, batch_size: int = 256, **settings) -> pd.DataFrame:
    """Per-sample μF (Pearson, zero baseline, 15 % pixel subsets) and S_avg (squared ℓ2, ‖u‖₁ ≤ radius, common
    random numbers: a sample and its neighbours are explained with the same seed) of one method on one model
    (Table 3), explaining the label → frame (``sample``, ``μF``, ``S_avg``)."""
    name, options = method_options(method, **settings)
    explain = functools.partial(explainers.explain, model, method=name, batch_size=batch_size, generator=seed,
                                **options)
    attributions = explain(x, y)
    mu = mu_fidelity_details(model, x, attributions, y, n_subsets=n_subsets, subset_fraction=subset_fraction,
                             output=output, generator=seed, batch_size=batch_size)["mu_f"]
    # common random numbers: each sample and its neighbours share one seed, so a stochastic method's S_avg measures
    # how its map changes within the radius, not its Monte-Carlo noise (the attributions for μF keep `generator`)
    s = average_stability_details(lambda z, t, seeds: explain(z, t, sample_seeds=seeds), x, y,
                                  n_neighbours=n_neighbours, radius=radius, generator=seed,
                                  batch_size=batch_size)["s_avg"]
    return pd.DataFrame({"method": method, "sample": np.arange(len(x)), "μF": mu.cpu().numpy(),
                         "S_avg": s.cpu().numpy()})


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
    d = reco_mege_details(copies, preds, fam.data.y.to(maps.device), fam.cross.folds.to(maps.device),
                          channel_dim=-3 if maps.ndim == 4 else None, batch_size=batch_size)
    dist = d["pairs"].distance
    return {"MeGe": d["mege"], "max distance": float(dist[~dist.isnan()].max()) if (~dist.isnan()).any() else 0.0,
            "n S=": d["counts"]["S="]}


@torch.no_grad()
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


def families(tasks: list[str], *, n: int, image_size: int, k: int = 5, width_scale: float = 1.0, epochs: int = 15,
             train_batch: int = 32, lr: float = 3e-3, seed: int = 0, dataset: str | None = None,
             data_dir: str | None = None, device: str | torch.device = "cpu", batch_size: int = 256,
             degradation: str = "Normal") -> dict[str, Family]:
    """The normally trained (or ``degradation``) ResNet-18 family of every task, as the notebooks' parameters state
    it: D = :func:`load_task`, models by :func:`family` with ``TrainConfig(epochs, train_batch, lr, seed)``."""
    config = train.TrainConfig(epochs=epochs, batch_size=train_batch, lr=lr, seed=seed)
    return {t: family(t, load_task(t, n=n, image_size=image_size, seed=seed, dataset=dataset, data_dir=data_dir),
                      width_scale=width_scale, config=config, k=k, degradation=degradation, seed=seed, device=device,
                      batch_size=batch_size, name=degradation) for t in tasks}

"""The synthesis protocol: every metric of the study on setups whose right answer is known.

A setup is a classifier of canvas digits (only the digit's pixels carry the class) with its data, its F-Fidelity
fine-tuned twin and the ground-truth map of each test image: the digit mask, or for the transparent linear model
its exact pixel contributions to the predicted logit. A second transparent model, a scikit-learn decision tree
(:func:`tree_setup`), is not additive: its perfect explanation is the impurity drop along each image's decision
path. Explainers of known quality are the ground truth degraded at noise levels ξ (F-Fidelity's protocol, spec
§1.8): lower ξ is better. From :func:`faithlab.evaluate` frames this module computes, per metric, how well it
recovers that ranking (:func:`recovery`), how far the perfect explanation lands from the metric's own ideal
(:func:`ideal_gap`; Miró-Nicolau et al.'s claim decided against random maps by :func:`claim_ideal_gap`), a
MetaQuantus-style meta-evaluation (:func:`resilience`, :func:`reactivity`; Hedström et al., TMLR 2023), and the
report card that ranks the metrics (:func:`report_card`, :func:`recommendations`), and the guide the book opens
with: per situation the metrics that hold up, with intervals (:func:`guide`, :func:`guide_sentences`,
:func:`answer_sentence`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, data, evaluation, explainers, models, recipes, train, verdicts
from faithlab._optional import require
from faithlab.data import TensorData
from faithlab.metrics.fewclass import candidate_grid
from faithlab.metrics.statistics import spearman
from faithlab.protocols.setup import Setting

__all__ = ["Setup", "setup", "tree_setup", "claim_ideal_gap", "PAPER_IDEAL_GAP", "degraded_name", "explainer_maps",
           "recovery", "ideal_gap", "resilience", "reactivity", "report_card", "recommendations", "CRITERIA",
           "guide", "guide_sentences", "answer_sentence", "REFERENCE_SENSITIVE", "CHAPTER_METRICS", "COST_CASE",
           "cost_per_metric", "noisy_inputs", "beats"]


def _setups(p: Mapping) -> str:
    """The synthesis' classifiers in a set-up table, counted by kind: ``linear, 3 CNNs, ViT on 16 px canvases``."""
    kinds: dict[str, int] = {}
    for s in p["setups"]:
        kind = recipes.DISPLAY_NAMES.get(s["model"], s["model"])
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{n} {k}s" if n > 1 else k for k, n in kinds.items()) + f" on {p['image_size']} px canvases"


def _explainers(names) -> str:
    """Explainer names in a set-up table: all of them, or a count and the first two when they would not fit."""
    text = ", ".join(names)
    return text if len(text) <= 60 else f"{len(names)} explainers ({', '.join(list(names)[:2])}, …)"


SETUP: tuple[Setting, ...] = (
    Setting("classifiers", "— (each paper has its own)", "synthesis/metrics_compared", _setups),
    Setting("test images per classifier", "—", "synthesis/metrics_compared", "{n_test}"),
    Setting("degraded ground truth ξ", "0–1, 6 levels (F-Fidelity)", "synthesis/metrics_compared",
            lambda p: f"{min(p['noise_levels']):g}–{max(p['noise_levels']):g}, {len(p['noise_levels'])} levels"),
    Setting("real explainers", "—", "synthesis/metrics_compared", lambda p: _explainers(list(p["methods"]))),
    Setting("sparsity grid", "5–95 %, 19 levels (F-Fidelity)", "synthesis/metrics_compared",
            lambda p: f"{min(p['sparsity']) * 100:g}–{max(p['sparsity']) * 100:g} %, {len(p['sparsity'])} levels"),
    Setting("F-Fidelity masks", "N = 50", "synthesis/metrics_compared", "N = {n_samples}"),
    Setting("μF subsets", "200 (xplique's default)", "synthesis/metrics_compared", "{n_subsets}"),
    Setting("Few-class curve, candidates", "101 points, 804 candidates", "synthesis/metrics_compared",
            lambda p: f"{p['fewclass_points']} points, {len(candidate_grid(p['fewclass_operations']))} candidates"),
    Setting("removal references", "—", "synthesis/metrics_compared",
            lambda p: ", ".join(r.replace("_", " ") for r in p["references"])),
    Setting("decision tree (Miró-Nicolau et al.)", "—", "synthesis/metrics_compared",
            "depth {tree_depth}, {tree_images} images"),
)
"""The chapter's set-up table: the papers' defaults for each metric against ours (the executed notebook's
parameters); "—" where no paper sets it."""


@dataclass
class Setup:
    """One classifier with the data and ground truth the synthesis needs.

    name, use_case: labels; model/finetuned: eval-mode classifier and its F-Fidelity fine-tuned twin (None for the
    decision tree, which has no gradient to fine-tune); x, y: the
    test images and labels evaluated; truth ``(B, 1, H, W)``: the ground-truth map; accuracy: of model on x;
    spec: the setup's configuration; normalisation: the ``(mean, std)`` x was standardised with (the data's
    ``info``), for Few-class Fidelity's candidate search on pixel values."""

    name: str
    use_case: str
    model: nn.Module
    finetuned: nn.Module | None
    x: torch.Tensor
    y: torch.Tensor
    truth: torch.Tensor
    accuracy: float
    spec: dict = field(default_factory=dict)
    normalisation: tuple[tuple[float, ...], tuple[float, ...]] | None = None


def _normalisation(d: TensorData) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The (mean, std) per channel the canvases were standardised with (their ``info``)."""
    return tuple(float(v) for v in d.info["mean"]), tuple(float(v) for v in d.info["std"])


def _classes(d: TensorData, classes: Sequence[int] | None) -> TensorData:
    """The samples of ``classes`` only, relabelled 0..len(classes)-1 (None: all)."""
    if classes is None:
        return d
    keep = torch.zeros_like(d.y, dtype=torch.bool)
    relabel = torch.full((int(d.y.max()) + 1,), -1, dtype=torch.int64, device=d.y.device)
    for i, c in enumerate(classes):
        keep |= d.y == c
        relabel[c] = i
    idx = keep.nonzero().squeeze(1)
    info = {**d.info, "n_classes": len(classes), "classes": list(classes),
            "class_names": [d.info["class_names"][c] for c in classes]}
    return TensorData(d.x[idx], relabel[d.y[idx]], mask=None if d.mask is None else d.mask[idx], info=info)


def setup(spec: Mapping, *, n_test: int, image_size: int = 16, r: float = 0.3, beta: float = 0.1,
          n_finetune_epochs: int = 4, seed: int = 0, device: str | torch.device = "cpu") -> Setup:
    """Train (or load from the cache) the classifier a setup describes → :class:`Setup`.

    spec: ``name``, ``use_case``, ``model`` ("linear", "small_cnn" or "vit"), ``color`` (coloured canvases: the
    removal value is out of distribution), ``classes`` (a subset of the digits, relabelled; None: all ten),
    ``n_epochs``, and the model's own options (``width``; ``patch_size``, ``dim``, ``depth``, ``heads``).
    Canvas digits of ``image_size`` px covering a fraction ``r``; Adam lr 3e-3 (ViT: AdamW 2e-3, cosine), batch 64;
    the fine-tuned twin: F-Fidelity's random removal of up to β·n pixels, ``n_finetune_epochs`` epochs, lr 1e-3.
    The first ``n_test`` test images are evaluated.
    """
    for key in ("name", "model"):
        if key not in spec:
            raise ValueError(f"spec must have a {key!r} entry, got keys {sorted(spec)}")
    kind = _validate.one_of(spec["model"], "spec['model']", ("linear", "small_cnn", "vit"))
    color, classes, n_train = bool(spec.get("color", False)), spec.get("classes"), spec.get("n_train")
    canvas = {"size": image_size, "r": r, "color": color, "seed": seed}
    parts = {s: _classes(data.load("canvas_digits", split=s, **({"n": n_train} if s == "train" else {}), **canvas),
                         classes) for s in ("train", "test")}
    channels, n_classes = 3 if color else 1, parts["train"].info["n_classes"]
    epochs = spec.get("n_epochs", 8)
    if kind == "linear":
        config = {"in_channels": channels, "n_classes": n_classes, "image_size": image_size}
        tc = train.TrainConfig(epochs=epochs, lr=3e-3, batch_size=64, seed=seed)
    elif kind == "small_cnn":
        config = {"in_channels": channels, "n_classes": n_classes, "width": spec.get("width", 16)}
        tc = train.TrainConfig(epochs=epochs, lr=3e-3, batch_size=64, seed=seed)
    else:
        config = {"image_size": image_size, "patch_size": spec.get("patch_size", 4), "in_channels": channels,
                  "n_classes": n_classes, "dim": spec.get("dim", 48), "depth": spec.get("depth", 2),
                  "heads": spec.get("heads", 4)}
        tc = train.TrainConfig(epochs=epochs, lr=2e-3, batch_size=64, seed=seed, optimizer="adamw",
                               weight_decay=0.05, scheduler="cosine")
    # the F-Fidelity chapter's key for the same data, so its trained CNNs are found in the cache
    key = {"dataset": "canvas_digits", "n": n_train, **canvas, **({"classes": list(classes)} if classes else {})}
    model, history = train.fit(kind, config, parts["train"], tc, data_key=key, test_data=parts["test"],
                               device=device, progress=False)
    model = model.to(device).eval()
    ft = train.TrainConfig(epochs=spec.get("n_finetune_epochs", n_finetune_epochs), lr=1e-3, batch_size=64,
                           seed=seed)
    tuned, _ = train.finetune(model, parts["train"], ft, train.RandomRemoval(beta), data_key=key,
                              base_key=history["key"], test_data=parts["test"], device=device, progress=False)
    test = parts["test"]
    n = min(_validate.positive_int(n_test, "n_test"), len(test))
    x, y = test.x[:n].to(device), test.y[:n].to(device)
    with torch.no_grad():
        pred = model(x).argmax(1)
    if kind == "linear":
        truth = model.contributions(x, pred).sum(1, keepdim=True)
    else:
        truth = explainers.ground_truth(test.mask[:n], x)[:, None]
    return Setup(spec["name"], spec.get("use_case", ""), model, tuned.to(device).eval(), x, y, truth,
                 float((pred == y).double().mean()), dict(spec), _normalisation(test))


def tree_setup(*, max_depth: int, n_test: int, image_size: int = 16, r: float = 0.3, n_train: int | None = None,
               seed: int = 0, train_seed: int | None = None, device: str | torch.device = "cpu") -> Setup:
    """A decision tree on grey canvas digits, with its perfect explanation as the ground truth → :class:`Setup`.

    A scikit-learn ``DecisionTreeClassifier`` (Gini, ``max_depth``, ``random_state=seed``) fitted on the flattened
    pixels of the training canvases (the data of :func:`setup`'s grey setups: ``image_size`` px, digit fraction ``r``,
    ``n_train`` training images, None: all), wrapped as :class:`faithlab.models.DecisionTree`. The first ``n_test``
    test images are evaluated; ``truth`` is the tree's impurity-drop path explanation
    (:meth:`~faithlab.models.DecisionTree.path_importance`, Miró-Nicolau et al. 2024), which does not depend on the
    class explained. No fine-tuned twin (``finetuned`` None): the tree has no gradient to fine-tune. Fitting takes
    a fraction of a second, so the tree is not cached.

    train_seed: the tree's ``random_state`` (default ``seed``), the seed of an independently trained replica
    (``fl.verdicts.replica_seed``): the data (``seed``) stay the same. The canvases' pixels are binary, so many
    candidate splits tie in impurity and ``random_state``, which orders the features tried at each node, decides
    between them: trees of other training seeds split on other pixels."""
    require("sklearn", "tree_setup")
    from sklearn.tree import DecisionTreeClassifier

    depth = _validate.positive_int(max_depth, "max_depth")
    for value, name in ((seed, "seed"), (train_seed, "train_seed")):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    train_seed = seed if train_seed is None else train_seed
    canvas = {"size": image_size, "r": r, "color": False, "seed": seed}
    train_part = data.load("canvas_digits", split="train", **({} if n_train is None else {"n": n_train}), **canvas)
    test = data.load("canvas_digits", split="test", **canvas)
    estimator = DecisionTreeClassifier(max_depth=depth, random_state=train_seed)
    estimator.fit(train_part.x.flatten(1).numpy(), train_part.y.numpy())
    model = models.DecisionTree.from_sklearn(estimator, shape=tuple(train_part.x.shape[1:])).to(device).eval()
    n = min(_validate.positive_int(n_test, "n_test"), len(test))
    x, y = test.x[:n].to(device), test.y[:n].to(device)
    with torch.no_grad():
        pred = model(x).argmax(1)
    spec = {"name": f"decision tree (depth {depth})", "model": "decision_tree", "max_depth": depth,
            "depth": model.depth, "nodes": int(model.feature.shape[0]), "n_train": len(train_part),
            "train_seed": train_seed}
    return Setup(spec["name"], "a transparent, non-additive model", model, None, x, y, model.path_importance(x),
                 float((pred == y).double().mean()), spec, _normalisation(test))


def degraded_name(xi: float) -> str:
    """The explainer name of the ground truth degraded at level ξ."""
    return f"GT ξ={xi:g}"


def explainer_maps(s: Setup, *, noise_levels: Sequence[float], methods: Mapping[str, tuple[str, dict]],
                   seed: int = 0, x: torch.Tensor | None = None, model: nn.Module | None = None,
                   batch_size: int = 256) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The explainers of a setup → (maps by name, quality by name for the ones whose quality is known).

    The ground truth degraded at every ξ of ``noise_levels`` (quality −ξ; the same permutation seed for every
    level, so the levels differ by the share permuted only), then ``methods`` ``{name: (explainer method,
    options)}`` through :func:`faithlab.explainers.explain` on ``model`` (default the setup's) and ``x`` (default
    the setup's), explaining the model's prediction; their quality is unknown. The ground truth does not depend
    on the model or on small input noise, so it is reused as it is."""
    model = s.model if model is None else model
    x = s.x if x is None else x
    maps, quality = {}, {}
    for xi in noise_levels:
        name = degraded_name(xi)
        maps[name] = explainers.degrade(s.truth, xi, generator=seed)
        quality[name] = -float(xi)
    with torch.no_grad():
        target = model(x).argmax(1)
    for name, (method, options) in methods.items():
        opts = dict(options)
        if method == "random":
            opts.setdefault("generator", seed)
        maps[name] = explainers.explain(model, x, target, method=method, batch_size=batch_size, **opts).detach()
    return maps, quality


def _units(frame: pd.DataFrame) -> list[str]:
    """The columns that name a unit of a frame: ``replica`` and ``sample`` when the frame pools trained replicas
    (the same sample index in two replicas is two units), else ``sample``."""
    return ["replica", "sample"] if "replica" in frame.columns else ["sample"]


def _replica_codes(wide: pd.DataFrame):
    """The replica of each row of a frame indexed by :func:`_units` (None without replicas): the ``groups`` of the
    two-stage bootstrap (replicas, then images within them)."""
    return wide.index.get_level_values("replica").astype(str).to_numpy() if "replica" in wide.index.names else None


def _matrix(frame: pd.DataFrame, metric: str, names: Sequence[str]) -> torch.Tensor:
    """Oriented per-sample scores of one metric ``(samples, explainers)`` in the order of ``names`` (samples: the
    (replica, sample) units when the frame carries a ``replica`` column)."""
    part = evaluation.oriented(frame[(frame["metric"] == metric) & frame["explainer"].isin(names)])
    wide = part.pivot(index=_units(part), columns="explainer", values="oriented")[list(names)]
    return torch.tensor(wide.to_numpy(dtype=float).copy(), dtype=torch.float64, device="cpu")


def recovery(frame: pd.DataFrame, quality: Mapping[str, float], *, seed: int = 0, n_boot: int = 2000
             ) -> pd.DataFrame:
    """How well each per-sample metric of an :func:`~faithlab.evaluate` frame recovers a known ranking of explainers.

    quality: ``{explainer: known quality}`` (higher = better; e.g. −ξ). Per metric: ``spearman`` the mean over
    samples of the Spearman correlation between the metric's oriented scores and the quality (a sample whose
    scores do not vary across the explainers has no ranking and counts as 0), ``spearman std`` over samples,
    ``undefined`` the share of such samples, ``pairwise`` the share of explainer pairs of different quality that
    the metric orders rightly (ties count ½), and ``dataset spearman`` the Spearman of the mean scores (the
    ranking a user who averages over samples sees). 1 is perfect recovery for all but ``undefined``.
    ``spearman low`` / ``spearman high``: the 95 % percentile bootstrap interval of ``spearman`` over the samples
    (``n_boot`` resamples, generator ``seed``: the same resamples for every metric, so intervals are comparable).
    """
    names = list(quality)
    if len(names) < 2:
        raise ValueError(f"quality must rank at least 2 explainers, got {names}")
    q = torch.tensor([quality[n] for n in names], dtype=torch.float64, device="cpu")
    i, j = torch.triu_indices(len(names), len(names), offset=1, device="cpu")
    differ = q[i] != q[j]
    rows = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        m = _matrix(frame, metric, names)
        flat = (m == m[:, :1]).all(1)
        zero = torch.zeros((), dtype=torch.float64, device="cpu")
        rho = torch.where(flat, zero, spearman(m, q.expand_as(m)).nan_to_num(0.0))
        better = torch.sign(m[:, i] - m[:, j]) * torch.sign(q[i] - q[j])
        pair = ((better > 0).double() + 0.5 * (better == 0).double())[:, differ]
        means = m.mean(0)
        spread = verdicts.bootstrap_diff(rho, n_boot=n_boot, seed=seed) if rho.numel() > 1 else None
        rows.append({"metric": metric, "label": evaluation.METRICS[metric].label, "spearman": rho.mean().item(),
                     "spearman low": spread.low if spread else float("nan"),
                     "spearman high": spread.high if spread else float("nan"),
                     "spearman std": rho.std(correction=0).item(), "undefined": flat.double().mean().item(),
                     "pairwise": pair.mean().item(),
                     "dataset spearman": 0.0 if bool((means == means[0]).all()) else spearman(means, q).item()})
    return pd.DataFrame(rows)


def ideal_gap(frame: pd.DataFrame, explainer: str, *, tolerance: float = 0.3) -> pd.DataFrame:
    """Distance of one explainer's scores from each metric's ideal value, as a share of the metric's range, for the
    metrics that define both (:data:`faithlab.evaluation.METRICS`): ``gap`` mean |score − ideal| / span,
    ``within`` the share of samples within ``tolerance`` of the ideal (Miró-Nicolau et al. 2024 asked whether
    fidelity metrics score a perfect explanation within 30 % of their ideal)."""
    tolerance = _validate.fraction(tolerance, "tolerance")
    part = frame[(frame["explainer"] == explainer) & (frame["level"] == "sample")]
    if part.empty:
        raise ValueError(f"explainer {explainer!r} has no per-sample rows in frame")
    rows = []
    for metric, scores in part.groupby("metric", sort=False)["score"]:
        info = evaluation.METRICS[metric]
        if info.ideal is None or info.span is None:
            continue
        gap = (scores - info.ideal).abs() / info.span
        rows.append({"metric": metric, "label": info.label, "ideal": info.ideal, "mean score": scores.mean(),
                     "gap": gap.mean(), "within": float((gap <= tolerance).mean())})
    return pd.DataFrame(rows, columns=["metric", "label", "ideal", "mean score", "gap", "within"])


PAPER_IDEAL_GAP = ("no fidelity metric scores the perfect explanation of a decision tree within 30 % of its ideal; "
                   "the best is 30 % off (two synthetic 128 × 128 image sets)")
"""Miró-Nicolau et al. (2024)'s finding, as the claims table shows it."""


def _per_image(frame: pd.DataFrame, metric: str, names: Sequence[str]) -> pd.DataFrame:
    """Raw per-sample scores of one metric, one column per explainer of ``names`` (rows: samples, or (replica,
    sample) units when the frame carries replicas)."""
    part = frame[(frame["metric"] == metric) & (frame["level"] == "sample") & frame["explainer"].isin(names)]
    return part.pivot(index=_units(part), columns="explainer", values="score").reindex(columns=list(names))


def claim_ideal_gap(frame: pd.DataFrame, *, perfect: str, random: str, tolerance: float = 0.3, setting: str = "",
                    n_boot: int = 4000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Miró-Nicolau et al. (2024): no fidelity metric scores the perfect explanation of a transparent model within
    ``tolerance`` (30 %) of the metric's ideal.

    frame: an :func:`~faithlab.evaluate` frame holding the explainers ``perfect`` (the model's perfect explanation)
    and ``random`` (random maps, the null) on the same images: of one model, or of several independently trained
    replicas of it stacked with a ``replica`` column (a unit is then a replica × image, and every interval below is
    the two-stage bootstrap of :func:`faithlab.verdicts.bootstrap_diff` with ``groups``: the replicas resampled,
    then the images within each drawn replica). Metrics: the per-sample metrics of the frame with an ideal value
    and a range (:data:`faithlab.evaluation.METRICS`); an image's gap is |score − ideal| / range
    (:func:`ideal_gap`, pooled over the replicas). Images where a metric is undefined (NaN) are left out of it.

    Premise and null, per metric: the metric must score the perfect explanation significantly better than random
    maps (paired bootstrap over (replicas, then) images of the oriented difference perfect − random, its ``level``
    interval above 0; the chance level, random maps' mean score resampled the same way, is in the table). A metric
    that cannot tell the perfect explanation from random maps says nothing about fidelity here and does not count;
    when none counts, the claim is not testable here.
    Rule (fixed before any result): per counted metric, the ``level`` bootstrap interval (over replicas, then images)
    of its mean gap lies below ``tolerance`` (within), above it (beyond) or across it (undecided); the claim holds for
    a metric that is beyond and fails for one within, and is decided by :func:`faithlab.verdicts.from_settings` with
    every counted metric required (an undecided metric that could tip it leaves the claim inconclusive). setting: a
    label appended to the claim's text.

    Returns a :class:`faithlab.verdicts.Claim` whose table has one row per metric with an ideal: ideal, range, the
    perfect and random means, the chance range (``chance low``/``high``), the paired comparison (``perfect −
    random``, ``low``, ``high``, ``beats random``), the mean ``gap`` with its interval, random maps' gap, the
    ``share within`` tolerance (:func:`ideal_gap`), the ``images`` scored (pooled over the replicas), the
    ``replicas`` and the ``outcome``."""
    tol = _validate.fraction(tolerance, "tolerance", closed_low=False)
    present = set(frame.loc[frame["level"] == "sample", "explainer"])
    for value, arg in ((perfect, "perfect"), (random, "random")):
        if value not in present:
            raise ValueError(f"{arg} must name an explainer with per-sample rows in frame, got {value!r}; frame has "
                             f"{sorted(present)}")
    if perfect == random:
        raise ValueError(f"perfect and random must name different explainers, got {perfect!r} for both")
    gaps = ideal_gap(frame, perfect, tolerance=tol).set_index("metric")
    chance = ideal_gap(frame, random, tolerance=tol).set_index("metric")
    n_replicas = int(frame["replica"].nunique()) if "replica" in frame.columns else 1
    nan = float("nan")
    rows = []
    for metric in gaps.index:
        info = evaluation.METRICS[metric]
        wide = _per_image(frame, metric, [perfect, random])
        a, b = wide[perfect].to_numpy(dtype=float), wide[random].to_numpy(dtype=float)
        groups = _replica_codes(wide)
        sign = 1.0 if info.higher_is_better else -1.0
        row = {"metric": metric, "label": info.label, "ideal": info.ideal, "range": info.span,
               "perfect mean": float(pd.Series(a).mean()), "random mean": float(pd.Series(b).mean()),
               "chance low": nan, "chance high": nan, "perfect − random": nan, "low": nan, "high": nan,
               "beats random": False, "gap": float(gaps.loc[metric, "gap"]), "gap low": nan, "gap high": nan,
               "random gap": float(chance.loc[metric, "gap"]) if metric in chance.index else nan,
               "share within": float(gaps.loc[metric, "within"]), "images": int((~pd.isna(a)).sum()),
               "replicas": n_replicas, "outcome": "not counted"}
        if int((~(pd.isna(a) | pd.isna(b))).sum()) >= 2:
            c = verdicts.bootstrap_diff(sign * a, sign * b, n_boot=n_boot, level=level, seed=seed, groups=groups)
            row.update({"perfect − random": c.mean, "low": c.low, "high": c.high, "beats random": c.outcome == "win"})
        kept = ~pd.isna(b)
        if int(kept.sum()) >= 2:
            codes = None if groups is None else torch.from_numpy(
                pd.factorize(groups[kept], sort=True)[0].astype("int64"))
            draws = verdicts.hierarchical_means(torch.tensor(b[kept], dtype=torch.float64, device="cpu"), groups=codes,
                                                n_boot=1000, seed=seed)
            null = verdicts.Null(f"random maps' mean {info.label}, "
                                 + ("replicas, then images resampled" if n_replicas > 1 else "images resampled"),
                                 tuple(draws.tolist()), level)
            row.update({"chance low": null.low, "chance high": null.high})
        gap = (pd.Series(a) - info.ideal).abs().to_numpy() / info.span
        defined = ~pd.isna(gap)
        if row["beats random"] and int(defined.sum()) >= 2:
            g = verdicts.bootstrap_diff(gap[defined] - tol, n_boot=n_boot, level=level, seed=seed,
                                        groups=None if groups is None else groups[defined])
            row.update({"gap low": g.low + tol, "gap high": g.high + tol,
                        "outcome": {"win": "beyond", "loss": "within", "tie": "undecided"}[g.outcome]})
        rows.append(row)
    table = pd.DataFrame(rows)
    pct, interval = f"{tol * 100:g} %", f"{level * 100:g} %"
    over = "replicas, then images within them" if n_replicas > 1 else "images"
    counted = table[table["beats random"]] if len(table) else table
    by = {o: (counted.loc[counted["outcome"] == o, "label"].tolist() if len(counted) else [])
          for o in ("within", "beyond", "undecided")}
    rule = (f"per metric with an ideal value that scores the perfect explanation significantly above random maps, "
            f"the {interval} bootstrap interval over {over} of its mean |score − ideal| / range against the margin "
            f"{pct}: the claim holds for the metric when the interval lies above {pct}, fails when below; it is "
            "made of every counted metric")
    premise = (f"null: random maps; a metric counts only if the {interval} paired-bootstrap interval over {over} of "
               f"perfect − random (oriented) lies above 0: "
               + (f"{', '.join(counted['label']) or 'none'} of {', '.join(table['label'])}" if len(table)
                  else "no metric with an ideal value"))
    untestable = ("no metric of the frame has an ideal value and a range" if table.empty else
                  "no metric scores the perfect explanation significantly above random maps" if counted.empty
                  else None)
    holds = ([True] * len(by["beyond"]) + [False] * len(by["within"]) + [None] * len(by["undecided"]))
    v = verdicts.from_settings(holds, reproduced=1.0, partly=1.0, untestable=untestable, what="counted metrics")
    if untestable is None:
        v = v.with_why(f"{len(counted)} of {len(table)} metrics with an ideal tell the perfect explanation from random "
                       f"maps; within {pct}: {', '.join(by['within']) or 'none'}; beyond: "
                       f"{', '.join(by['beyond']) or 'none'}; undecided: {', '.join(by['undecided']) or 'none'}"
                       + ("" if v != verdicts.INCONCLUSIVE else " (the undecided could tip it either way)"))
    ours = "; ".join(f"{r['label']} {100 * r['gap']:.0f} % off (random maps {100 * r['random gap']:.0f} %"
                     f"{'' if r['beats random'] else '; not above them'})" for _, r in table.iterrows())
    return verdicts.Claim(
        f"No fidelity metric scores a perfect explanation of a transparent model within {pct} of its ideal"
        + (f" ({setting})" if setting else ""),
        rule=rule, premise=premise, paper_value=PAPER_IDEAL_GAP,
        our_value=(f"{len(by['within'])} of {len(counted)} counted metrics within {pct}: {ours}" if len(table)
                   else "no metric with an ideal value"),
        verdict=v, table=table, units=int(counted["images"].min()) if len(counted) else None)


def _means(frame: pd.DataFrame, names: Sequence[str]) -> dict[str, torch.Tensor]:
    out = {}
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        out[metric] = _matrix(frame, metric, names).nanmean(0)  # NaN: a μF of constant outputs
    return out


def _rank_agreement(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman of two explainer rankings; 0 when either does not vary (no ranking to keep), NaN when either is
    undefined."""
    if bool(torch.isnan(a).any()) or bool(torch.isnan(b).any()):
        return float("nan")
    if bool((a == a[0]).all()) or bool((b == b[0]).all()):
        return 0.0
    return spearman(a, b).item()


def resilience(base: pd.DataFrame, perturbed: Mapping[str, pd.DataFrame], names: Sequence[str]) -> pd.DataFrame:
    """Noise resilience (MetaQuantus): the Spearman between each metric's ranking of the explainers ``names`` (mean
    oriented scores) on the original frame and on each frame of slightly perturbed models or inputs
    (``perturbed`` ``{condition: frame}``) → one row per metric and condition plus the mean (``condition``
    "mean"); 1: the ranking does not move."""
    ref = _means(base, names)
    rows = []
    for condition, frame in perturbed.items():
        other = _means(frame, names)
        rows += [{"metric": m, "condition": condition, "resilience": _rank_agreement(ref[m], other[m])} for m in ref]
    table = pd.DataFrame(rows)
    mean = table.groupby("metric", sort=False)["resilience"].mean().reset_index().assign(condition="mean")
    return pd.concat([table, mean], ignore_index=True)


def reactivity(base: pd.DataFrame, randomised: pd.DataFrame, names: Sequence[str], *, truth: str,
               random: str) -> pd.DataFrame:
    """Adversary reactivity (MetaQuantus): per metric, ``model`` (1 − Spearman between its ranking of ``names`` on
    the original and on a randomised model) / 2, 1 when the ranking reverses and ½ when it is unrelated;
    ``explanation`` the share of samples where the ground truth ``truth`` scores better than the random map
    ``random`` (ties ½; ½ when the metric cannot tell them apart); ``reactivity`` their mean."""
    ref, other = _means(base, names), _means(randomised, names)
    wins = beats(base, truth, random).set_index("metric")["share"]
    rows = []
    for metric in ref:
        model = (1 - _rank_agreement(ref[metric], other[metric])) / 2
        rows.append({"metric": metric, "model": model, "explanation": wins[metric],
                     "reactivity": (model + wins[metric]) / 2})
    return pd.DataFrame(rows)


def beats(frame: pd.DataFrame, explainer: str, other: str) -> pd.DataFrame:
    """Per per-sample metric, the share of samples where ``explainer`` scores better than ``other`` (oriented
    scores; ties count ½, so ½ means the metric cannot tell them apart) → columns ``metric``, ``share``."""
    rows = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        both = _matrix(frame, metric, [explainer, other])
        win = (both[:, 0] > both[:, 1]).double() + 0.5 * (both[:, 0] == both[:, 1]).double()
        rows.append({"metric": metric, "share": win.mean().item()})
    return pd.DataFrame(rows, columns=["metric", "share"])


CRITERIA = {"recovery": True, "OOD recovery": True, "resilience": True, "reactivity": True, "cost": False}
"""The report card's criteria and whether higher is better."""


def report_card(recovery_by_setup: pd.DataFrame, resilience_table: pd.DataFrame, reactivity_table: pd.DataFrame,
                cost_table: pd.DataFrame, *, ood_setup: str) -> pd.DataFrame:
    """One row per metric: ``recovery`` (mean per-sample Spearman over the setups), ``OOD recovery`` (on
    ``ood_setup``), ``resilience`` (mean), ``reactivity``, ``cost`` (model inputs per sample and explainer), the
    rank on each criterion (1 = best, ties averaged) and ``overall`` the mean rank, sorted by it.

    recovery_by_setup: :func:`recovery` tables stacked with a ``setup`` column; cost_table: ``metric`` and
    ``inputs per sample``."""
    rec = recovery_by_setup.groupby("metric", sort=False)["spearman"].mean()
    ood = recovery_by_setup[recovery_by_setup["setup"] == ood_setup].set_index("metric")["spearman"]
    if ood.empty:
        raise ValueError(f"ood_setup {ood_setup!r} is not a setup of recovery_by_setup")
    res = resilience_table[resilience_table["condition"] == "mean"].set_index("metric")["resilience"]
    card = pd.DataFrame({"recovery": rec, "OOD recovery": ood, "resilience": res,
                         "reactivity": reactivity_table.set_index("metric")["reactivity"],
                         "cost": cost_table.set_index("metric")["inputs per sample"]}).dropna()
    card.index.name = "metric"
    for criterion, higher in CRITERIA.items():
        card[f"rank {criterion}"] = card[criterion].rank(ascending=not higher, method="average")
    card["overall"] = card[[f"rank {c}" for c in CRITERIA]].mean(axis=1)
    card.insert(0, "label", [evaluation.METRICS[m].label for m in card.index])
    return card.sort_values(["overall", "recovery"], ascending=[True, False]).reset_index()


def recommendations(recovery_by_setup: pd.DataFrame, card: pd.DataFrame, use_cases: Mapping[str, str], *,
                    top: int = 2) -> dict[str, str]:
    """One generated sentence per use case: the metrics that recovered the known ranking best on the setup of that
    use case (``use_cases`` ``{use case: setup name}``), with their numbers, the worst one, and the overall
    report-card leader. Every number comes from the tables."""
    out = {}
    for case, name in use_cases.items():
        part = recovery_by_setup[recovery_by_setup["setup"] == name].sort_values("spearman", ascending=False)
        if part.empty:
            raise ValueError(f"use_cases[{case!r}] names setup {name!r}, absent from recovery_by_setup")
        best = part.head(top)
        worst = part.iloc[-1]
        listed = " and ".join(f"{r.label} (Spearman {r.spearman:.2f})" for r in best.itertuples())
        out[case] = (f"For {case} (setup “{name}”), {listed} recovered the known ranking of the degraded explainers "
                     f"best; {worst.label} did worst ({worst.spearman:.2f}).")
    lead = card.iloc[0]
    out["overall"] = (f"Over all criteria the report card ranks {lead.label} first (mean rank {lead.overall:.1f} "
                      f"of {len(card)} metrics).")
    return out


def cost_per_metric(frame: pd.DataFrame) -> pd.DataFrame:
    """What each metric of an :func:`~faithlab.evaluate` frame costs for one explainer: ``inputs per sample``
    (model inputs; Few-class Fid includes its perturbation search, which :func:`~faithlab.evaluate` runs once for
    all explainers), ``explained per sample`` (inputs given to the explainer) and ``ms per sample``; metrics
    computed together (``shared with``) share these numbers. The clean pass and the fully removed inputs, which
    every explainer and metric share (one input per sample and reference each), are left out."""
    table = evaluation.cost(frame)
    n = int(frame.loc[frame["level"] == "sample", "sample"].nunique())
    if n == 0:
        raise ValueError("frame has no per-sample rows")
    per = table[table["explainer"] != "all"].groupby("group")[["forward_inputs", "explained_inputs",
                                                                 "seconds"]].mean()
    extra = table[table["group"] == "fewclass selection"][["forward_inputs", "seconds"]].sum()
    rows = []
    for metric in frame["metric"].unique():
        info = evaluation.METRICS[metric]
        if info.group not in per.index:
            continue
        g = per.loc[info.group]
        inputs, seconds = g["forward_inputs"], g["seconds"]
        if info.group == "fewclass":
            inputs, seconds = inputs + extra["forward_inputs"], seconds + extra["seconds"]
        together = [evaluation.METRICS[m].label for m in frame["metric"].unique()
                    if evaluation.METRICS[m].group == info.group and m != metric]
        rows.append({"metric": metric, "label": info.label, "inputs per sample": inputs / n,
                     "explained per sample": g["explained_inputs"] / n, "ms per sample": 1000 * seconds / n,
                     "shared with": ", ".join(together)})
    return pd.DataFrame(rows)


def noisy_inputs(x: torch.Tensor, sigma: float, *, generator: torch.Generator | int) -> torch.Tensor:
    """x plus Gaussian noise of std ``sigma`` (in x's units) → x's shape: the slight input perturbation of the
    meta-evaluation. The noise is drawn on the CPU from ``generator`` (device-independent)."""
    sigma = _validate.number(sigma, "sigma")
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    g = _validate.generator(generator, why="to draw the noise")
    noise = torch.randn(tuple(x.shape), generator=g, dtype=torch.float64, device=g.device)
    return x + (sigma * noise).to(x.device, x.dtype)


REFERENCE_SENSITIVE = 0.3
"""A metric whose recovery moves by more than this (Spearman) between removal values on some setup is flagged as
reference-sensitive in :func:`guide`: its verdict depends on a choice the user makes."""

CHAPTER_METRICS = {"ffidelity": ("FFid+", "FFid−"), "fewclass": ("Few-class Fid",), "saco": ("SaCo",),
                   "trace": ("ΣLeRF − ΣMoRF",)}
"""The metric(s) each paper's chapter proposes, by report-card label (ReCo/MeGe need k-fold models and are not
in the report card)."""

COST_CASE = "a cost budget"


def guide(recovery_by_setup: pd.DataFrame, use_cases: Mapping[str, str], *, cost_table: pd.DataFrame,
          reference_spread: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The guide's table: one row per situation and metric.

    Per use case (``{situation: setup name}``): each metric's recovery on that setup with its 95 % interval
    (:func:`recovery`'s ``spearman low``/``high``), ``holds up`` when its interval lies above 0 (it recovers the
    known ranking better than chance) and overlaps the interval of the situation's best metric (the data cannot
    tell it from the best). One more situation, :data:`COST_CASE`, over the use cases where some metric holds up:
    ``situations held`` counts them per metric, which ``holds up`` in at least half of them, ordered by cost (model
    inputs per image and explainer); its recovery is the mean over those setups, its bounds the widest (lowest
    low, highest high). ``reference spread``: the
    largest change of the metric's recovery between removal values (``reference_spread``, NaN where not measured);
    ``reference-sensitive`` when it exceeds :data:`REFERENCE_SENSITIVE`. Sorted by situation (use-case order, then
    the cost case) and recovery."""
    if recovery_by_setup.empty:
        raise ValueError("recovery_by_setup is empty")
    missing = [c for c in ("spearman low", "spearman high") if c not in recovery_by_setup.columns]
    if missing:
        raise ValueError(f"recovery_by_setup lacks {missing}: compute it with syn.recovery")
    cost = cost_table.set_index("label")["inputs per sample"] if "label" in cost_table.columns else \
        cost_table.set_index("metric")["inputs per sample"]
    spread = dict(reference_spread or {})
    rows = []
    for case, name in use_cases.items():
        part = recovery_by_setup[recovery_by_setup["setup"] == name]
        if part.empty:
            raise ValueError(f"use_cases[{case!r}] names setup {name!r}, absent from recovery_by_setup")
        best = part.loc[part["spearman"].idxmax()]
        for r in part.to_dict("records"):
            low, high = r["spearman low"], r["spearman high"]
            rows.append({"situation": case, "setup": name, "metric": r["metric"], "label": r["label"],
                         "recovery": r["spearman"], "low": low, "high": high,
                         "holds up": bool(low > 0 and high >= best["spearman low"]),
                         "best": r["metric"] == best["metric"]})
    table = pd.DataFrame(rows)
    cases = list(use_cases)
    useful = [c for c in cases if table.loc[table["situation"] == c, "holds up"].any()]
    agg = table[table["situation"].isin(useful)].groupby(["metric", "label"], sort=False).agg(
        recovery=("recovery", "mean"), low=("low", "min"), high=("high", "max"), held=("holds up", "sum"))
    for (metric, label), r in agg.iterrows():
        rows.append({"situation": COST_CASE, "setup": f"{len(useful)} situations", "metric": metric, "label": label,
                     "recovery": r["recovery"], "low": r["low"], "high": r["high"],
                     "holds up": bool(2 * int(r["held"]) >= len(useful) > 0), "best": False,
                     "situations held": int(r["held"])})
    table = pd.DataFrame(rows)
    table["cost"] = [float(cost.get(lab, cost.get(m, float("nan")))) for m, lab in zip(table["metric"], table["label"])]
    table["reference spread"] = [float(spread.get(lab, float("nan"))) for lab in table["label"]]
    table["reference-sensitive"] = table["reference spread"] > REFERENCE_SENSITIVE
    order = {c: i for i, c in enumerate([*cases, COST_CASE])}
    cost_rows = table["situation"] == COST_CASE
    table["_o"] = table["situation"].map(order)
    table["_k"] = (-table["recovery"]).where(~cost_rows, table["cost"])
    return table.sort_values(["_o", "holds up", "_k"], ascending=[True, False, True], kind="stable") \
        .drop(columns=["_o", "_k"]).reset_index(drop=True)


def _interval(r: Mapping) -> str:
    return f"{r['recovery']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


def guide_sentences(table: pd.DataFrame, *, n_images: Mapping[str, int] | None = None, top: int = 3
                    ) -> dict[str, str]:
    """One generated sentence per situation of a :func:`guide` table: the metrics that hold up (at most ``top``,
    with their recovery and 95 % interval), the worst, and the caveat of a reference-sensitive metric among them.
    ``n_images``: ``{setup: images}`` to state the scale."""
    out = {}
    for case, part in table.groupby("situation", sort=False):
        setup = str(part["setup"].iloc[0])
        scale = f", {n_images[setup]} images" if n_images and setup in n_images else ""
        held = part[part["holds up"]]
        if case == COST_CASE:
            if held.empty:
                out[case] = ("On a cost budget: no metric holds up in half of the situations, so no cheap choice "
                             "is safe here.")
                continue
            listed = "; ".join(f"{r['label']} ({r['cost']:.0f} model inputs per image and explainer; holds up in "
                               f"{int(r['situations held'])} of them)" for r in held.head(top).to_dict("records"))
            out[case] = (f"On a cost budget, the cheapest metrics that hold up in at least half of the {setup} where "
                         f"some metric does: {listed}.")
            continue
        head = f"For {case} (setup “{setup}”{scale})"
        worst = part.loc[part["recovery"].idxmin()].to_dict()
        first = part.iloc[0].to_dict()
        if held.empty:
            out[case] = (f"{head}, no metric recovers the known ranking significantly better than chance (every "
                         f"95 % interval reaches 0); the best, {first['label']}, scores {_interval(first)}.")
            continue
        shown = held.head(top)
        listed = ", ".join(f"{r['label']} {_interval(r)}" for r in shown.to_dict("records"))
        more = f" and {len(held) - len(shown)} more" if len(held) > len(shown) else ""
        verb = "holds" if len(held) == 1 else "hold"
        text = (f"{head}, {listed}{more} {verb} up: recovery of the known ranking (mean per-image Spearman, 95 % "
                f"interval) above 0 and not distinguishable from the best; {worst['label']} does worst "
                f"({_interval(worst)}).")
        sensitive = shown[shown["reference-sensitive"]]
        if not sensitive.empty:
            names = ", ".join(f"{r['label']} (by {r['reference spread']:.2f})" for r in sensitive.to_dict("records"))
            text += (f" Caveat: the recovery of {names} {'moves' if len(sensitive) == 1 else 'move'} with the "
                     "removal value.")
        out[case] = text
    return out


def answer_sentence(table: pd.DataFrame, card: pd.DataFrame) -> str:
    """The study's answer to "which metric should I trust?" in one generated paragraph: how many situations each
    metric holds up in (:func:`guide`), the metrics that hold up most often, the reference-sensitive ones among them,
    and the report card's leader for contrast."""
    cases = table[table["situation"] != COST_CASE]
    n_cases = cases["situation"].nunique()
    held = cases[cases["holds up"]].groupby("label", sort=False)["situation"].nunique().sort_values(
        ascending=False, kind="stable")
    if held.empty:
        return (f"No metric recovered a known ranking of explainers significantly better than chance in any of the "
                f"{n_cases} controlled situations of this study: the data here do not single out a metric to trust.")
    top = held[held >= max(int(held.iloc[0]) - 1, 1)].head(4)
    names = ", ".join(f"{name} ({int(k)} of {n_cases})" for name, k in top.items())
    text = (f"No metric is best everywhere. Of {n_cases} controlled situations with a known answer, the metrics "
            f"that hold up most often (recovery of the known ranking above chance and not distinguishable from the "
            f"best, 95 % intervals) are {names}")
    spread = cases.groupby("label")["reference-sensitive"].any()
    sensitive = [n for n in top.index if bool(spread.get(n, False))]
    if sensitive:
        text += f"; {', '.join(sensitive)} {'moves' if len(sensitive) == 1 else 'move'} with the removal value"
    never = sorted(set(cases["label"]) - set(held.index))
    if never:
        text += (f"; {len(never)} of {cases['label'].nunique()} metrics {'holds' if len(never) == 1 else 'hold'} "
                 f"up nowhere ({', '.join(never)})")
    lead = card.iloc[0]
    return text + (f". The report card, which weighs five criteria equally (cost included), ranks {lead.label} first "
                   f"(mean rank {lead.overall:.1f} of {len(card)}).")

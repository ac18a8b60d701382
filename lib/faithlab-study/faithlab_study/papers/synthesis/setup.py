"""The synthesis' setups and degraded explainers: classifiers of canvas digits whose right answer is known.

A setup is a classifier of canvas digits (only the digit's pixels carry the class) with its data, its F-Fidelity
fine-tuned twin and the ground-truth map of each test image: the digit mask, or for the transparent linear model
its exact pixel contributions to the predicted logit (:func:`setup`). A second transparent model, a scikit-learn
decision tree (:func:`tree_setup`), is not additive: its perfect explanation is the impurity drop along each image's
decision path. Explainers of known quality are the ground truth degraded at noise levels ξ (F-Fidelity's protocol,
spec §1.8; :func:`explainer_maps`): lower ξ is better. The chapter's set-up table is ``SETUP``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from faithlab import _validate, data, evaluation, explainers, metrics, models, train

from faithlab_study import recipes
from faithlab._optional import require
from faithlab.data import TensorData
from faithlab.metrics.papers.fewclass.fidelity import candidate_grid
from faithlab_study.papers.setup import Setting
from faithlab_study.verdicts.replication import Replica, data_seed, replica_draws, training_seed

__all__ = ["Setup", "setup", "tree_setup", "part_rows", "degraded_name", "explainer_maps", "evaluate_again"]


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
    ``info``), for Few-class Fidelity's candidate search on pixel values; replica: the trained replica
    (:func:`faithlab_study.verdicts.replicas`) the classifier is, None for a single model (trained with ``seed``)."""

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
    replica: Replica | None = None


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


def _seeds(seed, replica: Replica | None) -> int:
    """The training seed: ``replica.seed``, or ``seed`` for a single model (``replica`` None); ``seed`` checked to be
    a non-negative int."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return training_seed(seed, replica)


def part_rows(n_available: int, n_test: int, part: tuple[int, int]) -> slice:
    """The test images of one replica: ``part`` = (i, k) cuts the ``n_available`` test images into k disjoint,
    equal parts (the last ``n_available mod k`` images are left out) and takes the first ``n_test`` images of part
    i, so that k independently trained replicas score k disjoint sets of images (independent units) → a slice."""
    if (not isinstance(part, (tuple, list)) or len(part) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in part)):
        raise ValueError(f"part must be (i, k), two ints, got {part!r}")
    i, k = part
    if k < 1 or not 0 <= i < k:
        raise ValueError(f"part must be (i, k) with k ≥ 1 and 0 ≤ i < k, got {part!r}")
    size = n_available // k
    if size < 1:
        raise ValueError(f"part {part!r}: {n_available} test images cannot be cut into {k} parts")
    n = min(_validate.positive_int(n_test, "n_test"), size)
    return slice(i * size, i * size + n)


def setup(spec: Mapping, *, n_test: int, image_size: int = 16, r: float = 0.3, beta: float = 0.1,
          n_finetune_epochs: int = 4, seed: int = 0, replica: Replica | None = None,
          part: tuple[int, int] = (0, 1), device: str | torch.device = "cpu") -> Setup:
    """Train (or load from the cache) the classifier a setup describes → :class:`Setup`.

    spec: ``name``, ``use_case``, ``model`` ("linear", "small_cnn" or "vit"), ``color`` (coloured canvases: the
    removal value is out of distribution), ``classes`` (a subset of the digits, relabelled; None: all ten),
    ``n_train`` (training images; None: all), ``n_epochs``, ``n_finetune_epochs``, and the model's own options
    (``width``; ``patch_size``, ``dim``, ``depth``, ``heads``).
    Canvas digits of ``image_size`` px covering a fraction ``r`` (drawn with ``seed``); Adam lr 3e-3 (ViT: AdamW
    2e-3, cosine), batch 64; the fine-tuned twin: F-Fidelity's random removal of up to β·n pixels,
    ``n_finetune_epochs`` epochs, lr 1e-3. replica: the trained replica (:func:`faithlab_study.verdicts.replicas`):
    ``replica.seed`` seeds the training and the fine-tuning (None: ``seed``), on the replica's own draw of the
    canvases (:func:`~faithlab_study.verdicts.replication.data_seed` of ``seed`` and its index; None: ``seed``).
    part: (i, k), the test images evaluated: up to ``n_test`` of the i-th of k disjoint parts of the test split
    (:func:`part_rows`; the default (0, 1): the first ``n_test``), so that k replicas score disjoint images.
    """
    for key in ("name", "model"):
        if key not in spec:
            raise ValueError(f"spec must have a {key!r} entry, got keys {sorted(spec)}")
    kind = _validate.one_of(spec["model"], "spec['model']", ("linear", "small_cnn", "vit"))
    train_seed = _seeds(seed, replica)
    color, classes, n_train = bool(spec.get("color", False)), spec.get("classes"), spec.get("n_train")
    canvas = {"size": image_size, "r": r, "color": color, "seed": data_seed(seed, replica)}
    parts = {s: _classes(data.load("canvas_digits", split=s, **({"n": n_train} if s == "train" else {}), **canvas),
                         classes) for s in ("train", "test")}
    channels, n_classes = 3 if color else 1, parts["train"].info["n_classes"]
    epochs = spec.get("n_epochs", 8)
    if kind == "linear":
        config = {"in_channels": channels, "n_classes": n_classes, "image_size": image_size}
        tc = train.TrainConfig(epochs=epochs, lr=3e-3, batch_size=64, seed=train_seed)
    elif kind == "small_cnn":
        config = {"in_channels": channels, "n_classes": n_classes, "width": spec.get("width", 16)}
        tc = train.TrainConfig(epochs=epochs, lr=3e-3, batch_size=64, seed=train_seed)
    else:
        config = {"image_size": image_size, "patch_size": spec.get("patch_size", 4), "in_channels": channels,
                  "n_classes": n_classes, "dim": spec.get("dim", 48), "depth": spec.get("depth", 2),
                  "heads": spec.get("heads", 4)}
        tc = train.TrainConfig(epochs=epochs, lr=2e-3, batch_size=64, seed=train_seed, optimizer="adamw",
                               weight_decay=0.05, scheduler="cosine")
    # the F-Fidelity chapter's key for the same data (seed, replica and options), so its trained CNNs are found in the
    # cache
    key = {"dataset": "canvas_digits", "n": n_train, **canvas, **({"classes": list(classes)} if classes else {})}
    model, history = train.fit(kind, config, parts["train"], tc, data_key=key, test_data=parts["test"],
                               device=device, progress=False)
    model = model.to(device).eval()
    ft = train.TrainConfig(epochs=spec.get("n_finetune_epochs", n_finetune_epochs), lr=1e-3, batch_size=64,
                           seed=train_seed)
    tuned, _ = train.finetune(model, parts["train"], ft, train.RandomRemoval(beta), data_key=key,
                              base_key=history["key"], test_data=parts["test"], device=device, progress=False)
    test = parts["test"]
    rows = part_rows(len(test), n_test, part)
    x, y = test.x[rows].to(device), test.y[rows].to(device)
    with torch.no_grad():
        pred = model(x).argmax(1)
    if kind == "linear":
        truth = model.contributions(x, pred).sum(1, keepdim=True)
    else:
        truth = explainers.ground_truth(test.mask[rows], x)[:, None]
    return Setup(spec["name"], spec.get("use_case", ""), model, tuned.to(device).eval(), x, y, truth,
                 float((pred == y).double().mean()), {**spec, "train_seed": train_seed, "part": tuple(part),
                                                       "first_test_image": rows.start}, _normalisation(test),
                 replica)


def tree_setup(*, max_depth: int, n_test: int, image_size: int = 16, r: float = 0.3, n_train: int | None = None,
               seed: int = 0, replica: Replica | None = None, part: tuple[int, int] = (0, 1),
               device: str | torch.device = "cpu") -> Setup:
    """A decision tree on grey canvas digits, with its perfect explanation as the ground truth → :class:`Setup`.

    A scikit-learn ``DecisionTreeClassifier`` (Gini, ``max_depth``, ``random_state=seed``) fitted on the flattened
    pixels of the training canvases (the data of :func:`setup`'s grey setups: ``image_size`` px, digit fraction ``r``,
    ``n_train`` training images, None: all), wrapped as :class:`faithlab.models.DecisionTree`. Up to ``n_test``
    test images of part ``part`` = (i, k) of the test split are evaluated (:func:`part_rows`; the default: the first
    ``n_test``); ``truth`` is the tree's impurity-drop path explanation
    (:meth:`~faithlab.models.DecisionTree.path_importance`, Miró-Nicolau et al. 2024), which does not depend on the
    class explained. No fine-tuned twin (``finetuned`` None): the tree has no gradient to fine-tune. Fitting takes
    a fraction of a second, so the tree is not cached.

    replica: the trained replica (:func:`faithlab_study.verdicts.replicas`), whose ``replica.seed`` is the tree's
    ``random_state`` (None: ``seed``), fitted on the replica's own draw of the canvases (as :func:`setup`'s). The
    canvases' pixels are binary, so many
    candidate splits tie in impurity and ``random_state``, which orders the features tried at each node, decides
    between them: trees of other training seeds split on other pixels."""
    require("sklearn", "tree_setup")
    from sklearn.tree import DecisionTreeClassifier

    depth = _validate.positive_int(max_depth, "max_depth")
    train_seed = _seeds(seed, replica)
    canvas = {"size": image_size, "r": r, "color": False, "seed": data_seed(seed, replica)}
    train_part = data.load("canvas_digits", split="train", **({} if n_train is None else {"n": n_train}), **canvas)
    test = data.load("canvas_digits", split="test", **canvas)
    estimator = DecisionTreeClassifier(max_depth=depth, random_state=train_seed)
    estimator.fit(train_part.x.flatten(1).numpy(), train_part.y.numpy())
    model = models.DecisionTree.from_sklearn(estimator, shape=tuple(train_part.x.shape[1:])).to(device).eval()
    rows = part_rows(len(test), n_test, part)
    x, y = test.x[rows].to(device), test.y[rows].to(device)
    with torch.no_grad():
        pred = model(x).argmax(1)
    spec = {"name": f"decision tree (depth {depth})", "model": "decision_tree", "max_depth": depth,
            "depth": model.depth, "nodes": int(model.feature.shape[0]), "n_train": len(train_part),
            "train_seed": train_seed, "part": tuple(part), "first_test_image": rows.start}
    return Setup(spec["name"], "a transparent, non-additive model", model, None, x, y, model.path_importance(x),
                 float((pred == y).double().mean()), spec, _normalisation(test), replica)


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
    on the model or on small input noise, so it is reused as it is. seed: the notebook's; the degradations and the
    random maps draw from ``replica_draws(seed, s.replica, "degrade")`` and ``(…, "maps", name)`` (keyed to the
    setup's replica, never summed), so each replica draws its own and every call on the same setup the same."""
    model = s.model if model is None else model
    x = s.x if x is None else x
    maps, quality = {}, {}
    for xi in noise_levels:
        name = degraded_name(xi)
        maps[name] = explainers.degrade(s.truth, xi, generator=replica_draws(seed, s.replica, "degrade"))
        quality[name] = -float(xi)
    with torch.no_grad():
        target = model(x).argmax(1)
    for name, (method, options) in methods.items():
        opts = dict(options)
        if method == "random":
            opts.setdefault("generator", replica_draws(seed, s.replica, "maps", name))
        maps[name] = explainers.explain(model, x, target, method=method, batch_size=batch_size, **opts).detach()
    return maps, quality


def evaluate_again(s: Setup, model: nn.Module, finetuned: nn.Module, x: torch.Tensor, *,
                   noise_levels: Sequence[float], methods: Mapping[str, tuple[str, dict]], grid, seed: int = 0,
                   batch_size: int = 256, **options):
    """:func:`faithlab.evaluate` of the setup's explainers on a perturbed ``model`` (with its fine-tuned twin
    ``finetuned``, read by FFid±) or perturbed inputs ``x``, against the setup's labels: the maps recomputed by
    :func:`explainer_maps` for that model and those inputs, and Few-class's perturbation selected again on them
    (``grid`` as :func:`faithlab.metrics.select_perturbation` takes it); ``seed`` (the notebook's) keys the maps
    (:func:`explainer_maps`) and ``evaluate``'s draws (``replica_draws(seed, s.replica, "evaluate")``, those of
    :func:`~faithlab_study.papers.synthesis.experiments.replica_options`): the draws of the setup's own evaluation,
    so a condition changes the model or the inputs, not the draws; ``batch_size`` serves all three, the other
    ``options`` go to ``evaluate``."""
    maps, _ = explainer_maps(s, noise_levels=noise_levels, methods=methods, seed=seed, x=x, model=model,
                             batch_size=batch_size)
    perturbed = metrics.select_perturbation(model, x, grid=grid, batch_size=batch_size,
                                            normalisation=s.normalisation)["image"]
    return evaluation.evaluate(model, x, s.y, maps, finetuned=finetuned, perturbed=perturbed,
                               seed=replica_draws(seed, s.replica, "evaluate"), batch_size=batch_size, **options)

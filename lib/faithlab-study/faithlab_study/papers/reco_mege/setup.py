"""ReCo/MeGe's set-up (spec §4.1–4.8): the study design — the paper's four tasks and their embedded stand-ins
(:data:`TASKS`), the explanation methods and their options (:data:`METHODS`, :func:`method_options`), the
degradations of the k models (:data:`DEGRADATIONS`) and the chapter's set-up table, paper against ours (``SETUP``) —
and the families of k cross-trained models (spec §4.1): D for a task (:func:`load_task`), the k models trained on
its folds, normally or degraded (:func:`family`, :class:`Family`), the notebooks' shared family settings
(:class:`FamilySettings`, :func:`families`), the replica loop of the chapter's notebooks (:func:`run_replicas`,
:func:`replica_families`, :func:`lipschitz_replicas`) and every model's explanations of every sample
(:func:`explain_family`). The training itself is :func:`faithlab.train.cross_train` (cached).

Seeds: a notebook's ``seed`` draws D (and roots every derived seed); a family's models train under
``replica.seed`` of a :class:`~faithlab_study.verdicts.Replica` (:func:`run_replicas`: replica 0 is the study's own run,
trained under ``seed`` itself; replica r ≥ 1 under :func:`faithlab_study.verdicts.replicas`' seed of replica r, derived
from ``seed``, the setting's name and r). That seed reaches the models' ``TrainConfig`` and
:func:`faithlab.train.cross_train`'s own ``seed`` (its blocks, switched labels and weight noise) alike. The
Monte-Carlo draws of the evaluation (a random explainer's noise, the shuffled pairings of the chance level, μF's
subsets, S_avg's neighbours) are keyed to (``seed``, the family's replica: its setting and index, draw) by
:func:`family_draws` (:func:`faithlab_study.verdicts.replication.replica_draws`), never summed: each replica and
notebook seed draws its own; a degraded family of replica r draws as the normal family of replica r (paired draws).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import torch

import faithlab
from faithlab import _validate, data, explainers, perturb, train
from faithlab_study.papers.setup import Setting
from faithlab_study.verdicts import replication
from faithlab_study.verdicts.replication import Replica, replica_draws
from faithlab.train.cache import cache_key

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "degradation_amount", "method_options", "task_label", "Family",
           "load_task", "stand_in", "stand_in_order", "digit_variant", "family", "explain_family", "FamilySettings",
           "families", "SCHEDULER", "SUBSET_FRACTION", "RADIUS", "run_replicas", "replica_families",
           "lipschitz_replicas", "family_draws", "model_seeds"]

SUBSET_FRACTION = 0.15
"""μF's subsets in Table 3 (§4.6): 15 % of the pixels set to 0."""

RADIUS = 0.1
"""S_avg's neighbourhood in Table 3 (§4.6): neighbours z with ‖z − x‖₁ ≤ 0.1."""

SCHEDULER = "cosine"
"""The learning-rate schedule of every family (protocol, not the paper's: it anneals the rate to 0, so the k models end
at comparable accuracy rather than wherever a constant rate leaves them)."""


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
            lambda p: f"{p['n_subsets']} subsets of {SUBSET_FRACTION * 100:g} %, {p['n_eval']:,} images"),
    Setting("S_avg (Table 3)", "radius r = 0.1, 10,000 test images", "reco_mege/comparison",
            lambda p: f"r = {RADIUS:g}, {p['n_neighbours']} neighbours, {p['n_eval']:,} images"),
    Setting("distance checks (Figs. 2–3)", "32×32 masks, 100 interpolation steps", "reco_mege/distances",
            "{size}×{size} masks, {steps} steps; {repeats} noise repeats"),
)
"""The chapter's set-up table, paper (spec §4.1–4.8) against ours (the executed notebooks' parameters)."""

TASKS: dict[str, dict] = {
    "FashionMNIST": {"stand_in": "digits", "kwargs": {"color": False}, "paper": "fashion_mnist",
                     "base_width": 26, "dropout": 0.4, "note": "real 8×8 handwritten digits, grey"},
    "EuroSAT": {"stand_in": "canvas_digits", "kwargs": {"color": False, "r": 0.3}, "paper": "eurosat",
                "base_width": 46, "dropout": 0.25, "note": "a digit placed at random on a grey canvas"},
    "CIFAR-10": {"stand_in": "digit_variant", "kwargs": {"tint": True}, "paper": "cifar10",
                 "base_width": 32, "dropout": 0.25,
                 "note": "real handwritten digits in random colours, the digit brighter than its background"},
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


def degradation_amount(name: str) -> float:
    """How much of its models' training a degradation of :data:`DEGRADATIONS` destroys, in %: the training data
    withheld (Limited), the layers randomised or the labels switched; 0 for normal training."""
    _validate.one_of(name, "name", tuple(DEGRADATIONS))
    spec = DEGRADATIONS[name]
    if "limited" in spec:
        return 100 * (1 - spec["limited"])
    return 100 * spec.get("randomised", spec.get("switched", 0.0))


def task_label(task: str, dataset: str | None = None) -> str:
    """How figures, legends and claims name a task of :data:`TASKS`: the paper's dataset name when the notebook ran
    on that dataset (``dataset="paper"``), else the name marked as a stand-in (``"EuroSAT stand-in"``)."""
    return task if dataset == "paper" else f"{task} stand-in"


def method_options(method: str, *, ig_steps: int | None = None, sg_samples: int | None = None,
                   shap_samples: int | None = None, background: torch.Tensor | None = None) -> tuple[str, dict]:
    """The registered explainer and its options for a method of :data:`METHODS`, with optional cheaper settings:
    ``ig_steps`` (IG's points), ``sg_samples`` (SmoothGrad's samples), ``shap_samples`` (Expected Gradients' samples
    per image); ``background`` (SHAP's training images) is required for SHAP."""
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
        if shap_samples:
            options["n_samples"] = shap_samples
    return name, options


@dataclass
class Family:
    """k cross-trained models on a task's D: the models, the data, their predictions ``(k, N)``, a key that
    identifies them (the models' cache keys and the degradation), and the replica they were trained as (its setting
    and index key the evaluation's draws, :func:`family_draws`; None: a single model, replica 0 of the unnamed
    setting)."""

    name: str
    task: str
    cross: train.CrossTrained
    data: data.TensorData
    predictions: torch.Tensor
    key: str
    replica: Replica | None = None


def load_task(task: str, *, n: int, image_size: int, seed: int = 0, dataset: str | None = None,
              data_dir: str | None = None, split: str = "train") -> data.TensorData:
    """D for a task: ``n`` images of the stand-in's ``split`` (``dataset=None``) or the first ``n`` of the paper's
    dataset (``dataset="paper"``: :data:`TASKS`' loader reading ``data_dir``, resized to ``image_size`` by the
    loader's own transform where it has one). ``split="test"`` gives the test set on which the paper checks that the
    k models have comparable accuracy (:func:`~faithlab_study.papers.reco_mege.claims.premise.decide_premise`).

    A stand-in's training split lists its source digits in scikit-learn's order (a few writers at a time), so its
    first images are not a sample of the task: D is the first ``n`` images of a permutation of the split drawn from
    ``seed`` (:func:`stand_in_order`), and the images after them are unseen by every model trained on D
    (:meth:`FamilySettings.heldout`). The test split is read in its own order."""
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
    ds = stand_in(task, split=split, image_size=image_size, seed=seed)
    order = stand_in_order(len(ds), seed) if split == "train" else torch.arange(len(ds))
    return ds.subset(order[:min(n, len(ds))])


def stand_in_order(n: int, seed: int) -> torch.Tensor:
    """The order in which a stand-in's training split is drawn into D: a permutation of ``range(n)`` from ``seed``
    (its own stream, apart from the models' seeds)."""
    return torch.randperm(int(n), generator=torch.Generator().manual_seed(perturb_seed(seed, "reco-mege-D")))


def perturb_seed(seed: int, name: str) -> int:
    """A seed derived from ``seed`` and a stream ``name`` (SHA-256, below 2**31)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"{int(seed)}/{name}".encode()).digest()[:4], "little") & 0x7FFFFFFF


def stand_in(task: str, *, split: str, image_size: int, seed: int) -> data.TensorData:
    """The whole ``split`` of a task's embedded stand-in (:data:`TASKS`): a loader of :mod:`faithlab.data` with its
    keyword arguments, or ``"digit_variant"`` (:func:`digit_variant`)."""
    spec = TASKS[task]
    if spec["stand_in"] == "digit_variant":
        return digit_variant(split=split, size=image_size, seed=seed, **spec["kwargs"])
    return data.load(spec["stand_in"], split=split, size=image_size, seed=seed, **spec["kwargs"])


def digit_variant(*, split: str, size: int, seed: int = 0, tint: bool = False, noise: float = 0.0,
                  dark: float = 0.3, contrast: float = 0.5) -> data.TensorData:
    """scikit-learn's digits (:func:`faithlab.data.digits`, grey, upsampled to ``size``), optionally in colour and
    with pixel noise, normalised per channel with the training split's statistics.

    tint: three channels, the digit brighter than its background in every channel: per image a background colour
    bg ~ U[0, ``dark``]³ and a digit colour bg + U[``contrast``, 1 − ``dark``]³ (independent of the label), pixel =
    bg + v·(fg − bg) with v the grey intensity in [0, 1]. (``faithlab.data``'s coloured digits draw each channel's
    contrast with a random sign, which k models trained on a few hundred images do not learn: they stay near chance
    and far apart.) noise: Gaussian pixel noise of that standard deviation (on the [0, 1] scale), drawn once per
    image. Colours and noise come from ``seed`` and the split, never from the label."""
    def part(which: str) -> tuple[torch.Tensor, data.TensorData]:
        grey = data.load("digits", split=which, size=size, seed=seed, color=False)
        m, s = grey.info["mean"][0], grey.info["std"][0]
        v = (grey.x * s + m).clamp(0, 1)
        g = torch.Generator().manual_seed(perturb_seed(seed, f"digit-variant-{which}"))
        if tint:
            bg = dark * torch.rand(len(v), 3, generator=g, dtype=v.dtype)
            fg = bg + contrast + (1 - dark - contrast) * torch.rand(len(v), 3, generator=g, dtype=v.dtype)
            v = bg[:, :, None, None] + v * (fg - bg)[:, :, None, None]
        if noise:
            v = v + float(noise) * torch.randn(v.shape, generator=g, dtype=v.dtype)
        return v, grey

    x_train, grey = part("train")
    x, grey = (x_train, grey) if split == "train" else part(split)
    v = x_train.detach().double()
    mean, std = v.mean(dim=(0, 2, 3)).to(x.dtype), v.std(dim=(0, 2, 3), unbiased=False).to(x.dtype).clamp_min(1e-8)
    x = (x - mean[None, :, None, None]) / std[None, :, None, None]
    info = {**grey.info, "name": "digit_variant", "mean": tuple(mean.tolist()), "std": tuple(std.tolist()),
            "tint": bool(tint), "noise": float(noise), "color": bool(tint)}
    return data.TensorData(x, grey.y, info=info, extras=dict(grey.extras))


def family(task: str, d: data.TensorData, *, model: str = "resnet18_cifar", width_scale: float = 1.0,
           model_config: dict | None = None, config: train.TrainConfig, k: int = 5, degradation: str = "Normal",
           seed: int = 0, replica: Replica | None = None, device: str | torch.device = "cpu", batch_size: int = 256,
           name: str | None = None) -> Family:
    """Cross-train (or load from the cache) the k models of one family on D.

    model "resnet18_cifar": the task's base width (appendix A.3) × ``width_scale`` and its dropout; any other
    registered model takes ``model_config`` (e.g. ``"lipschitz_cnn"``). degradation: a row of
    :data:`DEGRADATIONS`. seed: the seed D was drawn with (in the models' cache key); replica: the training's
    (:func:`run_replicas`; default: the study's own run, trained under ``seed``): ``replica.seed`` is the seed of
    ``config`` and of :func:`faithlab.train.cross_train` (its blocks and degradations), so a replica trains under its
    own seed on the same D."""
    _validate.one_of(degradation, "degradation", tuple(DEGRADATIONS))
    if replica is None:
        replica = Replica(f"{task}/Normal", 0, int(seed))
    if not isinstance(replica, Replica):
        raise TypeError(f"replica must be a faithlab_study.verdicts.Replica, got {type(replica).__name__}")
    config = replace(config, seed=replica.seed)
    spec = TASKS[task]
    if model == "resnet18_cifar" and model_config is None:
        model_config = {"base_width": max(2, round(spec["base_width"] * width_scale)), "dropout": spec["dropout"]}
    cfg = {"in_channels": d.x.shape[1], "n_classes": d.n_classes, **(model_config or {})}
    data_key = {"task": task, "dataset": d.info.get("name"), "n": len(d), "shape": list(d.x.shape[1:]),
                "seed": seed, "labels": _labels_digest(d)}
    ct = train.cross_train(model, cfg, d, config, data_key=data_key, k=k, seed=replica.seed, device=device,
                           progress=False, **DEGRADATIONS[degradation])
    d = d.to(next(ct.models[0].parameters()).device)
    key = cache_key({"models": [h["key"] for h in ct.histories], "degradation": DEGRADATIONS[degradation],
                     "seed": replica.seed, "version": faithlab.__version__})
    return Family(name or degradation, task, ct, d, ct.predictions(d.x, batch_size=batch_size), key, replica)


def _labels_digest(d: data.TensorData) -> str:
    """12 hex digits of the SHA-256 of D's labels and a strided sample of its pixels: which images D holds, in the
    models' cache key (two draws of D with the same size and seed are told apart)."""
    import hashlib

    x = d.x.detach().cpu().reshape(len(d), -1)[:, ::97].double().numpy().round(6)
    return hashlib.sha256(d.y.cpu().numpy().tobytes() + x.tobytes()).hexdigest()[:12]


def family_draws(fam: Family, seed: int, *keys: int | str) -> int:
    """The seed of the Monte-Carlo draws ``keys`` (a draw's name, a model's index) of family ``fam`` under the
    notebook's ``seed``: :func:`~faithlab_study.verdicts.replication.replica_draws` of its replica (setting and
    index; None: replica 0 of the unnamed setting). Each replica, setting and notebook seed draws apart."""
    return replica_draws(seed, fam.replica, *keys)


def model_seeds(fam: Family, seed: int, i: int, index=None) -> torch.Tensor:
    """The per-sample seeds (``explain``'s ``sample_seeds``) of model ``i`` of ``fam``'s maps: ``keyed_seed(
    family_draws(fam, seed, "maps", i), j)`` for every sample ``j`` of ``index`` (default all of D), so a
    sample's map does not depend on the batch, and each model, replica and notebook seed draws its own noise."""
    index = torch.arange(len(fam.data)) if index is None else torch.as_tensor(list(index), dtype=torch.int64)
    return perturb.keyed_seeds(family_draws(fam, seed, "maps", int(i)), index)


def explain_family(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, **settings) -> torch.Tensor:
    """Every model's explanation of every sample of D → ``(k, N, *map_shape)``, each for the class that model
    predicts (the paper, spec §6.15); a random method's draws keyed to (seed, the family's replica, the model, the
    sample) (:func:`model_seeds`)."""
    name, options = method_options(method, **settings)
    maps = [explainers.explain(m, fam.data.x, fam.predictions[i].to(fam.data.x.device), method=name,
                               batch_size=batch_size, sample_seeds=model_seeds(fam, seed, i), **options)
            for i, m in enumerate(fam.cross.models)]
    return torch.stack(maps)


@dataclass(frozen=True)
class FamilySettings:
    """How the ReCo/MeGe notebooks build a task's ResNet-18 family, as one object (:func:`families`).

    n, image_size, dataset, data_dir: the k-fold data D of :func:`load_task`, drawn with ``seed``; k: models per
    family; width_scale: the ResNet-18's width; epochs, train_batch, lr, scheduler: their training (:meth:`config`;
    :data:`SCHEDULER`); device, batch_size: where and how many images per forward pass. The models' training seed is
    not a setting: it is ``replica.seed`` of the replica each call trains (:func:`run_replicas`). The notebooks of
    ``reco_mege/`` share these parameter names: :meth:`from_parameters` reads them from a notebook's parameters.
    """

    n: int
    image_size: int
    k: int = 5
    width_scale: float = 1.0
    epochs: int = 15
    train_batch: int = 32
    lr: float = 3e-3
    scheduler: str | None = SCHEDULER
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

    def own_replica(self, setting: str) -> Replica:
        """Replica 0 of ``setting``: the study's own run, trained under ``seed`` itself (:func:`run_replicas`)."""
        return Replica(setting, 0, int(self.seed))

    def config(self, replica: Replica | None = None) -> train.TrainConfig:
        """The models' ``TrainConfig(epochs, train_batch, lr, seed, scheduler)``, the seed ``replica.seed`` (default:
        the study's own run, ``seed``)."""
        return train.TrainConfig(epochs=self.epochs, batch_size=self.train_batch, lr=self.lr,
                                 seed=self.seed if replica is None else replica.seed, scheduler=self.scheduler)

    def lipschitz(self, task: str, d: data.TensorData, replica: Replica, *, width: int, tau: float, epochs: int,
                  lr: float, dropout: float = 0.2) -> Family:
        """The task's 1-Lipschitz family of ``replica`` (of ``"<task>/1-Lipschitz"``, :func:`run_replicas`):
        ``"lipschitz_cnn"`` of ``width`` channels, Lipschitz bound ``tau``, trained ``epochs`` epochs at ``lr`` under
        ``replica.seed`` on the same D as the ResNet-18s; k, train_batch, scheduler, device and batch_size are these
        settings'."""
        if not isinstance(replica, Replica):
            raise TypeError(f"replica must be a faithlab_study.verdicts.Replica, got {type(replica).__name__}")
        config = train.TrainConfig(epochs=epochs, batch_size=self.train_batch, lr=lr, seed=replica.seed,
                                   scheduler=self.scheduler)
        return family(task, d, model="lipschitz_cnn", k=self.k, seed=self.seed, replica=replica, device=self.device,
                      model_config={"width": width, "dropout": dropout, "image_size": d.x.shape[-1], "tau": tau},
                      batch_size=self.batch_size, name="1-Lipschitz", config=config)

    def load_task(self, task: str, *, n: int | None = None, split: str = "train") -> data.TensorData:
        """:func:`load_task` of ``task`` at these settings' image size, seed and data (``n`` images, default D's)."""
        return load_task(task, n=self.n if n is None else n, image_size=self.image_size, seed=self.seed,
                         dataset=self.dataset, data_dir=self.data_dir, split=split)
    def heldout(self, task: str, *, n_test: int, n_unseen: int = 0) -> data.TensorData:
        """Images that no model of a family on D saw, for the premise that the k models are of comparable accuracy
        (:func:`~faithlab_study.papers.reco_mege.claims.premise.premise_row`): the first ``n_test`` images of the task's test
        split, then up to ``n_unseen`` images of its training split that D left out (those after D's ``n`` in the
        order it is drawn in). The paper checks its ±3 % on the test set; a small test split measures each model's
        accuracy with a binomial error that is itself near 3 %, so the unseen training images are added where the
        test split is small."""
        test = self.load_task(task, n=n_test, split="test")
        if not n_unseen:
            return test
        pool = self.load_task(task, n=self.n + int(n_unseen))
        extra = pool.subset(torch.arange(min(self.n, len(pool)), len(pool)))
        if len(extra) == 0:
            return test
        return data.TensorData(torch.cat([test.x, extra.x.to(test.x.device)]),
                               torch.cat([test.y, extra.y.to(test.y.device)]), info=test.info)


def families(tasks: list[str], settings: FamilySettings, replicas: Mapping[str, Replica] | None = None, *,
             degradation: str = "Normal") -> dict[str, Family]:
    """The normally trained (or ``degradation``) ResNet-18 family of every task, as the notebooks' parameters state
    it (``settings``, e.g. ``FamilySettings.from_parameters(globals())``): D = :func:`load_task` (``settings.seed``),
    models by :func:`family` with :meth:`FamilySettings.config`, trained under ``replicas[task].seed`` (default: each
    task's replica 0, the study's own run under ``seed``)."""
    if not isinstance(settings, FamilySettings):
        raise TypeError(f"settings must be a FamilySettings, got {type(settings).__name__}")
    s = settings
    chosen = {t: (replicas or {}).get(t) or s.own_replica(f"{t}/Normal") for t in tasks}
    return {t: family(t, s.load_task(t), width_scale=s.width_scale, config=s.config(chosen[t]), k=s.k,
                      degradation=degradation, seed=s.seed, replica=chosen[t], device=s.device,
                      batch_size=s.batch_size, name=degradation) for t in tasks}


def run_replicas(seed: int, setting: str, n: int) -> list[Replica]:
    """The ``n`` replicas of ``setting`` (``"<task>/Normal"``, ``"<task>/1-Lipschitz"``) under the study's ``seed``:
    replica 0 is the study's own run, trained under ``seed`` itself (the run every notebook of the chapter shares);
    replica r ≥ 1 is :func:`faithlab_study.verdicts.replicas`' replica r, its seed derived from ``seed``, the setting's
    name and r."""
    return [Replica(setting, 0, int(seed)), *list(replication.replicas(seed, setting, n))[1:]]


def replica_families(settings: FamilySettings, tasks: list[str], n: int, *,
                     degradation: str = "Normal") -> dict[int, dict[str, Family]]:
    """The replica loop of the chapter: ``{r: {task: family}}`` for r < ``n``, replica r of every task trained (or
    loaded from the cache) under :func:`run_replicas` (seed, ``"<task>/Normal"``, n)'s replica r. A degraded family
    (``degradation``) of replica r degrades, or retrains under the same seed, the normal family of replica r."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"replicas must be an int ≥ 1, got {n!r}")
    runs = {t: run_replicas(settings.seed, f"{t}/Normal", n) for t in tasks}
    return {r: families(tasks, settings, {t: runs[t][r] for t in tasks}, degradation=degradation) for r in range(n)}


def lipschitz_replicas(settings: FamilySettings, task: str, n: int, *, width: float, tau: float, epochs: int,
                       lr: float) -> dict[int, dict[str, Family]]:
    """``{r: {"ResNet-18": family, "1-Lipschitz": family}}`` for r < ``n``: replica r's normally trained ResNet-18s
    (those of :func:`replica_families`, the same cache) and its 1-Lipschitz CNNs (:meth:`FamilySettings.lipschitz`,
    trained under :func:`run_replicas` (seed, ``"<task>/1-Lipschitz"``, n)'s replica r), both on the same D."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"replicas must be an int ≥ 1, got {n!r}")
    d = settings.load_task(task)
    normal, lipschitz = (run_replicas(settings.seed, f"{task}/{name}", n) for name in ("Normal", "1-Lipschitz"))
    runs = {}
    for r in range(n):
        resnet = families([task], settings, {task: normal[r]})[task]
        runs[r] = {"ResNet-18": replace(resnet, name="ResNet-18"),
                   "1-Lipschitz": settings.lipschitz(task, d, lipschitz[r], width=width, tau=tau, epochs=epochs, lr=lr)}
    return runs

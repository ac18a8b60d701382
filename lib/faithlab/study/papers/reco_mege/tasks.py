"""ReCo/MeGe's study design (spec §4.1–4.8): the paper's four tasks and their embedded stand-ins (:data:`TASKS`),
the explanation methods and their options (:data:`METHODS`, :func:`method_options`), the degradations of the k models
(:data:`DEGRADATIONS`) and the chapter's set-up table, paper against ours (``SETUP``)."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from faithlab import _validate
from faithlab.study.papers.setup import Setting

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "degradation_amount", "method_options", "task_label"]


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

"""SaCo's set-up: the chapter's trained ViTs (:func:`trained_vits`, the replica loop both notebooks call) and its
set-up table (spec §3.1–3.4, :data:`SETUP`), the paper's set-up against the executed notebooks' parameters."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import torch

from faithlab_study import recipes
from faithlab_study.papers.setup import Setting
from faithlab_study.verdicts.replication import Replica, replicas as replica_loop

__all__ = ["VIT_OPTIONS", "trained_vits", "SETUP"]

VIT_OPTIONS = ("image_size", "patch_size", "dim", "depth", "heads", "n_epochs")
"""The keys of a ``vit_settings`` entry that :func:`faithlab_study.recipes.digits_vit` trains with."""


def trained_vits(vit_settings: Sequence[Mapping], *, seed: int, replicas: int,
                 device: str | torch.device = "cpu") -> Iterator[tuple[Mapping, Replica, tuple]]:
    """The chapter's replica loop: for every entry of ``vit_settings`` (its ``name`` is the setting's name, which
    keys the replicas' seeds) and each of its ``replicas`` replicas, ``(setting, replica, (model, train_data,
    test_data))`` — :func:`faithlab_study.recipes.digits_vit` of the entry's :data:`VIT_OPTIONS` on the digits split
    by ``seed``, trained with ``replica.seed`` (or loaded from the cache: both notebooks get the same weights)."""
    for setting in vit_settings:
        config = {key: setting[key] for key in VIT_OPTIONS}
        for replica in replica_loop(seed, setting["name"], replicas):
            yield setting, replica, recipes.digits_vit(**config, seed=seed, replica=replica, device=device)


_TIMM_NAMES = {"vit_base_patch16_224": "ViT-B/16", "vit_large_patch16_224": "ViT-L/16",
               "deit_base_patch16_224": "DeiT-B/16", "vit_tiny_patch16_224": "ViT-Ti/16"}


def _vits(p: Mapping) -> str:
    """The explained models in a set-up table: timm's ImageNet ViTs, or the small digits ViTs (dim × depth)."""
    if p["timm_models"]:
        return ", ".join(_TIMM_NAMES.get(m.split(".")[0], m.split(".")[0]) for m in p["timm_models"])
    vits = p["vit_settings"]
    return (f"{len(vits)} small ViT{'s' if len(vits) > 1 else ''}, dim×depth "
            + ", ".join(f"{s['dim']}×{s['depth']}" for s in vits))


SETUP: tuple[Setting, ...] = (
    Setting("data", "CIFAR-10, CIFAR-100, ImageNet val (224 px)", "saco/random_vs_methods",
            lambda p: "ImageNet val, 224 px" if p["timm_models"] else "scikit-learn digits, "
            + ", ".join(str(size) for size in sorted({s["image_size"] for s in p["vit_settings"]})) + " px"),
    Setting("models", "ViT-B/16, ViT-L/16, DeiT-B/16", "saco/random_vs_methods", _vits),
    Setting("training", "ImageNet weights; CIFAR fine-tuned", "saco/random_vs_methods",
            lambda p: "timm's ImageNet weights" if p["timm_models"] else
            "trained here: " + ", ".join(str(s["n_epochs"]) for s in p["vit_settings"]) + " epochs, "
            + f"{p.get('replicas', 1)} replicas each"),
    Setting("images evaluated", "not stated in the text", "saco/random_vs_methods",
            lambda p: ", ".join(f"{n:,}" for n in ([p["n_test"]] if p["timm_models"] else dict.fromkeys(
                s.get("n_test", p["n_test"]) for s in p["vit_settings"]))) + " test images per model (per replica)"),
    Setting("K groups (SaCo)", "K = 10", "saco/random_vs_methods", "K = {k}"),
    Setting("K ablation (Table 2)", "K ∈ {5, 10, 20}", "saco/random_vs_methods",
            lambda p: "K ∈ {" + ", ".join(str(k) for k in p["k_values"]) + "}"),
    Setting("removal (group replaced by)", "the per-sample mean value", "saco/random_vs_methods",
            lambda p: "the image's per-channel mean"),
    Setting("LRP variant", "Chefer et al. relprop (LRP, Partial LRP, TA)", "saco/random_vs_methods",
            lambda p: "Chefer et al. relprop, ported (explainers.vit_lrp)"),
    Setting("Integrated Gradients", "zero baseline, ~50 steps", "saco/random_vs_methods",
            "zero baseline, {ig_steps} steps"),
    Setting("case study (Fig. 3)", "one ImageNet image, ViT-B/16", "saco/case_study",
            lambda p: (f"{p['n_images']} images, " + _TIMM_NAMES.get(p["timm_model"].split(".")[0], p["timm_model"])
                       if p["timm_model"] else f"{p['n_images']} images × {len(p['vit_settings']) * p['replicas']} "
                       "trained ViTs (those above)")),
)
"""The chapter's set-up table, paper (spec §3.1–3.4) against ours (the executed notebooks' parameters)."""

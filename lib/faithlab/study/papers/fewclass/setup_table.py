"""Few-class Fidelity's set-up table (spec §2.3–2.5): the paper's set-up against the executed notebooks'
parameters."""

from __future__ import annotations

from collections.abc import Mapping

from faithlab.metrics import fewclass
from faithlab.study.papers.fewclass.tasks import STAND_INS
from faithlab.study.papers.setup import Setting

__all__ = ["SETUP"]


def _models(p: Mapping, task: str) -> str:
    """The model names of one task in a set-up table (the stand-ins when the notebook sets none)."""
    return ", ".join(s["name"] for s in (p["settings"] or {}).get(task) or STAND_INS[task])


def _task_data(p: Mapping, task: str) -> str:
    """A task's data in a set-up table: the paper's folder, or the generated stand-in and its size."""
    if p["paper"]:
        return {"vehicles": "ImageNet vehicles", "ct": "CT contrast slices"}[task] + f" from {p['data_dir']}"
    what = "coloured canvas digits 0, 1, 7" if task == "vehicles" else "generated CT slices (ct_slices)"
    return f"{what}, {p['image_size']} px"


def _methods(names) -> str:
    """Method names with the IG baselines folded: ``IG(min), IG(zero)`` → ``IG (min, zero)``."""
    ig = [m[3:-1] for m in names if m.startswith("IG(")]
    out = [m for m in names if not m.startswith("IG(")]
    if ig:
        out.insert(next(i for i, m in enumerate(names) if m.startswith("IG(")), f"IG ({', '.join(ig)})")
    return ", ".join(out)


SETUP: tuple[Setting, ...] = (
    Setting("vehicles task", "ImageNet vehicles: 3 classes, 20,800 images", "fewclass/fidelity",
            lambda p: _task_data(p, "vehicles")),
    Setting("vehicles models", "ResNet-18, DenseNet-121", "fewclass/fidelity", lambda p: _models(p, "vehicles")),
    Setting("CT task", "LIDC-IDRI + LNDb: 2,072 slices, binary", "fewclass/fidelity", lambda p: _task_data(p, "ct")),
    Setting("CT models", "ResNet-50, Xception (one logit)", "fewclass/fidelity", lambda p: _models(p, "ct")),
    Setting("images per task (XAI set)", "2,500 (vehicles), 259 (CT)", "fewclass/fidelity",
            lambda p: (f"{p['n_images']:,} per task, given weights" if p["paper"] else
                       f"{p['replicas']} trained replicas × {p['n_images']:,} own test images, "
                       f"trained on {p['n_train']:,}")),
    Setting("methods", "BP, Deconv, EG, IG (min, zero, max), GradCAM, Random", "fewclass/fidelity",
            lambda p: _methods(p["methods"])),
    Setting("alterations", "none, XRAI, SG, SG²", "fewclass/fidelity", lambda p: ", ".join(p["alterations"])),
    Setting("IG steps", "200 (authors' code)", "fewclass/fidelity", "{ig_steps}"),
    Setting("SmoothGrad samples, noise", "50 (code), 10–20 % of the range", "fewclass/fidelity",
            lambda p: f"{p['sg_samples']}, {p['sg_noise'] * 100:g} % of the range"),
    Setting("EG background", "200 training images", "fewclass/fidelity", "{n_background} training images"),
    Setting("MIF/LIF curve points", "101 (every 1 %)", "fewclass/fidelity", "{fid_points}"),
    Setting("perturbation candidates", "33 variations, 804 candidates", "fewclass/perturbation",
            lambda p: f"{len(fewclass.candidate_grid())} candidates per image"),
)
"""The chapter's set-up table, paper (spec §2.3–2.5) against ours (the executed notebooks' parameters)."""

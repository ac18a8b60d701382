"""Few-class Fidelity's set-up (spec §2.3–2.5): its two tasks (vehicles, CT), their models (stand-ins trained here or
the paper's weights) and XAI sets, with the localisation ground truth and the background images of Expected
Gradients; and the chapter's set-up table (:data:`SETUP`: the paper's set-up against the executed notebooks'
parameters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, data, models, train
from faithlab.metrics import fewclass
from faithlab_study import verdicts
from faithlab_study.papers.setup import Setting

__all__ = ["TASKS", "STAND_INS", "CAM_LAYERS", "Setup", "setup", "SETUP"]


TASKS = ("vehicles", "ct")
"""``"vehicles"``: 3 classes with a ground-truth box per image (the paper's ImageNet vehicles); ``"ct"``: binary,
single-logit, with a ground-truth segmentation mask (the paper's CT contrast-agent slices)."""
TASK_LABELS = {"vehicles": "vehicles-like canvases (stand-in)", "ct": "CT-like slices (stand-in)"}
"""Words for each task's stand-in data in figure titles, legends and claim texts (the book never uses the paper's
data sets)."""
PAPER_TASK_LABELS = {"vehicles": "ImageNet vehicles", "ct": "CT contrast slices"}
"""Words for each task when the paper's data are read (the ``paper`` profile)."""


def task_label(task: str, paper: bool = False) -> str:
    """The words for ``task`` on a figure or in a claim: :data:`TASK_LABELS` (the stand-ins), or
    :data:`PAPER_TASK_LABELS` when ``paper``; an unknown task as is."""
    return (PAPER_TASK_LABELS if paper else TASK_LABELS).get(task, task)



STAND_INS: dict[str, list[dict]] = {
    "vehicles": [{"name": "ResNet-18 (small)", "model": "resnet18_cifar", "config": {"base_width": 4}, "n_epochs": 3},
                 {"name": "DenseNet (small)", "model": "densenet_small",
                  "config": {"growth_rate": 4, "block_config": [2, 2], "num_init_features": 8}, "n_epochs": 3}],
    "ct": [{"name": "ResNet-18 (small)", "model": "resnet18_cifar", "config": {"base_width": 4}, "n_epochs": 3},
           {"name": "Xception (small)", "model": "xception_small", "config": {"width": 4}, "n_epochs": 3}],
}
"""Default stand-in models per task (small and quick; the ``book`` profile trains wider ones longer): a CIFAR-style
ResNet-18 for ResNet-18 / ResNet-50, torchvision's DenseNet at small size for DenseNet-121, a small Xception."""

CAM_LAYERS = models.CAM_LAYERS
"""Grad-CAM's layer for the paper's architectures (torchvision ResNet-18 / DenseNet-121, timm ResNet-50 /
Xception): the output of the last convolutional block, from the one table :data:`faithlab.models.CAM_LAYERS`. A
paper setting may name another with ``"cam_layer"``; our stand-ins expose ``cam_layer`` themselves."""


@dataclass(frozen=True)
class Setup:
    """A task's models and XAI set: ``models`` ``{name: eval-mode model}``; images ``x`` ``(N, C, H, W)`` and
    labels ``y`` that every model predicts correctly (the paper's XAI set); ``boxes`` ``(N, 4)`` (vehicles) or
    ``masks`` ``(N, H, W)`` (CT) as localisation ground truth; ``background`` training images for Expected
    Gradients; ``n_classes``; ``info`` one row per model (accuracy, where it comes from); ``layers`` Grad-CAM's
    layer per model (a dotted name; None: the model's own ``cam_layer``); ``normalisation`` the ``(mean, std)`` that
    turned the images' values into ``x`` = (values − mean) / std, per channel (the paper data's ``info['mean']``,
    ``info['std']``), passed as ``normalisation=`` to the candidate search so that the perturbations are built on
    the values themselves (:func:`faithlab.metrics.papers.fewclass.fidelity.select_perturbation`); None: x is searched
    as is (the stand-ins). ``replica``: the index of the trained replica these models are (:func:`setup`'s; None:
    one model per setting), which with the task, the model's name and the notebook's seed keys the Monte-Carlo draws
    of its evaluation (:func:`~faithlab_study.papers.fewclass.experiments.model_draws`)."""

    task: str
    models: dict[str, nn.Module]
    x: torch.Tensor
    y: torch.Tensor
    boxes: torch.Tensor | None
    masks: torch.Tensor | None
    background: torch.Tensor
    n_classes: int
    info: pd.DataFrame
    layers: dict[str, str | None] = field(default_factory=dict)
    normalisation: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    replica: int | None = None


def _stand_in(task: str, split: str, *, image_size: int, seed: int, n: int | None):
    if task == "vehicles":
        return data.load("canvas_digits", split=split, size=image_size, r=0.2, classes=[0, 1, 7], color=True,
                         seed=seed, n=n)
    return data.load("ct_slices", split=split, size=image_size, seed=seed, n=n)


def setup(task: str, settings: Sequence[Mapping] | None = None, *, n_images: int, image_size: int = 28,
          n_train: int = 1500, n_background: int = 20, seed: int = 0, data_dir: str | None = None, paper: bool = False,
          batch_size: int = 256, device: str | torch.device = "cpu", replica: int | None = None,
          blocks: int | None = None) -> Setup:
    """The models of a task and its XAI set: the first ``n_images`` test images every model predicts correctly.

    Book profile (``paper=False``): generated stand-ins with known ground truth, ``image_size``² pixels —
    vehicles: coloured canvas digits of three classes (0, 1, 7) with their tight boxes; CT: ``ct_slices``, a
    textured body whose organ is bright with contrast and dark without (the mask is the organ), single-logit
    models. ``settings``: ``[{"name", "model", "config", "n_epochs"}]`` (None: :data:`STAND_INS`) trained here with
    :func:`faithlab.train.fit` on ``n_train`` images (cached). Paper profile: ``imagenet_vehicles`` /
    ``ct_contrast`` from ``data_dir``/imagenet_vehicles and ``data_dir``/ct_contrast (layouts in
    :mod:`faithlab.data`) and ``settings`` ``[{"name", "arch", "weights_path", "source"?,
    "config"?, "cam_layer"?}]`` loaded by :func:`faithlab.models.pretrained` (state dicts read with
    ``weights_only``); Grad-CAM reads ``cam_layer`` (default :data:`CAM_LAYERS` of the arch; :func:`evaluate_task`
    asks for one when GradCAM is among its methods and the arch has none). The paper data come normalised, and
    ``Setup.normalisation`` carries the loader's ``(info['mean'], info['std'])`` so that the candidate search
    perturbs pixel values (spec §2.3): ImageNet's per-channel statistics for ``imagenet_vehicles`` (pixels in
    [0, 1]); for ``ct_contrast`` its one scalar mean and std, so the search runs on the slices' values as stored
    (the loader does no windowing). The operations with (1 − μ) (V5, V11) assume intensities in [0, 1]: CT values
    in Hounsfield units should be windowed to [0, 1] before they are saved for ``ct_contrast``, or those candidates
    (and G(x)/μ where μ is near 0 or negative) lose their meaning. The stand-ins are standardised too (their
    train split's mean and std, ``info``), and carry them the same way: their pixels lie in about [0, 1].
    n_background: training images for Expected Gradients (the paper: 200).
    replica: the index of an independently trained replica of every model (stand-ins only): model ``name`` is
    trained with seed :func:`faithlab_study.verdicts.replica_seed` ``(seed, f"{task}/{name}", replica)`` — the unit of
    replication is the trained model on its own data — and every model of the replica trains and is scored on the
    replica's own draw of the stand-in data (:func:`faithlab_study.verdicts.replication.data_seed` of ``seed`` and
    ``replica``; None: ``seed``); the XAI set is then the
    first ``n_images`` test images that every model *of this replica* predicts correctly. None: every model is
    trained with ``seed`` itself (one model per setting). The paper's weights are one model: ``replica`` must be
    None or 0 with ``paper``.
    blocks: cut the test split into that many disjoint blocks (test image i in block i mod ``blocks``) and draw the
    XAI set from block ``replica`` mod ``blocks`` only, so that the replicas score disjoint images (the units of a
    claim pooled over replicas are then independent images, not the same images again); None: the whole split.
    """
    _validate.one_of(task, "task", TASKS)
    n_images = _validate.positive_int(n_images, "n_images")
    if replica is not None and (not isinstance(replica, int) or isinstance(replica, bool) or replica < 0):
        raise ValueError(f"replica must be None or an index ≥ 0, got {replica!r}")
    if blocks is not None:
        blocks = _validate.positive_int(blocks, "blocks")
    if paper and replica not in (None, 0):
        raise ValueError(f"the paper's weights are one model per setting: replica must be None or 0, got {replica!r}")
    if settings is None and not paper:
        settings = STAND_INS[task]
    if not settings:
        raise ValueError("settings must name at least one model")
    n_classes = 3 if task == "vehicles" else 2
    trained: dict[str, nn.Module] = {}
    layers: dict[str, str | None] = {}
    normalisation = None
    rows = []
    if not paper:
        drawn = verdicts.replication.data_seed(seed, replica)  # the replica's own draw of the stand-in data
        train_data = _stand_in(task, "train", image_size=image_size, seed=drawn, n=n_train)
        test_data = _stand_in(task, "test", image_size=image_size, seed=drawn, n=None)
        normalisation = _normalisation(test_data, f"{task} stand-in")
        for s in settings:
            if not {"name", "model", "n_epochs"} <= set(s):
                raise ValueError(f"settings entries need 'name', 'model' and 'n_epochs', got {dict(s)!r:.200}")
            config = {"in_channels": train_data.x.shape[1], "n_classes": 3 if task == "vehicles" else 1,
                      **dict(s.get("config", {}))}
            train_seed = seed if replica is None else verdicts.replica_seed(seed, f"{task}/{s['name']}", replica)
            model, _ = train.fit(s["model"], config, train_data,
                                 train.TrainConfig(epochs=int(s["n_epochs"]), lr=3e-3, batch_size=64, seed=train_seed),
                                 test_data=test_data, device=device, progress=False,
                                 data_key={"dataset": f"fewclass_{task}", "size": image_size, "n": n_train,
                                           "seed": drawn})
            trained[s["name"]] = model.to(device).eval()
            accuracy = train.loss_and_accuracy(trained[s["name"]], test_data, device=device)["accuracy"]
            rows.append({"model": s["name"], "architecture": s["model"], "epochs": s["n_epochs"],
                         "training seed": train_seed, "test accuracy": accuracy})
    else:
        name = "imagenet_vehicles" if task == "vehicles" else "ct_contrast"
        if data_dir is None:
            raise ValueError("data_dir is required with paper=True (a folder holding imagenet_vehicles/ and "
                             "ct_contrast/)")
        root = Path(data_dir).expanduser() / name
        test_data = data.load(name, split="test", data_dir=root)
        train_data = data.load(name, split="train", data_dir=root)
        normalisation = _normalisation(test_data, name)
        for s in settings:
            model = models.pretrained(s["arch"], source=s.get("source", "torchvision"),
                                      weights_path=Path(s["weights_path"]).expanduser(), **dict(s.get("config", {})))
            trained[s["name"]] = model.to(device).eval()
            layers[s["name"]] = s.get("cam_layer", CAM_LAYERS.get(s["arch"]))
            accuracy = train.loss_and_accuracy(trained[s["name"]], test_data, device=device)["accuracy"]
            rows.append({"model": s["name"], "architecture": s["arch"], "weights": str(s["weights_path"]),
                         "test accuracy": accuracy})
    x_all, y_all = data.to_tensors(test_data)
    x_all, y_all = x_all.to(device), y_all.to(device)
    correct = torch.ones(len(y_all), dtype=torch.bool, device=device)
    for model in trained.values():
        correct &= fewclass.predicted_class(model, x_all, batch_size=batch_size) == y_all
    if blocks is not None:
        block = torch.arange(len(y_all), device=device) % blocks == (replica or 0) % blocks
        correct &= block
    keep = correct.nonzero().flatten()[:n_images]
    if keep.numel() == 0:
        raise ValueError("no test image is predicted correctly by every model: train longer or change settings")
    extras = getattr(test_data, "extras", {}) or {}
    boxes = extras.get("boxes", getattr(test_data, "boxes", None))  # TensorData extras or ImageFolder .boxes
    masks = getattr(test_data, "mask", None)
    bg, _ = data.to_tensors(train_data, n_background)
    for row in rows:
        row["XAI set"] = int(keep.numel())
    return Setup(task, trained, x_all[keep], y_all[keep],
                 boxes[keep.cpu()].to(device) if boxes is not None and task == "vehicles" else None,
                 masks[keep.cpu()].to(device) if masks is not None and task == "ct" else None,
                 bg.to(device), n_classes, pd.DataFrame(rows), {name: layers.get(name) for name in trained},
                 normalisation, replica)


def _normalisation(dataset, name: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The ``(mean, std)`` a loader normalised its images with (``info['mean']``, ``info['std']``; None when
    both are None: nothing was normalised)."""
    info = getattr(dataset, "info", None) or {}
    if "mean" not in info or "std" not in info:
        raise ValueError(f"the {name} data must carry info['mean'] and info['std'] (the normalisation its loader "
                         "applied, None for none): the candidate search perturbs pixel values")
    if info["mean"] is None and info["std"] is None:
        return None
    mean, std = (tuple(float(e) for e in v) if isinstance(v, (tuple, list)) else (float(v),)
                 for v in (info["mean"], info["std"]))
    return mean, std


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

"""TRACE's set-up (spec §5.1–5.7): the models and images of its notebooks — the canvas stand-ins trained here (one
named setting, :class:`TraceModels`, shared by the three notebooks) or the paper's torchvision ImageNet classifiers,
and the first images they are all evaluated on — and the chapter's set-up table (:data:`SETUP`: the paper's set-up
against the executed notebooks' parameters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, data, models, perturb, train
from faithlab.metrics import search
from faithlab_study import recipes
from faithlab_study.papers.setup import Setting
from faithlab_study.verdicts import replication
from faithlab_study.verdicts.replication import Replica

__all__ = ["PAPER_MODELS", "CAM_LAYERS", "DENSENET_SMALL", "TraceModels", "Setup", "setup", "replica_models",
           "models_info", "first_by_filename", "references_of", "SETUP"]


PAPER_MODELS = ("resnet18", "vgg16", "alexnet", "googlenet", "mobilenet_v3_large", "densenet161")
"""The paper's six torchvision ImageNet classifiers (Table 1 (i)–(vi); MobileNetV3 is not said to be Large or
Small, we take Large)."""

CAM_LAYERS = models.CAM_LAYERS
"""The last convolutional block of each torchvision model (the one table :data:`faithlab.models.CAM_LAYERS`), read by
Grad-CAM and Excitation Backprop (spec §5.7: e.g. ResNet ``layer4``); our own models name theirs ``cam_layer``."""


_BOOK_MODELS = ({"name": "ResNet-9", "model": "resnet9", "width": 0.125, "n_epochs": 8},
                {"name": "VGG-small", "model": "vgg_small", "width": 8, "n_epochs": 20},
                {"name": "MobileNet-small", "model": "mobilenet_small", "width": 8, "n_epochs": 25})
DENSENET_SMALL = {"name": "DenseNet-small", "model": "densenet_small", "width": 8, "n_epochs": 25}
"""The stand-in for DenseNet-161 (torchvision's DenseNet at a small width), not among the ``book`` profile's models:
it cost about half of trace/table1's time (three replicas to train, the slowest to run), which now pays for the
searches' and the random test's replicas. Add it with ``trace_models: {settings: [..., <this entry>]}``."""


@dataclass(frozen=True)
class TraceModels:
    """The canvas stand-ins of TRACE's notebooks (``trace/table1``, ``trace/searches``, ``trace/random_test``): one
    setting read by the three notebooks, so that they train (and read from the cache) the very same classifiers.

    The defaults are the ``book`` profile's. Each notebook takes its overrides as one parameter, ``trace_models``
    (``{}``: the defaults; ``-p trace_models '{image_size: 14}'`` for one run); a profile sets them once for the
    three notebooks (a YAML anchor). Each notebook evaluates the first models of ``settings`` (:meth:`first`): all of
    them in Table 1, the first in the searches, ``n_models`` in the random deletion test. Unknown names raise
    TypeError. With ``torchvision_models`` (the ``paper`` profiles) :func:`setup` trains none of them.

    settings: one ``{"name", "model", "width", "n_epochs"}`` per classifier (trained by
    :func:`faithlab_study.recipes.canvas_classifier`); image_size: the canvases' side in pixels; r: the share of the
    canvas the digit's foreground covers.
    """

    settings: Sequence[Mapping] = field(default_factory=lambda: tuple(dict(s) for s in _BOOK_MODELS))
    image_size: int = 28
    r: float = 0.45

    def __post_init__(self):
        if isinstance(self.settings, (str, Mapping)) or not all(isinstance(s, Mapping) for s in self.settings):
            raise TypeError("settings must be a sequence of {'name', 'model', 'width', 'n_epochs'} dicts, got "
                            f"{self.settings!r:.200}")
        object.__setattr__(self, "settings", tuple(dict(s) for s in self.settings))

    def first(self, n: int | None = None) -> list[dict]:
        """The first ``n`` entries of ``settings`` (None: all of them), as :func:`setup` takes them."""
        return [dict(s) for s in self.settings[:n]]



@dataclass(frozen=True)
class Setup:
    """The models and images of a TRACE notebook: ``models`` ``{name: eval-mode model}``, images ``x``
    ``(N, C, H, W)`` and labels ``y`` ``(N,)`` shared by all models, and ``info`` (one row per model: its test
    accuracy and where it comes from); ``layers`` the layer each model's Grad-CAM, Excitation Backprop and IBA read
    (None: the model's ``cam_layer``); ``reference`` the inputs IBA's activation statistics are estimated on
    (:func:`setup`'s ``n_reference``)."""

    models: dict[str, nn.Module]
    x: torch.Tensor
    y: torch.Tensor
    info: pd.DataFrame
    layers: dict[str, str | None]
    reference: torch.Tensor | None = None


def first_by_filename(dataset, n: int) -> list[int]:
    """Indices of the ``n`` samples of an ImageFolder-like dataset (``.samples`` of (path, class)) with the smallest
    file names: for ILSVRC2012 val (``ILSVRC2012_val_00000001.JPEG`` …) the paper's "first n validation images",
    whatever class folder they were sorted into."""
    n = _validate.positive_int(n, "n")
    samples = getattr(dataset, "samples", None)
    if samples is None:
        raise TypeError(f"dataset must have .samples (path, class) like torchvision's ImageFolder, got "
                        f"{type(dataset).__name__}")
    names = [Path(path).name for path, _ in samples]
    return sorted(range(len(names)), key=lambda i: (names[i], i))[:n]


def _torchvision_entry(entry) -> tuple[str, dict]:
    """A ``torchvision_models`` entry → (name, keyword arguments of :func:`faithlab.models.pretrained`)."""
    if isinstance(entry, str):
        return entry, {"weights": "DEFAULT"}
    if isinstance(entry, Mapping) and {"name", "weights_path"} <= set(entry) \
            and set(entry) <= {"name", "weights_path", "config"}:
        return str(entry["name"]), {"weights_path": Path(entry["weights_path"]).expanduser(),
                                    **dict(entry.get("config") or {})}
    raise ValueError("torchvision_models entries must be torchvision model names or {'name', 'weights_path', "
                     f"'config'?}} dicts, got {entry!r:.200}")


def setup(settings: list[dict], *, n_images: int, image_size: int = 28, r: float = 0.45,
          dataset: str = "canvas_digits", data_dir: str | None = None, torchvision_models: tuple = (),
          seed: int = 0, device: str | torch.device = "cpu", n_reference: int = 1000,
          replicas: Mapping[str, Replica] | None = None) -> Setup:
    """Stand-ins or the paper's models, and the images they are all evaluated on.

    Default (``torchvision_models`` empty): coloured canvas digits of ``image_size``² pixels whose foreground
    covers a fraction ``r``; one classifier per entry of ``settings`` (``{"name", "model", "width",
    "n_epochs"}``, trained by :func:`faithlab_study.recipes.canvas_classifier`, cached), all evaluated on the first
    ``n_images`` test digits; accuracy on the whole test split. With ``torchvision_models`` (the ``paper``
    profile, e.g. :data:`PAPER_MODELS`): their ImageNet weights from the local torch-hub cache and the first
    ``n_images`` images of ``dataset`` (``"imagenet_val"``) by file name; accuracy on those images. An entry may
    also be ``{"name": <torchvision name>, "weights_path": <state dict file>, "config": {builder arguments}}``
    (weights read with ``weights_only``, e.g. the ``paper-dry`` profile's random ones); Grad-CAM's layer follows
    the name (:data:`CAM_LAYERS`).

    ``reference`` (IBA's statistics, the authors' "10,000 training images" scaled down): the first ``n_reference``
    training canvases, or with ``torchvision_models`` the first ``n_reference`` images of ``dataset`` by file name
    (ImageNet's val split only is read, so they include the evaluated images).

    seed: the notebook's (the canvases and their split: each model's replica draws its own, as
    :func:`faithlab_study.recipes.canvas_classifier`; pass the models of one replica together, so that they share
    it). replicas: ``{model name: Replica}``, the replica of each model to
    train (:func:`faithlab_study.verdicts.replicas`; its ``replica.seed`` is the training's, in the cache key); a model
    missing from it is trained with ``seed`` itself. :func:`replica_models` is the notebooks' replica loop over this.
    """
    n_images = _validate.positive_int(n_images, "n_images")
    n_reference = _validate.positive_int(n_reference, "n_reference")
    trained: dict[str, nn.Module] = {}
    if not torchvision_models:
        if not settings or not all(isinstance(s, dict) and {"name", "model", "width", "n_epochs"} <= set(s)
                                   for s in settings):
            raise ValueError("settings must be a non-empty list of {'name', 'model', 'width', 'n_epochs'} dicts, got "
                             f"{settings!r:.200}")
        rows = []
        for s in settings:
            model, _, train_data, test = recipes.canvas_classifier(image_size=image_size, r=r, color=True,
                                                          model_name=s["model"], width=s["width"],
                                                          n_epochs=s["n_epochs"], seed=seed, device=device,
                                                          replica=(replicas or {}).get(s["name"]))
            trained[s["name"]] = model
            rows.append({"model": s["name"], "architecture": s["model"], "width": s["width"],
                         "epochs": s["n_epochs"], "test accuracy": train.loss_and_accuracy(model, test)["accuracy"]})
        x, y = test.x[:n_images], test.y[:n_images]
        reference = train_data.x[:n_reference]
    else:
        ds = data.load(dataset, split="test", data_dir=data_dir)
        chosen = first_by_filename(ds, max(n_images, n_reference))
        reference = torch.stack([ds[i][0] for i in chosen[:n_reference]])
        chosen = chosen[:n_images]
        x = torch.stack([ds[i][0] for i in chosen])
        y = torch.tensor([int(ds[i][1]) for i in chosen])
        rows = []
        for entry in torchvision_models:
            name, how = _torchvision_entry(entry)
            model = models.pretrained(name, **how).to(device).eval()
            trained[name] = model
            rows.append({"model": name, "architecture": name,
                         "weights": str(how.get("weights_path", "torchvision DEFAULT")),
                         "test accuracy": train.loss_and_accuracy(model, data.TensorData(x, y),
                                                                  device=device)["accuracy"]})
    layers = {name: CAM_LAYERS.get(name) for name in trained} if torchvision_models else dict.fromkeys(trained)
    return Setup(trained, x.to(device), y.to(device), pd.DataFrame(rows), layers, reference.to(device))


def replica_models(canvas: TraceModels, n: int, *, n_images: int, n_models: int | None = None, seed: int = 0,
                   dataset: str = "canvas_digits", data_dir: str | None = None, torchvision_models: Sequence = (),
                   device: str | torch.device = "cpu") -> dict[int, Setup]:
    """The replica loop of TRACE's notebooks → ``{r: Setup}`` for r < ``n``: replica r of each of the first
    ``n_models`` of ``canvas`` (None: all), trained (or read from the cache) by :func:`setup` with its own seed,
    :func:`faithlab_study.verdicts.replicas` (seed, <model name>, n)'s replica r, derived from ``seed``, the model's
    name and r, on replica r's own draw of the canvases (:func:`~faithlab_study.verdicts.replication.data_seed`,
    shared by the models of replica r); with ``torchvision_models`` the pretrained weights, the same in
    every replica (``n`` is then 1). Replica r's ``x``, ``y`` are its own ``n_images`` test images, images
    r·n_images … (r + 1)·n_images − 1 of the first n·n_images."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"replicas must be an int ≥ 1, got {n!r}")
    n_images = _validate.positive_int(n_images, "n_images")
    settings = canvas.first(n_models)
    seeds = {s["name"]: list(replication.replicas(seed, s["name"], n)) for s in settings}
    setups = {}
    for r in range(n):
        su = setup(settings, n_images=n_images * n, image_size=canvas.image_size, r=canvas.r, dataset=dataset,
                   data_dir=data_dir, torchvision_models=tuple(torchvision_models), seed=seed, device=device,
                   replicas=None if torchvision_models else {name: reps[r] for name, reps in seeds.items()})
        if len(su.x) < n_images * n:
            raise ValueError(f"n_images × replicas ({n_images} × {n}) exceeds the {len(su.x)} test images of "
                             f"{dataset!r}")
        own = slice(r * n_images, (r + 1) * n_images)
        setups[r] = dataclasses.replace(su, x=su.x[own], y=su.y[own])
    return setups


def models_info(setups: Mapping[int, Setup]) -> pd.DataFrame:
    """Every replica's models (:attr:`Setup.info`) with a ``replica`` column, replica by replica."""
    return pd.concat([su.info.assign(replica=r) for r, su in setups.items()], ignore_index=True)


def references_of(x: torch.Tensor, references: Sequence[str], *, blur_kernel: int, blur_sigma: float) -> dict:
    """The references of the images x (the blur reference is an image per image), by name, for the names in
    ``references`` (of ``"zero"``, ``"mean"``, ``"blur"``; the blur a ``blur_kernel``² Gaussian of σ ``blur_sigma``)."""
    refs = {"zero": "zero", "mean": "mean",
            "blur": perturb.make_reference(x, "blur", kernel_size=blur_kernel, sigma=blur_sigma)}
    return {name: refs[name] for name in references}


_TORCHVISION_NAMES = {"resnet18": "ResNet-18", "vgg16": "VGG-16", "alexnet": "AlexNet", "googlenet": "GoogLeNet",
                      "mobilenet_v3_large": "MobileNetV3", "densenet161": "DenseNet-161"}


def _names(names) -> str:
    """Model names in a set-up table: all of them, or the first two and a count when they would not fit a cell."""
    names = list(names)
    text = ", ".join(names)
    return text if len(text) <= 60 else f"{', '.join(names[:2])}, … ({len(names)} models)"


def _models(p: Mapping) -> str:
    """The explained models in a set-up table: torchvision's ImageNet CNNs, or the canvas models trained here."""
    if p["torchvision_models"]:
        return _names(_TORCHVISION_NAMES.get(m, m) for m in
                      (m["name"] if isinstance(m, Mapping) else m for m in p["torchvision_models"]))
    return _names(s["name"] for s in _canvas(p).settings)


def _canvas(p: Mapping) -> TraceModels:
    """The canvas stand-ins a notebook's parameters set (its ``trace_models`` overrides)."""
    return TraceModels(**p["trace_models"])


def _side(p: Mapping) -> int:
    """The image side in pixels: 224 for the ImageNet models, else the canvases' ``image_size``."""
    return 224 if p["torchvision_models"] else _canvas(p).image_size


def _images(p: Mapping, per_replica: int) -> str:
    """The images of a claim: per replica and pooled over the trained replicas (or just the count, for one model)."""
    replicas = p.get("replicas", 1)
    return (f"{per_replica} images" if replicas == 1 else
            f"{replicas * per_replica} images ({replicas} replicas × {per_replica})")


def _data(p: Mapping) -> str:
    """The images in a set-up table: ImageNet, or the coloured canvases with the digit's share of the pixels."""
    if p["torchvision_models"]:
        return f"{'ImageNet-1k val' if p['dataset'] == 'imagenet_val' else p['dataset']}, {_side(p)} px"
    return f"coloured digit canvases, {_side(p)} px (digit {_canvas(p).r * 100:g} %)"


SETUP: tuple[Setting, ...] = (
    Setting("data", "ImageNet-1k val, 224 px", "trace/table1", _data),
    Setting("models", "ResNet-18, VGG-16, AlexNet, GoogLeNet, … (6 CNNs)", "trace/table1", _models),
    Setting("training", "torchvision's pre-trained weights", "trace/table1",
            lambda p: "torchvision weights" if p["torchvision_models"] else
            "trained here: " + ", ".join(str(s["n_epochs"]) for s in _canvas(p).settings) + " epochs"),
    Setting("images (Table 1)", "not stated (Fig. 2b: the first 200)", "trace/table1",
            lambda p: f"{p['n_images']}" if p.get("replicas", 1) == 1 else
            f"{p['replicas'] * p['n_images']} per model ({p['replicas']} trained replicas × {p['n_images']})"),
    Setting("patches t", "7×7 = 49 (32 px patches)", "trace/table1",
            lambda p: f"{p['edge']}×{p['edge']} = {p['edge'] ** 2} ({_side(p) // p['edge']} px patches)"),
    Setting("TRACE-SA schedule", "K = 5,000, T0 = 0.1 (-p) / 2 (-y), η = 0.999", "trace/table1",
            lambda p: f"K = {p['iterations']:,}, T0 = {search.T0['prob']:g} (-p) / "
                      f"{search.T0['logit']:g} (-y), η = {p['eta']:g}"),
    Setting("references", "zero, mean, blur (31×31, σ = 56)", "trace/table1",
            lambda p: ", ".join(p["references"]) + (f" ({p['blur_kernel']}×{p['blur_kernel']}, σ = {p['blur_sigma']:g})"
                                                     if "blur" in p["references"] else "")),
    Setting("methods", "Grad, GC, IBA, RISE, EP, EBP, IG, IxG", "trace/table1", lambda p: ", ".join(p["methods"])),
    Setting("RISE masks, EP iterations, IG steps", "not stated in the text", "trace/table1",
            "{rise_masks:,}, {ep_iterations:,}, {ig_steps}"),
    Setting("complete search (Fig. 2a)", "t = 4×4 = 16, all 2^16 subsets", "trace/searches",
            lambda p: f"t = {p['cs_edge']}×{p['cs_edge']} = {p['cs_edge'] ** 2}, "
                      f"{_images(p, min(p['cs_images'], p['n_images']))}, SA K = {p['cs_iterations']:,}"),
    Setting("cross-test (Fig. 3b)", "t = 7×7 = 49, K = 5,000", "trace/searches",
            lambda p: f"t = {p['edge']}×{p['edge']} = {p['edge'] ** 2}, {_images(p, p['n_images'])}, "
                      f"SA K = {p['iterations']:,}"),
    Setting("random deletion test (Fig. 4)", "ResNet-18, 6 patch sizes, several random orders", "trace/random_test",
            lambda p: f"sides {'/'.join(str(_side(p) // e) for e in p['edges'])} px, {p['n_orders']} orders, "
                      f"{_images(p, p['n_images'])}"),
)
"""The chapter's set-up table, paper (spec §5.1–5.7) against ours (the executed notebooks' parameters)."""

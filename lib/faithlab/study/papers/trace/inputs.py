"""The models and images of TRACE's notebooks: the canvas stand-ins trained here (one named setting,
:class:`TraceModels`, shared by the three notebooks) or the paper's torchvision ImageNet classifiers, and the first
images they are all evaluated on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, data, models, perturb, train

from faithlab.study import recipes

__all__ = ["PAPER_MODELS", "CAM_LAYERS", "DENSENET_SMALL", "TraceModels", "Setup", "setup", "first_by_filename",
           "references_of"]


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
    :func:`faithlab.study.recipes.canvas_classifier`); image_size: the canvases' side in pixels; r: the share of the
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
          train_seeds: Mapping[str, int] | None = None) -> Setup:
    """Stand-ins or the paper's models, and the images they are all evaluated on.

    Default (``torchvision_models`` empty): coloured canvas digits of ``image_size``² pixels whose foreground
    covers a fraction ``r``; one classifier per entry of ``settings`` (``{"name", "model", "width",
    "n_epochs"}``, trained by :func:`faithlab.study.recipes.canvas_classifier`, cached), all evaluated on the first
    ``n_images`` test digits; accuracy on the whole test split. With ``torchvision_models`` (the ``paper``
    profile, e.g. :data:`PAPER_MODELS`): their ImageNet weights from the local torch-hub cache and the first
    ``n_images`` images of ``dataset`` (``"imagenet_val"``) by file name; accuracy on those images. An entry may
    also be ``{"name": <torchvision name>, "weights_path": <state dict file>, "config": {builder arguments}}``
    (weights read with ``weights_only``, e.g. the ``paper-dry`` profile's random ones); Grad-CAM's layer follows
    the name (:data:`CAM_LAYERS`).

    ``reference`` (IBA's statistics, the authors' "10,000 training images" scaled down): the first ``n_reference``
    training canvases, or with ``torchvision_models`` the first ``n_reference`` images of ``dataset`` by file name
    (ImageNet's val split only is read, so they include the evaluated images).

    train_seeds: ``{model name: training seed}`` (a replica's, :func:`faithlab.study.verdicts.replica_seed`); the data stay
    keyed to ``seed``. A model missing from it is trained with ``seed`` (the cache keys on the training seed).
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
                                                          train_seed=(train_seeds or {}).get(s["name"]))
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


def references_of(x: torch.Tensor, references: Sequence[str], *, blur_kernel: int, blur_sigma: float) -> dict:
    """The references of the images x (the blur reference is an image per image), by name, for the names in
    ``references`` (of ``"zero"``, ``"mean"``, ``"blur"``; the blur a ``blur_kernel``² Gaussian of σ ``blur_sigma``)."""
    refs = {"zero": "zero", "mean": "mean",
            "blur": perturb.make_reference(x, "blur", kernel_size=blur_kernel, sigma=blur_sigma)}
    return {name: refs[name] for name in references}

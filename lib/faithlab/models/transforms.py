"""The model's own preprocessing: :class:`Preprocess` (resize, centre crop, normalise: a PIL image → the tensor the
model expects) and :func:`preprocessing`, read from torchvision's weights metadata or timm's ``pretrained_cfg``."""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from faithlab import _pixels
from faithlab.models.names import parse_spec, skeleton

_MODES = {1: "L", 3: "RGB"}


@dataclasses.dataclass(frozen=True)
class Preprocess:
    """The transform a model expects, from a PIL image to a normalised ``(C, H, W)`` float tensor.

    resize: an int (the shorter side, aspect kept) or ``(H, W)`` (exact), or None (no resize); crop: ``(H, W)``
    centre crop or None; mean, std: per channel, applied to values in [0, 1]; interpolation: "bilinear", "bicubic",
    "nearest", ... (``torchvision.transforms.InterpolationMode``); mode: the PIL mode the image is converted to first
    ("RGB", or "L" for one channel). The steps are those of torchvision's ``ImageClassification`` and timm's eval
    transform (resize, centre crop, to [0, 1], normalise), so the tensors of 8-bit images equal theirs. Images of
    other depths are mapped first by ``faithlab._pixels.standard``: 16-bit grey is scaled by its bit depth (value /
    65535; PIL's own conversion clips it at 255), resized in floats and, for an "RGB" model, repeated on the three
    channels; an image whose values have no known range raises ValueError. Frozen: change a field with
    ``dataclasses.replace``."""

    resize: int | tuple[int, int] | None
    crop: tuple[int, int] | None
    mean: tuple[float, ...]
    std: tuple[float, ...]
    interpolation: str = "bilinear"
    mode: str = "RGB"

    def __post_init__(self) -> None:
        from torchvision.transforms import InterpolationMode

        if self.mode not in _MODES.values():
            raise ValueError(f"mode must be one of {list(_MODES.values())}, got {self.mode!r}")
        channels = 1 if self.mode == "L" else 3
        for field in ("mean", "std"):
            value = getattr(self, field)
            if not isinstance(value, tuple) or len(value) != channels:
                raise ValueError(f"{field} must be a tuple of {channels} floats (mode {self.mode!r}), got {value!r}")
        if any(not s > 0 for s in self.std):
            raise ValueError(f"std must be positive, got {self.std!r}")
        if self.interpolation not in {m.value for m in InterpolationMode}:
            raise ValueError(f"interpolation must be one of {[m.value for m in InterpolationMode]}, "
                             f"got {self.interpolation!r}")
        sizes = [self.resize] if isinstance(self.resize, int) else list(self.resize or ()) + list(self.crop or ())
        if any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in sizes):
            raise ValueError(f"resize and crop must be positive ints, got resize={self.resize!r}, crop={self.crop!r}")

    @property
    def normalisation(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(mean, std)``: what metrics that need pixel values (e.g. a blur reference) undo."""
        return self.mean, self.std

    @property
    def size(self) -> tuple[int, int] | None:
        """The output ``(H, W)``, or None when it follows the image (no crop and no exact resize)."""
        if self.crop is not None:
            return self.crop
        return self.resize if isinstance(self.resize, tuple) else None

    def __call__(self, image) -> torch.Tensor:
        from PIL import Image
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as TF

        if not isinstance(image, Image.Image):
            raise TypeError(f"image must be a PIL image, got {type(image).__name__}")
        image = _pixels.standard(image)  # 16-bit grey → floats in [0, 1] (PIL's convert would clip it at 255)
        grey_floats = image.mode == "F"
        if not grey_floats and image.mode != self.mode:
            image = image.convert(self.mode)
        if self.resize is not None:  # PIL resizes an "F" image with the same filter, in floats
            size = [self.resize] if isinstance(self.resize, int) else list(self.resize)
            image = TF.resize(image, size, interpolation=InterpolationMode(self.interpolation), antialias=True)
        if self.crop is not None:
            image = TF.center_crop(image, list(self.crop))
        if grey_floats:
            x = TF.pil_to_tensor(image)
            x = x.expand(len(self.mean), -1, -1).clone()  # grey as RGB: three equal channels, as convert("RGB")
        else:
            x = TF.pil_to_tensor(image).float().div(255)
        return TF.normalize(x, list(self.mean), list(self.std))


def _torchvision_preprocess(name: str) -> Preprocess:
    """From the architecture's DEFAULT weights' ``transforms()`` (torchvision's ImageClassification; no download)."""
    import torchvision

    t = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    if not all(hasattr(t, a) for a in ("crop_size", "resize_size", "mean", "std", "interpolation")):
        raise ValueError(f"spec 'torchvision:{name}' is not an image classifier; its weights' transforms are "
                         f"{type(t).__name__}")
    resize = t.resize_size[0] if len(t.resize_size) == 1 else tuple(t.resize_size)
    crop = (t.crop_size[0], t.crop_size[0]) if len(t.crop_size) == 1 else tuple(t.crop_size)
    return Preprocess(resize=resize, crop=crop, mean=tuple(t.mean), std=tuple(t.std),
                      interpolation=t.interpolation.value)


def _timm_preprocess(cfg: dict, what: str) -> Preprocess:
    """From timm's data config (``resolve_data_config``: input_size, crop_pct, crop_mode, mean, std, interpolation),
    the steps of ``timm.data.create_transform(**cfg)`` at eval."""
    from timm.data import DEFAULT_CROP_PCT

    channels, *size = cfg["input_size"]
    crop_pct = cfg.get("crop_pct") or DEFAULT_CROP_PCT
    scale = [math.floor(s / crop_pct) for s in size]
    crop_mode = cfg.get("crop_mode") or "center"
    if crop_mode == "squash":
        resize: int | tuple[int, int] = (scale[0], scale[1])
    elif crop_mode == "center":
        resize = min(scale)  # timm: the shorter side (exact for square inputs, the ones timm publishes)
    else:
        raise ValueError(f"{what}: timm's crop_mode {crop_mode!r} is not supported (center and squash are)")
    if channels not in _MODES:
        raise ValueError(f"{what}: images with {channels} channels are not supported (1 or 3)")
    interpolation = cfg.get("interpolation") or "bilinear"
    return Preprocess(resize=resize, crop=(size[0], size[1]), mean=tuple(cfg["mean"]), std=tuple(cfg["std"]),
                      interpolation="bicubic" if interpolation == "random" else interpolation,
                      mode=_MODES[channels])


def _plain_preprocess(image_size: int | None, channels: int | None) -> Preprocess:
    """A zoo model's: resize to its input size when known (else none), values in [0, 1] (mean 0, std 1)."""
    channels = channels if channels in _MODES else 3
    return Preprocess(resize=None if image_size is None else (image_size, image_size), crop=None,
                      mean=(0.0,) * channels, std=(1.0,) * channels, interpolation="bilinear", mode=_MODES[channels])


def preprocessing(spec_or_model: str | nn.Module) -> Preprocess:
    """The model's own preprocessing: a :class:`Preprocess` (resize, centre crop, mean, std, interpolation).

    torchvision: its DEFAULT weights' ``transforms()`` (e.g. ResNet-18: resize 256, crop 224, ImageNet mean/std,
    bilinear); timm: ``timm.data.resolve_data_config`` of the model or the spec's pretrained config (input size,
    crop_pct, mean, std, interpolation): both equal the libraries' own transforms on a PIL image. A model from
    :func:`load` carries its own. Zoo models and other modules: a resize to their ``image_size`` when they have one
    (else no resize: the images must then share one size), their first conv's channels, and **mean 0, std 1** (values
    in [0, 1]): the zoo's models know nothing of the data they were trained on, so pass your data's normalisation
    with ``dataclasses.replace(p, mean=..., std=...)``. A bare torchvision model does not say which architecture it
    is: pass its spec ("torchvision:resnet18") instead (TypeError otherwise)."""
    if isinstance(spec_or_model, str):
        source, name = parse_spec(spec_or_model)
        if source == "torchvision":
            return _torchvision_preprocess(name)
        if source == "timm":
            import timm
            from timm.data import resolve_data_config

            cfg = timm.models.get_pretrained_cfg(name)
            if cfg is None:
                return preprocessing(skeleton("timm", name, {}))
            return _timm_preprocess(resolve_data_config(pretrained_cfg=cfg.to_dict()), f"spec {spec_or_model!r}")
        import inspect

        from faithlab.models.registry import REGISTRY

        params = inspect.signature(REGISTRY[name]).parameters
        default = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
        if "vocab_size" in params or not isinstance(default.get("in_channels"), int):
            raise ValueError(f"spec {spec_or_model!r} is not an image model of the zoo; preprocessing is for images")
        return _plain_preprocess(default.get("image_size"), default["in_channels"])
    if not isinstance(spec_or_model, nn.Module):
        raise TypeError(f"spec_or_model must be a spec string or an nn.Module, got {type(spec_or_model).__name__}")
    model = spec_or_model
    own = getattr(model, "faithlab_preprocess", None)
    if isinstance(own, Preprocess):
        return own
    module = type(model).__module__
    if module.startswith("timm."):
        from timm.data import resolve_data_config

        cfg = dict(resolve_data_config({}, model=model))
        size = getattr(getattr(model, "patch_embed", None), "img_size", None)
        if isinstance(size, tuple) and len(size) == 2 and getattr(model.patch_embed, "strict_img_size", True):
            cfg["input_size"] = (cfg["input_size"][0], *size)  # a ViT built with img_size=...: its own size
        return _timm_preprocess(cfg, f"model {type(model).__name__}")
    if module.startswith("torchvision."):
        raise TypeError(f"spec_or_model: a bare torchvision {type(model).__name__} does not say which architecture "
                        "it is; pass its spec (e.g. 'torchvision:resnet18') or load it with "
                        "fl.models.load(spec, weights=...)")
    conv = next((m for m in model.modules() if isinstance(m, nn.Conv2d)), None)
    size = getattr(model, "image_size", None)
    shape = getattr(model, "shape", None)  # LinearClassifier: (C, H, W)
    if size is None and isinstance(shape, tuple) and len(shape) == 3:
        size = shape[1]
    if conv is None and size is None:
        raise ValueError(f"spec_or_model: {type(model).__name__} has no Conv2d and no image_size, so it does not look "
                         "like an image model; build the transform yourself with fl.models.Preprocess(resize=..., "
                         "crop=..., mean=..., std=...)")
    return _plain_preprocess(size if isinstance(size, int) else None,
                             conv.in_channels if conv is not None else (shape[0] if shape else None))

"""What a model spec names and builds: ``"torchvision:<name>"``, ``"timm:<name>"`` or a zoo name parsed and
checked (an unknown name gets the close ones), the architecture built, and whether a module is a vision
transformer; shared by :mod:`faithlab.models.specs` (loading your model), :mod:`faithlab.models.transforms` (its
preprocessing) and :mod:`faithlab.models.layers` (its CAM layer)."""

from __future__ import annotations

import difflib

import torch
from torch import nn

from faithlab._optional import require
from faithlab.models.vit import ViT

SPEC_FORMS = ("torchvision:<name>", "timm:<name>", "<zoo name>")
"""The spellings :func:`load` and :func:`preprocessing` accept, e.g. ``"torchvision:resnet18"``,
``"timm:vit_tiny_patch16_224"``, ``"resnet9"`` (a name of :func:`faithlab.models.available`)."""

VIT_METHODS = ("raw_attention", "rollout", "attention_gradcam", "transformer_mm", "conservative_lrp", "lrp",
               "partial_lrp", "transformer_attribution", "attcat")
"""The explainers that work on a ViT (``faithlab.explainers.METHODS``; named here for error messages,
models do not import explainers)."""


def _spec_names(source: str) -> list[str]:
    """The architecture names of ``source`` ("torchvision" or "timm"); [] for timm when it is not installed."""
    if source == "torchvision":
        import torchvision

        return list(torchvision.models.list_models())
    try:
        import timm
    except ImportError:
        return []
    return list(timm.list_models())


def _bad_spec(spec: str, guess: str, sources: tuple[str, ...]) -> ValueError:
    """A ValueError for an unknown spec: the accepted forms and the close names (difflib) of ``sources``."""
    from faithlab.models.registry import available

    pool = {name: name for name in available()} if "zoo" in sources else {}
    for source in ("torchvision", "timm"):
        if source in sources:
            pool.update({f"{source}:{name}": name for name in _spec_names(source)})
    close = difflib.get_close_matches(guess, list(pool.values()), n=5, cutoff=0.6)
    hits = [full for full, name in pool.items() if name in close][:5]
    hint = f"; close names: {hits}" if hits else ""
    return ValueError(f"spec {spec!r} is not a known model; the accepted forms are {list(SPEC_FORMS)} (torchvision: "
                      f"torchvision.models.list_models(); timm: timm.list_models(); zoo: faithlab.models.available())"
                      f"{hint}")


def parse_spec(spec: str) -> tuple[str, str]:
    """("torchvision" | "timm" | "zoo", name) for a spec string, else ValueError listing the forms and close names."""
    if not isinstance(spec, str) or not spec:
        raise TypeError(f"spec must be a non-empty string such as 'torchvision:resnet18', got {spec!r}")
    source, sep, name = spec.partition(":")
    if not sep:
        from faithlab.models.registry import available

        if spec in available():
            return "zoo", spec
        raise _bad_spec(spec, spec, ("zoo", "torchvision", "timm"))
    if source == "torchvision":
        if name in _spec_names("torchvision"):
            return source, name
        raise _bad_spec(spec, name, ("torchvision",))
    if source == "timm":
        timm = require("timm", f"spec {spec!r}")
        if timm.is_model(name.split(".")[0]):
            return source, name
        raise _bad_spec(spec, name.split(".")[0], ("timm",))
    raise _bad_spec(spec, name, ("torchvision", "timm"))


def is_vit(model: nn.Module) -> bool:
    """A vision transformer: ours, or any model whose convolutions are at most one patch embedding (kernel = stride)
    next to attention modules (timm / torchvision ViT, DeiT, Swin, ...)."""
    if isinstance(model, ViT):
        return True
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    patchy = len(convs) <= 1 and all(m.kernel_size == m.stride for m in convs)
    return patchy and any(isinstance(m, nn.MultiheadAttention) or "Attention" in type(m).__name__
                          for m in model.modules())


def build_architecture(source: str, name: str, n_classes: int | None, kwargs: dict) -> nn.Module:
    """The architecture, random init (global RNG), with ``n_classes`` outputs when given."""
    config = dict(kwargs)
    if n_classes is not None:
        config["n_classes" if source == "zoo" else "num_classes"] = n_classes
    if source == "torchvision":
        import torchvision

        return torchvision.models.get_model(name, weights=None, **config)
    if source == "timm":
        import timm

        return timm.create_model(name, pretrained=False, **config)
    from faithlab.models.registry import build

    return build(name, **config)


def skeleton(source: str, name: str, kwargs: dict) -> nn.Module:
    """The architecture with its default head, built on the meta device when it can be (no memory, no RNG)."""
    try:
        with torch.device("meta"):
            return build_architecture(source, name, None, kwargs)
    except Exception:  # noqa: BLE001  an initialiser that meta tensors do not support: build it for real
        return build_architecture(source, name, None, kwargs)

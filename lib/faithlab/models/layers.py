"""The layer Grad-CAM reads: :func:`cam_layer` chooses it for the model's architecture (its own ``cam_layer``, the
choices of :data:`faithlab.models.loading.CAM_LAYERS` extended to the torchvision and timm families, else the last
Conv2d with a warning)."""

from __future__ import annotations

import warnings

from torch import nn

from faithlab.models.names import VIT_METHODS, is_vit

def _known_cam_layer(model: nn.Module) -> str | None:
    """The last convolutional block of a known torchvision / timm architecture (CAM_LAYERS' choices), else None."""
    module = type(model).__module__
    if module.startswith("torchvision."):
        from torchvision import models as tv

        if isinstance(model, tv.ResNet):
            return "layer4"
        if isinstance(model, (tv.VGG, tv.AlexNet)):  # the activation before the last max-pool (vgg16: features.29)
            pools = [i for i, m in enumerate(model.features) if isinstance(m, nn.MaxPool2d)]
            return f"features.{pools[-1] - 1}" if pools else f"features.{len(model.features) - 1}"
        if isinstance(model, tv.GoogLeNet):
            return "inception5b"
        if isinstance(model, tv.Inception3):
            return "Mixed_7c"
        if isinstance(model, tv.DenseNet):
            return "features.norm5"
        if isinstance(model, (tv.MobileNetV2, tv.MobileNetV3, tv.EfficientNet, tv.ConvNeXt, tv.SqueezeNet)):
            return f"features.{len(model.features) - 1}"
        if isinstance(model, tv.RegNet):
            return "trunk_output"
        if isinstance(model, tv.ShuffleNetV2):
            return "conv5"
        if isinstance(model, tv.MNASNet):
            return f"layers.{len(model.layers) - 1}"
        return None
    if module.startswith("timm."):
        if type(model).__name__ == "EfficientNet" and hasattr(model, "bn2"):  # conv_head + bn2 (with activation)
            return "bn2"
        info = getattr(model, "feature_info", None)
        if isinstance(info, list) and info and isinstance(info[-1], dict) and info[-1].get("module"):
            return info[-1]["module"]  # timm's last feature map: layer4 (ResNet), stages.3 (ConvNeXt), act4, ...
    return None


def cam_layer(model: nn.Module) -> str:
    """The dotted name of the layer Grad-CAM / LayerCAM read in ``model`` (their default when ``layer=None``).

    The model's ``cam_layer`` attribute when it has one (a name or a submodule: the zoo's models); else the last
    convolutional block of a known architecture, following :data:`~faithlab.models.loading.CAM_LAYERS`
    (torchvision ResNet "layer4", VGG/AlexNet the activation before the last max-pool, GoogLeNet "inception5b",
    Inception-v3 "Mixed_7c", DenseNet "features.norm5", MobileNet/EfficientNet/ConvNeXt/SqueezeNet the last block
    of ``features``, RegNet "trunk_output", ShuffleNetV2 "conv5", MNASNet the last of ``layers``; timm EfficientNet
    "bn2", other timm models the module of their last ``feature_info`` entry: ResNet "layer4", ConvNeXt
    "stages.3", Xception "act4"); else the last Conv2d, with a warning naming it. A vision transformer raises
    ValueError: CAMs need a conv layer."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    own = getattr(model, "cam_layer", None)
    if isinstance(own, str):
        try:
            model.get_submodule(own)
        except AttributeError:
            raise ValueError(f"model.cam_layer {own!r} is not a submodule of model") from None
        return own
    if isinstance(own, nn.Module):
        found = next((name for name, m in model.named_modules() if m is own and name), None)
        if found is None:
            raise ValueError("model.cam_layer is not a submodule of model; pass layer=<module or dotted name>")
        return found
    if is_vit(model):
        raise ValueError(f"model ({type(model).__name__}) is a vision transformer: CAMs need a convolutional layer. "
                         f"Use the methods that work on ViTs: {', '.join(VIT_METHODS)} (a timm ViT first goes through "
                         "fl.models.vit_from_timm(model), or load it with fl.models.load('timm:<name>'))")
    known = _known_cam_layer(model)
    if known is not None:
        return known
    convs = [name for name, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    if not convs:
        raise ValueError(f"layer is required: model ({type(model).__name__}) has no cam_layer attribute and no Conv2d; "
                         "pass layer=<module or dotted name>")
    warnings.warn(f"cam_layer: {type(model).__name__} is not a known architecture; Grad-CAM uses its last Conv2d "
                  f"{convs[-1]!r} (pass layer=... to choose another)", stacklevel=2)
    return convs[-1]

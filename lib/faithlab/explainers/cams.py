"""Class-activation maps, registered with :func:`faithlab.explainers.explain`: Grad-CAM (captum's LayerGradCam) and
LayerCAM, at a layer given as a module, a dotted name, the model's ``cam_layer`` or, for torchvision/timm
architectures, the layer :func:`faithlab.models.cam_layer` chooses; upsampled to the input."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from captum.attr import LayerGradCam
from torch import nn

from faithlab.explainers.core import forward_args, leaf, register


def resolve_layer(model: nn.Module, layer: nn.Module | str | None) -> nn.Module:
    """Resolve a CAM layer: a module, a dotted submodule name, or, when ``layer`` is None, ``model.cam_layer`` or the
    layer :func:`faithlab.models.cam_layer` chooses for the architecture (ValueError for a ViT, naming its methods)."""
    if layer is None:
        layer = getattr(model, "cam_layer", None)
        if layer is None:
            from faithlab.models.layers import cam_layer

            layer = cam_layer(model)
    if isinstance(layer, str):
        try:
            return model.get_submodule(layer)
        except AttributeError:
            raise ValueError(f"layer {layer!r} is not a submodule of model") from None
    if not isinstance(layer, nn.Module):
        raise TypeError(f"layer must be an nn.Module or a dotted name, got {type(layer).__name__}")
    return layer


def cam_output(cam: torch.Tensor, x: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Upsample a (b, 1, h, w) / (b, 1, t) CAM to x's size (bilinear / linear), optionally min-max to [0, 1]."""
    if x.ndim == 4 and cam.ndim == 4:
        out = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    elif x.ndim == 3 and cam.ndim == 3:  # series (B, T, C): the conv layer is (B, C', T')
        out = F.interpolate(cam, size=x.shape[1], mode="linear", align_corners=False).transpose(1, 2)
    else:
        raise ValueError(f"CAM methods need images (B, C, H, W) or series (B, T, C) with a matching conv layer; "
                         f"got x {tuple(x.shape)} and a layer map {tuple(cam.shape)}")
    if normalize:  # pytorch-grad-cam's scaling: (cam - min) / (max - min + 1e-7), per sample
        flat = out.flatten(1)
        lo, hi = flat.amin(1), flat.amax(1)
        shape = (-1, *[1] * (out.ndim - 1))
        out = (out - lo.view(shape)) / (hi - lo + 1e-7).view(shape)
    return out


@register("gradcam")
def _gradcam(model, x, target, extra, *, batch_size, generator, layer: nn.Module | str | None = None,
             normalize: bool = False):
    """Grad-CAM (captum LayerGradCam) at ``layer`` (default ``faithlab.models.cam_layer(model)``):
    ReLU(Σ_k mean(∂f/∂A_k) A_k), upsampled to the input; ``normalize`` min-max scales each map to [0, 1] as
    pytorch-grad-cam does."""
    cam = LayerGradCam(model, resolve_layer(model, layer)).attribute(x, target=target,
                                                              additional_forward_args=forward_args(extra),
                                                              relu_attributions=True)
    return cam_output(cam, x, normalize)


@register("layercam")
def _layercam(model, x, target, extra, *, batch_size, generator, layer: nn.Module | str | None = None,
              normalize: bool = False):
    """LayerCAM (Jiang et al. 2021): ReLU(Σ_k ReLU(∂f/∂A_k) ⊙ A_k), upsampled; options as "gradcam".

    captum 0.9 has no LayerCAM and its layer methods cannot put a ReLU on the gradient alone, so we read the
    layer's activation with a forward hook and its gradient with autograd."""
    module = resolve_layer(model, layer)
    x = leaf(x)  # so the activation has a gradient even when the weights are frozen
    store: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, _i, out: store.append(out))
    try:
        with torch.enable_grad():
            out = model(x) if extra is None else model(x, extra)
            (grad,) = torch.autograd.grad(out.gather(1, target[:, None]).sum(), store[0])
    finally:
        handle.remove()
    cam = (grad.clamp_min(0) * store[0]).sum(1, keepdim=True).clamp_min(0).detach()
    return cam_output(cam, x, normalize)

"""Grad-CAM (Selvaraju et al. 2017), registered as ``explain(..., method="gradcam")``: captum's ``LayerGradCam`` at
a layer given as a module, a dotted name, the model's ``cam_layer`` or, for torchvision/timm architectures, the
layer :func:`faithlab.models.cam_layer` chooses; upsampled to the input."""

from __future__ import annotations

from faithlab.explainers._captum import LayerGradCam
from torch import nn

from faithlab.explainers._common import cam_output, forward_args, resolve_layer
from faithlab.explainers.core import register


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

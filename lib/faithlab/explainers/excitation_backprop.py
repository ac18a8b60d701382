"""Excitation Backprop (Zhang et al. 2016), registered as ``explain(..., method="excitation_backprop")``:
TorchRay's marginal winning probability at a layer, upsampled like Grad-CAM. Returns ``(B, 1, H, W)`` maps for
images ``(B, C, H, W)``, higher = more important."""

from __future__ import annotations

import torch

from faithlab._optional import require
from faithlab.explainers._common import cam_output, need_images, resolve_layer
from faithlab.explainers._torchray import check_model, finite_logits_on, keeping_requires_grad, quiet
from faithlab.explainers.core import register


@register("excitation_backprop")
def _excitation_backprop(model, x, target, extra, *, batch_size, generator, layer: torch.nn.Module | str | None = None):
    """Excitation Backprop (Zhang et al. 2016, TorchRay's ``excitation_backprop``; not the contrastive variant):
    the marginal winning probability of the target reaching ``layer`` (default ``model.cam_layer``), summed over
    channels and upsampled to the image like Grad-CAM. TorchRay rewires convolutions, linear layers, pooling and
    normalisation during the pass; residual additions of our ResNets pass the excitation unchanged (TorchRay only
    rewires torchvision's ResNets). The rewiring swaps functions of ``torch.nn.functional`` process-wide for the
    duration of the pass (TorchRay's patching; not thread-safe), and the ``requires_grad`` flags TorchRay switches off
    are restored, also when a call raises."""
    with quiet():
        require("torchray", "method 'excitation_backprop'")
        from torchray.attribution.excitation_backprop import excitation_backprop

    need_images(x, "excitation_backprop")
    check_model(model, extra, "excitation_backprop")
    if not finite_logits_on(model, x):
        return torch.full((x.shape[0], 1, *x.shape[-2:]), float("nan"), dtype=x.dtype, device=x.device)
    module = resolve_layer(model, layer)
    with quiet(), torch.enable_grad(), keeping_requires_grad(model):
        sal = excitation_backprop(model, x.detach(), target, saliency_layer=module)
    return cam_output(sal.detach().to(x.dtype), x, normalize=False)

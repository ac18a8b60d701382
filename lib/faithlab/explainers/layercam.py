"""LayerCAM (Jiang et al. 2021), registered as ``explain(..., method="layercam")``: the layer's activations
weighted element-wise by their positive gradients, at the layer Grad-CAM reads, upsampled to the input."""

from __future__ import annotations

import torch
from torch import nn

from faithlab.explainers._common import cam_output, resolve_layer
from faithlab.explainers.core import leaf, register


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

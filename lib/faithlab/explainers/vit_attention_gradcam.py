"""Chefer et al.'s Grad-CAM for a ViT (SaCo §3.4), registered as ``explain(..., method="attention_gradcam")``: the
last block's CLS-row attention per head weighted by its mean gradient, upsampled to the image
(:mod:`faithlab.explainers.vit`). :func:`attention_gradcam` is the rule on a recorded map and its gradient."""

from __future__ import annotations

import torch

from faithlab.explainers.vit import check_maps, record, token_pixels
from faithlab.explainers.core import register

__all__ = ["attention_gradcam"]


def attention_gradcam(attention: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Chefer et al.'s ViT Grad-CAM: last block's CLS-row attention per head, weighted by the mean of its gradient
    over the patch tokens, mean over heads, ReLU → ``(B, T − 1)``."""
    check_maps([attention, grad], "attention and grad")
    cam, g = attention[:, :, 0, 1:], grad[:, :, 0, 1:]
    return (cam * g.mean(-1, keepdim=True)).mean(1).clamp_min(0)


@register("attention_gradcam")
def _attention_gradcam(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Chefer et al.'s ViT Grad-CAM on the last block's attention (ViT only)."""
    maps, grads = record(model, x, target, gradient=True)
    return token_pixels(model, x, attention_gradcam(maps[-1], grads[-1]), upsample)

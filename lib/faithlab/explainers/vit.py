"""What the ViT explainers (SaCo §3.4) share: their names (:data:`METHODS`), the checks of their inputs, one forward
(and backward) pass with the model's attention recorded, and the upsampling of a token map to the image
(:func:`to_pixels`). Registers no method: each ViT method is a ``vit_*`` module of this package.

The model must record its attention like ``faithlab.models.ViT``: ``record_attention(enabled)``, ``attentions()``
(one ``(B, heads, T, T)`` tensor per block), a square patch ``grid`` and the CLS token at index 0. The attention
methods read the CLS row over the patch tokens, a ``(B, grid²)`` token map, and upsample it to the image: ``(B, 1,
H, W)``, bilinear by default (Chefer et al.'s convention followed by SaCo) or ``upsample="nearest"`` (every pixel of
a patch gets its token's value). One forward (and, for gradient methods, one backward) per chunk of inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ATTENTION_METHODS", "LRP_METHODS", "METHODS", "to_pixels", "token_pixels", "check_images", "check_maps",
           "record"]

ATTENTION_METHODS = ("raw_attention", "rollout", "attention_gradcam", "transformer_mm")  # (B, 1, H, W), ≥ 0 maps
LRP_METHODS = ("lrp", "partial_lrp", "transformer_attribution", "attcat")  # Chefer et al.'s relevance pass (vit_lrp)
METHODS = (*ATTENTION_METHODS, "conservative_lrp", *LRP_METHODS)  # every registered ViT-only method


def check_maps(maps: Sequence[torch.Tensor], name: str) -> None:
    """Refuse anything but a non-empty sequence of (B, heads, T, T) attention maps (or their gradients)."""
    if len(maps) == 0 or any(not isinstance(m, torch.Tensor) or m.ndim != 4 or m.shape[-1] != m.shape[-2]
                             for m in maps):
        raise ValueError(f"{name} must be a non-empty sequence of (B, heads, T, T) tensors")


def check_images(x: torch.Tensor) -> None:
    """Refuse anything but a batch of images (B, C, H, W): the ViT methods read a patch grid."""
    if x.ndim != 4:
        raise ValueError(f"x must be images (B, C, H, W), got shape {tuple(x.shape)}")


def to_pixels(tokens: torch.Tensor, grid: int, size: Sequence[int], *, upsample: str = "bilinear") -> torch.Tensor:
    """Token relevance ``(B, grid²)`` (row-major patches) → pixel map ``(B, 1, H, W)``, upsampled bilinearly
    (align_corners=False) or by nearest neighbour (constant within a patch)."""
    if upsample not in ("bilinear", "nearest"):
        raise ValueError(f"upsample must be 'bilinear' or 'nearest', got {upsample!r}")
    if tokens.ndim != 2 or tokens.shape[1] != grid * grid:
        raise ValueError(f"tokens must have shape (B, {grid * grid}), got {tuple(tokens.shape)}")
    maps = tokens.reshape(-1, 1, grid, grid)
    if upsample == "nearest":
        return F.interpolate(maps, size=tuple(size), mode="nearest")
    return F.interpolate(maps, size=tuple(size), mode="bilinear", align_corners=False)


def token_pixels(model: nn.Module, x: torch.Tensor, tokens: torch.Tensor, upsample: str) -> torch.Tensor:
    """A ViT's token map ``(B, grid²)`` as a pixel map of x's size ``(B, 1, H, W)`` (:func:`to_pixels`)."""
    return to_pixels(tokens, model.grid, x.shape[-2:], upsample=upsample)


def record(model: nn.Module, x: torch.Tensor, target: torch.Tensor, gradient: bool):
    """One forward (and backward when ``gradient``) with attention recording on; returns maps and their grads."""
    if not all(hasattr(model, a) for a in ("record_attention", "attentions", "blocks", "grid")):
        arch = (getattr(model, "pretrained_cfg", None) or {}).get("architecture", "<name>")
        raise TypeError(f"model must record attention like faithlab.models.ViT (record_attention, attentions, "
                        f"blocks, grid); got {type(model).__name__}. A timm ViT: convert it with "
                        f"fl.models.vit_from_timm(model), or load it converted with fl.models.load(\"timm:{arch}\", "
                        "weights=<file>)")
    check_images(x)
    previous = [blk.attn.record for blk in model.blocks]
    model.record_attention(True)
    try:
        with torch.enable_grad() if gradient else torch.no_grad():
            out = model(x)
            maps = model.attentions()
            grads = None
            if gradient:
                grads = torch.autograd.grad(out.gather(1, target[:, None]).sum(), maps)
        return [m.detach() for m in maps], grads
    finally:
        for blk, rec in zip(model.blocks, previous):
            blk.attn.record = rec
            blk.attn.attn = blk.attn.attn_grad = None

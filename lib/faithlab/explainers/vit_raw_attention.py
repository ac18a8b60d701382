"""Raw attention (Jain and Wallace 2019; SaCo §3.4), registered as ``explain(..., method="raw_attention")`` for a
ViT: the last block's attention of the CLS token to the patch tokens, mean over heads, upsampled to the image
(:mod:`faithlab.explainers.vit`). :func:`raw_attention` is the rule on recorded maps."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab.explainers.vit import check_maps, record, token_pixels
from faithlab.explainers.core import register

__all__ = ["raw_attention"]


def raw_attention(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Last block's attention of CLS to the patch tokens, mean over heads → ``(B, T − 1)`` (Jain & Wallace)."""
    check_maps(attentions, "attentions")
    return attentions[-1].mean(1)[:, 0, 1:]


@register("raw_attention")
def _raw_attention(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Raw attention: last block, CLS row, mean over heads (ViT only); ``upsample`` "bilinear" | "nearest"."""
    maps, _ = record(model, x, target, gradient=False)
    return token_pixels(model, x, raw_attention(maps), upsample)

"""Attention rollout (Abnar and Zuidema 2020; SaCo §3.4), registered as ``explain(..., method="rollout")`` for a
ViT: the product of every block's head-mean attention mixed with the identity, CLS row over the patch tokens,
upsampled to the image (:mod:`faithlab.explainers.vit`). :func:`rollout` is the rule on recorded maps."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab.explainers.vit import check_maps, record, token_pixels
from faithlab.explainers.core import register

__all__ = ["rollout"]


def rollout(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): R = Â_L ··· Â_1 with Â = rownorm(½·mean_h A + ½·I), the residual
    connection as identity; CLS row over the patch tokens → ``(B, T − 1)``."""
    check_maps(attentions, "attentions")
    eye = torch.eye(attentions[0].shape[-1], dtype=attentions[0].dtype, device=attentions[0].device)
    result = None
    for a in attentions:
        a_hat = 0.5 * a.mean(1) + 0.5 * eye
        a_hat = a_hat / a_hat.sum(-1, keepdim=True)
        result = a_hat if result is None else a_hat @ result
    return result[:, 0, 1:]


@register("rollout")
def _rollout(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Attention rollout (Abnar & Zuidema) over all blocks, CLS row (ViT only)."""
    maps, _ = record(model, x, target, gradient=False)
    return token_pixels(model, x, rollout(maps), upsample)

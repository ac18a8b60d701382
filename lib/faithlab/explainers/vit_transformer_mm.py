"""Transformer-MM (Chefer, Gur and Wolf, ICCV 2021; SaCo §3.4), registered as
``explain(..., method="transformer_mm")`` for a ViT: the rollout of gradient-weighted attention with the identity,
CLS row over the patch tokens, upsampled to the image (:mod:`faithlab.explainers.vit`). :func:`transformer_mm` is
the rule on recorded maps and their gradients; Transformer Attribution applies it to the relevance of the
attention (:mod:`faithlab.explainers.vit_transformer_attribution`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab.explainers.vit import check_maps, record, token_pixels
from faithlab.explainers.core import register

__all__ = ["transformer_mm"]

_LAYERS = ("all", "last")


def transformer_mm(attentions: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], *,
                   layers: str = "all") -> torch.Tensor:
    """Transformer-MM (Chefer et al., ICCV 2021, eqs. 6–7 for self-attention): R = I, then for every block in
    forward order R ← R + mean_h[(∇A ⊙ A)⁺]·R; CLS row over the patch tokens → ``(B, T − 1)``.

    ``layers="last"`` applies the rule to the last block only (SaCo Table 1, "last layer + gradient")."""
    check_maps(attentions, "attentions")
    check_maps(grads, "grads")
    if layers not in _LAYERS:
        raise ValueError(f"layers must be one of {_LAYERS}, got {layers!r}")
    if len(grads) != len(attentions):
        raise ValueError(f"grads must hold one tensor per attention map ({len(attentions)}), got {len(grads)}")
    pairs = list(zip(attentions, grads))
    if layers == "last":
        pairs = pairs[-1:]
    t = attentions[0].shape[-1]
    r = torch.eye(t, dtype=attentions[0].dtype, device=attentions[0].device).expand(len(attentions[0]), t, t)
    for a, g in pairs:
        r = r + (g * a).clamp_min(0).mean(1) @ r
    return r[:, 0, 1:]


@register("transformer_mm")
def _transformer_mm(model, x, target, extra, *, batch_size, generator, layers: str = "all",
                    upsample: str = "bilinear"):
    """Transformer-MM (Chefer et al. ICCV'21); ``layers="last"`` keeps the last block only (ViT only)."""
    if layers not in _LAYERS:
        raise ValueError(f"layers must be one of {_LAYERS}, got {layers!r}")
    maps, grads = record(model, x, target, gradient=True)
    return token_pixels(model, x, transformer_mm(maps, grads, layers=layers), upsample)

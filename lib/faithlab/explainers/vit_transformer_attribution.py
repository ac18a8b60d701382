"""Transformer Attribution (Chefer, Gur and Wolf, CVPR 2021; SaCo §3.4), registered as
``explain(..., method="transformer_attribution")`` for a ``faithlab.models.ViT``: Ā_l = mean_h[(∇A_l ⊙ R_A,l)⁺]
with R_A,l the relevance of block l's attention from Chefer et al.'s relevance pass
(:func:`faithlab.explainers.vit_lrp.relevance`), rolled out as R = I, R ← R + Ā_l·R in forward order (the rule of
:func:`faithlab.explainers.transformer_mm`), CLS row over the patch tokens, upsampled to the image ``(B, 1, H, W)``."""

from __future__ import annotations

from faithlab.explainers.vit import token_pixels
from faithlab.explainers.core import register
from faithlab.explainers.vit_lrp import relevance
from faithlab.explainers.vit_transformer_mm import transformer_mm


@register("transformer_attribution")
def _transformer_attribution(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Transformer Attribution (Chefer et al. 2021): rollout of mean_h[(∇A ⊙ R_A)⁺] with the identity, CLS row."""
    rel = relevance(model, x, target)
    return token_pixels(model, x, transformer_mm(rel.attention_relevance, rel.attention_grads), upsample)

"""Partial LRP (Voita et al. 2019, as in Chefer et al.'s code; SaCo §3.4), registered as
``explain(..., method="partial_lrp")`` for a ``faithlab.models.ViT``: the last block's relevance of the attention
probabilities R_A from Chefer et al.'s relevance pass (:func:`faithlab.explainers.vit_lrp.relevance`), positive
part, mean over heads, CLS row over the patch tokens, upsampled to the image ``(B, 1, H, W)``."""

from __future__ import annotations

from faithlab.explainers.vit import token_pixels
from faithlab.explainers.core import register
from faithlab.explainers.vit_lrp import relevance


@register("partial_lrp")
def _partial_lrp(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Partial LRP (Voita et al. 2019, Chefer's version): last block's R_A, positive part, head mean, CLS row."""
    r_a = relevance(model, x, target).attention_relevance[-1]
    return token_pixels(model, x, r_a.clamp_min(0).mean(1)[:, 0, 1:], upsample)

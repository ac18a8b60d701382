"""ATTCAT (Qiang et al., NeurIPS 2022; SaCo §3.4), registered as ``explain(..., method="attcat")`` for a
``faithlab.models.ViT``: every block's gradient × output tokens weighted by its CLS attention, summed over blocks;
the attentions, block outputs and their gradients come from one pass of
:func:`faithlab.explainers.vit_lrp.relevance` (without the relevance propagation). A signed token map upsampled to
the image ``(B, 1, H, W)``. :func:`attcat` is the rule on recorded maps."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab.explainers.vit import token_pixels
from faithlab.explainers.core import register
from faithlab.explainers.vit_lrp import relevance

__all__ = ["attcat"]


def attcat(attentions: Sequence[torch.Tensor], features: Sequence[torch.Tensor],
           grads: Sequence[torch.Tensor]) -> torch.Tensor:
    """ATTCAT (Qiang et al., NeurIPS 2022): AttCAT_i = Σ_l mean_h(A_l[h, CLS, i]) · Σ_d (∇h_l ⊙ h_l)_{i,d}, with h_l
    the output tokens of block l, ∇h_l the gradient of the target logit w.r.t. them and A_l that block's attention;
    patch tokens i → ``(B, T − 1)``, signed.

    The paper's eq. (class activation tokens ∇h ⊙ h weighted by attention, summed over layers) was not checked
    against its text here; this follows the SaCo spec's reading (CLS row of the block's own attention, head mean).
    A public reimplementation (Contrast-CAT) instead averages each token's attention column over all query tokens
    and pairs a block's attention with its input tokens. attentions: L × (B, heads, T, T); features, grads:
    L × (B, T, D)."""
    if not (len(attentions) == len(features) == len(grads)) or len(attentions) == 0:
        raise ValueError("attentions, features and grads must hold one tensor per block (and at least one)")
    return sum(a.mean(1)[:, 0, 1:] * (g * h).sum(-1)[:, 1:] for a, h, g in zip(attentions, features, grads))


@register("attcat")
def _attcat(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """ATTCAT (Qiang et al. 2022), see :func:`attcat`; signed token map upsampled (ViT only)."""
    rel = relevance(model, x, target, propagate=False)
    return token_pixels(model, x, attcat(rel.attentions, rel.features, rel.feature_grads), upsample)

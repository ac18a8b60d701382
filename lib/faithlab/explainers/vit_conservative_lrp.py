"""Conservative LRP (Ali et al., ICML 2022, "XAI for Transformers: better explanations through conservative
propagation"; SaCo §3.4), registered as ``explain(..., method="conservative_lrp")`` for a ViT: gradient × input
through :func:`conservative_forward`, the ViT's forward with the attention probabilities (AH rule) and the
LayerNorm scale 1/√(var + ε) (LN rule) detached; it returns a signed pixel map ``(B, C, H, W)``. GELU keeps its
ordinary gradient (approximation, see the function)."""

from __future__ import annotations

import torch
from torch import nn

from faithlab.explainers.vit import check_images
from faithlab.explainers.core import check_logits, register

__all__ = ["conservative_forward"]


def _layer_norm_detached(norm: nn.LayerNorm, z: torch.Tensor) -> torch.Tensor:
    """LayerNorm whose scale 1/√(var + ε) is a constant for the backward pass (Ali et al.'s LN rule)."""
    centred = z - z.mean(-1, keepdim=True)
    scale = (z.var(-1, unbiased=False, keepdim=True) + norm.eps).rsqrt().detach()
    return centred * scale * norm.weight + norm.bias


def _attention_detached(attn: nn.Module, z: torch.Tensor) -> torch.Tensor:
    """Self-attention whose softmax probabilities are constants for the backward pass (Ali et al.'s AH rule)."""
    b, t, d = z.shape
    q, k, v = attn.qkv(z).reshape(b, t, 3, attn.heads, d // attn.heads).permute(2, 0, 3, 1, 4)
    probs = torch.softmax((q @ k.transpose(-2, -1)) * attn.scale, dim=-1).detach()
    return attn.proj((probs @ v).transpose(1, 2).reshape(b, t, d))


def conservative_forward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Logits ``(B, n_classes)`` of a ``faithlab.models.ViT`` (eval mode, no dropout) computed with the attention
    probabilities and the LayerNorm scales detached (Ali et al. 2022, §4, AH and LN rules). The values equal
    ``model(x)``; only the gradient changes. With those factors fixed, the network is linear in its input up to
    GELU and the bias terms (biases, CLS token, positional embedding), so gradient × input conserves the target
    logit minus the relevance absorbed by the bias terms; GELU keeps its ordinary gradient here (the paper's
    rules for attention and LayerNorm only), as do a convolutional stem's ReLUs and BatchNorms (``stem_width``),
    whose biases absorb relevance too."""
    missing = [a for a in ("patch_embed", "cls_token", "pos_embed", "blocks", "norm", "head") if not hasattr(model, a)]
    if missing or not isinstance(model.patch_embed, nn.Conv2d):  # a timm ViT has the names, not the layout
        missing = missing or ["a conv patch_embed"]
        raise TypeError(f"model must be a faithlab.models.ViT-like module; missing {missing}. A timm ViT: convert it "
                        "with fl.models.vit_from_timm(model), or load it converted with "
                        "fl.models.load(\"timm:<name>\", weights=<file>)")
    # faithlab's ViT embeds through its stem when it has one; a module with only the parts, as ViT without a stem
    tokens = model.embed(x) if hasattr(model, "embed") else model.patch_embed(x).flatten(2).transpose(1, 2)
    z = torch.cat([model.cls_token.expand(len(x), -1, -1), tokens], dim=1) + model.pos_embed
    for blk in model.blocks:
        z = z + _attention_detached(blk.attn, _layer_norm_detached(blk.norm1, z))
        z = z + blk.mlp(_layer_norm_detached(blk.norm2, z))
    return model.head(_layer_norm_detached(model.norm, z)[:, 0])


@register("conservative_lrp")
def _conservative_lrp(model, x, target, extra, *, batch_size, generator):
    """Conservative LRP (Ali et al., ICML 2022): x ⊙ ∂f_target/∂x through :func:`conservative_forward`; signed
    ``(B, C, H, W)`` (ViT only)."""
    check_images(x)
    with torch.enable_grad():
        inputs = x.detach().requires_grad_(True)
        logits = conservative_forward(model, inputs)
        check_logits(logits, target, len(x))
        logit = logits.gather(1, target[:, None]).sum()
        (grad,) = torch.autograd.grad(logit, inputs)
    return (inputs * grad).detach()

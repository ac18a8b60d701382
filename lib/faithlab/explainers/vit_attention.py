"""ViT explainers (SaCo §3.4): raw attention, rollout, attention Grad-CAM, Transformer-MM and conservative LRP.
They are registered with ``faithlab.explainers`` (names in :data:`METHODS`), so
``fl.explainers.explain(model, x, target, method="rollout")`` works on a ViT.

The model must record its attention like ``faithlab.models.ViT``: ``record_attention(enabled)``, ``attentions()``
(one ``(B, heads, T, T)`` tensor per block), a square patch ``grid`` and the CLS token at index 0. Every method
reads the CLS row over the patch tokens, a ``(B, grid²)`` token map, and upsamples it to the image: ``(B, 1, H,
W)``, bilinear by default (Chefer et al.'s convention followed by SaCo) or ``upsample="nearest"`` (every pixel of a
patch gets its token's value). One forward (and, for gradient methods, one backward) per chunk of inputs.

``conservative_lrp`` (Ali et al., ICML 2022, "XAI for Transformers: better explanations through conservative
propagation") is gradient × input through :func:`conservative_forward`, the ViT's forward with the attention
probabilities (AH rule) and the LayerNorm scale 1/√(var + ε) (LN rule) detached; it returns a signed pixel map
``(B, C, H, W)``. GELU keeps its ordinary gradient (approximation, see the function).

The relevance-propagation methods (LRP, Partial LRP, Transformer Attribution, ATTCAT) live in
``faithlab.explainers.vit_lrp``; their names are :data:`LRP_METHODS`.

The pure functions :func:`raw_attention`, :func:`rollout`, :func:`attention_gradcam` and :func:`transformer_mm`
take the recorded maps and return the ``(B, T − 1)`` token relevance; the registered methods wrap them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from faithlab.explainers.core import check_logits, register

__all__ = ["METHODS", "raw_attention", "rollout", "attention_gradcam", "transformer_mm", "to_pixels",
           "token_pixels", "conservative_forward", "ATTENTION_METHODS", "LRP_METHODS"]

ATTENTION_METHODS = ("raw_attention", "rollout", "attention_gradcam", "transformer_mm")  # (B, 1, H, W), ≥ 0 maps
LRP_METHODS = ("lrp", "partial_lrp", "transformer_attribution", "attcat")  # registered by explainers.vit_lrp
METHODS = (*ATTENTION_METHODS, "conservative_lrp", *LRP_METHODS)  # every registered ViT-only method

_LAYERS = ("all", "last")


def _check_maps(maps: Sequence[torch.Tensor], name: str) -> None:
    if len(maps) == 0 or any(not isinstance(m, torch.Tensor) or m.ndim != 4 or m.shape[-1] != m.shape[-2]
                             for m in maps):
        raise ValueError(f"{name} must be a non-empty sequence of (B, heads, T, T) tensors")


def raw_attention(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Last block's attention of CLS to the patch tokens, mean over heads → ``(B, T − 1)`` (Jain & Wallace)."""
    _check_maps(attentions, "attentions")
    return attentions[-1].mean(1)[:, 0, 1:]


def rollout(attentions: Sequence[torch.Tensor]) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): R = Â_L ··· Â_1 with Â = rownorm(½·mean_h A + ½·I), the residual
    connection as identity; CLS row over the patch tokens → ``(B, T − 1)``."""
    _check_maps(attentions, "attentions")
    eye = torch.eye(attentions[0].shape[-1], dtype=attentions[0].dtype, device=attentions[0].device)
    result = None
    for a in attentions:
        a_hat = 0.5 * a.mean(1) + 0.5 * eye
        a_hat = a_hat / a_hat.sum(-1, keepdim=True)
        result = a_hat if result is None else a_hat @ result
    return result[:, 0, 1:]


def attention_gradcam(attention: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Chefer et al.'s ViT Grad-CAM: last block's CLS-row attention per head, weighted by the mean of its gradient
    over the patch tokens, mean over heads, ReLU → ``(B, T − 1)``."""
    _check_maps([attention, grad], "attention and grad")
    cam, g = attention[:, :, 0, 1:], grad[:, :, 0, 1:]
    return (cam * g.mean(-1, keepdim=True)).mean(1).clamp_min(0)


def transformer_mm(attentions: Sequence[torch.Tensor], grads: Sequence[torch.Tensor], *,
                   layers: str = "all") -> torch.Tensor:
    """Transformer-MM (Chefer et al., ICCV 2021, eqs. 6–7 for self-attention): R = I, then for every block in
    forward order R ← R + mean_h[(∇A ⊙ A)⁺]·R; CLS row over the patch tokens → ``(B, T − 1)``.

    ``layers="last"`` applies the rule to the last block only (SaCo Table 1, "last layer + gradient")."""
    _check_maps(attentions, "attentions")
    _check_maps(grads, "grads")
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


# --------------------------------------------------------------------------------------- registered methods
def check_images(x: torch.Tensor) -> None:
    """Refuse anything but a batch of images (B, C, H, W): the ViT methods read a patch grid."""
    if x.ndim != 4:
        raise ValueError(f"x must be images (B, C, H, W), got shape {tuple(x.shape)}")


def _record(model: nn.Module, x: torch.Tensor, target: torch.Tensor, gradient: bool):
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


def token_pixels(model: nn.Module, x: torch.Tensor, tokens: torch.Tensor, upsample: str) -> torch.Tensor:
    """A ViT's token map ``(B, grid²)`` as a pixel map of x's size ``(B, 1, H, W)`` (:func:`to_pixels`)."""
    return to_pixels(tokens, model.grid, x.shape[-2:], upsample=upsample)


@register("raw_attention")
def _raw_attention(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Raw attention: last block, CLS row, mean over heads (ViT only); ``upsample`` "bilinear" | "nearest"."""
    maps, _ = _record(model, x, target, gradient=False)
    return token_pixels(model, x, raw_attention(maps), upsample)


@register("rollout")
def _rollout(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Attention rollout (Abnar & Zuidema) over all blocks, CLS row (ViT only)."""
    maps, _ = _record(model, x, target, gradient=False)
    return token_pixels(model, x, rollout(maps), upsample)


@register("attention_gradcam")
def _attention_gradcam(model, x, target, extra, *, batch_size, generator, upsample: str = "bilinear"):
    """Chefer et al.'s ViT Grad-CAM on the last block's attention (ViT only)."""
    maps, grads = _record(model, x, target, gradient=True)
    return token_pixels(model, x, attention_gradcam(maps[-1], grads[-1]), upsample)


@register("transformer_mm")
def _transformer_mm(model, x, target, extra, *, batch_size, generator, layers: str = "all",
                    upsample: str = "bilinear"):
    """Transformer-MM (Chefer et al. ICCV'21); ``layers="last"`` keeps the last block only (ViT only)."""
    if layers not in _LAYERS:
        raise ValueError(f"layers must be one of {_LAYERS}, got {layers!r}")
    maps, grads = _record(model, x, target, gradient=True)
    return token_pixels(model, x, transformer_mm(maps, grads, layers=layers), upsample)


# ------------------------------------------------------------------------------------- conservative LRP
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

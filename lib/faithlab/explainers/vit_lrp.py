"""Relevance propagation for ``faithlab.models.ViT`` (SaCo §3.4), registered as ``explain(..., method="lrp")``:
Chefer et al.'s relevance pass, which Partial LRP, Transformer Attribution and ATTCAT read too.

Chefer, Gur & Wolf (CVPR 2021, "Transformer Interpretability Beyond Attention Visualization") propagate the
relevance of the target class back through a ViT layer by layer. :func:`relevance` reruns the model's forward from
its own parameters (no patching; batched), keeps the activations, and applies these rules backwards:

* Linear layers and the patch-embedding convolution (a Linear on the unfolded patches, stride = kernel): LRP-αβ
  with α = 1, β = 0, :func:`linear_alpha_beta`. Output relevance R_j is shared among the inputs in proportion to
  their *positive* contributions x_i·w_ij > 0 (i.e. x⁺W⁺ + x⁻W⁻); the bias is left out, as in Chefer's code.
* LayerNorm, GELU, softmax, dropout: relevance passes through unchanged. The CLS read-out puts the relevance at
  token 0; the residual fork (clone) sums the relevance of its two branches.
* Residual Add and the token + positional-embedding Add z = a + b: shares a·R/z and b·R/z, then rescaled so that
  the two shares keep the total Σ R, split in proportion to |Σ share| (Chefer's Add rule).
* The two attention matmuls (q·kᵀ and A·v): each operand gets operand ⊙ ∂Z/∂operand · R/Z (Chefer's
  ``RelPropSimple``), and the two results are halved, so the attention branch splits its relevance ½ to v and ¼
  to each of q and k. The halved relevance of the attention probabilities is R_A, the map that Partial LRP and
  Transformer Attribution read.

Conserved quantity. Every rule above keeps the per-sample total Σ R exactly, except where a denominator is zero
(the stabilised division gives 0: e.g. a Linear output none of whose contributions x_i·w_ij is positive, or a
token row that is exactly zero) and at the embedding Add, where the shares of the positional embedding and of the
CLS token stop. With α = 1, β = 0 relevance goes to positive contributions only, but it is not clipped: a
negative R_j stays negative and the total is still kept; biases absorb nothing because the rule ignores them.
Hence Σ pixels + Σ R_CLS token + Σ R_positional = 1 (the starting relevance) for any weights, biases and input
signs, and Σ pixels = 1 − Σ R_CLS token on a ViT with a zero positional embedding;
``tests/faithlab/explainers/test_vit_lrp.py`` checks both. (A zero CLS token would not do: with zero LayerNorm shifts its
first-block row is zero and its relevance is lost at the qkv layer.)

Faithfulness to Chefer's code (``ViT_LRP.py`` / ``layers_ours.py``), read for facts only:

* The start follows their ``generate_LRP``: the gradient is of the target logit (``one_hot * output``), the
  relevance pass starts from the one-hot vector itself (relevance 1 at the target, not the logit value).
* Same rules and halving for Linear, matmuls, Add, clone, LayerNorm/GELU/softmax. Differences: (1) the Add
  rescaling sums per sample, not over the whole batch (theirs runs with batch 1; ours must not depend on the
  batch); (2) the stabilised division is R/(z + 10⁻⁹·sign z), 0 where z = 0 (theirs adds 10⁻⁹ without the
  sign); (3) for a 3-channel input their first convolution uses the zᴮ rule with the image's min/max bounds,
  ours keeps αβ for every layer. Their pass runs on their own instrumented ViT; ours reads the weights of
  ``faithlab.models.ViT`` (or of a timm ViT converted by ``faithlab.models.vit_from_timm``).

The methods that read this pass (``fl.explainers.explain(model, x, target, method=...)``; names in
``faithlab.explainers.LRP_METHODS``), all ``(B, 1, H, W)``: ``lrp`` here (relevance at the pixels, summed over
channels; signed), and, each in its own module, ``partial_lrp`` (:mod:`faithlab.explainers.vit_partial_lrp`),
``transformer_attribution`` (:mod:`faithlab.explainers.vit_transformer_attribution`) and ``attcat``
(:mod:`faithlab.explainers.vit_attcat`). Token maps are upsampled with :func:`faithlab.explainers.to_pixels`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from faithlab.explainers.vit import check_images
from faithlab.explainers.core import check_logits, register

__all__ = ["Relevance", "relevance", "linear_alpha_beta"]

_EPS = 1e-9
_VIT_PARTS = ("patch_embed", "cls_token", "pos_embed", "blocks", "norm", "head", "grid", "patch_size")


def _safe_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a / (b + ε·sign b), and 0 where b = 0."""
    zero = b == 0
    return torch.where(zero, torch.zeros_like(a), a / torch.where(zero, torch.ones_like(b), b + _EPS * b.sign()))


def linear_alpha_beta(x: torch.Tensor, weight: torch.Tensor, relevance: torch.Tensor) -> torch.Tensor:
    """LRP-αβ with α = 1, β = 0 through y = x Wᵀ (+ bias, ignored): R_i = Σ_j c⁺_ij / Σ_i' c⁺_i'j · R_j with
    c⁺_ij the positive part of x_i·w_ji. x (..., in), weight (out, in), relevance (..., out) → (..., in)."""
    wp, wn = weight.clamp_min(0), weight.clamp_max(0)
    xp, xn = x.clamp_min(0), x.clamp_max(0)
    s = _safe_div(relevance, xp @ wp.T + xn @ wn.T)
    return xp * (s @ wp) + xn * (s @ wn)


def _add(a: torch.Tensor, b: torch.Tensor, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Chefer's Add rule for z = a + b: shares a·R/z and b·R/z, rescaled per sample to keep Σ R in the ratio
    |Σ share_a| : |Σ share_b|."""
    s = _safe_div(relevance, a + b)
    ra, rb = a * s, b * s
    dims = tuple(range(1, relevance.ndim))
    total = relevance.sum(dims, keepdim=True)
    sa, sb = ra.sum(dims, keepdim=True), rb.sum(dims, keepdim=True)
    norm = sa.abs() + sb.abs()
    fa, fb = _safe_div(sa.abs(), norm) * total, _safe_div(sb.abs(), norm) * total
    return ra * _safe_div(fa, sa), rb * _safe_div(fb, sb)


def _matmul(a: torch.Tensor, b: torch.Tensor, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Relevance of both operands of z = a @ b: a ⊙ (R/z)·bᵀ and b ⊙ aᵀ·(R/z) (each keeps Σ R)."""
    s = _safe_div(relevance, a @ b)
    return a * (s @ b.transpose(-2, -1)), b * (a.transpose(-2, -1) @ s)


@dataclass
class Relevance:
    """Result of :func:`relevance` for a batch of B images (T tokens, CLS first; L blocks).

    pixels: (B, C, H, W) relevance at the input. tokens / positional: (B, T, D) relevance of the token embeddings
    (CLS token, then the patch embeddings, whose relevance goes on to the pixels) and of the positional embedding.
    attention_relevance: L × (B, heads, T, T), R_A per block.
    attentions / attention_grads: L × (B, heads, T, T), the attention probabilities and the gradient of the target
    logit w.r.t. them. features / feature_grads: L × (B, T, D), every block's output and its gradient.
    logits: (B, n_classes)."""

    pixels: torch.Tensor | None
    tokens: torch.Tensor | None
    positional: torch.Tensor | None
    attention_relevance: list[torch.Tensor]
    attentions: list[torch.Tensor]
    attention_grads: list[torch.Tensor]
    features: list[torch.Tensor]
    feature_grads: list[torch.Tensor]
    logits: torch.Tensor


def _check_vit(model: nn.Module) -> None:
    missing = [a for a in _VIT_PARTS if not hasattr(model, a)]
    if missing or not isinstance(getattr(model, "patch_embed", None), nn.Conv2d):
        lacks = missing or ["a conv patch_embed"]
        arch = (getattr(model, "pretrained_cfg", None) or {}).get("architecture", "<name>")
        raise TypeError(f"model must be a faithlab.models.ViT; {type(model).__name__} lacks {lacks}. A timm ViT: "
                        f"convert it with fl.models.vit_from_timm(model), or load it converted with "
                        f"fl.models.load(\"timm:{arch}\", weights=<file>)")
    if getattr(model, "stem_width", 0):  # the rules below start at the linear patch embedding of raw pixels
        raise TypeError(f"model must be a faithlab.models.ViT without a convolutional stem (its stem_width is "
                        f"{model.stem_width}): Chefer et al.'s relevance rules here start at the linear patch "
                        "embedding; for a ViT with a stem use attention_gradcam, rollout or conservative_lrp")


def relevance(model: nn.Module, x: torch.Tensor, target: torch.Tensor, *, propagate: bool = True) -> Relevance:
    """Chefer et al.'s relevance pass (rules in the module docstring) for ``model`` (a ``faithlab.models.ViT`` in
    eval mode), images ``x`` (B, C, H, W) and ``target`` (B,) int64 class indices. One forward, one backward for
    the gradients and, when ``propagate``, one relevance pass (else ``pixels`` is None and
    ``attention_relevance`` empty); everything batched."""
    _check_vit(model)
    check_images(x)
    if target.dtype != torch.int64 or target.shape != (len(x),):
        raise ValueError(f"target must be ({len(x)},) int64 class indices, got {target.dtype} {tuple(target.shape)}")
    p = model.patch_size
    with torch.enable_grad():
        patches = F.unfold(x.detach(), p, stride=p).transpose(1, 2)  # (B, P, C·p·p), row-major patches
        w_embed = model.patch_embed.weight.flatten(1)
        tokens = F.linear(patches, w_embed, model.patch_embed.bias)
        z0 = torch.cat([model.cls_token.expand(len(x), -1, -1), tokens], dim=1)
        z = z0 + model.pos_embed
        saved = []
        for blk in model.blocks:
            b, t, d = z.shape
            u = blk.norm1(z)
            q, k, v = blk.attn.qkv(u).reshape(b, t, 3, blk.attn.heads, d // blk.attn.heads).permute(2, 0, 3, 1, 4)
            a = torch.softmax((q @ k.transpose(-2, -1)) * blk.attn.scale, dim=-1)
            o = (a @ v).transpose(1, 2).reshape(b, t, d)
            att_out = blk.attn.proj(o)
            z1 = z + att_out
            u2 = blk.norm2(z1)
            g = blk.mlp.act(blk.mlp.fc1(u2))
            mlp_out = blk.mlp.fc2(g)
            z2 = z1 + mlp_out
            saved.append(dict(z=z, u=u, q=q, k=k, v=v, a=a, o=o, att_out=att_out, z1=z1, u2=u2, g=g, mlp_out=mlp_out,
                              out=z2))
            z = z2
        cls_out = model.norm(z)[:, 0]
        logits = model.head(cls_out)
        check_logits(logits, target, len(x))
        grads = torch.autograd.grad(logits.gather(1, target[:, None]).sum(),
                                    [s["a"] for s in saved] + [s["out"] for s in saved])
    n = len(saved)
    result = Relevance(None, None, None, [], [s["a"].detach() for s in saved], list(grads[:n]),
                       [s["out"].detach() for s in saved], list(grads[n:]), logits.detach())
    if not propagate:
        return result
    with torch.no_grad():
        r = F.one_hot(target, logits.shape[1]).to(logits.dtype)
        r_cls = linear_alpha_beta(cls_out, model.head.weight, r)
        r = torch.zeros_like(z)
        r[:, 0] = r_cls
        att_rel = []
        for blk, s in zip(reversed(model.blocks), reversed(saved)):
            r_skip, r_mlp = _add(s["z1"], s["mlp_out"], r)
            r_mlp = linear_alpha_beta(s["u2"], blk.mlp.fc1.weight, linear_alpha_beta(s["g"], blk.mlp.fc2.weight, r_mlp))
            r_skip, r_att = _add(s["z"], s["att_out"], r_skip + r_mlp)
            b, t, d = r_att.shape
            r_o = linear_alpha_beta(s["o"], blk.attn.proj.weight, r_att)
            r_o = r_o.reshape(b, t, blk.attn.heads, -1).transpose(1, 2)
            r_a, r_v = (half / 2 for half in _matmul(s["a"], s["v"], r_o))
            r_q, r_kt = (half / 2 for half in _matmul(s["q"], s["k"].transpose(-2, -1), r_a))
            r_qkv = torch.stack([r_q, r_kt.transpose(-2, -1), r_v]).permute(1, 3, 0, 2, 4).reshape(b, t, 3 * d)
            r = r_skip + linear_alpha_beta(s["u"], blk.attn.qkv.weight, r_qkv)
            att_rel.append(r_a)
        result.tokens, result.positional = _add(z0, model.pos_embed.expand_as(z0), r)
        r_patches = linear_alpha_beta(patches, w_embed, result.tokens[:, 1:])
        result.pixels = F.fold(r_patches.transpose(1, 2), x.shape[-2:], p, stride=p)
    result.attention_relevance = att_rel[::-1]
    return result


# ---------------------------------------------------------------------------------------- registered method
@register("lrp")
def _lrp(model, x, target, extra, *, batch_size, generator):
    """Full LRP (Chefer et al. 2021's "full"): pixel relevance summed over channels, signed ``(B, 1, H, W)``
    (ViT only)."""
    return relevance(model, x, target).pixels.sum(1, keepdim=True)

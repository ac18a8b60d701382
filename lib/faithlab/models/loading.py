"""Pretrained architectures (``paper`` profile): torchvision and timm models with weights from the local caches or a
file (``weights_only=True``), and the exact conversion of a timm ViT into :class:`faithlab.models.ViT`."""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from faithlab.models.vit import ViT


def _unwrap_state(obj) -> dict:
    """Accept a bare state dict or a checkpoint holding one under "state_dict" or "model"."""
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            return obj[key]
    return obj


def pretrained(
    name: str,
    *,
    weights: str | None = None,
    source: str = "torchvision",
    weights_path: str | os.PathLike | None = None,
    download: bool = False,
    faithlab_vit: bool = False,
    **kwargs,
) -> nn.Module:
    """A torchvision or timm architecture by ``name`` (``paper`` profile), in eval mode.

    weights: None (random init), "DEFAULT" or a torchvision weights name ("IMAGENET1K_V1") / a timm pretrained
    tag ("augreg_in21k_ft_in1k"). They must already be in the local torch-hub / Hugging Face cache unless
    ``download`` is True; otherwise FileNotFoundError says where they were expected.
    weights_path: a local state-dict file loaded with ``weights_only=True`` (exclusive with ``weights``).
    kwargs go to ``torchvision.models.get_model`` / ``timm.create_model`` (e.g. ``num_classes``).
    faithlab_vit: with ``source="timm"``, convert the loaded ViT with :func:`vit_from_timm` (same logits), so the
    ViT explainers (attention methods, LRP family, ATTCAT) can read its attention, e.g.
    ``pretrained("vit_base_patch16_224", weights="augreg2_in21k_ft_in1k", source="timm", faithlab_vit=True)``.
    """
    if source not in ("torchvision", "timm"):
        raise ValueError(f"source must be 'torchvision' or 'timm', got {source!r}")
    if weights is not None and weights_path is not None:
        raise ValueError("pass either weights or weights_path, not both")
    if faithlab_vit and source != "timm":
        raise ValueError(f"faithlab_vit=True needs source='timm', got source={source!r}")
    model = (_torchvision_model if source == "torchvision" else _timm_model)(name, weights, download, kwargs)
    if weights_path is not None:
        path = Path(weights_path)
        if not path.is_file():
            raise FileNotFoundError(f"weights_path {str(path)!r} does not exist")
        model.load_state_dict(_unwrap_state(torch.load(path, map_location="cpu", weights_only=True)))
    return (vit_from_timm(model) if faithlab_vit else model).eval()


def _torchvision_model(name: str, weights: str | None, download: bool, kwargs: dict) -> nn.Module:
    import torchvision

    if name not in torchvision.models.list_models():
        raise ValueError(f"name {name!r} is not a torchvision model (see torchvision.models.list_models())")
    if weights is None:
        return torchvision.models.get_model(name, weights=None, **kwargs)
    enum = torchvision.models.get_model_weights(name)
    try:
        w = enum[weights]
    except KeyError:
        names = ["DEFAULT", *enum.__members__]
        raise ValueError(f"weights must be one of {names} for {name}, got {weights!r}") from None
    local = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(w.url)
    if not local.is_file() and not download:
        raise FileNotFoundError(
            f"pretrained weights {w} for {name} are not on disk (expected {local}); copy the file there, pass "
            "weights_path=<state dict>, or allow download=True on a machine with internet access"
        )
    return torchvision.models.get_model(name, weights=w, **kwargs)


def _timm_model(name: str, weights: str | None, download: bool, kwargs: dict) -> nn.Module:
    import timm

    full = name if weights in (None, "DEFAULT") else f"{name}.{weights}"
    try:
        model = timm.create_model(full, pretrained=False, **kwargs)
    except RuntimeError as err:  # timm's "Unknown model"
        raise ValueError(f"name {full!r} is not a timm model: {err}") from None
    if weights is None:
        return model
    from huggingface_hub import try_to_load_from_cache

    hub_id = model.pretrained_cfg.get("hf_hub_id")
    cached = [
        p for f in ("model.safetensors", "pytorch_model.bin")
        if hub_id and isinstance(p := try_to_load_from_cache(hub_id, f), str)
    ]
    if cached:
        overlay = dict(file=cached[0], custom_load=False)
        return timm.create_model(full, pretrained=True, pretrained_cfg_overlay=overlay, **kwargs)
    if not download:
        raise FileNotFoundError(
            f"pretrained weights for timm model {full} (hub id {hub_id}) are not in the Hugging Face cache; pass "
            "weights_path=<state dict>, or allow download=True on a machine with internet access"
        )
    return timm.create_model(full, pretrained=True, **kwargs)


def _timm_vit_problems(m: nn.Module) -> list[str]:
    """What keeps a timm VisionTransformer from being an exact ``ViT`` (empty when it converts)."""
    from timm.layers import Mlp
    from timm.models.vision_transformer import Block as TimmBlock

    def plain(*modules: nn.Module | None) -> bool:
        return all(mod is None or isinstance(mod, nn.Identity) for mod in modules)

    eps = m.norm.eps if isinstance(m.norm, nn.LayerNorm) else None
    checks = {
        "a class token and no register or distillation tokens": m.has_class_token and m.num_prefix_tokens == 1,
        "global_pool='token'": m.global_pool == "token",
        "a learned positional embedding that includes the class token": m.pos_embed is not None
        and not m.no_embed_class and not m.dynamic_img_size,
        "no pre_norm, fc_norm or attention pooling": plain(m.norm_pre, m.fc_norm, m.attn_pool),
        "a square, non-overlapping conv patch embedding without norm": isinstance(m.patch_embed.proj, nn.Conv2d)
        and m.patch_embed.proj.kernel_size == m.patch_embed.proj.stride and m.patch_embed.proj.padding == (0, 0)
        and plain(m.patch_embed.norm) and m.patch_embed.img_size[0] == m.patch_embed.img_size[1]
        and m.patch_embed.patch_size[0] == m.patch_embed.patch_size[1],
        "a linear head": isinstance(m.head, nn.Linear),
        "LayerNorms with one epsilon": eps is not None and all(
            isinstance(n, nn.LayerNorm) and n.eps == eps for b in m.blocks for n in (b.norm1, b.norm2)),
        "plain blocks (no layer scale, qk_norm, scale_norm, gated attention, or other MLP/activation)": all(
            type(b) is TimmBlock and plain(b.ls1, b.ls2, b.attn.q_norm, b.attn.k_norm, getattr(b.attn, "norm", None))
            and getattr(b.attn, "gate", None) is None and type(b.mlp) is Mlp and plain(b.mlp.norm)
            and type(b.mlp.act) is nn.GELU and b.mlp.act.approximate == "none"
            and b.attn.head_dim * b.attn.num_heads == m.embed_dim for b in m.blocks),
    }
    return [need for need, ok in checks.items() if not ok]


def vit_from_timm(timm_model: nn.Module) -> ViT:
    """A :class:`ViT` with the weights of a timm ``VisionTransformer`` (e.g. ``vit_base_patch16_224``,
    ``vit_large_patch16_224``, ``deit_base_patch16_224``) giving the same logits, in eval mode, on the timm model's
    device and dtype. Supported: class token, ``global_pool="token"``, learned positional embedding, pre-norm
    blocks with exact GELU; missing qkv/proj biases become zeros. Distilled or register tokens, average pooling,
    qk_norm, layer scale, fc_norm, pre_norm, ... raise ValueError."""
    from timm.models.vision_transformer import VisionTransformer

    if not isinstance(timm_model, VisionTransformer):
        raise TypeError(f"timm_model must be a timm VisionTransformer, got {type(timm_model).__name__}")
    problems = _timm_vit_problems(timm_model)
    if problems:
        raise ValueError(f"timm_model cannot be converted exactly; it needs {'; '.join(problems)}")
    m = timm_model
    proj = m.patch_embed.proj
    dim, blocks = m.embed_dim, list(m.blocks)
    vit = ViT(image_size=m.patch_embed.img_size[0], patch_size=proj.kernel_size[0], in_channels=proj.in_channels,
              n_classes=m.head.out_features, dim=dim, depth=len(blocks), heads=blocks[0].attn.num_heads,
              mlp_ratio=blocks[0].mlp.fc1.out_features / dim, norm_eps=m.norm.eps)
    state = {k.replace("patch_embed.proj.", "patch_embed."): v for k, v in m.state_dict().items()}
    ours = vit.state_dict()
    for key, value in ours.items():  # timm layers built with bias=False: zero biases are the same function
        if key not in state and key.endswith(".bias"):
            state[key] = torch.zeros_like(value)
    vit.load_state_dict(state)
    return vit.to(device=m.cls_token.device, dtype=m.cls_token.dtype).eval()

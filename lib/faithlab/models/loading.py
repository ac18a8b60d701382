"""Pretrained architectures (``paper`` profile): torchvision and timm models with weights from the local caches or a
file, and the exact conversion of a timm ViT into :class:`faithlab.models.ViT`.

Every weights file is read by :func:`load_tensors` (safetensors, or ``torch.load(weights_only=True)``), never by
torchvision's or timm's own loaders: torch.hub unpickles without the weights-only restriction and does not hash-check a
file that is already in its cache, so a file placed there could run code. Cache files are checked against the sha256
that their publisher put in the file name (torchvision) or the Hugging Face cache's blob name before they are read."""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from faithlab import _validate
from faithlab._optional import require
from faithlab.models.vit import ViT

CAM_LAYERS = {"resnet18": "layer4", "resnet50": "layer4", "vgg16": "features.29", "alexnet": "features.11",
              "googlenet": "inception5b", "mobilenet_v3_large": "features.16", "densenet121": "features.norm5",
              "densenet161": "features.norm5", "legacy_xception": "act4"}
"""The last convolutional block (a dotted module name) of each pretrained architecture the papers use (torchvision
ResNet-18, VGG-16, AlexNet, GoogLeNet, MobileNetV3-Large, DenseNet-121/161; timm ResNet-50, Xception), read by
Grad-CAM, LayerCAM and Excitation Backprop (spec §5.7: e.g. ResNet ``layer4``). Our own models name theirs
``cam_layer``. The one table: Few-class Fidelity's and TRACE's protocols re-export it as ``CAM_LAYERS``."""

# torchvision publishes ``<stem>-<first 8+ hex digits of the file's sha256>.pth``: torch.hub's HASH_REGEX, but with
# at least 8 digits so that a name such as ``IN22K-vit.g.16-600e.pth.tar`` is not taken for a hash.
_NAME_HASH = re.compile(r"-([0-9a-f]{8,64})\.")
# huggingface_hub stores a large (LFS) file as blobs/<sha256 of its content>, linked from snapshots/<revision>/.
_HF_BLOB = re.compile(r"[0-9a-f]{64}")


def _unwrap_state(obj) -> dict:
    """Accept a bare state dict or a checkpoint holding one under "state_dict" or "model"."""
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            return obj[key]
    return obj


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_sha256(path: Path, expected: str, what: str) -> None:
    """Raise ValueError naming ``path`` unless its sha256 starts with ``expected`` (torch.hub's check_hash rule)."""
    actual = _sha256(path)
    if not actual.startswith(expected):
        raise ValueError(f"{what}: the file {path} is not the published one (its sha256 starts {actual[:len(expected)]}"
                         f", the published sha256 starts {expected}); delete it and put the original file there")


def load_tensors(path: Path, what: str) -> dict:
    """The state dict in ``path``: safetensors, or a torch checkpoint holding only tensors and plain containers.
    A file that cannot be opened raises its OSError; one that opens but is not such a file (a pickle of other
    objects, a damaged or truncated file: torch fails on it with UnpicklingError, RuntimeError, EOFError, even an
    OSError from seeking in a cut zip archive) raises one ValueError naming the file and what is wrong with it
    (:func:`faithlab._validate.load_refusal`), with the original error attached as its cause."""
    if path.name.endswith(".safetensors"):
        from safetensors.torch import load_file

        with path.open("rb"):  # cannot be opened: that OSError as it is
            pass
        try:
            return load_file(str(path), device="cpu")
        except Exception as err:  # noqa: BLE001 -- SafetensorError and the like: a damaged or foreign file
            raise ValueError(f"{what}: {path} is not a readable safetensors file ({err}); save the weights again "
                             "with safetensors.torch.save_file or torch.save(model.state_dict(), path)") from err
    with path.open("rb") as f:  # cannot be opened: that OSError as it is
        try:
            with warnings.catch_warnings():  # a plain pickle's "Detected pickle protocol ...": the refusal says it
                warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
                state = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001
            raise ValueError(f"{what}: {path} is not a plain tensor checkpoint and is not loaded "
                             f"({_validate.load_refusal(err)}); save the weights as a state dict of tensors "
                             "(torch.save(model.state_dict(), path)) or as safetensors") from err
    return _unwrap_state(state)


def _hub_file(url: str, download: bool, what: str, hashed: bool) -> Path:
    """The torch-hub cache file for ``url`` (``torch.hub.get_dir()/checkpoints/<file name>``), fetched first when
    ``download`` and absent, and, when ``hashed``, checked against the sha256 prefix in its name."""
    name = os.path.basename(urlparse(url).path)
    local = Path(torch.hub.get_dir()) / "checkpoints" / name
    match = _NAME_HASH.search(name) if hashed else None
    if not local.is_file():
        if not download:
            check = " (it is checked against the sha256 in its name)" if match else ""
            raise FileNotFoundError(
                f"{what} are not on disk: put the published file {name} ({url}) at {local}{check}, pass "
                "weights_path=<state dict file>, or pass download=True on a machine with internet access")
        local.parent.mkdir(parents=True, exist_ok=True)
        # download_url_to_file writes to a temporary file and moves it into place only if its hash matches
        torch.hub.download_url_to_file(url, str(local), hash_prefix=match.group(1) if match else None)
    if match:
        _check_sha256(local, match.group(1), what)
    return local


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
    ``download`` is True; otherwise FileNotFoundError says where the file is expected. torchvision files
    (``torch.hub.get_dir()/checkpoints/<name>-<sha256 prefix>.pth``) must match the sha256 prefix in their name and
    Hugging Face cache blobs their sha256 name, else ValueError names the file. timm weights published only by URL
    (a few legacy models) are read from the torch-hub checkpoints folder without a hash check (timm publishes none).
    weights_path: a local state-dict file (exclusive with ``weights``).
    Weights files are read as safetensors or with ``torch.load(weights_only=True)``: a file that needs anything but
    tensors and plain containers is refused with ValueError.
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
        model.load_state_dict(load_tensors(path, "weights_path"))
    return (vit_from_timm(model) if faithlab_vit else model).eval()


class _LoadedWeights:
    """Stands in for a torchvision weights enum member, with the state dict already loaded by :func:`load_tensors`.

    torchvision's model builders fetch weights with ``weights.get_state_dict(...)``, i.e. torch.hub without the
    weights-only restriction; handing them this stand-in instead keeps everything else they do with the weights
    (arguments from ``meta``, renamed keys, dropped auxiliary heads, quantisation) exactly as published.
    """

    def __init__(self, member, state: dict) -> None:
        self._member, self._state = member, state

    @property
    def __class__(self):  # the builders' ``<Enum>.verify`` accepts only instances of their own enum
        return type(self._member)

    def __getattr__(self, attr: str):  # meta, url, transforms, name, value
        if attr in ("_member", "_state"):  # not set yet (copy.copy builds one without __init__): no recursion
            raise AttributeError(attr)
        return getattr(self._member, attr)

    def __eq__(self, other) -> bool:  # some builders compare the weights with a specific member
        return other is self._member or (type(other) is _LoadedWeights and other._member is self._member)

    def __hash__(self) -> int:
        return hash(self._member)

    def __repr__(self) -> str:
        return repr(self._member)

    def get_state_dict(self, *args, **kwargs) -> dict:
        return self._state


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
    what = f"pretrained weights {w} for {name} (weights={weights!r})"
    state = load_tensors(_hub_file(w.url, download, what, hashed=True), what)
    return torchvision.models.get_model(name, weights=_LoadedWeights(w, state), **kwargs)


def _hf_file(hub_id: str, download: bool, what: str) -> Path | None:
    """The cached (or, when ``download``, downloaded) weights file of a Hugging Face repo, its blob hash-checked."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.utils import EntryNotFoundError

    repo, _, revision = hub_id.partition("@")  # timm's "<repo>@<revision>" ids
    names = ("model.safetensors", "pytorch_model.bin")  # timm's files, the safe format first
    found = next((p for f in names if isinstance(p := try_to_load_from_cache(repo, f, revision=revision or None),
                                                  str)), None)
    if found is None and download:
        for f in names:
            try:
                found = hf_hub_download(repo, f, revision=revision or None)
                break
            except EntryNotFoundError:
                continue
    if found is None:
        return None
    blob = Path(found).resolve()
    if blob.parent.name == "blobs" and _HF_BLOB.fullmatch(blob.name):
        _check_sha256(blob, blob.name, what)
    return Path(found)


def _timm_model(name: str, weights: str | None, download: bool, kwargs: dict) -> nn.Module:
    timm = require("timm", f"timm model {name!r}")

    full = name if weights in (None, "DEFAULT") else f"{name}.{weights}"
    try:
        model = timm.create_model(full, pretrained=False, **kwargs)
    except RuntimeError as err:  # timm's "Unknown model"
        raise ValueError(f"name {full!r} is not a timm model: {err}") from None
    if weights is None:
        return model
    cfg = model.pretrained_cfg
    hub_id, url = cfg.get("hf_hub_id"), cfg.get("url")
    what = f"pretrained weights for timm model {full} (weights={weights!r})"
    if hub_id:
        path = _hf_file(hub_id, download, what)
        if path is None:
            raise FileNotFoundError(f"{what} are not in the Hugging Face cache (hub id {hub_id}); pass "
                                    "weights_path=<state dict file>, or pass download=True on a machine with internet "
                                    "access")
    elif url:  # a few legacy weights, published by URL only; timm publishes no hash for them
        path = _hub_file(url, download, what, hashed=False)
    else:
        raise ValueError(f"weights={weights!r}: timm publishes no weights file for {full}; pass weights_path instead")
    # timm gets the tensors, not the file: its own loaders differ across versions in how they call torch.load.
    # source=None: a cfg whose source is "hf-hub" would make timm ignore state_dict and fetch from the hub.
    overlay = dict(state_dict=load_tensors(path, what), source=None)
    model = timm.create_model(full, pretrained=True, pretrained_cfg_overlay=overlay, **kwargs)
    if isinstance(getattr(model, "pretrained_cfg", None), dict):  # the weights are in the model: no second copy
        model.pretrained_cfg["state_dict"] = None
    return model


def timm_vit_problems(m: nn.Module) -> list[str]:
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
    problems = timm_vit_problems(timm_model)
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

"""Model zoo of the study: small CNNs, ResNet-9/18, a ViT with reachable attention, series and text models.

Every model returns LOGITS ``(B, n_classes)``. Build one by name with :func:`build`; list names with
:func:`available`. Image models take normalised ``(B, C, H, W)``, series models ``(B, T, C)``, text models
``(B, L)`` int64 token ids with pad id 0. Convolutional models expose ``model.cam_layer``, the module whose output
Grad-CAM should use. :func:`pretrained` loads torchvision/timm architectures (and their weights, if on disk).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from . import _validate

_REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def _register(name: str):
    def deco(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        _REGISTRY[name] = factory
        return factory

    return deco


def available() -> list[str]:
    """Names accepted by :func:`build`, sorted."""
    return sorted(_REGISTRY)


def build(name: str, **config) -> nn.Module:
    """Build the model registered as ``name`` with keyword ``config`` (weights initialised from the global RNG:
    seed it inside ``torch.random.fork_rng`` as :func:`faithlab.train.fit` does)."""
    if name not in _REGISTRY:
        raise ValueError(f"name must be one of {available()}, got {name!r}")
    return _REGISTRY[name](**config)


def _scaled(base: int, width: float) -> int:
    return max(1, int(round(base * width)))


def _conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


# ---------------------------------------------------------------------------------------------------------- images


class SmallCNN(nn.Module):
    """Three 3×3 conv blocks (ReLU; max-pool after the first two), global average pool, linear head."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2 * w, n_classes)

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)))


class ResNet9(nn.Module):
    """F-Fidelity's ResNet-9 (App. C): prep conv64 → conv128+pool → res(128) → conv256+pool → conv512+pool →
    res(512) → global max pool → dropout → linear; every conv is 3×3+BN+ReLU; widths × ``width``.
    ``cam_layer`` is ``res2[-1]`` as in the F-Fidelity code."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: float = 1.0, dropout: float = 0.2) -> None:
        super().__init__()
        c1, c2, c3, c4 = (_scaled(b, width) for b in (64, 128, 256, 512))
        self.prep = _conv_bn(in_channels, c1)
        self.layer1 = nn.Sequential(_conv_bn(c1, c2), nn.MaxPool2d(2))
        self.res1 = nn.Sequential(_conv_bn(c2, c2), _conv_bn(c2, c2))
        self.layer2 = nn.Sequential(_conv_bn(c2, c3), nn.MaxPool2d(2))
        self.layer3 = nn.Sequential(_conv_bn(c3, c4), nn.MaxPool2d(2))
        self.res2 = nn.Sequential(_conv_bn(c4, c4), _conv_bn(c4, c4))
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(c4, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.res2[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer1(self.prep(x))
        x = x + self.res1(x)
        x = self.layer3(self.layer2(x))
        x = x + self.res2(x)
        return self.head(x)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3×3 conv+BN, identity or 1×1 projection shortcut, ReLU after the sum."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(out + self.shortcut(x))


class ResNet18CIFAR(nn.Module):
    """CIFAR-style ResNet-18 (ReCo/MeGe §4.7): 3×3 stem, no max-pool, 4 stages of 2 blocks with widths
    ``base_width``·(1, 2, 4, 8), global average pool, dropout, linear. ``cam_layer`` = ``layer4[-1]``."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, base_width: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        w = _validate.positive_int(base_width, "base_width")
        self.stem = nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        widths, stages, c_in = (w, 2 * w, 4 * w, 8 * w), [], w
        for i, c_out in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)))
            c_in = c_out
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout),
                                  nn.Linear(c_in, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.layer4[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.head(x)


# ------------------------------------------------------------------------------------------------ transformers


class Attention(nn.Module):
    """Multi-head self-attention (qkv Linear → softmax(qkᵀ/√d) → proj Linear) whose probabilities can be recorded.

    When ``record`` is True, each forward stores the attention probabilities ``(B, heads, T, T)`` as ``self.attn``
    and, after a backward pass through them, their gradient as ``self.attn_grad``.
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_drop = nn.Dropout(dropout)
        self.proj = nn.Linear(dim, dim)
        self.record = False
        self.attn: torch.Tensor | None = None
        self.attn_grad: torch.Tensor | None = None

    def __getstate__(self) -> dict:
        # recorded maps belong to one forward's graph; non-leaf tensors cannot be deep-copied or pickled
        return {**super().__getstate__(), "attn": None, "attn_grad": None}

    def _store_grad(self, grad: torch.Tensor) -> None:
        self.attn_grad = grad

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, D); key_mask (B, T) bool, False = key ignored (padding)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        attn = self.softmax(scores)
        if self.record:
            self.attn, self.attn_grad = attn, None
            if attn.requires_grad:
                attn.register_hook(self._store_grad)
        out = (self.attn_drop(attn) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out)


class MLP(nn.Module):
    """Linear → GELU → Linear."""

    def __init__(self, dim: int, hidden: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm1(x)), then x + mlp(norm2(x)); LayerNorms with epsilon ``eps``."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float, dropout: float = 0.0, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim, eps=eps), Attention(dim, heads, dropout)
        self.norm2, self.mlp = nn.LayerNorm(dim, eps=eps), MLP(dim, _scaled(dim, mlp_ratio), dropout)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), key_mask)
        return x + self.mlp(self.norm2(x))


class _AttentionRecorder(nn.Module):
    """Mixin for models with ``self.blocks``: switch attention recording and read the recorded maps."""

    blocks: nn.ModuleList

    def record_attention(self, enabled: bool = True) -> nn.Module:
        """Turn recording of every block's attention (and its gradient) on or off; returns the model."""
        for blk in self.blocks:
            blk.attn.record = bool(enabled)
            blk.attn.attn = blk.attn.attn_grad = None
        return self

    def attentions(self) -> list[torch.Tensor]:
        """Recorded attention probabilities of the last forward, one (B, heads, T, T) tensor per block."""
        maps = [blk.attn.attn for blk in self.blocks]
        if any(m is None for m in maps):
            raise RuntimeError("no attention recorded: call model.record_attention(True) and run a forward pass")
        return maps

    def attention_grads(self) -> list[torch.Tensor]:
        """Gradients of the recorded attention probabilities after a backward pass, one per block."""
        grads = [blk.attn.attn_grad for blk in self.blocks]
        if any(g is None for g in grads):
            raise RuntimeError("no attention gradient recorded: record attention, run forward, then backward")
        return grads


class ViT(_AttentionRecorder):
    """Small Vision Transformer (F-Fidelity App. C: patch 4, dim 128, depth 6, heads 8, MLP 256): conv patch
    embedding, CLS token, learned positional embedding, pre-norm blocks, final LayerNorm, linear head on CLS.
    Token 0 is CLS; patch tokens follow in row-major order (``n_patches`` of them, ``patch_size`` pixels wide).
    ``norm_eps`` is every LayerNorm's epsilon (timm's ViTs use 1e-6, see :func:`vit_from_timm`)."""

    def __init__(
        self,
        image_size: int = 32,
        patch_size: int = 4,
        in_channels: int = 3,
        n_classes: int = 10,
        dim: int = 128,
        depth: int = 6,
        heads: int = 8,
        mlp_ratio: float = 2.0,
        dropout: float = 0.0,
        norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"image_size ({image_size}) must be divisible by patch_size ({patch_size})")
        self.image_size, self.patch_size = image_size, patch_size
        self.grid = image_size // patch_size
        self.n_patches = self.grid**2
        self.patch_embed = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, self.n_patches + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio, dropout, norm_eps) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=norm_eps)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        z = torch.cat([self.cls_token.expand(len(x), -1, -1), tokens], dim=1) + self.pos_embed
        for blk in self.blocks:
            z = blk(z)
        return self.head(self.norm(z)[:, 0])


# ---------------------------------------------------------------------------------------------------- series


def _lstm(lstm: nn.LSTM, x: torch.Tensor, module: nn.Module):
    """Run ``lstm``; cuDNN cannot backpropagate through an RNN in eval mode, so disable it for eval-mode grads."""
    use_cudnn = module.training or not torch.is_grad_enabled()
    with torch.backends.cudnn.flags(enabled=use_cudnn and torch.backends.cudnn.enabled):
        return lstm(x)


class BiLSTM(nn.Module):
    """Stacked bidirectional LSTM for (B, T, C) series (TimeX's 3-layer bi-LSTM, F-Fidelity App. C); classifier
    on the final forward/backward hidden states (``pool="last"``) or the mean of outputs over time (``"mean"``)."""

    def __init__(
        self, in_channels: int, n_classes: int, hidden: int = 128, layers: int = 3, dropout: float = 0.0,
        pool: str = "last",
    ) -> None:
        super().__init__()
        if pool not in ("last", "mean"):
            raise ValueError(f"pool must be 'last' or 'mean', got {pool!r}")
        self.pool = pool
        self.lstm = nn.LSTM(in_channels, hidden, layers, batch_first=True, bidirectional=True,
                            dropout=dropout if layers > 1 else 0.0)
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, _) = _lstm(self.lstm, x, self)
        feat = out.mean(dim=1) if self.pool == "mean" else torch.cat([h[-2], h[-1]], dim=-1)
        return self.fc(feat)


class CNN1D(nn.Module):
    """1-D CNN for (B, T, C) series: ``layers`` conv(k)+BN+ReLU blocks, global average pool over time, linear.
    ``cam_layer`` is the last conv block (output (B, width, T))."""

    def __init__(self, in_channels: int, n_classes: int, width: int = 64, layers: int = 3,
                 kernel_size: int = 5) -> None:
        super().__init__()
        blocks, c_in = [], in_channels
        for _ in range(_validate.positive_int(layers, "layers")):
            blocks.append(nn.Sequential(nn.Conv1d(c_in, width, kernel_size, padding=kernel_size // 2, bias=False),
                                        nn.BatchNorm1d(width), nn.ReLU()))
            c_in = width
        self.features = nn.Sequential(*blocks)
        self.fc = nn.Linear(width, n_classes)

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x.transpose(1, 2)).mean(dim=-1))


# ------------------------------------------------------------------------------------------------------ text


def _masked_mean(h: torch.Tensor, pad_mask: torch.Tensor | None) -> torch.Tensor:
    """Mean of (B, L, D) over positions where ``pad_mask`` (B, L) is True (all positions when None)."""
    if pad_mask is None:
        return h.mean(dim=1)
    m = pad_mask.to(h.dtype).unsqueeze(-1)
    return (h * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)


class _TextModel(nn.Module):
    """Shared text interface: ``embed(tokens)`` → (B, L, D); ``forward_embeddings(emb, pad_mask)`` → logits;
    ``forward(tokens) = forward_embeddings(embed(tokens), tokens != 0)`` (pad id 0 is masked out of the pool)."""

    embedding: nn.Embedding

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens)

    def forward_embeddings(self, emb: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.forward_embeddings(self.embed(tokens), tokens != 0)


class LSTMText(_TextModel):
    """Embedding → (unidirectional) LSTM → masked mean pool → linear (F-Fidelity App. C: 1 layer, 128 hidden).
    Unidirectional, so trailing pads never change the states of real tokens."""

    def __init__(self, vocab_size: int, n_classes: int, embed_dim: int = 128, hidden: int = 128, layers: int = 1,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.fc = nn.Linear(hidden, n_classes)

    def forward_embeddings(self, emb: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        out, _ = _lstm(self.lstm, emb, self)
        return self.fc(_masked_mean(out, pad_mask))


class TransformerText(_TextModel, _AttentionRecorder):
    """Embedding (+ learned positions, added in ``forward_embeddings``) → pre-norm transformer blocks with pad
    keys masked → LayerNorm → masked mean pool → linear (F-Fidelity App. C: dim 512, 2 layers, 4 heads on SST2)."""

    def __init__(self, vocab_size: int, n_classes: int, dim: int = 128, depth: int = 2, heads: int = 4,
                 mlp_ratio: float = 2.0, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.pos_embed = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio, dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, n_classes)

    def forward_embeddings(self, emb: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        if emb.shape[1] > self.pos_embed.shape[1]:
            raise ValueError(f"emb has {emb.shape[1]} positions but max_len is {self.pos_embed.shape[1]}")
        z = emb + self.pos_embed[:, : emb.shape[1]]
        for blk in self.blocks:
            z = blk(z, pad_mask)
        return self.fc(_masked_mean(self.norm(z), pad_mask))


class FromEmbeddings(nn.Module):
    """Wrap a text model so that ``forward(emb, pad_mask=None)`` takes embeddings (B, L, D) (IG on embeddings)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        if not hasattr(model, "forward_embeddings"):
            raise TypeError(f"model must define forward_embeddings, got {type(model).__name__}")
        self.model = model

    def forward(self, emb: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.model.forward_embeddings(emb, pad_mask)


# ----------------------------------------------------------------------------------------------- 1-Lipschitz


class LipschitzCNN(nn.Sequential):
    """1-Lipschitz CNN of ReCo/MeGe §4.7 with deel-torchlip: SpectralConv48–act–ScaledAvgPool–Drop–SpectralConv96–
    act–ScaledAvgPool–Drop–SpectralConv96–ScaledAvgPool–Flatten–SpectralLinear (widths × ``width``);
    ``activation`` "prelu" (LPReLU) or "groupsort" (GroupSort2). 1-Lipschitz in ℓ2 in eval mode.
    ``cam_layer`` is the last spectral conv."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, image_size: int = 32, width: float = 1.0,
                 activation: str = "prelu", dropout: float = 0.2) -> None:
        from deel import torchlip

        if activation not in ("prelu", "groupsort"):
            raise ValueError(f"activation must be 'prelu' or 'groupsort', got {activation!r}")
        if image_size % 8:
            raise ValueError(f"image_size must be divisible by 8, got {image_size}")
        c1, c2 = _scaled(48, width), _scaled(96, width)
        if activation == "groupsort" and (c1 % 2 or c2 % 2):
            raise ValueError(f"width must give even channel counts for groupsort, got {c1} and {c2}")

        def act(c: int) -> nn.Module:
            return torchlip.LPReLU(c) if activation == "prelu" else torchlip.GroupSort2()

        side = image_size // 8
        conv = dict(kernel_size=3, padding=1)
        super().__init__(
            torchlip.SpectralConv2d(in_channels, c1, **conv), act(c1), torchlip.ScaledAvgPool2d(2), nn.Dropout(dropout),
            torchlip.SpectralConv2d(c1, c2, **conv), act(c2), torchlip.ScaledAvgPool2d(2), nn.Dropout(dropout),
            torchlip.SpectralConv2d(c2, c2, **conv), torchlip.ScaledAvgPool2d(2), nn.Flatten(),
            torchlip.SpectralLinear(c2 * side * side, n_classes),
        )

    @property
    def cam_layer(self) -> nn.Module:
        return self[8]


_register("small_cnn")(SmallCNN)
_register("resnet9")(ResNet9)
_register("resnet18_cifar")(ResNet18CIFAR)
_register("vit")(ViT)
_register("bilstm")(BiLSTM)
_register("cnn1d")(CNN1D)
_register("lstm_text")(LSTMText)
_register("transformer_text")(TransformerText)
_register("lipschitz_cnn")(LipschitzCNN)


# ---------------------------------------------------------------------------------------------- pretrained


def _unwrap_state(obj) -> dict:
    """Accept a bare state dict or a checkpoint holding one under "state_dict" or "model"."""
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            return obj[key]
    return obj


def pretrained(
    name: str,
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

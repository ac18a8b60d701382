"""Sequence classifiers: series models (bi-LSTM, 1-D CNN) on ``(B, T, C)`` and text models (LSTM, Transformer) on
``(B, L)`` token ids with pad id 0, which also run from embeddings (:class:`FromEmbeddings`) for IG."""

from __future__ import annotations

import torch
from torch import nn

from faithlab import _validate
from faithlab.perturb.references import PAD_TOKEN, REMOVED_TOKEN
from faithlab.models.registry import register
from faithlab.models.vit import Block, AttentionRecorder


def _lstm(lstm: nn.LSTM, x: torch.Tensor, module: nn.Module):
    """Run ``lstm``; cuDNN cannot backpropagate through an RNN in eval mode, so disable it for eval-mode grads."""
    use_cudnn = module.training or not torch.is_grad_enabled()
    with torch.backends.cudnn.flags(enabled=use_cudnn and torch.backends.cudnn.enabled):
        return lstm(x)


@register("bilstm")
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


@register("cnn1d")
class CNN1D(nn.Module):
    """1-D CNN for (B, T, C) series: ``layers`` conv(k)+BN+ReLU blocks, global average pool over time, linear.
    ``cam_layer`` is the last conv block (output (B, width, T)).

    dilation_growth: block i uses dilation ``dilation_growth**i`` (1: plain convolutions). The average pool keeps
    no order, so a plain CNN cannot tell which of two distant patterns came first; with growth 2 the receptive
    field spans 1 + (k−1)(2^layers − 1) steps and a block can see both patterns in order.
    positional: append the position t/(T−1) ∈ [0, 1] as an extra input channel (made inside the model, so removing
    a time step never removes its position). The pooled features then carry where each pattern sits, and "which
    pattern came first" becomes a linear read-out of the pooled features."""

    def __init__(self, in_channels: int, n_classes: int, width: int = 64, layers: int = 3,
                 kernel_size: int = 5, dilation_growth: int = 1, positional: bool = False) -> None:
        super().__init__()
        self.positional = bool(positional)
        blocks, c_in = [], in_channels + self.positional
        _validate.positive_int(dilation_growth, "dilation_growth")
        for i in range(_validate.positive_int(layers, "layers")):
            d = dilation_growth**i
            blocks.append(nn.Sequential(nn.Conv1d(c_in, width, kernel_size, padding=d * (kernel_size // 2),
                                                  dilation=d, bias=False),
                                        nn.BatchNorm1d(width), nn.ReLU()))
            c_in = width
        self.features = nn.Sequential(*blocks)
        self.fc = nn.Linear(width, n_classes)

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.transpose(1, 2)
        if self.positional:
            t = torch.linspace(0, 1, z.shape[-1], dtype=z.dtype, device=z.device)
            z = torch.cat([z, t.expand(z.shape[0], 1, -1)], dim=1)
        return self.fc(self.features(z).mean(dim=-1))


def _masked_mean(h: torch.Tensor, pad_mask: torch.Tensor | None) -> torch.Tensor:
    """Mean of (B, L, D) over positions where ``pad_mask`` (B, L) is True (all positions when None)."""
    if pad_mask is None:
        return h.mean(dim=1)
    m = pad_mask.to(h.dtype).unsqueeze(-1)
    return (h * m).sum(dim=1) / m.sum(dim=1).clamp_min(1.0)




class _TextModel(nn.Module):
    """Shared text interface: ``embed(tokens)`` → (B, L, D) with a zero vector for :data:`REMOVED_TOKEN`;
    ``forward_embeddings(emb, pad_mask)`` → logits; ``forward(tokens) = forward_embeddings(embed(tokens),
    tokens != PAD_TOKEN)`` (padding is masked out of the pool, a removed token is not)."""

    embedding: nn.Embedding

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embedding(tokens).masked_fill((tokens == REMOVED_TOKEN).unsqueeze(-1), 0.0)

    def forward_embeddings(self, emb: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.forward_embeddings(self.embed(tokens), tokens != PAD_TOKEN)


@register("lstm_text")
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


@register("transformer_text")
class TransformerText(_TextModel, AttentionRecorder):
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

"""What the tests of ``faithlab.explainers.explain`` (tests/faithlab/explainers/test_closed_forms.py,
test_invariance_and_registry.py, test_bad_input.py) share: a readable allclose (:func:`assert_near`), a seeded linear
model whose exact map is its weights (:func:`linear_net`, :func:`weight_map`), seeded images (:func:`random_images`),
a small nonlinear CNN with a CAM layer (:class:`SmallCNN`) and a bag-of-embeddings text model
(:class:`BagOfEmbeddings`)."""

from __future__ import annotations

import torch
from torch import nn


def assert_near(actual: torch.Tensor, expected: torch.Tensor, atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """allclose with a readable failure (torch.testing.assert_close imports torch.distributed: seconds)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.allclose(actual, expected.to(actual.dtype), atol=atol, rtol=rtol), (actual - expected).abs().max()


def linear_net(c: int = 2, h: int = 3, w: int = 3, k: int = 4, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)  # test-side weights only
    return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, k)).eval()


def weight_map(model: nn.Module, target: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return model[1].weight[target].detach().view_as(x)


def random_images(b: int = 5, c: int = 2, h: int = 3, w: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randn(b, c, h, w, generator=torch.Generator().manual_seed(seed))


class SmallCNN(nn.Module):
    """Nonlinear conv net with nn.ReLU modules and a cam_layer (for invariance tests)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
                                      nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
        self.cam_layer = self.features[2]

    def forward(self, x):
        return self.head(self.features(x))

class BagOfEmbeddings(nn.Module):
    """Text model: logits = W · Σ_l (non-pad) emb_l, with embed / forward_embeddings like fl.models' text models."""

    def __init__(self, vocab: int = 7, dim: int = 3, k: int = 2) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.fc = nn.Linear(dim, k, bias=False)

    def embed(self, tokens):
        return self.embedding(tokens)

    def forward_embeddings(self, emb, pad_mask=None):
        if pad_mask is not None:
            emb = emb * pad_mask.unsqueeze(-1)
        return self.fc(emb.sum(1))

    def forward(self, tokens):
        return self.forward_embeddings(self.embed(tokens), tokens != 0)

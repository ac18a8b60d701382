"""What the tests of Few-class Fidelity's metric (tests/faithlab/metrics/papers/fewclass/) share: seeded float64
images in [0, 1] (:func:`images`) and a model whose uncertainty is a known function of the image mean
(:class:`MeanModel`)."""

from __future__ import annotations

import torch


def images(b=2, c=3, h=9, w=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, c, h, w, generator=g, dtype=torch.float64)


class MeanModel(torch.nn.Module):
    """3 classes with logits depending on the image mean m: near-uniform when m ≈ 0.3 (so U falls as the blur
    pulls m towards it), confident otherwise."""

    def __init__(self, scale=8.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        m = x.mean(dim=(1, 2, 3))
        d = self.scale * (m - 0.3)
        return torch.stack([d, -d, 0 * d], dim=1)

"""The degraded-explainer protocol: ξ = 0 is the clean explainer, seeds are reproducible, degradation hurts Fid+."""

from __future__ import annotations

import torch
from torch import nn

import faithlab as fl


class CountModel(nn.Module):
    """Class 1 while at least 3 of the first 4 pixels are kept (x = 1 there, zero reference), else class 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = x.flatten(1)[:, :4].sum(1)
        return torch.stack([torch.zeros_like(kept), 10 * (kept - 2.5)], dim=1)


def setup():
    x = torch.ones(6, 1, 4, 4)
    y = torch.ones(6, dtype=torch.long)
    clean = torch.zeros(6, 1, 4, 4)
    clean.view(6, -1)[:, :4] = torch.tensor([4.0, 3.0, 2.0, 1.0])  # a faithful map: the 4 relevant pixels on top
    return CountModel().eval(), x, y, clean


def test_clean_level_equals_plain_fidelity_and_degradation_lowers_fid_plus():
    model, x, y, clean = setup()
    sparsity = [0.0625, 0.125, 0.5]  # 1, 2 and 8 of the 16 pixels
    plus, minus = fl.protocols.degraded_fidelity_curves(model, x, y, clean, [0.0, 1.0], sparsity, n_seeds=2,
                                                        batch_size=7)
    assert plus.shape == minus.shape == (2, 2, 3)
    expected = fl.metrics.fid_plus(model, x, y, clean, sparsity, generator=0, ties="random").mean(0)
    assert torch.equal(plus[0, 0], expected)
    assert plus[0, 0].tolist() == [0.0, 1.0, 1.0]  # removing 1 relevant pixel keeps the class, 2 flip it
    assert bool((plus[:, 1].sum(-1) < plus[:, 0].sum(-1)).all())  # a random permutation of the map scores worse


def test_seeds_reproduce_and_differ():
    model, x, y, clean = setup()
    kw = dict(n_seeds=2, alpha=0.5, n_samples=4)
    a = fl.protocols.degraded_fidelity_curves(model, x, y, clean, [0.5], [0.25, 0.5], **kw)
    b = fl.protocols.degraded_fidelity_curves(model, x, y, clean, [0.5], [0.25, 0.5], **kw)
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not torch.equal(a[0][0], a[0][1])  # seed 0 and seed 1 degrade differently

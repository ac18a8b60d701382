"""Information Bottleneck Attribution (``explain(..., method="iba")``): a hand-computed one-step case, the known
answer of a model that reads a few neurons only, the smoothing against scipy, the statistics against torch's own
mean and std, and independence of batch size and position."""

import math

import numpy as np
import pytest
import torch
from scipy import ndimage
from torch import nn

import faithlab as fl
from faithlab.explainers.bottleneck import _gaussian_smoother, capacity


class Readout(nn.Module):
    """The bottleneck sits on ``feat`` (the identity on the image, so R = x): logits are a linear function of the
    pixels in ``keep`` only."""

    def __init__(self, side: int, keep: torch.Tensor, n_classes: int = 2, channels: int = 1):
        super().__init__()
        self.feat = nn.Identity()
        self.register_buffer("keep", keep.float())
        g = torch.Generator().manual_seed(0)
        self.weight = nn.Parameter(torch.randn(n_classes, channels * side * side, generator=g) * 3)
        self.cam_layer = self.feat

    def forward(self, x):
        r = self.feat(x)
        return (r * self.keep).flatten(1) @ self.weight.T


def test_one_step_map_is_the_closed_form_capacity_in_bits():
    # with one step the map is the capacity of the first forward pass: λ = sigmoid(α0) everywhere (smoothing a
    # constant changes nothing), so per pixel Σ_c KL(N(λ r', (1 - λ)²) ‖ N(0, 1)) / ln 2, hand-computed in float64
    side, channels = 4, 2
    model = Readout(side, torch.ones(side, side), channels=channels).eval()
    data = torch.randn(500, channels, side, side, generator=torch.Generator().manual_seed(1)) * 2 + 0.5
    stats = fl.explainers.iba_statistics(model, data, batch_size=64)
    x = torch.randn(3, channels, side, side, generator=torch.Generator().manual_seed(2))
    maps = fl.explainers.explain(model, x, torch.tensor([0, 1, 0]), method="iba", statistics=stats, steps=1,
                                 generator=0)
    lam = 1 / (1 + math.exp(-5.0))
    rn = (x.double() - stats.mean.double()) / stats.std.double()
    kl = 0.5 * ((1 - lam) ** 2 + (lam * rn) ** 2 - 1 - math.log((1 - lam) ** 2))
    expected = kl.sum(1, keepdim=True) / math.log(2)  # layer = input size: scale 1, no resizing
    assert maps.shape == (3, 1, side, side)
    torch.testing.assert_close(maps.double(), expected, rtol=1e-5, atol=1e-5)


def test_the_bottleneck_closes_where_the_model_does_not_look():
    # the known answer: the readout uses a 2×2 block only. Elsewhere the loss is the information term alone, which
    # closes the bottleneck; inside, the class evidence keeps it open. No smoothing, so no leak across the border.
    side = 6
    keep = torch.zeros(side, side)
    keep[1:3, 3:5] = 1
    model = Readout(side, keep).eval()
    g = torch.Generator().manual_seed(3)
    stats = fl.explainers.iba_statistics(model, torch.randn(2000, 1, side, side, generator=g))
    x = torch.randn(8, 1, side, side, generator=g)
    target = model(x).argmax(1)
    maps = fl.explainers.explain(model, x, target, method="iba", statistics=stats, sigma=None, generator=0)[:, 0]
    inside, outside = maps[:, keep.bool()], maps[:, ~keep.bool()]
    # outside, the information term alone sends every λ towards 0: from 6.5 bits or more per pixel at
    # λ0 = sigmoid(5) to almost 0
    assert float(outside.max()) < 0.01
    # inside, each sample keeps open at least the pixel its class needs (not always all four: the evidence of some
    # is not needed for a given sample), and more in total than the 32 pixels outside: several times more (the
    # smallest ratio of the 8 samples is 5.6–16.5 over generator seeds 0–7, with either keyed noise generator)
    assert bool((inside.max(1).values > 100 * outside.max(1).values).all())
    assert bool((inside.sum(1) > 4 * outside.sum(1)).all())


def test_smoothing_is_the_authors_truncated_gaussian_with_reflection():
    # their kernel: side 2·round(2σ) + 1, normalised, ReflectionPad2d = scipy's "mirror" mode, truncated at 2σ
    lam = torch.rand(2, 3, 9, 7, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    ours = _gaussian_smoother(1.0, 3, torch.float64, lam.device)(lam)
    ref = np.stack([[ndimage.gaussian_filter(c, sigma=1.0, truncate=2.0, mode="mirror") for c in s]
                    for s in lam.numpy()])
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_statistics_match_torch_and_any_batching():
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    data = torch.randn(70, 3, 16, 16, generator=torch.Generator().manual_seed(5))
    stats = fl.explainers.iba_statistics(model, data, batch_size=16, min_std=0.0, threshold=0.3)
    feats = []
    handle = model.cam_layer.register_forward_hook(lambda _m, _i, out: feats.append(out))
    with torch.no_grad():
        model(data)
    handle.remove()
    r = feats[0]
    torch.testing.assert_close(stats.mean, r.mean(0), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(stats.std, r.std(0), rtol=1e-5, atol=1e-6)
    assert torch.equal(stats.active, (r != 0).float().mean(0) > 0.3) and stats.nonnegative and stats.n == 70
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, torch.zeros(70)), batch_size=9)
    again = fl.explainers.iba_statistics(model, loader, min_std=0.0, threshold=0.3)
    torch.testing.assert_close(again.mean, stats.mean) and torch.testing.assert_close(again.std, stats.std)
    floored = fl.explainers.iba_statistics(model, data, min_std=0.5)
    assert float(floored.std.min()) >= 0.5


def test_maps_do_not_depend_on_batch_size_position_or_other_rows():
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    g = torch.Generator().manual_seed(6)
    stats = fl.explainers.iba_statistics(model, torch.randn(100, 3, 16, 16, generator=g))
    x, target = torch.randn(5, 3, 16, 16, generator=g), torch.tensor([0, 1, 2, 3, 0])
    seeds = torch.tensor([11, 12, 13, 14, 15])
    whole = fl.explainers.explain(model, x, target, method="iba", statistics=stats, sample_seeds=seeds,
                                  batch_size=64)
    for batch_size in (1, 10, 25):  # 1 and 10: one sample per group; 25: groups of 2
        part = fl.explainers.explain(model, x, target, method="iba", statistics=stats, sample_seeds=seeds,
                                     batch_size=batch_size)
        torch.testing.assert_close(part, whole, rtol=1e-5, atol=1e-6)
    alone = fl.explainers.explain(model, x[3:4], target[3:4], method="iba", statistics=stats,
                                  sample_seeds=seeds[3:4])
    torch.testing.assert_close(alone, whole[3:4], rtol=1e-5, atol=1e-6)
    a = fl.explainers.explain(model, x, target, method="iba", statistics=stats, generator=7, batch_size=10)
    b = fl.explainers.explain(model, x, target, method="iba", statistics=stats, generator=7, batch_size=64)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    other = fl.explainers.explain(model, x, target, method="iba", statistics=stats, generator=8)
    assert not torch.allclose(a, other)  # the noise matters, so the seeds above were tested


def test_errors_name_the_argument():
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    x = torch.randn(2, 3, 16, 16)
    with pytest.raises(TypeError, match="statistics"):
        fl.explainers.explain(model, x, 0, method="iba", generator=0)
    small = fl.explainers.iba_statistics(model, torch.randn(4, 3, 8, 8))
    with pytest.raises(ValueError, match="statistics are of shape"):
        fl.explainers.explain(model, x, 0, method="iba", statistics=small, generator=0)
    stats = fl.explainers.iba_statistics(model, torch.randn(4, 3, 16, 16))
    with pytest.raises(ValueError, match="beta"):
        fl.explainers.explain(model, x, 0, method="iba", statistics=stats, generator=0, beta=-1)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        fl.explainers.iba_statistics(model, torch.randn(1, 3, 16, 16))

    class NaNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.cam_layer = nn.Identity()

        def forward(self, x):
            return self.cam_layer(x).flatten(1)[:, :4] * float("nan")

    nan = NaNModel().eval()
    with pytest.raises(ValueError, match="NaN|nan|finite"):
        fl.explainers.explain(nan, x, 0, method="iba", statistics=fl.explainers.iba_statistics(nan, x), generator=0)


def test_capacity_is_zero_for_a_closed_bottleneck_on_the_mean():
    # λ → 0 and r = mean: Z is the prior itself, no information passes
    r = torch.tensor([[0.3]], dtype=torch.float64)
    closed = capacity(r, torch.tensor([[1e-12]], dtype=torch.float64), r, torch.tensor([[2.0]], dtype=torch.float64))
    assert float(closed.abs().max()) < 1e-10

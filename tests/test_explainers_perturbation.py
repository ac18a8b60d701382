"""RISE (ours), Extremal Perturbations and Excitation Backprop (TorchRay) through ``fl.explainers.explain``: the RISE
estimator against its expectation, evidence localised where a model reads it, TorchRay wrappers against TorchRay
itself, batch-size and seed invariance, and errors."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

import faithlab as fl
from oracles import small_cnn


class Region(nn.Module):
    """Logits (k · mean of x over the square rows/cols 2:6, 0): the target-0 evidence lives in that square only."""

    def __init__(self, k: float = 6.0) -> None:
        super().__init__()
        self.k = k
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        s = self.scale * x[:, :, 2:6, 2:6].mean((1, 2, 3))
        return torch.stack([self.k * s, torch.zeros_like(s)], 1)


class Constant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.tensor([1.0, 0.0]))

    def forward(self, x):
        return self.bias.expand(x.shape[0], 2) + 0 * x.flatten(1)[:, :1]


def _square_images(b: int = 2, side: int = 12) -> torch.Tensor:
    x = torch.zeros(b, 1, side, side)
    x[:, :, 2:6, 2:6] = 1.0
    return x


def _inside(a: torch.Tensor) -> tuple[float, float]:
    inside = torch.zeros_like(a, dtype=torch.bool)
    inside[..., 2:6, 2:6] = True
    return a[inside].mean().item(), a[~inside].mean().item()


# ------------------------------------------------------------------------------------------------------ RISE
def test_rise_of_a_model_that_ignores_the_input_is_its_probability_everywhere():
    # E[M(u)] = p for every pixel (bilinear interpolation of Bernoulli(p) cells), so the map estimates f's constant
    # probability c = e/(1 + e); with n masks the mean over pixels is within a few standard errors of c
    n = 400
    a = fl.explainers.explain(Constant().eval(), torch.ones(1, 1, 14, 14), 0, method="rise", generator=0, n_masks=n)
    c = math.e / (1 + math.e)
    assert a.shape == (1, 1, 14, 14)
    assert a.mean().item() == pytest.approx(c, abs=4 * c / math.sqrt(n))
    assert a.min().item() > 0.5 * c and a.max().item() < 1.5 * c


def test_rise_is_higher_where_the_model_reads_its_evidence():
    a = fl.explainers.explain(Region().eval(), _square_images(), 0, method="rise", generator=1, n_masks=300, cell=4)
    inside, outside = _inside(a)
    assert inside > outside + 0.02


def test_rise_does_not_depend_on_batch_size_and_follows_the_seed():
    model, x = small_cnn(2, 8, 3), torch.randn(5, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    kw = {"method": "rise", "n_masks": 40, "cell": 3}
    big = fl.explainers.explain(model, x, 1, batch_size=64, generator=3, **kw)
    small = fl.explainers.explain(model, x, 1, batch_size=3, generator=3, **kw)
    torch.testing.assert_close(small, big, rtol=1e-5, atol=1e-6)
    other = fl.explainers.explain(model, x, 1, batch_size=64, generator=4, **kw)
    assert (other - big).abs().max() > 1e-3


@pytest.mark.parametrize("option, value", [("n_masks", 0), ("cell", 0), ("p", 0.0), ("p", 1.5), ("n_masks", 2.5)])
def test_rise_refuses_bad_options_naming_them(option, value):
    with pytest.raises(ValueError, match=option):
        fl.explainers.explain(Region().eval(), _square_images(), 0, method="rise", generator=0, **{option: value})


def test_rise_needs_a_generator_and_images():
    with pytest.raises((TypeError, ValueError), match="generator"):
        fl.explainers.explain(Region().eval(), _square_images(), 0, method="rise")
    with pytest.raises(ValueError, match="images"):
        fl.explainers.explain(nn.Linear(6, 2).eval(), torch.ones(2, 6), 0, method="rise", generator=0)


def test_rise_refuses_a_model_returning_nan():
    class NaNModel(Region):
        def forward(self, x):
            return super().forward(x) * float("nan")

    with pytest.raises(ValueError, match="NaN"):
        fl.explainers.explain(NaNModel().eval(), _square_images(), 0, method="rise", generator=0, n_masks=8)


# --------------------------------------------------------------------------------------- TorchRay wrappers
class Centred(nn.Module):
    """Logits (6 · mean of x over rows 4:8, cols 6:10 of a 16-px image, 0): a square symmetric under the horizontal
    flip TorchRay's jitter applies on every other step."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        s = self.scale * x[:, :, 4:8, 6:10].mean((1, 2, 3))
        return torch.stack([6 * s, torch.zeros_like(s)], 1)


def test_extremal_perturbation_keeps_the_evidence_square_and_restores_requires_grad():
    model = Centred().eval()
    x = torch.zeros(1, 1, 16, 16)
    x[:, :, 4:8, 6:10] = 1.0
    a = fl.explainers.explain(model, x, 0, method="extremal_perturbation", area=0.1, max_iter=100)
    inside = torch.zeros_like(a, dtype=torch.bool)
    inside[..., 4:8, 6:10] = True
    assert a.shape == (1, 1, 16, 16)
    assert a[inside].mean() > 0.9 and a[~inside].mean() < 0.2
    assert all(p.requires_grad for p in model.parameters())


def test_extremal_perturbation_is_deterministic_and_refuses_a_bad_area():
    model, x = Centred().eval(), _square_images(2, 16)
    a = fl.explainers.explain(model, x, 0, method="extremal_perturbation", max_iter=10)
    b = fl.explainers.explain(model, x, 0, method="extremal_perturbation", max_iter=10, batch_size=1)
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="area"):
        fl.explainers.explain(model, x, 0, method="extremal_perturbation", area=1.5)


def test_excitation_backprop_matches_torchray_upsampled_and_is_batch_invariant():
    from torchray.attribution.excitation_backprop import excitation_backprop

    model, x = small_cnn(2, 8, 3), torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(2)).abs()
    y = torch.tensor([0, 1, 2, 0])
    a = fl.explainers.explain(model, x, y, method="excitation_backprop", layer="1")
    b = fl.explainers.explain(model, x, y, method="excitation_backprop", layer=model[1], batch_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TorchRay's torch.meshgrid call
        ref = excitation_backprop(model, x, y, saliency_layer=model[1])
    assert ref.shape == (4, 1, 8, 8)  # the layer keeps the image size: the wrapper's upsampling is the identity
    torch.testing.assert_close(a, ref)
    torch.testing.assert_close(a, b)
    assert a.shape == (4, 1, 8, 8) and (a >= 0).all() and a.flatten(1).amax(1).gt(0).all()


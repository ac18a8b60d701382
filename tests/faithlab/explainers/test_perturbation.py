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


def test_rise_masks_are_shifted_crops_of_bilinearly_upsampled_binary_grids():
    # one mask per image and a constant model: the map is c · M / p, so each mask M can be read back. The paper's
    # mask: a cell x cell grid of Bernoulli(p) cells, upsampled bilinearly to (cell + 1) · ceil(H / cell) px and
    # cropped at a shift in [0, ceil(H / cell))². Fit every (grid, shift) by least squares: each mask must be one,
    # the shifts must vary and the cells must be kept with probability p.
    cell, side, p, b = 3, 9, 0.5, 300
    step, c = math.ceil(side / cell), math.e / (1 + math.e)
    a = fl.explainers.explain(Constant().eval(), torch.ones(b, 1, side, side), 0, method="rise", generator=11,
                              n_masks=1, cell=cell, p=p)
    masks = (a[:, 0] * p / c).double().reshape(b, -1).T  # (side², b)
    basis = torch.nn.functional.interpolate(torch.eye(cell * cell).view(-1, 1, cell, cell), mode="bilinear",
                                            size=((cell + 1) * step,) * 2, align_corners=False)[:, 0].double()
    fits, grids = [], []
    for sh in range(step):
        for sw in range(step):
            design = basis[:, sh : sh + side, sw : sw + side].reshape(cell * cell, -1).T
            g = torch.linalg.lstsq(design, masks).solution  # (cell², b)
            binary = ((g - g.round()).abs().amax(0) < 1e-4) & (g.round().abs() <= 1).all(0) & (g.round() >= 0).all(0)
            fits.append(((design @ g - masks).abs().amax(0) < 1e-4) & binary)
            grids.append(g.round())
    fits = torch.stack(fits, 1)  # (b, step²)
    assert fits.any(1).all()  # every mask is a shifted crop of an upsampled binary grid
    unique = fits.sum(1) == 1
    assert len(set(fits[unique].float().argmax(1).tolist())) == step * step  # every shift occurs
    kept = torch.stack(grids, 0)[fits.float().argmax(1), :, torch.arange(b)]  # (b, cell²): the fitted grids
    assert kept.mean().item() == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / kept.numel()))


def test_rise_with_every_cell_kept_is_the_probability_of_x_exactly():
    # p = 1: every mask is all ones, so the map is softmax(f(x))[target] at every pixel, for every target
    model, x = small_cnn(2, 8, 3), torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(5))
    y = torch.tensor([0, 2, 1])
    a = fl.explainers.explain(model, x, y, method="rise", generator=0, n_masks=5, p=1.0)
    with torch.no_grad():
        prob = model(x).softmax(1).gather(1, y[:, None])
    torch.testing.assert_close(a, prob.view(3, 1, 1, 1).expand(3, 1, 8, 8))


class KeptPixel(nn.Module):
    """Softmax probability of class 0 = (ε + v) / (1 + 2ε), v the input's value at pixel (1, 1): for x = 1 that is
    how much of the pixel the mask keeps."""

    def __init__(self, eps: float = 0.01) -> None:
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        v = self.scale * x[:, 0, 1, 1]
        return torch.stack([torch.log(self.eps + v), torch.log(1 + self.eps - v)], 1)


@pytest.mark.parametrize("p", [0.5, 0.25])
def test_rise_matches_its_expectation_where_the_mask_is_independent_of_the_evidence(p):
    # 16 px, cell 4: each upsampled cell is 4 px and a bilinear pixel reads 2 adjacent cells, so rows >= 9 share no
    # cell with pixel (1, 1) (same shift for both), and E[prob · M(u)] / p = (ε p + p²) / ((1 + 2ε) p)
    # = (ε + p) / (1 + 2ε).
    # Monte-Carlo bound: Var(prob · M(u) / p) <= (E[M²]² − p⁴) / p² <= 1 − p², over n masks.
    n, eps = 4000, 0.01
    a = fl.explainers.explain(KeptPixel(eps).eval(), torch.ones(1, 1, 16, 16), 0, method="rise", generator=7,
                              n_masks=n, cell=4, p=p, batch_size=1000)
    expected = (eps + p) / (1 + 2 * eps)
    far = a[..., 9:, :].mean().item()
    assert far == pytest.approx(expected, abs=4 * math.sqrt((1 - p * p) / n))
    assert a[..., 1, 1].item() > expected + 0.1  # E[M(q)²] / p > p: the pixel the model reads stands out


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
    assert torch.equal(fl.explainers.explain(model, x, 1, batch_size=64, generator=3, **kw), big)
    assert torch.equal(fl.explainers.explain(model, x, 1, batch_size=64, generator=torch.Generator().manual_seed(3),
                                             **kw), big)
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


class NaNModel(nn.Module):
    """A conv net whose logits are NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.act = nn.ReLU()
        self.cam_layer = self.act

    def forward(self, x):
        return self.act(self.conv(x)).mean((2, 3)) * float("nan")


@pytest.mark.parametrize("method, options", [("rise", {"generator": 0, "n_masks": 8}),
                                             ("extremal_perturbation", {"max_iter": 3}),
                                             ("excitation_backprop", {})])
def test_a_model_returning_nan_is_refused(method, options):
    with pytest.raises(ValueError, match="NaN"):
        fl.explainers.explain(NaNModel().eval(), _square_images(), 0, method=method, **options)


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
    for option, value in [("area", 1.5), ("area", 0.0), ("max_iter", 0), ("step", 0), ("sigma", 0.0)]:
        with pytest.raises(ValueError, match=option):
            fl.explainers.explain(model, x, 0, method="extremal_perturbation", **{option: value})


@pytest.mark.parametrize("method", ["extremal_perturbation", "excitation_backprop"])
def test_torchray_methods_leave_the_model_as_it_was_when_they_raise(method):
    # TorchRay switches requires_grad off and restores it only on a normal return; a target out of range makes our
    # logit check raise inside its forward pass
    model = fl.models.build("small_cnn", in_channels=1, n_classes=3).eval()
    model.fc.weight.requires_grad_(False)
    flags = [q.requires_grad for q in model.parameters()]

    def hooks():  # the model's own (its max-pools' layout hooks) and any left behind
        return [(list(m._forward_hooks.values()), list(m._forward_pre_hooks.values()),
                 list(m._backward_hooks.values())) for m in model.modules()]

    own = hooks()
    with pytest.raises(ValueError, match="target"):
        fl.explainers.explain(model, torch.rand(2, 1, 16, 16), 7, method=method)
    assert [q.requires_grad for q in model.parameters()] == flags and not all(flags) and any(flags)
    assert hooks() == own


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



def test_excitation_backprop_is_where_the_model_reads_and_upsampled_from_the_cam_layer():
    # a positive conv, ReLU, then a head whose class-0 row reads the square rows/cols 2:6 only: on a uniform image
    # the excitation reaching the ReLU lives in that square (up to the conv's 1-px reach) and is zero elsewhere
    torch.manual_seed(0)
    conv = nn.Conv2d(1, 2, 3, padding=1)
    head = nn.Linear(2 * 12 * 12, 2)
    with torch.no_grad():
        conv.weight.uniform_(0.1, 1.0)
        conv.bias.fill_(0.1)
        reads = torch.zeros(2, 12, 12)
        reads[:, 2:6, 2:6] = 1.0
        head.weight[0] = reads.flatten()
        head.weight[1].uniform_(0.0, 1.0)
    model = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), head).eval()
    a = fl.explainers.explain(model, torch.ones(2, 1, 12, 12), 0, method="excitation_backprop", layer="1")
    inside, outside = _inside(a)
    assert inside > 0 and outside == 0
    # the model's cam_layer (7 x 7 for 28 px) by default, upsampled bilinearly to the image like Grad-CAM
    from torchray.attribution.excitation_backprop import excitation_backprop

    net = fl.models.build("small_cnn", in_channels=3, n_classes=4).eval()
    x, y = torch.rand(3, 3, 28, 28, generator=torch.Generator().manual_seed(1)), torch.tensor([0, 3, 1])
    b = fl.explainers.explain(net, x, y, method="excitation_backprop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TorchRay's torch.meshgrid call
        ref = excitation_backprop(net, x, y, saliency_layer=net.cam_layer)
    assert ref.shape == (3, 1, 7, 7) and b.shape == (3, 1, 28, 28) and (b >= 0).all()
    torch.testing.assert_close(b, torch.nn.functional.interpolate(ref, size=(28, 28), mode="bilinear"))


def test_the_methods_print_no_warning():
    model, x = fl.models.build("small_cnn", in_channels=1, n_classes=3).eval(), torch.rand(1, 1, 16, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for method, options in [("rise", {"generator": 0, "n_masks": 8}), ("extremal_perturbation", {"max_iter": 2}),
                                ("excitation_backprop", {})]:
            fl.explainers.explain(model, x, 0, method=method, **options)

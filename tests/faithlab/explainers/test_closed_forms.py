"""``faithlab.explainers.explain`` against closed forms: the gradient methods, integrated gradients (exact on a linear
model, complete on an MLP), SmoothGrad and its variants over any base method, expected gradients, guided backprop and
deconvolution, Grad-CAM and LayerCAM on hand-built nets (images and series), occlusion, random maps and token inputs
attributed on their embeddings."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from explainer_nets import BagOfEmbeddings, SmallCNN, assert_near, linear_net, random_images, weight_map
from faithlab import explainers as ex


class IdentityCAMNet(nn.Module):
    """feature map = input (1 channel), head = w · spatial mean: ∂f_t/∂A = w_t/(HW) everywhere."""

    def __init__(self, w: list[float]) -> None:
        super().__init__()
        self.feat = nn.Identity()
        self.fc = nn.Linear(1, len(w), bias=False)
        with torch.no_grad():
            self.fc.weight.copy_(torch.tensor(w).view(-1, 1))

    def forward(self, x):
        return self.fc(self.feat(x).mean(dim=(2, 3)))

# ---------------------------------------------------------------------------------------------- closed forms
def test_gradient_methods_on_linear_model():
    model, x = linear_net(), random_images()
    t = torch.tensor([0, 1, 2, 3, 0])
    w = weight_map(model, t, x)
    assert_near(ex.explain(model, x, t, method="gradient"), w)
    assert_near(ex.explain(model, x, t, method="saliency"), w.abs())
    assert_near(ex.explain(model, x, t, method="input_x_gradient"), x * w)
    assert_near(ex.explain(model, x, 2, method="gradient"), weight_map(model, torch.full((5,), 2), x))


@pytest.mark.parametrize("baseline", ["zero", "min", "max", 0.5, "tensor"])
@pytest.mark.parametrize("integration", ["gausslegendre", "riemann_trapezoid"])
def test_integrated_gradients_linear_is_exact(baseline, integration):
    model, x = linear_net(), random_images()
    t = torch.tensor([3, 2, 1, 0, 1])
    ref = {"zero": torch.zeros_like(x), "min": x.amin(dim=(1, 2, 3), keepdim=True).expand_as(x),
           "max": x.amax(dim=(1, 2, 3), keepdim=True).expand_as(x), 0.5: torch.full_like(x, 0.5),
           "tensor": torch.randn(x.shape, generator=torch.Generator().manual_seed(9))}[baseline]
    arg = ref if baseline == "tensor" else baseline
    attr = ex.explain(model, x, t, method="integrated_gradients", baseline=arg, n_steps=7, integration=integration)
    assert_near(attr, (x - ref) * weight_map(model, t, x), atol=1e-5, rtol=1e-4)


def test_integrated_gradients_completeness_on_mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Softplus(), nn.Linear(16, 3)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 1.0)
    x = torch.randn(8, 6, generator=torch.Generator().manual_seed(2))
    t = torch.arange(8) % 3
    with torch.no_grad():
        gap = (model(x) - model(torch.zeros_like(x))).gather(1, t[:, None]).squeeze(1)
    assert gap.abs().min() > 0.1  # the check is not vacuous
    for integration in ("gausslegendre", "riemann_trapezoid"):
        attr = ex.explain(model, x, t, method="integrated_gradients", n_steps=100, integration=integration)
        assert_near(attr.sum(1), gap, atol=2e-3, rtol=2e-3)
    # not a linear model in disguise: x ⊙ gradient breaks completeness
    ixg = ex.explain(model, x, t, method="input_x_gradient")
    assert (ixg.sum(1) - gap).abs().max() > 0.1


def test_smoothgrad_linear_is_noise_invariant_and_seeded():
    model, x = linear_net(), random_images()
    t = torch.tensor([0, 1, 2, 3, 0])
    w = weight_map(model, t, x)
    assert_near(ex.explain(model, x, t, method="smoothgrad", generator=0), w.abs())
    assert_near(ex.explain(model, x, t, method="smoothgrad_sq", generator=0, stdevs=3.0), w * w)
    mlp = SmallCNN().eval()
    a = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(3), nt_samples=4)
    b = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(3), nt_samples=4)
    c = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(4), nt_samples=4)
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_smoothgrad_over_any_method_is_the_mean_of_its_maps_on_the_same_noise():
    # the quadratic net's signed gradient 2(x + ε) averages to 2x (SG keeps signs, unlike base "saliency"),
    # its square to 4(x² + σ²); a CAM base (B, 1, H, W) and a random base (expected gradients) run too
    quad = _QuadNet().eval()
    x = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
    sg = ex.explain(quad, x, 0, method="smoothgrad", base="gradient", generator=0, stdevs=0.2, nt_samples=20000,
                    batch_size=40000)
    assert_near(sg, 2 * x, atol=0.02, rtol=0)
    sq = ex.explain(quad, x, 0, method="smoothgrad_sq", base="gradient", generator=0, stdevs=0.2, nt_samples=20000,
                    batch_size=40000)
    assert_near(sq, 4 * (x * x + 0.04), atol=0.05, rtol=0.02)
    model, xi = SmallCNN().eval(), random_images()
    cam = ex.explain(model, xi, 1, method="smoothgrad", base="gradcam", generator=0, nt_samples=3)
    assert cam.shape == (xi.shape[0], 1, *xi.shape[2:]) and bool(torch.isfinite(cam).all())
    bg = torch.randn(4, *xi.shape[1:], generator=torch.Generator().manual_seed(0))
    a = ex.explain(model, xi, 1, method="smoothgrad", base="expected_gradients", background=bg, generator=5,
                   nt_samples=3)
    b = ex.explain(model, xi, 1, method="smoothgrad", base="expected_gradients", background=bg, generator=5,
                   nt_samples=3)
    assert torch.equal(a, b)


def test_sg_sq_ig_linear_matches_its_expectation():
    # IG of a linear model at a noisy input x + ε (zero baseline) is (x + ε)·w, so SG² → w²(x² + σ²)
    model = linear_net(1, 2, 2, 2)
    x = torch.tensor([[[[1.0, -2.0], [0.5, 0.0]]]])
    w = weight_map(model, torch.tensor([1]), x)
    sigma = 0.5
    attr = ex.explain(model, x, 1, method="sg_sq_ig", generator=0, nt_samples=4000, stdevs=sigma, n_steps=2,
                      batch_size=4000)
    assert_near(attr, w * w * (x * x + sigma**2), rtol=0.1, atol=1e-3)


class _QuadNet(nn.Module):
    def forward(self, x):
        return (x * x).sum(1, keepdim=True)


def test_smoothgrad_relative_noise_scales_with_range():
    # |grad| of f = x² summed is 2|x + ε|: with σ relative to the sample range, noise grows with the range
    quad = _QuadNet().eval()
    x = torch.tensor([[0.0, 1.0], [0.0, 100.0]])
    attr = ex.explain(quad, x, 0, method="smoothgrad_sq", generator=0, stdevs=0.1, relative=True, nt_samples=4000)
    # E[(2(x+ε))²] = 4(x² + σ²) with σ = 0.1·range
    expected = 4 * (x * x + torch.tensor([[0.01], [100.0]]))
    assert_near(attr, expected, rtol=0.06, atol=0.02)


def test_expected_gradients_linear_single_reference():
    model, x = linear_net(), random_images()
    ref = torch.randn(1, *x.shape[1:], generator=torch.Generator().manual_seed(5))
    t = torch.tensor([0, 1, 2, 3, 0])
    attr = ex.explain(model, x, t, method="expected_gradients", generator=1, background=ref, n_samples=3)
    assert_near(attr, (x - ref) * weight_map(model, t, x), atol=1e-5, rtol=1e-5)
    # completeness in expectation on a nonlinear model with a two-point background: averaged over many samples
    cnn = SmallCNN().eval()
    bg = torch.stack([torch.zeros(x.shape[1:]), torch.ones(x.shape[1:])])
    attr = ex.explain(cnn, x[:2], 0, method="expected_gradients", generator=1, background=bg, n_samples=3000,
                      batch_size=3000)
    with torch.no_grad():
        gap = cnn(x[:2])[:, 0] - cnn(bg)[:, 0].mean()
    assert_near(attr.sum(dim=(1, 2, 3)), gap, atol=0.02, rtol=0.05)


def test_guided_backprop_and_deconvolution_on_relu_net():
    # f = w · relu(x): grad = w·1[x>0]; guided backprop = relu(w)·1[x>0]; deconvolution = relu(w)
    w = torch.tensor([[1.0, -2.0, 3.0, -0.5]])
    model = nn.Sequential(nn.ReLU(), nn.Linear(4, 1, bias=False)).eval()
    with torch.no_grad():
        model[1].weight.copy_(w)
    x = torch.tensor([[1.0, 2.0, -1.0, 0.5], [-1.0, -1.0, 2.0, 2.0]])
    pos = (x > 0).float()
    assert_near(ex.explain(model, x, 0, method="gradient"), w * pos)
    assert_near(ex.explain(model, x, 0, method="guided_backprop"), w.clamp_min(0) * pos)
    assert_near(ex.explain(model, x, 0, method="deconvolution"), w.clamp_min(0).expand_as(x))


def test_gradcam_and_layercam_known_answer():
    model = IdentityCAMNet([2.0, -1.0]).eval()
    x = random_images(3, 1, 4, 4)
    hw = 16
    assert_near(ex.explain(model, x, 0, method="gradcam", layer="feat"), 2.0 / hw * x.clamp_min(0))
    assert_near(ex.explain(model, x, 1, method="gradcam", layer=model.feat), 1.0 / hw * (-x).clamp_min(0))
    # LayerCAM keeps positive gradients only: target 1 has a negative weight → all-zero map
    assert_near(ex.explain(model, x, 0, method="layercam", layer="feat"), 2.0 / hw * x.clamp_min(0))
    assert ex.explain(model, x, 1, method="layercam", layer="feat").abs().max() == 0
    norm = ex.explain(model, x, 0, method="gradcam", layer="feat", normalize=True)
    pos = x.clamp_min(0)
    assert_near(norm, pos / (pos.amax(dim=(1, 2, 3), keepdim=True) + 1e-7 * hw / 2.0), atol=1e-6, rtol=1e-5)


def test_cam_upsampling_and_default_layer():
    model = SmallCNN().eval()
    model.cam_layer = nn.Sequential(model.features[2], nn.AvgPool2d(2))  # 8x8 input → 4x4 map
    model.features[2] = model.cam_layer
    model.eval()
    x = random_images(2, 2, 8, 8)
    cam = ex.explain(model, x, 1, method="gradcam")
    assert_near(ex.explain(model, x, 1, method="gradcam", layer="features.2"), cam)  # same module by dotted name
    # Grad-CAM from its definition, on the 4x4 activation A read with autograd, then bilinear upsampling
    xg = x.clone().requires_grad_(True)
    act = model.features[:2](xg)
    act = model.cam_layer(act)
    out = model.head(model.features[3](act))[:, 1].sum()
    (grad,) = torch.autograd.grad(out, act)
    coarse = (grad.mean(dim=(2, 3), keepdim=True) * act).sum(1, keepdim=True).clamp_min(0).detach()
    assert_near(cam, torch.nn.functional.interpolate(coarse, size=(8, 8), mode="bilinear"), atol=1e-7)
    assert cam.shape == (2, 1, 8, 8) and coarse.amax() > 0
    raw = ex.explain(model, x, 1, method="layercam")
    lo, hi = raw.amin(dim=(1, 2, 3), keepdim=True), raw.amax(dim=(1, 2, 3), keepdim=True)
    assert_near(ex.explain(model, x, 1, method="layercam", normalize=True), (raw - lo) / (hi - lo + 1e-7))
    assert raw.shape == (2, 1, 8, 8) and (hi > 0).all()


def test_gradcam_series_layout():
    class Conv1DNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.cam_layer = nn.Identity()
            self.fc = nn.Linear(2, 2, bias=False)
            with torch.no_grad():
                self.fc.weight.copy_(torch.tensor([[1.0, 1.0], [0.0, 1.0]]))

        def forward(self, x):  # (B, T, C) → conv-style (B, C, T)
            return self.fc(self.cam_layer(x.transpose(1, 2)).mean(-1))

    x = torch.randn(2, 5, 2, generator=torch.Generator().manual_seed(0))
    cam = ex.explain(Conv1DNet().eval(), x, 0, method="gradcam")
    assert_near(cam, (x.sum(-1, keepdim=True) / 5).clamp_min(0))


def test_occlusion_single_element_windows_on_linear_model():
    model, x = linear_net(1, 3, 3, 2), random_images(4, 1, 3, 3)
    t = torch.tensor([0, 1, 0, 1])
    attr = ex.explain(model, x, t, method="occlusion", window=1)
    assert_near(attr, x * weight_map(model, t, x), atol=1e-5, rtol=1e-5)


def test_random_map_shape_range_and_seed():
    x = random_images()
    r = ex.explain(linear_net(), x, 0, method="random", generator=7)
    assert r.shape == (5, 1, 3, 3) and r.min() >= 0 and r.max() < 1
    assert torch.equal(r, ex.explain(linear_net(), x, 0, method="random", generator=torch.Generator().manual_seed(7)))
    assert not torch.equal(r, ex.explain(linear_net(), x, 0, method="random", generator=8))
    series = torch.zeros(2, 6, 3)
    series_model = nn.Sequential(nn.Flatten(), nn.Linear(18, 2)).eval()
    assert ex.explain(series_model, series, 0, method="random", generator=0).shape == (2, 6, 1)


def test_token_inputs_attribute_on_embeddings():
    model = BagOfEmbeddings().eval()
    tokens = torch.tensor([[1, 2, 3, 0], [4, 4, 5, 6]])
    t = torch.tensor([0, 1])
    emb = model.embedding(tokens).detach()
    w = model.fc.weight[t].detach()  # (B, D)
    expected = (emb * w[:, None, :]).sum(-1) * (tokens != 0)  # IG from zero embeddings, linear model
    assert_near(ex.explain(model, tokens, t, method="integrated_gradients"), expected, atol=1e-5, rtol=1e-5)
    grad = ex.explain(model, tokens, t, method="gradient")
    assert_near(grad, w.sum(-1, keepdim=True) * (tokens != 0))
    assert ex.explain(model, tokens, t, method="random", generator=0).shape == (2, 4)

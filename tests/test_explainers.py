from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import explainers as ex
from faithlab.explainers import vit_attention



def _close(actual: torch.Tensor, expected: torch.Tensor, atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """allclose with a readable failure (torch.testing.assert_close imports torch.distributed: seconds)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.allclose(actual, expected.to(actual.dtype), atol=atol, rtol=rtol), (actual - expected).abs().max()


def _linear(c: int = 2, h: int = 3, w: int = 3, k: int = 4, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)  # test-side weights only
    return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, k)).eval()


def _weight_map(model: nn.Module, target: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return model[1].weight[target].detach().view_as(x)


def _x(b: int = 5, c: int = 2, h: int = 3, w: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randn(b, c, h, w, generator=torch.Generator().manual_seed(seed))


class SmallCNN(nn.Module):
    """Nonlinear conv net with nn.ReLU modules and a cam_layer (for invariance tests)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))
        self.cam_layer = self.features[2]

    def forward(self, x):
        return self.head(self.features(x))


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


# ---------------------------------------------------------------------------------------------- closed forms
def test_gradient_methods_on_linear_model():
    model, x = _linear(), _x()
    t = torch.tensor([0, 1, 2, 3, 0])
    w = _weight_map(model, t, x)
    _close(ex.explain(model, x, t, method="gradient"), w)
    _close(ex.explain(model, x, t, method="saliency"), w.abs())
    _close(ex.explain(model, x, t, method="input_x_gradient"), x * w)
    _close(ex.explain(model, x, 2, method="gradient"), _weight_map(model, torch.full((5,), 2), x))


@pytest.mark.parametrize("baseline", ["zero", "min", "max", 0.5, "tensor"])
@pytest.mark.parametrize("integration", ["gausslegendre", "riemann_trapezoid"])
def test_integrated_gradients_linear_is_exact(baseline, integration):
    model, x = _linear(), _x()
    t = torch.tensor([3, 2, 1, 0, 1])
    ref = {"zero": torch.zeros_like(x), "min": x.amin(dim=(1, 2, 3), keepdim=True).expand_as(x),
           "max": x.amax(dim=(1, 2, 3), keepdim=True).expand_as(x), 0.5: torch.full_like(x, 0.5),
           "tensor": torch.randn(x.shape, generator=torch.Generator().manual_seed(9))}[baseline]
    arg = ref if baseline == "tensor" else baseline
    attr = ex.explain(model, x, t, method="integrated_gradients", baseline=arg, n_steps=7, integration=integration)
    _close(attr, (x - ref) * _weight_map(model, t, x), atol=1e-5, rtol=1e-4)


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
        _close(attr.sum(1), gap, atol=2e-3, rtol=2e-3)
    # not a linear model in disguise: x ⊙ gradient breaks completeness
    ixg = ex.explain(model, x, t, method="input_x_gradient")
    assert (ixg.sum(1) - gap).abs().max() > 0.1


def test_smoothgrad_linear_is_noise_invariant_and_seeded():
    model, x = _linear(), _x()
    t = torch.tensor([0, 1, 2, 3, 0])
    w = _weight_map(model, t, x)
    _close(ex.explain(model, x, t, method="smoothgrad", generator=0), w.abs())
    _close(ex.explain(model, x, t, method="smoothgrad_sq", generator=0, stdevs=3.0), w * w)
    mlp = SmallCNN().eval()
    a = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(3), nt_samples=4)
    b = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(3), nt_samples=4)
    c = ex.explain(mlp, x, 1, method="smoothgrad", generator=torch.Generator().manual_seed(4), nt_samples=4)
    assert torch.equal(a, b) and not torch.allclose(a, c)


def test_sg_sq_ig_linear_matches_its_expectation():
    # IG of a linear model at a noisy input x + ε (zero baseline) is (x + ε)·w, so SG² → w²(x² + σ²)
    model = _linear(1, 2, 2, 2)
    x = torch.tensor([[[[1.0, -2.0], [0.5, 0.0]]]])
    w = _weight_map(model, torch.tensor([1]), x)
    sigma = 0.5
    attr = ex.explain(model, x, 1, method="sg_sq_ig", generator=0, nt_samples=4000, stdevs=sigma, n_steps=2,
                      batch_size=4000)
    _close(attr, w * w * (x * x + sigma**2), rtol=0.1, atol=1e-3)


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
    _close(attr, expected, rtol=0.06, atol=0.02)


def test_expected_gradients_linear_single_reference():
    model, x = _linear(), _x()
    ref = torch.randn(1, *x.shape[1:], generator=torch.Generator().manual_seed(5))
    t = torch.tensor([0, 1, 2, 3, 0])
    attr = ex.explain(model, x, t, method="expected_gradients", generator=1, background=ref, n_samples=3)
    _close(attr, (x - ref) * _weight_map(model, t, x), atol=1e-5, rtol=1e-5)
    # completeness in expectation on a nonlinear model with a two-point background: averaged over many samples
    cnn = SmallCNN().eval()
    bg = torch.stack([torch.zeros(x.shape[1:]), torch.ones(x.shape[1:])])
    attr = ex.explain(cnn, x[:2], 0, method="expected_gradients", generator=1, background=bg, n_samples=3000,
                      batch_size=3000)
    with torch.no_grad():
        gap = cnn(x[:2])[:, 0] - cnn(bg)[:, 0].mean()
    _close(attr.sum(dim=(1, 2, 3)), gap, atol=0.02, rtol=0.05)


def test_guided_backprop_and_deconvolution_on_relu_net():
    # f = w · relu(x): grad = w·1[x>0]; guided backprop = relu(w)·1[x>0]; deconvolution = relu(w)
    w = torch.tensor([[1.0, -2.0, 3.0, -0.5]])
    model = nn.Sequential(nn.ReLU(), nn.Linear(4, 1, bias=False)).eval()
    with torch.no_grad():
        model[1].weight.copy_(w)
    x = torch.tensor([[1.0, 2.0, -1.0, 0.5], [-1.0, -1.0, 2.0, 2.0]])
    pos = (x > 0).float()
    _close(ex.explain(model, x, 0, method="gradient"), w * pos)
    _close(ex.explain(model, x, 0, method="guided_backprop"), w.clamp_min(0) * pos)
    _close(ex.explain(model, x, 0, method="deconvolution"), w.clamp_min(0).expand_as(x))


def test_gradcam_and_layercam_known_answer():
    model = IdentityCAMNet([2.0, -1.0]).eval()
    x = _x(3, 1, 4, 4)
    hw = 16
    _close(ex.explain(model, x, 0, method="gradcam", layer="feat"), 2.0 / hw * x.clamp_min(0))
    _close(ex.explain(model, x, 1, method="gradcam", layer=model.feat), 1.0 / hw * (-x).clamp_min(0))
    # LayerCAM keeps positive gradients only: target 1 has a negative weight → all-zero map
    _close(ex.explain(model, x, 0, method="layercam", layer="feat"), 2.0 / hw * x.clamp_min(0))
    assert ex.explain(model, x, 1, method="layercam", layer="feat").abs().max() == 0
    norm = ex.explain(model, x, 0, method="gradcam", layer="feat", normalize=True)
    pos = x.clamp_min(0)
    _close(norm, pos / (pos.amax(dim=(1, 2, 3), keepdim=True) + 1e-7 * hw / 2.0), atol=1e-6, rtol=1e-5)


def test_cam_upsampling_and_default_layer():
    model = SmallCNN().eval()
    model.cam_layer = nn.Sequential(model.features[2], nn.AvgPool2d(2))  # 8x8 input → 4x4 map
    model.features[2] = model.cam_layer
    model.eval()
    x = _x(2, 2, 8, 8)
    cam = ex.explain(model, x, 1, method="gradcam")
    _close(ex.explain(model, x, 1, method="gradcam", layer="features.2"), cam)  # same module by dotted name
    # Grad-CAM from its definition, on the 4x4 activation A read with autograd, then bilinear upsampling
    xg = x.clone().requires_grad_(True)
    act = model.features[:2](xg)
    act = model.cam_layer(act)
    out = model.head(model.features[3](act))[:, 1].sum()
    (grad,) = torch.autograd.grad(out, act)
    coarse = (grad.mean(dim=(2, 3), keepdim=True) * act).sum(1, keepdim=True).clamp_min(0).detach()
    _close(cam, torch.nn.functional.interpolate(coarse, size=(8, 8), mode="bilinear"), atol=1e-7)
    assert cam.shape == (2, 1, 8, 8) and coarse.amax() > 0
    raw = ex.explain(model, x, 1, method="layercam")
    lo, hi = raw.amin(dim=(1, 2, 3), keepdim=True), raw.amax(dim=(1, 2, 3), keepdim=True)
    _close(ex.explain(model, x, 1, method="layercam", normalize=True), (raw - lo) / (hi - lo + 1e-7))
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
    _close(cam, (x.sum(-1, keepdim=True) / 5).clamp_min(0))


def test_occlusion_single_element_windows_on_linear_model():
    model, x = _linear(1, 3, 3, 2), _x(4, 1, 3, 3)
    t = torch.tensor([0, 1, 0, 1])
    attr = ex.explain(model, x, t, method="occlusion", window=1)
    _close(attr, x * _weight_map(model, t, x), atol=1e-5, rtol=1e-5)


def test_random_map_shape_range_and_seed():
    x = _x()
    r = ex.explain(_linear(), x, 0, method="random", generator=7)
    assert r.shape == (5, 1, 3, 3) and r.min() >= 0 and r.max() < 1
    assert torch.equal(r, ex.explain(_linear(), x, 0, method="random", generator=torch.Generator().manual_seed(7)))
    assert not torch.equal(r, ex.explain(_linear(), x, 0, method="random", generator=8))
    series = torch.zeros(2, 6, 3)
    assert ex.explain(nn.Sequential(nn.Flatten(), nn.Linear(18, 2)).eval(), series, 0, method="random", generator=0).shape == (2, 6, 1)


def test_token_inputs_attribute_on_embeddings():
    model = BagOfEmbeddings().eval()
    tokens = torch.tensor([[1, 2, 3, 0], [4, 4, 5, 6]])
    t = torch.tensor([0, 1])
    emb = model.embedding(tokens).detach()
    w = model.fc.weight[t].detach()  # (B, D)
    expected = (emb * w[:, None, :]).sum(-1) * (tokens != 0)  # IG from zero embeddings, linear model
    _close(ex.explain(model, tokens, t, method="integrated_gradients"), expected, atol=1e-5, rtol=1e-5)
    grad = ex.explain(model, tokens, t, method="gradient")
    _close(grad, w.sum(-1, keepdim=True) * (tokens != 0))
    assert ex.explain(model, tokens, t, method="random", generator=0).shape == (2, 4)


# ------------------------------------------------------------------------------------------------ invariance
_OPTIONS = {
    "expected_gradients": {"background": _x(3, 2, 6, 6, seed=11), "n_samples": 3},
    "smoothgrad": {"nt_samples": 3, "stdevs": 0.3},
    "smoothgrad_sq": {"nt_samples": 3, "base": "integrated_gradients", "n_steps": 4, "baseline": "min"},
    "sg_sq_ig": {"nt_samples": 3, "n_steps": 4},
    "integrated_gradients": {"n_steps": 8, "baseline": "tensor"},
    "occlusion": {"window": 2, "stride": 1},
}


@pytest.mark.parametrize("method", sorted(set(ex.available()) - set(vit_attention.METHODS)))
def test_batch_size_invariance(method):
    """Every CNN-applicable method (the ViT attention methods have their own in test_vit_explainers.py)."""
    model, x = SmallCNN().eval(), _x(5, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 0, 1])
    opts = dict(_OPTIONS.get(method, {}))
    if opts.get("baseline") == "tensor":
        opts["baseline"] = _x(5, 2, 6, 6, seed=4)  # one baseline per input, sliced with the chunks
    big = ex.explain(model, x, t, method=method, batch_size=64, generator=3, **opts)
    small = ex.explain(model, x, t, method=method, batch_size=2, generator=3, **opts)
    _close(small, big, atol=1e-5, rtol=1e-4)
    assert big.abs().sum() > 0


# ------------------------------------------------------------------------------------------ ground truth, ξ
def test_ground_truth():
    mask = torch.tensor([[[True, False], [False, True]]])
    x = torch.zeros(1, 3, 2, 2, dtype=torch.float64)
    gt = ex.ground_truth(mask, x)
    assert gt.dtype == torch.float64 and gt.tolist() == [[[1.0, 0.0], [0.0, 1.0]]]
    assert ex.ground_truth(torch.tensor([[1, 0, 1]]), torch.zeros(1, 3, 2)).tolist() == [[1.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match="mask"):
        ex.ground_truth(mask, torch.zeros(1, 3, 4, 4))
    with pytest.raises(ValueError, match="mask"):
        ex.ground_truth(mask, torch.zeros(2, 3, 2, 2))


def _distinct(b: int = 6, n: int = 50) -> torch.Tensor:
    return torch.randperm(b * n, generator=torch.Generator().manual_seed(0)).view(b, 5, n // 5).float()


def test_degrade_identity_and_full_permutation():
    s = _distinct()
    assert torch.equal(ex.degrade(s, 0.0, 0), s)
    full = ex.degrade(s, 1.0, 0)
    assert torch.equal(full.flatten(1).sort(1).values, s.flatten(1).sort(1).values)  # same multiset per sample
    assert (full != s).flatten(1).sum(1).min() > 40  # almost everything moved


@pytest.mark.parametrize("xi", [0.1, 0.29, 0.5, 0.8])
def test_degrade_moves_at_most_floor_xi_n(xi):
    s = _distinct()
    n = s[0].numel()
    d = ex.degrade(s, xi, torch.Generator().manual_seed(1))
    changed = (d != s).flatten(1).sum(1)
    k = math.floor(round(xi * n, 9))
    assert changed.max() <= k and changed.min() >= k - 6  # a random permutation of k keeps few fixed points
    assert torch.equal(d.flatten(1).sort(1).values, s.flatten(1).sort(1).values)
    assert torch.equal(d, ex.degrade(s, xi, 1))
    assert not torch.equal(d, ex.degrade(s, xi, 2))


def test_degrade_chooses_positions_uniformly():
    # every position is equally likely to be chosen: over many rows, each moves about as often (≈ ξ)
    rows = torch.arange(20.0).expand(400, 20).contiguous()
    moved = (ex.degrade(rows, 0.5, 0) != rows).float().mean(0)
    assert moved.min() > 0.35 and moved.max() < 0.6


# ----------------------------------------------------------------------------------------------------- errors
def test_errors_name_arguments():
    model, x = _linear(), _x()
    with pytest.raises(ValueError, match="model"):
        ex.explain(model.train(), x, 0, method="saliency")
    model.eval()
    with pytest.raises(ValueError, match="method.*saliency"):
        ex.explain(model, x, 0, method="gradcamm")
    with pytest.raises(ValueError, match="target"):
        ex.explain(model, x, torch.zeros(3, dtype=torch.int64), method="saliency")
    with pytest.raises(TypeError, match="target"):
        ex.explain(model, x, torch.zeros(5), method="saliency")
    with pytest.raises(ValueError, match="generator"):
        ex.explain(model, x, 0, method="random")
    with pytest.raises(TypeError, match="n_step"):
        ex.explain(model, x, 0, method="integrated_gradients", n_step=3)
    with pytest.raises(ValueError, match="baseline"):
        ex.explain(model, x, 0, method="integrated_gradients", baseline="mean")
    with pytest.raises(ValueError, match="batch_size"):
        ex.explain(model, x, 0, method="saliency", batch_size=0)
    with pytest.raises(ValueError, match="layer"):
        ex.explain(model, x, 0, method="gradcam")
    with pytest.raises(ValueError, match="layer"):
        ex.explain(model, x, 0, method="gradcam", layer="nope")
    with pytest.raises(ValueError, match="background"):
        ex.explain(model, x, 0, method="expected_gradients", generator=0, background=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="base"):
        ex.explain(model, x, 0, method="smoothgrad", generator=0, base="gradcam")
    with pytest.raises(ValueError, match="x"):
        ex.explain(model, x.clone().fill_(float("nan")), 0, method="saliency")
    with pytest.raises(TypeError, match="forward_embeddings"):
        ex.explain(model, torch.zeros(2, 3, dtype=torch.int64), 0, method="saliency")
    with pytest.raises(ValueError, match="xi"):
        ex.degrade(x, 1.5, 0)
    with pytest.raises(ValueError, match="generator"):
        ex.degrade(x, 0.5, None)


def test_lazy_import():
    assert fl.explainers is ex


def test_user_registered_explainer_runs_through_explain_with_its_options():
    @ex.register("test_scaled_input", random=True)
    def _scaled_input(model, x, target, extra, *, batch_size, generator, scale: float = 1.0):
        return x * scale + ex.core.uniform(x.shape, generator, x.device).to(x.dtype) * 0

    model = nn.Sequential(nn.Flatten(), nn.Linear(18, 2)).eval()
    x = torch.rand(5, 2, 3, 3)
    assert "test_scaled_input" in ex.available()
    _close(ex.explain(model, x, 0, method="test_scaled_input", generator=0, scale=2.0, batch_size=2), 2 * x)
    with pytest.raises(ValueError, match="generator"):  # registered as random: a generator is required
        ex.explain(model, x, 0, method="test_scaled_input")
    with pytest.raises(TypeError, match="shift"):
        ex.explain(model, x, 0, method="test_scaled_input", generator=0, shift=1.0)
    with pytest.raises(ValueError, match="test_scaled_input"):
        ex.register("test_scaled_input")(_scaled_input)

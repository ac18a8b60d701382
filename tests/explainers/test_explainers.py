from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import explainers as ex


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
        self.features = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
                                      nn.ReLU())
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


def test_smoothgrad_over_any_method_is_the_mean_of_its_maps_on_the_same_noise():
    # the quadratic net's signed gradient 2(x + ε) averages to 2x (SG keeps signs, unlike base "saliency"),
    # its square to 4(x² + σ²); a CAM base (B, 1, H, W) and a random base (expected gradients) run too
    quad = _QuadNet().eval()
    x = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
    sg = ex.explain(quad, x, 0, method="smoothgrad", base="gradient", generator=0, stdevs=0.2, nt_samples=20000,
                    batch_size=40000)
    _close(sg, 2 * x, atol=0.02, rtol=0)
    sq = ex.explain(quad, x, 0, method="smoothgrad_sq", base="gradient", generator=0, stdevs=0.2, nt_samples=20000,
                    batch_size=40000)
    _close(sq, 4 * (x * x + 0.04), atol=0.05, rtol=0.02)
    model, xi = SmallCNN().eval(), _x()
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
    series_model = nn.Sequential(nn.Flatten(), nn.Linear(18, 2)).eval()
    assert ex.explain(series_model, series, 0, method="random", generator=0).shape == (2, 6, 1)


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
    "iba": {"statistics": ex.iba_statistics(SmallCNN().eval(), torch.randn(40, 2, 6, 6, generator=torch.Generator()
                                                                           .manual_seed(12))), "steps": 3, "copies": 3},
}


@pytest.mark.parametrize("method", sorted(set(ex.available()) - set(ex.METHODS)))
def test_batch_size_invariance(method):
    """Every CNN-applicable method (the ViT attention methods have their own in test_vit_attention.py)."""
    model, x = SmallCNN().eval(), _x(5, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 0, 1])
    opts = dict(_OPTIONS.get(method, {}))
    if opts.get("baseline") == "tensor":
        opts["baseline"] = _x(5, 2, 6, 6, seed=4)  # one baseline per input, sliced with the chunks
    big = ex.explain(model, x, t, method=method, batch_size=64, generator=3, **opts)
    small = ex.explain(model, x, t, method=method, batch_size=2, generator=3, **opts)
    _close(small, big, atol=1e-5, rtol=1e-4)
    assert big.abs().sum() > 0


# ------------------------------------------------------------------------------- per-row seeds (sample_seeds)
_SEEDED = {
    "smoothgrad": {"nt_samples": 3, "stdevs": 0.3},
    "smoothgrad_sq": {"nt_samples": 3, "base": "integrated_gradients", "n_steps": 4},
    "sg_sq_ig": {"nt_samples": 3, "n_steps": 4},
    "expected_gradients": {"background": _x(3, 2, 6, 6, seed=11), "n_samples": 3},
    "random": {},
    "rise": {"n_masks": 6, "cell": 2},
    "smoothgrad over expected gradients": {"base": "expected_gradients", "background": _x(3, 2, 6, 6, seed=11),
                                           "n_samples": 2, "nt_samples": 2},
}


@pytest.mark.parametrize("case", sorted(_SEEDED))
def test_sample_seeds_make_each_row_depend_on_its_own_seed_only(case):
    method, opts = case.split(" over ")[0], _SEEDED[case]
    model, x = SmallCNN().eval(), _x(5, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 0, 1])
    seeds = torch.tensor([7, 3, 7, 11, 3])

    def run(xs, ts, ss, **kw):
        return ex.explain(model, xs, ts, method=method, sample_seeds=ss, **{"batch_size": 64, **kw}, **opts)
    full = run(x, t, seeds)
    # a row's map is the row explained alone with its seed (other batch shapes: float32 tolerance)
    for j in range(len(x)):
        _close(run(x[j:j + 1], t[j:j + 1], seeds[j:j + 1]), full[j:j + 1])
    _close(run(x, t, seeds, batch_size=2), full)                 # chunks of the batch
    _close(run(x.flip(0), t.flip(0), seeds.flip(0)), full.flip(0))  # positions in the batch
    # equal seeds give equal draws: the same input and target three times, seeds 5, 5, 6
    same = run(x[[0, 0, 0]], t[[0, 0, 0]], torch.tensor([5, 5, 6]))
    _close(same[1], same[0], atol=0, rtol=0)
    assert not torch.allclose(same[2], same[0])
    # sample_seeds replaces the generator: another generator changes nothing
    _close(run(x, t, seeds, generator=123), full, atol=0, rtol=0)


def test_sample_seeds_none_keeps_the_generator_stream_and_deterministic_methods_ignore_them():
    model, x = SmallCNN().eval(), _x(5, 2, 6, 6)
    # None: the generator's stream over the rows in order, as before (the random map is its uniforms)
    expected = torch.rand(5, 1, 6, 6, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    assert torch.equal(ex.explain(model, x, 0, method="random", generator=7, batch_size=2), expected.float())
    seeds = torch.arange(5)
    _close(ex.explain(model, x, 1, method="saliency", sample_seeds=seeds), ex.explain(model, x, 1, method="saliency"),
           atol=0, rtol=0)


def test_bad_sample_seeds_raise_naming_the_argument():
    model, x = SmallCNN().eval(), _x(5, 2, 6, 6)
    for bad, error in ((torch.zeros(5), TypeError), (torch.zeros(5, dtype=torch.bool), TypeError),
                       ([1, 2, 3, 4, 5], TypeError), (torch.zeros(4, dtype=torch.int64), ValueError),
                       (torch.zeros(5, 1, dtype=torch.int64), ValueError)):
        with pytest.raises(error, match="sample_seeds"):
            ex.explain(model, x, 0, method="smoothgrad", sample_seeds=bad)
    # int32 seeds are integers too
    ex.explain(model, x, 0, method="random", sample_seeds=torch.arange(5, dtype=torch.int32))


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
        ex.explain(model, x, 0, method="smoothgrad", generator=0, base="smoothgrad_sq")
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


# ------------------------------------------------------------------------------- bad input (issue #11, explain)
def _tiny() -> tuple[nn.Module, torch.Tensor]:
    """A Linear on 1×4×4 images with 3 classes, and 4 images."""
    return _linear(1, 4, 4, 3), _x(4, 1, 4, 4)


class _Logits(nn.Module):
    """A tiny Linear whose logits z on inputs x become fn(x, z)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.inner, self.fn = _linear(1, 4, 4, 3), fn

    def forward(self, x):
        return self.fn(x, self.inner(x))


@pytest.mark.parametrize("method", ["saliency", "integrated_gradients", "occlusion", "smoothgrad"])
def test_target_is_checked_against_the_model_width(method):
    model, x = _tiny()
    opts = {"generator": 0} if method == "smoothgrad" else {}
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\].* got \[7\] for sample\(s\) \[2\]"):
        ex.explain(model, x, torch.tensor([0, 1, 7, 2]), method=method, **opts)
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):
        ex.explain(model, x, 3, method=method, **opts)
    with pytest.raises(ValueError, match=r"target must hold class indices >= 0, got \[-1\] for sample\(s\) \[1\]"):
        ex.explain(model, x, torch.tensor([0, -1, 2, 2]), method=method, **opts)
    with pytest.raises(ValueError, match="target"):
        ex.explain(model, x, -1, method=method, **opts)
    assert ex.explain(model, x, 2, method=method, **opts).shape[0] == 4  # the last class is fine


def test_target_type_and_length():
    model, x = _tiny()
    for bad in (1.0, torch.zeros(4), torch.ones(4, dtype=torch.bool), "0", None):
        with pytest.raises(TypeError, match="target"):
            ex.explain(model, x, bad, method="saliency")
    for bad in (torch.zeros(3, dtype=torch.int64), torch.zeros(4, 1, dtype=torch.int64), 2**70):
        with pytest.raises(ValueError, match="target"):
            ex.explain(model, x, bad, method="saliency")
    import numpy as np  # an integer scalar of another library is an int
    _close(ex.explain(model, x, np.int64(1), method="saliency"), ex.explain(model, x, 1, method="saliency"))


def test_logit_checks_cost_no_forward_pass():
    """The target and logit checks read the method's own forward passes: saliency still makes one pass per input;
    random, which never calls the model, makes none."""
    model, x = _tiny()
    rows: list[int] = []
    handle = model.register_forward_hook(lambda _m, args, _out: rows.append(len(args[0])))
    try:
        ex.explain(model, x, 1, method="saliency", batch_size=3)
        assert rows == [3, 1]
        rows.clear()
        ex.explain(model, x, 1, method="random", generator=0)
        assert rows == []
    finally:
        handle.remove()
    assert not model._forward_hooks  # explain's own hook is gone


def test_x_rank_dtype_and_device_must_fit_the_model():
    model, x = _tiny()
    for bad in (torch.tensor(1.0), torch.randn(4)):
        with pytest.raises(ValueError, match=r"\bx must be a batch"):
            ex.explain(model, bad, 0, method="saliency")
    for bad in (x.double(), x.half()):
        with pytest.raises(TypeError, match=r"\bx has dtype .* model's parameters are torch.float32"):
            ex.explain(model, bad, 0, method="saliency")
    with pytest.raises(TypeError, match=r"dtype mismatch: x has dtype torch.int64 but model's parameters are "
                                        r"torch.float32.*forward_embeddings"):
        ex.explain(model, (x * 10).long(), 0, method="integrated_gradients")
    for bad in (x.to(torch.complex64), x > 0):
        with pytest.raises(TypeError, match=r"\bx must be a floating-point tensor"):
            ex.explain(model, bad, 0, method="saliency")
    with pytest.raises(ValueError, match="model is on meta but x is on cpu"):
        ex.explain(_linear(1, 4, 4, 3).to("meta"), x, 0, method="saliency")
    w = _weight_map(model, torch.zeros(4, dtype=torch.int64), x).double()
    _close(ex.explain(model.double(), x.double(), 0, method="gradient"), w)  # matching dtypes are fine


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_model_output_must_be_2d_floating_logits():
    _, x = _tiny()
    shape = r"model must return logits of shape \(N, n_classes\), got shape \(\d+,\)"
    for fn, error, message in ((lambda i, z: z[:, 0], ValueError, shape),
                               (lambda i, z: (z, z), TypeError, "model must return a tensor of logits"),
                               (lambda i, z: (z * 100).long(), TypeError, "model must return floating-point logits"),
                               (lambda i, z: z[:1], ValueError, r"got shape \(1, 3\) for \d+ inputs")):
        for method in ("saliency", "integrated_gradients", "guided_backprop", "occlusion"):
            with pytest.raises(error, match=message):
                ex.explain(_Logits(fn).eval(), x, 0, method=method)
    with pytest.raises(TypeError, match="model must return a tensor of logits"):  # a plain callable too
        ex.explain(lambda inputs: (inputs.flatten(1),), x, 0, method="saliency")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("method", ["saliency", "input_x_gradient", "guided_backprop", "integrated_gradients",
                                    "smoothgrad", "expected_gradients", "occlusion"])
def test_nan_logits_on_x_raise_naming_the_samples(method):
    _, x = _tiny()
    x[2, 0, 0, 0] = 50.0  # NaN logits wherever the first pixel exceeds 10: on sample 2, and near it
    model = _Logits(lambda i, z: torch.where(i.flatten(1)[:, :1] > 10, torch.nan, z)).eval()
    opts = {"smoothgrad": {"generator": 0, "stdevs": 0.5}, "random": {"generator": 0},
            "expected_gradients": {"generator": 0, "background": torch.zeros(1, 1, 4, 4), "n_samples": 8},
            }.get(method, {})
    if method == "random":  # never uses the model: the logits of sample 0 are checked (for the target range)
        assert torch.isfinite(ex.explain(model, x, 0, method=method, **opts)).all()
        x = x[[2, 0, 1, 3]]
    with pytest.raises(ValueError, match=r"model returned NaN or inf logits on x for sample\(s\) \[[02]\]") as err:
        ex.explain(model, x, 0, method=method, batch_size=2, **opts)  # sample 2 is the first of the second chunk
    assert method in str(err.value)
    inf = _Logits(lambda i, z: z - torch.inf).eval()
    every = r"\[0\]" if method == "random" else r"\[0, 1, 2, 3\]"
    with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) " + every):
        ex.explain(inf, x, 0, method=method, **opts)


def test_nan_logits_only_on_points_the_method_builds():
    model, x = _tiny()
    # NaN where all pixels are below -5: on IG's points next to a baseline of -10, never on x itself
    nan_low = _Logits(lambda i, z: torch.where((i.flatten(1) < -5).all(1, keepdim=True), torch.nan, z)).eval()
    with pytest.raises(ValueError, match=r"inputs that method 'integrated_gradients' built from sample\(s\) \[0, 1\]"):
        ex.explain(nan_low, x[:2], 0, method="integrated_gradients", baseline=-10.0, integration="riemann_left")
    assert torch.isfinite(ex.explain(nan_low, x[:2], 0, method="integrated_gradients", baseline=-1.0)).all()


def test_a_non_finite_map_raises_naming_the_method_and_the_samples():
    """Finite logits, infinite gradient: d sqrt|u| / du at u = 0 is inf·0 = NaN."""

    class Sqrt(nn.Module):
        def forward(self, x):
            return x.flatten(1).abs().sqrt()[:, :3]

    _, x = _tiny()
    x[1, 0, 0, 1] = 0.0
    with pytest.raises(ValueError, match=r"method 'gradient' produced a non-finite \(NaN or inf\) map for "
                                         r"sample\(s\) \[1\]"):
        ex.explain(Sqrt().eval(), x, 1, method="gradient", batch_size=1)
    assert torch.isfinite(ex.explain(Sqrt().eval(), x[[0, 2, 3]], 1, method="gradient")).all()  # no zero there


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_option_values_captum_would_assert_on_are_refused_up_front():
    model, x = _tiny()
    cases = [
        ("integrated_gradients", {"integration": "simpson"}, ValueError, "integration must be one of"),
        ("integrated_gradients", {"integration": "riemann_right", "n_steps": 1}, ValueError, "n_steps must be >= 2"),
        ("sg_sq_ig", {"integration": "simpson", "generator": 0}, ValueError, "integration"),
        ("occlusion", {"window": 5}, ValueError, r"window 5 is larger than the input \(4, 4\)"),
        ("occlusion", {"window": 2, "stride": 3}, ValueError, "stride 3 is larger than window 2"),
        ("occlusion", {"baseline": "black"}, TypeError, "baseline must be a real number"),
        ("occlusion", {"baseline": float("nan")}, ValueError, "baseline must be a number, got NaN"),
        ("smoothgrad", {"nt_samples": 0, "generator": 0}, ValueError, "nt_samples"),
        ("smoothgrad", {"nt_samples": -2, "generator": 0}, ValueError, "nt_samples"),
        ("smoothgrad", {"stdevs": "1", "generator": 0}, TypeError, "stdevs must be a real number"),
        ("smoothgrad", {"stdevs": None, "generator": 0}, TypeError, "stdevs"),
        ("smoothgrad", {"stdevs": -0.1, "generator": 0}, ValueError, "stdevs must be >= 0"),
        ("smoothgrad", {"stdevs": float("nan"), "generator": 0}, ValueError, "stdevs must be a number, got NaN"),
        ("smoothgrad_sq", {"stdevs": float("inf"), "generator": 0}, ValueError, "stdevs"),
        ("smoothgrad", {"n_step": 3, "generator": 0}, TypeError, r"unknown option\(s\) \['n_step'\] for SmoothGrad"),
        ("smoothgrad", {"baseline": 0.0, "generator": 0}, TypeError, r"\['baseline'\].*base 'saliency'"),
    ]
    for method, opts, error, message in cases:
        with pytest.raises(error, match=message):
            ex.explain(model, x, 0, method=method, **opts)
    # the limits themselves are fine: a window of the image's size, stride above it, n_steps = 1 for Gauss-Legendre
    assert torch.isfinite(ex.explain(model, x, 0, method="occlusion", window=4, stride=9)).all()
    assert torch.isfinite(ex.explain(model, x, 0, method="integrated_gradients", n_steps=1)).all()
    _close(ex.explain(model, x, 0, method="smoothgrad", generator=0, stdevs=torch.tensor(0.0)),
           ex.explain(model, x, 0, method="saliency"))


def test_non_finite_references_are_refused():
    model, x = _tiny()
    nan_row = torch.zeros_like(x)
    nan_row[3, 0, 1, 1] = torch.nan
    for baseline in (float("nan"), float("inf"), torch.full((1, 1, 4, 4), torch.inf), nan_row):
        for method, opts in (("integrated_gradients", {}), ("sg_sq_ig", {"generator": 0, "n_steps": 2})):
            with pytest.raises(ValueError, match=r"\bbaseline\b.*(NaN or inf|finite|NaN)"):
                ex.explain(model, x, 0, method=method, baseline=baseline, batch_size=2, **opts)
    one_inf = torch.zeros(2, 1, 4, 4).index_fill_(0, torch.tensor([1]), torch.inf)
    for background in (torch.full((2, 1, 4, 4), torch.nan), one_inf):
        with pytest.raises(ValueError, match=r"background contains NaN or inf"):
            ex.explain(model, x, 0, method="expected_gradients", generator=0, background=background)


def test_generator_seeds_torch_refuses_are_a_value_error():
    model, x = _tiny()
    for seed in (2**70, 2**64, -(2**63) - 1):
        for method in ("random", "smoothgrad", "saliency"):  # a non-random method checks a generator it is given
            with pytest.raises(ValueError, match=r"generator seed must lie in \[-2\*\*63, 2\*\*64 - 1\]"):
                ex.explain(model, x, 0, method=method, generator=seed)
    with pytest.raises(TypeError, match="generator"):
        ex.explain(model, x, 0, method="random", generator="seed")
    for seed in (-1, 2**64 - 1, -(2**63)):  # the ends of the range torch accepts
        assert ex.explain(model, x, 0, method="random", generator=seed).shape == (4, 1, 4, 4)
    assert torch.equal(ex.explain(model, x, 0, method="random", generator=-1),
                       ex.explain(model, x, 0, method="random", generator=torch.Generator().manual_seed(-1)))


def test_token_inputs_are_checked_too():
    model = BagOfEmbeddings().eval()
    tokens = torch.tensor([[1, 2, 3, 0], [4, 4, 5, 6]])
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 1\].* sample\(s\) \[1\]"):
        ex.explain(model, tokens, torch.tensor([0, 2]), method="integrated_gradients")
    with torch.no_grad():
        model.fc.weight[1, 0] = torch.nan
    with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) \[0, 1\]"):
        ex.explain(model, tokens, 0, method="gradient")


def test_vit_relevance_checks_its_rebuilt_logits():
    torch.manual_seed(0)
    vit = fl.models.build("vit", image_size=4, patch_size=2, in_channels=1, n_classes=3, dim=8, depth=1, heads=2).eval()
    x = _x(2, 1, 4, 4)
    for method in ("lrp", "conservative_lrp", "rollout"):
        with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):
            ex.explain(vit, x, torch.tensor([0, 3]), method=method)
    with pytest.raises(ValueError, match=r"target must hold classes in \[0, 2\]"):  # called directly, outside explain
        ex.relevance(vit, x, torch.tensor([0, 5]))
    with torch.no_grad():
        vit.head.bias[0] = torch.inf
    for method in ("lrp", "attcat", "conservative_lrp", "raw_attention"):
        with pytest.raises(ValueError, match=r"NaN or inf logits on x for sample\(s\) \[0, 1\]"):
            ex.explain(vit, x, 1, method=method)
    with pytest.raises(ValueError, match=r"NaN or inf logits for sample\(s\) \[0, 1\]"):
        ex.relevance(vit, x, torch.tensor([0, 1]))


def test_is_random_names_the_methods_that_draw():
    assert ex.is_random("smoothgrad") and ex.is_random("random")
    assert not ex.is_random("saliency") and not ex.is_random("gradcam")
    with pytest.raises(ValueError, match="not registered"):
        ex.is_random("no_such_method")


def test_explainer_binds_a_method_and_keys_a_random_one_to_the_samples():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).eval()
    x = torch.randn(6, 2, 4, 4)
    target = model(x).argmax(1)
    saliency = ex.explainer("saliency", batch_size=2)
    assert saliency.__name__ == "saliency"
    torch.testing.assert_close(saliency(model, x, target), ex.explain(model, x, target, method="saliency"))
    assert not saliency(model, x, target).requires_grad
    noisy = ex.explainer("random", seed=3)
    torch.testing.assert_close(noisy(model, x, target), ex.explain(model, x, target, method="random", generator=3))
    seeds = torch.arange(100, 106)
    whole = noisy(model, x, target, seeds=seeds)
    parts = torch.cat([noisy(model, x[:2], target[:2], seeds=seeds[:2]),
                       noisy(model, x[2:], target[2:], seeds=seeds[2:])])
    torch.testing.assert_close(parts, whole)  # evaluate's per-sample seeds: the batches do not change the maps
    assert not torch.equal(whole, noisy(model, x, target))
    with pytest.raises(ValueError, match="not registered"):
        ex.explainer("no_such_method")

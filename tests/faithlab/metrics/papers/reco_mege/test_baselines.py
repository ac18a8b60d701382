"""μF and S_avg (Bhatt et al., the baselines of ReCo/MeGe's paper; spec §4,
``faithlab.metrics.papers.reco_mege.baselines``): oracle cases, the subsets and neighbours keyed to the sample,
batch-size and split invariance, S_avg with common random numbers, and bad input."""

from __future__ import annotations

import pytest
import torch

import faithlab as fl
from oracles import Additive, small_cnn


# ------------------------------------------------------------------------------------------------------------- μF
def test_mu_fidelity_is_one_for_the_exact_linear_attribution():
    # xplique's oracle: f(x) = Σ x (logit), attribution = x, zero baseline → drop = Σ_S x_i exactly
    g = torch.Generator().manual_seed(0)
    x = torch.rand(6, 1, 8, 8, generator=g)
    model = Additive(torch.ones(1, 8, 8))
    mu = fl.metrics.mu_fidelity(model, x, x, target=torch.zeros(6, dtype=torch.int64), output="logit", n_subsets=50)
    assert torch.allclose(mu, torch.ones(6, dtype=torch.float64), atol=1e-6)
    rnd = fl.metrics.mu_fidelity(model, x, torch.rand(6, 1, 8, 8, generator=g),
                                 target=torch.zeros(6, dtype=torch.int64), output="logit", n_subsets=200, generator=1)
    assert abs(float(rnd.mean())) < 0.15


def test_mu_fidelity_subset_size_batch_invariance_and_spearman_option():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(2)
    x, a = torch.randn(40, 2, 8, 8, generator=g), torch.randn(40, 2, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    d1 = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=30, generator=5, batch_size=7)
    d2 = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=30, generator=5, batch_size=512)
    assert torch.allclose(d1["mu_f"], d2["mu_f"], atol=1e-6) and torch.allclose(d1["drops"], d2["drops"], atol=1e-6)
    # every subset removes round(0.15 · 64) = 10 pixels: with all-ones unit scores the sums are exactly 10 · 2 channels
    ones = fl.metrics.mu_fidelity_details(model, x, torch.ones_like(x), target=t, n_subsets=5, generator=5)
    assert torch.equal(ones["sums"], torch.full((40, 5), 20.0, dtype=torch.float64))
    assert torch.isnan(ones["mu_f"]).all()                  # constant sums: correlation undefined
    sp = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=30, generator=5, correlation="spearman")
    assert sp.shape == (40,) and not torch.allclose(sp, d1["mu_f"])


def test_mu_fidelity_is_keyed_to_the_sample_so_splitting_the_data_changes_nothing():
    """Issue 32: the subsets followed the sample's position in the call (sample 4: 0.149 over 8 images, 0.076 over
    the last 4). Now a slice evaluated with its global indices gives the whole call's rows, exactly; the same slice
    without them (indices 0…3, other streams) differs, so the check can fail; and every sample differs from the
    others (one stream per sample, not one shared draw)."""
    model = _OneAtATime(small_cnn(in_channels=1, side=8, n_classes=3))
    g = torch.Generator().manual_seed(4)
    x, a = torch.randn(40, 1, 8, 8, generator=g), torch.randn(40, 1, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    whole = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=12, generator=9, batch_size=64)
    for lo, hi in ((0, 5), (5, 37), (37, 40)):   # slices across the 32-sample draw blocks
        part = fl.metrics.mu_fidelity_details(model, x[lo:hi], a[lo:hi], target=t[lo:hi], n_subsets=12, generator=9,
                                              sample_index=torch.arange(lo, hi), batch_size=5)
        assert torch.equal(part["sums"], whole["sums"][lo:hi]) and torch.equal(part["mu_f"], whole["mu_f"][lo:hi])
    shifted = fl.metrics.mu_fidelity_details(model, x[5:37], a[5:37], target=t[5:37], n_subsets=12, generator=9)
    assert not torch.equal(shifted["sums"], whole["sums"][5:37])
    # the same image under two global indices gets two streams; under one index, one stream wherever it sits
    twice = fl.metrics.mu_fidelity_details(model, x[[3, 3]], a[[3, 3]], target=t[[3, 3]], n_subsets=12, generator=9,
                                           sample_index=torch.tensor([3, 8]))
    assert torch.equal(twice["sums"][0], whole["sums"][3]) and not torch.equal(twice["sums"][1], whole["sums"][3])
    with pytest.raises(ValueError, match="sample_index must have shape"):
        fl.metrics.mu_fidelity(model, x[:4], a[:4], target=t[:4], sample_index=torch.arange(3))
    with pytest.raises(TypeError, match="sample_index must be an integer"):
        fl.metrics.mu_fidelity(model, x[:4], a[:4], target=t[:4], sample_index=torch.arange(4.0))


class _OneAtATime(torch.nn.Module):
    """The wrapped model run on one input at a time: an input's logits do not depend on the batch it comes in."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net
        self.eval()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net(z[i:i + 1]) for i in range(z.shape[0])])


def test_mu_fidelity_reference_per_image_or_shared():
    # a (C, H, W) reference is shared by every image; a (B, C, H, W) one gives each image its own row
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(6)
    x, a = torch.randn(40, 2, 8, 8, generator=g), torch.randn(40, 2, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    ref = torch.randn(2, 8, 8, generator=g)
    shared = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=10, reference=ref)
    rows = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=10, reference=ref.expand(40, -1, -1, -1).clone())
    assert torch.allclose(shared, rows, atol=1e-6, equal_nan=True)
    # each image as its own reference: removal changes nothing, every drop is 0 (rows matched per block). The clean
    # pass batches 7 different images, the removals 7 copies of one or two images, the last chunks fewer: another
    # batch shape changes the CNN's matmul summation order, so its drops are 0 to float tolerance, not bitwise
    # (ULP-sized on an AVX2 CPU). Run one image at a time, the model sees the same shape in both passes: the drops
    # are exactly 0 there, so μF is undefined (constant drops).
    own = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=10, reference=x.clone(), batch_size=7)
    assert torch.allclose(own["drops"], torch.zeros_like(own["drops"]), rtol=0, atol=1e-6)
    exact = fl.metrics.mu_fidelity_details(_OneAtATime(model), x, a, target=t, n_subsets=10, reference=x.clone(),
                                           batch_size=7)
    assert torch.equal(exact["drops"], torch.zeros_like(exact["drops"])) and torch.isnan(exact["mu_f"]).all()


def test_mu_fidelity_nan_model_raises():
    class NaNModel(torch.nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], 2), float("nan"))
    x = torch.rand(2, 1, 4, 4)
    with pytest.raises(ValueError, match="(?i)non-finite|nan"):
        fl.metrics.mu_fidelity(NaNModel().eval(), x, x, target=torch.zeros(2, dtype=torch.int64))


def test_mu_fidelity_reads_the_prediction_when_target_is_none():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(11)
    x, a = torch.randn(12, 2, 8, 8, generator=g), torch.randn(12, 2, 8, 8, generator=g)
    with torch.no_grad():
        predicted = model(x).argmax(1)
    none = fl.metrics.mu_fidelity_details(model, x, a, n_subsets=9, generator=1, batch_size=5)
    given = fl.metrics.mu_fidelity_details(model, x, a, target=predicted, n_subsets=9, generator=1, batch_size=5)
    assert torch.equal(none["drops"], given["drops"]) and torch.equal(none["sums"], given["sums"])
    other = fl.metrics.mu_fidelity_details(model, x, a, target=(predicted + 1) % 3, n_subsets=9, generator=1)
    assert not torch.equal(other["drops"], none["drops"])


# ---------------------------------------------------------------------------------------------------------- S_avg
def test_average_stability_oracles():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 1, 6, 6, generator=g)
    t = torch.zeros(5, dtype=torch.int64)
    model = Additive(torch.ones(1, 6, 6))     # the explainers below ignore it
    const = fl.metrics.average_stability(model, x, explainer=lambda m, z, c: torch.ones_like(z), target=t)
    assert torch.equal(const, torch.zeros(5, dtype=torch.float64))
    # identity explainer: E‖u‖² = d · (r/d)² / 3 for u_i ~ U(−r/d, r/d)
    r, d = 0.1, 36
    ident = fl.metrics.average_stability_details(model, x.double(), explainer=lambda m, z, c: z.double(), target=t,
                                                 radius=r, n_neighbours=400)
    assert float(ident["s_avg"].mean()) == pytest.approx(r ** 2 / (3 * d), rel=0.05)
    # ‖u‖₁ ≤ r for every neighbour: the largest squared distance is at most d·(r/d)²
    assert float(ident["distances"].max()) <= d * (r / d) ** 2 + 1e-15


def test_average_stability_batch_size_invariant_and_bad_input():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.randn(9, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    t = torch.zeros(9, dtype=torch.int64)

    def explainer(m, z, c):
        return fl.explainers.explain(m, z, c, method="saliency")
    a = fl.metrics.average_stability(model, x, explainer=explainer, target=t, n_neighbours=6, batch_size=5,
                                     generator=3)
    b = fl.metrics.average_stability(model, x, explainer=explainer, target=t, n_neighbours=6, batch_size=64,
                                     generator=3)
    assert torch.allclose(a, b, rtol=1e-5)
    with pytest.raises(ValueError, match="radius"):
        fl.metrics.average_stability(model, x, explainer=explainer, target=t, radius=0)
    with pytest.raises(ValueError, match="radius must be a positive finite number"):  # not "x contains NaN or inf"
        fl.metrics.average_stability(model, x, explainer=explainer, target=t, radius=float("inf"))
    with pytest.raises(TypeError, match="explainer"):
        fl.metrics.average_stability(model, x, explainer="saliency", target=t)


# ----------------------------------------------------------------------------- S_avg with common random numbers
def _smooth_cnn() -> torch.nn.Module:
    """A seeded float64 conv net with a smooth activation (softplus): its gradient, hence SmoothGrad's map, changes
    smoothly with the input (a ReLU net's gradient is piecewise constant), so S_avg with common noise shrinks like
    radius². float64, so that even u_i ≈ 1e-6/128 is not lost in x + u."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.Softplus(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 8 * 8, 3))
    return net.double().eval()


def _smoothgrad(m: torch.nn.Module, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None):
    """SmoothGrad (8 noisy copies, σ = 0.3) as an S_avg explainer: seeds reach explain's sample_seeds."""
    return fl.explainers.explain(m, z, t, method="smoothgrad", generator=0, sample_seeds=seeds, nt_samples=8,
                                 stdevs=0.3)


def _images(b: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, 8, 8, generator=g, dtype=torch.float64), torch.randint(0, 3, (b,), generator=g)


def test_average_stability_with_common_noise_vanishes_with_the_radius():
    # with common random numbers g(x) and g(z) share SmoothGrad's noise, so ‖g(x) − g(z)‖² → 0 as z → x (like r²
    # for a smooth model); explained with fresh noise (the old call) S_avg stays at the Monte-Carlo level
    # E‖ĝ₁(x) − ĝ₂(x)‖² > 0 however small the radius
    model, (x, t) = _smooth_cnn(), _images(4, 5)
    radii = (1e-1, 1e-3, 1e-6)
    common = [float(fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, n_neighbours=8,
                                                 radius=r, generator=1).mean()) for r in radii]
    fresh = [float(fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, n_neighbours=8, radius=r,
                                                generator=1, common_noise=False).mean()) for r in radii]
    assert common[0] > common[1] > common[2] >= 0, common
    assert common[2] < 1e-6 * common[0], common
    assert min(fresh) > 0.5 * max(fresh), fresh           # the noise level, not a function of the radius
    assert fresh[2] > 1e3 * common[0], (fresh, common)    # and far above even the largest radius' common value


def test_average_stability_of_a_deterministic_explainer_is_the_same_with_common_noise():
    model, (x, t) = _smooth_cnn(), _images(5, 6)  # smooth: saliency changes within the radius (ReLU's would not)

    def saliency(m, z, c, seeds=None):
        return fl.explainers.explain(m, z, c, method="saliency", sample_seeds=seeds)
    kw = dict(target=t, n_neighbours=5, generator=2)
    common = fl.metrics.average_stability_details(model, x, explainer=saliency, **kw)
    fresh = fl.metrics.average_stability_details(model, x, explainer=saliency, common_noise=False, **kw)
    assert common["seeds"] is not None and common["seeds"].shape == (5,) and fresh["seeds"] is None
    assert torch.equal(common["s_avg"], fresh["s_avg"]) and bool((common["s_avg"] > 0).all())
    # an explainer that takes only (model, inputs, target) gets no seeds: common_noise cannot reach it
    two = fl.metrics.average_stability_details(model, x, explainer=lambda m, z, c: saliency(m, z, c), **kw)
    assert two["seeds"] is None and torch.equal(two["s_avg"], common["s_avg"])


def test_average_stability_with_common_noise_ignores_batch_size_and_splitting():
    # the model sees other batch shapes (1, 3, 256 inputs; two parts), which change float64 summation orders: maps
    # may differ by ~1e-16 relative, and S_avg, a squared difference of maps, by ‖g‖/‖g(x) − g(z)‖ times that (~1e-13
    # here; bitwise equal on our CPU); rtol 1e-9 leaves room and still catches a change of noise or neighbours
    model, (x, t) = _smooth_cnn(), _images(5, 7)

    def s_avg(lo: int = 0, hi: int = 5, **kw) -> torch.Tensor:
        return fl.metrics.average_stability(model, x[lo:hi], explainer=_smoothgrad, target=t[lo:hi], n_neighbours=4,
                                            generator=3, **kw)
    whole = s_avg(batch_size=256)
    assert bool((whole > 0).all())
    for bs in (1, 3):
        assert torch.allclose(s_avg(batch_size=bs), whole, rtol=1e-9, atol=0), bs
    k = 2
    parts = torch.cat([s_avg(0, k), s_avg(k, 5, sample_index=torch.arange(k, 5))])
    assert torch.allclose(parts, whole, rtol=1e-9, atol=0)
    # the global indices are what make parts add up: without them the second part reuses samples 0, 1, 2's keys
    alone = s_avg(k, 5)
    assert not torch.allclose(alone, whole[k:], rtol=1e-2, atol=0)


def test_average_stability_bad_common_noise_and_sample_index():
    (x, t), model = _images(3, 8), _smooth_cnn()
    with pytest.raises(TypeError, match="common_noise"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, common_noise="yes")
    with pytest.raises(ValueError, match="sample_index"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, sample_index=torch.arange(2))
    with pytest.raises(TypeError, match="sample_index"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, sample_index=torch.arange(3.0))
    with pytest.raises(ValueError, match="non-finite"):
        fl.metrics.average_stability(model, x, explainer=lambda m, z, c, seeds: torch.full_like(z, float("nan")),
                                     target=t, n_neighbours=2)


def test_average_stability_reads_the_prediction_and_takes_given_maps_of_x():
    model, (x, _) = _smooth_cnn(), _images(4, 9)
    with torch.no_grad():
        predicted = model(x).argmax(1)
    kw = dict(n_neighbours=3, generator=4)
    none = fl.metrics.average_stability_details(model, x, explainer=_smoothgrad, **kw)
    assert torch.equal(none["s_avg"], fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=predicted,
                                                                   **kw))
    # maps of x given: used as g(x). The explainer's own maps of x (with each sample's seed) give the same S_avg ...
    own = _smoothgrad(model, x, predicted, none["seeds"])
    assert torch.equal(fl.metrics.average_stability(model, x, own, explainer=_smoothgrad, **kw), none["s_avg"])
    # ... maps whose noise comes from elsewhere (one generator, as the study's maps for μF) bring that noise in:
    # why the study passes None
    elsewhere = fl.explainers.explain(model, x, predicted, method="smoothgrad", generator=0, nt_samples=8, stdevs=0.3)
    assert bool((fl.metrics.average_stability(model, x, elsewhere, explainer=_smoothgrad, **kw)
                 > 10 * none["s_avg"]).all())
    with pytest.raises(ValueError, match="attributions"):
        fl.metrics.average_stability(model, x, own[:3], explainer=_smoothgrad, **kw)
    with pytest.raises(ValueError, match="explainer returned maps of shape"):
        fl.metrics.average_stability(model, x, own[:, :1], explainer=_smoothgrad, **kw)

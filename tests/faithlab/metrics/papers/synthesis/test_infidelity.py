"""Explanation infidelity (Yeh et al., NeurIPS 2019) through captum: a linear oracle whose gradient is exactly
faithful, captum's own function called directly on the same keyed perturbations, the keyed randomness (batch size,
splits, generators, the number of perturbations), the jackknife standard error, the cost in forward passes (counted,
never timed), bad input, and the registry / fl.evaluate path."""

from __future__ import annotations

import math

import captum.metrics
import pytest
import torch
from oracles import nan_everywhere, nan_when_perturbed, small_cnn

import faithlab as fl
from faithlab.metrics.papers.synthesis import explanation_infidelity as mod
from faithlab.metrics.registry import METRICS

B, C, SIDE, K = 6, 2, 4, 3


def _linear(dtype=torch.float64):
    """Two-class linear model f(x) = W·flatten(x) + c, known weights; its logit's gradient is W[t]."""
    g = torch.Generator().manual_seed(11)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(C * SIDE * SIDE, 2))
    with torch.no_grad():
        net[1].weight.copy_(torch.randn(2, C * SIDE * SIDE, generator=g))
        net[1].bias.copy_(torch.tensor([0.3, -0.2]))
    return net.to(dtype).eval()


def _x(dtype=torch.float32, b=B):
    return torch.randn(b, C, SIDE, SIDE, generator=torch.Generator().manual_seed(3)).to(dtype)


def _cnn_case():
    model = small_cnn(in_channels=C, side=SIDE, n_classes=K)
    x = _x()
    a = torch.randn(B, C, SIDE, SIDE, generator=torch.Generator().manual_seed(4))
    return model, x, a


def _keyed(x, n, sigma, generator=0, sample_index=None):
    """The perturbations the metric documents, made here from the public key API: perturbation j of sample i is a
    standard normal (ndtri of the keyed uniforms) of stream j of sample i's n sub-streams, times σ; returns
    (I as the model sees it, x − I) each (B, n, ...)."""
    b = x.shape[0]
    seeds = fl.perturb.sample_seeds(generator, sample_index, b)
    streams = seeds.repeat_interleave(n)
    u = streams.uniform((b * n, *x.shape[1:]))
    noise = torch.special.ndtri(u.clamp_min(torch.finfo(torch.float64).tiny)) * sigma
    wide = x.double().repeat_interleave(n, dim=0)
    perturbed = (wide - noise).to(x.dtype)
    return (wide - perturbed.double()).view(b, n, *x.shape[1:]), perturbed.view(b, n, *x.shape[1:])


# ----------------------------------------------------------------------------------------------- the linear oracle
def test_a_linear_models_gradient_has_zero_infidelity_and_twice_it_the_hand_computed_error():
    model, x = _linear(), _x(torch.float64)
    t = model(x).argmax(1)
    w = model[1].weight[t].detach().view_as(x)  # the gradient of the target's logit
    n, sigma = 16, 0.5
    # normalize=True: captum's expanded form (Σb² − (Σab)²/Σa²)/n cancels to float64 rounding of E[b²] (~10 here)
    for normalize, atol in ((False, 1e-20), (True, 1e-12)):
        d = mod.infidelity_details(model, x, w, n_perturb_samples=n, noise_std=sigma, normalize=normalize)
        torch.testing.assert_close(d["score"], torch.zeros(B, dtype=torch.float64), rtol=0, atol=atol)
        assert torch.equal(d["target"], t)
    i, _ = _keyed(x, n, sigma)
    iw = (i.flatten(2) * w.flatten(1)[:, None]).sum(-1)  # Iᵀw (B, n), from the test's own perturbations
    twice = mod.infidelity_details(model, x, 2 * w, n_perturb_samples=n, noise_std=sigma, normalize=False)
    # (Iᵀ2w − (f(x) − f(x − I)))² = (2Iᵀw − Iᵀw)² = (Iᵀw)²
    torch.testing.assert_close(twice["score"], iw.pow(2).mean(1), rtol=1e-12, atol=0)
    assert bool((twice["score"] > 0).all())
    scaled = mod.infidelity_details(model, x, 2 * w, n_perturb_samples=n, noise_std=sigma)
    torch.testing.assert_close(scaled["score"], torch.zeros(B, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(scaled["beta"], torch.full((B,), 0.5, dtype=torch.float64))  # β absorbs the scale


def test_the_perturbations_are_gaussian_with_the_given_standard_deviation():
    """Iᵀw over many draws has mean 0 and variance σ²‖w‖² (independent of how the draws are made)."""
    model, x = _linear(), _x(torch.float64)
    w = model[1].weight[model(x).argmax(1)].detach().view_as(x)
    for sigma in (0.2, 0.05):
        d = mod.infidelity_details(model, x, w, n_perturb_samples=400, noise_std=sigma, normalize=False)
        z = d["dots"] / (sigma * w.flatten(1).norm(dim=1, keepdim=True))  # standard normal draws, B·400 of them
        assert abs(float(z.mean())) < 4 / math.sqrt(z.numel())
        assert abs(float(z.var()) - 1) < 0.1
        torch.testing.assert_close(d["drops"], d["dots"], rtol=1e-9, atol=1e-12)  # the linear model: b = Iᵀw


def test_maps_without_channels_or_with_one_count_for_every_channel():
    model, x, a = _cnn_case()
    flat = a[:, 0]
    expected = mod.infidelity(model, x, flat[:, None].expand_as(x).contiguous(), n_perturb_samples=5)
    torch.testing.assert_close(mod.infidelity(model, x, flat, n_perturb_samples=5), expected, rtol=0, atol=0)
    torch.testing.assert_close(mod.infidelity(model, x, flat[:, None], n_perturb_samples=5), expected, rtol=0, atol=0)


# ------------------------------------------------------------------------------------------- captum, called directly
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("output", ["logit", "prob"])
def test_equals_captums_infidelity_called_directly_on_the_same_perturbations(normalize, output):
    model, x, a = _cnn_case()
    n, sigma = 9, 0.3
    t = model(x).argmax(1)
    i, perturbed = _keyed(x, n, sigma, generator=7)

    def perturb_func(inputs):
        assert inputs.shape[0] == B * n  # one call: every perturbation of every sample
        return i.flatten(0, 1), perturbed.flatten(0, 1)

    def forward(z):
        logits = model(z).double()
        return logits.softmax(1) if output == "prob" else logits

    expected = captum.metrics.infidelity(forward, perturb_func, x, a.double(), target=t, n_perturb_samples=n,
                                         normalize=normalize)
    d = mod.infidelity_details(model, x, a, n_perturb_samples=n, noise_std=sigma, normalize=normalize, output=output,
                               generator=7, batch_size=64)  # one captum call, as above
    torch.testing.assert_close(d["score"], expected, rtol=1e-12, atol=1e-15)
    # the draws returned are the ones the score is made of: captum's formula on them gives its value
    a_, b_ = d["dots"], d["drops"]
    if normalize:
        beta = (a_ * b_).sum(1) / a_.pow(2).sum(1)
        torch.testing.assert_close(d["beta"], beta)
        by_hand = (beta[:, None] * a_ - b_).pow(2).mean(1)
    else:
        assert torch.equal(d["beta"], torch.ones(B, dtype=torch.float64))
        by_hand = (a_ - b_).pow(2).mean(1)
    torch.testing.assert_close(d["score"], by_hand, rtol=1e-9, atol=1e-14)


def test_captum_is_called_once_per_chunk_with_at_most_batch_size_perturbed_inputs_per_forward(monkeypatch):
    """The cost, counted (nothing is timed): B·n perturbed inputs in calls of at most batch_size, one captum call per
    chunk of samples, captum's own clean pass of each chunk, and the engine's one clean pass."""
    model, x, a = _cnn_case()
    calls, sizes = [], []
    real = captum.metrics.infidelity

    def counted_captum(*args, **kwargs):
        calls.append(kwargs["max_examples_per_batch"])
        return real(*args, **kwargs)

    class Counting(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, z):
            sizes.append(z.shape[0])
            return self.net(z)

    monkeypatch.setattr(captum.metrics, "infidelity", counted_captum)
    counting = Counting(model).eval()
    n = 8
    mod.infidelity(counting, x, a, n_perturb_samples=n, batch_size=16)  # 2 samples per chunk: 3 captum calls
    assert calls == [16, 16, 16]
    # the engine's clean pass (6), then per chunk captum's perturbed call (16) and its clean call (2)
    assert sizes == [6] + [16, 2] * 3 and sum(sizes) == B * n + 2 * B
    calls.clear(), sizes.clear()
    mod.infidelity(counting, x, a, n_perturb_samples=n, batch_size=3)  # n > batch size: one sample, 3 + 3 + 2
    assert calls == [3] * B
    assert sizes[:1] == [3] and sum(sizes) == B * n + B * 3 + B  # captum reads the clean sample once per forward
    assert max(sizes) <= 3


# ---------------------------------------------------------------------------------------------- keyed randomness
def test_batch_size_and_splits_change_nothing_and_generators_do():
    model, x, a = _cnn_case()
    kw = dict(n_perturb_samples=6, generator=5)
    whole = mod.infidelity_details(model, x, a, batch_size=64, **kw)
    one = mod.infidelity_details(model, x, a, batch_size=1, **kw)
    torch.testing.assert_close(one["dots"], whole["dots"], rtol=1e-13, atol=0)  # the same perturbations
    torch.testing.assert_close(one["score"], whole["score"], rtol=1e-5, atol=1e-9)  # the model's float rounding
    halves = [mod.infidelity_details(model, x[s], a[s], sample_index=torch.arange(B)[s], batch_size=64, **kw)
              for s in (slice(0, 3), slice(3, B))]
    for key in ("score", "mc_se", "dots"):
        torch.testing.assert_close(torch.cat([h[key] for h in halves]), whole[key], rtol=1e-5, atol=1e-9)
    unkeyed = mod.infidelity_details(model, x[3:], a[3:], batch_size=64, **kw)  # indices 0..2: other draws
    assert not torch.allclose(unkeyed["dots"], whole["dots"][3:])
    generator = mod.infidelity_details(model, x, a, batch_size=64, n_perturb_samples=6,
                                       generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(generator["score"], whole["score"], rtol=0, atol=0)
    other = mod.infidelity_details(model, x, a, batch_size=64, n_perturb_samples=6, generator=6)
    assert bool((other["score"] != whole["score"]).all()) and not torch.allclose(other["dots"], whole["dots"])


@pytest.mark.parametrize("rows", [1, 5, 7, 100])
def test_the_noise_blocks_change_no_draw(monkeypatch, rows):
    """The noise is drawn in blocks of rows fixed by the input's size (not by the chunks): blocks of 1, 5 or 7 rows,
    crossing the samples and captum's calls, give the draws of one block."""
    model, x, a = _cnn_case()
    whole = mod.infidelity_details(model, x, a, n_perturb_samples=6, batch_size=4)
    monkeypatch.setattr(mod, "_BLOCK_ELEMENTS", rows * x[0].numel())
    for batch_size in (4, 64):
        blocks = mod.infidelity_details(model, x, a, n_perturb_samples=6, batch_size=batch_size)
        torch.testing.assert_close(blocks["dots"], whole["dots"], rtol=1e-13, atol=0)
        torch.testing.assert_close(blocks["score"], whole["score"], rtol=1e-5, atol=1e-9)


def test_more_perturbations_extend_the_same_draws():
    """Perturbation j of a sample does not depend on how many are drawn: a budget that lowers n keeps the first."""
    model, x, a = _cnn_case()
    few = mod.infidelity_details(model, x, a, n_perturb_samples=4, batch_size=64)
    many = mod.infidelity_details(model, x, a, n_perturb_samples=10, batch_size=64)
    torch.testing.assert_close(many["dots"][:, :4], few["dots"], rtol=1e-13, atol=0)
    torch.testing.assert_close(many["drops"][:, :4], few["drops"], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------------------------ standard error
def _jackknife_by_hand(a, b, normalize):
    n = a.shape[1]
    loo = []
    for k in range(n):
        keep = [j for j in range(n) if j != k]
        ak, bk = a[:, keep], b[:, keep]
        if normalize:
            beta = (ak * bk).sum(1) / (ak * ak).sum(1)
            loo.append((beta[:, None] * ak - bk).pow(2).mean(1))
        else:
            loo.append((ak - bk).pow(2).mean(1))
    loo = torch.stack(loo, 1)
    return ((n - 1) / n * (loo - loo.mean(1, keepdim=True)).pow(2).sum(1)).sqrt()


@pytest.mark.parametrize("normalize", [True, False])
def test_mc_se_is_the_jackknife_over_the_perturbations(normalize):
    model, x, a = _cnn_case()
    d = mod.infidelity_details(model, x, a, n_perturb_samples=12, normalize=normalize)
    torch.testing.assert_close(d["mc_se"], _jackknife_by_hand(d["dots"], d["drops"], normalize))
    if not normalize:  # the jackknife of a mean is sd/√n
        sd = (d["dots"] - d["drops"]).pow(2).std(1) / math.sqrt(12)
        torch.testing.assert_close(d["mc_se"], sd)
    assert bool((d["mc_se"] > 0).all())


def test_mc_se_is_nan_where_the_perturbations_cannot_give_one():
    model, x, a = _cnn_case()
    assert mod.infidelity_details(model, x, a, n_perturb_samples=1, normalize=False)["mc_se"].isnan().all()
    assert mod.infidelity_details(model, x, a, n_perturb_samples=2, normalize=True)["mc_se"].isnan().all()
    assert mod.infidelity_details(model, x, a, n_perturb_samples=2, normalize=False)["mc_se"].isfinite().all()


# -------------------------------------------------------------------------------------------------------- errors
class _Spoilt(torch.nn.Module):
    def __init__(self, net, spoil):
        super().__init__()
        self.net, self.spoil = net, spoil

    def forward(self, z):
        return self.spoil(z, self.net(z))


@pytest.mark.parametrize("spoil", ["everywhere", "when perturbed"])
def test_a_model_returning_nan_raises(spoil):
    model, x, a = _cnn_case()
    fn = nan_everywhere if spoil == "everywhere" else nan_when_perturbed(x)
    with pytest.raises(ValueError, match="NaN"):
        mod.infidelity(_Spoilt(model, fn).eval(), x, a, n_perturb_samples=3)


@pytest.mark.parametrize("kw,exc,name", [
    (dict(n_perturb_samples=0), ValueError, "n_perturb_samples"),
    (dict(n_perturb_samples=2.5), ValueError, "n_perturb_samples"),
    (dict(noise_std=0.0), ValueError, "noise_std"),
    (dict(noise_std=math.inf), ValueError, "noise_std"),
    (dict(noise_std="big"), TypeError, "noise_std"),
    (dict(normalize="yes"), TypeError, "normalize"),
    (dict(output="softmax"), ValueError, "output"),
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(generator="seed"), TypeError, "generator"),
    (dict(generator=None), ValueError, "generator"),
    (dict(sample_index=torch.arange(B + 1)), ValueError, "sample_index"),
    (dict(sample_index=torch.zeros(B)), TypeError, "sample_index"),
    (dict(target=torch.zeros(B)), TypeError, "target"),
    (dict(target=torch.full((B,), K)), ValueError, "target"),
    (dict(target=torch.zeros(B - 1, dtype=torch.int64)), ValueError, "target"),
])
def test_bad_arguments_raise_naming_them(kw, exc, name):
    model, x, a = _cnn_case()
    with pytest.raises(exc, match=name):
        mod.infidelity(model, x, a, **{"n_perturb_samples": 2, **kw})


def test_bad_inputs_and_maps_raise_naming_them():
    model, x, a = _cnn_case()
    with pytest.raises(TypeError, match="x"):
        mod.infidelity(model, x.to(torch.int64), a)
    with pytest.raises(TypeError, match="x"):
        mod.infidelity(model, x.tolist(), a)
    with pytest.raises(ValueError, match="attributions"):
        mod.infidelity(model, x, a[:, :, :2])
    with pytest.raises(TypeError, match="attributions"):
        mod.infidelity(model, x, a.to(torch.complex64))
    with pytest.raises(ValueError, match="model"):
        mod.infidelity(model.train(), x, a)


# ---------------------------------------------------------------------------------------- registry, fl.evaluate
def test_registered_and_computed_by_evaluate_as_its_own_call():
    metric = METRICS["infidelity"]
    assert (metric.paper, metric.higher_is_better, metric.label) == ("synthesis", False, "INFD")
    assert fl.metrics.infidelity is mod.infidelity and fl.metrics.infidelity_details is mod.infidelity_details
    model, x, a = _cnn_case()
    y = torch.arange(B) % K
    maps = {"A": a, "B": a.abs().sum(1, keepdim=True)}
    frame = fl.evaluate(model, x, y, maps, metrics=["infidelity"], n_perturb_samples=5, seed=2, batch_size=8,
                        progress=False)
    assert set(frame["metric"]) == {"infidelity"} and len(frame) == 2 * B
    t = model(x).argmax(1)
    for who, m in maps.items():
        rows = frame[frame["explainer"] == who].sort_values("sample")
        d = mod.infidelity_details(model, x, m, target=t, n_perturb_samples=5, generator=2, batch_size=8)
        torch.testing.assert_close(torch.tensor(rows["score"].to_numpy()), d["score"], rtol=0, atol=0)
        torch.testing.assert_close(torch.tensor(rows["mc_se"].to_numpy()), d["mc_se"], rtol=0, atol=0)
    unscaled = fl.evaluate(model, x, y, maps, metrics=["infidelity"], n_perturb_samples=5, normalize=False,
                           progress=False)
    assert not frame["score"].to_numpy().tolist() == unscaled["score"].to_numpy().tolist()
    with pytest.raises(ValueError, match="noise_std"):
        fl.evaluate(model, x, y, maps, metrics=["infidelity"], noise_std=-1.0, progress=False)
    with pytest.raises(TypeError, match="normalize"):
        fl.evaluate(model, x, y, maps, metrics=["infidelity"], normalize=1, progress=False)

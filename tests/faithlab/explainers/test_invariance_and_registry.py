"""``faithlab.explainers.explain`` across methods: every CNN method independent of the batch size, per-row seeds
(``sample_seeds``), the ground-truth map and its degradation ξ, the lazy import, a user-registered explainer run with
its options, ``is_random`` and the ``explainer`` binder keyed to the samples."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import faithlab as fl
from explainer_nets import SmallCNN, assert_near, random_images
from faithlab import explainers as ex


# ------------------------------------------------------------------------------------------------ invariance
_OPTIONS = {
    "expected_gradients": {"background": random_images(3, 2, 6, 6, seed=11), "n_samples": 3},
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
    model, x = SmallCNN().eval(), random_images(5, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 0, 1])
    opts = dict(_OPTIONS.get(method, {}))
    if opts.get("baseline") == "tensor":
        opts["baseline"] = random_images(5, 2, 6, 6, seed=4)  # one baseline per input, sliced with the chunks
    big = ex.explain(model, x, t, method=method, batch_size=64, generator=3, **opts)
    small = ex.explain(model, x, t, method=method, batch_size=2, generator=3, **opts)
    assert_near(small, big, atol=1e-5, rtol=1e-4)
    assert big.abs().sum() > 0


# ------------------------------------------------------------------------------- per-row seeds (sample_seeds)
_SEEDED = {
    "smoothgrad": {"nt_samples": 3, "stdevs": 0.3},
    "smoothgrad_sq": {"nt_samples": 3, "base": "integrated_gradients", "n_steps": 4},
    "sg_sq_ig": {"nt_samples": 3, "n_steps": 4},
    "expected_gradients": {"background": random_images(3, 2, 6, 6, seed=11), "n_samples": 3},
    "random": {},
    "rise": {"n_masks": 6, "cell": 2},
    "smoothgrad over expected gradients": {"base": "expected_gradients",
                                           "background": random_images(3, 2, 6, 6, seed=11),
                                           "n_samples": 2, "nt_samples": 2},
}


@pytest.mark.parametrize("case", sorted(_SEEDED))
def test_sample_seeds_make_each_row_depend_on_its_own_seed_only(case):
    method, opts = case.split(" over ")[0], _SEEDED[case]
    model, x = SmallCNN().eval(), random_images(5, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 0, 1])
    seeds = torch.tensor([7, 3, 7, 11, 3])

    def run(xs, ts, ss, **kw):
        return ex.explain(model, xs, ts, method=method, sample_seeds=ss, **{"batch_size": 64, **kw}, **opts)
    full = run(x, t, seeds)
    # a row's map is the row explained alone with its seed (other batch shapes: float32 tolerance)
    for j in range(len(x)):
        assert_near(run(x[j:j + 1], t[j:j + 1], seeds[j:j + 1]), full[j:j + 1])
    assert_near(run(x, t, seeds, batch_size=2), full)                 # chunks of the batch
    assert_near(run(x.flip(0), t.flip(0), seeds.flip(0)), full.flip(0))  # positions in the batch
    # equal seeds give equal draws: the same input and target three times, seeds 5, 5, 6
    same = run(x[[0, 0, 0]], t[[0, 0, 0]], torch.tensor([5, 5, 6]))
    assert_near(same[1], same[0], atol=0, rtol=0)
    assert not torch.allclose(same[2], same[0])
    # sample_seeds replaces the generator: another generator changes nothing
    assert_near(run(x, t, seeds, generator=123), full, atol=0, rtol=0)


def test_sample_seeds_none_keeps_the_generator_stream_and_deterministic_methods_ignore_them():
    model, x = SmallCNN().eval(), random_images(5, 2, 6, 6)
    # None: the generator's stream over the rows in order, as before (the random map is its uniforms)
    expected = torch.rand(5, 1, 6, 6, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    assert torch.equal(ex.explain(model, x, 0, method="random", generator=7, batch_size=2), expected.float())
    seeds = torch.arange(5)
    assert_near(ex.explain(model, x, 1, method="saliency", sample_seeds=seeds),
                ex.explain(model, x, 1, method="saliency"), atol=0, rtol=0)


def test_bad_sample_seeds_raise_naming_the_argument():
    model, x = SmallCNN().eval(), random_images(5, 2, 6, 6)
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


def test_lazy_import():
    assert fl.explainers is ex


def test_user_registered_explainer_runs_through_explain_with_its_options():
    @ex.register("test_scaled_input", random=True)
    def _scaled_input(model, x, target, extra, *, batch_size, generator, scale: float = 1.0):
        return x * scale + ex.core.uniform(x.shape, generator, x.device).to(x.dtype) * 0

    model = nn.Sequential(nn.Flatten(), nn.Linear(18, 2)).eval()
    x = torch.rand(5, 2, 3, 3)
    assert "test_scaled_input" in ex.available()
    assert_near(ex.explain(model, x, 0, method="test_scaled_input", generator=0, scale=2.0, batch_size=2), 2 * x)
    with pytest.raises(ValueError, match="generator"):  # registered as random: a generator is required
        ex.explain(model, x, 0, method="test_scaled_input")
    with pytest.raises(TypeError, match="shift"):
        ex.explain(model, x, 0, method="test_scaled_input", generator=0, shift=1.0)
    with pytest.raises(ValueError, match="test_scaled_input"):
        ex.register("test_scaled_input")(_scaled_input)


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

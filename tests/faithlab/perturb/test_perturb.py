"""Tests of faithlab.perturb: oracle curves on additive models, identities, invariances, references, errors, removal
outputs with a sample index and ``evaluate_inputs``. The engine's sort, the inputs it builds, its read-outs and the
Removal runner are test_removal_engine.py's."""

from __future__ import annotations

import math

import pytest
import torch
from oracles import Additive, small_cnn

import faithlab as fl
from removal_fractions import FRACTIONS

P = fl.perturb


def expected_curve(unit_w, unit_s, fractions, how):
    """Closed form: total weight minus the weight of the first round(f·n) units of the order (pure Python)."""
    rows = []
    for b, (w, s) in enumerate(zip(unit_w.tolist(), unit_s.tolist())):
        n = len(w)
        if how == "morf":
            seq = sorted(range(n), key=lambda i: (-s[i], i))
        elif how == "lerf":
            seq = sorted(range(n), key=lambda i: (s[i], i))
        else:
            seq = how[b].tolist()
        rows.append([sum(w) - sum(w[i] for i in seq[:round(f * n)]) for f in fractions])
    return torch.tensor(rows, dtype=torch.float64)


def _case(kind: str):
    """(x, model, attributions, units, unit weights (B, n), unit scores (B, n)) for each kind of unit."""
    g = torch.Generator().manual_seed(1)
    ints = lambda *shape: torch.randint(0, 3, shape, generator=g).double()  # integer scores create ties
    if kind in ("pixel", "patch", "segment"):
        x = torch.ones(2, 2, 8, 8, dtype=torch.float64)
        w = torch.randn(2, 8, 8, generator=g, dtype=torch.float64)
        a = ints(2, 2, 8, 8) - 1
        pix_w, pix_s = w.sum(0), a.abs().sum(1)
        if kind == "pixel":
            return x, Additive(w), a, None, pix_w.flatten().expand(2, -1), pix_s.flatten(1)
        if kind == "patch":
            units = P.patch_units(x, 2)
            uw = pix_w.reshape(4, 2, 4, 2).sum((1, 3)).flatten().expand(2, -1)
            return x, Additive(w), a, units, uw, pix_s.reshape(2, 4, 2, 4, 2).sum((2, 4)).flatten(1)
        labels = torch.stack([torch.arange(64).view(8, 8) % 5, torch.arange(64).view(8, 8).T // 13]) * 2 + 1
        units = P.segment_units(labels)
        uw = torch.tensor([[pix_w[labels[b] == 2 * k + 1].sum() for k in range(5)] for b in range(2)])
        us = torch.tensor([[pix_s[b][labels[b] == 2 * k + 1].sum() for k in range(5)] for b in range(2)])
        return x, Additive(w), a, units, uw, us
    if kind == "time":
        x = torch.ones(2, 16, 3, dtype=torch.float64)
        w = torch.randn(16, 3, generator=g, dtype=torch.float64)
        a = ints(2, 16)
        return x, Additive(w), a, None, w.sum(1).expand(2, -1), a
    if kind == "token":
        x = torch.randint(1, 50, (2, 16), generator=g)
        w = torch.randn(16, generator=g, dtype=torch.float64)
        a = ints(2, 16, 4) - 1
        return x, Additive(w, tokens=True), a, None, w.expand(2, -1), a.abs().sum(2)
    x = torch.ones(2, 16, 4, dtype=torch.float64)  # embeddings
    w = torch.randn(16, 4, generator=g, dtype=torch.float64)
    a = ints(2, 16, 4)
    return x, Additive(w), a, P.token_units(x), w.sum(1).expand(2, -1), a.sum(2)


KINDS = ["pixel", "patch", "segment", "time", "token", "embedding"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["morf", "lerf", "given"])
def test_curve_matches_closed_form(kind, how):
    x, model, a, units, uw, us = _case(kind)
    n = uw.shape[1]
    if how == "given":
        g = torch.Generator().manual_seed(3)
        perm = torch.stack([torch.randperm(n, generator=g) for _ in range(2)])
        got = P.removal_curve(model, x, None, FRACTIONS, order=perm, output="logit", units=units)
        want = expected_curve(uw, us, FRACTIONS, perm)
        shared = P.removal_curve(model, x, None, FRACTIONS, order=perm[0], output="logit", units=units)
        torch.testing.assert_close(shared, expected_curve(uw, us, FRACTIONS, perm[[0, 0]]))
    else:
        got = P.removal_curve(model, x, a, FRACTIONS, order=how, output="logit", units=units)
        want = expected_curve(uw, us, FRACTIONS, how)
    torch.testing.assert_close(got, want)


def test_unit_scores_match_independent_aggregation():
    for kind in KINDS:
        x, _, a, units, _, us = _case(kind)
        torch.testing.assert_close(P.unit_scores(a, units or P.default_units(x), reduce="sum_abs"), us)


def test_deletion_morf_equals_insertion_lerf():
    """TRACE Thm 3.1: inserting the least relevant first (from the reference) mirrors deleting the most relevant."""
    g = torch.Generator().manual_seed(0)
    model = small_cnn()
    x = torch.randn(3, 2, 8, 8, generator=g)
    a = torch.randn(3, 2, 8, 8, generator=g)  # distinct scores: LeRF is exactly reversed MoRF
    units = P.patch_units(x, 2)
    fractions = torch.arange(17) / 16
    ref = P.make_reference(x, "channel_mean")
    with torch.no_grad():
        y = model(x).argmax(1)
    deletion = P.removal_curve(model, x, a, fractions, order="morf", reference=ref, target=y, units=units)
    baseline = torch.broadcast_to(ref, x.shape).clone()
    insertion = P.removal_curve(model, baseline, a, fractions, order="lerf", reference=x, target=y, units=units)
    torch.testing.assert_close(insertion, deletion.flip(1))
    assert deletion[:, 0].ne(deletion[:, -1]).all()  # the curve is not flat, so the identity is informative


def test_removal_outputs_additive_oracle_and_curve_agreement():
    x, model, a, _, uw, us = _case("pixel")
    g = torch.Generator().manual_seed(5)
    removed = torch.rand(2, 4, 64, generator=g) < 0.3
    got = P.removal_outputs(model, x, removed, output="logit", batch_size=3)
    torch.testing.assert_close(got, uw.sum(1, keepdim=True) - (removed * uw[:, None]).sum(2))
    single = P.removal_outputs(model, x, removed[:, 0], output="logit")
    torch.testing.assert_close(single, got[:, 0])
    ranks = P.ranks(P.order(us, "morf"))
    masks = torch.stack([ranks < round(f * 64) for f in FRACTIONS], dim=1)
    torch.testing.assert_close(P.removal_outputs(model, x, masks, output="logit"),
                               P.removal_curve(model, x, a, FRACTIONS, output="logit"))
    counts = torch.tensor([round(f * 64) for f in FRACTIONS])
    assert torch.equal(P.top_masks(ranks, counts), masks)


def test_masked_outputs_builds_masks_lazily_per_chunk():
    x, model, a, _, uw, us = _case("pixel")
    g = torch.Generator().manual_seed(6)
    removed = torch.rand(2, 7, 64, generator=g) < 0.4
    asked = []

    def masks(b0, b1, v0, v1):
        asked.append((b0, b1, v0, v1))
        return removed[b0:b1, v0:v1]

    got = P.masked_outputs(model, x, masks, n_variants=7, output="logit", batch_size=4)
    torch.testing.assert_close(got, uw.sum(1, keepdim=True) - (removed * uw[:, None]).sum(2))
    assert sum((b1 - b0) * (v1 - v0) for b0, b1, v0, v1 in asked) == 2 * 7  # every variant built exactly once
    assert max((b1 - b0) * (v1 - v0) for b0, b1, v0, v1 in asked) <= 4
    with pytest.raises(ValueError, match="masks"):
        P.masked_outputs(model, x, lambda b0, b1, v0, v1: removed[b0:b1, v0:v1, :10], n_variants=7)
    with pytest.raises(TypeError, match="masks"):
        P.masked_outputs(model, x, removed, n_variants=7)
    with pytest.raises(ValueError, match="n_variants"):
        P.masked_outputs(model, x, masks, n_variants=0)


def test_outputs_follow_their_formulas():
    model = small_cnn().double()
    x = torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 1])
    curve = lambda out, t=y: P.removal_curve(model, x, x.clone(), FRACTIONS, output=out, target=t)
    prob = curve("prob")
    pick = lambda z, t: z[torch.arange(len(t)), t]
    torch.testing.assert_close(prob, curve(lambda logits, t: pick(logits.log_softmax(1), t)).exp())
    torch.testing.assert_close(curve("logit"), curve(pick))
    assert torch.equal(curve("predicted"), curve(lambda logits, t: logits.argmax(1)))
    torch.testing.assert_close(curve("log_odds"), torch.log(prob / (1 - prob)))
    per_class = torch.stack([curve("prob", torch.full((4,), c)) for c in range(3)])
    assert torch.equal(curve("correct"), (per_class.argmax(0) == y[:, None]).double())
    assert torch.equal(curve("correct", None)[:, 0], torch.ones(4, dtype=torch.float64))  # None: clean prediction


def test_batch_size_invariance():
    g = torch.Generator().manual_seed(0)
    model = small_cnn()
    x, a = torch.randn(5, 2, 8, 8, generator=g), torch.randn(5, 2, 8, 8, generator=g)
    curves = [P.removal_curve(model, x, a, FRACTIONS, order="lerf", reference="blur", batch_size=bs, units=P.patch_units(x, 4))
              for bs in (1, 3, 1000)]
    removed = torch.rand(5, 3, 64, generator=g) < 0.5
    outs = [P.removal_outputs(model, x, removed, reference="mean", batch_size=bs) for bs in (1, 3, 1000)]
    for other_c, other_o in zip(curves[1:], outs[1:]):
        torch.testing.assert_close(other_c, curves[0], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(other_o, outs[0], rtol=1e-6, atol=1e-7)


def test_forward_calls_respect_batch_size():
    _, model, _, _, _, _ = _case("pixel")
    x, a = torch.ones(5, 2, 8, 8, dtype=torch.float64), torch.randn(5, 2, 8, 8, dtype=torch.float64)
    sizes = []
    counting = lambda z: (sizes.append(z.shape[0]), model(z))[1]  # plain callables are accepted too
    for bs, n_fractions in ((4, 6), (5, 6), (7, 2), (9, 3), (1000, 6)):
        sizes.clear()
        fractions = FRACTIONS[:n_fractions]
        P.removal_curve(counting, x, a, fractions, batch_size=bs)  # target=None: clean passes first
        n = 2 * 8 * 8
        counts = {round(f * n) for f in fractions}
        inner = len(counts - {0, n})  # the clean point is the prediction pass, the fully removed x its own pass
        assert max(sizes) <= bs and sum(sizes) == 5 + 5 * (n in counts) + 5 * inner
        n_calls = -(-5 * inner // bs)  # the perturbed inputs fill every call but the last
        perturbed = sizes[len(sizes) - n_calls:]
        assert all(size == bs for size in perturbed[:-1]) and sum(perturbed) == 5 * inner


def test_seeded_randomness_is_reproducible_and_seed_dependent():
    cand = torch.rand(4, 50, generator=torch.Generator().manual_seed(0)) < 0.6
    scores = torch.zeros(4, 50)
    x, model, _, _, _, _ = _case("pixel")
    draws = {
        "order": lambda s: P.order(scores, "random", generator=torch.Generator().manual_seed(s)),
        "ties": lambda s: P.order(scores, "morf", generator=s, ties="random"),
        "curve": lambda s: P.removal_curve(model, x, None, FRACTIONS, order="random", output="logit", generator=s),
        "bernoulli": lambda s: P.bernoulli_subset(cand, 0.5, generator=s, n_samples=2),
        "exact": lambda s: P.exact_subset(cand, 7, generator=s, n_samples=2),
        "uniform": lambda s: P.uniform_fraction_mask(4, 50, 0.5, generator=s),
    }
    for name, draw in draws.items():
        assert torch.equal(draw(0), draw(0)), name
        assert not torch.equal(draw(0), draw(1)), name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cpu_generator_gives_same_results_on_gpu():
    x, model, a, _, _, _ = _case("pixel")
    cand = torch.rand(3, 64, generator=torch.Generator().manual_seed(0)) < 0.5
    cpu = [P.removal_curve(model, x, a, FRACTIONS, order="random", generator=7),
           P.bernoulli_subset(cand, 0.3, generator=7, n_samples=4),
           P.exact_subset(cand, 5, generator=7, n_samples=4),
           P.order(a.flatten(1)[:, :64], "lerf", generator=7, ties="random")]
    gpu_model = Additive(model.w.cuda())
    gpu = [P.removal_curve(gpu_model, x.cuda(), a.cuda(), FRACTIONS, order="random", generator=7),
           P.bernoulli_subset(cand.cuda(), 0.3, generator=7, n_samples=4),
           P.exact_subset(cand.cuda(), 5, generator=7, n_samples=4),
           P.order(a.flatten(1)[:, :64].cuda(), "lerf", generator=7, ties="random")]
    for c, g in zip(cpu, gpu):
        torch.testing.assert_close(g.cpu(), c)


def test_tie_breaking_lower_index_first():
    s = torch.tensor([[1.0, 3.0, 3.0, 0.0, 3.0, 1.0]])
    assert P.order(s, "morf").tolist() == [[1, 2, 4, 0, 5, 3]]
    assert P.order(s, "lerf").tolist() == [[3, 0, 5, 1, 2, 4]]
    random_ties = P.order(s, "morf", generator=0, ties="random")[0]
    assert sorted(random_ties[:3].tolist()) == [1, 2, 4] and sorted(random_ties[3:5].tolist()) == [0, 5]
    seen = {tuple(P.order(s, "morf", generator=k, ties="random")[0, :3].tolist()) for k in range(20)}
    assert len(seen) > 1


def test_references_on_hand_built_tensors():
    x = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]], [[10.0, 20.0], [30.0, 40.0]]]])
    assert P.make_reference(x, "mean").item() == 13.75
    assert P.make_reference(x, "channel_mean").flatten().tolist() == [2.5, 25.0]
    assert P.make_reference(x, "zero").shape == (1, 1, 1, 1) and P.make_reference(x, "zero").item() == 0
    series = torch.tensor([[[1.0, 4.0], [2.0, 5.0], [3.0, 9.0]]])
    assert P.make_reference(series, "channel_mean").flatten().tolist() == [2.0, 6.0]
    const = torch.full((2, 3, 4, 5), 0.7, dtype=torch.float64)
    for k, s in ((3, 1.0), (31, 56.0)):  # 31 > 2·size: the reflection wraps several times
        torch.testing.assert_close(P.make_reference(const, "blur", kernel_size=k, sigma=s), const)
    removed = torch.tensor([[True, False, False, True]])
    ids = torch.tensor([[5, 6, 7, 8]])
    assert P.apply_removal(ids, removed, P.token_units(ids), reference=99).tolist() == [[99, 6, 7, 99]]
    img = P.apply_removal(x, removed, P.pixel_units(x), reference="channel_mean")
    assert img[0, :, 0, 0].tolist() == [2.5, 25.0] and img[0, :, 1, 1].tolist() == [2.5, 25.0]
    assert img[0, :, 0, 1].tolist() == [2.0, 20.0]


def test_blur_matches_scipy():
    """scipy's "mirror" mode is torch's reflect padding; kernel 21 on a 9×7 image needs repeated reflection."""
    ndimage = pytest.importorskip("scipy.ndimage")
    x = torch.randn(2, 3, 9, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for k, sigma in ((3, 0.8), (5, 2.0), (21, 4.0)):
        t = torch.arange(k, dtype=torch.float64) - k // 2
        w = torch.exp(-0.5 * (t / sigma) ** 2)
        w = (w / w.sum()).numpy()
        want = ndimage.correlate1d(ndimage.correlate1d(x.numpy(), w, axis=2, mode="mirror"), w, axis=3, mode="mirror")
        torch.testing.assert_close(P.make_reference(x, "blur", kernel_size=k, sigma=sigma), torch.from_numpy(want))


def test_unit_scores_reduce_rules():
    a = torch.tensor([[[[1.0, -2.0, 0.0, 4.0], [3.0, 0.0, 1.0, 1.0]], [[-1.0, 2.0, 2.0, -8.0], [1.0, 1.0, 0.0, 1.0]]]])
    units = P.patch_units(torch.zeros(1, 2, 2, 4), 2)  # unit 0 = columns 0-1, unit 1 = columns 2-3
    want = {"sum_abs": [11.0, 17.0], "sum": [5.0, 1.0], "mean_abs": [11 / 8, 17 / 8], "mean": [5 / 8, 1 / 8],
            "max": [3.0, 4.0]}
    for reduce, values in want.items():
        assert P.unit_scores(a, units, reduce=reduce).flatten().tolist() == values, reduce
    assert P.unit_scores(a.sum(1), units, reduce="sum").flatten().tolist() == [5.0, 1.0]  # (B, H, W) maps


def test_segment_units_relabel_and_patch_layout():
    units = P.segment_units(torch.tensor([[[3, 3, 7], [7, 9, 9]], [[1, 2, 2], [5, 5, 5]]]))
    assert units.n == 3 and units.index.shape == (2, 1, 2, 3)
    assert units.index[:, 0].tolist() == [[[0, 0, 1], [1, 2, 2]], [[0, 1, 1], [2, 2, 2]]]
    patches = P.patch_units(torch.zeros(1, 1, 4, 6), 2)
    assert patches.n == 6 and patches.index[0, 0, :, ::2].tolist() == [[0, 1, 2], [0, 1, 2], [3, 4, 5], [3, 4, 5]]


def test_exact_and_bernoulli_subsets():
    g = torch.Generator().manual_seed(0)
    cand = torch.rand(3, 40, generator=g) < 0.5
    count = torch.tensor([0, 3, int(cand[2].sum())])
    pick = P.exact_subset(cand, count, generator=1, n_samples=500)
    assert pick.shape == (3, 500, 40)
    assert torch.equal(pick.sum(-1), count[:, None].expand(3, 500))
    assert not (pick & ~cand[:, None]).any()
    freq = pick[1].double().mean(0)[cand[1]]  # each candidate picked with probability 3/|candidates|
    assert torch.allclose(freq, torch.full_like(freq, 3 / cand[1].sum().item()), atol=0.06)
    many = torch.ones(2, 20000, dtype=torch.bool)
    many[:, ::2] = False
    kept = P.bernoulli_subset(many, torch.tensor([0.1, 0.7]), generator=2)
    assert not (kept & ~many).any()
    assert torch.allclose(kept.sum(1) / 10000.0, torch.tensor([0.1, 0.7]), atol=0.02)


@pytest.mark.parametrize("n", [1, 2, 7, 300])
def test_subsets_by_partial_selection_equal_the_full_sort(n):
    """uniform_fraction_mask keeps each row's ``count`` smallest random keys, found by a partial
    selection from either end; a full sort of the same keys (the definition) must give the same set, for per-row
    counts from 0 to n, 2-D and 3-D keys; with ties at the threshold the count must still be exact."""
    from faithlab.perturb.sampling import _smallest_keys

    def by_sort(keys, count):
        flat = keys.reshape(-1, n)
        return (P.ranks(flat.argsort(dim=-1)).view(keys.shape) < count)

    g = torch.Generator().manual_seed(n)
    ends = 0
    for _ in range(60):
        keys = torch.rand(5, 3, n, dtype=torch.float64, generator=g)
        count = torch.randint(0, n + 1, (5, 1, 1), generator=g)
        ends += int(count.max()) <= n - int(count.min()) + 1
        assert torch.equal(_smallest_keys(keys, count), by_sort(keys, count))
        assert torch.equal(_smallest_keys(keys[:, 0], count[:, 0]), by_sort(keys[:, 0], count[:, 0]))
        tied = (keys * 2).floor()  # two values: ties at almost every threshold
        assert torch.equal(_smallest_keys(tied, count).sum(-1, keepdim=True), count.expand(5, 3, 1))
    assert 0 < ends < 60 or n <= 2  # both ends of the selection were used


def test_uniform_fraction_mask():
    m = P.uniform_fraction_mask(4000, 50, 0.2, generator=0)
    counts = m.sum(1)
    assert counts.max() <= 10 and counts.min() == 0
    assert abs(counts.double().mean().item() - 4.5) < 0.2  # E⌊u·50⌋ for u ~ U(0, 0.2) = 4.5
    assert abs(m.double().mean(0) - 4.5 / 50).max() < 0.03  # positions chosen uniformly


def test_errors_name_the_argument():
    model = small_cnn()
    x = torch.randn(2, 2, 8, 8)
    a = torch.randn(2, 2, 8, 8)
    nan = a.clone()
    nan[0, 0, 0, 0] = math.nan
    cases = [
        ("attributions", lambda: P.removal_curve(model, x, nan, [0.5])),
        ("attributions", lambda: P.removal_curve(model, x, a[..., :4], [0.5])),
        ("attributions", lambda: P.unit_scores(a.to("meta"), P.pixel_units(x), reduce="sum")),
        ("fractions", lambda: P.removal_curve(model, x, a, [0.0, 1.2])),
        ("model", lambda: P.removal_curve(small_cnn().train(), x, a, [0.5])),
        ("patch_size", lambda: P.patch_units(x, 3)),
        ("count", lambda: P.exact_subset(torch.tensor([[True, False, True]]), 3, generator=0)),
        ("x", lambda: P.removal_curve(model, x[:0], a[:0], [0.5])),
        ("order", lambda: P.removal_curve(model, x, a, [0.5], order="top")),
        ("order", lambda: P.removal_curve(model, x, None, [0.5], order=torch.zeros(64).long())),
        ("generator", lambda: P.removal_curve(model, x, None, [0.5], order="random")),
        ("output", lambda: P.removal_curve(model, x, a, [0.5], output="probability")),
        ("output", lambda: P.removal_curve(model, x, a, [0.5], output=lambda logits, t: logits[..., None])),
        ("output", lambda: P.removal_curve(model, x, a, [0.5], output=lambda logits, t: logits.sum())),
        ("x", lambda: P.removal_curve(model, x * math.nan, a, [0.5])),
        ("target", lambda: P.removal_curve(model, x, a, [0.5], target=torch.tensor([0, 7]))),
        ("reference", lambda: P.removal_curve(model, x, a, [0.5], reference="median")),
        ("reference", lambda: P.make_reference(torch.randn(2, 5, 3), "blur")),
        ("kernel_size", lambda: P.make_reference(x, "blur", kernel_size=4)),
        ("batch_size", lambda: P.removal_curve(model, x, a, [0.5], batch_size=0)),
        ("removed", lambda: P.removal_outputs(model, x, torch.zeros(2, 10, dtype=torch.bool))),
        ("reduce", lambda: P.unit_scores(a, P.pixel_units(x), reduce="median")),
        ("rate", lambda: P.bernoulli_subset(torch.ones(2, 3, dtype=torch.bool), 1.5, generator=0)),
        ("max_fraction", lambda: P.uniform_fraction_mask(2, 5, -0.1, generator=0)),
        ("labels", lambda: P.segment_units(torch.tensor([[[0, 1]], [[0, 0]]]))),
        ("units", lambda: P.removal_curve(model, x, a, [0.5], units=P.patch_units(torch.zeros(1, 1, 4, 4), 2))),
    ]
    for name, call in cases:
        with pytest.raises((ValueError, TypeError), match=name):
            call()


def test_removal_outputs_with_a_sample_index_equals_gathered_inputs():
    perturb = fl.perturb
    net = small_cnn(2, 6, 3)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 2, 6, 6, generator=g)
    sample = torch.tensor([3, 0, 0, 2, 3, 3, 1])
    removed = torch.rand(7, 36, generator=g) < 0.4
    y = torch.tensor([2, 1, 0, 1])
    units = perturb.pixel_units(x)
    for reference in ("zero", "mean", "blur"):
        gathered = perturb.removal_outputs(net, x[sample], removed, units=units, reference=reference,
                                           target=y[sample])
        for size in (3, 100):
            out = perturb.removal_outputs(net, x, removed, units=units, reference=reference, target=y,
                                          sample=sample, batch_size=size)
            torch.testing.assert_close(out, gathered)
    predicted = perturb.removal_outputs(net, x, removed, units=units, sample=sample)
    torch.testing.assert_close(predicted, perturb.removal_outputs(net, x[sample], removed, units=units,
                                                                  target=net(x).argmax(1)[sample]))
    with pytest.raises(ValueError, match="sample"):
        perturb.removal_outputs(net, x, removed, units=units, sample=sample + 1)
    with pytest.raises(ValueError, match="sample"):
        perturb.removal_outputs(net, x, removed, units=units, sample=sample[:3])
    with pytest.raises(TypeError, match="sample"):
        perturb.removal_outputs(net, x, removed, units=units, sample=sample.float())


def test_evaluate_inputs_reads_generated_inputs_like_direct_calls_in_any_chunking():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(3, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    shifts = torch.linspace(-1, 1, 5)

    def inputs(b0, b1, v0, v1):
        return x[b0:b1, None] + shifts[v0:v1].view(1, -1, 1, 1, 1)

    target = torch.tensor([0, 2, 1])
    with torch.no_grad():
        direct = torch.stack([model(x + s).softmax(1).gather(1, target[:, None])[:, 0] for s in shifts], dim=1)
    for bs in (1, 4, 100):
        got = fl.perturb.evaluate_inputs(model, inputs, n_samples=3, n_variants=5, target=target, batch_size=bs)
        torch.testing.assert_close(got, direct, atol=1e-6, rtol=0)
    spread = fl.perturb.evaluate_inputs(model, inputs, n_samples=3, n_variants=5,
                                     output=lambda logits, _: logits.softmax(1).amax(1))
    assert spread.shape == (3, 5)


def test_evaluate_inputs_refuses_missing_targets_bad_shapes_and_nan():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(2, 2, 8, 8)
    with pytest.raises(ValueError, match="target"):
        fl.perturb.evaluate_inputs(model, lambda b0, b1, v0, v1: x[b0:b1, None], n_samples=2, n_variants=1)
    with pytest.raises(ValueError, match="must return a tensor of shape"):
        fl.perturb.evaluate_inputs(model, lambda b0, b1, v0, v1: x[b0:b1], n_samples=2, n_variants=1,
                                target=torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match="NaN"):
        fl.perturb.evaluate_inputs(model, lambda b0, b1, v0, v1: torch.full((b1 - b0, v1 - v0, 2, 8, 8), float("nan")),
                                n_samples=2, n_variants=3, target=torch.zeros(2, dtype=torch.int64))

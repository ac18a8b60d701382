"""Oracle, invariance and error tests for faithlab.metrics.papers.ffidelity (F-Fidelity, spec §1)."""

from __future__ import annotations

import math

import pytest
import torch
from oracles import Gated

import faithlab as fl
from faithlab.metrics.papers import ffidelity as fd

H = W = 8
N = H * W
D = 16  # "digit" pixels: the first D pixels in row-major order
M = 6   # the oracle is correct iff fewer than M digit pixels are removed


def Oracle(m: int = M) -> Gated:
    """Correct (class 0) iff fewer than m of the D digit pixels are removed; input = presence indicators."""
    return Gated((torch.arange(N) < D).view(1, H, W), m)


def _setup(b: int = 2):
    model = Oracle().eval()
    x = torch.ones(b, 1, H, W)
    y = torch.zeros(b, dtype=torch.long)
    # digit pixels scored above background; background scores descend so ties never matter
    attr = torch.cat([torch.full((D,), 10.0), torch.linspace(5, 1, N - D)]).view(1, H, W).expand(b, H, W)
    return model, x, y, attr


def _binom_ge(k: int, p: float, m: int) -> float:
    return sum(math.comb(k, i) * p ** i * (1 - p) ** (k - i) for i in range(m, k + 1))


def _hyper_ge(pop: int, good: int, draws: int, m: int) -> float:
    return sum(math.comb(good, i) * math.comb(pop - good, draws - i) for i in range(m, min(good, draws) + 1)) \
        / math.comb(pop, draws)


def _expected(plus: bool, s: float, alpha: float, beta: float | None, exact: bool) -> float:
    """Closed form of Fid± / RFid± / FFid± for the oracle: P(at least M digit pixels removed)."""
    k = round(s * N)
    size = k if plus else N - k
    digit_in_r = min(k, D) if plus else max(0, D - k)
    if size == 0:
        return 0.0
    if exact:
        c = round(alpha * size)
        if beta is not None:
            c = min(c, math.floor(beta * N))
        return _hyper_ge(size, digit_in_r, c, M)
    rate = alpha if beta is None else min(alpha, beta * N / size)
    return _binom_ge(digit_in_r, rate, M)


SPARSITY = [0.05, 0.1, 0.2, 0.25, 0.4, 0.6, 0.8, 0.95]


@pytest.mark.parametrize("fn,plus", [(fd.fid_plus, True), (fd.fid_minus, False)])
def test_plain_fidelity_matches_closed_form(fn, plus):
    model, x, y, attr = _setup()
    got = fn(model, x, attr, target=y, sparsity=SPARSITY)
    want = torch.tensor([_expected(plus, s, 1.0, None, False) for s in SPARSITY]).expand(2, -1)
    assert torch.equal(got, want)
    # Fid+ of removing all digits is 1 and keeping only the background gives Fid- = 1 at small s
    assert got[0, -1].item() == (1.0 if plus else 0.0) and got[0, 0].item() == (0.0 if plus else 1.0)


@pytest.mark.parametrize("plus", [True, False])
@pytest.mark.parametrize("alpha,beta,sampling", [(0.5, None, "bernoulli"), (0.5, 0.1, "bernoulli"),
                                                  (0.5, 0.1, "exact"), (0.7, 0.2, "exact")])
def test_monte_carlo_converges_to_expectation(plus, alpha, beta, sampling):
    model, x, y, attr = _setup(b=4)
    fn = fd.fid_plus if plus else fd.fid_minus
    got = fn(model, x, attr, target=y, sparsity=SPARSITY, alpha=alpha, beta=beta, n_samples=600,
             sampling=sampling, generator=0, batch_size=4096).mean(dim=0)
    want = torch.tensor([_expected(plus, s, alpha, beta, sampling == "exact") for s in SPARSITY])
    assert (got - want).abs().max().item() < 0.04, (got, want)
    # the curve is not trivially flat (FFid− is near 0 by design: βn removals rarely hit M digit pixels)
    assert (want.max() - want.min()).item() > (0.3 if plus or beta is None else 0.0)


def test_alpha_one_equals_plain_fidelity_even_with_samples():
    model, x, y, attr = _setup()
    plain = fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY)
    assert torch.equal(fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, alpha=1.0, n_samples=7,
                                   generator=3), plain)
    # beta large enough never caps: still plain Fid−
    assert torch.equal(fd.fid_minus(model, x, attr, target=y, sparsity=SPARSITY, beta=1.0, n_samples=3,
                                    generator=1),
                       fd.fid_minus(model, x, attr, target=y, sparsity=SPARSITY))


def test_probability_form_and_misclassified_samples():
    model, x, y, attr = _setup()
    y = torch.tensor([0, 1])  # sample 1 is misclassified on the clean input
    acc = fd.fid_plus(model, x, attr, target=y, sparsity=[0.5])
    assert acc.flatten().tolist() == [1.0, -1.0]  # removing the digit flips the prediction to class 1
    prob = fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], output="prob")
    p1 = torch.softmax(torch.tensor([1.0, 0.0]), 0)[0].item()
    assert prob.flatten().tolist() == pytest.approx([p1 - (1 - p1), (1 - p1) - p1])


def test_batch_size_and_seed_invariance():
    model, x, y, attr = _setup(b=5)
    kw = dict(alpha=0.5, beta=0.1, n_samples=9, generator=11)
    ref = fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, batch_size=1000, **kw)
    for bs in (1, 7, 64):
        assert torch.equal(fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, batch_size=bs, **kw), ref)
    assert torch.equal(fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, **kw), ref)
    assert torch.equal(fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY,
                                   generator=torch.Generator().manual_seed(11),
                                   **{k: v for k, v in kw.items() if k != "generator"}), ref)
    other = fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, alpha=0.5, beta=0.1, n_samples=9,
                        generator=12)
    assert not torch.equal(other, ref)


@pytest.mark.parametrize("sampling", ["bernoulli", "exact"])
def test_masks_are_drawn_per_block_of_samples_with_the_scores_of_one_draw(monkeypatch, sampling):
    """RFid/FFid masks are drawn where the chunks use them, a block of samples at a time (perturb.drawn_in_blocks):
    the sampler never sees more than a block's rows, and the scores are bitwise those of one draw over all samples,
    at any batch size."""
    model, x, y, attr = _setup(b=5)
    kw = dict(sparsity=SPARSITY, alpha=0.5, beta=0.1, n_samples=9, generator=11, sampling=sampling, ties="random",
              output="prob")
    whole = {fn: fn(model, x, attr, target=y, batch_size=1000, **kw) for fn in (fd.fid_plus, fd.fid_minus)}
    rows = []
    name = "bernoulli_rows" if sampling == "bernoulli" else "exact_rows"
    real = getattr(fl.perturb, name)

    def recorded(*args, **kwargs):  # the rows each block asks of the sampler
        draw = real(*args, **kwargs)
        return lambda r0, r1: rows.append(r1 - r0) or draw(r0, r1)

    monkeypatch.setattr(fl.perturb, name, recorded)
    monkeypatch.setattr(fl.perturb.sampling, "_DRAWN_UNITS", 2 * len(SPARSITY) * 9 * N)  # two samples a block
    for bs in (1, 7, 64):
        rows.clear()
        for fn in (fd.fid_plus, fd.fid_minus):
            assert torch.equal(fn(model, x, attr, target=y, batch_size=bs, **kw), whole[fn]), (fn, bs)
        assert rows == [2 * len(SPARSITY), 2 * len(SPARSITY), len(SPARSITY)] * 2, bs


def test_the_engine_reads_each_sample_level_and_mask_of_one_draw(monkeypatch):
    """The masks the engine reads for variant v = level·N + mask of sample b are the sampler's row b·L + level,
    copy mask, of one draw over every (sample, level) row from the per-level streams: the (sample, level, copy) →
    (sample, variant) layout of the blocks."""
    model, x, y, attr = _setup(b=5)
    seen = {}
    real = fl.perturb.Removal.masked

    def spy(self, masks, *, n_variants, sample=None):
        seen["masks"], seen["variants"] = masks, n_variants
        return real(self, masks, n_variants=n_variants, sample=sample)

    monkeypatch.setattr(fl.perturb.Removal, "masked", spy)
    monkeypatch.setattr(fl.perturb.sampling, "_DRAWN_UNITS", 1)  # a block per sample
    levels, n_masks, alpha = len(SPARSITY), 4, 0.5
    fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, alpha=alpha, n_samples=n_masks, generator=11)
    assert seen["variants"] == levels * n_masks
    read = torch.cat([seen["masks"](i, i + 1, 0, levels * n_masks) for i in range(x.shape[0])])
    units = fl.perturb.pixel_units(x)
    scores = fl.perturb.unit_scores(attr, units, reduce="sum_abs")
    counts = torch.round(torch.tensor(SPARSITY, dtype=torch.float64) * N).long()
    top = fl.perturb.top_masks(fl.perturb.ranks(fl.perturb.order(scores, "morf")), counts)
    streams = fl.perturb.sample_seeds(11, None, x.shape[0]).repeat_interleave(levels)
    want = fl.perturb.bernoulli_subset(top.flatten(0, 1), alpha, generator=streams, n_samples=n_masks)
    assert torch.equal(read, want.reshape(x.shape[0], levels * n_masks, N))


def _two_tier_curve(r: float, alpha: float, beta: float, grid: torch.Tensor) -> torch.Tensor:
    """Expected FFid+ (Bernoulli) under Theorem 1's two-tier model on n = 400 units when the probability of a
    wrong prediction is the fraction of digit (tier-1) units removed: E[removed from tier 1] / |T_1|."""
    n = 400
    d = round(r * n)
    vals = [min(round(s * n), d) * min(alpha, beta * n / round(s * n)) / d for s in grid.tolist()]
    return torch.tensor(vals, dtype=torch.float64)


@pytest.mark.parametrize("r", [0.1, 0.15, 0.2, 0.25, 0.3])
@pytest.mark.parametrize("beta", [0.1, 0.2, 0.3])
def test_explanation_size_recovers_r_from_theorem_curves(r, beta):
    grid = torch.arange(1, 96, dtype=torch.float64) / 100
    curve = _two_tier_curve(r, 0.5, beta, grid)
    est = fd.explanation_size(curve, grid, alpha=0.5, beta=beta, tol=0.02).item()
    assert abs(est - r) <= 0.021, (r, beta, est)


def test_explanation_size_plateau_start_and_batched():
    grid = torch.linspace(0.05, 0.95, 19, dtype=torch.float64)
    rise = torch.clamp(grid / 0.25, max=1.0)
    fall = torch.clamp(0.4 / grid, max=1.0)
    curves = torch.stack([rise * fall, torch.clamp(grid / 0.1, max=1.0) * fall])
    assert fd.explanation_size(curves, grid).tolist() == pytest.approx([0.25, 0.1])
    assert fd.critical_points(0.5, 0.1) == pytest.approx(0.2)


def test_macro_correlations_perfect_order():
    xi = torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    levels = torch.linspace(0.05, 0.95, 19)
    # a good evaluation: more noise → lower Fid+ (P) and higher Fid− (Q); 3 seeds with different offsets
    P = torch.stack([(1 - xi)[:, None] * (1 - levels) + s for s in (0.0, 0.1, 0.2)])
    Q = torch.stack([xi[:, None] * levels + s for s in (0.0, 0.1, 0.2)])
    out = fd.macro_correlations(P, Q, xi)
    assert set(out) == set(fd.DIRECTIONS)
    for key, ideal in (("morf_vs_gt", -1.0), ("lerf_vs_gt", 1.0), ("morf_vs_lerf", -1.0)):
        torch.testing.assert_close(out[key], torch.full((3,), ideal))
    # swap two explainers' curves in seed 0 only: Spearman of a single transposition of adjacent items with n=6
    P2 = P.clone()
    P2[0, [0, 1]] = P2[0, [1, 0]]
    rho = 1 - 6 * 2 / (6 * 35)
    assert fd.macro_correlations(P2, Q, xi)["morf_vs_gt"][0].item() == pytest.approx(-rho)


def test_micro_correlations_per_level_with_constant_level():
    xi = torch.tensor([0.0, 0.5, 1.0])
    P = torch.tensor([[[3.0, 1.0], [2.0, 1.0], [1.0, 1.0]]])  # level 1 is constant across explainers
    Q = torch.tensor([[[1.0, 0.0], [2.0, 2.0], [3.0, 1.0]]])
    out = fd.micro_correlations(P, Q, xi)
    assert out["morf_vs_gt"].shape == (1, 2)
    assert out["morf_vs_gt"][0, 0].item() == pytest.approx(-1.0)
    assert math.isnan(out["morf_vs_gt"][0, 1].item())
    assert out["lerf_vs_gt"][0].tolist() == pytest.approx([1.0, 0.5])
    assert out["morf_vs_lerf"][0, 0].item() == pytest.approx(-1.0)


def test_micro_ranks_ties_min_and_nan_last():
    c = torch.tensor([-1.0, -1.0, 0.5, float("nan")])
    assert fd.micro_ranks(c, direction="min").tolist() == [1.0, 1.0, 3.0, 4.0]
    assert fd.micro_ranks(c, direction="max").tolist() == [2.0, 2.0, 1.0, 4.0]
    # vectorised over extra dims: methods on dim 0
    c2 = torch.stack([c, c.flip(0)], dim=1)
    assert fd.micro_ranks(c2, direction="min")[:, 1].tolist() == [4.0, 3.0, 1.0, 1.0]


def test_correlation_errors_name_arguments():
    P = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="Q"):
        fd.macro_correlations(P, torch.zeros(2, 3, 5), torch.arange(3.0))
    with pytest.raises(ValueError, match="gt"):
        fd.micro_correlations(P, P, torch.arange(4.0))
    with pytest.raises(ValueError, match="direction"):
        fd.micro_ranks(torch.zeros(3), direction="up")


def test_ground_truth_ranking_and_rank_methods():
    xi = torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    levels = torch.linspace(0.1, 0.9, 5)
    perfect_p = (1 - xi).view(1, 6, 1) * levels.view(1, 1, 5)  # less noise → higher Fid+
    perfect_q = xi.view(1, 6, 1) * levels.view(1, 1, 5)
    out = fd.ground_truth_ranking(perfect_p.expand(2, -1, -1), perfect_q.expand(2, -1, -1), xi, levels)
    assert out["macro"]["morf_vs_gt"].tolist() == pytest.approx([-1.0, -1.0])
    assert out["macro"]["lerf_vs_gt"].tolist() == pytest.approx([1.0, 1.0])
    assert out["micro"]["morf_vs_lerf"].shape == (2, 5)
    assert torch.allclose(out["micro"]["morf_vs_lerf"], torch.tensor(-1.0))
    flat = fd.ground_truth_ranking(torch.ones(2, 6, 5), perfect_q.expand(2, -1, -1), xi)  # constant → NaN
    assert bool(flat["micro"]["morf_vs_gt"].isnan().all())
    ranks = fd.rank_methods({"good": out["micro"], "flat": flat["micro"], "good2": out["micro"]})
    assert ranks["morf_vs_gt"] == {"good": (1.0, 0.0), "flat": (3.0, 0.0), "good2": (1.0, 0.0)}  # min ties, NaN last
    assert ranks["lerf_vs_gt"]["flat"] == (1.0, 0.0)  # same Q → all tie at rank 1


def test_errors_name_the_argument():
    model, x, y, attr = _setup()
    with pytest.raises(ValueError, match="sparsity"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5, 1.2])
    with pytest.raises(ValueError, match="alpha"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], alpha=0.0)
    with pytest.raises(ValueError, match="beta"):
        fd.fid_minus(model, x, attr, target=y, sparsity=[0.5], beta=1.5)
    with pytest.raises(ValueError, match="generator"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], alpha=0.5, n_samples=3)
    with pytest.raises(ValueError, match="n_samples"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], alpha=0.5, n_samples=0, generator=0)
    with pytest.raises(ValueError, match="sampling"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], alpha=0.5, sampling="poisson", generator=0)
    with pytest.raises(ValueError, match="output"):
        fd.fid_plus(model, x, attr, target=y, sparsity=[0.5], output="logit")
    with pytest.raises(ValueError, match="target"):
        fd.fid_plus(model, x, attr, target=y[:1], sparsity=[0.5])
    with pytest.raises(TypeError, match="target"):
        fd.fid_plus(model, x, attr, target=y.float(), sparsity=[0.5])
    with pytest.raises(ValueError, match="attributions"):
        fd.fid_plus(model, x, attr[:, :4], target=y, sparsity=[0.5])
    with pytest.raises(ValueError, match="model"):
        fd.fid_plus(Oracle().train(), x, attr, target=y, sparsity=[0.5])
    with pytest.raises(ValueError, match="tol"):
        fd.explanation_size(torch.rand(5), torch.linspace(0.1, 0.5, 5), tol=2.0)
    with pytest.raises(ValueError, match="sparsity"):
        fd.explanation_size(torch.rand(5), [0.1, 0.3, 0.2, 0.4, 0.5])
    with pytest.raises(ValueError, match="beta"):
        fd.critical_points(0.5, 0.0)
    with pytest.raises(ValueError, match="noise_levels"):
        fd.ground_truth_ranking(torch.rand(2, 6, 5), torch.rand(2, 6, 5), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="Q"):
        fd.ground_truth_ranking(torch.rand(2, 6, 5), torch.rand(2, 6, 4), torch.linspace(0, 1, 6))
    with pytest.raises(ValueError, match="micro"):
        fd.rank_methods({})


def test_random_ties_within_tiers_match_closed_form():
    """A two-valued (ground-truth mask) attribution: random tie-breaking changes which units of a tier go, never
    how many, so Fid± still match the closed forms; without a generator random ties are refused."""
    model, x, y, _ = _setup()
    gt = (torch.arange(N) < D).float().view(1, H, W).expand(2, H, W)
    for fn, plus in ((fd.fid_plus, True), (fd.fid_minus, False)):
        got = fn(model, x, gt, target=y, sparsity=SPARSITY, ties="random", generator=5)
        want = torch.tensor([_expected(plus, s, 1.0, None, False) for s in SPARSITY]).expand(2, -1)
        assert torch.equal(got, want)
    with pytest.raises(ValueError, match="generator"):
        fd.fid_plus(model, x, gt, target=y, sparsity=SPARSITY, ties="random")


def test_details_twins_and_the_minus_levels_paired_with_plus():
    model, x, y, attr = _setup()
    kw = dict(alpha=0.5, beta=0.2, n_samples=20, generator=5)
    minus = [round(1 - s, 6) for s in SPARSITY]
    assert fd.minus_sparsity(SPARSITY) == minus
    plus_d = fl.metrics.fid_plus_details(model, x, attr, target=y, sparsity=SPARSITY, **kw)
    minus_d = fl.metrics.fid_minus_details(model, x, attr, target=y, sparsity=minus, **kw)
    assert torch.equal(plus_d["score"], fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY, **kw))
    assert torch.equal(minus_d["score"], fd.fid_minus(model, x, attr, target=y, sparsity=minus, **kw))
    for d, levels in ((plus_d, SPARSITY), (minus_d, minus)):
        assert torch.equal(d["score"], d["clean"][:, None] - d["removed"])
        assert d["clean"].tolist() == [1.0, 1.0]  # the gated oracle is right on both clean inputs
        assert d["sparsity"].tolist() == levels and d["constant"].tolist() == [False, False]
    blank = attr.clone()
    blank[1] = 0.0
    with pytest.warns(fl.perturb.ConstantMapWarning):
        assert fd.fid_plus_details(model, x, blank, target=y, sparsity=SPARSITY)["constant"].tolist() == [False, True]
    # plain Fidelity on the gated oracle: "+" fails once ≥ M digit pixels are among the top s·N, "−" (keeping the
    # top 1 − s, removing the rest) fails once ≥ M digit pixels fall outside the kept top
    plus = fd.fid_plus(model, x, attr, target=y, sparsity=SPARSITY)
    minus_curve = fd.fid_minus(model, x, attr, target=y, sparsity=fd.minus_sparsity(SPARSITY))
    for i, s in enumerate(SPARSITY):
        top = round(s * N)
        assert plus[0, i].item() == float(min(top, D) >= M)
        assert minus_curve[0, i].item() == float(D - min(round(minus[i] * N), D) >= M)


def test_target_none_reads_the_prediction_and_the_defaults_are_fl_evaluate_levels():
    model, x, y, attr = _setup()
    y = torch.tensor([0, 1])  # sample 1 is misclassified: the prediction differs from the label
    predicted = model(x).argmax(dim=1)
    assert not torch.equal(predicted, y)
    for fn in (fd.fid_plus, fd.fid_minus):
        assert torch.equal(fn(model, x, attr), fn(model, x, attr, target=predicted, sparsity=fd.SPARSITY))
        assert not torch.equal(fn(model, x, attr), fn(model, x, attr, target=y))
    assert fd.SPARSITY == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

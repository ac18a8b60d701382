"""Oracle, invariance and error tests for faithlab.metrics.papers.saco.consistency (SaCo) and the four cumulative
metrics."""

from __future__ import annotations

import importlib
import inspect
import math

import pytest
import torch
from oracles import LinearProb

from faithlab import perturb
import faithlab.metrics as sm  # SaCo and the cumulative metrics are re-exported there


def _ones(b: int, h: int, w: int) -> torch.Tensor:
    return torch.ones(b, 1, h, w, dtype=torch.float64)


def test_saco_hand_computed_k3():
    # units 0..5 with salience 6..1 → G1={0,1} mean s=5.5, G2={2,3} 3.5, G3={4,5} 1.5; drops = Σβ: 0.15, 0.03,
    # 0.10. pairs: (1,2) w=2 consistent +2; (1,3) w=4 consistent +4; (2,3) w=2 violated −2 → F = 4, W = 8 → 0.5
    # (the paper's sums 11, 7, 3 give 8/16: equal groups, same score)
    beta = torch.tensor([0.10, 0.05, 0.02, 0.01, 0.06, 0.04], dtype=torch.float64)
    model = LinearProb(beta, q0=0.5).eval()
    x = _ones(1, 2, 3)
    attr = torch.tensor([6.0, 5, 4, 3, 2, 1], dtype=torch.float64).view(1, 1, 2, 3)
    d = sm.saco_details(model, x, attr, k=3, reference="zero")
    assert d["saco"].item() == pytest.approx(0.5)
    assert d["salience"].tolist() == [[5.5, 3.5, 1.5]]
    assert d["drop"][0].tolist() == pytest.approx([0.15, 0.03, 0.10])
    assert d["prob"].item() == pytest.approx(0.78)
    assert d["groups"].tolist() == [[0, 0, 1, 1, 2, 2]]


def _oracle(b: int = 8, side: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    beta = torch.rand(side * side, generator=g, dtype=torch.float64) * 0.02
    model = LinearProb(beta, q0=0.3).eval()  # q(x) ≈ 0.66: class 0 predicted
    return model, _ones(b, side, side), beta.view(1, 1, side, side).expand(b, 1, side, side), g


def test_faithful_map_scores_one_and_reversal_minus_one():
    model, x, effects, _ = _oracle()
    assert torch.allclose(sm.saco(model, x, effects, k=4, reference="zero"), torch.ones(8, dtype=torch.float64))
    assert torch.allclose(sm.saco(model, x, -effects, k=4, reference="zero"), -torch.ones(8, dtype=torch.float64))


def test_random_maps_average_zero_on_additive_model():
    model, x, effects, g = _oracle(b=400)
    random_maps = torch.rand(x.shape, generator=g, dtype=torch.float64)
    scores = sm.saco(model, x, random_maps, k=6, reference="zero")
    assert abs(scores.mean().item()) < 0.06  # standard error ≈ 0.02
    assert scores.std().item() > 0.1  # individual random maps do vary
    noisy = effects + 0.3 * effects.std() * torch.randn(x.shape, generator=g, dtype=torch.float64)
    assert sm.saco(model, x, noisy, k=6, reference="zero").mean().item() > 0.5


def test_invariant_to_positive_scaling_and_offset():
    model, x, effects, g = _oracle()
    maps = torch.rand(x.shape, generator=g, dtype=torch.float64) + 0.5 * effects / effects.max()
    base = sm.saco(model, x, maps, k=4, reference="zero")  # 36 units, k = 4 divides them
    assert torch.allclose(sm.saco(model, x, 3.7 * maps + 5.0, k=4, reference="zero"), base)
    assert torch.allclose(sm.saco(model, x, 0.01 * maps - 2.0, k=4, reference="zero"), base)
    assert not torch.allclose(sm.saco(model, x, -maps, k=4, reference="zero"), base)


def test_batch_size_invariance_and_single_batched_call():
    model, x, effects, g = _oracle()
    maps = torch.rand(x.shape, generator=g, dtype=torch.float64)
    model.calls = 0
    full = sm.saco(model, x, maps, k=5, reference="channel_mean", batch_size=1024)
    assert model.calls == 2  # predictions on the clean x, then all B·(K+1) perturbed inputs at once
    assert torch.equal(sm.saco(model, x, maps, k=5, reference="channel_mean", batch_size=3), full)


def test_constant_map_gives_zero_and_is_flagged():
    model, x, effects, _ = _oracle(b=2)
    maps = torch.cat([torch.full_like(effects[:1], 2.0), effects[1:]])
    with pytest.warns(perturb.ConstantMapWarning, match=r"1 of 2 sample"):
        d = sm.saco_details(model, x, maps, k=3, reference="zero")
    assert d["undefined"].tolist() == [True, False]
    assert d["saco"].tolist() == pytest.approx([0.0, 1.0])


def test_uneven_groups_when_k_does_not_divide_units():
    model, x, effects, _ = _oracle(b=1, side=5)  # 25 units, 4 groups of sizes 7, 6, 6, 6
    d = sm.saco_details(model, x, effects, k=4, reference="zero")
    assert torch.bincount(d["groups"][0]).tolist() == [7, 6, 6, 6]
    assert d["saco"].item() == pytest.approx(1.0)


def test_offset_invariance_with_unequal_groups_in_float32_on_a_real_map():
    """K = 10 does not divide the 64 pixels (groups of 7 and 6): SaCo compares group means, so adding a constant to
    a float32 saliency map of a trained-looking network changes nothing; summing would (a 7-pixel group gains 7c)."""
    from oracles import small_cnn

    import faithlab as fl

    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.randn(6, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    y = model(x).argmax(1)
    maps = fl.explainers.explain(model, x, y, method="saliency").abs().sum(1, keepdim=True)
    assert maps.dtype == torch.float32
    d = sm.saco_details(model, x, maps, k=10)
    assert sorted(torch.bincount(d["groups"][0]).tolist()) == [6] * 6 + [7] * 4
    for shifted in (maps + 0.5 * maps.max(), 3.0 * maps - 1.0):
        assert (sm.saco(model, x, shifted, k=10) - d["saco"]).abs().max().item() <= 1e-6
    # the group means, not sums: every salience is the mean of its members
    scores = maps.flatten(1).double()
    for i in range(10):
        assert d["salience"][0, i].item() == pytest.approx(scores[0][d["groups"][0] == i].mean().item())


def _linear_case():
    # 10 units, β known: with the map = β, removing the top k units lowers q by the sum of the k largest β.
    beta = torch.tensor([0.09, 0.01, 0.08, 0.02, 0.07, 0.03, 0.06, 0.04, 0.05, 0.0], dtype=torch.float64)
    model = LinearProb(beta, q0=0.36).eval()  # q(x) = 0.81; argmax flips once q < 0.5
    return model, _ones(1, 2, 5), beta.view(1, 1, 2, 5), beta


def test_cumulative_metrics_match_closed_forms():
    model, x, attr, beta = _linear_case()
    desc = beta.sort(descending=True).values
    top = 0.81 - torch.cat([torch.zeros(1, dtype=torch.float64), desc.cumsum(0)])  # q after removing top k, k=0..10
    bot = 0.81 - torch.cat([torch.zeros(1, dtype=torch.float64), desc.flip(0).cumsum(0)])
    kw = {"reference": "zero"}
    assert sm.aopc(model, x, attr, **kw).item() == pytest.approx((0.81 - top).mean().item())
    assert sm.comprehensiveness(model, x, attr, **kw).item() == pytest.approx((0.81 - bot).mean().item())
    assert sm.log_odds(model, x, attr, **kw).item() == pytest.approx(
        sum(math.log(q / 0.81) for q in top.tolist()) / 11)
    correct = (top > 0.5).double()  # label 0 predicted while q > 0.5
    expected_auc = (0.1 * (correct[1:] + correct[:-1]) / 2).sum().item()
    assert sm.auc_accuracy(model, x, attr, target=torch.tensor([0]), **kw).item() == pytest.approx(expected_auc)
    assert sm.auc_accuracy(model, x, attr, target=torch.tensor([1]), **kw).item() == pytest.approx(1 - expected_auc)
    # a better map (β) beats its reversal on every metric in the stated direction
    assert sm.aopc(model, x, attr, **kw) > sm.aopc(model, x, -attr, **kw)
    assert sm.log_odds(model, x, attr, **kw) < sm.log_odds(model, x, -attr, **kw)
    assert sm.comprehensiveness(model, x, attr, **kw) < sm.comprehensiveness(model, x, -attr, **kw)


def test_cumulative_details_return_the_curves_behind_the_scores():
    model, x, attr, beta = _linear_case()
    desc = beta.sort(descending=True).values
    top = 0.81 - torch.cat([torch.zeros(1, dtype=torch.float64), desc.cumsum(0)])
    bot = 0.81 - torch.cat([torch.zeros(1, dtype=torch.float64), desc.flip(0).cumsum(0)])
    kw = {"reference": "zero"}
    d = sm.aopc_details(model, x, attr, **kw)
    torch.testing.assert_close(d["curve"][0], top)
    torch.testing.assert_close(d["drop"][0], 0.81 - top)
    assert d["clean"].item() == pytest.approx(0.81)
    assert d["fractions"].tolist() == pytest.approx(list(sm.FRACTIONS))
    assert torch.equal(d["score"], sm.aopc(model, x, attr, **kw))
    c = sm.comprehensiveness_details(model, x, attr, **kw)
    torch.testing.assert_close(c["drop"][0], 0.81 - bot)
    lo = sm.log_odds_details(model, x, attr, **kw)
    torch.testing.assert_close(lo["log_ratio"][0], torch.log(top / 0.81))
    auc = sm.auc_accuracy_details(model, x, attr, target=torch.tensor([0]), **kw)
    torch.testing.assert_close(auc["curve"][0], (top > 0.5).double())
    assert torch.equal(auc["score"], sm.auc_accuracy(model, x, attr, target=torch.tensor([0]), **kw))
    # the unit-reduction rule is an argument: |a| ranks the reversed map like the map itself
    assert torch.equal(sm.aopc(model, x, -attr, reduce="sum_abs", **kw), sm.aopc(model, x, attr, **kw))


def test_morf_details_equals_the_three_calls_and_needs_labels():
    """One most-salient-first curve gives the accuracy AUC (read against labels) and AOPC/LOdds (read for
    target, default ŷ) bitwise as their own calls; the labels are required by name."""
    model, x, attr, _ = _linear_case()
    x, attr = torch.cat([x, x * 0.5]), torch.cat([attr, attr.flip(-1)])
    labels = torch.tensor([0, 1])
    for target in (None, torch.tensor([1, 0])):
        d = sm.papers.saco.cumulative.morf_details(model, x, attr, target=target, labels=labels, reference="zero")
        assert torch.equal(d["auc_accuracy"], sm.auc_accuracy(model, x, attr, target=labels, reference="zero"))
        assert torch.equal(d["aopc"], sm.aopc(model, x, attr, target=target, reference="zero"))
        assert torch.equal(d["log_odds"], sm.log_odds(model, x, attr, target=target, reference="zero"))
    assert not torch.equal(d["aopc"], sm.aopc(model, x, attr, reference="zero"))  # the target is read
    with pytest.raises(ValueError, match="labels"):
        sm.papers.saco.cumulative.morf_details(model, x, attr)
    with pytest.raises(TypeError, match="labels"):
        sm.papers.saco.cumulative.morf_details(model, x, attr, labels=labels.float())


def test_errors_name_the_argument():
    model, x, attr, _ = _linear_case()
    with pytest.raises(ValueError, match="k must be at most"):
        sm.saco(model, x, attr, k=11)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        sm.saco(model, x, attr, k=0)
    with pytest.raises(ValueError, match="attributions"):
        sm.saco(model, x, attr.expand(2, 1, 2, 5), k=2)
    with pytest.raises(ValueError, match="fractions"):
        sm.aopc(model, x, attr, fractions=[0.5, 1.0])
    with pytest.raises(ValueError, match="model is in training mode"):
        sm.saco(model.train(), x, attr, k=2)


def test_saco_has_the_one_call_shape_and_its_module_its_own_name():
    """Issue 30: model, x, attributions positional, every option a keyword with its default (no **options), the
    details twin with the same parameters; ``faithlab.metrics.papers.saco.consistency`` is the module,
    ``fl.metrics.saco`` the function."""
    module = importlib.import_module("faithlab.metrics.papers.saco.consistency")
    assert inspect.ismodule(module) and sm.papers.saco.consistency is module and sm.saco is module.saco
    plain, details = inspect.signature(sm.saco).parameters, inspect.signature(sm.saco_details).parameters
    assert [(q.name, q.kind, q.default) for q in plain.values()] == \
        [(q.name, q.kind, q.default) for q in details.values()]
    params = list(plain.values())
    assert [q.name for q in params[:3]] == ["model", "x", "attributions"]
    assert all(q.kind == q.KEYWORD_ONLY for q in params[3:]) and plain["target"].default is None
    assert {"k", "reduce", "reference", "units", "batch_size"} <= set(plain)

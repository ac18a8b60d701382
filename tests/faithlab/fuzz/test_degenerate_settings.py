"""Settings that measure nothing, generated from the metric registry: every registered sample-level metric declares
the settings of its keywords that make its score the same for every map, or undefined (``Metric.degenerate``: a
Monte-Carlo count too small to measure anything, a grid whose every level removes no unit or every unit, one patch,
one salience group), and its public call refuses each with a ValueError naming the argument (issue 92: infidelity's
one normalised draw used to return about 1e-20, a perfect score for any map). A metric with a Monte-Carlo count
declares a value of it below the time budget's floor, and at the least count it accepts the score still depends on
the map. A metric registered tomorrow is held to this without an edit."""

from __future__ import annotations

import inspect
import math
import warnings

import pytest
import torch
from registry_fuzz import FAST, _explain, inputs

import faithlab as fl
from faithlab.metrics.registry import METRICS, SHARED, Context, Tally, _reader, check_options

SAMPLE = {name: m for name, m in METRICS.items() if m.level == "sample" and m.function is not None}
CASES = [(name, i) for name, m in SAMPLE.items() for i in range(len(m.degenerate))]


def _public(name: str, setting: dict | None = None, attributions: torch.Tensor | None = None):
    """``name``'s own public function with the keyword arguments fl.evaluate would pass on the fuzz inputs (the
    FAST options), ``setting`` on top of them."""
    metric = METRICS[name]
    model, x, y, a = inputs()
    target = model(x).argmax(1)
    values = check_options(dict(FAST), [], x)
    base = Context(model=model, x=x, labels=y, target=target, attributions=None, name="E", explainer=_explain,
                   sample_index=torch.arange(x.shape[0]), options=values, batch_size=256, user_model=model,
                   tally=Tally())
    shared = {s: SHARED[s].compute(base) for s in metric.uses.values()}
    maps = (a if attributions is None else attributions) if metric.maps else None
    context = Context(model=model, x=x, labels=y, target=target, attributions=maps, name="E", explainer=_explain,
                      sample_index=torch.arange(x.shape[0]), options=values, batch_size=256, inputs=shared,
                      user_model=model, tally=Tally())
    kw = {**metric.arguments(context, metric.function), **(setting or {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = metric.function(model, x, maps, **kw)
    # read as Metric.call reads it: the declared score of a details function, else the public function's own value
    return _reader(metric.score)(result) if metric.function is metric.implementation else \
        metric.from_function(result)


def test_every_sample_metric_declares_what_measures_nothing():
    missing = [name for name, m in SAMPLE.items() if not m.degenerate]
    assert not missing, f"declare the settings that measure nothing (Metric.degenerate) of {missing}"
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", [n for n, m in SAMPLE.items() if m.mc_count is not None])
def test_a_monte_carlo_count_declares_a_value_that_measures_nothing_below_the_budget_floor(name):
    keyword, floor, _ = METRICS[name].mc_count
    counts = [s[keyword] for s in METRICS[name].degenerate if set(s) == {keyword}]
    assert counts, f"{name} declares no degenerate value of its Monte-Carlo count {keyword}"
    assert max(counts) < floor  # the time budget never lowers a count to one that measures nothing


@pytest.mark.parametrize("name,index", CASES)
def test_a_setting_that_measures_nothing_is_refused_naming_its_argument(name, index):
    setting = METRICS[name].degenerate[index]
    with pytest.raises(ValueError) as caught:
        _public(name, setting)
    assert any(k in str(caught.value) for k in setting), str(caught.value)


@pytest.mark.parametrize("name", [n for n, m in SAMPLE.items() if m.mc_count is not None])
def test_at_the_least_count_it_accepts_the_score_still_depends_on_the_map(name):
    """One above the largest count that measures nothing (infidelity 2, μF 3, RFid/FFid and S_avg 1): finite scores,
    and two different maps score differently (S_avg maps x itself: finite, and it moves with the radius)."""
    metric = METRICS[name]
    keyword = metric.mc_count[0]
    least = {keyword: max(s[keyword] for s in metric.degenerate if set(s) == {keyword}) + 1}
    if "output" in inspect.signature(metric.function).parameters:  # a probability, not 1[ŷ = y]: four samples
        least["output"] = "prob"                                       # rarely flip a prediction at one size
    first = _public(name, least)
    assert torch.isfinite(torch.as_tensor(first)).all()
    if metric.maps:
        other = torch.randn(inputs()[3].shape, generator=torch.Generator().manual_seed(11))
        second = _public(name, least, attributions=other)
        assert not torch.allclose(torch.as_tensor(first).double(), torch.as_tensor(second).double()), name
    else:
        wider = _public(name, {**least, "radius": 4.0})
        assert not torch.allclose(torch.as_tensor(first).double(), torch.as_tensor(wider).double()), name


def test_infidelity_one_normalised_draw_no_longer_scores_every_map_perfectly():
    """The case of issue 92: n_perturb_samples=1 (normalised) returned ~1e-20 for any map, its mc_se NaN, silently.
    Without normalisation one draw is an estimate: finite, map-dependent, mc_se NaN (said in the docstring)."""
    model, x, _, a = inputs()
    with pytest.raises(ValueError, match="n_perturb_samples=1 with normalize=True measures nothing"):
        fl.metrics.infidelity(model, x, a, n_perturb_samples=1)
    d = fl.metrics.infidelity_details(model, x, a, n_perturb_samples=1, normalize=False)
    assert torch.isfinite(d["score"]).all() and bool((d["score"] > 0).any()) and d["mc_se"].isnan().all()
    two = fl.metrics.infidelity(model, x, a, n_perturb_samples=2)
    assert bool((two > 1e-12).any())  # two draws: β cannot fit both exactly for every map


@pytest.mark.parametrize("metric,option,value", [("infidelity", "n_perturb_samples", 1),
                                                 ("mu_fidelity", "n_subsets", 2), ("saco", "saco_k", 1),
                                                 ("le-mo", "edge", 1)])
def test_evaluate_refuses_it_before_any_work_naming_the_option_as_spelt(metric, option, value):
    model, x, y, a = inputs()
    options = {**{k: v for k, v in FAST.items() if k not in ("saco_k", "edge")}, option: value}
    with pytest.raises(ValueError, match=option):
        fl.evaluate(model, x, y, {"E": a}, metrics=[metric], progress=False, hints=False, **options)


def test_grids_that_remove_no_unit_or_every_unit_are_refused_and_a_partly_useful_one_is_not():
    model, x, _, a = inputs()  # 8 × 8 = 64 pixels
    with pytest.raises(ValueError, match=r"sparsity=\[0.005\] measures nothing on inputs of 64 units"):
        fl.metrics.fid_plus(model, x, a, sparsity=[0.005])  # round(0.32) = 0 units
    with pytest.raises(ValueError, match="fractions"):
        fl.metrics.aopc(model, x, a, fractions=[0.0, 1.0])
    with pytest.raises(ValueError, match="beta=0.001"):
        fl.metrics.fid_plus(model, x, a, alpha=0.5, beta=0.001, sampling="exact", generator=0)
    kept = fl.metrics.fid_plus(model, x, a, sparsity=[0.0, 0.5, 1.0])  # one useful level: accepted
    assert kept.shape == (x.shape[0], 3) and math.isfinite(float(kept.sum()))

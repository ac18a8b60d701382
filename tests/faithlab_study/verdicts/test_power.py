"""The power analysis uses the interval that decides the claims: the probability that a t interval on R replica means
lies wholly on one side of the margin (noncentral t) matches a simulation of that interval, and the design a claim
needs follows from its recorded cells."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import faithlab as fl
import faithlab_study as fs
from faithlab_study.verdicts import decisions, intervals, power


@pytest.mark.parametrize("mean, vb, vw, r, n, margin", [
    (0.3, 0.04, 1.0, 3, 30, 0.1),
    (0.3, 0.04, 1.0, 5, 30, 0.1),
    (0.05, 0.0, 1.0, 8, 60, 0.1),   # an effect inside the band: its interval clears the margin often enough
    (0.1, 0.01, 1.0, 5, 40, 0.1),   # right at the margin: rarely decided
])
def test_decided_probability_matches_the_simulated_t_interval(mean, vb, vw, r, n, margin):
    rng = np.random.default_rng(11)
    sets = 6000
    x = mean + rng.normal(0, np.sqrt(vb), (sets, r, 1)) + rng.normal(0, np.sqrt(vw), (sets, r, n))
    _, low, high, _ = intervals.t_rows(x.mean(2), 0.95)
    simulated = float(np.mean((low > margin) | (high < margin)))
    predicted = intervals.decided_probability(mean, vb, vw, r, n, margin=margin)
    assert predicted == pytest.approx(simulated, abs=0.025), (predicted, simulated)


def _records(effect: float, *, replicas: int = 3, units: int = 30, sd_between: float = 0.05, seed: int = 0):
    rule = fs.verdicts.rule("B1")  # margin 0.01, above
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(replicas), units)
    x = effect + rng.normal(0, sd_between, replicas)[groups] + rng.normal(0, 0.1, groups.size)
    token = decisions.RECORDER.set([])
    try:
        fs.verdicts.effect(x, rule=rule, groups=groups)
        return decisions.RECORDER.get()
    finally:
        decisions.RECORDER.reset(token)


def test_design_needed_asks_for_more_replicas_or_units_as_the_effect_nears_the_margin():
    assert power.design_needed(_records(0.5, sd_between=0.01)) == "every cell decided at 3 replicas × 30 units"
    moderate = _records(0.02, sd_between=0.03, seed=0)  # its interval reaches both 0 and the margin 0.01
    assert moderate[0][0].outcome == "undecided"
    answer = power.design_needed(moderate)
    assert answer.startswith("needs ") and "replicas ×" in answer and "undecided cell" in answer, answer
    # an effect midway between 0 and the margin, with replicas far apart: no design of the grid decides it
    assert power.design_needed(_records(0.005, sd_between=0.2)).startswith("beyond 12 replicas")
    assert power.design_needed([]) == ""


def test_variance_components_recover_the_simulated_ones():
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(400), 20)
    x = rng.normal(0, 0.5, 400)[groups] + rng.normal(0, 1.0, groups.size)
    mean, vb, vw, k, n = power.variance_components(x, groups)
    assert (k, n) == (400, 20)
    assert vb == pytest.approx(0.25, rel=0.2) and vw == pytest.approx(1.0, rel=0.05)


def test_the_decided_probability_is_finite_at_a_large_noncentrality():
    # scipy's nct.cdf(-c, df, ncp) gave NaN for ncp beyond about 8 in scipy 1.17: a cell decided with P ≈ 1 read
    # undecided; both tails now come from sf, and a non-finite tail falls back to its limit
    for ncp in (8.5, 20.0, 60.0, -60.0):
        p = intervals.noncentral_t_outside(4.30, 2, ncp)
        assert np.isfinite(p) and p > 0.95, (ncp, p)
    assert intervals.decided_probability(1.0, 0.0, 1e-6, 3, 30, margin=0.0) > 0.99
    assert intervals.noncentral_t_outside(intervals.t_quantile(0.95, 2), 2, 0.0) == pytest.approx(0.05, abs=1e-9)


# ---- the whole rule before the data
def _decided_claim(effects, *, rule, units: int = 200, replicas: int = 3, sd: float = 0.1, premise: float | None = None,
                   left_out: float | None = None, seed: int = 0):
    """Records (judged, decided, verdict) of a claim deciding one cell per effect with ``rule``; ``premise``: a cell
    judged and decided by another rule first; ``left_out``: a cell judged and not decided."""
    groups = np.repeat(np.arange(replicas), units)

    def cell(e, name):  # each cell's noise its own (keyed to its name): the same cells with or without the others
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        return fs.verdicts.effect(e + rng.normal(0, sd, groups.size), rule=rule, groups=groups, what=name)

    tokens = decisions.RECORDER.set([]), decisions.DECIDED.set([])
    try:
        if premise is not None:
            decisions.decide(cell(premise, "premise"), fs.verdicts.rule("B1"))
        if left_out is not None:
            cell(left_out, "left out")
        verdict = decisions.decide([cell(e, f"cell {i}") for i, e in enumerate(effects)], rule)
        return decisions.RECORDER.get(), decisions.DECIDED.get(), verdict
    finally:
        decisions.RECORDER.reset(tokens[0])
        decisions.DECIDED.reset(tokens[1])


def _rule(decision: str = "single", margin: float = 0.02, source: str = "half the paper's effect"):
    from dataclasses import replace
    from faithlab_study.verdicts.error_rates import rule_for_shape

    return replace(rule_for_shape(decision, margin=margin), margin_source=source)


def test_the_whole_rule_at_the_paper_effect_matches_the_noncentral_t():
    """One cell, the paper's effect twice the margin: the simulated share reproduced is the chance that the t
    interval at the decision level clears the margin (noncentral t), with the variance the data give."""
    rule = _rule()
    judged, decided, verdict = _decided_claim([0.05], rule=rule, sd=0.1, units=200)
    _, vb, vw, _, n = power.variance_components(*judged[0][1])
    for r in (3, 5):
        simulated = power.whole_rule_rate(judged, decided, verdict, where="paper", replicas=r, sets=3000)
        expected = intervals.decided_probability(0.04, vb, vw, r, n, margin=0.02, level=decisions.DECISION_LEVEL)
        assert simulated == pytest.approx(expected, abs=0.03), (r, simulated, expected)
    # at the margin the rule reproduces at most its error rate
    assert power.whole_rule_rate(judged, decided, verdict, where="margin", sets=3000) <= decisions.ALPHA + 0.015


def test_the_whole_rule_follows_only_the_cells_of_the_verdict():
    """A premise's decision and a cell judged and left out are not simulated: the same rate with and without them,
    and tree_cells names the verdict's cells only."""
    rule = _rule("every")
    bare = _decided_claim([0.05, 0.06], rule=rule)
    busy = _decided_claim([0.05, 0.06], rule=rule, premise=0.5, left_out=-3.0)
    assert [c.what for c in power.tree_cells(power.verdict_tree(busy[1], busy[2]))] == ["cell 0", "cell 1"]
    assert len(busy[0]) == 4  # every judged cell was recorded
    rates = [power.whole_rule_rate(*b, where="paper", sets=400) for b in (bare, busy)]
    assert rates[0] == rates[1]  # the same cells, the same pooled variance and draws
    # more cells that must all hold: the whole rule reproduces less often than one cell
    one = _decided_claim([0.05], rule=_rule("every"))
    assert power.whole_rule_rate(*one, where="paper", sets=1000) > power.whole_rule_rate(*bare, where="paper",
                                                                                           sets=1000)


def test_the_whole_rule_of_parts_needs_every_part():
    rule_a, whole = _rule(), _rule("parts")
    from dataclasses import replace

    whole = replace(whole, parts=("a", "b"), share=0.5)
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(3), 100)
    tokens = decisions.RECORDER.set([]), decisions.DECIDED.set([])
    try:
        a = decisions.decide(fs.verdicts.effect(0.05 + rng.normal(0, 0.1, 300), rule=rule_a, groups=groups), rule_a)
        b = decisions.decide(fs.verdicts.effect(0.05 + rng.normal(0, 0.1, 300), rule=rule_a, groups=groups), rule_a)
        verdict = decisions.decide_parts({"a": a, "b": b}, whole)
        judged, decided = decisions.RECORDER.get(), decisions.DECIDED.get()
    finally:
        decisions.RECORDER.reset(tokens[0])
        decisions.DECIDED.reset(tokens[1])
    tree = power.verdict_tree(decided, verdict)
    assert tree[0] == "parts" and set(tree[2]) == {"a", "b"} and len(power.tree_cells(tree)) == 2
    both = power.whole_rule_rate(judged, decided, verdict, where="paper", sets=1000)
    single = power.whole_rule_rate(judged, decided, a, where="paper", sets=1000)
    assert 0 < both < single  # both parts must be reproduced


def test_prospective_says_the_design_and_its_cost():
    rule = _rule()
    weak = power.prospective(*_decided_claim([0.05], rule=rule, sd=1.0, units=20))
    assert weak.startswith("before the data") and "reproduced at twice the margin (the paper's effect that the margin halves" in weak
    assert "needs" in weak or "no design" in weak, weak
    strong = power.prospective(*_decided_claim([0.05], rule=rule, sd=0.01, units=200))
    assert strong.endswith("this design suffices"), strong
    convention = power.prospective(*_decided_claim([0.05], rule=_rule(source="convention"), sd=1.0, units=20))
    assert "no paper's effect to simulate" in convention and "show an effect at the margin" in convention \
        or "no design" in convention, convention
    assert power.prospective([], [], None) == ""

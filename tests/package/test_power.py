"""The power analysis uses the interval that decides the claims: the probability that a t interval on R replica means
lies wholly on one side of the margin (noncentral t) matches a simulation of that interval, and the design a claim
needs follows from its recorded cells."""

from __future__ import annotations

import numpy as np
import pytest

import faithlab as fl
import faithlab.study as fs
from faithlab.study.verdicts import decisions, intervals, power


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

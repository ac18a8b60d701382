"""SaCo's Fig. 2 claims (S2, S6) as functions: each gives every verdict on synthetic per-sample metrics with a known
correlation structure, and S6 is not testable when the two ρ conventions disagree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl

S = fl.protocols.saco
R, P, N, T = fl.verdicts.VERDICTS


def per_sample(saco_weight: float, *, existing_noise: float = 0.8, independent: bool = False, n: int = 60,
               seed: int = 0) -> pd.DataFrame:
    """Per-sample metrics of 2 settings × 4 methods: the four existing metrics are z + noise (so they agree with
    each other, ρ ≈ 1 / (1 + noise²)), stored in their own direction (AUC, LOdds, Comprehensiveness lower = better);
    SaCo is saco_weight · z + noise. ``independent``: every metric its own noise (no agreement at all)."""
    rng = np.random.default_rng(seed)
    rows = []
    for setting in ("s1", "s2"):
        for method in ("A", "B", "C", "D"):
            z = rng.normal(size=n)
            base = {m: (rng.normal(size=n) if independent else z + existing_noise * rng.normal(size=n))
                    for m in ("AUC", "AOPC", "LOdds", "Comprehensiveness")}
            base = {m: v * (1 if S.HIGHER_IS_BETTER[m] else -1) for m, v in base.items()}
            saco = saco_weight * z + (1 - abs(saco_weight) + 0.05) * rng.normal(size=n)
            for i in range(n):
                rows.append({"setting": setting, "method": method, "sample": i, "SaCo": saco[i],
                             **{m: v[i] for m, v in base.items()}})
    return pd.DataFrame(rows)


def correlations(frame: pd.DataFrame) -> pd.DataFrame:
    return S.rank_correlations(frame, methods=["A", "B", "C", "D"], n_null=100)


def test_rank_correlations_orient_the_metrics_and_carry_their_chance_level():
    corr = correlations(per_sample(0.0))
    among = corr[corr["kind"] == "among existing"]
    assert len(corr) == 8 * 10 and len(among) == 8 * 6
    assert among["rho"].mean() > 0.4  # oriented: the lower-is-better metrics were negated before correlating
    assert abs(corr["null rho"].mean()) < 0.05 and 0.05 < corr["null |rho|"].mean() < 0.2  # |ρ| ≈ 0.8/√60 at chance


@pytest.mark.parametrize("weight, independent, expected", [
    (0.0, False, R), (0.45, False, P), (0.95, False, N), (0.0, True, T)])
def test_claim_s2_gives_every_verdict(weight, independent, expected):
    claim = S.claim_weak_correlation(correlations(per_sample(weight, independent=independent)))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "chance" in claim.premise


@pytest.mark.parametrize("weight, independent, expected", [
    (0.0, False, R),     # SaCo unrelated: the existing metrics agree more under both conventions
    (0.95, False, N),    # SaCo agrees with each more than they agree with each other
    (-0.95, False, T),   # SaCo reversed: signed ρ says reproduced, |ρ| says not: the paper cannot decide
    (0.0, True, T),      # the existing metrics do not agree with each other above chance
])
def test_claim_s6_gives_every_verdict_and_both_conventions(weight, independent, expected):
    claim = S.claim_existing_agree_more(correlations(per_sample(weight, independent=independent)))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    if not independent:
        assert set(claim.table["convention"]) == {"signed ρ", "|ρ|"} and "|ρ|" in claim.our_value
    if weight < 0:
        assert "disagree" in claim.verdict.why

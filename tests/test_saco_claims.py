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


def case_frame(*, saturated: float, saco_good: float, aopc_good: float, random_drop: float = 0.5, n: int = 40,
               seed: int = 0) -> pd.DataFrame:
    """Per image × method rows as case_study_frame gives them: the first ``saturated`` share of the images saturate
    for every method; SaCo / AOPC of Transformer Attribution around the given means, Random's around 0 / 0.3."""
    rng = np.random.default_rng(seed)
    rows = []
    for method, saco, aopc in (("Transformer Attribution", saco_good, aopc_good), ("Raw Attention", 0.3, 0.35),
                               ("Random", 0.0, 0.3)):
        for i in range(n):
            rows.append({"image": i, "method": method, "SaCo": saco + 0.05 * rng.normal(),
                         "AOPC": aopc + 0.02 * rng.normal(), "p": 0.9,
                         "drop at 30%": random_drop if method == "Random" else 0.8, "max drop": 0.85,
                         "saturated": i < round(saturated * n)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(saturated=0.9, saco_good=0.8, aopc_good=0.33), R),   # saturated, SaCo separates far more than AOPC
    (dict(saturated=0.1, saco_good=0.8, aopc_good=0.33), P),   # SaCo separates, but the drops rarely saturate
    (dict(saturated=0.1, saco_good=0.3, aopc_good=0.9), N),    # AOPC separates more, nothing saturates
    (dict(saturated=0.9, saco_good=0.0, aopc_good=0.33), T),   # SaCo cannot tell the map from Random (the null)
    (dict(saturated=0.9, saco_good=0.8, aopc_good=0.33, random_drop=0.02), T),  # random removal costs nothing
])
def test_claim_s5_gives_every_verdict(kwargs, expected):
    claim = S.claim_saturation(case_frame(**kwargs))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "40 correctly classified images" in claim.rule and len(claim.table) == 3


def test_case_study_frame_reads_saco_and_the_cumulative_curve():
    import torch

    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    with torch.no_grad():
        net[1].weight.copy_(torch.randn(3, 16, generator=g))
    x = torch.rand(5, 1, 4, 4, generator=g)
    maps = {"A": torch.rand(5, 1, 4, 4, generator=g), "Random": torch.rand(5, 1, 4, 4, generator=g)}
    frame = S.case_study_frame(net, x, maps, k=4)
    assert len(frame) == 10 and set(frame["method"]) == {"A", "Random"}
    direct = fl.metrics.saco(net, x, maps["A"], k=4)
    np.testing.assert_allclose(frame[frame.method == "A"]["SaCo"].to_numpy(), direct.double().numpy(), rtol=1e-12)
    curve = fl.metrics.aopc_details(net, x, maps["A"])
    j = int((curve["fractions"].double() - 0.3).abs().argmin())
    np.testing.assert_allclose(frame[frame.method == "A"]["drop at 30%"].to_numpy(),
                               curve["drop"][:, j].double().numpy(), rtol=1e-12)
    sat = frame["drop at 30%"] >= 0.9 * frame["max drop"]
    assert (frame["saturated"] == sat).all()

"""SaCo's Fig. 2 claims (S2, S6) as functions: each gives every verdict on synthetic per-sample metrics with a known
correlation structure, and S6 is not testable when the two ρ conventions disagree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl
from faithlab.protocols.saco import comparisons

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


# ------------------------------------------------------------------------------------ S1, S7, S3, S4 as claims
SETTINGS = ("s1", "s2", "s3")


def metric_frame(effects, *, n: int = 40, noise: float = 0.05, common: float = 0.1, seed: int = 0,
                 columns=tuple(S.HIGHER_IS_BETTER)) -> pd.DataFrame:
    """Per setting × method × sample rows: each column = the method's oriented effect in that setting (``effects``:
    ``{setting: {method: {column: effect}}}``, missing = 0) + a per-sample term shared by all methods (``common``) +
    the method's own noise (``noise``; 0 makes methods with equal effects identical, i.e. at Random's level exactly),
    stored in the metric's own direction."""
    rng = np.random.default_rng(seed)
    rows = []
    for setting, by_method in effects.items():
        shared = {c: common * rng.normal(size=n) for c in columns}
        for method, by_column in by_method.items():
            values = {c: (by_column.get(c, 0.0) + shared[c] + noise * rng.normal(size=n))
                      * (1 if S.HIGHER_IS_BETTER.get(c, True) else -1) for c in columns}
            rows.append(pd.DataFrame({"setting": setting, "method": method, "sample": range(n), **values}))
    return pd.concat(rows, ignore_index=True)


def test_batched_bootstrap_equals_bootstrap_diff_column_by_column():
    rng = np.random.default_rng(1)
    diffs = rng.normal([0.3, 0.0, -0.2, 0.05], 1.0, size=(50, 4))
    diffs[3, 3] = np.nan  # a column with NaN goes through bootstrap_diff, which drops the unit
    for j, c in enumerate(comparisons._paired(diffs, seed=3)):
        ref = fl.verdicts.bootstrap_diff(diffs[:, j], seed=3)
        assert c.outcome == ref.outcome and c.n == ref.n
        np.testing.assert_allclose([c.mean, c.low, c.high], [ref.mean, ref.low, ref.high], rtol=1e-12, atol=1e-15)
    assert [c.outcome for c in comparisons._paired(diffs[:, :3], seed=3)] == ["win", "tie", "loss"]


GOOD = {"SaCo": 0.4, "AUC": 0.3, "AOPC": 0.3, "LOdds": 0.3, "Comprehensiveness": 0.3}
WEAK_CUMULATIVE = {"SaCo": 0.4, "AUC": 0.0, "AOPC": -0.1, "LOdds": 0.3, "Comprehensiveness": 0.3}
S1_HOLDS = {"Random": {}, "A": GOOD, "B": WEAK_CUMULATIVE, "C": GOOD}   # SaCo separates, AUC and AOPC do not
S1_FAILS = {"Random": {}, "A": GOOD, "B": GOOD, "C": GOOD}              # every metric separates Random
AT_CHANCE = {"Random": {}, "A": {}, "B": {}, "C": {}}                   # every map exactly at Random's level


@pytest.mark.parametrize("per_setting, noise, expected", [
    ((S1_HOLDS, S1_HOLDS, S1_HOLDS), 0.05, R),
    ((S1_HOLDS, S1_FAILS, S1_FAILS), 0.05, P),
    ((S1_FAILS, S1_FAILS, S1_FAILS), 0.05, N),
    (({"Random": {"SaCo": 0.3}, "A": GOOD, "B": WEAK_CUMULATIVE, "C": GOOD},) * 3, 0.05, N),  # Random far from 0
    ((AT_CHANCE, AT_CHANCE, AT_CHANCE), 0.0, T),  # no method differs from Random on any metric: the null
])
def test_claim_s1_gives_every_verdict(per_setting, noise, expected):
    frame = metric_frame(dict(zip(SETTINGS, per_setting, strict=True)), noise=noise)
    claim = S.claim_random_separation(frame, n_boot=1000)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S1: ") and "null" in claim.premise and len(claim.table) == 3
    if expected == T:
        assert not claim.table["testable"].any() and "chance" in claim.verdict.why


def test_claim_s1_reads_random_near_zero_from_its_interval():
    """Few, noisy samples: a mean SaCo(Random) beyond ±0.05 whose interval contains 0 still reads as near 0."""
    frame = metric_frame({"s": {"Random": {"SaCo": 0.1}, "A": GOOD, "B": WEAK_CUMULATIVE}}, n=10, noise=0.4,
                         seed=1)
    row = S.claim_random_separation(frame, n_boot=1000).table.iloc[0]
    assert row["SaCo(Random) low"] <= 0 <= row["SaCo(Random) high"] and abs(row["SaCo(Random)"]) > 0.05
    assert "near 0: within ±0.05 or interval containing 0: yes" in row["why"]


IG_ORDER = {"AUC": 0.5, "AOPC": 0.5, "LOdds": 0.5, "Comprehensiveness": -0.5}   # best MoRF, worst LeRF
IG_BEST = {"AUC": 0.5, "AOPC": 0.5, "LOdds": 0.5, "Comprehensiveness": 0.5}     # best everywhere
OTHER = {"AUC": 0.1, "AOPC": 0.1, "LOdds": 0.1, "Comprehensiveness": 0.1}


def s7_setting(ig, other=OTHER):
    return {"Random": {}, "Integrated Gradients": ig, "X": other, "Y": other}


@pytest.mark.parametrize("per_setting, expected", [
    ((s7_setting(IG_ORDER),) * 3, R),
    ((s7_setting(IG_ORDER), s7_setting(IG_BEST), s7_setting(IG_BEST)), P),
    ((s7_setting(IG_BEST),) * 3, N),
    # IG ties every method on Comprehensiveness: beaten by none, so not "worst" (the old rule counted it)
    ((s7_setting({**IG_ORDER, "Comprehensiveness": 0.1}),) * 3, N),
    # Comprehensiveness cannot tell any map from Random (the null) in any setting
    ((s7_setting({**IG_ORDER, "Comprehensiveness": 0.0}, {**OTHER, "Comprehensiveness": 0.0}),) * 3, T),
])
def test_claim_s7_gives_every_verdict(per_setting, expected):
    frame = metric_frame(dict(zip(SETTINGS, per_setting, strict=True)), noise=0.05)
    if expected == T:  # make Comprehensiveness exactly Random's for every map
        rnd = frame[frame.method == "Random"].set_index(["setting", "sample"])["Comprehensiveness"]
        frame["Comprehensiveness"] = rnd.loc[list(zip(frame.setting, frame["sample"], strict=True))].to_numpy()
    claim = S.claim_order_sensitivity(frame, n_boot=1000)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S7: ") and "Random" in claim.premise
    if expected == T:
        assert set(claim.table["metrics at chance"]) == {"Comprehensiveness"}


def test_order_sensitivity_needs_a_significant_worst():
    frame = metric_frame({"s": s7_setting({**IG_ORDER, "Comprehensiveness": 0.1})})
    checks = S.order_sensitivity(frame, n_boot=1000)
    assert checks["best on AOPC"] and not checks["worst on Comprehensiveness"]


VARIANTS = ("Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM")


def s3_setting(*saco):
    return {"Random": {}, **{v: {"SaCo": s} for v, s in zip(VARIANTS, saco, strict=True)}}


@pytest.mark.parametrize("saco, noise, expected", [
    ((0.1, 0.2, 0.3, 0.4), 0.05, R),   # every comparison gains
    ((0.1, 0.3, 0.1, 0.3), 0.05, P),   # aggregation gains, the gradient does not: 2 of 4 comparisons
    ((0.4, 0.3, 0.2, 0.1), 0.05, N),   # every comparison loses
    ((0.0, 0.0, 0.0, 0.0), 0.0, T),    # all four variants exactly at Random's level: the null
])
def test_claim_s3_gives_every_verdict(saco, noise, expected):
    frame = metric_frame({s: s3_setting(*saco) for s in SETTINGS}, noise=noise, columns=("SaCo",))
    claim = S.claim_attention_ablation(frame, n_boot=1000)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S3: ") and len(claim.table) == 12
    assert claim.table["testable"].any() == (expected != T)


def k_frame(decline: dict, *, random_decline: float = 0.0, noise: float = 0.05, n: int = 40) -> pd.DataFrame:
    """SaCo at K = 2 and K = 8 per setting × method × sample: K=2 at 0.3 (Random 0), K=8 lower by the method's
    decline; the per-sample noise of each K is shared by all methods, ``noise`` is each method's own."""
    rng = np.random.default_rng(0)
    rows = []
    for setting in SETTINGS:
        z2, z8 = 0.1 * rng.normal(size=n), 0.1 * rng.normal(size=n)
        for method, d in {"Random": random_decline, **decline}.items():
            base = 0.0 if method == "Random" else 0.3
            rows.append(pd.DataFrame({"setting": setting, "method": method, "sample": range(n),
                                      "SaCo K=2": base + z2 + noise * rng.normal(size=n),
                                      "SaCo K=8": base - d + z8 + noise * rng.normal(size=n)}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("frame, expected", [
    (k_frame({"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2}), R),
    (k_frame({"A": 0.2, "B": 0.2, "C": -0.2, "D": -0.2}), P),   # half decline, half rise
    (k_frame({"A": -0.2, "B": -0.2, "C": -0.2, "D": -0.2}), N),
    # every map declines exactly as much as the Random map: the decline lies within the null, whatever its size
    (k_frame({"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.1}, random_decline=0.1, noise=0.0), T),
    # one method in four declines beyond Random, the rest sit exactly on it: too few cells to speak of "most"
    (k_frame({"A": 0.2, "B": 0.0, "C": 0.0, "D": 0.0}, noise=0.0), T),
])
def test_claim_s4_gives_every_verdict(frame, expected):
    claim = S.claim_k_decline(frame, columns={2: "SaCo K=2", 8: "SaCo K=8"}, n_boot=1000)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S4: ") and len(claim.table) == 12 and "K=2" in claim.rule
    if expected == T and claim.table["holds"].sum() == 0:
        assert (claim.table["decline low"] > 0).all()  # significant declines, yet not testable against Random's
    elif expected == T:
        assert claim.table["testable"].sum() == 3 and "only 3 of 12" in claim.verdict.why


def test_claim_s4_holds_only_beyond_random():
    """Random's SaCo itself falls by 0.15 with K: a method falling by 0.15 + 0.1 counts, one falling by 0.15 − 0.1
    (a real decline, but less than the null's) does not."""
    frame = k_frame({"A": 0.25, "B": 0.25, "C": 0.05, "D": 0.05}, random_decline=0.15)
    table = S.claim_k_decline(frame, columns={2: "SaCo K=2", 8: "SaCo K=8"}, n_boot=1000).table
    assert table[table.method.isin(["A", "B"])]["holds"].all()
    assert not table[table.method.isin(["C", "D"])]["holds"].any()


def test_narrow_joins_each_interval_into_one_column_and_names_a_missing_one():
    table = pd.DataFrame({"setting": ["a", "b"], "gain": [0.12, -0.5], "low": [0.01, -0.7], "high": [0.2, -0.31],
                          "holds": [True, False], "extra": [1, 2]})
    out = S.narrow(table, ["setting", "holds"], {"gain": ("gain", "low", "high")}, digits=2)
    assert list(out.columns) == ["setting", "holds", "gain"]
    assert out["gain"].tolist() == ["+0.12 [+0.01, +0.20]", "-0.50 [-0.70, -0.31]"]
    with pytest.raises(ValueError, match="'hi'"):
        S.narrow(table, ["setting"], {"gain": ("gain", "low", "hi")})

"""SaCo's claims as functions: each gives reproduced, not reproduced, inconclusive and (through its premise) not
testable here on small synthetic frames with two or three replicas, accepts ``seed`` and one replica's rows; S6 is
decided by the signed ρ alone (spec §6.13), |ρ| only shown; a tie is never a failure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl
from faithlab.protocols.saco import comparisons

S = fl.protocols.saco
R, P, N, T, I = fl.verdicts.VERDICTS
REPLICAS = (0, 1)


def accuracy(value: float = 0.95, settings=("s1", "s2", "s3"), replicas=REPLICAS) -> pd.DataFrame:
    return pd.DataFrame([{"setting": s, "replica": r, "accuracy": value} for s in settings for r in replicas])


def one_replica(frame: pd.DataFrame, r: int = 0) -> pd.DataFrame:
    return frame[frame["replica"] == r].reset_index(drop=True)


def per_sample(saco_weight: float, *, existing_noise: float = 0.8, independent: bool = False, n: int = 60,
               seed: int = 0) -> pd.DataFrame:
    """Per-sample metrics of 2 settings × 2 replicas × 4 methods: the four existing metrics are z + noise (so they
    agree with each other, ρ ≈ 1 / (1 + noise²)), stored in their own direction (AUC, LOdds, Comprehensiveness lower =
    better); SaCo is saco_weight · z + noise. ``independent``: every metric its own noise (no agreement at all)."""
    rng = np.random.default_rng(seed)
    rows = []
    for setting, replica in ((s, r) for s in ("s1", "s2") for r in REPLICAS):
        for method in ("A", "B", "C", "D"):
            z = rng.normal(size=n)
            base = {m: (rng.normal(size=n) if independent else z + existing_noise * rng.normal(size=n))
                    for m in ("AUC", "AOPC", "LOdds", "Comprehensiveness")}
            base = {m: v * (1 if S.HIGHER_IS_BETTER[m] else -1) for m, v in base.items()}
            saco = saco_weight * z + (1 - abs(saco_weight) + 0.05) * rng.normal(size=n)
            for i in range(n):
                rows.append({"setting": setting, "replica": replica, "method": method, "sample": i, "SaCo": saco[i],
                             **{m: v[i] for m, v in base.items()}})
    return pd.DataFrame(rows)


def correlations(frame: pd.DataFrame) -> pd.DataFrame:
    return S.rank_correlations(frame, methods=["A", "B", "C", "D"], n_null=100)


def test_rank_correlations_orient_the_metrics_and_carry_their_chance_level():
    corr = correlations(per_sample(0.0))
    among = corr[corr["kind"] == "among existing"]
    assert len(corr) == 16 * 10 and len(among) == 16 * 6 and set(corr["replica"]) == set(REPLICAS)
    assert among["rho"].mean() > 0.4  # oriented: the lower-is-better metrics were negated before correlating
    assert abs(corr["null rho"].mean()) < 0.05 and 0.05 < corr["null |rho|"].mean() < 0.2  # |ρ| ≈ 0.8/√60 at chance


@pytest.mark.parametrize("weight, independent, acc, expected", [
    (0.0, False, 0.95, R),    # SaCo unrelated to the existing metrics: every mean ρ far below 0.35
    (0.3, False, 0.95, I),    # largest ρ(SaCo, metric) ≈ 0.35: the interval straddles the threshold
    (0.95, False, 0.95, N),   # SaCo agrees with them: ρ far above 0.5
    (0.0, True, 0.95, T),     # the existing metrics do not agree with each other above chance (premise)
    (0.0, False, 0.5, T),     # the ViTs have not learned the task (premise, with its tolerance)
])
def test_claim_s2_gives_every_verdict(weight, independent, acc, expected):
    claim = S.claim_weak_correlation(correlations(per_sample(weight, independent=independent)),
                                     accuracy=accuracy(acc, settings=("s1", "s2")))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.kind == "paper" and claim.units == (0 if acc < 0.8 else 16) and "0.35" in claim.rule
    assert claim.verdict.decision.startswith("reproduced when the largest mean ρ")
    if expected in (R, N, I):
        assert "interval" in claim.verdict.why


@pytest.mark.parametrize("weight, independent, expected", [
    (0.0, False, R),     # SaCo unrelated: the existing metrics agree more
    (0.95, False, N),    # SaCo agrees with each more than they agree with each other
    (-0.95, False, R),   # SaCo reversed: the signed ρ (the spec's convention) decides; |ρ| would say otherwise
    (0.0, True, T),      # the existing metrics do not agree with each other above chance
])
def test_claim_s6_is_decided_by_the_signed_rho(weight, independent, expected):
    claim = S.claim_existing_agree_more(correlations(per_sample(weight, independent=independent)),
                                        accuracy=accuracy(settings=("s1", "s2")))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    if not independent:
        table = claim.table.set_index("convention")
        assert set(table.index) == {"signed ρ", "|ρ|"} and table["decides"].to_dict() == {"signed ρ": True,
                                                                                            "|ρ|": False}
    if weight < 0:
        assert claim.table.set_index("convention").loc["|ρ|", "high"] < 0  # |ρ| alone would have said not reproduced


def test_claim_s6_is_inconclusive_when_the_gap_straddles_zero():
    """SaCo correlates with each existing metric about as much as they do with each other (gap ≈ 0)."""
    corr = correlations(per_sample(0.55, existing_noise=0.8))
    claim = S.claim_existing_agree_more(corr)
    gap = claim.table.set_index("convention").loc["signed ρ"]
    assert gap["low"] < 0 < gap["high"] and claim.verdict == I, claim.verdict.why


def test_correlation_claims_take_seed_and_one_replica():
    corr = correlations(per_sample(0.0))
    for fn in (S.claim_weak_correlation, S.claim_existing_agree_more):
        assert fn(one_replica(corr), seed=3).verdict in fl.verdicts.VERDICTS
        replicated = fl.verdicts.replicated(fn, corr, accuracy=accuracy(settings=("s1", "s2")), seed=0, seeds=3)
        assert len(replicated.replicas) == 2 and len(replicated.stability) == 3


def case_frame(*, saturated: float, saco_good: float, aopc_good: float, random_drop: float = 0.5, n: int = 40,
               seed: int = 0) -> pd.DataFrame:
    """Per replica × image × method rows as case_study_frame gives them (2 replicas): the first ``saturated`` share
    of each replica's images saturate for every method; SaCo / AOPC of Transformer Attribution around the given
    means, Random's around 0 / 0.3."""
    rng = np.random.default_rng(seed)
    rows = []
    for replica in REPLICAS:
        for method, saco, aopc in (("Transformer Attribution", saco_good, aopc_good), ("Raw Attention", 0.3, 0.35),
                                   ("Random", 0.0, 0.3)):
            for i in range(n):
                rows.append({"replica": replica, "image": i, "method": method, "SaCo": saco + 0.05 * rng.normal(),
                             "AOPC": aopc + 0.02 * rng.normal(), "p": 0.9,
                             "drop at 30%": random_drop if method == "Random" else 0.8, "max drop": 0.85,
                             "saturated": i < round(saturated * n)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(saturated=0.9, saco_good=0.8, aopc_good=0.33), R),   # saturated, SaCo separates far more than AOPC
    (dict(saturated=0.1, saco_good=0.8, aopc_good=0.33), P),   # SaCo separates, but the drops rarely saturate
    (dict(saturated=0.1, saco_good=0.3, aopc_good=0.9), N),    # AOPC separates more, nothing saturates
    (dict(saturated=0.675, saco_good=0.8, aopc_good=0.33), I),  # the saturated share's interval holds 2/3
    (dict(saturated=0.9, saco_good=0.8, aopc_good=0.33, random_drop=0.02), T),  # random removal costs nothing
])
def test_claim_s5_gives_every_verdict(kwargs, expected):
    frame = case_frame(**kwargs)
    claim = S.claim_saturation(frame)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "80 correctly classified images" in claim.rule and len(claim.table) == 3 and claim.units == 80
    assert claim.kind == "paper" and claim.verdict.decision
    assert S.claim_saturation(one_replica(frame), seed=5).units == 40


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
    """Per setting × replica (2) × method × sample rows: each column = the method's oriented effect in that setting
    (``effects``: ``{setting: {method: {column: effect}}}``, missing = 0) + a per-sample term shared by all methods
    (``common``) + the method's own noise (``noise``; 0 makes methods with equal effects identical), stored in the
    metric's own direction."""
    rng = np.random.default_rng(seed)
    rows = []
    for setting, by_method in effects.items():
        for replica in REPLICAS:
            shared = {c: common * rng.normal(size=n) for c in columns}
            for method, by_column in by_method.items():
                values = {c: (by_column.get(c, 0.0) + shared[c] + noise * rng.normal(size=n))
                          * (1 if S.HIGHER_IS_BETTER.get(c, True) else -1) for c in columns}
                rows.append(pd.DataFrame({"setting": setting, "replica": replica, "method": method,
                                          "sample": range(n), **values}))
    return pd.concat(rows, ignore_index=True)


def test_batched_bootstrap_equals_bootstrap_diff_column_by_column():
    rng = np.random.default_rng(1)
    diffs = rng.normal([0.3, 0.0, -0.2, 0.05], 1.0, size=(50, 4))
    groups = np.repeat([0, 1, 2], [20, 17, 13])
    diffs[3, 3] = np.nan  # a column with NaN goes through bootstrap_diff, which drops the unit
    for g in (None, groups):
        for j, c in enumerate(comparisons._paired(diffs, g, seed=3)):
            ref = fl.verdicts.bootstrap_diff(diffs[:, j], seed=3, n_boot=2000, groups=g)
            assert c.outcome == ref.outcome and c.n == ref.n
            np.testing.assert_allclose([c.mean, c.low, c.high], [ref.mean, ref.low, ref.high], rtol=1e-9, atol=1e-12)
    assert [c.outcome for c in comparisons._paired(diffs[:, :3], seed=3)] == ["win", "tie", "loss"]


GOOD = {"SaCo": 0.4, "AUC": 0.3, "AOPC": 0.3, "LOdds": 0.3, "Comprehensiveness": 0.3}
WEAK_CUMULATIVE = {"SaCo": 0.4, "AUC": -0.1, "AOPC": -0.1, "LOdds": 0.3, "Comprehensiveness": 0.3}
S1_HOLDS = {"Random": {}, "A": GOOD, "B": WEAK_CUMULATIVE, "C": GOOD}   # SaCo separates, AUC and AOPC do not
S1_FAILS = {"Random": {}, "A": GOOD, "B": GOOD, "C": GOOD}              # every metric separates Random
# AUC: B exactly at Random's level (a tie): the second cumulative metric is undecided
S1_TIE = {"Random": {}, "A": GOOD, "B": {**WEAK_CUMULATIVE, "AUC": 0.0}, "C": GOOD}


@pytest.mark.parametrize("per_setting, acc, expected", [
    ((S1_HOLDS, S1_HOLDS, S1_HOLDS), 0.95, R),
    ((S1_HOLDS, S1_FAILS, S1_FAILS), 0.95, P),
    ((S1_FAILS, S1_FAILS, S1_FAILS), 0.95, N),
    (({"Random": {"SaCo": 0.3}, "A": GOOD, "B": WEAK_CUMULATIVE, "C": GOOD},) * 3, 0.95, N),  # Random far from 0
    ((S1_TIE, S1_TIE, S1_TIE), 0.95, I),  # a tie is undecided, never a failure
    ((S1_HOLDS, S1_HOLDS, S1_HOLDS), 0.7, T),  # the ViTs did not learn the task (0.7 < 0.8 − 0.05)
])
def test_claim_s1_gives_every_verdict(per_setting, acc, expected):
    frame = metric_frame(dict(zip(SETTINGS, per_setting, strict=True)))
    claim = S.claim_random_separation(frame, accuracy=accuracy(acc))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S1: ") and len(claim.table) == 3 and claim.units == 80 and claim.kind == "paper"
    if expected == T:
        assert not claim.table["testable"].any() and "accuracy" in claim.verdict.why


def test_claim_s1_accuracy_premise_has_a_tolerance():
    frame = metric_frame(dict(zip(SETTINGS, (S1_HOLDS,) * 3, strict=True)))
    assert S.claim_random_separation(frame, accuracy=accuracy(0.77)).verdict == R  # within 0.8 − 0.05
    assert S.claim_random_separation(frame, accuracy=accuracy(0.77), accuracy_tolerance=0.0).verdict == T


def test_claim_s1_reads_random_near_zero_from_its_interval():
    """SaCo(Random) near 0 is an equivalence test: its interval must lie within ±0.05; one that holds 0.05 leaves
    the part undecided (inconclusive), one wholly beyond it fails."""
    frame = metric_frame({"s": {"Random": {"SaCo": 0.05}, "A": GOOD, "B": WEAK_CUMULATIVE}})
    claim = S.claim_random_separation(frame)
    row = claim.table.iloc[0]
    assert row["SaCo(Random) low"] < 0.05 < row["SaCo(Random) high"] and row["near 0"] == "undecided"
    assert claim.verdict == I


IG_ORDER = {"AUC": 0.5, "AOPC": 0.5, "LOdds": 0.5, "Comprehensiveness": -0.5}   # best MoRF, worst LeRF
IG_BEST = {"AUC": 0.5, "AOPC": 0.5, "LOdds": 0.5, "Comprehensiveness": 0.5}     # best everywhere
OTHER = {"AUC": 0.1, "AOPC": 0.1, "LOdds": 0.1, "Comprehensiveness": 0.1}


def s7_setting(ig, other=OTHER):
    return {"Random": {}, "Integrated Gradients": ig, "X": other, "Y": other}


@pytest.mark.parametrize("per_setting, acc, expected", [
    ((s7_setting(IG_ORDER),) * 3, 0.95, R),
    ((s7_setting(IG_ORDER), s7_setting(IG_BEST), s7_setting(IG_BEST)), 0.95, P),
    ((s7_setting(IG_BEST),) * 3, 0.95, N),
    # IG ties every method on Comprehensiveness and lies above Random: not the worst
    ((s7_setting({**IG_ORDER, "Comprehensiveness": 0.1}),) * 3, 0.95, N),
    # IG below X and Y on Comprehensiveness but at Random's level: whether it is the worst is undecided
    ((s7_setting({**IG_ORDER, "Comprehensiveness": 0.0}),) * 3, 0.95, I),
    ((s7_setting(IG_ORDER),) * 3, 0.5, T),
])
def test_claim_s7_gives_every_verdict(per_setting, acc, expected):
    frame = metric_frame(dict(zip(SETTINGS, per_setting, strict=True)), noise=0.05)
    claim = S.claim_order_sensitivity(frame, accuracy=accuracy(acc))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.table.to_dict("records"))
    assert claim.claim.startswith("S7: ") and "accuracy" in claim.premise and claim.units == 80


def test_order_sensitivity_needs_a_significant_worst():
    frame = metric_frame({"s": s7_setting({**IG_ORDER, "Comprehensiveness": 0.1})})
    checks = S.order_sensitivity(frame)
    assert checks["best on AOPC"] and not checks["worst on Comprehensiveness"]


VARIANTS = ("Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM")


def s3_setting(*saco):
    return {"Random": {}, **{v: {"SaCo": s} for v, s in zip(VARIANTS, saco, strict=True)}}


@pytest.mark.parametrize("saco, acc, expected", [
    ((0.1, 0.2, 0.3, 0.4), 0.95, R),   # every comparison gains
    ((0.2, 0.4, 0.1, 0.3), 0.95, P),   # aggregation gains, the gradient loses: 2 of 4 comparisons
    ((0.4, 0.3, 0.2, 0.1), 0.95, N),   # every comparison loses
    ((0.1, 0.3, 0.1, 0.3), 0.95, I),   # aggregation gains, the gradient ties: the ties could tip it
    ((0.1, 0.2, 0.3, 0.4), 0.5, T),
])
def test_claim_s3_gives_every_verdict(saco, acc, expected):
    frame = metric_frame({s: s3_setting(*saco) for s in SETTINGS}, columns=("SaCo",))
    claim = S.claim_attention_ablation(frame, accuracy=accuracy(acc))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S3: ") and len(claim.table) == 12 and claim.units == 80
    assert claim.table["testable"].all() == (expected != T)


def k_frame(decline: dict, *, random_decline: float = 0.0, noise: float = 0.05, n: int = 40) -> pd.DataFrame:
    """SaCo at K = 2 and K = 8 per setting × replica (2) × method × sample: K=2 at 0.3 (Random 0), K=8 lower by the
    method's decline; the per-sample noise of each K is shared by all methods, ``noise`` is each method's own."""
    rng = np.random.default_rng(0)
    rows = []
    for setting in SETTINGS:
        for replica in REPLICAS:
            z2, z8 = 0.1 * rng.normal(size=n), 0.1 * rng.normal(size=n)
            for method, d in {"Random": random_decline, **decline}.items():
                base = 0.0 if method == "Random" else 0.3
                rows.append(pd.DataFrame({"setting": setting, "replica": replica, "method": method,
                                          "sample": range(n), "SaCo K=2": base + z2 + noise * rng.normal(size=n),
                                          "SaCo K=8": base - d + z8 + noise * rng.normal(size=n)}))
    return pd.concat(rows, ignore_index=True)


K_COLUMNS = {2: "SaCo K=2", 8: "SaCo K=8"}


@pytest.mark.parametrize("frame, acc, expected", [
    (k_frame({"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2}), 0.95, R),
    (k_frame({"A": 0.2, "B": 0.2, "C": -0.2, "D": -0.2}), 0.95, P),   # half decline, half rise
    (k_frame({"A": -0.2, "B": -0.2, "C": -0.2, "D": -0.2}), 0.95, N),
    # every map declines exactly as much as the Random map: beyond Random a tie in every cell, undecided
    (k_frame({"A": 0.1, "B": 0.1, "C": 0.1, "D": 0.1}, random_decline=0.1, noise=0.0), 0.95, I),
    (k_frame({"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2}), 0.5, T),
])
def test_claim_s4_gives_every_verdict(frame, acc, expected):
    claim = S.claim_k_decline(frame, columns=K_COLUMNS, accuracy=accuracy(acc))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("S4: ") and len(claim.table) == 12 and "K=2" in claim.rule and claim.units == 80
    if expected == I:
        assert (claim.table["decline low"] > 0).all() and set(claim.table["holds"]) == {"undecided"}


def test_claim_s4_counts_every_cell_and_holds_only_beyond_random():
    """Random's SaCo itself falls by 0.15 with K: a method falling by 0.15 + 0.1 holds, one falling by 0.15 − 0.1
    (a real decline, but less than the control's) fails; no cell is left out for its own significance."""
    frame = k_frame({"A": 0.25, "B": 0.25, "C": 0.05, "D": 0.05}, random_decline=0.15)
    table = S.claim_k_decline(frame, columns=K_COLUMNS).table
    assert table["testable"].all()
    assert set(table[table.method.isin(["A", "B"])]["holds"]) == {"holds"}
    assert set(table[table.method.isin(["C", "D"])]["holds"]) == {"fails"}


@pytest.mark.parametrize("fn, make, kwargs", [
    (S.claim_random_separation, lambda: metric_frame(dict(zip(SETTINGS, (S1_HOLDS,) * 3, strict=True))), {}),
    (S.claim_order_sensitivity, lambda: metric_frame(dict(zip(SETTINGS, (s7_setting(IG_ORDER),) * 3,
                                                              strict=True))), {}),
    (S.claim_attention_ablation, lambda: metric_frame({s: s3_setting(0.1, 0.2, 0.3, 0.4) for s in SETTINGS},
                                                      columns=("SaCo",)), {}),
    (S.claim_k_decline, lambda: k_frame({"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2}), {"columns": K_COLUMNS}),
])
def test_claims_take_seed_and_one_replica(fn, make, kwargs):
    frame = make()
    alone = fn(one_replica(frame, 1), accuracy=one_replica(accuracy(), 1), seed=7, **kwargs)
    assert alone.verdict in fl.verdicts.VERDICTS and alone.units == 40
    claim = fl.verdicts.replicated(fn, frame, accuracy=accuracy(), seed=0, seeds=2, **kwargs)
    assert claim.replicas == (R, R) and len(claim.stability) == 2 and claim.raw == R
    # decided over the two replicas pooled, published inconclusive: the house asks 3 trained replicas
    assert claim.verdict == fl.verdicts.INCONCLUSIVE and "2 trained models" in claim.verdict.why


def test_narrow_joins_each_interval_into_one_column_and_names_a_missing_one():
    table = pd.DataFrame({"setting": ["a", "b"], "gain": [0.12, -0.5], "low": [0.01, -0.7], "high": [0.2, -0.31],
                          "holds": [True, False], "extra": [1, 2]})
    out = S.narrow(table, ["setting", "holds"], {"gain": ("gain", "low", "high")}, digits=2)
    assert list(out.columns) == ["setting", "holds", "gain"]
    assert out["gain"].tolist() == ["+0.12 [+0.01, +0.20]", "-0.50 [-0.70, -0.31]"]
    with pytest.raises(ValueError, match="'hi'"):
        S.narrow(table, ["setting"], {"gain": ("gain", "low", "hi")})

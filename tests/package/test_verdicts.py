"""The verdict helper: every claim's verdict comes from a measured value and a stated rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from faithlab.verdicts import VERDICTS, ladder, verdict

REPRODUCED, PARTLY, NOT, UNTESTABLE, INCONCLUSIVE = VERDICTS


def test_checks_default_rule_all_then_any():
    assert verdict([True, True]) == REPRODUCED
    assert verdict([True, False, False]) == PARTLY
    assert verdict([False, False]) == NOT
    assert verdict(np.array([True, True])) == REPRODUCED
    assert verdict(torch.tensor([False, True])) == PARTLY


@pytest.mark.parametrize("value,expected", [(0.8, REPRODUCED), (0.79, PARTLY), (0.5, PARTLY), (0.49, NOT)])
def test_threshold_rule_higher_is_better(value, expected):
    assert verdict(value, reproduced=">= 0.8", partly=">= 0.5") == expected


@pytest.mark.parametrize("value,expected", [(0.1, REPRODUCED), (0.2, PARTLY), (0.3, PARTLY), (0.31, NOT)])
def test_threshold_rule_lower_is_better(value, expected):
    assert verdict(value, reproduced="<= 0.1", partly="<= 0.3") == expected


def test_strict_comparisons_and_no_partly():
    assert verdict(0.35, reproduced="< 0.35", partly="< 0.5") == PARTLY
    assert verdict(0.0, reproduced="> 0", partly=None) == NOT
    assert verdict(2 / 3, reproduced="== 1", partly=">= 0.5") == PARTLY


def test_premise_undefined_statistic_or_no_check_is_not_testable():
    assert verdict(math.nan, reproduced=">= 0.8") == UNTESTABLE
    assert verdict([]) == UNTESTABLE
    assert verdict([True], untestable="a correlation is undefined") == UNTESTABLE
    assert verdict(1.0, untestable="the baseline is already at the ideal") == UNTESTABLE


def test_ladder_orders_the_two_tests():
    assert ladder(True, False) == REPRODUCED
    assert ladder(False, True) == PARTLY
    assert ladder(False) == NOT
    assert ladder(True, True, untestable="saturated") == UNTESTABLE


def test_bad_rules_and_values_name_the_argument():
    with pytest.raises(ValueError, match="reproduced"):
        verdict(0.5, reproduced="at least 0.8")
    with pytest.raises(ValueError, match="partly"):
        verdict(0.5, partly="=> 0.2")
    with pytest.raises(TypeError, match="value"):
        verdict("high")
    with pytest.raises(TypeError, match="value"):
        verdict(object())
    with pytest.raises(ValueError, match="untestable"):
        verdict(0.5, untestable="  ")


# ------------------------------------------------------------------------------ premise checks and the bootstrap
from faithlab.verdicts import (  # noqa: E402
    Comparison, Verdict, at_ideal, bootstrap_diff, compare, first_reason, from_comparison, undefined,
)


def test_verdicts_carry_the_rule_outcome():
    v = verdict(math.nan)
    assert isinstance(v, Verdict) and v == UNTESTABLE and "undefined" in v.why
    assert ladder(False, untestable="saturated").why == "not testable: saturated"
    with pytest.raises(ValueError, match="verdict"):
        Verdict("probably")


def test_premise_at_ideal_and_undefined():
    assert at_ideal(-0.99, ideal=-1, tol=0.05, what="Fidelity's MoRF vs GT") is not None
    assert "Fidelity" in at_ideal([1.0, 0.97], ideal=1, tol=0.05, what="Fidelity")
    assert at_ideal(-0.9, ideal=-1, tol=0.05, what="x") is None
    assert undefined(0.3, what="ρ") is None
    assert "ρ" in undefined([0.2, math.nan], what="ρ")
    assert undefined([], what="ρ") is not None
    assert first_reason(None, "b", "c") == "b" and first_reason(None, None) is None
    with pytest.raises(ValueError, match="tol"):
        at_ideal(0.0, ideal=0, tol=-1, what="x")


def test_bootstrap_known_answers():
    g = torch.Generator().manual_seed(1)
    base = torch.randn(60, generator=g, dtype=torch.float64)
    better = base + 0.8 + 0.1 * torch.randn(60, generator=g, dtype=torch.float64)
    assert bootstrap_diff(better, base).outcome == "win"
    assert bootstrap_diff(base, better).outcome == "loss"
    # lower is better (ranks): the smaller values win
    assert bootstrap_diff(base, better, higher_is_better=False).outcome == "win"
    same = bootstrap_diff(base, base.clone())
    assert same.outcome == "tie" and same.low == same.high == 0.0
    constant_gap = bootstrap_diff(base + 1e-3, base)
    assert constant_gap.outcome == "win" and constant_gap.low == pytest.approx(1e-3)
    # deterministic for a seed; the interval contains the mean
    a, b = bootstrap_diff(better, base, seed=3), bootstrap_diff(better, base, seed=3)
    assert a == b and a.low <= a.mean <= a.high and a.n == 60


def test_bootstrap_error_rates_on_synthetic_data():
    """With no true difference a 95 % interval calls a winner rarely; with a clear one it almost always does."""
    false_calls = true_calls = 0
    for s in range(100):
        g = torch.Generator().manual_seed(100 + s)
        d0 = torch.randn(40, generator=g, dtype=torch.float64)
        d1 = torch.randn(40, generator=g, dtype=torch.float64) + 0.8
        false_calls += bootstrap_diff(d0, n_boot=1000, seed=s).outcome != "tie"
        true_calls += bootstrap_diff(d1, n_boot=1000, seed=s).outcome == "win"
    assert false_calls <= 12  # nominal 5 %; percentile intervals on n = 40 run a little narrow
    assert true_calls >= 95


def test_bootstrap_drops_nan_pairs_and_checks_inputs():
    a = torch.tensor([1.0, 2.0, math.nan, 4.0])
    assert bootstrap_diff(a, torch.zeros(4)).n == 3
    with pytest.raises(ValueError, match="paired units"):
        bootstrap_diff([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap_diff([1.0, math.nan], [0.0, 0.0])
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_diff([1.0, 2.0], n_boot=10)
    with pytest.raises(ValueError, match="level"):
        bootstrap_diff([1.0, 2.0], level=1.5)
    with pytest.raises(TypeError, match="a must be numbers"):
        bootstrap_diff("high")


def _c(outcome):
    return Comparison(0.0, -1.0, 1.0, 0.95, 10, outcome)


@pytest.mark.parametrize("outcomes,expected", [
    # a tie is undecided, never a failure: decided only when the verdict is the same whichever way the ties fall
    (("win", "win"), REPRODUCED), (("win", "win", "tie"), INCONCLUSIVE), (("win", "tie"), INCONCLUSIVE),
    (("win", "tie", "tie"), INCONCLUSIVE), (("tie", "tie"), INCONCLUSIVE), (("win", "loss"), PARTLY),
    (("win", "win", "loss"), PARTLY), (("loss", "tie"), INCONCLUSIVE), (("loss",), NOT),
    (("win", "loss", "tie"), PARTLY), (("loss", "loss"), NOT),
])
def test_from_comparison_rule(outcomes, expected):
    v = from_comparison({f"m{i}": _c(o) for i, o in enumerate(outcomes)})
    assert v == expected and "bootstrap" in v.why
    assert from_comparison({"m": _c("win")}, untestable="baseline at the ideal") == UNTESTABLE


def test_compare_ranks_lower_is_better():
    ranks = {"F-Fidelity": [1, 1, 2, 1, 1, 1], "Fidelity": [3, 4, 3, 4, 3, 4], "R-Fidelity": [1, 2, 1, 1, 2, 1]}
    result = compare(ranks, target="F-Fidelity", higher_is_better=False, n_boot=500)
    assert result["Fidelity"].outcome == "win" and result["R-Fidelity"].outcome == "tie"
    assert from_comparison(result) == INCONCLUSIVE  # beats one, ties one: reproduced or partly as the tie falls
    assert from_comparison(result, reproduced=0.5) == INCONCLUSIVE  # the tie could still be a loss
    with pytest.raises(ValueError, match="target"):
        compare(ranks, target="ROAR", higher_is_better=False)


def test_claim_note_carries_the_why(tmp_path):
    pytest.importorskip("pandas")
    from faithlab.outputs import Outputs

    out = Outputs("paper/experiment", tmp_path)
    row = out.claim("c", paper_value="p", our_value="o", verdict=ladder(False, untestable="saturated"), note="n")
    assert row["verdict"] == UNTESTABLE and row["note"] == "n; not testable: saturated"


def test_bootstrap_accepts_series_and_arrays_alike():
    pd = pytest.importorskip("pandas")
    a, b = [0.3, 0.5, 0.9, 0.7], [0.1, 0.2, 0.4, 0.3]
    ref = bootstrap_diff(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))
    assert bootstrap_diff(pd.Series(a), np.array(b)) == ref == bootstrap_diff(a, b)


# ------------------------------------------------------------------------------------------------ nulls, settings
def test_null_range_from_known_draws_and_the_premise_it_gives():
    from faithlab.verdicts import Null, within_null

    null = Null("shuffled pairings", tuple(np.linspace(-1.0, 1.0, 401)))  # uniform on [-1, 1]: 95 % = ±0.95
    assert null.low == pytest.approx(-0.95) and null.high == pytest.approx(0.95) and null.median == pytest.approx(0)
    assert null.contains(0.9) and not null.contains(0.96) and null.contains(float("nan"))
    reason = within_null(0.5, null, what="Spearman ρ")
    assert "Spearman ρ (0.500)" in reason and "shuffled pairings" in reason and "[-0.950, 0.950]" in reason
    assert within_null(-0.99, null, what="ρ") is None  # below chance is outside it too: a decision can be made
    assert verdict(0.5, reproduced="> 0.4", untestable=reason) == UNTESTABLE  # inside the null → not testable


def test_null_of_shuffled_pairings_separates_a_real_pairing_from_chance():
    from faithlab.verdicts import null_draws, within_null

    rng = np.random.default_rng(0)
    a = rng.normal(size=40)
    paired, unrelated = a + 0.3 * rng.normal(size=40), rng.normal(size=40)

    def rho(u, v):
        return float(np.corrcoef(u, v)[0, 1])

    null = null_draws(rho, a, paired, what="shuffled pairings", n_draws=300, seed=1)
    assert abs(null.median) < 0.1 and null.high < 0.45  # chance level of ρ on 40 pairs: about ±0.31
    assert within_null(rho(a, paired), null, what="ρ") is None  # the real pairing (ρ ≈ 0.95) is outside
    assert within_null(rho(a, unrelated), null_draws(rho, a, unrelated, what="shuffled pairings", n_draws=300),
                       what="ρ") is not None
    again = null_draws(rho, a, paired, what="shuffled pairings", n_draws=300, seed=1)
    assert again.draws == null.draws  # seeded


def test_null_and_settings_arguments_are_checked():
    from faithlab.verdicts import Null, from_settings, null_draws, within_null

    with pytest.raises(ValueError, match="what"):
        Null("", (0.0,) * 30)
    with pytest.raises(ValueError, match="draws"):
        Null("x", (0.0,) * 5)
    with pytest.raises(ValueError, match="level"):
        Null("x", (0.0,) * 30, level=0.3)
    with pytest.raises(TypeError, match="null"):
        within_null(0.1, (0.0, 1.0), what="x")
    with pytest.raises(ValueError, match="same number of rows"):
        null_draws(lambda a, b: 0.0, [1, 2, 3], [1, 2], what="x")
    with pytest.raises(ValueError, match="n_draws"):
        null_draws(lambda a, b: 0.0, [1, 2, 3], [1, 2, 3], what="x", n_draws=5)
    with pytest.raises(TypeError, match="holds"):
        from_settings([1, 0])
    with pytest.raises(ValueError, match="partly"):
        from_settings([True], partly=0.0)
    with pytest.raises(ValueError, match="partly"):
        from_settings([True], partly=0.8, reproduced=0.5)


@pytest.mark.parametrize("holds, expected", [
    ([True] * 28, REPRODUCED), ([True] * 19 + [False] * 9, REPRODUCED), ([True] * 18 + [False] * 10, PARTLY),
    ([True] * 10 + [False] * 18, PARTLY), ([True] * 9 + [False] * 19, NOT), ([True] + [False] * 27, NOT),
    ([], UNTESTABLE)])
def test_a_share_of_settings_fixed_before_the_result(holds, expected):
    """1 significant cell of 28 is not 'partly' (Few-class C3 was): partly needs a third, reproduced two thirds."""
    from faithlab.verdicts import from_settings

    v = from_settings(holds, what="cells")
    assert v == expected
    if holds:
        assert f"{sum(holds)} of {len(holds)} cells" in v.why


def test_settings_read_comparisons_and_a_stated_share():
    from faithlab.verdicts import Comparison, from_settings

    win, tie = Comparison(0.1, 0.05, 0.2, 0.95, 10, "win"), Comparison(0.0, -0.1, 0.1, 0.95, 10, "tie")
    assert from_settings([win, win, tie]) == REPRODUCED  # 2 of 3 hold: reproduced whichever way the tie falls
    assert from_settings([win, tie, tie]) == INCONCLUSIVE  # 1 of 3 (partly) to 3 of 3 (reproduced)
    assert from_settings([win, True, False, tie]) == INCONCLUSIVE  # 2 of 4 (partly) to 3 of 4 (reproduced)
    assert from_settings([True, True, False]) == REPRODUCED and from_settings([None, None, True]) == INCONCLUSIVE
    assert from_settings([win, tie], reproduced=0.51) == INCONCLUSIVE  # "most" stated as more than a half
    assert from_settings([win], untestable="the premise failed") == UNTESTABLE


def test_a_claim_function_s_record_reaches_claims_csv_with_its_rule_and_premise(tmp_path):
    import pandas as pd

    from faithlab.outputs import Outputs
    from faithlab.study import CLAIM_COLUMNS, CLAIMS
    from faithlab.verdicts import Claim, from_settings

    result = Claim("C3: SG raises Fid", rule="per cell, Fid with SG minus without; the paper's direction: up",
                   premise="the cells' gains lie outside the random-map null", paper_value="12 of 14",
                   our_value="1 of 28", verdict=from_settings([True] + [False] * 27, what="cells"))
    out = Outputs("paper/experiment", tmp_path)
    row = out.claim(result)
    saved = pd.read_csv(tmp_path / CLAIMS)
    assert list(saved.columns) == list(CLAIM_COLUMNS) and len(saved) == 1
    assert row["rule"] == saved["rule"][0] == result.rule and saved["premise"][0] == result.premise
    assert saved["verdict"][0] == NOT and "1 of 28 cells" in saved["note"][0]
    assert saved["decision"][0] == result.verdict.decision and "reproduced from 67%" in saved["decision"][0]
    with pytest.raises(ValueError, match="decision"):  # a hand-written threshold could contradict the code
        Claim("c", rule="reproduced when 2/3 of cells rise", premise="p", paper_value="", our_value="",
              verdict=ladder(True))
    with pytest.raises(TypeError, match="carries"):
        out.claim(result, verdict=REPRODUCED)
    with pytest.raises(ValueError, match="rule"):
        Claim("c", rule=" ", premise="p", paper_value="", our_value="", verdict=ladder(True))
    with pytest.raises(TypeError, match="verdict"):
        Claim("c", rule="r", premise="p", paper_value="", our_value="", verdict="reproduced")
    with pytest.raises(TypeError, match="claim"):
        out.claim(None, paper_value="p", our_value="o", verdict=REPRODUCED)


# ------------------------------------------------------------------------ the one procedure (issue 49)
def test_hierarchical_bootstrap_counts_the_replica_as_the_unit():
    import torch

    from faithlab.verdicts import bootstrap_diff, hierarchical_means

    # three replicas whose means differ a lot, little spread within: the plain bootstrap sees 90 tight units,
    # the two-stage bootstrap sees three replicas and a wide interval
    rng = np.random.default_rng(0)
    shifts = [-0.5, 0.1, 0.9]
    x = np.concatenate([s + 0.01 * rng.standard_normal(30) for s in shifts])
    groups = np.repeat(["r0", "r1", "r2"], 30)
    plain = bootstrap_diff(x, n_boot=2000)
    nested = bootstrap_diff(x, n_boot=2000, groups=groups)
    assert plain.outcome == "win" and nested.outcome == "tie"
    assert (nested.high - nested.low) > 4 * (plain.high - plain.low)
    # one replica: the plain bootstrap; constant data: a zero-width interval
    same = hierarchical_means(torch.ones(12, dtype=torch.float64), groups=torch.zeros(12, dtype=torch.long),
                              n_boot=200)
    assert torch.all(same == 1)
    # unequal replica sizes (5 zeros, 20 ones), each drawn replica contributing its own units: a draw is 0 (both
    # picks the small replica, p = 1/4), 1 (p = 1/4) or 20/25 = 0.8 (p = 1/2), so the draws average 0.65
    x2 = torch.tensor([0.0] * 5 + [1.0] * 20, dtype=torch.float64)
    g2 = torch.tensor([0] * 5 + [1] * 20)
    draws = hierarchical_means(x2, groups=g2, n_boot=4000, seed=1)
    assert draws.min() >= 0 and draws.max() <= 1 and abs(draws.mean().item() - 0.65) < 0.02
    with pytest.raises(ValueError, match="groups"):
        bootstrap_diff(x, groups=groups[:10])


@pytest.mark.parametrize("interval,expected", [
    ((0.85, 0.95), REPRODUCED), ((0.6, 0.7), PARTLY), ((0.1, 0.3), NOT),
    ((0.7, 0.9), INCONCLUSIVE), ((0.3, 0.6), INCONCLUSIVE),
])
def test_a_threshold_rule_is_applied_at_both_ends_of_the_interval(interval, expected):
    v = verdict(sum(interval) / 2, reproduced=">= 0.8", partly=">= 0.5", interval=interval, what="ρ")
    assert v == expected and "both ends" in v.decision and "0.8" in v.decision


def test_decide_against_a_margin_in_the_paper_s_direction():
    from faithlab.verdicts import decide_draws as decide

    draws = np.linspace(0.2, 0.4, 1000)
    assert decide(0.3, draws, margin=0.1) == REPRODUCED
    assert decide(0.3, draws, margin=0.3) == INCONCLUSIVE
    assert decide(0.3, draws, margin=0.5) == NOT
    assert decide(0.3, -draws, margin=0.0, higher_is_better=False) == REPRODUCED
    assert decide(0.3, draws, untestable="the stand-in has no OOD gap") == UNTESTABLE
    assert decide(float("nan"), draws) == UNTESTABLE
    assert "0.1" in decide(0.3, draws, margin=0.1).decision


def test_more_evidence_moves_a_verdict_out_of_inconclusive_never_from_not_reproduced_to_not_testable():
    """Monotonicity: as units grow, a real effect goes inconclusive → reproduced and an absent one inconclusive →
    not reproduced; a claim decided "not reproduced" never turns "not testable" with more data (the premise is a
    property of the stand-in, decided before the outcome statistic)."""
    from faithlab.verdicts import bootstrap_diff, hierarchical_means
    from faithlab.verdicts import decide_draws as decide

    import torch

    rng = np.random.default_rng(3)
    seen = {}
    for effect, margin in ((0.3, 0.0), (0.0, 0.2)):
        path = []
        for n in (4, 15, 60, 240):
            z = rng.standard_normal(n)
            x = torch.from_numpy(effect + (z - z.mean()) / z.std())  # the same effect, more units
            draws = hierarchical_means(x, n_boot=2000, seed=n)
            path.append(str(decide(x.mean().item(), draws, margin=margin)))
        seen[effect] = path
        order = {INCONCLUSIVE: 0, REPRODUCED: 1, NOT: 1}
        assert all(order[a] <= order[b] for a, b in zip(path, path[1:])), path
        assert UNTESTABLE not in path
    assert seen[0.3][0] == INCONCLUSIVE and seen[0.3][-1] == REPRODUCED
    assert seen[0.0][0] == INCONCLUSIVE and seen[0.0][-1] == NOT


def _claim_fn(frame, *, seed=0):
    from faithlab.verdicts import Claim, bootstrap_diff, from_settings

    c = bootstrap_diff(frame["a"], frame["b"], groups=frame.get("replica"), seed=seed, n_boot=400)
    return Claim("X: a beats b", rule="per image, a minus b; the paper's direction: up", premise="none",
                 paper_value="a > b", our_value=f"{c.mean:.2f}", verdict=from_settings([c], what="comparisons"),
                 units=len(frame))


def test_replicated_adds_replica_agreement_and_bootstrap_stability():
    import pandas as pd

    from faithlab.verdicts import replicated

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})
    claim = replicated(_claim_fn, frame)
    assert claim.verdict == REPRODUCED and claim.replica_agreement == "3 of 3 replicas"
    assert claim.bootstrap_stability == "20 of 20 seeds"
    assert claim.power.startswith("3 replicas suffice")  # effect 1 sd on 30 units per replica
    # a borderline effect whose verdict moves with the bootstrap seed is published as inconclusive
    wobbly = pd.DataFrame({"a": rng.standard_normal(60), "b": rng.standard_normal(60), "replica": 0})
    for shift in np.linspace(0, 0.8, 41):
        c = replicated(_claim_fn, wobbly.assign(a=wobbly["a"] + shift))
        if _claim_fn(wobbly.assign(a=wobbly["a"] + shift)).verdict in (REPRODUCED, NOT) and len(set(c.stability)) > 1:
            assert c.verdict == INCONCLUSIVE and "moves with the seed" in c.verdict.why
            break
    else:
        pytest.fail("no shift gave a seed-dependent verdict")
    # too few units per cell: decided verdicts are published as inconclusive, the premise says why
    small = replicated(_claim_fn, frame.iloc[:12].assign(a=5.0))
    assert small.verdict == INCONCLUSIVE and small.premise.startswith("none. Underpowered here: 12 units")


def test_a_claim_about_trained_models_is_decided_only_over_enough_replicas():
    """The trained model is the unit of replication: the same clear effect is reproduced over 3 replicas, but on
    one or two trained models (no replica column: one) it is published inconclusive, its premise saying so; a claim
    that rests on no training (trained=False: an identity, published weights) is decided on one model; a premise
    that fails ("not testable here") stays as it is."""
    import pandas as pd

    from faithlab.verdicts import Claim, Verdict, replicated

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})
    assert replicated(_claim_fn, frame).verdict == REPRODUCED
    two = replicated(_claim_fn, frame[frame.replica < 2])
    assert two.verdict == INCONCLUSIVE and two.raw == REPRODUCED and "2 trained models" in two.verdict.why
    assert two.replica_agreement == "2 of 2 replicas"
    one = replicated(_claim_fn, frame.drop(columns="replica"))
    assert one.verdict == INCONCLUSIVE and "one trained model" in one.verdict.why
    assert one.premise == ("none. Not replicated here: one trained model per setting (the rule asks 3; the "
                           "notebook's `replicas` parameter, where it has one, trains more).")
    assert one.replica_agreement == "one trained model"
    given = replicated(_claim_fn, frame.drop(columns="replica"), trained=False)
    assert given.verdict == REPRODUCED and given.replica_agreement == "—" and not given.trained

    def untestable(frame, *, seed=0):
        return Claim("Y: a premise fails", rule="per image, a minus b", premise="the mechanism is absent",
                     paper_value="a > b", our_value="-", verdict=Verdict(UNTESTABLE, "premise fails"), units=90)

    assert replicated(untestable, frame.drop(columns="replica")).verdict == UNTESTABLE
    with pytest.raises(TypeError, match="trained"):
        replicated(_claim_fn, frame, trained="yes")

    # a claim function that leaves a replica out (a per-replica premise fails) rests on the replicas it kept
    from dataclasses import replace

    def leaves_one_out(frame, *, seed=0):
        kept = frame[frame.replica != 2]
        return replace(_claim_fn(kept, seed=seed), kept_replicas=int(kept.replica.nunique()))

    left = replicated(leaves_one_out, frame)
    assert left.verdict == INCONCLUSIVE and left.raw == REPRODUCED and "2 trained models" in left.verdict.why
    assert replicated(leaves_one_out, frame, trained=False).verdict == REPRODUCED
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="kept_replicas"):
            replace(one, kept_replicas=bad)


def test_replica_seeds_are_keyed_to_setting_and_replica():
    from faithlab.verdicts import replica_seed

    seeds = {replica_seed(0, name, r) for name in ("vehicles/ResNet-18", "ct/Xception") for r in range(5)}
    assert len(seeds) == 10 and all(0 <= s < 2**31 for s in seeds)
    assert replica_seed(0, "a", 1) == replica_seed(0, "a", 1) != replica_seed(1, "a", 1)
    with pytest.raises(ValueError, match="replica"):
        replica_seed(0, "a", -1)


def test_power_approximation_matches_simulated_two_stage_bootstraps():
    """decided_probability (normal approximation) against the share of simulated designs — replica means drawn
    around the effect, units around them — whose two-stage bootstrap interval excludes 0."""
    import torch

    from faithlab.verdicts import decided_probability, hierarchical_means, variance_components

    rng = np.random.default_rng(11)
    mean, sd_b, sd_w, R, n = 0.25, 0.15, 0.6, 5, 12
    decided = 0
    sims = 150
    for s in range(sims):
        centres = mean + sd_b * rng.standard_normal(R)
        x = torch.from_numpy(np.concatenate([c + sd_w * rng.standard_normal(n) for c in centres]))
        g = torch.from_numpy(np.repeat(np.arange(R), n))
        draws = hierarchical_means(x, groups=g, n_boot=600, seed=s)
        low, high = torch.quantile(draws, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
        decided += low > 0 or high < 0
    simulated = decided / sims
    approx = decided_probability(mean, sd_b ** 2, sd_w ** 2, R, n)
    # the percentile bootstrap with 5 replicas is narrower than the normal interval: it decides a little more often
    assert abs(simulated - approx) < 0.2, (simulated, approx)
    # variance components recovered from one large design
    centres = mean + sd_b * rng.standard_normal(400)
    x = np.concatenate([c + sd_w * rng.standard_normal(n) for c in centres])
    m, vb, vw, k, nbar = variance_components(x, groups=np.repeat(np.arange(400), n))
    assert abs(m - mean) < 0.03 and abs(vb - sd_b ** 2) < 0.01 and abs(vw - sd_w ** 2) < 0.03 and k == 400


def test_replicas_needed_reads_the_recorded_comparisons():
    import torch

    from faithlab.verdicts import decided_probability, replicas_needed

    assert decided_probability(1.0, 0.0, 0.0, 3, 10) == 1.0 and decided_probability(0.0, 0.0, 0.0, 3, 10) == 0.0
    big = torch.tensor([1.0, 1.1, 0.9] * 10, dtype=torch.float64)
    groups = torch.arange(30) % 3
    assert replicas_needed([(big, groups)]).startswith("3 replicas suffice")
    rng = np.random.default_rng(0)
    small = torch.from_numpy(0.2 + rng.standard_normal(30))
    answer = replicas_needed([(small, groups)])
    assert answer.startswith("needs") or answer.startswith("more than"), answer
    nil = torch.from_numpy(rng.standard_normal(30) - 0.0)
    assert replicas_needed([]) == ""
    assert "more than 12" in replicas_needed([(nil - nil.mean(), groups)])


def test_premise_share_is_decided_on_its_interval():
    from faithlab.verdicts import premise_share

    assert premise_share(28, 30, at_least=0.5, what="x").holds is True
    assert premise_share(16, 30, at_least=0.5, what="x").holds is None  # 53 % of 30: could be either side
    assert premise_share(3, 30, at_least=0.5, what="x").holds is False
    v = verdict(1.0, reproduced=">= 0.8")
    assert premise_share(16, 30, at_least=0.5, what="x").apply(v) == INCONCLUSIVE
    assert premise_share(3, 30, at_least=0.5, what="x").apply(v) == UNTESTABLE
    assert premise_share(28, 30, at_least=0.5, what="x").apply(v) == REPRODUCED
    assert premise_share(3, 30, at_least=0.5, what="x").apply(v).decision == v.decision
    with pytest.raises(ValueError, match="successes"):
        premise_share(4, 3, at_least=0.5, what="x")


@pytest.mark.parametrize("premise, expected", [
    ("holds", "holds. S."), ("holds.", "holds. S."), ("holds (0.3 vs 0.2)", "holds (0.3 vs 0.2). S."),
    ("holds (see above.)", "holds (see above.) S."), ("holds. ", "holds. S."),
])
def test_a_sentence_the_procedure_adds_to_a_premise_starts_a_new_sentence(premise, expected):
    from faithlab.verdicts import _then

    assert _then(premise, "S.") == expected


def test_a_replica_too_small_for_the_statistic_is_left_out_not_counted_as_disagreeing():
    """A claim function that cannot compute its statistic on one replica's rows alone (ValueError) leaves that
    replica out of the agreement — it is shown as left out — and out of the replica count the rule asks for."""
    import pandas as pd

    from faithlab.verdicts import LEFT_OUT, replicated

    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(91), "b": rng.standard_normal(91),
                          "replica": np.r_[np.repeat([0, 1, 2], 30), 3]})  # replica 3 holds one unit

    def needs_two(frame, *, seed=0):
        if frame["replica"].nunique() == 1 and len(frame) < 2:
            raise ValueError("a bootstrap needs at least 2 paired units")
        return _claim_fn(frame, seed=seed)

    c = replicated(needs_two, frame, seeds=0)
    assert c.replicas == (REPRODUCED, REPRODUCED, REPRODUCED, LEFT_OUT)
    assert c.replica_agreement == "3 of 3 replicas (1 left out: too few units alone)"
    assert c.verdict == REPRODUCED
    short = replicated(needs_two, frame[frame.replica.isin([0, 1, 3])], seeds=0)
    assert short.verdict == INCONCLUSIVE and "2 trained models" in short.verdict.why


def test_replica_agreement_tells_undecided_replicas_from_disagreeing_ones():
    from dataclasses import replace

    from faithlab.verdicts import LEFT_OUT, Claim, Verdict

    c = Claim("Z: x", rule="per image, a", premise="none", paper_value="", our_value="",
              verdict=Verdict(REPRODUCED), units=40)
    assert replace(c, replicas=(REPRODUCED, INCONCLUSIVE, NOT)).replica_agreement == (
        "1 of 3 replicas (1 undecided alone)")
    assert replace(c, replicas=(REPRODUCED, INCONCLUSIVE, LEFT_OUT)).replica_agreement == (
        "1 of 2 replicas (1 undecided alone; 1 left out: too few units alone)")
    undecided = replace(c, verdict=Verdict(INCONCLUSIVE), replicas=(INCONCLUSIVE, REPRODUCED))
    assert undecided.replica_agreement == "1 of 2 replicas"

"""The verdict helper: every claim's verdict comes from a measured value and a stated rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from faithlab_study.verdicts import VERDICTS, ladder, verdict

REPRODUCED, WEAKER, PARTLY, NOT, UNTESTABLE, INCONCLUSIVE = VERDICTS


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
from faithlab_study.verdicts import Verdict, at_ideal, first_reason, undefined  # noqa: E402


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


def test_claim_note_carries_the_why(tmp_path):
    pytest.importorskip("pandas")
    from faithlab_study.artifacts import Outputs

    out = Outputs("paper/experiment", tmp_path)
    row = out.claim("c", paper_value="p", our_value="o", verdict=ladder(False, untestable="saturated"), note="n")
    assert row["verdict"] == UNTESTABLE and row["note"] == "n; not testable: saturated"


# ------------------------------------------------------------------------------------------------ nulls, settings
def test_null_range_from_known_draws_and_the_premise_it_gives():
    from faithlab_study.verdicts import Null, within_null

    null = Null("shuffled pairings", tuple(np.linspace(-1.0, 1.0, 401)))  # uniform on [-1, 1]: 95 % = ±0.95
    assert null.low == pytest.approx(-0.95) and null.high == pytest.approx(0.95) and null.median == pytest.approx(0)
    assert null.contains(0.9) and not null.contains(0.96) and null.contains(float("nan"))
    reason = within_null(0.5, null, what="Spearman ρ")
    assert "Spearman ρ (0.500)" in reason and "shuffled pairings" in reason and "[-0.950, 0.950]" in reason
    assert within_null(-0.99, null, what="ρ") is None  # below chance is outside it too: a decision can be made
    assert verdict(0.5, reproduced="> 0.4", untestable=reason) == UNTESTABLE  # inside the null → not testable


def test_null_of_shuffled_pairings_separates_a_real_pairing_from_chance():
    from faithlab_study.verdicts import null_draws, within_null

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
    from faithlab_study.verdicts import Null, null_draws, within_null

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


def test_a_claim_function_s_record_reaches_claims_csv_with_its_rule_and_premise(tmp_path):
    import pandas as pd

    from faithlab_study.artifacts import CLAIM_COLUMNS, CLAIMS, Outputs
    from faithlab_study.verdicts import Claim, decide, effect, rule

    b1 = rule("B1")
    result = Claim("C3: SG raises Fid", rule=b1, premise="the cells' gains lie outside the random-map null",
                   paper_value="0.05", our_value="-0.05",
                   verdict=decide(effect(np.linspace(-0.1, 0.0, 30), rule=b1), b1))
    out = Outputs("paper/experiment", tmp_path)
    row = out.claim(result)
    saved = pd.read_csv(tmp_path / CLAIMS)
    assert list(saved.columns) == list(CLAIM_COLUMNS) and len(saved) == 1
    assert row["rule"] == saved["rule"][0] == result.rule and saved["premise"][0] == result.premise
    assert saved["verdict"][0] == NOT and saved["rule_id"][0] == "B1"
    assert saved["decision"][0] == result.verdict.decision == b1.decision_text()
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
@pytest.mark.parametrize("interval,expected", [
    ((0.85, 0.95), REPRODUCED), ((0.6, 0.7), PARTLY), ((0.1, 0.3), NOT),
    ((0.7, 0.9), INCONCLUSIVE), ((0.3, 0.6), INCONCLUSIVE),
])
def test_a_threshold_rule_is_applied_at_both_ends_of_the_interval(interval, expected):
    v = verdict(sum(interval) / 2, reproduced=">= 0.8", partly=">= 0.5", interval=interval, what="ρ")
    assert v == expected and "both ends" in v.decision and "0.8" in v.decision


def _claim_fn(frame, *, seed=0):
    """A claim of rule B1 (margin 0.01, above) on per-image a − b, the t interval on the replica means; ``seed``
    moves nothing (the t interval resamples nothing), so its stability is 20 of 20."""
    from faithlab_study.verdicts import Claim, decide, effect, rule

    b1 = rule("B1")
    cell = effect(frame["a"], frame["b"], rule=b1, groups=frame.get("replica"))
    return Claim("X: a beats b", rule=b1, premise="none", paper_value="a > b", our_value=f"{cell.interval.estimate:.2f}",
                 verdict=decide(cell, b1), units=len(frame))


def _seeded_claim_fn(frame, *, seed=0):
    """The same claim decided on a percentile bootstrap of one model's units drawn with ``seed``: a verdict near
    the margin moves with the seed."""
    from faithlab_study.verdicts import Claim, decide, draws_interval, judge, rule

    b1 = rule("B1")
    x = (frame["a"] - frame["b"]).to_numpy()
    rng = np.random.default_rng(seed)
    draws = x[rng.integers(0, len(x), (400, len(x)))].mean(1)
    cell = judge(draws_interval(x.mean(), draws, units=len(x)), b1)
    return Claim("X: a beats b", rule=b1, premise="none", paper_value="a > b", our_value=f"{x.mean():.2f}",
                 verdict=decide(cell, b1), units=len(frame), trained=False)


def test_replicated_adds_replica_agreement_and_bootstrap_stability():
    import pandas as pd

    from faithlab_study.verdicts import replicated

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})
    claim = replicated(_claim_fn, frame)
    assert claim.verdict == REPRODUCED and claim.replica_agreement == "3 of 3 replicas"
    assert claim.bootstrap_stability == "20 of 20 seeds"
    assert claim.power.startswith("every cell decided at 3 replicas")  # effect 1 sd on 30 units per replica
    # a borderline effect whose verdict moves with the bootstrap seed is published as inconclusive
    wobbly = pd.DataFrame({"a": rng.standard_normal(60), "b": rng.standard_normal(60), "replica": 0})
    for shift in np.linspace(0.1, 0.6, 251):  # the bootstrap's 90 % interval crosses a boundary near 0.3
        c = replicated(_seeded_claim_fn, wobbly.assign(a=wobbly["a"] + shift))
        if (_seeded_claim_fn(wobbly.assign(a=wobbly["a"] + shift)).verdict in (REPRODUCED, WEAKER, NOT)
                and len(set(c.stability)) > 1):
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

    from faithlab_study.verdicts import Claim, Verdict, replicated

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})
    assert replicated(_claim_fn, frame).verdict == REPRODUCED
    # on two replicas the t interval has 1 degree of freedom: a large effect (5 sd) still decides it
    two = replicated(_claim_fn, frame[frame.replica < 2].assign(a=lambda f: f["a"] + 4))
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

    large = frame.assign(a=frame["a"] + 4)  # decided on the two kept replicas' t interval
    left = replicated(leaves_one_out, large)
    assert left.verdict == INCONCLUSIVE and left.raw == REPRODUCED and "2 trained models" in left.verdict.why
    assert replicated(leaves_one_out, large, trained=False).verdict == REPRODUCED
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="kept_replicas"):
            replace(one, kept_replicas=bad)


def test_replica_seeds_are_keyed_to_setting_and_replica():
    from faithlab_study.verdicts import replica_seed

    seeds = {replica_seed(0, name, r) for name in ("vehicles/ResNet-18", "ct/Xception") for r in range(5)}
    assert len(seeds) == 10 and all(0 <= s < 2**31 for s in seeds)
    assert replica_seed(0, "a", 1) == replica_seed(0, "a", 1) != replica_seed(1, "a", 1)
    with pytest.raises(ValueError, match="replica"):
        replica_seed(0, "a", -1)


def test_the_power_column_says_when_an_undecided_premise_holds_the_verdict_back():
    import pandas as pd

    from faithlab_study.verdicts import Premise, replicated

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})

    def waits(frame, *, seed=0):
        from dataclasses import replace

        claim = _claim_fn(frame)
        return replace(claim, verdict=Premise(None, "the stand-in's removal gap straddles 0.1").apply(claim.verdict))

    held = replicated(waits, frame)
    assert held.verdict == INCONCLUSIVE and held.power.startswith("every cell decided at 3 replicas")
    assert held.power.endswith("the outcome waits on its undecided premise")
    assert "waits" not in replicated(_claim_fn, frame).power


def test_premise_share_is_decided_on_its_interval():
    from faithlab_study.verdicts import premise_share

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
    from faithlab_study.verdicts import then

    assert then(premise, "S.") == expected


def test_a_replica_too_small_for_the_statistic_is_left_out_not_counted_as_disagreeing():
    """A claim function that cannot compute its statistic on one replica's rows alone (ValueError) leaves that
    replica out of the agreement — it is shown as left out — and out of the replica count the rule asks for."""
    import pandas as pd

    from faithlab_study.verdicts import LEFT_OUT, replicated

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


def test_a_replica_only_a_premise_frame_holds_is_left_out_not_counted_as_disagreeing():
    """Few-class's premise replicas appear in the flips frame only: the claim on their rows alone has nothing to
    test. Counted apart, not as a replica whose verdict disagrees; a claim not testable pooled keeps them."""
    from dataclasses import replace

    import pandas as pd

    from faithlab_study.verdicts import LEFT_OUT, Claim, Verdict, replicated

    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"a": 1 + rng.standard_normal(90), "b": rng.standard_normal(90),
                          "replica": np.repeat([0, 1, 2], 30)})
    premise = pd.DataFrame({"ok": [True] * 5, "replica": [0, 1, 2, 3, 4]})

    def claim(frame, premise, *, fails=False):
        if frame.empty or fails:
            return Claim("X: a beats b", rule="per image, a − b", premise="none", paper_value="", our_value="",
                         verdict=Verdict(UNTESTABLE, "not testable: nothing counted"), units=len(frame))
        return _claim_fn(frame)

    c = replicated(claim, frame, premise, seeds=0)
    assert c.verdict == REPRODUCED and c.replicas == (REPRODUCED,) * 3 + (UNTESTABLE,) * 2
    assert c.replica_agreement == "3 of 3 replicas (2 not testable alone)"
    one_statistic = replace(c, replicas=(LEFT_OUT,) * 3 + (UNTESTABLE,) * 2)  # C4: no replica decides alone
    assert one_statistic.replica_agreement == "5 replicas (3 too few units to decide alone; 2 not testable alone)"
    assert c.trained_replicas == one_statistic.trained_replicas == 5
    # every replica apart: all of them counted, never "0 replicas" (F6 once read "0 replicas (each too few units to
    # decide alone; 3 not testable alone)")
    apart = replace(c, replicas=(UNTESTABLE,) * 3)
    assert apart.replica_agreement == "3 replicas (each not testable alone)"
    untestable = replicated(claim, frame, premise, fails=True, seeds=0)
    assert untestable.replicas == (UNTESTABLE,) * 5 and untestable.replica_agreement == "5 of 5 replicas"


def test_replica_agreement_tells_undecided_replicas_from_disagreeing_ones():
    from dataclasses import replace

    from faithlab_study.verdicts import LEFT_OUT, Claim, Verdict

    c = Claim("Z: x", rule="per image, a", premise="none", paper_value="", our_value="",
              verdict=Verdict(REPRODUCED), units=40)
    assert replace(c, replicas=(REPRODUCED, INCONCLUSIVE, NOT)).replica_agreement == (
        "1 of 3 replicas (1 undecided alone)")
    assert replace(c, replicas=(REPRODUCED, INCONCLUSIVE, LEFT_OUT)).replica_agreement == (
        "1 of 2 replicas (1 undecided alone; 1 left out: too few units alone)")
    undecided = replace(c, verdict=Verdict(INCONCLUSIVE), replicas=(INCONCLUSIVE, REPRODUCED))
    assert undecided.replica_agreement == "1 of 2 replicas"
    # a claim on one statistic per replica: no replica decides alone, which is not a disagreement ("0 of 0")
    assert replace(c, replicas=(LEFT_OUT,) * 3).replica_agreement == "3 replicas (each too few units to decide alone)"
    assert replace(c, replicas=(LEFT_OUT,) * 3).trained_replicas == 3
    assert c.trained_replicas == 1 and c.replica_agreement == "one trained model"
    assert replace(c, trained=False).trained_replicas is None


def test_replicated_publishes_the_cell_table_and_the_verdict_before_issue_90():
    """An effect at half the margin, tight: the procedure of one boundary read it "not reproduced" (wholly short of
    the margin); asked direction and size apart it is "reproduced, weaker". replicated() keeps both, and the cell
    table holds the replica values the interval rests on, so the verdict can be recomputed from it."""
    import pandas as pd

    from faithlab_study.verdicts import intervals, replicated

    rng = np.random.default_rng(4)
    groups = np.repeat([0, 1, 2], 40)
    frame = pd.DataFrame({"a": 0.005 + 0.0005 * rng.standard_normal(120), "b": 0.0, "replica": groups})
    claim = replicated(_claim_fn, frame)
    assert claim.verdict == WEAKER and claim.before == NOT
    (row,) = claim.cells
    values = [float(v) for v in row["values"].split(";")]
    assert len(values) == 3 and row["level"] == pytest.approx(0.90) and row["outcome"] == "weaker"
    again = intervals.replica_interval(values, level=row["level"])
    assert (again.low, again.high) == pytest.approx((row["low"], row["high"]), rel=1e-5)
    assert row["zero"] == 0.0 and row["margin"] == 0.01 and 0 < row["low"] and row["high"] < 0.01
    # a strong effect: both procedures reproduce it
    strong = replicated(_claim_fn, frame.assign(a=frame["a"] + 1))
    assert strong.verdict == REPRODUCED and strong.before == REPRODUCED

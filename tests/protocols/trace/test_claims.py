"""TRACE's claims T1–T6 as functions (faithlab.protocols.trace.claim_*): each gives every verdict it can give on
small synthetic frames built for it, with its null (random orders, a random map's score with random signs, a flat
curve, a score of 0) deciding "not testable here"; T6 is an identity and fails only on a frame where insertion and
deletion disagree. The frame helpers hold what the metric computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.metrics import search as S
from faithlab.protocols import trace as P
from oracles import small_cnn

R, PARTLY, N, NT, INC = fl.verdicts.VERDICTS
N_IMAGES = 8  # per replica
REPLICAS = (0, 1)  # every synthetic frame holds two replicas (independently trained models), N_IMAGES each


def _random_sums(mean: float = 5.0, sd: float = 0.5, n_orders: int = 20, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"replica": r, "image": i, "order": j, "sum": mean + sd * rng.normal()}
                         for r in REPLICAS for i in range(N_IMAGES) for j in range(n_orders)])


# ------------------------------------------------------------------------------------------------------------- T1
def bound_sums(*, cs_le: float, gap: float, improve: float, cs_mo: float, seed: int = 0) -> pd.DataFrame:
    """CS, SA and Greedy sums per image: SA ``gap`` from CS (worse side), Greedy ``improve`` (± noise) from SA."""
    rng = np.random.default_rng(seed)
    rows = []
    for objective, cs0, sign in (("Le", cs_le, 1.0), ("Mo", cs_mo, -1.0)):
        for r in REPLICAS:
            for i in range(N_IMAGES):
                cs = cs0 + 0.1 * rng.normal()
                sa = cs - sign * gap * (1 + 0.1 * rng.random())
                gr = sa - sign * improve * (1 + 0.2 * rng.random()) if improve else sa
                rows += [{"search": s, "objective": objective, "replica": r, "image": i, "sum": v}
                         for s, v in (("CS", cs), ("SA", sa), ("Greedy", gr))]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("kwargs, expected", [
    ({"cs_le": 10.0, "gap": 0.02, "improve": 0.5, "cs_mo": 1.0}, R),  # above Greedy and at the bound, both
    ({"cs_le": 10.0, "gap": 2.0, "improve": 0.5, "cs_mo": 1.0}, PARTLY),  # above Greedy, far from the bound
    ({"cs_le": 10.0, "gap": 2.0, "improve": -0.5, "cs_mo": 1.0}, N),  # far from the bound, below Greedy
    ({"cs_le": 10.0, "gap": 0.02, "improve": 0.0, "cs_mo": 1.0}, INC),  # at the bound, SA ties Greedy: undecided
    ({"cs_le": 5.0, "gap": 0.02, "improve": 0.5, "cs_mo": 5.0}, NT),  # random orders reach the bound
])
def test_claim_t1_gives_every_verdict(kwargs, expected):
    claim = P.claim_search_bound(bound_sums(**kwargs), _random_sums())
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "by construction" in claim.premise and "random orders" in claim.premise
    assert set(claim.table["objective"]) == {"-Le", "-Mo"}


def test_claim_t1_does_not_ask_sa_to_beat_a_greedy_start_already_at_the_bound():
    claim = P.claim_search_bound(bound_sums(cs_le=10.0, gap=0.0, improve=0.0, cs_mo=1.0), _random_sums())
    assert claim.verdict == R and "2 of 2 checks" in claim.verdict.why  # only "almost reaches CS" is testable
    assert "not testable for -Le, -Mo" in claim.verdict.why
    assert (claim.table["SA beats Greedy"] == "not testable: Greedy already at the bound").all()
    assert "Greedy already at the bound" in claim.premise


def test_claim_t1_measures_the_gap_against_the_random_span():
    claim = P.claim_search_bound(bound_sums(cs_le=10.0, gap=1.0, improve=0.5, cs_mo=1.0), _random_sums())
    le = claim.table.set_index("objective").loc["-Le"]
    assert le["relative gap SA → CS"] == pytest.approx(1.05 / 5.0, abs=0.03)  # gap 1.0–1.1 over a span of about 5
    assert claim.verdict == PARTLY and le["gap ≤ 0.05"] == "loss" and le["SA beats Greedy"] == "win"


# ------------------------------------------------------------------------------------------------------ T2, T2b
def table1_scores(means: dict[str, dict[str, float]], *, models=("m",), seed: int = 0) -> pd.DataFrame:
    """Per-image ΣLeRF − ΣMoRF (probabilities) around ``means[reference][method]``; "Random" is N(0, 2) per image
    (a random map: symmetric about 0) unless given."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in models:
            for ref, per in means.items():
                for method, mu in {"Random": None, **per}.items():
                    values = rng.normal(0, 2, N_IMAGES) if mu is None else mu + 0.5 * rng.normal(size=N_IMAGES)
                    rows += [{"replica": r, "model": model, "reference": ref, "output": "probability",
                              "method": method, "image": i, "LeRF − MoRF": v} for i, v in enumerate(values)]
    return pd.DataFrame(rows)


GOOD = {"T-p": 30.0, "T-y": 25.0, "A": 15.0, "B": 10.0}


@pytest.mark.parametrize("means, expected", [
    ({"zero": GOOD, "blur": GOOD}, R),                                               # beats all, both references
    ({"zero": GOOD, "blur": {**GOOD, "T-p": 12.0}}, PARTLY),                         # below A under blur
    ({"zero": {**GOOD, "T-p": 12.0}, "blur": {**GOOD, "T-p": 12.0}}, N),             # below A under both
    ({"zero": GOOD, "blur": {**GOOD, "T-p": 15.0}}, INC),                            # level with A under blur
    ({"zero": {**GOOD, "A": 0.0, "B": -0.2}, "blur": {**GOOD, "A": 0.1, "B": 0.0}}, NT),  # every method at chance
])
def test_claim_t2_gives_every_verdict(means, expected):
    claim = P.claim_beats_methods(table1_scores(means), model="m")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert "built in" in claim.premise and "random signs" in claim.premise
    assert "T-y" not in set(claim.table["competitor"])


@pytest.mark.parametrize("means, models, expected", [
    ({"zero": GOOD, "blur": GOOD}, ("m1", "m2"), R),
    ({"zero": GOOD, "blur": {**GOOD, "T-y": 35.0}}, ("m1",), PARTLY),                # T-y ahead under blur
    ({"zero": GOOD, "blur": {**GOOD, "T-y": 30.0}}, ("m1",), INC),                   # level under blur
    ({"zero": {**GOOD, "T-p": 20.0}, "blur": {**GOOD, "T-p": 20.0}}, ("m1",), N),    # T-y ahead
    ({"zero": {**GOOD, "T-y": 0.0}, "blur": {**GOOD, "T-y": 0.1}}, ("m1",), NT),     # T-y at chance: nothing to beat
])
def test_claim_t2b_gives_every_verdict(means, models, expected):
    claim = P.claim_probability_beats_logit(table1_scores(means, models=models))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert len(claim.table) == 2 * len(models) and "built in" in claim.premise


# ------------------------------------------------------------------------------------------------------------- T3
def random_curves(areas: dict[tuple[str, int], float], *, models=("m",), seed: int = 0) -> pd.DataFrame:
    """Curves [1, v, v, v, v] per model, reference, patch side and image with v around ``areas[(reference, side)]``
    (f(x) = 1: the first point)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in models:
            for (ref, side), v in areas.items():
                for i in range(N_IMAGES):
                    level = v + 0.02 * rng.normal()  # around 1: an output that jitters but does not fall
                    rows += [{"replica": r, "model": model, "reference": ref, "patch side": side, "edge": 14 // side,
                              "image": i, "deleted": k, "fraction": k / 4, "value": 1.0 if k == 0 else level}
                             for k in range(5)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("areas, expected", [
    ({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8, ("blur", 7): 0.6}, R),       # faster fall, gap shrinks
    ({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.2, ("blur", 7): 0.9}, PARTLY),  # the gap grows
    ({("zero", 1): 0.5, ("zero", 7): 0.1, ("blur", 1): 0.6, ("blur", 7): 0.8}, N),       # neither
    ({("zero", 1): 0.3, ("zero", 7): 0.3, ("blur", 1): 0.5, ("blur", 7): 0.5}, INC),     # no change: both undecided
    ({("zero", 1): 1.0, ("zero", 7): 1.0, ("blur", 1): 1.0, ("blur", 7): 1.0}, NT),      # deletion changes nothing
])
def test_claim_t3_gives_every_verdict(areas, expected):
    claim = P.claim_random_test(random_curves(areas, models=("m1", "m2")))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert "flat curve" in claim.premise and len(claim.table) == 2


def test_claim_t3_with_one_image_is_not_testable():
    one = random_curves({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8, ("blur", 7): 0.6})
    claim = P.claim_random_test(one[(one.image == 0) & (one.replica == 0)])
    assert claim.verdict == NT and "fewer than two images" in claim.verdict.why


# ------------------------------------------------------------------------------------------------------------- T4
def cross_scores(le: tuple[float, float], mo: tuple[float, float], seed: int = 0) -> pd.DataFrame:
    """(ΣLeRF, ΣMoRF) around ``le`` for SA-Le and ``mo`` for SA-Mo, per image."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"method": name, "replica": r, "image": i, "LeRF": lerf + rng.normal(),
                          "MoRF": morf + rng.normal()}
                         for name, (lerf, morf) in (("SA-Le", le), ("SA-Mo", mo)) for r in REPLICAS
                         for i in range(N_IMAGES)])


@pytest.mark.parametrize("le, mo, expected", [
    ((45.0, 10.0), (15.0, 5.0), R),       # SA-Mo loses 30 under LeRF, SA-Le 5 under MoRF
    ((45.0, 20.0), (30.0, 5.0), INC),     # both lose 15: a tie is inconclusive, never "not testable"
    ((45.0, 35.0), (40.0, 5.0), N),       # SA-Le's MoRF loss is the larger
    ((25.0, 10.0), (15.0, 5.0), NT),      # SA-Le's ΣLeRF is at chance: the search found nothing
])
def test_claim_t4_gives_every_verdict(le, mo, expected):
    claim = P.claim_cross_test(cross_scores(le, mo), _random_sums(mean=25.0))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert "chance" in claim.premise and len(claim.table) == 3


# ------------------------------------------------------------------------------------------------------------- T5
def level_scores(spec: dict[str, tuple[float, float]], seed: int = 0) -> pd.DataFrame:
    """ΣLeRF − ΣMoRF per model × image × reference × method: ``spec[method] = (level, sway)``; the reference moves
    each image's score by ±``sway`` (random per image), the level is the score's mean."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in ("m1", "m2"):
            for method, (level, sway) in spec.items():
                for i in range(N_IMAGES):
                    base = level + 0.5 * rng.normal() if level else 3 * rng.normal()
                    for ref, step in (("zero", -1.0), ("mean", 0.0), ("blur", 1.0)):
                        rows.append({"replica": r, "model": model, "method": method, "image": i, "reference": ref,
                                     "output": "probability",
                                     "LeRF − MoRF": base + step * sway * (0.5 + rng.random())})
    return pd.DataFrame(rows)


PATCHES = {"T-p": (30.0, 0.5), "Grad": (8.0, 0.5), "IG": (8.0, 0.5)}


@pytest.mark.parametrize("pixels, expected", [
    ({"GC": (5.0, 0.2), "IG": (5.0, 2.0), "Grad": (5.0, 2.0)}, R),         # both move far more than TRACE
    ({"GC": (5.0, 0.2), "IG": (5.0, 0.01), "Grad": (5.0, 2.0)}, PARTLY),   # IG barely moves
    ({"GC": (5.0, 2.0), "IG": (5.0, 0.01), "Grad": (5.0, 0.01)}, N),       # only Grad-CAM (not counted) moves
    ({"GC": (5.0, 0.2), "IG": (5.0, 0.083), "Grad": (5.0, 2.0)}, INC),     # IG moves as much as TRACE: undecided
    ({"GC": (5.0, 2.0), "IG": (0.0, 2.0), "Grad": (0.0, 2.0)}, NT),        # Grad and IG at chance (0)
])
def test_claim_t5_gives_every_verdict(pixels, expected):
    claim = P.claim_reference_robust(level_scores(PATCHES), level_scores(pixels, seed=1))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    table = claim.table.set_index("method")
    assert not table.loc["GC", "counted"] and "same method on patches" in table.columns
    assert "above chance" in claim.premise


# ------------------------------------------------------------------------------------------------------------- T6
@pytest.mark.parametrize("error, expected", [(1e-9, R), (1e-3, N), (None, NT)])
def test_claim_t6_is_an_implementation_check_that_can_fail(error, expected):
    rng = np.random.default_rng(0)
    deletion = 10 + rng.random(2 * N_IMAGES)
    frame = pd.DataFrame({"method": ["SA-Le"] * (2 * N_IMAGES), "deletion": ["LeRF", "MoRF"] * N_IMAGES,
                          "image": np.repeat(np.arange(N_IMAGES), 2), "deletion AUC": deletion,
                          "insertion AUC": deletion * (1 + (error or 0) * (np.arange(2 * N_IMAGES) == 3))})
    claim = P.claim_insertion_equals_deletion(frame.iloc[:0] if error is None else frame)
    assert claim.verdict == expected, claim.our_value
    assert claim.kind == "study check" and claim.verdict.decision
    if error is not None:
        assert "by construction" in claim.premise and "implementation" in claim.rule


# ------------------------------------------------------------------------------------------------ frames and nulls
def test_sign_flip_null_is_symmetric_about_zero_and_scaled_by_the_values():
    null = P.sign_flip_null([1.0, -2.0, 3.0, 0.5, 1.5, -1.0, 2.0, 0.0], what="random map")
    assert null.median == pytest.approx(0.0, abs=0.1) and null.low == pytest.approx(-null.high, abs=0.15)
    assert 0.5 < null.high < 1.4  # the sd of the mean of ±d is √(Σd²)/n ≈ 0.6
    with pytest.raises(ValueError, match="values"):
        P.sign_flip_null([], what="random map")


def test_random_trajectory_null_draws_one_order_per_image():
    random = pd.DataFrame({"image": [0, 0, 1, 1], "order": [0, 1, 0, 1], "sum": [1.0, 3.0, 5.0, 7.0]})
    null = P.random_trajectory_null(random, what="random orders", n_draws=400)
    assert set(np.round(null.draws, 6)) == {3.0, 4.0, 5.0}  # (1 or 3) + (5 or 7), halved
    assert P.random_trajectory_null(random, sign=-1.0, what="oriented").median == pytest.approx(-null.median)


def test_random_order_sums_and_curve_sums_hold_the_metric_curves():
    model, x = small_cnn(2, 8, 3), torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(2))
    y = torch.tensor([0, 1, 2])
    frame = P.random_order_sums(model, x, y, edge=2, n_orders=4, generator=7)
    curves = S.random_deletion_curves(model, x, edge=2, n_orders=4, generator=torch.Generator().manual_seed(7),
                                      target=y)
    np.testing.assert_allclose(frame.sort_values(["image", "order"])["sum"], curves.double().sum(2).flatten(),
                               rtol=1e-6)
    g = S.greedy(model, x, edge=2, objective="le", target=y)
    sums = P.curve_sums({("Greedy", "Le"): g.lerf, ("Greedy", "Mo"): g.morf})
    np.testing.assert_allclose(sums[sums.objective == "Mo"]["sum"], g.morf.double().sum(1), rtol=1e-6)


def test_insertion_deletion_frame_pairs_each_deletion_with_the_reverse_insertion():
    model, x = small_cnn(2, 8, 3), torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    y = torch.tensor([1, 2])
    searches = {"Greedy-Le": S.greedy(model, x, edge=2, objective="le", target=y)}
    frame = P.insertion_deletion_frame(model, x, searches, edge=2, target=y)
    assert len(frame) == 2 * 2 and set(frame["deletion"]) == {"LeRF", "MoRF"}
    np.testing.assert_allclose(frame["insertion AUC"], frame["deletion AUC"], rtol=1e-5)
    assert P.claim_insertion_equals_deletion(frame).verdict == R


# ------------------------------------------------------------------------------------------- the one procedure
def _every_claim():
    """(claim function, args, kwargs) for every TRACE claim on two-replica frames (T6 has no replica column)."""
    rng = np.random.default_rng(0)
    deletion = 10 + rng.random(4)
    t6 = pd.DataFrame({"method": ["SA-Le"] * 4, "deletion": ["LeRF", "MoRF"] * 2, "image": [0, 0, 1, 1],
                       "deletion AUC": deletion, "insertion AUC": deletion})
    areas = {("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8, ("blur", 7): 0.6}
    return [
        (P.claim_search_bound, (bound_sums(cs_le=10.0, gap=0.02, improve=0.5, cs_mo=1.0), _random_sums()), {}),
        (P.claim_beats_methods, (table1_scores({"zero": GOOD, "blur": GOOD}),), {"model": "m"}),
        (P.claim_probability_beats_logit, (table1_scores({"zero": GOOD, "blur": GOOD}),), {}),
        (P.claim_random_test, (random_curves(areas),), {}),
        (P.claim_cross_test, (cross_scores((45.0, 10.0), (15.0, 5.0)), _random_sums(mean=25.0)), {}),
        (P.claim_reference_robust, (level_scores(PATCHES),
                                    level_scores({"GC": (5.0, 0.2), "IG": (5.0, 2.0), "Grad": (5.0, 2.0)}, seed=1)),
         {}),
        (P.claim_insertion_equals_deletion, (t6,), {}),
    ]


@pytest.mark.parametrize("i", range(7))
def test_every_claim_takes_a_seed_and_one_replica_and_decides_by_the_one_procedure(i):
    fn, args, kwargs = _every_claim()[i]
    whole = fn(*args, **kwargs, seed=3)
    assert whole.verdict.decision
    assert whole.units if fn is not P.claim_insertion_equals_deletion else whole.units is None  # exact: no sampling
    assert not fl.verdicts._states_decision(whole.rule)
    one = [a[a["replica"] == 0] if "replica" in a.columns else a for a in args]
    alone = fn(*one, **kwargs, seed=3)  # one replica's rows alone
    assert alone.verdict in fl.verdicts.VERDICTS
    if fn is not P.claim_insertion_equals_deletion:
        assert alone.units >= N_IMAGES and whole.units == len(REPLICAS) * alone.units  # units pooled over replicas
    claim = fl.verdicts.replicated(fn, *args, **kwargs, seed=3, seeds=3)
    assert claim.verdict in fl.verdicts.VERDICTS
    assert len(claim.replicas) == (len(REPLICAS) if fn is not P.claim_insertion_equals_deletion else 0) \
        or claim.replicas == ()
    assert claim.kind == ("study check" if fn is P.claim_insertion_equals_deletion else "paper")


def test_claim_t3_premise_uses_a_tolerance_not_an_exact_boundary():
    # the output falls by 0.03 on average: beyond the default tolerance (0.01), inside a tolerance of 0.05
    areas = {("zero", 1): 0.97, ("zero", 7): 0.97, ("blur", 1): 0.97, ("blur", 7): 0.97}
    claim = P.claim_random_test(random_curves(areas, models=("m1", "m2")), premise_tol=0.05)
    assert claim.verdict == NT and "0.05" in claim.verdict.why
    assert P.claim_random_test(random_curves(areas, models=("m1", "m2"))).verdict != NT


def test_claim_t4_a_tie_is_inconclusive_and_never_not_testable():
    claim = P.claim_cross_test(cross_scores((45.0, 20.0), (30.0, 5.0)), _random_sums(mean=25.0))
    assert claim.verdict == INC and "margin 0" in claim.verdict.why


def test_claims_bootstrap_replicas_then_images():
    # two replicas far apart: the two-stage interval (replicas drawn first) is wider than one over pooled images
    frame = table1_scores({"zero": GOOD, "blur": GOOD}, models=("m1",))
    shifted = frame.assign(**{"LeRF − MoRF": frame["LeRF − MoRF"]
                              + np.where((frame["replica"] == 1) & (frame["method"] == "T-p"), -8.0, 0.0)})
    pooled = P.claim_probability_beats_logit(shifted.drop(columns="replica"))
    nested = P.claim_probability_beats_logit(shifted)
    width = lambda c: float((c.table["high"] - c.table["low"]).mean())  # noqa: E731
    assert width(nested) > width(pooled)

"""TRACE's claims T1–T6 as functions (faithlab_study.papers.trace.claim_*), decided by the rules registered
above them: on small synthetic frames of three trained replicas each gives every verdict
it can give — reproduced (the interval beyond the margin), reproduced, weaker (beyond the value of no effect in the
paper's direction, short of the margin), not reproduced by equivalence (a tight interval inside the band of no
meaningful effect) and by reversal, inconclusive (the interval reaches both the value of no effect and the margin; or
the claim's premise is undecided), not testable here
(the chapter's mechanism premise fails: deletion does not lower the prediction, or the search does not beat random
orders) and, for T3's two named parts, partly reproduced. The frame helpers hold what the metric computed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics import search as S
from faithlab_study.papers import trace as P
from oracles import small_cnn

R, W, PARTLY, N, NT, INC = fs.verdicts.VERDICTS  # W: reproduced, weaker
N_IMAGES = 10  # per replica
REPLICAS = (0, 1, 2)  # every synthetic frame holds three replicas (independently trained models), N_IMAGES each


def _random_sums(mean: float = 5.0, sd: float = 0.5, n_orders: int = 20, points: int = 17, seed: int = 1,
                 models=None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"replica": r, "image": i, "order": j, "sum": mean + sd * rng.normal(), "points": points}
            for r in REPLICAS for i in range(N_IMAGES) for j in range(n_orders)]
    frame = pd.DataFrame(rows)
    return frame if models is None else pd.concat([frame.assign(model=m) for m in models], ignore_index=True)


# ------------------------------------------------------------------------------------------------------------- T1
def bound_sums(*, cs_le: float = 10.0, gap: float | tuple = 0.02, improve: float = 0.5, cs_mo: float = 1.0,
               noise: float = 0.1, seed: int = 0) -> pd.DataFrame:
    """CS, SA and Greedy sums per image (17 points, f(x) = 1): SA ``gap`` (× 1 ± ``noise``; one per replica when a
    tuple) from CS on the worse side, Greedy ``improve`` from SA."""
    rng = np.random.default_rng(seed)
    rows = []
    for objective, cs0, sign in (("Le", cs_le, 1.0), ("Mo", cs_mo, -1.0)):
        for r in REPLICAS:
            for i in range(N_IMAGES):
                cs = cs0 + 0.1 * rng.normal()
                sa = cs - sign * (gap[r] if isinstance(gap, tuple) else gap) * (1 + noise * rng.normal())
                gr = sa - sign * improve * (1 + 0.2 * rng.random())
                rows += [{"search": s, "objective": objective, "replica": r, "image": i, "sum": v, "f(x)": 1.0,
                          "points": 17} for s, v in (("CS", cs), ("SA", sa), ("Greedy", gr))]
    return pd.DataFrame(rows)


# T1's value of no effect is 1 (SA's distance to the bound as far as a random order's), its margin 0.079
@pytest.mark.parametrize("kwargs, expected, outcome", [
    ({"gap": 0.02}, R, "holds"),                          # SA within 0.4 % of the way to the bound
    ({"gap": 2.0}, W, "weaker"),                          # 40–50 % of the way: far better than random, not negligible
    ({"gap": 5.0, "cs_mo": 0.0}, N, "absent"),            # as far as a random order: SA no better than random
    ({"gap": 7.0, "cs_mo": 0.0}, N, "absent"),            # further than a random order: reversed
    ({"gap": (0.1, 2.5, 4.9), "cs_mo": 0.0}, INC, "undecided"),  # the replicas disagree: reaches 0.079 and 1
    ({"cs_le": 5.0, "cs_mo": 5.0}, NT, "fails"),          # random orders reach the bound: premise (b) fails
])
def test_claim_t1_gives_every_verdict(kwargs, expected, outcome):
    claim = P.claim_search_bound(bound_sums(**kwargs), _random_sums())
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert claim.rule_id == "T1" and claim.kind == "paper" and claim.units == 30
    assert set(claim.table["objective"]) == {"-Le", "-Mo"}
    if expected != NT:
        assert set(claim.table["outcome"]) == {outcome}
        assert (claim.table["margin"] == 0.079).all() and (claim.table["replicas"] == 3).all()
        assert fs.verdicts.rule("T1").zero == 1.0
    else:
        assert "the bound CS beats random orders" in claim.verdict.why


def test_claim_t1_measures_the_gap_against_the_random_span():
    claim = P.claim_search_bound(bound_sums(gap=1.0, noise=0.0), _random_sums())
    le = claim.table.set_index("objective").loc["-Le"]
    assert le["estimate"] == pytest.approx(1.0 / 5.0, abs=0.02)  # a gap of 1 over a span of about 5
    assert "by construction" in claim.premise or "T1.greedy" in fs.verdicts.rule("T1").note


@pytest.mark.parametrize("improve, expected", [(0.5, R), (0.0, INC), (-0.5, N)])
def test_claim_t1_greedy_is_a_study_check_that_a_bug_would_fail(improve, expected):
    claim = P.claim_search_beats_greedy(bound_sums(improve=improve), _random_sums())
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.rule_id == "T1.greedy" and claim.kind == "study check"


def test_claim_t1_premise_a_fails_when_deletion_does_not_lower_the_prediction():
    sums = bound_sums().assign(**{"f(x)": 0.3})  # f(x) at a random order's mean level (5 / 17)
    claim = P.claim_search_bound(sums, _random_sums())
    assert claim.verdict == NT and "(a) deletion lowers the prediction" in claim.verdict.why


# ------------------------------------------------------------------------------------------------------ T2, T2b
def table1_scores(means: dict[str, dict[str, float]], *, models=("m",), sd: float = 0.5, seed: int = 0,
                  random_lerf: float = 20.0) -> pd.DataFrame:
    """Per-image ΣLeRF − ΣMoRF (probabilities, 50 points, f(x) = 1) around ``means[reference][method]`` (± ``sd``;
    one mean per replica when a tuple); "Random" is N(0, 2) per image (a random order: symmetric about 0) with ΣLeRF
    around ``random_lerf``."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in models:
            for ref, per in means.items():
                for method, mu in {"Random": None, **per}.items():
                    mu = mu[r] if isinstance(mu, tuple) else mu
                    values = rng.normal(0, 2, N_IMAGES) if mu is None else mu + sd * rng.normal(size=N_IMAGES)
                    lerf = random_lerf + rng.normal(size=N_IMAGES) if mu is None else 25 + values / 2
                    rows += [{"replica": r, "model": model, "reference": ref, "output": "probability",
                              "method": method, "image": i, "LeRF − MoRF": v, "LeRF": le, "MoRF": le - v,
                              "f(x)": 1.0, "points": 50} for i, (v, le) in enumerate(zip(values, lerf))]
    return pd.DataFrame(rows)


GOOD = {"T-p": 30.0, "T-y": 25.0, "A": 15.0, "B": 10.0}


@pytest.mark.parametrize("means, expected, why", [
    ({"zero": GOOD, "blur": GOOD}, R, "holds in 4 of 4"),                      # shortfall 0.5 and 0.67 > 0.2
    # A 10 % short (half the margin): shown within it; that T-p leads at all is built in (it optimises this score),
    # so the rule has one boundary and a smaller lead is no effect, not a weaker one
    ({"zero": GOOD, "blur": {**GOOD, "A": 27.0}}, N, "holds in 3, absent in 1"),
    ({"zero": GOOD, "blur": {**GOOD, "A": 30.0}}, N, "absent in 1"),          # A ties T-p: inside the band
    ({"zero": GOOD, "blur": {**GOOD, "A": 35.0}}, N, "absent in 1"),          # A ahead of T-p: reversed
    ({"zero": GOOD, "blur": {**GOOD, "A": (30.0, 27.0, 24.0)}}, INC, "undecided in 1"),  # replicas disagree
    ({"zero": {**GOOD, "T-p": 1.0, "A": 0.5, "B": 0.2}, "blur": GOOD}, NT, "T-p beats random orders"),
])
def test_claim_t2_gives_every_verdict(means, expected, why):
    claim = P.claim_beats_methods(table1_scores(means, sd=1.5), model="m")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert why in claim.verdict.why
    assert claim.rule_id == "T2" and claim.units == 30
    assert set(claim.table["cell"]) == {f"{ref}: {m}" for ref in means for m in ("A", "B")}  # not T-y, not Random


def test_claim_t2_premise_a_fails_when_deletion_does_not_lower_the_prediction():
    claim = P.claim_beats_methods(table1_scores({"zero": GOOD}, random_lerf=49.0), model="m")  # 0.98 per point
    assert claim.verdict == NT and "(a) deletion lowers the prediction" in claim.verdict.why


def premise_frame(drop: dict[str, float], *, replicas=(0, 1, 2, 3, 4), n: int = 40, models=("m",), sd: float = 0.05,
                  seed: int = 3) -> pd.DataFrame:
    """A premise_scores frame: only the Random map, probabilities, 50 points, f(x) = 1 and ΣLeRF / 50 = 1 − the
    reference's ``drop`` (± ``sd`` per image), on ``replicas`` × ``n`` images."""
    rng = np.random.default_rng(seed)
    rows = [{"replica": r, "model": m, "reference": ref, "output": "probability", "method": "Random", "image": i,
             "LeRF": 50 * (1 - d + sd * rng.normal()), "f(x)": 1.0, "points": 50}
            for r in replicas for m in models for ref, d in drop.items() for i in range(n)]
    return pd.DataFrame(rows)


def test_premise_a_is_decided_on_premise_scores_when_given():
    scores = table1_scores({"zero": GOOD, "blur": GOOD}, random_lerf=49.0)  # the searched images: no drop at all
    alone = P.claim_beats_methods(scores, model="m")
    assert alone.verdict == NT and "(a) deletion lowers the prediction" in alone.verdict.why
    frame = premise_frame({"zero": 0.5, "blur": 0.3})
    claim = P.claim_beats_methods(scores, model="m", premise_scores=frame)
    assert claim.verdict == R, (claim.verdict.why, claim.premise)
    checked = P.table1_premises(scores, premise_scores=frame)
    a = checked[checked["premise"].str.startswith("(a)")].set_index("data set")
    assert (a["replicas"] == 5).all() and (a["images"] == 200).all()  # the premise frame's design, not the searches'
    assert a.loc["m, blur", "estimate"] == pytest.approx(0.3, abs=0.02)
    b = checked[checked["premise"].str.startswith("(b)")]
    assert (b["replicas"] == 3).all() and (b["images"] == 30).all()  # (b) stays on the searched images
    # the premise frame decides (a) either way: no drop there fails it although the searched images' drop is large
    lowered = table1_scores({"zero": GOOD, "blur": GOOD}, random_lerf=20.0)
    assert P.claim_beats_methods(lowered, model="m").verdict == R
    flat = P.claim_beats_methods(lowered, model="m", premise_scores=premise_frame({"zero": 0.5, "blur": 0.0}))
    assert flat.verdict == NT and "m, blur" in flat.verdict.why
    for fn, args in ((P.claim_probability_beats_logit, (lowered,)),):
        assert fn(*args, premise_scores=premise_frame({"zero": 0.5, "blur": 0.0})).verdict == NT
    with pytest.raises(ValueError, match="premise_scores must hold 'Random' for 'm', 'blur'"):
        P.table1_premises(scores, premise_scores=premise_frame({"zero": 0.5}))


@pytest.mark.parametrize("means, sd, expected", [
    ({"zero": GOOD, "blur": GOOD}, 1.0, R),                            # T-y 17 % behind T-p: beyond 0.079
    ({"zero": GOOD, "blur": {**GOOD, "T-y": 28.5}}, 0.3, N),           # 5 % behind: within 0.079 (one boundary)
    ({"zero": GOOD, "blur": {**GOOD, "T-y": 30.0}}, 0.3, N),           # a tie: inside the band
    ({"zero": GOOD, "blur": {**GOOD, "T-y": 33.0}}, 1.0, N),           # T-y ahead: reversed
    ({"zero": GOOD, "blur": {**GOOD, "T-y": (30.0, 27.6, 25.0)}}, 1.0, INC),  # replicas disagree: reaches 0, 0.079
    ({"zero": {**GOOD, "T-y": 2.0}, "blur": GOOD}, 1.0, NT),           # T-y does not beat random orders
])
def test_claim_t2b_gives_every_verdict(means, sd, expected):
    claim = P.claim_probability_beats_logit(table1_scores(means, models=("m1", "m2"), sd=sd))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert len(claim.table) == 2 * len(means) and claim.rule_id == "T2b"
    assert "can fail" in fs.verdicts.rule("T2b").note


# ------------------------------------------------------------------------------------------------------------- T3
def random_curves(areas: dict[tuple[str, int], float], *, models=("m",), noise: float = 0.02,
                  seed: int = 0) -> pd.DataFrame:
    """Curves [1, v, v, v, v] per replica, model, reference, patch side (1, 2 and 7 px on 14 px images: edges 14,
    7, 2) and image, with v around ``areas[(reference, side)]`` (f(x) = 1: the first point); side 2 (the 7 × 7
    grid, the premise's) at the smallest side's level."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in models:
            for (ref, side), v in {**areas, **{(ref, 2): v for (ref, s), v in areas.items() if s == 1}}.items():
                for i in range(N_IMAGES):
                    level = v + noise * rng.normal()
                    rows += [{"replica": r, "model": model, "reference": ref, "patch side": side, "edge": 14 // side,
                              "image": i, "deleted": k, "fraction": k / 4, "value": 1.0 if k == 0 else level}
                             for k in range(5)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("areas, noise, expected", [
    ({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8, ("blur", 7): 0.6}, 0.02, R),       # both parts
    ({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.2, ("blur", 7): 0.9}, 0.02, PARTLY),  # the gap grows
    ({("zero", 1): 0.1, ("zero", 7): 0.125, ("blur", 1): 0.8, ("blur", 7): 0.6}, 0.02, W),     # falls faster by 0.025
    ({("zero", 1): 0.3, ("zero", 7): 0.31, ("blur", 1): 0.5, ("blur", 7): 0.51}, 0.01, N),     # tight, in the band
    ({("zero", 1): 0.5, ("zero", 7): 0.1, ("blur", 1): 0.6, ("blur", 7): 0.8}, 0.02, N),       # both reversed
    ({("zero", 1): 0.3, ("zero", 7): 0.3625, ("blur", 1): 0.5, ("blur", 7): 0.5}, 0.15, INC),  # at the margin
    ({("zero", 1): 0.95, ("zero", 7): 0.99, ("blur", 1): 0.99, ("blur", 7): 0.99}, 0.01, NT),  # no drop
])
def test_claim_t3_gives_every_verdict(areas, noise, expected):
    claim = P.claim_random_test(random_curves(areas, models=("m1", "m2"), noise=noise))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert claim.rule_id == "T3" and len(claim.table) == 2 and claim.units == 30
    assert "2 px patches" in claim.premise  # the premise reads the 7 × 7 grid


# ------------------------------------------------------------------------------------------------------------- T4
def cross_scores(le: tuple[float, float], mo: tuple[float, float], *, sd: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """(ΣLeRF, ΣMoRF) around ``le`` for SA-Le and ``mo`` for SA-Mo, per image (50 points, f(x) = 1)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"method": name, "replica": r, "image": i, "LeRF": lerf + sd * rng.normal(),
                          "MoRF": morf + sd * rng.normal(), "f(x)": 1.0, "points": 50}
                         for name, (lerf, morf) in (("SA-Le", le), ("SA-Mo", mo)) for r in REPLICAS
                         for i in range(N_IMAGES)])


@pytest.mark.parametrize("le, mo, sd, expected", [
    ((45.0, 10.0), (15.0, 5.0), 1.0, R),       # SA-Mo loses 30 under LeRF, SA-Le 5 under MoRF: 0.5 per point
    ((45.0, 20.0), (28.75, 5.0), 0.3, W),      # 1.25 more (0.025 per point): shown, half the margin
    ((45.0, 20.0), (30.0, 5.0), 0.3, N),       # both lose 15: a tight tie inside the band
    ((45.0, 35.0), (40.0, 5.0), 1.0, N),       # SA-Le's MoRF loss is the larger: reversed
    ((45.0, 20.0), (27.5, 5.0), 4.0, INC),     # 2.5 more (0.05 per point): at the margin
    ((25.0, 10.0), (15.0, 5.0), 1.0, NT),      # SA-Le's ΣLeRF at a random order's: the search found nothing
])
def test_claim_t4_gives_every_verdict(le, mo, sd, expected):
    claim = P.claim_cross_test(cross_scores(le, mo, sd=sd), _random_sums(mean=25.0, points=50))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert claim.rule_id == "T4" and len(claim.table) == 1 and claim.units == 30


# ------------------------------------------------------------------------------------------------------------- T5
def level_scores(spec: dict[str, tuple[float, float]], *, points: int, seed: int = 0,
                 random_lerf: float = 0.4) -> pd.DataFrame:
    """ΣLeRF − ΣMoRF per replica × model × image × reference × method: ``spec[method] = (level, sway)``; the
    reference moves each image's score by ±``sway`` (random per image), the level is the score's mean; "Random"
    (ΣLeRF ``random_lerf`` of the points, f(x) = 1) for the mechanism premise."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in REPLICAS:
        for model in ("m1", "m2"):
            for method, (level, sway) in {"Random": (0.0, 0.5), **spec}.items():
                for i in range(N_IMAGES):
                    base = level + 0.5 * rng.normal() if method != "Random" else 1.0 * rng.normal()
                    for ref, step in (("zero", -1.0), ("mean", 0.0), ("blur", 1.0)):
                        v = base + step * sway * (0.5 + rng.random())
                        rows.append({"replica": r, "model": model, "method": method, "image": i, "reference": ref,
                                     "output": "probability", "LeRF − MoRF": v,
                                     "LeRF": random_lerf * points + v / 2, "MoRF": random_lerf * points - v / 2,
                                     "f(x)": 1.0, "points": points})
    return pd.DataFrame(rows)


PATCHES = {"T-p": (30.0, 0.5), "Grad": (8.0, 0.5), "IG": (8.0, 0.5)}


@pytest.mark.parametrize("pixels, random_lerf, expected, why", [
    ({"GC": (5.0, 0.2), "IG": (5.0, 2.0), "Grad": (5.0, 2.0)}, 0.4, R, "holds in 4 of 4"),  # both move far more
    ({"GC": (5.0, 0.2), "IG": (5.0, 0.01), "Grad": (5.0, 2.0)}, 0.4, N, "absent in 2"),    # IG barely moves: tight
    # IG moves more than T-p: by more than the margin relative to its score, by less per curve point
    ({"GC": (5.0, 0.2), "IG": (5.0, 0.35), "Grad": (5.0, 2.0)}, 0.4, W, "holds in 3, weaker in 1"),
    ({"GC": (5.0, 2.0), "IG": (0.0, 2.0), "Grad": (5.0, 2.0)}, 0.4, INC, "undecided in 1"),  # IG at chance
    ({"GC": (5.0, 0.2), "IG": (5.0, 2.0), "Grad": (5.0, 2.0)}, 0.99, NT, "deletion lowers"),  # no drop
])
def test_claim_t5_gives_every_verdict(pixels, random_lerf, expected, why):
    claim = P.claim_reference_robust(level_scores(PATCHES, points=50, random_lerf=random_lerf),
                                     level_scores(pixels, points=11, seed=1))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.premise)
    assert why in claim.verdict.why and claim.rule_id == "T5"
    table = claim.table.set_index("method", drop=False)
    assert not table.loc["GC", "counted"] and table.loc["GC", "same method on patches, relative"] is not None
    assert {c for c in claim.table["cell"].dropna()} == {f"{m}, {d}" for m in ("Grad", "IG")
                                                          for d in ("relative", "per point")}


def test_claim_t5_checks_the_denominator_that_favours_trace_against_one_that_does_not():
    # pixel-level spreads that are large relative to the methods' own small scores but no larger than TRACE's per
    # curve point: the relative denominator alone (TRACE's score is the largest) would call the claim reproduced
    pixels = {"GC": (0.5, 0.05), "IG": (0.5, 0.11), "Grad": (0.5, 0.11)}
    claim = P.claim_reference_robust(level_scores(PATCHES, points=50), level_scores(pixels, points=11, seed=1))
    cells = claim.table.dropna(subset=["cell"]).set_index("cell")
    assert (cells.loc[[c for c in cells.index if c.endswith("relative")], "outcome"] == "holds").all()
    assert (cells.loc[[c for c in cells.index if c.endswith("per point")], "outcome"] == "absent").all()
    assert claim.verdict == N


# ------------------------------------------------------------------------------------------------------------- T6
@pytest.mark.parametrize("error, n, expected", [(1e-9, 40, R), (1e-3, 40, N), (0.0, 1, NT)])
def test_claim_t6_is_an_implementation_check_that_can_fail(error, n, expected):
    rng = np.random.default_rng(0)
    deletion = 10 + rng.random(n)
    frame = pd.DataFrame({"method": ["SA-Le"] * n, "deletion": (["LeRF", "MoRF"] * n)[:n],
                          "image": np.arange(n) // 2, "deletion AUC": deletion,
                          "insertion AUC": deletion * (1 + error * (1 + 0.1 * rng.random(n)))})
    claim = P.claim_insertion_equals_deletion(frame)
    assert claim.verdict == expected, claim.our_value
    assert claim.kind == "study check" and claim.rule_id == "T6" and not claim.trained


# ------------------------------------------------------------------------------------------------ frames and nulls
def test_random_order_sums_and_curve_sums_hold_the_metric_curves():
    model, x = small_cnn(2, 8, 3), torch.randn(3, 2, 8, 8, generator=torch.Generator().manual_seed(2))
    y = torch.tensor([0, 1, 2])
    frame = P.random_order_sums(model, x, y, edge=2, n_orders=4, generator=7, labels={"replica": 1})
    curves = S.random_deletion_curves(model, x, edge=2, n_orders=4, generator=torch.Generator().manual_seed(7),
                                      target=y)
    np.testing.assert_allclose(frame.sort_values(["image", "order"])["sum"], curves.double().sum(2).flatten(),
                               rtol=1e-6)
    assert (frame["points"] == 5).all() and (frame["replica"] == 1).all()
    g = S.greedy(model, x, edge=2, objective="le", target=y)
    sums = P.curve_sums({("Greedy", "Le"): g.lerf, ("Greedy", "Mo"): g.morf}, labels={"replica": 0})
    np.testing.assert_allclose(sums[sums.objective == "Mo"]["sum"], g.morf.double().sum(1), rtol=1e-6)
    np.testing.assert_allclose(sums[sums.objective == "Le"]["f(x)"], g.lerf.double()[:, 0], rtol=1e-6)
    assert (sums["points"] == 5).all()


def test_deletion_and_search_frames_carry_f_x_and_points():
    model, x = small_cnn(2, 8, 3), torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    y = torch.tensor([1, 2])
    g = S.greedy(model, x, edge=2, objective="le", target=y)
    scores, _ = P.deletion_frames(model, x, y, {"G": g.trajectory}, edge=2, reference="zero", outputs=("prob",))
    np.testing.assert_allclose(scores["f(x)"], torch.softmax(model(x), 1)[[0, 1], [1, 2]].detach().double(),
                               rtol=1e-5)
    assert (scores["points"] == 5).all()
    pixel, _ = P.deletion_frames(model, x, y, {"G": g.trajectory}, edge=2, reference="zero", outputs=("prob",),
                                 points=3)
    assert (pixel["points"] == 3).all()
    frame, _ = P.search_frames({"Greedy-Le": g})
    np.testing.assert_allclose(frame["f(x)"], g.lerf.double()[:, 0]) and (frame["points"] == 5).all()


def test_insertion_deletion_frame_pairs_each_deletion_with_the_reverse_insertion():
    model, x = small_cnn(2, 8, 3), torch.randn(2, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    y = torch.tensor([1, 2])
    searches = {"Greedy-Le": S.greedy(model, x, edge=2, objective="le", target=y)}
    frame = P.insertion_deletion_frame(model, x, searches, edge=2, target=y)
    assert len(frame) == 2 * 2 and set(frame["deletion"]) == {"LeRF", "MoRF"}
    np.testing.assert_allclose(frame["insertion AUC"], frame["deletion AUC"], rtol=1e-5)


# ------------------------------------------------------------------------------------------- the mechanism premise
def test_mechanism_premises_decide_each_part_with_the_t_interval_on_replica_means():
    groups = np.repeat(["0", "1", "2"], N_IMAGES)
    rng = np.random.default_rng(0)
    frame = P.mechanism_premises(clean=np.ones(30), random_area=0.5 + 0.05 * rng.normal(size=30),
                                 search=30 + rng.normal(size=30), random=rng.normal(size=30), points=50,
                                 groups=groups, data="m, zero")
    assert list(frame.columns) == P.PREMISE_COLUMNS and list(frame["outcome"]) == ["holds", "holds"]
    assert frame["threshold"].tolist() == [P.PREMISE_DROP, P.PREMISE_GAIN]
    assert frame["estimate"].iloc[1] == pytest.approx(30 / 50, abs=0.05) and (frame["replicas"] == 3).all()
    near = P.mechanism_premises(clean=np.ones(30), random_area=0.9 + 0.05 * rng.normal(size=30), groups=groups,
                                data="m, blur")
    assert near["outcome"].item() == "undecided"  # a drop of 0.1: straddles the threshold
    flat = P.mechanism_premises(clean=np.ones(30), random_area=np.full(30, 0.99), groups=groups, data="m, blur")
    assert flat["outcome"].item() == "fails"
    premises = P.premise_outcomes(pd.concat([frame, near, flat]))
    assert [p.holds for p in premises] == [True, True, None, False]
    assert "m, blur" in premises[-1].text and "needed above 0.1" in premises[-1].text


def test_premise_frames_of_each_data_set():
    t1 = P.table1_premises(table1_scores({"zero": GOOD, "blur": GOOD}), searches=("T-p", "T-y"))
    assert len(t1) == 2 * 3 and set(t1["outcome"]) == {"holds"}  # (a), (b) T-p, (b) T-y per reference
    bound = P.search_bound_premises(bound_sums(), _random_sums())
    assert list(bound["data set"]) == ["t = 16", "t = 16, -Le", "t = 16, -Mo"]
    cross = P.cross_premises(cross_scores((45.0, 10.0), (15.0, 5.0)), _random_sums(mean=25.0, points=50))
    assert len(cross) == 3 and set(cross["outcome"]) == {"holds"}
    test = P.random_test_premises(random_curves({("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8,
                                                 ("blur", 7): 0.6}))
    assert test["data set"].item() == "m, zero reference, 2 px patches" and test["outcome"].item() == "holds"


# ------------------------------------------------------------------------------------------- the one procedure
def _every_claim():
    """(claim function, args, kwargs) for every TRACE claim on three-replica frames (T6 has no replica column)."""
    rng = np.random.default_rng(0)
    deletion = 10 + rng.random(40)
    t6 = pd.DataFrame({"method": ["SA-Le"] * 40, "deletion": ["LeRF", "MoRF"] * 20, "image": np.arange(40) // 2,
                       "deletion AUC": deletion, "insertion AUC": deletion})
    areas = {("zero", 1): 0.1, ("zero", 7): 0.5, ("blur", 1): 0.8, ("blur", 7): 0.6}
    return [
        (P.claim_search_bound, (bound_sums(), _random_sums()), {}),
        (P.claim_search_beats_greedy, (bound_sums(), _random_sums()), {}),
        (P.claim_beats_methods, (table1_scores({"zero": GOOD, "blur": GOOD}),), {"model": "m"}),
        (P.claim_probability_beats_logit, (table1_scores({"zero": GOOD, "blur": GOOD}),), {}),
        (P.claim_random_test, (random_curves(areas),), {}),
        (P.claim_cross_test, (cross_scores((45.0, 10.0), (15.0, 5.0)), _random_sums(mean=25.0, points=50)), {}),
        (P.claim_reference_robust, (level_scores(PATCHES, points=50),
                                    level_scores({"GC": (5.0, 0.2), "IG": (5.0, 2.0), "Grad": (5.0, 2.0)}, points=11,
                                                 seed=1)), {}),
        (P.claim_insertion_equals_deletion, (t6,), {}),
    ]


@pytest.mark.parametrize("i", range(8))
def test_every_claim_is_decided_by_its_registered_rule_and_its_design(i):
    fn, args, kwargs = _every_claim()[i]
    claim = fs.verdicts.replicated(fn, *args, **kwargs)
    rule = fs.verdicts.rule(claim.rule_id)
    assert claim.raw == R, (claim.verdict.why, claim.premise)
    if claim.trained and (rule.replicas > len(REPLICAS) or rule.units > claim.units):  # the design the rule asks
        assert claim.verdict == INC and ("below the 8 independently trained replicas" in claim.verdict.why
                                         or "underpowered" in claim.verdict.why), claim.verdict.why
    else:
        assert claim.verdict == R, claim.verdict.why
    assert claim.kind == rule.kind and claim.verdict.rule_id == rule.id and claim.verdict.decision
    assert claim.stability == ()  # t intervals: nothing resampled, no bootstrap seed
    assert not fs.verdicts.states_decision(claim.rule)
    if fn is P.claim_insertion_equals_deletion:
        assert claim.replicas == () and not claim.trained
    else:
        assert claim.replicas == (R, R, R)  # every replica alone decides the same
        assert claim.units == (60 if fn is P.claim_reference_robust else 30)  # T5: 2 models × 10 images × 3
        assert "replicas ×" in claim.power, claim.power  # the power analysis of the design it rests on


def test_a_claim_on_one_replica_is_not_decided():
    fn, args, kwargs = _every_claim()[2]
    one = [a.assign(image=a["replica"] * N_IMAGES + a["image"], replica=0) for a in args]  # 30 images, one model
    claim = fs.verdicts.replicated(fn, *one, **kwargs)
    assert claim.raw == R and claim.units == 30
    assert claim.verdict == INC and "below the 3 independently trained replicas" in claim.verdict.why


def test_claims_use_the_replica_as_the_unit_of_replication():
    # one replica far from the other two: the t interval on the three replica means is wider than the same rows
    # read as one model's 30 images
    frame = table1_scores({"zero": GOOD, "blur": GOOD}, models=("m1",))
    shifted = frame.assign(**{"LeRF − MoRF": frame["LeRF − MoRF"]
                              + np.where((frame["replica"] == 1) & (frame["method"] == "T-y"), 4.0, 0.0)})
    nested = P.claim_probability_beats_logit(shifted)
    pooled = P.claim_probability_beats_logit(shifted.assign(image=shifted["replica"] * N_IMAGES + shifted["image"])
                                             .drop(columns="replica"))
    width = lambda c: float((c.table["high"] - c.table["low"]).mean())  # noqa: E731
    assert width(nested) > 2 * width(pooled)
    assert set(nested.table["interval"]) == {"t on replica means"} and set(pooled.table["interval"]) == {"t on units"}

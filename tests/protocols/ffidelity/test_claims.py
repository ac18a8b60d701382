"""F-Fidelity's claims of the image notebooks (ranking, LeRF, ablation, OOD check, GradCAM vs Saliency, cost,
explanation size, sensitivity) as claim functions: each is built on small synthetic frames to give every verdict it
can give, and every null is checked to move the verdict (a value at chance is "not testable here")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl

F = fl.protocols.ffidelity
R, P, N, T, I = fl.verdicts.VERDICTS
XI = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
LEVELS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def curves(noise: float, *, seed: int, n_seeds: int = 3, xi=XI, chance: bool = False):
    """"+" and "−" curves (n_seeds, explainers, levels) of one evaluation method: MoRF-like scores falling and
    LeRF-like scores rising with ξ, plus Gaussian noise of sd ``noise``; ``chance``: scores unrelated to ξ."""
    g = torch.Generator().manual_seed(seed)
    xi = torch.tensor(xi)
    shape = (n_seeds, len(xi), len(LEVELS))
    if chance:
        return torch.rand(shape, generator=g), torch.rand(shape, generator=g)
    p = (1 - xi)[None, :, None].expand(shape) + noise * torch.randn(shape, generator=g)
    q = xi[None, :, None].expand(shape) + noise * torch.randn(shape, generator=g)
    return p, q


def study(spec: dict, *, group: str = "E", replicas: int = 2):
    """P, Q dicts (of replica 0), micro cells and the permuted-order null of methods given as {name: (noise, seed,
    chance)}, for ``replicas`` trained replicas (each its own curves: seed + 100·r), with a "replica" column."""
    cells, nulls = [], []
    for r in range(replicas):
        P_, Q_ = {}, {}
        for name, (noise, seed, chance) in spec.items():
            P_[group, name], Q_[group, name] = curves(noise, seed=seed + 100 * r, chance=chance)
        methods = list(spec)
        cells.append(fl.protocols.micro_cells(P_, Q_, noise_levels=XI, sparsity=LEVELS, methods=methods,
                                              group="explainer").assign(replica=r))
        nulls.append(F.ground_truth_null(P_, Q_, noise_levels=XI, sparsity=LEVELS, methods=methods,
                                         group="explainer", n_draws=200).assign(replica=r))
        if r == 0:
            first = P_, Q_
    return *first, pd.concat(cells, ignore_index=True), pd.concat(nulls, ignore_index=True)


# ---------------------------------------------------------------------------------------------------- the null
def test_permuted_correlations_give_the_chance_level_of_a_permuted_ground_truth():
    p, q = curves(0.0, seed=0)
    draws = F.permuted_correlations(p, q, noise_levels=XI, sparsity=LEVELS, n_draws=400, seed=1)
    assert list(draws.columns) == ["draw", "GT micro", "morf_vs_gt", "lerf_vs_gt", "morf_vs_lerf"]
    observed = fl.metrics.ground_truth_ranking(p, q, XI, LEVELS)
    assert float(observed["macro"]["lerf_vs_gt"].mean()) == pytest.approx(1.0)
    # a perfect curve ranks every permuted order as Spearman(ξ, π(ξ)): centred on 0, 6 explainers → about ±0.83
    null = fl.verdicts.Null("permuted", tuple(draws["lerf_vs_gt"]))
    assert abs(null.median) < 0.2 and 0.6 < null.high < 0.95 and not null.contains(1.0)
    assert draws["lerf_vs_gt"].to_numpy() == pytest.approx(-draws["morf_vs_gt"].to_numpy())
    assert draws["GT micro"].to_numpy() == pytest.approx(draws["lerf_vs_gt"].to_numpy())
    # MoRF vs LeRF involves no ground truth: its null shuffles the pairing of the + and − curves
    assert abs(draws["morf_vs_lerf"].median()) < 0.2
    # at most n_draws permutations: the exact distribution, every permutation once (6! = 720)
    exact = F.permuted_correlations(p, q, noise_levels=XI, sparsity=LEVELS, n_draws=1000)
    assert len(exact) == 720 and exact["lerf_vs_gt"].round(6).value_counts()[1.0] == 1
    assert fl.verdicts.Null("exact", tuple(exact["lerf_vs_gt"])).high == pytest.approx(0.8286, abs=1e-3)
    # with three explainers every ρ lies within the chance range: nothing can be told from chance
    p3, q3 = curves(0.0, seed=0, xi=[0.0, 0.5, 1.0])
    three = F.permuted_correlations(p3, q3, noise_levels=[0.0, 0.5, 1.0], n_draws=200)
    assert fl.verdicts.Null("permuted", tuple(three["lerf_vs_gt"])).contains(1.0)
    with pytest.raises(ValueError, match="n_draws"):
        F.permuted_correlations(p, q, noise_levels=XI, n_draws=5)


def test_every_draw_is_ground_truth_ranking_on_curves_with_permuted_explainers():
    import itertools

    xi = [0.0, 0.3, 0.6, 1.0]
    g = torch.Generator().manual_seed(3)
    p, q = torch.rand(2, 4, 5, generator=g), torch.rand(2, 4, 5, generator=g)
    levels = [0.1, 0.3, 0.5, 0.7, 0.9]
    draws = F.permuted_correlations(p, q, noise_levels=xi, sparsity=levels, n_draws=100)
    perms = list(itertools.permutations(range(4)))
    exact = [fl.metrics.ground_truth_ranking(p[:, list(pi)], q[:, list(pi)], xi, levels) for pi in perms]
    gt_micro = {round(float(((-e["micro"]["morf_vs_gt"] + e["micro"]["lerf_vs_gt"]) / 2).mean()), 6) for e in exact}
    lerf = {round(float(e["macro"]["lerf_vs_gt"].mean()), 6) for e in exact}
    assert set(draws["GT micro"].round(6)) <= gt_micro and set(draws["lerf_vs_gt"].round(6)) <= lerf
    assert len(set(draws["lerf_vs_gt"].round(6))) > 3  # the draws explore the permutations
    pairing = {round(float(fl.metrics.ground_truth_ranking(p, q[:, list(pi)], xi, levels)["macro"]["morf_vs_lerf"]
                           .mean()), 6) for pi in perms}
    assert set(draws["morf_vs_lerf"].round(6)) <= pairing


def test_micro_cells_gt_micro_is_the_oriented_mean_of_the_two_ground_truth_correlations():
    P_, Q_, cells, null = study({"A": (0.3, 0, False)}, replicas=1)
    micro = fl.metrics.ground_truth_ranking(P_["E", "A"], Q_["E", "A"], XI)["micro"]
    expected = ((-micro["morf_vs_gt"] + micro["lerf_vs_gt"]) / 2).flatten()
    assert cells["GT micro"].to_numpy() == pytest.approx(expected.numpy(), abs=1e-6)
    assert cells["LeRF micro"].to_numpy() == pytest.approx(micro["lerf_vs_gt"].flatten().numpy(), abs=1e-6)
    assert set(null["method"]) == {"A"} and len(null) == 200


# -------------------------------------------------------------------------------------------- F1 ranking claim
GOOD, NOISY = 0.08, 0.5


@pytest.mark.parametrize("spec, expected, why", [
    ({"Fidelity": (NOISY, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (GOOD, 3, False)}, R, "beats"),
    # identical curves: exact ties are never a failure nor "not testable": inconclusive
    ({"Fidelity": (0.2, 1, False), "ROAR": (0.2, 1, False), "F-Fidelity": (0.2, 1, False)}, I, "ties 2"),
    ({"Fidelity": (0.2, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (0.2, 3, False)}, I, "beats ROAR"),
    ({"Fidelity": (0.15, 1, False), "ROAR": (0.9, 2, False), "F-Fidelity": (0.3, 3, False)}, P, "loses to Fidelity"),
    ({"Fidelity": (0.15, 1, False), "ROAR": (0.15, 2, False), "F-Fidelity": (0.9, 3, False)}, N, "loses"),
    ({"Fidelity": (0, 1, True), "ROAR": (0, 2, True), "F-Fidelity": (0, 3, True)}, T, "permuted order"),
    ({"Fidelity": (0.0, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (GOOD, 3, False)}, T, "ideal"),
])
def test_claim_ranking_gives_every_verdict(spec, expected, why):
    _, _, cells, null = study(spec)
    claim = F.claim_ranking(cells, null, group="explainer", value="E", paper_value="F-Fid best")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert claim.kind == "paper" and claim.units == 2 * 3 * len(LEVELS) and "reproduced when" in claim.decision
    assert claim.paper_value == "F-Fid best"
    assert F.claim_ranking(cells, null, group="explainer", value="E", paper="alias").paper_value == "alias"
    assert claim.claim.startswith("F1 (E): F-Fidelity recovers") and "chance range" in claim.premise
    assert list(claim.table["method"]) == list(spec) and "mean difference" in claim.table.columns


def test_claim_ranking_null_moves_the_verdict_and_old_name_still_works():
    # F-Fidelity at chance, the others recover the order: F-Fidelity loses (a testable "not reproduced")
    _, _, cells, null = study({"Fidelity": (0.15, 1, False), "F-Fidelity": (0, 3, True)}, replicas=1)
    claim = F.claim_ranking(cells, null, group="explainer", value="E")
    assert claim.verdict == N
    table = claim.table.set_index("method")
    assert bool(table.loc["Fidelity", "beyond chance"]) and not bool(table.loc["F-Fidelity", "beyond chance"])
    v, comps = fl.protocols.ranking_verdict(cells, group="explainer", value="E")
    assert v == N and list(comps) == ["Fidelity"]
    with pytest.raises(ValueError, match="no draws"):
        F.claim_ranking(cells, null[null["method"] == "Fidelity"], group="explainer", value="E")


# ---------------------------------------------------------------------------------------------- F2 LeRF ≈ +1
def lerf_frames(order, *, xi=XI, replicas: int = 2, noise: float = 0.0):
    """Micro cells and null of one F-Fidelity whose "−" curves rank the explainers by ``order`` at every seed
    (plus noise of sd ``noise``), in ``replicas`` replicas; its "+" curves mirror them."""
    n = len(xi)
    cells, nulls = [], []
    for r in range(replicas):
        g = torch.Generator().manual_seed(r)
        q = torch.tensor(order, dtype=torch.float32)[None, :, None].expand(3, n, len(LEVELS)).contiguous()
        q = q + noise * torch.randn(q.shape, generator=g)
        p = -torch.tensor(order, dtype=torch.float32)[None, :, None].expand(3, n, len(LEVELS)).contiguous()
        P_, Q_ = {("E", "F-Fidelity"): p}, {("E", "F-Fidelity"): q}
        common = dict(noise_levels=xi, sparsity=LEVELS, methods=["F-Fidelity"], group="explainer")
        cells.append(fl.protocols.micro_cells(P_, Q_, **common).assign(replica=r))
        nulls.append(F.ground_truth_null(P_, Q_, n_draws=400, **common).assign(replica=r))
    return pd.concat(cells, ignore_index=True), pd.concat(nulls, ignore_index=True)


XI12 = [i / 11 for i in range(12)]
SWAPPED = [4, 1, 2, 3, 0, 9, 6, 11, 8, 5, 10, 7]  # three swaps: Spearman 0.66, beyond the 12-explainer chance range


@pytest.mark.parametrize("order, xi, noise, expected", [
    (list(range(6)), XI, 0.0, R),                  # ρ = 1 in every unit
    (SWAPPED, XI12, 0.0, P),                       # ρ = 0.66 with 12 explainers
    (list(range(12)), XI12, 6.0, I),              # ρ ≈ 0.5 with a wide spread: the interval straddles 0.5
    ([2, 5, 0, 3, 4, 1], XI, 0.0, T),              # ρ ≈ 0: F-Fidelity does not see the ground truth (chance)
])
def test_claim_lerf_near_one_gives_every_verdict(order, xi, noise, expected):
    cells, null = lerf_frames(order, xi=xi, noise=noise)
    claim = F.claim_lerf_near_one(cells, null, group="explainer", value="E", seed=1)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F2 (E)") and "chance range" in claim.premise
    assert claim.claim.endswith("(Tables 1-2)") and claim.units == 2 * 3 * len(LEVELS)
    table2 = F.claim_lerf_near_one(cells, null, group="explainer", value="E", source="Table 2, cluttered canvases",
                                   seed=1)
    assert table2.claim.endswith("(Table 2, cluttered canvases)") and table2.verdict == expected


def test_claim_lerf_near_one_not_reproduced_when_lerf_is_reversed():
    """LeRF reversed while MoRF is perfect: the GT micro (their mean) is 0, at chance → not testable; with MoRF
    perfect and LeRF flat-ish but negative (12 explainers) the GT micro stays beyond chance and LeRF ≈ −0.5."""
    cells, null = lerf_frames(SWAPPED[::-1], xi=XI12)
    cells = cells.assign(**{"LeRF micro": -cells["LeRF micro"].abs()})
    cells["GT micro"] = 0.9
    claim = F.claim_lerf_near_one(cells, null, group="explainer", value="E")
    assert claim.verdict == N, (claim.our_value, claim.verdict.why)


def test_claim_lerf_near_one_is_not_testable_with_three_explainers():
    cells, null = lerf_frames([0, 1, 2], xi=[0.0, 0.5, 1.0])
    claim = F.claim_lerf_near_one(cells, null, group="explainer", value="E")
    assert claim.our_value.startswith("1.00") and claim.verdict == T and "chance range" in claim.verdict.why


# ---------------------------------------------------------------------------------------------- F3 ablation
CHAIN = ("Fidelity", "Fidelity+Fine-tune", "F-Fidelity")


@pytest.mark.parametrize("noises, expected", [
    ((1.2, 0.4, 0.08), R),
    ((1.2, 0.1, 0.1), I),        # the last two are the same curves: the second step is an exact tie, undecided
    ((1.2, 0.15, 0.5), P),       # the first step wins, the second loses: one of two
    ((0.25, 0.6, 1.2), N),
    (None, T),                   # every method at chance
])
def test_claim_ablation_gives_every_verdict(noises, expected):
    if noises is None:
        spec = {m: (0, i, True) for i, m in enumerate(CHAIN)}
    else:
        spec = {m: (s, 7 if expected == I and i > 0 else i, False) for i, (m, s) in enumerate(zip(CHAIN, noises))}
    _, _, cells, null = study(spec)
    claim = F.claim_ablation(cells, null, group="explainer", value="E")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F3 (E): Ablation") and claim.units == 2 * 3 * len(LEVELS)
    if expected != T:
        steps = {"Fidelity+Fine-tune vs Fidelity", "F-Fidelity vs Fidelity+Fine-tune"}
        assert set(claim.table["method"].dropna()) >= steps
    else:
        assert "permuted order" in claim.verdict.why


# --------------------------------------------------------------------------------------------- study check
def diagnostic(main_gap: float, control_gap: float, *, clean: float = 0.9, replica=None) -> pd.DataFrame:
    rows = []
    for setting, gap in (("main: coloured", main_gap), ("control: grey", control_gap)):
        rows += [{"setting": setting, "model": "original", "k": 0, "removed": "none", "accuracy": clean},
                 {"setting": setting, "model": "original", "k": 26, "removed": "non-salient",
                  "accuracy": clean - gap},
                 {"setting": setting, "model": "original", "k": 26, "removed": "salient", "accuracy": 0.3}]
    frame = pd.DataFrame(rows)
    return frame if replica is None else frame.assign(replica=replica)


@pytest.mark.parametrize("main_gap, control_gap, n, expected", [
    (0.3, 0.0, 100, R),
    (0.03, 0.0, 20000, P),      # significant but small
    (-0.2, 0.01, 100, N),       # removal helps the coloured model: significantly below the control
    (0.3, 0.1, 100, T),         # the control (the null) loses accuracy itself
    (0.3, 0.035, 100, T),       # beyond the 0.02 cap by more than one image (0.01)
    (0.3, 0.0200000001, 100, R),  # at the cap up to float rounding: the premise holds with its tolerance
    (0.06, 0.0, 20, I),         # cannot be told from the control with 20 images: the interval straddles
])
def test_claim_ood_check_gives_every_verdict(main_gap, control_gap, n, expected):
    frame = diagnostic(main_gap, control_gap, clean=0.9 if main_gap >= 0 else 0.6)
    claim = F.claim_ood_check(frame, main="main: coloured", control="control: grey", n_images=n)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "grey control" in claim.premise and len(claim.table) == 2
    assert claim.kind == "study check" and claim.units == n and "reproduced when" in claim.decision


def test_claim_ood_check_pools_replicas_with_their_spread():
    """Two replicas agreeing on a gap of 0.3 reproduce; two that disagree (0.5 and −0.1) straddle 0."""
    agree = pd.concat([diagnostic(0.3, 0.0, replica=r) for r in (0, 1)], ignore_index=True)
    claim = F.claim_ood_check(agree, main="main: coloured", control="control: grey", n_images=200)
    assert claim.verdict == R and claim.units == 400 and len(claim.table) == 4
    apart = pd.concat([diagnostic(0.5, 0.0, replica=0), diagnostic(-0.1, 0.0, clean=0.6, replica=1)],
                      ignore_index=True)
    claim = F.claim_ood_check(apart, main="main: coloured", control="control: grey", n_images=200)
    assert claim.verdict == I, claim.verdict.why
    one = fl.verdicts.replicated(F.claim_ood_check, agree, main="main: coloured", control="control: grey",
                                 n_images=200, seed=0)
    assert one.replicas == (R, R)


# ------------------------------------------------------------------------------------ F8 GradCAM vs Saliency
def per_image(plus_gap: float, minus_gap: float, *, n: int = 60, noise: float = 0.05, replicas: int = 2
              ) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for r in range(replicas):
        base_p, base_m = rng.uniform(0.1, 0.3, n), rng.uniform(0.05, 0.15, n)
        for name, dp, dm in (("GradCAM", plus_gap, -minus_gap), ("Saliency", 0.0, 0.0)):
            rows += [{"replica": r, "case": i + 1, "explainer": name, "FFid+": base_p[i] + dp + noise * rng.normal(),
                      "FFid−": base_m[i] + dm + noise * rng.normal()} for i in range(n)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("plus_gap, minus_gap, expected", [
    (0.1, 0.05, R), (0.1, -0.05, P), (-0.1, -0.05, N),
    (0.1, 0.0, I),    # one part wins, the other ties: undecided, never a failure
    (0.0, 0.0, I)])   # both tie: inconclusive, not "not testable"
def test_claim_map_preferred_gives_every_verdict(plus_gap, minus_gap, expected):
    frame = per_image(plus_gap, minus_gap)
    claim = F.claim_map_preferred(frame, paper_value="0.2286 vs 0.2020", seed=3)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F8: F-Fidelity rates GradCAM above Saliency") and len(claim.table) == 2
    assert claim.units == 120 and claim.kind == "paper"
    assert F.claim_map_preferred(frame[frame["replica"] == 1], seed=3).units == 60  # one replica's rows alone


# ------------------------------------------------------------- per-image FFid±, the input of F8 (Tables 11–12)
def gated_maps(n: int = 10):
    """A model that flips as soon as one of the top-half pixels is removed (all-ones inputs, reference zero), the map
    that ranks those pixels first ("truth") and the map that ranks them last ("reverse")."""
    from oracles import Gated

    relevant = torch.zeros(1, 4, 4, dtype=torch.bool)
    relevant[0, :2] = True
    order = torch.rand(n, 1, 4, 4, generator=torch.Generator().manual_seed(0)) * 0.5  # distinct ranks per image
    truth = relevant.float() + order
    return Gated(relevant, m=1), torch.ones(n, 1, 4, 4), torch.zeros(n, dtype=torch.long), {
        "truth": truth, "reverse": 1.5 - truth}


def test_per_image_ffid_separates_the_true_map_and_feeds_the_claim():
    model, x, y, maps = gated_maps()
    frame = F.per_image_ffid(model, x, y, maps, sparsity=[0.25, 0.5], alpha=0.5, beta=0.5, n_samples=8, seed=1)
    assert frame.columns.tolist() == ["case", "explainer", "FFid+", "FFid−", "constant map"] and len(frame) == 20
    by = frame.set_index(["explainer", "case"])
    # "+" removes among the top quarter or half: only relevant pixels for the truth, none for the reverse; "−" the
    # mirror image. A removed relevant pixel flips the prediction, so these are exact.
    assert (by.loc["reverse", "FFid+"] == 0).all() and (by.loc["truth", "FFid−"] == 0).all()
    assert (by.loc["truth", "FFid+"] > 0.5).all() and (by.loc["reverse", "FFid−"] > 0.5).all()
    assert not frame["constant map"].any()
    claim = F.claim_map_preferred(frame, better="truth", worse="reverse", setting="Table 12: toy")
    assert claim.verdict == R and claim.claim.endswith("(App. D.10, Table 12: toy)")
    assert F.claim_map_preferred(frame, better="reverse", worse="truth").verdict == N


def test_per_image_ffid_equals_the_metrics_and_ignores_the_other_images():
    model, x, y, maps = gated_maps()
    options = dict(sparsity=[0.25, 0.5, 0.75], alpha=0.5, beta=0.5, n_samples=6, seed=3)
    frame = F.per_image_ffid(model, x, y, maps, batch_size=7, **options)
    common = dict(target=y, alpha=0.5, beta=0.5, n_samples=6, generator=3, ties="random")
    plus = fl.metrics.fid_plus(model, x, maps["truth"], sparsity=options["sparsity"], **common).mean(1)
    minus = fl.metrics.fid_minus(model, x, maps["truth"], sparsity=fl.metrics.minus_sparsity(options["sparsity"]),
                                 **common).mean(1)
    truth = frame[frame["explainer"] == "truth"]
    np.testing.assert_allclose(truth["FFid+"], plus.numpy(), atol=1e-7)
    np.testing.assert_allclose(truth["FFid−"], minus.numpy(), atol=1e-7)
    part = F.per_image_ffid(model, x[:4], y[:4], {k: v[:4] for k, v in maps.items()}, batch_size=256, **options)
    pd.testing.assert_frame_equal(part.reset_index(drop=True),
                                  frame[frame["case"] <= 4].reset_index(drop=True), check_exact=True)
    flat = F.per_image_ffid(model, x, y, {"flat": torch.zeros(len(x), 1, 4, 4)}, **options)
    assert flat["constant map"].all()


# --------------------------------------------------------------------------------------------------- F9 cost
def cost_frames(roar_work: float, ffid_work: float, roar_seconds: float, ffid_seconds: float,
                retrain_seconds=(10.0, 10.2), cached: bool = False):
    table = pd.DataFrame([
        {"method": "ROAR", "stage": "total", "seconds": roar_seconds, "forward equivalents": roar_work},
        {"method": "F-Fidelity", "stage": "total", "seconds": ffid_seconds, "forward equivalents": ffid_work}])
    stages = pd.DataFrame([{"stage": "retrain (ROAR)", "explainer": e, "seconds": s, "image passes": 1000,
                            "cached": cached} for e, s in zip(("GradCAM", "Saliency"), retrain_seconds)]
                          + [{"stage": "fine-tune", "explainer": None, "seconds": 10.0, "image passes": 1000,
                              "cached": cached}])
    return table, stages


@pytest.mark.parametrize("args, kwargs, expected", [
    ((100.0, 55.0, 20.0, 11.0), {}, R),
    ((100.0, 90.0, 20.0, 25.0), {}, R),                         # seconds say otherwise: they decide nothing
    ((100.0, 55.0, 20.0, 11.0), {"cached": True}, R),           # no fresh retraining: no timing noise, same verdict
    ((100.0, 150.0, 20.0, 30.0), {}, N),
    ((100.0, 150.0, 20.0, 5.0), {}, N),
    ((0.0, 55.0, 0.0, 11.0), {}, T),
])
def test_claim_cost_gives_every_verdict(args, kwargs, expected):
    claim = F.claim_cost(*cost_frames(*args, **kwargs), seed=5)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.kind == "study check"  # the ratio is fixed by the design (training runs), not measured
    assert "no sampling null" in claim.premise and claim.claim.startswith("F9:")
    assert "second" not in claim.verdict.why and "%" not in claim.premise   # nothing machine-dependent decides


# ------------------------------------------------------------------------------------------ F4 size read-out
RS = [round(0.05 + 0.03 * i, 2) for i in range(10)]


def readout(correct_share: float | None) -> pd.DataFrame:
    """(r, β) cases with β/α+ ∈ {0.2, 0.4, 0.6}; the first ``correct_share`` of them read r exactly, the rest
    r + 0.1; None: every case reads 0.2 (r̂ carries no information)."""
    rows = [{"r": r, "beta": b, "beta/alpha": b / 0.5} for r in RS for b in (0.1, 0.2, 0.3)]
    table = pd.DataFrame(rows)
    eligible = (table["r"] - table["beta/alpha"]).abs() > 1e-9
    k = round((correct_share or 0) * int(eligible.sum()))
    order = np.random.default_rng(0).permutation(len(table))
    good = np.zeros(len(table), dtype=bool)
    good[[i for i in order if eligible[i]][:k]] = True
    table["r read off"] = np.where(good, table["r"], table["r"] + 0.1) if correct_share is not None else 0.2
    table["|error|"] = (table["r read off"] - table["r"]).abs()
    return table


@pytest.mark.parametrize("share, expected", [(1.0, R), (0.3, N), (0.65, I), (None, T)])
def test_claim_size_readout_gives_every_verdict(share, expected):
    claim = F.claim_size_readout(readout(share), tolerance=0.01, n_draws=300)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.units == 29
    assert "shuffled" in claim.premise and len(claim.table) == 29  # r = 0.2 with β = 0.1 is left out


def test_claim_size_readout_without_cases_is_not_testable():
    table = readout(1.0)
    claim = F.claim_size_readout(table[(table["r"] == 0.2) & (table["beta"] == 0.1)], tolerance=0.01)
    assert claim.verdict == T and "fewer than 3" in claim.verdict.why


# ------------------------------------------------------------------------------------------ F6 sensitivity
def sensitivity(values: list[tuple[float, float, float]], *, chance: float = 0.8) -> tuple[pd.DataFrame, ...]:
    keys = list(fl.metrics.DIRECTIONS)
    table = pd.DataFrame([{"varied": "beta", "value": b, **dict(zip(keys, v))}
                          for b, v in zip((0.05, 0.1, 0.2), values)])
    rng = np.random.default_rng(0)
    null = pd.concat([pd.DataFrame({"draw": range(200), **{k: rng.uniform(-chance, chance, 200) for k in keys}})
                      .assign(varied="beta", value=b) for b in (0.05, 0.1, 0.2)], ignore_index=True)
    return table, null


GOOD_SETTING, BAD_SETTING = (-0.95, 0.95, -0.95), (0.95, -0.95, 0.95)


@pytest.mark.parametrize("values, chance, expected", [
    ([GOOD_SETTING] * 3, 0.8, R),
    ([GOOD_SETTING, GOOD_SETTING, BAD_SETTING], 0.8, P),
    ([BAD_SETTING, BAD_SETTING, GOOD_SETTING], 0.8, N),  # one of three holds: below half
    ([GOOD_SETTING, (-0.9, 0.5, -0.9), (-0.9, 0.5, -0.9)], 0.8, R),  # LeRF at chance: two settings left out
    ([(-0.9, 0.9, -0.9)] * 3, 1.0, T),   # above the threshold but within a wide chance range
    ([(float("nan"), 0.95, -0.95)] * 3, 0.8, T),
])
def test_claim_robust_hyperparameters_gives_every_verdict(values, chance, expected):
    claim = F.claim_robust_hyperparameters(*sensitivity(values, chance=chance))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F6:") and len(claim.table) == 3 and "chance range" in claim.premise
    assert claim.premise.endswith(f"{int(claim.table.testable.sum())} of 3 settings are testable"), claim.premise


# ---------------------------------------------------------------------------- F10 maps kept by the fine-tuning
def map_pair(noise: float, *, n: int = 40, pixels: int = 64, seed: int = 0):
    """Random maps of n images and the same maps after "fine-tuning": mixed with independent noise of weight
    ``noise`` (noise 1: unrelated maps)."""
    g = torch.Generator().manual_seed(seed)
    original = torch.rand(n, pixels, generator=g)
    return original, (1 - noise) * original + noise * torch.rand(n, pixels, generator=g)


def test_map_agreement_matches_scipy_and_a_hand_count():
    from scipy.stats import spearmanr

    a, b = map_pair(0.5)
    a[0] = 0.0  # a constant map: its correlation is undefined
    frame, nulls = F.map_agreement(a, b, n_draws=200)
    expected = [spearmanr(u, v).statistic for u, v in zip(a[1:].numpy(), b[1:].numpy())]
    assert np.isnan(frame["spearman"][0]) and np.allclose(frame["spearman"][1:], expected)
    # top 10 % of 64 pixels = the 7 largest; hand-made maps sharing 3 of them overlap 3/7
    u, v = torch.arange(64.0).repeat(3, 1), torch.arange(64.0).repeat(3, 1)
    v[:, 60:] = -1.0  # pixels 60-63 leave the top 7 of v, replaced by 53-56 ...
    frame, _ = F.map_agreement(u, v, n_draws=50)
    assert np.allclose(frame["top overlap"], 3 / 7)  # ... so 57, 58, 59 are shared
    assert set(nulls) == set(F.AGREEMENT) and "shuffled" in nulls["spearman"].what
    with pytest.raises(ValueError, match="finetuned"):
        F.map_agreement(a, b[:, :10])
    with pytest.raises(ValueError, match="original"):
        F.map_agreement(a[:2], b[:2])


@pytest.mark.parametrize("noise, expected", [(0.1, R), (0.6, P), (0.9, N), (1.0, T)])
def test_claim_maps_preserved_gives_every_verdict(noise, expected):
    """Unrelated maps (noise 1) score like maps of other images: not testable; a faint likeness beyond that chance
    level (noise 0.9): not reproduced."""
    frame, nulls = F.map_agreement(*map_pair(noise), n_draws=200)
    claim = F.claim_maps_preserved(frame, nulls, value="toy")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.units == 40
    assert claim.claim.startswith("F10 (toy): fine-tuning keeps the explanations") and len(claim.table) == 2
    with pytest.raises(ValueError, match="statistic"):
        F.claim_maps_preserved(frame, nulls, value="toy", statistic="pearson")


def test_claim_maps_preserved_is_inconclusive_when_the_interval_straddles_a_margin():
    """Two replicas, one whose maps are kept (ρ ≈ 0.99) and one whose maps are mostly lost (ρ ≈ 0.2): the two-stage
    interval over replicas spans both margins."""
    kept, _ = F.map_agreement(*map_pair(0.1, seed=1), n_draws=50)
    lost, nulls = F.map_agreement(*map_pair(0.8, seed=2), n_draws=200)
    frame = pd.concat([kept.assign(replica=0), lost.assign(replica=1)], ignore_index=True)
    claim = F.claim_maps_preserved(frame, nulls, value="toy", seed=2)
    assert claim.verdict == I, claim.verdict.why
    assert claim.units == 80


# --------------------------------------------------------------------- the one procedure: replicas and seeds
def test_claim_functions_take_seed_and_one_replicas_rows():
    """Every claim function accepts ``seed`` and works on one replica's rows (what replicated() does), and no rule
    text states a decision threshold (Claim refuses it)."""
    _, _, cells, null = study({"Fidelity": (NOISY, 1, False), "ROAR": (NOISY, 2, False),
                               "F-Fidelity": (GOOD, 3, False)}, replicas=3)  # the house asks 3 replicas
    claim = fl.verdicts.replicated(F.claim_ranking, cells, null, group="explainer", value="E", seed=4, seeds=3)
    assert claim.verdict == R and claim.replicas == (R, R, R) and len(claim.stability) == 3
    one = F.claim_ranking(cells[cells["replica"] == 1], null[null["replica"] == 1], group="explainer", value="E",
                          seed=9)
    assert one.units == 3 * len(LEVELS)
    _, _, cells, null = study({m: (s, i, False) for i, (m, s) in enumerate(zip(CHAIN, (1.2, 0.4, 0.08)))},
                              replicas=3)
    claim = fl.verdicts.replicated(F.claim_ablation, cells, null, group="explainer", value="E", seed=1, seeds=2)
    assert claim.verdict == R and claim.replicas == (R, R, R)
    claim = fl.verdicts.replicated(F.claim_lerf_near_one, cells, null, group="explainer", value="E",
                                   target="F-Fidelity", seed=1, seeds=2)
    assert claim.verdict == R and len(claim.replicas) == 3
    claim = fl.verdicts.replicated(F.claim_map_preferred, per_image(0.1, 0.05, replicas=3), seed=2, seeds=2)
    assert claim.verdict == R and claim.replicas == (R, R, R)


def test_claim_ranking_two_stage_interval_counts_the_replicas():
    """The same units split over replicas that disagree give a wider interval than over one model."""
    _, _, cells, null = study({"Fidelity": (0.3, 1, False), "F-Fidelity": (0.2, 3, False)}, replicas=3)
    pooled = F.claim_ranking(cells.assign(replica=0), null.assign(replica=0), group="explainer", value="E")
    nested = F.claim_ranking(cells, null, group="explainer", value="E")
    width = {k: float(c.table.dropna(subset=["high"])["high"].iloc[0] - c.table.dropna(subset=["low"])["low"].iloc[0])
             for k, c in (("pooled", pooled), ("nested", nested))}
    assert width["nested"] >= width["pooled"] * 0.9


def sensitivity_units(by_replica: list[float], *, n_seeds: int = 10, seed: int = 0) -> tuple[pd.DataFrame, ...]:
    """The sensitivity notebook's per-unit macro correlations (one row per setting, replica and degradation seed):
    in replica r every correlation has the ideal sign with magnitude ``by_replica[r]`` (± 0.01 noise per seed), for
    three β settings; the null (one per replica, the same draws) spans ±0.5."""
    keys = list(fl.metrics.DIRECTIONS)
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in fl.metrics.DIRECTIONS.items()}
    rng = np.random.default_rng(seed)
    units = pd.DataFrame([{"varied": "beta", "value": b, "replica": r, "seed": s,
                           **{k: sign[k] * (m + rng.uniform(-0.01, 0.01)) for k in keys}}
                          for b in (0.05, 0.1, 0.2) for r, m in enumerate(by_replica) for s in range(n_seeds)])
    draws = {k: rng.uniform(-0.5, 0.5, 200) for k in keys}
    null = pd.concat([pd.DataFrame({"draw": range(200), **draws}).assign(varied="beta", value=b, replica=r)
                      for b in (0.05, 0.1, 0.2) for r in range(len(by_replica))], ignore_index=True)
    return units, null


def test_claim_robust_hyperparameters_resamples_the_replicas():
    """|ρ| 0.97 in replica 0 and 0.75 in replica 1: pooled over 20 seeds as one model the mean (0.86) lies beyond
    the margin 0.8 in every setting; over two trained models every interval spans both replicas and straddles it."""
    units, null = sensitivity_units([0.97, 0.75])
    pooled = F.claim_robust_hyperparameters(units.assign(replica=0), null.assign(replica=0))
    nested = F.claim_robust_hyperparameters(units, null)
    assert pooled.verdict == R, pooled.verdict.why
    assert nested.verdict == I, nested.verdict.why
    assert set(nested.table["passes threshold"]) == {"undecided"} and nested.units == pooled.units == 20
    assert "2 independently trained replicas" in nested.rule and "replicas then seeds" in nested.rule
    low = nested.table["lerf_vs_gt low"]
    assert (low < 0.8).all() and (nested.table["lerf_vs_gt high"] > 0.8).all()


def test_claim_robust_hyperparameters_per_replica_and_seed():
    """Through verdicts.replicated: decided on each replica's rows alone, and the same under other bootstrap seeds."""
    units, null = sensitivity_units([0.97, 0.95, 0.96])
    claim = fl.verdicts.replicated(F.claim_robust_hyperparameters, units, null, seed=3, seeds=3)
    assert claim.verdict == R and claim.replicas == (R, R, R) and len(claim.stability) == 3
    assert claim.units == 30 and claim.replica_agreement == "3 of 3 replicas"
    lost = F.claim_robust_hyperparameters(*sensitivity_units([0.5, 0.55]))  # both replicas clearly below the margin
    assert lost.verdict == N and set(lost.table["passes threshold"]) == {"fails"}

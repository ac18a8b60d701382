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
R, P, N, T = fl.verdicts.VERDICTS
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


def study(spec: dict, *, group: str = "E"):
    """P, Q dicts, micro cells and the permuted-order null of methods given as {name: (noise, seed, chance)}."""
    P_, Q_ = {}, {}
    for name, (noise, seed, chance) in spec.items():
        P_[group, name], Q_[group, name] = curves(noise, seed=seed, chance=chance)
    methods = list(spec)
    cells = fl.protocols.micro_cells(P_, Q_, noise_levels=XI, sparsity=LEVELS, methods=methods, group="explainer")
    null = F.ground_truth_null(P_, Q_, noise_levels=XI, sparsity=LEVELS, methods=methods, group="explainer",
                               n_draws=200)
    return P_, Q_, cells, null


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
    P_, Q_, cells, null = study({"A": (0.3, 0, False)})
    micro = fl.metrics.ground_truth_ranking(P_["E", "A"], Q_["E", "A"], XI)["micro"]
    expected = ((-micro["morf_vs_gt"] + micro["lerf_vs_gt"]) / 2).flatten()
    assert cells["GT micro"].to_numpy() == pytest.approx(expected.numpy(), abs=1e-6)
    assert set(null["method"]) == {"A"} and len(null) == 200


# -------------------------------------------------------------------------------------------- F1 ranking claim
GOOD, NOISY = 0.08, 0.5


@pytest.mark.parametrize("spec, expected, why", [
    ({"Fidelity": (NOISY, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (GOOD, 3, False)}, R, "beats"),
    ({"Fidelity": (0.2, 1, False), "ROAR": (0.2, 1, False), "F-Fidelity": (0.2, 1, False)}, T, "ties"),
    ({"Fidelity": (0.2, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (0.2, 3, False)}, P, "beats ROAR"),
    ({"Fidelity": (0.15, 1, False), "ROAR": (0.15, 2, False), "F-Fidelity": (0.9, 3, False)}, N, "loses"),
    ({"Fidelity": (0, 1, True), "ROAR": (0, 2, True), "F-Fidelity": (0, 3, True)}, T, "permuted order"),
    ({"Fidelity": (0.0, 1, False), "ROAR": (NOISY, 2, False), "F-Fidelity": (GOOD, 3, False)}, T, "ideal"),
])
def test_claim_ranking_gives_every_verdict(spec, expected, why):
    _, _, cells, null = study(spec)
    claim = F.claim_ranking(cells, null, group="explainer", value="E", paper_value="F-Fid best")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert claim.claim.startswith("F1 (E): F-Fidelity recovers") and "chance range" in claim.premise
    assert list(claim.table["method"]) == list(spec) and "mean difference" in claim.table.columns


def test_claim_ranking_null_moves_the_verdict_and_old_name_still_works():
    # F-Fidelity at chance, the others recover the order: F-Fidelity loses (a testable "not reproduced")
    _, _, cells, null = study({"Fidelity": (0.15, 1, False), "F-Fidelity": (0, 3, True)})
    claim = F.claim_ranking(cells, null, group="explainer", value="E")
    assert claim.verdict == N
    table = claim.table.set_index("method")
    assert bool(table.loc["Fidelity", "beyond chance"]) and not bool(table.loc["F-Fidelity", "beyond chance"])
    v, comps = fl.protocols.ranking_verdict(cells, group="explainer", value="E")
    assert v == N and list(comps) == ["Fidelity"]
    with pytest.raises(ValueError, match="no draws"):
        F.claim_ranking(cells, null[null["method"] == "Fidelity"], group="explainer", value="E")


# ---------------------------------------------------------------------------------------------- F2 LeRF ≈ +1
def lerf_frames(order, *, xi=XI):
    """Correlations and null of one F-Fidelity whose "−" curves rank the explainers by ``order`` at every seed."""
    n = len(xi)
    q = torch.tensor(order, dtype=torch.float32)[None, :, None].expand(3, n, len(LEVELS)).contiguous()
    p = 1 - q
    P_, Q_ = {("E", "F-Fidelity"): p}, {("E", "F-Fidelity"): q}
    corr = fl.protocols.ranking_correlations(P_, Q_, noise_levels=xi, sparsity=LEVELS, methods=["F-Fidelity"],
                                             group="explainer")
    null = F.ground_truth_null(P_, Q_, noise_levels=xi, sparsity=LEVELS, methods=["F-Fidelity"], group="explainer",
                               n_draws=400)
    return corr, null


XI12 = [i / 11 for i in range(12)]
SWAPPED = [4, 1, 2, 3, 0, 9, 6, 11, 8, 5, 10, 7]  # three swaps: Spearman 0.66, beyond the 12-explainer chance range


@pytest.mark.parametrize("order, xi, expected", [
    (list(range(6)), XI, R),                  # ρ = 1
    (SWAPPED, XI12, P),                       # ρ = 0.66 with 12 explainers
    (list(range(6))[::-1], XI, N),            # ρ = −1, beyond chance on the wrong side
    ([2, 5, 0, 3, 4, 1], XI, T),              # ρ ≈ 0: at chance
])
def test_claim_lerf_near_one_gives_every_verdict(order, xi, expected):
    corr, null = lerf_frames(order, xi=xi)
    claim = F.claim_lerf_near_one(corr, null, group="explainer", value="E")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F2 (E)") and "chance range" in claim.premise
    assert claim.claim.endswith("(Tables 1-2)")
    table2 = F.claim_lerf_near_one(corr, null, group="explainer", value="E", source="Table 2, cluttered canvases")
    assert table2.claim.endswith("(Table 2, cluttered canvases)") and table2.verdict == expected


def test_claim_lerf_near_one_is_not_testable_at_0_8_with_three_explainers():
    corr, null = lerf_frames([0, 1, 2], xi=[0.0, 0.5, 1.0])
    claim = F.claim_lerf_near_one(corr, null, group="explainer", value="E")
    assert claim.our_value == "1.00" and claim.verdict == T and "chance range" in claim.verdict.why


# ---------------------------------------------------------------------------------------------- F3 ablation
CHAIN = ("Fidelity", "Fidelity+Fine-tune", "F-Fidelity")


@pytest.mark.parametrize("noises, expected", [
    ((1.2, 0.4, 0.08), R),
    ((1.2, 0.1, 0.1), P),        # the last two are the same curves: the second step is an exact tie
    ((0.25, 0.6, 1.2), N),
    (None, T),                   # every method at chance
])
def test_claim_ablation_gives_every_verdict(noises, expected):
    if noises is None:
        spec = {m: (0, i, True) for i, m in enumerate(CHAIN)}
    else:
        spec = {m: (s, 7 if expected == P and i > 0 else i, False) for i, (m, s) in enumerate(zip(CHAIN, noises))}
    _, _, cells, null = study(spec)
    claim = F.claim_ablation(cells, null, group="explainer", value="E")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F3 (E): Ablation")
    if expected != T:
        steps = {"Fidelity+Fine-tune vs Fidelity", "F-Fidelity vs Fidelity+Fine-tune"}
        assert set(claim.table["method"].dropna()) >= steps
    else:
        assert "permuted order" in claim.verdict.why


# --------------------------------------------------------------------------------------------- study check
def diagnostic(main_gap: float, control_gap: float, *, clean: float = 0.9) -> pd.DataFrame:
    rows = []
    for setting, gap in (("main: coloured", main_gap), ("control: grey", control_gap)):
        rows += [{"setting": setting, "model": "original", "k": 0, "removed": "none", "accuracy": clean},
                 {"setting": setting, "model": "original", "k": 26, "removed": "non-salient",
                  "accuracy": clean - gap},
                 {"setting": setting, "model": "original", "k": 26, "removed": "salient", "accuracy": 0.3}]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("main_gap, control_gap, n, expected", [
    (0.3, 0.0, 100, R),
    (0.03, 0.0, 20000, P),      # significant but small
    (-0.2, 0.01, 100, N),       # removal helps the coloured model: significantly below the control
    (0.3, 0.1, 100, T),         # the control (the null) loses accuracy itself
    (0.06, 0.0, 20, T),         # cannot be told from the control with 20 images
])
def test_claim_ood_check_gives_every_verdict(main_gap, control_gap, n, expected):
    frame = diagnostic(main_gap, control_gap, clean=0.9 if main_gap >= 0 else 0.6)
    claim = F.claim_ood_check(frame, main="main: coloured", control="control: grey", n_images=n)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "grey control" in claim.premise and len(claim.table) == 2


# ------------------------------------------------------------------------------------ F8 GradCAM vs Saliency
def per_image(plus_gap: float, minus_gap: float, *, n: int = 60, noise: float = 0.05) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base_p, base_m = rng.uniform(0.1, 0.3, n), rng.uniform(0.05, 0.15, n)
    rows = []
    for name, dp, dm in (("GradCAM", plus_gap, -minus_gap), ("Saliency", 0.0, 0.0)):
        rows += [{"case": i + 1, "explainer": name, "FFid+": base_p[i] + dp + noise * rng.normal(),
                  "FFid−": base_m[i] + dm + noise * rng.normal()} for i in range(n)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("plus_gap, minus_gap, expected", [
    (0.1, 0.05, R), (0.1, 0.0, P), (0.1, -0.05, N), (0.0, 0.0, T)])
def test_claim_map_preferred_gives_every_verdict(plus_gap, minus_gap, expected):
    claim = F.claim_map_preferred(per_image(plus_gap, minus_gap), paper_value="0.2286 vs 0.2020")
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("F8: F-Fidelity rates GradCAM above Saliency") and len(claim.table) == 2


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
    claim = F.claim_cost(*cost_frames(*args, **kwargs))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
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


@pytest.mark.parametrize("share, expected", [(1.0, R), (0.65, P), (0.4, N), (None, T)])
def test_claim_size_readout_gives_every_verdict(share, expected):
    claim = F.claim_size_readout(readout(share), tolerance=0.01, n_draws=300)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
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
    assert claim.claim.startswith("F10 (toy): fine-tuning keeps the explanations") and len(claim.table) == 2
    with pytest.raises(ValueError, match="statistic"):
        F.claim_maps_preserved(frame, nulls, value="toy", statistic="pearson")

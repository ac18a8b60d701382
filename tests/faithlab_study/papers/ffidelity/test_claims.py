"""F-Fidelity's claims of the image notebooks (ranking, LeRF, ablation, the OOD check, GradCAM vs Saliency, cost,
explanation size, sensitivity, maps kept) as claim functions decided by their registered rules: each is built on small
synthetic frames of three trained replicas to give every verdict it can give — reproduced, reproduced weaker (shown
in the paper's direction, short of the margin), not reproduced by equivalence (a tight interval inside the band of no
meaningful effect), not reproduced by reversal, inconclusive (an interval reaching both the value of no effect and the
margin), not testable and, for claims of named parts, partly — and every null and premise is checked to move the
verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs

F = fs.papers.ffidelity
R, W, P, N, T, I = fs.verdicts.VERDICTS  # W: reproduced, weaker
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
        cells.append(fs.papers.micro_cells(P_, Q_, noise_levels=XI, sparsity=LEVELS, methods=methods,
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
    null = fs.verdicts.Null("permuted", tuple(draws["lerf_vs_gt"]))
    assert abs(null.median) < 0.2 and 0.6 < null.high < 0.95 and not null.contains(1.0)
    assert draws["lerf_vs_gt"].to_numpy() == pytest.approx(-draws["morf_vs_gt"].to_numpy())
    assert draws["GT micro"].to_numpy() == pytest.approx(draws["lerf_vs_gt"].to_numpy())
    # MoRF vs LeRF involves no ground truth: its null shuffles the pairing of the + and − curves
    assert abs(draws["morf_vs_lerf"].median()) < 0.2
    # at most n_draws permutations: the exact distribution, every permutation once (6! = 720)
    exact = F.permuted_correlations(p, q, noise_levels=XI, sparsity=LEVELS, n_draws=1000)
    assert len(exact) == 720 and exact["lerf_vs_gt"].round(6).value_counts()[1.0] == 1
    assert fs.verdicts.Null("exact", tuple(exact["lerf_vs_gt"])).high == pytest.approx(0.8286, abs=1e-3)
    # with three explainers every ρ lies within the chance range: nothing can be told from chance
    p3, q3 = curves(0.0, seed=0, xi=[0.0, 0.5, 1.0])
    three = F.permuted_correlations(p3, q3, noise_levels=[0.0, 0.5, 1.0], n_draws=200)
    assert fs.verdicts.Null("permuted", tuple(three["lerf_vs_gt"])).contains(1.0)
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


# ------------------------------------------------------------------------------------------- synthetic cells
METHODS = ["Fidelity", "ROAR", "R-Fidelity", "F-Fidelity"]
WIDE = np.linspace(-0.5, 0.5, 40)  # a chance range of about ±0.48


def cells(ranks: dict[str, list[float]], *, oriented: dict[str, list[float]] | None = None,
          gt: dict[str, float] | None = None, lerf: list[float] | None = None, value: str = "E", n_seeds: int = 2,
          n_levels: int = 3, wobble: float = 0.3):
    """micro_cells-like rows (explainer, method, replica, seed, level, micro rank, oriented micro, GT micro, LeRF
    micro) whose per-replica means are ``ranks[m][r]``, ``oriented[m][r]`` (default 1 − rank / 4) and
    ``lerf[r]`` (F-Fidelity's LeRF micro); every (seed, level) cell wobbles by ±``wobble`` around them (the
    wobbles sum to zero within a replica, so the replica means are exact); GT micro ``gt[m]`` (default 0.9). And
    the permuted-order null: 40 draws spread over [−0.5, 0.5] per method and replica."""
    gt = gt or {}
    rows, nulls = [], []
    n_cells = n_seeds * n_levels
    pattern = np.tile([wobble, -wobble], n_cells // 2 + 1)[:n_cells]
    pattern = pattern - pattern.mean()
    for m, per in ranks.items():
        for r, rank in enumerate(per):
            o = (oriented or {}).get(m, [1 - x / 4 for x in per])[r]
            le = (lerf[r] if lerf is not None and m == "F-Fidelity" else 0.95)
            for c, (s, level) in enumerate((s, level) for s in range(n_seeds) for level in range(n_levels)):
                rows.append({"explainer": value, "method": m, "replica": r, "seed": s, "level": 0.1 * (level + 1),
                             "micro rank": rank + pattern[c], "oriented micro": o + pattern[c] / 10,
                             "GT micro": gt.get(m, 0.9), "LeRF micro": le + pattern[c] / 10})
            nulls += [{"explainer": value, "method": m, "replica": r, "draw": d, "GT micro": w}
                      for d, w in enumerate(WIDE)]
    return pd.DataFrame(rows), pd.DataFrame(nulls)


BEST = {"Fidelity": [3, 3.2, 2.9], "ROAR": [3.5, 3.4, 3.6], "R-Fidelity": [2.0, 1.9, 2.1], "F-Fidelity": [1, 1.1, 1]}


def ranked(**change):
    return {**BEST, **change}


@pytest.mark.parametrize("ranks, gt, expected, why", [
    (BEST, None, R, "holds in 3 of 3 competitors"),
    # R-Fidelity ties F-Fidelity tightly: the interval lies inside the band below its margin 0.0167
    (ranked(**{"R-Fidelity": [1.0, 1.105, 0.995]}), None, N, "absent in 1"),
    # R-Fidelity behind F-Fidelity by 0.01 in every replica: shown behind, by less than its margin
    (ranked(**{"R-Fidelity": [1.01, 1.11, 1.01]}), None, W, "weaker in 1"),
    # Fidelity behind by 0.3 in every replica: shown behind, by less than its margin 0.5017 (R-Fidelity's would pass)
    (ranked(Fidelity=[1.3, 1.4, 1.3]), None, W, "weaker in 1"),
    (ranked(**{"R-Fidelity": [0.5, 0.6, 0.5]}), None, N, "R-Fidelity"),               # reversed: F-Fidelity worse
    (ranked(**{"R-Fidelity": [1.6, 0.7, 1.5]}), None, I, "undecided in 1"),           # replicas disagree
    (BEST, {m: 0.1 for m in METHODS}, T, "permuted order"),                          # no method beyond chance
])
def test_claim_ranking_gives_every_verdict(ranks, gt, expected, why):
    frame, null = cells(ranks, gt=gt)
    claim = F.claim_ranking(frame, null, group="explainer", value="E", n_images=40)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert why in claim.verdict.why
    assert claim.rule_id == "F1" and "R-Fidelity: 0.0167" in claim.rule and claim.units == 120
    assert claim.kept_replicas == 3
    assert len(claim.table) == 4 and claim.table.set_index("method").loc["F-Fidelity", "outcome"] != "holds"


def test_claim_ranking_premises_the_ideal_baseline_and_the_mechanism_and_rule_f7():
    frame, null = cells(BEST, oriented={"Fidelity": [0.99, 0.99, 0.99]})
    assert "ideal" in F.claim_ranking(frame, null, group="explainer", value="E", n_images=40).verdict.why
    frame, null = cells(BEST)
    fails, undecided = fs.verdicts.Premise(False, "no OOD"), fs.verdicts.Premise(None, "OOD undecided")
    assert F.claim_ranking(frame, null, group="explainer", value="E", n_images=40, mechanism=fails).verdict == T
    assert F.claim_ranking(frame, null, group="explainer", value="E", n_images=40,
                           mechanism=undecided).verdict == I
    f7 = F.claim_ranking(frame, null, group="explainer", value="E", n_images=40, rule_id="F7", source="Table 5")
    assert f7.rule_id == "F7" and f7.claim.startswith("F7 (E)") and "0.0167" in f7.rule and f7.verdict == R
    with pytest.raises(ValueError, match="rule_id"):
        F.claim_ranking(frame, null, group="explainer", value="E", n_images=40, rule_id="F2")


def test_ranking_claims_are_decided_on_replicas_and_not_forced_inconclusive():
    frame, null = cells(BEST)
    decided = fs.verdicts.replicated(F.claim_ranking, frame, null, group="explainer", value="E", n_images=40,
                                     seeds=0)
    # one replica alone has no replica-level interval: each is left out, and the verdict rests on the three
    assert decided.verdict == R and decided.replicas == ("left out",) * 3 and decided.kept_replicas == 3
    assert decided.power.startswith("3 replicas × 40 units suffice") or "replicas" in decided.power
    with pytest.raises(ValueError, match="at least 2 replicas"):
        F.claim_ranking(frame[frame["replica"] == 0], null, group="explainer", value="E", n_images=40)


def test_undefined_replica_statistics_are_not_testable_and_not_an_error():
    frame, null = cells(BEST)
    for column in ("micro rank", "oriented micro", "LeRF micro"):
        frame[column] = float("nan")  # every correlation undefined (constant scores)
    common = dict(group="explainer", value="E", n_images=40)
    assert F.claim_ranking(frame, null, **common).verdict == T
    assert F.claim_lerf_near_one(frame, null, **common).verdict == T
    assert F.claim_ablation(frame.replace({"R-Fidelity": "Fidelity+Fine-tune"}), null.replace(
        {"R-Fidelity": "Fidelity+Fine-tune"}), chain=CHAIN, **common).verdict == T


def test_claim_ranking_on_curves_end_to_end():
    _, _, frame, null = study({"Fidelity": (0.5, 1, False), "ROAR": (0.5, 2, False), "R-Fidelity": (0.5, 4, False),
                               "F-Fidelity": (0.02, 3, False)}, replicas=3)
    claim = F.claim_ranking(frame, null, group="explainer", value="E", n_images=30)
    assert claim.verdict == R, claim.verdict.why


@pytest.mark.parametrize("lerf, gt, expected", [
    ([0.97, 0.96, 0.98], 0.9, R),
    ([0.6, 0.62, 0.61], 0.9, W),        # tightly above 0, below the margin 0.9: related, not near one
    ([0.02, -0.01, 0.0], 0.9, N),       # tightly around 0: inside the band of no meaningful effect
    ([-0.5, -0.4, -0.5], 0.9, N),       # reversed
    ([0.99, -0.2, 0.95], 0.9, I),       # the replicas disagree: reaches both 0 and 0.9
    ([0.97, 0.96, 0.98], 0.1, T),       # F-Fidelity's GT micro at chance
])
def test_claim_lerf_near_one_gives_every_verdict(lerf, gt, expected):
    frame, null = cells(BEST, lerf=lerf, gt={"F-Fidelity": gt})
    claim = F.claim_lerf_near_one(frame, null, group="explainer", value="E", n_images=40)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "F2" and claim.table["units"].item() == 120


CHAIN = ["Fidelity", "Fidelity+Fine-tune", "F-Fidelity"]


@pytest.mark.parametrize("oriented, expected", [
    ({"Fidelity": [0.2] * 3, "Fidelity+Fine-tune": [0.5, 0.52, 0.5], "F-Fidelity": [0.9, 0.88, 0.9]}, R),
    ({"Fidelity": [0.2] * 3, "Fidelity+Fine-tune": [0.5, 0.52, 0.5], "F-Fidelity": [0.5, 0.51, 0.5]}, P),  # tie
    # each step gains 0.06, about half the margin 0.1192: both steps shown, smaller than the paper's
    ({"Fidelity": [0.2] * 3, "Fidelity+Fine-tune": [0.26, 0.27, 0.26], "F-Fidelity": [0.32, 0.33, 0.32]}, W),
    ({"Fidelity": [0.5] * 3, "Fidelity+Fine-tune": [0.3, 0.31, 0.3], "F-Fidelity": [0.3, 0.3, 0.31]}, N),
    ({"Fidelity": [0.2] * 3, "Fidelity+Fine-tune": [0.5, 0.1, 0.6], "F-Fidelity": [0.9, 0.88, 0.9]}, I),
    ({"Fidelity": [0.99] * 3, "Fidelity+Fine-tune": [0.99] * 3, "F-Fidelity": [0.99] * 3}, T),  # at the ideal
])
def test_claim_ablation_gives_every_verdict(oriented, expected):
    frame, null = cells({m: [2, 2, 2] for m in CHAIN}, oriented=oriented)
    claim = F.claim_ablation(frame, null, group="explainer", value="E", n_images=40, chain=CHAIN)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "F3" and claim.units == 120 and claim.kept_replicas == 3


# ------------------------------------------------------------------------------------------- the mechanism
def ood_frame(original: list[float], finetuned: list[float], *, n: int = 100) -> pd.DataFrame:
    """ood_per_input-like rows of three replicas: every input's loss is the replica's value (clean 1, removed
    1 − loss)."""
    rows = []
    for r, (lo, lf) in enumerate(zip(original, finetuned)):
        for model, loss in (("original", lo), ("fine-tuned", lf)):
            rows.append(pd.DataFrame({"input": range(n), "model": model, "k": 26, "clean": 1.0,
                                      "removed": 1.0 - loss, "loss": loss, "replica": r}))
    return pd.concat(rows, ignore_index=True)


def test_claim_ood_check_counts_every_key_of_a_replica():
    # size canvases: each replica trains one model per digit size r; a replica's mean is over the images of every r,
    # not the first r's only (the check once kept one row per (replica, input) and dropped the other sizes)
    first = ood_frame([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]).assign(r=0.1)  # r = 0.1: nothing lost
    second = ood_frame([0.8, 0.8, 0.8], [0.1, 0.1, 0.1]).assign(r=0.2)  # r = 0.2: much lost, and recovered
    claim = F.claim_ood_check(pd.concat([first, second], ignore_index=True), data="sizes")
    assert claim.units == 600 and "original 0.400" in claim.our_value, claim.our_value
    with pytest.raises(ValueError, match="more than one row"):  # a key dropped: two rows per (replica, input)
        F.claim_ood_check(pd.concat([first, second], ignore_index=True).drop(columns="r"), data="sizes")


@pytest.mark.parametrize("original, finetuned, expected", [
    ([0.4, 0.5, 0.45], [0.1, 0.12, 0.1], R),     # removal is OOD and the fine-tuning absorbs it
    ([0.01, 0.0, 0.02], [0.0, 0.0, 0.01], N),    # a tight zero: removal is in distribution here
    ([0.4, 0.5, 0.45], [0.4, 0.5, 0.45], N),     # OOD, but the fine-tuned model loses as much: no recovery
    ([0.4, 0.5, 0.45], [0.45, 0.58, 0.55], N),   # OOD, and the fine-tuned model loses more: reversed
    ([0.4, 0.5, 0.45], [0.385, 0.49, 0.435], W),  # OOD, and a recovery shown but below its margin 0.0298
    ([0.4, 0.02, 0.45], [0.1, 0.0, 0.1], I),     # the replicas disagree
])
def test_claim_ood_check_gives_every_verdict_and_the_premise_follows_it(original, finetuned, expected):
    claim = F.claim_ood_check(ood_frame(original, finetuned), data="toy")
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "FF.OOD" and claim.kind == "study check" and claim.units == 300
    premise = F.mechanism(claim)  # a weaker check still shows the mechanism: the claims on the data set are tested
    assert premise.holds is {R: True, W: True, N: False, I: None}[expected] and "FF.OOD (toy)" in premise.text
    with pytest.raises(TypeError, match="FF.OOD"):
        F.mechanism(F.claim_lerf_near_one(*cells(BEST), group="explainer", value="E", n_images=40))


def test_ood_per_input_measures_the_loss_to_background_removal():
    from oracles import Gated

    side, n = 4, 50
    relevant = torch.zeros(1, side, side, dtype=torch.bool)
    relevant.view(-1)[:6] = True
    x, y = torch.ones(n, 1, side, side), torch.zeros(n, dtype=torch.long)
    salient = relevant.view(1, -1).expand(n, -1)
    models = {"evidence": Gated(relevant, m=2), "ood": Gated(torch.ones(1, side, side, dtype=torch.bool), m=1)}
    frame = F.ood_per_input(models, x, y, salient, k=2, n_draws=4, generator=0)
    by = frame.groupby("model")[["clean", "removed", "loss"]].mean()
    # "evidence" reads only the relevant pixels: background removal costs nothing; "ood" flips on any removal
    assert by.loc["evidence"].tolist() == [1.0, 1.0, 0.0] and by.loc["ood"].tolist() == [1.0, 0.0, 1.0]
    assert set(frame["k"]) == {2} and len(frame) == 2 * n
    assert F.ood_per_input(models, x, y, salient, beta=0.1, generator=0)["k"].iloc[0] == 2  # round(0.1 · 16)
    with pytest.raises(ValueError, match="fewest background"):
        F.ood_per_input(models, x, y, salient, k=11)


# ------------------------------------------------------------------------------------------- F8 (Tables 11–12)
def per_image(plus: list[float], minus: list[float], *, n: int = 60) -> pd.DataFrame:
    """Per-image FFid± of GradCAM and Saliency in three replicas: GradCAM's FFid+ above Saliency's by plus[r], its
    FFid− below by minus[r] (per image: the replica's value ± a wobble that sums to zero)."""
    rows = []
    wobble = np.tile([0.01, -0.01], n // 2)
    for r, (p, m) in enumerate(zip(plus, minus)):
        rows.append(pd.DataFrame({"case": range(n), "explainer": "Saliency", "FFid+": 0.2 + wobble,
                                  "FFid−": 0.1 + wobble, "replica": r}))
        rows.append(pd.DataFrame({"case": range(n), "explainer": "GradCAM", "FFid+": 0.2 + p + wobble,
                                  "FFid−": 0.1 - m + wobble, "replica": r}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("plus, minus, expected", [
    ([0.05, 0.06, 0.05], [0.05, 0.06, 0.05], R),   # above both margins (0.0133, 0.0251)
    ([0.05, 0.06, 0.05], [0.0, 0.001, 0.0], P),    # FFid− tied tightly: one part of two
    ([0.007, 0.008, 0.007], [0.05, 0.06, 0.05], W),  # FFid+ ahead by about half its margin: both parts shown
    ([0.0, 0.001, 0.0], [0.0, 0.001, 0.0], N),     # both tied: shown inside the band
    ([-0.05, -0.06, -0.05], [0.05, 0.06, 0.05], P),  # FFid+ reversed, FFid− holds
    ([0.05, -0.04, 0.06], [0.05, 0.06, 0.05], I),  # FFid+ straddles its margin
])
def test_claim_map_preferred_gives_every_verdict(plus, minus, expected):
    claim = F.claim_map_preferred(per_image(plus, minus), setting="Table 11", paper="0.2286 vs 0.2020")
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "F8" and claim.units == 180 and claim.kept_replicas == 3 and len(claim.table) == 2
    assert F.claim_map_preferred(per_image(plus, minus), setting="Table 11",
                                 mechanism=fs.verdicts.Premise(False, "no OOD")).verdict == T


def test_claim_map_preferred_reads_each_tables_margin():
    frame = per_image([0.02, 0.021, 0.02], [0.05, 0.05, 0.05])
    # GradCAM's FFid+ lead of 0.02 lies above Table 11's margin (0.0133) and below Table 12's (0.0226): the lead is
    # shown either way, at the paper's size for Table 11 only
    assert F.claim_map_preferred(frame, setting="Table 11").verdict == R
    assert F.claim_map_preferred(frame, setting="Table 12").verdict == W
    with pytest.raises(ValueError, match="setting"):
        F.claim_map_preferred(frame, setting="Table 9")


# --------------------------------------------------------------------------------------------------- F9 cost
def test_cost_table_and_claim_cost():
    costs = pd.DataFrame([
        {"stage": "train original", "explainer": None, "model": "original", "seconds": 5.0, "image passes": 100,
         "backward passes": 80, "cached": False},
        {"stage": "fine-tune", "explainer": None, "model": "fine-tuned", "seconds": 1.0, "image passes": 20,
         "backward passes": 16, "cached": False},
        {"stage": "explain train set", "explainer": "E", "model": "original", "seconds": 2.0, "image passes": 80,
         "backward passes": 80, "cached": False},
        {"stage": "retrain (ROAR)", "explainer": "E", "model": "ROAR E", "seconds": 5.0, "image passes": 100,
         "backward passes": 80, "cached": False},
        {"stage": "explain test set", "explainer": "E", "model": "fine-tuned", "seconds": 0.5, "image passes": 10,
         "backward passes": 10, "cached": False},
        {"stage": "evaluate", "explainer": "E", "model": "fine-tuned", "method": "F-Fidelity", "seconds": 1.0,
         "image passes": 200, "backward passes": 0, "cached": False},
        {"stage": "evaluate", "explainer": "E", "model": "ROAR E", "method": "ROAR", "seconds": 0.2,
         "image passes": 20, "backward passes": 0, "cached": False}])
    table = F.cost_table(costs, finetune_epochs=2, roar_epochs=10)
    total = table[table["stage"] == "total"].set_index("method")["forward equivalents"]
    # F-Fidelity: fine-tuning at ROAR's epochs, 5 × (20 + 32) = 260, explain 30, evaluate 200; ROAR: 240 + 260 + 20
    assert total["F-Fidelity"] == 490 and total["ROAR"] == 520
    frames = pd.concat([table.assign(replica=r) for r in range(3)], ignore_index=True)
    claim = F.claim_cost(frames)
    assert claim.verdict == R and claim.kind == "study check" and claim.rule_id == "F9" and claim.units is None
    dear = frames.copy()
    dear.loc[(dear["method"] == "F-Fidelity") & (dear["stage"] == "total"), "forward equivalents"] = 600
    assert F.claim_cost(dear).verdict == N
    with pytest.raises(ValueError, match="at least 2 replicas"):
        F.claim_cost(frames[frames["replica"] == 0])


# ------------------------------------------------------------------------------------------- F4 size read-out
def readouts(correct_per_replica: list[int], *, cases: int = 12) -> pd.DataFrame:
    """(r, β) cases of three replicas whose first ``correct_per_replica[r]`` read r exactly, the others read a far
    value (0.9); r over five sizes, β/α never equal to r."""
    rows = []
    sizes = [0.1, 0.15, 0.2, 0.25, 0.3]
    for rep, k in enumerate(correct_per_replica):
        for c in range(cases):
            r = sizes[c % 5]
            rows.append({"replica": rep, "r": r, "beta": 0.1, "beta/alpha": 0.45, "r read off": r if c < k else 0.9})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("correct, expected", [
    ([12, 12, 11], R),     # nearly every case read right: the share's interval above 0.5
    ([4, 4, 4], W),        # a third, beyond the shuffled null (which reads right almost never), below 0.5
    ([12, 0, 1], I),       # the replicas disagree: reaches both 0 and 0.5
    ([0, 0, 0], N),        # no read-out right: within the shuffled null, but shown absent
])
def test_claim_size_readout_gives_every_verdict(correct, expected):
    claim = F.claim_size_readout(readouts(correct), tolerance=0.05, n_null=300)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value, claim.premise)
    assert claim.rule_id == "F4" and claim.units == 36 and "Wilson" in claim.rule


def test_claim_size_readout_untestable_when_chance_reads_as_well():
    # every read-out 0.2 with a tolerance of 0.1 is "right" for every r in 0.1..0.3: the share (1.0) holds, but the
    # read-outs shuffled over the cases are right as often, so the read-out carries no information about r
    table = readouts([0, 0, 0]).assign(**{"r read off": 0.2})
    claim = F.claim_size_readout(table, tolerance=0.1, n_null=300)
    assert claim.verdict == T and "chance" in claim.verdict.why, (claim.verdict.why, claim.our_value)


# ------------------------------------------------------------------------------------------- F6 sensitivity
def sensitivity(values: dict[tuple[str, float], list[float]], *, chance: float = 0.5) -> tuple:
    """Macro correlations of each setting, three replicas × two seeds: the oriented value o[r] of a replica split as
    MoRF vs GT −o, LeRF vs GT +o, MoRF vs LeRF −o; and the permuted null: 40 draws spread over ±chance."""
    rows, nulls = [], []
    for (varied, value), per in values.items():
        for r, o in enumerate(per):
            for s, w in enumerate((0.01, -0.01)):
                rows.append({"varied": varied, "value": value, "replica": r, "seed": s, "morf_vs_gt": -o - w,
                             "lerf_vs_gt": o + w, "morf_vs_lerf": -o - w})
            nulls += [{"varied": varied, "value": value, "replica": r, "draw": d, "morf_vs_gt": v,
                       "lerf_vs_gt": v, "morf_vs_lerf": v} for d, v in enumerate(np.linspace(-chance, chance, 40))]
    return pd.DataFrame(rows), pd.DataFrame(nulls)


STRONG = [0.9, 0.92, 0.91]


@pytest.mark.parametrize("weakest, chance, expected", [
    (STRONG, 0.5, R),
    ([0.45, 0.455, 0.45], 0.3, W),       # tightly below F6's margin 0.5067, beyond chance: the ranking kept, less
    ([-0.45, -0.455, -0.45], 0.3, N),    # one setting reverses the ranking, beyond chance: absent
    ([0.9, 0.1, 0.9], 0.05, I),          # the replicas disagree on one setting
    (STRONG, 1.0, T),                    # the margin within every chance range: no setting can be tested
    ([0.0, 0.01, -0.01], 0.3, N),        # one setting's ranking at chance: it counts against the claim (absent)
])
def test_claim_robust_hyperparameters_gives_every_verdict(weakest, chance, expected):
    table, null = sensitivity({("beta", 0.05): weakest, ("beta", 0.1): STRONG, ("alpha", 0.5): STRONG},
                              chance=chance)
    claim = F.claim_robust_hyperparameters(table, null, n_images=100)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value, claim.table.to_dict("records"))
    assert claim.rule_id == "F6" and claim.units == 300 and claim.kept_replicas == 3 and len(claim.table) == 3


def test_claim_robust_hyperparameters_reversed_setting_fails():
    table, null = sensitivity({("beta", 0.05): [-0.9, -0.92, -0.91], ("beta", 0.1): STRONG})
    claim = F.claim_robust_hyperparameters(table, null, n_images=100)
    assert claim.verdict == N and "β = 0.05" in claim.verdict.why


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
    claim = F.claim_map_preferred(frame, better="truth", worse="reverse", setting="Table 12")
    assert claim.verdict == R and claim.claim.startswith("F8 (Table 12)")
    assert F.claim_map_preferred(frame, better="reverse", worse="truth", setting="Table 11").verdict == N


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


def replicated_maps(noise: list[float], *, n: int = 40, reversed_: bool = False):
    """map_agreement_over_replicas of three replicas, replica r's fine-tuned maps mixed with noise[r] (reversed_:
    the fine-tuned maps turned upside down, 1 − map, so that they rank the pixels the other way)."""
    pairs = {r: map_pair(z, n=n, seed=r) for r, z in enumerate(noise)}
    if reversed_:
        pairs = {r: (a, 1 - b) for r, (a, b) in pairs.items()}
    return F.map_agreement_over_replicas(pairs, n_draws=200)


@pytest.mark.parametrize("noise, reversed_, expected", [
    ([0.1, 0.1, 0.1], False, R),        # ρ ≈ 0.99: far above 0.5
    ([0.7, 0.7, 0.7], False, W),        # ρ ≈ 0.4, beyond chance, above 0 but tightly below 0.5
    ([0.1, 0.1, 0.1], True, N),         # maps turned upside down by the fine-tuning: reversed, beyond chance
    ([0.1, 0.9, 0.2], False, I),        # the replicas disagree: reaches both 0 and 0.5
    ([1.0, 1.0, 1.0], False, T),        # unrelated maps: within the shuffled-pairing null
])
def test_claim_maps_preserved_gives_every_verdict(noise, reversed_, expected):
    per_image_, nulls = replicated_maps(noise, reversed_=reversed_)
    claim = F.claim_maps_preserved(per_image_, nulls, value="toy")
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "F10" and claim.units == 120 and "0.5" in claim.rule


def test_map_agreement_over_replicas_stacks_the_replicas_and_averages_each_null_draw():
    pairs = {r: map_pair(0.5, seed=r) for r in range(3)}
    frame, nulls = F.map_agreement_over_replicas(pairs, n_draws=100)
    assert sorted(frame["replica"].unique()) == [0, 1, 2] and len(frame) == 120
    single = [F.map_agreement(*pairs[r], n_draws=100)[1]["spearman"].draws for r in range(3)]
    assert np.allclose(nulls["spearman"].draws, np.mean(single, axis=0))


# ------------------------------------------------------------------------------------------- margins from the paper
def test_every_rule_margin_is_the_papers_number():
    margins = F.paper.margins()
    for cid, expected in margins.items():
        rule = fs.verdicts.rule(cid)
        assert rule.paper == "ffidelity"
        got = dict(rule.margin) if isinstance(rule.margin, dict) or hasattr(rule.margin, "items") else rule.margin
        assert got == expected, f"{cid}: the registered rule holds {got}, the paper's numbers give {expected}"
    # the parts claims carry their parts' margin; F9, F10 and F4 state their own (the claim, a convention)
    assert fs.verdicts.rule("F3").margin == margins["F3.ffid"]
    assert dict(fs.verdicts.rule("F8").margin) == margins["F8.plus"]
    assert fs.verdicts.rule("F9").margin == 1.0 and "convention" in fs.verdicts.rule("F10").margin_source
    assert "convention" in fs.verdicts.rule("F4").margin_source


def test_the_margin_test_fails_when_a_number_drifts(monkeypatch):
    monkeypatch.setitem(F.paper.TABLE_5, ("Micro Rank", "lerf_vs_gt"), [1.16, 1.11, 1.42, 1.32])
    assert F.paper.margins()["F1"] != fs.verdicts.rule("F1").margin  # R-Fidelity's smallest lead moves to Table 3


def test_one_rule_for_one_kind_of_claim_and_partly_only_for_parts():
    rules = {cid: r for cid, r in fs.verdicts.all_rules().items() if r.paper == "ffidelity"}
    assert rules["F1"].statistic == rules["F7"].statistic and rules["F1"].decision == rules["F7"].decision == "every"
    # a lead in mean micro rank over a competitor has one margin, whichever claim asks it (issue 90)
    for competitor in ("Fidelity", "ROAR", "R-Fidelity"):
        asked = {r.margin_for(competitor) for cid, r in rules.items()
                 if cid in ("F1", "F7", "Series.ranking") and competitor in r.margin}
        assert len(asked) == 1, (competitor, asked)
    parts = {cid for cid, r in rules.items() if r.decision == "parts"}
    assert parts == {"F3", "F8", "Table8.restore", "D3.agreement"}
    assert {r.kind for cid, r in rules.items() if cid in ("FF.OOD", "F9")} == {"study check"}
    assert all(r.replicas >= 3 and r.units >= 30 for r in rules.values())

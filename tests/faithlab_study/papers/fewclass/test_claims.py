"""Few-class Fidelity's claims as functions (faithlab_study.papers.fewclass), decided by the rules registered
above them: synthetic frames of three trained replicas reach every verdict each
claim can give — reproduced, reproduced weaker (shown in the paper's direction, short of the margin), not reproduced
by equivalence (a tight interval inside the band of no meaningful effect), not reproduced by reversal, inconclusive
(an interval reaching both the value of no effect and the margin), not testable here (a premise fails) and, for C5a's
named parts, partly — and the margins cannot drift from the paper's numbers."""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics import fewclass as F
from faithlab_study.papers.fewclass import paper

P = fs.papers.fewclass
R, W, PARTLY, NR, NT, INC = fs.verdicts.VERDICTS  # W: reproduced, weaker
OTHERS = ["BP", "Deconv", "EG", "IG(min)", "IG(zero)", "IG(max)", "GradCAM"]
REPLICAS = 3


# ------------------------------------------------------------------------------------------------ the margins
def test_c1_margin_is_half_the_smallest_random_gap_of_tables_1_and_2():
    gaps = paper.random_gaps()
    assert gaps == pytest.approx({"ResNet-18": 0.019, "DenseNet-121": 0.015, "ResNet-50": 0.031, "Xception": 0.114})
    rule = fs.verdicts.rule("C1")
    assert rule.margin == pytest.approx(min(gaps.values()) / 2, abs=1e-12)
    assert rule.decision == "every" and rule.direction == "above" and "0.015" in rule.margin_source


def test_c3_margin_is_half_the_median_sg_gain_of_table_1():
    raised = [g for g in paper.sg_gains() if g > 0]
    assert len(paper.sg_gains()) == 28 and len(raised) == 23
    rule = fs.verdicts.rule("C3")
    assert rule.margin == pytest.approx(statistics.median(raised) / 2, abs=1e-12)
    # "most" is more than half of the cells, and the paper's own Table 1 meets the rule (21 of 28 above the margin)
    assert rule.decision == "share" and 0.5 < rule.share <= 15 / 28
    assert sum(g > rule.margin for g in paper.sg_gains()) / 28 >= rule.share


def test_c2_c4_c5_margins_are_the_papers_thresholds_or_stated_conventions():
    assert fs.verdicts.rule("C4").margin == 0.5 and fs.verdicts.rule("C4").decision == "single"
    assert fs.verdicts.rule("C4").interval == "t on replica statistics"
    assert fs.verdicts.rule("C2").margin == 0.9 and fs.verdicts.rule("C2").interval.startswith("share")
    delta = F.threshold(2)  # Δ = min(0.1, N/40) of eq. 3 for N = 2
    assert delta == 0.05
    assert fs.verdicts.rule("C5a.confident").margin == delta and fs.verdicts.rule("C5a.uncertain").margin == delta
    assert fs.verdicts.rule("C5a.uncertain").direction == "below"
    assert fs.verdicts.rule("C5a.switch").margin == 0.25 and fs.verdicts.rule("C5a.switch").interval.startswith("share")
    c5a = fs.verdicts.rule("C5a")
    assert c5a.decision == "parts" and list(c5a.parts) == ["C5a.confident", "C5a.switch"]
    assert fs.verdicts.rule("C5a.uncertain").kind == "study check"  # built in: the search selects for it (C2)
    assert fs.verdicts.rule("C5b").kind == "study check"
    # one boundary where a value short of the margin is the null, not a smaller effect: U below Δ is the uncertain end
    # point; an identity has no smaller effect
    for cid in ("C5a.confident", "C5b"):
        assert fs.verdicts.rule(cid).zero == fs.verdicts.rule(cid).margin, cid
    for cid in ("C1", "C2", "C3", "C4", "C5a", "C5a.confident", "C5a.switch"):
        rule = fs.verdicts.rule(cid)
        assert rule.kind == "paper" and rule.replicas >= 3 and rule.units >= 30, cid


# ----------------------------------------------------------------------------------------------- frames
def _fid(means: dict, *, alterations=("none",), gain: dict | None = None, n: int = 15, replicas: int = REPLICAS,
         noise: float = 0.02, replica_shift: dict | None = None, models=("m",), seed: int = 0) -> pd.DataFrame:
    """Per-image Fid of each method (and alteration: + gain[(method, alteration)]) around the given means, for
    ``replicas`` trained replicas of ``n`` images each; replica_shift[(method, replica)] moves one replica."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(replicas):
        for m in models:
            for method, mu in means.items():
                for alt in alterations:
                    if method == "Random" and alt != "none":
                        continue
                    shift = (gain or {}).get((method, alt), 0.0) + (replica_shift or {}).get((method, r), 0.0)
                    for i, v in enumerate(mu + shift + noise * rng.normal(size=n)):
                        rows.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                     "Fid": v})
    return pd.DataFrame(rows)


def _flips(switched: float = 0.6, uncertain: float = 1.0, *, n: int = 20, replicas: int = REPLICAS, model="m",
           task="ct", delta: float = 0.05, classic_u: float = 0.4, selected_u: float | tuple = 0.01,
           flipped: float | None = None, noise: float = 0.01, seed: int = 0) -> pd.DataFrame:
    """flip_frame rows per replica × image: under the zero and mean references the first ``switched`` · n images
    switch class with confidence (U = classic_u, else U = 0: uncertain, not switched); under the selected
    perturbation the first ``uncertain`` · n reach U = selected_u < Δ (the rest U = 0.3)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(replicas):
        for i in range(n):
            for ref in ("zero", "mean"):
                on = i < round(switched * n)
                rows.append({"task": task, "model": model, "replica": r, "image": i, "replacement": ref, "Δ": delta,
                             "flipped": on if flipped is None else i < round(flipped * n),
                             "U": (classic_u if on else 0.0) + noise * abs(rng.normal())})
            rows.append({"task": task, "model": model, "replica": r, "image": i,
                         "replacement": "selected perturbation", "Δ": delta, "flipped": False,
                         "U": ((selected_u[r] if isinstance(selected_u, tuple) else selected_u)
                               if i < round(uncertain * n) else 0.3) + noise * abs(rng.normal())})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------- mechanism premise
@pytest.mark.parametrize("switched, uncertain, holds", [(0.6, 1.0, True), (0.0, 1.0, False), (0.6, 0.1, False),
                                                        (0.6, 0.55, None)])
def test_the_mechanism_premise_is_decided_by_share_intervals(switched, uncertain, holds):
    flips = _flips(switched, uncertain)
    premise = P.mechanism(flips)
    assert premise.holds is holds, premise.text
    table = P.mechanism_table(flips)
    assert table["check"].str.startswith(("zero reference", "selected perturbation")).all() and len(table) == 2
    assert table["replicas"].eq(3).all() and table["images"].eq(60).all()
    assert table["share"].tolist() == pytest.approx([switched, uncertain])
    assert (table["low"] <= table["share"]).all() and (table["share"] <= table["high"]).all()
    # 60 of 60 is never an interval of zero width: the Wilson part of the share interval
    if uncertain == 1.0:
        assert table["low"].iloc[1] < 1.0


# ------------------------------------------------------------------------------------------------------- C1
def _c1(kind: str) -> pd.DataFrame:
    means = {n: 0.7 for n in OTHERS}
    if kind == "equivalence":  # BP's Fid equals Random's per image up to a tiny noise: a tight interval inside the band
        frame = _fid({**means, "Random": 0.5})
        random = frame[frame.method == "Random"].set_index(["replica", "image"])["Fid"]
        bp = frame.method == "BP"
        frame.loc[bp, "Fid"] = (random.reindex(list(zip(frame.loc[bp, "replica"], frame.loc[bp, "image"]))).to_numpy()
                                + 0.001 * np.random.default_rng(1).normal(size=int(bp.sum())))
        return frame
    if kind == "reversed":
        means["BP"] = 0.3
    if kind == "straddles":
        means["BP"] = 0.5 + 0.0075
    if kind == "weaker":  # BP above Random by half the margin, tightly: there, but smaller than the paper's gap
        means["BP"] = 0.5 + 0.004
    return _fid({**means, "Random": 0.5}, noise={"straddles": 0.05, "weaker": 0.005}.get(kind, 0.02))


@pytest.mark.parametrize("kind, expected, why", [
    ("clear", R, "holds in 7 of 7"),
    ("equivalence", NR, "absent in 1"),  # one method shown level with Random: Random is not the lowest
    ("reversed", NR, "absent in 1"),     # one method below Random
    ("weaker", W, "weaker in 1"),        # every method above Random, BP by less than the margin
    ("straddles", INC, "undecided in"),  # BP's gap reaches both 0 and the margin
])
def test_claim_c1_gives_every_verdict(kind, expected, why):
    claim = P.claim_random_lowest(_c1(kind), task="ct", model="m", flips=_flips())
    assert claim.verdict == expected, claim.verdict.why
    assert why in claim.verdict.why and claim.rule_id == "C1" and claim.kind == "paper"
    assert claim.units == 45 and len(claim.table) == 7 and "0.0075" in claim.rule
    assert claim.claim.startswith("C1 (ct, m)") and claim.paper_value == P.PAPER_C1["ct"]
    assert claim.table["interval"].eq("t on replica means").all()


def test_claim_c1_lowest_means_losing_to_none():
    """Six methods above Random, one significantly below it: the old two-thirds rule said "reproduced"; "lowest"
    asks every comparison to hold."""
    means = {**{n: 0.7 for n in OTHERS}, "GradCAM": 0.4, "Random": 0.5}
    claim = P.claim_random_lowest(_fid(means), task="ct", model="m")
    assert claim.verdict == NR and (claim.table["outcome"] == "holds").sum() == 6


@pytest.mark.parametrize("switched, uncertain, expected", [(0.0, 1.0, NT), (0.6, 0.1, NT), (0.6, 0.55, INC)])
def test_claim_c1_rests_on_the_mechanism_premise(switched, uncertain, expected):
    claim = P.claim_random_lowest(_c1("clear"), task="ct", model="m", flips=_flips(switched, uncertain))
    assert claim.verdict == expected, claim.verdict.why
    assert "switches with confidence" in claim.premise and "U < Δ" in claim.premise


def test_claim_c1_interval_is_a_t_interval_on_the_replica_means():
    """A deficit of Random maps that holds in two replicas and is reversed in the third is not decided: the t
    interval on three replica means spans them, whereas the same rows read as one model's images would decide."""
    means = {n: 0.7 for n in OTHERS}
    shift = {(n, 2): -0.3 for n in OTHERS}
    frame = _fid({**means, "Random": 0.5}, replica_shift=shift, noise=0.01)
    claim = P.claim_random_lowest(frame, task="ct", model="m")
    assert claim.verdict == INC and (claim.table["outcome"] == "undecided").all()
    pooled = P.claim_random_lowest(frame.assign(image=frame["replica"] * 100 + frame["image"], replica=0),
                                   task="ct", model="m")
    assert pooled.verdict == R and pooled.table["interval"].eq("t on units").all()


# ------------------------------------------------------------------------------------------------------- C3
def _c3(raised: int, *, gain: float = 0.05, lowered: int = 0, noise: float = 0.003, base: float = 0.6):
    cells = [(n, a) for n in OTHERS for a in ("SG", "SG²")]
    g = {**{c: gain for c in cells[:raised]}, **{c: -0.1 for c in cells[raised:raised + lowered]}}
    return _fid({**{n: base for n in OTHERS}, "Random": 0.5}, alterations=("none", "SG", "SG²"), gain=g,
                noise=noise)


@pytest.mark.parametrize("frame, expected, why", [
    (lambda: _c3(14), R, "holds in 14 of 14"),
    (lambda: _c3(8), R, "holds in 8, absent in 6 of 14"),  # more than half (8 of 14 ≥ 0.51)
    (lambda: _c3(7), NR, "holds in 7, absent in 7 of 14"),  # exactly half is not "most"; the 7 ties shown absent
    # no gain: tight intervals inside the band (one cell's chance gain above 0 is not shown present after Holm)
    (lambda: _c3(0), NR, "0 shown present, 13 absent"),
    (lambda: _c3(0, lowered=14), NR, "absent in 14 of 14"),  # every cell lowered
    (lambda: _c3(14, gain=0.006, noise=0.001), W, "weaker in 14 of 14"),  # raised by half the margin, tightly
    (lambda: _c3(14, gain=0.0115, noise=0.04), INC, "undecided"),  # gains on the margin
])
def test_claim_c3_gives_every_verdict(frame, expected, why):
    claim = P.claim_alteration_gains(frame(), flips=_flips())
    assert claim.verdict == expected, claim.verdict.why
    assert why in claim.verdict.why and claim.rule_id == "C3"
    assert len(claim.table) == 14 and claim.units == 45 and {"model", "method", "alteration"} <= set(claim.table)


def test_claim_c3_is_not_testable_without_room_to_rise_or_the_mechanism():
    at_ideal = _c3(14, base=0.995, gain=0.0, noise=0.001)
    claim = P.claim_alteration_gains(at_ideal)
    assert claim.verdict == NT and "room to rise" in claim.verdict.why
    assert P.claim_alteration_gains(_c3(14), flips=_flips(switched=0.0)).verdict == NT


# ------------------------------------------------------------------------------------------------------- C4
def _ranked(kind: str, *, n: int = 12, replicas: int = REPLICAS, methods=OTHERS, seed: int = 3):
    """Per-image Fid and IoU of the methods × 4 alterations × 2 models per replica; the methods' Fid means spaced
    apart, the IoU means follow them (same), reverse them (reversed), follow them in half of the cells and run
    against them in the rest (weak: ρ ≈ 0.11 in every replica), are unrelated to them (none: ρ = 0.11, 0 and −0.11
    in the three replicas), or follow them in two replicas and reverse them in the third (split)."""
    rng = np.random.default_rng(seed)
    order = np.arange(len(methods)) / 10
    anti = order[[3, 6, 5, 4, 2, 1, 0]] if len(methods) == 7 else -order  # ρ(order, anti) ≈ −0.79
    unrelated = [(0, 2, 6, 5, 4, 3, 1), (0, 3, 5, 6, 4, 2, 1), (0, 4, 5, 6, 3, 2, 1)]  # ρ = 3/28, 0, −3/28
    rows_f, rows_l = [], []
    for r in range(replicas):
        for m in ("a", "b"):
            for k, alt in enumerate(("none", "XRAI", "SG", "SG²")):
                loc = {"same": order, "reversed": -order, "weak": order if k < 2 else anti,
                       "split": order if r < 2 else -order}.get(kind)
                loc = order[list(unrelated[r % 3])] if kind == "none" else loc
                for j, method in enumerate(methods):
                    for i in range(n):
                        rows_f.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                       "Fid": 0.2 + order[j] + 0.002 * rng.normal()})
                        rows_l.append({"replica": r, "model": m, "method": method, "alteration": alt, "image": i,
                                       "IoU": 0.5 + loc[j] + 0.002 * rng.normal()})
    return pd.DataFrame(rows_f), pd.DataFrame(rows_l)


@pytest.mark.parametrize("kind, expected", [("same", R), ("weak", W), ("none", NR), ("reversed", NR),
                                             ("split", INC)])
def test_claim_c4_gives_every_verdict(kind, expected):
    f, l = _ranked(kind)
    claim = P.claim_rank_agreement(f, l, task="vehicles", score="IoU", flips=_flips(task="vehicles"))
    assert claim.verdict == expected, (kind, claim.our_value, claim.verdict.why)
    assert claim.rule_id == "C4" and claim.units == 36 and claim.kept_replicas == 3
    assert "over 3 replicas" in claim.our_value
    per = claim.table[claim.table.model == "mean over the cells"]["Spearman"]
    assert len(per) == 3
    if kind == "weak":  # the same ρ in every replica: a tight interval above 0 and below 0.5, agreement but weak
        assert per.to_numpy() == pytest.approx((1 + 1 - 600 / 336) / 2)
    if kind == "none":  # no agreement: an interval around 0, inside the band of no meaningful effect
        assert per.to_numpy() == pytest.approx([3 / 28, 0, -3 / 28]) and "absent" in claim.verdict.why


def test_claim_c4_is_not_testable_without_enough_methods_and_needs_replicas():
    f, l = _ranked("same", methods=OTHERS[:3])
    assert P.claim_rank_agreement(f, l, task="vehicles", score="IoU").verdict == NT
    f, l = _ranked("same")
    # one trained model (the paper profile's weights) decides nothing, however well its rankings agree: inconclusive
    one = P.claim_rank_agreement(f[f.replica == 0], l[l.replica == 0], task="vehicles", score="IoU")
    assert one.verdict == INC and "no interval" in one.verdict.why, one.verdict.why
    assert len(one.table[one.table.model == "mean over the cells"]) == 1
    claim = fs.verdicts.replicated(P.claim_rank_agreement, f, l, task="vehicles", score="IoU")
    assert claim.verdict == R and "at 3 replicas" in claim.power  # the replicas it keeps are counted
    # each replica alone has one ρ and no interval: left out of the agreement (too few units alone), not shown as
    # a replica that disagrees ("0 of 3 replicas (3 undecided alone)")
    assert claim.replica_agreement == "3 replicas (each too few units to decide alone)", claim.replica_agreement
    alone = fs.verdicts.replicated(P.claim_rank_agreement, f[f.replica == 0], l[l.replica == 0], task="vehicles",
                                   score="IoU")
    assert alone.verdict == INC and alone.replica_agreement == "1 replicas (each too few units to decide alone)"


def test_claim_c4_leaves_an_undefined_rho_out_of_the_mean():
    f, l = _ranked("same")
    l.loc[(l.model == "a") & (l.alteration == "SG"), "IoU"] = 0.5
    claim = P.claim_rank_agreement(f, l, task="vehicles", score="IoU")
    assert claim.verdict == R and claim.table["Spearman"].isna().sum() == 3  # one cell in each replica


# ------------------------------------------------------------------------------------------------------- C2
def _selection(passed: dict, chance: float, n: int = 20, replicas: int = REPLICAS) -> pd.DataFrame:
    rows = []
    for (task, model), share in passed.items():
        shares = share if isinstance(share, tuple) else (share,) * replicas
        for r in range(replicas):
            for i in range(n):
                rows.append({"task": task, "model": model, "replica": r, "image": i, "U < Δ": i < round(shares[r] * n),
                             "candidates U < Δ": chance})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("passed, chance, expected", [
    ({("a", "m"): 1.0, ("b", "m"): 1.0}, 0.1, R),
    ({("a", "m"): 1.0, ("b", "m"): 0.5}, 0.1, W),     # b's share shown above 0 and below 90 %: found, less often
    ({("a", "m"): 1.0, ("b", "m"): 0.0}, 0.1, NR),    # the search never finds one for b: absent
    ({("a", "m"): 1.0, ("b", "m"): (1.0, 0.1, 0.0)}, 0.1, INC),  # b's replicas disagree: reaches 0 and 90 %
    ({("a", "m"): 1.0, ("b", "m"): 1.0}, 0.97, NT),  # any candidate would do: the search is not tested
])
def test_claim_c2_gives_every_verdict(passed, chance, expected):
    claim = P.claim_uncertain_selection(_selection(passed, chance))
    assert claim.verdict == expected, claim.verdict.why
    assert claim.rule_id == "C2" and "random candidate" in claim.premise and len(claim.table) == 2
    assert claim.units == 60 and claim.table["replicas"].eq(3).all()
    if expected == R:  # 60 of 60: the Wilson part keeps the interval from zero width
        assert (claim.table["low"] < 1).all() and (claim.table["low"] > 0.9).all()


def test_claim_c2_pooled_share_needs_twenty_five_images_to_clear_ninety_percent():
    """The Wilson part of the share interval keeps a small cell from clearing 0.9 however many of its images pass:
    at the decision level (one-sided 5 %) 24 of 24 is not shown to reach it (the search still shown to work: weaker),
    30 of 30 is."""
    small = P.claim_uncertain_selection(_selection({("a", "m"): 1.0}, 0.1, n=8))
    assert small.verdict == W and 0 < small.table["low"].iloc[0] < 0.9, small.verdict.why
    enough = P.claim_uncertain_selection(_selection({("a", "m"): 1.0}, 0.1, n=10))
    assert enough.verdict == R and 0.9 < enough.table["low"].iloc[0] < 1, enough.verdict.why


# ------------------------------------------------------------------------------------------------------- C5a
@pytest.mark.parametrize("flips, expected", [
    (lambda: _flips(0.6, 1.0), R),                        # confident, switched, selection uncertain
    (lambda: _flips(0.6, 1.0, flipped=0.1), W),           # a tenth switch: shown, below a quarter
    (lambda: _flips(0.6, 1.0, flipped=0.0), PARTLY),      # nothing switches: 2 of 3 parts
    (lambda: _flips(0.0, 1.0), NR),                       # references leave it uncertain, nothing switches
    (lambda: _flips(0.6, 1.0, classic_u=0.035, noise=0.05), INC),  # U after the references around Δ: undecided
    # the selection's uncertainty is a study check (the candidate search selects for it): shown, not counted
    (lambda: _flips(0.6, 0.0), R),
    (lambda: _flips(0.6, 1.0, selected_u=(0.02, 0.05, 0.08)), R),
])
def test_claim_c5a_gives_every_verdict(flips, expected):
    claim = P.claim_class_flip(flips(), binary=["ct"])
    assert claim.verdict == expected, claim.verdict.why
    assert claim.rule_id == "C5a" and claim.units == 60
    assert set(claim.table["part"]) == {"C5a.confident", "C5a.switch", "C5a.uncertain"}
    assert len(claim.table) == 5  # 2 references × (confident, switch) + the selection
    assert "C5a.uncertain (study check)" in claim.our_value and "C5a.uncertain" not in claim.verdict.why


def test_claim_c5a_is_not_testable_without_a_binary_task():
    claim = P.claim_class_flip(_flips(task="vehicles"), binary=["ct"])
    assert claim.verdict == NT and "no binary task" in claim.verdict.why


# ------------------------------------------------------------------------------------------------------- C5b
def _bounds(extra: float | None = None) -> pd.DataFrame:
    """The values C5b checks: Fid of 2,000 random area pairs for N = 2 and 3 (a tenth of them set to ``extra`` when
    given), and the ideal and worst curves of each N."""
    areas = torch.rand(2, 2000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    values = []
    for n in (2, 3):
        fid = F.fid(areas[0], areas[1], n).numpy()
        if extra is not None:
            fid[: len(fid) // 10] = extra
        values.append(pd.DataFrame({"N": n, "case": "random areas", "Fid": fid}))
        values.append(pd.DataFrame({"N": n, "case": ["ideal", "worst"],
                                    "Fid": [float(F.fid(torch.tensor(1 / n), torch.tensor(1.0), n)),
                                            float(F.fid(torch.tensor(1.0), torch.tensor(0.0), n))]}))
    return pd.concat(values, ignore_index=True)


def test_claim_c5b_is_a_study_check_decided_by_a_wilson_interval():
    claim = P.claim_fid_bounds(_bounds())
    assert claim.verdict == R and claim.kind == "study check" and claim.rule_id == "C5b"
    assert claim.units == 4004 and not claim.trained
    assert P.claim_fid_bounds(_bounds(extra=1.2)).verdict == NR  # a tenth of the values out of [0, 1]
    broken = _bounds()
    broken.loc[broken.case == "ideal", "Fid"] = 0.9
    assert P.claim_fid_bounds(broken).verdict == INC  # 2 of 4004 off: the interval straddles 0.999
    assert fs.verdicts.replicated(P.claim_fid_bounds, _bounds()).verdict == R


# ---------------------------------------------------------------------------------------------- replicated
def test_every_claim_is_published_over_three_replicas_with_its_power():
    """Each claim function runs on one replica's rows alone (its per-replica verdict) and through
    faithlab_study.verdicts.replicated: on three replicas of ≥ 30 images a decided verdict is published, with the design
    its power analysis asks; on two it is published inconclusive (the house asks three trained replicas)."""
    f, l = _ranked("same")
    cases = {
        P.claim_random_lowest: ((_c1("clear"),), {"task": "ct", "model": "m", "flips": _flips()}),
        P.claim_alteration_gains: ((_c3(14),), {"flips": _flips()}),
        P.claim_uncertain_selection: ((_selection({("a", "m"): 1.0}, 0.1, n=40),), {}),  # 40 of 40 per replica
        P.claim_class_flip: ((_flips(),), {"binary": ["ct"]}),
    }
    for fn, (args, kwargs) in cases.items():
        claim = fs.verdicts.replicated(fn, *args, **kwargs)
        assert claim.verdict == R, (fn.__name__, claim.verdict.why)
        assert claim.replica_agreement == "3 of 3 replicas", fn.__name__
        assert claim.bootstrap_stability == "exact (no resampling)" and claim.power, fn.__name__
        two = fs.verdicts.replicated(fn, *[a[a.replica < 2] for a in args],
                                     **{k: v[v.replica < 2] if isinstance(v, pd.DataFrame) else v
                                        for k, v in kwargs.items()})
        assert two.raw == R and two.verdict == INC and "2 trained models" in two.verdict.why, fn.__name__


def test_the_mechanism_thresholds_are_the_registered_ones():
    text = fs.verdicts.rule("C1").premises[0]
    assert P.SWITCH_AT == 0.1 and "at least 10 %" in text
    assert P.UNCERTAIN_AT == 0.5 and "at least half" in text
    assert "the paper's mechanism" in fs.verdicts.rule("C3").premises[0] and \
        "the paper's mechanism" in fs.verdicts.rule("C4").premises[0]

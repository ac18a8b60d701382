"""The synthesis's claim MN1 (``claim_ideal_gap``: the metrics keep a perfect explanation off their ideal by more than
the paper's threshold) on synthetic frames of 3 trained replicas: every verdict it can give, its margin tied to the
paper's threshold, which metrics count (those that tell the perfect explanation from random maps), and its argument
errors."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import faithlab_study as fs
from faithlab_study.papers import synthesis as syn
from synthesis_frames import scores_frame


# claim_ideal_gap (claim MN1) on synthetic frames of 3 trained replicas × 12 images: one per verdict. SaCo and μF:
# ideal 1 over a range of 2, so a score s has the gap (1 − s) / 2; Few-class Fid: ideal 1 over a range of 1; AOPC
# has no ideal and is ignored.
R, W, P, N, T, I = fs.verdicts.VERDICTS  # W: reproduced, weaker


def _scores(centre: float, n: int = 12, spread: float = 0.03, seed: int = 0) -> list[float]:
    return (centre + spread * torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            ).tolist()


def _replicated_frame(per_replica: list[dict[str, dict[str, list[float]]]]) -> pd.DataFrame:
    """An evaluate-like frame of several trained replicas (one scores mapping each), a replica column beside."""
    return pd.concat([scores_frame(scores).assign(replica=r) for r, scores in enumerate(per_replica)],
                     ignore_index=True)


def _tree(perfect: dict[str, tuple[float, ...] | float], random: dict[str, tuple[float, ...] | float] | None = None,
          spread: float = 0.03, n: int = 12) -> pd.DataFrame:
    """3 replicas × n images: per metric the perfect explanation's score centre and random maps' centre (default −0.8, far
    below), each one per replica or one for all."""
    per = []
    for r in range(3):
        scores = {}
        for k, (metric, centre) in enumerate(perfect.items()):
            c = centre[r] if isinstance(centre, tuple) else centre
            b = (random or {}).get(metric, -0.8)
            b = b[r] if isinstance(b, tuple) else b
            scores[metric] = {"perfect": _scores(c, n=n, spread=spread, seed=10 * r + k),
                              "Random": _scores(b, n=n, spread=spread, seed=100 + 10 * r + k)}
        per.append(scores)
    return _replicated_frame(per)


def _claim(frame, **kw):
    return syn.claim_ideal_gap(frame, perfect="perfect", random="Random", **kw)


FAR = -0.2   # SaCo/μF gap (1 + 0.2) / 2 = 0.6: beyond 30 %
NEAR = 0.9   # gap 0.05: off the ideal (the value of no effect, a gap of 0), well within 30 %
EDGE = 0.5   # gap 0.25: just inside the margin, a tight interval below 0.3


def test_claim_ideal_gap_margin_is_the_papers_threshold():
    rule = fs.verdicts.rule("MN1")
    assert rule.margin_for() == syn.PAPER_THRESHOLD == pytest.approx(0.30)
    assert rule.kind == "paper" and rule.direction == "above" and rule.decision == "every"
    assert rule.replicas >= 3 and rule.units >= 30 and rule.interval == "t on replica means"
    assert f"{syn.PAPER_THRESHOLD:.0%}".replace("%", " %") in rule.claim and "30 %" in syn.PAPER_IDEAL_GAP
    assert f"above {syn.PREMISE_BAND:g}" in rule.premises[0]  # the premise's band, as the code applies it


def test_claim_ideal_gap_reproduced_when_every_counted_metric_is_beyond_the_margin():
    c = _claim(_tree({"saco": FAR, "mu_fidelity": FAR, "aopc": NEAR}), setting="tree")
    assert c.verdict == R and "beyond 30 %: SaCo, μF; within 30 %: none" in c.verdict.why, \
        c.verdict.why
    assert c.rule_id == "MN1" and c.kind == "paper" and "t on replica means" in c.rule
    t = c.table.set_index("metric")
    assert list(t.index) == ["saco", "mu_fidelity"]  # AOPC has no ideal value
    assert t.loc["saco", "gap"] == pytest.approx((1 - t.loc["saco", "perfect mean"]) / 2)
    assert t.loc["saco", "gap low"] > 0.3 and set(t["counts"]) == {"yes"} and set(t["outcome"]) == {"holds"}
    assert t.loc["saco", "chance low"] < t.loc["saco", "random mean"] < t.loc["saco", "chance high"]
    assert t.loc["saco", "images"] == 36 and t.loc["saco", "replicas"] == 3 and c.units == 36
    assert c.claim.endswith("(tree)") and "2 of 2 counted metrics beyond 30 %, 0 shown within it" in c.our_value


def test_claim_ideal_gap_not_reproduced_when_a_counted_metric_is_shown_within_the_margin():
    # μF scores the perfect explanation 5 % off its ideal: shown within 30 %. The gap is a mean of |score − ideal|,
    # above 0 by construction, so the rule has one boundary (zero = the margin) and "off the ideal" is no effect
    near = _claim(_tree({"saco": FAR, "mu_fidelity": NEAR}))
    assert near.verdict == N and "within 30 %: μF" in near.verdict.why, near.verdict.why
    assert near.table.set_index("metric").loc["mu_fidelity", "outcome"] == "absent"
    assert "1 of 2 counted metrics beyond 30 %, 1 shown within it" in near.our_value and "μF 5 % off" in near.our_value
    # a tight interval just inside the margin (gap 0.25) is a decision, not a shrug
    edge = _claim(_tree({"saco": FAR, "mu_fidelity": EDGE}, spread=0.01))
    t = edge.table.set_index("metric")
    assert edge.verdict == N and 0 < t.loc["mu_fidelity", "gap low"] and t.loc["mu_fidelity", "gap high"] < 0.3
    assert 0.3 < t.loc["saco", "gap low"]
    assert fs.verdicts.rule("MN1").zero == fs.verdicts.rule("MN1").margin


def test_claim_ideal_gap_not_reproduced_when_a_counted_metric_is_not_shown_off_its_ideal():
    # μF scores the perfect explanation at its ideal on all but one image per replica (0, 1 and 2 tenths below it):
    # its gap's interval lies within 30 % — the claim's effect absent
    frame = _replicated_frame([
        {"saco": {"perfect": _scores(FAR, seed=r), "Random": _scores(-0.8, seed=100 + r)},
         "mu_fidelity": {"perfect": [1.0] * 11 + [1.0 - 0.1 * r], "Random": _scores(-0.8, seed=200 + r)}}
        for r in range(3)])
    c = _claim(frame)
    t = c.table.set_index("metric")
    assert t.loc["mu_fidelity", "outcome"] == "absent" and t.loc["mu_fidelity", "counts"] == "yes"
    assert t.loc["mu_fidelity", "gap low"] <= 0 < t.loc["mu_fidelity", "gap high"] < 0.3
    assert c.verdict == N and "within 30 %: μF" in c.verdict.why, c.verdict.why
    assert "absent in 1" in c.verdict.why and "1 shown within it" in c.our_value


def test_claim_ideal_gap_inconclusive_when_the_replicas_disagree():
    # SaCo far from its ideal on replicas 0 and 2 (gap ≈ 0.6), near it on replica 1 (gap ≈ 0.05): the t interval
    # on the three replica means straddles 30 % — whereas the same 36 rows read as one model put it beyond 30 %
    frame = _tree({"saco": (FAR, NEAR, FAR)}, random={"saco": (FAR - 0.7, NEAR - 0.7, FAR - 0.7)})
    c = _claim(frame)
    t = c.table.set_index("metric")
    assert c.verdict == I and "undecided: SaCo" in c.verdict.why
    assert t.loc["saco", "gap low"] < 0.3 < t.loc["saco", "gap high"] and t.loc["saco", "counts"] == "yes"
    pooled = frame.assign(sample=frame["replica"] * 12 + frame["sample"]).drop(columns="replica")
    one = _claim(pooled)
    assert one.verdict == R and one.table["gap low"].item() > 0.3 and one.table["replicas"].item() == 1
    # replicated() decides once per replica on its own rows: beyond, within 30 %, beyond
    rep = fs.verdicts.replicated(syn.claim_ideal_gap, frame, perfect="perfect", random="Random")
    assert rep.replicas == (R, N, R) and rep.verdict == I and rep.bootstrap_stability == "exact (no resampling)"


def test_claim_ideal_gap_inconclusive_when_whether_a_metric_counts_is_undecided():
    # μF sits within 30 % of its ideal, but whether it tells the perfect explanation from random maps is undecided
    # (random maps above the perfect one on replica 1, below it on the others): with μF the claim would be
    # not reproduced, without it reproduced, so it is inconclusive
    c = _claim(_tree({"saco": FAR, "mu_fidelity": NEAR}, random={"mu_fidelity": (-0.8, 1.5, -0.8)}))
    t = c.table.set_index("metric")
    assert t.loc["mu_fidelity", "counts"] == "undecided" and t.loc["mu_fidelity", "outcome"] == "absent"
    assert c.verdict == I and "whether it counts is undecided" in c.verdict.why, c.verdict.why
    assert "counts?" in c.our_value and "1 of 1 counted metrics beyond 30 %" in c.our_value


def test_claim_ideal_gap_metrics_that_do_not_tell_perfect_from_random_do_not_count():
    # μF scores the perfect explanation near its ideal, but random maps as high: it cannot count against the claim
    c = _claim(_tree({"saco": FAR, "mu_fidelity": NEAR}, random={"mu_fidelity": NEAR}))
    assert c.verdict == R, c.verdict.why
    t = c.table.set_index("metric")
    assert t.loc["mu_fidelity", "counts"] == "no" and t.loc["mu_fidelity", "outcome"] == "not counted"
    assert t.loc["mu_fidelity", "high"] < syn.PREMISE_BAND  # shown not to tell them apart: a decision
    assert "not counted" in c.our_value and "needed above 0.05" in c.premise


def test_claim_ideal_gap_not_testable_without_a_counted_metric():
    same = _claim(_tree({"saco": NEAR, "fewclass_fid": 0.2}, random={"saco": NEAR, "fewclass_fid": 0.9}))
    assert same.verdict == T and "no metric tells the perfect explanation from random maps" in same.verdict.why
    assert same.units is None
    no_ideal = _claim(scores_frame({"aopc": {"perfect": [0.9] * 8, "Random": [0.1] * 8}}))
    assert no_ideal.verdict == T and "no metric of the frame has an ideal" in no_ideal.verdict.why
    nan = float("nan")
    undefined = _claim(scores_frame({"mu_fidelity": {"perfect": [nan] * 7 + [1.0], "Random": [-0.8] * 8}}))
    assert undefined.verdict == T and undefined.table["images"].item() == 1


def test_claim_ideal_gap_underpowered_and_unreplicated_are_inconclusive():
    few = _tree({"saco": FAR})
    few = few[few["sample"] < 5]  # 3 replicas × 5 images = 15 units, below the rule's 30
    rep = fs.verdicts.replicated(syn.claim_ideal_gap, few, perfect="perfect", random="Random")
    assert rep.raw == R and rep.verdict == I and "underpowered" in rep.verdict.why
    one = _tree({"saco": FAR}, n=40)
    one = one[one["replica"] == 0]  # 40 images of one trained model
    rep = fs.verdicts.replicated(syn.claim_ideal_gap, one, perfect="perfect", random="Random")
    assert rep.raw == R and rep.verdict == I and "independently trained replicas" in rep.verdict.why


def test_claim_ideal_gap_argument_errors():
    frame = scores_frame({"saco": {"perfect": [0.1, 0.2], "Random": [0.0, 0.1]}})
    with pytest.raises(ValueError, match="perfect must name an explainer .* got 'GT'"):
        syn.claim_ideal_gap(frame, perfect="GT", random="Random")
    with pytest.raises(ValueError, match="random must name an explainer"):
        syn.claim_ideal_gap(frame, perfect="perfect", random="noise")
    with pytest.raises(ValueError, match="perfect and random must name different explainers"):
        syn.claim_ideal_gap(frame, perfect="perfect", random="perfect")

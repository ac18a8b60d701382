"""ReCo/MeGe's R1, R2, R3 and Table 3 as claim functions decided by their registered rules: the shuffled-pairings
chance level of S= (against a brute-force computation, independent of batch_size, cached with the sets), synthetic
replicated families built to reach every verdict each claim can give (reproduced; reproduced, weaker — an effect
shown in the paper's direction, below the margin; not reproduced by equivalence — a tight interval inside the band —
and by reversal; inconclusive — an interval reaching both 0 and the margin; not testable here; partly where a claim
has parts), and margins that cannot drift from the paper's numbers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics.papers.reco_mege.crossfold import Pairs, details_from_pairs
from faithlab_study.papers.reco_mege import paper

P = fs.papers.reco_mege
R, W, P_, N, T, I = fs.verdicts.VERDICTS  # W: reproduced, weaker


# ------------------------------------------------------------------------------------------------ the null itself
def test_shuffled_partners_is_a_seeded_derangement_within_the_eligible_samples():
    eligible = torch.tensor([True, False, True, True, False, True, True])
    partners = fl.metrics.shuffled_partners(eligible, generator=3)
    idx = torch.arange(7)
    assert torch.equal(partners[~eligible], idx[~eligible])                  # the others stay themselves
    assert bool((partners[eligible] != idx[eligible]).all())                 # nobody is paired with itself
    assert sorted(partners[eligible].tolist()) == idx[eligible].tolist()     # a permutation of the eligible ones
    assert torch.equal(partners, fl.metrics.shuffled_partners(eligible, generator=3))
    assert not all(torch.equal(partners, fl.metrics.shuffled_partners(eligible, generator=s)) for s in range(4, 9))
    lone = torch.tensor([False, True, False])
    assert torch.equal(fl.metrics.shuffled_partners(lone, generator=0), torch.arange(3))
    with pytest.raises(TypeError, match="eligible"):
        fl.metrics.shuffled_partners(torch.ones(3), generator=0)


def _brute_force(maps, folds, partners, *, channel_dim=None, distance="sqrt"):
    """scipy's Spearman ρ per pair, in a Python loop: the unseen model's map of n against each other model's map of
    partners[n] (models in increasing order), d = sqrt(1 − |ρ|) or 1 − |ρ|; NaN for a constant map."""
    k, n = maps.shape[:2]
    out = torch.full((n, k - 1), math.nan)
    for i in range(n):
        if int(partners[i]) == i:
            continue
        for j, o in enumerate(m for m in range(k) if m != int(folds[i])):
            a, b = maps[int(folds[i]), i], maps[o, int(partners[i])]
            if channel_dim is not None:
                a, b = a.mean(0), b.mean(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")                              # scipy warns on a constant map
                rho = spearmanr(a.flatten().numpy(), b.flatten().numpy()).statistic
            gap = 1.0 - abs(float(rho))                                      # NaN stays NaN
            out[i, j] = np.sqrt(max(gap, 0.0)) if distance == "sqrt" and gap == gap else gap
    return out


@pytest.mark.parametrize("shape, channel_dim", [((4, 4), None), ((3, 4, 4), -3)])
def test_shuffled_distances_equal_a_brute_force_computation_and_ignore_batch_size(shape, channel_dim):
    g = torch.Generator().manual_seed(0)
    k, n = 3, 7
    maps = torch.rand(k, n, *shape, generator=g)
    maps[1, 4] = 0.0                                                         # a constant map: NaN distances
    folds = torch.tensor([0, 1, 2, 0, 1, 2, 0])
    eligible = torch.tensor([True, True, True, False, True, True, True])
    partners = fl.metrics.shuffled_partners(eligible, generator=1)
    expected = _brute_force(maps, folds, partners, channel_dim=channel_dim)
    for batch_size in (1, 2, 3, 256):
        got = fl.metrics.shuffled_distances(maps, folds, partners, channel_dim=channel_dim, batch_size=batch_size)
        assert torch.allclose(got, expected, atol=1e-6, equal_nan=True), batch_size
    assert bool(got[3].isnan().all())                                        # not eligible: paired with itself
    # with every image paired with itself the null is pair_distances' own S=/S≠ distances
    same = fl.metrics.shuffled_distances(maps, folds, torch.arange(n), channel_dim=channel_dim)
    assert bool(same.isnan().all())
    linear = fl.metrics.shuffled_distances(maps, folds, partners, channel_dim=channel_dim, distance="linear")
    assert torch.allclose(linear, _brute_force(maps, folds, partners, channel_dim=channel_dim, distance="linear"),
                          atol=1e-6, equal_nan=True)


def test_shuffled_distances_name_the_bad_argument():
    maps, folds = torch.rand(3, 5, 4), torch.zeros(5, dtype=torch.long)
    with pytest.raises(ValueError, match="partners"):
        fl.metrics.shuffled_distances(maps, folds, torch.arange(4))
    with pytest.raises(ValueError, match="partners"):
        fl.metrics.shuffled_distances(maps, folds, torch.arange(5) + 1)
    with pytest.raises(ValueError, match="folds"):
        fl.metrics.shuffled_distances(maps, folds + 3, torch.arange(5))
    with pytest.raises(ValueError, match="distance"):
        fl.metrics.shuffled_distances(maps, folds, torch.arange(5), distance="l2")


def test_distance_sets_cache_the_null_and_recompute_an_old_cache_file(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    d = P.load_task("FashionMNIST", n=40, image_size=8)
    fam = P.family("FashionMNIST", d, width_scale=0.1, config=fl.train.TrainConfig(epochs=1, batch_size=16), k=3)
    first = P.distance_sets(fam, "SA")
    assert first["shuffled"].shape == first["pairs"].distance.shape == (40, 2)
    eligible = (first["pairs"].kind == 0).any(1)
    assert bool((first["partners"][eligible] != torch.arange(40)[eligible]).all())
    # the null from the same maps: the brute force on the family's own explanations
    maps = P.explain_family(fam, "SA")
    assert torch.allclose(first["shuffled"], _brute_force(maps, fam.cross.folds, first["partners"]), atol=1e-6,
                          equal_nan=True)
    small = P.distance_sets(fam, "SA", batch_size=7, cache=False)           # batch size changes nothing
    assert torch.equal(small["partners"], first["partners"])
    assert torch.allclose(small["shuffled"], first["shuffled"], atol=1e-6, equal_nan=True)
    [file] = (tmp_path / "reco_mege").glob("*.pt")
    again = P.distance_sets(fam, "SA")                                      # loaded from the cache
    assert torch.equal(again["shuffled"].nan_to_num(-1), first["shuffled"].nan_to_num(-1))
    state = torch.load(file, weights_only=True)                             # a file written before the null existed
    torch.save({key: state[key] for key in ("distance", "other", "kind")}, file)
    old = P.distance_sets(fam, "SA")
    assert torch.allclose(old["shuffled"], first["shuffled"], atol=1e-6, equal_nan=True)
    assert torch.load(file, weights_only=True)["null_version"] == 1        # rewritten with the null
    file.write_bytes(b"not a torch file")                                   # unreadable: recomputed too
    assert torch.equal(P.distance_sets(fam, "SA")["partners"], first["partners"])
    # the same pairings for every method of the family
    assert torch.equal(P.distance_sets(fam, "GC")["partners"], first["partners"])


# ------------------------------------------------------------------------------------------- synthetic families
def sets(eq: float, ne: float, null: float, *, n: int = 80, k: int = 3, noise: float = 0.05, seed: int = 0) -> dict:
    """distance_sets(...) of one synthetic method: S= distances around ``eq``, S≠ around ``ne``, and the S= pairs
    with shuffled image pairings around ``null`` (the same pairs kinds for every seed: one family)."""
    kinds = torch.Generator().manual_seed(99)
    kind = torch.where(torch.rand(n, k - 1, generator=kinds) < 0.7, 0, 1).to(torch.int8)
    kind[::11, 0] = 2                                                       # a few both-wrong pairs
    g = torch.Generator().manual_seed(seed)
    dist = torch.where(kind == 0, eq, ne) + noise * torch.randn(n, k - 1, generator=g)
    shuffled = null + noise * torch.randn(n, k - 1, generator=g)
    pairs = Pairs(dist.clamp(0, 1), torch.zeros(n, k - 1, dtype=torch.int64), kind)
    return P.with_null(pairs, shuffled.clamp(0, 1))


def test_null_frame_tells_s_equal_below_chance_from_at_chance():
    frame = P.null_frame({"good": sets(0.3, 0.7, 0.7), "noise": sets(0.66, 0.7, 0.66, seed=1)})
    good, noise = frame.set_index("method").loc["good"], frame.set_index("method").loc["noise"]
    assert good["below chance"] and not noise["below chance"]
    assert good["low"] > 0.3 and noise["low"] < 0 < noise["high"]
    det = sets(0.3, 0.7, 0.7)
    assert good["MeGe"] == pytest.approx(det["mege"])                       # MeGe from the same S= mean
    assert good["MeGe (shuffled)"] == pytest.approx(1 / (1 + good["shuffled mean"]))
    assert good["n S="] == det["counts"]["S="]
    with pytest.raises(ValueError, match="shuffled"):
        P.null_frame({"bare": details_from_pairs(det["pairs"])})


GOOD, WEAK, NOISE, FAR = (0.3, 0.7, 0.7), (0.5, 0.6, 0.7), (0.66, 0.7, 0.66), (0.3, 0.9, 0.2)
# ReCo: GOOD ≈ 1 (S= and S≠ apart), WEAK ≈ 0.68 (2σ apart), so GOOD − WEAK ≈ 0.3, far beyond R1's margin 0.074;
# two GOOD methods tie within a few thousandths (a tight interval inside the band)


def premise_rows(keys: dict, *, spread: float = 0.01, accuracy: float = 0.8, replicas: int = 3) -> pd.DataFrame:
    """premise_row rows: ``keys`` {column: value} (e.g. task) for every replica, the spread jittered a little."""
    return pd.DataFrame([{**keys, "replica": r, "family": keys.get("family", "Normal"), "models": 5, "images": 1500,
                          "accuracy": accuracy + 0.005 * r, "lowest": accuracy - spread, "highest": accuracy + spread,
                          "spread": spread + 0.001 * r, "bar": 0.2} for r in range(replicas)])


def r1_frame(spec: dict, *, replicas: int = 3) -> pd.DataFrame:
    """pairs_frame rows of R1's synthetic families: ``{task: (gc, sa)}`` or ``{task: [(gc, sa) per replica]}`` (IG
    always WEAK), another noise seed per replica."""
    frames = []
    for i, (t, s) in enumerate(spec.items()):
        per = s if isinstance(s, list) else [s] * replicas
        for r, (gc, sa) in enumerate(per):
            frames.append(P.pairs_frame({"SA": sets(*sa, seed=100 * r + 7 * i + 1),
                                         "IG": sets(*WEAK, seed=100 * r + 7 * i + 2),
                                         "GC": sets(*gc, seed=100 * r + 7 * i + 3)}, task=t, replica=r))
    return pd.concat(frames, ignore_index=True)


def test_every_margin_is_the_papers_and_every_claim_has_its_rule():
    margins = paper.margins()
    assert set(margins) == {"R1", "R2.MeGe", "R2.ReCo", "R3.ReCo", "R3.MeGe", "RM-T3.muF", "RM-T3.Savg"}
    for cid, m in margins.items():
        assert fs.verdicts.rule(cid).margin_for() == pytest.approx(m, abs=1e-9), cid
    # the numbers behind them, from the paper's tables (typed in paper.py)
    assert margins["R1"] == pytest.approx((0.517 - 0.369) / 2)
    assert margins["R3.MeGe"] == pytest.approx((0.749 - 0.723) / 2)
    assert margins["RM-T3.Savg"] == pytest.approx(round(math.log(2.112 / 0.024) / 2, 4))
    for cid in ("R2", "R3", "RM-T3"):
        rule = fs.verdicts.rule(cid)
        assert rule.decision == "parts" and rule.share == 0.5 and all(fs.verdicts.rule(p) for p in rule.parts)
    for cid in ("R1", "R2.MeGe", "R2.ReCo", "R3.ReCo", "R3.MeGe", "RM-T3.muF", "RM-T3.Savg", "R4", "R5"):
        assert fs.verdicts.rule(cid).decision == "every", cid           # "every", "best", "highest", "lowest"
    assert fs.verdicts.rule("R4").kind == fs.verdicts.rule("R5").kind == "study check"


# ----------------------------------------------------------------------------------------------- R1 (Table 1)
@pytest.mark.parametrize("spec, premises, expected, why", [
    ({"A": (GOOD, WEAK), "B": (GOOD, WEAK)}, None, R, "holds in 4 of 4"),        # GC best on both tasks
    ({"A": (GOOD, (0.3, 0.5, 0.7))}, None, W, "holds in 1, weaker in 1 of 2"),  # GC ahead of SA by ≈ 0.02 only
    ({"A": (GOOD, GOOD)}, None, N, "absent in 1"),                              # a tight tie with SA: shown absent
    ({"A": (GOOD, WEAK), "B": (WEAK, GOOD)}, None, N, "B: GC − SA"),            # reversed on task B
    ({"A": [(GOOD, WEAK), (GOOD, WEAK), (WEAK, GOOD)]}, None, I, "undecided"),  # the replicas disagree
    ({"A": (NOISE, WEAK), "B": (NOISE, WEAK)}, None, I, "premise is undecided"),  # GC's S= at its chance level
    ({"A": (FAR, WEAK)}, None, T, "shuffled"),                                  # GC's S= shown above chance
    ({"A": (GOOD, WEAK)}, "spread", T, "±3 %"),                                 # the k models are not comparable
    ({"A": (GOOD, WEAK)}, "undecided", I, "premise is undecided"),              # the premise straddles ±3 %
])
def test_claim_r1_gives_every_verdict(spec, premises, expected, why):
    frame = r1_frame(spec)
    rows = None
    if premises is not None:
        spreads = {"spread": [0.06, 0.061, 0.062], "undecided": [0.01, 0.045, 0.02]}[premises]
        rows = pd.concat([premise_rows({"task": t}) for t in spec], ignore_index=True)
        rows["spread"] = np.tile(spreads, len(spec))
    claim = P.claim_gradcam_best_reco(frame, premises=rows)
    assert isinstance(claim, fs.verdicts.Claim) and claim.rule_id == "R1" and claim.kind == "paper"
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why + claim.premise
    assert "0.074" in claim.rule and "t on replica statistics" in claim.rule
    assert claim.units == 3 * 80 and claim.kept_replicas == 3
    assert len(claim.table) == 2 * len(spec) and set(claim.table["interval"]) == {"t on replica statistics"}


def test_claim_r1_with_premise_rows_that_hold_and_through_replicated():
    frame = r1_frame({"A": (GOOD, WEAK), "B": (GOOD, WEAK)})
    rows = pd.concat([premise_rows({"task": t}) for t in ("A", "B")], ignore_index=True)
    claim = fs.verdicts.replicated(P.claim_gradcam_best_reco, frame, premises=rows)
    assert claim.verdict == R and "±3 %" in claim.premise and "shuffled" in claim.premise
    # one replica's rows alone hold no interval over replicas: left out, not a disagreeing replica
    assert claim.replicas == (fs.verdicts.LEFT_OUT,) * 3 and claim.stability == ()
    assert "replicas × 80 units" in claim.power                          # the power analysis saw the cells
    with pytest.raises(ValueError, match="at least 2 replicas"):
        P.claim_gradcam_best_reco(frame[frame.replica == 0])
    with pytest.raises(ValueError, match="pairs"):
        P.claim_gradcam_best_reco(frame.drop(columns="task"))
    with pytest.raises(ValueError, match="no row of task 'B'"):
        P.claim_gradcam_best_reco(frame, premises=rows[rows.task == "A"])


def test_replica_scores_are_each_replicas_own_sets():
    frame = r1_frame({"A": (GOOD, WEAK)}, replicas=2)
    scores = P.replica_scores(frame).set_index(["replica", "method"])
    own = sets(*GOOD, seed=100 + 3)
    assert scores.loc[(1, "GC"), "ReCo"] == pytest.approx(own["reco"]) and scores.loc[(1, "GC"), "units"] == 80
    assert scores.loc[(1, "GC"), "MeGe"] == pytest.approx(own["mege"])
    assert scores.loc[(1, "GC"), "n S="] == own["counts"]["S="]


def test_pairs_frame_and_pooled_sets_round_trip():
    a, b = sets(*GOOD, seed=1), sets(*WEAK, seed=2)
    frame = pd.concat([P.pairs_frame({"GC": a}, replica=0), P.pairs_frame({"GC": b}, replica=1)], ignore_index=True)
    pooled, groups = P.pooled_sets(frame)
    both = Pairs(torch.cat([a["pairs"].distance, b["pairs"].distance]), torch.cat([a["pairs"].other,
                 b["pairs"].other]), torch.cat([a["pairs"].kind, b["pairs"].kind]))
    exact = details_from_pairs(both)
    assert pooled["GC"]["reco"] == pytest.approx(exact["reco"]) and pooled["GC"]["mege"] == pytest.approx(exact["mege"])
    assert list(groups) == [0] * 80 + [1] * 80


# ---------------------------------------------------------------------------------------------- R2 (Fig. 4)
TYPES = {"Randomized": ["Normal", "Randomized 30%"], "Switched": ["Normal", "Switched 30%"]}
FALLS = (0.6, 0.7, 0.7)          # MeGe 1/1.6 against GOOD's 1/1.3 (−0.15); ReCo ≈ 0.5 against ≈ 1
MEGE_ONLY = (0.45, 0.95, 0.7)    # S= a little further (MeGe −0.1), S≠ as far apart: ReCo unchanged ≈ 1


def r2_frame(normal: dict, strongest: dict | list, *, replicas: int = 3) -> pd.DataFrame:
    """pairs_frame rows of one task: the normal family (``{method: sets spec}``) and both strongest degradations
    (``{method: spec}``, or one per replica)."""
    frames = []
    for r in range(replicas):
        worse = strongest[r] if isinstance(strongest, list) else strongest
        for i, (g, spec) in enumerate((("Normal", normal), ("Randomized 30%", worse), ("Switched 30%", worse))):
            frames.append(P.pairs_frame({m: sets(*v, seed=1000 * r + 10 * i + j) for j, (m, v) in
                                         enumerate(spec.items())}, task="CIFAR-10", degradation=g, replica=r))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("strongest, premises, expected, why", [
    ({"SA": FALLS, "GC": FALLS}, None, R, "R2.MeGe: reproduced; R2.ReCo: reproduced"),
    ({"SA": MEGE_ONLY, "GC": MEGE_ONLY}, None, P_, "R2.MeGe: reproduced; R2.ReCo: not reproduced"),  # partly
    # MeGe falls by ≈ 0.011, about half its margin 0.02 (S= a little further); ReCo falls far (S≠ closer)
    ({"SA": (0.32, 0.42, 0.7), "GC": (0.32, 0.42, 0.7)}, None, W, "R2.MeGe: reproduced, weaker; R2.ReCo: reproduced"),
    ({"SA": GOOD, "GC": GOOD}, None, N, "R2.MeGe: not reproduced; R2.ReCo: not reproduced"),  # no change: shown
    ({"SA": (0.2, 0.7, 0.7), "GC": (0.2, 0.7, 0.7)}, None, N, "R2.MeGe: not reproduced"),    # MeGe rises
    ([{"SA": FALLS, "GC": FALLS}] * 2 + [{"SA": (0.2, 0.7, 0.7), "GC": (0.2, 0.7, 0.7)}], None, I, "inconclusive"),
    ({"SA": FALLS, "GC": FALLS}, "chance", T, "chance"),                       # the normal models at chance
])
def test_claim_r2_gives_every_verdict(strongest, premises, expected, why):
    rows = None
    if premises is not None:
        rows = premise_rows({"task": "CIFAR-10"}, accuracy=0.1)
    claim = P.claim_mege_falls(r2_frame({"SA": GOOD, "GC": GOOD}, strongest), TYPES, premises=rows)
    assert claim.rule_id == "R2" and claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert len(claim.table) == 2 * 2 * 2 and set(claim.table.score) == {"MeGe", "ReCo"}
    assert claim.units == 3 * 80 and claim.kept_replicas == 3 and "parts" in claim.decision


def test_claim_r2_names_bad_frames():
    frame = r2_frame({"SA": GOOD}, {"SA": FALLS})
    with pytest.raises(ValueError, match="types"):
        P.claim_mege_falls(frame, {"Randomized": ["Randomized 30%"]})
    with pytest.raises(ValueError, match="no family"):
        P.claim_mege_falls(frame, {"Limited": ["Normal", "Limited 25%"]})
    with pytest.raises(ValueError, match="degradation"):
        P.claim_mege_falls(frame.drop(columns="degradation"), TYPES)


# ------------------------------------------------------------------------------------------- R3 (Tables 4–5)
def r3_frames(lipschitz: dict | list, resnet: dict, *, replicas: int = 3) -> dict:
    """{family: pairs_frame} of R3 over replicas (the same units in both families)."""
    frames = {"1-Lipschitz": [], "ResNet-18": []}
    for r in range(replicas):
        lip = lipschitz[r] if isinstance(lipschitz, list) else lipschitz
        for f, spec, off in (("1-Lipschitz", lip, 0), ("ResNet-18", resnet, 50)):
            frames[f].append(P.pairs_frame({m: sets(*v, seed=100 * r + off + j) for j, (m, v) in
                                            enumerate(spec.items())}, family=f, replica=r))
    return {f: pd.concat(v, ignore_index=True) for f, v in frames.items()}


LOW = (0.55, 0.6, 0.7)   # S= and S≠ 1σ apart: ReCo ≈ 0.38, MeGe ≈ 0.65


@pytest.mark.parametrize("lipschitz, resnet, expected, why", [
    ({"SA": GOOD, "GC": GOOD}, LOW, R, "R3.ReCo: reproduced; R3.MeGe: reproduced"),   # both rise beyond the margins
    ({"SA": (0.55, 0.95, 0.7), "GC": (0.35, 0.95, 0.7)}, LOW, P_, "R3.ReCo: reproduced; R3.MeGe: not reproduced"),
    # SA's MeGe rises by ≈ 0.006, below the margin 0.013 (S= barely closer): MeGe shown to rise, by less
    ({"SA": (0.53, 0.95, 0.7), "GC": GOOD}, LOW, W, "R3.ReCo: reproduced; R3.MeGe: reproduced, weaker"),
    ({"SA": GOOD, "GC": GOOD}, GOOD, N, "R3.ReCo: not reproduced; R3.MeGe: not reproduced"),  # a tight tie
    ({"SA": LOW, "GC": LOW}, GOOD, N, "R3.ReCo: not reproduced; R3.MeGe: not reproduced"),    # both fall
    ([{"SA": GOOD, "GC": GOOD}] * 2 + [{"SA": LOW, "GC": LOW}], LOW, I, "inconclusive"),      # replicas disagree
])
def test_claim_r3_gives_every_verdict(lipschitz, resnet, expected, why):
    frames = r3_frames(lipschitz, {"SA": resnet, "GC": resnet})
    claim = P.claim_lipschitz(frames, gradient_methods=["SA"])
    assert claim.rule_id == "R3" and claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert len(claim.table) == 3 and claim.units == 3 * 80                # ReCo SA, MeGe SA, MeGe GC


def test_claim_r3_premise_of_both_families_and_bad_frames():
    frames = r3_frames({"SA": GOOD, "GC": GOOD}, {"SA": LOW, "GC": LOW})
    good = pd.concat([premise_rows({"family": f}) for f in ("1-Lipschitz", "ResNet-18")], ignore_index=True)
    assert P.claim_lipschitz(frames, gradient_methods=["SA"], premises=good).verdict == R
    spread = good.assign(spread=np.where(good.family == "1-Lipschitz", 0.08, good.spread))
    claim = P.claim_lipschitz(frames, gradient_methods=["SA"], premises=spread)
    assert claim.verdict == T and "1-Lipschitz: largest distance" in claim.verdict.why
    with pytest.raises(ValueError, match="ResNet-18"):
        P.claim_lipschitz({"1-Lipschitz": frames["1-Lipschitz"]}, gradient_methods=["SA"])
    with pytest.raises(ValueError, match="same \\(replica, sample\\) units"):
        P.claim_lipschitz({**frames, "ResNet-18": frames["ResNet-18"].assign(sample=lambda f: f["sample"] + 1)},
                          gradient_methods=["SA"])


# ------------------------------------------------------------------------------------------------------ Table 3
STABLE = {"GC": 0.01, "SG": 0.02, "IG": 2.0, "SA": 2.5}
HIGHEST = {"GC": 0.8, "SG": 0.3, "IG": 0.3, "SA": 0.2}


def per_sample(mu: dict | list, s_avg: dict | list, *, chance: float = 0.0, n: int = 20, replicas: int = 3,
               spread: float = 0.05) -> pd.DataFrame:
    """fidelity_stability frames of synthetic methods on ``replicas`` models: μF around mu[m], its shuffled chance
    level around ``chance``, S_avg around s_avg[m] (10 % noise); a list gives one spec per replica."""
    rng = np.random.default_rng(0)
    frames = []
    for r in range(replicas):
        m_r = mu[r] if isinstance(mu, list) else mu
        s_r = s_avg[r] if isinstance(s_avg, list) else s_avg
        frames += [pd.DataFrame({"method": m, "sample": np.arange(n), "replica": r,
                                 "μF": m_r[m] + spread * rng.normal(size=n),
                                 "μF (shuffled)": chance + spread * rng.normal(size=n),
                                 "S_avg": s_r[m] * (1 + 0.1 * rng.normal(size=n))}) for m in m_r]
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("mu, s_avg, premise, expected, why", [
    (HIGHEST, STABLE, None, R, "RM-T3.muF: reproduced; RM-T3.Savg: reproduced"),
    # GC highest by ≈ 0.05, well below the margin 0.301: shown highest, by less
    ({"GC": 0.5, "SG": 0.45, "IG": 0.3, "SA": 0.2}, STABLE, None, W, "RM-T3.muF: reproduced, weaker"),
    ({"GC": 0.5, "SG": 0.5, "IG": 0.3, "SA": 0.2}, STABLE, None, P_, "RM-T3.muF: not reproduced"),  # a tight tie
    ({"GC": 0.1, "SG": 0.3, "IG": 0.4, "SA": 0.2}, {"GC": 2.0, "SG": 0.02, "IG": 0.01, "SA": 2.5}, None, N,
     "RM-T3.muF: not reproduced; RM-T3.Savg: not reproduced"),                                # both reversed
    ({"GC": 0.0, "SG": 0.0, "IG": 0.0, "SA": 0.0}, STABLE, None, I, "RM-T3.muF: inconclusive"),  # μF at chance
    ({"GC": -0.3, "SG": -0.3, "IG": -0.3, "SA": -0.3}, STABLE, None, T, "RM-T3.muF: not testable"),  # below it
    ([HIGHEST, HIGHEST, {"GC": 0.1, "SG": 0.3, "IG": 0.4, "SA": 0.2}], STABLE, None, I, "inconclusive"),
    (HIGHEST, STABLE, "chance", T, "chance"),
])
def test_claim_table3_gives_every_verdict(mu, s_avg, premise, expected, why):
    rows = premise_rows({}, accuracy=0.1) if premise else None
    claim = P.claim_table3(per_sample(mu, s_avg), premise=rows)
    assert claim.rule_id == "RM-T3" and claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert (expected == T and premise is None) == ("does not discriminate" in claim.premise)
    assert len(claim.table) == 3 + 2 * 2 and claim.units == 60 and claim.kept_replicas == 3
    assert set(claim.table["part"]) == {"RM-T3.muF", "RM-T3.Savg"} and "another image" in claim.premise


def test_claim_table3_leaves_out_a_replica_whose_s_avg_is_zero():
    """A method whose maps never move within the radius (a ReLU network's saliency on a few images) has S_avg 0:
    no log ratio in that replica, which is left out of its cells without a numpy warning; with one replica left a
    cell has no interval."""
    zero_sa = {**STABLE, "SA": 0.0}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        claim = P.claim_table3(per_sample(HIGHEST, [STABLE, STABLE, zero_sa]))
        gone = P.claim_table3(per_sample(HIGHEST, [STABLE, zero_sa, zero_sa]))
    cells, left = claim.table.set_index("cell"), gone.table.set_index("cell")
    assert claim.verdict == R, claim.verdict.why  # two replicas still give the SA cells an interval
    assert cells.loc["S_avg SA / GC", "replicas"] == 2 and cells.loc["S_avg IG / GC", "replicas"] == 3
    assert left.loc["S_avg SA / GC", "outcome"] == "undecided" and np.isnan(left.loc["S_avg SA / SG", "estimate"])
    assert gone.verdict == I and "RM-T3.Savg: inconclusive" in gone.verdict.why


def test_claim_table3_names_a_bad_frame():
    with pytest.raises(ValueError, match="per_sample"):
        P.claim_table3(per_sample(HIGHEST, STABLE).drop(columns="μF (shuffled)"))
    with pytest.raises(ValueError, match="another method"):
        P.claim_table3(per_sample({"GC": 0.5, "SG": 0.5}, STABLE))
    with pytest.raises(ValueError, match="at least 2 replicas"):
        P.claim_table3(per_sample(HIGHEST, STABLE, replicas=1))

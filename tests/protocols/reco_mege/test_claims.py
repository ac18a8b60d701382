"""ReCo/MeGe R1 and R2 as claim functions: the shuffled-pairings chance level of S= (against a brute-force
computation, independent of batch_size, cached with the sets), and synthetic families built to give every verdict,
including "not testable here" when S= sits at its chance level."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import faithlab as fl
from faithlab.metrics.papers.reco_mege.crossfold import Pairs, details_from_pairs

P = fl.protocols.reco_mege
R, PARTLY, N, T, I = fl.verdicts.VERDICTS


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
    frame = P.null_frame({"good": sets(0.3, 0.7, 0.7), "noise": sets(0.66, 0.7, 0.66, seed=1)}, n_boot=500)
    good, noise = frame.set_index("method").loc["good"], frame.set_index("method").loc["noise"]
    assert good["below chance"] and not noise["below chance"]
    assert good["low"] > 0.3 and noise["low"] < 0 < noise["high"]
    det = sets(0.3, 0.7, 0.7)
    assert good["MeGe"] == pytest.approx(det["mege"])                       # MeGe from the same S= mean
    assert good["MeGe (shuffled)"] == pytest.approx(1 / (1 + good["shuffled mean"]))
    assert good["n S="] == det["counts"]["S="]
    with pytest.raises(ValueError, match="shuffled"):
        P.null_frame({"bare": details_from_pairs(det["pairs"])})
    with pytest.raises(ValueError, match="n_boot"):
        P.null_frame({"good": det}, n_boot=50)


GOOD, WEAK, NOISE = (0.3, 0.7, 0.7), (0.5, 0.6, 0.7), (0.66, 0.7, 0.66)


def task(gc, sa, ig=WEAK, seed=0):
    return {"SA": sets(*sa, seed=seed + 1), "IG": sets(*ig, seed=seed + 2), "GC": sets(*gc, seed=seed + 3)}


def r1_frame(spec: dict, *, replicas: int = 2, n: int = 80) -> "pd.DataFrame":
    """pairs_frame rows of R1's synthetic families: ``{task: (gc, sa)}`` (IG always WEAK), ``replicas`` independent
    replicas per task (another noise seed each)."""
    import pandas as pd

    return pd.concat([P.pairs_frame(task(gc, sa, seed=100 * r + 7 * i), task=t, replica=r)
                      for i, (t, (gc, sa)) in enumerate(spec.items()) for r in range(replicas)], ignore_index=True)


CLOSE = (0.5, 0.6, 0.7)   # the same sets as WEAK: ReCo of GC and its rival tie


@pytest.mark.parametrize("spec, premises, expected", [
    ({"A": (GOOD, WEAK), "B": (GOOD, WEAK)}, None, R),                     # GC best on both tasks
    ({"A": (GOOD, WEAK), "B": (WEAK, GOOD)}, None, PARTLY),                # on one of two
    ({"A": (WEAK, GOOD), "B": (WEAK, GOOD)}, None, N),                     # on none
    ({"A": (CLOSE, WEAK)}, None, I),                                       # a tie: neither won nor lost
    ({"A": (GOOD, WEAK), "B": (CLOSE, WEAK)}, None, I),                    # reproduced only if the tie were a win
    ({"A": (NOISE, WEAK), "B": (NOISE, WEAK)}, None, T),                   # GC's S= at its chance level
    ({"A": (GOOD, WEAK)}, {"A": "A Normal: mean held-out accuracy 0.11 < 0.20"}, T),  # models at chance
])
def test_claim_r1_gives_every_verdict(spec, premises, expected):
    frame = r1_frame(spec)
    claim = P.claim_gradcam_best_reco(frame, premises=premises, n_boot=300, seed=0)
    assert isinstance(claim, fl.verdicts.Claim)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "shuffled" in claim.premise and len(claim.table) == len(spec) and claim.kind == "paper"
    assert claim.decision and "reproduced when" not in claim.rule          # the rule text states no threshold
    assert "reproduced from 100%" in claim.decision                         # "every task": share 1
    if expected == T and premises is None:
        assert "chance level" in claim.verdict.why
    if expected not in (T,):
        assert claim.units == 2 * 80                                        # (replica, sample) units per task


def test_claim_r1_pools_replicas_takes_seed_and_one_replicas_rows():
    frame = r1_frame({"A": (GOOD, WEAK), "B": (GOOD, WEAK)}, replicas=3)
    one = P.claim_gradcam_best_reco(frame[frame.replica == 1], n_boot=300, seed=5)  # a single replica's rows
    assert one.verdict == R and one.units == 80
    pooled = fl.verdicts.replicated(P.claim_gradcam_best_reco, frame, n_boot=300, seed=0)
    assert pooled.verdict == R and pooled.replicas == (R, R, R) and len(pooled.stability) == 20
    # a replica that fails the premise (its k models not within the tolerance) is left out of its task, not the rest
    import pandas as pd

    premises = pd.DataFrame([{"task": t, "replica": r, "reason": "not comparable" if r == 2 else None}
                             for t in ("A", "B") for r in range(3)])
    kept = P.claim_gradcam_best_reco(frame, premises=premises, n_boot=300)
    assert kept.verdict == R and kept.units == 2 * 80 and "replica 2: not comparable" in kept.premise
    # ... so it rests on 2 trained replicas, below the house's 3: published inconclusive however clear
    assert kept.kept_replicas == 2 and pooled.kept_replicas == 3
    left = fl.verdicts.replicated(P.claim_gradcam_best_reco, frame, premises=premises, n_boot=300)
    assert left.verdict == I and left.raw == R and "2 trained models" in left.verdict.why
    gone = P.claim_gradcam_best_reco(frame, premises=premises.assign(reason="not comparable"), n_boot=300)
    assert gone.verdict == T
    with pytest.raises(ValueError, match="pairs"):
        P.claim_gradcam_best_reco(frame.drop(columns="task"))


def test_claim_r1_rival_is_the_best_competitor_whatever_its_chance_level():
    # SA separates S= from S≠ best (its S≠ is far) though its S= is at chance: it is still the rival (no competitor
    # is left out by a significance test)
    loud_noise, fair = (0.66, 0.97, 0.66), (0.4, 0.6, 0.7)
    claim = P.claim_gradcam_best_reco(r1_frame({"A": (fair, loud_noise)}), n_boot=300)
    row = claim.table.iloc[0]
    assert row["rival"] == "SA" and claim.verdict == N, claim.our_value


def test_two_stage_weights_resample_replicas_then_their_samples():
    groups = np.array([0] * 3 + [1] * 5 + [2] * 4)
    w = P.two_stage_weights(groups, 400, 0)
    assert w.shape == (400, 12) and bool((w >= 0).all())
    for lo, hi in ((0, 3), (3, 8), (8, 12)):              # a replica's total weight: its size × times it was drawn
        total = w[:, lo:hi].sum(1)
        assert bool((total % (hi - lo) == 0).all())
    assert bool((w[:, 0:3].sum(1) == 0).any())            # some draws leave a whole replica out
    assert torch.equal(w, P.two_stage_weights(groups, 400, 0))
    assert not torch.equal(w, P.two_stage_weights(groups, 400, 1))
    plain = P.two_stage_weights(np.zeros(7), 50, 0)       # one replica: the plain bootstrap of its samples
    assert bool((plain.sum(1) == 7).all())


def test_pairs_frame_and_pooled_sets_round_trip():
    a, b = sets(*GOOD, seed=1), sets(*WEAK, seed=2)
    import pandas as pd

    frame = pd.concat([P.pairs_frame({"GC": a}, replica=0), P.pairs_frame({"GC": b}, replica=1)], ignore_index=True)
    pooled, groups = P.pooled_sets(frame)
    both = Pairs(torch.cat([a["pairs"].distance, b["pairs"].distance]), torch.cat([a["pairs"].other,
                 b["pairs"].other]), torch.cat([a["pairs"].kind, b["pairs"].kind]))
    exact = details_from_pairs(both)
    assert pooled["GC"]["reco"] == pytest.approx(exact["reco"]) and pooled["GC"]["mege"] == pytest.approx(exact["mege"])
    assert list(groups) == [0] * 80 + [1] * 80


TYPES = {"Randomized": ["Normal", "Randomized 5%", "Randomized 30%"], "Switched": ["Normal", "Switched 30%"]}


def degraded(normal: dict[str, tuple], strongest: dict[str, tuple]) -> dict:
    """{(task, degradation): {method: sets}} for one task: the normal family, and the strongest level of each type
    (the intermediate level a copy of the normal family)."""
    fams = {}
    for i, g in enumerate(("Normal", "Randomized 5%", "Randomized 30%", "Switched 30%")):
        spec = normal if g in ("Normal", "Randomized 5%") else strongest
        fams["CIFAR-10", g] = {m: sets(*s, seed=10 * i + j) for j, (m, s) in enumerate(spec.items())}
    return fams


FALLS = (0.6, 0.7, 0.7)


@pytest.mark.parametrize("normal, strongest, premises, expected", [
    ({"SA": GOOD, "GC": GOOD}, {"SA": FALLS, "GC": FALLS}, None, R),          # falls in 4 of 4 cells
    ({"SA": GOOD, "GC": GOOD}, {"SA": FALLS, "GC": (0.25, 0.7, 0.7)}, None, PARTLY),   # 2 of 4
    ({"SA": GOOD, "GC": GOOD}, {"SA": (0.25, 0.7, 0.7), "GC": (0.25, 0.7, 0.7)}, None, N),  # rises everywhere
    ({"SA": GOOD, "GC": GOOD}, {"SA": GOOD, "GC": GOOD}, None, I),            # no change: every cell a tie
    ({"SA": GOOD, "GC": GOOD}, {"SA": FALLS, "GC": FALLS},
     {"CIFAR-10": "CIFAR-10 Normal: mean held-out accuracy 0.11 < 0.20"}, T),  # the models do not beat chance
])
def test_claim_r2_gives_every_verdict(normal, strongest, premises, expected):
    claim = P.claim_mege_falls(degraded(normal, strongest), TYPES, premises=premises, n_boot=200, null_boot=500)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert len(claim.table) == 2 * 2 * 2 and "shuffled" in claim.premise
    assert claim.decision and "reproduced when" not in claim.rule and claim.units == 80


def test_claim_r2_counts_every_cell_whatever_its_chance_level_and_takes_seed():
    # SA's normal S= is at its chance level: reported, but the cell still counts (no cell is picked by significance)
    details = degraded({"SA": NOISE, "GC": GOOD}, {"SA": FALLS, "GC": FALLS})
    claim = P.claim_mege_falls(details, TYPES, n_boot=200, null_boot=500, seed=3)
    table = claim.table[claim.table.score == "MeGe"]
    assert set(table[table.testable].method) == {"SA", "GC"}
    assert "normal S= at its chance level for SA" in claim.our_value
    assert fl.verdicts.replicated(P.claim_mege_falls, details, TYPES, n_boot=200, null_boot=500, seed=0,
                                  seeds=3).verdict in fl.verdicts.VERDICTS
    with pytest.raises(ValueError, match="types"):
        P.claim_mege_falls(degraded({"SA": GOOD}, {"SA": FALLS}), {"Limited": ["Normal", "Limited 25%"]})
    with pytest.raises(ValueError, match="types"):
        P.claim_mege_falls(degraded({"SA": GOOD}, {"SA": FALLS}), {"Randomized": ["Randomized 30%"]})


# ------------------------------------------------------------------------------------------------- R3 (Tables 4–5)
@pytest.mark.parametrize("lipschitz, resnet, premises, expected", [
    ({"SA": GOOD, "GC": GOOD}, {"SA": WEAK, "GC": WEAK}, (), R),                        # rises in 3 of 3 cells
    ({"SA": (0.3, 0.35, 0.7), "GC": (0.6, 0.7, 0.7)}, {"SA": WEAK, "GC": WEAK}, (), PARTLY),  # MeGe SA: 1 of 3
    ({"SA": WEAK, "GC": WEAK}, {"SA": GOOD, "GC": GOOD}, (), N),                        # falls everywhere
    ({"SA": NOISE, "GC": NOISE}, {"SA": NOISE, "GC": (0.66, 0.7, 0.66)}, (), T),       # every S= at chance
    ({"SA": WEAK, "GC": WEAK}, {"SA": WEAK, "GC": WEAK}, (), I),                        # no change: ties
    ({"SA": GOOD, "GC": GOOD}, {"SA": WEAK, "GC": WEAK}, ("CIFAR-10 1-Lipschitz: not comparable", None), T),
])
def test_claim_r3_gives_every_verdict(lipschitz, resnet, premises, expected):
    details = {"1-Lipschitz": {m: sets(*v, seed=i) for i, (m, v) in enumerate(lipschitz.items())},
               "ResNet-18": {m: sets(*v, seed=10 + i) for i, (m, v) in enumerate(resnet.items())}}
    claim = P.claim_lipschitz(details, gradient_methods=["SA"], premises=premises, n_boot=200, null_boot=500)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert len(claim.table) == 3 and "shuffled" in claim.premise        # ReCo SA, MeGe SA, MeGe GC
    assert claim.decision and "reproduced when" not in claim.rule
    if expected == T:
        assert ("chance level" in claim.verdict.why) == (not premises)
    with pytest.raises(ValueError, match="ResNet-18"):
        P.claim_lipschitz({"1-Lipschitz": details["1-Lipschitz"]}, gradient_methods=["SA"])


# ------------------------------------------------------------------------------------------------------ Table 3
def per_sample(mu: dict, s_avg: dict, *, chance: float = 0.0, n: int = 60, seed: int = 0) -> "pd.DataFrame":
    """fidelity_stability frames of synthetic methods: μF around mu[m], its shuffled chance level around
    ``chance``, S_avg around s_avg[m] (noise 10 % of each)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.concat([pd.DataFrame({"method": m, "sample": np.arange(n), "μF": mu[m] + 0.05 * rng.normal(size=n),
                                    "μF (shuffled)": chance + 0.05 * rng.normal(size=n),
                                    "S_avg": s_avg[m] * (1 + 0.1 * rng.normal(size=n))}) for m in mu],
                     ignore_index=True)


STABLE = {"GC": 0.01, "SG": 0.02, "IG": 2.0, "SA": 2.5}


@pytest.mark.parametrize("mu, s_avg, premise, expected", [
    ({"GC": 0.8, "SG": 0.3, "IG": 0.3, "SA": 0.2}, STABLE, None, R),                    # both parts hold
    ({"GC": 0.1, "SG": 0.3, "IG": 0.4, "SA": 0.2}, STABLE, None, PARTLY),               # (b) only
    ({"GC": 0.1, "SG": 0.3, "IG": 0.4, "SA": 0.2}, {"GC": 2.0, "SG": 0.02, "IG": 0.01, "SA": 2.5}, None, N),
    ({"GC": 0.0, "SG": 0.0, "IG": 0.0, "SA": 0.0}, STABLE, None, T),                    # μF at chance everywhere
    ({"GC": 0.3, "SG": 0.3, "IG": 0.1, "SA": 0.2}, STABLE, None, I),                    # (a) a tie, (b) holds
    ({"GC": 0.8, "SG": 0.3, "IG": 0.3, "SA": 0.2}, STABLE, "CIFAR-10 Normal: not comparable", T),
])
def test_claim_table3_gives_every_verdict(mu, s_avg, premise, expected):
    claim = P.claim_table3(per_sample(mu, s_avg), premise=premise, n_boot=500)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "another image" in claim.premise and len(claim.table) == 4
    assert claim.decision and "reproduced when" not in claim.rule and claim.units == 60
    assert bool(claim.table.set_index("method").loc["GC", "μF above chance"]) == (mu["GC"] > 0.05)
    if expected == T and premise is None:
        assert "chance level" in claim.verdict.why


def test_claim_table3_names_a_bad_frame():
    with pytest.raises(ValueError, match="per_sample"):
        P.claim_table3(per_sample({"GC": 0.5, "SG": 0.5, "IG": 0.5}, STABLE).drop(columns="μF (shuffled)"))
    with pytest.raises(ValueError, match="per_sample"):
        P.claim_table3(per_sample({"GC": 0.5}, STABLE))                        # nothing to compare with
    for methods, why in ((("GC", "SG"), "no method besides"), (("GC", "SA"), "lacks SG")):  # a cheaper run
        claim = P.claim_table3(per_sample({m: 0.5 for m in methods}, STABLE))
        assert claim.verdict == T and why in claim.verdict.why and len(claim.table) == 2
        assert "partly from 50%" in claim.decision                          # the rule's text even when untestable


# ------------------------------------------------------------------------------ replicas: two-stage intervals
def _r3_frames(spec: dict, *, renumber: bool = False) -> dict:
    """{family: pairs_frame} of R3 over replicas: ``spec`` = {replica: (lipschitz sets, resnet sets)} per method
    (SA, GC); ``renumber``: the same rows as one replica (replica 0, samples numbered on)."""
    import pandas as pd

    frames = {"1-Lipschitz": [], "ResNet-18": []}
    for r, (lip, res) in spec.items():
        for f, s, off in (("1-Lipschitz", lip, 0), ("ResNet-18", res, 10)):
            d = {m: sets(*v, seed=100 * r + off + j) for j, (m, v) in enumerate(s.items())}
            rows = P.pairs_frame(d, replica=0 if renumber else r)
            frames[f].append(rows.assign(sample=rows["sample"] + 80 * r) if renumber else rows)
    return {f: pd.concat(v, ignore_index=True) for f, v in frames.items()}


def test_claim_r3_resamples_replicas_so_replicas_that_disagree_leave_it_open():
    rise, fall = ({"SA": GOOD, "GC": GOOD}, {"SA": WEAK, "GC": WEAK}), ({"SA": WEAK, "GC": WEAK},
                                                                          {"SA": GOOD, "GC": GOOD})
    spec = {0: rise, 1: rise, 2: fall}         # two replicas say the scores rise, one says they fall
    pooled = P.claim_lipschitz(_r3_frames(spec, renumber=True), gradient_methods=["SA"], n_boot=300, null_boot=500)
    assert pooled.verdict == R, pooled.verdict.why          # as one replica: 240 units, a clear rise
    claim = P.claim_lipschitz(_r3_frames(spec), gradient_methods=["SA"], n_boot=300, null_boot=500)
    assert claim.verdict == I, (claim.our_value, claim.verdict.why)   # resampling the replicas: every cell a tie
    assert set(claim.table.outcome) == {"tie"} and claim.units == 3 * 80
    agree = P.claim_lipschitz(_r3_frames({0: rise, 1: rise, 2: rise}), gradient_methods=["SA"], n_boot=300,
                              null_boot=500)
    assert agree.verdict == R and "two-stage" in agree.rule and "reproduced when" not in agree.rule
    rep = fl.verdicts.replicated(P.claim_lipschitz, _r3_frames(spec), gradient_methods=["SA"], n_boot=300,
                                 null_boot=500, seeds=2)
    assert rep.replicas == (R, R, N)                          # each replica's rows alone


def _held_out(acc: dict, *, n: int = 200, bar: float = 0.2, reason: dict | None = None) -> "pd.DataFrame":
    """Per-unit held-out predictions: ``acc`` {(family, replica): share correct}, exact shares."""
    import pandas as pd

    return pd.concat([pd.DataFrame({"family": f, "replica": r, "sample": np.arange(n),
                                    "correct": np.arange(n) < round(a * n), "bar": bar,
                                    "reason": (reason or {}).get((f, r))}) for (f, r), a in acc.items()],
                     ignore_index=True)


@pytest.mark.parametrize("acc, expected", [
    (0.6, R),          # far above 2 × chance: holds
    (0.21, I),         # at the bar: the premise is undecided, so is the claim
    (0.05, T),         # demonstrably below: not testable here
])
def test_claim_r3_decides_beat_chance_on_its_own_interval_over_replicas(acc, expected):
    rise = ({"SA": GOOD, "GC": GOOD}, {"SA": WEAK, "GC": WEAK})
    frames = _r3_frames({0: rise, 1: rise, 2: rise})
    held = _held_out({**{("1-Lipschitz", r): 0.6 for r in range(3)}, **{("ResNet-18", r): acc for r in range(3)}})
    claim = P.claim_lipschitz(frames, gradient_methods=["SA"], premises=held, n_boot=300, null_boot=500)
    assert claim.verdict == expected, claim.verdict.why
    assert "ResNet-18: mean held-out accuracy" in claim.premise
    # a replica whose models are not of comparable accuracy is left out of both families
    held = _held_out({(f, r): 0.6 for f in ("1-Lipschitz", "ResNet-18") for r in range(3)},
                     reason={("ResNet-18", 2): "not comparable"})
    kept = P.claim_lipschitz(frames, gradient_methods=["SA"], premises=held, n_boot=300, null_boot=500)
    assert kept.units == 2 * 80 and "replica 2 left out: not comparable" in kept.premise
    assert kept.kept_replicas == 2 and claim.kept_replicas == 3  # the one-model rule counts the replicas kept
    # every replica left out (the book's one replica can be): not testable, and the empty table still selects rows
    held = _held_out({(f, r): 0.6 for f in ("1-Lipschitz", "ResNet-18") for r in range(3)},
                     reason={("ResNet-18", r): "not comparable" for r in range(3)})
    none = P.claim_lipschitz(frames, gradient_methods=["SA"], premises=held, n_boot=300, null_boot=500)
    assert none.verdict == T and none.units == 0
    assert list(none.table[none.table.testable].columns) == list(none.table.columns)
    # and its texts read whole: no empty list items, every left-out replica named
    assert none.our_value == "0 of 0 testable cells rise (0 not testable; 0 replicas × samples, 0 units)"
    assert "shuffled: no replica left to compare; " in none.premise and "; ;" not in none.premise
    assert all(f"replica {r} left out: not comparable" in none.premise for r in range(3))
    assert kept.premise.split("shuffled: ")[1].startswith("SA L ") and not kept.our_value.endswith("; ")
    with pytest.raises(ValueError, match="premises"):
        P.claim_lipschitz(frames, gradient_methods=["SA"], premises=held.drop(columns="bar"))


def test_claim_table3_resamples_replicas_so_replicas_that_disagree_leave_it_open():
    import pandas as pd

    good, bad = {"GC": 0.8, "SG": 0.3, "IG": 0.3, "SA": 0.2}, {"GC": 0.1, "SG": 0.5, "IG": 0.5, "SA": 0.2}
    parts = [per_sample(mu, STABLE, n=20, seed=r).assign(replica=r) for r, mu in enumerate((good, good, bad))]
    frame = pd.concat(parts, ignore_index=True)
    one = frame.assign(sample=frame["sample"] + 20 * frame.replica).drop(columns="replica")  # the same rows
    assert P.claim_table3(one, n_boot=500).verdict == R        # as one model's 60 samples: (a) and (b) hold
    claim = P.claim_table3(frame, n_boot=500)
    assert claim.verdict == I, (claim.our_value, claim.verdict.why)   # (a) straddles 0 across the replicas
    assert claim.units == 60 and "two-stage" in claim.rule and "reproduced when" not in claim.rule
    rep = fl.verdicts.replicated(P.claim_table3, frame, n_boot=500, seeds=2)
    assert rep.replicas == (R, R, PARTLY)
    # "the models beat chance" decided on its own interval over the replicas
    held = _held_out({("m", r): 0.21 for r in range(3)}).drop(columns=["family", "reason"])
    assert P.claim_table3(pd.concat(parts[:2]), premise=held, n_boot=500).verdict == I
    assert P.claim_table3(pd.concat(parts[:2]), premise=held.assign(correct=False), n_boot=500).verdict == T
    assert P.claim_table3(pd.concat(parts[:2]), premise=held.assign(correct=True), n_boot=500).verdict == R

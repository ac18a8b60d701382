"""The synthesis protocol: recovery with its t interval on the replica means, the ideal gap, the guide's separations,
reference sensitivity, sentences and answer (what the replicas separate, and nothing else), meta-evaluation and report
card on hand-built frames, the test split cut into disjoint parts per replica, the linear (transparent) model's exact
contributions, the decision tree's setup, and the weight-noise scale of randomise_layers. Claim MN1
(``claim_ideal_gap``) is test_claim_ideal_gap.py's."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab_study.papers import synthesis as syn
from synthesis_frames import scores_frame


QUALITY = {"a": 0.0, "b": -0.5, "c": -1.0}


def test_recovery_hand_computed():
    frame = scores_frame({
        "aopc": {"a": [3, 3, 1], "b": [2, 2, 2], "c": [1, 1, 3]},        # higher is better: right, right, reversed
        "log_odds": {"a": [1, 1, 1], "b": [2, 2, 1], "c": [3, 3, 1]},    # lower is better: right, right, flat
    })
    rec = syn.recovery(frame, QUALITY).set_index("metric")
    assert rec.loc["aopc", "spearman"] == pytest.approx((1 + 1 - 1) / 3)
    assert rec.loc["aopc", "pairwise"] == pytest.approx(6 / 9)
    assert rec.loc["aopc", "undefined"] == 0
    assert rec.loc["aopc", "dataset spearman"] == pytest.approx(1.0)  # means 7/3, 2, 5/3
    assert rec.loc["log_odds", "spearman"] == pytest.approx(2 / 3)     # the flat sample counts as 0
    assert rec.loc["log_odds", "undefined"] == pytest.approx(1 / 3)
    assert rec.loc["log_odds", "pairwise"] == pytest.approx((3 + 3 + 1.5) / 9)
    with pytest.raises(ValueError, match="quality must rank at least 2"):
        syn.recovery(frame, {"a": 0.0})


def test_ideal_gap_uses_each_metrics_ideal_and_span():
    frame = scores_frame({"saco": {"GT": [1.0, 0.2, -1.0]}, "mu_fidelity": {"GT": [0.5, 0.5, 0.5]},
                          "aopc": {"GT": [0.1, 0.2, 0.3]}})
    gaps = syn.ideal_gap(frame, "GT", tolerance=0.3).set_index("metric")
    assert "aopc" not in gaps.index  # no ideal value defined
    assert gaps.loc["saco", "gap"] == pytest.approx((0 + 0.4 + 1.0) / 3)
    assert gaps.loc["saco", "within"] == pytest.approx(1 / 3)
    assert gaps.loc["mu_fidelity", "gap"] == pytest.approx(0.25)
    assert gaps.loc["mu_fidelity", "within"] == 1.0
    with pytest.raises(ValueError, match="explainer 'nope'"):
        syn.ideal_gap(frame, "nope")


def test_resilience_and_reactivity():
    base = scores_frame({"aopc": {"a": [3, 3], "b": [2, 2], "c": [1, 1]},
                         "saco": {"a": [1, 1], "b": [0, 0], "c": [0, 0]}})
    same = base.copy()
    reversed_ = scores_frame({"aopc": {"a": [1, 1], "b": [2, 2], "c": [3, 3]}, "saco": {"a": [0, 0], "b": [0, 0],
                                                                                   "c": [0, 0]}})
    res = syn.resilience(base, {"same": same, "reversed": reversed_}, list(QUALITY))
    mean = res[res["condition"] == "mean"].set_index("metric")["resilience"]
    assert mean["aopc"] == pytest.approx(0.0)  # (1 + (−1)) / 2
    assert res.query("metric == 'aopc' and condition == 'same'")["resilience"].item() == pytest.approx(1.0)
    assert res.query("metric == 'saco' and condition == 'reversed'")["resilience"].item() == 0.0  # flat: no ranking
    react = syn.reactivity(base, reversed_, list(QUALITY), truth="a", random="c").set_index("metric")
    assert react.loc["aopc", "model"] == pytest.approx(1.0)
    assert react.loc["aopc", "explanation"] == 1.0
    assert react.loc["saco", "explanation"] == 1.0 and react.loc["saco", "model"] == pytest.approx(0.5)
    tie = syn.beats(base, "b", "c").set_index("metric")["share"]
    assert tie["saco"] == 0.5 and tie["aopc"] == 1.0


def test_report_card_ranks():
    rec = pd.DataFrame({"metric": ["aopc", "saco", "aopc", "saco"], "label": ["AOPC", "SaCo"] * 2,
                        "spearman": [0.9, 0.1, 0.2, 0.8], "setup": ["s1", "s1", "ood", "ood"]})
    res = pd.DataFrame({"metric": ["aopc", "saco"], "condition": "mean", "resilience": [0.5, 0.9]})
    react = pd.DataFrame({"metric": ["aopc", "saco"], "reactivity": [0.7, 0.8]})
    cost = pd.DataFrame({"metric": ["aopc", "saco"], "inputs per sample": [11.0, 11.0]})
    card = syn.report_card(rec, res, react, cost, ood_setup="ood").set_index("metric")
    assert card.loc["aopc", "recovery"] == pytest.approx(0.55) and card.loc["saco", "OOD recovery"] == 0.8
    assert card.loc["saco", "rank OOD recovery"] == 1 and card.loc["saco", "rank reactivity"] == 1
    assert card.loc["aopc", "rank cost"] == 1.5  # ties share the rank
    assert card.loc["saco", "overall"] == pytest.approx((2 + 1 + 1 + 1 + 1.5) / 5)
    assert list(card.index) == ["saco", "aopc"]
    with pytest.raises(ValueError, match="ood_setup 'x'"):
        syn.report_card(rec, res, react, cost, ood_setup="x")


def test_cost_per_metric_from_an_evaluate_frame():
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 1, 4, 4, generator=g), torch.zeros(4, dtype=torch.int64)
    frame = fl.evaluate(model, x, y, {"A": torch.randn(4, 1, 4, 4, generator=g), "B": torch.rand(4, 1, 4, 4)},
                        metrics=["aopc", "log_odds", "saco", "fewclass_fid"], saco_k=4, progress=False,
                        fewclass_fractions=[0, 0.5, 1])
    cost = syn.cost_per_metric(frame).set_index("metric")
    # AOPC's 11 fractions less its end points: the clean input and the fully removed one are shared by every
    # explainer (and by LOdds and Few-class), so they count once, in the "all" rows, not for whichever asked first.
    assert cost.loc["aopc", "inputs per sample"] == 9 and cost.loc["aopc", "shared with"] == "LOdds"
    assert cost.loc["saco", "inputs per sample"] == 4  # K = 4 group removals; the clean input is the shared one
    grid = len(fl.metrics.fewclass.QUICK_GRID)
    # MIF and LIF at 0.5 (0 and 1 are the shared end points), the selection search; +1 probe input each
    assert cost.loc["fewclass_fid", "inputs per sample"] == pytest.approx(2 + 0.25 + grid + 0.25)
    shared = fl.evaluation.cost(frame).set_index(["group", "explainer"])["forward_inputs"]
    assert shared[("clean", "all")] == 4 and shared[("fully removed", "all")] == 2 * 4  # zero and Few-class's image


def test_linear_model_contributions_are_exact():
    torch.manual_seed(0)
    model = fl.models.build("linear", in_channels=2, n_classes=4, image_size=3).eval()
    x, t = torch.randn(5, 2, 3, 3), torch.tensor([0, 1, 2, 3, 0])
    c = model.contributions(x, t)
    logits = model(x).gather(1, t[:, None])[:, 0]
    torch.testing.assert_close(c.flatten(1).sum(1) + model.fc.bias[t], logits)
    removed = x.clone()
    removed[:, 1, 2, 0] = 0  # removing one element subtracts exactly its contribution
    torch.testing.assert_close(logits - model(removed).gather(1, t[:, None])[:, 0], c[:, 1, 2, 0])
    with pytest.raises(ValueError, match=r"x must be \(B, 2, 3, 3\)"):
        model.contributions(torch.randn(5, 1, 3, 3), t)


def test_randomise_layers_scale():
    model = torch.nn.Sequential(torch.nn.Linear(50, 50), torch.nn.ReLU(), torch.nn.Linear(50, 3)).eval()
    small, _ = fl.train.randomise_layers(model, 1.0, generator=0, scale=0.01)
    big, _ = fl.train.randomise_layers(model, 1.0, generator=0, scale=1.0)
    for i in (0, 2):
        w, std = model[i].weight.detach(), model[i].weight.std().item()
        d_small, d_big = (small[i].weight - w).std().item(), (big[i].weight - w).std().item()
        assert d_small == pytest.approx(0.01 * std, rel=0.2) and d_big == pytest.approx(std, rel=0.2)
        torch.testing.assert_close(small[i].weight - w, 0.01 * (big[i].weight - w), rtol=1e-3, atol=1e-7)
    with pytest.raises(ValueError, match="scale must be positive"):
        fl.train.randomise_layers(model, 1.0, generator=0, scale=0.0)


def test_noisy_inputs_are_seeded():
    x = torch.zeros(3, 1, 4, 4)
    a, b = syn.noisy_inputs(x, 0.5, generator=1), syn.noisy_inputs(x, 0.5, generator=1)
    assert torch.equal(a, b) and not torch.equal(a, syn.noisy_inputs(x, 0.5, generator=2))
    assert a.std().item() == pytest.approx(0.5, rel=0.3)
    assert torch.equal(syn.noisy_inputs(x, 0.0, generator=1), x)
    with pytest.raises(ValueError, match="sigma must be non-negative"):
        syn.noisy_inputs(x, -1.0, generator=0)


def test_tree_setup_explains_its_tree_by_its_decision_path():
    s = syn.tree_setup(max_depth=3, n_test=5, seed=0)
    assert s.finetuned is None and s.spec["depth"] <= 3 and len(s.y) == 5
    assert isinstance(s.model, fl.models.DecisionTree) and not s.model.training
    torch.testing.assert_close(s.truth, s.model.path_importance(s.x))
    assert s.accuracy == pytest.approx(float((s.model(s.x).argmax(1) == s.y).double().mean()))
    # the canvases' standardisation, for Few-class's search on pixels: x·std + mean are the canvas pixels in [0, 1]
    mean, std = s.normalisation
    pixels = s.x * torch.tensor(std).view(1, -1, 1, 1) + torch.tensor(mean).view(1, -1, 1, 1)
    assert len(mean) == len(std) == s.x.shape[1] and -1e-5 < float(pixels.min()) and float(pixels.max()) < 1 + 1e-5
    with pytest.raises(ValueError, match="max_depth must be"):
        syn.tree_setup(max_depth=0, n_test=5)


def test_tree_setup_replica_refits_the_tree_on_its_own_data():
    """A replica fits its tree with its own seed on its own draw of the canvases (the same again for the same
    replica); no replica: the notebook's seed for both."""
    a = syn.tree_setup(max_depth=8, n_test=5, seed=0)
    replica = list(fs.verdicts.replicas(0, "decision tree", 2))[1]
    b = syn.tree_setup(max_depth=8, n_test=5, seed=0, replica=replica)
    assert not torch.equal(a.x, b.x) and a.spec["train_seed"] == 0
    again = syn.tree_setup(max_depth=8, n_test=5, seed=0, replica=replica)
    assert torch.equal(b.x, again.x) and torch.equal(b.model.feature, again.model.feature)
    c = syn.tree_setup(max_depth=8, n_test=5, seed=0, part=(1, 3))  # the second third of the test split
    assert c.spec["first_test_image"] == 359 // 3 and not torch.equal(a.x, c.x)
    assert b.spec["train_seed"] == replica.seed and b.replica == replica and a.replica is None
    assert not torch.equal(a.model.feature, b.model.feature)  # tied splits broken by the training seed
    with pytest.raises(TypeError, match="replica must be a Replica"):
        syn.tree_setup(max_depth=3, n_test=5, replica=-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        syn.tree_setup(max_depth=3, n_test=5, seed=-1)


def test_recovery_interval_is_a_t_interval_on_the_replica_means():
    one = {"aopc": {"a": [3, 3, 1, 3], "b": [2, 2, 2, 2], "c": [1, 1, 3, 1]},  # per sample ρ: 1, 1, −1, 1
           "log_odds": {"a": [1, 1, 1, 1], "b": [2, 2, 2, 2], "c": [3, 3, 3, 3]}}  # ρ = 1 on every sample
    other = {"aopc": {"a": [3, 3, 3, 3], "b": [2, 2, 2, 2], "c": [1, 1, 1, 1]},  # ρ = 1, 1, 1, 1
             "log_odds": {"a": [1, 1, 1, 1], "b": [2, 2, 2, 2], "c": [3, 3, 3, 3]}}
    frame = pd.concat([scores_frame(one).assign(replica=0), scores_frame(other).assign(replica=1),
                       scores_frame(one).assign(replica=2)], ignore_index=True)
    rec = syn.recovery(frame, QUALITY).set_index("metric")
    means = [0.5, 1.0, 0.5]  # the replica means of AOPC's ρ
    expected = fs.verdicts.replica_interval(means)
    assert rec.loc["aopc", "spearman"] == pytest.approx(sum(means) / 3)
    assert (rec.loc["aopc", "spearman low"], rec.loc["aopc", "spearman high"]) == pytest.approx(
        (expected.low, expected.high))
    assert rec.loc["aopc", "replicas"] == 3 and rec.loc["aopc", "images"] == 12
    assert rec.loc["log_odds", "spearman low"] == rec.loc["log_odds", "spearman high"] == 1  # no spread, no width
    units = syn.recovery_units(frame, QUALITY)
    assert list(units.columns) == ["metric", "label", "replica", "sample", "spearman", "flat"] and len(units) == 24
    single = syn.recovery(scores_frame(one), QUALITY).set_index("metric")  # one model: a t interval on its images
    t = fs.verdicts.mean_interval([1, 1, -1, 1])
    assert (single.loc["aopc", "spearman low"], single.loc["aopc", "spearman high"]) == pytest.approx((t.low, t.high))
    assert single.loc["aopc", "replicas"] == 1


@pytest.mark.parametrize(("n", "margin"), [(5, 0.1), (6, 12 / 210), (3, 0.5), (2, 2.0)])
def test_separation_margin_is_one_swap_of_neighbouring_explainers(n, margin):
    assert syn.separation_margin(n) == pytest.approx(margin)
    # one swap of two neighbours in an otherwise right ranking costs exactly this much Spearman
    right = torch.arange(n, dtype=torch.float64)
    swapped = right.clone()
    swapped[[0, 1]] = swapped[[1, 0]]
    drop = 1 - fl.metrics.statistics.spearman(swapped, right).item()
    assert drop == pytest.approx(margin)


def test_separation_margin_rejects_fewer_than_two_levels():
    with pytest.raises(ValueError, match="n_levels must be an int ≥ 2"):
        syn.separation_margin(1)


def _units(per_replica: dict[str, list[tuple[float, ...]]], setup: str = "s", n: int = 10, spread: float = 0.05,
           seed: int = 0) -> pd.DataFrame:
    """Recovery units of 3 replicas × n images: {label: (centre of replica 0, 1, 2)}."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for label, centres in per_replica.items():
        for r, c in enumerate(centres):
            values = (c + spread * torch.randn(n, generator=g, dtype=torch.float64)).tolist()
            rows += [{"setup": setup, "metric": label.lower(), "label": label, "replica": r, "sample": i,
                      "spearman": v, "flat": False} for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def _recovered(units: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (setup, metric, label), part in units.groupby(["setup", "metric", "label"], sort=False):
        i = fs.verdicts.mean_interval(part["spearman"], groups=part["replica"])
        rows.append({"setup": setup, "metric": metric, "label": label, "spearman": i.estimate, "spearman low": i.low,
                     "spearman high": i.high, "replicas": i.replicas, "images": i.units})
    return pd.DataFrame(rows)


def test_separations_judge_paired_differences_on_the_replica_means():
    units = _units({"A": (0.9, 0.9, 0.9), "B": (0.88, 0.9, 0.89), "C": (0.3, 0.3, 0.3), "D": (0.9, 0.2, 0.6)})
    sep = syn.separations(units, margin=0.1).set_index(["a", "b"])
    assert sep.loc[("A", "C"), "outcome"] == "a beats b" and sep.loc[("A", "C"), "difference"] == pytest.approx(
        0.6, abs=0.05)
    assert sep.loc[("C", "D"), "outcome"] in ("b beats a", "not separated")
    assert sep.loc[("A", "B"), "outcome"] == "within the margin"  # shown not to differ by more than 0.1
    assert sep.loc[("A", "D"), "outcome"] == "not separated"  # the replicas disagree: D's training run matters
    assert sep.loc[("A", "C"), "replicas"] == 3 and sep.loc[("A", "C"), "images"] == 30
    d = units.pivot(index=["replica", "sample"], columns="label", values="spearman")
    expected = fs.verdicts.mean_interval(d["A"] - d["C"], groups=d.index.get_level_values("replica"))
    assert (sep.loc[("A", "C"), "low"], sep.loc[("A", "C"), "high"]) == pytest.approx((expected.low, expected.high))
    with pytest.raises(ValueError, match="units lacks 'setup'"):
        syn.separations(units.drop(columns="setup"), margin=0.1)


def test_separations_correct_the_beats_for_the_situations_pairs():
    units = _units({"A": (0.8, 0.82, 0.78), "B": (0.3, 0.35, 0.25), "C": (0.0, 0.02, -0.02), "D": (0.3, 0.3, 0.32)},
                   seed=1)
    holm = syn.separations(units, margin=0.1, correction="holm").set_index(["a", "b"])
    each = syn.separations(units, margin=0.1, correction="per comparison").set_index(["a", "b"])
    # C vs D: beaten at the 95 % interval of the pair alone, not after Holm over the 12 one-sided tests
    assert each.loc[("C", "D"), "outcome"] == "b beats a" and holm.loc[("C", "D"), "outcome"] == "not separated"
    assert holm.loc[("A", "C"), "outcome"] == "a beats b"
    assert (holm["p"] >= each["p"] - 1e-12).all() and holm.loc[("A", "C"), "p"] < 0.05
    # for one pair, Holm over its two one-sided tests is the 95 % interval's rule
    two = units[units["label"].isin(["A", "D"])]
    assert syn.separations(two, margin=0.1, correction="holm")["outcome"].tolist() == \
        syn.separations(two, margin=0.1, correction="per comparison")["outcome"].tolist() == ["a beats b"]
    assert syn.separations(units, margin=0.1)["outcome"].tolist() == holm["outcome"].tolist()  # the registered rule
    with pytest.raises(ValueError, match="correction must be one of"):
        syn.separations(units, margin=0.1, correction="bonferroni")


def test_guide_names_only_what_the_replicas_separate():
    units = pd.concat([
        # s1: A and B hold up (within the margin of each other); C is beaten; D is not separated: its recovery is
        # undecided and Holm's correction does not let A or B beat it, yet both are shown not worse than it
        _units({"A": (0.9, 0.92, 0.88), "B": (0.88, 0.91, 0.87), "C": (0.3, 0.32, 0.28), "D": (0.2, -0.05, 0.35)},
               "s1"),
        # s2: only A holds up and beats every other; C is shown not to recover the ranking
        _units({"A": (0.8, 0.82, 0.78), "B": (0.3, 0.35, 0.25), "C": (0.0, 0.02, -0.02), "D": (0.3, 0.3, 0.32)},
               "s2", seed=1),
        # s3: A recovers best, but D's replicas disagree (0.9, −0.2, 0.6): A is not shown not worse than D, so
        # neither is named ("not separated"), though A's point estimate leads
        _units({"A": (0.9, 0.92, 0.88), "B": (0.3, 0.3, 0.32), "C": (0.0, 0.02, -0.02), "D": (0.9, -0.2, 0.6)},
               "s3", seed=2)], ignore_index=True)
    sep = syn.separations(units, margin=0.1)
    cost = pd.DataFrame({"label": ["A", "B", "C", "D"], "inputs per sample": [50.0, 9.0, 9.0, 20.0]})
    cases = {"case one": "s1", "case two": "s2", "case three": "s3"}
    g = syn.guide(_recovered(units), cases, cost_table=cost, separation=sep, margin=0.1,
                  reference_spread={"A": 0.5, "B": 0.1}, reference_moves={"A": "moves", "B": "stays"})
    held = g[g["holds up"]].groupby("situation", sort=False)["label"].apply(list).to_dict()
    # the cost case: at least half of all 3 situations; A holds up in 2, B in 1 (beaten in the others)
    assert held == {"case one": ["A", "B"], "case two": ["A"], syn.COST_CASE: ["A"]}
    cost_rows = g[g["situation"] == syn.COST_CASE].set_index("label")
    assert cost_rows.loc["B", "situations held"] == 1 and not cost_rows.loc["B", "not separated"]
    # D holds up nowhere but is not separated in cases one and three: half of 3 with them, so not separated
    assert cost_rows.loc["D", "situations not separated"] == 2 and cost_rows.loc["D", "not separated"]
    one = g[g["situation"] == "case one"].set_index("label")
    assert bool(one.loc["D", "not separated"]) and one.loc["D", "recovers"] == "undecided"
    assert one.loc["D", "beaten by"] == "" and one.loc["C", "beaten by"] == "A, B" and not one.loc["C", "holds up"]
    two = g[g["situation"] == "case two"].set_index("label")
    assert two.loc["C", "recovers"] == "absent" and two.loc["B", "beaten by"] == "A"
    three = g[g["situation"] == "case three"].set_index("label")
    assert three.loc["A", "recovers"] == "holds" and not three.loc["A", "holds up"]
    assert three.loc[["A", "D"], "not separated"].all() and three.loc["B", "beaten by"] == "A"
    # the rule as it was registered first: A holds up in s3, because nothing beats it
    old = syn.guide(_recovered(units), cases, cost_table=cost, separation=sep, margin=0.1,
                    holds_up="recovers and not beaten").set_index(["situation", "label"])
    assert old.loc[("case three", "A"), "holds up"]
    with pytest.raises(ValueError, match="holds_up must be one of"):
        syn.guide(_recovered(units), cases, cost_table=cost, separation=sep, margin=0.1, holds_up="best")
    assert bool(g.loc[g["label"] == "A", "reference-sensitive"].all()) and not g.loc[g["label"] == "B",
                                                                                     "reference-sensitive"].any()
    text = syn.guide_sentences(g)
    assert text["case one"].startswith("For case one (setup “s1”, 3 trained models × 10 images each), A 0.")
    assert "hold up: recovery of the known ranking above chance by more than 0.1, and a recovery shown no more " \
           "than 0.1 below any other metric's" in text["case one"]
    assert "none is better than another by more than the margin" in text["case one"]
    assert "Not separated from them (neither shown worse nor shown within the margin): D." in text["case one"]
    assert "Caveat: the recovery of A (by 0.50) moves with the removal value." in text["case one"]
    assert "1 of 4 metrics is beaten by another by more than the margin (one-sided t tests, Holm-corrected" in \
        text["case one"] and "2 of 4 metrics are beaten" in text["case three"]
    assert "holds up: " in text["case two"] and "none is better" not in text["case two"]
    assert "Shown not to recover the ranking by the margin: C." in text["case two"]
    assert "no metric holds up" in text["case three"] and "Not separated (neither shown worse than another " \
           "metric nor shown within the margin of every other): A and D." in text["case three"]
    assert text[syn.COST_CASE] == ("On a cost budget, the metrics that hold up in at least half of the 3 situations, "
                                   "cheapest first: A (50 model inputs per image and explainer; holds up in 2 of 3). "
                                   "Not separated (fewer, but half with the situations where the replicas do not "
                                   "separate them): D.")
    answer = syn.answer_sentence(g)
    assert "each replicated over 3 independently trained models" in answer
    assert "the metrics that hold up, and in how many: A (2 of 3), B (1 of 3)" in answer and "A moves with the removal value" in answer
    assert "alone: A for case two" in answer and "so none of them is named best" in answer
    assert "2 of 4 metrics hold up nowhere (C, D)" in answer  # in the order of the units, not by recovery
    assert "report card" not in answer
    from_csv = pd.read_csv(io.StringIO(g.to_csv(index=False)))  # the book reads guide.csv: empty cells are NaN
    assert syn.guide_sentences(from_csv) == text and syn.answer_sentence(from_csv) == answer
    none = syn.guide(_recovered(units).assign(**{"spearman low": -0.5}), {"one": "s1"}, cost_table=cost,
                     separation=sep, margin=0.1)
    assert "no metric holds up" in syn.guide_sentences(none)["one"]
    assert syn.answer_sentence(none).startswith("No metric held up in any of the 1 controlled situations")
    with pytest.raises(ValueError, match="lacks"):
        syn.guide(_recovered(units).drop(columns="spearman low"), {"one": "s1"}, cost_table=cost)
    with pytest.raises(ValueError, match="names setup 'x'"):
        syn.guide(_recovered(units), {"one": "x"}, cost_table=cost)


def test_guide_without_separations_reads_the_recovery_intervals():
    rec = pd.DataFrame({"metric": ["a", "b", "c"] * 2, "label": ["A", "B", "C"] * 2,
                        "spearman": [0.9, 0.87, 0.1, 0.5, 0.1, -0.2],
                        "spearman low": [0.88, 0.85, -0.2, 0.3, -0.1, -0.4],
                        "spearman high": [0.92, 0.9, 0.4, 0.7, 0.3, 0.0], "setup": ["s1"] * 3 + ["s2"] * 3})
    cost = pd.DataFrame({"metric": ["a", "b", "c"], "label": ["A", "B", "C"], "inputs per sample": [50.0, 9.0, 9.0]})
    g = syn.guide(rec, {"one": "s1", "two": "s2"}, cost_table=cost, reference_spread={"A": 0.5, "B": 0.1}, margin=0.1)
    held = g[g["holds up"]].groupby("situation", sort=False)["label"].apply(list).to_dict()
    # s1: A and B lie within 0.1 of each other whichever end (conservative without the paired differences: the
    # other's upper end minus one's lower end), C's interval lies wholly below both; s2: B and C lie below A's
    assert held == {"one": ["A", "B"], "two": ["A"], syn.COST_CASE: ["B", "A"]}  # cost case: cheapest first
    assert g.set_index(["situation", "label"]).loc[("one", "C"), "beaten by"] == "A, B"
    assert bool(g.loc[g["label"] == "A", "reference-sensitive"].all())  # the spread alone, 0.5 > 0.3
    text = syn.guide_sentences(g, n_images={"s1": 24})
    assert text["one"].startswith("For one (setup “s1”, 24 images), A 0.90 [0.88, 0.92], B 0.87 [0.85, 0.90] hold up")
    assert "B (9 model inputs per image and explainer; holds up in 1 of 2)" in text[syn.COST_CASE]
    assert "A (2 of 2), B (1 of 2)" in syn.answer_sentence(g)


def test_guide_recovers_holds_weaker_absent_or_undecided():
    """Recovery against chance (0) and the margin: beyond the margin holds; above chance, short of the margin,
    weaker (recovers the ranking, not by the margin: not "does not recover"); within the margin of chance or below
    it, absent; reaching both, undecided. With a margin of 0 there is one boundary and no "weaker"."""
    rec = pd.DataFrame({"metric": ["a", "b", "c", "d", "e"], "label": ["A", "B", "C", "D", "E"],
                        "spearman": [0.9, 0.05, 0.0, 0.2, -0.5], "spearman low": [0.88, 0.03, -0.05, -0.1, -0.6],
                        "spearman high": [0.92, 0.08, 0.05, 0.5, -0.4], "setup": ["s1"] * 5})
    cost = pd.DataFrame({"label": list("ABCDE"), "inputs per sample": [1.0] * 5})
    g = syn.guide(rec, {"one": "s1"}, cost_table=cost, margin=0.1)
    one = g[g["situation"] == "one"].set_index("label")
    assert one["recovers"].to_dict() == {"A": "holds", "B": "weaker", "C": "absent", "D": "undecided",
                                         "E": "absent"}
    assert not one.loc[["C", "E"], "not separated"].any()  # shown not to recover: never "not separated"
    text = syn.guide_sentences(g)["one"]
    assert "Shown to recover the ranking above chance, not shown by the margin: B." in text
    assert "Shown not to recover the ranking by the margin: C and E." in text
    at_zero = syn.guide(rec, {"one": "s1"}, cost_table=cost, margin=0.0)
    assert at_zero[at_zero["situation"] == "one"].set_index("label")["recovers"].to_dict() == {
        "A": "holds", "B": "holds", "C": "undecided", "D": "undecided", "E": "absent"}


def test_reference_sensitivity_moves_stays_or_undecided():
    base = _units({"A": (0.9, 0.9, 0.9), "B": (0.9, 0.9, 0.9), "C": (0.9, 0.9, 0.9)})
    other = _units({"A": (0.2, 0.25, 0.2), "B": (0.85, 0.9, 0.88), "C": (0.2, 0.9, 0.5)}, seed=3)
    units = pd.concat([base.assign(reference="zero"), other.assign(reference="blur")], ignore_index=True)
    sens = syn.reference_sensitivity(units).set_index("label")
    assert sens.loc["A", "outcome"] == "moves" and sens.loc["A", "spread"] == pytest.approx(0.68, abs=0.05)
    assert sens.loc["B", "outcome"] == "stays" and sens.loc["C", "outcome"] == "undecided"
    assert sens.loc["A", "where"] == "s: zero vs blur"
    sentence = syn.reference_sentence(sens.reset_index())
    assert sentence.startswith("1 of 3 metrics move their recovery by more than 0.3 with the removal value")
    assert ": A; 1 stay within ±0.3 on every set-up; 1 are undecided." in sentence
    with pytest.raises(ValueError, match="units lacks 'reference'"):
        syn.reference_sensitivity(base)


def test_part_rows_cut_the_test_split_into_disjoint_parts():
    parts = [syn.part_rows(359, 200, (i, 3)) for i in range(3)]
    assert parts == [slice(0, 119), slice(119, 238), slice(238, 357)]
    assert syn.part_rows(72, 24, (2, 3)) == slice(48, 72) and syn.part_rows(359, 24, (0, 1)) == slice(0, 24)
    with pytest.raises(ValueError, match="part must be"):
        syn.part_rows(10, 2, (3, 3))
    with pytest.raises(ValueError, match="cannot be cut"):
        syn.part_rows(2, 2, (0, 3))


@pytest.mark.parametrize(("values", "fmt", "text"), [([3, 3, 3], "d", "3"), ([4, 2, 3], "d", "2–4"),
                                                     ([0.914, 0.9149], ".2f", "0.91"), ([0.5, 0.75], ".2f", "0.50–0.75")])
def test_value_range_one_end_when_both_read_the_same(values, fmt, text):
    assert syn.value_range(pd.Series(values), fmt) == text


@pytest.mark.filterwarnings("ignore::faithlab.evaluation.hints.DegenerateResultWarning")  # a depth-3 tree's flat Few-class
def test_evaluate_again_recomputes_maps_and_perturbation_for_the_model_and_inputs_it_is_given():
    s = syn.tree_setup(max_depth=3, n_test=6, seed=0)
    noisy = syn.noisy_inputs(s.x, 3.0, generator=1)
    grid = fl.metrics.fewclass.candidate_grid(["V1", "V2"])
    kw = dict(noise_levels=[0.0, 1.0], methods={"Random": ("random", {})}, seed=2, batch_size=4)
    again = syn.evaluate_again(s, s.model, None, noisy, grid=grid, metrics=["aopc", "fewclass_fid"], **kw)
    maps, _ = syn.explainer_maps(s, x=noisy, **kw)
    perturbed = fl.metrics.select_perturbation(s.model, noisy, grid=grid, batch_size=4,
                                               normalisation=s.normalisation)["image"]
    direct = fl.evaluate(s.model, noisy, s.y, maps, perturbed=perturbed, metrics=["aopc", "fewclass_fid"],
                         seed=syn.experiments.replica_draw(s, 2, "evaluate"), batch_size=4)  # the setup's own draws
    pd.testing.assert_frame_equal(again, direct)
    on_clean = syn.evaluate_again(s, s.model, None, s.x, grid=grid, metrics=["aopc", "fewclass_fid"], **kw)
    assert not on_clean["score"].equals(again["score"])  # the inputs it was given, not the setup's


def test_holm_and_the_one_sided_p_against_hand_values_and_scipy():
    from scipy import stats

    from faithlab_study.papers.synthesis.claims import advice

    # hand-computed Holm: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → 0.06 (monotone)
    adjusted = advice._holm(np.array([0.01, 0.04, 0.03, 0.005]))
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert advice._holm(np.array([0.6, 0.9])) == pytest.approx([1.0, 1.0])  # clipped to 1
    units = _units({"A": (0.9, 0.7, 0.85), "B": (0.3, 0.35, 0.25)})
    d = units.pivot(index=["replica", "sample"], columns="label", values="spearman")
    diff = d["A"] - d["B"]
    i = fs.verdicts.mean_interval(diff, groups=d.index.get_level_values("replica"))
    means = diff.groupby(level="replica").mean().to_numpy()
    for margin in (0.1, 0.5):
        expected = stats.ttest_1samp(means, margin, alternative="greater").pvalue
        assert advice._p_above(i, margin) == pytest.approx(expected)

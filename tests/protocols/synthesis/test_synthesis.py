"""The synthesis protocol: recovery, ideal gap, meta-evaluation and report card on hand-built frames, the linear
(transparent) model's exact contributions, and the weight-noise scale of randomise_layers."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.protocols import synthesis as syn


def _frame(scores: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    """An evaluate-like frame from {metric: {explainer: per-sample scores}}."""
    rows = []
    for metric, by in scores.items():
        info = fl.evaluation.METRICS[metric]
        for explainer, values in by.items():
            rows += [{"explainer": explainer, "sample": i, "metric": metric, "label": info.label,
                      "paper": info.paper, "level": "sample", "score": v, "higher_is_better": info.higher_is_better,
                      "direction": ""} for i, v in enumerate(values)]
    frame = pd.DataFrame(rows)
    frame["sample"] = frame["sample"].astype("Int64")
    return frame


QUALITY = {"a": 0.0, "b": -0.5, "c": -1.0}


def test_recovery_hand_computed():
    frame = _frame({
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
    frame = _frame({"saco": {"GT": [1.0, 0.2, -1.0]}, "mu_fidelity": {"GT": [0.5, 0.5, 0.5]},
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
    base = _frame({"aopc": {"a": [3, 3], "b": [2, 2], "c": [1, 1]}, "saco": {"a": [1, 1], "b": [0, 0], "c": [0, 0]}})
    same = base.copy()
    reversed_ = _frame({"aopc": {"a": [1, 1], "b": [2, 2], "c": [3, 3]}, "saco": {"a": [0, 0], "b": [0, 0],
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


def test_report_card_ranks_and_recommendations():
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
    advice = syn.recommendations(rec, card.reset_index(), {"OOD models": "ood"}, top=1)
    assert advice["OOD models"].startswith("For OOD models (setup “ood”), SaCo (Spearman 0.80)")
    assert "AOPC did worst (0.20)" in advice["OOD models"]
    assert "SaCo first" in advice["overall"]
    with pytest.raises(ValueError, match="ood_setup 'x'"):
        syn.report_card(rec, res, react, cost, ood_setup="x")
    with pytest.raises(ValueError, match="names setup 'x'"):
        syn.recommendations(rec, card.reset_index(), {"case": "x"})


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


# claim_ideal_gap on synthetic frames: one per verdict. SaCo and μF: ideal 1 over a range of 2 (gap (1 − s) / 2);
# Few-class Fid: ideal 1 over a range of 1; AOPC has no ideal and is ignored.
FAR = [-0.2, -0.3, -0.1, -0.25, -0.15, -0.2, -0.22, -0.18]         # gaps ≈ 0.6: beyond 30 %
NEAR = [0.9, 0.95, 0.85, 0.9, 0.92, 0.88, 0.9, 0.91]               # gaps ≈ 0.05: within
STRADDLE = [0.8, 0.0, 0.6, 0.2, 0.4, 0.4, 0.3, 0.5]                # gaps 0.1 … 0.5, mean ≈ 0.3
LOW = [-0.8, -0.9, -0.7, -0.85, -0.75, -0.8, -0.82, -0.78]         # random maps, well below all of them


def _claim(scores, **kw):
    return syn.claim_ideal_gap(_frame(scores), perfect="perfect", random="Random", **kw)


def test_claim_ideal_gap_reproduced_when_every_counted_metric_is_beyond_tolerance():
    c = _claim({"saco": {"perfect": FAR, "Random": LOW}, "mu_fidelity": {"perfect": FAR, "Random": LOW},
                "aopc": {"perfect": NEAR, "Random": LOW}}, setting="tree")
    assert c.verdict == "reproduced" and "within 30 %: none" in c.verdict.why
    t = c.table.set_index("metric")
    assert list(t.index) == ["saco", "mu_fidelity"]  # AOPC has no ideal value
    assert t.loc["saco", "gap"] == pytest.approx((1 - sum(FAR) / 8) / 2)
    assert t.loc["saco", "gap low"] > 0.3 and bool(t["beats random"].all()) and set(t["outcome"]) == {"beyond"}
    assert t.loc["saco", "chance low"] < sum(LOW) / 8 < t.loc["saco", "chance high"]
    assert c.claim.endswith("(tree)") and "0 of 2 counted metrics within 30 %" in c.our_value


def test_claim_ideal_gap_not_reproduced_when_one_counted_metric_is_within():
    c = _claim({"saco": {"perfect": FAR, "Random": LOW}, "mu_fidelity": {"perfect": NEAR, "Random": LOW}})
    assert c.verdict == "not reproduced" and "within 30 %: μF" in c.verdict.why
    assert c.table.set_index("metric").loc["mu_fidelity", "outcome"] == "within"
    assert "μF 5 % off" in c.our_value


def test_claim_ideal_gap_inconclusive_when_none_within_but_one_undecided():
    c = _claim({"saco": {"perfect": FAR, "Random": LOW}, "mu_fidelity": {"perfect": STRADDLE, "Random": LOW}})
    assert c.verdict == "inconclusive" and "undecided: μF" in c.verdict.why


def test_claim_ideal_gap_metrics_that_do_not_beat_random_maps_do_not_count():
    # μF scores the perfect explanation near its ideal, but random maps as high: it cannot count against the claim
    c = _claim({"saco": {"perfect": FAR, "Random": LOW}, "mu_fidelity": {"perfect": NEAR, "Random": NEAR}})
    assert c.verdict == "reproduced"
    t = c.table.set_index("metric")
    assert t.loc["mu_fidelity", "outcome"] == "not counted" and not t.loc["mu_fidelity", "beats random"]
    assert "not above them" in c.our_value and "SaCo of SaCo, μF" in c.premise


def test_claim_ideal_gap_not_testable_without_a_counted_metric():
    same = _claim({"saco": {"perfect": NEAR, "Random": NEAR}, "fewclass_fid": {"perfect": LOW, "Random": NEAR}})
    assert same.verdict == "not testable here"
    assert "no metric scores the perfect explanation significantly above random maps" in same.verdict.why
    no_ideal = _claim({"aopc": {"perfect": NEAR, "Random": LOW}})
    assert no_ideal.verdict == "not testable here" and "no metric of the frame has an ideal" in no_ideal.verdict.why
    nan = float("nan")
    undefined = _claim({"mu_fidelity": {"perfect": [nan] * 7 + [1.0], "Random": LOW}})  # one image left: no test
    assert undefined.verdict == "not testable here" and undefined.table["images"].item() == 1


def test_claim_ideal_gap_argument_errors():
    frame = _frame({"saco": {"perfect": FAR, "Random": LOW}})
    with pytest.raises(ValueError, match="perfect must name an explainer .* got 'GT'"):
        syn.claim_ideal_gap(frame, perfect="GT", random="Random")
    with pytest.raises(ValueError, match="random must name an explainer"):
        syn.claim_ideal_gap(frame, perfect="perfect", random="noise")
    with pytest.raises(ValueError, match="perfect and random must name different explainers"):
        syn.claim_ideal_gap(frame, perfect="perfect", random="perfect")
    with pytest.raises(ValueError, match="tolerance"):
        syn.claim_ideal_gap(frame, perfect="perfect", random="Random", tolerance=1.5)


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


def _replicated_frame(per_replica: list[dict[str, dict[str, list[float]]]]) -> pd.DataFrame:
    """An evaluate-like frame of several trained replicas (one scores mapping each) on the same sample indices."""
    return pd.concat([_frame(scores).assign(replica=r) for r, scores in enumerate(per_replica)], ignore_index=True)


def _scores(centre: float, n: int = 20, spread: float = 0.03, seed: int = 0) -> list[float]:
    return (centre + spread * torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            ).tolist()


def test_claim_ideal_gap_resamples_the_replicas():
    # SaCo scores the perfect explanation far from its ideal on replicas 0 and 2 (gap ≈ 0.6) and near it on replica
    # 1 (gap ≈ 0.05): the replicas disagree, so the two-stage interval of the mean gap straddles 30 % and the claim
    # is inconclusive — whereas the same 60 rows read as one model put it beyond 30 % (reproduced)
    far, near = _scores(-0.2, seed=1), _scores(0.9, seed=2)
    per = [{"saco": {"perfect": p, "Random": _scores(-0.8, seed=3 + r)}} for r, p in enumerate((far, near, far))]
    frame = _replicated_frame(per)
    c = syn.claim_ideal_gap(frame, perfect="perfect", random="Random", n_boot=2000)
    t = c.table.set_index("metric")
    assert t.loc["saco", "images"] == 60 and t.loc["saco", "replicas"] == 3 and c.units == 60
    assert bool(t.loc["saco", "beats random"]) and t.loc["saco", "gap low"] < 0.3 < t.loc["saco", "gap high"]
    assert c.verdict == "inconclusive" and "undecided: SaCo" in c.verdict.why
    assert "replicas, then images within them" in c.rule and "replicas, then images within them" in c.premise
    pooled = frame.assign(sample=frame["replica"] * 20 + frame["sample"]).drop(columns="replica")
    one = syn.claim_ideal_gap(pooled, perfect="perfect", random="Random", n_boot=2000)
    assert one.verdict == "reproduced" and one.table["gap low"].item() > 0.3 and one.units == 60
    # replicated() decides once per replica on its own rows: beyond, within, beyond
    rep = fl.verdicts.replicated(syn.claim_ideal_gap, frame, perfect="perfect", random="Random", n_boot=1000, seeds=2)
    assert rep.replicas == ("reproduced", "not reproduced", "reproduced") and rep.verdict == "inconclusive"
    agree = _replicated_frame([{"saco": {"perfect": _scores(-0.2, seed=10 + r), "Random": _scores(-0.8, seed=r)}}
                               for r in range(3)])
    decided = fl.verdicts.replicated(syn.claim_ideal_gap, agree, perfect="perfect", random="Random", n_boot=1000,
                                     seeds=2)
    assert decided.verdict == "reproduced" and decided.replica_agreement == "3 of 3 replicas"


def test_tree_setup_train_seed_refits_the_tree_on_the_same_data():
    a = syn.tree_setup(max_depth=8, n_test=5, seed=0)
    b = syn.tree_setup(max_depth=8, n_test=5, seed=0, train_seed=fl.verdicts.replica_seed(0, "decision tree", 1))
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and a.spec["train_seed"] == 0
    assert b.spec["train_seed"] == fl.verdicts.replica_seed(0, "decision tree", 1)
    assert not torch.equal(a.model.feature, b.model.feature)  # tied splits broken by the training seed
    with pytest.raises(ValueError, match="train_seed must be a non-negative int"):
        syn.tree_setup(max_depth=3, n_test=5, train_seed=-1)


def test_recovery_interval_brackets_the_mean_is_exact_for_a_constant_ranking_and_repeats_with_its_seed():
    frame = _frame({
        "aopc": {"a": [3, 3, 1, 3], "b": [2, 2, 2, 2], "c": [1, 1, 3, 1]},  # per sample ρ: 1, 1, −1, 1
        "log_odds": {"a": [1, 1, 1, 1], "b": [2, 2, 2, 2], "c": [3, 3, 3, 3]},  # ρ = 1 on every sample
    })
    rec = syn.recovery(frame, QUALITY, seed=3).set_index("metric")
    assert rec.loc["aopc", "spearman low"] < rec.loc["aopc", "spearman"] == 0.5 < rec.loc["aopc", "spearman high"]
    assert rec.loc["aopc", "spearman low"] >= -1 and rec.loc["aopc", "spearman high"] == 1
    assert rec.loc["log_odds", "spearman low"] == rec.loc["log_odds", "spearman high"] == 1  # no spread, no width
    assert syn.recovery(frame, QUALITY, seed=3).set_index("metric").equals(rec)  # keyed to the seed


def test_guide_holds_up_only_above_chance_and_overlapping_the_best_and_prices_the_cost_case():
    rec = pd.DataFrame({"metric": ["a", "b", "c"] * 2, "label": ["A", "B", "C"] * 2,
                        "spearman": [0.9, 0.8, 0.1, 0.5, 0.1, -0.2],
                        "spearman low": [0.8, 0.6, -0.2, 0.3, -0.1, -0.4],
                        "spearman high": [1.0, 0.9, 0.4, 0.7, 0.3, 0.0], "setup": ["s1"] * 3 + ["s2"] * 3})
    cost = pd.DataFrame({"metric": ["a", "b", "c"], "label": ["A", "B", "C"], "inputs per sample": [50.0, 9.0, 9.0]})
    g = syn.guide(rec, {"one": "s1", "two": "s2"}, cost_table=cost, reference_spread={"A": 0.5, "B": 0.1})
    held = g[g["holds up"]].groupby("situation")["label"].apply(list).to_dict()
    # s1: A best [0.8, 1]; B's [0.6, 0.9] overlaps it; C reaches 0. s2: only A lies above 0.
    assert held == {"one": ["A", "B"], "two": ["A"], syn.COST_CASE: ["B", "A"]}  # cost case: cheapest first
    cost_rows = g[g["situation"] == syn.COST_CASE].set_index("label")
    assert cost_rows.loc["A", "situations held"] == 2 and cost_rows.loc["B", "situations held"] == 1
    assert list(cost_rows.index[:2]) == ["B", "A"]  # the cost case is ordered by cost among those that hold up
    assert bool(g.loc[g["label"] == "A", "reference-sensitive"].all()) and not g.loc[g["label"] == "B",
                                                                                     "reference-sensitive"].any()
    text = syn.guide_sentences(g, n_images={"s1": 24})
    assert text["one"].startswith("For one (setup “s1”, 24 images), A 0.90 [0.80, 1.00], B 0.80 [0.60, 0.90] hold up")
    assert "C does worst (0.10 [-0.20, 0.40])" in text["one"] and "Caveat: the recovery of A (by 0.50) moves" in text["one"]
    assert "B (9 model inputs per image and explainer; holds up in 1 of them)" in text[syn.COST_CASE]
    card = pd.DataFrame({"label": ["B", "A", "C"], "overall": [1.5, 2.0, 2.5]})
    answer = syn.answer_sentence(g, card)
    assert "A (2 of 2), B (1 of 2)" in answer and "1 of 3 metrics holds up nowhere (C)" in answer
    assert "ranks B first (mean rank 1.5 of 3)" in answer and "A moves with the removal value" in answer
    none = rec.assign(**{"spearman low": -0.5})
    g0 = syn.guide(none, {"one": "s1"}, cost_table=cost)
    assert "no metric recovers the known ranking significantly better than chance" in syn.guide_sentences(g0)["one"]
    assert syn.answer_sentence(g0, card).startswith("No metric recovered a known ranking")
    with pytest.raises(ValueError, match="lacks"):
        syn.guide(rec.drop(columns="spearman low"), {"one": "s1"}, cost_table=cost)
    with pytest.raises(ValueError, match="names setup 'x'"):
        syn.guide(rec, {"one": "x"}, cost_table=cost)


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
    direct = fl.evaluate(s.model, noisy, s.y, maps, perturbed=perturbed, metrics=["aopc", "fewclass_fid"], seed=2,
                         batch_size=4)
    pd.testing.assert_frame_equal(again, direct)
    on_clean = syn.evaluate_again(s, s.model, None, s.x, grid=grid, metrics=["aopc", "fewclass_fid"], **kw)
    assert not on_clean["score"].equals(again["score"])  # the inputs it was given, not the setup's

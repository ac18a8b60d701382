"""F-Fidelity's series and text ranking claims (Tables 3-4, 6-7) decided by their registered rules on one statistic per
trained replica: every verdict each can give, the premises (chance, the ideal baseline, the mechanism) that take a
model out, and the replica loop of ``verdicts.replicated`` (a replica alone is left out, the verdict rests on all)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl
import faithlab_study as fs

F = fs.papers.ffidelity
R, W, P, N, T, I = fs.verdicts.VERDICTS  # W: reproduced, weaker
WIDE = np.linspace(-0.5, 0.5, 40)


def model_cells(models: dict[str, dict[str, list[float]]], *, oriented: dict[str, dict[str, list[float]]] | None = None,
                gt: float = 0.9, wobble: float = 0.2):
    """micro_cells-like rows of several models (``{model: {method: per-replica mean micro rank}}``), two seeds × three
    levels per replica, each cell wobbling around the replica's mean (the wobbles sum to zero); oriented micro
    ``oriented[model][method][r]`` (default 1 − rank / 4); GT micro ``gt`` for every method; the permuted-order null
    spread over ±0.5."""
    rows, nulls = [], []
    pattern = np.array([wobble, -wobble] * 3)
    for model, ranks in models.items():
        for m, per in ranks.items():
            for r, rank in enumerate(per):
                o = ((oriented or {}).get(model) or {}).get(m, [1 - x / 4 for x in per])[r]
                for c in range(6):
                    rows.append({"model": model, "method": m, "replica": r, "seed": c // 3, "level": c % 3,
                                 "micro rank": rank + pattern[c], "oriented micro": o + pattern[c] / 10,
                                 "GT micro": gt, "LeRF micro": 0.9})
                nulls += [{"model": model, "method": m, "replica": r, "draw": d, "GT micro": w}
                          for d, w in enumerate(WIDE)]
    return pd.DataFrame(rows), pd.DataFrame(nulls)


SERIES = {"Fidelity": [3, 3.2, 3.1], "ROAR": [3.5, 3.4, 3.6], "R-Fidelity": [1.2, 1.1, 1.0],
          "F-Fidelity": [1.1, 1.2, 1.0]}


@pytest.mark.parametrize("ranks, gt, expected, why", [
    (SERIES, 0.9, R, "holds in 4 of 4"),                                       # R-Fidelity is no competitor
    ({**SERIES, "Fidelity": [1.1, 1.21, 0.99]}, 0.9, N, "absent in 1"),       # Fidelity ties: inside the band
    ({**SERIES, "Fidelity": [1.3, 1.35, 1.3]}, 0.9, W, "weaker in 1"),        # 0.2 behind: shown, below 0.4917
    ({**SERIES, "ROAR": [0.5, 0.6, 0.5]}, 0.9, N, "ROAR"),                    # ROAR ranks better: reversed
    ({**SERIES, "Fidelity": [3.0, 1.0, 2.6]}, 0.9, I, "undecided in 1"),      # the replicas disagree
    (SERIES, 0.1, T, "compare noise"),                                        # nothing beyond chance
])
def test_claim_series_ranking_gives_every_verdict(ranks, gt, expected, why):
    frame, null = model_cells({"CNN-1D": ranks, "Bi-LSTM": SERIES}, gt=gt)
    claim = F.claim_series_ranking(frame, null, models=["CNN-1D", "Bi-LSTM"], n_inputs=100)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert why in claim.verdict.why
    assert claim.rule_id == "Series.ranking" and "0.4917" in claim.rule
    if expected != T:
        assert claim.units == 300 and claim.kept_replicas == 3 and len(claim.table) == 4


def test_claim_series_ranking_takes_each_models_mechanism():
    frame, null = model_cells({"CNN-1D": SERIES, "Bi-LSTM": {**SERIES, "ROAR": [0.5, 0.6, 0.5]}})
    models = ["CNN-1D", "Bi-LSTM"]
    assert F.claim_series_ranking(frame, null, models=models, n_inputs=100).verdict == N
    # the Bi-LSTM's removal is shown in distribution: it leaves, and the CNN-1D alone is decided
    left = F.claim_series_ranking(frame, null, models=models, n_inputs=100,
                                  mechanisms={"Bi-LSTM": fs.verdicts.Premise(False, "no OOD")})
    assert left.verdict == R and "Bi-LSTM: FF.OOD fails" in left.premise
    undecided = F.claim_series_ranking(frame, null, models=["CNN-1D"], n_inputs=100,
                                       mechanisms={"CNN-1D": fs.verdicts.Premise(None, "OOD undecided")})
    assert undecided.verdict == I
    ideal, ideal_null = model_cells({"CNN-1D": SERIES}, oriented={"CNN-1D": {"Fidelity": [0.99] * 3}})
    assert "ideal" in F.claim_series_ranking(ideal, ideal_null, models=["CNN-1D"], n_inputs=100).verdict.why


TEXT = {"Fidelity": [1.2, 1.2, 1.2], "R-Fidelity": [1.5, 1.5, 1.5], "F-Fidelity": [1.2, 1.2, 1.2]}


@pytest.mark.parametrize("fidelity, gt, expected", [
    ([0.8, 0.81, 0.8], 0.9, R),      # F-Fidelity's lead 0: below the margin 0.105
    ([0.95, 0.96, 0.95], 0.9, R),    # Fidelity ahead of F-Fidelity: the one-sided rule holds
    ([0.4, 0.41, 0.4], 0.9, N),      # F-Fidelity leads by 0.4: beyond the margin
    ([0.8, 0.5, 0.7], 0.9, I),       # the replicas disagree: straddles 0.105
    ([0.8, 0.81, 0.8], 0.1, T),      # both at chance: equal by construction
])
def test_claim_text_equivalence_gives_every_verdict(fidelity, gt, expected):
    oriented = {"LSTM": {"Fidelity": fidelity, "F-Fidelity": [0.8, 0.8, 0.8]}}
    frame, null = model_cells({"LSTM": TEXT}, oriented=oriented, gt=gt)
    claim = F.claim_text_equivalence(frame, null, models=["LSTM"], n_inputs=100)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "Text.equivalence" and claim.rule.count("below") >= 1


def test_claim_text_equivalence_counts_only_the_named_models_and_is_decided_on_the_replicas():
    oriented = {"LSTM": {"Fidelity": [0.8] * 3, "F-Fidelity": [0.8] * 3},
                "LSTM (pad)": {"Fidelity": [0.3] * 3, "F-Fidelity": [0.8] * 3}}
    frame, null = model_cells({"LSTM": TEXT, "LSTM (pad)": TEXT}, oriented=oriented)
    models = ["LSTM", "LSTM (pad)"]
    assert F.claim_text_equivalence(frame, null, models=models, n_inputs=100).verdict == N
    only = F.claim_text_equivalence(frame, null, models=models, counted=["LSTM"], n_inputs=100)
    assert only.verdict == R and list(only.table["counted"]) == [True, False]
    decided = fs.verdicts.replicated(F.claim_text_equivalence, frame, null, models=models, counted=["LSTM"],
                                     n_inputs=100, seeds=0)
    assert decided.verdict == R and decided.replicas == ("left out",) * 3, decided.replicas
    with pytest.raises(ValueError, match="at least 2 replicas"):
        F.claim_text_equivalence(frame[frame["replica"] == 1], null, models=models, n_inputs=100)


ROAD_RANKS = {"Fidelity": [1.2, 1.2, 1.2], "F-Fidelity": [1.2, 1.2, 1.2], "ROAD": [1.2, 1.2, 1.2]}


@pytest.mark.parametrize("road, gt, mechanism, expected", [
    ([0.8, 0.81, 0.8], 0.9, None, R),      # F-Fidelity's lead 0: below the margin 0.105
    ([0.95, 0.96, 0.95], 0.9, None, R),    # ROAD ahead of F-Fidelity: the one-sided rule holds
    ([0.3, 0.35, 0.3], 0.9, None, N),      # F-Fidelity leads by 0.5: beyond the margin
    ([0.8, 0.5, 0.7], 0.9, None, I),       # the replicas disagree: straddles 0.105
    ([0.8, 0.81, 0.8], 0.1, None, T),      # F-Fidelity itself at chance: no recovery to match
    ([0.8, 0.81, 0.8], 0.9, False, T),     # FF.OOD fails on the data set
    ([0.8, 0.81, 0.8], 0.9, "undecided", I),  # FF.OOD undecided
])
def test_claim_road_gives_every_verdict(road, gt, mechanism, expected):
    oriented = {e: {"ROAD": road, "F-Fidelity": [0.8, 0.8, 0.8]} for e in ("SG-SQ", "GradCAM")}
    frame, null = model_cells({"SG-SQ": ROAD_RANKS, "GradCAM": ROAD_RANKS}, oriented=oriented, gt=gt)
    frame, null = frame.rename(columns={"model": "explainer"}), null.rename(columns={"model": "explainer"})
    premise = None if mechanism is None else fs.verdicts.Premise(None if mechanism == "undecided" else mechanism,
                                                                 "OOD")
    claim = F.claim_road(frame, null, explainers=["SG-SQ", "GradCAM"], n_images=40, mechanism=premise)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "FF.ROAD" and "0.105" in claim.rule
    assert list(claim.table["explainer"]) == ["SG-SQ", "GradCAM"]


def test_claim_road_needs_every_explainer_and_two_replicas():
    oriented = {"SG-SQ": {"ROAD": [0.8] * 3, "F-Fidelity": [0.8] * 3},
                "GradCAM": {"ROAD": [0.3] * 3, "F-Fidelity": [0.8] * 3}}
    frame, null = model_cells({"SG-SQ": ROAD_RANKS, "GradCAM": ROAD_RANKS}, oriented=oriented)
    frame, null = frame.rename(columns={"model": "explainer"}), null.rename(columns={"model": "explainer"})
    assert F.claim_road(frame, null, explainers=["SG-SQ", "GradCAM"], n_images=40).verdict == N
    assert F.claim_road(frame, null, explainers=["SG-SQ"], n_images=40).verdict == R
    with pytest.raises(ValueError, match="at least 2 replicas"):
        F.claim_road(frame[frame["replica"] == 1], null, explainers=["SG-SQ"], n_images=40)


def test_rival_costs_sum_each_methods_own_stages():
    rows = [("fine-tune", None, "fine-tuned", None, 10.0, 100, 80),
            ("explain test set", "A", "fine-tuned", None, 1.0, 10, 10),
            ("explain test set", "A", "original", None, 1.0, 10, 10),  # shared by all three: not counted
            ("evaluate", "A", "fine-tuned", "F-Fidelity", 2.0, 50, 0),
            ("evaluate", "A", "original", "ROAD", 3.0, 5, 0),
            ("evaluate", "A", "original", "Fidelity", 0.5, 5, 0),
            ("retrain (ROAR)", "A", "ROAR A", None, 9.0, 99, 99)]
    costs = pd.DataFrame(rows, columns=["stage", "explainer", "model", "method", "seconds", "image passes",
                                        "backward passes"])
    evaluate = {"Fidelity": 5, "ROAD": 5, "F-Fidelity": 50}
    table = F.rival_costs(costs, evaluate=evaluate).set_index("method")
    assert table.loc["F-Fidelity"].tolist() == [13.0, 160.0, 90.0, 340.0]
    assert table.loc["ROAD"].tolist() == [3.0, 5.0, 0.0, 5.0]
    assert table.loc["Fidelity", "seconds"] == 0.5
    # a process that scored no cell (a sharded run's reduce step): the same work, no seconds of evaluation
    reduce = F.rival_costs(costs[costs["stage"] != "evaluate"], evaluate=evaluate).set_index("method")
    assert reduce.loc["F-Fidelity", "forward equivalents"] == 340.0 and reduce.loc["ROAD", "seconds"] == 0.0
    assert list(F.rival_costs(costs, evaluate={"ROAD": 5}).index) == [0]

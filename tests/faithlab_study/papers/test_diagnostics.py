"""The removal diagnostic: accuracy after removing k salient, non-salient or random units, on oracle models whose
answer is known in closed form."""

from __future__ import annotations

import math

import pytest
import torch

from faithlab_study.papers import diagnostics
from oracles import Gated

B, SIDE = 200, 4
N = SIDE * SIDE


def _setup():
    x = torch.ones(B, 1, SIDE, SIDE)
    relevant = torch.zeros(1, SIDE, SIDE, dtype=torch.bool)
    relevant.view(-1)[:6] = True
    y = torch.zeros(B, dtype=torch.long)
    models = {"evidence": Gated(relevant, m=2), "ood": Gated(torch.ones(1, SIDE, SIDE, dtype=torch.bool), m=1)}
    return x, y, relevant.view(1, -1).expand(B, -1), models


def _acc(frame, model, k, kind):
    row = frame[(frame["model"] == model) & (frame["k"] == k) & (frame["removed"] == kind)]
    assert len(row) == 1
    return float(row["accuracy"].iloc[0])


def test_mask_mode_closed_forms():
    x, y, mask, models = _setup()
    frame = diagnostics.removal_diagnostic(models, x, y, mask, ks=[1, 2], n_draws=5, generator=0)
    for name in models:
        assert _acc(frame, name, 0, "none") == 1.0
    # the evidence model needs 2 relevant units removed; the "ood" model fails on any removal
    assert _acc(frame, "evidence", 1, "salient") == 1.0 and _acc(frame, "evidence", 2, "salient") == 0.0
    assert _acc(frame, "evidence", 2, "non-salient") == 1.0
    assert _acc(frame, "ood", 1, "non-salient") == 0.0 and _acc(frame, "ood", 2, "random") == 0.0
    # two random units are both relevant with probability C(6,2)/C(16,2) = 1/8
    assert _acc(frame, "evidence", 2, "random") == pytest.approx(1 - 15 / 120, abs=0.04)
    gap = diagnostics.ood_gap(frame)
    assert gap["evidence"] == 0.0 and gap["ood"] == 1.0


def test_scores_mode_uses_top_and_bottom_k():
    x, y, mask, models = _setup()
    scores = mask.double() * torch.linspace(1, 2, N) + 0.01 * torch.arange(N)  # relevant units score highest
    frame = diagnostics.removal_diagnostic({"evidence": models["evidence"]}, x, y, scores, ks=[2, 6], n_draws=3)
    assert _acc(frame, "evidence", 2, "salient") == 0.0 and _acc(frame, "evidence", 6, "non-salient") == 1.0
    p = frame[(frame["k"] == 2) & (frame["removed"] == "salient")]["p(label)"].iloc[0]
    assert p == pytest.approx(1 / (1 + math.e))  # logits [0, 1] once the gate closes


def test_same_draws_for_every_model_and_batch_size_invariant():
    x, y, mask, models = _setup()
    twins = {"a": models["evidence"], "b": models["evidence"]}
    frame = diagnostics.removal_diagnostic(twins, x, y, mask, ks=[2], generator=3)
    a, b = (frame[frame["model"] == m].drop(columns="model").reset_index(drop=True) for m in "ab")
    assert a.equals(b)
    small = diagnostics.removal_diagnostic(twins, x, y, mask, ks=[2], generator=3, batch_size=7)
    assert small.equals(frame)


def test_errors_name_the_argument():
    x, y, mask, models = _setup()
    with pytest.raises(ValueError, match="ks must not exceed 6"):
        diagnostics.removal_diagnostic(models, x, y, mask, ks=[7])
    with pytest.raises(ValueError, match="salient"):
        diagnostics.removal_diagnostic(models, x, y, mask[:, :5], ks=[1])
    with pytest.raises(ValueError, match="models"):
        diagnostics.removal_diagnostic({}, x, y, mask, ks=[1])
    with pytest.raises(ValueError, match="ks"):
        diagnostics.removal_diagnostic(models, x, y, mask, ks=[])
    with pytest.raises(ValueError, match="k must be one of"):
        diagnostics.ood_gap(diagnostics.removal_diagnostic(models, x, y, mask, ks=[1]), k=3)


def test_candidates_restrict_every_draw():
    x, y, mask, models = _setup()
    allowed = torch.ones_like(mask)
    allowed[:, 6:12] = False  # only 4 background units remain candidates
    frame = diagnostics.removal_diagnostic({"ood": models["ood"]}, x, y, mask, ks=[4], candidates=allowed)
    assert _acc(frame, "ood", 4, "non-salient") == 0.0
    with pytest.raises(ValueError, match="ks must not exceed 4"):
        diagnostics.removal_diagnostic({"ood": models["ood"]}, x, y, mask, ks=[5], candidates=allowed)
    # only the units 12..15 may go: a gate on units 6..11 never closes
    gate = torch.zeros(1, SIDE, SIDE, dtype=torch.bool)
    gate.view(-1)[6:12] = True
    frame = diagnostics.removal_diagnostic({"g": Gated(gate, m=1)}, x, y, mask, ks=[4], candidates=allowed)
    assert _acc(frame, "g", 4, "non-salient") == 1.0 and _acc(frame, "g", 4, "random") == 1.0
    with pytest.raises(ValueError, match="candidates"):
        diagnostics.removal_diagnostic(models, x, y, mask, ks=[1], candidates=allowed.float())


def test_cap_count_is_round_beta_n_unless_a_sample_has_fewer_units_of_a_kind():
    import faithlab as fl
    import faithlab_study as fs

    mask = torch.zeros(3, 100, dtype=torch.bool)
    mask[:, :40] = True
    assert fs.papers.cap_count(mask, 0.1) == 10  # round(0.1 · 100)
    mask[1, 7:] = False  # one sample has 7 salient units only
    assert fs.papers.cap_count(mask, 0.1) == 7
    assert fs.papers.cap_count(~mask, 0.1) == 7  # and 7 non-salient ones here
    with pytest.raises(ValueError, match="salient"):
        fs.papers.cap_count(mask.float(), 0.1)
    with pytest.raises(ValueError, match="beta"):
        fs.papers.cap_count(mask, 1.5)

"""The Basics chapter's sanity claim as a function (faithlab_study.papers.basics): integrated gradients' deletion AUC
against the random explainer's (the null), with the premise that the classifier learned its task (above the
permuted-label and majority-class chance levels); synthetic frames give every verdict it can give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl
import faithlab_study as fs

R, W, P, N, T, I = fs.verdicts.VERDICTS  # W: reproduced, weaker
LABELS = np.arange(60) % 10


def deletion(ig_shift: float, *, noise: float = 0.02, n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Per-sample deletion AUCs: random around 0.5, IG = random + ig_shift + noise (noise 0 with shift 0: equal)."""
    rng = np.random.default_rng(seed)
    random = 0.5 + 0.1 * rng.normal(size=n)
    ig = random + ig_shift + noise * rng.normal(size=n)
    return pd.concat([pd.DataFrame({"explainer": name, "sample": range(n), "deletion AUC": auc})
                      for name, auc in (("integrated_gradients", ig), ("saliency", ig), ("random", random))])


CHANCE = np.random.default_rng(1).integers(0, 10, size=60)  # a model that guesses
MOSTLY_ZERO = np.r_[np.zeros(54, int), np.ones(6, int)]  # 90 % of the labels are class 0
MOSTLY_ZERO_GUESSES = np.r_[np.zeros(42, int), np.ones(18, int)]  # right on every 1, wrong on 12 zeros: 80 %


@pytest.mark.parametrize("frame, predictions, labels, expected, why", [
    (deletion(-0.1), LABELS, LABELS, R, "holds"),        # IG's curve falls faster than random maps'
    (deletion(+0.1), LABELS, LABELS, N, "absent (reversed)"),  # IG worse than random maps: reversed
    (deletion(0.0, noise=0.001), LABELS, LABELS, N, "] absent (above"),  # a tight tie: inside the band of no effect
    (deletion(-0.005, noise=0.005), LABELS, LABELS, W, "weaker"),  # half the margin, tight: there, but smaller
    (deletion(-0.005, noise=0.04), LABELS, LABELS, I, "undecided"),  # reaches both 0 and the margin 0.01
    (deletion(-0.1), CHANCE, LABELS, T, "permuted"),       # the model did not learn: at the permuted-label level
    (deletion(-0.1), MOSTLY_ZERO_GUESSES, MOSTLY_ZERO, T, "majority"),  # above permuted labels, below the majority
])
def test_claim_deletion_sanity_gives_every_verdict(frame, predictions, labels, expected, why):
    claim = fs.papers.basics.claim_deletion_sanity(frame, predictions, labels, n_null=200)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert claim.rule_id == "B1" and claim.kind == "study check" and "0.01" in claim.rule
    assert claim.claim == "IG deletion AUC below random (sanity check)" and "permuted" in claim.premise
    assert len(claim.table) == 1 and claim.table["samples"].iloc[0] == 60


def test_claim_deletion_sanity_needs_both_explainers_and_paired_labels():
    with pytest.raises(ValueError, match="explainers"):
        fs.papers.basics.claim_deletion_sanity(deletion(0.0).query("explainer != 'random'"), LABELS, LABELS)
    with pytest.raises(ValueError, match="same N"):
        fs.papers.basics.claim_deletion_sanity(deletion(0.0), LABELS[:10], LABELS)


def replicated_deletion(shifts, *, n: int = 30, noise: float = 0.02):
    """Deletion AUCs of len(shifts) trained replicas (IG = random + shift per replica) on the same n test samples,
    with the predictions frame of models that are right on every sample."""
    frame = pd.concat([deletion(s, noise=noise, n=n, seed=r).assign(replica=r) for r, s in enumerate(shifts)],
                      ignore_index=True)
    predictions = pd.DataFrame({"replica": np.repeat(np.arange(len(shifts)), n),
                                "sample": np.tile(np.arange(n), len(shifts)),
                                "predicted": np.tile(np.arange(n) % 10, len(shifts))})
    return frame, predictions, np.arange(n) % 10


def test_claim_deletion_sanity_resamples_the_replicas():
    # two replicas where IG deletes faster than random maps, one where it is slower: the replicas disagree, so the
    # t interval on the three replica means straddles the margin — whereas the same 90 rows read as one model are
    # decided
    frame, predictions, labels = replicated_deletion((-0.2, +0.1, -0.2))
    claim = fs.papers.basics.claim_deletion_sanity(frame, predictions, labels, n_null=200)
    assert claim.verdict == I, claim.verdict.why
    assert claim.table["replicas"].item() == 3 and claim.units == 90 and "t on replica means" in claim.rule
    t = claim.table.iloc[0]
    assert t["low"] < 0.01 < t["high"]
    pooled = frame.assign(sample=frame["replica"] * 30 + frame["sample"]).drop(columns="replica")
    one = fs.papers.basics.claim_deletion_sanity(pooled, np.tile(labels, 3), np.tile(labels, 3), n_null=200)
    assert one.verdict == R and one.table["low"].item() > 0.01 and one.units == 90
    # replicas that agree are decided, and replicated() re-decides on each replica's rows
    agree = fs.verdicts.replicated(fs.papers.basics.claim_deletion_sanity, *replicated_deletion((-0.1,) * 3),
                                   n_null=200, seeds=2)
    assert agree.verdict == R and agree.replicas == (R, R, R) and agree.replica_agreement == "3 of 3 replicas"
    assert agree.power == "every cell decided at 3 replicas × 30 units"
    split = fs.verdicts.replicated(fs.papers.basics.claim_deletion_sanity, frame, predictions, labels,
                                   n_null=200, seeds=2)
    assert split.replicas == (R, N, R) and split.verdict == I


def test_claim_deletion_sanity_premise_checks_every_replica():
    frame, predictions, labels = replicated_deletion((-0.1,) * 3)
    guesses = predictions.copy()
    guesses.loc[guesses["replica"] == 1, "predicted"] = CHANCE[:30]  # replica 1 did not learn the task
    claim = fs.papers.basics.claim_deletion_sanity(frame, guesses, labels, n_null=200)
    assert claim.verdict == T and "replica 1's accuracy" in claim.verdict.why
    assert "weakest, replica 1" in claim.premise
    with pytest.raises(ValueError, match="predictions must be a frame with the columns replica, sample"):
        fs.papers.basics.claim_deletion_sanity(frame, np.tile(labels, 3), np.tile(labels, 3))
    with pytest.raises(ValueError, match="must hold the replicas of deletion"):
        fs.papers.basics.claim_deletion_sanity(frame, predictions[predictions["replica"] < 2], labels)
    with pytest.raises(ValueError, match="missing \\['predicted'\\]"):
        fs.papers.basics.claim_deletion_sanity(frame, predictions.drop(columns="predicted"), labels)

"""The Basics chapter's sanity claim as a function (faithlab.protocols.basics): integrated gradients' deletion AUC
against the random explainer's (the null), with the premise that the classifier learned its task (above the
permuted-label and majority-class chance levels); synthetic frames give every verdict it can give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl

R, P, N, T, I = fl.verdicts.VERDICTS
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
    (deletion(-0.1), LABELS, LABELS, R, "interval"),       # IG's curve falls faster than random maps'
    (deletion(+0.1), LABELS, LABELS, N, "interval"),       # IG worse than random maps
    (deletion(0.0, noise=0.0), LABELS, LABELS, I, "interval"),  # IG within the random maps' spread: a tie, undecided
    (deletion(-0.1), CHANCE, LABELS, T, "permuted"),       # the model did not learn: at the permuted-label level
    (deletion(-0.1), MOSTLY_ZERO_GUESSES, MOSTLY_ZERO, T, "majority"),  # above permuted labels, below the majority
])
def test_claim_deletion_sanity_gives_every_verdict(frame, predictions, labels, expected, why):
    claim = fl.protocols.basics.claim_deletion_sanity(frame, predictions, labels, n_boot=1000, n_null=200)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert why in claim.verdict.why
    assert claim.claim == "IG deletion AUC below random (sanity check)" and "permuted" in claim.premise
    assert len(claim.table) == 1 and claim.table["samples"].iloc[0] == 60


def test_claim_deletion_sanity_needs_both_explainers_and_paired_labels():
    with pytest.raises(ValueError, match="explainers"):
        fl.protocols.basics.claim_deletion_sanity(deletion(0.0).query("explainer != 'random'"), LABELS, LABELS)
    with pytest.raises(ValueError, match="same N"):
        fl.protocols.basics.claim_deletion_sanity(deletion(0.0), LABELS[:10], LABELS)

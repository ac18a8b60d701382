"""F-Fidelity's robustness claims (Table 8, App. D.3) as functions decided by their registered rules: each gives every
verdict it can give on synthetic frames with a known answer and three trained replicas — reproduced, reproduced weaker
(shown in the paper's direction, short of the margin; for a rule whose margin lies beyond its value of no effect), not
reproduced by equivalence (a tight interval inside the band of no meaningful effect), not reproduced by reversal,
inconclusive (the interval reaches both the value of no effect and a margin), not testable (a premise fails) and, for
claims of named parts, partly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import faithlab as fl
import faithlab_study as fs

F = fs.papers.ffidelity
V = fs.verdicts
R, W, P, N, T, I = V.VERDICTS  # W: reproduced, weaker


# ------------------------------------------------------------------------------------------------ Table 8 frames
def table8(accuracy: dict[tuple[str, str], dict[str, tuple[float, float]]], *, n: int = 300, replicas: int = 3,
           spread: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Per-sample rows as the robustness notebook builds them: ``{(domain, architecture): {model: (accuracy at 0 %,
    at 10 %)}}``, for ``replicas`` trained replicas (a ``replica`` column). Every input of a replica has one latent
    u ~ U(0, 1) shared by the models and ratios (the same masked copies), and is right when u < accuracy (+ the
    replica's shift, ±``spread`` alternating, for the fine-tuned model): differences between models are paired, as
    in the notebook; u is evenly spread, the same in every replica, so the replicas differ only by ``spread``. Image
    and series inputs carry 10 balanced classes (chance 0.1), text inputs 2 (chance 0.5)."""
    rng = np.random.default_rng(seed)
    rows = []
    for (domain, arch), models in accuracy.items():
        u = rng.permutation((np.arange(n) + 0.5) / n)
        for r in range(replicas):
            shift = spread * (1 if r % 2 else -1)
            labels = np.arange(n) % (2 if domain == "text" else 10)
            for model, accs in models.items():
                s = shift if model == "fine-tuned" else 0.0
                for ratio, acc in zip((0.0, 0.05, 0.1), (accs[0], (accs[0] + accs[1]) / 2, accs[1])):
                    rows.append(pd.DataFrame({"domain": domain, "architecture": arch, "model": model, "ratio": ratio,
                                              "replica": r, "sample": range(n), "label": labels,
                                              "correct": (u < acc + s).astype(float)}))
    return pd.concat(rows, ignore_index=True)


def pair(clean: float, removed: float, tuned_clean: float, tuned_removed: float) -> dict[str, tuple[float, float]]:
    return {"original": (clean, removed), "fine-tuned": (tuned_clean, tuned_removed)}


RESTORES, NO_GAIN, NO_DROP = pair(0.9, 0.5, 0.89, 0.86), pair(0.9, 0.5, 0.9, 0.5), pair(0.9, 0.9, 0.9, 0.9)
COSTLY = pair(0.9, 0.5, 0.7, 0.86)        # restores, but costs 20 clean points: wholly below the −3.3 margin
WORSE = pair(0.9, 0.5, 0.7, 0.3)          # fine-tuning costs accuracy everywhere: reversed
SOME = pair(0.9, 0.5, 0.89, 0.515)        # restores 1.5 points at 10 %: shown, below the 2.98-point margin


@pytest.mark.parametrize("image, series, spread, expected, why", [
    (RESTORES, RESTORES, 0.0, R, "Table8.restore.clean: reproduced; Table8.restore.removed: reproduced"),
    (COSTLY, COSTLY, 0.0, P, "clean: not reproduced"),                # restored, at 20 clean points: partly
    (NO_GAIN, NO_GAIN, 0.0, P, "removed: not reproduced"),            # a tight tie at 10 %: shown inside the band
    (SOME, SOME, 0.0, W, "removed: reproduced, weaker"),              # restored, by less than the paper
    (WORSE, WORSE, 0.0, N, "clean: not reproduced"),                  # reversed in both parts
    (RESTORES, RESTORES, 0.12, I, "inconclusive"),                    # the replicas disagree: straddles
    (NO_DROP, NO_DROP, 0.0, T, "testable: 0 of 2 models"),           # nothing to restore (premise)
    (RESTORES, NO_DROP, 0.0, R, "reproduced"),                        # the series model leaves; the image holds
])
def test_claim_finetune_restores_gives_every_verdict(image, series, spread, expected, why):
    frame = table8({("images", "CNN"): image, ("time series", "CNN-1D"): series}, spread=spread)
    claim = F.claim_finetune_restores(frame)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert why in claim.verdict.why or why in claim.premise
    assert claim.rule_id == "Table8.restore" and claim.kind == "paper"
    if expected != T:
        assert claim.units == 900 and claim.kept_replicas == 3


def test_claim_finetune_restores_ignores_text_and_decides_per_replica():
    frame = table8({("images", "CNN"): RESTORES, ("text", "LSTM"): COSTLY})
    claim = F.claim_finetune_restores(frame)
    assert claim.verdict == R and list(claim.table["architecture"]) == ["CNN"]
    decided = V.replicated(F.claim_finetune_restores, frame, seeds=0)
    assert decided.verdict == R and decided.replicas == (R, R, R), decided.replicas  # one model: t on its inputs


# ------------------------------------------------------------------------------------------------ text robustness
TEXT_KEEPS, TEXT_DROPS = pair(0.9, 0.88, 0.9, 0.88), pair(0.9, 0.5, 0.9, 0.5)


@pytest.mark.parametrize("lstm, transformer, references, expected", [
    (TEXT_KEEPS, TEXT_KEEPS, RESTORES, R),      # text drops 2 points, the references 40
    (TEXT_KEEPS, TEXT_DROPS, RESTORES, N),      # the transformer drops as much as the references: absent
    (TEXT_KEEPS, pair(0.9, 0.53, 0.9, 0.53), RESTORES, W),  # the transformer drops 3 points less: below 6.8
    (pair(0.9, 0.56, 0.9, 0.56), TEXT_KEEPS, RESTORES, I),  # the LSTM's lead (6 points) straddles the 6.8 margin
    (TEXT_KEEPS, TEXT_KEEPS, NO_DROP, T),       # nothing hurts the references: robustness by construction
    (pair(0.5, 0.5, 0.5, 0.5), pair(0.5, 0.5, 0.5, 0.5), RESTORES, T),  # text models at chance: nothing to lose
])
def test_claim_text_robust_gives_every_verdict(lstm, transformer, references, expected):
    frame = table8({("images", "CNN"): references, ("text", "LSTM"): lstm, ("text", "Transformer"): transformer},
                   seed=3)
    if expected == I:  # replicas that disagree on the LSTM's drop
        frame.loc[(frame["architecture"] == "LSTM") & (frame["replica"] == 0) & (frame["ratio"] == 0.1),
                  "correct"] = 0.0
    claim = F.claim_text_robust(frame)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value, claim.table.to_dict("records"))
    assert claim.rule_id == "Table8.text" and "0.068" in claim.rule


def test_claim_text_robust_counts_only_the_named_text_models_and_needs_replicas():
    frame = table8({("images", "CNN"): RESTORES, ("text", "LSTM"): TEXT_KEEPS, ("text", "LSTM (pad)"): TEXT_DROPS})
    assert F.claim_text_robust(frame).verdict == N
    only = F.claim_text_robust(frame, text=["LSTM"])
    assert only.verdict == R and only.table.set_index("text model").loc["LSTM (pad)", "counted"] == False  # noqa: E712
    assert only.units == 900 and only.kept_replicas == 3
    with pytest.raises(ValueError, match="replica"):
        F.claim_text_robust(frame.drop(columns="replica"))


# ------------------------------------------------------------------------------------------------ App. D.3 frames
def boundary(accuracy: dict[float, float], agreement: dict[float, float], *, clean_accuracy: float = 0.9,
             clean_agreement: float = 0.9, n: int = 300, replicas: int = 3, spread: float = 0.0,
             seed: int = 0) -> pd.DataFrame:
    """Per-sample rows of the decision-boundary study: β 0 (original) and the fine-tuned β, ratios 0 and 0.5; at 0.5
    accuracy[β] and agreement[β] (a latent u per input shared by the models, so steps are paired); clean: every
    model right with clean_accuracy (the original's) and agreeing with clean_agreement. ``spread``: the replicas'
    shift (alternating ±) of the largest β at 0.5."""
    rng = np.random.default_rng(seed)
    top = max(accuracy)
    rows = []
    u, v = (rng.permutation((np.arange(n) + 0.5) / n) for _ in range(2))  # the same in every replica
    for r in range(replicas):
        labels = np.arange(n) % 10
        for b in accuracy:
            s = spread * (1 if r % 2 else -1) if b == top else 0.0
            for ratio in (0.0, 0.5):
                acc = (u < (clean_accuracy if ratio == 0 else accuracy[b] + s)).astype(float)
                agr = (v < (1.0 if b == 0 else clean_agreement if ratio == 0 else agreement[b] - s)).astype(float)
                rows.append(pd.DataFrame({"beta": b, "ratio": ratio, "replica": r, "sample": range(n),
                                          "label": labels, "accuracy": acc, "agreement with the original": agr}))
    return pd.concat(rows, ignore_index=True)


STEPS = {0.0: 0.2, 0.1: 0.4, 0.2: 0.6, 0.3: 0.8}
FALLS = {0.0: 1.0, 0.1: 0.8, 0.2: 0.6, 0.3: 0.4}


@pytest.mark.parametrize("accuracy, clean_accuracy, spread, expected", [
    (STEPS, 0.9, 0.0, R),                                        # the β range gains 60 points
    ({0.0: 0.2, 0.1: 0.4, 0.2: 0.6, 0.3: 0.2}, 0.9, 0.0, N),      # the largest β back at the original: inside the band
    ({0.0: 0.2, 0.1: 0.4, 0.2: 0.6, 0.3: 0.25}, 0.9, 0.0, W),     # the range gains 5 points: below 10
    ({0.0: 0.2, 0.1: 0.4, 0.2: 0.6, 0.3: 0.1}, 0.9, 0.0, N),      # the range loses: reversed
    ({0.0: 0.2, 0.1: 0.3, 0.2: 0.35, 0.3: 0.35}, 0.9, 0.3, I),   # the largest β's replicas disagree: straddles
    (STEPS, 0.2, 0.0, T),                                        # masking costs the original nothing (0.2 → 0.2)
])
def test_claim_beta_accuracy_gives_every_verdict(accuracy, clean_accuracy, spread, expected):
    frame = boundary(accuracy, FALLS, clean_accuracy=clean_accuracy, spread=spread)
    claim = F.claim_beta_accuracy(frame)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value)
    assert claim.rule_id == "D3.accuracy" and list(claim.table["cell"]) == ["β 0 → 0.3"]
    if expected != T:
        assert claim.units == 900 and claim.kept_replicas == 3


def test_claim_beta_accuracy_before_issue_90_judged_every_step_against_a_quarter_of_the_margin():
    """The verdict before issue 90 (the pre-registration page's list of moved verdicts) is the old rule's: every β
    step against 2.5 points. A range that gains 60 points with a flat last step was not reproduced then."""
    from faithlab_study.verdicts import decisions
    frame = boundary({0.0: 0.2, 0.1: 0.4, 0.2: 0.8, 0.3: 0.8}, FALLS)
    assert F.claim_beta_accuracy(frame).verdict == R
    token = decisions.BEFORE.set(True)
    try:
        old = F.claim_beta_accuracy(frame)
    finally:
        decisions.BEFORE.reset(token)
    assert old.verdict == N and len(old.table) == 3 and set(old.table["margin"]) == {0.025}


@pytest.mark.parametrize("agreement, clean_agreement, clean_accuracy, spread, expected", [
    (FALLS, 0.9, 0.9, 0.0, R),                                      # masked agreement falls 40 points, clean agrees
    (FALLS, 0.6, 0.9, 0.0, P),                                      # clean agreement 30 points short: partly
    ({0.0: 1.0, 0.1: 0.6, 0.2: 0.6, 0.3: 0.6}, 0.6, 0.9, 0.0, N),   # flat masked agreement (a tight tie), clean short
    ({0.0: 1.0, 0.1: 0.985, 0.2: 0.97, 0.3: 0.955}, 0.9, 0.9, 0.0, W),  # masked agreement falls 3 points: below 10
    (FALLS, 0.9, 0.9, 0.3, I),                                      # the largest β's replicas disagree: straddles
    (FALLS, 0.9, 0.1, 0.0, T),                                      # the original at chance (premise)
])
def test_claim_beta_agreement_gives_every_verdict(agreement, clean_agreement, clean_accuracy, spread, expected):
    frame = boundary(STEPS, agreement, clean_accuracy=clean_accuracy, clean_agreement=clean_agreement, spread=spread)
    claim = F.claim_beta_agreement(frame)
    assert claim.verdict == expected, (claim.verdict.why, claim.our_value, claim.premise)
    assert claim.rule_id == "D3.agreement" and claim.kind == "paper"
    assert set(claim.table["part"]) == {"masked agreement falls", "clean agreement"}


def test_claim_beta_agreement_needs_two_fine_tuned_betas():
    frame = boundary({0.0: 0.2, 0.1: 0.6}, {0.0: 1.0, 0.1: 0.6})
    assert F.claim_beta_agreement(frame).verdict == T

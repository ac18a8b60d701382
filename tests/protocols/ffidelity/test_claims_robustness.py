"""F-Fidelity's robustness (Table 8, App. D.3) and series/text ranking claims (Tables 3-4, 6-7) as functions: each
gives every verdict it can give on synthetic frames with a known answer and two trained replicas (a two-stage
bootstrap), a tie is inconclusive (never a failure, never "not testable"), each premise is a tolerance checked
before the outcome, and each claim takes ``seed`` and works on one replica's rows (``verdicts.replicated``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl

F = fl.protocols.ffidelity
V = fl.verdicts
R, P, N, T, I = V.VERDICTS


# ------------------------------------------------------------------------------------------------ Table 8 frames
def table8(accuracy: dict[tuple[str, str], dict[str, tuple[float, float]]], *, n: int = 300, replicas: int = 2,
           seed: int = 0) -> pd.DataFrame:
    """Per-sample rows as the robustness notebook builds them: ``{(domain, architecture): {model: (accuracy at 0 %,
    at 10 %)}}``, for ``replicas`` trained replicas (a ``replica`` column). Every input of a replica has one latent
    u ~ U(0, 1) shared by the models and ratios (the same masked copies), and is right when u < accuracy:
    differences between models are then paired, as in the notebook. Image and series inputs carry 10 balanced
    classes (chance 0.1), text inputs 2 (chance 0.5)."""
    rng = np.random.default_rng(seed)
    rows = []
    for (domain, arch), models in accuracy.items():
        for r in range(replicas):
            u = rng.random(n)
            labels = np.arange(n) % (2 if domain == "text" else 10)
            for model, accs in models.items():
                for ratio, acc in zip((0.0, 0.05, 0.1), (accs[0], (accs[0] + accs[1]) / 2, accs[1])):
                    rows.append(pd.DataFrame({"domain": domain, "architecture": arch, "model": model, "ratio": ratio,
                                              "replica": r, "sample": range(n), "label": labels,
                                              "correct": (u < acc).astype(float)}))
    return pd.concat(rows, ignore_index=True)


def pair(clean: float, removed: float, tuned_clean: float, tuned_removed: float) -> dict[str, tuple[float, float]]:
    return {"original": (clean, removed), "fine-tuned": (tuned_clean, tuned_removed)}


RESTORES, NO_GAIN, NO_DROP = pair(0.9, 0.5, 0.89, 0.86), pair(0.9, 0.5, 0.9, 0.5), pair(0.9, 0.9, 0.9, 0.9)
COSTLY = pair(0.9, 0.5, 0.7, 0.86)       # restores, but costs 20 clean points: wholly below the −5 margin
AT_MARGIN = pair(0.9, 0.5, 0.85, 0.86)   # costs 5 clean points: the interval straddles the −5 margin


@pytest.mark.parametrize("image, series, expected", [
    (RESTORES, RESTORES, R),    # both drop and both are restored at no clean cost
    (RESTORES, COSTLY, P),      # one of the two testable models holds, the other fails
    (COSTLY, COSTLY, N),        # a gain bought with 20 clean points, twice
    (NO_DROP, NO_DROP, T),      # nothing to restore: the originals do not drop (premise)
    (RESTORES, NO_DROP, R),     # the series model leaves the settings; the image model holds
    (RESTORES, NO_GAIN, I),     # fine-tuned = original at 10 %: a tie, undecided — never a failure
    (AT_MARGIN, AT_MARGIN, I),  # the non-inferiority interval straddles its margin: undecided, not failed
])
def test_claim_finetune_restores_gives_every_verdict(image, series, expected):
    claim = F.claim_finetune_restores(table8({("images", "CNN"): image, ("time series", "CNN-1D"): series}))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert claim.claim.startswith("Table 8: on images and time series") and "not lie wholly below" in claim.premise
    assert "−5 points" in claim.rule and "2 independently trained replicas" in claim.rule and claim.kind == "paper"
    assert claim.verdict.decision and (claim.units == 600 or expected == T)
    table = claim.table.set_index("architecture")
    assert table.loc["CNN", "testable"] == (image is not NO_DROP)
    assert table.loc["CNN", "original drop"] == pytest.approx(image["original"][0] - image["original"][1], abs=0.06)


def test_claim_finetune_restores_ignores_text_and_names_the_cost_margin():
    frame = table8({("images", "CNN"): RESTORES, ("text", "LSTM"): NO_GAIN})
    claim = F.claim_finetune_restores(frame, margin=0.04)
    assert claim.verdict == R and list(claim.table["architecture"]) == ["CNN"] and "−4 points" in claim.rule
    with pytest.raises(ValueError, match="no model of the domains"):
        F.claim_finetune_restores(frame, domains=("audio",))


ROBUST, FRAGILE, AT_CHANCE = pair(0.9, 0.88, 0.9, 0.88), pair(0.9, 0.4, 0.9, 0.85), pair(0.35, 0.35, 0.35, 0.35)


@pytest.mark.parametrize("lstm, transformer, references, expected", [
    (ROBUST, ROBUST, (FRAGILE, pair(0.9, 0.6, 0.9, 0.85)), R),  # both text drops far below both references
    (ROBUST, FRAGILE, (pair(0.9, 0.6, 0.9, 0.85),) * 2, P),     # one text model drops more than the references
    (FRAGILE, FRAGILE, (pair(0.9, 0.7, 0.9, 0.85),) * 2, N),    # text drops more than every reference
    (ROBUST, ROBUST, (NO_DROP, NO_DROP), T),                    # removal hurts no reference: true by construction
    (AT_CHANCE, AT_CHANCE, (FRAGILE, FRAGILE), T),              # text at chance has no accuracy to lose
    (FRAGILE, FRAGILE, (FRAGILE, FRAGILE), I),                  # the same drops: every pair a tie, undecided
])
def test_claim_text_robust_gives_every_verdict(lstm, transformer, references, expected):
    frame = table8({("images", "CNN"): references[0], ("time series", "CNN-1D"): references[1],
                    ("text", "LSTM (zero embedding)"): lstm, ("text", "Transformer (zero embedding)"): transformer,
                    ("text", "LSTM (pad deletion)"): FRAGILE})  # shown, not counted
    claim = F.claim_text_robust(frame, text=["LSTM (zero embedding)", "Transformer (zero embedding)"])
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert len(claim.table) == 3 * 2 and not claim.table[claim.table["text model"].str.contains("pad")]["counted"].any()
    assert "removal can hurt" in claim.premise and "majority-class share" in claim.premise
    assert "margin 0" in claim.rule


def test_claim_text_robust_counts_the_pad_variant_when_asked():
    frame = table8({("images", "CNN"): FRAGILE, ("text", "LSTM (zero embedding)"): ROBUST,
                    ("text", "LSTM (pad deletion)"): pair(0.9, 0.2, 0.9, 0.85)})
    assert F.claim_text_robust(frame, text=["LSTM (zero embedding)"]).verdict == R
    assert F.claim_text_robust(frame).verdict == P  # both text models count: the pad deletion drops more (1 of 2)


# ------------------------------------------------------------------------------------------------- D.3 frames
def boundary(accuracy: dict[float, tuple[float, float]], agreement: dict[float, tuple[float, float]], *,
             n: int = 300, n_classes: int = 10, replicas: int = 2, seed: int = 0) -> pd.DataFrame:
    """Per-sample rows as the robustness notebook's decision-boundary study builds them: ``accuracy[β] = (clean,
    at 50 %)`` and ``agreement[β]`` alike (β = 0 is the original: agreement 1), from latents shared by the models
    of a replica."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(replicas):
        u, w = rng.random(n), rng.random(n)
        for beta, (clean, top) in accuracy.items():
            agree = agreement.get(beta, (1.0, 1.0))
            for ratio, acc, agr in ((0.0, clean, agree[0]), (0.5, top, agree[1])):
                rows.append(pd.DataFrame({"beta": beta, "model": "original" if beta == 0 else f"β = {beta:g}",
                                          "ratio": ratio, "replica": r, "sample": range(n),
                                          "label": np.arange(n) % n_classes, "accuracy": (u < acc).astype(float),
                                          "agreement with the original": (w < agr).astype(float)}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("top, expected", [
    ({0.0: 0.3, 0.1: 0.5, 0.3: 0.7}, R),               # every larger β keeps more accuracy
    ({0.0: 0.3, 0.1: 0.6, 0.3: 0.5}, P),               # one step up, one significantly down
    ({0.0: 0.5, 0.1: 0.4, 0.3: 0.3}, N),               # every larger β keeps less
    ({0.0: 0.3, 0.1: 0.6, 0.2: 0.7, 0.3: 0.5}, P),     # 2 of 3 steps, but the largest β falls back: capped
    ({0.0: 0.3, 0.1: 0.6, 0.2: 0.6, 0.3: 0.5}, P),     # up, tie, down: 1/3 or (capped) 2/3 — partly either way
    ({0.0: 0.3, 0.1: 0.3, 0.3: 0.3}, I),               # fine-tuning changes nothing: ties, undecided
    ({0.0: 0.9, 0.1: 0.9, 0.3: 0.9}, T),               # masking costs the original nothing (premise)
])
def test_claim_beta_accuracy_gives_every_verdict(top, expected):
    claim = F.claim_beta_accuracy(boundary({b: (0.9, a) for b, a in top.items()}, {}))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert len(claim.table) == len(top) - 1 and "50 %" in claim.rule and "not lie wholly below" in claim.premise
    assert "caps" in claim.verdict.decision and claim.units == 600


@pytest.mark.parametrize("agreement, clean_accuracy, expected", [
    ({0.1: (0.93, 0.8), 0.2: (0.92, 0.6), 0.3: (0.9, 0.4)}, 0.9, R),  # falls with β; clean agreement kept
    ({0.1: (0.6, 0.8), 0.2: (0.6, 0.6), 0.3: (0.6, 0.4)}, 0.9, P),    # falls, but clean agreement is lost
    ({0.1: (0.6, 0.4), 0.2: (0.6, 0.6), 0.3: (0.6, 0.8)}, 0.9, N),    # rises with β, clean agreement lost
    ({0.1: (0.93, 0.6), 0.2: (0.92, 0.6), 0.3: (0.9, 0.6)}, 0.9, I),  # flat: (a) undecided, (b) holds
    ({0.1: (0.93, 0.8), 0.2: (0.92, 0.6), 0.3: (0.9, 0.4)}, 0.1, T),  # the original is at chance (10 classes)
    ({0.3: (0.9, 0.4)}, 0.9, T),                                      # one fine-tuned β: no step to compare
])
def test_claim_beta_agreement_gives_every_verdict(agreement, clean_accuracy, expected):
    accuracy = {0.0: (clean_accuracy, 0.3), **{b: (clean_accuracy, 0.6) for b in agreement}}
    claim = F.claim_beta_agreement(boundary(accuracy, agreement))
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why)
    assert "majority-class share" in claim.premise and "(a)" in claim.rule and "(b)" in claim.rule
    assert "−5 points" in claim.rule and "inconclusive when the two disagree" in claim.verdict.decision


# --------------------------------------------------------------------------------------- series / text frames
XI = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
LEVELS = [0.1, 0.3, 0.5, 0.7, 0.9]


def frames(quality: dict[tuple[str, str], float], *, n_seeds: int = 4, noise: float = 0.1, replicas: int = 2,
           seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The notebook's micro_cells and ground_truth_null frames of synthetic curves, per replica (a ``replica``
    column): for ``quality[model, method]`` = q the "+" curve falls with ξ and the "−" curve rises (the ideal
    rankings, −1 / +1 / −1) with slope q, plus noise; q = 0 gives curves unrelated to ξ (chance)."""
    g = torch.Generator().manual_seed(seed)
    xi = torch.tensor(XI, dtype=torch.float64).view(1, -1, 1)
    methods = list(dict.fromkeys(m for _, m in quality))
    common = {"noise_levels": XI, "sparsity": LEVELS, "methods": methods, "group": "model"}
    cells, nulls = [], []
    for r in range(replicas):
        P_, Q_ = {}, {}
        for key, q in quality.items():
            P_[key] = -q * xi + noise * torch.randn(n_seeds, len(XI), len(LEVELS), generator=g, dtype=torch.float64)
            Q_[key] = q * xi + noise * torch.randn(n_seeds, len(XI), len(LEVELS), generator=g, dtype=torch.float64)
        cells.append(F.micro_cells(P_, Q_, **common).assign(replica=r))
        nulls.append(F.ground_truth_null(P_, Q_, n_draws=200, seed=r, **common))
    return pd.concat(cells, ignore_index=True), pd.concat(nulls, ignore_index=True)


TS = ("Fidelity", "ROAR", "R-Fidelity", "F-Fidelity")


@pytest.mark.parametrize("quality, expected", [
    ((0.1, 0.1, 1.0, 1.0), R),   # beats Fidelity and ROAR, ties R-Fidelity: 2 of 3 pairs however the tie falls
    ((0.1, 1.0, 1.0, 0.5), P),   # beats Fidelity, loses to ROAR and R-Fidelity
    ((0.6, 1.0, 1.0, 0.2), N),   # loses to every competitor
    ((0.2, 1.0, 1.0, 1.0), I),   # beats Fidelity, ties ROAR and R-Fidelity: 1/3 or 3/3
    ((0.0, 0.0, 0.0, 0.0), T),   # no method beyond the permuted-order chance range: the ranks compare noise
    ((1.0, 0.1, 0.1, 1.0), T),   # Fidelity already ideal: nothing can beat it
])
def test_claim_series_ranking_gives_every_verdict(quality, expected):
    cells, null = frames({("CNN-1D", m): q for m, q in zip(TS, quality)})
    claim = F.claim_series_ranking(cells, null, models=["CNN-1D"])
    assert claim.verdict == expected, (claim.our_value, claim.premise, claim.verdict.why)
    assert claim.claim.startswith("Time series: F-Fidelity recovers") and "permuted" in claim.premise
    assert len(claim.table) == 3 and set(claim.table["competitor"]) == {"Fidelity", "ROAR", "R-Fidelity"}
    assert "margin 0" in claim.rule and "2 independently trained replicas" in claim.rule
    assert claim.units == (None if expected == T else 2 * 4 * len(LEVELS))


def test_claim_series_ranking_is_decided_over_models():
    good, bad = (0.1, 0.1, 1.0, 1.0), (0.6, 1.0, 1.0, 0.2)
    cells, null = frames({**{("A", m): q for m, q in zip(TS, good)}, **{("B", m): q for m, q in zip(TS, bad)}})
    claim = F.claim_series_ranking(cells, null, models=["A", "B"])
    assert claim.verdict == P, claim.verdict.why  # 2 of 6 pairs hold (A's), B's fail, A's tie: 2/6 or 3/6, partly
    assert "2 of 6" in claim.verdict.why and len(claim.table) == 6
    with pytest.raises(ValueError, match="null holds no draws"):
        F.claim_series_ranking(cells, null[null["model"] == "A"], models=["A", "B"])


TEXT = ("Fidelity", "R-Fidelity", "F-Fidelity")
ZERO = ("LSTM (zero embedding)", "Transformer (zero embedding)")


@pytest.mark.parametrize("fidelity, expected", [
    ((1.0, 1.0), R),    # Fidelity ranks as well as F-Fidelity for both models
    ((1.0, 0.05), P),   # one model of two
    ((0.05, 0.05), N),  # Fidelity is above chance but clearly worse for both
    ((0.0, 0.0), T),    # Fidelity at chance: "equal" would hold by construction
    ((0.12, 0.12), I),  # both intervals straddle the margin: undecided, never failed nor "not testable"
    ((1.0, 0.12), I),   # one model equivalent, the other undecided: 1/2 or 2/2
])
def test_claim_text_equivalence_gives_every_verdict(fidelity, expected):
    quality = {(m, "R-Fidelity"): 1.0 for m in (*ZERO, "LSTM (pad deletion)")}
    quality |= {(m, "F-Fidelity"): 1.0 for m in (*ZERO, "LSTM (pad deletion)")}
    quality |= {(m, "Fidelity"): q for m, q in zip(ZERO, fidelity)} | {("LSTM (pad deletion)", "Fidelity"): 0.05}
    cells, null = frames(quality, noise=0.02)
    claim = F.claim_text_equivalence(cells, null, models=[*ZERO, "LSTM (pad deletion)"], counted=ZERO)
    assert claim.verdict == expected, (claim.our_value, claim.premise, claim.verdict.why)
    table = claim.table.set_index("model")
    assert not table.loc["LSTM (pad deletion)", "counted"] and table.loc["LSTM (pad deletion)", "outcome"] == "different"
    assert claim.claim.startswith("Text: models are robust to removal, so Fidelity ≈ F-Fidelity")
    assert "permuted" in claim.premise and "equivalence margin ±0.1" in claim.rule
    assert (table.loc[list(ZERO), "outcome"] == "undecided").sum() == sum(q == 0.12 for q in fidelity)


# ------------------------------------------------------------------------------- the procedure: seed and replicas
def _calls():
    t8 = table8({("images", "CNN"): RESTORES, ("time series", "CNN-1D"): RESTORES,
                 ("text", "LSTM (zero embedding)"): ROBUST})
    b = boundary({0.0: (0.9, 0.3), 0.1: (0.9, 0.5), 0.3: (0.9, 0.7)},
                 {0.1: (0.93, 0.8), 0.3: (0.9, 0.4)})
    ts_cells, ts_null = frames({("CNN-1D", m): q for m, q in zip(TS, (0.1, 0.1, 1.0, 1.0))})
    tx_cells, tx_null = frames({(m, k): 1.0 for m in ZERO for k in TEXT}, noise=0.1)
    return [(F.claim_finetune_restores, (t8,), {}), (F.claim_text_robust, (t8,), {}),
            (F.claim_beta_accuracy, (b,), {}), (F.claim_beta_agreement, (b,), {}),
            (F.claim_series_ranking, (ts_cells, ts_null), {"models": ["CNN-1D"]}),
            (F.claim_text_equivalence, (tx_cells, tx_null), {"models": list(ZERO)})]


def test_every_claim_takes_seed_and_one_replicas_rows():
    for fn, args, kwargs in _calls():
        full = fn(*args, **kwargs, seed=0)
        assert full.verdict in V.DECIDED, (fn.__name__, full.verdict.why)
        # the bootstrap seed is used: another seed gives other interval ends in the table
        other = fn(*args, **kwargs, seed=7)
        numbers = full.table.select_dtypes("number").columns
        assert not full.table[numbers].equals(other.table[numbers]), fn.__name__
        one = fn(*(V._subset(a, "replica", 0) for a in args), **kwargs, seed=0)  # one replica's rows alone
        assert one.verdict in V.VERDICTS and "one trained model per setting" in one.rule, fn.__name__
        assert full.units is not None and one.units is not None and one.units < full.units, fn.__name__


def test_replicated_decides_each_claim_per_replica_and_seed():
    fn, args, kwargs = _calls()[0]
    claim = V.replicated(fn, *args, **kwargs, seed=0)
    assert len(claim.replicas) == 2 and len(claim.stability) == V.STABILITY_SEEDS
    assert claim.raw == R and claim.replica_agreement == "2 of 2 replicas"
    assert claim.verdict == I and "below the 3 independently trained replicas" in claim.verdict.why  # the house's 3
    three = table8({("images", "CNN"): RESTORES, ("time series", "CNN-1D"): RESTORES}, replicas=3)
    claim = V.replicated(fn, three, seed=0, seeds=3)
    assert claim.verdict == R and claim.replica_agreement == "3 of 3 replicas"
    small = table8({("images", "CNN"): RESTORES}, n=10)  # 20 inputs pooled: underpowered, published inconclusive
    assert V.replicated(F.claim_finetune_restores, small, seed=0).verdict in (I, T)


def test_rules_state_no_threshold():
    for fn, args, kwargs in _calls():
        rule = fn(*args, **kwargs).rule.lower()
        assert not any(w in rule for w in ("reproduced when", "partly from", "2/3", "1/3")), fn.__name__


# ------------------------------------------------------------- two-stage intervals: the replicas are resampled
def by_replica(builder, specs: list[tuple], **kwargs) -> pd.DataFrame:
    """One frame of ``builder(*spec, replicas=1)`` per replica, its ``replica`` column set to the spec's index (each
    replica with its own latents): replicas whose effects differ as the specs do."""
    return pd.concat([builder(*spec, replicas=1, seed=r, **kwargs).assign(replica=r) for r, spec in enumerate(specs)],
                     ignore_index=True)


def test_claim_finetune_restores_resamples_the_replicas():
    """Replica 0 restores accuracy at 10 % (+36 points), replica 1 loses 20 points: pooled as one model the mean
    gain (+8) is decided, but over two trained models the interval spans both and straddles 0."""
    split = by_replica(table8, [({("images", "CNN"): RESTORES, ("time series", "CNN-1D"): RESTORES},),
                                ({("images", "CNN"): pair(0.9, 0.5, 0.89, 0.3),
                                  ("time series", "CNN-1D"): pair(0.9, 0.5, 0.89, 0.3)},)])
    nested = F.claim_finetune_restores(split)
    pooled = F.claim_finetune_restores(split.assign(replica=0))
    assert pooled.verdict == R, pooled.verdict.why
    assert nested.verdict == I, nested.verdict.why
    assert set(nested.table["restored"]) == {"undecided"} and "2 independently trained replicas" in nested.rule
    gain = nested.table.set_index("architecture").loc["CNN"]
    assert gain["gain low"] < 0 < gain["gain high"] and nested.units == pooled.units == 600


def test_claim_text_robust_resamples_the_replicas():
    """The text model drops 2 points in replica 0 and 40 in replica 1 (the reference 30 in both): pooled, its mean
    drop (21) is decided smaller than the reference's; over two trained models the interval straddles 0."""
    ref = pair(0.9, 0.6, 0.9, 0.85)
    text = "LSTM (zero embedding)"
    split = by_replica(table8, [({("images", "CNN"): ref, ("text", text): ROBUST},),
                                ({("images", "CNN"): ref, ("text", text): pair(0.9, 0.5, 0.9, 0.5)},)])
    assert F.claim_text_robust(split.assign(replica=0)).verdict == R
    nested = F.claim_text_robust(split)
    assert nested.verdict == I, nested.verdict.why
    row = nested.table.iloc[0]
    assert row["low"] < 0 < row["high"] and row["outcome"] == "tie"


def test_claim_beta_accuracy_resamples_the_replicas():
    """At 50 % masking β = 0.1 keeps 40 points more than the original in replica 0 and 10 fewer in replica 1."""
    split = by_replica(boundary, [({0.0: (0.9, 0.3), 0.1: (0.9, 0.7)}, {}), ({0.0: (0.9, 0.3), 0.1: (0.9, 0.2)}, {})])
    pooled = F.claim_beta_accuracy(split.assign(replica=0))
    nested = F.claim_beta_accuracy(split)
    assert pooled.verdict == R, pooled.verdict.why
    assert nested.verdict == I, nested.verdict.why
    step = nested.table.iloc[0]
    assert step["low"] < 0 < step["high"] and step["outcome"] == "tie" and nested.units == 600


def test_claim_beta_agreement_resamples_the_replicas():
    """Part (a): agreement at 50 % falls from β 0.1 to 0.3 by 40 points in replica 0 and rises by 10 in replica 1;
    part (b) holds in both. Pooled, (a) is decided (falls); over two trained models it straddles 0."""
    accuracy = {0.0: (0.9, 0.3), 0.1: (0.9, 0.6), 0.3: (0.9, 0.6)}
    split = by_replica(boundary, [(accuracy, {0.1: (0.93, 0.8), 0.3: (0.93, 0.4)}),
                                  (accuracy, {0.1: (0.93, 0.6), 0.3: (0.93, 0.7)})])
    pooled = F.claim_beta_agreement(split.assign(replica=0))
    nested = F.claim_beta_agreement(split)
    assert pooled.verdict == R, pooled.verdict.why
    assert nested.verdict == I, nested.verdict.why
    step = nested.table[nested.table["part"].str.startswith("(a)")].iloc[0]
    assert step["low"] < 0 < step["high"] and step["holds"] == "undecided"

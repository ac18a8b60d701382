"""ReCo/MeGe's R5 (k identical models give MeGe = 1) as a claim function: an identity of the definitions, checked
as a pipeline check that can come out either way — a broken pipeline (the k "identical" models do not share their
maps) is not reproduced, and a contrast at 1 (maps of different images also at MeGe = 1) makes a cell untestable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics.papers.reco_mege.crossfold import (pair_distances, reco_mege_details_from_predictions,
                                                         shuffled_distances, shuffled_partners)

P = fs.papers.reco_mege
identical = P.experiments.identical
REP, W, PART, NOT, UNTESTABLE, INCONCLUSIVE = fs.verdicts.VERDICTS  # W: reproduced, weaker


def cross(k: int = 3, n: int = 24, seed: int = 0):
    """Maps ``(k, N, 1, 6, 6)`` of k different models, labels, every prediction right, folds."""
    g = torch.Generator().manual_seed(seed)
    maps = torch.randn(k, n, 1, 6, 6, generator=g)
    labels = torch.randint(0, 3, (n,), generator=g)
    return maps, labels.expand(k, n).clone(), labels, torch.arange(n) % k


def identical_row(task: str, *, broken: float = 0.0, wrong: bool = False, seed: int = 0) -> pd.DataFrame:
    """What identical_models gives for one cell: model 0's maps and predictions copied k times, per sample. broken:
    a faulty pipeline that adds noise of that size to the copies (they are no longer identical); wrong: every
    prediction wrong (S= empty)."""
    maps, preds, labels, folds = cross(seed=seed)
    copies = maps[:1].expand_as(maps).clone()
    copies[1:] += broken * torch.randn(copies[1:].shape, generator=torch.Generator().manual_seed(seed + 1))
    preds = ((labels + 1) % 3 if wrong else preds[0]).expand_as(preds)
    d = reco_mege_details_from_predictions(copies, preds, labels, folds, channel_dim=-3)
    return identical.per_image(d, mege=d["mege"]).assign(task=task, method="SA")


def contrast_rows(task: str, seed: int = 0) -> pd.DataFrame:
    """The chapter's null for a cell: null_frame of k different models with the image pairings shuffled."""
    maps, preds, labels, folds = cross(seed=seed)
    pairs = pair_distances(maps, preds, labels, folds, channel_dim=-3)
    partners = shuffled_partners((pairs.kind == 0).any(1), generator=seed)
    shuffled = shuffled_distances(maps, folds, partners, channel_dim=-3)
    return P.null_frame({"SA": P.with_null(pairs, shuffled, partners)}, task=task)


def frames(case: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    tasks = ["A", "B"]
    contrast = pd.concat([contrast_rows(t, seed=i) for i, t in enumerate(tasks)], ignore_index=True)
    same = pd.concat([identical_row(t, seed=i) for i, t in enumerate(tasks)], ignore_index=True)
    if case == "identical":
        return same, contrast
    if case == "identical, no contrast":
        return same, None
    if case == "broken pipeline":
        return pd.concat([identical_row("A"), identical_row("B", broken=0.5, seed=1)], ignore_index=True), contrast
    if case == "float noise at the margin":   # distances scattered around the tolerance: the interval straddles it
        noisy = same.copy()
        noisy["S= distance"] = 1e-6 + 3e-6 * np.random.default_rng(0).normal(size=len(noisy))
        return noisy, contrast
    if case == "contrast at 1":
        return same, contrast.assign(**{"MeGe (shuffled)": 1.0})
    if case == "no S= pair":
        return pd.concat([identical_row(t, wrong=True, seed=i) for i, t in enumerate(tasks)], ignore_index=True), \
            contrast
    raise ValueError(case)


@pytest.mark.parametrize("case, expected", [
    ("identical", REP), ("identical, no contrast", REP), ("broken pipeline", NOT),
    ("float noise at the margin", INCONCLUSIVE), ("contrast at 1", UNTESTABLE), ("no S= pair", UNTESTABLE),
])
def test_claim_r5_gives_every_verdict(case, expected):
    same, contrast = frames(case)
    claim = P.claim_identical_models(same, contrast)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.table)
    assert claim.claim.startswith("R5: k identical models give MeGe = 1") and claim.rule_id == "R5"
    assert claim.kind == "study check" and claim.decision and not claim.trained
    assert "pipeline" in claim.premise and "identity" in claim.premise
    if case == "identical":
        assert (claim.table["MeGe (different images)"] < 0.9).all() and (claim.table["outcome"] == "holds").all()
        assert claim.units == 24 and (claim.table["high"] == 0).all()       # exactly 0: an interval of no width
    if case == "identical, no contrast":
        assert "no contrast given" in claim.premise
    if case == "broken pipeline":
        assert list(claim.table["outcome"]) == ["holds", "absent"] and claim.table["MeGe"].iloc[1] < 1 - 1e-3
    if case == "contrast at 1":
        assert (claim.table["status"] == "maps of different images also give MeGe = 1").all()
        assert "also give MeGe = 1" in claim.verdict.why
    if case == "no S= pair":
        assert (claim.table["images"] == 0).all() and "S= pair" in claim.verdict.why


def test_claim_r5_cells_without_s_equal_are_not_testable():
    rows = pd.concat([identical_row("A"), identical_row("B", wrong=True)], ignore_index=True)
    contrast = pd.concat([contrast_rows("A"), contrast_rows("B", seed=1)], ignore_index=True)
    claim = P.claim_identical_models(rows, contrast)
    assert claim.verdict == REP and list(claim.table["outcome"]) == ["holds", "not testable"]
    assert "B SA" in claim.premise and "1 of 2 not testable" in claim.our_value
    none = P.claim_identical_models(identical_row("B", wrong=True), contrast)
    assert none.verdict == UNTESTABLE and "S= pair" in none.verdict.why


def test_claim_r5_bad_arguments():
    same, contrast = frames("identical")
    with pytest.raises(ValueError, match="S= distance"):
        P.claim_identical_models(same.drop(columns="S= distance"))
    with pytest.raises(ValueError, match="key columns"):
        P.claim_identical_models(same.drop(columns=["task", "method"]))
    with pytest.raises(ValueError, match="MeGe \\(shuffled\\)"):
        P.claim_identical_models(same, contrast.drop(columns="MeGe (shuffled)"))
    with pytest.raises(ValueError, match="duplicates"):
        P.claim_identical_models(same, pd.concat([contrast, contrast]))
    with pytest.raises(ValueError, match="tolerance"):
        P.claim_identical_models(same, tolerance=0.5)

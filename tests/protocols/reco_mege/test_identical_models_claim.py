"""ReCo/MeGe's R5 (k identical models give MeGe = 1) as a claim function: an identity of the definitions, checked
as a pipeline check that can come out either way — a broken pipeline (the k "identical" models do not share their
maps) is not reproduced, and a contrast at 1 (maps of different images also at MeGe = 1) makes a cell untestable."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.metrics.papers.reco_mege.crossfold import (pair_distances, reco_mege_details_from_predictions,
                                                         shuffled_distances, shuffled_partners)

P = fl.protocols.reco_mege
REP, PART, NOT, UNTESTABLE, INCONCLUSIVE = fl.verdicts.VERDICTS


def cross(k: int = 3, n: int = 24, seed: int = 0):
    """Maps ``(k, N, 1, 6, 6)`` of k different models, labels, every prediction right, folds."""
    g = torch.Generator().manual_seed(seed)
    maps = torch.randn(k, n, 1, 6, 6, generator=g)
    labels = torch.randint(0, 3, (n,), generator=g)
    return maps, labels.expand(k, n).clone(), labels, torch.arange(n) % k


def identical_row(task: str, *, broken: float = 0.0, wrong: bool = False, seed: int = 0) -> dict:
    """What identical_models gives for one cell: model 0's maps and predictions copied k times. broken: a faulty
    pipeline that adds noise of that size to the copies (they are no longer identical); wrong: every prediction
    wrong (S= empty)."""
    maps, preds, labels, folds = cross(seed=seed)
    copies = maps[:1].expand_as(maps).clone()
    copies[1:] += broken * torch.randn(copies[1:].shape, generator=torch.Generator().manual_seed(seed + 1))
    preds = ((labels + 1) % 3 if wrong else preds[0]).expand_as(preds)
    d = reco_mege_details_from_predictions(copies, preds, labels, folds, channel_dim=-3)
    dist = d["pairs"].distance
    return {"task": task, "method": "SA", "MeGe": d["mege"],
            "max distance": float(dist[~dist.isnan()].max()) if (~dist.isnan()).any() else 0.0,
            "n S=": d["counts"]["S="]}


def contrast_rows(task: str, seed: int = 0) -> pd.DataFrame:
    """The chapter's null for a cell: null_frame of k different models with the image pairings shuffled."""
    maps, preds, labels, folds = cross(seed=seed)
    pairs = pair_distances(maps, preds, labels, folds, channel_dim=-3)
    partners = shuffled_partners((pairs.kind == 0).any(1), generator=seed)
    shuffled = shuffled_distances(maps, folds, partners, channel_dim=-3)
    return P.null_frame({"SA": P.with_null(pairs, shuffled, partners)}, n_boot=200, task=task)


def frames(case: str) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    tasks = ["A", "B"]
    contrast = pd.concat([contrast_rows(t, seed=i) for i, t in enumerate(tasks)], ignore_index=True)
    if case == "identical":
        return pd.DataFrame([identical_row(t, seed=i) for i, t in enumerate(tasks)]), contrast
    if case == "identical, no contrast":
        return pd.DataFrame([identical_row(t, seed=i) for i, t in enumerate(tasks)]), None
    if case == "broken pipeline":
        return pd.DataFrame([identical_row("A"), identical_row("B", broken=0.5, seed=1)]), contrast
    if case == "contrast at 1":
        return (pd.DataFrame([identical_row(t, seed=i) for i, t in enumerate(tasks)]),
                contrast.assign(**{"MeGe (shuffled)": 1.0}))
    if case == "no S= pair":
        return pd.DataFrame([identical_row(t, wrong=True, seed=i) for i, t in enumerate(tasks)]), contrast
    raise ValueError(case)


@pytest.mark.parametrize("case, expected", [
    ("identical", REP), ("identical, no contrast", REP), ("broken pipeline", NOT), ("contrast at 1", UNTESTABLE),
    ("no S= pair", UNTESTABLE),
])
def test_claim_r5_gives_every_verdict(case, expected):
    identical, contrast = frames(case)
    claim = P.claim_identical_models(identical, contrast)
    assert claim.verdict == expected, (claim.our_value, claim.verdict.why, claim.table)
    assert claim.claim.startswith("R5: k identical models give MeGe = 1")
    assert claim.kind == "study check" and claim.decision                 # an identity: shown apart, rule generated
    assert "pipeline" in claim.premise and "no null can apply" in claim.premise
    if case == "identical":
        assert (claim.table["MeGe (different images)"] < 0.9).all()      # the contrast is far from the identity
        assert "not met by any maps" in claim.premise
    if case == "identical, no contrast":
        assert "no contrast given" in claim.premise
    if case == "broken pipeline":
        assert list(claim.table["status"]) == ["holds", "fails"] and claim.table["MeGe"].iloc[1] < 1 - 1e-3
    if case == "contrast at 1":
        assert (claim.table["status"] == "contrast at 1").all() and "also give MeGe = 1" in claim.verdict.why
    if case == "no S= pair":
        assert (claim.table["n S="] == 0).all() and "no S= pair" in claim.verdict.why


def test_claim_r5_cells_without_s_equal_are_not_testable():
    rows = [identical_row("A"), {"task": "B", "method": "SA", "MeGe": float("nan"), "max distance": 0.0, "n S=": 0}]
    contrast = pd.concat([contrast_rows("A"), contrast_rows("B", seed=1)], ignore_index=True)
    claim = P.claim_identical_models(pd.DataFrame(rows), contrast)
    assert claim.verdict == REP and list(claim.table["status"]) == ["holds", "no S= pair"]
    assert "B SA" in claim.premise and "1 of 2 not testable" in claim.our_value
    none = P.claim_identical_models(pd.DataFrame(rows[1:]), contrast)
    assert none.verdict == UNTESTABLE and "no S= pair" in none.verdict.why
    # a NaN MeGe where S= has pairs is a broken pipeline, not an undefined cell
    nan = P.claim_identical_models(pd.DataFrame([{**rows[0], "MeGe": float("nan")}]), contrast)
    assert nan.verdict == NOT


def test_claim_r5_bad_arguments():
    identical, contrast = frames("identical")
    with pytest.raises(ValueError, match="max distance"):
        P.claim_identical_models(identical.drop(columns="max distance"))
    with pytest.raises(ValueError, match="MeGe \\(shuffled\\)"):
        P.claim_identical_models(identical, contrast.drop(columns="MeGe (shuffled)"))
    with pytest.raises(ValueError, match="duplicates"):
        P.claim_identical_models(identical, pd.concat([contrast, contrast]))
    with pytest.raises(ValueError, match="tolerance"):
        P.claim_identical_models(identical, tolerance=0.5)

"""The paper's numbers (HAL v1, typed from its tables, :data:`PAPER`) and our tables beside them, with the rank
agreement over methods (:func:`rank_agreement`, :func:`beside`)."""

from __future__ import annotations

import math

import pandas as pd

from faithlab_study.papers.reco_mege.setup import DEGRADATIONS

__all__ = ["PAPER", "LIPSCHITZ_TASK", "rank_agreement", "beside", "quoted", "margins"]

LIPSCHITZ_TASK = "CIFAR-10"
"""The task of the paper's 1-Lipschitz family (Tables 4–5, Fig. 5): CIFAR-10 only."""


_M5 = ("IG", "SG", "SA", "GI", "GC")

PAPER: dict[str, pd.DataFrame] = {
    "Table 1": pd.DataFrame([[0.369, 0.125, 0.1, 0.369, 0.517], [0.309, 0.182, 0.177, 0.241, 0.591],
                             [0.107, 0.154, 0.151, 0.088, 0.637], [0.018, 0.132, 0.131, 0.004, 0.8]],
                            index=["FashionMNIST", "EuroSAT", "CIFAR-10", "CIFAR-100"], columns=_M5),
    "Table 2": pd.DataFrame([[0.904, 0.362, 0.304, 0.906, 0.765], [0.404, 0.415, 0.41, 0.412, 0.667],
                             [0.584, 0.457, 0.449, 0.552, 0.723], [0.595, 0.499, 0.495, 0.571, 0.777]],
                            index=["FashionMNIST", "EuroSAT", "CIFAR-10", "CIFAR-100"], columns=_M5),
    "Table 3": pd.DataFrame([[0.107, 0.305, 0.229, 0.101, 0.907], [2.112, 0.024, 2.389, 2.579, 0.012]],
                            index=["μF", "S_avg"], columns=_M5),
    "Table 4": pd.DataFrame([[0.107, 0.154, 0.151, 0.088, 0.637, 0.387], [0.598, 0.898, 0.81, 0.5, 0.668, 0.38]],
                            index=["ResNet-18", "1-Lipschitz"], columns=[*_M5, "SHAP"]),
    "Table 5": pd.DataFrame([[0.584, 0.457, 0.449, 0.552, 0.723, 0.459], [0.719, 0.606, 0.575, 0.67, 0.749, 0.621]],
                            index=["ResNet-18", "1-Lipschitz"], columns=[*_M5, "SHAP"]),
    "Table 10": pd.DataFrame(
        [[0.584, 0.457, 0.449, 0.552, 0.723], [0.574, 0.445, 0.435, 0.548, 0.698], [0.576, 0.461, 0.451, 0.555, 0.697],
         [0.556, 0.445, 0.435, 0.542, 0.641], [0.575, 0.455, 0.447, 0.545, 0.686], [0.571, 0.449, 0.441, 0.537, 0.667],
         [0.544, 0.41, 0.401, 0.507, 0.588], [0.571, 0.424, 0.414, 0.54, 0.642], [0.556, 0.413, 0.404, 0.528, 0.627],
         [0.542, 0.393, 0.381, 0.511, 0.531]], index=list(DEGRADATIONS), columns=_M5),
    "Table 9": pd.DataFrame(
        [[0.107, 0.154, 0.151, 0.088, 0.637], [0.073, 0.12, 0.117, 0.052, 0.588], [0.063, 0.117, 0.115, 0.056, 0.57],
         [0.056, 0.106, 0.106, 0.048, 0.482], [0.075, 0.115, 0.11, 0.056, 0.568], [0.086, 0.109, 0.106, 0.067, 0.548],
         [0.038, 0.04, 0.037, 0.016, 0.422], [0.03, 0.071, 0.068, 0.024, 0.538], [0.024, 0.051, 0.049, 0.018, 0.531],
         [0.0, 0.004, 0.003, 0.0, 0.369]], index=list(DEGRADATIONS), columns=_M5),
}
"""The paper's (HAL v1) values, typed from its tables for the side-by-side columns: Tables 1–2 (ReCo, MeGe of normally
trained ResNet-18s), 3 (μF, S_avg on CIFAR-10), 4–5 (ResNet-18 vs 1-Lipschitz on CIFAR-10), 9 (ReCo on CIFAR-10 per
degradation; its SHAP column left out) and 10 (MeGe on CIFAR-10 per degradation, Fig. 4). Several MeGe values
elsewhere in v1 fall below 0.5, impossible for 1/(1 + mean d) with d ∈ [0, 1] (spec §4.2): compare rankings, not
absolute numbers."""


def rank_agreement(ours: pd.Series, paper: pd.Series) -> float:
    """Spearman correlation between our and the paper's values over the methods both have (NaN if < 3)."""
    common = [m for m in ours.index if m in paper.index and not (pd.isna(ours[m]) or pd.isna(paper[m]))]
    if len(common) < 3:
        return math.nan
    return float(pd.Series(ours[common]).rank().corr(pd.Series(paper[common]).rank()))


def beside(ours: pd.DataFrame, paper: pd.DataFrame, *, name: str = "row") -> pd.DataFrame:
    """Our wide table (rows × methods) and the paper's, interleaved: for each row ``ours`` then ``paper`` (where the
    paper has that row), with the rank agreement (Spearman over methods) on our line."""
    rows = []
    for idx, values in ours.iterrows():
        rows.append({name: idx, "source": "ours", **values.to_dict(),
                     "rank ρ vs paper": rank_agreement(values, paper.loc[idx]) if idx in paper.index else math.nan})
        if idx in paper.index:
            rows.append({name: idx, "source": "paper", **paper.loc[idx].to_dict()})
    return pd.DataFrame(rows)


def quoted(table: str) -> str:
    """The paper's values a claim quotes, in one line from :data:`PAPER`: ``"Table 1"`` (Grad-CAM's ReCo range over
    the datasets), ``"Table 3"`` (μF and S_avg of Grad-CAM and SmoothGrad) or ``"Tables 4–5"`` (ReCo of SmoothGrad
    and Saliency, ResNet-18 → 1-Lipschitz)."""
    if table == "Table 1":
        gc = PAPER["Table 1"]["GC"]
        return f"Table 1: GC best on all {len(gc)} datasets ({gc.min():.3f}–{gc.max():.3f})"
    if table == "Table 3":
        mu, s = PAPER["Table 3"].loc["μF"], PAPER["Table 3"].loc["S_avg"]
        rest = s.drop(["GC", "SG"])
        return (f"μF GC {mu['GC']:.3f} (next {mu.drop('GC').idxmax()} {mu.drop('GC').max():.3f}); S_avg GC "
                f"{s['GC']:.3f}, SG {s['SG']:.3f}, others > {math.floor(rest.min()):d}")
    if table == "Tables 4–5":
        t4 = PAPER["Table 4"]
        pairs = ", ".join(f"{m} {t4.loc['ResNet-18', m]:.3f} → {t4.loc['1-Lipschitz', m]:.3f}" for m in ("SG", "SA"))
        return "Tables 4–5: ReCo e.g. " + pairs + "; MeGe higher for all six methods"
    raise ValueError(f"table must be 'Table 1', 'Table 3' or 'Tables 4–5', got {table!r}")


STRONGEST = ("Randomized 30%", "Switched 30%")
"""The strongest level of the two degradations of Fig. 4 (weights randomised, labels switched), which R2 compares
with normal training."""


def margins() -> dict[str, float]:
    """Each claim's smallest effect of interest, derived from the paper's numbers (:data:`PAPER`) — the values the
    claim functions register (:func:`faithlab_study.verdicts.registered`), recomputed here so that a test catches
    a margin that drifts from the paper:

    - ``R1``: half the smallest lead of Grad-CAM over the best other method in Table 1 (FashionMNIST 0.517 − 0.369);
    - ``R2.MeGe`` / ``R2.ReCo``: half the smallest fall, normal training minus the strongest randomisation or label
      switching (:data:`STRONGEST`), over the five methods in Table 10 (MeGe) / Table 9 (ReCo), CIFAR-10;
    - ``R3.ReCo``: half the smallest rise of ReCo of a gradient method (IG, SG, SA, GI), ResNet-18 → 1-Lipschitz in
      Table 4; ``R3.MeGe``: half the smallest rise of MeGe of any of the six methods in Table 5;
    - ``RM-T3.muF``: half Grad-CAM's lead in μF over the best other method in Table 3;
    - ``RM-T3.Savg``: half the natural log of the smallest ratio of an other method's S_avg to Grad-CAM's or
      SmoothGrad's in Table 3 (S_avg's scale is the maps' own, so the claim compares ratios)."""
    import numpy as np

    t1, t3, t4, t5 = (PAPER[k] for k in ("Table 1", "Table 3", "Table 4", "Table 5"))
    lead = min(float(row["GC"] - row.drop("GC").max()) for _, row in t1.iterrows())
    falls = {score: min(float((PAPER[t].loc["Normal"] - PAPER[t].loc[g]).min()) for g in STRONGEST)
             for score, t in (("MeGe", "Table 10"), ("ReCo", "Table 9"))}
    gradient = ["IG", "SG", "SA", "GI"]
    reco_rise = float((t4.loc["1-Lipschitz", gradient] - t4.loc["ResNet-18", gradient]).min())
    mege_rise = float((t5.loc["1-Lipschitz"] - t5.loc["ResNet-18"]).min())
    mu, s = t3.loc["μF"], t3.loc["S_avg"]
    mu_lead = float(mu["GC"] - mu.drop("GC").max())
    ratio = float(s.drop(["GC", "SG"]).min() / s[["GC", "SG"]].max())
    out = {"R1": lead / 2, "R2.MeGe": falls["MeGe"] / 2, "R2.ReCo": falls["ReCo"] / 2, "R3.ReCo": reco_rise / 2,
           "R3.MeGe": mege_rise / 2, "RM-T3.muF": mu_lead / 2, "RM-T3.Savg": float(np.log(ratio)) / 2}
    return {k: round(v, 4) for k, v in out.items()}

"""SaCo's Fig. 2 as claims: rank correlations between the metrics per trained model and method, each with its chance
level (shuffled samples), and the claims S2 (SaCo correlates weakly with the cumulative metrics) and S6 (the existing
metrics agree more among themselves). A correlation is a statistic, not a mean of units: it is computed once per
trained model (averaged over the methods, as the paper averages over its methods) and judged by the t interval on
those per-model values (:func:`faithlab.study.verdicts.replica_judgement`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from faithlab.study import verdicts
from faithlab.study.papers.saco import paper
from faithlab.study.papers.saco._common import (ACCURACY_TOLERANCE, FIRST, MIN_ACCURACY, accuracy_reason, gate,
                                             premise_sentence, removal_premise)
from faithlab.study.papers.saco.scores import HIGHER_IS_BETTER, oriented

__all__ = ["rank_correlations", "claim_weak_correlation", "claim_existing_agree_more", "AGREEMENT_MIN",
           "per_model_correlations"]


def rank_correlations(per_sample: pd.DataFrame, *, methods, n_null: int = 200, seed: int = 0) -> pd.DataFrame:
    """Fig. 2's correlations (spec §3.3): per setting × method of ``methods``, Spearman's ρ across the samples
    between SaCo and each cumulative metric ("SaCo vs existing") and among the four cumulative metrics ("among
    existing"), the metrics oriented so that higher is better; columns setting, (replica,) method, pair, kind, rho,
    |rho|, images (the samples it rests on), and
    the chance level of each pair: ``null rho`` / ``null |rho|``, the mean of ρ / |ρ| over ``n_null`` shufflings of
    the second metric's samples (generator ``seed``; |ρ| is above 0 at chance, about 0.8 / √n for n samples)."""
    from faithlab.metrics import statistics as stats

    existing = [m for m in HIGHER_IS_BETTER if m != "SaCo"]
    pairs = [(a, b) for i, a in enumerate(["SaCo", *existing]) for b in existing[max(0, i):] if a != b]
    g = torch.Generator().manual_seed(seed)
    rows = []
    frame = per_sample[per_sample["method"].isin(list(methods))]
    keys = ["setting", "replica", "method"] if "replica" in frame else ["setting", "method"]
    for key, unit in frame.groupby(keys, sort=False):
        names = dict(zip(keys, key, strict=True))
        values = {m: torch.tensor(v.to_numpy(dtype=np.float64)) for m, v in oriented(unit).items()}
        n = len(unit)
        perm = torch.argsort(torch.rand(n_null, n, generator=g), dim=1)  # the same shufflings for every pair
        for a, b in pairs:
            rho = stats.spearman(values[a], values[b]).item()
            null = stats.spearman(values[a].expand(n_null, -1), values[b][perm])
            rows.append({**names, "pair": f"{a} vs {b}",
                         "kind": "SaCo vs existing" if a == "SaCo" else "among existing", "rho": rho,
                         "|rho|": abs(rho), "images": n, "null rho": float(null.nanmean()),
                         "null |rho|": float(null.abs().nanmean())})
    return pd.DataFrame(rows)


AGREEMENT_MIN = 0.1
"""Premise of S2 and S6: the existing metrics must agree with each other above chance — the t interval of their mean
mutual ρ over the trained models must lie above this (a convention), or a low correlation with SaCo says nothing."""


def _model_keys(corr: pd.DataFrame) -> list[str]:
    return [c for c in ("setting", "replica") if c in corr.columns]


def per_model_correlations(corr: pd.DataFrame, *, methods=None) -> pd.DataFrame:
    """Per trained model (setting × replica): the mean over the methods (``methods`` present; None: all) of ρ for
    each "SaCo vs <metric>" pair, the mean ρ among the existing metrics (all six pairs), the mean ρ of SaCo with them,
    the gap among − SaCo, and the images per method (columns named so; NaN ρ of a constant metric skipped)."""
    if methods is not None:
        corr = corr[corr["method"].isin(list(methods))]
    if not len(corr):
        raise ValueError("corr holds no correlation of the given methods")
    by = _model_keys(corr)
    if not by:
        raise ValueError("corr must name the trained model of every row (a setting and/or replica column)")
    saco = corr[corr["kind"] == "SaCo vs existing"]
    out = saco.pivot_table(index=by, columns="pair", values="rho", aggfunc="mean")
    out.columns.name = None
    out["among existing"] = corr[corr["kind"] == "among existing"].groupby(by)["rho"].mean()
    out["SaCo vs existing"] = saco.groupby(by)["rho"].mean()
    out["gap"] = out["among existing"] - out["SaCo vs existing"]
    out["images"] = corr.groupby(by)["images"].max() if "images" in corr else np.nan
    return out


def _correlation_premises(corr: pd.DataFrame, per_sample, accuracy, min_accuracy: float, tolerance: float,
                          models: pd.DataFrame):
    """(reason, premises, sentence): the accuracy premise, the mechanism (from ``per_sample``'s group drops, when
    given) and the existing metrics' agreement above chance (t interval of the per-model mean mutual ρ against
    :data:`AGREEMENT_MIN`)."""
    reason = accuracy_reason(accuracy, min_accuracy=min_accuracy, tolerance=tolerance)
    mechanism = removal_premise(per_sample)[0] if per_sample is not None and FIRST in per_sample.columns else None
    among = models["among existing"].dropna()
    if len(among) >= 2:
        agreement = verdicts.premise_interval(
            verdicts.replica_interval(among.to_numpy(np.float64)), threshold=AGREEMENT_MIN,
            what="the existing metrics agree with each other: their mean mutual ρ per trained model")
    else:
        agreement = verdicts.Premise(None, "the existing metrics' agreement needs at least two trained models")
    text = premise_sentence(accuracy, mechanism, min_accuracy=min_accuracy, tolerance=tolerance)
    return reason, [p for p in (mechanism, agreement) if p is not None], f"{text}; {agreement.text}"


def _gate_all(v, premises):
    for p in premises:
        v = gate(v, p)
    return v


def _units(models: pd.DataFrame) -> int:
    return int(models["images"].sum()) if models["images"].notna().all() else int(len(models))


def claim_weak_correlation(corr: pd.DataFrame, *, per_sample: pd.DataFrame | None = None,
                           accuracy: pd.DataFrame | None = None, methods=paper.METHODS,
                           min_accuracy: float = MIN_ACCURACY,
                           accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S2 (Fig. 2, §5.1): SaCo correlates weakly with each existing metric across samples (paper: ρ =
    0.18–0.22). Per existing metric, the mean over ``methods`` (the paper's ten, those present) of the signed,
    oriented Spearman ρ(SaCo, metric) across each trained model's images (spec §3.3, §6.13), one value per trained
    model, judged by its t interval against the rule's "weak" threshold (``verdicts.rule("S2")``: every metric).

    corr: :func:`rank_correlations` (with setting and replica columns). per_sample: the per-image frame, read only
    for the mechanism premise (its group drops). Premises: the ViTs are accurate; removal matters group by group;
    the existing metrics agree with each other above chance."""
    rule = verdicts.rule("S2")
    models = per_model_correlations(corr, methods=methods)
    reason, premises, text = _correlation_premises(corr, per_sample, accuracy, min_accuracy, accuracy_tolerance,
                                                   models)
    pairs = [c for c in models.columns if str(c).startswith("SaCo vs ") and c != "SaCo vs existing"]
    cells = {}
    for pair in pairs:
        values = models[pair].dropna()
        cells[pair] = (verdicts.replica_judgement(values.to_numpy(np.float64), rule, units=_units(models), what=pair)
                       if len(values) >= 2 else None)
    v = _gate_all(verdicts.decide(cells, rule, untestable=reason), premises)
    means = models[pairs].mean()
    return verdicts.Claim(
        rule.claim, rule=rule, premise=text,
        paper_value="ρ = " + "–".join(f"{x:.2f}" for x in paper.FIG_2_SACO_VS_EXISTING),
        our_value=(f"ρ = {means.min():.3f}–{means.max():.3f} (signed, oriented; mean over {len(models)} trained "
                   f"models × methods); below the threshold in {sum(j is not None and j.outcome == 'holds' for j in cells.values())} "
                   f"of {len(cells)} metrics"),
        verdict=v, table=pd.DataFrame(verdicts.judgement_table(cells)), units=_units(models))


def claim_existing_agree_more(corr: pd.DataFrame, *, per_sample: pd.DataFrame | None = None,
                              accuracy: pd.DataFrame | None = None, methods=paper.METHODS,
                              min_accuracy: float = MIN_ACCURACY,
                              accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S6 (Fig. 2, §5.1): the existing metrics correlate more with each other than with SaCo (paper: 0.4764 vs
    0.18–0.22). Per trained model, the mean ρ among the four existing metrics minus the mean ρ(SaCo, existing)
    (signed, oriented: spec §3.3, §6.13; over ``methods``), judged by the t interval on those per-model gaps
    against the rule's margin (``verdicts.rule("S6")``). The same gap under |ρ| is shown in the table only.
    corr, per_sample, accuracy: as :func:`claim_weak_correlation`; the same premises."""
    rule = verdicts.rule("S6")
    models = per_model_correlations(corr, methods=methods)
    reason, premises, text = _correlation_premises(corr, per_sample, accuracy, min_accuracy, accuracy_tolerance,
                                                   models)
    gaps = models["gap"].dropna()
    j = (verdicts.replica_judgement(gaps.to_numpy(np.float64), rule, units=_units(models),
                                    what="mean ρ among existing − mean ρ(SaCo, existing)") if len(gaps) >= 2 else None)
    v = _gate_all(verdicts.decide([j], rule, untestable=reason), premises)
    absolute = per_model_correlations(corr.assign(rho=corr["|rho|"]), methods=methods)
    rows = verdicts.judgement_table([j] if j is not None else {"signed ρ": None}, convention="signed ρ",
                                    decides=True)
    rows[0].update({"among existing": float(models["among existing"].mean()),
                    "SaCo vs existing": float(models["SaCo vs existing"].mean())})
    rows.append({"convention": "|ρ|", "decides": False, "cell": "same gap, |ρ| (shown, not used)",
                 "estimate": float(absolute["gap"].mean()), "among existing": float(absolute["among existing"].mean()),
                 "SaCo vs existing": float(absolute["SaCo vs existing"].mean())})
    return verdicts.Claim(
        rule.claim, rule=rule, premise=text,
        paper_value=f"{paper.FIG_2_AMONG_EXISTING:.4f} among existing vs "
                    + "–".join(f"{x:.2f}" for x in paper.FIG_2_SACO_VS_EXISTING),
        our_value=(f"signed ρ: {models['among existing'].mean():.3f} among vs {models['SaCo vs existing'].mean():.3f} "
                   f"with SaCo, gap " + (f"{j.interval.estimate:+.3f} [{j.interval.low:+.3f}, {j.interval.high:+.3f}]"
                                         if j is not None else "undefined")
                   + f"; |ρ| gap {absolute['gap'].mean():+.3f} (shown only)"),
        verdict=v, table=pd.DataFrame(rows), units=_units(models))

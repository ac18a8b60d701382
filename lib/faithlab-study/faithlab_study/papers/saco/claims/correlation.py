"""SaCo's claims on Fig. 2's rank correlations, S2 (SaCo correlates weakly with the cumulative metrics) and S6 (the
existing metrics agree more among themselves), and on Fig. 3's case study, S5 (the drops saturate while SaCo
separates), each decided by the rules registered above its claim function (the package's docstring says how)."""

from __future__ import annotations


import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.saco.claims.registration import CHAPTER, CORRELATIONS, PARTS
from faithlab_study.papers.saco import paper
from faithlab_study.papers.saco.experiments import FIRST, model_of, per_model_correlations, wide
from faithlab_study.papers.saco.claims.premises import (ACCURACY_TOLERANCE, MIN_ACCURACY, accuracy_reason, gate,
                                                        premise_sentence, removal_premise)


AGREEMENT_MIN = 0.1
"""Premise of S2 and S6: the existing metrics must agree with each other above chance — the t interval of their mean
mutual ρ over the trained models must lie above this (a convention), or a low correlation with SaCo says nothing."""


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


@CORRELATIONS.registered(
    "S2", claim="S2: SaCo correlates weakly with the existing metrics across samples (Fig. 2)",
    statistic=("per trained model, method of the paper's ten and existing metric: Spearman ρ across the model's test "
               "images between SaCo and the metric (both oriented so that higher is better, spec §3.3); its mean "
               "over the methods per trained model; one cell per existing metric"),
    direction="below", margin=0.3482,
    margin_source=("the midpoint between SaCo's largest correlation in Fig. 2 (0.22) and the existing metrics' "
                   "mutual correlation (0.4764): 'weak' = nearer the paper's SaCo values than the agreement they are "
                   "contrasted with"),
    over="existing metrics",
    note=("'the correlation scores between our SaCo and other existing metrics range from 0.18 to 0.22' (§5.1): each "
          "of the four is weak. One statistic per metric, no 'partly'."),
    fingerprint="601374e35f11",
)
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


@CORRELATIONS.registered(
    "S6", claim="S6: the existing metrics correlate more with each other than with SaCo (Fig. 2)",
    statistic=("per trained model: the mean Spearman ρ among the four existing metrics minus the mean ρ(SaCo, "
               "existing metric), over the paper's ten methods (signed, metrics oriented so that higher is better, "
               "spec §3.3); one value per trained model"),
    margin=0.1282,
    margin_source=("half the paper's smallest gap between the existing metrics' mutual correlation and SaCo's (Fig. "
                   "2: 0.4764 − 0.22 = 0.2564)"),
    decision="single",
    fingerprint="404d605f01a3",
)
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


@CHAPTER.registered(
    "S5.saturation", claim="S5, part: the cumulative drops saturate for every method",
    statistic=("per correctly classified test image: 1 when the cumulative drop of every one of the three maps "
               "(Transformer Attribution, Raw Attention, Random) after removing the top 30 % of the pixels is at "
               "least 0.9 of its largest drop, else 0; the share of such images"),
    margin=0.5,
    margin_source=("convention: the paper shows one image ('remain almost unchanged (above 0.9) after the removal of "
                   "the top 30 %'); over many images we ask it of most of them, more than half"),
    decision="single", null="—", interval="share: t on replica shares ∪ Wilson",
    fingerprint="50b8c1d4e846",
)
@CHAPTER.registered(
    "S5.separation", claim="S5, part: SaCo separates the good explanation from the poor ones",
    statistic=("per correctly classified test image, SaCo(Transformer Attribution) − SaCo(other), its mean per "
               "trained model; two cells: against Raw Attention and against Random"),
    over="comparisons", null="the poorer explanation on the same image",
    fingerprint="d21e07fd57f4",
)
@PARTS.registered(
    "S5", claim="S5: the cumulative drops saturate for every method while SaCo separates the explanations (Fig. 3)",
    statistic="the two parts S5.saturation and S5.separation, each decided by its own rule",
    parts=["S5.saturation", "S5.separation"],
    note=("Decided on the three replicas of random_vs_methods' reference setting (read from the cache), over many "
          "images: the paper's one image is an anecdote. partly when one part is reproduced and the other decided."),
    fingerprint="0f43ce044737",
)
def claim_saturation(frame: pd.DataFrame, *, good: str = "Transformer Attribution",
                     poor: tuple[str, ...] = ("Raw Attention", "Random"), at: float = 0.3,
                     accuracy: pd.DataFrame | None = None, min_accuracy: float = MIN_ACCURACY,
                     accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S5 (Fig. 3) over many images: the cumulative drops saturate for every method (so AOPC is high for all),
    while SaCo separates the good explanation from the poor ones. Two parts, each decided by its rule:

    - S5.saturation (``verdicts.rule("S5.saturation")``): per image, 1 when every method's cumulative drop after the
      top ``at`` of the pixels has saturated (``saturated``), else 0; the share of such images with
      :func:`faithlab_study.verdicts.share_interval` (t on the replicas' shares ∪ Wilson) above the rule's margin;
    - S5.separation (``"S5.separation"``): per image, SaCo(``good``) − SaCo(poor) for each of ``poor``, its t
      interval on the replica means above the margin, every comparison.

    The claim by ``"S5"`` (parts). frame: :func:`case_study_frame` with ``setting`` and/or ``replica`` columns naming
    the trained model of every row when several are pooled (each trained model one replica). accuracy: optional, per trained model (the accuracy premise: ``min_accuracy`` within
    ``accuracy_tolerance``). Premise (the mechanism): removal
    matters group by group on ``good``'s groups (:func:`~faithlab_study.papers.saco.claims.removal_premise`)."""
    rules = {i: verdicts.rule(i) for i in ("S5", "S5.saturation", "S5.separation")}
    methods = [good, *poor]
    missing = set(methods) - set(frame["method"])
    if missing:
        raise ValueError(f"frame must hold the methods {methods}, lacks {sorted(missing)}")
    index = [c for c in ("setting", "replica", "image") if c in frame.columns]
    wide = frame.pivot_table(index=index, columns="method", aggfunc="first", sort=True)
    n = len(wide)
    if n < 2:
        raise ValueError(f"S5 needs at least two images, got {n}")
    groups = model_of(wide)
    reason = accuracy_reason(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)
    premise = removal_premise(frame, method=good)[0] if FIRST in frame.columns else None
    all_saturated = wide["saturated"][methods].astype(bool).all(axis=1).to_numpy(np.float64)
    share = verdicts.share_interval(all_saturated, groups=groups)
    saturation = verdicts.judge(share, rules["S5.saturation"], what="share of images where every method saturates")
    separation = {f"{good} − {m}": verdicts.effect(wide["SaCo"][good].to_numpy(np.float64),
                                                   wide["SaCo"][m].to_numpy(np.float64), rule=rules["S5.separation"],
                                                   groups=groups, what=f"SaCo {good} − {m}") for m in poor}
    parts = {"S5.saturation": verdicts.decide(saturation, rules["S5.saturation"], untestable=reason),
             "S5.separation": verdicts.decide(separation, rules["S5.separation"], untestable=reason)}
    v = gate(verdicts.decide_parts(parts, rules["S5"], untestable=reason), premise)
    drop_col = f"drop at {at:.0%}"
    summary = frame.groupby("method", sort=False)[["SaCo", "AOPC", drop_col, "max drop", "saturated"]].mean()
    table = pd.DataFrame([*verdicts.judgement_table([saturation], part="S5.saturation"),
                          *verdicts.judgement_table(separation, part="S5.separation")])
    models = 1 if groups is None else len(set(groups))
    return verdicts.Claim(
        rules["S5"].claim, rule=rules["S5"], premise=premise_sentence(accuracy, premise, min_accuracy=min_accuracy,
                                                                      tolerance=accuracy_tolerance),
        paper_value="one image: cumulative drops > 0.9 after the top 30 % for all three methods; SaCo high for "
                    "Transformer Attribution, lower for Raw Attention, ≈ 0 for Random",
        our_value=(f"every method saturated on {share.estimate:.0%} [{share.low:.0%}, {share.high:.0%}] of {n} images "
                   f"({models} trained model{'s' if models > 1 else ''}; {parts['S5.saturation']}); mean SaCo "
                   + " / ".join(f"{summary.loc[m, 'SaCo']:.3f}" for m in methods) + ", AOPC "
                   + " / ".join(f"{summary.loc[m, 'AOPC']:.3f}" for m in methods) + f" ({' / '.join(methods)}; "
                   f"separation {parts['S5.separation']})"),
        verdict=v, table=table, units=n)

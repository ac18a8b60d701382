"""SaCo's claims as claim functions (S1 Random separation, S2/S6 correlations, S3 attention ablation, S4 number of
groups, S5 saturation, S7 removal order), each decided by its pre-registered rules
(``faithlab/study/verdicts/registered/saco.toml``): the trained ViTs are the units of replication, each claim's
interval a t interval on the per-model means or statistics, judged against a margin from the paper's numbers
(:data:`faithlab.study.papers.saco.paper.MARGINS`), after the two premises every claim checks before its outcome —
the ViTs learned the digits (:data:`MIN_ACCURACY`, :data:`ACCURACY_TOLERANCE`), and removal matters group by group
(the chapter's mechanism: :func:`removal_premise`, :data:`GROUP_DROP_MIN`). A per-image difference is averaged per
trained model (a setting × replica) and judged by the t interval on those model means against the rule's margin
(:func:`faithlab.study.verdicts.effect`); a statistic that is not a mean is computed once per trained model
(:func:`faithlab.study.verdicts.replica_judgement`). The cells combine as the rule says
(:func:`faithlab.study.verdicts.decide`), a claim of named parts by :func:`faithlab.study.verdicts.decide_parts`.

- the methods compared image by image, against Random Attribution or between methods, and the claims they decide
  (S1, S7, S3, S4);
- Fig. 2 as claims, on the rank correlations between the metrics per trained model and method
  (:func:`~faithlab.study.papers.saco.experiments.rank_correlations`): S2 (SaCo correlates weakly with the cumulative
  metrics) and S6 (the existing metrics agree more among themselves). A correlation is a statistic, not a mean of
  units: it is computed once per trained model (averaged over the methods, as the paper averages over its methods)
  and judged by the t interval on those per-model values (:func:`faithlab.study.verdicts.replica_judgement`);
- Fig. 3 as a claim, on the case study's quantities per image and method
  (:func:`~faithlab.study.papers.saco.experiments.case_study_frame`): S5 (the drops saturate for every method while
  SaCo separates the good explanation from the poor ones), decided over many images of several trained replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab.study import verdicts
from faithlab.study.papers.saco import paper
from faithlab.study.papers.saco.experiments import (FIRST, HIGHER_IS_BETTER, LAST, model_means, model_of,
                                                    per_model_correlations, units_of, wide)

__all__ = ["MIN_ACCURACY", "ACCURACY_TOLERANCE", "GROUP_DROP_MIN", "PREMISE_METHOD", "removal_premise",
           "narrow", "claim_random_separation", "claim_order_sensitivity", "ATTENTION_ABLATION",
           "claim_attention_ablation", "claim_k_decline", "CUMULATIVE", "claim_weak_correlation",
           "claim_existing_agree_more", "AGREEMENT_MIN", "claim_saturation"]


MIN_ACCURACY = 0.8
"""Test accuracy a ViT must reach for its explanations to explain a model that learned the task (premise)."""
ACCURACY_TOLERANCE = 0.05
"""Tolerance of the accuracy premise: a ViT fails it only when its accuracy lies below :data:`MIN_ACCURACY` by more
than this."""
GROUP_DROP_MIN = 0.05
"""The mechanism premise's threshold: removing the most salient of the K groups alone must lower p(ŷ|x) by more than
removing the least salient one, by at least this much on average (5 points of probability; a convention, the paper
reports no group drops)."""
PREMISE_METHOD = "Transformer Attribution"
"""The map whose groups the mechanism premise removes: the case study's good explanation (Fig. 3), present in both
notebooks."""


def accuracy_reason(accuracy: pd.DataFrame | None, *, min_accuracy: float = MIN_ACCURACY,
                    tolerance: float = ACCURACY_TOLERANCE) -> str | None:
    """Premise of every claim about the trained ViTs: each one learned the task — its test accuracy (``accuracy``:
    columns accuracy and, where present, setting and replica) at least ``min_accuracy`` within ``tolerance``. The
    reason it fails, or None (also when ``accuracy`` is None: not checked)."""
    if accuracy is None or not len(accuracy):
        return None
    worst = accuracy.loc[accuracy["accuracy"].idxmin()]
    if float(worst["accuracy"]) < min_accuracy - tolerance:
        who = "/".join(str(worst[c]) for c in ("setting", "replica") if c in accuracy.columns) or "the ViT"
        return (f"ViT {who} reaches a test accuracy of only {float(worst['accuracy']):.3f}, below {min_accuracy:g} by "
                f"more than the tolerance {tolerance:g}: its maps explain a model that has not learned the task")
    return None


def accuracy_text(accuracy: pd.DataFrame | None, *, min_accuracy: float = MIN_ACCURACY,
                  tolerance: float = ACCURACY_TOLERANCE) -> str:
    """The accuracy premise in one phrase for a claim's premise sentence."""
    if accuracy is None or not len(accuracy):
        return "the ViTs' accuracy was not given (premise not checked)"
    return (f"every ViT must reach a test accuracy of {min_accuracy:g} within {tolerance:g} (lowest "
            f"{float(accuracy['accuracy'].min()):.3f} of {len(accuracy)} models)")


def removal_premise(frame: pd.DataFrame | None, *, method: str = PREMISE_METHOD, threshold: float = GROUP_DROP_MIN,
                    level: float = 0.95) -> tuple[verdicts.Premise | None, dict]:
    """The chapter's mechanism premise, removal matters group by group: per image of ``method``'s rows of
    ``frame`` (columns :data:`FIRST`, :data:`LAST`: the drop of p(ŷ|x) when the most / least salient of the K groups
    is removed alone), the difference first − last; its mean per trained model and the t interval on those means
    (:func:`faithlab.study.verdicts.mean_interval`) must lie above ``threshold``
    (:func:`faithlab.study.verdicts.premise_interval`). Returns the premise (None when ``frame`` is None: not checked) and
    a row for the page (estimate, low, high, threshold, outcome, models, images)."""
    if frame is None:
        return None, {}
    rows = frame[frame["method"] == method]
    if not len(rows) or FIRST not in rows or LAST not in rows:
        raise ValueError(f"frame must hold {method!r} rows with the columns {FIRST!r} and {LAST!r}")
    diff = (rows[FIRST] - rows[LAST]).to_numpy(np.float64)
    interval = verdicts.mean_interval(diff, groups=model_of(rows), level=level)
    premise = verdicts.premise_interval(
        interval, threshold=threshold, what=f"removal matters group by group: p(ŷ|x) drops more when the most "
                                            f"salient of {method}'s groups is removed alone than the least salient")
    state = {True: "holds", False: "fails", None: "undecided"}[premise.holds]
    return premise, {"method": method, "most − least salient group drop": interval.estimate, "low": interval.low,
                     "high": interval.high, "threshold": threshold, "outcome": state, "models": interval.replicas,
                     "images": interval.units, "interval": interval.method}


def gate(v: verdicts.Verdict, premise: verdicts.Premise | None) -> verdicts.Verdict:
    """A verdict under the mechanism premise (:meth:`faithlab.study.verdicts.Premise.apply`; unchanged when not checked or
    when the verdict is already "not testable here")."""
    if premise is None or str(v) == verdicts.NOT_TESTABLE:
        return v
    return premise.apply(v)


def premise_sentence(accuracy, premise: verdicts.Premise | None, *, min_accuracy: float = MIN_ACCURACY,
                     tolerance: float = ACCURACY_TOLERANCE) -> str:
    """The premises of a claim in one sentence: the accuracy check and the mechanism's interval."""
    mechanism = premise.text if premise is not None else "removal by groups was not checked (no per-image drops given)"
    return f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=tolerance)}; {mechanism}"


def state(judgement) -> str:
    """A judgement's outcome for a table ("holds", "fails", "undecided")."""
    return "undecided" if judgement is None else judgement.outcome


CUMULATIVE = tuple(m for m in HIGHER_IS_BETTER if m != "SaCo")
"""The four cumulative-removal metrics the paper compares SaCo with."""


def narrow(table: pd.DataFrame, keep: Sequence[str], intervals: Mapping[str, tuple[str, str, str]], *,
           digits: int = 3) -> pd.DataFrame:
    """A claim table narrowed for a page: the ``keep`` columns, then each ``intervals`` entry ``{name: (mean, low,
    high)}`` as one text column "mean [low, high]" (signed, ``digits`` decimals); the full table stays in the
    notebook's outputs."""
    missing = [c for c in [*keep, *(c for cols in intervals.values() for c in cols)] if c not in table]
    if missing:
        raise ValueError(f"table has no column {missing[0]!r} (columns: {list(table.columns)})")
    out = table[list(keep)].copy()
    for name, (mean, low, high) in intervals.items():
        out[name] = [f"{m:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
                     for m, lo, hi in zip(table[mean], table[low], table[high])]
    return out


def _premises(frame: pd.DataFrame, accuracy, min_accuracy: float, accuracy_tolerance: float):
    """(the accuracy premise's reason or None, the mechanism premise or None, its sentence) of a claim on ``frame``."""
    reason = accuracy_reason(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)
    premise = removal_premise(frame)[0] if FIRST in frame.columns else None
    return reason, premise, premise_sentence(accuracy, premise, min_accuracy=min_accuracy,
                                             tolerance=accuracy_tolerance)


def _present(frame: pd.DataFrame, wanted: Sequence[str], *, need: Sequence[str] = ()) -> list[str]:
    names = set(frame["method"])
    missing = [m for m in need if m not in names]
    if missing:
        raise ValueError(f"the frame lacks the methods {missing} (it holds {sorted(names)})")
    present = [m for m in wanted if m in names]
    if not present:
        raise ValueError(f"the frame holds none of the methods {list(wanted)} (it holds {sorted(names)})")
    return present


def _rows(judgements, **columns) -> list[dict]:
    return verdicts.judgement_table(judgements, **columns)


def _per_model(values: pd.Series, rule, *, units: int, what: str):
    """A statistic of each trained model judged by its t interval; None (undecided) with fewer than two models."""
    values = values.dropna()
    if len(values) < 2:
        return None
    return verdicts.replica_judgement(values.to_numpy(np.float64), rule, units=units, what=what)


# ------------------------------------------------------------------------------------------------------ S1 (Fig. 4)
def claim_random_separation(per_sample: pd.DataFrame, *, random_saco: pd.DataFrame | None = None,
                            accuracy: pd.DataFrame | None = None,
                            random: str = "Random", methods: Sequence[str] = paper.METHODS,
                            min_accuracy: float = MIN_ACCURACY,
                            accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S1 (Fig. 4, §5.2): SaCo puts Random Attribution near 0 and below most methods; the cumulative metrics
    barely separate it. Three parts, each decided by its rule (``verdicts.rule("S1.zero")``, ``"S1.above"``,
    ``"S1.cumulative"``), then the claim by ``"S1"`` (parts):

    - S1.zero: SaCo(Random) per image (from ``random_saco`` when given:
      :func:`~faithlab.study.papers.saco.experiments.random_saco_frame`, a random map on more images of the same models; else ``random``'s rows of ``per_sample``),
      its t interval on the model means within ± the margin (two one-sided cells);
    - S1.above: per method of ``methods`` (the paper's ten, those present), SaCo(method) − SaCo(Random) per image
      above the margin; more than half of the methods must hold;
    - S1.cumulative: per cumulative metric (oriented), per trained model Random's mean minus the lowest method's
      mean, its t interval on the models above 0; every metric must hold.

    per_sample: one row per (setting ×) (replica ×) method × sample with the metrics of :data:`HIGHER_IS_BETTER`
    (and the group drops :data:`~faithlab.study.papers.saco.experiments.FIRST` / ``LAST`` for the mechanism premise, checked
    when present). accuracy: per trained model the ViT's test accuracy (columns setting, replica, accuracy), for the
    accuracy premise. Table: one row per judged cell (part, cell, estimate, low, high, margin, outcome, models,
    images)."""
    rules = {i: verdicts.rule(i) for i in ("S1", "S1.zero", "S1.above", "S1.cumulative")}
    methods = _present(per_sample, [m for m in methods if m != random], need=[random])
    reason, premise, premise_text = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    saco = wide(per_sample, "SaCo")
    groups = model_of(saco)
    r = saco[random].to_numpy(np.float64)
    z, z_groups = (r, groups) if random_saco is None else (random_saco["SaCo"].to_numpy(np.float64),
                                                           model_of(random_saco))
    zero = [verdicts.effect(z, rule=rules["S1.zero"], groups=z_groups, what="SaCo(Random), upper bound"),
            verdicts.effect(-z, rule=rules["S1.zero"], groups=z_groups, what="−SaCo(Random), lower bound")]
    above = [verdicts.effect(saco[m].to_numpy(np.float64), r, rule=rules["S1.above"], groups=groups,
                             what=f"{m} − Random") for m in methods]
    images = units_of(per_sample[per_sample["method"] == random])
    cumulative = []
    for metric in CUMULATIVE:
        means = model_means(wide(per_sample, metric))
        cumulative.append(_per_model(means[random] - means[methods].min(axis=1), rules["S1.cumulative"],
                                     units=images, what=f"{metric}: Random − lowest method"))
    parts = {"S1.zero": verdicts.decide(zero, rules["S1.zero"], untestable=reason),
             "S1.above": verdicts.decide(above, rules["S1.above"], untestable=reason),
             "S1.cumulative": verdicts.decide(cumulative, rules["S1.cumulative"], untestable=reason)}
    v = gate(verdicts.decide_parts(parts, rules["S1"], untestable=reason), premise)
    table = pd.DataFrame([*_rows(zero, part="S1.zero"), *_rows(above, part="S1.above"),
                          *_rows({f"{m}: Random − lowest method": j for m, j in zip(CUMULATIVE, cumulative)},
                                 part="S1.cumulative")])
    level = zero[0].interval
    n_above = sum(j.outcome == "holds" for j in above)
    n_cum = sum(j is not None and j.outcome == "holds" for j in cumulative)
    return verdicts.Claim(
        rules["S1"].claim, rule=rules["S1"], premise=premise_text,
        paper_value="SaCo(Random) ≈ 0 < most methods; Random comparable to or better than some methods on "
                    "AUC/AOPC/LOdds/Comp.",
        our_value=(f"SaCo(Random) {level.estimate:+.3f} [{level.low:+.3f}, {level.high:+.3f}] ({parts['S1.zero']}); "
                   f"{n_above} of {len(above)} methods above Random by the margin ({parts['S1.above']}); Random at "
                   f"or above the lowest method on {n_cum} of {len(CUMULATIVE)} cumulative metrics "
                   f"({parts['S1.cumulative']})"),
        verdict=v, table=table, units=images)


# --------------------------------------------------------------------------------------------------------- S7 (§5.2)
def claim_order_sensitivity(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                            method: str = "Integrated Gradients", methods: Sequence[str] = paper.METHODS,
                            best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"), worst_on: str = "Comprehensiveness",
                            min_accuracy: float = MIN_ACCURACY,
                            accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S7 (§5.2): ``method`` (integrated gradients) is best on AOPC, LOdds and AUC (most relevant first) but worst
    on Comprehensiveness (least relevant first). Two parts: S7.best — per metric of ``best_on`` (oriented) and other
    method of ``methods``, ``method`` − the other per image above the margin, every cell; S7.worst — per other
    method, the other's oriented ``worst_on`` − ``method``'s above the margin, every cell; the claim by ``"S7"``
    (parts). per_sample, accuracy: as :func:`claim_random_separation`."""
    rules = {i: verdicts.rule(i) for i in ("S7", "S7.best", "S7.worst")}
    others = _present(per_sample, [m for m in methods if m != method], need=[method])
    reason, premise, premise_text = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    best, worst = {}, {}
    for metric in best_on:
        table = wide(per_sample, metric)
        groups = model_of(table)
        for m in others:
            best[f"{metric}: {method} − {m}"] = verdicts.effect(
                table[method].to_numpy(np.float64), table[m].to_numpy(np.float64), rule=rules["S7.best"],
                groups=groups, what=f"{metric}: {method} − {m}")
    table = wide(per_sample, worst_on)
    groups = model_of(table)
    for m in others:
        worst[f"{worst_on}: {m} − {method}"] = verdicts.effect(
            table[m].to_numpy(np.float64), table[method].to_numpy(np.float64), rule=rules["S7.worst"],
            groups=groups, what=f"{worst_on}: {m} − {method}")
    parts = {"S7.best": verdicts.decide(best, rules["S7.best"], untestable=reason),
             "S7.worst": verdicts.decide(worst, rules["S7.worst"], untestable=reason)}
    v = gate(verdicts.decide_parts(parts, rules["S7"], untestable=reason), premise)
    ranks = {metric: int(model_means(wide(per_sample, metric))[[method, *others]].mean()
                         .rank(ascending=False, method="min")[method]) for metric in [*best_on, worst_on]}
    held = {part: sum(j.outcome == "holds" for j in cells.values())
            for part, cells in (("S7.best", best), ("S7.worst", worst))}
    return verdicts.Claim(
        rules["S7"].claim, rule=rules["S7"], premise=premise_text,
        paper_value="I.G. best on AOPC, LOdds, AUC; worst on Comprehensiveness (all three datasets)",
        our_value=(f"rank of {method} among {len(others) + 1} methods (mean over the trained models, 1 = best): "
                   + ", ".join(f"{metric} {rank}" for metric, rank in ranks.items())
                   + f"; ahead of the other by the margin in {held['S7.best']} of {len(best)} comparisons "
                     f"({parts['S7.best']}), behind on {worst_on} in {held['S7.worst']} of {len(worst)} "
                     f"({parts['S7.worst']})"),
        verdict=v, table=pd.DataFrame([*_rows(best, part="S7.best"), *_rows(worst, part="S7.worst")]),
        units=units_of(per_sample[per_sample["method"] == method]))


# ---------------------------------------------------------------------------------------------------- S3 (Table 1)
ATTENTION_ABLATION = (("S3.gradient", "gradient, last layer", "Transformer-MM (last layer)", "Raw Attention"),
                      ("S3.gradient", "gradient, all layers", "Transformer-MM", "Rollout"),
                      ("S3.aggregation", "all-layer aggregation, no gradient", "Rollout", "Raw Attention"),
                      ("S3.aggregation", "all-layer aggregation, gradient", "Transformer-MM",
                       "Transformer-MM (last layer)"))
"""Table 1's four comparisons (the part they belong to, what is added, the variant with it, the variant without it):
the Transformer-MM rule on the last block is "last layer + gradient", rollout "all layers, no gradient"."""


def claim_attention_ablation(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                             comparisons=ATTENTION_ABLATION, min_accuracy: float = MIN_ACCURACY,
                             accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S3 (Table 1, §5.4): the gradient and the aggregation over all layers raise the SaCo of attention
    explanations. Per comparison of :data:`ATTENTION_ABLATION`, SaCo(with) − SaCo(without) per image, its t interval
    on the model means above the margin; the two comparisons of each ingredient decide its part (S3.gradient,
    S3.aggregation: every comparison), the claim by ``"S3"`` (parts). per_sample, accuracy: as
    :func:`claim_random_separation`."""
    rules = {i: verdicts.rule(i) for i in ("S3", "S3.gradient", "S3.aggregation")}
    _present(per_sample, ["Raw Attention"], need=list(dict.fromkeys(n for _, _, a, b in comparisons for n in (a, b))))
    reason, premise, premise_text = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    saco = wide(per_sample, "SaCo")
    groups = model_of(saco)
    cells: dict[str, dict] = {"S3.gradient": {}, "S3.aggregation": {}}
    rows = []
    for part, added, a, b in comparisons:
        j = verdicts.effect(saco[a].to_numpy(np.float64), saco[b].to_numpy(np.float64), rule=rules[part],
                            groups=groups, what=f"{a} − {b}")
        cells[part][added] = j
        rows += _rows({added: j}, part=part, **{"with": a, "without": b})
        rows[-1].update({"SaCo with": float(model_means(saco[[a]]).mean().iloc[0]),
                         "SaCo without": float(model_means(saco[[b]]).mean().iloc[0])})
    parts = {p: verdicts.decide(c, rules[p], untestable=reason) for p, c in cells.items()}
    v = gate(verdicts.decide_parts(parts, rules["S3"], untestable=reason), premise)
    means = model_means(saco).mean()
    order = [m for m in ("Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM") if m in means]
    n_hold = sum(j.outcome == "holds" for c in cells.values() for j in c.values())
    return verdicts.Claim(
        rules["S3"].claim, rule=rules["S3"], premise=premise_text,
        paper_value=" / ".join(f"{x:.4f}" for x in paper.TABLE_1.values())
                    + " (raw attention / rollout / last layer + gradient / Transformer-MM)",
        our_value=" / ".join(f"{means[m]:.3f}" for m in order)
                  + f" (mean over the trained models); gain beyond the margin in {n_hold} of {len(rows)} comparisons "
                    f"(gradient: {parts['S3.gradient']}; aggregation: {parts['S3.aggregation']})",
        verdict=v, table=pd.DataFrame(rows), units=units_of(per_sample[per_sample["method"] == "Raw Attention"]))


# ---------------------------------------------------------------------------------------------------- S4 (Table 2)
def claim_k_decline(k_frame: pd.DataFrame, *, columns, accuracy: pd.DataFrame | None = None,
                    random: str = "Random", methods: Sequence[str] = paper.METHODS,
                    min_accuracy: float = MIN_ACCURACY,
                    accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S4 (Table 2, §5.5): SaCo declines (slightly) as the number of groups K grows, for most methods.

    k_frame: one row per (setting ×) (replica ×) method × sample with SaCo at every K (``columns``: ``{K: column}``,
    at least two). Per method of ``methods`` (the paper's ten, those present), the decline SaCo(smallest K) −
    SaCo(largest K) per image, its t interval on the model means above the margin (``verdicts.rule("S4")``: more than
    half of the methods must hold). Random's own decline is shown in the table, not used (a random map's SaCo is 0
    in expectation at every K). "Slightly" is not tested: the paper gives no bound."""
    rule = verdicts.rule("S4")
    ks = sorted(dict(columns))
    if len(ks) < 2:
        raise ValueError(f"columns must map at least two values of K to SaCo columns, got {columns!r}")
    lo, hi = dict(columns)[ks[0]], dict(columns)[ks[-1]]
    methods = _present(k_frame, [m for m in methods if m != random])
    reason, premise, premise_text = _premises(k_frame, accuracy, min_accuracy, accuracy_tolerance)
    first, last = wide(k_frame, lo), wide(k_frame, hi)
    decline = first - last
    groups = model_of(decline)
    cells = {m: verdicts.effect(decline[m].to_numpy(np.float64), rule=rule, groups=groups,
                                what=f"{m}: SaCo K={ks[0]} − K={ks[-1]}") for m in methods}
    v = gate(verdicts.decide(cells, rule, untestable=reason), premise)
    mf, ml = model_means(first).mean(), model_means(last).mean()
    rows = _rows(cells)
    for row, m in zip(rows, methods):
        row.update({"method": m, f"SaCo K={ks[0]}": float(mf[m]), f"SaCo K={ks[-1]}": float(ml[m])})
    if random in decline:
        rd = model_means(decline[[random]]).mean().iloc[0]
        rows.append({"method": random, "cell": f"{random} (shown, not used)", "estimate": float(rd),
                     f"SaCo K={ks[0]}": float(mf[random]), f"SaCo K={ks[-1]}": float(ml[random])})
    n_hold = sum(j.outcome == "holds" for j in cells.values())
    return verdicts.Claim(
        rule.claim, rule=rule, premise=premise_text,
        paper_value="most methods decline from K = 5 to 20 (e.g. Transformer-MM "
                    + " / ".join(f"{x:.4f}" for x in paper.TABLE_2["Transformer-MM"]) + "); IG and ATTCAT roughly flat",
        our_value=(f"{n_hold} of {len(cells)} methods decline from K={ks[0]} to K={ks[-1]} by more than the margin "
                   f"({sum(j.outcome == 'fails' for j in cells.values())} shown not to); mean decline "
                   f"{float(np.mean([j.interval.estimate for j in cells.values()])):+.3f}"),
        verdict=v, table=pd.DataFrame(rows), units=min(units_of(k_frame[k_frame["method"] == m]) for m in methods))


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


def claim_saturation(frame: pd.DataFrame, *, good: str = "Transformer Attribution",
                     poor: tuple[str, ...] = ("Raw Attention", "Random"), at: float = 0.3,
                     accuracy: pd.DataFrame | None = None, min_accuracy: float = MIN_ACCURACY,
                     accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S5 (Fig. 3) over many images: the cumulative drops saturate for every method (so AOPC is high for all),
    while SaCo separates the good explanation from the poor ones. Two parts, each decided by its rule:

    - S5.saturation (``verdicts.rule("S5.saturation")``): per image, 1 when every method's cumulative drop after the
      top ``at`` of the pixels has saturated (``saturated``), else 0; the share of such images with
      :func:`faithlab.study.verdicts.share_interval` (t on the replicas' shares ∪ Wilson) above the rule's margin;
    - S5.separation (``"S5.separation"``): per image, SaCo(``good``) − SaCo(poor) for each of ``poor``, its t
      interval on the replica means above the margin, every comparison.

    The claim by ``"S5"`` (parts). frame: :func:`case_study_frame` with ``setting`` and/or ``replica`` columns naming
    the trained model of every row when several are pooled (each trained model one replica). accuracy: optional, per trained model (the accuracy premise: ``min_accuracy`` within
    ``accuracy_tolerance``). Premise (the mechanism): removal
    matters group by group on ``good``'s groups (:func:`~faithlab.study.papers.saco.claims.removal_premise`)."""
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

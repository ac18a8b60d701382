"""SaCo's comparisons of the methods image by image, against Random Attribution or between methods, and the claims
they decide: S1 (Random separation, Fig. 4), S7 (removal order), S3 (attention ablation, Table 1) and S4 (number of
groups K, Table 2). Each claim is decided by its pre-registered rules (``faithlab/study/verdicts/registered/saco.toml``):
a per-image difference is averaged per trained model (a setting × replica) and judged by the t interval on those
model means against the rule's margin (:func:`faithlab.study.verdicts.effect`); a statistic that is not a mean is computed
once per trained model (:func:`faithlab.study.verdicts.replica_judgement`). The cells combine as the rule says
(:func:`faithlab.study.verdicts.decide`), a claim of named parts by :func:`faithlab.study.verdicts.decide_parts`; then the
premises: every ViT learned the digits, and removal matters group by group (the chapter's mechanism)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab.study import verdicts
from faithlab.study.papers.saco import paper
from faithlab.study.papers.saco._common import (ACCURACY_TOLERANCE, FIRST, MIN_ACCURACY, accuracy_reason, gate,
                                             model_means, model_of, premise_sentence, removal_premise, units_of, wide)
from faithlab.study.papers.saco.scores import HIGHER_IS_BETTER

__all__ = ["narrow", "claim_random_separation", "claim_order_sensitivity", "ATTENTION_ABLATION",
           "claim_attention_ablation", "claim_k_decline", "CUMULATIVE"]

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
      :func:`~faithlab.study.papers.saco.scores.random_saco_frame`, a random map on more images of the same models; else ``random``'s rows of ``per_sample``),
      its t interval on the model means within ± the margin (two one-sided cells);
    - S1.above: per method of ``methods`` (the paper's ten, those present), SaCo(method) − SaCo(Random) per image
      above the margin; more than half of the methods must hold;
    - S1.cumulative: per cumulative metric (oriented), per trained model Random's mean minus the lowest method's
      mean, its t interval on the models above 0; every metric must hold.

    per_sample: one row per (setting ×) (replica ×) method × sample with the metrics of :data:`HIGHER_IS_BETTER`
    (and the group drops :data:`~faithlab.study.papers.saco._common.FIRST` / ``LAST`` for the mechanism premise, checked
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

"""SaCo's claims on the attention ablation (S3) and the number of groups (S4), each decided by the rules registered
above its claim function (the package's docstring says how)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.saco.claims.registration import CHAPTER, PARTS
from faithlab_study.papers.saco import paper
from faithlab_study.papers.saco.experiments import model_means, model_of, units_of, wide
from faithlab_study.papers.saco.claims.premises import (ACCURACY_TOLERANCE, MIN_ACCURACY, gate, judged_rows,
                                                        methods_present, premises_of)


# ---------------------------------------------------------------------------------------------------- S3 (Table 1)
ATTENTION_ABLATION = (("S3.gradient", "gradient, last layer", "Transformer-MM (last layer)", "Raw Attention"),
                      ("S3.gradient", "gradient, all layers", "Transformer-MM", "Rollout"),
                      ("S3.aggregation", "all-layer aggregation, no gradient", "Rollout", "Raw Attention"),
                      ("S3.aggregation", "all-layer aggregation, gradient", "Transformer-MM",
                       "Transformer-MM (last layer)"))
"""Table 1's four comparisons (the part they belong to, what is added, the variant with it, the variant without it):
the Transformer-MM rule on the last block is "last layer + gradient", rollout "all layers, no gradient"."""


@CHAPTER.registered(
    "S3.gradient", claim="S3, part: the gradient raises SaCo of attention explanations",
    statistic=("per test image, SaCo(with gradient) − SaCo(without), its mean per trained model; two cells: at the "
               "last layer (Transformer-MM last layer − Raw Attention) and over all layers (Transformer-MM − Rollout)"),
    margin_source=("half the smallest SaCo gain the paper reads as an improvement (Table 1: Rollout − Raw Attention "
                   "= 0.2453 − 0.1835 = 0.0618; the gradient's own gains are 0.1948 and 0.2105)"),
    over="comparisons", null="the variant without the gradient",
    fingerprint="39e4717b418e",
)
@CHAPTER.registered(
    "S3.aggregation", claim="S3, part: all-layer aggregation raises SaCo of attention explanations",
    statistic=("per test image, SaCo(all layers) − SaCo(last layer), its mean per trained model; two cells: without "
               "gradient (Rollout − Raw Attention) and with it (Transformer-MM − Transformer-MM last layer)"),
    over="comparisons", null="the variant of the last layer",
    note="'This improvement occurs irrespective of whether the gradient is used' (§5.4): both cells.",
    fingerprint="7d1b7aa76ce0",
)
@PARTS.registered(
    "S3", claim="S3: gradient and all-layer aggregation raise SaCo of attention explanations (Table 1)",
    statistic="the two named ingredients S3.gradient and S3.aggregation, each decided by its own rule",
    margin=0.0309, margin_source="the parts' own margins (half of Table 1's smallest gain, 0.0618)",
    parts=["S3.gradient", "S3.aggregation"],
    note="partly when one of the two ingredients is reproduced and the other decided.",
    fingerprint="8c36f322600f",
)
def claim_attention_ablation(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                             comparisons=ATTENTION_ABLATION, min_accuracy: float = MIN_ACCURACY,
                             accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S3 (Table 1, §5.4): the gradient and the aggregation over all layers raise the SaCo of attention
    explanations. Per comparison of :data:`ATTENTION_ABLATION`, SaCo(with) − SaCo(without) per image, its t interval
    on the model means above the margin; the two comparisons of each ingredient decide its part (S3.gradient,
    S3.aggregation: every comparison), the claim by ``"S3"`` (parts). per_sample, accuracy: as
    :func:`claim_random_separation`."""
    rules = {i: verdicts.rule(i) for i in ("S3", "S3.gradient", "S3.aggregation")}
    methods_present(per_sample, ["Raw Attention"], need=list(dict.fromkeys(n for _, _, a, b in comparisons for n in (a, b))))
    reason, premise, premise_text = premises_of(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    saco = wide(per_sample, "SaCo")
    groups = model_of(saco)
    cells: dict[str, dict] = {"S3.gradient": {}, "S3.aggregation": {}}
    rows = []
    for part, added, a, b in comparisons:
        j = verdicts.effect(saco[a].to_numpy(np.float64), saco[b].to_numpy(np.float64), rule=rules[part],
                            groups=groups, what=f"{a} − {b}")
        cells[part][added] = j
        rows += judged_rows({added: j}, part=part, **{"with": a, "without": b})
        rows[-1].update({"SaCo with": float(model_means(saco[[a]]).mean().iloc[0]),
                         "SaCo without": float(model_means(saco[[b]]).mean().iloc[0])})
    parts = {p: verdicts.decide(c, rules[p], untestable=reason) for p, c in cells.items()}
    v = gate(verdicts.decide_parts(parts, rules["S3"], untestable=reason), premise)
    means = model_means(saco).mean()
    order = [m for m in ("Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM") if m in means]
    n_hold, n_weaker = (sum(j.outcome == o for c in cells.values() for j in c.values()) for o in ("holds", "weaker"))
    return verdicts.Claim(
        rules["S3"].claim, rule=rules["S3"], premise=premise_text,
        paper_value=" / ".join(f"{x:.4f}" for x in paper.TABLE_1.values())
                    + " (raw attention / rollout / last layer + gradient / Transformer-MM)",
        our_value=" / ".join(f"{means[m]:.3f}" for m in order)
                  + f" (mean over the trained models); gain beyond the margin in {n_hold}, shown but smaller in "
                    f"{n_weaker} of {len(rows)} comparisons (gradient: {parts['S3.gradient']}; aggregation: "
                    f"{parts['S3.aggregation']})",
        verdict=v, table=pd.DataFrame(rows), units=units_of(per_sample[per_sample["method"] == "Raw Attention"]))


# ---------------------------------------------------------------------------------------------------- S4 (Table 2)
@CHAPTER.registered(
    "S4", claim="S4: SaCo declines slightly as K grows for most methods (Table 2)",
    statistic=("per test image and method of the paper's ten, SaCo(K = 5) − SaCo(K = 20), its mean per trained "
               "model; one cell per method"),
    margin_source=("half the smallest SaCo gain the paper reads as an improvement (Table 1: 0.0618); the paper's own "
                   "Table 2 has 7 of its 10 methods declining by more than it"),
    decision="share", share=0.51, over="methods", null="no change with K",
    note=("'most methods exhibit a slight decline' (§5.5): more than half of the ten (6 of 10), fixed in advance; "
          "'slight' is not tested (the paper gives no bound). Random's own change over K is shown, not used."),
    fingerprint="eb8c78d64e07",
)
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
    methods = methods_present(k_frame, [m for m in methods if m != random])
    reason, premise, premise_text = premises_of(k_frame, accuracy, min_accuracy, accuracy_tolerance)
    first, last = wide(k_frame, lo), wide(k_frame, hi)
    decline = first - last
    groups = model_of(decline)
    cells = {m: verdicts.effect(decline[m].to_numpy(np.float64), rule=rule, groups=groups,
                                what=f"{m}: SaCo K={ks[0]} − K={ks[-1]}") for m in methods}
    v = gate(verdicts.decide(cells, rule, untestable=reason), premise)
    mf, ml = model_means(first).mean(), model_means(last).mean()
    rows = judged_rows(cells)
    for row, m in zip(rows, methods):
        row.update({"method": m, f"SaCo K={ks[0]}": float(mf[m]), f"SaCo K={ks[-1]}": float(ml[m])})
    if random in decline:
        rd = model_means(decline[[random]]).mean().iloc[0]
        rows.append({"method": random, "cell": f"{random} (shown, not used)", "estimate": float(rd),
                     f"SaCo K={ks[0]}": float(mf[random]), f"SaCo K={ks[-1]}": float(ml[random])})
    n_hold, n_weaker, n_absent = (sum(j.outcome == o for j in cells.values()) for o in ("holds", "weaker", "absent"))
    return verdicts.Claim(
        rule.claim, rule=rule, premise=premise_text,
        paper_value="most methods decline from K = 5 to 20 (e.g. Transformer-MM "
                    + " / ".join(f"{x:.4f}" for x in paper.TABLE_2["Transformer-MM"]) + "); IG and ATTCAT roughly flat",
        our_value=(f"{n_hold} of {len(cells)} methods decline from K={ks[0]} to K={ks[-1]} by more than the margin, "
                   f"{n_weaker} by less ({n_absent} shown without a meaningful decline); mean decline "
                   f"{float(np.mean([j.interval.estimate for j in cells.values()])):+.3f}"),
        verdict=v, table=pd.DataFrame(rows), units=min(units_of(k_frame[k_frame["method"] == m]) for m in methods))

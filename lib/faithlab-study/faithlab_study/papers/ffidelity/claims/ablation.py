"""F-Fidelity's ablation claim F3 (App. D.7, Fig. 3): fine-tuning alone improves Fidelity and F-Fidelity improves
further, two named parts decided by the rules registered above the claim function, judged against the nulls of
:mod:`~faithlab_study.papers.ffidelity.claims.ranking`."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


from faithlab_study import verdicts
from faithlab_study.papers.ffidelity.claims.registration import BASELINE, GT_NULL, OOD, PER_REPLICA, RANKING
from faithlab_study.papers.ffidelity.claims.ranking import (apply_premise, baseline_premise, chance_premise,
                                                           chance_table, premise_text, replica_judgement,
                                                           replica_means, two_replicas)


@RANKING.registered(
    "F3.finetune",
    claim="Ablation, part 1: fine-tuning alone improves Fidelity (Fidelity+Fine-tune above Fidelity; App. D.7, Fig. 3)",
    statistic=("per trained replica, Fidelity+Fine-tune's oriented micro correlation minus Fidelity's (the three "
               "micro correlations signed so that +1 is ideal, averaged over them, the degradation seeds and the "
               "sparsity levels)"),
    margin=0.1192,
    margin_source=("half of one step's share of F-Fidelity's lead over Fidelity in oriented micro correlation in "
                   "Table 1 (SG-SQ, the ablation's setting: 1.00 against 0.52), the two steps of Fig. 3 taken as "
                   "equal (its values were lost)"),
    decision="single", premises=[OOD, "at least one method of the chain lies beyond its chance range", BASELINE],
    fingerprint="90504f5fe29e",
)
@RANKING.registered(
    "F3.ffid",
    claim="Ablation, part 2: F-Fidelity improves on Fidelity+Fine-tune (App. D.7, Fig. 3)",
    statistic="per trained replica, F-Fidelity's oriented micro correlation minus Fidelity+Fine-tune's",
    margin=0.1192,
    margin_source="as F3.finetune: half of one step's share of F-Fidelity's lead over Fidelity in Table 1 (SG-SQ)",
    decision="single", premises=[OOD, "at least one method of the chain lies beyond its chance range", BASELINE],
    fingerprint="5ba75278cb89",
)
@PER_REPLICA.registered(
    "F3",
    claim="Ablation: fine-tuning alone improves Fidelity, and F-Fidelity improves further (App. D.7, Fig. 3)",
    statistic="its two named parts, F3.finetune and F3.ffid", margin=0.1192,
    margin_source="the parts' margin (F3.finetune, F3.ffid)", decision="parts", parts=["F3.finetune", "F3.ffid"],
    share=0.5, null=GT_NULL, premises=[OOD],
    note=("two named parts in the paper's text ('Fidelity+Fine-tune shows a marked improvement over the original "
          "Fidelity'; 'F-Fidelity further advances this'): one of two reproduced is partly"),
    fingerprint="998b2d9842f9",
)
def claim_ablation(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, n_images: int,
                   chain: Sequence[str] = ("Fidelity", "Fidelity+Fine-tune", "F-Fidelity"),
                   mechanism: verdicts.Premise | None = None, tol: float = 0.05) -> verdicts.Claim:
    """Claim F3 of App. D.7 (Fig. 3), two named parts: fine-tuning alone improves Fidelity (F3.finetune:
    ``chain[1]`` above ``chain[0]``) and F-Fidelity improves further (F3.ffid: ``chain[2]`` above ``chain[1]``),
    for one ``group == value``, by the rules F3.finetune, F3.ffid and F3 (parts).

    cells: :func:`micro_cells` holding every method of the chain, with a "replica" column (at least 2); null:
    :func:`ground_truth_null`. Per part: the later method's oriented micro correlation minus the earlier's, averaged
    over the seeds and levels of each replica, a t interval on the replica values against the part's margin.
    Premises: the first method is not within ``tol`` of +1 and the last is defined; at least one method of the chain
    has a mean GT micro correlation beyond its chance range; ``mechanism``. Raises ValueError with fewer than 2
    replicas."""
    if len(chain) != 3:
        raise ValueError(f"chain must name the three methods of the ablation, got {list(chain)}")
    rule = verdicts.rule("F3")
    parts = {p: verdicts.rule(p) for p in rule.parts}
    oriented = replica_means(cells, group=group, value=value, column="oriented micro", methods=chain)
    two_replicas(oriented, "claim_ablation")
    part = cells[(cells[group] == value) & cells["method"].isin(list(chain))]
    chance = chance_table(part, null, group=group, value=value, methods=chain)
    null_text, null_why = chance_premise(chance)
    untestable = verdicts.first_reason(baseline_premise(oriented.mean(), chain[-1], chain[0], tol), null_why)
    units = int(n_images) * len(oriented)
    steps = dict(zip(rule.parts, zip(chain, chain[1:])))
    judged = {p: replica_judgement((oriented[b] - oriented[a]).to_numpy(float), parts[p], units=units,
                                   what=f"{b} − {a}") for p, (a, b) in steps.items()}
    decided = {p: apply_premise(verdicts.decide([j], parts[p], untestable=untestable), mechanism)
               for p, j in judged.items()}
    v = verdicts.decide_parts(decided, rule)
    rows = pd.DataFrame(verdicts.judgement_table(judged)).rename(columns={"cell": "part"})
    rows["part verdict"] = [str(decided[p]) for p in judged]
    table = pd.concat([chance.assign(**{"oriented micro": chance["method"].map(oriented.mean())}), rows],
                      ignore_index=True)
    return verdicts.Claim(
        f"F3 ({value}): Ablation: {chain[1]} beats {chain[0]} and {chain[-1]} beats both (App. D.7, Fig. 3)",
        rule=rule,
        premise=premise_text(mechanism) + f"{chain[0]}'s oriented micro correlation "
                f"({oriented[chain[0]].mean():.2f}) must not be within {tol:g} of the ideal +1; {null_text}",
        paper_value="F-Fid > Fid+FT > Fid on all three correlations (Fig. 3)",
        our_value="micro oriented mean " + ", ".join(f"{m} {oriented[m].mean():.2f}" for m in chain)
                  + f" ({len(oriented)} replicas)",
        verdict=v, table=table, units=units, kept_replicas=len(oriented))

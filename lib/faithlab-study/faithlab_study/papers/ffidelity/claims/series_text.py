"""F-Fidelity's time-series and text study (spec §1.8–1.9; Tables 3–4, 6–7): the claims on the rankings of the
models two notebooks share (:class:`~faithlab_study.papers.ffidelity.setup.SeriesTextModels`; series ranking, text
equivalence) and their glue keys (:func:`glue_key`).

Every claim function takes ``paper``, the paper's value shown beside ours (not ``paper_value``, which
:meth:`faithlab_study.artifacts.Outputs.claim` keeps for a claim given as text), and ``seed``, the generator of all its
resampling; notebooks call them as ``out.claim(fn, frames, ..., seed=seed)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.ffidelity.claims.registration import (BASELINE, GT_NULL, PER_REPLICA, RANK_LEADS,
                                                                RANK_LEADS_SOURCE, REGISTERED, rank_leads_change)


def glue_key(label: str) -> str:
    """A short key for the glued numbers of a model labelled ``label`` (:meth:`SeriesTextModels.label`): its first
    word in lower-case letters and digits, ``_pad`` added for a pad-deletion model ("CNN-1D" → "cnn1d",
    "LSTM (pad deletion)" → "lstm_pad")."""
    return "".join(c for c in label.split()[0].lower() if c.isalnum()) + ("_pad" if "pad" in label else "")


# ---------------------------------------------------------------------------------- series and text rankings
def _gt_chance(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, method: str
               ) -> tuple[float, verdicts.Null | None]:
    """One method's mean "GT micro" correlation (:func:`micro_cells`) and its chance level under a permuted
    ground-truth order (:func:`ground_truth_null`'s draws, each averaged over the replicas; None when fewer than 20
    are defined)."""
    from faithlab_study.papers.ffidelity.claims.ranking import cell_draws

    observed = float(cells.loc[(cells[group] == value) & (cells["method"] == method), "GT micro"].mean())
    if not len(null.loc[(null[group] == value) & (null["method"] == method)]):
        raise ValueError(f"null holds no draws for {group} {value!r}, method {method!r}: pass ground_truth_null's "
                         "frame of the same curves")
    draws = cell_draws(null, group, value, method, "GT micro").dropna()
    what = "ground-truth order permuted over the explainers"
    return observed, (verdicts.Null(what, tuple(draws.tolist())) if len(draws) >= 20 else None)


def _range(value: float, null: verdicts.Null | None) -> str:
    return f"{value:.2f} (chance " + ("undefined" if null is None else f"[{null.low:.2f}, {null.high:.2f}]") + ")"


@PER_REPLICA.registered(
    "Series.ranking",
    claim="Time series: F-Fidelity ranks the degraded explainers better than Fidelity and ROAR (Tables 3, 6)",
    statistic=("per series model and trained replica, a competitor's mean micro rank minus F-Fidelity's (micro ranks "
               "among the four methods, averaged over the degradation seeds, sparsity levels and three correlations)"),
    margin={c: RANK_LEADS[c] for c in ("Fidelity", "ROAR")}, margin_source=RANK_LEADS_SOURCE,
    over="model × competitor cells", null=GT_NULL,
    premises=["FF.OOD holds for the series model",
              "at least one method's correlation with the ground truth lies above its chance range", BASELINE],
    unit="trained replica (its test series, pooled, are the units behind it)",
    note=("R-Fidelity is not a competitor: the paper's claim on series is 'F-Fidelity and R-Fidelity outperform "
          "Fidelity and ROAR' (Table 6 ranks R-Fidelity ahead of F-Fidelity)"),
    log=[
        {**REGISTERED, "fingerprint": "7ce81d8f517d"},
        *rank_leads_change(0.4917, "half the smallest lead in mean micro rank of F-Fidelity over Fidelity or ROAR in "
                                   "Tables 3 and 6 (ROAR, PAM LSTM: 2.05 against 1.07)",
                           competitors=("Fidelity", "ROAR"), fingerprint="e51b06c414de"),
    ],
)
def claim_series_ranking(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str], n_inputs: int,
                         group: str = "model", competitors: Sequence[str] = ("Fidelity", "ROAR"),
                         target: str = "F-Fidelity", baseline: str = "Fidelity",
                         mechanisms: Mapping[str, verdicts.Premise] | None = None, tol: float = 0.05,
                         paper: str = "") -> verdicts.Claim:
    """Tables 3 and 6 (time series): ``target`` ranks the degraded explainers better than ``competitors`` (the
    paper: "F-Fidelity and R-Fidelity outperform Fidelity and ROAR"), over the series ``models`` (values of
    ``group``), by its rule (``verdicts.rule("Series.ranking")``).

    cells: :func:`micro_cells` with a "replica" column (at least 2; micro ranks among the four methods); null:
    :func:`ground_truth_null` of the same curves. n_inputs: test series per replica. Per model × competitor: the
    competitor's mean micro rank minus the target's, averaged over the seeds and levels of each replica, a t interval
    on the replica values against the rule's margin; every cell of the testable models must hold. Premises, per
    model (a model failing one leaves): some method's mean GT micro correlation lies above its 95 % chance range
    under a permuted ground-truth order; ``baseline``'s oriented micro correlation is not within ``tol`` of +1; its
    FF.OOD premise (``mechanisms[model]``) holds (undecided: the claim is inconclusive). Raises ValueError with
    fewer than 2 replicas. Table: one row per model × competitor."""
    from faithlab_study.papers.ffidelity.claims.ranking import apply_premise
    from faithlab_study.papers.ffidelity.claims.ranking import two_replicas, replica_judgement, replica_means

    rule = verdicts.rule("Series.ranking")
    if not models:
        raise ValueError("models must name at least one series model of the cells")
    rows, cells_judged, reasons, chance_texts, ours, undecided, kept = [], {}, [], [], [], [], []
    methods = [*competitors, target]
    for model in models:
        ranks = replica_means(cells, group=group, value=model, column="micro rank", methods=methods)
        two_replicas(ranks, "claim_series_ranking")
        oriented = replica_means(cells, group=group, value=model, column="oriented micro", methods=[baseline]).mean()
        chance = {m: _gt_chance(cells, null, group=group, value=model, method=m)
                  for m in dict.fromkeys([*methods, *cells.loc[cells[group] == model, "method"]])}
        above = [m for m, (x, n) in chance.items() if n is not None and x > n.high]
        premise = (mechanisms or {}).get(model)
        reason = verdicts.first_reason(
            None if above else "no method's correlation with the ground-truth order lies above its chance range "
                               "(permuted order), so the ranks compare noise",
            verdicts.at_ideal(oriented[baseline], ideal=1.0, tol=tol, what=f"{baseline}'s oriented micro correlation"),
            None if premise is None or premise.holds is not False else f"FF.OOD fails: {premise.text}")
        if reason is not None:
            reasons.append(f"{model}: {reason}")
        elif premise is not None and premise.holds is None:
            undecided.append(premise)
        chance_texts.append(f"{model}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items())
                            + f"; above chance: {', '.join(above) or 'none'}")
        ours.append(f"{model}: " + ", ".join(f"{m} {ranks[m].mean():.2f}" for m in methods))
        units = int(n_inputs) * len(ranks)
        nan = float("nan")
        for m in competitors:
            j = replica_judgement((ranks[m] - ranks[target]).to_numpy(float), rule, units=units, setting=m,
                                  what=f"{model}: {m} − {target}")
            if reason is None:
                cells_judged[f"{model} vs {m}"] = j
                kept.append(len(ranks))
            rows.append({group: model, "competitor": m, f"{target} rank": float(ranks[target].mean()),
                         "competitor rank": float(ranks[m].mean()), "difference": j.interval.estimate if j else nan,
                         "low": j.interval.low if j else nan, "high": j.interval.high if j else nan,
                         "margin": rule.margin_for(m),
                         "outcome": (j.outcome if j else "undefined") if reason is None else "not testable",
                         "replicas": len(ranks),
                         "units": units, "testable": reason is None})
    untestable = None if cells_judged else "; ".join(reasons) or "no testable model"
    v = verdicts.decide(cells_judged, rule, untestable=untestable)
    for premise in undecided:
        v = apply_premise(v, premise)
    return verdicts.Claim(
        f"Time series: {target} ranks the degraded explainers better than {' and '.join(competitors)} (Tables 3, 6)",
        rule=rule,
        premise=f"per model: its FF.OOD check holds, some method's mean GT micro correlation (−MoRF vs GT, +LeRF vs "
                f"GT) lies above its 95 % chance range with the ground-truth order permuted over the explainers, and "
                f"{baseline}'s oriented micro correlation is not within {tol:g} of the ideal +1: "
                + "; ".join(chance_texts) + (f"; left out: {'; '.join(reasons)}" if reasons else ""),
        paper_value=paper, our_value="mean micro rank over 3 correlations: " + "; ".join(ours), verdict=v,
        table=pd.DataFrame(rows), units=min((j.interval.units for j in cells_judged.values() if j), default=None),
        kept_replicas=min(kept, default=None))


def lead_below_margin(cells: pd.DataFrame, null: pd.DataFrame, rule: verdicts.Rule, *, values: Sequence,
                      counted: Sequence, group: str, a: str, b: str, n_units: int, above_chance: Sequence[str],
                      what: str) -> tuple[verdicts.Verdict, list[dict], list[str], list[str], dict]:
    """The decision of an "``a`` leads ``b`` by less than the margin" rule (Text.equivalence, FF.ROAD), per value of
    ``group``: ``a``'s oriented micro correlation minus ``b``'s, averaged over the seeds and levels of each replica,
    a t interval on the replica values against ``rule``'s margin (direction below). Premise per value: every method
    of ``above_chance`` recovers the ground-truth order above chance (its mean GT micro correlation above its 95 %
    range under a permuted order); a counted value failing it leaves, and every testable counted value must hold.
    Returns the verdict, the table rows (one per value), the "ours" texts, the chance texts and the judgements."""
    from faithlab_study.papers.ffidelity.claims.ranking import two_replicas, replica_judgement, replica_means

    rows, judged, reasons, texts, chance_texts = [], {}, [], [], []
    for value in values:
        oriented = replica_means(cells, group=group, value=value, column="oriented micro", methods=[a, b])
        two_replicas(oriented, what)
        chance = {m: _gt_chance(cells, null, group=group, value=value, method=m) for m in (b, a)}
        reason = verdicts.first_reason(
            *(None if n is not None and x > n.high else f"{m}'s GT micro correlation {_range(x, n)} is not above "
              "chance (permuted ground-truth order)" for m, (x, n) in chance.items() if m in above_chance))
        units = int(n_units) * len(oriented)
        j = replica_judgement((oriented[a] - oriented[b]).to_numpy(float), rule, units=units,
                              what=f"{value}: {a} − {b}")
        reason = reason or (None if j is not None else "fewer than 2 replicas with defined correlations")
        if value in counted:
            if reason is None:
                judged[value] = j
            else:
                reasons.append(f"{value}: {reason}")
            chance_texts.append(f"{value}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items()))
        nan = float("nan")
        i = j.interval if j is not None else verdicts.Interval(nan, nan, nan, 0.95, rule.interval, units,
                                                                len(oriented))
        rows.append({group: value, "counted": value in counted, b: float(oriented[b].mean()),
                     a: float(oriented[a].mean()), "difference": i.estimate, "low": i.low, "high": i.high,
                     "margin": rule.margin_for(), "outcome": j.outcome if reason is None else "not testable",
                     f"{b} GT micro": chance[b][0], f"{a} GT micro": chance[a][0], "testable": reason is None,
                     "why": reason or "", "replicas": i.replicas, "units": units})
        texts.append(f"{value}: {b} {rows[-1][b]:.2f}, {a} {rows[-1][a]:.2f}, difference {i.estimate:+.3f} "
                     f"[{i.low:+.3f}, {i.high:+.3f}]")
    v = verdicts.decide(judged, rule, untestable=None if judged else "; ".join(reasons) or f"no counted {group}")
    return v, rows, texts, chance_texts, judged


@PER_REPLICA.registered(
    "Text.equivalence",
    claim=("Text: the models are robust to removal, so plain Fidelity ranks the explainers about as well as "
           "F-Fidelity (Tables 4, 7)"),
    statistic=("per text model and trained replica, F-Fidelity's oriented micro correlation minus Fidelity's "
               "(averaged over degradation seeds and sparsity levels)"),
    direction="below", margin=0.105,
    margin_source=("half the smallest lead of F-Fidelity over Fidelity in oriented micro correlation in the paper's "
                   "image and time-series tables (Table 5, ViT: 1.00 against 0.79): a lead below it on text is no "
                   "meaningful lead"),
    over="text models", null=f"{GT_NULL} (two rankings at chance are equal by construction)",
    premises=["Fidelity and F-Fidelity both recover the ground-truth order above chance"],
    unit="trained replica (its test sequences, pooled, are the units behind it)",
    note=("one-sided: Fidelity better than F-Fidelity also supports 'Fidelity suffices on text'; decided on the "
          "paper's removal (zero embedding), the pad-deletion variant shown beside it"),
    fingerprint="98ca035daf2c",
)
def claim_text_equivalence(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str], n_inputs: int,
                           counted: Sequence[str] | None = None, group: str = "model", a: str = "F-Fidelity",
                           b: str = "Fidelity", paper: str = "") -> verdicts.Claim:
    """Tables 4 and 7 (text): the models are robust to removal, so ``b`` (Fidelity) ranks the explainers about as
    well as ``a`` (F-Fidelity), by its rule (``verdicts.rule("Text.equivalence")``).

    cells, null: as :func:`claim_series_ranking`. models: the text models shown (values of ``group``); counted:
    those that decide the verdict (default all; e.g. the paper's zero-embedding removal, with the pad-deletion
    variant shown beside it). Per model: ``a``'s oriented micro correlation minus ``b``'s, averaged over the seeds
    and levels of each replica, a t interval on the replica values; the paper's direction: below the margin (a lead
    of ``a`` smaller than the smallest meaningful one). Premise and null: both methods recover the ground-truth order
    above chance — their mean GT micro correlation above its 95 % range under a permuted order — else two rankings
    at chance are "equal" by construction; a counted model failing it leaves. Every testable counted model must
    hold. Raises ValueError with fewer than 2 replicas. Table: one row per model."""
    rule = verdicts.rule("Text.equivalence")
    if not models:
        raise ValueError("models must name at least one text model of the cells")
    counted = list(models) if counted is None else [m for m in models if m in set(counted)]
    v, rows, texts, chance_texts, judged = lead_below_margin(cells, null, rule, values=models, counted=counted,
                                                             group=group, a=a, b=b, n_units=n_inputs,
                                                             above_chance=(b, a), what="claim_text_equivalence")
    return verdicts.Claim(
        f"Text: models are robust to removal, so {b} ≈ {a} in ranking explainers (Tables 4, 7)", rule=rule,
        premise=f"both {a} and {b} recover the ground-truth order above chance: their mean GT micro correlation "
                "(−MoRF vs GT, +LeRF vs GT) above its 95 % range with the order permuted over the explainers: "
                + "; ".join(chance_texts),
        paper_value=paper, our_value="oriented micro correlation: " + "; ".join(texts), verdict=v,
        table=pd.DataFrame(rows), units=min((j.interval.units for j in judged.values()), default=None),
        kept_replicas=min((j.interval.replicas for j in judged.values()), default=None))

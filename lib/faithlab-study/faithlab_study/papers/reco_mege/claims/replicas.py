"""Claims on ReCo and MeGe across methods and families, each decided by its pre-registered rule
(registered above its claim function): R1 Grad-CAM has the best ReCo (Table 1,
:func:`claim_gradcam_best_reco`), R2 MeGe and ReCo fall as the k models are degraded (Fig. 4, Tables 9–10,
:func:`claim_mege_falls`), R3 1-Lipschitz models raise ReCo and MeGe (Tables 4–5, :func:`claim_lipschitz`).

ReCo is a maximum over thresholds, not a mean of per-image values, so every statistic here is computed once per
trained replica (one replica = one independent run of a family's whole k-fold training, on its own S= / S≠ sets;
:func:`replica_scores`) and judged by a t interval on those R values (:func:`faithlab_study.verdicts.replica_judgement`);
the images behind them are the claim's units. Each claim's premise is the chapter's mechanism premise
(:func:`~faithlab_study.papers.reco_mege.claims.premise.decide_premise`: the k models beat chance and are of comparable
accuracy, decided over the replicas), with the null of the comparison named in its rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.reco_mege.claims.registration import CHAPTER, DEGRADED, LIPSCHITZ, two_parts
from faithlab_study.verdicts import replication
from faithlab_study.verdicts.decisions import OUTCOMES
from faithlab_study.papers.reco_mege import paper
from faithlab_study.papers.reco_mege.claims.premise import TOLERANCE, decide_premise
from faithlab_study.papers.reco_mege.experiments.bootstrap import pooled_sets

__all__ = ["replica_scores", "s_equal_below_chance", "claim_gradcam_best_reco", "claim_mege_falls",
           "claim_lipschitz"]

_SCORES = ("MeGe", "ReCo")


def replica_scores(frame: pd.DataFrame, *, keys: Sequence[str] = ("task",)) -> pd.DataFrame:
    """ReCo and MeGe of every method on each replica's own S= / S≠ sets, from a
    :func:`~faithlab_study.papers.reco_mege.experiments.sets.pairs_frame` (rows: method × replica × sample, with ``keys`` columns
    such as ``task``, ``degradation`` or ``family``) → one row per (keys, replica, method) with ``ReCo``, ``MeGe``,
    ``n S=``, ``n S≠`` and ``units`` (the samples of D behind them). A replica without a ``replica`` column is
    replica 0."""
    if not isinstance(frame, pd.DataFrame) or not {"method", "sample"} <= set(frame.columns):
        raise ValueError("frame must be a pairs_frame with method and sample columns (and replica)")
    if not replication.has_replicas(frame):
        frame = frame.assign(replica=0)
    keys = [k for k in keys if k in frame.columns]
    rows = []
    for key, part in frame.groupby([*keys, "replica"], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        pooled, units = pooled_sets(part)
        for m, v in pooled.items():
            rows.append({**dict(zip([*keys, "replica"], key)), "method": m, "ReCo": v["reco"], "MeGe": v["mege"],
                         "n S=": v["counts"]["S="], "n S≠": v["counts"]["S≠"], "units": len(units)})
    return pd.DataFrame(rows)


def s_equal_below_chance(frame: pd.DataFrame, *, what: str) -> verdicts.Premise:
    """The null of a method's S=: per image, the mean of its S= distances with the image pairings shuffled minus the
    S= distances themselves (:func:`~faithlab_study.papers.reco_mege.experiments.sets.pairs_frame` rows of one method), its t
    interval over the replicas' means (:func:`faithlab_study.verdicts.mean_interval`) → a premise that holds when it lies
    above 0 (explanations of one image by two agreeing models are more alike than of two different images), fails
    when it lies wholly below, undecided when it straddles 0."""
    width = sum(c.startswith("distance ") for c in frame.columns)
    d = frame[[f"distance {j}" for j in range(width)]].to_numpy(float)
    s = frame[[f"shuffled {j}" for j in range(width)]].to_numpy(float)
    ok = (frame[[f"kind {j}" for j in range(width)]].to_numpy() == 0) & ~np.isnan(d) & ~np.isnan(s)
    count = ok.sum(1)
    gap = np.where(ok, s - d, 0.0).sum(1) / np.maximum(count, 1)
    gap[count == 0] = np.nan
    groups = replication.groups(frame)
    if int((count > 0).sum()) < 2:
        return verdicts.Premise(None, f"{what}: fewer than 2 images with an S= pair")
    interval = verdicts.mean_interval(gap, groups=groups)
    return verdicts.premise_interval(interval, threshold=0.0, what=f"{what}: shuffled minus S= distance per image")


def _combine(premises: Sequence[verdicts.Premise]) -> verdicts.Premise:
    """Several premises as one: fails when one fails (its text), undecided when one is, else holds."""
    failed = [p for p in premises if p.holds is False]
    if failed:
        return verdicts.Premise(False, failed[0].text)
    holds = None if any(p.holds is None for p in premises) else True
    return verdicts.Premise(holds, "; ".join(p.text for p in premises if p.text))


def _family_premise(premises, name: str, *, by: str, tolerance: float) -> verdicts.Premise | None:
    """The mechanism premise of one task or family (``premises``: premise_row rows with a ``by`` column), None when
    the caller gave none."""
    if premises is None:
        return None
    if not isinstance(premises, pd.DataFrame) or by not in premises.columns:
        raise ValueError(f"premises must be premise_row(...) rows with a {by!r} column (one per replica), or None")
    rows = premises[premises[by] == name]
    if rows.empty:
        raise ValueError(f"premises hold no row of {by} {name!r}")
    return decide_premise(rows, tolerance=tolerance, what=str(name))


def judge(values, rule: verdicts.Rule, *, units: int, what: str) -> verdicts.Judgement | None:
    """A replica-level statistic judged against ``rule`` (None when fewer than 2 replicas define it: a score
    undefined on an empty S= or S≠)."""
    values = np.asarray(values, dtype=float)
    if int((~np.isnan(values)).sum()) < 2:
        return None
    return verdicts.replica_judgement(values, rule, units=units, what=what)


def replica_list(frame: pd.DataFrame, claim: str) -> list:
    replicas = sorted(frame["replica"].unique().tolist(), key=str) if replication.has_replicas(frame) else [0]
    if len(replicas) < 2:
        raise ValueError(f"{claim} is decided by a t interval over the trained replicas: the frame must hold at "
                         f"least 2 replicas, got {len(replicas)}")
    return replicas


def judgement_rows(judgements: Mapping[str, verdicts.Judgement | None], **columns) -> list[dict]:
    return verdicts.judgement_table(dict(judgements), **columns)


def outcome_counts(outcomes, of: str) -> str:
    """The cells' outcomes counted as a claim's ``why`` counts them: "holds in 2, weaker in 1 of 3 ``of``" (each
    outcome of :data:`~faithlab_study.verdicts.decisions.OUTCOMES` that occurs, in that order)."""
    outcomes = list(outcomes)
    counted = ", ".join(f"{o} in {outcomes.count(o)}" for o in OUTCOMES if outcomes.count(o))
    return f"{counted or 'no cell'} of {len(outcomes)} {of}"


def weakest_text(cells: Mapping[str, verdicts.Judgement | None]) -> str:
    """The cell whose interval reaches lowest (every claim here is "above" its margin), as text."""
    decided = {k: j for k, j in cells.items() if j is not None}
    if not decided:
        return "no cell has an interval"
    name, j = min(decided.items(), key=lambda kv: kv[1].interval.low)
    i = j.interval
    return f"weakest {name} {i.estimate:+.3f} [{i.low:+.3f}, {i.high:+.3f}]"


# --------------------------------------------------------------------------------------------------------- R1
@CHAPTER.registered(
    "R1",
    claim="R1: Grad-CAM has the best ReCo of the five methods on every dataset (normally trained ResNet-18)",
    statistic="per task and competitor, Grad-CAM's ReCo minus the competitor's, each on one replica's own S= / S≠ sets",
    margin=0.074,
    margin_source=("half the smallest lead of Grad-CAM over the best other method in Table 1 (FashionMNIST: 0.517 − "
                   "0.369 = 0.148)"),
    over="(task × competitor) cells",
    null=("the competitor's ReCo on the same replica's sets; per task, Grad-CAM's S= against its shuffled-pairings "
          "chance level"),
    premises=["per task, the k models beat chance and are within the paper's ±3 % of their mean on images none saw "
              "(t intervals over the replicas)",
              "every method has at least 20 distances in S= and in S≠",
              "Grad-CAM's S= lies below its shuffled-pairings chance level"],
    note=("'best of the five on every dataset': Grad-CAM must beat each of the other four methods on each task, so "
          "every cell must hold"),
    fingerprint="e95bb1dd3fb0",
)
def claim_gradcam_best_reco(pairs: pd.DataFrame, *, premises: pd.DataFrame | None = None, target: str = "GC",
                            min_pairs: int = 20, tolerance: float = TOLERANCE) -> verdicts.Claim:
    """Claim R1 (Table 1): Grad-CAM (``target``) has the best ReCo of the methods on every task, decided by its rule
    (``verdicts.rule("R1")``).

    pairs: :func:`~faithlab_study.papers.reco_mege.experiments.sets.pairs_frame` rows of the normally trained families, with
    ``task`` and ``replica`` columns (one replica = one independent run of the whole k-fold training; at least 2).
    Cells: per task and competitor, Grad-CAM's ReCo minus the competitor's, each on the replica's own sets
    (:func:`replica_scores`), with a t interval on the R replica values judged against the rule's margin; "best of
    the five on every dataset" → every (task × competitor) cell must hold. premises:
    :func:`~faithlab_study.papers.reco_mege.claims.premise.premise_row` rows with ``task`` and ``replica`` (the mechanism
    premise, :func:`~faithlab_study.papers.reco_mege.claims.premise.decide_premise`); None skips it. Further premises per
    task: every method has at least ``min_pairs`` distances in S= and in S≠ over the replicas, and Grad-CAM's S=
    lies below its shuffled-pairings chance level (:func:`s_equal_below_chance`). A premise that fails makes the
    claim not testable here, one that is undecided inconclusive. Table: one row per cell."""
    rule = verdicts.rule("R1")
    if not isinstance(pairs, pd.DataFrame) or not {"task", "method", "sample"} <= set(pairs.columns):
        raise ValueError("pairs must be a pairs_frame with task, method and sample columns (and replica)")
    if not replication.has_replicas(pairs):
        pairs = pairs.assign(replica=0)
    replicas = replica_list(pairs, "R1")
    scores = replica_scores(pairs, keys=("task",))
    cells: dict[str, verdicts.Judgement | None] = {}
    checks, rows, lines = [], [], []
    for task, s in scores.groupby("task", sort=False):
        methods = list(dict.fromkeys(s.method))
        if target not in methods or len(methods) < 2:
            raise ValueError(f"task {task!r} must hold target {target!r} and at least one competitor, got {methods}")
        wide = s.pivot(index="replica", columns="method", values="ReCo")
        units = int(s[s.method == target]["units"].sum())
        counts = s.groupby("method")[["n S=", "n S≠"]].sum()
        family = _family_premise(premises, task, by="task", tolerance=tolerance)
        null = s_equal_below_chance(pairs[(pairs.task == task) & (pairs.method == target)],
                                    what=f"{task} {target}'s S=")
        fewest = counts.min()
        enough = verdicts.Premise(
            bool(fewest.min() >= min_pairs),
            f"{task}: fewest distances of a method {int(fewest['n S='])} in S=, {int(fewest['n S≠'])} in S≠ "
            f"(at least {min_pairs} each)")
        checks += [p for p in (family, enough, null) if p is not None]
        here = {}
        for m in (m for m in methods if m != target):
            here[f"{task}: {target} − {m}"] = judge(wide[target] - wide[m], rule, units=units,
                                                    what=f"{task}: {target} − {m}")
        cells.update(here)
        rows += judgement_rows(here, task=task, **{f"{target} ReCo": float(wide[target].mean())})
        lines.append(f"{task} {target} {wide[target].mean():.3f}, " + weakest_text(here))
    premise = _combine(checks)
    v = verdicts.decide(cells, rule, untestable=premise.text if premise.holds is False else None)
    v = premise.apply(v) if premise.holds is None else v
    table = pd.DataFrame(rows)
    return verdicts.Claim(
        "R1: Grad-CAM has the best ReCo of the five methods on every dataset (normally trained ResNet-18)",
        rule=rule,
        premise="per task, the mechanism premise over the replicas (the k models beat chance and are within the "
                f"paper's ±{tolerance:.0%} of their mean on images none saw), enough S= and S≠ distances, and "
                f"{target}'s S= below its shuffled-pairings chance level: " + premise.text,
        paper_value=paper.quoted("Table 1"),
        our_value=f"{len(replicas)} replicas; {outcome_counts(table.outcome, '(task × competitor) cells')}; "
                  + "; ".join(lines),
        verdict=v, table=table, units=int(scores[scores.method == target].groupby("task")["units"].sum().min()),
        kept_replicas=len(replicas))


# --------------------------------------------------------------------------------------------------------- R2
@DEGRADED.registered(
    "R2", **two_parts("R2.MeGe", "R2.ReCo"),
    claim="R2: MeGe and ReCo fall as the k models are degraded (randomised weights, switched labels)",
    note="partly reproduced when one of the two scores falls in every cell and the other is decided",
    fingerprint="1da8f8287ca7",
)
@DEGRADED.registered(
    "R2.MeGe",
    claim="R2 (MeGe part): MeGe falls at the strongest weight randomisation and label switching, for every method",
    statistic=("per (task × method × degradation type) cell, the normal family's MeGe minus the strongest level's, "
               "each on one replica's own S= sets (replica r of the degraded family degrades or retrains replica r's "
               "models)"),
    margin=0.02,
    margin_source=("half the smallest fall of MeGe in Table 10 (CIFAR-10), normal minus Randomized 30 % or Switched "
                   "30 %, over the five methods (IG: 0.584 − 0.544 = 0.040)"),
    over="(task × method × degradation) cells",
    note=("Fig. 4 shows the randomised and the switched families; 'regardless of the method, the models normally "
          "trained obtain the best results', so every cell must hold. Limited data is left out: the paper's own "
          "Table 14 has MeGe rising with less data (IG 0.404 → 0.419)"),
    fingerprint="7ff1e0b83ac6",
)
@DEGRADED.registered(
    "R2.ReCo",
    claim="R2 (ReCo part): ReCo falls at the strongest weight randomisation and label switching, for every method",
    statistic=("per (task × method × degradation type) cell, the normal family's ReCo minus the strongest level's, "
               "each on one replica's own S= / S≠ sets"),
    margin=0.0345,
    margin_source=("half the smallest fall of ReCo in Table 9 (CIFAR-10), normal minus Randomized 30 % or Switched "
                   "30 %, over the five methods (IG: 0.107 − 0.038 = 0.069)"),
    over="(task × method × degradation) cells",
    fingerprint="86d691573d78",
)
def claim_mege_falls(pairs: pd.DataFrame, types: Mapping[str, Sequence[str]], *,
                     premises: pd.DataFrame | None = None, normal: str = "Normal",
                     tolerance: float = TOLERANCE) -> verdicts.Claim:
    """Claim R2 (Fig. 4, Tables 9–10): MeGe and ReCo fall as the k models are degraded, decided by its rule
    (``verdicts.rule("R2")``: two named parts, ``R2.MeGe`` and ``R2.ReCo``).

    pairs: :func:`~faithlab_study.papers.reco_mege.experiments.sets.pairs_frame` rows with ``task``, ``degradation`` and
    ``replica`` columns (replica r of every degradation degrades the models of the normal family's replica r, or
    trains them under its seed, on the same D). types: ``{type: [normal, …, strongest]}`` (e.g. Randomized: Normal,
    Randomized 30%). Per part (score), per (task × method × type) cell: per replica, the normal family's score minus
    the strongest level's, a t interval on the R values judged against the part's margin; every cell must hold
    (the paper: the normally trained models obtain the best results "regardless of the method"). premises:
    premise_row rows of the normal families (``task``, ``replica``), decided per task
    (:func:`~faithlab_study.papers.reco_mege.claims.premise.decide_premise`); None skips it. Table: one row per cell and
    score, with each part's verdict."""
    rule = verdicts.rule("R2")
    if not isinstance(pairs, pd.DataFrame) or not {"task", "degradation", "method", "sample"} <= set(pairs.columns):
        raise ValueError("pairs must be a pairs_frame with task, degradation, method and sample columns (and "
                         "replica)")
    if not isinstance(types, Mapping) or not types:
        raise ValueError("types must map at least one degradation type to its levels, normal first")
    for kind, levels in types.items():
        if len(levels) < 2 or list(levels)[0] != normal:
            raise ValueError(f"types[{kind!r}] must list {normal!r} and at least one degradation, got {levels}")
    if not replication.has_replicas(pairs):
        pairs = pairs.assign(replica=0)
    replicas = replica_list(pairs, "R2")
    scores = replica_scores(pairs, keys=("task", "degradation"))
    cells = {score: {} for score in _SCORES}
    rows, checks = [], []
    for task in dict.fromkeys(scores.task):
        s = scores[scores.task == task]
        present = set(s.degradation)
        if normal not in present:
            raise ValueError(f"pairs must hold the {normal!r} family of task {task!r}")
        family = _family_premise(premises, task, by="task", tolerance=tolerance)
        if family is not None:
            checks.append(family)
        base = s[s.degradation == normal]
        units = int(base.drop_duplicates("replica")["units"].sum())
        for kind, levels in types.items():
            strongest = list(levels)[-1]
            if strongest not in present:
                raise ValueError(f"pairs hold no family ({task!r}, {strongest!r}) for types[{kind!r}]")
            worse = s[s.degradation == strongest]
            for score in _SCORES:
                a = base.pivot(index="replica", columns="method", values=score)
                b = worse.pivot(index="replica", columns="method", values=score).reindex_like(a)
                here = {f"{task} {kind} {m}": judge(a[m] - b[m], verdicts.rule(f"R2.{score}"), units=units,
                                                      what=f"{task} {kind} {m}: {normal} − {strongest}")
                        for m in a.columns}
                cells[score].update(here)
                rows += judgement_rows(here, task=task, type=kind, level=strongest, score=score)
    premise = _combine(checks) if checks else verdicts.Premise(True, "")
    untestable = premise.text if premise.holds is False else None
    parts = {p: verdicts.decide(cells[p.split(".")[1]], verdicts.rule(p), untestable=untestable) for p in rule.parts}
    v = verdicts.decide_parts(parts, rule, untestable=untestable)
    v = premise.apply(v) if premise.holds is None else v
    table = pd.DataFrame(rows)
    table["part verdict"] = table["score"].map({score: str(parts[f"R2.{score}"]) for score in _SCORES})
    summary = "; ".join(
        f"{score}: {outcome_counts(table.outcome[table.score == score], 'cells')} ({parts[f'R2.{score}']}), "
        f"{weakest_text(cells[score])}"
        for score in _SCORES)
    return verdicts.Claim(
        "R2: MeGe and ReCo fall as the k models are degraded (randomised weights, switched labels)",
        rule=rule,
        premise="the normally trained models of every task meet the mechanism premise over the replicas (they beat "
                f"chance and are within the paper's ±{tolerance:.0%} of their mean on images none saw); the null of "
                "each cell is the normal family itself: " + (premise.text or "no premise rows given"),
        paper_value="Fig. 4, Tables 9–10 (CIFAR-10): MeGe and ReCo lower at the strongest randomisation and label "
                    "switching for every method",
        our_value=f"{len(replicas)} replicas; " + summary,
        verdict=v, table=table, units=int(min(
            scores[scores.degradation == normal].drop_duplicates(["task", "replica"]).groupby("task")["units"]
            .sum())), kept_replicas=len(replicas))


# --------------------------------------------------------------------------------------------------------- R3
@LIPSCHITZ.registered(
    "R3", **two_parts("R3.ReCo", "R3.MeGe"),
    claim="R3: 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method (paper: CIFAR-10)",
    note="partly reproduced when one of the two parts holds for every method and the other is decided",
    fingerprint="fa253acec5c7",
)
@LIPSCHITZ.registered(
    "R3.ReCo",
    claim="R3 (ReCo part): 1-Lipschitz models raise ReCo for every gradient method (IG, SG, SA, GI)",
    statistic=("per gradient method, the 1-Lipschitz family's ReCo minus the ResNet-18 family's, each on one "
               "replica's own S= / S≠ sets (replica r of both explains the same D)"),
    margin=0.206,
    margin_source="half the smallest rise of ReCo of a gradient method in Table 4 (GI: 0.500 − 0.088 = 0.412)",
    over="gradient methods",
    fingerprint="d8bff5ade80c",
)
@LIPSCHITZ.registered(
    "R3.MeGe", claim="R3 (MeGe part): 1-Lipschitz models raise MeGe for every method",
    statistic=("per method, the 1-Lipschitz family's MeGe minus the ResNet-18 family's, each on one replica's own S= "
               "sets"),
    margin=0.013, margin_source="half the smallest rise of MeGe in Table 5 (Grad-CAM: 0.749 − 0.723 = 0.026)",
    over="methods",
    fingerprint="f0cc2d35a360",
)
def claim_lipschitz(pairs: Mapping[str, pd.DataFrame], *, gradient_methods: Sequence[str],
                    premises: pd.DataFrame | None = None, lipschitz: str = "1-Lipschitz", resnet: str = "ResNet-18",
                    tolerance: float = TOLERANCE) -> verdicts.Claim:
    """Claim R3 (Tables 4–5): 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method,
    decided by its rule (``verdicts.rule("R3")``: two named parts, ``R3.ReCo`` and ``R3.MeGe``).

    pairs: ``{family: pairs_frame rows}`` with the ``lipschitz`` and ``resnet`` families, each with a ``replica``
    column (replica r of both families explains the same D; at least 2 replicas). Per part, per method (ReCo: the
    ``gradient_methods``; MeGe: every method): per replica, 1-Lipschitz minus ResNet-18, a t interval on the R values
    judged against the part's margin; every method must hold. premises: premise_row rows with ``family`` and
    ``replica`` (both families' mechanism premise,
    :func:`~faithlab_study.papers.reco_mege.claims.premise.decide_premise`); None skips it. The null of a cell is the
    ResNet-18 family on the same D. Table: one row per cell."""
    rule = verdicts.rule("R3")
    for name in (lipschitz, resnet):
        if name not in pairs:
            raise ValueError(f"pairs must hold the {name!r} family, got {list(pairs)}")
    frames = {f: replication.with_replica(pairs[f]) for f in (lipschitz, resnet)}
    methods = [m for m in dict.fromkeys(frames[lipschitz].method) if m in set(frames[resnet].method)]
    if not methods:
        raise ValueError("pairs' two families share no method")
    units = {f: set(zip(fr.replica.astype(str), fr["sample"])) for f, fr in frames.items()}
    if units[lipschitz] != units[resnet]:
        raise ValueError("pairs' two families must hold the same (replica, sample) units (the same D per replica)")
    replicas = replica_list(frames[resnet], "R3")
    scores = {f: replica_scores(fr[fr.method.isin(methods)], keys=()) for f, fr in frames.items()}
    n_units = int(scores[resnet].drop_duplicates("replica")["units"].sum())
    checks = [p for f in (lipschitz, resnet) if (p := _family_premise(premises, f, by="family",
                                                                       tolerance=tolerance)) is not None]
    premise = _combine(checks) if checks else verdicts.Premise(True, "")
    untestable = premise.text if premise.holds is False else None
    cells, rows, parts = {}, [], {}
    for score in (p.split(".")[1] for p in rule.parts):
        part_rule = verdicts.rule(f"R3.{score}")
        a = scores[lipschitz].pivot(index="replica", columns="method", values=score)
        b = scores[resnet].pivot(index="replica", columns="method", values=score).reindex_like(a)
        chosen = [m for m in methods if score == "MeGe" or m in gradient_methods]
        here = {f"{score} {m}": judge(a[m] - b[m], part_rule, units=n_units, what=f"{score} {m}: {lipschitz} − "
                                                                                     f"{resnet}") for m in chosen}
        cells[score] = here
        parts[f"R3.{score}"] = verdicts.decide(here, part_rule, untestable=untestable)
        rows += judgement_rows(here, score=score, **{"part verdict": str(parts[f"R3.{score}"])})
    v = verdicts.decide_parts(parts, rule, untestable=untestable)
    v = premise.apply(v) if premise.holds is None else v
    table = pd.DataFrame(rows)
    return verdicts.Claim(
        "R3: 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method (paper: CIFAR-10)",
        rule=rule,
        premise="both families meet the mechanism premise over the replicas (the k models beat chance and are within "
                f"the paper's ±{tolerance:.0%} of their mean on images none saw); the null of each cell is the "
                "ResNet-18 family on the same D: " + (premise.text or "no premise rows given"),
        paper_value=paper.quoted("Tables 4–5"),
        our_value=f"{len(replicas)} replicas; " + "; ".join(
            f"{score}: {outcome_counts(table.outcome[table.score == score], 'methods')} ({parts[f'R3.{score}']}), "
            f"{weakest_text(cells[score])}"
            for score in ("ReCo", "MeGe")),
        verdict=v, table=table, units=n_units, kept_replicas=len(replicas))

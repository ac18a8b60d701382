"""Few-class Fidelity's claims C1–C5 as claim functions, and the chapter's mechanism premise.

Every claim is decided by its pre-registered rule (``lib/faithlab/study/verdicts/registered/fewclass.toml``, read with
:func:`faithlab.study.verdicts.rule`): per cell (a method against Random, a model × method × alteration, a task × model, a
model × reference) an interval — a t interval on the replica means of the per-image values
(:func:`faithlab.study.verdicts.effect`), on one statistic per replica (:func:`faithlab.study.verdicts.replica_judgement`), or on
the replica shares joined with the Wilson interval of a binary share (:func:`faithlab.study.verdicts.share_interval`) —
judged against the rule's margin in the paper's direction: holds (beyond it), fails (wholly short of it: inside the
band of no meaningful effect, or reversed) or undecided (straddles it). The cells then combine as the rule says
(:func:`faithlab.study.verdicts.decide`: every cell, a share fixed in advance; :func:`faithlab.study.verdicts.decide_parts` for
C5a's named parts). A premise about the stand-in is decided before the outcome with the same kind of interval: a
failed premise makes the claim "not testable here", an undecided one "inconclusive". Which cells a claim counts is
fixed by the design (what was computed), never by the outcome the claim then judges. No interval resamples, so no
claim function takes a seed.

The units are XAI images of independently trained replicas (a ``replica`` column): each replica scores its own,
disjoint block of the test split (:func:`~faithlab.study.papers.fewclass.setup.setup` with ``blocks``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from faithlab.study import verdicts
from faithlab.study.papers.fewclass import paper
from faithlab.study.papers.fewclass.experiments import METHODS
from faithlab.study.papers.fewclass.paper import PAPER_C1
from faithlab.study.verdicts import replication

__all__ = ["SWITCH_AT", "UNCERTAIN_AT", "ROOM_BELOW", "mechanism", "mechanism_table", "claim_random_lowest",
           "claim_alteration_gains", "claim_rank_agreement", "claim_uncertain_selection", "claim_class_flip",
           "claim_fid_bounds", "SELECTED", "alteration_gains"]

UNIT = ["replica", "image"]
"""A unit of the Fid and localisation frames: one XAI image of one trained replica."""
SELECTED = "selected perturbation"
"""The replacement name of the selected perturbation in :func:`~faithlab.study.papers.fewclass.experiments.flip_frame`."""
SWITCH_AT = 0.1
"""The mechanism premise's threshold (the rules file, C1's premise): under the fixed zero reference at least this
share of the XAI images switch class with confidence (U ≥ Δ) — the few-class failure the paper describes is present."""
UNCERTAIN_AT = 0.5
"""The mechanism premise's threshold: the selected perturbation reaches U < Δ for at least this share of the images —
MIF has an uncertain end point to fall to."""
ROOM_BELOW = 0.98
"""C3's premise: the unaltered mean Fid lies below this (it has room to rise)."""
RANDOM_CANDIDATE_BELOW = 0.9
"""C2's premise: a candidate drawn at random reaches U < Δ for less than this share of the images."""


def _with_replica(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``replica`` column (0 for a frame of one model per setting)."""
    return replication.with_replica(frame)


def _groups(frame: pd.DataFrame | pd.Index) -> np.ndarray:
    """The replica of every row of ``frame`` (a frame with a ``replica`` column, or an index with a replica level)."""
    if isinstance(frame, pd.DataFrame):
        return frame["replica"].astype(str).to_numpy()
    return frame.get_level_values("replica").astype(str).to_numpy()


def _paired(frame: pd.DataFrame, value: str, model: str, alteration: str) -> pd.DataFrame:
    """``value`` of ``model``'s ``alteration`` maps, one row per unit (replica, image), one column per method (NaN
    where a method lacks the unit)."""
    cell = _with_replica(frame)
    cell = cell[(cell.model == model) & (cell.alteration == alteration)]
    return cell.pivot_table(index=UNIT, columns="method", values=value, aggfunc="mean")


def _cell(make):
    """A judged cell, or None (undecided: no interval) when its units are too few for one (fewer than 2 without
    NaN, e.g. the paper-dry profile's single image)."""
    try:
        return make()
    except ValueError as err:
        if "at least 2" in str(err):
            return None
        raise


def _share(flags, groups) -> verdicts.Interval:
    return verdicts.share_interval(np.asarray(flags, dtype=np.float64), groups=groups)


def _both(premises: Sequence[verdicts.Premise], what: str) -> verdicts.Premise:
    """Premises that must all hold: holds when each does, fails when one fails, else undecided."""
    values = [p.holds for p in premises]
    holds = False if False in values else True if values and all(v is True for v in values) else None
    return verdicts.Premise(holds, f"{what}: " + "; ".join(p.text for p in premises))


# ------------------------------------------------------------------------------------------- mechanism premise
def _mechanism_checks(rows: pd.DataFrame) -> tuple[verdicts.Premise, verdicts.Premise, verdicts.Interval,
                                                   verdicts.Interval]:
    """The two checks of the mechanism premise on one task × model's :func:`flip_frame` rows."""
    zero = rows[rows.replacement == "zero"]
    selected = rows[rows.replacement == SELECTED]
    if zero.empty or selected.empty:
        raise ValueError("flips must hold the rows of the zero reference and of the selected perturbation "
                         "(flip_frame with 'Δ' among its labels)")
    switched = _share(zero["flipped"].astype(bool) & (zero["U"] >= zero["Δ"]), _groups(zero))
    uncertain = _share(selected["U"] < selected["Δ"], _groups(selected))
    return (verdicts.premise_interval(switched, threshold=SWITCH_AT,
                                      what="share of images the zero reference switches with confidence (U ≥ Δ)"),
            verdicts.premise_interval(uncertain, threshold=UNCERTAIN_AT,
                                      what="share of images the selected perturbation makes uncertain (U < Δ)"),
            switched, uncertain)


def mechanism(flips: pd.DataFrame, *, model: str | None = None) -> verdicts.Premise:
    """The chapter's mechanism premise (the rules file, C1's premise) on the :func:`flip_frame` rows ``flips`` (one
    task; columns model, replacement, flipped, U, Δ and ``replica``), for ``model`` or, when None, for every model
    of the frame: few classes and class switches — under the fixed zero reference at least :data:`SWITCH_AT` of the
    images switch class with confidence (U ≥ Δ) — and an uncertain end point — the selected perturbation reaches
    U < Δ for at least :data:`UNCERTAIN_AT` of them. Each a share interval at the replica level (t on the replica
    shares ∪ Wilson) against its threshold; holds when every check of every model does, fails when one fails,
    undecided otherwise."""
    frame = _with_replica(flips)
    models = [model] if model is not None else list(dict.fromkeys(frame["model"]))
    checks = []
    for m in models:
        rows = frame[frame["model"] == m]
        if rows.empty:
            raise ValueError(f"flips hold no rows of model {m!r}")
        switched, uncertain, _, _ = _mechanism_checks(rows)
        checks.append(_both([switched, uncertain], m))
    return _both(checks, "the paper's mechanism on the stand-in (few classes switch under a fixed reference; the "
                         "selected perturbation leaves the model uncertain)")


def mechanism_table(flips: pd.DataFrame) -> pd.DataFrame:
    """The mechanism premise's diagnostic for the chapter page: per task (when the frame has a ``task`` column) ×
    model × check, the share, its interval at the replica level, the threshold and the outcome (holds / fails /
    undecided), with the replicas and images behind it."""
    frame = _with_replica(flips)
    keys = ["task", "model"] if "task" in frame.columns else ["model"]
    rows = []
    for key, part in frame.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        p_switch, p_uncertain, switched, uncertain = _mechanism_checks(part)
        for name, p, i, t in (("zero reference: switched with confidence (U ≥ Δ)", p_switch, switched, SWITCH_AT),
                              ("selected perturbation: uncertain (U < Δ)", p_uncertain, uncertain, UNCERTAIN_AT)):
            rows.append({**dict(zip(keys, key)), "check": name, "share": i.estimate, "low": i.low, "high": i.high,
                         "at least": t, "outcome": {True: "holds", False: "fails", None: "undecided"}[p.holds],
                         "replicas": i.replicas, "images": i.units})
    return pd.DataFrame(rows)


def _premise(flips: pd.DataFrame | None, model: str | None = None) -> verdicts.Premise | None:
    return None if flips is None else mechanism(flips, model=model)


# ---------------------------------------------------------------------------------------------------- claims
def claim_random_lowest(fid: pd.DataFrame, *, task: str, model: str, flips: pd.DataFrame | None = None,
                        task_name: str | None = None) -> verdicts.Claim:
    """Claim C1 for one task and model: Random maps get the lowest Few-class Fid (unaltered maps), decided by its
    rule (``verdicts.rule("C1")``: the margin and the design live there). task_name: the task's words in the claim
    text (e.g. :func:`task_label`: a stand-in named as one; default ``task``).

    fid: :func:`fid_frame` rows (model, method, alteration, image, Fid; ``replica`` when trained more than once).
    Cells: every other method computed (none is chosen by its outcome). Per method, Fid(method) − Fid(Random) per
    XAI image, its mean per replica and the t interval on the replica means (:func:`faithlab.study.verdicts.effect`),
    judged against the margin; "lowest" is losing to none, so every method must hold (the rule's "every").
    Premise, decided before the comparison: the chapter's mechanism (:func:`mechanism`) on ``flips`` (the
    :func:`flip_frame` rows of ``task``) for ``model``; without ``flips`` it is not checked. The paper's value is
    :data:`~faithlab.study.papers.fewclass.paper.PAPER_C1` of ``task``. Table: one row per compared method."""
    rule = verdicts.rule("C1")
    wide = _paired(fid, "Fid", model, "none")
    names = [n for n in METHODS if n in wide.columns]
    if "Random" not in names or len(names) < 2:
        raise ValueError(f"fid must hold unaltered Random maps and another method for model {model!r}, got {names}")
    groups = _groups(wide.index)
    others = [n for n in names if n != "Random"]
    cells = {n: _cell(lambda n=n: verdicts.effect(wide[n].to_numpy(np.float64), wide["Random"].to_numpy(np.float64),
                                                  rule=rule, groups=groups, what=f"{n} − Random")) for n in others}
    check = _premise(flips, model)
    v = verdicts.decide(cells, rule)
    if check is not None:
        v = check.apply(v)
    means = {n: float(np.nanmean(wide[n].to_numpy(np.float64))) for n in names}
    table = pd.DataFrame(verdicts.judgement_table(cells, task=task, model=model))
    table["method mean"] = [means[n] for n in others]
    table["Random mean"] = means["Random"]
    lowest = min(others, key=means.get)
    outcomes = [c.outcome if c is not None else "undecided" for c in cells.values()]
    units = min((c.interval.units for c in cells.values() if c is not None), default=len(wide))
    return verdicts.Claim(
        f"C1 ({task_name or task}, {model}): Random maps get the lowest Few-class Fid", rule=rule,
        premise=("the paper's mechanism is not checked here (no flips frame)" if check is None else check.text),
        paper_value=PAPER_C1.get(task, ""),
        our_value=(f"Random {means['Random']:.3f}; lowest other {means[lowest]:.3f} ({lowest}); "
                   f"{outcomes.count('holds')} of {len(cells)} methods above Random by more than the margin, "
                   f"{outcomes.count('fails')} shown within it or below ({len(set(groups))} replicas, {units} "
                   "images)"),
        verdict=v, table=table, units=units)


def alteration_gains(fid: pd.DataFrame, *, alterations: Sequence[str] = ("SG", "SG²"), rule=None) -> dict:
    """C3's cells: for every model × method × alteration computed, Fid(altered) − Fid(none) per unit (replica,
    image), judged by :func:`faithlab.study.verdicts.effect` against C3's rule → ``{(model, method, alteration):
    Judgement}``."""
    rule = rule or verdicts.rule("C3")
    cells = {}
    for m in dict.fromkeys(fid["model"]):
        base = _paired(fid, "Fid", m, "none")
        for alt in alterations:
            altered = _paired(fid, "Fid", m, alt)
            for n in METHODS:
                if n not in altered.columns or n not in base.columns:
                    continue
                both = pd.concat([altered[n].rename("altered"), base[n].rename("base")], axis=1).dropna()
                if len(both) < 2:
                    continue
                cells[m, n, alt] = verdicts.effect(both["altered"].to_numpy(), both["base"].to_numpy(), rule=rule,
                                                   groups=_groups(both.index), what=f"{m}/{n}+{alt}")
    return cells


def claim_alteration_gains(fid: pd.DataFrame, *, alterations: Sequence[str] = ("SG", "SG²"), task: str = "vehicles",
                           flips: pd.DataFrame | None = None, task_name: str | None = None) -> verdicts.Claim:
    """Claim C3: SmoothGrad and SmoothGrad² raise Fid for most methods (Table 1: 12 and 11 of 14 cells), decided by
    its rule (``verdicts.rule("C3")``). task_name: the task's words in the claim text (default ``task``).

    Cells: every model × method × alteration computed (fixed by the design). Per cell, Fid(altered) − Fid(none) per
    XAI image, its mean per replica and the t interval on the replica means, judged against the margin; "most" is
    the rule's share of the cells, fixed in advance. Premises, decided before the gains: the chapter's mechanism
    (:func:`mechanism`) on ``flips`` for every model, and room to rise — the unaltered mean Fid (Random aside) lies
    below :data:`ROOM_BELOW` (t interval on the replica means). Table: the cells."""
    rule = verdicts.rule("C3")
    frame = _with_replica(fid)
    base = frame[(frame.alteration == "none") & (frame.method != "Random")]
    if base.empty:
        raise ValueError("fid must hold unaltered maps of a method other than Random")
    cells = alteration_gains(frame, alterations=alterations, rule=rule)
    room = verdicts.premise_interval(verdicts.mean_interval(base["Fid"].to_numpy(np.float64), groups=_groups(base)),
                                     threshold=ROOM_BELOW, direction="below",
                                     what="the unaltered mean Fid leaves room to rise")
    check = _both([room] + ([] if flips is None else [mechanism(flips)]), "premises")
    v = check.apply(verdicts.decide(cells, rule))
    table = pd.DataFrame(verdicts.judgement_table({k: j for k, j in cells.items()}))
    if len(table):
        table.insert(0, "alteration", [k[2] for k in cells])
        table.insert(0, "method", [k[1] for k in cells])
        table.insert(0, "model", [k[0] for k in cells])
        table = table.drop(columns="cell")
    outcomes = [j.outcome for j in cells.values()]
    gains = [j.interval.estimate for j in cells.values()]
    return verdicts.Claim(
        f"C3 ({task_name or task}): SmoothGrad and SmoothGrad² raise Fid for most methods", rule=rule,
        premise=check.text + ("" if flips is not None else " (the paper's mechanism is not checked here)"),
        paper_value=paper.alteration_gains_text(paper.TABLE_1, "Table 1"),
        our_value=(f"{outcomes.count('holds')} of {len(cells)} cells raised by more than the margin, "
                   f"{outcomes.count('fails')} shown short of it (mean gain {np.mean(gains):+.3f})"
                   if cells else "no altered cell"),
        verdict=v, table=table, units=min((j.interval.units for j in cells.values()), default=None))


def _rho_per_replica(fid: pd.DataFrame, loc: pd.DataFrame, score: str, groups: list[tuple]) -> dict:
    """Per replica: per counted (model, alteration), Spearman's ρ between the methods' mean Fid and mean ``score``
    over that replica's images → ``{replica: {(model, alteration): ρ}}`` (NaN for a constant ranking)."""
    from faithlab.metrics import statistics as stats

    keys = ["replica", "model", "alteration", "method"]
    means = fid.groupby(keys)["Fid"].mean().to_frame().join(loc.groupby(keys)[score].mean(), how="inner")
    out: dict = {}
    for r in sorted(means.index.get_level_values("replica").unique(), key=str):
        part = means.xs(r, level="replica")
        out[r] = {}
        for m, a in groups:
            if (m, a) not in part.index.droplevel("method"):
                out[r][m, a] = float("nan")
                continue
            cell = part.xs((m, a), level=("model", "alteration")).dropna()
            out[r][m, a] = (float(stats.spearman(torch.tensor(cell["Fid"].to_numpy()),
                                                 torch.tensor(cell[score].to_numpy()))) if len(cell) >= 2
                            else float("nan"))
    return out


def claim_rank_agreement(fid: pd.DataFrame, loc: pd.DataFrame, *, task: str, score: str,
                         flips: pd.DataFrame | None = None, min_methods: int = 4,
                         task_name: str | None = None) -> verdicts.Claim:
    """Claim C4 for one task: within each model and alteration, the methods' Fid ranking agrees with their
    localisation (``score``: IoU or Dice) ranking (the paper's Tables 1–4, read column by column), decided by its
    rule (``verdicts.rule("C4")``). task_name: the task's words in the claim text (default ``task``).

    Statistic, once per trained replica (the unit of replication): per model × alteration, Spearman's ρ between the
    methods' mean Fid and mean ``score`` over that replica's XAI images; their NaN-aware mean over the model ×
    alteration cells (an undefined ρ, a constant ranking, is left out, never read as 0). Interval: the t interval
    on the replicas' values (:func:`faithlab.study.verdicts.replica_judgement`), judged against the "strong" threshold.
    Cells: every model × alteration with at least ``min_methods`` methods computed (fixed by the design); with none,
    the claim is not testable here. Premise: the chapter's mechanism (:func:`mechanism`) on ``flips`` for every
    model. Table: ρ per replica × model × alteration, and each replica's mean."""
    rule = verdicts.rule("C4")
    f, l = _with_replica(fid), _with_replica(loc)
    computed = f.merge(l[["replica", "model", "alteration", "method", "image"]].drop_duplicates(),
                       on=["replica", "model", "alteration", "method", "image"])
    by_group = computed.groupby(["model", "alteration"], sort=False)["method"].nunique()
    counted = [k for k, n in by_group.items() if n >= min_methods]
    left_out = [f"{m}/{a}" for (m, a), n in by_group.items() if n < min_methods]
    reasons = [None if counted else f"no model × alteration with at least {min_methods} methods computed"]
    per = _rho_per_replica(f, l, score, counted) if counted else {}
    values = {r: float(np.nanmean(list(v.values()))) if not all(np.isnan(list(v.values()))) else float("nan")
              for r, v in per.items()}
    images = int(f[["replica", "image"]].drop_duplicates().shape[0])
    j = None
    if counted:
        if len(per) < 2:
            raise ValueError(f"C4 needs at least 2 trained replicas, got {len(per)} (one replica's rows alone decide "
                             "nothing: the unit is the trained replica)")
        finite = [x for x in values.values() if np.isfinite(x)]
        if len(finite) < 2:
            reasons.append(f"the mean ρ is defined in {len(finite)} of {len(values)} replicas only (constant "
                           "rankings): nothing to correlate")
        else:
            j = verdicts.replica_judgement(list(values.values()), rule, units=images,
                                           what="mean ρ over the replicas")
    check = _premise(flips)
    untestable = verdicts.first_reason(*reasons)
    v = verdicts.decide([j] if j is not None else [], rule, untestable=untestable)
    if check is not None and untestable is None:
        v = check.apply(v)
    rows = [{"task": task, "replica": r, "model": m, "alteration": a, "Spearman": rho}
            for r, cells in per.items() for (m, a), rho in cells.items()]
    rows += [{"task": task, "replica": r, "model": "mean over the cells", "alteration": "", "Spearman": x}
             for r, x in values.items()]
    table = pd.DataFrame(rows, columns=["task", "replica", "model", "alteration", "Spearman"])
    premise = (f"every model × alteration with at least {min_methods} methods computed counts (fixed by the "
               f"design): {len(counted)} of {len(by_group)}" + (f"; left out {', '.join(left_out)}" if left_out
                                                                else ""))
    premise = premise + ("" if check is None else f". {check.text}")
    i = None if j is None else j.interval
    return verdicts.Claim(
        f"C4 ({task_name or task}): Fid rankings of the methods agree with {score} rankings", rule=rule,
        premise=premise,
        paper_value="\"a strong correlation appears in model-wise XAI methods rankings\" (Tables 1–4)",
        our_value=(f"mean ρ {i.estimate:.2f} [{i.low:.2f}, {i.high:.2f}] over {i.replicas} replicas (per replica: "
                   + ", ".join(f"{x:.2f}" for x in values.values()) + f"; {len(counted)} model × alteration cells)"
                   if i is not None else "no model × alteration counted"),
        verdict=v, table=table, units=images if counted else None,
        kept_replicas=sum(bool(np.isfinite(x)) for x in values.values()) if counted else None)


def claim_uncertain_selection(selection: pd.DataFrame) -> verdicts.Claim:
    """Claim C2: the perturbation framework finds, per image, a similar candidate that makes the model uncertain
    (U < Δ), decided by its rule (``verdicts.rule("C2")``).

    selection: :func:`selection_frame` rows with ``task`` and ``model`` columns (and ``replica``, when the models were
    trained more than once). Per task × model, the share of images whose selected candidate reaches U < Δ, its
    interval at the replica level (the t interval on the replica shares joined with the Wilson interval of the
    pooled count, :func:`faithlab.study.verdicts.share_interval`), judged against the margin; every task × model must
    hold. Premise, decided on the candidates and not on the selection: a candidate drawn at random from the grid
    reaches U < Δ for less than :data:`RANDOM_CANDIDATE_BELOW` of the images (the mean of "candidates U < Δ", t
    interval on the replica means), in every task × model, else any candidate would do and the search is not
    tested."""
    if not len(selection):
        raise ValueError("selection must hold at least one image")
    rule = verdicts.rule("C2")
    frame = _with_replica(selection)
    cells, checks, rows = {}, [], []
    for (task, model), cell in frame.groupby(["task", "model"], sort=False):
        groups = _groups(cell)
        interval = _share(cell["U < Δ"].astype(bool), groups)
        cells[task, model] = verdicts.judge(interval, rule, what=f"{task}/{model}",
                                            _units=(cell["U < Δ"].astype(float).to_numpy(), groups))
        chance = _cell(lambda: verdicts.mean_interval(cell["candidates U < Δ"].to_numpy(np.float64),
                                                      groups=groups))
        what = f"{task}/{model}: share of images a random candidate makes uncertain"
        checks.append(verdicts.Premise(None, f"{what}: one image, no interval") if chance is None else
                      verdicts.premise_interval(chance, threshold=RANDOM_CANDIDATE_BELOW, direction="below",
                                                what=what))
        rows.append({"task": task, "model": model, "images": interval.units, "replicas": interval.replicas,
                     "U < Δ": interval.estimate, "low": interval.low, "high": interval.high,
                     "margin": rule.margin_for(), "outcome": cells[task, model].outcome,
                     "random candidate": float(cell["candidates U < Δ"].mean())})
    check = _both(checks, "the search is tested (a random candidate would not do)")
    v = check.apply(verdicts.decide(cells, rule))
    table = pd.DataFrame(rows)
    return verdicts.Claim(
        "C2: the perturbation framework finds, per image, a similar candidate that makes the model uncertain (U < Δ)",
        rule=rule, premise=check.text,
        paper_value="the selected perturbation sets the MIF/LIF end point at ≈ 1/N (Fig. 2; method)",
        our_value=", ".join(f"{r['task']}/{r['model']} {r['U < Δ']:.0%} [{r['low']:.0%}, {r['high']:.0%}] (random "
                            f"candidate {r['random candidate']:.0%})" for r in rows),
        verdict=v, table=table, units=int(table["images"].min()))


def claim_class_flip(flips: pd.DataFrame, *, binary: Sequence[str]) -> verdicts.Claim:
    """Claim C5a: with few classes, replacing every pixel by a fixed reference switches the class with confidence
    instead of reaching 1/N, while the selected perturbation reaches it; three named parts, each decided by its own
    rule, combined by C5a's (``verdicts.rule("C5a")``, :func:`faithlab.study.verdicts.decide_parts`).

    flips: :func:`flip_frame` rows per image with ``task``, ``model``, ``replacement``, ``flipped``, ``U`` and ``Δ``
    (and ``replica`` when trained more than once); binary: the tasks with two classes. Per binary model:

    - C5a.confident, per classic reference: U after the replacement, per image; the t interval on the replica means
      above the margin (the paper's Δ for N = 2); every model × reference;
    - C5a.switch, per classic reference: the share of images whose class switches, its interval at the replica
      level (:func:`faithlab.study.verdicts.share_interval`) above the margin; every model × reference;
    - C5a.uncertain: U after the selected perturbation, per image; the t interval on the replica means below the
      margin; every model.

    Premise: a binary task was run (else not testable here). Table: every cell with its part."""
    rule = verdicts.rule("C5a")
    r_conf, r_switch, r_unc = (verdicts.rule(p) for p in rule.parts)
    frame = _with_replica(flips)
    frame = frame[frame.task.isin(list(binary))]
    conf, switch, unc, summary = {}, {}, {}, []
    for (task, model), cell in frame.groupby(["task", "model"], sort=False):
        classic = [r for r in dict.fromkeys(cell.replacement) if r != SELECTED]
        for ref in classic:
            p = cell[cell.replacement == ref]
            conf[model, ref] = _cell(lambda p=p: verdicts.effect(p["U"].to_numpy(np.float64), rule=r_conf,
                                                                 groups=_groups(p), what=f"{model}, {ref}"))
            flipped = p["flipped"].astype(float).to_numpy()
            switch[model, ref] = verdicts.judge(_share(flipped, _groups(p)), r_switch, what=f"{model}, {ref}",
                                                _units=(flipped, _groups(p)))
            summary.append(f"{model}, {ref}: switched {flipped.mean():.0%}, mean U {p['U'].mean():.2f}")
        sel = cell[cell.replacement == SELECTED]
        if len(sel):
            unc[model] = _cell(lambda: verdicts.effect(sel["U"].to_numpy(np.float64), rule=r_unc,
                                                       groups=_groups(sel), what=f"{model}, selected"))
            summary.append(f"{model}, selected: mean U {sel['U'].mean():.3f}")
    untestable = None if len(frame) else "no binary task was run"
    parts = {r_conf.id: verdicts.decide(conf, r_conf, untestable=untestable),
             r_switch.id: verdicts.decide(switch, r_switch, untestable=untestable),
             r_unc.id: verdicts.decide(unc, r_unc, untestable=untestable)}
    v = verdicts.decide_parts(parts, rule, untestable=untestable)
    rows = []
    for part, cells in ((r_conf.id, conf), (r_switch.id, switch), (r_unc.id, unc)):
        rows += [{"part": part, "part verdict": str(parts[part]), **row}
                 for row in verdicts.judgement_table({f"{k[0]}, {k[1]}" if isinstance(k, tuple) else f"{k}, selected":
                                                      j for k, j in cells.items()})]
    table = pd.DataFrame(rows)
    units = min((j.interval.units for cells in (conf, switch, unc) for j in cells.values() if j is not None),
                default=None)
    return verdicts.Claim(
        "C5a: with few classes, replacing every pixel by a fixed reference switches the class with confidence "
        "instead of reaching 1/N; the selected perturbation reaches it", rule=rule,
        premise=("a binary task was run: " + ", ".join(binary) if len(frame) else "no binary task was run"),
        paper_value="the motivation of the metric (Sec. 1, 3): no table",
        our_value=("; ".join(summary) + " — " + "; ".join(f"{k}: {v_}" for k, v_ in parts.items())
                   if summary else "no binary model"),
        verdict=v, table=table, units=units)


def claim_fid_bounds(values: pd.DataFrame) -> verdicts.Claim:
    """Study check C5b: Few-class Fid lies in [0, 1] for any number of classes, 1 at the ideal and 0 at the worst
    curves, decided by its rule (``verdicts.rule("C5b")``).

    values: one row per computed Fid with ``N`` (classes, or a text such as "real curves"), ``case`` ("random
    areas", "real curves", "ideal" or "worst") and ``Fid``. A value meets its bound when it lies in [0, 1] (to
    1e-12), is 1 at the ideal and 0 at the worst. The share of values that do, its Wilson interval
    (:func:`faithlab.study.verdicts.share_interval` without replicas), judged against the rule's margin. This holds by
    construction of eq. (1): an identity that guards our implementation (kind "study check", not trained). Table:
    per N × case, the count, min, max and the share meeting the bound."""
    rule = verdicts.rule("C5b")
    missing = {"N", "case", "Fid"} - set(values.columns)
    if missing or not len(values):
        raise ValueError(f"values must hold rows with the columns N, case and Fid; missing {sorted(missing)}")
    fid = values["Fid"].to_numpy(np.float64)
    tol = 1e-12
    meets = np.where(values["case"] == "ideal", np.abs(fid - 1) <= tol,
                     np.where(values["case"] == "worst", np.abs(fid) <= tol, (fid >= -tol) & (fid <= 1 + tol)))
    j = verdicts.judge(verdicts.share_interval(meets.astype(np.float64)), rule, what="values meeting their bound")
    v = verdicts.decide(j, rule)
    table = (values.assign(meets=meets, N=values["N"].astype(str))
             .groupby(["N", "case"], sort=False)
             .agg(values=("Fid", "size"), min=("Fid", "min"), max=("Fid", "max"), share_meeting=("meets", "mean"))
             .reset_index())
    random = values[values["case"] == "random areas"]
    real = values[values["case"] == "real curves"]
    return verdicts.Claim(
        "C5b: Few-class Fid lies in [0, 1] for any number of classes, 1 at the ideal and 0 at the worst curves",
        rule=rule, premise=rule.premises[0],
        paper_value="Fid ∈ [0, 1] (eq. 1)",
        our_value=(f"{int(meets.sum())} of {len(meets)} values meet their bound; random areas in "
                   f"[{random['Fid'].min():.3f}, {random['Fid'].max():.3f}]"
                   + ("" if real.empty else f"; real curves in [{real['Fid'].min():.3f}, {real['Fid'].max():.3f}]")),
        verdict=v, table=table, units=len(meets), trained=False)  # an identity of the metric

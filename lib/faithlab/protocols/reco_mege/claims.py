"""Claims on ReCo and MeGe across methods and families, each with the shuffled-pairings chance level of S= as its
null (:func:`~faithlab.protocols.reco_mege.bootstrap.null_frame`): R1 Grad-CAM has the best ReCo (Table 1,
:func:`claim_gradcam_best_reco`), R2 MeGe falls as the k models are degraded (Fig. 4, Tables 7–14,
:func:`claim_mege_falls`), R3 1-Lipschitz models raise ReCo and MeGe (Tables 4–5, :func:`claim_lipschitz`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from faithlab import verdicts
from faithlab.protocols.reco_mege import paper
from faithlab.protocols.reco_mege.bootstrap import (bootstrap_scores, comparison, null_frame, pooled_sets,
                                                    two_stage_weights)

__all__ = ["claim_gradcam_best_reco", "claim_mege_falls", "claim_lipschitz"]


def _at_chance(row, name: str) -> str:
    """One phrase: "<name> S= 0.660 vs shuffled 0.662 (below chance | at chance)"."""
    return (f"{name} S= {row['S= mean']:.3f} vs shuffled {row['shuffled mean']:.3f} "
            f"({'below chance' if row['below chance'] else 'at chance'})")


def _premise_of(premises, task: str, replicas) -> dict:
    """{replica: reason or None} of ``task`` from the caller's premises: a frame (``task``, ``replica``,
    ``reason``; the rows of one replica when :func:`faithlab.verdicts.replicated` cuts it), a ``{task: reason}``
    dict (the same reason for every replica) or None."""
    if premises is None:
        return {r: None for r in replicas}
    if isinstance(premises, pd.DataFrame):
        rows = premises[premises.task == task]
        given = {r: (None if pd.isna(x) else str(x)) for r, x in zip(rows.get("replica", [0] * len(rows)),
                                                                     rows.reason)}
        return {r: given.get(r) for r in replicas}
    return {r: dict(premises).get(task) for r in replicas}


def claim_gradcam_best_reco(pairs: pd.DataFrame, *, premises=None, target: str = "GC", min_pairs: int = 20,
                            n_boot: int = 500, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Claim R1 (Table 1): Grad-CAM (``target``) has the best ReCo of the methods on every task.

    pairs: :func:`~faithlab.protocols.reco_mege.sets.pairs_frame` rows of the normally trained families, with
    ``task`` and ``replica`` columns (one replica = one independent repeat of the whole k-fold training). The unit
    is a (replica, sample); every interval is a two-stage bootstrap (replicas, then samples within them,
    :func:`two_stage_weights`; ``n_boot`` resamples, generator ``seed``; the same resamples for every method of a
    task), because ReCo is a maximum over thresholds and not a mean, it is recomputed per resample and the interval
    read by :func:`faithlab.verdicts.comparison_from_draws`.
    premises: per task and replica, a reason its family cannot be tested (:func:`family_premise`: the models beat
    chance and are within the stated accuracy tolerance of each other on the test set) — a frame (``task``,
    ``replica``, ``reason``) or ``{task: reason}``; a replica whose family fails is left out of that task, a task
    without a replica left is not testable here. Further premises, per task: every method has at least
    ``min_pairs`` distances in S= and in S≠, and Grad-CAM's S= lies below its shuffled-pairings chance level
    (:func:`null_frame` on the same two-stage resamples); else Grad-CAM's ReCo compares
    noise and the task is not testable here.
    Statistic per testable task: Grad-CAM's pooled ReCo minus the highest pooled ReCo among the other methods; a
    win when its interval lies above 0, a loss below, else a tie. The claim is "on every task", so the share rule of
    :func:`faithlab.verdicts.from_settings` asks for all testable tasks (share 1) and takes ties both ways.
    Table: one row per task."""
    if not isinstance(pairs, pd.DataFrame) or not {"task", "method", "sample"} <= set(pairs.columns):
        raise ValueError("pairs must be a pairs_frame with task, method and sample columns (and replica)")
    if "replica" not in pairs:
        pairs = pairs.assign(replica=0)
    rows, units = [], []
    for task, frame in pairs.groupby("task", sort=False):
        methods = list(dict.fromkeys(frame.method))
        if target not in methods or len(methods) < 2:
            raise ValueError(f"task {task!r} must hold target {target!r} and at least one competitor, got {methods}")
        reasons = _premise_of(premises, task, sorted(frame.replica.unique().tolist(), key=str))
        kept = [r for r, why in reasons.items() if why is None]
        left_out = {r: f"replica {r}: {why}" for r, why in reasons.items() if why is not None}
        frame = frame[frame.replica.isin(kept)]
        base = {"task": task, "replicas": len(kept), "left out": "; ".join(left_out.values())}
        if not kept:
            rows.append({**base, "units": 0, "untestable": "; ".join(left_out.values())})
            continue
        d, groups = pooled_sets(frame)
        weights = two_stage_weights(groups, n_boot, seed)  # the same resamples for the null and every method
        nulls = null_frame({target: d[target]}, level=level, weights=weights).set_index("method").loc[target]
        competitors = [m for m in methods if m != target]
        fewest = {s: min(v["counts"][s] for v in d.values()) for s in ("S=", "S≠")}
        reason = verdicts.first_reason(
            *[f"{task}: only {c} distances in {s} (< {min_pairs})" for s, c in fewest.items() if c < min_pairs],
            None if nulls["below chance"] else
            f"{task}: {_at_chance(nulls, target)}: its S= distances are not significantly below their "
            "shuffled-pairings chance level, so its ReCo compares noise")
        rival = max(competitors, key=lambda m: -math.inf if math.isnan(d[m]["reco"]) else d[m]["reco"])
        draws = bootstrap_scores({m: d[m] for m in (target, rival)}, weights=weights)
        c = comparison(draws, {m: d[m]["reco"] for m in (target, rival)}, a=target, b=rival, level=level)
        if c.outcome == "undefined" and reason is None:
            reason = f"{task}: ReCo of {target} or {rival} is undefined (an empty S= or S≠)"
        rows.append({**base, "units": len(groups), f"{target} ReCo": d[target]["reco"],
                     f"{target} S=": nulls["S= mean"],
                     f"{target} shuffled": nulls["shuffled mean"],
                     f"{target} below chance": bool(nulls["below chance"]), "rival": rival,
                     "rival ReCo": d[rival]["reco"], f"{target} − rival": c.mean, "low": c.low, "high": c.high,
                     "outcome": c.outcome, "comparison": c, "untestable": reason})
    table = pd.DataFrame(rows)
    testable = table[table.untestable.isna()]
    if len(testable):
        v = verdicts.from_settings(testable["comparison"].tolist(), reproduced=1.0, what="testable tasks")
        v = v.with_why(f"{v.why} ({len(table) - len(testable)} not testable)")
    else:
        v = verdicts.from_settings([], reproduced=1.0, untestable="; ".join(table.untestable), what="testable tasks")
    table = table.drop(columns="comparison", errors="ignore")
    wins = int((testable.outcome == "win").sum()) if len(testable) else 0
    n_units = int(testable["units"].min()) if len(testable) else int(table["units"].min())
    return verdicts.Claim(
        "R1: Grad-CAM has the best ReCo of the five methods on every dataset (normally trained ResNet-18)",
        rule=f"per task, {target}'s ReCo minus the highest ReCo of the other methods, both on the S= / S≠ sets "
             f"pooled over the independently trained replicas; {level * 100:g} % interval from a two-stage bootstrap "
             "(replicas, then samples within them); the paper's direction: above 0 on every task; margin 0",
        premise="per task and replica, the k models beat chance and are of comparable accuracy on the test set (the "
                "caller's premise, with its stated tolerance; a replica that fails is left out); per task, every "
                f"method has at least {min_pairs} distances in S= and S≠ and {target}'s S= distances lie "
                "significantly below the same distances with the image pairings shuffled: "
                + "; ".join(f"{r.task} " + (f"{r[f'{target} S=']:.3f} vs {r[f'{target} shuffled']:.3f}"
                                            if r["units"] else "no replica left")
                            + (f" ({r['left out']})" if r["left out"] else "")
                            for _, r in table.iterrows()),
        paper_value=paper.quoted("Table 1"),
        our_value=f"{target} wins on {wins} of {len(testable)} testable tasks; " + "; ".join(
            (f"{r.task} {target} − {r.rival} = {r[f'{target} − rival']:.3f} [{r.low:.3f}, {r.high:.3f}]"
             if r["units"] else f"{r.task} —") + ("" if pd.isna(r.untestable) else " (not testable)")
            for _, r in table.iterrows()),
        verdict=v, table=table, kind="paper", units=n_units,
        kept_replicas=int(testable["replicas"].min()) if len(testable) else int(table["replicas"].min()))


def claim_mege_falls(details: Mapping[tuple[str, str], Mapping[str, dict]], types: Mapping[str, Sequence[str]], *,
                     premises: Mapping[str, str | None] | None = None, normal: str = "Normal", n_boot: int = 500,
                     null_boot: int = 2000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Claim R2 (Fig. 4, Tables 7–14): MeGe (and ReCo) fall as the k models are degraded.

    details: ``{(task, degradation): {method: distance_sets(...)}}``, the ``normal`` family of every task among them.
    types: ``{type: [normal, level, …, strongest]}`` (e.g. Randomized: Normal, 5 %, 10 %, 30 %). premises:
    ``{task: reason or None}`` (:func:`chance_premise` of the normal family). Per (task × method × type) cell: the
    normal family's score minus the strongest level's, percentile interval of ``n_boot`` paired bootstrap resamples
    of the samples (the same D); "falls" when it lies above 0. Null and premise: a cell is testable only if its
    task's normal models beat chance and the normal family's S= distances of that method lie significantly below
    the same distances with the image pairings shuffled (:func:`null_frame`); otherwise the normal models already
    explain an image no more alike than two different images and there is nothing for a degradation to destroy.
    Rule (:func:`faithlab.verdicts.from_settings`): reproduced when MeGe falls in at least 2/3 of the testable
    cells, partly in at least 1/3; not testable here without a testable cell. ReCo is reported the same way.
    Table: one row per cell and score."""
    if not isinstance(details, Mapping) or not details:
        raise ValueError("details must map (task, degradation) to {method: distance_sets(...)}")
    if not isinstance(types, Mapping) or not types:
        raise ValueError("types must map at least one degradation type to its levels, normal first")
    premises = dict(premises or {})
    tasks = list(dict.fromkeys(t for t, _ in details))
    rows, phrases = [], []
    for task in tasks:
        if (task, normal) not in details:
            raise ValueError(f"details must hold the {normal!r} family of task {task!r}")
        base = details[task, normal]
        nulls = null_frame(base, n_boot=null_boot, level=level, seed=seed).set_index("method")
        phrases += [f"{task} {_at_chance(nulls.loc[m], m)}" for m in base]
        for kind, levels in types.items():
            levels = list(levels)
            if len(levels) < 2 or levels[0] != normal:
                raise ValueError(f"types[{kind!r}] must list {normal!r} and at least one degradation, got {levels}")
            strongest = levels[-1]
            if (task, strongest) not in details:
                raise ValueError(f"details has no family ({task!r}, {strongest!r}) for types[{kind!r}]")
            both = {**{f"N:{m}": base[m] for m in base}, **{f"D:{m}": details[task, strongest][m] for m in base}}
            draws = bootstrap_scores(both, n_boot=n_boot, seed=seed)
            for m in base:
                null = nulls.loc[m]
                reason = premises.get(task)  # the chance level of S= is reported, never used to pick the cells
                for score in ("MeGe", "ReCo"):
                    c = comparison(draws, {key: v[score.lower()] for key, v in both.items()}, a=f"N:{m}", b=f"D:{m}",
                                   score=score, level=level)
                    rows.append({"task": task, "type": kind, "level": strongest, "method": m, "score": score,
                                 "normal S=": null["S= mean"], "normal shuffled": null["shuffled mean"],
                                 "normal below chance": bool(null["below chance"]), "normal − degraded": c.mean,
                                 "low": c.low, "high": c.high, "outcome": c.outcome, "falls": c.outcome == "win",
                                 "comparison": c, "testable": reason is None and c.outcome != "undefined",
                                 "untestable": reason})
    table = pd.DataFrame(rows)
    units = next(iter(details.values()))[next(iter(next(iter(details.values()))))]["pairs"].distance.shape[0]
    mege_cells = table[(table.score == "MeGe") & table.testable]
    reco_cells = table[(table.score == "ReCo") & table.testable]
    n_cells = int((table.score == "MeGe").sum())
    chance = [premises.get(t) for t in tasks]
    untestable = None
    if not len(mege_cells):
        untestable = (verdicts.first_reason(*chance) if all(chance) else
                      f"in none of the {n_cells} (task × method × type) cells is MeGe defined in both families")
    v = verdicts.from_settings(mege_cells["comparison"].tolist(), untestable=untestable,
                               what="testable (task × method × type) cells")
    table = table.drop(columns="comparison")
    at_chance = table[(table.score == "MeGe") & ~table["normal below chance"]].drop_duplicates(["task", "method"])
    return verdicts.Claim(
        "R2: MeGe (and ReCo) fall as the k models are degraded (randomised weights, switched labels, less data)",
        rule=f"per (task × method × type) cell, the normal family's MeGe minus the strongest level's, "
             f"{level * 100:g} % paired bootstrap over the samples of D; the paper's direction: above 0 (MeGe falls), "
             "margin 0; every cell of a task whose normal models pass the premise counts (ReCo reported the same "
             "way, not decided)",
        premise="the task's normal models beat chance (and are of comparable accuracy); the cells are not chosen by "
                "any significance: the chance level of the normal family's S= (the same distances with the image "
                "pairings shuffled) is reported for reading, not used to pick cells: " + "; ".join(phrases),
        paper_value="Fig. 4 / Tables 7–14: MeGe decreases with randomisation and label switching on CIFAR-10",
        our_value=f"MeGe falls significantly at the strongest level in {int(mege_cells.falls.sum())} of "
                  f"{len(mege_cells)} testable (task × method × type) cells; ReCo in {int(reco_cells.falls.sum())} "
                  f"of {len(reco_cells)}; {n_cells - len(mege_cells)} of {n_cells} cells not testable"
                  + (f"; normal S= at its chance level for {', '.join(sorted(set(at_chance.method)))}"
                     if len(at_chance) else ""),
        verdict=v, table=table, kind="paper", units=int(units))


def _chance_interval(rows: pd.DataFrame, *, what: str, n_boot: int, level: float, seed: int) -> verdicts.Premise:
    """The premise "the models beat chance clearly" decided on its own interval: per-unit held-out correctness
    (``correct``) minus the bar (``bar``, 2 / number of classes), two-stage bootstrap over ``replica`` then the
    samples within them (:func:`faithlab.verdicts.hierarchical_means`) → holds when the interval lies above 0,
    fails when it lies wholly below, undecided when it straddles."""
    import numpy as np
    import torch

    x = torch.as_tensor(rows["correct"].to_numpy(dtype=float) - rows["bar"].to_numpy(dtype=float),
                        dtype=torch.float64)
    codes = torch.as_tensor(np.unique(rows["replica"].astype(str).to_numpy(), return_inverse=True)[1].reshape(-1))
    draws = verdicts.hierarchical_means(x, groups=codes, n_boot=n_boot, seed=seed)
    tail = (1 - level) / 2
    low, high = torch.quantile(draws, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    acc, bar = float(rows["correct"].mean()), float(rows["bar"].mean())
    replicas = int(codes.max()) + 1
    text = (f"{what}: mean held-out accuracy {acc:.3f} against {bar:.3f} (2 × chance), difference "
            f"{acc - bar:+.3f}, {level * 100:g} % interval [{low:+.3f}, {high:+.3f}] over {replicas} replica"
            f"{'s' if replicas > 1 else ''} × their samples")
    return verdicts.Premise(True if low > 0 else False if high < 0 else None, text)


def _decide_premises(premises, *, n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> tuple[dict, verdicts.Premise]:
    """The premises of a claim on trained families → ``({replica: why it is left out}, premise)``.

    premises: None; a reason (str, a failed premise), a :class:`faithlab.verdicts.Premise`, or a sequence of them
    (None where one holds); or a frame of per-unit held-out predictions with columns ``replica``, ``correct`` (the
    held-out model predicts the sample's label), ``bar`` (2 / number of classes), optionally ``family`` (one chance
    premise per family) and ``reason`` (a per-replica premise that failed, e.g. the k models not within the
    accuracy tolerance: that replica is left out). From a frame, "beat chance" is decided on its own two-stage
    interval over the kept replicas (:func:`_chance_interval`): it fails only when the interval lies wholly below
    the bar, and one that straddles it leaves the claim inconclusive."""
    if premises is None:
        return {}, verdicts.Premise(True, "")
    if isinstance(premises, pd.DataFrame):
        need = {"replica", "correct", "bar"}
        if not need <= set(premises.columns):
            raise ValueError(f"premises must be a frame with columns {sorted(need)} (+ family, reason), or reasons; "
                             f"got columns {list(premises.columns)}")
        left: dict = {}
        if "reason" in premises:
            keys = [c for c in ("family", "replica") if c in premises]
            for _, r in premises[premises.reason.notna()].drop_duplicates(keys).iterrows():
                left.setdefault(r.replica, []).append(str(r.reason))
        left = {r: "; ".join(why) for r, why in left.items()}
        kept = premises[~premises.replica.isin(list(left))]
        if kept.empty:
            return left, verdicts.Premise(False, "no replica left: " + "; ".join(f"replica {r}: {why}"
                                                                                 for r, why in left.items()))
        groups = (kept.groupby("family", sort=False) if "family" in kept else [("the models", kept)])
        parts = [_chance_interval(rows, what=str(name), n_boot=n_boot, level=level, seed=seed)
                 for name, rows in groups]
    else:
        items = [premises] if isinstance(premises, (str, verdicts.Premise)) else list(premises)
        bad = [p for p in items if p is not None and not isinstance(p, (str, verdicts.Premise))]
        if bad:
            raise TypeError(f"premises must be reasons (str or None), Premises or a frame, got {type(bad[0]).__name__}")
        left = {}
        parts = [verdicts.Premise(False, p) if isinstance(p, str) else p for p in items
                 if isinstance(p, (str, verdicts.Premise))]
    if not parts:
        return left, verdicts.Premise(True, "")
    failed = [p for p in parts if p.holds is False]
    holds = False if failed else None if any(p.holds is None for p in parts) else True
    text = failed[0].text if failed else "; ".join(p.text for p in parts)
    return left, verdicts.Premise(holds, text)


def _as_frame(d, name: str) -> pd.DataFrame:
    """A family's sets as :func:`~faithlab.protocols.reco_mege.sets.pairs_frame` rows (a frame passes as it is)."""
    if isinstance(d, pd.DataFrame):
        if not {"method", "sample"} <= set(d.columns):
            raise ValueError(f"details[{name!r}] must be a pairs_frame (method, sample, distance j, ...), got "
                             f"columns {list(d.columns)}")
        return d if "replica" in d else d.assign(replica=0)
    if not isinstance(d, Mapping) or not d:
        raise ValueError(f"details[{name!r}] must map methods to distance_sets(...) or be a pairs_frame")
    from faithlab.protocols.reco_mege.sets import pairs_frame

    return pairs_frame(dict(d), replica=0)


def claim_lipschitz(details: Mapping[str, Mapping[str, dict] | pd.DataFrame], *, gradient_methods: Sequence[str],
                    premises=(), lipschitz: str = "1-Lipschitz", resnet: str = "ResNet-18",
                    n_boot: int = 500, null_boot: int = 2000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Claim R3 (Tables 4–5): 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method.

    details: ``{family: pairs_frame rows}`` (:func:`~faithlab.protocols.reco_mege.sets.pairs_frame` of every method,
    with a ``replica`` column: one replica = one independent repeat of the k-fold training of that family; replica r
    of both families explains the same D) or ``{family: {method: distance_sets(...)}}`` (one replica), with the
    ``lipschitz`` and ``resnet`` families. The unit is a (replica, sample); every interval is a two-stage bootstrap
    (replicas, then samples within them, :func:`two_stage_weights`; the same resamples for both families and every
    method).
    premises: a frame of per-unit held-out predictions (``family``, ``replica``, ``correct``, ``bar``, ``reason``;
    see :func:`_decide_premises`): a replica whose family fails a per-replica premise (``reason``, e.g.
    :func:`comparable_premise`) is left out of both families, and "each family beats chance" is decided on its own
    two-stage interval (fails only demonstrably: not testable here; undecided: inconclusive); or reasons a family
    cannot be tested (:func:`family_premise` of both), None where it can.
    Cells: ReCo of every method of ``gradient_methods`` and MeGe of every method; per cell, 1-Lipschitz minus
    ResNet-18 on the sets pooled over the replicas, with a ``level`` percentile interval of ``n_boot`` resamples.
    Null: a cell counts only when at least one family's S= of that method lies below its shuffled-pairings chance
    level (:func:`null_frame`, ``null_boot`` resamples) and both scores are defined; where both explain an image no
    more alike than two different images, a difference in their scores compares noise. Rule
    (:func:`faithlab.verdicts.from_settings`): reproduced when the score rises significantly in at least 2/3 of the
    testable cells, partly in at least 1/3. Table: one row per cell."""
    for name in (lipschitz, resnet):
        if name not in details:
            raise ValueError(f"details must hold the {name!r} family, got {list(details)}")
    frames = {f: _as_frame(details[f], f) for f in (lipschitz, resnet)}
    methods = [m for m in dict.fromkeys(frames[lipschitz].method) if m in set(frames[resnet].method)]
    if not methods:
        raise ValueError("details' two families share no method")
    units = {f: set(zip(fr.replica.astype(str), fr["sample"])) for f, fr in frames.items()}
    if units[lipschitz] != units[resnet]:
        raise ValueError("details' two families must hold the same (replica, sample) units (the same D per replica)")
    left, premise = _decide_premises(premises, level=level, seed=seed)
    kept = {f: fr[fr.method.isin(methods) & ~fr.replica.isin(list(left))] for f, fr in frames.items()}
    n_replicas = kept[resnet].replica.nunique()
    rows = []
    if len(kept[resnet]):
        pooled = {f: pooled_sets(fr) for f, fr in kept.items()}
        groups = pooled[resnet][1]
        sets = {f: pooled[f][0] for f in pooled}
        nulls = {f: null_frame({m: sets[f][m] for m in methods}, level=level,
                               weights=two_stage_weights(groups, null_boot, seed)).set_index("method")
                 for f in (lipschitz, resnet)}
        both = {**{f"L:{m}": sets[lipschitz][m] for m in methods}, **{f"R:{m}": sets[resnet][m] for m in methods}}
        draws = bootstrap_scores(both, weights=two_stage_weights(groups, n_boot, seed))
        for m in methods:
            informative = bool(nulls[lipschitz].loc[m, "below chance"] or nulls[resnet].loc[m, "below chance"])
            for score in ("ReCo", "MeGe"):
                if score == "ReCo" and m not in gradient_methods:
                    continue
                c = comparison(draws, {key: v[score.lower()] for key, v in both.items()}, a=f"L:{m}", b=f"R:{m}",
                               score=score, level=level)
                vs = {f: f"{nulls[f].loc[m, 'S= mean']:.3f} vs {nulls[f].loc[m, 'shuffled mean']:.3f}"
                      for f in (lipschitz, resnet)}
                rows.append({"method": m, "score": score, "Lipschitz": both[f"L:{m}"][score.lower()],
                             "ResNet": both[f"R:{m}"][score.lower()], "Lipschitz − ResNet": c.mean, "low": c.low,
                             "high": c.high, "outcome": c.outcome, "Lipschitz S= vs shuffled": vs[lipschitz],
                             "ResNet S= vs shuffled": vs[resnet], "replicas": n_replicas, "units": len(groups),
                             "comparison": c,
                             "testable": informative and c.outcome != "undefined"})  # undefined: a NaN score
    table = pd.DataFrame(rows, columns=["method", "score", "Lipschitz", "ResNet", "Lipschitz − ResNet", "low", "high",
                                        "outcome", "Lipschitz S= vs shuffled", "ResNet S= vs shuffled", "replicas",
                                        "units", "comparison", "testable"])
    table["testable"] = table["testable"].astype(bool)  # bool even when empty: table[table.testable] selects rows
    cells = table[table.testable]
    if premise.holds is False:
        v = verdicts.from_settings([], untestable=premise.text, what="testable (method × score) cells")
    elif not len(cells):
        v = verdicts.from_settings([], untestable="in no cell does either family's S= lie below its "
                                   "shuffled-pairings chance level", what="testable (method × score) cells")
    else:
        v = premise.apply(verdicts.from_settings(cells["comparison"].tolist(),
                                                 what="testable (method × score) cells"))
    table, cells = table.drop(columns="comparison"), cells.drop(columns="comparison")
    n_units = int(kept[resnet].drop_duplicates(["replica", "sample"]).shape[0])
    return verdicts.Claim(
        "R3: 1-Lipschitz models raise ReCo for the gradient methods and MeGe for every method (paper: CIFAR-10)",
        rule=f"per cell (ReCo of {', '.join(gradient_methods)}; MeGe of every method), 1-Lipschitz minus ResNet-18 on "
             "the sets pooled over the independently trained replicas, two-stage bootstrap (replicas, then the "
             f"samples of D within them; {level * 100:g} %); the paper's direction: above 0 (the score rises), "
             "margin 0",
        premise="both families beat chance (decided on their own interval over the replicas) and are of comparable "
                "accuracy (a replica that is not is left out), and a cell is testable only if at least "
                "one family's S= distances lie significantly below the same distances with the image pairings "
                "shuffled: " + "; ".join(
                    ([f"{r.method} L {r['Lipschitz S= vs shuffled']}, R {r['ResNet S= vs shuffled']}"
                      for _, r in table.drop_duplicates("method").iterrows()] or ["no replica left to compare"])
                    + ([premise.text] if premise.text else [])
                    + [f"replica {r} left out: {why}" for r, why in left.items()]),
        kind="paper", units=n_units,
        paper_value=paper.quoted("Tables 4–5"),
        our_value="; ".join([f"{int((cells.outcome == 'win').sum())} of {len(cells)} testable cells rise "
                             f"({len(table) - len(cells)} not testable; {n_replicas} replicas × samples, "
                             f"{n_units} units)"]
                            + [f"{r.score} {r.method} {r['Lipschitz − ResNet']:+.3f} [{r.low:+.3f}, {r.high:+.3f}]"
                               for _, r in cells.iterrows()]),
        verdict=v, table=table, kept_replicas=int(n_replicas))

"""F-Fidelity's other image claims and the chapter's mechanism: removal out of distribution on the stand-in
(:func:`ood_per_input`, :func:`claim_ood_check`, :func:`mechanism`), GradCAM preferred to Saliency (Tables 11–12),
the cost of ROAR against F-Fidelity (Table 13), the size read-out of the plateau (Fig. 4), robustness to the
hyperparameters (Tables 24–26) and explanations kept by the fine-tuning (App. D.4, Table 9).

Every claim is decided by its pre-registered rule (``lib/faithlab/study/verdicts/registered/ffidelity.toml``, read with
:func:`faithlab.study.verdicts.rule`): a t interval on the trained replicas (their means of per-input values, or one
statistic per replica) judged against the rule's margin, the cells combined as the rule says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import _validate, explainers, perturb

from faithlab.study import verdicts
from faithlab.study.verdicts import replication
from faithlab.metrics.papers import ffidelity
from faithlab.metrics.papers.reco_mege.distances import top_mask
from faithlab.metrics.statistics import rankdata
from faithlab.study.papers.ffidelity.claims.ranking import (apply_premise, beyond, null_of, premise_text,
                                                           replica_judgement)


# ------------------------------------------------------------------------------------------- the mechanism
def ood_per_input(models: Mapping[str, torch.nn.Module], x: torch.Tensor, y: torch.Tensor, salient: torch.Tensor, *,
                  k: int | None = None, beta: float = 0.1, units: perturb.Units | None = None,
                  candidates: torch.Tensor | None = None, reference: perturb.Reference = "zero", n_draws: int = 5,
                  generator: torch.Generator | int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Per input, what each model loses when ``k`` non-salient units are removed: the unit of :func:`claim_ood_check`.

    models: ``{name: eval-mode model}`` (e.g. ``"original"`` and ``"fine-tuned"``), all seeing the same removals.
    x, y: inputs and labels. salient: ``(B, n)`` bool, the units that carry the evidence (the digit's pixels, the
    class-carrying windows); the others are background. candidates: optional ``(B, n)`` bool, the units that may be
    removed at all (the real tokens of padded text); default all. k: units removed per input (default F-Fidelity's
    cap round(β·n), no more than the fewest background units of any input). Each input loses ``k`` background units
    drawn uniformly without replacement, ``n_draws`` draws (generator ``generator``; the same draws for every model),
    replaced by ``reference``. Returns one row per input and model: input, model, k, ``clean`` (1 when the model is
    right on the clean input), ``removed`` (its share of right predictions over the draws) and ``loss`` (clean −
    removed): accuracy lost to units that carry no evidence, i.e. to removal being out of distribution."""
    if not isinstance(models, Mapping) or not models:
        raise ValueError("models must be a non-empty mapping {name: model}")
    units = perturb.units_for(units, x)
    _validate.tensor(salient, "salient", ndim=2)
    if salient.dtype != torch.bool or salient.shape != (len(x), units.n):
        raise ValueError(f"salient must be a (B, n) = {(len(x), units.n)} bool mask, got {salient.dtype} "
                         f"{tuple(salient.shape)}")
    allowed = ~salient if candidates is None else ~salient & candidates
    room = int(allowed.sum(1).min())
    if k is None:
        k = min(round(_validate.fraction(beta, "beta") * units.n), room)
    k = _validate.positive_int(k, "k")
    if k > room:
        raise ValueError(f"k must not exceed {room}, the fewest background units of any input, got {k}")
    removed = perturb.exact_subset(allowed, k, generator=generator,
                                   n_samples=_validate.positive_int(n_draws, "n_draws"))
    nothing = torch.zeros_like(salient)
    common = dict(units=units, reference=reference, target=y, output="correct", batch_size=batch_size)
    frames = []
    for name, model in models.items():
        clean = perturb.removal_outputs(model, x, nothing, **common).double()
        moved = perturb.removal_outputs(model, x, removed, **common).double().mean(1)
        frames.append(pd.DataFrame({"input": range(len(x)), "model": name, "k": k, "clean": clean.cpu().numpy(),
                                    "removed": moved.cpu().numpy(), "loss": (clean - moved).cpu().numpy()}))
    return pd.concat(frames, ignore_index=True)


_OOD_VALUES = ("k", "clean", "removed", "loss")


def _wide(per_input: pd.DataFrame, value: str, columns: str = "model") -> pd.DataFrame:
    """``value`` with one column per ``columns`` entry, one row per (replica,) input and any other key the rows carry
    (e.g. the digit size ``r`` of the size canvases, where each r has its own models): a key left out of the index
    would keep only its first value's rows."""
    keys = [c for c in per_input.columns if c not in (columns, "replica", "input", *_OOD_VALUES)]
    index = [c for c in ("replica", *keys, "input") if c in per_input.columns]
    wide = per_input.pivot_table(index=index, columns=columns, values=value, aggfunc="first")
    if len(wide) * len(wide.columns) != len(per_input):
        raise ValueError(f"per_input holds more than one row per {index} and {columns}: "
                         f"{len(per_input)} rows, {len(wide)} × {len(wide.columns)} cells")
    return wide


def _groups(wide: pd.DataFrame):
    return replication.groups(wide.index)


def _replica_count(frame: pd.DataFrame) -> int:
    return replication.count(frame)


def claim_ood_check(per_input: pd.DataFrame, *, data: str, original: str = "original",
                    finetuned: str = "fine-tuned") -> verdicts.Claim:
    """Study check FF.OOD, the chapter's premise, on one data set: removal is out of distribution here (the original
    model loses accuracy to removed units that carry no evidence) and F-Fidelity's fine-tuning absorbs it (the
    fine-tuned model loses less) — decided by its rule in the rules file (``verdicts.rule("FF.OOD")``).

    per_input: :func:`ood_per_input` rows of the two models (with a ``replica`` column when several models were
    trained: one row per replica, input and model). data: the data set's name for the claim's label. Cells: "OOD",
    the original's loss per input; "recovery", the original's loss minus the fine-tuned model's per input; each
    averaged per replica, a t interval on the replica means (:func:`faithlab.study.verdicts.effect`) against the rule's
    margin for that cell; both must hold. The claims on this data set take the outcome as their premise
    (:func:`mechanism`)."""
    rule = verdicts.rule("FF.OOD")
    loss = _wide(per_input, "loss")
    missing = [m for m in (original, finetuned) if m not in loss.columns]
    if missing:
        raise ValueError(f"per_input holds no rows of the models {missing}")
    groups = _groups(loss)
    cells = {"OOD": verdicts.effect(loss[original], rule=rule, groups=groups, setting="OOD",
                                    what=f"{original} loses"),
             "recovery": verdicts.effect(loss[original], loss[finetuned], rule=rule, groups=groups,
                                         setting="recovery", what=f"{original} − {finetuned} loss")}
    v = verdicts.decide(cells, rule)
    clean = _wide(per_input, "clean").mean()
    k = int(per_input["k"].max())
    o, rec = cells["OOD"].interval, cells["recovery"].interval
    table = pd.DataFrame(verdicts.judgement_table(cells, data=data, k=k))
    table[f"{original} clean accuracy"], table[f"{finetuned} clean accuracy"] = clean[original], clean[finetuned]
    return verdicts.Claim(
        f"FF.OOD ({data}): removal is out of distribution and F-Fidelity's fine-tuning absorbs it", rule=rule,
        premise=f"the {k} removed units per input lie outside the ground-truth mask (they carry no evidence); the "
                f"null is the clean input (a loss of 0)",
        paper_value="— (F-Fidelity's premise, §3; Table 8)",
        our_value=f"accuracy lost to {k} background units: {original} {o.estimate:.3f} [{o.low:.3f}, {o.high:.3f}], "
                  f"{finetuned} {float(loss[finetuned].mean()):.3f}; recovery {rec.estimate:.3f} "
                  f"[{rec.low:.3f}, {rec.high:.3f}]",
        verdict=v, table=table, units=int(o.units), kept_replicas=int(o.replicas) if o.replicas > 1 else None)


def mechanism(check: verdicts.Claim) -> verdicts.Premise:
    """The premise that a claim on a data set takes from that data set's :func:`claim_ood_check` (as decided by
    ``out.claim``): holds when the check is reproduced, fails (the claim is "not testable here") when it is not
    reproduced or not testable, undecided (the claim is "inconclusive") when the check is inconclusive."""
    if not isinstance(check, verdicts.Claim) or check.rule_id != "FF.OOD":
        raise TypeError(f"check must be the FF.OOD claim of claim_ood_check, got {check!r}")
    v = str(check.verdict)
    holds = True if v == verdicts.REPRODUCED else None if v == verdicts.INCONCLUSIVE else False
    return verdicts.Premise(holds, f"{check.claim.split(':')[0]} {v} ({check.our_value})")


# ------------------------------------------------------------------------------------------- GradCAM vs Saliency
def per_image_ffid(model, x: torch.Tensor, y: torch.Tensor, maps: Mapping[str, torch.Tensor], *,
                   sparsity: Sequence[float], alpha: float = 0.5, beta: float = 0.1, n_samples: int = 50,
                   seed: int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Per-image FFid+ and FFid− of several maps on one (fine-tuned) model, the input of
    :func:`claim_map_preferred` (App. D.10, Tables 11–12) → one row per image ("case", from 1) and map label with
    "FFid+" and "FFid−" (:func:`~faithlab.metrics.fid_plus` at ``sparsity`` and :func:`~faithlab.metrics.fid_minus`
    at its paired :func:`~faithlab.metrics.minus_sparsity`, each averaged over the sizes) and "constant map" (the
    map ranks no pixel above another; its removal order is the random ties rule, so its scores measure random
    removal).

    maps: ``{label: attributions}`` of ``x`` (any layout ``fid_plus`` accepts), explained for ``y``. Every map sees
    the same Monte-Carlo masks (generator ``seed``); the scores of an image do not depend on the other images or
    on ``batch_size``. A map's :class:`~faithlab.perturb.ConstantMapWarning` is not raised: the column counts them.
    """
    import warnings

    from faithlab import perturb

    common = dict(target=y, alpha=alpha, beta=beta, n_samples=n_samples, generator=seed, ties="random",
                  batch_size=batch_size)
    rows = []
    for label, attr in maps.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            plus = ffidelity.fid_plus_details(model, x, attr, sparsity=sparsity, **common)
            minus = ffidelity.fid_minus(model, x, attr, sparsity=ffidelity.minus_sparsity(sparsity), **common)
        rows += [{"case": i + 1, "explainer": label, "FFid+": float(p), "FFid−": float(m), "constant map": bool(c)}
                 for i, (p, m, c) in enumerate(zip(plus["score"].mean(1), minus.mean(1), plus["constant"]))]
    return pd.DataFrame(rows, columns=["case", "explainer", "FFid+", "FFid−", "constant map"])



def claim_map_preferred(per_image: pd.DataFrame, *, setting: str, better: str = "GradCAM", worse: str = "Saliency",
                        mechanism: verdicts.Premise | None = None, paper: str = "") -> verdicts.Claim:
    """Claim F8 of App. D.10 (Tables 11–12): F-Fidelity rates ``better`` above ``worse`` — higher FFid+ (part
    F8.plus) and lower FFid− (part F8.minus) — decided by the rules F8.plus, F8.minus and F8 (parts) with the
    margins of ``setting`` ("Table 11" or "Table 12").

    per_image: one row per image ("case") and explainer with the image's "FFid+" and "FFid−" (means over
    explanation sizes, :func:`per_image_ffid`), with a "replica" column when several models were fine-tuned.
    Per part, per image ``better`` − ``worse`` of FFid+ (``worse`` − ``better`` of FFid−), a t interval on the
    replica means judged against the part's margin; the parts combine by F8's share. mechanism: the data set's
    FF.OOD premise (:func:`mechanism`)."""
    rule, parts = verdicts.rule("F8"), {p: verdicts.rule(p) for p in ("F8.plus", "F8.minus")}
    index = replication.unit_keys(per_image, "case")
    wide = per_image.pivot_table(index=index, columns="explainer", values=["FFid+", "FFid−"], aggfunc="first")
    missing = [m for m in (better, worse) if ("FFid+", m) not in wide.columns]
    if missing:
        raise ValueError(f"per_image holds no rows of {missing}")
    groups = replication.groups(wide.index)
    cells = {"F8.plus": verdicts.effect(wide["FFid+", better], wide["FFid+", worse], rule=parts["F8.plus"],
                                        groups=groups, setting=setting, what=f"FFid+ {better} − {worse}"),
             "F8.minus": verdicts.effect(wide["FFid−", worse], wide["FFid−", better], rule=parts["F8.minus"],
                                         groups=groups, setting=setting, what=f"FFid− {worse} − {better}")}
    decided = {p: apply_premise(verdicts.decide(j, parts[p]), mechanism) for p, j in cells.items()}
    v = verdicts.decide_parts(decided, rule)
    means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()
    table = pd.DataFrame(verdicts.judgement_table(cells, setting=setting))
    table["part verdict"] = [str(decided[p]) for p in cells]
    i = cells["F8.plus"].interval
    return verdicts.Claim(
        f"F8 ({setting}): F-Fidelity rates {better} above {worse}: higher FFid+, lower FFid- (App. D.10)", rule=rule,
        premise=premise_text(mechanism) + f"null: no difference between the maps; parts: "
                + "; ".join(c.sentence() for c in cells.values()),
        paper_value=paper,
        our_value=f"FFid+ {means.loc[better, 'FFid+']:.4f} vs {means.loc[worse, 'FFid+']:.4f}, "
                  f"FFid- {means.loc[better, 'FFid−']:.4f} vs {means.loc[worse, 'FFid−']:.4f}",
        verdict=v, table=table, units=int(i.units), kept_replicas=int(i.replicas) if i.replicas > 1 else None)


# ------------------------------------------------------------------------------------------- cost (Table 13)
COST_STAGES = {"explain train set": "explain train set", "retrain (ROAR)": "train / fine-tune",
               "fine-tune": "train / fine-tune", "explain test set": "evaluate", "evaluate": "evaluate"}
"""How the study's cost stages map to Table 13's."""
COST_COLUMNS = ("seconds", "image passes", "backward passes", "forward equivalents")


def cost_table(costs: pd.DataFrame, *, finetune_epochs: int, roar_epochs: int) -> pd.DataFrame:
    """Table 13's layout from a ranking study's ``costs`` (:attr:`RankingStudy.costs`): one row per method (ROAR,
    F-Fidelity) and stage (explain train set, train / fine-tune, evaluate, total) with seconds, image passes,
    backward passes and forward equivalents (image passes + 2 × backward passes, a backward pass costing about two
    forward passes). ROAR: explain the train set, retrain, explain the test set and evaluate with the ROAR model;
    F-Fidelity: fine-tune, explain the test set with the fine-tuned model and evaluate. The fine-tuning is counted at
    ``roar_epochs`` epochs (its seconds and passes scaled by roar_epochs / finetune_epochs), as the paper fine-tunes
    for as many epochs as ROAR retrains (100 and 100); the original model, needed by both, is not counted."""
    costs = costs.assign(**{"forward equivalents": costs["image passes"] + 2 * costs["backward passes"]})
    scale = _validate.positive_int(roar_epochs, "roar_epochs") / _validate.positive_int(finetune_epochs,
                                                                                        "finetune_epochs")
    tuned = costs["stage"] == "fine-tune"
    costs.loc[tuned, list(COST_COLUMNS)] = costs.loc[tuned, list(COST_COLUMNS)].astype(float) * scale
    part = {"ROAR": costs[(costs["stage"] == "explain train set") | costs["model"].str.startswith("ROAR")
                          | ((costs["stage"] == "explain test set") & (costs["model"] == "original"))],
            "F-Fidelity": costs[costs["model"] == "fine-tuned"]}
    rows = []
    for method, frame in part.items():
        grouped = frame.assign(stage=frame["stage"].map(COST_STAGES)).groupby("stage", sort=False)[
            list(COST_COLUMNS)].sum()
        grouped.loc["total"] = frame[list(COST_COLUMNS)].sum()
        rows += [{"method": method, "stage": stage, **row.to_dict()} for stage, row in grouped.iterrows()]
    return pd.DataFrame(rows)


def claim_cost(cost_tables: pd.DataFrame, *, target: str = "F-Fidelity", other: str = "ROAR",
               explainers_per_retraining: int = 1, paper: str = "") -> verdicts.Claim:
    """Study check F9 (App. D.11, Table 13): F-Fidelity (one fine-tuning) costs less work than ROAR (one retraining
    per explainer), by its rule (``verdicts.rule("F9")``).

    cost_tables: :func:`cost_table` rows of every trained replica, with a "replica" column (at least 2). Statistic,
    per replica: total forward-pass equivalents of ``target`` / ``other``, counted exactly (the same in every
    replica, so the t interval on the replica values is the value itself); seconds are shown, never decided on
    (they depend on the machine). Raises ValueError with fewer than 2 replicas."""
    rule = verdicts.rule("F9")
    total = cost_tables[cost_tables["stage"] == "total"]
    if not replication.has_replicas(total):
        raise ValueError("cost_tables must carry a 'replica' column (one cost table per trained replica)")
    wide = total.pivot_table(index="replica", columns="method", values=["forward equivalents", "seconds"])
    missing = [m for m in (target, other) if ("forward equivalents", m) not in wide.columns]
    if missing:
        raise ValueError(f"cost_tables hold no total of {missing}")
    work = (wide["forward equivalents", target] / wide["forward equivalents", other]).to_numpy(float)
    seconds = (wide["seconds", target] / wide["seconds", other]).to_numpy(float)
    j = verdicts.replica_judgement(work, rule, units=len(work), what=f"work {target} / {other}")
    v = verdicts.decide(j, rule)
    table = pd.DataFrame({"replica": wide.index, "work ratio": work, "seconds ratio": seconds})
    return verdicts.Claim(
        f"F9: {target} (one fine-tuning) costs less work than {other} (one retraining per explainer) "
        f"(App. D.11, Table 13)", rule=rule,
        premise=f"work counted exactly (forward hooks and the training configs), {explainers_per_retraining} "
                f"explainer per ROAR retraining (more explainers only add retrainings); no sampling null",
        paper_value=paper,
        our_value=f"work ratio {target}/{other} {float(work.mean()):.2f} (every replica), seconds ratio "
                  f"{float(np.nanmean(seconds)):.2f} (this machine)",
        verdict=v, table=table, units=None, trained=False, kept_replicas=len(work))


# ------------------------------------------------------------------------------------------- size read-out (Fig. 4)
def claim_size_readout(table: pd.DataFrame, *, tolerance: float, mechanism: verdicts.Premise | None = None,
                       n_null: int = 1000, null_seed: int = 0) -> verdicts.Claim:
    """Claim F4 of Theorem 1 (Fig. 4, App. D.8): the plateau start / turning point of FFid+ against the explanation
    size reveals the true size r, by its rule (``verdicts.rule("F4")``).

    table: one row per (r, β) case of every trained replica ("replica" column), with "r", "beta/alpha" and "r read
    off". Cases with r = β/α+ are left out (the two critical points coincide). A read-out is correct when
    |r̂ − r| ≤ ``tolerance``. Statistic: the share of correct read-outs, its interval the hull of a t interval on the
    replica shares and the Wilson interval of the pooled count (:func:`faithlab.study.verdicts.share_interval`), judged
    against the rule's margin. Null (a premise): the read-outs shuffled over the cases (``n_null`` draws, numpy
    generator ``null_seed``) — an r̂ that carries no information about r still lands within the tolerance for some
    cases; a share not shown short of the margin must lie beyond that null's 95 % range, else not testable here (a
    share whose interval lies wholly short of the margin is not reproduced, whatever chance does). mechanism: the
    data's FF.OOD premise."""
    rule = verdicts.rule("F4")
    eligible = table[(table["r"] - table["beta/alpha"]).abs() > 1e-9]
    r = eligible["r"].to_numpy(dtype=float)
    r_hat = eligible["r read off"].to_numpy(dtype=float)
    correct = np.abs(r_hat - r) <= tolerance + 1e-9

    def share_correct(truth, read):
        return float((np.abs(read - truth) <= tolerance + 1e-9).mean()) if len(truth) else float("nan")

    share = share_correct(r, r_hat)
    null = (verdicts.null_draws(share_correct, r, r_hat, what="r read off shuffled over the (r, β) cases",
                                n_draws=n_null, seed=null_seed) if len(r) >= 3 else None)
    untestable = ("fewer than 3 cases with r ≠ β/α+: no chance level" if null is None
                  else verdicts.within_null(share, null, what="the share of correct read-outs"))
    groups = replication.groups(eligible)
    j = None
    if len(r):
        j = verdicts.judge(verdicts.share_interval(correct.astype(float), groups=groups), rule,
                           what="share of correct read-outs")
    if j is not None and j.outcome == "fails":
        untestable = None  # shown short of the margin: not reproduced, whatever chance does (the rule's premise)
    v = apply_premise(verdicts.decide([j], rule, untestable=untestable), mechanism)
    i = j.interval if j is not None else None
    return verdicts.Claim(
        f"F4: FFid+ vs explanation size has a plateau/turning point at the true size r (Theorem 1, Fig. 4)",
        rule=rule,
        premise=premise_text(mechanism) + "null: " + (null.describe(2) if null is not None else
                                                      "not computable (fewer than 3 cases)")
                + f"; a read-out is correct within {tolerance:g}",
        paper_value="qualitative: plateau on [r, β/α+] (Fig. 4)",
        our_value=(f"{share:.0%} [{i.low:.0%}, {i.high:.0%}] of the {len(eligible)} (r, β) cases with r ≠ β/α+ "
                   f"({_replica_count(eligible)} replicas) read r within {tolerance:g}" if i is not None
                   else "no (r, β) case with r ≠ β/α+"),
        verdict=v, table=eligible.assign(correct=correct), units=int(len(eligible)),
        kept_replicas=_replica_count(eligible) if _replica_count(eligible) > 1 else None)


# ------------------------------------------------------------------------------------------- sensitivity (App. D.9)
def _null_mean_over_replicas(draws: pd.DataFrame, key: str) -> pd.Series:
    """The null draws of ``key`` for one setting; with a "replica" column, the mean over the replicas of each draw
    (the same permutation in every replica when the notebook draws them from one seed): the chance level of the
    correlation averaged over the replicas, as the observed one is."""
    if replication.count(draws) > 1 and "draw" in draws.columns:
        return draws.groupby("draw")[key].mean()
    return draws[key]


def claim_robust_hyperparameters(table: pd.DataFrame, null: pd.DataFrame, *, n_images: int,
                                 mechanism: verdicts.Premise | None = None) -> verdicts.Claim:
    """Claim F6 of App. D.9 (Tables 24–26): F-Fidelity's ranking of the degraded explainers is robust to N, β and
    α, by its rule (``verdicts.rule("F6")``).

    table: the macro correlations "morf_vs_gt", "lerf_vs_gt", "morf_vs_lerf" of each setting (varied, value), one
    row per trained ``replica`` and degradation ``seed``; null: :func:`permuted_correlations` rows of each setting
    (varied, value, replica, draw). n_images: test images per replica (the units behind each replica's statistic).
    Per setting: the oriented macro correlation (−MoRF vs GT + LeRF vs GT − MoRF vs LeRF) / 3, averaged over the
    seeds of each replica, a t interval on the replica values against the rule's margin. Premise and null, per
    setting: each mean correlation lies beyond its 95 % chance range (ground-truth order permuted; MoRF vs LeRF:
    the curves' pairing shuffled), else the setting cannot be told from chance and leaves (every setting leaving:
    not testable). Every testable setting must hold. Raises ValueError with fewer than 2 replicas."""

    rule = verdicts.rule("F6")
    keys = list(ffidelity.DIRECTIONS)
    missing = [c for c in ("varied", "value", "replica", *keys) if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks the columns {missing} (one row per setting, replica and seed)")
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in ffidelity.DIRECTIONS.items()}
    rows, cells = [], {}
    for (varied, value), part in table.groupby(["varied", "value"], sort=False):
        oriented = sum(sign[k] * part[k].astype(float) for k in keys) / len(keys)
        per_replica = oriented.groupby(part["replica"]).mean()
        draws = null[(null["varied"] == varied) & (null["value"] == value)]
        means = {k: float(part.groupby("replica")[k].mean().mean()) for k in keys}
        nulls = {k: null_of(_null_mean_over_replicas(draws, k)) if len(draws) else None for k in keys}
        testable = all(beyond(nulls[k], means[k]) for k in keys)
        name = f"{ranking_symbol(varied)} = {value:g}"
        j = replica_judgement(per_replica.to_numpy(float), rule, units=n_images * len(per_replica), what=name)
        testable = testable and j is not None
        if testable:
            cells[name] = j
        nan = float("nan")
        rows.append({"varied": varied, "value": value, **means, "oriented macro": j.interval.estimate if j else nan,
                     "low": j.interval.low if j else nan, "high": j.interval.high if j else nan,
                     "margin": rule.margin_for(),
                     **{f"{k} chance": (f"[{n.low:.2f}, {n.high:.2f}]" if n is not None else "undefined")
                        for k, n in nulls.items()},
                     "testable": testable, "outcome": j.outcome if testable else "not testable"})
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise ValueError("table holds no setting")
    untestable = None if cells else "no setting whose correlations all lie beyond chance"
    v = apply_premise(verdicts.decide(cells, rule, untestable=untestable), mechanism)
    n_rep = int(table["replica"].nunique())
    return verdicts.Claim(
        "F6: F-Fidelity's ranking is robust to N, β and α (App. D.9, Tables 24-26)", rule=rule,
        premise=premise_text(mechanism) + "null: a setting is testable when each mean correlation lies beyond its "
                "95 % chance range with the ground-truth order permuted over the explainers (MoRF vs LeRF: the + and "
                f"− curves' pairing shuffled); {len(cells)} of {len(frame)} settings are testable",
        paper_value="robust across N ∈ {10..150}, β ∈ {0.05..0.25}, α ∈ {0.2..0.8}",
        our_value=f"oriented macro correlation {frame['oriented macro'].min():.2f} to "
                  f"{frame['oriented macro'].max():.2f} over {len(frame)} settings ({n_rep} replicas)",
        verdict=v, table=frame, units=n_images * n_rep, kept_replicas=n_rep)


def ranking_symbol(varied: str) -> str:
    """How a varied hyper-parameter is written (``"beta"`` → ``"β"``)."""
    return {"n_samples": "N", "beta": "β", "alpha": "α"}.get(varied, varied)


# ------------------------------------------------------------------------------------------- maps kept (App. D.4)
AGREEMENT = {"spearman": "Spearman ρ", "top overlap": "top-10 % overlap"}
"""The per-image statistics of :func:`map_agreement` and their names in tables."""


def map_agreement_over_replicas(pairs: Mapping, *, seed: int = 0, **options
                                ) -> tuple[pd.DataFrame, dict[str, verdicts.Null]]:
    """:func:`map_agreement` of each replica's ``(original, finetuned)`` maps (``pairs``: replica → the pair) → the
    per-image frames stacked with a ``replica`` column, and per statistic the Null of its mean over the replicas:
    each permutation draw averaged over the replicas (the same draws in every replica, from ``seed``), or the draws
    pooled when a replica dropped undefined draws (constant maps)."""
    if not isinstance(pairs, Mapping) or not pairs:
        raise ValueError(f"pairs must map each replica to its (original, finetuned) maps, got {type(pairs).__name__}")
    per = {r: map_agreement(o, f, seed=seed, **options) for r, (o, f) in pairs.items()}
    frame = pd.concat([f.assign(replica=r) for r, (f, _) in per.items()], ignore_index=True)
    nulls = {}
    for stat, null in next(iter(per.values()))[1].items():
        draws = [np.asarray(per[r][1][stat].draws, dtype=float) for r in per]
        pooled = np.mean(draws, axis=0) if len({len(d) for d in draws}) == 1 else np.concatenate(draws)
        nulls[stat] = verdicts.Null(null.what, tuple(pooled))
    return frame, nulls


def map_agreement(original: torch.Tensor, finetuned: torch.Tensor, *, top_fraction: float = 0.1,
                  n_draws: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, dict[str, verdicts.Null]]:
    """How alike the maps of one explainer on the original and on the fine-tuned model are, image by image (App.
    D.4, Table 9), with the chance level of each statistic.

    original, finetuned: ``(B, ...)`` maps of the same B images (e.g. ``RankingStudy.clean[label, "original"]``
    and ``[label, "fine-tuned"]``), flattened per image. Per image: the Spearman correlation of the two maps
    (average ranks; NaN when either is constant) and the overlap of their top ``top_fraction`` pixels (the Dice
    coefficient, 1 − :func:`faithlab.metrics.map_distance` ``kind="dice"``). Null of the mean of each statistic
    over the images: the fine-tuned maps' images shuffled (``n_draws`` permutations, numpy generator ``seed``),
    i.e. how alike the maps of two images are — what a map that kept nothing of its image would score. Returns the
    per-image frame (image, spearman, top overlap) and ``{statistic: Null}``.

    Cost: the B × B agreement of every map with every other is computed once as two matrix products (the ranks,
    centred and normalised, and the top masks); each permutation then reads B of its entries."""
    for t, name in ((original, "original"), (finetuned, "finetuned")):
        _validate.tensor(t, name)
        if t.ndim < 2 or len(t) < 3:
            raise ValueError(f"{name} must hold at least 3 maps (B, ...), got shape {tuple(t.shape)}")
    if original.shape != finetuned.shape:
        raise ValueError(f"finetuned has shape {tuple(finetuned.shape)} but original has {tuple(original.shape)}")
    top_fraction = _validate.fraction(top_fraction, "top_fraction", closed_low=False)
    a, b = (t.detach().flatten(1).double() for t in (original, finetuned))
    za, zb = (r - r.mean(1, keepdim=True) for r in (rankdata(a), rankdata(b)))
    za, zb = (z / z.norm(dim=1, keepdim=True) for z in (za, zb))  # a constant map: 0 / 0, NaN
    ma, mb = (top_mask(t, top_fraction).double() for t in (a, b))
    pairwise = {"spearman": (za @ zb.T).clamp(-1.0, 1.0),  # [i, j]: map i of original against map j of finetuned
                "top overlap": 2 * (ma @ mb.T) / (ma.sum(1)[:, None] + mb.sum(1)[None, :])}
    n = len(a)
    per_image = pd.DataFrame({"image": range(n), **{k: m.diagonal().cpu().numpy() for k, m in pairwise.items()}})
    rng = np.random.default_rng(seed)
    perms = torch.as_tensor(np.stack([rng.permutation(n) for _ in range(n_draws)]), device=a.device)
    rows = torch.arange(n, device=a.device).expand_as(perms)
    nulls = {k: verdicts.Null("maps of other images (shuffled pairings)",
                              tuple(torch.nanmean(m[rows, perms], dim=1).tolist())) for k, m in pairwise.items()}
    return per_image, nulls



def claim_maps_preserved(per_image: pd.DataFrame, nulls: dict[str, verdicts.Null], *, value: str,
                         statistic: str = "spearman", mechanism: verdicts.Premise | None = None) -> verdicts.Claim:
    """Claim F10 of App. D.4 (Table 9): the fine-tuning keeps the explanations — the maps of the original and of the
    fine-tuned model highlight the same regions — by its rule (``verdicts.rule("F10")``).

    per_image, nulls: :func:`map_agreement` of one explainer and model (``value`` names it in the claim), with a
    "replica" column in ``per_image`` for several trained models (:func:`map_agreement_over_replicas`). Statistic:
    ``statistic`` per image (NaN images, constant maps, left out), a t interval on the replica means against the
    rule's margin. Premise and null: the mean lies beyond the 95 % range of its chance level — the same mean with
    the maps of other images — else an image's maps on the two models cannot be told from maps of two different
    images: not testable here. mechanism: the data's FF.OOD premise."""
    if statistic not in AGREEMENT:
        raise ValueError(f"statistic must be one of {list(AGREEMENT)}, got {statistic!r}")
    rule = verdicts.rule("F10")
    values = per_image[statistic].astype(float)
    keep = values.notna().to_numpy()
    observed = float(values.mean()) if keep.any() else float("nan")
    null = nulls[statistic]
    untestable = verdicts.first_reason(
        verdicts.undefined(observed, what=f"the mean {AGREEMENT[statistic]}"),
        None if keep.sum() >= 2 else "fewer than 2 images with a defined statistic",
        verdicts.within_null(observed, null, what=f"the mean {AGREEMENT[statistic]}"))
    j = None
    if keep.sum() >= 2:
        groups = replication.groups(per_image)
        groups = groups[keep] if groups is not None else None
        j = verdicts.effect(values.to_numpy()[keep], rule=rule, groups=groups, what=f"mean {AGREEMENT[statistic]}")
    v = apply_premise(verdicts.decide([j], rule, untestable=untestable), mechanism)
    table = pd.DataFrame([{"statistic": AGREEMENT[k], "mean": float(per_image[k].mean()),
                           "images": int(per_image[k].notna().sum()), "chance median": n.median,
                           "chance low": n.low, "chance high": n.high} for k, n in nulls.items()])
    i = j.interval if j is not None else None
    return verdicts.Claim(
        f"F10 ({value}): fine-tuning keeps the explanations: the maps of the original and the fine-tuned model "
        f"highlight the same regions (App. D.4, Table 9)", rule=rule,
        premise=premise_text(mechanism) + f"null: the mean must lie beyond the range of the same mean with the maps "
                f"of other images, {null.describe(2)}",
        paper_value="similar regions, minor changes of intensity (qualitative)",
        our_value=f"{AGREEMENT[statistic]} {observed:.2f}" + (f" [{i.low:.2f}, {i.high:.2f}]" if i else "")
                  + f" (chance {null.median:.2f})",
        verdict=v, table=table, units=int(keep.sum()),
        kept_replicas=i.replicas if i is not None and i.replicas > 1 else None)


PAIR_MAPS = (("GradCAM", "gradcam"), ("Saliency", "saliency"))
"""The two maps of App. D.10 (Tables 11–12): label and explainer method."""


def pair_maps(model, x: torch.Tensor, y: torch.Tensor, *, seed: int = 0,
              maps: Sequence[tuple[str, str]] = PAIR_MAPS) -> dict[str, torch.Tensor]:
    """GradCAM's and Saliency's maps (``maps``: label, method) of ``model`` on the images x (N, C, H, W) for the
    targets y (N,), per pixel as the ranking study's: ``{label: (N, H, W)}``."""
    return {label: perturb.unit_scores(
        explainers.explain(model, x, y, method=method, generator=seed), perturb.pixel_units(x),
        reduce=ffidelity.REDUCE).view(-1, *x.shape[2:]) for label, method in maps}


# ---- the rival fix: ROAD beside F-Fidelity (issue 72)
def claim_road(cells: pd.DataFrame, null: pd.DataFrame, *, explainers: Sequence[str], n_images: int,
               mechanism: verdicts.Premise | None = None, target: str = "F-Fidelity", rival: str = "ROAD",
               group: str = "explainer", where: str = "", paper: str = "") -> verdicts.Claim:
    """Study check FF.ROAD, pre-registered (``verdicts.rule("FF.ROAD")``): ROAD's noisy linear imputation, without
    retraining, recovers the ground-truth explainer ranking as well as F-Fidelity's fine-tuning — ``target``'s lead
    over ``rival`` in the oriented micro correlation stays below the margin, for every explainer.

    cells: :func:`micro_cells` holding both methods, with a "replica" column (at least 2); null:
    :func:`ground_truth_null` of the same curves, both methods included. Per explainer: ``target``'s oriented micro
    correlation minus ``rival``'s, averaged over the degradation seeds and sparsity levels of each trained replica,
    a t interval on the replica values, below the margin (one-sided: ROAD ahead of F-Fidelity holds too). Premises:
    ``target`` recovers the ground-truth order above chance (else there is no recovery to match); ``mechanism``, the
    data's FF.OOD. where: the data set, named in the claim's text (one claim per data set). Table: one row per
    explainer."""
    from faithlab.study.papers.ffidelity.claims.series_text import lead_below_margin

    rule = verdicts.rule("FF.ROAD")
    if not explainers:
        raise ValueError("explainers must name at least one explainer of the cells")
    v, rows, texts, chance_texts, judged = lead_below_margin(
        cells, null, rule, values=list(explainers), counted=list(explainers), group=group, a=target, b=rival,
        n_units=n_images, above_chance=(target,), what="claim_road")
    return verdicts.Claim(
        f"FF.ROAD{f' ({where})' if where else ''}: {rival} (noisy linear imputation, no retraining) recovers the "
        f"ground-truth explainer ranking as well as {target} (fine-tuning)", rule=rule,
        premise=premise_text(mechanism) + f"{target} recovers the ground-truth order above chance: its mean GT "
                "micro correlation (−MoRF vs GT, +LeRF vs GT) above its 95 % range with the order permuted over the "
                "explainers: " + "; ".join(chance_texts),
        paper_value=paper, our_value="oriented micro correlation: " + "; ".join(texts),
        verdict=apply_premise(v, mechanism), table=pd.DataFrame(rows),
        units=min((j.interval.units for j in judged.values()), default=None),
        kept_replicas=min((j.interval.replicas for j in judged.values()), default=None))


RIVAL_COST_STAGES = {"Fidelity": ("evaluate",), "ROAD": ("evaluate",),
                     "F-Fidelity": ("fine-tune", "explain test set", "evaluate")}
"""What each method of the rival comparison costs beyond the original model and its maps, which all three share:
Fidelity and ROAD evaluate the original model (ROAD's imputation in the same seconds, no extra model input);
F-Fidelity fine-tunes it, explains the test set again with the fine-tuned model and evaluates."""


def rival_costs(costs: pd.DataFrame, *, evaluate: Mapping[str, int]) -> pd.DataFrame:
    """One row per method of ``evaluate`` among :data:`RIVAL_COST_STAGES` (in that order): its seconds, image
    passes, backward passes and forward equivalents (image passes + 2 × backward passes) summed over its stages and
    explainers, from a ranking study's ``costs`` (:attr:`RankingStudy.costs`). ``evaluate``: each method's model
    inputs at evaluation, counted by the caller from the design (a sharded run scores the cells in other processes,
    so the study's own "evaluate" rows count only the cells this process scored); the seconds of evaluation are
    those rows' (0 where no cell was scored here). The fine-tuning is counted at its own epochs, its seconds as
    measured when it was trained (a cached model keeps them)."""
    costs = costs.assign(**{"forward equivalents": costs["image passes"] + 2 * costs["backward passes"]})
    rows = []
    for method, stages in RIVAL_COST_STAGES.items():
        if method not in evaluate:
            continue
        tuned = (costs["method"].isna() & (costs["model"] == "fine-tuned")) if method == "F-Fidelity" else False
        before = costs[costs["stage"].isin([s for s in stages if s != "evaluate"]) & tuned]
        total = before[list(COST_COLUMNS)].astype(float).sum()
        scored = costs[(costs["stage"] == "evaluate") & (costs["method"] == method)]
        passes = float(evaluate[method])
        total["seconds"] += float(scored["seconds"].sum())
        total["image passes"] += passes
        total["forward equivalents"] += passes
        rows.append({"method": method, **total.to_dict()})
    return pd.DataFrame(rows, columns=["method", *COST_COLUMNS])

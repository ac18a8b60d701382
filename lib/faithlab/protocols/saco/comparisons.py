"""SaCo's paired comparisons of the methods image by image, against Random Attribution or between methods, and
the claims they decide: S1 (Random separation, Fig. 4), S7 (removal order), S3 (attention ablation, Table 1) and S4
(number of groups K, Table 2). Every bootstrap is two-stage when the frames carry a ``replica`` column (replicas,
then images within them); a comparison whose interval holds 0 is undecided (a tie), never a failure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab import verdicts
from faithlab.protocols.saco import paper
from faithlab.protocols.saco._common import (ACCURACY_TOLERANCE, MIN_ACCURACY, accuracy_premise, accuracy_text,
                                             against, all_of, at_least, flag, groups_of, min_units, paired, settings,
                                             wide)
from faithlab.protocols.saco.scores import HIGHER_IS_BETTER

__all__ = ["random_separation", "order_sensitivity", "narrow", "claim_random_separation", "claim_order_sensitivity",
           "ATTENTION_ABLATION", "claim_attention_ablation", "claim_k_decline"]

_paired = paired  # the batched (two-stage) bootstrap, under its former name
_wide = wide


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


def _state(flag_value) -> str:
    return "holds" if flag_value is True else "fails" if flag_value is False else "undecided"


def _separation(frame: pd.DataFrame, *, random: str, tolerance: float, n_boot: int, seed: int):
    """S1's parts in one setting (three-valued, None = undecided) and the numbers behind them."""
    methods = [m for m in dict.fromkeys(frame["method"]) if m != random]
    if random not in set(frame["method"]) or not methods:
        raise ValueError(f"per_sample must hold {random!r} and at least one other method")
    comps = {}
    for metric in HIGHER_IS_BETTER:
        comps[metric] = against(wide(frame, metric), [(m, random) for m in methods], n_boot=n_boot, seed=seed)
    saco_table = wide(frame, "SaCo")
    level = paired(saco_table[[random]].to_numpy(np.float64), groups_of(saco_table), n_boot=n_boot, seed=seed)[0]
    # near 0: the interval of SaCo(Random) lies within ±tolerance (holds) or wholly outside it (fails)
    near = True if -tolerance < level.low and level.high < tolerance else (
        False if level.low >= tolerance or level.high <= -tolerance else None)
    saco_flags = [flag(c) for c in comps["SaCo"]]
    most = at_least(saco_flags, len(methods) // 2 + 1)  # more than half of the methods beat Random on SaCo
    # a cumulative metric fails to separate Random when some method is significantly below it, and separates it
    # when every method is significantly above it
    blind = {m: (True if any(c.outcome == "loss" for c in comps[m]) else
                 False if all(c.outcome == "win" for c in comps[m]) else None)
             for m in HIGHER_IS_BETTER if m != "SaCo"}
    two_blind = at_least(blind.values(), 2)
    saco_part = all_of([near, most])
    return {"near 0": near, "most beat Random on SaCo": most, "cumulative blind": blind,
            "two cumulative blind": two_blind, "SaCo part": saco_part, "holds": all_of([saco_part, two_blind]),
            "SaCo(Random)": level.mean, "SaCo(Random) low": level.low, "SaCo(Random) high": level.high,
            "beating": {m: sum(c.outcome == "win" for c in comps[m]) for m in HIGHER_IS_BETTER},
            "below": {m: sum(c.outcome == "loss" for c in comps[m]) for m in HIGHER_IS_BETTER},
            "methods": len(methods), "units": level.n}


def random_separation(per_sample: pd.DataFrame, *, random: str = "Random", tolerance: float = 0.05,
                      n_boot: int = 2000, seed: int = 0) -> tuple[verdicts.Verdict, dict]:
    """Claim S1 on one setting's per-sample metrics (columns method, sample, optionally replica, and the metrics of
    :data:`HIGHER_IS_BETTER`): SaCo puts ``random`` near 0 and below most methods, the cumulative metrics do not.

    Paired bootstraps over the images (95 %, two-stage over replicas when the frame has them, the same resamples for
    every method) compare every method with ``random`` on every oriented metric. SaCo's part: SaCo(random) near 0 —
    the interval of its mean lies within ±``tolerance`` (shown far from 0 when it lies wholly outside) — and more than
    half of the methods beat ``random`` on SaCo. A cumulative metric fails to separate ``random`` when at least one
    method lies significantly below it ("comparable performance, even surpassing some"); it separates it when every
    method lies significantly above. A tie leaves a part undecided. Verdict: reproduced when SaCo's part holds and at
    least two of the four cumulative metrics fail to separate; partly reproduced when only SaCo's part holds; not
    reproduced when SaCo's part fails; inconclusive when undecided parts could tip it. Returns the verdict and the
    details (``"methods beating Random on SaCo"``, ``"not beating Random"``: {cumulative metric: methods that do not
    beat it significantly}, ``"SaCo part holds"``, ...)."""
    d = _separation(per_sample, random=random, tolerance=tolerance, n_boot=n_boot, seed=seed)
    part, blind = d["SaCo part"], d["two cumulative blind"]
    options = [verdicts.REPRODUCED if p and b else verdicts.PARTLY if p else verdicts.NOT_REPRODUCED
               for p in ([part] if part is not None else [True, False])
               for b in ([blind] if blind is not None else [True, False])]
    value = options[0] if len(set(options)) == 1 else verdicts.INCONCLUSIVE
    why = (f"SaCo(Random) {d['SaCo(Random)']:+.3f} [{d['SaCo(Random) low']:+.3f}, {d['SaCo(Random) high']:+.3f}] "
           f"(within ±{tolerance:g}: {_state(d['near 0'])}), {d['beating']['SaCo']}/{d['methods']} methods beat it "
           f"on SaCo ({_state(d['most beat Random on SaCo'])}); cumulative metrics on which some method lies below "
           f"Random: {sum(v is True for v in d['cumulative blind'].values())}/4, undecided "
           f"{sum(v is None for v in d['cumulative blind'].values())}")
    decision = ("reproduced when SaCo's part and the cumulative part hold, partly when only SaCo's part holds, else "
                "not reproduced; inconclusive when an undecided part could tip it")
    details = {**d, "methods beating Random on SaCo": d["beating"]["SaCo"], "SaCo part holds": part is True,
               "not beating Random": {m: d["methods"] - d["beating"][m] for m in HIGHER_IS_BETTER if m != "SaCo"},
               "differing from Random": sum(d["beating"].values()) + sum(d["below"].values())}
    return verdicts.Verdict(value, why, decision), details


def _order_checks(frame: pd.DataFrame, *, method: str, best_on, worst_on, n_boot: int, seed: int) -> dict:
    """Three-valued checks of S7 in one setting: best = ``method`` loses to no other method and beats at least 2/3 of
    them (the house rule of :func:`faithlab.verdicts.from_comparison`); worst = the same with the metric reversed
    (``method`` below the others); a check that the ties could tip either way is undecided (None)."""
    others = [m for m in dict.fromkeys(frame["method"]) if m != method]
    if method not in set(frame["method"]) or not others:
        raise ValueError(f"per_sample must hold {method!r} and at least one other method")
    checks = {}
    for metric, want in [*((m, "best") for m in best_on), (worst_on, "worst")]:
        table = wide(frame, metric)
        if want == "worst":
            table = -table
        outcomes = [c.outcome for c in against(table, [(method, m) for m in others], n_boot=n_boot, seed=seed)]
        wins, ties, losses = (outcomes.count(o) for o in ("win", "tie", "loss"))
        need = verdicts.REPRODUCED_SHARE * len(others) - 1e-9
        # the house rule for a target against its competitors, read with every tie as a win and as a loss
        checks[f"{want} on {metric}"] = (False if losses or wins + ties < need else
                                         None if ties else wins >= need)
    return checks


def order_sensitivity(per_sample: pd.DataFrame, *, method: str = "Integrated Gradients",
                      best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"), worst_on: str = "Comprehensiveness",
                      n_boot: int = 2000, seed: int = 0) -> dict[str, bool]:
    """The paper's removal-order observation on one setting: ``method`` is best on the most-relevant-first metrics
    ``best_on`` and worst on ``worst_on``. Paired bootstraps over the images (95 %) of ``method`` against every
    other method; "best on M" holds when :func:`faithlab.verdicts.from_comparison` says it beats at least 2/3 of
    them and loses to none, "worst on M" the same with M reversed. Returns ``{"best on AOPC": bool, …}``: True only
    where the check holds significantly (an undecided check is False here; the claim keeps it undecided)."""
    checks = _order_checks(per_sample, method=method, best_on=best_on, worst_on=worst_on, n_boot=n_boot, seed=seed)
    return {k: v is True for k, v in checks.items()}


# ---------------------------------------------------------------- Fig. 4, §5 and Tables 1–2: S1, S7, S3, S4 as claims
def _premises(per_sample: pd.DataFrame, accuracy, min_accuracy: float, accuracy_tolerance: float) -> dict:
    return {s: accuracy_premise(accuracy, s, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)
            for s, _ in settings(per_sample)}


def _replicas(frame: pd.DataFrame) -> str:
    return f"{frame['replica'].nunique()} replica(s) per setting" if "replica" in frame else "one model per setting"


def claim_random_separation(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                            random: str = "Random", tolerance: float = 0.05, min_accuracy: float = MIN_ACCURACY,
                            accuracy_tolerance: float = ACCURACY_TOLERANCE, n_boot: int = 2000,
                            seed: int = 0) -> verdicts.Claim:
    """Claim S1 (Fig. 4, §5) over the settings: SaCo puts Random Attribution near 0 and below most methods, the
    cumulative metrics barely separate it.

    per_sample: one row per setting × (replica ×) method × sample (the metrics of :data:`HIGHER_IS_BETTER`).
    accuracy: per setting (× replica) the ViT's test accuracy, for the premise. Per setting, :func:`random_separation`
    gives each part three-valued (holds / fails / undecided when an interval holds its margin); the setting holds
    when all parts hold, fails when one fails, else is undecided. Premise: every ViT of a setting is accurate
    (:data:`MIN_ACCURACY` within :data:`ACCURACY_TOLERANCE`), else the setting is left out. Decided by
    :func:`faithlab.verdicts.from_settings` over the testable settings (undecided ones counted both ways)."""
    reasons = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    rows, holds = [], []
    for setting, frame in settings(per_sample):
        d = _separation(frame, random=random, tolerance=tolerance, n_boot=n_boot, seed=seed)
        testable = reasons[setting] is None
        if testable:
            holds.append(d["holds"])
        rows.append({"setting": setting, "testable": testable, "holds": _state(d["holds"]) if testable else "—",
                     "SaCo(Random)": d["SaCo(Random)"], "SaCo(Random) low": d["SaCo(Random) low"],
                     "SaCo(Random) high": d["SaCo(Random) high"], "near 0": _state(d["near 0"]),
                     "methods beating Random on SaCo": f"{d['beating']['SaCo']}/{d['methods']}",
                     "most beat Random on SaCo": _state(d["most beat Random on SaCo"]),
                     **{f"methods below Random on {k}": d["below"][k] for k in d["cumulative blind"]},
                     "cumulative metrics blind": _state(d["two cumulative blind"]), "images": d["units"],
                     "premise": reasons[setting] or "holds"})
    table = pd.DataFrame(rows)
    untestable = None if holds else next(iter(reasons.values()))
    v = verdicts.from_settings(holds, untestable=untestable, what="settings")
    return verdicts.Claim(
        "S1: SaCo puts Random near 0 and below most methods; cumulative metrics barely separate it (Fig. 4)",
        rule=f"per setting, paired bootstraps over the images (95 %; replicas, then images) of every method against "
             f"Random on every oriented metric; parts: SaCo(Random) within ±{tolerance:g} of 0 (equivalence margin "
             f"{tolerance:g}), more than half of the methods above Random on SaCo (margin 0), and at least two of "
             "the four cumulative metrics on which some method lies below Random (margin 0); a setting holds when "
             "all parts hold; direction: the paper's",
        premise=f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)}; "
                f"{sum(r is None for r in reasons.values())} of {len(reasons)} settings pass; {_replicas(per_sample)}",
        paper_value="SaCo(Random) ≈ 0 < most methods; Random comparable to or better than some methods on "
                    "AUC/AOPC/LOdds/Comp.",
        our_value="; ".join(f"{r['setting']}: {r['holds'] if r['testable'] else 'not testable'} (SaCo(Random) "
                            f"{r['SaCo(Random)']:+.3f}, {r['methods beating Random on SaCo']} methods above it on "
                            "SaCo)" for r in rows),
        verdict=v, table=table, kind="paper", units=min_units(per_sample, ["setting", "method"]
                                                             if "setting" in per_sample else ["method"]))


def claim_order_sensitivity(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                            method: str = "Integrated Gradients", best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"),
                            worst_on: str = "Comprehensiveness", min_accuracy: float = MIN_ACCURACY,
                            accuracy_tolerance: float = ACCURACY_TOLERANCE, n_boot: int = 2000,
                            seed: int = 0) -> verdicts.Claim:
    """Claim S7 (§5) over the settings: ``method`` (integrated gradients) is best on AOPC, LOdds and AUC (most
    relevant first) but worst on Comprehensiveness (least relevant first).

    per_sample, accuracy: as :func:`claim_random_separation`. Per setting, four checks, each from paired bootstraps
    over the images (95 %; replicas, then images) of ``method`` against every other method and
    :func:`faithlab.verdicts.from_comparison` (best: beats at least 2/3 of them and loses to none; worst: the same
    with the metric reversed; inconclusive → undecided); the setting holds when all four hold, fails when one fails.
    Premise: the ViTs are accurate. Decided by :func:`faithlab.verdicts.from_settings` over the testable settings."""
    reasons = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    metrics_used = [*best_on, worst_on]
    rows, holds = [], []
    for setting, frame in settings(per_sample):
        checks = _order_checks(frame, method=method, best_on=best_on, worst_on=worst_on, n_boot=n_boot, seed=seed)
        testable = reasons[setting] is None
        h = all_of(checks.values())
        if testable:
            holds.append(h)
        rows.append({"setting": setting, **{k: _state(v) for k, v in checks.items()}, "testable": testable,
                     "holds": _state(h) if testable else "—", "premise": reasons[setting] or "holds"})
    table = pd.DataFrame(rows)
    untestable = None if holds else next(iter(reasons.values()))
    v = verdicts.from_settings(holds, untestable=untestable, what="settings")
    means = per_sample.groupby(["setting", "method"] if "setting" in per_sample else ["method"], sort=False)[
        metrics_used].mean()
    if "setting" in per_sample:
        means = means.groupby("method", sort=False).mean()
    sign = pd.Series({m: 1.0 if HIGHER_IS_BETTER[m] else -1.0 for m in metrics_used})
    ranks = (means * sign).rank(ascending=False).loc[method]
    held = {c: int((table[c] == "holds").sum()) for c in table.columns if c.startswith(("best on", "worst on"))}
    return verdicts.Claim(
        "S7: IG is best on AOPC, LOdds and AUC but worst on Comprehensiveness (removal-order sensitivity, §5)",
        rule=f"per setting and metric, paired bootstraps over the images (95 %; replicas, then images) of {method} "
             f"minus every other method, margin 0; best on {', '.join(best_on)} and worst on {worst_on} (that "
             "metric reversed), each read with the house's rule for a target against its competitors; a setting "
             "holds when all four checks hold",
        premise=f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)}; "
                f"{sum(r is None for r in reasons.values())} of {len(reasons)} settings pass; {_replicas(per_sample)}",
        paper_value="I.G. best on AOPC, LOdds, AUC; worst on Comprehensiveness (all three datasets)",
        our_value=f"rank of {method} among the methods (mean over settings, 1 = best): "
                  + ", ".join(f"{metric} {ranks[metric]:.0f}" for metric in metrics_used)
                  + "; settings where each check holds: " + ", ".join(f"{c} {k}/{len(table)}"
                                                                      for c, k in held.items()),
        verdict=v, table=table, kind="paper",
        units=min_units(per_sample, ["setting", "method"] if "setting" in per_sample else ["method"]))


ATTENTION_ABLATION = (("gradient, last layer", "Transformer-MM (last layer)", "Raw Attention"),
                      ("gradient, all layers", "Transformer-MM", "Rollout"),
                      ("all-layer aggregation, no gradient", "Rollout", "Raw Attention"),
                      ("all-layer aggregation, gradient", "Transformer-MM", "Transformer-MM (last layer)"))
"""Table 1's four comparisons (what is added, the variant with it, the variant without it): the Transformer-MM rule
on the last block is "last layer + gradient", rollout "all layers, no gradient"."""


def claim_attention_ablation(per_sample: pd.DataFrame, *, accuracy: pd.DataFrame | None = None,
                             random: str = "Random", comparisons=ATTENTION_ABLATION,
                             min_accuracy: float = MIN_ACCURACY, accuracy_tolerance: float = ACCURACY_TOLERANCE,
                             n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """Claim S3 (Table 1): adding the gradient and aggregating over all layers raise the SaCo of attention
    explanations.

    per_sample, accuracy: as :func:`claim_random_separation` (SaCo and the four variants of
    :data:`ATTENTION_ABLATION`). Per setting × comparison cell, a paired bootstrap over the images (95 %; replicas,
    then images) of SaCo(with) − SaCo(without), margin 0: a win holds, a loss fails, a tie is undecided. Every cell
    counts (Random's SaCo is shown beside them, not used to pick cells). Premise: the ViTs are accurate. Decided by
    :func:`faithlab.verdicts.from_settings` over the cells of the testable settings."""
    reasons = _premises(per_sample, accuracy, min_accuracy, accuracy_tolerance)
    variants = list(dict.fromkeys(name for _, a, b in comparisons for name in (a, b)))
    rows, cells = [], []
    for setting, frame in settings(per_sample):
        missing = set(variants + [random]) - set(frame["method"])
        if missing:
            raise ValueError(f"per_sample lacks {sorted(missing)} in setting {setting!r}")
        table_s = wide(frame, "SaCo")
        gains = against(table_s, [(a, b) for _, a, b in comparisons], n_boot=n_boot, seed=seed)
        testable = reasons[setting] is None
        for (added, a, b), c in zip(comparisons, gains, strict=True):
            if testable:
                cells.append(c)
            rows.append({"setting": setting, "added": added, "with": a, "without": b,
                         "SaCo with": float(table_s[a].mean()), "SaCo without": float(table_s[b].mean()),
                         "SaCo Random": float(table_s[random].mean()), "gain": c.mean, "low": c.low, "high": c.high,
                         "outcome": c.outcome, "testable": testable,
                         "holds": _state(flag(c)) if testable else "—", "images": c.n})
    table = pd.DataFrame(rows)
    untestable = None if cells else next(iter(reasons.values()))
    v = verdicts.from_settings(cells, untestable=untestable, what="setting × comparison cells")
    by = ["setting", "method"] if "setting" in per_sample else ["method"]
    means = per_sample[per_sample["method"].isin(variants)].groupby(by, sort=False)["SaCo"].mean()
    if "setting" in per_sample:
        means = means.groupby("method").mean()
    order = ["Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM"]
    order = [m for m in order if m in means.index] or variants
    wins = sum(c.outcome == "win" for c in cells)
    return verdicts.Claim(
        "S3: gradient and all-layer aggregation raise SaCo of attention explanations (Table 1)",
        rule="per setting and each of the four comparisons (gradient at the last layer and over all layers; "
             "aggregation without and with gradient), the paired difference SaCo(with) − SaCo(without) per image, "
             "bootstrapped over replicas, then images (95 %); direction: positive; margin 0",
        premise=f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)}; "
                f"{sum(r is None for r in reasons.values())} of {len(reasons)} settings pass; {_replicas(per_sample)}",
        paper_value=" / ".join(f"{v:.4f}" for v in paper.TABLE_1.values())
                    + " (raw attention / rollout / last layer + gradient / Transformer-MM)",
        our_value=" / ".join(f"{means[m]:.3f}" for m in order)
                  + f" (mean over settings); significant gain in {wins} of {len(cells)} testable cells, loss in "
                    f"{sum(c.outcome == 'loss' for c in cells)}",
        verdict=v, table=table, kind="paper",
        units=min_units(per_sample[per_sample["method"].isin(variants)], by))


def claim_k_decline(k_frame: pd.DataFrame, *, columns, accuracy: pd.DataFrame | None = None,
                    random: str = "Random", min_accuracy: float = MIN_ACCURACY,
                    accuracy_tolerance: float = ACCURACY_TOLERANCE, n_boot: int = 2000,
                    seed: int = 0) -> verdicts.Claim:
    """Claim S4 (Table 2): SaCo declines (slightly) as the number of groups K grows, for most methods.

    k_frame: one row per setting × (replica ×) method × sample with SaCo at every K (``columns``: ``{K: column}``,
    at least two). Per setting × method other than ``random``, the decline d = SaCo(smallest K) − SaCo(largest K)
    per image, and d − d(Random) on the same image (Random's own change across K is the control: SaCo of a random
    map is 0 only in expectation). Paired bootstraps over the images (95 %; replicas, then images), margin 0: a cell
    holds when both intervals lie above 0, fails when either lies below, else is undecided. Every cell counts —
    none is chosen by its own significance. Premise: the ViTs are accurate. Decided by
    :func:`faithlab.verdicts.from_settings` over the cells ("most" read with the house's shares). "Slightly" is not
    tested: the paper gives no bound."""
    ks = sorted(dict(columns))
    if len(ks) < 2:
        raise ValueError(f"columns must map at least two values of K to SaCo columns, got {columns!r}")
    lo, hi = dict(columns)[ks[0]], dict(columns)[ks[-1]]
    reasons = _premises(k_frame, accuracy, min_accuracy, accuracy_tolerance)
    rows, cells = [], []
    for setting, frame in settings(k_frame):
        if random not in set(frame["method"]):
            raise ValueError(f"k_frame must hold {random!r} in every setting, not in {setting!r}")
        first, last = wide(frame, lo), wide(frame, hi)
        decline = first - last
        methods = [m for m in dict.fromkeys(frame["method"]) if m != random]
        groups = groups_of(decline)
        relative = paired(decline[methods].to_numpy(np.float64) - decline[[random]].to_numpy(np.float64), groups,
                          n_boot=n_boot, seed=seed)
        absolute = paired(decline[methods].to_numpy(np.float64), groups, n_boot=n_boot, seed=seed)
        testable = reasons[setting] is None
        for m, rel, ab in zip(methods, relative, absolute, strict=True):
            h = all_of([flag(rel), flag(ab)])
            if testable:
                cells.append(h)
            rows.append({"setting": setting, "method": m, f"SaCo K={ks[0]}": float(first[m].mean()),
                         f"SaCo K={ks[-1]}": float(last[m].mean()), "decline": ab.mean, "decline low": ab.low,
                         "decline high": ab.high, "Random decline": float(decline[random].mean()),
                         "beyond Random": rel.mean, "low": rel.low, "high": rel.high, "testable": testable,
                         "holds": _state(h) if testable else "—", "images": ab.n})
    table = pd.DataFrame(rows)
    untestable = None if cells else next(iter(reasons.values()))
    v = verdicts.from_settings(cells, untestable=untestable, what="setting × method cells")
    by = ["setting", "method"] if "setting" in k_frame else ["method"]
    n_hold = sum(c is True for c in cells)
    return verdicts.Claim(
        "S4: SaCo declines slightly as K grows for most methods (Table 2)",
        rule=f"per setting × method and image, the decline SaCo(K={ks[0]}) − SaCo(K={ks[-1]}) and that decline "
             "minus Random's on the same image, each bootstrapped over replicas, then images (95 %); direction: both "
             "positive; margin 0; every non-random method's cell counts (\"slightly\" is not tested)",
        premise=f"{accuracy_text(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)}; "
                f"{sum(r is None for r in reasons.values())} of {len(reasons)} settings pass; {_replicas(k_frame)}"
                + (f"; Random's mean decline {table['Random decline'].mean():+.3f}" if len(table) else ""),
        paper_value="most methods decline from K = 5 to 20 (e.g. Transformer-MM "
                    + " / ".join(f"{v:.4f}" for v in paper.TABLE_2["Transformer-MM"]) + "); IG and ATTCAT roughly flat",
        our_value=(f"{n_hold} of {len(cells)} testable setting × method cells decline, and beyond Random, from "
                   f"K={ks[0]} to K={ks[-1]} ({sum(c is False for c in cells)} do not, "
                   f"{sum(c is None for c in cells)} undecided); mean decline {table['decline'].mean():+.3f}")
        if len(table) else "no cell",
        verdict=v, table=table, kind="paper", units=min_units(k_frame[k_frame["method"] != random], by))

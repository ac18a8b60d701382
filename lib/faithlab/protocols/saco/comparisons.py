"""SaCo's paired comparisons of the methods sample by sample, against Random Attribution or between methods, and
the claims they decide: S1 (Random separation, Fig. 4), S7 (removal order), S3 (attention ablation, Table 1) and S4
(number of groups K, Table 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import verdicts
from faithlab.protocols.saco.scores import HIGHER_IS_BETTER

__all__ = ["random_separation", "order_sensitivity", "narrow", "claim_random_separation", "claim_order_sensitivity",
           "ATTENTION_ABLATION", "claim_attention_ablation", "claim_k_decline"]


def _wide(per_sample: pd.DataFrame, metric: str) -> pd.DataFrame:
    """(sample × method) table of one metric, oriented so that higher is better."""
    sign = 1.0 if HIGHER_IS_BETTER.get(metric, True) else -1.0
    return per_sample.pivot(index="sample", columns="method", values=metric) * sign


def _paired(diffs, *, n_boot: int = 4000, level: float = 0.95, seed: int = 0) -> list[verdicts.Comparison]:
    """:func:`faithlab.verdicts.bootstrap_diff` of every column of ``diffs`` ((n units, m comparisons), > 0 favours
    the target) at once, with the same resamples of the units for every column (as :func:`faithlab.verdicts.compare`
    uses them): the resample counts times the columns, one matrix product per block of resamples. Without NaN the
    result equals ``bootstrap_diff(column, n_boot=n_boot, level=level, seed=seed)`` column by column (to float
    rounding); a column holding NaN goes through ``bootstrap_diff``, which drops its NaN units. A local helper: the
    shared :mod:`faithlab.verdicts` has no batched twin of ``bootstrap_diff``."""
    x = torch.tensor(np.asarray(diffs, dtype=np.float64))
    if x.ndim == 1:
        x = x[:, None]
    n, m = x.shape
    finite = ~x.isnan().any(0)
    out: list[verdicts.Comparison | None] = [None] * m
    if n >= 2 and bool(finite.any()) and n_boot >= 100:
        cols = x[:, finite]
        g = torch.Generator().manual_seed(int(seed))
        idx = torch.randint(n, (n_boot, n), generator=g)  # bootstrap_diff's resamples, drawn the same way
        means = torch.empty(n_boot, cols.shape[1], dtype=torch.float64)
        block = max(1, 2_000_000 // n)
        for start in range(0, n_boot, block):
            rows = idx[start:start + block]
            counts = torch.zeros(len(rows), n, dtype=torch.float64).scatter_add_(
                1, rows, torch.ones(rows.shape, dtype=torch.float64))
            means[start:start + block] = counts @ cols / n
        tail = (1 - level) / 2
        bounds = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64), dim=0)
        centre = cols.mean(0)
        for j, col in enumerate(finite.nonzero().flatten().tolist()):
            mean, low, high = float(centre[j]), float(bounds[0, j]), float(bounds[1, j])
            spread = 1e-12 * max(1.0, abs(mean))
            outcome = "win" if low > spread else "loss" if high < -spread else "tie"
            out[col] = verdicts.Comparison(mean, low, high, float(level), n, outcome)
    for col in range(m):
        if out[col] is None:
            out[col] = verdicts.bootstrap_diff(x[:, col], n_boot=n_boot, level=level, seed=seed)
    return out


def _against(wide: pd.DataFrame, pairs, *, n_boot: int = 4000, seed: int = 0) -> list[verdicts.Comparison]:
    """Paired bootstraps over the rows of ``wide`` (samples × methods, higher = better) of ``wide[a] − wide[b]``
    for every ``(a, b)`` of ``pairs`` (> 0 favours a), the same resamples for every pair."""
    diffs = np.stack([wide[a].to_numpy(np.float64) - wide[b].to_numpy(np.float64) for a, b in pairs], axis=1)
    return _paired(diffs, n_boot=n_boot, seed=seed)


def _settings(per_sample: pd.DataFrame):
    """(setting, rows) for every setting of ``per_sample`` in order of appearance (one unnamed setting without a
    ``setting`` column)."""
    if "setting" not in per_sample:
        return [("all", per_sample)]
    return list(per_sample.groupby("setting", sort=False))


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


def random_separation(per_sample: pd.DataFrame, *, random: str = "Random", tolerance: float = 0.05,
                      n_boot: int = 4000, seed: int = 0) -> tuple[verdicts.Verdict, dict]:
    """Claim S1 on one setting's per-sample metrics (columns method, sample and the metrics of
    :data:`HIGHER_IS_BETTER`): SaCo puts ``random`` near 0 and below most methods, the cumulative metrics do not.

    Paired bootstraps over the samples (95 %, :func:`faithlab.verdicts.bootstrap_diff`, the same resamples for every
    method) compare every method with ``random`` on every oriented metric. SaCo's part holds when SaCo(random) is
    near 0 — its mean within ±``tolerance`` or the 95 % bootstrap interval of its mean containing 0 — and more than
    half of the methods beat ``random`` on SaCo (the paper: "most explanation methods obtain positive scores"). A
    cumulative metric fails to separate ``random`` when at least one method does not beat it (``random`` ties or
    wins: "comparable performance, even surpassing some"). Verdict: reproduced when SaCo's part holds and at least
    two of the four cumulative metrics fail; partly reproduced when only SaCo's part holds; else not reproduced.
    Returns the verdict and ``{"SaCo(Random)", "SaCo(Random) low", "SaCo(Random) high", "near 0", "methods beating
    Random on SaCo", "SaCo part holds", "beating Random": {metric: count}, "not beating Random": {cumulative metric:
    count}, "differing from Random": the number of method × metric comparisons that are not ties, "methods": n}``.
    """
    methods = [m for m in dict.fromkeys(per_sample["method"]) if m != random]
    if random not in set(per_sample["method"]) or not methods:
        raise ValueError(f"per_sample must hold {random!r} and at least one other method")
    beating, differing = {}, 0
    for metric in HIGHER_IS_BETTER:
        comps = _against(_wide(per_sample, metric), [(m, random) for m in methods], n_boot=n_boot, seed=seed)
        beating[metric] = sum(c.outcome == "win" for c in comps)
        differing += sum(c.outcome != "tie" for c in comps)
    saco = per_sample.loc[per_sample["method"] == random, "SaCo"].to_numpy(np.float64)
    level = _paired(saco, n_boot=n_boot, seed=seed)[0] if len(saco) >= 2 else None
    saco_random = float(saco.mean())
    near = abs(saco_random) <= tolerance or (level is not None and level.low <= 0 <= level.high)
    saco_ok = near and beating["SaCo"] > len(methods) / 2
    failing = {m: len(methods) - beating[m] for m in HIGHER_IS_BETTER if m != "SaCo"}
    n_fail = sum(v > 0 for v in failing.values())
    result = verdicts.ladder(saco_ok and n_fail >= 2, saco_ok)
    interval = f" [{level.low:+.3f}, {level.high:+.3f}]" if level is not None else ""
    why = (f"SaCo(Random) {saco_random:+.3f}{interval} (near 0: within ±{tolerance:g} or interval containing 0: "
           f"{'yes' if near else 'no'}), {beating['SaCo']}/{len(methods)} methods beat it on SaCo; cumulative "
           f"metrics on which some method does not beat Random: {n_fail}/4")
    return verdicts.Verdict(result, why), {
        "SaCo(Random)": saco_random, "SaCo(Random) low": level.low if level else float("nan"),
        "SaCo(Random) high": level.high if level else float("nan"), "near 0": near,
        "methods beating Random on SaCo": beating["SaCo"], "SaCo part holds": saco_ok, "beating Random": beating,
        "not beating Random": failing, "differing from Random": differing, "methods": len(methods)}


def order_sensitivity(per_sample: pd.DataFrame, *, method: str = "Integrated Gradients",
                      best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"), worst_on: str = "Comprehensiveness",
                      n_boot: int = 4000, seed: int = 0) -> dict[str, bool]:
    """The paper's removal-order observation on one setting's per-sample metrics: ``method`` is best on the
    most-relevant-first metrics ``best_on`` and worst on ``worst_on`` (least-relevant first).

    Paired bootstraps over the samples (95 %, the same resamples for every competitor) of ``method`` against every
    other method on each oriented metric: "best on M" holds when no method beats ``method`` on M and ``method``
    beats at least one; "worst on M" when ``method`` beats none and at least one beats it (a method that ties every
    other is neither best nor worst). Returns ``{"best on AOPC": bool, …, "worst on Comprehensiveness": bool}``.
    """
    others = [m for m in dict.fromkeys(per_sample["method"]) if m != method]
    if method not in set(per_sample["method"]) or not others:
        raise ValueError(f"per_sample must hold {method!r} and at least one other method")
    checks = {}
    for metric, want in [*((m, "best") for m in best_on), (worst_on, "worst")]:
        outcomes = [c.outcome for c in _against(_wide(per_sample, metric), [(method, m) for m in others],
                                                n_boot=n_boot, seed=seed)]
        wins, losses = "win" in outcomes, "loss" in outcomes
        checks[f"{want} on {metric}"] = (wins and not losses) if want == "best" else (losses and not wins)
    return checks


# ---------------------------------------------------------------- Fig. 4, §5 and Tables 1–2: S1, S7, S3, S4 as claims
def claim_random_separation(per_sample: pd.DataFrame, *, random: str = "Random", tolerance: float = 0.05,
                            n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Claim S1 (Fig. 4, §5) over the settings: SaCo puts Random Attribution near 0 and below most methods, the
    cumulative metrics barely separate it.

    per_sample: one row per setting × method × sample (columns setting, method, sample and the metrics of
    :data:`HIGHER_IS_BETTER`). Per setting, :func:`random_separation` (paired bootstraps over the samples, 95 %)
    decides whether the claim holds there: SaCo(Random) near 0 (mean within ±``tolerance`` or its interval
    containing 0), more than half of the methods beating Random on SaCo, and at least two of the four cumulative
    metrics on which some method does not beat Random. Premise and null: Random is the null; a setting is testable
    only when some method differs significantly from Random on some metric — else every map is at the chance level
    and no metric can separate anything there. Rule: reproduced when the claim holds in 2/3 of the testable
    settings, partly from 1/3 (:func:`faithlab.verdicts.from_settings`). Table: one row per setting."""
    rows = []
    for setting, frame in _settings(per_sample):
        v, d = random_separation(frame, random=random, tolerance=tolerance, n_boot=n_boot, seed=seed)
        testable = d["differing from Random"] > 0
        rows.append({"setting": setting, "verdict": str(v), "testable": testable,
                     "holds": testable and v == verdicts.VERDICTS[0], "SaCo(Random)": d["SaCo(Random)"],
                     "SaCo(Random) low": d["SaCo(Random) low"], "SaCo(Random) high": d["SaCo(Random) high"],
                     "methods beating Random on SaCo": f"{d['methods beating Random on SaCo']}/{d['methods']}",
                     **{f"methods not beating Random on {k}": c for k, c in d["not beating Random"].items()},
                     "why": v.why})
    table = pd.DataFrame(rows)
    testable = table[table["testable"]]
    untestable = None if len(testable) else "no method differs significantly from Random (the null) on any " \
                                             "metric in any setting: every map is at the chance level"
    v = verdicts.from_settings(testable["holds"].tolist(), untestable=untestable, what="settings")
    return verdicts.Claim(
        "S1: SaCo puts Random near 0 and below most methods; cumulative metrics barely separate it (Fig. 4)",
        rule=f"per setting, paired bootstraps over the samples (95 %) of every method against Random on every "
             f"oriented metric; the claim holds in a setting when SaCo(Random) is near 0 (mean within "
             f"±{tolerance:g} or its interval containing 0), more than half of the methods beat Random on SaCo and "
             "on at least two of the four cumulative metrics some method does not beat Random; reproduced when it "
             "holds in 2/3 of the testable settings, partly from 1/3",
        premise=f"Random Attribution is the null: a setting is testable when some method differs significantly from "
                f"Random on some metric (else every map is at chance); {len(testable)} of {len(table)} settings "
                "testable",
        paper_value="SaCo(Random) ≈ 0 < most methods; Random comparable to or better than some methods on "
                    "AUC/AOPC/LOdds/Comp.",
        our_value="; ".join(f"{r['setting']}: {'holds' if r['holds'] else 'fails' if r['testable'] else 'not testable'}"
                            f" (SaCo(Random) {r['SaCo(Random)']:+.3f}, {r['methods beating Random on SaCo']} methods "
                            "beat it on SaCo)" for r in rows),
        verdict=v, table=table)


def claim_order_sensitivity(per_sample: pd.DataFrame, *, method: str = "Integrated Gradients",
                            random: str = "Random", best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"),
                            worst_on: str = "Comprehensiveness", n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Claim S7 (§5) over the settings: ``method`` (integrated gradients) is best on AOPC, LOdds and AUC (most
    relevant first) but worst on Comprehensiveness (least relevant first), i.e. the cumulative metrics depend on
    the removal order.

    per_sample: as :func:`claim_random_separation`. Per setting, :func:`order_sensitivity` (paired bootstraps over
    the samples, 95 %: best = beaten by no method and beating at least one; worst = beating none and beaten by at
    least one); the claim holds in a setting when all four checks hold. Premise and null: Random is the null; a
    setting is testable when each of the four metrics separates at least one method significantly from Random —
    a metric on which every map is at the chance level ranks nothing. Rule: reproduced when the claim holds in 2/3 of
    the testable settings, partly from 1/3 (:func:`faithlab.verdicts.from_settings`). Table: one row per setting."""
    metrics_used = [*best_on, worst_on]
    rows = []
    for setting, frame in _settings(per_sample):
        if method not in set(frame["method"]) or random not in set(frame["method"]):
            raise ValueError(f"per_sample must hold {method!r} and {random!r} in every setting, not in {setting!r}")
        checks = order_sensitivity(frame, method=method, best_on=best_on, worst_on=worst_on, n_boot=n_boot,
                                   seed=seed)
        others = [m for m in dict.fromkeys(frame["method"]) if m != random]
        blind = [metric for metric in metrics_used
                 if all(c.outcome == "tie" for c in _against(_wide(frame, metric), [(m, random) for m in others],
                                                             n_boot=n_boot, seed=seed))]
        rows.append({"setting": setting, **checks, "testable": not blind,
                     "metrics at chance": ", ".join(blind) or "none", "holds": not blind and all(checks.values())})
    table = pd.DataFrame(rows)
    testable = table[table["testable"]]
    untestable = None if len(testable) else "in no setting do all four metrics separate some map from Random " \
                                             "(the null)"
    v = verdicts.from_settings(testable["holds"].tolist(), untestable=untestable, what="settings")
    means = per_sample.groupby(["setting", "method"], sort=False)[metrics_used].mean().groupby(
        "method", sort=False).mean()
    sign = pd.Series({m: 1.0 if HIGHER_IS_BETTER[m] else -1.0 for m in metrics_used})
    ranks = (means * sign).rank(ascending=False).loc[method]
    held = {c: int(table[c].sum()) for c in checks}
    return verdicts.Claim(
        "S7: IG is best on AOPC, LOdds and AUC but worst on Comprehensiveness (removal-order sensitivity, §5)",
        rule=f"per setting, paired bootstraps over the samples (95 %) of {method} against every other method: best "
             "on a metric = beaten by none and beating at least one, worst = beating none and beaten by at least "
             f"one; the claim holds in a setting when it is best on {', '.join(best_on)} and worst on {worst_on}; "
             "reproduced when it holds in 2/3 of the testable settings, partly from 1/3",
        premise=f"Random Attribution is the null: a setting is testable when each of the four metrics separates some "
                f"method significantly from Random; {len(testable)} of {len(table)} settings testable",
        paper_value="I.G. best on AOPC, LOdds, AUC; worst on Comprehensiveness (all three datasets)",
        our_value=f"rank of {method} among the methods (mean over settings, 1 = best): "
                  + ", ".join(f"{metric} {ranks[metric]:.0f}" for metric in metrics_used)
                  + "; settings where each check holds: " + ", ".join(f"{c} {k}/{len(table)}"
                                                                      for c, k in held.items()),
        verdict=v, table=table)


ATTENTION_ABLATION = (("gradient, last layer", "Transformer-MM (last layer)", "Raw Attention"),
                      ("gradient, all layers", "Transformer-MM", "Rollout"),
                      ("all-layer aggregation, no gradient", "Rollout", "Raw Attention"),
                      ("all-layer aggregation, gradient", "Transformer-MM", "Transformer-MM (last layer)"))
"""Table 1's four comparisons (what is added, the variant with it, the variant without it): the Transformer-MM rule
on the last block is "last layer + gradient", rollout "all layers, no gradient"."""


def claim_attention_ablation(per_sample: pd.DataFrame, *, random: str = "Random",
                             comparisons=ATTENTION_ABLATION, n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Claim S3 (Table 1): adding the gradient and aggregating over all layers raise the SaCo of attention
    explanations.

    per_sample: as :func:`claim_random_separation` (SaCo column and the four variants of :data:`ATTENTION_ABLATION`
    among the methods). Per setting × comparison cell, a paired bootstrap over the samples (95 %) of SaCo(with) −
    SaCo(without); the cell holds when the interval lies above 0. Premise and null: Random is the null; a cell is
    testable when at least one of its two variants' SaCo differs significantly from Random's — two maps both at the
    chance level have no order to compare. Rule: reproduced when the gain is significant in 2/3 of the testable
    cells, partly from 1/3 (:func:`faithlab.verdicts.from_settings`). Table: one row per cell."""
    variants = list(dict.fromkeys(name for _, a, b in comparisons for name in (a, b)))
    rows = []
    for setting, frame in _settings(per_sample):
        missing = set(variants + [random]) - set(frame["method"])
        if missing:
            raise ValueError(f"per_sample lacks {sorted(missing)} in setting {setting!r}")
        wide = _wide(frame, "SaCo")
        gains = _against(wide, [(a, b) for _, a, b in comparisons], n_boot=n_boot, seed=seed)
        chance = dict(zip(variants, _against(wide, [(v, random) for v in variants], n_boot=n_boot, seed=seed),
                          strict=True))
        for (added, a, b), c in zip(comparisons, gains, strict=True):
            testable = chance[a].outcome != "tie" or chance[b].outcome != "tie"
            rows.append({"setting": setting, "added": added, "with": a, "without": b,
                         "SaCo with": float(wide[a].mean()), "SaCo without": float(wide[b].mean()),
                         "SaCo Random": float(wide[random].mean()), "gain": c.mean, "low": c.low, "high": c.high,
                         "outcome": c.outcome, "testable": testable, "holds": testable and c.outcome == "win"})
    table = pd.DataFrame(rows)
    testable = table[table["testable"]]
    untestable = None if len(testable) else "in no cell does either variant's SaCo differ from Random's (the null)"
    v = verdicts.from_settings(testable["holds"].tolist(), untestable=untestable, what="setting × comparison cells")
    means = per_sample[per_sample["method"].isin(variants)].groupby(["setting", "method"], sort=False)["SaCo"] \
        .mean().groupby("method").mean()
    order = ["Raw Attention", "Rollout", "Transformer-MM (last layer)", "Transformer-MM"]
    order = [m for m in order if m in means.index] or variants
    return verdicts.Claim(
        "S3: gradient and all-layer aggregation raise SaCo of attention explanations (Table 1)",
        rule="per setting and each of the four comparisons (gradient at the last layer and over all layers; "
             "aggregation without and with gradient), a paired bootstrap over the samples (95 %) of SaCo(with) − "
             "SaCo(without): reproduced when the gain is significant in 2/3 of the testable setting × comparison "
             "cells, partly from 1/3",
        premise=f"Random Attribution is the null: a cell is testable when at least one of its two variants' SaCo "
                f"differs significantly from Random's; {len(testable)} of {len(table)} cells testable",
        paper_value="0.1835 / 0.2453 / 0.3783 / 0.4558 (raw attention / rollout / last layer + gradient / "
                    "Transformer-MM)",
        our_value=" / ".join(f"{means[m]:.3f}" for m in order)
                  + f" (mean over settings); significant gain in {int(testable['holds'].sum())} of {len(testable)} "
                    "testable cells",
        verdict=v, table=table)


def claim_k_decline(k_frame: pd.DataFrame, *, columns, random: str = "Random", min_testable: float = 0.5,
                    n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Claim S4 (Table 2): SaCo declines (slightly) as the number of groups K grows, for most methods.

    k_frame: one row per setting × method × sample with SaCo at every K (``columns``: ``{K: column}``, at least two).
    Per setting × method other than ``random``, the decline d = SaCo(smallest K) − SaCo(largest K) per sample.
    Null: Random's own change across K on the same samples (SaCo of a random map is 0 only in expectation, and its
    spread and any drift with K are what a method's decline must exceed). Per cell, paired bootstraps over the
    samples (95 %) of d − d(Random) and of d: a cell whose d − d(Random) interval contains 0 lies within the null
    and is not testable; a testable cell holds when both intervals lie above 0 (it declines, and more than Random).
    Premise: a claim about most methods needs most of them; with fewer than ``min_testable`` of the cells testable
    the claim is not testable here. Rule: reproduced when 2/3 of the testable cells hold, partly from 1/3
    (:func:`faithlab.verdicts.from_settings`; "most" read with the house thresholds). "Slightly" is not tested: the
    paper gives no bound."""
    ks = sorted(dict(columns))
    if len(ks) < 2:
        raise ValueError(f"columns must map at least two values of K to SaCo columns, got {columns!r}")
    lo, hi = dict(columns)[ks[0]], dict(columns)[ks[-1]]
    rows = []
    for setting, frame in _settings(k_frame):
        if random not in set(frame["method"]):
            raise ValueError(f"k_frame must hold {random!r} in every setting, not in {setting!r}")
        first, last = _wide(frame, lo), _wide(frame, hi)
        decline = first - last
        methods = [m for m in dict.fromkeys(frame["method"]) if m != random]
        relative = _paired(decline[methods].to_numpy(np.float64)
                           - decline[[random]].to_numpy(np.float64), n_boot=n_boot, seed=seed)
        absolute = _paired(decline[methods].to_numpy(np.float64), n_boot=n_boot, seed=seed)
        for m, rel, ab in zip(methods, relative, absolute, strict=True):
            testable = rel.outcome != "tie"
            rows.append({"setting": setting, "method": m, f"SaCo K={ks[0]}": float(first[m].mean()),
                         f"SaCo K={ks[-1]}": float(last[m].mean()), "decline": ab.mean, "decline low": ab.low,
                         "decline high": ab.high, "Random decline": float(decline[random].mean()),
                         "beyond Random": rel.mean, "low": rel.low, "high": rel.high, "testable": testable,
                         "holds": testable and rel.outcome == "win" and ab.outcome == "win"})
    table = pd.DataFrame(rows)
    testable = table[table["testable"]]
    untestable = None if len(testable) >= max(1, min_testable * len(table)) else (
        f"only {len(testable)} of {len(table)} setting × method cells have a change from K={ks[0]} to K={ks[-1]} "
        f"that can be told from Random's (the null); the claim is about most methods and needs {min_testable:.0%}")
    v = verdicts.from_settings(testable["holds"].tolist(), untestable=untestable, what="setting × method cells")
    return verdicts.Claim(
        "S4: SaCo declines slightly as K grows for most methods (Table 2)",
        rule=f"per setting × method, paired bootstraps over the samples (95 %) of the decline SaCo(K={ks[0]}) − "
             f"SaCo(K={ks[-1]}) and of that decline minus Random's: a cell holds when both lie above 0; reproduced "
             "when 2/3 of the testable cells hold, partly from 1/3 (\"slightly\" is not tested)",
        premise=f"Random Attribution's change across K on the same samples is the null: a cell whose decline "
                f"cannot be told from Random's is not testable, and at least {min_testable:.0%} of the cells must be "
                f"testable; {len(testable)} of {len(table)} cells testable "
                f"(Random's mean decline {table['Random decline'].mean():+.3f})" if len(table) else
                "Random Attribution's change across K is the null; no cell",
        paper_value="most methods decline from K = 5 to 20 (e.g. Transformer-MM 0.6041 / 0.4558 / 0.3651); IG and "
                    "ATTCAT roughly flat",
        our_value=f"{int(testable['holds'].sum())} of {len(testable)} testable setting × method cells decline "
                  f"beyond Random from K={ks[0]} to K={ks[-1]} ({len(table) - len(testable)} within the null); mean "
                  f"decline {table['decline'].mean():+.3f}" if len(table) else "no cell",
        verdict=v, table=table)

"""The synthesis' meta-evaluation of the metrics on :mod:`~faithlab.protocols.synthesis.setups`' frames.

From :func:`faithlab.evaluate` frames this module computes, per metric, how well it recovers the known ranking of
the degraded explainers (:func:`recovery`), how far the perfect explanation lands from the metric's own ideal
(:func:`ideal_gap`; Miró-Nicolau et al.'s claim decided against random maps by :func:`claim_ideal_gap`), a
MetaQuantus-style meta-evaluation (:func:`resilience`, :func:`reactivity`, :func:`beats`, on
:func:`noisy_inputs`; Hedström et al., TMLR 2023), each metric's cost (:func:`cost_per_metric`), and the report
card that ranks the metrics (:func:`report_card`, :func:`recommendations`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch

from faithlab import _validate, evaluation, verdicts
from faithlab.metrics.statistics import spearman
from faithlab.protocols.synthesis.paper import PAPER_IDEAL_GAP

__all__ = ["claim_ideal_gap", "recovery", "ideal_gap", "resilience", "reactivity", "report_card", "recommendations",
           "CRITERIA", "cost_per_metric", "noisy_inputs", "beats"]


def _units(frame: pd.DataFrame) -> list[str]:
    """The columns that name a unit of a frame: ``replica`` and ``sample`` when the frame pools trained replicas
    (the same sample index in two replicas is two units), else ``sample``."""
    return ["replica", "sample"] if "replica" in frame.columns else ["sample"]


def _replica_codes(wide: pd.DataFrame):
    """The replica of each row of a frame indexed by :func:`_units` (None without replicas): the ``groups`` of the
    two-stage bootstrap (replicas, then images within them)."""
    return wide.index.get_level_values("replica").astype(str).to_numpy() if "replica" in wide.index.names else None


def _matrix(frame: pd.DataFrame, metric: str, names: Sequence[str]) -> torch.Tensor:
    """Oriented per-sample scores of one metric ``(samples, explainers)`` in the order of ``names`` (samples: the
    (replica, sample) units when the frame carries a ``replica`` column)."""
    part = evaluation.oriented(frame[(frame["metric"] == metric) & frame["explainer"].isin(names)])
    wide = part.pivot(index=_units(part), columns="explainer", values="oriented")[list(names)]
    return torch.tensor(wide.to_numpy(dtype=float).copy(), dtype=torch.float64, device="cpu")


def recovery(frame: pd.DataFrame, quality: Mapping[str, float], *, seed: int = 0, n_boot: int = 2000
             ) -> pd.DataFrame:
    """How well each per-sample metric of an :func:`~faithlab.evaluate` frame recovers a known ranking of explainers.

    quality: ``{explainer: known quality}`` (higher = better; e.g. −ξ). Per metric: ``spearman`` the mean over
    samples of the Spearman correlation between the metric's oriented scores and the quality (a sample whose
    scores do not vary across the explainers has no ranking and counts as 0), ``spearman std`` over samples,
    ``undefined`` the share of such samples, ``pairwise`` the share of explainer pairs of different quality that
    the metric orders rightly (ties count ½), and ``dataset spearman`` the Spearman of the mean scores (the
    ranking a user who averages over samples sees). 1 is perfect recovery for all but ``undefined``.
    ``spearman low`` / ``spearman high``: the 95 % percentile bootstrap interval of ``spearman`` over the samples
    (``n_boot`` resamples, generator ``seed``: the same resamples for every metric, so intervals are comparable).
    """
    names = list(quality)
    if len(names) < 2:
        raise ValueError(f"quality must rank at least 2 explainers, got {names}")
    q = torch.tensor([quality[n] for n in names], dtype=torch.float64, device="cpu")
    i, j = torch.triu_indices(len(names), len(names), offset=1, device="cpu")
    differ = q[i] != q[j]
    rows = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        m = _matrix(frame, metric, names)
        flat = (m == m[:, :1]).all(1)
        zero = torch.zeros((), dtype=torch.float64, device="cpu")
        rho = torch.where(flat, zero, spearman(m, q.expand_as(m)).nan_to_num(0.0))
        better = torch.sign(m[:, i] - m[:, j]) * torch.sign(q[i] - q[j])
        pair = ((better > 0).double() + 0.5 * (better == 0).double())[:, differ]
        means = m.mean(0)
        spread = verdicts.bootstrap_diff(rho, n_boot=n_boot, seed=seed) if rho.numel() > 1 else None
        rows.append({"metric": metric, "label": evaluation.METRICS[metric].label, "spearman": rho.mean().item(),
                     "spearman low": spread.low if spread else float("nan"),
                     "spearman high": spread.high if spread else float("nan"),
                     "spearman std": rho.std(correction=0).item(), "undefined": flat.double().mean().item(),
                     "pairwise": pair.mean().item(),
                     "dataset spearman": 0.0 if bool((means == means[0]).all()) else spearman(means, q).item()})
    return pd.DataFrame(rows)


def ideal_gap(frame: pd.DataFrame, explainer: str, *, tolerance: float = 0.3) -> pd.DataFrame:
    """Distance of one explainer's scores from each metric's ideal value, as a share of the metric's range, for the
    metrics that define both (:data:`faithlab.evaluation.METRICS`): ``gap`` mean |score − ideal| / span,
    ``within`` the share of samples within ``tolerance`` of the ideal (Miró-Nicolau et al. 2024 asked whether
    fidelity metrics score a perfect explanation within 30 % of their ideal)."""
    tolerance = _validate.fraction(tolerance, "tolerance")
    part = frame[(frame["explainer"] == explainer) & (frame["level"] == "sample")]
    if part.empty:
        raise ValueError(f"explainer {explainer!r} has no per-sample rows in frame")
    rows = []
    for metric, scores in part.groupby("metric", sort=False)["score"]:
        info = evaluation.METRICS[metric]
        if info.ideal is None or info.span is None:
            continue
        gap = (scores - info.ideal).abs() / info.span
        rows.append({"metric": metric, "label": info.label, "ideal": info.ideal, "mean score": scores.mean(),
                     "gap": gap.mean(), "within": float((gap <= tolerance).mean())})
    return pd.DataFrame(rows, columns=["metric", "label", "ideal", "mean score", "gap", "within"])



def _per_image(frame: pd.DataFrame, metric: str, names: Sequence[str]) -> pd.DataFrame:
    """Raw per-sample scores of one metric, one column per explainer of ``names`` (rows: samples, or (replica,
    sample) units when the frame carries replicas)."""
    part = frame[(frame["metric"] == metric) & (frame["level"] == "sample") & frame["explainer"].isin(names)]
    return part.pivot(index=_units(part), columns="explainer", values="score").reindex(columns=list(names))


def claim_ideal_gap(frame: pd.DataFrame, *, perfect: str, random: str, tolerance: float = 0.3, setting: str = "",
                    n_boot: int = 4000, level: float = 0.95, seed: int = 0) -> verdicts.Claim:
    """Miró-Nicolau et al. (2024): no fidelity metric scores the perfect explanation of a transparent model within
    ``tolerance`` (30 %) of the metric's ideal.

    frame: an :func:`~faithlab.evaluate` frame holding the explainers ``perfect`` (the model's perfect explanation)
    and ``random`` (random maps, the null) on the same images: of one model, or of several independently trained
    replicas of it stacked with a ``replica`` column (a unit is then a replica × image, and every interval below is
    the two-stage bootstrap of :func:`faithlab.verdicts.bootstrap_diff` with ``groups``: the replicas resampled,
    then the images within each drawn replica). Metrics: the per-sample metrics of the frame with an ideal value
    and a range (:data:`faithlab.evaluation.METRICS`); an image's gap is |score − ideal| / range
    (:func:`ideal_gap`, pooled over the replicas). Images where a metric is undefined (NaN) are left out of it.

    Premise and null, per metric: the metric must score the perfect explanation significantly better than random
    maps (paired bootstrap over (replicas, then) images of the oriented difference perfect − random, its ``level``
    interval above 0; the chance level, random maps' mean score resampled the same way, is in the table). A metric
    that cannot tell the perfect explanation from random maps says nothing about fidelity here and does not count;
    when none counts, the claim is not testable here.
    Rule (fixed before any result): per counted metric, the ``level`` bootstrap interval (over replicas, then images)
    of its mean gap lies below ``tolerance`` (within), above it (beyond) or across it (undecided); the claim holds for
    a metric that is beyond and fails for one within, and is decided by :func:`faithlab.verdicts.from_settings` with
    every counted metric required (an undecided metric that could tip it leaves the claim inconclusive). setting: a
    label appended to the claim's text.

    Returns a :class:`faithlab.verdicts.Claim` whose table has one row per metric with an ideal: ideal, range, the
    perfect and random means, the chance range (``chance low``/``high``), the paired comparison (``perfect −
    random``, ``low``, ``high``, ``beats random``), the mean ``gap`` with its interval, random maps' gap, the
    ``share within`` tolerance (:func:`ideal_gap`), the ``images`` scored (pooled over the replicas), the
    ``replicas`` and the ``outcome``."""
    tol = _validate.fraction(tolerance, "tolerance", closed_low=False)
    present = set(frame.loc[frame["level"] == "sample", "explainer"])
    for value, arg in ((perfect, "perfect"), (random, "random")):
        if value not in present:
            raise ValueError(f"{arg} must name an explainer with per-sample rows in frame, got {value!r}; frame has "
                             f"{sorted(present)}")
    if perfect == random:
        raise ValueError(f"perfect and random must name different explainers, got {perfect!r} for both")
    gaps = ideal_gap(frame, perfect, tolerance=tol).set_index("metric")
    chance = ideal_gap(frame, random, tolerance=tol).set_index("metric")
    n_replicas = int(frame["replica"].nunique()) if "replica" in frame.columns else 1
    nan = float("nan")
    rows = []
    for metric in gaps.index:
        info = evaluation.METRICS[metric]
        wide = _per_image(frame, metric, [perfect, random])
        a, b = wide[perfect].to_numpy(dtype=float), wide[random].to_numpy(dtype=float)
        groups = _replica_codes(wide)
        sign = 1.0 if info.higher_is_better else -1.0
        row = {"metric": metric, "label": info.label, "ideal": info.ideal, "range": info.span,
               "perfect mean": float(pd.Series(a).mean()), "random mean": float(pd.Series(b).mean()),
               "chance low": nan, "chance high": nan, "perfect − random": nan, "low": nan, "high": nan,
               "beats random": False, "gap": float(gaps.loc[metric, "gap"]), "gap low": nan, "gap high": nan,
               "random gap": float(chance.loc[metric, "gap"]) if metric in chance.index else nan,
               "share within": float(gaps.loc[metric, "within"]), "images": int((~pd.isna(a)).sum()),
               "replicas": n_replicas, "outcome": "not counted"}
        if int((~(pd.isna(a) | pd.isna(b))).sum()) >= 2:
            c = verdicts.bootstrap_diff(sign * a, sign * b, n_boot=n_boot, level=level, seed=seed, groups=groups)
            row.update({"perfect − random": c.mean, "low": c.low, "high": c.high, "beats random": c.outcome == "win"})
        kept = ~pd.isna(b)
        if int(kept.sum()) >= 2:
            codes = None if groups is None else torch.from_numpy(
                pd.factorize(groups[kept], sort=True)[0].astype("int64"))
            draws = verdicts.hierarchical_means(torch.tensor(b[kept], dtype=torch.float64, device="cpu"), groups=codes,
                                                n_boot=1000, seed=seed)
            null = verdicts.Null(f"random maps' mean {info.label}, "
                                 + ("replicas, then images resampled" if n_replicas > 1 else "images resampled"),
                                 tuple(draws.tolist()), level)
            row.update({"chance low": null.low, "chance high": null.high})
        gap = (pd.Series(a) - info.ideal).abs().to_numpy() / info.span
        defined = ~pd.isna(gap)
        if row["beats random"] and int(defined.sum()) >= 2:
            g = verdicts.bootstrap_diff(gap[defined] - tol, n_boot=n_boot, level=level, seed=seed,
                                        groups=None if groups is None else groups[defined])
            row.update({"gap low": g.low + tol, "gap high": g.high + tol,
                        "outcome": {"win": "beyond", "loss": "within", "tie": "undecided"}[g.outcome]})
        rows.append(row)
    table = pd.DataFrame(rows)
    pct, interval = f"{tol * 100:g} %", f"{level * 100:g} %"
    over = "replicas, then images within them" if n_replicas > 1 else "images"
    counted = table[table["beats random"]] if len(table) else table
    by = {o: (counted.loc[counted["outcome"] == o, "label"].tolist() if len(counted) else [])
          for o in ("within", "beyond", "undecided")}
    rule = (f"per metric with an ideal value that scores the perfect explanation significantly above random maps, "
            f"the {interval} bootstrap interval over {over} of its mean |score − ideal| / range against the margin "
            f"{pct}: the claim holds for the metric when the interval lies above {pct}, fails when below; it is "
            "made of every counted metric")
    premise = (f"null: random maps; a metric counts only if the {interval} paired-bootstrap interval over {over} of "
               f"perfect − random (oriented) lies above 0: "
               + (f"{', '.join(counted['label']) or 'none'} of {', '.join(table['label'])}" if len(table)
                  else "no metric with an ideal value"))
    untestable = ("no metric of the frame has an ideal value and a range" if table.empty else
                  "no metric scores the perfect explanation significantly above random maps" if counted.empty
                  else None)
    holds = ([True] * len(by["beyond"]) + [False] * len(by["within"]) + [None] * len(by["undecided"]))
    v = verdicts.from_settings(holds, reproduced=1.0, partly=1.0, untestable=untestable, what="counted metrics")
    if untestable is None:
        v = v.with_why(f"{len(counted)} of {len(table)} metrics with an ideal tell the perfect explanation from random "
                       f"maps; within {pct}: {', '.join(by['within']) or 'none'}; beyond: "
                       f"{', '.join(by['beyond']) or 'none'}; undecided: {', '.join(by['undecided']) or 'none'}"
                       + ("" if v != verdicts.INCONCLUSIVE else " (the undecided could tip it either way)"))
    ours = "; ".join(f"{r['label']} {100 * r['gap']:.0f} % off (random maps {100 * r['random gap']:.0f} %"
                     f"{'' if r['beats random'] else '; not above them'})" for _, r in table.iterrows())
    return verdicts.Claim(
        f"No fidelity metric scores a perfect explanation of a transparent model within {pct} of its ideal"
        + (f" ({setting})" if setting else ""),
        rule=rule, premise=premise, paper_value=PAPER_IDEAL_GAP,
        our_value=(f"{len(by['within'])} of {len(counted)} counted metrics within {pct}: {ours}" if len(table)
                   else "no metric with an ideal value"),
        verdict=v, table=table, units=int(counted["images"].min()) if len(counted) else None)


def _means(frame: pd.DataFrame, names: Sequence[str]) -> dict[str, torch.Tensor]:
    out = {}
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        out[metric] = _matrix(frame, metric, names).nanmean(0)  # NaN: a μF of constant outputs
    return out


def _rank_agreement(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman of two explainer rankings; 0 when either does not vary (no ranking to keep), NaN when either is
    undefined."""
    if bool(torch.isnan(a).any()) or bool(torch.isnan(b).any()):
        return float("nan")
    if bool((a == a[0]).all()) or bool((b == b[0]).all()):
        return 0.0
    return spearman(a, b).item()


def resilience(base: pd.DataFrame, perturbed: Mapping[str, pd.DataFrame], names: Sequence[str]) -> pd.DataFrame:
    """Noise resilience (MetaQuantus): the Spearman between each metric's ranking of the explainers ``names`` (mean
    oriented scores) on the original frame and on each frame of slightly perturbed models or inputs
    (``perturbed`` ``{condition: frame}``) → one row per metric and condition plus the mean (``condition``
    "mean"); 1: the ranking does not move."""
    ref = _means(base, names)
    rows = []
    for condition, frame in perturbed.items():
        other = _means(frame, names)
        rows += [{"metric": m, "condition": condition, "resilience": _rank_agreement(ref[m], other[m])} for m in ref]
    table = pd.DataFrame(rows)
    mean = table.groupby("metric", sort=False)["resilience"].mean().reset_index().assign(condition="mean")
    return pd.concat([table, mean], ignore_index=True)


def reactivity(base: pd.DataFrame, randomised: pd.DataFrame, names: Sequence[str], *, truth: str,
               random: str) -> pd.DataFrame:
    """Adversary reactivity (MetaQuantus): per metric, ``model`` (1 − Spearman between its ranking of ``names`` on
    the original and on a randomised model) / 2, 1 when the ranking reverses and ½ when it is unrelated;
    ``explanation`` the share of samples where the ground truth ``truth`` scores better than the random map
    ``random`` (ties ½; ½ when the metric cannot tell them apart); ``reactivity`` their mean."""
    ref, other = _means(base, names), _means(randomised, names)
    wins = beats(base, truth, random).set_index("metric")["share"]
    rows = []
    for metric in ref:
        model = (1 - _rank_agreement(ref[metric], other[metric])) / 2
        rows.append({"metric": metric, "model": model, "explanation": wins[metric],
                     "reactivity": (model + wins[metric]) / 2})
    return pd.DataFrame(rows)


def beats(frame: pd.DataFrame, explainer: str, other: str) -> pd.DataFrame:
    """Per per-sample metric, the share of samples where ``explainer`` scores better than ``other`` (oriented
    scores; ties count ½, so ½ means the metric cannot tell them apart) → columns ``metric``, ``share``."""
    rows = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        both = _matrix(frame, metric, [explainer, other])
        win = (both[:, 0] > both[:, 1]).double() + 0.5 * (both[:, 0] == both[:, 1]).double()
        rows.append({"metric": metric, "share": win.mean().item()})
    return pd.DataFrame(rows, columns=["metric", "share"])


CRITERIA = {"recovery": True, "OOD recovery": True, "resilience": True, "reactivity": True, "cost": False}
"""The report card's criteria and whether higher is better."""


def report_card(recovery_by_setup: pd.DataFrame, resilience_table: pd.DataFrame, reactivity_table: pd.DataFrame,
                cost_table: pd.DataFrame, *, ood_setup: str) -> pd.DataFrame:
    """One row per metric: ``recovery`` (mean per-sample Spearman over the setups), ``OOD recovery`` (on
    ``ood_setup``), ``resilience`` (mean), ``reactivity``, ``cost`` (model inputs per sample and explainer), the
    rank on each criterion (1 = best, ties averaged) and ``overall`` the mean rank, sorted by it.

    recovery_by_setup: :func:`recovery` tables stacked with a ``setup`` column; cost_table: ``metric`` and
    ``inputs per sample``."""
    rec = recovery_by_setup.groupby("metric", sort=False)["spearman"].mean()
    ood = recovery_by_setup[recovery_by_setup["setup"] == ood_setup].set_index("metric")["spearman"]
    if ood.empty:
        raise ValueError(f"ood_setup {ood_setup!r} is not a setup of recovery_by_setup")
    res = resilience_table[resilience_table["condition"] == "mean"].set_index("metric")["resilience"]
    card = pd.DataFrame({"recovery": rec, "OOD recovery": ood, "resilience": res,
                         "reactivity": reactivity_table.set_index("metric")["reactivity"],
                         "cost": cost_table.set_index("metric")["inputs per sample"]}).dropna()
    card.index.name = "metric"
    for criterion, higher in CRITERIA.items():
        card[f"rank {criterion}"] = card[criterion].rank(ascending=not higher, method="average")
    card["overall"] = card[[f"rank {c}" for c in CRITERIA]].mean(axis=1)
    card.insert(0, "label", [evaluation.METRICS[m].label for m in card.index])
    return card.sort_values(["overall", "recovery"], ascending=[True, False]).reset_index()


def recommendations(recovery_by_setup: pd.DataFrame, card: pd.DataFrame, use_cases: Mapping[str, str], *,
                    top: int = 2) -> dict[str, str]:
    """One generated sentence per use case: the metrics that recovered the known ranking best on the setup of that
    use case (``use_cases`` ``{use case: setup name}``), with their numbers, the worst one, and the overall
    report-card leader. Every number comes from the tables."""
    out = {}
    for case, name in use_cases.items():
        part = recovery_by_setup[recovery_by_setup["setup"] == name].sort_values("spearman", ascending=False)
        if part.empty:
            raise ValueError(f"use_cases[{case!r}] names setup {name!r}, absent from recovery_by_setup")
        best = part.head(top)
        worst = part.iloc[-1]
        listed = " and ".join(f"{r.label} (Spearman {r.spearman:.2f})" for r in best.itertuples())
        out[case] = (f"For {case} (setup “{name}”), {listed} recovered the known ranking of the degraded explainers "
                     f"best; {worst.label} did worst ({worst.spearman:.2f}).")
    lead = card.iloc[0]
    out["overall"] = (f"Over all criteria the report card ranks {lead.label} first (mean rank {lead.overall:.1f} "
                      f"of {len(card)} metrics).")
    return out


def cost_per_metric(frame: pd.DataFrame) -> pd.DataFrame:
    """What each metric of an :func:`~faithlab.evaluate` frame costs for one explainer: ``inputs per sample``
    (model inputs; Few-class Fid includes its perturbation search, which :func:`~faithlab.evaluate` runs once for
    all explainers), ``explained per sample`` (inputs given to the explainer) and ``ms per sample``; metrics
    computed together (``shared with``) share these numbers. The clean pass and the fully removed inputs, which
    every explainer and metric share (one input per sample and reference each), are left out."""
    table = evaluation.cost(frame)
    n = int(frame.loc[frame["level"] == "sample", "sample"].nunique())
    if n == 0:
        raise ValueError("frame has no per-sample rows")
    per = table[table["explainer"] != "all"].groupby("group")[["forward_inputs", "explained_inputs",
                                                                 "seconds"]].mean()
    extra = table[table["group"] == "fewclass selection"][["forward_inputs", "seconds"]].sum()
    rows = []
    for metric in frame["metric"].unique():
        info = evaluation.METRICS[metric]
        if info.group not in per.index:
            continue
        g = per.loc[info.group]
        inputs, seconds = g["forward_inputs"], g["seconds"]
        if info.group == "fewclass":
            inputs, seconds = inputs + extra["forward_inputs"], seconds + extra["seconds"]
        together = [evaluation.METRICS[m].label for m in frame["metric"].unique()
                    if evaluation.METRICS[m].group == info.group and m != metric]
        rows.append({"metric": metric, "label": info.label, "inputs per sample": inputs / n,
                     "explained per sample": g["explained_inputs"] / n, "ms per sample": 1000 * seconds / n,
                     "shared with": ", ".join(together)})
    return pd.DataFrame(rows)


def noisy_inputs(x: torch.Tensor, sigma: float, *, generator: torch.Generator | int) -> torch.Tensor:
    """x plus Gaussian noise of std ``sigma`` (in x's units) → x's shape: the slight input perturbation of the
    meta-evaluation. The noise is drawn on the CPU from ``generator`` (device-independent)."""
    sigma = _validate.number(sigma, "sigma")
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    g = _validate.generator(generator, why="to draw the noise")
    noise = torch.randn(tuple(x.shape), generator=g, dtype=torch.float64, device=g.device)
    return x + (sigma * noise).to(x.device, x.dtype)

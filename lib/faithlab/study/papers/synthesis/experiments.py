"""The synthesis' meta-evaluation of the metrics on :mod:`~faithlab.study.papers.synthesis.setups`' frames.

From :func:`faithlab.evaluate` frames this module computes, per metric, how well it recovers the known ranking of
the degraded explainers (:func:`recovery`), how far the perfect explanation lands from the metric's own ideal
(:func:`ideal_gap`; Miró-Nicolau et al.'s claim decided against random maps by :func:`claim_ideal_gap`), a
MetaQuantus-style meta-evaluation (:func:`resilience`, :func:`reactivity`, :func:`beats`, on
:func:`noisy_inputs`; Hedström et al., TMLR 2023), each metric's cost (:func:`cost_per_metric`), and the report
card that ranks the metrics (:func:`report_card`). Every interval is a t interval on the trained replicas' means
(:func:`faithlab.study.verdicts.mean_interval`): the trained model is the unit of replication."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch

from faithlab import _validate, evaluation
from faithlab.evaluation.meta import beats, cost_per_metric, reactivity
from faithlab.evaluation.meta import mean_scores as _means
from faithlab.evaluation.meta import oriented_matrix as _matrix
from faithlab.evaluation.meta import rank_agreement as _rank_agreement
from faithlab.evaluation.meta import unit_columns as _units

from faithlab.study import verdicts
from faithlab.metrics.statistics import spearman
from faithlab.study.papers.synthesis.paper import PAPER_IDEAL_GAP

__all__ = ["claim_ideal_gap", "PREMISE_BAND", "recovery", "recovery_units", "ideal_gap", "resilience", "reactivity",
           "report_card", "CRITERIA", "cost_per_metric", "noisy_inputs", "beats"]


def _replica_codes(wide: pd.DataFrame):
    """The replica of each row of a frame indexed by :func:`_units` (None without replicas): the ``groups`` of
    :func:`faithlab.study.verdicts.mean_interval` (a t interval on the replica means)."""
    return wide.index.get_level_values("replica").astype(str).to_numpy() if "replica" in wide.index.names else None


def recovery_units(frame: pd.DataFrame, quality: Mapping[str, float]) -> pd.DataFrame:
    """Per metric and unit, how well the metric's oriented scores recover a known ranking of explainers: the
    Spearman correlation between the scores and ``quality`` (``{explainer: known quality}``, higher = better, e.g.
    −ξ) → one row per per-sample metric of the :func:`~faithlab.evaluate` frame and unit (``replica`` and ``sample``
    when the frame stacks trained replicas, else ``sample``): ``metric``, ``label``, the unit's columns,
    ``spearman`` (0 for a unit whose scores do not vary across the explainers: it has no ranking) and ``flat``
    (that case). The units behind :func:`recovery`'s intervals and the guide's comparisons
    (:func:`~faithlab.study.papers.synthesis.advice.separations`)."""
    names = list(quality)
    if len(names) < 2:
        raise ValueError(f"quality must rank at least 2 explainers, got {names}")
    q = torch.tensor([quality[n] for n in names], dtype=torch.float64, device="cpu")
    parts = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        part = evaluation.oriented(frame[(frame["metric"] == metric) & frame["explainer"].isin(names)])
        wide = part.pivot(index=_units(part), columns="explainer", values="oriented")[names]
        m = torch.tensor(wide.to_numpy(dtype=float).copy(), dtype=torch.float64, device="cpu")
        flat = (m == m[:, :1]).all(1)
        zero = torch.zeros((), dtype=torch.float64, device="cpu")
        rho = torch.where(flat, zero, spearman(m, q.expand_as(m)).nan_to_num(0.0))
        rows = wide.index.to_frame(index=False)
        rows.insert(0, "label", evaluation.METRICS[metric].label)
        rows.insert(0, "metric", metric)
        parts.append(rows.assign(spearman=rho.numpy(), flat=flat.numpy()))
    columns = ["metric", "label", *(["replica"] if "replica" in frame.columns else []), "sample", "spearman", "flat"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def recovery(frame: pd.DataFrame, quality: Mapping[str, float], *, level: float = 0.95) -> pd.DataFrame:
    """How well each per-sample metric of an :func:`~faithlab.evaluate` frame recovers a known ranking of explainers.

    quality: ``{explainer: known quality}`` (higher = better; e.g. −ξ). Per metric: ``spearman`` the mean per-unit
    Spearman correlation between the metric's oriented scores and the quality (:func:`recovery_units`; a unit whose
    scores do not vary across the explainers has no ranking and counts as 0), ``spearman low`` / ``spearman high``
    its ``level`` interval (:func:`faithlab.study.verdicts.mean_interval`: with a ``replica`` column, the mean of the
    replica means and a t interval on them, each trained model weighing the same; else a t interval on the images),
    ``replicas`` and ``images`` (all replicas together) behind it, ``spearman std`` over units, ``undefined`` the
    share of units without a ranking, ``pairwise`` the share of explainer pairs of different quality that the metric
    orders rightly (ties count ½), and ``dataset spearman`` the Spearman of the mean scores (the ranking a user who
    averages over samples sees). 1 is perfect recovery for all but ``undefined``, ``replicas`` and ``images``."""
    names = list(quality)
    units = recovery_units(frame, quality)
    q = torch.tensor([quality[n] for n in names], dtype=torch.float64, device="cpu")
    i, j = torch.triu_indices(len(names), len(names), offset=1, device="cpu")
    differ = q[i] != q[j]
    rows = []
    for metric, part in units.groupby("metric", sort=False):
        m = _matrix(frame, metric, names)
        better = torch.sign(m[:, i] - m[:, j]) * torch.sign(q[i] - q[j])
        pair = ((better > 0).double() + 0.5 * (better == 0).double())[:, differ]
        means = m.mean(0)
        groups = part["replica"].astype(str).to_numpy() if "replica" in part.columns else None
        rho = part["spearman"].to_numpy(dtype=float)
        interval = verdicts.mean_interval(rho, groups=groups, level=level) if len(rho) > 1 else None
        nan = float("nan")
        rows.append({"metric": metric, "label": evaluation.METRICS[metric].label,
                     "spearman": interval.estimate if interval else float(rho.mean()),
                     "spearman low": interval.low if interval else nan,
                     "spearman high": interval.high if interval else nan,
                     "replicas": interval.replicas if interval else 1, "images": len(rho),
                     "spearman std": float(rho.std()), "undefined": float(part["flat"].mean()),
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


PREMISE_BAND = 0.05
"""The premise of :func:`claim_ideal_gap` (rule MN1's premises): a metric counts when its mean of (perfect −
random maps), oriented and divided by its range, lies above this share of its range; our convention."""


def claim_ideal_gap(frame: pd.DataFrame, *, perfect: str, random: str, setting: str = "",
                    level: float = 0.95) -> verdicts.Claim:
    """Claim MN1 (Miró-Nicolau et al. 2024): no fidelity metric scores the perfect explanation of a transparent model
    within 30 % of the metric's ideal, decided by its rule in the rules file (``verdicts.rule("MN1")``: the margin,
    the paper's 30 %, and the design live there).

    frame: an :func:`~faithlab.evaluate` frame holding the explainers ``perfect`` (the model's perfect explanation)
    and ``random`` (random maps, the null) on the same images: of one model, or of several independently trained
    replicas stacked with a ``replica`` column (a unit is then a replica × image; each replica should score its own
    images, so that the units are independent). Metrics: the per-sample metrics of the frame with an ideal value
    and a range (:data:`faithlab.evaluation.METRICS`); an image's gap is |score − ideal| / range (:func:`ideal_gap`).
    Images where a metric is undefined (NaN) are left out of it.

    Premise and null, per metric: the metric must tell the perfect explanation from random maps — the mean of the
    oriented difference perfect − random divided by the metric's range, its t interval on the replica means
    (:func:`faithlab.study.verdicts.mean_interval`), judged against :data:`PREMISE_BAND`
    (:func:`faithlab.study.verdicts.premise_interval`): the metric counts when the interval lies above, does not count when it lies below (it says
    nothing about fidelity here), and whether it counts is undecided when it straddles. Random maps' mean score with
    its interval is the chance level in the table. When no metric counts, the claim is not testable here.
    Outcome, per counted metric: its mean gap and the t interval on the replica means, judged against the rule's
    margin (:func:`faithlab.study.verdicts.effect`: holds above, fails below, undecided across); the cells combine as the
    rule's ``every`` says (:func:`faithlab.study.verdicts.decide`). A metric whose premise is undecided is decided both
    with and without it; when the two verdicts differ, the claim is inconclusive. setting: a label appended to the
    claim's text.

    Returns a :class:`faithlab.study.verdicts.Claim` whose table has one row per metric with an ideal: ideal, range, the
    perfect and random means, the chance interval (``chance low``/``high``), the premise (``perfect − random`` /
    range, ``low``, ``high``, ``counts``: yes, no or undecided), the mean ``gap`` with its interval and outcome,
    random maps' gap, the ``share within`` the margin (:func:`ideal_gap`), the ``images`` scored (all replicas
    together) and the ``replicas``."""
    rule = verdicts.rule("MN1")
    tol = rule.margin_for()
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
    rows, cells, maybe, premises = [], {}, {}, []
    for metric in gaps.index:
        info = evaluation.METRICS[metric]
        wide = _per_image(frame, metric, [perfect, random])
        a, b = wide[perfect].to_numpy(dtype=float), wide[random].to_numpy(dtype=float)
        groups = _replica_codes(wide)
        sign = 1.0 if info.higher_is_better else -1.0
        row = {"metric": metric, "label": info.label, "ideal": info.ideal, "range": info.span,
               "perfect mean": float(pd.Series(a).mean()), "random mean": float(pd.Series(b).mean()),
               "chance low": nan, "chance high": nan, "perfect − random": nan, "low": nan, "high": nan,
               "counts": "no", "gap": float(gaps.loc[metric, "gap"]), "gap low": nan, "gap high": nan,
               "outcome": "not counted",
               "random gap": float(chance.loc[metric, "gap"]) if metric in chance.index else nan,
               "share within": float(gaps.loc[metric, "within"]), "images": int((~pd.isna(a)).sum()),
               "replicas": n_replicas}
        kept = ~pd.isna(b)
        if int(kept.sum()) >= 2:
            c = verdicts.mean_interval(b, groups=groups, level=level)
            row.update({"chance low": c.low, "chance high": c.high})
        paired = ~(pd.isna(a) | pd.isna(b))
        if int(paired.sum()) < 2:
            premises.append(f"{info.label}: fewer than 2 images score both explainers")
            rows.append(row)
            continue
        diff = sign * (a - b) / info.span
        p_interval = verdicts.mean_interval(diff, groups=groups, level=level)
        premise = verdicts.premise_interval(p_interval, threshold=PREMISE_BAND,
                                            what=f"{info.label}, (perfect − random) / range")
        premises.append(premise.text)
        counts = {True: "yes", False: "no", None: "undecided"}[premise.holds]
        row.update({"perfect − random": p_interval.estimate, "low": p_interval.low, "high": p_interval.high,
                    "counts": counts})
        gap = (pd.Series(a) - info.ideal).abs().to_numpy() / info.span
        defined = ~pd.isna(gap)
        if premise.holds is not False and int(defined.sum()) >= 2:
            j = verdicts.effect(gap[defined], rule=rule, groups=None if groups is None else groups[defined],
                                what=info.label, level=level)
            row.update({"gap low": j.interval.low, "gap high": j.interval.high, "outcome": j.outcome})
            (cells if premise.holds else maybe)[info.label] = j
        rows.append(row)
    table = pd.DataFrame(rows)
    pct = f"{tol * 100:g} %"
    untestable = ("no metric of the frame has an ideal value and a range" if table.empty else
                  "no metric tells the perfect explanation from random maps" if not cells and not maybe else None)
    if untestable is not None:
        v = verdicts.decide([], rule, untestable=untestable)
    else:
        without = (verdicts.decide(cells, rule) if cells else
                   verdicts.decide([], rule, untestable="no metric shown to tell the perfect explanation from "
                                                         "random maps"))
        v = without
        if maybe:
            with_them = verdicts.decide({**cells, **maybe}, rule)
            if str(with_them) != str(without):
                v = without.with_why(f"{without.why} without {', '.join(maybe)}, {with_them} with "
                                     f"{'it' if len(maybe) == 1 else 'them'}: whether "
                                     f"{'it counts' if len(maybe) == 1 else 'they count'} is undecided",
                                     verdicts.INCONCLUSIVE)
    by = {o: table.loc[table["outcome"] == o, "label"].tolist() if len(table) else []
          for o in ("fails", "holds", "undecided")}
    if untestable is None:
        v = v.with_why(f"{v.why}; counted: {', '.join(cells) or 'none'}"
                       + (f"; undecided whether they count: {', '.join(maybe)}" if maybe else "")
                       + f"; within {pct}: {', '.join(by['fails']) or 'none'}; beyond: "
                         f"{', '.join(by['holds']) or 'none'}; undecided: {', '.join(by['undecided']) or 'none'}")
    ours = "; ".join(f"{r['label']} {100 * r['gap']:.0f} % off (random maps {100 * r['random gap']:.0f} %"
                     f"{'' if r['counts'] == 'yes' else '; not counted' if r['counts'] == 'no' else '; counts?'})"
                     for _, r in table.iterrows())
    over = f"{n_replicas} trained models, each on its own images" if n_replicas > 1 else "one model's images"
    counted = table[table["counts"] == "yes"] if len(table) else table
    within = int((counted["outcome"] == "fails").sum()) if len(counted) else 0
    return verdicts.Claim(
        rule.claim + (f" ({setting})" if setting else ""), rule=rule,
        premise=(f"null: random maps; a metric counts when its (perfect − random) / range lies above "
                 f"{PREMISE_BAND:g} (t interval over {over}): " + ("; ".join(premises) if premises
                                                                    else "no metric with an ideal value")),
        paper_value=PAPER_IDEAL_GAP,
        our_value=(f"{within} of {len(counted)} counted metrics within {pct}: {ours}" if len(table)
                   else "no metric with an ideal value"),
        verdict=v, table=table, units=int(counted["images"].min()) if len(counted) else None)


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


def noisy_inputs(x: torch.Tensor, sigma: float, *, generator: torch.Generator | int) -> torch.Tensor:
    """x plus Gaussian noise of std ``sigma`` (in x's units) → x's shape: the slight input perturbation of the
    meta-evaluation. The noise is drawn on the CPU from ``generator`` (device-independent)."""
    sigma = _validate.number(sigma, "sigma")
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    g = _validate.generator(generator, why="to draw the noise")
    noise = torch.randn(tuple(x.shape), generator=g, dtype=torch.float64, device=g.device)
    return x + (sigma * noise).to(x.device, x.dtype)

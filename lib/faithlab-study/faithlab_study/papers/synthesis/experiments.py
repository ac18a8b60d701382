"""The synthesis' meta-evaluation of the metrics on :mod:`~faithlab_study.papers.synthesis.setup`'s frames.

From :func:`faithlab.evaluate` frames this module computes, per metric, how well it recovers the known ranking of
the degraded explainers (:func:`recovery`), how far the perfect explanation lands from the metric's own ideal
(:func:`ideal_gap`; Miró-Nicolau et al.'s claim decided against random maps by
:func:`~faithlab_study.papers.synthesis.claims.ideal_gap.claim_ideal_gap`), a
MetaQuantus-style meta-evaluation (:func:`resilience`, :func:`reactivity`, :func:`beats`, on
:func:`noisy_inputs`; Hedström et al., TMLR 2023), each metric's cost (:func:`cost_per_metric`), and the report
card that ranks the metrics (:func:`report_card`). Every interval is a t interval on the trained replicas' means
(:func:`faithlab_study.verdicts.mean_interval`): the trained model is the unit of replication."""

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

from faithlab_study import verdicts
from faithlab_study.verdicts import replication
from faithlab.metrics.statistics import spearman

__all__ = ["recovery", "recovery_units", "ideal_gap", "resilience", "reactivity", "report_card", "CRITERIA",
           "cost_per_metric", "noisy_inputs", "beats", "META_SETUP", "OOD_SETUP", "REFERENCE_SETUPS", "MODEL_NOISE",
           "INPUT_NOISE", "RANDOMISE_SCALE", "replica_draw", "replica_options"]

# ---- the protocol's fixed constants (the notebook ``synthesis/metrics_compared`` reads them from here)
META_SETUP = "CNN, grey canvas"
"""The setup whose replica 0 the meta-evaluation, the cost and the report card describe (its real explainers)."""
OOD_SETUP = "CNN, coloured canvas"
"""The setup whose recovery is the report card's "OOD recovery" (removal out of distribution)."""
REFERENCE_SETUPS = ("CNN, grey canvas", "CNN, coloured canvas")
"""The setups of the removal diagnostic and of the reference comparison (grey, then coloured canvases)."""
MODEL_NOISE = 0.05
"""Noise resilience: Gaussian noise of this × each layer's weight std on every layer of the model and its twin."""
INPUT_NOISE = 0.05
"""Noise resilience: Gaussian noise of this std on the normalised inputs."""
RANDOMISE_SCALE = 10.0
"""Adversary reactivity: the randomised model's noise, this × each layer's weight std."""


def recovery_units(frame: pd.DataFrame, quality: Mapping[str, float]) -> pd.DataFrame:
    """Per metric and unit, how well the metric's oriented scores recover a known ranking of explainers: the
    Spearman correlation between the scores and ``quality`` (``{explainer: known quality}``, higher = better, e.g.
    −ξ) → one row per per-sample metric of the :func:`~faithlab.evaluate` frame and unit (``replica`` and ``sample``
    when the frame stacks trained replicas, else ``sample``): ``metric``, ``label``, the unit's columns,
    ``spearman`` (0 for a unit whose scores do not vary across the explainers: it has no ranking) and ``flat``
    (that case). The units behind :func:`recovery`'s intervals and the guide's comparisons
    (:func:`~faithlab_study.papers.synthesis.claims.advice.separations`)."""
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
    columns = ["metric", "label", *replication.unit_keys(frame), "sample", "spearman", "flat"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def recovery(frame: pd.DataFrame, quality: Mapping[str, float], *, level: float = 0.95) -> pd.DataFrame:
    """How well each per-sample metric of an :func:`~faithlab.evaluate` frame recovers a known ranking of explainers.

    quality: ``{explainer: known quality}`` (higher = better; e.g. −ξ). Per metric: ``spearman`` the mean per-unit
    Spearman correlation between the metric's oriented scores and the quality (:func:`recovery_units`; a unit whose
    scores do not vary across the explainers has no ranking and counts as 0), ``spearman low`` / ``spearman high``
    its ``level`` interval (:func:`faithlab_study.verdicts.mean_interval`: with a ``replica`` column, the mean of the
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
        groups = replication.groups(part)
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


def replica_draw(s, seed: int, *keys: int | str) -> int:
    """The seed of the Monte-Carlo draws ``keys`` (a draw's name) of setup ``s`` (a :class:`Setup`: its trained
    replica ``s.replica``, None for a single model) under the notebook's ``seed``:
    :func:`~faithlab_study.verdicts.replication.replica_draws`, keyed, never summed: each replica, setting and
    notebook seed draws its own."""
    return replication.replica_draws(seed, s.replica, *keys)


def replica_options(options: Mapping, s) -> dict:
    """``options`` of :func:`faithlab.evaluate` for setup ``s``: its ``seed`` (the notebook's) replaced by
    :func:`replica_draw` ``(s, seed, "evaluate")``, so that the metrics' Monte-Carlo draws (masks, subsets,
    neighbours, noise) are each replica's own; every call on the same setup draws the same (paired across
    references, explainers and the meta-evaluation's conditions)."""
    return {**options, "seed": replica_draw(s, options.get("seed", 0), "evaluate")}


def noisy_inputs(x: torch.Tensor, sigma: float, *, generator: torch.Generator | int) -> torch.Tensor:
    """x plus Gaussian noise of std ``sigma`` (in x's units) → x's shape: the slight input perturbation of the
    meta-evaluation. The noise is drawn on the CPU from ``generator`` (device-independent; the notebook passes its
    setup's :func:`replica_draw` ``"input noise"``)."""
    sigma = _validate.number(sigma, "sigma")
    if sigma < 0:
        raise ValueError(f"sigma must be non-negative, got {sigma}")
    g = _validate.generator(generator, why="to draw the noise")
    noise = torch.randn(tuple(x.shape), generator=g, dtype=torch.float64, device=g.device)
    return x + (sigma * noise).to(x.device, x.dtype)

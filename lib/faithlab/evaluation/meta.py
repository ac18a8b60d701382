"""A MetaQuantus-style meta-evaluation of the metrics on :func:`faithlab.evaluate` frames (Hedström et al., TMLR
2023), and each metric's cost: what the report's sanity checks and cost table read, and what the study's synthesis
builds its report card on.

* :func:`reactivity`: adversary reactivity, how far each metric's ranking of the explainers moves on a randomised
  model, with the share of images where the ground truth beats a random map;
* :func:`beats`: per metric, the share of images where one explainer scores better than another;
* :func:`cost_per_metric`: model inputs, explained inputs and milliseconds per sample and explainer, per metric;
* the helpers they share: :func:`unit_columns`, :func:`oriented_matrix`, :func:`mean_scores`,
  :func:`rank_agreement`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from faithlab import evaluation
from faithlab.metrics.statistics import spearman

__all__ = ["reactivity", "beats", "cost_per_metric"]


def unit_columns(frame: pd.DataFrame) -> list[str]:
    """The columns that name a unit of a frame: ``replica`` and ``sample`` when the frame pools trained replicas
    (the same sample index in two replicas is two units), else ``sample``."""
    return ["replica", "sample"] if "replica" in frame.columns else ["sample"]


def oriented_matrix(frame: pd.DataFrame, metric: str, names: Sequence[str]) -> torch.Tensor:
    """Oriented per-sample scores of one metric ``(samples, explainers)`` in the order of ``names`` (samples: the
    (replica, sample) units when the frame carries a ``replica`` column)."""
    part = evaluation.oriented(frame[(frame["metric"] == metric) & frame["explainer"].isin(names)])
    wide = part.pivot(index=unit_columns(part), columns="explainer", values="oriented")[list(names)]
    return torch.tensor(wide.to_numpy(dtype=float).copy(), dtype=torch.float64, device="cpu")


def mean_scores(frame: pd.DataFrame, names: Sequence[str]) -> dict[str, torch.Tensor]:
    """Per per-sample metric, the mean oriented score of each explainer of ``names`` (NaN ignored)."""
    out = {}
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        out[metric] = oriented_matrix(frame, metric, names).nanmean(0)  # NaN: a μF of constant outputs
    return out


def rank_agreement(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman of two explainer rankings; 0 when either does not vary (no ranking to keep), NaN when either is
    undefined."""
    if bool(torch.isnan(a).any()) or bool(torch.isnan(b).any()):
        return float("nan")
    if bool((a == a[0]).all()) or bool((b == b[0]).all()):
        return 0.0
    return spearman(a, b).item()


def reactivity(base: pd.DataFrame, randomised: pd.DataFrame, names: Sequence[str], *, truth: str,
               random: str) -> pd.DataFrame:
    """Adversary reactivity (MetaQuantus): per metric, ``model`` (1 − Spearman between its ranking of ``names`` on
    the original and on a randomised model) / 2, 1 when the ranking reverses and ½ when it is unrelated;
    ``explanation`` the share of samples where the ground truth ``truth`` scores better than the random map
    ``random`` (ties ½; ½ when the metric cannot tell them apart); ``reactivity`` their mean."""
    ref, other = mean_scores(base, names), mean_scores(randomised, names)
    wins = beats(base, truth, random).set_index("metric")["share"]
    rows = []
    for metric in ref:
        model = (1 - rank_agreement(ref[metric], other[metric])) / 2
        rows.append({"metric": metric, "model": model, "explanation": wins[metric],
                     "reactivity": (model + wins[metric]) / 2})
    return pd.DataFrame(rows)


def beats(frame: pd.DataFrame, explainer: str, other: str) -> pd.DataFrame:
    """Per per-sample metric, the share of samples where ``explainer`` scores better than ``other`` (oriented
    scores; ties count ½, so ½ means the metric cannot tell them apart) → columns ``metric``, ``share``."""
    rows = []
    for metric in frame.loc[frame["level"] == "sample", "metric"].unique():
        both = oriented_matrix(frame, metric, [explainer, other])
        win = (both[:, 0] > both[:, 1]).double() + 0.5 * (both[:, 0] == both[:, 1]).double()
        rows.append({"metric": metric, "share": win.mean().item()})
    return pd.DataFrame(rows, columns=["metric", "share"])


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

"""The report's tables, from an :func:`faithlab.evaluate` frame: the mean score per metric and explainer
(:func:`summary`, with the Monte-Carlo standard errors of :func:`monte_carlo_means` and the pairs they do not separate,
:func:`monte_carlo_pairs`), each metric's ranking (:func:`ranks`), the explainers ranked over all the metrics with a
bootstrap interval (:func:`overall`) and the metrics that separate each pair (:func:`separation`, the library's t
interval :func:`faithlab.intervals.t_interval`), the sanity checks (:func:`sanity`, on a randomised model's
frame from :func:`on_randomised`) and the cost (:func:`cost`); the names of the CSV files (:data:`TABLES`,
:data:`INTERPRETATION`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab.intervals import t_interval

__all__ = ["summary", "monte_carlo_means", "monte_carlo_pairs", "MC_SE", "MC_SEPARATION", "WITHIN_MC", "ranks",
           "overall", "separation", "tied_metrics", "randomisable_metrics", "on_randomised", "sanity", "cost",
           "TABLES", "INTERPRETATION", "RANKING_CHANGE", "GOOD_CHANGE", "N_BOOT", "LEVEL"]


TABLES = ("report", "summary", "ranks", "sanity", "cost")
"""The CSV files of every report, the command's and the template notebook's (``<name>.csv``)."""
INTERPRETATION = ("overall", "pairs", "metrics")
"""The CSV files :func:`write` adds: the overall ranking (:func:`overall`), the metrics that separate each pair of
explainers (:func:`separation`) and what each metric measures (:func:`glossary`)."""

RANKING_CHANGE = "ranking change on a randomised model"
GOOD_CHANGE = 0.5
"""A ranking change on a randomised model of at least this is good: ½ is a ranking unrelated to the trained model's,
1 its reverse; 0 the same ranking on a model that has learnt nothing."""
N_BOOT = 2000
"""Bootstrap resamples of the images behind the overall ranking's intervals and the pairs' separations."""
LEVEL = 0.95
"""Level of those intervals."""


def check_frame(frame, arg: str = "frame") -> None:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{arg} must be the DataFrame faithlab.evaluate returned, got {type(frame).__name__}")
    missing = {"explainer", "sample", "metric", "label", "level", "score", "higher_is_better", "direction"} - set(
        frame.columns)
    if missing:
        raise ValueError(f"{arg} lacks the columns {sorted(missing)}: pass the frame faithlab.evaluate returned")


MC_SE = "MC se: "
"""Prefix of :func:`summary`'s columns holding the Monte-Carlo standard error of each explainer's mean."""
MC_SEPARATION = 2.0
"""Two explainers' means on a Monte-Carlo metric are separated at its Monte-Carlo precision when they differ by at
least this many standard errors of their difference, √(se_a² + se_b²) (the draws alone move a difference by less
than 2 of them 95 % of the time)."""
WITHIN_MC = "within Monte-Carlo error"
""":func:`separation`'s column naming the Monte-Carlo metrics whose means of the pair are not separated at their
Monte-Carlo precision (:func:`monte_carlo_pairs`)."""


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean score over the images per metric (rows, by label) × explainer (columns), and ``direction`` (how to read
    it: "higher is better" or "lower is better"). Scores keep their own sign: read them with the direction. When a
    metric of ``frame`` is a Monte-Carlo estimate (a finite ``mc_se``), ``MC se: <explainer>`` columns follow: the
    Monte-Carlo standard error of each mean (:func:`monte_carlo_means`), NaN for the deterministic metrics."""
    from faithlab import evaluation

    check_frame(frame)
    table = evaluation.oriented(frame).groupby(["label", "explainer"], sort=False)["score"].mean().unstack()
    table["direction"] = frame.groupby("label", sort=False)["direction"].first()
    table.columns.name = None
    means = monte_carlo_means(frame)
    if means["mc_se"].notna().any():
        se = means["mc_se"].unstack().reindex(index=table.index)
        for name in table.columns.drop("direction"):
            table[f"{MC_SE}{name}"] = se[name] if name in se else np.nan
    return table


def monte_carlo_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Each metric's mean score per explainer with its Monte-Carlo standard error → one row per (label, explainer)
    (index): ``mean`` (over the images with a finite score, as :func:`summary`), ``images`` (their number N) and
    ``mc_se`` = √(Σ_i se_i²)/N, the standard error of the mean that the metric's random draws alone leave (the
    images' draws are independent); NaN for a deterministic metric, or where an image's score has no standard error.
    A frame without the ``mc_se`` column (an older frame) has NaN throughout."""
    check_frame(frame)
    rows = frame[["label", "explainer", "score"]].assign(
        se=frame["mc_se"].astype(float) if "mc_se" in frame else np.nan)
    rows = rows[np.isfinite(rows["score"].astype(float))]
    grouped = rows.assign(sq=rows["se"] ** 2, missing=~np.isfinite(rows["se"])).groupby(
        ["label", "explainer"], sort=False)
    out = pd.DataFrame({"mean": grouped["score"].mean(), "images": grouped["score"].size(),
                        "sum_sq": grouped["sq"].sum(), "missing": grouped["missing"].any()})
    out["mc_se"] = np.where(out["missing"], np.nan, np.sqrt(out["sum_sq"]) / out["images"])
    # labels and explainers without a finite score keep a row (NaN), in the frame's order
    full = pd.MultiIndex.from_frame(frame[["label", "explainer"]].drop_duplicates())
    return out[["mean", "images", "mc_se"]].reindex(full)


def monte_carlo_pairs(frame: pd.DataFrame, *, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Per Monte-Carlo metric (one with a finite standard error for some explainer) and pair of explainers, whether
    their means are separated at the metric's Monte-Carlo precision → rows ``label``, ``metric``, ``explainer``,
    ``versus``, ``difference`` (mean of explainer − mean of versus, scores in their own sign), ``threshold``
    (:data:`MC_SEPARATION` · √(se_a² + se_b²), from :func:`monte_carlo_means`) and ``separated`` (|difference| ≥
    threshold; missing where either mean or standard error is). Treating the two explainers' errors as independent
    is conservative under common random numbers (one seed for every explainer), which correlate them positively.
    order: the explainers' order (default: the frame's)."""
    means = monte_carlo_means(frame)
    names = list(order) if order is not None else [str(n) for n in dict.fromkeys(frame["explainer"])]
    metric_of = frame.drop_duplicates("label").set_index("label")["metric"]
    rows = []
    for label in dict.fromkeys(frame["label"]):
        part = means.loc[label]
        if not part["mc_se"].notna().any():
            continue
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if a not in part.index or b not in part.index:
                    continue
                diff = part.loc[a, "mean"] - part.loc[b, "mean"]
                threshold = MC_SEPARATION * math.sqrt(part.loc[a, "mc_se"] ** 2 + part.loc[b, "mc_se"] ** 2)
                known = bool(np.isfinite(diff) and np.isfinite(threshold))
                rows.append({"label": label, "metric": metric_of[label], "explainer": a, "versus": b,
                             "difference": diff, "threshold": threshold,
                             "separated": bool(abs(diff) >= threshold) if known else pd.NA})
    return pd.DataFrame(rows, columns=["label", "metric", "explainer", "versus", "difference", "threshold",
                                       "separated"]).astype({"separated": "boolean"})


def ranks(frame: pd.DataFrame) -> pd.DataFrame:
    """Each metric's ranking of the explainers: rank 1 = the highest mean oriented score (the most faithful by that
    metric), ties averaged → label × explainer."""
    from faithlab import evaluation

    check_frame(frame)
    table = (evaluation.oriented(frame).groupby(["label", "explainer"], sort=False)["oriented"].mean().unstack()
             .rank(axis=1, ascending=False))
    table.columns.name = None
    return table


def _per_image(frame: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray]:
    """The per-sample metrics that score every explainer (in the frame's order), the explainers, and their oriented
    per-image scores ``(metrics, explainers, images)`` (NaN where a score is missing)."""
    from faithlab import evaluation

    check_frame(frame)
    names = [str(n) for n in dict.fromkeys(frame["explainer"])]
    rows = evaluation.oriented(frame[(frame["level"] == "sample") & frame["sample"].notna()])
    metrics = list(dict.fromkeys(rows["metric"]))
    samples = sorted(dict.fromkeys(int(s) for s in rows["sample"]))
    cube = np.full((len(metrics), len(names), len(samples)), np.nan)
    if len(rows):
        m = pd.Categorical(rows["metric"], categories=metrics).codes
        e = pd.Categorical(rows["explainer"].astype(str), categories=names).codes
        s = pd.Categorical(rows["sample"].astype(int), categories=samples).codes
        cube[m, e, s] = rows["oriented"].to_numpy(dtype=float)
    scored = np.isfinite(cube).any(axis=2).all(axis=1)  # a metric without a mean for some explainer ranks nothing
    return [m for m, k in zip(metrics, scored) if k], names, cube[scored]


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = the highest value, ties averaged, NaN kept NaN (pandas' ``rank(ascending=False)``
    on every row of ``values`` at once)."""
    higher = (values[..., None, :] > values[..., :, None]).sum(-1)
    equal = (values[..., None, :] == values[..., :, None]).sum(-1)
    return np.where(np.isnan(values), np.nan, 1.0 + higher + 0.5 * (equal - 1))


def level_name(level: float) -> str:
    return f"{100 * level:g} %"


def overall(frame: pd.DataFrame, *, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0) -> pd.DataFrame:
    """The explainers ranked over all the per-sample metrics of ``frame`` → one row per explainer, best first:
    ``mean rank`` (the mean over the metrics of :func:`ranks`, each metric ranking by its own direction; 1 = first
    on every metric), its ``level`` percentile interval ``<level> low`` / ``<level> high`` from ``n_boot`` bootstrap
    resamples of the images (generator ``seed``: per resample, each metric's mean per explainer, its ranking and the
    mean rank are recomputed), ``ranked first by`` (how many metrics rank it first, alone) and ``metrics`` (how many
    metrics ranked).
    Dataset-level metrics (ReCo, MeGe: one score per explainer, no images to resample) and metrics without a score for
    some explainer are left out."""
    metrics, names, cube = _per_image(frame)
    lo_name, hi_name = f"{level_name(level)} low", f"{level_name(level)} high"
    columns = ["explainer", "mean rank", lo_name, hi_name, "ranked first by", "metrics"]
    if not metrics:
        return pd.DataFrame(columns=columns)
    labels = [frame.loc[frame["metric"] == m, "label"].iloc[0] for m in metrics]
    table = ranks(frame).loc[labels, names]  # the point estimate is the ranks table's own
    point = table.mean(axis=0)
    n = cube.shape[2]
    g = torch.Generator().manual_seed(int(seed))
    draws = torch.randint(n, (n_boot, n), generator=g, device="cpu")
    ones = torch.ones(n_boot, n, dtype=torch.float64, device="cpu")
    weights = torch.zeros(n_boot, n, dtype=torch.float64, device="cpu").scatter_add_(
        1, draws, ones).numpy()  # times each image is drawn, per resample
    finite = np.isfinite(cube).reshape(-1, n)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample without a score of some explainer: NaN
        means = (np.where(finite, cube.reshape(-1, n), 0.0) @ weights.T) / (finite @ weights.T)
        means = means.reshape(len(metrics), len(names), n_boot).transpose(2, 0, 1)  # (resample, metric, explainer)
        mean_rank = np.nanmean(_average_ranks(means), axis=1)
        low, high = np.nanquantile(mean_rank, [(1 - level) / 2, (1 + level) / 2], axis=0)
    out = pd.DataFrame({"explainer": names, "mean rank": point.to_numpy(dtype=float), lo_name: low, hi_name: high,
                        "ranked first by": (table == 1.0).sum(axis=0).to_numpy(dtype=int), "metrics": len(metrics)})
    return out.sort_values("mean rank", kind="stable").reset_index(drop=True)


def separation(frame: pd.DataFrame, *, level: float = LEVEL, order: Sequence[str] | None = None) -> pd.DataFrame:
    """For each pair of explainers, how many per-sample metrics separate them → one row per pair: ``explainer``,
    ``versus``, ``separating metrics`` (those whose ``level`` t interval of the mean per-image difference of
    oriented scores excludes 0: :func:`faithlab.intervals.t_interval` over the images, the interval the
    study's verdicts use for one model's units, whose coverage the study tests),
    ``explainer better on`` / ``versus better on`` (of those, which way), ``metrics compared`` (metrics with two or
    more images scored for both), and ``separating`` (the separating metrics' labels). order: the explainers' order
    (default: the frame's; :func:`write` passes :func:`overall`'s, so that the first row compares the first two).
    ``within Monte-Carlo error`` (:data:`WITHIN_MC`): the Monte-Carlo metrics whose means of the pair are not
    separated at their Monte-Carlo precision (:func:`monte_carlo_pairs`), separating or not: the interval over the
    images carries each image's Monte-Carlo noise, this column says where the means themselves are within the
    draws' error of each other."""
    metrics, names, cube = _per_image(frame)
    if order is not None:
        names, cube = list(order), cube[:, [names.index(o) for o in order]] if len(metrics) else cube
    labels = {m: frame.loc[frame["metric"] == m, "label"].iloc[0] for m in metrics}
    mc = monte_carlo_pairs(frame)
    close: dict[frozenset, list[str]] = {}
    for r in mc[mc["separated"].eq(False).fillna(False)].itertuples():
        close.setdefault(frozenset((r.explainer, r.versus)), []).append(r.label)
    rows = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            wins, losses, compared = [], [], 0
            for k, m in enumerate(metrics):
                try:
                    _, low, high, _ = t_interval(cube[k, i] - cube[k, j], level=level)
                except ValueError:  # fewer than two images scored for both
                    continue
                compared += 1
                (wins if low > 0 else losses if high < 0 else []).append(labels[m])
            rows.append({"explainer": a, "versus": names[j], "separating metrics": len(wins) + len(losses),
                         "explainer better on": len(wins), "versus better on": len(losses),
                         "metrics compared": compared, "separating": ", ".join(wins + losses),
                         WITHIN_MC: ", ".join(close.get(frozenset((a, names[j])), []))})
    return pd.DataFrame(rows, columns=["explainer", "versus", "separating metrics", "explainer better on",
                                       "versus better on", "metrics compared", "separating", WITHIN_MC])


def tied_metrics(table: pd.DataFrame) -> list[str]:
    """The metrics (rows of a :func:`ranks` table) that give every explainer they score the same rank: they rank
    nothing (a metric that scores no explainer, all NaN, is left out: it is undefined, not tied)."""
    values = table.drop(columns="label", errors="ignore")
    return [str(label) for label, row in zip(table.get("label", table.index), values.to_numpy(dtype=float))
            if len(set(row[~np.isnan(row)].tolist())) == 1]


def randomisable_metrics(frame: pd.DataFrame) -> list[str]:
    """The per-sample metrics of ``frame`` that can be recomputed on a randomised model as they are (those needing
    no fine-tuned copy and no explainer call: their inputs are the model and the maps), in the registry's order."""
    from faithlab.evaluation import METRICS

    check_frame(frame)
    present = set(frame["metric"])
    return [m for m in METRICS if m in present and METRICS[m].level == "sample"
            and not {"finetuned", "explainer"} & set(METRICS[m].needs)]


def on_randomised(model: torch.nn.Module, x, y: torch.Tensor | None, explain: Mapping[str, Callable],
                  frame: pd.DataFrame, *, scale: float = 10.0, generator: int = 0, **options) -> pd.DataFrame:
    """The metrics of ``frame`` (:func:`randomisable_metrics`) on a randomised copy of ``model`` (every layer's
    weights plus noise of ``scale`` × their std drawn from ``generator``, :func:`faithlab.train.randomise_layers`),
    with maps of the
    randomised model's predictions by ``explain`` ``{explainer name: callable(model, inputs, target)}`` → the frame
    :func:`sanity` reads as ``randomised``. x: ``(B, ...)`` inputs with labels ``y``, or an iterable of batches
    (then ``y`` None: the labels come with the batches; the maps are computed batch by batch). options: passed to
    :func:`faithlab.evaluate` (use the original call's, so that only the model differs)."""
    from faithlab import evaluate, train

    metrics = randomisable_metrics(frame)
    if not metrics:
        raise ValueError("frame has no metric that can be recomputed on a randomised model (all need a fine-tuned "
                         "model or an explainer call)")
    randomised, _ = train.randomise_layers(model, 1.0, generator=generator, scale=scale)
    if not isinstance(x, torch.Tensor):
        return evaluate(randomised, x, explainer=dict(explain), metrics=metrics, hints=False, **options)
    with torch.no_grad():
        target = randomised(x).argmax(1)
    maps = {name: fn(randomised, x, target) for name, fn in explain.items()}
    return evaluate(randomised, x, y, maps, metrics=metrics, hints=False, **options)


def sanity(frame: pd.DataFrame, randomised: pd.DataFrame | None = None, *, random: str | None = None,
           recovery: pd.DataFrame | None = None) -> pd.DataFrame:
    """The sanity checks, one row per metric: ``label``, ``metric``, the ranking change on a randomised model
    (MetaQuantus' adversary reactivity of the ranking,
    :func:`faithlab.evaluation.meta.reactivity`: ½ an unrelated ranking, 1 a reversed one; from
    ``randomised``, the frame :func:`on_randomised` returns; NaN with fewer than two explainers, where there is no
    ranking), ``beats random: <explainer>`` the share of images where each explainer scores better than the random
    map ``random`` (the name of a random explainer in ``frame``; ties ½), and ``recovery (...)`` columns when
    ``recovery`` (a table per ``metric`` with ``spearman`` and ``pairwise`` columns: how well each metric recovers a
    known ranking of explainers, as the study's synthesis computes it) is given."""
    from faithlab.evaluation import METRICS
    from faithlab.evaluation import meta

    check_frame(frame)
    names = list(dict.fromkeys(frame["explainer"]))
    if random is not None and random not in names:
        raise ValueError(f"random names explainer {random!r}, absent from frame ({names})")
    if randomised is not None:
        check_frame(randomised, "randomised")
        base = frame[frame["metric"].isin(set(randomised["metric"]))]
        react = meta.reactivity(base, randomised, names, truth=names[0], random=random or names[-1])
        if len(names) < 2:
            react["model"] = float("nan")
        table = react[["metric", "model"]].rename(columns={"model": RANKING_CHANGE})
    else:
        per_sample = frame.loc[frame["level"] == "sample", "metric"]
        table = pd.DataFrame({"metric": list(dict.fromkeys(per_sample))})
    checks = [meta.beats(frame, name, random).assign(explainer=name) for name in names
              if random is not None and name != random]
    if checks:
        wins = pd.concat(checks).pivot(index="metric", columns="explainer", values="share")
        table = table.set_index("metric").join(wins.add_prefix("beats random: ")).reset_index()
    if recovery is not None:
        table = table.merge(recovery[["metric", "spearman", "pairwise"]].rename(
            columns={"spearman": "recovery (Spearman)", "pairwise": "recovery (pairs right)"}), on="metric",
            how="left")
    table.insert(0, "label", table["metric"].map(lambda m: METRICS[m].label))
    return table


def cost(frame: pd.DataFrame) -> pd.DataFrame:
    """Per metric: model inputs, inputs given to the explainer and milliseconds, per image and explainer
    (:func:`faithlab.evaluation.meta.cost_per_metric`; metrics computed together share one cost)."""
    from faithlab.evaluation import meta

    check_frame(frame)
    return meta.cost_per_metric(frame)

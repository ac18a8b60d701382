"""What a report on one model's explainers is: the tables, figures and the one HTML page that ``faithlab evaluate``
and the template notebook (``notebooks/templates/evaluate_your_explainer.py``) both produce from an
:func:`faithlab.evaluate` frame.

* :func:`overall`, :func:`separation`: the explainers ranked over all the metrics (mean rank, each metric by its own
  direction, with a bootstrap interval over the images) and, per pair of explainers, how many metrics separate them
  (the t interval of their mean per-image score difference excludes 0); :func:`overall_sentence` says it;
* :func:`glossary`: what each metric measures (each declaration's ``doc``), its direction and the book chapter that tests it;
* :func:`summary`: the mean score per metric × explainer, with the metric's direction and, for a Monte-Carlo
  metric, the Monte-Carlo standard error of that mean; :func:`monte_carlo_pairs` and :func:`monte_carlo_sentence`:
  which pairs of explainers a Monte-Carlo metric does not separate at its Monte-Carlo precision;
* :func:`ranks`: each metric's ranking of the explainers (1 = the most faithful by that metric);
* :func:`sanity`: the share of images where each explainer beats a random map
  (:func:`faithlab.study.papers.synthesis.meta_evaluation.beats`) and how much each metric's ranking changes on a
  randomised model (adversary reactivity, :func:`faithlab.study.papers.synthesis.meta_evaluation.reactivity`; the
  randomised model's frame comes from :func:`on_randomised`); :func:`sanity_sentences` reads it;
* :func:`cost`: model inputs and milliseconds per image and explainer, per metric;
* :func:`maps_figure`, :func:`ranks_figure`: the figures (matplotlib, imported when called: the ``report`` extra);
* :func:`write`: all of it into a folder (CSVs, PNGs and ``index.html``), atomically.

One copy of each rule: the command and the notebook call these functions and differ only in where the model and
images come from. Every number and result sentence of the page is computed from the frame.

One concept: the report on one model's explainers, from an evaluate frame to its tables, sentences, figures and
page.
"""

from __future__ import annotations

import datetime
import html
import math
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

__all__ = ["summary", "monte_carlo_means", "monte_carlo_pairs", "monte_carlo_sentence", "MC_SE", "MC_SEPARATION",
           "ranks", "overall", "separation", "overall_sentence", "tied_metrics", "glossary", "meaning",
           "book_link", "comprehensiveness_note", "sanity", "sanity_sentences", "cost", "brief", "duration",
           "random_weights", "randomisable_metrics", "on_randomised", "maps_figure", "ranks_figure", "write", "TABLES",
           "INTERPRETATION", "BOOK_URL"]

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

def __getattr__(name: str):
    if name == "MEANINGS":  # what each registered metric measures, in one line: its declaration's ``doc``
        from faithlab.metrics.registry import METRICS
        return {m.name: m.doc for m in METRICS.values() if m.doc}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


BOOK_URL: str | None = None
"""The address of the published book, each page at ``<BOOK_URL><page>.html``. None: the book has no fixed address
(``_config.yml``'s ``book_url`` is a placeholder that the publishing workflow rewrites for the repository it runs in),
so the report links into the book built in this checkout, ``<project root>/_build/html/<page>.html`` (``make html``
builds it); the environment variable ``FAITHLAB_BOOK_URL`` overrides both."""
BOOK_URL_ENV = "FAITHLAB_BOOK_URL"
GUIDE_PAGE, GLOSSARY_PAGE = "which_metric", "glossary"


def _check_frame(frame, arg: str = "frame") -> None:
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

    _check_frame(frame)
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
    _check_frame(frame)
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


def _draws_sentence(parameters: Mapping | None) -> str:
    """The Monte-Carlo counts the run used, from its ``parameters`` (``settings``: the options; ``budget``: the
    command's ``--budget``), beside the papers' defaults; "" when the parameters do not say."""
    from faithlab.evaluation.budget import knobs
    from faithlab.metrics.registry import OPTIONS

    settings = (parameters or {}).get("settings") or {}
    used = [(k, settings.get(k.option, OPTIONS[k.option].default)) for k in knobs() if k.option in OPTIONS]
    if not parameters or not used:
        return ""
    cut = [f"{k.option}={v} ({k.draw}; the paper's {OPTIONS[k.option].default})" for k, v in used
           if v != OPTIONS[k.option].default]
    budget = (parameters or {}).get("budget")
    if not cut:
        return " Draws per image: the papers' counts" + (f" (they fit --budget {budget})." if budget else ".")
    return (" Draws per image: " + ", ".join(cut) + (f", chosen to fit --budget {budget}" if budget else "") + "; "
            "a standard error grows like √(paper / count).")


def random_weights(seed) -> str:
    """What ``faithlab evaluate --random-weights`` evaluates, in its words: the model's random initialisation is drawn
    from ``--seed``, so the same command evaluates the same model."""
    return f"random weights drawn from --seed {seed}"


def _weights_sentence(parameters: Mapping | None) -> str:
    """The model of a ``--random-weights`` run, from its ``parameters`` (``random_weights``, ``seed``, ``model``):
    " Model: <spec>, random weights drawn from --seed N."; "" for any other run."""
    if not (parameters or {}).get("random_weights"):
        return ""
    model = parameters.get("model")
    return f" Model: {f'{model}, ' if model else ''}{random_weights(parameters.get('seed'))}."


def monte_carlo_sentence(pairs: pd.DataFrame) -> str:
    """What a :func:`monte_carlo_pairs` table says, in one paragraph: which pairs of explainers each Monte-Carlo
    metric does not separate at its Monte-Carlo precision (those need more draws, or are equal), and where the
    precision is unknown; "" when no metric of the frame is a Monte-Carlo estimate."""
    if pairs.empty:
        return ""
    labels = list(dict.fromkeys(pairs["label"]))
    named = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
    head = (f"Monte-Carlo precision: {named} {'is a' if len(labels) == 1 else 'are'} Monte-Carlo "
            f"estimate{'' if len(labels) == 1 else 's'} (random draws per image); each mean carries ± its "
            "Monte-Carlo standard error (√(Σ se²)/N over the N images), and two explainers are not separated at that "
            f"precision when their means differ by less than {MC_SEPARATION:g}·√(se_a² + se_b²).")
    close = pairs[pairs["separated"].eq(False).fillna(False)]
    unknown = pairs[pairs["separated"].isna()]
    said = []
    for label in labels:
        part = close[close["label"] == label]
        if len(part):
            said.append(f"{label} does not separate " + "; ".join(
                f"{r.explainer} and {r.versus} (|difference| {_number(abs(r.difference), 2)} < "
                f"{_number(r.threshold, 2)})" for r in part.itertuples()))
    text = head + (" Not separated at Monte-Carlo precision: " + "; ".join(said) + "." if said else
                   " Every pair of explainers is separated on every Monte-Carlo metric at its Monte-Carlo precision."
                   if unknown.empty else "")
    if len(unknown):
        where = ", ".join(dict.fromkeys(unknown["label"]))
        text += (f" No standard error for some explainer on {where} (one draw per image, or an undefined "
                 "leave-one-out correlation): its precision is unknown there.")
    return text


def ranks(frame: pd.DataFrame) -> pd.DataFrame:
    """Each metric's ranking of the explainers: rank 1 = the highest mean oriented score (the most faithful by that
    metric), ties averaged → label × explainer."""
    from faithlab import evaluation

    _check_frame(frame)
    table = (evaluation.oriented(frame).groupby(["label", "explainer"], sort=False)["oriented"].mean().unstack()
             .rank(axis=1, ascending=False))
    table.columns.name = None
    return table


def _per_image(frame: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray]:
    """The per-sample metrics that score every explainer (in the frame's order), the explainers, and their oriented
    per-image scores ``(metrics, explainers, images)`` (NaN where a score is missing)."""
    from faithlab import evaluation

    _check_frame(frame)
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


def _level_name(level: float) -> str:
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
    lo_name, hi_name = f"{_level_name(level)} low", f"{_level_name(level)} high"
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
    oriented scores excludes 0: :func:`faithlab.study.verdicts.mean_interval` over the images, the study's interval of
    one model's units, whose coverage is tested),
    ``explainer better on`` / ``versus better on`` (of those, which way), ``metrics compared`` (metrics with two or
    more images scored for both), and ``separating`` (the separating metrics' labels). order: the explainers' order
    (default: the frame's; :func:`write` passes :func:`overall`'s, so that the first row compares the first two).
    ``within Monte-Carlo error`` (:data:`WITHIN_MC`): the Monte-Carlo metrics whose means of the pair are not
    separated at their Monte-Carlo precision (:func:`monte_carlo_pairs`), separating or not: the interval over the
    images carries each image's Monte-Carlo noise, this column says where the means themselves are within the
    draws' error of each other."""
    from faithlab.study import verdicts

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
                    c = verdicts.mean_interval(cube[k, i] - cube[k, j], level=level)
                except ValueError:  # fewer than two images scored for both
                    continue
                compared += 1
                (wins if c.low > 0 else losses if c.high < 0 else []).append(labels[m])
            rows.append({"explainer": a, "versus": names[j], "separating metrics": len(wins) + len(losses),
                         "explainer better on": len(wins), "versus better on": len(losses),
                         "metrics compared": compared, "separating": ", ".join(wins + losses),
                         WITHIN_MC: ", ".join(close.get(frozenset((a, names[j])), []))})
    return pd.DataFrame(rows, columns=["explainer", "versus", "separating metrics", "explainer better on",
                                       "versus better on", "metrics compared", "separating", WITHIN_MC])


def _r(v: float) -> str:
    return "NaN" if not np.isfinite(v) else f"{v:.1f}"


def tied_metrics(table: pd.DataFrame) -> list[str]:
    """The metrics (rows of a :func:`ranks` table) that give every explainer they score the same rank: they rank
    nothing (a metric that scores no explainer, all NaN, is left out: it is undefined, not tied)."""
    values = table.drop(columns="label", errors="ignore")
    return [str(label) for label, row in zip(table.get("label", table.index), values.to_numpy(dtype=float))
            if len(set(row[~np.isnan(row)].tolist())) == 1]


def overall_sentence(table: pd.DataFrame, pairs: pd.DataFrame, tied: Sequence[str] = ()) -> str:
    """The :func:`overall` table and its :func:`separation` pairs in one sentence: who ranks first, with the mean
    rank and its interval, and how many metrics separate the first two. tied: the metrics that tie every explainer
    (:func:`tied_metrics`), counted in the sentence."""
    if table.empty:
        return "No per-image metric scores every explainer: there is no overall ranking."
    lo_name, hi_name = table.columns[2], table.columns[3]
    level = lo_name.removesuffix(" low")
    first = table.iloc[0]
    if len(table) == 1:
        return f"Only one explainer, {first['explainer']}, was evaluated: there is nothing to rank."
    leaders = table.loc[table["mean rank"] == first["mean rank"], "explainer"].tolist()
    ties = f", {len(tied)} of which tie every explainer" if len(tied) else ""
    rank = (f"mean rank {_r(first['mean rank'])}, {level} interval {_r(first[lo_name])}–{_r(first[hi_name])}, "
            f"over {int(first['metrics'])} metrics{ties}; 1 = first on every metric")
    text = (f"{first['explainer']} ranks first ({rank})" if len(leaders) == 1 else
            f"{' and '.join(leaders)} share the first place ({rank})")
    second = table.iloc[1]
    pair = pairs[(pairs["explainer"] == first["explainer"]) & (pairs["versus"] == second["explainer"])]
    if len(pair):
        p = pair.iloc[0]
        text += (f"; {first['explainer']} and {second['explainer']} are separated by {p['separating metrics']} of "
                 f"{p['metrics compared']} metrics ({first['explainer']} better on {p['explainer better on']}, "
                 f"{second['explainer']} on {p['versus better on']})")
    overlap = second[lo_name] <= first[hi_name]
    verdict = "overlap: these images do not order them firmly" if overlap else "do not overlap"
    text += f", and the {level} intervals of their mean ranks {verdict}"
    if len(table) > 2:
        last = table.iloc[-1]
        text += f"; {last['explainer']} ranks last (mean rank {_r(last['mean rank'])})"
    return text + "."


def meaning(metric: str) -> str:
    """What ``metric`` measures, in one line: its declaration's ``doc``, else the first sentence of its function's
    docstring (cut at 90 characters), else a pointer to ``fl.evaluation.describe()``."""
    from faithlab.evaluation import METRICS

    info = METRICS.get(metric)
    if info is not None and info.doc:
        return info.doc
    doc = (getattr(getattr(info, "function", None), "__doc__", None) or "").strip()
    first = " ".join(doc.split(". ")[0].split())
    if not first:
        return "no description: see fl.evaluation.describe()"
    return first if len(first) <= 90 else first[:89] + "…"


def _book_base() -> str:
    """The base address of the book's pages (see :data:`BOOK_URL`), ending in "/"."""
    base = os.environ.get(BOOK_URL_ENV) or BOOK_URL
    if base:
        return base if base.endswith("/") else base + "/"
    from faithlab import paths

    here = Path(__file__).resolve().parents[2]  # lib/faithlab/report.py → the checkout, in an editable install
    root = here if (here / "_config.yml").is_file() else paths.project_root()
    return (root / "_build" / "html").as_uri() + "/"


def book_link(page: str) -> str:
    """The address of the book's page ``page`` (a chapter slug such as ``"saco"``, or ``"glossary"``)."""
    return f"{_book_base()}{page}.html"


def comprehensiveness_note() -> str:
    """One sentence: which convention of comprehensiveness this library computes, and why (directions read from
    the registry)."""
    from faithlab.evaluation import METRICS

    def direction(m: str) -> str:
        return "higher is better" if METRICS[m].higher_is_better else "lower is better"

    return (f"Comprehensiveness follows SaCo's definition (Wu et al. 2024, §4.3), whose comparison of cumulative "
            f"metrics this library reproduces, not DeYoung et al.'s (2020): the least salient pixels are removed "
            f"first and a small drop means those pixels were dispensable ({direction('comprehensiveness')}); "
            f"DeYoung's comprehensiveness, the drop when the most salient are removed first, is what AOPC measures "
            f"here ({direction('aopc')}).")


def glossary(metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """What each metric measures → one row per metric (``metrics``, default every registered one, in order):
    ``metric`` (the name ``--metrics`` takes), ``label``, ``meaning`` (:func:`meaning`), ``direction`` (from the
    declaration), ``chapter`` (the book's chapter that tests it, :data:`faithlab.plots.PAPER_NAMES`) and ``link``
    (:func:`book_link` of the page that tests it, a paper's chapter or the synthesis page of the rival metrics;
    empty for a paper the book has no page of)."""
    from faithlab.evaluation import METRICS
    from faithlab.plots import PAPER_NAMES

    chosen = list(METRICS) if metrics is None else list(dict.fromkeys(metrics))
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}")
    rows = []
    for m in chosen:
        info = METRICS[m]
        rows.append({"metric": m, "label": info.label, "meaning": meaning(m),
                     "direction": "higher is better" if info.higher_is_better else "lower is better",
                     "chapter": PAPER_NAMES.get(info.paper, info.paper),
                     "link": book_link(info.paper) if info.paper in PAPER_NAMES else ""})
    return pd.DataFrame(rows, columns=["metric", "label", "meaning", "direction", "chapter", "link"])


def randomisable_metrics(frame: pd.DataFrame) -> list[str]:
    """The per-sample metrics of ``frame`` that can be recomputed on a randomised model as they are (those needing
    no fine-tuned copy and no explainer call: their inputs are the model and the maps), in the registry's order."""
    from faithlab.evaluation import METRICS

    _check_frame(frame)
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
    :func:`faithlab.study.papers.synthesis.meta_evaluation.reactivity`: ½ an unrelated ranking, 1 a reversed one; from
    ``randomised``, the frame :func:`on_randomised` returns; NaN with fewer than two explainers, where there is no
    ranking), ``beats random: <explainer>`` the share of images where each explainer scores better than the random
    map ``random`` (the name of a random explainer in ``frame``; ties ½), and ``recovery (...)`` columns when
    ``recovery`` (a :func:`faithlab.study.papers.synthesis.meta_evaluation.recovery` table) is given."""
    from faithlab.evaluation import METRICS
    from faithlab.study.papers import synthesis as syn

    _check_frame(frame)
    names = list(dict.fromkeys(frame["explainer"]))
    if random is not None and random not in names:
        raise ValueError(f"random names explainer {random!r}, absent from frame ({names})")
    if randomised is not None:
        _check_frame(randomised, "randomised")
        base = frame[frame["metric"].isin(set(randomised["metric"]))]
        react = syn.reactivity(base, randomised, names, truth=names[0], random=random or names[-1])
        if len(names) < 2:
            react["model"] = float("nan")
        table = react[["metric", "model"]].rename(columns={"model": RANKING_CHANGE})
    else:
        per_sample = frame.loc[frame["level"] == "sample", "metric"]
        table = pd.DataFrame({"metric": list(dict.fromkeys(per_sample))})
    checks = [syn.beats(frame, name, random).assign(explainer=name) for name in names
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
    (:func:`faithlab.study.papers.synthesis.meta_evaluation.cost_per_metric`; metrics computed together share one cost)."""
    from faithlab.study.papers import synthesis as syn

    _check_frame(frame)
    return syn.cost_per_metric(frame)


def sanity_sentences(table: pd.DataFrame, n_explainers: int, *, tied: Sequence[str] = (),
                     tied_randomised: Sequence[str] = ()) -> list[str]:
    """What the :func:`sanity` table says, one sentence per check present: what a ranking change on a randomised
    model means, which value is good (:data:`GOOD_CHANGE` or more) and how many metrics reach it, leaving out the
    metrics ``tied`` on the trained model or ``tied_randomised`` on the randomised one (:func:`tied_metrics`: every
    explainer tied, the change is ½ by definition); what the share of images beating a random map means and how
    often each explainer beats it on most images."""
    out = []
    if RANKING_CHANGE in table:
        change = table.set_index("label")[RANKING_CHANGE]
        void = [m for m in change.index if m in set(tied) | set(tied_randomised)]
        known = change.drop(index=void).dropna()
        two = (" With two explainers a ranking can only stay (0) or reverse (1)." if n_explainers == 2 else "")
        text = ("Ranking change on a randomised model: every weight of the model is drowned in noise and each metric "
                "ranks the explainers again; the value is (1 − Spearman correlation of the two rankings) / 2, so 0 "
                "means the metric ranks the explainers the same on a model that has learnt nothing (it does not "
                f"read what the model learnt: bad), ½ an unrelated ranking and 1 the reverse; {GOOD_CHANGE:g} or more "
                f"is good.{two}")
        if len(known):
            low = known[known < GOOD_CHANGE]
            text += (f" Here {len(known) - len(low)} of the {len(known)} metrics that rank the explainers on both "
                     f"models reach {GOOD_CHANGE:g} or more"
                     + (f"; below: {', '.join(f'{k} ({v:.2f})' for k, v in low.items())}." if len(low) else "."))
        elif len(change.dropna()):
            text += (" Here no metric ranks the explainers on both models, so this check says nothing (a randomised "
                     "model whose outputs do not move ties every explainer: try a smaller randomisation scale).")
        on = [("the trained model", [m for m in change.index if m in set(tied)]),
              ("the randomised one", [m for m in change.index if m in set(tied_randomised) and m not in set(tied)])]
        said = [f"for {', '.join(names)} on {where}" for where, names in on if names]
        if said:
            text += (f" Every explainer ties {' and '.join(said)}: there the value is ½ by definition and says "
                     "nothing.")
        out.append(text)
    beats = [c for c in table.columns if c.startswith("beats random: ")]
    if beats:
        shares = table.set_index("label")[beats]
        parts = [f"{c.removeprefix('beats random: ')} on {int((shares[c] > 0.5).sum())} of "
                 f"{int(shares[c].notna().sum())}" for c in beats]
        out.append("Beats random: the share of images where the explainer scores better than the random map (ties "
                   "count ½); ½ means the metric cannot tell the explainer from noise, 1 that it always scores "
                   f"better. Metrics where the explainer beats the random map on most images: {'; '.join(parts)}.")
    return out


def duration(ms: float) -> str:
    """Milliseconds in a unit a reader takes in: "850 ms", "37.7 s", "2.5 min", "1.2 h" (thousands separated)."""
    if ms is None or not math.isfinite(ms):
        return ""
    seconds = ms / 1000
    if seconds < 1:
        return f"{ms:.2g} ms" if ms < 10 else f"{ms:,.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _count(v: float) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:,.0f}" if abs(v) >= 10 else f"{v:.3g}"


def _number(v, digits: int = 3) -> str:
    """A score with ``digits`` significant digits, no exponent above 10⁻⁴ (a larger number thousands-separated)."""
    if v is None or isinstance(v, str):
        return "" if v is None else v
    v = float(v)
    if not math.isfinite(v):
        return "" if math.isnan(v) else str(v)
    if v == 0:
        return "0"
    if abs(v) < 1e-4:
        return f"{v:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def brief(value, width: int = 40) -> str:
    """A parameter's value in a few words: a list of more than 4 numbers as "101 values 0…1", anything else as its
    repr, cut at ``width`` characters."""
    if isinstance(value, (list, tuple)) and len(value) > 4 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return f"{len(value)} values {min(value):g}…{max(value):g}"
    if isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {brief(v, width)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def _display(x: torch.Tensor, normalisation) -> torch.Tensor:
    """One image ``(C, H, W)`` as the picture to show: un-normalised with ``normalisation`` ``(mean, std)``
    when given, first channel of a grey image, else RGB ``(3, H, W)``."""
    x = x.detach().float().cpu()
    if normalisation is not None:
        mean, std = (torch.as_tensor(v, dtype=torch.float32, device="cpu").reshape(-1, 1, 1) for v in normalisation)
        x = (x * std + mean).clamp(0, 1)
    return x[0] if x.shape[0] != 3 else x


MAP_SCALE = "|map|, scaled"
"""The colour bar's label in :func:`maps_figure`: each map is shown on its own scale."""


def maps_figure(x: torch.Tensor, maps: Mapping[str, torch.Tensor], *, index: int = 0, normalisation=None):
    """Image ``index`` of ``x`` ``(B, C, H, W)`` and each explainer's map of it (Σ|a| over the channels) overlaid on
    it, side by side, with one colour bar (:func:`faithlab.plots.map_columns`; each map from its lowest to its highest
    value) → a matplotlib Figure. normalisation: the ``(mean, std)`` x was normalised with (None: the image is shown
    min-max scaled; a grey image shows its first channel)."""
    from faithlab import plots

    if not isinstance(x, torch.Tensor) or x.ndim != 4:
        raise ValueError(f"x must be a (B, C, H, W) tensor of images, got {getattr(x, 'shape', type(x).__name__)}")
    if not 0 <= index < x.shape[0]:
        raise ValueError(f"index must be in [0, {x.shape[0]}), got {index}")
    if not maps:
        raise ValueError("maps must hold at least one explainer's maps")
    columns = {}
    for name, m in maps.items():
        if m.shape[0] != x.shape[0]:
            raise ValueError(f"maps[{name!r}] has {m.shape[0]} maps but x has {x.shape[0]} images")
        a = m[index].detach().float().cpu()
        columns[str(name)] = [a.abs().sum(0) if a.ndim == 3 else a.abs()]
    # the picture is already in [0, 1] once un-normalised: mean 0, std 1 shows it as it is (min-max scaled without)
    shown = {} if normalisation is None else {"mean": (0.0,), "std": (1.0,)}
    return plots.map_columns([_display(x[index], normalisation)], columns, image_title=f"image {index}",
                             colorbar=MAP_SCALE, **shown)


def ranks_figure(table: pd.DataFrame):
    """The :func:`ranks` table as an annotated heat map (rank 1 = best) → a matplotlib Figure."""
    import matplotlib.pyplot as plt

    from faithlab import plots

    fig, ax = plt.subplots(figsize=(min(plots.WIDTH_IN, 1.3 * table.shape[1] + 3), 0.4 * len(table) + 1.5))
    values = table.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="viridis_r", aspect="auto", vmin=1, vmax=max(table.shape[1], 2))
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            # viridis_r runs from light (rank 1) to dark: dark text on the light half, white on the dark one
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="black" if v < (table.shape[1] + 1) / 2
                    else "white")
    ax.grid(False)  # the house style's grid would cross the numbers
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(len(table)), [str(i) for i in table.index])
    fig.colorbar(image, ax=ax, label="rank (1 = best)")
    fig.tight_layout()
    return fig


def _save(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
          "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}"
          "th,td{border:1px solid #ccc;padding:0.2em 0.5em;text-align:right}th{background:#f4f4f4}"
          "td.text,th.text{text-align:left}p.lead{font-size:1.1em}"
          "img{max-width:100%}code,pre{background:#f6f6f6;white-space:pre-wrap}.hint{color:#8a4b00}")


def _cells(table: pd.DataFrame, formats: Mapping[str, Callable] | None = None) -> pd.DataFrame:
    """Every cell of ``table`` as text: ``formats[column]`` where given, else numbers by :func:`_number` (integers
    thousands-separated), missing values empty."""
    formats = dict(formats or {})
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        values = table[column]
        if column in formats:
            fmt = formats[column]
        elif pd.api.types.is_bool_dtype(values):
            fmt = str
        elif pd.api.types.is_integer_dtype(values):
            def fmt(v):
                return f"{int(v):,}"
        elif pd.api.types.is_float_dtype(values):
            fmt = _number
        else:
            fmt = str
        out[str(column)] = [("" if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else fmt(v))
                            for v in values]
    return out


def _html_table(table: pd.DataFrame, formats: Mapping[str, Callable] | None = None, *,
                raw: Sequence[str] = (), numeric: Sequence[str] = ()) -> str:
    """``table`` as an HTML table: one header cell per column (never empty), cells by :func:`_cells`, escaped
    except the columns ``raw`` (HTML made here: links); text columns left-aligned, numbers (and the columns
    ``numeric``, numbers written as text) right-aligned."""
    e = html.escape
    cells = _cells(table, formats)
    text = [c for c in table.columns if c not in numeric and (not pd.api.types.is_numeric_dtype(table[c])
                                                              or pd.api.types.is_bool_dtype(table[c]))]
    names = [str(c) if str(c).strip() else "(unnamed)" for c in table.columns]
    head = "".join(f"<th{' class=text' if c in text else ''}>{e(n)}</th>" for c, n in zip(table.columns, names))
    body = "".join("<tr>" + "".join(
        f"<td{' class=text' if c in text else ''}>{v if c in raw else e(v)}</td>"
        for c, v in zip(table.columns, row)) + "</tr>" for row in cells.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cost_display(table: pd.DataFrame, n_images: int) -> pd.DataFrame:
    """The :func:`cost` table in a reader's units: counts thousands-separated, times in ms, s, min or h, and the
    time for all the images (per explainer)."""
    shown = pd.DataFrame({"metric": table["label"] if "label" in table else table["metric"]})
    if "inputs per sample" in table:
        shown["model inputs per image"] = table["inputs per sample"].map(_count)
    if "explained per sample" in table:
        shown["explained inputs per image"] = table["explained per sample"].map(_count)
    if "ms per sample" in table:
        shown["time per image"] = table["ms per sample"].map(duration)
        shown[f"time for {n_images:,} images"] = (table["ms per sample"] * n_images).map(duration)
    if "shared with" in table:
        shown["computed with"] = table["shared with"].fillna("")
    for column in ("estimated group seconds", "measured group seconds"):  # the command's estimate beside the run
        if column in table:
            shown[column.replace("group seconds", "time (group, all images)")] = (table[column] * 1000).map(duration)
    return shown


def _summary_display(table: pd.DataFrame) -> pd.DataFrame:
    """The :func:`summary` table for the page: each Monte-Carlo mean as "mean ± its standard error" (deterministic
    metrics: the mean alone), the ``MC se:`` columns folded in."""
    se_columns = [c for c in table.columns if str(c).startswith(MC_SE)]
    shown = table.drop(columns=se_columns).rename(columns={"label": "metric"})
    for column in se_columns:
        name = str(column).removeprefix(MC_SE)
        if name not in shown:
            continue
        shown[name] = [_number(m) + (f" ± {_number(se, 2)}" if np.isfinite(se) else "") if np.isfinite(m) else ""
                       for m, se in zip(table[name].astype(float), table[column].astype(float))]
    return shown


def _link(url: str, text: str) -> str:
    return f"<a href='{html.escape(url)}'>{html.escape(text)}</a>" if url else html.escape(text)


def _page(tables: Mapping[str, pd.DataFrame], figures: Sequence[tuple[str, str]], *, title: str, command: str | None,
          parameters: Mapping | None, hints: Sequence[str], n_images: int, n_boot: int, level: float,
          seed: int, tied: Sequence[str], sanity_text: Sequence[str]) -> str:
    from faithlab import __version__

    e = html.escape
    n_explainers = len(tables["overall"])

    def csv_link(name: str, table: pd.DataFrame, shown: int | None = None) -> str:
        cut = f" (first {shown} of {len(table):,} rows)" if shown is not None and shown < len(table) else ""
        return f"<p><a href='{e(name)}.csv'>{e(name)}.csv</a>{cut}</p>"

    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>",
             f"<p>faithlab {e(__version__)}, written {e(datetime.datetime.now().isoformat(timespec='seconds'))}; "
             f"{n_images:,} images, {n_explainers} explainers.{e(_weights_sentence(parameters))} Rank 1 = the "
             "explainer a metric finds most faithful; read each score with its direction.</p>"]
    if command:
        parts.append(f"<pre>{e(command)}</pre>")

    overall_table, pairs = tables["overall"], tables["pairs"]
    parts.append("<h2>Overall ranking</h2>")
    parts.append(f"<p class='lead'>{e(overall_sentence(overall_table, pairs, tied))}</p>")
    parts.append(_html_table(overall_table, {"mean rank": _r, overall_table.columns[2]: _r,
                                             overall_table.columns[3]: _r}))
    parts.append(csv_link("overall", overall_table))
    metrics_ranked = int(overall_table["metrics"].iloc[0]) if len(overall_table) else 0
    parts.append(f"<p>Mean rank: each of the {metrics_ranked} per-image metrics ranks the explainers by its own "
                 f"direction (the ranks table below), and the ranks are averaged. Interval: {n_boot:,} bootstrap "
                 f"resamples of the {n_images:,} images (seed {seed}); in each, every metric's mean, its ranking and "
                 f"the mean rank are recomputed. A metric separates two explainers when the {_level_name(level)} t "
                 "interval of their mean per-image score difference excludes 0.</p>")
    if len(pairs):
        parts.append("<h3>Metrics that separate each pair of explainers</h3>")
        parts.append(_html_table(pairs))
        parts.append(csv_link("pairs", pairs))

    terms = tables["metrics"]
    parts.append("<h2>What the metrics measure</h2>")
    guide = _link(book_link(GUIDE_PAGE), "Which metric should I use?")
    words = _link(book_link(GLOSSARY_PAGE), "glossary")
    where = ("the published book" if (os.environ.get(BOOK_URL_ENV) or BOOK_URL) else
             f"the book built in this checkout ({_book_base()}; build it with 'make html'), as the book has no fixed "
             f"published address (set {BOOK_URL_ENV} to link a published copy)")
    parts.append(f"<p>Each metric's chapter is the book's test of its paper; the book's guide {guide} and its "
                 f"{words} say more. Links go to {e(where)}.</p>")
    shown_terms = terms.assign(chapter=[_link(u, c) for u, c in zip(terms["link"], terms["chapter"])])
    shown_terms = shown_terms[["label", "metric", "meaning", "direction", "chapter"]].rename(columns={
        "label": "metric", "metric": "name", "meaning": "what it measures"})
    parts.append(_html_table(shown_terms, raw=("chapter",)))
    if "comprehensiveness" in set(terms["metric"]):
        parts.append(f"<p>{e(comprehensiveness_note())}</p>")
    parts.append(csv_link("metrics", terms))

    if hints:
        parts.append("<h2>Hints and warnings</h2><ul>" + "".join(f"<li class='hint'>{e(h)}</li>" for h in hints)
                     + "</ul>")

    parts.append("<h2>Mean score per metric and explainer</h2>")
    parts.append(csv_link("summary", tables["summary"]))
    shown_summary = _summary_display(tables["summary"])
    parts.append(_html_table(shown_summary, numeric=[c for c in shown_summary.columns
                                                     if c not in ("metric", "direction")]))
    mc_text = monte_carlo_sentence(tables["monte carlo"])
    if any(str(c).startswith("MC se") for c in tables["summary"].columns):  # some score is a Monte-Carlo estimate
        mc_text = (mc_text + _draws_sentence(parameters)).strip()
    if mc_text:
        parts.append(f"<p>{e(mc_text)}</p>")
    maps = [(f, alt) for f, alt in figures if f != "ranks.png"]
    if maps:
        parts.append("<h2>Maps</h2><p>Each explainer's map (Σ|a| over the channels) over the image, each on its own "
                     "scale (the colour bar: 0 = the map's lowest value, 1 = its highest).</p>"
                     + "".join(f"<p><img src='{e(f)}' alt='{e(alt)}'></p>" for f, alt in maps))

    parts.append("<h2>How each metric ranks the explainers</h2>")
    parts += [f"<img src='{e(f)}' alt='{e(alt)}'>" for f, alt in figures if f == "ranks.png"]
    parts.append(csv_link("ranks", tables["ranks"]))
    parts.append(_html_table(tables["ranks"].rename(columns={"label": "metric"}),
                             {c: _r for c in tables["ranks"].columns if c != "label"}))

    sanity_table = tables["sanity"]
    parts.append("<h2>Sanity checks</h2>")
    for sentence in sanity_text:
        parts.append(f"<p>{e(sentence)}</p>")
    parts.append(csv_link("sanity", sanity_table))
    parts.append(_html_table(sanity_table.drop(columns="metric").rename(columns={"label": "metric"}),
                             {c: (lambda v: f"{v:.2f}") for c in sanity_table.columns if c not in ("label", "metric")}))

    cost_table = tables["cost"]
    parts.append("<h2>Cost per image and explainer</h2>")
    parts.append("<p>Model inputs (forward passes) and time per image for one explainer; metrics computed together "
                 "share one cost.</p>")
    parts.append(csv_link("cost", cost_table))
    parts.append(_html_table(_cost_display(cost_table, n_images)))

    if parameters:
        flat = {str(k) if k2 is None else f"{k}: {k2}": v2 for k, v in parameters.items()
                for k2, v2 in (v.items() if isinstance(v, Mapping) and v else [(None, v)])}
        shown = [brief(v, 80) for v in flat.values()]
        if parameters.get("random_weights") and "random_weights" in flat:  # the seed the weights were drawn from
            shown[list(flat).index("random_weights")] = f"True ({random_weights(parameters.get('seed'))})"
        rows = pd.DataFrame({"parameter": list(flat), "value": shown})
        parts.append("<h2>Parameters</h2>" + _html_table(rows))
    every = tables["report"]
    parts.append("<h2>Every score</h2>")
    parts.append(csv_link("report", every, 200))
    parts.append(_html_table(every.head(200)))
    parts.append("</body></html>")
    return "\n".join(parts)


def _replaceable(folder: Path) -> bool:
    """Whether ``folder`` may be replaced by a report: empty but for hidden files (a Finder's .DS_Store, Jupyter's
    .ipynb_checkpoints), or an earlier report (its index.html and report.csv)."""
    names = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    return not names or {"index.html", "report.csv"} <= names


def write(out_dir: str | os.PathLike, frame: pd.DataFrame, *, randomised: pd.DataFrame | None = None,
          random: str | None = None, images: torch.Tensor | None = None, maps: Mapping[str, torch.Tensor] | None = None,
          n_maps: int = 4, normalisation=None, command: str | None = None, parameters: Mapping | None = None,
          hints: Sequence[str] = (), costs: pd.DataFrame | None = None, title: str = "Faithfulness report",
          seed: int = 0, n_boot: int = N_BOOT, level: float = LEVEL) -> Path:
    """Write the report of ``frame`` (an :func:`faithlab.evaluate` frame) into ``out_dir`` → its ``index.html``.

    Files: ``report.csv`` (the tidy frame), ``summary.csv``, ``ranks.csv``, ``sanity.csv`` (with ``randomised`` and
    ``random`` as in :func:`sanity`), ``cost.csv`` (:data:`TABLES`); ``overall.csv`` (:func:`overall`, its intervals
    from ``n_boot`` resamples of the images at ``level``, generator ``seed``), ``pairs.csv`` (:func:`separation`)
    and ``metrics.csv`` (:func:`glossary`) (:data:`INTERPRETATION`); ``ranks.png`` and, when ``images``
    ``(B, C, H, W)`` and their ``maps`` ``{explainer: maps}`` are given, ``maps_<i>.png`` for the first ``n_maps``
    images (un-normalised with ``normalisation`` ``(mean, std)``); ``index.html``, one self-contained page (tables
    escaped, images by relative path): the overall ranking first, what each metric measures with a link to its
    chapter, then the ``hints``, the tables and figures with the sentences that read them, the ``command`` and the
    ``parameters`` used. costs: the :func:`cost` table when ``frame`` no longer carries its ``attrs["cost"]``
    (frames concatenated by pandas). Everything is written into a temporary folder beside ``out_dir`` and moved into
    place at the end: on failure nothing is left half-written, and an existing ``out_dir`` is replaced only by a
    complete report; an existing ``out_dir`` that is neither empty nor a report (index.html and report.csv) is
    refused with ValueError, never replaced."""
    _check_frame(frame)
    if isinstance(n_maps, bool) or not isinstance(n_maps, int) or n_maps < 0:
        raise ValueError(f"n_maps must be a non-negative integer, got {n_maps!r}")
    if (images is None) != (maps is None):
        raise ValueError("pass images and maps together (the map figures need both), or neither")
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} exists and is not a folder")
    if out.is_dir() and not _replaceable(out):
        raise ValueError(f"out_dir {out} is a folder that holds other files than a report (no index.html and "
                         "report.csv), and the report replaces its folder: pass a new folder, or an earlier report's")
    out.parent.mkdir(parents=True, exist_ok=True)
    tables = {"summary": summary(frame).reset_index(), "ranks": ranks(frame).reset_index(), "sanity": sanity(
        frame, randomised, random=random), "cost": cost(frame) if costs is None else costs, "report": frame}
    tables["overall"] = overall(frame, n_boot=n_boot, level=level, seed=seed)
    tables["pairs"] = separation(frame, level=level,
                                 order=tables["overall"]["explainer"].tolist() or None)
    tables["metrics"] = glossary(dict.fromkeys(frame["metric"]))
    tables["monte carlo"] = monte_carlo_pairs(frame, order=tables["overall"]["explainer"].tolist() or None)
    hints = list(hints)
    if RANKING_CHANGE in tables["sanity"]:
        undefined = tables["sanity"].loc[tables["sanity"][RANKING_CHANGE].isna(), "label"].tolist()
        if undefined and len(set(frame["explainer"])) > 1:
            hints.append(f"Ranking change on a randomised model undefined for {', '.join(undefined)}: the metric "
                         "has no mean score on the randomised model (NaN, e.g. μF when its outputs do not vary).")
    n_images = int(frame.loc[frame["level"] == "sample", "sample"].nunique())
    tied = tied_metrics(tables["ranks"])
    sanity_text = sanity_sentences(tables["sanity"], len(tables["overall"]), tied=tied, tied_randomised=(
        [] if randomised is None else tied_metrics(ranks(randomised))))
    if not sanity_text:
        sanity_text = ["No sanity check ran: no randomised model's frame was given and no random map is among the "
                       "explainers."]
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name in TABLES + INTERPRETATION:
            tables[name].to_csv(staging / f"{name}.csv", index=False)
        figures = []
        _save(ranks_figure(ranks(frame)), staging / "ranks.png")
        figures.append(("ranks.png", "ranks"))
        if images is not None:
            for i in range(min(n_maps, images.shape[0])):
                _save(maps_figure(images, maps, index=i, normalisation=normalisation), staging / f"maps_{i}.png")
                figures.append((f"maps_{i}.png", f"image {i} and its maps"))
        (staging / "index.html").write_text(_page(tables, figures, title=title, command=command,
                                                  parameters=parameters, hints=hints, n_images=n_images,
                                                  n_boot=n_boot, level=level, seed=seed, tied=tied,
                                                  sanity_text=sanity_text), encoding="utf-8")
        os.chmod(staging, 0o755)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            staging.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out / "index.html"

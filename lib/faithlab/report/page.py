"""The report's page, ``index.html``: its tables with their cells written for a reader (each Monte-Carlo mean with
its standard error, the costs in a reader's units), its sentences and figures, built from :mod:`faithlab.html`'s
pieces (:func:`index_page`)."""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab import html
from faithlab.report import meanings
from faithlab.report.meanings import (BOOK_URL_ENV, GLOSSARY_PAGE, GUIDE_PAGE, book_base, book_link,
                                      comprehensiveness_note)
from faithlab.report.sentences import (brief, draws_sentence, duration, monte_carlo_sentence, number_text,
                                       overall_sentence, random_weights, rank_text, weights_sentence)
from faithlab.report.tables import MC_SE, level_name

__all__ = ["index_page"]


def _count(v: float) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:,.0f}" if abs(v) >= 10 else f"{v:.3g}"


def _cells(table: pd.DataFrame, formats: Mapping[str, Callable] | None = None) -> pd.DataFrame:
    """Every cell of ``table`` as text: ``formats[column]`` where given, else numbers by :func:`number_text` (integers
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
            fmt = number_text
        else:
            fmt = str
        out[str(column)] = [("" if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else fmt(v))
                            for v in values]
    return out


def _table(table: pd.DataFrame, formats: Mapping[str, Callable] | None = None, *,
           raw: Sequence[str] = (), numeric: Sequence[str] = ()) -> str:
    """``table`` as an HTML table (:func:`faithlab.html.table`): one header cell per column (never empty), cells by
    :func:`_cells`, escaped except the columns ``raw`` (HTML made here: links); text columns left-aligned, numbers
    (and the columns ``numeric``, numbers written as text) right-aligned."""
    cells = _cells(table, formats)
    text = [c not in numeric and (not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c]))
            for c in table.columns]
    names = [str(c) if str(c).strip() else "(unnamed)" for c in table.columns]
    return html.table(names, cells.itertuples(index=False), text=text, raw=[c in raw for c in table.columns])


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
        shown[name] = [number_text(m) + (f" ± {number_text(se, 2)}" if np.isfinite(se) else "")
                       if np.isfinite(m) else ""
                       for m, se in zip(table[name].astype(float), table[column].astype(float))]
    return shown


def index_page(tables: Mapping[str, pd.DataFrame], figures: Sequence[tuple[str, str]], *, title: str,
               command: str | None, parameters: Mapping | None, hints: Sequence[str], n_images: int, n_boot: int,
               level: float, seed: int, tied: Sequence[str], sanity_text: Sequence[str]) -> str:
    """The report's page from its ``tables`` (by name: those of :func:`faithlab.report.write`) and ``figures``
    ``(file, alt text)``, with the run's ``command``, ``parameters`` and ``hints`` → the HTML of ``index.html``."""
    from faithlab import __version__

    n_explainers = len(tables["overall"])

    def csv_link(name: str, table: pd.DataFrame, shown: int | None = None) -> str:
        cut = f" (first {shown} of {len(table):,} rows)" if shown is not None and shown < len(table) else ""
        return html.file_link(f"{name}.csv", cut)

    parts = [html.paragraph(f"faithlab {__version__}, written {datetime.datetime.now().isoformat(timespec='seconds')}; "
                            f"{n_images:,} images, {n_explainers} explainers.{weights_sentence(parameters)} Rank 1 = "
                            "the explainer a metric finds most faithful; read each score with its direction.")]
    if command:
        parts.append(html.preformatted(command))

    overall_table, pairs = tables["overall"], tables["pairs"]
    parts.append(html.heading("Overall ranking"))
    parts.append(html.paragraph(overall_sentence(overall_table, pairs, tied), cls="lead"))
    parts.append(_table(overall_table, {"mean rank": rank_text, overall_table.columns[2]: rank_text,
                                        overall_table.columns[3]: rank_text}))
    parts.append(csv_link("overall", overall_table))
    metrics_ranked = int(overall_table["metrics"].iloc[0]) if len(overall_table) else 0
    parts.append(html.paragraph(
        f"Mean rank: each of the {metrics_ranked} per-image metrics ranks the explainers by its own direction (the "
        f"ranks table below), and the ranks are averaged. Interval: {n_boot:,} bootstrap resamples of the "
        f"{n_images:,} images (seed {seed}); in each, every metric's mean, its ranking and the mean rank are "
        f"recomputed. A metric separates two explainers when the {level_name(level)} t interval of their mean "
        "per-image score difference excludes 0.", raw=True))
    if len(pairs):
        parts.append(html.heading("Metrics that separate each pair of explainers", 3))
        parts.append(_table(pairs))
        parts.append(csv_link("pairs", pairs))

    terms = tables["metrics"]
    parts.append(html.heading("What the metrics measure"))
    guide = html.link(book_link(GUIDE_PAGE), "Which metric should I use?")
    words = html.link(book_link(GLOSSARY_PAGE), "glossary")
    where = ("the published book" if (os.environ.get(BOOK_URL_ENV) or meanings.BOOK_URL) else
             f"the book built in this checkout ({book_base()}; build it with 'make html'), as the book has no fixed "
             f"published address (set {BOOK_URL_ENV} to link a published copy)")
    parts.append(html.paragraph(f"Each metric's chapter is the book's test of its paper; the book's guide {guide} and "
                                f"its {words} say more. Links go to {html.text(where)}.", raw=True))
    shown_terms = terms.assign(chapter=[html.link(u, c) for u, c in zip(terms["link"], terms["chapter"])])
    shown_terms = shown_terms[["label", "metric", "meaning", "direction", "chapter"]].rename(columns={
        "label": "metric", "metric": "name", "meaning": "what it measures"})
    parts.append(_table(shown_terms, raw=("chapter",)))
    if "comprehensiveness" in set(terms["metric"]):
        parts.append(html.paragraph(comprehensiveness_note()))
    parts.append(csv_link("metrics", terms))

    if hints:
        parts.append(html.heading("Hints and warnings") + html.bullets(hints, cls="hint"))

    parts.append(html.heading("Mean score per metric and explainer"))
    parts.append(csv_link("summary", tables["summary"]))
    shown_summary = _summary_display(tables["summary"])
    parts.append(_table(shown_summary, numeric=[c for c in shown_summary.columns if c not in ("metric", "direction")]))
    mc_text = monte_carlo_sentence(tables["monte carlo"])
    if any(str(c).startswith("MC se") for c in tables["summary"].columns):  # some score is a Monte-Carlo estimate
        mc_text = (mc_text + draws_sentence(parameters)).strip()
    if mc_text:
        parts.append(html.paragraph(mc_text))
    maps = [(f, alt) for f, alt in figures if f != "ranks.png"]
    if maps:
        parts.append(html.heading("Maps") + html.paragraph(
            "Each explainer's map (Σ|a| over the channels) over the image, each on its own scale (the colour bar: 0 = "
            "the map's lowest value, 1 = its highest).", raw=True)
            + "".join(html.paragraph(html.image(f, alt), raw=True) for f, alt in maps))

    parts.append(html.heading("How each metric ranks the explainers"))
    parts += [html.image(f, alt) for f, alt in figures if f == "ranks.png"]
    parts.append(csv_link("ranks", tables["ranks"]))
    parts.append(_table(tables["ranks"].rename(columns={"label": "metric"}),
                        {c: rank_text for c in tables["ranks"].columns if c != "label"}))

    sanity_table = tables["sanity"]
    parts.append(html.heading("Sanity checks"))
    for sentence in sanity_text:
        parts.append(html.paragraph(sentence))
    parts.append(csv_link("sanity", sanity_table))
    parts.append(_table(sanity_table.drop(columns="metric").rename(columns={"label": "metric"}),
                        {c: (lambda v: f"{v:.2f}") for c in sanity_table.columns if c not in ("label", "metric")}))

    cost_table = tables["cost"]
    parts.append(html.heading("Cost per image and explainer"))
    parts.append(html.paragraph("Model inputs (forward passes) and time per image for one explainer; metrics computed "
                                "together share one cost.", raw=True))
    parts.append(csv_link("cost", cost_table))
    parts.append(_table(_cost_display(cost_table, n_images)))

    if parameters:
        flat = {str(k) if k2 is None else f"{k}: {k2}": v2 for k, v in parameters.items()
                for k2, v2 in (v.items() if isinstance(v, Mapping) and v else [(None, v)])}
        shown = [brief(v, 80) for v in flat.values()]
        if parameters.get("random_weights") and "random_weights" in flat:  # the seed the weights were drawn from
            shown[list(flat).index("random_weights")] = f"True ({random_weights(parameters.get('seed'))})"
        rows = pd.DataFrame({"parameter": list(flat), "value": shown})
        parts.append(html.heading("Parameters") + _table(rows))
    every = tables["report"]
    parts.append(html.heading("Every score"))
    parts.append(csv_link("report", every, 200))
    parts.append(_table(every.head(200)))
    return html.document(title, parts, style=html.REPORT_STYLE)

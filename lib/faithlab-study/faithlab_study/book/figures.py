"""The study's own figures, coloured by verdict: one colour per verdict (:data:`VERDICT_COLORS`) and the front
page's map of the study (:func:`study_map`), drawn in the book's style (:mod:`faithlab.plots`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from faithlab.metrics.registry import METRICS
from faithlab.plots.charts import string_list
from faithlab_study.book.chapters import PAPER_NAMES, paper_order
from faithlab_study.verdicts import VERDICTS

__all__ = ["VERDICT_COLORS", "paper_metrics", "study_map"]

VERDICT_COLORS = dict(zip(VERDICTS, ("#009E73", "#7FD1B9", "#E69F00", "#D55E00", "#999999", "#56B4E9")))
"""One colour per verdict (Okabe-Ito, colour-blind safe), the same in every figure: "reproduced, weaker" is a light
tint of reproduced's bluish green (told apart by lightness, which every colour vision keeps)."""


def paper_metrics() -> dict[str, list[str]]:
    """Display names of the library's registered metrics of each paper (chapter slug → labels, in the registry's
    order), the study map's second argument."""
    out: dict[str, list[str]] = {}
    for metric in METRICS.values():
        out.setdefault(metric.paper, []).append(metric.label)
    return out


def study_map(scorecard: pd.DataFrame, metrics: Mapping[str, Sequence[str]], *,
              names: Mapping[str, str] | None = None) -> Figure:
    """Map of the study for the book's front page, left to right: papers → their metrics → their experiments
    (notebooks) → a stacked bar of their claims' verdicts, one block of rows per paper in :func:`~faithlab_study.book.chapters.paper_order`.

    scorecard: one row per claim with at least the columns ``paper`` (chapter slug), ``experiment`` and ``verdict``
    (one of :data:`~faithlab_study.verdicts.VERDICTS`); it may be empty. metrics: ``{paper slug: metric labels}``. names: ``{slug: display
    name}`` (default :data:`~faithlab_study.book.chapters.PAPER_NAMES`; a slug without one is shown as is). Papers are those of ``metrics`` and of
    ``scorecard``; one without claims shows "no verdict yet". Bar lengths share one scale (claims per paper).
    Returns a Figure that pyplot does not manage (save it; no need to close it); its height grows with the rows.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from matplotlib.font_manager import FontProperties
    from matplotlib.patches import Patch, Rectangle

    if not isinstance(scorecard, pd.DataFrame):
        raise TypeError(f"scorecard must be a pandas DataFrame, got {type(scorecard).__name__}")
    missing = [c for c in ("paper", "experiment", "verdict") if c not in scorecard.columns]
    if missing:
        raise ValueError(f"scorecard needs the columns {missing}; columns: {list(scorecard.columns)}")
    scorecard = scorecard.copy()
    unknown = sorted(set(map(str, scorecard["verdict"])) - set(VERDICTS))
    if unknown:
        raise ValueError(f"scorecard has verdicts {unknown} outside {VERDICTS}")
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a mapping of paper slug → metric labels, got {type(metrics).__name__}")
    metrics = {str(p): string_list(m, f"metrics[{p!r}]") for p, m in metrics.items()}
    if names is None:
        names = PAPER_NAMES
    if not isinstance(names, Mapping) or not all(isinstance(v, str) for v in names.values()):
        raise TypeError(f"names must be a mapping of paper slug → display name, got {names!r:.60}")
    scorecard["paper"], scorecard["experiment"] = scorecard["paper"].astype(str), scorecard["experiment"].astype(str)
    papers = paper_order([*metrics, *scorecard["paper"]])
    if not papers:
        raise ValueError("metrics and scorecard name no paper: nothing to map")

    size, row, gap = 9.0, 0.26, 0.7  # font size (pt), row height (inches), blank rows between papers
    measure = RendererAgg(1, 1, 72)  # widths in points at 72 dpi = inches × 72

    def width(texts, bold=False) -> float:
        """Width in inches of the widest of texts (bold: as the paper labels, one point larger)."""
        prop = FontProperties(size=size + 1, weight="bold") if bold else FontProperties(size=size)
        return max((measure.get_text_width_height_descent(t, prop, ismath=False)[0] / 72 for t in texts), default=0)

    blocks = []
    for p in papers:
        claims = scorecard[scorecard["paper"] == p]
        counts = claims["verdict"].value_counts()
        blocks.append((p, names.get(p, p), metrics.get(p, []), sorted(claims["experiment"].unique()),
                       [int(counts.get(v, 0)) for v in VERDICTS]))
    heads = ("paper", "metrics", "notebooks", "paper claims")
    x_paper = 0.1
    # narrow enough (about 6.5 inches) to be shown in the book's column without shrinking its 9-pt text
    x_metric = x_paper + width([b[1] for b in blocks], bold=True) + 0.25
    x_exp = x_metric + max(width([m for b in blocks for m in b[2]]), width(heads[1:2], bold=True)) + 0.25
    x_bar = x_exp + max(width([e for b in blocks for e in b[3]]), width(heads[2:3], bold=True)) + 0.25
    bar_width = 0.9
    n_rows = sum(max(len(b[2]), len(b[3]), 1) for b in blocks) + gap * (len(blocks) - 1)
    top, bottom, legend_rows = 1.6, 0.6, 2.6  # rows for the column heads, a margin, and the legend below the map
    fig_width, fig_height = x_bar + bar_width + 0.3, (top + n_rows + bottom + legend_rows) * row
    fig = Figure(figsize=(fig_width, fig_height))
    FigureCanvasAgg(fig)
    below = legend_rows * row / fig_height  # the legend's strip, outside the map's axes
    ax = fig.add_axes((0, below, 1, 1 - below))
    ax.set_xlim(0, fig_width)
    ax.set_ylim(n_rows + bottom, -top)  # y in rows, downwards; x in inches
    ax.set_axis_off()
    line = {"color": "0.55", "linewidth": 0.9, "solid_capstyle": "butt"}
    text = {"fontsize": size, "va": "center", "parse_math": False}
    for x, head in zip((x_paper, x_metric, x_exp, x_bar), heads):
        ax.text(x, 0.5 - top, head, fontweight="bold", color="0.35", **text)
    scale = bar_width / max(1, max(sum(b[4]) for b in blocks))

    def centred(n, centre) -> list[float]:
        """Rows of n labels centred on a block's centre."""
        return [centre + i - (n - 1) / 2 for i in range(n)]

    def spine(x_from, x_to, ys, centre):
        """An elbow from (x_from, centre) to a vertical spine at x_to − 0.15 with a tick to each row in ys."""
        x_mid = x_to - 0.15
        ax.plot([x_from, x_mid], [centre, centre], **line)
        ax.plot([x_mid, x_mid], [min(ys + [centre]), max(ys + [centre])], **line)
        for y in ys:
            ax.plot([x_mid, x_to - 0.05], [y, y], **line)

    y0 = 0.0
    for p, name, mets, exps, counts in blocks:
        rows = max(len(mets), len(exps), 1)
        centre = y0 + (rows - 1) / 2
        ax.text(x_paper, centre, name, fontweight="bold", fontsize=size + 1, va="center", parse_math=False,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "0.93", "edgecolor": "0.6"})
        x_from = x_paper + width([name], bold=True) + 0.1
        if mets:
            ys = centred(len(mets), centre)
            spine(x_from, x_metric, ys, centre)
            for y, m in zip(ys, mets):
                ax.text(x_metric, y, m, **text)
            x_from = x_metric + width(mets) + 0.1
            ax.plot([x_from - 0.05, x_from - 0.05], [ys[0], ys[-1]], **line)  # the metrics' bracket
        if exps:
            ys = centred(len(exps), centre)
            spine(x_from, x_exp, ys, centre)
            for y, e in zip(ys, exps):
                ax.text(x_exp, y, e, color="0.15", **text)
            x_from = x_exp + width(exps) + 0.1
            ax.plot([x_from - 0.05, x_from - 0.05], [ys[0], ys[-1]], **line)  # the experiments' bracket
        ax.annotate("", (x_bar - 0.05, centre), (x_from, centre),
                    arrowprops={"arrowstyle": "-|>", "color": "0.55", "linewidth": 0.9, "shrinkA": 0, "shrinkB": 0})
        if not sum(counts):
            ax.text(x_bar, centre, "no verdict yet", color="0.4", style="italic", **text)
        left = x_bar
        for verdict, n in zip(VERDICTS, counts):
            if n:
                ax.add_patch(Rectangle((left, centre - 0.3), n * scale, 0.6, facecolor=VERDICT_COLORS[verdict],
                                       edgecolor="white", linewidth=0.8))
                if n * scale >= 0.2:
                    ax.text(left + n * scale / 2, centre, str(n), ha="center", **text)
                left += n * scale
        if sum(counts):
            ax.text(left + 0.08, centre, str(sum(counts)), color="0.35", **text)
        y0 += rows + gap
    fig.legend(handles=[Patch(facecolor=VERDICT_COLORS[v], label=v) for v in VERDICTS], loc="lower center",
               ncol=3, frameon=False, fontsize=size, bbox_to_anchor=(0.5, 0.0))
    return fig

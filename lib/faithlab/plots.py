"""Shared figure helpers (matplotlib + seaborn) so that every figure of the book looks alike.

Each one-panel helper draws on ``ax`` (a new figure when None) and returns the matplotlib Axes; a helper that draws
several panels (``image_grid``, ``curves_per_level``, ``box_panels``, ``strip_and_curves``, ...) returns the Figure.
Data frames are tidy: one row per observation (e.g. per seed), with the columns named by the arguments.

One concept: the book's one figure style; the style and its check, the legend and label rules and every kind of
figure the notebooks draw (curves, bars, box panels, radar, interval dots, maps over images, a strip of maps over
curves, the study map) share it here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from faithlab._optional import require
from faithlab.metrics.registry import PAPERS
from faithlab.study.verdicts import VERDICTS

sns = require("seaborn", "faithlab.plots (figures)")

__all__ = [
    "CHAPTERS",
    "COLUMN_PX",
    "LABELS",
    "MAX_PANELS",
    "MIN_FONT_PT",
    "PAPER_NAMES",
    "SAVE_DPI",
    "VERDICT_COLORS",
    "WIDTH_IN",
    "box_panels",
    "check_style",
    "correlation_bars",
    "curves",
    "curves_per_level",
    "heatmap_overlay",
    "image_grid",
    "interval_dots",
    "key_palette",
    "label",
    "legend_outside",
    "panels",
    "paper_order",
    "radar",
    "readable",
    "set_style",
    "strip_and_curves",
    "study_map",
]

ArrayLike = torch.Tensor | np.ndarray
PALETTE = "colorblind"
ATTRIBUTION_CMAP = "jet"
CHAPTERS = tuple(PAPERS)
"""Chapter slugs of the five papers, in the book's order (:data:`faithlab.metrics.registry.PAPERS`)."""
PAPER_NAMES = {**PAPERS, "synthesis": "Synthesis", "basics": "Basics"}
"""Display name of each chapter slug: the papers' (:data:`faithlab.metrics.registry.PAPERS`) and the book's two other
chapters."""
VERDICT_COLORS = dict(zip(VERDICTS, ("#009E73", "#E69F00", "#D55E00", "#999999", "#56B4E9")))
"""One colour per verdict (Okabe-Ito, colour-blind safe), the same in every figure."""
COLUMN_PX = 772
"""Width in pixels of the book's content column: a wider figure is shrunk to it (a narrower one is shown as is)."""
SAVE_DPI = 120
"""Resolution at which :meth:`faithlab.study.artifacts.Outputs.figure` saves a PNG (its default)."""
MIN_FONT_PT = 9.0
"""Smallest font size, in points, that a reader must see once the figure is shrunk to the column."""
MAX_PANELS = 8
"""Most panels (axes) in one figure: beyond this each is too small at the column's width, so split the figure."""
WIDTH_IN = 6.4
"""Width in inches of a full-column figure (``COLUMN_PX / SAVE_DPI`` ≈ 6.43 less a margin): saved at
:data:`SAVE_DPI` it is shown at its natural size and its fonts keep their size."""
FONT_PT = {"font.size": 11.0, "axes.titlesize": 11.0, "axes.labelsize": 11.0, "xtick.labelsize": 10.0,
           "ytick.labelsize": 10.0, "legend.fontsize": 10.0, "legend.title_fontsize": 10.0, "figure.titlesize": 12.0}
"""Font sizes (points) of :func:`set_style`: all ≥ 10 pt, so a figure up to 10 % wider than the column (shrunk by
0.9) still shows ≥ 9 pt, and "small" (0.83 × 11 pt) is ≥ 9 pt in a figure that fits the column."""
LABELS = {
    "n_samples": "number of samples", "n_test": "number of test images", "n_seeds": "number of seeds",
    "morf_vs_gt": "MoRF vs ground truth", "lerf_vs_gt": "LeRF vs ground truth", "morf_vs_lerf": "MoRF vs LeRF",
    "xi": "degradation ξ", "rho": "Spearman ρ", "sigma": "σ", "alpha": "α", "beta": "β",
}
"""Words for the raw column names that reach a figure (:func:`label`)."""
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_RAW_WORDS = frozenset({"value", "values", "variable", "index", "level_0", "level_1", "xi", "rho"})


def set_style(*, context: str = "notebook") -> None:
    """Apply the book's seaborn theme: white grid, the colour-blind palette (Okabe–Ito-like ``"colorblind"``), the
    font sizes of :data:`FONT_PT`, figures :data:`WIDTH_IN` wide by default, tight saved figures."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE, rc={
        "figure.dpi": 110, "savefig.dpi": SAVE_DPI, "savefig.bbox": "tight", "figure.figsize": (WIDTH_IN, 3.6),
        "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False, **FONT_PT,
    })


def label(name: str) -> str:
    """Words for a raw column name on an axis or a legend: :data:`LABELS`, else the name with ``_`` as spaces."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    return LABELS.get(name, name.replace("_", " "))


def panels(nrows: int, ncols: int, *, height: float = 2.8, width: float = WIDTH_IN,
           legend: str | None = None, **subplots: object) -> tuple[Figure, np.ndarray]:
    """A figure of ``nrows × ncols`` panels that fits the book's column: ``width`` inches wide in all (less 1.3 in on
    the right when ``legend="right"``, for :func:`legend_outside`), ``height`` inches per row. Returns (figure, 2-D
    array of Axes); subplots: passed to ``plt.subplots`` (e.g. ``sharey=True``, ``subplot_kw``)."""
    for arg, n in (("nrows", nrows), ("ncols", ncols)):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"{arg} must be a positive integer, got {n!r}")
    if nrows * ncols > MAX_PANELS:
        raise ValueError(f"nrows × ncols = {nrows * ncols} panels is more than {MAX_PANELS}: split the figure")
    if legend not in (None, "right", "below"):
        raise ValueError(f"legend must be 'right', 'below' or None, got {legend!r}")
    width = width - 1.3 if legend == "right" else width
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, **subplots)
    return fig, axes


def _legend_entries(legends: Iterable) -> tuple[list, list[str], str | None]:
    """Handles, labels (first occurrence of each label) and the first title of matplotlib legends."""
    handles, labels, title = [], [], None
    for leg in legends:
        if title is None and leg.get_title().get_text():
            title = leg.get_title().get_text()
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            if text.get_text() not in labels:
                handles.append(handle)
                labels.append(text.get_text())
    return handles, labels, title


def legend_outside(target: Axes | Figure, *, where: str = "right", title: str | None = None,
                   ncol: int | None = None, tight_layout: bool = False) -> None:
    """Move the legend(s) of an Axes, or of all the axes of a Figure (merged, one entry per label), outside the
    data: to the right of the axes (``where="right"``) or under the figure (``"below"``, in up to 4 columns).
    Entries come from the existing legends (seaborn's included), else from the labelled artists. title: the
    legend's title (default: the existing one; ``""`` for none). tight_layout: lay the figure out (``tight_layout``)
    after the old legends are gone and before the new one is placed — laid out beforehand, panels that each carry
    a legend are narrowed by them (call this instead of ``fig.tight_layout()``)."""
    if where not in ("right", "below"):
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    if isinstance(target, Axes):
        fig, axes = target.figure, [target]
    elif isinstance(target, Figure):
        fig, axes = target, list(target.axes)
    else:
        raise TypeError(f"target must be a matplotlib Axes or Figure, got {type(target).__name__}")
    old = [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    if isinstance(target, Figure):
        old += list(fig.legends)
    handles, labels, old_title = _legend_entries(old)
    if not handles:
        for ax in axes:
            for handle, text in zip(*ax.get_legend_handles_labels()):
                if text not in labels:
                    handles.append(handle)
                    labels.append(text)
    if not handles:
        raise ValueError("target has no legend and no labelled artist: nothing to put in a legend")
    for leg in old:
        leg.remove()
    if tight_layout:
        fig.tight_layout()
    content = fig.get_tightbbox(_renderer(fig))  # inches: tick labels and axis labels may reach past the figure
    width, height = fig.get_size_inches()
    title = old_title if title is None else (title or None)
    common = {"title": title, "frameon": False, "borderaxespad": 0.0}
    if where == "right" and isinstance(target, Axes):
        target.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.03, 1.0), ncol=ncol or 1, **common)
    elif where == "right":
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(max(1.0, content.x1 / width) + 0.01, 0.5),
                   ncol=ncol or 1, **common)
    else:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, min(0.0, content.y0 / height) - 0.01),
                   ncol=ncol or min(4, len(labels)), **common)


def _renderer(fig: Figure):
    """Draw fig (layout engines run at draw time) and return its renderer."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _is_panel(ax: Axes) -> bool:
    """A panel a reader looks at: visible, not a colour bar, with an axis or something drawn."""
    if not ax.get_visible() or hasattr(ax, "_colorbar"):
        return False
    return bool(ax.axison or ax.images or ax.lines or ax.patches or ax.collections or ax.texts)


def _hidden_tick_labels(fig: Figure) -> set[int]:
    """ids of the tick labels that the last draw did not show (an axis turned off, a tick outside the view)."""
    hidden = set()
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            ticks = axis.get_major_ticks() + axis.get_minor_ticks()
            shown = set()
            if ax.axison and axis.get_visible():
                shown = {id(label) for tick in axis._update_ticks() for label, on in
                         ((tick.label1, tick.label1.get_visible()), (tick.label2, tick.label2.get_visible())) if on}
            hidden |= {id(label) for tick in ticks for label in (tick.label1, tick.label2)} - shown
    return hidden


def _overlap(a, b) -> bool:
    """Whether two display boxes share more than a pixel each way."""
    inter = a.intersection(a, b)
    return inter is not None and inter.width > 1 and inter.height > 1


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 40 else text[:39] + "…")


def check_style(fig: Figure, *, shown_width_px: int = COLUMN_PX, dpi: float = SAVE_DPI,
                min_font_pt: float = MIN_FONT_PT, max_panels: int = MAX_PANELS) -> list[str]:
    """The ways ``fig`` breaks the book's figure style, as sentences (an empty list: it passes).

    The figure is measured as saved (``dpi``, tight bounding box) and shown at most ``shown_width_px`` wide (the
    book's column; a wider PNG is shrunk to it); a point is that of a :data:`SAVE_DPI` PNG shown at its natural
    size (at another ``dpi`` the text's pixels scale with it). Checks: every visible text (titles, labels, ticks,
    legends, annotations) is ≥ ``min_font_pt`` once shrunk; no legend overlaps the data area of any axes (put it
    outside: :func:`legend_outside`); no axis label, legend title or entry, or tick label is a raw column name (snake_case
    such as ``morf_vs_gt``, or a placeholder such as ``value``: use :func:`label`); at most ``max_panels`` panels
    (colour bars and empty axes do not count); no legend covers an axis label or title; no two tick labels of an
    axis overlap."""
    from matplotlib.text import Text

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    for arg, v in (("shown_width_px", shown_width_px), ("dpi", dpi), ("min_font_pt", min_font_pt),
                   ("max_panels", max_panels)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise ValueError(f"{arg} must be a positive number, got {v!r}")
    renderer = _renderer(fig)
    saved_px = (fig.get_tightbbox(renderer).width + 2 * plt.rcParams["savefig.pad_inches"]) * dpi
    scale = min(1.0, shown_width_px / saved_px) * dpi / SAVE_DPI  # points as seen in a SAVE_DPI PNG shown as is
    problems = []

    hidden = _hidden_tick_labels(fig)
    small: dict[float, list[str]] = {}
    for t in fig.findobj(Text):
        if id(t) in hidden or not (t.get_visible() and t.get_text().strip()):
            continue
        if t.get_fontsize() * scale < min_font_pt:
            small.setdefault(round(t.get_fontsize(), 2), []).append(t.get_text())
    for size, texts in sorted(small.items()):
        problems.append(f"font {size * scale:.1f} pt as shown ({size:g} pt × {scale:.2f}: the figure is "
                        f"{saved_px:.0f} px wide at {dpi:g} dpi for a {shown_width_px} px column) "
                        f"< {min_font_pt:g} pt: "
                        f"{', '.join(_short(s) for s in texts[:3])}{' …' if len(texts) > 3 else ''} "
                        f"({len(texts)} texts)")

    axes = [ax for ax in fig.axes if _is_panel(ax)]
    legends = [(ax.get_legend(), ax) for ax in fig.axes if ax.get_legend() is not None]
    legends += [(leg, None) for leg in fig.legends]
    for leg, owner in legends:
        if not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        for ax in axes:
            if _overlap(box, ax.get_window_extent(renderer)):
                name = ax.get_title() or f"axes {fig.axes.index(ax) + 1}"
                entries = [t.get_text() for t in leg.get_texts()][:3]
                problems.append(f"legend {_short(', '.join(entries))} overlaps the data area of {_short(name)}: "
                                "put it outside (plots.legend_outside)")

    for leg, _ in legends:
        box = leg.get_window_extent(renderer) if leg.get_visible() else None
        covered = [t.get_text() for ax in fig.axes for t in (ax.xaxis.label, ax.yaxis.label, ax.title)
                   if box is not None and t.get_visible() and t.get_text().strip()
                   and _overlap(box, t.get_window_extent(renderer))]
        if covered:
            problems.append(f"legend {_short(', '.join(t.get_text() for t in leg.get_texts()[:3]))} covers the "
                            f"label {_short(covered[0])}: put it further out")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if id(t) not in hidden and t.get_text().strip()
                      and t.get_rotation() % 90 == 0]  # a slanted label's box overlaps its neighbour's by design
            boxes = [t.get_window_extent(renderer) for t in labels]
            clash = next(((a, b) for i, (a, ba) in enumerate(zip(labels, boxes))
                          for b, bb in zip(labels[i + 1:], boxes[i + 1:]) if _overlap(ba, bb)), None)
            if clash:
                problems.append(f"tick labels {_short(clash[0].get_text())} and {_short(clash[1].get_text())} "
                                "overlap: rotate them, shorten them or widen the panel")

    raw = []
    for ax in fig.axes:
        texts = [ax.get_xlabel(), ax.get_ylabel()] + [t.get_text() for t in ax.get_xticklabels()]
        texts += [t.get_text() for t in ax.get_yticklabels()]
        raw += [(ax, s) for s in texts]
    for leg, _ in legends:
        raw += [(None, leg.get_title().get_text())] + [(None, t.get_text()) for t in leg.get_texts()]
    seen = set()
    for _, s in raw:
        if "$" in s or s in seen:
            continue
        words = [w.strip(".,:;()[]") for w in s.split()]
        if any(_SNAKE.match(w) for w in words) or s.strip().lower() in _RAW_WORDS:
            seen.add(s)
            problems.append(f"raw column name {_short(s)} as a label: say it in words (plots.label)")

    distinct = {tuple(np.round(ax.get_position().bounds, 4)) for ax in axes}  # a twinx shares its panel
    if len(distinct) > max_panels:
        problems.append(f"{len(distinct)} panels in one figure (more than {max_panels}): split it or show fewer")
    return problems


def _axes(ax: Axes | None, figsize: tuple[float, float] = (5.0, 3.5)) -> Axes:
    return plt.subplots(figsize=figsize)[1] if ax is None else ax


def _check_columns(df: pd.DataFrame, **columns: str | None) -> None:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    for arg, col in columns.items():
        if col is not None and col not in df.columns:
            raise ValueError(f"{arg}={col!r} is not a column of df; columns: {list(df.columns)}")


def curves(df: pd.DataFrame, *, x: str, y: str, hue: str | None = None, band: str | None = "sd",
           ax: Axes | None = None, **kwargs) -> Axes:
    """Mean of ``y`` against ``x``, one line per ``hue`` level, with a ±1 standard deviation (``band="sd"``) or
    standard error (``"se"``) band over the rows sharing (x, hue), or no band (None). kwargs go to
    ``seaborn.lineplot`` (e.g. ``style``, ``markers``)."""
    if band not in ("sd", "se", None):
        raise ValueError(f"band must be 'sd', 'se' or None, got {band!r}")
    _check_columns(df, x=x, y=y, hue=hue)
    ax = _axes(ax)
    sns.lineplot(data=df, x=x, y=y, hue=hue, errorbar=band, ax=ax, **kwargs)
    return ax


def curves_per_level(df: pd.DataFrame, *, methods: Sequence[str], title: str = "") -> Figure:
    """F-Fidelity's curves per noise level (the data of its Tables 14–23): one panel per method (rows) and curve
    (columns "+" and "−"), the mean ``score`` against the fraction removed (``level``), one line per noise level
    ``xi`` (viridis). ``df``: the rows of one study (columns method, curve, level, xi, score); ``title`` starts each
    panel's title (e.g. the explainer)."""
    _check_columns(df, x="level", y="score", hue="xi")
    fig, axes = panels(len(methods), 2, height=1.9, legend="right", sharex=True)
    for j, sign in enumerate(("+", "−")):
        for c, name in enumerate(methods):
            ax = axes[c][j]
            part = df[(df["method"] == name) & (df["curve"] == sign)]
            curves(part, x="level", y="score", hue="xi", band=None, ax=ax, palette="viridis",
                   legend=(j == 0 and c == 0))
            ax.set_title(f"{title} {name} {sign}".strip())
            ax.set_xlabel("fraction removed" if c == len(methods) - 1 else "")
            ax.set_ylabel("score")
    fig.tight_layout()
    legend_outside(fig, title=label("xi"))
    return fig


def correlation_bars(df: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax: Axes | None = None,
                     **kwargs) -> Axes:
    """Bars of the mean correlation ``y`` per ``x`` (and ``hue``), ±1 sd over the rows, on a [−1, 1] axis with a
    zero line. kwargs go to ``seaborn.barplot``."""
    _check_columns(df, x=x, y=y, hue=hue)
    ax = _axes(ax)
    sns.barplot(data=df, x=x, y=y, hue=hue, errorbar="sd", ax=ax, **kwargs)
    ax.axhline(0.0, color="0.3", linewidth=0.8)
    ax.set_ylim(-1.05, 1.05)
    return ax


def box_panels(df: pd.DataFrame, *, x: str, y: str, hue: str, by: str, hue_order: Sequence[str] | None = None,
               title: str = "", ylim: tuple[float, float] | None = None, height: float = 2.6) -> Figure:
    """Box plots of ``y`` per ``x`` (and ``hue``), one panel per value of ``by`` (rows, in order of appearance,
    titled "<title>: <value>"), a shared x axis with its labels turned 45° and one legend below."""
    _check_columns(df, x=x, y=y, hue=hue, by=by)
    names = list(dict.fromkeys(df[by]))
    fig, axes = panels(len(names), 1, height=height, sharex=True)
    for ax, name in zip(axes[:, 0], names):
        sns.boxplot(data=df[df[by] == name], x=x, y=y, hue=hue, hue_order=hue_order, ax=ax, fliersize=2)
        ax.set(title=f"{title}: {name}" if title else str(name), xlabel="", ylim=ylim)
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    legend_outside(fig, where="below")
    return fig


def strip_and_curves(df: pd.DataFrame, images: Sequence[ArrayLike], *, x: str, panel: str, order: Sequence[str],
                     titles: Sequence[str], xlabel: str, value_label: str, y: str = "value", ylabel: str | None = None,
                     band: str | None = None, names: Mapping[str, str] | None = None, ncols: int = 3) -> Figure:
    """One figure: ``images`` side by side in one strip (top, captioned ``titles``, with a colour bar named
    ``value_label`` on the first image's range, values beyond it clipped), then the mean of ``y`` against ``x``
    in one panel per value of ``panel`` in ``order`` (titled by ``names``), ``ncols`` per row, with its ``band``
    as in :func:`curves`; the first column's y axes are named ``ylabel`` (default :func:`label` of ``y``)."""
    _check_columns(df, x=x, y=y, panel=panel)
    shown_images = [_numpy(image, "images") for image in images]
    nrows = -(-len(order) // ncols)
    fig = plt.figure(figsize=(WIDTH_IN, 1.6 + 2.1 * nrows))
    grid = fig.add_gridspec(nrows + 1, ncols, height_ratios=[1.3] + [2.1] * nrows)
    strip_ax = fig.add_subplot(grid[0, :])
    side = shown_images[0].shape[-1]
    gap = max(1, side // 8)
    strip = np.full((shown_images[0].shape[0], len(shown_images) * (side + gap) - gap), np.nan)
    for i, image in enumerate(shown_images):
        strip[:, i * (side + gap):i * (side + gap) + side] = image
    low, high = float(np.min(shown_images[0])), float(np.max(shown_images[0]))
    drawn = strip_ax.imshow(strip, cmap="viridis", vmin=low, vmax=high)
    strip_ax.grid(False)
    strip_ax.set(xticks=[i * (side + gap) + (side - 1) / 2 for i in range(len(shown_images))], yticks=[])
    strip_ax.set_xticklabels(titles)
    strip_ax.tick_params(axis="x", length=0)
    for spine in strip_ax.spines.values():
        spine.set_visible(False)
    clipped = (np.nanmin(strip) < low, np.nanmax(strip) > high)
    fig.colorbar(drawn, ax=strip_ax, fraction=0.04, pad=0.01, label=value_label,
                 extend={(True, True): "both", (True, False): "min", (False, True): "max"}.get(clipped, "neither"))
    axes = np.array([[fig.add_subplot(grid[1 + r, c]) for c in range(ncols)] for r in range(nrows)])
    for ax in axes.flat[len(order):]:
        ax.axis("off")
    for ax, kind in zip(axes.flat, order):
        curves(df[df[panel] == kind], x=x, y=y, band=band, ax=ax)
        ax.set(title=(names or {}).get(kind, kind), xlabel=xlabel,
               ylabel=(label(y) if ylabel is None else ylabel) if ax in axes[:, 0] else "")
    fig.tight_layout()
    return fig


def radar(values: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
          highlight: str | None = "Random") -> Axes:
    """Radar chart: one closed polygon per row of ``values`` (rows = methods, columns = axes, e.g. metrics).

    values must already be rescaled to [0, 1] with outward = better (e.g. SaCo's Fig. 4); the row named
    ``highlight`` is drawn thick and black, the others in the colour-blind palette. ``ax`` must be a polar Axes (a
    new one when None). No legend is drawn: call :func:`legend_outside` on the Axes or, for several radars, the
    Figure."""
    if not isinstance(values, pd.DataFrame):
        raise TypeError(f"values must be a pandas DataFrame, got {type(values).__name__}")
    if values.empty or values.shape[1] < 3:
        raise ValueError(f"values must have at least one row and three columns, got shape {values.shape}")
    v = values.to_numpy(dtype=np.float64)
    if not np.isfinite(v).all() or v.min() < 0.0 or v.max() > 1.0:
        raise ValueError("values must be finite and within [0, 1] (rescale each axis first)")
    if ax is None:
        ax = plt.subplots(figsize=(4.5, 4.5), subplot_kw={"projection": "polar"})[1]
    elif ax.name != "polar":
        raise ValueError(f"ax must be a polar Axes (projection='polar'), got {ax.name!r}")
    angles = np.linspace(0.0, 2.0 * np.pi, v.shape[1], endpoint=False)
    closed = np.append(angles, angles[0])
    colors = sns.color_palette(PALETTE)  # 10 colour-blind-safe colours; beyond 10 rows the line style changes
    others = 0
    for name, row in zip(values.index, v):
        strong = name == highlight
        style = {"color": "black", "linewidth": 2.5, "zorder": 3} if strong else {
            "color": colors[others % len(colors)], "linestyle": ("-", "--", ":")[others // len(colors) % 3],
            "linewidth": 1.4, "zorder": 2}
        others += not strong
        ax.plot(closed, np.append(row, row[0]), label=str(name), **style)
    ax.set_xticks(angles, [str(c) for c in values.columns])
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], [])
    if title is not None:
        ax.set_title(title)
    return ax


def key_palette(names: Sequence[str], *, key: Sequence[str] = (), best: Sequence[str] = (),
                reference: str | None = "Random") -> dict[str, dict]:
    """Line styles for a plot of many methods in which a few matter: ``{name: matplotlib kwargs}``.

    key: the methods the figure is about (e.g. the paper's own), in strong distinct colours and thick lines; best:
    more methods to pick out (e.g. the strongest competitors), each in its own strong colour, thinner; reference:
    the chance baseline (e.g. Random), grey and dashed; every other name in a muted, light colour with a thin line."""
    names = _labels(names, "names")
    if isinstance(best, str):
        best = [best]
    strong = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]  # Okabe–Ito
    muted = sns.color_palette("pastel", 10)
    styles, k, m = {}, 0, 0
    for name in names:
        if name == reference:
            styles[name] = {"color": "0.35", "linestyle": "--", "linewidth": 1.8, "zorder": 3}
        elif name in key or name in best:
            styles[name] = {"color": strong[k % len(strong)], "linewidth": 2.4 if name in key else 1.8,
                            "zorder": 4 if name in key else 3.5}
            k += 1
        else:
            styles[name] = {"color": muted[m % len(muted)], "linewidth": 1.1, "zorder": 2,
                            "linestyle": ("-", ":", "-.")[m // len(muted) % 3]}
            m += 1
    return styles


def interval_dots(df: pd.DataFrame, *, y: str, x: str, low: str, high: str, ax: Axes | None = None,
                  order: Sequence[str] | None = None, highlight: str | None = "Random", zero: float | None = None,
                  **kwargs) -> Axes:
    """Dot plot with intervals: one row per ``y`` level (in ``order``, top to bottom), the estimate ``x`` as a
    dot and the interval [``low``, ``high``] as a line; the row named ``highlight`` in black, the others in the
    palette's first colour; a dashed vertical line at ``zero`` when given. kwargs go to ``Axes.plot`` of the dots."""
    _check_columns(df, y=y, x=x, low=low, high=high)
    ax = _axes(ax)
    order = list(dict.fromkeys(df[y])) if order is None else list(order)
    rows = df.set_index(y)
    colour = sns.color_palette(PALETTE)[0]
    for i, name in enumerate(order):
        if name not in rows.index:
            continue
        r = rows.loc[name]
        c = "black" if name == highlight else colour
        ax.plot([r[low], r[high]], [i, i], color=c, linewidth=1.6, solid_capstyle="butt", zorder=2)
        ax.plot([r[x]], [i], "o", color=c, markersize=5, zorder=3, **kwargs)
    if zero is not None:
        ax.axvline(zero, color="0.5", linestyle="--", linewidth=0.9, zorder=1)
    ax.set_yticks(range(len(order)), order)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    return ax


def readable(df: pd.DataFrame, *, digits: int = 3, names: Mapping[str, str] | None = None):
    """A table as a reader sees it: column (and index) names in words (``names``, else :func:`label`), booleans as
    yes/no, and numbers shown to ``digits`` decimals. Returns a pandas Styler (the frame itself is unchanged)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    names = dict(names or {})

    def word(c):
        return names.get(c, label(c)) if isinstance(c, str) else c

    shown = df.copy()
    for c in shown.columns:
        if shown[c].dtype == bool or (shown[c].dtype == object and shown[c].map(
                lambda v: isinstance(v, bool | np.bool_)).all() and len(shown[c])):
            shown[c] = shown[c].map({True: "yes", False: "no"})
    shown = shown.rename(columns=word)
    shown.index = shown.index.set_names([word(n) for n in shown.index.names])
    if isinstance(shown.columns, pd.MultiIndex):
        shown.columns = shown.columns.set_names([word(n) for n in shown.columns.names])
    else:
        shown.columns.name = word(shown.columns.name)
    return shown.style.format(precision=digits, na_rep="")


def _numpy(value: ArrayLike, name: str) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64).numpy()
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(value).__name__}")


def _display_image(image: ArrayLike, mean: Sequence[float] | None, std: Sequence[float] | None) -> np.ndarray:
    """(C, H, W) or (H, W) → (H, W, 3|1→2-D) in [0, 1]: un-normalised by mean/std when given, else min-max scaled."""
    img = _numpy(image, "image")
    if img.ndim == 3:
        if img.shape[0] not in (1, 3):
            raise ValueError(f"image must be (C, H, W) with C in (1, 3) or (H, W), got shape {img.shape}")
        img = img.transpose(1, 2, 0)
    elif img.ndim != 2:
        raise ValueError(f"image must be (C, H, W) or (H, W), got shape {img.shape}")
    if (mean is None) != (std is None):
        raise ValueError("mean and std must be given together")
    if mean is not None:
        channels = 1 if img.ndim == 2 else img.shape[-1]
        m, s = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
        if m.size not in (1, channels) or s.size not in (1, channels):
            raise ValueError(f"mean and std must have 1 or {channels} values, got {m.size} and {s.size}")
        img = np.clip(img * s + m, 0.0, 1.0)
    else:
        lo, hi = img.min(), img.max()
        img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    return img[..., 0] if img.ndim == 3 and img.shape[-1] == 1 else img


def heatmap_overlay(image: ArrayLike, attribution: ArrayLike, *, ax: Axes | None = None, alpha: float = 0.5,
                    cmap: str = ATTRIBUTION_CMAP, mean: Sequence[float] | None = None,
                    std: Sequence[float] | None = None, vmin: float | None = None, vmax: float | None = None,
                    colorbar: str | None = None) -> Axes:
    """Show ``image`` (C, H, W) or (H, W) with ``attribution`` (H, W) (or (1, H, W)) on top at opacity ``alpha``.

    mean/std: per-channel normalisation to undo for display (else the image is min-max scaled). vmin/vmax: the
    colour scale of the attribution (give the same to every map that shares a scale). colorbar: when a string, a
    colour bar with that label beside the map (opaque, so that it reads the map's values)."""
    img = _display_image(image, mean, std)
    attr = _numpy(attribution, "attribution")
    if attr.ndim == 3 and attr.shape[0] == 1:
        attr = attr[0]
    if attr.shape != img.shape[:2]:
        raise ValueError(f"attribution must be (H, W) = {img.shape[:2]} to match image, got shape {attr.shape}")
    ax = _axes(ax, (3.0, 3.0))
    ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0.0, vmax=1.0)
    im = ax.imshow(attr, cmap=cmap, alpha=alpha, vmin=vmin, vmax=vmax)
    ax.set_axis_off()
    if colorbar is not None:
        from matplotlib.cm import ScalarMappable

        shown = ScalarMappable(norm=im.norm, cmap=im.get_cmap())
        bar = ax.figure.colorbar(shown, ax=ax, fraction=0.046, pad=0.03)
        bar.set_label(colorbar)
        im.colorbar = bar
    return ax


def image_grid(images: ArrayLike | Sequence[ArrayLike], *, titles: Sequence[str] | None = None, ncols: int = 4,
               attributions: ArrayLike | Sequence[ArrayLike] | None = None, size: float = 2.0,
               colorbar: str | None = None, **overlay: object) -> Figure:
    """Grid of images (N × (C, H, W) or (H, W)), optionally with one attribution overlay each and a title each;
    ``size`` inches per image, less when ``ncols`` images would be wider than the column (:data:`WIDTH_IN`).

    overlay: ``alpha``, ``cmap``, ``mean``, ``std`` as in :func:`heatmap_overlay`. colorbar: with attributions, a
    label for one colour bar shared by every map (:func:`_shared_colorbar`: each map shown from its lowest, 0, to
    its highest value, 1). Returns the Figure."""
    n = len(images)
    if titles is not None and len(titles) != n:
        raise ValueError(f"titles must have one entry per image ({n}), got {len(titles)}")
    if attributions is not None and len(attributions) != n:
        raise ValueError(f"attributions must have one map per image ({n}), got {len(attributions)}")
    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols <= 0:
        raise ValueError(f"ncols must be a positive integer, got {ncols!r}")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    size = min(size, WIDTH_IN / ncols)  # the whole grid fits the book's column
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_axis_off()
            continue
        if attributions is None:
            show_image(images[i], ax=ax, mean=overlay.get("mean"), std=overlay.get("std"))
        elif colorbar is not None:
            heatmap_overlay(images[i], _unit_range(attributions[i]), ax=ax, vmin=0.0, vmax=1.0, **overlay)
        else:
            heatmap_overlay(images[i], attributions[i], ax=ax, **overlay)
        if titles is not None:
            ax.set_title(titles[i], fontsize=FONT_PT["xtick.labelsize"])
    fig.tight_layout()
    if colorbar is not None and attributions is not None:
        _shared_colorbar(fig, colorbar, overlay.get("cmap", ATTRIBUTION_CMAP))
    return fig


def _unit_range(attribution: ArrayLike) -> np.ndarray:
    """A map rescaled to [0, 1] from its own lowest to highest value (a constant map: zeros), for display."""
    a = _numpy(attribution, "attribution").astype(float)
    low, high = float(np.nanmin(a)), float(np.nanmax(a))
    return np.zeros_like(a) if not high > low else (a - low) / (high - low)


def _shared_colorbar(fig: Figure, label: str, cmap: str) -> None:
    """One colour bar at the right edge of ``fig`` for maps shown on the 0–1 scale of :func:`_unit_range`; the panels
    make room for it (placed after ``tight_layout``, which would not account for it)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    fig.subplots_adjust(right=0.86)
    cax = fig.add_axes((0.89, 0.15, 0.025, 0.7))
    bar = fig.colorbar(ScalarMappable(norm=Normalize(0.0, 1.0), cmap=cmap), cax=cax)
    bar.set_label(label)


def show_image(image: ArrayLike, *, ax: Axes | None = None, mean: Sequence[float] | None = None,
               std: Sequence[float] | None = None) -> Axes:
    """Show ``image`` (C, H, W) or (H, W) without axes: un-normalised by mean/std when given, else min-max
    scaled."""
    img = _display_image(image, mean, std)
    ax = _axes(ax, (3.0, 3.0))
    ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0.0, vmax=1.0)
    ax.set_axis_off()
    return ax


def map_columns(images: ArrayLike | Sequence[ArrayLike], maps: Mapping[str, ArrayLike | Sequence[ArrayLike]], *,
                image_title: str = "image", height: float | None = None, colorbar: str | None = None,
                **overlay: object) -> Figure:
    """One row per image: the image, then one overlay per entry of ``maps`` (``{column title: one (H, W) map per
    image}``), e.g. an explainer's maps on two models side by side, or one map degraded at several levels.
    height: inches per row (default: square panels across the column, plus room for the titles). overlay:
    ``alpha``, ``cmap``, ``mean``, ``std`` as in :func:`heatmap_overlay`. colorbar: a label for one colour bar shared
    by every map, each shown from its lowest (0) to its highest (1) value. Returns the Figure."""
    n = len(images)
    if not maps:
        raise ValueError("maps must hold at least one column {title: maps}")
    short = {k: len(v) for k, v in maps.items() if len(v) != n}
    if short:
        raise ValueError(f"maps must hold one map per image ({n}) in every column, got {short}")
    ncols = 1 + len(maps)
    height = WIDTH_IN / ncols + 0.3 if height is None else height
    # thumbnails, as image_grid's: not the plot panels that panels() caps at MAX_PANELS
    fig, axes = plt.subplots(n, ncols, figsize=(WIDTH_IN, height * n), squeeze=False)
    for i in range(n):
        show_image(images[i], ax=axes[i, 0], mean=overlay.get("mean"), std=overlay.get("std"))
        for j, (title, column) in enumerate(maps.items(), start=1):
            if colorbar is not None:
                heatmap_overlay(images[i], _unit_range(column[i]), ax=axes[i, j], vmin=0.0, vmax=1.0, **overlay)
            else:
                heatmap_overlay(images[i], column[i], ax=axes[i, j], **overlay)
            if i == 0:
                axes[i, j].set_title(title)
        if i == 0:
            axes[i, 0].set_title(image_title)
    fig.tight_layout()
    if colorbar is not None:
        _shared_colorbar(fig, colorbar, overlay.get("cmap", ATTRIBUTION_CMAP))
    return fig


def paper_order(papers: Iterable[str]) -> list[str]:
    """Distinct paper slugs in the book's chapter order (:data:`CHAPTERS`), then any other slug alphabetically."""
    if isinstance(papers, str) or not isinstance(papers, Iterable):
        raise TypeError(f"papers must be an iterable of slugs, got {papers!r:.60}")
    unique = set(map(str, papers))
    return [p for p in CHAPTERS if p in unique] + sorted(unique - set(CHAPTERS))


def _labels(values, name: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must be a sequence of strings, got {values!r:.60}")
    return list(values)


def study_map(scorecard: pd.DataFrame, metrics: Mapping[str, Sequence[str]], *,
              names: Mapping[str, str] | None = None) -> Figure:
    """Map of the study for the book's front page, left to right: papers → their metrics → their experiments
    (notebooks) → a stacked bar of their claims' verdicts, one block of rows per paper in :func:`paper_order`.

    scorecard: one row per claim with at least the columns ``paper`` (chapter slug), ``experiment`` and ``verdict``
    (one of :data:`VERDICTS`); it may be empty. metrics: ``{paper slug: metric labels}``. names: ``{slug: display
    name}`` (default :data:`PAPER_NAMES`; a slug without one is shown as is). Papers are those of ``metrics`` and of
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
    metrics = {str(p): _labels(m, f"metrics[{p!r}]") for p, m in metrics.items()}
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

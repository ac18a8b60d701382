"""The book's one figure style: its constants (column width, resolution, fonts, most panels), the seaborn theme
(:func:`set_style`), words for raw column names (:func:`label`), a figure of panels that fits the column
(:func:`panels`), the legend outside the data (:func:`legend_outside`) and the style's check (:func:`check_style`)."""

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

sns = require("seaborn", "faithlab.plots (figures)")

ArrayLike = torch.Tensor | np.ndarray
PALETTE = "colorblind"
ATTRIBUTION_CMAP = "jet"
COLUMN_PX = 772
"""Width in pixels of the book's content column: a wider figure is shrunk to it (a narrower one is shown as is)."""
SAVE_DPI = 120
"""Resolution at which a figure of this style is saved as a PNG (the default of the study's writer too)."""
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


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (5.0, 3.5)) -> Axes:
    """``ax``, or the Axes of a new ``figsize`` figure when None (the one-panel helpers' default)."""
    return plt.subplots(figsize=figsize)[1] if ax is None else ax


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

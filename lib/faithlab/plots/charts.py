"""The kinds of chart the notebooks draw in the book's style (:mod:`faithlab.plots.style`): curves, bars, box
panels, a strip of maps over curves, radar, line styles that pick out a few methods, interval dots, and a table as a
reader sees it (:func:`readable`)."""

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

from faithlab.plots.maps import as_numpy
from faithlab.plots.style import PALETTE, WIDTH_IN, ArrayLike, label, legend_outside, new_axes, panels

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
    ax = new_axes(ax)
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
    ax = new_axes(ax)
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
    as in :func:`curves`; the first column's y axes are named ``ylabel`` (default :func:`~faithlab.plots.style.label` of ``y``)."""
    _check_columns(df, x=x, y=y, panel=panel)
    shown_images = [as_numpy(image, "images") for image in images]
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
    new one when None). No legend is drawn: call :func:`~faithlab.plots.style.legend_outside` on the Axes or, for several radars, the
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
    names = string_list(names, "names")
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
    ax = new_axes(ax)
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
    """A table as a reader sees it: column (and index) names in words (``names``, else :func:`~faithlab.plots.style.label`), booleans as
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


def string_list(values, name: str) -> list[str]:
    """``values`` as a list when it is a sequence of strings (not one string); TypeError naming ``name`` otherwise."""
    if isinstance(values, str) or not isinstance(values, Sequence) or not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must be a sequence of strings, got {values!r:.60}")
    return list(values)


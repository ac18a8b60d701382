"""Shared figure helpers (matplotlib + seaborn) so that every figure of the book looks alike.

Each helper draws on ``ax`` (a new figure when None) and returns the matplotlib Axes (``image_grid``: the Figure).
Data frames are tidy: one row per observation (e.g. per seed), with the columns named by the arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from faithlab.verdicts import VERDICTS

__all__ = ["set_style", "curves", "correlation_bars", "radar", "heatmap_overlay", "image_grid", "study_map",
           "paper_order", "PAPER_NAMES", "CHAPTERS", "VERDICT_COLORS"]

ArrayLike = torch.Tensor | np.ndarray
PALETTE = "colorblind"
ATTRIBUTION_CMAP = "jet"
CHAPTERS = ("ffidelity", "fewclass", "saco", "reco_mege", "trace")
"""Chapter slugs of the five papers, in the book's order."""
PAPER_NAMES = {"ffidelity": "F-Fidelity", "fewclass": "Few-class Fidelity", "saco": "SaCo", "reco_mege": "ReCo / MeGe",
               "trace": "TRACE", "synthesis": "Synthesis", "basics": "Basics"}
"""Display name of each chapter slug (the one copy: the study map, the scorecard summary)."""
VERDICT_COLORS = dict(zip(VERDICTS, ("#009E73", "#E69F00", "#D55E00", "#999999")))
"""One colour per verdict (Okabe-Ito, colour-blind safe), the same in every figure."""


def set_style(*, context: str = "notebook") -> None:
    """Apply the book's seaborn theme (white grid, colour-blind palette, tight saved figures)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE, rc={
        "figure.dpi": 110, "savefig.dpi": 150, "savefig.bbox": "tight",
        "axes.spines.top": False, "axes.spines.right": False,
    })


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


def radar(values: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None,
          highlight: str | None = "Random") -> Axes:
    """Radar chart: one closed polygon per row of ``values`` (rows = methods, columns = axes, e.g. metrics).

    values must already be rescaled to [0, 1] with outward = better (e.g. SaCo's Fig. 4); the row named
    ``highlight`` is drawn thick and black. ``ax`` must be a polar Axes (a new one when None)."""
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
    colors = sns.color_palette("tab20", len(values))
    for (name, row), color in zip(zip(values.index, v), colors):
        strong = name == highlight
        ax.plot(closed, np.append(row, row[0]), label=str(name), color="black" if strong else color,
                linewidth=2.5 if strong else 1.2, zorder=3 if strong else 2)
    ax.set_xticks(angles, [str(c) for c in values.columns])
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], [])
    if title is not None:
        ax.set_title(title)
    return ax


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
                    std: Sequence[float] | None = None) -> Axes:
    """Show ``image`` (C, H, W) or (H, W) with ``attribution`` (H, W) (or (1, H, W)) on top at opacity ``alpha``.

    mean/std: per-channel normalisation to undo for display (else the image is min-max scaled)."""
    img = _display_image(image, mean, std)
    attr = _numpy(attribution, "attribution")
    if attr.ndim == 3 and attr.shape[0] == 1:
        attr = attr[0]
    if attr.shape != img.shape[:2]:
        raise ValueError(f"attribution must be (H, W) = {img.shape[:2]} to match image, got shape {attr.shape}")
    ax = _axes(ax, (3.0, 3.0))
    ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0.0, vmax=1.0)
    ax.imshow(attr, cmap=cmap, alpha=alpha)
    ax.set_axis_off()
    return ax


def image_grid(images: ArrayLike | Sequence[ArrayLike], *, titles: Sequence[str] | None = None, ncols: int = 4,
               attributions: ArrayLike | Sequence[ArrayLike] | None = None, size: float = 2.0,
               **overlay: object) -> Figure:
    """Grid of images (N × (C, H, W) or (H, W)), optionally with one attribution overlay each and a title each.

    overlay: ``alpha``, ``cmap``, ``mean``, ``std`` as in :func:`heatmap_overlay`. Returns the Figure."""
    n = len(images)
    if titles is not None and len(titles) != n:
        raise ValueError(f"titles must have one entry per image ({n}), got {len(titles)}")
    if attributions is not None and len(attributions) != n:
        raise ValueError(f"attributions must have one map per image ({n}), got {len(attributions)}")
    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols <= 0:
        raise ValueError(f"ncols must be a positive integer, got {ncols!r}")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_axis_off()
            continue
        if attributions is None:
            img = _display_image(images[i], overlay.get("mean"), overlay.get("std"))
            ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0.0, vmax=1.0)
            ax.set_axis_off()
        else:
            heatmap_overlay(images[i], attributions[i], ax=ax, **overlay)
        if titles is not None:
            ax.set_title(titles[i], fontsize="small")
    fig.tight_layout()
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
    heads = ("paper", "metrics", "experiments (notebooks)", "verdicts (claims)")
    x_paper = 0.1
    x_metric = x_paper + width([b[1] for b in blocks], bold=True) + 0.55
    x_exp = x_metric + max(width([m for b in blocks for m in b[2]]), width(heads[1:2], bold=True)) + 0.55
    x_bar = x_exp + max(width([e for b in blocks for e in b[3]]), width(heads[2:3], bold=True)) + 0.55
    bar_width = 2.4
    n_rows = sum(max(len(b[2]), len(b[3]), 1) for b in blocks) + gap * (len(blocks) - 1)
    top, bottom = 1.6, 1.8  # rows for the column heads and for the legend
    fig_width, fig_height = x_bar + bar_width + 0.8, (top + n_rows + bottom) * row
    fig = Figure(figsize=(fig_width, fig_height))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig_width)
    ax.set_ylim(n_rows + bottom, -top)  # y in rows, downwards; x in inches
    ax.set_axis_off()
    line = dict(color="0.55", linewidth=0.9, solid_capstyle="butt")
    text = dict(fontsize=size, va="center", parse_math=False)
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
                bbox=dict(boxstyle="round,pad=0.3", facecolor="0.93", edgecolor="0.6"))
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
                    arrowprops=dict(arrowstyle="-|>", color="0.55", linewidth=0.9, shrinkA=0, shrinkB=0))
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
    ax.legend(handles=[Patch(facecolor=VERDICT_COLORS[v], label=v) for v in VERDICTS], loc="lower center",
              ncol=len(VERDICTS), frameon=False, fontsize=size, bbox_to_anchor=(0.5, 0.0))
    return fig

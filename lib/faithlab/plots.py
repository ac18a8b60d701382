"""Shared figure helpers (matplotlib + seaborn) so that every figure of the book looks alike.

Each helper draws on ``ax`` (a new figure when None) and returns the matplotlib Axes (``image_grid``: the Figure).
Data frames are tidy: one row per observation (e.g. per seed), with the columns named by the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["set_style", "curves", "correlation_bars", "radar", "heatmap_overlay", "image_grid"]

ArrayLike = torch.Tensor | np.ndarray
PALETTE = "colorblind"
ATTRIBUTION_CMAP = "jet"


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

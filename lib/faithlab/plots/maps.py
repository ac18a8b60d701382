"""Images and attribution maps in the book's style: an image as shown (:func:`show_image`), a map over an image
(:func:`heatmap_overlay`), a grid of them (:func:`image_grid`) and one row of maps per image (:func:`map_columns`)."""

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

from faithlab.plots.style import ATTRIBUTION_CMAP, FONT_PT, WIDTH_IN, ArrayLike, new_axes

def as_numpy(value: ArrayLike, name: str) -> np.ndarray:
    """An image or a map as a float64 numpy array (a tensor is detached and moved to the CPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64).numpy()
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(value).__name__}")


def _display_image(image: ArrayLike, mean: Sequence[float] | None, std: Sequence[float] | None) -> np.ndarray:
    """(C, H, W) or (H, W) → (H, W, 3|1→2-D) in [0, 1]: un-normalised by mean/std when given, else min-max scaled."""
    img = as_numpy(image, "image")
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
    attr = as_numpy(attribution, "attribution")
    if attr.ndim == 3 and attr.shape[0] == 1:
        attr = attr[0]
    if attr.shape != img.shape[:2]:
        raise ValueError(f"attribution must be (H, W) = {img.shape[:2]} to match image, got shape {attr.shape}")
    ax = new_axes(ax, (3.0, 3.0))
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
    ``size`` inches per image, less when ``ncols`` images would be wider than the column (:data:`~faithlab.plots.style.WIDTH_IN`).

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
    a = as_numpy(attribution, "attribution").astype(float)
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
    ax = new_axes(ax, (3.0, 3.0))
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


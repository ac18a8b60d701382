"""The report's figures (matplotlib, imported when called: the ``report`` extra): each explainer's map over an
image (:func:`maps_figure`) and the ranks as a heat map (:func:`ranks_figure`), saved by :func:`save_figure`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import torch

__all__ = ["maps_figure", "ranks_figure", "MAP_SCALE"]


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
    it, side by side, with one colour bar (:func:`faithlab.plots.maps.map_columns`; each map from its lowest to its
    highest value) → a matplotlib Figure. normalisation: the ``(mean, std)`` x was normalised with (None: the image
    is shown min-max scaled; a grey image shows its first channel)."""
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


def save_figure(fig, path: Path) -> None:
    """Save ``fig`` as the report's PNG at ``path`` and close it."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)

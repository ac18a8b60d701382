"""Shared figure helpers (matplotlib + seaborn) so that every figure of the book looks alike.

Each one-panel helper draws on ``ax`` (a new figure when None) and returns the matplotlib Axes; a helper that draws
several panels (``image_grid``, ``curves_per_level``, ``box_panels``, ``strip_and_curves``, ...) returns the Figure.
Data frames are tidy: one row per observation (e.g. per seed), with the columns named by the arguments.

One concept: the book's one figure style, in three parts:

- :mod:`faithlab.plots.style`: the style and its check, the legend and label rules, a figure of panels;
- :mod:`faithlab.plots.charts`: curves, bars, box panels, radar, interval dots, a strip of maps over curves, tables
  as a reader sees them;
- :mod:`faithlab.plots.maps`: images and attribution maps over them.

The study's own figures (the study map, coloured by verdict) are drawn by the study, in this style.
"""

from __future__ import annotations

from faithlab.plots import charts, maps, style
from faithlab.plots.charts import (box_panels, correlation_bars, curves, curves_per_level, interval_dots,
                                   key_palette, radar, readable, strip_and_curves)
from faithlab.plots.maps import heatmap_overlay, image_grid, map_columns, show_image
from faithlab.plots.style import (ATTRIBUTION_CMAP, COLUMN_PX, FONT_PT, LABELS, MAX_PANELS, MIN_FONT_PT, PALETTE,
                                  SAVE_DPI, WIDTH_IN, check_style, label, legend_outside, panels, set_style, sns)

__all__ = [
    "ATTRIBUTION_CMAP",
    "COLUMN_PX",
    "FONT_PT",
    "LABELS",
    "MAX_PANELS",
    "MIN_FONT_PT",
    "PALETTE",
    "SAVE_DPI",
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
    "map_columns",
    "panels",
    "radar",
    "readable",
    "set_style",
    "show_image",
    "strip_and_curves",
]

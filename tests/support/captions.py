"""The book's caption check (used by tests/faithlab_study/book/test_build.py): the panel positions a figure's caption
names ("(left)", "top row", ...) against the panel grid :meth:`faithlab_study.artifacts.Outputs.figure` recorded in its
PNG."""

from __future__ import annotations

import re
from pathlib import Path

from faithlab_study.artifacts import PANELS_KEY

POSITION_WORDS = re.compile(
    r"\((?:the )?(?P<a>top|bottom|left|right)(?: (?:row|column|panels?|half|rows|columns))?\)"
    r"|\b(?P<b>top|bottom|left|right)(?= (?:row|column|panels?|half|rows|columns)\b)"
    r"|\b(?P<c>left|right|top|bottom)/(?:left|right|top|bottom)\b", re.IGNORECASE)
"""A caption's words that name a panel's position: "(top)", "(left panel)", "bottom row", "left/right"."""


def caption_positions(caption: str) -> set[str]:
    """The positions a caption names (:data:`POSITION_WORDS`), as ``{"row", "column"}``: top/bottom need rows,
    left/right columns."""
    need = set()
    for m in POSITION_WORDS.finditer(caption):
        word = (m.group("a") or m.group("b") or m.group("c")).lower()
        need.add("row" if word in ("top", "bottom") else "column")
    return need


def caption_problems(caption: str, grid: tuple[int, int]) -> list[str]:
    """What a caption says about positions that a figure with panel ``grid`` (rows, columns) does not have."""
    rows, cols = grid
    need = caption_positions(caption)
    out = []
    if "row" in need and rows < 2:
        out.append(f"names top/bottom panels but the figure has {rows} row(s) of panels")
    if "column" in need and cols < 2:
        out.append(f"names left/right panels but the figure has {cols} column(s) of panels")
    return out


def read_panel_grid(png: Path) -> tuple[int, int] | None:
    """The panel grid :meth:`Outputs.figure` recorded in a PNG (None when it recorded none)."""
    from PIL import Image

    with Image.open(png) as image:
        text = (getattr(image, "text", None) or image.info or {}).get(PANELS_KEY)
    if not text:
        return None
    rows, _, cols = str(text).partition("x")
    return int(rows), int(cols)

"""The one place notebooks write their artifacts: tables (CSV), figures (PNG + SVG), glued values and claims.

A notebook calls ``out = fl.outputs.for_notebook("paper/experiment")`` and never builds a path by hand. Under the
study runner the folder is the run's staging folder (``FAITHLAB_OUTPUT_DIR``), moved into
``book/_generated/<paper>/<experiment>/`` only when the whole notebook succeeded; run interactively, it is that
final folder directly. Every file is written to a temporary name and renamed, so no reader sees half a file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from faithlab import paths

VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "not testable here")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a plain file stem (letters, digits, _ . -), got {name!r}")
    return name


class Outputs:
    """Writer for one notebook's artifact folder."""

    def __init__(self, notebook: str, folder: Path):
        self.notebook = notebook
        self.paper, _, self.experiment = notebook.partition("/")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._claims: list[dict] = []

    def path(self, filename: str) -> Path:
        """Path of an artifact in this notebook's folder (for readers, e.g. a cache file)."""
        return self.folder / filename

    def table(self, frame, name: str, *, index: bool = False, float_format: str | None = "%.4g") -> Path:
        """Write a pandas DataFrame as ``<name>.csv``; returns the path."""
        return paths.atomic_write(
            self.folder / f"{_check_name(name)}.csv",
            lambda tmp: frame.to_csv(tmp, index=index, float_format=float_format),
        )

    def figure(self, fig, name: str, *, dpi: int = 120, svg: bool = False) -> Path:
        """Save a matplotlib figure as ``<name>.png`` (and ``.svg`` if asked); returns the PNG path."""
        stem = _check_name(name)
        if svg:
            paths.atomic_write(self.folder / f"{stem}.svg", lambda tmp: fig.savefig(tmp, format="svg", bbox_inches="tight"))
        return paths.atomic_write(
            self.folder / f"{stem}.png", lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
        )

    def glue(self, name: str, value, *, display: bool = False):
        """Glue a value for the book (``{glue:text}`` on the chapter page); returns the value."""
        from myst_nb import glue

        glue(_check_name(name), value, display=display)
        return value

    def claim(self, claim: str, *, paper_value, our_value, verdict: str, note: str = "") -> dict:
        """Record a claim's verdict for the reproduction scorecard; rewrites ``claims.csv``."""
        import pandas as pd

        from faithlab.study import CLAIM_COLUMNS, CLAIMS

        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        row = dict(
            paper=self.paper,
            experiment=self.experiment,
            claim=claim,
            paper_value=paper_value,
            our_value=our_value,
            verdict=verdict,
            note=note,
        )
        self._claims = [c for c in self._claims if c["claim"] != claim] + [row]
        frame = pd.DataFrame(self._claims, columns=list(CLAIM_COLUMNS))
        paths.atomic_write(self.folder / CLAIMS, lambda tmp: frame.to_csv(tmp, index=False))
        return row


def for_notebook(notebook: str) -> Outputs:
    """Outputs of notebook ``"<paper>/<experiment>"`` (the runner's staging folder when run by the study)."""
    if not isinstance(notebook, str) or notebook.count("/") != 1:
        raise ValueError(f"notebook must be named '<paper>/<experiment>', got {notebook!r}")
    running = os.environ.get("FAITHLAB_NOTEBOOK")
    if running and running != notebook:
        raise ValueError(f"notebook is {notebook!r} but the study runner is executing {running!r}")
    staged = os.environ.get("FAITHLAB_OUTPUT_DIR")
    folder = Path(staged) if staged else paths.generated_dir() / notebook
    return Outputs(notebook, folder)

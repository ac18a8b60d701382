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
from faithlab.verdicts import VERDICTS
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _show_in_notebook(png: Path) -> bool:
    """Display a saved PNG as an output of the running Jupyter kernel; returns False (and does nothing) elsewhere."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False
    from IPython.display import Image, display

    display(Image(filename=str(png)))
    return True


class _ShownPath(type(Path())):
    """The path :meth:`Outputs.figure` returns: a plain path, except that IPython does not echo it as a cell's
    result (the figure itself is already shown, and the path would print the run's staging folder on the page)."""

    def _ipython_display_(self):
        pass


class _Recorded(dict):
    """The row :meth:`Outputs.claim` returns: a plain dict that IPython does not echo as a cell's result (the
    claim is shown on the scorecard page, not as a raw dict under the cell)."""

    def _ipython_display_(self):
        pass


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
        """Save a matplotlib figure as ``<name>.png`` (and ``.svg`` if asked), show that PNG in the notebook's output
        (the executed-notebook page of the book shows it; the runner's kernels use the non-interactive Agg
        backend, so nothing else would) and close the figure; returns the PNG path (which IPython does not echo
        when the call ends a cell)."""
        import matplotlib.pyplot as plt

        stem = _check_name(name)
        if svg:
            paths.atomic_write(self.folder / f"{stem}.svg", lambda tmp: fig.savefig(tmp, format="svg", bbox_inches="tight"))
        png = paths.atomic_write(
            self.folder / f"{stem}.png", lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
        )
        _show_in_notebook(png)
        plt.close(fig)
        return _ShownPath(png)

    def glue(self, name: str, value, *, display: bool = False):
        """Glue a value for the book (``{glue:text}`` on the chapter page); returns the value."""
        from myst_nb import glue

        glue(_check_name(name), value, display=display)
        return value

    def claim(self, claim: str, *, paper_value, our_value, verdict: str, note: str = "") -> dict:
        """Record a claim's verdict for the reproduction scorecard; rewrites ``claims.csv``.

        verdict: one of :data:`faithlab.verdicts.VERDICTS`, normally from :mod:`faithlab.verdicts`; the rule's
        outcome it carries (``why``) is appended to ``note``.
        """
        import pandas as pd

        from faithlab.study import CLAIM_COLUMNS, CLAIMS

        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        why = getattr(verdict, "why", "")
        note = "; ".join(part for part in (note, why) if part)
        row = dict(
            paper=self.paper,
            experiment=self.experiment,
            claim=claim,
            paper_value=paper_value,
            our_value=our_value,
            verdict=str(verdict),
            note=note,
        )
        self._claims = [c for c in self._claims if c["claim"] != claim] + [row]
        frame = pd.DataFrame(self._claims, columns=list(CLAIM_COLUMNS))
        paths.atomic_write(self.folder / CLAIMS, lambda tmp: frame.to_csv(tmp, index=False))
        return _Recorded(row)


def for_notebook(notebook: str) -> Outputs:
    """Outputs of notebook ``"<paper>/<experiment>"`` (the runner's staging folder when run by the study).

    Both parts must be plain names (letters, digits, ``_ . -``, not starting with ``.`` or ``-``): run interactively
    the folder is ``book/_generated/<paper>/<experiment>``, and a name such as ``"/abs"`` or ``"../x"`` would create
    folders outside it.
    """
    parts = notebook.split("/") if isinstance(notebook, str) else []
    plain = [re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", p) and p not in {".", ".."} for p in parts]
    if len(parts) != 2 or not all(plain):
        raise ValueError(
            f"notebook must be named '<paper>/<experiment>' with plain names (letters, digits, _ . -, not starting "
            f"with . or -), got {notebook!r}"
        )
    running = os.environ.get("FAITHLAB_NOTEBOOK")
    if running and running != notebook:
        raise ValueError(f"notebook is {notebook!r} but the study runner is executing {running!r}")
    staged = os.environ.get("FAITHLAB_OUTPUT_DIR")
    folder = Path(staged) if staged else paths.generated_dir() / notebook
    return Outputs(notebook, folder)


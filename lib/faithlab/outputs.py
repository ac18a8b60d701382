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
        return _Recorded(row)


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


# ------------------------------------------------------------------------------------------------- verdicts
_COMPARISONS = {">=": float.__ge__, ">": float.__gt__, "<=": float.__le__, "<": float.__lt__, "==": float.__eq__}


def _condition(rule: str, name: str) -> tuple[str, float]:
    """Parse a rule such as ``">= 0.8"`` into (operator, threshold); the text is parsed, never evaluated."""
    op, _, number = str(rule).strip().partition(" ")
    try:
        threshold = float(number)
    except ValueError:
        threshold = float("nan")
    if op not in _COMPARISONS or threshold != threshold:
        raise ValueError(f"{name} must read '<op> <number>' with op in {tuple(_COMPARISONS)}, got {rule!r}")
    return op, threshold


def ladder(reproduced: bool, partly: bool = False, *, untestable: str | None = None) -> str:
    """The verdict ladder from two stated tests: "reproduced" if the first holds, else "partly reproduced" if the
    second holds, else "not reproduced"; "not testable here" when ``untestable`` gives a reason."""
    if untestable is not None:
        if not isinstance(untestable, str) or not untestable.strip():
            raise ValueError(f"untestable must be a non-empty reason, got {untestable!r}")
        return VERDICTS[3]
    return VERDICTS[0] if bool(reproduced) else VERDICTS[1] if bool(partly) else VERDICTS[2]


def verdict(value, *, reproduced: str = "== 1", partly: str | None = "> 0", untestable: str | None = None) -> str:
    """The verdict of a claim from the value our run measured and a stated rule; every notebook verdict comes here.

    value: a number (a correlation, a share, a gap), or a sequence of booleans — one per check the claim needs —
    read as the share of checks that hold. reproduced / partly: the rule, as ``"<op> <threshold>"`` with op in
    ``>=, >, <=, <, ==`` (e.g. ``reproduced=">= 0.8", partly=">= 0.5"``); the default reads "every check holds →
    reproduced, at least one → partly reproduced". untestable: a reason why the comparison cannot discriminate
    here; when given, the verdict is "not testable here" whatever the value.
    Premise check: a NaN value (an undefined statistic) or an empty sequence of checks is "not testable here".
    Returns one of :data:`VERDICTS`.
    """
    if untestable is not None:
        return ladder(False, untestable=untestable)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}")
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1:  # list, array, Series or tensor of checks
        checks = [bool(v) for v in value]
        if not checks:
            return VERDICTS[3]
        value = sum(checks) / len(checks)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}") from None
    if number != number:
        return VERDICTS[3]
    op, threshold = _condition(reproduced, "reproduced")
    partly_holds = False
    if partly is not None:
        p_op, p_threshold = _condition(partly, "partly")
        partly_holds = _COMPARISONS[p_op](number, p_threshold)
    return ladder(_COMPARISONS[op](number, threshold), partly_holds)

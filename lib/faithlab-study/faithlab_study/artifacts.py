"""The one place notebooks write their artifacts: tables (CSV), figures (PNG + SVG), glued values and claims.

A notebook calls ``out = faithlab_study.artifacts.for_notebook()`` and never builds a path by hand. Under the study runner the
runner names the notebook (``FAITHLAB_NOTEBOOK``) and its folder, the run's staging folder (``FAITHLAB_OUTPUT_DIR``),
moved into ``book/_generated/<paper>/<experiment>/`` only when the whole notebook succeeded; run interactively, the
name comes from where the notebook runs (:func:`notebook_name`) and the folder is that final folder directly. Every
file is written to a temporary name and renamed, so no reader sees half a file.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from faithlab import paths
from faithlab_study.verdicts import VERDICTS

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NOTEBOOK_ENV = "FAITHLAB_NOTEBOOK"  # set by the study runner in a notebook's kernel: "<paper>/<experiment>"
OUTPUT_DIR_ENV = "FAITHLAB_OUTPUT_DIR"  # set by the study runner in a notebook's kernel: its staging folder
SHARDS_ENV = "FAITHLAB_SHARDS"  # set by the study runner in a sharded notebook's kernels: the shards' folder (sharded)
CLAIMS = "claims.csv"  # a notebook's claims, in its folder; the runner's scorecard collects them
CLAIM_COLUMNS = ("paper", "experiment", "claim", "paper_value", "our_value", "verdict", "rule", "premise", "note",
                 "kind", "decision", "replicas", "stability", "units", "function", "power", "rule_id",
                 "trained_replicas", "cells", "before", "prospective")
CELLS = "cells"  # a notebook's claims' cell tables, cells/<slug>.csv in its folder (the claims row names its own)
CELL_COLUMNS = ("cell", "values", "estimate", "low", "high", "level", "interval", "df", "zero", "margin", "direction",
                "outcome", "replicas", "units")
"""The columns of a claim's cell table (``faithlab_study.verdicts.Claim.cells``), in this order; a key of a
cell outside them follows them."""


def _in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (where ``IPython.display.display`` adds an output to the cell)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _show_in_notebook(png: Path) -> bool:
    """Display a saved PNG as an output of the running Jupyter kernel; returns False (and does nothing) elsewhere."""
    if not _in_kernel():
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
    """The row :meth:`Outputs.claim` returns: a plain dict that IPython does not echo as a cell's result (under a
    kernel :meth:`Outputs.claim` has displayed the claim's row already, :class:`ClaimRow`; echoing it again would
    show the claim twice when the call ends a cell and once otherwise). ``claim`` is the recorded
    :class:`faithlab_study.verdicts.Claim` (None for a claim given as text) and ``table`` its table, for the notebook to
    show or save."""

    claim = None

    @property
    def table(self):
        return None if self.claim is None else self.claim.table

    def _ipython_display_(self):
        pass


class ClaimRow:
    """How a notebook shows a claim where it computes it: a one-row table claim | paper | ours | verdict, its rule,
    premise and note folded under the claim (:func:`faithlab_study.book.html.claim_html`). Displayed by :meth:`Outputs.claim` in a
    kernel."""

    def __init__(self, row: dict):
        self.row = dict(row)

    def _repr_html_(self) -> str:
        from faithlab_study.book.html import claim_html

        return claim_html(self.row)

    def __repr__(self) -> str:
        row = self.row
        return f"{row.get('claim')} — paper {row.get('paper_value')}, ours {row.get('our_value')}: {row.get('verdict')}"


class RuleList:
    """How a notebook states the rules its claims are decided by: read from the registry
    (:func:`faithlab_study.verdicts.rule`), never restated in the notebook's prose (issue 90: rules written once).
    A Markdown list, one item per rule: its id, the claim, the rule's sentence (statistic, the paper's direction, the
    margin with its source, the interval) and how its cells combine. Displayed by :meth:`Outputs.rules`."""

    def __init__(self, ids):
        from faithlab_study import verdicts

        self.rules = [verdicts.rule(i) for i in ids]

    def _repr_markdown_(self) -> str:
        def plain(text: str) -> str:  # the registry's words, never Markdown emphasis
            return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")

        return "\n".join(f"- **{r.id}** *{plain(r.claim)}*. {plain(r.text()[0].upper() + r.text()[1:])}. Decision: "
                         f"{plain(r.decision_text())}." for r in self.rules)

    def __repr__(self) -> str:
        return "\n".join(f"{r.id}: {r.claim} — {r.text()}" for r in self.rules)


PANELS_KEY = "faithlab-panels"
"""The PNG text chunk where :meth:`Outputs.figure` records the figure's panel grid (``"<rows>x<columns>"``)."""
def panel_grid(fig) -> tuple[int, int]:
    """The panel grid of a matplotlib figure as ``(rows, columns)``: its visible axes (colour bars and axes smaller
    than 2 % of the figure left out) grouped by the centres of their boxes — axes whose centres lie within 4 % of
    the figure's width (height) of each other share a column (row)."""
    boxes = []
    for ax in fig.get_axes():
        if not ax.get_visible() or ax.get_label() == "<colorbar>" or hasattr(ax, "_colorbar"):
            continue
        box = ax.get_position()
        if box.width * box.height < 0.02:
            continue
        boxes.append(((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))

    def groups(values):
        count, last = 0, None
        for v in sorted(values):
            if last is None or v - last > 0.04:
                count += 1
            last = v
        return count

    if not boxes:
        return 0, 0
    return groups(b[1] for b in boxes), groups(b[0] for b in boxes)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name must be a plain file stem (letters, digits, _ . -), got {name!r}")
    return name


def cells_slug(rule_id: str | None, claim: str) -> str:
    """A plain file stem (letters, digits, ``_ . -``) for a claim's cell table: its rule id, else its label (the text
    before the first colon), each run of characters other than letters, digits, ``_ . -`` one dash, at most 60
    characters; ``claim-<hash>`` when nothing of either is left (never a path: no ``/``, no leading dot)."""
    import hashlib

    for text in (rule_id, str(claim).split(":", 1)[0]):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text or "")).strip("-.")[:60].rstrip("-.")
        if slug and _NAME.match(slug):
            return slug
    return "claim-" + hashlib.sha1(str(claim).encode("utf-8")).hexdigest()[:10]


def cells_frame(cells):
    """A claim's cells (dicts, ``faithlab_study.verdicts.Claim.cells``) as a frame: :data:`CELL_COLUMNS` first
    (empty where a cell lacks one), then any other key."""
    import pandas as pd

    frame = pd.DataFrame([dict(c) for c in cells])
    extra = [c for c in frame.columns if c not in CELL_COLUMNS]
    return frame.reindex(columns=[*CELL_COLUMNS, *extra])


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
        when the call ends a cell). A figure that breaks the book's figure style
        (:func:`faithlab.plots.style.check_style`: fonts too small once shown in the column, a legend over the data,
        raw column names, too many panels) is saved all the same, with a warning that names it and says why (the
        runner logs it beside the notebook)."""
        import warnings

        import matplotlib.pyplot as plt

        from faithlab.plots.style import check_style

        stem = _check_name(name)
        problems = check_style(fig, dpi=dpi)
        if problems:
            warnings.warn(f"figure {stem!r} breaks the book's figure style: " + "; ".join(problems), stacklevel=2)
        if svg:
            paths.atomic_write(self.folder / f"{stem}.svg", lambda tmp: fig.savefig(tmp, format="svg", bbox_inches="tight"))
        rows, cols = panel_grid(fig)  # recorded in the PNG: the book's test checks captions against it
        png = paths.atomic_write(
            self.folder / f"{stem}.png",
            lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight",
                                    metadata={PANELS_KEY: f"{rows}x{cols}"}),
        )
        _show_in_notebook(png)
        plt.close(fig)
        return _ShownPath(png)

    def rules(self, *ids: str) -> None:
        """Show the registered rules of claims ``ids`` (e.g. ``out.rules("F1", "F2")``) where the notebook explains
        its verdicts, as the registry holds them (:class:`RuleList`): a notebook names its claims and lets the
        registry say how they are decided. Returns nothing (nothing echoed); ValueError on an unregistered id."""
        shown = RuleList(ids)
        if _in_kernel():
            from IPython.display import display

            display(shown)

    def glue(self, name: str, value, *, display: bool = False) -> None:
        """Glue a value for the book (``{glue:text}`` on the chapter page). Returns nothing, so that a cell ending
        with a glue shows no stray copy of the value on the page."""
        from myst_nb import glue

        glue(_check_name(name), value, display=display)

    def claim(self, claim, *, paper_value=None, our_value=None, verdict: str | None = None, note: str = "") -> dict:
        """Record a decided claim for the reproduction scorecard (rewrites ``claims.csv``) and, in a Jupyter kernel,
        show it where it is computed: the claim's row (:func:`faithlab_study.book.html.claim_html`) is displayed as an output of
        the calling cell, once per call, and the returned dict is not echoed. Recording decides nothing: the caller has
        decided the claim.

        claim: a :class:`faithlab_study.verdicts.Claim`, the house way decided by its claim function through
        :func:`faithlab_study.verdicts.replicated` (``out.claim(fs.verdicts.replicated(P.claim_x, frames, seed=seed))``,
        which adds the replica agreement, the bootstrap stability and the deciding function's name); its rule and
        premise go to the ``rule`` and ``premise`` columns, its decision text to ``decision``. Or the claim's text
        with ``paper_value``, ``our_value`` and ``verdict`` given here. verdict: one of
        :data:`faithlab_study.verdicts.VERDICTS`, normally from :mod:`faithlab_study.verdicts`; the rule's outcome it
        carries (``why``) is appended to ``note``. A Claim with a cell table
        (``Claim.cells``) has it written beside ``claims.csv`` as ``cells/<slug>.csv`` (:data:`CELL_COLUMNS`),
        which the row's ``cells`` column names ("" for a claim without one); its ``before`` (the verdict the same
        data got by the procedure before issue 90) goes to the ``before`` column.
        """
        import pandas as pd

        from faithlab_study.verdicts import Claim

        rule = premise = decision = function = power = rule_id = ""
        kind, replicas, stability, units, trained = "paper", "—", "—", None, None
        if callable(claim) and not isinstance(claim, str):
            raise TypeError("claim is a claim function: decide it first, then record the Claim it returns "
                            "(out.claim(fs.verdicts.replicated(fn, *args, **kwargs)))")
        recorded = claim if isinstance(claim, Claim) else None
        if isinstance(claim, Claim):
            kind, decision, units = claim.kind, claim.decision, claim.units
            replicas, stability, power = claim.replica_agreement, claim.bootstrap_stability, claim.power
            trained = claim.trained_replicas
            rule_id = claim.rule_id or ""
            function = claim.function
            if not (paper_value is None and our_value is None and verdict is None):
                raise TypeError("claim is a Claim: it carries paper_value, our_value and verdict, give none of them")
            claim, rule, premise, paper_value, our_value, verdict = (
                claim.claim, claim.rule, claim.premise, claim.paper_value, claim.our_value, claim.verdict)
        elif not isinstance(claim, str) or not claim.strip():
            raise TypeError(f"claim must be a faithlab_study.verdicts.Claim or the claim's text, got {claim!r}")
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
        why = getattr(verdict, "why", "")
        note = "; ".join(part for part in (note, why) if part)
        cells = self._write_cells(recorded, claim)
        row = {
            "paper": self.paper,
            "experiment": self.experiment,
            "claim": claim,
            "paper_value": paper_value,
            "our_value": our_value,
            "verdict": str(verdict),
            "rule": rule,
            "premise": premise,
            "note": note,
            "kind": kind,
            "decision": decision,
            "replicas": replicas,
            "stability": stability,
            "units": units,
            "function": function,
            "power": power,
            "rule_id": rule_id,
            "trained_replicas": trained,
            "cells": cells,
            "before": getattr(recorded, "before", "") if recorded is not None else "",
            "prospective": getattr(recorded, "prospective", "") if recorded is not None else "",
        }
        self._claims = [c for c in self._claims if c["claim"] != claim] + [row]
        frame = pd.DataFrame(self._claims, columns=list(CLAIM_COLUMNS))
        paths.atomic_write(self.folder / CLAIMS, lambda tmp: frame.to_csv(tmp, index=False))
        if _in_kernel():  # here, not as the cell's result: a claim recorded in a loop or mid-cell shows too
            from IPython.display import display

            display(ClaimRow(row))
        recorded_row = _Recorded(row)
        recorded_row.claim = recorded
        return recorded_row

    def _write_cells(self, recorded, claim: str) -> str:
        """Write a :class:`~faithlab_study.verdicts.Claim`'s cell table (atomically) as ``cells/<slug>.csv``
        (:func:`cells_slug`; the claim text's hash added when another claim of this notebook has the slug) and
        return that path relative to the folder; "" (and nothing written) for a claim without cells. The table an
        earlier record of the same claim wrote under another name is removed."""
        import hashlib

        before = next((c["cells"] for c in self._claims if c["claim"] == claim and c.get("cells")), "")
        path = ""
        if recorded is not None and recorded.cells:
            taken = {c["cells"] for c in self._claims if c["claim"] != claim}
            slug = cells_slug(recorded.rule_id, claim)
            if f"{CELLS}/{slug}.csv" in taken:
                slug = f"{slug}-{hashlib.sha1(claim.encode('utf-8')).hexdigest()[:8]}"
            path = f"{CELLS}/{_check_name(slug)}.csv"
            frame = cells_frame(recorded.cells)
            paths.atomic_write(self.folder / path, lambda tmp: frame.to_csv(tmp, index=False))
        if before and before != path:
            (self.folder / before).unlink(missing_ok=True)
        return path


def _name_of_file(path: str | os.PathLike) -> str | None:
    """``"<paper>/<experiment>"`` of a file ``notebooks/<paper>/<experiment>.py`` (or ``.ipynb``), else None.

    A relative path too short to show the ``notebooks`` folder (Jupyter gives the notebook's path relative to the
    folder it serves) is looked for in the working directory, where Jupyter starts the notebook's kernel."""
    path = Path(path)
    if path.suffix not in {".py", ".ipynb"}:
        return None
    if not path.is_absolute() and len(path.parts) < 3:
        path = Path.cwd() / path.name
        if not path.is_file():
            return None
    if len(path.parts) < 3 or path.parent.parent.name != "notebooks":
        return None
    return f"{path.parent.name}/{path.stem}"


def notebook_name() -> str | None:
    """The name ``"<paper>/<experiment>"`` of the notebook this code runs in, or None when nothing says it.

    In order: the study runner's ``FAITHLAB_NOTEBOOK``; the script run as ``python notebooks/<paper>/<experiment>.py``
    (or with IPython's ``%run``); the notebook Jupyter opened (``JPY_SESSION_NAME``, which Jupyter Server 2 gives its
    kernels: the ``.py`` source opened with jupytext, or an ``.ipynb`` saved beside it); VS Code's notebook file
    (``__vsc_ipynb_file__``). A file counts only under a folder named ``notebooks``, as the study's sources are."""
    running = os.environ.get(NOTEBOOK_ENV)
    if running:
        return running
    candidates = [getattr(sys.modules.get("__main__"), "__file__", None), os.environ.get("JPY_SESSION_NAME")]
    if _in_kernel():
        from IPython import get_ipython

        candidates.append(get_ipython().user_ns.get("__vsc_ipynb_file__"))
    for candidate in candidates:
        name = _name_of_file(candidate) if isinstance(candidate, str) and candidate else None
        if name is not None:
            return name
    return None


def for_notebook(notebook: str | None = None) -> Outputs:
    """Outputs of a notebook: the runner's staging folder when run by the study, else
    ``book/_generated/<paper>/<experiment>``.

    notebook: ``"<paper>/<experiment>"``, or None (what the study's notebooks pass) for the notebook this code runs
    in (:func:`notebook_name`: the one the study runner is executing, or the file run or opened interactively); a
    ValueError asks for the name when none can be found. Both parts must be plain names (letters, digits, ``_ . -``,
    not starting with ``.`` or ``-``): run interactively the folder is ``book/_generated/<paper>/<experiment>``, and a
    name such as ``"/abs"`` or ``"../x"`` would create folders outside it. Under the runner, a name other than the
    one it is executing is a ValueError.
    """
    if notebook is None:
        notebook = notebook_name()
        if notebook is None:
            raise ValueError(
                "notebook: cannot tell which notebook this is (the study runner is not executing one, and neither the "
                "script's path, Jupyter's JPY_SESSION_NAME nor VS Code names a file notebooks/<paper>/<experiment>"
                ".py); pass its name, e.g. faithlab_study.artifacts.for_notebook(\"basics/digits_classifier\")"
            )
    parts = notebook.split("/") if isinstance(notebook, str) else []
    plain = [re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", p) and p not in {".", ".."} for p in parts]
    if len(parts) != 2 or not all(plain):
        raise ValueError(
            f"notebook must be named '<paper>/<experiment>' with plain names (letters, digits, _ . -, not starting "
            f"with . or -), got {notebook!r}"
        )
    running = os.environ.get(NOTEBOOK_ENV)
    if running and running != notebook:
        raise ValueError(f"notebook is {notebook!r} but the study runner is executing {running!r}")
    staged = os.environ.get(OUTPUT_DIR_ENV)
    folder = Path(staged) if staged else paths.generated_dir() / notebook
    return Outputs(notebook, folder)


def shard_bounds(n_items: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` ranges splitting ``n_items`` items into ``n_shards`` near-equal parts, in order
    (the first ``n_items % n_shards`` parts one longer; parts are empty when there are more shards than items)."""
    base, extra = divmod(n_items, n_shards)
    bounds, start = [], 0
    for i in range(n_shards):
        stop = start + base + (i < extra)
        bounds.append((start, stop))
        start = stop
    return bounds


def _through_csv(frame):
    """The frame as every mode of :func:`sharded` returns it: written to CSV and read back (so float32 becomes
    float64 and the index 0..n-1 in every mode alike, and a sharded run hands its summary the very same table)."""
    import io

    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"compute must return a pandas DataFrame, got {type(frame).__name__}")
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    buffer.seek(0)
    if not frame.columns.size:
        return pd.DataFrame()
    return pd.read_csv(buffer)


def sharded(name: str, compute, items, *, shard: int | None = None, n_shards: int = 1):
    """Per-item work of a notebook that the study runner can split into shards (``-p n_shards N``).

    The runner executes a notebook that declares the parameters ``shard = None`` and ``n_shards = 1`` as
    ``n_shards`` independent executions (on a Dask cluster, or local processes) and a reduce step. Each shard
    executes the notebook up to its last cell tagged ``shard`` with ``shard = i``; the reduce step executes the whole
    notebook with ``shard = None``. This function is the seam:

    * ``n_shards == 1``: returns ``compute(items)``;
    * ``shard = i``: returns ``compute(part i)`` (contiguous, :func:`shard_bounds`) and stores it for the reduce step;
    * ``shard is None`` and ``n_shards > 1`` (the reduce step): returns the stored parts concatenated in order, and
      does not call ``compute``.

    name: a plain file stem, unique within the notebook. compute: ``part → pandas.DataFrame`` of columns holding
    numbers, strings or booleans; its rows for an item must not depend on the other items of the part (draw
    randomness per item or per fixed block, never once per call), which is what makes a sharded run equal the
    unsharded one. items: an int ``n`` (items ``range(n)``) or a sequence. Every mode returns the table after a
    CSV round trip (float64 columns, index 0..n-1), so the rest of the notebook sees the same frame either way.
    """
    name = _check_name(name)
    seq = range(items) if isinstance(items, int) and not isinstance(items, bool) else items
    if isinstance(n_shards, bool) or not isinstance(n_shards, int) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    if shard is not None and (isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < n_shards):
        raise ValueError(f"shard must be None or an integer in [0, n_shards={n_shards}), got {shard!r}")
    if n_shards == 1:
        return _through_csv(compute(seq))
    store = os.environ.get(SHARDS_ENV)
    if not store:
        raise ValueError(f"n_shards={n_shards} needs the study runner, which sets {SHARDS_ENV} (run python -m "
                         f"faithlab_study run <notebook> -p n_shards {n_shards}; interactively, keep n_shards = 1)")
    import pandas as pd

    if shard is not None:
        start, stop = shard_bounds(len(seq), n_shards)[shard]
        frame = _through_csv(compute(seq[start:stop]))
        folder = Path(store) / str(shard)
        folder.mkdir(parents=True, exist_ok=True)
        paths.atomic_write(folder / f"{name}.csv", lambda tmp: frame.to_csv(tmp, index=False))
        return frame
    parts = []
    for i in range(n_shards):
        path = Path(store) / str(i) / f"{name}.csv"
        if not path.is_file():
            raise ValueError(f"shard {i} of {n_shards} left no table {name!r} ({path}): was it computed?")
        parts.append(path)
    frames = [pd.read_csv(p) if p.stat().st_size > 1 else pd.DataFrame() for p in parts]
    return _through_csv(pd.concat(frames, ignore_index=True))

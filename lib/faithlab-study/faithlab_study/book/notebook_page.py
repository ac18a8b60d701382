"""An executed notebook made a page of the book: what the study runner does to papermill's output before promoting it.

papermill leaves two parameters cells (the notebook's own, tagged ``parameters``, with its defaults, and its
``injected-parameters`` cell with the values it set), every stderr stream the kernel wrote (progress bars,
warnings) and nothing that says where the page belongs or what produced it. :func:`finish` rewrites the executed
notebook in place, once, after a successful execution (a cached notebook keeps its cells; the reduce step of a
sharded run is executed, hence finished, like any run):

* **one parameters cell**: papermill's injected cell is headed ``# this run's parameters (profile <name>)`` and
  holds every effective parameter (the notebook's defaults merged with the profile and ``-p``, as the runner passed
  them all); the notebook's own cell is tagged ``remove-cell``, which myst-nb leaves off the page. Both stay in the
  notebook in their order, so re-running the executed ``.ipynb`` gives the same values;
* **a markdown cell under the title** (tagged ``chapter-link``; first when the notebook opens without a title): "Part of the chapter <link>" to the chapter page that lists
  the notebook in ``book/_toc.yml`` (the parent ``file:`` of its ``_generated/<paper>/<experiment>`` entry, else
  ``book/<paper>.md``), and what produced the page: run time, profile, machine and date;
* **no stderr on the page**: the stderr streams are removed from the page, after being written to
  ``<experiment>/stderr.log`` beside the notebook and reported to the runner's user (``echo``); the library's
  progress bars are off in the runner's kernels (``FAITHLAB_PROGRESS=0``), so a stream here is something to fix.
"""

from __future__ import annotations

import ast
import datetime
import functools
import os
import platform
import pprint
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

PARAMETERS_HEADER = "# this run's parameters (profile {profile})"
HIDDEN = "remove-cell"  # myst-nb's tag for a cell left off the page (input and output)
HEADER_TAG = "chapter-link"  # the markdown cell under the page's title (or first) with the link and run time
STDERR_LOG = "stderr.log"  # in the notebook's artifact folder: the stderr streams removed from its page
_WIDTH = 88  # characters of a code line that fit the book's column without scrolling
_ECHOED_LINES = 5  # stderr lines echoed to the runner's user per notebook (all of them are in the log)


def chapter_page(paper: str, experiment: str, book: Path) -> Path | None:
    """The chapter page listing notebook ``paper/experiment``: the parent ``file:`` of its
    ``_generated/<paper>/<experiment>`` entry in ``book/_toc.yml``, else ``book/<paper>.md``; None when neither
    page exists (a path to a missing page would be a broken link under ``-W``)."""
    book = Path(book)
    target = f"_generated/{paper}/{experiment}"
    parent = None
    try:
        toc = yaml.safe_load((book / "_toc.yml").read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        toc = None

    def walk(node, above: str | None) -> str | None:
        if isinstance(node, Mapping):
            file = node.get("file")
            if isinstance(file, str) and re.sub(r"\.(md|ipynb)$", "", file.strip("/")) == target:
                return above
            here = file if isinstance(file, str) else above
            for key, value in node.items():
                if key != "file":
                    found = walk(value, here if key in ("sections", "chapters") else above)
                    if found is not None:
                        return found
        elif isinstance(node, list):
            for item in node:
                found = walk(item, above)
                if found is not None:
                    return found
        return None

    parent = walk(toc, None) if toc is not None else None
    candidates = []
    if parent is not None:
        stem = re.sub(r"\.(md|ipynb)$", "", parent.strip("/"))
        candidates += [book / f"{stem}.md", book / f"{stem}.ipynb"]
    candidates.append(book / f"{paper}.md")
    return next((page for page in candidates if page.is_file()), None)


def page_title(page: Path) -> str:
    """The first level-1 heading (a line "# Title") of a Markdown page (after any front matter), else its file stem."""
    try:
        text = page.read_text() if page.suffix == ".md" else ""
    except (OSError, UnicodeDecodeError):
        text = ""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        text = text[end + 4:] if end >= 0 else text
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return page.stem


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[str, ...]:
    """Names of this machine's NVIDIA GPUs (``nvidia-smi``; nothing when it is missing or fails). Not asked of torch,
    which would create a CUDA context in the runner's process."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    try:
        listed = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                                timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in listed.splitlines() if line.strip())


def host_summary(device=None) -> str:
    """The machine in a few words: system, CPU cores this process may use, GPUs, and the notebook's ``device``
    parameter when it has one (e.g. ``Linux x86_64, 16 CPU cores, 1 GPU (NVIDIA H100), device "cuda"``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    gpus = _gpus()
    words = [f"{platform.system()} {platform.machine()}".strip(), f"{cores} CPU core{'s' if cores != 1 else ''}"]
    if gpus:
        names = ", ".join(dict.fromkeys(gpus))
        words.append(f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} ({names})")
    else:
        words.append("no GPU")
    if device is not None:
        words.append(f'device "{device}"')
    return ", ".join(words)


def duration(seconds: float) -> str:
    """``12 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0, round(float(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _tags(cell) -> list:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


def _wrapped(line: str, params: Mapping, width: int = _WIDTH) -> str:
    """A parameter line ``name = value`` longer than ``width``, its value laid out over several lines
    (``pprint``), when that text is the same literal; any other line unchanged."""
    name, eq, _ = line.partition(" = ")
    if len(line) <= width or not eq or name not in params:
        return line
    text = pprint.pformat(params[name], width=width - len(name) - 3, sort_dicts=False)
    try:
        same = ast.literal_eval(text) == params[name]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        same = False
    if not same:
        return line
    indent = " " * (len(name) + 3)
    return f"{name} = " + text.replace("\n", "\n" + indent)


def _one_parameters_cell(notebook, profile: str | None, params: Mapping) -> None:
    """Head papermill's injected cell (every effective parameter) "this run's parameters" and hide the notebook's
    own; without an injected cell (no parameter was passed), the notebook's own cell gets the heading. Lines
    longer than the page's code column are wrapped (:func:`_wrapped`)."""
    header = PARAMETERS_HEADER.format(profile=profile) if profile else "# this run's parameters (no profile)"
    own = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    injected = [c for c in notebook.cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    shown = injected[-1] if injected else (own[0] if own else None)
    if shown is None:
        return
    lines = shown.source.splitlines()
    if lines and (lines[0].strip() == "# Parameters" or lines[0].startswith("# this run's parameters")):
        lines = lines[1:]  # papermill's heading, or ours from an earlier finish
    shown.source = "\n".join([header, *(_wrapped(line, params) if injected else line for line in lines)])
    for cell in [*own, *injected]:
        if cell is not shown and HIDDEN not in _tags(cell):
            _tags(cell).append(HIDDEN)


def _take_stderr(notebook) -> list[tuple[int, str]]:
    """Remove every stderr stream from the notebook's outputs; returns (cell number, text) of each, in order."""
    taken = []
    for number, cell in enumerate(notebook.cells, start=1):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = []
        for output in outputs:
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                text = output.get("text", "")
                taken.append((number, "".join(text) if isinstance(text, list) else str(text)))
            else:
                kept.append(output)
        cell["outputs"] = kept
    return taken


def finish(ipynb: Path, *, name: str, params: dict, profile: str | None, seconds: float, root: Path,
           generated: Path, log_folder: Path, final_log: Path | None = None, shards: int = 0,
           echo: Callable[[str], object] = print) -> None:
    """Make the executed notebook ``ipynb`` (of notebook ``name`` = ``"<paper>/<experiment>"``) a page of the book,
    in place (see the module docstring).

    params: the effective parameters papermill was given. profile: the profile's name. seconds: the execution's
    wall time (a sharded notebook's: its shards' and the reduce step's together, ``shards`` > 0). root: the project
    root (the chapter pages are under ``root/book``). generated: the folder the notebook is promoted to
    (``<generated>/<paper>/<experiment>.ipynb``; the chapter link is relative to it). log_folder: where
    ``stderr.log`` goes (the staged artifact folder), reported as ``final_log`` (its promoted path).
    """
    import nbformat

    paper, _, experiment = name.partition("/")
    notebook = nbformat.read(str(ipynb), as_version=4)
    _one_parameters_cell(notebook, profile, params)

    taken = _take_stderr(notebook)
    if taken:
        log = Path(log_folder) / STDERR_LOG
        log.write_text("".join(f"--- cell {number} ---\n{text.rstrip(chr(10))}\n" for number, text in taken))
        lines = [line for _, text in taken for line in text.splitlines() if line.strip()]
        shown = "\n".join(f"    {line}" for line in lines[:_ECHOED_LINES])
        more = f"\n    ... ({len(lines) - _ECHOED_LINES} more lines)" if len(lines) > _ECHOED_LINES else ""
        echo(f"[stderr] {name}: {len(taken)} stderr output(s) removed from its page, kept in "
             f"{final_log or log}:\n{shown}{more}")

    page = chapter_page(paper, experiment, Path(root) / "book")
    if page is not None:
        # the page renders at <book>/_generated/<paper>/<experiment> of whichever copy of the book is built (the
        # runner may write into another book's _generated, as the tests do): the link is relative to that place
        href = "../../" + page.relative_to(Path(root) / "book").as_posix()
        title = page_title(page).replace("[", r"\[").replace("]", r"\]")
        where = f"Part of the chapter [{title}]({href})."
    else:
        where = "Part of the study (no chapter page lists it)."
    how = f" ({shards} shards and a reduce step)" if shards else ""
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    ran = (f"This page ran in {duration(seconds)}{how} with {f'the {profile} profile' if profile else 'no profile'} on "
           f"{host_summary(params.get('device'))}, {today}.")
    header = nbformat.v4.new_markdown_cell(f"{where}\n{ran}", metadata={"tags": [HEADER_TAG]})
    notebook.cells = [c for c in notebook.cells if HEADER_TAG not in c.get("metadata", {}).get("tags", [])]
    # under the page's title when the notebook opens with one (a markdown cell starting "# "), else first
    first = notebook.cells[0] if notebook.cells else None
    titled = first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# ")
    notebook.cells.insert(1 if titled else 0, header)
    # read back by the book's intro (its build-time line): this notebook's run time and profile
    notebook.metadata["faithlab"] = {"seconds": round(float(seconds), 3), "profile": profile}
    nbformat.write(notebook, str(ipynb))

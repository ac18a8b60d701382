"""Run the study's notebooks: jupytext sources → papermill → executed notebooks and artifacts for the book.

Usage (from the repository root)::

    python -m faithlab.study list
    python -m faithlab.study run --profile book -j 2
    python -m faithlab.study run basics/digits_classifier --profile smoke -p n_epochs 3
    python -m faithlab.study scorecard
    python -m faithlab.study run saco --profile paper --cluster slurm -j 8 -p n_shards 8   # on a Dask cluster

Notebooks can run on a Dask distributed cluster (``--cluster``, :mod:`faithlab.study.cluster`) and, when they
declare the parameters ``shard = None`` and ``n_shards = 1``, as ``n_shards`` shards plus a reduce step
(:func:`execute`, :func:`faithlab.outputs.sharded`), here or there; everything below holds in every case.

Each notebook ``notebooks/<paper>/<experiment>.py`` (jupytext py:percent, exactly one cell tagged ``parameters``)
is executed with parameters merged from, lowest to highest priority: its own parameters cell, the profile file
``notebooks/params/<profile>.yaml`` (``defaults`` for every notebook that defines the name, then ``notebooks:
{<paper>/<experiment>: {...}}``), and ``-p name value`` on the command line. Outputs go to
``book/_generated/<paper>/<experiment>.ipynb`` and ``book/_generated/<paper>/<experiment>/`` (tables, figures,
claims). A run is skipped when the stamp of the last successful run matches the hash of (notebook source, merged
parameters, library source, uv.lock); an unreadable stamp counts as no stamp (the notebook is executed again).
The kernels run with ``FAITHLAB_PROGRESS=0`` (the library's progress bars off), and each executed notebook is made
a page of the book before its promotion (``faithlab.study.notebook_page``): one parameters cell, "this run's
parameters", a first cell linking to its chapter with the run time, and no stderr stream (moved to
``<experiment>/stderr.log`` and reported on the terminal).

Guarantees, also with several runners at once and with a runner killed at any point:

* Parameters cells are parsed, never executed: only ``name = <literal>`` lines (numbers, strings, booleans, None,
  lists, tuples, dicts, sets) and comments are allowed, anything else is an error naming the file and line. A
  profile or ``-p`` value that is not valid YAML, has a key twice or has the wrong shape is an error naming the
  file and line or the parameter.
* One runner at a time executes a given notebook: it holds the lock ``<generated>/.locks/<paper>--<experiment>.lock``
  (fcntl.flock, released by the system when its process ends) from its staging to its promotion. Another runner
  that wants the same notebook waits, then skips it if the first one produced exactly the outputs it wanted.
* Each execution stages its outputs in its own folder ``<generated>/.staging/<paper>--<experiment>--<id>/``, which
  only the holder of that notebook's lock removes (its owner, or a later runner once the owner is dead).
* Promotion (the staged outputs replace the old ones) is journaled in ``<generated>/.promoting/``, and the executed
  notebook leaves first and arrives last: at every instant ``<experiment>.ipynb`` exists only beside its complete
  folder. A promotion interrupted by a kill is completed by the next runner (or ``scorecard`` command).
* ``scorecard.csv`` is rebuilt from the notebooks that are present (``<experiment>.ipynb`` and its folder), under a
  lock that promotions also take; an unreadable ``claims.csv`` is skipped with a message naming it. The front page's
  ``scorecard_summary.csv`` and ``study_map.png``/``.svg`` are rebuilt with it, even when there is no claim.
* A notebook whose cell raises loses its previous outputs (they no longer describe its source: no stale page) and
  its executed copy with the traceback is kept as ``_build/failed/<paper>/<experiment>.ipynb``, which its next
  successful run removes. A failure of anything else (the kernel did not start, a timeout) keeps the previous
  outputs; they stay out of date, so the next run executes the notebook again.

The locks rely on ``fcntl.flock`` (Linux, macOS), like the rest of the tooling, which assumes a POSIX system; they
exclude runners on one machine (a network file system may not honour them across machines).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as futures
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from faithlab import _progress, paths
from faithlab.study import notebook_page

PROFILES = ("smoke", "book", "paper", "paper-dry")
STAMP = ".stamp.json"
CLAIMS = "claims.csv"
SCORECARD = "scorecard.csv"
SUMMARY = "scorecard_summary.csv"  # verdict counts per paper, for the front page
STUDY_MAP = "study_map"  # .png and .svg: the front page's map of papers → metrics → experiments → verdicts
ALL_PAPERS = "all papers"  # the summary's row after the five papers
STUDY_CHECK = "(study check)"  # the suffix of a summary row that is not a paper (basics, synthesis)
CLAIM_COLUMNS = ("paper", "experiment", "claim", "paper_value", "our_value", "verdict", "rule", "premise", "note")
_OPTIONAL_CLAIM_COLUMNS = ("rule", "premise")  # absent from claims written before claims were functions
LOCKS = ".locks"  # per-notebook lock files, and the lock of the outputs (promotions and scorecard)
STAGING = ".staging"  # per-execution staging folders
JOURNAL = ".promoting"  # one journal file per promotion in progress


class StudyError(RuntimeError):
    """A notebook could not be found, configured or executed."""


@dataclass(frozen=True)
class Notebook:
    """One notebook of the study: ``notebooks/<paper>/<experiment>.py``."""

    paper: str
    experiment: str
    source: Path
    defaults: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def name(self) -> str:
        return f"{self.paper}/{self.experiment}"


# --------------------------------------------------------------------------------------------------- discovery


def notebooks_dir(root: Path | None = None) -> Path:
    return (root or paths.project_root()) / "notebooks"


def _parameters_cell(source: Path) -> dict:
    """Parse a jupytext py:percent file and return the default values of its single ``parameters`` cell.

    The cell is parsed with :mod:`ast`, never executed: discovery runs on every notebook of the tree (``list``,
    ``run`` of any other notebook), so code in a parameters cell would run without anyone asking for that notebook.
    Only ``name = <literal>`` statements (``ast.literal_eval``: numbers, negative ones too, strings, booleans, None,
    lists, tuples, dicts, sets) and comments are accepted; names starting with ``_`` are not parameters.
    """
    import jupytext

    try:
        text = source.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"{source}: cannot read the notebook ({exc})") from None
    nb = jupytext.reads(text, fmt="py:percent")
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise StudyError(f"{source}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    cell = cells[0].source
    first = _first_line_of_cell(text, cell)

    def where(lineno: int | None) -> str:
        lineno = lineno or 1
        return f"{source}:{first + lineno - 1}" if first else f"{source} (line {lineno} of the parameters cell)"

    try:
        tree = ast.parse(cell, filename=str(source))
    except SyntaxError as exc:
        raise StudyError(f"{where(exc.lineno)}: the parameters cell is not valid Python ({exc.msg})") from None
    values: dict = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise StudyError(
                f"{where(stmt.lineno)}: the parameters cell may only contain `name = <literal>` lines, found "
                f"{_snippet(stmt)}"
            )
        name = stmt.targets[0].id
        try:
            values[name] = ast.literal_eval(stmt.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise StudyError(
                f"{where(stmt.lineno)}: parameter {name!r} must be a literal (number, string, bool, None, list, tuple,"
                f" dict, set), found {_snippet(stmt.value)}"
            ) from None
    return {k: v for k, v in values.items() if not k.startswith("_")}


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _first_line_of_cell(text: str, cell: str) -> int | None:
    """1-based line of the file where the parameters cell's source starts, or None if it cannot be located (then
    errors name the line within the cell)."""
    lines = text.splitlines()
    markers = [i for i, line in enumerate(lines) if line.startswith("# %%") and "parameters" in line]
    body = cell.splitlines()
    if len(markers) != 1 or not body:
        return None
    for i in range(markers[0] + 1, len(lines)):
        if lines[i] == body[0]:
            return i + 1
    return None


def discover(root: Path | None = None) -> list[Notebook]:
    """All notebooks under ``notebooks/<paper>/<experiment>.py``, sorted by name."""
    base = notebooks_dir(root)
    found = []
    for source in sorted(base.glob("*/*.py")):
        if source.parent.name in {"params", "__pycache__"} or source.name.startswith("_"):
            continue
        found.append(Notebook(source.parent.name, source.stem, source, _parameters_cell(source)))
    return found


def select(notebooks: list[Notebook], selectors: list[str]) -> list[Notebook]:
    """Keep notebooks named ``paper/experiment`` or belonging to ``paper``; unknown selectors raise."""
    if not selectors:
        return notebooks
    chosen = []
    for sel in selectors:
        sel = sel.strip("/").removesuffix(".py").removeprefix("notebooks/")
        hits = [nb for nb in notebooks if nb.name == sel or nb.paper == sel]
        if not hits:
            names = ", ".join(nb.name for nb in notebooks)
            raise StudyError(f"no notebook matches {sel!r}; known notebooks: {names}")
        chosen.extend(nb for nb in hits if nb not in chosen)
    return chosen


# --------------------------------------------------------------------------------------------------- parameters


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a mapping with the same key twice is an error: PyYAML silently keeps the
    last value, so a profile that sets a parameter twice would run with one of them without a word."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may legitimately repeat
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"found duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark.line
                except TypeError:  # unhashable key: the base class reports it
                    continue
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str):
    """(data, root node) of a YAML document with :class:`_StrictLoader`; raises yaml.YAMLError."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, int | None, str]:
    """(1-based line, 1-based column, one-line description) of a PyYAML error (line and column None if unknown)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        text = ": ".join(str(part) for part in (exc.context, exc.problem) if part)
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return mark.line + 1, mark.column + 1, text or type(exc).__name__
        return None, None, text or type(exc).__name__
    return None, None, " ".join(str(exc).split()) or type(exc).__name__


def _value_line(node, *keys) -> int | None:
    """1-based line of the value at ``keys`` in a composed YAML mapping (None if not found)."""
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if node is None:
            return None
    return node.start_mark.line + 1


def _check_parameters(value, what: str, where: str) -> dict:
    """A YAML value that must be a mapping of parameter names (strings) to values; None means empty."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StudyError(f"{where}: {what} must be a mapping of parameter names to values, found a "
                         f"{type(value).__name__} ({value!r:.60})")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise StudyError(f"{where}: {what} has parameter names that are not strings: {bad[:3]}")
    return value


def load_profile(profile: str, root: Path | None = None, _seen: tuple[str, ...] = ()) -> dict:
    """Read ``notebooks/params/<profile>.yaml`` → {'defaults': {...}, 'notebooks': {name: {...}}}.

    A profile may start from another one with ``extends: <profile>``: its ``defaults`` and each notebook's
    parameters are laid over the other's, name by name (``paper-dry`` is ``paper`` with tiny fake data).
    ``start_first: [name, ...]`` lists notebooks the runner submits before the others, in that order (the long
    ones: with parallel jobs, a long notebook started last keeps one job busy after the rest are done); the
    others follow in name order. A profile that extends another keeps the other's list unless it has its own.
    Raises StudyError naming the file (and the line where YAML gives one) for a file that is not valid YAML, has a
    key twice, or is not a mapping of ``defaults`` (parameter → value) and ``notebooks`` (name → parameters), and
    for an ``extends`` that names an unknown profile or goes round in a circle.
    """
    if profile not in PROFILES:
        raise StudyError(f"profile must be one of {PROFILES}, got {profile!r}")
    path = notebooks_dir(root) / "params" / f"{profile}.yaml"
    if not path.is_file():
        raise StudyError(f"profile file {path} is missing")
    try:
        data, node = _load_yaml(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"{path}: cannot read the profile ({exc})") from None
    except yaml.YAMLError as exc:
        line, column, problem = _yaml_problem(exc)
        at = f":{line}:{column}" if line else ""
        raise StudyError(f"{path}{at}: not a valid profile: {problem}") from None

    def at(*keys) -> str:
        line = _value_line(node, *keys)
        return f"{path}:{line}" if line else str(path)

    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StudyError(f"{at()}: a profile must be a mapping with 'defaults' and 'notebooks', found a "
                         f"{type(data).__name__} ({data!r:.60})")
    unknown = set(data) - {"defaults", "notebooks", "extends", "cluster", "start_first"}
    if unknown:
        raise StudyError(f"{path}: unknown top-level keys {sorted(map(str, unknown))} "
                         "(expected 'defaults', 'notebooks', 'extends', 'cluster', 'start_first')")
    first = data.get("start_first")
    if first is not None and (not isinstance(first, list) or not all(isinstance(n, str) for n in first)
                              or len(set(first)) != len(first)):
        raise StudyError(f"{at('start_first')}: 'start_first' must be a list of distinct notebook names "
                         f"'<paper>/<experiment>', found {first!r:.80}")
    from faithlab.study import cluster as clusters

    try:
        resources = clusters.check_resources(data.get("cluster"), f"{at('cluster')}: 'cluster'")
    except clusters.ClusterError as exc:
        raise StudyError(str(exc)) from None
    defaults = _check_parameters(data.get("defaults"), "'defaults'", at("defaults"))
    notebooks = data.get("notebooks")
    if notebooks is None:
        notebooks = {}
    if not isinstance(notebooks, dict):
        raise StudyError(f"{at('notebooks')}: 'notebooks' must be a mapping of '<paper>/<experiment>' to parameters, "
                         f"found a {type(notebooks).__name__} ({notebooks!r:.60})")
    checked = {}
    for name, params in notebooks.items():
        if not isinstance(name, str):
            raise StudyError(f"{at('notebooks')}: notebook names must be strings, found {name!r}")
        checked[name] = _check_parameters(params, f"'notebooks: {name}'", at("notebooks", name))
    base = data.get("extends")
    if base is None:
        return {"defaults": defaults, "notebooks": checked, "cluster": resources, "start_first": first or []}
    if base not in PROFILES:
        raise StudyError(f"{at('extends')}: 'extends' must name one of the profiles {PROFILES}, got {base!r}")
    if base == profile or base in _seen:
        raise StudyError(f"{at('extends')}: profiles extend each other in a circle: "
                         f"{' -> '.join((*_seen, profile, base))}")
    parent = load_profile(base, root, (*_seen, profile))
    merged = {name: dict(params) for name, params in parent["notebooks"].items()}
    for name, params in checked.items():
        merged.setdefault(name, {}).update(params)
    return {"defaults": {**parent["defaults"], **defaults}, "notebooks": merged,
            "cluster": {**parent["cluster"], **resources},
            "start_first": parent["start_first"] if first is None else first}


def parse_overrides(pairs: list[tuple[str, str]] | None) -> dict:
    """``-p name value`` pairs → dict; values are parsed as YAML (``3`` → int, ``[1, 2]`` → list).

    Raises StudyError naming the parameter for a name that is not an identifier (e.g. ``-p n=3 ...``) or a value
    that is not valid YAML or has a key twice.
    """
    overrides = {}
    for name, value in pairs or []:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            left, eq, right = name.partition("=")
            hint = f"; did you mean -p {left} {right!r}?" if eq else ""
            raise StudyError(f"-p {name!r} {value!r}: {name!r} is not a parameter name (usage: -p NAME VALUE){hint}")
        try:
            overrides[name] = _load_yaml(value)[0]
        except yaml.YAMLError as exc:
            _, column, problem = _yaml_problem(exc)
            at = f" at column {column}" if column else ""
            raise StudyError(f"-p {name}: value {value!r} is not valid YAML ({problem}{at})") from None
    return overrides


def merge_parameters(nb: Notebook, profile: str, spec: dict, overrides: dict) -> dict:
    """Parameters for one run: notebook defaults < profile defaults < profile per-notebook < command line.

    Profile ``defaults`` apply only to names the notebook defines; per-notebook and command-line names must exist
    in the notebook's parameters cell (typos fail loudly).
    """
    params = dict(nb.defaults)
    params.update({k: v for k, v in spec["defaults"].items() if k in nb.defaults})
    per_nb = spec["notebooks"].get(nb.name) or {}
    unknown = set(per_nb) - set(nb.defaults)
    if unknown:
        raise StudyError(f"profile {profile!r} sets {sorted(unknown)} for {nb.name}, which has no such parameter")
    params.update(per_nb)
    params.update({k: v for k, v in overrides.items() if k in nb.defaults})
    if "profile" in nb.defaults:
        params["profile"] = profile
    return params


# --------------------------------------------------------------------------------------------------- stamps


def _hash_files(files) -> str:
    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(str(f.name).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()


def library_hash() -> str:
    """Hash of the library's source files (a change in lib re-runs every notebook)."""
    return _hash_files(Path(__file__).resolve().parents[1].rglob("*.py"))


def run_key(nb: Notebook, params: dict, lib_hash: str, root: Path) -> str:
    lock = root / "uv.lock"
    payload = {
        "source": hashlib.sha256(nb.source.read_bytes()).hexdigest(),
        "params": params,
        "lib": lib_hash,
        "lock": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def output_paths(nb: Notebook, generated: Path) -> tuple[Path, Path]:
    """(executed notebook, artifact folder) of a notebook."""
    return generated / nb.paper / f"{nb.experiment}.ipynb", generated / nb.paper / nb.experiment


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def is_current(nb: Notebook, key: str, generated: Path, echo=None) -> bool:
    """Whether the notebook's outputs are complete and stamped with ``key``; an unreadable stamp is reported (with
    ``echo``, default stderr) and counts as missing."""
    ipynb, folder = output_paths(nb, generated)
    stamp = folder / STAMP
    if not (ipynb.is_file() and stamp.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found a {type(data).__name__}")
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        (echo or _stderr)(f"{stamp}: unreadable stamp ({_first_line(exc)}); {nb.name} will be executed again")
        return False
    return data.get("key") == key


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# --------------------------------------------------------------------------------------------------- locks, promotion


def _slug(paper: str, experiment: str) -> str:
    """Name of a notebook's lock, journal and (as prefix) staging folders."""
    return f"{paper}--{experiment}"


@contextlib.contextmanager
def _locked(path: Path, *, block: bool = True, on_wait=None):
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block.

    Yields "free" (taken at once), "waited" (taken after ``on_wait()`` and waiting for the holder) or, only with
    ``block=False``, "busy" (not taken). flock belongs to the open file, so it excludes other processes and other
    threads alike, and the system releases it when its holder dies: a killed runner never leaves a lock behind.
    Lock files are never deleted: a process waiting on a deleted file's lock would not exclude one that creates a
    new file under the same name.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by the kernels (PEP 446)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            state = "free"
        except BlockingIOError:
            state = "busy"
        if state == "busy" and block:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = "waited"
        yield state
    finally:
        os.close(fd)  # releases the lock


def _notebook_lock(generated: Path, slug: str) -> Path:
    return generated / LOCKS / f"{slug}.lock"


def _outputs_lock(generated: Path) -> Path:
    """Taken for each promotion and while the scorecard is read and written (never for long), so the scorecard
    always sees every notebook either before or after its promotion."""
    return generated / LOCKS / "outputs.lock"


def _new_staging(generated: Path, slug: str, experiment: str) -> Path:
    """Create ``<generated>/.staging/<slug>--<id>/<experiment>/`` and return ``<generated>/.staging/<slug>--<id>``."""
    for _ in range(10):
        staging = generated / STAGING / f"{slug}--{uuid.uuid4().hex[:8]}"
        try:
            (staging / experiment).mkdir(parents=True)
            return staging
        except FileNotFoundError:  # another runner's end-of-run tidy removed the empty .staging in between
            continue
    raise StudyError(f"could not create a staging folder under {generated / STAGING}")


def _move_in(paper: str, experiment: str, staging: Path, generated: Path) -> None:
    """Move the outputs staged in ``staging`` into place, replacing the old ones; safe to repeat after a kill.

    The executed notebook leaves first and arrives last, so in every intermediate state ``<experiment>.ipynb`` is
    absent: an ``.ipynb`` always sits beside the complete folder it was executed with, which is what
    :func:`is_current` and :func:`write_scorecard` rely on. Each step checks what is left to do, so a recovery can
    run this again from whatever state a kill left.
    """
    ipynb, folder = generated / paper / f"{experiment}.ipynb", generated / paper / experiment
    staged_ipynb, staged_folder = staging / f"{experiment}.ipynb", staging / experiment
    if not staged_ipynb.is_file():  # nothing left to move: the promotion was complete (or its staging is gone)
        return
    ipynb.parent.mkdir(parents=True, exist_ok=True)
    trash = staging / f"old-{uuid.uuid4().hex[:8]}"  # a fresh one per attempt: an earlier attempt's is not empty
    trash.mkdir()
    if ipynb.exists():
        os.replace(ipynb, trash / ipynb.name)
    if staged_folder.is_dir():  # else it was moved in before the kill
        if folder.exists():
            os.replace(folder, trash / folder.name)
        os.replace(staged_folder, folder)
    os.replace(staged_ipynb, ipynb)


def _promote(nb: Notebook, key: str, staging: Path, generated: Path) -> None:
    """Replace a notebook's outputs by the ones staged in ``staging`` (caller holds the notebook's lock)."""
    journal = generated / JOURNAL / f"{_slug(nb.paper, nb.experiment)}.json"
    entry = {"paper": nb.paper, "experiment": nb.experiment, "key": key, "staging": staging.name}
    with _locked(_outputs_lock(generated)):
        # Written before the first rename and removed after the last: a journal on disk means "this promotion may
        # be half done; finish it from <staging>" (see _recover_notebook).
        paths.atomic_write(journal, lambda tmp: tmp.write_text(json.dumps(entry)))
        _move_in(nb.paper, nb.experiment, staging, generated)
        journal.unlink()


def _recover_notebook(slug: str, generated: Path, echo) -> None:
    """Finish a promotion that a killed runner left half done and delete that notebook's left-over staging folders.

    The caller holds the notebook's lock, so no live runner uses any ``.staging/<slug>--*`` folder.
    """
    journal = generated / JOURNAL / f"{slug}.json"
    if journal.exists():
        try:
            entry = json.loads(journal.read_text())
            paper, experiment, staging, key = entry["paper"], entry["experiment"], entry["staging"], entry["key"]
            # The journal names folders that are moved: accept only what _promote writes, nothing outside.
            if _slug(paper, experiment) != slug or Path(staging).name != staging or not staging.startswith(f"{slug}--"):
                raise ValueError("it names another notebook or folder")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            echo(f"{journal}: unreadable promotion journal ({_first_line(exc)}); ignored (an incomplete notebook "
                 "is executed again)")
        else:
            with _locked(_outputs_lock(generated)):
                _move_in(paper, experiment, generated / STAGING / staging, generated)
            nb = Notebook(paper, experiment, Path())
            if is_current(nb, key, generated, echo):
                echo(f"[recovered] {nb.name}: completed the promotion of its outputs that a killed runner left")
            elif output_paths(nb, generated)[0].is_file():
                echo(f"[recovered] {nb.name}: the outputs a killed runner was promoting are gone; previous ones kept")
            else:
                echo(f"[recovered] {nb.name}: a killed runner left its outputs incomplete; it will be executed again")
        journal.unlink(missing_ok=True)
    for leftover in _staging_folders(generated):
        if leftover.name.rsplit("--", 1)[0] == slug:
            shutil.rmtree(leftover, ignore_errors=True)


def recover(generated: Path | None = None, echo=print) -> None:
    """Complete the promotions that killed runners left half done and delete their staging folders.

    Each notebook is handled under its lock, taken without waiting: a notebook that another runner is executing is
    left to that runner, which recovers it itself before executing it.
    """
    generated = Path(generated or paths.generated_dir())
    slugs = set()
    if (generated / JOURNAL).is_dir():
        paths.remove_stale_tmp(generated / JOURNAL)
        slugs.update(p.stem for p in (generated / JOURNAL).glob("*.json"))
    slugs.update(p.name.rsplit("--", 1)[0] for p in _staging_folders(generated) if "--" in p.name)
    for slug in sorted(slugs):
        with _locked(_notebook_lock(generated, slug), block=False) as state:
            if state != "busy":
                _recover_notebook(slug, generated, echo)


def _staging_folders(generated: Path) -> list[Path]:
    try:
        return list((generated / STAGING).iterdir())
    except FileNotFoundError:  # none yet, or another runner's _tidy has just removed the empty folder
        return []


def _tidy(generated: Path) -> None:
    """Remove ``.staging`` if no runner has a folder in it (rmdir fails on a non-empty folder)."""
    with contextlib.suppress(OSError):
        os.rmdir(generated / STAGING)


# --------------------------------------------------------------------------------------------------- execution


# Run in each kernel before the notebook's first cell (IPython's exec_lines, hidden from the user namespace).
# tqdm.auto (imported by captum and huggingface_hub, hence by faithlab.explainers and timm) prints a notice the
# first time it is imported in a Jupyter kernel: "IProgress not found" without ipywidgets, "Using
# `tqdm.autonotebook.tqdm` in notebook mode" (TqdmExperimentalWarning) with them. Neither is about our results
# (faithlab never shows those libraries' progress bars, and a static page could not show a widget anyway), so the
# runner's kernels ignore exactly these two tqdm messages; every other warning still prints in the notebook.
KERNEL_STARTUP = (
    "import warnings as _fl_warnings, tqdm as _fl_tqdm; "
    "_fl_warnings.filterwarnings('ignore', category=_fl_tqdm.TqdmWarning, "
    "message=r'IProgress not found|Using `tqdm\\.autonotebook\\.tqdm` in notebook mode'); "
    "del _fl_warnings, _fl_tqdm"
)


def kernel_options() -> dict:
    """papermill/nbclient options for the kernels the runner starts.

    A kernel reached over TCP without transport encryption logs "[IPKernelApp] WARNING | Kernel is running over
    TCP without encryption" on every start. The kernel manager provisions CurveZMQ keys instead when pyzmq has
    Curve and the kernelspec declares it (ipykernel's does): the kernel's sockets are then encrypted and it has
    nothing to warn about, while any other kernel warning still reaches the runner's terminal. Only without Curve
    support does the runner fall back to keeping the kernel's log at errors.
    """
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    options: dict = {"extra_arguments": [f"--IPKernelApp.exec_lines={KERNEL_STARTUP}"]}
    if zmq.has("curve") and KernelManager.class_traits().get("transport_encryption") is not None:
        options["config"] = Config({"KernelManager": {"transport_encryption": "auto"}})
    else:
        options["extra_arguments"].append("--IPKernelApp.log_level=ERROR")
    return options


@dataclass
class Result:
    name: str
    status: str  # "ran", "cached", "failed"
    seconds: float = 0.0
    message: str = ""
    cell_error: bool = False  # failed because a cell raised (not a kernel or time-out problem)


def execute(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int, echo=print, *,
            shard: int | None = None, n_shards: int = 1, profile: str | None = None) -> Result:
    """Execute one notebook with papermill into its own staging folder; move outputs into place only on success.

    Holds the notebook's lock throughout (see the module docstring); when another runner held it, the notebook is
    not executed again if that runner left it current for ``key``.

    Sharded notebooks (``n_shards`` > 1, see :func:`shard_plan`): with ``shard=i`` this executes shard i only — the
    notebook with parameter ``shard = i``, up to its last cell tagged ``shard`` — whose per-sample tables go to the
    shard store of ``key`` (nothing is promoted; a shard already stored for ``key`` is not executed again); with
    ``shard=None`` it is the reduce step: the whole notebook with ``shard = None``, whose
    :func:`faithlab.outputs.sharded` calls read the stored shards, promoted like any run. ``key`` is the reduce
    step's run key in both cases.

    A successful execution's notebook is made a page of the book before it is promoted
    (``faithlab.study.notebook_page.finish``: one parameters cell headed with ``profile``, the chapter link
    and the run time, its stderr moved to ``<experiment>/stderr.log`` and reported with ``echo``).
    """
    from faithlab.study import cluster

    with cluster.EXECUTION_LOCK:
        if shard is not None:
            return _execute_shard(nb, params, key, root, generated, timeout, shard, n_shards)
        start = time.monotonic()
        slug = _slug(nb.paper, nb.experiment)

        def waiting():
            echo(f"[waiting] {nb.name}: another runner is executing it; waiting for it to finish")

        with _locked(_notebook_lock(generated, slug), on_wait=waiting) as state:
            _recover_notebook(slug, generated, echo)
            if state == "waited" and is_current(nb, key, generated, echo):
                return Result(nb.name, "cached", time.monotonic() - start, "executed by another runner meanwhile")
            store = shard_store(nb, key, generated) if n_shards > 1 else None
            result = _execute_locked(nb, params, key, root, generated, timeout, start, shards=store,
                                     page={"profile": profile, "echo": echo, "n_shards": n_shards})
            if store is not None and result.status == "ran":
                _remove_store(nb, key, generated)
            return result


SHARDS = ".shards"  # per-sample tables of sharded notebooks: <generated>/.shards/<slug>/<key[:16]>/<i>/<name>.csv
SHARD_DONE = ".done"  # in a shard's folder: the run key it was computed for (written last)
SHARD_SECONDS = ".seconds"  # in a shard's folder: how long its execution took (for the page's run time)


def shard_store(nb: Notebook, key: str, generated: Path) -> Path:
    """Folder of the shards computed for the reduce step's run ``key`` (one sub-folder per shard)."""
    return generated / SHARDS / _slug(nb.paper, nb.experiment) / key[:16]


def _remove_store(nb: Notebook, key: str, generated: Path) -> None:
    shutil.rmtree(shard_store(nb, key, generated), ignore_errors=True)
    with contextlib.suppress(OSError):
        (generated / SHARDS / _slug(nb.paper, nb.experiment)).rmdir()
        (generated / SHARDS).rmdir()


def shard_plan(nb: Notebook, params: dict) -> int:
    """How many shards a notebook runs as: its ``n_shards`` parameter when it declares both ``shard`` and
    ``n_shards`` (else 1). Raises StudyError for an ``n_shards`` that is not a positive integer or a ``shard`` set
    by a profile or ``-p`` (the runner sets it)."""
    if not {"shard", "n_shards"} <= set(nb.defaults):
        return 1
    n = params["n_shards"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StudyError(f"{nb.name}: n_shards must be a positive integer, got {n!r}")
    if params["shard"] is not None:
        raise StudyError(f"{nb.name}: shard is set by the runner (give n_shards instead), got shard = "
                         f"{params['shard']!r}")
    return n


def _shard_cells(notebook, source: Path):
    """The notebook cut after its last cell tagged ``shard`` (what a shard executes)."""
    tagged = [i for i, c in enumerate(notebook.cells) if "shard" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise StudyError(f"{source}: declares shard and n_shards but has no cell tagged 'shard' (the last cell "
                         "a shard executes)")
    notebook.cells = notebook.cells[:tagged[-1] + 1]
    return notebook


def _execute_shard(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int, shard: int,
                   n_shards: int) -> Result:
    """Execute shard ``shard`` of ``n_shards`` into the shard store of ``key`` (see :func:`execute`)."""
    start = time.monotonic()
    name = f"{nb.name} [shard {shard + 1}/{n_shards}]"
    store = shard_store(nb, key, generated)
    folder = store / str(shard)
    lock = generated / LOCKS / f"{_slug(nb.paper, nb.experiment)}--{key[:16]}--shard-{shard}.lock"
    with _locked(lock):
        done = folder / SHARD_DONE
        if done.is_file() and done.read_text().strip() == key:
            return Result(name, "cached", time.monotonic() - start, "shard already computed")
        shutil.rmtree(folder, ignore_errors=True)
        result = _execute_locked(nb, {**params, "shard": shard}, key, root, generated, timeout, start,
                                 shards=store, shard=shard)
        result.name = name
        if result.status == "ran":
            paths.atomic_write(folder / SHARD_SECONDS, lambda tmp: tmp.write_text(f"{result.seconds:.3f}"))
            paths.atomic_write(done, lambda tmp: tmp.write_text(key))
        return result


def _shard_seconds(store: Path, n_shards: int) -> float:
    """The execution seconds the shards of a store recorded (a shard without a record counts 0)."""
    total = 0.0
    for i in range(n_shards):
        with contextlib.suppress(OSError, ValueError):
            total += float((store / str(i) / SHARD_SECONDS).read_text())
    return total


def _execute_locked(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int,
                    start: float, shards: Path | None = None, shard: int | None = None,
                    page: dict | None = None) -> Result:
    """Execute with papermill into a staging folder and, unless a shard, finish the page and promote it. page: the
    options of ``faithlab.study.notebook_page.finish`` (``profile``, ``echo``, ``n_shards``)."""
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    ipynb, folder = output_paths(nb, generated)
    if shard is None:
        staging = _new_staging(generated, _slug(nb.paper, nb.experiment), nb.experiment)
        failed = root / "_build" / "failed" / nb.paper / f"{nb.experiment}.ipynb"
    else:  # a shard's outputs are discarded but for its tables in the store: it stages beside them
        staging = shards / f"staging-{shard}-{uuid.uuid4().hex[:8]}"
        (staging / nb.experiment).mkdir(parents=True)
        failed = root / "_build" / "failed" / nb.paper / f"{nb.experiment}--shard-{shard}.ipynb"
    staged_folder = staging / nb.experiment
    source_ipynb = staging / "source.ipynb"
    staged_ipynb = staging / f"{nb.experiment}.ipynb"
    try:
        source_nb = jupytext.read(nb.source, fmt="py:percent")
        if shard is not None:
            source_nb = _shard_cells(source_nb, nb.source)
        source_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        source_nb.metadata.setdefault("language_info", {"name": "python"})
        nbformat.write(source_nb, source_ipynb)

        env_backup = {k: os.environ.get(k) for k in ("FAITHLAB_OUTPUT_DIR", "FAITHLAB_NOTEBOOK", "FAITHLAB_ROOT",
                                                     paths.SHARDS_ENV, _progress.ENV)}
        os.environ.update(FAITHLAB_OUTPUT_DIR=str(staged_folder), FAITHLAB_NOTEBOOK=nb.name, FAITHLAB_ROOT=str(root))
        # The library's progress bars off (progress=None reads it): in a page of the book they are stderr noise.
        os.environ[_progress.ENV] = "0"
        if shards is not None:
            os.environ[paths.SHARDS_ENV] = str(shards)
        else:
            os.environ.pop(paths.SHARDS_ENV, None)
        os.environ.setdefault("MPLBACKEND", "Agg")
        ran_from = time.monotonic()
        try:
            papermill.execute_notebook(
                str(source_ipynb),
                str(staged_ipynb),
                parameters=params,
                kernel_name="python3",
                language="python",
                cwd=str(root),
                execution_timeout=timeout,
                progress_bar=False,
                log_output=False,
                **kernel_options(),
            )
        except Exception as exc:  # papermill raises PapermillExecutionError with the cell's traceback
            failed.parent.mkdir(parents=True, exist_ok=True)
            if staged_ipynb.is_file():
                shutil.copyfile(staged_ipynb, failed)
                where = f"traceback in {failed}"
            else:
                failed.unlink(missing_ok=True)  # an older traceback would be taken for this failure's
                where = "the notebook did not start (see the message above)"
            cell_error = isinstance(exc, PapermillExecutionError)
            if cell_error and shard is None:
                # No stale page: the notebook itself failed, so its previous outputs no longer describe its source.
                # We hold its lock, so they are this notebook's outputs, which this run was to replace; the .ipynb
                # goes first (an .ipynb never stands beside an incomplete folder).
                with _locked(_outputs_lock(generated)):
                    _remove(ipynb)
                    _remove(folder)
            elif cell_error:
                where += "; its previous outputs are removed once the other shards are done"
            else:
                # The kernel did not start or died, a cell timed out: nothing says the previous outputs are wrong
                # for good. They are kept (their stamp does not match, so the next run executes the notebook again).
                where += "; its previous outputs are kept"
            return Result(nb.name, "failed", time.monotonic() - start, f"{_last_line(exc)}\n    {where}",
                          cell_error=cell_error)
        finally:
            for k, v in env_backup.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

        if shard is not None:  # its tables are in the store already (faithlab.outputs.sharded wrote them)
            failed.unlink(missing_ok=True)
            return Result(nb.name, "ran", time.monotonic() - start)
        page = page or {}
        n_shards = page.get("n_shards", 1)
        seconds = time.monotonic() - ran_from + (_shard_seconds(shards, n_shards) if shards is not None else 0.0)
        notebook_page.finish(staged_ipynb, name=nb.name, params=params, profile=page.get("profile"), seconds=seconds,
                             root=root, generated=generated, log_folder=staged_folder,
                             final_log=folder / notebook_page.STDERR_LOG, shards=n_shards if n_shards > 1 else 0,
                             echo=page.get("echo") or print)
        (staged_folder / STAMP).write_text(json.dumps({"key": key, "params": params}, sort_keys=True, default=str))
        _promote(nb, key, staging, generated)
        failed.unlink(missing_ok=True)  # an old traceback no longer describes this notebook
        return Result(nb.name, "ran", time.monotonic() - start)
    finally:
        # Only this run uses this folder. It is kept when a promotion was interrupted (by an exception such as
        # KeyboardInterrupt; a kill runs no code at all): the next holder of the lock finishes the journaled
        # promotion from it, then deletes it (_recover_notebook).
        if shard is not None or not (generated / JOURNAL / f"{_slug(nb.paper, nb.experiment)}.json").exists():
            shutil.rmtree(staging, ignore_errors=True)


def _last_line(exc: BaseException) -> str:
    """Last non-empty line of an exception's message (papermill puts the error itself last)."""
    summary = str(exc).strip().splitlines()
    return next((line for line in reversed(summary) if line.strip()), type(exc).__name__)


def _execute_job(args, kwargs=None) -> Result:
    return execute(*args, **(kwargs or {}))


@dataclass
class _Plan:
    """One notebook to execute: its shard jobs (none when unsharded) and the job that executes and promotes it."""

    nb: Notebook
    args: tuple  # (nb, params, key, root, generated, timeout) of the final execution
    n_shards: int = 1
    shards_left: set = field(default_factory=set)
    shard_failure: Result | None = None
    shard_seconds: float = 0.0
    profile: str | None = None


class _Inline:
    """Executes each job as it is submitted, in this process (``-j 1`` without a cluster)."""

    def __init__(self, echo):
        self.echo = echo
        self.started = 0

    def submit(self, label: str, total: int, args: tuple, kwargs: dict) -> futures.Future:
        self.started += 1
        self.echo(f"[{self.started}/{total}] {label} ...")
        future: futures.Future = futures.Future()
        try:
            future.set_result(execute(*args, echo=self.echo, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - reported as the notebook's failure below
            future.set_exception(exc)
        return future

    @staticmethod
    def wait(pending):
        return set(pending)


class _Pool:
    """Local worker processes (``-j N``)."""

    def __init__(self, jobs: int):
        import multiprocessing

        self.pool = futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, label, total, args, kwargs):
        return self.pool.submit(_execute_job, args, kwargs)

    @staticmethod
    def wait(pending):
        return futures.wait(pending, return_when=futures.FIRST_COMPLETED).done


class _Dask:
    """A Dask distributed cluster (``--cluster``): each job is a task that needs one ``notebook`` resource. A task
    whose worker dies is given to another worker by the scheduler, i.e. its notebook is executed again."""

    def __init__(self, connection):
        self.connection = connection

    def submit(self, label, total, args, kwargs):
        from faithlab.study import cluster

        resources = {cluster.RESOURCE: 1} if self.connection.uses_resources else None
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")
        return self.connection.client.submit(_execute_job, args, kwargs, pure=False, resources=resources,
                                             key=f"faithlab-{slug}-{uuid.uuid4().hex[:8]}")

    @staticmethod
    def wait(pending):
        import distributed

        return set(distributed.wait(list(pending), return_when="FIRST_COMPLETED").done)


def _outcome(future, label: str, start: float) -> Result:
    """A job's Result, or a failed Result when the job itself raised (e.g. a cluster gave up on a task whose workers
    kept dying)."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001
        return Result(label, "failed", time.monotonic() - start, f"{type(exc).__name__}: {_first_line(exc)}")


def _drop_outputs(nb: Notebook, generated: Path) -> None:
    """Remove a notebook's outputs (a shard's cell failed: they no longer describe its source), under its lock."""
    ipynb, folder = output_paths(nb, generated)
    with _locked(_notebook_lock(generated, _slug(nb.paper, nb.experiment))):
        with _locked(_outputs_lock(generated)):
            _remove(ipynb)
            _remove(folder)


def _schedule(plans: list[_Plan], executor, echo) -> list[Result]:
    """Run every plan's shards, then (when all succeeded) its final execution; one Result per notebook."""
    total = sum(p.n_shards + (p.n_shards > 1) for p in plans)
    pending: dict = {}  # future -> (plan, shard index or None, start)
    results: list[Result] = []
    done = 0

    def submit(plan: _Plan, shard: int | None) -> None:
        kwargs = {"n_shards": plan.n_shards} if plan.n_shards > 1 else {}
        kwargs["profile"] = plan.profile
        label = plan.nb.name
        if shard is not None:
            kwargs["shard"] = shard
            label = f"{label} [shard {shard + 1}/{plan.n_shards}]"
        elif plan.n_shards > 1:
            label = f"{label} [reduce of {plan.n_shards} shards]"
        pending[executor.submit(label, total, plan.args, kwargs)] = (plan, shard, time.monotonic(), label)

    for plan in plans:
        if plan.n_shards > 1:
            plan.shards_left = set(range(plan.n_shards))
            for i in range(plan.n_shards):
                submit(plan, i)
        else:
            submit(plan, None)
    while pending:
        for future in executor.wait(pending):
            plan, shard, start, label = pending.pop(future)
            result = _outcome(future, label, start)
            done += 1
            if shard is None:
                if plan.n_shards > 1:
                    result.name = plan.nb.name
                    result.seconds += plan.shard_seconds
                    result.message = (result.message + "; " if result.message else "") + f"{plan.n_shards} shards"
                results.append(_report(result, done, total, echo))
                continue
            _report(result, done, total, echo)
            plan.shards_left.discard(shard)
            plan.shard_seconds += result.seconds
            if result.status == "failed" and plan.shard_failure is None:
                plan.shard_failure = result
            if plan.shards_left:
                continue
            if plan.shard_failure is None:
                submit(plan, None)
                continue
            failure = plan.shard_failure
            if failure.cell_error:
                _drop_outputs(plan.nb, plan.args[4])
            results.append(Result(plan.nb.name, "failed", plan.shard_seconds, failure.message, failure.cell_error))
            echo(f"FAILED {plan.nb.name}: {failure.name} failed, the notebook was not reduced")
    return results


def run(
    selectors: list[str] | None = None,
    profile: str = "book",
    overrides: dict | None = None,
    jobs: int = 1,
    force: bool = False,
    timeout: int = 3600,
    root: Path | None = None,
    generated: Path | None = None,
    echo=print,
    cluster=None,
) -> list[Result]:
    """Execute the selected notebooks (all by default) with a profile; return one Result per notebook.

    cluster: None (this machine: ``jobs`` processes), a :class:`faithlab.study.cluster.Connection`, or a
    ``--cluster`` value (an address, ``local[:N]``, ``slurm``, ``pbs``, ``sge``, ``lsf``; ``jobs`` is then the
    number of local workers or batch jobs). Notebooks that declare ``shard``/``n_shards`` with ``n_shards`` > 1 run
    as that many shards and a reduce step (:func:`execute`), here or on the cluster.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise StudyError(f"timeout must be a positive number of seconds (allowed per cell), got {timeout!r}")
    root = Path(root or paths.project_root()).resolve()
    generated = Path(generated or paths.generated_dir()).resolve()
    overrides = overrides or {}
    notebooks = select(discover(root), selectors or [])
    if overrides:
        used = set().union(*(nb.defaults for nb in notebooks)) if notebooks else set()
        unknown = set(overrides) - used
        if unknown:
            raise StudyError(f"-p {sorted(unknown)}: no selected notebook has such a parameter")
    spec = load_profile(profile, root)
    unknown_nbs = (set(spec["notebooks"]) | set(spec["start_first"])) - {nb.name for nb in discover(root)}
    if unknown_nbs:
        raise StudyError(f"profile {profile!r} names unknown notebooks {sorted(unknown_nbs)}")
    rank = {name: i for i, name in enumerate(spec["start_first"])}
    notebooks.sort(key=lambda nb: (rank.get(nb.name, len(rank)), nb.name))
    lib_hash = library_hash()
    recover(generated, echo)  # before the stamps are read: a half-promoted notebook may become current

    results: list[Result] = []
    plans = []
    for nb in notebooks:
        params = merge_parameters(nb, profile, spec, overrides)
        n_shards = shard_plan(nb, params)
        key = run_key(nb, params, lib_hash, root)
        if not force and is_current(nb, key, generated, echo):
            results.append(Result(nb.name, "cached"))
            echo(f"[cached] {nb.name}")
        else:
            plans.append(_Plan(nb, (nb, params, key, root, generated, timeout), n_shards, profile=profile))

    if plans:
        shards = sum(p.n_shards for p in plans if p.n_shards > 1)
        where = f"on the cluster {cluster}" if isinstance(cluster, str) else (
            "on the cluster" if cluster is not None else f"({jobs} in parallel)")
        echo(f"executing {len(plans)} notebook(s) with profile {profile!r} {where}"
             + (f", {shards} shard(s)" if shards else ""))
        results += _run_plans(plans, jobs, cluster, spec, root, generated, echo)
    # Never remove other runners' staging folders (a shared rmtree here once made a concurrent runner fail and
    # delete good outputs): each execution removes its own, and .staging goes only when empty.
    _tidy(generated)
    write_scorecard(generated, echo=echo)
    return results


def _run_plans(plans: list[_Plan], jobs: int, cluster, spec: dict, root: Path, generated: Path, echo) -> list[Result]:
    """Choose the executor (cluster, local processes or this process) and schedule the plans on it."""
    from faithlab.study import cluster as clusters

    if cluster is not None:
        if isinstance(cluster, str):
            try:
                connection = clusters.connect(cluster, workers=jobs, resources=spec.get("cluster"), root=root,
                                              environment={"FAITHLAB_GENERATED": str(generated)}, echo=echo)
            except clusters.ClusterError as exc:
                raise StudyError(str(exc)) from None
            with connection:
                return _schedule(plans, _Dask(connection), echo)
        return _schedule(plans, _Dask(cluster), echo)
    total = sum(p.n_shards + (p.n_shards > 1) for p in plans)
    if jobs > 1 and total > 1:
        # Parallel notebooks share the cores: one kernel's torch threads must not oversubscribe the others'.
        threads = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = clusters.local_threads(jobs, echo)
        pool = _Pool(jobs)
        try:
            return _schedule(plans, pool, echo)
        finally:
            pool.pool.shutdown()
            if threads is None:
                os.environ.pop("OMP_NUM_THREADS")
            else:
                os.environ["OMP_NUM_THREADS"] = threads
    return _schedule(plans, _Inline(echo), echo)


def _report(result: Result, done: int, total: int, echo) -> Result:
    if result.status == "failed":
        echo(f"[{done}/{total}] FAILED {result.name} after {result.seconds:.1f} s: {result.message}")
    elif result.status == "cached":
        echo(f"[{done}/{total}] up to date {result.name}: {result.message}")
    else:
        echo(f"[{done}/{total}] done {result.name} in {result.seconds:.1f} s")
    return result


# --------------------------------------------------------------------------------------------------- scorecard


def summarise(scorecard: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per paper of a scorecard frame (columns :data:`CLAIM_COLUMNS`) → one row per paper of
    :data:`faithlab.plots.CHAPTERS` present, in the book's order, with columns paper (display name,
    :data:`faithlab.plots.PAPER_NAMES`), one per verdict (:data:`faithlab.verdicts.VERDICTS` order) and total (its
    claims); then the row "all papers" (the five papers' sum); then the study's own checks (any other slug: basics,
    synthesis, ...), one row each named "<name> (study check)", which the papers' total does not count."""
    import pandas as pd

    from faithlab.plots import CHAPTERS, PAPER_NAMES, paper_order
    from faithlab.verdicts import VERDICTS

    papers = scorecard["paper"].astype(str)

    def row(p: str, name: str) -> list:
        return [name, *((scorecard["verdict"][papers == p] == v).sum() for v in VERDICTS), int((papers == p).sum())]

    ordered = paper_order(papers)
    rows = [row(p, PAPER_NAMES.get(p, p)) for p in ordered if p in CHAPTERS]
    table = pd.DataFrame(rows, columns=["paper", *VERDICTS, "total"]).astype({c: int for c in (*VERDICTS, "total")})
    table.loc[len(table)] = [ALL_PAPERS, *table[[*VERDICTS, "total"]].sum().astype(int)]
    for p in ordered:
        if p not in CHAPTERS:
            table.loc[len(table)] = row(p, f"{PAPER_NAMES.get(p, p)} {STUDY_CHECK}")
    return table.astype({c: int for c in (*VERDICTS, "total")})


def write_scorecard(generated: Path | None = None, echo=None) -> Path:
    """Collect the ``claims.csv`` of every notebook present into ``book/_generated/scorecard.csv`` (atomically),
    with the front page's ``scorecard_summary.csv`` (:func:`summarise`) and ``study_map.png``/``.svg``
    (:func:`faithlab.plots.study_map`, the metrics of :data:`faithlab.evaluation.PAPER_METRICS`); all three are
    written even when no claim exists, so the book never misses them. Returns the scorecard's path.

    A notebook is present when its executed ``<experiment>.ipynb`` stands beside its folder (a folder without it is
    an interrupted run's or an interactive session's). An unreadable ``claims.csv`` (or one with a verdict outside
    :data:`faithlab.verdicts.VERDICTS`) is skipped with a message (``echo``, default stderr) naming it. Runs under
    the outputs lock, so no promotion is seen half done and concurrent runners write the scorecard one after the
    other, each from the complete state of its moment.
    """
    import pandas as pd

    from faithlab import plots
    from faithlab.evaluation import PAPER_METRICS  # the runner knows no metric: the library lists them
    from faithlab.verdicts import VERDICTS

    generated = Path(generated or paths.generated_dir())
    echo = echo or _stderr
    generated.mkdir(parents=True, exist_ok=True)
    with _locked(_outputs_lock(generated)):
        frames = []
        for claims in sorted(generated.glob(f"*/*/{CLAIMS}")):
            folder = claims.parent
            if folder.parent.name.startswith("."):  # .staging and the like are not notebooks
                continue
            if not (folder.parent / f"{folder.name}.ipynb").is_file():
                echo(f"{claims}: skipped, {folder.parent.name}/{folder.name}.ipynb is missing (an interrupted run?)")
                continue
            try:
                frame = pd.read_csv(claims, dtype={"paper": str, "experiment": str, "claim": str})
                for column in _OPTIONAL_CLAIM_COLUMNS:
                    if column not in frame.columns:
                        frame[column] = ""
                missing = [c for c in CLAIM_COLUMNS if c not in frame.columns]
                if missing:
                    raise ValueError(f"no column {missing}")
                unknown = sorted(set(frame["verdict"].astype(str)) - set(VERDICTS))
                if unknown:
                    raise ValueError(f"verdicts {unknown} outside {VERDICTS}")
            except (OSError, ValueError) as exc:  # pandas' ParserError/EmptyDataError and UnicodeDecodeError too
                echo(f"{claims}: unreadable claims, skipped ({_first_line(exc)})")
                continue
            frames.append(frame)
        table = (pd.concat(frames, ignore_index=True)[list(CLAIM_COLUMNS)] if frames
                 else pd.DataFrame(columns=list(CLAIM_COLUMNS)))
        table = table.sort_values(["paper", "experiment", "claim"], kind="stable")
        card = paths.atomic_write(generated / SCORECARD, lambda tmp: table.to_csv(tmp, index=False))
        summary = summarise(table)
        paths.atomic_write(generated / SUMMARY, lambda tmp: summary.to_csv(tmp, index=False))
        fig = plots.study_map(table, PAPER_METRICS)
        for fmt in ("png", "svg"):
            paths.atomic_write(generated / f"{STUDY_MAP}.{fmt}",
                               lambda tmp: fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight"))
        return card


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m faithlab.study", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the notebooks and their parameters")
    run_p = sub.add_parser("run", help="execute notebooks (all by default)")
    run_p.add_argument("notebooks", nargs="*", help="paper or paper/experiment names (default: all)")
    run_p.add_argument("--profile", default="book", choices=PROFILES)
    run_p.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), dest="params")
    run_p.add_argument("-j", "--jobs", type=int, default=1, help="notebooks executed in parallel processes")
    run_p.add_argument("--force", action="store_true", help="execute even when the stamp matches")
    run_p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell")
    run_p.add_argument("--cluster", default=None, metavar="ADDRESS|local[:N]|slurm|pbs|sge|lsf",
                       help="execute on a Dask cluster: a scheduler address, a local cluster of N workers, or -j "
                            "batch jobs with the profile's 'cluster:' resources (see faithlab.study.cluster)")
    sub.add_parser("scorecard", help="rebuild book/_generated/scorecard.csv, its summary and the study map from the "
                                     "notebooks' claims")
    args = parser.parse_args(argv)

    try:
        if args.command == "list":
            for nb in discover():
                print(f"{nb.name}: {nb.defaults}")
            return 0
        if args.command == "scorecard":
            generated = paths.generated_dir()
            recover(generated)
            print(write_scorecard(generated))
            return 0
        if args.jobs < 1:
            parser.error("-j/--jobs must be a positive integer")
        if args.timeout < 1:
            parser.error("--timeout must be a positive number of seconds (allowed per cell)")
        results = run(args.notebooks, args.profile, parse_overrides(args.params), args.jobs, args.force, args.timeout,
                      cluster=args.cluster)
    except StudyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.status == "failed"]
    if failed:
        print(f"\n{len(failed)} notebook(s) failed:", file=sys.stderr)
        for r in failed:
            print(f"  {r.name}: {r.message}", file=sys.stderr)
        return 1
    ran = sum(r.status == "ran" for r in results)
    print(f"{ran} executed, {len(results) - ran} up to date")
    return 0


"""The study's notebooks and their parameters: discovery, parameters cells, profiles, ``-p`` overrides, merging.

Each notebook ``notebooks/<paper>/<experiment>.py`` (jupytext py:percent) has exactly one cell tagged ``parameters``,
parsed here (never executed). Its parameters are merged, lowest to highest priority, from that cell, the profile file
``notebooks/params/<profile>.yaml`` and ``-p name value`` on the command line (:func:`merge_parameters`). This module
is the bottom of the runner: every other module of :mod:`faithlab_study` may import it, it imports none of them but
:mod:`faithlab_study.runner.cluster` (a profile's ``cluster:`` section).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from faithlab import paths


PROFILES = ("smoke", "book", "paper", "paper-dry")


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


def listing(root: Path | None = None) -> list[Notebook]:
    """The notebooks of :func:`discover` without their parameters (``defaults`` empty): no notebook is read, so that
    the command line can check the names it was given before anything slow (no jupytext)."""
    base = notebooks_dir(root)
    return [Notebook(source.parent.name, source.stem, source) for source in sorted(base.glob("*/*.py"))
            if source.parent.name not in {"params", "__pycache__"} and not source.name.startswith("_")]


def with_parameters(nb: Notebook) -> Notebook:
    """``nb`` (e.g. from :func:`listing`) with the defaults of its parameters cell."""
    return Notebook(nb.paper, nb.experiment, nb.source, _parameters_cell(nb.source))


def discover(root: Path | None = None) -> list[Notebook]:
    """All notebooks under ``notebooks/<paper>/<experiment>.py``, sorted by name."""
    return [with_parameters(nb) for nb in listing(root)]


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
    from faithlab_study.runner import cluster as clusters

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


def check_overrides(notebooks: list[Notebook], overrides: dict) -> None:
    """Raise StudyError when a ``-p`` name is a parameter of none of ``notebooks`` (the selected ones)."""
    if not overrides:
        return
    used = set().union(*(nb.defaults for nb in notebooks)) if notebooks else set()
    unknown = set(overrides) - used
    if unknown:
        raise StudyError(f"-p {sorted(unknown)}: no selected notebook has such a parameter")


def check_profile_notebooks(profile: str, spec: dict, notebooks: list[Notebook]) -> None:
    """Raise StudyError when a profile (:func:`load_profile`) names a notebook that is not among ``notebooks`` (all
    of them)."""
    unknown = (set(spec["notebooks"]) | set(spec["start_first"])) - {nb.name for nb in notebooks}
    if unknown:
        raise StudyError(f"profile {profile!r} names unknown notebooks {sorted(unknown)}")


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

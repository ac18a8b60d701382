"""The house's layout rules (house v5), read from the source of both distributions (the library, lib/faithlab, and the
study, lib/faithlab-study/faithlab_study): the library never imports the study, no private name crosses a module, one
HTML module in each, one statistics module, the same files in every paper package, no module over 600 lines, notebooks
that read like chapters. Each rule has a planted violation that its checker must catch. (That the library's wheel
holds no study module is tests/project/test_wheel.py's.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib" / "faithlab"
STUDY = ROOT / "lib" / "faithlab-study" / "faithlab_study"
PACKAGES = (LIB, STUDY)  # the two distributions' import packages
NOTEBOOKS = ROOT / "notebooks"
MAX_LINES = 600
MAX_CELL = 25
PAPER_FILES = {"__init__", "setup", "experiments", "claims", "paper"}  # each a module or a package
PAPERS = ("ffidelity", "fewclass", "saco", "reco_mege", "trace", "synthesis")
HTML_MODULES = (LIB / "html.py", STUDY / "book" / "html.py")  # the library's report page; the study's pages
STATISTICS_MODULE = LIB / "metrics" / "statistics.py"


def _modules(*roots: Path):
    return sorted(p for root in roots or PACKAGES for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _package(path: Path) -> Path:
    return next(root for root in PACKAGES if path == root or root in path.parents)


def _module_name(path: Path) -> str:
    parts = path.relative_to(_package(path).parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    root = next((r for r in PACKAGES if r.name == dotted.split(".")[0]), None)
    if root is None:
        return False
    base = root.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


# -- the library never imports the study ----------------------------------------------------------------------------

def study_imports(path: Path, source: str | None = None) -> list[str]:
    """The lines of ``path`` (a library module) that import the study, by an import statement or by name."""
    tree = ast.parse(path.read_text() if source is None else source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            names = [module] + [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if re.fullmatch(r"faithlab_study(\.[\w.]+)?", node.value) else []
        else:
            continue
        if any(n == "faithlab_study" or n.startswith("faithlab_study.") for n in names):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_library_never_imports_the_study():
    assert not (LIB / "study").exists(), "the study is its own distribution (lib/faithlab-study), not a library folder"
    found = [hit for p in _modules(LIB) for hit in study_imports(p)]
    assert not found, f"the library imports the study at {found}: the study may import the library, never back"


def test_the_study_check_catches_an_import(tmp_path):
    assert study_imports(LIB / "report.py", "from faithlab_study import verdicts\n")
    assert study_imports(LIB / "report.py", "def f():\n    import faithlab_study as fs\n")
    assert study_imports(LIB / "report.py", "import importlib\nimportlib.import_module('faithlab_study.papers')\n")
    assert not study_imports(LIB / "report.py", "from faithlab import metrics\n")


# -- no private name crosses a module -------------------------------------------------------------------------------

def private_reach_ins(path: Path, source: str | None = None) -> list[str]:
    """``from m import _x`` and ``m._x`` where m is another faithlab module and _x is not itself a module."""
    tree = ast.parse(path.read_text() if source is None else source)
    here = _module_name(path)
    modules: dict[str, str] = {}  # local name -> dotted faithlab module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("faithlab") and a.asname:
                    modules[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            if not module.startswith("faithlab"):  # faithlab and faithlab_study
                continue
            for a in node.names:
                if _is_module(f"{module}.{a.name}"):
                    modules[a.asname or a.name] = f"{module}.{a.name}"
                elif a.name.startswith("_") and not a.name.startswith("__") and module != here:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {module}.{a.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and not _is_module(f"{modules[node.value.id]}.{node.attr}") and modules[node.value.id] != here):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {modules[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_crosses_a_module():
    found = [hit for p in _modules() for hit in private_reach_ins(p)]
    assert not found, "private names used outside their module (make them public, or keep them home):\n" + "\n".join(
        found)


def test_the_private_check_catches_a_reach_in():
    path = LIB / "cli.py" if (LIB / "cli.py").exists() else LIB / "cli" / "__init__.py"
    assert private_reach_ins(path, "from faithlab.metrics import registry\nregistry._scoped_name('x')\n")
    assert private_reach_ins(path, "from faithlab.metrics.registry import _LISTENERS\n")
    assert not private_reach_ins(path, "from faithlab import _validate\n_validate.tensor\n")


# -- one HTML module, one statistics module -------------------------------------------------------------------------

HTML_TAG = re.compile(r"<(table|div|span|details|summary|p|a|tr|td|th|ul|li|code|strong|em|img|br)\b[^>]*>")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def html_modules() -> list[str]:
    out = []
    for p in _modules():
        tree = _strip_docstrings(ast.parse(p.read_text()))
        source = ast.unparse(tree)
        if HTML_TAG.search(source) or "html.escape(" in source:
            out.append(str(p.relative_to(ROOT)))
    return out


def test_one_module_builds_html_in_each_distribution():
    assert html_modules() == [str(p.relative_to(ROOT)) for p in HTML_MODULES], (
        "HTML (tags in strings, html.escape) is built in one module per distribution, faithlab/html.py and "
        f"faithlab_study/book/html.py; found in {html_modules()}")


def test_one_statistics_module():
    named = [str(p.relative_to(ROOT)) for p in _modules() if p.stem in {"stats", "statistics"}]
    assert named == [str(STATISTICS_MODULE.relative_to(ROOT))], named


# -- the same files in every paper package ----------------------------------------------------------------------------

def paper_entries(package: Path) -> set[str]:
    return {p.stem for p in package.iterdir() if p.name != "__pycache__" and (p.suffix == ".py" or p.is_dir())}


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_package_has_the_same_files(paper):
    package = STUDY / "papers" / paper
    assert package.is_dir(), f"{package.relative_to(ROOT)} is a package"
    assert paper_entries(package) == PAPER_FILES, (
        f"{package.relative_to(ROOT)} holds {sorted(paper_entries(package))}; every paper package holds "
        f"{sorted(PAPER_FILES)} (a module or a package each): set-up (models and data), experiments, claims and the "
        "paper's numbers")


# -- modules of one size ------------------------------------------------------------------------------------------

def test_no_module_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concept): {long}"


# -- notebooks read like chapters -------------------------------------------------------------------------------------

def code_cells(text: str) -> list[tuple[int, int]]:
    """(first line, non-blank lines) of each code cell of a py:percent notebook, the parameters cell included (a
    notebook's knobs are the values a rerunning researcher varies; fixed protocol constants live in the paper's
    package)."""
    cells, start, count, code = [], None, 0, False
    for i, line in enumerate(text.splitlines() + ["# %%"], 1):
        if line.startswith("# %%"):
            if code and start is not None:
                cells.append((start, count))
            start, count, code = i, 0, "[markdown]" not in line
        elif line.strip():
            count += 1
    return cells


NOTEBOOK_FILES = sorted(p for p in NOTEBOOKS.glob("*/*.py") if p.parent.name != "params")


@pytest.mark.parametrize("notebook", NOTEBOOK_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_code_cells_are_short(notebook):
    long = [(line, n) for line, n in code_cells(notebook.read_text()) if n > MAX_CELL]
    assert not long, f"{notebook.relative_to(ROOT)}: code cells over {MAX_CELL} lines (line, lines): {long}"


def test_the_cell_check_counts_lines():
    text = "# %% tags=['parameters']\na = 1\n\n# %% [markdown]\n" + "# x\n" * 40 + "# %%\n" + "b = 2\n" * 26
    assert code_cells(text) == [(1, 1), (45, 26)]
    assert code_cells("# %%\nc = 3\n\nd = 4\n") == [(1, 2)]


@pytest.mark.parametrize("notebook", NOTEBOOK_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebooks_leave_replication_to_the_study(notebook):
    text = notebook.read_text()
    assert "replica_seed" not in text, (f"{notebook.relative_to(ROOT)} derives replica seeds itself: the study's "
                                        "replica loop (faithlab_study.verdicts.replicas) names them once")


def test_protocols_do_not_test_for_the_replica_column_by_hand():
    pattern = re.compile(r"""["']replica["']\s+(not\s+)?in\b""")
    owner = STUDY / "verdicts" / "replication.py"
    found = [f"{p.relative_to(ROOT)}:{i}" for p in _modules(STUDY) if p != owner
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, f"replica columns tested by hand (use faithlab_study.verdicts.replication): {found}"


def test_the_study_package_imports_its_subpackages_on_first_use_only():
    """``import faithlab_study`` imports none of its subpackages (the command line checks its arguments before anything
    heavy is imported: tests/faithlab_study/runner/test_runner_usage.py); each is imported when first named, and the
    runner's names are the runner's only (``faithlab_study.runner.run``)."""
    import subprocess
    import sys

    code = ("import sys, faithlab_study as fs; print('faithlab_study.runner' in sys.modules, 'yaml' in sys.modules, "
            "fs.runner.__name__, hasattr(fs, 'run'), hasattr(fs.runner, 'run'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "faithlab_study.runner", "False", "True"], done.stdout


def test_the_metric_core_is_pure_torch():
    """perturb and metrics import no numpy, pandas or plotting (at module level or inside a function)."""
    heavy = {"numpy", "pandas", "matplotlib", "seaborn"}
    found = []
    for p in _modules(LIB / "metrics") + _modules(LIB / "perturb"):
        for node in ast.walk(ast.parse(p.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{p.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in heavy]
    assert not found, f"the metric core imports {found}"


PLACEHOLDER = re.compile(r"<[a-z_]+>")


def bare_placeholders(text: str) -> list[int]:
    """Lines of a py:percent notebook's markdown comments with a ``<name>`` placeholder outside a code span: the book
    renders it as an unknown HTML tag, so the name silently vanishes from the page."""
    found, markdown = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("# %%"):
            markdown = "[markdown]" in line
        elif markdown and line.startswith("# "):
            outside = line.split("`")[::2]  # the text between code spans
            if any(PLACEHOLDER.search(part) for part in outside):
                found.append(i)
    return found


def test_the_placeholder_check_finds_a_bare_name():
    text = '# %% [markdown]\n# the setting "<task>/Normal" and r\n# `"<task>/Normal"` is fine\n# %%\nx = 1  # <n>\n'
    assert bare_placeholders(text) == [2]


@pytest.mark.parametrize("notebook", NOTEBOOK_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_prose_shows_its_placeholders(notebook):
    lines = bare_placeholders(notebook.read_text())
    assert not lines, (f"{notebook.relative_to(ROOT)}: a <name> outside a code span vanishes from the page (an HTML "
                       f"tag), lines {lines}: write it as `<name>`")

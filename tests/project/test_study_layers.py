"""The study's runner and book point one way: the runner imports the book (it executes the notebooks, then makes
their pages and rebuilds the scorecard), the book imports nothing of the runner, neither directly nor through
``faithlab_study``'s top level. The check reads each module's syntax tree: imports at the top and inside functions,
relative imports, ``importlib.import_module`` strings, attribute chains on an imported package and module names
written as strings; a planted import of each kind must be caught."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "lib" / "faithlab-study" / "faithlab_study"
PACKAGE = "faithlab_study"
NOT_RUNNER = {p.stem for p in STUDY.glob("*.py")} | {p.name for p in STUDY.iterdir() if (p / "__init__.py").is_file()}
NOT_RUNNER -= {"runner", "__init__", "__main__"}
"""The study's top-level modules other than the runner: any other name on ``faithlab_study`` reaches the runner
(``faithlab_study.runner``, or a name the top level would re-export from it, like ``faithlab_study.run`` once did)."""


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _here(path: Path) -> str:
    """The package a module of the study lies in, which its relative imports start from."""
    return ".".join(path.parent.relative_to(STUDY.parent).parts)


def _resolve(name: str, level: int, here: str) -> str:
    base = here.split(".")[: len(here.split(".")) - max(level - 1, 0)] if level else []
    return ".".join([*base, *([name] if name else [])])


def _constant_prefix(node: ast.expr) -> str | None:
    """A string argument's text, or an f-string's text up to its first placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if not isinstance(part, ast.Constant):
                break
            text += str(part.value)
        return text
    return None


def named_modules(source: str, here: str) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a module of the package ``here`` imports or names as a module of the
    study: import statements anywhere (relative ones resolved), ``import_module``/``__import__`` calls, attribute
    chains on a name bound to the study, and strings that are a dotted name of the study."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> dotted name of the study it was imported as
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.append((node.lineno, a.name))
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module or "", node.level, here)
            found.append((node.lineno, base))
            for a in node.names:
                dotted = base if a.name == "*" else f"{base}.{a.name}"
                found.append((node.lineno, f"{base}.?" if a.name == "*" else dotted))
                bound[a.asname or a.name] = dotted
        elif isinstance(node, ast.Call) and node.args and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                or (isinstance(node.func, ast.Name) and node.func.id in {"import_module", "__import__"})):
            text = _constant_prefix(node.args[0])
            if text is not None:
                level = len(text) - len(text.lstrip("."))
                anchor = _constant_prefix(node.args[1]) if len(node.args) > 1 else here
                found.append((node.lineno, _resolve(text[level:], level, anchor or here) if level else text))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(rf"{re.escape(PACKAGE)}(\.\w+)+", node.value):
                found.append((node.lineno, node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.insert(0, inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in bound:
                found.append((node.lineno, ".".join([bound[inner.id], *chain])))
    return sorted(set(found))


def reaches_runner(dotted: str, package: str = PACKAGE) -> bool:
    """Whether a dotted name is the runner, in it, or a top-level name of the study other than its modules."""
    parts, top = dotted.split("."), package.split(".")
    if parts[: len(top)] != top or len(parts) == len(top) or parts[len(top)].startswith("__"):
        return False
    return parts[len(top)] not in NOT_RUNNER


def runner_reach(source: str, here: str, package: str = PACKAGE) -> list[str]:
    """The lines of a module (of package ``here``) that reach the runner: "line: name", the shortest name per import."""
    hits = [(line, name) for line, name in named_modules(source, here) if reaches_runner(name, package)]
    return [f"{line}: {name}" for line, name in hits
            if not any(line == other_line and name.startswith(f"{other}.") for other_line, other in hits)]


def test_the_book_imports_nothing_of_the_runner():
    modules = _modules(STUDY / "book")
    assert len(modules) >= 5, modules
    found = [f"{p.relative_to(ROOT)}:{hit}" for p in modules for hit in runner_reach(p.read_text(), _here(p))]
    assert not found, (f"the book reaches the runner at {found}: the runner imports the book, never back (move what "
                       "both need to the book, e.g. faithlab_study.book.generated)")


def test_the_runner_imports_the_book():
    """The direction is stated, not only the absence of the other: the runner writes the pages and the scorecard."""
    used = {name for p in _modules(STUDY / "runner") for _, name in named_modules(p.read_text(), _here(p))
            if name.startswith(f"{PACKAGE}.book.")}
    assert {f"{PACKAGE}.book.scorecard.write_scorecard", f"{PACKAGE}.book.notebook_page"} <= used, sorted(used)


def test_the_layer_check_catches_every_spelling():
    here = f"{PACKAGE}.book"
    caught = [
        "from faithlab_study.runner.promotion import locked\n",
        "import faithlab_study.runner.stamps\n",
        "import faithlab_study.runner as r\n",
        "from ..runner import stamps\n",
        "from .. import runner\n",
        "from ..runner.stamps import *\n",
        "def f():\n    from faithlab_study.runner.stamps import first_line\n",
        "import importlib\nimportlib.import_module('faithlab_study.runner.stamps')\n",
        "from importlib import import_module\nimport_module('.runner', 'faithlab_study')\n",
        "import importlib\nimportlib.import_module(f'faithlab_study.{name}')\n",
        "from faithlab_study import run\n",  # a runner name the top level once re-exported
        "from faithlab_study import *\n",
        "def f():\n    import faithlab_study as fs\n    return fs.runner.cli.main\n",
        "import faithlab_study.book.chapters\nfaithlab_study.run([])\n",
        "import sys\nsys.modules['faithlab_study.runner.stamps']\n",
    ]
    for source in caught:
        assert runner_reach(source, here), source
    fine = (
        "from faithlab_study.book.chapters import CHAPTERS\nfrom . import figures\nfrom .pages import claims\n"
        "import faithlab_study as fs\nfs.verdicts.VERDICTS\nfs.__name__\n"
        "import importlib\nimportlib.import_module(f'faithlab_study.papers.{paper}.claims.registration')\n"
        '"""Written by :mod:`faithlab_study.runner` (prose, not an import)."""\n'
    )
    assert runner_reach(fine, here) == [], runner_reach(fine, here)

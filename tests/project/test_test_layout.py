"""The test suite's own layout: tests/ mirrors lib/faithlab in subfolders (tests/metrics/, tests/protocols/trace/, ...),
no test module sits directly in tests/, and no test module imports another test module. What several modules share
is a fixture of a conftest.py or a plain module of tests/support/ (on the path through pyproject.toml's
``pythonpath``); a test module imported by another would run its tests twice, couple two subjects and break under
pytest's importlib import mode."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = "support"  # tests/support/: plain helper modules, no tests


def bad_imports(source: str, name: str = "<source>") -> list[str]:
    """The imports of ``source`` that reach a test module: a module named ``test_*`` or ``conftest`` (at any depth
    of a dotted name), anything under the ``tests`` package, or a relative import (tests/ has no packages)."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append(f"{name}:{node.lineno}: relative import from {'.' * node.level}{node.module or ''}")
                continue
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "tests" or any(p.startswith("test_") or p == "conftest" for p in parts):
                found.append(f"{name}:{node.lineno}: imports {module}")
    return found


def layout_problems(root: Path) -> list[str]:
    """What breaks the layout of the test folder ``root``: a ``test_*.py`` directly in it or in its support folder,
    any other Python file directly in it but conftest.py, and every import of a test module (:func:`bad_imports`)."""
    problems = []
    for path in sorted(root.glob("*.py")):
        if path.name.startswith("test_"):
            problems.append(f"{path.name}: a test module directly in tests/ (move it to the folder of its subject)")
        elif path.name != "conftest.py":
            problems.append(f"{path.name}: a helper module directly in tests/ (move it to tests/{SUPPORT}/)")
    problems += [f"{p.relative_to(root)}: a test module among the helpers" for p in (root / SUPPORT).glob("test_*.py")]
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts:
            problems += bad_imports(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    return problems


def test_the_test_folder_mirrors_the_library_and_no_test_module_imports_another():
    assert layout_problems(TESTS) == []
    assert len(list(TESTS.rglob("test_*.py"))) > 50  # the check saw the suite


def test_the_checker_finds_an_import_of_a_test_module():
    assert bad_imports("import torch\nfrom oracles import small_cnn\nfrom faithlab.metrics import test_like\n") == []
    for source in ("from test_study import project", "import test_fuzz_registry as f",
                   "from tests.study.test_study import run", "import tests.support.oracles", "from conftest import x",
                   "from . import helper", "from .test_claims import frame", "import os, test_models"):
        assert len(bad_imports(source)) == 1, source


def test_the_layout_check_fails_on_a_bad_tree(tmp_path):
    (tmp_path / "conftest.py").write_text("import pytest\n")
    (tmp_path / SUPPORT).mkdir()
    (tmp_path / SUPPORT / "oracles.py").write_text("import torch\n")
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "test_fine.py").write_text("from oracles import small_cnn\n")
    assert layout_problems(tmp_path) == []
    (tmp_path / "test_loose.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "helpers.py").write_text("")
    (tmp_path / "metrics" / "test_coupled.py").write_text("from test_fine import small_cnn\n")
    problems = layout_problems(tmp_path)
    assert len(problems) == 3, problems
    assert any("test_loose.py" in p for p in problems) and any("helpers.py" in p for p in problems)
    assert any("test_coupled.py" in p and "imports test_fine" in p for p in problems)


def test_the_files_with_a_slow_test_are_scheduled_first():
    """The collection order ``--dist loadfile`` hands out (tests/support/slow_first.py): slow files first, each group
    in its own order, every test of a file together."""
    from types import SimpleNamespace

    from slow_first import slow_files_first

    def item(path, slow=False):
        return SimpleNamespace(path=path, name=f"{path}:{slow}", get_closest_marker=lambda name: slow or None)

    items = [item("a.py"), item("b.py"), item("b.py", slow=True), item("c.py"), item("d.py", slow=True), item("a.py")]
    slow_files_first(items)
    assert [i.name for i in items] == ["b.py:False", "b.py:True", "d.py:True", "a.py:False", "c.py:False",
                                       "a.py:False"]


def test_make_test_hands_out_the_files_in_collection_order():
    """pytest-xdist 3.x sorts ``--dist loadfile``'s files by their number of tests unless ``--no-loadscope-reorder``:
    without it the many-test fuzz files went first and the book build started 150 s into a fresh-clone run."""
    line = next(ln for ln in (TESTS.parent / "Makefile").read_text().splitlines() if "-m pytest" in ln)
    assert "--dist loadfile" in line and "--no-loadscope-reorder" in line, line


def test_the_suite_collects_the_book_build_and_the_paper_dry_run_first(pytestconfig):
    """Against the real suite: given a fast file first, the collection still hands out the two slow files before it."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          str(TESTS / "book" / "test_pages.py"), str(TESTS / "study" / "test_paper_dry.py"),
                          str(TESTS / "book" / "test_build.py")], capture_output=True, text=True, timeout=300,
                         cwd=TESTS.parent)
    files = [line.split("::")[0] for line in run.stdout.splitlines() if "::" in line]
    assert files, run.stdout + run.stderr
    order = list(dict.fromkeys(files))
    assert order.index("tests/study/test_paper_dry.py") < order.index("tests/book/test_pages.py"), order
    assert order.index("tests/book/test_build.py") < order.index("tests/book/test_pages.py"), order

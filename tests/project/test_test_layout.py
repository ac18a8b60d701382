"""The test suite's own layout: tests/ mirrors the two packages, and no test module imports another.

* tests/faithlab/ mirrors lib/faithlab: a folder per package and subpackage (metrics/, metrics/papers/trace/,
  metrics/papers/trace/search/, perturb/, ...); the test of a top-level module such as faithlab/intervals.py sits in
  tests/faithlab/ itself, and a folder may also be named by a module's stem (the subject of its tests is that module).
  Two cross-cutting suites of the library keep a folder of their own: tests/faithlab/fuzz/ (bad input over every
  metric and explainer) and tests/faithlab/device/ (host synchronisations and the device seam).
* tests/faithlab_study/ mirrors lib/faithlab-study/faithlab_study the same way (papers/<paper>/, papers/basics/ for
  papers/basics.py, verdicts/, book/, runner/, the test of artifacts.py in tests/faithlab_study/ itself).
* tests/project/ holds the checks of the repository (README, release, wheel, environment, benchmarks, house rules,
  this layout) and tests/support/ the helpers; no other folder sits in tests/ (:func:`top_level_problems`), a folder
  of test data (no Python file, as tests/faithlab/metrics/papers/synthesis/data/) is free, and every other folder
  names a package, subpackage or module of its distribution (:func:`mirror_problems`).
* No test module sits directly in tests/, none is over 600 lines (:func:`long_modules`: split it by subject), and no
  test module imports another. What several modules share is a fixture of a conftest.py or a plain module of
  tests/support/ (on the path through pyproject.toml's ``pythonpath``); a test module imported by another would run
  its tests twice, couple two subjects and break under pytest's importlib import mode."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SUPPORT = "support"  # tests/support/: plain helper modules, no tests
LIB = TESTS.parent / "lib"
SOURCES = {"faithlab": LIB / "faithlab", "faithlab_study": LIB / "faithlab-study" / "faithlab_study"}
"""Each mirror folder of tests/ and the package it mirrors."""
CROSS_CUTTING = {"faithlab": {"fuzz", "device"}}
"""The folders of a mirror that are suites across the package rather than one of its subpackages."""
TOP_LEVEL = {*SOURCES, "project", SUPPORT}
"""The only folders of tests/."""
MAX_LINES = 600


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


def _holds_files(folder: Path, pattern: str = "*") -> bool:
    """Whether ``folder`` holds a file matching ``pattern`` outside ``__pycache__`` (a folder left with nothing but
    byte code after its tests moved is not a folder of the suite)."""
    return any(p.is_file() and "__pycache__" not in p.parts for p in folder.rglob(pattern))


def mirror_problems(root: Path, sources: dict[str, Path]) -> list[str]:
    """Every folder under ``root/<mirror>/`` that holds a Python file and names nothing of the package it mirrors
    (``sources[<mirror>]``): no subpackage (a folder with an ``__init__.py``) and no module of that name at that place.
    The declared cross-cutting folders (:data:`CROSS_CUTTING`) and folders of test data (no Python file) are free."""
    problems = []
    for mirror, source in sources.items():
        base = root / mirror
        if not base.is_dir():
            problems.append(f"{mirror}/: missing (it mirrors {source.name})")
            continue
        for folder in sorted(p for p in base.rglob("*") if p.is_dir() and "__pycache__" not in p.parts):
            rel = folder.relative_to(base)
            if rel.parts[0] in CROSS_CUTTING.get(mirror, ()) or not _holds_files(folder, "*.py"):
                continue
            target = source.joinpath(*rel.parts)
            if not (target / "__init__.py").is_file() and not target.with_suffix(".py").is_file():
                problems.append(f"{mirror}/{rel.as_posix()}/: names no package, subpackage or module of {source.name} "
                                f"(a folder of tests/{mirror}/ mirrors {source.name}/{rel.as_posix()})")
    return problems


def long_modules(root: Path, limit: int = MAX_LINES) -> list[str]:
    """The test modules (``test_*.py``) and conftest.py files under ``root`` with more than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts and (path.name.startswith("test_") or path.name == "conftest.py"):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > limit:
                found.append(f"{path.relative_to(root).as_posix()}: {n} lines (at most {limit}: split it by subject)")
    return found


def top_level_problems(root: Path) -> list[str]:
    """The folders of ``root`` but :data:`TOP_LEVEL` (hidden folders, ``__pycache__`` and folders left with byte code
    only aside)."""
    return [f"{p.name}/: not a folder of tests/ (only {', '.join(sorted(TOP_LEVEL))})" for p in sorted(root.iterdir())
            if p.is_dir() and p.name not in TOP_LEVEL and p.name != "__pycache__" and not p.name.startswith(".")
            and _holds_files(p)]


def test_the_test_folder_mirrors_the_library_and_no_test_module_imports_another():
    assert layout_problems(TESTS) == []
    assert len(list(TESTS.rglob("test_*.py"))) > 50  # the check saw the suite


def test_the_test_folders_mirror_the_two_packages():
    assert mirror_problems(TESTS, SOURCES) == []
    for mirror, source in SOURCES.items():  # the check saw both mirrors, to their depth
        assert source.is_dir() and len({p.parent for p in (TESTS / mirror).rglob("test_*.py")}) > 5, mirror
    assert (TESTS / "faithlab" / "metrics" / "papers" / "trace" / "search").is_dir()
    assert (TESTS / "faithlab_study" / "papers" / "trace").is_dir()


def test_no_test_module_is_over_600_lines():
    assert long_modules(TESTS) == []


def test_only_the_two_mirrors_project_and_support_sit_in_tests():
    assert top_level_problems(TESTS) == []
    assert {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))} == TOP_LEVEL


def test_the_mirror_check_fails_on_a_folder_the_packages_lack(tmp_path):
    lib, tests = tmp_path / "lib", tmp_path / "tests"
    for package in ("faithlab", "faithlab/metrics", "faithlab/metrics/papers", "faithlab/metrics/papers/trace",
                    "study/faithlab_study", "study/faithlab_study/runner"):
        (lib / package).mkdir(parents=True)
        (lib / package / "__init__.py").write_text("")
    (lib / "faithlab" / "intervals.py").write_text("")
    sources = {"faithlab": lib / "faithlab", "faithlab_study": lib / "study" / "faithlab_study"}
    for test in ("faithlab/test_paths.py", "faithlab/metrics/papers/trace/test_trajectories.py",
                 "faithlab/intervals/test_coverage.py", "faithlab/fuzz/test_bad_input.py",
                 "faithlab/device/nested/test_seam.py", "faithlab_study/runner/test_cli.py",
                 "faithlab_study/runner/conftest.py", "faithlab_study/test_artifacts.py"):
        (tests / test).parent.mkdir(parents=True, exist_ok=True)
        (tests / test).write_text("")
    (tests / "faithlab/metrics/papers/trace/data").mkdir()
    (tests / "faithlab/metrics/papers/trace/data/reference.json").write_text("{}")
    (tests / "faithlab/metric/__pycache__").mkdir(parents=True)  # byte code left behind by a move
    (tests / "faithlab/metric/__pycache__/test_x.cpython-312.pyc").write_text("")
    assert mirror_problems(tests, sources) == []
    for test in ("faithlab/metric/test_typo.py", "faithlab/metrics/papers/trace/search/test_genetic.py",
                 "faithlab_study/fuzz/test_runner.py", "faithlab_study/protocols/trace/test_claims.py"):
        (tests / test).parent.mkdir(parents=True, exist_ok=True)
        (tests / test).write_text("")
    problems = mirror_problems(tests, sources)
    assert [p.split(":")[0] for p in problems] == [
        "faithlab/metric/", "faithlab/metrics/papers/trace/search/", "faithlab_study/fuzz/",
        "faithlab_study/protocols/", "faithlab_study/protocols/trace/"], problems
    (tests / "faithlab_study").rename(tmp_path / "elsewhere")
    assert "faithlab_study/: missing (it mirrors faithlab_study)" in mirror_problems(tests, sources)


def test_the_length_check_fails_on_a_long_test_module(tmp_path):
    (tmp_path / "faithlab" / "metrics").mkdir(parents=True)
    (tmp_path / SUPPORT).mkdir()
    (tmp_path / "faithlab" / "metrics" / "test_fine.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / SUPPORT / "oracles.py").write_text("x = 1\n" * (MAX_LINES + 50))  # a helper, not a test module
    assert long_modules(tmp_path) == []
    (tmp_path / "faithlab" / "metrics" / "test_long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "faithlab" / "conftest.py").write_text("x = 1\n" * (MAX_LINES + 2))
    long = [p.split(":")[0] for p in long_modules(tmp_path)]
    assert long == ["faithlab/conftest.py", "faithlab/metrics/test_long.py"], long


def test_the_top_level_check_fails_on_another_folder(tmp_path):
    for name in (*TOP_LEVEL, "__pycache__", ".pytest_cache"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.py").write_text("")
    (tmp_path / "book" / "__pycache__").mkdir(parents=True)  # byte code left behind by a move
    (tmp_path / "book" / "__pycache__" / "test_build.cpython-312.pyc").write_text("")
    assert top_level_problems(tmp_path) == []
    for name in ("metrics", "protocols"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "test_x.py").write_text("")
    assert [p.split(":")[0] for p in top_level_problems(tmp_path)] == ["metrics/", "protocols/"]


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

    study = TESTS / "faithlab_study"
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          str(study / "book" / "test_pages.py"), str(study / "runner" / "test_paper_dry.py"),
                          str(study / "book" / "test_build.py")], capture_output=True, text=True, timeout=300,
                         cwd=TESTS.parent)
    files = [line.split("::")[0] for line in run.stdout.splitlines() if "::" in line]
    assert files, run.stdout + run.stderr
    order = list(dict.fromkeys(files))
    pages = order.index("tests/faithlab_study/book/test_pages.py")
    assert order.index("tests/faithlab_study/runner/test_paper_dry.py") < pages, order
    assert order.index("tests/faithlab_study/book/test_build.py") < pages, order

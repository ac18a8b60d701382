"""The library's rooms: a module over 600 lines holds one concept and says which in its docstring (issue 51)."""

from __future__ import annotations

import ast
import pathlib

import faithlab
import faithlab_study

LIB = pathlib.Path(faithlab.__file__).parent
STUDY = pathlib.Path(faithlab_study.__file__).parent
LIMIT = 600


def oversized_without_a_concept(root: pathlib.Path) -> list[str]:
    """The modules under ``root`` over :data:`LIMIT` lines whose docstring has no "One concept:" sentence."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > LIMIT and "One concept:" not in (ast.get_docstring(ast.parse(text)) or ""):
            out.append(str(path.relative_to(root)))
    return out


def test_every_module_over_600_lines_names_its_one_concept():
    assert oversized_without_a_concept(LIB) == []
    assert oversized_without_a_concept(STUDY) == []


def test_the_check_finds_a_long_module_without_its_concept(tmp_path):
    body = "x = 1\n" * (LIMIT + 1)
    (tmp_path / "long.py").write_text('"""Many things."""\n' + body, encoding="utf-8")
    (tmp_path / "named.py").write_text('"""Plots.\n\nOne concept: the figures."""\n' + body, encoding="utf-8")
    (tmp_path / "short.py").write_text('"""Short."""\n', encoding="utf-8")
    assert oversized_without_a_concept(tmp_path) == ["long.py"]

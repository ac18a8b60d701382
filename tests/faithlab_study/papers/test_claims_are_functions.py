"""Every claim of the book goes through a claim function: no notebook records a claim from a text it wrote itself,
and none spells out a verdict rule (a ladder, a threshold or a bootstrap) that belongs in faithlab_study.papers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[3] / "notebooks").glob("*/*.py"))
RULES = {"ladder", "verdict", "from_settings", "from_comparison", "bootstrap_diff", "compare", "Verdict"}


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            yield node, (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_records_claims_from_claim_functions(notebook):
    tree = ast.parse(notebook.read_text())
    for call, name in _calls(tree):
        if name == "claim" and isinstance(call.func, ast.Attribute) and getattr(call.func.value, "id", "") == "out":
            first = call.args[0] if call.args else None
            assert first is not None and not isinstance(first, (ast.Constant, ast.JoinedStr)), (
                f"{notebook.name}:{call.lineno}: out.claim takes a faithlab_study.verdicts.Claim from a claim function")
            assert not {k.arg for k in call.keywords} & {"verdict", "paper_value", "our_value"}, (
                f"{notebook.name}:{call.lineno}: the claim function gives the verdict and the values")
            decided = isinstance(first, ast.Call) and (
                getattr(first.func, "attr", None) or getattr(first.func, "id", None)) == "replicated"
            assert decided and len(call.args) == 1 and first.args, (
                f"{notebook.name}:{call.lineno}: out.claim records the Claim that faithlab_study.verdicts.replicated "
                "decided from the claim function and its arguments (out.claim(fs.verdicts.replicated(P.claim_x, "
                "frame, seed=seed))), so that the claim is re-run per replica and under other bootstrap seeds")
        if name in RULES and isinstance(call.func, ast.Attribute):
            owner = ast.unparse(call.func.value)
            assert not owner.endswith("verdicts"), (
                f"{notebook.name}:{call.lineno}: {owner}.{name} decides a verdict in a notebook; move the rule into "
                "a claim function of faithlab_study.papers")


def test_the_check_catches_a_notebook_that_writes_its_own_verdict(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('out.claim("C1", paper_value="1", our_value="1", verdict=fs.verdicts.ladder(True))\n')
    with pytest.raises(AssertionError, match="claim function"):
        test_notebook_records_claims_from_claim_functions(bad)
    called = tmp_path / "called.py"
    called.write_text("out.claim(P.claim_x(frame, seed=seed))\n")
    with pytest.raises(AssertionError, match="replicated"):
        test_notebook_records_claims_from_claim_functions(called)
    old_shape = tmp_path / "old_shape.py"
    old_shape.write_text("out.claim(P.claim_x, frame, seed=seed)\n")
    with pytest.raises(AssertionError, match="replicated"):
        test_notebook_records_claims_from_claim_functions(old_shape)
    good = tmp_path / "good.py"
    good.write_text("out.claim(fs.verdicts.replicated(P.claim_x, frame, seed=seed))\n")
    test_notebook_records_claims_from_claim_functions(good)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_defines_no_function(notebook):
    """A notebook calls the library: a helper it would define (a table, a label, a figure, a per-image loop, an
    explainer bound to its options) lives in faithlab_study.papers, faithlab.plots or faithlab.explainers, where it is
    tested and other notebooks and the CLI use it."""
    tree = ast.parse(notebook.read_text())
    defined = [f"{node.name} (line {node.lineno})" for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    assert not defined, f"{notebook.parent.name}/{notebook.name} defines {defined}: move it into the library"


def test_the_function_check_finds_a_helper_defined_in_a_notebook(tmp_path):
    notebook = tmp_path / "demo" / "page.py"
    notebook.parent.mkdir()
    notebook.write_text("# %%\nimport faithlab as fl\n\n\ndef shown(frame):\n    return frame\n")
    with pytest.raises(AssertionError, match=r"defines \['shown \(line 5\)'\]"):
        test_notebook_defines_no_function(notebook)

"""A metric's facts live in its declaration: no module outside the metric modules keeps a table of metric names (a
module-level tuple, list, set or dict literal naming two or more registered metrics), as ``ACCURACY_FORMS``, the
CLI's ``TIPS`` and ``KFOLD_METRICS``, the report's ``MEANINGS`` and the budget's ``KNOBS`` once did; they read the
declarations. "morf" and "lerf" are also the names of the removal orders (``perturb.orders``), so they do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import faithlab as fl

LIB = Path(fl.__file__).resolve().parent


def tables(source: str, names: set[str]) -> list[tuple[int, list[str]]]:
    """(line, metric names) of every collection literal of a module-level constant of ``source`` naming two or more
    of ``names``."""
    found = []
    values = [n.value for n in ast.parse(source).body if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value]
    for node in (inner for value in values for inner in ast.walk(value)):
        items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(
            node, (ast.Tuple, ast.List, ast.Set)) else []
        named = [i.value for i in items if isinstance(i, ast.Constant) and i.value in names]
        if len(named) >= 2:
            found.append((node.lineno, named))
    return found


def test_no_table_of_metric_names_outside_the_declarations():
    names = set(fl.metrics.registry.METRICS) - {"morf", "lerf"}
    hits = {}
    for path in sorted(LIB.rglob("*.py")):
        if path.parent == LIB / "metrics" or LIB / "metrics" / "papers" in path.parents:  # where they are declared
            continue
        found = tables(path.read_text(), names)
        if found:
            hits[str(path.relative_to(LIB))] = found
    assert not hits, hits


def test_the_scan_finds_a_table():
    """The control: the table the hints kept before the declarations said it is found."""
    names = set(fl.metrics.registry.METRICS)
    old = 'ACCURACY_FORMS = ("fid+", "fid-", "rfid+", "rfid-", "ffid+", "ffid-", "auc_accuracy")\n'
    assert tables(old, names) == [(1, ["fid+", "fid-", "rfid+", "rfid-", "ffid+", "ffid-", "auc_accuracy"])]
    assert tables('TIPS = {"saco": "fewer groups", "rfid+": {"n": ("s_avg", 1)}}', names) == [(1, ["saco", "rfid+"])]
    assert not tables('one = ("saco", "a word")\ndef f():\n    return ("saco", "aopc")', names)

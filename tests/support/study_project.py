"""The throw-away project of the notebook-runner tests (tests/faithlab_study/runner/, with the runner's command-line
fuzz cases): two jupytext notebooks ``demo/first`` and ``demo/second`` whose ``OK_BODY`` writes a table and a claim,
every profile of the runner empty, and helpers to write more notebooks, run the runner and read a result. The
``project`` fixture of tests/faithlab_study/runner/conftest.py calls :func:`make_project`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from faithlab_study import runner

HEADER = "# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"


def notebook(params: str, body: str) -> str:
    return HEADER + '# %% tags=["parameters"]\n' + textwrap.dedent(params) + "\n# %%\n" + textwrap.dedent(body)


OK_BODY = """
import pandas as pd
import faithlab as fl
import faithlab_study as fs
out = fs.artifacts.for_notebook(NAME)
out.table(pd.DataFrame({"value": [value * 2]}), "result")
out.claim("doubling", paper_value=2 * value, our_value=value * 2, verdict="reproduced")
"""


def make_project(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "proj"
    (root / "notebooks" / "params").mkdir(parents=True)
    (root / "_config.yml").write_text("title: t\n")
    (root / "uv.lock").write_text("lock v1\n")
    for profile in runner.PROFILES:
        (root / "notebooks" / "params" / f"{profile}.yaml").write_text("defaults: {}\nnotebooks: {}\n")
    write(root, "demo/first", 'NAME = "demo/first"\nvalue = 1\nprofile = "none"\n', OK_BODY)
    write(root, "demo/second", 'NAME = "demo/second"\nvalue = 10\n', OK_BODY)
    monkeypatch.setenv("FAITHLAB_ROOT", str(root))
    monkeypatch.delenv("FAITHLAB_GENERATED", raising=False)
    monkeypatch.setattr(runner.stamps, "library_hash", lambda: "library v1")  # isolate from edits to lib/
    return root


def write(root: Path, name: str, params: str, body: str) -> Path:
    path = root / "notebooks" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook(params, body))
    return path


def run(root: Path, *selectors, **kw):
    messages: list[str] = []
    results = runner.run(list(selectors), root=root, generated=root / "book" / "_generated", echo=messages.append, **kw)
    return {r.name: r for r in results}, messages


def result_value(root: Path, name: str) -> float:
    return pd.read_csv(root / "book" / "_generated" / name / "result.csv")["value"].item()

"""Every parameter a notebook declares changes what it computes: its code after the parameters cell reads the name.

A parameter the code never reads is silently ignored, so a profile or a reader's ``-p`` that sets it changes
nothing while the page says it did (ReCo/MeGe's ``shap_samples`` was such a parameter: Expected Gradients ran 60
samples whatever the profile asked).
"""

from __future__ import annotations

import ast
import dataclasses
import re

import pytest

from faithlab_study import runner
from faithlab_study.papers.reco_mege import FamilySettings

NOTEBOOKS = {nb.name: nb for nb in runner.discover()}
RUNNER = {"shard", "n_shards"}  # set and read by the runner (fs.artifacts.sharded), not by the notebook's own code
CELL = re.compile(r"^# %%(.*)$", re.M)


def code_after_parameters(text: str) -> str:
    """The code cells after the one tagged ``parameters`` of a py:percent notebook."""
    heads = list(CELL.finditer(text))
    cells = [(m.group(1), text[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)])
             for i, m in enumerate(heads)]
    start = next(i for i, (head, _) in enumerate(cells) if "parameters" in head)
    return "\n".join(body for head, body in cells[start + 1:] if "[markdown]" not in head)


def read_names(code: str) -> set[str]:
    """Names the code loads, plus the fields a ``from_parameters(globals())`` call takes from its parameters."""
    tree = ast.parse(code)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    if "globals" in names and "FamilySettings" in code:
        names |= {f.name for f in dataclasses.fields(FamilySettings)}
    return names


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_every_parameter_is_read_by_the_notebook(name):
    nb = NOTEBOOKS[name]
    unread = set(nb.defaults) - RUNNER - read_names(code_after_parameters(nb.source.read_text()))
    assert not unread, f"{name}: parameters {sorted(unread)} are declared but never read"


def test_the_check_finds_an_unread_parameter():
    text = "# %% tags=[\"parameters\"]\na = 1\nb = 2\n\n# %% [markdown]\n# b is here in prose only\n\n# %%\nprint(a)\n"
    assert read_names(code_after_parameters(text)) == {"print", "a"}
    settings = "# %% tags=[\"parameters\"]\nn = 1\n# %%\nf = P.FamilySettings.from_parameters(globals())\n"
    assert {"n", "epochs", "seed"} <= read_names(code_after_parameters(settings))

"""The README's "Fork: add a metric", followed to the letter: its toy module is written into a copy of the library
(the one file of the library a fork adds) and named in the papers' imports as the README writes them, and the metric
is then found everywhere the README promises: registered, computed by fl.evaluate (under both spellings of its
option), in help(fl.evaluate), in the CLI (--metrics, --set, --list-metrics, the estimate's tips), in the fuzz suite
(every bad-input case answered with a clear error), in the report's metric table and in the API page's table of
metrics. The copy runs in a subprocess: the library under test is not touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _readme_module() -> tuple[str, str, str]:
    """The README's toy module: the path it names, the code of its fenced block and the papers' import line that
    names it."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Fork: add a metric"):text.index("## Layout")]
    path = re.search(r"e\.g\. `(lib/faithlab/metrics/papers/\w+\.py)`", section).group(1)
    block = re.search(r"```python\n(.*?)\n\s*```", section, re.S).group(1)
    imports = re.search(r"`(from faithlab\.metrics\.papers import [\w, ]+)`", section).group(1)
    return path, textwrap.dedent(block), imports


CHECK = r'''
import inspect, sys, warnings
import torch
sys.path.insert(0, sys.argv[1])
import faithlab as fl
from faithlab import cli, report
from faithlab.metrics import registry
from faithlab_study.book import pages
import registry_fuzz

assert fl.__file__.startswith(sys.argv[2]), fl.__file__
assert "toy_drop" in registry.METRICS and registry.METRICS["toy_drop"].paper == "toy"
model, x, y, a = registry_fuzz.inputs()
frame = fl.evaluate(model, x, y, a, metrics=["toy_drop", "aopc"], fraction=0.5, progress=False)
scores = torch.tensor(frame.loc[frame["metric"] == "toy_drop", "score"].to_numpy())
own = fl.metrics.papers.toy.toy_drop(model, x, a, target=model(x).argmax(1), fraction=0.5)
torch.testing.assert_close(scores, own.double(), rtol=0, atol=0)
scoped = fl.evaluate(model, x, y, a, metrics=["toy_drop"], toy_drop_fraction=0.5, progress=False)
assert scoped.loc[scoped["metric"] == "toy_drop", "score"].tolist() == scores.tolist()
assert "fraction" in inspect.signature(fl.evaluate).parameters
assert "Toy drop (``toy_drop``, toy): probability lost when the map's top units are removed" in fl.evaluate.__doc__
assert cli.arguments.choose_metrics("toy_drop", finetuned=False) == ["toy_drop"]
assert cli.parse_settings(["toy_drop_fraction=0.1", "fraction=0.2"]) == {"toy_drop_fraction": 0.1, "fraction": 0.2}
assert registry.tips()["toy_drop"] == "fewer units removed: --set fraction=0.1"
listed = []
cli.listing.list_metrics(listed.append)
assert any(line.startswith("toy_drop ") and "[--set fraction]" in line for line in "\n".join(listed).splitlines())
cases = [c for n, c in registry_fuzz.cases() if n == "toy_drop"]
assert len(cases) >= 7, cases
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    outcome = {c: registry_fuzz.classify("toy_drop", c) for c in cases}
assert set(outcome.values()) == {"good"}, outcome
table = report.glossary(["toy_drop"])
assert table.to_csv().count("probability lost when the map's top units are removed") == 1, table
assert "Toy drop (toy_drop)" in pages.metrics_html() and "fraction = 0.25" in pages.metrics_html()
print("found everywhere")
'''


@pytest.mark.timeout(300)
def test_the_readmes_toy_metric_appears_everywhere(tmp_path):
    path, code, imports = _readme_module()
    assert path == "lib/faithlab/metrics/papers/toy.py" and " toy," in imports
    copy = tmp_path / "lib"
    shutil.copytree(ROOT / "lib" / "faithlab", copy / "faithlab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (copy / "faithlab" / "metrics" / "papers" / "toy.py").write_text(code + "\n")  # the one library file the fork adds
    papers = copy / "faithlab" / "metrics" / "papers" / "__init__.py"
    lines = papers.read_text().splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("from faithlab.metrics.papers import ")]
    assert len(at) == 1, at  # the one import line the README's replaces
    lines[at[0]] = imports
    papers.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(copy), "FAITHLAB_PROGRESS": "0"}
    run = subprocess.run([sys.executable, "-c", CHECK, str(ROOT / "tests" / "support"), str(copy)], env=env,
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "found everywhere" in run.stdout


def test_without_the_module_the_toy_metric_is_nowhere():
    """The control: the library as it is has no toy metric (so the test above finds the README's, not one of ours)."""
    import faithlab as fl

    assert "toy_drop" not in fl.metrics.registry.METRICS
    assert not (ROOT / "lib" / "faithlab" / "metrics" / "papers" / "toy.py").exists()

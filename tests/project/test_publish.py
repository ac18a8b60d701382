"""Publishing the book (issue 34, item 8) and its API reference: the GitHub Actions workflow builds the book profile and
deploys it with ghp-import, `make publish` does the same by hand, the book's address is a setting of _config.yml, and
the API reference lists every public name of the packages it documents."""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def _steps() -> list[dict]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as True
    triggers = workflow.get("on", workflow.get(True))
    assert triggers["push"]["branches"] == ["main"], triggers
    assert workflow["permissions"]["contents"] == "write", "ghp-import pushes the gh-pages branch"
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_workflow_builds_the_book_profile_and_deploys_with_ghp_import():
    steps = _steps()
    runs = [step.get("run", "") for step in steps]
    build = next(i for i, run in enumerate(runs) if re.search(r"^make book$", run, re.MULTILINE))
    deploy = next(i for i, run in enumerate(runs) if "ghp-import" in run)
    assert build < deploy, "the deploy must come after the build"
    assert re.search(r"ghp-import -n -p -f .*_build/html", runs[deploy]), runs[deploy]
    uses = [step.get("uses", "") for step in steps]
    assert any(u.startswith("astral-sh/setup-uv@") for u in uses)
    cached = [step["with"]["path"] for step in steps if step.get("uses", "").startswith("actions/cache@")]
    assert "data/cache" in cached, cached


def test_workflow_sets_the_address_that_the_book_substitutes():
    """The workflow's sed must hit the two lines of _config.yml that hold the address, and nothing else."""
    (step,) = [s for s in _steps() if "book_url" in s.get("run", "")]
    patterns = re.findall(r"s\|\^\((.*?)\)\.\*\|", step["run"])
    assert len(patterns) == 2, step["run"]
    lines = (ROOT / "_config.yml").read_text().splitlines()
    for pattern in patterns:
        assert sum(bool(re.match(pattern, line)) for line in lines) == 1, pattern
    config = _config()
    url = config["parse"]["myst_substitutions"]["book_url"]
    assert config["html"]["baseurl"] == url
    assert url.startswith("https://") and url.endswith("/")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_publish_builds_then_pushes_with_ghp_import():
    out = subprocess.run(["make", "-n", "publish"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    deploy = [i for i, line in enumerate(lines) if "ghp-import" in line]
    assert deploy and re.search(r"\.venv/bin/ghp-import -n -p -f _build/html$", lines[deploy[-1]]), out.stdout
    build = [i for i, line in enumerate(lines) if "jupyter-book build book" in line]
    assert build and build[-1] < deploy[-1], out.stdout
    help_text = subprocess.run(["make", "help"], check=True, cwd=ROOT, capture_output=True, text=True,
                               timeout=60).stdout
    assert "make publish" in help_text


def test_ghp_import_is_a_locked_dev_dependency():
    import tomllib

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["dev"]
    assert any(re.match(r"ghp-import\b", d) for d in dev), dev
    assert 'name = "ghp-import"' in (ROOT / "uv.lock").read_text()


# The API reference: every public name of a package is in its page's autosummary table (constants are documented in
# their module's section instead, as autosummary would show the docstring of their type).
API_PAGES = {"faithlab.metrics": "api/metrics.md", "faithlab.perturb": "api/perturb.md",
             "faithlab.explainers": "api/explainers.md", "faithlab.models": "api/models.md", "faithlab.data": "api/data.md",
             "faithlab.train": "api/train.md", "faithlab_study.papers": "api/protocols.md"}


@pytest.mark.parametrize("package", sorted(API_PAGES))
def test_api_reference_lists_every_public_name(package):
    module = importlib.import_module(package)
    page = (ROOT / "book" / API_PAGES[package]).read_text()
    assert f".. currentmodule:: {package}" in page
    listed = set(re.findall(r"^   (\w+)$", page, re.MULTILINE))
    public = {name for name in module.__all__
              if callable(getattr(module, name)) or inspect.ismodule(getattr(module, name))}
    assert public - listed == set(), f"add to book/{API_PAGES[package]}: {sorted(public - listed)}"
    assert listed - set(module.__all__) == set(), f"not public in {package}: {sorted(listed - set(module.__all__))}"


def test_api_reference_is_in_the_table_of_contents_and_built_with_autodoc():
    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text())
    chapters = [c for part in toc["parts"] for c in part["chapters"]]
    (api,) = [c for c in chapters if c["file"] == "api"]
    pages = [p.removesuffix(".md") for p in API_PAGES.values()] + ["api/results", "api/study"]
    assert sorted(s["file"] for s in api["sections"]) == sorted(pages)
    extensions = _config()["sphinx"]["extra_extensions"]
    assert {"sphinx.ext.autodoc", "sphinx.ext.autosummary"} <= set(extensions)

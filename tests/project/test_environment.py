"""The conda environment.yml mirrors the two pyproject.toml files (the library's and the study's,
lib/faithlab-study), and the locked environment has a working torch stack."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
STUDY_PYPROJECT = ROOT / "lib" / "faithlab-study" / "pyproject.toml"
LOCAL = ("-e .", "-e ./lib/faithlab-study[cluster]")  # the two distributions of this repository, editable


def _normalise(requirement: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", requirement)
    name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
    return name, match.group(2).replace(" ", "")


def _declared(project: dict, study: dict) -> list[str]:
    """What `make` installs (uv sync --locked --all-extras --all-packages): the library's core, every extra and the dev
    group, and the study's dependencies and extras; a requirement of faithlab itself ("faithlab[report,...]") adds
    nothing of its own, and one the study shares with a library extra (pyyaml) counts once."""
    extras = project["project"]["optional-dependencies"]
    own = [r for reqs in extras.values() for r in reqs if _normalise(r)[0] != "faithlab"]
    library = project["project"]["dependencies"] + own + project["dependency-groups"]["dev"]
    names = dict(map(_normalise, library))
    theirs = study["project"]["dependencies"] + [r for reqs in study["project"]["optional-dependencies"].values()
                                                 for r in reqs]
    shared = [r for r in theirs if _normalise(r)[0] in names]
    assert all(names[n] == spec for n, spec in map(_normalise, shared)), f"the two pyprojects disagree on {shared}"
    return library + [r for r in theirs if _normalise(r)[0] not in names and _normalise(r)[0] != "faithlab"]


def test_environment_yml_names_the_same_direct_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = _declared(project, tomllib.loads(STUDY_PYPROJECT.read_text()))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    conda_python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert conda_python, "environment.yml must pin python"
    assert all(local in pip for local in LOCAL), f"environment.yml must install both distributions ({LOCAL})"
    listed = [_normalise(r) for r in pip if r not in LOCAL]
    assert len(listed) == len(dict(listed)), "environment.yml names a package twice"
    assert len(declared) == len(dict(map(_normalise, declared))), "pyproject.toml names a package in two places"
    assert dict(map(_normalise, declared)) == dict(listed)
    assert project["project"]["requires-python"].startswith(">=3.11")


def test_every_extra_is_installed_by_make_and_reached_by_all():
    """`make` syncs every extra from the lock; the extras that name other extras name existing ones, and `all` reaches
    every extra (directly or through another)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert re.search(r"^\t\$\(UV\) sync --locked --all-extras --all-packages$", (ROOT / "Makefile").read_text(), re.M)
    named = {e: [x.strip() for r in reqs if (m := re.match(r"faithlab\[(.*)\]$", r)) for x in m.group(1).split(",")]
             for e, reqs in extras.items()}
    assert all(x in extras for xs in named.values() for x in xs), named
    reached, todo = set(), ["all"]
    while todo:
        for x in named[todo.pop()]:
            if x not in reached:
                reached.add(x)
                todo.append(x)
    assert reached == set(extras) - {"all"}, f"faithlab[all] misses {sorted(set(extras) - {'all'} - reached)}"


def test_lock_file_is_committed_next_to_pyproject():
    lock = (ROOT / "uv.lock").read_text()
    for name in ("torch", "torchvision", "captum", "jupyter-book"):
        assert f'name = "{name}"' in lock


def test_torch_stack_imports():
    import captum  # noqa: F401
    import torch
    import torchvision

    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    assert (major, minor) >= (2, 14), torch.__version__
    assert torchvision.transforms.functional.gaussian_blur(torch.ones(1, 1, 5, 5), [3, 3]).allclose(torch.ones(1))

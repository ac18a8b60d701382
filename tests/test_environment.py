"""The conda environment.yml mirrors pyproject.toml, and the locked environment has a working torch stack."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _normalise(requirement: str) -> tuple[str, str]:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$", requirement)
    name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
    return name, match.group(2).replace(" ", "")


def test_environment_yml_names_the_same_direct_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = project["project"]["dependencies"] + project["dependency-groups"]["dev"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    conda_python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert conda_python, "environment.yml must pin python"
    assert "-e ." in pip, "environment.yml must install the project itself (-e .)"
    assert dict(map(_normalise, declared)) == dict(_normalise(r) for r in pip if r != "-e .")
    assert project["project"]["requires-python"].startswith(">=3.11")


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

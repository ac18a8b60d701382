"""The two distributions: the library's wheel, installed without extras into a fresh environment, holds no study
module and runs a metric with a known answer; the optional packages are absent there, and what needs one names the
extra that installs it. The study's wheel (lib/faithlab-study) holds only the study and installs on top of it.

The wheel test builds both with ``uv build``, makes a fresh ``uv venv`` on this Python and installs the library's
wheel with ``uv pip install`` from the package index (uv's cache makes torch quick when the project's environment was
synced first); it runs one script in that environment and reads its JSON report, then installs the study's wheel
there and imports it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from faithlab import _optional

ROOT = Path(__file__).resolve().parents[2]
STUDY_PROJECT = ROOT / "lib" / "faithlab-study"

# Imports the metric core needs nothing optional for (the `faithlab evaluate` command's modules join when they land).
CORE = ("faithlab", "faithlab.perturb", "faithlab.metrics", "faithlab.explainers", "faithlab.evaluation",
        "faithlab.data", "faithlab.models", "faithlab.train", "faithlab.paths", "faithlab.report", "faithlab.cli")
# Absent from a slim install (matplotlib is not among them: captum requires it).
ABSENT = ("faithlab_study", "timm", "papermill", "seaborn", "sklearn", "yaml", "torchray", "deel", "saliency", "ot",
          "jupytext", "jupyter_book", "distributed", "dask_jobqueue")

# Run inside the fresh environment (no tests/ there: the oracle model is written out). Prints one JSON object.
SCRIPT = r'''
import importlib, json, pkgutil, sys, traceback
import torch
from torch import nn

report = {"core": {}, "absent": {}, "modules": {}, "needs": {}}
for name in sys.argv[1].split(","):
    try:
        importlib.import_module(name)
        report["core"][name] = "ok"
    except Exception:
        report["core"][name] = traceback.format_exc()
for name in sys.argv[2].split(","):
    try:
        importlib.import_module(name)
        report["absent"][name] = "imported"
    except ModuleNotFoundError as err:
        report["absent"][name] = err.name

import faithlab as fl

report["version"] = fl.__version__
report["file"] = fl.__file__
# every module of the installed package: imports, or fails naming the extra that installs what it lacks
for info in pkgutil.walk_packages(fl.__path__, "faithlab.", onerror=lambda name: None):
    if info.name.endswith(".__main__"):  # importing it runs a command line
        continue
    try:
        importlib.import_module(info.name)
        report["modules"][info.name] = "ok"
    except Exception as err:
        report["modules"][info.name] = f"{type(err).__name__}: {err}"


class LinearProb(nn.Module):
    """p(class 0 | x) = q0 + sum(beta * x) exactly (tests/support/oracles.py's oracle): removal drops add up."""

    def __init__(self, beta, q0):
        super().__init__()
        self.register_buffer("beta", beta.flatten())
        self.q0 = q0

    def forward(self, x):
        q = self.q0 + (x.flatten(1) * self.beta).sum(1)
        return torch.stack([q.log(), (1 - q).log()], dim=1)


beta = torch.tensor([0.10, 0.05, 0.02, 0.01, 0.06, 0.04], dtype=torch.float64)
model = LinearProb(beta, 0.5).eval()
x = torch.ones(1, 1, 2, 3, dtype=torch.float64)
attr = torch.tensor([6.0, 5, 4, 3, 2, 1], dtype=torch.float64).view(1, 1, 2, 3)
details = fl.metrics.saco_details(model, x, attr, k=3, reference="zero")
report["saco"] = details["saco"].tolist()
report["saco_drop"] = details["drop"].tolist()
curve = fl.perturb.removal_curve(model, x, beta.view(1, 1, 2, 3), [0.0, 0.5, 1.0], order="morf", reference="zero",
                                 output="prob", target=torch.tensor([0]))
report["curve"] = curve.tolist()
report["saliency"] = fl.explainers.explain(model.float(), x.float(), torch.tensor([0]), method="saliency").tolist()

def needs(label, call):
    try:
        call()
        report["needs"][label] = "no error"
    except ImportError as err:
        report["needs"][label] = f"{type(err).__name__}: {err}"

needs("lipschitz_cnn", lambda: fl.models.build("lipschitz_cnn"))
needs("extremal_perturbation", lambda: fl.explainers.explain(model.float(), x.float(), torch.tensor([0]),
                                                            method="extremal_perturbation"))
needs("digits", lambda: fl.data.digits())
needs("plots", lambda: importlib.import_module("faithlab.plots"))
open("methods.yaml", "w").write("Saliency: saliency\n")
needs("explainers_yaml", lambda: importlib.import_module("faithlab.cli.arguments").parse_explainers("methods.yaml"))
print("REPORT" + json.dumps(report))
'''


def _uv() -> str:
    """uv as the Makefile finds it (`make` installs it into ~/.local/bin when missing)."""
    found = os.environ.get("UV") or shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    assert Path(found).is_file(), f"uv not found (looked for $UV, uv on PATH and {found}); `make setup` installs it"
    return found


def _run(args: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _flat(nested) -> list[float]:
    """A nested list of numbers (a tensor the report sent as JSON), flattened."""
    return [v for item in nested for v in _flat(item)] if isinstance(nested, list) else [nested]


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group(0)).lower()


def test_optional_table_names_each_package_in_the_extra_pyproject_declares():
    extras = _extras()
    for module, (distribution, extra) in _optional.EXTRAS.items():
        assert extra in extras, f"{module}: no extra {extra!r} in pyproject.toml"
        named = [_name(r) for r in extras[extra]]
        assert distribution in named, (module, distribution, extra)


def test_require_names_the_extra_and_passes_other_errors_through(monkeypatch):
    with pytest.raises(ValueError, match="module must be an optional dependency"):
        _optional.require("json", "a test")
    monkeypatch.setitem(sys.modules, "timm", None)  # as if not installed: import raises ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match=re.escape("model X needs timm: pip install 'faithlab[timm]'")):
        _optional.require("timm", "model X")
    monkeypatch.setitem(sys.modules, "deel", None)
    monkeypatch.setitem(sys.modules, "deel.torchlip", None)  # an earlier test may have imported it
    with pytest.raises(ImportError, match=re.escape("needs deel-torchlip: pip install 'faithlab[lipschitz]'")):
        _optional.require("deel.torchlip", "LipschitzCNN")


@pytest.mark.slow
def test_wheel_installs_slim_and_runs_a_metric(tmp_path):
    uv = _uv()
    _run([uv, "build", "--wheel", "--quiet", "-o", tmp_path / "dist", ROOT])
    wheels = list((tmp_path / "dist").glob("faithlab-*.whl"))
    assert len(wheels) == 1, wheels
    wheel = wheels[0]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert wheel.name.startswith(f"faithlab-{project['version']}-")
    with zipfile.ZipFile(wheel) as archive:
        info = f"faithlab-{project['version']}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
        assert f"{info}/licenses/LICENSE" in archive.namelist()
    assert re.search(r"^\[console_scripts\]\nfaithlab = faithlab\.cli:main$", entry_points, re.M), entry_points
    assert "License-Expression: MIT" in metadata
    unconditional = sorted(_name(r) for r in re.findall(r"^Requires-Dist: ([^;\n]+)$", metadata, re.M))
    assert unconditional == sorted(_name(r) for r in project["dependencies"])
    assert set(re.findall(r"^Provides-Extra: (\S+)$", metadata, re.M)) == set(_extras())

    env = tmp_path / "env"
    _run([uv, "venv", "--quiet", env, "--python", sys.executable])
    python = env / "bin" / "python"
    _run([uv, "pip", "install", "--quiet", "--python", python, wheel])
    done = _run([python, "-c", SCRIPT, ",".join(CORE), ",".join(ABSENT)], cwd=tmp_path,
                env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}, timeout=600)
    report = json.loads(done.stdout.rsplit("REPORT", 1)[1])

    assert Path(report["file"]).is_relative_to(env), "the fresh environment must import the installed wheel"
    assert report["version"] == project["version"]
    assert report["core"] == {name: "ok" for name in CORE}
    assert report["absent"] == {name: name for name in ABSENT}, "a slim install must not bring these"
    unexplained = {m: why for m, why in report["modules"].items()
                   if why != "ok" and "pip install 'faithlab[" not in why}
    assert not unexplained, f"modules that fail in a slim install without naming their extra: {unexplained}"
    # the oracle (tests/faithlab/metrics/papers/saco/test_saco.py's hand computation): SaCo 0.5, group drops Σβ; MoRF removal of β's
    # top units
    assert report["saco"] == pytest.approx([0.5])
    assert report["saco_drop"][0] == pytest.approx([0.15, 0.03, 0.10])
    assert report["curve"][0] == pytest.approx([0.78, 0.78 - 0.21, 0.5])
    saliency = _flat(report["saliency"])
    assert saliency == pytest.approx([b / 0.78 for b in (0.10, 0.05, 0.02, 0.01, 0.06, 0.04)], rel=1e-5)
    expected = {"lipschitz_cnn": "needs deel-torchlip: pip install 'faithlab[lipschitz]'",
                "extremal_perturbation": "needs torchray: pip install 'faithlab[torchray]'",
                "digits": "needs scikit-learn: pip install 'faithlab[data]'",
                "plots": "needs seaborn: pip install 'faithlab[report]'",
                "explainers_yaml": "needs pyyaml: pip install 'faithlab[yaml]'"}
    for label, tail in expected.items():
        assert report["needs"][label].startswith("ModuleNotFoundError: "), (label, report["needs"][label])
        assert report["needs"][label].endswith(tail), (label, report["needs"][label])

    # the library's wheel holds the library only; the study's holds the study only and installs on top of it
    with zipfile.ZipFile(wheel) as archive:
        outside = [n for n in archive.namelist() if not n.startswith(("faithlab/", "faithlab-"))]
        study_files = [n for n in archive.namelist() if n.startswith("faithlab/study/")]
    assert not outside and not study_files, (outside, study_files)
    _run([uv, "build", "--wheel", "--quiet", "-o", tmp_path / "study-dist", STUDY_PROJECT])
    (study_wheel,) = (tmp_path / "study-dist").glob("faithlab_study-*.whl")
    with zipfile.ZipFile(study_wheel) as archive:
        names = archive.namelist()
        study_metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert names and all(n.startswith(("faithlab_study/", "faithlab_study-")) for n in names), names
    assert "faithlab_study/papers/trace/claims/__init__.py" in names
    requires = re.findall(r"^Requires-Dist: ([^;\n]+)$", study_metadata, re.M)
    library = [re.fullmatch(r"faithlab\[([\w,]+)\]==(\S+)", r.replace(" ", "")) for r in requires]
    assert [(set(m[1].split(",")), m[2]) for m in library if m] == [(set(_STUDY_EXTRAS), project["version"])], requires
    _run([uv, "pip", "install", "--quiet", "--python", python, "--find-links", tmp_path / "dist", study_wheel],
         timeout=900)
    code = ("import json, faithlab, faithlab_study, faithlab_study.runner, faithlab_study.verdicts; "
            "print(json.dumps([faithlab.__file__, faithlab_study.__file__]))")
    done = _run([python, "-c", code], cwd=tmp_path,
                env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}, timeout=600)
    library_file, study_file = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(library_file).is_relative_to(env) and Path(study_file).is_relative_to(env)
    done = _run([python, "-m", "faithlab_study", "--help"], cwd=tmp_path, timeout=600)
    assert "run" in done.stdout


_STUDY_EXTRAS = ("data", "lipschitz", "ot", "report", "saliency", "timm", "torchray", "yaml")
"""The library's extras the study's chapters use (lib/faithlab-study/pyproject.toml): the study pins its library."""

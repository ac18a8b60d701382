"""The metric modules are named on one axis, the paper (issue 51): every metric is declared under
``faithlab.metrics.papers.<slug>`` with ``paper="<slug>"``; no attribute of a package hides a module of the same
name (``fl.metrics.saco`` is a function, so SaCo's package is ``papers.saco``); the modules' earlier paths still
import, to the same module objects."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest

import faithlab as fl
from faithlab.metrics import registry

PAPERS_PACKAGE = "faithlab.metrics.papers."


def misplaced(metrics) -> list[str]:
    """The metrics whose declaring module is not under ``papers/<their paper>``: the module of the function evaluate
    runs (``function``, else ``details``) must start with ``faithlab.metrics.papers.<paper>``."""
    out = []
    for m in metrics:
        module = getattr(m.function or m.details, "__module__", "")
        slug = module[len(PAPERS_PACKAGE):].split(".")[0] if module.startswith(PAPERS_PACKAGE) else None
        if slug != m.paper:
            out.append(f"{m.name}: paper {m.paper!r}, declared in {module}")
    return out


def shadowed(package: types.ModuleType) -> list[str]:
    """The submodules of ``package`` (recursively) that the package's attribute of the same name does not give back:
    ``import package.name as m`` would then bind the attribute, not the module."""
    out = []
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        module = importlib.import_module(info.name)
        parent, _, name = info.name.rpartition(".")
        if getattr(sys.modules[parent], name, None) is not module:
            out.append(info.name)
    return out


def test_every_metric_is_declared_in_the_package_of_its_paper():
    library = [m for m in registry.METRICS.values()  # not a toy metric another test may have registered
               if getattr(m.function or m.details, "__module__", "").startswith("faithlab.")]
    assert len(library) >= 19
    assert misplaced(library) == []
    assert set(registry.PAPERS) <= {m.name for m in pkgutil.iter_modules(fl.metrics.papers.__path__)}


def test_the_placement_check_finds_a_metric_in_another_papers_package():
    saco = registry.METRICS["saco"]
    moved = registry.Metric("saco", "SaCo", "trace", True, saco.function, details=saco.details, score="saco")
    assert misplaced([moved]) == ["saco: paper 'trace', declared in faithlab.metrics.papers.saco.consistency"]


def test_no_package_attribute_hides_a_module_of_the_same_name():
    assert shadowed(fl.metrics) == []
    assert callable(fl.metrics.saco) and fl.metrics.papers.saco.consistency.saco is fl.metrics.saco


def test_the_shadow_check_finds_a_function_named_like_its_module(tmp_path, monkeypatch):
    root = tmp_path / "clash"
    root.mkdir()
    (root / "__init__.py").write_text("from clash.saco import saco\n")
    (root / "saco.py").write_text("def saco():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert shadowed(importlib.import_module("clash")) == ["clash.saco"]


@pytest.mark.parametrize("old", sorted(fl.metrics.MOVED))
def test_the_modules_earlier_paths_import_the_same_module(old):
    assert importlib.import_module(f"faithlab.metrics.{old}") is fl.metrics.MOVED[old]
    assert getattr(fl.metrics, old) is fl.metrics.MOVED[old]


def test_earlier_imports_work_in_a_fresh_interpreter():
    code = ("from faithlab.metrics.crossfold import reco\nfrom faithlab.metrics.search import anneal\n"
            "import faithlab.metrics.bhatt as b\nfrom faithlab.metrics.trace import lerf_morf\nimport faithlab as fl\n"
            "assert reco is fl.metrics.reco and anneal is fl.metrics.search.anneal\n"
            "assert b.mu_fidelity is fl.metrics.mu_fidelity and lerf_morf is fl.metrics.trace.lerf_morf\n"
            "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "ok", run.stderr

"""The metric modules are named on one axis, the paper (issue 51): every metric is declared under
``faithlab.metrics.papers.<slug>`` with ``paper="<slug>"``; no attribute of a package hides a module of the same
name (``fl.metrics.saco`` is a function, so SaCo's package is ``papers.saco``); every module is imported under its
own path only (no module is planted in ``sys.modules`` under an earlier name)."""

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


def test_every_module_is_imported_under_its_own_name_only():
    """No package plants a module in ``sys.modules`` under another path (the modules' paths before issue 51 are
    gone: ``faithlab.metrics.crossfold`` is ``faithlab.metrics.papers.reco_mege.crossfold``)."""
    code = ("import sys, faithlab as fl, faithlab.evaluation\n"
            "print(sorted(k for k, m in sys.modules.items() if k.startswith('faithlab') and m is not None "
            "and m.__name__ != k))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
    for old in ("crossfold", "bhatt", "consistency", "cumulative", "localisation", "distances", "ffidelity"):
        assert not hasattr(fl.metrics, old), old
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"faithlab.metrics.{old}")

"""The public API's shape: every exported name exists, and options after the tensors are keyword-only."""

from __future__ import annotations

import importlib
import inspect

import pytest

PACKAGES = ["faithlab.evaluation", "faithlab.perturb", "faithlab.metrics", "faithlab.explainers", "faithlab.models",
            "faithlab.train", "faithlab.data", "faithlab.plots", "faithlab_study.papers", "faithlab_study.artifacts",
            "faithlab_study.verdicts", "faithlab_study.recipes"]
# positional parameters with a default that are not tensors, on purpose: the removal order is the second thing
# one says about an order (``order(scores, "lerf")``); finetune's augmentation hook is the point of the call;
# fl.evaluate's maps are its fourth argument (``fl.evaluate(model, x, y, attributions)``), None to explain with
# ``explainer``.
POSITIONAL_OPTIONS = {("faithlab.evaluation", "evaluate", "attributions"), ("faithlab.perturb", "order", "order"),
                      ("faithlab.train", "finetune", "augment"), ("faithlab.data", "to_tensors", "n"),
                      ("faithlab_study.verdicts", "ladder", "partly"), ("faithlab.perturb", "make_reference", "kind"),
                      ("faithlab.data", "timeseries", "task")}


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_exists(name):
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", []) if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"


@pytest.mark.parametrize("name", PACKAGES)
def test_options_after_the_tensors_are_keyword_only(name):
    module = importlib.import_module(name)
    offenders = []
    for attr in getattr(module, "__all__", []):
        fn = getattr(module, attr)
        if not inspect.isfunction(fn):
            continue
        for p in inspect.signature(fn).parameters.values():
            tensor_like = any(t in str(p.annotation) for t in ("Tensor", "Generator", "Mapping[tuple"))
            if (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty and not tensor_like
                    and (name, attr, p.name) not in POSITIONAL_OPTIONS):
                offenders.append(f"{attr}({p.name}=...)")
    assert not offenders, f"{name}: options that should be keyword-only: {offenders}"


def test_the_study_artifacts_import_without_torch():
    """A notebook's outputs and verdicts (faithlab_study.artifacts) need numpy, scipy and pandas only: importing them
    must not import torch (about 1.7 s a kernel; the t interval they read is faithlab.intervals, outside
    faithlab.evaluation)."""
    import subprocess
    import sys

    code = "import sys, faithlab_study.artifacts, faithlab.intervals; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False", "importing faithlab_study.artifacts imported torch"


def test_evaluation_estimate_is_the_function_whichever_import_comes_first():
    """``fl.evaluation.estimate`` is the function; its module is ``estimation`` (no name is both a submodule and a
    function), so importing the module first (as budget.py does) leaves the package's name alone."""
    import subprocess
    import sys

    code = ("import faithlab.evaluation.estimation as _; from faithlab.evaluation.estimation import probe_shape; "
            "import faithlab as fl, inspect; print(inspect.isfunction(fl.evaluation.estimate), "
            "fl.evaluation.estimate.__module__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "faithlab.evaluation.estimation"]

"""Every metric of the study in one call: ``fl.evaluate(model, x, y, attributions)`` → a tidy pandas frame.

One row per explainer × sample × metric (dataset-level metrics, ReCo and MeGe, one row per explainer with
``sample`` missing), with the metric's paper and direction. The metrics are those registered in
:mod:`faithlab.metrics.registry` (each declared beside its function in its module); the metric code is the
library's own (:mod:`faithlab.metrics`); this package only runs the registry and shares the work:

* the clean forward pass runs once; its prediction ŷ is the class every metric explains (``target``);
* metrics of one group share one computation (accuracy AUC, AOPC and LOdds read one most-salient-first removal
  curve, TRACE's ΣLeRF, ΣMoRF and their difference one pair of patch deletion curves); shared inputs are computed
  once for all explainers (Few-class Fidelity's perturbed images, the k fold models' predictions);
* every random metric of every explainer gets the same seed (common random numbers), so explainers differ by
  their maps only.

``loop`` (:func:`evaluate`: the boundary ``call``, which checks every argument once, then the optional ``budget``,
then the ``engine``, which runs the registry chunk by chunk; ``checkpoint`` keeps finished chunks), ``estimate``
and ``frame`` (the tidy frame, :func:`cost`, :func:`oriented`, :func:`describe`). A progress bar (tqdm) runs over the chunks of samples × explainers × metric groups (``progress``:
by default on, except where ``FAITHLAB_PROGRESS=0``, as in the study runner's kernels), and the frame's
``attrs["cost"]`` records, per metric group and explainer, the model inputs evaluated, the model calls, the inputs
given to the explainer and the seconds (:func:`cost`); ``attrs["forward_inputs"]`` is the total.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names below, imported on first use (see __getattr__)
    from faithlab.evaluation.estimate import estimate
    from faithlab.evaluation.frame import cost, describe, oriented
    from faithlab.evaluation.loop import available, evaluate
    from faithlab.metrics.papers.ffidelity import SPARSITY
    from faithlab.metrics.registry import METRICS

# The package's names are imported on first use: its modules (and the metrics registry behind them) import torch,
# about 1.7 s, which faithlab.evaluation.intervals (numpy and scipy only; the study's verdicts read it) does not need.
_HOMES = {"estimate": "faithlab.evaluation.estimate", "cost": "faithlab.evaluation.frame",
          "describe": "faithlab.evaluation.frame", "oriented": "faithlab.evaluation.frame",
          "available": "faithlab.evaluation.loop", "evaluate": "faithlab.evaluation.loop",
          "SPARSITY": "faithlab.metrics.papers.ffidelity", "METRICS": "faithlab.metrics.registry"}

PAPER_METRICS: dict[str, list[str]]
"""Display names of the study's metrics of each paper (chapter slug → labels), for the book's study map."""

__all__ = ["METRICS", "PAPER_METRICS", "SPARSITY", "available", "evaluate", "cost", "oriented", "describe",
           "estimate"]


def __getattr__(name: str):
    if name == "PAPER_METRICS":
        from faithlab.metrics.registry import paper_metrics

        value = paper_metrics()
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'faithlab.evaluation' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """``estimate`` is both a submodule and the function the package exports under that name. Eagerly imported, the
    function was bound after the submodule; imported on first use, the import system would bind the submodule as
    the package's ``estimate`` whenever anything imports it first (``from faithlab.evaluation.estimate import …``),
    and ``fl.evaluation.estimate(...)`` would then call a module. The package keeps the function under that name."""

    def __setattr__(self, name: str, value) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return  # the submodule stays reachable in sys.modules
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

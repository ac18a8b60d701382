"""faithlab: batched, device-agnostic evaluation of the faithfulness of post-hoc explanations.

Submodules are imported lazily so that ``import faithlab as fl`` stays cheap::

    import faithlab as fl
    curves = fl.perturb.removal_curve(model, x, attributions, fractions, target=y)
    report = fl.evaluate(model, x, y, {"IG": attributions})   # every metric of the study
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = (
    "perturb",
    "metrics",
    "explainers",
    "data",
    "models",
    "train",
    "stats",
    "plots",
    "paths",
    "outputs",
    "verdicts",
    "study",
    "recipes",
    "protocols",
    "evaluation",
)

__all__ = ["__version__", "evaluate", *_SUBMODULES]


def __getattr__(name: str):
    if name == "evaluate":  # every metric in one call: faithlab.evaluation.evaluate
        value = importlib.import_module(f"{__name__}.evaluation").evaluate
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'faithlab' has no attribute {name!r}")

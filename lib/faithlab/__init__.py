"""faithlab: batched, device-agnostic evaluation of the faithfulness of post-hoc explanations.

Submodules are imported lazily so that ``import faithlab as fl`` stays cheap::

    import faithlab as fl
    curves = fl.perturb.removal_curve(model, x, attributions, fractions, target=y)
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
)

__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'faithlab' has no attribute {name!r}")

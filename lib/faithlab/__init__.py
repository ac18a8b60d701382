"""faithlab: batched, device-agnostic evaluation of the faithfulness of post-hoc explanations.

Submodules are imported lazily so that ``import faithlab as fl`` stays cheap::

    import faithlab as fl
    curves = fl.perturb.removal_curve(model, x, attributions, fractions, target=y)
    report = fl.evaluate(model, x, y, {"IG": attributions})   # every metric of the study
"""

from __future__ import annotations

import importlib


def _version() -> str:
    """The installed distribution's version (pyproject.toml's ``version``, which CITATION.cff and CHANGELOG.md
    repeat); "0+unknown" when faithlab is imported from a source tree that was never installed. Read on first use of
    ``faithlab.__version__`` (importlib.metadata costs tens of milliseconds to import)."""
    from importlib import metadata

    try:
        return metadata.version("faithlab")
    except metadata.PackageNotFoundError:
        return "0+unknown"


_SUBMODULES = (
    "perturb",
    "metrics",
    "explainers",
    "data",
    "models",
    "train",
    "plots",
    "paths",
    "evaluation",
)

__all__ = ["__version__", "evaluate", *_SUBMODULES]


def __getattr__(name: str):
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    if name == "evaluate":  # every metric in one call: faithlab.evaluation.evaluate
        value = importlib.import_module(f"{__name__}.evaluation").evaluate
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'faithlab' has no attribute {name!r}")

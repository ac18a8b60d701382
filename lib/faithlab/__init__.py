"""faithlab: batched, device-agnostic evaluation of the faithfulness of post-hoc explanations.

Submodules are imported lazily so that ``import faithlab as fl`` stays cheap::

    import faithlab as fl
    curves = fl.perturb.removal_curve(model, x, attributions, fractions, target=y)
    report = fl.evaluate(model, x, y, {"IG": attributions})   # every metric of the study
"""

from __future__ import annotations

import importlib

__all__ = ["__version__", "evaluate", "perturb", "metrics", "explainers", "data", "models", "train", "plots", "paths",
           "evaluation"]


# Lazy (PEP 562) on purpose, the package's one exception to plain imports: ``python -X importtime -c "import
# faithlab"`` (the top-level cumulative times summed, median of 5 runs on the 2-core dev machine) takes 6-16 ms as
# it is and about 2.4 s (min 1.7 s) when this file imports the submodules above (torch alone is 1.2 s, then
# matplotlib, pandas and the metric registry). Every ``faithlab.<module>`` import runs this file first: the
# ``faithlab`` command checks its flags before torch is imported, and the study's verdicts and artifact writer read
# faithlab.intervals and faithlab.paths without torch (tests/project/test_api.py).
def __getattr__(name: str):
    if name == "__version__":
        from faithlab._version import version

        value = version()
    elif name == "evaluate":  # every metric in one call: faithlab.evaluation.evaluate
        value = importlib.import_module(f"{__name__}.evaluation").evaluate
    elif name in __all__:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'faithlab' has no attribute {name!r}")
    globals()[name] = value
    return value

"""The study that makes the book, beside the metric library (:mod:`faithlab`), which never imports it.

- :mod:`faithlab_study.papers` — one package per paper: its set-up (models and data), experiments, claims and the
  paper's numbers; ``basics`` and ``diagnostics`` serve every chapter.
- :mod:`faithlab_study.verdicts` — the pre-registered procedure: the registry of the rules (registered above the claim functions),
  intervals whose coverage is tested, decisions, the power analysis and replication.
- :mod:`faithlab_study.artifacts` — the writer: records (CSV, figures, claims) what a claim function decided.
- :mod:`faithlab_study.book` — the book's pages, the scorecard and the study map.
- :mod:`faithlab_study.runner` — runs the notebooks (``python -m faithlab_study``): parameters, stamps, execution,
  scheduling, shards, clusters, promotion and the command line.
- :mod:`faithlab_study.recipes` — the study's models, as each paper builds them.

Dependencies point down: notebooks → study → library. The runner's names are the runner's
(``faithlab_study.runner.run``, ``faithlab_study.runner.PROFILES``); this package names its subpackages only.
"""

import importlib

__all__ = ["papers", "verdicts", "artifacts", "book", "runner", "recipes"]


# Lazy (PEP 562) on purpose, the study's one exception to plain imports: ``python -m faithlab_study`` imports this
# file first, and its command line checks its arguments before torch, pandas, papermill or dask are imported
# (tests/faithlab_study/runner/test_runner_usage.py). ``python -X importtime -c "import faithlab_study"`` (the top-level cumulative
# times summed, median of 5 runs on the 2-core dev machine) takes about 5 ms as it is and about 1.8 s when this file
# imports the six subpackages above (torch alone is 1.2 s); ``import faithlab_study.runner.cli``, what the command
# line needs, about 40 ms.
def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(f"{__name__}.{name}")
    globals()[name] = value
    return value

"""The study that makes the book, beside the metric library (:mod:`faithlab`), which never imports it.

- :mod:`faithlab.study.papers` — one package per paper: its set-up (models and data), experiments, claims and the
  paper's numbers; ``basics`` and ``diagnostics`` serve every chapter.
- :mod:`faithlab.study.verdicts` — the pre-registered procedure: the committed rules files and their reader,
  intervals whose coverage is tested, decisions, the power analysis and replication.
- :mod:`faithlab.study.artifacts` — the writer: records (CSV, figures, claims) what a claim function decided.
- :mod:`faithlab.study.book` — the book's pages, the scorecard and the study map.
- :mod:`faithlab.study.runner` — runs the notebooks (``python -m faithlab.study``): parameters, stamps, execution,
  scheduling, shards, clusters, promotion and the command line.
- :mod:`faithlab.study.recipes` — the study's models, as each paper builds them.

Dependencies point down: notebooks → study → library. The runner's public names (:func:`run`, :func:`discover`,
``PROFILES``, ...) are re-exported here, so ``faithlab.study.run`` is the runner's :func:`run`.
"""

import importlib

from faithlab.study.runner import __all__ as _runner_all
from faithlab.study.runner.cli import main  # light: ``python -m faithlab.study`` imports this package first

# Everything else is imported on first use (PEP 562): the command line checks its arguments before torch, pandas,
# papermill or dask are imported (tests/study/test_runner_usage.py).
_SUBPACKAGES = ("papers", "verdicts", "artifacts", "book", "runner", "recipes")

__all__ = [*_SUBPACKAGES, *_runner_all]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        value = getattr(importlib.import_module(f"{__name__}.runner"), name)  # AttributeError names the runner
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

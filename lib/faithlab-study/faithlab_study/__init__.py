"""The study that makes the book, beside the metric library (:mod:`faithlab`), which never imports it.

- :mod:`faithlab.study.papers` — one package per paper: its set-up (models and data), experiments, claims and the
  paper's numbers; ``basics`` and ``diagnostics`` serve every chapter.
- :mod:`faithlab.study.verdicts` — the pre-registered procedure: the registry of the rules (registered above the claim functions),
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

# Everything is imported on first use (PEP 562): the command line checks its arguments before torch, pandas, papermill
# or dask are imported (tests/study/test_runner_usage.py), and a slim install (no pyyaml, no papermill: the study's
# extra) still imports the verdicts, the artifact writer and the papers' claim functions.
_SUBPACKAGES = ("papers", "verdicts", "artifacts", "book", "runner", "recipes")
RUNNER_NAMES = (
    "PROFILES", "StudyError", "Notebook", "notebooks_dir", "discover", "select", "load_profile", "parse_overrides",
    "merge_parameters", "STAMP", "run_key", "output_paths", "is_current", "LOCKS", "STAGING", "JOURNAL", "recover",
    "SHARDS", "SHARD_DONE", "SHARD_SECONDS", "shard_plan", "shard_store", "KERNEL_STARTUP", "kernel_options",
    "Result", "execute", "CLAIMS", "CLAIM_COLUMNS", "SCORECARD", "SUMMARY", "PREREGISTRATION", "STUDY_MAP",
    "ALL_PAPERS", "STUDY_CHECK", "summarise", "write_scorecard", "run", "main",
)
"""The runner's public names (``faithlab.study.runner.__all__``), re-exported here."""

__all__ = [*_SUBPACKAGES, *RUNNER_NAMES]


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in RUNNER_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.runner"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""Run the study's notebooks: jupytext sources → papermill → executed notebooks and artifacts for the book.

Usage (from the repository root)::

    python -m faithlab_study list
    python -m faithlab_study run --profile book -j 2
    python -m faithlab_study run basics/digits_classifier --profile smoke -p n_epochs 3
    python -m faithlab_study scorecard
    python -m faithlab_study run saco --profile paper --cluster slurm -j 8 -p n_shards 8   # on a Dask cluster

Notebooks can run on a Dask distributed cluster (``--cluster``, :mod:`faithlab_study.runner.cluster`) and, when they
declare the parameters ``shard = None`` and ``n_shards = 1``, as ``n_shards`` shards plus a reduce step
(:func:`execute`, :func:`faithlab_study.artifacts.sharded`), here or there; everything below holds in every case.

Each notebook ``notebooks/<paper>/<experiment>.py`` (jupytext py:percent, exactly one cell tagged ``parameters``)
is executed with parameters merged from, lowest to highest priority: its own parameters cell, the profile file
``notebooks/params/<profile>.yaml`` (``defaults`` for every notebook that defines the name, then ``notebooks:
{<paper>/<experiment>: {...}}``), and ``-p name value`` on the command line. Outputs go to
``book/_generated/<paper>/<experiment>.ipynb`` and ``book/_generated/<paper>/<experiment>/`` (tables, figures,
claims); the kernel learns its notebook's name and staging folder from the runner (``FAITHLAB_NOTEBOOK``,
``FAITHLAB_OUTPUT_DIR``), so a notebook opens its outputs with ``faithlab_study.artifacts.for_notebook()``. A run is skipped
when the stamp of the last successful run matches the hash of (notebook source, merged parameters, library source,
uv.lock); an unreadable stamp counts as no stamp (the notebook is executed again).
The kernels run with ``FAITHLAB_PROGRESS=0`` (the library's progress bars off), and each executed notebook is made
a page of the book before its promotion (``faithlab_study.book.notebook_page``): one parameters cell, "this run's
parameters", a first cell linking to its chapter with the run time, and no stderr stream (moved to
``<experiment>/stderr.log`` and reported on the terminal).

Guarantees, also with several runners at once and with a runner killed at any point:

* Parameters cells are parsed, never executed: only ``name = <literal>`` lines (numbers, strings, booleans, None,
  lists, tuples, dicts, sets) and comments are allowed, anything else is an error naming the file and line. A
  profile or ``-p`` value that is not valid YAML, has a key twice or has the wrong shape is an error naming the
  file and line or the parameter.
* One runner at a time executes a given notebook: it holds the lock ``<generated>/.locks/<paper>--<experiment>.lock``
  (fcntl.flock, released by the system when its process ends) from its staging to its promotion. Another runner
  that wants the same notebook waits, then skips it if the first one produced exactly the outputs it wanted.
* Each execution stages its outputs in its own folder ``<generated>/.staging/<paper>--<experiment>--<id>/``, which
  only the holder of that notebook's lock removes (its owner, or a later runner once the owner is dead).
* Promotion (the staged outputs replace the old ones) is journaled in ``<generated>/.promoting/``, and the executed
  notebook leaves first and arrives last: at every instant ``<experiment>.ipynb`` exists only beside its complete
  folder. A promotion interrupted by a kill is completed by the next runner (or ``scorecard`` command).
* ``scorecard.csv`` is rebuilt from the notebooks that are present (``<experiment>.ipynb`` and its folder), under a
  lock that promotions also take; an unreadable ``claims.csv`` is skipped with a message naming it. The front page's
  ``scorecard_summary.csv`` and ``study_map.png``/``.svg`` are rebuilt with it, even when there is no claim.
* A notebook whose cell raises loses its previous outputs (they no longer describe its source: no stale page) and
  its executed copy with the traceback is kept as ``_build/failed/<paper>/<experiment>.ipynb``, which its next
  successful run removes. A failure of anything else (the kernel did not start, a timeout) keeps the previous
  outputs; they stay out of date, so the next run executes the notebook again.

The locks rely on ``fcntl.flock`` (Linux, macOS), like the rest of the tooling, which assumes a POSIX system; they
exclude runners on one machine (a network file system may not honour them across machines).

The runner is split by concept; dependencies point one way (each module imports only those listed before it):

* :mod:`faithlab_study.runner.parameters`: notebooks, their parameters cells, profiles, ``-p`` overrides, merging;
* :mod:`faithlab_study.runner.stamps`: run keys and stamps (when outputs are current);
* :mod:`faithlab_study.runner.promotion`: staging folders, notebook locks, journaled promotion and recovery;
* :mod:`faithlab_study.runner.shards`: the shard plan and the shards' store;
* :mod:`faithlab_study.runner.execution`: one notebook's execution with papermill (the kernel's environment, its page);
* :mod:`faithlab_study.runner.scheduling`: :func:`run`, the executors (this process, local processes, a Dask cluster);
* :mod:`faithlab_study.runner.cli`: :func:`main`, the command line.

:mod:`faithlab_study.runner.cluster` (Dask clusters) serves them. The runner imports the book, never the reverse
(tests/project/test_study_layers.py): :mod:`faithlab_study.book.generated` (the generated folder's locks, the
outputs lock among them, and its one-line messages), :mod:`faithlab_study.book.notebook_page` (an executed notebook
made a page) and :mod:`faithlab_study.book.scorecard` (the scorecard, its summary and the study map, rebuilt after
each run and by ``scorecard``); their names are theirs, not re-exported here. :mod:`faithlab_study.book.pages`
serves the book's Sphinx extension. The ``paper-dry`` profile's fake data folder (``make paper-dry``) is written by
the tests' ``tests/support/paper_dry.py``. This package re-exports the runner's public names
(those of execution and scheduling on first use); :func:`faithlab_study.runner.stamps.library_hash` stays in its module
(patch it there).
"""

from faithlab_study.runner.cli import main
from faithlab_study.runner.parameters import (PROFILES, Notebook, StudyError, discover, load_profile, merge_parameters,
                                              notebooks_dir, parse_overrides, select)
from faithlab_study.runner.promotion import JOURNAL, STAGING, recover
from faithlab_study.runner.shards import SHARD_DONE, SHARD_SECONDS, SHARDS, shard_plan, shard_store
from faithlab_study.runner.stamps import STAMP, is_current, output_paths, run_key

__all__ = [  # by concept, in the order of the modules above (the API reference lists them in this order)
    "PROFILES", "StudyError", "Notebook", "notebooks_dir", "discover", "select", "load_profile", "parse_overrides",
    "merge_parameters",
    "STAMP", "run_key", "output_paths", "is_current",
    "STAGING", "JOURNAL", "recover",
    "SHARDS", "SHARD_DONE", "SHARD_SECONDS", "shard_plan", "shard_store",
    "KERNEL_STARTUP", "kernel_options", "Result", "execute",
    "run",
    "main",
]


# Lazy (PEP 562) for the names of execution and scheduling only: `python -m faithlab_study run ...` imports this
# package first and checks its arguments before torch is imported (tests/faithlab_study/runner/test_runner_usage.py). Importing
# faithlab_study.runner.execution takes about 1400 ms and .scheduling about 1200 ms (torch, pandas), against 37-72 ms
# for each module imported above (time.perf_counter around the import in a fresh interpreter, 2-core dev machine;
# python -X importtime shows the same split).
def __getattr__(name: str):
    if name in ("KERNEL_STARTUP", "Result", "execute", "kernel_options"):
        from faithlab_study.runner import execution

        return getattr(execution, name)
    if name == "run":
        from faithlab_study.runner.scheduling import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Sharded notebooks: the shard plan, the store of the shards' per-sample tables and what a shard executes.

A notebook that declares the parameters ``shard = None`` and ``n_shards = 1`` runs, with ``n_shards`` > 1, as that
many shards (each up to its last cell tagged ``shard``) and a reduce step (:func:`faithlab_study.runner.execution.execute`,
:func:`faithlab_study.artifacts.sharded`).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from faithlab_study.runner.parameters import Notebook, StudyError
from faithlab_study.runner.promotion import notebook_slug

SHARDS = ".shards"  # per-sample tables of sharded notebooks: <generated>/.shards/<slug>/<key[:16]>/<i>/<name>.csv
SHARD_DONE = ".done"  # in a shard's folder: the run key it was computed for (written last)
SHARD_SECONDS = ".seconds"  # in a shard's folder: how long its execution took (for the page's run time)


def shard_store(nb: Notebook, key: str, generated: Path) -> Path:
    """Folder of the shards computed for the reduce step's run ``key`` (one sub-folder per shard)."""
    return generated / SHARDS / notebook_slug(nb.paper, nb.experiment) / key[:16]


def remove_store(nb: Notebook, key: str, generated: Path) -> None:
    shutil.rmtree(shard_store(nb, key, generated), ignore_errors=True)
    with contextlib.suppress(OSError):
        (generated / SHARDS / notebook_slug(nb.paper, nb.experiment)).rmdir()
        (generated / SHARDS).rmdir()


def shard_plan(nb: Notebook, params: dict) -> int:
    """How many shards a notebook runs as: its ``n_shards`` parameter when it declares both ``shard`` and
    ``n_shards`` (else 1). Raises StudyError for an ``n_shards`` that is not a positive integer or a ``shard`` set
    by a profile or ``-p`` (the runner sets it)."""
    if not {"shard", "n_shards"} <= set(nb.defaults):
        return 1
    n = params["n_shards"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StudyError(f"{nb.name}: n_shards must be a positive integer, got {n!r}")
    if params["shard"] is not None:
        raise StudyError(f"{nb.name}: shard is set by the runner (give n_shards instead), got shard = "
                         f"{params['shard']!r}")
    return n


def shard_cells(notebook, source: Path):
    """The notebook cut after its last cell tagged ``shard`` (what a shard executes)."""
    tagged = [i for i, c in enumerate(notebook.cells) if "shard" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise StudyError(f"{source}: declares shard and n_shards but has no cell tagged 'shard' (the last cell "
                         "a shard executes)")
    notebook.cells = notebook.cells[:tagged[-1] + 1]
    return notebook


def shard_seconds(store: Path, n_shards: int) -> float:
    """The execution seconds the shards of a store recorded (a shard without a record counts 0)."""
    total = 0.0
    for i in range(n_shards):
        with contextlib.suppress(OSError, ValueError):
            total += float((store / str(i) / SHARD_SECONDS).read_text())
    return total

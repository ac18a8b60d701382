"""Executing one notebook: papermill into a staging folder under the notebook's lock, then its page and promotion.

The kernel inherits the run's environment: ``FAITHLAB_NOTEBOOK`` (the notebook's name), ``FAITHLAB_OUTPUT_DIR``
(its staging folder, which :func:`faithlab_study.artifacts.for_notebook` writes to), ``FAITHLAB_ROOT``, and for shards
``FAITHLAB_SHARDS``; the library's progress bars are off.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from faithlab import _progress, paths
from faithlab_study.artifacts import NOTEBOOK_ENV, OUTPUT_DIR_ENV, SHARDS_ENV
from faithlab_study.book import notebook_page
from faithlab_study.book.generated import LOCKS, locked, outputs_lock
from faithlab_study.runner.parameters import Notebook
from faithlab_study.runner.promotion import (
    JOURNAL,
    new_staging,
    notebook_lock,
    notebook_slug,
    promote,
    recover_notebook,
    remove,
)
from faithlab_study.runner.shards import (
    SHARD_DONE,
    SHARD_SECONDS,
    remove_store,
    shard_cells,
    shard_seconds,
    shard_store,
)
from faithlab_study.runner.stamps import STAMP, is_current, output_paths

# Run in each kernel before the notebook's first cell (IPython's exec_lines, hidden from the user namespace).
# tqdm.auto (imported by captum and huggingface_hub, hence by faithlab.explainers and timm) prints a notice the
# first time it is imported in a Jupyter kernel: "IProgress not found" without ipywidgets, "Using
# `tqdm.autonotebook.tqdm` in notebook mode" (TqdmExperimentalWarning) with them. Neither is about our results
# (faithlab never shows those libraries' progress bars, and a static page could not show a widget anyway), so the
# runner's kernels ignore exactly these two tqdm messages; every other warning still prints in the notebook.
KERNEL_STARTUP = (
    "import warnings as _fl_warnings, tqdm as _fl_tqdm; "
    "_fl_warnings.filterwarnings('ignore', category=_fl_tqdm.TqdmWarning, "
    "message=r'IProgress not found|Using `tqdm\\.autonotebook\\.tqdm` in notebook mode'); "
    "del _fl_warnings, _fl_tqdm"
)


def kernel_options() -> dict:
    """papermill/nbclient options for the kernels the runner starts.

    A kernel reached over TCP without transport encryption logs "[IPKernelApp] WARNING | Kernel is running over
    TCP without encryption" on every start. The kernel manager provisions CurveZMQ keys instead when pyzmq has
    Curve and the kernelspec declares it (ipykernel's does): the kernel's sockets are then encrypted and it has
    nothing to warn about, while any other kernel warning still reaches the runner's terminal. Only without Curve
    support does the runner fall back to keeping the kernel's log at errors.

    The kernel is stopped at once when its last cell is done (``shutdown_kernel="immediate"``): by then nbclient
    has every output (it waits for each cell's idle message), each cell has closed the files it wrote, and a
    kernel starts no child process; a graceful shutdown would make the runner wait 1–1.6 s per notebook while the
    kernel tears down torch, pandas and matplotlib. The kernels keep no input history (``HistoryManager``), so
    nothing is left half-written in ``~/.ipython`` and concurrent kernels do not share a history database.
    """
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    options: dict = {"extra_arguments": [f"--IPKernelApp.exec_lines={KERNEL_STARTUP}",
                                         "--HistoryManager.enabled=False"],
                     "shutdown_kernel": "immediate"}
    if zmq.has("curve") and KernelManager.class_traits().get("transport_encryption") is not None:
        options["config"] = Config({"KernelManager": {"transport_encryption": "auto"}})
    else:
        options["extra_arguments"].append("--IPKernelApp.log_level=ERROR")
    return options


# nbclient's message when the kernel process exits before it answers, and jupyter_client's when it does not answer
# within the start timeout: either way it ran no cell (jupyter_client's client.py).
KERNEL_DID_NOT_START = "Kernel died before replying to kernel_info"
KERNEL_DID_NOT_ANSWER = "Kernel didn't respond in"
KERNEL_START_TRIES = 3
KERNEL_START_TIMEOUT = 180  # s for a kernel to answer (papermill's default, 60, failed a loaded `make test` once)


def _papermill(source: Path, target: Path, params: dict, cwd: Path, timeout: int, echo, name: str) -> None:
    """papermill.execute_notebook with the runner's kernel, started again with new ports (at most
    ``KERNEL_START_TRIES`` times in all) when the kernel died before it answered or did not answer within
    ``KERNEL_START_TIMEOUT`` seconds, so before any cell ran.

    jupyter_client chooses a kernel's TCP ports by binding port 0 and releasing it; the kernel binds them a moment
    later. A kernel or server started at the same moment by another process can take one in between, and the new
    kernel exits with "ZMQError: Address already in use" (it happened once in a ``make test`` run, where both test
    workers start kernels). On a loaded machine (both test workers running notebooks, a browser beside them) a kernel
    once took longer than papermill's 60 s to answer. Nothing had run, so a new kernel on new ports is the same
    execution. Any other failure, and these on the last try, is raised."""
    import papermill

    for attempt in range(1, KERNEL_START_TRIES + 1):
        try:
            papermill.execute_notebook(str(source), str(target), parameters=params, kernel_name="python3",
                                       language="python", cwd=str(cwd), execution_timeout=timeout,
                                       progress_bar=False, log_output=False, start_timeout=KERNEL_START_TIMEOUT,
                                       **kernel_options())
            return
        except Exception as exc:  # noqa: BLE001 - nbclient raises a bare RuntimeError for a kernel that died
            died, silent = KERNEL_DID_NOT_START in str(exc), KERNEL_DID_NOT_ANSWER in str(exc)
            if not (died or silent) or attempt == KERNEL_START_TRIES:
                raise
            what = "died before it started" if died else f"did not answer within {KERNEL_START_TIMEOUT} s"
            echo(f"{name}: its kernel {what} (try {attempt} of {KERNEL_START_TRIES}); starting another")


@dataclass
class Result:
    name: str
    status: str  # "ran", "cached", "failed"
    seconds: float = 0.0
    message: str = ""
    cell_error: bool = False  # failed because a cell raised (not a kernel or time-out problem)


def execute(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int, echo=print, *,
            shard: int | None = None, n_shards: int = 1, profile: str | None = None) -> Result:
    """Execute one notebook with papermill into its own staging folder; move outputs into place only on success.

    Holds the notebook's lock throughout (see the module docstring); when another runner held it, the notebook is
    not executed again if that runner left it current for ``key``.

    Sharded notebooks (``n_shards`` > 1, see :func:`shard_plan`): with ``shard=i`` this executes shard i only — the
    notebook with parameter ``shard = i``, up to its last cell tagged ``shard`` — whose per-sample tables go to the
    shard store of ``key`` (nothing is promoted; a shard already stored for ``key`` is not executed again); with
    ``shard=None`` it is the reduce step: the whole notebook with ``shard = None``, whose
    :func:`faithlab_study.artifacts.sharded` calls read the stored shards, promoted like any run. ``key`` is the reduce
    step's run key in both cases.

    A successful execution's notebook is made a page of the book before it is promoted
    (``faithlab_study.book.notebook_page.finish``: one parameters cell headed with ``profile``, the chapter link
    and the run time, its stderr moved to ``<experiment>/stderr.log`` and reported with ``echo``).
    """
    from faithlab_study.runner import cluster

    with cluster.EXECUTION_LOCK:
        if shard is not None:
            return _execute_shard(nb, params, key, root, generated, timeout, shard, n_shards)
        start = time.monotonic()
        slug = notebook_slug(nb.paper, nb.experiment)

        def waiting():
            echo(f"[waiting] {nb.name}: another runner is executing it; waiting for it to finish")

        with locked(notebook_lock(generated, slug), on_wait=waiting) as state:
            recover_notebook(slug, generated, echo)
            if state == "waited" and is_current(nb, key, generated, echo):
                return Result(nb.name, "cached", time.monotonic() - start, "executed by another runner meanwhile")
            store = shard_store(nb, key, generated) if n_shards > 1 else None
            result = _execute_locked(nb, params, key, root, generated, timeout, start, shards=store,
                                     page={"profile": profile, "echo": echo, "n_shards": n_shards})
            if store is not None and result.status == "ran":
                remove_store(nb, key, generated)
            return result


def _execute_shard(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int, shard: int,
                   n_shards: int) -> Result:
    """Execute shard ``shard`` of ``n_shards`` into the shard store of ``key`` (see :func:`execute`)."""
    start = time.monotonic()
    name = f"{nb.name} [shard {shard + 1}/{n_shards}]"
    store = shard_store(nb, key, generated)
    folder = store / str(shard)
    lock = generated / LOCKS / f"{notebook_slug(nb.paper, nb.experiment)}--{key[:16]}--shard-{shard}.lock"
    with locked(lock):
        done = folder / SHARD_DONE
        if done.is_file() and done.read_text().strip() == key:
            return Result(name, "cached", time.monotonic() - start, "shard already computed")
        shutil.rmtree(folder, ignore_errors=True)
        result = _execute_locked(nb, {**params, "shard": shard}, key, root, generated, timeout, start,
                                 shards=store, shard=shard)
        result.name = name
        if result.status == "ran":
            paths.atomic_write(folder / SHARD_SECONDS, lambda tmp: tmp.write_text(f"{result.seconds:.3f}"))
            paths.atomic_write(done, lambda tmp: tmp.write_text(key))
        return result



def _execute_locked(nb: Notebook, params: dict, key: str, root: Path, generated: Path, timeout: int,
                    start: float, shards: Path | None = None, shard: int | None = None,
                    page: dict | None = None) -> Result:
    """Execute with papermill into a staging folder and, unless a shard, finish the page and promote it. page: the
    options of ``faithlab_study.book.notebook_page.finish`` (``profile``, ``echo``, ``n_shards``)."""
    import jupytext
    import nbformat
    from papermill.exceptions import PapermillExecutionError

    ipynb, folder = output_paths(nb, generated)
    if shard is None:
        staging = new_staging(generated, notebook_slug(nb.paper, nb.experiment), nb.experiment)
        failed = root / "_build" / "failed" / nb.paper / f"{nb.experiment}.ipynb"
    else:  # a shard's outputs are discarded but for its tables in the store: it stages beside them
        staging = shards / f"staging-{shard}-{uuid.uuid4().hex[:8]}"
        (staging / nb.experiment).mkdir(parents=True)
        failed = root / "_build" / "failed" / nb.paper / f"{nb.experiment}--shard-{shard}.ipynb"
    staged_folder = staging / nb.experiment
    source_ipynb = staging / "source.ipynb"
    staged_ipynb = staging / f"{nb.experiment}.ipynb"
    try:
        source_nb = jupytext.read(nb.source, fmt="py:percent")
        if shard is not None:
            source_nb = shard_cells(source_nb, nb.source)
        source_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        source_nb.metadata.setdefault("language_info", {"name": "python"})
        nbformat.write(source_nb, source_ipynb)

        env_backup = {k: os.environ.get(k) for k in (OUTPUT_DIR_ENV, NOTEBOOK_ENV, "FAITHLAB_ROOT",
                                                     SHARDS_ENV, _progress.ENV)}
        # The notebook's name and staging folder, which its faithlab_study.artifacts.for_notebook() reads.
        os.environ.update({OUTPUT_DIR_ENV: str(staged_folder), NOTEBOOK_ENV: nb.name, "FAITHLAB_ROOT": str(root)})
        # The library's progress bars off (progress=None reads it): in a page of the book they are stderr noise.
        os.environ[_progress.ENV] = "0"
        if shards is not None:
            os.environ[SHARDS_ENV] = str(shards)
        else:
            os.environ.pop(SHARDS_ENV, None)
        os.environ.setdefault("MPLBACKEND", "Agg")
        ran_from = time.monotonic()
        try:
            _papermill(source_ipynb, staged_ipynb, params, root, timeout, (page or {}).get("echo") or print, nb.name)
        except Exception as exc:  # noqa: BLE001 - papermill raises PapermillExecutionError with the cell's traceback
            failed.parent.mkdir(parents=True, exist_ok=True)
            if staged_ipynb.is_file():
                shutil.copyfile(staged_ipynb, failed)
                where = f"traceback in {failed}"
            else:
                failed.unlink(missing_ok=True)  # an older traceback would be taken for this failure's
                where = "the notebook did not start (see the message above)"
            cell_error = isinstance(exc, PapermillExecutionError)
            if cell_error and shard is None:
                # No stale page: the notebook itself failed, so its previous outputs no longer describe its source.
                # We hold its lock, so they are this notebook's outputs, which this run was to replace; the .ipynb
                # goes first (an .ipynb never stands beside an incomplete folder).
                with locked(outputs_lock(generated)):
                    remove(ipynb)
                    remove(folder)
            elif cell_error:
                where += "; its previous outputs are removed once the other shards are done"
            else:
                # The kernel did not start or died, a cell timed out: nothing says the previous outputs are wrong
                # for good. They are kept (their stamp does not match, so the next run executes the notebook again).
                where += "; its previous outputs are kept"
            return Result(nb.name, "failed", time.monotonic() - start, f"{_last_line(exc)}\n    {where}",
                          cell_error=cell_error)
        finally:
            for k, v in env_backup.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

        if shard is not None:  # its tables are in the store already (faithlab_study.artifacts.sharded wrote them)
            failed.unlink(missing_ok=True)
            return Result(nb.name, "ran", time.monotonic() - start)
        page = page or {}
        n_shards = page.get("n_shards", 1)
        seconds = time.monotonic() - ran_from + (shard_seconds(shards, n_shards) if shards is not None else 0.0)
        notebook_page.finish(staged_ipynb, name=nb.name, params=params, profile=page.get("profile"), seconds=seconds,
                             root=root, generated=generated, log_folder=staged_folder,
                             final_log=folder / notebook_page.STDERR_LOG, shards=n_shards if n_shards > 1 else 0,
                             echo=page.get("echo") or print)
        (staged_folder / STAMP).write_text(json.dumps({"key": key, "params": params}, sort_keys=True, default=str))
        promote(nb, key, staging, generated)
        failed.unlink(missing_ok=True)  # an old traceback no longer describes this notebook
        return Result(nb.name, "ran", time.monotonic() - start)
    finally:
        # Only this run uses this folder. It is kept when a promotion was interrupted (by an exception such as
        # KeyboardInterrupt; a kill runs no code at all): the next holder of the lock finishes the journaled
        # promotion from it, then deletes it (recover_notebook).
        if shard is not None or not (generated / JOURNAL / f"{notebook_slug(nb.paper, nb.experiment)}.json").exists():
            shutil.rmtree(staging, ignore_errors=True)


def _last_line(exc: BaseException) -> str:
    """Last non-empty line of an exception's message (papermill puts the error itself last)."""
    summary = str(exc).strip().splitlines()
    return next((line for line in reversed(summary) if line.strip()), type(exc).__name__)


def execute_job(args, kwargs=None) -> Result:
    return execute(*args, **(kwargs or {}))

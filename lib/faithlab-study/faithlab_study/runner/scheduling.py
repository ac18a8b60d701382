"""Scheduling the study: :func:`run` selects the notebooks, skips the current ones and executes the others (this
process, ``-j`` local processes or a Dask cluster), shards before their reduce step, then rebuilds the scorecard.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

from faithlab import paths
from faithlab_study.book.generated import first_line, locked, outputs_lock
from faithlab_study.book.scorecard import write_scorecard
from faithlab_study.runner import stamps
from faithlab_study.runner.execution import Result, execute, execute_job
from faithlab_study.runner.parameters import (
    Notebook,
    StudyError,
    check_overrides,
    check_profile_notebooks,
    discover,
    load_profile,
    merge_parameters,
    select,
)
from faithlab_study.runner.promotion import notebook_lock, notebook_slug, recover, remove, tidy
from faithlab_study.runner.shards import shard_plan
from faithlab_study.runner.stamps import is_current, output_paths, run_key


@dataclass
class _Plan:
    """One notebook to execute: its shard jobs (none when unsharded) and the job that executes and promotes it."""

    nb: Notebook
    args: tuple  # (nb, params, key, root, generated, timeout) of the final execution
    n_shards: int = 1
    shards_left: set = field(default_factory=set)
    shard_failure: Result | None = None
    shard_seconds: float = 0.0
    profile: str | None = None


class _Inline:
    """Executes each job as it is submitted, in this process (``-j 1`` without a cluster)."""

    def __init__(self, echo):
        self.echo = echo
        self.started = 0

    def submit(self, label: str, total: int, args: tuple, kwargs: dict) -> futures.Future:
        self.started += 1
        self.echo(f"[{self.started}/{total}] {label} ...")
        future: futures.Future = futures.Future()
        try:
            future.set_result(execute(*args, echo=self.echo, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - reported as the notebook's failure below
            future.set_exception(exc)
        return future

    @staticmethod
    def wait(pending):
        return set(pending)


class _Pool:
    """Local worker processes (``-j N``)."""

    def __init__(self, jobs: int):
        import multiprocessing

        self.pool = futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, label, total, args, kwargs):
        return self.pool.submit(execute_job, args, kwargs)

    @staticmethod
    def wait(pending):
        return futures.wait(pending, return_when=futures.FIRST_COMPLETED).done


class _Dask:
    """A Dask distributed cluster (``--cluster``): each job is a task that needs one ``notebook`` resource. A task
    whose worker dies is given to another worker by the scheduler, i.e. its notebook is executed again."""

    def __init__(self, connection):
        self.connection = connection

    def submit(self, label, total, args, kwargs):
        from faithlab_study.runner import cluster

        resources = {cluster.RESOURCE: 1} if self.connection.uses_resources else None
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")
        return self.connection.client.submit(execute_job, args, kwargs, pure=False, resources=resources,
                                             key=f"faithlab-{slug}-{uuid.uuid4().hex[:8]}")

    @staticmethod
    def wait(pending):
        import distributed

        return set(distributed.wait(list(pending), return_when="FIRST_COMPLETED").done)


def _outcome(future, label: str, start: float) -> Result:
    """A job's Result, or a failed Result when the job itself raised (e.g. a cluster gave up on a task whose workers
    kept dying)."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001
        return Result(label, "failed", time.monotonic() - start, f"{type(exc).__name__}: {first_line(exc)}")


def _drop_outputs(nb: Notebook, generated: Path) -> None:
    """Remove a notebook's outputs (a shard's cell failed: they no longer describe its source), under its lock."""
    ipynb, folder = output_paths(nb, generated)
    with locked(notebook_lock(generated, notebook_slug(nb.paper, nb.experiment))), locked(outputs_lock(generated)):
        remove(ipynb)
        remove(folder)


def _schedule(plans: list[_Plan], executor, echo) -> list[Result]:
    """Run every plan's shards, then (when all succeeded) its final execution; one Result per notebook."""
    total = sum(p.n_shards + (p.n_shards > 1) for p in plans)
    pending: dict = {}  # future -> (plan, shard index or None, start)
    results: list[Result] = []
    done = 0

    def submit(plan: _Plan, shard: int | None) -> None:
        kwargs = {"n_shards": plan.n_shards} if plan.n_shards > 1 else {}
        kwargs["profile"] = plan.profile
        label = plan.nb.name
        if shard is not None:
            kwargs["shard"] = shard
            label = f"{label} [shard {shard + 1}/{plan.n_shards}]"
        elif plan.n_shards > 1:
            label = f"{label} [reduce of {plan.n_shards} shards]"
        pending[executor.submit(label, total, plan.args, kwargs)] = (plan, shard, time.monotonic(), label)

    for plan in plans:
        if plan.n_shards > 1:
            plan.shards_left = set(range(plan.n_shards))
            for i in range(plan.n_shards):
                submit(plan, i)
        else:
            submit(plan, None)
    while pending:
        for future in executor.wait(pending):
            plan, shard, start, label = pending.pop(future)
            result = _outcome(future, label, start)
            done += 1
            if shard is None:
                if plan.n_shards > 1:
                    result.name = plan.nb.name
                    result.seconds += plan.shard_seconds
                    result.message = (result.message + "; " if result.message else "") + f"{plan.n_shards} shards"
                results.append(_report(result, done, total, echo))
                continue
            _report(result, done, total, echo)
            plan.shards_left.discard(shard)
            plan.shard_seconds += result.seconds
            if result.status == "failed" and plan.shard_failure is None:
                plan.shard_failure = result
            if plan.shards_left:
                continue
            if plan.shard_failure is None:
                submit(plan, None)
                continue
            failure = plan.shard_failure
            if failure.cell_error:
                _drop_outputs(plan.nb, plan.args[4])
            results.append(Result(plan.nb.name, "failed", plan.shard_seconds, failure.message, failure.cell_error))
            echo(f"FAILED {plan.nb.name}: {failure.name} failed, the notebook was not reduced")
    return results


def run(
    selectors: list[str] | None = None,
    profile: str = "book",
    overrides: dict | None = None,
    jobs: int = 1,
    force: bool = False,
    timeout: int = 3600,
    root: Path | None = None,
    generated: Path | None = None,
    echo=print,
    cluster=None,
) -> list[Result]:
    """Execute the selected notebooks (all by default) with a profile; return one Result per notebook.

    cluster: None (this machine: ``jobs`` processes), a :class:`faithlab_study.runner.cluster.Connection`, or a
    ``--cluster`` value (an address, ``local[:N]``, ``slurm``, ``pbs``, ``sge``, ``lsf``; ``jobs`` is then the
    number of local workers or batch jobs). Notebooks that declare ``shard``/``n_shards`` with ``n_shards`` > 1 run
    as that many shards and a reduce step (:func:`execute`), here or on the cluster.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise StudyError(f"timeout must be a positive number of seconds (allowed per cell), got {timeout!r}")
    root = Path(root or paths.project_root()).resolve()
    generated = Path(generated or paths.generated_dir()).resolve()
    overrides = overrides or {}
    every = discover(root)
    notebooks = select(every, selectors or [])
    check_overrides(notebooks, overrides)
    spec = load_profile(profile, root)
    check_profile_notebooks(profile, spec, every)
    rank = {name: i for i, name in enumerate(spec["start_first"])}
    notebooks.sort(key=lambda nb: (rank.get(nb.name, len(rank)), nb.name))
    lib_hash = stamps.library_hash()  # looked up on the module: tests replace it there
    recover(generated, echo)  # before the stamps are read: a half-promoted notebook may become current

    results: list[Result] = []
    plans = []
    for nb in notebooks:
        params = merge_parameters(nb, profile, spec, overrides)
        n_shards = shard_plan(nb, params)
        key = run_key(nb, params, lib_hash, root)
        if not force and is_current(nb, key, generated, echo):
            results.append(Result(nb.name, "cached"))
            echo(f"[cached] {nb.name}")
        else:
            plans.append(_Plan(nb, (nb, params, key, root, generated, timeout), n_shards, profile=profile))

    if plans:
        shards = sum(p.n_shards for p in plans if p.n_shards > 1)
        where = f"on the cluster {cluster}" if isinstance(cluster, str) else (
            "on the cluster" if cluster is not None else f"({jobs} in parallel)")
        echo(f"executing {len(plans)} notebook(s) with profile {profile!r} {where}"
             + (f", {shards} shard(s)" if shards else ""))
        results += _run_plans(plans, jobs, cluster, spec, root, generated, echo)
    # Never remove other runners' staging folders (a shared rmtree here once made a concurrent runner fail and
    # delete good outputs): each execution removes its own, and .staging goes only when empty.
    tidy(generated)
    write_scorecard(generated, echo=echo)
    return results


def _run_plans(plans: list[_Plan], jobs: int, cluster, spec: dict, root: Path, generated: Path, echo) -> list[Result]:
    """Choose the executor (cluster, local processes or this process) and schedule the plans on it."""
    from faithlab_study.runner import cluster as clusters

    if cluster is not None:
        if isinstance(cluster, str):
            try:
                connection = clusters.connect(cluster, workers=jobs, resources=spec.get("cluster"), root=root,
                                              environment={"FAITHLAB_GENERATED": str(generated)}, echo=echo)
            except clusters.ClusterError as exc:
                raise StudyError(str(exc)) from None
            with connection:
                return _schedule(plans, _Dask(connection), echo)
        return _schedule(plans, _Dask(cluster), echo)
    total = sum(p.n_shards + (p.n_shards > 1) for p in plans)
    if jobs > 1 and total > 1:
        # Parallel notebooks share the cores: one kernel's torch threads must not oversubscribe the others'.
        threads = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = clusters.local_threads(jobs, echo)
        pool = _Pool(jobs)
        try:
            return _schedule(plans, pool, echo)
        finally:
            pool.pool.shutdown()
            if threads is None:
                os.environ.pop("OMP_NUM_THREADS")
            else:
                os.environ["OMP_NUM_THREADS"] = threads
    return _schedule(plans, _Inline(echo), echo)


def _report(result: Result, done: int, total: int, echo) -> Result:
    if result.status == "failed":
        echo(f"[{done}/{total}] FAILED {result.name} after {result.seconds:.1f} s: {result.message}")
    elif result.status == "cached":
        echo(f"[{done}/{total}] up to date {result.name}: {result.message}")
    else:
        echo(f"[{done}/{total}] done {result.name} in {result.seconds:.1f} s")
    return result

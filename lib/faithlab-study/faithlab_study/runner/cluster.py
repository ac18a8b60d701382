"""Hand the study's notebook executions to a Dask distributed cluster (``run --cluster ...``).

Three ways to get one:

* ``--cluster tcp://host:8786`` (any address ``distributed.Client`` accepts, or a scheduler file ending in
  ``.json``): workers someone already started. Start them with ``--resources notebook=1`` so that each runs one
  notebook at a time; workers without that resource get notebooks one after the other anyway (the runner
  serialises executions inside a worker process), but the scheduler may queue several on one worker. The address
  is checked before anything else (:func:`check`: a missing port or a host name that does not resolve is an error at
  once); a scheduler that does not answer is given up after ``FAITHLAB_CLUSTER_TIMEOUT`` seconds (default 5).
* ``--cluster local`` or ``local:N``: a ``distributed.LocalCluster`` of N worker processes on this machine
  (loopback only; N defaults to ``-j``), to try the cluster path on one machine.
* ``--cluster slurm`` (or ``pbs``, ``sge``, ``lsf``): ``dask-jobqueue`` submits ``-j`` batch jobs, each one
  worker that runs one notebook at a time, with the resources of the profile's ``cluster:`` section::

      cluster:
        cores: 8            # CPU cores per job (OMP_NUM_THREADS of the notebooks)
        memory: 64GB        # memory per job
        walltime: "12:00:00"
        gpus: 1             # GPUs per job, i.e. per notebook
        queue: gpu          # optional: queue / partition, account, extra directives, prologue lines
        account: my-project
        job_extra_directives: ["--constraint=a100"]
        job_script_prologue: ["module load cuda"]

The workers must see the repository and the generated folder at the same paths as the runner (a shared file
system): the runner keeps its locks, stamps and promotions there. Tasks travel to the workers with Dask's own
serialisation (the runner's own cluster; nothing is read back from data files that way).
"""

from __future__ import annotations

import importlib
import logging
import os
import shlex
import shutil
import socket
import threading
import time
from pathlib import Path

RESOURCE = "notebook"  # the worker resource one notebook execution takes
SYSTEMS = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster", "lsf": "LSFCluster"}
SUBMIT = {"slurm": "sbatch", "pbs": "qsub", "sge": "qsub", "lsf": "bsub"}  # each batch system's submit command
SUBMIT_TIMEOUT = 60  # seconds for the batch system's submit command to answer for every job (it takes about one)
CONNECT_TIMEOUT = 5  # seconds to reach a running scheduler (an address or a scheduler file) before giving up
TIMEOUT_ENV = "FAITHLAB_CLUSTER_TIMEOUT"  # overrides CONNECT_TIMEOUT (seconds, also for resolving the host name)
ADDRESS_SCHEMES = ("tcp", "tls", "ws", "wss")  # schemes whose address is host:port, checked before connecting
RESOURCE_KEYS = {"cores", "memory", "walltime", "gpus", "queue", "account", "job_extra_directives",
                 "job_script_prologue", "interface", "local_directory", "log_directory", "python",
                 "dashboard_address"}

# import name -> distribution of the study's "cluster" extra (lib/faithlab-study/pyproject.toml), which installs both
CLUSTER_EXTRA = {"distributed": "distributed", "dask_jobqueue": "dask-jobqueue"}

# One notebook execution at a time per worker process: an execution sets the environment variables its kernel
# inherits (output folder, notebook name), which threads of one process would otherwise overwrite.
EXECUTION_LOCK = threading.Lock()


class ClusterError(ValueError):
    """A --cluster value or a profile's ``cluster:`` section that cannot be used."""


def check_resources(resources: dict | None, where: str = "cluster") -> dict:
    """The profile's ``cluster:`` section, checked: known keys, positive cores/gpus, lists of strings."""
    resources = dict(resources or {})
    unknown = set(resources) - RESOURCE_KEYS
    if unknown:
        raise ClusterError(f"{where}: unknown keys {sorted(map(str, unknown))} (known: {sorted(RESOURCE_KEYS)})")
    for key in ("cores", "gpus"):
        value = resources.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < (key == "cores")):
            raise ClusterError(f"{where}: {key} must be a {'positive' if key == 'cores' else 'non-negative'} "
                               f"integer, got {value!r}")
    for key in ("job_extra_directives", "job_script_prologue"):
        value = resources.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ClusterError(f"{where}: {key} must be a list of strings, got {value!r}")
    return resources


def _job_resources(system: str, cores: int, gpus: int, memory: str | None, account: str | None) -> dict:
    """Keyword arguments of the ``dask_jobqueue`` cluster that ask the batch system for ``cores`` CPU cores and
    ``gpus`` GPUs per job, in each system's usual spelling (SGE has no standard for cores: give a parallel
    environment in ``job_extra_directives``, e.g. ``-pe smp 8``)."""
    if system == "slurm":
        return {"job_cpu": cores, "account": account,
                "job_extra_directives": [f"--gres=gpu:{gpus}"] if gpus else []}
    if system == "pbs":
        spec = f"select=1:ncpus={cores}" + (f":ngpus={gpus}" if gpus else "") + (f":mem={memory}" if memory else "")
        return {"resource_spec": spec, "account": account, "job_extra_directives": []}
    if system == "sge":
        return {"project": account, "job_extra_directives": [f"-l gpu={gpus}"] if gpus else []}
    return {"ncpus": cores, "project": account,  # lsf
            "job_extra_directives": [f'-gpu "num={gpus}"'] if gpus else []}


def jobqueue_cluster(system: str, resources: dict | None, *, root: Path, environment: dict | None = None):
    """A ``dask_jobqueue`` cluster whose jobs are one single-threaded worker each (one notebook at a time).

    system: slurm, pbs, sge or lsf. resources: the profile's ``cluster:`` section (see the module docstring).
    root: the repository, where each job starts (``cd``) and which it exports as ``FAITHLAB_ROOT``.
    environment: more variables each job exports (e.g. ``FAITHLAB_GENERATED``). No job is submitted until the
    cluster is scaled.
    """
    if system not in SYSTEMS:
        raise ClusterError(f"--cluster: unknown batch system {system!r} (known: {sorted(SYSTEMS)})")
    dask_jobqueue = require("dask_jobqueue", f"--cluster {system}")

    resources = check_resources(resources)
    cores = resources.get("cores", 1)
    memory = resources.get("memory")
    gpus = resources.get("gpus", 0)
    env = {"FAITHLAB_ROOT": str(root), "OMP_NUM_THREADS": str(cores), **(environment or {})}
    prologue = [f"cd {shlex.quote(str(root))}", *(f"export {k}={shlex.quote(str(v))}" for k, v in env.items()),
                *resources.get("job_script_prologue", [])]
    extra = _job_resources(system, cores, gpus, memory, resources.get("account"))
    options = dict(
        # One single-threaded worker per job (Dask's "cores"): one notebook per job at a time, which gets the
        # job's cores (asked of the batch system above) through OMP_NUM_THREADS.
        cores=1, processes=1, memory=memory or "4GB", walltime=resources.get("walltime"),
        queue=resources.get("queue"), job_script_prologue=prologue,
        job_extra_directives=[*extra.pop("job_extra_directives"), *resources.get("job_extra_directives", [])],
        worker_extra_args=["--resources", f"{RESOURCE}=1"],
        interface=resources.get("interface"), local_directory=resources.get("local_directory"),
        log_directory=resources.get("log_directory"), python=resources.get("python"),
        # the scheduler's dashboard on a free port unless the profile names one (its link is printed)
        scheduler_options={"dashboard_address": resources.get("dashboard_address", ":0")},
        **extra,
    )
    options = {k: v for k, v in options.items() if v is not None}
    return getattr(dask_jobqueue, SYSTEMS[system])(**options)


class Connection:
    """A ``distributed.Client`` to the cluster ``--cluster`` named, and whatever must be closed with it."""

    def __init__(self, client, closers=(), uses_resources: bool = True):
        self.client = client
        self._closers = list(closers)
        self.uses_resources = uses_resources

    def close(self) -> None:
        self.client.close()
        for close in self._closers:
            close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _restore_environment(saved: dict):
    def restore() -> None:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)
    return restore


def cores() -> int:
    """The CPU cores this process may run on (its affinity mask, which containers and batch jobs restrict; not the
    host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity call on this platform
        return max(1, os.cpu_count() or 1)


def local_threads(jobs: int, echo=print) -> str:
    """OMP_NUM_THREADS for each of ``jobs`` kernels running at once on this machine: the cores shared out
    (at least 1), or the caller's OMP_NUM_THREADS when it is smaller. A larger value is cut to the share with a
    message: torch's OpenMP threads spin while they wait, so kernels that ask for more threads than the machine
    has slow each other down many times over (4 threads per kernel, 2 kernels on 2 cores: the smoke notebooks take
    about 6x as long)."""
    share = max(1, cores() // max(1, jobs))
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    if asked.isdigit() and int(asked) > 0:
        if int(asked) <= share:
            return asked
        echo(f"OMP_NUM_THREADS={asked} with {jobs} notebooks at a time on {cores()} cores: each kernel gets {share} "
             "thread(s)")
    return str(share)


class _SubmitErrors(logging.Filter):
    """Catches dask-jobqueue's submit failures. It submits the jobs in the background; when the submit command fails
    (a wrong account, queue or walltime) the error is only logged, as tracebacks, and the cluster then waits for its
    workers for ever. This filter keeps those records (for :func:`_check_submitted`'s one-line error) off the
    terminal."""

    LOGGERS = ("asyncio", "tornado.application", "distributed")
    _installed: _SubmitErrors | None = None

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    @classmethod
    def install(cls) -> _SubmitErrors:
        if cls._installed is None:
            cls._installed = cls()
            for name in cls.LOGGERS:
                logging.getLogger(name).addFilter(cls._installed)
        cls._installed.messages.clear()
        return cls._installed

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        text = str(exc) if exc is not None else record.getMessage()
        if "Command exited with non-zero exit code" not in text:
            return True
        stderr = text.partition("stderr:")[2].strip()
        self.messages.append(stderr.splitlines()[0] if stderr else text.splitlines()[0])
        return False


def _check_submitted(batch, cluster: str, jobs: int, refused: _SubmitErrors) -> None:
    """Wait (at most ``SUBMIT_TIMEOUT`` s) until the submit command has answered for every job; raise ClusterError
    with its message if it refused one, rather than let the run wait for workers that will never come."""
    deadline = time.monotonic() + SUBMIT_TIMEOUT
    while len(batch.workers) < jobs and time.monotonic() < deadline:  # filled once every submission has answered
        time.sleep(0.05)
    failed = [name for name, job in batch.workers.items() if getattr(job, "job_id", None) is None]
    if failed or len(batch.workers) < jobs:
        time.sleep(0.2)  # let the background task log its error
        for name in failed:  # jobs never submitted: nothing to cancel (close() would refuse their state)
            batch.workers.pop(name, None)
            batch.worker_spec.pop(name, None)
        try:
            batch.close()
        except Exception:  # noqa: BLE001 - the error below is the one to report; the process ends anyway
            pass
        why = refused.messages[0] if refused.messages else (
            f"no answer within {SUBMIT_TIMEOUT} s" if len(batch.workers) < jobs else "no job id returned")
        raise ClusterError(f"--cluster {cluster!r}: {SUBMIT[cluster]} refused the job script ({why}); check the "
                           f"profile's cluster: section (queue, account, walltime)")


def connect_timeout() -> float:
    """Seconds allowed to resolve a scheduler's host name and then to connect to it: ``FAITHLAB_CLUSTER_TIMEOUT``
    when set (a positive number), else ``CONNECT_TIMEOUT``."""
    given = os.environ.get(TIMEOUT_ENV, "").strip()
    if not given:
        return CONNECT_TIMEOUT
    try:
        seconds = float(given)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise ClusterError(f"{TIMEOUT_ENV} must be a positive number of seconds (to reach a --cluster scheduler), "
                           f"got {given!r}")
    return seconds


def message(module: str, what: str) -> str:
    """The sentence a missing ``module`` of the cluster extra gives: what needs it and the command that installs it."""
    return f"{what} needs {CLUSTER_EXTRA[module]}: pip install 'faithlab-study[cluster]'"


def require(module: str, what: str):
    """Import ``module`` (a key of :data:`CLUSTER_EXTRA`) for ``what``, or raise ModuleNotFoundError saying which extra
    installs it; a missing dependency of an installed package re-raises unchanged."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.partition(".")[0] != module:
            raise
        raise ModuleNotFoundError(message(module, what), name=module) from err


def _installed(module: str, what: str) -> None:
    """Raise ClusterError (one line, with the extra that installs it) when ``module`` is not installed; nothing is
    imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ClusterError(message(module, what))


def _host_port(cluster: str) -> tuple[str, int] | None:
    """(host, port) of a scheduler address whose scheme is one of ``ADDRESS_SCHEMES`` or none (tcp), read as
    ``distributed`` reads it; None for another scheme or an empty host (left to ``distributed``). Raises ClusterError
    for an address without a port number or whose port is not one."""
    scheme, sep, location = cluster.rpartition("://")
    if sep and scheme not in ADDRESS_SCHEMES:
        return None
    what = f"--cluster {cluster!r}: not a scheduler address (host:port), 'local[:N]' or one of {sorted(SYSTEMS)}"
    if location.startswith("["):  # IPv6: [addr]:port
        host, bracket, tail = location[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise ClusterError(f"{what} (cannot read it as [IPv6 address]:port)")
        port = tail[1:] if tail else None
    else:
        host, colon, port = location.rpartition(":")
        if not colon:
            host, port = location, None
        elif ":" in host:
            raise ClusterError(f"{what} (an IPv6 address needs brackets, like [::1]:8786)")
    if port is None:
        raise ClusterError(f"{what} (missing port number in address {cluster!r})")
    if not (port.isdigit() and 0 < int(port) < 65536):
        raise ClusterError(f"{what} (port {port!r} is not a number from 1 to 65535)")
    return (host, int(port)) if host else None


def _resolve(cluster: str, host: str, port: int, timeout: float) -> None:
    """Raise ClusterError, within ``timeout`` seconds, when ``host`` has no address: an unknown name fails at once
    instead of after distributed's connection timeout (it retries a failed look-up until then), and a resolver that
    does not answer cannot hold the run longer than ``timeout``."""
    outcome: list = []

    def look_up() -> None:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            outcome.append(None)
        except (OSError, UnicodeError) as exc:  # socket.gaierror, or a name IDNA cannot encode
            outcome.append(exc)

    worker = threading.Thread(target=look_up, name="faithlab-resolve", daemon=True)  # getaddrinfo has no timeout
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise ClusterError(f"--cluster {cluster!r}: the host name {host!r} was not resolved within {timeout:g} s "
                           f"(set {TIMEOUT_ENV} to wait longer)")
    if outcome[0] is not None:
        why = getattr(outcome[0], "strerror", None) or str(outcome[0]) or type(outcome[0]).__name__
        raise ClusterError(f"--cluster {cluster!r}: cannot resolve the host name {host!r} ({why})")


def check(cluster: str) -> None:
    """Check a ``--cluster`` value without importing distributed or contacting a scheduler: raise ClusterError (one
    line naming --cluster and the value) for an empty value, a bad ``local:N``, a batch system whose submit command
    is not on PATH, a scheduler file that does not exist, an address without a port, a host name that does not
    resolve (within :func:`connect_timeout`), or when the packages it needs are not installed."""
    if not isinstance(cluster, str) or not cluster:
        raise ClusterError(f"--cluster must be an address, 'local[:N]' or one of {sorted(SYSTEMS)}, got {cluster!r}")
    timeout = connect_timeout()
    if cluster == "local" or cluster.startswith("local:"):
        count = cluster.partition(":")[2]
        if count and not (count.isdigit() and int(count) > 0):
            raise ClusterError(f"--cluster {cluster!r}: the number of local workers must be a positive integer")
    elif cluster in SYSTEMS:
        # dask-jobqueue would start its scheduler, fail to submit in the background and wait for workers forever
        if shutil.which(SUBMIT[cluster]) is None:
            raise ClusterError(f"--cluster {cluster!r}: {SUBMIT[cluster]!r} is not on PATH (run from a machine that "
                               f"can submit {cluster} jobs)")
        _installed("dask_jobqueue", f"--cluster {cluster}")
    elif cluster.endswith(".json"):
        # distributed waits, silently and for ever, for a scheduler file to appear
        if not Path(cluster).is_file():
            raise ClusterError(f"--cluster {cluster!r}: the scheduler file {cluster} does not exist")
    else:
        address = _host_port(cluster)
        if address is not None:
            _resolve(cluster, *address, timeout)
    _installed("distributed", "--cluster")


def connect(cluster: str, *, workers: int, resources: dict | None = None, root: Path,
            environment: dict | None = None, echo=print) -> Connection:
    """Open the cluster ``--cluster`` names (see the module docstring); ``workers``: local processes or batch jobs.

    Raises ClusterError naming the value, at once, for the values :func:`check` refuses (a scheduler file that does
    not exist, a batch system whose submit command (``sbatch``, ``qsub``, ``bsub``) is not on PATH, an address
    without a port or whose host name does not resolve), and after :func:`connect_timeout` seconds (5 unless
    ``FAITHLAB_CLUSTER_TIMEOUT`` says otherwise) for a scheduler that cannot be reached."""
    check(cluster)
    timeout = connect_timeout()
    distributed = require("distributed", "--cluster")

    if cluster == "local" or cluster.startswith("local:"):
        count = cluster.partition(":")[2]
        n = int(count) if count else workers
        # The kernels of the N workers share the cores, as with -j N (the workers' environment only).
        threads = local_threads(n, echo)
        saved = dict(os.environ)  # Dask's nannies set OMP_NUM_THREADS & co. in this process too: undone on close
        local = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                         dashboard_address=None, resources={RESOURCE: 1},
                                         env={"OMP_NUM_THREADS": threads, **(environment or {})})
        echo(f"local Dask cluster with {n} worker processes at {local.scheduler_address}")
        return Connection(distributed.Client(local), [local.close, _restore_environment(saved)])
    if cluster in SYSTEMS:
        batch = jobqueue_cluster(cluster, resources, root=root, environment=environment)
        refused = _SubmitErrors.install()
        batch.scale(jobs=workers)
        _check_submitted(batch, cluster, workers, refused)
        echo(f"{cluster}: {workers} job(s) requested from scheduler {batch.scheduler_address} (dashboard "
             f"{batch.dashboard_link}); job script:\n" + batch.job_script())
        return Connection(distributed.Client(batch), [batch.close])
    if cluster.endswith(".json"):
        target = {"scheduler_file": cluster}  # it exists (check): distributed would wait for it for ever
    else:
        target = {"address": cluster}
    try:
        client = distributed.Client(**target, timeout=timeout)
    except ValueError as exc:  # e.g. "missing port number in address 'x'"
        raise ClusterError(f"--cluster {cluster!r}: not a scheduler address, 'local[:N]' or one of "
                           f"{sorted(SYSTEMS)} ({exc})") from None
    except OSError as exc:  # refused, unreachable or no answer in time
        raise ClusterError(f"--cluster {cluster!r}: cannot connect to the scheduler within {timeout:g} s "
                           f"({exc})") from None
    workers_info = client.scheduler_info().get("workers", {})
    with_resource = [w for w in workers_info.values() if RESOURCE in (w.get("resources") or {})]
    if not with_resource:
        echo(f"note: no worker of {cluster} declares the resource '{RESOURCE}' (start them with --resources "
             f"{RESOURCE}=1); notebooks are sent without it")
    return Connection(client, uses_resources=bool(with_resource))

"""The runner on a Dask cluster and sharded notebooks: a real ``distributed.LocalCluster`` (worker processes on
loopback), and ``dask-jobqueue`` job scripts (no batch system here)."""

from __future__ import annotations

import json
import os
import re
import signal
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from study_project import HEADER, run

from faithlab_study import runner

from faithlab_study import artifacts as outputs
from faithlab_study.runner import cluster as clusters

SHARDED = HEADER + '''# %% tags=["parameters"]
NAME = "demo/sharded"
n = 11
seed = 3
fail_at = -1
shard = None
n_shards = 1

# %%
import numpy as np
import pandas as pd
import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook(NAME)

# %% tags=["shard"]
def per_sample(items):
    if fail_at in items:
        raise RuntimeError(f"sample {fail_at} is broken")
    # randomness per item, so a row does not depend on which shard computes it
    return pd.DataFrame({"sample": list(items), "label": [f"s{i}" for i in items],
                         "value": np.array([np.random.default_rng([seed, i]).normal() for i in items], "float32")})


table = fs.artifacts.sharded("per_sample", per_sample, n, shard=shard, n_shards=n_shards)

# %%
out.table(table, "per_sample", float_format=None)
out.table(pd.DataFrame({"rows": [len(table)], "mean": [table["value"].mean()],
                        "dtype": [str(table["value"].dtype)]}), "summary", float_format=None)
out.claim("mean", paper_value=0, our_value=float(table["value"].mean()), verdict="reproduced")
'''

WHO = HEADER + '''# %% tags=["parameters"]
NAME = "demo/who"
marker = ""

# %%
import os, time
from pathlib import Path
import pandas as pd
import faithlab as fl
import faithlab_study as fs

# the kernel's parent is the process that runs the notebook (a Dask worker here)
attempt = Path(marker)
first = not attempt.exists()
with attempt.open("a") as f:
    f.write(f"{os.getppid()}\\n")
if first and marker.endswith("slow"):
    for _ in range(600):  # until the test kills this worker
        time.sleep(0.1)
fs.artifacts.for_notebook(NAME).table(pd.DataFrame({"worker": [os.getppid()]}), "worker")
'''


def write(root: Path, name: str, text: str) -> None:
    path = root / "notebooks" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tables(generated: Path, name: str = "demo/sharded") -> dict[str, bytes]:
    folder = generated / name
    return {f: (folder / f).read_bytes() for f in ("per_sample.csv", "summary.csv", "claims.csv")}


@pytest.fixture
def sharded_project(project):
    write(project, "demo/sharded", SHARDED)
    return project


@pytest.fixture(scope="module")
def dask_cluster():
    """Two worker processes on loopback, one notebook each at a time (as ``--cluster local:2`` starts)."""
    connection = clusters.connect("local:2", workers=2, root=Path.cwd(), echo=lambda *_: None)
    yield connection
    connection.close()


# ------------------------------------------------------------------------------------------------ shards


def test_shard_bounds_cover_every_item_once_in_order():
    assert outputs.shard_bounds(11, 3) == [(0, 4), (4, 8), (8, 11)]
    assert outputs.shard_bounds(2, 3) == [(0, 1), (1, 2), (2, 2)]
    for n, k in [(0, 1), (7, 7), (100, 9)]:
        bounds = outputs.shard_bounds(n, k)
        assert [i for a, b in bounds for i in range(a, b)] == list(range(n))


@pytest.mark.slow
def test_sharded_run_equals_unsharded_run(sharded_project):
    """The shards and the reduce step write the unsharded run's tables, byte for byte. A shard's kernel never reaches
    the summary cells (their out.table calls would fail on a partial table if it did): here the summary asserts that
    it sees every sample."""
    write(sharded_project, "demo/sharded", SHARDED.replace(
        'out.table(table, "per_sample"', 'assert len(table) == n, len(table)\nout.table(table, "per_sample"'))
    whole = sharded_project / "whole"
    results = {r.name: r for r in runner.run(["demo/sharded"], root=sharded_project, generated=whole,
                                            echo=lambda *_: None)}
    assert results["demo/sharded"].status == "ran"
    messages: list[str] = []
    parts = sharded_project / "parts"
    results = {r.name: r for r in runner.run(["demo/sharded"], root=sharded_project, generated=parts, jobs=2,
                                            overrides={"n_shards": 3}, echo=messages.append)}
    assert results["demo/sharded"].status == "ran" and "3 shards" in results["demo/sharded"].message
    assert sum("[shard" in m and "done" in m for m in messages) == 3
    assert any(m.endswith(("done demo/sharded in", "s")) and "] done demo/sharded in" in m for m in messages)
    assert tables(whole) == tables(parts)
    summary = pd.read_csv(parts / "demo/sharded" / "summary.csv")
    assert summary["rows"].item() == 11 and summary["dtype"].item() == "float64"
    assert not (parts / runner.SHARDS).exists()  # the store goes once the reduce step is promoted
    # the reduce step's stamp makes the next sharded run a cache hit
    again = runner.run(["demo/sharded"], root=sharded_project, generated=parts, overrides={"n_shards": 3},
                      echo=lambda *_: None)
    assert [r.status for r in again] == ["cached"]


def test_failed_shard_fails_the_notebook_names_the_shard_and_keeps_no_stale_page(sharded_project):
    generated = sharded_project / "book" / "_generated"
    results, _ = run(sharded_project, "demo/sharded")
    assert results["demo/sharded"].status == "ran" and (generated / "demo" / "sharded.ipynb").is_file()
    results, messages = run(sharded_project, "demo/sharded", overrides={"n_shards": 3, "fail_at": 5}, jobs=2)
    failure = results["demo/sharded"]
    assert failure.status == "failed" and "sample 5 is broken" in failure.message
    assert any("[shard 2/3]" in m and "FAILED" in m for m in messages)
    assert (sharded_project / "_build" / "failed" / "demo" / "sharded--shard-1.ipynb").is_file()
    assert not (generated / "demo" / "sharded.ipynb").exists() and not (generated / "demo" / "sharded").exists()
    # the shards that succeeded are kept for the same key: fixing nothing and re-running reuses them
    store = next((generated / runner.SHARDS / "demo--sharded").iterdir())
    assert sorted(p.name for p in store.iterdir() if (p / runner.SHARD_DONE).is_file()) == ["0", "2"]


def test_shard_parameters_are_checked(sharded_project):
    with pytest.raises(runner.StudyError, match="n_shards must be a positive integer"):
        run(sharded_project, "demo/sharded", overrides={"n_shards": 0})
    with pytest.raises(runner.StudyError, match="shard is set by the runner"):
        run(sharded_project, "demo/sharded", overrides={"shard": 1})
    write(sharded_project, "demo/sharded", SHARDED.replace('# %% tags=["shard"]', "# %%"))
    results, _ = run(sharded_project, "demo/sharded", overrides={"n_shards": 2})
    assert results["demo/sharded"].status == "failed" and "no cell tagged 'shard'" in results["demo/sharded"].message


def test_sharded_needs_the_runner_for_more_than_one_shard(monkeypatch):
    monkeypatch.delenv("FAITHLAB_SHARDS", raising=False)
    frame = outputs.sharded("t", lambda items: pd.DataFrame({"i": list(items)}), 3)
    assert frame["i"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="n_shards=2 needs the study runner"):
        outputs.sharded("t", lambda items: pd.DataFrame({"i": list(items)}), 3, n_shards=2)
    with pytest.raises(ValueError, match="shard must be None or an integer"):
        outputs.sharded("t", lambda items: pd.DataFrame(), 3, shard=2, n_shards=2)
    with pytest.raises(TypeError, match="compute must return a pandas DataFrame"):
        outputs.sharded("t", lambda items: list(items), 3)


# ------------------------------------------------------------------------------------------------ Dask


def test_two_notebooks_run_in_parallel_on_two_workers_and_hit_the_same_cache(project, dask_cluster):
    names = ["demo/who_a", "demo/who_b"]
    for name in names:
        write(project, name, WHO.replace("demo/who", name).replace('marker = ""', f'marker = "{project / name[5:]}"'))
    generated = project / "book" / "_generated"
    results = {r.name: r for r in runner.run(names, root=project, generated=generated, cluster=dask_cluster,
                                            echo=lambda *_: None)}
    assert results["demo/who_a"].status == results["demo/who_b"].status == "ran"
    workers = {n: int(pd.read_csv(generated / n / "worker.csv")["worker"].item()) for n in names}
    worker_pids = set(dask_cluster.client.run(os.getpid).values())
    assert set(workers.values()) <= worker_pids and len(set(workers.values())) == 2  # one notebook per worker
    assert (generated / "scorecard.csv").is_file()
    # the same stamps as a local run: nothing is executed again, on the cluster or here
    again = runner.run(names, root=project, generated=generated, cluster=dask_cluster, echo=lambda *_: None)
    assert [r.status for r in again] == ["cached", "cached"]
    local = runner.run(names, root=project, generated=generated, echo=lambda *_: None)
    assert [r.status for r in local] == ["cached", "cached"]


def test_sharded_notebook_on_the_cluster_equals_its_unsharded_run(sharded_project, dask_cluster):
    whole = sharded_project / "whole"
    runner.run(["demo/sharded"], root=sharded_project, generated=whole, echo=lambda *_: None)
    parts = sharded_project / "parts"
    results = runner.run(["demo/sharded"], root=sharded_project, generated=parts, overrides={"n_shards": 3},
                        cluster=dask_cluster, echo=lambda *_: None)
    assert [r.status for r in results] == ["ran"]
    assert tables(whole) == tables(parts)
    scorecard = pd.read_csv(parts / "scorecard.csv")
    assert scorecard["claim"].tolist() == ["mean"]


def test_a_killed_worker_s_notebook_is_executed_again(project, dask_cluster):
    marker = project / "attempts-slow"
    write(project, "demo/who", WHO.replace('marker = ""', f'marker = "{marker}"'))
    generated = project / "book" / "_generated"
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(results=runner.run(
        ["demo/who"], root=project, generated=generated, cluster=dask_cluster, echo=lambda *_: None)))
    thread.start()
    deadline = time.monotonic() + 120
    while not (marker.is_file() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.is_file(), "the notebook did not start on the cluster"
    first_worker = int(marker.read_text().split()[0])
    assert first_worker in set(dask_cluster.client.run(os.getpid).values())
    os.kill(first_worker, signal.SIGKILL)  # the nanny starts a new worker; the scheduler re-assigns the task
    thread.join(timeout=240)
    assert not thread.is_alive(), "the run did not finish after the worker was killed"
    [result] = outcome["results"]
    assert result.status == "ran", result.message
    attempts = [int(p) for p in marker.read_text().split()]
    assert len(attempts) == 2 and attempts[1] != first_worker
    assert int(pd.read_csv(generated / "demo" / "who" / "worker.csv")["worker"].item()) == attempts[1]
    assert json.loads((generated / "demo" / "who" / runner.STAMP).read_text())["key"]


# ------------------------------------------------------------------------------------------------ dask-jobqueue


@pytest.mark.parametrize("system, expected", [
    ("slurm", ["#SBATCH --cpus-per-task=8", "#SBATCH -t 12:00:00", "#SBATCH --gres=gpu:1", "#SBATCH -p gpu",
               "#SBATCH --constraint=a100"]),
    ("pbs", ["#PBS -l select=1:ncpus=8:ngpus=1:mem=64GB", "#PBS -l walltime=12:00:00"]),
    ("sge", ["#$ -l gpu=1", "#$ -l h_rt=12:00:00"]),
    ("lsf", ["#BSUB -n 8", '#BSUB -gpu "num=1"', "#BSUB -W 12:00"]),
])
def test_jobqueue_job_script_states_the_profile_resources(tmp_path, system, expected):
    resources = {"cores": 8, "memory": "64GB", "walltime": "12:00:00", "gpus": 1, "queue": "gpu",
                 "job_extra_directives": ["--constraint=a100"] if system == "slurm" else [],
                 "job_script_prologue": ["module load cuda"], "interface": "lo"}
    batch = clusters.jobqueue_cluster(system, resources, root=tmp_path / "repo",
                                      environment={"FAITHLAB_GENERATED": str(tmp_path / "gen")})
    try:
        script = batch.job_script()
    finally:
        batch.close()
    for line in expected:
        assert any(s.startswith(line) for s in script.splitlines()), (line, script)
    assert f"cd {tmp_path / 'repo'}" in script and f"export FAITHLAB_GENERATED={tmp_path / 'gen'}" in script
    assert "export OMP_NUM_THREADS=8" in script and "module load cuda" in script
    assert "--nthreads 1" in script and f"--resources {clusters.RESOURCE}=1" in script


def test_cluster_section_of_a_profile_is_checked_and_extended(project):
    params = project / "notebooks" / "params"
    (params / "paper.yaml").write_text("cluster: {cores: 8, gpus: 1, walltime: '1:00:00'}\n")
    (params / "paper-dry.yaml").write_text("extends: paper\ncluster: {gpus: 0}\n")
    assert runner.load_profile("paper-dry", project)["cluster"] == {"cores": 8, "gpus": 0, "walltime": "1:00:00"}
    (params / "paper.yaml").write_text("cluster: {gpu: 1}\n")
    with pytest.raises(runner.StudyError, match="unknown keys \\['gpu'\\]"):
        runner.load_profile("paper", project)
    (params / "paper.yaml").write_text("cluster: {cores: 0}\n")
    with pytest.raises(runner.StudyError, match="cores must be a positive integer"):
        runner.load_profile("paper", project)
    with pytest.raises(runner.StudyError, match="number of local workers must be a positive integer"):
        runner.run(["demo/first"], root=project, generated=project / "g", cluster="local:x", echo=lambda *_: None)


# ------------------------------------------------------------------------------------------------ bad --cluster values


def _closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("cluster, why", [
    ("/nonexistent/scheduler.json", "scheduler file .* does not exist"),
    ("slurm", "'sbatch' is not on PATH"),
    ("slurm-refused", "sbatch refused the job script \\(sbatch: error: Invalid account\\)"),
    ("tcp://127.0.0.1:{port}", "cannot connect to the scheduler"),
])
def test_an_unusable_cluster_fails_at_once_with_one_line_naming_the_option(project, tmp_path, cluster,
                                                                            why):
    """The command line, in a process of its own: a scheduler file that is not there, a batch system whose submit
    command is missing or refuses the job (dask-jobqueue only logs that and waits for workers for ever) and a
    scheduler address that refuses connections each end the run within seconds, with exit code 2 and one line that
    names --cluster (not a traceback, nor a hang)."""
    cluster = cluster.format(port=_closed_port())
    env = {**os.environ, "FAITHLAB_ROOT": str(project), "FAITHLAB_GENERATED": str(tmp_path / "gen"),
           "FAITHLAB_CLUSTER_TIMEOUT": "1"}  # a closed port is refused at once: no need for the default 5 s
    if cluster.startswith("slurm"):
        (tmp_path / "bin").mkdir()
        env["PATH"] = str(tmp_path / "bin")  # no sbatch
    if cluster == "slurm-refused":  # an sbatch that refuses every job, as with a wrong account
        cluster = "slurm"
        sbatch = tmp_path / "bin" / "sbatch"
        sbatch.write_text("#!/bin/sh\necho 'sbatch: error: Invalid account' >&2\nexit 1\n")
        sbatch.chmod(0o755)
        env["PATH"] += os.pathsep + os.path.dirname(shutil.which("sh"))
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "faithlab_study", "run", "demo/first", "--force", "--cluster",
                               cluster], check=False, cwd=project, env=env, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"--cluster {cluster} hung")
    elapsed = time.monotonic() - start
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: --cluster {cluster!r}: "), done.stderr
    assert re.search(why, lines[0]), lines[0]
    assert elapsed < 20, elapsed


@pytest.mark.parametrize("system, command", [("slurm", "sbatch"), ("pbs", "qsub"), ("sge", "qsub"), ("lsf", "bsub")])
def test_a_batch_system_without_its_submit_command_is_refused_before_any_cluster_starts(monkeypatch, tmp_path,
                                                                                         system, command):
    monkeypatch.setattr(clusters.shutil, "which", lambda name: None)
    started = []
    monkeypatch.setattr(clusters, "jobqueue_cluster", lambda *a, **k: started.append(a))
    with pytest.raises(clusters.ClusterError, match=f"--cluster '{system}': '{command}' is not on PATH"):
        clusters.connect(system, workers=1, root=tmp_path, echo=lambda *_: None)
    assert not started

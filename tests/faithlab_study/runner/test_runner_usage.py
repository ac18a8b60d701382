"""Usage errors of the study runner (``python -m faithlab_study run ...``, issue 53): exit status 2 and one line on
stderr naming the bad argument, within seconds, because the arguments are checked before torch, pandas, dask,
distributed, papermill or jupytext are imported and before any cluster is contacted.

The commands run on the repository's own notebooks and profiles, in processes of their own, with the generated
folder and the cache in a temporary folder (a usage error must not get as far as writing there anyway)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from faithlab_study.runner import cluster as clusters

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = "basics/digits_classifier"
BAD_CLUSTER = "nonexistent.invalid:8786"  # .invalid never resolves (RFC 2606)

# Top-level modules the usage-error path must not import: each costs from a tenth of a second (numpy) to seconds
# (torch, distributed) on a quiet machine, many times that on a loaded one.
HEAVY = {"torch", "torchvision", "captum", "numpy", "scipy", "pandas", "matplotlib", "dask", "distributed",
         "dask_jobqueue", "papermill", "nbclient", "ipykernel", "jupyter_client", "zmq", "tornado", "jupytext",
         "nbformat"}
# Reading a notebook's parameters cell (only for a -p name, checked against the selected notebooks) takes jupytext,
# which brings these along; still no torch, pandas, dask or papermill.
READS_NOTEBOOKS = {"jupytext", "nbformat", "jupyter_client", "zmq", "tornado"}

# case: (arguments after `run`, what the one line must name, a regex it must match, whether it reads notebooks)
USAGE: dict[str, tuple[list[str], list[str], str, bool]] = {
    "cluster_unresolvable": ([NOTEBOOK, "--profile", "smoke", "--cluster", BAD_CLUSTER],
                             ["--cluster", BAD_CLUSTER], "resolve", False),
    "cluster_without_port": ([NOTEBOOK, "--profile", "smoke", "--cluster", "kubernetes"], ["--cluster", "kubernetes"],
                             "missing port number", False),
    "cluster_bad_port": ([NOTEBOOK, "--profile", "smoke", "--cluster", "tcp://localhost:99999"], ["--cluster"],
                         "port '99999'", False),
    "cluster_local_zero": ([NOTEBOOK, "--profile", "smoke", "--cluster", "local:0"], ["--cluster", "local:0"],
                           "positive integer", False),
    "cluster_missing_scheduler_file": ([NOTEBOOK, "--profile", "smoke", "--cluster", "/nonexistent/scheduler.json"],
                                       ["--cluster", "/nonexistent/scheduler.json"], "does not exist", False),
    "notebook_unknown": (["basics/nosuch", "--profile", "smoke"], ["basics/nosuch"], "no notebook matches", False),
    "paper_unknown": (["nosuch"], ["nosuch"], "no notebook matches", False),
    "profile_unknown": ([NOTEBOOK, "--profile", "nope"], ["--profile", "nope"], "invalid choice", False),
    "param_invalid_yaml": ([NOTEBOOK, "--profile", "smoke", "-p", "n_epochs", "[1,"], ["-p", "n_epochs"],
                           "not valid YAML", False),
    "param_not_a_name": ([NOTEBOOK, "--profile", "smoke", "-p", "n_epochs=3", "4"], ["-p", "n_epochs=3"],
                         "not a parameter name", False),
    "param_missing_value": ([NOTEBOOK, "--profile", "smoke", "-p", "n_epochs"], ["-p"], "expected 2 arguments",
                            False),
    "param_unknown_name": ([NOTEBOOK, "--profile", "smoke", "-p", "nosuch", "3"], ["-p", "nosuch"],
                           "no selected notebook has such a parameter", True),
    "jobs_zero": ([NOTEBOOK, "-j", "0"], ["--jobs"], "positive integer", False),
    "timeout_not_a_number": ([NOTEBOOK, "--timeout", "soon"], ["--timeout"], "invalid int", False),
}


def _env(tmp_path: Path, **more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FAITHLAB_ROOT", "FAITHLAB_CLUSTER_TIMEOUT")}
    return {**env, "FAITHLAB_GENERATED": str(tmp_path / "gen"), "FAITHLAB_CACHE": str(tmp_path / "cache"), **more}


def _runner(args: list[str], tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "faithlab_study", "run", *args], check=False, cwd=ROOT,
                              env=_env(tmp_path, **env), capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"run {' '.join(args)}: no answer within 120 s")
    return done, time.monotonic() - start


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert done.stdout == "", done.stdout  # nothing was started ("executing ...")
    return lines[0]


def _names(line: str, argument: str) -> bool:
    """Whether ``line`` names ``argument`` as a word (``-p`` not inside ``-parameter``)."""
    return re.search(rf"(?<![\w-]){re.escape(argument)}(?![\w-])", line) is not None


def test_an_unresolvable_cluster_address_is_one_line_naming_it_within_seconds(tmp_path):
    """The command of issue 53 (14-24 s before its error, 32-58 s on a loaded machine): the host name is resolved
    before anything slow, and an unknown one fails at once (well under a second on a quiet machine; 20 s here so
    that a loaded CI machine does not flake)."""
    done, elapsed = _runner([NOTEBOOK, "--profile", "smoke", "--cluster", BAD_CLUSTER], tmp_path)
    line = _one_line(done)
    assert _names(line, "--cluster") and BAD_CLUSTER in line, line
    assert "nonexistent.invalid" in line and "resolve" in line, line
    assert elapsed < 20, f"{elapsed:.1f} s"
    assert not (tmp_path / "gen").exists()


@pytest.mark.parametrize("case", sorted(USAGE))
def test_every_usage_error_is_one_line_naming_the_argument_within_seconds(case, tmp_path):
    args, named, why, _ = USAGE[case]
    done, elapsed = _runner(args, tmp_path)
    line = _one_line(done)
    for argument in named:
        assert _names(line, argument), f"{case}: {argument!r} not named in {line!r}"
    assert re.search(why, line), line
    assert elapsed < 20, f"{case}: {elapsed:.1f} s"
    assert not (tmp_path / "gen").exists()


def test_a_batch_system_without_its_submit_command_is_one_line_within_seconds(tmp_path):
    (tmp_path / "bin").mkdir()
    done, elapsed = _runner([NOTEBOOK, "--profile", "smoke", "--cluster", "slurm"], tmp_path,
                            PATH=str(tmp_path / "bin"))  # no sbatch (the interpreter is called by its full path)
    line = _one_line(done)
    assert _names(line, "--cluster") and "'sbatch' is not on PATH" in line, line
    assert elapsed < 20, f"{elapsed:.1f} s"


def test_a_bad_cluster_timeout_is_one_line_naming_the_variable(tmp_path):
    done, _ = _runner([NOTEBOOK, "--profile", "smoke", "--cluster", "localhost:8786"], tmp_path,
                      FAITHLAB_CLUSTER_TIMEOUT="soon")
    line = _one_line(done)
    assert "FAITHLAB_CLUSTER_TIMEOUT" in line and "'soon'" in line, line


# ------------------------------------------------------------------------------------ nothing heavy is imported

CHECK = """
import json, sys
from faithlab_study.runner.cli import UsageError, check_arguments
try:
    check_arguments(json.loads(sys.argv[1]))
    error = None
except UsageError as exc:
    error = str(exc)
print(json.dumps({"error": error, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2:]))}))
"""


def _check_in_a_fresh_process(argv: list[str], tmp_path: Path, heavy: set[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHECK, json.dumps(argv), *sorted(heavy)], check=False, cwd=ROOT,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(USAGE))
def test_the_usage_error_path_imports_nothing_heavy(case, tmp_path):
    """check_arguments finds each usage error with none of HEAVY imported (READS_NOTEBOOKS excepted where a -p name is
    checked against the parameters cells): fails if someone moves a heavy import back to the top of a module of
    faithlab_study or into its __init__."""
    args, named, _, reads_notebooks = USAGE[case]
    heavy = HEAVY - READS_NOTEBOOKS if reads_notebooks else HEAVY
    report = _check_in_a_fresh_process(["run", *args], tmp_path, heavy)
    assert report["error"] is not None and _names(report["error"], named[0]), report
    assert report["heavy"] == [], f"{case}: imported {report['heavy']}"


def test_checking_good_arguments_imports_nothing_heavy_either(tmp_path):
    """The same check passes a good command line (the run then imports what it needs)."""
    report = _check_in_a_fresh_process(["run", NOTEBOOK, "--profile", "smoke", "--cluster", "localhost:8786"],
                                       tmp_path, HEAVY)
    assert report == {"error": None, "heavy": []}


def test_importing_the_package_imports_nothing_heavy_and_still_exports_everything():
    code = ("import sys, faithlab_study as s; heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            f"{set(HEAVY)!r}); names = [n for n in s.__all__ if getattr(s, n, None) is None]; "
            "print(heavy, names, hasattr(s, 'library_hash'), s.runner.stamps.__name__)")
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] [] False faithlab_study.runner.stamps", done.stdout


# ------------------------------------------------------------------------------------ cluster.check, in process


def test_check_refuses_an_unresolvable_host_without_distributed():
    # "cannot resolve ...", or "... not resolved within 5 s" where the resolver does not answer
    with pytest.raises(clusters.ClusterError, match=rf"--cluster '{re.escape(BAD_CLUSTER)}': .*resolve"):
        clusters.check(BAD_CLUSTER)
    with pytest.raises(clusters.ClusterError, match="--cluster 'tcp://nonexistent.invalid:8786': .*resolve"):
        clusters.check("tcp://nonexistent.invalid:8786")


@pytest.mark.parametrize("address", ["localhost:8786", "tcp://127.0.0.1:8786", "tls://localhost:8786",
                                     "[::1]:8786", "tcp://[::1]:8786", "inproc://somewhere"])
def test_check_passes_addresses_it_can_read_without_contacting_them(address):
    clusters.check(address)  # nothing listens there: check does not connect


@pytest.mark.parametrize("address, why", [("localhost", "missing port number"), ("tcp://localhost", "missing port"),
                                          ("localhost:http", "port 'http'"), ("localhost:0", "port '0'"),
                                          ("::1:8786", "IPv6 address needs brackets"), ("[::1", "IPv6"),
                                          ("[::1]8786", "IPv6")])
def test_check_refuses_an_address_without_a_usable_port(address, why):
    with pytest.raises(clusters.ClusterError, match=rf"--cluster '{re.escape(address)}': not a scheduler address"):
        clusters.check(address)
    with pytest.raises(clusters.ClusterError, match=re.escape(why)):
        clusters.check(address)


def test_a_resolver_that_does_not_answer_is_given_up_after_the_timeout(monkeypatch):
    """getaddrinfo has no timeout of its own: the look-up runs in a thread that check() waits for at most
    FAITHLAB_CLUSTER_TIMEOUT seconds."""
    release = threading.Event()
    monkeypatch.setattr(clusters.socket, "getaddrinfo", lambda *a, **k: release.wait(30))
    monkeypatch.setenv("FAITHLAB_CLUSTER_TIMEOUT", "0.3")
    start = time.monotonic()
    try:
        with pytest.raises(clusters.ClusterError, match=r"'slow.example:8786'.* not resolved within 0.3 s"):
            clusters.check("slow.example:8786")
    finally:
        release.set()
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("given, expected", [(None, clusters.CONNECT_TIMEOUT), ("2.5", 2.5), (" 10 ", 10.0)])
def test_the_connect_timeout_comes_from_the_environment(monkeypatch, given, expected):
    if given is None:
        monkeypatch.delenv("FAITHLAB_CLUSTER_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("FAITHLAB_CLUSTER_TIMEOUT", given)
    assert clusters.connect_timeout() == expected


@pytest.mark.parametrize("given", ["0", "-1", "soon", "inf", "nan"])
def test_a_bad_connect_timeout_is_refused(monkeypatch, given):
    monkeypatch.setenv("FAITHLAB_CLUSTER_TIMEOUT", given)
    with pytest.raises(clusters.ClusterError, match=f"FAITHLAB_CLUSTER_TIMEOUT must be a positive number.*{given!r}"):
        clusters.connect_timeout()

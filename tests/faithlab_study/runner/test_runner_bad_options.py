"""Fuzz of the study runner's command line with bad options (issue #32): ``python -m faithlab_study run`` on a
throw-away project (the ``project`` fixture) exits non-zero within seconds, its last line of stderr names the option,
and no notebook starts. The classification (:func:`names_argument`, :data:`UNCLEAR`, :func:`case_params`) is the one
of the library's fuzz of the paper metrics (tests/support/paper_fuzz.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from paper_fuzz import UNCLEAR, allow_listed, case_params, names_argument

pytestmark = pytest.mark.timeout(60)  # a case that hangs fails instead of blocking the suite


# ====================================================================================== the runner's command line
CLI_BAD: dict[str, tuple[list[str], str, str]] = {
    # bad class: (arguments after `run`, the option the message must name, a regex of the message)
    "profile_unknown": (["demo/first", "--profile", "nope"], "--profile", "invalid choice"),
    "profile_empty": (["demo/first", "--profile", ""], "--profile", "invalid choice"),
    "jobs_zero": (["demo/first", "-j", "0"], "--jobs", "positive integer"),
    "jobs_negative": (["demo/first", "--jobs", "-3"], "--jobs", "positive integer"),
    "jobs_float": (["demo/first", "--jobs", "1.5"], "--jobs", "invalid int"),
    "jobs_string": (["demo/first", "--jobs", "many"], "--jobs", "invalid int"),
    "timeout_string": (["demo/first", "--timeout", "soon"], "--timeout", "invalid int"),
    "timeout_float": (["demo/first", "--timeout", "2.5"], "--timeout", "invalid int"),
    "timeout_zero": (["demo/first", "--force", "--timeout", "0"], "--timeout", "positive"),
    "timeout_negative": (["demo/first", "--force", "--timeout", "-5"], "--timeout", "positive"),
    "cluster_missing_scheduler_file": (["demo/first", "--force", "--cluster", "/nonexistent/scheduler.json"],
                                       "--cluster", "does not exist"),
    "cluster_slurm_without_sbatch": (["demo/first", "--force", "--cluster", "slurm"], "--cluster", "sbatch"),
    "cluster_unknown_system": (["demo/first", "--force", "--cluster", "kubernetes"], "--cluster", ""),
    "cluster_local_zero_workers": (["demo/first", "--force", "--cluster", "local:0"], "--cluster", ""),
    "cluster_local_not_a_number": (["demo/first", "--force", "--cluster", "local:x"], "--cluster", ""),
    "cluster_unreachable_address": (["demo/first", "--force", "--cluster", "tcp://127.0.0.1:{port}"], "--cluster",
                                    "cannot connect"),
    "experiment_unknown": (["demo/nosuch"], "demo/nosuch", "no notebook matches"),
    "paper_unknown": (["nosuch"], "nosuch", "no notebook matches"),
    "experiment_path_traversal": (["../demo/first"], "../demo/first", ""),
    "param_unknown_name": (["demo/first", "-p", "nosuch", "3"], "nosuch", "no selected notebook"),
    "param_not_an_identifier": (["demo/first", "-p", "value=3", "4"], "value=3", "not a parameter name"),
    "param_invalid_yaml": (["demo/first", "-p", "value", "[1,"], "value", "not valid YAML"),
    "param_duplicate_key": (["demo/first", "-p", "value", "{a: 1, a: 2}"], "value", ""),
    "param_missing_value": (["demo/first", "-p", "value"], "-p", "expected 2 arguments"),
}
CLI_CASES = [("study run", bad) for bad in CLI_BAD]


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("call", "bad"), case_params(CLI_CASES))
def test_the_runner_refuses_a_bad_option_at_once_with_one_line_naming_it(call, bad, project, tmp_path):
    """``python -m faithlab_study run`` in a process of its own, on a throw-away project, cache and output folder:
    it exits non-zero within seconds, its last line of stderr names the option (argparse prints its usage above
    it), and no traceback. Nothing here may start a notebook."""
    args, option, why = CLI_BAD[bad]
    args = [a.format(port=_closed_port()) if "{port}" in a else a for a in args]
    env = {**os.environ, "FAITHLAB_ROOT": str(project), "FAITHLAB_GENERATED": str(tmp_path / "gen"),
           "FAITHLAB_CACHE": str(tmp_path / "cache"), "FAITHLAB_PROGRESS": "0",
           "FAITHLAB_CLUSTER_TIMEOUT": "1"}  # a closed port is refused at once: no need for the default 5 s
    if bad == "cluster_slurm_without_sbatch":
        (tmp_path / "bin").mkdir()
        env["PATH"] = str(tmp_path / "bin")  # no sbatch (the interpreter is called by its full path)
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "faithlab_study", "run", *args], check=False, cwd=project,
                              env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{bad}: no answer within 60 s")
    elapsed = time.monotonic() - start
    lines = done.stderr.strip().splitlines()
    case = f"{call}/{bad}"
    assert done.returncode != 0, f"{case}: exit code 0\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, f"{case}: {done.stderr}"
    assert not (tmp_path / "gen" / "demo" / "first.ipynb").exists(), f"{case}: a notebook was executed"
    named = bool(lines) and names_argument(lines[-1], option) and re.search(why, lines[-1])
    if case in UNCLEAR:
        assert not named, f"{case} now names {option}: drop it from UNCLEAR"
    else:
        assert named, f"{case}: the last line does not name {option!r} ({why!r}): {done.stderr}"
        if not re.match(r"python -m faithlab_study( run)?: error: ", lines[-1]):  # argparse prints usage first
            assert len(lines) == 1, f"{case}: more than one line: {done.stderr}"
    assert elapsed < 30, f"{case}: took {elapsed:.0f} s"


def test_the_runner_lists_the_fake_project_s_notebooks(project, tmp_path):
    """The control of the cases above: the same process and project answer a good command."""
    env = {**os.environ, "FAITHLAB_ROOT": str(project), "FAITHLAB_GENERATED": str(tmp_path / "gen"),
           "FAITHLAB_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "faithlab_study", "list"], check=False, cwd=project, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "demo/first: " in done.stdout, done.stderr


# ============================================================================================ coverage of the fuzz
def test_the_fuzz_covers_every_callable_and_enough_cases():
    all_cases = {f"{c}/{b}" for c, b in CLI_CASES}
    assert {case.split("/")[0] for case in all_cases} == {"study run"}
    assert len(all_cases) >= 20, len(all_cases)
    mine = allow_listed({"study run"})  # the allow-lists name real cases
    assert mine <= all_cases, sorted(mine - all_cases)

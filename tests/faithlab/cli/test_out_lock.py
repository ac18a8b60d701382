"""One ``faithlab evaluate`` per output folder: a run holds ``--out`` (and ``<out>.partial/``) by an OS advisory lock
on ``.<out name>.lock`` beside it, holding its pid, start time and command. A second run on the same ``--out`` stops
before loading the model with one line naming the first; a lock whose holder was killed (SIGKILL) is taken over,
the kernel having released it; the lock is released and its file removed after a run that succeeds, fails with a
usage error or is interrupted; ``--estimate-only`` writes nothing into --out and takes no lock."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runs import class_folder, one_line_error

from faithlab import cli

HOLDER = """\
import sys
from faithlab import cli
with cli.lock.out_lock(sys.argv[1], "faithlab evaluate --out held-elsewhere", print):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes the pipe, or kills this process
"""
"""A second process holding the lock of --out sys.argv[1] through the function the command uses."""


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """images/{a,b}/0.png: one 16 x 16 image per class."""
    return class_folder(tmp_path_factory.mktemp("out-lock") / "images")


def _args(images: Path, out: Path, *extra: str) -> list[str]:
    return ["evaluate", "--model", "small_cnn", "--random-weights", "--images", str(images), "--size", "16",
            "--explainers", "saliency", "--metrics", "fid+", "--set", "sparsity=[0.5]", "--maps", "0", "--no-sanity",
            "--yes", "--out", str(out), *extra]


def _lock_file(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds the lock of ``out`` → (the process, out); it is ended at the test's end."""
    started = []

    def start(out: Path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdin.close()
        proc.stdout.close()


def _held(out: Path) -> bool:
    """Whether some run holds ``out`` now: this process tries to take the lock itself (flock locks are per open
    file, so a lock this process leaked is held against it too)."""
    try:
        with cli.lock.out_lock(out, "probe", lambda _text: None):
            return False
    except cli.UsageError:
        return True


def test_a_second_run_on_the_same_out_stops_naming_the_first(images, tmp_path, holder, capsys, monkeypatch):
    out = tmp_path / "report"
    proc = holder(out)
    record = json.loads(_lock_file(out).read_text(encoding="utf-8"))
    assert record["pid"] == proc.pid and record["command"] == "faithlab evaluate --out held-elsewhere"
    loads = []
    monkeypatch.setattr(cli.loading, "load", lambda *a: loads.append(a) or pytest.fail("the model was loaded"))
    assert cli.main(_args(images, out)) == 2
    err = one_line_error(capsys, "faithlab evaluate: error: --out: ", f"{out} is in use by another faithlab "
                          f"evaluate (pid {proc.pid}, started {record['started']}: faithlab evaluate --out "
                          "held-elsewhere); wait for it to finish or pass another --out")
    assert not loads and err.count("pid") == 1  # stopped before loading the model
    assert not out.exists() and proc.poll() is None and _lock_file(out).exists()  # the holder's lock is untouched


def test_estimate_only_writes_nothing_and_takes_no_lock(images, tmp_path, holder, capsys):
    out = tmp_path / "report"
    assert cli.main(_args(images, out, "--estimate-only")) == 0  # no lock file made
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    holder(out)
    assert cli.main(_args(images, out, "--estimate-only")) == 0  # nor refused while another run holds --out
    assert "estimated total" in capsys.readouterr().out


def test_a_killed_holders_lock_is_taken_over(images, tmp_path, holder, capsys):
    out = tmp_path / "report"
    proc = holder(out)
    proc.kill()  # SIGKILL: no finally runs, the file stays, the kernel releases the lock
    proc.wait(timeout=30)
    assert _lock_file(out).exists()
    assert cli.main(_args(images, out)) == 0
    assert (out / "index.html").is_file()
    assert not _lock_file(out).exists() and not out.with_name("report.partial").exists()
    assert "in use" not in capsys.readouterr().err


def test_the_lock_is_released_after_a_usage_error(images, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(_args(images, out, "--images", str(tmp_path / "nowhere"))) == 2  # refused inside, after locking
    one_line_error(capsys, "--images")
    assert not _lock_file(out).exists() and not _held(out)


def test_the_lock_is_held_during_the_run_and_released_after_ctrl_c(images, tmp_path, capsys, monkeypatch):
    out, seen = tmp_path / "sub" / "report", []  # the parent folder is made for the lock file

    def interrupted(args, echo):
        record = json.loads(_lock_file(out).read_text(encoding="utf-8"))
        seen.append((record["pid"], record["command"], _held(out)))
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.loading, "load", interrupted)
    assert cli.main(_args(images, out)) == 130
    assert seen == [(os.getpid(), "faithlab " + shlex.join(_args(images, out)), True)]
    assert not _lock_file(out).exists() and not _held(out)
    assert "interrupted" in capsys.readouterr().err


def test_discard_of_a_vanished_folder_is_nothing_to_do(tmp_path):
    cli.resume.discard(tmp_path / "report.partial")  # removed by another process meanwhile: no error
    assert list(tmp_path.iterdir()) == []


def test_a_killed_holders_record_is_not_taken_for_the_live_one():
    """The record a killed run left in the lock file names no one (its pid is gone) until the new holder writes its
    own: _alive tells them apart."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert cli.lock.alive(os.getpid()) and not cli.lock.alive(proc.pid)
    assert not cli.lock.alive(None) and not cli.lock.alive("12") and not cli.lock.alive(0)

"""Reliability of the notebook runner and the caches (issue #11): concurrent runners, interrupted promotions,
damaged profiles, stamps, claims and training-cache files, file permissions, and code that must never run.

The runner tests replace papermill by a fake kernel that does in-process what ``OK_BODY`` of
tests/support/study_project.py does, so they take seconds; the runner's own code (locks, staging, promotion, recovery,
scorecard) is the real one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from study_project import OK_BODY, result_value, run, write
from torch.utils.data import TensorDataset

import faithlab as fl
from faithlab_study import runner
from faithlab import paths
from faithlab_study import artifacts as outputs
from faithlab_study.book.scorecard import SCORECARD, write_scorecard
from faithlab.train import TrainConfig
from faithlab.train.cache import cache_files

FIRST_PARAMS = 'NAME = "demo/first"\nvalue = {value}\nprofile = "none"\nfail = "no"\n'

FAKE_KERNEL = textwrap.dedent('''
    """Stands in for papermill.execute_notebook: writes what OK_BODY writes, in-process, without a kernel."""
    import os
    import shutil
    import time
    from pathlib import Path


    STARTS = 0  # calls, i.e. kernels started


    def execute_notebook(input_path, output_path, parameters=None, **kwargs):
        import pandas as pd
        from papermill.exceptions import PapermillExecutionError

        from faithlab_study import artifacts as outputs

        gate = os.environ.get("FAKE_KERNEL_GATE")
        if gate:  # the test holds this execution until it creates <gate>/release
            Path(gate, "started").touch()
            deadline = time.monotonic() + 60
            while not Path(gate, "release").exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("the test never released the gate")
                time.sleep(0.02)
        global STARTS
        STARTS += 1
        if parameters.get("fail") == "start" or (parameters.get("fail") == "start once" and STARTS == 1):
            raise RuntimeError("Kernel died before replying to kernel_info")
        if parameters.get("fail") == "silent once" and STARTS == 1:
            assert kwargs["start_timeout"] >= 180  # the runner's, not papermill's 60 s
            raise RuntimeError(f"Kernel didn't respond in {kwargs['start_timeout']} seconds")
        value = parameters["value"]
        out = outputs.for_notebook(os.environ["FAITHLAB_NOTEBOOK"])
        out.table(pd.DataFrame({"value": [value * 2]}), "result")
        out.claim("doubling", paper_value=2 * value, our_value=value * 2, verdict="reproduced")
        shutil.copyfile(input_path, output_path)
        if parameters.get("fail") == "cell":
            raise PapermillExecutionError(0, 1, "raise", "RuntimeError", "deliberate failure", [])
''')

RUNNER = textwrap.dedent('''
    """A second runner in its own process: python runner.py <root> <selectors...>."""
    import json
    import sys
    from pathlib import Path

    import papermill

    import fake_kernel
    from faithlab_study import runner

    papermill.execute_notebook = fake_kernel.execute_notebook
    runner.stamps.library_hash = lambda: "library v1"  # as the project fixture
    root = Path(sys.argv[1])
    results = runner.run(sys.argv[2:], root=root, generated=root / "book" / "_generated", echo=print)
    print("RESULTS " + json.dumps({r.name: [r.status, r.message] for r in results}), flush=True)
''')


@pytest.fixture
def fake(project, tmp_path, monkeypatch):
    """Install the fake kernel in this process; returns the folder holding it and the second-runner script."""
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "fake_kernel.py").write_text(FAKE_KERNEL)
    (folder / "runner.py").write_text(RUNNER)
    spec = importlib.util.spec_from_file_location("fake_kernel", folder / "fake_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", module.execute_notebook)
    monkeypatch.delenv("FAKE_KERNEL_GATE", raising=False)
    write(project, "demo/first", FIRST_PARAMS.format(value=1), OK_BODY)
    return folder


def generated_of(root: Path) -> Path:
    return root / "book" / "_generated"


def scorecard(root: Path) -> pd.DataFrame:
    return pd.read_csv(generated_of(root) / SCORECARD)


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class GatedRunner:
    """A runner in another process whose (fake) notebook execution waits until :meth:`finish` releases it."""

    def __init__(self, fake: Path, root: Path, gate: Path, *selectors: str):
        gate.mkdir()
        self.gate = gate
        env = {**os.environ, "FAKE_KERNEL_GATE": str(gate)}
        self.proc = subprocess.Popen([sys.executable, str(fake / "runner.py"), str(root), *selectors], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(lambda: (gate / "started").exists() or self.proc.poll() is not None, 120, "the runner to start")
        except AssertionError:
            self.proc.kill()
            raise
        if not (gate / "started").exists():
            raise AssertionError(f"the runner ended before executing: {self.proc.communicate()[0][-3000:]}")

    def finish(self) -> dict:
        (self.gate / "release").touch()
        out, _ = self.proc.communicate(timeout=120)
        line = next((line for line in out.splitlines() if line.startswith("RESULTS ")), None)
        assert line is not None, out[-3000:]
        return json.loads(line.removeprefix("RESULTS "))

    def kill(self) -> None:
        (self.gate / "release").touch()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


# ------------------------------------------------------------------------------------------- concurrent runners


def test_a_cached_runner_does_not_break_a_concurrent_execution(project, fake, tmp_path):
    """Runner B, with everything cached, finishes while runner A executes: A's staging folder survives, A's
    notebook is promoted, and both notebooks' outputs and scorecard rows are there at the end."""
    results, _ = run(project)
    assert {r.status for r in results.values()} == {"ran"}
    write(project, "demo/first", FIRST_PARAMS.format(value=2), OK_BODY)

    runner_a = GatedRunner(fake, project, tmp_path / "gate", "demo/first")
    try:
        results_b, _ = run(project, "demo/second")
        assert results_b["demo/second"].status == "cached"
        results_a = runner_a.finish()
    finally:
        runner_a.kill()
    assert results_a["demo/first"][0] == "ran", results_a
    assert result_value(project, "demo/first") == 4 and result_value(project, "demo/second") == 20
    assert (generated_of(project) / "demo" / "first.ipynb").is_file()
    assert scorecard(project)["our_value"].tolist() == [4, 20]
    assert not (generated_of(project) / ".staging").exists()


def test_a_second_runner_waits_for_the_notebook_another_runner_is_executing(project, fake, tmp_path):
    run(project)
    write(project, "demo/first", FIRST_PARAMS.format(value=3), OK_BODY)
    runner_a = GatedRunner(fake, project, tmp_path / "gate", "demo/first")
    messages: list[str] = []
    results_b: dict = {}

    def runner_b():
        for r in runner.run(["demo/first"], root=project, generated=generated_of(project), echo=messages.append):
            results_b[r.name] = r

    thread = threading.Thread(target=runner_b)
    thread.start()
    try:
        wait_for(lambda: any("[waiting] demo/first" in m for m in messages) or not thread.is_alive(), 60,
                 "runner B to wait for the lock")
        assert any("[waiting] demo/first" in m for m in messages), messages
        results_a = runner_a.finish()
    finally:
        runner_a.kill()
        thread.join(120)
    assert results_a["demo/first"][0] == "ran", results_a
    # B found the outputs it wanted once A was done, and did not execute the notebook a second time.
    assert results_b["demo/first"].status == "cached", results_b["demo/first"]
    assert result_value(project, "demo/first") == 6
    assert scorecard(project)["our_value"].tolist() == [6, 20]


# ------------------------------------------------------------------------------------------- interrupted promotion


class Killed(BaseException):
    """Stands for the runner's death: no `except Exception` of the runner catches it."""


@pytest.mark.parametrize("kill_at", [1, 2, 3, 4])
def test_a_promotion_killed_at_any_step_is_completed_by_the_next_run(project, fake, monkeypatch, kill_at):
    generated = generated_of(project)
    run(project)
    write(project, "demo/first", FIRST_PARAMS.format(value=3), OK_BODY)
    real_replace = os.replace
    moves = []

    def replace(src, dst):  # the promotion's renames are those into or out of the paper's folder
        if generated / "demo" in (Path(src).parent, Path(dst).parent):
            moves.append((src, dst))
            if len(moves) == kill_at:
                raise Killed(f"killed before rename {kill_at}")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Killed):
        run(project, "demo/first")
    monkeypatch.setattr(os, "replace", real_replace)

    # Meanwhile, the scorecard lists only the claims of notebooks whose executed notebook is present.
    write_scorecard(generated, echo=lambda message: None)
    for paper, experiment in zip(scorecard(project)["paper"], scorecard(project)["experiment"]):
        assert (generated / paper / f"{experiment}.ipynb").is_file(), (paper, experiment)

    # The next run, even of another notebook, completes the promotion: the new outputs, whole, and no re-execution.
    results, messages = run(project, "demo/second")
    assert any("[recovered] demo/first" in m for m in messages), messages
    assert (generated / "demo" / "first.ipynb").is_file() and result_value(project, "demo/first") == 6
    assert scorecard(project)["our_value"].tolist() == [6, 20]
    assert not (generated / ".staging").exists() and not list((generated / runner.JOURNAL).iterdir())
    results, _ = run(project)
    assert {r.status for r in results.values()} == {"cached"}


def test_a_half_promoted_notebook_without_journal_is_left_out_and_executed_again(project, fake):
    """The state an older runner killed mid-promotion leaves: a folder whose executed notebook is missing."""
    generated = generated_of(project)
    run(project)
    (generated / "demo" / "first.ipynb").unlink()
    messages: list[str] = []
    write_scorecard(generated, echo=messages.append)
    assert scorecard(project)["experiment"].tolist() == ["second"]
    assert any(str(generated / "demo" / "first" / outputs.CLAIMS) in m for m in messages), messages
    results, _ = run(project)
    assert results["demo/first"].status == "ran" and results["demo/second"].status == "cached"
    assert scorecard(project)["experiment"].tolist() == ["first", "second"]


# ------------------------------------------------------------------------------------------- failures


def test_a_notebook_that_does_not_start_keeps_its_previous_outputs(project, fake):
    run(project)
    write(project, "demo/first", FIRST_PARAMS.format(value=1).replace('"no"', '"start"'), OK_BODY)
    results, _ = run(project, "demo/first")
    assert results["demo/first"].status == "failed"
    assert "previous outputs are kept" in results["demo/first"].message
    assert (generated_of(project) / "demo" / "first.ipynb").is_file() and result_value(project, "demo/first") == 2
    assert scorecard(project)["experiment"].tolist() == ["first", "second"]


def test_a_kernel_that_dies_before_it_starts_is_started_again(project, fake):
    """A kernel whose port another process took exits before it answers (no cell ran): the runner starts another, at
    most KERNEL_START_TRIES in all, and says so; a kernel that never starts fails the notebook after that many."""
    import papermill

    from faithlab_study.runner.execution import KERNEL_START_TRIES

    kernel = papermill.execute_notebook.__globals__  # the fake kernel's module namespace
    write(project, "demo/first", FIRST_PARAMS.format(value=3).replace('"no"', '"start once"'), OK_BODY)
    results, messages = run(project, "demo/first")
    assert results["demo/first"].status == "ran" and result_value(project, "demo/first") == 6
    assert kernel["STARTS"] == 2 and any("kernel died before it started (try 1 of 3)" in m for m in messages)
    write(project, "demo/first", FIRST_PARAMS.format(value=4).replace('"no"', '"start"'), OK_BODY)
    results, _ = run(project, "demo/first")
    assert results["demo/first"].status == "failed" and kernel["STARTS"] == 2 + KERNEL_START_TRIES
    assert "Kernel died before replying to kernel_info" in results["demo/first"].message
    assert result_value(project, "demo/first") == 6  # the run before's outputs, kept


def test_a_kernel_that_does_not_answer_in_time_is_started_again(project, fake):
    """A kernel that does not answer within the start timeout ran no cell either: started again, and said so."""
    import papermill

    kernel = papermill.execute_notebook.__globals__
    write(project, "demo/first", FIRST_PARAMS.format(value=5).replace('"no"', '"silent once"'), OK_BODY)
    results, messages = run(project, "demo/first")
    assert results["demo/first"].status == "ran" and result_value(project, "demo/first") == 10
    assert kernel["STARTS"] == 2 and any("did not answer within 180 s (try 1 of 3)" in m for m in messages)


def test_the_failed_notebook_is_removed_once_the_notebook_succeeds(project, fake):
    failed = project / "_build" / "failed" / "demo" / "first.ipynb"
    write(project, "demo/first", FIRST_PARAMS.format(value=1).replace('"no"', '"cell"'), OK_BODY)
    results, _ = run(project, "demo/first")
    assert results["demo/first"].status == "failed" and failed.is_file()
    assert not (generated_of(project) / "demo" / "first").exists()  # a failing notebook leaves no stale page
    write(project, "demo/first", FIRST_PARAMS.format(value=1), OK_BODY)
    results, _ = run(project, "demo/first")
    assert results["demo/first"].status == "ran"
    assert not failed.exists()


# ------------------------------------------------------------------------------------------- damaged files


@pytest.mark.parametrize("content", [b"\xff\xfe not UTF-8", b"{not json", b"[1, 2]"])
def test_an_unreadable_stamp_means_execute_again(project, fake, content):
    run(project)
    stamp = generated_of(project) / "demo" / "first" / runner.STAMP
    stamp.write_bytes(content)
    results, messages = run(project)
    assert results["demo/first"].status == "ran" and results["demo/second"].status == "cached"
    assert any(str(stamp) in m for m in messages), messages
    assert json.loads(stamp.read_text())["params"]["value"] == 1


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00\x81 not UTF-8", b"a,b\n1,2\n", b'paper,"experiment\n'])
def test_an_unreadable_claims_file_is_skipped_with_a_message(project, fake, capsys, content):
    run(project)
    claims = generated_of(project) / "demo" / "second" / outputs.CLAIMS
    claims.write_bytes(content)
    messages: list[str] = []
    write_scorecard(generated_of(project), echo=messages.append)
    assert scorecard(project)["experiment"].tolist() == ["first"]
    assert [m for m in messages if str(claims) in m], messages
    # The command line's `scorecard` does the same, on stderr.
    assert runner.main(["scorecard"]) == 0
    assert str(claims) in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- profiles, -p values


@pytest.mark.parametrize(
    "text, expected",
    [
        ("defaults: {value: 1\n", r"book\.yaml:2:1: not a valid profile: while parsing a flow mapping"),
        ("defaults:\n  value: 1\n  value: 2\n", r"book\.yaml:3:3: .*duplicate key 'value' \(first on line 2\)"),
        ("defaults:\n\tvalue: 1\n", r"book\.yaml:2:1: .*'\\t'"),
        ("defaults: [1, 2]\n", r"book\.yaml:1: 'defaults' must be a mapping .* found a list"),
        ("just a string\n", r"book\.yaml:1: a profile must be a mapping .* found a str"),
        ("notebooks: [demo/first]\n", r"book\.yaml:1: 'notebooks' must be a mapping"),
        ("notebooks:\n  demo/first: [value, 3]\n", r"book\.yaml:2: 'notebooks: demo/first' must be a mapping"),
    ],
)
def test_a_malformed_profile_is_a_one_line_error_naming_file_and_line(project, capsys, text, expected):
    path = project / "notebooks" / "params" / "book.yaml"
    path.write_text(text)
    with pytest.raises(runner.StudyError) as err:
        runner.load_profile("book", project)
    message = str(err.value)
    assert str(path) in message and "\n" not in message
    assert re.search(expected, message), message
    assert runner.main(["run", "--profile", "book"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {message}"]


@pytest.mark.parametrize(
    "pairs, expected",
    [
        ([("xs", "[1, 2")], r"-p xs: value '\[1, 2' is not valid YAML"),
        ([("d", "{a: 1, a: 2}")], r"-p d: .*duplicate key 'a'"),
        ([("value=3", "demo")], r"'value=3' is not a parameter name .*did you mean -p value '3'"),
    ],
)
def test_a_malformed_override_is_an_error_naming_the_parameter(project, capsys, pairs, expected):
    with pytest.raises(runner.StudyError, match=expected):
        runner.parse_overrides(pairs)
    argv = ["run"] + [arg for name, value in pairs for arg in ("-p", name, value)]
    assert runner.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(expected, err[0]), err


# ------------------------------------------------------------------------------------------- parameters cells


@pytest.mark.parametrize(
    "line",
    [
        "x = __import__('os').system('touch PWNED')",
        "x = open('PWNED', 'w')",
        "import os",
        "x = os.sep",
        "x = f'{value}'",
        "x = [i for i in range(3)]",
        "x = 2 * 3",
        "x: int = 3",
        "x = y = 3",
        "x, y = 1, 2",
        "print('PWNED')",
    ],
)
def test_the_parameters_cell_is_parsed_never_executed(project, tmp_path, line):
    pwned = tmp_path / "PWNED"
    line = line.replace("PWNED", str(pwned))
    path = write(project, "demo/evil", "value = 1\n" + line + "\n", "print(value)\n")
    with pytest.raises(runner.StudyError) as err:
        runner.discover(project)
    lineno = path.read_text().splitlines().index(line) + 1
    assert str(err.value).startswith(f"{path}:{lineno}: "), str(err.value)
    assert "\n" not in str(err.value)
    assert not pwned.exists()


def test_the_parameters_cell_accepts_literals_and_comments(project):
    write(project, "demo/literals", textwrap.dedent("""\
        # a comment
        a = -1
        b = (1, -2.5)  # a trailing comment

        c = {"k": [None, True], "n": -3e-3}
        d = 'text'
        _private = 3
        """), "print(a)\n")
    found = {nb.name: nb.defaults for nb in runner.discover(project)}
    assert found["demo/literals"] == {"a": -1, "b": (1, -2.5), "c": {"k": [None, True], "n": -0.003}, "d": "text"}


def test_a_syntax_error_in_the_parameters_cell_names_the_line(project):
    path = write(project, "demo/broken", "value = 1\nx = [1,\n", "print(value)\n")
    with pytest.raises(runner.StudyError, match=re.escape(f"{path}:")) as err:
        runner.discover(project)
    assert "not valid Python" in str(err.value)


# ------------------------------------------------------------------------------------------- outputs.for_notebook


@pytest.mark.parametrize(
    "name", ["/faithlab-test-escape", "../escape", "escape/..", "./x", "a/.hidden", "a/-x", "a/b/c", "a b/c", "", "a/"]
)
def test_for_notebook_refuses_names_that_leave_the_generated_folder(tmp_path, monkeypatch, name):
    monkeypatch.delenv("FAITHLAB_OUTPUT_DIR", raising=False)
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    monkeypatch.setenv("FAITHLAB_GENERATED", str(tmp_path / "book" / "_generated"))
    with pytest.raises(ValueError, match="notebook"):
        outputs.for_notebook(name)
    assert list(tmp_path.rglob("*")) == [] and not Path("/faithlab-test-escape").exists()


def test_for_notebook_accepts_plain_names(tmp_path, monkeypatch):
    monkeypatch.delenv("FAITHLAB_OUTPUT_DIR", raising=False)
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    monkeypatch.setenv("FAITHLAB_GENERATED", str(tmp_path))
    assert outputs.for_notebook("paper-1/exp_2.v1").folder == tmp_path / "paper-1" / "exp_2.v1"


# ------------------------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_atomically_written_files_follow_the_umask(tmp_path, monkeypatch, umask, mode):
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path / "stage"))
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    before = os.umask(umask)
    try:
        plain = paths.atomic_write(tmp_path / "plain.txt", lambda tmp: tmp.write_text("x"))
        table = outputs.for_notebook("paper/exp").table(pd.DataFrame({"a": [1]}), "t")
    finally:
        os.umask(before)
    assert [stat.S_IMODE(p.stat().st_mode) for p in (plain, table)] == [mode, mode]


# ------------------------------------------------------------------------------------------- training cache

CNN = dict(in_channels=1, n_classes=2, width=4)
FAST = TrainConfig(epochs=2, lr=1e-2, batch_size=16)


def _fit(cache_dir: Path):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 8, 8, generator=g) * 0.5
    y = torch.arange(64) % 2
    x[y == 1, :, :3, :3] += 2.0
    return fl.train.fit("small_cnn", CNN, TensorDataset(x, y), FAST, data_key="squares-64", progress=False,
                        cache_dir=cache_dir)


@pytest.mark.parametrize("damage", ["truncated", "empty", "foreign", "a tensor", "other shapes", "history"])
def test_a_damaged_training_cache_entry_is_reported_deleted_and_retrained(tmp_path, damage):
    model, history = _fit(tmp_path)
    weights, history_file = cache_files(history["key"], tmp_path)
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "empty":
        weights.write_bytes(b"")
    elif damage == "foreign":
        weights.write_text('{"not": "weights"}')
    elif damage == "a tensor":
        torch.save(torch.zeros(3), weights)
    elif damage == "other shapes":
        torch.save({k: torch.zeros(1) for k in model.state_dict()}, weights)
    else:
        history_file.write_text('{"epochs": [')
    bad = history_file if damage == "history" else weights
    with pytest.warns(RuntimeWarning, match=re.escape(str(bad))):
        again, retrained = _fit(tmp_path)
    assert not retrained["from_cache"]
    # Retrained from the same initialisation as a run without the cache (the rejected entry touched nothing).
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    _, cached = _fit(tmp_path)
    assert cached["from_cache"]


def test_stale_temporary_files_of_killed_writers_are_removed_from_the_cache(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    stale = folder / ".0123.pt.k3j_x9q2.tmp"  # a killed writer's, two hours old
    fresh = folder / ".0123.pt.0a1b2c3d.tmp"  # a live writer's
    unrelated = folder / "notes.tmp"  # not atomic_write's
    for f in (stale, fresh, unrelated):
        f.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    for f in (stale, unrelated):
        os.utime(f, (two_hours_ago, two_hours_ago))
    _, history = _fit(tmp_path)
    assert not stale.exists() and fresh.exists() and unrelated.exists()
    assert all(f.is_file() for f in cache_files(history["key"], tmp_path))

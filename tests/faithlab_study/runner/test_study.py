"""Tests of the notebook runner (faithlab_study) and the artifact writer (faithlab_study.artifacts) on a throw-away project."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from study_project import OK_BODY, notebook, result_value, run, write

from faithlab_study import runner

from faithlab_study import artifacts as outputs
from faithlab_study.book.scorecard import SCORECARD

# ------------------------------------------------------------------------------------------------ discovery


def test_discover_reads_parameter_defaults(project):
    found = {nb.name: nb.defaults for nb in runner.discover(project)}
    assert found == {
        "demo/first": {"NAME": "demo/first", "value": 1, "profile": "none"},
        "demo/second": {"NAME": "demo/second", "value": 10},
    }


def test_discover_rejects_two_parameter_cells(project):
    path = project / "notebooks" / "demo" / "bad.py"
    path.write_text(notebook("a = 1\n", 'b = 2\n# %% tags=["parameters"]\nc = 3\n'))
    with pytest.raises(runner.StudyError, match="exactly one cell tagged 'parameters'"):
        runner.discover(project)


def test_select_by_paper_and_unknown_name(project):
    nbs = runner.discover(project)
    assert [nb.name for nb in runner.select(nbs, ["demo"])] == ["demo/first", "demo/second"]
    assert [nb.name for nb in runner.select(nbs, ["notebooks/demo/second.py"])] == ["demo/second"]
    with pytest.raises(runner.StudyError, match="no notebook matches 'demo/nope'"):
        runner.select(nbs, ["demo/nope"])


# ------------------------------------------------------------------------------------------------ parameters


def test_parameter_precedence(project):
    (project / "notebooks" / "params" / "smoke.yaml").write_text(
        "defaults: {value: 5, unrelated: 1}\nnotebooks:\n  demo/second: {value: 7}\n"
    )
    spec = runner.load_profile("smoke", project)
    first, second = runner.discover(project)
    assert runner.merge_parameters(first, "smoke", spec, {})["value"] == 5
    assert "unrelated" not in runner.merge_parameters(first, "smoke", spec, {})
    assert runner.merge_parameters(second, "smoke", spec, {})["value"] == 7
    assert runner.merge_parameters(second, "smoke", spec, {"value": 9})["value"] == 9
    assert runner.merge_parameters(first, "smoke", spec, {})["profile"] == "smoke"


def test_profile_extends_another_name_by_name(project):
    params = project / "notebooks" / "params"
    (params / "paper.yaml").write_text(
        "defaults: {value: 5, other: 1}\nnotebooks:\n  demo/second: {value: 7, NAME: kept}\n"
    )
    (params / "paper-dry.yaml").write_text("extends: paper\ndefaults: {other: 2}\nnotebooks:\n  demo/second: {value: 8}\n")
    spec = runner.load_profile("paper-dry", project)
    assert spec["defaults"] == {"value": 5, "other": 2}
    assert spec["notebooks"]["demo/second"] == {"value": 8, "NAME": "kept"}
    (params / "paper.yaml").write_text("extends: paper-dry\n")
    with pytest.raises(runner.StudyError, match="circle"):
        runner.load_profile("paper-dry", project)
    (params / "paper-dry.yaml").write_text("extends: papr\n")
    with pytest.raises(runner.StudyError, match="papr"):
        runner.load_profile("paper-dry", project)


def test_start_first_submits_those_notebooks_first_in_its_order(project):
    write(project, "demo/third", 'NAME = "demo/third"\nvalue = 3\n', OK_BODY)
    params = project / "notebooks" / "params"
    (params / "book.yaml").write_text("start_first: [demo/third, demo/second]\nnotebooks: {}\n")
    results, messages = run(project, profile="book")
    started = [m.split()[1] for m in messages if m.endswith(" ...")]  # "[i/n] name ...", in submission order
    assert started == ["demo/third", "demo/second", "demo/first"]
    assert all(r.status == "ran" for r in results.values())
    (params / "paper.yaml").write_text("start_first: [demo/second]\n")
    (params / "paper-dry.yaml").write_text("extends: paper\n")
    assert runner.load_profile("paper-dry", project)["start_first"] == ["demo/second"]  # inherited
    (params / "paper-dry.yaml").write_text("extends: paper\nstart_first: []\n")
    assert runner.load_profile("paper-dry", project)["start_first"] == []  # its own list wins, even an empty one


@pytest.mark.parametrize("value, match", [
    ("demo/first", "'start_first' must be a list"),
    ("[demo/first, demo/first]", "distinct"),
    ("[demo/frist]", "unknown notebooks \\['demo/frist'\\]"),
])
def test_a_bad_start_first_is_an_error_naming_it(project, value, match):
    (project / "notebooks" / "params" / "book.yaml").write_text(f"start_first: {value}\nnotebooks: {{}}\n")
    with pytest.raises(runner.StudyError, match=match):
        run(project, profile="book")


def test_profile_typo_is_an_error(project):
    (project / "notebooks" / "params" / "book.yaml").write_text("notebooks:\n  demo/first: {valeu: 3}\n")
    with pytest.raises(runner.StudyError, match="valeu"):
        run(project, profile="book")


def test_unknown_command_line_parameter_is_an_error(project):
    with pytest.raises(runner.StudyError, match="nonexistent"):
        run(project, overrides={"nonexistent": 1})


def test_parse_overrides_types_values():
    assert runner.parse_overrides([("n", "3"), ("xs", "[0.1, 0.2]"), ("name", "cuda")]) == {
        "n": 3,
        "xs": [0.1, 0.2],
        "name": "cuda",
    }


# ------------------------------------------------------------------------------------------------ cache


def test_second_run_is_cached_and_changes_rerun_only_what_changed(project, monkeypatch):
    results, _ = run(project)
    assert {r.status for r in results.values()} == {"ran"}
    assert result_value(project, "demo/first") == 2

    results, messages = run(project)
    assert {r.status for r in results.values()} == {"cached"}
    assert any("[cached] demo/first" in m for m in messages)

    # A parameter on the command line re-executes only the notebook that has it.
    (project / "notebooks" / "demo" / "first.py").write_text(
        notebook('NAME = "demo/first"\nvalue = 1\nprofile = "none"\nonly_first = 0\n', OK_BODY)
    )
    run(project)
    results, _ = run(project, overrides={"only_first": 4})
    assert results["demo/first"].status == "ran" and results["demo/second"].status == "cached"

    # Editing a source re-executes that notebook only.
    src = project / "notebooks" / "demo" / "second.py"
    src.write_text(src.read_text().replace("value = 10", "value = 11"))
    results, _ = run(project, overrides={"only_first": 4})
    assert results["demo/second"].status == "ran" and results["demo/first"].status == "cached"
    assert result_value(project, "demo/second") == 22

    # A change in the library or the lock file re-executes everything.
    monkeypatch.setattr(runner.stamps, "library_hash", lambda: "another library")
    results, _ = run(project, overrides={"only_first": 4})
    assert {r.status for r in results.values()} == {"ran"}
    (project / "uv.lock").write_text("lock v2\n")
    results, _ = run(project, overrides={"only_first": 4})
    assert {r.status for r in results.values()} == {"ran"}


def test_library_hash_tracks_library_sources(tmp_path):
    from faithlab_study.runner import stamps

    import faithlab

    library, study = Path(faithlab.__file__).resolve().parent, Path(runner.__file__).resolve().parents[1]
    sources = [*library.rglob("*.py"), *study.rglob("*.py")]  # every source of both distributions, no other
    assert stamps.library_hash() == stamps._hash_files(sources)
    assert stamps.library_hash() != stamps._hash_files(library.rglob("*.py"))
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    before = stamps._hash_files(tmp_path.glob("*.py"))
    (tmp_path / "b.py").write_text("y = 3\n")
    assert stamps._hash_files(tmp_path.glob("*.py")) != before


def test_the_package_does_not_reexport_library_hash():
    """run() reads faithlab_study.runner.stamps.library_hash: a patch of the package's name would not reach it, so there is
    no such name to patch (monkeypatch.setattr then fails loudly instead of passing silently)."""
    import faithlab_study

    for package in (faithlab_study, runner):
        assert not hasattr(package, "library_hash")
        with pytest.raises(AttributeError):
            pytest.MonkeyPatch().setattr(package, "library_hash", lambda: "x")


def test_parallel_jobs(project, monkeypatch):
    """Two notebooks at a time; each kernel gets its share of the cores even when the caller's OMP_NUM_THREADS asks
    for more (and the caller's value is back afterwards)."""
    from faithlab_study.runner import cluster as clusters

    write(project, "demo/threads", 'NAME = "demo/threads"\n', """
        import os
        import pandas as pd
        import faithlab as fl
        import faithlab_study as fs
        fs.artifacts.for_notebook(NAME).table(pd.DataFrame({"value": [int(os.environ["OMP_NUM_THREADS"])]}), "result")
        """)
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    results, messages = run(project, jobs=2)
    assert {r.status for r in results.values()} == {"ran"}
    assert result_value(project, "demo/second") == 20
    assert result_value(project, "demo/threads") == max(1, clusters.cores() // 2)
    assert any("[3/3]" in m for m in messages) and any("OMP_NUM_THREADS=64" in m for m in messages)
    assert os.environ["OMP_NUM_THREADS"] == "64"


@pytest.mark.parametrize("asked, jobs, cores, expected", [
    (None, 2, 2, "1"), (None, 1, 2, "2"), (None, 3, 2, "1"), (None, 2, 16, "8"),
    ("4", 2, 2, "1"), ("1", 2, 2, "1"), ("8", 1, 16, "8"), ("12", 2, 16, "8"), ("0", 2, 2, "1"), ("x", 2, 4, "2")])
def test_local_kernels_share_the_cores(monkeypatch, asked, jobs, cores, expected):
    """OMP_NUM_THREADS per kernel: the cores shared out among the jobs, or the caller's smaller value; a larger one
    is cut to the share with a message (4 threads in each of 2 kernels on 2 cores made the smoke notebooks ~6x
    slower)."""
    from faithlab_study.runner import cluster as clusters

    monkeypatch.setattr(clusters, "cores", lambda: cores)
    if asked is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", asked)
    messages: list[str] = []
    assert clusters.local_threads(jobs, messages.append) == expected
    cut = asked is not None and asked.isdigit() and int(asked) > int(expected)
    assert bool(messages) == cut and all(f"OMP_NUM_THREADS={asked}" in m for m in messages)


def test_the_runner_hands_each_notebook_its_name_and_folder(project):
    """A notebook that opens its outputs with fs.artifacts.for_notebook() (no name) writes to its own folder: the runner
    names it in the kernel (here two notebooks in one run, so a name left over from the first would show)."""
    body = """
import os
import pandas as pd
import faithlab as fl
import faithlab_study as fs
out = fs.artifacts.for_notebook()
out.table(pd.DataFrame({"name": [out.notebook], "staged": [str(out.folder) == os.environ["FAITHLAB_OUTPUT_DIR"]]}),
          "result")
out.claim("named", paper_value=1, our_value=1, verdict="reproduced")
"""
    write(project, "demo/first", "value = 1\n", body)
    write(project, "other/third", "value = 1\n", body)
    results, _ = run(project, "demo/first", "other/third")
    assert {r.status for r in results.values()} == {"ran"}, {r.name: r.message for r in results.values()}
    generated = project / "book" / "_generated"
    for name in ("demo/first", "other/third"):
        table = pd.read_csv(generated / name / "result.csv")
        assert table["name"].item() == name and bool(table["staged"].item())  # staged, then promoted here
        claims = pd.read_csv(generated / name / outputs.CLAIMS)
        assert claims[["paper", "experiment"]].values.tolist() == [name.split("/")]


# ------------------------------------------------------------------------------------------------ failures


FAILING_BODY = """
import pandas as pd
import faithlab as fl
import faithlab_study as fs
out = fs.artifacts.for_notebook("demo/first")
out.table(pd.DataFrame({"value": [-1]}), "result")
if value > 1:
    raise RuntimeError("deliberate failure for the test")
"""


def test_failure_reports_notebook_and_leaves_no_stale_output(project, capsys):
    generated = project / "book" / "_generated"
    run(project, "demo/first")
    assert (generated / "demo" / "first.ipynb").is_file()

    write(project, "demo/first", "value = 2\n", FAILING_BODY)
    results, messages = run(project, "demo/first")
    failed = results["demo/first"]
    assert failed.status == "failed"
    assert "deliberate failure" in failed.message
    traceback_nb = project / "_build" / "failed" / "demo" / "first.ipynb"
    assert str(traceback_nb) in failed.message and traceback_nb.is_file()
    assert "deliberate failure" in traceback_nb.read_text()
    # The old outputs are gone (no stale page) and the half-written new ones never appeared.
    assert not (generated / "demo" / "first.ipynb").exists()
    assert not (generated / "demo" / "first").exists()
    assert not (generated / ".staging").exists()
    assert any("FAILED demo/first" in m for m in messages)


def test_cli_exit_code_names_failed_notebook(project, capsys):
    write(project, "demo/first", "value = 2\n", FAILING_BODY)
    code = runner.main(["run", "demo", "--profile", "smoke"])
    err = capsys.readouterr().err
    assert code == 1
    assert "demo/first" in err and "failed" in err
    assert runner.main(["run", "demo/none"]) == 2


# ------------------------------------------------------------------------------------------------ kernels


FIGURE_BODY = """
import warnings
import matplotlib.pyplot as plt
import faithlab as fl
import faithlab_study as fs
out = fs.artifacts.for_notebook("demo/first")
fig, ax = plt.subplots()
ax.plot([0, 1], [value, 0])
out.figure(fig, "line")
# %%
import tqdm, tqdm.auto  # the import captum and huggingface_hub make: no "IProgress not found" notice
warnings.warn("Using `tqdm.autonotebook.tqdm` in notebook mode. Use `tqdm.tqdm` instead", tqdm.TqdmExperimentalWarning)
# %%
warnings.warn("a warning of the notebook's own", UserWarning)
"""


def test_kernel_shows_figures_and_no_tqdm_or_kernel_notices(project, capfd):
    """A notebook run by the runner: the cell that calls ``out.figure`` shows the saved PNG, and only it; tqdm's
    notebook-mode notices are silent but the notebook's own warnings are not (they leave the page for its
    ``stderr.log`` and the runner's messages); the kernel logs nothing at start."""
    write(project, "demo/first", "value = 1\n", FIGURE_BODY)
    results, messages = run(project, "demo/first")
    assert results["demo/first"].status == "ran", results["demo/first"].message
    generated = project / "book" / "_generated" / "demo"
    png = generated / "first" / "line.png"
    cells = [c for c in json.loads((generated / "first.ipynb").read_text())["cells"] if c["cell_type"] == "code"]

    def cell(text: str) -> dict:
        return next(c for c in cells if text in "".join(c["source"]))

    def printed(c: dict) -> str:
        return "".join("".join(o.get("text", "")) for o in c["outputs"])

    shown = [o["data"]["image/png"] for o in cell("out.figure(")["outputs"] if "image/png" in o.get("data", {})]
    assert len(shown) == 1 and base64.b64decode("".join(shown[0])) == png.read_bytes()
    # The returned path, last expression of the cell, is not echoed (it would print the staging folder).
    assert [o["output_type"] for o in cell("out.figure(")["outputs"]] == ["display_data"]
    stderr = (generated / "first" / "stderr.log").read_text()
    assert "UserWarning: a warning of the notebook's own" in stderr and "Tqdm" not in stderr
    assert "IProgress" not in stderr and "IProgress" not in printed(cell("import tqdm"))
    assert not printed(cell("notebook's own"))  # off the page
    assert any("a warning of the notebook's own" in m for m in messages if m.startswith("[stderr] demo/first"))
    log = capfd.readouterr()
    assert "[IPKernelApp] WARNING" not in log.out + log.err, log.err[-2000:]


def test_kernel_options_encrypt_instead_of_muting_the_kernel_log():
    import zmq

    options = runner.kernel_options()
    assert options["extra_arguments"][0] == f"--IPKernelApp.exec_lines={runner.KERNEL_STARTUP}"
    if zmq.has("curve"):  # the locked pyzmq wheels have Curve: the kernel's log level is left alone
        assert options["config"]["KernelManager"]["transport_encryption"] == "auto"
        assert not any("log_level" in a for a in options["extra_arguments"])


def test_kernels_stopped_at_once_keep_everything_their_last_cell_did(tmp_path):
    """The runner's kernels are killed when their last cell is done, not shut down gracefully: what that cell printed
    and the file it wrote must still be complete, and the kernel kept no input history (nothing of it half-written)."""
    import nbformat
    import papermill

    options = runner.kernel_options()
    assert options["shutdown_kernel"] == "immediate"
    target = tmp_path / "last.bin"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("print('history', get_ipython().history_manager.enabled)"),
                nbformat.v4.new_code_cell(f"open({str(target)!r}, 'wb').write(bytes(range(256)) * 40_000)\n"
                                          "print('x' * 100_000)")]
    nbformat.write(nb, tmp_path / "in.ipynb")
    out = papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                                     progress_bar=False, log_output=False, **options)
    assert "".join(out.cells[0].outputs[0]["text"]).strip() == "history False"
    assert "".join(o["text"] for o in out.cells[1].outputs if o.get("name") == "stdout").strip() == "x" * 100_000
    assert target.read_bytes() == bytes(range(256)) * 40_000


# ------------------------------------------------------------------------------------------------ outputs


def test_outputs_atomic_table_and_claims(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path / "stage"))
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    out = outputs.for_notebook("paper/exp")
    out.table(pd.DataFrame({"a": [1.5]}), "t")
    assert pd.read_csv(tmp_path / "stage" / "t.csv")["a"].item() == 1.5

    class Boom:
        def to_csv(self, path, **kw):
            Path(path).write_text("half")
            raise OSError("disk full")

    with pytest.raises(OSError):
        out.table(Boom(), "t")
    assert pd.read_csv(tmp_path / "stage" / "t.csv")["a"].item() == 1.5  # the old file is intact
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == ["t.csv"]

    out.claim("c1", paper_value=0.9, our_value=0.8, verdict="partly reproduced")
    out.claim("c1", paper_value=0.9, our_value=0.85, verdict="partly reproduced")
    claims = pd.read_csv(tmp_path / "stage" / outputs.CLAIMS)
    assert claims["our_value"].tolist() == [0.85] and claims["paper"].item() == "paper"
    with pytest.raises(ValueError, match="verdict"):
        out.claim("c2", paper_value=1, our_value=1, verdict="great")
    with pytest.raises(ValueError, match="name"):
        out.table(pd.DataFrame(), "../escape")
    with pytest.raises(ValueError, match="notebook"):
        outputs.for_notebook("no-slash")


def _claim_with_cells(text: str, rule_id: str | None, cells: tuple):
    from faithlab_study.verdicts import Claim, Verdict

    return Claim(claim=text, rule="the lead of the method over Random, above the margin", premise="a premise",
                 paper_value="0.3", our_value="0.1", verdict=Verdict("reproduced, weaker"), rule_id=rule_id,
                 cells=cells, trained=False)


CELL = {"cell": "GradCAM − Random", "values": "0.1;0.12;0.08", "estimate": 0.1, "low": 0.07, "high": 0.13,
        "level": 0.9, "interval": "t on replica means", "df": 2, "zero": 0.0, "margin": 0.2, "direction": "above",
        "outcome": "weaker", "replicas": 3, "units": 90}


def test_outputs_claim_writes_its_cell_table_and_the_claims_row_names_it(tmp_path):
    out = outputs.Outputs("saco/random_vs_methods", tmp_path)
    row = out.claim(_claim_with_cells("S1 (CIFAR): methods beat Random", "S1", (CELL, {**CELL, "cell": "IG"})))
    assert row["cells"] == "cells/S1.csv"
    table = pd.read_csv(tmp_path / "cells" / "S1.csv", keep_default_na=False)
    assert table.columns.tolist() == list(outputs.CELL_COLUMNS)
    assert table["cell"].tolist() == ["GradCAM − Random", "IG"] and table["values"].tolist() == ["0.1;0.12;0.08"] * 2
    assert table["outcome"].tolist() == ["weaker"] * 2 and table["margin"].tolist() == [0.2, 0.2]
    # another claim of the same rule (another data set) gets a table of its own; a claim without cells writes none
    other = out.claim(_claim_with_cells("S1 (MNIST): methods beat Random", "S1", (CELL,)))
    assert other["cells"].startswith("cells/S1-") and other["cells"] != row["cells"]
    bare = out.claim(_claim_with_cells("S2: no cells", "S2", ()))
    assert bare["cells"] == "" and not (tmp_path / "cells" / "S2.csv").exists()
    claims = pd.read_csv(tmp_path / outputs.CLAIMS, keep_default_na=False)
    assert claims["cells"].tolist() == ["cells/S1.csv", other["cells"], ""]
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == sorted(["S1.csv", other["cells"][6:]])
    assert "cells" in outputs.CLAIM_COLUMNS


def test_outputs_cell_table_names_are_plain_file_stems(tmp_path):
    out = outputs.Outputs("p/e", tmp_path)
    row = out.claim(_claim_with_cells("T: a claim", "../../evil/..", (CELL,)))
    assert row["cells"] == "cells/evil.csv" and (tmp_path / "cells" / "evil.csv").is_file()
    assert outputs.cells_slug(None, "F1 (GradCAM, x/y): ranks") == "F1-GradCAM-x-y"  # the label, without its text
    assert outputs.cells_slug("", "../..: x").startswith("claim-")  # nothing plain is left: the text's hash
    assert outputs.cells_slug("a" * 80, "x") == "a" * 60
    # a claim recorded again without cells leaves no stale table behind
    out.claim(_claim_with_cells("T: a claim", "../../evil/..", ()))
    assert not (tmp_path / "cells" / "evil.csv").exists()


def test_outputs_refuse_another_notebooks_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FAITHLAB_NOTEBOOK", "a/b")
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="'a/b'"):
        outputs.for_notebook("c/d")


def test_scorecard_collects_claims(project):
    run(project)
    card = pd.read_csv(project / "book" / "_generated" / SCORECARD)
    assert card["experiment"].tolist() == ["first", "second"]
    assert card["our_value"].tolist() == [2, 20]
    stamp = json.loads((project / "book" / "_generated" / "demo" / "first" / runner.STAMP).read_text())
    assert stamp["params"]["value"] == 1

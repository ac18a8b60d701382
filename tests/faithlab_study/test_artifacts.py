"""The artifact writer's figure call: it saves the PNG, shows it when a Jupyter kernel runs, and closes the figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from faithlab_study import artifacts as outputs


def test_figure_saves_closes_and_shows_only_in_a_kernel(tmp_path, monkeypatch):
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path))
    out = outputs.for_notebook("paper/experiment")
    shown = []
    monkeypatch.setattr(outputs, "_show_in_notebook", lambda png: shown.append(png))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = out.figure(fig, "line")
    assert png == tmp_path / "line.png" and png.stat().st_size > 0
    assert shown == [png]
    assert not plt.fignum_exists(fig.number)


def test_figure_that_breaks_the_style_is_saved_with_a_warning_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path))
    monkeypatch.setattr(outputs, "_show_in_notebook", lambda png: True)
    out = outputs.for_notebook("paper/experiment")
    fig, ax = plt.subplots()
    for i in range(4):
        ax.plot([0, 1], [i, i + 1], label=f"series {i}")
    ax.legend(loc="center")  # over the lines
    ax.set_xlabel("morf_vs_gt")  # a raw column name
    with pytest.warns(UserWarning, match=r"'crowded' breaks the book's figure style: .*legend.*|.*morf_vs_gt"):
        png = out.figure(fig, "crowded")
    assert png.stat().st_size > 0  # saved all the same
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_xlabel("share of pixels removed")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a figure in the style saves silently
        out.figure(fig, "clean")


def test_show_in_notebook_is_a_no_op_outside_a_kernel(tmp_path):
    fig, _ = plt.subplots()
    fig.savefig(tmp_path / "x.png")
    plt.close(fig)
    assert outputs._show_in_notebook(tmp_path / "x.png") is False


def test_figure_name_is_validated(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path))
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="name"):
        outputs.for_notebook("paper/experiment").figure(fig, "../escape")
    plt.close(fig)


def test_every_glued_text_in_the_book_names_a_format():
    """``{glue:text}`path::key``` without a format is split by myst-nb at the last colon (a broken key)."""
    import re

    root = Path(__file__).resolve().parents[2] / "book"
    roles = [
        (page.name, m.group(1))
        for page in root.glob("*.md")
        for m in re.finditer(r"\{glue:text\}`([^`]*)`", page.read_text())
    ]
    assert roles, "the book glues no text: the pattern is wrong"
    broken = [(page, role) for page, role in roles if not re.fullmatch(r"[^:]+::\w+:[^:]*[a-zA-Z%]", role)]
    assert not broken, f"glue roles need path::key:format, e.g. ':.3f' or ':s': {broken}"


# ------------------------------------------------------------------------------------ for_notebook() without a name


@pytest.fixture
def interactive(tmp_path, monkeypatch):
    """No runner, no Jupyter, no notebook script: what for_notebook() sees in a plain interpreter."""
    import sys

    for name in ("FAITHLAB_NOTEBOOK", "FAITHLAB_OUTPUT_DIR", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(tmp_path / "some_script.py"), raising=False)
    monkeypatch.setenv("FAITHLAB_GENERATED", str(tmp_path / "generated"))
    return tmp_path


def test_for_notebook_under_the_runner_takes_the_runners_name_and_folder(interactive, monkeypatch):
    monkeypatch.setenv("FAITHLAB_NOTEBOOK", "saco/case_study")
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(interactive / "staging" / "case_study"))
    monkeypatch.setenv("JPY_SESSION_NAME", str(interactive / "notebooks" / "other" / "nb.py"))  # the runner wins
    out = outputs.for_notebook()
    assert (out.notebook, out.paper, out.experiment) == ("saco/case_study", "saco", "case_study")
    assert out.folder == interactive / "staging" / "case_study"
    assert outputs.for_notebook("saco/case_study").folder == out.folder  # the explicit name still works


def test_for_notebook_without_a_name_outside_the_runner_asks_for_it(interactive):
    with pytest.raises(ValueError, match=r"cannot tell which notebook this is.*pass its name, e\.g\. "
                                         r"faithlab_study\.artifacts\.for_notebook\(\"basics/digits_classifier\"\)"):
        outputs.for_notebook()
    assert outputs.notebook_name() is None
    out = outputs.for_notebook("paper/experiment")  # the explicit name works there
    assert out.folder == interactive / "generated" / "paper" / "experiment" and out.folder.is_dir()


@pytest.mark.parametrize("where", ["jupyter", "jupyter-relative", "script", "vscode"])
def test_for_notebook_finds_the_interactive_notebooks_name(interactive, monkeypatch, where):
    import sys

    source = interactive / "repo" / "notebooks" / "fewclass" / "flips.py"
    source.parent.mkdir(parents=True)
    source.write_text("# a notebook\n")
    if where == "jupyter":  # Jupyter Server 2 names the opened file to its kernel
        monkeypatch.setenv("JPY_SESSION_NAME", "repo/notebooks/fewclass/flips.py")
    elif where == "jupyter-relative":  # served from notebooks/: the kernel runs in the notebook's folder
        monkeypatch.setenv("JPY_SESSION_NAME", "fewclass/flips.py")
        monkeypatch.chdir(source.parent)
    elif where == "script":  # python notebooks/fewclass/flips.py, or %run
        monkeypatch.setattr(sys.modules["__main__"], "__file__", str(source))
    else:
        monkeypatch.setattr(outputs, "_in_kernel", lambda: True)
        shell = type("Shell", (), {"user_ns": {"__vsc_ipynb_file__": str(source.with_suffix(".ipynb"))}})()
        monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    out = outputs.for_notebook()
    assert out.notebook == "fewclass/flips"
    assert out.folder == interactive / "generated" / "fewclass" / "flips"


@pytest.mark.parametrize("session", ["Untitled.ipynb", "fewclass/flips.py", "analysis/notes/flips.py",
                                     "notebooks/fewclass/flips.txt", "notebooks/flips.py"])
def test_for_notebook_does_not_guess_from_a_file_outside_notebooks(interactive, monkeypatch, session):
    monkeypatch.setenv("JPY_SESSION_NAME", session)  # fewclass/flips.py: no such file in the working directory
    with pytest.raises(ValueError, match="pass its name"):
        outputs.for_notebook()


def test_figure_records_its_panel_grid_and_captions_are_checked_against_it(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import captions

    from faithlab_study import artifacts as O

    fig, axes = plt.subplots(2, 3)
    assert O.panel_grid(fig) == (2, 3)
    fig, axes = plt.subplots(1, 2)
    image = axes[0].imshow([[0.0, 1.0]])
    fig.colorbar(image, ax=axes[0])  # a colour bar is not a panel
    assert O.panel_grid(fig) == (1, 2)
    png = O.Outputs("p/e", tmp_path).figure(fig, "two")
    assert captions.read_panel_grid(png) == (1, 2)
    fig = plt.figure()
    fig.savefig(tmp_path / "bare.png")
    assert captions.read_panel_grid(tmp_path / "bare.png") is None  # not written by Outputs: nothing recorded
    assert captions.caption_positions("ReCo (left) and MeGe (right)") == {"column"}
    assert captions.caption_positions("MeGe (top) and ReCo (bottom row)") == {"row"}
    assert captions.caption_positions("the top row, then left/right halves") == {"row", "column"}
    assert captions.caption_positions("S= moves left as the models agree; the bottom line is") == set()
    assert captions.caption_problems("ReCo (left) and MeGe (right)", (2, 1)) == [
        "names left/right panels but the figure has 1 column(s) of panels"]
    assert captions.caption_problems("maps (top) and distances (bottom)", (1, 1)) == [
        "names top/bottom panels but the figure has 1 row(s) of panels"]
    assert captions.caption_problems("maps (top) and distances (bottom)", (2, 1)) == []


def test_a_cell_ending_with_a_glue_shows_no_stray_value(tmp_path):
    """In a kernel, ``out.glue`` records the value for the book (a glue output) and returns nothing: a cell whose last
    statement is a glue must not also show the value as the cell's result (a bare "10" on the page)."""
    import nbformat
    import papermill

    from faithlab_study import runner

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("import faithlab_study as fs\nout = fs.artifacts.for_notebook('demo/page')\n"
                                          "out.glue('n_sigmas', 10)")]
    nbformat.write(nb, tmp_path / "in.ipynb")
    done = papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                                      kernel_name="python3", progress_bar=False, log_output=False, cwd=str(tmp_path),
                                      **runner.kernel_options())
    outputs = done.cells[0].outputs
    assert [o["output_type"] for o in outputs] == ["display_data"], outputs  # the glue record, no cell result
    assert outputs[0]["metadata"]["scrapbook"]["name"] == "n_sigmas"


def _claim_mean_positive(frame):
    """A claim function for the test below: the mean of ``value`` is positive (an identity, exact)."""
    from faithlab_study.verdicts import Claim, ladder

    return Claim("mean is positive", rule="the mean of the values, against zero", premise="the values are given",
                 paper_value="> 0", our_value=f"{frame['value'].mean():.2f}", verdict=ladder(frame["value"].mean() > 0),
                 kind="study check", trained=False)


def test_claim_records_the_claim_its_caller_decided(tmp_path):
    """out.claim records: the caller decides (faithlab_study.verdicts.replicated), and the row names the function that
    decided, so that the scorecard finds its rule's commit; a claim function handed over undecided is refused."""
    import pandas as pd

    from faithlab_study.verdicts import replicated

    frame = pd.DataFrame({"value": [1.0, 2.0, 3.0]})
    out = outputs.Outputs("p/e", tmp_path)
    row = out.claim(replicated(_claim_mean_positive, frame))
    assert row["function"] == f"{__name__}._claim_mean_positive"
    assert row["claim"] == "mean is positive" and row["kind"] == "study check" and row.claim.function == row["function"]
    saved = pd.read_csv(tmp_path / outputs.CLAIMS)
    assert saved["function"][0] == row["function"]
    with pytest.raises(TypeError):  # its arguments have no place here: replicated takes them
        out.claim(_claim_mean_positive, frame)
    with pytest.raises(TypeError, match="decide it first"):
        out.claim(_claim_mean_positive)


def test_rules_shows_the_registered_rules_and_nothing_else(tmp_path, monkeypatch):
    """A notebook names its claims; the rules it shows come from the registry (issue 90: rules written once)."""
    from faithlab_study import verdicts

    out = outputs.Outputs("ffidelity/robustness", tmp_path)
    shown = []
    monkeypatch.setattr(outputs, "_in_kernel", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    assert out.rules("D3.accuracy", "F1") is None
    (listed,) = shown
    text = listed._repr_markdown_()
    for cid in ("D3.accuracy", "F1"):
        rule = verdicts.rule(cid)
        assert f"**{cid}** *{rule.claim}*" in text and rule.margin_source in text and rule.decision_text() in text
    assert text.count("\n- ") == 1
    with pytest.raises(ValueError, match="no rule"):
        out.rules("F99")

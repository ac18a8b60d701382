"""The artifact writer's figure call: it saves the PNG, shows it when a Jupyter kernel runs, and closes the figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from faithlab import outputs


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

    root = Path(__file__).resolve().parents[1] / "book"
    roles = [
        (page.name, m.group(1))
        for page in root.glob("*.md")
        for m in re.finditer(r"\{glue:text\}`([^`]*)`", page.read_text())
    ]
    assert roles, "the book glues no text: the pattern is wrong"
    broken = [(page, role) for page, role in roles if not re.fullmatch(r"[^:]+::\w+:[^:]*[a-zA-Z%]", role)]
    assert not broken, f"glue roles need path::key:format, e.g. ':.3f' or ':s': {broken}"

"""Executed notebooks as pages of the book (faithlab_study.book.notebook_page, faithlab_study.book.html.claim_html): one
parameters cell, the chapter link and the run time first, every claim shown once where it is computed, no stderr
on the page (but in a log and on the runner's terminal), no library progress bar in the runner's kernels."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch

from faithlab_study.book import html as fhtml
from faithlab_study import runner
from faithlab import _progress

from faithlab_study import artifacts as outputs
from faithlab_study.book import notebook_page

HEADER = "# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"

PAGE = HEADER + textwrap.dedent('''\
    # %% [markdown]
    # # A page
    # Its title cell.

    # %% tags=["parameters"]
    NAME = "demo/page"
    value = 1  # changed by the profile's defaults
    label = "default"  # changed by the profile for this notebook
    sizes = [1, 2]
    unused = None
    levels = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]

    # %%
    import sys
    import warnings

    import faithlab as fl
    import faithlab_study as fs

    import faithlab_study as fs
    from faithlab import _progress
    from tqdm import tqdm

    out = fs.artifacts.for_notebook(NAME)
    for _ in tqdm(range(3), desc="library-style bar", disable=not _progress.enabled(None)):
        pass
    print("progress default:", _progress.enabled(None))

    # %%
    for i in range(2):  # recorded in a loop: not a cell's last expression
        out.claim(f"looped <{i}>", paper_value=i, our_value=i, verdict="reproduced")
    print("after the loop")

    # %%
    print("to stderr", file=sys.stderr)
    warnings.warn("a warning of the notebook's own", UserWarning)
    print("on stdout")

    # %%
    kept = out.claim("last & final", paper_value="0.9", our_value="0.8", verdict="partly reproduced",
                     note="a <b>note</b>")
    kept

    # %%
    kept

    # %%
    from faithlab_study.verdicts import Claim, Verdict
    cell = {"cell": "GradCAM − Random", "values": "0.1;0.2", "outcome": "weaker"}
    with_cells = Claim(claim="W1: a claim with its cells", rule="the lead over Random, above the margin",
                       premise="a premise", paper_value="0.3", our_value="0.15", verdict=Verdict("reproduced, weaker"),
                       rule_id="W1", trained=False, cells=(cell,))
    out.claim(with_cells)
    print("recorded with its cells")
    ''')

SHARDED = HEADER + textwrap.dedent('''\
    # %% tags=["parameters"]
    shard = None
    n_shards = 1

    # %% tags=["shard"]
    import pandas as pd
    import faithlab as fl
    import faithlab_study as fs

    table = fs.artifacts.sharded("rows", lambda items: pd.DataFrame({"i": list(items)}), 4, shard=shard,
                               n_shards=n_shards)

    # %%
    fs.artifacts.for_notebook("other/sharded").table(table, "rows")
    ''')

TOC = textwrap.dedent('''\
    format: jb-book
    root: intro
    parts:
      - caption: The study
        chapters:
          - file: demo
            sections:
              - file: demo/part
                sections:
                  - file: _generated/demo/page
          - file: other
            sections:
              - file: _generated/other/plain
    ''')


def _write(root: Path, name: str, text: str) -> None:
    path = root / "notebooks" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A throw-away project with a book: demo/page listed under the sub-page demo/part (whose own chapter demo.md
    is not the answer), other/plain under other.md, other/sharded in no toc entry (falls back to other.md);
    demo/page run with the smoke profile and a command-line override, other/sharded as 2 shards."""
    root = tmp_path_factory.mktemp("pages") / "proj"
    (root / "notebooks" / "params").mkdir(parents=True)
    (root / "_config.yml").write_text("title: t\n")
    (root / "uv.lock").write_text("lock v1\n")
    for profile in runner.PROFILES:
        (root / "notebooks" / "params" / f"{profile}.yaml").write_text(
            "defaults: {value: 5}\nnotebooks:\n  demo/page: {label: from the profile}\n")
    _write(root, "demo/page", PAGE)
    _write(root, "other/plain", HEADER + '# %% tags=["parameters"]\nx = 1\n\n# %%\nx\n')
    _write(root, "other/sharded", SHARDED)
    book = root / "book"
    (book / "demo").mkdir(parents=True)
    (book / "_toc.yml").write_text(TOC)
    (book / "demo.md").write_text("# The demo chapter\n")
    (book / "demo" / "part.md").write_text("---\nfile_format: mystnb\n---\n# Demo [part] page\n\nText.\n")
    (book / "other.md").write_text("Some text first.\n\n# Other chapter\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAITHLAB_ROOT", str(root))
        mp.delenv("FAITHLAB_GENERATED", raising=False)
        mp.delenv(_progress.ENV, raising=False)
        mp.setattr(runner.stamps, "library_hash", lambda: "library v1")
        messages: list[str] = []
        generated = book / "_generated"
        results = runner.run(["demo/page"], profile="smoke", overrides={"sizes": [3]}, root=root,
                            generated=generated, echo=messages.append)
        results += runner.run(["other/sharded"], profile="smoke", overrides={"n_shards": 2}, root=root,
                             generated=generated, echo=messages.append, jobs=2)
        yield root, {r.name: r for r in results}, messages


def _cells(root: Path, name: str) -> list[dict]:
    return json.loads((root / "book" / "_generated" / f"{name}.ipynb").read_text())["cells"]


def _tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _visible(cells: list[dict]) -> list[dict]:
    return [c for c in cells if not {"remove-cell", "remove-input"} & set(_tags(c))]


def _html(cell: dict) -> list[str]:
    return ["".join(o["data"]["text/html"]) for o in cell.get("outputs", []) if "text/html" in o.get("data", {})]


def _cell(cells: list[dict], text: str) -> dict:
    return next(c for c in cells if text in "".join(c["source"]))


def test_the_page_runs(site):
    _, results, _ = site
    assert results["demo/page"].status == "ran", results["demo/page"].message
    assert results["other/sharded"].status == "ran", results["other/sharded"].message


def test_one_visible_parameters_cell_holds_every_effective_parameter(site):
    root, _, _ = site
    cells = _cells(root, "demo/page")
    params = [c for c in cells if {"parameters", "injected-parameters"} & set(_tags(c))]
    shown = _visible(params)
    assert len(params) == 2 and len(shown) == 1
    source = "".join(shown[0]["source"])
    assert source.splitlines()[0] == "# this run's parameters (profile smoke)"
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body}
    levels = [round(0.05 * i, 2) for i in range(19)]
    effective = {"NAME": "demo/page", "value": 5, "label": "from the profile", "sizes": [3], "unused": None,
                 "levels": levels}
    assert values == effective
    assert max(map(len, source.splitlines())) <= 88  # the long list is wrapped to the page's code column
    # Re-running the executed notebook: its parameters cells, in order, still leave this run's values.
    namespace: dict = {}
    for cell in params:
        exec("".join(cell["source"]), namespace)  # noqa: S102 - literals written by this test's runner
    assert {k: namespace[k] for k in effective} == effective


def _header(cells: list[dict]) -> dict:
    (header,) = [c for c in cells if notebook_page.HEADER_TAG in _tags(c)]
    return header


def test_first_cell_links_the_chapter_page_of_the_toc_and_gives_the_run_time(site):
    root, results, _ = site
    cells = _cells(root, "demo/page")
    titled = cells[0]["cell_type"] == "markdown" and "".join(cells[0]["source"]).startswith("# ")
    first = cells[1 if titled else 0]  # under the page's title when it has one
    assert first["cell_type"] == "markdown" and notebook_page.HEADER_TAG in _tags(first)
    assert sum(notebook_page.HEADER_TAG in _tags(c) for c in cells) == 1
    text = "".join(first["source"])
    # demo/page's parent in the toc is the sub-page demo/part (not demo.md); its title's brackets are escaped
    assert text.startswith(r"Part of the chapter [Demo \[part\] page](../../demo/part.md).")
    ran = re.search(r"This page ran in (\d+) s with the smoke profile on (.+), (\d{4}-\d\d-\d\d)\.$", text)
    assert ran, text
    assert abs(int(ran.group(1)) - results["demo/page"].seconds) <= 2
    assert "CPU core" in ran.group(2)
    # a notebook in no toc entry links to book/<paper>.md, titled by its first heading
    sharded = "".join(_header(_cells(root, "other/sharded"))["source"])
    assert sharded.startswith("Part of the chapter [Other chapter](../../other.md).")


def test_sharded_notebook_page_counts_its_shards(site):
    root, _, _ = site
    cells = _cells(root, "other/sharded")
    assert "(2 shards and a reduce step) with the smoke profile" in "".join(_header(cells)["source"])
    shown = _visible([c for c in cells if {"parameters", "injected-parameters"} & set(_tags(c))])
    assert len(shown) == 1 and "n_shards = 2" in "".join(shown[0]["source"])


def test_no_stderr_on_the_page_but_in_the_log_and_on_the_terminal(site):
    root, _, messages = site
    cells = _cells(root, "demo/page")
    streams = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "stream"]
    assert streams and all(o["name"] == "stdout" for o in streams)
    printed = "".join("".join(o["text"]) for o in streams)
    assert "progress default: False" in printed and "on stdout" in printed
    log = (root / "book" / "_generated" / "demo" / "page" / notebook_page.STDERR_LOG).read_text()
    assert "to stderr" in log and "UserWarning: a warning of the notebook's own" in log
    assert "library-style bar" not in log  # the runner's kernels have the library's progress bars off
    echoed = [m for m in messages if m.startswith("[stderr] demo/page")]
    assert len(echoed) == 1 and "to stderr" in echoed[0] and str(notebook_page.STDERR_LOG) in echoed[0]
    assert not (root / "book" / "_generated" / "other" / "sharded" / notebook_page.STDERR_LOG).exists()


def test_every_claim_is_shown_once_as_a_row_with_its_anchor_and_badge(site):
    root, _, _ = site
    cells = _cells(root, "demo/page")
    rows = [h for c in cells for h in _html(c)]
    assert len(rows) == 4  # two in the loop, one mid-cell, one with its cells; the echoed `kept` adds none
    loop = _html(_cell(cells, "for i in range(2)"))
    assert len(loop) == 2
    for i, row in enumerate(loop):
        assert f'id="{fhtml.claim_anchor(f"looped <{i}>")}"' in row
        assert f"looped &lt;{i}&gt;" in row and fhtml.verdict_badge("reproduced") in row
    [last] = _html(_cell(cells, "kept = out.claim("))
    assert f'id="{fhtml.claim_anchor("last & final")}"' in last and "last &amp; final" in last
    assert fhtml.verdict_badge("partly reproduced") in last and "a &lt;b&gt;note&lt;/b&gt;" in last
    echo = [c for c in cells if "".join(c["source"]).strip() == "kept"]
    assert echo and echo[0]["outputs"] == []


def test_a_claims_cell_table_is_promoted_with_the_notebook_and_linked_from_its_row(site):
    root, _, _ = site
    [row] = _html(_cell(_cells(root, "demo/page"), "out.claim(with_cells)"))
    assert fhtml.verdict_badge("reproduced, weaker") in row
    assert f'<a href="page/cells/W1.csv">{fhtml.CELLS_LINK}</a>' in row  # beside the page, page.html
    table = root / "book" / "_generated" / "demo" / "page" / "cells" / "W1.csv"
    assert table.read_text().splitlines()[0] == ",".join(outputs.CELL_COLUMNS)


def test_a_cached_notebook_keeps_its_page(site):
    root, _, _ = site
    before = (root / "book" / "_generated" / "demo" / "page.ipynb").read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAITHLAB_ROOT", str(root))
        mp.setattr(runner.stamps, "library_hash", lambda: "library v1")
        again = runner.run(["demo/page"], profile="smoke", overrides={"sizes": [3]}, root=root,
                          generated=root / "book" / "_generated", echo=lambda *_: None)
    assert [r.status for r in again] == ["cached"]
    assert (root / "book" / "_generated" / "demo" / "page.ipynb").read_bytes() == before


# ------------------------------------------------------------------------------------------------ units


def test_claim_html_escapes_every_text_and_folds_the_rule():
    row = {"paper": "p", "experiment": "e", "claim": 'C1: <script>alert("x")</script>', "paper_value": None,
           "our_value": float("nan"), "verdict": "not testable here", "rule": "a < b", "premise": "", "note": "n & m"}
    text = fhtml.claim_html(row)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert text.startswith(f'<table class="fl-glance fl-claim-row" id="{fhtml.claim_anchor(row["claim"])}">')
    assert fhtml.verdict_badge("not testable here") in text
    assert "<details" in text and "<b>rule</b>: a &lt; b" in text and "<b>note</b>: n &amp; m" in text
    assert "premise" not in text.split("<summary>")[1].split("</summary>")[1]  # an empty premise is left out
    assert text.count("<td>–</td>") == 2  # missing paper and our values
    assert outputs.ClaimRow(row)._repr_html_() == text


def test_claim_is_not_displayed_outside_a_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_OUTPUT_DIR", str(tmp_path))
    monkeypatch.delenv("FAITHLAB_NOTEBOOK", raising=False)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a))
    row = outputs.for_notebook("p/e").claim("c", paper_value=1, our_value=1, verdict="reproduced")
    assert row["claim"] == "c" and shown == []
    monkeypatch.setattr(outputs, "_in_kernel", lambda: True)
    outputs.for_notebook("p/e").claim("d", paper_value=1, our_value=1, verdict="reproduced")
    assert len(shown) == 1 and isinstance(shown[0][0], outputs.ClaimRow) and shown[0][0].row["claim"] == "d"


def test_chapter_page_reads_the_toc_and_falls_back(tmp_path):
    book = tmp_path / "book"
    (book / "ffidelity").mkdir(parents=True)
    (book / "_toc.yml").write_text(textwrap.dedent('''\
        format: jb-book
        root: intro
        parts:
          - caption: c
            chapters:
              - file: ffidelity
                sections:
                  - file: ffidelity/ranking.md
                    sections:
                      - file: _generated/ffidelity/images_ranking
              - file: synthesis
                sections:
                  - file: _generated/templates/evaluate_your_explainer
        '''))
    for page in ("ffidelity.md", "ffidelity/ranking.md", "synthesis.md", "templates.md"):
        (book / page).write_text("# t\n")
    assert notebook_page.chapter_page("ffidelity", "images_ranking", book) == book / "ffidelity" / "ranking.md"
    assert notebook_page.chapter_page("templates", "evaluate_your_explainer", book) == book / "synthesis.md"
    assert notebook_page.chapter_page("ffidelity", "other", book) == book / "ffidelity.md"  # not in the toc
    (book / "synthesis.md").unlink()  # a toc parent without its page: the paper's page
    assert notebook_page.chapter_page("templates", "evaluate_your_explainer", book) == book / "templates.md"
    assert notebook_page.chapter_page("nopaper", "x", book) is None


def test_finish_without_injected_parameters_heads_the_notebooks_own_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("a", outputs=[nbformat.v4.new_output("stream", name="stderr", text="noise\n")])])
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, str(path))
    said: list[str] = []
    notebook_page.finish(path, name="p/x", params={"a": 1}, profile=None, seconds=75, root=tmp_path,
                         generated=tmp_path / "gen", log_folder=tmp_path, echo=said.append)
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[0].source.startswith("Part of the study (no chapter page lists it).\nThis page ran in 1 min 15 s "
                                      "with no profile on ")
    assert cells[1].source == "# this run's parameters (no profile)\na = 1" and "remove-cell" not in _tags(cells[1])
    assert cells[2].outputs == [] and (tmp_path / notebook_page.STDERR_LOG).read_text().endswith("noise\n")
    assert len(said) == 1 and "noise" in said[0]


# ------------------------------------------------------------------------------------------------ progress


@pytest.mark.parametrize("env, given, shown", [(None, None, True), ("0", None, False), ("off", None, False),
                                               ("0", True, True), ("1", False, False)])
def test_progress_default_follows_the_environment(monkeypatch, env, given, shown):
    if env is None:
        monkeypatch.delenv(_progress.ENV, raising=False)
    else:
        monkeypatch.setenv(_progress.ENV, env)
    assert _progress.enabled(given) is shown


def test_progress_rejects_a_non_boolean():
    with pytest.raises(TypeError, match="progress"):
        _progress.enabled("no")


def test_fit_and_evaluate_bars_obey_the_environment(monkeypatch, capsys):
    import faithlab as fl
    import faithlab_study as fs

    data = fl.data.TensorData(torch.randn(16, 1, 8, 8), torch.arange(16) % 2)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2)).eval()
    config = fl.train.TrainConfig(epochs=2, batch_size=8, seed=0)

    def bars(env: str | None, **progress) -> str:
        if env is None:
            monkeypatch.delenv(_progress.ENV, raising=False)
        else:
            monkeypatch.setenv(_progress.ENV, env)
        capsys.readouterr()
        fl.train.fit("small_cnn", {"in_channels": 1, "n_classes": 2}, data, config, data_key="pages-test",
                     cache=False, device="cpu", **progress)
        fl.evaluate(model, data.x, data.y, torch.rand(16, 1, 8, 8), metrics=["fid+"], sparsity=[0.5], **progress)
        return capsys.readouterr().err

    shown = bars(None)
    assert "small_cnn" in shown and "evaluate" in shown
    assert bars("0") == ""
    forced = bars("0", progress=True)
    assert "small_cnn" in forced and "evaluate" in forced


def test_chapter_link_is_relative_to_the_book_being_built_wherever_the_runner_writes(tmp_path):
    """The runner may write into another copy's _generated (the test suite's smoke book does): the link still goes
    two folders up from <book>/_generated/<paper>/ to the chapter page, never through the writer's own paths."""
    book = tmp_path / "root" / "book"
    (book / "ffidelity").mkdir(parents=True)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: ffidelity\n    sections:\n"
                                   "      - file: ffidelity/ranking\n        sections:\n"
                                   "          - file: _generated/ffidelity/images_ranking\n")
    (book / "ffidelity" / "ranking.md").write_text("# Ranking\n")
    path = tmp_path / "x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# The title\nIntro."),
                                                   nbformat.v4.new_code_cell("a = 1")]), str(path))
    elsewhere = tmp_path / "site" / "book" / "_generated"
    notebook_page.finish(path, name="ffidelity/images_ranking", params={"a": 1}, profile="smoke", seconds=3,
                         root=tmp_path / "root", generated=elsewhere, log_folder=tmp_path, echo=lambda _: None)
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[0].source.startswith("# The title")  # the link and run time come under the page's title
    assert cells[1].source.startswith("Part of the chapter [Ranking](../../ffidelity/ranking.md).")

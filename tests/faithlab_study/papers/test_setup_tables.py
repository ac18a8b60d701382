"""The chapters' set-up tables (``SETUP`` of each protocol module, :class:`faithlab_study.papers.setup.Setting`): every
row names an existing notebook, reads only parameters that notebook defines, and renders to a short cell under every
profile, so the book's "paper vs ours" table is filled from the executed parameters and never breaks a build."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from faithlab_study import runner
from faithlab_study.papers.setup import Setting

ROOT = Path(__file__).resolve().parents[3]
PAPERS = ("ffidelity", "fewclass", "saco", "reco_mege", "trace")
MODULES = (*PAPERS, "basics", "synthesis")
PROFILES = tuple(sorted(path.stem for path in (ROOT / "notebooks" / "params").glob("*.yaml")))
CELL = 60  # characters: a cell of about 250 px


@pytest.fixture(scope="module")
def notebooks() -> dict[str, runner.Notebook]:
    return {nb.name: nb for nb in runner.discover(ROOT)}


@pytest.fixture(scope="module")
def profiles() -> dict[str, dict]:
    return {name: runner.load_profile(name, ROOT) for name in PROFILES}


def setup_rows(module: str) -> tuple[Setting, ...]:
    return importlib.import_module(f"faithlab_study.papers.{module}").SETUP


def rows():
    return [pytest.param(row, id=f"{module}:{row.setting}") for module in MODULES for row in setup_rows(module)]


def test_profiles_include_smoke_book_and_paper():
    assert {"smoke", "book", "paper"} <= set(PROFILES)


@pytest.mark.parametrize("module", MODULES)
def test_module_table_has_distinct_settings(module):
    table = setup_rows(module)
    assert isinstance(table, tuple) and all(isinstance(row, Setting) for row in table)
    low = 6 if module in PAPERS else 3
    assert low <= len(table) <= 12, f"{module}: {len(table)} rows"
    labels = [row.setting for row in table]
    assert len(set(labels)) == len(labels), f"{module} repeats a setting: {labels}"


@pytest.mark.parametrize("row", rows())
def test_row_reads_its_notebooks_parameters(row, notebooks):
    assert row.notebook in notebooks, f"{row.setting!r}: no notebook {row.notebook!r}"
    assert row.setting.strip() and row.paper.strip()
    assert len(row.paper) <= CELL, f"paper cell of {row.setting!r} is {len(row.paper)} characters: {row.paper!r}"
    unknown = row.names() - set(notebooks[row.notebook].defaults)
    assert not unknown, f"{row.setting!r} reads {sorted(unknown)}, not parameters of {row.notebook}"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("row", rows())
def test_row_renders_a_short_cell_in_every_profile(row, profile, notebooks, profiles):
    nb = notebooks[row.notebook]
    params = runner.merge_parameters(nb, profile, profiles[profile], {})
    text = row.render(params)
    assert isinstance(text, str) and text.strip(), f"{row.setting!r} renders empty under {profile}"
    assert len(text) <= CELL, f"{row.setting!r} under {profile}: {len(text)} characters: {text!r}"
    assert "None" not in text, f"{row.setting!r} under {profile} shows a raw None: {text!r}"


@pytest.mark.parametrize("module", MODULES)
def test_ours_follows_the_profile(module, notebooks, profiles):
    """A table whose "ours" column is the same under the smoke and paper profiles would be typed, not read."""
    def column(profile):
        return [row.render(runner.merge_parameters(notebooks[row.notebook], profile, profiles[profile], {}))
                for row in setup_rows(module)]

    smoke, paper = column("smoke"), column("paper")
    changed = sum(a != b for a, b in zip(smoke, paper, strict=True))
    assert changed >= len(smoke) // 2, f"{module}: only {changed} of {len(smoke)} rows follow the parameters"


@pytest.mark.parametrize("row", [r for r in rows() if r.values[0].names()])
def test_template_row_names_a_missing_parameter(row, notebooks):
    for missing in sorted(row.names()):
        params = dict(notebooks[row.notebook].defaults)
        del params[missing]
        with pytest.raises(KeyError, match=rf"{row.notebook} has no parameter \['{missing}'\]"):
            row.render(params)


def test_setting_template_renders_and_names_its_fields():
    row = Setting("images per task", "2,500", "fewclass/fidelity", "{n_images:,} per task, {cfg[k]} / {obj.x}")
    assert row.names() == {"n_images", "cfg", "obj"}
    assert row.render({"n_images": 2500, "cfg": {"k": 5}, "obj": type("O", (), {"x": "y"})(), "extra": 0}) \
        == "2,500 per task, 5 / y"


def test_setting_template_missing_parameter_raises_key_error_naming_it():
    row = Setting("β, α", "β = 0.1", "ffidelity/images_ranking", "β = {beta}, α = {alpha}")
    with pytest.raises(KeyError, match=r"ffidelity/images_ranking has no parameter \['alpha'\].*β, α"):
        row.render({"beta": 0.1})


def test_setting_function_reads_the_dict():
    row = Setting("models", "ResNet-18", "trace/table1", lambda p: ", ".join(s["name"] for s in p["settings"]))
    assert row.names() == set()
    assert row.render({"settings": [{"name": "ResNet-9"}, {"name": "VGG-small"}]}) == "ResNet-9, VGG-small"
    with pytest.raises(KeyError, match="settings"):
        row.render({})


def test_setting_function_result_is_text():
    assert Setting("k", "k = 5", "reco_mege/tables", lambda p: p["k"]).render({"k": 5}) == "5"

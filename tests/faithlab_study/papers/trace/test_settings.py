"""TRACE's canvas models are one named setting (fs.papers.trace.TraceModels): the three notebooks read the same
one under every profile, so that they train (and share from the cache) the very same classifiers; and TRACE's, Few-class
Fidelity's and SaCo's protocols reach faithlab.metrics and faithlab.perturb through public names only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import faithlab as fl
import faithlab_study as fs
from faithlab_study.runner import parameters

NOTEBOOKS = ("trace/table1", "trace/searches", "trace/random_test")
PROTOCOLS = Path(fs.__file__).parent / "papers"
LOWER = ("faithlab.metrics", "faithlab.perturb")


def _merged(profile: str) -> dict[str, dict]:
    notebooks = {nb.name: nb for nb in parameters.discover()}
    spec = parameters.load_profile(profile)
    return {name: parameters.merge_parameters(notebooks[name], profile, spec, {}) for name in NOTEBOOKS}


@pytest.mark.parametrize("profile", parameters.PROFILES)
def test_the_three_notebooks_train_the_same_canvas_models(profile):
    merged = _merged(profile)
    settings = {name: fs.papers.trace.TraceModels(**p["trace_models"]) for name, p in merged.items()}
    assert settings["trace/table1"] == settings["trace/searches"] == settings["trace/random_test"]
    for name, p in merged.items():  # no notebook keeps a model setting of its own beside the shared one
        assert not {"settings", "image_size", "r"} & set(p), name


def test_smoke_sets_the_models_once_and_book_keeps_the_defaults():
    smoke = fs.papers.trace.TraceModels(**_merged("smoke")["trace/table1"]["trace_models"])
    assert smoke.image_size == 14 and [s["n_epochs"] for s in smoke.settings] == [1]
    book = {name: p["trace_models"] for name, p in _merged("book").items()}
    assert book == dict.fromkeys(NOTEBOOKS, {})
    defaults = fs.papers.trace.TraceModels()
    assert [s["name"] for s in defaults.settings] == ["ResNet-9", "VGG-small", "MobileNet-small"]
    from faithlab_study.papers.trace.setup import DENSENET_SMALL
    assert DENSENET_SMALL["model"] == "densenet_small"  # the fourth, left out of the book
    assert (defaults.image_size, defaults.r) == (28, 0.45)


def test_canvas_models_first_and_checks():
    c = fs.papers.trace.TraceModels(settings=[{"name": "a", "model": "resnet9", "width": 1, "n_epochs": 2},
                                                  {"name": "b", "model": "vgg_small", "width": 8, "n_epochs": 3}])
    assert [s["name"] for s in c.first()] == ["a", "b"] and [s["name"] for s in c.first(1)] == ["a"]
    assert c.first(5) == c.first() and c.first()[0] is not c.settings[0]  # copies: a caller cannot edit the setting
    assert c == fs.papers.trace.TraceModels(settings=tuple(c.settings))  # a YAML list equals the tuple
    with pytest.raises(TypeError, match="n_epochs"):
        fs.papers.trace.TraceModels(n_epochs=3)
    with pytest.raises(TypeError, match="settings"):
        fs.papers.trace.TraceModels(settings="resnet9")


def test_setup_table_reads_the_shared_models():
    p = {**_merged("smoke")["trace/table1"], "torchvision_models": []}
    rows = {row.setting: row.render(p) for row in fs.papers.trace.SETUP if row.notebook == "trace/table1"}
    assert rows["models"] == "ResNet-9" and rows["training"] == "trained here: 1 epochs"
    assert rows["data"] == "coloured digit canvases, 14 px (digit 45 %)"
    assert rows["TRACE-SA schedule"].startswith("K = 10, T0 = 0.1 (-p) / 2 (-y)")
    assert fl.metrics.search.T0 == {"prob": 0.1, "logit": 2.0}


def _private_uses(path: Path) -> list[str]:
    """Private names of faithlab.metrics / faithlab.perturb that a module imports or reads off an imported module."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(LOWER):
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            modules |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "faithlab":
            modules |= {a.asname or a.name for a in node.names if a.name in ("metrics", "perturb")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(ast.unparse(node))
    return found


@pytest.mark.parametrize("package", ["trace", "fewclass", "saco"])
def test_protocols_use_public_names_of_metrics_and_perturb(package):
    files = sorted((PROTOCOLS / package).rglob("*.py"))
    assert len(files) >= 5, f"protocols/{package} is a package of modules by concept"
    used = {str(f.relative_to(PROTOCOLS)): _private_uses(f) for f in files}
    assert not {k: v for k, v in used.items() if v}


def test_the_private_name_check_bites(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from faithlab.metrics import search, _x\nfrom faithlab import perturb\n"
                   "a = search._T0\nb = perturb.engine._logits\nc = search.T0\n")
    assert _private_uses(bad) == ["faithlab.metrics._x", "search._T0", "perturb.engine._logits"]

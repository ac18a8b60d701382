"""TRACE's published numbers live in ``faithlab_study.papers.trace.paper`` only: spot checks against Table 1's
ResNet-18 rows (typed by hand from the paper's text), the quoted values of the claims, and no notebook typing them."""

import re
from pathlib import Path

import pytest

from faithlab_study.papers.trace import paper

NOTEBOOKS = Path(__file__).resolve().parents[4] / "notebooks"


def test_table1_resnet18_rows():
    t = paper.TABLE1_RESNET18.set_index("reference")
    assert list(t.index) == ["zero", "mean", "blur"]
    # Table 1 (i): Zero T-y 24.98, T-p 31.69, GC 16.24, IxG 8.21; Mean EP 12.96; Blurring IBA 16.41, IG 10.04
    assert t.loc["zero", "T-y"] == 24.98
    assert t.loc["zero", "T-p"] == 31.69
    assert t.loc["zero", "GC"] == 16.24
    assert t.loc["zero", "IxG"] == 8.21
    assert t.loc["mean", "EP"] == 12.96
    assert t.loc["blur", "IBA"] == 16.41
    assert t.loc["blur", "IG"] == 10.04
    assert list(t.columns[2:]) == paper.TABLE1_METHOD_COLUMNS


def test_versus_best_reads_the_table():
    assert paper.versus_best("zero") == "31.69 vs best 16.24, ×1.95"
    assert paper.versus_best("blur") == "33.84 vs best 17.38, ×1.95"


def registrations_aside(source: str) -> str:
    """``source`` without its rules' registrations (whose margin sources quote the paper's numbers)."""
    return re.sub(r"(?ms)^@(?:verdicts|[A-Z_]+)\.registered(?:_answer)?\(\n.*?^\)\n", "", source)


@pytest.mark.parametrize("value", ["31.69", "24.98", "16.24", "33.84"])
def test_no_notebook_code_or_claim_holds_table1_values(value):
    def code(path: Path) -> str:
        return "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
    assert not [p.name for p in NOTEBOOKS.glob("trace/*.py") if value in code(p)]
    assert not [p.name for p in (Path(paper.__file__).parent / "claims").glob("*.py")  # the rules' texts aside
                if value in registrations_aside(p.read_text(encoding="utf-8"))]


def test_table1_has_every_cell_of_the_paper():
    t = paper.TABLE1.set_index(["reference", "model"])
    assert len(t) == 18 and list(dict.fromkeys(paper.TABLE1["model"])) == paper.TABLE1_MODELS
    # spot checks of rows other than ResNet-18: (ii) VGG-16 zero IBA 18.77, (iv) GoogLeNet zero T-y 23.70,
    # (v) MobileNetV3 zero RISE 10.0, (iii) AlexNet blur T-p 26.78, (vi) DenseNet-161 mean EBP 19.48
    assert t.loc[("zero", "VGG-16"), "IBA"] == 18.77 and t.loc[("zero", "GoogLeNet"), "T-y"] == 23.70
    assert t.loc[("zero", "MobileNetV3"), "RISE"] == 10.0 and t.loc[("blur", "AlexNet"), "T-p"] == 26.78
    assert t.loc[("mean", "DenseNet-161"), "EBP"] == 19.48
    assert (t["T-p"] > t["T-y"]).all() and (t["T-y"] > t[paper.TABLE1_METHOD_COLUMNS].max(axis=1)).all()


def test_the_registered_margins_are_the_papers_numbers():
    """A rule's margin that drifts from Table 1 (typed in faithlab_study.papers.trace.paper) fails here."""
    from faithlab_study import verdicts

    assert paper.margin_beats_methods() == pytest.approx(0.2)  # half of 1 − 18.77 / 31.25 (VGG-16, zero)
    assert paper.margin_probability_gap() == pytest.approx(0.079)  # half of (28.13 − 23.70) / 28.13 (GoogLeNet)
    assert paper.margin_reference_robust() == pytest.approx({"relative": 0.066, "per point": 0.043})
    assert verdicts.rule("T2").margin == paper.margin_beats_methods()
    assert verdicts.rule("T2b").margin == paper.margin_probability_gap()
    assert verdicts.rule("T1").margin == paper.margin_search_bound()
    assert dict(verdicts.rule("T5").margin) == paper.margin_reference_robust()
    # the conventions of the figure-only claims: one number for one kind of claim
    assert {verdicts.rule(c).margin for c in ("T3a", "T3b", "T4")} == {0.05}
    for cid in ("T1", "T2", "T2b", "T5"):
        assert "Table 1" in verdicts.rule(cid).margin_source, cid


def test_every_claim_of_the_chapter_is_registered_with_the_papers_words():
    from faithlab_study import verdicts

    rules = {cid: r for cid, r in verdicts.all_rules().items() if r.paper == "trace"}
    assert set(rules) == {"T1", "T1.greedy", "T2", "T2b", "T3", "T3a", "T3b", "T4", "T5", "T6"}
    # "every method in all cells", "both objectives", "every model": every cell must hold
    assert {cid for cid, r in rules.items() if r.decision == "every"} == {"T1", "T1.greedy", "T2", "T2b", "T3a",
                                                                            "T3b", "T4", "T5"}
    assert rules["T3"].decision == "parts" and rules["T3"].parts == ("T3a", "T3b")
    # built in: SA ≥ Greedy by construction, insertion = deletion an identity
    assert {cid for cid, r in rules.items() if r.kind == "study check"} == {"T1.greedy", "T6"}
    assert all(r.interval == "t on replica means" for cid, r in rules.items() if cid != "T6")


def test_the_premise_thresholds_are_the_registered_ones():
    from faithlab_study import papers as protocols, verdicts

    assert protocols.trace.PREMISE_DROP == protocols.trace.PREMISE_GAIN == 0.1
    for cid in ("T1", "T2", "T2b", "T3", "T4"):
        assert any("above 0.1" in p or "more than 0.1" in p for p in verdicts.rule(cid).premises), cid


def test_the_designs_the_power_analysis_asked_are_registered():
    """T1 and T4 rest on 8 trained replicas (the power analysis of the first book run asked them), the others on 3;
    the book profile runs at least what each rule asks."""
    from faithlab_study import verdicts
    from faithlab_study.runner import parameters

    assert (verdicts.rule("T1").replicas, verdicts.rule("T4").replicas, verdicts.rule("T4").units) == (8, 8, 80)
    notebooks = {nb.name: nb for nb in parameters.discover()}
    book = parameters.load_profile("book")
    searches = parameters.merge_parameters(notebooks["trace/searches"], "book", book, {})
    assert searches["replicas"] >= 8 and searches["replicas"] * searches["n_images"] >= 80
    assert searches["replicas"] * min(searches["cs_images"], searches["n_images"]) >= verdicts.rule("T1").units
    for name in ("trace/table1", "trace/random_test"):
        p = parameters.merge_parameters(notebooks[name], "book", book, {})
        assert p["replicas"] >= 3 and p["replicas"] * p["n_images"] >= 30, name

"""TRACE's published numbers live in ``faithlab.protocols.trace.paper`` only: spot checks against Table 1's
ResNet-18 rows (typed by hand from the paper's text), the quoted values of the claims, and no notebook typing them."""

from pathlib import Path

import pytest

from faithlab.protocols.trace import paper

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


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


@pytest.mark.parametrize("value", ["31.69", "24.98", "16.24", "33.84"])
def test_no_notebook_code_or_claim_holds_table1_values(value):
    def code(path: Path) -> str:
        return "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
    assert not [p.name for p in NOTEBOOKS.glob("trace/*.py") if value in code(p)]
    assert value not in (Path(paper.__file__).parent / "claims.py").read_text(encoding="utf-8")

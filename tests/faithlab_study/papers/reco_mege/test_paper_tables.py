"""ReCo/MeGe's published numbers live in ``faithlab_study.papers.reco_mege.paper`` only: spot checks against the paper's
tables (typed by hand from the paper's text), the values the claims quote, and no notebook or claim typing them."""

import re
from pathlib import Path

import pytest

from faithlab_study.papers.reco_mege import paper

NOTEBOOKS = Path(__file__).resolve().parents[4] / "notebooks"


def test_tables_hold_the_papers_values():
    # Table 1 (ReCo): FashionMNIST 0.369 0.125 0.1 0.369 0.517; EuroSAT 0.309 0.182 0.177 0.241 0.591
    assert list(paper.PAPER["Table 1"].loc["FashionMNIST"]) == [0.369, 0.125, 0.1, 0.369, 0.517]
    assert list(paper.PAPER["Table 1"].loc["EuroSAT"]) == [0.309, 0.182, 0.177, 0.241, 0.591]
    assert paper.PAPER["Table 3"].loc["μF", "GC"] == 0.907
    assert paper.PAPER["Table 3"].loc["S_avg", "SG"] == 0.024
    assert paper.PAPER["Table 4"].loc["1-Lipschitz", "SG"] == 0.898


def test_the_quoted_lines_read_the_tables():
    assert paper.quoted("Table 1") == "Table 1: GC best on all 4 datasets (0.517–0.800)"
    assert paper.quoted("Table 3") == "μF GC 0.907 (next SG 0.305); S_avg GC 0.012, SG 0.024, others > 2"
    assert paper.quoted("Tables 4–5") == ("Tables 4–5: ReCo e.g. SG 0.154 → 0.898, SA 0.151 → 0.810; MeGe higher "
                                          "for all six methods")
    with pytest.raises(ValueError, match="table"):
        paper.quoted("Table 9")


@pytest.mark.parametrize("value", ["0.907", "0.517", "0.898"])
def test_no_claim_or_notebook_code_holds_these_values(value):
    def code(path: Path) -> str:
        text = re.sub(r"(?ms)^@(?:verdicts|[A-Z][A-Z0-9_]*)\.registered(?:_answer)?\(\n.*?^\)\n", "", path.read_text(encoding="utf-8"))
        return "\n".join(line.split("  #")[0] for line in text.splitlines()  # the rules' registrations aside
                         if not line.lstrip().startswith("#"))
    here = Path(paper.__file__).parent
    assert not [p.name for p in [*(here / "claims").glob("*.py"), *(here / "experiments").glob("*.py"),
                                   *NOTEBOOKS.glob("reco_mege/*.py")]
                if value in code(p)]

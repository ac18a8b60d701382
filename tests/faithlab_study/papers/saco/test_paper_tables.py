"""SaCo's published numbers live in ``faithlab_study.papers.saco.paper`` only: spot checks against the paper's Tables 1
and 2 and Fig. 2 (typed by hand from the paper's text), the margins derived from them, the quoted values of the claims,
and no notebook typing them again."""

import re
from pathlib import Path

import pytest

from faithlab_study.papers.saco import paper

NOTEBOOKS = Path(__file__).resolve().parents[4] / "notebooks"


def test_table_2_rows_per_k():
    assert paper.TABLE_2_K == (5, 10, 20)
    # K = 5: Transformer-MM 0.6041; K = 20: Conservative LRP −0.0201; K = 10: IG 0.1647, ATTCAT 0.3629
    assert paper.TABLE_2["Transformer-MM"] == (0.6041, 0.4558, 0.3651)
    assert paper.TABLE_2["Conservative LRP"][2] == -0.0201
    assert paper.TABLE_2["Integrated Gradients"][1] == 0.1647
    assert paper.TABLE_2["ATTCAT"] == (0.3178, 0.3629, 0.3617)
    assert len(paper.TABLE_2) == 10


def test_table_1_and_the_k10_column():
    assert paper.TABLE_1 == {"Raw Attention": 0.1835, "Rollout": 0.2453, "Transformer-MM (last layer)": 0.3783,
                             "Transformer-MM": 0.4558}
    assert paper.SACO["Random"] == 0.0
    assert paper.SACO["Transformer-MM (last layer)"] == 0.3783
    assert paper.SACO["Grad-CAM (attention)"] == 0.1142
    assert paper.SACO["LRP"] == 0.0120
    # Table 1's rows are Table 2's K = 10 values where both list the method
    assert all(paper.TABLE_2[m][1] == v for m, v in paper.TABLE_1.items() if m in paper.TABLE_2)


@pytest.mark.parametrize("value", ["0.1647", "0.3783", "0.6041", "-0.0201"])
def test_no_notebook_code_holds_saco_values(value):
    def code(path: Path) -> str:
        return "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
    assert not [p.name for p in NOTEBOOKS.glob("saco/*.py") if value in code(p)]


def test_the_claims_quote_the_table():
    source = "".join(re.sub(r"(?ms)^@(?:verdicts|[A-Z][A-Z0-9_]*)\.registered(?:_answer)?\(\n.*?^\)\n", "", p.read_text(encoding="utf-8"))
                     for p in (Path(paper.__file__).parent / "claims").glob("*.py"))  # the rules' texts aside
    assert "0.4558" not in source and "0.6041" not in source


def test_fig_2_correlations_and_the_methods():
    # §5.1: "range from 0.18 to 0.22", "significantly higher (0.4764)"
    assert paper.FIG_2_SACO_VS_EXISTING == (0.18, 0.22) and paper.FIG_2_AMONG_EXISTING == 0.4764
    assert paper.METHODS == tuple(paper.TABLE_2) and len(paper.METHODS) == 10
    assert paper.MARGINS == {"SaCo difference": 0.0309, "weak correlation": 0.3482, "agreement gap": 0.1282}

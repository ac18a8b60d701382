"""F-Fidelity's published numbers live in ``faithlab_study.papers.ffidelity.paper`` only: spot checks against the paper's
tables (typed by hand from the paper's text) and a scan that no notebook types them again."""

import ast
import math
from pathlib import Path

import pytest

from faithlab_study.papers.ffidelity import paper

NOTEBOOKS = Path(__file__).resolve().parents[4] / "notebooks"


def test_ranking_tables_hold_the_papers_values():
    # Table 1, SG-SQ Macro Corr. MoRF vs GT: −0.68, −0.66, −1.00, −1.00; GradCAM Micro Rank MoRF vs LeRF 3.00 … 1.00
    assert paper.TABLE_1["SG-SQ", "Macro Corr."]["morf_vs_gt"] == [-0.68, -0.66, -1.00, -1.00]
    assert paper.TABLE_1["GradCAM", "Micro Rank"]["morf_vs_lerf"] == [3.00, 3.74, 2.16, 1.00]
    # Table 2 (Tiny-ImageNet), GradCAM Macro Corr. MoRF vs GT: −0.97, 0.63, −1.00, −1.00
    assert paper.TABLE_2["GradCAM", "Macro Corr."]["morf_vs_gt"] == [-0.97, 0.63, -1.00, -1.00]
    # Table 5 (ViT): Micro Corr. MoRF vs GT −0.68, −0.91, −1.00, −1.00; Table 10 (LayerCAM) Micro Rank MoRF vs GT
    assert paper.TABLE_5["Micro Corr.", "morf_vs_gt"] == [-0.68, -0.91, -1.00, -1.00]
    assert paper.TABLE_10["Micro Rank", "morf_vs_gt"] == [2.95, 3.95, 1.89, 1.21]
    # text tables rank three methods, series tables four
    assert all(len(v) == 3 for v in (*paper.TABLE_4.values(), *paper.TABLE_7.values()))
    assert all(len(v) == 4 for v in (*paper.TABLE_3.values(), *paper.TABLE_6.values()))


def test_table_8_and_its_lookup():
    # Table 8: CIFAR-100 ResNet original 73.23 / 56.70 / 41.81 at 0 / 5 / 10 % removal
    assert paper.TABLE_8["CIFAR-100", "ResNet", "original"] == [73.23, 56.70, 41.81]
    assert paper.TABLE_8["SST2", "Transformer", "fine-tuned"] == [80.73, 81.08, 78.90]
    assert paper.table_8_value("CNN", "original", 0.05) == 56.70
    assert paper.table_8_value("LSTM (pad)", "fine-tuned", 0.1) == 79.24  # the name up to a parenthesis
    assert math.isnan(paper.table_8_value("CNN", "original", 0.2))


def test_tables_11_to_13():
    # Table 11: GradCAM 0.2286 / 0.0547 vs Saliency 0.2020 / 0.1050; Table 12: 0.1123 / 0.0046 vs 0.0672 / 0.0091
    assert paper.preference_text(paper.TABLE_11, "Tiny-ImageNet") == \
        "FFid+ 0.2286 vs 0.2020, FFid- 0.0547 vs 0.1050 (Tiny-ImageNet)"
    assert paper.TABLE_12["Saliency"] == {"FFid+": 0.0672, "FFid-": 0.0091}
    # Table 13: ROAR explains the training set in 647 s + 721 s; F-Fidelity fine-tunes once, 2925 s
    assert paper.TABLE_13["ROAR", "explain train set"] == 647 + 721
    assert paper.TABLE_13["F-Fidelity", "train / fine-tune"] == 2925
    assert paper.TABLE_13["F-Fidelity", "evaluate"] == 541 + 560


def test_quoted_ranks_read_the_tables():
    assert paper.micro_ranks_text(paper.TABLE_5) == \
        "F-Fid 1.00/1.32/1.00 vs Fid 3.47/1.16/3.58, ROAR 3.16/1.11/3.16, R-Fid 1.05/1.32/1.05"
    assert paper.rank_range_text(paper.TABLE_6, "Fidelity") == "2.68-3.68"


def _numbers(node: ast.AST) -> list:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, (int, float))
            and not isinstance(n.value, bool)]


def paper_literals(path: Path) -> list[str]:
    """Assignments in a notebook to a name starting with PAPER whose value types numbers (a table typed again)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any(n.upper().startswith("PAPER") for n in names) and len(_numbers(node.value)) >= 3:
                found.append(f"{path.parent.name}/{path.name}:{node.lineno} {names}")
    return found


def test_the_scan_finds_a_typed_table(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("PAPER = {('a', 'b'): [0.1, 0.2, 0.3]}\nPAPER_T2 = fs.papers.ffidelity.paper.TABLE_2\n",
                     encoding="utf-8")
    assert paper_literals(probe) == [f"{tmp_path.name}/probe.py:1 ['PAPER']"]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_notebook_types_a_paper_table(path):
    assert paper_literals(path) == []


@pytest.mark.parametrize("value", ["-0.68, -0.66", "73.23", "0.2286", "2911 + 2861", "3.47, 3.16", "0.78, -0.90"])
def test_no_notebook_code_holds_ffidelity_values(value):
    """The code of the notebooks (their markdown and comments may quote the paper) holds none of these values."""
    def code(path: Path) -> str:
        return "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
    assert not [p.name for p in NOTEBOOKS.glob("ffidelity/*.py") if value in code(p)]


def test_quoted_text_gaps_read_the_tables():
    # Table 4 (SST2, LSTM) Macro Corr. MoRF vs GT: Fidelity −1.00, R-Fidelity −1.00, F-Fidelity −1.00;
    # Table 7 (SST2, Transformer): −0.94, −1.00, −1.00 (MoRF vs LeRF the same, LeRF vs GT 1.00 everywhere)
    assert paper.TABLE_4["Macro Corr.", "morf_vs_gt"] == [-1.00, -1.00, -1.00]
    assert paper.TABLE_7["Macro Corr.", "morf_vs_gt"] == [-0.94, -1.00, -1.00]
    assert paper.TABLE_7["Macro Corr.", "morf_vs_lerf"] == [-0.94, -1.00, -1.00]
    assert paper.macro_difference_text(paper.TABLE_4) == "identical"
    assert paper.macro_difference_text(paper.TABLE_7) == "|Δ| ≤ 0.06"
    assert paper.macro_difference_text({("Macro Corr.", c): [0.5, 0.0, 0.62]
                                        for c in ("morf_vs_gt", "lerf_vs_gt", "morf_vs_lerf")}) == "|Δ| ≤ 0.12"


def test_no_notebook_types_the_text_gap():
    text = (NOTEBOOKS / "ffidelity" / "series_text.py").read_text(encoding="utf-8")
    assert "0.06" not in text and "identical (LSTM)" not in text

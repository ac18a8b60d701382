"""Few-class Fidelity's published numbers live in ``faithlab_study.papers.fewclass.paper`` only: spot checks against the
paper's Tables 1 and 2 (typed by hand from the paper's text), the texts the claims quote, and no other module or
notebook typing them again."""

from pathlib import Path

import pytest

from faithlab_study.papers import fewclass
from faithlab_study.papers.fewclass import paper

ROOT = Path(__file__).resolve().parents[4]


def test_table_1_entries():
    # Table 1 (ImageNet vehicles): ResNet-18 BP 0.614 / 0.603 / 0.725 / 0.713, EG +SG 0.737, Random 0.595;
    # DenseNet-121 Deconv 0.680 / 0.716 / 0.679 / 0.677, Random 0.596
    assert paper.COLUMNS == ("none", "XRAI", "SG", "SG²")
    assert paper.TABLE_1["ResNet-18", "BP"] == (0.614, 0.603, 0.725, 0.713)
    assert paper.TABLE_1["ResNet-18", "EG"][2] == 0.737
    assert paper.TABLE_1["ResNet-18", "Random"] == (0.595, None, None, None)
    assert paper.TABLE_1["DenseNet-121", "Deconv"] == (0.680, 0.716, 0.679, 0.677)
    assert paper.TABLE_1["DenseNet-121", "Random"][0] == 0.596
    assert len(paper.TABLE_1) == 16


def test_table_2_entries():
    # Table 2 (CT): ResNet-50 GradCAM 0.918 / 0.871 / 0.843 / 0.846, IG(max) 0.646 / 0.728 (no SG, SG²);
    # Xception BP 0.764 / 0.930 / 0.752 / 0.905, Random 0.551
    assert paper.TABLE_2["ResNet-50", "GradCAM"] == (0.918, 0.871, 0.843, 0.846)
    assert paper.TABLE_2["ResNet-50", "IG(max)"] == (0.646, 0.728, None, None)
    assert paper.TABLE_2["Xception", "BP"] == (0.764, 0.930, 0.752, 0.905)
    assert paper.TABLE_2["Xception", "Random"][0] == 0.551
    assert len(paper.TABLE_2) == 14
    # the cells the paper leaves empty are the ones our design skips (maps.NO_SG)
    assert sorted({m for (_, m), v in paper.TABLE_2.items() if v[2] is None and m != "Random"}) == \
        sorted(fewclass.NO_SG["ct"])


def test_the_claims_quote_the_tables():
    assert paper.PAPER_C1 == {
        "vehicles": "Random 0.595 / 0.596; lowest unaltered method 0.614 / 0.611 (BP)",
        "ct": "Random 0.615 / 0.551; lowest unaltered method 0.646 / 0.665 (IG(max))"}
    assert fewclass.PAPER_C1 is paper.PAPER_C1
    assert paper.alteration_gains_text(paper.TABLE_1, "Table 1") == \
        "SG raises the mean Fid in 12 of 14 model × method cells, SG² in 11 (Table 1)"
    # a changed entry changes the text: the texts are computed, not typed
    changed = {**paper.TABLE_1, ("ResNet-18", "GradCAM"): (0.683, 0.688, 0.690, 0.676)}
    assert paper.alteration_gains_text(changed, "Table 1").startswith("SG raises the mean Fid in 13 of 14")


@pytest.mark.parametrize("value", ["0.595", "0.614", "0.646", "0.665", "12 of 14"])
def test_no_other_module_or_notebook_types_the_values(value):
    def code(path: Path) -> str:
        return "\n".join(line.split("  #")[0] for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
    paths = [*(ROOT / "lib/faithlab-study/faithlab_study/papers/fewclass").glob("*.py"), *(ROOT / "notebooks/fewclass").glob("*.py")]
    assert not [p.name for p in paths if p.name != "paper.py" and value in code(p)]

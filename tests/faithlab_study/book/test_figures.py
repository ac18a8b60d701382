"""The study's figures (:mod:`faithlab_study.book.figures`): the front page's study map, coloured by verdict, and the
chapters' order (:mod:`faithlab_study.book.chapters`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from faithlab import plots  # noqa: E402
from faithlab_study.book import chapters, figures  # noqa: E402
from faithlab_study.verdicts import VERDICTS  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _scorecard() -> pd.DataFrame:
    rows = [("saco", "case_study", "reproduced"), ("ffidelity", "ranking", "reproduced"),
            ("ffidelity", "ranking", "not reproduced"), ("ffidelity", "robustness", "reproduced"),
            ("basics", "digits", "not testable here")]
    return pd.DataFrame(rows, columns=["paper", "experiment", "verdict"])


def test_study_map_one_label_per_paper_metric_and_experiment_and_bars_per_verdict():
    from collections import Counter

    from matplotlib.patches import Rectangle

    metrics = {"trace": ["ΣLeRF"], "saco": ["SaCo", "AUC"], "ffidelity": ["Fid+", "Fid−", "FFid+"]}
    fig = figures.study_map(_scorecard(), metrics, names={"ffidelity": "F-Fid", "saco": "SaCo"})
    (ax,) = fig.axes
    texts = Counter(t.get_text() for t in ax.texts)
    expected = Counter(["F-Fid", "SaCo", "trace", "basics",  # papers: display name, else the slug
                        "Fid+", "Fid−", "FFid+", "SaCo", "AUC", "ΣLeRF",  # metrics ("SaCo" twice: paper and metric)
                        "ranking", "robustness", "case_study", "digits"])  # experiments, once per paper
    assert {label: texts[label] for label in expected} == dict(expected)
    assert texts["no verdict yet"] == 1  # trace has metrics but no claim
    papers = [t for t in ax.texts if t.get_text() in {"F-Fid", "SaCo", "trace", "basics"} and t.get_bbox_patch()]
    assert [t.get_text() for t in sorted(papers, key=lambda t: t.get_position()[1])] == [  # y grows downwards
        "F-Fid", "SaCo", "trace", "basics"]
    colours = {matplotlib.colors.to_hex(c): v for v, c in figures.VERDICT_COLORS.items()}
    bars = [(colours[matplotlib.colors.to_hex(p.get_facecolor())], p.get_width()) for p in ax.patches
            if isinstance(p, Rectangle) and matplotlib.colors.to_hex(p.get_facecolor()) in colours]
    assert [v for v, _ in bars] == ["reproduced", "not reproduced", "reproduced", "not testable here"]
    np.testing.assert_allclose([w for _, w in bars], np.array([2, 1, 1, 1]) * bars[0][1] / 2)  # one scale
    (legend,) = fig.legends  # below the map, outside its axes
    assert [t.get_text() for t in legend.get_texts()] == list(figures.VERDICT_COLORS)
    small, large = (figures.study_map(_scorecard().iloc[:n], metrics).get_size_inches()[1] for n in (1, 5))
    assert large > small  # the height follows the rows


def test_study_map_of_the_whole_study_keeps_the_book_style():
    """The front page's map, with the five papers' metrics and every notebook, saved at the runner's 150 dpi and
    shown in the book's column: 9-pt text stays 9 pt (the map is narrow enough not to be shrunk), the legend is
    outside the map, no more than the allowed panels."""
    from faithlab_study import runner

    names = [nb.name.split("/") for nb in runner.discover()]
    card = pd.DataFrame([{"paper": p, "experiment": e, "verdict": VERDICTS[i % 4]}
                         for i, (p, e) in enumerate(names) if p != "templates"])
    fig = figures.study_map(card, figures.paper_metrics())
    assert plots.check_style(fig, dpi=150) == []


def test_study_map_rejects_bad_arguments():
    card, metrics = _scorecard(), {"saco": ["SaCo"]}
    with pytest.raises(TypeError, match="scorecard"):
        figures.study_map(card.to_dict(), metrics)
    with pytest.raises(ValueError, match="scorecard.*verdict"):
        figures.study_map(card.drop(columns="verdict"), metrics)
    with pytest.raises(ValueError, match="scorecard.*great"):
        figures.study_map(card.assign(verdict="great"), metrics)
    with pytest.raises(TypeError, match="metrics"):
        figures.study_map(card, [("saco", ["SaCo"])])
    with pytest.raises(TypeError, match=r"metrics\['saco'\]"):
        figures.study_map(card, {"saco": "SaCo"})
    with pytest.raises(TypeError, match="names"):
        figures.study_map(card, metrics, names=["SaCo"])
    with pytest.raises(ValueError, match="no paper"):
        figures.study_map(card.iloc[:0], {})
    with pytest.raises(TypeError, match="papers"):
        chapters.paper_order("saco")


def test_every_verdict_has_its_own_colour_and_reproduced_weaker_is_a_lighter_reproduced():
    colours = [matplotlib.colors.to_rgb(figures.VERDICT_COLORS[v]) for v in VERDICTS]
    assert list(figures.VERDICT_COLORS) == list(VERDICTS) and len(set(colours)) == len(VERDICTS)

    def lightness(colour):
        return sum(w * c for w, c in zip((0.2126, 0.7152, 0.0722), matplotlib.colors.to_rgb(colour)))

    strong, weaker = figures.VERDICT_COLORS["reproduced"], figures.VERDICT_COLORS["reproduced, weaker"]
    assert lightness(weaker) > lightness(strong) + 0.2  # told apart by lightness, which colour-blind eyes keep


def test_the_chapters_are_the_librarys_papers_in_its_order():
    """The study owns its chapter order and names; the library's registry lists the metrics by paper in its own
    order (PAPERS). They agree, so the study map and fl.evaluate list the papers alike."""
    from faithlab.metrics.registry import PAPERS
    from faithlab_study.book.chapters import CHAPTERS, PAPER_NAMES
    from faithlab_study.book.figures import paper_metrics

    assert list(CHAPTERS) == list(PAPERS)
    assert {p: PAPER_NAMES[p] for p in CHAPTERS} == PAPERS
    assert set(paper_metrics()) == {*CHAPTERS, "synthesis"}

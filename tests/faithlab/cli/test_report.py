"""A report that interprets (issue 54, item 3): the overall ranking of the explainers with its bootstrap interval and
the metrics that separate each pair, what each metric measures with its direction and its book chapter, the sanity
check read in a sentence, tidy tables, maps overlaid with a colour bar, hints in the command's terms and a readable
``faithlab evaluate --list-metrics``. Built from small synthetic frames (no model runs), except the listing's cost
estimate."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from faithlab import cli, report
from faithlab.evaluation import METRICS
from faithlab.evaluation import hints as hinting
from faithlab.evaluation.frame import tidy

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_METRICS = [m for m, i in METRICS.items() if i.level == "sample" and "finetuned" not in i.needs]
MS_PER_IMAGE = 37_660.0  # 3.766e+04 ms: the cost the issue saw in exponent notation


def _frame(scores: dict[tuple[str, str], np.ndarray], names: list[str], metrics: list[str]) -> pd.DataFrame:
    """A frame as fl.evaluate returns it, from oriented scores {(metric, explainer): one per image} (higher = better
    here; stored with each metric's own sign), with a cost record per metric group."""
    records = [{"explainer": e, "sample": i, "metric": m, "score": float(v if METRICS[m].higher_is_better else -v)}
               for (m, e), values in scores.items() for i, v in enumerate(values)]
    n = len(next(iter(scores.values())))
    cost = [{"group": g, "explainer": e, "forward_inputs": 18 * n, "model_calls": 2, "explained_inputs": 0,
             "seconds": MS_PER_IMAGE / 1000 * n} for g in dict.fromkeys(METRICS[m].group for m in metrics)
            for e in names]
    return tidy(records, metrics, names, cost)


def _ordered(n: int = 10, gap: float = 1.0, seed: int = 0, names=("best", "middle", "worst")) -> pd.DataFrame:
    """Every metric: the first explainer better than the second, better than the third, on every image (image
    effects shared, small noise)."""
    rng = np.random.default_rng(seed)
    scores = {}
    for m in SAMPLE_METRICS:
        base = rng.normal(size=n)
        for k, e in enumerate(names):
            scores[m, e] = base - gap * k + rng.normal(scale=0.1, size=n)
    return _frame(scores, list(names), SAMPLE_METRICS)


def test_the_explainer_better_on_every_metric_ranks_first_with_a_separate_interval():
    frame = _ordered()
    table = report.overall(frame, seed=3)
    assert table["explainer"].tolist() == ["best", "middle", "worst"]
    best, worst = table.iloc[0], table.iloc[-1]
    assert best["mean rank"] == 1.0 and best["ranked first by"] == len(SAMPLE_METRICS) == best["metrics"]
    assert best["95 % high"] < worst["95 % low"]
    # the point estimate is the ranks table's mean; the interval is seeded
    assert table.set_index("explainer")["mean rank"].to_dict() == report.ranks(frame).mean().to_dict()
    pd.testing.assert_frame_equal(table, report.overall(frame, seed=3))
    # explainers that differ by noise only: every interval overlaps every other
    noise = report.overall(_ordered(gap=0.0, n=12, seed=1))
    assert noise["95 % low"].max() < noise["95 % high"].min()
    sentence = report.overall_sentence(table, report.separation(frame, order=table["explainer"].tolist()))
    n = len(SAMPLE_METRICS)
    assert sentence.startswith(f"best ranks first (mean rank 1.0, 95 % interval 1.0–1.0, over {n} metrics")
    assert f"best and middle are separated by {n} of {n} metrics (best better on {n}, middle on 0)" in sentence


def test_pairs_count_the_metrics_whose_interval_excludes_zero():
    rng = np.random.default_rng(0)
    n, a_wins, b_wins = 8, SAMPLE_METRICS[:3], SAMPLE_METRICS[3:5]
    scores = {}
    for m in SAMPLE_METRICS:
        base = rng.normal(size=n)
        scores[m, "A"] = base + (2.0 if m in a_wins else 0.0) + rng.normal(scale=0.05, size=n) * (m in a_wins)
        scores[m, "B"] = base + (2.0 if m in b_wins else 0.0)  # elsewhere equal on every image: not separated
    frame = _frame(scores, ["A", "B"], SAMPLE_METRICS)
    (pair,) = report.separation(frame).to_dict("records")
    assert (pair["explainer"], pair["versus"]) == ("A", "B")
    assert pair["separating metrics"] == 5 and pair["explainer better on"] == 3 and pair["versus better on"] == 2
    assert pair["metrics compared"] == len(SAMPLE_METRICS)
    assert pair["separating"].split(", ") == [METRICS[m].label for m in a_wins + b_wins]


def test_every_metric_has_a_meaning_a_direction_and_a_chapter_link():
    assert [m for m, info in METRICS.items() if not info.doc] == []  # a new metric declares its line (doc=)
    terms = report.glossary()
    assert terms["metric"].tolist() == list(METRICS)
    for row in terms.itertuples():
        info = METRICS[row.metric]
        assert row.meaning and len(row.meaning) <= 80
        assert not re.search(r"(higher|lower) is better", row.meaning)  # the direction is the declaration's
        assert row.direction == ("higher is better" if info.higher_is_better else "lower is better")
        assert row.link.endswith(f"/{info.paper}.html") and (ROOT / "book" / f"{info.paper}.md").is_file()


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    frame = _ordered(n=6)
    randomisable = report.randomisable_metrics(frame)
    rows = _ordered(n=6, seed=5, names=("worst", "best", "middle"))  # the ranking reversed on the randomised model
    randomised = rows[rows["metric"].isin(randomisable)].reset_index(drop=True)
    images = torch.rand(2, 3, 16, 16)
    maps = {"best": torch.rand(2, 3, 16, 16), "middle": torch.rand(2, 16, 16), "worst": torch.rand(2, 1, 16, 16)}
    hints = [hinting.for_command(m) for m in hinting.degenerate(frame.assign(
        score=frame["score"].where(frame["metric"] != "saco", float("nan"))))]
    index = report.write(tmp_path_factory.mktemp("report") / "out", frame, randomised=randomised, images=images,
                         maps=maps, n_maps=1, hints=hints, command="faithlab evaluate ...", parameters={
                             "fewclass_fractions": [i / 100 for i in range(101)], "seed": 0})
    return index, frame


def _section(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}")
    end = page.find("<h2>", start + 1)
    return page[start:end if end > 0 else None]


def test_the_page_opens_with_the_overall_ranking_and_reads_its_tables(written):
    index, frame = written
    page = index.read_text(encoding="utf-8")
    assert page.index("<h2>Overall ranking") < min(page.index(f"<h2>{h}") for h in (
        "What the metrics measure", "Mean score", "How each metric ranks", "Sanity checks", "Cost"))
    overall = pd.read_csv(index.parent / "overall.csv")
    pd.testing.assert_frame_equal(overall, report.overall(frame), check_dtype=False)
    table = overall.set_index("explainer")
    assert "best ranks first (mean rank 1.0" in page and (index.parent / "pairs.csv").is_file()
    assert table.loc["best", "95 % high"] < table.loc["worst", "95 % low"]
    assert not re.search(r"<th[^>]*>\s*</th>", page)  # no empty column header
    glossary = _section(page, "What the metrics measure")
    for m in SAMPLE_METRICS:
        info = METRICS[m]
        row = re.search(rf"<tr><td class=text>{re.escape(info.label)}</td>.*?</tr>", glossary).group(0)
        assert html.escape(report.meaning(m)) in row and f"/{info.paper}.html'" in row
        assert ("higher is better" if info.higher_is_better else "lower is better") in row
    assert html.escape(report.comprehensiveness_note()) in glossary and "DeYoung" in glossary
    sanity = _section(page, "Sanity checks")
    assert "Ranking change on a randomised model" in sanity and "or more is good" in sanity
    n = len(report.randomisable_metrics(frame))
    assert f"Here {n} of the {n} metrics that rank the explainers on both models reach 0.5 or more" in sanity
    cost = _section(page, "Cost per image")
    assert "e+0" not in cost and "37.7 s" in cost and "3.8 min" in cost  # 37,660 ms per image, 6 images
    assert "101 values 0…1" in page and "--list-metrics" in _section(page, "Hints")


def test_the_sanity_sentence_says_what_a_ranking_change_means_and_sets_ties_apart():
    table = pd.DataFrame({"label": ["AOPC", "SaCo", "Fid+", "μF"], report.RANKING_CHANGE: [1.0, 0.25, 0.5, 0.5],
                          "beats random: A": [0.75, 0.5, 0.5, 1.0]})
    change, beats = report.sanity_sentences(table, 3, tied=["Fid+"], tied_randomised=["μF"])
    assert "0 means the metric ranks the explainers the same on a model that has learnt nothing" in change
    assert "Here 1 of the 2 metrics that rank the explainers on both models reach 0.5 or more; below: SaCo (0.25)." \
        in change
    assert change.endswith("Every explainer ties for Fid+ on the trained model and for μF on the randomised one: "
                           "there the value is ½ by definition and says nothing.")
    assert "With two explainers" not in change and "With two explainers" in report.sanity_sentences(table, 2)[0]
    assert beats.endswith("the random map on most images: A on 2 of 4.")
    assert report.sanity_sentences(table[["label"]], 3) == []
    ranked = pd.DataFrame({"label": ["Fid+", "SaCo", "μF"], "A": [2.0, 1.0, np.nan], "B": [2.0, 2.0, np.nan]})
    assert report.tied_metrics(ranked) == ["Fid+"]  # μF, undefined for both, is not a tie


def test_maps_are_overlaid_on_the_image_with_a_colour_bar():
    import matplotlib.pyplot as plt

    fig = report.maps_figure(torch.rand(1, 3, 16, 16), {"a": torch.rand(1, 3, 16, 16), "b": torch.rand(1, 16, 16)})
    try:
        panels = [ax for ax in fig.axes if ax.get_title()]
        assert [ax.get_title() for ax in panels] == ["image 0", "a", "b"]
        assert [len(ax.get_images()) for ax in panels] == [1, 2, 2]  # each map drawn over its image
        bars = [ax for ax in fig.axes if ax.get_ylabel() == report.MAP_SCALE]
        assert len(bars) == 1
    finally:
        plt.close(fig)


def _degenerate_messages() -> list[str]:
    """One message of each cause whose advice names a Python argument."""
    rng = np.random.default_rng(0)
    names, metrics = ["A", "B"], ["fid+", "fid-", "auc_accuracy", "fewclass_fid", "saco", "mu_fidelity", "aopc"]
    base = {(m, e): rng.uniform(-0.2, 1, 5) for m in metrics for e in names}

    def frame(**change):
        return _frame({**base, **{(m, e): np.full(5, v) for (m, v) in change.items() for e in names}}, names,
                      metrics)

    none, every = torch.zeros(5, dtype=torch.bool), torch.ones(5, dtype=torch.bool)
    return (hinting.degenerate(frame(**{"fid+": 0.0, "fid-": 0.0, "auc_accuracy": 0.0}), correct=none)
            + hinting.degenerate(frame(**{"fid+": 0.0}), correct=every)
            + hinting.degenerate(frame(fewclass_fid=10 / 19))
            + hinting.degenerate(frame(**{"fid+": 0.0}))
            + hinting.degenerate(frame(mu_fidelity=float("nan")))
            + hinting.degenerate(frame(saco=float("nan")))
            + hinting.degenerate(frame(saco=0.3)))


def test_hints_name_the_command_flags():
    messages = _degenerate_messages()
    for phrase in hinting.COMMAND_FORMS:  # every phrase declared is one the messages use
        assert any(phrase in m for m in messages), phrase
    command = [hinting.for_command(m) for m in messages]
    text = "\n".join(command)
    for flag in ("--labels predictions", "--set fewclass_grid=paper", "--set sparsity", "--n-images",
                 "--list-metrics", "--set)"):
        assert flag in text, flag
    assert "y=None" not in text and "grid='paper'" not in text and "fl.evaluation.describe" not in text
    notes = hinting.command_hints(random_map=False, labelled=False)
    assert len(notes) == 3 and "--explainers" in notes[0] and "--labels predictions" in notes[1]
    assert notes[2].startswith("ReCo and MeGe are not computed") and "-p kfold 5" in notes[2]
    assert "template notebook's kfold" not in " ".join(notes)
    assert hinting.command_hints(random_map=True, labelled=True) == [notes[2]]


def test_list_metrics_is_one_short_line_per_metric(capsys):
    assert cli.main(["evaluate", "--list-metrics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 160
    for name, info in METRICS.items():
        (line,) = [line for line in lines if line.split(" ", 1)[0] == name]
        assert report.meaning(name) in line
        assert ("higher is better" if info.higher_is_better else "lower is better") in line
        assert re.search(r"\b(cheap|moderate|expensive) \([\d,]+\)|k models", line)
    by_name = {line.split(" ", 1)[0]: line for line in lines}
    assert "expensive" in by_name["rfid+"] and "cheap" in by_name["aopc"]
    assert any(line.strip().startswith("fewclass_fractions = 101 values 0…1") for line in lines)


def test_numbers_are_shown_in_a_readers_units():
    assert [report.duration(ms) for ms in (0.5, 850, 37_660, 151_000, 9_000_000)] == [
        "0.5 ms", "850 ms", "37.7 s", "2.5 min", "2.5 h"]
    assert report.brief([i / 100 for i in range(101)]) == "101 values 0…1" and report.brief(0.5) == "0.5"

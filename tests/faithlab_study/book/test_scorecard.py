"""The book's front page artifacts that write_scorecard adds: the verdict counts per paper and the study map."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faithlab_study.artifacts import CLAIM_COLUMNS, CLAIMS
from faithlab_study.book.scorecard import (ALL_PAPERS, PREREGISTRATION, SCORECARD, STUDY_MAP, SUMMARY, summarise,
                                          write_scorecard)
from faithlab_study.verdicts import VERDICTS

R, W, P, N, T, I = VERDICTS  # reproduced, reproduced weaker, partly, not reproduced, not testable here, inconclusive


LEGACY = ("rule", "premise", "kind", "decision", "replicas", "stability", "units", "function", "power", "rule_id",
          "trained_replicas", "cells", "before", "prospective")


def claims(generated: Path, paper: str, experiment: str, verdicts: list[str], *, executed: bool = True,
           legacy: bool = False, kinds: list[str] | None = None) -> None:
    """A notebook's outputs as the runner leaves them: <paper>/<experiment>/claims.csv beside <experiment>.ipynb
    (``legacy``: without the rule, premise and later columns, as claims were written before claim functions)."""
    folder = generated / paper / experiment
    folder.mkdir(parents=True)
    columns = [c for c in CLAIM_COLUMNS if not (legacy and c in LEGACY)]
    kinds = kinds or ["paper"] * len(verdicts)
    rows = [{"paper": paper, "experiment": experiment, "claim": f"claim {i}", "paper_value": 1.0, "our_value": 1.0,
             "verdict": v, "rule": "a rule", "premise": "a premise", "note": "", "kind": k, "decision": "d",
             "replicas": "3 of 3 replicas", "stability": "20 of 20 seeds", "units": 30, "function": "", "power": "",
             "rule_id": "", "trained_replicas": 3, "cells": "", "before": "", "prospective": ""}
            for i, (v, k) in enumerate(zip(verdicts, kinds))]
    pd.DataFrame(rows)[columns].to_csv(folder / CLAIMS, index=False)
    if executed:
        (generated / paper / f"{experiment}.ipynb").write_text("{}")


def assert_map_written(generated: Path) -> None:
    assert (generated / f"{STUDY_MAP}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (generated / f"{STUDY_MAP}.svg").read_text()


def test_summary_counts_verdicts_per_paper_in_chapter_order(tmp_path):
    generated = tmp_path / "generated"
    claims(generated, "trace", "table1", [N, N, T], legacy=True)  # read, with empty rule and premise
    claims(generated, "zeta", "extra", [R])  # a slug without a display name, after the chapters and "basics"
    claims(generated, "ffidelity", "robustness", [R, P])
    claims(generated, "ffidelity", "images_ranking", [R, T, I, N], kinds=["paper"] * 3 + ["study check"])
    claims(generated, "basics", "digits_classifier", [P])
    claims(generated, "saco", "case_study", [R, R, N], executed=False)  # interrupted run: not counted
    claims(generated, "reco_mege", "tables", ["great"])  # a verdict outside VERDICTS: skipped with a message
    messages: list[str] = []
    assert write_scorecard(generated, echo=messages.append) == generated / SCORECARD
    assert any("reco_mege/tables" in m and "great" in m for m in messages), messages
    summary = pd.read_csv(generated / SUMMARY)
    expected = pd.DataFrame(
        [["F-Fidelity", 2, 0, 1, 0, 1, 1, 5], ["TRACE", 0, 0, 0, 2, 1, 0, 3], [ALL_PAPERS, 2, 0, 1, 2, 2, 1, 8],
         ["F-Fidelity (study check)", 0, 0, 0, 1, 0, 0, 1],  # a chapter's study check: not among the paper's claims
         ["Basics (study check)", 0, 0, 1, 0, 0, 0, 1], ["zeta (study check)", 1, 0, 0, 0, 0, 0, 1]],
        columns=["paper", *VERDICTS, "total"],
    )
    pd.testing.assert_frame_equal(summary, expected)
    body = summary.iloc[:2]  # the papers; the study's own checks are not counted in "all papers"
    assert summary.iloc[2, 1:].tolist() == body.iloc[:, 1:].sum().tolist()
    assert (body[list(VERDICTS)].sum(axis=1) == body["total"]).all()
    card = pd.read_csv(generated / SCORECARD, keep_default_na=False)
    assert card.columns.tolist() == list(CLAIM_COLUMNS)
    assert set(card[card.paper == "trace"]["rule"]) == {""} and set(card[card.paper != "trace"]["rule"]) == {"a rule"}
    assert_map_written(generated)
    prereg = pd.read_csv(generated / PREREGISTRATION, keep_default_na=False)
    assert prereg["claim"].tolist() == card["claim"].tolist() and prereg["kind"].tolist() == card["kind"].tolist()
    assert set(prereg["rule last changed"]) == {"—"}  # no claim function recorded: no commit to name


def test_preregistration_names_the_commit_where_a_claim_function_last_changed():
    from faithlab_study.book.scorecard import rule_commit

    answer = rule_commit("faithlab_study.papers.basics.claim_deletion_sanity")
    assert answer == "uncommitted" or len(answer.split()[0]) >= 7  # "<hash> <date>" from git log -L
    assert rule_commit("faithlab_study.papers.basics.no_such_function") == "—"
    assert rule_commit("no_such_module.f") == "—"


def test_glance_shows_replica_agreement_stability_units_and_study_checks():
    from faithlab_study.book import pages

    card = pd.DataFrame([{"paper": "trace", "experiment": "table1", "claim": "T6: an identity", "paper_value": "1",
                          "our_value": "1", "verdict": R, "rule": "r", "decision": "reproduced when x", "premise": "p",
                          "note": "", "kind": "study check", "replicas": "2 of 3 replicas",
                          "stability": "20 of 20 seeds", "units": "36"}])
    html = pages.glance_html(card, "trace")
    assert "2 of 3 replicas · 20 of 20 seeds · 36 units" in html and "fl-kind" in html and "reproduced when x" in html


def test_empty_scorecard_still_writes_summary_and_map(tmp_path):
    generated = tmp_path / "generated"
    write_scorecard(generated, echo=lambda message: None)
    assert pd.read_csv(generated / SCORECARD).empty
    summary = pd.read_csv(generated / SUMMARY)
    assert summary.columns.tolist() == ["paper", *VERDICTS, "total"]
    assert summary.values.tolist() == [[ALL_PAPERS, 0, 0, 0, 0, 0, 0, 0]]
    assert pd.read_csv(generated / "cells.csv").empty  # written all the same, so the scorecard's link never breaks
    assert_map_written(generated)


def test_summarise_orders_chapters_then_other_slugs_alphabetically():
    papers = ["synthesis", "trace", "basics", "reco_mege", "saco", "fewclass", "ffidelity", "aaa"]
    card = pd.DataFrame({"paper": papers, "experiment": "e", "verdict": R})
    assert summarise(card)["paper"].tolist() == [
        "F-Fidelity", "Few-class Fidelity", "SaCo", "ReCo / MeGe", "TRACE", ALL_PAPERS,
        "aaa (study check)", "Basics (study check)", "Synthesis (study check)"]


def test_compare_runs_classes_every_change_and_the_cli_fails_on_a_flip(tmp_path, capsys):
    from faithlab_study.runner.cli import main
    from faithlab_study.book.scorecard import compare_runs

    def card(verdicts):
        return pd.DataFrame({"paper": "trace", "experiment": "table1", "verdict": verdicts,
                             "claim": [f"T{i}: value {v}" for i, v in enumerate(verdicts)]})

    first = card([R, R, N, P, T, I, I, W, W, R, P, W])
    second = card([R, I, R, R, N, N, T, N, R, W, N, T]).assign(claim=lambda f: [f"T{i}: other text" for i in range(12)])
    table = compare_runs(first, second)
    assert table["change"].tolist() == [
        "same", "to/from inconclusive", "flip", "size or parts", "decided ↔ not testable", "to/from inconclusive",
        "inconclusive ↔ not testable",
        "flip",  # reproduced, weaker ↔ not reproduced: the effect found in one run, shown absent in the other
        "size or parts", "size or parts",  # the effect found in both runs, its size shown in one only
        "flip", "decided ↔ not testable"]
    for name, frame in (("a", first), ("b", second), ("c", first)):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]) == 1
    assert "3 flip" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "c.csv")]) == 0
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "missing.csv")]) == 2


def test_compare_runs_tells_apart_claims_that_share_a_label():
    from faithlab_study.book.scorecard import compare_runs

    card = pd.DataFrame({"paper": "ffidelity", "experiment": "images_ranking", "verdict": [R, N],
                         "claim": ["F1 (GC): ranks (Table 1)", "F1 (GC): ranks (Table 2)"]})
    table = compare_runs(card, card.assign(verdict=[R, I]))
    assert table["change"].tolist() == ["same", "to/from inconclusive"]


def test_summary_counts_reproduced_weaker_in_its_own_column(tmp_path):
    generated = tmp_path / "generated"
    claims(generated, "saco", "random_vs_methods", [W, W, R, N, P])
    write_scorecard(generated, echo=lambda message: None)
    summary = pd.read_csv(generated / SUMMARY).set_index("paper")
    assert summary.loc["SaCo", [R, W, P, N, "total"]].tolist() == [1, 2, 1, 1, 5]
    assert summary.loc[ALL_PAPERS, W] == 2


def test_compare_runs_flags_reproduced_weaker_against_not_reproduced_as_a_flip():
    from faithlab_study.book.scorecard import UNSTABLE_CHANGES, compare_runs

    card = pd.DataFrame({"paper": "saco", "experiment": "e", "claim": ["S1: a", "S2: b", "S3: c"],
                         "verdict": [W, N, W]})
    table = compare_runs(card, card.assign(verdict=[N, W, R]))
    assert table["change"].tolist() == ["flip", "flip", "size or parts"]
    assert "flip" in UNSTABLE_CHANGES and "size or parts" not in UNSTABLE_CHANGES


def test_scorecard_joins_every_claims_cell_table_and_skips_one_outside_its_folder(tmp_path):
    from faithlab_study.artifacts import CELL_COLUMNS

    generated = tmp_path / "generated"
    claims(generated, "saco", "random_vs_methods", [W, N])
    folder = generated / "saco" / "random_vs_methods"
    frame = pd.read_csv(folder / CLAIMS)
    frame["cells"] = ["cells/S1.csv", "../../../outside.csv"]
    frame.to_csv(folder / CLAIMS, index=False)
    (folder / "cells").mkdir()
    pd.DataFrame([{c: i for i, c in enumerate(CELL_COLUMNS)}] * 2).to_csv(folder / "cells" / "S1.csv", index=False)
    (tmp_path / "outside.csv").write_text("cell\nx\n")
    messages: list[str] = []
    write_scorecard(generated, echo=messages.append)
    cells = pd.read_csv(generated / "cells.csv")
    assert cells.columns.tolist() == ["paper", "experiment", "claim", "rule_id", "verdict", *CELL_COLUMNS]
    assert cells["claim"].tolist() == ["claim 0", "claim 0"] and set(cells["verdict"]) == {W}
    assert any("outside.csv" in m for m in messages), messages
    card = pd.read_csv(generated / SCORECARD, keep_default_na=False)
    assert card["cells"].tolist() == ["cells/S1.csv", "../../../outside.csv"]

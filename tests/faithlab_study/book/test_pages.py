"""What the book's pages make of the generated outputs (faithlab_study.book.pages): readable tables, claims at a
glance with links to where they are computed, the intro's sentences and the set-up tables."""

from __future__ import annotations

import html
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from faithlab_study import artifacts as outputs
from faithlab_study.book import html as fhtml
from faithlab_study.papers.setup import Setting
from faithlab_study.book import pages

R, P, N, T, I = "reproduced", "partly reproduced", "not reproduced", "not testable here", "inconclusive"
W = "reproduced, weaker"


def test_format_column_fixes_decimals_per_column_from_its_largest_value():
    # the issue's column: 0.08, 0.07926 and 0.1063 shown with one number of decimals (three significant digits)
    assert pages.format_column(pd.Series([0.08, 0.07926, 0.1063])) == ["0.080", "0.079", "0.106"]
    assert pages.format_column(pd.Series([12.345, 3.1, 150.0])) == ["12", "3", "150"]
    assert pages.format_column(pd.Series([1.5, 2.25])) == ["1.50", "2.25"]
    assert pages.format_column(pd.Series([3.0, 4.0, np.nan])) == ["3", "4", pages.DASH]  # integers stay integers
    # a column of tiny values in scientific notation, never "0.000"
    assert pages.format_column(pd.Series([7.636e-06, 8.83e-09])) == ["7.64e-06", "8.83e-09"]
    assert pages.format_column(pd.Series(["a", None])) == ["a", pages.DASH]
    assert pages.format_column(pd.Series([True, False])) == ["True", "False"]


def test_format_table_merges_sd_and_ranges_and_drops_an_all_zero_sd():
    frame = pd.DataFrame({"method": ["IG", "SA"], "accuracy": [0.912, 0.5], "accuracy std": [0.0123, 0.1],
                          "gap": [0.2, 0.3], "gap std": [0.0, 0.0], "null low": [-0.1, -0.12], "null high": [0.1, 0.3],
                          "low": [1.0, 2.0], "high": [3.0, 4.0]})
    shown = pages.format_table(frame)
    assert shown.columns.tolist() == ["method", "accuracy", "gap", "null range", "range"]
    assert shown["accuracy"].tolist() == ["0.912 ± 0.012", "0.500 ± 0.100"]
    assert shown["gap"].tolist() == ["0.200", "0.300"]  # one seed: its zero sd is not shown as "± 0"
    assert shown["null range"].tolist() == ["[-0.100, 0.100]", "[-0.120, 0.300]"]
    assert shown["range"].tolist() == ["[1, 3]", "[2, 4]"]
    # an sd column without its mean stays a column of its own
    assert pages.format_table(pd.DataFrame({"std": [0.5]})).columns.tolist() == ["std"]
    with pytest.raises(TypeError, match="frame"):
        pages.format_table([[1, 2]])


def test_fold_decision_follows_the_narrowest_layout():
    narrow = pd.DataFrame({"method": ["IG", "SA"], "score": ["0.1", "0.2"]})
    assert pages.should_fold(narrow) is None
    wide = pd.DataFrame({f"correlation_{i}": ["0.123456"] for i in range(12)})
    assert pages.should_fold(wide) == "12 columns"
    long = pd.DataFrame({"a": [str(i) for i in range(40)]})
    assert pages.should_fold(long) == "40 rows"
    # text breaks at spaces: a long sentence does not make a table wide, a long unbroken token does
    assert pages.min_width_px(pd.DataFrame({"t": ["word " * 80]})) < 100
    assert pages.min_width_px(pd.DataFrame({"t": ["x" * 200]})) > pages.COLUMN_PX


def _card(rows):
    return pd.DataFrame(rows, columns=["paper", "experiment", "claim", "paper_value", "our_value", "verdict", "rule",
                                       "premise", "note"])


def test_glance_links_each_claim_to_its_row_and_shows_its_badge_and_folded_rule():
    card = _card([["fewclass", "fidelity", "C1: Random is lowest", "0.6", "0.4 < 0.5", R, "rule <1>", "premise", "n"],
                  ["fewclass", "flips", "C5: flips", "-", "67 %", T, "", "", ""],
                  ["saco", "case_study", "S5", "", "", N, "", "", ""]])
    claims = pages.claims_for(card, "fewclass", order=["flips", "fidelity"])
    assert claims["claim"].tolist() == ["C5: flips", "C1: Random is lowest"]  # the book's order of notebooks
    page = pages.glance_html(claims, "ffidelity/ranking")
    anchor = fhtml.claim_anchor("C1: Random is lowest")
    assert f'href="../_generated/fewclass/fidelity.html#{anchor}"' in page  # relative to a page one folder down
    assert fhtml.verdict_badge(R) in page and fhtml.verdict_badge(T) in page
    assert "rule &lt;1&gt;" in page and "<b>note</b>" not in page  # escaped; the note only with notes=True
    assert "<b>note</b>" in pages.glance_html(claims, "scorecard", notes=True)
    assert page.count("<tr>") == 3  # header and two claims
    assert "saco" not in page
    assert "did not run" in pages.glance_html(claims.iloc[:0], "fewclass")


def test_summary_sentence_counts_every_verdict_and_names_the_decided_claims():
    card = _card([["p", "e", "F1 (GradCAM): x", "", "", R, "", "", ""], ["p", "e", "F2: y", "", "", N, "", "", ""],
                  ["p", "e", "F3: z", "", "", T, "", "", ""], ["p", "e", "F4: w", "", "", R, "", "", ""]])
    sentence = pages.summary_sentence("F-Fidelity", card)
    assert sentence == ("F-Fidelity: 4 paper claims tested — 2 reproduced; 1 not reproduced; 1 not testable here. "
                        "Reproduced: F1 (GradCAM); F4. Not reproduced: F2 — y.")
    assert pages.summary_sentence("TRACE", card.iloc[:0]) == "TRACE: no claim was computed in this build."
    # study checks are counted apart, never among the paper's claims (the summary table beside it does the same)
    checked = card.assign(kind=["paper", "paper", "paper", "study check"])
    assert pages.summary_sentence("F-Fidelity", checked) == (
        "F-Fidelity: 3 paper claims tested — 1 reproduced; 1 not reproduced; 1 not testable here. Reproduced: "
        "F1 (GradCAM). Not reproduced: F2 — y. Apart from these, 1 study check (1 reproduced).")
    assert pages.summary_sentence("Basics (study check)", checked.assign(kind="study check").iloc[:1]) == (
        "Basics (study check): 1 study check — 1 reproduced.")


def test_a_claims_label_ends_at_its_first_colon_outside_parentheses_and_a_shared_label_adds_the_statement():
    assert pages.split_claim("F10 (GradCAM, second: cluttered): maps agree") == (
        "F10 (GradCAM, second: cluttered)", "maps agree")
    assert pages.claim_label("F10 (GradCAM, second: cluttered): maps agree") == "F10 (GradCAM, second: cluttered)"
    card = _card([["p", "e", "Table 8: images keep accuracy", "", "", R, "", "", ""],
                  ["p", "e", "Table 8: text is robust", "", "", N, "", "", ""],
                  ["p", "e", "F10 (GradCAM, second: cluttered): maps agree", "", "", R, "", "", ""]])
    sentence = pages.summary_sentence("F-Fidelity", card)
    # the label "Table 8" names two claims: each is told apart by its statement, never cut inside a parenthesis
    assert "Reproduced: Table 8 — images keep accuracy; F10 (GradCAM, second: cluttered)." in sentence
    assert "Not reproduced: Table 8 — text is robust." in sentence


def test_failures_list_says_why_each_claim_did_not_reproduce_and_the_legend_names_every_verdict():
    card = _card([["saco", "e", "S7: IG is best on AOPC", "", "IG ranks 1 on Comprehensiveness", N, "", "", ""],
                  ["fewclass", "f", "C1 (task): Random is lowest", "", "Random 0.58", T, "",
                   "U < Δ for 9 of 30", "not testable: U < Δ for 9 of 30, against at least 50%"],
                  ["trace", "t", "T1: SA beats Greedy", "", "gap 0.01 [-0.02, 0.04]", I, "", "", ""],
                  ["trace", "t", "T2: T-p wins", "", "+0.3", R, "", "", ""]])
    page = pages.failures_html(card, "scorecard", order=["fewclass", "saco", "trace"])
    assert page.index("Few-class") < page.index("SaCo")  # papers in the book's order
    assert "S7" in page and "C1 (task)" in page and "T1" not in page and "T2" not in page  # only the failures
    assert "we measured IG ranks 1 on Comprehensiveness" in page
    assert "a premise about the stand-in failed — U &lt; Δ for 9 of 30, against at least 50%" in page
    assert fhtml.verdict_badge(N) in page and 'href="_generated/saco/e.html#' in page
    assert "did not decide" not in pages.why_sentence({"verdict": I, "our_value": "x"})
    assert pages.why_sentence({"verdict": I, "our_value": "x"}).startswith("Inconclusive: the data do not decide")
    assert "Every claim" in pages.failures_html(card[card["verdict"] == R], "scorecard")
    legend = pages.legend_html()
    assert all(fhtml.verdict_badge(v) in legend for v in (R, W, P, N, T, I))
    # the scorecard's folded explanation is a sentence, not only a ratio
    assert "<b>why this verdict</b>: Not reproduced: we measured" in pages.glance_html(card.iloc[:1], "scorecard")


def test_column_labels_are_words_and_booleans_yes_no():
    assert pages.column_label("n_epochs") == "epochs" and pages.column_label("mean_U") == "mean uncertainty U"
    assert pages.column_label("some_raw_name") == "some raw name" and pages.column_label("ΣLeRF − ΣMoRF") == "ΣLeRF − ΣMoRF"
    assert pages.column_label("S_avg") == "S_avg" and pages.column_label("U_obj") == "U_obj"  # symbols stay
    shown = pages.format_table(pd.DataFrame({"top_probability": [0.5, 0.25], "kept": [True, False]}))
    assert list(shown.columns) == ["top-class probability", "kept"] and shown["kept"].tolist() == ["yes", "no"]
    out = pages.relabel_html('<table><tr><th>n_epochs</th><th>acc</th></tr><tr><td>True</td><td>0.5</td></tr></table>')
    assert "<th>epochs</th>" in out and "<td>yes</td>" in out and "n_epochs" not in out
    assert pages.relabel_html("no table, n_epochs") == "no table, n_epochs"


def test_build_line_names_a_local_build_and_sums_the_notebooks_run_time():
    local = pages.build_html("https://OWNER.github.io/REPOSITORY/", seconds=125.0, notebooks=3, profiles=["book"])
    assert "local (not published)" in local and "OWNER" not in local
    assert "3 notebooks ran for 2 min 05 s in total (book profile" in local
    published = pages.build_html("https://lab.github.io/faithlab/", seconds=0, notebooks=0, profiles=[])
    assert 'href="https://lab.github.io/faithlab/"' in published and "No notebook" in published


def _guide_inputs():
    rec = pd.DataFrame({"metric": ["a", "b", "c"] * 2, "label": ["A", "B", "C"] * 2,
                        "spearman": [0.9, 0.87, 0.1, 0.5, 0.1, -0.2],
                        "spearman low": [0.88, 0.85, -0.2, 0.3, -0.1, -0.4],
                        "spearman high": [0.92, 0.9, 0.4, 0.7, 0.3, 0.0], "setup": ["s1"] * 3 + ["s2"] * 3})
    cost = pd.DataFrame({"metric": ["a", "b", "c"], "label": ["A", "B", "C"], "inputs per sample": [50.0, 9.0, 9.0]})
    card = pd.DataFrame({"metric": ["b", "a", "c"], "label": ["B", "A", "C"], "overall": [1.5, 2.0, 2.5],
                         **{f"rank {c}": [1, 2, 3] for c in ("recovery", "OOD recovery", "resilience",
                                                             "reactivity", "cost")}})
    return rec, cost, card


def test_answer_guide_and_reconciliation_are_generated_from_the_synthesis_tables():
    from faithlab_study.papers import synthesis as syn

    rec, cost, card = _guide_inputs()
    guide = syn.guide(rec, {"case one": "s1", "case two": "s2"}, cost_table=cost, reference_spread={"A": 0.5},
                      margin=0.1)
    answer = pages.answer_html(guide, card, "which_metric.html", pd.DataFrame({"images": [24, 24]}))
    assert 'href="which_metric.html"' in answer and "A (2 of 2)" in answer and "scored on 24 images" in answer
    assert "one trained model scored" in answer
    replicated = pages.answer_html(guide, card, "which_metric.html", pd.DataFrame({"images": [24, 24],
                                                                                  "replicas": [5, 5]}))
    assert "Each situation is 5 independently trained models, each scored on 24 images" in replicated
    page = pages.guide_html(guide, pd.DataFrame({"setup": ["s1"], "images": [24]}), "which_metric")
    assert "Case one" in page and "24 images" in page and "0.90 [0.88, 0.92]" in page
    assert "<td>holds up</td>" in page and "<td>beaten by A, B</td>" in page and "<td>not separated</td>" in page
    assert 'href="_generated/synthesis/metrics_compared.html"' in page
    assert "synthesis notebook did not run" in pages.answer_html(guide.iloc[:0], card, "w.html")
    scorecard = _card([["saco", "e", "S1: x", "", "", R, "", "", ""]])
    rows = pd.DataFrame({"metric": ["saco"], "label": ["SaCo"], "overall": [12.0],
                         **{f"rank {c}": [r] for c, r in (("recovery", 14), ("OOD recovery", 2), ("resilience", 9),
                                                         ("reactivity", 15), ("cost", 3))}})
    rows = pd.concat([rows, card.assign(overall=1.0)], ignore_index=True)
    text = pages.reconcile_html(rows, scorecard, "which_metric")
    assert "SaCo has mean rank 12.0 of 4, pulled down most by reactivity (rank 15) and recovery (rank 14)" in text
    assert "1 reproduced" in text and "can disagree without contradiction" in text
    with_check = pd.concat([scorecard.assign(kind="paper"),
                            _card([["saco", "e", "S0: a check", "", "", R, "", "", ""]]).assign(kind="study check")])
    text = pages.reconcile_html(rows, with_check, "which_metric")  # a study check is never a paper claim
    assert "its paper claims here — 1 reproduced (and 1 study check, counted apart)" in text


def test_setup_rows_read_the_executed_notebooks_parameters(tmp_path):
    (tmp_path / "p").mkdir()
    meta = {"metadata": {"papermill": {"parameters": {"n_images": 40, "steps": 16}}}, "cells": []}
    (tmp_path / "p" / "e.ipynb").write_text(json.dumps(meta))
    settings = [Setting("images", "2,500", "p/e", "{n_images} per task"),
                Setting("steps", "200", "p/e", lambda params: f"{params['steps'] * 2} evaluations"),
                Setting("seeds", "5", "p/missing", "{seed}")]
    frame = pages.setup_rows(settings, tmp_path)
    assert frame.values.tolist() == [["images", "2,500", "40 per task"], ["steps", "200", "32 evaluations"],
                                     ["seeds", "5", "not run in this build"]]
    with pytest.raises(KeyError, match="seed"):
        pages.setup_rows([Setting("seeds", "5", "p/e", "{seed}")], tmp_path)
    html = pages.table_html(frame, css_class="fl-setup")
    assert html.count("<tr>") == 4 and 'class="fl-setup"' in html


def test_toc_order_lists_the_generated_notebooks_in_reading_order():
    toc = {"root": "intro", "parts": [{"chapters": [
        {"file": "ffidelity", "sections": [{"file": "ffidelity/ranking", "sections": [
            {"file": "_generated/ffidelity/images_ranking"}]}, {"file": "_generated/ffidelity/size_plateau"}]},
        {"file": "saco", "sections": [{"file": "_generated/saco/case_study"}]}]}]}
    assert pages.toc_order(toc) == ["ffidelity/images_ranking", "ffidelity/size_plateau", "saco/case_study"]


def test_badge_and_anchor_are_stable_and_claims_take_known_verdicts_only(tmp_path):
    assert fhtml.claim_anchor("C1: x") == fhtml.claim_anchor("C1: x") != fhtml.claim_anchor("C1: y")
    assert re.fullmatch(r"claim-[0-9a-f]{10}", fhtml.claim_anchor("C1: x"))
    assert 'class="fl-badge fl-badge-not-testable-here"' in fhtml.verdict_badge(T)
    with pytest.raises(ValueError, match="verdict"):  # the badge shows a verdict that recording checked
        outputs.Outputs("p/e", tmp_path).claim("c", paper_value=1, our_value=1, verdict="great")
    assert not math.isnan(pages.CHAR_PX)


def test_transfer_section_lists_the_settings_that_differ_and_the_scale_of_the_claims():
    setup = pd.DataFrame({"setting": ["images", "model", "masks"], "paper": ["2,500", "ResNet-50", "—"],
                          "ours": ["30", "ResNet-50", "N = 10"]})
    claims = pd.DataFrame({"units": ["30", "6", "120"], "replicas": ["3 of 3 replicas", "one trained model", "—"]})
    text = pages.transfer_html(setup, claims)
    # only "images" differs: "model" is the same and the paper does not set "masks"
    assert "1 of the 3 settings below differ from the paper&#x27;s: images (paper: 2,500; here: 30)." in text
    assert "6–120 units in their smallest cell (median 30) and 3 trained replicas, 1 on one trained model." in text
    assert text.startswith('<p class="fl-transfer"><b>How far this transfers.</b>')
    # a claim on one statistic per replica counts its replicas too (it once read "0 of 0 replicas" and counted 0)
    per_replica = claims.assign(replicas=["3 of 3 replicas", "5 replicas (each too few units to decide alone)", "—"])
    assert "and 3–5 trained replicas." in pages.transfer_html(setup, per_replica)
    # the claims' count of trained replicas wins over the agreement's "k of R", which leaves out the replicas
    # counted apart (Few-class's premise replicas once read "2–3 trained replicas" for 3 and 5)
    counted = claims.assign(replicas=["2 of 2 replicas (2 left out: too few units alone; 1 not testable alone)",
                                      "one trained model", "—"], trained_replicas=[5, 1, None])
    assert "and 5 trained replicas, 1 on one trained model." in pages.transfer_html(setup, counted)
    assert "and 2 trained replicas, 1 on one trained model." in pages.transfer_html(
        setup, counted.drop(columns="trained_replicas"))


def test_the_preregistration_shows_the_procedure_the_rules_their_registrations_their_log_and_the_coverage():
    from faithlab_study import verdicts

    procedure = pages.procedure_html()
    for name in verdicts.DECISIONS:
        assert f"<b>{name}</b>" in procedure
    for method in verdicts.INTERVAL_METHODS:
        assert html.escape(method) in procedure
    assert "t interval on the replica-level statistics" in procedure and "0.74" in procedure
    card = _card([["basics", "digits_classifier", "IG deletion AUC below random (sanity check)", "", "", R, "",
                   "", ""]]).assign(rule_id="B1")
    rules = pages.rules_html(card, "preregistration", "basics")
    assert 'id="rule-B1"' in rules and "digits_classifier.html#" in rules
    assert "@verdicts.registered(" in rules and "margin_source=" in rules and "def claim_deletion_sanity(" in rules
    assert "not decided in this build" in pages.rules_html(card.assign(rule_id=""), "preregistration", "basics")
    assert "No rule is registered" in pages.rules_html(card, "preregistration", "no such paper")
    guide = pages.rules_html(card, "preregistration", "synthesis")  # the guide's registered rule, a study answer
    assert 'id="rule-guide"' in guide and "study answer" in guide and "holds up: recovers and not worse" in guide
    assert "no difference for two metrics" in guide  # the null column
    assert 'id="rule-guide"' not in rules
    log = pages.rules_log_html()
    assert "registered" in log and "2026-11-27" in log and "basics" in log and "holds_up" in log
    frame = pd.DataFrame({"interval": ["t on units", "t on units"], "replicas": [1, 1], "units": [30, 60],
                          "ratio": [None, None], "kind": ["skewed", "skewed"], "share": [None, None],
                          "logit SD": [None, None], "coverage": [0.921, 0.947], "se": [0.004, 0.0035],
                          "data sets": [4000, 4000], "asserted": [False, True]})
    table = pages.coverage_html(frame)
    assert "0.947 ± 0.004" in table and "not held to it: skewed, n = 30: 0.921" in table


def test_reproduced_weaker_is_counted_named_and_listed_with_why():
    card = _card([["p", "e", "F1: x", "", "lead 0.02 [0.01, 0.03]", W, "", "", ""],
                  ["p", "e", "F2: y", "", "", R, "", "", ""], ["p", "e", "F3: z", "", "", W, "", "", ""]])
    sentence = pages.summary_sentence("F-Fidelity", card)
    # the verdict holds a comma: the counts are separated by semicolons
    assert sentence == ("F-Fidelity: 3 paper claims tested — 1 reproduced; 2 reproduced, weaker. Reproduced: F2. "
                        "Reproduced, weaker: F1; F3.")
    assert W in pages.WHY_VERDICTS and R not in pages.WHY_VERDICTS and I not in pages.WHY_VERDICTS
    page = pages.failures_html(card, "scorecard")
    assert "F1" in page and "F3" in page and "F2" not in page and fhtml.verdict_badge(W) in page
    why = pages.why_sentence(card.iloc[0].to_dict())
    assert why.startswith("Reproduced, weaker: the paper's direction is shown") and "lead 0.02 [0.01, 0.03]" in why


def test_every_verdict_has_a_badge_class_of_its_own_styled_by_the_book(request):
    from faithlab_study.verdicts import MEANINGS, VERDICTS

    classes = [fhtml.verdict_class(v) for v in VERDICTS]
    assert fhtml.verdict_class(W) == "fl-badge-reproduced-weaker" and len(set(classes)) == len(VERDICTS)
    assert all(re.fullmatch(r"fl-badge-[a-z0-9-]+", c) for c in classes)  # no comma or space in a class name
    assert f'class="fl-badge fl-badge-reproduced-weaker">{html.escape(W)}</span>' in fhtml.verdict_badge(W)
    css = (request.config.rootpath / "book" / "_static" / "faithlab.css").read_text()
    assert all(f".{c} {{" in css for c in classes)
    assert set(MEANINGS) == set(VERDICTS)


def test_glance_links_a_claims_cell_data_and_says_how_to_recompute_it():
    card = _card([["saco", "random_vs_methods", "S1: x", "", "", W, "r", "", ""],
                  ["saco", "random_vs_methods", "S2: y", "", "", R, "r", "", ""]]).assign(cells=["cells/S1.csv", ""])
    page = pages.glance_html(card, "saco/part")
    assert page.count(fhtml.CELLS_LINK) == 1  # the claim without cells links none
    assert 'href="../_generated/saco/random_vs_methods/cells/S1.csv"' in page
    assert html.escape(fhtml.CELLS_HOW) in page
    row = {"paper": "saco", "experiment": "random_vs_methods", "claim": "S1: x", "paper_value": "", "our_value": "",
           "verdict": W, "rule": "r", "cells": "cells/S1.csv"}
    assert 'href="random_vs_methods/cells/S1.csv"' in fhtml.claim_html(row)  # beside the notebook's page
    assert fhtml.CELLS_LINK not in fhtml.claim_html({**row, "cells": ""})


def test_guide_reads_an_absent_recovery_and_reconcile_counts_reproduced_weaker_as_found():
    from faithlab_study.papers import synthesis as syn

    rec, cost, card = _guide_inputs()
    guide = syn.guide(rec, {"case one": "s1", "case two": "s2"}, cost_table=cost, reference_spread={"A": 0.5},
                      margin=0.1)
    absent = guide.assign(**{"holds up": False, "beaten by": "", "not separated": False, "recovers": "absent"})
    page = pages.guide_html(absent, pd.DataFrame({"setup": ["s1"], "images": [24]}), "which_metric")
    assert "<td>does not recover</td>" in page
    rows = pd.DataFrame({"metric": ["saco"], "label": ["SaCo"], "overall": [12.0],
                         **{f"rank {c}": [r] for c, r in (("recovery", 14), ("OOD recovery", 2), ("resilience", 9),
                                                         ("reactivity", 15), ("cost", 3))}})
    rows = pd.concat([rows, card.assign(overall=1.0)], ignore_index=True)
    text = pages.reconcile_html(rows, _card([["saco", "e", "S1: x", "", "", W, "", "", ""]]), "which_metric")
    assert "1 reproduced, weaker" in text and "can disagree without contradiction" in text


def test_the_procedure_names_the_four_cell_outcomes_the_six_verdicts_and_the_one_sided_level():
    from faithlab_study.verdicts import VERDICTS
    from faithlab_study.verdicts.decisions import OUTCOMES

    procedure = pages.procedure_html()
    assert all(f"<b>{html.escape(w)}</b>" in procedure for w in (*OUTCOMES, *VERDICTS))
    assert "one-sided test at 5 %" in procedure and "two-sided 90 % interval" in procedure and "Holm" in procedure
    assert "<b>fails</b>" not in procedure and "straddles the margin" not in procedure  # the old outcome is gone


def test_the_build_copies_the_cell_tables_the_claims_rows_link(tmp_path, request):
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("faithlab_book_ext",
                                                  request.config.rootpath / "book" / "_ext" / "faithlab_book.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    src, out = tmp_path / "book", tmp_path / "html"
    for name in ("saco/random_vs_methods/cells/S1.csv", "cells.csv", ".staging/x/cells/S9.csv",
                 "saco/random_vs_methods/t.csv"):
        (src / "_generated" / name).parent.mkdir(parents=True, exist_ok=True)
        (src / "_generated" / name).write_text("cell\na\n")
    app = SimpleNamespace(srcdir=str(src), outdir=str(out), builder=SimpleNamespace(format="html"))
    ext._copy_cell_tables(app, None)
    copied = sorted(str(p.relative_to(out)) for p in out.rglob("*.csv"))
    assert copied == ["_generated/cells.csv", "_generated/saco/random_vs_methods/cells/S1.csv"]
    ext._copy_cell_tables(SimpleNamespace(**{**vars(app), "outdir": str(tmp_path / "failed")}), RuntimeError())
    assert not (tmp_path / "failed").exists()  # a failed build copies nothing


def test_the_preregistration_page_lists_every_verdict_the_change_of_procedure_moved():
    import pandas as pd

    from faithlab_study.book import pages

    card = pd.DataFrame([
        {"paper": "saco", "experiment": "x", "claim": "S1 (a): moved", "verdict": "reproduced, weaker",
         "before": "not reproduced", "kind": "paper", "note": "weaker in 1 of 1 cells"},
        {"paper": "saco", "experiment": "x", "claim": "S2 (b): same", "verdict": "reproduced", "before": "reproduced",
         "kind": "paper", "note": ""},
        {"paper": "saco", "experiment": "x", "claim": "S3 (c): by hand", "verdict": "inconclusive", "before": "",
         "kind": "paper", "note": ""}])
    assert list(pages.moved_rows(card)["claim"]) == ["S1 (a): moved"]
    text = pages.moved_html(card, "preregistration")
    assert "1 of the 2 claims" in text and "S1" in text and "S2" not in text and "fl-badge-reproduced-weaker" in text
    assert "changed verdict" in pages.moved_html(card.iloc[1:2], "preregistration")


def test_the_error_rate_table_names_each_statement_and_its_worst_design():
    from faithlab_study.book import pages
    from faithlab_study.verdicts import error_rates

    frame = error_rates.simulate(sets=20, grid={"replicas": (3,), "units": (20,), "ratio": (0.0,), "kinds": ("normal",),
                                                "cells": (4,), "binary units": (30,), "logit SD": (0.0,)})
    text = pages.error_rates_html(frame)
    for statement in set(frame["statement"]):
        assert statement.replace("'", "&#x27;") in text
    assert "worst design" in text and "R = 3, n = 20" in text


def test_the_answer_opens_with_a_grid_of_metrics_by_situation():
    """The front page's answer is taken in at a glance: one row per metric, one column per situation, each cell the
    guide's state there, the metrics that hold up first; the sentence follows."""
    from faithlab_study.papers import synthesis as syn

    rec, cost, card = _guide_inputs()
    guide = syn.guide(rec, {"case one": "s1", "case two": "s2"}, cost_table=cost, reference_spread={"A": 0.5},
                      margin=0.1)
    answer = pages.answer_html(guide, card, "which_metric.html")
    grid, _, sentence = answer.partition("</table>")
    assert "fl-guide-grid" in grid and "<th>Case one</th>" in grid and "<th>Case two</th>" in grid
    # the question and the guide's link before the grid (on the first screen), the answer's sentence after it
    assert grid.index("Which metric to trust?") < grid.index('href="which_metric.html"') < grid.index("fl-guide-grid")
    assert "A (2 of 2)" in sentence
    rows = grid.split("<tr>")[2:]  # after the head
    assert len(rows) == 3 and "A</td>" in rows[0]  # A holds up in both situations: first
    assert rows[0].count("✔ holds up") == 2
    states = {syn_row["label"]: pages.glance_state(syn_row) for syn_row in guide.to_dict("records")
              if syn_row["situation"] == "case one"}
    assert states["A"] == "holds up" and states["C"] in ("beaten", "absent", "not separated", "weaker")
    assert pages.glance_state({"holds up": False, "beaten by": "", "recovers": "weaker"}) == "weaker"
    assert pages.glance_state({"holds up": False, "beaten by": "", "recovers": "absent"}) == "absent"
    assert pages.glance_state({"holds up": False, "beaten by": "A", "recovers": "holds"}) == "beaten"
    assert pages.glance_grid_html(guide.iloc[:0]) == ""


def test_the_api_table_lists_the_settings_each_metric_refuses():
    """The API page's metrics table says, from the declarations, which settings measure nothing (issue 92)."""
    from faithlab.metrics.registry import METRICS
    html = pages.metrics_html()
    assert "refused: the score would be the same for every map" in html
    assert "n_perturb_samples = 1" in html and "n_subsets = 2" in html and "edge = 1" in html
    assert sum(bool(m.degenerate) for m in METRICS.values()) >= 18


def test_the_rule_changes_of_issue_90_are_listed_from_the_change_logs():
    from faithlab_study.verdicts import rules

    frame = pages.rule_changes_rows()
    marked = {rid for rid, entries in rules.log().items() if any(e.get("issue") == rules.REDECIDED_BY for e in entries)}
    assert set(frame["rule"]) == marked and {"F1", "D3.accuracy"} <= marked
    f1 = frame.set_index("rule").loc["F1"]
    assert f1["margin before"] == "0.0367" and "R-Fidelity 0.0167" in f1["margin now"]
    assert f1["why"] == next(e["why"] for e in rules.log()["F1"] if e.get("field") == "margin")
    text = pages.rule_changes_html()
    assert f"{len(frame)} rules changed in issue 90 (" in text and "D3.agreement.masked" in text

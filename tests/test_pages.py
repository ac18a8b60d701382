"""What the book's pages make of the generated outputs (faithlab.study.pages): readable tables, claims at a
glance with links to where they are computed, the intro's sentences and the set-up tables."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from faithlab import outputs
from faithlab.protocols.setup import Setting
from faithlab.study import pages

R, P, N, T = "reproduced", "partly reproduced", "not reproduced", "not testable here"


def test_format_column_fixes_decimals_per_column_from_its_largest_value():
    # the column: 0.08, 0.07926 and 0.1063 shown with one number of decimals (three significant digits)
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
    anchor = outputs.claim_anchor("C1: Random is lowest")
    assert f'href="../_generated/fewclass/fidelity.html#{anchor}"' in page  # relative to a page one folder down
    assert outputs.verdict_badge(R) in page and outputs.verdict_badge(T) in page
    assert "rule &lt;1&gt;" in page and "<b>note</b>" not in page  # escaped; the note only with notes=True
    assert "<b>note</b>" in pages.glance_html(claims, "scorecard", notes=True)
    assert page.count("<tr>") == 3  # header and two claims
    assert "saco" not in page
    assert "did not run" in pages.glance_html(claims.iloc[:0], "fewclass")


def test_summary_sentence_counts_every_verdict_and_names_the_decided_claims():
    card = _card([["p", "e", "F1 (GradCAM): x", "", "", R, "", "", ""], ["p", "e", "F2: y", "", "", N, "", "", ""],
                  ["p", "e", "F3: z", "", "", T, "", "", ""], ["p", "e", "F4: w", "", "", R, "", "", ""]])
    sentence = pages.summary_sentence("F-Fidelity", card)
    assert sentence == ("F-Fidelity: 4 claims tested — 2 reproduced, 1 not reproduced, 1 not testable here "
                        "(reproduced: F1 (GradCAM), F4; not reproduced: F2).")
    assert pages.summary_sentence("TRACE", card.iloc[:0]) == "TRACE: no claim was computed in this build."


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


def test_badge_and_anchor_are_stable_and_reject_unknown_verdicts():
    assert outputs.claim_anchor("C1: x") == outputs.claim_anchor("C1: x") != outputs.claim_anchor("C1: y")
    assert re.fullmatch(r"claim-[0-9a-f]{10}", outputs.claim_anchor("C1: x"))
    assert 'class="fl-badge fl-badge-not-testable-here"' in outputs.verdict_badge(T)
    with pytest.raises(ValueError, match="verdict"):
        outputs.verdict_badge("great")
    assert not math.isnan(pages.CHAR_PX)

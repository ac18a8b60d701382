"""What the book"s pages show of the generated outputs, for the book"s Sphinx extension
(``book/_ext/faithlab_book.py``) to place: it is a thin layer over these functions, so that what a reader sees is
tested here (``tests/faithlab_study/book/test_pages.py``) and the CSV files keep every digit (each table links its CSV).

- :mod:`~faithlab_study.book.pages.tables`: tables formatted for reading, folded when they would not fit;
- :mod:`~faithlab_study.book.pages.claims`: claims at a glance, the scorecard"s sentences and lists, the set-up
  tables, "how far this transfers" and the build"s line;
- :mod:`~faithlab_study.book.pages.preregistration`: the decision procedure, the intervals" coverage, the
  registered rules and their log; :mod:`~faithlab_study.book.pages.error_rates`: the statements' simulated error
  rates; :mod:`~faithlab_study.book.pages.moved`: the verdicts the change of procedure moved;
- :mod:`~faithlab_study.book.pages.guide`: the answer to "which metric should I trust?" and the guide.
"""

from __future__ import annotations

from faithlab_study.book.html import DASH
from faithlab_study.book.pages import claims, guide, preregistration, tables
from faithlab_study.book.pages.tables import (format_column, column_label, relabel_html, format_table, min_width_px,
                                              should_fold, table_html, html_table_frame, fold_html_output, COLUMN_PX,
                                              CHAR_PX, CELL_PAD_PX, COLUMN_LABELS)
from faithlab_study.book.pages.claims import (notebook_href, claims_for, glance_html, agreement_html, counts,
                                              cells_link, tally_text, split_claim, claim_label, shorten,
                                              summary_sentence, why_sentence,
                                              failures_html, legend_html, executed_parameters, setup_rows,
                                              metrics_html, toc_order, build_html, transfer_html, WHY_VERDICTS)
from faithlab_study.book.pages.preregistration import (procedure_html, coverage_frame, coverage_html, rules_html,
                                                       rules_log_html, preregistration_html)
from faithlab_study.book.pages.guide import answer_html, guide_html, reconcile_html, glance_grid_html, glance_state
from faithlab_study.book.pages.error_rates import error_rates_frame, error_rates_html
from faithlab_study.book.pages.moved import moved_html, moved_rows, rule_changes_html, rule_changes_rows

__all__ = [
    "DASH",
    "format_column", "column_label", "relabel_html", "format_table", "min_width_px", "should_fold", "table_html",
    "html_table_frame", "fold_html_output", "COLUMN_PX", "CHAR_PX", "CELL_PAD_PX", "COLUMN_LABELS", "notebook_href",
    "claims_for", "glance_html", "agreement_html", "counts", "cells_link", "tally_text", "split_claim", "claim_label",
    "shorten",
    "summary_sentence", "why_sentence", "failures_html", "legend_html", "executed_parameters", "setup_rows",
    "metrics_html", "toc_order", "build_html", "transfer_html", "WHY_VERDICTS", "procedure_html", "coverage_frame",
    "coverage_html", "rules_html", "rules_log_html", "preregistration_html", "answer_html", "guide_html",
    "reconcile_html", "glance_grid_html", "glance_state", "error_rates_frame", "error_rates_html", "moved_html", "moved_rows",
    "rule_changes_html", "rule_changes_rows"
]

"""The pre-registration page's error-rate table: how often each statement of the decision procedure is made when it
is false, simulated for the whole rule (:mod:`faithlab_study.verdicts.error_rates`, the table
tests/faithlab_study/verdicts/test_error_rates.py asserts)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.pages.tables import format_table, table_html

__all__ = ["error_rates_frame", "error_rates_html", "SETS"]

SETS = 800
"""Simulated data sets per design in the book's table (the test runs 300)."""


def error_rates_frame(generated: Path | None = None) -> pd.DataFrame:
    """The simulated error rates (:func:`faithlab_study.verdicts.error_rates.simulate`), cached in
    ``generated``/error_rates.csv under a key of the source of the simulation and of the decisions it runs, so that a
    warm build simulates nothing."""
    from faithlab_study.book.pages.preregistration import cached_frame, source_key
    from faithlab_study.verdicts import decisions, error_rates, intervals

    return cached_frame(generated, "error_rates.csv", source_key(error_rates, decisions, intervals, extra=str(SETS)),
                        lambda: error_rates.simulate(sets=SETS, seed=0))


def error_rates_html(frame: pd.DataFrame) -> str:
    """Per statement and decision shape: the worst design's rate (± its simulation SE, and the design), the rate
    pooled over the designs and how many designs; then every design folded."""
    from faithlab_study.verdicts.decisions import ALPHA

    rows = []
    for (statement, shape), part in frame.groupby(["statement", "shape"], sort=False):
        worst = part.loc[part["rate"].idxmax()]
        design = f"R = {worst['replicas']}, n = {worst['units']}, SD ratio {worst['ratio']:g}, {worst['kind']}"
        pooled = (part["rate"] * part["data sets"]).sum() / part["data sets"].sum()
        rows.append(html.element("tr", html.cells(
            html.escaped(statement), html.escaped(shape), f"{worst['rate']:.3f} ± {worst['se']:.3f}",
            html.escaped(design), f"{pooled:.3f}", f"{len(part)}")))
    head = html.head_row("statement (made where it is false)", "decision shape", "worst design (± simulation SE)",
                         "that design", "over all designs", "designs")
    intro = html.element("p", html.escaped(
        f"Each statement is a one-sided test at {ALPHA:.0%}; with several cells the counts are Holm-corrected. The "
        "simulation puts the truth exactly where the statement is false — at the margin for holds and absent, at the "
        "value of no effect for weaker (present), every cell at the margin for not reproduced, one cell short for "
        "reproduced — and counts how often the study's own decision functions make it anyway."))
    detail = table_html(format_table(frame))
    return intro + html.glance_table(head, rows) + html.fold(detail, "Every simulated design: open")

"""The pre-registration page's list of the verdicts that the change of decision procedure (issue 90) moved: each
claim's verdict as published beside the verdict the same data got by the procedure before it
(:attr:`faithlab.study.verdicts.Claim.before`, decided in the same run), so that a change of framework never hides."""

from __future__ import annotations

import pandas as pd

from faithlab import html
from faithlab.html import verdict_badge
from faithlab.study.book.pages.claims import claim_label, notebook_href

__all__ = ["moved_html", "moved_rows"]


def moved_rows(scorecard: pd.DataFrame) -> pd.DataFrame:
    """The scorecard's claims whose ``before`` verdict differs from their published one (claims without a
    ``before``, recorded outside :func:`faithlab.study.verdicts.replicated`, are left out)."""
    if "before" not in scorecard or scorecard.empty:
        return scorecard.iloc[:0]
    before = scorecard["before"].fillna("").astype(str)
    return scorecard[(before != "") & (before != scorecard["verdict"].astype(str))]


def moved_html(scorecard: pd.DataFrame, docname: str) -> str:
    """A table claim | kind | before issue 90 | now | why now (the deciding function's outcome), or a sentence when
    no verdict moved."""
    moved = moved_rows(scorecard)
    counted = int((scorecard.get("before", pd.Series(dtype=str)).fillna("").astype(str) != "").sum())
    intro = html.element("p", html.escaped(
        f"The same data, decided twice in the same run: by the procedure before issue 90 (one boundary, the margin; "
        f"95 % intervals; no correction over cells) and by the one above. {len(moved)} of the {counted} claims "
        "decided both ways changed verdict. The old procedure's bootstrap-seed check is not rerun, so an old verdict "
        "that moved with the bootstrap seed shows here as decided."))
    if moved.empty:
        return intro
    rows = []
    for row in moved.itertuples(index=False):
        href = notebook_href(row.paper, row.experiment, docname, row.claim)
        kind = "study check" if str(getattr(row, "kind", "paper")) == "study check" else "paper"
        note = str(getattr(row, "note", "") or "")
        rows.append(html.element("tr", html.element("td", html.element("a", html.escaped(claim_label(row.claim)),
                                                                       href=href), cls="fl-claim") + html.cells(
            kind, verdict_badge(str(row.before)), verdict_badge(str(row.verdict)), html.escaped(note) or "—")))
    head = html.head_row("claim", "kind", "before issue 90", "now", "why now (the deciding function's outcome)")
    return intro + html.glance_table(head, rows)

"""The pre-registration page's list of the verdicts that the change of decision procedure (issue 90) moved: each
claim's verdict as published beside the verdict the same data got by the procedure before it
(:attr:`faithlab_study.verdicts.Claim.before`, decided in the same run, by the rules as registered before it), so that
a change of framework never hides; and the rule changes of that issue, from the rules' change logs."""

from __future__ import annotations

import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.html import verdict_badge
from faithlab_study.book.pages.claims import claim_label, notebook_href

__all__ = ["moved_html", "moved_rows", "rule_changes_rows", "rule_changes_html"]


def moved_rows(scorecard: pd.DataFrame) -> pd.DataFrame:
    """The scorecard's claims whose ``before`` verdict differs from their published one (claims without a
    ``before``, recorded outside :func:`faithlab_study.verdicts.replicated`, are left out)."""
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
        f"95 % intervals; no correction over cells; each rule as registered before it, the changes listed below "
        f"undone) and by the one above. {len(moved)} of the {counted} claims "
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


def _shown(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in value.items())
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def rule_changes_rows() -> pd.DataFrame:
    """One row per rule that issue 90 changed (its log's entries marked ``"issue": 90``,
    :func:`faithlab_study.verdicts.rules.before`): rule id, the fields changed, the margin before and now, and the
    reason (the first marked entry's)."""
    from faithlab_study.verdicts import rules

    rows = []
    for rid, entries in rules.log().items():
        marked = [e for e in entries if e.get("issue") == rules.REDECIDED_BY and e.get("change") == "changed"]
        if not marked:
            continue
        margin = next((e for e in marked if e["field"] == "margin"), None)
        rows.append({"rule": rid, "fields": ", ".join(dict.fromkeys(e["field"] for e in marked)),
                     "margin before": _shown(margin["old"]) if margin else "",
                     "margin now": _shown(margin["new"]) if margin else "", "why": marked[0]["why"]})
    return pd.DataFrame(rows, columns=["rule", "fields", "margin before", "margin now", "why"])


def rule_changes_html() -> str:
    """A table rule | fields changed | margin before → now | why, of every rule issue 90 changed (from the change
    logs, so it lists each change the logs record), or a sentence when none did."""
    frame = rule_changes_rows()
    intro = html.element("p", html.escaped(
        f"{len(frame)} rules changed in issue 90 (one margin rule per kind of claim, on the stand-in's scale; "
        "statistics and intervals reformulated), each change in its rule's log with its reason (the verdicts above "
        "are decided again with them undone). A "
        "margin stays absolute where the statistic's scale is the paper's own (a probability, an accuracy, a share, "
        "a correlation, a rank among the same methods, a ratio)."))
    if frame.empty:
        return intro
    rows = [html.element("tr", html.cells(html.escaped(r.rule), html.escaped(r.fields),
                                          html.escaped(r["margin before"] or "—"),
                                          html.escaped(r["margin now"] or "—"),
                                          html.fold(html.element("p", html.escaped(r.why)),
                                                    html.escaped(_headline(r.why)))))
            for _, r in frame.iterrows()]
    return intro + html.glance_table(html.head_row("rule", "fields changed", "margin before", "margin now", "why"),
                                     rows)


def _headline(why: str) -> str:
    """The reason's first clause (up to its first colon or full stop, without the issue's number), for the table's
    closed fold."""
    why = why.removeprefix("issue 90, ")
    cut = min((i for i in (why.find(":"), why.find(". ")) if i > 0), default=len(why))
    return why[:cut]

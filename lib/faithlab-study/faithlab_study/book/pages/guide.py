"""The answer to "which metric should I trust?": the front page's answer, the guide's recommendations per
situation and where the synthesis and a paper's chapter may disagree, from the synthesis notebook's tables."""

from __future__ import annotations

import math

import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.html import DASH
from faithlab_study.book.pages.claims import counts, tally_text
from faithlab_study.verdicts.words import PRESENT

QUESTION = html.element("b", "Which metric to trust?")
"""The front page's answer opens with the question it answers."""

ABSENT = ("absent", "fails")
"""A recovery's outcome that says the metric does not recover the ranking: "absent" (its interval shown short of the
margin), or "fails", the word of the tables written before the outcomes were renamed."""

GLANCE = {"holds up": "✔ holds up", "weaker": "◐ recovers, less", "beaten": "✘ beaten", "absent": "✘ does not recover",
          "not separated": "○ not separated", "undecided": "? undecided"}
"""The at-a-glance grid's word per metric × situation (:func:`glance_grid_html`), strongest first."""


def glance_state(row: dict) -> str:
    """One guide row's state for the grid: holds up; beaten (by a metric shown better); absent (shown not to recover
    the ranking by the margin); weaker (shown to recover it above chance, not by the margin, and not beaten); not
    separated (recovers, neither shown to hold up nor beaten); undecided (whether it recovers is undecided)."""
    if row.get("holds up"):
        return "holds up"
    if isinstance(row.get("beaten by"), str) and row["beaten by"]:
        return "beaten"
    recovers = row.get("recovers")
    if recovers in ABSENT:
        return "absent"
    if recovers == "weaker":
        return "weaker"
    if recovers == "undecided":
        return "undecided"
    return "not separated"


def glance_grid_html(guide: pd.DataFrame) -> str:
    """The guide's answer at a glance: one row per metric, one column per situation (the cost budget apart), each
    cell the metric's state there (:data:`GLANCE`); "" without a guide."""
    from faithlab_study.papers.synthesis import COST_CASE

    if guide.empty or "situation" not in guide:
        return ""
    part = guide[guide["situation"] != COST_CASE]
    situations = list(dict.fromkeys(part["situation"]))
    labels = list(dict.fromkeys(part["label"]))
    state = {(r["label"], r["situation"]): glance_state(r) for r in part.to_dict("records")}
    order = {k: i for i, k in enumerate(GLANCE)}
    labels.sort(key=lambda m: sum(order[state[m, c]] for c in situations if (m, c) in state))
    body = [html.element("tr", html.element("td", html.escaped(m), cls="fl-claim") + "".join(
        html.element("td", html.escaped(GLANCE[state[m, c]]) if (m, c) in state else DASH,
                     cls=f"fl-glance-{state[m, c].replace(' ', '-')}" if (m, c) in state else "")
        for c in situations)) for m in labels]
    head = html.head_row("metric", *(c[0].upper() + c[1:] for c in situations))
    return html.glance_table(head, body, cls="fl-glance fl-guide-grid")


def answer_html(guide: pd.DataFrame, card: pd.DataFrame, guide_href: str | None,
                setups: pd.DataFrame | None = None) -> str:
    """The front page's answer to "which metric should I trust?": the synthesis's generated answer
    (:func:`faithlab_study.papers.synthesis.claims.advice.answer_sentence`), the scale it rests on (``setups``: the synthesis's
    set-up table, its ``replicas`` trained models per situation and ``images`` per model) and a link to the guide."""
    from faithlab_study.papers.synthesis import answer_sentence

    if guide.empty or card.empty:
        return html.element("p", f"{QUESTION} The synthesis notebook did not run in this build; the "
                                 f"{html.element('a', 'guide', href=guide_href)} explains how the study answers it.",
                            cls="fl-answer")
    scale = ""
    if setups is not None and not setups.empty and "images" in setups.columns:
        images = pd.to_numeric(setups["images"], errors="coerce").dropna()
        n = f"{images.min():.0f}" if images.min() == images.max() else f"{images.min():.0f}–{images.max():.0f}"
        reps = (pd.to_numeric(setups["replicas"], errors="coerce").dropna() if "replicas" in setups.columns
                else pd.Series(dtype=float))
        who = ("one trained model" if reps.empty or int(reps.min()) == 1
               else f"{int(reps.min())} independently trained models, each")
        scale = (f" Each situation is {who} scored on {n} images, so a metric that holds up is a candidate to "
                 "check on your own model, not a proof.")
    link = ("" if guide_href is None else " (with intervals and the evidence: "
            + html.element("a", "which metric should I use?", href=guide_href) + ")")
    # the question and the link to the guide first (on the first screen), the grid, then the sentence
    return (html.element("p", f"{QUESTION} At a glance, per metric and situation{link}:", cls="fl-answer")
            + glance_grid_html(guide)
            + html.element("p", f"{html.escaped(answer_sentence(guide, card))}{html.escaped(scale)}", cls="fl-answer"))


def _rows_table(part: pd.DataFrame, *, cost_case: bool) -> str:
    head = ["metric", "recovery [95 % interval]", "model inputs per image", "moves with the removal value by",
            "the guide's reading"]
    if cost_case:
        head[-1] = "holds up in (situations)"
    body = []
    for r in part.to_dict("records"):
        spread = r.get("reference spread")
        spread = DASH if spread is None or (isinstance(spread, float) and math.isnan(spread)) else f"{spread:.2f}"
        beaten = r.get("beaten by")
        beaten = beaten if isinstance(beaten, str) and beaten else ""
        held = (f"{int(r['situations held'])}" if cost_case else "holds up" if r["holds up"]
                else f"beaten by {beaten}" if beaten else "not separated" if r.get("not separated")
                else "does not recover" if r.get("recovers") in ABSENT else "no")
        body.append(html.element("tr", html.cells(html.escaped(r["label"]),
                                                  f"{r['recovery']:.2f} [{r['low']:.2f}, {r['high']:.2f}]",
                                                  f"{r['cost']:.0f}", spread, held)))
    return html.glance_table(html.head_row(*head), body, cls="fl-table")


def guide_html(guide: pd.DataFrame, setups: pd.DataFrame, docname: str) -> str:
    """The guide's recommendations: per situation a generated sentence
    (:func:`faithlab_study.papers.synthesis.claims.advice.guide_sentences`) and, folded, every metric's recovery with its
    interval, cost and removal-value spread."""
    from faithlab_study.papers.synthesis import COST_CASE, guide_sentences

    if guide.empty:
        return html.element("p", "The synthesis notebook did not run in this build.", cls="fl-empty")
    n_images = dict(zip(setups["setup"], setups["images"])) if not setups.empty else {}
    sentences = guide_sentences(guide, n_images=n_images)
    prefix = "../" * str(docname).count("/")
    evidence = f"{prefix}_generated/synthesis/metrics_compared.html"
    parts = [glance_grid_html(guide)]
    for case, part in guide.groupby("situation", sort=False):
        cost_case = case == COST_CASE
        title = case[0].upper() + case[1:]
        source = html.element("a", "the synthesis notebook", href=evidence)
        parts.append(html.element("h3", html.escaped(title)) + html.element("p", html.escaped(sentences.get(case, "")))
                     + html.fold(_rows_table(part, cost_case=cost_case),
                                 f"Every metric in this situation ({len(part)}; evidence: {source})"))
    return "".join(parts)


def reconcile_html(card: pd.DataFrame, scorecard: pd.DataFrame, docname: str) -> str:
    """Where the synthesis and a paper's chapter may disagree: per chapter that proposes a metric
    (:data:`faithlab_study.papers.synthesis.claims.advice.CHAPTER_METRICS`), the chapter's verdict counts beside the metric's
    report-card rank, the criteria that pull the rank down most, and a generated sentence on whether they agree."""
    from faithlab_study.book.chapters import PAPER_NAMES
    from faithlab_study.papers.synthesis import CHAPTER_METRICS, CRITERIA

    if card.empty:
        return ""
    prefix = "../" * str(docname).count("/")
    n = len(card)
    items = []
    for paper, labels in CHAPTER_METRICS.items():
        claims = scorecard[scorecard["paper"].astype(str) == paper] if not scorecard.empty else scorecard
        kinds = claims["kind"].astype(str) if "kind" in claims else pd.Series("paper", index=claims.index)
        checks, claims = claims[kinds == "study check"], claims[kinds != "study check"]  # never among the paper's
        tally = counts(claims) if not claims.empty else {}
        decided = tally_text(tally) or "no claim computed"
        if not checks.empty:
            decided += f" (and {len(checks)} study check{'s' if len(checks) > 1 else ''}, counted apart)"
        ranks = []
        for label in labels:
            row = card[card["label"] == label]
            if row.empty:
                continue
            row = row.iloc[0]
            worst = sorted(((row[f"rank {c}"], c) for c in CRITERIA), reverse=True)[:2]
            ranks.append((label, float(row["overall"]),
                          " and ".join(f"{c} (rank {r:g})" for r, c in worst)))
        if not ranks:
            continue
        name = PAPER_NAMES.get(paper, paper)
        low = [r for r in ranks if r[1] > (n + 1) / 2]
        rank_text = "; ".join(f"{label} has mean rank {overall:.1f} of {n}, pulled down most by {why}"
                              for label, overall, why in ranks)
        reproduced = sum(tally.get(v, 0) for v in PRESENT)  # the paper's effect found here, at any size
        if low and reproduced:
            verdict = ("They can disagree without contradiction: the chapter tests the paper's own claims against its "
                       "chosen competitors on its protocol, while the report card ranks every metric on five criteria "
                       "weighed equally, including cost and noise resilience that the paper does not claim.")
        elif low:
            verdict = ("Both point the same way: the chapter reproduces none of the paper's claims, not even weaker "
                       "or in part, and the metric ranks in the lower half here.")
        else:
            verdict = "The metric ranks in the upper half of the report card."
        chapter = html.element("a", html.element("b", html.escaped(name)), href=f"{prefix}{paper}.html")
        items.append(html.element("li", f"{chapter}: its paper claims here — {html.escaped(decided)}. In the "
                                        f"synthesis, {html.escaped(rank_text)}. {html.escaped(verdict)}"))
    return html.element("ul", "".join(items), cls="fl-reconcile")

"""Claims as the book's pages show them: a chapter's claims at a glance, each linking to where its notebook
computes it, the intro's sentence per paper, the scorecard's "what did not reproduce, and why" and its legend, a
chapter's set-up table and "how far this transfers", the API page's table of metrics and the build's line.

- :func:`glance_html`: a chapter's claims as claim | paper | ours | verdict, each claim linking to the row where
  its notebook computes it, its rule and premise folded under it.
- :func:`summary_sentence`, :func:`setup_rows`: the intro's sentence per paper and a chapter's paper-vs-ours table.
- :func:`failures_html`, :func:`why_sentence`, :func:`legend_html`: the scorecard's "what did not reproduce, and
  why" and its legend; :func:`transfer_html`: a chapter's "how far this transfers".
- :func:`build_html`: the build's address and time; :func:`toc_order`: the notebooks in the book's reading order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.html import DASH, claim_anchor, text_or_dash, verdict_badge
from faithlab_study.book.pages.tables import table_html
from faithlab_study.verdicts import VERDICTS
from faithlab_study.verdicts.words import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, WEAKER

def notebook_href(paper: str, experiment: str, docname: str, claim: str | None = None) -> str:
    """The link from the page ``docname`` (a Sphinx docname such as ``ffidelity/ranking``) to the executed
    notebook's page, at the claim's row when ``claim`` is given."""
    prefix = "../" * str(docname).count("/")
    href = f"{prefix}_generated/{paper}/{experiment}.html"
    return href + (f"#{claim_anchor(claim)}" if claim is not None else "")



def claims_for(scorecard: pd.DataFrame, paper: str, experiment: str | None = None,
               order: Iterable[str] | None = None) -> pd.DataFrame:
    """The scorecard's rows of one paper (and experiment), experiments in ``order`` (the book's), then by claim."""
    rows = scorecard[scorecard["paper"].astype(str) == paper]
    if experiment is not None:
        rows = rows[rows["experiment"].astype(str) == experiment]
    order = list(order or [])
    rank = {e: i for i, e in enumerate(order)}
    key = rows["experiment"].astype(str).map(lambda e: rank.get(e, len(rank)))
    return rows.assign(_rank=key).sort_values(["_rank", "experiment", "claim"], kind="stable").drop(columns="_rank")


def glance_html(claims: pd.DataFrame, docname: str, *, notes: bool = False) -> str:
    """Claims as an HTML table claim | paper | ours | verdict (the verdict as a coloured badge), each claim linking
    to its row on the notebook's page; its rule, decision and premise (and with ``notes`` the note) folded under the
    claim, with the power analysis (replicas needed for its comparisons to be decided). Under each verdict: its replica agreement, its bootstrap stability and the units of its smallest cell (the
    scorecard's columns ``replicas``, ``stability``, ``units``); a study check (kind) is labelled as one."""
    if claims.empty:
        return html.element("p", "No claim of this part was computed in this build (its notebook did not run).",
                            cls="fl-empty")
    rows = []
    for row in claims.itertuples(index=False):
        href = notebook_href(row.paper, row.experiment, docname, row.claim)
        folded = [("why this verdict", why_sentence(row._asdict())), ("rule", getattr(row, "rule", "")),
                  ("decision", getattr(row, "decision", "")),
                  ("premise", getattr(row, "premise", "")), ("power", getattr(row, "power", "")),
                  ("power before the data", getattr(row, "prospective", ""))]
        if notes:
            folded.append(("note", getattr(row, "note", "")))
        details = "".join(html.element("p", f"{html.element('b', name)}: {text_or_dash(text)}") for name, text in folded
                          if isinstance(text, str) and text.strip())
        details += cells_link(row._asdict(), docname)
        rule_id = str(getattr(row, "rule_id", "") or "").strip()
        if rule_id and rule_id != "nan":
            prefix = "../" * docname.count("/")
            rule_link = html.element("a", html.escaped(rule_id), href=f"{prefix}preregistration.html#rule-{rule_id}")
            details += html.element("p", f"{html.element('b', 'registered rule')}: {rule_link}")
        fold = (html.element("details", html.element("summary", "rule and premise") + details, cls="fl-rule")
                if details else "")
        verdict = str(row.verdict)
        badge = verdict_badge(verdict) if verdict in VERDICTS else text_or_dash(verdict)
        kind = str(getattr(row, "kind", "") or "")
        label = " " + html.element("span", "study check", cls="fl-kind") if kind == "study check" else ""
        rows.append(
            html.element("tr", html.element("td", html.element("a", text_or_dash(row.claim), href=href) + label + fold,
                                            cls="fl-claim")
                         + html.element("td", text_or_dash(row.paper_value))
                         + html.element("td", text_or_dash(row.our_value))
                         + html.element("td", badge + agreement_html(row), cls="fl-verdict")))
    head = html.element("thead", html.element(
        "tr", html.element("th", "claim (link: where it is computed)", cls="fl-claim") + html.element("th", "paper")
        + html.element("th", "ours") + html.element("th", "verdict", cls="fl-verdict")))
    return html.element("table", head + html.element("tbody", "".join(rows)), cls="fl-glance")


def cells_link(row: Mapping, docname: str) -> str:
    """The link from the page ``docname`` to a claim's cell table (its row's ``cells``, in its notebook's folder)
    with how to recompute the verdict from it (:func:`faithlab_study.book.html.cells_html`); "" for a claim without one."""
    cells = html.cells_path(dict(row))
    if not cells:
        return ""
    prefix = "../" * str(docname).count("/")
    return html.cells_html(f"{prefix}_generated/{row['paper']}/{row['experiment']}/{cells}")


def agreement_html(row) -> str:
    """The line under a verdict: replica agreement · bootstrap stability · units of the smallest cell (those known)."""
    parts = []
    for name in ("replicas", "stability"):
        value = str(getattr(row, name, "") or "").strip()
        if value and value not in ("—", "nan"):
            parts.append(value)
    units = str(getattr(row, "units", "") or "").strip()
    if units and units not in ("—", "nan"):
        parts.append(f"{float(units):.0f} units")
    return html.BR + html.element("span", text_or_dash(" · ".join(parts)), cls="fl-agree") if parts else ""


def counts(claims: pd.DataFrame) -> dict[str, int]:
    """How many claims got each verdict (every verdict of :data:`faithlab_study.verdicts.VERDICTS`, zeros included)."""
    verdicts = claims["verdict"].astype(str)
    return {v: int((verdicts == v).sum()) for v in VERDICTS}


def tally_text(tally: Mapping[str, int]) -> str:
    """Verdict counts as text, the verdicts with a count, separated by semicolons (a verdict holds a comma:
    "2 reproduced; 1 reproduced, weaker; 1 not reproduced")."""
    return "; ".join(f"{count} {verdict}" for verdict, count in tally.items() if count)


def split_claim(claim: str) -> tuple[str, str]:
    """A claim's label and statement: the text before and after its first colon outside parentheses
    (``F10 (GradCAM, second: cluttered): fine-tuning keeps…`` → ``F10 (GradCAM, second: cluttered)``, ``fine-tuning
    keeps…``); a claim without such a colon is all statement, its label its first five words."""
    depth = 0
    for i, char in enumerate(str(claim)):
        depth += char == "("
        depth -= char == ")" and depth > 0
        if char == ":" and depth == 0:
            return str(claim)[:i].strip(), str(claim)[i + 1:].strip()
    words = str(claim).split()
    return (" ".join(words[:5]) + (" …" if len(words) > 5 else "")), str(claim).strip()


def claim_label(claim: str) -> str:
    """A claim's short label: the text before its first colon outside parentheses (``F1 (GradCAM)``), else the
    first words."""
    head = split_claim(claim)[0]
    return head if len(head) <= 48 else " ".join(head.split()[:5]) + " …"


def shorten(text: str, limit: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def _named(claims: pd.DataFrame, *, statements: bool = False) -> list[str]:
    """Each claim named for a reader: its label, and its statement where ``statements``, where the label alone is not
    unique among ``claims`` or where the claim has no label."""
    labels = [claim_label(c) for c in claims["claim"]]
    out = []
    for claim, label in zip(claims["claim"], labels):
        head, statement = split_claim(claim)
        if statements or labels.count(label) > 1 or head == label and statement == str(claim).strip():
            out.append(f"{label} — {shorten(statement, 70)}" if statement != str(claim).strip() else
                       shorten(statement, 70))
        else:
            out.append(label)
    return out


def summary_sentence(name: str, claims: pd.DataFrame) -> str:
    """One sentence on a paper's claims from its verdicts: how many of the paper's claims were tested, how many got
    each verdict, and which were reproduced and which were not (by label, with the statement where the label is
    shared); the study checks (kind "study check") are counted apart, after it, never among the paper's claims."""
    if claims.empty:
        return f"{name}: no claim was computed in this build."
    kinds = claims["kind"].astype(str) if "kind" in claims else pd.Series("paper", index=claims.index)
    checks, claims = claims[kinds == "study check"], claims[kinds != "study check"]

    def tally(frame: pd.DataFrame) -> str:
        return tally_text(counts(frame))

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'s' if n != 1 else ''}"

    if claims.empty:
        sentence = f"{name}: {plural(len(checks), 'study check')} — {tally(checks)}"
        return sentence + "."
    sentence = f"{name}: {plural(len(claims), 'paper claim')} tested — {tally(claims)}"
    named = []
    for verdict in (REPRODUCED, WEAKER, NOT_REPRODUCED):
        # a failure is named with what it claimed, not by its label alone
        names = _named(claims, statements=verdict == NOT_REPRODUCED)
        picked = [n for n, v in zip(names, claims["verdict"].astype(str)) if v == verdict]
        if picked:
            named.append(f"{verdict}: {'; '.join(dict.fromkeys(picked))}")
    text = sentence + "".join(f". {x[0].upper() + x[1:]}" for x in named)
    if not checks.empty:
        text = (text if text.endswith("…") else text + ".") + (
            f" Apart from these, {plural(len(checks), 'study check')} ({tally(checks)})")
    return text if text.endswith("…") else text + "."


WHY_VERDICTS = (NOT_REPRODUCED, WEAKER, PARTLY, NOT_TESTABLE)
"""The verdicts the scorecard's "what did not reproduce, and why" list names: the effect shown absent or reversed,
shown only smaller than the paper's margin, shown in some named parts only, or not tested."""


def why_sentence(row: Mapping) -> str:
    """Why a claim got its verdict, in one plain sentence from its decision: what we measured (``our_value``) for a
    decided claim (with what "reproduced, weaker" lacks), the failed premise for "not testable here", the interval
    that reaches both the value of no effect and a margin for "inconclusive"."""
    verdict = str(row.get("verdict", ""))
    ours = shorten(row.get("our_value", "") or "", 240)
    note = str(row.get("note", "") or "")
    if verdict == NOT_TESTABLE:
        premise = note.split("not testable:", 1)[1] if "not testable:" in note else row.get("premise", "")
        premise = shorten(premise, 240)
        return f"Not testable here: a premise about the stand-in failed — {premise}" + (
            "" if premise.endswith("…") else ".")
    if verdict == INCONCLUSIVE:
        return (f"Inconclusive: the data do not decide it at this scale (an interval reaches both the value of no "
                f"effect and a margin, or the verdict moves with the replica or the bootstrap seed). We measured: "
                f"{ours}" + ("" if ours.endswith("…") else "."))
    if verdict == WEAKER:
        return (f"Reproduced, weaker: the paper's direction is shown where the claim needs it, its size (the margin) "
                f"is not; we measured {ours}" + ("" if ours.endswith("…") else "."))
    if verdict in (REPRODUCED, PARTLY, NOT_REPRODUCED):
        return f"{verdict[0].upper() + verdict[1:]}: we measured {ours}" + ("" if ours.endswith("…") else ".")
    return ours


def failures_html(scorecard: pd.DataFrame, docname: str, *, order: Iterable[str] = ()) -> str:
    """The scorecard's opening list: every claim whose verdict is in :data:`WHY_VERDICTS`, one plain sentence each
    (paper, claim, verdict badge and :func:`why_sentence`), linking to where it is computed; papers in ``order``."""
    from faithlab_study.book.chapters import PAPER_NAMES

    rows = scorecard[scorecard["verdict"].astype(str).isin(WHY_VERDICTS)]
    if rows.empty:
        return html.element("p", "Every claim computed in this build was reproduced at the paper's size or is "
                                 "inconclusive.", cls="fl-empty")
    rank = {p: i for i, p in enumerate(order)}
    rows = rows.assign(_r=rows["paper"].astype(str).map(lambda p: rank.get(p, len(rank)))).sort_values(
        ["_r", "verdict", "claim"], kind="stable")
    items = []
    for row in rows.to_dict("records"):
        label, statement = split_claim(row["claim"])
        href = notebook_href(row["paper"], row["experiment"], docname, row["claim"])
        paper = PAPER_NAMES.get(str(row["paper"]), str(row["paper"]))
        kind = " (study check)" if str(row.get("kind", "")) == "study check" else ""
        if statement == str(row["claim"]).strip():  # no label: the statement is the link
            claim = html.element("a", f"“{html.escaped(statement)}”", href=href) + "."
        else:
            claim = html.element("a", html.escaped(label), href=href) + f" — “{html.escaped(statement)}”."
        items.append(html.element("li", f'{verdict_badge(str(row["verdict"]))} '
                                        f'{html.element("b", html.escaped(paper) + kind)}, {claim} '
                                        f"{html.escaped(why_sentence(row))}"))
    return html.element("ul", "".join(items), cls="fl-failures")


def legend_html() -> str:
    """Every verdict's badge with what it means (:data:`faithlab_study.verdicts.MEANINGS`)."""
    from faithlab_study.verdicts import MEANINGS

    items = "".join(html.element("li", f"{verdict_badge(v)} {html.escaped(MEANINGS[v])}") for v in VERDICTS)
    return html.element("ul", items, cls="fl-legend")

def executed_parameters(notebook: Path) -> dict | None:
    """The effective parameters papermill recorded in an executed notebook (None when it is missing/unreadable)."""
    try:
        meta = json.loads(Path(notebook).read_text())["metadata"]
        return dict(meta["papermill"]["parameters"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


def setup_rows(settings: Iterable, generated: Path) -> pd.DataFrame:
    """A chapter's set-up table: setting | paper | ours (:class:`faithlab_study.papers.setup.Setting` rows; ours
    rendered from the executed notebook's parameters under ``generated``, "not run in this build" without it)."""
    rows = []
    for setting in settings:
        paper, experiment = setting.notebook.split("/")
        params = executed_parameters(Path(generated) / paper / f"{experiment}.ipynb")
        ours = setting.render(params) if params is not None else "not run in this build"
        rows.append({"setting": setting.setting, "paper": setting.paper, "ours": ours})
    return pd.DataFrame(rows, columns=["setting", "paper", "ours"])


def metrics_html() -> str:
    """Every registered metric as its declaration says: the API page's table (name and label, paper, direction,
    what it measures, the options evaluate exposes with their defaults, what it needs, its public function), then the
    settings each refuses because they make the score the same for every map (``Metric.degenerate``), so a
    metric added to the library is listed without an edit of the page."""
    from faithlab.metrics import registry
    from faithlab.report import brief

    rows = []
    for m in registry.METRICS.values():
        function = m.function or m.details
        rows.append({
            "metric": f"{m.label} ({m.name})", "paper": registry.PAPERS.get(m.paper, m.paper),
            "direction": "higher is better" if m.higher_is_better else "lower is better",
            "what it measures": m.doc,
            "options (default)": ", ".join(f"{registry.option_name(o.name, m.group)} = "
                                           f"{brief(registry.OPTIONS[o.name].default, 24)}" for o in m.options),
            "needs": ", ".join(m.needs), "function": "" if function is None else function.__name__})
    # the settings each metric refuses, one row per set of metrics refusing the same (a column of its own squeezed
    # the table past the page's width)
    refused: dict[str, list[str]] = {}
    for m in registry.METRICS.values():
        if m.degenerate:
            text = "; ".join(", ".join(f"{k} = {brief(v, 24)}" for k, v in setting.items()) for setting in m.degenerate)
            refused.setdefault(text, []).append(m.label)
    settings = pd.DataFrame([{"metrics": ", ".join(labels), "refused: the score would be the same for every map": text}
                             for text, labels in refused.items()])
    return (table_html(pd.DataFrame(rows), css_class="fl-table fl-metrics")
            + html.element("p", html.escaped(
                "Settings that measure nothing — a Monte-Carlo count too small to depend on the map, a grid whose "
                "every level removes no unit or every unit — are refused with an error naming the argument (")
                + html.element("code", "Metric.degenerate") + "):")
            + table_html(settings, css_class="fl-table"))  # not fl-metrics: its column widths are the first table's


def toc_order(toc: Mapping) -> list[str]:
    """The ``_generated/<paper>/<experiment>`` files of a Jupyter Book ``_toc.yml`` mapping, in reading order, as
    ``"<paper>/<experiment>"``."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, Mapping):
            file = node.get("file")
            if isinstance(file, str) and file.startswith("_generated/"):
                found.append(file.removeprefix("_generated/"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return found


# --------------------------------------------------------------------------------------------------- notebook outputs
def build_html(url: str, *, seconds: float, notebooks: int, profiles: list[str]) -> str:
    """The intro's line on this build: the published address (none while ``url`` is empty or still the template's
    placeholder ``OWNER``/``REPOSITORY``: "this build is local, not published"), and the notebooks' total run time
    and profile(s) read from the executed notebooks (kernel time summed over notebooks; parallel runs take less
    wall time)."""
    from faithlab_study.book.notebook_page import duration

    local = not url or "OWNER" in url or "REPOSITORY" in url
    where = ("This build is local (not published)." if local else
             f'The published book is at {html.element("a", html.escaped(url), href=url)}.')
    if notebooks:
        which = ", ".join(profiles)
        ran = (f" Its {notebooks} notebooks ran for {duration(seconds)} in total ({which} profile{'s' if len(profiles) > 1 else ''}"
               f"; summed over notebooks, so a parallel build takes less wall time).")
    else:
        ran = " No notebook of this build recorded its run time."
    return html.element("p", where + html.escaped(ran), cls="fl-build")


def transfer_html(setup: pd.DataFrame, claims: pd.DataFrame, *, shown: int = 4) -> str:
    """A chapter's "how far this transfers", generated from its set-up table (setting | paper | ours) and its claims
    (the scorecard's ``units``, ``replicas`` and ``trained_replicas``): which settings differ from the paper's (the
    first ``shown`` with both values), the scale the verdicts rest on, and what a verdict here does and does not
    say."""
    differ = setup[(setup["paper"].astype(str).str.strip() != setup["ours"].astype(str).str.strip())
                   & ~setup["paper"].astype(str).str.strip().isin(["—", "-", ""])]
    listed = "; ".join(f"{r['setting']} (paper: {r['paper']}; here: {r['ours']})"
                       for r in differ.head(shown).to_dict("records"))
    more = f"; and {len(differ) - shown} more in the table below" if len(differ) > shown else ""
    text = (f"{html.element('b', 'How far this transfers.')} {len(differ)} of the {len(setup)} settings below differ "
            f"from the "
            f"paper's" + (f": {listed}{more}." if listed else "."))
    units = pd.to_numeric(claims.get("units", pd.Series(dtype=float)), errors="coerce").dropna()
    replicas = claims.get("replicas", pd.Series(dtype=str)).astype(str)
    trained = pd.to_numeric(claims.get("trained_replicas", pd.Series(index=claims.index, dtype=float)),
                            errors="coerce")
    # every trained replica a claim's frames hold (the claims column); claims written before it: the agreement's
    # "k of R" / "R replicas", which leaves out the replicas counted apart
    read = replicas.str.extract(r"(?:of )?(\d+) replicas")[0].astype(float)
    trained = trained.where(trained.notna(), read)
    single = int(((trained == 1) | replicas.str.contains("one trained model")).sum())
    counted = trained[trained > 1].dropna().astype(int)
    if not units.empty:
        text += (f" The claims rest on {units.min():.0f}–{units.max():.0f} units in their smallest cell (median "
                 f"{units.median():.0f})")
        if not counted.empty or single:
            parts = []
            if not counted.empty:
                parts.append(f"{counted.min()}–{counted.max()} trained replicas" if counted.min() != counted.max()
                             else f"{counted.min()} trained replica{'s' if counted.min() != 1 else ''}")
            if single:
                parts.append(f"{single} on one trained model")
            text += f" and {', '.join(parts)}"
        text += "."
    text += (" The stand-ins are small generated or embedded data sets named for the data they stand in for, not "
             "those data sets: a verdict here says whether the paper's mechanism shows on them at this scale, not "
             "whether the paper's numbers hold on its data (the paper profile reruns the notebooks there).")
    return html.element("p", html.escape_keeping_bold(text), cls="fl-transfer")

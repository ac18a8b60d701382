"""The pre-registration page: the decision procedure every claim goes through, the intervals' simulated coverage,
each paper's registered rules, the rules files' change log and the table of every claim's rule and decision."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from faithlab.html import text_or_dash
from faithlab.study.book.pages.claims import claim_label, notebook_href
from faithlab.study.book.pages.tables import format_table, table_html

def procedure_html() -> str:
    """The decision procedure every claim goes through, as HTML, its words and numbers read from
    :mod:`faithlab.study.verdicts` (so the page cannot drift from the code)."""
    from faithlab.study import verdicts as V
    from faithlab.study.verdicts.intervals import INTERVAL_METHODS
    from faithlab.study.verdicts.rules import DECISIONS

    items = [
        f"<b>{V.NOT_TESTABLE}</b>: a premise about the stand-in demonstrably fails (the paper's mechanism is absent), "
        "decided on its own interval before the outcome statistic is looked at; a premise whose interval straddles "
        "its bar leaves the claim inconclusive;",
        f"<b>{V.REPRODUCED}</b>: the 95 % interval lies beyond the claim's margin — its smallest effect of interest, "
        "derived from the paper's own numbers (the source is written beside it in the rules) — in the paper's "
        "direction;",
        f"<b>{V.NOT_REPRODUCED}</b>: the interval lies wholly short of the margin, inside the band of no meaningful "
        "effect or beyond it the other way (equivalence logic: a tight interval around zero is a decision, not a "
        "shrug);",
        f"<b>{V.INCONCLUSIVE}</b>: the interval straddles the margin; the claim's row says what design (replicas × "
        "units) its power analysis asks to decide it;",
        f"<b>{V.PARTLY}</b>: only for a claim of several named parts, each with a rule of its own, when the share of "
        "its parts that the rule fixes in advance is reproduced and not all are.",
    ]
    combine = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in DECISIONS.items())
    methods = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in INTERVAL_METHODS.items())
    checks = [
        "the trained model is the unit of replication: a claim about trained stand-ins rests on at least "
        f"{V.MIN_REPLICAS} independently trained replicas per setting (more where its rule asks), seeds keyed to "
        "the setting and the replica; its interval is a t interval on the replica-level statistics (R − 1 degrees "
        "of freedom), chosen because its coverage holds at the replica counts the book uses (the table below), "
        "where the two-stage percentile bootstrap the study used before covered about 0.74 for a nominal 0.95 "
        "with three replicas; a decided verdict on fewer replicas than its rule asks is published as "
        "inconclusive;",
        f"each cell needs at least {V.MIN_UNITS} independent units (images pooled over the replicas, or replicas; "
        "never levels or seeds of one curve), or the rule's larger number; a decided verdict below it is published "
        "as inconclusive (underpowered);",
        f"a claim that resamples (a null, a bootstrap over one model's units) must give the same decided verdict "
        f"under {V.STABILITY_SEEDS} other seeds, else it is published as inconclusive;",
        "how many replicas alone give the pooled verdict is shown beside each claim (replica agreement): it is a "
        "description, not part of the decision; a replica whose rows alone are too few for the statistic is "
        "shown as left out, and one with nothing testable alone (e.g. a replica trained for a premise only) as "
        "not testable alone, neither as disagreeing;",
        "identities, ratios fixed by design, results that hold by construction and checks of our own stand-ins are "
        "study checks, shown and counted apart from the papers' claims.",
    ]
    return ('<ol class="fl-procedure">' + "".join(f"<li>{i}</li>" for i in items) + "</ol>"
            + "<p>How a claim's cells combine (the rule's <code>decision</code>):</p>"
            + f'<ul class="fl-procedure">{combine}</ul>'
            + "<p>The intervals (the rule's <code>interval</code>):</p>"
            + f'<ul class="fl-procedure">{methods}</ul>'
            + '<ul class="fl-procedure">' + "".join(f"<li>{c}</li>" for c in checks) + "</ul>")


def coverage_frame(generated: Path | None = None) -> pd.DataFrame:
    """The simulated coverage of every interval (:func:`faithlab.study.verdicts.coverage.simulate`, the table the coverage
    test asserts), cached in ``generated``/coverage.csv under a key of the two modules' source, so that a warm
    build simulates nothing."""
    import hashlib
    import inspect

    from faithlab import paths
    from faithlab.study.verdicts import coverage, intervals

    key = hashlib.sha256((inspect.getsource(coverage) + inspect.getsource(intervals)).encode()).hexdigest()[:16]
    cached = Path(generated) / "coverage.csv" if generated is not None else None
    if cached is not None and cached.is_file() and cached.with_suffix(".key").is_file() \
            and cached.with_suffix(".key").read_text().strip() == key:
        return pd.read_csv(cached)
    frame = coverage.simulate(sets=4000, seed=0)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        paths.atomic_write(cached, lambda tmp: frame.to_csv(tmp, index=False))
        paths.atomic_write(cached.with_suffix(".key"), lambda tmp: Path(tmp).write_text(key))
    return frame


def coverage_html(frame: pd.DataFrame) -> str:
    """The coverage table: per interval method its lowest and mean simulated coverage over the designs it is held
    to, the designs and the simulation's standard error, then every design folded."""
    rows = []
    for method, part in frame.groupby("interval", sort=False):
        asserted = part[part["asserted"].astype(bool)]
        worst = asserted.loc[asserted["coverage"].idxmin()] if len(asserted) else None
        others = part[~part["asserted"].astype(bool)]
        note = "; ".join(f"not held to it: {r.kind}, n = {r.units}: {r.coverage:.3f}" for r in others.itertuples())
        rows.append(
            f"<tr><td>{html.escape(str(method))}</td><td>{len(asserted)}</td>"
            f"<td>{asserted['coverage'].min():.3f} ± {worst['se']:.3f}</td><td>{asserted['coverage'].mean():.3f}</td>"
            f"<td>{html.escape(note) or '—'}</td></tr>")
    head = ("<thead><tr><th>interval</th><th>designs</th><th>lowest coverage (± simulation SE)</th>"
            "<th>mean coverage</th><th>noted</th></tr></thead>")
    detail = table_html(format_table(frame.drop(columns=["asserted"]).fillna("")))
    return (f'<table class="fl-glance">{head}<tbody>{"".join(rows)}</tbody></table>'
            '<details class="fl-fold"><summary>Every simulated design: open</summary>'
            f'<div class="fl-fold-body">{detail}</div></details>')


def rules_html(scorecard: pd.DataFrame, docname: str, paper: str) -> str:
    """One paper's pre-registered rules (:func:`faithlab.study.verdicts.all_rules`), one row per rule: its id, the claims
    it decided in this build (linked where they are computed), statistic, direction and margin with its source,
    how the cells combine, null and premises, design (R × n) and interval; then the rules file itself, folded."""
    from faithlab.study.verdicts.rules import all_rules, rule_files

    rules = [r for r in all_rules().values() if r.paper == paper]
    if not rules:
        return '<p class="fl-empty">No rule is registered for this paper.</p>'
    ids = scorecard["rule_id"].astype(str) if "rule_id" in scorecard else pd.Series("", index=scorecard.index)
    parent = {part: r.id for r in all_rules().values() for part in r.parts}
    rows = []
    for r in rules:
        decided = scorecard[ids == r.id]
        if r.id in parent and decided.empty:  # a part is decided inside its claim: link the claim's rows
            decided = scorecard[ids == parent[r.id]]
        links = "<br>".join(f'<a href="{html.escape(notebook_href(row.paper, row.experiment, docname, row.claim))}">'
                            f"{html.escape(claim_label(row.claim))}</a>" for row in decided.itertuples())
        kind = ' <span class="fl-kind">study check</span>' if r.kind == "study check" else ""
        if r.id in parent:
            kind += f' <span class="fl-kind">a part of <a href="#rule-{html.escape(parent[r.id])}">' \
                    f"{html.escape(parent[r.id])}</a></span>"
        how = html.escape(r.decision) + (f" ({r.share:.0%})" if r.share is not None else "") + (
            f": {html.escape(', '.join(r.parts))}" if r.parts else "")
        premises = "; ".join(r.premises)
        rows.append(
            f'<tr id="rule-{html.escape(r.id)}"><td class="fl-claim"><b>{html.escape(r.id)}</b>{kind}<br>'
            f"{html.escape(r.claim)}<br>{links or '<i>not decided in this build</i>'}</td>"
            f"<td>{html.escape(r.statistic)}</td><td>{html.escape(r.direction)} {html.escape(r.margin_text())}"
            f"<br><small>{html.escape(r.margin_source)}</small></td><td>{how}</td>"
            f"<td>{html.escape(r.null)}" + (f"<br><small>premises: {html.escape(premises)}</small>" if premises
                                            else "") + "</td>"
            f"<td>{r.replicas} × {r.units}<br><small>{html.escape(r.interval)}</small></td></tr>")
    from faithlab.study.verdicts.rules import BEATS, HOLDS_UP, all_answers

    for name, a in all_answers().items():  # a study answer's registered rule (the synthesis's guide)
        if a["paper"] != paper:
            continue
        rows.append(
            f'<tr id="rule-{html.escape(name)}"><td class="fl-claim"><b>{html.escape(name)}</b> '
            f'<span class="fl-kind">study answer</span><br>{html.escape(a["statement"])}</td>'
            f"<td>{html.escape(HOLDS_UP[a['holds_up']])}; {html.escape(BEATS[a['beats']])}</td>"
            f"<td>{html.escape(a['margin'])}<br><small>{html.escape(a['margin_source'])}</small></td>"
            f"<td>holds up: {html.escape(a['holds_up'])}; beats: {html.escape(a['beats'])}</td>"
            f"<td>{html.escape(a.get('null', ''))}</td>"
            f"<td>{a['replicas']} per situation<br><small>{html.escape(a['interval'])}, level "
            f"{a['level']:g}</small></td></tr>")
    head = ("<thead><tr><th>rule and the claims it decided</th><th>statistic</th><th>direction, margin (source)</th>"
            "<th>cells combine</th><th>null; premises</th><th>design R × n; interval</th></tr></thead>")
    from faithlab.study.verdicts.rules import load

    files = [p for p in rule_files() if any(r.paper == paper for r in load(p)[0].values())]
    raw = "".join(f'<details class="fl-fold"><summary>The rules file <code>{html.escape(p.name)}</code>, as '
                  f'committed: open</summary><div class="fl-fold-body"><pre>{html.escape(p.read_text())}</pre></div>'
                  "</details>" for p in files)
    return f'<table class="fl-glance fl-prereg">{head}<tbody>{"".join(rows)}</tbody></table>{raw}'


def rules_log_html() -> str:
    """Every rules file's change log (date, claim, change, field, old → new, why), newest first."""
    from faithlab.study.verdicts.rules import log

    rows = []
    for name, lines in log().items():
        for line in lines:
            change = str(line.get("change", "changed"))
            what = (f"{html.escape(str(line.get('field')))}: {html.escape(str(line.get('old')))} → "
                    f"{html.escape(str(line.get('new')))}" if change == "changed" else html.escape(change))
            rows.append((str(line.get("date", "")), f"<tr><td>{html.escape(str(line.get('date', '')))}</td>"
                                                    f"<td>{html.escape(name)}</td>"
                                                    f"<td>{html.escape(str(line.get('claim', '')))}</td><td>{what}</td>"
                                                    f"<td>{html.escape(str(line.get('why', '')))}</td></tr>"))
    rows.sort(key=lambda r: r[0], reverse=True)
    head = "<thead><tr><th>date</th><th>file</th><th>claim</th><th>change</th><th>why</th></tr></thead>"
    return f'<table class="fl-glance">{head}<tbody>{"".join(r for _, r in rows)}</tbody></table>'


def preregistration_html(frame: pd.DataFrame, docname: str) -> str:
    """The pre-registration table (``preregistration.csv`` of :func:`faithlab.study.book.scorecard.preregistration`):
    one row per claim — claim (linking where it is computed) and kind | rule | decision | premise | function and the
    commit where it last changed."""
    if frame.empty:
        return '<p class="fl-empty">No claim was computed in this build.</p>'
    rows = []
    for row in frame.itertuples(index=False):
        experiment = getattr(row, "experiment", "")
        href = notebook_href(row.paper, experiment, docname, row.claim) if experiment else "#"
        kind = ' <span class="fl-kind">study check</span>' if str(row.kind) == "study check" else ""
        rows.append(
            f'<tr><td class="fl-claim"><a href="{html.escape(href)}">{text_or_dash(row.claim)}</a>{kind}</td>'
            f"<td>{text_or_dash(row.rule)}</td><td>{text_or_dash(row.decision)}</td><td>{text_or_dash(row.premise)}</td>"
            f"<td><code>{text_or_dash(str(row.function).rpartition('.')[2])}</code><br>{text_or_dash(row[-1])}</td></tr>")
    head = ("<thead><tr><th>claim</th><th>rule: statistic, unit, direction, margin</th><th>decision (generated by "
            "the function that decides)</th><th>premise and null</th><th>claim function, rule last changed</th>"
            "</tr></thead>")
    return f'<table class="fl-glance fl-prereg">{head}<tbody>{"".join(rows)}</tbody></table>'

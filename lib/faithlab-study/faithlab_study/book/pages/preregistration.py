"""The pre-registration page: the decision procedure every claim goes through, the intervals' simulated coverage,
each paper's registered rules (with their registrations as committed, above the claim functions), the rules' change
logs and the table of every claim's rule and decision."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.html import text_or_dash
from faithlab_study.book.pages.claims import claim_label, notebook_href
from faithlab_study.book.pages.tables import format_table, table_html


def bold(text: str) -> str:
    """HTML ``text`` in bold."""
    return html.element("b", text)


def small(text: str) -> str:
    """HTML ``text`` in small print."""
    return html.element("small", text)

def procedure_html() -> str:
    """The decision procedure every claim goes through, as HTML, its words and numbers read from
    :mod:`faithlab_study.verdicts` (so the page cannot drift from the code): a cell's four outcomes, then the six
    verdicts, how the cells combine, the intervals and the checks."""
    from faithlab_study import verdicts as V
    from faithlab_study.verdicts.decisions import ALPHA, DECISION_LEVEL, OUTCOMES
    from faithlab_study.verdicts.intervals import INTERVAL_METHODS
    from faithlab_study.verdicts.rules import DECISIONS

    alpha, level = f"{ALPHA:.0%}".replace("%", " %"), f"{DECISION_LEVEL:.0%}".replace("%", " %")
    said = {o: bold(o) for o in OUTCOMES}  # a renamed outcome fails here, loudly, rather than misname it on the page
    holds, weaker, absent, undecided = (said[o] for o in ("holds", "weaker", "absent", "undecided"))
    lead = (f"Each cell of a claim (a method against Random, a model, a setting) is an interval of its statistic "
            f"with two boundaries in the paper's direction: the value of no effect (0 for a difference, the chance "
            f"value of a level statistic) and the margin, the smallest effect of interest derived from the paper's "
            f"own numbers (the source is written beside it in the rules). Every statement about a cell is a "
            f"one-sided test at {alpha}, so the interval read is the two-sided {level} interval, whose ends are the "
            f"two one-sided bounds (the equivalence-testing convention). A cell:")
    cells = [
        f"{holds}: the interval lies beyond the margin in the paper's direction — the effect reaches the paper's "
        "size;",
        f"{weaker}: it lies beyond the value of no effect in the paper's direction but is not shown to reach the "
        "margin — the effect is there, not shown as large as the paper's;",
        f"{absent}: it lies inside the band of no meaningful effect (within the margin of the value of no effect, "
        "either way), or beyond it the other way — the effect is shown absent or reversed (a tight interval around "
        "no effect is a decision, not a shrug);",
        f"{undecided}: it reaches both the value of no effect and a margin.",
    ]
    one = ("A rule whose margin is not beyond the value of no effect (a non-inferiority claim, a sign claim) has one "
           f"boundary: a cell {holds} beyond it, is {absent} wholly short of it, {undecided} across it. The verdicts:")
    items = [
        f"{bold(V.NOT_TESTABLE)}: a premise about the stand-in demonstrably fails (the paper's mechanism is absent), "
        "decided on its own interval before the outcome statistic is looked at; a premise whose interval straddles "
        "its bar leaves the claim inconclusive (except F-Fidelity's robustness claims, Table 8 and D.3, whose "
        "premises are tolerances: a model, or the claim, is taken away only when shown below the bar);",
        f"{bold(V.REPRODUCED)}: the cells the claim's rule needs hold;",
        f"{bold(html.escaped(V.WEAKER))}: the paper's direction is shown where the claim needs it (its cells hold "
        "or are weaker), its size is not (a needed cell is weaker);",
        f"{bold(V.NOT_REPRODUCED)}: a cell the rule needs is absent or reversed; where one of several cells can "
        f"decide it, the cells' {absent} statements are counted after Holm's step-down correction over the cells, "
        f"so the claim's statement is wrong at most {alpha} of the time;",
        f"{bold(V.INCONCLUSIVE)}: a needed cell is undecided; the claim's row says what design (replicas × units) "
        "its power analysis asks to decide it: observed (the estimates and the variance its undecided cells "
        "show) and before the data (its whole rule simulated with every cell of its verdict at twice the margin — "
        "the paper's effect that the margin halves, often its smallest — and at the margin, the variance pooled over "
        "the verdict's cells, so that 2 degrees of freedom per cell do not decide what the design can do), with "
        "that design's cost in trained models and scored units;",
        f"{bold(V.PARTLY)}: only for a claim of several named parts, each with a rule of its own, when the share of "
        "its parts that the rule fixes in advance is reproduced and not all are.",
    ]
    combine = "".join(html.element("li", f"{bold(html.escaped(k))}: {html.escaped(v)}") for k, v in DECISIONS.items())
    methods = "".join(html.element("li", f"{bold(html.escaped(k))}: {html.escaped(v)}")
                      for k, v in INTERVAL_METHODS.items())
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
    return (html.element("p", lead) + html.element("ul", "".join(html.element("li", c) for c in cells),
                                                   cls="fl-procedure")
            + html.element("p", one) + html.element("ol", "".join(html.element("li", i) for i in items),
                                                    cls="fl-procedure")
            + html.element("p", f"How a claim's cells combine (the rule's {html.element('code', 'decision')}):")
            + html.element("ul", combine, cls="fl-procedure")
            + html.element("p", f"The intervals (the rule's {html.element('code', 'interval')}):")
            + html.element("ul", methods, cls="fl-procedure")
            + html.element("ul", "".join(html.element("li", c) for c in checks), cls="fl-procedure"))


def cached_frame(generated: Path | None, name: str, key: str, compute) -> pd.DataFrame:
    """``compute()`` (a simulation's frame), cached in ``generated``/``name`` beside ``name``'s ``.key`` file holding
    ``key`` (a hash of what it depends on), so that a warm build simulates nothing; computed afresh when the key
    differs or ``generated`` is None."""
    from faithlab import paths

    cached = Path(generated) / name if generated is not None else None
    if cached is not None and cached.is_file() and cached.with_suffix(".key").is_file() \
            and cached.with_suffix(".key").read_text().strip() == key:
        return pd.read_csv(cached)
    frame = compute()
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        paths.atomic_write(cached, lambda tmp: frame.to_csv(tmp, index=False))
        paths.atomic_write(cached.with_suffix(".key"), lambda tmp: Path(tmp).write_text(key))
    return frame


def source_key(*modules, extra: str = "") -> str:
    """16 hex digits of the SHA-256 of ``modules``' source (and ``extra``): the key of :func:`cached_frame`."""
    import hashlib
    import inspect

    return hashlib.sha256(("".join(inspect.getsource(m) for m in modules) + extra).encode()).hexdigest()[:16]


def coverage_frame(generated: Path | None = None) -> pd.DataFrame:
    """The simulated coverage of every interval (:func:`faithlab_study.verdicts.coverage.simulate`, the table the coverage
    test asserts), cached in ``generated``/coverage.csv under a key of the two modules' source, so that a warm
    build simulates nothing."""
    from faithlab_study.verdicts import coverage, intervals

    return cached_frame(generated, "coverage.csv", source_key(coverage, intervals),
                        lambda: coverage.simulate(sets=4000, seed=0))


def coverage_html(frame: pd.DataFrame) -> str:
    """The coverage table: per interval method its lowest and mean simulated coverage over the designs it is held
    to, the designs and the simulation's standard error, then every design folded."""
    rows = []
    for method, part in frame.groupby("interval", sort=False):
        asserted = part[part["asserted"].astype(bool)]
        worst = asserted.loc[asserted["coverage"].idxmin()] if len(asserted) else None
        others = part[~part["asserted"].astype(bool)]
        note = "; ".join(f"not held to it: {r.kind}, n = {r.units}: {r.coverage:.3f}" for r in others.itertuples())
        rows.append(html.element("tr", html.cells(
            html.escaped(method), f"{len(asserted)}", f"{asserted['coverage'].min():.3f} ± {worst['se']:.3f}",
            f"{asserted['coverage'].mean():.3f}", html.escaped(note) or "—")))
    head = html.head_row("interval", "designs", "lowest coverage (± simulation SE)", "mean coverage", "noted")
    detail = table_html(format_table(frame.drop(columns=["asserted"]).fillna("")))
    return html.glance_table(head, rows) + html.fold(detail, "Every simulated design: open")


def rules_html(scorecard: pd.DataFrame, docname: str, paper: str) -> str:
    """One paper's pre-registered rules (:func:`faithlab_study.verdicts.all_rules`), one row per rule: its id, the claims
    it decided in this build (linked where they are computed), statistic, direction and margin with its source,
    how the cells combine, null and premises, design (R × n) and interval; then the registrations as committed (the
    decorators above the claim functions), folded."""
    from faithlab_study.verdicts.rules import all_rules

    rules = [r for r in all_rules().values() if r.paper == paper]
    if not rules:
        return html.element("p", "No rule is registered for this paper.", cls="fl-empty")
    ids = scorecard["rule_id"].astype(str) if "rule_id" in scorecard else pd.Series("", index=scorecard.index)
    parent = {part: r.id for r in all_rules().values() for part in r.parts}
    rows = []
    for r in rules:
        decided = scorecard[ids == r.id]
        if r.id in parent and decided.empty:  # a part is decided inside its claim: link the claim's rows
            decided = scorecard[ids == parent[r.id]]
        links = html.BR.join(html.element("a", html.escaped(claim_label(row.claim)),
                                          href=notebook_href(row.paper, row.experiment, docname, row.claim))
                             for row in decided.itertuples())
        kind = " " + html.element("span", "study check", cls="fl-kind") if r.kind == "study check" else ""
        if r.id in parent:
            part_of = html.element("a", html.escaped(parent[r.id]), href=f"#rule-{parent[r.id]}")
            kind += " " + html.element("span", f"a part of {part_of}", cls="fl-kind")
        how = html.escaped(r.decision) + (f" ({r.share:.0%})" if r.share is not None else "") + (
            f": {html.escaped(', '.join(r.parts))}" if r.parts else "")
        premises = "; ".join(r.premises)
        first = (f"{bold(html.escaped(r.id))}{kind}{html.BR}{html.escaped(r.claim)}{html.BR}"
                 f"{links or html.element('i', 'not decided in this build')}")
        null = html.escaped(r.null) + (f"{html.BR}{small(f'premises: {html.escaped(premises)}')}" if premises else "")
        rows.append(html.element("tr", html.element("td", first, cls="fl-claim") + html.cells(
            html.escaped(r.statistic),
            f"{html.escaped(r.direction)} {html.escaped(r.margin_text())}{html.BR}"
            f"{small(html.escaped(r.margin_source))}",
            how, null, f"{r.replicas} × {r.units}{html.BR}{small(html.escaped(r.interval))}"), id=f"rule-{r.id}"))
    from faithlab_study.verdicts.rules import BEATS, HOLDS_UP, all_answers

    for name, a in all_answers().items():  # a study answer's registered rule (the synthesis's guide)
        if a["paper"] != paper:
            continue
        interval = f"{html.escaped(a['interval'])}, level {a['level']:g}"
        first = (f"{bold(html.escaped(name))} {html.element('span', 'study answer', cls='fl-kind')}{html.BR}"
                 f"{html.escaped(a['statement'])}")
        rows.append(html.element("tr", html.element("td", first, cls="fl-claim") + html.cells(
            f"{html.escaped(HOLDS_UP[a['holds_up']])}; {html.escaped(BEATS[a['beats']])}",
            f"{html.escaped(a['margin'])}{html.BR}{small(html.escaped(a['margin_source']))}",
            f"holds up: {html.escaped(a['holds_up'])}; beats: {html.escaped(a['beats'])}",
            html.escaped(a.get("null", "")),
            f"{a['replicas']} per situation{html.BR}{small(interval)}"),
            id=f"rule-{name}"))
    head = html.head_row("rule and the claims it decided", "statistic", "direction, margin (source)", "cells combine",
                         "null; premises", "design R × n; interval")
    sources = registration_sources(paper)
    raw = html.fold(html.element("pre", html.escaped("\n\n".join(sources))),
                    "The registrations as committed, above their claim functions: open") if sources else ""
    return html.glance_table(head, rows, cls="fl-glance fl-prereg") + raw


def registration_sources(paper: str) -> list[str]:
    """The committed source of each registration of ``paper`` (its rules' and answers' decorators, down to the
    ``def`` line of the function they decorate), one string per function, in the order of the code; first the
    entry the chapter's registrations share (``claims.registration.REGISTERED``), where it has one."""
    import importlib
    import inspect

    from faithlab_study.verdicts.rules import registrations

    out, seen = [], set()
    try:
        shared = importlib.import_module(f"faithlab_study.papers.{paper}.claims.registration")
        out.append(f"# {shared.__name__}\n" + inspect.getsource(shared).rstrip())
    except (ImportError, OSError, TypeError):
        pass
    for r in registrations().values():
        if r.fields.get("paper") != paper or r.where in seen:
            continue
        seen.add(r.where)
        module, _, name = r.where.rpartition(".")
        try:
            lines = inspect.getsourcelines(getattr(importlib.import_module(module), name))[0]
        except (AttributeError, ImportError, OSError, TypeError):
            continue
        last = next((k for k, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))),
                    len(lines) - 1)
        out.append(f"# {r.where}\n" + "".join(lines[:last + 1]).rstrip())
    return out


def rules_log_html() -> str:
    """Every rule's and answer's change log (date, paper, rule, change, field: old → new, why), newest first."""
    from faithlab_study.verdicts.rules import registrations

    rows = []
    for name, registration in registrations().items():
        paper = str(registration.fields.get("paper", ""))
        for line in registration.log:
            change = str(line.get("change", "changed"))
            what = (f"{html.escaped(str(line.get('field')))}: {html.escaped(str(line.get('old')))} → "
                    f"{html.escaped(str(line.get('new')))}" if change == "changed" else html.escaped(change))
            rows.append((str(line.get("date", "")), html.element("tr", html.cells(
                html.escaped(line.get("date", "")), html.escaped(paper), html.escaped(name), what,
                html.escaped(line.get("why", ""))))))
    rows.sort(key=lambda r: r[0], reverse=True)
    head = html.head_row("date", "paper", "rule", "change", "why")
    return html.glance_table(head, (r for _, r in rows))


def preregistration_html(frame: pd.DataFrame, docname: str) -> str:
    """The pre-registration table (``preregistration.csv`` of :func:`faithlab_study.book.scorecard.preregistration`):
    one row per claim — claim (linking where it is computed) and kind | rule | decision | premise | function and the
    commit where it last changed."""
    if frame.empty:
        return html.element("p", "No claim was computed in this build.", cls="fl-empty")
    rows = []
    for row in frame.itertuples(index=False):
        experiment = getattr(row, "experiment", "")
        href = notebook_href(row.paper, experiment, docname, row.claim) if experiment else "#"
        kind = " " + html.element("span", "study check", cls="fl-kind") if str(row.kind) == "study check" else ""
        function = html.element("code", text_or_dash(str(row.function).rpartition(".")[2]))
        rows.append(html.element("tr", html.element(
            "td", html.element("a", text_or_dash(row.claim), href=href) + kind, cls="fl-claim") + html.cells(
            text_or_dash(row.rule), text_or_dash(row.decision), text_or_dash(row.premise),
            f"{function}{html.BR}{text_or_dash(row[-1])}")))
    head = html.head_row("claim", "rule: statistic, unit, direction, margin",
                         "decision (generated by the function that decides)", "premise and null",
                         "claim function, rule last changed")
    return html.glance_table(head, rows, cls="fl-glance fl-prereg")

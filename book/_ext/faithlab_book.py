"""The book's Sphinx extension: directives that show the generated outputs (the logic is in faithlab_study.book.pages).

- ``csv-table`` (Sphinx's, extended): a table read from ``:file:`` is formatted for reading (fixed decimals per
  column, ``mean ± sd`` and ``[low, high]`` cells: :func:`faithlab_study.book.pages.format_table`), followed by a link to
  download its CSV (every digit and column), and folded into a dropdown when it is too wide for the column or too
  long (``:no-fold:`` keeps it open); ``:columns: a, b`` shows only those columns.
- ``fl-glance <paper>[/<experiment>]``: the claims at a glance (claim | paper | ours | verdict), from the scorecard.
- ``fl-setup <paper>``: the set-up table, paper against ours (``faithlab_study.papers.<paper>.SETUP``).
- ``fl-summary``: one sentence per paper (and per study check) from the scorecard, for the intro.
- ``fl-answer``: the study's answer to "which metric should I trust?" with a link to the guide (the intro's first
  screen); ``fl-guide``: the guide's per-situation recommendations; ``fl-reconcile``: where the synthesis and a
  chapter may disagree (all from the synthesis notebook's ``guide.csv`` and ``report_card.csv``).
- ``fl-failures``: what did not reproduce, and why (the scorecard's opening list); ``fl-legend``: the verdicts.
- the claims' cell tables (``_generated/<paper>/<experiment>/cells/*.csv`` and ``_generated/cells.csv``), which the
  claims' rows link, are copied into the HTML output beside the pages that link them (:func:`_copy_cell_tables`).
- ``fl-metrics``: every registered metric as its declaration says (the API page; :func:`pages.metrics_html`).
- ``fl-build``: the book's address (or that this build is local) and the notebooks' run time in this build.
- on the executed notebooks' pages, a table output too wide for the column (or too long) is folded into a dropdown.

The directives read ``_generated/`` when the page is built, so ``make html`` shows what the notebooks computed.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.directives.patches import CSVTable
from sphinx.util.docutils import SphinxDirective

from faithlab_study.book import html
from faithlab_study.book import pages

GENERATED = "_generated"
SCORECARD = "scorecard.csv"


def _srcdir(directive: SphinxDirective) -> Path:
    return Path(directive.env.srcdir)


def _raw(text: str) -> nodes.raw:
    return nodes.raw("", text, format="html")


def _scorecard(directive: SphinxDirective) -> pd.DataFrame:
    path = _srcdir(directive) / GENERATED / SCORECARD
    directive.env.note_dependency(str(path))
    if not path.is_file():
        return pd.DataFrame(columns=["paper", "experiment", "claim", "paper_value", "our_value", "verdict", "rule",
                                     "premise", "note"])
    return pd.read_csv(path, keep_default_na=False, dtype=str)


def _toc_order(directive: SphinxDirective) -> list[str]:
    toc = _srcdir(directive) / "_toc.yml"
    return pages.toc_order(yaml.safe_load(toc.read_text())) if toc.is_file() else []


class ReadableCSVTable(CSVTable):
    """Sphinx's csv-table; a ``:file:`` table is formatted, linked for download and folded when too big."""

    option_spec = {**CSVTable.option_spec, "no-fold": directives.flag, "columns": directives.unchanged}

    def run(self):
        if "file" not in self.options:
            return super().run()
        env = self.state.document.settings.env
        relative = self.options["file"]
        _, path = env.relfn2path(relative, env.docname)
        env.note_dependency(path)
        frame = pd.read_csv(path, keep_default_na=True)
        if "columns" in self.options:  # a narrower view of the table; the CSV link keeps every column
            wanted = [c.strip() for c in self.options["columns"].split(",") if c.strip()]
            missing = [c for c in wanted if c not in frame.columns]
            if missing:
                raise self.error(f"{relative} has no column {missing} (columns: {list(frame.columns)})")
            frame = frame[wanted]
        shown = pages.format_table(frame)
        lines = [",".join('"' + str(v).replace('"', '""') + '"' for v in shown.columns)]
        lines += [",".join('"' + str(v).replace('"', '""') + '"' for v in row) for row in shown.itertuples(index=False)]
        self.options = {k: v for k, v in self.options.items() if k not in ("file", "no-fold", "columns")}
        self.options["header-rows"] = 1
        self.content = StringList(lines, source=path)
        table = super().run()
        link = nodes.paragraph(classes=["fl-csv"])
        ref = addnodes.download_reference("", "", reftarget=relative, refdoc=env.docname, refexplicit=True,
                                          refdomain="", reftype="download", refwarn=True)
        ref += nodes.literal("", f"CSV: {Path(relative).name}")
        link += ref
        fold = None if "no-fold" in self.arguments or "no-fold" in self.options else pages.should_fold(shown)
        if fold is None:
            return [*table, link]
        caption = self.arguments[0] if self.arguments else Path(relative).stem
        summary = f"Table ({fold}): {html.escaped(caption)}"
        return [_raw(html.fold_open(summary)), *table, link, _raw(html.FOLD_CLOSE)]


class Glance(SphinxDirective):
    """``fl-glance paper[/experiment]`` (``:notes:`` adds each claim's note to its fold)."""

    required_arguments = 1
    option_spec = {"notes": directives.flag}

    def run(self):
        paper, _, experiment = self.arguments[0].partition("/")
        order = [item.split("/", 1)[1] for item in _toc_order(self) if item.startswith(f"{paper}/")]
        claims = pages.claims_for(_scorecard(self), paper, experiment or None, order)
        return [_raw(pages.glance_html(claims, self.env.docname, notes="notes" in self.options))]


class Preregistration(SphinxDirective):
    """``fl-prereg``: the decision procedure (words and numbers from faithlab_study.verdicts), the simulated coverage of its
    intervals, then per paper its committed rules (registered above the claim functions, with the claims each decided
    in this build) and the claims' generated decisions and premises (``preregistration.csv``), then the rules' change
    logs."""

    def run(self):
        from faithlab_study.book.chapters import CHAPTERS, PAPER_NAMES, paper_order
        from faithlab_study.verdicts.rules import all_rules, rule_files

        generated = _srcdir(self) / GENERATED
        path = generated / "preregistration.csv"
        self.env.note_dependency(str(path))
        for rules_file in rule_files():
            self.env.note_dependency(str(rules_file))
        frame = pd.read_csv(path, keep_default_na=False, dtype=str) if path.is_file() else pd.DataFrame(
            columns=["paper", "experiment", "claim", "kind", "rule", "decision", "premise", "function",
                     "rule last changed", "rule_id"])
        if "rule_id" not in frame:
            frame["rule_id"] = ""
        card = _scorecard(self)
        if "rule_id" not in card:
            card["rule_id"] = ""
        test = html.element("code", "tests/faithlab_study/verdicts/test_coverage.py")
        parts = [pages.procedure_html(), html.element("h2", "The intervals' coverage"),
                 html.element("p", f"Simulated when the book was built (the table {test} asserts): how often each "
                                   "interval holds the truth for a nominal 0.95, over nested designs of 3, 5 and 8 "
                                   "trained replicas."), pages.coverage_html(pages.coverage_frame(generated)),
                 html.element("h2", "The statements' error rates"),
                 html.element("p", f"Simulated when the book was built (the table "
                                   f"{html.element('code', 'tests/faithlab_study/verdicts/test_error_rates.py')} asserts at 300 data "
                                   "sets per design): how often each statement is made where it is false."),
                 pages.error_rates_html(pages.error_rates_frame(generated)),
                 html.element("h2", "Verdicts the change of procedure moved"), pages.moved_html(card, self.env.docname),
                 html.element("h2", "Rules the change of procedure changed"), pages.rule_changes_html()]
        papers = {r.paper for r in all_rules().values()}
        for paper in paper_order([*CHAPTERS, *papers, *frame["paper"].astype(str)]):
            part = frame[frame["paper"].astype(str) == paper]
            if part.empty and paper not in papers:
                continue
            parts.append(html.element("h2", html.escaped(PAPER_NAMES.get(paper, paper))))
            parts.append(pages.rules_html(card, self.env.docname, paper))
            if not part.empty:
                parts.append(html.fold(pages.preregistration_html(part, self.env.docname),
                                       "The decisions of this build, as the deciding functions wrote them: open"))
        parts += [html.element("h2", "Change log of the rules"), pages.rules_log_html()]
        return [_raw("".join(parts))]


class Setup(SphinxDirective):
    """``fl-setup paper``: the chapter's paper-vs-ours table (``faithlab_study.papers.<paper>.SETUP``)."""

    required_arguments = 1

    def run(self):
        module = importlib.import_module(f"faithlab_study.papers.{self.arguments[0]}")
        settings = getattr(module, "SETUP", ())
        if not settings:
            raise self.error(f"faithlab_study.papers.{self.arguments[0]} has no SETUP")
        generated = _srcdir(self) / GENERATED
        for setting in settings:
            paper, experiment = setting.notebook.split("/")
            self.env.note_dependency(str(generated / paper / f"{experiment}.ipynb"))
        frame = pages.setup_rows(settings, generated)
        claims = pages.claims_for(_scorecard(self), self.arguments[0])
        return [_raw(pages.transfer_html(frame, claims)), _raw(pages.table_html(frame, css_class="fl-setup"))]


class Metrics(SphinxDirective):
    """``fl-metrics``: every registered metric, read from its declaration."""

    def run(self):
        return [_raw(pages.metrics_html())]


class Summary(SphinxDirective):
    """``fl-summary``: one sentence per paper, then per study check, from the scorecard."""

    def run(self):
        from faithlab_study.book.chapters import CHAPTERS, PAPER_NAMES, paper_order

        card = _scorecard(self)
        items = []
        for paper in paper_order([*CHAPTERS, *card["paper"].astype(str)]):
            name = PAPER_NAMES.get(paper, paper)
            claims = card[card["paper"].astype(str) == paper]
            if paper not in CHAPTERS:  # counted as the study's own checks, as the summary table beside it does
                name, claims = f"{name} (study check)", claims.assign(kind="study check")
            sentence = pages.summary_sentence(name, claims)
            href = f"{paper}.html" if (Path(self.env.srcdir) / f"{paper}.md").is_file() else None
            head, _, rest = sentence.partition(":")
            head = html.element("b", html.escaped(head))
            items.append(html.element("li", f"{html.element('a', head, href=href) if href else head}:"
                                            f"{html.escaped(rest)}"))
        return [_raw(html.element("ul", "".join(items), cls="fl-summary"))]


SYNTHESIS = Path(GENERATED) / "synthesis" / "metrics_compared"


def _synthesis(directive: SphinxDirective, name: str) -> pd.DataFrame:
    path = _srcdir(directive) / SYNTHESIS / f"{name}.csv"
    directive.env.note_dependency(str(path))
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def _href(directive: SphinxDirective, page: str) -> str:
    return "../" * directive.env.docname.count("/") + f"{page}.html"


class Answer(SphinxDirective):
    """``fl-answer``: the generated answer to "which metric should I trust?" and the guide's link."""

    def run(self):
        return [_raw(pages.answer_html(_synthesis(self, "guide"), _synthesis(self, "report_card"),
                                       None if self.env.docname == "which_metric" else _href(self, "which_metric"),
                                       _synthesis(self, "setups")))]


class Guide(SphinxDirective):
    """``fl-guide``: per situation, the metrics that hold up (sentence), every metric folded under it."""

    def run(self):
        return [_raw(pages.guide_html(_synthesis(self, "guide"), _synthesis(self, "setups"), self.env.docname))]


class Reconcile(SphinxDirective):
    """``fl-reconcile``: each proposing chapter's verdicts beside its metric's report-card rank."""

    def run(self):
        return [_raw(pages.reconcile_html(_synthesis(self, "report_card"), _scorecard(self), self.env.docname))]


class Failures(SphinxDirective):
    """``fl-failures``: every claim not reproduced, reproduced weaker, partly reproduced or not testable here
    (:data:`faithlab_study.book.pages.WHY_VERDICTS`), with why."""

    def run(self):
        from faithlab_study.book.chapters import CHAPTERS

        return [_raw(pages.failures_html(_scorecard(self), self.env.docname, order=[*CHAPTERS, "basics",
                                                                                    "synthesis"]))]


class Legend(SphinxDirective):
    """``fl-legend``: every verdict's badge and meaning."""

    def run(self):
        return [_raw(pages.legend_html())]


class Build(SphinxDirective):
    """``fl-build``: where the book is published (or that this build is local), and how long its notebooks ran."""

    def run(self):
        import json

        url = str((self.config.myst_substitutions or {}).get("book_url", "") or "")
        seconds, profiles, n = 0.0, set(), 0
        for path in sorted((_srcdir(self) / GENERATED).glob("*/*.ipynb")):
            meta = json.loads(path.read_text()).get("metadata", {}).get("faithlab", {})
            if "seconds" in meta:
                seconds += float(meta["seconds"])
                profiles.add(str(meta.get("profile")))
                n += 1
        return [_raw(pages.build_html(url, seconds=seconds, notebooks=n, profiles=sorted(profiles)))]


def _fold_wide_outputs(app, doctree):
    """On an executed notebook's page, every HTML table output (a pandas frame) too wide for the column or too long
    is folded into a dropdown (:func:`faithlab_study.book.pages.fold_html_output`); the notebook file is not changed."""
    if not app.env.docname.startswith(f"{GENERATED}/"):
        return
    for node in list(doctree.findall(nodes.raw)):
        if "html" not in node.get("format", "").split():
            continue
        text = pages.relabel_html(node.astext())
        folded = pages.fold_html_output(text)
        if folded is not None or text != node.astext():
            node.replace_self(nodes.raw("", folded if folded is not None else text, format="html"))


RECORD_PAGES = {"speed"}  # pages that include benchmarks/RESULTS.md, whose record tables run wide


def _fold_wide_tables(app, doctree):
    """On a page that includes the benchmarks' record (:data:`RECORD_PAGES`), every Markdown table too wide for the
    column or too long (:func:`faithlab_study.book.pages.should_fold`) is folded into a dropdown, as a notebook's wide
    outputs are; the prose around it stays open."""
    if app.env.docname not in RECORD_PAGES:
        return
    for table in list(doctree.findall(nodes.table)):
        rows = [[entry.astext() for entry in row.findall(nodes.entry)] for row in table.findall(nodes.row)]
        if len(rows) < 2:
            continue
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        frame = pd.DataFrame(rows[1:], columns=range(width)).set_axis(rows[0], axis=1)
        reason = pages.should_fold(frame, max_rows=40)
        if reason is None:
            continue
        parent, at = table.parent, table.parent.index(table)
        parent.insert(at + 1, nodes.raw("", html.FOLD_CLOSE, format="html"))
        parent.insert(at, nodes.raw("", html.fold_open(f"Table ({html.escaped(reason)}): open"), format="html"))


CELL_TABLES = ("*/*/cells/*.csv", "cells.csv")  # under _generated: what the claims' rows and the scorecard link


def _copy_cell_tables(app, exception):
    """After an HTML build, copy the claims' cell tables (:data:`CELL_TABLES` under ``_generated``) to the same
    place under the output, where the notebooks' pages and the chapters link them: Sphinx copies only the files a
    page names as a download or an image, and a claim's row (a notebook's HTML output) names its table by a plain
    link."""
    import shutil

    if exception is not None or app.builder.format != "html":
        return
    source = Path(app.srcdir) / GENERATED
    for pattern in CELL_TABLES:
        for path in sorted(source.glob(pattern)):
            relative = path.relative_to(source)
            if path.is_symlink() or not path.is_file() or any(part.startswith(".") for part in relative.parts):
                continue  # a link, or a runner's .staging folder
            target = Path(app.outdir) / GENERATED / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def _no_numbers(app, config):
    """No automatic "Fig. N"/"Table N": the captions name the paper's figure ("paper Fig. 4 ↔ ours"), and Sphinx's
    own numbers beside them read as the paper's. sphinx-jupyterbook-latex switches numfig on when the configuration
    is read, so this runs after it (priority 900)."""
    config.numfig = False


def setup(app):
    app.connect("config-inited", _no_numbers, priority=900)
    app.connect("doctree-read", _fold_wide_outputs)
    app.connect("doctree-read", _fold_wide_tables)
    app.connect("build-finished", _copy_cell_tables)
    app.add_directive("csv-table", ReadableCSVTable, override=True)
    app.add_directive("fl-glance", Glance)
    app.add_directive("fl-setup", Setup)
    app.add_directive("fl-summary", Summary)
    app.add_directive("fl-prereg", Preregistration)
    for name, directive in (("fl-answer", Answer), ("fl-guide", Guide), ("fl-reconcile", Reconcile),
                            ("fl-failures", Failures), ("fl-legend", Legend), ("fl-build", Build),
                            ("fl-metrics", Metrics)):
        app.add_directive(name, directive)
    app.add_css_file("faithlab.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The study's one module that writes HTML: every tag and every escape of the book's pages and of a notebook's
claims is written here (the library's report page has its own, :mod:`faithlab.html`).

* the book's pages (:mod:`faithlab_study.book.pages`): :func:`element`, :data:`BR`, :func:`escaped`,
  :func:`escape_keeping_bold`, :func:`cells`, :func:`head_row` and :func:`glance_table`;
* the book's tables (:mod:`faithlab_study.book.pages.tables`): :func:`text_table`, :func:`fold` (:func:`fold_open`,
  :data:`FOLD_CLOSE`), :func:`relabel_table`, :func:`has_table` and :func:`table_cells`;
* a notebook's claims (:meth:`faithlab_study.artifacts.Outputs.claim`, the pages' links to them):
  :func:`claim_anchor`, :func:`verdict_badge` (:func:`verdict_class`), :func:`cells_html` and :func:`claim_html`.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Callable, Iterable
from html.parser import HTMLParser

# -- a notebook's claims --------------------------------------------------------------------------------------------

DASH = "–"
"""An empty value in a claim's row."""


def claim_anchor(claim: str) -> str:
    """The HTML id of a claim's row where its notebook shows it (``claim-`` and 10 hex digits of the claim text's
    SHA-1): the chapter pages and the scorecard link each claim to ``<notebook page>.html#<anchor>``."""
    import hashlib

    return "claim-" + hashlib.sha1(str(claim).encode("utf-8")).hexdigest()[:10]


def verdict_class(verdict: str) -> str:
    """The CSS class of a verdict's badge: ``fl-badge-`` and the verdict's words joined by dashes, every run of
    characters other than letters and digits one dash ("reproduced, weaker" → ``fl-badge-reproduced-weaker``), so
    no comma or space of a verdict breaks the class attribute."""
    return "fl-badge-" + re.sub(r"[^a-z0-9]+", "-", str(verdict).lower()).strip("-")


def verdict_badge(verdict: str) -> str:
    """A verdict as the book's coloured badge: ``<span class="fl-badge <verdict_class(verdict)>">``
    (styled by book/_static/faithlab.css). The caller gives a verdict of the study's
    (:data:`faithlab_study.verdicts.VERDICTS`, checked where a claim is recorded)."""
    return f'<span class="fl-badge {verdict_class(verdict)}">{_html.escape(str(verdict))}</span>'


CELLS_LINK = "cell data (CSV)"
"""The text of the link from a claim's row to its cell table (``cells/<slug>.csv`` in its notebook's folder)."""

CELLS_HOW = ("each row: the interval of the replica values at the row's level; the outcome compares it with the "
             "row's zero (no effect) and margin in the row's direction")
"""The line beside :data:`CELLS_LINK` that says how a reader recomputes the verdict from the cell table."""


def cells_html(href: str) -> str:
    """A paragraph linking a claim's cell table at ``href`` (:data:`CELLS_LINK`) with how to recompute its verdict
    from it (:data:`CELLS_HOW`); empty when ``href`` is empty."""
    if not href:
        return ""
    return (f'<p class="fl-cells"><a href="{_html.escape(href)}">{_html.escape(CELLS_LINK)}</a> — '
            f"{_html.escape(CELLS_HOW)}</p>")


def cells_path(row: dict) -> str:
    """The ``cells`` entry of a claim's row (the cell table's path in its notebook's folder), "" when it has none."""
    value = row.get("cells")
    return value.strip() if isinstance(value, str) and value.strip() not in ("", "nan", "—") else ""


def text_or_dash(value) -> str:
    """A value as escaped HTML text, :data:`DASH` for None or NaN."""
    import math

    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    return _html.escape(str(value))


def claim_cell(value) -> str:
    """A value of a claim's row as escaped HTML text (:data:`DASH` for a missing one)."""
    import math

    missing = isinstance(value, float) and math.isnan(value) or isinstance(value, str) and not value.strip()
    if value is None or missing:
        return DASH
    return _html.escape(str(value))


def claim_html(row: dict) -> str:
    """A claim's row (a dict with the ``faithlab_study.artifacts.CLAIM_COLUMNS`` keys, as
    :meth:`faithlab_study.artifacts.Outputs.claim` records it) as the HTML its notebook's page shows: a one-row
    ``<table class="fl-glance fl-claim-row">`` carrying ``id="<claim_anchor(claim)>"`` (the target of the chapter
    pages' and the scorecard's links), with the columns claim | paper | ours | verdict (:func:`verdict_badge`) and the
    rule, premise and note folded in a ``<details>`` under the claim, with the link to its cell table
    (:func:`cells_html`, from the row's ``cells``) where it has one. Every text is escaped. The table fills the
    column and no wider (book/_static/faithlab.css)."""
    folded = "".join(f"<p><b>{name}</b>: {claim_cell(row.get(name))}</p>" for name in ("rule", "premise", "note")
                     if claim_cell(row.get(name)) != DASH)
    cells = cells_path(row)  # relative to the notebook's folder, beside its page <experiment>.html
    folded += cells_html(f"{row.get('experiment', '')}/{cells}" if cells else "")
    fold = f'<details class="fl-rule"><summary>rule and premise</summary>{folded}</details>' if folded else ""
    head = ('<thead><tr><th class="fl-claim">claim</th><th>paper</th><th>ours</th><th class="fl-verdict">verdict</th>'
            "</tr></thead>")
    body = (f'<tr><td class="fl-claim">{claim_cell(row.get("claim"))}{fold}</td>'
            f'<td>{claim_cell(row.get("paper_value"))}</td><td>{claim_cell(row.get("our_value"))}</td>'
            f'<td class="fl-verdict">{verdict_badge(row["verdict"])}</td></tr>')
    return (f'<table class="fl-glance fl-claim-row" id="{claim_anchor(row["claim"])}">{head}<tbody>{body}</tbody>'
            "</table>")


# -- the book's tables ----------------------------------------------------------------------------------------------

def text_table(columns: Iterable, rows: Iterable[Iterable], *, css_class: str = "fl-table") -> str:
    """A small text table: one header cell per column name, one row per row of cells (every cell escaped,
    :func:`text_or_dash`), in a ``<table class="<css_class>">``."""
    head = "".join(f"<th>{text_or_dash(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{text_or_dash(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def fold(body: str, summary: str, *, cls: str = "fl-fold") -> str:
    """HTML ``body`` folded in a dropdown whose closed line reads ``summary`` (HTML, as given)."""
    return fold_open(summary, cls=cls) + body + FOLD_CLOSE


def fold_open(summary: str, *, cls: str = "fl-fold") -> str:
    """The start of :func:`fold`, for a body that is not HTML text (the book's tables as document nodes); end it with
    :data:`FOLD_CLOSE`."""
    return f'<details class="{cls}"><summary>{summary}</summary><div class="fl-fold-body">'


FOLD_CLOSE = "</div></details>"
"""The end of :func:`fold_open`."""


_HEADER_CELL = re.compile(r"(<th[^>]*>)([^<]*)(</th>)")
_BOOL_CELL = re.compile(r"(<td[^>]*>)(True|False)(</td>)")


def has_table(text: str) -> bool:
    """Whether HTML ``text`` holds a table."""
    return "<table" in text


def relabel_table(text: str, label: Callable[[str], str]) -> str:
    """An HTML table (a notebook's output) with ``label`` of each header cell's text for its text and yes/no for its
    True/False cells; text without a table as is."""
    if not has_table(text):
        return text
    text = _HEADER_CELL.sub(lambda m: m.group(1) + _html.escape(label(_html.unescape(m.group(2))),
                                                               quote=False) + m.group(3), text)
    return _BOOL_CELL.sub(lambda m: m.group(1) + ("yes" if m.group(2) == "True" else "no") + m.group(3), text)


class _TableText(HTMLParser):
    """The text of an HTML table's cells, row by row (header rows included)."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_cells(text: str) -> list[list[str]]:
    """The text of the cells of the HTML tables in ``text``, row by row (header rows included)."""
    parser = _TableText()
    parser.feed(text)
    return parser.rows


# -- the book's pages -----------------------------------------------------------------------------------------------

BR = "<br>"
"""A line break."""


def escaped(value) -> str:
    """``str(value)`` escaped, to sit in a page's HTML."""
    return _html.escape(str(value))


def element(tag: str, content: str = "", **attributes) -> str:
    """``<tag a="v" ...>content</tag>``: the attributes in the order given (``cls`` for ``class``; values escaped),
    ``content`` HTML as given (escape its text: :func:`escaped`, :func:`text_or_dash`)."""
    attrs = "".join(f' {"class" if name == "cls" else name}="{_html.escape(str(value))}"'
                    for name, value in attributes.items())
    return f"<{tag}{attrs}>{content}</{tag}>"


def escape_keeping_bold(text: str) -> str:
    """``text`` escaped, except its ``<b>``/``</b>`` (written by :func:`element`), which stay bold."""
    return _html.escape(text).replace("&lt;b&gt;", "<b>").replace("&lt;/b&gt;", "</b>")


def cells(*contents: str, tag: str = "td") -> str:
    """One ``<td>`` (or ``tag``) per HTML content, in order."""
    return "".join(element(tag, c) for c in contents)


def head_row(*names: str) -> str:
    """A table's ``<thead>``: one ``<th>`` per name (HTML as given)."""
    return element("thead", element("tr", cells(*names, tag="th")))


def glance_table(head: str, rows: Iterable[str], *, cls: str = "fl-glance") -> str:
    """A table of the book's pages: its ``head`` (:func:`head_row`) and its rows (``<tr>`` each)."""
    return element("table", head + element("tbody", "".join(rows)), cls=cls)

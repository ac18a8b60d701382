"""The library's one module that writes HTML: every tag and every escape of the report's page
(:func:`faithlab.report.write`) is written here: :data:`REPORT_STYLE`, :func:`document`, :func:`heading`,
:func:`paragraph`, :func:`link`, :func:`file_link`, :func:`text`, :func:`preformatted`, :func:`bullets`,
:func:`image` and :func:`table`. (The study's pages have their own, :mod:`faithlab_study.book.html`.)
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable, Sequence

# -- the report's page --------------------------------------------------------------------------------------------

REPORT_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
                "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}"
                "th,td{border:1px solid #ccc;padding:0.2em 0.5em;text-align:right}th{background:#f4f4f4}"
                "td.text,th.text{text-align:left}p.lead{font-size:1.1em}"
                "img{max-width:100%}code,pre{background:#f6f6f6;white-space:pre-wrap}.hint{color:#8a4b00}")
"""The report page's style sheet."""


def link(url: str, text: str) -> str:
    """``text`` as a link to ``url`` (both escaped); the text alone, escaped, when ``url`` is empty."""
    return f"<a href='{_html.escape(url)}'>{_html.escape(text)}</a>" if url else _html.escape(text)


def text(value: str) -> str:
    """``value`` escaped, to sit in a page's HTML."""
    return _html.escape(value)


def document(title: str, body: Sequence[str], *, style: str = REPORT_STYLE) -> str:
    """A self-contained page: ``title`` (escaped) as its title and first heading, ``style`` as its style sheet, then
    the HTML pieces of ``body``, one a line."""
    e = _html.escape
    return "\n".join([f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
                      f"<style>{style}</style></head><body><h1>{e(title)}</h1>", *body, "</body></html>"])


def heading(title: str, level: int = 2) -> str:
    """``<h2>title</h2>`` (or the ``level`` given), escaped."""
    return f"<h{level}>{_html.escape(title)}</h{level}>"


def paragraph(content: str, *, cls: str | None = None, raw: bool = False) -> str:
    """A paragraph of ``content`` (escaped; ``raw``: HTML written here, such as :func:`link`'s, kept as it is), of
    class ``cls`` when given."""
    inner = content if raw else _html.escape(content)
    return f"<p class='{cls}'>{inner}</p>" if cls else f"<p>{inner}</p>"


def file_link(path: str, note: str = "") -> str:
    """A paragraph linking the file ``path`` by its name, ``note`` after the link (both escaped)."""
    return f"<p>{link(path, path)}{_html.escape(note)}</p>"


def preformatted(content: str) -> str:
    """``content`` (escaped) as preformatted text."""
    return f"<pre>{_html.escape(content)}</pre>"


def bullets(items: Sequence[str], *, cls: str | None = None) -> str:
    """A bulleted list of ``items`` (escaped), each item of class ``cls`` when given."""
    attribute = f" class='{cls}'" if cls else ""
    return "<ul>" + "".join(f"<li{attribute}>{_html.escape(i)}</li>" for i in items) + "</ul>"


def image(src: str, alt: str) -> str:
    """An image by its (relative) address ``src`` with its ``alt`` text, both escaped."""
    return f"<img src='{_html.escape(src)}' alt='{_html.escape(alt)}'>"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, text: Sequence[bool],
          raw: Sequence[bool] | None = None) -> str:
    """An HTML table: one header cell per name of ``header``, one row per row of ``rows`` (cells as text, escaped
    except the columns flagged ``raw``: HTML written here, such as links); the columns flagged ``text`` left-aligned
    (class ``text``), the others right-aligned."""
    e = _html.escape
    raw = [False] * len(header) if raw is None else raw
    head = "".join(f"<th{' class=text' if t else ''}>{e(n)}</th>" for n, t in zip(header, text))
    body = "".join("<tr>" + "".join(
        f"<td{' class=text' if t else ''}>{v if r else e(v)}</td>" for v, t, r in zip(row, text, raw)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

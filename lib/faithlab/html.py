"""The one module that writes HTML: every tag and every escape of the library and the study is written here, the
pages and the report calling these functions (house v4: one HTML module).

* the report's page (:func:`faithlab.report.write`): :data:`REPORT_STYLE`, :func:`document`, :func:`heading`,
  :func:`paragraph`, :func:`link`, :func:`preformatted`, :func:`bullets`, :func:`image` and :func:`table`.
"""

from __future__ import annotations

import html as _html
from collections.abc import Sequence

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

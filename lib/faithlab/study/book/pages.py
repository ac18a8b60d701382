"""What the book's pages show of the generated outputs: tables formatted for reading, claims at a glance, the
scorecard, the set-up tables and the intro's verdict sentences.

The book's Sphinx extension (``book/_ext/faithlab_book.py``) is a thin layer over these functions, so that what a
reader sees is tested here (``tests/book/test_pages.py``) and the CSV files keep every digit (each table links its CSV).

- :func:`format_table`: fixed decimals per column (three significant digits of the column's largest value, or
  scientific notation for a column of tiny values), ``X`` with ``X std`` as one ``mean ± sd`` column (a standard
  deviation that is zero everywhere, one seed, is dropped), ``X low``/``X high`` as one ``[low, high]`` column.
- :func:`min_width_px`: an estimate of the narrowest width a table can be laid out in (its unbreakable words),
  which decides whether the book folds it.
- :func:`glance_html`: a chapter's claims as claim | paper | ours | verdict, each claim linking to the row where
  its notebook computes it, its rule and premise folded under it.
- :func:`summary_sentence`, :func:`setup_rows`: the intro's sentence per paper and a chapter's paper-vs-ours table.
- :func:`fold_html_output`: a notebook's table output folded when it would not fit the column;
  :func:`relabel_html`, :func:`column_label`: words for raw column names, yes/no for booleans.
- :func:`failures_html`, :func:`why_sentence`, :func:`legend_html`: the scorecard's "what did not reproduce, and
  why" and its legend; :func:`transfer_html`: a chapter's "how far this transfers".
- :func:`answer_html`, :func:`guide_html`, :func:`reconcile_html`: the answer to "which metric should I trust?"
  (front page and guide), from the synthesis notebook's tables; :func:`build_html`: the build's address and time.

One concept: what the book's pages show of the generated outputs; every function turns an artifact into what a
reader sees, for the book's Sphinx extension to place.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd

from faithlab.html import claim_anchor, verdict_badge
from faithlab.study.verdicts import VERDICTS

COLUMN_PX = 772  # the content column of the book's theme at a 1400 px window
CHAR_PX = 7.4  # mean width of a character of the tables' font (0.85 em of 16 px)
CELL_PAD_PX = 17  # horizontal padding and border of a cell
DASH = "–"
_SD = re.compile(r"^(?P<base>.*?)[ _](?:std|sd)$", re.IGNORECASE)
_LOW = re.compile(r"^(?P<base>.*?)[ _]?(?:low|lower|lo)$", re.IGNORECASE)


def _decimals(values: np.ndarray) -> int | None:
    """Decimals giving three significant digits of the largest |value| (None: use scientific notation)."""
    finite = np.abs(values[np.isfinite(values)])
    nonzero = finite[finite > 0]
    if nonzero.size == 0:
        return 0
    top = float(nonzero.max())
    if top < 1e-3:
        return None
    return int(min(6, max(0, 2 - math.floor(math.log10(top)))))


def _format_number(value: float, decimals: int | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if decimals is None:
        return f"{value:.2e}" if value != 0 else "0"
    return f"{value:.{decimals}f}"


def _is_integer_column(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite))) and bool(np.all(np.abs(finite) < 1e15))


def _numeric(column: pd.Series) -> np.ndarray | None:
    """The column as floats when it is numeric (bool excluded), else None."""
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        return None
    return column.to_numpy(dtype=float)


def _formatter(values: np.ndarray):
    """The one number format of a column's values: integers as integers, else fixed decimals (:func:`_decimals`)."""
    if _is_integer_column(values):
        return lambda v: DASH if not np.isfinite(v) else f"{int(v)}"
    decimals = _decimals(values)
    return lambda v: DASH if not np.isfinite(v) else _format_number(float(v), decimals)


def format_column(column: pd.Series) -> list[str]:
    """One column's cells as text: integers as integers, other numbers with one number of decimals for the whole
    column (three significant digits of its largest |value|; scientific notation when every value is below 1e-3),
    missing values as a dash, text as is."""
    values = _numeric(column)
    if values is None:
        return [DASH if (isinstance(v, float) and math.isnan(v)) or v is None else str(v) for v in column]
    fmt = _formatter(values)
    return [fmt(v) for v in values]


def _pairs(columns: list[str]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Columns to merge: {mean column: its sd column} and {low column: (high column, merged name)}."""
    sds = {}
    for col in columns:
        match = _SD.match(str(col))
        if match and match.group("base") in columns:
            sds[match.group("base")] = col
    ranges = {}
    for col in columns:
        match = _LOW.match(str(col))
        if not match:
            continue
        base = match.group("base")
        for high in (f"{base} high", f"{base}_high", f"{base}high", f"{base} upper", f"{base}_hi", f"{base} hi"):
            if high in columns:
                ranges[col] = (high, f"{base} range".strip() if base else "range")
                break
    return sds, ranges


COLUMN_LABELS = {
    "n_epochs": "epochs", "n_test": "test images", "n_train": "training images", "n_samples": "samples",
    "n_images": "images", "mean_U": "mean uncertainty U", "top_probability": "top-class probability",
    "batch_size": "batch size", "train_seed": "training seed", "paper_value": "paper", "our_value": "ours",
}
"""Words for the raw column names the notebooks' tables carry; any other ``snake_case`` name is shown with spaces
(:func:`column_label`)."""
_SNAKE = re.compile(r"^[a-z]{2,}[a-z0-9]*(?:_[A-Za-z0-9]+)+$")  # not a symbol such as S_avg or U_obj


def column_label(name) -> str:
    """A column name as the book shows it: :data:`COLUMN_LABELS`' words, a ``snake_case`` name with spaces, any other
    name unchanged."""
    text = str(name)
    if text in COLUMN_LABELS:
        return COLUMN_LABELS[text]
    return text.replace("_", " ") if _SNAKE.match(text) else text


_HEADER_CELL = re.compile(r"(<th[^>]*>)([^<]*)(</th>)")
_BOOL_CELL = re.compile(r"(<td[^>]*>)(True|False)(</td>)")


def relabel_html(text: str) -> str:
    """A notebook's HTML table output with words for its headers (:func:`column_label`) and yes/no for its
    True/False cells."""
    if "<table" not in text:
        return text
    text = _HEADER_CELL.sub(lambda m: m.group(1) + html.escape(column_label(html.unescape(m.group(2))),
                                                              quote=False) + m.group(3), text)
    return _BOOL_CELL.sub(lambda m: m.group(1) + ("yes" if m.group(2) == "True" else "no") + m.group(3), text)


def format_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A table as the book shows it: every cell text (:func:`format_column`), ``X`` and ``X std`` merged into one
    ``X`` column of ``mean ± sd`` cells (dropped when the sd is zero or missing everywhere), ``X low`` and ``X high``
    into one ``X range`` column of ``[low, high]`` cells (both ends with the same decimals)."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    columns = [str(c) for c in frame.columns]
    frame = frame.set_axis(columns, axis=1)
    sds, ranges = _pairs(columns)
    out: dict[str, list[str]] = {}
    skip = set(sds.values()) | {high for high, _ in ranges.values()}
    for col in columns:
        if col in skip:
            continue
        if col in sds:
            mean, sd = _numeric(frame[col]), _numeric(frame[sds[col]])
            if mean is None or sd is None:
                out[col] = format_column(frame[col])
                out[sds[col]] = format_column(frame[sds[col]])
                continue
            if not np.any(np.nan_to_num(sd) != 0):
                out[col] = format_column(frame[col])
                continue
            fmt = _formatter(np.concatenate([mean, sd]))
            out[col] = [DASH if not np.isfinite(m) else fmt(m) + ("" if not np.isfinite(s) else f" ± {fmt(s)}")
                        for m, s in zip(mean, sd)]
        elif col in ranges:
            high, name = ranges[col]
            low_v, high_v = _numeric(frame[col]), _numeric(frame[high])
            if low_v is None or high_v is None:
                out[col] = format_column(frame[col])
                out[high] = format_column(frame[high])
                continue
            fmt = _formatter(np.concatenate([low_v, high_v]))
            out[name if name not in columns else col] = [
                DASH if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{fmt(lo)}, {fmt(hi)}]"
                for lo, hi in zip(low_v, high_v)]
        else:
            out[col] = format_column(frame[col])
    for col, cells in out.items():  # booleans as words
        if cells and set(cells) <= {"True", "False", DASH}:
            out[col] = [{"True": "yes", "False": "no"}.get(c, c) for c in cells]
    return pd.DataFrame({column_label(c): v for c, v in out.items()}, index=range(len(frame)))


def _longest_word(text: str) -> int:
    words = re.split(r"[\s/]+", str(text))
    return max((len(w) for w in words), default=0)


def min_width_px(frame: pd.DataFrame) -> float:
    """An estimate of the narrowest width (px) the table can take in the book: per column its longest unbreakable
    word (header or cell; a cell breaks at spaces and slashes) at :data:`CHAR_PX`, plus :data:`CELL_PAD_PX`."""
    total = 0.0
    for col in frame.columns:
        longest = max([_longest_word(col), *(_longest_word(v) for v in frame[col])])
        total += longest * CHAR_PX + CELL_PAD_PX
    return total


def should_fold(frame: pd.DataFrame, *, max_rows: int = 16, column_px: float = COLUMN_PX) -> str | None:
    """Why the book folds a (formatted) table into a dropdown — too wide for the column or too long — or None."""
    width = min_width_px(frame)
    if width > column_px:
        return f"{len(frame.columns)} columns"
    if len(frame) > max_rows:
        return f"{len(frame)} rows"
    return None


# --------------------------------------------------------------------------------------------------- claims


def notebook_href(paper: str, experiment: str, docname: str, claim: str | None = None) -> str:
    """The link from the page ``docname`` (a Sphinx docname such as ``ffidelity/ranking``) to the executed
    notebook's page, at the claim's row when ``claim`` is given."""
    prefix = "../" * str(docname).count("/")
    href = f"{prefix}_generated/{paper}/{experiment}.html"
    return href + (f"#{claim_anchor(claim)}" if claim is not None else "")


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    return html.escape(str(value))


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
        return '<p class="fl-empty">No claim of this part was computed in this build (its notebook did not run).</p>'
    rows = []
    for row in claims.itertuples(index=False):
        href = notebook_href(row.paper, row.experiment, docname, row.claim)
        folded = [("why this verdict", why_sentence(row._asdict())), ("rule", getattr(row, "rule", "")),
                  ("decision", getattr(row, "decision", "")),
                  ("premise", getattr(row, "premise", "")), ("power", getattr(row, "power", ""))]
        if notes:
            folded.append(("note", getattr(row, "note", "")))
        details = "".join(f"<p><b>{name}</b>: {_text(text)}</p>" for name, text in folded
                          if isinstance(text, str) and text.strip())
        rule_id = str(getattr(row, "rule_id", "") or "").strip()
        if rule_id and rule_id != "nan":
            prefix = "../" * docname.count("/")
            details += (f'<p><b>registered rule</b>: <a href="{prefix}preregistration.html#rule-{html.escape(rule_id)}">'
                        f"{html.escape(rule_id)}</a></p>")
        fold = f'<details class="fl-rule"><summary>rule and premise</summary>{details}</details>' if details else ""
        verdict = str(row.verdict)
        badge = verdict_badge(verdict) if verdict in VERDICTS else _text(verdict)
        kind = str(getattr(row, "kind", "") or "")
        label = ' <span class="fl-kind">study check</span>' if kind == "study check" else ""
        rows.append(
            f'<tr><td class="fl-claim"><a href="{html.escape(href)}">{_text(row.claim)}</a>{label}{fold}</td>'
            f"<td>{_text(row.paper_value)}</td><td>{_text(row.our_value)}</td>"
            f'<td class="fl-verdict">{badge}{agreement_html(row)}</td></tr>')
    head = ('<thead><tr><th class="fl-claim">claim (link: where it is computed)</th><th>paper</th><th>ours</th>'
            '<th class="fl-verdict">verdict</th></tr></thead>')
    return f'<table class="fl-glance">{head}<tbody>{"".join(rows)}</tbody></table>'


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
    return f'<br><span class="fl-agree">{_text(" · ".join(parts))}</span>' if parts else ""


def counts(claims: pd.DataFrame) -> dict[str, int]:
    """How many claims got each verdict (every verdict of :data:`faithlab.study.verdicts.VERDICTS`, zeros included)."""
    verdicts = claims["verdict"].astype(str)
    return {v: int((verdicts == v).sum()) for v in VERDICTS}


def _split_claim(claim: str) -> tuple[str, str]:
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


def _label(claim: str) -> str:
    """A claim's short label: the text before its first colon outside parentheses (``F1 (GradCAM)``), else the
    first words."""
    head = _split_claim(claim)[0]
    return head if len(head) <= 48 else " ".join(head.split()[:5]) + " …"


def _shorten(text: str, limit: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def _named(claims: pd.DataFrame, *, statements: bool = False) -> list[str]:
    """Each claim named for a reader: its label, and its statement where ``statements``, where the label alone is not
    unique among ``claims`` or where the claim has no label."""
    labels = [_label(c) for c in claims["claim"]]
    out = []
    for claim, label in zip(claims["claim"], labels):
        head, statement = _split_claim(claim)
        if statements or labels.count(label) > 1 or head == label and statement == str(claim).strip():
            out.append(f"{label} — {_shorten(statement, 70)}" if statement != str(claim).strip() else
                       _shorten(statement, 70))
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
        return ", ".join(f"{count} {verdict}" for verdict, count in counts(frame).items() if count)

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'s' if n != 1 else ''}"

    if claims.empty:
        sentence = f"{name}: {plural(len(checks), 'study check')} — {tally(checks)}"
        return sentence + "."
    sentence = f"{name}: {plural(len(claims), 'paper claim')} tested — {tally(claims)}"
    named = []
    for verdict in ("reproduced", "not reproduced"):
        # a failure is named with what it claimed, not by its label alone
        names = _named(claims, statements=verdict == "not reproduced")
        picked = [n for n, v in zip(names, claims["verdict"].astype(str)) if v == verdict]
        if picked:
            named.append(f"{verdict}: {'; '.join(dict.fromkeys(picked))}")
    text = sentence + "".join(f". {x[0].upper() + x[1:]}" for x in named)
    if not checks.empty:
        text = (text if text.endswith("…") else text + ".") + (
            f" Apart from these, {plural(len(checks), 'study check')} ({tally(checks)})")
    return text if text.endswith("…") else text + "."


WHY_VERDICTS = ("not reproduced", "partly reproduced", "not testable here")
"""The verdicts the scorecard's "what did not reproduce, and why" list names."""


def why_sentence(row: Mapping) -> str:
    """Why a claim got its verdict, in one plain sentence from its decision: what we measured (``our_value``) for a
    decided claim, the failed premise for "not testable here", the straddled interval for "inconclusive"."""
    verdict = str(row.get("verdict", ""))
    ours = _shorten(row.get("our_value", "") or "", 240)
    note = str(row.get("note", "") or "")
    if verdict == "not testable here":
        premise = note.split("not testable:", 1)[1] if "not testable:" in note else row.get("premise", "")
        premise = _shorten(premise, 240)
        return f"Not testable here: a premise about the stand-in failed — {premise}" + (
            "" if premise.endswith("…") else ".")
    if verdict == "inconclusive":
        return (f"Inconclusive: the data do not decide it at this scale (an interval straddles the claim's margin, "
                f"or the verdict moves with the replica or the bootstrap seed). We measured: {ours}"
                + ("" if ours.endswith("…") else "."))
    if verdict in ("reproduced", "partly reproduced", "not reproduced"):
        return f"{verdict[0].upper() + verdict[1:]}: we measured {ours}" + ("" if ours.endswith("…") else ".")
    return ours


def failures_html(scorecard: pd.DataFrame, docname: str, *, order: Iterable[str] = ()) -> str:
    """The scorecard's opening list: every claim whose verdict is in :data:`WHY_VERDICTS`, one plain sentence each
    (paper, claim, verdict badge and :func:`why_sentence`), linking to where it is computed; papers in ``order``."""
    from faithlab.study.book.chapters import PAPER_NAMES

    rows = scorecard[scorecard["verdict"].astype(str).isin(WHY_VERDICTS)]
    if rows.empty:
        return '<p class="fl-empty">Every claim computed in this build was reproduced or is inconclusive.</p>'
    rank = {p: i for i, p in enumerate(order)}
    rows = rows.assign(_r=rows["paper"].astype(str).map(lambda p: rank.get(p, len(rank)))).sort_values(
        ["_r", "verdict", "claim"], kind="stable")
    items = []
    for row in rows.to_dict("records"):
        label, statement = _split_claim(row["claim"])
        href = notebook_href(row["paper"], row["experiment"], docname, row["claim"])
        paper = PAPER_NAMES.get(str(row["paper"]), str(row["paper"]))
        kind = " (study check)" if str(row.get("kind", "")) == "study check" else ""
        if statement == str(row["claim"]).strip():  # no label: the statement is the link
            claim = f'<a href="{html.escape(href)}">“{html.escape(statement)}”</a>.'
        else:
            claim = f'<a href="{html.escape(href)}">{html.escape(label)}</a> — “{html.escape(statement)}”.'
        items.append(f'<li>{verdict_badge(str(row["verdict"]))} <b>{html.escape(paper)}{kind}</b>, {claim} '
                     f"{html.escape(why_sentence(row))}</li>")
    return f'<ul class="fl-failures">{"".join(items)}</ul>'


def legend_html() -> str:
    """Every verdict's badge with what it means (:data:`faithlab.study.verdicts.MEANINGS`)."""
    from faithlab.study.verdicts import MEANINGS

    items = "".join(f"<li>{verdict_badge(v)} {html.escape(MEANINGS[v])}</li>" for v in VERDICTS)
    return f'<ul class="fl-legend">{items}</ul>'


def executed_parameters(notebook: Path) -> dict | None:
    """The effective parameters papermill recorded in an executed notebook (None when it is missing/unreadable)."""
    try:
        meta = json.loads(Path(notebook).read_text())["metadata"]
        return dict(meta["papermill"]["parameters"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


def setup_rows(settings: Iterable, generated: Path) -> pd.DataFrame:
    """A chapter's set-up table: setting | paper | ours (:class:`faithlab.study.papers.setup.Setting` rows; ours
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
    what it measures, the options evaluate exposes with their defaults, what it needs, its public function), so a
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
    return table_html(pd.DataFrame(rows), css_class="fl-table fl-metrics")


def table_html(frame: pd.DataFrame, *, css_class: str = "fl-table") -> str:
    """A small text table as HTML (every cell escaped)."""
    head = "".join(f"<th>{_text(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{_text(v)}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


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


def html_table_frame(text: str) -> pd.DataFrame:
    """The cells of the first HTML table in ``text`` as a frame of strings (header rows as rows; ragged rows padded),
    for :func:`should_fold`; an empty frame when there is no table."""
    parser = _TableText()
    parser.feed(text)
    rows = [r for r in parser.rows if r]
    if not rows:
        return pd.DataFrame()
    width = max(len(r) for r in rows)
    return pd.DataFrame([r + [""] * (width - len(r)) for r in rows[1:]], columns=[f"{c}" for c in range(width)]
                        ).rename(columns=dict(zip(map(str, range(width)), rows[0] + [""] * (width - len(rows[0])))))


def fold_html_output(text: str, *, max_rows: int = 40) -> str | None:
    """A notebook's HTML output (a pandas table) folded into a dropdown when its table is too wide for the column or
    longer than ``max_rows`` rows: the new HTML, or None to leave it as it is (no table, it fits, or it is the book's
    own claim row, ``fl-glance``)."""
    if "<table" not in text or "fl-glance" in text:
        return None
    frame = html_table_frame(text)
    if frame.empty and not len(frame.columns):
        return None
    # pandas' tables on a notebook page are set looser than the book's own tables (bold headers, wider padding and
    # the index column, multi-level headers): the estimate keeps a third of the column in reserve
    reason = should_fold(frame, max_rows=max_rows, column_px=0.65 * COLUMN_PX)
    if reason is None:
        return None
    return (f'<details class="fl-fold"><summary>Table ({reason}): open</summary><div class="fl-fold-body">{text}'
            "</div></details>")


# ------------------------------------------------------------------------------------------- pre-registration
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
                            f"{html.escape(_label(row.claim))}</a>" for row in decided.itertuples())
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
            f'<tr><td class="fl-claim"><a href="{html.escape(href)}">{_text(row.claim)}</a>{kind}</td>'
            f"<td>{_text(row.rule)}</td><td>{_text(row.decision)}</td><td>{_text(row.premise)}</td>"
            f"<td><code>{_text(str(row.function).rpartition('.')[2])}</code><br>{_text(row[-1])}</td></tr>")
    head = ("<thead><tr><th>claim</th><th>rule: statistic, unit, direction, margin</th><th>decision (generated by "
            "the function that decides)</th><th>premise and null</th><th>claim function, rule last changed</th>"
            "</tr></thead>")
    return f'<table class="fl-glance fl-prereg">{head}<tbody>{"".join(rows)}</tbody></table>'


# --------------------------------------------------------------------------------------------- the guide


def answer_html(guide: pd.DataFrame, card: pd.DataFrame, guide_href: str | None,
                setups: pd.DataFrame | None = None) -> str:
    """The front page's answer to "which metric should I trust?": the synthesis's generated answer
    (:func:`faithlab.study.papers.synthesis.advice.answer_sentence`), the scale it rests on (``setups``: the synthesis's
    set-up table, its ``replicas`` trained models per situation and ``images`` per model) and a link to the guide."""
    from faithlab.study.papers.synthesis import answer_sentence

    if guide.empty or card.empty:
        return (f'<p class="fl-answer"><b>Which metric to trust?</b> The synthesis notebook did not run in this '
                f'build; the <a href="{html.escape(guide_href)}">guide</a> explains how the study answers it.</p>')
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
    link = ("" if guide_href is None else f' Per situation, with intervals and the evidence: '
            f'<a href="{html.escape(guide_href)}">which metric should I use?</a>')
    return (f'<p class="fl-answer"><b>Which metric to trust?</b> {html.escape(answer_sentence(guide, card))}'
            f"{html.escape(scale)}{link}</p>")


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
                else "does not recover" if r.get("recovers") == "fails" else "no")
        body.append(f"<tr><td>{html.escape(str(r['label']))}</td><td>{r['recovery']:.2f} [{r['low']:.2f}, "
                    f"{r['high']:.2f}]</td><td>{r['cost']:.0f}</td><td>{spread}</td><td>{held}</td></tr>")
    return ('<table class="fl-table"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(body) + "</tbody></table>")


def guide_html(guide: pd.DataFrame, setups: pd.DataFrame, docname: str) -> str:
    """The guide's recommendations: per situation a generated sentence
    (:func:`faithlab.study.papers.synthesis.advice.guide_sentences`) and, folded, every metric's recovery with its
    interval, cost and removal-value spread."""
    from faithlab.study.papers.synthesis import COST_CASE, guide_sentences

    if guide.empty:
        return '<p class="fl-empty">The synthesis notebook did not run in this build.</p>'
    n_images = dict(zip(setups["setup"], setups["images"])) if not setups.empty else {}
    sentences = guide_sentences(guide, n_images=n_images)
    prefix = "../" * str(docname).count("/")
    evidence = f"{prefix}_generated/synthesis/metrics_compared.html"
    parts = []
    for case, part in guide.groupby("situation", sort=False):
        cost_case = case == COST_CASE
        title = case[0].upper() + case[1:]
        parts.append(f"<h3>{html.escape(title)}</h3><p>{html.escape(sentences.get(case, ''))}</p>"
                     f'<details class="fl-fold"><summary>Every metric in this situation ({len(part)}; evidence: '
                     f'<a href="{html.escape(evidence)}">the synthesis notebook</a>)</summary>'
                     f'<div class="fl-fold-body">{_rows_table(part, cost_case=cost_case)}</div></details>')
    return "".join(parts)


def reconcile_html(card: pd.DataFrame, scorecard: pd.DataFrame, docname: str) -> str:
    """Where the synthesis and a paper's chapter may disagree: per chapter that proposes a metric
    (:data:`faithlab.study.papers.synthesis.advice.CHAPTER_METRICS`), the chapter's verdict counts beside the metric's
    report-card rank, the criteria that pull the rank down most, and a generated sentence on whether they agree."""
    from faithlab.study.book.chapters import PAPER_NAMES
    from faithlab.study.papers.synthesis import CHAPTER_METRICS, CRITERIA

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
        decided = ", ".join(f"{count} {verdict}" for verdict, count in tally.items() if count) or "no claim computed"
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
        reproduced = tally.get("reproduced", 0) + tally.get("partly reproduced", 0)
        if low and reproduced:
            verdict = ("They can disagree without contradiction: the chapter tests the paper's own claims against its "
                       "chosen competitors on its protocol, while the report card ranks every metric on five criteria "
                       "weighed equally, including cost and noise resilience that the paper does not claim.")
        elif low:
            verdict = ("Both point the same way: the chapter reproduces none of the paper's claims outright and the "
                       "metric ranks in the lower half here.")
        else:
            verdict = "The metric ranks in the upper half of the report card."
        items.append(f'<li><a href="{prefix}{paper}.html"><b>{html.escape(name)}</b></a>: its paper claims here — '
                     f"{html.escape(decided)}. In the synthesis, {html.escape(rank_text)}. {html.escape(verdict)}</li>")
    return f'<ul class="fl-reconcile">{"".join(items)}</ul>'


def build_html(url: str, *, seconds: float, notebooks: int, profiles: list[str]) -> str:
    """The intro's line on this build: the published address (none while ``url`` is empty or still the template's
    placeholder ``OWNER``/``REPOSITORY``: "this build is local, not published"), and the notebooks' total run time
    and profile(s) read from the executed notebooks (kernel time summed over notebooks; parallel runs take less
    wall time)."""
    from faithlab.study.book.notebook_page import duration

    local = not url or "OWNER" in url or "REPOSITORY" in url
    where = ("This build is local (not published)." if local else
             f'The published book is at <a href="{html.escape(url)}">{html.escape(url)}</a>.')
    if notebooks:
        which = ", ".join(profiles)
        ran = (f" Its {notebooks} notebooks ran for {duration(seconds)} in total ({which} profile{'s' if len(profiles) > 1 else ''}"
               f"; summed over notebooks, so a parallel build takes less wall time).")
    else:
        ran = " No notebook of this build recorded its run time."
    return f'<p class="fl-build">{where}{html.escape(ran)}</p>'


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
    text = (f"<b>How far this transfers.</b> {len(differ)} of the {len(setup)} settings below differ from the "
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
    return f'<p class="fl-transfer">{html.escape(text).replace("&lt;b&gt;", "<b>").replace("&lt;/b&gt;", "</b>")}</p>'

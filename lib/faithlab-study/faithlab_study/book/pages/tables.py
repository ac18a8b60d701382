"""Tables as the book's pages show them: fixed decimals per column, ``mean ± sd`` and ``[low, high]`` columns, words
for raw column names, the narrowest width a table can take and whether the book folds it, and a notebook's own table
output folded when it would not fit the column.

- :func:`format_table`: fixed decimals per column (three significant digits of the column's largest value, or
  scientific notation for a column of tiny values), ``X`` with ``X std`` as one ``mean ± sd`` column (a standard
  deviation that is zero everywhere, one seed, is dropped), ``X low``/``X high`` as one ``[low, high]`` column.
- :func:`min_width_px`: an estimate of the narrowest width a table can be laid out in (its unbreakable words),
  which decides whether the book folds it.
- :func:`fold_html_output`: a notebook's table output folded when it would not fit the column;
  :func:`relabel_html`, :func:`column_label`: words for raw column names, yes/no for booleans.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from faithlab_study.book import html
from faithlab_study.book.html import DASH

COLUMN_PX = 772  # the content column of the book's theme at a 1400 px window
CHAR_PX = 7.4  # mean width of a character of the tables' font (0.85 em of 16 px)
CELL_PAD_PX = 17  # horizontal padding and border of a cell
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


def relabel_html(text: str) -> str:
    """A notebook's HTML table output with words for its headers (:func:`column_label`) and yes/no for its
    True/False cells."""
    return html.relabel_table(text, column_label)


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



def table_html(frame: pd.DataFrame, *, css_class: str = "fl-table") -> str:
    """A small text table as HTML (every cell escaped, :func:`faithlab_study.book.html.text_table`)."""
    return html.text_table(frame.columns, frame.itertuples(index=False), css_class=css_class)


def html_table_frame(text: str) -> pd.DataFrame:
    """The cells of the first HTML table in ``text`` as a frame of strings (header rows as rows; ragged rows padded),
    for :func:`should_fold`; an empty frame when there is no table."""
    rows = [r for r in html.table_cells(text) if r]
    if not rows:
        return pd.DataFrame()
    width = max(len(r) for r in rows)
    return pd.DataFrame([r + [""] * (width - len(r)) for r in rows[1:]], columns=[f"{c}" for c in range(width)]
                        ).rename(columns=dict(zip(map(str, range(width)), rows[0] + [""] * (width - len(rows[0])))))


def fold_html_output(text: str, *, max_rows: int = 40) -> str | None:
    """A notebook's HTML output (a pandas table) folded into a dropdown when its table is too wide for the column or
    longer than ``max_rows`` rows: the new HTML, or None to leave it as it is (no table, it fits, or it is the book's
    own claim row, ``fl-glance``)."""
    if not html.has_table(text) or "fl-glance" in text:
        return None
    frame = html_table_frame(text)
    if frame.empty and not len(frame.columns):
        return None
    # pandas' tables on a notebook page are set looser than the book's own tables (bold headers, wider padding and
    # the index column, multi-level headers): the estimate keeps a third of the column in reserve
    reason = should_fold(frame, max_rows=max_rows, column_px=0.65 * COLUMN_PX)
    if reason is None:
        return None
    return html.fold(text, f"Table ({reason}): open")

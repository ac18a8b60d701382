"""What each metric measures and where the book tests it: one line per metric (:func:`meaning`), the glossary table
(:func:`glossary`), the note on comprehensiveness' convention (:func:`comprehensiveness_note`) and the links into the
book (:func:`book_link`, :data:`BOOK_URL`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

__all__ = ["meaning", "glossary", "comprehensiveness_note", "book_link", "BOOK_URL", "BOOK_URL_ENV",
           "chapter_names"]

BOOK_URL: str | None = None
"""The address of the published book, each page at ``<BOOK_URL><page>.html``. None: the book has no fixed address
(``_config.yml``'s ``book_url`` is a placeholder that the publishing workflow rewrites for the repository it runs in),
so the report links into the book built in this checkout, ``<project root>/_build/html/<page>.html`` (``make html``
builds it); the environment variable ``FAITHLAB_BOOK_URL`` overrides both."""
BOOK_URL_ENV = "FAITHLAB_BOOK_URL"
GUIDE_PAGE, GLOSSARY_PAGE = "which_metric", "glossary"


def chapter_names() -> dict[str, str]:
    """Display name of each chapter slug of the book: the papers' (:data:`faithlab.metrics.registry.PAPERS`) and the
    book's two other chapters."""
    from faithlab.metrics.registry import PAPERS

    return {**PAPERS, "synthesis": "Synthesis", "basics": "Basics"}


def meaning(metric: str) -> str:
    """What ``metric`` measures, in one line: its declaration's ``doc``, else the first sentence of its function's
    docstring (cut at 90 characters), else a pointer to ``fl.evaluation.describe()``."""
    from faithlab.evaluation import METRICS

    info = METRICS.get(metric)
    if info is not None and info.doc:
        return info.doc
    doc = (getattr(getattr(info, "function", None), "__doc__", None) or "").strip()
    first = " ".join(doc.split(". ")[0].split())
    if not first:
        return "no description: see fl.evaluation.describe()"
    return first if len(first) <= 90 else first[:89] + "…"


def book_base() -> str:
    """The base address of the book's pages (see :data:`BOOK_URL`), ending in "/"."""
    base = os.environ.get(BOOK_URL_ENV) or BOOK_URL
    if base:
        return base if base.endswith("/") else base + "/"
    from faithlab import paths

    here = Path(__file__).resolve().parents[3]  # lib/faithlab/report/meanings.py → the checkout (editable install)
    root = here if (here / "_config.yml").is_file() else paths.project_root()
    return (root / "_build" / "html").as_uri() + "/"


def book_link(page: str) -> str:
    """The address of the book's page ``page`` (a chapter slug such as ``"saco"``, or ``"glossary"``)."""
    return f"{book_base()}{page}.html"


def comprehensiveness_note() -> str:
    """One sentence: which convention of comprehensiveness this library computes, and why (directions read from
    the registry)."""
    from faithlab.evaluation import METRICS

    def direction(m: str) -> str:
        return "higher is better" if METRICS[m].higher_is_better else "lower is better"

    return (f"Comprehensiveness follows SaCo's definition (Wu et al. 2024, §4.3), whose comparison of cumulative "
            f"metrics this library reproduces, not DeYoung et al.'s (2020): the least salient pixels are removed "
            f"first and a small drop means those pixels were dispensable ({direction('comprehensiveness')}); "
            f"DeYoung's comprehensiveness, the drop when the most salient are removed first, is what AOPC measures "
            f"here ({direction('aopc')}).")


def glossary(metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """What each metric measures → one row per metric (``metrics``, default every registered one, in order):
    ``metric`` (the name ``--metrics`` takes), ``label``, ``meaning`` (:func:`meaning`), ``direction`` (from the
    declaration), ``chapter`` (the book's chapter that tests it, :func:`chapter_names`) and ``link``
    (:func:`book_link` of the page that tests it, a paper's chapter or the synthesis page of the rival metrics;
    empty for a paper the book has no page of)."""
    from faithlab.evaluation import METRICS

    PAPER_NAMES = chapter_names()  # noqa: N806

    chosen = list(METRICS) if metrics is None else list(dict.fromkeys(metrics))
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}")
    rows = []
    for m in chosen:
        info = METRICS[m]
        rows.append({"metric": m, "label": info.label, "meaning": meaning(m),
                     "direction": "higher is better" if info.higher_is_better else "lower is better",
                     "chapter": PAPER_NAMES.get(info.paper, info.paper),
                     "link": book_link(info.paper) if info.paper in PAPER_NAMES else ""})
    return pd.DataFrame(rows, columns=["metric", "label", "meaning", "direction", "chapter", "link"])

"""The book's chapters: their slugs in the book's order (:data:`CHAPTERS`, the papers of
:data:`faithlab.metrics.registry.PAPERS`), their display names (:data:`PAPER_NAMES`, with the book's two other
chapters) and slugs put in that order (:func:`paper_order`)."""

from __future__ import annotations

from collections.abc import Iterable

from faithlab.metrics.registry import PAPERS

__all__ = ["CHAPTERS", "PAPER_NAMES", "paper_order"]

CHAPTERS = tuple(PAPERS)
"""Chapter slugs of the five papers, in the book's order (:data:`faithlab.metrics.registry.PAPERS`)."""
PAPER_NAMES = {**PAPERS, "synthesis": "Synthesis", "basics": "Basics"}
"""Display name of each chapter slug: the papers' (:data:`faithlab.metrics.registry.PAPERS`) and the book's two other
chapters."""


def paper_order(papers: Iterable[str]) -> list[str]:
    """Distinct paper slugs in the book's chapter order (:data:`CHAPTERS`), then any other slug alphabetically."""
    if isinstance(papers, str) or not isinstance(papers, Iterable):
        raise TypeError(f"papers must be an iterable of slugs, got {papers!r:.60}")
    unique = set(map(str, papers))
    return [p for p in CHAPTERS if p in unique] + sorted(unique - set(CHAPTERS))


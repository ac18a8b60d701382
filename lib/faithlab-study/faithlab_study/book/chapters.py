"""The book's chapters: the papers' slugs in the book's order (:data:`CHAPTERS`), their display names
(:data:`PAPER_NAMES`, with the book's two other chapters) and slugs put in that order (:func:`paper_order`). The
study owns this order; the library's :data:`faithlab.metrics.registry.PAPERS` names the papers whose metrics it
implements (a test of the study map checks that they are the chapters, in this order)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CHAPTERS", "PAPER_NAMES", "paper_order"]

PAPER_NAMES = {"ffidelity": "F-Fidelity", "fewclass": "Few-class Fidelity", "saco": "SaCo", "reco_mege": "ReCo / MeGe",
               "trace": "TRACE", "synthesis": "Synthesis", "basics": "Basics"}
"""Display name of each chapter slug: the five papers', in the book's order, then the book's two other chapters."""
CHAPTERS = ("ffidelity", "fewclass", "saco", "reco_mege", "trace")
"""Chapter slugs of the five papers, in the book's order."""


def paper_order(papers: Iterable[str]) -> list[str]:
    """Distinct paper slugs in the book's chapter order (:data:`CHAPTERS`), then any other slug alphabetically."""
    if isinstance(papers, str) or not isinstance(papers, Iterable):
        raise TypeError(f"papers must be an iterable of slugs, got {papers!r:.60}")
    unique = set(map(str, papers))
    return [p for p in CHAPTERS if p in unique] + sorted(unique - set(CHAPTERS))


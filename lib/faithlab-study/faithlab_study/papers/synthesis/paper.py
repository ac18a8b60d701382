"""The published finding the synthesis chapter decides (Miró-Nicolau et al. 2024): :data:`PAPER_IDEAL_GAP`, as
the claims table shows it, and :data:`PAPER_THRESHOLD`, the paper's own threshold, which is claim MN1's margin in
its registered rule (a test checks that the two agree).
:func:`~faithlab_study.papers.synthesis.claims.ideal_gap.claim_ideal_gap` quotes them; nothing else types them."""

from __future__ import annotations

__all__ = ["PAPER_IDEAL_GAP", "PAPER_THRESHOLD"]

PAPER_THRESHOLD = 0.30
"""Miró-Nicolau et al. (2024): no fidelity metric scored the perfect explanation of their decision tree within 30 %
of the metric's ideal (|score − ideal| as a share of the metric's range)."""

# Miró-Nicolau et al. (2024): the fidelity metrics against the perfect explanation of a decision tree, on their two
# synthetic 128 × 128 image sets; the best metric is 30 % off its ideal.
PAPER_IDEAL_GAP = (f"no fidelity metric scores the perfect explanation of a decision tree within "
                   f"{PAPER_THRESHOLD:.0%} of its ideal; the best is {PAPER_THRESHOLD:.0%} off (two synthetic "
                   "128 × 128 image sets)").replace("%", " %")
"""Miró-Nicolau et al. (2024)'s finding, as the claims table shows it."""

"""What the rules of this chapter share, written once here: the first entry of each rule's change log
(:data:`REGISTERED`, carried by :data:`CHAPTER`: a rule unchanged since gives only its fingerprint), the fields most
rules share (:data:`CHAPTER`, with the random deletion test's family :data:`RANDOM_TEST`) under each registration's
own fields, which win (:class:`faithlab_study.verdicts.Chapter`), the chapter's one convention for a margin
(:func:`convention`) and its recurring premises."""

from faithlab_study import verdicts

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions into this file. T1: the 'SA beats Greedy' "
                      "half (true by construction) becomes the study check T1.greedy; 'almost reaches the bound' "
                      "gets the margin 0.079 (was 0.05 by convention), both every objective (was 2/3 of four "
                      "checks). T2: every reference × method cell at the margin 0.2 from Table 1 (was 2/3 of "
                      "references, margin 0). T2b: reformulated so it can fail — a non-negligible gap, margin 0.079 "
                      "from Table 1, every cell (was 2/3 of cells, margin 0). T3: two named parts, margin 0.05 by "
                      "convention (was 2/3 of models × checks, margin 0). T4: margin 0.05 by convention (was 0). T5: "
                      "every method under two denominators, the one that favours TRACE checked by one that favours "
                      "none, margins from Table 1 (was 2/3 of methods, margin 0). T6: a study check against a float "
                      "tolerance. Premises: the mechanism (deletion lowers the prediction; the search beats random "
                      "orders) decided by an interval (were nulls of random signs and point estimates). Intervals: t "
                      "on replica means (were two-stage bootstraps).")}
"""The chapter's registration (issue 69), the first entry of every rule's change log (:data:`CHAPTER` carries it)."""


CHAPTER = verdicts.Chapter.of_paper("trace", registration=REGISTERED, interval="t on replica means", unit="test image")
"""The fields most of the chapter's rules share (issue 90): a paper claim judged above its margin in every cell, by
the t interval on the replica means of 3 trained replicas × 30 test images; a registration holds only what differs."""


def convention(figure: str) -> str:
    """The margin source of a claim the paper makes from ``figure`` without numbers: the chapter's one convention."""
    return (f"convention: {figure} gives no numbers; 0.05 of the probability's range, the chapter's one convention "
            "for a difference of a curve's mean probability")


DELETION_LOWERS = "(a) deletion lowers the prediction: f(x) minus the mean of a random-order curve above 0.1"
"""Premise (a) of the searched claims (T1, T1.greedy, T4), on random-order curves."""
BOUND_PREMISES = [DELETION_LOWERS,
                  "(b) the bound CS lies beyond random orders by more than 0.1 per curve point, for -Le and -Mo"]
"""The premises of the search bound T1 and its study check T1.greedy."""
ZERO_DELETION_LOWERS = ("(a) deletion lowers the prediction: f(x) minus the mean of the zero-reference random-order "
                        "curve on the 7 × 7 grid above 0.1")
"""Premise (a) of the random deletion test (T3 and its parts), under the zero reference."""
RANDOM_TEST = CHAPTER.family(
    margin=0.05, margin_source=convention("Fig. 4"), over="models",
    null="random deletion orders (no order carries information, so a difference between patch sizes is the OOD effect)",
    premises=[ZERO_DELETION_LOWERS])
"""The random deletion test's parts (T3a, T3b, Fig. 4): one difference of curve areas per model."""

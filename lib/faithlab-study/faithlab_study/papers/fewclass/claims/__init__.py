"""Few-class Fidelity's claims C1–C5 as claim functions, and the chapter's mechanism premise, one module per concept
(every public name re-exported here: ``faithlab_study.papers.fewclass.claims.claim_random_lowest``):

- :mod:`~faithlab_study.papers.fewclass.claims.premises`: the mechanism premise and the helpers the claims share;
- :mod:`~faithlab_study.papers.fewclass.claims.fidelity`: C1, C3 and C4, on the Fid of the maps;
- :mod:`~faithlab_study.papers.fewclass.claims.flips`: C2, C5a and C5b, on the perturbation and the class flips.

Every claim is decided by its pre-registered rule (registered by :func:`faithlab_study.verdicts.registered` directly
above its claim function, read with :func:`faithlab_study.verdicts.rule`): per cell (a method against Random, a model × method × alteration, a task × model, a
model × reference) an interval — a t interval on the replica means of the per-image values
(:func:`faithlab_study.verdicts.effect`), on one statistic per replica (:func:`faithlab_study.verdicts.replica_judgement`), or on
the replica shares joined with the Wilson interval of a binary share (:func:`faithlab_study.verdicts.share_interval`) —
judged at one-sided 5 % (its 90 % interval) against two boundaries in the paper's direction, the value of no effect
and the rule's margin: holds (beyond the margin), weaker (beyond the value of no effect, not shown beyond the
margin), absent (inside the band of no meaningful effect, or reversed) or undecided (reaches both the value of no
effect and a margin). The cells then combine as the rule says
(:func:`faithlab_study.verdicts.decide`: every cell, a share fixed in advance; :func:`faithlab_study.verdicts.decide_parts` for
C5a's named parts). A premise about the stand-in is decided before the outcome with the same kind of interval: a
failed premise makes the claim "not testable here", an undecided one "inconclusive". Which cells a claim counts is
fixed by the design (what was computed), never by the outcome the claim then judges. No interval resamples, so no
claim function takes a seed.

The units are XAI images of independently trained replicas (a ``replica`` column): each replica scores its own,
disjoint block of the test split (:func:`~faithlab_study.papers.fewclass.setup.setup` with ``blocks``).

A new claim of the chapter goes into the module of its concept (README's "Fork: add a claim" appends one to
:mod:`~faithlab_study.papers.fewclass.claims.fidelity`): a claim function with its rule registered above it."""

# The margins come from the paper's Tables 1–2 as typed in faithlab_study.papers.fewclass.paper (a test recomputes them
# from those constants), from its own thresholds (Δ of eq. 3), or, where the paper gives no number, from a stated
# convention. The chapter's mechanism premise (written out in C1's premise list, referred to by C3's and C4's) is
# decided on replicas of the fidelity notebook's models, for every task × model a claim reads.

from __future__ import annotations

from faithlab_study.papers.fewclass.claims.fidelity import (alteration_gains, claim_alteration_gains,
                                                            claim_rank_agreement, claim_random_lowest)
from faithlab_study.papers.fewclass.claims.flips import claim_class_flip, claim_fid_bounds, claim_uncertain_selection
from faithlab_study.papers.fewclass.claims.premises import (RANDOM_CANDIDATE_BELOW, ROOM_BELOW, SELECTED, SWITCH_AT,
                                                            UNCERTAIN_AT, UNIT, mechanism, mechanism_table)

__all__ = ["SWITCH_AT", "UNCERTAIN_AT", "ROOM_BELOW", "RANDOM_CANDIDATE_BELOW", "SELECTED", "UNIT", "mechanism",
           "mechanism_table", "claim_random_lowest", "alteration_gains", "claim_alteration_gains",
           "claim_rank_agreement", "claim_uncertain_selection", "claim_class_flip", "claim_fid_bounds"]

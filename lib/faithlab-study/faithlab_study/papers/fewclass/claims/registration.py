"""What the rules of this chapter share, written once here: the first entry of each rule's change log
(:data:`REGISTERED`, carried by :data:`CHAPTER`: a rule unchanged since gives only its fingerprint) and the fields most
rules share (:data:`CHAPTER`, with the binary family :data:`BINARY`), under each registration's own fields, which win
(:class:`faithlab_study.verdicts.Chapter`)."""

from faithlab_study import verdicts

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions' code into this file, fixed from the paper "
                      "before the new outcomes. C1: margin 0 → 0.0075 (half the smallest Random gap of Tables 1–2), "
                      "decided over every method (was two thirds of them, from_settings). C2: its share now a share "
                      "interval at the replica level (was a two-stage bootstrap), margin 0.9 kept, every task × "
                      "model. C3: margin 0 → 0.0115 (half the median SG gain of Table 1), 'most' = more than half "
                      "(share 0.51; was the house's two thirds). C4: one statistic, the replicas' mean ρ against 0.5 "
                      "with a t interval on the replica statistics (was a two-stage bootstrap with 'partly' above "
                      "0). C5a: three named parts registered as rules of their own, margins from Δ of eq. 3 and a "
                      "stated convention for the switch share (was 'holds when all three checks do', bootstrap). "
                      "C5b: stays a study check, now a Wilson interval of the values meeting their bound (was an "
                      "exact share). Every claim rests on 3 trained replicas of ≥ 30 XAI images per cell, each "
                      "replica its own disjoint block of the test split; the mechanism premise is decided with a "
                      "share interval at the replica level (was a Wilson interval of one model).")}
"""The chapter's registration (issue 69), the first entry of every rule's change log (:data:`CHAPTER` carries it)."""


CHAPTER = verdicts.Chapter.of_paper("fewclass", registration=REGISTERED, interval="t on replica means",
                                    unit="XAI image (each trained replica its own, disjoint block of the test split)")
"""The fields most of the chapter's rules share (issue 90): a paper claim judged above its margin in every cell, by
the t interval on the replica means of 3 trained replicas × 30 XAI images; a registration holds only what differs."""
BINARY = CHAPTER.family(premises=["a binary task was run"], unit="XAI image of a binary model")
"""C5a's parts (C5a.confident, C5a.switch, C5a.uncertain): the chapter's fields, on the binary models' XAI images."""
MECHANISM = "the paper's mechanism on the stand-in (as C1's premise), for every model of the task"
"""The premise C3 and C4 share: the chapter's mechanism premise, written out in C1's premises."""

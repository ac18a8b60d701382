"""The registration entry shared by the rules of this chapter: the first line of each rule's change log
(:func:`faithlab.study.verdicts.registered`), written once here and named by every registration."""

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
"""The chapter's registration (issue 69): the same first entry in the log of every rule it registered."""

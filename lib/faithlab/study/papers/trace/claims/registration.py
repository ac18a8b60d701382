"""The registration entry shared by the rules of this chapter: the first line of each rule's change log
(:func:`faithlab.study.verdicts.registered`), written once here and named by every registration."""

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
"""The chapter's registration (issue 69): the same first entry in the log of every rule it registered."""

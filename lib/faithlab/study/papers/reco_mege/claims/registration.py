"""The registration entry shared by the rules of this chapter: the first line of each rule's change log
(:func:`faithlab.study.verdicts.registered`), written once here and named by every registration."""

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions' code into this file. Before: two-stage "
                      "percentile bootstraps with margin 0 and the house share rule (R2, R3 reproduced from 2/3 of "
                      "the cells, partly from 1/3; R1 and R4 share 1; Table 3 partly from one of two parts); R4 "
                      "decided on point estimates (ρ ≥ 0.9 over every map, no units); R5 exact values against 1e-6. "
                      "Now: one statistic per trained replica with a t interval (μF: t on replica means), margins of "
                      "half the paper's smallest effect (R1 0.074, R2.MeGe 0.02, R2.ReCo 0.0345, R3.ReCo 0.206, "
                      "R3.MeGe 0.013, RM-T3.muF 0.301, RM-T3.Savg ln-ratio 2.2387), 'every' where the paper says "
                      "every or best/highest/lowest, 'partly' only for the named parts of R2, R3 and Table 3 (share "
                      "1/2); R2 on the two degradations of Fig. 4 at their strongest level; R4 over independent "
                      "units (paths, noise series) as a study check; R5 a study check")}
"""The chapter's registration (issue 69): the same first entry in the log of every rule it registered."""

"""The registration entry shared by the rules of this chapter: the first line of each rule's change log
(:func:`faithlab.study.verdicts.registered`), written once here and named by every registration."""

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions into this file, fixed from the paper's "
                      "numbers before the new outcomes. Changes from the code's old rules: every interval is a t "
                      "interval on the trained replicas (was a two-stage percentile bootstrap over replicas and "
                      "seeds × levels); the unit is a test input of a replica, or the replica itself for a statistic "
                      "computed once per replica (was degradation seeds × sparsity levels of the same curves, or a "
                      "fixed grid of (r, β) cases); margins from the paper (were 0 everywhere but Table 8's −5 "
                      "points and text's ±0.1): F1 0 → 0.0367, F7 0 → 0.0167, series 0 → 0.4917, F2 0.8 → 0.9, F3 0 "
                      "→ 0.1192 per step, F6 0.8 → 0.5067, F8 0 → half the paper's gaps per table, F10 0.7 → 0.5, F4 "
                      "80 % → 50 % (share_interval, not a bootstrap), Table 8 clean −5 → −3.34 points and removed 0 "
                      "→ 2.98, text robust 0 → 6.8 points, D.3 0 → 2.5 points, text equivalence ±0.1 → 0.105 "
                      "one-sided; decisions as the paper words them: F1/F7 beat every competitor (F1 had the "
                      "stricter rule, F7 the house share), series against Fidelity and ROAR (the paper's own words), "
                      "every β step, every setting, every model; partly only for F3, F8, Table 8 restore and D.3 "
                      "agreement (named parts; F2, F10, F4 are one statistic); the chapter's mechanism FF.OOD "
                      "(removal out of distribution, and the fine-tuning absorbing it) is a study check that every "
                      "claim on its data set takes as premise (was coloured minus grey canvases, margin 0.05)")}
"""The chapter's registration (issue 69): the same first entry in the log of every rule it registered."""

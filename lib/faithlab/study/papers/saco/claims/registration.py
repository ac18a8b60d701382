"""The registration entry shared by the rules of this chapter: the first line of each rule's change log
(:func:`faithlab.study.verdicts.registered`), written once here and named by every registration."""

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions' code into this file, decided by t "
                      "intervals on the trained models (3 settings × 3 replicas) instead of the two-stage bootstrap. "
                      "Margins from the paper: every SaCo difference 0 → 0.0309 (half Table 1's smallest gain, "
                      "0.0618), S1's 'near 0' ±0.05 (ours) → ±0.0309; S2's 0.35 (ours) → 0.3482 (midpoint of Fig. "
                      "2's 0.22 and 0.4764) and its 'partly' at 0.5 removed (one statistic per metric, every "
                      "metric); S6 0 → 0.1282 (half of 0.4764 − 0.22). 'Most' = more than half of the paper's ten "
                      "methods (S1.above, S4; was two thirds of settings × cells); S1, S3, S5, S7 become claims of "
                      "named parts (partly only for them); S7 'best'/'worst' = every comparison (was two thirds); S4 "
                      "drops the Random control as a second condition (shown only); S5 pools the three cached "
                      "replicas, its share by t on replica shares ∪ Wilson (was a bootstrap); every claim adds the "
                      "mechanism premise (removal matters group by group, above 0.05).")}
"""The chapter's registration (issue 69): the same first entry in the log of every rule it registered."""

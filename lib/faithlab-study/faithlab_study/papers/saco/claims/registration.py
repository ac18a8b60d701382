"""What the rules of this chapter share, written once here: the first entry of each rule's change log
(:data:`REGISTERED`, carried by :data:`CHAPTER` and its sub-families: a rule unchanged since gives only its
fingerprint) and the fields most rules share (:data:`CHAPTER`, with its sub-families :data:`PER_MODEL`,
:data:`CORRELATIONS` and :data:`PARTS`), under each registration's own fields, which win
(:class:`faithlab_study.verdicts.Chapter`)."""

from faithlab_study import verdicts

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
"""The chapter's registration (issue 69), the first entry of every rule's change log (:data:`CHAPTER` carries it)."""

PREMISES = ["every ViT learned the digits (accuracy ≥ 0.8 within 0.05)",
            "removal matters group by group (Transformer Attribution's most minus least salient group drop above "
            "0.05)"]
"""The two premises every claim of the chapter checks before its outcome (the package's docstring)."""
HALF_GAIN = ("half the smallest SaCo gain the paper reads as an improvement (Table 1: Rollout − Raw Attention "
             "= 0.2453 − 0.1835 = 0.0618)")
"""The source of the chapter's usual margin, 0.0309 (:data:`faithlab_study.papers.saco.paper.MARGINS`)."""

CHAPTER = verdicts.Chapter(
    registration=REGISTERED, paper="saco", kind="paper", direction="above", margin=0.0309, margin_source=HALF_GAIN,
    decision="every", premises=PREMISES, replicas=3, units=30, interval="t on replica means", unit="test digit")
"""The defaults of the chapter's rules: a SaCo paper claim on the trained ViTs (3 replicas, 30 test digits), a
per-image difference averaged per trained model and judged by its t interval above the usual margin (half Table 1's
smallest gain), every cell, under the two premises."""
PER_MODEL = CHAPTER.family(interval="t on replica statistics", unit="trained model (its test digits)")
"""A statistic that is not a mean, computed once per trained model (S2, S6; S1.cumulative as registered)."""
CORRELATIONS = PER_MODEL.family(
    premises=[*PREMISES, "the existing metrics agree with each other above chance: the t interval of their mean "
                         "mutual ρ over the trained models lies above 0.1"],
    null="the same ρ with one metric's images shuffled (shown beside each pair)")
"""Fig. 2's rank correlations (S2, S6): per-model statistics under a third premise, the existing metrics' agreement
(:data:`faithlab_study.papers.saco.claims.correlation.AGREEMENT_MIN`)."""
PARTS = verdicts.Chapter(registration=REGISTERED, **{
    **{k: v for k, v in CHAPTER.defaults.items() if k != "unit"},
    "margin": 0.0, "margin_source": "the parts' own margins", "decision": "parts", "share": 0.5,
    "null": "the parts' own nulls"})
"""A claim of two named parts, each decided by its own rule (S1, S3, S5, S7): the parts' margins and nulls, partly
when one part is reproduced (share 0.5); no unit of its own."""

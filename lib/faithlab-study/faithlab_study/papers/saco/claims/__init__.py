"""SaCo's claims as claim functions, one module per concept (every public name re-exported here:
``faithlab_study.papers.saco.claims.claim_saturation``; :mod:`~faithlab_study.papers.saco.claims.premises`,
:mod:`~faithlab_study.papers.saco.claims.separation`, :mod:`~faithlab_study.papers.saco.claims.ablation`,
:mod:`~faithlab_study.papers.saco.claims.correlation`) (S1 Random separation, S2/S6 correlations, S3 attention ablation, S4 number of
groups, S5 saturation, S7 removal order), each decided by its pre-registered rules
(each registered directly above its claim function by the chapter's
:class:`faithlab_study.verdicts.Chapter`, whose shared fields are written once in
:mod:`~faithlab_study.papers.saco.claims.registration`): the trained ViTs are the units of replication, each claim's
interval a t interval on the per-model means or statistics, judged against a margin from the paper's numbers
(:data:`faithlab_study.papers.saco.paper.MARGINS`), after the two premises every claim checks before its outcome —
the ViTs learned the digits (:data:`MIN_ACCURACY`, :data:`ACCURACY_TOLERANCE`), and removal matters group by group
(the chapter's mechanism: :func:`removal_premise`, :data:`GROUP_DROP_MIN`). A per-image difference is averaged per
trained model (a setting × replica) and judged by the t interval on those model means against the rule's margin
(:func:`faithlab_study.verdicts.effect`); a statistic that is not a mean is computed once per trained model
(:func:`faithlab_study.verdicts.replica_judgement`). The cells combine as the rule says
(:func:`faithlab_study.verdicts.decide`), a claim of named parts by :func:`faithlab_study.verdicts.decide_parts`.

- the methods compared image by image, against Random Attribution or between methods, and the claims they decide
  (S1, S7, S3, S4);
- Fig. 2 as claims, on the rank correlations between the metrics per trained model and method
  (:func:`~faithlab_study.papers.saco.experiments.rank_correlations`): S2 (SaCo correlates weakly with the cumulative
  metrics) and S6 (the existing metrics agree more among themselves). A correlation is a statistic, not a mean of
  units: it is computed once per trained model (averaged over the methods, as the paper averages over its methods)
  and judged by the t interval on those per-model values (:func:`faithlab_study.verdicts.replica_judgement`);
- Fig. 3 as a claim, on the case study's quantities per image and method
  (:func:`~faithlab_study.papers.saco.experiments.case_study_frame`): S5 (the drops saturate for every method while
  SaCo separates the good explanation from the poor ones), decided over many images of several trained replicas.

A new claim of the chapter goes into the module of its concept (a claim function with its rule registered above
it)."""

# Design shared by every rule: the trained ViTs are the units of replication — three settings (image size, width,
# depth: the stand-ins of the paper's ViT-B, ViT-L and DeiT-B) × three independently trained replicas, each trained
# model one replica of "a small ViT trained on the digits" (the paper's claims are about the mean over its three
# ViTs); a per-image statistic is averaged per trained model and the interval is a t interval on those model means
# (df = models − 1); a statistic that is not a mean (a correlation, a minimum over methods) is computed once per
# trained model and the interval is a t interval on those values. The margins come from faithlab_study.papers.saco.paper
# (MARGINS), where a test recomputes them from the paper's typed numbers.
# Premises of every claim (decided before the outcome; a failing one makes the claim "not testable here"):
# - every trained ViT learned the digits: test accuracy at least 0.8 within a tolerance of 0.05;
# - the mechanism, removal matters group by group: per test image, p(ŷ|x) drops more when the most salient of the
#   K = 10 groups of Transformer Attribution's map is removed alone than when the least salient one is; the t interval
#   of that difference on the model means lies above 0.05 (5 points of probability, a convention: the paper reports
#   no group drops) — else SaCo compares drops that are all noise.

from faithlab_study.papers.saco.claims.ablation import ATTENTION_ABLATION, claim_attention_ablation, claim_k_decline
from faithlab_study.papers.saco.claims.correlation import (AGREEMENT_MIN, claim_existing_agree_more, claim_saturation,
                                                           claim_weak_correlation)
from faithlab_study.papers.saco.claims.premises import (ACCURACY_TOLERANCE, CUMULATIVE, GROUP_DROP_MIN, MIN_ACCURACY,
                                                        PREMISE_METHOD, accuracy_reason, accuracy_text, gate, narrow,
                                                        premise_sentence, removal_premise, state)
from faithlab_study.papers.saco.claims.separation import claim_order_sensitivity, claim_random_separation

__all__ = ["MIN_ACCURACY", "ACCURACY_TOLERANCE", "GROUP_DROP_MIN", "PREMISE_METHOD", "removal_premise",
           "accuracy_reason", "accuracy_text", "gate", "premise_sentence", "state", "narrow",
           "claim_random_separation", "claim_order_sensitivity", "ATTENTION_ABLATION", "claim_attention_ablation",
           "claim_k_decline", "CUMULATIVE", "claim_weak_correlation", "claim_existing_agree_more", "AGREEMENT_MIN",
           "claim_saturation"]

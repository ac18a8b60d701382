"""SaCo's experimental protocol (Wu et al., CVPR 2024, spec §3): SaCo and the four cumulative metrics per sample,
their orientation (higher = more faithful), the radar rescaling of Fig. 4, and the paper's claims as claim functions
(S1 Random separation, S2/S6 correlations, S3 attention ablation, S4 number of groups, S5 saturation, S7 removal
order), each decided by its pre-registered rules (registered above the claim functions): the trained ViTs are
the units of replication, each claim's interval a t interval on the per-model means or statistics, judged against a
margin from the paper's numbers (:data:`paper.MARGINS`), after the premises that the ViTs learned the task and that
removal matters group by group (the chapter's mechanism). Tables are pandas frames with one column per metric. One
module per concept:

- :mod:`~faithlab_study.papers.saco.setup`: the chapter's trained ViTs (``trained_vits``, the replica loop) and its
  set-up table (``SETUP``);
- :mod:`~faithlab_study.papers.saco.experiments`: the metrics per sample, their directions, the radar scale and the
  interval of a mean over the trained models, the trained model of every row, Fig. 3's case study and Fig. 2's rank
  correlations per trained model;
- :mod:`~faithlab_study.papers.saco.claims`: the accuracy premise (``MIN_ACCURACY``, ``ACCURACY_TOLERANCE``), the
  mechanism premise (``removal_premise``, ``GROUP_DROP_MIN``) and the claims S1–S7;
- :mod:`~faithlab_study.papers.saco.paper`: the paper's numbers (Tables 1–2, Fig. 2) and the margins derived from them.

Every public name is re-exported here (``faithlab_study.papers.saco.radar_scale``).
"""

from faithlab_study.papers.saco import paper
from faithlab_study.papers.saco.claims import (ACCURACY_TOLERANCE, AGREEMENT_MIN, ATTENTION_ABLATION, CUMULATIVE,
                                               GROUP_DROP_MIN, MIN_ACCURACY, PREMISE_METHOD, claim_attention_ablation,
                                               claim_existing_agree_more, claim_k_decline, claim_order_sensitivity,
                                               claim_random_separation, claim_saturation, claim_weak_correlation,
                                               narrow, removal_premise)
from faithlab_study.papers.saco.experiments import (HIGHER_IS_BETTER, case_study_frame, models_mean_interval, oriented,
                                                    per_image_frame, per_model_correlations, per_sample_metrics,
                                                    pixel_map, radar_scale, random_saco_frame, rank_correlations)
from faithlab_study.papers.saco.setup import SETUP, VIT_OPTIONS, trained_vits

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "pixel_map", "per_image_frame", "random_saco_frame", "oriented",
           "radar_scale", "models_mean_interval", "rank_correlations", "per_model_correlations", "claim_weak_correlation",
           "claim_existing_agree_more", "AGREEMENT_MIN", "case_study_frame", "claim_saturation",
           "claim_random_separation", "claim_order_sensitivity", "ATTENTION_ABLATION", "CUMULATIVE",
           "claim_attention_ablation", "claim_k_decline", "narrow", "SETUP", "MIN_ACCURACY", "ACCURACY_TOLERANCE",
           "GROUP_DROP_MIN", "PREMISE_METHOD", "removal_premise", "VIT_OPTIONS", "trained_vits"]

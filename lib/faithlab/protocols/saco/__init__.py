"""SaCo's experimental protocol (Wu et al., CVPR 2024, spec §3): SaCo and the four cumulative metrics per sample,
their orientation (higher = more faithful), the radar rescaling of Fig. 4, and the paper's claims as claim functions
(S1 Random separation, S2/S6 correlations, S3 attention ablation, S4 number of groups, S5 saturation, S7 removal
order), each decided by the house procedure of :mod:`faithlab.verdicts` (intervals from bootstraps over the
trained replicas, then the images; a tie is undecided, never a failure) after the premise that the ViTs learned the
task. Tables are pandas frames with one column per metric. One module per concept:

- :mod:`~faithlab.protocols.saco.scores`: the metrics per sample, their directions and the radar scale;
- :mod:`~faithlab.protocols.saco.comparisons`: paired comparisons of the methods sample by sample and the claims
  they decide (S1, S7, S3, S4);
- :mod:`~faithlab.protocols.saco.correlations`: rank correlations between the metrics and the claims S2, S6;
- :mod:`~faithlab.protocols.saco.case_study`: Fig. 3's case study and the claim S5;
- :mod:`~faithlab.protocols.saco.setup_table`: the chapter's set-up table (``SETUP``);
- :mod:`~faithlab.protocols.saco.paper`: the paper's numbers (Tables 1–2), read by the notebook and the claims;
- :mod:`~faithlab.protocols.saco._common`: the two-stage batched bootstrap and the accuracy premise
  (``MIN_ACCURACY``, ``ACCURACY_TOLERANCE``).

Every public name is re-exported here (``fl.protocols.saco.radar_scale``).
"""

from faithlab.protocols.saco._common import ACCURACY_TOLERANCE, MIN_ACCURACY
from faithlab.protocols.saco import paper
from faithlab.protocols.saco.case_study import case_study_frame, claim_saturation
from faithlab.protocols.saco.comparisons import (ATTENTION_ABLATION, claim_attention_ablation, claim_k_decline,
                                                 claim_order_sensitivity, claim_random_separation, narrow,
                                                 order_sensitivity, random_separation)
from faithlab.protocols.saco.correlations import claim_existing_agree_more, claim_weak_correlation, rank_correlations
from faithlab.protocols.saco.scores import (HIGHER_IS_BETTER, oriented, per_image_frame, per_sample_metrics, pixel_map,
                                           radar_scale, settings_mean_interval)
from faithlab.protocols.saco.setup_table import SETUP

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "pixel_map", "per_image_frame", "oriented", "radar_scale",
           "settings_mean_interval", "random_separation",
           "order_sensitivity", "rank_correlations", "claim_weak_correlation", "claim_existing_agree_more",
           "case_study_frame", "claim_saturation", "claim_random_separation", "claim_order_sensitivity",
           "ATTENTION_ABLATION", "claim_attention_ablation", "claim_k_decline", "narrow", "SETUP", "MIN_ACCURACY",
           "ACCURACY_TOLERANCE"]

"""ReCo/MeGe protocols (spec §4): the four tasks and their stand-ins, k-fold families of models (normal, degraded,
1-Lipschitz) trained in independent replicas, every model's explanations of every sample, the S= / S≠ sets per method
with the chance level of every pair (the image pairings shuffled; cached on disk, so the notebooks that need the same
sets compute them once), the chapter's mechanism premise (the k models beat chance and are of comparable accuracy,
decided over the replicas), and the claims R1 (:func:`claim_gradcam_best_reco`), R2 (:func:`claim_mege_falls`), R3
(:func:`claim_lipschitz`), Table 3's (:func:`claim_table3`) and the study checks R4
(:func:`faithlab.study.papers.reco_sanity.claim_sanity_checks`) and R5 (:func:`claim_identical_models`), each decided by
its rule in ``faithlab/study/verdicts/registered/reco_mege.toml``.

The metric lives in :mod:`faithlab.metrics.papers.reco_mege.crossfold` (μF and S_avg, which the paper compares it with,
in :mod:`faithlab.metrics.papers.reco_mege.baselines`); the training in :func:`faithlab.train.cross_train`.

One module per concept, each importing only from the ones listed before it, their public names gathered here
(``faithlab.study.papers.reco_mege.distance_sets(...)``): :mod:`~faithlab.study.papers.reco_mege.tasks` (the tasks and their
stand-ins, the methods and their options, the degradations, the set-up table),
:mod:`~faithlab.study.papers.reco_mege.kfold` (D, the stand-ins, families of k cross-trained models and their replicas,
every model's maps), :mod:`~faithlab.study.papers.reco_mege.accuracy` (the mechanism premise and the accuracy tables),
:mod:`~faithlab.study.papers.reco_mege.sets` (the S= / S≠ sets with their chance level, cached; score and histogram
frames), :mod:`~faithlab.study.papers.reco_mege.bootstrap` (weighted scores, pooled sets and the chance-level frame),
:mod:`~faithlab.study.papers.reco_mege.claims` (per-replica scores, R1, R2, R3),
:mod:`~faithlab.study.papers.reco_mege.baselines` (Table 3: μF and S_avg beside ReCo/MeGe),
:mod:`~faithlab.study.papers.reco_mege.identical` (R5: k identical models), :mod:`~faithlab.study.papers.reco_mege.checks`
(IG's step and SmoothGrad's sample counts, Grad-CAM's grid) and :mod:`~faithlab.study.papers.reco_mege.paper` (the
paper's numbers, the margins derived from them and the side-by-side tables).
"""

from faithlab.study.papers.reco_mege.tasks import SETUP  # noqa: F401 - the set-up table (tests, book); not in __all__
from faithlab.study.papers.reco_mege.tasks import (DEGRADATIONS, METHODS, TASKS, degradation_amount, method_options,
                                                task_label)
from faithlab.study.papers.reco_mege.kfold import (Family, FamilySettings, explain_family, families, family, load_task,
                                                digit_variant, stand_in)
from faithlab.study.papers.reco_mege.accuracy import (accuracy_frame, accuracy_summary, decide_premise, premise_row,
                                                   premise_table, test_accuracy)
from faithlab.study.papers.reco_mege.sets import distance_sets, histogram_frame, pairs_frame, scores, with_null
from faithlab.study.papers.reco_mege.bootstrap import null_frame, pooled_sets, score_draws
from faithlab.study.papers.reco_mege.claims import (claim_gradcam_best_reco, claim_lipschitz, claim_mege_falls,
                                                 replica_scores, s_equal_below_chance)
from faithlab.study.papers.reco_mege.baselines import claim_table3, fidelity_stability
from faithlab.study.papers.reco_mege.identical import claim_identical_models, identical_models
from faithlab.study.papers.reco_mege.checks import cam_grid, steps_diagnostic
from faithlab.study.papers.reco_mege.paper import PAPER, beside, rank_agreement

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "degradation_amount", "task_label",
           "Family", "load_task", "stand_in", "digit_variant", "family", "method_options", "explain_family",
           "with_null", "distance_sets", "null_frame", "claim_gradcam_best_reco", "claim_mege_falls", "scores",
           "score_draws", "histogram_frame", "accuracy_frame", "premise_row",
           "test_accuracy", "decide_premise", "premise_table", "accuracy_summary", "replica_scores",
           "s_equal_below_chance", "claim_table3",
           "claim_lipschitz", "steps_diagnostic",
           "fidelity_stability", "PAPER", "rank_agreement", "beside", "identical_models", "cam_grid", "families",
           "FamilySettings", "claim_identical_models", "pairs_frame", "pooled_sets"]

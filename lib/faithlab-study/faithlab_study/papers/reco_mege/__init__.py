"""ReCo/MeGe protocols (spec §4): the four tasks and their stand-ins, k-fold families of models (normal, degraded,
1-Lipschitz) trained in independent replicas, every model's explanations of every sample, the S= / S≠ sets per method
with the chance level of every pair (the image pairings shuffled; cached on disk, so the notebooks that need the same
sets compute them once), the chapter's mechanism premise (the k models beat chance and are of comparable accuracy,
decided over the replicas), and the claims R1 (:func:`claim_gradcam_best_reco`), R2 (:func:`claim_mege_falls`), R3
(:func:`claim_lipschitz`), Table 3's (:func:`claim_table3`) and the study checks R4
(:func:`~faithlab_study.papers.reco_mege.claims.sanity.claim_sanity_checks`) and R5 (:func:`claim_identical_models`), each decided by
the rule registered above it.

The metric lives in :mod:`faithlab.metrics.papers.reco_mege.crossfold` (μF and S_avg, which the paper compares it with,
in :mod:`faithlab.metrics.papers.reco_mege.baselines`); the training in :func:`faithlab.train.cross_train`.

The package holds the four parts of every paper package, their public names gathered here
(``faithlab_study.papers.reco_mege.distance_sets(...)``): :mod:`~faithlab_study.papers.reco_mege.setup` (the tasks and
their stand-ins, the methods and their options, the degradations, the set-up table; D, the stand-ins, families of k
cross-trained models and their replicas, every model's maps), :mod:`~faithlab_study.papers.reco_mege.experiments`
(the S= / S≠ sets with their chance level, cached; weighted scores and pooled sets; Table 3's μF and S_avg; k
identical models; the explainers' settings checks; the distance sanity checks of Figs. 2–3),
:mod:`~faithlab_study.papers.reco_mege.claims` (the mechanism premise and the accuracy tables; per-replica scores,
R1, R2, R3; Table 3; R5; R4) and :mod:`~faithlab_study.papers.reco_mege.paper` (the paper's numbers, the margins
derived from them and the side-by-side tables). The distance sanity checks are
:mod:`faithlab_study.papers.reco_mege.claims.sanity`, which holds the claim and re-exports the checks' maps and
distances.
"""

from faithlab_study.papers.reco_mege.setup import SETUP  # noqa: F401 - the set-up table (tests, book); not in __all__
from faithlab_study.papers.reco_mege.setup import (DEGRADATIONS, METHODS, TASKS, Family, FamilySettings,
                                                   degradation_amount, digit_variant, explain_family, families, family,
                                                   lipschitz_replicas, load_task, method_options, replica_families,
                                                   run_replicas, stand_in, task_label)
from faithlab_study.papers.reco_mege.experiments import (cam_grid, distance_sets, fidelity_stability, histogram_frame,
                                                         identical_models, null_frame, pairs_frame, pooled_sets,
                                                         score_draws, scores, steps_diagnostic, with_null)
from faithlab_study.papers.reco_mege.claims import (accuracy_frame, accuracy_summary, claim_gradcam_best_reco,
                                                    claim_identical_models, claim_lipschitz, claim_mege_falls,
                                                    claim_table3, decide_premise, premise_row, premise_table,
                                                    replica_scores, s_equal_below_chance, test_accuracy)
from faithlab_study.papers.reco_mege.paper import LIPSCHITZ_TASK, PAPER, beside, rank_agreement

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "degradation_amount", "task_label",
           "Family", "load_task", "stand_in", "digit_variant", "family", "method_options", "explain_family",
           "with_null", "distance_sets", "null_frame", "claim_gradcam_best_reco", "claim_mege_falls", "scores",
           "score_draws", "histogram_frame", "accuracy_frame", "premise_row",
           "test_accuracy", "decide_premise", "premise_table", "accuracy_summary", "replica_scores",
           "s_equal_below_chance", "claim_table3",
           "claim_lipschitz", "steps_diagnostic",
           "fidelity_stability", "PAPER", "rank_agreement", "beside", "identical_models", "cam_grid", "families",
           "FamilySettings", "claim_identical_models", "pairs_frame", "pooled_sets", "run_replicas", "replica_families",
           "lipschitz_replicas", "LIPSCHITZ_TASK"]

"""ReCo/MeGe protocols (spec §4): the four tasks and their stand-ins, k-fold families of models (normal, degraded,
1-Lipschitz), every model's explanations of every sample, the S= / S≠ sets per method with the chance level of every
pair (the image pairings shuffled; cached on disk, so the notebooks that need the same sets compute them once),
paired bootstrap draws of ReCo and MeGe, tidy frames, and the claims R1 (:func:`claim_gradcam_best_reco`), R2
(:func:`claim_mege_falls`) and R3 (:func:`claim_lipschitz`), each with that chance level as its null, Table 3's
(:func:`claim_table3`) and R5's (:func:`claim_identical_models`).

The metric lives in :mod:`faithlab.metrics.papers.reco_mege.crossfold` (μF and S_avg, which the paper compares it with,
in :mod:`faithlab.metrics.papers.reco_mege.baselines`); the training in :func:`faithlab.train.cross_train`.

One module per concept, each importing only from the ones listed before it, their public names gathered here
(``fl.protocols.reco_mege.distance_sets(...)``): :mod:`~faithlab.protocols.reco_mege.tasks` (the tasks and their
stand-ins, the methods and their options, the degradations, the set-up table),
:mod:`~faithlab.protocols.reco_mege.kfold` (families of k cross-trained models, their shared settings, every model's
maps), :mod:`~faithlab.protocols.reco_mege.accuracy` (the families' accuracies and the premises of every verdict),
:mod:`~faithlab.protocols.reco_mege.sets` (the S= / S≠ sets with their chance level, cached; score and histogram
frames), :mod:`~faithlab.protocols.reco_mege.bootstrap` (paired bootstrap draws, comparisons and the chance-level
frame), :mod:`~faithlab.protocols.reco_mege.claims` (R1, R2, R3), :mod:`~faithlab.protocols.reco_mege.baselines`
(Table 3: μF and S_avg beside ReCo/MeGe), :mod:`~faithlab.protocols.reco_mege.identical` (R5: k identical models),
:mod:`~faithlab.protocols.reco_mege.checks` (IG's step and SmoothGrad's sample counts, Grad-CAM's grid) and
:mod:`~faithlab.protocols.reco_mege.paper` (the paper's numbers and the side-by-side tables).
"""

from faithlab.protocols.reco_mege.tasks import SETUP  # noqa: F401 - the set-up table (tests, book); not in __all__
from faithlab.protocols.reco_mege.tasks import (DEGRADATIONS, METHODS, TASKS, degradation_amount, method_options,
                                                task_label)
from faithlab.protocols.reco_mege.kfold import Family, FamilySettings, explain_family, families, family, load_task
from faithlab.protocols.reco_mege.accuracy import (accuracy_frame, accuracy_summary, chance_premise, comparable_premise,
                                                   family_premise, test_accuracy)
from faithlab.protocols.reco_mege.sets import distance_sets, histogram_frame, pairs_frame, scores, with_null
from faithlab.protocols.reco_mege.bootstrap import (bootstrap_scores, comparison, null_frame, pooled_sets, score_draws,
                                                    two_stage_weights)
from faithlab.protocols.reco_mege.claims import claim_gradcam_best_reco, claim_lipschitz, claim_mege_falls
from faithlab.protocols.reco_mege.baselines import claim_table3, fidelity_stability
from faithlab.protocols.reco_mege.identical import claim_identical_models, identical_models
from faithlab.protocols.reco_mege.checks import cam_grid, steps_diagnostic
from faithlab.protocols.reco_mege.paper import PAPER, beside, rank_agreement

__all__ = ["TASKS", "METHODS", "DEGRADATIONS", "degradation_amount", "task_label",
           "Family", "load_task", "family", "method_options", "explain_family",
           "with_null", "distance_sets", "null_frame", "claim_gradcam_best_reco", "claim_mege_falls", "scores",
           "bootstrap_scores", "score_draws", "histogram_frame", "comparison", "accuracy_frame", "chance_premise",
           "test_accuracy", "comparable_premise", "family_premise", "accuracy_summary", "claim_table3",
           "claim_lipschitz", "steps_diagnostic",
           "fidelity_stability", "PAPER", "rank_agreement", "beside", "identical_models", "cam_grid", "families",
           "FamilySettings", "claim_identical_models", "pairs_frame", "pooled_sets", "two_stage_weights"]

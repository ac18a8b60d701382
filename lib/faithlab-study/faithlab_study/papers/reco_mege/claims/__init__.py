"""ReCo/MeGe's claims, each decided by its rule registered above its claim function, one module
per concept, each importing only from the set-up, the experiments and the ones listed before it:
:mod:`~faithlab_study.papers.reco_mege.claims.premise` (the chapter's mechanism premise: the k models beat chance
and are of comparable accuracy, decided over the replicas; the accuracy tables),
:mod:`~faithlab_study.papers.reco_mege.claims.replicas` (per-replica scores, R1, R2, R3),
:mod:`~faithlab_study.papers.reco_mege.claims.table3` (Table 3: μF and S_avg beside ReCo/MeGe),
:mod:`~faithlab_study.papers.reco_mege.claims.identical` (R5: k identical models) and
:mod:`~faithlab_study.papers.reco_mege.claims.sanity` (R4: the distance sanity checks, Figs. 2–3).

Every public name is re-exported here (``faithlab_study.papers.reco_mege.claims.claim_mege_falls``).
"""

# A replica is one independent run of a family's whole k-fold training (its k models share D and its split, so they
# are not independent repeats). ReCo is a maximum over thresholds, not a mean of per-image values: every ReCo or MeGe
# statistic is computed once per replica, on that replica's own S= / S≠ sets, and judged by a t interval on the R
# replica values; the images of D behind them are the units. The margins are half the paper's smallest effect of the
# kind the claim names (faithlab_study.papers.reco_mege.paper.margins recomputes each from the typed tables; a test
# compares them with the registered rules).


from faithlab_study.papers.reco_mege.claims.premise import (accuracy_frame, accuracy_summary, decide_premise,
                                                            premise_row, premise_table, test_accuracy)
from faithlab_study.papers.reco_mege.claims.replicas import (claim_gradcam_best_reco, claim_lipschitz,
                                                             claim_mege_falls, replica_scores, s_equal_below_chance)
from faithlab_study.papers.reco_mege.claims.table3 import claim_table3
from faithlab_study.papers.reco_mege.claims.identical import claim_identical_models
from faithlab_study.papers.reco_mege.claims.sanity import claim_sanity_checks, monotonicity, unit_spearman

__all__ = ["test_accuracy", "premise_row", "decide_premise", "premise_table", "accuracy_frame", "accuracy_summary",
           "replica_scores", "s_equal_below_chance", "claim_gradcam_best_reco", "claim_mege_falls", "claim_lipschitz",
           "claim_table3", "claim_identical_models", "monotonicity", "unit_spearman", "claim_sanity_checks"]

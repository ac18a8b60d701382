"""Faithfulness metrics: pure tensor functions, one module per paper family, built on :mod:`faithlab.perturb`.

``ffidelity`` (Fid±/RFid±/FFid±, paired curves, macro/micro correlations and ranks, explanation size),
``cumulative`` (accuracy AUC, AOPC, log-odds, comprehensiveness, each with a ``*_details`` twin holding the curve),
``saco`` (SaCo and its details), ``fewclass`` (Few-class Fidelity: the candidate search, MIF/LIF curves and
localisation; ``fewclass_fid``, ``fewclass_fid_details`` and ``select_perturbation`` are gathered here), ``reco_mege`` (ReCo, MeGe, μF and S_avg over k cross-trained models; its public names are gathered here, the
module itself is shadowed by the ``reco_mege`` function: import from ``faithlab.metrics.reco_mege``), ``distances``
(the six map distances of ReCo/MeGe's sanity checks, ``map_distance``), ``trace`` (TRACE's patch deletion curves and trajectory searches, used as
``fl.metrics.trace.anneal(...)``), ``statistics`` (the rank statistics and curve areas they share). Their public
names are gathered here: ``fl.metrics.fid_plus(...)``, ``fl.metrics.saco(...)``.
"""

from faithlab.metrics.cumulative import (FRACTIONS, aopc, aopc_details, auc_accuracy, auc_accuracy_details,
                                         comprehensiveness, comprehensiveness_details, log_odds, log_odds_details)
from faithlab.metrics.ffidelity import (DIRECTIONS, critical_points, explanation_size, fid_curves, fid_minus,
                                        fid_plus, ground_truth_ranking, macro_correlations, micro_correlations,
                                        micro_ranks, minus_sparsity, rank_methods)
from faithlab.metrics.saco import saco, saco_details
from faithlab.metrics.fewclass import fewclass_fid, fewclass_fid_details, select_perturbation
from faithlab.metrics import fewclass
from faithlab.metrics import trace
from faithlab.metrics import distances
from faithlab.metrics.distances import map_distance
from faithlab.metrics.reco_mege import (average_stability, average_stability_details, mege, mu_fidelity,
                                         mu_fidelity_details, pair_distances, reco, reco_auc, reco_curve, reco_mege,
                                         reco_mege_details, reco_scan, shuffled_distances, shuffled_partners,
                                         split_sets)

__all__ = [
    "fid_plus", "fid_minus", "fid_curves", "minus_sparsity", "DIRECTIONS", "macro_correlations",
    "micro_correlations", "micro_ranks", "ground_truth_ranking", "rank_methods", "explanation_size",
    "critical_points",
    "FRACTIONS", "auc_accuracy", "auc_accuracy_details", "aopc", "aopc_details", "log_odds", "log_odds_details",
    "comprehensiveness", "comprehensiveness_details",
    "saco", "saco_details", "fewclass", "fewclass_fid", "fewclass_fid_details", "select_perturbation", "trace",
    "reco_mege", "reco_mege_details", "pair_distances", "split_sets", "shuffled_partners",
    "shuffled_distances", "reco", "reco_curve", "reco_scan",
    "reco_auc", "mege", "distances", "map_distance", "mu_fidelity", "mu_fidelity_details", "average_stability", "average_stability_details",
]

"""Faithfulness metrics, one module per paper's metric family (pure torch, built on faithlab.perturb).

The public functions of every family are re-exported here, so ``fl.metrics.fid_plus(...)`` and
``fl.metrics.saco(...)`` work directly; the modules are ``faithlab.metrics.fidelity`` and
``faithlab.metrics.saco`` (the latter shadowed here by its main function).
"""

from faithlab.metrics.fidelity import (
    critical_points,
    explanation_size,
    fid_minus,
    fid_plus,
    ground_truth_ranking,
    rank_methods,
)
from faithlab.metrics.saco import aopc, auc_accuracy, comprehensiveness, log_odds, saco, saco_details

__all__ = [
    "fid_plus",
    "fid_minus",
    "ground_truth_ranking",
    "rank_methods",
    "explanation_size",
    "critical_points",
    "saco",
    "saco_details",
    "auc_accuracy",
    "aopc",
    "log_odds",
    "comprehensiveness",
]

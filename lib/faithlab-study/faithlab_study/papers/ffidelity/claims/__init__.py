"""F-Fidelity's claim functions, one module per concept (every public name re-exported here):

* :mod:`~faithlab_study.papers.ffidelity.claims.ranking`: the correlations, their nulls (the ground-truth order
  permuted), the replica statistics and the ranking, LeRF and ablation claims;
* :mod:`~faithlab_study.papers.ffidelity.claims.ablation`: the ablation claim (F3);
* :mod:`~faithlab_study.papers.ffidelity.claims.images`: the chapter's mechanism (removal out of distribution,
  :func:`claim_ood_check`, the premise :func:`mechanism`), the map preference, the cost and ROAD beside F-Fidelity;
* :mod:`~faithlab_study.papers.ffidelity.claims.sensitivity`: the size read-out, the hyperparameters' robustness and
  the maps the fine-tuning keeps;
* :mod:`~faithlab_study.papers.ffidelity.claims.robustness`: Table 8 and App. D.3 (fine-tuning restores accuracy,
  text robust, β steps);
* :mod:`~faithlab_study.papers.ffidelity.claims.series_text`: the ranking claims of the time-series and text
  models.

Every claim is decided by its pre-registered rule, registered directly above its claim function by
:meth:`faithlab_study.verdicts.Chapter.registered`: the chapter's shared fields are written once in
:mod:`~faithlab_study.papers.ffidelity.claims.registration` (``CHAPTER`` and its families), each registration
holds only what differs. A new claim of the chapter goes into the module of its concept.
"""

# Every margin is derived from the paper's own numbers by faithlab_study.papers.ffidelity.paper.margins() (a test
# recomputes them), except where margin_source says it is a convention.


from faithlab_study.papers.ffidelity.claims.images import (
    COST_STAGES,
    RIVAL_COST_STAGES,
    claim_cost,
    claim_map_preferred,
    claim_ood_check,
    claim_road,
    cost_table,
    mechanism,
    ood_per_input,
    per_image_ffid,
    rival_costs,
)
from faithlab_study.papers.ffidelity.claims.ranking import (
    CORRELATION_LABELS,
    RANKING_RULES,
    claim_lerf_near_one,
    claim_ranking,
    ground_truth_null,
    micro_cells,
    oriented_correlations,
    permuted_correlations,
    ranking_correlations,
    replica_means,
    separation,
    setting_means,
    setting_table,
    table_layout,
)
from faithlab_study.papers.ffidelity.claims.sensitivity import (
    AGREEMENT,
    PAIR_MAPS,
    claim_maps_preserved,
    claim_robust_hyperparameters,
    claim_size_readout,
    map_agreement,
    map_agreement_over_replicas,
    pair_maps,
)
from faithlab_study.papers.ffidelity.claims.ablation import claim_ablation
from faithlab_study.papers.ffidelity.claims.robustness import (
    claim_beta_accuracy,
    claim_beta_agreement,
    claim_finetune_restores,
    claim_text_robust,
)
from faithlab_study.papers.ffidelity.claims.series_text import claim_series_ranking, claim_text_equivalence, glue_key

__all__ = [  # noqa: RUF022
    "ranking_correlations", "CORRELATION_LABELS", "oriented_correlations", "table_layout", "setting_means",
    "setting_table", "separation", "micro_cells", "replica_means", "RANKING_RULES", "permuted_correlations",
    "ground_truth_null", "claim_ranking", "claim_lerf_near_one", "claim_ablation",
    "ood_per_input", "claim_ood_check", "mechanism", "per_image_ffid", "claim_map_preferred", "COST_STAGES",
    "cost_table", "claim_cost", "claim_road", "RIVAL_COST_STAGES", "rival_costs", "claim_size_readout",
    "claim_robust_hyperparameters", "AGREEMENT", "map_agreement", "map_agreement_over_replicas",
    "claim_maps_preserved", "PAIR_MAPS", "pair_maps",
    "claim_finetune_restores", "claim_text_robust", "claim_beta_accuracy", "claim_beta_agreement",
    "claim_series_ranking", "claim_text_equivalence", "glue_key",
]

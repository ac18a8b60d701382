"""F-Fidelity's experimental protocols (Zheng et al., ICLR 2025), which combine data, training, explainers and
metrics; tables are tidy pandas frames.

The degraded-explainer protocol (spec §1.6–1.9): degrade a clean map at known noise levels ξ with several
seeds and score every degraded map with Fid+ and Fid− curves (:func:`degraded_fidelity_curves`);
:func:`image_ranking_study` runs the whole image study (original, fine-tuned and ROAR models, five evaluation
settings, the wall-clock cost and forward passes of every stage), and :func:`ranking_correlations` turns the curves
into the paper's macro/micro correlations and micro ranks.

The paper's files, as in every paper package, every public name gathered here
(``faithlab_study.papers.ffidelity.<name>``):

* ``setup``: the models and data the notebooks share — :func:`palette_canvases` (canvases on which removal is out
  of distribution), :class:`CanvasModels`, the image models three notebooks share, :class:`VitModels`, the ViT two
  notebooks share, :class:`SeriesTextModels`, the series and text models two notebooks share — and the chapter's
  set-up table, :data:`SETUP`;
* ``experiments``: the image study (:func:`degraded_fidelity_curves`, :func:`image_ranking_study`,
  :class:`RankingStudy`, random masking, constant-map counts);
* ``claims``: the claim functions, one module per concept (``claims.ranking``: the correlations, their nulls, the
  replica statistics and the ranking, LeRF and ablation claims; ``claims.images``: the chapter's mechanism
  (:func:`claim_ood_check`, the premise :func:`mechanism`), the map preference, the cost, size and sensitivity
  claims; ``claims.robustness``: Table 8 and App. D.3; ``claims.series_text``: the series and text ranking claims);
* ``paper``: the paper's numbers (Tables 1–8, 10–13), read by the notebooks.
"""

from faithlab_study.papers.ffidelity import claims, experiments, paper, setup
from faithlab_study.papers.ffidelity.claims import (
    AGREEMENT,
    CORRELATION_LABELS,
    COST_STAGES,
    PAIR_MAPS,
    RANKING_RULES,
    RIVAL_COST_STAGES,
    claim_ablation,
    claim_beta_accuracy,
    claim_beta_agreement,
    claim_cost,
    claim_finetune_restores,
    claim_lerf_near_one,
    claim_map_preferred,
    claim_maps_preserved,
    claim_ood_check,
    claim_ranking,
    claim_road,
    claim_robust_hyperparameters,
    claim_series_ranking,
    claim_size_readout,
    claim_text_equivalence,
    claim_text_robust,
    cost_table,
    glue_key,
    ground_truth_null,
    map_agreement,
    map_agreement_over_replicas,
    mechanism,
    micro_cells,
    ood_per_input,
    oriented_correlations,
    pair_maps,
    per_image_ffid,
    permuted_correlations,
    ranking_correlations,
    replica_means,
    rival_costs,
    separation,
    setting_means,
    setting_table,
    table_layout,
)
from faithlab_study.papers.ffidelity.experiments import (
    PAPER_SETTINGS,
    RIVALS,
    ROAD_REFERENCE,
    SETTINGS,
    RankingStudy,
    ReplicaStudies,
    constant_map_counts,
    degraded_fidelity_curves,
    image_ranking_study,
    random_masking_predictions,
)
from faithlab_study.papers.ffidelity.setup import (
    PALETTES,
    SETUP,
    CanvasModels,
    SeriesTextModels,
    VitModels,
    palette_canvases,
)

# in the modules' order, which the API page follows
__all__ = [  # noqa: RUF022
    "SETUP", "degraded_fidelity_curves", "random_masking_predictions", "constant_map_counts", "SETTINGS",
    "PAPER_SETTINGS", "RIVALS", "ROAD_REFERENCE",
    "RankingStudy", "ReplicaStudies", "image_ranking_study", "PALETTES", "palette_canvases", "CanvasModels",
    "VitModels", "ranking_correlations", "CORRELATION_LABELS",
    "oriented_correlations", "table_layout", "setting_means", "setting_table", "separation", "micro_cells",
    "replica_means", "RANKING_RULES",
    "permuted_correlations", "ground_truth_null", "claim_ranking", "claim_lerf_near_one", "claim_ablation",
    "ood_per_input", "claim_ood_check", "mechanism", "per_image_ffid", "claim_map_preferred", "COST_STAGES",
    "cost_table", "claim_cost", "claim_road", "RIVAL_COST_STAGES", "rival_costs", "claim_size_readout", "claim_robust_hyperparameters",
    "AGREEMENT", "map_agreement", "map_agreement_over_replicas", "claim_maps_preserved", "PAIR_MAPS", "pair_maps",
    "SeriesTextModels", "claim_finetune_restores", "claim_text_robust", "claim_beta_accuracy", "claim_beta_agreement",
    "claim_series_ranking", "claim_text_equivalence", "glue_key",
]

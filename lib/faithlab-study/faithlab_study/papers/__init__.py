"""Experimental protocols, one module per paper: they combine data, training, explainers and metrics (so they
cannot live in the pure metric modules) and return tidy pandas frames. ``ffidelity``: F-Fidelity's degraded-explainer
study and its tables; ``saco``: SaCo's per-sample comparison with the cumulative metrics; ``trace``: TRACE's
method trajectories, searches and deletion frames; ``fewclass``: Few-class Fidelity's tasks, maps, Fid and
localisation frames; ``reco_mege``: ReCo/MeGe's tasks, k-fold families and S=/S≠ sets, and the distance sanity
checks (Figs. 2–3; :mod:`faithlab_study.papers.reco_mege.claims.sanity`); ``synthesis``: every metric on setups
with a known answer (recovery, meta-evaluation, report card); ``diagnostics``: whether
removal is out of distribution (every chapter that removes features shows it). Public names are gathered
here (``faithlab_study.papers.image_ranking_study``, ``faithlab_study.papers.saco.radar_scale``)."""

from faithlab_study.papers.ffidelity import (CORRELATION_LABELS, SETTINGS, RankingStudy, constant_map_counts,
                                          degraded_fidelity_curves, random_masking_predictions,
                                          image_ranking_study, micro_cells, oriented_correlations,
                                          ranking_correlations, separation, table_layout,
                                          ground_truth_null, permuted_correlations)
from faithlab_study.papers import basics, diagnostics, fewclass, reco_mege, saco, synthesis, trace
from faithlab_study.papers.diagnostics import cap_count, ood_gap, removal_diagnostic

__all__ = ["degraded_fidelity_curves", "constant_map_counts", "random_masking_predictions", "SETTINGS", "RankingStudy",
           "image_ranking_study", "ranking_correlations", "CORRELATION_LABELS", "oriented_correlations", "table_layout",
           "separation", "micro_cells", "saco", "synthesis", "trace", "fewclass", "reco_mege", "diagnostics",
           "removal_diagnostic", "ood_gap", "cap_count", "basics", "ground_truth_null", "permuted_correlations"]

"""Faithfulness metrics: pure tensor functions, one package per paper of the study, built on :mod:`faithlab.perturb`.

Every metric has one call shape, ``metric(model, x, attributions, *, target=None, ...)`` (``target=None``: the
model's prediction ŷ), and a ``*_details`` twin with the same parameters. Every metric takes floating, integer or
bool ``attributions`` (a binary mask, a superpixel selection or a segmentation is an explanation too: a metric only
ranks or weighs the values) and reads an integer or bool map as floating-point values; a complex map is a TypeError
naming ``attributions``. A setting that makes a score the same for every map, or undefined — a Monte-Carlo count too
small to measure anything (infidelity's one normalised perturbation, μF's two subsets), one SaCo group or one TRACE
patch, a grid of levels that each remove no unit or every unit — is refused with a ValueError naming the argument;
each metric declares its own (``Metric.degenerate``, listed on the API page). One draw where the score still
depends on the map (RFid±/FFid±'s ``n_samples=1``, S_avg's one neighbour) is an estimate, its ``mc_se`` NaN.
``registry`` is the metric contract
(:class:`~faithlab.metrics.registry.Metric`, ``register``, ``declare``) that ``fl.evaluate``, the CLI, the hints,
the report and the tests read; each module declares its own metrics beside their functions, and importing this
package imports every paper's package (:mod:`faithlab.metrics.papers`, whose imports name them), which registers
them.

The metric modules are named on one axis, the paper, as the book's chapters are: :mod:`faithlab.metrics.papers`
holds one module or package per chapter slug (:data:`~faithlab.metrics.registry.PAPERS`), and a metric's ``paper``
is the name of the package it is declared in (a test holds it). Inside a paper, a module is one concept:

- ``papers.ffidelity``: Fid±/RFid±/FFid± and their ``*_details`` twins, macro/micro correlations and ranks,
  explanation size;
- ``papers.fewclass``: ``fidelity`` (Few-class Fidelity: the candidate search, MIF/LIF curves and Fid) and
  ``localisation`` (its IoU and Dice ground truth);
- ``papers.saco``: ``consistency`` (SaCo) and ``cumulative`` (accuracy AUC, AOPC, log-odds, comprehensiveness, the
  metrics the paper compares SaCo with);
- ``papers.reco_mege``: ``crossfold`` (ReCo and MeGe over k cross-trained models), ``baselines`` (Bhatt et al.'s μF
  and S_avg, which the paper compares them with) and ``distances`` (the six map distances of its sanity checks);
- ``papers.synthesis``: the rival metrics the book sets beside the papers' (not from the five papers): ``road_curves``
  (ROAD's MoRF/LeRF curves with noisy linear imputation) and ``explanation_infidelity`` (Yeh et al.'s infidelity,
  through captum);
- ``papers.trace``: ``trajectories`` (the patch grid, trajectories and deletion curves) and the ``search`` package
  (one module per search).

``statistics`` holds the rank statistics and curve areas the papers share. Every metric function is gathered here,
``fl.metrics.fid_plus(...)``, ``fl.metrics.saco(...)``; the namespaces users call through stay short:
``fl.metrics.fewclass`` and ``fl.metrics.trace`` are the paper packages, ``fl.metrics.search`` is TRACE's searches
(``fl.metrics.search.anneal(...)``); every other module is reached by its path under ``papers``
(``fl.metrics.papers.reco_mege.crossfold``).
"""

from faithlab.metrics import context, papers, registry, statistics
from faithlab.metrics.papers import fewclass, synthesis, trace
from faithlab.metrics.papers.ffidelity import (DIRECTIONS, critical_points, explanation_size, fid_minus,
                                               fid_minus_details, fid_plus, fid_plus_details, ground_truth_ranking,
                                               macro_correlations, micro_correlations, micro_ranks, minus_sparsity,
                                               rank_methods)
from faithlab.metrics.papers.fewclass import fewclass_fid, fewclass_fid_details, select_perturbation
from faithlab.metrics.papers.saco import (FRACTIONS, aopc, aopc_details, auc_accuracy, auc_accuracy_details,
                                          comprehensiveness, comprehensiveness_details, log_odds, log_odds_details,
                                          saco, saco_details)
from faithlab.metrics.papers.reco_mege import (average_stability, average_stability_details, map_distance, mege,
                                               mu_fidelity, mu_fidelity_details, pair_distances, reco, reco_auc,
                                               reco_details, reco_mege, reco_mege_details,
                                               reco_mege_details_from_predictions, reco_mege_from_predictions,
                                               reco_mege_of_explainer, reco_scan, shuffled_distances,
                                               shuffled_partners, split_sets)
from faithlab.metrics.papers.trace import search
from faithlab.metrics.papers.synthesis import *  # noqa: F401,F403  (ROAD and infidelity: the rival metrics)

__all__ = [
    "fid_plus", "fid_plus_details", "fid_minus", "fid_minus_details", "minus_sparsity", "DIRECTIONS",
    "macro_correlations", "micro_correlations", "micro_ranks", "ground_truth_ranking", "rank_methods",
    "explanation_size",
    "critical_points",
    "FRACTIONS", "auc_accuracy", "auc_accuracy_details", "aopc", "aopc_details", "log_odds", "log_odds_details",
    "comprehensiveness", "comprehensiveness_details",
    "saco", "saco_details", "fewclass", "fewclass_fid", "fewclass_fid_details", "select_perturbation", "trace",
    "search", "reco_mege", "reco_mege_details", "reco_mege_from_predictions",
    "reco_mege_details_from_predictions", "reco_mege_of_explainer", "pair_distances", "split_sets", "shuffled_partners",
    "shuffled_distances", "reco", "reco_details", "reco_scan",
    "reco_auc", "mege", "map_distance", "mu_fidelity", "mu_fidelity_details", "average_stability",
    "average_stability_details", "registry", "papers", "synthesis", "context", "statistics", *synthesis.__all__,
]

"""Faithfulness metrics: pure tensor functions, one module per paper family, built on :mod:`faithlab.perturb`.

Every metric has one call shape, ``metric(model, x, attributions, *, target=None, ...)`` (``target=None``: the
model's prediction ŷ), and a ``*_details`` twin with the same parameters. ``registry`` is the metric contract
(:class:`~faithlab.metrics.registry.Metric`, ``register``, ``declare``) that ``fl.evaluate``, the CLI, the hints,
the report and the tests read; each module declares its own metrics beside their functions, and importing this
package imports every module in it (a new module's metrics are registered without an edit here).

``ffidelity`` (Fid±/RFid±/FFid± and their ``*_details`` twins, macro/micro correlations and ranks, explanation size),
``cumulative`` (accuracy AUC, AOPC, log-odds, comprehensiveness, each with a ``*_details`` twin holding the curve),
``consistency`` (SaCo and its details), ``fewclass`` (Few-class Fidelity: the candidate search, MIF/LIF curves and
Fid; ``fewclass_fid``, ``fewclass_fid_details`` and ``select_perturbation`` are gathered here), ``localisation``
(Few-class's IoU and Dice localisation of maps), ``crossfold`` (ReCo and MeGe over k cross-trained models; its
public names are gathered here), ``bhatt`` (Bhatt et al.'s μF and S_avg, which ReCo/MeGe's paper compares them with;
gathered here too), ``distances`` (the six map
distances of ReCo/MeGe's sanity checks, ``map_distance``), ``trace`` (TRACE's patch grid, trajectories and deletion
curves, ``fl.metrics.trace.lerf_morf(...)``), ``search`` (TRACE's trajectory searches, a package with one module
per search, used as ``fl.metrics.search.anneal(...)``), ``statistics`` (the rank statistics and curve areas they
share). Their public names are gathered here: ``fl.metrics.fid_plus(...)``, ``fl.metrics.saco(...)``.
"""

from faithlab.metrics.cumulative import (FRACTIONS, aopc, aopc_details, auc_accuracy, auc_accuracy_details,
                                         comprehensiveness, comprehensiveness_details, log_odds, log_odds_details)
from faithlab.metrics.ffidelity import (DIRECTIONS, critical_points, explanation_size, fid_minus, fid_minus_details,
                                        fid_plus, fid_plus_details, ground_truth_ranking, macro_correlations,
                                        micro_correlations, micro_ranks, minus_sparsity, rank_methods)
from faithlab.metrics.consistency import saco, saco_details
from faithlab.metrics.fewclass import fewclass_fid, fewclass_fid_details, select_perturbation
from faithlab.metrics import fewclass
from faithlab.metrics import localisation
from faithlab.metrics import trace
from faithlab.metrics import search
from faithlab.metrics import distances
from faithlab.metrics.distances import map_distance
from faithlab.metrics.crossfold import (mege, pair_distances, reco, reco_auc, reco_details, reco_mege,
                                        reco_mege_details, reco_mege_details_from_predictions,
                                        reco_mege_from_predictions, reco_mege_of_explainer, reco_scan,
                                        shuffled_distances, shuffled_partners, split_sets)
from faithlab.metrics.bhatt import average_stability, average_stability_details, mu_fidelity, mu_fidelity_details
from faithlab.metrics import bhatt, consistency, crossfold

__all__ = [
    "fid_plus", "fid_plus_details", "fid_minus", "fid_minus_details", "minus_sparsity", "DIRECTIONS",
    "macro_correlations", "micro_correlations", "micro_ranks", "ground_truth_ranking", "rank_methods",
    "explanation_size",
    "critical_points",
    "FRACTIONS", "auc_accuracy", "auc_accuracy_details", "aopc", "aopc_details", "log_odds", "log_odds_details",
    "comprehensiveness", "comprehensiveness_details",
    "saco", "saco_details", "fewclass", "fewclass_fid", "fewclass_fid_details", "select_perturbation", "localisation",
    "trace", "search",
    "consistency", "crossfold", "bhatt", "reco_mege", "reco_mege_details", "reco_mege_from_predictions",
    "reco_mege_details_from_predictions", "reco_mege_of_explainer", "pair_distances", "split_sets", "shuffled_partners",
    "shuffled_distances", "reco", "reco_details", "reco_scan",
    "reco_auc", "mege", "distances", "map_distance", "mu_fidelity", "mu_fidelity_details", "average_stability",
    "average_stability_details", "registry",
]

from faithlab.metrics import registry  # noqa: E402


def _declare_all() -> None:
    """Import every module of this package, so each registers the metrics it declares (a fork's new module too)."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_declare_all()

"""ReCo/MeGe's experiments, one module per concept, each importing only from the set-up and the ones listed before it:
:mod:`~faithlab_study.papers.reco_mege.experiments.sets` (the S= / S≠ sets with their chance level, cached; score
and histogram frames), :mod:`~faithlab_study.papers.reco_mege.experiments.bootstrap` (weighted scores, pooled sets
and the chance-level frame), :mod:`~faithlab_study.papers.reco_mege.experiments.baselines` (Table 3's μF and S_avg),
:mod:`~faithlab_study.papers.reco_mege.experiments.identical` (R5's k identical models),
:mod:`~faithlab_study.papers.reco_mege.experiments.checks` (IG's step and SmoothGrad's sample counts, Grad-CAM's
grid) and :mod:`~faithlab_study.papers.reco_mege.experiments.sanity` (the distance sanity checks' maps and distances,
Figs. 2–3).

Every public name is re-exported here (``faithlab_study.papers.reco_mege.experiments.distance_sets``).
"""

from faithlab_study.papers.reco_mege.experiments.sets import (distance_sets, histogram_frame, pairs_frame, scores,
                                                              with_null)
from faithlab_study.papers.reco_mege.experiments.bootstrap import null_frame, pooled_sets, score_draws
from faithlab_study.papers.reco_mege.experiments.baselines import fidelity_stability
from faithlab_study.papers.reco_mege.experiments.identical import identical_models
from faithlab_study.papers.reco_mege.experiments.checks import cam_grid, steps_diagnostic
from faithlab_study.papers.reco_mege.experiments.sanity import (KINDS, LABELS, distance_frame, moving_point_maps,
                                                                noise_maps, random_paths, wasserstein)

__all__ = ["with_null", "distance_sets", "scores", "histogram_frame", "pairs_frame", "score_draws", "null_frame",
           "pooled_sets", "fidelity_stability", "identical_models", "steps_diagnostic", "cam_grid", "KINDS", "LABELS",
           "moving_point_maps", "random_paths", "noise_maps", "wasserstein", "distance_frame"]

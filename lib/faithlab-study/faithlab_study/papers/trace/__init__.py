"""TRACE's experimental protocol (Wang & Wang; spec §5): attribution maps of the Table 1 methods → patch
trajectories, and tidy frames of deletion scores and curves for Table 1 / Appendix G, Fig. 1, 2b, 3b and 4.

The metric and the searches live in :mod:`faithlab.metrics.papers.trace.trajectories` and
:mod:`faithlab.metrics.papers.trace.search`; this package only runs them over methods, references and outputs and lays
the results out, one module per concept:

- :mod:`~faithlab_study.papers.trace.setup`: the models and images (the canvas stand-ins, one named setting
  :class:`~faithlab_study.papers.trace.setup.TraceModels` shared by the three notebooks, or the paper's torchvision
  classifiers) and the chapter's set-up table (``SETUP``);
- :mod:`~faithlab_study.papers.trace.experiments`: the Table 1 methods' maps and their patch trajectories, and the
  frames of scores and curves, one row per image (or per image and curve point), so the claims can bootstrap over
  images;
- :mod:`~faithlab_study.papers.trace.claims`: the claims T1–T6 (``claim_*``, each a
  :class:`faithlab_study.verdicts.Claim` decided by the rule registered above it) and the
  chapter's mechanism premise (``mechanism_premises``), one module per concept;
- :mod:`~faithlab_study.papers.trace.paper`: the paper's numbers (Table 1) and the margins derived from them, read by
  the notebook, the claims and the rules' tests.

Every public name is re-exported here (``faithlab_study.papers.trace.deletion_frames``).
"""

from faithlab_study.papers.trace import paper
from faithlab_study.papers.trace.claims import (PREMISE_COLUMNS, PREMISE_DROP, PREMISE_GAIN, claim_beats_methods,
                                                claim_cross_test, claim_insertion_equals_deletion,
                                                claim_probability_beats_logit, claim_random_test,
                                                claim_reference_robust, claim_search_beats_greedy, claim_search_bound,
                                                cross_premises, mechanism_premises, premise_outcomes,
                                                random_test_premises, search_bound_premises, table1_premises)
from faithlab_study.papers.trace.experiments import (META_BUDGET, OUTPUT_NAMES, TABLE1_METHODS, TABU_TENURE,
                                                     curve_rows, curve_sums,
                                                     deletion_frames, insertion_deletion_frame, method_maps,
                                                     normalised_auc, random_deletion_frame, random_order_sums,
                                                     reference_spread, search_frames, table_layout, trajectories)
from faithlab_study.papers.trace.setup import (CAM_LAYERS, PAPER_MODELS, SETUP, Setup, TraceModels, first_by_filename,
                                               models_info, references_of, replica_models, setup)

__all__ = ["TABLE1_METHODS", "OUTPUT_NAMES", "PAPER_MODELS", "CAM_LAYERS", "TraceModels", "Setup", "setup",
           "replica_models", "models_info", "first_by_filename", "references_of", "method_maps", "trajectories",
           "deletion_frames", "search_frames",
           "curve_rows",
           "random_deletion_frame", "reference_spread", "normalised_auc", "table_layout", "curve_sums",
           "random_order_sums", "insertion_deletion_frame", "PREMISE_DROP", "PREMISE_GAIN", "PREMISE_COLUMNS",
           "mechanism_premises", "premise_outcomes", "table1_premises", "search_bound_premises", "cross_premises",
           "random_test_premises", "claim_search_bound", "claim_search_beats_greedy", "claim_beats_methods",
           "claim_probability_beats_logit", "claim_random_test", "claim_cross_test", "claim_reference_robust",
           "claim_insertion_equals_deletion", "SETUP", "META_BUDGET", "TABU_TENURE"]

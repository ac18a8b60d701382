"""F-Fidelity family (Zheng et al., ICLR 2025; spec §1): Fid±, R-Fidelity RFid±, F-Fidelity FFid± with their
``*_details`` twins, the "−" levels paired with the "+" levels, the ground-truth-ranking correlation analysis
(macro/micro correlations, micro ranks) and the explanation-size read-out of Theorem 1: ``scores`` (the six scores,
their details and their registry declarations), ``ranking`` (the ground-truth-ranking analysis) and ``size`` (the
explanation size); their public names are gathered here.

All scores are per sample and per sparsity level. They are built on ``faithlab.perturb``: one
:class:`~faithlab.perturb.Removal` run evaluates the clean input and every (level, Monte-Carlo mask) variant,
chunked by ``batch_size``. Random masks are drawn on the generator's device (CPU by default) and moved to x's
device, so results do not depend on the device or on ``batch_size``. The ``*_details`` twins also return each
score's Monte-Carlo standard error, read from the same masks' read-outs (``mc_se``, ``mean_mc_se``). The masks of all
levels and Monte-Carlo samples are held at once as a ``(B, L·N, n)`` bool tensor: call on slices of the batch when
B·L·N·n bytes is too large.
"""

from faithlab.metrics.papers.ffidelity import ranking, scores, size
from faithlab.metrics.papers.ffidelity.ranking import *  # noqa: F401,F403  (the package is the paper's namespace)
from faithlab.metrics.papers.ffidelity.scores import *  # noqa: F401,F403
from faithlab.metrics.papers.ffidelity.scores import OUTPUTS, REDUCE, SAMPLING, SIZES  # noqa: F401  (read as ffidelity.X)
from faithlab.metrics.papers.ffidelity.size import *  # noqa: F401,F403

__all__ = [
    "fid_plus",
    "fid_plus_details",
    "fid_minus",
    "fid_minus_details",
    "minus_sparsity",
    "SPARSITY",
    "DIRECTIONS",
    "macro_correlations",
    "micro_correlations",
    "micro_ranks",
    "ground_truth_ranking",
    "rank_methods",
    "explanation_size",
    "critical_points",
]

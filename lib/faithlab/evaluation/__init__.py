"""Every metric of the study in one call: ``fl.evaluate(model, x, y, attributions)`` → a tidy pandas frame.

One row per explainer × sample × metric (dataset-level metrics, ReCo and MeGe, one row per explainer with
``sample`` missing), with the metric's paper and direction. The metrics are those registered in
:mod:`faithlab.metrics.registry` (each declared beside its function in its module); the metric code is the
library's own (:mod:`faithlab.metrics`); this package only runs the registry and shares the work:

* the clean forward pass runs once; its prediction ŷ is the class every metric explains (``target``);
* metrics of one group share one computation (accuracy AUC, AOPC and LOdds read one most-salient-first removal
  curve, TRACE's ΣLeRF, ΣMoRF and their difference one pair of patch deletion curves); shared inputs are computed
  once for all explainers (Few-class Fidelity's perturbed images, the k fold models' predictions);
* every random metric of every explainer gets the same seed (common random numbers), so explainers differ by
  their maps only.

``loop`` (:func:`evaluate`: the boundary ``call``, which checks every argument once, then the optional ``budget``,
then the ``engine``, which runs the registry chunk by chunk; ``checkpoint`` keeps finished chunks), ``estimation``
(:func:`estimate`) and ``frame`` (the tidy frame, :func:`cost`, :func:`oriented`, :func:`describe`). A progress bar
(tqdm) runs over the chunks of samples × explainers × metric groups (``progress``: by default on, except where
``FAITHLAB_PROGRESS=0``, as in the study runner's kernels), and the frame's ``attrs["cost"]`` records, per metric
group and explainer, the model inputs evaluated, the model calls, the inputs given to the explainer and the seconds
(:func:`cost`); ``attrs["forward_inputs"]`` is the total.
"""

from faithlab.evaluation.estimation import estimate
from faithlab.evaluation.frame import cost, describe, oriented
from faithlab.evaluation.loop import available, evaluate
from faithlab.metrics.registry import METRICS

__all__ = ["METRICS", "available", "evaluate", "cost", "oriented", "describe", "estimate"]

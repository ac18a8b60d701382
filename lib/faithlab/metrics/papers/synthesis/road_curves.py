"""ROAD: Remove And Debias (Rong, Leemann, Borisov, Kasneci & Kasneci, ICML 2022, "A Consistent and Efficient
Evaluation Strategy for Attribution Methods").

Removal metrics read a model on inputs it never saw: the removed pixels' pattern itself can carry the class (the
paper's "class information leakage"), so a map may score well for where it removes, not for what. F-Fidelity
answers by fine-tuning the model on random masks; ROAD keeps the model and removes better: every removed pixel is
imputed by noisy linear imputation (:func:`faithlab.perturb.noisy_linear_imputation`: the weighted mean of its eight
neighbours, 1/6 direct, 1/12 diagonal, plus N(0, 0.01²) noise), which leaks little of the pattern. Two curves:
MoRF removes the most relevant fraction f of the pixels (a faithful map makes the model's output fall fast), LeRF
the least relevant (it should stay high). Their areas are the means over the fractions, and the combined score is
``(LeRF area − MoRF area) / 2``, pytorch-grad-cam's ``ROADCombined``; the paper reads the curves of accuracy and
ranks the explainers on them.

Choices where the paper leaves freedom:

- pixels are ranked by the map summed over channels (the authors' ``rescale_channel``: a signed sum; min-max scaling
  changes no order), ties by lower pixel index (the authors add a fixed random 1e-4 perturbation per pixel);
- removal levels 10 %, 20 %, …, 90 % of the pixels (the paper's figures and pytorch-grad-cam's defaults), round(f·n)
  pixels at level f;
- the read-out is the softmax probability of the target (pytorch-grad-cam's ``ClassifierOutputSoftmaxTarget``);
  ``output="correct"`` with ``target=y`` gives the paper's accuracy curves;
- the noise is keyed to the sample (seed, global index) and the number of pixels removed, so scores do not depend
  on batch size, split or the other levels asked, and a map without a ranking (MoRF = LeRF) scores exactly 0;
- a grid whose every level removes no pixel or all of them (round(f·n) ∈ {0, n}) is refused: MoRF and LeRF would
  remove the same pixels and every map would score 0.

Comparing with pytorch-grad-cam (1.5.7's ``ROADCombined``, ``benchmarks/road_peer.py``): its percentile p removes
≈ (100 − p) % of the pixels, so its p = 10, …, 90 are our f = 0.9, …, 0.1. Four conventions differ:

- read-out: ours defaults to the probability (``output="prob"``, grad-cam's ``ClassifierOutputSoftmaxTarget``);
  grad-cam's ``ClassifierOutputTarget`` is the logit, ``output="logit"``. grad-cam takes its classes explicitly:
  pass the same as ``target`` (None here reads the prediction on the clean x).
- MoRF / LeRF: ``road_morf`` / ``road_lerf`` (``morf_area`` / ``lerf_area``) average the output after imputation;
  grad-cam's ``ROADMostRelevantFirstAverage`` / ``ROADLeastRelevantFirstAverage`` (``return_diff=True``, their
  default) average that output minus the clean one: the details' ``morf_diff`` / ``lerf_diff``. The combined score
  is the same in both forms (the clean output cancels).
- pixel counts: ours removes exactly round(f·n) pixels at level f; grad-cam removes those at or above
  ``np.percentile(cam, p)`` (MoRF; LeRF the same on ``1 − cam``), n − #{cam < percentile} of them: on n distinct
  values 103 of 1,024 at p = 90, where ours removes 102 at f = 0.1.
- ties: ours breaks them by lower pixel index (row-major) in both directions; grad-cam's threshold removes every
  pixel tied with it. On a CAM with a share z of exact zeros its MoRF removes every pixel for p below ≈ 100·z, and
  its LeRF the zeros alone for p above ≈ 100·(1 − z). (Its ``1 − cam`` is taken in the map's dtype and can tie
  values.)

To reproduce grad-cam's numbers: each set it removes holds whole groups of tied values, so it is our first c pixels
of the order, c its count, whatever the tie order. Per map, call :func:`road_details` with ``fractions=[c / n for c
in counts]`` (c/n gives c back) for its MoRF counts (n − #{cam < np.percentile(cam, p)} per p) and read
``morf_diff_curve``, and again for its LeRF counts (the same on ``1 − cam``) and read ``lerf_diff_curve`` (on maps of
distinct values the counts depend on n and p alone: one call for the batch and both directions); with ``output``
and ``target`` as above and ``noise=0`` on both sides (grad-cam's ``NoisyLinearImputer(noise=0.0)``) they agree to
float rounding. With the noise on, both add N(0, 0.01²) but draw it differently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from faithlab import _validate, perturb
from faithlab.metrics.papers.saco.cumulative import unit_salience
from faithlab.metrics.registry import Metric, plain, register
from faithlab.perturb.autobatch import BatchSize

__all__ = ["ROAD_FRACTIONS", "road", "road_details", "road_morf", "road_lerf"]

ROAD_FRACTIONS = tuple(i / 10 for i in range(1, 10))
"""ROAD's removal levels: 10 %, 20 %, …, 90 % of the pixels."""


def road_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *, target: torch.Tensor | None = None,
                 fractions: Sequence[float] = ROAD_FRACTIONS, noise: float = perturb.imputation.NOISE,
                 output: perturb.Output = "prob", reduce: str = "sum", units: perturb.Units | None = None,
                 generator: torch.Generator | int | None = 0, sample_index: torch.Tensor | Sequence[int] | None = None,
                 batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """ROAD's MoRF and LeRF curves of images and their areas (module docstring).

    x: images ``(B, C, H, W)``, floating point. attributions: maps in any layout ``perturb.check_attributions``
    accepts. target: ``(B,)`` int64 classes read at every level; None → the model's prediction ŷ on the clean x
    (pass ``target=y`` with ``output="correct"`` for the paper's accuracy). fractions: the removal levels, in
    [0, 1] (default 0.1, …, 0.9): level f removes exactly round(f·n) of the n units (half to even; f = c/n removes
    c), MoRF the highest-ranked, LeRF the lowest, equal values by lower unit index in both (pixels row-major: not
    pytorch-grad-cam's percentile threshold, module docstring); ValueError if every level removes 0 or all n.
    noise: the imputation noise's standard deviation (0: noise-free). output: the read-out (``perturb.OUTPUTS`` or a
    callable; default ``"prob"``, grad-cam's ``ClassifierOutputSoftmaxTarget``; ``"logit"`` is its
    ``ClassifierOutputTarget``). reduce: how a pixel's salience is read from the map (default the signed sum over
    channels). units: default pixels. generator, sample_index: the noise's seed and each sample's global index (keyed
    noise). batch_size: forward-pass chunk (also the imputation's); results do not depend on it beyond float
    rounding.

    Returns ``road`` ``(B,)`` = (``lerf_area`` − ``morf_area``) / 2 (higher: more faithful), ``morf_area`` and
    ``lerf_area`` ``(B,)`` (the curves' means over the levels: outputs after imputation), ``morf`` and ``lerf``
    ``(B, F)``, ``clean`` ``(B,)`` (the read-out on x), ``morf_diff`` and ``lerf_diff`` ``(B,)`` (``morf_area`` −
    ``clean``, ``lerf_area`` − ``clean``: grad-cam's MoRF / LeRF averages; their difference halved is ``road``
    too), ``morf_diff_curve`` and ``lerf_diff_curve`` ``(B, F)`` (``morf`` − ``clean`` and ``lerf`` − ``clean`` per
    level: its per-percentile values), ``fractions`` ``(F,)`` and ``constant`` ``(B,)`` (maps without a ranking,
    their pixels removed in index order).
    """
    _validate.tensor(x, "x", ndim=4, floating=True)
    f = _validate.fractions(fractions, "fractions")
    sigma = _validate.number(noise, "noise")
    if not 0 <= sigma < float("inf"):
        raise ValueError(f"noise must be a finite standard deviation ≥ 0, got {noise!r}")
    if isinstance(output, str) and output == "predicted":
        raise ValueError("output='predicted' gives classes, which have no mean over the levels: pass 'prob', "
                         "'logit', 'correct', 'log_odds' or a callable")
    units, scores = unit_salience(x, attributions, units, reduce)
    # every level removing no unit or all n: MoRF and LeRF remove the same units, ROAD is 0 for every map
    perturb.check_informative(torch.round(f * units.n), units.n, "fractions", fractions)
    constant = perturb.warn_constant(perturb.constant_maps(scores), "their pixels are removed in index order; "
                                     "flagged in the details' 'constant'")
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the imputation noise",
                                 device=x.device)  # checked even when the noise is off
    reference = perturb.NoisyLinear(sigma, seeds=seeds if sigma > 0 else None)
    runner = perturb.Removal(model, x, units=units, reference=reference, output=output, target=target,
                             batch_size=batch_size)
    morf, lerf = runner.curves(None, f, orders=(perturb.order(scores, "morf"), perturb.order(scores, "lerf")))
    clean = runner.clean()
    morf_area, lerf_area = morf.mean(dim=1), lerf.mean(dim=1)
    level_clean = clean.unsqueeze(1)   # (B, 1, …): against every level
    return {"road": (lerf_area - morf_area) / 2, "morf_area": morf_area, "lerf_area": lerf_area, "morf": morf,
            "lerf": lerf, "clean": clean, "morf_diff": morf_area - clean, "lerf_diff": lerf_area - clean,
            "morf_diff_curve": morf - level_clean, "lerf_diff_curve": lerf - level_clean,
            "fractions": f.to(morf.device, morf.dtype), "constant": constant}


road = plain(road_details, "road", """
    ROAD's combined score ``(B,)`` (Rong et al. 2022): (mean over the levels of the read-out as the least relevant
    pixels are removed − the same as the most relevant are removed) / 2, removed pixels imputed by noisy linear
    imputation. Higher = more faithful. pytorch-grad-cam's ``ROADCombined``, but: read-out the probability by
    default (its ``ClassifierOutputTarget`` is ``output="logit"``), exactly round(f·n) pixels per level with ties by
    lower pixel index (its percentile threshold removes whole tie groups); the module docstring says how to
    reproduce its numbers. Arguments as in :func:`road_details`, which also returns the curves.
    """)


road_morf = plain(road_details, "morf_area", """
    ROAD's MoRF area ``(B,)``: the mean over the levels of the read-out (default the probability) after the most
    relevant pixels are imputed away, the output itself: pytorch-grad-cam's ``ROADMostRelevantFirstAverage`` is that
    minus the clean output (:func:`road_details`' ``morf_diff``); pixel counts and ties as in :func:`road`. Lower =
    more faithful. Arguments as in :func:`road_details`.
    """, name="road_morf")
road_lerf = plain(road_details, "lerf_area", """
    ROAD's LeRF area ``(B,)``: the mean over the levels of the read-out (default the probability) after the least
    relevant pixels are imputed away, the output itself: pytorch-grad-cam's ``ROADLeastRelevantFirstAverage`` is that
    minus the clean output (:func:`road_details`' ``lerf_diff``); pixel counts and ties as in :func:`road`. Higher =
    more faithful. Arguments as in :func:`road_details`.
    """, name="road_lerf")


# Grids whose every level removes no pixel or every pixel (refused: the same score for every map).
_SAME_FOR_EVERY_MAP = ({"fractions": [0.0]}, {"fractions": [1.0]}, {"fractions": [0.0, 1.0]})

# No evaluate options: an option name is one keyword with one default across the registry (``fractions`` is
# Few-class's and the cumulative metrics'), and ROAD's levels and noise are the paper's; call the function for others.
register(Metric("road", "ROAD", "synthesis", True, road, details=road_details, score="road", group="road",
                needs=("images",), degenerate=_SAME_FOR_EVERY_MAP,
                doc="LeRF minus MoRF output as pixels are imputed away (ROAD), halved"))
register(Metric("road_morf", "ROAD MoRF", "synthesis", False, road_morf, details=road_details, score="morf_area",
                group="road", needs=("images",), degenerate=_SAME_FOR_EVERY_MAP,
                doc="mean output as the most relevant pixels are imputed away (ROAD)"))
register(Metric("road_lerf", "ROAD LeRF", "synthesis", True, road_lerf, details=road_details, score="lerf_area",
                group="road", needs=("images",), degenerate=_SAME_FOR_EVERY_MAP,
                doc="mean output as the least relevant pixels are imputed away (ROAD)"))

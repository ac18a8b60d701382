"""Explainers: ``explain(model, x, target, method=...)`` and a public ``register`` for your own method.

One concept per module: ``core`` (the registry, ``explain`` and the helpers methods share), ``gradients``
(captum-backed gradient and perturbation methods, random), ``cams`` (Grad-CAM, LayerCAM), ``perturbation`` (RISE,
Extremal Perturbations, Excitation Backprop), ``bottleneck`` (Information Bottleneck Attribution), ``vit_attention``
(ViT attention maps, conservative LRP), ``vit_lrp`` (Chefer et al.'s relevance propagation), ``xrai`` (PAIR's XRAI
over any other method's map), ``ground_truth`` (ground-truth and degraded maps). Importing this package registers
every method of its modules.
"""

import warnings

from tqdm import TqdmWarning

with warnings.catch_warnings():
    # captum imports tqdm.auto, which warns in a Jupyter kernel without ipywidgets ("IProgress not found");
    # faithlab never asks captum for a progress bar, so that warning says nothing about our runs.
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    import captum.attr  # noqa: F401

from faithlab.explainers import bottleneck, cams, gradients, perturbation, vit_attention, vit_lrp, xrai  # noqa: E402, F401  (they register methods)
from faithlab.explainers.bottleneck import BottleneckStatistics, iba_statistics  # noqa: E402
from faithlab.explainers.core import available, explain, explainer, is_random, register  # noqa: E402
from faithlab.explainers.ground_truth import degrade, ground_truth  # noqa: E402
from faithlab.explainers.vit_attention import (  # noqa: E402
    ATTENTION_METHODS, LRP_METHODS, METHODS, attention_gradcam, conservative_forward, raw_attention, rollout,
    to_pixels, transformer_mm)
from faithlab.explainers.vit_lrp import Relevance, attcat, linear_alpha_beta, relevance  # noqa: E402

__all__ = ["explain", "explainer", "register", "available", "is_random", "ground_truth", "degrade", "raw_attention",
           "rollout", "attention_gradcam", "transformer_mm", "to_pixels", "conservative_forward", "relevance", "Relevance",
           "linear_alpha_beta", "attcat", "METHODS", "ATTENTION_METHODS", "LRP_METHODS", "iba_statistics",
           "BottleneckStatistics"]

"""Explainers: ``explain(model, x, target, method=...)`` and a public ``register`` for your own method.

One algorithm per module, each declaring its method name(s) with ``@register`` beside its function; importing this
package imports every one of them, which registers them. ``core`` holds the registry, ``explain``, ``explainer``
and the random draws a method makes; it lists no method.

* Gradients (captum): ``saliency``, ``gradient``, ``input_x_gradient``, ``integrated_gradients``, ``smoothgrad``
  (SmoothGrad, SmoothGrad² and F-Fidelity's SG-SQ IG), ``guided_backprop``, ``deconvolution``,
  ``expected_gradients``; perturbation: ``occlusion``, ``rise``, ``extremal_perturbation`` (TorchRay); the floor:
  ``random_map`` (method "random").
* Layer maps: ``gradcam``, ``layercam``, ``excitation_backprop`` (TorchRay), ``bottleneck`` (Information Bottleneck
  Attribution, method "iba").
* ViT only (names in :data:`METHODS`): ``vit_raw_attention``, ``vit_rollout``, ``vit_attention_gradcam``,
  ``vit_transformer_mm``, ``vit_conservative_lrp``, and on Chefer et al.'s relevance pass ``vit_lrp`` (the pass and
  method "lrp"), ``vit_partial_lrp``, ``vit_transformer_attribution``, ``vit_attcat``. The ``vit_`` prefix also keeps
  a module's name apart from the public function it defines (``rollout``, ``attcat``, ...).
* Over another method's map: ``xrai`` (PAIR's XRAI).
* Shared, registering nothing: ``vit`` (the ViT methods' names, attention recording, token maps to pixels),
  ``_common`` (argument checks, reference inputs, CAM layers), ``_captum`` (captum's classes, imported quietly),
  ``_torchray`` (TorchRay glue); ``ground_truth``
  (ground-truth and degraded maps).
"""

from faithlab.explainers import (  # noqa: F401  (importing an algorithm module registers its method)
    bottleneck, deconvolution, excitation_backprop, expected_gradients, extremal_perturbation, gradcam, gradient,
    guided_backprop, input_x_gradient, integrated_gradients, layercam, occlusion, random_map, rise, saliency,
    smoothgrad, vit_attcat, vit_attention_gradcam, vit_conservative_lrp, vit_lrp, vit_partial_lrp, vit_raw_attention,
    vit_rollout, vit_transformer_attribution, vit_transformer_mm, xrai)
from faithlab.explainers.bottleneck import BottleneckStatistics, iba_statistics
from faithlab.explainers.core import available, explain, explainer, is_random, register
from faithlab.explainers.ground_truth import degrade, ground_truth
from faithlab.explainers.vit import ATTENTION_METHODS, LRP_METHODS, METHODS, to_pixels
from faithlab.explainers.vit_attcat import attcat
from faithlab.explainers.vit_attention_gradcam import attention_gradcam
from faithlab.explainers.vit_conservative_lrp import conservative_forward
from faithlab.explainers.vit_lrp import Relevance, linear_alpha_beta, relevance
from faithlab.explainers.vit_raw_attention import raw_attention
from faithlab.explainers.vit_rollout import rollout
from faithlab.explainers.vit_transformer_mm import transformer_mm

__all__ = ["explain", "explainer", "register", "available", "is_random", "ground_truth", "degrade", "raw_attention",
           "rollout", "attention_gradcam", "transformer_mm", "to_pixels", "conservative_forward", "relevance",
           "Relevance", "linear_alpha_beta", "attcat", "METHODS", "ATTENTION_METHODS", "LRP_METHODS", "iba_statistics",
           "BottleneckStatistics"]

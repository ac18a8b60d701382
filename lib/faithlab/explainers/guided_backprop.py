"""Guided backpropagation (Springenberg et al. 2015), registered as ``explain(..., method="guided_backprop")``:
captum's ``GuidedBackprop``, which overrides the gradient of every ``nn.ReLU`` module."""

from __future__ import annotations

from faithlab.explainers._captum import GuidedBackprop
from faithlab.explainers._common import forward_args, relu_hooks_notice_off
from faithlab.explainers.core import register


@register("guided_backprop")
def _guided_backprop(model, x, target, extra, *, batch_size, generator):
    """Guided backpropagation (needs nn.ReLU modules, not functional relu)."""
    with relu_hooks_notice_off():
        return GuidedBackprop(model).attribute(x, target=target, additional_forward_args=forward_args(extra))

"""Deconvolution (Zeiler and Fergus 2014), registered as ``explain(..., method="deconvolution")``: captum's
``Deconvolution``, which overrides the gradient of every ``nn.ReLU`` module."""

from __future__ import annotations

from faithlab.explainers._captum import Deconvolution
from faithlab.explainers._common import forward_args, relu_hooks_notice_off
from faithlab.explainers.core import register


@register("deconvolution")
def _deconvolution(model, x, target, extra, *, batch_size, generator):
    """Deconvolution (Zeiler & Fergus; needs nn.ReLU modules)."""
    with relu_hooks_notice_off():
        return Deconvolution(model).attribute(x, target=target, additional_forward_args=forward_args(extra))

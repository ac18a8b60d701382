"""Saliency (Simonyan, Vedaldi and Zisserman 2014), registered as ``explain(..., method="saliency")``: the gradient's
magnitude |∂f_target/∂x|, by captum's ``Saliency``."""

from __future__ import annotations

from faithlab.explainers._captum import Saliency
from faithlab.explainers._common import forward_args
from faithlab.explainers.core import register


@register("saliency")
def _saliency(model, x, target, extra, *, batch_size, generator):
    """|∂f_target/∂x| (Simonyan et al.)."""
    return Saliency(model).attribute(x, target=target, abs=True, additional_forward_args=forward_args(extra))

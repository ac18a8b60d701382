"""Input × gradient, registered as ``explain(..., method="input_x_gradient")``: x ⊙ ∂f_target/∂x by captum's
``InputXGradient``."""

from __future__ import annotations

from faithlab.explainers._captum import InputXGradient
from faithlab.explainers._common import forward_args
from faithlab.explainers.core import register


@register("input_x_gradient")
def _input_x_gradient(model, x, target, extra, *, batch_size, generator):
    """x ⊙ ∂f_target/∂x."""
    return InputXGradient(model).attribute(x, target=target, additional_forward_args=forward_args(extra))

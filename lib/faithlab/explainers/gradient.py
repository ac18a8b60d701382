"""The signed gradient, registered as ``explain(..., method="gradient")``: ∂f_target/∂x by captum's ``Saliency``
without the absolute value (Few-class Fidelity's "BP")."""

from __future__ import annotations

from faithlab.explainers._captum import Saliency
from faithlab.explainers._common import forward_args
from faithlab.explainers.core import register


@register("gradient")
def _gradient(model, x, target, extra, *, batch_size, generator):
    """Signed gradient ∂f_target/∂x ("BP" in Few-class Fidelity)."""
    return Saliency(model).attribute(x, target=target, abs=False, additional_forward_args=forward_args(extra))

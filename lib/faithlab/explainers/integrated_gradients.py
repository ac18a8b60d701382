"""Integrated gradients (Sundararajan, Taly and Yan 2017), registered as
``explain(..., method="integrated_gradients")``: captum's ``IntegratedGradients`` from a reference input, with the
trapezoid rule rescaled so that completeness holds."""

from __future__ import annotations

from faithlab.explainers._captum import IntegratedGradients
from faithlab import _validate
from faithlab.explainers._common import Baseline, forward_args, reference
from faithlab.explainers.core import register

_INTEGRATIONS = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")  # captum's


@register("integrated_gradients")
def _integrated_gradients(model, x, target, extra, *, batch_size, generator, baseline: Baseline = "zero",
                          n_steps: int = 50, integration: str = "gausslegendre"):
    """Integrated gradients from ``baseline`` (finite); ``integration`` is captum's ``method``, one of
    ``_INTEGRATIONS`` (the Riemann rules need ``n_steps`` >= 2)."""
    if not isinstance(integration, str) or integration not in _INTEGRATIONS:
        raise ValueError(f"integration must be one of {_INTEGRATIONS}, got {integration!r}")
    n = _validate.positive_int(n_steps, "n_steps")
    if n < 2 and integration != "gausslegendre":
        raise ValueError(f"n_steps must be >= 2 for integration {integration!r}, got {n}")
    attr = IntegratedGradients(model).attribute(
        x, baselines=reference(x, baseline), target=target, additional_forward_args=forward_args(extra), n_steps=n,
        method=integration, internal_batch_size=max(batch_size, len(x)))
    # captum 0.9's trapezoid weights are 1/n (halved at the ends) on linspace(0, 1, n), summing to (n−1)/n, not 1;
    # rescale so that completeness holds (the true trapezoid rule uses 1/(n−1)).
    return attr * (n / (n - 1)) if integration == "riemann_trapezoid" else attr

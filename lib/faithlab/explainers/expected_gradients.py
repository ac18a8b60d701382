"""Expected gradients (Erion et al. 2021; SHAP's GradientExplainer), registered as
``explain(..., method="expected_gradients")``: captum's GradientShap without noise, its references and interpolation
points drawn from the ``generator`` (captum draws them from the global RNG)."""

from __future__ import annotations

import torch
from faithlab.explainers._captum import Saliency
from faithlab import _validate
from faithlab.explainers._common import forward_args, repeat_rows
from faithlab.explainers.core import chunks, leaf, register, uniform


@register("expected_gradients", random=True)
def _expected_gradients(model, x, target, extra, *, batch_size, generator, background: torch.Tensor,
                        n_samples: int = 20):
    """Expected gradients (captum's GradientShap without noise; SHAP GradientExplainer): mean over ``n_samples``
    draws of ∂f(r + α(x − r)) ⊙ (x − r), r uniform from ``background`` (N, *x.shape[1:]), α ~ U(0, 1).

    captum's GradientShap draws r and α from the global RNG; here both come from ``generator``."""
    bg = _validate.tensor(background, "background", floating=True)
    if bg.ndim == 0 or bg.shape[1:] != x.shape[1:]:
        raise ValueError(f"background must be shaped (N, {', '.join(map(str, x.shape[1:]))}), got {tuple(bg.shape)}")
    _validate.finite(bg, "background")
    bg = bg.to(x)
    n = _validate.positive_int(n_samples, "n_samples")
    saliency = Saliency(model)

    def sampled_maps(xc, tc, ec, gc):
        b = len(xc)
        u = uniform((b, n, 2), gc, xc.device)  # one contiguous block per input: chunking-invariant
        ref = bg[(u[..., 0] * len(bg)).long().clamp_max(len(bg) - 1)]
        alpha = u[..., 1].to(xc.dtype).view(b, n, *[1] * (xc.ndim - 1))
        delta = xc.detach().unsqueeze(1) - ref
        points = leaf((ref + alpha * delta).flatten(0, 1))
        grads = saliency.attribute(points, target=repeat_rows(tc, n), abs=False,
                                   additional_forward_args=forward_args(repeat_rows(ec, n)))
        return (grads.unflatten(0, (b, n)) * delta).mean(1)

    return chunks(max(1, batch_size // n), sampled_maps, x, target, extra, generator)

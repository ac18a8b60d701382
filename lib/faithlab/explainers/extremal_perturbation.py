"""Extremal Perturbations (Fong, Patrick and Vedaldi 2019), registered as
``explain(..., method="extremal_perturbation")``: TorchRay's optimised smooth mask of a given area, "preserve"
variant with the blur perturbation. Returns ``(B, 1, H, W)`` maps for images ``(B, C, H, W)``, higher = more
important."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab._optional import require
from faithlab.explainers._common import need_images, real
from faithlab.explainers._torchray import NonFinite, check_model, finite_logits_on, keeping_requires_grad, quiet
from faithlab.explainers.core import register


@register("extremal_perturbation")
def _extremal_perturbation(model, x, target, extra, *, batch_size, generator, area: float = 0.1,
                           max_iter: int = 800, step: int | None = None, sigma: float | None = None):
    """Extremal Perturbations (Fong et al. 2019, TorchRay's ``extremal_perturbation``, "preserve" variant, blur
    perturbation): the smooth mask of area ``area`` that keeps the target's score highest, optimised for
    ``max_iter`` steps. ``step`` and ``sigma`` of the mask generator default to TorchRay's 7 and 21 px scaled from
    224 px to the image size. Deterministic (TorchRay's jitter flips the image on even steps).

    TorchRay optimises one image's masks at a time (its ``areas`` argument is the batch), so images are explained
    one by one; the model's ``requires_grad`` flags, which TorchRay switches off, are restored afterwards (also when
    a call raises)."""
    with quiet():
        require("torchray", "method 'extremal_perturbation'")
        from torchray.attribution.extremal_perturbation import (
            extremal_perturbation,
            simple_reward,
        )

    need_images(x, "extremal_perturbation")
    check_model(model, extra, "extremal_perturbation")
    if not finite_logits_on(model, x):
        return torch.full((x.shape[0], 1, *x.shape[-2:]), float("nan"), dtype=x.dtype, device=x.device)
    area = real(area, "area")
    if not 0 < area < 1:
        raise ValueError(f"area must lie in (0, 1), got {area!r}")
    max_iter = _validate.positive_int(max_iter, "max_iter")
    side = min(x.shape[-2:])
    step = _validate.positive_int(step, "step") if step is not None else max(1, round(7 * side / 224))
    sigma = real(sigma, "sigma") if sigma is not None else 21 * side / 224
    if not sigma > 0:  # TorchRay divides by sigma
        raise ValueError(f"sigma must be > 0, got {sigma!r}")

    def reward(y, target, variant):
        # NaN/inf logits would turn the mask into NaN, on which TorchRay's next step fails with an indexing error
        # (one synchronisation per step; TorchRay already makes one, recording the energy on the CPU)
        if not bool(torch.isfinite(y.detach()).all()):
            raise NonFinite
        return simple_reward(y, target, variant)

    maps = []
    try:
        with quiet(), torch.enable_grad(), keeping_requires_grad(model):
            for i in range(x.shape[0]):  # TorchRay's optimiser holds one image's masks (see the docstring)
                mask, _ = extremal_perturbation(model, x[i : i + 1].detach(), int(target[i]), areas=[area],
                                                max_iter=max_iter, step=step, sigma=sigma, reward_func=reward)
                maps.append(mask.detach())
    except NonFinite:
        # a NaN map: explain has seen the logits and raises, naming the samples (on x, or on the masked inputs)
        return torch.full((x.shape[0], 1, *x.shape[-2:]), float("nan"), dtype=x.dtype, device=x.device)
    out = torch.cat(maps)
    if out.shape[-2:] != x.shape[-2:]:
        out = F.interpolate(out, size=x.shape[-2:], mode="bilinear", align_corners=False)
    return out.to(x.dtype)

"""Perturbation- and excitation-based image explainers of TRACE's Table 1, registered with
:func:`faithlab.explainers.explain`: RISE (ours, batched and seeded), Extremal Perturbations and Excitation Backprop
(TorchRay). Each returns ``(B, 1, H, W)`` maps for images ``(B, C, H, W)``, higher = more important."""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab._optional import require
from faithlab.explainers.cams import cam_output, resolve_layer
from faithlab.explainers.core import real, register, uniform


def _images(x: torch.Tensor, method: str) -> None:
    if x.ndim != 4:
        raise ValueError(f"method {method!r} needs images (B, C, H, W), got x of shape {tuple(x.shape)}")


def _torchray_model(model, extra, method: str) -> None:
    """TorchRay reads the model's parameters and calls it as model(x)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"method {method!r} needs an nn.Module model (TorchRay reads its parameters), got "
                        f"{type(model).__name__}")
    if extra is not None:
        raise ValueError(f"method {method!r} takes image models called as model(x) only")


def _finite_logits_on(model, x: torch.Tensor) -> bool:
    """One plain forward pass on x before TorchRay runs: ``explain``'s logit check sees it (shape, rows, target range
    raise at once, naming the argument), and NaN/inf logits are reported as False so that the caller returns a NaN
    map, which ``explain`` turns into its error naming the samples. TorchRay would otherwise fail first with its
    own indexing errors."""
    with torch.no_grad():
        logits = model(x.detach())
    return bool(torch.isfinite(logits).all())


class _NonFinite(Exception):
    """Raised from TorchRay's reward when the logits are NaN/inf, to stop its optimisation."""


@contextmanager
def _torchray():
    """TorchRay 1.0 calls torch.meshgrid without ``indexing`` (torch warns on every call; the default it warns about,
    "ij", is the one TorchRay relies on) and reads its version with the deprecated ``importlib.resources.open_text``
    on import; neither says anything about our maps, so both warnings are silenced while TorchRay runs."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"torch\.meshgrid: in an upcoming release", category=UserWarning)
        warnings.filterwarnings("ignore", message=r"open_text is deprecated", category=DeprecationWarning)
        yield


@contextmanager
def _keeping_requires_grad(model):
    """TorchRay switches off ``requires_grad`` on the model's parameters (and restores it only when it returns
    normally); put every flag back as it was, also when the model or our logit check raises mid-call."""
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    flags = [q.requires_grad for q in params]
    try:
        yield
    finally:
        for q, flag in zip(params, flags):
            q.requires_grad_(flag)


# ---------------------------------------------------------------------------------------------------- RISE
@register("rise", random=True)
def _rise(model, x, target, extra, *, batch_size, generator, n_masks: int = 4000, cell: int = 7, p: float = 0.5):
    """RISE (Petsiuk et al. 2018): Σ_m softmax(f(x ⊙ M_m))[target] · M_m / (n_masks · p).

    Each mask keeps every cell of a ``cell``×``cell`` grid with probability ``p``, is upsampled bilinearly to
    (cell + 1) × ⌈H/cell⌉ pixels and cropped to H×W at a random shift; masked pixels become 0 in the model's input
    space (the dataset mean for normalised images). Masks are drawn per image from ``generator`` in sample order
    (cells and shift of one image in one draw), so the maps do not depend on ``batch_size``; TorchRay's RISE draws
    from the global RNG, hence ours. The masked inputs of all images go through the model ``batch_size`` at a time.
    """
    _images(x, "rise")
    n_masks, cell = _validate.positive_int(n_masks, "n_masks"), _validate.positive_int(cell, "cell")
    p = real(p, "p")
    if not 0 < p <= 1:
        raise ValueError(f"p must lie in (0, 1], got {p!r}")
    b, _, h, w = x.shape
    x = x.detach()
    draws = uniform((b, n_masks, cell * cell + 2), generator, x.device)  # per image: cells, then the 2 shifts
    grid = (draws[..., : cell * cell] < p).to(x.dtype).view(b, n_masks, cell, cell)
    ch, cw = math.ceil(h / cell), math.ceil(w / cell)
    shift_h = (draws[..., -2] * ch).long().clamp_max(ch - 1)  # (b, n_masks)
    shift_w = (draws[..., -1] * cw).long().clamp_max(cw - 1)
    per_call = max(1, batch_size // b)  # masks per forward call: b · per_call ≤ batch_size inputs
    saliency = torch.zeros(b, h, w, dtype=x.dtype, device=x.device)
    rows_h, rows_w = torch.arange(h, device=x.device), torch.arange(w, device=x.device)
    for m0 in range(0, n_masks, per_call):
        m1 = min(n_masks, m0 + per_call)
        up = F.interpolate(grid[:, m0:m1].reshape(-1, 1, cell, cell), size=((cell + 1) * ch, (cell + 1) * cw),
                           mode="bilinear", align_corners=False).view(b, m1 - m0, (cell + 1) * ch, (cell + 1) * cw)
        hi = (shift_h[:, m0:m1, None] + rows_h)[..., None].expand(-1, -1, -1, up.shape[-1])
        masks = up.gather(2, hi)
        wi = (shift_w[:, m0:m1, None] + rows_w)[:, :, None, :].expand(-1, -1, h, -1)
        masks = masks.gather(3, wi)  # (b, m, h, w)
        inputs = (x[:, None] * masks[:, :, None]).flatten(0, 1)
        with torch.no_grad():
            logits = model(inputs) if extra is None else model(inputs, extra.repeat_interleave(m1 - m0, 0))
            prob = logits.softmax(1).gather(1, target.repeat_interleave(m1 - m0)[:, None]).view(b, m1 - m0)
        saliency += (prob.to(x.dtype)[..., None, None] * masks).sum(1)
    return (saliency / (n_masks * p))[:, None]


# ------------------------------------------------------------------------------------ Extremal Perturbations
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
    with _torchray():
        require("torchray", "method 'extremal_perturbation'")
        from torchray.attribution.extremal_perturbation import (
            extremal_perturbation,
            simple_reward,
        )

    _images(x, "extremal_perturbation")
    _torchray_model(model, extra, "extremal_perturbation")
    if not _finite_logits_on(model, x):
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
            raise _NonFinite
        return simple_reward(y, target, variant)

    maps = []
    try:
        with _torchray(), torch.enable_grad(), _keeping_requires_grad(model):
            for i in range(x.shape[0]):  # TorchRay's optimiser holds one image's masks (see the docstring)
                mask, _ = extremal_perturbation(model, x[i : i + 1].detach(), int(target[i]), areas=[area],
                                                max_iter=max_iter, step=step, sigma=sigma, reward_func=reward)
                maps.append(mask.detach())
    except _NonFinite:
        # a NaN map: explain has seen the logits and raises, naming the samples (on x, or on the masked inputs)
        return torch.full((x.shape[0], 1, *x.shape[-2:]), float("nan"), dtype=x.dtype, device=x.device)
    out = torch.cat(maps)
    if out.shape[-2:] != x.shape[-2:]:
        out = F.interpolate(out, size=x.shape[-2:], mode="bilinear", align_corners=False)
    return out.to(x.dtype)


# ------------------------------------------------------------------------------------- Excitation Backprop
@register("excitation_backprop")
def _excitation_backprop(model, x, target, extra, *, batch_size, generator, layer: torch.nn.Module | str | None = None):
    """Excitation Backprop (Zhang et al. 2016, TorchRay's ``excitation_backprop``; not the contrastive variant):
    the marginal winning probability of the target reaching ``layer`` (default ``model.cam_layer``), summed over
    channels and upsampled to the image like Grad-CAM. TorchRay rewires convolutions, linear layers, pooling and
    normalisation during the pass; residual additions of our ResNets pass the excitation unchanged (TorchRay only
    rewires torchvision's ResNets). The rewiring swaps functions of ``torch.nn.functional`` process-wide for the
    duration of the pass (TorchRay's patching; not thread-safe), and the ``requires_grad`` flags TorchRay switches off
    are restored, also when a call raises."""
    with _torchray():
        require("torchray", "method 'excitation_backprop'")
        from torchray.attribution.excitation_backprop import excitation_backprop

    _images(x, "excitation_backprop")
    _torchray_model(model, extra, "excitation_backprop")
    if not _finite_logits_on(model, x):
        return torch.full((x.shape[0], 1, *x.shape[-2:]), float("nan"), dtype=x.dtype, device=x.device)
    module = resolve_layer(model, layer)
    with _torchray(), torch.enable_grad(), _keeping_requires_grad(model):
        sal = excitation_backprop(model, x.detach(), target, saliency_layer=module)
    return cam_output(sal.detach().to(x.dtype), x, normalize=False)

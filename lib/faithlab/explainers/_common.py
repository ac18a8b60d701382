"""Helpers that several explainer algorithms share (the registry, ``explain`` and the random draws of a method are
:mod:`faithlab.explainers.core`): checks of a method's arguments, captum's per-row arguments, the reference input of
gradient methods, the layer a CAM reads and its upsampling to the input, and the notice captum gives around its
modified-ReLU methods. Registers no method."""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from faithlab import _validate

Baseline = str | float | torch.Tensor


# ---------------------------------------------------------------------------------------------- arguments
def real(value, name: str, *, minimum: float | None = None) -> float:
    """A finite real number (int, float or a one-element real tensor; not bool), at least ``minimum``; else a
    TypeError/ValueError naming ``name``."""
    v = _validate.number(value, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return v


def need_images(x: torch.Tensor, method: str) -> None:
    """Refuse anything but a batch of images (B, C, H, W) for ``method``."""
    if x.ndim != 4:
        raise ValueError(f"method {method!r} needs images (B, C, H, W), got x of shape {tuple(x.shape)}")


def repeat_rows(t: torch.Tensor | None, n: int) -> torch.Tensor | None:
    """Each row of t repeated n times in place (None passes through)."""
    return None if t is None else t.repeat_interleave(n, dim=0)


def forward_args(extra: torch.Tensor | None) -> tuple | None:
    """captum's ``additional_forward_args`` for the per-row extra argument."""
    return None if extra is None else (extra,)


# ------------------------------------------------------------------------------------------ reference input
def reference(x: torch.Tensor, baseline: Baseline) -> torch.Tensor:
    """IG reference: "zero", "min"/"max" (per-sample minimum/maximum of x), a number, or a tensor broadcastable to x."""
    x = x.detach()
    if isinstance(baseline, torch.Tensor):
        _validate.finite(baseline, "baseline")
        try:
            return baseline.to(x).expand_as(x)
        except RuntimeError:
            raise ValueError(f"baseline of shape {tuple(baseline.shape)} does not broadcast to x "
                             f"{tuple(x.shape)}") from None
    if isinstance(baseline, str) and baseline in ("min", "max"):
        flat = x.flatten(1)
        value = flat.amin(1) if baseline == "min" else flat.amax(1)
        return value.view(-1, *[1] * (x.ndim - 1)).expand_as(x)
    if isinstance(baseline, str) and baseline == "zero":
        return torch.zeros_like(x)
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool):
        return torch.full_like(x, real(baseline, "baseline"))
    raise ValueError(f"baseline must be 'zero', 'min', 'max', a number or a tensor, got {baseline!r}")


# --------------------------------------------------------------------------------------------- CAM layers
def resolve_layer(model: nn.Module, layer: nn.Module | str | None) -> nn.Module:
    """Resolve a CAM layer: a module, a dotted submodule name, or, when ``layer`` is None, ``model.cam_layer`` or the
    layer :func:`faithlab.models.cam_layer` chooses for the architecture (ValueError for a ViT, naming its methods)."""
    if layer is None:
        layer = getattr(model, "cam_layer", None)
        if layer is None:
            from faithlab.models.layers import cam_layer

            layer = cam_layer(model)
    if isinstance(layer, str):
        try:
            return model.get_submodule(layer)
        except AttributeError:
            raise ValueError(f"layer {layer!r} is not a submodule of model") from None
    if not isinstance(layer, nn.Module):
        raise TypeError(f"layer must be an nn.Module or a dotted name, got {type(layer).__name__}")
    return layer


def cam_output(cam: torch.Tensor, x: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Upsample a (b, 1, h, w) / (b, 1, t) CAM to x's size (bilinear / linear), optionally min-max to [0, 1]."""
    if x.ndim == 4 and cam.ndim == 4:
        out = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    elif x.ndim == 3 and cam.ndim == 3:  # series (B, T, C): the conv layer is (B, C', T')
        out = F.interpolate(cam, size=x.shape[1], mode="linear", align_corners=False).transpose(1, 2)
    else:
        raise ValueError(f"CAM methods need images (B, C, H, W) or series (B, T, C) with a matching conv layer; "
                         f"got x {tuple(x.shape)} and a layer map {tuple(cam.shape)}")
    if normalize:  # pytorch-grad-cam's scaling: (cam - min) / (max - min + 1e-7), per sample
        flat = out.flatten(1)
        lo, hi = flat.amin(1), flat.amax(1)
        shape = (-1, *[1] * (out.ndim - 1))
        out = (out - lo.view(shape)) / (hi - lo + 1e-7).view(shape)
    return out


# ----------------------------------------------------------------------------------------- captum notices
@contextlib.contextmanager
def relu_hooks_notice_off():
    """Ignore the one notice captum's GuidedBackprop and Deconvolution give on every ``attribute`` call.

    Both (``ModifiedReluGradientAttribution.attribute``) warn "Setting backward hooks on ReLU activations. The hooks
    will be removed after the attribution is finished" unconditionally: overriding the ReLU gradients with hooks is
    what the two methods are, no argument avoids it, and captum removes the hooks itself. The notice names no
    problem of the call, yet it printed captum's installed path on the book's pages. Only that message, from captum's
    module, is ignored, and only around these calls; every other warning still shows.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Setting backward hooks on ReLU activations", category=UserWarning,
                                module=r"captum\.attr\._core\.guided_backprop_deconvnet")
        yield

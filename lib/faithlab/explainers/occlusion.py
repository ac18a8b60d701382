"""Occlusion (Zeiler and Fergus 2014), registered as ``explain(..., method="occlusion")``: captum's ``Occlusion``
with windows over images, series and embeddings."""

from __future__ import annotations

from faithlab.explainers._captum import Occlusion
from faithlab import _validate
from faithlab.explainers._common import forward_args, real
from faithlab.explainers.core import register


@register("occlusion")
def _occlusion(model, x, target, extra, *, batch_size, generator, window: int = 4, stride: int | None = None,
               baseline: float = 0.0):
    """Occlusion (captum): drop in f_target when a ``window``-wide square (images) / span (series, embeddings) of
    all channels is set to ``baseline`` (a finite number), averaged over the windows covering each element.
    ``window`` may not exceed the input; ``stride`` (default ``window``) may not exceed ``window``."""
    w = _validate.positive_int(window, "window")
    s = w if stride is None else _validate.positive_int(stride, "stride")
    value = real(baseline, "baseline")
    if x.ndim == 4:
        shape, strides, sizes = (x.shape[1], w, w), (x.shape[1], s, s), tuple(x.shape[2:])
    elif x.ndim == 3:
        shape, strides, sizes = (w, x.shape[2]), (s, x.shape[2]), tuple(x.shape[1:2])
    elif x.ndim == 2:
        shape, strides, sizes = (w,), (s,), tuple(x.shape[1:])
    else:
        raise ValueError(f"occlusion needs x as images (B, C, H, W), series (B, T, C) or vectors (B, F), got shape "
                         f"{tuple(x.shape)}")
    if w > min(sizes):
        raise ValueError(f"window {w} is larger than the input {sizes}; it must be at most {min(sizes)}")
    if s > w and w < max(sizes):  # captum: windows that do not cover the input may not skip elements
        raise ValueError(f"stride {s} is larger than window {w}; it must be at most {w}")
    return Occlusion(model).attribute(x, sliding_window_shapes=shape, strides=strides, baselines=value,
                                      target=target, additional_forward_args=forward_args(extra),
                                      perturbations_per_eval=max(1, batch_size // len(x)))

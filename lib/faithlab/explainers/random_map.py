"""The random baseline map, registered as ``explain(..., method="random")``: U[0, 1) values drawn from the
``generator`` (or the per-sample seeds), one channel, the floor every method should beat. The module is not named
``random`` so that it cannot be mistaken for the standard library's."""

from __future__ import annotations

from faithlab.explainers.core import register, uniform


@register("random", random=True)
def _random(model, x, target, extra, *, batch_size, generator):
    """U[0, 1) map with one channel: images (B, 1, H, W), series/embeddings (B, T, 1), 2-D inputs (B, F)."""
    shape = list(x.shape)
    if x.ndim == 4:
        shape[1] = 1
    elif x.ndim == 3:
        shape[2] = 1
    return uniform(tuple(shape), generator, x.device).to(x.dtype)

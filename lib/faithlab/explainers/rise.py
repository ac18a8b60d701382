"""RISE (Petsiuk, Das and Saenko 2018), registered as ``explain(..., method="rise", generator=...)``: the
probability-weighted mean of random masks, ours, batched and seeded (TorchRay's RISE draws from the global RNG).
Returns ``(B, 1, H, W)`` maps for images ``(B, C, H, W)``, higher = more important."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab.explainers._common import need_images, real
from faithlab.explainers.core import register, uniform


@register("rise", random=True)
def _rise(model, x, target, extra, *, batch_size, generator, n_masks: int = 4000, cell: int = 7, p: float = 0.5):
    """RISE (Petsiuk et al. 2018): Σ_m softmax(f(x ⊙ M_m))[target] · M_m / (n_masks · p).

    Each mask keeps every cell of a ``cell``×``cell`` grid with probability ``p``, is upsampled bilinearly to
    (cell + 1) × ⌈H/cell⌉ pixels and cropped to H×W at a random shift; masked pixels become 0 in the model's input
    space (the dataset mean for normalised images). Masks are drawn per image from ``generator`` in sample order
    (cells and shift of one image in one draw), so the maps do not depend on ``batch_size``; TorchRay's RISE draws
    from the global RNG, hence ours. The masked inputs of all images go through the model ``batch_size`` at a time.
    """
    need_images(x, "rise")
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

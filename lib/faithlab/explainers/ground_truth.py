"""Maps with a known answer: the ground-truth map of a dataset's relevant region, and F-Fidelity's degraded
explainer (a map with a known share of its values randomly permuted, spec §1.8)."""

from __future__ import annotations

import math

import torch

from faithlab import _validate
from faithlab.explainers.core import uniform

__all__ = ["ground_truth", "degrade"]


def ground_truth(mask: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
    """Attribution from a dataset's ground-truth mask: 1.0 inside the relevant region, 0.0 outside.

    mask: bool/0-1 (B, H, W) images, (B, T) series or (B, L) tokens. x (optional): the inputs; the mask is checked
    against x's batch and layout and returned on x's device in x's float dtype. Returns a float tensor shaped
    like mask. Ties are left as they are (perturb.order breaks them).
    """
    _validate.tensor(mask, "mask", ndim=(2, 3))
    if x is None:
        return mask.to(torch.get_default_dtype())
    _validate.tensor(x, "x")
    _validate.batch_match(x, mask, "x", "mask")
    layout = {4: tuple(x.shape[2:]), 3: tuple(x.shape[1:2]), 2: tuple(x.shape[1:])}.get(x.ndim)
    if tuple(mask.shape[1:]) != layout:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not match the layout of x {tuple(x.shape)}")
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    return mask.to(device=x.device, dtype=dtype)


def degrade(scores: torch.Tensor, xi: float, generator: torch.Generator | int) -> torch.Tensor:
    """F-Fidelity's degraded explainer (spec §1.8): per sample, permute the values at ⌊ξ·n⌋ positions chosen
    uniformly without replacement (n = elements of one flattened map).

    scores: (B, ...) per-element scores. xi: noise level in [0, 1] (0 → unchanged, 1 → a full random permutation
    with the same values). Returns a tensor shaped like scores.
    """
    _validate.tensor(scores, "scores")
    if scores.ndim < 2:
        raise ValueError(f"scores must be (B, ...) with one map per sample, got shape {tuple(scores.shape)}")
    xi = _validate.fraction(xi, "xi")
    generator = _validate.generator(generator)
    flat = scores.flatten(1)
    n = flat.shape[1]
    k = math.floor(xi * n + 1e-9)  # guard ⌊ξ·n⌋ against float error, e.g. 0.29 · 100 = 28.999…
    keys = uniform(tuple(flat.shape), generator, flat.device)
    chosen = keys.argsort(dim=1, stable=True)[:, :k]  # a uniform random subset, in uniform random order
    # Writing the values found along that random order back in the subset's sorted order permutes them uniformly.
    return flat.scatter(1, chosen.sort(dim=1).values, flat.gather(1, chosen)).view_as(scores)

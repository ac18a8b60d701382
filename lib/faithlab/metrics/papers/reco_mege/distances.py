"""Distances between explanation maps, the candidates of ReCo/MeGe's distance sanity checks (Fel & Vigouroux 2020,
§4.3, Figs. 2–3; spec §4.2, §4.8): Spearman, Sørensen–Dice, SSIM, ℓ1 and ℓ2, batched over pairs of 2-D maps.

Maps are ``(..., H, W)`` tensors; an optional channel axis (``channel_dim``, e.g. -3 for ``(N, C, H, W)``) is
averaged first, as xplique does. ``a`` and ``b`` broadcast over their leading (batch) dims and every call returns one
distance per pair of maps, shaped like the broadcast batch, on the inputs' device and in their floating dtype (the
arithmetic runs in float64). Every distance is 0 for identical maps and grows as the maps differ. The 1-Wasserstein
distance of the paper's Figs. 2–3 is not here: it needs an optimal-transport solver (POT; the study's sanity
check computes it).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab.metrics.statistics import spearman

__all__ = ["DISTANCES", "map_distance"]

DISTANCES = ("spearman", "spearman_linear", "dice", "ssim", "l1", "l2")
"""Kinds of :func:`map_distance`: sqrt(1 − |ρ_Spearman|) (xplique, spec §4.2), 1 − |ρ_Spearman|, 1 − Dice of the
top-fraction masks, 1 − SSIM, ℓ1 and ℓ2 norms of the difference."""

SSIM_WINDOW, SSIM_K1, SSIM_K2 = 7, 0.01, 0.03
"""scikit-image's defaults for SSIM: a uniform 7×7 window and the constants of Wang et al. (2004)."""


def map_distance(a: torch.Tensor, b: torch.Tensor, *, kind: str, channel_dim: int | None = None,
                 top_fraction: float = 0.1, data_range: float | None = None) -> torch.Tensor:
    """Distance between two batches of explanation maps, one value per pair (paper §4.3, Figs. 2–3).

    a, b: ``(..., H, W)`` real tensors whose leading dims broadcast (e.g. one reference ``(H, W)`` against a batch
    ``(N, H, W)``), with one more axis ``channel_dim`` (a negative index ≤ -3, e.g. -3 for ``(N, C, H, W)``) that is
    averaged first when given. Returns the broadcast batch shape ``(...)``.

    kind (see :data:`DISTANCES`):

    * ``"spearman"``: sqrt(1 − |ρ|), ρ the Spearman correlation of the flattened maps (average ranks for ties, as
      ``scipy.stats.spearmanr``); ``"spearman_linear"``: 1 − |ρ|. In [0, 1]; NaN where a map is constant (ρ is
      undefined). A map and its negation are at distance 0 (the absolute value).
    * ``"dice"``: 1 − 2|A ∩ B| / (|A| + |B|), A and B the masks of each map's top ``top_fraction`` pixels by signed
      value: the pixels ≥ the k-th largest value, k = ⌈top_fraction · H·W⌉. Ties at that value are all kept, so a
      mask can hold more than k pixels (a constant map selects every pixel). In [0, 1].
    * ``"ssim"``: 1 − SSIM with scikit-image's defaults: uniform 7×7 window, K1 = 0.01, K2 = 0.03, sample covariance,
      mean over the window centres lying 3 pixels or more inside the image (equals
      ``1 - skimage.metrics.structural_similarity(a, b, data_range=..., win_size=7)``). data_range: a positive
      number, or None for max − min of ``a``, pair by pair; NaN where that range is 0 (``a`` constant). In [0, 2].
      Needs H, W ≥ 7.
    * ``"l1"``, ``"l2"``: the ℓ1 and ℓ2 norms of the difference of the flattened maps (not normalised: they scale
      with the maps and with H·W).

    0 = identical maps (Spearman: same or reversed ranking); larger = more different.
    """
    _validate.tensor(a, "a")
    _validate.tensor(b, "b")
    _validate.same_device(a, b, "a", "b")
    _validate.one_of(kind, "kind", DISTANCES)
    top_fraction = _validate.fraction(top_fraction, "top_fraction", closed_low=False)
    data_range = None if data_range is None else _positive(data_range, "data_range")
    for x, name in ((a, "a"), (b, "b")):
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"{name} must be a real tensor, got dtype {x.dtype}")
        _validate.finite(x, name)
    dtype = torch.promote_types(a.dtype, b.dtype)
    dtype = dtype if dtype.is_floating_point else torch.get_default_dtype()
    a, b = _maps(a, "a", channel_dim), _maps(b, "b", channel_dim)
    if a.shape[-2:] != b.shape[-2:]:
        raise ValueError(f"b holds maps of shape {tuple(b.shape[-2:])} but a holds {tuple(a.shape[-2:])}")
    try:
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the batch dims of b {tuple(b.shape[:-2])} do not broadcast with those of a "
                         f"{tuple(a.shape[:-2])}") from None
    if kind == "ssim":
        d = 1.0 - _ssim(a, b, data_range=data_range)
    elif kind == "dice":
        d = 1.0 - _dice(a.flatten(-2), b.flatten(-2), top_fraction)
    elif kind in ("spearman", "spearman_linear"):
        gap = (1.0 - spearman(a.flatten(-2), b.flatten(-2)).abs()).clamp(min=0.0)
        d = gap.sqrt() if kind == "spearman" else gap
    else:
        diff = (a - b).flatten(-2)
        d = diff.abs().sum(-1) if kind == "l1" else diff.square().sum(-1).sqrt()
    return d.expand(batch).to(dtype)


def _maps(x: torch.Tensor, name: str, channel_dim: int | None) -> torch.Tensor:
    """``x`` as float64 ``(..., H, W)`` maps, its channel axis averaged."""
    if channel_dim is not None:
        if isinstance(channel_dim, bool) or not isinstance(channel_dim, int) or channel_dim > -3:
            raise ValueError(f"channel_dim must be a negative int ≤ -3 (the spatial axes are the last two), got "
                             f"{channel_dim!r}")
        if x.ndim < -channel_dim:
            raise ValueError(f"{name} has {x.ndim} dims, too few for channel_dim={channel_dim}: shape "
                             f"{tuple(x.shape)}")
        x = x.double().mean(dim=channel_dim)
    if x.ndim < 2:
        raise ValueError(f"{name} must hold 2-D maps (..., H, W), got shape {tuple(x.shape)}")
    return x.double()


def _positive(value, name: str) -> float:
    v = _validate.number(value, name)
    if not (0 < v < math.inf):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def top_mask(x: torch.Tensor, fraction: float) -> torch.Tensor:
    """The top-``fraction`` mask of flattened maps ``(..., n)``: the elements ≥ the k-th largest, k = ⌈fraction·n⌉
    (ties at the threshold kept, so a mask can hold more than k)."""
    k = max(1, math.ceil(fraction * x.shape[-1] - 1e-9))  # - 1e-9: 0.1 · 1000 is 100.00000000000001 in floats
    return x >= x.topk(k, dim=-1).values[..., -1:]


def _dice(a: torch.Tensor, b: torch.Tensor, fraction: float) -> torch.Tensor:
    """Dice coefficient of the top-``fraction`` masks of flattened maps ``(..., n)`` (ties at the threshold kept)."""
    ma, mb = top_mask(a, fraction), top_mask(b, fraction)
    return 2 * (ma & mb).sum(-1).double() / (ma.sum(-1) + mb.sum(-1)).double()


def _ssim(a: torch.Tensor, b: torch.Tensor, *, data_range: float | None) -> torch.Tensor:
    """Mean SSIM of float64 maps ``(..., H, W)`` over the valid window centres (scikit-image's defaults)."""
    h, w = a.shape[-2:]
    if min(h, w) < SSIM_WINDOW:
        raise ValueError(f"a and b must hold maps of at least {SSIM_WINDOW}×{SSIM_WINDOW} pixels for SSIM, "
                         f"got {h}×{w}")
    a, b = torch.broadcast_tensors(a, b)
    batch = a.shape[:-2]
    x, y = a.reshape(-1, 1, h, w), b.reshape(-1, 1, h, w)
    if data_range is None:
        r = (x.amax((-2, -1), keepdim=True) - x.amin((-2, -1), keepdim=True))
    else:
        r = torch.full((1, 1, 1, 1), data_range, dtype=x.dtype, device=x.device)
    # windows lying fully inside the map = scikit-image's reflect-padded filter cropped by (win − 1) / 2 per side
    def mean(t: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(t, SSIM_WINDOW, stride=1)

    n = SSIM_WINDOW ** 2
    ux, uy = mean(x), mean(y)
    cov = n / (n - 1)  # sample covariance
    vx, vy, vxy = cov * (mean(x * x) - ux * ux), cov * (mean(y * y) - uy * uy), cov * (mean(x * y) - ux * uy)
    c1, c2 = (SSIM_K1 * r) ** 2, (SSIM_K2 * r) ** 2
    s = (2 * ux * uy + c1) * (2 * vxy + c2) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    ssim = s.mean((-3, -2, -1))
    return torch.where(r.flatten() > 0, ssim, torch.nan).reshape(batch)

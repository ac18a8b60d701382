"""References: the values that replace removed units (zero, per-sample mean, per-channel mean, Gaussian blur, a
constant or a tensor), and :func:`apply_removal`, which builds one perturbed input from a unit mask."""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab.perturb.imputation import NoisyLinear
from faithlab.perturb.units import Units, broadcasts, check_units, expand

__all__ = ["Reference", "make_reference", "apply_removal", "gaussian_filter"]

Reference = str | int | float | torch.Tensor | NoisyLinear
"""A reference: ``"zero"``, ``"mean"``, ``"channel_mean"``, ``"blur"``, ``"noisy_linear"``, a number, a tensor or
a :class:`~faithlab.perturb.imputation.NoisyLinear` imputation (:func:`make_reference`)."""

def _gaussian_blur(x: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur over H, W with reflect padding (no edge repeat; valid for any kernel size)."""
    r = kernel_size // 2
    t = torch.arange(kernel_size, dtype=x.dtype, device=x.device) - r
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    c = x.shape[1]
    out = x
    for dim in (2, 3):
        size = x.shape[dim]
        pos = torch.arange(-r, size + r, device=x.device)
        if size == 1:
            pos = torch.zeros_like(pos)
        else:
            pos = pos.remainder(2 * (size - 1))
            pos = torch.where(pos >= size, 2 * (size - 1) - pos, pos)
        padded = out.index_select(dim, pos)
        weight = k.view(1, 1, -1, 1) if dim == 2 else k.view(1, 1, 1, -1)
        out = F.conv2d(padded, weight.expand(c, 1, *weight.shape[2:]), groups=c)
    return out


@functools.lru_cache(maxsize=4096)
def reflect_operator(length: int, sigma: float, truncate: float) -> torch.Tensor:
    """``(L, L)`` float64 CPU matrix M with ``M @ v`` = scipy's 1-D Gaussian filter of v (mode 'reflect', the edge
    repeated: d c b a | a b c d | d c b a). Taps beyond the signal fold back as often as needed, so any radius works
    (σ = 80 on 28 pixels). Cached: one matrix per (length, σ), the same whatever other σ a call asks for."""
    r = int(truncate * sigma + 0.5)
    t = torch.arange(-r, r + 1, dtype=torch.float64, device="cpu")
    w = torch.exp(-0.5 / (sigma * sigma) * t ** 2)
    w = w / w.sum()
    pos = (torch.arange(length, device="cpu")[:, None] + t.long()[None]).remainder(2 * length)  # (L, taps): input
    pos = torch.where(pos >= length, 2 * length - 1 - pos, pos)
    m = torch.zeros(length, length, dtype=torch.float64, device="cpu")
    return m.scatter_add_(1, pos, w[None].expand(length, -1).contiguous())


def gaussian_filter(x: torch.Tensor, sigmas, *, truncate: float = 4.0) -> torch.Tensor:
    """Gaussian blur of every image at every σ → ``(B, S, C, H, W)``, spatially only (each channel on its own).

    Equals ``scipy.ndimage.gaussian_filter(x[b, c], sigma)`` (mode 'reflect', ``truncate`` 4 → radius
    ⌊4σ + 0.5⌋) to float tolerance, for any σ including σ larger than the image: Few-class Fidelity's candidate
    blurs (spec §2.3, σ = 1…80; RGB blurred with σ = (σ, σ, 0)). Written here because scipy filters one image at a
    time on the CPU; as two matrix products per σ it runs batched on the inputs' device. x: ``(B, C, H, W)``
    floating point; sigmas: positive numbers ``(S,)``. Not the ``"blur"`` reference of :func:`make_reference`
    (TRACE's fixed 31-tap kernel, torch's mirror padding).
    """
    _validate.tensor(x, "x", ndim=4, floating=True)
    if isinstance(sigmas, torch.Tensor):  # one read of a tensor (a device one syncs once)
        s = sigmas.detach().to("cpu", torch.float64).flatten().tolist()
    elif isinstance(sigmas, (list, tuple)) and all(isinstance(v, numbers.Real) for v in sigmas):
        s = [float(v) for v in sigmas]  # checked on the host: no tensor, no sync (Few-class's chunks call this)
    else:
        s = torch.as_tensor(sigmas, dtype=torch.float64, device="cpu").flatten().tolist()
    if not s or not all(math.isfinite(v) and v > 0 for v in s):
        raise ValueError(f"sigmas must be positive finite numbers, got {s[:8]}")
    truncate = _validate.number(truncate, "truncate")
    if not truncate > 0:
        raise ValueError(f"truncate must be positive, got {truncate!r}")
    return gaussian_blurs(x, s, lambda length, sigma: reflect_operator(length, sigma, truncate))


def gaussian_blurs(x: torch.Tensor, sigmas: list[float],
                   operator: Callable[[int, float], torch.Tensor]) -> torch.Tensor:
    """:func:`gaussian_filter` of checked arguments, the ``(L, L)`` float64 filter matrix of each length L and σ
    read from ``operator(L, σ)``: matrices on the host are copied to x's device here (a blocking copy, a sync on a
    GPU), matrices already there are used as they are (Few-class Fidelity's search copies its grid's once, not once
    per chunk of candidates)."""

    def operators(length: int) -> torch.Tensor:
        return torch.stack([operator(length, v) for v in sigmas]).to(x.device, torch.float64)

    mh = operators(x.shape[2])
    mw = mh if x.shape[3] == x.shape[2] else operators(x.shape[3])
    # One small matrix product per (image, σ, channel), in float64, rounded to x's dtype at the end: a batched
    # product may pick another kernel (another summation order) for another batch size on some CPUs, and a wide σ
    # leaves near-equal pixels whose float32 order would then depend on how the candidates were chunked (and
    # histogram matching reads that order). float64 keeps those differences far below float32's rounding.
    return (mh[None, :, None] @ x.double()[:, None] @ mw.transpose(1, 2)[None, :, None]).to(x.dtype)


PAD_TOKEN = 0
"""Token id of padding: the text models mask it out of their pool and attention, so replacing a token by it
*deletes* the token (``reference="zero"`` on token ids)."""
REMOVED_TOKEN = 1
"""Token id the text models embed as the zero vector while keeping it in the pool and attention (the reserved
``unk`` id, unused by the embedded data). Replacing a token by it is F-Fidelity's text removal, "replacing the
token with zeros" at the embedding layer (spec §1.1): ``reference="removed_token"``."""


def make_reference(x: torch.Tensor, kind: Reference = "zero", *, kernel_size: int = 31,
                   sigma: float = 56.0) -> torch.Tensor | NoisyLinear:
    """Reference values that replace removed units, as a tensor with x's rank broadcastable to x (or, for an
    imputation, the :class:`~faithlab.perturb.imputation.NoisyLinear` that computes them from each perturbed
    input's kept pixels).

    kind: ``"zero"`` 0 in the model's input space (dataset mean for normalised images; pad id 0 / zero embedding
    for tokens); ``"mean"`` per-sample scalar mean over all elements; ``"channel_mean"`` per-sample per-channel mean
    (images over H, W; series over T); ``"blur"`` Gaussian blur of each image (``kernel_size``, ``sigma``; reflect
    padding; defaults are TRACE's 31 and 56); ``"removed_token"`` for token ids: every real token becomes
    :data:`REMOVED_TOKEN` (a zero embedding kept in the sequence) and padding stays :data:`PAD_TOKEN`, so removing
    a pad position changes nothing; a number (a constant, e.g. a token id for integer x); a tensor
    broadcastable to x (e.g. ``(B, C, H, W)`` or ``(C, H, W)``); ``"noisy_linear"`` ROAD's linear imputation
    without noise, or a :class:`~faithlab.perturb.imputation.NoisyLinear` (with keyed noise): each perturbed image's
    removed pixels are imputed from its kept ones (images only), returned as the imputation object.
    """
    _validate.tensor(x, "x")
    if isinstance(kind, str) and kind == "noisy_linear":
        kind = NoisyLinear(0.0)
    if isinstance(kind, NoisyLinear):
        if x.ndim != 4 or not x.is_floating_point():
            raise ValueError(f"reference={kind!r} (noisy linear imputation) needs floating-point images "
                             f"(B, C, H, W), got x of shape {tuple(x.shape)} and dtype {x.dtype}")
        if kind.seeds is not None and len(kind.seeds) != x.shape[0]:
            raise ValueError(f"reference={kind!r} holds seeds for {len(kind.seeds)} samples but x has "
                             f"{x.shape[0]}")
        return kind
    if isinstance(kind, torch.Tensor):
        _validate.same_device(x, kind, "x", "reference")
        if kind.is_floating_point() and not x.is_floating_point():
            raise TypeError(f"reference must be an integer tensor for integer x, got dtype {kind.dtype}")
        _validate.finite(kind, "reference")
        ref = kind.reshape((1,) * (x.ndim - kind.ndim) + tuple(kind.shape)) if kind.ndim <= x.ndim else kind
        if not broadcasts(ref.shape, x.shape):
            raise ValueError(f"reference of shape {tuple(kind.shape)} does not broadcast to x of shape "
                             f"{tuple(x.shape)}")
        return ref.to(x.dtype)
    if isinstance(kind, (int, float)) and not isinstance(kind, bool):
        if isinstance(kind, float) and not x.is_floating_point():
            raise TypeError(f"reference must be an int token id for integer x, got {kind!r}")
        if not math.isfinite(kind):
            raise ValueError(f"reference must be finite, got {kind!r}")
        return torch.full((1,) * x.ndim, kind, dtype=x.dtype, device=x.device)
    if kind == "zero":
        return torch.zeros((1,) * x.ndim, dtype=x.dtype, device=x.device)
    if kind == "removed_token":
        if x.is_floating_point():
            raise TypeError("reference='removed_token' needs integer token ids x; for embeddings use 'zero'")
        return torch.where(x == PAD_TOKEN, PAD_TOKEN, REMOVED_TOKEN).to(x.dtype)
    if kind not in ("mean", "channel_mean", "blur"):
        raise ValueError(f"reference must be 'zero', 'mean', 'channel_mean', 'blur', 'removed_token', "
                         f"'noisy_linear', a number, a tensor or a NoisyLinear, got {kind!r}")
    if not x.is_floating_point():
        raise TypeError(f"reference={kind!r} needs floating-point x; for token ids pass an int token id")
    if kind == "mean":
        return x.mean(dim=tuple(range(1, x.ndim)), keepdim=True)
    if kind == "channel_mean":
        return x.mean(dim=(2, 3) if x.ndim == 4 else 1, keepdim=True)
    if x.ndim != 4:
        raise ValueError(f"reference='blur' needs images (B, C, H, W), got x of shape {tuple(x.shape)}")
    k = _validate.positive_int(kernel_size, "kernel_size")
    if k % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {k}")
    if not float(sigma) > 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    return _gaussian_blur(x, k, float(sigma))


def apply_removal(x: torch.Tensor, removed: torch.Tensor, units: Units, *,
                  reference: Reference = "zero") -> torch.Tensor:
    """x with the units flagged in removed ``(B, n)`` bool replaced by the reference (``make_reference``)."""
    _validate.tensor(x, "x")
    check_units(units, x)
    mask = expand(removed, units)
    _validate.batch_match(x, removed, "x", "removed")
    ref = make_reference(x, reference)
    if isinstance(ref, NoisyLinear):
        rows = torch.arange(x.shape[0], device=x.device)
        return ref.impute(x, ~mask, rows, torch.zeros_like(rows))  # draw 0 of each sample
    return torch.where(mask, ref, x)

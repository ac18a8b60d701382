"""Feature units: the groups of input elements removed together, and one score per unit from an attribution map.

A *unit* is a pixel with all its channels, an e×e patch, a superpixel, a time step with all its channels or a token.
:class:`Units` maps every input element to its unit id; masks over units are ``(B, n)`` bool tensors, turned into
element masks by :func:`expand`. :func:`unit_scores` reduces a map to one score per unit by an explicit rule.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from faithlab import _validate

__all__ = ["Units", "pixel_units", "patch_units", "segment_units", "time_units", "token_units", "default_units",
           "UNIT_KINDS", "expand", "unit_scores", "REDUCE", "check_attributions", "constant_maps",
           "ConstantMapWarning", "warn_constant"]

REDUCE = ("sum_abs", "sum", "mean", "mean_abs", "max")
"""Unit-reduction rules of :func:`unit_scores`. Paper defaults: F-Fidelity and Few-class Fidelity Σ|a|
(``"sum_abs"``), SaCo and its cumulative baselines the signed sum (``"sum"``), TRACE the mean (``"mean"``)."""

@dataclass(frozen=True, eq=False)
class Units:
    """Feature units of an input: ``index`` gives the unit id (0..n-1) of every input element.

    ``index`` is an int64 tensor broadcastable to x, with size-1 dims where a unit spans the whole dim (channels):
    images ``(1|B, 1, H, W)``, series/embeddings ``(1|B, T, 1)``, token ids ``(1|B, L)``. ``n`` is the unit count.
    """

    index: torch.Tensor
    n: int

    def __post_init__(self) -> None:
        _validate.tensor(self.index, "index")
        if self.index.dtype != torch.int64 or self.index.ndim < 2:
            raise ValueError(f"index must be an int64 tensor with a batch dim, got {self.index.dtype} "
                             f"{tuple(self.index.shape)}")
        _validate.positive_int(self.n, "n")


def pixel_units(x: torch.Tensor) -> Units:
    """One unit per pixel (all channels together) of images x ``(B, C, H, W)``; n = H·W, row-major."""
    _validate.tensor(x, "x", ndim=4)
    h, w = x.shape[-2:]
    return Units(torch.arange(h * w, device=x.device).view(1, 1, h, w), h * w)


def patch_units(x: torch.Tensor, patch_size: int) -> Units:
    """Square ``patch_size``² patches of images x ``(B, C, H, W)``; n = (H/p)·(W/p), row-major (TRACE §5.1)."""
    _validate.tensor(x, "x", ndim=4)
    p = _validate.positive_int(patch_size, "patch_size")
    h, w = x.shape[-2:]
    if h % p or w % p:
        raise ValueError(f"patch_size={p} must divide the image height and width, got {h}x{w}")
    rows = torch.arange(h, device=x.device) // p
    cols = torch.arange(w, device=x.device) // p
    return Units((rows[:, None] * (w // p) + cols[None, :]).view(1, 1, h, w), (h // p) * (w // p))


def segment_units(labels: torch.Tensor) -> Units:
    """Superpixel units from integer label maps ``(B, H, W)`` (one per image) or ``(H, W)`` (shared).

    Labels may be any non-negative integers (e.g. skimage's SLIC, which starts at 1): each map is relabelled to
    0..n-1 keeping the labels' order. Every map of the batch must hold the same number n of segments.
    """
    _validate.tensor(labels, "labels", ndim=(2, 3))
    if labels.is_floating_point() or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must be an integer tensor, got dtype {labels.dtype}")
    maps = labels.long().reshape(-1, *labels.shape[-2:])
    if bool((maps < 0).any()):
        raise ValueError("labels must be non-negative integers")
    b = maps.shape[0]
    span = int(maps.max()) + 1
    keys = maps + span * torch.arange(b, device=maps.device).view(b, 1, 1)
    uniq, inverse = torch.unique(keys, return_inverse=True)
    counts = torch.bincount(uniq // span, minlength=b)
    if bool((counts != counts[0]).any()):
        raise ValueError(f"labels must give every image the same number of segments, got counts {counts.tolist()}")
    start = torch.cumsum(counts, 0) - counts
    index = inverse - start.view(b, 1, 1)
    return Units(index.unsqueeze(1), int(counts[0]))


def _dim1_units(x: torch.Tensor) -> Units:
    t = x.shape[1]
    return Units(torch.arange(t, device=x.device).view(1, t, *([1] * (x.ndim - 2))), t)


def time_units(x: torch.Tensor) -> Units:
    """One unit per time step (all channels together) of series x ``(B, T, C)`` or ``(B, T)``; n = T."""
    _validate.tensor(x, "x", ndim=(2, 3), floating=True)
    return _dim1_units(x)


def token_units(x: torch.Tensor) -> Units:
    """One unit per token of ids ``(B, L)`` (int) or embeddings ``(B, L, D)`` (float); n = L."""
    _validate.tensor(x, "x", ndim=(2, 3))
    if x.ndim == 2 and x.is_floating_point():
        raise TypeError("x of shape (B, L) must hold integer token ids; pass embeddings as (B, L, D)")
    if x.ndim == 3 and not x.is_floating_point():
        raise TypeError("x of shape (B, L, D) must be floating-point embeddings")
    return _dim1_units(x)


def default_units(x: torch.Tensor) -> Units:
    """Default units: pixels for 4-D images, dim-1 units (time steps, tokens, embedding positions) otherwise."""
    if x.ndim == 4:
        return pixel_units(x)
    if x.ndim in (2, 3):
        return _dim1_units(x)
    raise ValueError(f"x must be images (B, C, H, W), series (B, T, C) or tokens (B, L); got shape {tuple(x.shape)}")


UNIT_KINDS = {"pixels": pixel_units, "time": time_units, "tokens": token_units}
"""Units named by kind, for options that take a name (e.g. F-Fidelity's fine-tuning ``RandomRemoval(units=...)``):
``UNIT_KINDS[kind](x)`` builds them for x."""


UNITS_FORMS = ("None (pixels of images, time steps of series, tokens)", "fl.perturb.pixel_units(x)",
               "fl.perturb.patch_units(x, patch_size)", "fl.perturb.segment_units(labels)", "fl.perturb.time_units(x)",
               "fl.perturb.token_units(x)")
"""The forms a ``units`` argument accepts, as its error message lists them."""


def units_for(units: Units | None, x: torch.Tensor, *, name: str = "units") -> Units:
    """The units a metric removes: :func:`default_units` of x for None, else ``units`` checked against x (type,
    device, shape) → :class:`Units`. Anything else (e.g. the string ``"pixels"``) is a TypeError listing the accepted
    forms."""
    if units is None:
        return default_units(x)
    check_units(units, x, name)
    return units


def check_units(units: Units, x: torch.Tensor, name: str = "units") -> None:
    if not isinstance(units, Units):
        hint = (f" (for the kind {units!r}: fl.perturb.UNIT_KINDS[{units!r}](x))"
                if isinstance(units, str) and units in UNIT_KINDS else "")
        raise TypeError(f"{name} must be one of {', '.join(UNITS_FORMS)}; got {type(units).__name__} "
                        f"{units!r}{hint}"[:400])
    idx = units.index
    _validate.same_device(x, idx, "x", name)
    if not broadcasts(idx.shape, x.shape):
        raise ValueError(f"{name} index of shape {tuple(idx.shape)} does not broadcast to x of shape {tuple(x.shape)}")


def broadcasts(shape: Sequence[int], target: Sequence[int]) -> bool:
    """True if a tensor of ``shape`` (same rank) broadcasts to ``target`` without changing it."""
    return len(shape) == len(target) and all(a in (1, b) for a, b in zip(shape, target))


def batch_rows(t: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
    """Samples b0..b1-1 of a tensor whose batch dim is 1 (shared by all samples) or B."""
    return t if t.shape[0] == 1 else t[b0:b1]


def is_identity(index: torch.Tensor, n: int) -> bool:
    """Whether a units index maps its ``n`` positions to units 0..n-1 in order, shared by the batch."""
    return index.shape[0] == 1 and index.numel() == n and torch.equal(
        index.flatten(), torch.arange(n, device=index.device))


def expand_units(removed: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Unit masks ``(B, ..., n)`` → element masks ``(B, ..., *index.shape[1:])`` via index ``(1|B, ...)``."""
    lead = removed.shape[:-1]
    flat = index.reshape(index.shape[0], *([1] * (len(lead) - 1)), -1).expand(*lead, -1)
    return removed.gather(-1, flat).view(*lead, *index.shape[1:])


def expand(removed: torch.Tensor, units: Units) -> torch.Tensor:
    """Unit mask ``(B, n)`` bool → element mask ``(B, *units.index.shape[1:])`` bool, broadcastable to x."""
    _validate.tensor(removed, "removed", ndim=2)
    if removed.dtype != torch.bool:
        raise TypeError(f"removed must be a bool tensor, got dtype {removed.dtype}")
    if removed.shape[1] != units.n or units.index.shape[0] not in (1, removed.shape[0]):
        raise ValueError(f"removed must have shape (B, {units.n}) matching units, got {tuple(removed.shape)}")
    _validate.same_device(units.index, removed, "units", "removed")
    return expand_units(removed, units.index)


def unit_scores(attributions: torch.Tensor, units: Units, *, reduce: str) -> torch.Tensor:
    """Aggregate an attribution map into one score per unit → ``(B, n)``; higher = more important.

    The rule has no default on purpose: each metric states its paper's (see :data:`REDUCE`).

    attributions: shaped like x, or without the dims a unit spans (channels): images ``(B, C|1, H, W)`` or
    ``(B, H, W)``; series ``(B, T, C)`` or ``(B, T)``; tokens ``(B, L)`` or ``(B, L, D)``.
    reduce, over all attribution elements of a unit (channels × member positions):
    ``"sum_abs"`` Σ|a| (F-Fidelity and Few-class convention), ``"sum"`` Σa (SaCo group salience),
    ``"mean_abs"`` mean |a|, ``"mean"`` mean a (TRACE average pooling to patches), ``"max"`` max a.
    Integer and bool maps are read as float32 values, complex ones refused (``_validate.attribution_map``, the rule
    :func:`check_attributions` applies with x's floating dtype).
    """
    _validate.one_of(reduce, "reduce", REDUCE)
    given = _validate.tensor(attributions, "attributions")
    a = _validate.attribution_map(given, "attributions")
    idx = units.index
    _validate.same_device(idx, a, "units", "attributions")
    if a.ndim > idx.ndim:  # e.g. (B, L, D) attributions of token ids (B, L): the extra dims act as channels
        idx = idx.reshape(*idx.shape, *([1] * (a.ndim - idx.ndim)))
    spanned = [d for d in range(1, idx.ndim) if idx.shape[d] == 1]

    def fits(t: torch.Tensor) -> bool:
        return t.ndim == idx.ndim and idx.shape[0] in (1, t.shape[0]) and all(
            d in spanned or t.shape[d] == idx.shape[d] for d in range(1, idx.ndim))

    if a.ndim == idx.ndim - 1:
        a = next((a.unsqueeze(d) for d in spanned if fits(a.unsqueeze(d))), a)
    if not fits(a):
        raise ValueError(f"attributions of shape {tuple(attributions.shape)} do not match the units "
                         f"(index shape {tuple(idx.shape)}); expected x's shape or x's shape without channels")
    if given.is_floating_point():  # an integer or bool map is finite
        _validate.finite(a, "attributions")
    if reduce in ("sum_abs", "mean_abs"):
        a = a.abs()
    per_unit_channels = math.prod(a.shape[d] for d in spanned)
    if per_unit_channels > 1:  # a reduction over size-1 dims would only copy
        a = a.amax(dim=spanned, keepdim=True) if reduce == "max" else a.sum(dim=spanned, keepdim=True)
    b = a.shape[0]
    vals = a.reshape(b, -1)
    if is_identity(idx, units.n):  # one position per unit, in order (pixels, time steps): no scatter needed
        shared = vals.untyped_storage().data_ptr() == attributions.untyped_storage().data_ptr()
        scores = vals.clone() if shared else vals  # never a view of the caller's tensor
        if reduce in ("mean", "mean_abs") and per_unit_channels > 1:
            scores = scores / per_unit_channels
        return scores
    flat = idx.reshape(idx.shape[0], -1).expand(b, -1)
    if reduce == "max":
        init = torch.full((b, units.n), -math.inf, dtype=vals.dtype, device=vals.device)
        return init.scatter_reduce(1, flat, vals, reduce="amax", include_self=False)
    scores = torch.zeros(b, units.n, dtype=vals.dtype, device=vals.device).scatter_add_(1, flat, vals)
    if reduce in ("mean", "mean_abs"):
        sizes = torch.zeros(flat.shape[0], units.n, dtype=vals.dtype, device=vals.device)
        sizes.scatter_add_(1, flat, torch.ones_like(vals))
        scores = scores / (sizes * per_unit_channels)
    return scores


def check_attributions(attributions: torch.Tensor, x: torch.Tensor, *, name: str = "attributions") -> torch.Tensor:
    """Raise unless ``attributions`` fit the input ``x``: x's shape, x's shape with size 1 in the channel dim,
    x's shape without its channel dim (images ``(B, H, W)``, series ``(B, T)``), or ``(B, L, D)`` for token ids
    ``(B, L)``, on x's device, of a real dtype. A map with more channels or other sizes than x is refused rather
    than reduced into unit scores. Returns the map in a floating dtype (the metrics' one dtype rule,
    ``_validate.attribution_map``): a floating map as it is, an integer or bool map (a binary mask, a superpixel
    selection, a segmentation) converted to x's floating dtype (float32 for token ids); a complex map is a
    TypeError naming ``name``."""
    _validate.one_device(x=x, **{name: attributions})
    a = _validate.tensor(attributions, name)
    shape, xs = tuple(a.shape), tuple(x.shape)
    channel = 1 if x.ndim == 4 else x.ndim - 1  # images (B, C, H, W); series/embeddings (B, T, C)
    allowed = {xs}
    if x.ndim >= 3:
        allowed |= {xs[:channel] + (1,) + xs[channel + 1:], xs[:channel] + xs[channel + 1:]}
    fits = shape in allowed or (x.ndim == 2 and not x.is_floating_point() and a.ndim == 3 and shape[:2] == xs)
    if not fits:
        raise ValueError(f"{name} of shape {shape} do not fit x of shape {xs}: expected x's shape, x's shape with "
                         f"1 channel, or x's shape without the channel dim")
    return _validate.attribution_map(a, name, like=x)


def caller_level() -> int:
    """``stacklevel`` of the first frame outside faithlab, for the function that calls this one and then
    ``warnings.warn`` (:func:`warn_constant`, :func:`~faithlab.perturb.noisy_linear_imputation`): the warning points
    at the user's call whatever the depth of the library calls in between (Python 3.11 has no
    ``skip_file_prefixes``)."""
    frame, level = sys._getframe(2), 2  # 1 = the frame that calls warnings.warn
    while frame is not None and frame.f_globals.get("__name__", "").startswith("faithlab."):
        frame, level = frame.f_back, level + 1
    return level


class ConstantMapWarning(UserWarning):
    """Some attribution maps are constant over the units: they define no ranking (the metric's value for those
    samples reflects the tie rule, not the explanation)."""


def constant_maps(scores: torch.Tensor) -> torch.Tensor:
    """Which rows of unit scores ``(B, n)`` are constant (no ranking) → ``(B,)`` bool."""
    _validate.tensor(scores, "scores", ndim=2)
    return scores.amax(dim=1) == scores.amin(dim=1)


def warn_constant(constant: torch.Tensor, what: str, *, over: str = "units") -> torch.Tensor:
    """Issue a :class:`ConstantMapWarning` counting the flagged samples of ``constant`` ``(B,)`` bool (nothing
    when none is flagged); ``what`` says what the metric returns for them; ``over``: units or groups. Returns
    ``constant``."""
    count = int(constant.sum())
    if count:
        idx = constant.nonzero().flatten()[:5].tolist()
        warnings.warn(f"attributions are constant over the {over} for {count} of {constant.shape[0]} sample(s) "
                      f"(e.g. {idx}): they define no ranking; {what}", ConstantMapWarning,
                      stacklevel=caller_level())
    return constant

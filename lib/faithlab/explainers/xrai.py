"""XRAI (Kapishnikov et al. 2019) as an alteration of another method's map, registered with
:func:`faithlab.explainers.explain` as ``"xrai"``: PAIR's ``saliency.core.XRAI`` with ``base_attribution`` = the
map of ``base`` (Few-class Fidelity's "XRAI over BP, Deconv, IG, GradCAM, ..."). XRAI ranks over-segmented image
regions (Felzenszwalb at six scales, dilated) greedily by the density of the base attribution they add, and gives
every pixel its region's density: a map that is piecewise constant over regions.

The base maps are computed batched, through the registry, on the inputs' device; XRAI then runs per image on the
CPU in numpy. That is PAIR's maintained implementation, called as is: its Felzenszwalb segmentation works one image
at a time by nature, and we do not rewrite the algorithm. It costs well under a second per image on a CPU core
(mostly the segmentation, which PAIR always runs at 224 × 224 whatever the image size).

The segmentation depends on the image alone, not on the base map, and a study asks XRAI over many base maps of the
same images (Few-class Fidelity: every method, on every model): the segments of recent images are kept
(:func:`segments`, keyed by the image's bytes, bounded by :data:`SEGMENT_CACHE_BYTES`) and handed to PAIR, which
then skips its own segmentation. PAIR only reads the masks it is given, so the maps are bit for bit the same; in
the book's Few-class notebook this removed about half of its map time. PAIR exposes no segmentation of its own
outside XRAI but its module function ``_get_segments_felzenszwalb``, the one ``GetMask`` calls: we call that one.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
import torch

from faithlab import _validate
from faithlab._optional import require
from faithlab.explainers.core import ACTIVE, RANDOM, check_options, available, get_method, register

_ALGORITHMS = ("full", "fast")  # PAIR's XRAIParameters.algorithm
SEGMENT_CACHE_BYTES = 256 * 2**20  # the masks of recent images kept by :func:`segments` (a 28-pixel image: ~0.1 MB)
_SEGMENTS: OrderedDict[tuple, tuple[np.ndarray, ...]] = OrderedDict()  # least recently used first
_SEGMENTS_LOCK = threading.Lock()
_segments_bytes = 0


def segments(image: np.ndarray) -> list[np.ndarray]:
    """PAIR's segments of one (H, W, C) float64 image (its Felzenszwalb over-segmentation at six scales, dilated,
    as ``XRAI.GetMask`` computes them when given none): a list of (H, W) boolean masks, from a bounded cache keyed by
    the image's shape and bytes. A constant image, which PAIR's min–max scaling would turn into NaN (0 / 0), is one
    segment: what Felzenszwalb gives on any constant image. The masks are read-only (PAIR never writes them)."""
    global _segments_bytes
    if image.max() == image.min():
        return [np.ones(image.shape[:2], dtype=bool)]
    key = (image.shape, str(image.dtype), hashlib.blake2b(np.ascontiguousarray(image).tobytes(), digest_size=20)
           .digest())
    with _SEGMENTS_LOCK:
        hit = _SEGMENTS.get(key)
        if hit is not None:
            _SEGMENTS.move_to_end(key)
            return list(hit)
    xrai = require("saliency.core.xrai", "method 'xrai'")
    masks = tuple(xrai._get_segments_felzenszwalb(image))
    for mask in masks:
        mask.flags.writeable = False
    size = sum(mask.nbytes for mask in masks)
    with _SEGMENTS_LOCK:
        if key not in _SEGMENTS and size <= SEGMENT_CACHE_BYTES:
            _SEGMENTS[key] = masks
            _segments_bytes += size
            while _segments_bytes > SEGMENT_CACHE_BYTES:
                _, old = _SEGMENTS.popitem(last=False)
                _segments_bytes -= sum(mask.nbytes for mask in old)
    return list(masks)


def clear_segments() -> None:
    """Empty :func:`segments`' cache."""
    global _segments_bytes
    with _SEGMENTS_LOCK:
        _SEGMENTS.clear()
        _segments_bytes = 0


def _no_model(*_args, **_kwargs):
    raise RuntimeError("XRAI called the model although base_attribution was given")  # PAIR never does


def _image(x: np.ndarray) -> np.ndarray:
    """One image (C, H, W) as PAIR expects it: (H, W, C) float64, values as they are.

    PAIR's segmentation (``_get_segments_felzenszwalb``) min–max scales the whole (H, W, C) array to [-1, 1] itself
    (``_normalize_image``, one min and max over all channels), then resizes it to 224 × 224: the segments do not
    depend on the range the image comes in, so we feed it unchanged (a [0, 1] rescale first would be a no-op up to
    rounding). Grey images stay (H, W, 1), which scikit-image's felzenszwalb reads as one channel."""
    return np.ascontiguousarray(x.transpose(1, 2, 0), dtype=np.float64)


def xrai_map(image: np.ndarray, attribution: np.ndarray, *, area_threshold: float = 1.0,
             algorithm: str = "full") -> np.ndarray:
    """PAIR's XRAI map (H, W) of one (H, W, C) image over the (H, W, C) base attribution (PAIR takes its maximum
    over channels), on the image's :func:`segments`."""
    saliency = require("saliency.core", "method 'xrai'")  # here, not at the top: 0.7 s that every kernel paid

    params = saliency.XRAIParameters(area_threshold=area_threshold, algorithm=algorithm)
    return saliency.XRAI().GetMask(image, _no_model, segments=segments(image), base_attribution=attribution,
                                   extra_parameters=params)


@register("xrai")
def _xrai(model, x, target, extra, *, batch_size, generator, base: str = "saliency", area_threshold: float = 1.0,
          algorithm: str = "full", **base_options):
    """XRAI over the map of ``base`` (any registered method but "xrai"; its options pass through and are checked
    against its own; a random base needs ``generator``), with PAIR's parameters ``area_threshold`` (the fraction of
    the image ranked region by region, in [0, 1]; the rest is one region) and ``algorithm`` ("full" or "fast").
    Images (B, C, H, W) only; returns (B, 1, H, W) like the CAM methods, in x's dtype, on x's device."""
    if not isinstance(base, str) or base == "xrai" or base not in available():
        raise ValueError(f"base must name a registered method other than 'xrai' (one of "
                         f"{[m for m in available() if m != 'xrai']}), got {base!r}")
    area = _validate.fraction(area_threshold, "area_threshold")
    _validate.one_of(algorithm, "algorithm", _ALGORITHMS)
    base_fn = get_method(base)
    check_options(base, base_fn, base_options,
                  f"XRAI with base {base!r} (its own options: base, area_threshold, algorithm; the base's are listed)")
    if base in RANDOM and generator is None:
        raise ValueError(f"generator is required by xrai's base {base!r}; pass a torch.Generator or an int seed")
    if x.ndim != 4:
        raise ValueError(f"xrai needs images x of shape (B, C, H, W) (it segments them), got shape {tuple(x.shape)}")

    maps = base_fn(model, x, target, extra, batch_size=batch_size, generator=generator, **base_options).detach()
    try:
        maps = maps.expand_as(x)  # (B, 1, H, W) maps (CAMs) on C channels: PAIR's max over channels is the map
    except RuntimeError:
        raise ValueError(f"base {base!r} returned maps of shape {tuple(maps.shape)}, which do not broadcast to x "
                         f"{tuple(x.shape)}; xrai needs pixel maps") from None
    out = torch.full((len(x), 1, *x.shape[2:]), float("nan"), dtype=torch.float64, device="cpu")  # numpy fills it
    checker = ACTIVE.get()
    if checker is not None and checker.bad is not None and bool(checker.bad):
        return out.to(x)  # explain raises for the non-finite logits: no need to segment
    images = x.detach().to("cpu", torch.float64).numpy()
    attributions = maps.to("cpu", torch.float64).numpy()
    for i in range(len(x)):
        if np.isfinite(attributions[i]).all():  # a NaN map stays NaN and explain reports it (PAIR would fail)
            out[i, 0] = torch.from_numpy(xrai_map(_image(images[i]), _image(attributions[i]),
                                                 area_threshold=area, algorithm=algorithm))
    return out.to(x)

"""Few-class Fidelity's localisation protocols (Marchadour, Soto Vega, Vermet, Hatt; spec §2.4): how well a map
finds the object, the ground truth the paper compares Fid with.

:func:`localisation_iou` (ImageNet vehicles, Table 3): the top-A pixels of Σ_c |map| (A = the ground-truth box
area), their largest 8-connected region and its tight box against the ground-truth box. :func:`localisation_dice` /
:func:`dice_curve` (CT, Table 4): the Dice of the map binarised at its top p % against the ground-truth mask, best
over p = 1…100 % per image (or the thesis code's best mean curve). :func:`box_from_mask` gives the box convention of
``fl.data.canvas_digits``' ``boxes``. Pure tensor functions on maps: no model is called, so ``batch_size="auto"``
(accepted as everywhere) has no forward pass to time: it takes as many maps per chunk as
:data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` elements hold (:func:`~faithlab.perturb.autobatch.map_chunk`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab import _validate, perturb
from faithlab.perturb.autobatch import BatchSize, map_chunk

__all__ = ["box_from_mask", "localisation_iou", "dice_curve", "localisation_dice"]

def _pixel_map(attributions: torch.Tensor, name: str) -> torch.Tensor:
    a = _validate.tensor(attributions, name, ndim=(3, 4), floating=True)
    _validate.finite(a, name)
    return a.abs().sum(dim=1) if a.ndim == 4 else a.abs()


def box_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """Tight bounding box of every ``(B, H, W)`` bool mask → ``(B, 4)`` int64 (x0, y0, x1, y1), x = column, end
    exclusive (the convention of ``fl.data.canvas_digits``' ``boxes`` and torchvision); an empty mask gives zeros."""
    rows, cols = mask.any(dim=2), mask.any(dim=1)
    h, w = mask.shape[1:]
    r_idx = torch.arange(h, device=mask.device)
    c_idx = torch.arange(w, device=mask.device)
    y0 = torch.where(rows, r_idx, h).amin(dim=1)
    y1 = torch.where(rows, r_idx, -1).amax(dim=1) + 1
    x0 = torch.where(cols, c_idx, w).amin(dim=1)
    x1 = torch.where(cols, c_idx, -1).amax(dim=1) + 1
    box = torch.stack([x0, y0, x1, y1], dim=1)
    return torch.where(mask.flatten(1).any(dim=1)[:, None], box, torch.zeros_like(box))


def _box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IoU of end-exclusive boxes ``(B, 4)`` (x0, y0, x1, y1) → float64 ``(B,)``; empty boxes give 0."""
    iw = (torch.minimum(a[:, 2], b[:, 2]) - torch.maximum(a[:, 0], b[:, 0])).clamp(min=0)
    ih = (torch.minimum(a[:, 3], b[:, 3]) - torch.maximum(a[:, 1], b[:, 1])).clamp(min=0)
    inter = (iw * ih).double()
    area_a = ((a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)).double()
    area_b = ((b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)).double()
    union = area_a + area_b - inter
    return torch.where(union > 0, inter / union.clamp(min=1), torch.zeros_like(union))


def _component_labels(mask: torch.Tensor) -> torch.Tensor:
    """The 8-connected region labels of every ``(B, H, W)`` bool mask → ``(B, H·W)`` int64: each mask pixel gets the
    smallest pixel index (raster order) of its region, background pixels H·W.

    Hook and jump (Shiloach–Vishkin style), near-linear: each round every pixel takes the smallest label of its 3×3
    neighbourhood inside the mask, hooks its label's root onto it as well, and pointer jumping (label = label[label]
    until stable) flattens the chains; labels only decrease and always name a pixel of the same region, so at the
    fixed point (no pixel sees a smaller label next to it) every region carries its smallest index. A handful of
    rounds suffice where spreading one step per pass needs as many passes as the longest path inside a region."""
    b, h, w = mask.shape
    n = b * h * w
    sentinel = n  # background, and the extra slot that points to itself
    flat = torch.where(mask.reshape(-1), torch.arange(n, device=mask.device), sentinel)
    labels = torch.cat([flat, flat.new_full((1,), sentinel)])
    while True:
        grid = torch.nn.functional.pad(labels[:n].view(b, h, w), (1, 1, 1, 1), value=sentinel)
        near = grid[:, 1:h + 1, 1:w + 1]
        for dy in range(3):
            for dx in range(3):
                if dy != 1 or dx != 1:
                    near = torch.minimum(near, grid[:, dy:dy + h, dx:dx + w])
        near = torch.where(mask, near, sentinel).reshape(-1)
        old = labels[:n]
        if torch.equal(near, old):
            break
        roots = old.clone()
        labels[:n] = torch.minimum(old, near)
        labels.scatter_reduce_(0, roots, near, reduce="amin")
        while True:
            jumped = labels[labels]
            if torch.equal(jumped, labels):
                break
            labels = jumped
    local = labels[:n].view(b, h * w) - torch.arange(b, device=mask.device)[:, None] * (h * w)
    return torch.where(mask.view(b, h * w), local, h * w)


def _largest_component(mask: torch.Tensor, *, batch_size: BatchSize = 64) -> torch.Tensor:
    """The largest 8-connected region of every ``(B, H, W)`` bool mask, ``batch_size`` masks at a time on the mask's
    device (labels of :func:`_component_labels`), the most frequent label wins; among equal sizes the region whose
    first pixel comes first in raster order, as ``scipy.ndimage.label`` numbers them (the test reference)."""
    b, h, w = mask.shape
    batch_size = map_chunk(batch_size, h * w)
    out = torch.zeros_like(mask)
    for i in range(0, b, batch_size):
        m = mask[i:i + batch_size]
        slot = _component_labels(m)
        counts = torch.zeros(m.shape[0], h * w + 1, device=mask.device, dtype=torch.long).scatter_add_(
            1, slot, torch.ones_like(slot))[:, :h * w]
        best = counts.argmax(dim=1)  # the first maximum: the smallest label among the largest regions
        out[i:i + batch_size] = (slot == best[:, None]).view_as(m) & m & counts.amax(dim=1).gt(0)[:, None, None]
    return out


def localisation_iou(attributions: torch.Tensor, boxes: torch.Tensor, *, batch_size: BatchSize = 64) -> torch.Tensor:
    """Box localisation of spec §2.4 (ImageNet vehicles, Table 3) → ``(B,)`` IoU in [0, 1], higher = better.

    Keep the top-A pixels of Σ_c |map| (A = the ground-truth box area; ties by lower pixel index), take their
    largest 8-connected region, fit its tight box and return its IoU with the ground-truth box.
    attributions: ``(B, C, H, W)`` or ``(B, H, W)``; boxes: ``(B, 4)`` integer (x0, y0, x1, y1), x = column, end
    exclusive (``fl.data.canvas_digits``' ``boxes``); ``batch_size``: maps labelled at a time, an int or ``"auto"``
    (:data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` pixels per chunk); the result does not depend on it."""
    _validate.one_device(attributions=attributions, boxes=boxes)
    a = _pixel_map(attributions, "attributions")
    _validate.batch_size(batch_size, "batch_size")  # before the work
    boxes = _validate.tensor(boxes, "boxes", ndim=2)
    if boxes.shape != (a.shape[0], 4) or boxes.is_floating_point():
        raise ValueError(f"boxes must be ({a.shape[0]}, 4) integer (x0, y0, x1, y1), got "
                         f"{tuple(boxes.shape)} {boxes.dtype}")
    h, w = a.shape[1:]
    if bool((boxes[:, :2] < 0).any() | (boxes[:, 2] > w).any() | (boxes[:, 3] > h).any()
            | (boxes[:, 2] <= boxes[:, 0]).any() | (boxes[:, 3] <= boxes[:, 1]).any()):
        raise ValueError(f"boxes must be non-empty and lie inside the {h}×{w} maps (x0 < x1 ≤ W, y0 < y1 ≤ H)")
    boxes = boxes.long()
    perturb.warn_constant(perturb.constant_maps(a.flatten(1)), "their top pixels are the first by pixel index")
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    rank = perturb.ranks(torch.sort(a.flatten(1), dim=1, descending=True, stable=True).indices)
    keep = (rank < area[:, None]).view_as(a)
    return _box_iou(box_from_mask(_largest_component(keep, batch_size=batch_size)), boxes)


def _percents(percents) -> torch.Tensor:
    """A non-empty 1-D sequence of numbers in (0, 100] as a float64 CPU tensor."""
    if isinstance(percents, (str, bytes)) or not hasattr(percents, "__len__"):
        raise TypeError(f"percents must be a 1-D sequence of numbers in (0, 100], got {type(percents).__name__}")
    if isinstance(percents, torch.Tensor) and (percents.is_complex() or percents.dtype == torch.bool):
        raise TypeError(f"percents must hold real numbers, got dtype {percents.dtype}")
    try:
        p = torch.as_tensor(percents.tolist() if isinstance(percents, torch.Tensor) else list(percents),
                            dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"percents must hold real numbers, got {list(percents)[:8]!r}") from None
    if p.ndim != 1 or p.numel() == 0 or not bool(((p > 0) & (p <= 100)).all()):
        raise ValueError(f"percents must be a non-empty 1-D sequence in (0, 100], got {p.tolist()[:8]}")
    return p


def dice_curve(attributions: torch.Tensor, masks: torch.Tensor, *,
               percents: Sequence[float] = tuple(range(1, 101)), batch_size: BatchSize = 64) -> torch.Tensor:
    """DSC = 2TP / (2TP + FP + FN) of the map binarised at its top p % (``map ≥ percentile(100 − p)``, linear
    percentile as numpy's) against the ground-truth mask, per image and p → ``(B, len(percents))``.
    attributions: ``(B, C, H, W)`` or ``(B, H, W)`` (Σ_c |·|); masks: ``(B, H, W)`` bool. ``batch_size`` images at a
    time (an int, or ``"auto"``: :data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` pixels per chunk; the result does
    not depend on it): each is sorted once and the counts at every p read off its sorted mask (no ``(B, P, H·W)``
    tensor)."""
    _validate.one_device(attributions=attributions, masks=masks)
    a = _pixel_map(attributions, "attributions").flatten(1)
    masks = _validate.tensor(masks, "masks", ndim=3)
    if masks.dtype != torch.bool or masks.shape[0] != a.shape[0] or masks.flatten(1).shape != a.shape:
        raise ValueError(f"masks must be bool ({a.shape[0]}, H, W) matching the maps, got {tuple(masks.shape)} "
                         f"{masks.dtype}")
    p = _percents(percents)
    batch_size = map_chunk(batch_size, a.shape[1])
    perturb.warn_constant(perturb.constant_maps(a), "every pixel is at the percentile: the whole image is kept")
    levels = (1 - p / 100).to(a.device)
    n = a.shape[1]
    out = []
    for i in range(0, a.shape[0], batch_size):
        v = a[i:i + batch_size].double()
        q = torch.quantile(v, levels, dim=1).T.contiguous()  # (b, P)
        ordered, order = torch.sort(v, dim=1)
        gt = masks[i:i + batch_size].flatten(1).gather(1, order).long()
        below = torch.nn.functional.pad(gt.cumsum(dim=1), (1, 0))  # below[:, k]: mask pixels among the k lowest
        k = torch.searchsorted(ordered, q, side="left")  # pixels < q; the rest (≥ q) are predicted
        total = below[:, -1:]
        tp = total - below.gather(1, k)
        fp = (n - k) - tp
        fn = total - tp
        den = 2 * tp + fp + fn
        out.append(torch.where(den > 0, 2 * tp.double() / den.clamp(min=1).double(),
                               torch.ones_like(den, dtype=torch.float64)))
    return torch.cat(out)


def localisation_dice(attributions: torch.Tensor, masks: torch.Tensor, *, aggregate: str = "image",
                      percents: Sequence[float] = tuple(range(1, 101)), batch_size: BatchSize = 64) -> torch.Tensor:
    """Segmentation localisation of spec §2.4 (CT, Table 4) → ``(B,)`` Dice in [0, 1], higher = better.

    aggregate: ``"image"`` (the paper) each image's best DSC over p = 1…100 %; ``"curve"`` (the thesis code) the p
    that maximises the mean DSC curve over the images, every image's DSC at that p. ``batch_size``: images per chunk
    of :func:`dice_curve` (an int or ``"auto"``)."""
    _validate.one_of(aggregate, "aggregate", ("image", "curve"))
    d = dice_curve(attributions, masks, percents=percents, batch_size=batch_size)
    if aggregate == "image":
        return d.amax(dim=1)
    return d[:, int(d.mean(dim=0).argmax())]

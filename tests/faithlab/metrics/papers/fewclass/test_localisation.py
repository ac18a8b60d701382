"""Few-class Fidelity's localisation (``faithlab.metrics.papers.fewclass.localisation``): IoU and Dice by hand on
hand-made boxes and masks, the largest region against scipy's labelling (with ties, and on long snakes), and the
Dice curve independent of the batch size."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy import ndimage

from faithlab import perturb
from faithlab.metrics.papers.fewclass import localisation as loc


# --- localisation ---------------------------------------------------------------------------------------------


def test_iou_of_a_map_that_fills_the_box_is_one_and_takes_the_largest_region():
    a = torch.zeros(2, 10, 10)
    a[0, 2:5, 3:7] = 1.0  # exactly the box: 12 pixels
    a[1, 0, 0:2] = 5.0  # a small bright blob (2 px) …
    a[1, 5:9, 5:8] = 4.0  # … and a larger one: 10 of its 12 px are kept (ties by pixel index)
    boxes = torch.tensor([[3, 2, 7, 5], [5, 5, 8, 9]])  # (x0, y0, x1, y1), end exclusive
    iou = loc.localisation_iou(a, boxes)
    assert iou[0].item() == pytest.approx(1.0)
    assert iou[1].item() == pytest.approx(1.0)  # rows 5–7 and one pixel of row 8: the box again


def test_iou_against_scipy_labelling_and_a_hand_box():
    g = torch.Generator().manual_seed(4)
    a = torch.rand(5, 12, 12, generator=g)
    boxes = torch.tensor([[1, 1, 7, 6], [0, 0, 12, 12], [4, 3, 5, 4], [2, 2, 4, 10], [6, 6, 11, 11]])
    got = loc.localisation_iou(a, boxes)
    for i in range(5):
        x0, y0, x1, y1 = boxes[i].tolist()
        area = (x1 - x0) * (y1 - y0)
        order = np.argsort(-a[i].flatten().numpy(), kind="stable")
        keep = np.zeros(144, bool)
        keep[order[:area]] = True
        labels, k = ndimage.label(keep.reshape(12, 12), structure=np.ones((3, 3)))
        biggest = labels == (np.argmax(np.bincount(labels.ravel())[1:]) + 1)
        r, c = np.nonzero(biggest)
        pr0, pc0, pr1, pc1 = r.min(), c.min(), r.max() + 1, c.max() + 1
        inter = max(0, min(pr1, y1) - max(pr0, y0)) * max(0, min(pc1, x1) - max(pc0, x0))
        union = (pr1 - pr0) * (pc1 - pc0) + area - inter
        assert got[i].item() == pytest.approx(inter / union)


def test_dice_by_hand_and_both_aggregations():
    mask = torch.zeros(2, 10, 10, dtype=torch.bool)
    mask[:, :5, :] = True  # half the image
    a = torch.zeros(2, 10, 10)
    a[0] = mask[0].float() + torch.linspace(0, 0.1, 100).view(10, 10)  # the mask ranks first
    a[1] = torch.linspace(0, 1, 100).view(10, 10)  # the bottom half ranks first: disjoint from the mask
    d = loc.dice_curve(a, mask)
    assert d.shape == (2, 100)
    assert d[0, 49].item() == pytest.approx(1.0)  # top 50 % = the mask
    assert d[1, 49].item() == pytest.approx(0.0)
    assert d[0, 0].item() == pytest.approx(2 * 1 / (2 * 1 + 0 + 49))  # top 1 pixel inside the mask
    img = loc.localisation_dice(a, mask)
    assert img.tolist() == pytest.approx([1.0, 2 * 50 / (2 * 50 + 50)])  # image 1 best at p = 100 %
    curve = loc.localisation_dice(a, mask, aggregate="curve")
    best = int(d.mean(0).argmax())
    assert curve.tolist() == pytest.approx(d[:, best].tolist())
    q = np.percentile(a[1].numpy(), 100 - 30)
    assert d[1, 29].item() == pytest.approx(0.0 if (a[1].numpy() >= q).sum() else math.nan)


def test_box_from_mask_matches_the_data_convention():
    from faithlab import data

    d = data.canvas_digits(split="test", size=16, n=5, color=False)
    assert torch.equal(loc.box_from_mask(d.mask), d.extras["boxes"])


def test_localisation_refuses_bad_boxes_and_masks():
    a = torch.rand(2, 6, 6)
    with pytest.raises(ValueError, match="boxes"):
        loc.localisation_iou(a, torch.tensor([[0, 0, 7, 2], [0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="boxes"):
        loc.localisation_iou(a, torch.tensor([[0.0, 0, 1, 1], [0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="masks"):
        loc.dice_curve(a, torch.ones(2, 6, 6))
    with pytest.raises(ValueError, match="aggregate"):
        loc.localisation_dice(a, torch.ones(2, 6, 6, dtype=torch.bool), aggregate="max")


def test_largest_region_equals_scipy_labelling_with_ties():
    g = torch.Generator().manual_seed(7)
    masks = torch.rand(40, 13, 11, generator=g) < 0.45
    masks[0] = False  # empty
    masks[1] = False
    masks[1, 0:2, 0:2] = True  # two regions of 4 pixels: the first in raster order wins
    masks[1, 5:7, 5:7] = True
    masks[2] = False
    masks[2, range(11), range(11)] = True  # a diagonal: one 8-connected region
    got = loc._largest_component(masks)
    for i in range(40):
        labels, k = ndimage.label(masks[i].numpy(), structure=np.ones((3, 3)))
        want = np.zeros_like(labels, dtype=bool) if k == 0 else labels == np.argmax(np.bincount(labels.ravel())[1:]) + 1
        assert np.array_equal(got[i].numpy(), want), i


# --- issue 32: silent tie orders -------------------------------------------------------------------------------


def _snake(size: int, step: int, flip: bool) -> np.ndarray:
    """One boustrophedon path: full rows every ``step`` rows joined at alternating ends (the longest path inside a
    region for its area: the worst case of label spreading); ``flip`` mirrors it so that it starts at the right."""
    m = np.zeros((size, size), bool)
    rows = list(range(0, size, step))
    for j, r in enumerate(rows):
        m[r] = True
        if j + 1 < len(rows):
            col = size - 1 if j % 2 == 0 else 0
            m[r:rows[j + 1] + 1, col] = True
    return m[:, ::-1] if flip else m


def _spiral(size: int) -> np.ndarray:
    """A square spiral inwards with one-pixel gaps between its turns (one region)."""
    m = np.zeros((size, size), bool)
    top, left, bottom, right = 0, 0, size - 1, size - 1
    while top <= bottom and left <= right:
        m[top, left:right + 1] = True
        m[top:bottom + 1, right] = True
        if bottom - top >= 2:
            m[bottom, left:right + 1] = True
        if right - left >= 2:
            m[top + 2:bottom + 1, left] = True
        top, left, bottom, right = top + 2, left + 2, bottom - 2, right - 2
        if top <= bottom:
            m[top, left - 1] = True  # the step inwards, one pixel into the gap (8-connected to the next turn)
    return m


def test_largest_region_equals_scipy_on_long_snakes():
    rng = np.random.default_rng(11)
    shapes = [_snake(64, 2, False), _snake(64, 2, True), _snake(64, 3, False).T, _spiral(64)]
    broken = []
    for m in shapes:  # the same paths cut into pieces of random length, plus stray pixels
        cut = m & (rng.random(m.shape) > 0.01)
        cut |= rng.random(m.shape) < 0.02
        broken.append(cut)
    masks = torch.from_numpy(np.stack(shapes + broken))
    assert max(ndimage.label(m, structure=np.ones((3, 3)))[1] for m in shapes) == 1  # each path is one region
    for batch_size in (1, 3, 64):
        got = loc._largest_component(masks, batch_size=batch_size)
        for i, m in enumerate(masks.numpy()):
            labels = ndimage.label(m, structure=np.ones((3, 3)))[0]
            want = labels == np.argmax(np.bincount(labels.ravel())[1:]) + 1
            assert np.array_equal(got[i].numpy(), want), (batch_size, i)


def test_dice_curve_does_not_depend_on_the_batch_size():
    g = torch.Generator().manual_seed(12)
    a = torch.rand(70, 2, 16, 16, generator=g)
    a[:10] = a[:10].mul(4).round()  # many ties at the percentiles
    a[10] = 0.0  # a constant map: every p keeps all pixels
    masks = torch.rand(70, 16, 16, generator=g) < 0.3
    masks[11] = False  # an empty mask
    with pytest.warns(perturb.ConstantMapWarning, match=r"1 of 70 sample\(s\) \(e\.g\. \[10\]\)"):
        one = loc.dice_curve(a, masks, batch_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        assert torch.equal(one, loc.dice_curve(a, masks, batch_size=64))
        assert torch.equal(loc.localisation_dice(a, masks, batch_size=1),
                           loc.localisation_dice(a, masks, batch_size=64))
    sums = a.abs().sum(1).flatten(1).double()
    for i in (0, 10, 11, 40):  # against the definition: map ≥ numpy's percentile, then 2TP / (2TP + FP + FN)
        for j in (0, 24, 99):
            pred = sums[i].numpy() >= np.percentile(sums[i].numpy(), 100 - (j + 1))
            gt = masks[i].flatten().numpy()
            tp, fp, fn = (pred & gt).sum(), (pred & ~gt).sum(), (~pred & gt).sum()
            assert one[i, j].item() == pytest.approx(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0)

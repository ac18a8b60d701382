"""Tests for faithlab.data: TensorData, seeded index utilities and the embedded datasets with known ground truth (oracle
checks of the ground truth). The real-dataset loaders on tiny fake copies of their files are test_real_loaders.py's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import faithlab as fl
from faithlab.data import TensorData

D = fl.data


def _runs(mask_row: torch.Tensor) -> list[tuple[int, int]]:
    """Contiguous True runs of a 1-D bool tensor as (start, stop)."""
    padded = torch.cat([torch.tensor([False]), mask_row, torch.tensor([False])]).int()
    edges = (padded[1:] - padded[:-1]).nonzero().flatten().tolist()
    return list(zip(edges[0::2], edges[1::2]))


# --------------------------------------------------------------------------------------------------- TensorData
def test_tensordata_indexing_subset_and_extras():
    x = torch.arange(24.0).reshape(6, 4)
    y = torch.tensor([0, 1, 0, 1, 2, 2])
    mask = x > 10
    data = TensorData(x, y, mask, {"name": "toy", "n_classes": 3}, {"boxes": torch.arange(12).reshape(6, 2)})
    assert len(data) == 6 and data.n_classes == 3
    xi, yi = data[2]
    assert torch.equal(xi, x[2]) and int(yi) == 0
    sub = data.subset([4, 1])
    assert torch.equal(sub.x, x[[4, 1]]) and torch.equal(sub.mask, mask[[4, 1]])
    assert torch.equal(sub.boxes, torch.tensor([[8, 9], [2, 3]]))
    by_mask = data.subset(y == 2)
    assert torch.equal(by_mask.y, torch.tensor([2, 2])) and by_mask.info == data.info
    moved = data.to("cpu")
    assert moved is not data and torch.equal(moved.extras["boxes"], data.boxes)
    with pytest.raises(AttributeError, match="nope"):
        _ = data.nope
    x_batch, y_batch = next(iter(torch.utils.data.DataLoader(data, batch_size=4)))
    assert x_batch.shape == (4, 4) and torch.equal(y_batch, y[:4])


def test_tensordata_rejects_bad_input():
    y = torch.tensor([0, 1])
    with pytest.raises(ValueError, match="x"):
        TensorData(torch.zeros(0, 3), torch.zeros(0, dtype=torch.int64))
    with pytest.raises(TypeError, match="y"):
        TensorData(torch.zeros(2, 3), y.float())
    with pytest.raises(ValueError, match="y"):
        TensorData(torch.zeros(3, 3), y)
    with pytest.raises(TypeError, match="mask"):
        TensorData(torch.zeros(2, 3), y, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="indices"):
        TensorData(torch.zeros(2, 3), y).subset([])


# ------------------------------------------------------------------------------------------- index utilities
def test_split_indices_partition_sizes_and_stratification():
    train, test = D.split_indices(10, seed=3, test_fraction=0.25)
    assert test.numel() == 3  # round(2.5) half up
    assert torch.equal(torch.cat([train, test]).sort().values, torch.arange(10))
    labels = torch.tensor([0] * 10 + [1] * 5 + [2] * 7)
    train, test = D.split_indices(22, seed=1, test_fraction=0.2, labels=labels)
    assert torch.bincount(labels[test]).tolist() == [2, 1, 1]  # round(2.0), round(1.0), round(1.4)
    assert torch.equal(torch.cat([train, test]).sort().values, torch.arange(22))
    again = D.split_indices(22, seed=1, test_fraction=0.2, labels=labels)[1]
    other = D.split_indices(22, seed=2, test_fraction=0.2, labels=labels)[1]
    assert torch.equal(test, again) and not torch.equal(test, other)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="test_fraction"):
            D.split_indices(10, test_fraction=bad)
    with pytest.raises(ValueError, match="labels"):
        D.split_indices(10, labels=torch.zeros(9))


def test_kfold_indices_disjoint_covering_and_complementary():
    folds = D.kfold_indices(23, k=5, seed=7)
    blocks = [block for _, block in folds]
    assert sorted(b.numel() for b in blocks) == [4, 4, 5, 5, 5]
    assert torch.equal(torch.cat(blocks).sort().values, torch.arange(23))  # disjoint and covering
    for train, block in folds:
        assert torch.equal(torch.cat([train, block]).sort().values, torch.arange(23))
    assert all(torch.equal(a[1], b[1]) for a, b in zip(folds, D.kfold_indices(23, k=5, seed=7)))
    assert not torch.equal(blocks[0], D.kfold_indices(23, k=5, seed=8)[0][1])
    with pytest.raises(ValueError, match="k"):
        D.kfold_indices(3, k=4)


def test_switch_labels_exact_count_always_a_different_class():
    y = torch.arange(1000) % 10
    for fraction in (0.0, 0.05, 0.3, 1.0):
        switched = D.switch_labels(y, fraction, n_classes=10, seed=1)
        changed = switched != y
        assert int(changed.sum()) == math.floor(fraction * 1000)  # ⌊fraction·n⌋ and none kept its label
    y10 = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    assert int((D.switch_labels(y10, 0.3, 3) != y10).sum()) == 3
    # the new class is uniform over the other classes: with 2 classes it is forced, with 3 both shifts appear
    big = torch.zeros(3000, dtype=torch.int64)
    new = D.switch_labels(big, 1.0, n_classes=3, seed=0)
    share = torch.bincount(new, minlength=3).float() / 3000
    assert share[0] == 0 and abs(share[1].item() - 0.5) < 0.05
    assert torch.equal(D.switch_labels(y, 0.3, 10, seed=4), D.switch_labels(y, 0.3, 10, seed=4))
    with pytest.raises(ValueError, match="n_classes"):
        D.switch_labels(y, 0.1, n_classes=1)
    with pytest.raises(ValueError, match="y"):
        D.switch_labels(y, 0.1, n_classes=5)
    with pytest.raises(ValueError, match="fraction"):
        D.switch_labels(y, 1.5, n_classes=10)


def test_fraction_subset_size_and_determinism():
    subset = D.fraction_subset(50, 0.3, seed=2)
    assert subset.numel() == 15 and torch.equal(subset, subset.unique())
    assert torch.equal(subset, D.fraction_subset(50, 0.3, seed=2))
    assert not torch.equal(subset, D.fraction_subset(50, 0.3, seed=3))
    assert torch.equal(D.fraction_subset(7, 1.0), torch.arange(7))
    with pytest.raises(ValueError, match="fraction"):
        D.fraction_subset(10, 0.0)


def test_to_tensors_any_dataset_and_batch_size_invariance():
    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return torch.full((2, 3), float(i)), i % 3

    x4, y4 = D.to_tensors(Pairs(), n=7, batch_size=4)
    x1, y1 = D.to_tensors(Pairs(), n=7, batch_size=1)
    assert x4.shape == (7, 2, 3) and y4.dtype == torch.int64
    assert torch.equal(x4, x1) and torch.equal(y4, torch.arange(7) % 3)
    assert D.to_tensors(Pairs())[0].shape[0] == 10


# ------------------------------------------------------------------------------------------------------- digits
def test_digits_content_split_and_normalisation():
    from sklearn.datasets import load_digits

    reference = load_digits()
    train = D.load("digits", split="train", size=8, seed=0)
    test = D.load("digits", split="test", size=8, seed=0)
    assert len(train) + len(test) == 1797 and train.x.shape[1:] == (1, 8, 8)
    assert torch.bincount(test.y).tolist() == [round(0.2 * c) for c in np.bincount(reference.target)]
    assert not set(train.source_index.tolist()) & set(test.source_index.tolist())
    # size 8 is the identity resize: undoing the normalisation gives sklearn's pixels / 16
    mean, std = test.info["mean"][0], test.info["std"][0]
    raw = torch.tensor(reference.images[test.source_index.numpy()] / 16.0, dtype=torch.float32)
    assert torch.allclose(test.x[:, 0] * std + mean, raw, atol=1e-5)
    assert torch.equal(test.y, torch.tensor(reference.target[test.source_index.numpy()]))
    assert abs(train.x.mean().item()) < 1e-5 and abs(train.x.std(unbiased=False).item() - 1) < 1e-4


def test_digits_colour_seeds_and_classes():
    a = D.digits(seed=1, size=16, color=True)
    b = D.digits(seed=1, size=16, color=True)
    c = D.digits(seed=2, size=16, color=True)
    assert a.x.shape[1:] == (3, 16, 16) and torch.equal(a.x, b.x) and not torch.equal(a.x[:50], c.x[:50])
    per_channel = a.x.transpose(0, 1).flatten(1)
    assert torch.allclose(per_channel.mean(1), torch.zeros(3), atol=1e-5)
    assert torch.allclose(per_channel.std(1, unbiased=False), torch.ones(3), atol=1e-4)
    few = D.digits(classes=[7, 2], size=8)
    assert few.info["n_classes"] == 2 and few.info["class_names"] == ["7", "2"]
    targets = torch.tensor(D._embedded._sklearn_digits()[1])[few.source_index]
    assert torch.equal(torch.tensor([7, 2])[few.y], targets)  # label k ↔ classes[k]
    with pytest.raises(ValueError, match="classes"):
        D.digits(classes=[3])
    with pytest.raises(ValueError, match="n_classes"):
        D.digits(classes=[1, 2], n_classes=3)
    with pytest.raises(ValueError, match="split"):
        D.digits(split="val")


# ------------------------------------------------------------------------------------------------ canvas digits
@pytest.mark.parametrize("r", [0.1, 0.2, 0.3])
def test_canvas_foreground_fraction_matches_r(r):
    data = D.canvas_digits(r=r, seed=0)
    realised = data.mask.float().mean(dim=(1, 2))
    assert torch.equal(realised, data.fraction)
    deviation = (realised - r).abs()
    assert deviation.mean() < 0.005 and torch.quantile(deviation, 0.95) < 0.01


def test_canvas_mask_boxes_and_colours_are_ground_truth():
    data = D.canvas_digits(split="test", r=0.15, seed=3, n=64)
    assert len(data) == 64 and data.x.shape[1:] == (3, 32, 32)
    mean = torch.tensor(data.info["mean"])[None, :, None, None]
    std = torch.tensor(data.info["std"])[None, :, None, None]
    raw = (data.x * std + mean).permute(0, 2, 3, 1)  # (N, H, W, 3) in [0, 1]
    for i in range(len(data)):
        inside, outside = raw[i][data.mask[i]], raw[i][~data.mask[i]]
        # two flat colours: the mask is exactly the set of digit-coloured pixels
        assert (inside - inside[0]).abs().max() < 1e-5 and (outside - outside[0]).abs().max() < 1e-5
        assert (inside[0] - outside[0]).abs().min() > 0.24
        x0, y0, x1, y1 = data.boxes[i].tolist()
        rows, cols = data.mask[i].any(1).nonzero().flatten(), data.mask[i].any(0).nonzero().flatten()
        assert (y0, y1, x0, x1) == (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)


def test_canvas_clutter_adds_digit_fragments_outside_the_mask_only():
    clean = D.canvas_digits(split="test", size=24, r=0.15, seed=2, n=48)
    cluttered = D.canvas_digits(split="test", size=24, r=0.15, seed=2, n=48, clutter=3)
    for name in ("y", "mask", "boxes", "fraction", "source_index"):  # the digit, its place and label are unchanged
        assert torch.equal(getattr(clean, name), getattr(cluttered, name)), name
    assert cluttered.info["clutter"] == 3 and clean.info["clutter"] == 0

    def raw(d):
        return (d.x * torch.tensor(d.info["std"])[None, :, None, None]
                + torch.tensor(d.info["mean"])[None, :, None, None]).permute(0, 2, 3, 1)

    a, b = raw(clean), raw(cluttered)
    assert torch.allclose(a[clean.mask], b[clean.mask], atol=1e-5)  # the digit keeps its colour
    fragments = 0
    for i in range(len(clean)):
        fg, bg = a[i][clean.mask[i]][0], a[i][~clean.mask[i]][0]
        outside = b[i][~clean.mask[i]]
        is_fg = (outside - fg).abs().max(1).values < 1e-5
        is_bg = (outside - bg).abs().max(1).values < 1e-5
        assert bool((is_fg | is_bg).all())  # still two flat colours: fragments are painted in the digit's colour
        fragments += int(is_fg.sum())
    # 3 fragments of about a quarter of a digit each, minus overlaps with the digit and each other
    assert 0.25 < fragments / int(clean.mask.sum()) < 0.75
    assert torch.equal(cluttered.x, D.canvas_digits(split="test", size=24, r=0.15, seed=2, n=48, clutter=3).x)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="clutter"):
            D.canvas_digits(clutter=bad)


def test_canvas_few_class_remap_determinism_and_errors():
    two = D.canvas_digits(classes=[0, 1], r=0.2, seed=0)
    three = D.canvas_digits(classes=[5, 1, 2], r=0.2, seed=0, color=False)
    assert set(two.y.tolist()) == {0, 1} and two.info["n_classes"] == 2
    targets = torch.tensor(D._embedded._sklearn_digits()[1])
    assert torch.equal(torch.tensor([5, 1, 2])[three.y], targets[three.source_index])
    assert three.x.shape[1] == 1 and torch.bincount(three.y).min() > 100
    again = D.canvas_digits(classes=[0, 1], r=0.2, seed=0)
    other = D.canvas_digits(classes=[0, 1], r=0.2, seed=1)
    assert torch.equal(two.x, again.x) and torch.equal(two.mask, again.mask)
    assert not torch.equal(two.mask[:20], other.mask[:20])
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="r"):
            D.canvas_digits(r=bad)
    with pytest.raises(ValueError, match="classes"):
        D.canvas_digits(classes=[0, 0])


# -------------------------------------------------------------------------------------------------- time series
def _seq_comb_oracle(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Class from the slope sign of the (channel-mean) signal in each masked window: bit j ↔ window j rising."""
    predictions = []
    for series, row in zip(x.mean(-1), mask):
        label = 0
        for j, (a, b) in enumerate(_runs(row)):
            t = torch.arange(b - a, dtype=torch.float32)
            label |= int(((t - t.mean()) * series[a:b]).sum() > 0) << j
        predictions.append(label)
    return torch.tensor(predictions)


def _freq_shape_oracle(x: torch.Tensor, mask: torch.Tensor, freqs: list[float]) -> torch.Tensor:
    """Class whose frequency carries the most power (summed over the masked windows)."""
    f = torch.tensor(freqs)
    predictions = []
    for series, row in zip(x.mean(-1), mask):
        power = torch.zeros(len(freqs))
        for a, b in _runs(row):
            t = torch.arange(b - a, dtype=torch.float32)[:, None]
            angle = 2 * math.pi * f[None, :] * t
            seg = series[a:b, None]
            power += (seg * angle.cos()).sum(0) ** 2 + (seg * angle.sin()).sum(0) ** 2
        predictions.append(int(power.argmax()))
    return torch.tensor(predictions)


def test_seq_comb_mask_holds_the_label():
    data = D.load("seq_comb", n=300, length=80, channels=2, seed=5)
    assert data.x.shape == (300, 80, 2) and data.mask.shape == (300, 80)
    assert all(len(_runs(row)) == 2 for row in data.mask)
    kept = data.x * data.mask[:, :, None]  # every non-salient step zeroed
    assert (_seq_comb_oracle(kept, data.mask) == data.y).float().mean() == 1.0
    clean = D.timeseries("seq_comb", n=50, noise=0.0, seed=5)
    assert (clean.x[~clean.mask] == 0).all()  # without noise, nothing outside the windows
    assert torch.bincount(data.y, minlength=4).min() > 40  # all 2**2 shape combinations occur


def test_freq_shape_mask_holds_the_label():
    data = D.load("freq_shape", n=300, n_classes=3, seed=2, window=(16, 24))
    kept = data.x * data.mask[:, :, None]
    accuracy = (_freq_shape_oracle(kept, data.mask, data.info["frequencies"]) == data.y).float().mean()
    assert accuracy >= 0.98
    lengths = data.window_length
    assert lengths.min() >= 16 and lengths.max() <= 24 and torch.equal(data.mask.sum(1), lengths.sum(1))


def test_timeseries_seeds_and_errors():
    a, b = D.timeseries("freq_shape", n=20, seed=1), D.timeseries("freq_shape", n=20, seed=1)
    c = D.timeseries("freq_shape", n=20, seed=2)
    test = D.timeseries("freq_shape", split="test", n=20, seed=1)
    assert torch.equal(a.x, b.x) and torch.equal(a.mask, b.mask)
    assert not torch.equal(a.x, c.x) and not torch.equal(a.x, test.x)
    with pytest.raises(ValueError, match="task"):
        D.timeseries("sawtooth")
    with pytest.raises(ValueError, match="window"):
        D.timeseries(window=(1, 5))
    with pytest.raises(ValueError, match="length"):
        D.timeseries(length=30, window=(10, 20))
    with pytest.raises(ValueError, match="n_classes"):
        D.timeseries("seq_comb", n_classes=5, n_windows=2)


# ------------------------------------------------------------------------------------------------------- tokens
def test_tokens_label_follows_from_rationale_alone():
    data = D.load("tokens", n=400, length=20, vocab_size=30, n_signal=3, seed=4)
    info = data.info
    pos_lo, pos_hi = info["positive_ids"]
    neg_lo, neg_hi = info["negative_ids"]
    is_pos = (data.x >= pos_lo) & (data.x < pos_hi)
    is_neg = (data.x >= neg_lo) & (data.x < neg_hi)
    assert torch.equal(data.mask, is_pos | is_neg)  # the rationale is exactly the signal tokens
    rule = ((is_pos & data.mask).sum(1) > (is_neg & data.mask).sum(1)).long()
    assert torch.equal(rule, data.y) and 0.35 < data.y.float().mean() < 0.65
    positions = torch.arange(20)[None, :]
    assert torch.equal(data.x == 0, positions >= data.lengths[:, None])  # right padding with 0 only
    assert data.lengths.min() >= info["min_length"] and data.lengths.max() <= 20 and data.lengths.unique().numel() > 5
    assert torch.equal(data.x, D.tokens(n=400, length=20, vocab_size=30, n_signal=3, seed=4).x)
    assert not torch.equal(data.x, D.tokens(n=400, length=20, vocab_size=30, n_signal=3, seed=5).x)
    with pytest.raises(ValueError, match="vocab_size"):
        D.tokens(vocab_size=8, n_signal=3)
    with pytest.raises(ValueError, match="min_length"):
        D.tokens(length=10, min_length=2, max_signal=3)


# --------------------------------------------------------------------------------------------------------- load
def test_load_dispatch_and_errors(tmp_path):
    names = D.available()
    assert {"digits", "canvas_digits", "seq_comb", "freq_shape", "tokens", "cifar10", "sst2", "pam"} <= set(names)
    with pytest.raises(ValueError, match="name must be one of .*canvas_digits"):
        D.load("mnist")
    with pytest.raises(ValueError, match="data_dir"):
        D.load("cifar10")
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py") as err:
        D.load("cifar10", data_dir=tmp_path)
    assert str(tmp_path) in str(err.value)
    with pytest.raises(ValueError, match="download"):
        D.load("sst2", data_dir=tmp_path, download=True)
    assert len(D.load("tokens", n=5)) == 5


def test_seq_comb_offset_shifts_every_value_and_nothing_else():
    import faithlab as fl

    a = fl.data.load("seq_comb", split="test", n=20, length=40, window=(4, 8), seed=3)
    b = fl.data.load("seq_comb", split="test", n=20, length=40, window=(4, 8), seed=3, offset=3.0)
    assert torch.allclose(b.x, a.x + 3.0) and torch.equal(a.y, b.y) and torch.equal(a.mask, b.mask)
    assert b.info["offset"] == 3.0
    with pytest.raises(ValueError, match="offset"):
        fl.data.load("seq_comb", split="test", n=4, length=40, window=(4, 8), offset=float("nan"))


# -------------------------------------------------------------------------------------------------- CT slices
def test_ct_slices_deterministic_balanced_and_split():
    test = D.load("ct_slices", split="test", seed=0)
    assert test.x.shape == (200, 1, 32, 32) and test.mask.shape == (200, 32, 32) and test.mask.dtype == torch.bool
    assert torch.bincount(test.y).tolist() == [100, 100] and test.info["class_names"] == list(D.CT_CLASS_NAMES)
    again, other = D.ct_slices(split="test", seed=0), D.ct_slices(split="test", seed=1)
    assert torch.equal(test.x, again.x) and torch.equal(test.y, again.y) and torch.equal(test.mask, again.mask)
    assert not torch.equal(test.x, other.x) and not torch.equal(test.mask, other.mask)
    train = D.ct_slices(split="train", seed=0)
    assert len(train) == 800 and torch.bincount(train.y).tolist() == [400, 400]
    assert abs(train.x.mean().item()) < 1e-4 and abs(train.x.std(unbiased=False).item() - 1) < 1e-3
    assert test.info["mean"] == train.info["mean"] and test.info["std"] == train.info["std"]  # train statistics
    assert torch.cdist(train.x.flatten(1), test.x.flatten(1)).min() > 1.0  # independent streams: no shared slice
    few = D.ct_slices(split="test", n=7, seed=0, size=16)
    assert few.x.shape == (7, 1, 16, 16) and sorted(torch.bincount(few.y).tolist()) == [3, 4]
    assert len(D.ct_slices(split="test", test_fraction=0.3, size=16)) == 300


def test_ct_slices_mask_boxes_and_label_evidence():
    data = D.ct_slices(split="test", seed=2)
    mask = data.mask
    assert mask.flatten(1).any(1).all() and not (mask & ~data.body).any()  # a non-empty organ inside the body
    assert torch.equal(data.fraction, mask.float().mean(dim=(1, 2)))
    for i in range(len(data)):
        x0, y0, x1, y1 = data.boxes[i].tolist()
        rows, cols = mask[i].any(1).nonzero().flatten(), mask[i].any(0).nonzero().flatten()
        assert (y0, y1, x0, x1) == (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1)
    raw = data.x[:, 0] * data.info["std"][0] + data.info["mean"][0]
    organ = torch.stack([raw[i][mask[i]].mean() for i in range(len(data))])
    tissue = torch.stack([raw[i][data.body[i] & ~mask[i]].median() for i in range(len(data))])
    outside = torch.stack([raw[i][~mask[i]].mean() for i in range(len(data))])
    yes = data.y == 1
    assert organ[yes].mean() - organ[~yes].mean() > 0.15  # contrast agent: a brighter organ
    assert ((organ - tissue > 0.05) == yes).float().mean() > 0.9  # an oracle reading the organ alone
    assert abs(outside[yes].mean() - outside[~yes].mean()) < 0.03  # nothing outside tells the label
    assert torch.equal(data.enhancement >= 0.1, yes)  # default contrast (0.1, 0.4)


def test_ct_slices_label_changes_only_the_organ():
    from faithlab.data._embedded import _render_ct

    y = torch.tensor([0, 1] * 8)
    a, mask, body, enh = _render_ct(y, 32, (0.1, 0.4), 0.05, torch.Generator().manual_seed(5))
    b, mask_b, body_b, enh_b = _render_ct(1 - y, 32, (0.1, 0.4), 0.05, torch.Generator().manual_seed(5))
    assert torch.equal(mask, mask_b) and torch.equal(body, body_b)
    outside = ~mask[:, None]
    assert torch.equal(a[outside], b[outside])  # the same slice but for the organ
    with_contrast = torch.where(y[:, None, None, None] == 1, a, b)
    without = torch.where(y[:, None, None, None] == 1, b, a)
    assert (with_contrast - without)[mask[:, None]].min() > 0  # flipping to "with contrast" brightens every pixel


def test_ct_slices_errors_and_registry():
    assert {"ct_slices", "imagenet_vehicles", "ct_contrast"} <= set(D.available())
    with pytest.raises(ValueError, match="size"):
        D.ct_slices(size=8)
    with pytest.raises(ValueError, match="contrast"):
        D.ct_slices(contrast=(0.4, 0.1))
    with pytest.raises(ValueError, match="split"):
        D.ct_slices(split="val")
    with pytest.raises(ValueError, match="test_fraction"):
        D.ct_slices(test_fraction=1.0)


@pytest.mark.parametrize("name, options", [
    ("ct_slices", {"size": 28, "seed": 0}),
    ("canvas_digits", {"size": 28, "r": 0.2, "classes": [0, 1, 7], "color": True, "seed": 0}),
])
def test_embedded_data_do_not_depend_on_the_number_of_threads(name, options):
    """The standardisation statistics were float32 torch reductions, which split the sum by the number of CPU
    threads: ct_slices' mean changed in its last bit between 1 and 2 threads, and with it every pixel, model and
    Few-class score of the CT chapter (-j 2 in make book against -j 1 by hand). Now bit-identical."""
    before = torch.get_num_threads()
    digests = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            d = fl.data.load(name, split="test", **options)
            digests.append((d.x.numpy().tobytes(), d.info["mean"], d.info["std"]))
    finally:
        torch.set_num_threads(before)
    assert digests[0] == digests[1] == digests[2]

"""The chapter's image stand-in carries F-Fidelity's mechanism by construction: on the saturated canvases every
pixel of every canvas lies far from the removal value (the normalised zero, the dataset-mean colour) in every
channel, while the digits, placements and masks are those of the grey canvases."""

from __future__ import annotations

import pytest
import torch

import faithlab as fl
import faithlab_study as fs

F = fs.papers.ffidelity


def test_palette_canvases_keep_the_digits_and_keep_every_pixel_away_from_the_removal_colour():
    train = F.palette_canvases(split="train", size=12, r=0.3, n=40, seed=1)
    test = F.palette_canvases(split="test", size=12, r=0.3, seed=1)
    grey = fl.data.load("canvas_digits", split="test", size=12, r=0.3, color=False, seed=1)
    assert test.x.shape == (len(grey.y), 3, 12, 12) and torch.equal(test.y, grey.y)
    assert torch.equal(test.mask, grey.mask) and test.info["palette"] == "saturated"
    mean, std = (torch.tensor(test.info[k])[None, :, None, None] for k in ("mean", "std"))
    colours = test.x * std + mean  # back to [0, 1]
    # every channel of every pixel within 0.2 of 0 or of 1: at least 0.3 away from the dataset mean (about 0.5)
    assert bool(((colours <= 0.2 + 1e-5) | (colours >= 0.8 - 1e-5)).all())
    assert bool(((colours - mean).abs() >= 0.25).all())
    # the digit differs from its background in at least one channel by at least 0.6
    digit = colours.permute(0, 2, 3, 1)[test.mask]
    background = colours.permute(0, 2, 3, 1)[~test.mask]
    assert digit.shape[1] == background.shape[1] == 3
    first = torch.stack([colours[i, :, test.mask[i]][:, 0] - colours[i, :, ~test.mask[i]][:, 0]
                         for i in range(len(test.y))])
    assert bool((first.abs().max(1).values >= 0.6 - 1e-5).all())
    # normalised with the train split's statistics (one canvas per train digit), the same for every split
    assert train.info["mean"] == test.info["mean"] and len(train.y) == 40
    again = F.palette_canvases(split="test", size=12, r=0.3, seed=1)
    assert torch.equal(again.x, test.x)  # colours drawn from a generator keyed to (seed, split, n)
    other = F.palette_canvases(split="test", size=12, r=0.3, seed=2)
    assert not torch.equal(other.x, test.x)
    with pytest.raises(ValueError, match="band"):
        F.palette_canvases(split="test", size=12, band=0.6)


def test_canvas_models_load_the_palette_into_the_data_and_the_cache_key():
    cm = F.CanvasModels(image_size=12, n_train=30, palette="saturated")
    train, test = cm.load(0)
    assert train.info["palette"] == "saturated" and cm.data_key(0)["palette"] == "saturated" and cm.saturated
    assert "palette" not in F.CanvasModels(image_size=12).data_key(0)  # the other models keep their cache keys
    assert "palette" not in F.CanvasModels(color=False, palette="saturated").data_key(0)
    with pytest.raises(ValueError, match="palette"):
        F.CanvasModels(palette="pastel")

"""Distances between explanation maps (faithlab.metrics.papers.reco_mege.distances), against scipy / scikit-image /
hand computations. ReCo/MeGe's distance sanity checks built on them (the study's) are
tests/faithlab_study/papers/reco_mege/test_sanity_distances.py's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch
from skimage.metrics import structural_similarity

from faithlab.metrics.papers.reco_mege.distances import DISTANCES, map_distance
from random_maps import random_maps


# ------------------------------------------------------------------------------------------------- map_distance
@pytest.mark.parametrize("kind", DISTANCES)
def test_identical_maps_are_at_distance_zero(kind):
    a = random_maps(4, 3, 9, 8)
    assert torch.allclose(map_distance(a, a, kind=kind, channel_dim=-3), torch.zeros(4, dtype=torch.float64),
                          atol=1e-7)
    assert torch.allclose(map_distance(a[:, 0], a[:, 0].clone(), kind=kind), torch.zeros(4, dtype=torch.float64),
                          atol=1e-7)


@pytest.mark.parametrize("kind", DISTANCES)
def test_different_maps_are_at_positive_distance(kind):
    a, b = random_maps(5, 8, 8, seed=1), random_maps(5, 8, 8, seed=2)
    assert bool((map_distance(a, b, kind=kind) > 0.01).all())


def test_spearman_matches_scipy_with_ties():
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 4, (6, 5, 7), generator=g).double()  # 4 values over 35 pixels: many ties
    b = torch.randint(0, 5, (6, 5, 7), generator=g).double()
    rho = np.array([scipy.stats.spearmanr(x.ravel(), y.ravel()).statistic for x, y in zip(a.numpy(), b.numpy())])
    assert np.allclose(map_distance(a, b, kind="spearman").numpy(), np.sqrt(1 - np.abs(rho)), atol=1e-12)
    assert np.allclose(map_distance(a, b, kind="spearman_linear").numpy(), 1 - np.abs(rho), atol=1e-12)


def test_spearman_of_a_reversed_map_is_zero_and_of_a_constant_map_nan():
    a = random_maps(10, 10)
    assert float(map_distance(a, -a, kind="spearman")) == pytest.approx(0.0, abs=1e-7)
    assert math.isnan(float(map_distance(a, torch.ones(10, 10), kind="spearman_linear")))


def _skimage_ssim_distance(a: np.ndarray, b: np.ndarray, data_range=None) -> np.ndarray:
    return np.array([1 - structural_similarity(x, y, win_size=7, data_range=x.max() - x.min() if data_range is None
                                               else data_range) for x, y in zip(a, b)])


def test_ssim_matches_skimage_per_pair():
    a, b = random_maps(6, 12, 9, seed=4), random_maps(6, 12, 9, seed=5)
    b = 0.6 * a + 0.4 * b  # partly similar maps, so SSIM is far from 0
    assert np.allclose(map_distance(a, b, kind="ssim").numpy(), _skimage_ssim_distance(a.numpy(), b.numpy()),
                       atol=1e-10)
    assert np.allclose(map_distance(a, b, kind="ssim", data_range=3.0).numpy(),
                       _skimage_ssim_distance(a.numpy(), b.numpy(), data_range=3.0), atol=1e-10)


def test_ssim_with_channel_averaging_matches_skimage_on_the_averaged_maps():
    a, b = random_maps(5, 3, 10, 11, seed=6), random_maps(5, 3, 10, 11, seed=7)
    b = 0.7 * a + 0.3 * b
    ours = map_distance(a, b, kind="ssim", channel_dim=-3)
    assert np.allclose(ours.numpy(), _skimage_ssim_distance(a.mean(1).numpy(), b.mean(1).numpy()), atol=1e-10)
    ours32 = map_distance(a.float(), b.float(), kind="ssim", channel_dim=-3)
    assert ours32.dtype == torch.float32 and torch.allclose(ours32.double(), ours, atol=1e-6)


def test_ssim_is_nan_where_the_reference_is_constant_and_needs_7x7():
    assert math.isnan(float(map_distance(torch.ones(8, 8), random_maps(8, 8), kind="ssim")))
    with pytest.raises(ValueError, match="7×7"):
        map_distance(random_maps(6, 9), random_maps(6, 9), kind="ssim")


def test_l1_l2_hand_cases():
    a = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
    b = torch.tensor([[1.0, 1.0], [0.0, 6.0]])  # differences −1, 0, 2, −3
    assert float(map_distance(a, b, kind="l1")) == pytest.approx(6.0)
    assert float(map_distance(a, b, kind="l2")) == pytest.approx(math.sqrt(14.0))
    c = torch.stack([a, 3 * a])[:, None].expand(2, 3, 2, 2)  # 3 equal channels: their mean is the map
    assert map_distance(c, b[None, None].expand(1, 3, 2, 2), kind="l1", channel_dim=-3).tolist() == [6.0, 12.0]


def test_dice_hand_case_with_ties_at_the_threshold():
    # 10 pixels, top_fraction 0.2 → k = 2. a: largest 9 then 7 twice → the tie at 7 keeps 3 pixels {0, 1, 2}.
    a = torch.tensor([[9.0, 7.0, 7.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    b = torch.tensor([[0.0, 8.0, 0.0, 0.0, 0.0], [9.0, 0.0, 0.0, 0.0, 0.0]])  # {1, 5}
    # |A ∩ B| = 1, |A| + |B| = 5 → Dice = 2/5
    assert float(map_distance(a, b, kind="dice", top_fraction=0.2)) == pytest.approx(1 - 2 / 5)
    # top_fraction 0.1 → k = 1: A = {0}, B = {5} → disjoint
    assert float(map_distance(a, b, kind="dice", top_fraction=0.1)) == pytest.approx(1.0)
    # a constant map selects every pixel: Dice = 2·2 / (10 + 2)
    assert float(map_distance(torch.ones(2, 5), b, kind="dice", top_fraction=0.2)) == pytest.approx(1 - 4 / 12)
    # by signed value: the top pixels of −a are its six tied zeros, not −9 (pixel 0, the top pixel of a)
    assert float(map_distance(-a, a, kind="dice")) == pytest.approx(1.0)


@pytest.mark.parametrize("kind", DISTANCES)
def test_batch_and_broadcast_give_the_numbers_of_one_pair_at_a_time(kind):
    a, b = random_maps(5, 3, 8, 8, seed=8), random_maps(5, 3, 8, 8, seed=9)
    batched = map_distance(a, b, kind=kind, channel_dim=-3)
    single = torch.stack([map_distance(a[i], b[i], kind=kind, channel_dim=-3) for i in range(5)])
    assert torch.allclose(batched, single, atol=1e-12, equal_nan=True)
    ref = map_distance(a[0], b, kind=kind, channel_dim=-3)  # one reference against a batch
    assert torch.allclose(ref, map_distance(a[:1].expand(5, 3, 8, 8), b, kind=kind, channel_dim=-3), atol=1e-12)
    grid = map_distance(a[:, None], b[None], kind=kind, channel_dim=-3)  # (5, 5) all pairs
    assert grid.shape == (5, 5) and torch.allclose(grid.diagonal(), batched, atol=1e-12)


@pytest.mark.parametrize("kind", DISTANCES)
def test_bad_arguments_raise_naming_the_argument(kind):
    a = random_maps(8, 8)
    with pytest.raises(TypeError, match="b must be a torch.Tensor"):
        map_distance(a, a.numpy(), kind=kind)
    with pytest.raises(ValueError, match="b holds maps of shape"):
        map_distance(a, random_maps(8, 9), kind=kind)
    with pytest.raises(ValueError, match="batch dims of b"):
        map_distance(random_maps(2, 8, 8), random_maps(3, 8, 8), kind=kind)
    with pytest.raises(ValueError, match="a must hold 2-D maps"):
        map_distance(random_maps(8), random_maps(8), kind=kind)
    with pytest.raises(ValueError, match="a contains NaN"):
        map_distance(torch.full((8, 8), math.nan), a, kind=kind)
    with pytest.raises(TypeError, match="a must be a real tensor"):
        map_distance(a > 0, a, kind=kind)
    with pytest.raises(ValueError, match="channel_dim"):
        map_distance(a, a, kind=kind, channel_dim=-1)


def test_bad_options_raise_naming_the_option():
    a = random_maps(8, 8)
    with pytest.raises(ValueError, match="kind must be one of"):
        map_distance(a, a, kind="cosine")
    with pytest.raises(ValueError, match="top_fraction"):
        map_distance(a, a, kind="l1", top_fraction=0.0)  # checked whatever the kind
    with pytest.raises(ValueError, match="top_fraction"):
        map_distance(a, a, kind="dice", top_fraction=1.5)
    with pytest.raises(ValueError, match="data_range"):
        map_distance(a, a, kind="ssim", data_range=0.0)
    with pytest.raises(TypeError, match="data_range"):
        map_distance(a, a, kind="ssim", data_range="1")

"""Distances between explanation maps (faithlab.metrics.papers.reco_mege.distances) and ReCo/MeGe's distance sanity
checks (faithlab_study.papers.reco_mege.claims.sanity, paper §4.3, Figs. 2–3), against scipy / scikit-image / hand
computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch
from skimage.metrics import structural_similarity

import faithlab as fl
from faithlab.metrics.papers.reco_mege.distances import DISTANCES, map_distance
from faithlab_study.papers.reco_mege.claims import sanity as R


def _rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ------------------------------------------------------------------------------------------------- map_distance
@pytest.mark.parametrize("kind", DISTANCES)
def test_identical_maps_are_at_distance_zero(kind):
    a = _rand(4, 3, 9, 8)
    assert torch.allclose(map_distance(a, a, kind=kind, channel_dim=-3), torch.zeros(4, dtype=torch.float64),
                          atol=1e-7)
    assert torch.allclose(map_distance(a[:, 0], a[:, 0].clone(), kind=kind), torch.zeros(4, dtype=torch.float64),
                          atol=1e-7)


def test_identical_maps_are_at_wasserstein_zero():
    a = _rand(3, 6, 5)
    assert torch.allclose(R.wasserstein(a, a), torch.zeros(3, dtype=torch.float64), atol=1e-12)


@pytest.mark.parametrize("kind", DISTANCES)
def test_different_maps_are_at_positive_distance(kind):
    a, b = _rand(5, 8, 8, seed=1), _rand(5, 8, 8, seed=2)
    assert bool((map_distance(a, b, kind=kind) > 0.01).all())


def test_spearman_matches_scipy_with_ties():
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 4, (6, 5, 7), generator=g).double()  # 4 values over 35 pixels: many ties
    b = torch.randint(0, 5, (6, 5, 7), generator=g).double()
    rho = np.array([scipy.stats.spearmanr(x.ravel(), y.ravel()).statistic for x, y in zip(a.numpy(), b.numpy())])
    assert np.allclose(map_distance(a, b, kind="spearman").numpy(), np.sqrt(1 - np.abs(rho)), atol=1e-12)
    assert np.allclose(map_distance(a, b, kind="spearman_linear").numpy(), 1 - np.abs(rho), atol=1e-12)


def test_spearman_of_a_reversed_map_is_zero_and_of_a_constant_map_nan():
    a = _rand(10, 10)
    assert float(map_distance(a, -a, kind="spearman")) == pytest.approx(0.0, abs=1e-7)
    assert math.isnan(float(map_distance(a, torch.ones(10, 10), kind="spearman_linear")))


def _skimage_ssim_distance(a: np.ndarray, b: np.ndarray, data_range=None) -> np.ndarray:
    return np.array([1 - structural_similarity(x, y, win_size=7, data_range=x.max() - x.min() if data_range is None
                                               else data_range) for x, y in zip(a, b)])


def test_ssim_matches_skimage_per_pair():
    a, b = _rand(6, 12, 9, seed=4), _rand(6, 12, 9, seed=5)
    b = 0.6 * a + 0.4 * b  # partly similar maps, so SSIM is far from 0
    assert np.allclose(map_distance(a, b, kind="ssim").numpy(), _skimage_ssim_distance(a.numpy(), b.numpy()),
                       atol=1e-10)
    assert np.allclose(map_distance(a, b, kind="ssim", data_range=3.0).numpy(),
                       _skimage_ssim_distance(a.numpy(), b.numpy(), data_range=3.0), atol=1e-10)


def test_ssim_with_channel_averaging_matches_skimage_on_the_averaged_maps():
    a, b = _rand(5, 3, 10, 11, seed=6), _rand(5, 3, 10, 11, seed=7)
    b = 0.7 * a + 0.3 * b
    ours = map_distance(a, b, kind="ssim", channel_dim=-3)
    assert np.allclose(ours.numpy(), _skimage_ssim_distance(a.mean(1).numpy(), b.mean(1).numpy()), atol=1e-10)
    ours32 = map_distance(a.float(), b.float(), kind="ssim", channel_dim=-3)
    assert ours32.dtype == torch.float32 and torch.allclose(ours32.double(), ours, atol=1e-6)


def test_ssim_is_nan_where_the_reference_is_constant_and_needs_7x7():
    assert math.isnan(float(map_distance(torch.ones(8, 8), _rand(8, 8), kind="ssim")))
    with pytest.raises(ValueError, match="7×7"):
        map_distance(_rand(6, 9), _rand(6, 9), kind="ssim")


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
    a, b = _rand(5, 3, 8, 8, seed=8), _rand(5, 3, 8, 8, seed=9)
    batched = map_distance(a, b, kind=kind, channel_dim=-3)
    single = torch.stack([map_distance(a[i], b[i], kind=kind, channel_dim=-3) for i in range(5)])
    assert torch.allclose(batched, single, atol=1e-12, equal_nan=True)
    ref = map_distance(a[0], b, kind=kind, channel_dim=-3)  # one reference against a batch
    assert torch.allclose(ref, map_distance(a[:1].expand(5, 3, 8, 8), b, kind=kind, channel_dim=-3), atol=1e-12)
    grid = map_distance(a[:, None], b[None], kind=kind, channel_dim=-3)  # (5, 5) all pairs
    assert grid.shape == (5, 5) and torch.allclose(grid.diagonal(), batched, atol=1e-12)


def test_wasserstein_batch_and_broadcast_give_the_numbers_of_one_pair_at_a_time():
    a, b = _rand(4, 5, seed=10).abs(), _rand(3, 4, 5, seed=11)
    assert torch.allclose(R.wasserstein(a, b), torch.stack([R.wasserstein(a, x) for x in b]), atol=1e-12)


@pytest.mark.parametrize("kind", DISTANCES)
def test_bad_arguments_raise_naming_the_argument(kind):
    a = _rand(8, 8)
    with pytest.raises(TypeError, match="b must be a torch.Tensor"):
        map_distance(a, a.numpy(), kind=kind)
    with pytest.raises(ValueError, match="b holds maps of shape"):
        map_distance(a, _rand(8, 9), kind=kind)
    with pytest.raises(ValueError, match="batch dims of b"):
        map_distance(_rand(2, 8, 8), _rand(3, 8, 8), kind=kind)
    with pytest.raises(ValueError, match="a must hold 2-D maps"):
        map_distance(_rand(8), _rand(8), kind=kind)
    with pytest.raises(ValueError, match="a contains NaN"):
        map_distance(torch.full((8, 8), math.nan), a, kind=kind)
    with pytest.raises(TypeError, match="a must be a real tensor"):
        map_distance(a > 0, a, kind=kind)
    with pytest.raises(ValueError, match="channel_dim"):
        map_distance(a, a, kind=kind, channel_dim=-1)


def test_bad_options_raise_naming_the_option():
    a = _rand(8, 8)
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


# ------------------------------------------------------------------------------------------------- wasserstein
def test_wasserstein_matches_scipy_on_tiny_maps():
    a, b = _rand(4, 4, 5, seed=12), _rand(4, 4, 5, seed=13)
    grid = np.array([(i, j) for i in range(4) for j in range(5)], dtype=float)
    ref = [scipy.stats.wasserstein_distance_nd(grid, grid, np.abs(x).ravel(), np.abs(y).ravel())
           for x, y in zip(a.numpy(), b.numpy())]
    assert np.allclose(R.wasserstein(a, b).numpy(), ref, atol=1e-9)


def test_wasserstein_a_unit_mass_moved_costs_its_euclidean_displacement():
    a = torch.zeros(6, 7)
    a[1, 1] = 1.0
    b, c = torch.zeros(6, 7), torch.zeros(6, 7)
    b[1, 4] = 2.0  # 3 pixels to the right (scaled: the maps are normalised)
    c[4, 5] = -1.0  # (3, 4) away: 5 pixels (|·| of a negative map)
    assert R.wasserstein(a, torch.stack([b, c])).tolist() == pytest.approx([3.0, 5.0])
    assert math.isnan(float(R.wasserstein(a, torch.zeros(6, 7))))


# ------------------------------------------------------------------------------------------------- protocol
def test_moving_point_maps_shape_and_path():
    m = R.moving_point_maps(size=32, steps=100, radius=2.0)
    assert m.shape == (100, 32, 32) and m.dtype == torch.float64 and bool((m > 0).all())
    peaks = [divmod(int(x.argmax()), 32) for x in m]
    assert peaks[0] == (4, 4) and peaks[-1] == (27, 27)
    assert all(r0 <= r1 and c0 <= c1 for (r0, c0), (r1, c1) in zip(peaks, peaks[1:]))
    blend = R.moving_point_maps(size=32, steps=5, radius=2.0, interpolation="blend")
    assert torch.allclose(blend[2], (m[0] + m[-1]) / 2) and torch.allclose(blend[-1], m[-1])


@pytest.fixture(scope="module")
def moving_point_checks():
    frames = {how: R.distance_frame(maps[0], maps, coords={"step": range(len(maps))})
              for how in ("centre", "blend") for maps in [R.moving_point_maps(size=32, steps=100, interpolation=how)]}
    return {how: R.monotonicity(f, x="step").set_index("distance") for how, f in frames.items()}


# The Fig. 2 check on our reading of the lost masks (a Gaussian point of radius 2 moving along the diagonal of a
# 32×32 image): these five kinds do not grow monotonically. ℓ1, ℓ2 and Dice saturate once the point no longer
# overlaps its start; Spearman's |ρ| rises again as the point nears the opposite corner (the two maps' ranks become
# anti-correlated); SSIM peaks half-way and falls. Recorded as strict xfails: the finding, not a tuned test.
_FIG2_FAILS = {"dice": "saturates at 1 once the top-10 % discs stop overlapping (ρ ≈ 0.85)",
               "spearman": "|ρ| grows again as the point nears the opposite corner (ρ ≈ 0.56)",
               "ssim": "peaks half-way, then falls (ρ ≈ 0.41)",
               "l1": "saturates once the point stops overlapping its start (ρ ≈ 0.72)",
               "l2": "saturates once the point stops overlapping its start (ρ ≈ 0.74)"}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=_FIG2_FAILS[k]))
                                  if k in _FIG2_FAILS else k for k in R.KINDS])
def test_moving_point_distance_grows_with_the_displacement(moving_point_checks, kind):
    assert moving_point_checks["centre"].loc[kind, "spearman"] > 0.9


def test_moving_point_blend_reading_passes_for_every_kind(moving_point_checks):
    checks = moving_point_checks["blend"]
    assert list(checks.index) == list(R.KINDS) and bool(checks["passes"].all()), checks


def test_noise_test_on_a_digit_passes_for_every_kind():
    image = fl.data.load("digits", split="test", size=32).x[0, 0]
    sigmas = [0.0, 0.25, 0.5, 1.0, 2.0]
    maps = R.noise_maps(image, sigmas, repeats=4, generator=0)
    frame = R.distance_frame(image, maps, coords={"sigma": sigmas, "repeat": range(4)})
    assert len(frame) == 6 * 5 * 4 and set(frame.columns) == {"sigma", "repeat", "distance", "value"}
    assert set(frame.attrs["seconds"]) == set(R.KINDS)
    checks = R.monotonicity(frame, x="sigma")
    assert bool(checks["passes"].all()) and bool(checks["non-decreasing means"].all()), checks


def test_noise_maps_are_seeded():
    image = _rand(6, 6, dtype=torch.float32)
    a = R.noise_maps(image, [0.0, 1.0, 2.0], repeats=3, generator=7)
    b = R.noise_maps(image, [0.0, 1.0, 2.0], repeats=3, generator=torch.Generator().manual_seed(7))
    c = R.noise_maps(image, [0.0, 1.0, 2.0], repeats=3, generator=8)
    assert a.shape == (3, 3, 6, 6) and a.dtype == torch.float32
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(a[0], image.expand(3, 6, 6))  # σ = 0: the map itself
    assert (a[2] - image).std() > (a[1] - image).std() > 0


def test_distance_frame_layout_and_kinds():
    maps = R.moving_point_maps(size=8, steps=4, radius=1.0)
    frame = R.distance_frame(maps[0], maps, kinds=("l1", "spearman_linear"))
    assert list(frame.columns) == ["axis0", "distance", "value"] and len(frame) == 8
    assert frame[frame.distance == "l1"]["value"].tolist() == pytest.approx(
        map_distance(maps[0], maps, kind="l1").tolist())
    with pytest.raises(ValueError, match="kinds must be one of"):
        R.distance_frame(maps[0], maps, kinds=("l3",))
    with pytest.raises(ValueError, match="coords"):
        R.distance_frame(maps[0], maps, coords={"step": range(3)})
    with pytest.raises(ValueError, match="maps must be"):
        R.distance_frame(maps[0], maps[:, :4])


def test_monotonicity_hand_case():
    frame = pd.DataFrame({"x": [0, 1, 2, 0, 1, 2], "distance": ["up"] * 3 + ["down"] * 3,
                          "value": [0.0, 1.0, 2.0, 2.0, 1.0, np.nan]})
    out = R.monotonicity(frame, x="x").set_index("distance")
    assert out.loc["up", "spearman"] == pytest.approx(1.0) and out.loc["up", "passes"]
    assert out.loc["down", "spearman"] == pytest.approx(-1.0) and not out.loc["down", "passes"]
    assert out.loc["down", "n"] == 2 and out.loc["down", "sign"] == -1
    with pytest.raises(ValueError, match="x='sigma'"):
        R.monotonicity(frame, x="sigma")


def test_protocol_bad_arguments_raise_naming_the_argument():
    with pytest.raises(ValueError, match="steps"):
        R.moving_point_maps(size=32, steps=1)
    with pytest.raises(ValueError, match="radius"):
        R.moving_point_maps(size=32, steps=10, radius=9.0)
    with pytest.raises(ValueError, match="interpolation"):
        R.moving_point_maps(size=32, steps=10, interpolation="linear")
    image = torch.zeros(4, 4)
    with pytest.raises(ValueError, match="generator is required"):
        R.noise_maps(image, [1.0], repeats=2, generator=None)
    with pytest.raises(ValueError, match="sigmas"):
        R.noise_maps(image, [-1.0], repeats=2, generator=0)
    with pytest.raises(TypeError, match="sigmas"):
        R.noise_maps(image, 1.0, repeats=2, generator=0)
    with pytest.raises(ValueError, match="repeats"):
        R.noise_maps(image, [1.0], repeats=0, generator=0)
    with pytest.raises(ValueError, match="b holds maps"):
        R.wasserstein(image, torch.zeros(4, 5))

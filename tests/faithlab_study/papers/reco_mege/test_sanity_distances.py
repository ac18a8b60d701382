"""ReCo/MeGe's distance sanity checks (faithlab_study.papers.reco_mege.claims.sanity, paper §4.3, Figs. 2–3): the
Wasserstein distance against scipy and by hand, the moving point and noise tests, the distance frame and the
monotonicity read from it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch

import faithlab as fl
from faithlab.metrics.papers.reco_mege.distances import map_distance
from faithlab_study.papers.reco_mege.claims import sanity as R
from random_maps import random_maps


# ------------------------------------------------------------------------------------------------- wasserstein
def test_identical_maps_are_at_wasserstein_zero():
    a = random_maps(3, 6, 5)
    assert torch.allclose(R.wasserstein(a, a), torch.zeros(3, dtype=torch.float64), atol=1e-12)


def test_wasserstein_batch_and_broadcast_give_the_numbers_of_one_pair_at_a_time():
    a, b = random_maps(4, 5, seed=10).abs(), random_maps(3, 4, 5, seed=11)
    assert torch.allclose(R.wasserstein(a, b), torch.stack([R.wasserstein(a, x) for x in b]), atol=1e-12)


def test_wasserstein_matches_scipy_on_tiny_maps():
    a, b = random_maps(4, 4, 5, seed=12), random_maps(4, 4, 5, seed=13)
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
    image = random_maps(6, 6, dtype=torch.float32)
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

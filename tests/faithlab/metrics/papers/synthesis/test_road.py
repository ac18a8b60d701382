"""ROAD (issue 72): noisy linear imputation against a scipy sparse solve of the same system, its hand-computable
cases, its keyed noise, and the MoRF/LeRF curves of a ground-truth map on a model whose output is a known function
of the pixels present."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.sparse import lil_matrix
from scipy.sparse.linalg import spsolve
from torch import nn

import faithlab as fl
from faithlab import perturb

_OFFSETS = [((dr, dc), 1 / 6 if dr == 0 or dc == 0 else 1 / 12)
            for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]


def scipy_imputation(image: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The reference: ROAD's system for one (C, H, W) image and (H, W) keep mask, set up pixel by pixel and solved
    by scipy's sparse direct solver (float64)."""
    c, h, w = image.shape
    removed = [(r, q) for r in range(h) for q in range(w) if not keep[r, q]]
    index = {p: i for i, p in enumerate(removed)}
    a = lil_matrix((len(removed), len(removed)))
    b = np.zeros((len(removed), c))
    for i, (r, q) in enumerate(removed):
        for (dr, dc), weight in _OFFSETS:
            rr, qq = r + dr, q + dc
            if not (0 <= rr < h and 0 <= qq < w):
                continue
            a[i, i] += weight
            if keep[rr, qq]:
                b[i] += weight * image[:, rr, qq]
            else:
                a[i, index[rr, qq]] -= weight
    out = image.copy()
    if removed:
        solution = spsolve(a.tocsc(), b).reshape(len(removed), c)
        for i, (r, q) in enumerate(removed):
            out[:, r, q] = solution[i]
    return out


def _masks(h: int, w: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    blob = ((yy - h / 3) ** 2 + (xx - w / 2) ** 2).double()
    out = [torch.rand(h, w, generator=g) < p for p in (0.1, 0.5, 0.9)]  # scattered
    out += [blob > torch.quantile(blob, q) for q in (0.2, 0.8)]  # one hole (and a hole at the edges)
    edge = torch.ones(h, w, dtype=torch.bool)
    edge[0, :] = edge[:, -1] = False  # a row and a column at the border, the corner included
    return [*out, edge]


@pytest.mark.parametrize("h,w", [(5, 7), (12, 9)])
def test_noise_free_imputation_equals_a_scipy_sparse_solve(h, w):
    x = torch.rand(2, 3, h, w, dtype=torch.float64, generator=torch.Generator().manual_seed(h))
    for m, keep in enumerate(_masks(h, w, seed=w)):
        ours = perturb.noisy_linear_imputation(x, keep.expand(2, h, w))
        for i in range(2):
            ref = scipy_imputation(x[i].numpy(), keep.numpy())
            np.testing.assert_allclose(ours[i].numpy(), ref, rtol=0, atol=1e-8, err_msg=f"mask {m}")
        # float32 inputs: the same solution to float32's CG tolerance
        ours32 = perturb.noisy_linear_imputation(x.float(), keep.expand(2, h, w))
        np.testing.assert_allclose(ours32.double().numpy(), ours.numpy(), atol=2e-4)


def test_per_element_keep_imputes_each_channel_from_its_own_kept_elements():
    x = torch.rand(1, 2, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    keep = torch.rand(1, 2, 6, 6, generator=torch.Generator().manual_seed(2)) < 0.6
    ours = perturb.noisy_linear_imputation(x, keep)
    for c in range(2):
        ref = scipy_imputation(x[0, c:c + 1].numpy(), keep[0, c].numpy())
        np.testing.assert_allclose(ours[0, c].numpy(), ref[0], atol=1e-8)


def test_a_pixel_with_its_eight_neighbours_kept_takes_their_weighted_mean():
    x = torch.arange(1.0, 26.0, dtype=torch.float64).view(1, 1, 5, 5) ** 1.5
    keep = torch.ones(1, 5, 5, dtype=torch.bool)
    keep[0, 2, 2] = False
    out = perturb.noisy_linear_imputation(x, keep)
    p = x[0, 0]
    direct = p[1, 2] + p[3, 2] + p[2, 1] + p[2, 3]
    diagonal = p[1, 1] + p[1, 3] + p[3, 1] + p[3, 3]
    assert out[0, 0, 2, 2].item() == pytest.approx((direct / 6 + diagonal / 12).item(), abs=1e-12)
    changed = out != x
    assert changed.sum().item() == 1  # every kept element is returned as it was


def test_a_corner_pixel_renormalises_over_its_three_neighbours_inside_the_image():
    x = torch.tensor([[[[0.0, 3.0], [6.0, 12.0]]]], dtype=torch.float64)
    keep = torch.tensor([[[False, True], [True, True]]])
    out = perturb.noisy_linear_imputation(x, keep)
    # neighbours (0,1) and (1,0) weigh 1/6, (1,1) 1/12: (3/6 + 6/6 + 12/12) / (5/12)
    assert out[0, 0, 0, 0].item() == pytest.approx((0.5 + 1.0 + 1.0) / (5 / 12))


def test_nothing_removed_is_x_and_everything_removed_is_zero():
    x = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(perturb.noisy_linear_imputation(x, torch.ones(2, 4, 4, dtype=torch.bool)), x)
    none = perturb.noisy_linear_imputation(x, torch.zeros(2, 4, 4, dtype=torch.bool))
    assert torch.equal(none, torch.zeros_like(x))


def test_the_solve_reports_convergence_and_a_too_small_cap_shows_it():
    x = torch.rand(1, 1, 24, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    keep = _masks(24, 24, seed=0)[4][None]  # one large hole
    d = perturb.noisy_linear_imputation(x, keep, details=True)
    assert bool(d["converged"].all()) and int(d["iterations"].max()) > 3
    with pytest.warns(RuntimeWarning, match="max_iter=2"):
        capped = perturb.noisy_linear_imputation(x, keep, max_iter=2, details=True)
    assert not bool(capped["converged"].all())


def test_noise_is_added_to_the_removed_elements_only_with_the_asked_deviation():
    x = torch.rand(4, 3, 32, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    keep = torch.rand(4, 32, 32, generator=torch.Generator().manual_seed(1)) < 0.5
    seeds = perturb.sample_seeds(0, None, 4)
    ref = perturb.NoisyLinear(0.05, seeds=seeds)
    rows = torch.arange(4)
    noisy = ref.impute(x, keep[:, None], rows, torch.zeros_like(rows))
    clean = perturb.noisy_linear_imputation(x, keep)
    diff = (noisy - clean)
    kept = keep[:, None].expand_as(x)
    assert torch.equal(diff[kept], torch.zeros_like(diff[kept]))
    sd = diff[~kept].std().item()
    assert 0.045 < sd < 0.055  # ~6,000 draws: the sd's own error is ~1 %
    assert abs(diff[~kept].mean().item()) < 0.005


def test_bad_arguments_are_named():
    x = torch.rand(1, 1, 4, 4)
    with pytest.raises(TypeError, match="keep"):
        perturb.noisy_linear_imputation(x, torch.ones(1, 4, 4))
    with pytest.raises(ValueError, match="keep"):
        perturb.noisy_linear_imputation(x, torch.ones(1, 5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="noise"):
        perturb.noisy_linear_imputation(x, torch.ones(1, 4, 4, dtype=torch.bool), noise=-1.0)
    with pytest.raises(ValueError, match="x"):
        perturb.noisy_linear_imputation(x.view(1, 16), torch.ones(1, 4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="seeds"):
        perturb.NoisyLinear(0.01)
    with pytest.raises(ValueError, match="reference"):
        perturb.removal_curve(nn.Linear(4, 2).eval(), torch.rand(3, 4), torch.rand(3, 4), [0.5],
                              reference="noisy_linear")


class Window(nn.Module):
    """p(class 0) = sigmoid(8·(mean of x over a fixed window R) − 4): the output is a known function of the pixels
    of R only."""

    def __init__(self, window: torch.Tensor):
        super().__init__()
        self.register_buffer("window", window.double())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = (x.double() * self.window).sum((1, 2, 3)) / (self.window.sum() * x.shape[1])
        logit = 8 * m - 4
        return torch.stack([logit, -logit], dim=1)


def _window_case(b: int = 4, side: int = 12):
    window = torch.zeros(1, side, side)
    window[:, 3:7, 4:9] = 1  # 20 of 144 pixels
    x = torch.zeros(b, 2, side, side, dtype=torch.float64)
    x[:, :, 3:7, 4:9] = 1.0  # the object: bright inside R, 0 elsewhere
    ramp = torch.arange(side * side, dtype=torch.float64).view(side, side) * 1e-4  # no ties
    truth = (window[0].double() + ramp).expand(b, side, side)
    return Window(window).eval(), x, truth


def test_morf_and_lerf_of_a_ground_truth_map_order_as_the_oracle_model_says():
    model, x, truth = _window_case()
    f = [0.1, 0.2, 0.5, 0.8, 0.9]
    d = fl.metrics.road_details(model, x, truth, fractions=f, noise=0.0, output="logit", target=torch.zeros(
        4, dtype=torch.int64))
    clean = d["clean"]
    assert torch.allclose(clean, torch.full_like(clean, 4.0))
    # LeRF removes the 124 background pixels first: R is untouched up to 124/144 = 86 %, so the logit stays 4
    untouched = [i for i, v in enumerate(f) if round(v * 144) <= 124]
    assert torch.allclose(d["lerf"][:, untouched], clean[:, None].expand(-1, len(untouched)))
    # MoRF removes R first (20 pixels ≤ 14 %): from 20 % on R is imputed from its zero surroundings: exactly 0
    gone = [i for i, v in enumerate(f) if round(v * 144) >= 20]
    assert torch.allclose(d["morf"][:, gone], torch.full((4, len(gone)), -4.0, dtype=torch.float64), atol=1e-6)
    assert bool((d["morf"][:, 0] < clean).all())  # 10 %: 14 of R's 20 pixels imputed from their neighbours
    assert bool((d["road"] > 0).all())
    # the reversed map swaps the curves, and a random map lies between
    flipped = fl.metrics.road_details(model, x, -truth, fractions=f, noise=0.0, output="logit",
                                      target=torch.zeros(4, dtype=torch.int64))
    assert torch.allclose(flipped["morf"], d["lerf"]) and torch.allclose(flipped["lerf"], d["morf"])
    rand = torch.rand(truth.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = fl.metrics.road(model, x, rand, fractions=f, noise=0.0, output="logit", target=torch.zeros(4, dtype=torch.int64))
    assert bool((flipped["road"] < r).all() and (r < d["road"]).all())


def test_road_is_the_same_for_any_batch_size_and_split_and_its_noise_is_keyed():
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    x = torch.rand(6, 3, 10, 10)
    maps = torch.rand(6, 10, 10)
    whole = fl.metrics.road_details(model, x, maps, batch_size=64, generator=3)
    small = fl.metrics.road_details(model, x, maps, batch_size=5, generator=3)
    for key in ("morf", "lerf", "road"):
        torch.testing.assert_close(small[key], whole[key], rtol=0, atol=1e-6)
    tail = fl.metrics.road_details(model, x[2:], maps[2:], batch_size=7, generator=3, sample_index=torch.arange(2, 6))
    torch.testing.assert_close(tail["road"], whole["road"][2:], rtol=0, atol=1e-6)
    other = fl.metrics.road_details(model, x, maps, batch_size=64, generator=4)
    assert not torch.equal(other["morf"], whole["morf"])
    quiet = fl.metrics.road_details(model, x, maps, noise=0.0)
    assert not torch.equal(quiet["morf"], whole["morf"])


def test_a_model_returning_nan_never_gives_a_road_score():
    class Nan(nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], 3), float("nan"))

    with pytest.raises(ValueError, match="NaN|inf|finite"):
        fl.metrics.road(Nan().eval(), torch.rand(2, 1, 6, 6), torch.rand(2, 6, 6))


def test_fid_plus_takes_the_imputation_as_its_reference():
    model, x, truth = _window_case(b=2)
    plus = fl.metrics.fid_plus(model, x.float(), truth.float(), target=torch.zeros(2, dtype=torch.int64),
                               sparsity=[0.1, 0.2], reference="noisy_linear")
    # Fid+ reads accuracy: removing R (20 % = 29 pixels ⊇ R's 20) and imputing it from its zero surroundings
    # flips the prediction (logit 4 → −4), so Fid+ = 1 − 0; the window's own mean reference (R's value, 1) keeps it
    assert plus[:, 1].tolist() == [1.0, 1.0]
    kept = fl.metrics.fid_plus(model, x.float(), truth.float(), target=torch.zeros(2, dtype=torch.int64),
                               sparsity=[0.2], reference=1.0)
    assert kept[:, 0].tolist() == [0.0, 0.0]


def test_road_through_evaluate_and_the_registry():
    from faithlab.metrics.registry import METRICS

    assert {"road", "road_morf", "road_lerf"} <= set(METRICS)
    assert METRICS["road"].higher_is_better and not METRICS["road_morf"].higher_is_better
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", in_channels=1, n_classes=3, width=4).eval()
    x, y = torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 2, 0])
    frame = fl.evaluate(model, x, y, x.clone(), metrics=["road", "road_morf", "road_lerf"], progress=False)
    wide = frame.pivot_table(index="sample", columns="metric", values="score")
    direct = fl.metrics.road_details(model, x, x, generator=0)
    assert wide["road"].tolist() == pytest.approx(direct["road"].tolist(), abs=1e-6)
    assert wide["road_morf"].tolist() == pytest.approx(direct["morf_area"].tolist(), abs=1e-6)


def test_a_levels_noise_is_keyed_to_its_pixel_count_not_to_the_other_levels():
    torch.manual_seed(1)
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    x, maps = torch.rand(3, 3, 10, 10), torch.rand(3, 10, 10)
    one = fl.metrics.road_details(model, x, maps, fractions=[0.3])
    three = fl.metrics.road_details(model, x, maps, fractions=[0.1, 0.3, 0.5])
    torch.testing.assert_close(one["morf"][:, 0], three["morf"][:, 1], rtol=0, atol=1e-6)
    torch.testing.assert_close(one["lerf"][:, 0], three["lerf"][:, 1], rtol=0, atol=1e-6)
    # a map without a ranking removes the same pixels in both orders, with the same noise: ROAD is exactly 0
    with pytest.warns(perturb.ConstantMapWarning):
        flat = fl.metrics.road_details(model, x, torch.ones(3, 10, 10))
    assert torch.equal(flat["morf"], flat["lerf"]) and torch.equal(flat["road"], torch.zeros(3))


def test_shared_fully_removed_inputs_are_kept_apart_for_other_noise():
    torch.manual_seed(2)
    model = fl.models.build("small_cnn", in_channels=3, n_classes=4, width=4).eval()
    x, maps = torch.rand(3, 3, 8, 8), torch.rand(3, 8, 8)

    def full(seed):
        ref = perturb.NoisyLinear(0.5, seeds=perturb.sample_seeds(seed, None, 3))
        return perturb.removal_curve(model, x, maps, [1.0], reference=ref, output="logit")

    with perturb.sharing():
        a, b, again = full(0), full(2), full(0)
    assert not torch.equal(a, b) and torch.equal(a, again)


def test_road_refuses_a_class_read_out_and_checks_its_seed_without_noise():
    model, x, truth = _window_case(b=2)
    with pytest.raises(ValueError, match="output"):
        fl.metrics.road(model, x, truth, output="predicted")
    with pytest.raises((TypeError, ValueError), match="generator"):
        fl.metrics.road(model, x, truth, noise=0.0, generator="bad")
    with pytest.raises(ValueError, match="sample_index"):
        fl.metrics.road(model, x, truth, noise=0.0, sample_index=[0, 1, 2])


def test_an_imputation_short_of_its_tolerance_says_so_and_half_precision_is_solved_in_float32():
    x = torch.rand(2, 1, 24, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    keep = _masks(24, 24, seed=0)[4][None].expand(2, 24, 24)
    capped = perturb.NoisyLinear(0.0, max_iter=2)
    capped.impute(x, keep[:, None], torch.arange(2), torch.zeros(2, dtype=torch.int64))
    assert capped.unconverged
    enough = perturb.NoisyLinear(0.0)
    enough.impute(x, keep[:, None], torch.arange(2), torch.zeros(2, dtype=torch.int64))
    assert not enough.unconverged
    with pytest.raises(ValueError, match="rtol"):
        perturb.NoisyLinear(0.0, rtol=2.0)
    with pytest.raises(ValueError, match="max_iter"):
        perturb.NoisyLinear(0.0, max_iter=0)
    exact = perturb.noisy_linear_imputation(x, keep)
    half = perturb.noisy_linear_imputation(x.half(), keep)
    assert half.dtype == torch.float16
    torch.testing.assert_close(half.double(), exact, rtol=0, atol=2e-3)  # float16's own rounding of the values

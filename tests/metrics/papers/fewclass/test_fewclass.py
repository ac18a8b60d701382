"""Few-class Fidelity (spec §2): the candidate grid against scipy/scikit-image, U/Δ/S/P and the Fid formula by hand,
the selection against brute force, closed-form MIF/LIF areas, localisation on hand-made masks, invariances."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy import ndimage
from scipy.ndimage import gaussian_filter as scipy_gaussian
from skimage.exposure import match_histograms as skimage_match

from faithlab import perturb
from faithlab.metrics.papers.fewclass import fidelity as fc
from faithlab.metrics.papers.fewclass import localisation as loc
from oracles import LinearProb, fewclass_candidates_reference, small_cnn


def _images(b=2, c=3, h=9, w=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, c, h, w, generator=g, dtype=torch.float64)


# --- the grid ------------------------------------------------------------------------------------------------


def test_grid_has_33_variations_and_804_candidates():
    grid = fc.candidate_grid()
    assert len(grid) == 804
    assert len({(op, adj) for op, _, adj in grid}) == 33
    sigmas = {op: sorted({s for o, s, _ in grid if o == op}) for op in fc.OPERATIONS}
    assert sigmas["V2"] == sigmas["V14"] == list(range(1, 81))
    assert all(sigmas[op] == list(range(1, 13)) for op in fc.OPERATIONS if op not in ("V2", "V14"))
    assert [adj for _, _, adj in grid[:6]] == ["o", "s", "m"] * 2


def test_grid_refuses_unknown_operations():
    with pytest.raises(ValueError, match="operations"):
        fc.candidate_grid(["V6"])
    with pytest.raises(ValueError, match="grid"):
        list(fc.candidates(_images(), grid=[("V1", 0, "o")]))


# --- batched image operations against their per-image references -------------------------------------------


@pytest.mark.parametrize("shape", [(9, 7), (4, 4), (1, 5)])
def test_gaussian_filter_equals_scipy_for_any_sigma(shape):
    x = _images(h=shape[0], w=shape[1])
    sigmas = [0.5, 1, 3, 12, 80]  # σ = 80 reaches far past the image: the reflection folds many times
    y = perturb.gaussian_filter(x, sigmas)
    assert y.shape == (2, 5, 3, *shape)
    for b in range(2):
        for i, s in enumerate(sigmas):
            for c in range(3):
                np.testing.assert_allclose(y[b, i, c].numpy(), scipy_gaussian(x[b, c].numpy(), s), atol=1e-12)


def test_gaussian_filter_refuses_bad_sigmas():
    with pytest.raises(ValueError, match="sigmas"):
        perturb.gaussian_filter(_images(), [1, 0])
    with pytest.raises(ValueError, match="x"):
        perturb.gaussian_filter(_images()[0], [1])


def test_match_histograms_equals_scikit_image_with_ties():
    g = torch.Generator().manual_seed(1)
    src = torch.rand(4, 3, 50, generator=g, dtype=torch.float64)
    src[0, 0, :20] = 0.5  # ties in the source
    src[1, 2] = torch.round(src[1, 2] * 3) / 3
    tmpl = torch.rand(3, 50, generator=g, dtype=torch.float64)
    tmpl[1, :25] = 0.25  # ties in the template
    out = fc.match_histograms(src, tmpl)
    for i in range(4):
        for c in range(3):
            np.testing.assert_allclose(out[i, c].numpy(), skimage_match(src[i, c].numpy(), tmpl[c].numpy()),
                                       atol=1e-12)


@pytest.mark.parametrize("channels", [1, 3])
def test_candidates_equal_the_per_candidate_scipy_loop(channels):
    x = _images(b=2, c=channels, h=8, w=6) + 0.1
    grid = fc.candidate_grid()
    got = torch.cat([c for b0, _, _, _, c in fc.candidates(x[:1], grid="paper", batch_size=300)], dim=1)[0]
    ref = fewclass_candidates_reference(x[0].numpy(), grid)
    assert got.shape[0] == len(ref) == 804
    for v, r in enumerate(ref):
        np.testing.assert_allclose(got[v].numpy(), r, atol=1e-10, err_msg=str(grid[v]))


def test_candidates_do_not_depend_on_batch_size():
    x = _images(b=3, c=1)
    grid = fc.candidate_grid(["V1", "V2", "V15"])

    def collect(bs):
        out = torch.empty(3, len(grid), *x.shape[1:], dtype=x.dtype)
        for b0, b1, v0, v1, c in fc.candidates(x, grid=grid, batch_size=bs):
            assert (b1 - b0) * (v1 - v0) <= bs
            out[b0:b1, v0:v1] = c
        return out

    torch.testing.assert_close(collect(7), collect(10_000), rtol=0, atol=1e-9)  # BLAS blocking differs


def test_range_matching_maps_to_the_image_range():
    x = _images(b=1)
    c = fc.match_range(x[None] * 5 - 2, x[0])
    assert torch.allclose(c.amin(), x.amin()) and torch.allclose(c.amax(), x.amax())
    flat = torch.full_like(x, 0.3)
    assert torch.equal(fc.match_range(flat, x[0]), flat)  # no range: returned as is


# --- U, Δ, S, P and Fid by hand ----------------------------------------------------------------------------


def test_uncertainty_threshold_similarity_and_score_by_hand():
    p = torch.tensor([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    u = fc.uncertainty(p)
    assert u[0].item() == pytest.approx((abs(1 / 3 - 0.7) + abs(1 / 3 - 0.2) + abs(1 / 3 - 0.1)) / 3)
    assert u[1].item() == pytest.approx(0.0)
    assert fc.uncertainty(torch.tensor([0.9, 0.1])).item() == pytest.approx(0.4)
    assert fc.threshold(2) == 0.05 and fc.threshold(3) == 0.075 and fc.threshold(4) == 0.1
    assert fc.threshold(10) == 0.1
    x = torch.tensor([[[[0.0, 2.0], [1.0, 1.0]]]])
    xp = torch.tensor([[[[1.0, 2.0], [1.0, 0.0]]]])
    assert fc.similarity(x, xp).item() == pytest.approx((1 + 0 + 0 + 1) / 4 / 2 ** 2)
    assert fc.perturbation_score(torch.tensor(0.01), torch.tensor(0.001), 2).item() == pytest.approx(0.01 + 0.2)
    assert fc.perturbation_score(torch.tensor(0.0), torch.tensor(0.003), 3).item() == pytest.approx(0.4)
    logits = torch.tensor([[0.0], [2.0]])
    probs = fc.class_probabilities(logits)
    p = torch.sigmoid(torch.tensor(2.0))
    assert torch.allclose(probs[1], torch.tensor([1 - p, p]))


@pytest.mark.parametrize("n", [2, 3, 10])
def test_fid_formula_by_hand(n):
    den = 1 + (n - 1) / n
    assert fc.fid(torch.tensor(1 / n), torch.tensor(1.0), n).item() == pytest.approx(1.0)
    assert fc.fid(torch.tensor(1.0), torch.tensor(0.0), n).item() == pytest.approx(0.0)
    a_mif, a_lif = 0.6, 0.8
    assert fc.fid(torch.tensor(a_mif), torch.tensor(a_lif), n).item() == pytest.approx(
        1 - (abs(1 - a_lif) + abs(1 / n - a_mif)) / den)
    if n == 2:
        assert den == 1.5  # the code's hard-coded denominator


def test_fid_lies_in_unit_interval_for_any_areas():
    g = torch.Generator().manual_seed(0)
    areas = torch.rand(2, 10_000, generator=g, dtype=torch.float64)
    areas[:, :4] = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]])
    for n in (2, 3, 5, 1000):
        f = fc.fid(areas[0], areas[1], n)
        assert bool((f >= 0).all() & (f <= 1).all())


# --- selection ------------------------------------------------------------------------------------------------


class _MeanModel(torch.nn.Module):
    """3 classes with logits depending on the image mean m: near-uniform when m ≈ 0.3 (so U falls as the blur
    pulls m towards it), confident otherwise."""

    def __init__(self, scale=8.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        m = x.mean(dim=(1, 2, 3))
        d = self.scale * (m - 0.3)
        return torch.stack([d, -d, 0 * d], dim=1)


def _brute_force(model, x, grid):
    """Every candidate from the scipy loop, scored with numpy: U, S, P and the selection rule of spec §2.3."""
    out = []
    for b in range(x.shape[0]):
        cands = np.stack(fewclass_candidates_reference(x[b].numpy(), grid))
        with torch.no_grad():
            probs = fc.class_probabilities(model(torch.from_numpy(cands))).numpy()
        n = probs.shape[1]
        u = np.abs(probs - 1 / n).mean(axis=1)
        img = x[b].numpy()
        s = ((cands - img) ** 2).mean(axis=(1, 2, 3)) / (img.max() - img.min()) ** 2
        delta = min(0.1, n / 40)
        p = u + 10 / delta * s
        ok = u < delta
        out.append(int(np.argmin(np.where(ok, p, np.inf))) if ok.any() else int(np.argmin(u)))
    return out


def test_selection_is_argmin_p_among_uncertain_candidates():
    x = _images(b=3, c=1, h=6, w=6)
    x[0] *= 0.5  # mean ≈ 0.25: close to uncertain already
    grid = fc.candidate_grid(["V1", "V2", "V3", "V8"])
    model = _MeanModel().double().eval()
    sel = fc.select_perturbation(model, x, grid=grid, batch_size=50)
    assert sel["index"].tolist() == _brute_force(model, x, grid)
    assert bool(sel["passed"].any())
    v = sel["index"]
    rows = torch.arange(3)
    assert torch.equal(sel["u"], sel["all_u"][rows, v]) and torch.equal(sel["s"], sel["all_s"][rows, v])
    ref = [fewclass_candidates_reference(x[b].numpy(), [grid[int(v[b])]])[0] for b in range(3)]
    np.testing.assert_allclose(sel["image"].numpy(), np.stack(ref), atol=1e-10)
    assert sel["operation"] == [grid[int(i)][0] for i in v] and sel["delta"] == 0.075 and sel["n_classes"] == 3


def test_selection_falls_back_to_the_lowest_uncertainty():
    x = _images(b=2, c=1, h=6, w=6)
    grid = fc.candidate_grid(["V1", "V3"])

    class Confident(torch.nn.Module):  # class 0 at p > 0.96 on every candidate, less so as the image flattens
        def forward(self, z):
            d = 4 + 3 * z.flatten(1).std(dim=1)
            return torch.stack([d, 0 * d, 0 * d], dim=1)

    model = Confident().double().eval()
    sel = fc.select_perturbation(model, x, grid=grid, batch_size=64)
    assert not bool(sel["passed"].any())
    assert sel["index"].tolist() == sel["all_u"].argmin(dim=1).tolist() == _brute_force(model, x, grid)


def test_selection_does_not_depend_on_batch_size():
    x = _images(b=2, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    grid = fc.candidate_grid(["V1", "V2", "V15"])
    a = fc.select_perturbation(model, x, grid=grid, batch_size=16)
    b = fc.select_perturbation(model, x, grid=grid, batch_size=1000)
    assert torch.allclose(a["all_u"], b["all_u"], atol=1e-6) and torch.equal(a["all_s"], b["all_s"])
    assert torch.equal(a["index"], b["index"])


def test_selection_with_a_single_logit_model_uses_two_classes():
    x = _images(b=2, c=1, h=6, w=6)

    class OneLogit(torch.nn.Module):
        def forward(self, z):
            return (10 * (z.mean(dim=(1, 2, 3)) - 0.3))[:, None]

    sel = fc.select_perturbation(OneLogit().double().eval(), x, grid=fc.candidate_grid(["V3"]))
    assert sel["n_classes"] == 2 and sel["delta"] == 0.05


def test_selection_refuses_a_nan_model():
    class NaN(torch.nn.Module):
        def forward(self, z):
            return torch.full((z.shape[0], 3), float("nan"))

    with pytest.raises(ValueError, match="NaN"):
        fc.select_perturbation(NaN().eval(), _images().float(), grid=fc.candidate_grid(["V1"]))


# --- MIF / LIF curves -----------------------------------------------------------------------------------------


def test_mif_lif_areas_in_closed_form():
    """p(class 0) = 0.5 + Σ β_i over the pixels still showing the original (1) rather than the perturbed image
    (0); the map is β itself, so MIF removes β in descending order and LIF in ascending order."""
    n = 100
    g = torch.Generator().manual_seed(3)
    beta = torch.rand(n, generator=g, dtype=torch.float64)
    beta = 0.45 * beta / beta.sum()
    model = LinearProb(beta, q0=0.5)
    x = torch.ones(1, 1, 10, 10, dtype=torch.float64)
    perturbed = torch.zeros_like(x)
    d = fc.fewclass_fid_details(model, x, beta.view(1, 1, 10, 10), perturbed=perturbed, batch_size=37)
    desc = np.sort(beta.numpy())[::-1]
    mif = 0.5 + 0.45 - np.concatenate([[0], np.cumsum(desc)])  # k = 0..100 pixels replaced
    lif = 0.5 + 0.45 - np.concatenate([[0], np.cumsum(desc[::-1])])
    np.testing.assert_allclose(d["mif"][0].numpy(), mif, atol=1e-12)
    np.testing.assert_allclose(d["lif"][0].numpy(), lif, atol=1e-12)
    p = np.linspace(0, 1, 101)
    a_mif, a_lif = np.trapezoid(mif, p), np.trapezoid(lif, p)
    assert d["a_mif"].item() == pytest.approx(a_mif) and d["a_lif"].item() == pytest.approx(a_lif)
    assert d["score"].item() == pytest.approx(1 - (abs(1 - a_lif) + abs(0.5 - a_mif)) / 1.5)
    assert d["target"].tolist() == [0] and d["n_classes"] == 2


def test_single_logit_curves_equal_the_two_logit_model():
    x = _images(b=3, c=1, h=6, w=6).float()
    net = small_cnn(in_channels=1, side=6, n_classes=1)

    class Two(torch.nn.Module):
        def forward(self, z):
            logit = net(z)
            return torch.cat([-logit / 2, logit / 2], dim=1)  # softmax = [1 − σ(z), σ(z)]

    a = torch.rand(3, 1, 6, 6, generator=torch.Generator().manual_seed(0))
    pert = torch.zeros_like(x)
    one = fc.fewclass_fid_details(net, x, a, perturbed=pert, generator=5)
    two = fc.fewclass_fid_details(Two().eval(), x, a, perturbed=pert, generator=5)
    assert torch.equal(one["target"], two["target"])
    assert torch.allclose(one["mif"], two["mif"], atol=1e-6) and torch.allclose(one["lif"], two["lif"], atol=1e-6)


def test_without_perturbed_images_the_selection_runs_with_the_given_grid_and_normalisation():
    x = _images(b=3, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    a = torch.rand(3, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    grid = fc.candidate_grid(["V1", "V2"])
    norm = ([0.3, 0.6], [0.2, 0.4])
    chosen = fc.select_perturbation(model, x, grid=grid, normalisation=norm, batch_size=50)["image"]
    given = fc.fewclass_fid_details(model, x, a, perturbed=chosen, generator=1, batch_size=50)
    found = fc.fewclass_fid_details(model, x, a, grid=grid, normalisation=norm, generator=1, batch_size=50)
    assert torch.equal(found["perturbed"], chosen) and given["perturbed"] is chosen
    for key in ("score", "mif", "lif", "a_mif", "a_lif", "target"):
        assert torch.equal(found[key], given[key]), key
    assert torch.equal(fc.fewclass_fid(model, x, a, grid=grid, normalisation=norm, generator=1, batch_size=50),
                       given["score"])
    pixels = fc.fewclass_fid_details(model, x, a, grid=grid, generator=1, batch_size=50)  # x read as pixels
    assert not torch.equal(pixels["perturbed"], chosen)


def test_curves_end_at_the_perturbed_prediction_and_are_invariant():
    x = _images(b=4, c=2, h=8, w=8).float()
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    pert = x.flip(-1)
    a = torch.randn(4, 2, 8, 8, generator=torch.Generator().manual_seed(1))
    d1 = fc.fewclass_fid_details(model, x, a, perturbed=pert, batch_size=7, generator=2)
    d2 = fc.fewclass_fid_details(model, x, a, perturbed=pert, batch_size=1000, generator=2)
    assert torch.allclose(d1["mif"], d2["mif"], atol=1e-6) and torch.allclose(d1["score"], d2["score"], atol=1e-6)
    with torch.no_grad():
        p_clean = model(x).softmax(1).gather(1, d1["target"][:, None])[:, 0]
        p_pert = model(pert).softmax(1).gather(1, d1["target"][:, None])[:, 0]
    for curve in (d1["mif"], d1["lif"]):
        assert torch.allclose(curve[:, 0], p_clean, atol=1e-6) and torch.allclose(curve[:, -1], p_pert, atol=1e-6)
    assert bool(((d1["score"] >= 0) & (d1["score"] <= 1)).all())


def test_random_ties_follow_the_generator_and_constant_maps_are_flagged():
    x = _images(b=2, c=1, h=6, w=6).float()
    model = small_cnn(in_channels=1, side=6, n_classes=3)
    flat = torch.ones(2, 1, 6, 6)
    with pytest.warns(perturb.ConstantMapWarning):
        a = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=1)
    with pytest.warns(perturb.ConstantMapWarning):
        b = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=1)
    with pytest.warns(perturb.ConstantMapWarning):
        c = fc.fewclass_fid_details(model, x, flat, perturbed=torch.zeros_like(x), generator=2)
    assert torch.equal(a["mif"], b["mif"]) and not torch.equal(a["mif"], c["mif"])
    assert a["constant"].tolist() == [True, True]


def test_fid_refuses_mismatched_perturbed_images():
    x = _images(b=2, c=1).float()
    model = small_cnn(in_channels=1, side=9, n_classes=3)
    with pytest.raises(ValueError, match="perturbed"):
        fc.fewclass_fid(model, x, torch.rand(2, 1, 9, 7), perturbed=torch.zeros(1, 1, 9, 7))


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


# --- issue 32: torch's errors and silent tie orders -----------------------------------------------------------


def test_fewclass_names_a_target_beyond_the_model_s_classes_and_x_s_dtype():
    """A target the model has no class for, or float64 x for a float32 model, is named (target, x) instead of
    torch's "index 3 is out of bounds" or "Input type (double) and bias type (float)"."""
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(2, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    a = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(1))
    with pytest.raises(ValueError, match=r"^target must hold classes in \[0, 2\] \(the model returns 3 classes\), "
                                         r"got 3"):
        fc.fewclass_fid(model, x, a, perturbed=x.flip(-1), target=torch.tensor([0, 3]))
    with pytest.raises(TypeError, match=r"^target must be an int64 tensor"):
        fc.fewclass_fid_details(model, x, a, perturbed=x.flip(-1), target=torch.tensor([0.0, 1.0]))
    binary = small_cnn(in_channels=2, side=8, n_classes=1)  # one logit: classes 0 and 1
    with pytest.raises(ValueError, match=r"^target must hold classes in \[0, 1\] \(the model returns 2 classes\), "
                                         r"got 2"):
        fc.fewclass_fid(binary, x, a, perturbed=x.flip(-1), target=torch.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64 but model's parameters are torch.float32"):
        fc.fewclass_fid(model, x.double(), a.double(), perturbed=x.flip(-1).double(), target=torch.tensor([0, 1]))
    with pytest.raises(TypeError, match=r"^x has dtype torch.float64 but model's parameters are torch.float32"):
        fc.select_perturbation(model, x.double(), grid=fc.candidate_grid(["V1"]))


def test_fewclass_warns_once_about_constant_maps_and_flags_them():
    import warnings

    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(3, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    a = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(1))
    a[1] = 0.0   # all zero
    a[2] = -0.5  # constant
    with pytest.warns(perturb.ConstantMapWarning, match=r"for 2 of 3 sample\(s\) \(e\.g\. \[1, 2\]\)") as record:
        d = fc.fewclass_fid_details(model, x, a, perturbed=x.flip(-1))
    assert sum(issubclass(w.category, perturb.ConstantMapWarning) for w in record) == 1
    assert d["constant"].tolist() == [False, True, True]
    with warnings.catch_warnings():  # ranked maps: no warning
        warnings.simplefilter("error", perturb.ConstantMapWarning)
        fc.fewclass_fid(model, x, torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(2)), perturbed=x.flip(-1))


def test_fid_frame_silences_the_constant_map_warning_and_keeps_the_flags():
    """The book's protocol (an all-zero Grad-CAM is possible) reports the flags, as SaCo's and F-Fidelity's do:
    its notebooks must print no warning."""
    import warnings

    from faithlab_study.papers import fewclass as protocol

    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.rand(2, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    maps = {("GradCAM", "none"): torch.zeros(2, 8, 8), ("Random", "none"): torch.rand(2, 8, 8)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", perturb.ConstantMapWarning)
        frame, details = protocol.fid_frame(model, x, maps, x.flip(-1), fractions=[0.0, 0.5, 1.0])
    assert details["GradCAM", "none"]["constant"].tolist() == [True, True]
    assert details["Random", "none"]["constant"].tolist() == [False, False]
    assert len(frame) == 4


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


# --- issue 32: candidates on pixel values when x is normalised ------------------------------------------------

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as imagenet_vehicles normalises
PIXEL_GRID = fc.candidate_grid(["V1", "V2", "V3", "V4", "V5", "V15"])  # the μ operations and all three adjustments


def _pixels(b=4, seed=5):
    """Images in [0, 1] of different brightness and contrast per image (means from about 0.2 to 0.7)."""
    g = torch.Generator().manual_seed(seed)
    lo = torch.tensor([0.0, 0.1, 0.3, 0.5], dtype=torch.float64)[:b, None, None, None]
    return (lo + (1 - lo) * torch.rand(b, 3, 8, 8, generator=g, dtype=torch.float64) ** 1.5).clamp(0, 1)


def _stats(dtype=torch.float64):
    return (torch.tensor(MEAN, dtype=dtype).view(1, 3, 1, 1), torch.tensor(STD, dtype=dtype).view(1, 3, 1, 1))


class _OnPixels(torch.nn.Module):
    """``norm(z) = raw(z·std + mean)``: the same model as ``raw``, fed normalised inputs."""

    def __init__(self, raw):
        super().__init__()
        self.raw = raw

    def forward(self, z):
        mean, std = _stats(z.dtype)
        return self.raw(z * std + mean)


class _Confident(torch.nn.Module):
    """The seeded small CNN with its logits × 10: confident on the images, so the search has to move them (the
    plain net is near-uniform everywhere, and the unchanged image would already pass U < Δ)."""

    def __init__(self):
        super().__init__()
        self.net = small_cnn(in_channels=3, side=8, n_classes=3)

    def forward(self, z):
        return 10 * self.net(z)


def _raw_models():
    """Models on pixel values: uncertain at the image mean 0.3 (:class:`_MeanModel`), or a confident CNN."""
    return {"mean": _MeanModel().double().eval(), "cnn": _Confident().double().eval()}


def _same_candidate(a: tuple, b: tuple) -> bool:
    """Two grid entries that build the same image from pixels (0 < μ): range matching (s) and histogram matching
    (m) ignore a positive factor, so V1, V3 = G(x)·μ, V4 = G(x)/μ and V5 = G(x)·(1 − μ) coincide under them at
    equal σ, and rounding alone decides which of them is the argmin."""
    scaled = {"V1", "V3", "V4", "V5"}
    return a[1:] == b[1:] and a[2] in ("s", "m") and {a[0], b[0]} <= scaled


@pytest.mark.parametrize("kind", ["mean", "cnn"])
def test_a_normalised_input_chooses_the_candidate_of_its_raw_pixels(kind):
    raw = _raw_models()[kind]
    x = _pixels()
    mean, std = _stats()
    xn = (x - mean) / std
    want = fc.select_perturbation(raw, x, grid=PIXEL_GRID, batch_size=300)
    got = fc.select_perturbation(_OnPixels(raw).eval(), xn, grid=PIXEL_GRID, batch_size=300,
                                 normalisation=(MEAN, STD))
    pairs = list(zip(got["index"].tolist(), want["index"].tolist(), strict=True))
    assert all(i == j or _same_candidate(PIXEL_GRID[i], PIXEL_GRID[j]) for i, j in pairs), pairs
    assert sum(i == j for i, j in pairs) >= 3
    torch.testing.assert_close(got["image"], (want["image"] - mean) / std, rtol=0, atol=1e-12)
    torch.testing.assert_close(got["all_u"], want["all_u"], rtol=0, atol=1e-12)
    torch.testing.assert_close(got["all_s"], want["all_s"], rtol=0, atol=1e-12)  # S between pixels (eq. 4)
    assert {g[0] for g in PIXEL_GRID} >= {"V3", "V4", "V5"} and {g[2] for g in PIXEL_GRID} == set(fc.ADJUSTMENTS)


@pytest.mark.parametrize("kind", ["mean", "cnn"])
def test_without_normalisation_a_normalised_input_chooses_other_candidates(kind):
    """The behaviour before issue 32: the operations ran on the normalised values, where an image's mean μ is near
    0 or negative (G(x)/μ explodes or flips sign), so the choice differs from the one on the image's pixels."""
    raw = _raw_models()[kind]
    x = _pixels()
    mean, std = _stats()
    xn = (x - mean) / std
    assert bool((xn.mean(dim=(1, 2, 3)) < 0).any())  # μ < 0 after normalisation: G(x)/μ flips the image's sign
    want = fc.select_perturbation(raw, x, grid=PIXEL_GRID, batch_size=300)
    old = fc.select_perturbation(_OnPixels(raw).eval(), xn, grid=PIXEL_GRID, batch_size=300)
    pairs = zip(old["index"].tolist(), want["index"].tolist(), strict=True)
    assert any(i != j and not _same_candidate(PIXEL_GRID[i], PIXEL_GRID[j]) for i, j in pairs)
    assert not torch.allclose(old["all_s"], want["all_s"])


def test_candidates_with_normalisation_agree_with_the_selection_and_the_batch_size():
    x = _pixels(b=3)
    mean, std = _stats()
    xn = (x - mean) / std
    grid = fc.candidate_grid(["V2", "V4", "V5"])
    model = _OnPixels(_raw_models()["cnn"]).eval()

    def collect(z, bs, normalisation):
        out = torch.empty(z.shape[0], len(grid), *z.shape[1:], dtype=z.dtype)
        for b0, b1, v0, v1, c in fc.candidates(z, grid=grid, batch_size=bs, normalisation=normalisation):
            assert (b1 - b0) * (v1 - v0) <= bs
            out[b0:b1, v0:v1] = c
        return out

    every = collect(xn, 7, (MEAN, STD))
    torch.testing.assert_close(every, collect(xn, 10_000, (MEAN, STD)), rtol=0, atol=1e-9)
    raw = collect(x, 10_000, None)  # the candidates of the pixels, normalised afterwards
    torch.testing.assert_close(every, (raw - mean[:, None]) / std[:, None], rtol=0, atol=1e-10)
    a = fc.select_perturbation(model, xn, grid=grid, batch_size=16, normalisation=(MEAN, STD))
    b = fc.select_perturbation(model, xn, grid=grid, batch_size=1000, normalisation=(MEAN, STD))
    assert torch.equal(a["index"], b["index"]) and torch.allclose(a["all_u"], b["all_u"], atol=1e-12)
    rows = torch.arange(3)
    torch.testing.assert_close(a["image"], every[rows, a["index"]], rtol=0, atol=1e-10)
    torch.testing.assert_close(fc.candidate_images(xn, a["index"], grid=grid, normalisation=(MEAN, STD)),
                               a["image"], rtol=0, atol=1e-12)
    torch.testing.assert_close(a["all_s"], fc.similarity(x, raw), rtol=0, atol=1e-12)


def test_normalisation_takes_one_scalar_or_tensors_and_keeps_the_dtype():
    x = _pixels(b=2).float()
    mean, std = 0.45, 0.25
    xn = (x - mean) / std
    per_channel = ((mean,) * 3, [std] * 3)
    as_tensors = (torch.full((3,), mean), np.full(3, std))
    grid = fc.candidate_grid(["V4", "V5"])
    one = fc.candidate_images(xn, torch.tensor([0, 5]), grid=grid, normalisation=(mean, std))
    assert one.dtype == torch.float32
    for other in (per_channel, as_tensors):
        torch.testing.assert_close(fc.candidate_images(xn, torch.tensor([0, 5]), grid=grid, normalisation=other), one)
    pixels = fc.candidate_images(x, torch.tensor([0, 5]), grid=grid)
    torch.testing.assert_close(one, (pixels - mean) / std, rtol=1e-5, atol=1e-5)
    model = small_cnn(in_channels=3, side=8, n_classes=3)
    sel = fc.select_perturbation(model, xn, grid=grid, normalisation=(mean, std))
    assert sel["image"].dtype == sel["all_s"].dtype == torch.float32


@pytest.mark.parametrize("bad, error, message", [
    (((0.5, 0.5), STD), ValueError, r"normalisation's mean must hold one value or one per channel of x \(3\), got 2"),
    ((MEAN, (0.2, 0.0, 0.2)), ValueError, r"normalisation's std must be > 0"),
    ((MEAN, -1.0), ValueError, r"normalisation's std must be > 0"),
    (((0.5, float("nan"), 0.5), STD), ValueError, r"normalisation's mean must be a number, got NaN"),
    ((MEAN, float("inf")), ValueError, r"normalisation's std must be finite"),
    ((MEAN, ()), ValueError, r"normalisation's std must hold one value"),
    (("a", STD), TypeError, r"normalisation's mean must be a real number, got str"),
    ((True, STD), TypeError, r"normalisation's mean must be a real number, got bool"),
    ((MEAN, [[0.2, 0.2, 0.2]]), TypeError, r"normalisation's std must be a real number, got list"),
    ((MEAN,), TypeError, r"normalisation must be a pair \(mean, std\)"),
    ((MEAN, STD, STD), TypeError, r"normalisation must be a pair \(mean, std\)"),
    ("imagenet", TypeError, r"normalisation must be a pair \(mean, std\)"),
    (torch.ones(2, 3), TypeError, r"normalisation must be a pair \(mean, std\)"),
])
def test_bad_normalisation_is_refused_by_name(bad, error, message):
    x = _pixels(b=2)
    grid = fc.candidate_grid(["V1"])
    with pytest.raises(error, match=message):
        fc.select_perturbation(_MeanModel().double().eval(), x, grid=grid, normalisation=bad)
    with pytest.raises(error, match=message):
        list(fc.candidates(x, grid=grid, normalisation=bad))
    with pytest.raises(error, match=message):
        fc.candidate_images(x, torch.tensor([0, 1]), grid=grid, normalisation=bad)


# --- cost, progress, the quick grid and the cache (issue 31) ---------------------------------------------------


class _Counting(torch.nn.Module):
    """A model that counts the inputs it is given."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model, self.inputs = model, 0

    def forward(self, x):
        self.inputs += x.shape[0]
        return self.model(x)


def _counting_cnn(seed: int = 0):
    torch.manual_seed(seed)
    return _Counting(small_cnn(in_channels=3, side=8, n_classes=3)).eval()


def test_the_quick_grid_is_the_papers_distinct_operations_on_a_doubling_sigma_ladder():
    paper = fc.candidate_grid()
    quick = list(fc.QUICK_GRID)
    assert len(quick) == 144 and len(set(quick)) == 144
    assert quick == [entry for entry in paper if entry in set(quick)]  # a subset, in the paper's order
    for op in fc.QUICK_OPERATIONS:
        largest = fc.OPERATIONS[op][1]
        assert sorted({s for o, s, _ in quick if o == op}) == [s for s in fc.QUICK_SIGMAS if s <= largest]
        assert {(s, a) for o, s, a in quick if o == op and s == largest} == {(largest, a) for a in fc.ADJUSTMENTS}
    assert not {o for o, _, _ in quick} & {"V9", "V10", "V11"}
    with pytest.raises(ValueError, match=r"^grid must be one of \('quick', 'paper'\)"):
        fc.selection_cost((1, 3, 8, 8), grid="full")
    with pytest.raises(ValueError, match="sigmas"):
        fc.candidate_grid(sigmas=[0, 2])


@pytest.mark.parametrize("grid", [None, "quick", "paper", "list"])
def test_selection_cost_is_the_number_of_inputs_the_model_sees(grid):
    model = _counting_cnn()
    x = _images(b=2, c=3, h=8, w=8).float()
    chosen = fc.candidate_grid(["V1", "V15"]) if grid == "list" else grid
    cost = fc.selection_cost(x, grid=chosen)
    assert cost == fc.selection_cost(tuple(x.shape), grid=chosen)
    assert cost == 2 * {None: 144, "quick": 144, "paper": 804, "list": 72}[grid] + 1
    sel = fc.select_perturbation(model, x, grid=chosen, batch_size=100, cache=False, progress=False)
    assert model.inputs == cost and len(sel["grid"]) == (cost - 1) // 2
    with pytest.raises(TypeError, match="^x must be images"):
        fc.selection_cost((2, 3, 8))


def test_the_default_grid_is_the_quick_one_and_paper_gives_the_804():
    model = small_cnn(in_channels=3, side=8, n_classes=3)
    x = _images(b=2, c=3, h=8, w=8).float()
    default = fc.select_perturbation(model, x, progress=False, cache=False)
    assert default["grid"] == list(fc.QUICK_GRID) and default["all_u"].shape == (2, 144)
    paper = fc.select_perturbation(model, x, grid="paper", progress=False, cache=False)
    explicit = fc.select_perturbation(model, x, grid=fc.candidate_grid(), progress=False, cache=False)
    assert paper["grid"] == fc.candidate_grid()
    for key in ("image", "index", "all_u", "all_s"):
        assert torch.equal(paper[key], explicit[key])
    torch.testing.assert_close(fc.candidate_images(x, default["index"]), default["image"])


def test_selection_progress_bar_states_the_cost_and_reaches_it(monkeypatch, capsys):
    bars = []
    real = fc.tqdm

    class Recorded(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(fc, "tqdm", Recorded)
    x = _images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1", "V2"])
    fc.select_perturbation(small_cnn(in_channels=3, side=8, n_classes=3), x, grid=grid, batch_size=50, progress=True,
                           cache=False)
    (bar,) = bars
    cost = fc.selection_cost(x, grid=grid)
    assert bar.total == bar.n == cost and f"{cost:,} model inputs" in bar.desc
    assert f"{len(grid)} candidates" in capsys.readouterr().err
    monkeypatch.setenv("FAITHLAB_PROGRESS", "0")
    fc.select_perturbation(small_cnn(in_channels=3, side=8, n_classes=3), x, grid=grid, cache=False)
    assert capsys.readouterr().err == ""


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def test_a_second_search_of_the_same_images_costs_no_forward_pass():
    fc.clear_cache()
    model = _counting_cnn()
    x = _images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1"])
    # an int batch size: the default would add its one-input activation pass (once per process) to the count
    first = fc.select_perturbation(model, x, grid=grid, progress=False, batch_size=64)
    spent = model.inputs
    assert spent == fc.selection_cost(x, grid=grid)
    first["image"].zero_()  # the caller's copy: the cache keeps its own
    # same content, another tensor
    again = fc.select_perturbation(model, x.clone(), grid=grid, progress=False, batch_size=64)
    assert model.inputs == spent
    fresh = fc.select_perturbation(model, x, grid=grid, progress=False, cache=False, batch_size=64)
    assert model.inputs == 2 * spent and _same(again, fresh)


@pytest.mark.parametrize("change", ["x in place", "weights in place", "weights loaded", "buffer", "grid",
                                    "normalisation", "cache=False", "clear_cache", "structure"])
def test_the_cache_misses_when_anything_that_matters_changed(change):
    fc.clear_cache()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3))
    model = _Counting(net).eval()
    x = _images(b=2, c=3, h=8, w=8).float()
    kw = dict(grid=fc.candidate_grid(["V1"]), batch_size=40, progress=False)
    before = fc.select_perturbation(model, x, **kw)
    spent = model.inputs
    if change == "x in place":
        x[0, 0, 0, 0] += 0.5
    elif change == "weights in place":
        with torch.no_grad():
            net[0].weight.data.add_(0.1)  # through .data: the parameter's version counter does not move
    elif change == "weights loaded":
        other = {k: v + 0.1 if v.is_floating_point() else v for k, v in net.state_dict().items()}
        net.load_state_dict(other)
    elif change == "buffer":
        net[1].running_mean.fill_(0.3)
    elif change == "grid":
        kw["grid"] = fc.candidate_grid(["V3"])
    elif change == "normalisation":
        kw["normalisation"] = (0.5, 0.25)
    elif change == "cache=False":
        kw["cache"] = False
    elif change == "clear_cache":
        fc.clear_cache()
    elif change == "structure":
        net[2] = torch.nn.Tanh().eval()
    after = fc.select_perturbation(model, x, **kw)
    assert model.inputs == spent + fc.selection_cost(x, grid=kw["grid"])  # the whole search ran again
    if change in ("x in place", "weights in place", "weights loaded", "buffer", "structure"):
        assert not torch.equal(before["all_u"], after["all_u"])


@pytest.mark.parametrize("batch_size", [7, "auto"])
def test_the_cache_hits_whatever_the_batch_size(batch_size):
    """The batch size changes no result (beyond float rounding) and "auto" may resolve to another size from one call
    to the next: it is not part of the key, so a search done at one size serves a call at another (fl.evaluate's)."""
    fc.clear_cache()
    model = _counting_cnn()
    x = _images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1"])
    first = fc.select_perturbation(model, x, grid=grid, batch_size=40, progress=False)
    spent = model.inputs
    again = fc.select_perturbation(model, x, grid=grid, batch_size=batch_size, progress=False)
    assert model.inputs == spent and _same(again, first)
    fresh = fc.select_perturbation(model, x, grid=grid, batch_size=batch_size, progress=False, cache=False)
    assert model.inputs == spent + fc.selection_cost(x, grid=grid)  # "auto" too: the search's own inputs, no more
    for key in ("all_u", "all_s", "u", "s", "p"):
        torch.testing.assert_close(fresh[key], first[key], rtol=1e-6, atol=1e-7)
    assert torch.equal(fresh["index"], first["index"])


def test_the_cache_is_bounded_weak_and_only_for_modules():
    fc.clear_cache()
    grid = fc.candidate_grid(["V1"])
    model = _counting_cnn()
    xs = [_images(b=1, c=3, h=8, w=8, seed=s).float() for s in range(fc._Memo.SIZE + 1)]
    for x in xs:  # an int batch size: no one-input activation pass of the default to count
        fc.select_perturbation(model, x, grid=grid, progress=False, batch_size=64)
    one = fc.selection_cost(xs[0], grid=grid)
    assert model.inputs == len(xs) * one
    fc.select_perturbation(model, xs[-1], grid=grid, progress=False, batch_size=64)  # remembered
    assert model.inputs == len(xs) * one
    fc.select_perturbation(model, xs[0], grid=grid, progress=False, batch_size=64)  # the oldest was forgotten
    assert model.inputs == (len(xs) + 1) * one
    assert len(fc._MEMO.entries) == fc._Memo.SIZE

    class Wrapper:  # a transparent wrapper that names its module, as functools.wraps does
        def __init__(self, module):
            self.__wrapped__, self.calls = module, 0

        def __call__(self, z):
            self.calls += z.shape[0]
            return self.__wrapped__(z)

    wrapper = Wrapper(model)
    fc.select_perturbation(wrapper, xs[0], grid=grid, progress=False)
    assert wrapper.calls == 0  # keyed on the module it wraps

    seen = []

    def function(z):  # not a module: its state cannot be fingerprinted, so it is never cached
        seen.append(z.shape[0])
        return model(z)

    fc.select_perturbation(function, xs[0], grid=grid, progress=False, batch_size=64)
    fc.select_perturbation(function, xs[0], grid=grid, progress=False, batch_size=64)
    assert sum(seen) == 2 * one

    fc.clear_cache()
    temporary = _counting_cnn(seed=1)
    fc.select_perturbation(temporary, xs[0], grid=grid, progress=False)
    assert len(fc._MEMO.entries) == 1
    del temporary
    import gc
    gc.collect()
    fc.select_perturbation(model, xs[1], grid=grid, progress=False)  # storing drops the collected model's entry
    assert [e[0]() for e in fc._MEMO.entries.values()] == [model]


def test_fewclass_fid_reuses_a_search_already_done():
    fc.clear_cache()
    model = _counting_cnn()
    x = _images(b=2, c=3, h=8, w=8).float()
    maps = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(4))
    sel = fc.select_perturbation(model, x, progress=False)
    spent = model.inputs
    direct = fc.fewclass_fid(model, x, maps, perturbed=sel["image"])
    with_perturbed = model.inputs - spent
    searched = fc.fewclass_fid(model, x, maps)  # selects with the default grid: found in the cache
    assert model.inputs - spent - with_perturbed == with_perturbed  # its own curves only: no search
    assert torch.equal(direct, searched)


def test_evaluate_reuses_a_search_already_done():
    import faithlab as fl

    fc.clear_cache()
    model = small_cnn(in_channels=3, side=8, n_classes=3)
    x = _images(b=4, c=3, h=8, w=8, seed=1).float()
    maps = torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    y = model(x).argmax(1)
    kw = dict(metrics=["fewclass_fid"], progress=False)
    first = fl.evaluate(model, x, y, maps, **kw)
    fc.select_perturbation(model, x, progress=False)  # the user's own search: found in the cache
    second = fl.evaluate(model, x, y, maps, **kw)  # finds the search in the cache
    search = fc.selection_cost(x)
    assert second.attrs["forward_inputs"] == first.attrs["forward_inputs"] - search
    assert second["score"].tolist() == first["score"].tolist()

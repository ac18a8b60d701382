"""Few-class Fidelity's candidate images (spec §2, ``faithlab.metrics.papers.fewclass.blurs``): the grid, the batched
blurs and histogram matching against scipy/scikit-image and the per-candidate loop, and the candidates built on pixel
values when x is normalised (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter as scipy_gaussian
from skimage.exposure import match_histograms as skimage_match

from faithlab import perturb
from faithlab.metrics.papers.fewclass import fidelity as fc
from fewclass_inputs import MeanModel, images
from oracles import fewclass_candidates_reference, small_cnn


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
        list(fc.candidates(images(), grid=[("V1", 0, "o")]))


# --- batched image operations against their per-image references -------------------------------------------


@pytest.mark.parametrize("shape", [(9, 7), (4, 4), (1, 5)])
def test_gaussian_filter_equals_scipy_for_any_sigma(shape):
    x = images(h=shape[0], w=shape[1])
    sigmas = [0.5, 1, 3, 12, 80]  # σ = 80 reaches far past the image: the reflection folds many times
    y = perturb.gaussian_filter(x, sigmas)
    assert y.shape == (2, 5, 3, *shape)
    for b in range(2):
        for i, s in enumerate(sigmas):
            for c in range(3):
                np.testing.assert_allclose(y[b, i, c].numpy(), scipy_gaussian(x[b, c].numpy(), s), atol=1e-12)


def test_gaussian_filter_refuses_bad_sigmas():
    with pytest.raises(ValueError, match="sigmas"):
        perturb.gaussian_filter(images(), [1, 0])
    with pytest.raises(ValueError, match="x"):
        perturb.gaussian_filter(images()[0], [1])


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
    x = images(b=2, c=channels, h=8, w=6) + 0.1
    grid = fc.candidate_grid()
    got = torch.cat([c for b0, _, _, _, c in fc.candidates(x[:1], grid="paper", batch_size=300)], dim=1)[0]
    ref = fewclass_candidates_reference(x[0].numpy(), grid)
    assert got.shape[0] == len(ref) == 804
    for v, r in enumerate(ref):
        np.testing.assert_allclose(got[v].numpy(), r, atol=1e-10, err_msg=str(grid[v]))


def test_candidates_do_not_depend_on_batch_size():
    x = images(b=3, c=1)
    grid = fc.candidate_grid(["V1", "V2", "V15"])

    def collect(bs):
        out = torch.empty(3, len(grid), *x.shape[1:], dtype=x.dtype)
        for b0, b1, v0, v1, c in fc.candidates(x, grid=grid, batch_size=bs):
            assert (b1 - b0) * (v1 - v0) <= bs
            out[b0:b1, v0:v1] = c
        return out

    torch.testing.assert_close(collect(7), collect(10_000), rtol=0, atol=1e-9)  # BLAS blocking differs


def test_range_matching_maps_to_the_image_range():
    x = images(b=1)
    c = fc.match_range(x[None] * 5 - 2, x[0])
    assert torch.allclose(c.amin(), x.amin()) and torch.allclose(c.amax(), x.amax())
    flat = torch.full_like(x, 0.3)
    assert torch.equal(fc.match_range(flat, x[0]), flat)  # no range: returned as is

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
    """Models on pixel values: uncertain at the image mean 0.3 (:class:`MeanModel`), or a confident CNN."""
    return {"mean": MeanModel().double().eval(), "cnn": _Confident().double().eval()}


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
        fc.select_perturbation(MeanModel().double().eval(), x, grid=grid, normalisation=bad)
    with pytest.raises(error, match=message):
        list(fc.candidates(x, grid=grid, normalisation=bad))
    with pytest.raises(error, match=message):
        fc.candidate_images(x, torch.tensor([0, 1]), grid=grid, normalisation=bad)

"""XRAI over another method's map (``explain(method="xrai", base=...)``) against PAIR's ``saliency.XRAI`` called
directly. PAIR segments every image at 224 × 224 (about 0.7 s per image on a CPU core), so the tests use few images.
"""

from __future__ import annotations

import numpy as np
import pytest
import saliency.core as saliency
import torch

from faithlab import explainers as ex
from faithlab.explainers import xrai
from faithlab.explainers.xrai import xrai_map
from oracles import small_cnn


def _x(b: int, c: int, side: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(b, c, side, side, generator=torch.Generator().manual_seed(seed))


def _hwc(t: torch.Tensor) -> np.ndarray:
    """(C, H, W) tensor → (H, W, C) float64 numpy: the layout PAIR expects, values unchanged."""
    return t.detach().permute(1, 2, 0).to(torch.float64).numpy()


@pytest.mark.parametrize(("channels", "base", "options"), [(1, "saliency", {}), (3, "gradcam", {"layer": "0"})])
def test_equals_pair_xrai_on_the_base_map(channels, base, options):
    """Grey image over saliency; RGB image over Grad-CAM, whose (1, H, W) map PAIR gets on every channel."""
    model, x = small_cnn(in_channels=channels, side=16), _x(1, channels, 16, seed=channels)
    ours = ex.explain(model, x, 2, method="xrai", base=base, **options)
    base_map = ex.explain(model, x, 2, method=base, **options).expand_as(x)

    def model_fn(*_args, **_kwargs):
        raise AssertionError("PAIR must not call the model when base_attribution is given")

    direct = saliency.XRAI().GetMask(_hwc(x[0]), model_fn, base_attribution=_hwc(base_map[0]))
    assert direct.shape == (16, 16)
    assert torch.equal(ours[0, 0], torch.from_numpy(direct).to(ours.dtype))
    assert len(np.unique(direct)) > 1  # not the degenerate one-region map


def test_shape_dtype_device_and_batch_size_invariance():
    model, x = small_cnn(in_channels=3, side=12), _x(2, 3, 12, seed=5)
    t = torch.tensor([0, 2])
    big = ex.explain(model, x, t, method="xrai", base="integrated_gradients", n_steps=4, batch_size=64)
    assert big.shape == (2, 1, 12, 12) and big.dtype == x.dtype and big.device == x.device
    assert torch.isfinite(big).all()
    small = ex.explain(model, x, t, method="xrai", base="integrated_gradients", n_steps=4, batch_size=1)
    # IG's own maps differ in the last bits between batch sizes (its forward passes batch differently); XRAI's
    # regions and ranking do not move, so the maps agree to those bits
    torch.testing.assert_close(small, big, atol=1e-6, rtol=1e-5)


def test_map_is_piecewise_constant_over_segments():
    """XRAI gives each pixel the attribution density of the region it was ranked in: on a 28 × 28 image, a few
    dozen values at most, where the base saliency map has one value per pixel or nearly."""
    model, x = small_cnn(in_channels=1, side=28), _x(1, 1, 28, seed=7)
    base = ex.explain(model, x, 1, method="saliency")
    out = ex.explain(model, x, 1, method="xrai")
    n_base, n_xrai = len(torch.unique(base)), len(torch.unique(out))
    assert n_base > 500, n_base
    assert 1 < n_xrai <= 28 * 28 // 20, n_xrai
    # XRAI's values are means of the base map over regions: they lie within its range
    assert base.min() <= out.min() and out.max() <= base.max()


def test_image_range_does_not_matter_and_a_constant_image_is_one_region():
    """PAIR min–max scales the image itself before segmenting; a constant image (0 / 0 there) is one region whose
    value is the mean of the base map (its maximum over channels, as PAIR aggregates)."""
    rng = np.random.default_rng(0)
    image, attr = rng.random((16, 16, 2)), rng.standard_normal((16, 16, 2))
    assert np.array_equal(xrai_map(image, attr), xrai_map(image * 255.0 - 3.0, attr))
    flat = xrai_map(np.full((16, 16, 2), 0.5), attr)
    assert np.allclose(flat, attr.max(-1).mean()) and np.isfinite(flat).all()


@pytest.mark.parametrize("base", ["nope", "xrai", None])
def test_unknown_base_raises_naming_base(base):
    model, x = small_cnn(in_channels=1, side=8), _x(1, 1, 8)
    with pytest.raises(ValueError, match=r"\bbase\b"):
        ex.explain(model, x, 0, method="xrai", base=base)


def test_base_options_are_checked_and_a_random_base_needs_a_generator():
    model, x = small_cnn(in_channels=1, side=8), _x(1, 1, 8)
    with pytest.raises(TypeError, match=r"n_step\b.*base 'integrated_gradients'"):
        ex.explain(model, x, 0, method="xrai", base="integrated_gradients", n_step=3)
    with pytest.raises(ValueError, match=r"generator"):
        ex.explain(model, x, 0, method="xrai", base="random")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_gpu_the_map_comes_back_on_the_inputs_device():
    """The base map is computed on the GPU, XRAI on the CPU over that very map, the result moved back."""
    model, x = small_cnn(in_channels=3, side=12).cuda(), _x(1, 3, 12, seed=3).cuda()
    out = ex.explain(model, x, 1, method="xrai")
    base = ex.explain(model, x, 1, method="saliency")
    assert out.device == x.device and out.dtype == x.dtype and out.shape == (1, 1, 12, 12)
    expected = xrai_map(_hwc(x[0].cpu()), _hwc(base[0].cpu()))
    assert torch.equal(out[0, 0].cpu(), torch.from_numpy(expected).to(out.dtype))


def _count_segmentations(monkeypatch) -> list[int]:
    """Counts PAIR's segmentations (its ``_get_segments_felzenszwalb``, which :func:`segments` caches)."""
    import saliency.core.xrai as pair_xrai

    calls, real = [0], pair_xrai._get_segments_felzenszwalb

    def counted(image, *args, **kwargs):
        calls[0] += 1
        return real(image, *args, **kwargs)

    monkeypatch.setattr(pair_xrai, "_get_segments_felzenszwalb", counted)
    xrai.clear_segments()
    return calls


def test_segments_are_computed_once_per_image_and_the_maps_equal_pairs_own(monkeypatch):
    """The segmentation depends on the image only: XRAI over several base maps of the same images segments each
    image once, and every map equals PAIR's GetMask left to segment by itself; an image that differs in one pixel
    is segmented anew."""
    model, x = small_cnn(in_channels=3, side=12), _x(3, 3, 12, seed=11)
    calls = _count_segmentations(monkeypatch)
    bases = {"saliency": {}, "input_x_gradient": {}, "integrated_gradients": {"n_steps": 4}}
    ours = {b: ex.explain(model, x, 1, method="xrai", base=b, **o) for b, o in bases.items()}
    assert calls[0] == len(x)  # three images, three base maps: three segmentations
    for b, o in bases.items():
        base_map = ex.explain(model, x, 1, method=b, **o)
        for i in range(len(x)):
            direct = saliency.XRAI().GetMask(_hwc(x[i]), None, base_attribution=_hwc(base_map[i]))
            assert torch.equal(ours[b][i, 0], torch.from_numpy(direct).to(x.dtype)), (b, i)
    before = calls[0]  # PAIR's GetMask above segmented by itself (through the counted function)
    moved = x.clone()
    moved[0, 0, 5, 5] += 0.25
    ex.explain(model, moved, 1, method="xrai")
    assert calls[0] == before + 1  # only the changed image: the others come from the cache


def test_cached_segments_equal_pairs_and_the_cache_is_bounded(monkeypatch):
    import saliency.core.xrai as pair_xrai

    rng = np.random.default_rng(3)
    images = [rng.random((10, 10, 1)) for _ in range(3)]
    direct = [pair_xrai._get_segments_felzenszwalb(im) for im in images]
    calls = _count_segmentations(monkeypatch)
    for im, masks in zip(images, direct):
        cached = xrai.segments(im)
        assert len(cached) == len(masks) > 1
        assert all(np.array_equal(a, b) for a, b in zip(cached, masks))
        assert not cached[0].flags.writeable  # shared between calls: nobody may write them
    assert calls[0] == 3
    xrai.segments(images[0])
    assert calls[0] == 3
    one = sum(m.nbytes for m in direct[0])
    monkeypatch.setattr(xrai, "SEGMENT_CACHE_BYTES", one)  # room for about one image's masks
    xrai.clear_segments()
    for im in images + images:
        xrai.segments(im)
    assert calls[0] == 3 + 6  # each image evicted the last before it came back
    assert xrai._segments_bytes <= one
    xrai.clear_segments()

"""One dtype rule for attribution maps across the metric registry (issue 92): every registered sample-level metric
that reads maps accepts integer and bool maps (a binary mask, a superpixel selection, a segmentation) and scores
them as their floating copies, and refuses a complex map with a TypeError naming ``attributions``. The rule itself
is ``_validate.attribution_map``; ``perturb.check_attributions`` applies it with x's floating dtype."""

from __future__ import annotations

import warnings

import pytest
import torch
from registry_fuzz import B, inputs, own_call

import faithlab as fl
from faithlab import _validate
from faithlab.metrics.registry import METRICS

SAMPLE = sorted(name for name, m in METRICS.items() if m.level == "sample" and m.function is not None)
READS_MAPS = [name for name in SAMPLE if METRICS[name].maps]  # S_avg maps x itself: it is given no maps

# every explanation size and a few masks: F-Fidelity's 0/1 read-outs then differ between maps (with one size they
# are 0 for most maps, and an equality would prove little)
OPTIONS = {"sparsity": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "n_samples": 4}


def _score(name: str, maps: torch.Tensor) -> torch.Tensor:
    model, x, y, _ = inputs()
    target = model(x).argmax(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # integer maps tie: the constant-map and similar warnings are not the point
        out = own_call(name, model, x, maps, labels=y, target=target, options=OPTIONS)
    assert isinstance(out, torch.Tensor) and out.shape == (B,), (name, type(out))
    return out


def _integer_maps() -> tuple[torch.Tensor, torch.Tensor]:
    """Two coarse integer rankings (values −9 … 9, with ties): the fuzz map rounded, and it mirrored and negated."""
    _, _, _, a = inputs()
    ints = (a * 3).round().to(torch.int64)
    return ints, -ints.flip(-1).flip(-2)


def test_the_registry_has_metrics_of_every_family_that_read_maps():
    assert {"fid+", "rfid+", "ffid+", "fewclass_fid", "saco", "aopc", "mu_fidelity", "le-mo", "infidelity",
            "road"} <= set(READS_MAPS)
    assert set(SAMPLE) - set(READS_MAPS) == {"s_avg"}


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
@pytest.mark.parametrize("name", READS_MAPS)
def test_an_integer_map_scores_as_its_floating_copy(name, dtype):
    _, x, _, _ = inputs()
    for ints in _integer_maps():
        got, want = _score(name, ints.to(dtype)), _score(name, ints.to(x.dtype))
        # the same draws (every random stream is keyed to the seed and the sample): equal up to float rounding
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", READS_MAPS)
def test_the_integer_maps_are_read_not_ignored(name):
    """The equality above could hold for a metric that ignored its maps: the two integer maps score differently."""
    first, second = _integer_maps()
    assert not torch.equal(_score(name, first), _score(name, second)), name


@pytest.mark.parametrize("name", READS_MAPS)
def test_a_bool_map_scores_as_its_float_0_1_copy(name):
    _, x, _, a = inputs()
    mask = a > 0.5  # a binary selection, e.g. LIME's chosen superpixels
    got, want = _score(name, mask), _score(name, mask.to(x.dtype))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", READS_MAPS)
def test_a_complex_map_is_a_type_error_naming_attributions(name):
    _, _, _, a = inputs()
    with pytest.raises(TypeError, match=r"\battributions\b") as err:
        _score(name, a.to(torch.complex64))
    assert "complex" in str(err.value), str(err.value)


def test_the_rule_converts_to_x_s_floating_dtype_else_float32():
    ints = torch.tensor([[3, -1], [0, 2]])
    same = torch.rand(2, 2)
    assert _validate.attribution_map(same, "attributions") is same  # a floating map as it is
    assert _validate.attribution_map(same.half(), "a", like=torch.zeros(2, 2)).dtype == torch.float16
    assert _validate.attribution_map(ints, "a", like=torch.zeros(2, 2, dtype=torch.float64)).dtype == torch.float64
    assert _validate.attribution_map(ints, "a", like=torch.zeros(2, 2, dtype=torch.int64)).dtype == torch.float32
    assert _validate.attribution_map(ints, "a").dtype == torch.float32
    assert torch.equal(_validate.attribution_map(ints > 0, "a"), torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(TypeError, match=r"^maps must hold real values"):
        _validate.attribution_map(ints.to(torch.complex128), "maps")


def test_check_attributions_returns_the_map_in_x_s_floating_dtype():
    x = torch.rand(2, 3, 4, 4, dtype=torch.float64)
    ints = torch.randint(-3, 4, (2, 4, 4))
    out = fl.perturb.check_attributions(ints, x)
    assert out.dtype == torch.float64 and torch.equal(out, ints.double())
    tokens = torch.randint(0, 5, (2, 6))
    assert fl.perturb.check_attributions(tokens > 2, tokens).dtype == torch.float32
    floating = torch.rand(2, 4, 4)
    assert fl.perturb.check_attributions(floating, x) is floating
    with pytest.raises(TypeError, match=r"^maps must hold real values"):
        fl.perturb.check_attributions(floating.to(torch.complex64), x, name="maps")


@pytest.mark.parametrize("reduce", fl.perturb.REDUCE)
def test_unit_scores_of_an_integer_map_equal_those_of_its_float_copy(reduce):
    x = torch.rand(2, 3, 4, 4)
    labels = torch.arange(16).view(4, 4) // 4  # 4 row segments
    units = fl.perturb.segment_units(labels)
    ints = torch.randint(-5, 6, (2, 3, 4, 4), generator=torch.Generator().manual_seed(0))
    got = fl.perturb.unit_scores(ints, units, reduce=reduce)
    assert got.dtype == torch.float32
    assert torch.equal(got, fl.perturb.unit_scores(ints.float(), units, reduce=reduce))
    pixels = fl.perturb.pixel_units(x)
    assert torch.equal(fl.perturb.unit_scores(ints > 0, pixels, reduce=reduce),
                       fl.perturb.unit_scores((ints > 0).float(), pixels, reduce=reduce))

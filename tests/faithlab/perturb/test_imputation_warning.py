"""``perturb.noisy_linear_imputation`` warns, as ``fl.metrics.road`` does, when a system stops at ``max_iter`` short
of its tolerance (issue 92): one RuntimeWarning per call, at the caller's line, with or without ``details``; the
default cap converges without a word, and ROAD (which imputes through ``perturb.NoisyLinear``, not the function)
still warns once per call."""

from __future__ import annotations

import warnings

import pytest
import torch
from oracles import small_cnn

import faithlab as fl
from faithlab import perturb

SIDE = 24


def _case():
    """Two images with one large hole each: CG needs a few dozen iterations, far more than 1."""
    x = torch.rand(2, 1, SIDE, SIDE, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    keep = torch.ones(2, SIDE, SIDE, dtype=torch.bool)
    keep[:, 4:20, 3:18] = False
    return x, keep


def _tolerance_warnings(record) -> list[warnings.WarningMessage]:
    return [w for w in record if issubclass(w.category, RuntimeWarning) and "tolerance" in str(w.message)]


@pytest.mark.parametrize("details", [False, True])
def test_a_cap_too_small_warns_once_at_the_caller_s_line(details):
    x, keep = _case()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = perturb.noisy_linear_imputation(x, keep, max_iter=1, details=details)
    found = _tolerance_warnings(record)
    assert len(found) == 1, [str(w.message) for w in record]
    assert found[0].filename == __file__  # the user's frame, not the library's
    message = str(found[0].message)
    assert "max_iter=1" in message and "2 of 2" in message, message
    if details:
        assert not bool(out["converged"].any()) and int(out["iterations"].max()) == 1


def test_pytest_sees_the_warning():
    x, keep = _case()
    with pytest.warns(RuntimeWarning, match=r"noisy_linear_imputation stopped short of its tolerance"):
        perturb.noisy_linear_imputation(x, keep, max_iter=1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_the_default_cap_converges_without_a_warning(dtype):
    x, keep = _case()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        d = perturb.noisy_linear_imputation(x.to(dtype), keep, details=True)
        perturb.noisy_linear_imputation(x.to(dtype), keep, noise=0.01)
    assert bool(d["converged"].all()) and int(d["iterations"].max()) > 1  # the case does need iterations


def test_only_the_unconverged_systems_are_counted():
    x, keep = _case()
    keep[1] = True  # the second image keeps every pixel: nothing to solve
    with pytest.warns(RuntimeWarning, match=r"on 1 of 2 image-channel system\(s\) \(e\.g\. image 0 channel 0\)"):
        d = perturb.noisy_linear_imputation(x, keep, max_iter=1, details=True)
    assert d["converged"].tolist() == [[False], [True]]


class _Capped(perturb.NoisyLinear):
    """ROAD's reference with a cap of one iteration (ROAD has no max_iter of its own)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, max_iter=1, **kwargs)


def _road(monkeypatch, capped: bool) -> list[warnings.WarningMessage]:
    x, _ = _case()
    model = small_cnn(in_channels=1, side=SIDE, n_classes=3)
    maps = torch.rand(2, SIDE, SIDE, generator=torch.Generator().manual_seed(4))
    if capped:
        monkeypatch.setattr(fl.perturb, "NoisyLinear", _Capped)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fl.metrics.road(model.double(), x, maps, fractions=[0.3, 0.6])
    return _tolerance_warnings(record)


def test_road_on_the_same_images_warns_once_per_call(monkeypatch):
    found = _road(monkeypatch, capped=True)
    assert len(found) == 1, [str(w.message) for w in found]
    assert "ROAD" in str(found[0].message)


def test_road_with_its_own_cap_does_not_warn(monkeypatch):
    assert _road(monkeypatch, capped=False) == []


@pytest.mark.parametrize("capped", [True, False])
def test_every_metric_on_the_imputation_reference_warns_once_when_it_is_capped(capped):
    """Not ROAD alone: F-Fidelity's Fid+ with the imputation as its reference (the study's "ROAD" rival method)
    says a capped solve once per call, at the caller's line, and nothing with the default cap."""
    x, _ = _case()
    model = small_cnn(in_channels=1, side=SIDE, n_classes=3).double()
    maps = torch.rand(2, SIDE, SIDE, generator=torch.Generator().manual_seed(4))
    reference = perturb.NoisyLinear(0.0, max_iter=1 if capped else None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fl.metrics.fid_plus(model, x, maps, sparsity=[0.3, 0.6], reference=reference, output="prob")
    found = _tolerance_warnings(record)
    assert len(found) == (1 if capped else 0), [str(w.message) for w in record]
    if capped:
        assert found[0].filename == __file__ and "max_iter=1" in str(found[0].message)

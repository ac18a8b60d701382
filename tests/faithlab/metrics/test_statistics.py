from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

import faithlab as fl
from faithlab.metrics import statistics as stats


def _close(actual: torch.Tensor, expected: torch.Tensor, atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """allclose with a readable failure (torch.testing.assert_close imports torch.distributed: seconds)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.allclose(actual, expected.to(actual.dtype), atol=atol, rtol=rtol), (actual - expected).abs().max()


def _tied_rows(seed: int, rows: int = 40, n: int = 9) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 4, (rows, n), generator=g).double()  # few distinct values → many ties


@pytest.mark.parametrize("method", ["average", "min"])
def test_rankdata_matches_scipy_with_ties(method):
    x = _tied_rows(0)
    expected = scipy.stats.rankdata(x.numpy(), method=method, axis=1)
    np.testing.assert_array_equal(stats.rankdata(x, method=method).numpy(), expected)
    # along another dim
    np.testing.assert_array_equal(stats.rankdata(x.T, dim=0, method=method).T.numpy(), expected)


def test_rankdata_nan_row_propagates_and_hand_case():
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0], [1.0, float("nan"), 0.0, 2.0]])
    r = stats.rankdata(x)
    assert r[0].tolist() == [3.5, 1.0, 3.5, 2.0]
    assert r[1].isnan().all()
    assert stats.rankdata(x[:1], method="min")[0].tolist() == [3.0, 1.0, 3.0, 2.0]


def test_spearman_and_pearson_match_scipy():
    a, b = _tied_rows(1), _tied_rows(2)
    b[:5] = torch.randn(5, 9, generator=torch.Generator().manual_seed(3)).double()
    ours = stats.spearman(a, b)
    ref = [scipy.stats.spearmanr(u, v).statistic for u, v in zip(a.numpy(), b.numpy())]
    np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-10, atol=1e-12)
    ref_p = [scipy.stats.pearsonr(u, v).statistic for u, v in zip(a.numpy(), b.numpy())]
    np.testing.assert_allclose(stats.pearson(a, b).numpy(), ref_p, rtol=1e-10, atol=1e-12)


def test_spearman_constant_vector_is_nan_and_broadcasts():
    a = torch.tensor([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    b = torch.tensor([3.0, 2.0, 1.0])
    r = stats.spearman(a, b)
    assert r[0].item() == pytest.approx(-1.0)
    assert math.isnan(r[1].item())
    with pytest.warns(scipy.stats.ConstantInputWarning):
        assert math.isnan(scipy.stats.spearmanr(a[1].numpy(), b.numpy()).statistic)
    assert math.isnan(stats.pearson(b, torch.full((3,), 0.1)).item())  # constant 0.1 whose mean is inexact


def test_trapezoid_auc_uniform_and_given_x():
    curve = torch.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    assert stats.trapezoid_auc(curve).tolist() == [0.5, 1.0]
    x = torch.tensor([0.0, 0.1, 1.0])
    assert stats.trapezoid_auc(curve, x).tolist() == pytest.approx([0.5, 1.0])
    assert stats.trapezoid_auc(torch.tensor([0.0, 1.0, 1.0]), x).item() == pytest.approx(0.05 + 0.9)
    assert stats.trapezoid_auc(curve.T, dim=0).tolist() == [0.5, 1.0]


def test_nan_mean_std():
    x = torch.tensor([[1.0, float("nan"), 3.0], [float("nan")] * 3])
    mean, std = stats.nan_mean_std(x, dim=1)
    assert mean[0].item() == 2.0 and std[0].item() == 1.0
    assert mean[1].isnan() and std[1].isnan()
    m, s = stats.nan_mean_std(x, correction=1)
    assert m.item() == 2.0 and s.item() == pytest.approx(math.sqrt(2))
    np.testing.assert_allclose(s.item(), np.nanstd(x.numpy(), ddof=1))


def test_errors_name_arguments():
    with pytest.raises(ValueError, match="method"):
        stats.rankdata(torch.zeros(3), method="dense")
    with pytest.raises(ValueError, match="curve"):
        stats.trapezoid_auc(torch.zeros(3, 1))
    with pytest.raises(TypeError, match="a"):
        stats.spearman([1, 2], torch.zeros(2))


def test_lazy_import():
    assert fl.metrics.statistics is stats


@pytest.mark.parametrize("fn", [stats.pearson, stats.spearman])
def test_correlations_refuse_0d_tensors(fn):
    """Two 0-d tensors are no vectors: named, where pearson returned NaN and spearman leaked an IndexError. A 0-d
    tensor against a vector broadcasts to a constant vector: NaN, as documented for constant vectors."""
    with pytest.raises(ValueError, match="^a and b are 0-d tensors"):
        fn(torch.tensor(1.0), torch.tensor(2.0))
    assert torch.isnan(fn(torch.tensor([1.0, 2.0, 3.0]), torch.tensor(2.0)))
    assert float(fn(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 3.0, 2.0]))) == pytest.approx(0.5)

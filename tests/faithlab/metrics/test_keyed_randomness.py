"""Randomness keyed to the sample (issue 32; house rule: seed + global sample index): every metric that draws
random numbers per sample — F-Fidelity's masks and tie orders, μF's subsets (tests/faithlab/metrics/papers/reco_mege/test_baselines.py),
TRACE's annealing proposals and random orders, Few-class Fid's tie order — gives a slice of the data, evaluated with its
global indices, exactly the rows of the whole call; the same slice under other indices gets other draws (so each
check can fail); and ``fl.evaluate`` gives the same frame whatever its chunk_size."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import perturb
from faithlab.metrics import fewclass, search
from oracles import small_cnn

SLICES = ((0, 3), (3, 10), (10, 12))


class _OneAtATime(nn.Module):
    """The wrapped model run on one input at a time: an input's logits do not depend on the batch it comes in, so
    the comparisons below can be exact."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.eval()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net(z[i:i + 1]) for i in range(z.shape[0])])


def _data(n: int = 12, side: int = 8, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, a = torch.randn(n, 1, side, side, generator=g), torch.randn(n, 1, side, side, generator=g)
    model = _OneAtATime(small_cnn(in_channels=1, side=side, n_classes=3))
    with torch.no_grad():
        y = model(x).argmax(1)
    return model, x, a, y


# --------------------------------------------------------------------------------------------- the random source
def test_sample_seeds_give_each_row_its_own_stream_whatever_its_neighbours():
    whole = perturb.sample_seeds(7, None, 6)
    u = whole.uniform((6, 5), "cpu")
    part = perturb.sample_seeds(7, torch.arange(2, 5), 3)
    assert torch.equal(part.uniform((3, 5), "cpu"), u[2:5])
    assert len({tuple(r.tolist()) for r in u}) == 6              # six rows, six streams
    # a second draw continues each stream (and differs from the first)
    v = whole.uniform((6, 5), "cpu")
    assert torch.equal(part.uniform((3, 5), "cpu"), v[2:5]) and not torch.equal(u, v)
    # another seed, other streams; draws are uniform on [0, 1) (mean of 60,000 within 5 standard errors)
    assert not torch.equal(perturb.sample_seeds(8, None, 6).uniform((6, 5), "cpu"), u)
    big = perturb.sample_seeds(0, None, 6).uniform((6, 10_000), "cpu")
    assert abs(float(big.mean()) - 0.5) < 5 * (1 / 12) ** 0.5 / 60_000 ** 0.5 and 0 <= float(big.min())
    with pytest.raises(ValueError, match="sample_index must have shape"):
        perturb.sample_seeds(0, torch.arange(4), 3)
    with pytest.raises(TypeError, match="sample_index must"):
        perturb.sample_seeds(0, "0123", 4)
    with pytest.raises(ValueError, match="generator is required"):
        perturb.sample_seeds(None, None, 4)


# ---------------------------------------------------------------------------------------------------- F-Fidelity
@pytest.mark.parametrize("options", [dict(alpha=0.5, n_samples=4, sampling="bernoulli"),
                                     dict(alpha=0.5, beta=0.1, n_samples=3, sampling="exact"),
                                     dict(alpha=1.0, ties="random")])
def test_ffidelity_rows_do_not_depend_on_the_split(options):
    model, x, a, y = _data()
    a = a.round(decimals=0)  # ties, for ties="random"
    levels = [0.2, 0.5, 0.8]
    for fn in (fl.metrics.fid_plus, fl.metrics.fid_minus):
        whole = fn(model, x, a, target=y, sparsity=levels, output="prob", generator=5, **options)
        for lo, hi in SLICES:
            part = fn(model, x[lo:hi], a[lo:hi], target=y[lo:hi], sparsity=levels, output="prob", generator=5,
                      sample_index=torch.arange(lo, hi), batch_size=4, **options)
            assert torch.equal(part, whole[lo:hi]), (fn.__name__, lo, hi)
        shifted = fn(model, x[3:10], a[3:10], target=y[3:10], sparsity=levels, output="prob", generator=5,
                     **options)
        assert not torch.equal(shifted, whole[3:10])


# --------------------------------------------------------------------------------------------------------- TRACE
def test_trace_annealing_and_random_orders_do_not_depend_on_the_split():
    model, x, _, y = _data()
    kw = dict(edge=2, objective="le-mo", iterations=30, generator=3, target=y)
    whole = search.anneal(model, x, **kw)
    for lo, hi in SLICES:
        part = search.anneal(model, x[lo:hi], **{**kw, "target": y[lo:hi]}, sample_index=torch.arange(lo, hi))
        assert torch.equal(part.trajectory, whole.trajectory[lo:hi]) and torch.equal(part.accepted,
                                                                                     whole.accepted[lo:hi])
    shifted = search.anneal(model, x[3:10], **{**kw, "target": y[3:10]})
    assert not torch.equal(shifted.accepted, whole.accepted[3:10]) or not torch.equal(
        shifted.trajectory, whole.trajectory[3:10])
    curves = search.random_deletion_curves(model, x, edge=2, n_orders=5, generator=4, target=y)
    part = search.random_deletion_curves(model, x[3:10], edge=2, n_orders=5, generator=4, target=y[3:10],
                                               sample_index=torch.arange(3, 10))
    assert torch.equal(part, curves[3:10])
    assert not torch.equal(search.random_deletion_curves(model, x[3:10], edge=2, n_orders=5, generator=4,
                                                               target=y[3:10]), curves[3:10])


# ----------------------------------------------------------------------------------------------------- Few-class
def test_fewclass_tie_order_does_not_depend_on_the_split():
    model, x, a, y = _data()
    maps = a.abs().round(decimals=0)  # many ties: the tie order decides which pixels go first
    perturbed = x.flip(-1)
    whole = fewclass.fewclass_fid_details(model, x, maps, perturbed=perturbed, target=y, generator=2)
    for lo, hi in SLICES:
        part = fewclass.fewclass_fid_details(model, x[lo:hi], maps[lo:hi], perturbed=perturbed[lo:hi],
                                             target=y[lo:hi], generator=2, sample_index=torch.arange(lo, hi),
                                             batch_size=7)
        assert torch.equal(part["mif"], whole["mif"][lo:hi]) and torch.equal(part["score"], whole["score"][lo:hi])
    shifted = fewclass.fewclass_fid_details(model, x[3:10], maps[3:10], perturbed=perturbed[3:10], target=y[3:10],
                                            generator=2)
    assert not torch.equal(shifted["mif"], whole["mif"][3:10])


# ------------------------------------------------------------------------------------------------------ evaluate
def test_evaluate_gives_the_same_frame_whatever_its_chunks():
    model, x, a, y = _data()
    kw = dict(metrics=["rfid+", "ffid-", "fewclass_fid", "mu_fidelity"], finetuned=model, n_samples=3,
              n_subsets=10, sparsity=[0.3, 0.6], perturbed=x.flip(-1), seed=1, progress=False)
    whole = fl.evaluate(model, x, y, a, **kw)
    for chunk in (5, 12):
        chunked = fl.evaluate(model, x, y, a, chunk_size=chunk, batch_size=6, **kw)
        assert chunked["score"].tolist() == whole["score"].tolist(), chunk

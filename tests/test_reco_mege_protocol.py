"""The ReCo/MeGe protocol: weighted bootstrap scores, paper tables beside ours, families and cached sets."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

import faithlab as fl
from faithlab.metrics.reco_mege import Pairs

P = fl.protocols.reco_mege


def _pairs(seed=0, n=50, k=4):
    g = torch.Generator().manual_seed(seed)
    dist = torch.rand(n, k - 1, generator=g)
    dist[0, 0] = float("nan")
    kind = torch.randint(0, 3, (n, k - 1), generator=g).to(torch.int8)
    return Pairs(dist, torch.zeros(n, k - 1, dtype=torch.int64), kind)


def test_score_draws_with_unit_weights_equal_the_exact_scores():
    pairs = _pairs()
    eq, ne = fl.metrics.split_sets(pairs)
    reco, mege = P.score_draws(pairs, torch.ones(3, pairs.distance.shape[0]))
    assert torch.allclose(reco, fl.metrics.reco(eq, ne).expand(3))
    assert torch.allclose(mege, fl.metrics.mege(eq).expand(3))


def test_score_draws_with_multiplicities_equal_duplicated_sets():
    pairs = _pairs(seed=1)
    w = torch.zeros(1, 50)
    w[0, :10], w[0, 10:20] = 2.0, 1.0                       # samples 0–9 twice, 10–19 once, the rest out
    dup = Pairs(*(torch.cat([t[:10], t[:20]]) for t in (pairs.distance, pairs.other, pairs.kind)))
    eq, ne = fl.metrics.split_sets(dup)
    reco, mege = P.score_draws(pairs, w)
    assert float(reco[0]) == pytest.approx(float(fl.metrics.reco(eq, ne)))
    assert float(mege[0]) == pytest.approx(float(fl.metrics.mege(eq)))


def test_bootstrap_comparison_and_undefined_scores():
    from faithlab.metrics.reco_mege import details_from_pairs
    det = {m: details_from_pairs(_pairs(seed=s)) for m, s in (("A", 2), ("B", 3))}
    draws = P.bootstrap_scores(det, n_boot=200, seed=0)
    assert set(draws.method) == {"A", "B"} and len(draws) == 400
    c = P.comparison(draws, {m: det[m]["reco"] for m in det}, a="A", b="B")
    assert c.outcome in ("win", "loss", "tie") and c.low <= c.high
    empty = Pairs(torch.rand(10, 2), torch.zeros(10, 2, dtype=torch.int64), torch.zeros(10, 2, dtype=torch.int8))
    det["C"] = details_from_pairs(empty)                      # S≠ empty: ReCo undefined
    assert math.isnan(det["C"]["reco"])
    draws = P.bootstrap_scores(det, n_boot=200, seed=0)
    assert P.comparison(draws, {m: det[m]["reco"] for m in det}, a="C", b="A").outcome == "undefined"


def test_beside_and_rank_agreement():
    ours = pd.DataFrame([[0.1, 0.2, 0.3]], index=["CIFAR-10"], columns=["IG", "SG", "GC"])
    paper = pd.DataFrame([[1.0, 2.0, 3.0]], index=["CIFAR-10"], columns=["IG", "SG", "GC"])
    table = P.beside(ours, paper, name="task")
    assert list(table.source) == ["ours", "paper"] and table["rank ρ vs paper"].iloc[0] == pytest.approx(1.0)
    assert P.rank_agreement(ours.iloc[0], -paper.iloc[0]) == pytest.approx(-1.0)
    assert math.isnan(P.rank_agreement(ours.iloc[0, :2], paper.iloc[0, :2]))


def test_family_and_cached_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    d = P.load_task("FashionMNIST", n=40, image_size=8)
    cfg = fl.train.TrainConfig(epochs=1, batch_size=16)
    fam = P.family("FashionMNIST", d, width_scale=0.1, config=cfg, k=3)
    assert fam.predictions.shape == (3, 40) and fam.cross.k == 3
    first = P.distance_sets(fam, "SA")
    files = list((tmp_path / "reco_mege").glob("*.pt"))
    assert len(files) == 1
    again = P.distance_sets(fam, "SA")                        # loaded from the cache: the same sets
    assert torch.equal(first["pairs"].kind, again["pairs"].kind)
    assert torch.allclose(first["pairs"].distance, again["pairs"].distance, equal_nan=True)
    fresh = P.distance_sets(fam, "SA", cache=False)
    assert torch.allclose(first["pairs"].distance, fresh["pairs"].distance, equal_nan=True)
    same = P.identical_models(fam, "SA")
    assert same["MeGe"] == pytest.approx(1.0) and same["max distance"] < 1e-5
    with pytest.raises(ValueError, match="task"):
        P.load_task("MNIST", n=10, image_size=8)
    with pytest.raises(ValueError, match="degradation"):
        P.family("FashionMNIST", d, config=cfg, degradation="Broken")


def test_load_task_paper_reads_the_papers_loader(monkeypatch):
    calls = {}

    def fake_load(name, *, split, data_dir):
        calls.update(name=name, split=split, data_dir=data_dir)
        g = torch.Generator().manual_seed(0)
        return torch.utils.data.TensorDataset(torch.rand(12, 3, 8, 8, generator=g), torch.arange(12) % 4)

    monkeypatch.setattr(fl.data, "load", fake_load)
    d = P.load_task("CIFAR-10", n=10, image_size=32, dataset="paper", data_dir="/somewhere")
    assert calls == {"name": "cifar10", "split": "train", "data_dir": "/somewhere"}
    assert isinstance(d, fl.data.TensorData) and len(d) == 10 and d.n_classes == 4
    with pytest.raises(ValueError, match="dataset"):
        P.load_task("CIFAR-10", n=10, image_size=32, dataset="imagenet")

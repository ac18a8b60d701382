"""The ReCo/MeGe protocol: weighted bootstrap scores, paper tables beside ours, families and cached sets."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab.metrics.papers.reco_mege.crossfold import Pairs

P = fs.papers.reco_mege


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
    same = P.identical_models(fam, "SA")                      # k copies of one model: every S= distance 0
    assert len(same) == 40 and np.allclose(same["MeGe"], 1.0)
    assert same["S= distance"].dropna().abs().max() < 1e-5 and same["S= distance"].notna().sum() >= 2
    with pytest.raises(ValueError, match="task"):
        P.load_task("MNIST", n=10, image_size=8)
    # D is a seeded draw of the stand-in's training split, not its first images (sorted by writer)
    full = P.stand_in("FashionMNIST", split="train", image_size=8, seed=0)
    assert not torch.equal(d.x, full.x[:40]) and torch.equal(d.x, P.load_task("FashionMNIST", n=40, image_size=8).x)
    assert not torch.equal(d.x, P.load_task("FashionMNIST", n=40, image_size=8, seed=1).x)
    with pytest.raises(ValueError, match="degradation"):
        P.family("FashionMNIST", d, config=cfg, degradation="Broken")


def test_replicas_train_under_their_own_seed_on_the_same_data(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    s = P.FamilySettings(n=30, image_size=8, k=2, width_scale=0.1, epochs=1, seed=4)
    r0, r1 = P.run_replicas(4, "FashionMNIST/Normal", 2)
    assert r0 == fs.verdicts.Replica("FashionMNIST/Normal", 0, 4)                  # replica 0: the study's own run
    assert r1 == list(fs.verdicts.replicas(4, "FashionMNIST/Normal", 2))[1]        # r ≥ 1: the replica loop's seed
    assert s.config(r1).seed == r1.seed != 4 and s.config().seed == 4 == s.config(r0).seed
    a, b = (P.families(["FashionMNIST"], s, {"FashionMNIST": r})["FashionMNIST"] for r in (r0, r1))
    assert torch.equal(a.data.x, b.data.x) and a.key != b.key                      # same D, other models (cache)
    again = P.families(["FashionMNIST"], s)["FashionMNIST"]                        # default: replica 0
    assert again.key == a.key and torch.equal(again.predictions, a.predictions)
    runs = P.replica_families(s, ["FashionMNIST"], 2)
    assert list(runs) == [0, 1] and [runs[r]["FashionMNIST"].key for r in (0, 1)] == [a.key, b.key]
    with pytest.raises(ValueError, match="replicas must be"):
        P.replica_families(s, ["FashionMNIST"], 0)


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


class _LookupModel(torch.nn.Module):
    """Predicts, for an image whose first pixel holds its index, a fixed class from ``table``: a model with a known
    accuracy on a known test set."""

    def __init__(self, table: torch.Tensor, n_classes: int):
        super().__init__()
        self.register_buffer("logits", torch.nn.functional.one_hot(table, n_classes).float())
        self.scale = torch.nn.Parameter(torch.ones(()))   # a model has parameters (their device is the model's)

    def forward(self, x):
        return self.scale * self.logits[x[:, 0, 0, 0].long()]


def _lookup_family(accuracies, *, n_test=100, n_classes=4):
    """A family whose model i is right on the first ``accuracies[i] · n_test`` images of its test set."""
    y = torch.arange(n_test) % n_classes
    x = torch.arange(n_test, dtype=torch.float32).view(-1, 1, 1, 1).expand(-1, 1, 2, 2).clone()
    test = fl.data.TensorData(x, y, info={"n_classes": n_classes})
    models = []
    for a in accuracies:
        right = round(a * n_test)
        models.append(_LookupModel(torch.where(torch.arange(n_test) < right, y, (y + 1) % n_classes), n_classes))
    cross = fl.train.CrossTrained(models, torch.arange(n_test) % len(models), torch.tensor(accuracies), [],
                                  {"train_sizes": [n_test] * len(models), "labels_switched": 0,
                                   "randomised_layers": []})
    return P.Family("Normal", "CIFAR-10", cross, test, cross.predictions(x), "key"), test


def test_premise_row_reads_the_k_models_on_images_none_saw():
    accuracies = [0.70, 0.72, 0.68, 0.71, 0.69]
    fam, test = _lookup_family(accuracies)
    assert P.test_accuracy(fam, test).tolist() == pytest.approx(accuracies)
    row = P.premise_row(fam, test, task="CIFAR-10", replica=0)
    assert row["accuracy"] == pytest.approx(0.70) and row["spread"] == pytest.approx(0.02)
    assert row["bar"] == 0.5 and row["images"] == 100 and row["models"] == 5 and row["replica"] == 0
    frame = P.accuracy_frame([fam], {"CIFAR-10": test})
    assert bool(frame["test within ±3 %"].iloc[0]) and frame["test accuracy"].iloc[0] == pytest.approx(0.70)
    summary = P.accuracy_summary(frame)
    assert list(summary.columns) == ["task", "family", "held-out accuracy", "test accuracy", "within ±3 % (test)"]
    assert summary["test accuracy"].iloc[0] == "0.700 (0.680–0.720)"
    with pytest.raises(ValueError, match="test"):
        P.test_accuracy(fam, torch.zeros(3))


def premise_rows(spreads, accuracy=0.8, bar=0.2, **columns) -> pd.DataFrame:
    """premise_row rows of one family over len(spreads) replicas (accuracy and spread per replica)."""
    accuracy = np.broadcast_to(accuracy, (len(spreads),))
    return pd.DataFrame([{**columns, "replica": r, "family": "Normal", "models": 5, "images": 1500,
                          "accuracy": float(a), "lowest": a - s, "highest": a + s, "spread": s, "bar": bar}
                         for r, (s, a) in enumerate(zip(spreads, accuracy))])


@pytest.mark.parametrize("spreads, accuracy, holds, why", [
    ([0.010, 0.012, 0.011], 0.8, True, "±3 %"),        # well inside ±3 % in every replica, far above chance
    ([0.050, 0.052, 0.049], 0.8, False, "±3 %"),       # wholly beyond ±3 %: the mechanism is absent
    ([0.010, 0.045, 0.020], 0.8, None, "±3 %"),        # the replicas disagree: the interval straddles 0.03
    ([0.010, 0.012, 0.011], 0.15, False, "chance"),    # below 2 × chance: fails whatever the spread
    ([0.010, 0.012, 0.011], [0.19, 0.25, 0.21], None, "chance"),  # at the bar: undecided
])
def test_decide_premise_decides_both_parts_over_the_replicas(spreads, accuracy, holds, why):
    premise = P.decide_premise(premise_rows(spreads, accuracy), what="CIFAR-10")
    assert premise.holds is holds, premise.text
    assert why in premise.text and "CIFAR-10: " in premise.text and "t on replica statistics" in premise.text
    table = P.premise_table(premise_rows(spreads, accuracy, task="CIFAR-10"))
    assert table["premise"].item() == {True: "holds", False: "fails", None: "undecided"}[holds]
    assert table["spread high"].item() > table["spread"].item() > table["spread low"].item()


def test_decide_premise_needs_two_replicas_and_its_columns():
    with pytest.raises(ValueError, match="at least 2 trained replicas"):
        P.decide_premise(premise_rows([0.01]))
    with pytest.raises(ValueError, match="premise_row"):
        P.decide_premise(premise_rows([0.01, 0.02]).drop(columns="spread"))
    with pytest.raises(ValueError, match="tolerance"):
        P.decide_premise(premise_rows([0.01, 0.02]), tolerance=2)
    assert P.premise_table(premise_rows([0.01], task="A"))["premise"].item() == "one replica: undecided"


def test_heldout_is_the_test_split_then_the_training_images_after_d():
    s = P.FamilySettings(n=30, image_size=8, k=3)
    held = s.heldout("FashionMNIST", n_test=20, n_unseen=15)
    test, pool = s.load_task("FashionMNIST", n=20, split="test"), s.load_task("FashionMNIST", n=45)
    assert len(held) == 35 and torch.equal(held.x[:20], test.x) and torch.equal(held.x[20:], pool.x[30:45])
    assert torch.equal(held.y[20:], pool.y[30:45]) and held.n_classes == test.n_classes
    assert len(s.heldout("FashionMNIST", n_test=20)) == 20


def test_method_options_take_the_cheaper_settings_and_only_for_their_method():
    background = torch.zeros(2, 3, 4, 4)
    assert P.method_options("SHAP", shap_samples=7, background=background)[1]["n_samples"] == 7
    assert P.method_options("SHAP", background=background)[1]["n_samples"] == P.METHODS["SHAP"][1]["n_samples"]
    assert P.method_options("IG", ig_steps=5, shap_samples=7)[1]["n_steps"] == 5
    assert P.method_options("SG", sg_samples=3)[1]["nt_samples"] == 3
    assert "n_samples" not in P.method_options("SA", shap_samples=7)[1]
    with pytest.raises(ValueError, match="needs background"):
        P.method_options("SHAP", shap_samples=7)


def test_degradation_amount_reads_the_share_its_name_states():
    import re

    for name in P.DEGRADATIONS:
        stated = re.search(r"(\d+)%", name)
        expected = 0.0 if stated is None else float(stated.group(1))
        if name.startswith("Limited"):
            expected = 100.0 - expected  # "Limited 75%" keeps 75 % of the data: 25 % withheld
        assert P.degradation_amount(name) == pytest.approx(expected), name
    with pytest.raises(ValueError, match="name"):
        P.degradation_amount("Pruned 10%")


def test_lipschitz_family_trains_replica_0_under_seed_and_others_under_their_replica_seed(monkeypatch):
    from faithlab_study.papers.reco_mege import setup as kfold

    calls = []
    monkeypatch.setattr(kfold, "family", lambda task, d, **kw: calls.append((task, d, kw)) or kw)
    settings = P.FamilySettings(n=40, image_size=16, k=3, train_batch=8, scheduler="cosine", seed=7,
                                device="cpu", batch_size=32)
    d = fl.data.TensorData(torch.zeros(40, 1, 16, 16), torch.zeros(40, dtype=torch.long))
    reps = P.run_replicas(7, "FashionMNIST/1-Lipschitz", 3)
    first = settings.lipschitz("FashionMNIST", d, reps[0], width=12, tau=2.0, epochs=4, lr=0.01)
    second = settings.lipschitz("FashionMNIST", d, reps[2], width=12, tau=2.0, epochs=4, lr=0.01)
    assert first["replica"].seed == 7 and first["config"].seed == 7
    assert second["replica"].seed == fs.verdicts.replica_seed(7, "FashionMNIST/1-Lipschitz", 2) != 7
    assert second["config"].seed == second["replica"].seed and second["seed"] == first["seed"] == 7
    assert first["model"] == "lipschitz_cnn" and first["name"] == "1-Lipschitz" and first["k"] == 3
    assert first["model_config"] == {"width": 12, "dropout": 0.2, "image_size": 16, "tau": 2.0}
    config = first["config"]
    assert (config.epochs, config.batch_size, config.lr, config.scheduler) == (4, 8, 0.01, "cosine")
    assert all(task == "FashionMNIST" and data is d for task, data, _ in calls)
    with pytest.raises(TypeError, match="replica must be"):
        settings.lipschitz("FashionMNIST", d, 2, width=12, tau=2.0, epochs=4, lr=0.01)


def test_digit_variant_paints_the_digit_brighter_than_its_background_in_every_channel():
    from faithlab_study.papers.reco_mege import setup as kfold

    d = kfold.digit_variant(split="train", size=8, seed=0, tint=True)
    grey = fl.data.load("digits", split="train", size=8, seed=0, color=False)
    assert d.x.shape == (len(grey), 3, 8, 8) and torch.equal(d.y, grey.y) and d.info["tint"]
    mean, std = torch.tensor(d.info["mean"]), torch.tensor(d.info["std"])
    raw = d.x * std[None, :, None, None] + mean[None, :, None, None]           # back to [0, 1] colours
    v = grey.x[:, 0].flatten(1)
    ink, paper = v.argmax(1), v.argmin(1)                                   # each image's brightest, darkest stroke
    flat = raw.flatten(2)
    rows = torch.arange(len(v))
    assert bool((flat[rows, :, ink] > flat[rows, :, paper] + 0.2).all())  # the digit brighter, every channel
    assert abs(float(d.x.mean())) < 1e-4 and abs(float(d.x.std(unbiased=False)) - 1) < 1e-3   # train statistics
    test = kfold.digit_variant(split="test", size=8, seed=0, tint=True)
    assert test.info["mean"] == d.info["mean"] and len(test) == 359
    # the colours carry nothing about the class: the background colour's mean is alike for every label
    bg = raw[:, :, 0, 0]
    by_class = torch.stack([bg[d.y == c].mean(0) for c in range(10)])
    assert float((by_class - bg.mean(0)).abs().max()) < 0.05
    assert torch.equal(d.x, kfold.digit_variant(split="train", size=8, seed=0, tint=True).x)

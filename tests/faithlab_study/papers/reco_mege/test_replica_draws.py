"""Every Monte-Carlo draw of ReCo/MeGe's study (a random explainer's noise in every family's maps, the shuffled
pairings of the chance level, Table 3's μF subsets and S_avg neighbours) is keyed to (notebook seed, setting, replica,
draw): two replicas draw apart, another notebook seed draws apart, the same key draws the same; within one call the
draws stay keyed to the sample (batch size does not change them)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs
from faithlab_study.verdicts.replication import Replica, replica_draws

P = fs.papers.reco_mege
S = fs.papers.reco_mege.setup
SG = dict(sg_samples=3)  # SmoothGrad, the random method of the comparison, cheap


def cross(k: int = 3, n: int = 12) -> fl.train.CrossTrained:
    models = []
    for i in range(k):
        torch.manual_seed(i)
        models.append(nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).eval())
    return fl.train.CrossTrained(models, torch.arange(n) % k, torch.ones(k), [],
                                 {"train_sizes": [n] * k, "labels_switched": 0, "randomised_layers": []})


def family(replica: Replica | None, n: int = 12) -> P.Family:
    """The same k small models and D under ``replica``: only the draws' keys differ between two such families."""
    x = torch.randn(n, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    d = fl.data.TensorData(x, torch.arange(n) % 3, info={"n_classes": 3})
    c = cross(n=n)
    return P.Family("Normal", "CIFAR-10", c, d, c.predictions(x), "key", replica)


R0, R1 = Replica("CIFAR-10/Normal", 0, 0), Replica("CIFAR-10/Normal", 1, 123)


def test_family_draws_are_keyed_to_seed_setting_replica_and_draw():
    assert S.family_draws(family(R0), 0, "maps", 1) == replica_draws(0, R0, "maps", 1)
    keys = {S.family_draws(family(r), seed, "maps", 0) for r in (R0, R1, None) for seed in (0, 1)}
    assert len(keys) == 6
    seeds = S.model_seeds(family(R0), 0, 1)
    assert torch.equal(seeds[4:], S.model_seeds(family(R0), 0, 1, range(4, 12)))  # keyed to the sample
    assert not torch.equal(seeds, S.model_seeds(family(R0), 0, 2))  # each model its own stream


def test_explain_family_draws_per_replica_and_notebook_seed_not_per_batch():
    a = P.explain_family(family(R0), "SG", seed=0, **SG)
    assert torch.equal(a, P.explain_family(family(R0), "SG", seed=0, **SG))  # the same key, the same draws
    assert torch.allclose(a, P.explain_family(family(R0), "SG", seed=0, batch_size=5, **SG), atol=1e-6)  # any batch
    assert not torch.equal(a, P.explain_family(family(R1), "SG", seed=0, **SG))  # the same models, another replica
    assert not torch.equal(a, P.explain_family(family(R0), "SG", seed=1, **SG))  # another notebook seed
    sa = P.explain_family(family(R0), "SA")  # a deterministic map is the same under every key
    assert torch.equal(sa, P.explain_family(family(R1), "SA", seed=1))


def test_identical_models_draw_as_model_0_of_the_family(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    same = P.identical_models(family(R1), "SG", seed=2, **SG)
    assert same["S= distance"].dropna().abs().max() < 1e-5
    maps = P.explain_family(family(R1), "SG", seed=2, **SG)[0]
    direct = fl.explainers.explain(family(R1).cross.models[0], family(R1).data.x, family(R1).predictions[0],
                                   method="smoothgrad", sample_seeds=S.model_seeds(family(R1), 2, 0),
                                   **S.method_options("SG", **SG)[1])
    assert torch.equal(maps, direct)


def test_distance_sets_shuffle_per_replica_and_notebook_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    n = 30
    a = P.distance_sets(family(R0, n), "SA", seed=0)
    again = P.distance_sets(family(R0, n), "SA", seed=0, cache=False, batch_size=7)
    assert torch.equal(a["partners"], again["partners"])
    b = P.distance_sets(family(R1, n), "SA", seed=0)  # the same maps, another replica: its own pairings
    assert torch.equal(a["pairs"].kind, b["pairs"].kind) and not torch.equal(a["partners"], b["partners"])
    c = P.distance_sets(family(R0, n), "SA", seed=1)
    assert not torch.equal(a["partners"], c["partners"])
    assert len(list((tmp_path / "reco_mege").glob("*.pt"))) == 3  # each key its own cache file


def test_fidelity_stability_draws_from_its_key():
    fam = family(R0)
    model, x, y = fam.cross.models[0], fam.data.x, fam.data.y
    kw = dict(n_subsets=5, n_neighbours=4, sg_samples=3)

    def run(key, batch_size=256, method="SG"):
        return P.fidelity_stability(model, x, y, method, draw_key=key, batch_size=batch_size, **kw)

    k0, k1 = S.family_draws(fam, 0, "table 3"), S.family_draws(family(R1), 0, "table 3")
    a = run(k0)
    assert a.equals(run(k0))
    pd.testing.assert_frame_equal(a, run(k0, 5), rtol=1e-4)  # keyed to the sample: batches change nothing
    b = run(k1)
    for column in ("μF", "μF (shuffled)", "S_avg"):
        assert not a[column].equals(b[column]), column
    sa = run(k0, method="SA"), run(k1, method="SA")  # a deterministic map: subsets, partners, neighbours differ
    assert not sa[0]["μF"].equals(sa[1]["μF"]) and not sa[0]["S_avg"].equals(sa[1]["S_avg"])
    assert run(None).equals(P.fidelity_stability(model, x, y, "SG", draw_key=replica_draws(0, None), **kw))


def test_family_records_its_replica_and_the_replica_loop_passes_it(monkeypatch):
    monkeypatch.setattr(fl.train, "cross_train", lambda *a, k, **kw: cross(k=k, n=12))
    d = family(None).data
    fam = P.family("CIFAR-10", d, model="mlp", model_config={}, config=fl.train.TrainConfig(epochs=1), k=3,
                   replica=R1)
    assert fam.replica == R1 and S.family_draws(fam, 0) == replica_draws(0, R1)
    assert P.family("CIFAR-10", d, model="mlp", model_config={}, config=fl.train.TrainConfig(epochs=1), k=3,
                    seed=4).replica == Replica("CIFAR-10/Normal", 0, 4)  # the study's own run
    monkeypatch.setattr(S.FamilySettings, "load_task", lambda self, task, n=None: d)
    runs = P.replica_families(S.FamilySettings(n=12, image_size=4, k=3, seed=5), ["CIFAR-10"], 2)
    reps = [runs[r]["CIFAR-10"].replica for r in (0, 1)]
    assert [r.index for r in reps] == [0, 1] and reps[0].setting == "CIFAR-10/Normal"
    assert S.family_draws(runs[0]["CIFAR-10"], 5) != S.family_draws(runs[1]["CIFAR-10"], 5)
    assert dataclasses.replace(runs[1]["CIFAR-10"], name="ResNet-18").replica == reps[1]  # lipschitz_replicas' copy

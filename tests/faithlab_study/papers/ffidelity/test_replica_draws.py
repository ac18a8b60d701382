"""Every Monte-Carlo draw of F-Fidelity's study (degradations, masks, ROAD's imputation noise) is keyed to (notebook
seed, setting, replica, draw): two replicas draw apart, another notebook seed draws apart, the same key draws the
same; within one call the draws stay keyed to the sample (batch size does not change them)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs
from faithlab_study.verdicts.replication import Replica, data_seed, draw_seed, replica_draws, replica_seed, replicas

F = fs.papers.ffidelity
SPARSITY = [0.25, 0.5]


def linear_model() -> nn.Module:
    """A fixed linear classifier of 1×4×4 images: continuous probabilities, so other masks give other scores."""
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.randn(2, 16, generator=g))
        model[1].bias.zero_()
    return model.eval()


def inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 1, 4, 4, generator=g)
    return x, torch.zeros(6, dtype=torch.long), torch.rand(6, 1, 4, 4, generator=g)


def curves(draw_key: int, *, batch_size: int = 256, reference="zero"):
    x, y, clean = inputs()
    return F.degraded_fidelity_curves(linear_model(), x, y, clean, noise_levels=[0.5], sparsity=SPARSITY, n_seeds=2,
                                      alpha=0.5, n_samples=3, reference=reference, batch_size=batch_size,
                                      draw_key=draw_key)


def same(a, b) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a, b))


# ------------------------------------------------------------------------------------------------- the key itself
def test_draw_seed_is_keyed_to_seed_setting_replica_and_draw():
    base = draw_seed(0, "canvas/main", 0)
    assert base == draw_seed(0, "canvas/main", 0)  # the same key, the same seed
    others = [draw_seed(1, "canvas/main", 0), draw_seed(0, "canvas/second", 0), draw_seed(0, "canvas/main", 1),
              draw_seed(0, "canvas/main", 0, "ood"), draw_seed(0, "canvas/main", 0, 1)]
    assert len({base, *others}) == 1 + len(others)
    assert draw_seed(1, "s", 0) != draw_seed(0, "s", 1)  # keyed, not summed
    assert all(0 <= v < 2**63 for v in (base, *others))
    assert base != replica_seed(0, "canvas/main", 0)  # apart from the training seeds
    first = next(replicas(3, "canvas/main", 1))
    assert replica_draws(3, first, "ood") == draw_seed(3, "canvas/main", 0, "ood")
    assert replica_draws(3, None) == draw_seed(3, "", 0)  # a single model: replica 0 of the unnamed setting
    with pytest.raises(ValueError, match="replica"):
        draw_seed(0, "s", -1)
    with pytest.raises(TypeError, match="keys"):
        draw_seed(0, "s", 0, 1.5)
    with pytest.raises(TypeError, match="Replica"):
        replica_draws(0, 1)


def test_data_seed_is_keyed_to_the_notebook_seed_and_the_replica_index():
    """Each replica draws its own stand-in data: keyed (not summed) to (seed, index), shared by the replicas of one
    index across settings (the CNN and the ViT of replica r), apart from the training and draw seeds; one model
    (None) keeps the notebook's seed."""
    cnn, vit = next(replicas(0, "canvas/main", 1)), next(replicas(0, "vit/main", 1))
    assert data_seed(0, cnn) == data_seed(0, vit) == data_seed(0, 0)
    seeds = [data_seed(s, r) for s in range(3) for r in range(3)]
    assert len(set(seeds)) == 9 and all(0 <= v < 2**31 for v in seeds)
    assert data_seed(1, 0) != data_seed(0, 1)
    assert data_seed(0, 0) not in (replica_seed(0, "canvas/main", 0), draw_seed(0, "canvas/main", 0))
    assert data_seed(5, None) == 5
    with pytest.raises(ValueError, match="replica"):
        data_seed(0, -1)


def test_canvas_replicas_and_reseeds_draw_other_canvases():
    """CanvasModels.load: two replicas draw different canvases, a reseed changes them, the same replica and seed
    give the same canvases again, and the data key follows."""
    cm = fs.papers.ffidelity.CanvasModels(image_size=8, color=False, n_train=20)
    first, second = replicas(0, "canvas/main", 2)
    a, b, again = cm.load(0, first)[1], cm.load(0, second)[1], cm.load(0, first)[1]
    reseeded = cm.load(1, next(replicas(1, "canvas/main", 1)))[1]
    assert torch.equal(a.x, again.x) and not torch.equal(a.x, b.x) and not torch.equal(a.x, reseeded.x)
    assert cm.data_key(0, first) != cm.data_key(0, second) != cm.data_key(0)


# --------------------------------------------------------------------------------------- degraded_fidelity_curves
def test_curves_follow_the_draw_key_and_not_the_batch():
    reps = list(replicas(0, "canvas/main", 2))
    r0, r1 = (replica_draws(0, rep) for rep in reps)
    other_seed = replica_draws(1, next(replicas(1, "canvas/main", 1)))
    a = curves(r0)
    assert same(a, curves(r0))  # the same (seed, setting, replica): the same draws
    assert same(a, curves(r0, batch_size=5))  # keyed to the sample: batches change nothing
    assert not torch.equal(a[0], curves(r1)[0])  # another replica draws apart
    assert not torch.equal(a[0], curves(other_seed)[0])  # another notebook seed draws apart


class Recorder(nn.Module):
    """The linear model, keeping every input it sees (the imputed images)."""

    def __init__(self):
        super().__init__()
        self.inner, self.seen = linear_model(), []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return self.inner(x)


def test_road_noise_follows_the_draw_key():
    x, y, clean = inputs()
    kw = dict(noise_levels=[0.0], sparsity=SPARSITY, n_seeds=1, reference=F.ROAD_REFERENCE)

    def imputed(key):  # ξ = 0, all of R removed: only the imputation noise is random
        model = Recorder().eval()
        F.degraded_fidelity_curves(model, x, y, clean, draw_key=key, **kw)
        return torch.cat(model.seen)

    a = imputed(1)
    assert torch.equal(a, imputed(1)) and not torch.equal(a, imputed(2))


def test_draw_generators_are_keyed_not_summed():
    gens = F.experiments.draw_generators
    assert gens(0, 0, 1) != gens(0, 1, 0) and gens(0, 0, 1)[0] != gens(1, 0, 0)[0]
    assert len(set(gens(5, 2, 3))) == 3  # degradation, masks, noise: three streams
    assert gens(5, 2, 3)[1:] == gens(5, 2, 0)[1:]  # the masks and noise the same at every noise level
    assert gens(5, 2, 3)[0] == fl.perturb.keyed_seed(5, 0, 2, 3)


# ----------------------------------------------------------------------------- the set-up passes the replica's key
def captured(monkeypatch, module=None):
    """Replace the set-up's image_ranking_study by one that records its keyword arguments."""
    calls = []
    monkeypatch.setattr(module or F.setup, "image_ranking_study", lambda *a, **kw: calls.append(kw))
    return calls


def test_canvas_ranking_study_keys_draws_to_seed_setting_and_replica(monkeypatch):
    calls = captured(monkeypatch)
    canvas = F.CanvasModels()
    main = list(replicas(0, "canvas/main", 2))
    for seed, rep in ((0, main[0]), (0, main[0]), (0, main[1]), (1, next(replicas(1, "canvas/main", 1))),
                      (0, next(replicas(0, "canvas/second", 1))), (0, None)):
        canvas.ranking_study(None, None, {}, seed=seed, replica=rep)
    keys = [kw["draw_key"] for kw in calls]
    assert keys[0] == keys[1] == replica_draws(0, main[0])
    assert len(set(keys[1:])) == 5  # replica 1, notebook seed 1, another setting, a single model: each its own
    canvas.ranking_study(None, None, {}, seed=0, replica=main[0], draw_key=7)
    assert calls[-1]["draw_key"] == 7  # a key given is kept


def test_vit_ranking_study_keys_draws_to_the_notebook_seed_and_replica(monkeypatch):
    calls = captured(monkeypatch)
    vit = F.VitModels()
    monkeypatch.setattr(F.VitModels, "model_config", lambda self, data: {})
    a, b = replicas(0, "vit/main", 2)
    for seed, rep in ((0, a), (0, b), (1, next(replicas(1, "vit/main", 1)))):
        vit.ranking_study(None, None, {}, data_key={}, replica=rep, seed=seed)
    assert [kw["draw_key"] for kw in calls] == [replica_draws(0, a), replica_draws(0, b), replica_draws(
        1, next(replicas(1, "vit/main", 1)))]
    assert len({kw["draw_key"] for kw in calls}) == 3


def test_replica_studies_give_every_replica_its_own_draws(monkeypatch):
    """The ReplicaStudies plumbing of the notebooks: make(key, replica, cells) → the set-up's ranking study, whose
    draws are the replica's."""
    calls = captured(monkeypatch)
    canvas = F.CanvasModels()
    empty = pd.DataFrame(columns=["explainer", "method", "curve", "seed", "xi", "level", "score"])

    def make(key, replica, cells):
        canvas.ranking_study(None, None, {}, seed=0, replica=replica, cells=cells)
        return F.RankingStudy(empty, {}, {}, {}, {}, pd.DataFrame(), {}, torch.zeros(0), torch.zeros(0), [], [])

    runs = F.ReplicaStudies(make, {k: replicas(0, f"canvas/{k}", 2) for k in ("main", "second")})
    runs.score_cells([])
    keys = [kw["draw_key"] for kw in calls]
    assert len(set(keys)) == 4
    assert keys[1] == replica_draws(0, Replica("canvas/main", 1, replica_seed(0, "canvas/main", 1)))


# --------------------------------------------------------------------------------------------------- case_study
def test_case_study_draws_with_the_studys_key():
    x, y, clean = inputs()
    model = linear_model()
    scores = clean.flatten(1)

    def study(draw_key):
        options = {"alpha": 0.5, "beta": 0.25, "n_samples": 3, "n_seeds": 1, "batch_size": 8,
                   "methods": ["R-Fidelity"], "draw_key": draw_key}
        return F.RankingStudy(pd.DataFrame(), {}, {}, {("m", "original"): scores}, {}, pd.DataFrame(),
                              {"original": model}, x, y, [0.5], SPARSITY, options)

    _, P1, _ = study(11).case_study(2, "m")
    _, P2, _ = study(12).case_study(2, "m")
    direct = F.degraded_fidelity_curves(model, x[2:3], y[2:3], clean[2:3, 0], noise_levels=[0.5], sparsity=SPARSITY,
                                        n_seeds=1, alpha=0.5, n_samples=3, units=fl.perturb.pixel_units(x[2:3]),
                                        batch_size=8, sample_index=[2], draw_key=11)
    assert torch.equal(P1["m", "R-Fidelity"], direct[0])
    assert not torch.equal(P1["m", "R-Fidelity"], P2["m", "R-Fidelity"])

"""Every Monte-Carlo draw of Few-class Fidelity's study (the random maps and SmoothGrad noise of every model, Fid's
random tie order, the bounds check's random maps) is keyed to (notebook seed, setting "<task>/<model>", replica,
draw): two replicas draw apart, another notebook seed draws apart, the same key draws the same."""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch

import faithlab_study as fs
from faithlab.metrics import fewclass as F
from faithlab_study.verdicts.replication import draw_seed
from oracles import small_cnn

P = fs.papers.fewclass
GRID = F.candidate_grid(["V1"])


def setup(replica: int | None) -> P.Setup:
    """The same model and images as replica ``replica``: only the draws' keys differ between two such set-ups."""
    torch.manual_seed(0)
    model = small_cnn(in_channels=1, side=8, n_classes=3).eval()
    x = torch.rand(3, 1, 8, 8, generator=torch.Generator().manual_seed(5))
    return P.Setup("vehicles", {"net": model}, x, F.predicted_class(model, x), torch.tensor([[0, 0, 4, 4]] * 3),
                   None, x[:2], 3, pd.DataFrame(), {"net": None}, replica=replica)


def fid(s: P.Setup, seed: int = 0) -> pd.DataFrame:
    frames = P.evaluate_task(s, methods=["Random"], alterations=("none",), grid=GRID, fractions=(0, 0.5, 1),
                             seed=seed)
    return frames["fid"]


def test_model_draws_are_keyed_to_seed_task_model_replica_and_draw():
    s = setup(1)
    assert P.experiments.model_draws(s, "net", 0, "maps") == draw_seed(0, "vehicles/net", 1, "maps")
    keys = {P.experiments.model_draws(setup(r), m, seed, d) for r in (0, 1) for m in ("net", "other")
            for seed in (0, 1) for d in ("maps", "ties")}
    assert len(keys) == 16
    assert P.experiments.model_draws(setup(None), "net", 0, "maps") == draw_seed(0, "vehicles/net", 0, "maps")


def test_evaluate_task_draws_per_replica_and_notebook_seed():
    a = fid(setup(0))
    pd.testing.assert_frame_equal(a, fid(setup(0)))  # the same key: the same maps and tie order
    assert not a["Fid"].equals(fid(setup(1))["Fid"])  # the same model and images, another replica: its own maps
    assert not a["Fid"].equals(fid(setup(0), seed=1)["Fid"])  # another notebook seed


def test_evaluate_task_passes_the_keys_to_the_maps_and_the_tie_order(monkeypatch):
    calls = {"maps": [], "ties": []}
    maps, fids = P.experiments.method_maps, P.experiments.fid_frame
    monkeypatch.setattr(P.experiments, "method_maps",
                        lambda *a, generator, **kw: calls["maps"].append(generator.initial_seed())
                        or maps(*a, generator=generator, **kw))
    monkeypatch.setattr(P.experiments, "fid_frame",
                        lambda *a, generator, **kw: calls["ties"].append(generator) or fids(*a, generator=generator,
                                                                                            **kw))
    s = setup(2)
    fid(s, seed=3)
    assert calls == {"maps": [draw_seed(3, "vehicles/net", 2, "maps")], "ties": [draw_seed(3, "vehicles/net", 2,
                                                                                           "ties")]}


def test_setup_records_its_replica():
    """The set-up of replica r (the notebooks' replica loop) carries r, which keys its draws."""
    settings = [{"name": "cnn", "model": "small_cnn", "config": {"width": 4}, "n_epochs": 1}]
    a, b = (P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3, replica=r) for r in (0, 1))
    assert (a.replica, b.replica) == (0, 1)
    assert P.experiments.model_draws(a, "cnn", 0, "maps") != P.experiments.model_draws(b, "cnn", 0, "maps")
    assert P.setup("ct", settings, n_images=4, image_size=16, n_train=96, n_background=3).replica is None
    assert dataclasses.replace(a, replica=None).replica is None

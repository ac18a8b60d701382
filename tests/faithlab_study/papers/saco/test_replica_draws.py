"""Every Monte-Carlo draw of SaCo's study (the Random maps, Random's SaCo on every image, the shufflings of Fig. 2's
chance level) is keyed to (notebook seed, setting, replica, draw): two replicas draw apart, another notebook seed
draws apart, the same key draws the same; within one call the draws stay keyed to the image (batch size and shards
do not change them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs
from faithlab_study.verdicts.replication import draw_seed

S = fs.papers.saco
E = fs.papers.saco.experiments
RANDOM = ("random", {}, False)


def linear() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).double().eval()


def models(replicas=(0, 1), n: int = 5):
    """The same model and images under two replicas (and a second setting): only the draws' keys differ."""
    model = linear()
    x = torch.randn(n, 2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    return {(setting, r): (model, x, torch.zeros(n, dtype=torch.long)) for setting in ("A", "B") for r in replicas}


def predicted(ms):
    return {key: m(x).argmax(1) for key, (m, x, _) in ms.items()}


def test_map_seeds_are_keyed_to_seed_setting_replica_draw_and_image():
    a = E.map_seeds(0, "A", 0, "random map", range(4))
    assert torch.equal(a, E.map_seeds(0, "A", 0, "random map", range(4)))
    assert torch.equal(a[2:], E.map_seeds(0, "A", 0, "random map", [2, 3]))  # keyed to the image, not its position
    for other in (E.map_seeds(0, "A", 1, "random map", range(4)), E.map_seeds(1, "A", 0, "random map", range(4)),
                  E.map_seeds(0, "B", 0, "random map", range(4)), E.map_seeds(0, "A", 0, "random saco", range(4))):
        assert not (a == other).any()
    assert int(a[1]) == fl.perturb.keyed_seed(draw_seed(0, "A", 0, "random map"), 1)
    assert not torch.equal(a, torch.arange(4))  # the old seeds: the image's index (+ seed), a sum


def test_random_maps_differ_between_replicas_and_notebook_seeds_and_not_with_the_batch():
    ms = models()
    p = predicted(ms)
    maps = E.random_maps(ms, p, RANDOM, seed=0, batch_size=2)
    again = E.random_maps(ms, p, RANDOM, seed=0, batch_size=5)
    assert all(torch.equal(maps[k], again[k]) for k in maps)  # the same key: the same maps, at any batch size
    assert not torch.equal(maps["A", 0], maps["A", 1])  # another replica draws apart (same model, same images)
    assert not torch.equal(maps["A", 0], maps["B", 0])  # another setting
    assert not torch.equal(maps["A", 0], E.random_maps(ms, p, RANDOM, seed=1)["A", 0])  # another notebook seed
    alone = E.random_maps({("A", 1): ms["A", 1]}, p, RANDOM, seed=0)  # a model's maps do not depend on the others
    assert torch.equal(alone["A", 1], maps["A", 1])


def test_random_saco_frame_differs_between_replicas_and_notebook_seeds():
    ms = models()
    targets = {key: (m, x, p) for (key, (m, x, _)), p in zip(ms.items(), predicted(ms).values())}
    frame = S.random_saco_frame(targets, k=4, seed=0, batch_size=2).set_index(["setting", "replica", "sample"])
    again = S.random_saco_frame(targets, k=4, seed=0, batch_size=5).set_index(["setting", "replica", "sample"])
    pd.testing.assert_frame_equal(frame, again)
    saco = frame["SaCo"]
    assert not np.allclose(saco.loc["A", 0], saco.loc["A", 1])  # the same model and images: the maps differ
    other = S.random_saco_frame(targets, k=4, seed=1).set_index(["setting", "replica", "sample"])["SaCo"]
    assert not np.allclose(saco.loc["A", 0], other.loc["A", 0])


def test_per_image_frame_keys_other_random_methods_to_the_replica():
    ms = models()
    p = predicted(ms)
    methods = {"Random": RANDOM, "Noise": ("random", {}, False)}  # a random method computed in the frame
    kw = dict(predicted=p, random_maps=E.random_maps(ms, p, RANDOM, seed=0), k=4, batch_size=3)
    whole = S.per_image_frame(ms, methods, range(5), seed=0, **kw)
    parts = pd.concat([S.per_image_frame(ms, methods, i, seed=0, **kw) for i in (range(2), range(2, 5))])
    key = ["setting", "replica", "method", "sample"]
    pd.testing.assert_frame_equal(whole.sort_values(key, ignore_index=True), parts.sort_values(key, ignore_index=True))
    noise = whole[whole.method == "Noise"].set_index(["setting", "replica", "sample"])["SaCo"]
    assert not np.allclose(noise.loc["A", 0], noise.loc["A", 1])
    other = S.per_image_frame(ms, methods, range(5), seed=1, **kw)
    assert not np.allclose(noise.loc["A", 0], other[(other.method == "Noise") & (other.setting == "A")
                                                    & (other.replica == 0)]["SaCo"])


def per_sample(replicas=(0, 1), n: int = 12) -> pd.DataFrame:
    """The same per-image metrics under every replica: only the shufflings' keys differ."""
    rng = np.random.default_rng(0)
    values = {m: rng.normal(size=n) for m in S.HIGHER_IS_BETTER}
    return pd.concat([pd.DataFrame({"setting": "A", "replica": r, "method": "M", "sample": range(n), **values})
                      for r in replicas], ignore_index=True)


def test_rank_correlations_shuffle_per_replica_and_notebook_seed():
    frame = per_sample()
    corr = S.rank_correlations(frame, methods=["M"], n_null=20, seed=0).set_index(["replica", "pair"])
    assert np.allclose(corr.loc[0, "rho"], corr.loc[1, "rho"])  # the same data: the same ρ
    assert not np.allclose(corr.loc[0, "null rho"], corr.loc[1, "null rho"])  # but each replica its own shufflings
    again = S.rank_correlations(frame, methods=["M"], n_null=20, seed=0).set_index(["replica", "pair"])
    pd.testing.assert_frame_equal(corr, again)
    alone = S.rank_correlations(frame[frame.replica == 1], methods=["M"], n_null=20, seed=0)
    assert np.allclose(alone["null rho"], corr.loc[1, "null rho"])  # a unit's shufflings do not depend on the others
    other = S.rank_correlations(frame, methods=["M"], n_null=20, seed=1).set_index(["replica", "pair"])
    assert not np.allclose(corr.loc[0, "null rho"], other.loc[0, "null rho"])

"""The shared recipes (faithlab_study.recipes): they are the documented fit / finetune calls (same cache key, same
weights), they cache, and the digits ViT's replicas differ in their training seed only."""

from __future__ import annotations

import pytest
import torch

import faithlab as fl
import faithlab_study as fs


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("name", ["cnn1d", "lstm_text"])
def test_series_text_recipe_is_the_documented_fit(name):
    model, hist, train, test = fs.recipes.series_text_classifier(name, n_train=32, n_test=8, length=20, width=4,
                                                                 tf_dim=8, n_epochs=1)
    assert not hist["from_cache"]
    series = name == "cnn1d"
    config = ({"in_channels": 1, "n_classes": train.info["n_classes"], "width": 4, "kernel_size": 9} if series else
              {"vocab_size": train.info["vocab_size"], "n_classes": 2, "embed_dim": 4, "hidden": 4})
    key = {"dataset": "seq_comb" if series else "tokens", "n": 32, "length": 20, "seed": 0,
           "window": [2, 4] if series else []}
    direct, direct_hist = fl.train.fit(name, config, train, fl.train.TrainConfig(epochs=1, lr=3e-3, batch_size=64),
                                       data_key=key, test_data=test, device="cpu", progress=False)
    assert direct_hist["from_cache"] and direct_hist["key"] == hist["key"]
    assert _same_weights(direct, model) and len(test) == 8 and train.x.shape[1] == 20


def test_finetune_recipe_is_cached_random_removal_of_the_given_units():
    base, hist, train, test = fs.recipes.series_text_classifier("cnn1d", n_train=32, n_test=8, length=20, width=4,
                                                                n_epochs=1)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    tuned = fs.recipes.ffidelity_finetune(base, hist, train, test, beta=0.3, units="time", n_epochs=1)
    assert all(torch.equal(before[k], v) for k, v in base.state_dict().items())  # the base model is untouched
    assert not _same_weights(tuned, base)
    direct, direct_hist = fl.train.finetune(base, train, fl.train.TrainConfig(epochs=1, lr=1e-3, batch_size=64),
                                            fl.train.RandomRemoval(0.3, units="time"), data_key=hist["spec"]["data"],
                                            base_key=hist["key"], test_data=test, device="cpu", progress=False)
    assert direct_hist["from_cache"] and _same_weights(direct, tuned)
    other = fs.recipes.ffidelity_finetune(base, hist, train, test, beta=0.1, units="time", n_epochs=1)
    assert not _same_weights(other, tuned)  # β is part of the cache key
    faster = fs.recipes.ffidelity_finetune(base, hist, train, test, beta=0.3, units="time", n_epochs=1, lr=3e-3)
    direct_fast, fast_hist = fl.train.finetune(base, train, fl.train.TrainConfig(epochs=1, lr=3e-3, batch_size=64),
                                               fl.train.RandomRemoval(0.3, units="time"),
                                               data_key=hist["spec"]["data"], base_key=hist["key"], test_data=test,
                                               device="cpu", progress=False)
    assert fast_hist["from_cache"] and _same_weights(direct_fast, faster)  # lr reaches the training config
    assert not _same_weights(faster, tuned)  # and its cache key


def test_canvas_recipe_caches_and_keys_the_training_size():
    model, hist, train, test = fs.recipes.canvas_classifier(image_size=8, n_train=40, width=4, n_epochs=1)
    again, hist2, _, _ = fs.recipes.canvas_classifier(image_size=8, n_train=40, width=4, n_epochs=1)
    assert not hist["from_cache"] and hist2["from_cache"] and _same_weights(model, again)
    assert hist["spec"]["data"] == {"dataset": "canvas_digits", "n": 40, "size": 8, "r": 0.3, "color": False,
                                    "seed": 0}
    assert len(train) == 40 and train.x.shape[1:] == test.x.shape[1:] == (1, 8, 8)
    assert not model.training


def test_series_text_recipe_rejects_unknown_models():
    with pytest.raises(ValueError, match="name"):
        fs.recipes.series_text_classifier("resnet9", n_train=8, n_test=8, length=20)


def test_digits_vit_trains_replicas_on_one_split_with_their_own_seed(tmp_path, monkeypatch):
    """Issue 49: ``replica.seed`` (``replica=None``: ``seed``) is the training seed and part of the cache key; the
    data split stays ``seed``'s, so replicas of a setting differ in their weights only."""
    from faithlab_study import recipes
    from faithlab_study.verdicts import Replica

    monkeypatch.setenv("FAITHLAB_CACHE", str(tmp_path))
    config = dict(image_size=8, patch_size=4, dim=8, depth=1, heads=2, n_epochs=1, seed=0)
    default, train_a, test_a = recipes.digits_vit(**config)
    same, _, _ = recipes.digits_vit(**config, replica=Replica("16 px", 0, 0))
    other, train_b, test_b = recipes.digits_vit(**config, replica=Replica("16 px", 1, 12345))
    assert torch.equal(train_a.x, train_b.x) and torch.equal(test_a.y, test_b.y)
    weights = [dict(m.state_dict()) for m in (default, same, other)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])

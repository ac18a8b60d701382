"""k-fold cross-training and degradations (ReCo/MeGe Algorithm 1, spec §4.1, §4.5)."""

from __future__ import annotations

import math

import pytest
import torch

import faithlab as fl
from faithlab.data import TensorData


def _data(n=60, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) * 0.3 + y.float()[:, None, None, None]   # separable by brightness
    return TensorData(x, y, info={"name": "toy", "n_classes": 3, "class_names": list("abc"), "mean": None,
                                  "std": None})


CONFIG = fl.train.TrainConfig(epochs=2, batch_size=16, lr=1e-2)


def _train(tmp_path, k=3, **kw):
    return fl.train.cross_train("small_cnn", {"in_channels": 1, "n_classes": 3, "width": 4}, _data(), CONFIG,
                                data_key="toy", k=k, cache_dir=tmp_path, progress=False, device="cpu", **kw)


def test_cross_train_folds_partition_and_cache(tmp_path):
    ct = _train(tmp_path)
    assert ct.k == 3 and sorted(torch.bincount(ct.folds).tolist()) == [20, 20, 20]
    assert ct.degradation["train_sizes"] == [40, 40, 40] and ct.degradation["labels_switched"] == 0
    preds = ct.predictions(_data().x, batch_size=7)
    assert preds.shape == (3, 60) and torch.equal(preds, ct.predictions(_data().x, batch_size=100))
    # held-out accuracy is measured on the block each model never saw
    for i, model in enumerate(ct.models):
        block = ct.folds == i
        acc = (preds[i, block] == _data().y[block]).double().mean()
        assert float(ct.accuracy[i]) == pytest.approx(float(acc))
    assert ct.comparable(tolerance=1.0) and not all(h["from_cache"] for h in ct.histories)
    again = _train(tmp_path)
    assert all(h["from_cache"] for h in again.histories)
    assert all(torch.equal(p, q) for a, b in zip(ct.models, again.models)
               for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def test_degradations_change_the_stated_fraction(tmp_path):
    lim = _train(tmp_path, limited=0.5)
    assert lim.degradation["train_sizes"] == [20, 20, 20]
    sw = _train(tmp_path, switched=0.3)
    assert sw.degradation["labels_switched"] == math.floor(0.3 * 60)
    assert all(not h["from_cache"] for h in sw.histories)        # another cache entry than the normal family


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.5, 1.0])
def test_randomise_layers_cascades_from_the_output(fraction):
    model = fl.models.build("resnet18_cifar", in_channels=1, n_classes=3, base_width=4).eval()
    layers = fl.train.parameterised_layers(model)
    out, names = fl.train.randomise_layers(model, fraction, generator=0)
    count = math.ceil(fraction * len(layers) - 1e-9)
    assert names == [n for n, _ in layers[::-1][:count]]
    changed = [n for (n, a), (_, b) in zip(layers, fl.train.parameterised_layers(out))
               if not torch.equal(a.weight, b.weight)]
    assert sorted(changed) == sorted(names)
    # the noise has the layer's own weight std, and the original model is untouched
    name, layer = layers[-1]
    with torch.no_grad():
        delta = dict(fl.train.parameterised_layers(out))[name].weight - layer.weight
    assert float(delta.std() / layer.weight.detach().std()) == pytest.approx(1.0, rel=0.35)
    again, _ = fl.train.randomise_layers(model, fraction, generator=0)
    assert all(torch.equal(p, q) for p, q in zip(out.state_dict().values(), again.state_dict().values()))


def test_cross_train_bad_input(tmp_path):
    with pytest.raises(TypeError, match="data"):
        fl.train.cross_train("small_cnn", {}, [1, 2], CONFIG, data_key="x")
    with pytest.raises(ValueError, match="fraction"):
        fl.train.randomise_layers(torch.nn.Linear(2, 2), 1.5, generator=0)
    with pytest.raises(ValueError, match="k"):
        _train(tmp_path, k=100)


def test_without_data_key_the_cache_entry_follows_the_data_s_contents(tmp_path):
    """data_key=None with the cache on: each data set gets its own entries (keyed by a digest of x and y), so a
    second data set never loads the first one's models; the same data again does."""
    def train(data):
        return fl.train.cross_train("small_cnn", {"in_channels": 1, "n_classes": 3, "width": 4}, data, CONFIG,
                                    data_key=None, k=3, cache_dir=tmp_path, progress=False, device="cpu")

    first = train(_data(seed=0))
    other = train(_data(seed=1))
    relabelled = _data(seed=0)
    relabelled = TensorData(relabelled.x, (relabelled.y + 1) % 3, info=relabelled.info)  # same x, other labels
    third = train(relabelled)
    assert not any(h["from_cache"] for h in first.histories + other.histories + third.histories)
    keys = [[h["key"] for h in ct.histories] for ct in (first, other, third)]
    assert len({key for row in keys for key in row}) == 9
    again = train(_data(seed=0))
    assert all(h["from_cache"] for h in again.histories) and [h["key"] for h in again.histories] == keys[0]


@pytest.mark.parametrize("option, value", [("limited", 1.5), ("limited", 0), ("limited", 0.001),
                                           ("switched", 1.5), ("switched", -0.1), ("randomised", 2.0),
                                           ("randomised", float("nan"))])
def test_a_bad_degradation_is_named_as_the_caller_wrote_it(tmp_path, option, value):
    with pytest.raises(ValueError, match=f"^{option} "):
        _train(tmp_path, **{option: value})


def test_cross_train_names_a_label_beyond_the_classes(tmp_path):
    """A label the data or the model has no class for is named (data.y) before training, instead of torch's
    "Target 5 is out of bounds" from inside the loss."""
    d = _data()
    y = d.y.clone()
    y[4] = 5

    def train(data):
        return fl.train.cross_train("small_cnn", {"in_channels": 1, "n_classes": 3, "width": 4}, data, CONFIG,
                                    data_key="toy", k=3, cache_dir=tmp_path, progress=False, device="cpu")

    with pytest.raises(ValueError, match=r"^data\.y holds label 5 but data\.n_classes is 3 \(labels 0\.\.2\)"):
        train(TensorData(d.x, y, info=d.info))
    with pytest.raises(ValueError, match=r"^data\.y holds label 5 but model_config's n_classes=3 gives the model 3 "):
        train(TensorData(d.x, y, info={**d.info, "n_classes": 6}))
    y[4] = -1
    with pytest.raises(ValueError, match=r"^data\.y must hold class indices ≥ 0, got label -1"):
        train(TensorData(d.x, y, info=d.info))
    assert not list(tmp_path.rglob("*.pt"))  # refused before anything was trained

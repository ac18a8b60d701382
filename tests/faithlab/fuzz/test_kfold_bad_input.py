"""Bad input to k-fold training and to k-fold evaluation (issue 53): non-finite training data, inputs on another
device than the fold models, a fold model on another device or returning NaN — each refused before any work with a
ValueError naming the caller's argument (``data.x``, ``x``, ``kfold.models[1]``)."""

from __future__ import annotations

import math
import re

import pytest
import torch
from oracles import linear_kfold, saliency, small_cnn

import faithlab as fl
from faithlab.data import TensorData

CONFIG = fl.train.TrainConfig(epochs=1, batch_size=8, lr=1e-2)
MODEL_CONFIG = {"in_channels": 1, "n_classes": 3, "width": 2}


def _data(n: int = 12) -> TensorData:
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 3
    x = torch.randn(n, 1, 8, 8, generator=g) + y.float()[:, None, None, None]
    return TensorData(x, y, info={"name": "toy", "n_classes": 3, "class_names": list("abc"), "mean": None,
                                  "std": None})


def _cross_train(data: TensorData, tmp_path, **kw):
    return fl.train.cross_train("small_cnn", MODEL_CONFIG, data, CONFIG, data_key="toy", k=2, cache_dir=tmp_path,
                                progress=False, device="cpu", **kw)


# ================================================================================================ cross_train's data
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_cross_train_refuses_non_finite_inputs_before_training(bad, tmp_path, monkeypatch):
    data = _data()
    data.x[7, 0, 3, 4] = bad
    data.x[9, 0, 0, 0] = bad

    def no_training(*args, **kwargs):
        raise AssertionError("cross_train trained on non-finite data")

    monkeypatch.setattr(fl.train.kfold, "fit", no_training)
    with pytest.raises(ValueError, match=r"^data\.x holds NaN or inf in 2 of 12 samples, the first at index 7;"):
        _cross_train(data, tmp_path)
    assert not list(tmp_path.rglob("*")), "the cache was written: refused only after work"


def test_cross_train_refuses_non_finite_labels(tmp_path, monkeypatch):
    """TensorData takes int64 labels, but its fields can be replaced afterwards: data.y is checked like data.x."""
    data = _data()
    data.y = data.y.double()
    data.y[4] = math.nan
    monkeypatch.setattr(fl.train.kfold, "fit", lambda *a, **k: pytest.fail("trained on non-finite labels"))
    with pytest.raises(ValueError, match=r"^data\.y holds NaN or inf in 1 of 12 samples, the first at index 4;"):
        _cross_train(data, tmp_path)


def test_cross_train_of_finite_data_still_trains(tmp_path):
    ct = _cross_train(_data(), tmp_path, cache=False)
    assert ct.k == 2 and torch.isfinite(ct.accuracy).all()
    assert ct.predictions(_data().x).shape == (2, 12)


# ====================================================================================== CrossTrained.predictions
def _family() -> fl.train.CrossTrained:
    """Two small untrained CNNs as a CrossTrained family (no training needed to check predictions' arguments)."""
    models = [fl.models.build("small_cnn", **MODEL_CONFIG).eval() for _ in range(2)]
    return fl.train.CrossTrained(models, torch.arange(12) % 2, torch.zeros(2, dtype=torch.float64), [])


class _Spy(torch.nn.Module):
    """Wraps a model and counts its forward calls."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


def test_predictions_refuse_x_on_another_device_than_the_models():
    ct = _family()
    ct.models = [_Spy(m) for m in ct.models]
    with pytest.raises(ValueError) as err:
        ct.predictions(_data().x.to("meta"))
    message = str(err.value)
    assert re.search(r"\bx is on meta\b", message) and "models[0] is on cpu" in message, message
    assert [m.calls for m in ct.models] == [0, 0], "a model was called before the check"


def test_predictions_refuse_a_model_on_another_device_than_x():
    ct = _family()
    ct.models[1].to("meta")
    with pytest.raises(ValueError, match=r"^models\[1\] is on meta but x is on cpu"):
        ct.predictions(_data().x)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_predictions_refuse_non_finite_x(bad):
    ct = _family()
    x = _data().x
    x[3, 0, 1, 1] = bad
    with pytest.raises(ValueError, match=r"^x contains NaN or inf"):
        ct.predictions(x)


def test_predictions_name_the_model_returning_nan():
    ct = _family()
    with torch.no_grad():
        ct.models[1].fc.bias.fill_(math.nan)
    with pytest.raises(ValueError, match=r"^models\[1\] returned NaN or inf logits on samples 0\.\.11"):
        ct.predictions(_data().x)


def test_predictions_of_models_and_x_on_one_device():
    preds = _family().predictions(_data().x, batch_size=5)
    assert preds.shape == (2, 12) and preds.dtype == torch.int64 and preds.device.type == "cpu"


# ================================================================================================ fl.evaluate kfold
OPTIONS = dict(metrics=["reco", "mege"], seed=3, progress=False)


_explain = saliency


def _setup(b: int = 6):
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(b, 2, 8, 8, generator=g)
    y = torch.randint(0, 3, (b,), generator=g)
    maps = torch.randn(b, 2, 8, 8, generator=g)
    return _Spy(model).eval(), x, y, maps


@pytest.mark.parametrize("stream", [False, True])
def test_evaluate_refuses_a_fold_model_on_another_device_before_any_work(stream):
    model, x, y, maps = _setup()
    kfold = linear_kfold(x)
    kfold.models[1].to("meta")
    data = [{"x": x, "y": y, "attributions": maps}] if stream else x
    args = (None, None) if stream else (y, maps)
    with pytest.raises(ValueError, match=r"^kfold\.models\[1\] is on meta but x is on cpu"):
        fl.evaluate(model, data, *args, explainer=_explain, kfold=kfold, **OPTIONS)
    assert model.calls == 0, "the model was called before the check"


def test_evaluate_refuses_a_fold_model_in_training_mode_before_any_work():
    model, x, y, maps = _setup()
    kfold = linear_kfold(x)
    kfold.models[1].train()
    with pytest.raises(ValueError, match=r"^kfold\.models\[1\] is in training mode"):
        fl.evaluate(model, x, y, maps, explainer=_explain, kfold=kfold, **OPTIONS)
    assert model.calls == 0


# The engine knows a fold model only as "model"; evaluate names it kfold.models[i] (catalogue._predictions).
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_evaluate_names_the_fold_model_returning_non_finite_logits(bad):
    model, x, y, maps = _setup()
    kfold = linear_kfold(x)
    with torch.no_grad():
        kfold.models[1][1].bias.fill_(bad)
    with pytest.raises(ValueError, match=r"^kfold\.models\[1\] returned NaN or inf on 6 of 6 .*sample\(s\) "
                                         r"\[0, 1, 2, 3, 4, 5\]"):
        fl.evaluate(model, x, y, maps, explainer=_explain, kfold=kfold, **OPTIONS)


def test_evaluate_of_a_family_on_one_device():
    model, x, y, maps = _setup(12)  # 12 samples: pairs of agreeing and of disagreeing fold models (S= and S≠)
    frame = fl.evaluate(model, x, y, maps, explainer=_explain, kfold=linear_kfold(x), **OPTIONS)
    assert sorted(frame["metric"]) == ["mege", "reco"] and model.calls > 0
    assert frame["score"].between(0, 1).all(), frame

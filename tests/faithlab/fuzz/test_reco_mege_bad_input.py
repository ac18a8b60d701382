"""Fuzz of ReCo/MeGe's public API with bad input (issue #32): the dataset-level calls and their building blocks on
predictions, the distance sets (ReCo, the scan, the AUC, MeGe), the distances and shuffled partners, S_avg,
``fl.evaluate``'s explainer and k-fold models, and ``cross_train`` (ReCo/MeGe's Algorithm 1). Each case raises a
ValueError or TypeError whose message names the argument the caller passed; the unspoilt inputs give finite results.
The tiny inputs and the classification are tests/support/paper_fuzz.py's (as in test_paper_metrics_bad_input.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

import faithlab as fl
from faithlab.data import TensorData
from faithlab.metrics.papers.reco_mege.baselines import average_stability, average_stability_details
from faithlab.metrics.papers.reco_mege.crossfold import (explanation_distance, mege, pair_distances, reco, reco_auc,
                                                         reco_mege, reco_mege_details,
                                                         reco_mege_details_from_predictions, reco_mege_from_predictions,
                                                         reco_scan, shuffled_partners)
from oracles import nan_everywhere
from paper_fuzz import (B, C, H, W, KfoldResult, Wrapped, allow_listed, case_params, check_case, tiny_inputs,
                        tiny_model, weight_explainer)

pytestmark = pytest.mark.timeout(60)  # a case that hangs fails instead of blocking the suite


# ======================================================================================================= ReCo/MeGe
KM = 3  # models


def _cross():
    """Maps (k, N, C, H, W), predictions (k, N), labels (N,), folds (N,) with pairs in both S= and S≠."""
    g = torch.Generator().manual_seed(3)
    maps = torch.randn(KM, B, C, H, W, generator=g)
    labels = torch.tensor([0, 1, 2, 0])
    predictions = torch.tensor([[0, 1, 2, 0], [0, 2, 2, 0], [1, 1, 2, 1]])
    folds = torch.tensor([0, 1, 2, 0])
    return {"maps": maps, "predictions": predictions, "labels": labels, "folds": folds}


def _sets() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.4, 0.25, 0.9])


def _dataset_level(fn):
    """ReCo/MeGe over KM models: _cross()'s maps as their attributions; the models' predictions replace _cross()'s."""
    def call(**v):
        v.pop("predictions")
        return fn(v.pop("models", [tiny_model(seed=i) for i in range(KM)]), v.pop("x", tiny_inputs()[0]), v.pop("maps"),
                  folds=v.pop("folds"), labels=v.pop("labels"), **v)
    return call


RECO_CALLS = {
    "reco_mege_from_predictions": lambda **v: reco_mege_from_predictions(v.pop("maps"), v.pop("predictions"),
                                                                         v.pop("labels"), v.pop("folds"), **v),
    "reco_mege_details_from_predictions": lambda **v: reco_mege_details_from_predictions(
        v.pop("maps"), v.pop("predictions"), v.pop("labels"), v.pop("folds"), **v),
    "pair_distances": lambda **v: pair_distances(v.pop("maps"), v.pop("predictions"), v.pop("labels"),
                                                 v.pop("folds"), **v),
    "reco_mege": _dataset_level(reco_mege),
    "reco_mege_details": _dataset_level(reco_mege_details),
}
_DATASET_LEVEL = ("reco_mege", "reco_mege_details")
_maps_inf = _cross()["maps"].index_put((torch.tensor(1), torch.tensor(2), torch.tensor(0), torch.tensor(0),
                                        torch.tensor(0)), torch.tensor(torch.inf))
RECO_BAD: dict[str, tuple[str, Callable[[], object]]] = {
    "maps_inf": ("maps", lambda: _maps_inf.clone()),
    "maps_complex": ("maps", lambda: _cross()["maps"].to(torch.complex64)),
    "maps_list": ("maps", lambda: _cross()["maps"].tolist()),
    "maps_2d": ("maps", lambda: _cross()["maps"].flatten(1)),
    "maps_one_model": ("maps", lambda: _cross()["maps"][:1]),
    "maps_no_sample": ("maps", lambda: _cross()["maps"][:, :0]),
    "maps_batch_mismatch": ("maps", lambda: _cross()["maps"][:, :2]),
    "predictions_float": ("predictions", lambda: _cross()["predictions"].float()),
    "predictions_negative": ("predictions", lambda: _cross()["predictions"] - 1),
    "predictions_wrong_shape": ("predictions", lambda: _cross()["predictions"][:2]),
    "predictions_bool": ("predictions", lambda: _cross()["predictions"].bool()),
    "predictions_list": ("predictions", lambda: _cross()["predictions"].tolist()),
    "labels_negative": ("labels", lambda: torch.tensor([0, -1, 2, 0])),
    "labels_float": ("labels", lambda: torch.tensor([0.0, 1.0, 2.0, 0.0])),
    "labels_2d": ("labels", lambda: torch.tensor([[0], [1], [2], [0]])),
    "labels_wrong_length": ("labels", lambda: torch.tensor([0, 1, 2])),
    "labels_none": ("labels", lambda: None),
    "folds_out_of_range": ("folds", lambda: torch.tensor([0, 1, 3, 0])),
    "folds_negative": ("folds", lambda: torch.tensor([0, -1, 2, 0])),
    "folds_float": ("folds", lambda: torch.tensor([0.0, 1.0, 2.0, 0.0])),
    "folds_wrong_length": ("folds", lambda: torch.tensor([0, 1])),
    "distance_unknown": ("distance", lambda: "cosine"),
    "distance_none": ("distance", lambda: None),
    "channel_dim_out_of_range": ("channel_dim", lambda: 5),
    "channel_dim_negative_out_of_range": ("channel_dim", lambda: -9),
    "channel_dim_sample_axis": ("channel_dim", lambda: 1),
    "channel_dim_float": ("channel_dim", lambda: 1.5),
    "channel_dim_bool": ("channel_dim", lambda: True),
    "channel_dim_string": ("channel_dim", lambda: "C"),
    "batch_size_zero": ("batch_size", lambda: 0),
    "batch_size_float": ("batch_size", lambda: 2.5),
    "batch_size_string": ("batch_size", lambda: "8"),
}
RECO_MODELS_BAD: dict[str, tuple[str, Callable[[], object]]] = {
    # the dataset-level calls' own inputs: the k models and x
    "models_one_module": ("models", lambda: tiny_model()),
    "models_fewer_than_maps": ("models", lambda: [tiny_model(), tiny_model(seed=1)]),
    "models_training": ("models", lambda: [tiny_model(), tiny_model(seed=1).train(), tiny_model(seed=2)]),
    "models_not_callable": ("models", lambda: [tiny_model(), "net", tiny_model(seed=2)]),
    "models_nan": ("models", lambda: [tiny_model(), Wrapped(nan_everywhere), tiny_model(seed=2)]),
    "x_list": ("x", lambda: tiny_inputs()[0].tolist()),
    "x_batch_mismatch": ("x", lambda: tiny_inputs()[0][:3]),
    "x_nan": ("x", lambda: tiny_inputs()[0].index_put((torch.tensor(1), torch.tensor(0), torch.tensor(0),
                                                       torch.tensor(0)), torch.tensor(torch.nan))),
}
_RECO_EXPECTED = {
    # the message names what disagrees: the k models and the maps, x's batch and the maps', a model's NaN logits
    "models_fewer_than_maps": ("models", "attributions"), "x_batch_mismatch": ("x", "attributions"),
    "models_nan": ("models", "model"),
}
RECO_CASES = ([(call, bad) for call in RECO_CALLS for bad in RECO_BAD
               if not (call in _DATASET_LEVEL and bad.startswith("predictions"))]   # predicted by the models there
              + [(call, bad) for call in _DATASET_LEVEL for bad in RECO_MODELS_BAD])


@pytest.mark.parametrize(("call", "bad"), case_params(RECO_CASES))
def test_reco_mege_bad_input_names_the_argument(call, bad):
    arg, value = {**RECO_BAD, **RECO_MODELS_BAD}[bad]
    values = {**_cross(), arg: value()}
    expected = _RECO_EXPECTED.get(bad, "attributions" if call in _DATASET_LEVEL and arg == "maps" else arg)
    check_case(f"{call}/{bad}", lambda: RECO_CALLS[call](**values), expected)


def test_reco_mege_of_the_unspoilt_inputs_is_finite_and_nan_maps_read_as_zero():
    """The control of the cases above; NaN in a map is documented as read as 0 (xplique's sanitising)."""
    d = reco_mege_details_from_predictions(**_cross(), channel_dim=-3)
    assert d["counts"]["S="] > 0 and d["counts"]["S≠"] > 0
    assert all(math.isfinite(d[k]) for k in ("reco", "mege", "reco_scan", "reco_auc"))
    maps = _cross()["maps"]
    with_nan = maps.clone()
    with_nan[0, 1, 0, 0, 0] = torch.nan
    zeroed = maps.clone()
    zeroed[0, 1, 0, 0, 0] = 0.0
    assert reco_mege_from_predictions(**{**_cross(), "maps": with_nan}) == \
        reco_mege_from_predictions(**{**_cross(), "maps": zeroed})


SETS_CALLS = {"reco": reco, "reco_scan": reco_scan, "reco_auc": reco_auc, "mege": lambda eq, ne: mege(eq)}
SETS_BAD: dict[str, tuple[str, Callable[[], tuple]]] = {
    # bad class: (argument, (s_equal, s_unequal))
    "s_equal_empty": ("s_equal", lambda: (torch.zeros(0), _sets()[1])),
    "s_equal_nan": ("s_equal", lambda: (torch.tensor([0.1, math.nan]), _sets()[1])),
    "s_equal_inf": ("s_equal", lambda: (torch.tensor([0.1, math.inf]), _sets()[1])),
    "s_equal_2d": ("s_equal", lambda: (_sets()[0][None], _sets()[1])),
    "s_equal_int": ("s_equal", lambda: (torch.tensor([0, 1]), _sets()[1])),
    "s_equal_list": ("s_equal", lambda: ([0.1, 0.2], _sets()[1])),
    "s_equal_0d": ("s_equal", lambda: (torch.tensor(0.1), _sets()[1])),
    "s_unequal_empty": ("s_unequal", lambda: (_sets()[0], torch.zeros(0))),
    "s_unequal_nan": ("s_unequal", lambda: (_sets()[0], torch.tensor([math.nan, 0.5]))),
    "s_unequal_inf": ("s_unequal", lambda: (_sets()[0], torch.tensor([0.5, -math.inf]))),
    "s_unequal_2d": ("s_unequal", lambda: (_sets()[0], _sets()[1][:, None])),
    "s_unequal_none": ("s_unequal", lambda: (_sets()[0], None)),
}
SETS_CASES = [(call, bad) for call in SETS_CALLS for bad in SETS_BAD
              if call != "mege" or SETS_BAD[bad][0] == "s_equal"]


@pytest.mark.parametrize(("call", "bad"), case_params(SETS_CASES))
def test_reco_of_bad_distance_sets_names_the_set(call, bad):
    arg, value = SETS_BAD[bad]
    check_case(f"{call}/{bad}", lambda: SETS_CALLS[call](*value()), arg)


@pytest.mark.parametrize("value", [0, -1, 2.5, "20", None], ids=["zero", "negative", "float", "string", "none"])
def test_reco_scan_names_a_bad_threshold_count(value):
    check_case(f"reco_scan/n_thresholds_{value!r}", lambda: reco_scan(*_sets(), n_thresholds=value), "n_thresholds")


OTHER_RECO_CASES: list[tuple[str, str, Callable[[], object], str]] = [
    ("explanation_distance", "a_list", lambda: explanation_distance([1.0, 2.0, 3.0], torch.rand(3)), "a"),
    ("explanation_distance", "b_none", lambda: explanation_distance(torch.rand(3), None), "b"),
    ("explanation_distance", "a_complex", lambda: explanation_distance(torch.rand(3).to(torch.complex64),
                                                                       torch.rand(3)), "a"),
    ("explanation_distance", "b_inf", lambda: explanation_distance(torch.rand(3), torch.tensor([0.1, math.inf, 0.2])),
     "b"),
    ("explanation_distance", "shape_mismatch", lambda: explanation_distance(torch.rand(4, 5), torch.rand(3, 6)),
     ("a", "b")),
    ("explanation_distance", "distance_unknown", lambda: explanation_distance(torch.rand(3), torch.rand(3),
                                                                              distance="l2"), "distance"),
    ("shuffled_partners", "eligible_float", lambda: shuffled_partners(torch.ones(4)), "eligible"),
    ("shuffled_partners", "eligible_2d", lambda: shuffled_partners(torch.ones(2, 2, dtype=torch.bool)), "eligible"),
    ("shuffled_partners", "eligible_list", lambda: shuffled_partners([True, False]), "eligible"),
    ("shuffled_partners", "generator_overflow", lambda: shuffled_partners(torch.ones(4, dtype=torch.bool),
                                                                          generator=2**70), "generator"),
    ("shuffled_partners", "generator_string", lambda: shuffled_partners(torch.ones(4, dtype=torch.bool),
                                                                        generator="0"), "generator"),
    ("shuffled_partners", "generator_none", lambda: shuffled_partners(torch.ones(4, dtype=torch.bool),
                                                                      generator=None), "generator"),
]


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize(("call", "bad", "thunk", "argument"), case_params(OTHER_RECO_CASES))
def test_distances_and_partners_name_the_bad_argument(call, bad, thunk, argument):
    check_case(f"{call}/{bad}", thunk, argument)


# --------------------------------------------------------------------------------------------------------- S_avg
def _savg_explainer(model, inputs, target):
    return inputs * (target[:, None, None, None].float() + 1)


def _explainer_returning(fn):
    return lambda model, inputs, target: fn(_savg_explainer(model, inputs, target))


SAVG_BAD: dict[str, tuple[str, Callable[[], dict]]] = {
    # bad class: (argument expected in the message, overrides of (explainer, x, target, options))
    "explainer_not_callable": ("explainer", lambda: {"explainer": "saliency"}),
    "explainer_returns_nan": ("explainer", lambda: {"explainer": _explainer_returning(lambda m: m / 0 * 0)}),
    "explainer_returns_inf": ("explainer", lambda: {"explainer": _explainer_returning(lambda m: m / 0)}),
    "explainer_returns_list": ("explainer", lambda: {"explainer": _explainer_returning(lambda m: m.tolist())}),
    "explainer_returns_other_batch": ("explainer", lambda: {"explainer": _explainer_returning(lambda m: m[:1])}),
    "explainer_nan_on_neighbours_only": ("explainer", lambda: {"explainer": _nan_off_x()}),
    # "x contains": the explainer's NaN maps on a NaN x say "on x of samples [...]", which blames the explainer
    "x_nan": ("x contains", lambda: {"x": tiny_inputs()[0].index_put((torch.tensor(0), torch.tensor(0), torch.tensor(0),
                                                         torch.tensor(0)), torch.tensor(torch.nan))}),
    "x_int_images": ("x", lambda: {"x": (tiny_inputs()[0] * 10).long()}),
    "x_list": ("x", lambda: {"x": tiny_inputs()[0].tolist()}),
    "x_empty_batch": ("x", lambda: {"x": tiny_inputs()[0][:0], "target": tiny_inputs()[2][:0]}),
    "target_wrong_length": ("target", lambda: {"target": tiny_inputs()[2][:3]}),
    "target_2d": ("target", lambda: {"target": tiny_inputs()[2][:, None]}),
    "target_float": ("target", lambda: {"target": tiny_inputs()[2].float()}),
    "target_negative": ("target", lambda: {"target": torch.tensor([0, -1, 2, 0])}),
    "n_neighbours_zero": ("n_neighbours", lambda: {"n_neighbours": 0}),
    "n_neighbours_float": ("n_neighbours", lambda: {"n_neighbours": 2.5}),
    "radius_zero": ("radius", lambda: {"radius": 0.0}),
    "radius_negative": ("radius", lambda: {"radius": -0.1}),
    "radius_inf": ("radius", lambda: {"radius": math.inf}),
    "radius_nan": ("radius", lambda: {"radius": float("nan")}),
    "radius_string": ("radius", lambda: {"radius": "0.1"}),
    "radius_none": ("radius", lambda: {"radius": None}),
    "common_noise_string": ("common_noise", lambda: {"common_noise": "yes"}),
    "sample_index_float": ("sample_index", lambda: {"sample_index": torch.arange(B).float()}),
    "sample_index_wrong_length": ("sample_index", lambda: {"sample_index": torch.arange(B - 1)}),
    "sample_index_2d": ("sample_index", lambda: {"sample_index": torch.arange(B)[:, None]}),
    "generator_overflow": ("generator", lambda: {"generator": 2**70}),
    "generator_string": ("generator", lambda: {"generator": "seed"}),
    "generator_none": ("generator", lambda: {"generator": None}),
    "batch_size_zero": ("batch_size", lambda: {"batch_size": 0}),
    "model_not_callable": ("model", lambda: {"model": "net"}),
    "model_training": ("model", lambda: {"model": tiny_model().train()}),
    "target_none_model_nan": ("model", lambda: {"target": None, "model": Wrapped(nan_everywhere)}),
    "attributions_wrong_batch": ("attributions", lambda: {"attributions": tiny_inputs()[1][:3]}),
    "attributions_nan": ("attributions", lambda: {"attributions": tiny_inputs()[1] / 0 * 0}),
    "attributions_list": ("attributions", lambda: {"attributions": tiny_inputs()[1].tolist()}),
    "attributions_other_shape": (("explainer", "attributions"), lambda: {"attributions": tiny_inputs()[1][:, :, :2]}),
}


def _nan_off_x():
    """An explainer whose maps are finite on x itself and NaN on every neighbour."""
    x = tiny_inputs()[0]

    def explainer(model, inputs, target):
        on_x = (inputs.flatten(1)[:, None, :] == x.flatten(1)[None]).all(-1).any(1)
        return torch.where(on_x[:, None, None, None], _savg_explainer(model, inputs, target), torch.nan)

    return explainer


SAVG_CASES = [(call, bad) for call in ("average_stability", "average_stability_details") for bad in SAVG_BAD]
SAVG_CALLS = {"average_stability": average_stability, "average_stability_details": average_stability_details}


@pytest.mark.parametrize(("call", "bad"), case_params(SAVG_CASES))
def test_average_stability_bad_input_names_the_argument(call, bad):
    arg, over = SAVG_BAD[bad]
    x, _, y = tiny_inputs()
    values = {"model": tiny_model(), "explainer": _savg_explainer, "x": x, "target": y, "n_neighbours": 3, **over()}
    fn = SAVG_CALLS[call]
    check_case(f"{call}/{bad}", lambda: fn(values.pop("model"), values.pop("x"), values.pop("attributions", None),
                                           **values), arg)


def test_average_stability_of_the_unspoilt_inputs_is_finite():
    x, _, y = tiny_inputs()
    s = average_stability(tiny_model(), x, explainer=_savg_explainer, target=y, n_neighbours=3)
    assert s.shape == (B,) and torch.isfinite(s).all() and bool((s > 0).all())
    # the model's predictions when no target is given; the explainer's own maps of x given as attributions
    predicted = tiny_model()(x).argmax(1)
    assert torch.equal(average_stability(tiny_model(), x, explainer=_savg_explainer, n_neighbours=3),
                       average_stability(tiny_model(), x, explainer=_savg_explainer, target=predicted, n_neighbours=3))
    assert torch.equal(average_stability(tiny_model(), x, _savg_explainer(None, x, y), explainer=_savg_explainer,
                                         target=y, n_neighbours=3), s)


# ------------------------------------------------------------------------- evaluate's explainer and k-fold models
def _reco_kfold():
    return KfoldResult([tiny_model(), tiny_model(seed=1)], torch.tensor([0, 1, 0, 1]))


def _eval_explainer(fn):
    return lambda m, inputs, target: fn(weight_explainer(m, inputs, target))


EVAL_EXPLAINER_BAD: dict[str, tuple[list[str], Callable]] = {
    # bad class: (metrics, explainer)
    "s_avg_explainer_returns_nan": (["s_avg"], _eval_explainer(lambda m: m / 0 * 0)),
    "s_avg_explainer_returns_inf": (["s_avg"], _eval_explainer(lambda m: m / 0)),
    "s_avg_explainer_returns_list": (["s_avg"], _eval_explainer(lambda m: m.tolist())),
    "s_avg_explainer_returns_other_batch": (["s_avg"], _eval_explainer(lambda m: m[:1])),
    "reco_explainer_returns_nan": (["reco", "mege"], _eval_explainer(lambda m: m / 0 * 0)),
    "reco_explainer_returns_inf": (["reco", "mege"], _eval_explainer(lambda m: m / 0)),
    "reco_explainer_returns_list": (["reco", "mege"], _eval_explainer(lambda m: m.tolist())),
    "reco_explainer_returns_other_batch": (["reco", "mege"], _eval_explainer(lambda m: m[:1])),
    "reco_explainer_returns_wrong_shape": (["reco", "mege"], _eval_explainer(lambda m: m[:, :, :2])),
    "reco_explainer_not_callable": (["reco", "mege"], "saliency"),
}
EVAL_EXPLAINER_CASES = [("evaluate", bad) for bad in EVAL_EXPLAINER_BAD]


@pytest.mark.parametrize(("call", "bad"), case_params(EVAL_EXPLAINER_CASES))
def test_evaluate_names_an_explainer_whose_maps_are_bad(call, bad):
    metrics, explainer = EVAL_EXPLAINER_BAD[bad]
    x, a, y = tiny_inputs()
    check_case(f"{call}/{bad}", lambda: fl.evaluate(tiny_model(), x, y, a, metrics=metrics, explainer=explainer,
                                                    kfold=_reco_kfold(), n_neighbours=2, progress=False), "explainer")


def test_evaluate_with_the_unspoilt_explainer_and_kfold_gives_finite_scores():
    x, a, y = tiny_inputs()
    frame = fl.evaluate(tiny_model(), x, y, a, metrics=["s_avg", "reco", "mege"], explainer=weight_explainer,
                        kfold=_reco_kfold(), n_neighbours=2, progress=False)
    assert set(frame["metric"]) == {"s_avg", "reco", "mege"} and frame["score"].notna().all()


def test_evaluate_kfold_model_in_training_mode_is_named():
    x, a, y = tiny_inputs()
    kfold = KfoldResult([tiny_model(), tiny_model(seed=1).train()], torch.tensor([0, 1, 0, 1]))
    check_case("evaluate/kfold_model_in_training_mode", lambda: fl.evaluate(
        tiny_model(), x, y, a, metrics=["reco"], explainer=weight_explainer, kfold=kfold, progress=False),
        "kfold.models[1]")


# ==================================================================================================== cross_train
CT_CONFIG = fl.train.TrainConfig(epochs=1, batch_size=8, lr=1e-2)


def _ct_data(y=None, n_classes=3):
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(12) % 3 if y is None else y
    x = torch.randn(12, 1, 8, 8, generator=g) + labels.float()[:, None, None, None]
    return TensorData(x, labels, info={"name": "toy", "n_classes": n_classes, "class_names": list("abc"),
                                       "mean": None, "std": None})


def _cross_train(**over):
    kw = {"model_name": "small_cnn", "model_config": {"in_channels": 1, "n_classes": 3, "width": 2},
          "data": _ct_data(), "config": CT_CONFIG, "k": 2, "cache": False, "progress": False, "device": "cpu", **over}
    return fl.train.cross_train(kw.pop("model_name"), kw.pop("model_config"), kw.pop("data"), kw.pop("config"), **kw)


def _labels(value: int) -> torch.Tensor:
    y = torch.arange(12) % 3
    y[5] = value
    return y


CT_BAD: dict[str, tuple[str | tuple[str, ...], Callable[[], dict]]] = {
    "data_not_tensordata": ("data", lambda: {"data": [1, 2, 3]}),
    "label_beyond_classes": ("data.y", lambda: {"data": _ct_data(_labels(5))}),
    "label_beyond_model_classes": ("data.y", lambda: {"data": _ct_data(_labels(5), n_classes=6)}),
    "label_negative": ("data.y", lambda: {"data": _ct_data(_labels(-1))}),
    "k_zero": ("k", lambda: {"k": 0}),
    "k_one": ("k", lambda: {"k": 1}),
    "k_more_than_samples": ("k", lambda: {"k": 13}),
    "k_float": ("k", lambda: {"k": 2.5}),
    "k_string": ("k", lambda: {"k": "3"}),
    "k_none": ("k", lambda: {"k": None}),
    "seed_string": ("seed", lambda: {"seed": "0"}),
    "seed_float": ("seed", lambda: {"seed": 1.5}),
    "config_not_a_trainconfig": ("config", lambda: {"config": {"epochs": 1}}),
    "data_key_not_serialisable": ("data_key", lambda: {"data_key": {"x": object()}, "cache": True}),
}
for _arg in ("limited", "switched", "randomised"):  # limited lies in (0, 1], the others in [0, 1]
    for _bad, _value in (("above_one", 1.5), ("negative", -0.1), ("nan", float("nan")), ("inf", math.inf),
                         ("string", "half"), ("bool", True), ("list", [0.5]), ("zero", 0.0)):
        if _bad != "zero" or _arg == "limited":
            CT_BAD[f"{_arg}_{_bad}"] = (_arg, lambda _arg=_arg, _value=_value: {_arg: _value})
CT_BAD["limited_keeps_no_sample"] = ("limited", lambda: {"limited": 0.01})
CT_CASES = [("cross_train", bad) for bad in CT_BAD]


@pytest.mark.parametrize(("call", "bad"), case_params(CT_CASES))
def test_cross_train_bad_input_names_the_argument(call, bad, tmp_path):
    arg, over = CT_BAD[bad]
    check_case(f"{call}/{bad}", lambda: _cross_train(cache_dir=tmp_path, **over()), arg)
    assert not list(tmp_path.rglob("*.pt")), "refused only after training"


def test_cross_train_of_the_unspoilt_inputs_trains_k_models(tmp_path):
    ct = _cross_train(cache_dir=tmp_path, limited=0.5, switched=0.1, randomised=0.5)
    assert ct.k == 2 and sorted(torch.bincount(ct.folds).tolist()) == [6, 6]
    assert ct.degradation["train_sizes"] == [3, 3] and torch.isfinite(ct.accuracy).all()


# ============================================================================================ coverage of the fuzz
ALL_CASES = ({f"{c}/{b}" for c, b in RECO_CASES + SETS_CASES + SAVG_CASES + EVAL_EXPLAINER_CASES + CT_CASES}
             | {f"{c}/{b}" for c, b, _, _ in OTHER_RECO_CASES})
REQUIRED = {  # the brief of issue #32: every public callable of ReCo/MeGe, S_avg and cross_train
    "reco_mege", "reco_mege_details", "reco_mege_from_predictions", "reco_mege_details_from_predictions",
    "pair_distances", "explanation_distance", "reco", "reco_scan", "reco_auc", "mege", "shuffled_partners",
    "average_stability", "average_stability_details", "cross_train", "evaluate"}


def test_the_fuzz_covers_every_callable_and_enough_cases():
    covered = {case.split("/")[0] for case in ALL_CASES}
    assert REQUIRED <= covered, sorted(REQUIRED - covered)
    assert len(ALL_CASES) > 270, len(ALL_CASES)
    mine = allow_listed({*RECO_CALLS, *SETS_CALLS, *SAVG_CALLS, "cross_train", "explanation_distance",
                         "shuffled_partners"})  # the allow-lists name real cases (evaluate's: the first file's)
    assert mine <= ALL_CASES, sorted(mine - ALL_CASES)

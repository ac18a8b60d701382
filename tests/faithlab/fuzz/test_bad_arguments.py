"""Bad arguments of the public functions outside the metric registry (the registry's metrics are fuzzed from their
declarations in tests/faithlab/fuzz/test_registered_metrics.py): generated cases, one per tensor argument of every call
below moved to another device, and the shape, None and type cases that once reached torch internals.

Good = a ValueError/TypeError whose message names the caller's argument (and, for a device, the other device). The
other device is ``$FAITHLAB_TEST_OTHER_DEVICE``, by default "meta", which stands for a GPU here: it holds no data, so
any value read before the check fails with a torch internals message (``Tensor.item() cannot be called on meta
tensors``). On a machine with a GPU, ``FAITHLAB_TEST_OTHER_DEVICE=cuda`` runs the same cases against a real device
and checks that the model-free calls give the CPU's results there."""

from __future__ import annotations

import os
import warnings

import pytest
import torch
from oracles import saliency, small_cnn

import faithlab as fl
from faithlab.metrics import search, statistics
from faithlab.metrics.papers import fewclass, ffidelity, trace
from faithlab.metrics.papers.fewclass import localisation
from faithlab.metrics.papers.reco_mege import crossfold

B, SIDE, K = 4, 8, 3
OTHER = torch.device(os.environ.get("FAITHLAB_TEST_OTHER_DEVICE", "meta"))


def _model():
    return small_cnn(in_channels=1, side=SIDE, n_classes=K)


def _images():
    g = torch.Generator().manual_seed(3)
    return {"x": torch.randn(B, 1, SIDE, SIDE, generator=g), "attributions": torch.randn(B, 1, SIDE, SIDE, generator=g),
            "target": torch.tensor([0, 1, 2, 0])}


def _maps():
    g = torch.Generator().manual_seed(4)
    return torch.rand(B, SIDE, SIDE, generator=g)


def _cross():
    g = torch.Generator().manual_seed(5)
    n = 12
    return {"maps": torch.rand(2, n, 1, SIDE, SIDE, generator=g), "predictions": torch.randint(0, K, (2, n), generator=g),
            "labels": torch.randint(0, K, (n,), generator=g), "folds": torch.arange(n) % 2}


def _sets():
    g = torch.Generator().manual_seed(6)
    return {"s_equal": torch.rand(20, generator=g, dtype=torch.float64),
            "s_unequal": torch.rand(15, generator=g, dtype=torch.float64)}


def _trajectory():
    g = torch.Generator().manual_seed(7)
    return torch.stack([torch.randperm(4, generator=g) for _ in range(B)])


def _curves():
    g = torch.Generator().manual_seed(8)
    return {"P": torch.rand(2, 3, 4, generator=g), "Q": torch.rand(2, 3, 4, generator=g),
            "gt": torch.tensor([0.0, 1.0, 2.0]), "levels": torch.tensor([0.1, 0.2, 0.3, 0.4])}


def _fewclass(**kw):
    return fewclass.fewclass_fid(_model(), **kw, fractions=[0.0, 0.5, 1.0])


_explain = saliency


def _kfold_details(**kw):
    models = [small_cnn(in_channels=1, side=SIDE, n_classes=K) for _ in range(2)]
    return crossfold.reco_mege_details(models, **kw)


# name → (callable taking keyword tensors, builder of the good keyword tensors). Every tensor argument of each call
# is moved to another device in turn by test_every_tensor_argument_on_another_device_is_named.
CALLS = {
    "localisation_iou": (localisation.localisation_iou,
                         lambda: {"attributions": _maps(), "boxes": torch.tensor([[1, 1, 6, 6]] * B)}),
    "localisation_dice": (localisation.localisation_dice, lambda: {"attributions": _maps(), "masks": _maps() > 0.5}),
    "dice_curve": (localisation.dice_curve, lambda: {"attributions": _maps(), "masks": _maps() > 0.5}),
    "reco_mege_from_predictions": (crossfold.reco_mege_from_predictions, _cross),
    "reco_mege_details_from_predictions": (crossfold.reco_mege_details_from_predictions, _cross),
    "pair_distances": (crossfold.pair_distances, _cross),
    "shuffled_distances": (crossfold.shuffled_distances,
                           lambda: {"maps": _cross()["maps"], "folds": _cross()["folds"],
                                    "partners": torch.arange(12).roll(1)}),
    "reco": (crossfold.reco, _sets),
    "reco_scan": (crossfold.reco_scan, _sets),
    "reco_auc": (crossfold.reco_auc, _sets),
    "reco_details": (crossfold.reco_details, _sets),
    "reco_mege_details": (_kfold_details,
                          lambda: {"x": _images()["x"], "attributions": torch.rand(2, B, 1, SIDE, SIDE),
                                   "labels": torch.tensor([0, 1, 2, 0]), "folds": torch.tensor([0, 1, 0, 1])}),
    "trajectory_scores": (lambda **kw: trace.trajectory_scores(_model(), edge=2, **kw),
                          lambda: {"x": _images()["x"], "trajectory": _trajectory(), "target": _images()["target"]}),
    "deletion_curve": (lambda **kw: trace.deletion_curve(_model(), edge=2, **kw),
                       lambda: {"x": _images()["x"], "order": _trajectory(), "target": _images()["target"]}),
    "insertion_curve": (lambda **kw: trace.insertion_curve(_model(), edge=2, **kw),
                        lambda: {"x": _images()["x"], "order": _trajectory(), "target": _images()["target"]}),
    "anneal": (lambda **kw: search.anneal(_model(), edge=2, iterations=2, generator=0, progress=False, **kw),
               lambda: {"x": _images()["x"], "init": _trajectory(), "target": _images()["target"]}),
    "genetic": (lambda **kw: search.genetic(_model(), edge=2, population=4, generations=1, generator=0,
                                                  progress=False, **kw),
                lambda: {"x": _images()["x"], "init": _trajectory(), "target": _images()["target"]}),
    "tabu": (lambda **kw: search.tabu(_model(), edge=2, iterations=2, generator=0, progress=False, **kw),
             lambda: {"x": _images()["x"], "init": _trajectory(), "target": _images()["target"]}),
    "fewclass_fid with perturbed": (_fewclass, lambda: {**_images(), "perturbed": torch.rand(B, 1, SIDE, SIDE)}),
    "mu_fidelity": (lambda **kw: fl.metrics.mu_fidelity(_model(), n_subsets=4, **kw), _images),
    "average_stability": (lambda **kw: fl.metrics.average_stability(_model(), explainer=_explain, n_neighbours=2,
                                                                     **kw), _images),
    "removal_curve": (lambda **kw: fl.perturb.removal_curve(_model(), fractions=[0.0, 0.5, 1.0], **kw), _images),
    "trajectory_from_map": (lambda **kw: trace.trajectory_from_map(edge=2, **kw),
                            lambda: {"attributions": _images()["attributions"], "x": _images()["x"]}),
    "explanation_distance": (crossfold.explanation_distance, lambda: {"a": torch.rand(3, 16), "b": torch.rand(3, 16)}),
    "explain": (lambda **kw: fl.explainers.explain(_model(), method="saliency", **kw),
                lambda: {"x": _images()["x"], "target": _images()["target"]}),
    "pearson": (statistics.pearson, lambda: {"a": torch.rand(5), "b": torch.rand(5)}),
    "spearman": (statistics.spearman, lambda: {"a": torch.rand(5), "b": torch.rand(5)}),
    "macro_correlations": (ffidelity.macro_correlations, _curves),
}


def _raises_naming(call, *names: str, kinds=(ValueError, TypeError)) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kinds) as info:
            call()
    message = str(info.value)
    for name in names:
        assert name in message, f"the message does not name {name!r}: {message}"
    return message


def _device_cases():
    return [(name, arg) for name, (_, good) in CALLS.items() for arg, value in good().items()
            if isinstance(value, torch.Tensor)]


@pytest.mark.parametrize("name", CALLS)
def test_the_good_arguments_give_a_result(name):
    fn, good = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fn(**good()) is not None


@pytest.mark.parametrize("name,arg", _device_cases())
def test_every_tensor_argument_on_another_device_is_named(name, arg):
    fn, good = CALLS[name]
    kw = good()
    kw[arg] = kw[arg].to(OTHER)
    message = _raises_naming(lambda: fn(**kw), arg, OTHER.type, kinds=ValueError)
    assert "same device" in message


MODEL_FREE = ("localisation_iou", "localisation_dice", "dice_curve", "reco_mege_from_predictions", "pair_distances",
              "shuffled_distances", "reco", "reco_scan", "reco_auc", "pearson", "spearman", "macro_correlations")


@pytest.mark.skipif(OTHER.type == "meta", reason="needs a real second device: FAITHLAB_TEST_OTHER_DEVICE=cuda")
@pytest.mark.parametrize("name", MODEL_FREE)
def test_the_model_free_calls_give_the_cpu_results_on_the_other_device(name):
    fn, good = CALLS[name]
    kw = good()
    on_cpu = fn(**kw)
    on_other = fn(**{k: v.to(OTHER) for k, v in kw.items()})
    def flat(r):  # a dict of floats/tensors (ReCo/MeGe, the macro correlations), Pairs, or a tensor
        return [r[k] for k in sorted(r)] if isinstance(r, dict) else [getattr(r, "distance", r)]

    assert len(flat(on_cpu)) == len(flat(on_other)) >= 1
    for a, b in zip(flat(on_cpu), flat(on_other)):
        torch.testing.assert_close(torch.as_tensor(b).cpu().double(), torch.as_tensor(a).cpu().double(),
                                   rtol=1e-5, atol=1e-6, equal_nan=True)


def test_every_call_has_device_cases():
    assert {name for name, _ in _device_cases()} == set(CALLS)
    assert len(_device_cases()) >= 50


def test_a_kfold_family_with_a_model_on_another_device_is_named():
    models = [small_cnn(in_channels=1, side=SIDE, n_classes=K), small_cnn(in_channels=1, side=SIDE, n_classes=K)]
    models[1] = models[1].to(OTHER)
    kw = CALLS["reco_mege_details"][1]()
    _raises_naming(lambda: crossfold.reco_mege_details(models, **kw), "models[1]", OTHER.type, kinds=ValueError)


# ----------------------------------------------------------------------------------- shapes, None and types
SHAPE_CASES = {
    "rankdata of a 0-d tensor": (lambda: fl.metrics.statistics.rankdata(torch.tensor(1.0)), ("x", "0-d")),
    "rankdata dim out of range": (lambda: statistics.rankdata(torch.rand(3, 4), dim=2), ("dim", "(3, 4)")),
    "pearson of lengths 5 and 4": (lambda: statistics.pearson(torch.rand(5), torch.rand(4)), ("a", "b", "(5,)", "(4,)")),
    "spearman of lengths 5 and 4": (lambda: statistics.spearman(torch.rand(5), torch.rand(4)),
                                    ("a", "b", "(5,)", "(4,)")),
    "macro_correlations levels of the wrong length": (
        lambda: ffidelity.macro_correlations(**{**_curves(), "levels": torch.tensor([0.1, 0.2])}), ("levels", "4", "2")),
    "ground_truth_ranking sparsity of the wrong length": (
        lambda: ffidelity.ground_truth_ranking(_curves()["P"], _curves()["Q"], [0, 1, 2], sparsity=[0.1, 0.2]),
        ("sparsity", "4", "2")),
    "reco_mege_from_predictions predictions=None": (
        lambda: crossfold.reco_mege_from_predictions(**{**_cross(), "predictions": None}), ("predictions", "NoneType")),
    "mu_fidelity units='pixels'": (
        lambda: fl.metrics.mu_fidelity(_model(), **_images(), n_subsets=4, units="pixels"),
        ("units", "pixel_units", "'pixels'")),
    "saco units of a wrong type": (
        lambda: fl.metrics.saco(_model(), **_images(), k=4, units=3), ("units", "patch_units", "int")),
}


@pytest.mark.parametrize("case", SHAPE_CASES)
def test_shape_none_and_type_cases_name_the_argument(case):
    call, names = SHAPE_CASES[case]
    _raises_naming(call, *names)


def test_units_for_accepts_none_and_units_and_lists_the_forms():
    x = _images()["x"]
    assert torch.equal(fl.perturb.units_for(None, x).index, fl.perturb.pixel_units(x).index)
    patches = fl.perturb.patch_units(x, 4)
    assert fl.perturb.units_for(patches, x) is patches
    message = _raises_naming(lambda: fl.perturb.units_for("pixels", x), "units", kinds=TypeError)
    assert "UNIT_KINDS['pixels'](x)" in message  # the string names a kind: the message says how to build it

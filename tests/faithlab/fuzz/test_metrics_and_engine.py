"""Fuzz of the public metric and engine API with bad input (issue #11): every case either raises a ValueError or
TypeError whose message names the argument the caller passed, or returns a documented, flagged result. Garbage
never comes out looking like a score: a model returning NaN/inf (on clean or only on perturbed inputs) raises, and
a constant map is flagged and warned about.

The cases are a cross product of the public callables (engine, F-Fidelity, SaCo, the cumulative metrics, stats)
with the classes of bad input that apply to each; tiny tensors, a few seconds in all.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import perturb
from faithlab.metrics import statistics as stats
from faithlab.metrics import (aopc, aopc_details, auc_accuracy, auc_accuracy_details, comprehensiveness,
                              comprehensiveness_details, fid_minus, fid_plus, fid_plus_details, log_odds,
                              log_odds_details,
                              saco, saco_details)
from oracles import inf_everywhere, nan_everywhere, nan_when_perturbed

B, C, H, W, K = 4, 1, 4, 4, 3


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(C * H * W, K)).eval()


def _inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(B, C, H, W, generator=g)
    a = torch.randn(B, C, H, W, generator=g)
    y = torch.tensor([0, 1, 2, 0])
    return x, a, y


class _Wrap(nn.Module):
    """A model whose logits are changed by ``fn(inputs, logits)``."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.inner, self.fn = _model(), fn

    def forward(self, inputs):
        return self.fn(inputs, self.inner(inputs))


# --------------------------------------------------------------------------------------------- the callables
# Each callable is (model, x, attributions, y, **overrides) -> result; OPTIONS lists the options it accepts so
# only applicable classes are crossed with it.
def _removal_curve(m, x, a, y, **o):
    return perturb.removal_curve(m, x, a, o.pop("fractions", [0.0, 0.5, 1.0]), target=o.pop("target", y), **o)


def _removal_outputs(m, x, a, y, **o):
    removed = torch.zeros(B, 2, H * W, dtype=torch.bool)
    removed[:, 1, :5] = True  # variant 0 clean, variant 1 perturbed
    removed = o.pop("removed", removed)
    return perturb.removal_outputs(m, x, removed, target=o.pop("target", y), **o)


def _masked_outputs(m, x, a, y, **o):
    return perturb.masked_outputs(m, x, lambda b0, b1, v0, v1: torch.ones(b1 - b0, v1 - v0, H * W, dtype=torch.bool),
                                  n_variants=2, target=o.pop("target", y), **o)


def _fid(fn, **fixed):
    def call(m, x, a, y, /, **o):  # positional-only: a label override must reach o, not collide with y
        return fn(m, x, a, target=o.pop("target", y), sparsity=o.pop("sparsity", [0.2, 0.5]), **{**fixed, **o})
    return call


def _curve_metric(fn, y_name):
    def call(m, x, a, y, /, **o):
        label = o.pop(y_name, y)
        return fn(m, x, a, target=label, **o)
    return call


def _saco(fn):
    def call(m, x, a, y, **o):
        return fn(m, x, a, k=o.pop("k", 4), target=o.pop("target", y), **o)
    return call


CALLS: dict[str, tuple[Callable, set[str], str]] = {
    # name: (call, options it accepts, the name of its label argument)
    "removal_curve": (_removal_curve, {"fractions", "target", "batch_size", "generator_order"}, "target"),
    "removal_outputs": (_removal_outputs, {"removed", "target", "batch_size"}, "target"),
    "masked_outputs": (_masked_outputs, {"target", "batch_size"}, "target"),
    "fid_plus": (_fid(fid_plus), {"sparsity", "target", "alpha", "beta", "batch_size", "generator"}, "target"),
    "fid_minus": (_fid(fid_minus), {"sparsity", "target", "alpha", "beta", "batch_size", "generator"}, "target"),
    "ffid_plus": (_fid(fid_plus, alpha=0.5, beta=0.1, n_samples=2, generator=0),
                  {"sparsity", "target", "alpha", "beta", "batch_size", "generator"}, "target"),
    "fid_plus_details": (_fid(fid_plus_details), {"sparsity", "target", "alpha", "beta", "batch_size"}, "target"),
    "saco": (_saco(saco), {"k", "target", "batch_size"}, "target"),
    "saco_details": (_saco(saco_details), {"k", "target", "batch_size"}, "target"),
    "auc_accuracy": (_curve_metric(auc_accuracy, "target"), {"fractions", "target", "batch_size"}, "target"),
    "aopc": (_curve_metric(aopc, "target"), {"fractions", "target", "batch_size"}, "target"),
    "log_odds": (_curve_metric(log_odds, "target"), {"fractions", "target", "batch_size"}, "target"),
    "comprehensiveness": (_curve_metric(comprehensiveness, "target"), {"fractions", "target", "batch_size"},
                          "target"),
}
USES_ATTRIBUTIONS = set(CALLS) - {"removal_outputs", "masked_outputs"}
DETAILS = {"saco_details": "undefined", "fid_plus_details": "constant"}
CUMULATIVE_DETAILS = {"auc_accuracy": auc_accuracy_details, "aopc": aopc_details, "log_odds": log_odds_details,
                      "comprehensiveness": comprehensiveness_details}


# ------------------------------------------------------------------------------------------- bad-input classes
# A class returns (model, x, attributions, y, overrides, argument name expected in the message), or None where it
# does not apply to the callable. "label" stands for the callable's label argument (y or target).
def _bad_classes():
    classes: dict[str, Callable] = {}

    def case(name):
        def deco(fn):
            classes[name] = fn
            return fn
        return deco

    @case("x_int_images")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), (x * 10).long(), a, y, {}, "x"

    @case("x_float64_with_float32_model")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x.double(), a.double(), y, {}, "x"

    @case("x_0d")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), torch.tensor(1.0), a, y, {}, "x"

    @case("x_nan")
    def _(name, opts, label):
        x, a, y = _inputs()
        x[1, 0, 0, 0] = torch.nan
        return _model(), x, a, y, {}, "x"

    @case("x_complex")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x.to(torch.complex64), a, y, {}, "x"

    @case("x_list")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x.tolist(), a, y, {}, "x"

    @case("model_on_other_device")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model().to("meta"), x, a, y, {}, "model"

    @case("model_not_callable")
    def _(name, opts, label):
        x, a, y = _inputs()
        return "resnet", x, a, y, {}, "model"

    @case("model_in_training_mode")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model().train(), x, a, y, {}, "model"

    @case("model_returns_1d")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _Wrap(lambda i, z: z[:, 0]).eval(), x, a, y, {}, "model"

    @case("model_returns_tuple")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _Wrap(lambda i, z: (z, z)).eval(), x, a, y, {}, "model"

    @case("model_returns_int_logits")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _Wrap(lambda i, z: (z * 100).long()).eval(), x, a, y, {}, "model"

    @case("attributions_more_channels")
    def _(name, opts, label):
        if name not in USES_ATTRIBUTIONS:
            return None
        x, a, y = _inputs()
        return _model(), x, torch.randn(B, 3, H, W), y, {}, "attributions"

    @case("attributions_wrong_size")
    def _(name, opts, label):
        if name not in USES_ATTRIBUTIONS:
            return None
        x, a, y = _inputs()
        return _model(), x, torch.randn(B, 1, H + 1, W), y, {}, "attributions"

    @case("attributions_nan")
    def _(name, opts, label):
        if name not in USES_ATTRIBUTIONS:
            return None
        x, a, y = _inputs()
        a[0, 0, 1, 1] = torch.nan
        return _model(), x, a, y, {}, "attributions"

    @case("attributions_complex")  # integer and bool maps are legal (issue 92): complex ones are not
    def _(name, opts, label):
        if name not in USES_ATTRIBUTIONS:
            return None
        x, a, y = _inputs()
        return _model(), x, a.to(torch.complex64), y, {}, "attributions"

    @case("attributions_batch_mismatch")
    def _(name, opts, label):
        if name not in USES_ATTRIBUTIONS:
            return None
        x, a, y = _inputs()
        return _model(), x, a[:2], y, {}, "attributions"

    @case("label_out_of_range")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x, a, y, {label: torch.tensor([0, 1, 7, 0])}, label

    @case("label_negative")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x, a, y, {label: torch.tensor([0, -1, 2, 0])}, label

    @case("label_float")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x, a, y, {label: y.float()}, label

    @case("label_wrong_length")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x, a, y, {label: y[:3]}, label

    @case("label_2d")
    def _(name, opts, label):
        x, a, y = _inputs()
        return _model(), x, a, y, {label: y[:, None]}, label

    def option(arg, bad_name, value, extra=None):
        """A bad value of one option, for the callables that accept it."""
        def make(name, opts, label):
            if arg not in opts:
                return None
            x, a, y = _inputs()
            return _model(), x, a, y, {arg: value, **(extra or {})}, arg
        classes[f"{arg}_{bad_name}"] = make

    for arg in ("fractions", "sparsity"):
        for bad_name, value in (("none", None), ("string", "0.5"), ("complex", [0.0, 0.5 + 1j]),
                                ("out_of_range", [0.0, 1.5]), ("nan", [0.0, float("nan")]), ("empty", []),
                                ("nested", [[0.0, 0.5]]), ("bools", [False, True])):
            option(arg, bad_name, value)

    @case("fractions_unsorted")
    def _(name, opts, label):
        if "fractions" not in opts or name == "removal_curve":  # a curve may be read in any order
            return None
        x, a, y = _inputs()
        return _model(), x, a, y, {"fractions": [0.0, 1.0, 0.5]}, "fractions"

    for arg in ("alpha", "beta"):
        for bad_name, value in (("string", "half"), ("none_alpha", None), ("nan", float("nan")), ("zero", 0.0),
                                ("above_one", 1.5), ("bool", True), ("list", [0.5])):
            if arg == "beta" and bad_name == "none_alpha":
                continue  # beta=None means "no cap": legal
            option(arg, bad_name, value)

    for bad_name, value in (("zero", 0), ("negative", -2), ("float", 2.5), ("string", "8"), ("text", "none")):  # None: the default size
        option("batch_size", bad_name, value)

    for bad_name, value in (("zero", 0), ("too_many", 17), ("float", 2.5)):
        option("k", bad_name, value)

    for bad_name, value in (("overflow", 2**70), ("string", "seed"), ("float", 1.5)):
        option("generator", bad_name, value, {"alpha": 0.5})

    for bad_name, value in (("empty", torch.zeros(B, 0, 16, dtype=torch.bool)),
                            ("float", torch.zeros(B, 2, 16)), ("wrong_n", torch.zeros(B, 2, 15, dtype=torch.bool)),
                            ("wrong_batch", torch.zeros(B - 1, 2, 16, dtype=torch.bool))):
        option("removed", bad_name, value)

    return classes


BAD = _bad_classes()
CASES = [(call, bad) for call, (_, opts, label) in CALLS.items() for bad, make in BAD.items()
         if make(call, opts, label) is not None]


@pytest.mark.parametrize(("call", "bad"), CASES)
def test_bad_input_raises_naming_the_argument(call, bad):
    fn, opts, label = CALLS[call]
    model, x, a, y, overrides, argument = BAD[bad](call, opts, label)
    with pytest.raises((ValueError, TypeError)) as err:
        fn(model, x, a, y, **overrides)
    assert re.search(rf"\b{argument}\b", str(err.value)), f"{call}/{bad}: message does not name {argument!r}: {err.value}"


def test_the_fuzz_covers_every_callable_and_enough_cases():
    assert {call for call, _ in CASES} == set(CALLS)
    assert len(CASES) > 400, len(CASES)


# ----------------------------------------------------------------------------------- non-finite model outputs
NON_FINITE = {"nan_everywhere": lambda x: nan_everywhere, "inf_everywhere": lambda x: inf_everywhere,
              "nan_when_perturbed": nan_when_perturbed}


@pytest.mark.parametrize("kind", list(NON_FINITE))
@pytest.mark.parametrize("call", list(CALLS))
def test_non_finite_model_outputs_never_give_a_score(call, kind):
    fn, _, _ = CALLS[call]
    x, a, y = _inputs()
    model = _Wrap(NON_FINITE[kind](x)).eval()
    with pytest.raises(ValueError, match=r"model returned NaN or inf") as err:
        fn(model, x, a, y)
    assert "sample(s) [" in str(err.value)


@pytest.mark.parametrize("call", ["saco", "aopc", "log_odds", "comprehensiveness", "removal_curve"])
def test_non_finite_on_clean_inputs_with_predicted_target(call):
    """target=None reads the prediction on the clean input first: NaN there is an error, not class 0."""
    fn, _, _ = CALLS[call]
    x, a, _ = _inputs()
    with pytest.raises(ValueError, match=r"NaN or inf .*clean inputs"):
        fn(_Wrap(nan_everywhere).eval(), x, a, None, target=None)


def test_non_finite_error_names_only_the_bad_samples():
    x, a, y = _inputs()

    def fn(inputs, logits):  # NaN only for inputs built from sample 2 (its clean pixel value marks it)
        mark = (inputs.flatten(1) == x[2].flatten()).sum(1) >= 8
        return torch.where(mark[:, None], torch.nan, logits)

    with pytest.raises(ValueError, match=r"sample\(s\) \[2\]"):
        saco(_Wrap(fn).eval(), x, a, k=4, target=y)


def test_a_callable_output_returning_nan_is_refused():
    x, a, y = _inputs()
    with pytest.raises(ValueError, match="NaN or inf"):
        perturb.removal_curve(_model(), x, a, [0.0, 1.0], target=y, output=lambda z, t: z[:, 0] / 0 * 0)


# ------------------------------------------------------------------------------------------------ constant maps
@pytest.mark.parametrize("call", sorted(USES_ATTRIBUTIONS))
def test_constant_maps_are_warned_about_with_a_count(call):
    fn, _, _ = CALLS[call]
    x, a, y = _inputs()
    a[1] = 0.0
    a[3] = 2.5
    with pytest.warns(perturb.ConstantMapWarning, match=r"for 2 of 4 sample\(s\) \(e\.g\. \[1, 3\]\)"):
        out = fn(_model(), x, a, y)
    if call in DETAILS:
        assert out[DETAILS[call]].tolist() == [False, True, False, True]


@pytest.mark.parametrize("name", list(CUMULATIVE_DETAILS))
def test_cumulative_details_flag_constant_maps(name):
    x, a, y = _inputs()
    a[2] = 0.0
    with pytest.warns(perturb.ConstantMapWarning):
        d = CUMULATIVE_DETAILS[name](_model(), x, a, target=y)
    assert d["constant"].tolist() == [False, False, True, False]
    assert torch.isfinite(d["score"]).all()


def test_no_warning_when_no_map_is_constant(recwarn):
    x, a, y = _inputs()
    for call in sorted(USES_ATTRIBUTIONS):
        CALLS[call][0](_model(), x, a, y)
    assert not [w for w in recwarn if issubclass(w.category, perturb.ConstantMapWarning)]


def test_saco_constant_map_is_zero_and_flagged():
    x, a, y = _inputs()
    a[0] = 1.0
    with pytest.warns(perturb.ConstantMapWarning):
        d = saco_details(_model(), x, a, k=4)
    assert d["saco"][0] == 0 and d["undefined"].tolist() == [True, False, False, False]


# ---------------------------------------------------------------------------------------------------------- stats
STATS_CASES = [
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1.0, 0.5, 0.0]), torch.tensor([0.0, 1.0, 0.5])), "x"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1.0, 0.5, 0.0]), torch.tensor([0.0, 0.0, 1.0])), "x"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1.0, 0.5]), torch.tensor([0.0, float("nan")])), "x"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1.0, 0.5]), torch.tensor([0.0, 1.0, 2.0])), "x"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor(1.0)), "curve"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc([1.0, 0.5]), "curve"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1.0])), "curve"),
    ("trapezoid_auc", lambda: stats.trapezoid_auc(torch.tensor([1 + 1j, 0j])), "curve"),
    ("spearman", lambda: stats.spearman([1, 2], torch.tensor([1.0, 2.0])), "a"),
    ("spearman", lambda: stats.spearman(torch.tensor([1.0, 2.0]), None), "b"),
    ("pearson", lambda: stats.pearson(torch.zeros(0), torch.zeros(0)), "a"),
    ("rankdata", lambda: stats.rankdata(torch.tensor([1.0, 2.0]), method="dense"), "method"),
    ("rankdata", lambda: stats.rankdata("abc"), "x"),
    ("nan_mean_std", lambda: stats.nan_mean_std(None), "x"),
]


@pytest.mark.parametrize(("name", "call", "argument"), STATS_CASES)
def test_stats_bad_input_names_the_argument(name, call, argument):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert re.search(rf"\b{argument}\b", str(err.value)), str(err.value)


def test_unsorted_fractions_can_no_longer_give_a_negative_accuracy_auc():
    """Before: auc_accuracy with fractions (0, 1, 0.5) returned −0.25 for a model always right."""
    x, a, y = _inputs()
    with pytest.raises(ValueError, match="fractions must be strictly increasing"):
        auc_accuracy(_model(), x, a, target=y, fractions=[0.0, 1.0, 0.5])


def test_bad_input_is_still_an_error_through_the_top_level_namespace():
    x, a, y = _inputs()
    with pytest.raises(ValueError, match=r"^target must hold classes in \[0, 2\] \(the model returns 3 logits\), "
                                         r"got 7"):
        fl.metrics.fid_plus(_model(), x, a, target=torch.tensor([7, 0, 0, 0]), sparsity=[0.5])

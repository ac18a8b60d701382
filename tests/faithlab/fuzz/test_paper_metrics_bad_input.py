"""Fuzz of the paper metrics' public API that takes a model, with bad input (issue #32): Few-class Fidelity (with a
single-logit model too), TRACE, μF and ``fl.evaluate``. Same classification as ``test_metrics_and_engine.py`` (the
older areas): every case either raises a ValueError or TypeError whose message names the argument the caller passed,
or returns a documented, flagged result. A model returning NaN/inf (on clean or only on perturbed inputs) raises
"model returned NaN or inf"; a constant map is flagged and warned about (``perturb.ConstantMapWarning``).

The cases are cross products of the public callables with the classes of bad input that apply to each (tiny
tensors: 4 samples, 1 channel, 4 × 4 pixels, 3 classes). What the fuzz of the newer areas shares (the tiny inputs,
the classification, :data:`UNCLEAR` and :data:`SILENT`) is tests/support/paper_fuzz.py; the map-only functions,
ReCo/MeGe with S_avg and ``cross_train``, and the study runner's command line have files of their own
(test_paper_map_functions.py, test_reco_mege_bad_input.py, tests/faithlab_study/runner/test_runner_bad_options.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

import faithlab as fl
from faithlab import perturb
from faithlab.metrics import fewclass, search, trace
from faithlab.metrics.papers.fewclass import localisation
from faithlab.metrics.papers.reco_mege.baselines import mu_fidelity, mu_fidelity_details
from oracles import inf_everywhere, nan_everywhere, nan_when_perturbed
from paper_fuzz import (B, C, EDGE, GRID, H, SILENT, UNCLEAR, W, KfoldResult, Wrapped, allow_listed, case_params,
                        check_case, finite_result, tiny_boxes, tiny_inputs, tiny_masks, tiny_model, tiny_perturbed,
                        tiny_trajectory, weight_explainer)

pytestmark = pytest.mark.timeout(60)  # a case that hangs fails instead of blocking the suite


# ==================================================================== model-based callables (model, x, maps, label)
# Each callable is (model, x, attributions, label, **overrides) -> result. Spec: what the callable reads
# ("model", "x_values" (not only x's shape), "attributions", "label"), the options it accepts, the name of its label
# argument, and whether its default model is the single-logit one.
def _fewclass_fid(fn):
    def call(m, x, a, y, /, **o):
        return fn(m, x, a, perturbed=o.pop("perturbed", tiny_perturbed()), target=o.pop("target", y), **o)
    return call


def _fewclass_fid_selecting(fn):
    """Few-class Fid without perturbed images: the call selects them (on the small GRID)."""
    def call(m, x, a, y, /, **o):
        return fn(m, x, a, grid=o.pop("grid", GRID), target=o.pop("target", y), **o)
    return call


def _select(m, x, a, y, /, **o):
    return fewclass.select_perturbation(m, x, grid=o.pop("grid", GRID), **o)


def _trace_order(fn, arg):
    def call(m, x, a, y, /, **o):
        return fn(m, x, o.pop(arg, tiny_trajectory()), edge=o.pop("edge", EDGE), target=o.pop("target", y), **o)
    return call


def _trace_map(fn):
    def call(m, x, a, y, /, **o):
        return fn(m, x, a, edge=o.pop("edge", EDGE), target=o.pop("target", y), **o)
    return call


def _trace_search(fn, **fixed):
    def call(m, x, a, y, /, **o):
        return fn(m, x, edge=o.pop("edge", EDGE), target=o.pop("target", y), **{**fixed, **o})
    return call


def _trajectory_from_map(m, x, a, y, /, **o):
    return trace.trajectory_from_map(a, x, edge=o.pop("edge", EDGE), **o)


def _mu(fn):
    def call(m, x, a, y, /, **o):
        return fn(m, x, a, target=o.pop("target", y), **{"n_subsets": 4, "generator": 0, **o})
    return call


EVAL_METRICS = ["fewclass_fid", "saco", "aopc", "mu_fidelity", "le-mo"]


def _evaluate(m, x, y, a, /, **o):
    return fl.evaluate(m, x, o.pop("y", y), a, **{"metrics": EVAL_METRICS, "perturbed": tiny_perturbed(),
                                                  "n_subsets": 4, "saco_k": 4, "progress": False, **o})


def _evaluate_call(m, x, a, y, /, **o):
    return _evaluate(m, x, y, a, **o)


_FEW_OPTS = {"target", "generator", "fractions", "batch_size", "perturbed"}
_TRACE_OPTS = {"edge", "target", "batch_size", "reference", "output"}
_MODEL_READS = {"model", "x_values"}
CALLS: dict[str, tuple[Callable, set[str], set[str], str, bool]] = {
    # name: (call, what it reads, options it accepts, label argument, single-logit model)
    "fewclass_fid": (_fewclass_fid(fewclass.fewclass_fid), _MODEL_READS | {"attributions", "label"}, _FEW_OPTS,
                     "target", False),
    "fewclass_fid[binary]": (_fewclass_fid(fewclass.fewclass_fid), _MODEL_READS | {"attributions", "label"},
                             _FEW_OPTS, "target", True),
    "fewclass_fid_details": (_fewclass_fid(fewclass.fewclass_fid_details), _MODEL_READS | {"attributions", "label"},
                             _FEW_OPTS, "target", False),
    "fewclass_fid_details[binary]": (_fewclass_fid(fewclass.fewclass_fid_details),
                                     _MODEL_READS | {"attributions", "label"}, _FEW_OPTS, "target", True),
    "fewclass_fid[select]": (_fewclass_fid_selecting(fewclass.fewclass_fid), _MODEL_READS | {"attributions", "label"},
                             (_FEW_OPTS - {"perturbed"}) | {"grid"}, "target", False),
    "select_perturbation": (_select, _MODEL_READS, {"grid", "batch_size"}, "", False),
    "select_perturbation[binary]": (_select, _MODEL_READS, {"grid", "batch_size"}, "", True),
    "trajectory_from_map": (_trajectory_from_map, {"attributions"}, {"edge", "reduce"}, "", False),
    "deletion_curve": (_trace_order(trace.deletion_curve, "order"), _MODEL_READS | {"label"},
                       _TRACE_OPTS | {"order"}, "target", False),
    "insertion_curve": (_trace_order(trace.insertion_curve, "order"), _MODEL_READS | {"label"},
                        _TRACE_OPTS | {"order"}, "target", False),
    "trajectory_scores": (_trace_order(trace.trajectory_scores, "trajectory"), _MODEL_READS | {"label"},
                          _TRACE_OPTS | {"trajectory"}, "target", False),
    "trajectory_scores_details": (_trace_order(trace.trajectory_scores_details, "trajectory"),
                                  _MODEL_READS | {"label"}, _TRACE_OPTS | {"trajectory"}, "target", False),
    "lerf_morf": (_trace_map(trace.lerf_morf), _MODEL_READS | {"attributions", "label"}, _TRACE_OPTS | {"reduce"},
                  "target", False),
    "lerf_morf_details": (_trace_map(trace.lerf_morf_details), _MODEL_READS | {"attributions", "label"},
                          _TRACE_OPTS | {"reduce"}, "target", False),
    "greedy": (_trace_search(search.greedy, objective="le"), _MODEL_READS | {"label"},
               _TRACE_OPTS | {"objective"}, "target", False),
    "anneal": (_trace_search(search.anneal, iterations=3, generator=0), _MODEL_READS | {"label"},
               _TRACE_OPTS | {"objective", "iterations", "t0", "eta", "generator", "init"}, "target", False),
    "genetic": (_trace_search(search.genetic, population=4, generations=2, generator=0, progress=False),
                _MODEL_READS | {"label"}, _TRACE_OPTS | {"objective", "generator", "init"}, "target", False),
    "tabu": (_trace_search(search.tabu, iterations=3, n_neighbours=2, generator=0, progress=False),
             _MODEL_READS | {"label"}, _TRACE_OPTS | {"objective", "n_neighbours", "generator", "init"}, "target",
             False),
    "complete_search": (_trace_search(search.complete_search), _MODEL_READS | {"label"}, _TRACE_OPTS, "target",
                        False),
    "random_deletion_curves": (_trace_search(search.random_deletion_curves, n_orders=2, generator=0),
                               _MODEL_READS | {"label"}, _TRACE_OPTS | {"n_orders", "generator"}, "target", False),
    "mu_fidelity": (_mu(mu_fidelity), _MODEL_READS | {"attributions", "label"},
                    {"target", "n_subsets", "subset_fraction", "reference", "output", "correlation", "generator",
                     "batch_size"}, "target", False),
    "mu_fidelity_details": (_mu(mu_fidelity_details), _MODEL_READS | {"attributions", "label"},
                            {"target", "n_subsets", "subset_fraction", "correlation", "generator", "batch_size"},
                            "target", False),
    "evaluate": (_evaluate_call, _MODEL_READS | {"attributions", "label"},
                 {"y", "metrics", "saco_k", "fewclass_fractions", "radius", "n_subsets", "n_neighbours", "seed",
                  "chunk_size", "edge", "sparsity", "alpha", "beta", "batch_size", "perturbed", "reference", "kfold",
                  "explainer", "finetuned", "n_samples"}, "y", False),
}


def _bad_classes():
    classes: dict[str, Callable] = {}

    def case(name):
        def deco(fn):
            classes[name] = fn
            return fn
        return deco

    def base(binary):
        x, a, y = tiny_inputs(binary)
        return tiny_model(binary), x, a, y

    def needs(spec, what):
        return what in spec[1]

    # --- x
    @case("x_int_images")
    def _(spec):
        if not needs(spec, "x_values"):
            return None
        m, x, a, y = base(spec[4])
        return m, (x * 10).long(), a, y, {}, "x"

    @case("x_float64_with_float32_model")
    def _(spec):
        if not needs(spec, "model"):
            return None
        m, x, a, y = base(spec[4])
        return m, x.double(), a.double(), y, {}, "x"

    @case("x_nan")
    def _(spec):
        if not needs(spec, "x_values"):
            return None
        m, x, a, y = base(spec[4])
        x[1, 0, 0, 0] = torch.nan
        return m, x, a, y, {}, "x"

    @case("x_inf")
    def _(spec):
        if not needs(spec, "x_values"):
            return None
        m, x, a, y = base(spec[4])
        x[2, 0, 1, 1] = -torch.inf
        return m, x, a, y, {}, "x"

    @case("x_complex")
    def _(spec):
        if not needs(spec, "x_values"):
            return None
        m, x, a, y = base(spec[4])
        return m, x.to(torch.complex64), a, y, {}, "x"

    @case("x_list")
    def _(spec):
        m, x, a, y = base(spec[4])
        return m, x.tolist(), a, y, {}, "x"

    @case("x_0d")
    def _(spec):
        m, _x, a, y = base(spec[4])
        return m, torch.tensor(1.0), a, y, {}, "x"

    @case("x_3d")
    def _(spec):
        if spec[0] is _evaluate_call:  # evaluate takes (B, T, C) series: a 3-d x is legal there
            return None
        m, x, a, y = base(spec[4])
        return m, x[:, 0], a, y, {}, "x"

    @case("x_not_square")
    def _(spec):
        if spec[2].isdisjoint({"edge"}) or spec[0] is _evaluate_call:
            return None
        m, _x, _a, y = base(spec[4])
        return m, torch.randn(B, C, H, W + 2), torch.randn(B, C, H, W + 2), y, {}, ("x", "edge")

    @case("empty_batch")
    def _(spec):
        m, x, a, y = base(spec[4])
        over = {}
        for arg, value in (("perturbed", tiny_perturbed()[:0]), ("order", tiny_trajectory()[:0]),
                           ("trajectory", tiny_trajectory()[:0])):
            if arg in spec[2]:
                over[arg] = value
        return m, x[:0], a[:0], y[:0], over, ("x", "attributions", "target", "y")

    # --- model
    @case("model_on_meta_device")
    def _(spec):
        if not needs(spec, "model"):
            return None
        m, x, a, y = base(spec[4])
        return m.to("meta"), x, a, y, {}, "model"

    @case("model_not_callable")
    def _(spec):
        if not needs(spec, "model"):
            return None
        _m, x, a, y = base(spec[4])
        return "resnet", x, a, y, {}, "model"

    @case("model_in_training_mode")
    def _(spec):
        if not needs(spec, "model"):
            return None
        m, x, a, y = base(spec[4])
        return m.train(), x, a, y, {}, "model"

    for name, fn in (("model_returns_1d", lambda i, z: z[:, 0]), ("model_returns_tuple", lambda i, z: (z, z)),
                     ("model_returns_int_logits", lambda i, z: (z * 100).long()),
                     ("model_returns_other_batch", lambda i, z: z[:1])):
        def make(spec, fn=fn):
            if not needs(spec, "model"):
                return None
            _m, x, a, y = base(spec[4])
            return Wrapped(fn, spec[4]).eval(), x, a, y, {}, "model"
        classes[name] = make

    # --- attributions
    def maps(name, build):
        def make(spec):
            if not needs(spec, "attributions"):
                return None
            m, x, a, y = base(spec[4])
            return m, x, build(a), y, {}, "attributions"
        classes[name] = make

    maps("attributions_more_channels", lambda a: torch.randn(B, 3, H, W))
    maps("attributions_wrong_size", lambda a: torch.randn(B, 1, H + 1, W))
    maps("attributions_nan", lambda a: a.index_put((torch.tensor(0), torch.tensor(0), torch.tensor(1),
                                                    torch.tensor(1)), torch.tensor(torch.nan)))
    maps("attributions_inf", lambda a: a.index_put((torch.tensor(3), torch.tensor(0), torch.tensor(2),
                                                    torch.tensor(0)), torch.tensor(torch.inf)))
    maps("attributions_complex", lambda a: a.to(torch.complex64))
    maps("attributions_list", lambda a: a.tolist())
    maps("attributions_batch_mismatch", lambda a: a[:2])
    maps("attributions_1d", lambda a: a.flatten())

    # --- labels
    def label(name, value):
        def make(spec):
            if not needs(spec, "label"):
                return None
            m, x, a, y = base(spec[4])
            return m, x, a, y, {spec[3]: value(spec[4], y)}, spec[3]
        classes[name] = make

    label("label_out_of_range", lambda binary, y: torch.tensor([0, 1, 2 if binary else 7, 0]))
    label("label_equal_to_n_classes", lambda binary, y: torch.tensor([0, 1, 2 if binary else 3, 0]))
    label("label_negative", lambda binary, y: torch.tensor([0, -1, 1, 0]))
    label("label_float", lambda binary, y: y.float())
    label("label_bool", lambda binary, y: y.bool())
    label("label_wrong_length", lambda binary, y: y[:3])
    label("label_2d", lambda binary, y: y[:, None])
    label("label_list", lambda binary, y: y.tolist())

    # --- options
    def option(arg, bad_name, value, expected=None):
        def make(spec):
            if arg not in spec[2]:
                return None
            m, x, a, y = base(spec[4])
            return m, x, a, y, {arg: value() if callable(value) else value}, expected or arg
        classes[f"{arg}_{bad_name}"] = make

    for arg in ("fractions", "fewclass_fractions", "sparsity"):
        for bad_name, value in (("none", None), ("string", "0.5"), ("complex", [0.0, 0.5 + 1j]),
                                ("out_of_range", [0.0, 1.5]), ("nan", [0.0, float("nan")]), ("empty", []),
                                ("nested", [[0.0, 0.5]]), ("bools", [False, True])):
            option(arg, bad_name, value)
    option("fractions", "unsorted", [0.0, 1.0, 0.5])
    option("fewclass_fractions", "unsorted", [0.0, 1.0, 0.5])

    for arg in ("batch_size", "n_subsets", "n_neighbours", "iterations", "n_orders", "chunk_size", "n_samples"):
        for bad_name, value in (("zero", 0), ("negative", -2), ("float", 2.5), ("string", "8"), ("none", None),
                                ("bool", True)):
            if arg in ("chunk_size", "batch_size") and bad_name == "none":
                continue  # chunk_size=None: all samples at once; batch_size=None: the default size (documented)
            option(arg, bad_name, value)

    for arg, extra in (("generator", ()), ("seed", ())):
        for bad_name, value in (("overflow", 2**70), ("string", "seed"), ("float", 1.5), ("bool", True),
                                ("list", [0]), *extra):
            option(arg, bad_name, value)

    for bad_name, value in (("zero", 0), ("not_dividing", 3), ("float", 2.5), ("string", "2"), ("negative", -2),
                            ("too_large", 8)):
        option("edge", bad_name, value)

    option("objective", "unknown", "lemo")
    option("objective", "none", None)
    option("reduce", "unknown", "median")
    option("reference", "unknown", "gray")
    option("reference", "wrong_shape", lambda: torch.zeros(B, C, H + 1, W))
    option("output", "unknown", "probability")
    option("output", "int", 3)
    option("correlation", "unknown", "kendall")
    for bad_name, value in (("zero", 0.0), ("above_one", 1.5), ("nan", float("nan")), ("string", "0.15"),
                            ("too_small", 0.001)):
        option("subset_fraction", bad_name, value)
    for arg in ("t0", "eta"):
        for bad_name, value in (("zero", 0.0), ("negative", -1.0), ("nan", float("nan")), ("inf", math.inf),
                                ("string", "hot")):
            if arg == "t0" or bad_name != "inf":
                option(arg, bad_name, value)
    option("eta", "above_one", 1.5)
    option("generator", "none", None)  # anneal and random_deletion_curves need one (documented: required)
    for arg in ("order", "trajectory", "init"):
        for bad_name, value in (("not_a_permutation", lambda: torch.zeros(B, EDGE * EDGE, dtype=torch.long)),
                                ("float", lambda: tiny_trajectory().float()), ("1d", lambda: tiny_trajectory()[0]),
                                ("wrong_t", lambda: torch.arange(9).expand(B, 9).clone()),
                                ("batch_mismatch", lambda: tiny_trajectory()[:2]),
                                ("list", lambda: tiny_trajectory().tolist()),
                                ("out_of_range_ids", lambda: tiny_trajectory() + 1)):
            option(arg, bad_name, value)

    for bad_name, value in (("empty", []), ("unknown_operation", [("V99", 1, "o")]), ("zero_sigma", [("V1", 0, "o")]),
                            ("nan_sigma", [("V1", float("nan"), "o")]), ("inf_sigma", [("V1", math.inf, "o")]),
                            ("bool_sigma", [("V1", True, "o")]), ("unknown_adjustment", [("V1", 1, "z")]),
                            ("string", "V1"), ("short_entry", [("V1", 1)])):
        option("grid", bad_name, value)

    for bad_name, value in (("wrong_shape", lambda: tiny_perturbed()[:, :, :2]),
                            ("nan", lambda: tiny_perturbed().index_put(
                                (torch.tensor(1), torch.tensor(0), torch.tensor(0), torch.tensor(0)),
                                torch.tensor(torch.nan))),
                            ("inf", lambda: tiny_perturbed().index_put(
                                (torch.tensor(2), torch.tensor(0), torch.tensor(3), torch.tensor(3)),
                                torch.tensor(torch.inf))),
                            ("int", lambda: (tiny_perturbed() * 10).long()),
                            ("list", lambda: tiny_perturbed().tolist()),
                            ("other_batch", lambda: tiny_perturbed()[:2])):
        option("perturbed", bad_name, value)

    # evaluate's own options
    for bad_name, value in (("unknown", ["fid+", "nope"]), ("string", "saco"), ("empty", []), ("int", 3),
                            ("needs_explainer", ["s_avg"]), ("needs_kfold", ["reco"])):
        option("metrics", bad_name, value)
    for bad_name, value in (("zero", 0), ("too_many", 17), ("float", 2.5), ("string", "4")):
        option("saco_k", bad_name, value)
    for bad_name, value in (("zero", 0.0), ("negative", -0.1), ("inf", math.inf), ("nan", float("nan")),
                            ("string", "0.1"), ("none", None)):
        option("radius", bad_name, value)
    for arg in ("alpha", "beta"):
        for bad_name, value in (("zero", 0.0), ("above_one", 1.5), ("nan", float("nan")), ("string", "half")):
            option(arg, bad_name, value)
    option("kfold", "no_models", object())
    option("kfold", "one_model", lambda: KfoldResult([tiny_model()], torch.zeros(B, dtype=torch.long)))
    option("kfold", "folds_wrong_length", lambda: KfoldResult([tiny_model(), tiny_model(seed=1)], torch.zeros(B - 1,
                                                                                                              dtype=torch.long)))
    option("explainer", "not_callable", "saliency")
    option("explainer", "unknown_name", {"other": weight_explainer})
    option("finetuned", "not_callable", "model")
    option("finetuned", "in_training_mode", lambda: tiny_model().train())
    return classes


BAD = _bad_classes()
CASES = [(call, bad) for call, spec in CALLS.items() for bad, make in BAD.items() if make(spec) is not None]


@pytest.mark.parametrize(("call", "bad"), case_params(CASES))
def test_bad_input_raises_naming_the_argument(call, bad):
    spec = CALLS[call]
    model, x, a, y, overrides, argument = BAD[bad](spec)
    check_case(f"{call}/{bad}", lambda: spec[0](model, x, a, y, **overrides), argument)


@pytest.mark.parametrize("call", list(CALLS))
def test_the_unspoilt_inputs_give_finite_results(call):
    """The control of every case above: the same call without the bad input runs and gives finite numbers."""
    spec = CALLS[call]
    x, a, y = tiny_inputs(spec[4])
    out = spec[0](tiny_model(spec[4]), x, a, y)
    assert finite_result(out), f"{call}: {out}"

# ----------------------------------------------------------------------------------- non-finite model outputs
NON_FINITE = {"nan_everywhere": lambda x: nan_everywhere, "inf_everywhere": lambda x: inf_everywhere,
              "nan_when_perturbed": nan_when_perturbed}
MODEL_CALLS = [c for c, spec in CALLS.items() if "model" in spec[1]]


@pytest.mark.parametrize("kind", list(NON_FINITE))
@pytest.mark.parametrize("call", MODEL_CALLS)
def test_non_finite_model_outputs_never_give_a_score(call, kind):
    spec = CALLS[call]
    x, a, y = tiny_inputs(spec[4])
    model = Wrapped(NON_FINITE[kind](x), spec[4]).eval()
    with pytest.raises(ValueError, match=r"model returned NaN or inf") as err:
        spec[0](model, x, a, y)
    assert "sample(s) [" in str(err.value)


@pytest.mark.parametrize("call", ["fewclass_fid", "fewclass_fid[binary]", "deletion_curve", "greedy",
                                  "complete_search"])
def test_non_finite_on_clean_inputs_with_predicted_target(call):
    """target=None reads the prediction on the clean input first: NaN there is an error, not class 0."""
    spec = CALLS[call]
    x, a, _ = tiny_inputs(spec[4])
    with pytest.raises(ValueError, match=r"NaN or inf .*clean inputs"):
        spec[0](Wrapped(nan_everywhere, spec[4]).eval(), x, a, None, target=None)


# ------------------------------------------------------------------------------------------------ constant maps
def _constant_rows(a: torch.Tensor, rows: list[int]) -> torch.Tensor:
    a = a.clone()
    for i, r in enumerate(rows):
        a[r] = 0.0 if i % 2 == 0 else 2.5
    return a


FEWCLASS_CALLS = ["fewclass_fid", "fewclass_fid[binary]", "fewclass_fid_details", "fewclass_fid_details[binary]"]


@pytest.mark.parametrize("rows", [[1, 3], [0, 1, 2, 3]], ids=["some_rows", "all_rows"])
@pytest.mark.parametrize("call", FEWCLASS_CALLS)
def test_fewclass_constant_maps_are_warned_about_and_flagged(call, rows):
    spec = CALLS[call]
    x, a, y = tiny_inputs(spec[4])
    a = _constant_rows(a, rows)
    count = rf"for {len(rows)} of 4 sample\(s\)"
    with pytest.warns(perturb.ConstantMapWarning, match=count):
        out = spec[0](tiny_model(spec[4]), x, a, y)
    if isinstance(out, dict):
        assert out["constant"].tolist() == [i in rows for i in range(B)]
        assert torch.isfinite(out["score"]).all()


def test_fewclass_all_zero_maps_through_evaluate_are_warned_about():
    x, a, y = tiny_inputs()
    with pytest.warns(perturb.ConstantMapWarning, match=r"for 4 of 4 sample\(s\)"):
        fl.evaluate(tiny_model(), x, y, torch.zeros_like(a), metrics=["fewclass_fid"], perturbed=tiny_perturbed(),
                    progress=False)


@pytest.mark.parametrize("call", ["mu_fidelity", "mu_fidelity_details"])
def test_mu_fidelity_of_a_constant_map_is_nan_as_documented(call):
    """μF correlates the attribution sums of the subsets with the output drops: every subset of a constant map has
    the same sum, so μF is NaN (documented: "NaN where the attribution sums ... are constant"), never a number."""
    x, a, y = tiny_inputs()
    out = CALLS[call][0](tiny_model(), x, _constant_rows(a, [1, 3]), y)
    mu = out["mu_f"] if isinstance(out, dict) else out
    assert torch.isnan(mu[[1, 3]]).all() and torch.isfinite(mu[[0, 2]]).all()


def test_no_constant_map_warning_when_no_map_is_constant(recwarn):
    x, a, _y = tiny_inputs()
    for call in FEWCLASS_CALLS:
        CALLS[call][0](tiny_model(CALLS[call][4]), x, a, tiny_inputs(CALLS[call][4])[2])
    assert not [w for w in recwarn if issubclass(w.category, perturb.ConstantMapWarning)]


CONSTANT_CALLS: dict[str, Callable[[torch.Tensor], object]] = {
    # the newer metrics that rank a map's pixels or patches: a constant map has no ranking to read
    "trajectory_from_map": lambda a: trace.trajectory_from_map(a, tiny_inputs()[0], edge=EDGE),
    "evaluate[le-mo]": lambda a: fl.evaluate(tiny_model(), tiny_inputs()[0], tiny_inputs()[2], a, metrics=["le-mo"],
                                             edge=EDGE, progress=False),
    "localisation_iou": lambda a: localisation.localisation_iou(a, tiny_boxes()),
    "dice_curve": lambda a: localisation.dice_curve(a, tiny_masks()),
    "localisation_dice": lambda a: localisation.localisation_dice(a, tiny_masks()),
}
CONSTANT_CASES = [(call, "constant_maps") for call in CONSTANT_CALLS]


@pytest.mark.parametrize(("call", "bad"), case_params(CONSTANT_CASES))
def test_constant_maps_of_the_ranking_metrics_are_warned_about(call, bad):
    """Like Few-class Fidelity and the older metrics: a constant map's score comes from the tie rule, so the
    samples are counted by a ConstantMapWarning."""
    with pytest.warns(perturb.ConstantMapWarning, match=r"for 2 of 4 sample\(s\)"):
        CONSTANT_CALLS[call](_constant_rows(tiny_inputs()[1], [1, 3]))


# ============================================================================================ coverage of the fuzz
ALL_CASES = {f"{c}/{b}" for c, b in CASES + CONSTANT_CASES}
REQUIRED = {
    # the brief of issue #32: every public callable of the newer areas that takes a model (the map-only functions,
    # ReCo/MeGe, S_avg, cross_train and the runner's command line are fuzzed in the files named above)
    "fewclass_fid", "fewclass_fid_details", "select_perturbation", "mu_fidelity", "mu_fidelity_details",
    "trajectory_from_map", "deletion_curve", "insertion_curve", "lerf_morf", "lerf_morf_details", "trajectory_scores",
    "trajectory_scores_details", "greedy", "anneal", "complete_search", "random_deletion_curves", "evaluate"}


def test_the_fuzz_covers_every_callable_and_enough_cases():
    covered = {case.split("/")[0].split("[")[0] for case in ALL_CASES}
    assert REQUIRED <= covered, sorted(REQUIRED - covered)
    assert {c for c in CALLS if c.endswith("[binary]")} == {c + "[binary]" for c in ("fewclass_fid",
                                                                                    "fewclass_fid_details",
                                                                                    "select_perturbation")}
    assert len(ALL_CASES) > 800, len(ALL_CASES)
    # the allow-lists name real cases, and stay a handful
    mine = allow_listed({*CALLS, *CONSTANT_CALLS})
    assert mine <= ALL_CASES, sorted(mine - ALL_CASES)


def test_no_silent_case_and_at_most_a_handful_of_unclear_ones():
    assert not SILENT, sorted(SILENT)
    assert len(UNCLEAR) <= 6, sorted(UNCLEAR)

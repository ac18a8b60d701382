"""The metric contract: fl.evaluate loops over the registry; every registered metric's score in evaluate equals its
own public call (generated from the registry, chunked, two explainers); a toy metric registered by a user is
computed by evaluate and fuzzed by the generated suite; the registry refuses malformed declarations."""

from __future__ import annotations

import copy
import importlib
import inspect

import pytest
import torch
from oracles import linear_kfold
from registry_fuzz import cases, classify, inputs, own_call

import faithlab as fl
from faithlab.metrics import registry
from faithlab.metrics.registry import METRICS, Metric, Option

OPTIONS = dict(sparsity=(0.25, 0.5, 0.75), n_samples=3, n_subsets=12, n_neighbours=3, saco_k=4, edge=4, seed=3,
               fewclass_fractions=[0.0, 0.25, 0.5, 1.0])


def _explain(model, x, target):
    return fl.explainers.explain(model, x, target, method="saliency")


def _scores(frame, explainer, metric):
    rows = frame[(frame["explainer"] == explainer) & (frame["metric"] == metric)]
    return torch.tensor(rows["score"].to_numpy(), dtype=torch.float64)


def test_evaluate_equals_every_registered_metrics_own_call():
    model, x, y, a = inputs()
    tuned = copy.deepcopy(model)  # the "fine-tuned" model: other weights, so FFid must read it
    with torch.no_grad():
        tuned[0].weight.mul_(1.5)
    maps = {"A": a, "B": a.abs().sum(1, keepdim=True)}
    frame = fl.evaluate(model, x, y, maps, finetuned=tuned, explainer=_explain, kfold=linear_kfold(x),
                        progress=False, **OPTIONS)
    assert list(dict.fromkeys(frame["metric"])) == list(METRICS)
    target = model(x).argmax(1)
    checked = 0
    for name, metric in METRICS.items():
        if metric.level != "sample":
            continue
        for who, m in maps.items():
            use = tuned if metric.model == "finetuned" else model
            expected = own_call(name, use, x, m, labels=y, target=target, user_model=model, options=OPTIONS)
            got = _scores(frame, who, name)
            torch.testing.assert_close(got, expected.double(), rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{name}: {m}")
        checked += 1
    assert checked == sum(m.level == "sample" for m in METRICS.values()) >= 17


def _toy(model, x, attributions, *, target=None, fraction=0.5, batch_size=256):
    """Toy metric: the drop of the target's probability when the top ``fraction`` of the units is removed (zero)."""
    fl._validate.tensor(x, "x", ndim=(2, 3, 4))
    units = fl.perturb.default_units(x)
    fl.perturb.check_attributions(attributions, x)
    scores = fl.perturb.unit_scores(attributions, units, reduce="sum")
    k = max(1, int(round(fraction * units.n)))
    rank = fl.perturb.ranks(fl.perturb.order(scores, "morf"))
    removed = fl.perturb.top_masks(rank, torch.tensor([k]))[:, 0]
    none = torch.zeros_like(removed)
    if target is None:
        target = fl.perturb.removal_outputs(model, x, none, output="predicted", batch_size=batch_size)
    clean = fl.perturb.removal_outputs(model, x, none, output="prob", target=target, batch_size=batch_size)
    return clean - fl.perturb.removal_outputs(model, x, removed, output="prob", target=target,
                                              batch_size=batch_size)


def _toy_k(model, x, attributions, *, target=None, k=3):
    return _toy(model, x, attributions, target=target, fraction=1 / k)


def _check_fraction(value, name, x):
    fl._validate.fraction(value, name, closed_low=False)
    return value


TOY = Metric("toy_drop", "Toy drop", "toy", True, _toy,
             options=(Option("fraction", doc="the fraction of units the toy metric removes", check=_check_fraction),),
             doc="the probability lost when the top units are removed")


def test_a_registered_toy_metric_is_evaluated_and_fuzzed():
    model, x, y, a = inputs()
    assert "toy_drop" not in METRICS
    with registry.registered(TOY):
        assert "fraction" in inspect.signature(fl.evaluate).parameters  # help(fl.evaluate) shows the option
        assert "Toy drop (``toy_drop``, toy): the probability lost" in fl.evaluate.__doc__  # and the metric
        frame = fl.evaluate(model, x, y, a, metrics=["toy_drop", "aopc"], fraction=0.25, progress=False)
        scoped = fl.evaluate(model, x, y, a, metrics=["toy_drop"], toy_drop_fraction=0.25, progress=False)
        torch.testing.assert_close(_scores(scoped, "explainer", "toy_drop"), _scores(frame, "explainer", "toy_drop"))
        expected = _toy(model, x, a, target=model(x).argmax(1), fraction=0.25)
        torch.testing.assert_close(_scores(frame, "explainer", "toy_drop"), expected.double(), rtol=0, atol=0)
        assert frame.loc[frame["metric"] == "toy_drop", "paper"].eq("toy").all()
        assert "toy_drop" in set(fl.evaluation.available())
        assert "toy_drop" in set(fl.evaluation.describe()["metric"])
        toy_cases = [c for n, c in cases() if n == "toy_drop"]
        assert len(toy_cases) >= 7
        assert {c: classify("toy_drop", c) for c in toy_cases} == dict.fromkeys(toy_cases, "good")
        with pytest.raises(ValueError, match="toy_drop_fraction"):  # named as the caller spelt it
            fl.evaluate(model, x, y, a, metrics=["toy_drop"], toy_drop_fraction=2.0, progress=False)
        with pytest.raises(ValueError, match="fraction"):
            fl.evaluate(model, x, y, a, metrics=["toy_drop"], fraction=2.0, progress=False)
    assert "toy_drop" not in METRICS and "fraction" not in registry.OPTIONS
    assert "fraction" not in inspect.signature(fl.evaluate).parameters
    with pytest.raises(TypeError, match="fraction"):
        fl.evaluate(model, x, y, a, metrics=["aopc"], fraction=0.25, progress=False)


def test_the_registry_refuses_malformed_declarations():
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Metric("aopc", "AOPC", "saco", True, _toy))
    with pytest.raises(ValueError, match="Option declarations"):
        Metric("toy2", "Toy", "toy", True, _toy, options=("nowhere",))
    with pytest.raises(ValueError, match="takes no keyword nowhere"):
        Metric("toy2", "Toy", "toy", True, _toy, options=(Option("nowhere", 1),))
    with pytest.raises(ValueError, match="only a dataset-level metric has a compute"):
        Metric("toy6", "Toy", "toy", True, _toy, compute=lambda c: 0.0)
    with pytest.raises(ValueError, match="needs"):
        Metric("toy3", "Toy", "toy", True, _toy, needs=("a gpu",))
    with pytest.raises(ValueError, match="needs a function"):
        Metric("toy4", "Toy", "toy", True)
    with pytest.raises(ValueError, match="already declared"):
        registry.register(Metric("toy5", "Toy", "toy", True, _toy_k, options=(Option("k", 7, "another k"),)))
    assert {"toy2", "toy5"}.isdisjoint(METRICS)


def test_declarations_are_complete():
    """Every study metric declares its paper (a chapter), its direction, the options it reads; options documented."""
    # the five papers, and the rival metrics the synthesis page sets beside them (ROAD, infidelity)
    papers = {m.paper for m in METRICS.values()}
    assert papers == {"ffidelity", "fewclass", "saco", "reco_mege", "trace", "synthesis"}
    assert set(registry.PAPERS) <= papers
    for m in METRICS.values():
        assert {o.name for o in m.options} <= set(registry.OPTIONS)
    for o in registry.OPTIONS.values():
        assert o.doc and o.name in inspect.signature(fl.evaluate).parameters


TWINS = {"ffidelity.scores": [("fid_plus", "score"), ("fid_minus", "score")],
         "saco.cumulative": [("auc_accuracy", "score"), ("aopc", "score"), ("log_odds", "score"),
                             ("comprehensiveness", "score")],
         "saco.consistency": [("saco", "saco")],
         "reco_mege.baselines": [("mu_fidelity", "mu_f"), ("average_stability", "s_avg")],
         "fewclass.fidelity": [("fewclass_fid", "score")],
         "trace.trajectories": [("lerf_morf", "lerf_morf"), ("trajectory_scores", "lerf_morf")]}
"""The modules under ``faithlab.metrics.papers`` whose plain metrics are generated from their ``*_details`` twin."""


@pytest.mark.parametrize("module,name,key", [(m, n, k) for m, items in TWINS.items() for n, k in items])
def test_plain_twins_are_generated_from_their_details(module, name, key):
    """A plain metric is its ``*_details`` twin read at one key, with the twin's signature written once: no second
    ``def`` to drift apart (the control below: a hand-written twin is told apart)."""
    import ast

    mod = importlib.import_module(f"faithlab.metrics.papers.{module}")
    function, details = getattr(mod, name), getattr(mod, f"{name}_details")
    assert inspect.signature(function).parameters == inspect.signature(details).parameters
    source = inspect.getsource(mod)
    assert not any(isinstance(n, ast.FunctionDef) and n.name == name for n in ast.parse(source).body)
    assert f'{name} = plain({name}_details, "{key}",' in source
    with pytest.raises(TypeError, match=rf"^{name}\(\) (got an unexpected keyword argument 'nope'|missing)"):
        function(None, None, None, nope=1)


def test_a_plain_twin_reads_its_key_of_the_details():
    calls = []

    def toy_details(model, x, attributions, *, target=None, k: int = 3):
        calls.append((model, x, attributions, target, k))
        return {"score": torch.tensor([float(k)]), "other": 0}

    toy = registry.plain(toy_details, "score", "The toy's doc.")
    assert (toy.__name__, toy.__module__, toy.__doc__) == ("toy", __name__, "The toy's doc.")
    assert toy(1, 2, 3, k=5).item() == 5.0 and calls == [(1, 2, 3, None, 5)]
    with pytest.raises(TypeError, match="missing a required argument"):
        toy(1, 2)


def test_declare_registers_the_decorated_function_and_returns_it():
    @registry.declare("toy_declared", "Toy declared", "toy", True, options=(Option("fraction"),),
                      doc="the toy, declared by decorator")
    def toy_declared(model, x, attributions, *, target=None, fraction=0.3, batch_size=None):
        return _toy(model, x, attributions, target=target, fraction=fraction, batch_size=batch_size)

    try:
        assert callable(toy_declared) and toy_declared.__name__ == "toy_declared"  # the function itself
        metric = METRICS["toy_declared"]
        assert metric.function is toy_declared and registry.OPTIONS["fraction"].default == 0.3  # its signature's
        model, x, y, a = inputs()
        frame = fl.evaluate(model, x, y, a, metrics=["toy_declared"], progress=False)
        torch.testing.assert_close(_scores(frame, "explainer", "toy_declared"),
                                   toy_declared(model, x, a, target=model(x).argmax(1)).double(), rtol=0, atol=0)
    finally:
        registry.unregister("toy_declared")
    assert "toy_declared" not in METRICS and "fraction" not in registry.OPTIONS

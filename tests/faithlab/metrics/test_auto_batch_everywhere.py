"""``batch_size="auto"`` everywhere: every public function of :mod:`faithlab.metrics` (and every metric the registry
declares) that takes ``batch_size`` accepts ``"auto"`` and gives a fixed size's results, and refuses a bad value with
an error naming ``batch_size``.

The functions are found by introspection, so a new metric is covered the day it is written; it must then get an
entry in :data:`CASES` (the arguments of a tiny call), or :func:`test_every_function_with_batch_size_has_a_case`
fails: a function missing from the table is a failure, never a skip.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
from collections.abc import Callable
from types import SimpleNamespace

import pytest
import torch
from oracles import linear_kfold, small_cnn

import faithlab as fl
from faithlab.metrics import registry
from faithlab.metrics.papers import fewclass
from faithlab.metrics.papers.reco_mege import crossfold
from faithlab.perturb import autobatch

FIXED = 3  # a fixed size smaller than every call below: several chunks, where "auto" takes one or a few
BAD = ("big", 0, -3, 2.5, True)


def _public_functions() -> dict[str, Callable]:
    """Every public function (in a module's ``__all__``, or not starting with ``_`` where it has none) defined in a
    non-private module of :mod:`faithlab.metrics`, and every registered metric's function, that has a ``batch_size`` parameter, keyed
    ``"module.name"``."""
    found: dict[int, Callable] = {}
    for info in pkgutil.walk_packages(fl.metrics.__path__, f"{fl.metrics.__name__}."):  # search/'s modules too
        if info.name.rsplit(".", 1)[-1].startswith("_"):  # a private module's names are its package's helpers
            continue
        module = importlib.import_module(info.name)
        names = (set(module.__all__) if hasattr(module, "__all__")  # helpers shared across modules stay out of it
                 else {n for n in vars(module) if not n.startswith("_")})
        for name in names:
            fn = getattr(module, name, None)
            if inspect.isfunction(fn) and fn.__module__ == module.__name__:
                found[id(fn)] = fn
    for metric in registry.METRICS.values():
        if metric.function is not None:
            found[id(metric.function)] = metric.function
    out = {}
    for fn in found.values():
        if "batch_size" in inspect.signature(fn).parameters:
            out[f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"] = fn
    return out


FUNCTIONS = _public_functions()


# ------------------------------------------------------------------------------------------------ the tiny cases
def _env() -> SimpleNamespace:
    """Tiny inputs every case reads: a float64 small CNN on 4 images of 3×8×8, maps, labels, k = 3 models."""
    g = torch.Generator().manual_seed(0)
    model = small_cnn(in_channels=3, side=8, n_classes=3).double()
    x = torch.rand(4, 3, 8, 8, generator=g, dtype=torch.float64)
    a = torch.randn(4, 3, 8, 8, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 1])
    kfold = linear_kfold(x)
    kfold.models = [m.double() for m in kfold.models]
    maps = torch.randn(3, 6, 3, 8, 8, generator=g, dtype=torch.float64)  # k = 3 models' maps of 6 samples
    kmaps = torch.randn(3, 4, 3, 8, 8, generator=g, dtype=torch.float64)  # the k models' maps of x
    boxes = torch.tensor([[0, 0, 4, 4], [2, 1, 8, 5], [1, 1, 3, 7], [0, 3, 8, 8]])
    grid = fewclass.candidate_grid(["V1"])[:9]

    def explainer(m, z, t):  # deterministic, reads the model: S_avg's chunks of z go through it
        return z * m(z).softmax(1).gather(1, t[:, None])[:, :, None, None]

    return SimpleNamespace(model=model, x=x, a=a, labels=labels, kfold=kfold, maps=maps, kmaps=kmaps, boxes=boxes,
                           grid=grid,
                           masks=a.sum(1) > 0, explainer=explainer, order=torch.randperm(4, generator=g).repeat(4, 1),
                           predictions=torch.randint(0, 3, (3, 6), generator=g), map_labels=torch.arange(6) % 3,
                           folds=torch.arange(6) % 3,
                           partners=crossfold.shuffled_partners(torch.ones(6, dtype=torch.bool), generator=0))


def _metric(**kw):
    """The metric call shape: (model, x, attributions, **kw)."""
    return lambda e: ((e.model, e.x, e.a), kw)


def _assembled(chunks, e) -> torch.Tensor:
    """Few-class's candidate chunks put together as ``(B, V, C, H, W)``; every cell must be filled once."""
    out, seen = None, torch.zeros(e.x.shape[0], len(e.grid), dtype=torch.long)
    for b0, b1, v0, v1, c in chunks:
        if out is None:
            out = c.new_zeros(e.x.shape[0], len(e.grid), *c.shape[2:])
        out[b0:b1, v0:v1] = c
        seen[b0:b1, v0:v1] += 1
    assert bool((seen == 1).all()), "the chunks do not cover every (image, candidate) once"
    return out


def _saliency(model, inputs, target):
    return fl.explainers.explain(model, inputs, target, method="saliency")


def _reco(e):
    return (e.maps, e.predictions, e.map_labels, e.folds), {"channel_dim": -3}


def _kfold(e):
    return (e.kfold.models, e.x, e.kmaps), {"folds": e.kfold.folds, "labels": e.labels, "channel_dim": -3}


def _few(e):
    return (e.model, e.x, e.a), {"grid": e.grid}


def _savg(e):
    return (e.model, e.x, None), {"explainer": e.explainer, "n_neighbours": 3, "generator": 0}


_TRACE = {"edge": 2}  # 4 patches of 4×4 on the 8×8 images (24 orders: the complete search stays small)
_FID = _metric(sparsity=(0.25, 0.5), alpha=0.5, n_samples=2, generator=0)
_MU = _metric(n_subsets=5, generator=0)

CASES: dict[str, Callable[[SimpleNamespace], tuple[tuple, dict]]] = {
    "baselines.mu_fidelity": _MU, "baselines.mu_fidelity_details": _MU,
    "baselines.average_stability": _savg, "baselines.average_stability_details": _savg,
    "consistency.saco": _metric(k=4), "consistency.saco_details": _metric(k=4),
    "crossfold.pair_distances": _reco,
    "crossfold.shuffled_distances": lambda e: ((e.maps, e.folds, e.partners), {"channel_dim": -3}),
    "crossfold.reco_mege_from_predictions": _reco, "crossfold.reco_mege_details_from_predictions": _reco,
    "crossfold.reco_mege": _kfold, "crossfold.reco_mege_details": _kfold,
    "crossfold.reco_mege_of_explainer": lambda e: ((e.kfold.models, e.x, _saliency),
                                                   {"folds": e.kfold.folds, "labels": e.labels, "channel_dim": -3}),
    "cumulative.auc_accuracy": _metric(), "cumulative.auc_accuracy_details": _metric(),
    "cumulative.aopc": _metric(), "cumulative.aopc_details": _metric(),
    "cumulative.log_odds": _metric(), "cumulative.log_odds_details": _metric(),
    "cumulative.comprehensiveness": _metric(), "cumulative.comprehensiveness_details": _metric(),
    "cumulative.morf_details": lambda e: ((e.model, e.x, e.a), {"labels": e.labels}),
    "blurs.candidates": lambda e: ((e.x,), {"grid": e.grid}),
    "fidelity.predicted_class": lambda e: ((e.model, e.x), {}),
    "fidelity.select_perturbation": lambda e: ((e.model, e.x), {"grid": e.grid, "progress": False}),
    "fidelity.fewclass_fid": _few, "fidelity.fewclass_fid_details": _few,
    "scores.fid_plus": _FID, "scores.fid_plus_details": _FID,
    "scores.fid_minus": _FID, "scores.fid_minus_details": _FID,
    "explanation_infidelity.infidelity": _metric(n_perturb_samples=4),
    "explanation_infidelity.infidelity_details": _metric(n_perturb_samples=4),
    "road_curves.road": _metric(fractions=(0.25, 0.5)), "road_curves.road_details": _metric(fractions=(0.25, 0.5)),
    "road_curves.road_morf": _metric(fractions=(0.5,)), "road_curves.road_lerf": _metric(fractions=(0.5,)),
    "localisation.localisation_iou": lambda e: ((e.a, e.boxes), {}),
    "localisation.dice_curve": lambda e: ((e.a, e.masks), {"percents": (10, 50, 90)}),
    "localisation.localisation_dice": lambda e: ((e.a, e.masks), {"percents": (10, 50, 90)}),
    "trajectories.deletion_curve": lambda e: ((e.model, e.x, e.order), _TRACE),
    "trajectories.insertion_curve": lambda e: ((e.model, e.x, e.order), _TRACE),
    "trajectories.trajectory_scores": lambda e: ((e.model, e.x, e.order), _TRACE),
    "trajectories.trajectory_scores_details": lambda e: ((e.model, e.x, e.order), _TRACE),
    "trajectories.lerf_morf": _metric(**_TRACE), "trajectories.lerf_morf_details": _metric(**_TRACE),
    "greedy_search.greedy": lambda e: ((e.model, e.x), _TRACE),
    "annealing.anneal": lambda e: ((e.model, e.x), {**_TRACE, "iterations": 3, "generator": 0, "progress": False}),
    "genetic_algorithm.genetic": lambda e: ((e.model, e.x), {**_TRACE, "population": 4, "generations": 2, "generator": 0,
                                                        "progress": False}),
    "tabu_search.tabu": lambda e: ((e.model, e.x), {**_TRACE, "iterations": 3, "n_neighbours": 2, "generator": 0,
                                                     "progress": False}),
    "complete.complete_search": lambda e: ((e.model, e.x), _TRACE),
    "random_orders.random_deletion_curves": lambda e: ((e.model, e.x), {**_TRACE, "n_orders": 3, "generator": 0}),
}
"""The arguments of a tiny call of each function, by ``"module.name"``."""

POST: dict[str, Callable] = {"blurs.candidates": _assembled}
"""How to read a result that is not a value (an iterator of chunks) before comparing."""


@pytest.fixture(autouse=True)
def _fresh_caches():
    autobatch.clear_cache()
    fewclass.clear_cache()
    yield
    autobatch.clear_cache()
    fewclass.clear_cache()


def _run(name: str, e: SimpleNamespace, batch_size):
    args, kwargs = CASES[name](e)
    fewclass.clear_cache()  # the selection is remembered: each call must search
    result = FUNCTIONS[name](*args, **kwargs, batch_size=batch_size)
    return POST[name](result, e) if name in POST else result


def _assert_same(got, want, where: str = "result") -> None:
    """got equals want: tensors to float tolerance (NaN where NaN), dicts, dataclasses and sequences item by item."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{where}: {type(got).__name__} instead of a tensor"
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7, equal_nan=True, msg=lambda m: f"{where}: {m}")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys {list(got)} vs {list(want)}"
        for k in want:
            _assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif dataclasses.is_dataclass(want):
        assert type(got) is type(want), f"{where}: {type(got).__name__} vs {type(want).__name__}"
        for f in dataclasses.fields(want):
            _assert_same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{where}: length {len(got)} vs {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-7), \
            f"{where}: {got} vs {want}"
    else:
        assert got == want, f"{where}: {got!r} vs {want!r}"


# ------------------------------------------------------------------------------------------------------- the tests
def test_the_introspection_finds_the_known_functions():
    """The search itself works: the functions of every family are found (a broken search would pass everything)."""
    for name in ("scores.fid_plus", "fidelity.select_perturbation", "blurs.candidates", "baselines.mu_fidelity",
                 "crossfold.pair_distances", "localisation.dice_curve", "consistency.saco", "trajectories.lerf_morf"):
        assert name in FUNCTIONS
    assert {m.function for m in registry.METRICS.values() if m.function is not None} <= set(FUNCTIONS.values())


def test_every_function_with_batch_size_has_a_case():
    missing = sorted(set(FUNCTIONS) - set(CASES))
    assert not missing, f"add a tiny call of {missing} to CASES in {__file__}"
    stale = sorted(set(CASES) - set(FUNCTIONS))
    assert not stale, f"CASES names functions that no longer take batch_size: {stale}"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_auto_gives_the_results_of_a_fixed_size(name):
    if name not in CASES:
        pytest.fail(f"{name} takes batch_size but has no entry in CASES")
    e = _env()
    fixed = _run(name, e, FIXED)
    _assert_same(_run(name, e, "auto"), fixed)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_auto_gives_the_same_results_when_it_picks_small_sizes(name, monkeypatch):
    """"auto" resolved to sizes smaller than the call (2 or 3 forward inputs, a map or two per chunk) chunks the
    work for real, and still gives a single chunk's results."""
    if name not in CASES:
        pytest.fail(f"{name} takes batch_size but has no entry in CASES")
    e = _env()
    whole = _run(name, e, 100_000)
    monkeypatch.setattr(autobatch, "CANDIDATES", (2, 3))
    monkeypatch.setattr(autobatch, "resolve", lambda bs, model, x, n: 2 if bs == "auto" else bs)
    monkeypatch.setattr(autobatch, "MAP_ELEMENTS", 130)  # 2 maps of 8×8, or 1 sample of anything bigger
    _assert_same(_run(name, e, "auto"), whole)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_a_bad_batch_size_is_an_error_naming_it(name, bad):
    if name not in CASES:
        pytest.fail(f"{name} takes batch_size but has no entry in CASES")
    with pytest.raises((TypeError, ValueError), match="batch_size"):
        _run(name, _env(), bad)


def test_map_only_functions_size_auto_chunks_by_elements():
    """Functions that call no model (localisation, ReCo/MeGe's ranks, Few-class's candidates) have no forward pass
    to time: "auto" is as many samples as MAP_ELEMENTS elements hold, at least one; an int is kept."""
    chunk = autobatch.map_chunk
    assert chunk("auto", 64) == autobatch.MAP_ELEMENTS // 64
    assert chunk("auto", 3 * 224 * 224) == autobatch.MAP_ELEMENTS // (3 * 224 * 224) >= 1
    assert chunk("auto", 10 * autobatch.MAP_ELEMENTS) == 1
    assert chunk(5, 10 * autobatch.MAP_ELEMENTS) == 5
    with pytest.raises(ValueError, match="chunk"):
        chunk(0, 64, "chunk")


def test_average_stability_explains_in_chunks_of_the_resolved_size(monkeypatch):
    """S_avg's "auto": resolved once per call, for the model on x and the B·(n_neighbours + 1) inputs it explains;
    every explainer call then gets at most that many inputs."""
    e = _env()
    asked, sizes = [], []
    monkeypatch.setattr(autobatch, "resolve", lambda bs, model, x, n: asked.append((bs, model, x, n)) or 5)

    def explainer(m, z, t):
        sizes.append(z.shape[0])
        return e.explainer(m, z, t)

    fixed = fl.metrics.average_stability(e.model, e.x, explainer=explainer, n_neighbours=3, batch_size=5)
    sizes.clear()
    asked.clear()
    auto = fl.metrics.average_stability(e.model, e.x, explainer=explainer, n_neighbours=3, batch_size="auto")
    assert len(asked) == 1 and asked[0][0] == "auto" and asked[0][1] is e.model and asked[0][2] is e.x
    assert asked[0][3] == 4 * (3 + 1)
    assert max(sizes) == 5 and sum(sizes) == 4 * (3 + 1)
    _assert_same(auto, fixed)

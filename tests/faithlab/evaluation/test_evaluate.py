"""fl.evaluate: the same numbers as the individual metric calls, shared work (counted model calls), oracles,
invariance and errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from oracles import LinearProb, evaluate_inputs, linear_kfold, small_cnn

import faithlab as fl
from faithlab.metrics.papers import trace
from faithlab.metrics.papers.saco import cumulative

SPARSITY = (0.25, 0.5, 0.75)
OPTIONS = dict(sparsity=SPARSITY, n_samples=3, n_subsets=12, n_neighbours=3, saco_k=4, edge=4, seed=3,
               progress=False)


def _explain(model, inputs, target):
    return fl.explainers.explain(model, inputs, target, method="saliency")


def _setup(b: int = 6):
    model, x, y, maps = evaluate_inputs(b)
    tuned = small_cnn(in_channels=2, side=8, n_classes=3)
    with torch.no_grad():
        tuned[0].weight.mul_(1.5)  # a different model: FFid must read it, not the original
    return model, x, y, maps, tuned


def _scores(frame: pd.DataFrame, explainer: str, metric: str) -> torch.Tensor:
    rows = frame[(frame["explainer"] == explainer) & (frame["metric"] == metric)]
    return torch.tensor(rows["score"].to_numpy(), dtype=torch.float64)


def test_every_metric_equals_its_own_call():
    model, x, y, maps, tuned = _setup()
    kfold = linear_kfold(x)
    frame = fl.evaluate(model, x, y, maps, finetuned=tuned, explainer=_explain, kfold=kfold, **OPTIONS)
    assert set(frame["metric"]) == set(fl.evaluation.available())
    target = model(x).argmax(1)
    sel = fl.metrics.select_perturbation(model, x)["image"]
    for name, a in maps.items():
        expected = {
            "fid+": fl.metrics.fid_plus(model, x, a, target=y, sparsity=SPARSITY).mean(1),
            "fid-": fl.metrics.fid_minus(model, x, a, target=y, sparsity=SPARSITY).mean(1),
            "rfid+": fl.metrics.fid_plus(model, x, a, target=y, sparsity=SPARSITY, alpha=0.5, n_samples=3,
                                         generator=3).mean(1),
            "rfid-": fl.metrics.fid_minus(model, x, a, target=y, sparsity=SPARSITY, alpha=0.5, n_samples=3,
                                          generator=3).mean(1),
            "ffid+": fl.metrics.fid_plus(tuned, x, a, target=y, sparsity=SPARSITY, alpha=0.5, beta=0.1, n_samples=3,
                                         generator=3).mean(1),
            "ffid-": fl.metrics.fid_minus(tuned, x, a, target=y, sparsity=SPARSITY, alpha=0.5, beta=0.1, n_samples=3,
                                          generator=3).mean(1),
            "fewclass_fid": fl.metrics.fewclass_fid(model, x, a, perturbed=sel, generator=3),
            "saco": fl.metrics.saco(model, x, a, k=4),
            "auc_accuracy": fl.metrics.auc_accuracy(model, x, a, target=y),
            "aopc": fl.metrics.aopc(model, x, a),
            "log_odds": fl.metrics.log_odds(model, x, a),
            "comprehensiveness": fl.metrics.comprehensiveness(model, x, a),
            "mu_fidelity": fl.metrics.mu_fidelity(model, x, a, target=target, n_subsets=12, generator=3),
            "s_avg": fl.metrics.average_stability(model, x, explainer=_explain, target=target, n_neighbours=3,
                                                  generator=3),
        }
        d = trace.lerf_morf_details(model, x, a, edge=4)
        expected.update({"lerf": d["lerf_auc"], "morf": d["morf_auc"], "le-mo": d["lerf_morf"]})
        for metric, value in expected.items():
            got = _scores(frame, name, metric)
            assert got.shape == (x.shape[0],), metric
            torch.testing.assert_close(got, value.double(), rtol=0, atol=1e-12, equal_nan=True, msg=metric)
        preds = torch.stack([m(x).argmax(1) for m in kfold.models])
        stacked = torch.stack([_explain(m, x, p) for m, p in zip(kfold.models, preds)])
        rm = fl.metrics.reco_mege(kfold.models, x, stacked, folds=kfold.folds, labels=y)
        cost = fl.evaluation.cost(frame)
        assert cost.loc[cost["group"] == "reco_mege predictions", "forward_inputs"].tolist() == [3 * x.shape[0]]
        for metric in ("reco", "mege"):
            rows = frame[(frame["explainer"] == name) & (frame["metric"] == metric)]
            assert len(rows) == 1 and rows["sample"].isna().all() and (rows["level"] == "dataset").all()
            assert rows["score"].item() == pytest.approx(rm[metric], nan_ok=True)


def test_directions_papers_and_orientation():
    model, x, y, maps, _ = _setup()
    frame = fl.evaluate(model, x, y, maps["A"], metrics=["fid-", "aopc", "log_odds"], **OPTIONS)
    assert list(frame["explainer"].unique()) == ["explainer"]
    direction = frame.groupby("metric")["direction"].first().to_dict()
    assert direction == {"fid-": "lower is better", "aopc": "higher is better", "log_odds": "lower is better"}
    assert frame.groupby("metric")["paper"].first().to_dict() == {"fid-": "ffidelity", "aopc": "saco",
                                                                  "log_odds": "saco"}
    o = fl.evaluation.oriented(frame)
    lower = o["metric"].isin(["fid-", "log_odds"])
    assert (o.loc[lower, "oriented"] == -o.loc[lower, "score"]).all()
    assert (o.loc[~lower, "oriented"] == o.loc[~lower, "score"]).all()


class _Counter(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net, self.inputs, self.calls = net, 0, 0

    def forward(self, x):
        self.inputs += x.shape[0]
        self.calls += 1
        return self.net(x)


def test_shared_work_is_done_once():
    net, x, y, maps, _ = _setup(b=5)
    b, f = x.shape[0], len(cumulative.FRACTIONS)
    counter = _Counter(net).eval()
    frame = fl.evaluate(counter, x, y, maps, metrics=["auc_accuracy", "aopc", "log_odds"], **OPTIONS)
    # one clean pass for both explainers (it is every curve's first point), one pass of the fully removed images
    # (every MoRF curve's last point, whatever the map), then one MoRF curve of the F − 2 inner points per sample
    # and explainer (not three)
    # (+ 1: the default batch size reads the model's activations on one input, once per process, not counted as work)
    assert counter.inputs == b + b + len(maps) * b * (f - 2) + 1
    assert frame.attrs["forward_inputs"] == counter.inputs - 1
    cost = fl.evaluation.cost(frame)
    # the fully removed images count once, in their own row for every explainer, not for the curves that asked first
    assert cost.loc[cost["group"] == "morf", "forward_inputs"].tolist() == [b * (f - 2)] * len(maps)
    shared = cost.set_index(["group", "explainer"])["forward_inputs"]
    assert shared[("clean", "all")] == b and shared[("fully removed", "all")] == b
    assert cost["forward_inputs"].sum() == counter.inputs - 1
    assert cost.loc[cost["group"] == "morf", "metrics"].iloc[0] == "AUC, AOPC, LOdds"
    # the separate calls need three curves per explainer, plus their own clean read-outs of the prediction
    counter.inputs = 0
    for a in maps.values():
        fl.metrics.auc_accuracy(counter, x, a, target=y)
        fl.metrics.aopc(counter, x, a), fl.metrics.log_odds(counter, x, a)
    assert counter.inputs >= 3 * len(maps) * b * f

    # Few-class Fidelity's perturbation search runs once for every explainer
    counter.inputs = 0
    fl.evaluate(counter, x, y, maps, metrics=["fewclass_fid"], **OPTIONS)
    grid = len(fl.metrics.fewclass.QUICK_GRID)
    n = x.shape[-1] * x.shape[-2]
    inner = len({round(f * n) for f in fl.metrics.fewclass.FRACTIONS} - {0, n})  # a count that recurs runs once
    # (+1 and +1 per explainer: the search and each Fid call read the number of classes on one input); the clean
    # images are the clean pass's, the fully perturbed ones go through the model once for both curves of both maps
    assert counter.inputs == b + (b * grid + 1) + b + len(maps) * (b * 2 * inner + 1)


def test_oracle_true_map_scores_ideal():
    # p(class 0 | x) = q0 + Σ β x on all-ones inputs: removing a set lowers p by Σβ over it, exactly, so the true map
    # β is perfectly faithful: SaCo = 1 and μF (Pearson of Σβ over subsets vs the drops) = 1; its reversal SaCo = −1
    g = torch.Generator().manual_seed(0)
    beta = torch.rand(36, generator=g, dtype=torch.float64) * 0.02
    model = LinearProb(beta, q0=0.3)
    x = torch.ones(4, 1, 6, 6, dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.int64)
    truth = beta.view(1, 1, 6, 6).expand(4, 1, 6, 6)
    frame = fl.evaluate(model, x, y, {"truth": truth, "reversed": -truth}, metrics=["saco", "mu_fidelity"],
                        reference="zero", saco_k=6, n_subsets=30, progress=False)
    assert _scores(frame, "truth", "saco").tolist() == pytest.approx([1.0] * 4)
    assert _scores(frame, "reversed", "saco").tolist() == pytest.approx([-1.0] * 4)
    assert _scores(frame, "truth", "mu_fidelity").tolist() == pytest.approx([1.0] * 4)
    assert _scores(frame, "reversed", "mu_fidelity").tolist() == pytest.approx([-1.0] * 4)


def test_batch_size_and_chunks():
    model, x, y, maps, tuned = _setup(b=7)
    metrics = ["fid+", "rfid-", "saco", "aopc", "mu_fidelity", "le-mo"]
    one = fl.evaluate(model, x, y, maps, metrics=metrics, batch_size=256, **OPTIONS)
    other = fl.evaluate(model, x, y, maps, metrics=metrics, batch_size=5, **OPTIONS)
    # another batch size gives the model other batch shapes, which change its float32 matmul summation order: equal
    # to float32 tolerance (torch's defaults), not bitwise. ΣLeRF − ΣMoRF is a difference of two sums of 17
    # probabilities, so its rounding scales with those sums (differences near 1e-6 seen on AVX2 and SSE CPUs)
    pd.testing.assert_frame_equal(one, other, check_exact=False, rtol=1.3e-6, atol=1e-5)
    chunked = fl.evaluate(model, x, y, maps, metrics=metrics, chunk_size=4, **OPTIONS)
    # no metric depends on the chunks, the random ones included (draws keyed to the global sample index); a chunk of
    # 4 samples sends the model other batch shapes than all 7: equal to float32 tolerance, not bitwise (the scores
    # are float32 results read as float64, so float64's default tolerance is too tight)
    for metric in metrics:
        torch.testing.assert_close(_scores(chunked, "A", metric), _scores(one, "A", metric), rtol=1.3e-6, atol=1e-5)
    # and a chunk equals the metric's own call with the chunk's global indices (not without: other draws)
    a = maps["A"]
    part = fl.metrics.fid_minus(model, x[4:], a[4:], target=y[4:], sparsity=SPARSITY, alpha=0.5, n_samples=3,
                                generator=3, sample_index=torch.arange(4, 7)).mean(1)
    torch.testing.assert_close(_scores(chunked, "A", "rfid-")[4:], part.double())
    moved = fl.metrics.fid_minus(model, x[4:], a[4:], target=y[4:], sparsity=SPARSITY, alpha=0.5, n_samples=3,
                                 generator=3).mean(1)
    assert not torch.allclose(_scores(chunked, "A", "rfid-")[4:], moved.double())
    assert chunked["sample"].tolist() == one["sample"].tolist()


def test_s_avg_passes_seeds_to_an_explainer_that_takes_them_and_ignores_chunks():
    model, x, y, maps, _ = _setup(b=5)
    target = model(x).argmax(1)

    def smoothgrad(m, inputs, t, seeds=None):
        return fl.explainers.explain(m, inputs, t, method="smoothgrad", generator=0, sample_seeds=seeds, nt_samples=3)
    # radius 10 (u_i ≤ 10/128): the ReLU net's gradients change within it, so S_avg with common noise is not 0
    options = {**OPTIONS, "metrics": ["s_avg"], "radius": 10.0}
    one = fl.evaluate(model, x, y, maps["A"], explainer=smoothgrad, **options)
    direct = fl.metrics.average_stability(model, x, explainer=smoothgrad, target=target,
                                          n_neighbours=3, radius=10.0, generator=3)
    torch.testing.assert_close(_scores(one, "explainer", "s_avg"), direct)
    assert bool((direct > 0).all())
    # a callable without seeds cannot share its noise: its S_avg holds SmoothGrad's Monte-Carlo noise too
    fresh = fl.evaluate(model, x, y, maps["A"], explainer=lambda m, i, t: smoothgrad(m, i, t), **options)
    assert bool((_scores(fresh, "explainer", "s_avg") > 5 * direct).all())
    # global sample indices: chunks of 2 give the same neighbours and seeds (other batch shapes: float32 tolerance)
    chunked = fl.evaluate(model, x, y, maps["A"], explainer=smoothgrad, chunk_size=2, **options)
    torch.testing.assert_close(_scores(chunked, "explainer", "s_avg"), direct, rtol=1e-4, atol=1e-9)


def test_default_metrics_follow_the_arguments():
    model, x, y, maps, tuned = _setup()
    plain = set(fl.evaluate(model, x, y, maps["A"], **OPTIONS)["metric"])
    needs = {m for m, i in fl.evaluation.METRICS.items() if i.needs and i.needs != ("images",)}
    assert plain == set(fl.evaluation.available()) - needs
    series = torch.randn(3, 10, 2)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(20, 2)).eval()
    got = set(fl.evaluate(net, series, torch.zeros(3, dtype=torch.int64), torch.randn(3, 10, 2),
                          **{**OPTIONS, "edge": None})["metric"])
    assert got == plain - {m for m, i in fl.evaluation.METRICS.items() if "images" in i.needs}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"metrics": ["nope"]}, ValueError, "metrics: unknown metric 'nope'"),
    ({"metrics": "saco"}, TypeError, "metrics must be a list"),
    ({"metrics": ["ffid+"]}, ValueError, r"'ffid\+' needs finetuned="),
    ({"metrics": ["s_avg"]}, ValueError, "'s_avg' needs explainer="),
    ({"metrics": ["reco"], "explainer": _explain}, ValueError, "'reco' needs kfold="),
    ({"explainer": 3}, TypeError, "explainer must be a callable"),
    ({"explainer": {"Z": _explain}}, ValueError, r"explainer names explainers \['Z'\]"),
    ({"finetuned": small_cnn(2, 8, 3), "finetune": lambda: None}, ValueError, "not both"),
    ({"kfold": object()}, TypeError, "kfold must have .models"),
    ({"sparsity": [0.5, 1.5]}, ValueError, "sparsity"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"seed": 1.5}, TypeError, "seed must be an int"),
    ({"perturbed": torch.zeros(2, 2, 8, 8)}, ValueError, "perturbed must have x's shape"),
])
def test_bad_arguments_name_the_argument(kwargs, error, match):
    model, x, y, maps, _ = _setup()
    with pytest.raises(error, match=match):
        fl.evaluate(model, x, y, maps, **{**OPTIONS, **kwargs})


def test_bad_inputs_and_nan_models():
    model, x, y, maps, _ = _setup()
    with pytest.raises(ValueError, match=r"attributions\['A'\]"):
        fl.evaluate(model, x, y, {"A": torch.randn(6, 3, 5, 5)}, **OPTIONS)
    with pytest.raises(TypeError, match="y must be an int64"):
        fl.evaluate(model, x, y.float(), maps, **OPTIONS)
    with pytest.raises(ValueError, match="edge"):
        fl.evaluate(model, torch.randn(6, 2, 9, 9), y, torch.randn(6, 2, 9, 9), metrics=["lerf"],
                    **{**OPTIONS, "edge": None})

    class NaNModel(torch.nn.Module):
        def forward(self, inputs):
            out = model(inputs)
            return torch.where(inputs.flatten(1)[:, :1] > 10, math.nan, out)  # NaN only for the removal value

    x_nan = x.clone()
    with pytest.raises(ValueError, match="NaN or inf"):
        fl.evaluate(NaNModel().eval(), x_nan, y, maps, metrics=["saco"], reference=torch.full_like(x, 20.0),
                    **OPTIONS)
    with pytest.raises(ValueError, match="NaN or inf"):
        fl.evaluate(lambda inputs: torch.full((inputs.shape[0], 3), math.nan), x, y, maps, metrics=["aopc"],
                    **OPTIONS)


@pytest.mark.parametrize("kwargs, match", [
    ({"metrics": ["saco"], "saco_k": 65}, r"^saco_k must be at most the number of units of x \(64\), got 65"),
    ({"metrics": ["fewclass_fid"], "fewclass_fractions": [0.0, 1.5]}, r"^fewclass_fractions must lie in \[0, 1\]"),
    ({"metrics": ["fewclass_fid"], "fewclass_fractions": [0.5, 0.2]}, "^fewclass_fractions must be strictly "),
    ({"metrics": ["s_avg"], "explainer": _explain, "radius": math.inf}, "^radius must be a positive finite"),
    ({"metrics": ["s_avg"], "explainer": _explain, "radius": 0.0}, "^radius must be a positive finite"),
    ({"metrics": ["s_avg"], "explainer": _explain, "radius": math.nan}, "^radius must be a number"),
])
def test_bad_metric_options_are_named_as_evaluate_s_options(kwargs, match):
    """The option of evaluate is named (saco_k, fewclass_fractions, radius), not the metric function's own
    argument (k, fractions) or the inputs a bad radius spoils (x contains NaN or inf)."""
    model, x, y, maps, _ = _setup()
    with pytest.raises(ValueError, match=match):
        fl.evaluate(model, x, y, maps, **{**OPTIONS, **kwargs})


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_reco_mege_names_an_explainer_returning_non_finite_maps(bad):
    """NaN maps would drop out of S= and S≠ and leave a NaN ReCo/MeGe (S_avg raises for the same explainer)."""
    model, x, y, maps, _ = _setup()

    def spoilt(m, inputs, target):
        out = _explain(m, inputs, target)
        return torch.where(torch.arange(inputs.shape[0])[:, None, None, None] == 1, bad, out)

    with pytest.raises(ValueError, match=r"^explainer 'A' returned NaN or inf maps on kfold\.models\[0\] for "
                                         r"samples \[1\]"):
        fl.evaluate(model, x, y, {"A": maps["A"]}, metrics=["reco", "mege"], explainer=spoilt, kfold=linear_kfold(x),
                    **OPTIONS)


def test_fewclass_fid_warns_about_constant_maps_through_evaluate():
    model, x, y, maps, _ = _setup()
    with pytest.warns(fl.perturb.ConstantMapWarning, match=r"for 6 of 6 sample"):
        fl.evaluate(model, x, y, {"Z": torch.zeros_like(maps["A"])}, metrics=["fewclass_fid"], **OPTIONS)


def test_fewclass_search_gets_the_normalisation_and_equals_the_direct_call():
    """With ``normalisation`` evaluate's own candidate search runs on pixel values (issue 32), as the direct call
    with the same argument; without it the search (on normalised values) picks other images for these inputs."""
    model, x, y, maps, _ = _setup(b=5)
    norm = ((0.4,), (0.2,))
    kw = {"metrics": ["fewclass_fid"], "progress": False, "seed": 2}
    frame = fl.evaluate(model, x, y, maps["A"], normalisation=norm, **kw)
    sel = fl.metrics.select_perturbation(model, x, normalisation=norm)["image"]
    direct = fl.metrics.fewclass_fid(model, x, maps["A"], perturbed=sel, generator=2)
    torch.testing.assert_close(torch.tensor(frame["score"].to_numpy(), dtype=torch.float64), direct.double())
    plain = fl.evaluate(model, x, y, maps["A"], **kw)
    assert frame["score"].tolist() != plain["score"].tolist()


def test_a_patch_grid_that_does_not_divide_the_images_is_refused_before_any_work():
    model, x, y, maps, _ = _setup()
    counter = {"calls": 0}

    def counted(inputs):
        counter["calls"] += 1
        return model(inputs)

    with pytest.raises(ValueError, match="edge=3 must divide the height and width"):
        fl.evaluate(counted, x, y, maps, metrics=["le-mo"], **{**OPTIONS, "edge": 3})
    assert counter["calls"] == 0


def test_auto_batch_size_gives_the_frame_of_a_fixed_one():
    """``batch_size="auto"`` is accepted by evaluate and every metric it runs (ReCo/MeGe's explainer chunks too)."""
    from faithlab.perturb import autobatch

    model, x, y, maps, tuned = _setup()
    kfold = linear_kfold(x)
    fixed = fl.evaluate(model, x, y, maps, finetuned=tuned, explainer=_explain, kfold=kfold, batch_size=5,
                        **OPTIONS)
    autobatch.clear_cache()
    auto = fl.evaluate(model, x, y, maps, finetuned=tuned, explainer=_explain, kfold=kfold, batch_size="auto",
                       **OPTIONS)
    assert set(auto["metric"]) == set(fl.evaluation.available())
    keys = ["explainer", "metric", "sample"]
    a, f = (frame.sort_values(keys, na_position="first").reset_index(drop=True) for frame in (auto, fixed))
    assert a[keys].equals(f[keys])
    torch.testing.assert_close(torch.tensor(a["score"].to_numpy()), torch.tensor(f["score"].to_numpy()),
                               rtol=1e-5, atol=1e-6, equal_nan=True)
    with pytest.raises(ValueError, match="batch_size"):
        fl.evaluate(model, x, y, maps, metrics=["aopc"], batch_size="fast", progress=False)

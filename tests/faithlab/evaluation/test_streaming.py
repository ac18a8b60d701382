"""fl.evaluate over an iterable of batches (a DataLoader): the same frame as one in-memory call for every registered
metric, whatever the split; every metric's randomness keyed by the global sample index; rows written as they come;
the cost estimate equal to the counts of real evaluations."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from oracles import linear_kfold, small_cnn
from torch.utils.data import DataLoader, TensorDataset

import faithlab as fl
from faithlab.metrics.registry import METRICS, Context

OPTIONS = dict(sparsity=(0.25, 0.5), n_samples=3, n_subsets=12, n_neighbours=3, saco_k=4, edge=4, seed=5,
               fewclass_fractions=[0.0, 0.25, 0.5, 0.75, 1.0], progress=False)
N = 7


def _explain(model, inputs, target):
    return fl.explainers.explain(model, inputs, target, method="saliency")


def _noisy(model, inputs, target, seeds=None):
    """A stochastic explainer that takes per-sample seeds (the explainer contract): SmoothGrad."""
    return fl.explainers.explain(model, inputs, target, method="smoothgrad", nt_samples=3, generator=0,
                                 sample_seeds=seeds)


def _setup():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(11)
    x = torch.randn(N, 2, 8, 8, generator=g)
    y = torch.randint(0, 3, (N,), generator=g)
    maps = {"A": torch.randn(N, 2, 8, 8, generator=g), "B": torch.randn(N, 1, 8, 8, generator=g).abs()}
    tuned = small_cnn(in_channels=2, side=8, n_classes=3)
    with torch.no_grad():
        tuned[0].weight.mul_(1.5)
    return model, x, y, maps, tuned


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The same frame: every label column equal, every score equal to float32 tolerance. Another split sends the model
    (and a gradient explainer) other batch shapes, which change a float32 convolution's summation order in the last bits
    (as tests/faithlab/evaluation/test_evaluate.py::test_batch_size_and_chunks documents); a keying error moves random
    scores by orders of magnitude more (a draw keyed to the position instead of the sample fails these tests)."""
    cols = ["explainer", "sample", "metric", "label", "paper", "level", "higher_is_better", "direction"]
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    pd.testing.assert_frame_equal(a[cols], b[cols], check_exact=True)
    torch.testing.assert_close(torch.tensor(a["score"].to_numpy()), torch.tensor(b["score"].to_numpy()),
                               rtol=1.3e-6, atol=1e-5, equal_nan=True)


def test_a_dataloader_of_uneven_batches_gives_the_in_memory_frame_for_every_metric():
    model, x, y, maps, tuned = _setup()
    kfold = linear_kfold(x)
    common = dict(finetuned=tuned, explainer=_explain, kfold=kfold, **OPTIONS)
    whole = fl.evaluate(model, x, y, maps, **common)
    assert set(whole["metric"]) == set(fl.evaluation.available())   # every registered metric is compared
    batches = [{"x": x[b0:b1], "y": y[b0:b1], "attributions": {k: v[b0:b1] for k, v in maps.items()}}
               for b0, b1 in ((0, 3), (3, 4), (4, 7))]
    streamed = fl.evaluate(model, batches, **common)
    _same(whole, streamed)
    # the random metrics do draw: a different seed changes them, so the equality above is not one of constants
    other = fl.evaluate(model, batches, **{**common, "seed": 6})
    moved = {m for m in set(whole["metric"]) if not whole[whole["metric"] == m]["score"].reset_index(drop=True)
             .equals(other[other["metric"] == m]["score"].reset_index(drop=True))}
    assert {"rfid-", "ffid+", "ffid-", "mu_fidelity"} <= moved  # (RFid+ happens to be 0 on every seed here)


def _keyed_noise(model, inputs, target, seeds=None):
    """A stochastic explainer whose maps are a function of the sample's seed alone (no gradient: exact whatever the
    batch composition)."""
    return torch.stack([torch.rand(inputs.shape[1:], generator=torch.Generator().manual_seed(int(s)))
                        for s in seeds.tolist()])


@pytest.mark.parametrize("batch_size,chunk_size", [(1, None), (2, None), (4, 3), (7, 2)])
def test_explainers_map_the_batches_with_seeds_keyed_to_the_sample(batch_size, chunk_size):
    model, x, y, _, _ = _setup()
    explainers = {"keyed noise": _keyed_noise, "saliency": _explain, "smoothgrad": _noisy}
    metrics = ["fid+", "rfid+", "mu_fidelity", "saco", "le-mo", "s_avg"]
    whole = fl.evaluate(model, x, y, explainer=explainers, metrics=metrics, **OPTIONS)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size)
    streamed = fl.evaluate(model, loader, explainer=explainers, metrics=metrics, chunk_size=chunk_size, **OPTIONS)
    _same(whole, streamed)
    c = fl.evaluation.cost(streamed)
    assert c[c["group"] == "maps"]["explained_inputs"].tolist() == [N, N, N]
    # the seeds are the samples' own: another seed gives other maps, and so other scores
    other = fl.evaluate(model, loader, explainer=explainers, metrics=["mu_fidelity"], **{**OPTIONS, "seed": 9})
    mine = whole[(whole["explainer"] == "keyed noise") & (whole["metric"] == "mu_fidelity")]["score"]
    assert not other[other["explainer"] == "keyed noise"]["score"].reset_index(drop=True).equals(
        mine.reset_index(drop=True))


def test_global_indices_of_the_batches_are_the_frames_samples_and_key_the_draws():
    model, x, y, maps, _ = _setup()
    whole = fl.evaluate(model, x, y, maps, metrics=["rfid+", "mu_fidelity"], **OPTIONS)
    # the last four samples alone, with their global indices: the whole's rows
    tail = [{"x": x[4:], "y": y[4:], "index": torch.arange(4, 7), "attributions": {k: v[4:] for k, v in maps.items()}}]
    part = fl.evaluate(model, tail, metrics=["rfid+", "mu_fidelity"], **OPTIONS)
    _same(whole[whole["sample"] >= 4], part)
    # numbered from 0 instead, μF draws other subsets: the index is what keys the draws
    renumbered = fl.evaluate(model, [{k: v for k, v in tail[0].items() if k != "index"}],
                             metrics=["mu_fidelity"], **OPTIONS)
    assert not torch.equal(torch.tensor(renumbered["score"].to_numpy()),
                           torch.tensor(whole[(whole["metric"] == "mu_fidelity") & (whole["sample"] >= 4)]
                                        ["score"].to_numpy()))


@pytest.mark.parametrize("name", [m for m in METRICS if METRICS[m].level == "sample" and METRICS[m].function])
def test_every_metrics_own_call_on_a_slice_with_its_global_indices_gives_the_wholes_rows(name):
    model, x, y, maps, tuned = _setup()
    metric = METRICS[name]
    values = fl.metrics.registry.check_options({k: v for k, v in OPTIONS.items() if k != "progress"}, [name], x)
    target = model(x).argmax(1)
    perturbed = fl.metrics.select_perturbation(model, x)["image"] if metric.uses else None

    def ctx(rows):
        return Context(model=tuned if metric.model == "finetuned" else model, x=x[rows], labels=y[rows],
                       target=target[rows], attributions=maps["A"][rows], name="A",
                       explainer=_noisy if "explainer" in metric.needs else None,
                       sample_index=torch.arange(N)[rows], options=values, batch_size=3, user_model=model,
                       inputs={} if perturbed is None else {"fewclass selection": perturbed[rows]})

    whole = metric.call(ctx(slice(None)))
    part = metric.call(ctx(slice(4, None)))
    torch.testing.assert_close(whole[4:].double(), part.double(), rtol=1.3e-6, atol=1e-5, equal_nan=True)


def test_mu_fidelity_of_the_last_samples_with_their_indices_equals_the_whole():
    # the case: μF of sample 4 in a call over 8 images and in a call over the last 4
    model, x, _, maps, _ = _setup()
    a = maps["A"]
    whole = fl.metrics.mu_fidelity(model, x, a, n_subsets=20, generator=0)
    part = fl.metrics.mu_fidelity(model, x[4:], a[4:], n_subsets=20, generator=0, sample_index=torch.arange(4, N))
    torch.testing.assert_close(whole[4:], part, rtol=1.3e-6, atol=1e-5)
    positional = fl.metrics.mu_fidelity(model, x[4:], a[4:], n_subsets=20, generator=0)
    assert (whole[4:] - positional).abs().max() > 1e-2  # without the indices the slice's samples get other draws


def test_labels_default_to_the_models_predictions():
    model, x, _, maps, _ = _setup()
    yhat = model(x).argmax(1)
    _same(fl.evaluate(model, x, None, maps, metrics=["fid+", "auc_accuracy"], **OPTIONS),
          fl.evaluate(model, x, yhat, maps, metrics=["fid+", "auc_accuracy"], **OPTIONS))
    loader = DataLoader(TensorDataset(x), batch_size=3)  # batches of (x,): no labels
    _same(fl.evaluate(model, loader, explainer=_explain, metrics=["fid+"], **OPTIONS),
          fl.evaluate(model, x, yhat, explainer=_explain, metrics=["fid+"], **OPTIONS))


def test_rows_are_written_as_chunks_finish_and_the_frame_at_the_end(tmp_path):
    model, x, y, maps, _ = _setup()
    path = tmp_path / "rows.csv"
    partial = tmp_path / "rows.csv.partial"
    seen = []

    def batches():
        for b0 in range(0, N, 3):
            if b0:  # the rows of the batches before are on disk before the next batch is read
                seen.append(len(pd.read_csv(partial)))
            yield {"x": x[b0:b0 + 3], "y": y[b0:b0 + 3], "attributions": {k: v[b0:b0 + 3] for k, v in maps.items()}}

    frame = fl.evaluate(model, batches(), metrics=["fid+", "saco"], rows=path, **OPTIONS)
    assert seen == [3 * 2 * 2, 6 * 2 * 2]  # samples × explainers × metrics so far
    assert not partial.exists()
    written = pd.read_csv(path)
    assert written["score"].tolist() == frame["score"].tolist()
    assert written["sample"].tolist() == frame["sample"].astype(int).tolist()


def test_a_failure_mid_stream_leaves_no_final_file_and_the_partial_rows(tmp_path):
    model, x, y, maps, _ = _setup()
    path = tmp_path / "rows.csv"

    def batches():
        yield {"x": x[:3], "y": y[:3], "attributions": {k: v[:3] for k, v in maps.items()}}
        yield {"x": x[3:], "y": torch.full_like(y[3:], 9), "attributions": {k: v[3:] for k, v in maps.items()}}

    with pytest.raises(ValueError, match="y holds class 9 \\(sample 3\\)"):
        fl.evaluate(model, batches(), metrics=["fid+"], rows=path, **OPTIONS)
    assert not path.exists()
    assert len(pd.read_csv(tmp_path / "rows.csv.partial")) == 3 * 2


def _bad(x, y, maps):
    a = {k: v[:3] for k, v in maps.items()}
    return {
        "samples of another shape": ([(x[:3], y[:3]), (x[3:, :1], y[3:])], {"explainer": _explain},
                                     "every batch must hold samples alike"),
        "labels on some batches": ([(x[:3], y[:3]), (x[3:],)], {"explainer": _explain}, "labels for every batch"),
        "a repeated index": ([{"x": x[:3], "y": y[:3], "index": torch.arange(3)},
                              {"x": x[3:6], "y": y[3:6], "index": torch.arange(2, 5)}], {"explainer": _explain},
                             "repeats the global sample indices \\[2\\]"),
        "no batch": ([], {"explainer": _explain}, "no batch"),
        "no maps and no explainer": ([(x[:3], y[:3])], {}, "pass explainer="),
        "maps and an explainer mapping them": ([{"x": x[:3], "y": y[:3], "attributions": a}],
                                               {"explainer": {"A": _explain, "B": _explain, "C": _explain}},
                                               "explainer names explainers \\['C'\\]"),
        "a batch of three": ([(x[:3], y[:3], y[:3])], {"explainer": _explain}, "a pair \\(x, y\\)"),
        "a mapping without x": ([{"inputs": x[:3]}], {"explainer": _explain}, "must have 'x'"),
        "a string": ("images/", {"explainer": _explain}, "iterable of batches"),
    }


@pytest.mark.parametrize("case", list(_bad(*_setup()[1:4])))
def test_bad_streams_are_refused_naming_the_batch_or_argument(case):
    model, x, y, maps, _ = _setup()
    data, kw, message = _bad(x, y, maps)[case]
    with pytest.raises((TypeError, ValueError), match=message):
        fl.evaluate(model, data, metrics=["fid+"], **kw, **OPTIONS)


def test_y_with_an_iterable_is_refused():
    model, x, y, _, _ = _setup()
    with pytest.raises(TypeError, match="come with the batches"):
        fl.evaluate(model, [x], y, explainer=_explain, **OPTIONS)


@pytest.mark.parametrize("shape,kw", [
    ((7, 2, 8, 8), dict(finetuned=True, explainer=True, kfold=3)),
    ((7, 2, 8, 8), dict(chunk_size=3, explainer=True)),
    ((5, 6, 3), dict(metrics=["fid+", "rfid-", "saco", "mu_fidelity", "aopc"], chunk_size=2)),
])
def test_the_estimate_equals_the_counts_of_a_real_evaluation(shape, kw):
    model = small_cnn(in_channels=2, side=8, n_classes=3) if len(shape) == 4 else torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(18, 3)).eval()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(shape, generator=g)
    y = torch.randint(0, 3, (shape[0],), generator=g)
    maps = {"A": torch.randn(shape, generator=g), "B": torch.randn(shape, generator=g)}
    real_kw = {k: v for k, v in kw.items() if k in ("metrics", "chunk_size")}
    if kw.get("finetuned"):
        real_kw["finetuned"] = model
    if kw.get("explainer"):
        real_kw["explainer"] = _explain
    if kw.get("kfold"):
        real_kw["kfold"] = linear_kfold(x)
    options = {k: v for k, v in OPTIONS.items() if k != "progress" and (len(shape) == 4 or k not in ("edge",))}
    frame = fl.evaluate(model, x, y, maps, progress=False, **real_kw, **options)
    real = fl.evaluation.cost(frame)
    est = fl.evaluation.estimate(shape, n_classes=3, explainers=["A", "B"], **kw, **options)
    merged = real.merge(est, on=["group", "explainer"], suffixes=("", "_est"), how="outer", indicator=True)
    assert (merged["_merge"] == "both").all(), merged
    assert merged["forward_inputs"].tolist() == merged["forward_inputs_est"].tolist()
    assert merged["explained_inputs"].tolist() == merged["explained_inputs_est"].tolist()
    assert est["forward_inputs"].sum() == frame.attrs["forward_inputs"]


def test_given_perturbed_images_are_read_by_global_index_in_a_stream():
    model, x, y, maps, _ = _setup()
    perturbed = fl.metrics.select_perturbation(model, x)["image"].flip(0)  # any image per sample: not the search's
    whole = fl.evaluate(model, x, y, maps, metrics=["fewclass_fid"], perturbed=perturbed, **OPTIONS)
    batches = [{"x": x[b0:b0 + 2], "y": y[b0:b0 + 2], "attributions": {k: v[b0:b0 + 2] for k, v in maps.items()}}
               for b0 in range(0, N, 2)]
    _same(whole, fl.evaluate(model, batches, metrics=["fewclass_fid"], perturbed=perturbed, **OPTIONS))
    with pytest.raises(ValueError, match="perturbed holds 5 images but the data has sample 5"):
        fl.evaluate(model, batches, metrics=["fewclass_fid"], perturbed=perturbed[:5], **OPTIONS)

"""``faithlab evaluate --estimate-only`` is fast and honest (issue 54, item 4): it runs no metric on the model (the
model inputs are counted on small stand-in images that take as many as the real ones, :func:`probe_shape`), it
times the model at the run's batch size and each explainer once, and a run reports its own estimate beside what it
measured, per metric group (``estimate.csv``, and ``cost.csv``'s group columns). A model with a fixed cost per input
(a sleep) makes the model's time dominate, so that the estimate's seconds can be checked against the run's."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import cli
from faithlab.evaluation.estimation import probe_shape
from oracles import Sleepy, image_folder


def _use(monkeypatch, model: nn.Module) -> None:
    monkeypatch.setattr(fl.models, "load", lambda spec, weights=None: model)


def _args(images: Path, out: Path, *extra: str) -> list[str]:
    return ["evaluate", "--model", "sleepy", "--random-weights", "--images", str(images), "--out", str(out),
            "--explainers", "saliency", "--maps", "0", "--no-sanity", "--yes", *extra]


def test_estimate_only_runs_no_metric_and_probes_smallimage_folder(tmp_path, monkeypatch, capsys):
    """At 160 px every default metric is counted (probing at 160 px itself took about 15 s): the stand-in images are
    32 px (TRACE's edge 4 kept), and the model sees only the timing calls, a small fraction of the run's inputs."""
    side, batch = 160, 8
    model = Sleepy(0.001, side)
    _use(monkeypatch, model)
    assert cli.main(_args(image_folder(tmp_path / "images", side), tmp_path / "out", "--estimate-only", "--batch-size",
                          str(batch))) == 0
    printed = capsys.readouterr().out
    assert "stand-in images of (3, 32, 32)" in printed and "median of 3 calls of 8 inputs" in printed
    # the model's calls: a warm-up and one timed call on the first chunk (4 images), a warm-up and 3 timed calls of
    # --batch-size inputs, and saliency's warm-up (1 image) and timed call (4 images), one forward pass each
    assert (model.calls, model.inputs) == (8, 4 + 4 + 4 * batch + 1 + 4)
    run = fl.evaluation.estimate((4, 3, side, side), n_classes=2, explainers=["saliency"], explainer=True,
                                 metrics=cli.arguments.choose_metrics(None, finetuned=False), chunk_size=batch)
    assert run["forward_inputs"].sum() > 50 * model.inputs  # the run's work, none of which was done
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("shape, kw", [
    ((2, 3, 56, 56), dict(finetuned=True)),  # TRACE's default edge 7: probed at 35 x 35
    ((2, 3, 40, 72), dict(metrics=["fid+", "rfid-", "fewclass_fid", "saco", "aopc", "comprehensiveness",
                                   "mu_fidelity", "s_avg"])),  # not square: no TRACE, probed at 24 x 43
    ((2, 1, 64, 64), dict(edge=8, saco_k=40, sparsity=[0.05, 0.1, 0.15], beta=0.3, finetuned=True)),
])
def test_the_small_probe_counts_what_the_full_size_counts(shape, kw):
    kw = {"n_samples": 2, "n_subsets": 3, "n_neighbours": 2, "explainer": True, **kw}
    small = fl.evaluation.estimate(shape, n_classes=3, explainers=["a", "b"], **kw)
    full = fl.evaluation.estimate(shape, n_classes=3, explainers=["a", "b"], shrink=False, **kw)
    assert small.attrs["probe_shape"][2] * small.attrs["probe_shape"][3] < shape[2] * shape[3] / 2
    assert full.attrs["probe_shape"] == shape
    pd.testing.assert_frame_equal(small, full)


def test_probe_shape_keeps_the_grid_and_enough_pixels():
    assert probe_shape((4, 3, 224, 224)) == (4, 3, 35, 35)  # edge 7
    assert probe_shape((4, 3, 224, 224), ["fid+"]) == (4, 3, 32, 32)  # no TRACE: any 1024 pixels
    assert probe_shape((4, 3, 160, 160)) == (4, 3, 32, 32)  # edge 4
    assert probe_shape((4, 3, 224, 224), edge=8) == (4, 3, 32, 32)
    assert probe_shape((4, 3, 224, 224), fewclass_fractions=[0, 0.001, 1]) == (4, 3, 70, 70)  # 4 / gap pixels
    assert probe_shape((4, 3, 224, 224), fewclass_fractions=[0, 0.00001, 1]) == (4, 3, 224, 224)  # none smaller
    assert probe_shape((4, 3, 30, 30)) == (4, 3, 30, 30)  # already small
    assert probe_shape((4, 3, 224, 224), reference=object()) == (4, 3, 224, 224)  # may be tied to the size
    assert probe_shape((4, 16, 3)) == (4, 16, 3)  # series: as they are


def test_the_run_reports_its_estimate_beside_what_it_measured(tmp_path, monkeypatch, capsys):
    """The model's 15 ms per input dominate the run: the estimated total is within 1.5 x of the measured one, and
    the counts are exact."""
    model = Sleepy(0.015, 12)
    _use(monkeypatch, model)
    out = tmp_path / "out"
    assert cli.main(_args(image_folder(tmp_path / "images", 12), out, "--metrics", "fid+,mu_fidelity", "--batch-size",
                          "8", "--set", "sparsity=[0.2,0.5,0.8]", "--set", "n_subsets=12")) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "estimate.csv").set_index("group")
    assert list(table.index) == ["clean", "fid", "mu_fidelity", "maps", "report", "total"]
    assert table.loc["report", "measured seconds"] > 0 and table.loc["report", "estimated seconds"] > 0
    assert (table["estimated model inputs"] == table["measured model inputs"]).all(), table
    assert (table["estimated explained inputs"] == table["measured explained inputs"]).all(), table
    assert table.loc["mu_fidelity", "measured model inputs"] == 4 * 12
    # the run's work (the report's writing aside: a few seconds of imports and plots, noise at this tiny size)
    estimated, measured = (table.loc["total", c] - table.loc["report", c] for c in ("estimated seconds",
                                                                                    "measured seconds"))
    assert measured > 4 * 12 * 0.015  # μF's sleeps alone
    assert 1 / 1.5 < estimated / measured < 1.5, table
    total = table.loc["total", ["estimated seconds", "measured seconds"]]
    assert f"estimate: {total.iloc[0]:.1f} s, measured: {total.iloc[1]:.1f} s" in printed
    cost = pd.read_csv(out / "cost.csv").set_index("metric")
    assert cost.loc["mu_fidelity", "group"] == "mu_fidelity"
    for column in ("estimated group seconds", "measured group seconds"):
        assert cost[column].gt(0).all(), cost
    assert cost.loc["fid+", "measured group seconds"] == pytest.approx(table.loc["fid", "measured seconds"])
    assert not (out / "skipped.txt").exists()


def test_the_sanity_check_is_estimated_and_measured_as_one_group(tmp_path, monkeypatch, capsys):
    """Without --no-sanity the run evaluates the model-only metrics once more on a randomised copy: the estimate
    counts that run too (its model inputs exactly), so the printed total is the whole run's."""
    model = Sleepy(0.015, 12)
    _use(monkeypatch, model)
    out = tmp_path / "out"
    args = [a for a in _args(image_folder(tmp_path / "images", 12), out) if a != "--no-sanity"]
    assert cli.main([*args, "--metrics", "mu_fidelity", "--batch-size", "8", "--set", "n_subsets=12"]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / "estimate.csv").set_index("group")
    assert "sanity check" in table.index and "sanity check:" in printed
    row = table.loc["sanity check"]
    assert row["estimated model inputs"] == row["measured model inputs"] > 4 * 12  # μF once more, and the clean pass
    assert row["estimated explained inputs"] == row["measured explained inputs"] == 4  # the randomised model's maps
    # the run's work (the report's writing aside: a few seconds of imports and plots, noise at this tiny size)
    estimated, measured = (table.loc["total", c] - table.loc["report", c] for c in ("estimated seconds",
                                                                                    "measured seconds"))
    assert 1 / 1.5 < estimated / measured < 1.5, table


def _run_estimate_ratio(tmp_path, monkeypatch, name: str) -> tuple[float, str]:
    """The CLI on 4 images of 96 px with a model that costs next to nothing (Sleepy without a sleep): RFid± at 10
    masks, the MoRF curves, Few-class Fid and SaCo → (estimated / measured seconds of the run's work, the table).

    Both sides are timed on this process's CPU clock (``time.perf_counter`` → ``time.process_time``; the test process
    runs torch on one thread): the run is all computation, no sleep, so on a quiet machine the two clocks agree, and
    the CPU clock does not count the seconds the other test worker takes from this one. On the wall clock, load that
    starts or stops between the estimate's timings and the run's moved the ratio from about 0.95 to 0.63 in CI and
    to 0.70 under a bursty load here; on the CPU clock it stayed within 0.90-1.05 under that load."""
    monkeypatch.setattr(time, "perf_counter", time.process_time)
    model = Sleepy(0.0, 96)
    _use(monkeypatch, model)
    out = tmp_path / name
    args = _args(image_folder(tmp_path / f"{name}-images", 96), out, "--metrics", "rfid+,rfid-,aopc,fewclass_fid,saco",
                 "--set", "n_samples=10")
    assert cli.main(args) == 0
    table = pd.read_csv(out / "estimate.csv").set_index("group")
    estimated, measured = (table.loc["total", c] - table.loc["report", c] - table.loc["maps", c]
                           for c in ("estimated seconds", "measured seconds"))
    return estimated / measured, table.to_string()


def test_the_estimate_times_the_librarys_own_work_where_the_model_costs_nothing(tmp_path, monkeypatch, capsys):
    """Where the model is cheap beside its inputs (a GPU, a small network on large images), building the perturbed
    inputs, masks and orders is most of a run: budget.engine times that work per metric group on one stand-in image,
    and the estimate adds it. Without it the same run's estimate is a fraction of the measured time (the check below
    fails), with it within 1.5x."""
    from faithlab.evaluation import budget

    ratio, table = _run_estimate_ratio(tmp_path, monkeypatch, "with")
    printed = capsys.readouterr().out
    assert "library's own work per input" in printed and "stand-in model in" in printed
    assert 1 / 1.5 < ratio < 1.5, table
    monkeypatch.setattr(budget, "engine", lambda *a, **k: {"per_input": {}, "per_explained": {}, "seconds": 0.0})
    without, table = _run_estimate_ratio(tmp_path, monkeypatch, "without")
    # the model alone, what the estimate said before engine(): outside the 1.5x band (about 0.25; 0.53 once in CI
    # under load when timed on the wall clock; the bound is the band's, not a tuned fraction)
    assert without < 1 / 1.5, table


def test_seconds_adds_each_groups_own_work_per_input_and_per_chunk():
    """budget.seconds: model calls × per call + inputs × per input + explained × the explainer's, and with engine
    rates the group's own work per model input, per explained input and per chunk (a hand-computed table)."""
    from faithlab.evaluation import budget

    table = pd.DataFrame({"group": ["rfid", "s_avg", "morf"], "explainer": ["a", "a", "b"],
                          "forward_inputs": [100, 0, 10], "explained_inputs": [0, 20, 0], "model_calls": [4, 0, 2]})
    table.attrs["chunks"] = 3
    timing = {"per_call": 0.5, "per_input_in_call": 0.01, "per_explained": {"a": 0.1, "b": 0.2}}
    plain = budget.seconds(table, timing)
    assert plain.tolist() == pytest.approx([4 * 0.5 + 100 * 0.01, 20 * 0.1, 2 * 0.5 + 10 * 0.01])
    timing["engine"] = {"per_input": {"rfid": 0.002, "morf": 0.03}, "per_explained": {"s_avg": 0.05},
                        "per_chunk": {"rfid": 0.1, "s_avg": 0.0, "morf": 0.2}}
    own = budget.seconds(table, timing)
    assert (own - plain).tolist() == pytest.approx([100 * 0.002 + 3 * 0.1, 20 * 0.05, 10 * 0.03 + 3 * 0.2])


def test_engine_times_one_and_two_samples_at_the_floors_for_a_rate_and_a_fixed_cost(monkeypatch):
    """budget.engine: a rate and a fixed cost for every sample-level group asked for (none for a dataset-level
    one), from fl.evaluate on one and on two stand-in samples of x's size with the Monte-Carlo counts at their
    floors (RFid+: 5 masks per level), the line through the two (or, where noise makes it negative, the mean rate)."""
    import importlib

    from faithlab.evaluation import budget

    est = importlib.import_module("faithlab.evaluation.estimation")
    x = torch.rand(3, 3, 24, 24)
    calls = []
    original = est.probe_costs

    def spy(shape, b, n_classes, explainers, metrics, finetuned, explainer, kfold, batch_size, options, device="cpu"):
        table = original(shape, b, n_classes, explainers, metrics, finetuned, explainer, kfold, batch_size, options,
                         device)
        calls.append((tuple(shape), dict(options), table.groupby("group")[["forward_inputs", "explained_inputs",
                                                                           "seconds"]].sum()))
        return table

    monkeypatch.setattr(est, "probe_costs", spy)
    rates = budget.engine(x, n_classes=2, metrics=["rfid+", "s_avg", "reco"], batch_size=16,
                          options={"n_samples": 50, "n_neighbours": 3})
    assert [c[0] for c in calls][1:] == [(1, 3, 24, 24), (2, 3, 24, 24)]  # after the warm-up, one and two samples
    options = calls[-1][1]
    assert options["n_samples"] == 5 and options["n_neighbours"] == 3 and options["n_subsets"] == 20
    assert set(rates["per_input"]) >= {"rfid", "clean"} and set(rates["per_explained"]) == {"s_avg"}
    assert "reco_mege" not in rates["per_chunk"]
    one, two = calls[1][2].loc["rfid"], calls[2][2].loc["rfid"]
    assert two["forward_inputs"] - one["forward_inputs"] == 5 * 9  # 5 masks × 9 sparsity levels per sample, RFid+
    slope = (two["seconds"] - one["seconds"]) / (two["forward_inputs"] - one["forward_inputs"])
    fixed = one["seconds"] - slope * one["forward_inputs"]
    if slope >= 0 and fixed >= 0:
        expected = (slope, fixed)
    else:
        expected = ((one["seconds"] + two["seconds"]) / (one["forward_inputs"] + two["forward_inputs"]), 0.0)
    assert (rates["per_input"]["rfid"], rates["per_chunk"]["rfid"]) == pytest.approx(expected)
    assert all(v > 0 for v in rates["per_input"].values()) and rates["seconds"] > 0

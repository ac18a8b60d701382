"""SaCo's per-image table: the maps it scores (oracle on a linear model), its rows computed in parts equal to the whole
(what the notebook's shards rely on), its one-curve cumulative metrics equal to their own calls, and the t interval
on the trained models' means."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

import faithlab as fl
import faithlab_study as fs

S = fs.papers.saco


def _linear(seed: int = 0, channels: int = 2, side: int = 4, n_classes: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(channels * side * side, n_classes)).double().eval()


@pytest.mark.parametrize("signed", [True, False])
def test_pixel_map_of_input_x_gradient_on_a_linear_model_by_hand(signed):
    model = _linear()
    x = torch.randn(3, 2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    target = torch.tensor([0, 2, 1])
    a = S.pixel_map(model, x, target, "input_x_gradient", {}, signed, batch_size=2)
    w = model[1].weight.detach()[target].reshape(3, 2, 4, 4)
    expected = (x * w).sum(1, keepdim=True) if signed else (x * w).abs().sum(1, keepdim=True)
    assert a.shape == (3, 1, 4, 4)
    torch.testing.assert_close(a, expected)


def _study(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    models = {}
    for setting, n in (("A", 6), ("B", 4)):  # B has fewer images: the last indices are skipped there
        for r in (0, 1):
            model = _linear(seed=10 * r + n)
            x = torch.randn(n, 2, 4, 4, dtype=torch.float64, generator=g)
            models[setting, r] = (model, x, torch.randint(0, 3, (n,), generator=g))
    predicted = {key: m(x).argmax(1) for key, (m, x, _) in models.items()}
    random_maps = {key: torch.rand(len(x), 1, 4, 4, dtype=torch.float64, generator=g)
                   for key, (_, x, _) in models.items()}
    methods = {"Random": ("random", {}, False), "IxG": ("input_x_gradient", {}, True)}
    return models, methods, predicted, random_maps


def test_per_image_frame_in_parts_equals_the_whole_and_reads_the_random_maps():
    models, methods, predicted, random_maps = _study()
    kw = dict(predicted=predicted, random_maps=random_maps, k=4, k_values=(2, 8), batch_size=3)
    whole = S.per_image_frame(models, methods, range(6), **kw)
    parts = pd.concat([S.per_image_frame(models, methods, images, **kw) for images in (range(0, 3), range(3, 6))],
                      ignore_index=True)
    order = ["setting", "replica", "method", "sample"]
    pd.testing.assert_frame_equal(parts.sort_values(order, ignore_index=True),
                                  whole.sort_values(order, ignore_index=True))
    assert len(whole) == 2 * 2 * (6 + 4)  # settings' images × replicas × methods
    assert list(whole.columns) == ["setting", "replica", "method", "sample", *S.HIGHER_IS_BETTER, "first group drop",
                                   "last group drop", "constant map", "SaCo K=2", "SaCo K=8"]
    model, x, _ = models["B", 1]
    rows = whole[(whole.setting == "B") & (whole.replica == 1) & (whole.method == "Random")]
    assert list(rows["sample"]) == [0, 1, 2, 3]
    saco = fl.metrics.saco(model, x, random_maps["B", 1], k=8, batch_size=3)
    assert rows["SaCo K=8"].tolist() == pytest.approx(saco.tolist())
    saco4 = fl.metrics.saco(model, x, S.pixel_map(model, x, predicted["B", 1], "input_x_gradient", {}, True), k=4)
    ixg = whole[(whole.setting == "B") & (whole.replica == 1) & (whole.method == "IxG")]
    assert ixg["SaCo"].tolist() == pytest.approx(saco4.tolist())
    # AUC, AOPC and LOdds from one most-salient-first curve equal the three metrics' own calls
    a = S.pixel_map(model, x, predicted["B", 1], "input_x_gradient", {}, True)
    y = models["B", 1][2]
    for column, direct in (("AUC", fl.metrics.auc_accuracy(model, x, a, target=y)),
                           ("AOPC", fl.metrics.aopc(model, x, a)), ("LOdds", fl.metrics.log_odds(model, x, a)),
                           ("Comprehensiveness", fl.metrics.comprehensiveness(model, x, a))):
        assert ixg[column].tolist() == pytest.approx(direct.tolist(), rel=1e-9, abs=1e-12), column
    details = fl.metrics.saco_details(model, x, a, k=4)
    assert ixg["first group drop"].tolist() == pytest.approx(details["drop"][:, 0].tolist())
    assert ixg["last group drop"].tolist() == pytest.approx(details["drop"][:, -1].tolist())


def test_models_mean_interval_is_the_t_interval_on_the_model_means():
    rows = pd.DataFrame({"setting": ["a"] * 6 + ["b"] * 6, "replica": [0, 0, 0, 1, 1, 1] * 2,
                         "m": [1.0, 2.0, 3.0, 2.0, float("nan"), 4.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]})
    mean, low, high = S.models_mean_interval(rows, "m")
    means = [2.0, 3.0, 5.0, 5.0]  # a/0, a/1 (NaN left out), b/0, b/1
    half = 3.182446305284263 * float(pd.Series(means).std()) / 2  # t(0.975, 3) × sd / √4
    assert mean == pytest.approx(3.75) and (low, high) == pytest.approx((3.75 - half, 3.75 + half))
    assert S.models_mean_interval(rows.assign(m=2.5), "m") == pytest.approx((2.5, 2.5, 2.5))


def test_random_saco_frame_scores_a_per_sample_random_map_on_every_image():
    models, _, predicted, _ = _study()
    targets = {key: (m, x, predicted[key]) for key, (m, x, _) in models.items()}
    frame = S.random_saco_frame(targets, k=4, seed=3, batch_size=2)
    assert len(frame) == 2 * (6 + 4) and list(frame.columns) == ["setting", "replica", "sample", "SaCo"]
    model, x, _ = models["A", 1]
    seeds = fl.perturb.keyed_seeds(fs.verdicts.replication.draw_seed(3, "A", 1, "random saco"), torch.arange(len(x)))
    a = fl.explainers.explain(model, x, predicted["A", 1], method="random", sample_seeds=seeds).abs().sum(1, keepdim=True)
    rows = frame[(frame.setting == "A") & (frame.replica == 1)]
    assert rows["SaCo"].tolist() == pytest.approx(fl.metrics.saco(model, x, a, k=4, target=predicted["A", 1]).tolist())
    # the maps are keyed to the sample: the first three images alone get the same scores
    part = S.random_saco_frame({("A", 1): (model, x[:3], predicted["A", 1][:3])}, k=4, seed=3)
    assert part["SaCo"].tolist() == pytest.approx(rows["SaCo"].tolist()[:3])

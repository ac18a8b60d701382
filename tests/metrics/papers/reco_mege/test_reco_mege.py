"""ReCo / MeGe / μF / S_avg (spec §4): oracle cases, slow references (scipy spearmanr, a brute-force ReCo, a loop
port of xplique's pairing), invariances and bad input."""

from __future__ import annotations

import importlib
import inspect
import math
import re

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import faithlab as fl
from faithlab.metrics.papers.reco_mege.crossfold import (Pairs, explanation_distance, flatten_maps, mege,
                                                         pair_distances, reco, reco_auc, reco_details,
                                                         reco_mege_details_from_predictions, reco_scan,
                                                         shuffled_distances, split_sets)
from oracles import Additive, small_cnn


def _brute_reco(eq: np.ndarray, ne: np.ndarray) -> float:
    """O(m²) reference: Youden's J at a threshold just above every value and just below the smallest."""
    values = np.concatenate([eq, ne])
    cuts = np.concatenate([values + 1e-12, [values.min() - 1.0]])
    best = 0.0
    for g in cuts:
        best = max(best, np.mean(eq < g) + np.mean(ne > g) - 1.0)
    return best


def _xplique_scan(eq: np.ndarray, ne: np.ndarray) -> float:
    """A literal loop port of xplique's MeGe.evaluate ReCo scan (every (m//20 + 1)-th sorted value)."""
    total = np.sort(np.concatenate([eq, ne]))
    best = 0.0
    for gamma in total[:: len(total) // 20 + 1]:
        tp, tn = np.sum(eq < gamma), np.sum(ne > gamma)
        fp, fn = np.sum(ne < gamma), np.sum(eq > gamma)
        best = max(best, tp / (tp + fn + 1e-10) + tn / (tn + fp + 1e-10) - 1.0)
    return best


# ------------------------------------------------------------------------------------------------------ distances
def test_spearman_distance_equals_scipy_with_ties():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(0, 5, (6, 40), generator=g).float()      # many ties
    b = torch.randint(0, 5, (6, 40), generator=g).float()
    got = explanation_distance(a, b)
    want = [math.sqrt(1 - abs(spearmanr(a[i], b[i]).statistic)) for i in range(6)]
    assert torch.allclose(got.double(), torch.tensor(want, dtype=torch.float64), atol=1e-6)
    lin = explanation_distance(a, b, distance="linear")
    assert torch.allclose(lin, got ** 2, atol=1e-6)


def test_spearman_distance_zero_for_same_or_reversed_ranking_nan_for_constant():
    a = torch.randn(3, 50, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(explanation_distance(a, 2 * a + 1), torch.zeros(3), atol=1e-6)
    assert torch.allclose(explanation_distance(a, -a), torch.zeros(3), atol=1e-6)
    d = explanation_distance(torch.ones(2, 50), a[:2])
    assert torch.isnan(d).all()


def _cross(k=4, n=40, shape=(2, 5, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    maps = torch.randn(k, n, *shape, generator=g)
    labels = torch.randint(0, 3, (n,), generator=g)
    predictions = torch.where(torch.rand(k, n, generator=g) < 0.7, labels, (labels + 1) % 3)
    folds = torch.randint(0, k, (n,), generator=g)
    return maps, predictions, labels, folds


def test_pairs_equal_the_xplique_loop():
    maps, predictions, labels, folds = _cross()
    k, n = maps.shape[:2]
    pairs = pair_distances(maps, predictions, labels, folds, channel_dim=-3, batch_size=7)
    eq, ne = split_sets(pairs)
    ref_eq, ref_ne = [], []
    flat = maps.mean(2).flatten(2).numpy()
    for i in range(k):                                      # xplique: unordered pairs, keep the block i or j
        for j in range(i + 1, k):
            for s in range(n):
                if folds[s] not in (i, j):
                    continue
                d = math.sqrt(1 - abs(spearmanr(flat[i, s], flat[j, s]).statistic))
                ri, rj = predictions[i, s] == labels[s], predictions[j, s] == labels[s]
                if ri and rj:
                    ref_eq.append(d)
                elif ri or rj:
                    ref_ne.append(d)
    assert np.allclose(np.sort(eq.numpy()), np.sort(ref_eq), atol=1e-5)
    assert np.allclose(np.sort(ne.numpy()), np.sort(ref_ne), atol=1e-5)
    assert pairs.distance.shape == (n, k - 1) and not (pairs.other == folds[:, None]).any()
    assert pairs.dropped["both wrong"] == int((pairs.kind == 2).sum())


def test_identical_models_give_mege_one_and_zero_distances():
    # R5 oracle: the same map from every model → every distance 0, MeGe = 1
    maps, predictions, labels, folds = _cross()
    same = maps[:1].expand_as(maps).clone()
    d = reco_mege_details_from_predictions(same, predictions, labels, folds, channel_dim=-3)
    assert torch.allclose(d["pairs"].distance, torch.zeros_like(d["pairs"].distance), atol=1e-6)
    assert d["mege"] == pytest.approx(1.0, abs=1e-6)


def test_pair_distances_batch_size_invariant_and_constant_maps_counted():
    maps, predictions, labels, folds = _cross(seed=3)
    maps[1, :5] = 0.0                                       # constant maps of model 1 on five samples
    a = pair_distances(maps, predictions, labels, folds, channel_dim=-3, batch_size=1)
    b = pair_distances(maps, predictions, labels, folds, channel_dim=-3, batch_size=1000)
    assert torch.equal(a.kind, b.kind) and torch.allclose(a.distance, b.distance, equal_nan=True)
    nan = torch.isnan(a.distance)
    assert nan.any() and a.dropped["NaN (constant map)"] == int((nan & (a.kind < 2)).sum())
    eq, ne = split_sets(a)
    assert not torch.isnan(eq).any() and not torch.isnan(ne).any()


# ----------------------------------------------------------------------------------------------------- ReCo, MeGe
def test_reco_perfect_separation_and_identical_sets():
    eq, ne = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.5, 0.6])
    assert float(reco(eq, ne)) == 1.0
    assert float(reco(ne, eq)) == 0.0                       # reversed: S= above S≠ → no better than chance
    same = torch.rand(50, generator=torch.Generator().manual_seed(0))
    assert float(reco(same, same.clone())) == 0.0
    # hand case: S= {0.1, 0.4}, S≠ {0.3, 0.5}: γ just above 0.1 → TPR 1/2, TNR 1 → J = 0.5
    assert float(reco(torch.tensor([0.1, 0.4]), torch.tensor([0.3, 0.5]))) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(5))
def test_reco_exact_equals_brute_force_and_beats_the_scan(seed):
    g = torch.Generator().manual_seed(seed)
    eq = torch.rand(300, generator=g, dtype=torch.float64) * 0.8
    ne = torch.rand(90, generator=g, dtype=torch.float64) * 0.8 + 0.15
    exact = float(reco(eq, ne))
    assert exact == pytest.approx(_brute_reco(eq.numpy(), ne.numpy()), abs=1e-12)
    scan = float(reco_scan(eq, ne))
    assert scan == pytest.approx(_xplique_scan(eq.numpy(), ne.numpy()), abs=1e-12)
    assert exact >= scan - 1e-12


def test_reco_with_ties_equals_brute_force():
    eq = torch.tensor([0.2, 0.2, 0.2, 0.5, 0.7], dtype=torch.float64)
    ne = torch.tensor([0.2, 0.5, 0.5, 0.9], dtype=torch.float64)
    assert float(reco(eq, ne)) == pytest.approx(_brute_reco(eq.numpy(), ne.numpy()))
    curve = reco_details(eq, ne)
    assert curve["gamma"].tolist() == [0.2, 0.5, 0.7, 0.9]
    assert curve["tpr"].tolist() == [0.6, 0.8, 1.0, 1.0] and curve["tnr"].tolist() == [0.75, 0.25, 0.25, 0.0]


def test_reco_auc_and_mege_closed_forms():
    eq, ne = torch.tensor([0.1, 0.3]), torch.tensor([0.6, 0.8, 1.0])
    assert float(reco_auc(eq, ne)) == pytest.approx(0.8 - 0.2)
    # numerical integral of the step function over [0, 1]
    grid = torch.linspace(0, 1, 200001, dtype=torch.float64)
    j = (eq.double()[None] < grid[:, None]).double().mean(1) + (ne.double()[None] > grid[:, None]).double().mean(1) - 1
    assert float(torch.trapezoid(j, grid)) == pytest.approx(0.6, abs=1e-4)
    assert float(mege(eq)) == pytest.approx(1 / 1.2)


def test_reco_bad_input():
    with pytest.raises(ValueError, match="s_unequal"):
        reco(torch.tensor([0.1]), torch.tensor([]))
    with pytest.raises(ValueError, match="s_equal"):
        reco(torch.tensor([float("nan")]), torch.tensor([0.2]))
    maps, predictions, labels, folds = _cross()
    with pytest.raises(ValueError, match="folds"):
        pair_distances(maps, predictions, labels, folds + 10)
    with pytest.raises(ValueError, match="predictions"):
        pair_distances(maps, predictions[:2], labels, folds)
    with pytest.raises(ValueError, match="distance"):
        pair_distances(maps, predictions, labels, folds, distance="cosine")


def test_inf_maps_and_negative_classes_raise_naming_the_argument():
    maps, predictions, labels, folds = _cross()
    bad = maps.clone()
    bad[1, 3, 0, 2, 2] = -math.inf                  # one value: the maps still rank, the ranking means nothing
    with pytest.raises(ValueError, match="maps"):
        fl.metrics.reco_mege_from_predictions(bad, predictions, labels, folds, channel_dim=-3)
    partners = torch.arange(1, 41) % 40
    with pytest.raises(ValueError, match="maps"):
        shuffled_distances(bad, folds, partners, channel_dim=-3)
    bad_pred = predictions.clone()
    bad_pred[0, 0] = -1
    with pytest.raises(ValueError, match="predictions"):
        fl.metrics.reco_mege_from_predictions(maps, bad_pred, labels, folds)
    bad_labels = labels.clone()
    bad_labels[0] = -1
    with pytest.raises(ValueError, match="labels"):
        fl.metrics.reco_mege_from_predictions(maps, predictions, bad_labels, folds)
    with pytest.raises(TypeError, match="maps"):                   # the imaginary part would be dropped
        fl.metrics.reco_mege_from_predictions(maps.to(torch.complex64), predictions, labels, folds)
    with pytest.raises(ValueError, match="maps"):
        fl.metrics.reco_mege_from_predictions(maps[:, :0], predictions[:, :0], labels[:0], folds[:0])
    with pytest.raises(ValueError, match="predictions"):            # bool is no class index
        fl.metrics.reco_mege_from_predictions(maps, predictions > 0, labels, folds)
    with pytest.raises(ValueError, match="folds"):
        fl.metrics.reco_mege_from_predictions(maps, predictions, labels, folds > 0)


def test_channel_dim_is_checked_against_the_map_axes():
    maps, predictions, labels, folds = _cross()     # (k, N, C, H, W)
    partners = torch.arange(1, 41) % 40
    for bad in (5, -4, 0, 1, 1.0, True):
        with pytest.raises((ValueError, TypeError), match="channel_dim"):
            fl.metrics.reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=bad)
        with pytest.raises((ValueError, TypeError), match="channel_dim"):
            shuffled_distances(maps, folds, partners, channel_dim=bad)
    with pytest.raises(ValueError, match="channel_dim"):
        flatten_maps(maps[0], channel_dim=4)
    with pytest.raises(ValueError, match="channel_dim"):         # (k, N, d) maps have a single axis to rank
        fl.metrics.reco_mege_from_predictions(maps.flatten(2), predictions, labels, folds, channel_dim=-1)
    # 2 counts in maps' layout: the channel axis, the same as -3, for the pairs and for their chance level
    assert fl.metrics.reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=2) == \
        fl.metrics.reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=-3)
    torch.testing.assert_close(shuffled_distances(maps, folds, partners, channel_dim=2),
                               shuffled_distances(maps, folds, partners, channel_dim=-3), equal_nan=True)


def test_inf_distances_raise_naming_the_set():
    inf, ok = torch.tensor([0.1, math.inf]), torch.tensor([0.2, 0.5])
    for f in (reco, reco_scan, reco_auc, reco_details):
        with pytest.raises(ValueError, match="s_equal"):
            f(inf, ok)
        with pytest.raises(ValueError, match="s_unequal"):
            f(ok, -inf)
    with pytest.raises(ValueError, match="s_equal"):
        mege(inf)


def test_float64_maps_are_ranked_in_float64():
    """Values 1e-9 apart are distinct in float64 but tie in float32: the distance is scipy's on the float64 maps."""
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 4, (2, 60), generator=g).double() + torch.rand(2, 60, generator=g, dtype=torch.float64) * 1e-9
    assert a[0].float().unique().numel() < a[0].unique().numel() == 60      # float32 would merge ranks
    want = math.sqrt(1 - abs(spearmanr(a[0].numpy(), a[1].numpy()).statistic))
    rounded = math.sqrt(1 - abs(spearmanr(a[0].float().numpy(), a[1].float().numpy()).statistic))
    assert abs(want - rounded) > 1e-3                                          # the case tells the two apart
    one = torch.zeros(1, dtype=torch.int64)
    pairs = pair_distances(a[:, None], torch.zeros(2, 1, dtype=torch.int64), one, one)
    assert float(pairs.distance) == pytest.approx(want, abs=1e-6)
    chans = a.view(2, 1, 1, 6, 10).expand(-1, -1, 2, -1, -1)                  # channel averaging keeps float64 too
    pairs = pair_distances(chans, torch.zeros(2, 1, dtype=torch.int64), one, one, channel_dim=-3)
    assert float(pairs.distance) == pytest.approx(want, abs=1e-6)


def test_details_report_empty_sets_as_nan():
    maps, _, labels, folds = _cross()
    right = labels[None].expand(maps.shape[0], -1).clone()           # every model right → S≠ empty
    d = reco_mege_details_from_predictions(maps, right, labels, folds, channel_dim=-3)
    assert d["counts"]["S≠"] == 0 and math.isnan(d["reco"]) and not math.isnan(d["mege"])
    assert isinstance(d["pairs"], Pairs)


def _fold_models(k: int = 3, features: int = 2 * 5 * 5, n_classes: int = 3) -> list[torch.nn.Module]:
    """k seeded, different linear models in eval mode (stand-ins for cross-trained ones)."""
    models = []
    with torch.random.fork_rng():
        for i in range(k):
            torch.manual_seed(10 + i)
            models.append(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(features, n_classes)).eval())
    return models


def test_reco_mege_of_the_models_equals_the_building_block_on_their_predictions():
    """The dataset-level call predicts with every model (argmax, batch_size at a time) and hands those predictions
    to the building block: the same pairs, sets and scores, bitwise, whatever batch_size."""
    models = _fold_models()
    g = torch.Generator().manual_seed(7)
    x = torch.randn(30, 2, 5, 5, generator=g)
    maps = torch.randn(3, 30, 2, 5, 5, generator=g)
    with torch.no_grad():
        predictions = torch.stack([m(x).argmax(1) for m in models])
    labels = predictions[0].clone()
    labels[::3] = (labels[::3] + 1) % 3                      # some models right, some wrong: S= and S≠ both filled
    folds = torch.arange(30) % 3
    block = reco_mege_details_from_predictions(maps, predictions, labels, folds, channel_dim=-3)
    assert block["counts"]["S="] > 0 and block["counts"]["S≠"] > 0
    for bs in (4, 256):
        d = fl.metrics.reco_mege_details(models, x, maps, folds=folds, labels=labels, channel_dim=-3, batch_size=bs)
        assert torch.equal(d["predictions"], predictions)
        assert torch.equal(d["pairs"].kind, block["pairs"].kind)
        torch.testing.assert_close(d["pairs"].distance, block["pairs"].distance, rtol=0, atol=0, equal_nan=True)
        assert (d["reco"], d["mege"], d["reco_scan"]) == (block["reco"], block["mege"], block["reco_scan"])
    assert fl.metrics.reco_mege(models, x, maps, folds=folds, labels=labels, channel_dim=-3) == \
        fl.metrics.reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=-3) == \
        {"reco": block["reco"], "mege": block["mege"]}
    # the models' order matters: model i explains maps[i] and folds name the unseen model
    swapped = fl.metrics.reco_mege_details(models[::-1], x, maps, folds=folds, labels=labels, channel_dim=-3)
    assert torch.equal(swapped["predictions"], predictions.flip(0))


def test_reco_mege_of_the_models_names_the_bad_argument():
    models, x = _fold_models(), torch.randn(6, 2, 5, 5)
    maps, labels, folds = torch.randn(3, 6, 2, 5, 5), torch.zeros(6, dtype=torch.int64), torch.arange(6) % 3
    training = _fold_models()[1].train()
    cases = {"models": dict(models=models[0]), "models[1]": dict(models=[models[0], training, models[2]]),
             "attributions": dict(attributions=maps[:2]), "labels": dict(labels=labels[:5]),
             "folds": dict(folds=folds + 3)}
    for argument, bad in cases.items():
        values = {"models": models, "attributions": maps, "labels": labels, "folds": folds, **bad}
        with pytest.raises((TypeError, ValueError), match=re.escape(argument)):
            fl.metrics.reco_mege(values["models"], x, values["attributions"], folds=values["folds"],
                                 labels=values["labels"])
    inf = maps.clone()
    inf[2, 1, 0, 0, 0] = math.inf
    with pytest.raises(ValueError, match="attributions contains inf"):
        fl.metrics.reco_mege(models, x, inf, folds=folds, labels=labels)


# ------------------------------------------------------------------------------------------------------------- μF
def test_mu_fidelity_is_one_for_the_exact_linear_attribution():
    # xplique's oracle: f(x) = Σ x (logit), attribution = x, zero baseline → drop = Σ_S x_i exactly
    g = torch.Generator().manual_seed(0)
    x = torch.rand(6, 1, 8, 8, generator=g)
    model = Additive(torch.ones(1, 8, 8))
    mu = fl.metrics.mu_fidelity(model, x, x, target=torch.zeros(6, dtype=torch.int64), output="logit", n_subsets=50)
    assert torch.allclose(mu, torch.ones(6, dtype=torch.float64), atol=1e-6)
    rnd = fl.metrics.mu_fidelity(model, x, torch.rand(6, 1, 8, 8, generator=g),
                                 target=torch.zeros(6, dtype=torch.int64), output="logit", n_subsets=200, generator=1)
    assert abs(float(rnd.mean())) < 0.15


def test_mu_fidelity_subset_size_batch_invariance_and_spearman_option():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(2)
    x, a = torch.randn(40, 2, 8, 8, generator=g), torch.randn(40, 2, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    d1 = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=30, generator=5, batch_size=7)
    d2 = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=30, generator=5, batch_size=512)
    assert torch.allclose(d1["mu_f"], d2["mu_f"], atol=1e-6) and torch.allclose(d1["drops"], d2["drops"], atol=1e-6)
    # every subset removes round(0.15 · 64) = 10 pixels: with all-ones unit scores the sums are exactly 10 · 2 channels
    ones = fl.metrics.mu_fidelity_details(model, x, torch.ones_like(x), target=t, n_subsets=5, generator=5)
    assert torch.equal(ones["sums"], torch.full((40, 5), 20.0, dtype=torch.float64))
    assert torch.isnan(ones["mu_f"]).all()                  # constant sums: correlation undefined
    sp = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=30, generator=5, correlation="spearman")
    assert sp.shape == (40,) and not torch.allclose(sp, d1["mu_f"])


def test_mu_fidelity_is_keyed_to_the_sample_so_splitting_the_data_changes_nothing():
    """Issue 32: the subsets followed the sample's position in the call (sample 4: 0.149 over 8 images, 0.076 over
    the last 4). Now a slice evaluated with its global indices gives the whole call's rows, exactly; the same slice
    without them (indices 0…3, other streams) differs, so the check can fail; and every sample differs from the
    others (one stream per sample, not one shared draw)."""
    model = _OneAtATime(small_cnn(in_channels=1, side=8, n_classes=3))
    g = torch.Generator().manual_seed(4)
    x, a = torch.randn(40, 1, 8, 8, generator=g), torch.randn(40, 1, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    whole = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=12, generator=9, batch_size=64)
    for lo, hi in ((0, 5), (5, 37), (37, 40)):   # slices across the 32-sample draw blocks
        part = fl.metrics.mu_fidelity_details(model, x[lo:hi], a[lo:hi], target=t[lo:hi], n_subsets=12, generator=9,
                                              sample_index=torch.arange(lo, hi), batch_size=5)
        assert torch.equal(part["sums"], whole["sums"][lo:hi]) and torch.equal(part["mu_f"], whole["mu_f"][lo:hi])
    shifted = fl.metrics.mu_fidelity_details(model, x[5:37], a[5:37], target=t[5:37], n_subsets=12, generator=9)
    assert not torch.equal(shifted["sums"], whole["sums"][5:37])
    # the same image under two global indices gets two streams; under one index, one stream wherever it sits
    twice = fl.metrics.mu_fidelity_details(model, x[[3, 3]], a[[3, 3]], target=t[[3, 3]], n_subsets=12, generator=9,
                                           sample_index=torch.tensor([3, 8]))
    assert torch.equal(twice["sums"][0], whole["sums"][3]) and not torch.equal(twice["sums"][1], whole["sums"][3])
    with pytest.raises(ValueError, match="sample_index must have shape"):
        fl.metrics.mu_fidelity(model, x[:4], a[:4], target=t[:4], sample_index=torch.arange(3))
    with pytest.raises(TypeError, match="sample_index must be an integer"):
        fl.metrics.mu_fidelity(model, x[:4], a[:4], target=t[:4], sample_index=torch.arange(4.0))


class _OneAtATime(torch.nn.Module):
    """The wrapped model run on one input at a time: an input's logits do not depend on the batch it comes in."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net
        self.eval()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net(z[i:i + 1]) for i in range(z.shape[0])])


def test_mu_fidelity_reference_per_image_or_shared():
    # a (C, H, W) reference is shared by every image; a (B, C, H, W) one gives each image its own row
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(6)
    x, a = torch.randn(40, 2, 8, 8, generator=g), torch.randn(40, 2, 8, 8, generator=g)
    t = torch.randint(0, 3, (40,), generator=g)
    ref = torch.randn(2, 8, 8, generator=g)
    shared = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=10, reference=ref)
    rows = fl.metrics.mu_fidelity(model, x, a, target=t, n_subsets=10, reference=ref.expand(40, -1, -1, -1).clone())
    assert torch.allclose(shared, rows, atol=1e-6, equal_nan=True)
    # each image as its own reference: removal changes nothing, every drop is 0 (rows matched per block). The clean
    # pass batches 7 different images, the removals 7 copies of one or two images, the last chunks fewer: another
    # batch shape changes the CNN's matmul summation order, so its drops are 0 to float tolerance, not bitwise
    # (ULP-sized on an AVX2 CPU). Run one image at a time, the model sees the same shape in both passes: the drops
    # are exactly 0 there, so μF is undefined (constant drops).
    own = fl.metrics.mu_fidelity_details(model, x, a, target=t, n_subsets=10, reference=x.clone(), batch_size=7)
    assert torch.allclose(own["drops"], torch.zeros_like(own["drops"]), rtol=0, atol=1e-6)
    exact = fl.metrics.mu_fidelity_details(_OneAtATime(model), x, a, target=t, n_subsets=10, reference=x.clone(),
                                           batch_size=7)
    assert torch.equal(exact["drops"], torch.zeros_like(exact["drops"])) and torch.isnan(exact["mu_f"]).all()


def test_mu_fidelity_nan_model_raises():
    class NaNModel(torch.nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], 2), float("nan"))
    x = torch.rand(2, 1, 4, 4)
    with pytest.raises(ValueError, match="(?i)non-finite|nan"):
        fl.metrics.mu_fidelity(NaNModel().eval(), x, x, target=torch.zeros(2, dtype=torch.int64))


def test_mu_fidelity_reads_the_prediction_when_target_is_none():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    g = torch.Generator().manual_seed(11)
    x, a = torch.randn(12, 2, 8, 8, generator=g), torch.randn(12, 2, 8, 8, generator=g)
    with torch.no_grad():
        predicted = model(x).argmax(1)
    none = fl.metrics.mu_fidelity_details(model, x, a, n_subsets=9, generator=1, batch_size=5)
    given = fl.metrics.mu_fidelity_details(model, x, a, target=predicted, n_subsets=9, generator=1, batch_size=5)
    assert torch.equal(none["drops"], given["drops"]) and torch.equal(none["sums"], given["sums"])
    other = fl.metrics.mu_fidelity_details(model, x, a, target=(predicted + 1) % 3, n_subsets=9, generator=1)
    assert not torch.equal(other["drops"], none["drops"])


# ---------------------------------------------------------------------------------------------------------- S_avg
def test_average_stability_oracles():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 1, 6, 6, generator=g)
    t = torch.zeros(5, dtype=torch.int64)
    model = Additive(torch.ones(1, 6, 6))     # the explainers below ignore it
    const = fl.metrics.average_stability(model, x, explainer=lambda m, z, c: torch.ones_like(z), target=t)
    assert torch.equal(const, torch.zeros(5, dtype=torch.float64))
    # identity explainer: E‖u‖² = d · (r/d)² / 3 for u_i ~ U(−r/d, r/d)
    r, d = 0.1, 36
    ident = fl.metrics.average_stability_details(model, x.double(), explainer=lambda m, z, c: z.double(), target=t,
                                                 radius=r, n_neighbours=400)
    assert float(ident["s_avg"].mean()) == pytest.approx(r ** 2 / (3 * d), rel=0.05)
    # ‖u‖₁ ≤ r for every neighbour: the largest squared distance is at most d·(r/d)²
    assert float(ident["distances"].max()) <= d * (r / d) ** 2 + 1e-15


def test_average_stability_batch_size_invariant_and_bad_input():
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x = torch.randn(9, 2, 8, 8, generator=torch.Generator().manual_seed(4))
    t = torch.zeros(9, dtype=torch.int64)

    def explainer(m, z, c):
        return fl.explainers.explain(m, z, c, method="saliency")
    a = fl.metrics.average_stability(model, x, explainer=explainer, target=t, n_neighbours=6, batch_size=5,
                                     generator=3)
    b = fl.metrics.average_stability(model, x, explainer=explainer, target=t, n_neighbours=6, batch_size=64,
                                     generator=3)
    assert torch.allclose(a, b, rtol=1e-5)
    with pytest.raises(ValueError, match="radius"):
        fl.metrics.average_stability(model, x, explainer=explainer, target=t, radius=0)
    with pytest.raises(ValueError, match="radius must be a positive finite number"):  # not "x contains NaN or inf"
        fl.metrics.average_stability(model, x, explainer=explainer, target=t, radius=float("inf"))
    with pytest.raises(TypeError, match="explainer"):
        fl.metrics.average_stability(model, x, explainer="saliency", target=t)


# ----------------------------------------------------------------------------- S_avg with common random numbers
def _smooth_cnn() -> torch.nn.Module:
    """A seeded float64 conv net with a smooth activation (softplus): its gradient, hence SmoothGrad's map, changes
    smoothly with the input (a ReLU net's gradient is piecewise constant), so S_avg with common noise shrinks like
    radius². float64, so that even u_i ≈ 1e-6/128 is not lost in x + u."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.Softplus(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 8 * 8, 3))
    return net.double().eval()


def _smoothgrad(m: torch.nn.Module, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None):
    """SmoothGrad (8 noisy copies, σ = 0.3) as an S_avg explainer: seeds reach explain's sample_seeds."""
    return fl.explainers.explain(m, z, t, method="smoothgrad", generator=0, sample_seeds=seeds, nt_samples=8,
                                 stdevs=0.3)


def _images(b: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, 8, 8, generator=g, dtype=torch.float64), torch.randint(0, 3, (b,), generator=g)


def test_average_stability_with_common_noise_vanishes_with_the_radius():
    # with common random numbers g(x) and g(z) share SmoothGrad's noise, so ‖g(x) − g(z)‖² → 0 as z → x (like r²
    # for a smooth model); explained with fresh noise (the old call) S_avg stays at the Monte-Carlo level
    # E‖ĝ₁(x) − ĝ₂(x)‖² > 0 however small the radius
    model, (x, t) = _smooth_cnn(), _images(4, 5)
    radii = (1e-1, 1e-3, 1e-6)
    common = [float(fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, n_neighbours=8,
                                                 radius=r, generator=1).mean()) for r in radii]
    fresh = [float(fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, n_neighbours=8, radius=r,
                                                generator=1, common_noise=False).mean()) for r in radii]
    assert common[0] > common[1] > common[2] >= 0, common
    assert common[2] < 1e-6 * common[0], common
    assert min(fresh) > 0.5 * max(fresh), fresh           # the noise level, not a function of the radius
    assert fresh[2] > 1e3 * common[0], (fresh, common)    # and far above even the largest radius' common value


def test_average_stability_of_a_deterministic_explainer_is_the_same_with_common_noise():
    model, (x, t) = _smooth_cnn(), _images(5, 6)  # smooth: saliency changes within the radius (ReLU's would not)

    def saliency(m, z, c, seeds=None):
        return fl.explainers.explain(m, z, c, method="saliency", sample_seeds=seeds)
    kw = dict(target=t, n_neighbours=5, generator=2)
    common = fl.metrics.average_stability_details(model, x, explainer=saliency, **kw)
    fresh = fl.metrics.average_stability_details(model, x, explainer=saliency, common_noise=False, **kw)
    assert common["seeds"] is not None and common["seeds"].shape == (5,) and fresh["seeds"] is None
    assert torch.equal(common["s_avg"], fresh["s_avg"]) and bool((common["s_avg"] > 0).all())
    # an explainer that takes only (model, inputs, target) gets no seeds: common_noise cannot reach it
    two = fl.metrics.average_stability_details(model, x, explainer=lambda m, z, c: saliency(m, z, c), **kw)
    assert two["seeds"] is None and torch.equal(two["s_avg"], common["s_avg"])


def test_average_stability_with_common_noise_ignores_batch_size_and_splitting():
    # the model sees other batch shapes (1, 3, 256 inputs; two parts), which change float64 summation orders: maps
    # may differ by ~1e-16 relative, and S_avg, a squared difference of maps, by ‖g‖/‖g(x) − g(z)‖ times that (~1e-13
    # here; bitwise equal on our CPU); rtol 1e-9 leaves room and still catches a change of noise or neighbours
    model, (x, t) = _smooth_cnn(), _images(5, 7)

    def s_avg(lo: int = 0, hi: int = 5, **kw) -> torch.Tensor:
        return fl.metrics.average_stability(model, x[lo:hi], explainer=_smoothgrad, target=t[lo:hi], n_neighbours=4,
                                            generator=3, **kw)
    whole = s_avg(batch_size=256)
    assert bool((whole > 0).all())
    for bs in (1, 3):
        assert torch.allclose(s_avg(batch_size=bs), whole, rtol=1e-9, atol=0), bs
    k = 2
    parts = torch.cat([s_avg(0, k), s_avg(k, 5, sample_index=torch.arange(k, 5))])
    assert torch.allclose(parts, whole, rtol=1e-9, atol=0)
    # the global indices are what make parts add up: without them the second part reuses samples 0, 1, 2's keys
    alone = s_avg(k, 5)
    assert not torch.allclose(alone, whole[k:], rtol=1e-2, atol=0)


def test_average_stability_bad_common_noise_and_sample_index():
    (x, t), model = _images(3, 8), _smooth_cnn()
    with pytest.raises(TypeError, match="common_noise"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, common_noise="yes")
    with pytest.raises(ValueError, match="sample_index"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, sample_index=torch.arange(2))
    with pytest.raises(TypeError, match="sample_index"):
        fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=t, sample_index=torch.arange(3.0))
    with pytest.raises(ValueError, match="non-finite"):
        fl.metrics.average_stability(model, x, explainer=lambda m, z, c, seeds: torch.full_like(z, float("nan")),
                                     target=t, n_neighbours=2)



def test_average_stability_reads_the_prediction_and_takes_given_maps_of_x():
    model, (x, _) = _smooth_cnn(), _images(4, 9)
    with torch.no_grad():
        predicted = model(x).argmax(1)
    kw = dict(n_neighbours=3, generator=4)
    none = fl.metrics.average_stability_details(model, x, explainer=_smoothgrad, **kw)
    assert torch.equal(none["s_avg"], fl.metrics.average_stability(model, x, explainer=_smoothgrad, target=predicted,
                                                                   **kw))
    # maps of x given: used as g(x). The explainer's own maps of x (with each sample's seed) give the same S_avg ...
    own = _smoothgrad(model, x, predicted, none["seeds"])
    assert torch.equal(fl.metrics.average_stability(model, x, own, explainer=_smoothgrad, **kw), none["s_avg"])
    # ... maps whose noise comes from elsewhere (one generator, as the study's maps for μF) bring that noise in:
    # why the study passes None
    elsewhere = fl.explainers.explain(model, x, predicted, method="smoothgrad", generator=0, nt_samples=8, stdevs=0.3)
    assert bool((fl.metrics.average_stability(model, x, elsewhere, explainer=_smoothgrad, **kw)
                 > 10 * none["s_avg"]).all())
    with pytest.raises(ValueError, match="attributions"):
        fl.metrics.average_stability(model, x, own[:3], explainer=_smoothgrad, **kw)
    with pytest.raises(ValueError, match="explainer returned maps of shape"):
        fl.metrics.average_stability(model, x, own[:, :1], explainer=_smoothgrad, **kw)


def test_one_call_shape_and_no_function_hides_its_module():
    """Issue 30: model, x, attributions positional, every option a keyword with its default (no **options), a
    *_details twin with the same parameters; the modules are reachable under their own names
    (``fl.metrics.papers.reco_mege.crossfold`` and ``.baselines``)."""
    module = importlib.import_module("faithlab.metrics.papers.reco_mege.crossfold")
    assert inspect.ismodule(module) and inspect.isfunction(fl.metrics.reco_mege)
    assert fl.metrics.reco_mege is module.reco_mege and fl.metrics.papers.reco_mege.crossfold is module
    # Bhatt et al.'s μF and S_avg, the baselines of the paper, have a module of their own, apart from ReCo/MeGe's
    bhatt = importlib.import_module("faithlab.metrics.papers.reco_mege.baselines")
    assert fl.metrics.papers.reco_mege.baselines is bhatt
    for name in ("mu_fidelity", "mu_fidelity_details", "average_stability", "average_stability_details"):
        assert getattr(fl.metrics, name) is getattr(bhatt, name) and not hasattr(module, name), name
    pairs = [(fl.metrics.mu_fidelity, fl.metrics.mu_fidelity_details),
             (fl.metrics.average_stability, fl.metrics.average_stability_details),
             (fl.metrics.reco_mege, fl.metrics.reco_mege_details),
             (fl.metrics.reco_mege_from_predictions, fl.metrics.reco_mege_details_from_predictions)]
    for plain, details in pairs:
        p, d = inspect.signature(plain).parameters, inspect.signature(details).parameters
        assert [(q.name, q.kind, q.default) for q in p.values()] == [(q.name, q.kind, q.default) for q in d.values()]
        assert not any(q.kind in (q.VAR_KEYWORD, q.VAR_POSITIONAL) for q in p.values()), plain.__name__
    for plain in (fl.metrics.mu_fidelity, fl.metrics.average_stability):
        params = list(inspect.signature(plain).parameters.values())
        assert [q.name for q in params[:3]] == ["model", "x", "attributions"]
        assert all(q.kind == q.KEYWORD_ONLY for q in params[3:])
        assert inspect.signature(plain).parameters["target"].default is None
    params = inspect.signature(fl.metrics.reco_mege).parameters
    assert list(params)[:3] == ["models", "x", "attributions"] and params["folds"].kind == params["folds"].KEYWORD_ONLY


def test_evaluate_runs_reco_mege_of_explainer_and_a_user_gets_the_same():
    """One path for ReCo and MeGe: evaluate's rows are reco_mege_of_explainer's, which a user calls with the k
    models, x and the explainer; the maps are each model's of the class it predicts (checked against explaining
    by hand); NaN maps are refused naming the explainer and the model."""
    from oracles import linear_kfold

    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(12, 2, 6, 6, generator=g), torch.randint(0, 3, (12,), generator=g)
    kfold = linear_kfold(x)
    explain = lambda m, inputs, t: fl.explainers.explain(m, inputs, t, method="saliency")  # noqa: E731
    frame = fl.evaluate(kfold.models[0], x, y, explainer=explain, kfold=kfold, metrics=["reco", "mege"],
                        progress=False, hints=False, batch_size=5)
    mine = fl.metrics.reco_mege_of_explainer(kfold.models, x, explain, folds=kfold.folds, labels=y, batch_size=5)
    got = frame.set_index("metric")["score"]
    assert (got["reco"], got["mege"]) == (mine["reco"], mine["mege"])
    by_hand = torch.stack([explain(m, x, m(x).argmax(1)) for m in kfold.models])
    ref = fl.metrics.reco_mege_details(kfold.models, x, by_hand, folds=kfold.folds, labels=y)
    assert math.isclose(ref["reco"], mine["reco"], rel_tol=1e-12) and math.isclose(ref["mege"], mine["mege"],
                                                                                    rel_tol=1e-12)
    bad = lambda m, inputs, t: explain(m, inputs, t) * float("nan")  # noqa: E731
    with pytest.raises(ValueError, match=r"explainer 'mine' returned NaN or inf maps on kfold.models\[0\]"):
        fl.metrics.reco_mege_of_explainer(kfold.models, x, bad, folds=kfold.folds, labels=y, name="mine")

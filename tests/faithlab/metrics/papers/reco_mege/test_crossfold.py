"""ReCo / MeGe (spec §4, ``faithlab.metrics.papers.reco_mege.crossfold``): oracle cases, slow references (scipy
spearmanr, a brute-force ReCo, a loop port of xplique's pairing), invariances and bad input; the one call shape of
ReCo/MeGe's and the baselines' functions, and evaluate's ReCo and MeGe equal to ``reco_mege_of_explainer``. Bhatt et
al.'s μF and S_avg are test_baselines.py's."""

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

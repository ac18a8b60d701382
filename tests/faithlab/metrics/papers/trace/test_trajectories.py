"""TRACE (spec §5): patch deletion curves, trajectories, greedy / annealing / complete search, against closed forms
on additive models, brute force and full re-evaluation."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

import faithlab as fl
from faithlab import perturb
from faithlab.metrics.papers.trace import trajectories as T
from faithlab.metrics import search as S
from oracles import Additive, small_cnn


def _additive(edge: int = 3, side: int = 6, seed: int = 0):
    """An additive model on all-ones images whose patch weights are distinct: deleting patch p lowers the target
    logit by exactly w_p, so the optimum trajectories are known (patches sorted by weight)."""
    g = torch.Generator().manual_seed(seed)
    t = edge * edge
    patch_w = torch.randperm(t, generator=g).double() + 1.0  # distinct, positive
    k = side // edge
    pixel_w = patch_w.view(1, 1, edge, edge).repeat_interleave(k, 2).repeat_interleave(k, 3) / (k * k)
    x = torch.ones(2, 1, side, side, dtype=torch.float64)
    return Additive(pixel_w[0]), x, patch_w, torch.zeros(2, dtype=torch.int64)


def _cnn_case(b: int = 3, side: int = 8):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(b, 2, side, side, generator=g)
    return small_cnn(2, side, 3), x, torch.tensor([0, 1, 2][:b])


# ------------------------------------------------------------------------------------------ curves and maps
def test_deletion_curve_of_an_additive_model_is_the_remaining_weight():
    model, x, w, y = _additive()
    tau = torch.stack([torch.randperm(9, generator=torch.Generator().manual_seed(s)) for s in range(2)])
    curve = T.deletion_curve(model, x, tau, edge=3, output="logit", target=y)
    expected = w.sum() - torch.cat([torch.zeros(2, 1, dtype=torch.float64), w[tau].cumsum(1)], 1)
    torch.testing.assert_close(curve, expected)
    d = T.trajectory_scores_details(model, x, tau, edge=3, output="logit", target=y)
    torch.testing.assert_close(d["lerf"], expected)
    torch.testing.assert_close(d["morf"], T.deletion_curve(model, x, tau.flip(1), edge=3, output="logit", target=y))
    torch.testing.assert_close(d["lerf_morf"], d["lerf"].sum(1) - d["morf"].sum(1))
    torch.testing.assert_close(T.trajectory_scores(model, x, tau, edge=3, output="logit", target=y), d["lerf_morf"])


def test_lerf_morf_scores_the_trajectory_of_each_map():
    """The metric's call shape takes maps: their patch-mean trajectory scored by trajectory_scores, exactly."""
    model, x, _ = _cnn_case()
    maps = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(6))
    for edge, reduce in ((4, "mean"), (2, "mean_abs")):
        tau = T.trajectory_from_map(maps, x, edge=edge, reduce=reduce)
        want = T.trajectory_scores_details(model, x, tau, edge=edge, reference="mean", output="logit")
        got = T.lerf_morf_details(model, x, maps, edge=edge, reduce=reduce, reference="mean", output="logit")
        assert torch.equal(got["trajectory"], tau)
        for key in ("lerf", "morf", "lerf_auc", "morf_auc", "lerf_morf"):
            assert torch.equal(got[key], want[key]), key
        assert torch.equal(T.lerf_morf(model, x, maps, edge=edge, reduce=reduce, reference="mean", output="logit"),
                           want["lerf_morf"])
    assert not torch.equal(T.lerf_morf(model, x, maps, edge=4), T.lerf_morf(model, x, -maps, edge=4))
    assert torch.equal(T.lerf_morf(model, x, maps), T.lerf_morf(model, x, maps, edge=4))  # 8 px: the 4 × 4 grid


def test_default_edge_is_the_first_of_7_4_2_that_divides_the_side():
    sides = {14: 7, 28: 7, 8: 4, 12: 4, 6: 2, 10: 2}
    assert {s: T.default_edge(torch.zeros(1, 1, s, s)) for s in sides} == sides
    assert T.default_edge(torch.zeros(1, 1, 9, 9), 3) == 3
    with pytest.raises(ValueError, match="^edge: no default patch grid divides images of 9×9"):
        T.default_edge(torch.zeros(1, 1, 9, 9))
    with pytest.raises(ValueError, match="^edge: no default patch grid divides images of 8×16"):
        T.default_edge(torch.zeros(1, 1, 8, 16))
    with pytest.raises(ValueError, match="edge"):
        T.default_edge(torch.zeros(1, 1, 8, 8), 0)


def test_insertion_equals_deletion_in_auc_theorem_3_1():
    model, x, y = _cnn_case()
    tau = T.trajectory_from_map(torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(2)), x, edge=4)
    ins_morf = T.insertion_curve(model, x, tau.flip(1), edge=4, target=y)
    del_lerf = T.deletion_curve(model, x, tau, edge=4, target=y)
    torch.testing.assert_close(ins_morf, del_lerf.flip(1))  # the same inputs, read in reverse
    torch.testing.assert_close(ins_morf.sum(1), del_lerf.sum(1))


def test_trajectory_from_map_sorts_patch_means_ascending_with_ties_by_index():
    x = torch.zeros(1, 1, 4, 4)
    a = torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [5.0, 5.0, 1.0, 1.0], [5.0, 5.0, 1.0, 3.0]])
    tau = T.trajectory_from_map(a.view(1, 1, 4, 4), x, edge=2)
    # patch means: [1, 0, 5, 1.5]; ascending → 1, 0, 3, 2
    assert tau.tolist() == [[1, 0, 3, 2]]
    with pytest.warns(perturb.ConstantMapWarning, match="1 of 1"):  # no ranking: the ids in order, counted
        tied = T.trajectory_from_map(torch.zeros(1, 1, 4, 4), x, edge=2)
    assert tied.tolist() == [[0, 1, 2, 3]]
    signed = torch.tensor([[-4.0, 1.0, 2.0, 3.0]])
    assert T.trajectory_from_map(signed, x, edge=2).tolist() == [[0, 1, 2, 3]]
    absolute = T.trajectory_from_map(torch.tensor([-4.0, 1, 2, 3]).view(1, 1, 2, 2).repeat_interleave(2, 2)
                                     .repeat_interleave(2, 3), x, edge=2, reduce="mean_abs")
    assert absolute.tolist() == [[1, 2, 3, 0]]


def test_trajectory_attribution_round_trips_and_gives_the_last_patch_one():
    g = torch.Generator().manual_seed(3)
    tau = torch.stack([torch.randperm(16, generator=g) for _ in range(4)])
    pi = T.trajectory_attribution(tau, alpha=2.0)
    assert torch.equal(pi.gather(1, tau[:, -1:]), torch.ones(4, 1))
    torch.testing.assert_close(pi.gather(1, tau[:, :1]), torch.full((4, 1), (1 / 16) ** 2))
    x = torch.zeros(4, 3, 8, 8)
    assert torch.equal(T.trajectory_from_map(pi, x, edge=4), tau)
    nearest = pi.view(4, 1, 4, 4).repeat_interleave(2, 2).repeat_interleave(2, 3)
    assert torch.equal(T.trajectory_from_map(nearest, x, edge=4), tau)
    shown = T.trajectory_map(tau, 32, alpha=3.0)
    assert shown.shape == (4, 1, 32, 32) and float(shown.max()) <= 1.0 and float(shown.min()) > 0


def test_patch_mean_reference():
    x = torch.arange(32.0).view(1, 2, 4, 4)
    ref = T.patch_mean_reference(x, 2)
    assert torch.equal(ref[0, 1, :2, :2], x[0, 1, :2, :2].mean().expand(2, 2))
    assert torch.equal(ref[0, 0, 2:, 2:], x[0, 0, 2:, 2:].mean().expand(2, 2))


# ------------------------------------------------------------------------------------------ searches
def test_greedy_is_exact_for_an_additive_model():
    model, x, w, y = _additive()
    optimum = w.argsort().expand(2, -1)
    for objective in ("le", "mo"):
        found = S.greedy(model, x, edge=3, objective=objective, output="logit", target=y)
        assert torch.equal(found.trajectory, optimum), objective
    best = T.trajectory_scores_details(model, x, optimum, edge=3, output="logit", target=y)
    g = S.greedy(model, x, edge=3, objective="le", output="logit", target=y)
    torch.testing.assert_close(g.lerf, best["lerf"])
    torch.testing.assert_close(g.morf, best["morf"])
    # t(t+1)/2 − 1 step inputs plus the start, the end and the other curve
    assert int(g.passes[-1]) == 2 * (9 * 10 // 2 - 1 + 2 + 10)


@pytest.mark.parametrize("objective", ["le", "mo", "le-mo"])
def test_annealing_reaches_the_optimum_of_an_additive_model_from_a_random_start(objective):
    model, x, w, y = _additive()
    start = torch.stack([torch.randperm(9, generator=torch.Generator().manual_seed(s)) for s in (5, 6)])
    found = S.anneal(model, x, edge=3, objective=objective, init=start, iterations=1500, t0=2.0, generator=0,
                     output="logit", target=y)
    assert torch.equal(found.trajectory, w.argsort().expand(2, -1))


@pytest.mark.parametrize("objective", ["le", "mo", "le-mo"])
def test_incremental_energy_equals_full_reevaluation(objective):
    model, x, y = _cnn_case()
    for iterations in (1, 7, 60):
        fast = S.anneal(model, x, edge=4, objective=objective, iterations=iterations, t0=0.05, generator=4,
                        target=y)
        slow = S.anneal(model, x, edge=4, objective=objective, iterations=iterations, t0=0.05, generator=4,
                        target=y, incremental=False)
        assert torch.equal(fast.trajectory, slow.trajectory)
        torch.testing.assert_close(fast.energy, slow.energy, atol=1e-5, rtol=0)
        again = T.trajectory_scores_details(model, x, fast.trajectory, edge=4, target=y)
        torch.testing.assert_close(fast.lerf, again["lerf"], atol=1e-6, rtol=0)
        torch.testing.assert_close(fast.morf, again["morf"], atol=1e-6, rtol=0)
        assert int(fast.accepted.sum()) > 0 or iterations == 1
        # an incremental step evaluates j − i inputs per curve, a full one t + 1 per curve the objective needs
        # (the published cost), the ignored curve once at the end
        assert int(fast.passes[-1] - fast.passes[0]) < int(slow.passes[-1] - slow.passes[0])
        b, t = x.shape[0], 16
        curves = 2 if objective == "le-mo" else 1
        assert int(slow.passes[-1] - slow.passes[0]) == iterations * curves * b * (t + 1) + (2 - curves) * b * (t + 1)


def test_annealing_refuses_an_init_search_of_other_images():
    model, x, y = _cnn_case()
    g = S.greedy(model, x[:2], edge=4, target=y[:2])
    with pytest.raises(ValueError, match="init"):
        S.anneal(model, x, edge=4, init=g, iterations=2, generator=0, target=y)
    wrong = S.Search(S.greedy(model, x, edge=4, target=y).trajectory, g.lerf, g.morf, g.passes)
    with pytest.raises(ValueError, match="init's curves"):
        S.anneal(model, x, edge=4, init=wrong, iterations=2, generator=0, target=y)


def test_annealing_never_ends_worse_than_its_greedy_start():
    model, x, y = _cnn_case()
    for objective, start in (("le", "le"), ("mo", "mo"), ("le-mo", "le")):
        g = S.greedy(model, x, edge=4, objective=start, target=y)
        sa = S.anneal(model, x, edge=4, objective=objective, iterations=40, generator=1, target=y)
        start_energy = -S.objective_value(g.lerf, g.morf, objective)
        torch.testing.assert_close(sa.energy[0], start_energy)
        assert bool((sa.energy[1:] <= sa.energy[:-1]).all())
        assert bool((-S.objective_value(sa.lerf, sa.morf, objective) <= start_energy + 1e-12).all())


def test_complete_search_equals_brute_force_and_bounds_the_searches():
    model, x, y = _cnn_case(b=2, side=6)
    cs = S.complete_search(model, x, edge=3, target=y, batch_size=97)
    units = T.patch_grid(x, 3)
    for b in range(2):
        for k in range(10):
            subsets = torch.tensor([[p in c for p in range(9)] for c in itertools.combinations(range(9), k)])
            out = fl.perturb.removal_outputs(model, x[b:b + 1].expand(len(subsets), -1, -1, -1), subsets,
                                             units=units, target=y[b:b + 1].expand(len(subsets)))
            torch.testing.assert_close(cs["min"][b, k], out.min())
            torch.testing.assert_close(cs["max"][b, k], out.max())
    greedy_le = S.greedy(model, x, edge=3, objective="le", target=y)
    greedy_mo = S.greedy(model, x, edge=3, objective="mo", target=y)
    sa_le = S.anneal(model, x, edge=3, objective="le", iterations=200, generator=0, target=y)
    sa_mo = S.anneal(model, x, edge=3, objective="mo", iterations=200, generator=0, target=y)
    tol = 1e-5
    assert bool((cs["max"].sum(1) + tol >= sa_le.lerf.sum(1)).all())
    assert bool((sa_le.lerf.sum(1) + tol >= greedy_le.lerf.sum(1)).all())
    assert bool((cs["min"].sum(1) <= sa_mo.morf.sum(1) + tol).all())
    assert bool((sa_mo.morf.sum(1) <= greedy_mo.morf.sum(1) + tol).all())


def test_random_deletion_curves():
    model, x, y = _cnn_case()
    a = S.random_deletion_curves(model, x, edge=4, n_orders=5, generator=7, target=y)
    b = S.random_deletion_curves(model, x, edge=4, n_orders=5, generator=7, target=y, batch_size=3)
    c = S.random_deletion_curves(model, x, edge=4, n_orders=5, generator=8, target=y)
    assert a.shape == (3, 5, 17)
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, c)
    clean = fl.perturb.removal_outputs(model, x, torch.zeros(3, 16, dtype=torch.bool), units=T.patch_grid(x, 4),
                                       target=y)
    torch.testing.assert_close(a[:, :, 0], clean[:, None].expand(-1, 5))
    torch.testing.assert_close(a[:, :, -1], a[:, :1, -1].expand(-1, 5))


# ------------------------------------------------------------------------------------------ invariances
def test_batch_size_and_seed_invariance_of_the_searches():
    model, x, y = _cnn_case()
    ref = fl.perturb.make_reference(x, "blur", kernel_size=3, sigma=1.0)
    runs = [S.anneal(model, x, edge=4, objective="le-mo", iterations=30, generator=3, reference=ref, target=y,
                     batch_size=size) for size in (5, 1000)]
    assert torch.equal(runs[0].trajectory, runs[1].trajectory)
    torch.testing.assert_close(runs[0].lerf, runs[1].lerf)
    other = S.anneal(model, x, edge=4, objective="le-mo", iterations=30, generator=4, reference=ref, target=y)
    assert not torch.equal(other.accepted, runs[0].accepted) or not torch.equal(other.trajectory, runs[0].trajectory)
    g = [S.greedy(model, x, edge=4, objective="mo", reference="mean", target=y, batch_size=size) for size in (3, 999)]
    assert torch.equal(g[0].trajectory, g[1].trajectory)
    cs = [S.complete_search(model, x[:1], edge=4, target=y[:1], batch_size=size)["min"]
          for size in (1000, 4096)]
    torch.testing.assert_close(cs[0], cs[1])
    state = torch.random.get_rng_state()
    S.anneal(model, x, edge=4, iterations=3, generator=0, target=y)
    assert torch.equal(state, torch.random.get_rng_state())


def test_predicted_class_is_the_default_target():
    model, x, _ = _cnn_case()
    predicted = model(x).argmax(1)
    tau = T.trajectory_from_map(torch.rand(3, 16, generator=torch.Generator().manual_seed(0)), x, edge=4)
    torch.testing.assert_close(T.deletion_curve(model, x, tau, edge=4),
                               T.deletion_curve(model, x, tau, edge=4, target=predicted))


# ------------------------------------------------------------------------------------------ bad input
def test_bad_arguments_name_themselves():
    model, x, y = _cnn_case()
    tau = torch.arange(16).expand(3, -1)
    with pytest.raises(ValueError, match="edge"):
        T.deletion_curve(model, x, tau, edge=3)
    with pytest.raises(ValueError, match="order"):
        T.deletion_curve(model, x, torch.zeros(3, 16, dtype=torch.int64), edge=4)
    with pytest.raises(ValueError, match="objective"):
        S.greedy(model, x, edge=4, objective="le-mo")
    with pytest.raises(ValueError, match="objective"):
        S.anneal(model, x, edge=4, objective="best", generator=0)
    with pytest.raises(ValueError, match="iterations"):
        S.anneal(model, x, edge=4, iterations=0, generator=0)
    with pytest.raises(ValueError, match="generator"):
        S.anneal(model, x, edge=4, iterations=2)
    with pytest.raises(ValueError, match="t0"):
        S.anneal(model, x, edge=4, iterations=2, generator=0, output="log_odds")
    with pytest.raises(ValueError, match="eta"):
        S.anneal(model, x, edge=4, iterations=2, generator=0, eta=1.5)
    with pytest.raises(ValueError, match="t0"):                     # an infinite temperature accepts every move
        S.anneal(model, x, edge=4, iterations=2, generator=0, t0=math.inf)
    with pytest.raises(ValueError, match="init"):
        S.anneal(model, x, edge=4, iterations=2, generator=0, init=torch.zeros(3, 16, dtype=torch.int64))
    with pytest.raises(ValueError, match="complete search"):
        S.complete_search(model, x, edge=8)
    with pytest.raises(ValueError, match="alpha"):
        T.trajectory_attribution(tau, alpha=0)
    with pytest.raises(TypeError, match="trajectory"):
        T.trajectory_scores(model, x, tau.float(), edge=4)


def test_a_map_with_other_channels_than_x_raises():
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="attributions"):
        T.trajectory_from_map(torch.randn(2, 3, 8, 8), x, edge=4)
    _, x3, _ = _cnn_case()                                      # 2 channels
    with pytest.raises(ValueError, match="attributions"):
        T.trajectory_from_map(torch.randn(3, 3, 8, 8), x3, edge=4)
    a = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(T.trajectory_from_map(a, x3, edge=4), T.trajectory_from_map(a[:, 0], x3, edge=4))


def test_x_on_another_device_than_the_model_raises_before_reading_x():
    model, x, y = _cnn_case()
    tau = torch.arange(16).expand(3, -1)
    meta = x.to("meta")                                         # its values cannot be read: the device check is first
    with pytest.raises(ValueError, match="model is on cpu but x is on meta"):
        T.trajectory_scores(model, meta, tau.to("meta"), edge=4, target=y.to("meta"))
    with pytest.raises(ValueError, match="model is on cpu but x is on meta"):
        S.greedy(model, meta, edge=4)
    with pytest.raises(ValueError, match="model is on meta but x is on cpu"):
        T.deletion_curve(small_cnn(2, 8, 3).to("meta"), x, tau, edge=4)


def test_a_model_returning_nan_never_gives_a_score():
    class NaNAfterDeletion(torch.nn.Module):
        def forward(self, x):
            z = x.flatten(1).sum(1, keepdim=True)
            return torch.cat([z, torch.where(x.flatten(1).abs().sum(1, keepdim=True) < 60, math.nan, 0.0)], 1)

    x = torch.ones(2, 1, 8, 8)
    model = NaNAfterDeletion().eval()
    y = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(ValueError, match="NaN"):
        S.greedy(model, x, edge=4, target=y)
    with pytest.raises(ValueError, match="NaN"):
        S.anneal(model, x, edge=4, init=torch.arange(16).expand(2, -1), iterations=5, generator=0, target=y)
    with pytest.raises(ValueError, match="NaN"):
        S.complete_search(model, x, edge=2, target=y)

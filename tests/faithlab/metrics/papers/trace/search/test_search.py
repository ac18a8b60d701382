"""TRACE's other meta-heuristics (Appendices E/F): the genetic algorithm and tabu search of
:mod:`faithlab.metrics.papers.trace.search`, against the exact optimum of small grids found by enumeration, their
best-so-far guarantees, their exact cost, and the invariances and errors every search has."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from faithlab.metrics.papers.trace import trajectories as T
from faithlab.metrics import search as S
from oracles import Additive, small_cnn


class Table(torch.nn.Module):
    """A non-additive model whose target logit is an arbitrary table of the patches present: image i (all pixels
    i + 1) with the patch set P present gives ``table[i, Σ_{p∈P} 2^p]`` (the empty image gives ``table[:, 0]``, the
    same for every image). Inputs ``(N, 1, 2e, 2e)``, patches of 2 × 2 pixels, zero reference."""

    def __init__(self, table: torch.Tensor, edge: int):
        super().__init__()
        self.table, self.edge = table, edge
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        present = F.avg_pool2d(x, 2).flatten(1) != 0  # (N, t) row-major patch ids
        subset = (present.long() << torch.arange(present.shape[1])).sum(1)
        image = (x.flatten(1).amax(1).round().long() - 1).clamp_min(0)
        f = self.table[image, subset]
        return torch.stack([f, torch.zeros_like(f)], 1)


def _table_case(edge: int = 2, b: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    t = edge * edge
    table = torch.randn(b, 2 ** t, generator=g, dtype=torch.float64)
    table[:, 0] = 0.0
    x = (torch.arange(b, dtype=torch.float64) + 1).view(b, 1, 1, 1).expand(b, 1, 2 * edge, 2 * edge).clone()
    return Table(table, edge), x, table, torch.zeros(b, dtype=torch.int64)


def _enumerate(table: torch.Tensor, t: int, objective: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every trajectory's objective by hand, from the table → (orders (t!, t), values (B, t!))."""
    orders = torch.tensor(list(itertools.permutations(range(t))))
    full = 2 ** t - 1

    def curve(order):  # deletion curve of every order: the set left after deleting the first k patches
        bits = torch.cat([torch.zeros(len(order), 1, dtype=torch.long), (1 << order).cumsum(1)], 1)
        return table[:, full - bits]  # (B, t!, t + 1)

    lerf, morf = curve(orders), curve(orders.flip(1))
    return orders, S.objective_value(lerf, morf, objective)


def _additive(edge: int = 3, side: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    t = edge * edge
    patch_w = torch.randperm(t, generator=g).double() + 1.0
    k = side // edge
    pixel_w = patch_w.view(1, 1, edge, edge).repeat_interleave(k, 2).repeat_interleave(k, 3) / (k * k)
    return Additive(pixel_w[0]), torch.ones(2, 1, side, side, dtype=torch.float64), patch_w, torch.zeros(2).long()


def _cnn_case(b: int = 3):
    x = torch.randn(b, 2, 8, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return small_cnn(2, 8, 3).double(), x, torch.tensor([0, 1, 2][:b])


def _found(search: S.Search, objective: str) -> torch.Tensor:
    return S.objective_value(search.lerf, search.morf, objective)


# ------------------------------------------------------------------------------------------ the optimum
@pytest.mark.parametrize("objective", ["le-mo", "le", "mo"])
def test_both_reach_the_enumerated_optimum_of_a_non_additive_model_and_a_crippled_run_does_not(objective):
    """t = 4: all 24 trajectories scored by hand. From the worst trajectory, enough generations / iterations reach
    the best one's value; no generation / iteration leaves the search short of it (the test can fail)."""
    model, x, table, y = _table_case()
    orders, values = _enumerate(table, 4, objective)
    best, worst = values.max(1).values, orders[values.argmin(1)]
    assert bool((values.max(1).values > values.min(1).values + 0.5).all())  # a landscape worth searching
    kw = dict(edge=2, objective=objective, init=worst, output="logit", target=y, generator=3, progress=False)
    ga = S.genetic(model, x, population=10, generations=40, **kw)
    tb = S.tabu(model, x, iterations=30, n_neighbours=3, tenure=2, **kw)
    for search in (ga, tb):
        torch.testing.assert_close(_found(search, objective), best)
        # the curves returned are the trajectory's own: its value from the table
        index = (orders[None] == search.trajectory[:, None]).all(2).float().argmax(1)
        torch.testing.assert_close(values.gather(1, index[:, None]).squeeze(1), best)
    crippled_ga = S.genetic(model, x, population=2, elite=1, generations=0, **kw)
    crippled_tabu = S.tabu(model, x, iterations=0, **kw)
    assert bool((_found(crippled_tabu, objective) < best - 1e-9).all())
    assert torch.equal(crippled_tabu.trajectory, worst)
    assert bool((_found(crippled_ga, objective) < best - 1e-9).any())


def test_greedy_misses_the_optimum_the_searches_reach():
    """The non-additive table is a real test of the searches: greedy (exact for additive models) falls short."""
    model, x, table, y = _table_case(seed=1)
    _, values = _enumerate(table, 4, "le")
    g = S.greedy(model, x, edge=2, objective="le", output="logit", target=y)
    ga = S.genetic(model, x, edge=2, objective="le", init=g, population=10, generations=40, output="logit",
                   target=y, generator=0, progress=False)
    tb = S.tabu(model, x, edge=2, objective="le", init=g, iterations=30, n_neighbours=3, tenure=2, output="logit",
                target=y, generator=0, progress=False)
    assert bool((_found(g, "le") < values.max(1).values - 1e-9).any())
    torch.testing.assert_close(_found(ga, "le"), values.max(1).values)
    torch.testing.assert_close(_found(tb, "le"), values.max(1).values)


def test_both_sort_the_patches_of_an_additive_model_from_a_random_start():
    """t = 9 (362,880 trajectories): ΣLeRF of an additive model is maximal for the patches sorted by weight."""
    model, x, w, y = _additive()
    start = torch.stack([torch.randperm(9, generator=torch.Generator().manual_seed(s)) for s in (5, 6)])
    kw = dict(edge=3, objective="le", init=start, output="logit", target=y, generator=1, progress=False)
    optimum = w.argsort().expand(2, -1)
    assert torch.equal(S.tabu(model, x, iterations=40, n_neighbours=30, tenure=3, **kw).trajectory, optimum)
    assert torch.equal(S.genetic(model, x, population=12, generations=120, **kw).trajectory, optimum)


# ------------------------------------------------------------------------------------------ best so far
@pytest.mark.parametrize("objective", ["le", "mo", "le-mo"])
def test_neither_ends_worse_than_its_start_and_the_best_never_gets_worse(objective):
    model, x, y = _cnn_case()
    start = S.greedy(model, x, edge=4, objective="mo" if objective == "mo" else "le", target=y)
    start_value = S.objective_value(start.lerf, start.morf, objective)
    ga = S.genetic(model, x, edge=4, objective=objective, init=start, population=6, generations=4, generator=2,
                   target=y, progress=False)
    tb = S.tabu(model, x, edge=4, objective=objective, init=start, iterations=10, n_neighbours=4, generator=2,
                target=y, progress=False)
    torch.testing.assert_close(tb.energy[0], -start_value)
    assert bool((ga.energy[0] <= -start_value).all())  # the start is in the first population
    for search in (ga, tb):
        assert bool((search.energy[1:] <= search.energy[:-1]).all())
        assert bool((_found(search, objective) >= start_value - 1e-12).all())
        torch.testing.assert_close(-search.energy[-1], _found(search, objective))
        d = T.trajectory_scores_details(model, x, search.trajectory, edge=4, target=y)
        torch.testing.assert_close(search.lerf, d["lerf"])
        torch.testing.assert_close(search.morf, d["morf"])
    assert tb.accepted.shape == (3,) and bool((tb.accepted <= 10).all())


# ------------------------------------------------------------------------------------------ cost
class _Counter:
    """Counts the inputs a model's forward passes see, with a forward hook."""

    def __init__(self, model: torch.nn.Module):
        self.inputs = 0
        model.register_forward_hook(self)

    def __call__(self, module, args, output):
        self.inputs += args[0].shape[0]


def _init(kind: str, model, x, y):
    if kind == "none":
        return None
    if kind == "trajectory":
        return torch.stack([torch.randperm(16, generator=torch.Generator().manual_seed(i)) for i in range(len(x))])
    return S.greedy(model, x, edge=4, target=y)


@pytest.mark.parametrize("objective", ["le", "mo", "le-mo"])
@pytest.mark.parametrize("init", ["none", "trajectory", "search"])
@pytest.mark.parametrize("given_target", [True, False])
def test_the_cost_functions_count_the_inputs_the_model_sees(objective, init, given_target):
    model, x, y = _cnn_case()
    start = _init(init, model, x, y)
    target = y if given_target else None
    counter = _Counter(model)
    kw = dict(edge=4, objective=objective, init=start, target=target)
    ga = dict(population=5, generations=3, elite=1)
    # an int batch size: the default would add its one-input activation pass (once per model) to the count
    found = S.genetic(model, x, generator=4, progress=False, batch_size=64, **kw, **ga)
    assert counter.inputs == S.genetic_cost(x.shape, **kw, **ga)
    assert int(found.passes[-1]) + (0 if given_target else 3) == counter.inputs
    g = torch.Generator().manual_seed(9)
    cost = S.tabu_cost(x, generator=g, iterations=6, n_neighbours=3, sample_index=torch.tensor([4, 0, 2]), **kw)
    counter.inputs = 0
    found = S.tabu(model, x, generator=g, iterations=6, n_neighbours=3, sample_index=torch.tensor([4, 0, 2]),
                   progress=False, batch_size=64, **kw)
    assert counter.inputs == cost
    assert int(found.passes[-1]) + (0 if given_target else 3) == cost
    assert len(found.passes) == 7 and found.energy.shape == (7, 3)


def test_the_costs_follow_their_formulas():
    t, b = 16, 2
    assert S.genetic_cost((b, 1, 8, 8), edge=4, population=10, generations=7, elite=2) == (
        b + 2 * b + b * 2 * (t - 1) * 10 + 7 * b * 2 * (t - 1) * 8)
    per_swap = [(S.tabu_cost((4, 1, 8, 8), edge=4, iterations=50, n_neighbours=5, generator=s, objective="le",
                             init=torch.zeros(4, 16), target=torch.zeros(4)) - 4 * 2 * 17 - 4 * 17) / (4 * 50 * 5)
                for s in range(3)]
    assert all(17 / 3 - 1 < c < 17 / 3 + 1 for c in per_swap) and len(set(per_swap)) > 1
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    S.tabu_cost((2, 1, 8, 8), edge=4, generator=g)
    assert torch.equal(g.get_state(), state)


# ------------------------------------------------------------------------------------------ invariances
def test_batch_size_seed_and_split_invariance():
    model, x, y = _cnn_case()
    runs = {
        "genetic": lambda **o: S.genetic(model, x, edge=4, population=6, generations=3, target=y, progress=False, **o),
        "tabu": lambda **o: S.tabu(model, x, edge=4, iterations=6, n_neighbours=3, target=y, progress=False, **o),
    }
    for name, run in runs.items():
        small, large = run(generator=5, batch_size=1), run(generator=5, batch_size=10_000)
        assert torch.equal(small.trajectory, large.trajectory) and torch.equal(small.passes, large.passes), name
        for field in ("lerf", "morf", "energy"):
            torch.testing.assert_close(getattr(small, field), getattr(large, field), msg=f"{name}.{field}")
        again, other = run(generator=torch.Generator().manual_seed(5), batch_size=1), run(generator=6, batch_size=1)
        assert torch.equal(again.trajectory, small.trajectory) and torch.equal(again.energy, small.energy), name
        assert not torch.equal(other.energy, small.energy), name
    # keyed to the sample: image 2 alone, with its global index, is searched as in the whole batch
    for search, kw in ((S.genetic, dict(population=6, generations=3)), (S.tabu, dict(iterations=6, n_neighbours=3))):
        whole = search(model, x, edge=4, target=y, generator=5, progress=False, **kw)
        alone = search(model, x[2:], edge=4, target=y[2:], generator=5, sample_index=torch.tensor([2]), progress=False,
                       **kw)
        assert torch.equal(alone.trajectory, whole.trajectory[2:]), search.__name__
    state = torch.random.get_rng_state()
    runs["genetic"](generator=0)
    runs["tabu"](generator=0)
    assert torch.equal(state, torch.random.get_rng_state())


# ------------------------------------------------------------------------------------------ bad input
def test_a_model_returning_nan_never_gives_a_score():
    class NaNAfterDeletion(torch.nn.Module):
        def forward(self, x):
            z = x.flatten(1).sum(1, keepdim=True)
            return torch.cat([z, torch.where(x.flatten(1).abs().sum(1, keepdim=True) < 60, math.nan, 0.0)], 1)

    x, y = torch.ones(2, 1, 8, 8), torch.zeros(2, dtype=torch.int64)
    model = NaNAfterDeletion().eval()
    start = torch.arange(16).expand(2, -1)
    with pytest.raises(ValueError, match="NaN"):
        S.genetic(model, x, edge=4, init=start, generations=2, generator=0, target=y, progress=False)
    with pytest.raises(ValueError, match="NaN"):
        S.tabu(model, x, edge=4, init=start, iterations=2, generator=0, target=y, progress=False)


@pytest.mark.parametrize(("search", "argument", "value"), [
    ("genetic", "objective", "best"), ("genetic", "population", 1), ("genetic", "population", 2.5),
    ("genetic", "generations", -1), ("genetic", "elite", 0), ("genetic", "elite", 6), ("genetic", "tournament", 0),
    ("genetic", "crossover", 1.5), ("genetic", "mutation", -0.1), ("genetic", "mutation", math.nan),
    ("genetic", "generator", None), ("genetic", "edge", 3), ("genetic", "edge", 1),
    ("tabu", "objective", "best"), ("tabu", "iterations", -1), ("tabu", "n_neighbours", 0),
    ("tabu", "tenure", -2), ("tabu", "generator", None), ("tabu", "edge", 1),
    ("genetic", "init", "wrong_shape"), ("tabu", "init", "wrong_shape"), ("genetic", "init", "not_a_permutation"),
])
def test_bad_arguments_name_themselves(search, argument, value):
    model, x, y = _cnn_case()
    if value == "wrong_shape":
        value = torch.arange(16).expand(2, -1)
    elif value == "not_a_permutation":
        value = torch.zeros(3, 16, dtype=torch.int64)
    kw = {"edge": 4, "generator": 0, "target": y, "population": 6, "generations": 1, "progress": False,
          argument: value}
    if search == "tabu":
        kw = {k: v for k, v in kw.items() if k not in ("population", "generations")}
        kw.setdefault("iterations", 1)
    with pytest.raises(ValueError, match=argument):
        getattr(S, search)(model, x, **kw)
    if argument not in ("init", "generator", "mutation", "crossover", "tournament", "tenure"):
        cost = S.genetic_cost if search == "genetic" else S.tabu_cost
        kw = {k: v for k, v in kw.items() if k in cost.__code__.co_varnames}
        with pytest.raises(ValueError, match=argument):
            cost(x.shape, **kw)

"""TRACE-SA's cost and progress (issue 31): :func:`anneal_cost` equals the model inputs a real call evaluates,
anneal's progress bar states that number and reaches it, and the defaults are the short CPU run with the paper's
K one argument away."""

from __future__ import annotations

import pytest
import torch

from faithlab.metrics import search as S
from faithlab.metrics.papers.trace.search import annealing
from oracles import small_cnn


class Counting(torch.nn.Module):
    """A model that counts the inputs it is given."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model, self.inputs = model, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.inputs += x.shape[0]
        return self.model(x)


def _case(b: int = 3, side: int = 8):
    x = torch.randn(b, 2, side, side, generator=torch.Generator().manual_seed(1))
    return small_cnn(2, side, 3), x, torch.tensor([0, 1, 2][:b])


def _init(kind: str, model, x, y, edge: int = 4):
    if kind == "greedy":
        return None
    if kind == "trajectory":
        return torch.stack([torch.randperm(edge * edge, generator=torch.Generator().manual_seed(i))
                            for i in range(x.shape[0])])
    return S.greedy(model, x, edge=edge, target=y)


@pytest.mark.parametrize("objective", ["le", "mo", "le-mo"])
@pytest.mark.parametrize("incremental", [True, False])
@pytest.mark.parametrize("init", ["greedy", "trajectory", "search"])
@pytest.mark.parametrize("given_target", [True, False])
def test_anneal_cost_is_the_number_of_inputs_the_model_sees(objective, incremental, init, given_target):
    model, x, y = _case()
    start = _init(init, model, x, y)
    kw = dict(edge=4, objective=objective, init=start, iterations=9, incremental=incremental,
              target=y if given_target else None, sample_index=torch.tensor([5, 0, 2]))
    g = torch.Generator().manual_seed(7)
    cost = S.anneal_cost(x.shape, generator=g, **kw)
    counting = Counting(model).eval()
    # an int batch size: the default would add its one-input activation pass (once per model) to the count
    found = S.anneal(counting, x, generator=g, progress=False, batch_size=64, **kw)
    assert counting.inputs == cost
    passes = int(found.passes[-1]) + (0 if given_target else x.shape[0])  # passes leave out the target's clean pass
    assert passes == cost
    assert S.anneal_cost(x, generator=7, **kw) == cost  # a tensor or its shape, a seed or a generator


def test_anneal_cost_does_not_advance_the_generator():
    _, x, y = _case()
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    S.anneal_cost(x, edge=4, iterations=20, generator=g, target=y)
    assert torch.equal(g.get_state(), state)


def test_anneal_cost_follows_the_proposals_drawn():
    """The incremental count depends on the pairs drawn: other seeds give other counts (≈ (t + 1)/3 per curve)."""
    shape = (4, 2, 8, 8)
    costs = {S.anneal_cost(shape, edge=4, iterations=200, generator=s) for s in range(4)}
    assert len(costs) > 1
    greedy = 4 * (16 * 17 // 2 + 16 + 2)
    for c in costs:
        per_iteration = (c - 2 * 4 - greedy) / (200 * 4 * 2)
        assert 17 / 3 - 1 < per_iteration < 17 / 3 + 1


def test_anneal_cost_refuses_bad_arguments():
    with pytest.raises(TypeError, match="^x must be images"):
        S.anneal_cost((2, 3, 8), edge=4, generator=0)
    with pytest.raises(ValueError, match="edge=3 must divide"):
        S.anneal_cost((2, 3, 8, 8), edge=3, generator=0)
    with pytest.raises(ValueError, match="^generator is required"):
        S.anneal_cost((2, 3, 8, 8), edge=4)
    with pytest.raises(ValueError, match="objective"):
        S.anneal_cost((2, 3, 8, 8), edge=4, generator=0, objective="best")
    assert S.anneal_cost((2, 3, 8, 8), edge=4, incremental=False, iterations=3, init=torch.zeros(2, 16),
                         target=torch.zeros(2)) == 2 * 2 * 17 + 3 * 2 * 2 * 17  # no draws: no generator needed


class _Bars:
    """Records the tqdm bars the annealing opens."""

    def __init__(self, monkeypatch):
        self.bars = []
        real = annealing.tqdm
        outer = self

        class Recorded(real):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                outer.bars.append(self)

        monkeypatch.setattr(annealing, "tqdm", Recorded)


def test_anneal_progress_bar_states_the_cost_and_reaches_it(monkeypatch, capsys):
    model, x, y = _case()
    bars = _Bars(monkeypatch)
    cost = S.anneal_cost(x, edge=4, iterations=6, generator=0)
    S.anneal(model, x, edge=4, iterations=6, generator=0, progress=True)
    (bar,) = bars.bars
    assert bar.total == bar.n == cost
    assert f"{cost:,} model inputs" in bar.desc and "6 iterations" in bar.desc
    assert f"{cost:,} model inputs" in capsys.readouterr().err


def test_anneal_progress_follows_the_environment(monkeypatch, capsys):
    model, x, y = _case()
    monkeypatch.setenv("FAITHLAB_PROGRESS", "0")
    S.anneal(model, x, edge=4, iterations=2, generator=0, target=y)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("FAITHLAB_PROGRESS", "1")
    S.anneal(model, x, edge=4, iterations=2, generator=0, target=y, progress=False)
    assert capsys.readouterr().err == ""
    S.anneal(model, x, edge=4, iterations=2, generator=0, target=y)
    assert "model inputs" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress"):
        S.anneal(model, x, edge=4, iterations=2, generator=0, target=y, progress="yes")


def test_the_default_is_the_short_run_and_the_papers_k_is_one_argument_away():
    model, x, y = _case(b=2)
    short = S.anneal(model, x, edge=2, generator=0, target=y, progress=False)
    assert S.ITERATIONS == 50 and short.energy.shape[0] == S.ITERATIONS + 1
    paper = S.anneal(model, x, edge=2, generator=0, target=y, iterations=S.PAPER_ITERATIONS, progress=False)
    assert S.PAPER_ITERATIONS == 5000 and paper.energy.shape[0] == 5001
    assert S.anneal_cost(x, edge=2, generator=0, target=y, iterations=S.PAPER_ITERATIONS) == int(paper.passes[-1])

"""Few-class Fidelity's perturbation search: its cost, its progress bar, the quick grid and the cache (issue 31) that
spares a second search of the same images (its hits and misses, its bounds), reused by ``fewclass_fid`` and
``fl.evaluate``."""

from __future__ import annotations

import pytest
import torch

from faithlab.metrics.papers.fewclass import fidelity as fc
from fewclass_inputs import images
from oracles import small_cnn


# --- cost, progress, the quick grid and the cache (issue 31) ---------------------------------------------------


class _Counting(torch.nn.Module):
    """A model that counts the inputs it is given."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model, self.inputs = model, 0

    def forward(self, x):
        self.inputs += x.shape[0]
        return self.model(x)


def _counting_cnn(seed: int = 0):
    torch.manual_seed(seed)
    return _Counting(small_cnn(in_channels=3, side=8, n_classes=3)).eval()


def test_the_quick_grid_is_the_papers_distinct_operations_on_a_doubling_sigma_ladder():
    paper = fc.candidate_grid()
    quick = list(fc.QUICK_GRID)
    assert len(quick) == 144 and len(set(quick)) == 144
    assert quick == [entry for entry in paper if entry in set(quick)]  # a subset, in the paper's order
    for op in fc.QUICK_OPERATIONS:
        largest = fc.OPERATIONS[op][1]
        assert sorted({s for o, s, _ in quick if o == op}) == [s for s in fc.QUICK_SIGMAS if s <= largest]
        assert {(s, a) for o, s, a in quick if o == op and s == largest} == {(largest, a) for a in fc.ADJUSTMENTS}
    assert not {o for o, _, _ in quick} & {"V9", "V10", "V11"}
    with pytest.raises(ValueError, match=r"^grid must be one of \('quick', 'paper'\)"):
        fc.selection_cost((1, 3, 8, 8), grid="full")
    with pytest.raises(ValueError, match="sigmas"):
        fc.candidate_grid(sigmas=[0, 2])


@pytest.mark.parametrize("grid", [None, "quick", "paper", "list"])
def test_selection_cost_is_the_number_of_inputs_the_model_sees(grid):
    model = _counting_cnn()
    x = images(b=2, c=3, h=8, w=8).float()
    chosen = fc.candidate_grid(["V1", "V15"]) if grid == "list" else grid
    cost = fc.selection_cost(x, grid=chosen)
    assert cost == fc.selection_cost(tuple(x.shape), grid=chosen)
    assert cost == 2 * {None: 144, "quick": 144, "paper": 804, "list": 72}[grid] + 1
    sel = fc.select_perturbation(model, x, grid=chosen, batch_size=100, cache=False, progress=False)
    assert model.inputs == cost and len(sel["grid"]) == (cost - 1) // 2
    with pytest.raises(TypeError, match="^x must be images"):
        fc.selection_cost((2, 3, 8))


def test_the_default_grid_is_the_quick_one_and_paper_gives_the_804():
    model = small_cnn(in_channels=3, side=8, n_classes=3)
    x = images(b=2, c=3, h=8, w=8).float()
    default = fc.select_perturbation(model, x, progress=False, cache=False)
    assert default["grid"] == list(fc.QUICK_GRID) and default["all_u"].shape == (2, 144)
    paper = fc.select_perturbation(model, x, grid="paper", progress=False, cache=False)
    explicit = fc.select_perturbation(model, x, grid=fc.candidate_grid(), progress=False, cache=False)
    assert paper["grid"] == fc.candidate_grid()
    for key in ("image", "index", "all_u", "all_s"):
        assert torch.equal(paper[key], explicit[key])
    torch.testing.assert_close(fc.candidate_images(x, default["index"]), default["image"])


def test_selection_progress_bar_states_the_cost_and_reaches_it(monkeypatch, capsys):
    bars = []
    real = fc.tqdm

    class Recorded(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(fc, "tqdm", Recorded)
    x = images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1", "V2"])
    fc.select_perturbation(small_cnn(in_channels=3, side=8, n_classes=3), x, grid=grid, batch_size=50, progress=True,
                           cache=False)
    (bar,) = bars
    cost = fc.selection_cost(x, grid=grid)
    assert bar.total == bar.n == cost and f"{cost:,} model inputs" in bar.desc
    assert f"{len(grid)} candidates" in capsys.readouterr().err
    monkeypatch.setenv("FAITHLAB_PROGRESS", "0")
    fc.select_perturbation(small_cnn(in_channels=3, side=8, n_classes=3), x, grid=grid, cache=False)
    assert capsys.readouterr().err == ""


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def test_a_second_search_of_the_same_images_costs_no_forward_pass():
    fc.clear_cache()
    model = _counting_cnn()
    x = images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1"])
    # an int batch size: the default would add its one-input activation pass (once per process) to the count
    first = fc.select_perturbation(model, x, grid=grid, progress=False, batch_size=64)
    spent = model.inputs
    assert spent == fc.selection_cost(x, grid=grid)
    first["image"].zero_()  # the caller's copy: the cache keeps its own
    # same content, another tensor
    again = fc.select_perturbation(model, x.clone(), grid=grid, progress=False, batch_size=64)
    assert model.inputs == spent
    fresh = fc.select_perturbation(model, x, grid=grid, progress=False, cache=False, batch_size=64)
    assert model.inputs == 2 * spent and _same(again, fresh)


@pytest.mark.parametrize("change", ["x in place", "weights in place", "weights loaded", "buffer", "grid",
                                    "normalisation", "cache=False", "clear_cache", "structure"])
def test_the_cache_misses_when_anything_that_matters_changed(change):
    fc.clear_cache()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3))
    model = _Counting(net).eval()
    x = images(b=2, c=3, h=8, w=8).float()
    kw = dict(grid=fc.candidate_grid(["V1"]), batch_size=40, progress=False)
    before = fc.select_perturbation(model, x, **kw)
    spent = model.inputs
    if change == "x in place":
        x[0, 0, 0, 0] += 0.5
    elif change == "weights in place":
        with torch.no_grad():
            net[0].weight.data.add_(0.1)  # through .data: the parameter's version counter does not move
    elif change == "weights loaded":
        other = {k: v + 0.1 if v.is_floating_point() else v for k, v in net.state_dict().items()}
        net.load_state_dict(other)
    elif change == "buffer":
        net[1].running_mean.fill_(0.3)
    elif change == "grid":
        kw["grid"] = fc.candidate_grid(["V3"])
    elif change == "normalisation":
        kw["normalisation"] = (0.5, 0.25)
    elif change == "cache=False":
        kw["cache"] = False
    elif change == "clear_cache":
        fc.clear_cache()
    elif change == "structure":
        net[2] = torch.nn.Tanh().eval()
    after = fc.select_perturbation(model, x, **kw)
    assert model.inputs == spent + fc.selection_cost(x, grid=kw["grid"])  # the whole search ran again
    if change in ("x in place", "weights in place", "weights loaded", "buffer", "structure"):
        assert not torch.equal(before["all_u"], after["all_u"])


@pytest.mark.parametrize("batch_size", [7, "auto"])
def test_the_cache_hits_whatever_the_batch_size(batch_size):
    """The batch size changes no result (beyond float rounding) and "auto" may resolve to another size from one call
    to the next: it is not part of the key, so a search done at one size serves a call at another (fl.evaluate's)."""
    fc.clear_cache()
    model = _counting_cnn()
    x = images(b=2, c=3, h=8, w=8).float()
    grid = fc.candidate_grid(["V1"])
    first = fc.select_perturbation(model, x, grid=grid, batch_size=40, progress=False)
    spent = model.inputs
    again = fc.select_perturbation(model, x, grid=grid, batch_size=batch_size, progress=False)
    assert model.inputs == spent and _same(again, first)
    fresh = fc.select_perturbation(model, x, grid=grid, batch_size=batch_size, progress=False, cache=False)
    assert model.inputs == spent + fc.selection_cost(x, grid=grid)  # "auto" too: the search's own inputs, no more
    for key in ("all_u", "all_s", "u", "s", "p"):
        torch.testing.assert_close(fresh[key], first[key], rtol=1e-6, atol=1e-7)
    assert torch.equal(fresh["index"], first["index"])


def test_the_cache_is_bounded_weak_and_only_for_modules():
    fc.clear_cache()
    grid = fc.candidate_grid(["V1"])
    model = _counting_cnn()
    xs = [images(b=1, c=3, h=8, w=8, seed=s).float() for s in range(fc._Memo.SIZE + 1)]
    for x in xs:  # an int batch size: no one-input activation pass of the default to count
        fc.select_perturbation(model, x, grid=grid, progress=False, batch_size=64)
    one = fc.selection_cost(xs[0], grid=grid)
    assert model.inputs == len(xs) * one
    fc.select_perturbation(model, xs[-1], grid=grid, progress=False, batch_size=64)  # remembered
    assert model.inputs == len(xs) * one
    fc.select_perturbation(model, xs[0], grid=grid, progress=False, batch_size=64)  # the oldest was forgotten
    assert model.inputs == (len(xs) + 1) * one
    assert len(fc._MEMO.entries) == fc._Memo.SIZE

    class Wrapper:  # a transparent wrapper that names its module, as functools.wraps does
        def __init__(self, module):
            self.__wrapped__, self.calls = module, 0

        def __call__(self, z):
            self.calls += z.shape[0]
            return self.__wrapped__(z)

    wrapper = Wrapper(model)
    fc.select_perturbation(wrapper, xs[0], grid=grid, progress=False)
    assert wrapper.calls == 0  # keyed on the module it wraps

    seen = []

    def function(z):  # not a module: its state cannot be fingerprinted, so it is never cached
        seen.append(z.shape[0])
        return model(z)

    fc.select_perturbation(function, xs[0], grid=grid, progress=False, batch_size=64)
    fc.select_perturbation(function, xs[0], grid=grid, progress=False, batch_size=64)
    assert sum(seen) == 2 * one

    fc.clear_cache()
    temporary = _counting_cnn(seed=1)
    fc.select_perturbation(temporary, xs[0], grid=grid, progress=False)
    assert len(fc._MEMO.entries) == 1
    del temporary
    import gc
    gc.collect()
    fc.select_perturbation(model, xs[1], grid=grid, progress=False)  # storing drops the collected model's entry
    assert [e[0]() for e in fc._MEMO.entries.values()] == [model]


def test_fewclass_fid_reuses_a_search_already_done():
    fc.clear_cache()
    model = _counting_cnn()
    x = images(b=2, c=3, h=8, w=8).float()
    maps = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(4))
    sel = fc.select_perturbation(model, x, progress=False)
    spent = model.inputs
    direct = fc.fewclass_fid(model, x, maps, perturbed=sel["image"])
    with_perturbed = model.inputs - spent
    searched = fc.fewclass_fid(model, x, maps)  # selects with the default grid: found in the cache
    assert model.inputs - spent - with_perturbed == with_perturbed  # its own curves only: no search
    assert torch.equal(direct, searched)


def test_evaluate_reuses_a_search_already_done():
    import faithlab as fl

    fc.clear_cache()
    model = small_cnn(in_channels=3, side=8, n_classes=3)
    x = images(b=4, c=3, h=8, w=8, seed=1).float()
    maps = torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    y = model(x).argmax(1)
    kw = dict(metrics=["fewclass_fid"], progress=False)
    first = fl.evaluate(model, x, y, maps, **kw)
    fc.select_perturbation(model, x, progress=False)  # the user's own search: found in the cache
    second = fl.evaluate(model, x, y, maps, **kw)  # finds the search in the cache
    search = fc.selection_cost(x)
    assert second.attrs["forward_inputs"] == first.attrs["forward_inputs"] - search
    assert second["score"].tolist() == first["score"].tolist()

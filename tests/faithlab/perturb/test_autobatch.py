"""Tests of faithlab.perturb.autobatch and batch_size="auto": same results as any fixed size, the probe's rules
(cache, budget, out of memory, RNG untouched), and errors naming the argument.

The stand-in models with a known cost curve (:class:`Sleepy`, :class:`Recording`) do not sleep: they advance a fake
clock that autobatch reads in place of ``time.perf_counter`` (the autouse fixture ``_clock``), so the probe sees
exactly the curve given whatever the machine's load (with real sleeps a loaded machine flipped the probe's choices:
``test_a_small_call_stops_probing_and_the_next_goes_on`` failed twice under ``make test``). Real models take no time
on that clock; their tests assert results, never a timing."""

from __future__ import annotations

import types

import pytest
import torch
from oracles import small_cnn

import faithlab as fl
from faithlab.perturb import autobatch

P = fl.perturb


class _Clock:
    """A clock that moves only when a stand-in model runs (``advance``)."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


CLOCK = _Clock()


@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    CLOCK.now = 0.0
    monkeypatch.setattr(autobatch, "time", types.SimpleNamespace(perf_counter=CLOCK.perf_counter))


class Counting(torch.nn.Module):
    """Wraps a model and counts its forward calls and the inputs it sees."""

    def __init__(self, model):
        super().__init__()
        self.model, self.calls, self.inputs = model, 0, 0
        self.eval()

    def forward(self, z):
        self.calls += 1
        self.inputs += z.shape[0]
        return self.model(z)


class Sleepy(torch.nn.Module):
    """A model whose forward call of c inputs takes ``c · per_input[c]`` seconds on the fake clock (a known cost
    curve)."""

    def __init__(self, per_input: dict[int, float], fail_above: int | None = None, error: type = RuntimeError):
        super().__init__()
        self.per_input, self.fail_above, self.error, self.calls = per_input, fail_above, error, 0
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.eval()

    def forward(self, z):
        self.calls += 1
        c = z.shape[0]
        if self.fail_above is not None and c > self.fail_above:
            raise self.error("CUDA out of memory. Tried to allocate 2.00 GiB")
        CLOCK.advance(c * self.per_input.get(c, 1e-4))
        return torch.zeros(c, 2)


@pytest.fixture(autouse=True)
def _fresh_cache():
    autobatch.clear_cache()
    yield
    autobatch.clear_cache()


def _data(n=260, side=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 2, side, side, generator=g), torch.randn(n, 2, side, side, generator=g)


def test_auto_gives_the_results_of_any_fixed_batch_size():
    model = small_cnn(in_channels=2, side=4, n_classes=3)
    x, a = _data()
    fractions = torch.linspace(0, 1, 11)  # 2,860 inputs: enough for the probe to run (3 % ≥ 2 calls of 32)
    removed = torch.rand(260, 4, 16, generator=torch.Generator().manual_seed(1)) < 0.5
    target = torch.randint(0, 3, (260,), generator=torch.Generator().manual_seed(2))

    def inputs(b0, b1, v0, v1):
        return x[b0:b1, None] * torch.linspace(0, 1, 11)[v0:v1].view(1, -1, 1, 1, 1)

    runs = {
        "curve": lambda bs: P.removal_curve(model, x, a, fractions, reference="blur", batch_size=bs),
        "outputs": lambda bs: P.removal_outputs(model, x, removed, reference="mean", batch_size=bs),
        "masked": lambda bs: P.masked_outputs(model, x, lambda b0, b1, v0, v1: removed[b0:b1, v0:v1], n_variants=4,
                                              target=target, batch_size=bs),
        "inputs": lambda bs: P.evaluate_inputs(model, inputs, n_samples=260, n_variants=11, target=target,
                                               batch_size=bs),
    }
    for name, run in runs.items():
        fixed = run(7)
        for bs in ("auto", "auto", 64, 1000):  # the second "auto" is served from the cache
            torch.testing.assert_close(run(bs), fixed, rtol=1e-6, atol=1e-7, msg=name)


def test_auto_probes_on_the_calls_own_work_then_the_cache_answers():
    """"auto" sends no input the computation does not need: the plan times the run's own chunks; a second call
    gets the cached size without probing."""
    model = Counting(small_cnn(in_channels=2, side=4, n_classes=3))
    x, a = _data()
    fractions = torch.linspace(0, 1, 11)
    target = torch.zeros(260, dtype=torch.int64)
    fixed = P.removal_curve(model, x, a, fractions, target=target, batch_size=64)
    needed = model.inputs
    model.calls = model.inputs = 0
    rng = torch.get_rng_state()
    first = P.removal_curve(model, x, a, fractions, target=target, batch_size="auto")
    assert torch.equal(torch.get_rng_state(), rng)
    assert model.inputs == needed and autobatch.cache_size() == 1  # no input beyond the curve's own
    torch.testing.assert_close(first, fixed, rtol=1e-6, atol=1e-7)
    chosen = autobatch.plan("auto", model, x, 260 * 11)
    if isinstance(chosen, int):  # the rise was seen: the cache answers with no plan
        model.calls = model.inputs = 0
        second = P.removal_curve(model, x, a, fractions, target=target, batch_size="auto")
        assert torch.equal(first, second)
        assert model.inputs == needed and model.calls <= 2 + -(-260 * 9 // chosen)
    assert not model.training


class Recording(torch.nn.Module):
    """A model whose call of c inputs takes ``c · per_input[c]`` seconds on the fake clock and records c (a known
    cost curve)."""

    def __init__(self, per_input: dict[int, float], fail_above: int | None = None):
        super().__init__()
        self.per_input, self.fail_above, self.sizes = per_input, fail_above, []
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.eval()

    def forward(self, z):
        c = z.shape[0]
        if self.fail_above is not None and c > self.fail_above:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        self.sizes.append(c)
        CLOCK.advance(c * self.per_input.get(c, 2e-5))
        return z.flatten(1)[:, :2] * 0 + torch.tensor([1.0, 0.0])


def _outputs(model, n):
    x = torch.zeros(n, 1, 2, 2)
    removed = torch.zeros(n, 4, dtype=torch.bool)
    return P.removal_outputs(model, x, removed, target=torch.zeros(n, dtype=torch.int64), batch_size="auto")


def test_the_plan_grows_until_the_cost_rises_then_keeps_the_best():
    model = Recording({8: 2e-4, 16: 1.5e-4, 32: 1e-4, 64: 5e-5, 128: 2e-4})
    out = _outputs(model, 3000)
    assert torch.equal(out, torch.full((3000,), 0.7310585786300049))  # softmax of (1, 0): every input computed
    assert sum(model.sizes) == 3000
    sizes = model.sizes
    last = len(sizes) - 1 - sizes[::-1].index(128)  # the rise, timed twice and then again with the best
    first_seen = list(dict.fromkeys(sizes[:last + 1]))
    assert first_seen == [8, 16, 32, 64, 128], sizes  # smallest first, growing while the cost falls
    assert all(sizes[:last + 1].count(c) >= 2 for c in first_seen) and sizes.count(128) == 3, sizes
    assert sizes[last - 1] == 64 and set(sizes[last + 1:-1]) == {64}, sizes  # then the best for the rest
    assert autobatch.plan("auto", model, torch.zeros(1, 1, 2, 2), 3000) == 64  # done: the cache answers


def test_a_small_call_stops_probing_and_the_next_goes_on():
    model = Recording({8: 2e-4, 16: 1.5e-4, 32: 1e-4, 64: 5e-5, 128: 2e-4})
    _outputs(model, 100)
    assert sum(model.sizes) == 100 and max(model.sizes) <= 64
    assert isinstance(autobatch.plan("auto", model, torch.zeros(1, 1, 2, 2), 3000), autobatch.Plan)
    model.sizes.clear()
    _outputs(model, 3000)
    # the first call's 100 inputs timed 8 fully and 16 three times of the four its cost asks for (_need): the next
    # call times 16 once more and goes on to 32, never back to 8
    assert model.sizes[:2] == [16, 32] and 8 not in model.sizes[:6], model.sizes[:8]
    assert autobatch.plan("auto", model, torch.zeros(1, 1, 2, 2), 3000) == 64


def test_out_of_memory_while_planning_ends_the_growth_and_loses_no_input():
    model = Recording({16: 2e-5, 32: 1e-5, 64: 1e-5}, fail_above=32)
    out = _outputs(model, 500)
    assert out.shape == (500,) and sum(model.sizes) == 500 and max(model.sizes) <= 32
    assert autobatch.plan("auto", model, torch.zeros(1, 1, 2, 2), 500) in (16, 32)


def test_a_changed_model_or_input_is_probed_again():
    model = Sleepy({})
    probe = lambda shape=(2, 4, 4), dtype=torch.float32: autobatch.best_batch_size(  # noqa: E731
        model, shape, dtype, "cpu", budget_s=0.05, candidates=(8, 16))
    probe()
    calls = model.calls
    probe()
    assert autobatch.cache_size() == 1 and model.calls == calls
    with torch.no_grad():
        model.w.add_(1.0)  # an in-place update bumps the parameter's version
    probe()
    assert autobatch.cache_size() == 2 and model.calls > calls
    probe(dtype=torch.float64)
    probe(shape=(3, 4, 4))
    assert autobatch.cache_size() == 4  # another dtype or shape, another entry
    autobatch.clear_cache()
    assert autobatch.cache_size() == 0


def best(model, *args, **options):
    options.setdefault("candidates", (32, 64, 128, 256, 512, 1024, 2048, 4096))
    return autobatch.best_batch_size(model, *args, torch.float32, "cpu", **options)


def test_the_cheapest_batch_per_input_wins():
    """Cost per input falls to 128 then rises: the probe stops after the rise and returns 128."""
    model = Sleepy({32: 3e-4, 64: 2e-4, 128: 1e-4, 256: 4e-4, 512: 4e-4})
    assert best(model, (1,), budget_s=5.0) == 128
    calls = model.calls
    assert best(model, (1,), budget_s=5.0) == 128 and model.calls == calls  # cached, done


def test_a_probe_cut_short_while_costs_still_fall_answers_the_fallback():
    model = Sleepy({32: 3e-4, 64: 2e-4, 128: 1e-4})
    assert best(model, (1,), budget_s=0.005) == autobatch.FALLBACK
    assert best(model, (1,), budget_s=0.005, fallback=16) == 32  # never below the best seen
    tiny = Sleepy({})
    # 40 inputs cannot pay for probing batches of 32 within 3 % of their time: no model call, the fallback
    assert best(tiny, (1,), max_inputs=40) == autobatch.FALLBACK and tiny.calls == 0
    # one candidate holds them all: nothing to probe
    assert best(tiny, (1,), max_inputs=20, candidates=(32, 64)) == 32 and tiny.calls == 0


def test_a_bigger_call_probes_further_from_where_a_small_one_stopped():
    model = Sleepy({32: 1e-4, 64: 6e-5, 128: 3e-5, 256: 1.2e-4, 512: 1.2e-4})
    assert best(model, (1,), max_inputs=3000) == autobatch.FALLBACK  # 3 % of 3,000 inputs: batch 32 only
    calls = model.calls
    assert calls > 0
    assert best(model, (1,), max_inputs=10 ** 7) == 128 and model.calls > calls
    calls = model.calls
    assert best(model, (1,), max_inputs=10 ** 7) == 128 and model.calls == calls


def test_out_of_memory_stops_the_growth_and_other_errors_propagate():
    model = Sleepy({32: 1e-5, 64: 1e-5}, fail_above=64, error=torch.cuda.OutOfMemoryError)
    assert best(model, (1,), budget_s=5.0) in (32, 64)
    cpu = Sleepy({32: 1e-5, 64: 1e-5}, fail_above=64, error=RuntimeError)  # "out of memory" in the message
    assert best(cpu, (1,), budget_s=5.0) in (32, 64)
    broken = Sleepy({}, fail_above=0, error=ValueError)
    with pytest.raises(ValueError, match="out of memory"):
        best(broken, (1,), budget_s=5.0)


def test_callables_without_weak_references_are_cached_too():
    class Holder:
        def __init__(self):
            self.net = small_cnn(in_channels=2, side=4, n_classes=3)

        def logits(self, z):
            return self.net(z)

    holder = Holder()
    first = best(holder.logits, (2, 4, 4), budget_s=0.05, candidates=(8, 16))
    assert best(holder.logits, (2, 4, 4), budget_s=0.05, candidates=(8, 16)) == first
    assert autobatch.cache_size() == 1  # hung on the instance, not on the short-lived bound method


def test_errors_name_the_argument():
    model = small_cnn(in_channels=2, side=4, n_classes=3)
    x, a = _data(4)
    removed = torch.zeros(4, 16, dtype=torch.bool)
    for bad in ("fast", "Auto", 0, -3, True, 2.5, "none"):
        with pytest.raises(ValueError, match="batch_size"):
            P.removal_curve(model, x, a, [0.5], batch_size=bad)
        with pytest.raises(ValueError, match="batch_size"):
            P.removal_outputs(model, x, removed, batch_size=bad)
        with pytest.raises(ValueError, match="batch_size"):
            P.masked_outputs(model, x, lambda b0, b1, v0, v1: removed[b0:b1, None], n_variants=1, batch_size=bad)
        with pytest.raises(ValueError, match="batch_size"):
            P.evaluate_inputs(model, lambda b0, b1, v0, v1: x[b0:b1, None], n_samples=4, n_variants=1,
                              target=torch.zeros(4).long(), batch_size=bad)
    with pytest.raises(ValueError, match="batch_size"):
        autobatch.resolve("fast", model, x, 10)
    f32 = torch.float32
    cases = [
        ("candidates", lambda: autobatch.best_batch_size(model, (2, 4, 4), f32, "cpu", candidates=())),
        ("candidates", lambda: autobatch.best_batch_size(model, (2, 4, 4), f32, "cpu", candidates=(0, 8))),
        ("example_input_shape", lambda: autobatch.best_batch_size(model, (2, 0, 4), f32, "cpu")),
        ("example", lambda: autobatch.best_batch_size(model, (2, 4, 4), f32, "cpu", example=x)),
        ("max_inputs", lambda: autobatch.best_batch_size(model, (2, 4, 4), f32, "cpu", max_inputs=0)),
        ("budget_s", lambda: autobatch.best_batch_size(model, (2, 4, 4), f32, "cpu", budget_s="1")),
        ("dtype", lambda: autobatch.best_batch_size(model, (2, 4, 4), "float32", "cpu")),
        ("model", lambda: autobatch.best_batch_size(3, (2, 4, 4), f32, "cpu")),
    ]
    for name, call in cases:
        with pytest.raises((ValueError, TypeError), match=name):
            call()


def test_a_pass_too_small_to_probe_leaves_the_probing_to_the_next_pass():
    """A curve's clean and fully removed passes (4 images each) cannot time a chunk of 8: the curve's inner
    points (60 inputs) then start the probe, instead of running in one chunk at the fallback size."""
    model = Recording({8: 2e-4, 16: 1.5e-4, 32: 1e-4, 64: 5e-5, 128: 2e-4})
    x = torch.ones(4, 1, 4, 4)
    a = torch.arange(16.0).view(1, 1, 4, 4).expand(4, -1, -1, -1)
    P.removal_curve(model, x, a, [i / 16 for i in range(17)], batch_size="auto")
    assert model.sizes[:2] == [4, 4] and model.sizes[2:5] == [8, 8, 8], model.sizes
    assert sum(model.sizes) == 4 + 4 + 4 * 15


def test_the_cache_keeps_one_entry_per_cpu_thread_count():
    model = Recording({16: 1e-5})
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        _outputs(model, 40)
        torch.set_num_threads(2)
        _outputs(model, 40)
    finally:
        torch.set_num_threads(threads)
    assert autobatch.cache_size() == 2  # a size timed on one thread says nothing of two


# --- the default batch size (batch_size=None): fixed by the model's activations ---------------------------------------

def _conv(channels: int, in_channels: int = 1) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Conv2d(in_channels, channels, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(channels, 3)).eval()


def _layers(channels: int) -> torch.nn.Module:
    """Two leaf modules with the same output, C·H·W per input: its largest and its mean layer output are alike."""
    return torch.nn.Sequential(torch.nn.Conv2d(1, channels, 3, padding=1), torch.nn.ReLU()).eval()


@pytest.mark.parametrize("channels, side, dtype, expected", [
    # a 3x3 convolution from one channel, then a ReLU: 2·9 FLOPs per output value over two outputs of 4 B each,
    # intensity 18 / 8 = 2.25 FLOPs per byte; 1.5 MB · 2.25^(1/4) = 1,837,117 B per batch
    (8, 16, torch.float32, 128),      # 8·16·16·4 B = 8 KiB per input: 224.3 → the power of two below, 128
    (2, 8, torch.float32, 2048),      # 512 B: 3,588 → 2,048
    (1, 4, torch.float32, 4096),      # 64 B: 28,705 → 4,096, the largest size allowed
    (8, 16, torch.float64, 64),       # twice the bytes, half the intensity (1.125): 1,544,891 / 16 KiB = 94.3 → 64
    (64, 256, torch.float32, 8),      # 16 MiB per input: 0 → the smallest size allowed, 8
])
def test_the_default_holds_1_5_mb_times_the_fourth_root_of_the_intensity_of_the_mean_layer_output(channels, side, dtype,
                                                                                                 expected):
    model = _layers(channels).to(dtype)
    x = torch.zeros(2, 1, side, side, dtype=dtype)
    per_input = channels * side * side * torch.finfo(dtype).bits // 8
    seen = autobatch.activation_bytes(model, x)
    assert (seen.largest, seen.mean) == (per_input, per_input)
    assert seen.intensity == pytest.approx(2 * 9 / (2 * torch.finfo(dtype).bits // 8))
    assert autobatch.default_batch_size(model, x) == expected


def test_the_intensity_counts_the_models_flops_per_byte_and_is_at_least_one():
    """Hand-counted FLOPs (a product of k inputs and m outputs: 2·k·m) over the bytes of the leaf modules' outputs;
    a model with no counted operation (a reshape) has intensity 1, the floor, so only its bytes set its size."""
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).eval()
    seen = autobatch.activation_bytes(mlp, torch.zeros(3, 64))
    flops = 2 * 64 * 256 + 2 * 256 * 10
    assert seen.intensity == pytest.approx(flops / (4 * (256 + 256 + 10)))  # 36.2 FLOPs per byte
    assert (seen.weights, seen.flops) == (4 * (64 * 256 + 256 + 256 * 10 + 10), flops)
    assert autobatch.activation_bytes(lambda z: z.flatten(1), torch.zeros(3, 4, 4))[3:] == (1.0, 0, 0)
    shared = torch.nn.Linear(8, 8)  # called twice: its weights are read twice a call but held once
    twice = autobatch.activation_bytes(lambda z: shared(shared(z)), torch.zeros(3, 8))
    assert (twice.weights, twice.flops) == (4 * (64 + 8), 2 * 2 * 8 * 8)
    # the rule's own arithmetic: intensity 16 doubles the bytes a batch may hold, 81 triples them
    assert autobatch.size_for(1000, 1000, mean=1000) == 1024                   # 1,500 → 1,024
    assert autobatch.size_for(1000, 1000, mean=1000, intensity=16) == 2048     # 3,000 → 2,048
    assert autobatch.size_for(1000, 1000, mean=1000, intensity=81) == 4096     # 4,500 → 4,096
    assert autobatch.size_for(1000, 1000, mean=1000, intensity=0.01) == 1024   # below 1: read as 1


def test_a_model_the_flop_counter_fails_is_sized_by_its_activations_alone(monkeypatch):
    """FlopCounterMode is a dispatch mode, which a compiled graph or a custom operator may refuse: the pass then runs
    again without it, and the size comes from the activations (intensity 1, no weight term), not an error."""
    import torch.utils.flop_counter as flop_counter

    class Refused(flop_counter.FlopCounterMode):
        def __enter__(self):
            raise RuntimeError("this model cannot run under a dispatch mode")

    monkeypatch.setattr(flop_counter, "FlopCounterMode", Refused)
    model = torch.nn.Sequential(torch.nn.Linear(16, 4096), torch.nn.Linear(4096, 16)).eval()
    seen = autobatch.activation_bytes(model, torch.zeros(2, 16))
    assert seen[3:] == (1.0, 4 * (16 * 4096 + 4096 + 4096 * 16 + 16), 0)  # the weights known, the FLOPs not
    assert seen.mean == (4096 + 16) * 4 // 2
    assert autobatch.default_batch_size(model, torch.zeros(2, 16)) == 128  # 1.5 MB / 8,224 B = 182 → 128


def test_a_model_heavy_in_weights_gets_a_batch_that_spends_a_300th_of_its_flops_reading_them(monkeypatch):
    """Weights are read once a call: on a CPU the default is at least WEIGHT_REUSE (300) × weight bytes / FLOPs per
    input, the power of two above, unless that batch would hold more than 1 GiB of activations; on a GPU it is not."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 4096), torch.nn.Linear(4096, 16)).eval()
    seen = autobatch.activation_bytes(model, torch.zeros(2, 16))
    weights, flops = 4 * (16 * 4096 + 4096 + 4096 * 16 + 16), 2 * 16 * 4096 * 2
    assert (seen.weights, seen.flops) == (weights, flops)  # 540,736 B for 262,144 FLOPs
    # the activations alone: mean (16 KiB + 64 B) / 2, intensity 262,144 / 16,448 = 15.9: 2.99 MB / 8,224 B → 256;
    # the weights: 300 · 2.06 = 618.8 → 1,024
    assert autobatch.size_for(seen.largest, seen.total, mean=seen.mean, intensity=seen.intensity) == 256
    assert autobatch.default_batch_size(model, torch.zeros(2, 16)) == 1024
    # by hand: the activations give 8 (1.5 MB / 100 kB = 15), the weights 300 → 512, within 1 GiB (10,737 inputs)
    assert autobatch.size_for(10 ** 5, 10 ** 5, mean=10 ** 5) == 8
    assert autobatch.size_for(10 ** 5, 10 ** 5, mean=10 ** 5, weights=10 ** 6, flops=10 ** 6) == 512
    # 10 MB of activations per input: 1 GiB holds 107, so the weights may raise it to 64 only
    assert autobatch.size_for(10 ** 5, 10 ** 7, mean=10 ** 5, weights=10 ** 6, flops=10 ** 6) == 64
    memory = types.SimpleNamespace(total_memory=80 * 1024 ** 3)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device: memory)
    # on a GPU: 1 GiB / 100 kB, capped at 4,096; the weights aside
    assert autobatch.size_for(10 ** 5, 10 ** 5, "cuda", mean=10 ** 5, weights=10 ** 6, flops=10 ** 6) == 4096


def test_the_typical_layer_sets_the_cpu_size_and_the_largest_the_gpus(monkeypatch):
    """A stem sixteen times the size of the layers after it (a ResNet's is four times): on a CPU the mean layer output
    sets the size (one big layer past the caches costs little), on a GPU the largest activation."""
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 64, 3, padding=1), torch.nn.Conv2d(64, 4, 3, padding=1),
                                torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, padding=1)).eval()
    x = torch.zeros(1, 1, 32, 32)
    largest, total, mean, intensity, *_ = autobatch.activation_bytes(model, x)
    # leaves: 64·32·32·4 B = 256 KiB, then three of 4·32·32·4 B = 16 KiB: mean (256 + 3·16) / 4 = 76 KiB
    assert (largest, mean) == (256 * 1024, 76 * 1024)
    # FLOPs 2·1024·(64·9 + 4·64·9 + 4·4·9) = 6,193,152 over 304 KiB: 19.9 per byte, 1.5 MB · 19.9^(1/4) = 3.17 MB
    assert intensity == pytest.approx(2 * 1024 * 9 * (64 + 4 * 64 + 4 * 4) / (304 * 1024))
    assert autobatch.default_batch_size(model, x) == 32  # 3.17 MB / 76 KiB = 40.7 → 32 (the largest alone: 8)
    assert autobatch.size_for(largest, total, mean=mean, intensity=intensity) == 32
    assert autobatch.size_for(largest, total, intensity=intensity) == 8  # 12.1 → 8
    memory = types.SimpleNamespace(total_memory=80 * 1024 ** 3)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device: memory)
    assert autobatch.size_for(largest, total, "cuda", mean=mean, intensity=intensity) == 4096  # 1 GiB / 256 KiB


def test_the_default_is_bitwise_repeatable_and_runs_its_chunks():
    torch.manual_seed(0)
    model = _conv(128)  # leaves of 512, 512, 0.5, 0.5 KiB and 12 B per input (mean 205 KiB), 2.25 FLOPs per byte:
    # 1.84 MB / 205 KiB = 8.75 → 8
    x, a = torch.randn(5, 1, 32, 32), torch.randn(5, 1, 32, 32)
    seen = []
    handle = model.register_forward_pre_hook(lambda _m, args: seen.append(args[0].shape[0]))
    first = fl.perturb.removal_curve(model, x, a, [0.0, 0.25, 0.5, 0.75, 1.0], target=torch.zeros(5, dtype=torch.long))
    handle.remove()
    autobatch.clear_cache()
    second = fl.perturb.removal_curve(model, x, a, [0.0, 0.25, 0.5, 0.75, 1.0], target=torch.zeros(5, dtype=torch.long))
    assert torch.equal(first, second)
    # the activation pass of one input, the endpoints (5 clean, 5 fully removed inputs), then the 15 inner inputs
    # (5 samples × 3 fractions) in calls of at most the default, 8
    assert seen[0] == 1 and seen[1:] == [5, 5, 8, 7]
    x2 = torch.randn(12, 1, 32, 32)  # 12 clean and 12 fully removed inputs in calls of 8 and 4, then 36 inner ones
    seen.clear()
    handle = model.register_forward_pre_hook(lambda _m, args: seen.append(args[0].shape[0]))
    fl.perturb.removal_curve(model, x2, x2, [0.0, 0.25, 0.5, 0.75, 1.0], target=torch.zeros(12, dtype=torch.long))
    handle.remove()
    assert seen == [8, 4, 8, 4, 8, 8, 8, 8, 4]  # cached: no activation pass this time


def test_reading_the_activations_leaves_the_model_and_the_rng_as_they_were():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Dropout(0.5),
                                torch.nn.Flatten(), torch.nn.LazyLinear(2))
    model(torch.randn(4, 1, 6, 6))  # materialise the lazy layer; training mode from here
    before = {k: v.clone() for k, v in model.state_dict().items()}
    three, seven = torch.randn(3, 1, 6, 6), torch.randn(7, 1, 6, 6)
    rng = torch.get_rng_state()
    autobatch.clear_cache()
    calls = []
    handle = model.register_forward_pre_hook(lambda *_: calls.append(1))
    size = autobatch.default_batch_size(model, three)
    assert autobatch.default_batch_size(model, seven) == size and len(calls) == 1  # cached
    handle.remove()
    assert torch.equal(torch.get_rng_state(), rng)
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key  # the batch-norm statistics were put back
    assert model.training


def test_a_callable_is_measured_through_the_modules_it_calls():
    net = _conv(128)
    assert autobatch.default_batch_size(lambda z: net(z * 2), torch.zeros(1, 1, 32, 32)) == 8  # as net alone
    # no module: the input itself, 4 KiB, stands for the layers, intensity 1: 1.5 MB / 4 KiB = 366 → 256
    assert autobatch.default_batch_size(lambda z: z.flatten(1)[:, :3], torch.zeros(1, 1, 32, 32)) == 256


def test_a_model_that_refuses_one_input_in_training_mode_is_measured_on_two():
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4096), torch.nn.BatchNorm1d(4096),
                                torch.nn.Linear(4096, 2))  # training mode: BatchNorm1d refuses a batch of one
    largest, _total, mean, intensity, *_ = autobatch.activation_bytes(model, torch.zeros(3, 16))
    assert largest == 4096 * 4 and mean == (64 + 2 * 4096 * 4 + 8) // 4  # per input, not per pass of two
    assert intensity == pytest.approx((2 * 16 * 4096 + 2 * 4096 * 2) / (64 + 2 * 4096 * 4 + 8))  # 4.49 per byte
    assert autobatch.activation_bytes(model, torch.zeros(3, 16)).flops == 2 * 16 * 4096 + 2 * 4096 * 2  # per input
    # the activations: 1.5 MB · 4.49^(1/4) / 8,210 B = 266 → 256; the weights, 344,072 B (the batch norm's 8,192
    # parameters among them) for 147,456 FLOPs: 300 · 2.33 = 700 → 1,024
    assert autobatch.size_for(largest, _total, mean=mean, intensity=intensity) == 256
    assert autobatch.default_batch_size(model, torch.zeros(3, 16)) == 1024


def test_two_identical_default_evaluations_are_bitwise_equal():
    """fl.evaluate with the default batch size, twice in one process and once after the cache is cleared: the same
    chunks, so the same scores to the last bit (``"auto"`` promises only float rounding)."""
    torch.manual_seed(0)
    model = small_cnn(in_channels=2, side=8, n_classes=3)
    x, a = torch.randn(6, 2, 8, 8), torch.randn(6, 2, 8, 8)
    runs = []
    for clear in (False, False, True):
        if clear:
            autobatch.clear_cache()
        frame = fl.evaluate(model, x, None, {"A": a}, metrics=["rfid+", "mu_fidelity", "saco", "aopc"], n_samples=4,
                            n_subsets=8, saco_k=4, progress=False, hints=False)
        runs.append(torch.tensor(frame["score"].to_numpy()))
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])

"""``batch_size="auto"``: the batch size at which a model's forward passes cost least per input, by a timing probe.

The biggest batch is not the fastest: on 2 CPU cores 2,048 small-CNN forwards take 0.39 s at batch 64 and 0.60 s at
256 (caches), while on a GPU bigger batches keep paying off until memory runs out. :func:`best_batch_size` times a
few bare forward passes of the model at growing candidate sizes and returns the cheapest per input; the result is
cached for the process per (model, per-sample input shape, dtype, device), so a second call costs a dictionary
look-up.

Batch sizes change :mod:`faithlab.perturb`'s results only by float rounding (every input's output is computed
alone, but a forward pass's kernels may depend on the batch size: on a 2-core CPU, float32 outputs were bitwise
equal from 16 inputs per call on for a ResNet-18 and not below). ``"auto"``'s chunks follow timings, so two calls
can differ in the last bits, and a decision that hangs on rounding (a tie in an argmin or a ranking) can differ
with them. That is why ``"auto"`` is opt-in and the default (``batch_size=None``) is
:func:`~faithlab.perturb.default_batch.default_batch_size`, a
size fixed by what is known before any timing: the device, the dtype, and the activations, FLOPs and weights the
model uses for one input (read once per model and input shape from one forward pass of one input). Two identical calls then run
the same chunks and give bitwise equal results. ``benchmarks/autobatch_sweep.py`` measures both against every
fixed size; the study's protocols pass their own ints.

The probe:

- runs the model under ``torch.no_grad()`` on an input made of zeros or of one example input repeated, inside
  ``torch.random.fork_rng`` so the global RNG state is left as it was; it never calls ``model.train``/``eval``
  (forward hooks do see the probe's inputs);
- times each candidate (smallest first) on a fresh copy of that input (as the engine builds every chunk anew),
  ``repeats`` calls (up to 5 when a call takes well under a millisecond), the first candidate after an untimed
  warm-up call, and keeps the fastest call;
- stops growing when a candidate costs more than 10 % more per input than the best so far (timed again, with the
  best, before it is believed: one call can be slowed by a busy machine), on an out-of-memory error (CUDA or
  CPU; the memory is released), past the first candidate that holds all the caller's ``max_inputs``, or when the
  next candidate would overrun the budget: ``budget_s`` seconds in all, and ``share`` (3 %) of the caller's
  estimated forward time (``max_inputs`` inputs at the best rate so far);
- compares candidates by (forward time + ``overhead_s``) per input, ``overhead_s`` being the caller's own fixed cost
  per forward call (0 by default: the removal engine's per-call cost is small next to a forward pass).

If the budget runs out while the cost still falls with the batch size, the answer is ``max(best so far,
fallback)``, i.e. the former fixed default (256) unless a smaller size was seen to be better; a call too small to
afford probing the smallest candidate gets ``fallback`` without probing. A later, bigger call probes further from
where an earlier probe stopped (the cache keeps every timing). Parameters changed in place (``_version``) or moved
(``data_ptr``) make a new cache entry.

One concept: how many inputs go into one forward call; the timed ``"auto"`` probe and its in-call :class:`Plan`, the
fixed default from activations, FLOPs and weights, and the chunk size of the functions that call no model are the
answers to that one question, for :mod:`faithlab.perturb.engine` to apply. The fixed default lives in
:mod:`faithlab.perturb.default_batch` and the cache both share in :mod:`faithlab.perturb.batch_cache`; their names
are read from here too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from faithlab import _validate
# the cache and the default size live beside this module; their names are read from here too
from faithlab.perturb.batch_cache import cache_entries, cache_owner, cache_size, clear_cache, param_state  # noqa: F401
from faithlab.perturb.default_batch import (CPU_BYTES, CPU_MEMORY, GPU_BYTES, INTENSITY_POWER, MAX_SIZE,  # noqa: F401
                                            MIN_SIZE, WEIGHT_REUSE, Activations, activation_bytes, default_batch_size,
                                            size_for)

__all__ = ["BatchSize", "AUTO", "CANDIDATES", "FALLBACK", "MAP_ELEMENTS", "Plan", "best_batch_size", "map_chunk",
           "plan", "resolve"]

BatchSize = int | str | None
"""A batch size: a positive int, ``None`` (the default:
:func:`~faithlab.perturb.default_batch.default_batch_size`, fixed by the model's activations)
or ``"auto"`` (timed: :func:`best_batch_size` / :class:`Plan` pick one)."""
AUTO = _validate.BATCH_SIZE_AUTO
CANDIDATES = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
"""Batch sizes the probe tries, smallest first."""
FALLBACK = 256
"""The batch size of a call too small to afford a probe (the library's fixed default before ``"auto"``)."""
WORSE = 1.10  # a candidate this much slower per input than the best so far ends the growth


@dataclass
class _Probe:
    """What is known of one (model, input) key: the fastest timed forward per candidate, the probe time spent."""

    seconds: dict[int, float] = field(default_factory=dict)
    calls: dict[int, int] = field(default_factory=dict)  # timed calls per candidate of a plan (real work)
    spent: float = 0.0
    warm: bool = False  # a first, untimed call has been made
    confirmed: set = field(default_factory=set)  # candidates whose rise was timed again
    queue: list = field(default_factory=list)  # candidates to time again (a rise being confirmed), across calls
    done: bool = False  # a slower candidate, out of memory or every candidate timed: nothing more to learn


def _threads(device: torch.device) -> int:
    """The CPU threads torch uses (a CPU model's best batch depends on them; 0 for other devices)."""
    return torch.get_num_threads() if device.type == "cpu" else 0


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _is_oom(err: BaseException) -> bool:
    """An out-of-memory error: CUDA's, a CPU allocation failure, or Python's MemoryError."""
    if isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def best_batch_size(model: Callable, example_input_shape: Sequence[int], dtype: torch.dtype,
                    device: torch.device | str, *, candidates: Sequence[int] = CANDIDATES,
                    example: torch.Tensor | None = None, max_inputs: int | None = None, budget_s: float = 1.0,
                    share: float = 0.03, repeats: int = 1, overhead_s: float = 0.0,
                    fallback: int = FALLBACK) -> int:
    """The candidate batch size with the least forward time per input for ``model`` on inputs of
    ``example_input_shape`` (one sample, no batch dim), ``dtype`` and ``device`` → int; probed once, then cached
    for the process (:func:`~faithlab.perturb.batch_cache.clear_cache` forgets).

    example: one input of that shape to repeat (default zeros; a model's speed can depend on the values).
    max_inputs: how many inputs the caller will run (None: unknown). No candidate above the first that holds them
    all is probed, and the probe spends at most ``share`` of their estimated forward time (and never more than
    ``budget_s`` seconds in all, over every call with this key). repeats: timed calls per candidate (the first
    candidate gets an untimed warm-up call before). overhead_s: the caller's own fixed cost per forward call, added
    to each candidate's time before comparing.

    Returns the cheapest candidate per input once the probe has seen the cost rise (or ran out of candidates or
    memory). While the probe is cut short by its budget and the cost still falls with the batch size, it returns
    ``max(best so far, fallback)``: the default unless a smaller size has been seen to be better. A call too small
    to afford probing the smallest candidate gets ``fallback`` (256).
    """
    if not callable(model):
        raise TypeError(f"model must be a torch.nn.Module or a callable returning logits, got {type(model).__name__}")
    shape = tuple(_validate.positive_int(d, "example_input_shape") for d in example_input_shape)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    device = torch.device(device)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise TypeError(f"candidates must be a sequence of positive ints, got {type(candidates).__name__}")
    every = sorted({_validate.positive_int(c, "candidates") for c in candidates})
    if not every:
        raise ValueError("candidates must hold at least one positive batch size")
    cands = every
    if max_inputs is not None:
        max_inputs = _validate.positive_int(max_inputs, "max_inputs")
        first_all = next((c for c in every if c >= max_inputs), every[-1])
        cands = [c for c in every if c <= first_all]
    budget_s = _validate.number(budget_s, "budget_s")
    share = _validate.number(share, "share")
    repeats = _validate.positive_int(repeats, "repeats")
    overhead_s = _validate.number(overhead_s, "overhead_s")
    fallback = _validate.positive_int(fallback, "fallback")
    if example is not None:
        _validate.tensor(example, "example")
        if tuple(example.shape) != shape:
            raise ValueError(f"example must have shape {shape}, got {tuple(example.shape)}")
    if len(cands) == 1:
        return cands[0]

    owner, part = cache_owner(model)
    key = (part, shape, dtype, device, _threads(device), tuple(every), param_state(owner))
    entries = cache_entries(owner)
    probe = entries.setdefault(key, _Probe())

    def cost(c: int) -> float:
        return (probe.seconds[c] + overhead_s) / c

    def best() -> int | None:
        known = [c for c in cands if c in probe.seconds]
        return min(known, key=cost) if known else None

    if not probe.done:
        _extend(model, probe, cands, every[-1], shape, dtype, device, example, max_inputs, budget_s, share, repeats,
                cost, best)
    chosen = best()
    if chosen is None:
        if not probe.seconds:
            entries.pop(key, None)
        return fallback
    largest = max(c for c in cands if c in probe.seconds)
    if not probe.done and chosen == largest and largest < cands[-1]:
        return max(chosen, min(fallback, cands[-1]))  # still falling when the budget ran out
    return chosen


def _extend(model, probe: _Probe, cands, last: int, shape, dtype, device, example, max_inputs, budget_s, share,
            repeats, cost: Callable[[int], float], best: Callable[[], int | None]) -> None:
    """Probe the candidates not timed yet, smallest first, within the budget (see :func:`best_batch_size`); the
    probe is done when the cost rose, memory ran out or ``last``, the largest candidate of all, was timed."""
    todo = [c for c in cands if c not in probe.seconds]
    if not todo:
        probe.done = last in probe.seconds
        return
    cuda = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.no_grad(), torch.random.fork_rng(devices=cuda):
        for c in todo:
            known = best()
            if known is None:  # nothing timed yet: the smallest candidate, if its calls are a small part of the work
                calls = repeats + 1  # one untimed warm-up call before the first candidate only
                if max_inputs is not None and calls * c > share * max_inputs:
                    return
            else:
                call_s = c * probe.seconds[known] / known  # one call of c at the best rate so far
                calls = _timed_calls(call_s, repeats)
                limit = budget_s if max_inputs is None else min(budget_s, share * max_inputs * cost(known))
                if probe.spent + calls * call_s > limit:
                    return
            try:
                _time(model, probe, c, calls, shape, dtype, device, example, warm=known is None)
                if known is not None and cost(c) > WORSE * cost(known):
                    # the cost rose: time both again (a busy machine can slow a call) before believing it
                    for k in (known, c):
                        _time(model, probe, k, _timed_calls(probe.seconds[k], repeats), shape, dtype, device,
                              example, warm=False)
            except Exception as err:  # noqa: BLE001 - out of memory ends the growth; anything else is raised
                if not _is_oom(err):
                    raise
                del err
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                probe.done = True
                return
            if known is not None and cost(c) > WORSE * cost(best()):
                probe.done = True  # larger batches will not help
                return
    probe.done = last in probe.seconds


_CHEAP_S = 1e-3  # calls shorter than this are timed several times (up to 5, within about this much in all)


def _timed_calls(call_s: float, repeats: int) -> int:
    """How many calls to time: ``repeats``, or more when one call is cheap (a preempted call weighs less)."""
    return max(repeats, min(5, int(_CHEAP_S / max(call_s, 1e-9))))


def _time(model, probe: _Probe, c: int, calls: int, shape, dtype, device, example, warm: bool = True) -> None:
    """Run ``calls`` forward calls of batch c (the first untimed if ``warm``) and keep the fastest in the probe."""
    start = time.perf_counter()
    try:
        one = example.to(device, dtype) if example is not None else torch.zeros(shape, dtype=dtype, device=device)
        base = one.expand(c, *shape).contiguous()
        for i in range(calls):
            _sync(device)
            t0 = time.perf_counter()
            model(base.clone())
            _sync(device)
            if i or not warm:
                took = time.perf_counter() - t0
                probe.seconds[c] = min(probe.seconds.get(c, math.inf), took)
    finally:
        probe.spent += time.perf_counter() - start


def resolve(batch_size: BatchSize, model: Callable, x: torch.Tensor, n_inputs: int) -> int:
    """The engine's batch size: ``batch_size`` itself if an int, else :func:`best_batch_size` for ``model`` on
    inputs like one sample of x (that sample repeated), for a call that runs ``n_inputs`` of them."""
    if batch_size is None:  # a call of at most MIN_SIZE inputs is one call at any default: no activation pass
        return MIN_SIZE if n_inputs <= MIN_SIZE else default_batch_size(model, x)
    if not isinstance(batch_size, str):
        return batch_size
    _validate.batch_size(batch_size, "batch_size")
    return best_batch_size(model, x.shape[1:], x.dtype, x.device, example=x[0], max_inputs=max(1, n_inputs))


_PLAN_CALLS = 2  # timed calls per candidate when the engine probes on its own work (the fastest one counts)
PLAN_WORSE = WORSE
"""A candidate this much slower per input (10 %) than the best ends a plan's growth once both were timed again. A
lower bar stops too early: on a 2-core CPU the small CNN's cost per input falls by only 3-5 % per doubling from 8 to
256, which one slow call hides (a 3 % bar settled on 8, 22 % slower than 256, in the sweep); going past the best
size costs only the few calls timed there, since the best measured size is kept."""
_PLAN_CHEAP_S = 0.01  # a plan's calls shorter than this are timed several times (up to 5): real work, not waste


class Plan:
    """``batch_size="auto"`` decided on the call's own work: the engine's forward calls themselves are the probe.

    While the cost per input is unknown the engine asks :meth:`size` for each chunk and runs it through
    :meth:`forward`, which times it: the candidates are tried smallest first on the real inputs (``_PLAN_CALLS``
    calls each, up to 5 for calls under 10 ms; the fastest counts), a rise of more than 10 % over the best is
    timed again before it is believed, and then every further chunk has the best size. Nothing is computed twice and
    no input is invented, so probing costs only the difference between the sizes tried and the best one, which lets
    a call of a thousand inputs find its size (a separate probe of bare passes could not afford to). The timings go
    into the same per-process cache as :func:`best_batch_size`'s (per model, per-sample shape, dtype and device):
    the next call starts where this one stopped, and once the rise has been seen, :func:`plan` returns the int.

    Batch sizes do not change results beyond float rounding (each input's output is computed alone; on the CPU
    float32 convolutions and matrix products gave bitwise equal outputs per sample at every size from 16 up in our
    checks, not always below, and a call's last chunk is smaller anyway). An out-of-memory error while a candidate
    is tried ends the growth, frees the memory and runs that chunk at the best size so far.
    """

    def __init__(self, model: Callable, probe: _Probe, cands: list[int], device: torch.device, fallback: int):
        self.model, self.probe, self.cands, self.device, self.fallback = model, probe, cands, device, fallback
        self.queue = probe.queue  # candidates to time again (a rise being confirmed), kept across calls

    def _cost(self, c: int) -> float:
        return self.probe.seconds[c] / c

    def _best(self) -> int | None:
        known = [c for c in self.cands if c in self.probe.seconds]
        return min(known, key=self._cost) if known else None

    def _need(self, c: int) -> int:
        if c not in self.probe.seconds:
            return _PLAN_CALLS
        return max(_PLAN_CALLS, min(5, int(_PLAN_CHEAP_S / max(self.probe.seconds[c], 1e-9))))

    def _todo(self) -> int | None:
        if self.queue:
            return self.queue[0]
        for c in self.cands:
            if c not in self.probe.seconds or self.probe.calls.get(c, 10 ** 9) < self._need(c):
                return c
        return None

    @property
    def probing(self) -> bool:
        return not self.probe.done

    def size(self, remaining: int) -> int:
        """The size of the next chunk of a pass with ``remaining`` inputs left: the next candidate to time while
        probing, if it is at most half of what is left (any size before the first timing), else the
        best size so far (the fallback before any timing). A pass too small for the next candidate (a clean pass of
        a few images, a call of a hundred inputs at 224 px) leaves it to the next pass or call, so a small first call
        does not spend itself on the larger, slower sizes a probe must try."""
        if self.probing:
            c = self._todo()
            if c is None:
                self.probe.done = True
            elif c <= remaining and (self._best() is None or c <= remaining // 2):
                return c  # a chunk of at most half of what is left: a small call keeps much of its work at the best
        best = self._best()
        return best if best is not None else self.fallback

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """The model's output on one chunk, timed (and recorded) while probing."""
        if not self.probing or inputs.shape[0] != self._todo():  # not a candidate being timed
            return self.model(inputs)
        c = inputs.shape[0]
        try:
            _sync(self.device)
            t0 = time.perf_counter()
            out = self.model(inputs)
            _sync(self.device)
        except Exception as err:  # noqa: BLE001 - out of memory ends the growth; anything else is raised
            if not _is_oom(err):
                raise
            del err
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            self.probe.done = True
            step = self._best() or max(1, c // 2)
            return torch.cat([self.model(inputs[i:i + step]) for i in range(0, c, step)])
        took = time.perf_counter() - t0
        self.probe.spent += took
        if not self.probe.warm:  # the model's first call of the process pays for allocations: not counted
            self.probe.warm = True
            return out
        self.probe.seconds[c] = min(self.probe.seconds.get(c, math.inf), took)
        self.probe.calls[c] = self.probe.calls.get(c, 0) + 1
        if self.queue and self.queue[0] == c:
            self.queue.pop(0)
            if not self.queue:  # both timed again: believe what they say now
                best = self._best()
                if best is not None and self._cost(c) > PLAN_WORSE * self._cost(best):
                    self.probe.done = True
            return out
        if self.probe.calls[c] >= self._need(c):
            best = self._best()
            if best is not None and best != c and self._cost(c) > PLAN_WORSE * self._cost(best):
                if c in self.probe.confirmed:
                    self.probe.done = True
                else:  # a busy machine can slow a call: time the best and this one again first
                    self.probe.confirmed.add(c)
                    self.queue[:] = [best, c]  # the cache's list: a call that runs out of work leaves it to the next
        return out


def plan(batch_size: BatchSize, model: Callable, x: torch.Tensor, n_inputs: int) -> int | Plan:
    """The engine's batch size for a call of ``n_inputs`` inputs like one sample of x: ``batch_size`` itself if an
    int; None: :func:`~faithlab.perturb.default_batch.default_batch_size`; for ``"auto"`` the cached best size once
    known, else a :class:`Plan` that finds it on the call's own work."""
    if batch_size is None:  # a call of at most MIN_SIZE inputs is one call at any default: no activation pass
        return MIN_SIZE if n_inputs <= MIN_SIZE else default_batch_size(model, x)
    if not isinstance(batch_size, str):
        return batch_size
    _validate.batch_size(batch_size, "batch_size")
    shape, device = tuple(x.shape[1:]), x.device
    every = list(CANDIDATES)
    first_all = next((c for c in every if c >= n_inputs), every[-1])
    cands = [c for c in every if c <= first_all]
    if len(cands) == 1:
        return cands[0]
    owner, part = cache_owner(model)
    key = (part, shape, x.dtype, device, _threads(device), tuple(every), param_state(owner))
    probe = cache_entries(owner).setdefault(key, _Probe())
    if probe.done:
        known = [c for c in cands if c in probe.seconds]
        if known:
            return min(known, key=lambda c: probe.seconds[c] / c)
    return Plan(model, probe, cands, device, FALLBACK)


MAP_ELEMENTS = 1 << 22
"""Elements of the per-sample tensors one chunk holds when a function that calls no model gets ``batch_size="auto"``
(4,194,304: 64 maps of 256 × 256, the localisation metrics' fixed default at that size). Such chunks bound
memory, not forward passes, and no result depends on them."""


def map_chunk(batch_size: BatchSize, per_sample: int, name: str = "batch_size") -> int:
    """The chunk size (samples) of a function that calls no model: ``batch_size`` itself if an int, else (None or
    ``"auto"``)
    as many samples of ``per_sample`` elements each as :data:`MAP_ELEMENTS` holds, at least 1. A bad value raises
    naming ``name``."""
    batch_size = _validate.batch_size(batch_size, name)
    if isinstance(batch_size, int):
        return batch_size
    return max(1, MAP_ELEMENTS // max(1, per_sample))

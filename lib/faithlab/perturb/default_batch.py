"""The default batch size (``batch_size=None``): a size fixed by what one input does in the model, known before any
timing: its activations, FLOPs and weights (:func:`activation_bytes`, read once per model and input shape from one
forward pass of one input) and the device (:func:`default_batch_size`, :func:`size_for`). Two identical calls then
run the same chunks and give bitwise equal results. Gathered with the timed ``"auto"`` rule in
:mod:`faithlab.perturb.autobatch`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from faithlab.perturb.batch_cache import cache_entries, cache_owner

__all__ = ["CPU_BYTES", "INTENSITY_POWER", "WEIGHT_REUSE", "CPU_MEMORY", "GPU_BYTES", "MIN_SIZE", "MAX_SIZE",
           "Activations", "activation_bytes", "default_batch_size", "size_for"]

CPU_BYTES = 1_500_000
"""On a CPU, the default batch holds this many bytes (1.5 MB) of the model's mean layer output (the mean of its leaf
modules' outputs for one input, :class:`Activations`), times the fourth root of the model's arithmetic intensity
(FLOPs per byte of those outputs, :data:`INTENSITY_POWER`). Past the caches a bigger batch stops paying, and the
cost rises steeply there while it is flat below; a model that does more arithmetic per byte it writes (a ResNet's
128-512-channel convolutions) loses less when its batch leaves the caches and gains more from larger matrix products,
so its batch may hold more. Keyed to the typical layer, not the largest: a ResNet's stem is one layer four times the
size of the rest, and its best size follows the rest. Not keyed to the thread count, so a model gets the same chunks
on every CPU. Chosen on benchmarks/autobatch_sweep.py's 26 cells of 2026-11-26 (2-core VM, quiet; 25 within 5 % of
the best fixed size), then tested on 16 cells of 8 models it had not seen (7 within 5 %; 11 with
:data:`WEIGHT_REUSE`, added after them) and on 12 cells of 6 more models neither was chosen on (10 within 5 %, the
worst 1.09). No rule blind to the thread count can meet 5 % everywhere: the library's MobileNet and DenseNet at
32 px are best at 8 with one thread and at 32 or more with two (benchmarks/RESULTS.md)."""
INTENSITY_POWER = 0.25
"""The power of the arithmetic intensity in the CPU rule (:data:`CPU_BYTES`): ResNet-18 at 32 px (121 FLOPs per
byte) may hold 3.3 times the bytes of a model doing one FLOP per byte, the small CNN (19) 2.1 times."""
WEIGHT_REUSE = 300
"""On a CPU, the default batch is at least this many times the model's weight bytes over its FLOPs per input (the
power of two above): the weights are read once a call, so each input then reads at most one byte of them per 300
FLOPs. VGG-11 at 32 px (515 MB of weights for 0.54 GFLOPs per input) gets 512 inputs a call where its activations
alone give 64. Never past :data:`CPU_MEMORY` of all one input's activations. Added after the first held-out sweep of
2026-11-26 found torchvision's models at 32 px best at 256 inputs or more (there, and so chosen on those cells)."""
CPU_MEMORY = 1 << 30
"""The most bytes of activations (all of one input's, times the batch) that :data:`WEIGHT_REUSE` may raise a CPU
batch to (1 GiB)."""
GPU_BYTES = 1 << 30
"""On a GPU, the default batch holds up to this many bytes (1 GiB) of the largest activation (bigger batches kept
paying off on an H200 for the small CNN up to 4,096 inputs), and at most a quarter of the device's memory in all of
one input's activations."""
MIN_SIZE, MAX_SIZE = 8, 4096
"""The default batch size's bounds (the first and last of
:data:`faithlab.perturb.autobatch.CANDIDATES`)."""


def _unwrapped(model: Callable) -> Callable:
    """The model a pass-through wrapper calls unchanged (one marked ``faithlab_passthrough``, e.g. the counting
    wrapper of ``fl.evaluate``): its activations are the wrapper's, and its one-input pass is not counted as work."""
    while getattr(model, "faithlab_passthrough", False) and callable(getattr(model, "__wrapped__", None)):
        model = model.__wrapped__
    return model


def _activation_key(model: Callable, x: torch.Tensor) -> tuple:
    owner, part = cache_owner(model)
    return owner, ("activations", part, tuple(x.shape[1:]), x.dtype, x.device)


class Activations(NamedTuple):
    """:func:`activation_bytes`'s answer, per input: ``largest`` (bytes of the largest tensor), ``total`` (of all of
    them), ``mean`` (the mean output of the model's leaf modules, its typical layer; the input's size where it has
    none), ``intensity`` (the pass's FLOPs, as ``torch.utils.flop_counter`` counts them, per byte of the leaf
    modules' outputs; at least 1), ``weights`` (bytes of the parameters of the modules the pass called, each once)
    and ``flops`` (FLOPs per input; 0 where they could not be counted)."""

    largest: int
    total: int
    mean: int
    intensity: float = 1.0
    weights: int = 0
    flops: int = 0


def activation_bytes(model: Callable, x: torch.Tensor) -> Activations:
    """The bytes of the largest tensor and of all the tensors that one input like x[0] makes on its way through
    ``model`` (its input, every module's outputs, its output), the mean bytes of its leaf modules' outputs, the FLOPs
    per byte of those, its weights' bytes and its FLOPs → :class:`Activations` ``(largest, total, mean, intensity,
    weights, flops)``; read once per model, input shape, dtype and device from one forward pass of one input under
    ``torch.no_grad()``, then cached for the process.

    Every module's forward outputs are seen through a global forward hook, so a callable that wraps modules
    (normalisation then a network) is measured too; the FLOPs are counted by
    ``torch.utils.flop_counter.FlopCounterMode`` (matrix products, convolutions, attention: the operations that
    cost). The global RNG is left as it was, and a model in training mode has its buffers (batch-norm statistics) put
    back after the pass. Sizes and FLOPs do not depend on the values or the weights."""
    from torch.utils.flop_counter import FlopCounterMode

    model = _unwrapped(model)
    owner, key = _activation_key(model, x)
    entries = cache_entries(owner)
    if key in entries:
        return entries[key]
    first = x[:1].numel() * x.element_size()
    largest, total, leaves, params = [first], [0], [], {}

    def seen(module, _inputs, output) -> None:
        leaf = module is not None and next(module.children(), None) is None
        if module is not None:
            params.update((id(p), p.numel() * p.element_size()) for p in module.parameters(recurse=False))
        for t in output if isinstance(output, (tuple, list)) else (output,):
            if isinstance(t, torch.Tensor):
                size = t.numel() * t.element_size()
                largest[0] = max(largest[0], size)
                total[0] += size
                if leaf:
                    leaves.append(size)

    modules = [m for m in (owner if isinstance(owner, torch.nn.Module) else None,) if m is not None]
    training = [m for m in modules if any(s.training for s in m.modules())]
    saved = [[b.detach().clone() for b in m.buffers()] for m in training]
    cuda = []
    if x.device.type == "cuda":
        cuda = [x.device.index if x.device.index is not None else torch.cuda.current_device()]

    def counted(inputs: torch.Tensor) -> tuple[object, int]:
        """The pass on ``inputs`` and its FLOPs; 0 FLOPs where the counter's dispatch mode fails a model that runs
        without it (a compiled graph, a custom operator): the rule then reads its activations alone."""
        try:
            with FlopCounterMode(display=False) as counter:
                return model(inputs), counter.get_total_flops()
        except ValueError:
            raise
        except Exception:
            largest[0], total[0] = first * inputs.shape[0], 0
            leaves.clear()
            params.clear()
            return model(inputs), 0

    handle = torch.nn.modules.module.register_module_forward_hook(seen)
    per = 1  # inputs in the pass
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=cuda):
            try:
                out, flops = counted(x[:1].clone())
            except ValueError:  # a batch-norm layer in training mode refuses one input: two, halved below
                largest[0], total[0], per = first * 2, 0, 2
                leaves.clear()
                params.clear()
                out, flops = counted(x[:1].expand(2, *x.shape[1:]).clone())
        seen(None, None, out)
    finally:
        handle.remove()
        with torch.no_grad():
            for m, values in zip(training, saved):
                for b, v in zip(m.buffers(), values):
                    b.copy_(v)
    mean = sum(leaves) / len(leaves) / per if leaves else first
    intensity = max(1.0, flops / sum(leaves)) if leaves else 1.0
    entries[key] = Activations(largest[0] // per, max(total[0], largest[0]) // per, max(1, round(mean)), intensity,
                               sum(params.values()), flops // per)
    return entries[key]


def default_batch_size(model: Callable, x: torch.Tensor) -> int:
    """The default batch size (``batch_size=None``) for inputs like one sample of x through ``model`` → int: the
    largest power of two whose batch holds at most :data:`CPU_BYTES` (1.5 MB) × I^(1/4) of the model's mean layer
    output on a CPU (I: its FLOPs per byte of layer output, :data:`INTENSITY_POWER`), raised to at least
    :data:`WEIGHT_REUSE` (300) times its weight bytes over its FLOPs per input (within :data:`CPU_MEMORY`); or on a
    GPU :data:`GPU_BYTES` (1 GiB) of its largest activation and at most a quarter of the device's memory in all its
    activations (:func:`activation_bytes`); between 8 and 4,096.

    Fixed by the model, the input's shape, dtype and device alone, never by a timing or the thread count: two
    identical calls run the same chunks and give bitwise equal results."""
    seen = activation_bytes(model, x)
    return size_for(seen.largest, seen.total, x.device, mean=seen.mean, intensity=seen.intensity,
                    weights=seen.weights, flops=seen.flops)


def size_for(largest: int, total: int, device: torch.device | str = "cpu", *, mean: int | None = None,
             intensity: float = 1.0, weights: int = 0, flops: int = 0) -> int:
    """:func:`default_batch_size`'s rule for a model whose largest activation takes ``largest`` bytes per input,
    all its activations ``total`` bytes, its mean layer output ``mean`` bytes (None: ``largest``) and which does
    ``intensity`` FLOPs per byte of its layers' outputs, with ``weights`` bytes of parameters and ``flops`` FLOPs per
    input, on ``device``."""
    device = torch.device(device)
    if device.type == "cuda":
        limit = GPU_BYTES // max(1, largest)
        limit = min(limit, torch.cuda.get_device_properties(device).total_memory // 4 // max(1, total))
    else:
        allowed = CPU_BYTES * max(1.0, float(intensity)) ** INTENSITY_POWER
        limit = int(allowed // max(1, largest if mean is None else mean))
    size = 1 << max(0, int(limit).bit_length() - 1)  # the largest power of two ≤ limit
    if device.type != "cuda" and weights > 0 and flops > 0:  # weights read once a call: amortise them
        reuse = math.ceil(WEIGHT_REUSE * weights / flops)
        floor = 1 << max(0, reuse - 1).bit_length()  # the smallest power of two ≥ reuse
        memory = CPU_MEMORY // max(1, total)
        size = max(size, min(floor, 1 << max(0, int(memory).bit_length() - 1)))
    return max(MIN_SIZE, min(MAX_SIZE, size))

"""Timing helpers shared by the benchmarks: warm-up, device synchronisation, medians of interleaved repeats."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def sync(device: torch.device | str) -> None:
    """Wait for queued GPU work so wall-clock times are real (no-op on CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def median_times(fns: dict[str, Callable[[], object]], device: torch.device | str = "cpu", repeats: int = 5,
                 warmup: int = 1) -> dict[str, float]:
    """Median wall-clock seconds of each function over ``repeats`` runs, after ``warmup`` untimed runs each.

    The functions run round-robin (a, b, a, b, ...) so that a change of machine load hits all of them alike.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    sync(device)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            sync(device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def batched_forward(model: Callable, inputs: torch.Tensor, batch_size: int) -> None:
    """The bare reference workload: forward passes over pre-built inputs, ``batch_size`` per call."""
    with torch.no_grad():
        for start in range(0, inputs.shape[0], batch_size):
            model(inputs[start:start + batch_size])

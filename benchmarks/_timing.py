"""Timing helpers shared by the benchmarks: warm-up, device synchronisation, medians of interleaved repeats."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import faithlab as fl


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
    """The bare reference workload: forward passes over pre-built inputs, ``batch_size`` per call.

    Each chunk is copied into a fresh buffer right before its forward call, as a data pipeline materialises a batch
    and as the metrics build theirs: on CPU a small CNN runs about 9 % faster on a chunk just written (still in
    cache) than on a slice of a large tensor built long before, which made metrics look faster than "bare" passes.
    """
    with torch.no_grad():
        for start in range(0, inputs.shape[0], batch_size):
            model(inputs[start:start + batch_size].clone())


def captured_inputs(run: Callable[[torch.nn.Module], object], model: torch.nn.Module) -> torch.Tensor:
    """Every input ``run(model)`` sends to ``model``, concatenated: the bare side then times the very inputs the
    metric builds (a model's speed can depend on the values: on CPU the small CNN runs about 15 % slower on
    perturbed digits than on clean ones)."""
    seen: list[torch.Tensor] = []

    class Recorder(torch.nn.Module):
        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            seen.append(inputs.detach().clone())
            return model(inputs)

    run(Recorder().eval())
    return torch.cat(seen)


class NoOp(torch.nn.Module):
    """Stands in for the model to time the library alone: constant logits."""

    def __init__(self, n_classes: int = 10):
        super().__init__()
        self.n_classes = n_classes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros(x.shape[0], self.n_classes)


def parser(doc: str, *, n: int, batch_size: int, repeats: int) -> argparse.ArgumentParser:
    """Command-line options every benchmark shares (device, sample count, batch size, repeats, threads)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--n", type=int, default=n, help="samples B")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--repeats", type=int, default=repeats)
    p.add_argument("--threads", type=int, default=None, help="CPU threads (a shared machine: try 1)")
    return p


def setup(args: argparse.Namespace) -> torch.device:
    """Apply --threads, seed the benchmark model's weight init (speed does not depend on training), return the device."""
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return torch.device(args.device)


def digits(n: int, size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` scikit-learn digits (repeated cyclically) upsampled to ``size``², and their labels, on ``device``."""
    data = fl.data.load("digits", split="train", size=size)
    pick = torch.arange(n) % len(data)
    return data.x[pick].to(device), data.y[pick].to(device)

"""Timing helpers shared by the benchmarks: warm-up, device synchronisation, medians of interleaved repeats, peak GPU
memory, the batch-size sweep (``--sweep``) and the paper-scale defaults (``--paper-scale``)."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import faithlab as fl
from _heap import steady_allocator


def sync(device: torch.device | str) -> None:
    """Wait for queued GPU work so wall-clock times are real (no-op on CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fns: dict[str, Callable[[], object]], device: torch.device | str = "cpu", repeats: int = 5,
          warmup: int = 1) -> tuple[dict[str, float], dict[str, int | None]]:
    """Median wall-clock seconds of each function over ``repeats`` runs, after ``warmup`` untimed runs each, and its
    peak GPU memory: the most bytes allocated during one timed run above what was allocated when it started (the
    tensors the caller keeps resident, e.g. pre-built inputs, are not counted); None on CPU.

    The functions run round-robin (a, b, a, b, ...) so that a change of machine load hits all of them alike. On CUDA
    the peak counter is reset before every timed run (``torch.cuda.reset_peak_memory_stats``).
    """
    cuda = torch.device(device).type == "cuda"
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    sync(device)
    times: dict[str, list[float]] = {name: [] for name in fns}
    peaks: dict[str, int | None] = {name: None for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
                base = torch.cuda.memory_allocated(device)
            start = time.perf_counter()
            fn()
            sync(device)
            times[name].append(time.perf_counter() - start)
            if cuda:
                peaks[name] = max(peaks[name] or 0, torch.cuda.max_memory_allocated(device) - base)
    return {name: statistics.median(t) for name, t in times.items()}, peaks


def median_times(fns: dict[str, Callable[[], object]], device: torch.device | str = "cpu", repeats: int = 5,
                 warmup: int = 1) -> dict[str, float]:
    """The times of :func:`timed` alone."""
    return timed(fns, device, repeats, warmup)[0]


def mib(n_bytes: int | None) -> str:
    return "-" if n_bytes is None else f"{n_bytes / 2**20:.1f}"


def report_memory(peaks: dict[str, int | None], label: str = "") -> None:
    """Print the peak GPU memory of each timed function (nothing on CPU)."""
    if any(v is not None for v in peaks.values()):
        print(f"peak GPU memory{' ' + label if label else ''} (MiB above resident tensors): "
              + ", ".join(f"{name} {mib(v)}" for name, v in peaks.items()))


def batched_forward(model: Callable, inputs: torch.Tensor, batch_size: int) -> None:
    """The bare reference workload: forward passes over pre-built inputs, ``batch_size`` per call.

    Each chunk is copied into a fresh buffer right before its forward call, as a data pipeline materialises a batch
    and as the metrics build theirs: on CPU a small CNN runs about 9 % faster on a chunk just written (still in
    cache) than on a slice of a large tensor built long before, which made metrics look faster than "bare" passes.
    """
    with torch.no_grad():
        for start in range(0, inputs.shape[0], batch_size):
            model(inputs[start:start + batch_size].clone())


def tolerance(device: torch.device) -> dict[str, float]:
    """``assert_close`` tolerances for "the same curve at another batch size" on ``device``: float32's defaults on a
    CPU; on a GPU looser (rtol 1e-3, atol 1e-4 on probabilities), as cuDNN picks its convolution algorithm per batch
    size and runs convolutions in TF32 by default (ResNet-18 at 32 px on an H200 differs by 5e-5 between batch sizes).
    The timings keep the GPU's default settings: what a user's run gets."""
    return {"rtol": 1e-3, "atol": 1e-4} if torch.device(device).type == "cuda" else {}


def morf_workload(model: torch.nn.Module, x: torch.Tensor, attributions: torch.Tensor, target: torch.Tensor,
                  n_fractions: int, batch_size: int) -> tuple[torch.Tensor, Callable[..., torch.Tensor]]:
    """The removal-curve workload of removal_curve.py and engine_overhead.py: ``curve(net=model, batch_size=...)``,
    the MoRF curve (zero reference, probabilities, ``n_fractions`` points), and the very inputs it perturbs, prebuilt
    for bare forward passes (B × F of them, sample-major). Checks first that bare passes over them give the curve."""
    fractions = torch.linspace(0, 1, n_fractions)
    units = fl.perturb.pixel_units(x)
    ranks = fl.perturb.ranks(fl.perturb.order(fl.perturb.unit_scores(attributions, units, reduce="sum_abs")))
    counts = torch.round(fractions * units.n).long().tolist()
    prebuilt = torch.stack([fl.perturb.apply_removal(x, ranks < k, units) for k in counts], dim=1).flatten(0, 1)

    def curve(net: torch.nn.Module = model, batch_size: int | str = batch_size) -> torch.Tensor:
        return fl.perturb.removal_curve(net, x, attributions, fractions, order="morf", reference="zero",
                                        output="prob", target=target, batch_size=batch_size)

    with torch.no_grad():  # both sides compute the same thing
        probs = torch.cat([model(chunk).softmax(1) for chunk in prebuilt.split(batch_size)])
    same = probs.gather(1, target.repeat_interleave(n_fractions)[:, None]).view(len(x), n_fractions)
    torch.testing.assert_close(curve(), same, **tolerance(x.device))
    return prebuilt, curve


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


SWEEP = tuple(64 * 2**i for i in range(7))  # 64, 128, ..., 4096


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose ``--paper-scale`` swaps in the paper-scale defaults; options given explicitly still
    win (``--paper-scale --n 1`` is the paper's workload on one image)."""

    paper: dict[str, object] | None = None

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        if self.paper and super().parse_known_args(args, namespace)[0].paper_scale:
            self.set_defaults(**self.paper)
        return super().parse_args(args, namespace)


def parser(doc: str, *, n: int, batch_size: int, repeats: int, paper: dict[str, object] | None = None,
           paper_note: str = "") -> argparse.ArgumentParser:
    """Command-line options every benchmark shares (device, sample count, batch size, repeats, threads, --sweep)
    and, when ``paper`` holds the paper-scale defaults, ``--paper-scale`` (``paper_note`` says what they are)."""
    p = _Parser(description=doc.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--n", type=int, default=n, help="samples B")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--repeats", type=int, default=repeats)
    p.add_argument("--threads", type=int, default=None, help="CPU threads (a shared machine: try 1)")
    p.add_argument("--allocator", default="steady", choices=["steady", "system"],
                   help="host memory: 'steady' keeps freed buffers for reuse, as a GPU's caching allocator does "
                        "(glibc only; see _heap.steady_allocator), 'system' leaves glibc's defaults")
    p.add_argument("--sweep", action="store_true",
                   help=f"also time at batch sizes {', '.join(map(str, SWEEP))} (clipped to the workload): "
                        "throughput, ratio to bare passes at the same and at the best batch size, GPU memory")
    if paper:
        p.paper = dict(paper)
        p.add_argument("--paper-scale", action="store_true",
                       help=f"the paper-scale workload, meant for a GPU: {paper_note or paper}; explicit options "
                            "override it")
    return p


def sweep_sizes(limit: int) -> list[int]:
    """The sweep's batch sizes 64, 128, ..., 4096, clipped to ``limit`` (no point batching past the workload)."""
    return sorted({min(b, max(1, limit)) for b in SWEEP})


def sweep(parts: Callable[[int], dict[str, tuple[int, Callable[[], object], Callable[[], object]]]],
          sizes: list[int], device: torch.device | str, repeats: int) -> None:
    """Time every part at every batch size and print one table per part (see :func:`print_sweep`).

    parts(batch_size) → ``{name: (inputs, bare, metric)}``: ``inputs`` is the number of (perturbed) inputs one call
    of ``metric`` sends to the model, ``bare`` the bare forward passes over the same inputs at that batch size.
    """
    rows: dict[str, dict[int, tuple[float, float, int | None, int | None]]] = {}
    inputs: dict[str, int] = {}
    for bs in sizes:
        for name, (n_inputs, bare, metric) in parts(bs).items():
            t, m = timed({"bare": bare, "metric": metric}, device, repeats)
            rows.setdefault(name, {})[bs] = (t["bare"], t["metric"], m["bare"], m["metric"])
            inputs[name] = n_inputs
    for name, by_size in rows.items():
        print_sweep(name, inputs[name], by_size)


def print_sweep(name: str, n_inputs: int, rows: dict[int, tuple[float, float, int | None, int | None]]) -> float:
    """One sweep table: per batch size the metric's throughput (inputs/s), its ratio to bare passes at the same
    batch size and to bare passes at the bare side's best batch size (the figure that counts: what the hardware can
    do at all), and peak GPU memory; then the metric's best batch size and its ratio to the best bare. ``rows``:
    ``{batch_size: (t_bare, t_metric, bytes_bare, bytes_metric)}``. Returns that best ratio."""
    best_bare = min(rows, key=lambda b: rows[b][0])
    t_best = rows[best_bare][0]
    print(f"sweep {name}: {n_inputs} inputs per call; bare passes fastest at batch size {best_bare} "
          f"({n_inputs / t_best:,.0f} inputs/s)")
    print(f"  {'batch':>6} {'inputs/s':>12} {'ratio same bs':>14} {'ratio best bare':>16} {'GPU MiB metric/bare':>20}")
    for bs, (t_bare, t_metric, m_bare, m_metric) in sorted(rows.items()):
        print(f"  {bs:>6} {n_inputs / t_metric:>12,.0f} {t_bare / t_metric:>14.3f} {t_best / t_metric:>16.3f} "
              f"{mib(m_metric) + '/' + mib(m_bare):>20}")
    best = min(rows, key=lambda b: rows[b][1])
    ratio = t_best / rows[best][1]
    print(f"  {name} sweep ratio t_bare(best) / t_metric(best): {ratio:.3f} (metric at batch size {best})")
    return ratio


def setup(args: argparse.Namespace) -> torch.device:
    """Apply --threads and --allocator, seed the benchmark model's weight init (speed does not depend on training),
    return the device."""
    if args.threads:
        torch.set_num_threads(args.threads)
    if getattr(args, "allocator", "system") == "steady":
        print("host allocator: steady (glibc mallopt: no mmap, no trim)" if steady_allocator()
              else "host allocator: system (--allocator steady needs glibc)")
    torch.manual_seed(0)
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device here")
        print(f"GPU: {torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    return device


def digits(n: int, size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` scikit-learn digits (repeated cyclically) upsampled to ``size``², and their labels, on ``device``."""
    data = fl.data.load("digits", split="train", size=size)
    pick = torch.arange(n) % len(data)
    return data.x[pick].to(device), data.y[pick].to(device)

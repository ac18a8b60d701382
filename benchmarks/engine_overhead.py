"""The removal engine's own overhead: ``removal_curve`` against bare batched forward passes on a tiny model.

On a small CNN the model's time hides the engine's; on a tiny linear model (Flatten + Linear, 1×32×32 → 10) a
forward pass costs microseconds, so what shows is the engine's own work (ranking the units, building the perturbed
inputs, read-out, checks). Both sides push the same B·F perturbed inputs (scikit-learn digits upsampled to 1×32×32,
MoRF pixel removal, zero reference, output = probability of the target) through the same model, ``batch_size`` per
call: the bare side on inputs built beforehand, the removal curve building every perturbed input on the fly.
ratio = t_bare / t_removal_curve (1.0 is the limit). Also timed: the curve with the model replaced by a no-op.

``--profile K`` also prints, once, the K most expensive Python functions (cProfile, own time) and torch operators
(torch.profiler, self CPU time) of one removal_curve call. ``--auto`` also times whole removal_curve calls with
``batch_size="auto"`` (its first call, timing probe included, and a cached call) against ``--batch-size``.

    python benchmarks/engine_overhead.py [--model linear|small_cnn] [--device cpu|cuda] [--n 512] [--fractions 11]
                                         [--batch-size 64] [--repeats 9] [--threads N] [--profile K] [--auto]
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import NoOp, batched_forward, digits, morf_workload, median_times, parser, setup, sync  # noqa: E402

import faithlab as fl  # noqa: E402


def build_model(name: str) -> nn.Module:
    if name == "linear":
        return nn.Sequential(nn.Flatten(), nn.Linear(32 * 32, 10))
    return fl.models.build("small_cnn", in_channels=1, n_classes=10)


def profile(curve, k: int) -> None:
    """Print the top-k Python functions (own time) and torch operators (self CPU time) of a few curve calls."""
    curve()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        curve()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(k)
    print("\n--- cProfile, 3 calls, by own time ---")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-4000:])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
        curve()
    print("\n--- torch.profiler, 1 call, by self CPU time ---")
    print(tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=k))


def main() -> None:
    p = parser(__doc__, n=512, batch_size=64, repeats=9)
    p.add_argument("--fractions", type=int, default=11, help="curve points F")
    p.add_argument("--model", default="linear", choices=["linear", "small_cnn"])
    p.add_argument("--profile", type=int, default=0, metavar="K", help="print the top K items of a profile")
    p.add_argument("--auto", action="store_true", help='also time batch_size="auto" (first call and cached)')
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    model = build_model(args.model).to(device).eval()
    x, _ = digits(args.n, 32, device)
    attributions = torch.randn(args.n, 1, 32, 32, generator=g).to(device)
    target = torch.randint(0, 10, (args.n,), generator=g).to(device)
    prebuilt, curve = morf_workload(model, x, attributions, target, args.fractions, args.batch_size)

    noop = NoOp().eval()
    times = median_times({"bare": lambda: batched_forward(model, prebuilt, args.batch_size), "curve": curve,
                          "engine": lambda: curve(noop)}, device, args.repeats)
    t_bare, t_curve, t_engine = times["bare"], times["curve"], times["engine"]
    print(f"model={args.model} device={device} threads={torch.get_num_threads()} B={args.n} F={args.fractions} "
          f"inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {t_bare * 1e3:9.2f} ms")
    print(f"removal_curve       : {t_curve * 1e3:9.2f} ms")
    print(f"engine alone (no-op): {t_engine * 1e3:9.2f} ms  ({t_engine / t_bare:.1%} of bare)")
    print(f"ratio t_bare/t_curve: {t_bare / t_curve:9.3f}")

    if args.auto:
        from faithlab.perturb import autobatch

        torch.testing.assert_close(curve(batch_size="auto"), curve())  # the same curve at any batch size

        def first() -> torch.Tensor:  # the first call of a process: the probe runs, then the curve
            autobatch.clear_cache()
            return curve(batch_size="auto")

        def cached() -> torch.Tensor:
            curve(batch_size="auto")  # untimed: makes sure the cache holds this call's entry
            sync(device)
            start = time.perf_counter()
            out = curve(batch_size="auto")
            sync(device)
            cached_times.append(time.perf_counter() - start)
            return out

        cached_times: list[float] = []
        auto = median_times({"fixed": curve, "first": first, "cached": cached}, device, args.repeats)
        t_cached = statistics.median(cached_times[1:])  # [0] is the warm-up round's
        chosen = autobatch.resolve("auto", model, x, args.n * args.fractions)
        print(f'batch_size="auto" chose {chosen} (rounds interleaved: fixed, first, cached)')
        print(f"removal_curve, batch_size={args.batch_size:<6}   : {auto['fixed'] * 1e3:9.2f} ms")
        print(f'removal_curve, "auto", first call: {auto["first"] * 1e3:9.2f} ms  (probe included; '
              f"ratio fixed/auto {auto['fixed'] / auto['first']:.3f})")
        print(f'removal_curve, "auto", cached    : {t_cached * 1e3:9.2f} ms  '
              f"(ratio fixed/auto {auto['fixed'] / t_cached:.3f})")

    if args.profile:
        profile(curve, args.profile)


if __name__ == "__main__":
    main()

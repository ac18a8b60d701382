"""The library's own work per metric: μF, RFid+ and the removal curve on a tiny linear model, μF and S_avg on the
small CNN, each against bare batched forward passes over the very inputs the metric sends to the model.

A tiny linear model (Flatten + Linear, 3×32×32 → 10) costs almost nothing per input, so what shows is what the
library does around the forward passes (drawing the keyed random subsets, building the perturbed inputs, read-outs,
checks), as it shows on a GPU where a small model's pass is cheap. The workloads are issue 71's: 128 images (the
scikit-learn digits upsampled to 32×32, repeated over 3 channels), μF with 200 subsets of 15 % of the pixels, RFid+ at
3 levels × 50 Bernoulli masks with α = 0.5, the MoRF removal curve at 11 fractions; on the small CNN μF (200 subsets)
and S_avg (50 neighbours, the saliency explainer). Both sides run at ``--batch-size`` inputs per forward call; the
bare side runs over the inputs the metric built (captured once), each chunk copied fresh as a data pipeline does.
ratio = t_bare / t_metric (1.0 is the limit), in wall-clock time and in process CPU time (the steadier figure on a
shared CPU). ``--profile NAME`` prints the top of a profile of one workload.

    python benchmarks/library_overhead.py [--device cpu|cuda] [--n 128] [--batch-size 256] [--repeats 5]
                                          [--threads 1] [--only NAME ...] [--profile NAME]
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
from _timing import batched_forward, captured_inputs, digits, parser, setup, sync  # noqa: E402

import faithlab as fl  # noqa: E402


def workloads(device: torch.device, n: int, batch_size: int) -> dict[str, tuple[nn.Module, object]]:
    """``{name: (model, run(model))}`` of the issue's workloads; run(model) computes the metric with that model."""
    torch.manual_seed(0)
    linear = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).to(device).eval()
    cnn = fl.models.build("small_cnn", in_channels=3, n_classes=10).to(device).eval()
    x, y = digits(n, 32, device)
    x = x.expand(-1, 3, -1, -1).contiguous()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(x.shape, generator=g).to(device)
    fractions = torch.linspace(0, 1, 11)

    def saliency(model, inputs, target, seeds=None):
        return fl.explainers.explain(model, inputs, target, method="saliency")

    return {
        "mu_f linear": (linear, lambda m: fl.metrics.mu_fidelity(m, x, a, target=y, n_subsets=200,
                                                                 batch_size=batch_size)),
        "rfid+ linear": (linear, lambda m: fl.metrics.fid_plus(m, x, a, target=y, sparsity=[0.2, 0.5, 0.8],
                                                               alpha=0.5, n_samples=50, generator=0,
                                                               output="prob", batch_size=batch_size)),
        "removal curve linear": (linear, lambda m: fl.perturb.removal_curve(m, x, a, fractions, target=y,
                                                                           batch_size=batch_size)),
        "mu_f small_cnn": (cnn, lambda m: fl.metrics.mu_fidelity(m, x, a, target=y, n_subsets=200,
                                                                 batch_size=batch_size)),
        "s_avg small_cnn": (cnn, lambda m: fl.metrics.average_stability(m, x, explainer=saliency, target=y,
                                                                        n_neighbours=50, batch_size=batch_size)),
    }


def wall_and_cpu(fns: dict, device: torch.device, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall-clock and process CPU seconds of each function, run round-robin after one warm-up each. On a
    shared CPU the CPU time is the steadier figure (another tenant's load stretches the wall clock, not our CPU
    time); on a GPU only the wall clock means anything."""
    for fn in fns.values():
        fn()
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            sync(device)
            w, c = time.perf_counter(), time.process_time()
            fn()
            sync(device)
            wall[k].append(time.perf_counter() - w)
            cpu[k].append(time.process_time() - c)
    return ({k: statistics.median(v) for k, v in wall.items()}, {k: statistics.median(v) for k, v in cpu.items()})


def main() -> None:
    p = parser(__doc__, n=128, batch_size=256, repeats=5)
    p.add_argument("--only", nargs="*", default=None, help="workload names (substring match)")
    p.add_argument("--profile", default=None, metavar="NAME", help="profile one workload (substring)")
    args = p.parse_args()
    device = setup(args)
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} batch_size={args.batch_size} "
          f"torch {torch.__version__}")
    for name, (model, run) in workloads(device, args.n, args.batch_size).items():
        if args.only and not any(k in name for k in args.only):
            continue
        if name.startswith("s_avg"):  # the explainer's backward passes are the model's work: bare = forward+grad
            inputs = captured_inputs(lambda m: run(m), model)

            def bare(inputs=inputs, model=model):
                for c in inputs.split(args.batch_size):
                    fl.explainers.explain(model, c.clone(), torch.zeros(c.shape[0], dtype=torch.long,
                                                                        device=c.device), method="saliency")
        else:
            with torch.no_grad():
                inputs = captured_inputs(lambda m: run(m), model)

            def bare(inputs=inputs, model=model):
                batched_forward(model, inputs, args.batch_size)

        def metric(model=model, run=run):
            with torch.no_grad() if not name.startswith("s_avg") else torch.enable_grad():
                run(model)

        t, cpu = wall_and_cpu({"bare": bare, "metric": metric}, device, args.repeats)
        print(f"{name:22s} inputs={inputs.shape[0]:7d}  bare {t['bare'] * 1e3:9.1f} ms  metric "
              f"{t['metric'] * 1e3:9.1f} ms  ratio {t['bare'] / t['metric']:.3f}  (CPU time ratio "
              f"{cpu['bare'] / cpu['metric']:.3f})", flush=True)
        if args.profile and args.profile in name:
            prof = cProfile.Profile()
            prof.enable()
            metric()
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-3500:])
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
                metric()
            print(tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()

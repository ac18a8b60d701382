"""Throughput of ``faithlab.perturb.removal_curve`` against bare batched forward passes.

Both sides push the same B·F perturbed inputs — scikit-learn digits upsampled to 1×32×32, MoRF pixel removal, zero
reference — through the same small CNN (``fl.models.build("small_cnn")``), ``batch_size`` per call: the bare side on inputs built beforehand (the model's speed depends on
the values, so the inputs must be the same), the removal curve ranking the pixels and building every perturbed
input on the fly. ratio = t_bare / t_removal_curve (1.0 is the limit; the engine's overhead lowers it).
Also timed: the curve with the model replaced by a no-op, i.e. the engine's own cost, which is less sensitive to
the noise of a shared machine than the ratio.

On CUDA the peak GPU memory of each side is printed; ``--sweep`` repeats the timing at batch sizes 64…4096.

    python benchmarks/removal_curve.py [--device cpu|cuda] [--n 512] [--fractions 11] [--batch-size 256]
                                       [--repeats 7] [--threads N] [--sweep]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import (  # noqa: E402
    NoOp, batched_forward, digits, morf_workload, parser, report_memory, setup, sweep, sweep_sizes, timed,
)

import faithlab as fl  # noqa: E402


def main() -> None:
    p = parser(__doc__, n=512, batch_size=256, repeats=7)
    p.add_argument("--fractions", type=int, default=11, help="curve points F")
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    model = fl.models.build("small_cnn", in_channels=1, n_classes=10).to(device).eval()
    x, _ = digits(args.n, 32, device)
    attributions = torch.randn(args.n, 1, 32, 32, generator=g).to(device)
    target = torch.randint(0, 10, (args.n,), generator=g).to(device)
    prebuilt, curve = morf_workload(model, x, attributions, target, args.fractions, args.batch_size)

    noop = NoOp().eval()
    times, peaks = timed({"bare": lambda: batched_forward(model, prebuilt, args.batch_size), "curve": curve,
                          "engine": lambda: curve(noop)}, device, args.repeats)
    t_bare, t_curve, t_engine = times["bare"], times["curve"], times["engine"]
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} F={args.fractions} "
          f"inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {t_bare * 1e3:9.1f} ms")
    print(f"removal_curve       : {t_curve * 1e3:9.1f} ms")
    print(f"engine alone (no-op): {t_engine * 1e3:9.1f} ms  ({t_engine / t_bare:.1%} of bare)")
    print(f"ratio t_bare/t_curve: {t_bare / t_curve:9.3f}")
    report_memory(peaks)
    if args.sweep:
        sweep(lambda bs: {"removal_curve": (prebuilt.shape[0], lambda: batched_forward(model, prebuilt, bs),
                                            lambda: curve(model, bs))},
              sweep_sizes(prebuilt.shape[0]), device, args.repeats)


if __name__ == "__main__":
    main()

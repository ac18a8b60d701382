"""Throughput of ``faithlab.metrics.fid_plus`` (F-Fidelity FFid+) against bare batched forward passes.

Both sides push the same B·(1 + L·N) inputs (the clean image, then N Bernoulli masks at each of L sparsity levels)
through the same small CNN (``fl.models.build("small_cnn")``), ``batch_size`` per call: the bare side on the very
inputs FFid+ sends to the model, recorded once beforehand, FFid+ ranking the pixels, drawing every mask, building
every perturbed input on the fly and scoring correctness. The model runs about 15 % slower on perturbed digits than
on clean ones on CPU, so the bare side on the clean images repeated is printed too, for information. ratio = t_bare / t_ffid (1.0 is the limit). "engine alone" runs FFid+ with a no-op model:
the library's own cost (ranking, mask sampling, building inputs), least disturbed by load on a shared machine.

    python benchmarks/ffidelity.py [--device cpu|cuda] [--n 128] [--levels 9] [--samples 10] [--image-size 32]
                                   [--batch-size 512] [--repeats 5] [--threads N]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import NoOp, batched_forward, captured_inputs, digits, median_times, parser, setup  # noqa: E402

import faithlab as fl  # noqa: E402


def main() -> None:
    p = parser(__doc__, n=128, batch_size=512, repeats=5)
    p.add_argument("--levels", type=int, default=9, help="sparsity levels L")
    p.add_argument("--samples", type=int, default=10, help="Monte-Carlo masks N per level")
    p.add_argument("--image-size", type=int, default=32)
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    s = args.image_size
    model = fl.models.build("small_cnn", in_channels=1, n_classes=10).to(device).eval()
    x, y = digits(args.n, s, device)
    attributions = torch.rand(args.n, 1, s, s, generator=g).to(device)
    sparsity = torch.linspace(0.1, 0.9, args.levels).tolist()
    per_sample = 1 + args.levels * args.samples

    def ffid(net: torch.nn.Module) -> torch.Tensor:
        return fl.metrics.fid_plus(net, x, y, attributions, sparsity, alpha=0.5, beta=0.1, n_samples=args.samples,
                                 generator=0, batch_size=args.batch_size)

    prebuilt = captured_inputs(ffid, model)
    if prebuilt.shape[0] != args.n * per_sample:
        raise RuntimeError(f"FFid+ sent {prebuilt.shape[0]} inputs, expected {args.n * per_sample}")
    clean = x.repeat_interleave(per_sample, dim=0)
    noop = NoOp(10).eval()
    times = median_times({"bare": lambda: batched_forward(model, prebuilt, args.batch_size),
                          "clean": lambda: batched_forward(model, clean, args.batch_size),
                          "ffid": lambda: ffid(model), "engine": lambda: ffid(noop)}, device, args.repeats)
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} L={args.levels} N={args.samples} "
          f"image={s}x{s} inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {times['bare'] * 1e3:9.1f} ms (same inputs; on clean images: "
          f"{times['clean'] * 1e3:.1f} ms)")
    print(f"FFid+               : {times['ffid'] * 1e3:9.1f} ms")
    print(f"engine alone        : {times['engine'] * 1e3:9.1f} ms ({times['engine'] / times['ffid']:.1%} of FFid+)")
    print(f"ratio t_bare/t_ffid : {times['bare'] / times['ffid']:9.3f}  (ideal 1.000)")


if __name__ == "__main__":
    main()

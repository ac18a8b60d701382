"""Throughput of ``faithlab.metrics.fid_plus`` (F-Fidelity FFid+) against bare batched forward passes.

Both sides push the same B·(1 + L·N) inputs (the clean image, then N Bernoulli masks at each of L sparsity levels)
through the same small CNN (``fl.models.build("small_cnn")``), ``batch_size`` per call: the bare side on the very
inputs FFid+ sends to the model, recorded once beforehand, FFid+ ranking the pixels, drawing every mask, building
every perturbed input on the fly and scoring correctness. The model runs about 15 % slower on perturbed digits than
on clean ones on CPU, so the bare side on the clean images repeated is printed too, for information. ratio = t_bare / t_ffid (1.0 is the limit). "engine alone" runs FFid+ with a no-op model:
the library's own cost (ranking, mask sampling, building inputs), least disturbed by load on a shared machine.

On CUDA the peak GPU memory of each side is printed; ``--sweep`` repeats the timing at batch sizes 64…4096.
``--paper-scale`` (for a GPU): the paper's image workload (F-Fidelity App. C; ``notebooks/params/paper.yaml``,
``ffidelity/images_ranking``): ResNet-9 (``fl.models.build("resnet9")``, width 1) on 3×32×32 images (the digits in
three channels), L = 19 sparsity levels 0.05…0.95, N = 50 masks per level: 951 inputs per image, B = 256 images
(the paper evaluates 2,000; time scales linearly with B), batch size 8192. Options given explicitly override it.

    python benchmarks/ffidelity.py [--device cpu|cuda] [--n 128] [--levels 9] [--samples 10] [--image-size 32]
                                   [--model small_cnn|resnet9] [--channels 1] [--sparsity-range 0.1 0.9]
                                   [--batch-size 512] [--repeats 5] [--threads N] [--sweep] [--paper-scale]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import (NoOp, batched_forward, captured_inputs, digits, parser, report_memory, setup, sweep,  # noqa: E402
                     sweep_sizes, timed)

import faithlab as fl  # noqa: E402


def main() -> None:
    paper = {"model": "resnet9", "channels": 3, "image_size": 32, "levels": 19, "sparsity_range": [0.05, 0.95],
             "samples": 50, "n": 256, "batch_size": 8192, "repeats": 3}
    p = parser(__doc__, n=128, batch_size=512, repeats=5, paper=paper,
               paper_note="ResNet-9, 3x32x32, 19 levels 0.05-0.95 x 50 masks, B=256, batch 8192")
    p.add_argument("--levels", type=int, default=9, help="sparsity levels L")
    p.add_argument("--samples", type=int, default=10, help="Monte-Carlo masks N per level")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--model", default="small_cnn", choices=["small_cnn", "resnet9"])
    p.add_argument("--channels", type=int, default=1, choices=[1, 3], help="image channels (digits repeated)")
    p.add_argument("--sparsity-range", type=float, nargs=2, default=[0.1, 0.9], metavar=("LO", "HI"))
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    s, c = args.image_size, args.channels
    model = fl.models.build(args.model, in_channels=c, n_classes=10).to(device).eval()
    x, y = digits(args.n, s, device)
    x = x.expand(-1, c, -1, -1).contiguous()
    attributions = torch.rand(args.n, c, s, s, generator=g).to(device)
    sparsity = torch.linspace(*args.sparsity_range, args.levels).tolist()
    per_sample = 1 + args.levels * args.samples

    def ffid(net: torch.nn.Module, batch_size: int = args.batch_size) -> torch.Tensor:
        return fl.metrics.fid_plus(net, x, attributions, target=y, sparsity=sparsity, alpha=0.5, beta=0.1,
                                   n_samples=args.samples, generator=0, batch_size=batch_size)

    prebuilt = captured_inputs(ffid, model)
    if prebuilt.shape[0] != args.n * per_sample:
        raise RuntimeError(f"FFid+ sent {prebuilt.shape[0]} inputs, expected {args.n * per_sample}")
    clean = x.repeat_interleave(per_sample, dim=0)
    noop = NoOp(10).eval()
    times, peaks = timed({"bare": lambda: batched_forward(model, prebuilt, args.batch_size),
                          "clean": lambda: batched_forward(model, clean, args.batch_size),
                          "ffid": lambda: ffid(model), "engine": lambda: ffid(noop)}, device, args.repeats)
    print(f"device={device} threads={torch.get_num_threads()} model={args.model} B={args.n} L={args.levels} "
          f"N={args.samples} image={c}x{s}x{s} inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {times['bare'] * 1e3:9.1f} ms (same inputs; on clean images: "
          f"{times['clean'] * 1e3:.1f} ms)")
    print(f"FFid+               : {times['ffid'] * 1e3:9.1f} ms")
    print(f"engine alone        : {times['engine'] * 1e3:9.1f} ms ({times['engine'] / times['ffid']:.1%} of FFid+)")
    print(f"ratio t_bare/t_ffid : {times['bare'] / times['ffid']:9.3f}  (ideal 1.000)")
    report_memory(peaks)
    if args.sweep:
        sweep(lambda bs: {"FFid+": (prebuilt.shape[0], lambda: batched_forward(model, prebuilt, bs),
                                    lambda: ffid(model, bs))},
              sweep_sizes(prebuilt.shape[0]), device, args.repeats)


if __name__ == "__main__":
    main()

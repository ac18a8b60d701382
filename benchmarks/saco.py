"""Throughput of ``faithlab.metrics.saco`` against bare batched forward passes.

Both sides push the same B·(K+1) inputs (the clean image and each of the K salience groups removed alone, per-image
per-channel mean reference) through the same small ViT (``fl.models.build("vit")``), ``batch_size`` per call: the
bare side on inputs built beforehand, SaCo grouping the pixels, building every perturbed input on the fly and
scoring the pairs. ratio = t_bare / t_saco (1.0 is the limit; SaCo also runs one forward pass on the clean images
to find ŷ, so its ideal ratio is (K+1)/(K+2)).

    python benchmarks/saco.py [--device cpu|cuda] [--n 256] [--k 10] [--image-size 32] [--batch-size 256]
                              [--repeats 5] [--threads N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import batched_forward, median_times  # noqa: E402

import faithlab as fl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--n", type=int, default=256, help="samples B")
    parser.add_argument("--k", type=int, default=10, help="groups K")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (a shared machine: try 1)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)  # weight init of the benchmark model only (speed does not depend on training)
    s = args.image_size
    model = fl.models.build("vit", image_size=s, patch_size=4, in_channels=1, n_classes=10, dim=64, depth=4,
                            heads=4).to(device).eval()
    digits = fl.data.load("digits", split="train", size=s).x
    x = digits[torch.arange(args.n) % len(digits)].to(device)
    attributions = torch.rand(args.n, 1, s, s, generator=g).to(device)
    details = fl.metrics.saco_details(model, x, attributions, k=args.k, batch_size=args.batch_size)
    removed = details["groups"][:, None, :] == torch.arange(args.k, device=device)[None, :, None]
    removed = torch.cat([torch.zeros_like(removed[:, :1]), removed], dim=1)
    units = fl.perturb.pixel_units(x)
    prebuilt = torch.stack([fl.perturb.apply_removal(x, removed[:, i], units, "channel_mean")
                            for i in range(args.k + 1)], dim=1).flatten(0, 1)

    times = median_times({"bare": lambda: batched_forward(model, prebuilt, args.batch_size),
                          "saco": lambda: fl.metrics.saco(model, x, attributions, k=args.k, batch_size=args.batch_size)},
                         device, args.repeats)
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} K={args.k} image={s}x{s} "
          f"inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {times['bare'] * 1e3:9.1f} ms")
    print(f"saco                : {times['saco'] * 1e3:9.1f} ms")
    print(f"ratio t_bare/t_saco : {times['bare'] / times['saco']:9.3f}  (ideal {(args.k + 1) / (args.k + 2):.3f})")


if __name__ == "__main__":
    main()

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

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import batched_forward, digits, median_times, parser, setup  # noqa: E402

import faithlab as fl  # noqa: E402


def main() -> None:
    p = parser(__doc__, n=256, batch_size=256, repeats=5)
    p.add_argument("--k", type=int, default=10, help="groups K")
    p.add_argument("--image-size", type=int, default=32)
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    s = args.image_size
    model = fl.models.build("vit", image_size=s, patch_size=4, in_channels=1, n_classes=10, dim=64, depth=4,
                            heads=4).to(device).eval()
    x, _ = digits(args.n, s, device)
    attributions = torch.rand(args.n, 1, s, s, generator=g).to(device)
    details = fl.metrics.saco_details(model, x, attributions, k=args.k, batch_size=args.batch_size)
    removed = details["groups"][:, None, :] == torch.arange(args.k, device=device)[None, :, None]
    removed = torch.cat([torch.zeros_like(removed[:, :1]), removed], dim=1)
    units = fl.perturb.pixel_units(x)
    prebuilt = torch.stack([fl.perturb.apply_removal(x, removed[:, i], units, reference="channel_mean")
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

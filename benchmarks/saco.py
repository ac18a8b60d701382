"""Throughput of ``faithlab.metrics.saco`` against bare batched forward passes.

Both sides push the same B·(K+1) inputs (the clean image and each of the K salience groups removed alone, per-image
per-channel mean reference) through the same small ViT (``fl.models.build("vit")``), ``batch_size`` per call: the
bare side on inputs built beforehand, SaCo grouping the pixels, building every perturbed input on the fly and
scoring the pairs. ratio = t_bare / t_saco (1.0 is the limit; SaCo also runs one forward pass on the clean images
to find ŷ, so its ideal ratio is (K+1)/(K+2)).

On CUDA the peak GPU memory of each side is printed; ``--sweep`` repeats the timing at batch sizes 64…4096.
``--paper-scale`` (for a GPU): the paper's setting (Wu et al. 2024; ``notebooks/params/paper.yaml``, ``saco/*``): a
ViT-B/16-size ViT (``fl.models.build("vit")`` with patch 16, dim 768, depth 12, 12 heads, MLP ratio 4, 1000
classes, random init) on 3×224×224 images (the digits upsampled, in three channels), K = 10: 12 forward inputs per
image, B = 1024 images (the paper evaluates 5,000 ImageNet images; time scales linearly with B). Options given
explicitly override it.

    python benchmarks/saco.py [--device cpu|cuda] [--n 256] [--k 10] [--image-size 32] [--vit small|base]
                              [--batch-size 256] [--repeats 5] [--threads N] [--sweep] [--paper-scale]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import batched_forward, digits, parser, report_memory, setup, sweep, sweep_sizes, timed  # noqa: E402

import faithlab as fl  # noqa: E402


def main() -> None:
    paper = {"vit": "base", "image_size": 224, "k": 10, "n": 1024, "batch_size": 256, "repeats": 3}
    p = parser(__doc__, n=256, batch_size=256, repeats=5, paper=paper,
               paper_note="ViT-B/16 size, 3x224x224, K=10, B=1024, batch 256")
    p.add_argument("--k", type=int, default=10, help="groups K")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--vit", default="small", choices=["small", "base"],
                   help="small: patch 4, dim 64, depth 4, 4 heads, 1 channel; base: ViT-B/16 size, 3 channels")
    args = p.parse_args()
    device = setup(args)
    g = torch.Generator().manual_seed(0)
    s = args.image_size
    if args.vit == "base":
        c, config = 3, {"patch_size": 16, "n_classes": 1000, "dim": 768, "depth": 12, "heads": 12, "mlp_ratio": 4.0,
                        "norm_eps": 1e-6}
    else:
        c, config = 1, {"patch_size": 4, "n_classes": 10, "dim": 64, "depth": 4, "heads": 4}
    model = fl.models.build("vit", image_size=s, in_channels=c, **config).to(device).eval()
    x, _ = digits(args.n, s, device)
    x = x.expand(-1, c, -1, -1).contiguous()
    attributions = torch.rand(args.n, c, s, s, generator=g).to(device)
    details = fl.metrics.saco_details(model, x, attributions, k=args.k, batch_size=args.batch_size)
    removed = details["groups"][:, None, :] == torch.arange(args.k, device=device)[None, :, None]
    removed = torch.cat([torch.zeros_like(removed[:, :1]), removed], dim=1)
    units = fl.perturb.pixel_units(x)
    prebuilt = torch.stack([fl.perturb.apply_removal(x, removed[:, i], units, reference="channel_mean")
                            for i in range(args.k + 1)], dim=1).flatten(0, 1)

    def saco(batch_size: int = args.batch_size) -> torch.Tensor:
        return fl.metrics.saco(model, x, attributions, k=args.k, batch_size=batch_size)

    times, peaks = timed({"bare": lambda: batched_forward(model, prebuilt, args.batch_size), "saco": saco},
                         device, args.repeats)
    print(f"device={device} threads={torch.get_num_threads()} vit={args.vit} B={args.n} K={args.k} "
          f"image={c}x{s}x{s} inputs={prebuilt.shape[0]} batch_size={args.batch_size}")
    print(f"bare forward passes : {times['bare'] * 1e3:9.1f} ms")
    print(f"saco                : {times['saco'] * 1e3:9.1f} ms")
    print(f"ratio t_bare/t_saco : {times['bare'] / times['saco']:9.3f}  (ideal {(args.k + 1) / (args.k + 2):.3f})")
    report_memory(peaks)
    if args.sweep:
        sweep(lambda bs: {"SaCo": (prebuilt.shape[0], lambda: batched_forward(model, prebuilt, bs),
                                   lambda: saco(bs))},
              sweep_sizes(prebuilt.shape[0]), device, args.repeats)


if __name__ == "__main__":
    main()

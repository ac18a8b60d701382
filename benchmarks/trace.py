"""Speed of ``faithlab.metrics.papers.trace``: incremental batched annealing against the published loop,
and greedy and complete search against bare batched forward passes.

One model (``fl.models.build("small_cnn")``, random init: speed does not depend on training) and the same digits
upsampled to 3×28×28 (``--image-size``), t = 7×7 = 49 patches, zero reference, probability output.

(a) TRACE-SA-Le−Mo. Ours: ``anneal(incremental=True)`` on all B images at once (each swap of positions i < j
    re-evaluates only the j − i changed points of each curve; all images' proposals in one forward batch). The
    published loop: one image at a time, both whole curves (2(t + 1) inputs) re-evaluated per proposal, which is
    ``anneal(incremental=False)`` on a single image. Both start from the same Greedy-Le trajectory (computed
    beforehand, untimed). Reported: seconds and forward passes per proposal, and the ratio published/ours (goal
    ≥ 5× on CPU). "Equal energy trajectory": on the images the published side runs, ours run alone with the same
    seed must end on the same trajectories with the same best-energy history (checked, not assumed).
(b) TRACE-Greedy-Le: ratio t_bare / t_greedy, the bare side running the very inputs greedy sends to the model
    (recorded once, untimed), ``batch_size`` per call (goal ≥ 0.8).
(c) Complete search at t = ``cs_edge``²: ratio t_bare / t_cs. The B_cs · 2^t inputs would not fit in memory as one
    recording, so the bare side runs the same number of forward calls of the same sizes on one chunk of masked
    copies of the images (recorded from a 2×2-grid complete search, copied afresh before each call, as
    ``batched_forward`` does).

On CUDA the peak GPU memory of every timed call is printed. ``--sweep`` repeats (b) and (c) at batch sizes
64…4096 (the annealing has no bare counterpart). ``--paper-scale`` (for a GPU): the paper's model and grid (TRACE
Table 1 / searches; ``notebooks/params/paper.yaml``, ``trace/*``): torchvision's ResNet-18 (random init, 1000
classes) on 3×224×224 images (the digits upsampled), t = 7×7 = 49 patches, complete search at t = 4×4 = 16, batch
size 128; the counts are cut to fit one command of a few minutes on one GPU: B = 32 images (the paper: 200; the
greedy part's 40,832 recorded inputs take 25 GB of GPU memory), 100 annealing proposals per image (the paper: 5,000;
the figure is per proposal), one complete-search image (the paper: 16; 65,536 inputs each), 2 repeats. Options
given explicitly override it.

    python benchmarks/trace.py [--device cpu|cuda] [--n 16] [--iterations 100] [--pub-images 2]
                               [--pub-iterations 40] [--cs-n 1] [--cs-edge 4] [--image-size 28] [--width 16]
                               [--model small_cnn|resnet18] [--batch-size 256] [--repeats 3] [--threads N]
                               [--sweep] [--paper-scale]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import (batched_forward, captured_inputs, digits, parser, report_memory, setup, sweep,  # noqa: E402
                     sweep_sizes, timed)

import faithlab as fl  # noqa: E402

S = fl.metrics.search
EDGE = 7


def main() -> None:
    paper = {"model": "resnet18", "image_size": 224, "n": 32, "iterations": 100, "pub_images": 2,
             "pub_iterations": 40, "cs_n": 1, "cs_edge": 4, "batch_size": 128, "repeats": 2}
    p = parser(__doc__, n=16, batch_size=256, repeats=3, paper=paper,
               paper_note="torchvision ResNet-18, 3x224x224, t=49, B=32, 100 proposals, CS t=16 on 1 image, batch 128")
    p.add_argument("--iterations", type=int, default=100, help="annealing proposals per image, ours")
    p.add_argument("--pub-images", type=int, default=2, help="images the published loop runs (one at a time)")
    p.add_argument("--pub-iterations", type=int, default=40, help="annealing proposals per image, published loop")
    p.add_argument("--cs-n", type=int, default=1, help="images of the complete search")
    p.add_argument("--cs-edge", type=int, default=4, help="complete-search grid edge (t = edge², 2^t inputs)")
    p.add_argument("--image-size", type=int, default=28, help="image side (a multiple of 7 and of --cs-edge)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width")
    p.add_argument("--model", default="small_cnn", choices=["small_cnn", "resnet18"],
                   help="resnet18: torchvision's ImageNet ResNet-18, random init")
    args = p.parse_args()
    device = setup(args)
    if args.model == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(weights=None).to(device).eval()
    else:
        model = fl.models.build("small_cnn", in_channels=3, n_classes=10, width=args.width).to(device).eval()
    x, y = digits(args.n, args.image_size, device)
    x = x.expand(-1, 3, -1, -1).contiguous()
    kw = {"edge": EDGE, "reference": "zero", "output": "prob", "batch_size": args.batch_size}
    t = EDGE * EDGE
    name = f"small_cnn width={args.width}" if args.model == "small_cnn" else "torchvision resnet18"
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} image=3x{args.image_size}x{args.image_size} "
          f"t={t} {name} batch_size={args.batch_size}")

    # (a) annealing ----------------------------------------------------------------------------------------------
    start = S.greedy(model, x, objective="le", target=y, **kw)
    k, kp, n_pub = args.iterations, args.pub_iterations, args.pub_images
    inits = [S.Search(start.trajectory[i:i + 1], start.lerf[i:i + 1], start.morf[i:i + 1], start.passes)
             for i in range(n_pub)]

    def ours():
        return S.anneal(model, x, objective="le-mo", init=start, iterations=k, generator=0, target=y, **kw)

    def published(incremental: bool = False):
        return [S.anneal(model, x[i:i + 1], objective="le-mo", init=inits[i], iterations=kp, generator=1,
                         target=y[i:i + 1], incremental=incremental, **kw) for i in range(n_pub)]

    times, peaks = timed({"ours": ours, "published": published}, device, args.repeats)
    report_memory(peaks, "SA")
    pub, alone, mine = published(), published(incremental=True), ours()
    same = all(torch.equal(a.trajectory, b.trajectory) and torch.allclose(a.energy, b.energy, rtol=1e-5, atol=1e-6)
               for a, b in zip(alone, pub))
    ours_per, pub_per = times["ours"] / (k * args.n), times["published"] / (kp * n_pub)
    pub_passes = sum(int(s.passes[-1] - s.passes[0]) for s in pub) / (kp * n_pub)
    print(f"SA ours      : {ours_per * 1e3:8.3f} ms/proposal, "
          f"{(mine.passes[-1] - mine.passes[0]).item() / (k * args.n):6.1f} passes/proposal "
          f"({k} proposals x {args.n} images in one batch)")
    print(f"SA published : {pub_per * 1e3:8.3f} ms/proposal, {pub_passes:6.1f} passes/proposal "
          f"({kp} proposals x {n_pub} images, one at a time)")
    print(f"same trajectories and energies as the published loop on its images: {same}")
    print(f"SA ratio published/ours (s per proposal): {pub_per / ours_per:8.2f}  (goal >= 5; the passes alone "
          f"allow {pub_passes / ((mine.passes[-1] - mine.passes[0]).item() / (k * args.n)):.2f})")
    if not same:
        raise SystemExit("incremental and published annealing diverged: the speed comparison is void")

    # (b) greedy -------------------------------------------------------------------------------------------------
    def greedy(bs: int = args.batch_size):
        return S.greedy(model, x, objective="le", target=y, **{**kw, "batch_size": bs})

    recorded = captured_inputs(lambda m: S.greedy(m, x, objective="le", target=y, **kw), model)
    times, peaks = timed({"bare": lambda: batched_forward(model, recorded, args.batch_size), "greedy": greedy},
                         device, args.repeats)
    print(f"greedy: {recorded.shape[0]} inputs, bare {times['bare'] * 1e3:.1f} ms, greedy {times['greedy'] * 1e3:.1f} ms")
    print(f"greedy ratio t_bare/t_greedy: {times['bare'] / times['greedy']:8.3f}  (goal >= 0.8)")
    report_memory(peaks, "greedy")

    # (c) complete search ----------------------------------------------------------------------------------------
    xs, ys = x[:args.cs_n], y[:args.cs_n]
    cs_kw = {**kw, "edge": args.cs_edge}
    n_inputs = args.cs_n * 2 ** (args.cs_edge ** 2)
    chunk: list[torch.Tensor] = []

    class FirstChunk(torch.nn.Module):
        def forward(self, inputs):
            if not chunk:
                chunk.append(inputs.detach().clone())
            return model(inputs)

    S.complete_search(FirstChunk().eval(), xs[:1], target=ys[:1], **{**cs_kw, "edge": min(args.cs_edge, 2)})
    sample = chunk[0]

    def bare_cs(bs: int = args.batch_size):
        reps = math.ceil(n_inputs / bs)
        template = sample.repeat(math.ceil(bs / sample.shape[0]), 1, 1, 1)[:bs]
        last = n_inputs - (reps - 1) * bs

        def run():
            with torch.no_grad():
                for r in range(reps):
                    model(template[: last if r == reps - 1 else bs].clone())
        return run

    def cs(bs: int = args.batch_size):
        return S.complete_search(model, xs, target=ys, **{**cs_kw, "batch_size": bs})

    times, peaks = timed({"bare": bare_cs(), "cs": cs}, device, max(1, args.repeats - 1))
    print(f"complete search: t={args.cs_edge ** 2}, {n_inputs} inputs, bare {times['bare'] * 1e3:.1f} ms, "
          f"cs {times['cs'] * 1e3:.1f} ms")
    print(f"complete search ratio t_bare/t_cs: {times['bare'] / times['cs']:8.3f}  (goal >= 0.8)")
    report_memory(peaks, "complete search")
    if args.sweep:
        sweep(lambda bs: {"greedy": (recorded.shape[0], lambda: batched_forward(model, recorded, bs),
                                     lambda: greedy(bs)),
                          "complete search": (n_inputs, bare_cs(bs), lambda: cs(bs))},
              sweep_sizes(max(recorded.shape[0], n_inputs)), device, max(1, args.repeats - 1))


if __name__ == "__main__":
    main()

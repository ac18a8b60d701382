"""Speed of ``faithlab.metrics.papers.fewclass.fidelity`` (Few-class Fidelity): the batched search over the 804
candidate perturbations against bare batched forward passes and against the authors' per-candidate loop, and the MIF/LIF
curves against bare batched forward passes.

One 3-class model (``fl.models.build("small_cnn", n_classes=3)``, random init: speed does not depend on training)
and the same digits upsampled to 1×28×28 (``--image-size``); the default grid of ``candidate_grid()``: 11
operations × σ grid × 3 adjustments = 804 candidates per image.

(a) Candidate search: ``select_perturbation`` on all B images (every blur computed once per image and σ as matrix
    products, histogram matching batched, candidates built chunk by chunk, U and S of all 804·B candidates, argmin
    P) against the bare side: the very inputs it sends to the model (recorded once, untimed: the 804·B candidates
    and the one-image probe of the output width), ``batch_size`` per call. "selection ratio" = t_bare / t_ours
    (goal ≥ 0.8 on CPU; 1.0 is the limit).
(b) The authors' loop, on the first ``--ref-images`` images: for each image and each of the 804 (operation, σ,
    adjustment) entries, build the candidate on numpy with ``scipy.ndimage.gaussian_filter`` and
    ``skimage.exposure.match_histograms`` (``tests/support/oracles.py::fewclass_candidates_reference``, one entry at a
    time), run the model on it alone (a batch of 1) and compute U, S and P with numpy; then the same selection
    rule. Timed alongside (a) (interleaved repeats) and scaled per image: "speed-up over per-candidate loop" =
    (t_loop / ref-images) / (t_ours / B) (goal ≥ 20×), printed with its ceiling (t_loop / ref-images) / (t_bare /
    B): the batched model time alone bounds it, so a costlier model (``--width``, ``--image-size``) lowers both.
    "same selection": on those images the loop and ours must pick the same candidate index, or (a "near tie")
    candidates whose P, as the loop computes it, differ by less than 0.1 % (a random-init model gives nearly
    uniform outputs, and the float32 blurs of large σ differ in the last digits between scipy and ours); checked,
    not assumed: the run fails otherwise.
(c) MIF/LIF curves: ``fewclass_fid_details`` with the perturbed images selected in (a) and a random attribution
    map (101 fractions, both curves, plus the predicted-class pass) against bare forward passes of the very inputs
    it sends, ``batch_size`` per call: "curves ratio" = t_bare / t_curves (goal ≥ 0.8).
(d) Localisation (spec §2.4) at ``--loc-size`` px (default 224, the paper's ImageNet size), ``--loc-n`` maps,
    ``--loc-batch-size`` images at a time: ``localisation_iou`` (top-A pixels, their largest 8-connected region,
    its box) on smooth random maps (uniform noise averaged over 31×31 windows: blobs) with a centred box of a
    quarter of the image, and on raw uniform noise with a centred box of 9/16 of the image (the kept pixels
    percolate: one sprawling region with long winding paths); the largest region alone (``_largest_component``) of
    a snake (full rows every other row joined at alternating ends: the longest path a region of its area can have,
    the worst case of label spreading); ``dice_curve`` (p = 1…100 %) of the smooth maps against a centred disc.
    No bare counterpart: the times are printed as they are (compare with an older version of the module by timing
    its functions on :func:`localisation_inputs` and :func:`snake_masks`). ``--localisation-only`` skips (a)–(c).

On CUDA the peak GPU memory of every timed call is printed; ``--sweep`` repeats the bare comparisons (a) and
(c) at batch sizes 64…4096. ``--paper-scale`` (for a GPU): the paper's vehicles setting (``notebooks/params/
paper.yaml``, ``fewclass/*``): torchvision's ResNet-18 with 3 outputs (random init) on 3×224×224 images (the digits
upsampled, in three channels), the 804 candidates per image, batch size 256; B = 32 images (the paper: 2,500; time
scales linearly with B; the 25,729 recorded candidates take 15.5 GB of GPU memory), one image through the
per-candidate loop, 2 repeats. Options given explicitly override it.

    python benchmarks/fewclass.py [--device cpu|cuda] [--n 8] [--ref-images 1] [--image-size 28] [--width 16]
                                  [--model small_cnn|resnet18] [--channels 1] [--batch-size 256] [--repeats 3]
                                  [--threads N] [--sweep] [--paper-scale] [--loc-n 8] [--loc-size 224]
                                  [--loc-batch-size 64] [--localisation-only]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "support"))
from _timing import (batched_forward, captured_inputs, digits, parser, report_memory, setup, sweep,  # noqa: E402
                     sweep_sizes, timed)
from oracles import fewclass_candidates_reference  # noqa: E402

import faithlab as fl  # noqa: E402

FC = fl.metrics.fewclass
LOC = fl.metrics.fewclass.localisation
N_CLASSES = 3


def per_candidate_loop(model: torch.nn.Module, x: torch.Tensor,
                       grid: list[tuple[str, int, str]]) -> list[tuple[int, np.ndarray]]:
    """The authors' style: one image, one candidate at a time (numpy candidate, batch-1 forward, numpy U, S, P) →
    the selected candidate index of every image of x, with P of every candidate (inf where U fails the threshold)."""
    delta = FC.threshold(N_CLASSES)
    picks = []
    with torch.no_grad():
        for b in range(x.shape[0]):
            img = x[b].cpu().numpy()
            span2 = float(img.max() - img.min()) ** 2
            u, s = np.empty(len(grid)), np.empty(len(grid))
            for v, entry in enumerate(grid):
                c = fewclass_candidates_reference(img, [entry])[0]
                probs = model(torch.from_numpy(c)[None].to(x.device)).softmax(dim=1)[0].cpu().numpy()
                u[v] = np.abs(probs - 1 / N_CLASSES).mean()
                s[v] = ((c - img) ** 2).mean() / span2
            p = u + 10 / delta * s
            ok = u < delta
            picks.append((int(np.argmin(np.where(ok, p, np.inf))) if ok.any() else int(np.argmin(u)),
                          np.where(ok, p, np.inf)))
    return picks


def localisation_inputs(n: int, size: int, device: torch.device | str = "cpu", *, smooth: bool = True
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Case (d): ``n`` random maps ``(n, size, size)`` (seed 0; smooth: averaged over 31×31 windows, else raw
    uniform noise), a centred box ``(n, 4)`` (a quarter of the image when smooth, else 9/16) and a centred disc
    mask ``(n, size, size)`` bool."""
    g = torch.Generator().manual_seed(0)
    noise = torch.rand(n, 1, size, size, generator=g, dtype=torch.float64)
    if smooth:
        noise = torch.nn.functional.avg_pool2d(noise, 31, stride=1, padding=15, count_include_pad=False)
    lo = size // 4 if smooth else size // 8
    boxes = torch.tensor([[lo, lo, size - lo, size - lo]] * n)
    r = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    disc = (r[:, None] ** 2 + r[None, :] ** 2) <= (size / 4) ** 2
    return noise[:, 0].float().to(device), boxes.to(device), disc.expand(n, -1, -1).contiguous().to(device)


def snake_masks(n: int, size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Case (d): ``n`` copies of one ``(size, size)`` snake: full rows 0, 2, 4, … joined at alternating ends."""
    m = torch.zeros(size, size, dtype=torch.bool)
    m[::2] = True
    for j, r in enumerate(range(0, size - 2, 2)):
        m[r + 1, size - 1 if j % 2 == 0 else 0] = True
    return m.expand(n, -1, -1).contiguous().to(device)


def localisation(args, device: torch.device) -> None:
    """Case (d): ``localisation_iou`` and ``dice_curve`` at ``--loc-size`` px."""
    maps, boxes, masks = localisation_inputs(args.loc_n, args.loc_size, device)
    noise, noise_boxes, _ = localisation_inputs(args.loc_n, args.loc_size, device, smooth=False)
    bs = args.loc_batch_size
    snake = snake_masks(args.loc_n, args.loc_size, device)
    times, peaks = timed({"snake": lambda: LOC._largest_component(snake, batch_size=bs),
                          "iou": lambda: LOC.localisation_iou(maps, boxes, batch_size=bs),
                          "iou noise": lambda: LOC.localisation_iou(noise, noise_boxes, batch_size=bs),
                          "dice": lambda: LOC.dice_curve(maps, masks, batch_size=bs)}, device, args.repeats)
    print(f"localisation: {args.loc_n} maps of {args.loc_size}x{args.loc_size}, batch_size={bs}: "
          f"localisation_iou {times['iou'] * 1e3:.1f} ms (smooth maps), {times['iou noise'] * 1e3:.1f} ms "
          f"(noise maps); largest region of a snake {times['snake'] * 1e3:.1f} ms; "
          f"dice_curve (100 p) {times['dice'] * 1e3:.1f} ms")
    report_memory(peaks, "localisation")


def main() -> None:
    paper = {"model": "resnet18", "channels": 3, "image_size": 224, "n": 32, "ref_images": 1, "batch_size": 256,
             "repeats": 2}
    p = parser(__doc__, n=8, batch_size=256, repeats=3, paper=paper,
               paper_note="torchvision ResNet-18 (3 classes), 3x224x224, 804 candidates/image, B=32, batch 256")
    p.add_argument("--ref-images", type=int, default=1, help="images the per-candidate loop runs (one at a time)")
    p.add_argument("--image-size", type=int, default=28, help="image side (at least 4: two 2×2 max-pools)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width")
    p.add_argument("--model", default="small_cnn", choices=["small_cnn", "resnet18"],
                   help="resnet18: torchvision's ImageNet ResNet-18 with 3 outputs, random init")
    p.add_argument("--channels", type=int, default=1, choices=[1, 3], help="image channels (digits repeated)")
    p.add_argument("--loc-n", type=int, default=8, help="(d) maps of the localisation case")
    p.add_argument("--loc-size", type=int, default=224, help="(d) map side")
    p.add_argument("--loc-batch-size", type=int, default=64, help="(d) images labelled / scored at a time")
    p.add_argument("--localisation-only", action="store_true", help="run (d) alone")
    args = p.parse_args()
    if args.localisation_only:
        localisation(args, setup(args))
        return
    if not 1 <= args.ref_images <= args.n:
        p.error(f"--ref-images must lie in [1, --n = {args.n}], got {args.ref_images}")
    device = setup(args)
    s, c = args.image_size, args.channels
    if args.model == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(weights=None, num_classes=N_CLASSES)
        if c != 3:
            model.conv1 = torch.nn.Conv2d(c, 64, 7, stride=2, padding=3, bias=False)
        model = model.to(device).eval()
        name = "torchvision resnet18"
    else:
        model = fl.models.build("small_cnn", in_channels=c, n_classes=N_CLASSES, width=args.width).to(device).eval()
        name = f"small_cnn width={args.width}"
    x, _ = digits(args.n, s, device)
    x = x.expand(-1, c, -1, -1).contiguous()
    grid = FC.candidate_grid()
    v, bs, r = len(grid), args.batch_size, args.ref_images
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} image={c}x{s}x{s} N={N_CLASSES} "
          f"candidates={v}/image ref-images={r} {name} batch_size={bs}")

    # (a) + (b) candidate search -------------------------------------------------------------------------------
    def ours(net: torch.nn.Module = model, batch_size: int = bs) -> dict:
        return FC.select_perturbation(net, x, grid=grid, batch_size=batch_size, cache=False, progress=False)

    recorded = captured_inputs(ours, model)
    if recorded.shape[0] != v * args.n + 1:
        raise RuntimeError(f"select_perturbation sent {recorded.shape[0]} inputs, expected {v * args.n + 1}")
    loop_picks: list[list[tuple[int, np.ndarray]]] = []
    times, peaks = timed({"bare": lambda: batched_forward(model, recorded, bs), "ours": ours,
                          "loop": lambda: loop_picks.append(per_candidate_loop(model, x[:r], grid))},
                         device, args.repeats)
    report_memory(peaks, "selection")
    sel = ours()
    mine, theirs = sel["index"][:r].tolist(), [pick for pick, _ in loop_picks[-1]]
    same = mine == theirs
    near = all(a == b or abs(p_loop[a] - p_loop[b]) <= 1e-3 * abs(p_loop[b])
               for a, b, (_, p_loop) in zip(mine, theirs, loop_picks[-1]))
    ours_per, loop_per = times["ours"] / args.n, times["loop"] / r
    print(f"selection: {recorded.shape[0]} inputs, bare {times['bare'] * 1e3:.1f} ms, "
          f"ours {times['ours'] * 1e3:.1f} ms ({ours_per * 1e3:.1f} ms/image)")
    print(f"selection ratio t_bare/t_ours: {times['bare'] / times['ours']:8.3f}  (goal >= 0.8)")
    print(f"per-candidate loop: {loop_per * 1e3:.1f} ms/image ({r} image(s), {v} batch-1 forward calls each)")
    print(f"same selection: {same if same or not near else 'near tie (P within 0.1 %)'}  (ours {mine}, loop {theirs})")
    print(f"speed-up over per-candidate loop (s per image): {loop_per / ours_per:8.2f}  (goal >= 20; the bare "
          f"forward passes alone allow {loop_per / (times['bare'] / args.n):.2f})")
    if not near:
        raise SystemExit("the batched search and the per-candidate loop selected different candidates: "
                         "the speed comparison is void")

    # (c) MIF/LIF curves -----------------------------------------------------------------------------------------
    g = torch.Generator().manual_seed(0)
    attributions = torch.rand(args.n, c, s, s, generator=g).to(device)
    perturbed = sel["image"]

    def curves(net: torch.nn.Module = model, batch_size: int = bs) -> dict:
        return FC.fewclass_fid_details(net, x, attributions, perturbed=perturbed, generator=0, batch_size=batch_size)

    selection_inputs = recorded
    recorded = captured_inputs(curves, model)
    times, peaks = timed({"bare": lambda: batched_forward(model, recorded, bs), "curves": curves},
                         device, args.repeats)
    print(f"curves: {recorded.shape[0]} inputs ({len(FC.FRACTIONS)} fractions x 2 curves x {args.n} images, the "
          f"predicted-class pass, the output-width probe), bare {times['bare'] * 1e3:.1f} ms, "
          f"curves {times['curves'] * 1e3:.1f} ms")
    print(f"curves ratio t_bare/t_curves: {times['bare'] / times['curves']:8.3f}  (goal >= 0.8)")
    report_memory(peaks, "curves")
    if args.sweep:
        sweep(lambda b: {"selection": (selection_inputs.shape[0],
                                       lambda: batched_forward(model, selection_inputs, b), lambda: ours(model, b)),
                         "MIF/LIF curves": (recorded.shape[0], lambda: batched_forward(model, recorded, b),
                                            lambda: curves(model, b))},
              sweep_sizes(max(selection_inputs.shape[0], recorded.shape[0])), device, args.repeats)

    # (d) localisation -------------------------------------------------------------------------------------------
    localisation(args, device)


if __name__ == "__main__":
    main()

"""Speed of ``faithlab.metrics.papers.reco_mege.crossfold`` (ReCo / MeGe, Fel & Vigouroux 2020): batched distances and
the exact ReCo against an xplique-style loop, and of ``faithlab.metrics.papers.reco_mege.baselines`` (μF and S_avg)
against bare batched forward passes / explainer calls.

(a) ReCo / MeGe on the same random maps: k = ``--k`` models × N = ``--n`` samples, maps 3×S×S (S = ``--image-size``),
    random labels (10 classes), predictions right with probability 0.8, random folds (each sample's unseen model).
    Ours: ``reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=-3)`` on all N samples (ranks
    once per map, ``batch_size`` samples at a time, Pearson of the ranks for every (unseen, other) pair, the exact
    ReCo from one sort, and xplique's scan alongside). The loop, in the style of xplique's ``MeGe``
    (``representativity.py``): for each unordered pair of models i < j and each sample of block i or j, both maps
    averaged over channels and flattened, ``scipy.stats.spearmanr``, d = sqrt(1 − |ρ|), the pair put in S= (both
    right) or S≠ (exactly one right); then MeGe = 1/(1 + mean S=) and xplique's 20-threshold ReCo scan, a Python loop
    over numpy. The loop runs on the first ``--ref-samples`` samples only (one scipy call per pair and sample: slow)
    and is scaled per sample: "speed-up" = (t_loop / ref-samples) / (t_ours / N) (goal ≥ 50×). Checked before
    timing, on those samples (the run fails otherwise): the same S= and S≠ multisets (sorted, allclose), the same
    MeGe, and our ``reco_scan`` equal to the loop's scan value.
(b) μF: ``mu_fidelity`` (``--subsets`` random subsets of 15 % of the pixels per image, zero reference, probability
    of the label) on ``--mu-n`` digits (3×S×S) through ``fl.models.build("small_cnn")`` (random init: speed does not
    depend on training) against bare batched forward passes of the very inputs it sends (recorded once, untimed),
    ``batch_size`` per call: "μF ratio" = t_bare / t_ours (goal ≥ 0.8). "Engine alone": μF with a no-op model
    (constant logits), the library's own share, the figure least disturbed by other load on a shared machine.
(c) S_avg: ``average_stability`` with the saliency explainer
    ``functools.partial(fl.explainers.explain, method="saliency", batch_size=batch_size)`` on ``--stab-n``
    digits, ``--neighbours`` neighbours each, radius 0.1, against the bare side: the same explainer called on the
    very inputs (clean images and neighbours, recorded once, untimed) ``batch_size`` at a time, each chunk copied
    afresh: "S_avg ratio" = t_bare / t_ours (goal ≥ 0.8). "S_avg alone": the same call with an identity explainer
    (maps = inputs, as large as the saliency maps), i.e. drawing the neighbours and the distances.

On CUDA the peak GPU memory of every timed call is printed; ``--sweep`` repeats (b) and (c) at batch sizes
64…4096 (ReCo/MeGe's batch size counts samples, not forward inputs: not swept). ``--paper-scale`` (for a GPU): the
paper's sizes (Fel & Vigouroux 2020 §4; ``notebooks/params/paper.yaml``, ``reco_mege/*``): k = 5 models ×
N = 10,000 maps of 3×32×32, the CIFAR ResNet-18 (``fl.models.build("resnet18_cifar")``, width 64, random init)
for μF (200 subsets) and S_avg (200 neighbours), batch size 512; μF on 256 images and S_avg on 64 (the paper
evaluates 10,000; time scales linearly), the loop on 200 samples. Options given explicitly override it.

    python benchmarks/reco_mege.py [--device cpu|cuda] [--n 2000] [--k 5] [--ref-samples 200] [--mu-n 8]
                                   [--subsets 200] [--stab-n 4] [--neighbours 200] [--image-size 32] [--width 16]
                                   [--model small_cnn|resnet18_cifar] [--batch-size 256] [--repeats 3] [--threads N]
                                   [--sweep] [--paper-scale]
"""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import (NoOp, batched_forward, captured_inputs, digits, median_times, parser, report_memory,  # noqa: E402
                     setup, sweep, sweep_sizes, timed)

import faithlab as fl  # noqa: E402

M = fl.metrics
N_CLASSES = 10


def xplique_loop(maps: torch.Tensor, predictions: torch.Tensor, labels: torch.Tensor,
                 folds: torch.Tensor) -> tuple[np.ndarray, np.ndarray, float, float]:
    """xplique's ``MeGe.evaluate`` in our layout (maps ``(k, N, C, H, W)``, folds instead of contiguous splits) →
    S=, S≠, MeGe and the 20-threshold ReCo scan."""
    e = maps.cpu().numpy()
    pred, lab, fold = predictions.cpu().numpy(), labels.cpu().numpy(), folds.cpu().numpy()
    k, n = e.shape[:2]

    def sanitize(m: np.ndarray) -> np.ndarray:                    # xplique's _sanitize_explanation, channels first
        return np.nan_to_num(np.mean(m, 0), nan=0.0).flatten()

    s_eq, s_ne = [], []
    for i in range(k):
        for j in range(i + 1, k):
            for s in range(n):
                if fold[s] not in (i, j):                          # one model saw the sample, the other did not
                    continue
                rho = spearmanr(sanitize(e[i, s]), sanitize(e[j, s])).statistic
                d = np.sqrt(1.0 - np.abs(rho))
                if pred[i, s] == lab[s] or pred[j, s] == lab[s]:   # at least one right
                    (s_eq if pred[i, s] == pred[j, s] else s_ne).append(d)
    s_eq, s_ne = np.array(s_eq), np.array(s_ne)
    s_eq, s_ne = s_eq[~np.isnan(s_eq)], s_ne[~np.isnan(s_ne)]
    mege = 1.0 / (1.0 + np.mean(s_eq))
    total = np.concatenate([s_eq, s_ne])
    reco = 0.0
    for gamma in np.sort(total)[:: len(total) // 20 + 1]:
        tp, tn = np.sum(s_eq < gamma), np.sum(s_ne > gamma)
        fp, fn = np.sum(s_ne < gamma), np.sum(s_eq > gamma)
        reco = max(reco, tp / (tp + fn + 1e-10) + tn / (tn + fp + 1e-10) - 1.0)
    return s_eq, s_ne, float(mege), float(reco)


def main() -> None:
    paper = {"n": 10000, "k": 5, "ref_samples": 200, "mu_n": 256, "subsets": 200, "stab_n": 64, "neighbours": 200,
             "image_size": 32, "model": "resnet18_cifar", "batch_size": 512, "repeats": 3}
    p = parser(__doc__, n=2000, batch_size=256, repeats=3, paper=paper,
               paper_note="k=5 x N=10000 maps 3x32x32, CIFAR ResNet-18, muF 256 images x 200 subsets, S_avg 64 x 200 "
                          "neighbours, batch 512")
    p.add_argument("--k", type=int, default=5, help="models (folds) k")
    p.add_argument("--ref-samples", type=int, default=200, help="samples the xplique-style loop runs")
    p.add_argument("--mu-n", type=int, default=8, help="images of the μF part")
    p.add_argument("--subsets", type=int, default=200, help="μF random subsets per image")
    p.add_argument("--stab-n", type=int, default=4, help="images of the S_avg part")
    p.add_argument("--neighbours", type=int, default=200, help="S_avg neighbours per image")
    p.add_argument("--image-size", type=int, default=32, help="map and image side (at least 4: two 2×2 max-pools)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width (resnet18_cifar: its base width 64)")
    p.add_argument("--model", default="small_cnn", choices=["small_cnn", "resnet18_cifar"])
    args = p.parse_args()
    if args.k < 2:
        p.error(f"--k must be at least 2, got {args.k}")
    if not 1 <= args.ref_samples <= args.n:
        p.error(f"--ref-samples must lie in [1, --n = {args.n}], got {args.ref_samples}")
    device = setup(args)
    k, n, r, s, bs = args.k, args.n, args.ref_samples, args.image_size, args.batch_size
    name = f"small_cnn width={args.width}" if args.model == "small_cnn" else "resnet18_cifar"
    print(f"device={device} threads={torch.get_num_threads()} k={k} N={n} maps=3x{s}x{s} ref-samples={r} "
          f"{name} batch_size={bs}")

    # (a) distances + ReCo / MeGe ------------------------------------------------------------------------------
    g = torch.Generator().manual_seed(0)
    maps = torch.randn(k, n, 3, s, s, generator=g)
    labels = torch.randint(0, N_CLASSES, (n,), generator=g)
    right = torch.rand(k, n, generator=g) < 0.8
    predictions = torch.where(right, labels, (labels + torch.randint(1, N_CLASSES, (k, n), generator=g)) % N_CLASSES)
    folds = torch.randint(0, k, (n,), generator=g)
    maps, predictions, labels, folds = (t.to(device) for t in (maps, predictions, labels, folds))

    def ours() -> dict[str, float]:
        return M.reco_mege_from_predictions(maps, predictions, labels, folds, channel_dim=-3, batch_size=bs)

    def loop() -> tuple[np.ndarray, np.ndarray, float, float]:
        return xplique_loop(maps[:, :r], predictions[:, :r], labels[:r], folds[:r])

    ref_eq, ref_ne, ref_mege, ref_scan = loop()
    pairs = M.pair_distances(maps[:, :r], predictions[:, :r], labels[:r], folds[:r], channel_dim=-3, batch_size=bs)
    eq, ne = M.split_sets(pairs)
    if eq.numel() == 0 or ne.numel() == 0:
        raise SystemExit(f"S= or S≠ is empty on the first {r} samples: raise --ref-samples")
    eq_np, ne_np = eq.double().cpu().numpy(), ne.double().cpu().numpy()
    same_sets = (eq_np.size == ref_eq.size and ne_np.size == ref_ne.size
                 and np.allclose(np.sort(eq_np), np.sort(ref_eq), atol=1e-5)
                 and np.allclose(np.sort(ne_np), np.sort(ref_ne), atol=1e-5))
    our_scan, our_mege = float(M.reco_scan(eq, ne)), float(M.mege(eq))
    same_scan = abs(our_scan - ref_scan) <= 1e-6
    same_mege = abs(our_mege - ref_mege) <= 1e-6
    print(f"on the first {r} samples: |S=| {eq.numel()} (loop {ref_eq.size}), |S≠| {ne.numel()} "
          f"(loop {ref_ne.size}), dropped {pairs.dropped}")
    print(f"same S= and S≠ multisets as the loop: {same_sets}; same MeGe and scan: {same_scan and same_mege} "
          f"(MeGe ours {our_mege:.6f} loop {ref_mege:.6f}; reco_scan ours {our_scan:.6f} loop {ref_scan:.6f})")
    if not (same_sets and same_scan and same_mege):
        raise SystemExit("the batched distances / scan and the xplique-style loop disagree: the speed comparison is "
                         "void")

    full = M.reco_mege_details_from_predictions(maps, predictions, labels, folds, channel_dim=-3, batch_size=bs)
    times = median_times({"ours": ours, "loop": loop}, device, args.repeats, warmup=0)   # both ran once above
    ours_per, loop_per = times["ours"] / n, times["loop"] / r
    print(f"ReCo/MeGe ours: {times['ours'] * 1e3:.1f} ms for {n} samples ({ours_per * 1e6:.1f} us/sample, "
          f"{k - 1} distances each); exact ReCo {full['reco']:.4f}, xplique scan {full['reco_scan']:.4f}, "
          f"MeGe {full['mege']:.4f} (|S=| {full['counts']['S=']}, |S≠| {full['counts']['S≠']})")
    print(f"xplique-style loop: {times['loop'] * 1e3:.1f} ms for {r} samples ({loop_per * 1e6:.1f} us/sample, one "
          f"scipy spearmanr per pair; scaled per sample)")
    print(f"ReCo/MeGe speed-up over the loop (s per sample): {loop_per / ours_per:8.1f}  (goal >= 50)")

    # (b) μF -----------------------------------------------------------------------------------------------------
    width = {"width": args.width} if args.model == "small_cnn" else {}
    model = fl.models.build(args.model, in_channels=3, n_classes=N_CLASSES, **width).to(device).eval()
    x, y = digits(max(args.mu_n, args.stab_n), s, device)
    x = x.expand(-1, 3, -1, -1).contiguous()
    xm, ym = x[:args.mu_n], y[:args.mu_n]
    attributions = torch.rand(xm.shape, generator=g).to(device)

    def mu(net: torch.nn.Module = model, batch_size: int = bs) -> torch.Tensor:
        return M.mu_fidelity(net, xm, attributions, target=ym, n_subsets=args.subsets, generator=0,
                             batch_size=batch_size)

    recorded = captured_inputs(mu, model)
    noop = NoOp(N_CLASSES).eval()
    times, peaks = timed({"bare": lambda: batched_forward(model, recorded, bs), "mu": mu,
                          "engine": lambda: mu(noop)}, device, args.repeats)
    print(f"muF: {args.mu_n} images x {args.subsets} subsets, {recorded.shape[0]} inputs, "
          f"bare {times['bare'] * 1e3:.1f} ms, muF {times['mu'] * 1e3:.1f} ms, engine alone (no-op model) "
          f"{times['engine'] * 1e3:.1f} ms ({100 * times['engine'] / times['mu']:.1f} %)")
    print(f"muF ratio t_bare/t_ours: {times['bare'] / times['mu']:8.3f}  (goal >= 0.8)")
    report_memory(peaks, "muF")

    # (c) S_avg --------------------------------------------------------------------------------------------------
    xs, ys = x[:args.stab_n], y[:args.stab_n]
    explainer = functools.partial(fl.explainers.explain, method="saliency", batch_size=bs)  # (model, inputs, target)

    def stability(expl=explainer, batch_size: int = bs) -> torch.Tensor:
        return M.average_stability(model, xs, explainer=expl, target=ys, n_neighbours=args.neighbours, radius=0.1,
                                   generator=0, batch_size=batch_size)

    seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def recording(net: torch.nn.Module, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        seen.append((z.detach().clone(), t.clone()))
        return explainer(net, z, t)

    stability(recording)
    z_all = torch.cat([z for z, _ in seen])
    t_all = torch.cat([t for _, t in seen])

    def bare_explain(batch_size: int = bs) -> None:
        expl = functools.partial(fl.explainers.explain, model, method="saliency", batch_size=batch_size)
        for c0 in range(0, z_all.shape[0], batch_size):
            expl(z_all[c0:c0 + batch_size].clone(), t_all[c0:c0 + batch_size])

    times, peaks = timed({"bare": bare_explain, "stab": stability,
                          "alone": lambda: stability(lambda net, z, t: z)}, device, args.repeats)
    print(f"S_avg: {args.stab_n} images x {args.neighbours} neighbours, {z_all.shape[0]} explained inputs in "
          f"{math.ceil(z_all.shape[0] / bs)} bare calls ({len(seen)} by S_avg), bare {times['bare'] * 1e3:.1f} ms, "
          f"S_avg {times['stab'] * 1e3:.1f} ms, S_avg alone (identity explainer) {times['alone'] * 1e3:.1f} ms "
          f"({100 * times['alone'] / times['stab']:.1f} %)")
    print(f"S_avg ratio t_bare/t_ours: {times['bare'] / times['stab']:8.3f}  (goal >= 0.8)")
    report_memory(peaks, "S_avg")
    if args.sweep:
        def explained(b: int):
            expl = functools.partial(fl.explainers.explain, method="saliency", batch_size=b)
            return lambda: stability(expl, b)

        sweep(lambda b: {"muF": (recorded.shape[0], lambda: batched_forward(model, recorded, b),
                                 lambda: mu(model, b)),
                         "S_avg (explained inputs)": (z_all.shape[0], lambda: bare_explain(b), explained(b))},
              sweep_sizes(max(recorded.shape[0], z_all.shape[0])), device, args.repeats)


if __name__ == "__main__":
    main()

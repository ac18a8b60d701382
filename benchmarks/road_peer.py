"""faithlab's ROAD against its peer pytorch-grad-cam 1.5.7 (``ROADCombined``): the same imputed images, MoRF and LeRF
read-outs and combined scores, then the time each takes, against bare forward passes over the inputs it sends, and
the noisy linear imputation alone (ours batched on the inputs' device, grad-cam's one image at a time with scipy).

pytorch-grad-cam (PyPI ``grad-cam``) is not a dependency of the project: this script makes (once) a throw-away
virtual environment with uv outside the repository (``--peer-env``, default ``$FAITHLAB_GRADCAM_ENV`` or
``~/.cache/faithlab-bench/grad-cam-1.5.7``) holding ``grad-cam==1.5.7`` (the latest 1.5.x on PyPI when this was
written) and the project's exact torch and torchvision versions, and runs ``benchmarks/_gradcam_side.py`` with that
environment's python. grad-cam's own requirements bring ``opencv-python-headless`` (it imports cv2; the headless
wheel needs no display libraries); the environment is checked to import ``pytorch_grad_cam.metrics.road``, cv2 and
scipy before use. The two sides exchange plain tensors (``torch.save`` / ``torch.load(weights_only=True)``: inputs,
maps, classes, state dicts, masks, imputed images, scores) and one JSON file each way, no pickled objects. Issue 72
asked for a benchmark-only dependency group; a uv dependency group is resolved into ``uv.lock`` with the rest, so the
project's lock file would then carry grad-cam and what it brings (opencv, ttach, matplotlib), resolved for every
platform, for one benchmark script.
It follows the TorchCAM peer (``torchcam_peer.py``) instead: same mechanism, the lock file stays free of grad-cam
and opencv, and ``make test`` runs the script offline with ``--skip-peer`` where the environment is not there.

Workload (as ``torchcam_peer.py``): B = ``--n`` scikit-learn digits upsampled to 64×64 and repeated over 3 channels
(P = 4,096 pixel positions), ResNet-18 (torchvision, ``num_classes=10``) and the small CNN
(``fl.models.build("small_cnn", in_channels=3, n_classes=10, width=16)``), random init, eval mode. Maps: saliency
of the predicted class summed over channels, exact ties broken by one float32 step (as the Quantus and TorchCAM
peers), so that no two positions of a map tie.

grad-cam's ``ROADCombined(percentiles=[10, …, 90])(x, cams, targets, model)`` with
``targets=[ClassifierOutputSoftmaxTarget(c)]`` for our predicted classes c: per percentile p and per direction
(``ROADMostRelevantFirst(p)`` keeps the pixels with cam < ``np.percentile(cam, p)``, i.e. removes the top ≈ (100 − p)
%; ``ROADLeastRelevantFirst(p)`` does the same on 1 − cam, removing the bottom ≈ (100 − p) %), it imputes each image
with ``NoisyLinearImputer(noise=0.01)`` (scipy ``spsolve``, one image at a time on the CPU), reads the softmax
probability of the target before (a clean forward per percentile and direction) and after, and returns
(mean LeRF diff − mean MoRF diff) / 2 per image (diff = after − before; the clean read-outs cancel). grad-cam reads
a map only through those percentile thresholds, ``<`` and ``1 − cam``: it gets each map as its ranks in our order,
scaled to [0, 1] (float32 (P − 1 − rank) / (P − 1)), the same order with no two values or complements equal (on the
saliency values themselves ``1 − s`` rounds neighbours, and the nudged zeros, into ties in float32 and float64). The
pixel counts grad-cam removes are ``P − #{cam < percentile}``, which for P = 4,096 are 410, 820, 1,229, 1,639, 2,048,
2,458, 2,867, 3,277, 3,686 (:func:`gradcam_removed`); ``fl.metrics.road_details`` removes ``round(f·P)`` at its
levels f = 0.1, …, 0.9: 819 and 1,638 at 0.2 and 0.4, one pixel fewer (printed). Ours is run at ``fractions =
counts / P`` (exact in binary: ``round(f·P)`` gives each count back), so both sides remove the same counts, and the
masks grad-cam builds are checked equal, pixel for pixel, to ours (rank ≥ count kept for MoRF, rank < P − count for
LeRF).

Agreement comes first, per model (the run fails beyond the stated tolerances):
(a) the imputation: grad-cam's ``NoisyLinearImputer`` with its noise set to 0 on all 2 × 9 × B (image, mask) pairs
    of its ROAD run (a spy keeps them) against ``fl.perturb.noisy_linear_imputation(x, keep)`` on the same pairs in
    one batch, float32 and float64 inputs. grad-cam solves in float64 (its right-hand side made of float32
    products: NumPy keeps ``weight · float32 array`` in float32) and returns float32, so it is within ≈ 2e-7 of the
    exact solution on these images (values in [−0.94, 2.14]); our float64 solve (rtol 1e-10) is held to 1e-6 of it.
    Our float32 solve stops at a relative residual of 1e-5 (the library's default for float32), and the error of
    the solution is the residual amplified by up to the condition number of a hole's system, which grows with the
    square of the hole's diameter: on these maps it reached 8.3e-4 (ResNet-18's maps; 5.2e-4 for the small CNN's),
    so float32 is held to 2e-3, a fifth of ROAD's noise (std 0.01) that both sides add to every imputed value.
(b) the whole metric with the noise set to 0 on both sides (grad-cam's imputer default patched to 0.0 in the side
    script; ours ``noise=0``): per-image ``ROADCombined`` against our ``road``, and each direction's read-out
    difference at every level (grad-cam's ``score after − score before`` read by a spy against our ``morf − clean``
    and ``lerf − clean``). Held to 1e-4 for our float32 run (it inherits (a)'s float32 solve error through the
    model; 1.9e-6 seen) and to 1e-6 for our float64 run (model and inputs in float64; grad-cam's side is float32
    throughout). Then with the noise on (0.01 on both sides; the draws differ: grad-cam's from torch's global RNG,
    ours keyed per sample) the mean |difference| of the per-image scores is reported beside the same figure between
    two of our own noise seeds (generator 0 and 1), the size of a change of draws.

Times: medians of ``--repeats`` interleaved repeats after a warm-up, ``--threads`` torch threads (and
``OMP_NUM_THREADS`` etc. in the peer's process unless already set), each side in its own environment (grad-cam's
first, then ours, minutes apart): our ``fl.metrics.road_details`` on the batch (noise 0.01, library default batch
size unless ``--batch-size``) and grad-cam's ``ROADCombined`` (its default noise 0.01), each with the number of model
inputs it sends (a recording wrapper around the model); bare forward passes over the very inputs each side sent,
replayed in its own calls ("as sent") and at each of ``--bare-sizes`` ("best bare": the fastest); the imputation alone
on the 2 × 9 × B (image, mask) pairs with noise 0.01, ours batched over the B images of each direction and level (18
calls), grad-cam's ``NoisyLinearImputer()`` image by image (576 calls at B = 32). Ratios t_bare / t_metric (1.0 is
the limit: here the imputation, not the model, takes most of both sides' time); faithlab's speed-up t_gradcam /
t_faithlab, raw and per image. (No speed-up in units of bare passes, as the TorchCAM peer gives: with the model a
minority of the time, it would scale the imputation's time by the model's.) Markdown rows for benchmarks/RESULTS.md
are printed last, with the machine's load.

    python benchmarks/road_peer.py [--device cpu|cuda] [--n 32] [--batch-size N] [--repeats 3] [--threads 1]
                                   [--bare-sizes 16,32,64,128,256] [--width 16] [--models resnet18,small_cnn]
                                   [--seed 0] [--peer-env PATH] [--skip-peer]

On CUDA our side runs on the GPU (maps, imputation, model), TF32 off and every timed call synchronised; grad-cam's
model and batch go to the GPU too, but its imputer solves on the CPU one image at a time, as it is written. Not tried
on a GPU yet (none was lent).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer_common import Recorder, ensure_env, env_ready, replay  # noqa: E402
from _timing import batched_forward, digits, parser, setup, timed  # noqa: E402
from torchcam_peer import build_models, loadavg, saliency_maps  # noqa: E402

import faithlab as fl  # noqa: E402

PEER_SCRIPT = Path(__file__).resolve().with_name("_gradcam_side.py")
READY = ".faithlab-gradcam-ready"   # written once the peer environment imports grad-cam's ROAD, cv2, scipy and torch
GRADCAM = "1.5.7"
SIZE, CHANNELS = 64, 3
MODELS = ("resnet18", "small_cnn")
PACKAGES = ("grad-cam", "torch", "torchvision")
PERCENTILES = tuple(range(10, 100, 10))   # grad-cam's ROADCombined default
DIRECTIONS = ("morf", "lerf")              # the side script's index 0 and 1
IMPUTE_ATOL = {torch.float32: 2e-3, torch.float64: 1e-6}   # (a), module docstring
METRIC_ATOL = {torch.float32: 1e-4, torch.float64: 1e-6}   # (b): probabilities and ROAD scores


def default_peer_env() -> Path:
    return Path(os.environ.get("FAITHLAB_GRADCAM_ENV")
                or Path.home() / ".cache" / "faithlab-bench" / f"grad-cam-{GRADCAM}")


def wanted_versions() -> dict[str, str]:
    """The peer environment's pins: grad-cam 1.5.7 and this environment's exact torch and torchvision."""
    return {"grad-cam": GRADCAM, "torch": importlib.metadata.version("torch"),
            "torchvision": importlib.metadata.version("torchvision")}


def peer_env_ready(env: Path) -> bool:
    """Whether ``env`` was made by :func:`ensure_peer_env` with today's pins (a torch upgrade makes it stale)."""
    return env_ready(env, READY, wanted_versions())


def ensure_peer_env(env: Path) -> Path:
    """The peer environment's python, (re)making the environment with uv first if it is missing or stale (printed;
    ``_peer_common.ensure_env``)."""
    return ensure_env(env, ready=READY, pins=wanted_versions(), imports='import cv2, scipy, torch, torchvision; import pytorch_grad_cam.metrics.road', label='grad-cam',
                      hint=' (if cv2 fails: uv pip install opencv-python-headless into it)')


# ------------------------------------------------------------------------------------------------- faithlab side
def gradcam_removed(n_pixels: int, percentiles: tuple[int, ...] = PERCENTILES) -> list[int]:
    """The pixels pytorch-grad-cam's ``RemoveMostRelevantFirst(p)`` / ``RemoveLeastRelevantFirst(p)`` remove from
    an image of ``n_pixels`` distinct map values: ``n − #{cam < np.percentile(cam, p)}`` (the same for both
    directions; its own expression on distinct values 0, 1, …, n − 1, for which the count depends on n and p only)."""
    if not isinstance(n_pixels, int) or isinstance(n_pixels, bool) or n_pixels < 2:
        raise ValueError(f"n_pixels must be an int ≥ 2, got {n_pixels!r}")
    a = np.arange(n_pixels, dtype=np.float64)
    return [n_pixels - int((a < np.percentile(a, p)).sum()) for p in percentiles]


def pixel_ranks(maps: torch.Tensor) -> torch.Tensor:
    """Each pixel's position in ROAD's MoRF order of a map ``(B, 1, H, W)`` summed over channels (descending, ties
    by lower index; 0 = most relevant) → ``(B, H, W)`` int64."""
    units = fl.perturb.pixel_units(maps)
    scores = fl.perturb.unit_scores(maps, units, reduce="sum")
    return fl.perturb.ranks(fl.perturb.order(scores, "morf")).view(maps.shape[0], *maps.shape[-2:])


def rank_cams(ranks: torch.Tensor) -> torch.Tensor:
    """The maps handed to grad-cam: float32 (P − 1 − rank) / (P − 1) ``(B, H, W)``, most relevant 1, least 0."""
    n = ranks[0].numel()
    return ((n - 1 - ranks).double() / (n - 1)).float()


def keep_masks(ranks: torch.Tensor, removed: list[int]) -> torch.Tensor:
    """The kept pixels at each removal count, as grad-cam builds them → ``(2, F, B, H, W)`` bool: index 0 MoRF (the
    ``count`` most relevant removed: rank ≥ count kept), 1 LeRF (the ``count`` least relevant removed)."""
    n = ranks[0].numel()
    morf = torch.stack([ranks >= c for c in removed])
    lerf = torch.stack([ranks < n - c for c in removed])
    return torch.stack([morf, lerf])


def main() -> None:
    p = parser(__doc__, n=32, batch_size=32, repeats=3)
    p.set_defaults(batch_size=None, threads=1)
    p.add_argument("--bare-sizes", default="16,32,64,128,256",
                   help="batch sizes of the bare passes whose best gives 'best bare' (comma-separated)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width")
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--seed", type=int, default=0, help="noise: our generator, grad-cam's torch.manual_seed")
    p.add_argument("--peer-env", type=Path, default=None,
                   help=f"the grad-cam environment (default $FAITHLAB_GRADCAM_ENV or ~/.cache/faithlab-bench/"
                        f"grad-cam-{GRADCAM})")
    p.add_argument("--skip-peer", action="store_true", help="faithlab side and bare passes only (no grad-cam)")
    args = p.parse_args()
    if args.sweep:
        p.error("--sweep is not offered here: --batch-size N sets our batch size, --bare-sizes the bare sweep")
    if args.batch_size is not None and args.batch_size < 1:
        p.error(f"--batch-size must be a positive int, got {args.batch_size}")
    try:
        bare_sizes = sorted({int(s) for s in args.bare_sizes.split(",")})
    except ValueError:
        p.error(f"--bare-sizes must be comma-separated ints, got {args.bare_sizes!r}")
    if not bare_sizes or bare_sizes[0] < 1:
        p.error(f"--bare-sizes must be positive ints, got {args.bare_sizes!r}")
    names = [m for m in args.models.split(",") if m]
    if not names or any(m not in MODELS for m in names):
        p.error(f"--models must name some of {', '.join(MODELS)}, got {args.models!r}")
    load_start = loadavg()
    device = setup(args)
    if device.type == "cuda":   # full float32 on both sides (the peer script does the same)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    x1, _ = digits(args.n, SIZE, device)
    x = x1.expand(-1, CHANNELS, -1, -1).contiguous()
    nets = build_models(names, args.width, device)
    maps, preds, nudged, ranks = {}, {}, {}, {}
    for name, (m, _) in nets.items():
        maps[name], preds[name], nudged[name] = saliency_maps(m, x)
        ranks[name] = pixel_ranks(maps[name])
    n_pix = SIZE * SIZE
    removed = gradcam_removed(n_pix)                  # per percentile 10, …, 90: descending
    counts = sorted(removed)                          # our levels, ascending
    fractions = tuple(c / n_pix for c in counts)
    at = [counts.index(c) for c in removed]           # our level of grad-cam's percentile j
    default_counts = [round(f * n_pix) for f in fl.metrics.ROAD_FRACTIONS]
    differ = [f"{f:.1f}" for f, a, b in zip(fl.metrics.ROAD_FRACTIONS, counts, default_counts) if a != b]
    bs_text = "library default" if args.batch_size is None else args.batch_size
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} digits at {CHANNELS}x{SIZE}x{SIZE} "
          f"(one channel repeated); ROAD at grad-cam's percentiles {list(PERCENTILES)}; batch size: faithlab "
          f"{bs_text}; load {load_start}")
    print(f"pixels removed per level (ascending): grad-cam {counts}; faithlab at its default fractions 0.1…0.9 "
          f"(round(f·P)) {default_counts}"
          + (f" — not grad-cam's at f = {', '.join(differ)}" if differ else " — the same")
          + "; faithlab is run at fractions = grad-cam's counts / P, so the counts are equal")

    peer: dict | None = None
    scratch = contextlib.nullcontext() if args.skip_peer else tempfile.TemporaryDirectory(prefix="faithlab-gradcam-")
    with scratch as work_dir:
        if args.skip_peer:
            print("peer: skipped (--skip-peer): no agreement check with grad-cam, faithlab and bare passes only")
        else:
            python = ensure_peer_env(args.peer_env or default_peer_env())
            work = Path(work_dir)
            torch.save(x.cpu().contiguous(), work / "x.pt")
            for name, (m, _) in nets.items():
                torch.save({k: v.cpu() for k, v in m.state_dict().items()}, work / f"{name}.state.pt")
                torch.save(rank_cams(ranks[name]).cpu().contiguous(), work / f"{name}.cams.pt")
                torch.save(preds[name].cpu().contiguous(), work / f"{name}.targets.pt")
            cfg = {"device": device.type, "threads": args.threads, "repeats": args.repeats, "seed": args.seed,
                   "percentiles": list(PERCENTILES), "bare_sizes": bare_sizes,
                   "models": {name: spec for name, (_, spec) in nets.items()}}
            (work / "config.json").write_text(json.dumps(cfg))
            env = dict(os.environ)
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                env.setdefault(var, str(args.threads))
            proc = subprocess.run([str(python), str(PEER_SCRIPT), str(work)], capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"the grad-cam side failed:\n{proc.stderr[-4000:]}")
            peer = json.loads((work / "results.json").read_text())
            peer["tensors"] = {name: {k: torch.load(work / f"{name}.{k}.pt", weights_only=True)
                                      for k in ("kept", "imputed0", "diffs0", "road0", "road")}
                               for name in nets}
            v = peer["versions"]
            print(f"peer: grad-cam {v['grad-cam']}, torch {v['torch']}, torchvision {v['torchvision']}, numpy "
                  f"{v['numpy']}, scipy {v['scipy']}, opencv-python-headless {v['opencv-python-headless']} (threads "
                  f"{peer['threads']}, imputer default noise {peer['default_noise']}); ROADCombined(percentiles="
                  f"{list(PERCENTILES)}), ClassifierOutputSoftmaxTarget of our predicted classes")

        rows = []
        for name, (model, _) in nets.items():
            m = maps[name]
            keep = keep_masks(ranks[name], removed)                    # (2, F, B, H, W), grad-cam's order
            x_rep = x.repeat(2 * len(removed), 1, 1, 1)                 # the image of each (direction, level, b)
            keep_flat = keep.flatten(0, 2)
            print(f"\n== {name}: {sum(t.numel() for t in model.parameters()):,} parameters; saliency maps summed over "
                  f"channels, {nudged[name]} tied values of {m.numel():,} nudged one float step")

            def ours(net: nn.Module = model, noise: float = fl.perturb.imputation.NOISE, inputs=x, attributions=m,
                     generator: int = args.seed) -> dict[str, torch.Tensor]:
                return fl.metrics.road_details(net, inputs, attributions, fractions=fractions, noise=noise,
                                               generator=generator, batch_size=args.batch_size)

            # agreement -------------------------------------------------------------------------------------------
            if peer is not None:
                got = peer["tensors"][name]
                by_peer = peer["models"][name]["removed"]
                for d, direction in enumerate(("RemoveMostRelevantFirst", "RemoveLeastRelevantFirst")):
                    seen = [by_peer[f"{direction} {q}"] for q in PERCENTILES]
                    if seen != [[c] for c in removed]:
                        raise SystemExit(f"{name}: grad-cam's {direction} removed {seen}, expected {removed}")
                if not torch.equal(got["kept"], keep.cpu()):
                    raise SystemExit(f"{name}: grad-cam's masks differ from ours at "
                                     f"{int((got['kept'] != keep.cpu()).sum())} pixels")
                print(f"pixels removed per percentile {list(PERCENTILES)} (grad-cam's masks, every image, MoRF and "
                      f"LeRF): {removed}; faithlab at its level of each: {[counts[j] for j in at]}; masks equal "
                      f"pixel for pixel: True ({keep.numel():,} pixels)")
                # (a) the imputation alone, every (direction, level, image) of grad-cam's noise-free run
                theirs = got["imputed0"].flatten(0, 2)
                line = []
                for dtype in (torch.float32, torch.float64):
                    r = fl.perturb.noisy_linear_imputation(x_rep.to(dtype), keep_flat, details=True)
                    diff = (r["imputed"].cpu().double() - theirs.double()).abs().max().item()
                    if not bool(r["converged"].all()) or diff > IMPUTE_ATOL[dtype]:
                        raise SystemExit(f"{name}: imputation {dtype}: max |diff| {diff:.2e} > {IMPUTE_ATOL[dtype]} "
                                         f"or not converged")
                    line.append(f"{str(dtype).split('.')[1]} max |diff| {diff:.2e} (tolerance "
                                f"{IMPUTE_ATOL[dtype]:g}; CG iterations ≤ {int(r['iterations'].max())})")
                print(f"agreement (a) imputation, noise 0, {theirs.shape[0]:,} (image, mask) pairs: "
                      + "; ".join(line))
                # (b) the whole metric, noise 0
                line, means = [], {}
                for dtype in (torch.float32, torch.float64):
                    net = model if dtype == torch.float32 else copy.deepcopy(model).to(dtype)
                    mine = ours(net, 0.0, x.to(dtype), m.to(dtype))
                    curve = torch.stack([mine["morf"] - mine["clean"][:, None],
                                         mine["lerf"] - mine["clean"][:, None]])[:, :, at].permute(0, 2, 1)
                    d_level = (curve.cpu().double() - got["diffs0"].double()).abs().max().item()
                    d_road = (mine["road"].cpu().double() - got["road0"].double()).abs().max().item()
                    if max(d_level, d_road) > METRIC_ATOL[dtype]:
                        raise SystemExit(f"{name}: ROAD {dtype}, noise 0: max |diff| per level {d_level:.2e}, "
                                         f"ROAD {d_road:.2e} > {METRIC_ATOL[dtype]}")
                    kind = str(dtype).split(".")[1]
                    means[kind] = mine["road"].mean().item()
                    line.append(f"{kind} max |diff| per level (after − before) {d_level:.2e}, ROAD {d_road:.2e} "
                                f"(tolerance {METRIC_ATOL[dtype]:g})")
                print("agreement (b) ROAD, noise 0: " + "; ".join(line) + f"; mean ROAD grad-cam "
                      f"{got['road0'].mean().item():+.4e}, faithlab {means['float32']:+.4e}")
                noisy = ours()["road"].cpu()
                other = ours(generator=args.seed + 1)["road"].cpu()
                gap = (noisy - got["road"]).abs()
                print(f"noise 0.01 on both sides: mean |ROAD faithlab − grad-cam| {gap.mean():.2e} (max "
                      f"{gap.max():.2e}); between two faithlab seeds {(noisy - other).abs().mean():.2e}; mean ROAD "
                      f"grad-cam {got['road'].mean():+.4e}, faithlab {noisy.mean():+.4e}")

            # timing ----------------------------------------------------------------------------------------------
            rec = Recorder(model).eval()
            ours(rec)   # a first call may probe for "auto": count the call the timing repeats
            rec.seen.clear()
            ours(rec)
            calls = rec.seen
            inputs = torch.cat(calls)
            sizes = [c.shape[0] for c in calls]
            noise = fl.perturb.imputation.NOISE
            levels = list(zip(x_rep.split(args.n), keep_flat.split(args.n)))   # one (direction, level) per call

            def impute() -> None:   # batched over the images, one call per direction and level
                for xs, ks in levels:
                    fl.perturb.noisy_linear_imputation(xs, ks, noise=noise)

            fns = {"faithlab": lambda: ours(), "bare as sent": lambda: replay(model, calls), "impute": impute}
            fns |= {f"bare {bs}": (lambda bs=bs: batched_forward(model, inputs, bs)) for bs in bare_sizes}
            t, _ = timed(fns, device, args.repeats)
            best_bs = min(bare_sizes, key=lambda bs: t[f"bare {bs}"])
            side = {"inputs": inputs.shape[0], "largest call": max(sizes), "t": t["faithlab"],
                    "bare as sent": t["bare as sent"], "best bare": t[f"bare {best_bs}"], "best bs": best_bs,
                    "impute": t["impute"]}
            sides = {"faithlab": side}
            if peer is not None:
                q = peer["models"][name]
                sides["grad-cam"] = {"inputs": q["inputs"], "largest call": max(q["call_sizes"]),
                                     "t": q["times"]["gradcam"], "bare as sent": q["times"]["bare as sent"],
                                     "best bare": q["times"][f"bare {q['best_bare_size']}"],
                                     "best bs": q["best_bare_size"], "impute": q["times"]["impute"]}
            for who, s in sides.items():
                print(f"{who:<9}: {s['inputs']:,} model inputs (largest call {s['largest call']}); "
                      f"{s['t'] * 1e3:9.1f} ms ({s['t'] / args.n * 1e3:.1f} ms per image); bare as sent "
                      f"{s['bare as sent'] * 1e3:9.1f} ms, best bare {s['best bare'] * 1e3:9.1f} ms (batch "
                      f"{s['best bs']}); ratio t_bare/t_{who}: as sent {s['bare as sent'] / s['t']:.3f}, best bare "
                      f"{s['best bare'] / s['t']:.3f}; imputation alone ({keep_flat.shape[0]:,} images) "
                      f"{s['impute'] * 1e3:.1f} ms")
            speed = None
            if peer is not None:
                f, c = sides["faithlab"], sides["grad-cam"]
                speed = (c["t"] / f["t"], c["impute"] / f["impute"])
                print(f"faithlab speed-up over grad-cam (ROADCombined): t_gradcam/t_faithlab {speed[0]:.2f} "
                      f"({c['t'] / args.n * 1e3:.1f} / {f['t'] / args.n * 1e3:.1f} ms per image); imputation alone "
                      f"t_gradcam/t_faithlab {speed[1]:.2f} ({c['impute'] / len(levels) / args.n * 1e3:.1f} / "
                      f"{f['impute'] / len(levels) / args.n * 1e3:.1f} ms per imputed image)")
            rows.append((name, sides, speed))

    load_end = loadavg()
    today = datetime.date.today().isoformat()
    where = f"{device.type.upper()}, {args.threads} thread(s), load {load_start} → {load_end}"
    print(f"\nMarkdown rows for benchmarks/RESULTS.md ({args.n} images, ROAD at 9 levels, MoRF and LeRF; batch size "
          f"faithlab {bs_text}):\n")
    print("| date | machine | model | inputs faithlab / grad-cam | t faithlab / grad-cam (ms) | per image (ms) | "
          "ratio faithlab (as sent / best bare) | ratio grad-cam (as sent / best bare) | faithlab speed-up | "
          "imputation alone faithlab / grad-cam (ms) | imputation speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, sides, speed in rows:
        f, c = sides["faithlab"], sides.get("grad-cam")
        ratio = lambda s: f"{s['bare as sent'] / s['t']:.3f} / {s['best bare'] / s['t']:.3f}"   # noqa: E731
        print(f"| {today} | {where} | {name} | {f['inputs']:,} / {c['inputs']:,} | {f['t'] * 1e3:.0f} / "
              f"{c['t'] * 1e3:.0f} | {f['t'] / args.n * 1e3:.1f} / {c['t'] / args.n * 1e3:.1f} | {ratio(f)} | "
              f"{ratio(c)} | {speed[0]:.2f} | {f['impute'] * 1e3:.0f} / {c['impute'] * 1e3:.0f} | {speed[1]:.2f} |"
              if c else
              f"| {today} | {where} | {name} | {f['inputs']:,} / - | {f['t'] * 1e3:.0f} / - | "
              f"{f['t'] / args.n * 1e3:.1f} / - | {ratio(f)} | - | - | {f['impute'] * 1e3:.0f} / - | - |")


if __name__ == "__main__":
    main()

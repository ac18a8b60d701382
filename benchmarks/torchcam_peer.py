"""faithlab against its peer TorchCAM 0.5: the same RISE deletion and insertion curves, point for point, then the time
each takes against bare forward passes over the very inputs it sends.

TorchCAM is not a dependency of the project: this script makes (once) a throw-away virtual environment with uv
outside the repository (``--peer-env``, default ``$FAITHLAB_TORCHCAM_ENV`` or ``~/.cache/faithlab-bench/torchcam-0.5``;
not ``$FAITHLAB_PEER_ENV``, which names the Quantus peer's environment) holding ``torchcam==0.5.0`` and the project's
exact torch and torchvision versions, and runs ``benchmarks/_torchcam_side.py`` with that environment's python. The
two sides exchange plain tensors (``torch.save`` / ``torch.load(weights_only=True)``: inputs, maps, state dicts,
curves) and one JSON file each way, no pickled objects.

Workload (issue 36): B = ``--n`` scikit-learn digits upsampled to 64×64 and repeated over 3 channels (3×64×64, 4,096
pixel positions), two models in eval mode with random init (speed and agreement do not depend on training):
torchvision's ResNet-18 (``num_classes=10``) and the small CNN ``fl.models.build("small_cnn", in_channels=3,
n_classes=10, width=16)``. Maps: saliency (``fl.explainers.explain(method="saliency")``, |∂logit/∂x| of the predicted
class) summed over the channels → ``(B, 1, 64, 64)``, with exact ties broken as the Quantus peer does (a value not
below the one before it in the map's descending order is set one float32 step below it; the count is printed) so
that no two positions of a map tie. TorchCAM gets the same maps through a stub CAM extractor (in the side script)
that hands them over at the input resolution, so its bilinear resize is the identity (checked exactly) and both
sides rank the same values; only the metric is timed.

TorchCAM 0.5's ``DeletionInsertionMetric(extractor, partial(torch.softmax, dim=-1), steps=20, baseline=None,
batch_size=32)``: positions ranked by descending CAM (stable argsort), deletion and insertion at the counts
0, s, 2s, … below P and P, s = ⌈P/steps⌉ (:func:`torchcam_counts`), zero baseline, the softmax probability of the
predicted class, AUC = ``torch.trapezoid(curve, counts / P)``. Ours: ``fl.perturb.deletion_insertion(model, x, maps,
counts / P, order="morf", reduce="sum", reference="zero", output="prob", target=None)`` (MoRF by the map's own value,
ties by lower index = a stable descending sort), with the library's default batch size unless ``--batch-size`` is
given. TorchCAM's ``update`` keeps only sums of AUCs, so the side script wraps the metric's own ``_compute_curves``
(calling the original and keeping what it returns) to read the per-sample curves; the per-sample AUCs are TorchCAM's
own expression applied to them, and ``summary()`` is checked to equal their mean.

Agreement comes first, per model: TorchCAM's classes against our prediction, every point of both curves and both
AUCs (``torch.testing.assert_close`` with rtol = atol = 0; where that fails, float32 tolerance, and the run fails
beyond it); the max |diff| is printed. Then the times, medians of ``--repeats`` interleaved repeats after a warm-up:
our ``deletion_insertion`` call and TorchCAM's ``reset(); update(x)`` on the same batch, each with the number of
model inputs it sends (a recording wrapper around the model; TorchCAM's clean forward with autograd on counts), bare
forward passes over the very inputs that side sent, in its own environment, replayed in the very calls it made ("as
sent") and at each of ``--bare-sizes`` (the best of which is "best bare"). Ratios t_bare / t_metric (1.0 is the
limit); faithlab's speed-up t_torchcam / t_faithlab raw and in units of each side's best bare time per input (which
cancels a change of machine load between the two environments' runs, minutes apart, without hiding a difference in
the number of inputs sent). Markdown rows for benchmarks/RESULTS.md are printed last, with the machine's load.

    python benchmarks/torchcam_peer.py [--device cpu|cuda] [--n 64] [--steps 20] [--batch-size N] [--repeats 5]
                                       [--threads 1] [--bare-sizes 16,32,64,128,256] [--width 16]
                                       [--models resnet18,small_cnn] [--peer-env PATH] [--skip-peer]

On CUDA both sides run with TF32 off (full float32) and every call is synchronised; not tried on a GPU yet.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torchvision
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer_common import Recorder, ensure_env, env_ready, replay  # noqa: E402
from _timing import batched_forward, digits, parser, setup, timed  # noqa: E402
from quantus_peer import untied  # noqa: E402

import faithlab as fl  # noqa: E402

PEER_SCRIPT = Path(__file__).resolve().with_name("_torchcam_side.py")
READY = ".faithlab-torchcam-ready"   # written once the peer environment imports torchcam, torch and torchvision
SIZE, CHANNELS = 64, 3               # the 3×64×64 images: 4,096 pixel positions
MODELS = ("resnet18", "small_cnn")
PACKAGES = ("torchcam", "torch", "torchvision")


def default_peer_env() -> Path:
    return Path(os.environ.get("FAITHLAB_TORCHCAM_ENV") or Path.home() / ".cache" / "faithlab-bench" / "torchcam-0.5")


def wanted_versions() -> dict[str, str]:
    """The peer environment's pins: TorchCAM 0.5.0 and this environment's exact torch and torchvision."""
    return {"torchcam": "0.5.0", "torch": importlib.metadata.version("torch"),
            "torchvision": importlib.metadata.version("torchvision")}


def peer_env_ready(env: Path) -> bool:
    """Whether ``env`` was made by :func:`ensure_peer_env` with today's pins (a torch upgrade makes it stale)."""
    return env_ready(env, READY, wanted_versions())


def ensure_peer_env(env: Path) -> Path:
    """The peer environment's python, (re)making the environment with uv first if it is missing or stale (printed;
    ``_peer_common.ensure_env``)."""
    return ensure_env(env, ready=READY, pins=wanted_versions(), imports='import torchcam, torch, torchvision', label='TorchCAM',
                      hint='')


# ------------------------------------------------------------------------------------------------- faithlab side
def torchcam_counts(n_positions: int, steps: int) -> list[int]:
    """TorchCAM 0.5's points of deletion and insertion: 0, s, 2s, … below ``n_positions`` (P), then P, with
    s = ⌈P/steps⌉ (``DeletionInsertionMetric._compute_curves``). At most ``steps`` + 1 points."""
    if not isinstance(n_positions, int) or isinstance(n_positions, bool) or n_positions < 1:
        raise ValueError(f"n_positions must be a positive int, got {n_positions!r}")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    step = -(-n_positions // steps)
    return [*range(0, n_positions, step), n_positions]


def torchcam_fractions(n_positions: int, steps: int) -> torch.Tensor:
    """:func:`torchcam_counts` / P as float64 fractions: ``round(f·P)`` gives back each count exactly, and their
    float32 rounding is TorchCAM's ``float32(count) / P`` (a float64 quotient rounded once more to float32 is the
    correctly rounded float32 quotient)."""
    return torch.tensor(torchcam_counts(n_positions, steps), dtype=torch.float64) / n_positions


def faithlab_deletion_insertion(model: nn.Module, x: torch.Tensor, maps: torch.Tensor, steps: int,
                                batch_size: int | str | None = None) -> dict[str, torch.Tensor]:
    """Deletion and insertion as TorchCAM 0.5 computes them, with ``fl.perturb.deletion_insertion``: positions by
    descending map value (ties by lower index), zero baseline, softmax probability of the predicted class, TorchCAM's
    points. x ``(B, C, H, W)``; maps ``(B, 1, H, W)`` or ``(B, H, W)``, one score per pixel position. batch_size None
    leaves the library's default (it is not passed); an int or ``"auto"`` is passed on. Returns the dict of
    ``deletion_insertion``."""
    if x.ndim != 4:
        raise ValueError(f"x must be images (B, C, H, W), got shape {tuple(x.shape)}")
    kw = {} if batch_size is None else {"batch_size": batch_size}
    fractions = torchcam_fractions(x.shape[2] * x.shape[3], steps)
    return fl.perturb.deletion_insertion(model, x, maps, fractions, order="morf", reduce="sum", reference="zero",
                                         output="prob", target=None, **kw)


def build_models(names: list[str], width: int, device: torch.device) -> dict[str, tuple[nn.Module, dict]]:
    """The benchmark models (eval mode, random init from the seeded global RNG) and their peer-side specs."""
    out = {}
    for name in names:
        if name == "resnet18":
            model = torchvision.models.resnet18(num_classes=10)
            spec = {"arch": "resnet18", "num_classes": 10}
        elif name == "small_cnn":
            model = fl.models.build("small_cnn", in_channels=CHANNELS, n_classes=10, width=width)
            spec = {"arch": "small_cnn", "in_channels": CHANNELS, "n_classes": 10, "width": width}
        else:
            raise ValueError(f"models: unknown model {name!r}; choose from {', '.join(MODELS)}")
        out[name] = (model.to(device).eval(), spec)
    return out


def saliency_maps(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Saliency of the predicted class summed over channels, ties broken → maps ``(B, 1, H, W)``, the predicted
    classes ``(B,)`` and the number of values nudged."""
    with torch.no_grad():
        pred = torch.cat([model(chunk).argmax(dim=1) for chunk in x.split(64)])
    maps = fl.explainers.explain(model, x, pred, method="saliency").sum(dim=1, keepdim=True)
    maps, nudged = untied(maps)
    return maps, pred, nudged


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main() -> None:
    p = parser(__doc__, n=64, batch_size=32, repeats=5)
    p.set_defaults(batch_size=None, threads=1)
    p.add_argument("--steps", type=int, default=20, help="TorchCAM's steps (its default 20: 21 points)")
    p.add_argument("--bare-sizes", default="16,32,64,128,256",
                   help="batch sizes of the bare passes whose best gives 'best bare' (comma-separated)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width")
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--peer-env", type=Path, default=None,
                   help="the TorchCAM environment (default $FAITHLAB_TORCHCAM_ENV or ~/.cache/faithlab-bench/"
                        "torchcam-0.5)")
    p.add_argument("--skip-peer", action="store_true", help="faithlab side and bare passes only (no TorchCAM)")
    p.add_argument("--auto", action="store_true",
                   help="faithlab at batch_size='auto' (TorchCAM at its default 32); not with --batch-size")
    args = p.parse_args()
    if args.auto and args.batch_size is not None:
        p.error("--auto and --batch-size both set faithlab's batch size: give one")
    if args.sweep:
        p.error("--sweep is not offered here: --batch-size N times both sides at N, --bare-sizes sets the bare sweep")
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
    maps, preds, nudged = {}, {}, {}
    for name, (m, _) in nets.items():
        maps[name], preds[name], nudged[name] = saliency_maps(m, x)
    counts = torchcam_counts(SIZE * SIZE, args.steps)
    if args.auto:
        args.batch_size = "auto"   # ours only: TorchCAM's side stays at its default
    ours_bs = "library default" if args.batch_size is None else args.batch_size
    theirs_bs = 32 if args.batch_size in (None, "auto") else args.batch_size
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} digits at {CHANNELS}x{SIZE}x{SIZE} "
          f"(one channel repeated); {len(counts)} points per curve (steps={args.steps}, counts {counts[:3]}…"
          f"{counts[-2:]}); batch size: faithlab {ours_bs}, TorchCAM {theirs_bs}; load {load_start}")

    peer: dict | None = None
    scratch = contextlib.nullcontext() if args.skip_peer else tempfile.TemporaryDirectory(prefix="faithlab-torchcam-")
    with scratch as work_dir:
        if args.skip_peer:
            print("peer: skipped (--skip-peer): no agreement check with TorchCAM, faithlab and bare passes only")
        else:
            python = ensure_peer_env(args.peer_env or default_peer_env())
            work = Path(work_dir)
            torch.save(x.cpu().contiguous(), work / "x.pt")
            for name, (m, _) in nets.items():
                torch.save({k: v.cpu() for k, v in m.state_dict().items()}, work / f"{name}.state.pt")
                torch.save(maps[name][:, 0].cpu().contiguous(), work / f"{name}.maps.pt")   # (B, H, W), as a CAM
            cfg = {"device": device.type, "threads": args.threads, "repeats": args.repeats, "steps": args.steps,
                   "batch_size": theirs_bs, "bare_sizes": bare_sizes,
                   "models": {name: spec for name, (_, spec) in nets.items()}}
            (work / "config.json").write_text(json.dumps(cfg))
            proc = subprocess.run([str(python), str(PEER_SCRIPT), str(work)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"the TorchCAM side failed:\n{proc.stderr[-4000:]}")
            peer = json.loads((work / "results.json").read_text())
            peer["tensors"] = {name: {k: torch.load(work / f"{name}.{k}.pt", weights_only=True)
                                      for k in ("fractions", "deletion", "insertion", "deletion_auc", "insertion_auc",
                                                "class_idx")}
                               for name in nets}
            v = peer["versions"]
            print(f"peer: TorchCAM {v['torchcam']}, torch {v['torch']}, torchvision {v['torchvision']} "
                  f"(threads {peer['threads']}); DeletionInsertionMetric(stub extractor, softmax, steps={args.steps}, "
                  f"baseline=None (zeros), batch_size={theirs_bs}); bilinear resize of the maps is the identity: "
                  f"{all(r['resize_identity'] for r in peer['models'].values())}")

        rows = []
        for name, (model, _) in nets.items():
            m = maps[name]
            print(f"\n== {name}: {sum(t.numel() for t in model.parameters()):,} parameters; saliency maps summed over "
                  f"channels, {nudged[name]} tied values of {m.numel():,} nudged one float step")

            def ours(net: nn.Module = model) -> dict[str, torch.Tensor]:
                return faithlab_deletion_insertion(net, x, m, args.steps, args.batch_size)

            # agreement -------------------------------------------------------------------------------------------
            if peer is not None:
                got, info = peer["tensors"][name], peer["models"][name]
                mine = ours()
                if not torch.equal(got["class_idx"], preds[name].cpu()):
                    raise SystemExit(f"{name}: TorchCAM's classes differ from our predictions on "
                                     f"{int((got['class_idx'] != preds[name].cpu()).sum())} samples")
                torch.testing.assert_close(mine["fractions"].float(), got["fractions"], rtol=0, atol=0)
                diffs, exact, differ = {}, True, 0
                for key in ("deletion", "insertion", "deletion_auc", "insertion_auc"):
                    a, b = mine[key].cpu(), got[key]
                    diffs[key] = (a - b).abs().max().item()
                    differ += int((a != b).sum()) if key in ("deletion", "insertion") else 0
                    try:
                        torch.testing.assert_close(a, b, rtol=0, atol=0)
                    except AssertionError:
                        exact = False
                        torch.testing.assert_close(a, b)   # float32 noise at most, or the run fails here
                n_b = mine["deletion_auc"].numel()
                for key in ("deletion_auc", "insertion_auc"):   # summary() is the mean of the per-sample AUCs
                    if info["summary"][key] != got[key].sum().item() / n_b:
                        raise SystemExit(f"{name}: TorchCAM's summary {key} {info['summary'][key]} is not the mean "
                                         f"of the per-sample AUCs read from its curves")
                print(f"agreement: TorchCAM's classes = our predictions; fractions equal; curves and AUCs "
                      f"{'identical (rtol=0, atol=0)' if exact else 'equal within float32 tolerance, not identical'}"
                      f": True ({differ} of {2 * mine['deletion'].numel():,} points differ; max |diff| "
                      + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items())
                      + f"); mean AUCs: deletion {info['summary']['deletion_auc']:.6f}, "
                      f"insertion {info['summary']['insertion_auc']:.6f} (TorchCAM summary() = ours)")

            # timing ----------------------------------------------------------------------------------------------
            rec = Recorder(model).eval()
            ours(rec)   # a first call may probe for "auto": count the call the timing repeats
            rec.seen.clear()
            ours(rec)
            calls = rec.seen
            inputs = torch.cat(calls)
            sizes = [c.shape[0] for c in calls]
            fns = {"faithlab": lambda: ours(), "bare as sent": lambda: replay(model, calls)}
            fns |= {f"bare {bs}": (lambda bs=bs: batched_forward(model, inputs, bs)) for bs in bare_sizes}
            t, _ = timed(fns, device, args.repeats)
            best_bs = min(bare_sizes, key=lambda bs: t[f"bare {bs}"])
            side = {"inputs": inputs.shape[0], "largest call": max(sizes), "t": t["faithlab"],
                    "bare as sent": t["bare as sent"], "best bare": t[f"bare {best_bs}"], "best bs": best_bs}
            sides = {"faithlab": side}
            if peer is not None:
                q = peer["models"][name]
                sides["TorchCAM"] = {"inputs": q["inputs"], "largest call": max(q["call_sizes"]),
                                     "t": q["times"]["torchcam"], "bare as sent": q["times"]["bare as sent"],
                                     "best bare": q["times"][f"bare {q['best_bare_size']}"],
                                     "best bs": q["best_bare_size"]}
            for who, s in sides.items():
                print(f"{who:<9}: {s['inputs']:,} model inputs (largest call {s['largest call']}); "
                      f"{s['t'] * 1e3:9.1f} ms; bare as sent {s['bare as sent'] * 1e3:9.1f} ms, best bare "
                      f"{s['best bare'] * 1e3:9.1f} ms (batch {s['best bs']}); ratio t_bare/t_{who.lower()}: as sent "
                      f"{s['bare as sent'] / s['t']:.3f}, best bare {s['best bare'] / s['t']:.3f}")
            speed = None
            if peer is not None:
                f, c = sides["faithlab"], sides["TorchCAM"]
                per_input = lambda s: s["best bare"] / s["inputs"]   # noqa: E731  this environment's cost of one input
                speed = (c["t"] / f["t"], (c["t"] / per_input(c)) / (f["t"] / per_input(f)))
                print(f"faithlab speed-up over TorchCAM (deletion + insertion): t_torchcam/t_faithlab {speed[0]:.2f}; "
                      f"in units of each environment's best bare time per input {speed[1]:.2f}")
            rows.append((name, sides, speed))

    load_end = loadavg()
    today = datetime.date.today().isoformat()
    where = f"{device.type.upper()}, {args.threads} thread(s), load {load_start} → {load_end}"
    print(f"\nMarkdown rows for benchmarks/RESULTS.md ({args.n} images, steps {args.steps}; batch size faithlab "
          f"{ours_bs}, TorchCAM {theirs_bs}):\n")
    print("| date | machine | model | inputs faithlab / TorchCAM | t faithlab / TorchCAM (ms) | ratio faithlab "
          "(as sent / best bare) | ratio TorchCAM (as sent / best bare) | faithlab speed-up (raw / in bare units) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, sides, speed in rows:
        f, c = sides["faithlab"], sides.get("TorchCAM")
        ratio = lambda s: f"{s['bare as sent'] / s['t']:.3f} / {s['best bare'] / s['t']:.3f}"   # noqa: E731
        print(f"| {today} | {where} | {name} | {f['inputs']:,} / {c['inputs']:,} | {f['t'] * 1e3:.0f} / "
              f"{c['t'] * 1e3:.0f} | {ratio(f)} | {ratio(c)} | {speed[0]:.2f} / {speed[1]:.2f} |" if c else
              f"| {today} | {where} | {name} | {f['inputs']:,} / - | {f['t'] * 1e3:.0f} / - | {ratio(f)} | - | - |")


if __name__ == "__main__":
    main()

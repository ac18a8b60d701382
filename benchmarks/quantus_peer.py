"""faithlab against its peer Quantus 0.6: the same pixel-flipping curves and faithfulness correlations, value for
value, then the time each takes against bare batched forward passes at the same batch size.

Quantus 0.6 pins numpy < 2.4, so it cannot join the project's lock: this script makes (once) a throw-away virtual
environment with uv outside the repository (``--peer-env``, default ``$FAITHLAB_PEER_ENV`` or
``~/.cache/faithlab-bench/quantus-0.6``) holding ``quantus==0.6.*``, ``numpy<2.4`` and the project's exact torch
version, and runs ``benchmarks/_quantus_side.py`` with that environment's python. The two sides exchange plain
tensors (``torch.save`` / ``torch.load(weights_only=True)``: inputs, labels, attributions, state dicts, curves) and
one JSON file, no pickled objects.

Two models, each on B = ``--n`` scikit-learn digits at 1×32×32 (1,024 pixels = Quantus' features, one channel, so
Quantus' per-element features and our pixel units coincide) with their label as target: (a) the small CNN
``fl.models.build("small_cnn")`` and (b) a tiny linear model (Flatten + Linear), both random init (speed and
agreement do not depend on training). Attributions: saliency maps (``fl.explainers.explain(method="saliency")``)
with their exact ties broken (a value equal to the one before it in the map's descending order is set one float32
step below it; a few values per thousand), so that no two pixels of a map tie: Quantus orders by ``np.argsort``,
which is not stable, we break ties by lower pixel index, so a tie straddling a step would differ by construction.

Pixel flipping (Bach et al. 2015). Quantus' ``PixelFlipping(features_in_step=s)`` sets the s most relevant
remaining pixels to the baseline at each step and reads p(y) after each step (no clean point). Ours: MoRF
cumulative removal, ``fl.perturb.removal_curve(order="morf", reduce="sum", reference="zero", output="prob")`` at the
fractions min(i·s, n)/n, i = 1…⌈n/s⌉. The curves must agree value for value (``torch.testing.assert_close``).

Faithfulness correlation (Bhatt et al. 2020) = our μF (``fl.metrics`` ``mu_fidelity``): for each of ``--subsets``
random subsets of ``--subset-size`` pixels, the Pearson correlation between the attribution sum over the subset
and the drop p(y|x) − p(y|x with the subset at the baseline). Compared value for value: Quantus draws its subsets
from numpy's global RNG (seeded in the peer script) and the peer script records them; our ``mu_fidelity_details``
then runs with its own subset draw (``fl.perturb.exact_subset``) replaced by Quantus' recorded subsets, everything
else (clean pass, removal, sums, drops, correlation) ours. Sums, drops and the per-sample scores must agree.

Quantus' defaults that differ from ours are switched to ours and said in the output: ``normalise=False`` (Quantus
divides the attributions by their largest |value| over the batch by default), ``abs=False`` (its default),
``perturb_baseline=0.0`` (default "black" = the per-sample minimum of x), ``softmax=True`` (its default).

Timing, at the same ``--batch-size`` on both sides (Quantus' ``batch_size`` = instances per forward call; ours = at
most that many inputs per call): faithlab's curve and μF (with its own subsets) with bare forward passes over the
very inputs it sends, in this environment; Quantus' metrics with bare forward passes over the very inputs it sends,
in the peer environment (same torch version). ratio = t_bare / t_metric, each against the bare passes of its own
environment (1.0 is the limit); "faithlab speed-up" = t_quantus / t_faithlab, and the same with each time in units
of its own environment's bare passes (= ratio_faithlab / ratio_quantus; the two sides run minutes apart, so on a
shared machine this one is the steadier). ``--sweep`` repeats the timing at batch sizes 64…4096 clipped to B
(Quantus never sends more than B inputs per call). On CUDA both sides run with TF32 off (full float32, so that
the curves can agree to float32 precision) and the peak GPU memory of each call is printed.

    python benchmarks/quantus_peer.py [--device cpu|cuda] [--n 64] [--batch-size 64] [--features-in-step 16]
                                      [--subsets 100] [--subset-size 224] [--width 16] [--repeats 5] [--threads N]
                                      [--peer-env PATH] [--skip-peer] [--sweep]
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import (batched_forward, captured_inputs, digits, parser, print_sweep, report_memory, setup,  # noqa: E402
                     sweep_sizes, timed)

import faithlab as fl  # noqa: E402

PEER_SCRIPT = Path(__file__).resolve().with_name("_quantus_side.py")
READY = ".faithlab-ready"   # written once the peer environment imports quantus, numpy and torch
SIZE = 32                   # digits at 1×32×32: 1,024 features
RM = importlib.import_module("faithlab.metrics.papers.reco_mege.baselines")


def default_peer_env() -> Path:
    return Path(os.environ.get("FAITHLAB_PEER_ENV") or Path.home() / ".cache" / "faithlab-bench" / "quantus-0.6")


def peer_env_ready(env: Path) -> bool:
    return (env / "bin" / "python").exists() and (env / READY).exists()


def ensure_peer_env(env: Path) -> Path:
    """The peer environment's python, creating the environment with uv first if it is not there (printed)."""
    python = env / "bin" / "python"
    if peer_env_ready(env):
        print(f"peer environment: {env} (cached; {(env / READY).read_text().strip()})")
        return python
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if not Path(uv).exists():
        raise SystemExit("uv not found (needed to make the Quantus environment): install uv or pass --skip-peer")
    torch_version = importlib.metadata.version("torch")
    commands = [[uv, "venv", "--python", sys.executable, str(env)],
                [uv, "pip", "install", "--python", str(python), "quantus==0.6.*", "numpy<2.4",
                 f"torch=={torch_version}"]]
    for cmd in commands:
        print("peer environment:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    probe = subprocess.run([str(python), "-c", "import quantus, numpy, torch; print(f'quantus {quantus.__version__}, "
                            "numpy {numpy.__version__}, torch {torch.__version__}')"],
                           check=True, capture_output=True, text=True)
    (env / READY).write_text(probe.stdout)
    print(f"peer environment ready: {probe.stdout.strip()}")
    return python


# ------------------------------------------------------------------------------------------------- faithlab side
def step_fractions(n_features: int, features_in_step: int) -> torch.Tensor:
    """The fractions removed after each pixel-flipping step: min(i·s, n)/n, i = 1…⌈n/s⌉ (float64)."""
    steps = math.ceil(n_features / features_in_step)
    return torch.tensor([min((i + 1) * features_in_step, n_features) / n_features for i in range(steps)],
                        dtype=torch.float64)


def faithlab_pixel_flipping(model: nn.Module, x: torch.Tensor, attributions: torch.Tensor, y: torch.Tensor,
                            features_in_step: int, batch_size: int) -> torch.Tensor:
    """Pixel flipping with faithlab: p(y) after each step of ``features_in_step`` most relevant pixels (signed
    attribution, ties by lower pixel index) set to 0, cumulatively → ``(B, ⌈n/s⌉)``. One channel only (then a pixel
    is one of Quantus' features)."""
    if x.ndim != 4 or x.shape[1] != 1:
        raise ValueError(f"pixel flipping here takes 1-channel images (B, 1, H, W), got {tuple(x.shape)}")
    fractions = step_fractions(x[0].numel(), features_in_step)
    return fl.perturb.removal_curve(model, x, attributions, fractions, order="morf", reduce="sum", reference="zero",
                                    output="prob", target=y, batch_size=batch_size)


def faithlab_mu_fidelity_on(masks: torch.Tensor, model: nn.Module, x: torch.Tensor, attributions: torch.Tensor,
                            y: torch.Tensor, batch_size: int) -> dict[str, torch.Tensor]:
    """Our ``mu_fidelity_details`` (zero reference, probability of y, Pearson) with its subset draw replaced by
    ``masks`` ``(B, S, n)`` bool, the same number of units in every subset: ``fl.perturb.exact_subset_sums`` is
    stood in for, for this call only, by a function handing out the rows of ``masks`` block by block and their
    sums of the unit scores (it checks that it is asked for exactly those subsets). Everything else is the library's
    code."""
    b, s, n = masks.shape
    count = int(masks[0, 0].sum())
    if not bool((masks.sum(-1) == count).all()):
        raise ValueError("every subset must hold the same number of units")
    done = [0]

    def stand_in(candidates: torch.Tensor, k, scores: torch.Tensor, *, generator,
                 n_samples=None) -> tuple[torch.Tensor, torch.Tensor]:
        rows = candidates.shape[0]
        if k != count or n_samples != s or candidates.shape[1] != n or done[0] + rows > b:
            raise RuntimeError(f"mu_fidelity_details asked for other subsets ({rows}x{n_samples} of {k}) than given")
        out = masks[done[0]:done[0] + rows].to(candidates.device)
        done[0] += rows
        return out, (out.to(scores.dtype) * scores[:, None, :]).sum(-1)

    with mock.patch.object(fl.perturb, "exact_subset_sums", stand_in):
        d = RM.mu_fidelity_details(model, x, attributions, target=y, n_subsets=s, subset_fraction=count / n,
                                   reference="zero", output="prob", batch_size=batch_size)
    if done[0] != b:
        raise RuntimeError(f"mu_fidelity_details used {done[0]} of the {b} rows of subsets: the stand-in missed")
    return d


def indices_to_masks(indices: torch.Tensor, n_features: int) -> torch.Tensor:
    """Quantus' subsets ``(B, S, k)`` flat feature indices → ``(B, S, n)`` bool masks."""
    masks = torch.zeros(*indices.shape[:2], n_features, dtype=torch.bool)
    return masks.scatter_(-1, indices, True)


def untied(a: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``a`` with exact ties inside a map broken: along the map's descending order (ties by lower index, as ours),
    a value not below the previous one is set one float step below it. Returns the map and the number of values
    changed (a few per thousand saliency values; each by a relative 1e-7 or so)."""
    flat = a.detach().flatten(1).cpu().numpy().copy()
    changed = 0
    for row in flat:
        order = np.argsort(-row, kind="stable")
        v = row[order]
        for j in range(1, v.size):
            if v[j] >= v[j - 1]:
                v[j] = np.nextafter(v[j - 1], -np.inf)
                changed += 1
        row[order] = v
    out = torch.from_numpy(flat).view_as(a).to(a.device)
    assert all(np.unique(row).size == row.size for row in flat)
    return out, changed


def speed_up(bare_ours: float, ours: float, bare_peer: float, peer: float) -> float:
    """(t_quantus / t_bare,peer) / (t_faithlab / t_bare,ours): the speed-up with each side's time measured in bare
    passes of its own environment, which cancels a change of machine load between the two runs."""
    return (peer / bare_peer) / (ours / bare_ours)


def report(what: str, count: int, bs: int, ours_name: str, theirs_name: str, bare_ours: float, ours: float,
           bare_peer: float | None, peer: float | None) -> None:
    """Print one metric's times at batch size ``bs``, its ratios and (with the peer) faithlab's speed-up."""
    print(f"{what}, {count} inputs, batch size {bs}:")
    print(f"  bare forward passes (this env)  : {bare_ours * 1e3:9.1f} ms")
    print(f"  faithlab {ours_name:<23}: {ours * 1e3:9.1f} ms   ratio t_bare/t_faithlab {bare_ours / ours:.3f}")
    if peer is not None:
        print(f"  bare forward passes (peer env)  : {bare_peer * 1e3:9.1f} ms")
        print(f"  Quantus {theirs_name:<24}: {peer * 1e3:9.1f} ms   ratio t_bare/t_quantus {bare_peer / peer:.3f}")
        print(f"  faithlab speed-up over Quantus  : t_quantus/t_faithlab {peer / ours:.2f}; in units of each "
              f"environment's bare passes {speed_up(bare_ours, ours, bare_peer, peer):.2f}")


def models(width: int, device: torch.device) -> dict[str, tuple[nn.Module, dict]]:
    """The two benchmark models and their peer-side specs."""
    cnn = fl.models.build("small_cnn", in_channels=1, n_classes=10, width=width).to(device).eval()
    linear = nn.Sequential(nn.Flatten(), nn.Linear(SIZE * SIZE, 10)).to(device).eval()
    return {"small_cnn": (cnn, {"arch": "small_cnn", "in_channels": 1, "n_classes": 10, "width": width}),
            "linear": (linear, {"arch": "linear", "features": SIZE * SIZE, "n_classes": 10})}


def main() -> None:
    p = parser(__doc__, n=64, batch_size=64, repeats=5)
    p.add_argument("--features-in-step", type=int, default=16,
                   help="pixels per pixel-flipping step (Quantus' default is 1: 1,024 steps; 16 keeps a CPU run short)")
    p.add_argument("--subsets", type=int, default=100, help="faithfulness-correlation subsets (Quantus' nr_runs)")
    p.add_argument("--subset-size", type=int, default=224, help="pixels per subset (Quantus' default 224)")
    p.add_argument("--width", type=int, default=16, help="small_cnn width")
    p.add_argument("--peer-env", type=Path, default=None,
                   help="the Quantus environment (default $FAITHLAB_PEER_ENV or ~/.cache/faithlab-bench/quantus-0.6)")
    p.add_argument("--skip-peer", action="store_true", help="faithlab side and bare passes only (no Quantus)")
    args = p.parse_args()
    device = setup(args)
    if device.type == "cuda":   # full float32 on both sides (the peer script does the same): TF32 convolutions
        torch.backends.cuda.matmul.allow_tf32 = False   # would round differently for different batch compositions
        torch.backends.cudnn.allow_tf32 = False
    n_features = SIZE * SIZE
    if n_features % args.features_in_step:
        p.error(f"--features-in-step must divide {n_features} (Quantus requires it)")
    bs = args.batch_size
    sizes = sweep_sizes(args.n) if args.sweep else [bs]
    if bs not in sizes:
        sizes = [bs, *sizes]
    x, y = digits(args.n, SIZE, device)
    nets = models(args.width, device)
    attributions, nudged = {}, {}
    for name, (m, _) in nets.items():
        attributions[name], nudged[name] = untied(fl.explainers.explain(m, x, y, method="saliency", batch_size=bs))
    steps = n_features // args.features_in_step
    print(f"device={device} threads={torch.get_num_threads()} B={args.n} image=1x{SIZE}x{SIZE} "
          f"batch_size={bs} pixel flipping: {steps} steps of {args.features_in_step} pixels; "
          f"faithfulness correlation: {args.subsets} subsets of {args.subset_size} pixels")

    peer: dict | None = None
    scratch = contextlib.nullcontext() if args.skip_peer else tempfile.TemporaryDirectory(prefix="faithlab-quantus-")
    with scratch as work_dir:
        if args.skip_peer:
            print("peer: skipped (--skip-peer): no agreement check with Quantus, faithlab and bare passes only")
        else:
            python = ensure_peer_env(args.peer_env or default_peer_env())
            work = Path(work_dir)
            torch.save(x.cpu().contiguous(), work / "x.pt")
            torch.save(y.cpu().contiguous(), work / "y.pt")
            for name, (m, _) in nets.items():
                torch.save({k: v.cpu() for k, v in m.state_dict().items()}, work / f"{name}.state.pt")
                torch.save(attributions[name].cpu().contiguous(), work / f"{name}.a.pt")
            cfg = {"device": device.type, "threads": args.threads, "repeats": args.repeats, "batch_sizes": sizes,
                   "seed": 0, "features_in_step": args.features_in_step, "nr_runs": args.subsets,
                   "subset_size": args.subset_size, "models": {name: spec for name, (_, spec) in nets.items()}}
            (work / "config.json").write_text(json.dumps(cfg))
            proc = subprocess.run([str(python), str(PEER_SCRIPT), str(work)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"the Quantus side failed:\n{proc.stderr[-4000:]}")
            peer = json.loads((work / "results.json").read_text())
            peer["tensors"] = {name: {k: torch.load(work / f"{name}.{k}.pt", weights_only=True)
                                      for k in ("pf_curve", "fc_indices", "fc_sums", "fc_deltas", "fc_scores")}
                               for name in nets}
            v = peer["versions"]
            print(f"peer: Quantus {v['quantus']}, numpy {v['numpy']}, torch {v['torch']} (threads {peer['threads']}); "
                  "Quantus options: abs=False, normalise=False (default True: divide by max |a| of the batch), "
                  "perturb_baseline=0.0 (default 'black' = per-sample min of x), softmax=True")

        for name, (model, _) in nets.items():
            a = attributions[name]
            print(f"\n== {name}: {sum(t.numel() for t in model.parameters())} parameters; saliency maps, "
                  f"{nudged[name]} tied values of {a.numel()} nudged one float step")

            def pf(net: nn.Module = model, size: int = bs) -> torch.Tensor:
                return faithlab_pixel_flipping(net, x, a, y, args.features_in_step, size)

            def mu(net: nn.Module = model, size: int = bs) -> torch.Tensor:
                return fl.metrics.mu_fidelity(net, x, a, target=y, n_subsets=args.subsets,
                                              subset_fraction=args.subset_size / n_features, generator=0,
                                              batch_size=size)

            # agreement -------------------------------------------------------------------------------------------
            if peer is not None:
                got = peer["tensors"][name]
                ours = pf().cpu()
                theirs = got["pf_curve"]
                torch.testing.assert_close(ours, theirs)
                print(f"pixel flipping: faithlab and Quantus curves agree value for value: True "
                      f"({ours.numel()} points, max |diff| {(ours - theirs).abs().max().item():.2e})")
                masks = indices_to_masks(got["fc_indices"], n_features)
                d = faithlab_mu_fidelity_on(masks.to(device), model, x, a, y, bs)
                torch.testing.assert_close(d["sums"].cpu(), got["fc_sums"], rtol=1e-5, atol=1e-9)
                torch.testing.assert_close(d["drops"].cpu(), got["fc_deltas"], rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(d["mu_f"].cpu(), got["fc_scores"], rtol=1e-4, atol=1e-5, equal_nan=True)
                print(f"faithfulness correlation on Quantus' own subsets: our mu_fidelity agrees value for value: "
                      f"True (sums, drops, scores; max |d mu| "
                      f"{(d['mu_f'].cpu() - got['fc_scores']).abs().nan_to_num().max().item():.2e}; "
                      f"mean mu: ours {d['mu_f'].nanmean().item():.4f}, "
                      f"Quantus {got['fc_scores'].nanmean().item():.4f})")

            # timing ----------------------------------------------------------------------------------------------
            pf_inputs = captured_inputs(lambda net: pf(net), model)
            mu_inputs = captured_inputs(lambda net: mu(net), model)
            rows: dict[str, dict[int, tuple]] = {"faithlab pixel flipping": {}, "faithlab mu_fidelity": {},
                                                 "Quantus PixelFlipping": {}, "Quantus FaithfulnessCorrelation": {}}
            for size in sizes:
                t, m = timed({"bare_pf": lambda: batched_forward(model, pf_inputs, size),
                              "pf": lambda: pf(model, size),
                              "bare_fc": lambda: batched_forward(model, mu_inputs, size),
                              "fc": lambda: mu(model, size)}, device, args.repeats)
                rows["faithlab pixel flipping"][size] = (t["bare_pf"], t["pf"], m["bare_pf"], m["pf"])
                rows["faithlab mu_fidelity"][size] = (t["bare_fc"], t["fc"], m["bare_fc"], m["fc"])
                if size == bs:
                    ours_t, ours_m = t, m
                if peer is not None:
                    q = peer["models"][name]["by_batch_size"][str(size)]
                    qt, qm = q["times"], q["peaks"]
                    for key, part in (("pf", "Quantus PixelFlipping"), ("fc", "Quantus FaithfulnessCorrelation")):
                        rows[part][size] = (qt[f"bare_{key}"], qt[f"quantus_{key}"], qm[f"bare_{key}"],
                                            qm[f"quantus_{key}"])
            qt = peer["models"][name]["by_batch_size"][str(bs)]["times"] if peer is not None else None
            for key, what, ours_name, theirs_name, count in (
                    ("pf", "pixel flipping", "removal_curve", "PixelFlipping", pf_inputs.shape[0]),
                    ("fc", "faithfulness correlation / mu_fidelity", "mu_fidelity", "FaithfulnessCorrelation",
                     mu_inputs.shape[0])):
                report(what, count, bs, ours_name, theirs_name, ours_t[f"bare_{key}"], ours_t[key],
                       qt and qt[f"bare_{key}"], qt and qt[f"quantus_{key}"])
            report_memory(ours_m, "faithlab side")
            if peer is not None:
                report_memory(peer["models"][name]["by_batch_size"][str(bs)]["peaks"], "Quantus side")
            if args.sweep:
                n_in = {"faithlab pixel flipping": pf_inputs.shape[0], "faithlab mu_fidelity": mu_inputs.shape[0]}
                if peer is not None:
                    n_in |= {"Quantus PixelFlipping": peer["models"][name]["inputs"]["pf"],
                             "Quantus FaithfulnessCorrelation": peer["models"][name]["inputs"]["fc"]}
                for part, by_size in rows.items():
                    if by_size:
                        print_sweep(f"{name} {part}", n_in[part], by_size)


if __name__ == "__main__":
    main()

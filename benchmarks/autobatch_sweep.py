"""``batch_size="auto"`` and the library's default against every fixed batch size.

The issue's rule: "auto" may become the library default once it never loses more than 5 % against the best fixed
batch size, over a small CNN, ResNet-18 and a ViT, at 32, 64 and 224 px, with 1 and 2 CPU threads (and on a GPU).

Cells: model × image size × threads (``--models``, ``--sizes``, ``--threads`` take lists, so a run can be split).
By default the three models at 32, 64 and 224 px and the study's four stand-ins at their own sizes (``STAND_INS``),
each at 1 and 2 threads: the 26 cells issue 52 names; ``HELD_OUT`` and ``HELD_OUT_2`` are models the CPU default
was not chosen on.
Models, random init (speed does not depend on training), eval mode, 10 classes, 3 channels:
``fl.models.build("small_cnn")``, ``torchvision.models.resnet18(num_classes=10)`` and ``fl.models.build("vit")``
with ``image_size`` = the cell's size and a patch size that divides it (``PATCH``: 4 at 32 px, 8 at 64 px, 16 at
224 px; other sizes: the largest of 16, 8, 4, 2 leaving at least 4×4 patches). Inputs: B seeded standard-normal
images, seeded standard-normal maps, random targets (given, so the curve runs no clean pass).

The workload of one cell: one deletion-style metric call, ``fl.perturb.removal_curve(model, x, a, fractions,
order="morf", reference="zero", output="prob", target=y, batch_size=bs)`` with F = ``--fractions`` (21) fractions,
i.e. B·F forward inputs. B is taken per (model, size) from ``B_TABLE`` (sized from rough per-input forward costs
on a 2-core VM at one thread so that one call takes a few seconds at its best batch size; untabled sizes scale the
32 px entry by the pixel count) and multiplied by ``--scale`` (e.g. ``--scale 16`` on a GPU). Before any timing
the curve is checked against bare forward passes (``_timing.morf_workload``) and the "auto" curve against the
fixed one.

Timed, round-robin with medians of ``--repeats`` (``_timing.timed``): the curve at every fixed batch size of the
ladder (8, 16, …, 1024, clipped to B·F; ``--ladder`` replaces it); bare forward passes (``model(chunk)`` under
``no_grad``, a fresh copy of each chunk) over the very B·F inputs at every ladder size; and the curve with
``batch_size="auto"`` twice: "first", after ``autobatch.clear_cache()`` (the probe included, as in the first call
of a process), and "cached", with the cache as ``SETTLE`` (4) untimed calls left it (restored before every timed
call: what a process that has run this call a few times knows). After the
timing, "auto bs" is the batch size that carried the most inputs in one more cached call (recorded with a forward
pre-hook: what the engine really ran, whatever the probe's rules; the CSV lists every size × count, e.g. separate
endpoint chunks), and the CSV also gives
``autobatch.resolve("auto", model, x, B·F)``.

Per cell: the best fixed size and its time, auto's size, auto's first and cached times and their ratios to the best
fixed time (flagged when above 1.05), the library default's time (``batch_size``'s default of ``removal_curve``:
``autobatch.default_batch_size``'s size for the cell's model and input, clipped to B·F like the ladder, and always
timed) over the best fixed time, the best bare size and time, and
``t_bare(best) / t_fixed(best)``, the metric's usual ratio to bare passes (1.0 is the limit). Printed as a
Markdown table ready for RESULTS.md, then the worst auto/best and default/best ratios over all cells.
``--csv PATH`` writes every cell, with the whole ladder's times (rewritten after each cell, so a run cut short keeps
the cells it finished); ``--from-csv PATH`` prints the table and summary
of such a file again without timing anything.

    python benchmarks/autobatch_sweep.py [--models MODEL ...] [--sizes 32 64 224] [--threads 1 2]
                                         [--device cpu|cuda] [--scale 1] [--fractions 21] [--repeats 5]
                                         [--ladder 8 16 ...] [--csv PATH] [--quick]
    python benchmarks/autobatch_sweep.py --from-csv PATH
"""

from __future__ import annotations

import argparse
import collections
import copy
import csv
import datetime
import inspect
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import batched_forward, mib, morf_workload, timed, tolerance  # noqa: E402

import faithlab as fl  # noqa: E402
from faithlab.perturb import autobatch, batch_cache  # noqa: E402

MODELS = ("small_cnn", "resnet18", "vit")
STAND_INS = {"digits_cnn": (1, 8), "resnet9": (3, 32), "resnet18_cifar": (3, 32), "vit_digits": (1, 8)}
"""The study's stand-ins, each at its own (channels, size): the small CNN and the ViT the book trains on the 8×8
scikit-learn digits, and the CIFAR-size ResNets of the F-Fidelity and ReCo/MeGe chapters (``--models`` names them;
``--sizes`` does not apply to them)."""
HELD_OUT = ("vgg_small", "mobilenet_small", "densenet_small", "xception_small", "mobilenet_v2", "vgg11",
            "densenet121", "convnext_tiny")
"""Models the CPU default's rule was not chosen on (the library's small VGG, MobileNet, DenseNet and Xception, and
torchvision's MobileNet-V2, VGG-11, DenseNet-121 and ConvNeXt-T, random weights): 3.5 to 355 FLOPs per byte of
layer output, the range the rule's intensity term must hold over (``--models`` names them, at ``--sizes``)."""
HELD_OUT_2 = ("resnet50", "efficientnet_b0", "googlenet", "shufflenet_v2_x1_0", "regnet_y_400mf", "squeezenet1_1")
"""torchvision models that neither the CPU rule nor its weight term (``autobatch.WEIGHT_REUSE``, added after the
:data:`HELD_OUT` sweep) was chosen on: the second held-out test (the first three at 32 px, the rest at 64 px)."""
SIZES = (32, 64, 224)
THREADS = (1, 2)
LADDER = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
SETTLE = 4
"""Untimed "auto" calls before "auto cached" is timed: a call too small to try every candidate leaves the rest of
the probe to the next ones, so the second call of a process is not yet what a long run sees."""
PATCH = {32: 4, 64: 8, 224: 16}
"""ViT patch size per image size (other sizes: see :func:`patch_size`)."""
B_TABLE = {
    ("small_cnn", 32): 768, ("small_cnn", 64): 128, ("small_cnn", 224): 12,
    ("resnet18", 32): 192, ("resnet18", 64): 64, ("resnet18", 224): 4,
    ("vit", 32): 96, ("vit", 64): 96, ("vit", 224): 24,
    ("digits_cnn", 8): 4096, ("vit_digits", 8): 1024, ("resnet9", 32): 192, ("resnet18_cifar", 32): 96,
    ("vgg_small", 32): 272, ("mobilenet_small", 32): 140, ("densenet_small", 32): 200, ("xception_small", 32): 400,
    ("mobilenet_v2", 32): 240, ("vgg11", 32): 32, ("densenet121", 32): 72, ("convnext_tiny", 32): 72,
    ("resnet50", 32): 40, ("efficientnet_b0", 32): 40, ("googlenet", 32): 40, ("shufflenet_v2_x1_0", 64): 40,
    ("regnet_y_400mf", 64): 40, ("squeezenet1_1", 64): 40,
}
"""Samples B per (model, image size) at ``--scale 1``, sized from rough per-input forward costs so that one call of
B × 21 inputs is meant to take a few seconds on one CPU thread of a 2-core VM at the best batch size (a target, not
a measurement: adjust with ``--scale``)."""
N_CLASSES = 10
LIMIT = 1.05
"""auto/best fixed above this is flagged (the issue's "never loses more than 5 %")."""
QUICK_B, QUICK_LADDER, QUICK_SIZES, QUICK_THREADS = 4, (16, 64), (16, 32), (1,)
COLUMNS = ("date", "device", "model", "px", "threads", "inputs B×F", "best fixed bs", "t best fixed", "auto bs",
           "t auto first", "t auto cached", "first / best", "cached / best", "default bs", "default / best",
           "best bare bs",
           "t best bare", "ratio bare(best) / fixed(best)", "> 5 %")
DEFAULT = inspect.signature(fl.perturb.removal_curve).parameters["batch_size"].default
"""The library's default batch size (read from the signature, not assumed): None, the size
``autobatch.default_batch_size`` fixes per model and input, or an int."""


def patch_size(size: int) -> int:
    """The ViT patch size at ``size`` px: ``PATCH[size]``, else the largest of 16, 8, 4, 2 that divides it and
    leaves at least 4×4 patches."""
    if size in PATCH:
        return PATCH[size]
    for p in (16, 8, 4, 2):
        if size % p == 0 and size // p >= 4:
            return p
    raise ValueError(f"--sizes: the ViT needs an image size with a patch size of 2, 4, 8 or 16 leaving at least 4×4 "
                     f"patches; {size} has none (pick a multiple of 8, or leave vit out of --models)")


def channels(name: str) -> int:
    return STAND_INS[name][0] if name in STAND_INS else 3


def build_model(name: str, size: int, device: torch.device) -> nn.Module:
    """The cell's model, random init from seed 0 without touching the caller's global RNG, in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if name == "digits_cnn":
            model = fl.models.build("small_cnn", in_channels=1, n_classes=N_CLASSES)
        elif name == "vit_digits":
            model = fl.models.build("vit", image_size=size, patch_size=2, in_channels=1, n_classes=N_CLASSES)
        elif name in ("resnet9", "resnet18_cifar"):
            model = fl.models.build(name, in_channels=3, n_classes=N_CLASSES)
        elif name == "small_cnn":
            model = fl.models.build("small_cnn", in_channels=3, n_classes=N_CLASSES)
        elif name == "resnet18":
            import torchvision  # only this cell needs it

            model = torchvision.models.resnet18(num_classes=N_CLASSES)
        elif name == "vit":
            model = fl.models.build("vit", image_size=size, patch_size=patch_size(size), in_channels=3,
                                    n_classes=N_CLASSES)
        elif name in HELD_OUT[:4]:
            model = fl.models.build(name, in_channels=3, n_classes=N_CLASSES)
        elif name in HELD_OUT or name in HELD_OUT_2:
            import torchvision

            extra = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
            model = getattr(torchvision.models, name)(num_classes=N_CLASSES, **extra)
        else:
            raise ValueError(f"--models: unknown model {name!r}; choose from "
                             f"{MODELS + tuple(STAND_INS) + HELD_OUT + HELD_OUT_2}")
    return model.to(device).eval()


def samples(model: str, size: int, scale: float, quick: bool) -> int:
    """B for a cell: ``B_TABLE`` (or its 32 px entry scaled by the pixel count) × ``scale``; ``QUICK_B`` if quick."""
    if quick:
        return QUICK_B
    base = B_TABLE[(model, size)] if (model, size) in B_TABLE else B_TABLE[(model, 32)] * 32 ** 2 / size ** 2
    return max(1, round(base * scale))


def ladder_sizes(ladder: Sequence[int], n_inputs: int) -> list[int]:
    """The ladder clipped to the call's inputs (no point batching past the workload)."""
    return sorted({min(b, n_inputs) for b in ladder})


def chunk_sizes(model: nn.Module, run: Callable[[], object]) -> list[int]:
    """The batch size of every forward call ``run()`` makes to ``model`` (a forward pre-hook, removed after)."""
    seen: list[int] = []
    handle = model.register_forward_pre_hook(lambda _m, args: seen.append(int(args[0].shape[0])))
    try:
        run()
    finally:
        handle.remove()
    return seen


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return f"GPU, {torch.cuda.get_device_name(device)}"
    return f"CPU, {os.cpu_count()} cores"


def run_cell(model: nn.Module, name: str, size: int, threads: int, n: int, n_fractions: int, ladder: Sequence[int],
             device: torch.device, repeats: int, warmup: int, seed: int, auto: bool = True) -> dict[str, object]:
    """Time one cell (see the module docstring) → its row: times in seconds, sizes, ratios, the ladder's times."""
    torch.set_num_threads(threads)
    autobatch.clear_cache()  # a fresh cache per cell (the key holds the thread count too)
    g = torch.Generator().manual_seed(seed)
    c = channels(name)
    x = torch.randn(n, c, size, size, generator=g).to(device)
    attributions = torch.randn(n, c, size, size, generator=g).to(device)
    target = torch.randint(0, N_CLASSES, (n,), generator=g).to(device)
    n_inputs = n * n_fractions
    default_bs = DEFAULT if isinstance(DEFAULT, int) else autobatch.default_batch_size(model, x)
    sizes = ladder_sizes([*ladder, default_bs], n_inputs)  # the default is always timed
    prebuilt, curve = morf_workload(model, x, attributions, target, n_fractions, sizes[-1])
    torch.testing.assert_close(curve(batch_size=autobatch.AUTO), curve(), **tolerance(device))  # at any batch size
    assert torch.equal(curve(batch_size=DEFAULT), curve(batch_size=DEFAULT))  # the default: bitwise repeatable

    def first() -> torch.Tensor:  # a fresh process: the probe runs, then the curve
        autobatch.clear_cache()
        return curve(batch_size=autobatch.AUTO)

    for _ in range(SETTLE if auto else 0):  # what a process that has run this call a few times knows
        curve(batch_size=autobatch.AUTO)
    settled = copy.deepcopy(dict(batch_cache._by_model.get(model, {})))  # the cache's entries of this model (private)

    def cached() -> torch.Tensor:  # the settled cache, whatever "first" cleared in between
        batch_cache._by_model[model] = copy.deepcopy(settled)
        return curve(batch_size=autobatch.AUTO)

    fns: dict[str, Callable[[], object]] = {"auto first": first, "auto cached": cached} if auto else {}
    for bs in sizes:
        fns[f"fixed {bs}"] = lambda bs=bs: curve(batch_size=bs)
        fns[f"bare {bs}"] = lambda bs=bs: batched_forward(model, prebuilt, bs)
    times, peaks = timed(fns, device, repeats, warmup)

    if not auto:  # --skip-auto: no "auto" call was timed
        times["auto first"] = times["auto cached"] = float("nan")
    chunks = chunk_sizes(model, cached) if auto else []  # a cached call, as timed
    counts = collections.Counter(chunks)
    auto_bs = max(counts, key=lambda c: (c * counts[c], c)) if counts else 0  # the size that carried the most inputs
    resolved = autobatch.resolve(autobatch.AUTO, model, x, n_inputs) if auto else 0
    best_fixed = min(sizes, key=lambda b: times[f"fixed {b}"])
    best_bare = min(sizes, key=lambda b: times[f"bare {b}"])
    t_fixed, t_bare = times[f"fixed {best_fixed}"], times[f"bare {best_bare}"]
    ratio_first, ratio_cached = times["auto first"] / t_fixed, times["auto cached"] / t_fixed
    return {
        "date": datetime.date.today().isoformat(), "device": describe_device(device), "model": name, "px": size,
        "threads": threads, "B": n, "F": n_fractions, "inputs": n_inputs, "repeats": repeats,
        "best_fixed_bs": best_fixed, "t_best_fixed_s": t_fixed, "auto_bs": auto_bs,
        "auto_chunks": " ".join(f"{c}x{k}" for c, k in sorted(counts.items())), "auto_resolve": resolved,
        "t_auto_first_s": times["auto first"], "t_auto_cached_s": times["auto cached"],
        "ratio_first": ratio_first, "ratio_cached": ratio_cached,
        "over_first": ratio_first > LIMIT, "over_cached": ratio_cached > LIMIT, "default_bs": default_bs,
        "best_bare_bs": best_bare, "t_best_bare_s": t_bare, "ratio_bare_fixed": t_bare / t_fixed,
        "fixed_s_by_bs": " ".join(f"{b}:{times[f'fixed {b}']:.6f}" for b in sizes),
        "bare_s_by_bs": " ".join(f"{b}:{times[f'bare {b}']:.6f}" for b in sizes),
        "peak_mib_best_fixed": mib(peaks[f"fixed {best_fixed}"]),
        "peak_mib_auto_cached": mib(peaks["auto cached"]) if auto else "-",
    }


def default_ratio(row: dict[str, object]) -> float:
    """The time at the library default (clipped to B·F, as the ladder is) over the best fixed time, read from the
    ladder's times (``fixed_s_by_bs``); NaN when the ladder lacks that size."""
    times = {int(b): float(t) for b, t in (part.split(":") for part in str(row["fixed_s_by_bs"]).split())}
    size = min(int(row["default_bs"]), int(row["inputs"])) if row.get("default_bs") else None
    return times[size] / float(row["t_best_fixed_s"]) if size in times else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def markdown_row(row: dict[str, object]) -> str:
    flags = ", ".join(k for k in ("first", "cached") if row[f"over_{k}"])
    if default_ratio(row) > LIMIT:
        flags = ", ".join(filter(None, (flags, "default")))
    cells = (row["date"], row["device"], row["model"], row["px"], row["threads"],
             f"{row['B']} × {row['F']} = {row['inputs']:,}", row["best_fixed_bs"], ms(row["t_best_fixed_s"]),
             row["auto_bs"], ms(row["t_auto_first_s"]), ms(row["t_auto_cached_s"]), f"{row['ratio_first']:.3f}",
             f"{row['ratio_cached']:.3f}", row.get("default_bs", "-"), f"{default_ratio(row):.3f}", row["best_bare_bs"],
             ms(row["t_best_bare_s"]),
             f"{row['ratio_bare_fixed']:.3f}", flags or "-")
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_table(rows: list[dict[str, object]]) -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print(markdown_row(row))


def summary(rows: list[dict[str, object]]) -> str:
    """The worst auto/best-fixed ratios over the cells (first call and cached) and how many cells lose > 5 %."""
    def where(row: dict[str, object]) -> str:
        return f"{row['model']} {row['px']} px {row['threads']} thr"

    timed_auto = [r for r in rows if r["ratio_first"] == r["ratio_first"]]
    auto = "auto not timed (--skip-auto)"
    if timed_auto:
        worst_first = max(timed_auto, key=lambda r: r["ratio_first"])
        worst_cached = max(timed_auto, key=lambda r: r["ratio_cached"])
        n_first = sum(bool(r["over_first"]) for r in timed_auto)
        n_cached = sum(bool(r["over_cached"]) for r in timed_auto)
        auto = (f"worst ratio auto / best fixed over {len(timed_auto)} cells: first call "
                f"{worst_first['ratio_first']:.3f} ({where(worst_first)}), cached {worst_cached['ratio_cached']:.3f} "
                f"({where(worst_cached)}); cells over {LIMIT:.2f}: first call {n_first}, cached {n_cached}")
    known = [r for r in rows if default_ratio(r) == default_ratio(r)]
    default = ""
    if known:
        worst_default = max(known, key=default_ratio)
        n_default = sum(default_ratio(r) > LIMIT for r in known)
        name = DEFAULT if isinstance(DEFAULT, int) else "autobatch.default_batch_size"
        default = (f"; default ({name}) / best fixed: worst {default_ratio(worst_default):.3f} "
                   f"({where(worst_default)}), cells over {LIMIT:.2f}: {n_default} of {len(known)}")
    return auto + default


def write_csv(rows: list[dict[str, object]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, object]]:
    """The rows :func:`write_csv` wrote, with their numbers and flags typed again."""
    ints = {"px", "threads", "B", "F", "inputs", "repeats", "best_fixed_bs", "auto_bs", "best_bare_bs", "default_bs"}
    rows = []
    with path.open(newline="") as f:
        for raw in csv.DictReader(f):
            row: dict[str, object] = dict(raw)
            for key, value in raw.items():
                if key in ints:
                    row[key] = int(value)
                elif key.startswith(("t_", "ratio_")):  # peak_mib_* stay as written ("-" on a CPU)
                    row[key] = float(value)
                elif key.startswith("over_"):
                    row[key] = value == "True"
            rows.append(row)
    if not rows:
        raise SystemExit(f"--from-csv {path}: no rows")
    return rows


def positive(kind: type) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    return parse


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=[*MODELS, *STAND_INS],
                   choices=[*MODELS, *STAND_INS, *HELD_OUT, *HELD_OUT_2],
                   help=f"default {' '.join(MODELS)} at --sizes and the study's stand-ins {' '.join(STAND_INS)} "
                        f"(each at its own size): the issue's 26 cells; models the CPU default was not chosen on: "
                        f"{' '.join(HELD_OUT + HELD_OUT_2)}")
    p.add_argument("--skip-auto", action="store_true", help="time the fixed sizes and the default only, not \"auto\"")
    p.add_argument("--sizes", nargs="+", type=positive(int), default=None,
                   help=f"image sizes in px (default {' '.join(map(str, SIZES))}; with --quick "
                        f"{' '.join(map(str, QUICK_SIZES))})")
    p.add_argument("--threads", nargs="+", type=positive(int), default=None,
                   help=f"CPU thread counts, one cell each (default {' '.join(map(str, THREADS))}; with --quick "
                        f"{' '.join(map(str, QUICK_THREADS))})")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--scale", type=positive(float), default=1.0, help="multiplies every cell's B")
    p.add_argument("--fractions", type=positive(int), default=21, help="curve points F")
    p.add_argument("--repeats", type=positive(int), default=5)
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds before the timed ones")
    p.add_argument("--ladder", nargs="+", type=positive(int), default=None,
                   help=f"fixed batch sizes (default {' '.join(map(str, LADDER))}; with --quick "
                        f"{' '.join(map(str, QUICK_LADDER))}), clipped to B·F")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", type=Path, default=None, help="write every cell to this CSV file")
    p.add_argument("--from-csv", type=Path, default=None,
                   help="print the table and summary of a CSV written by --csv, timing nothing")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run: B = {QUICK_B}, a ladder of two sizes, 1 repeat, no warm-up round, image sizes "
                        f"{' '.join(map(str, QUICK_SIZES))} and 1 thread unless given")
    args = p.parse_args(argv)
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    if args.quick:
        args.repeats, args.warmup = 1, 0
    args.sizes = args.sizes or list(QUICK_SIZES if args.quick else SIZES)
    args.threads = args.threads or list(QUICK_THREADS if args.quick else THREADS)
    args.ladder = args.ladder or list(QUICK_LADDER if args.quick else LADDER)
    if "vit" in args.models and not args.quick:
        for size in args.sizes:
            patch_size(size)  # fails early, naming --sizes
    return args


def main(argv: Sequence[str] | None = None) -> list[dict[str, object]]:
    """Run the sweep's cells, print each as it ends, then the Markdown table and the summary; returns the rows.
    Restores the caller's torch thread count and leaves the global RNG as it was."""
    args = parse_args(argv)
    if args.from_csv is not None:
        rows = read_csv(args.from_csv)
        print_table(rows)
        print()
        print(summary(rows))
        return rows
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device here")
        print(f"GPU: {torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    print(f"F = {args.fractions} fractions, repeats {args.repeats}, ladder {' '.join(map(str, args.ladder))} "
          f"(clipped to B·F); auto candidates {' '.join(map(str, autobatch.CANDIDATES))}", flush=True)
    threads_before = torch.get_num_threads()
    rows: list[dict[str, object]] = []
    try:
        for name in args.models:
            for size in ([STAND_INS[name][1]] if name in STAND_INS else args.sizes):
                model = build_model(name, size, device)
                n = samples(name, size, args.scale, args.quick)
                for threads in args.threads:
                    start = time.perf_counter()
                    row = run_cell(model, name, size, threads, n, args.fractions, args.ladder, device,
                                   args.repeats, args.warmup, args.seed, auto=not args.skip_auto)
                    rows.append(row)
                    if args.csv is not None:  # after every cell: a time cap that cuts the run keeps what it finished
                        write_csv(rows, args.csv)
                    print(f"cell {name} {size} px {threads} thr, B={n} F={args.fractions} ({row['inputs']:,} inputs), "
                          f"{time.perf_counter() - start:.1f} s: fixed s {row['fixed_s_by_bs']}; bare s "
                          f"{row['bare_s_by_bs']}; auto chunks {row['auto_chunks']} (resolve: {row['auto_resolve']}), "
                          f"first {row['t_auto_first_s']:.4f} s, cached {row['t_auto_cached_s']:.4f} s", flush=True)
                del model
                autobatch.clear_cache()
    finally:
        torch.set_num_threads(threads_before)
    print()
    print_table(rows)
    print()
    print(summary(rows))
    if args.csv is not None and rows:
        print(f"wrote {args.csv}")
    return rows


if __name__ == "__main__":
    main()

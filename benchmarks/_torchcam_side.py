"""The TorchCAM side of ``benchmarks/torchcam_peer.py``: run with the throw-away environment's python (TorchCAM 0.5.0,
the project's torch and torchvision), never imported by the project and never importing faithlab.

    <peer-env>/bin/python benchmarks/_torchcam_side.py WORKDIR

WORKDIR holds what the project side wrote, all plain tensors read with ``torch.load(weights_only=True)`` and one
JSON file: ``config.json``; ``x.pt`` (B, C, H, W) float32; per model ``<name>.state.pt`` (its state_dict) and
``<name>.maps.pt`` (B, H, W), the maps to rank. The architectures are rebuilt here (``resnet18``: torchvision's;
``small_cnn``: faithlab's SmallCNN in plain torch with the same parameter names) and loaded strictly.

TorchCAM's ``DeletionInsertionMetric`` asks a CAM extractor for the maps; :class:`Precomputed` is one that hands
over the given maps (at the input resolution: TorchCAM's bilinear resize to the same size is then the identity,
checked here exactly) and records the classes TorchCAM asks for, so that only the metric is compared and timed.
Per model, one untimed recording run with the metric's own ``_compute_curves`` wrapped (the original is called and
what it returns is kept: TorchCAM's ``update`` keeps only sums of AUCs) and the model wrapped in a recorder (every
input TorchCAM sends, clean forward included, in the calls it made); then, interleaved, ``reset(); update(x)`` and
bare forward passes over those inputs, replayed in the very calls and at each of the config's bare sizes. It writes
``<name>.fractions.pt``, ``<name>.deletion.pt``, ``<name>.insertion.pt`` (B, F), ``<name>.deletion_auc.pt``,
``<name>.insertion_auc.pt`` (B,) (TorchCAM's ``torch.trapezoid(curve, fractions, dim=1)`` on those curves),
``<name>.class_idx.pt`` (B,) int64 and ``results.json`` (summary, counts, times, versions).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch
import torchcam
import torchvision
from torch import nn
from torchcam.metrics import DeletionInsertionMetric, _resize_cam

from _peer_common import Recorder, SmallCNN, bare, replay, sync  # this folder (the script runs from it)


def build(spec: dict) -> nn.Module:
    if spec["arch"] == "resnet18":
        return torchvision.models.resnet18(num_classes=spec["num_classes"])
    if spec["arch"] == "small_cnn":
        return SmallCNN(spec["in_channels"], spec["n_classes"], spec["width"])
    raise ValueError(f"unknown arch {spec['arch']!r}")


class Precomputed:
    """TorchCAM's CAM-extractor protocol (``model``, ``__call__``, ``fuse_cams``, ``_hooks_off``) over given maps
    ``(B, H, W)``: returns them as they are for whatever class TorchCAM asks (recorded in ``asked``). A real
    extractor's ``normalized=True`` min-max rescaling is monotone but can merge float32 neighbours into ties; the
    maps are handed over unscaled so that both sides rank the very same values."""

    def __init__(self, model: nn.Module, maps: torch.Tensor) -> None:
        self.model, self.maps, self.asked = model, maps, []

    def __call__(self, class_idx=None, scores=None, normalized: bool = True, *, targets=None, **kwargs):
        if targets is not None or scores is None or scores.shape[0] != self.maps.shape[0]:
            raise RuntimeError("the stub extractor serves one whole batch of class indices at a time")
        self.asked.append(class_idx)
        return [self.maps]

    def fuse_cams(self, cams: list[torch.Tensor]) -> torch.Tensor:
        if len(cams) != 1:
            raise RuntimeError(f"the stub extractor makes one map per input, got {len(cams)}")
        return cams[0]

    @contextlib.contextmanager
    def _hooks_off(self):
        yield


def timed(fns: dict, device: str, repeats: int) -> dict:
    """Median seconds over interleaved repeats after one warm-up each (as ``benchmarks/_timing.timed``)."""
    for fn in fns.values():
        fn()
    sync(device)
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            sync(device)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    work = Path(sys.argv[1])
    cfg = json.loads((work / "config.json").read_text())
    device = cfg["device"]
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    if device == "cuda":   # full float32 on both sides, so that the curves can agree to float32 precision
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    x = torch.load(work / "x.pt", weights_only=True).to(device)
    results = {"versions": {k: importlib.metadata.version(k) for k in ("torchcam", "torch", "torchvision")}
               | {"torchcam.__version__": torchcam.__version__, "python": sys.version.split()[0]},
               "threads": torch.get_num_threads(), "models": {}}
    softmax = partial(torch.softmax, dim=-1)

    for name, spec in cfg["models"].items():
        model = build(spec)
        model.load_state_dict(torch.load(work / f"{name}.state.pt", weights_only=True), strict=True)
        model = model.to(device).eval()
        maps = torch.load(work / f"{name}.maps.pt", weights_only=True).to(device)
        resize_identity = torch.equal(_resize_cam(maps, tuple(x.shape[2:])), maps)
        if not resize_identity:
            raise RuntimeError(f"{name}: TorchCAM's resize of the maps to the input size is not the identity")

        # untimed recording run -------------------------------------------------------------------------------
        rec = Recorder(model).eval()
        stub = Precomputed(rec, maps)
        metric = DeletionInsertionMetric(stub, softmax, steps=cfg["steps"], batch_size=cfg["batch_size"])
        kept = []
        compute = metric._compute_curves

        def spy(*args, **kwargs):
            out = compute(*args, **kwargs)
            kept.append(tuple(t.detach().clone() for t in out))
            return out

        metric._compute_curves = spy
        metric.update(x)
        summary = metric.summary()
        if len(kept) != 1 or len(stub.asked) != 1 or metric.total != x.shape[0] or metric.nan_count:
            raise RuntimeError(f"{name}: TorchCAM ran in an unexpected pattern ({len(kept)} curve calls, "
                               f"{len(stub.asked)} CAM calls, {metric.total} samples, {metric.nan_count} NaN maps)")
        fractions, deletion, insertion = (t.cpu() for t in kept[0])
        curves = {"fractions": fractions, "deletion": deletion, "insertion": insertion,
                  "deletion_auc": torch.trapezoid(deletion, fractions, dim=1),   # TorchCAM's own expression
                  "insertion_auc": torch.trapezoid(insertion, fractions, dim=1),
                  "class_idx": torch.as_tensor(stub.asked[0], dtype=torch.int64).reshape(-1).cpu()}
        for key, t in curves.items():
            torch.save(t.contiguous(), work / f"{name}.{key}.pt")
        calls = rec.seen
        inputs = torch.cat(calls)

        # timing ----------------------------------------------------------------------------------------------
        plain = DeletionInsertionMetric(Precomputed(model, maps), softmax, steps=cfg["steps"],
                                        batch_size=cfg["batch_size"])

        def run() -> None:
            plain.reset()
            plain.update(x)

        fns = {"torchcam": run, "bare as sent": lambda: replay(model, calls)}
        fns |= {f"bare {bs}": (lambda bs=bs: bare(model, inputs, bs)) for bs in cfg["bare_sizes"]}
        times = timed(fns, device, cfg["repeats"])
        results["models"][name] = {
            "summary": summary, "resize_identity": resize_identity, "inputs": int(inputs.shape[0]),
            "call_sizes": [int(c.shape[0]) for c in calls], "times": times,
            "best_bare_size": min(cfg["bare_sizes"], key=lambda bs: times[f"bare {bs}"])}
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

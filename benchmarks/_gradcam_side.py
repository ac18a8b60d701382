"""The pytorch-grad-cam side of ``benchmarks/road_peer.py``: run with the throw-away environment's python (grad-cam
1.5.7, the project's torch and torchvision), never imported by the project and never importing faithlab.

    <peer-env>/bin/python benchmarks/_gradcam_side.py WORKDIR

WORKDIR holds what the project side wrote, all plain tensors read with ``torch.load(weights_only=True)`` and one
JSON file: ``config.json``; ``x.pt`` (B, C, H, W) float32; per model ``<name>.state.pt`` (its state_dict),
``<name>.cams.pt`` (B, H, W) float32, the maps as grad-cam reads them (ranks scaled to [0, 1], see road_peer.py),
and ``<name>.targets.pt`` (B,) int64, the classes to read (``ClassifierOutputSoftmaxTarget``). The architectures
are rebuilt here (``resnet18``: torchvision's; ``small_cnn``: faithlab's SmallCNN in plain torch with the same
parameter names) and loaded strictly.

Per model:

1. an untimed run of ``ROADCombined(percentiles)`` with the imputation noise set to 0: ``NoisyLinearImputer``'s
   default ``noise`` (which ``ROADMostRelevantFirst`` / ``ROADLeastRelevantFirst`` construct it with, 0.01 hard-coded)
   is patched to 0.0 for this run only. Spies around grad-cam's own ``PerturbationConfidenceMetric.__call__`` (the
   original is called; its return, the per-image ``score after − score before`` of one percentile and direction,
   is kept) and ``NoisyLinearImputer.__call__`` (each image's keep mask and imputed image are kept) read what the
   metric computes. Written: ``<name>.kept.pt`` (2, P, B, H, W) bool, ``<name>.imputed0.pt`` (2, P, B, C, H, W)
   float32, ``<name>.diffs0.pt`` (2, P, B) float32 (index 0 MoRF = ``RemoveMostRelevantFirst``, 1 LeRF; P the
   percentiles in the config's order), ``<name>.road0.pt`` (B,);
2. an untimed run at grad-cam's default noise (0.01, torch's global RNG seeded with the config's seed), the model
   wrapped in a recorder (every input grad-cam sends, in the calls it made): ``<name>.road.pt`` (B,);
3. interleaved timing (medians of the config's repeats after one warm-up each): ``ROADCombined`` on the batch, bare
   forward passes over the recorded inputs (replayed in the very calls, and at each of the config's bare sizes),
   and the imputation alone: ``NoisyLinearImputer()`` (noise 0.01) on each of the 2·P·B (image, mask) pairs of run
   1, one image at a time as grad-cam calls it.

``results.json``: versions, threads, per model the inputs, call sizes, times, best bare size and the removed pixel
counts per direction and percentile (each image's, from the masks grad-cam built).

On ``device == "cuda"`` the model and the batch are on the GPU, as a user of grad-cam would have them; its imputer
still moves each image to the CPU and solves there (scipy), as it is written.
"""

from __future__ import annotations

import importlib.metadata
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from pytorch_grad_cam.metrics import perturbation_confidence as pc
from pytorch_grad_cam.metrics import road as gc_road
from pytorch_grad_cam.utils.model_targets import ClassifierOutputSoftmaxTarget
from torch import nn

from _peer_common import Recorder, SmallCNN, bare, replay, sync  # this folder (the script runs from it)

DIRECTIONS = ("RemoveMostRelevantFirst", "RemoveLeastRelevantFirst")   # index 0 MoRF, 1 LeRF


def build(spec: dict) -> nn.Module:
    if spec["arch"] == "resnet18":
        return torchvision.models.resnet18(num_classes=spec["num_classes"])
    if spec["arch"] == "small_cnn":
        return SmallCNN(spec["in_channels"], spec["n_classes"], spec["width"])
    raise ValueError(f"unknown arch {spec['arch']!r}")


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


class Spies:
    """Wraps grad-cam's ``PerturbationConfidenceMetric.__call__`` and ``NoisyLinearImputer.__call__`` (the originals
    are called unchanged) and, while active, keeps what they return, keyed by (direction, percentile)."""

    def __init__(self) -> None:
        self.context: tuple[str, int] | None = None
        self.diffs: dict[tuple[str, int], np.ndarray] = {}
        self.images: dict[tuple[str, int], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.metric_call = pc.PerturbationConfidenceMetric.__call__
        self.imputer_call = gc_road.NoisyLinearImputer.__call__

    def __enter__(self) -> "Spies":
        spies, metric_call, imputer_call = self, self.metric_call, self.imputer_call

        def metric(self_, *args, **kwargs):
            key = (type(self_.perturbation).__name__, self_.perturbation.percentile)
            if key in spies.diffs or spies.context is not None:
                raise RuntimeError(f"grad-cam ran {key} twice or nested")
            spies.context = key
            try:
                out = metric_call(self_, *args, **kwargs)
            finally:
                spies.context = None
            spies.diffs[key] = np.array(out, dtype=np.float32, copy=True)
            return out

        def imputer(self_, img, mask):
            out = imputer_call(self_, img, mask)
            spies.images.setdefault(spies.context, []).append((mask.detach().clone(), out.detach().clone()))
            return out

        pc.PerturbationConfidenceMetric.__call__ = metric
        gc_road.NoisyLinearImputer.__call__ = imputer
        return self

    def __exit__(self, *exc) -> None:
        pc.PerturbationConfidenceMetric.__call__ = self.metric_call
        gc_road.NoisyLinearImputer.__call__ = self.imputer_call


class NoiseOff:
    """``NoisyLinearImputer``'s default noise set to 0.0 while active (its ``__init__`` defaults patched back after):
    ``ROADMostRelevantFirst`` and ``ROADLeastRelevantFirst`` build their imputer with the default."""

    def __enter__(self) -> None:
        self.defaults = gc_road.NoisyLinearImputer.__init__.__defaults__
        gc_road.NoisyLinearImputer.__init__.__defaults__ = (0.0, *self.defaults[1:])

    def __exit__(self, *exc) -> None:
        gc_road.NoisyLinearImputer.__init__.__defaults__ = self.defaults


def main() -> None:
    work = Path(sys.argv[1])
    cfg = json.loads((work / "config.json").read_text())
    device, percentiles = cfg["device"], cfg["percentiles"]
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    if device == "cuda":   # full float32, as on the project side
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    x = torch.load(work / "x.pt", weights_only=True).to(device)
    b = x.shape[0]
    results = {"versions": {k: importlib.metadata.version(k)
                            for k in ("grad-cam", "torch", "torchvision", "numpy", "scipy", "opencv-python-headless")}
               | {"python": sys.version.split()[0]},
               "default_noise": gc_road.NoisyLinearImputer().noise, "threads": torch.get_num_threads(), "models": {}}
    if gc_road.NoisyLinearImputer.__init__.__defaults__[0] != 0.01:
        raise RuntimeError("grad-cam's NoisyLinearImputer default noise is not 0.01: this script assumes it")

    for name, spec in cfg["models"].items():
        model = build(spec)
        model.load_state_dict(torch.load(work / f"{name}.state.pt", weights_only=True), strict=True)
        model = model.to(device).eval()
        cams = torch.load(work / f"{name}.cams.pt", weights_only=True).numpy()
        for cam in cams:   # grad-cam reads cam (MoRF) and 1 − cam (LeRF) through percentiles: no ties in either
            if np.unique(cam).size != cam.size or np.unique(1 - cam).size != cam.size:
                raise RuntimeError(f"{name}: a map handed to grad-cam has tied values")
        targets = [ClassifierOutputSoftmaxTarget(int(c))
                   for c in torch.load(work / f"{name}.targets.pt", weights_only=True).tolist()]

        # 1. noise off, spies on ---------------------------------------------------------------------------------
        torch.manual_seed(cfg["seed"])
        with NoiseOff(), Spies() as spy:
            road0 = gc_road.ROADCombined(percentiles=percentiles)(x, cams, targets, model)
        keys = [(d, p) for d in DIRECTIONS for p in percentiles]
        if sorted(spy.diffs) != sorted(keys) or any(len(spy.images.get(k, [])) != b for k in keys):
            raise RuntimeError(f"{name}: grad-cam ran in an unexpected pattern: {sorted(spy.diffs)}, "
                               f"{ {k: len(v) for k, v in spy.images.items()} }")
        shape = (len(DIRECTIONS), len(percentiles), b)
        kept = torch.stack([m > 0.5 for k in keys for m, _ in spy.images[k]]).view(*shape, *x.shape[2:])
        imputed = torch.stack([o for k in keys for _, o in spy.images[k]]).view(*shape, *x.shape[1:])
        diffs = torch.from_numpy(np.stack([spy.diffs[k] for k in keys])).view(shape)
        removed = {f"{d} {p}": sorted({int(x.shape[2] * x.shape[3] - int(m.sum())) for m, _ in spy.images[(d, p)]})
                   for d, p in keys}
        for key, t in {"kept": kept, "imputed0": imputed, "diffs0": diffs,
                       "road0": torch.as_tensor(np.asarray(road0, dtype=np.float32))}.items():
            torch.save(t.contiguous(), work / f"{name}.{key}.pt")
        pairs = [(x[i].cpu(), m) for k in keys for i, (m, _) in enumerate(spy.images[k])]
        del spy

        # 2. grad-cam's default noise, model recorded -------------------------------------------------------------
        torch.manual_seed(cfg["seed"])
        rec = Recorder(model).eval()
        road = gc_road.ROADCombined(percentiles=percentiles)(x, cams, targets, rec)
        torch.save(torch.as_tensor(np.asarray(road, dtype=np.float32)).contiguous(), work / f"{name}.road.pt")
        calls = rec.seen
        inputs = torch.cat(calls)

        # 3. timing ----------------------------------------------------------------------------------------------
        metric = gc_road.ROADCombined(percentiles=percentiles)
        imputer = gc_road.NoisyLinearImputer()

        def impute_all() -> None:
            for img, m in pairs:
                imputer(img, m)

        fns = {"gradcam": lambda: metric(x, cams, targets, model), "bare as sent": lambda: replay(model, calls),
               "impute": impute_all}
        fns |= {f"bare {bs}": (lambda bs=bs: bare(model, inputs, bs)) for bs in cfg["bare_sizes"]}
        times = timed(fns, device, cfg["repeats"])
        results["models"][name] = {
            "inputs": int(inputs.shape[0]), "call_sizes": [int(c.shape[0]) for c in calls], "times": times,
            "best_bare_size": min(cfg["bare_sizes"], key=lambda bs: times[f"bare {bs}"]), "removed": removed,
            "imputer_calls": len(pairs)}
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

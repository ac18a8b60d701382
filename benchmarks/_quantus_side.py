"""The Quantus side of ``benchmarks/quantus_peer.py``: run with the throw-away environment's python (Quantus 0.6,
numpy < 2.4, the project's torch), never imported by the project and never importing faithlab.

    <peer-env>/bin/python benchmarks/_quantus_side.py WORKDIR

WORKDIR holds what the project side wrote, all plain tensors read with ``torch.load(weights_only=True)`` and one
JSON file: ``config.json``; ``x.pt`` (B, 1, H, W) float32 and ``y.pt`` (B,) int64; per model ``<name>.state.pt``
(its state_dict) and ``<name>.a.pt`` (its attributions, shaped like x). The architectures are rebuilt here in plain
torch with the same parameter names (``small_cnn``: faithlab's SmallCNN; ``linear``: Flatten + Linear) and loaded
strictly.

Per model it runs Quantus' ``PixelFlipping`` and ``FaithfulnessCorrelation`` once untimed, recording (by wrapping
the metric's own ``perturb_func`` / ``similarity_func`` and the model, never changing what they compute): the
pixel-flipping curves, the subsets Quantus drew (numpy's global RNG, seeded) with its attribution sums and output
drops, its per-sample scores, and every input Quantus sent to the model. Then it times, interleaved, each metric
and bare forward passes over the very inputs it sent, at each batch size of the config. It writes
``<name>.pf_curve.pt``, ``<name>.fc_indices.pt`` (B, runs, subset) int64, ``<name>.fc_sums.pt``,
``<name>.fc_deltas.pt``, ``<name>.fc_scores.pt`` and ``results.json`` (times, peak GPU memory, versions).

Quantus options used (its defaults differ where noted): ``abs=False`` (default), ``normalise=False`` (default True:
``normalise_by_max``, a division by the largest |a| over the whole batch, which changes neither the pixel order
nor a Pearson correlation but would change the attribution sums), ``perturb_baseline=0.0`` (default "black", the
per-sample minimum of x, not 0 for standardised digits), ``softmax=True`` (default: probabilities),
``channel_first=True``, ``disable_warnings=True`` (only silences the parameterisation notice).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import quantus
import torch
from torch import nn

from _peer_common import Recorder, SmallCNN, bare, sync  # this folder (the script runs from it)


def build(spec: dict) -> nn.Module:
    if spec["arch"] == "small_cnn":
        return SmallCNN(spec["in_channels"], spec["n_classes"], spec["width"])
    if spec["arch"] == "linear":
        return nn.Sequential(nn.Flatten(), nn.Linear(spec["features"], spec["n_classes"]))
    raise ValueError(f"unknown arch {spec['arch']!r}")


def timed(fns: dict, device: str, repeats: int) -> tuple[dict, dict]:
    """Median seconds over interleaved repeats after one warm-up each; peak GPU memory above the start (None on CPU)."""
    for fn in fns.values():
        fn()
    sync(device)
    times = {k: [] for k in fns}
    peaks = {k: None for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
            t0 = time.perf_counter()
            fn()
            sync(device)
            times[k].append(time.perf_counter() - t0)
            if device == "cuda":
                peaks[k] = max(peaks[k] or 0, torch.cuda.max_memory_allocated() - base)
    return {k: statistics.median(v) for k, v in times.items()}, peaks


def main() -> None:
    work = Path(sys.argv[1])
    cfg = json.loads((work / "config.json").read_text())
    device, step, runs, size = cfg["device"], cfg["features_in_step"], cfg["nr_runs"], cfg["subset_size"]
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    if device == "cuda":   # full float32 on both sides, so that the curves can agree to float32 precision
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    x_t = torch.load(work / "x.pt", weights_only=True)
    y_t = torch.load(work / "y.pt", weights_only=True)
    x, y = x_t.numpy(), y_t.numpy()
    n = x.shape[0]
    results = {"versions": {"quantus": quantus.__version__, "numpy": np.__version__, "torch": torch.__version__,
                            "python": sys.version.split()[0]},
               "threads": torch.get_num_threads(), "models": {}}
    common = {"abs": False, "normalise": False, "perturb_baseline": 0.0, "disable_warnings": True,
              "display_progressbar": False, "return_aggregate": False}
    call = {"channel_first": True, "softmax": True, "device": device}

    for name, spec in cfg["models"].items():
        model = build(spec)
        model.load_state_dict(torch.load(work / f"{name}.state.pt", weights_only=True), strict=True)
        model = model.to(device).eval()
        a = torch.load(work / f"{name}.a.pt", weights_only=True).numpy()
        pf = quantus.PixelFlipping(features_in_step=step, **common)
        fc = quantus.FaithfulnessCorrelation(nr_runs=runs, subset_size=size, **common)

        # untimed recording runs ---------------------------------------------------------------------------------
        bs0 = cfg["batch_sizes"][0]
        rec = Recorder(model).eval()
        curve = np.asarray(pf(rec, x, y, a, batch_size=bs0, **call), dtype=np.float32)
        pf_inputs = torch.cat(rec.seen)

        drawn, sims = [], []
        perturb, similarity = fc.perturb_func, fc.similarity_func

        def perturb_spy(*args, **kwargs):
            drawn.append(np.array(kwargs["indices"]))
            return perturb(*args, **kwargs)

        def similarity_spy(*args, **kwargs):
            sims.append((np.array(kwargs["a"]), np.array(kwargs["b"])))
            return similarity(*args, **kwargs)

        fc.perturb_func, fc.similarity_func = perturb_spy, similarity_spy
        np.random.seed(cfg["seed"])
        rec = Recorder(model).eval()
        scores = np.asarray(fc(rec, x, y, a, batch_size=bs0, **call), dtype=np.float64)
        fc.perturb_func, fc.similarity_func = perturb, similarity
        fc_inputs = torch.cat(rec.seen)
        # Quantus runs batches of bs0 instances in order; per batch, one perturb call per run ((m, size) indices).
        blocks, k = [], 0
        for b0 in range(0, n, bs0):
            m = min(n, b0 + bs0) - b0
            calls = drawn[k:k + runs]
            if len(calls) != runs or any(c.shape != (m, size) for c in calls):
                raise RuntimeError("Quantus' FaithfulnessCorrelation drew its subsets in an unexpected pattern")
            blocks.append(np.stack(calls, axis=1))
            k += runs
        if k != len(drawn):
            raise RuntimeError(f"{len(drawn) - k} unexpected perturbation calls")
        torch.save(torch.from_numpy(curve), work / f"{name}.pf_curve.pt")
        torch.save(torch.from_numpy(np.concatenate(blocks).astype(np.int64)), work / f"{name}.fc_indices.pt")
        torch.save(torch.from_numpy(np.concatenate([s[0] for s in sims]).astype(np.float64)),
                   work / f"{name}.fc_sums.pt")
        torch.save(torch.from_numpy(np.concatenate([s[1] for s in sims]).astype(np.float64)),
                   work / f"{name}.fc_deltas.pt")
        torch.save(torch.from_numpy(scores), work / f"{name}.fc_scores.pt")

        # timing -----------------------------------------------------------------------------------------------------
        pf_in, fc_in = pf_inputs.to(device), fc_inputs.to(device)
        per_size = {}
        for bs in cfg["batch_sizes"]:
            times, peaks = timed({"bare_pf": lambda: bare(model, pf_in, bs),
                                  "quantus_pf": lambda: pf(model, x, y, a, batch_size=bs, **call),
                                  "bare_fc": lambda: bare(model, fc_in, bs),
                                  "quantus_fc": lambda: fc(model, x, y, a, batch_size=bs, **call)},
                                 device, cfg["repeats"])
            per_size[str(bs)] = {"times": times, "peaks": peaks}
        results["models"][name] = {"inputs": {"pf": int(pf_inputs.shape[0]), "fc": int(fc_inputs.shape[0])},
                                   "by_batch_size": per_size}
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

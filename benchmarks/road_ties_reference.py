"""Makes ``tests/faithlab/metrics/papers/synthesis/data/road_ties_gradcam.json``: what pytorch-grad-cam 1.5.7's ROAD
does on maps with ties, computed once with grad-cam's own code and committed, so that
``tests/faithlab/metrics/papers/synthesis/test_road_gradcam.py`` pins grad-cam's tie rule against ours without grad-cam.

The case (written into the file; this script is its only source): two 8×8 CAM-like maps, each a 4×4 grid of
multiples of 1/8 upsampled by 2×2 blocks (every value tied four times or more; 7 resp. 6 of the 16 blocks exactly 0,
44 % resp. 38 % of the pixels; ``1 − cam`` exact in float32, so it ties no other values), two 1×8×8 images and a
linear model (3 classes, weights and bias multiples of 1/16), targets 0 and 2, grad-cam's percentiles 10, …, 90.

grad-cam's side runs in the peer's throw-away environment (``benchmarks/road_peer.py``'s: made with uv outside the
repository, ``$FAITHLAB_GRADCAM_ENV`` or ``~/.cache/faithlab-bench/grad-cam-1.5.7``, grad-cam 1.5.7 and the project's
torch and torchvision), this file run there with ``--gradcam-side``; it records, per map, direction and percentile:

- ``kept``: the keep mask grad-cam builds, read by passing a recording imputer to its own ``RemoveMostRelevantFirst``
  / ``RemoveLeastRelevantFirst`` (``metrics/perturbation_confidence.py``: ``threshold = np.percentile(mask, p)``,
  ``binary_mask = np.float32(mask < threshold)``, the LeRF class calling it on ``1 − mask``), as strings of 0/1 in
  row-major order, and the kept counts;
- with its imputer's noise off (``NoisyLinearImputer``'s default patched to 0.0, as ``_gradcam_side.NoiseOff``):
  ``ROADMostRelevantFirst(p)`` / ``ROADLeastRelevantFirst(p)`` with ``return_diff=True`` (its default: output after
  imputation − clean output) and ``False`` (the output after imputation), their ``…Average`` over the percentiles and
  ``ROADCombined``, for ``ClassifierOutputTarget`` (the logit) and ``ClassifierOutputSoftmaxTarget`` (the
  probability), and the clean outputs.

Before writing, the masks are checked against that rule recomputed with numpy here.

    python benchmarks/road_ties_reference.py [--check] [--peer-env PATH]

``--check`` writes nothing: it checks the committed file against the rule and, where the grad-cam environment is
there, against a fresh grad-cam run (masks exactly, values to 1e-6); without the environment it says so and checks the
rule only (``--check`` never makes the environment).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))   # road_peer (project side), _gradcam_side (grad-cam's side)
REFERENCE = HERE.parent / "tests" / "faithlab" / "metrics" / "papers" / "synthesis" / "data" / "road_ties_gradcam.json"
PERCENTILES = list(range(10, 100, 10))   # grad-cam's ROADCombined default
DIRECTIONS = ("morf", "lerf")            # RemoveMostRelevantFirst, RemoveLeastRelevantFirst
READ_OUTS = ("logit", "prob")            # ClassifierOutputTarget, ClassifierOutputSoftmaxTarget
GRIDS = [[[0, 0, 2, 0], [0, 5, 8, 3], [0, 5, 6, 3], [0, 0, 2, 1]],   # eighths; 7 zero blocks of 16
         [[0, 1, 1, 0], [0, 4, 7, 2], [3, 4, 8, 0], [0, 0, 2, 6]]]   # 6 zero blocks
TARGETS = [0, 2]
VALUE_ATOL = 1e-6


def case() -> dict:
    """The inputs, plain lists of floats exact in float32."""
    cams = [np.kron(np.asarray(g, dtype=np.float64) / 8, np.ones((2, 2))) for g in GRIDS]
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    x = [((3 * r + 5 * c + 2 * i) % 9 / 8)[None] for i in range(2)]
    j, k = np.meshgrid(np.arange(64), np.arange(3), indexing="xy")
    weight = ((7 * j + 5 * k) % 11 - 5) / 16
    return {"cams": [m.tolist() for m in cams], "x": [m.tolist() for m in x], "weight": weight.tolist(),
            "bias": [0.25, -0.125, 0.0], "targets": TARGETS, "percentiles": PERCENTILES}


def rule_kept(cam: np.ndarray, direction: str, p: int) -> np.ndarray:
    """grad-cam's keep mask as its source states it (module docstring), on a float32 map."""
    m = cam if direction == "morf" else 1 - cam
    return m < np.percentile(m, p)


def bits(mask) -> str:
    return "".join("1" if v else "0" for v in np.asarray(mask, dtype=bool).flatten().tolist())


# ---------------------------------------------------------------------------------------------- grad-cam's side
def gradcam_side(out: Path) -> None:
    """Runs in the grad-cam environment (no faithlab there): grad-cam's masks and noise-free values → ``out``."""
    import importlib.metadata

    import torch
    from pytorch_grad_cam.metrics import perturbation_confidence as pc
    from pytorch_grad_cam.metrics import road as gc_road
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputSoftmaxTarget, ClassifierOutputTarget

    from _gradcam_side import NoiseOff   # this folder (sys.path[0] when run as a script)

    cfg = case()
    cams = np.asarray(cfg["cams"], dtype=np.float32)
    x = torch.tensor(cfg["x"], dtype=torch.float32)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3)).eval()
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor(cfg["weight"]))
        model[1].bias.copy_(torch.tensor(cfg["bias"]))

    class Recording:   # an imputer that keeps the mask grad-cam hands it and returns the image unchanged
        def __call__(self, img, mask):
            self.mask = mask.numpy() > 0.5
            return img

    removers = {"morf": pc.RemoveMostRelevantFirst, "lerf": pc.RemoveLeastRelevantFirst}
    kept = {d: [[None] * len(PERCENTILES) for _ in cams] for d in DIRECTIONS}
    for d, remover in removers.items():
        for j, p in enumerate(PERCENTILES):
            for i, cam in enumerate(cams):
                spy = Recording()
                remover(p, spy)(x[i], torch.from_numpy(cam))   # as PerturbationConfidenceMetric calls it
                kept[d][i][j] = spy.mask

    single = {"morf": gc_road.ROADMostRelevantFirst, "lerf": gc_road.ROADLeastRelevantFirst}
    average = {"morf": gc_road.ROADMostRelevantFirstAverage, "lerf": gc_road.ROADLeastRelevantFirstAverage}
    kinds = {"logit": ClassifierOutputTarget, "prob": ClassifierOutputSoftmaxTarget}
    values = {}
    with NoiseOff():
        if gc_road.NoisyLinearImputer().noise != 0.0:
            raise RuntimeError("grad-cam's imputer noise is not off")
        for kind, target_class in kinds.items():
            targets = [target_class(t) for t in cfg["targets"]]
            with torch.no_grad():
                clean = [float(t(o)) for t, o in zip(targets, model(x))]
            v = {"clean": clean, "combined": np.asarray(gc_road.ROADCombined(PERCENTILES)(x, cams, targets, model),
                                                        dtype=np.float32).tolist()}
            for d in DIRECTIONS:
                diff = [single[d](p)(x, cams, targets, model) for p in PERCENTILES]
                after = [single[d](p)(x, cams, targets, model, return_diff=False) for p in PERCENTILES]
                v[f"{d}_diff"] = np.asarray(diff, dtype=np.float32).T.tolist()    # (B, levels)
                v[f"{d}_after"] = np.asarray(after, dtype=np.float32).T.tolist()
                v[f"{d}_average"] = np.asarray(average[d](PERCENTILES)(x, cams, targets, model),
                                               dtype=np.float32).tolist()
            values[kind] = v
    versions = {k: importlib.metadata.version(k) for k in ("grad-cam", "torch", "numpy", "scipy")}
    out.write_text(json.dumps({
        "versions": versions,
        "kept": {d: [[bits(m) for m in row] for row in kept[d]] for d in DIRECTIONS},
        "values": values}))


# ------------------------------------------------------------------------------------------------ project side
def check_rule(ref: dict) -> None:
    """The recorded masks and counts are grad-cam's rule recomputed with numpy on the recorded maps."""
    n = 64
    for i, cam in enumerate(np.asarray(ref["cams"], dtype=np.float32)):
        for d in DIRECTIONS:
            for j, p in enumerate(ref["percentiles"]):
                want = rule_kept(cam, d, p)
                if ref["kept"][d][i][j] != bits(want) or ref["kept_count"][d][i][j] != int(want.sum()):
                    raise SystemExit(f"map {i}, {d}, percentile {p}: the recorded mask is not grad-cam's rule")
                if ref["removed_count"][d][i][j] != n - int(want.sum()):
                    raise SystemExit(f"map {i}, {d}, percentile {p}: removed count is not n − kept")


def reference(peer: dict) -> dict:
    counts = {d: [[s.count("1") for s in row] for row in peer["kept"][d]] for d in DIRECTIONS}
    return {
        "about": ("Made by benchmarks/road_ties_reference.py (see its docstring) with pytorch-grad-cam "
                  f"{peer['versions']['grad-cam']} (torch {peer['versions']['torch']}, numpy "
                  f"{peer['versions']['numpy']}, scipy {peer['versions']['scipy']}) in the throw-away environment of "
                  "benchmarks/road_peer.py: grad-cam's keep masks per map, direction (morf = RemoveMostRelevantFirst, "
                  "lerf = RemoveLeastRelevantFirst) and percentile (strings of 0/1, row-major, 1 = kept), and with "
                  "the imputer's noise off its per-percentile outputs (after: return_diff=False; diff: after − "
                  "clean, its default), their averages and ROADCombined, for ClassifierOutputTarget (logit) and "
                  "ClassifierOutputSoftmaxTarget (prob). Inputs: cams (B, 8, 8), x (B, 1, 8, 8), a linear model "
                  "logits = weight · x.flatten() + bias, targets. Regenerate: "
                  "python benchmarks/road_ties_reference.py"),
        **case(),
        "kept": peer["kept"],
        "kept_count": counts,
        "removed_count": {d: [[64 - c for c in row] for row in counts[d]] for d in DIRECTIONS},
        "values": peer["values"],
        "versions": peer["versions"],
    }


def run_gradcam(peer_env: Path | None, make: bool) -> dict | None:
    """grad-cam's side in its environment → its JSON; None where the environment is missing and ``make`` is off."""
    from road_peer import default_peer_env, ensure_peer_env, peer_env_ready

    env = peer_env or default_peer_env()
    if not make and not peer_env_ready(env):
        return None
    python = ensure_peer_env(env)
    with tempfile.TemporaryDirectory(prefix="faithlab-road-ties-") as work:
        out = Path(work) / "gradcam.json"
        proc = subprocess.run([str(python), str(Path(__file__).resolve()), "--gradcam-side", str(out)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the grad-cam side failed:\n{proc.stderr[-4000:]}")
        return json.loads(out.read_text())


def same(a, b, path: str = "") -> list[str]:
    """Where two JSON values differ: floats beyond VALUE_ATOL, anything else at all."""
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return [f"{path}: keys {sorted(a)} vs {sorted(b)}"]
        return [m for k in a for m in same(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} vs {len(b)}"]
        return [m for i, (u, v) in enumerate(zip(a, b)) for m in same(u, v, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        return [] if abs(a - b) <= VALUE_ATOL else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="check the committed file; write nothing")
    p.add_argument("--peer-env", type=Path, default=None, help="the grad-cam environment (road_peer.py's default)")
    p.add_argument("--gradcam-side", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.gradcam_side is not None:
        gradcam_side(args.gradcam_side)
        return
    if args.check:
        committed = json.loads(REFERENCE.read_text())
        check_rule(committed)
        print(f"{REFERENCE.name}: masks and counts follow grad-cam's rule (numpy): True")
        peer = run_gradcam(args.peer_env, make=False)
        if peer is None:
            print("grad-cam environment not there: the file was not recomputed with grad-cam")
            return
        fresh = reference(peer)
        fresh["about"], fresh["versions"] = committed["about"], committed["versions"]
        problems = same(committed, fresh)
        if problems:
            raise SystemExit(f"{REFERENCE.name} differs from a fresh grad-cam run:\n" + "\n".join(problems[:20]))
        print(f"{REFERENCE.name} equals a fresh grad-cam {peer['versions']['grad-cam']} run: True")
        return
    ref = reference(run_gradcam(args.peer_env, make=True))
    check_rule(ref)
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    REFERENCE.write_text(json.dumps(ref, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size:,} bytes); masks follow grad-cam's rule (numpy): True")
    for d in DIRECTIONS:
        print(f"{d} removed per percentile {PERCENTILES}: {ref['removed_count'][d]}")


if __name__ == "__main__":
    main()

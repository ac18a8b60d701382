"""The benchmark scripts run (tiny sizes, one repeat) and check their own results; no timing is asserted here.

The Quantus peer benchmark runs its Quantus side only where the peer environment already exists (default
``~/.cache/faithlab-bench/quantus-0.6`` or ``$FAITHLAB_PEER_ENV``; making it downloads Quantus): then its
value-for-value agreement checks must pass. Independently of Quantus, its faithlab side is checked here against
plain-torch literal ports of pixel flipping and of μF on given subsets (slow, obvious loops).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import faithlab as fl

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import quantus_peer  # noqa: E402

PEER = quantus_peer.peer_env_ready(quantus_peer.default_peer_env())
TINY = {
    "removal_curve.py": ["--n", "8", "--fractions", "3", "--batch-size", "16", "--repeats", "1"],
    "ffidelity.py": ["--n", "4", "--levels", "2", "--samples", "2", "--image-size", "8", "--batch-size", "16",
                     "--repeats", "1"],
    "saco.py": ["--n", "4", "--k", "3", "--image-size", "8", "--batch-size", "16", "--repeats", "1"],
    "trace.py": ["--n", "2", "--iterations", "3", "--pub-images", "1", "--pub-iterations", "2", "--cs-n", "1",
                 "--cs-edge", "2", "--image-size", "14", "--width", "4", "--batch-size", "64", "--repeats", "1"],
    "fewclass.py": ["--n", "1", "--ref-images", "1", "--image-size", "8", "--width", "4", "--batch-size", "256",
                    "--repeats", "1", "--threads", "1", "--loc-n", "2", "--loc-size", "32"],
    "reco_mege.py": ["--n", "20", "--k", "3", "--ref-samples", "10", "--mu-n", "2", "--subsets", "5", "--stab-n", "2",
                     "--neighbours", "3", "--image-size", "8", "--width", "4", "--batch-size", "16", "--repeats", "1",
                     "--threads", "1"],
    "quantus_peer.py": ["--n", "4", "--features-in-step", "256", "--subsets", "5", "--batch-size", "4", "--width", "4",
                        "--repeats", "1", "--threads", "1", *([] if PEER else ["--skip-peer"])],
    "engine_overhead.py": ["--n", "4", "--fractions", "3", "--batch-size", "8", "--repeats", "1"],
}
# --paper-scale with the per-image workload cut down: the paper's model and input size are built and run once. trace.py
# and fewclass.py are left out (about 20 s and 25 s of CPU even cut down: ResNet-18's 1,276 greedy inputs, and 804
# batch-1 calls in the per-candidate loop); benchmarks/RESULTS.md gives their smoke commands.
PAPER_SMOKE = {
    "ffidelity.py": ["--n", "1", "--levels", "1", "--samples", "1", "--repeats", "1", "--threads", "1"],
    "saco.py": ["--n", "1", "--k", "2", "--repeats", "1", "--threads", "1"],
    "reco_mege.py": ["--n", "20", "--ref-samples", "10", "--mu-n", "1", "--subsets", "3", "--stab-n", "1",
                     "--neighbours", "2", "--repeats", "1", "--threads", "1"],
}


def run(script: str, args: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_every_benchmark_is_listed():
    assert sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")) == sorted(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_and_reports_a_ratio(script):
    proc = run(script, TINY[script])
    assert "ratio" in proc.stdout
    if script == "quantus_peer.py" and PEER:   # the peer ran: both checks on both models must have passed
        assert proc.stdout.count("agree value for value: True") == 2
        assert proc.stdout.count("agrees value for value: True") == 2


def test_sweep_prints_one_row_per_batch_size():
    proc = run("removal_curve.py", [*TINY["removal_curve.py"], "--n", "40", "--sweep"])   # 120 inputs: 64, 120
    table = proc.stdout[proc.stdout.index("sweep removal_curve"):]
    rows = [line.split()[0] for line in table.splitlines()[2:] if line.split() and line.split()[0].isdigit()]
    assert rows == ["64", "120"]
    assert "sweep ratio t_bare(best) / t_metric(best)" in table


@pytest.mark.parametrize("script", sorted(PAPER_SMOKE))
def test_paper_scale_builds_and_runs(script):
    proc = run(script, ["--paper-scale", *PAPER_SMOKE[script]])
    assert "ratio" in proc.stdout


# ------------------------------------------------------------------------- the faithlab side against literal loops
def tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return fl.models.build("small_cnn", in_channels=1, n_classes=3, width=2).eval()


def literal_pixel_flipping(model, x, a, y, step):
    """Pixel flipping as the paper describes it: sort the pixels by relevance (most relevant first, ties by lower
    index), set ``step`` more of them to 0 at a time, one image at a time, and read p(y) after every step."""
    rows = []
    for i in range(x.shape[0]):
        img = x[i].clone().flatten()
        scores = a[i].flatten().tolist()
        order = sorted(range(len(scores)), key=lambda j: -scores[j])
        row = []
        for start in range(0, len(order), step):
            for j in order[start:start + step]:
                img[j] = 0.0
            with torch.no_grad():
                row.append(torch.softmax(model(img.view(1, *x.shape[1:])), dim=1)[0, y[i]].item())
        rows.append(row)
    return torch.tensor(rows)


def literal_mu_fidelity(model, x, a, y, masks):
    """μF on given subsets, one image and one subset at a time: numpy Pearson of (Σ a over S, p(y|x) − p(y|x_S=0))."""
    sums, drops, mus = [], [], []
    for i in range(x.shape[0]):
        with torch.no_grad():
            clean = torch.softmax(model(x[i:i + 1]), dim=1)[0, y[i]].item()
        s_row, d_row = [], []
        for mask in masks[i]:
            img = x[i].clone().flatten()
            img[mask] = 0.0
            with torch.no_grad():
                p = torch.softmax(model(img.view(1, *x.shape[1:])), dim=1)[0, y[i]].item()
            s_row.append(float(a[i].flatten()[mask].double().sum()))
            d_row.append(clean - p)
        sums.append(s_row)
        drops.append(d_row)
        mus.append(np.corrcoef(s_row, d_row)[0, 1])
    return torch.tensor(sums, dtype=torch.float64), torch.tensor(drops, dtype=torch.float64), torch.tensor(mus)


@pytest.mark.parametrize("step", [1, 4, 5])
def test_pixel_flipping_equals_a_literal_loop(step):
    model = tiny_model()
    g = torch.Generator().manual_seed(1)
    x, a = torch.randn(3, 1, 6, 6, generator=g), torch.randn(3, 1, 6, 6, generator=g)
    a[0, 0, 0, :2] = a[0, 0, 1, 0]             # ties: both sides must put the lower pixel index first
    y = torch.tensor([0, 1, 2])
    ours = quantus_peer.faithlab_pixel_flipping(model, x, a, y, step, batch_size=7)
    ref = literal_pixel_flipping(model, x, a, y, step)
    assert ours.shape == (3, -(-36 // step))
    assert ours.std() > 1e-3                    # a real curve, not a constant
    torch.testing.assert_close(ours, ref)


def test_mu_fidelity_on_given_subsets_equals_a_literal_loop():
    model = tiny_model()
    g = torch.Generator().manual_seed(2)
    x, a = torch.randn(3, 1, 6, 6, generator=g), torch.randn(3, 1, 6, 6, generator=g)
    y = torch.tensor([2, 0, 1])
    indices = torch.stack([torch.stack([torch.randperm(36, generator=g)[:8] for _ in range(6)]) for _ in range(3)])
    masks = quantus_peer.indices_to_masks(indices, 36)
    assert bool((masks.sum(-1) == 8).all())
    d = quantus_peer.faithlab_mu_fidelity_on(masks, model, x, a, y, batch_size=4)
    sums, drops, mus = literal_mu_fidelity(model, x, a, y, masks)
    torch.testing.assert_close(d["sums"], sums)
    torch.testing.assert_close(d["drops"], drops, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(d["mu_f"].double(), mus.double(), rtol=1e-4, atol=1e-5)
    assert bool(d["mu_f"].isfinite().all())


def test_broken_ties_keep_the_order():
    a = torch.tensor([[[[1.0, 3.0, 3.0, 2.0, 3.0, 0.5]]]])
    out, changed = quantus_peer.untied(a)
    assert changed == 2
    assert out.flatten().unique().numel() == 6
    assert torch.argsort(-out.flatten()).tolist() == [1, 2, 4, 3, 0, 5]   # ties kept in index order

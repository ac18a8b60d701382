"""The benchmark scripts run (tiny sizes, one repeat) and check their own results; no timing is asserted here.

The Quantus peer benchmark runs its Quantus side only where the peer environment already exists (default
``~/.cache/faithlab-bench/quantus-0.6`` or ``$FAITHLAB_PEER_ENV``; making it downloads Quantus): then its
value-for-value agreement checks must pass. Independently of Quantus, its faithlab side is checked here against
plain-torch literal ports of pixel flipping and of μF on given subsets (slow, obvious loops). The TorchCAM peer
likewise (``~/.cache/faithlab-bench/torchcam-0.5`` or ``$FAITHLAB_TORCHCAM_ENV``): its faithlab side is checked against
a literal port of TorchCAM 0.5's deletion/insertion algorithm, one sample and one point at a time. The ROAD peer
(pytorch-grad-cam, ``~/.cache/faithlab-bench/grad-cam-1.5.7`` or ``$FAITHLAB_GRADCAM_ENV``) too: its agreement checks
run where that environment exists; its pixel counts and masks are checked here against grad-cam's percentile rule.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import faithlab as fl

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))
import quantus_peer  # noqa: E402
import road_peer  # noqa: E402
import torchcam_peer  # noqa: E402

PEER = quantus_peer.peer_env_ready(quantus_peer.default_peer_env())
TORCHCAM = torchcam_peer.peer_env_ready(torchcam_peer.default_peer_env())
GRADCAM = road_peer.peer_env_ready(road_peer.default_peer_env())
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
    "library_overhead.py": ["--n", "2", "--batch-size", "64", "--repeats", "1", "--threads", "1"],
    "torchcam_peer.py": ["--n", "2", "--steps", "3", "--models", "small_cnn", "--width", "4", "--bare-sizes", "8",
                         "--repeats", "1", "--threads", "1", *([] if TORCHCAM else ["--skip-peer"])],
    "road_peer.py": ["--n", "2", "--models", "small_cnn", "--width", "4", "--bare-sizes", "8", "--repeats", "1",
                     "--threads", "1", *([] if GRADCAM else ["--skip-peer"])],
    "autobatch_sweep.py": ["--quick", "--models", "small_cnn", "--sizes", "16", "--threads", "1"],
    "replica_training.py": ["--n", "128", "--epochs", "1", "--width", "4", "--size", "8", "--repeats", "1",
                            "--threads", "1"],
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


def run(script: str, args: list[str], *, expect: int = 0) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> args``, run in this process: ``runpy`` as ``__main__`` with ``sys.argv`` set and
    stdout/stderr captured, torch's thread count and global RNG state restored after. A new interpreter per script
    imported torch and faithlab again, about 3 s of CPU each for the 18 runs of this file. Asserts the exit status
    (``SystemExit``'s code, 0 when the script returns) is ``expect``."""
    out, err = io.StringIO(), io.StringIO()
    command, argv, threads = [str(BENCH / script), *args], sys.argv, torch.get_num_threads()
    code = 0
    sys.argv = command
    timing = sys.modules["_timing"]
    steady = timing.steady_allocator
    try:
        # --allocator steady (the default) would set this test process's malloc for good: a stand-in records it
        timing.steady_allocator = lambda: ALLOCATOR_CALLS.append(script) is None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), torch.random.fork_rng(devices=[]):
            runpy.run_path(str(BENCH / script), run_name="__main__")
    except SystemExit as exc:  # as the interpreter would: None is 0, a message goes to stderr with status 1
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            err.write(f"{exc.code}\n")
    finally:
        sys.argv = argv
        torch.set_num_threads(threads)
        timing.steady_allocator = steady
    proc = subprocess.CompletedProcess(command, code, out.getvalue(), err.getvalue())
    assert proc.returncode == expect, proc.stderr[-3000:]
    return proc


ALLOCATOR_CALLS: list[str] = []


def test_the_benchmarks_time_on_a_steady_heap_unless_told_otherwise():
    """The default --allocator steady asks for glibc's steady heap before timing (benchmarks/_timing.py); 'system'
    leaves malloc alone."""
    ALLOCATOR_CALLS.clear()
    steady = run("library_overhead.py", [*TINY["library_overhead.py"], "--only", "removal"])
    system = run("library_overhead.py", [*TINY["library_overhead.py"], "--only", "removal", "--allocator", "system"])
    assert ALLOCATOR_CALLS == ["library_overhead.py"]
    assert "host allocator: steady" in steady.stdout and "host allocator" not in system.stdout


HEAP_PROBE = """
import resource, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "steady":
    import _heap
    assert _heap.steady_allocator()
def faults_of_a_fresh_buffer():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffer = bytearray(48 << 20)  # zero-filled: every page touched
    del buffer
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
faults_of_a_fresh_buffer()
print(faults_of_a_fresh_buffer())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_steady_heap_gives_a_freed_buffer_back_without_page_faults():
    """_heap.steady_allocator, in a fresh interpreter: a 48 MiB buffer allocated again after being freed faults in
    almost no page, where glibc's default heap maps it anew and faults in all 12,288 of them."""
    faults = {mode: int(subprocess.run([sys.executable, "-c", HEAP_PROBE, str(BENCH), mode], capture_output=True,
                                       text=True, check=True).stdout) for mode in ("steady", "system")}
    assert faults["steady"] < 1000 < 10_000 < faults["system"], faults


# scripts that make committed reference files (no timing, no "ratio"): run with --check, which writes nothing
REFERENCES = {"road_ties_reference.py": ["--check"]}


def test_every_benchmark_is_listed():
    assert sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")) == sorted([*TINY, *REFERENCES])


@pytest.mark.parametrize("script", sorted(REFERENCES))
def test_reference_scripts_check_their_committed_files(script):
    """The committed file follows the peer's rule (numpy); where the peer environment is there, it is also what a
    fresh peer run gives (road_ties_reference.py: grad-cam 1.5.7)."""
    proc = run(script, REFERENCES[script])
    assert "follow grad-cam's rule (numpy): True" in proc.stdout
    if GRADCAM:
        assert "equals a fresh grad-cam 1.5.7 run: True" in proc.stdout
    else:
        assert "not recomputed with grad-cam" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_and_reports_a_ratio(script):
    proc = run(script, TINY[script])
    assert "ratio" in proc.stdout
    if script == "quantus_peer.py" and PEER:   # the peer ran: both checks on both models must have passed
        assert proc.stdout.count("agree value for value: True") == 2
        assert proc.stdout.count("agrees value for value: True") == 2
    if script == "torchcam_peer.py" and TORCHCAM:   # the peer ran: the curves must have agreed
        assert proc.stdout.count("TorchCAM's classes = our predictions; fractions equal; curves and AUCs") == 1
    if script == "road_peer.py" and GRADCAM:   # the peer ran: masks, imputation and scores must have agreed
        assert proc.stdout.count("masks equal pixel for pixel: True") == 1
        assert proc.stdout.count("agreement (a) imputation") == 1 and proc.stdout.count("agreement (b) ROAD") == 1


def test_torchcam_peer_takes_auto_for_our_side():
    """--auto runs our side at batch_size="auto" (TorchCAM stays at its 32), agreement still checked when the peer
    environment is there; --auto with --batch-size is refused."""
    proc = run("torchcam_peer.py", [*TINY["torchcam_peer.py"], "--auto"])
    assert "batch size: faithlab auto, TorchCAM 32" in proc.stdout and "ratio" in proc.stdout
    if TORCHCAM:
        assert proc.stdout.count("TorchCAM's classes = our predictions; fractions equal; curves and AUCs") == 1
    bad = run("torchcam_peer.py", ["--auto", "--batch-size", "8"], expect=2)
    assert "--auto and --batch-size" in bad.stderr


def test_sweep_prints_one_row_per_batch_size():
    proc = run("removal_curve.py", [*TINY["removal_curve.py"], "--n", "40", "--sweep"])   # 120 inputs: 64, 120
    table = proc.stdout[proc.stdout.index("sweep removal_curve"):]
    rows = [line.split()[0] for line in table.splitlines()[2:] if line.split() and line.split()[0].isdigit()]
    assert rows == ["64", "120"]
    assert "sweep ratio t_bare(best) / t_metric(best)" in table


def test_autobatch_sweep_table_and_auto_choice(capsys):
    """The sweep's quick run in-process: the Markdown table has its columns, the best fixed size is the fastest of
    the ladder's, the ratios are the times', auto's recorded chunks carry exactly the B·F inputs, and the caller's
    thread count and global RNG state survive."""
    import autobatch_sweep

    threads = torch.get_num_threads()
    other = 2 if threads == 1 else 1                                  # the cell must change the count...
    rng = torch.get_rng_state()
    rows = autobatch_sweep.main(["--quick", "--models", "small_cnn", "--sizes", "16", "--threads", str(other)])
    assert torch.get_num_threads() == threads                         # ...and main must restore it
    assert torch.equal(torch.get_rng_state(), rng)                    # the models' seeded init forks the RNG
    lines = capsys.readouterr().out.splitlines()
    header = lines.index("| " + " | ".join(autobatch_sweep.COLUMNS) + " |")
    table = [line for line in lines[header + 2:] if line.startswith("| ")]
    assert len(rows) == len(table) == 1
    assert len(table[0].strip("|").split(" | ")) == len(autobatch_sweep.COLUMNS)
    assert any(line.startswith("worst ratio auto / best fixed over 1 cells") for line in lines)
    row = rows[0]
    assert (row["model"], row["px"], row["threads"], row["inputs"]) == ("small_cnn", 16, other, 4 * 21)
    fixed = {int(b): float(t) for b, t in (pair.split(":") for pair in row["fixed_s_by_bs"].split())}
    assert sorted(fixed) == [16, 64, 84]       # the quick ladder and the default (512 here), clipped to 84 inputs
    assert fixed[row["best_fixed_bs"]] == min(fixed.values())
    assert row["ratio_cached"] == pytest.approx(row["t_auto_cached_s"] / row["t_best_fixed_s"])
    assert row["over_first"] == (row["ratio_first"] > autobatch_sweep.LIMIT)
    chunks = {int(c): int(k) for c, k in (pair.split("x") for pair in row["auto_chunks"].split())}
    assert sum(c * k for c, k in chunks.items()) == row["inputs"]     # auto ran B·F inputs, no more
    assert isinstance(row["auto_bs"], int) and row["auto_bs"] in chunks
    assert isinstance(row["auto_resolve"], int) and row["auto_resolve"] > 0
    # the default (None: autobatch.default_batch_size, 512 for this model at 16 px) is always timed: its column is
    # the ladder's time at min(default, B·F) = 84 over the best
    model = autobatch_sweep.build_model("small_cnn", 16, torch.device("cpu"))
    assert autobatch_sweep.DEFAULT is None and row["default_bs"] == fl.perturb.autobatch.default_batch_size(
        model, torch.zeros(1, 3, 16, 16)) == 512
    assert autobatch_sweep.default_ratio(row) == pytest.approx(fixed[84] / row["t_best_fixed_s"])


def test_autobatch_sweep_reprints_its_csv(tmp_path, capsys):
    """--from-csv gives back the table and summary the timed run printed, from the CSV alone; with the default in
    the ladder (the default size, clipped to the 84 inputs) the "default / best" column is its time over the best."""
    import autobatch_sweep

    path = tmp_path / "sweep.csv"
    rows = autobatch_sweep.main(["--quick", "--models", "small_cnn", "--sizes", "16", "--ladder", "16", "256",
                                 "--csv", str(path)])
    fixed = {int(b): float(t) for b, t in (pair.split(":") for pair in rows[0]["fixed_s_by_bs"].split())}
    assert autobatch_sweep.default_ratio(rows[0]) == pytest.approx(fixed[84] / rows[0]["t_best_fixed_s"])
    printed = capsys.readouterr().out
    again = autobatch_sweep.main(["--from-csv", str(path)])
    reprinted = capsys.readouterr().out
    assert [r["model"] for r in again] == [r["model"] for r in rows]
    table = lambda text: [line for line in text.splitlines() if line.startswith("| ")]  # noqa: E731
    assert table(reprinted) == table(printed) and len(table(printed)) == 2  # the header and the cell
    assert autobatch_sweep.summary(again) == autobatch_sweep.summary(rows) in reprinted
    assert "default (autobatch.default_batch_size) / best fixed" in reprinted


@pytest.mark.slow
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


# ------------------------------------------------------------------- the TorchCAM peer's faithlab side, literally
def literal_torchcam_deletion_insertion(model, x, cam, steps):
    """TorchCAM 0.5's ``DeletionInsertionMetric`` as its source reads, one sample and one point at a time: the class
    is the argmax of softmax(model(x)); positions ranked by descending CAM with a stable sort (ties: lower index
    first); counts 0, s, 2s, … below P, then P, s = ceil(P/steps); deletion sets the first k positions (all channels)
    to the zero baseline, insertion keeps only them from x; p(class) at every count; AUC by the trapezoid rule over
    counts/P (in float64 here)."""
    _, _, h, w = x.shape
    n = h * w
    step = -(-n // steps)
    counts = list(range(0, n, step)) + [n]
    dels, inss, d_auc, i_auc = [], [], [], []
    for i in range(x.shape[0]):
        with torch.no_grad():
            cls = int(torch.softmax(model(x[i:i + 1]), dim=-1)[0].argmax())
        values = cam[i].flatten().tolist()
        order = sorted(range(n), key=lambda j: -values[j])        # Python's sort is stable
        rows = {"deletion": [], "insertion": []}
        for k in counts:
            first = torch.zeros(n, dtype=torch.bool)
            first[order[:k]] = True
            for kind, keep in (("deletion", ~first), ("insertion", first)):
                img = torch.where(keep.view(1, h, w), x[i], torch.zeros(()))
                with torch.no_grad():
                    rows[kind].append(torch.softmax(model(img[None]), dim=-1)[0, cls].item())
        area = lambda c: sum((c[j] + c[j + 1]) / 2 * (counts[j + 1] - counts[j]) / n  # noqa: E731
                             for j in range(len(c) - 1))
        dels.append(rows["deletion"])
        inss.append(rows["insertion"])
        d_auc.append(area(rows["deletion"]))
        i_auc.append(area(rows["insertion"]))
    return (torch.tensor(counts, dtype=torch.float64) / n, torch.tensor(dels), torch.tensor(inss),
            torch.tensor(d_auc, dtype=torch.float64), torch.tensor(i_auc, dtype=torch.float64))


@pytest.mark.parametrize("steps", [5, 64])
def test_torchcam_side_of_faithlab_equals_a_literal_loop(steps):
    torch.manual_seed(0)
    model = fl.models.build("small_cnn", in_channels=3, n_classes=3, width=4).eval()
    with torch.no_grad():
        model.fc.weight.mul_(30)                 # sharper logits: curves that move when pixels are removed
    g = torch.Generator().manual_seed(3)
    x, cam = torch.randn(2, 3, 8, 8, generator=g), torch.randn(2, 1, 8, 8, generator=g)
    cam[0, 0, 0, :3] = cam[0, 0, 2, 5]           # ties: both must put the lower position first
    ours = torchcam_peer.faithlab_deletion_insertion(model, x, cam, steps, batch_size=5)
    fractions, deletion, insertion, d_auc, i_auc = literal_torchcam_deletion_insertion(model, x, cam[:, 0], steps)
    assert deletion.shape == (2, 6 if steps == 5 else 65)
    assert deletion.std() > 1e-3 and insertion.std() > 1e-3     # real curves, not constants
    torch.testing.assert_close(ours["fractions"], fractions, rtol=0, atol=0)
    torch.testing.assert_close(ours["deletion"], deletion)
    torch.testing.assert_close(ours["insertion"], insertion)
    torch.testing.assert_close(ours["deletion_auc"].double(), d_auc, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(ours["insertion_auc"].double(), i_auc, rtol=1e-5, atol=1e-7)
    # the library's default batch size gives the same curves (it is not passed)
    default = torchcam_peer.faithlab_deletion_insertion(model, x, cam, steps)
    torch.testing.assert_close(default["deletion"], ours["deletion"])


@pytest.mark.parametrize(("p", "steps", "counts"), [
    (10, 3, [0, 4, 8, 10]),
    (10, 20, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
    (64, 5, [0, 13, 26, 39, 52, 64]),
    (7, 1, [0, 7]),
    (4096, 20, [205 * i for i in range(20)] + [4096]),
])
def test_torchcam_counts_are_torchcams(p, steps, counts):
    assert torchcam_peer.torchcam_counts(p, steps) == counts
    f = torchcam_peer.torchcam_fractions(p, steps)
    assert f.dtype == torch.float64 and torch.round(f * p).long().tolist() == counts
    # float32 fractions are TorchCAM's float32(count) / P exactly
    assert torch.equal(f.float(), torch.tensor(counts, dtype=torch.float32).div_(p))


@pytest.mark.parametrize(("p", "steps", "name"), [(0, 3, "n_positions"), (10, 0, "steps"), (10, 2.0, "steps")])
def test_torchcam_counts_reject_bad_arguments(p, steps, name):
    with pytest.raises(ValueError, match=name):
        torchcam_peer.torchcam_counts(p, steps)


def test_road_peer_counts_and_masks_are_gradcams():
    """The ROAD peer's pixel counts are pytorch-grad-cam's rule (``cam < np.percentile(cam, p)`` kept) on maps of
    distinct values; the masks remove exactly those counts, MoRF the top and LeRF the bottom of the map, and the rank
    maps handed to grad-cam keep the order with no ties in cam or 1 − cam."""
    assert road_peer.gradcam_removed(4096) == [3686, 3277, 2867, 2458, 2048, 1639, 1229, 820, 410]
    g = np.random.default_rng(0)
    for n in (16, 100, 4096):
        cam = g.standard_normal(n).astype(np.float32)
        rule = [n - int((cam < np.percentile(cam, p)).sum()) for p in road_peer.PERCENTILES]
        assert road_peer.gradcam_removed(n) == rule
    maps = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    ranks = road_peer.pixel_ranks(maps)
    cams = road_peer.rank_cams(ranks).numpy()
    for cam, m in zip(cams, maps[:, 0].numpy()):
        assert np.unique(cam).size == cam.size and np.unique(1 - cam).size == cam.size
        assert (np.argsort(-cam, axis=None) == np.argsort(-m, axis=None)).all()
    removed = road_peer.gradcam_removed(64)
    keep = road_peer.keep_masks(ranks, removed)
    assert keep.shape == (2, 9, 3, 8, 8)
    assert ((~keep).sum(dim=(-2, -1)) == torch.tensor(removed)[None, :, None]).all()
    for j, c in enumerate(removed):
        for b in range(3):   # MoRF removes the c largest map values, LeRF the c smallest
            top = torch.argsort(maps[b].flatten(), descending=True)
            assert set((~keep[0, j, b]).flatten().nonzero().flatten().tolist()) == set(top[:c].tolist())
            assert set((~keep[1, j, b]).flatten().nonzero().flatten().tolist()) == set(top[64 - c:].tolist())

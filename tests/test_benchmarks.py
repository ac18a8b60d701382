"""The benchmark scripts run (tiny sizes, one repeat) and check their own results; no timing is asserted here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
TINY = {
    "removal_curve.py": ["--n", "8", "--fractions", "3", "--batch-size", "16", "--repeats", "1"],
    "ffidelity.py": ["--n", "4", "--levels", "2", "--samples", "2", "--image-size", "8", "--batch-size", "16",
                     "--repeats", "1"],
    "saco.py": ["--n", "4", "--k", "3", "--image-size", "8", "--batch-size", "16", "--repeats", "1"],
    "trace.py": ["--n", "2", "--iterations", "3", "--pub-images", "1", "--pub-iterations", "2", "--cs-n", "1",
                 "--cs-edge", "2", "--image-size", "14", "--width", "4", "--batch-size", "64", "--repeats", "1"],
    "fewclass.py": ["--n", "1", "--ref-images", "1", "--image-size", "8", "--width", "4", "--batch-size", "256",
                    "--repeats", "1", "--threads", "1"],
    "reco_mege.py": ["--n", "20", "--k", "3", "--ref-samples", "10", "--mu-n", "2", "--subsets", "5", "--stab-n", "2",
                     "--neighbours", "3", "--image-size", "8", "--width", "4", "--batch-size", "16", "--repeats", "1",
                     "--threads", "1"],
}


def test_every_benchmark_is_listed():
    assert sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")) == sorted(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_and_reports_a_ratio(script):
    proc = subprocess.run([sys.executable, str(BENCH / script), *TINY[script]], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ratio" in proc.stdout

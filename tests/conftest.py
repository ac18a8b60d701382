"""Shared pytest settings for a 2-core CI machine."""

from __future__ import annotations

import os

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


def torch_threads_for_tests() -> int:
    """The torch intra-op thread count of the test process: ``OMP_NUM_THREADS`` when the caller set it (so
    ``OMP_NUM_THREADS=4 make test`` runs every test at 4 threads, as a check that no outcome depends on the float
    summation order), else 1."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    """The tests use tiny tensors: one intra-op thread by default avoids oversubscribing the cores (notebook kernels
    and the book build run beside the test process)."""
    before = torch.get_num_threads()
    torch.set_num_threads(torch_threads_for_tests())
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config, items):
    """The files that hold a ``slow`` test run first, so that both workers finish together
    (tests/support/slow_first.py)."""
    from slow_first import slow_files_first

    slow_files_first(items)


def pytest_report_header(config):
    return f"torch intra-op threads in the test process: {torch_threads_for_tests()} (OMP_NUM_THREADS or 1)"

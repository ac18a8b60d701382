"""Shared pytest settings for a 2-core CI machine."""

from __future__ import annotations

import os

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The tests use tiny tensors: one intra-op thread avoids oversubscribing the cores (notebook kernels and the
    book build run beside the test process)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

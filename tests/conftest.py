"""Shared pytest settings: deterministic, single-threaded-enough torch for a 2-core CI machine."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

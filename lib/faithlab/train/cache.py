"""The training cache: weights are stored under ``faithlab.paths.cache_dir()/models/<key>.pt`` with ``key`` = sha256 of
the canonical JSON of everything that determines them (model, configuration, data key, augmentation keys, a digest
of the test set that picks the best epoch, the library version)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from torch.utils.data import Dataset

from faithlab import paths
from faithlab.train.batching import batches

__all__ = ["cache_key", "tensor_digest", "data_digest"]


def tensor_digest(t: torch.Tensor) -> str:
    """sha256 of a tensor's dtype, shape and bytes (for cache keys)."""
    flat = t.detach().cpu().contiguous().flatten()
    h = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def cache_key(payload: dict) -> str:
    """sha256 hex digest of the canonical JSON (sorted keys, no spaces) of ``payload``."""
    try:
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f"model_config, data_key and augment keys must be JSON-serialisable: {err}") from None
    return hashlib.sha256(text.encode()).hexdigest()


def cache_files(key: str, cache_dir: str | os.PathLike | None) -> tuple[Path, Path]:
    folder = (Path(cache_dir) if cache_dir is not None else paths.cache_dir()) / "models"
    return folder / f"{key}.pt", folder / f"{key}.json"


def data_digest(data: Dataset) -> str:
    """sha256 of every (x, y) of ``data`` in order (cache key of the test set that picks the best epoch); streamed
    in chunks, so a file-backed dataset is read once and never held whole."""
    h = hashlib.sha256()
    for _, xb, yb in batches(data, torch.arange(len(data)), 1024, torch.device("cpu")):
        for t in (xb, yb):
            h.update(f"{t.dtype}{tuple(t.shape[1:])}".encode())
            h.update(t.contiguous().flatten().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()

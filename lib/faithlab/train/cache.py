"""The training cache: weights are stored under ``faithlab.paths.cache_dir()/models/<key>.pt`` with ``key`` = sha256 of
the canonical JSON of everything that determines them (model, configuration, data key, augmentation keys, a digest
of the test set that picks the best epoch, the library version), beside ``<key>.json`` (the training history).

A cache never makes a run fail: an entry that cannot be read (a truncated, empty or foreign ``.pt``, a corrupt
``.json``, weights that do not fit the model) is reported with a warning naming the file, deleted and retrained.
Both files are written atomically (:func:`faithlab.paths.atomic_write`); the temporary files of a writer that was
killed are removed by the next write to the cache folder once they are an hour old."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn
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


@contextmanager
def training_lock(weights_file: Path | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<cache>/locks/<key>.lock`` for the entry ``weights_file`` (``<cache>/models/
    <key>.pt``; no lock when None, i.e. no cache).

    The system releases it when its holder dies, so a killed trainer never blocks the next one; the lock file is
    never deleted (a waiter on a deleted file's lock would not exclude a process that creates it anew).
    """
    if weights_file is None:
        yield
        return
    locks = weights_file.parent.parent / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / f"{weights_file.stem}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _check_state(state, model: nn.Module) -> None:
    """Raise ValueError unless ``state`` is a state dict with exactly the model's names and shapes.

    Checked before ``load_state_dict``, which copies the matching tensors before it complains about the others:
    a rejected entry must leave the freshly initialised model untouched, so that retraining it gives the weights
    a run without the cache would have given.
    """
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"not a state dict of tensors (a {type(state).__name__})")
    expected = model.state_dict()
    if set(state) != set(expected):
        diff = sorted(set(state) ^ set(expected))[:3]
        raise ValueError(f"its tensor names differ from the model's (e.g. {diff})")
    wrong = [k for k, v in expected.items() if tuple(state[k].shape) != tuple(v.shape)]
    if wrong:
        raise ValueError(f"its shapes differ from the model's for {wrong[:3]}")


def load_cached(model: nn.Module, weights_file: Path, history_file: Path) -> dict | None:
    """Load a cache entry's weights into ``model`` and return its history, or None when there is no usable entry.

    An unreadable entry is warned about (RuntimeWarning naming the file), deleted and None returned: the caller
    retrains and writes a new entry.
    """
    if not (weights_file.is_file() and history_file.is_file()):
        return None
    try:
        stamp = (os.stat(weights_file), os.stat(history_file))
    except FileNotFoundError:  # removed by another process since the check
        return None
    bad = weights_file
    try:
        state = torch.load(weights_file, map_location="cpu", weights_only=True)
        _check_state(state, model)
        bad = history_file
        history = json.loads(history_file.read_text())
        if not isinstance(history, dict):
            raise ValueError(f"expected a JSON object, found a {type(history).__name__}")
    # Every way a cache file can be damaged: truncated zip (RuntimeError), empty file (EOFError), foreign pickle
    # (pickle.UnpicklingError from the weights-only loader), unreadable file (OSError), bad JSON or UTF-8 and
    # weights of another shape (ValueError). A cache must never be the reason a run fails, so anything else is
    # treated the same way; KeyboardInterrupt and SystemExit are not Exceptions and still stop the run.
    except Exception as err:  # noqa: BLE001 (see above)
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        warnings.warn(
            f"training cache entry {bad} is unusable ({type(err).__name__}: {reason}); deleting {weights_file.name} "
            f"and {history_file.name} and retraining",
            RuntimeWarning,
            stacklevel=4,  # the user's call of fit/finetune
        )
        _discard(weights_file, history_file, stamp)
        return None
    model.load_state_dict(state)
    return history


def _discard(weights_file: Path, history_file: Path, stamp: tuple[os.stat_result, os.stat_result]) -> None:
    """Delete a rejected entry, unless another process has replaced a file since it was read: its new version is a
    complete one (written atomically) and is left in place."""
    for path, before in zip((weights_file, history_file), stamp):
        try:
            now = os.stat(path)
            if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                path.unlink()
        except FileNotFoundError:
            continue


def save_cached(state: dict, history: dict, weights_file: Path, history_file: Path) -> None:
    """Write a cache entry: the weights first, then the history (an entry counts only when both exist)."""
    # The only moment a process writes to the cache folder: the natural place to clear what killed writers left.
    paths.remove_stale_tmp(weights_file.parent)
    paths.atomic_write(weights_file, lambda tmp: torch.save(state, tmp))
    paths.atomic_write(history_file, lambda tmp: tmp.write_text(json.dumps(history, indent=1)))


def data_digest(data: Dataset) -> str:
    """sha256 of every (x, y) of ``data`` in order (cache key of the test set that picks the best epoch); streamed
    in chunks, so a file-backed dataset is read once and never held whole."""
    h = hashlib.sha256()
    for _, xb, yb in batches(data, torch.arange(len(data)), 1024, torch.device("cpu")):
        for t in (xb, yb):
            h.update(f"{t.dtype}{tuple(t.shape[1:])}".encode())
            h.update(t.contiguous().flatten().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()

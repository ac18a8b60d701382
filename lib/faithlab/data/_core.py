"""The dataset container, seeded index utilities (splits, k folds, subsets, label switching) and materialisation."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from faithlab import _validate

SPLITS = ("train", "test")


def generator(seed: int, *stream: str) -> torch.Generator:
    """A CPU ``torch.Generator`` for the named random stream of ``seed``.

    Streams are derived with numpy's ``SeedSequence`` from ``(seed, crc32(name), ...)``, so two streams of one seed
    (e.g. colours of the train split and of the test split) are independent. Draws happen on the CPU; move the
    results with ``.to(device)`` so that data never depends on the device.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    entropy = [seed, *(zlib.crc32(s.encode()) for s in stream)]
    state = np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state))


def check_split(split: str, allowed: Sequence[str] = SPLITS) -> str:
    """Raise unless ``split`` is one of ``allowed``."""
    if split not in allowed:
        raise ValueError(f"split must be one of {list(allowed)}, got {split!r}")
    return split


def floor_count(fraction: float, n: int) -> int:
    """⌊fraction·n⌋, robust to floating error (0.3·10 counts 3)."""
    return int(np.floor(fraction * n + 1e-9))


class TensorData(Dataset):
    """An in-memory dataset of tensors with optional ground truth; ``data[i]`` is ``(x[i], y[i])``.

    Attributes:

    - x: (N, ...) inputs — images (N, C, H, W) normalised, series (N, T, C), tokens (N, L) int64.
    - y: (N,) int64 labels in ``0..n_classes-1``.
    - mask: optional (N, H, W) / (N, T) / (N, L) bool ground-truth relevant features (no channel axis).
    - info: dict with at least ``name``, ``n_classes``, ``class_names``, ``mean``, ``std`` (per channel, as used
      to normalise; None where nothing was normalised) and the generator's parameters.
    - extras: dict of further per-sample tensors (first dim N), e.g. ``boxes``; also readable as attributes
      (``data.boxes``). ``subset`` and ``to`` carry them along.
    """

    def __init__(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        mask: torch.Tensor | None = None,
        info: dict[str, Any] | None = None,
        extras: dict[str, torch.Tensor] | None = None,
    ) -> None:
        _validate.tensor(x, "x")
        _validate.tensor(y, "y", ndim=1)
        if y.dtype != torch.int64:
            raise TypeError(f"y must be an int64 tensor, got dtype {y.dtype}")
        _validate.batch_match(x, y, "x", "y")
        per_sample = dict(extras or {})
        if mask is not None:
            _validate.tensor(mask, "mask")
            if mask.dtype != torch.bool:
                raise TypeError(f"mask must be a bool tensor, got dtype {mask.dtype}")
            _validate.batch_match(x, mask, "x", "mask")
        for key, value in per_sample.items():
            _validate.tensor(value, f"extras[{key!r}]")
            _validate.batch_match(x, value, "x", f"extras[{key!r}]")
        self.x, self.y, self.mask = x, y, mask
        self.info: dict[str, Any] = dict(info or {})
        self.extras = per_sample

    def __len__(self) -> int:
        return self.x.shape[0]

    def __getitem__(self, index):
        return self.x[index], self.y[index]

    def __getattr__(self, name: str):
        extras = self.__dict__.get("extras")
        if extras is not None and name in extras:
            return extras[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def n_classes(self) -> int:
        """``info["n_classes"]``."""
        return int(self.info["n_classes"])

    def subset(self, indices: torch.Tensor | Sequence[int]) -> TensorData:
        """A new TensorData holding the rows ``indices`` (int positions or a bool row mask); info is copied."""
        idx = indices if isinstance(indices, torch.Tensor) else torch.as_tensor(indices, device="cpu")
        if idx.is_floating_point() and idx.numel() > 0:
            raise TypeError(f"indices must be integer positions or a bool mask, got dtype {idx.dtype}")
        if idx.dtype == torch.bool:
            if idx.shape != (len(self),):
                raise ValueError(f"indices as a bool mask must have shape ({len(self)},), got {tuple(idx.shape)}")
            idx = idx.nonzero().flatten()
        if idx.ndim != 1 or idx.numel() == 0:
            raise ValueError(f"indices must be a non-empty 1-D sequence of positions, got shape {tuple(idx.shape)}")
        idx = idx.long()
        return self._map(lambda t: t[idx.to(t.device)])

    def to(self, device: torch.device | str) -> TensorData:
        """A new TensorData with every tensor on ``device``."""
        return self._map(lambda t: t.to(device))

    def _map(self, fn) -> TensorData:
        """Apply ``fn`` to every per-sample tensor; info is copied."""
        mask = None if self.mask is None else fn(self.mask)
        return TensorData(fn(self.x), fn(self.y), mask, dict(self.info), {k: fn(v) for k, v in self.extras.items()})

    def __repr__(self) -> str:
        mask = "" if self.mask is None else f", mask={tuple(self.mask.shape)}"
        extras = "".join(f", {k}={tuple(v.shape)}" for k, v in self.extras.items())
        name = self.info.get("name", "?")
        return f"TensorData({name}: x={tuple(self.x.shape)}, y={tuple(self.y.shape)}{mask}{extras})"


def split_indices(
    n: int, *, seed: int = 0, test_fraction: float = 0.2, labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Deterministic random train/test split of ``range(n)``.

    Without ``labels`` the test part has round(test_fraction·n) elements (half rounded up); with ``labels`` (n,)
    the split is stratified: each class c contributes round(test_fraction·n_c). Returns (train, test) sorted int64
    index tensors, disjoint and covering.
    """
    _validate.positive_int(n, "n")
    test_fraction = _validate.fraction(test_fraction, "test_fraction", closed_low=False)
    if test_fraction >= 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    perm = torch.randperm(n, generator=generator(seed, "split"), device="cpu")
    if labels is None:
        is_test = torch.arange(n, device="cpu") < int(np.floor(test_fraction * n + 0.5))
    else:
        labels = torch.as_tensor(labels, device="cpu")
        if labels.shape != (n,):
            raise ValueError(f"labels must have shape ({n},), got {tuple(labels.shape)}")
        lab = labels.long()[perm]
        order = torch.argsort(lab, stable=True)
        perm, lab = perm[order], lab[order]
        counts = torch.bincount(lab)
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(n, device="cpu") - starts[lab]
        is_test = rank < torch.floor(test_fraction * counts.double() + 0.5).long()[lab]
    train, test = perm[~is_test].sort().values, perm[is_test].sort().values
    if train.numel() == 0 or test.numel() == 0:
        raise ValueError(f"test_fraction={test_fraction} leaves an empty train or test part of n={n} elements")
    return train, test


def kfold_indices(n: int, k: int, *, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """k-fold cross-training blocks (ReCo/MeGe Algorithm 1, step 1): a random partition of ``range(n)``.

    Returns k pairs ``(train, block)`` of sorted int64 tensors: the blocks are disjoint, cover ``range(n)`` and
    differ in size by at most one; ``train`` is the complement of ``block``.
    """
    _validate.positive_int(n, "n")
    _validate.positive_int(k, "k")
    if not 2 <= k <= n:
        raise ValueError(f"k must lie in [2, n={n}], got {k}")
    perm = torch.randperm(n, generator=generator(seed, "kfold"), device="cpu")
    blocks = [b.sort().values for b in perm.tensor_split(k)]
    return [(torch.cat(blocks[:i] + blocks[i + 1 :]).sort().values, b) for i, b in enumerate(blocks)]


def fraction_subset(n: int, fraction: float, *, seed: int = 0) -> torch.Tensor:
    """Random ⌊fraction·n⌋ of ``range(n)`` (sorted int64), e.g. ReCo/MeGe "limited data" 75/50/25 % (spec §4.5)."""
    _validate.positive_int(n, "n")
    fraction = _validate.fraction(fraction, "fraction", closed_low=False)
    count = floor_count(fraction, n)
    if count == 0:
        raise ValueError(f"fraction={fraction} of n={n} selects no element")
    return torch.randperm(n, generator=generator(seed, "subset"), device="cpu")[:count].sort().values


def switch_labels(y: torch.Tensor, fraction: float, n_classes: int, *, seed: int = 0) -> torch.Tensor:
    """Label inversion (ReCo/MeGe spec §4.5): exactly ⌊fraction·N⌋ labels, chosen at random, are replaced by a
    class drawn uniformly among the n_classes − 1 *other* classes.

    Args: y (N,) int labels in [0, n_classes). Returns a new (N,) int64 tensor on y's device.
    """
    _validate.tensor(y, "y", ndim=1)
    if y.is_floating_point():
        raise TypeError(f"y must be an integer tensor, got dtype {y.dtype}")
    _validate.positive_int(n_classes, "n_classes")
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2 to switch labels, got {n_classes}")
    if int(y.min()) < 0 or int(y.max()) >= n_classes:
        low, high = int(y.min()), int(y.max())
        raise ValueError(f"y must hold labels in [0, n_classes={n_classes}), got range [{low}, {high}]")
    fraction = _validate.fraction(fraction, "fraction")
    g = generator(seed, "switch")
    n = y.shape[0]
    chosen = torch.randperm(n, generator=g, device="cpu")[: floor_count(fraction, n)]
    shift = torch.randint(1, n_classes, (chosen.numel(),), generator=g, device="cpu")
    out = y.detach().long().cpu().clone()
    out[chosen] = (out[chosen] + shift) % n_classes
    return out.to(y.device)


def to_tensors(dataset: Dataset, n: int | None = None, *, batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Materialise the first ``n`` items (all if None) of any map-style Dataset yielding (x, y, ...) as (x, y)
    tensors: x stacked (n, ...), y int64 (n,). TensorData is sliced directly."""
    size = len(dataset)  # type: ignore[arg-type]
    if size == 0:
        raise ValueError("dataset is empty")
    n = size if n is None else min(_validate.positive_int(n, "n"), size)
    if isinstance(dataset, TensorData):
        return dataset.x[:n], dataset.y[:n]
    loader = DataLoader(Subset(dataset, range(n)), batch_size=_validate.positive_int(batch_size, "batch_size"))
    xs, ys = [], []
    for batch in loader:
        xs.append(batch[0])
        y = batch[1]
        ys.append((y if isinstance(y, torch.Tensor) else torch.as_tensor(y, device="cpu")).long())
    return torch.cat(xs), torch.cat(ys)

"""Randomness keyed to the sample: a seed per sample derived from the caller's seed and the sample's global index,
and :class:`SampleSeeds`, a random source that draws one stream per sample. A metric that draws through it gives
every sample the same draws whatever batch, chunk or split of the data it arrives in."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab import _validate

__all__ = ["keyed_seed", "SampleSeeds", "sample_seeds", "sample_index"]

_MASK64 = (1 << 64) - 1


def _splitmix64(z: int) -> int:
    """One step of splitmix64 (Steele, Lea & Flood 2014): a bijection of 64-bit integers that scrambles every bit."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def keyed_seed(seed: int, *keys: int) -> int:
    """A generator seed in [0, 2**63) derived from an integer ``seed`` and integer ``keys`` (a global sample index, a
    draw number, ...) by splitmix64 mixing, so that randomness is keyed to the sample rather than to its position in
    a batch: the same (seed, keys) always give the same seed, and seeds that differ in any key give unrelated
    ``torch.Generator`` streams (nearby integers as seeds would not be unrelated after an additive key). Fits an
    int64 tensor. Plain Python integer arithmetic: the same on every platform and device."""
    z = _splitmix64(int(seed) & _MASK64)
    for k in keys:
        z = _splitmix64(z ^ _splitmix64(int(k) & _MASK64))
    return z >> 1


class SampleSeeds:
    """A random source with one stream per row, keyed by the row's seed (pass it where a ``generator`` goes).

    Draws go through :func:`faithlab.perturb.orders.uniform` (and the samplers and orders built on it) with a shape
    ``(rows, ...)``, rows = ``len(self)``. Draw number k (0, 1, … in the order the caller draws) of a row with seed
    s is ``torch.rand`` of the per-row shape from a CPU generator seeded with ``keyed_seed(s, k)``: it depends on
    the seed and on the sequence of draws (the same for every row), never on batch_size, on the row's position or
    on the other rows; rows with equal seeds get equal draws. A slice ``self[i:j]`` continues the streams of its
    rows. Draws are made on the CPU and moved to the requested device, so they do not depend on the device.

    seeds: ``(rows,)`` int64 on the CPU; draws: how many draws the rows have made so far.
    """

    def __init__(self, seeds: torch.Tensor, draws: int = 0) -> None:
        self.seeds, self.draws = seeds, draws

    def __len__(self) -> int:
        return self.seeds.shape[0]

    def __getitem__(self, rows: slice) -> SampleSeeds:
        return SampleSeeds(self.seeds[rows], self.draws)

    def __repr__(self) -> str:
        return f"SampleSeeds({len(self)} rows, {self.draws} draws)"

    def _next(self) -> int:
        self.draws += 1
        return self.draws - 1

    def uniform(self, shape: Sequence[int], device: torch.device | str | None = None) -> torch.Tensor:
        """Float64 U[0, 1) of ``shape`` = ``(rows, *per_row_shape)``, one block per distinct seed, moved to
        ``device``."""
        shape = tuple(shape)
        if not shape or shape[0] != len(self):
            raise RuntimeError(f"a draw of shape {shape} was asked of SampleSeeds for {len(self)} rows; every draw "
                               "must be one (rows, ...) block")
        k = self._next()
        if not len(self):
            return torch.empty(shape, dtype=torch.float64, device="cpu" if device is None else device)
        distinct, inverse = torch.unique(self.seeds, return_inverse=True)
        # torch has no vectorised keyed generator (one generator per tensor call), so one call per distinct seed;
        # the cost is one small call per sample and draw, beside the forward passes the draws feed
        block = torch.stack([torch.rand(shape[1:], generator=torch.Generator().manual_seed(keyed_seed(s, k)),
                                        dtype=torch.float64, device="cpu") for s in distinct.tolist()])
        return block.to(device)[inverse.to(device)]

    def repeat_interleave(self, n: int) -> SampleSeeds:
        """``n`` sub-streams per row, row j's copy c seeded with ``keyed_seed(s_j, k, c)`` (k: this draw), in the
        order of ``repeat_interleave(n)``: for draws over n copies of each row (a sample's sparsity levels, its
        orders, a random base run on n copies), unrelated as they would be from one generator. One draw."""
        k = self._next()
        distinct, inverse = torch.unique(self.seeds, return_inverse=True)
        sub = torch.tensor([[keyed_seed(s, k, c) for c in range(n)] for s in distinct.tolist()],
                           dtype=torch.int64, device="cpu").view(-1, n)
        return SampleSeeds(sub[inverse].flatten())


def sample_index(index: torch.Tensor | Sequence[int] | None, n: int, *, name: str = "sample_index") -> list[int]:
    """The global index of each of ``n`` samples (default 0 … n − 1) as Python ints, checked: an integer tensor or
    sequence of length n."""
    if index is None:
        return list(range(n))
    if not isinstance(index, torch.Tensor):
        if isinstance(index, (str, bytes)) or not isinstance(index, Sequence):
            raise TypeError(f"{name} must be an integer tensor or sequence (the global index of each sample), got "
                            f"{type(index).__name__}")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in index):
            raise TypeError(f"{name} must hold integers (the global index of each sample)")
        index = torch.tensor(list(index), dtype=torch.int64, device="cpu").reshape(-1)
    _validate.tensor(index, name, ndim=1)
    if index.is_floating_point() or index.is_complex() or index.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (the global index of each sample of x), got dtype "
                        f"{index.dtype}")
    if index.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) (one global index per sample of x), got shape "
                         f"{tuple(index.shape)}")
    return index.tolist()


def sample_seeds(generator: torch.Generator | int | None, index: torch.Tensor | Sequence[int] | None, n: int, *,
                 why: str = "", name: str = "generator", index_name: str = "sample_index") -> SampleSeeds:
    """:class:`SampleSeeds` for ``n`` samples: one root seed drawn from ``generator`` (a torch.Generator or an int
    seed), sample i seeded ``keyed_seed(root, index[i])`` with ``index`` its global index (default its position,
    0 … n − 1). Pass the global indices of a slice of the data (e.g. ``arange(b0, b1)``) and its samples get the
    draws they get in the whole."""
    idx = sample_index(index, n, name=index_name)
    g = _validate.generator(generator, name, why=why)
    root = int(torch.randint(0, 2**62, (1,), generator=g, device=g.device))
    return SampleSeeds(torch.tensor([keyed_seed(root, i) for i in idx], dtype=torch.int64, device="cpu"))

"""Randomness keyed to the sample, computed on the inputs' device: a seed per sample derived from the caller's seed
and the sample's global index, and :class:`SampleSeeds`, a random source that draws one stream per sample. A metric
that draws through it gives every sample the same draws whatever batch, chunk, split of the data or device it
arrives in.

The generator is counter-based: draw number k of a row with seed s, element e (its flat index within the row's
block) is a hash of (s, k, e), splitmix64's output function (Steele, Lea & Flood 2014) applied to the e-th state of
the splitmix64 sequence that starts at the row's key ``keyed_seed(s, k)``; a uniform is its top 53 bits, signed,
·2^-53 + 1/2, and :meth:`SampleSeeds.bits32` gives its two 32-bit halves. It is computed in int64 tensor arithmetic
(wrapping multiplication, logical shifts by masking), vectorised over every row and element on the inputs' device,
with no Python loop over samples and no copy from the host: the same bits on every device, for any batch, chunk or
width of the draw (element e of a row does not depend on how many elements are drawn beside it). torch's own
generators cannot do this: one ``torch.Generator`` per sample means one call per sample, on the CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from faithlab import _validate

__all__ = ["keyed_seed", "keyed_seeds", "SampleSeeds", "sample_seeds", "sample_index"]

_MASK64 = (1 << 64) - 1


def _signed(c: int) -> int:
    """A 64-bit constant as the int64 with the same bits."""
    return c - (1 << 64) if c >= 1 << 63 else c


_GOLDEN, _M1, _M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_S_GOLDEN, _S_M1, _S_M2 = _signed(_GOLDEN), _signed(_M1), _signed(_M2)
# elements hashed at once on the CPU: 2^16 int64 (512 KiB) stay in the cache through the hash's dozen passes, about
# 4x faster than one pass over a large draw; a GPU hashes a whole draw at once (up to _DEVICE_ELEMENTS: memory only)
_CPU_ELEMENTS, _DEVICE_ELEMENTS = 1 << 16, 1 << 26


def _splitmix64(z: int) -> int:
    """One step of splitmix64 (Steele, Lea & Flood 2014): a bijection of 64-bit integers that scrambles every bit."""
    z = (z + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


def keyed_seed(seed: int, *keys: int) -> int:
    """A generator seed in [0, 2**63) derived from an integer ``seed`` and integer ``keys`` (a global sample index, a
    draw number, ...) by splitmix64 mixing, so that randomness is keyed to the sample rather than to its position in
    a batch: the same (seed, keys) always give the same seed, and seeds that differ in any key give unrelated
    streams (nearby integers as seeds would not be unrelated after an additive key). Fits an int64 tensor. Plain
    Python integer arithmetic; :func:`keyed_seeds` computes the same on tensors."""
    z = _splitmix64(int(seed) & _MASK64)
    for k in keys:
        z = _splitmix64(z ^ _splitmix64(int(k) & _MASK64))
    return z >> 1


def _mix_(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's output function, in place on an int64 tensor: torch's int64 multiplication wraps modulo 2^64
    and its right shift is arithmetic, so the logical shifts mask the sign's copies away."""
    z.bitwise_xor_((z >> 30) & ((1 << 34) - 1)).mul_(_S_M1)
    z.bitwise_xor_((z >> 27) & ((1 << 37) - 1)).mul_(_S_M2)
    return z.bitwise_xor_((z >> 31) & ((1 << 33) - 1))


def _splitmix64_t(z: torch.Tensor | int, device: torch.device | str | None = None) -> torch.Tensor:
    """:func:`_splitmix64` of every element of an int64 tensor (or an int), as a new int64 tensor."""
    if not isinstance(z, torch.Tensor):
        z = torch.tensor(_signed(int(z) & _MASK64), dtype=torch.int64, device="cpu" if device is None else device)
    return _mix_(z.to(torch.int64) + _S_GOLDEN)


def keyed_seeds(seed: torch.Tensor | int, *keys: torch.Tensor | int) -> torch.Tensor:
    """:func:`keyed_seed` elementwise on tensors: ``seed`` and each key an int64 tensor (or an int; the shapes
    broadcast) → int64 seeds in [0, 2**63), bitwise equal to ``keyed_seed`` of the same integers, on the tensors'
    device. Keys are read as their 64-bit two's complement, as ``keyed_seed`` reads negative ints."""
    device = next((t.device for t in (seed, *keys) if isinstance(t, torch.Tensor)), None)
    if device is None:
        return torch.tensor(keyed_seed(int(seed), *(int(k) for k in keys)), dtype=torch.int64, device="cpu")
    # an int seed or key is mixed in Python and enters the tensor arithmetic as a scalar operand: no tensor is made
    # from host data on the device (a host-to-device copy per draw; SampleSeeds draws with an int draw number)
    z = _splitmix64(int(seed) & _MASK64) if not isinstance(seed, torch.Tensor) else _splitmix64_t(seed)
    for k in keys:
        h = _splitmix64(int(k) & _MASK64) if not isinstance(k, torch.Tensor) else _splitmix64_t(k)
        if isinstance(z, int) and isinstance(h, int):
            z = _splitmix64(z ^ h)
        else:
            z = _splitmix64_t(z ^ _signed(h) if isinstance(h, int) else h ^ _signed(z) if isinstance(z, int)
                              else z ^ h)
    return (z >> 1) & ((1 << 63) - 1)


def stream(keys: torch.Tensor, width: int, out: torch.Tensor, finish) -> torch.Tensor:
    """Fill ``out`` ``(rows, width)`` with ``finish(z)`` (None: z itself, ``out`` int64 and contiguous) of element e
    of each row's stream, z the int64 hash
    (splitmix64's output of the state ``keys[row] + (e + 1)·golden``). On the CPU the elements go in blocks that
    stay in the cache; the hash is elementwise, so the blocks change no bit."""
    rows = keys.shape[0]
    if not rows or not width:
        return out
    block = _CPU_ELEMENTS if keys.device.type == "cpu" else _DEVICE_ELEMENTS
    cols = min(width, block)
    steps = torch.arange(1, width + 1, dtype=torch.int64, device=keys.device).mul_(_S_GOLDEN)
    per = max(1, block // cols)  # rows per block
    direct = finish is None  # int64 hashes: made in place in out
    for r0 in range(0, rows, per):
        r1 = min(rows, r0 + per)
        for c0 in range(0, width, cols):
            c1 = min(width, c0 + cols)
            if direct:
                _mix_(torch.add(keys[r0:r1, None], steps[None, c0:c1], out=out[r0:r1, c0:c1]))
            else:
                out[r0:r1, c0:c1] = finish(_mix_(keys[r0:r1, None] + steps[None, c0:c1]))
    return out


def to_unit(z: torch.Tensor) -> torch.Tensor:
    """Int64 hashes as uniforms k·2^-53 ∈ [0, 1): their top 53 bits read as a signed integer (the arithmetic
    shift), · 2^-53 + 1/2 — every value of the grid once, one add fewer than masking the sign away."""
    return (z >> 11).double().mul_(2.0 ** -53).add_(0.5)


class SampleSeeds:
    """A random source with one stream per row, keyed by the row's seed (pass it where a ``generator`` goes).

    Draws go through :func:`faithlab.perturb.orders.uniform` (and the samplers and orders built on it) with a shape
    ``(rows, ...)``, rows = ``len(self)``. Draw number k (0, 1, … in the order the caller draws) of a row with seed
    s is the counter-based stream of ``keyed_seed(s, k)`` (see the module docstring), element e of the per-row
    block its e-th value in row-major order: it depends on the seed, on the sequence of draws (the same for every
    row) and on e, never on batch_size, on the row's position, on the other rows, on the device or on how many
    elements are drawn beside it; rows with equal seeds get equal draws. A slice ``self[i:j]`` continues the
    streams of its rows. The draws are made on the requested device.

    seeds: ``(rows,)`` int64 (any device); draws: how many draws the rows have made so far.
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

    def _check(self, shape: tuple[int, ...]) -> None:
        if not shape or shape[0] != len(self):
            raise RuntimeError(f"a draw of shape {shape} was asked of SampleSeeds for {len(self)} rows; every draw "
                               "must be one (rows, ...) block")

    def uniform(self, shape: Sequence[int], device: torch.device | str | None = None) -> torch.Tensor:
        """Float64 U[0, 1) of ``shape`` = ``(rows, *per_row_shape)`` on ``device`` (default the seeds'), one stream
        per row, in multiples of 2^-53."""
        shape = tuple(shape)
        self._check(shape)
        k = self._next()
        device = self.seeds.device if device is None else torch.device(device)
        out = torch.empty(shape, dtype=torch.float64, device=device)
        width = out[0].numel() if len(self) else 0
        if width:
            stream(keyed_seeds(self.seeds.to(device), k), width, out.view(len(self), width), to_unit)
        return out

    def bits32(self, shape: Sequence[int], device: torch.device | str | None = None) -> torch.Tensor:
        """Uniform random int32 (every bit pattern equally likely) of ``shape`` = ``(rows, *per_row_shape)`` on
        ``device``, one stream per row: element e is half e mod 2 (the low half first) of the stream's element
        e // 2, so one hash gives two values (a Bernoulli coin per unit costs half a hash)."""
        shape = tuple(shape)
        self._check(shape)
        k = self._next()
        device = self.seeds.device if device is None else torch.device(device)
        width = math.prod(shape[1:]) if len(self) else 0
        pairs = torch.empty(len(self), (width + 1) // 2, dtype=torch.int64, device=device)
        if width:
            stream(keyed_seeds(self.seeds.to(device), k), pairs.shape[1], pairs, None)
        # the halves of an int64 as two int32 in memory order: the low half first on a little-endian machine (the
        # CPUs and GPUs torch runs on); the same bits on every device
        return pairs.view(torch.int32)[:, :width].reshape(shape)

    def repeat_interleave(self, n: int) -> SampleSeeds:
        """``n`` sub-streams per row, row j's copy c seeded with ``keyed_seed(s_j, k, c)`` (k: this draw), in the
        order of ``repeat_interleave(n)``: for draws over n copies of each row (a sample's sparsity levels, its
        orders, a random base run on n copies), unrelated as they would be from one generator. One draw."""
        k = self._next()
        copies = torch.arange(n, dtype=torch.int64, device=self.seeds.device)
        return SampleSeeds(keyed_seeds(self.seeds[:, None], k, copies[None, :]).flatten())


def sample_index(index: torch.Tensor | Sequence[int] | None, n: int, *, name: str = "sample_index") -> list[int]:
    """The global index of each of ``n`` samples (default 0 … n − 1) as Python ints, checked: an integer tensor or
    sequence of length n."""
    return _index_tensor(index, n, name).tolist()


def _index_tensor(index: torch.Tensor | Sequence[int] | None, n: int, name: str) -> torch.Tensor:
    """:func:`sample_index` as an int64 tensor (on the index's device; the CPU for None or a sequence)."""
    if index is None:
        return torch.arange(n, dtype=torch.int64, device="cpu")
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
    return index.to(torch.int64)


def sample_seeds(generator: torch.Generator | int | None, index: torch.Tensor | Sequence[int] | None, n: int, *,
                 why: str = "", name: str = "generator", index_name: str = "sample_index",
                 device: torch.device | str | None = None) -> SampleSeeds:
    """:class:`SampleSeeds` for ``n`` samples: one root seed drawn from ``generator`` (a torch.Generator or an int
    seed), sample i seeded ``keyed_seed(root, index[i])`` with ``index`` its global index (default its position,
    0 … n − 1), the seeds computed on ``device`` (default the index's; the CPU). Pass the global indices of a slice
    of the data (e.g. ``arange(b0, b1)``) and its samples get the draws they get in the whole."""
    idx = _index_tensor(index, n, index_name)
    g = _validate.generator(generator, name, why=why)
    root = int(torch.randint(0, 2**62, (1,), generator=g, device=g.device))
    return SampleSeeds(keyed_seeds(root, idx.to(device) if device is not None else idx))

"""Removal orders: MoRF / LeRF / random permutations of units, their inverse (ranks) and top-k masks.

Randomness comes only from an explicit ``torch.Generator`` (or an int seed turned into a CPU one), or from a
:class:`~faithlab.perturb.keys.SampleSeeds` (one stream per row: keyed to the sample). A generator's numbers
are drawn on its device and then moved to the scores' device, so a CPU generator gives the same results whatever
the device of the inputs; a SampleSeeds computes its numbers on the scores' device, the same bits on every device.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab import _validate
from faithlab.perturb.keys import SampleSeeds

__all__ = ["ORDERS", "TIES", "order", "ranks", "top_masks", "check_informative"]

ORDERS = ("morf", "lerf", "random")
TIES = ("index", "random")


def random_source(generator: torch.Generator | SampleSeeds | int | None, name: str = "generator", *,
                  why: str = "") -> torch.Generator | SampleSeeds:
    """A :class:`SampleSeeds` as is, else ``_validate.generator`` (a torch.Generator, or an int seed → a CPU one)."""
    return generator if isinstance(generator, SampleSeeds) else _validate.generator(generator, name, why=why)


def uniform(shape: Sequence[int], generator: torch.Generator | SampleSeeds, device: torch.device) -> torch.Tensor:
    """Uniform [0, 1) float64 draws made on the generator's device, then moved to ``device``; a
    :class:`SampleSeeds` draws each row (first dim) from its own stream, on ``device``."""
    if isinstance(generator, SampleSeeds):
        return generator.uniform(shape, device)
    return torch.rand(tuple(shape), generator=generator, device=generator.device, dtype=torch.float64).to(device)


def order(scores: torch.Tensor, order: str = "morf", *, generator: torch.Generator | int | None = None,
          ties: str = "index") -> torch.Tensor:
    """Removal order of units → ``(B, n)`` int64 unit ids, first removed first.

    scores: ``(B, n)`` unit scores (``unit_scores``). order: ``"morf"`` most relevant first (descending),
    ``"lerf"`` least relevant first (ascending), ``"random"`` uniform random permutation (needs generator).
    ties: ``"index"`` equal scores are removed lower unit id first (both morf and lerf; TRACE §5.1) or
    ``"random"`` in a random order drawn from generator.
    """
    s = _validate.tensor(scores, "scores", ndim=2)
    _validate.finite(s, "scores")
    _validate.one_of(order, "order", ORDERS)
    _validate.one_of(ties, "ties", TIES)
    if order == "random":
        g = random_source(generator, why="for order='random'")
        return uniform(s.shape, g, s.device).argsort(dim=1)
    perm = None
    if ties == "random":
        perm = uniform(s.shape, random_source(generator, why="for ties='random'"), s.device).argsort(dim=1)
        s = s.gather(1, perm)
    idx = _stable_argsort(s, descending=order == "morf")
    return idx if perm is None else perm.gather(1, idx)


_KEY_BITS = 32  # an order-preserving integer key of a float32 value
_SORT_ELEMENTS = 1 << 15  # keys per flat sort at least: torch sorts ≥ 2^15 int64 keys ascending by radix, 3x
# faster than below; and blocks of 2^15 sort 1.5x faster than 2^18 keys at once (cache)
_MIN_SORT_ROWS = 16  # rows per flat sort at least, so that no Python loop runs per sample


def _stable_argsort(s: torch.Tensor, descending: bool) -> torch.Tensor:
    """``torch.sort(s, dim=1, descending=descending, stable=True).indices`` of scores ``(B, n)``, faster.

    A batched row sort on the CPU costs two to three times a flat sort of as many integers, so float32 (and exactly
    widened float16/bfloat16) scores become int64 keys ``row · 2^32 + (2^31 ± k)``, k an int32 in the order of the
    floats (-0.0 and 0.0 equal, as in the sort's comparisons), sorted flat and stably in blocks of rows of at
    least 2^15 keys (torch's radix sort); a block's positions are its rows' orders. Other dtypes (float64) use the
    row sort itself."""
    return _sorted(s, descending, None)


def order_ranks(scores: torch.Tensor, order: str, dtype: torch.dtype) -> torch.Tensor:
    """``ranks(order(scores, order))`` as ``dtype`` (which must hold 0..n-1 exactly), for ``"morf"``/``"lerf"``
    with ties by index: the sort's positions are scattered straight into ranks, the order itself never built."""
    s = _validate.tensor(scores, "scores", ndim=2)
    _validate.finite(s, "scores")
    _validate.one_of(order, "order", ORDERS[:2])
    return _sorted(s, order == "morf", dtype)


def _sorted(s: torch.Tensor, descending: bool, ranks_dtype: torch.dtype | None) -> torch.Tensor:
    """The stable order of every row of s (ranks_dtype None), or its ranks as ranks_dtype."""
    b, n = s.shape
    if s.dtype not in (torch.float32, torch.float16, torch.bfloat16) or n < 2:
        perm = torch.sort(s, dim=1, descending=descending, stable=True).indices
        return perm if ranks_dtype is None else ranks_as(perm, ranks_dtype)
    bits = s.float().view(torch.int32)
    sign = bits >> 31  # -1 for a set sign bit, else 0
    key = (bits ^ (sign & 0x7FFFFFFF)).sub_(sign).long()  # order-preserving; -0.0 → -1 → 0, as 0.0; |key| < 2^31
    rows = max(_MIN_SORT_ROWS, -(-_SORT_ELEMENTS // n))
    starts = list(range(0, b, rows))
    if len(starts) > 1 and b - starts[-1] < rows:
        starts.pop()  # a short last block joins the one before (stays above the radix threshold)
    out = torch.empty(b, n, dtype=torch.int64 if ranks_dtype is None else ranks_dtype, device=s.device)
    steps = None
    for i, r0 in enumerate(starts):
        r1 = starts[i + 1] if i + 1 < len(starts) else b
        block = key[r0:r1]
        row = torch.arange(block.shape[0], device=s.device)[:, None]
        offset = (row << _KEY_BITS) + (1 << (_KEY_BITS - 1))
        flat = (offset - block) if descending else block.add_(offset)  # rows never mix, ties keep unit order
        where = torch.sort(flat.flatten(), stable=True).indices  # position p of the block holds cell where[p]
        if ranks_dtype is None:
            torch.sub(where.view(block.shape), row * n, out=out[r0:r1])
            continue
        if steps is None or steps.numel() != where.numel():
            steps = torch.arange(n, dtype=ranks_dtype, device=s.device).repeat(block.shape[0])
        out[r0:r1].view(-1).scatter_(0, where, steps)  # the cell's position within its row
    return out


def ranks(perm: torch.Tensor) -> torch.Tensor:
    """Position of each unit in a removal order ``(B, n)`` (the inverse permutation per row; 0 = removed first)."""
    return ranks_as(perm, perm.dtype)


def ranks_as(perm: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """:func:`ranks` as ``dtype`` (a float dtype holds them exactly up to its mantissa: 2^24 for float32); a scatter
    of contiguous values of the output's own dtype, several times faster than of an expanded int64 arange."""
    steps = torch.arange(perm.shape[1], dtype=dtype, device=perm.device).repeat(perm.shape[0], 1)
    return torch.empty(perm.shape, dtype=dtype, device=perm.device).scatter_(1, perm, steps)


def top_masks(rank: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Masks of the first ``counts[l]`` units of an order → ``(B, L, n)`` bool.

    rank: ``(B, n)`` positions from :func:`ranks` (0 = first); counts: ``(L,)`` integer unit counts.
    """
    return rank[:, None, :] < counts.to(rank.device)[None, :, None]


def check_informative(counts: torch.Tensor | Sequence[int], n: int, name: str, value, *, removed=None) -> None:
    """Refuse a grid of removal levels that cannot tell one map from another: a ValueError naming ``name`` (the
    caller's argument, given as ``value``) when every level removes no unit or all ``n`` units of the order
    (``counts``: the units of each level taken from the order, e.g. round(f·n) for fraction f). A map orders the
    units, so at such a level every order removes the same set and the score is the same for every map.
    ``removed`` (optional, ``(L,)``): how many units a level then actually removes (F-Fidelity's random share of its
    candidates); a level that removes none is not informative either."""
    c = torch.as_tensor(counts, device="cpu").reshape(-1).long()  # on the CPU whatever the default device
    useful = (c > 0) & (c < n)
    if removed is not None:
        useful &= torch.as_tensor(removed, device="cpu").reshape(-1) > 0
    if c.numel() and not bool(useful.any()):
        shown = value.tolist() if isinstance(value, torch.Tensor) else value
        raise ValueError(f"{name}={shown} measures nothing on inputs of {n} units: every level removes "
                         f"{'no unit or every unit' if bool((c > 0).any()) else 'no unit'} of the order (counts "
                         f"{c.tolist()}), so the score is the same for every map; give a level f with "
                         f"0 < round(f·{n}) < {n}")

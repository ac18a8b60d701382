"""Removal orders: MoRF / LeRF / random permutations of units, their inverse (ranks) and top-k masks.

Randomness comes only from an explicit ``torch.Generator`` (or an int seed turned into a CPU one). Random numbers
are drawn on the generator's device and then moved to the scores' device, so a CPU generator gives the same
results whatever the device of the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab import _validate

__all__ = ["ORDERS", "TIES", "order", "ranks", "top_masks"]

ORDERS = ("morf", "lerf", "random")
TIES = ("index", "random")


def uniform(shape: Sequence[int], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """Uniform [0, 1) float64 draws made on the generator's device, then moved to ``device``."""
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
        g = _validate.generator(generator, why="for order='random'")
        return uniform(s.shape, g, s.device).argsort(dim=1)
    perm = None
    if ties == "random":
        perm = uniform(s.shape, _validate.generator(generator, why="for ties='random'"), s.device).argsort(dim=1)
        s = s.gather(1, perm)
    idx = torch.sort(s, dim=1, descending=order == "morf", stable=True).indices
    return idx if perm is None else perm.gather(1, idx)


def ranks(perm: torch.Tensor) -> torch.Tensor:
    """Position of each unit in a removal order ``(B, n)`` (the inverse permutation per row; 0 = removed first)."""
    steps = torch.arange(perm.shape[1], device=perm.device).expand_as(perm)
    return torch.empty_like(perm).scatter_(1, perm, steps)


def top_masks(rank: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Masks of the first ``counts[l]`` units of an order → ``(B, L, n)`` bool.

    rank: ``(B, n)`` positions from :func:`ranks` (0 = first); counts: ``(L,)`` integer unit counts.
    """
    return rank[:, None, :] < counts.to(rank.device)[None, :, None]

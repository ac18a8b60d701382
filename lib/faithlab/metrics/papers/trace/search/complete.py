"""TRACE's complete search (CS, Wang & Wang, spec §5.5): the output after deleting every subset of the t patches,
the bounds ΣCS-Mo ≤ ΣMoRF and ΣCS-Le ≥ ΣLeRF of any trajectory, for small t."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from faithlab.metrics.papers.trace.trajectories import setup
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["complete_search"]

_MAX_COMPLETE = 20


def complete_search(model: Callable, x: torch.Tensor, *, edge: int = 4, reference: Reference = "zero",
                    output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """Complete search (CS, spec §5.5): the output after deleting every subset of the t patches, reduced per
    subset size k → ``{"min": (B, t + 1), "max": (B, t + 1)}``.

    ``min[:, k]`` is the lowest output over all size-k deletions (CS-Mo: ΣCS-Mo ≤ ΣMoRF of any trajectory),
    ``max[:, k]`` the highest (CS-Le: ΣCS-Le ≥ ΣLeRF of any trajectory). All 2^t masked inputs per image go through
    the engine, ``batch_size`` at a time; t ≤ 20 (the paper uses t = 16, 65,536 inputs per image).
    """
    s = setup(model, x, edge, reference, output, target, batch_size)
    t = s.t
    if t > _MAX_COMPLETE:
        raise ValueError(f"complete search evaluates 2^t inputs per image; edge={edge} gives t={t} > "
                         f"{_MAX_COMPLETE}")
    dev = x.device
    subsets = torch.arange(2 ** t, device=dev)
    bits = (subsets[:, None] >> torch.arange(t, device=dev)) & 1 == 1  # (2^t, t)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        return bits[v0:v1].expand(b1 - b0, -1, -1)

    out = s.runner.masked(masks, n_variants=2 ** t)
    size = bits.sum(1).expand(x.shape[0], -1)
    init = torch.full((x.shape[0], t + 1), math.inf, dtype=out.dtype, device=dev)
    return {"min": init.scatter_reduce(1, size, out, "amin", include_self=False),
            "max": (-init).scatter_reduce(1, size, out, "amax", include_self=False)}

"""TRACE's random deletion test (Wang & Wang, Fig. 4, spec §5.6): deletion curves along uniformly random orders,
keyed to the sample."""

from __future__ import annotations

from collections.abc import Callable

import torch

from faithlab import _validate, perturb
from faithlab.metrics.papers.trace.trajectories import order_curves, setup
from faithlab.perturb import orders as _orders
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["random_deletion_curves"]


def random_deletion_curves(model: Callable, x: torch.Tensor, *, edge: int, n_orders: int,
                           generator: torch.Generator | int | None, reference: Reference = "zero",
                           output: Output = "prob", target: torch.Tensor | None = None,
                           batch_size: BatchSize = None, sample_index: torch.Tensor | None = None) -> torch.Tensor:
    """The random deletion test (Fig. 4, spec §5.6): deletion curves along ``n_orders`` uniformly random orders per
    image → ``(B, n_orders, t + 1)``; plot the mean against k/t for several ``edge`` values and references. The
    orders are keyed to the sample: image i's come from a stream keyed by a root seed drawn from ``generator`` and
    ``sample_index[i]`` (its global index, default its position)."""
    s = setup(model, x, edge, reference, output, target, batch_size)
    n_orders = _validate.positive_int(n_orders, "n_orders")
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the random orders")
    b = x.shape[0]
    perm = _orders.uniform((b, n_orders, s.t), seeds, x.device).reshape(b * n_orders, s.t).argsort(dim=1)
    rows = torch.arange(b, device=x.device).repeat_interleave(n_orders)
    return order_curves(model, x, s, output, perm, rows, batch_size).view(b, n_orders, s.t + 1)

"""TRACE-Greedy (Wang & Wang, spec §5.3): delete, step by step, the patch whose deletion leaves the highest
(``"le"``) or lowest (``"mo"``) output; exact for additive models, and the start of the other searches."""

from __future__ import annotations

from collections.abc import Callable

import torch

from faithlab import _validate
from faithlab.metrics.papers.trace.search.base import Search
from faithlab.metrics.papers.trace.trajectories import order_curves, outputs, Setup, setup
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["greedy"]


def greedy(model: Callable, x: torch.Tensor, *, edge: int, objective: str = "le", reference: Reference = "zero",
           output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = None) -> Search:
    """TRACE-Greedy (spec §5.3): from the full image, repeatedly delete the remaining patch whose deletion leaves
    the highest (``"le"``) or lowest (``"mo"``) output, ties by the smaller patch id.

    Each step evaluates every remaining patch of every image in one engine call (t(t+1)/2 − 1 inputs per image
    over the steps, plus the clean and the fully deleted image). Exact for a model whose target output is a
    monotone function of an additive score of the patches kept. For ``"mo"`` the greedy deletion order is rev(τ),
    so the returned trajectory is its flip. The other curve (MoRF for ``"le"``, LeRF for ``"mo"``) is evaluated too
    (t + 1 more inputs) for cross-tests.
    """
    _validate.one_of(objective, "objective", ("le", "mo"))
    s = setup(model, x, edge, reference, output, target, batch_size)
    return run_greedy(model, x, s, objective, output, batch_size, lambda n: None)


def run_greedy(model: Callable, x: torch.Tensor, s: Setup, objective: str, output: Output, batch_size: int,
            done: Callable[[int], None]) -> Search:
    """:func:`greedy` after its validation; ``done(n)`` is told the number of model inputs of every step."""
    b, t, dev = x.shape[0], s.t, x.device
    rows = torch.arange(b, device=dev)
    deleted = torch.zeros(b, t, dtype=torch.bool, device=dev)
    order = torch.empty(b, t, dtype=torch.int64, device=dev)
    start = outputs(model, x, s, output, deleted, None, batch_size)
    done(b)
    curve = torch.empty(b, t + 1, dtype=start.dtype, device=dev)
    curve[:, 0] = start
    passes = [b]
    for step in range(t - 1):
        remaining = (~deleted).nonzero()[:, 1].view(b, t - step)  # ascending patch ids

        def masks(b0: int, b1: int, v0: int, v1: int, remaining: torch.Tensor = remaining) -> torch.Tensor:
            m = deleted[b0:b1, None, :].expand(-1, v1 - v0, -1).clone()
            return m.scatter_(2, remaining[b0:b1, v0:v1, None], True)

        out = s.runner.masked(masks, n_variants=t - step)
        pick = out.argmax(1) if objective == "le" else out.argmin(1)  # first extremum = smaller patch id
        chosen = remaining.gather(1, pick[:, None]).squeeze(1)
        order[:, step] = chosen
        deleted[rows, chosen] = True
        curve[:, step + 1] = out.gather(1, pick[:, None]).squeeze(1)
        passes.append(passes[-1] + b * (t - step))
        done(b * (t - step))
    order[:, t - 1] = (~deleted).nonzero()[:, 1]
    curve[:, t] = outputs(model, x, s, output, torch.ones_like(deleted), None, batch_size)
    tau = order if objective == "le" else order.flip(1)
    other = order_curves(model, x, s, output, order.flip(1), None, batch_size)
    passes.append(passes[-1] + b * (t + 2))
    done(b * (t + 2))
    lerf, morf = (curve, other) if objective == "le" else (other, curve)
    return Search(tau, lerf, morf, torch.tensor(passes))

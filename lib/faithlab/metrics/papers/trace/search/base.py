"""What TRACE's searches share (Wang & Wang, spec §5.2): the objectives, :func:`objective_value`, the
:class:`Search` result every search returns, the swap move and the checks of their arguments.

The optimisation problems (the paper's definitions, not the released code's, whose ``'Le'``/``'Mo'`` labels are
swapped): ``"le"`` maximise ΣLeRF(τ); ``"mo"`` minimise ΣMoRF(τ); ``"le-mo"`` maximise ΣLeRF(τ) − ΣMoRF(τ).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from faithlab import _validate
from faithlab.metrics.papers.trace.trajectories import Setup, setup
from faithlab.perturb import Output
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.references import Reference

__all__ = ["OBJECTIVES", "Search", "objective_value"]

OBJECTIVES = ("le", "mo", "le-mo")
"""TRACE-Le (maximise ΣLeRF), TRACE-Mo (minimise ΣMoRF), TRACE-Le−Mo (maximise ΣLeRF − ΣMoRF)."""


@dataclass(frozen=True)
class Search:
    """A searched trajectory and its curves.

    trajectory: ``(B, t)`` int64 patch ids, bottom-to-top (first = deleted first under LeRF). lerf, morf:
    ``(B, t + 1)`` deletion curves of τ and of rev(τ). passes: ``(S,)`` int64, the cumulative number of model
    inputs evaluated after each step of the search (greedy: per deletion step; annealing and tabu search: after the
    start and each iteration; genetic algorithm: after the first population and each generation). energy:
    ``(S, B)`` float64, the best energy (−objective) reached after each step, or None. accepted: ``(B,)`` accepted
    moves per image (annealing, tabu search), or None.
    """

    trajectory: torch.Tensor
    lerf: torch.Tensor
    morf: torch.Tensor
    passes: torch.Tensor
    energy: torch.Tensor | None = None
    accepted: torch.Tensor | None = None


def objective_value(lerf: torch.Tensor, morf: torch.Tensor, objective: str) -> torch.Tensor:
    """The value TRACE maximises, in float64 → ``(B,)``: ``"le"`` ΣLeRF, ``"mo"`` −ΣMoRF, ``"le-mo"`` their sum
    ΣLeRF − ΣMoRF. The annealing energy is its negative."""
    _validate.one_of(objective, "objective", OBJECTIVES)
    le, mo = lerf.double().sum(-1), morf.double().sum(-1)
    return le if objective == "le" else -mo if objective == "mo" else le - mo


def swap(tau: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """τ with positions lo[b] and hi[b] exchanged in every row."""
    new = tau.clone()
    a, c = tau.gather(1, lo[:, None]), tau.gather(1, hi[:, None])
    return new.scatter_(1, lo[:, None], c).scatter_(1, hi[:, None], a)


NAMES = {"le": "Le", "mo": "Mo", "le-mo": "Le−Mo"}


def image_shape(x) -> tuple[int, int, int, int]:
    """Images or their shape → the shape ``(B, C, H, W)``, checked (naming ``x``)."""
    if isinstance(x, torch.Tensor):
        _validate.tensor(x, "x", ndim=4)
        return tuple(x.shape)
    if (isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != 4
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in x)):
        raise TypeError(f"x must be images (B, C, H, W) or their shape, four positive ints, got {x!r:.80}")
    return tuple(x)


def init_kind(init) -> str:
    """How the annealing starts, for its cost: ``"greedy"`` (None), ``"search"`` or ``"trajectory"``."""
    return "greedy" if init is None else "search" if isinstance(init, Search) else "trajectory"


def pair(u0: torch.Tensor, u1: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two distinct positions lo < hi from two uniforms each, uniform over the C(t, 2) pairs (any shape)."""
    i = (u0 * t).long().clamp_max(t - 1)
    j = (u1 * (t - 1)).long().clamp_max(t - 2)
    j = j + (j >= i).long()
    return torch.minimum(i, j), torch.maximum(i, j)


def non_negative_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def at_least_two(t: int, search: str, edge: int) -> None:
    if t < 2:
        raise ValueError(f"{search} needs at least 2 patches, got edge={edge}")


def search_setup(model: Callable, x: torch.Tensor, *, edge: int, init, reference: Reference, output: Output,
                 target: torch.Tensor | None, batch_size: BatchSize, progress: bool | None,
                 search: str) -> tuple[Setup, bool]:
    """The checked set-up of a search from ``init`` over the whole population of trajectories (:func:`genetic`,
    :func:`tabu`): whether to show its progress bar, its tensors on one device (checked before the target's forward
    pass), the removal set-up and at least two patches (``search`` names it in the error) → ``(setup, show)``."""
    show = _validate.progress(progress)
    _validate.one_device(x=x, init=init, target=target)  # before the target's forward pass
    s = setup(model, x, edge, reference, output, target, batch_size)
    at_least_two(s.t, search, edge)
    return s, show

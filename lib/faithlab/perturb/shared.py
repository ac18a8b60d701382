"""Logits shared between metrics: inside a :func:`sharing` block the model's logits on the clean x and on the fully
removed x are computed once (``shared_compute``, ``clean_logits``), wherever a removal run or a curve of
any metric needs them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence

import torch

from faithlab.perturb import autobatch
from faithlab.perturb.readout import logits

__all__ = ["sharing"]

_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("faithlab_shared_logits", default=None)


class _Store(dict):
    """A :func:`sharing` block's logits, with the block's ``on_compute`` hook."""

    def __init__(self, on_compute: Callable[[tuple, Callable[[], torch.Tensor]], torch.Tensor] | None):
        super().__init__()
        self.on_compute = on_compute


@contextlib.contextmanager
def sharing(on_compute: Callable[[tuple, Callable[[], torch.Tensor]], torch.Tensor] | None = None
            ) -> Iterator[None]:
    """A block in which the logits of inputs that many metrics run are computed once: the clean x and the fully
    removed x (every unit at the reference) of a model, wherever a removal run or a curve needs them.

    ``fl.evaluate`` opens one per chunk of samples, so its clean pass serves every metric's clean point and
    prediction, and the MoRF and LeRF curves of different metrics share their last point. The logits are kept for
    the block's lifetime (with the model and tensors they came from, so no id is reused) and looked up by the model
    object, the tensors' storage and in-place version and the model's parameters' storage and version: a changed
    model or x is a miss. Nested blocks share the outer one's store. Results are those of the same calls outside a
    block, up to the batch composition of a forward pass (float rounding; see
    :func:`~faithlab.perturb.runner.removal_curve`).

    on_compute: called as ``on_compute(kind, compute)`` in place of ``compute()`` when the block computes shared
    logits (``kind[0]`` is ``"clean"`` or ``"full"``); it must return ``compute()``'s value. ``fl.evaluate`` uses it
    to count this work apart from the metric that happened to ask first. A nested block keeps the outer one's.
    """
    token = _SHARED.set(_Store(on_compute)) if _SHARED.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _SHARED.reset(token)


def _tensor_key(t: torch.Tensor) -> tuple:
    return (t.data_ptr(), t._version, tuple(t.shape), t.stride(), t.dtype, t.device)


def shared_compute(kind: tuple, model: Callable, tensors: Sequence[torch.Tensor], compute: Callable[[], torch.Tensor],
            ) -> torch.Tensor:
    """``compute()`` once per (kind, model, tensors) inside a :func:`sharing` block; plainly outside one."""
    store = _SHARED.get()
    if store is None:
        return compute()
    owner, part = autobatch.cache_owner(model)
    key = (kind, id(owner), part, autobatch.param_state(owner), *(_tensor_key(t) for t in tensors))
    hit = store.get(key)
    if hit is None:
        value = compute() if store.on_compute is None else store.on_compute(kind, compute)
        hit = store[key] = (owner, tuple(tensors), value)  # the objects keep their ids from being reused
    return hit[2]


def clean_logits(model: Callable, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The model's checked logits on the clean x ``(B, n_classes)``, ``batch_size`` samples per forward call (shared
    inside a :func:`sharing` block); NaN/inf logits raise naming the samples."""
    return shared_compute(("clean",), model, (x,), lambda: logits(
        model, x, batch_size=batch_size, what="clean inputs (read for the predicted class)"))

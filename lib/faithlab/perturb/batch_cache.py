"""The process-wide cache of the batch-size rules (:mod:`faithlab.perturb.autobatch`): per model, the timings of the
``"auto"`` probe and the activations the default size reads, held weakly where the model allows it (else a few
strong references, the newest kept); ``param_state`` tells a result made stale by changed parameters.
"""

from __future__ import annotations

import collections
import types
import weakref
from collections.abc import Callable

import torch

__all__ = ["clear_cache", "cache_size"]

_by_model: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model → {key: probe or activations}
_by_id: collections.OrderedDict = collections.OrderedDict()  # id(model) → (model, {key: …}), no weakref
_MAX_STRONG = 16


def clear_cache() -> None:
    """Forget every probe result of this process."""
    _by_model.clear()
    _by_id.clear()


def cache_size() -> int:
    """How many (model, input) entries the cache holds."""
    return sum(len(v) for v in _by_model.values()) + sum(len(v) for _, v in _by_id.values())


def cache_owner(model: Callable) -> tuple[object, object]:
    """The object the cache hangs a model's entries on, and what else tells them apart: a bound method is made anew
    at every attribute access, so its entries hang on the instance, told apart by the function."""
    if isinstance(model, types.MethodType):
        return model.__self__, model.__func__
    return model, None


def cache_entries(model: object) -> dict:
    """The cache's entries of a model (its :func:`cache_owner`), made empty on first use."""
    try:
        return _by_model.setdefault(model, {})
    except TypeError:  # no weak reference or no hash: a few strong references, the newest kept
        key = id(model)
        if key in _by_id and _by_id[key][0] is model:
            _by_id.move_to_end(key)
            return _by_id[key][1]
        _by_id[key] = (model, {})
        while len(_by_id) > _MAX_STRONG:
            _by_id.popitem(last=False)
        return _by_id[key][1]


def param_state(model: Callable) -> tuple:
    """What of the model's parameters and buffers makes a probe result stale: their storage and in-place version."""
    if not isinstance(model, torch.nn.Module):
        return ()
    return tuple((t.data_ptr(), t._version) for t in (*model.parameters(), *model.buffers()))

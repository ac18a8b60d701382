"""The model registry: :func:`build` a registered architecture by name, :func:`register` your own."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

__all__ = ["register", "available", "build"]

REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def register(name: str) -> Callable[[Callable[..., nn.Module]], Callable[..., nn.Module]]:
    """Decorator adding a model class (or factory taking keyword config) to :func:`build` under ``name``; a name can
    be registered once."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in REGISTRY:
        raise ValueError(f"name {name!r} is already registered; pick another name")

    def deco(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if not callable(factory):
            raise TypeError(f"register({name!r}) needs a class or factory, got {type(factory).__name__}")
        REGISTRY[name] = factory
        return factory

    return deco


def available() -> list[str]:
    """Names accepted by :func:`build`, sorted."""
    return sorted(REGISTRY)


def build(name: str, **config) -> nn.Module:
    """Build the model registered as ``name`` with keyword ``config`` (weights initialised from the global RNG:
    seed it inside ``torch.random.fork_rng`` as :func:`faithlab.train.fit` does)."""
    if name not in REGISTRY:
        raise ValueError(f"name must be one of {available()}, got {name!r}")
    return REGISTRY[name](**config)


def scaled(base: int, width: float) -> int:
    """A channel count ``base`` scaled by ``width`` (at least 1): the width knob of the zoo's models."""
    return max(1, int(round(base * width)))

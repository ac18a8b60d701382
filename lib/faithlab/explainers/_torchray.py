"""What the two TorchRay-backed explainers (Extremal Perturbations, Excitation Backprop) share: the checks of the
model TorchRay gets, a plain forward pass that lets ``explain`` see the logits first, and the context that silences
TorchRay's warnings and restores the ``requires_grad`` flags it switches off. Registers no method."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import torch


def check_model(model, extra, method: str) -> None:
    """TorchRay reads the model's parameters and calls it as model(x)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"method {method!r} needs an nn.Module model (TorchRay reads its parameters), got "
                        f"{type(model).__name__}")
    if extra is not None:
        raise ValueError(f"method {method!r} takes image models called as model(x) only")


def finite_logits_on(model, x: torch.Tensor) -> bool:
    """One plain forward pass on x before TorchRay runs: ``explain``'s logit check sees it (shape, rows, target range
    raise at once, naming the argument), and NaN/inf logits are reported as False so that the caller returns a NaN
    map, which ``explain`` turns into its error naming the samples. TorchRay would otherwise fail first with its
    own indexing errors."""
    with torch.no_grad():
        logits = model(x.detach())
    return bool(torch.isfinite(logits).all())


class NonFinite(Exception):
    """Raised from TorchRay's reward when the logits are NaN/inf, to stop its optimisation."""


@contextmanager
def quiet():
    """TorchRay 1.0 calls torch.meshgrid without ``indexing`` (torch warns on every call; the default it warns about,
    "ij", is the one TorchRay relies on) and reads its version with the deprecated ``importlib.resources.open_text``
    on import; neither says anything about our maps, so both warnings are silenced while TorchRay runs."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"torch\.meshgrid: in an upcoming release", category=UserWarning)
        warnings.filterwarnings("ignore", message=r"open_text is deprecated", category=DeprecationWarning)
        yield


@contextmanager
def keeping_requires_grad(model):
    """TorchRay switches off ``requires_grad`` on the model's parameters (and restores it only when it returns
    normally); put every flag back as it was, also when the model or our logit check raises mid-call."""
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    flags = [q.requires_grad for q in params]
    try:
        yield
    finally:
        for q, flag in zip(params, flags):
            q.requires_grad_(flag)

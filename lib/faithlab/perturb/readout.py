"""Model read-outs: the checked logits of a model on inputs (:func:`logits`), the built-in read-outs of a target
class (:data:`OUTPUTS`: probability, logit, correctness, log-odds, predicted class) and the error for NaN/inf model
outputs (:class:`NonFiniteOutput`). The removal engine (:mod:`faithlab.perturb.engine`) reads every forward pass
through them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from faithlab import _validate
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize

__all__ = ["Output", "OUTPUTS", "NonFiniteOutput", "logits"]

Output = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
OUTPUTS = ("prob", "logit", "correct", "log_odds", "predicted")
"""Built-in model read-outs: softmax probability of the target, its logit, 1.0 if argmax == target, log p/(1-p),
and the predicted class (argmax, int64)."""

def output_fn(output: Output) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if callable(output):
        return output

    def fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        t = target[:, None]
        if output == "logit":
            return logits.gather(1, t).squeeze(1)
        if output == "prob":
            return logits.softmax(dim=1).gather(1, t).squeeze(1)
        if output == "correct":
            return (logits.argmax(dim=1) == target).to(logits.dtype)
        if output == "predicted":
            return logits.argmax(dim=1)
        # log p/(1-p) = z_y - logsumexp_{j != y} z_j: exact and finite without clamping
        return logits.gather(1, t).squeeze(1) - logits.scatter(1, t, -math.inf).logsumexp(dim=1)

    return fn


def model_logits(model: Callable, inputs: torch.Tensor, plan: autobatch.Plan | None = None) -> torch.Tensor:
    logits = model(inputs) if plan is None else plan.forward(inputs)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != inputs.shape[0]:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"model must return logits of shape (N, n_classes), got {shape} for {inputs.shape[0]} inputs")
    if not logits.is_floating_point():
        raise TypeError(f"model must return floating-point logits, got dtype {logits.dtype}")
    return logits


class NonFiniteOutput(ValueError):
    """A model returned NaN or inf: the message says "model returned …"; :meth:`naming` gives the same error naming
    the caller's model (e.g. ``kfold.models[1]``) where the engine only knows it as "model"."""

    def __init__(self, detail: str, name: str = "model"):
        super().__init__(f"{name} returned NaN or inf {detail}")
        self.detail = detail

    def naming(self, name: str) -> NonFiniteOutput:
        return NonFiniteOutput(self.detail, name)


def non_finite_error(bad: torch.Tensor, per_sample: int, where: str) -> NonFiniteOutput:
    """The error for model outputs that are NaN/inf: ``bad`` flags the flat (sample, variant) cells."""
    cells = bad.nonzero().flatten().cpu()
    samples = torch.unique(cells // per_sample)
    variants = torch.unique(cells % per_sample)
    return NonFiniteOutput(f"on {cells.numel()} of {bad.numel()} {where} (sample(s) "
                           f"{samples[:8].tolist()}{' …' if samples.numel() > 8 else ''}, variant(s) "
                           f"{variants[:8].tolist()}{' …' if variants.numel() > 8 else ''}); no score can be "
                           f"computed from them")


def logits(model: Callable, inputs: torch.Tensor, *, batch_size: BatchSize | autobatch.Plan = None,
           finite: bool = True, what: str = "inputs") -> torch.Tensor:
    """The model's logits on inputs, checked → ``(N, n_classes)``.

    ``batch_size`` inputs per forward call (the last call smaller; ``"auto"``: see
    :func:`~faithlab.perturb.runner.removal_curve`), without gradients, joined in order. The model must return a
    floating ``(n, n_classes)`` tensor for n inputs (else ValueError/TypeError). finite: NaN/inf logits raise a
    ValueError naming the samples (False: returned as they are, e.g. to read the number of classes). what: how
    that message names the inputs (e.g. ``"clean inputs"``).
    """
    _validate.model(model, "model")
    _validate.tensor(inputs, "inputs")
    if not isinstance(batch_size, autobatch.Plan):
        _validate.batch_size(batch_size, "batch_size")
        batch_size = autobatch.plan(batch_size, model, inputs, inputs.shape[0])
    plan = batch_size if isinstance(batch_size, autobatch.Plan) else None
    out, i, n = [], 0, inputs.shape[0]
    with torch.no_grad():
        while i < n:
            step = batch_size if plan is None else plan.size(n - i)
            out.append(model_logits(model, inputs[i:i + step], plan))
            i += step
    out = out[0] if len(out) == 1 else torch.cat(out)
    if finite:
        bad = ~torch.isfinite(out).all(dim=1)
        if bool(bad.any()):
            raise non_finite_error(bad, 1, what)
    return out


def check_read_out(output: Output, logits: torch.Tensor, target: torch.Tensor, target_name: str = "target") -> None:
    """A built-in read-out needs 2 classes (but the logit) and a target among the model's classes."""
    if callable(output):
        return
    if output != "logit" and logits.shape[1] < 2:
        raise ValueError(f"output={output!r} needs logits for at least 2 classes, got {logits.shape[1]}")
    check_classes(target, logits.shape[1], target_name)


def check_classes(target: torch.Tensor, n_classes: int, name: str = "target", *, what: str = "logits") -> None:
    """Raise unless every class index of ``target`` lies in [0, n_classes − 1]: a ValueError naming ``name`` first,
    then the valid range, the model's width (``n_classes`` ``what``: logits, or classes) and the first value out of
    range. One host read when every index is in range."""
    if not target.numel():
        return
    low, high = torch.stack([target.min(), target.max()]).tolist()
    if 0 <= low and high < n_classes:
        return
    bad = target[(target < 0) | (target >= n_classes)]
    more = f" ({bad.numel()} values out of range)" if bad.numel() > 1 else ""
    raise ValueError(f"{name} must hold classes in [0, {n_classes - 1}] (the model returns {n_classes} {what}), got "
                     f"{int(bad[0])}{more}")

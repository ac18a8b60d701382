"""The removal engine: the one batched forward loop behind every metric.

Every entry point builds perturbed inputs chunk by chunk (never all at once) and sends exactly ``batch_size`` of
them per forward call, straddling samples, so memory is bounded by ``batch_size`` and results do not depend on it.
:func:`evaluate` is the general form (unit masks from a callback, e.g. a search that builds candidates lazily);
:func:`removal_outputs` evaluates given masks and :func:`removal_curve` cumulative removal in an order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from faithlab import _validate
from faithlab.perturb.orders import order as _order
from faithlab.perturb.orders import ORDERS, ranks, top_masks
from faithlab.perturb.references import Reference, make_reference
from faithlab.perturb.units import (Units, _check_units, _expand, _rows, check_attributions, constant_maps,
                                    default_units, unit_scores, warn_constant)

__all__ = ["Output", "OUTPUTS", "Masks", "evaluate", "evaluate_inputs", "removal_curve", "removal_outputs"]

Output = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
OUTPUTS = ("prob", "logit", "correct", "log_odds", "predicted")
"""Built-in model read-outs: softmax probability of the target, its logit, 1.0 if argmax == target, log p/(1-p),
and the predicted class (argmax, int64)."""
Masks = Callable[[int, int, int, int], torch.Tensor]
"""``masks(b0, b1, v0, v1)`` → ``(b1-b0, v1-v0, n)`` bool unit masks of variants v0..v1-1 of samples b0..b1-1."""


def _output_fn(output: Output) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
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


def _logits(model: Callable, inputs: torch.Tensor) -> torch.Tensor:
    logits = model(inputs)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != inputs.shape[0]:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"model must return logits of shape (N, n_classes), got {shape} for {inputs.shape[0]} inputs")
    if not logits.is_floating_point():
        raise TypeError(f"model must return floating-point logits, got dtype {logits.dtype}")
    return logits


def _non_finite_error(bad: torch.Tensor, per_sample: int, where: str) -> ValueError:
    """The error for model outputs that are NaN/inf: ``bad`` flags the flat (sample, variant) cells."""
    cells = bad.nonzero().flatten().cpu()
    samples = torch.unique(cells // per_sample)
    variants = torch.unique(cells % per_sample)
    return ValueError(f"model returned NaN or inf on {cells.numel()} of {bad.numel()} {where} (sample(s) "
                      f"{samples[:8].tolist()}{' …' if samples.numel() > 8 else ''}, variant(s) "
                      f"{variants[:8].tolist()}{' …' if variants.numel() > 8 else ''}); no score can be computed "
                      f"from them")


def _prepare(model: Callable, x: torch.Tensor, units: Units | None, output: Output, target: torch.Tensor | None,
             batch_size: int, target_name: str = "target") -> Units:
    """Validation shared by the engine's entry points; returns the units (inferred when None). ``target_name``:
    the caller's name for the target argument (the F-Fidelity and accuracy metrics call it ``y``)."""
    _validate.model(model, "model")
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    if x.is_complex() or x.dtype == torch.bool or (x.ndim > 2 and not x.is_floating_point()):
        raise TypeError(f"x of shape {tuple(x.shape)} must be floating-point (only token ids (B, L) are integers), "
                        f"got dtype {x.dtype}")
    _validate.finite(x, "x")
    _validate.model_accepts(model, x, "model", "x")
    _validate.positive_int(batch_size, "batch_size")
    if not callable(output) and (isinstance(output, (list, dict, set, torch.Tensor)) or output not in OUTPUTS):
        raise ValueError(f"output must be one of {OUTPUTS} or a callable(logits, target), got {output!r}")
    units = default_units(x) if units is None else units
    _check_units(units, x)
    if target is not None:
        _validate.tensor(target, target_name, ndim=1)
        if target.dtype != torch.int64:
            raise TypeError(f"{target_name} must be an int64 tensor of class indices, got dtype {target.dtype}")
        _validate.batch_match(x, target, "x", target_name)
        _validate.same_device(x, target, "x", target_name)
        if bool((target < 0).any()):
            raise ValueError(f"{target_name} must hold non-negative class indices")
    return units


def _blocks(batch: int, per_sample: int, batch_size: int):
    """Chunks of exactly ``batch_size`` cells (the last one smaller) of the row-major (sample, variant) grid: the
    first cell's flat index and the chunk as a list of rectangular pieces (b0, b1, v0, v1): a partial first sample, whole middle samples, a partial last
    sample. Full chunks keep every forward pass at the batch size the caller chose (on CPU a smaller batch can cost
    far more than its share)."""
    total = batch * per_sample
    for c0 in range(0, total, batch_size):
        c1 = min(c0 + batch_size, total)
        first, v_first = divmod(c0, per_sample)
        last, v_last = divmod(c1 - 1, per_sample)
        if first == last:
            yield c0, [(first, first + 1, v_first, v_last + 1)]
            continue
        pieces = [(first, first + 1, v_first, per_sample)]
        if last > first + 1:
            pieces.append((first + 1, last, 0, per_sample))
        pieces.append((last, last + 1, 0, v_last + 1))
        yield c0, pieces


def _run(model: Callable, x: torch.Tensor, units: Units, reference: torch.Tensor, output: Output,
         target: torch.Tensor | None, per_sample: int, masks: Callable[[int, int, int, int], torch.Tensor],
         batch_size: int, target_name: str = "target", rows: torch.Tensor | None = None) -> torch.Tensor:
    """Run ``per_sample`` perturbed variants of every sample through the model, ≤ ``batch_size`` inputs per call.

    ``masks(b0, b1, v0, v1)`` gives the ``(b1-b0, v1-v0, n)`` bool unit masks of variants v0..v1-1 of samples
    b0..b1-1; perturbed inputs are built chunk by chunk. target None → prediction on the clean x.
    rows: optional ``(R,)`` int64 indices into x; the samples are then ``x[rows]`` (gathered chunk by chunk, so a
    sample may appear many times without being copied) and the result is ``(R, per_sample)``.
    Returns ``(B, per_sample)``. Non-finite logits (or a non-finite read-out of a callable ``output``) on any
    input raise a ValueError naming the samples and variants: no score is computed from them. The check is
    accumulated on the device and read once at the end (no synchronisation per chunk).
    """
    fn = _output_fn(output)
    idx = units.index
    identity = idx.shape[0] == 1 and idx.numel() == units.n and torch.equal(
        idx.flatten(), torch.arange(units.n, device=idx.device))
    with torch.no_grad():
        if target is None:
            clean = [_logits(model, x[i:i + batch_size]) for i in range(0, x.shape[0], batch_size)]
            bad = torch.cat([~torch.isfinite(c).all(dim=1) for c in clean])
            if bool(bad.any()):
                raise _non_finite_error(bad, 1, "clean inputs (read for the predicted class)")
            target = torch.cat([c.argmax(dim=1) for c in clean])
        n_samples = x.shape[0] if rows is None else rows.numel()
        if rows is not None:
            target = target[rows]

        def take(t: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
            return _rows(t, b0, b1) if rows is None or t.shape[0] == 1 else t[rows[b0:b1]]

        def build(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
            m = masks(b0, b1, v0, v1)
            if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != (b1 - b0, v1 - v0, units.n):
                got = (m.dtype, tuple(m.shape)) if isinstance(m, torch.Tensor) else type(m).__name__
                raise ValueError(f"masks({b0}, {b1}, {v0}, {v1}) must return a bool tensor of shape "
                                 f"({b1 - b0}, {v1 - v0}, {units.n}), got {got}")
            element_mask = m.view(*m.shape[:2], *idx.shape[1:]) if identity else _expand(m, take(idx, b0, b1))
            return torch.where(element_mask, take(reference, b0, b1)[:, None], take(x, b0, b1)[:, None])

        return _forward_grid(model, build, n_samples, per_sample, fn, output, target, batch_size, target_name)


def _forward_grid(model: Callable, build: Callable[[int, int, int, int], torch.Tensor], n_samples: int,
                  per_sample: int, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], output: Output,
                  target: torch.Tensor, batch_size: int, target_name: str = "target") -> torch.Tensor:
    """The one batched forward loop: ``build(b0, b1, v0, v1)`` gives the ``(b1-b0, v1-v0, ...)`` inputs of variants
    v0..v1-1 of samples b0..b1-1; exactly ``batch_size`` of them per forward call (the last call smaller), read
    out by ``fn(logits, target)`` → ``(n_samples, per_sample)``. Non-finite logits or read-outs raise a ValueError
    naming the cells, checked on the device and read once at the end."""
    with torch.no_grad():
        flat = None
        finite = None
        for c0, pieces in _blocks(n_samples, per_sample, batch_size):
            batch_inputs, batch_targets = [], []
            for b0, b1, v0, v1 in pieces:
                batch_inputs.append(build(b0, b1, v0, v1).flatten(0, 1))
                batch_targets.append(target[b0:b1].repeat_interleave(v1 - v0))
            inputs = batch_inputs[0] if len(pieces) == 1 else torch.cat(batch_inputs)
            logits = _logits(model, inputs)
            if flat is None and not callable(output):
                if output != "logit" and logits.shape[1] < 2:
                    raise ValueError(f"output={output!r} needs logits for at least 2 classes, got {logits.shape[1]}")
                if int(target.max()) >= logits.shape[1]:
                    raise ValueError(f"{target_name} holds class {int(target.max())} but the model returns "
                                     f"{logits.shape[1]} logits")
            out = fn(logits, torch.cat(batch_targets).to(logits.device))
            if not isinstance(out, torch.Tensor) or out.shape != (logits.shape[0],):
                raise ValueError(f"output must give one value per input, shape ({logits.shape[0]},)")
            ok = torch.isfinite(logits).all(dim=1)
            if out.is_floating_point():
                ok &= torch.isfinite(out)
            if flat is None:
                flat = torch.empty(n_samples * per_sample, dtype=out.dtype, device=out.device)
                finite = torch.ones(n_samples * per_sample, dtype=torch.bool, device=out.device)
            finite[c0:c0 + logits.shape[0]] = ok.to(finite.device)
            flat[c0:c0 + logits.shape[0]] = out
    if not bool(finite.all()):
        raise _non_finite_error(~finite, per_sample, "inputs it was given")
    return flat.view(n_samples, per_sample)


def evaluate(model: Callable, x: torch.Tensor, masks: Masks, *, n_variants: int, units: Units | None = None,
             reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
             batch_size: int = 256) -> torch.Tensor:
    """Model output on ``n_variants`` perturbed variants of every sample, masks built lazily → ``(B, n_variants)``.

    The general entry point of the engine, for callers whose masks are cheaper to build per chunk than to hold
    (TRACE's greedy search, Few-class candidate scoring). masks: a callable ``masks(b0, b1, v0, v1)`` returning
    the ``(b1-b0, v1-v0, n)`` bool masks (True = removed) of variants v0..v1-1 of samples b0..b1-1; it is called
    once per piece of every chunk of at most ``batch_size`` inputs. Other arguments as in :func:`removal_curve`.
    """
    units = _prepare(model, x, units, output, target, batch_size)
    n_variants = _validate.positive_int(n_variants, "n_variants")
    if not callable(masks):
        raise TypeError(f"masks must be a callable(b0, b1, v0, v1) -> bool tensor, got {type(masks).__name__}")
    return _run(model, x, units, make_reference(x, reference), output, target, n_variants, masks, batch_size)


def evaluate_inputs(model: Callable, inputs: Callable[[int, int, int, int], torch.Tensor], *, n_samples: int,
                    n_variants: int, output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: int = 256) -> torch.Tensor:
    """Model read-out on ``n_variants`` generated inputs of each of ``n_samples`` samples → ``(n_samples, n_variants)``.

    The engine's loop for inputs that are not unit removals of x (Few-class Fidelity's 804 blurred candidates per
    image, spec §2.3): ``inputs(b0, b1, v0, v1)`` returns the ``(b1-b0, v1-v0, *input_shape)`` inputs of variants
    v0..v1-1 of samples b0..b1-1, built lazily; exactly ``batch_size`` of them go through the model per call.
    output: as in :func:`removal_curve`; a callable ``(logits, target) → (N,)`` may read every logit (e.g. an
    uncertainty score). target: ``(n_samples,)`` int64, required by the built-in read-outs (there is no clean x
    to predict from); a callable output gets zeros when it is None.
    """
    _validate.model(model, "model")
    n_samples = _validate.positive_int(n_samples, "n_samples")
    n_variants = _validate.positive_int(n_variants, "n_variants")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    if not callable(inputs):
        raise TypeError(f"inputs must be a callable(b0, b1, v0, v1) -> tensor, got {type(inputs).__name__}")
    if not callable(output):
        _validate.one_of(output, "output", OUTPUTS)
        if target is None:
            raise ValueError(f"output={output!r} needs target: evaluate_inputs has no clean input to predict from")
    if target is None:
        target = torch.zeros(n_samples, dtype=torch.int64)
    _validate.tensor(target, "target", ndim=1)
    if target.shape[0] != n_samples or target.dtype != torch.int64 or bool((target < 0).any()):
        raise ValueError(f"target must hold {n_samples} non-negative int64 classes, got {tuple(target.shape)} "
                         f"{target.dtype}")

    def build(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        t = inputs(b0, b1, v0, v1)
        if not isinstance(t, torch.Tensor) or t.ndim < 3 or tuple(t.shape[:2]) != (b1 - b0, v1 - v0):
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"inputs({b0}, {b1}, {v0}, {v1}) must return a tensor of shape "
                             f"({b1 - b0}, {v1 - v0}, ...), got {got}")
        return t

    return _forward_grid(model, build, n_samples, n_variants, _output_fn(output), output, target, batch_size)


def removal_curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None,
                  fractions: Sequence[float] | torch.Tensor, *, order: str | torch.Tensor = "morf",
                  reduce: str = "sum_abs", reference: Reference = "zero", output: Output = "prob",
                  target: torch.Tensor | None = None, units: Units | None = None, batch_size: int = 256,
                  generator: torch.Generator | int | None = None) -> torch.Tensor:
    """Model output after cumulatively removing a fraction of units in a given order → ``(B, len(fractions))``.

    Deletion curves of TRACE §5.1 (MoRF/LeRF), Few-class MIF/LIF §2.1, SaCo's AOPC/LOdds/AUC §3.2, F-Fidelity's
    Fid± §1.2. At fraction f the first ``round(f·n)`` units of the order are removed; rounding is half to even
    (Python's ``round``, ``torch.round``), so ``f = k/n`` removes exactly k units.
    Direction: under MoRF a faster drop (lower curve) means a more faithful attribution; under LeRF, slower.

    x: images ``(B, C, H, W)``, series ``(B, T, C)``, token ids ``(B, L)`` or embeddings ``(B, L, D)``.
    attributions: see ``unit_scores``; ties by lower unit id (for random ties pass
    ``order=order(unit_scores(a, units, reduce=...), ..., ties="random")``). Unused (may be None) when order is
    ``"random"`` or a tensor.
    order: ``"morf"``, ``"lerf"``, ``"random"`` (needs generator) or a ``(B, n)``/``(n,)`` permutation of unit ids.
    reduce: the unit-reduction rule of ``unit_scores``; default ``"sum_abs"`` (Σ|a|, F-Fidelity's and Few-class
    Fidelity's convention); SaCo's metrics pass ``"sum"``, TRACE ``"mean"``.
    reference: see ``make_reference`` (pass a tensor for a blur with non-default parameters).
    output: ``"prob"`` softmax probability of target, ``"logit"``, ``"correct"`` (1.0 if argmax == target),
    ``"log_odds"`` log p/(1-p), ``"predicted"`` the predicted class (int64), or a callable(logits, target) →
    ``(N,)``.
    target: ``(B,)`` int64 classes; None → the model's prediction on the clean x.
    units: None infers pixels for 4-D x and dim-1 units (time steps, tokens) otherwise.
    batch_size: at most this many perturbed inputs per forward call; results do not depend on it.
    A constant map defines no order: its units are removed in index order and a
    :class:`~faithlab.perturb.ConstantMapWarning` counts those samples. NaN/inf logits raise a ValueError.
    """
    return _removal_curve(model, x, attributions, fractions, order=order, reduce=reduce, reference=reference,
                          output=output, target=target, units=units, batch_size=batch_size, generator=generator)


def _removal_curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None,
                   fractions: Sequence[float] | torch.Tensor, *, order: str | torch.Tensor, reduce: str,
                   reference: Reference, output: Output, target: torch.Tensor | None, units: Units | None,
                   batch_size: int, generator: torch.Generator | int | None,
                   target_name: str = "target") -> torch.Tensor:
    """:func:`removal_curve` with the caller's name for the target argument (for messages)."""
    units = _prepare(model, x, units, output, target, batch_size, target_name)
    f = _validate.fractions(fractions, "fractions")
    if isinstance(order, torch.Tensor):
        _validate.same_device(x, order, "x", "order")
        perm = order.expand(x.shape[0], -1) if order.ndim == 1 else order
        if perm.shape != (x.shape[0], units.n) or perm.dtype != torch.int64 or not torch.equal(
                perm.sort(dim=1).values.cpu(), torch.arange(units.n).expand(x.shape[0], -1)):
            raise ValueError(f"order tensor must hold an int64 permutation of the {units.n} unit ids per sample")
    elif order == "random":
        perm = _order(torch.zeros(x.shape[0], units.n, device=x.device), "random", generator=generator)
    else:
        _validate.one_of(order, "order", ORDERS)
        if attributions is None:
            raise ValueError(f"attributions are required for order={order!r}")
        check_attributions(attributions, x)
        scores = unit_scores(attributions, units, reduce=reduce)
        _validate.batch_match(x, scores, "x", "attributions")
        warn_constant(constant_maps(scores), "their units are removed in index order")
        perm = _order(scores, order, generator=generator)
    rank = ranks(perm)
    counts = torch.round(f * units.n).long().to(x.device)
    ref = make_reference(x, reference)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        return top_masks(rank[b0:b1], counts[v0:v1])

    return _run(model, x, units, ref, output, target, f.numel(), masks, batch_size, target_name)


def removal_outputs(model: Callable, x: torch.Tensor, removed: torch.Tensor, *, units: Units | None = None,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: int = 256, sample: torch.Tensor | None = None) -> torch.Tensor:
    """Model output after removing exactly the units flagged in removed → ``(B,)`` or ``(B, S)``.

    The single-step primitive behind Fid±/RFid±/FFid± (F-Fidelity §1.2–1.5), SaCo's group perturbations (§3.1)
    and μF subsets (§4.6). removed: ``(B, n)`` bool, or ``(B, S, n)`` for S masks per sample. Other arguments as
    in ``removal_curve``; at most ``batch_size`` perturbed inputs go through the model per call.
    sample: optional ``(R,)`` int64 indices into x for an irregular set of masks (TRACE's annealing evaluates a
    different number of masks per image each step): mask ``removed[r]`` (``(R, n)``) is applied to
    ``x[sample[r]]`` (with its reference and target) → ``(R,)``; x is not copied per mask.
    """
    return _removal_outputs(model, x, removed, units=units, reference=reference, output=output, target=target,
                            batch_size=batch_size, sample=sample)


def _removal_outputs(model: Callable, x: torch.Tensor, removed: torch.Tensor, *, units: Units | None,
                     reference: Reference, output: Output, target: torch.Tensor | None, batch_size: int,
                     target_name: str = "target", sample: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`removal_outputs` with the caller's name for the target argument (for messages)."""
    units = _prepare(model, x, units, output, target, batch_size, target_name)
    _validate.tensor(removed, "removed", ndim=(2, 3) if sample is None else 2)
    if removed.dtype != torch.bool:
        raise TypeError(f"removed must be a bool tensor, got dtype {removed.dtype}")
    _validate.same_device(x, removed, "x", "removed")
    if sample is not None:
        _validate.tensor(sample, "sample", ndim=1)
        if sample.dtype != torch.int64:
            raise TypeError(f"sample must be an int64 tensor of indices into x, got dtype {sample.dtype}")
        _validate.same_device(x, sample, "x", "sample")
        if sample.numel() != removed.shape[0]:
            raise ValueError(f"sample has {sample.numel()} indices but removed has {removed.shape[0]} masks")
        if sample.numel() and (int(sample.min()) < 0 or int(sample.max()) >= x.shape[0]):
            raise ValueError(f"sample must index x's {x.shape[0]} samples, got values in "
                             f"[{int(sample.min())}, {int(sample.max())}]")
        if removed.shape[-1] != units.n:
            raise ValueError(f"removed must have {units.n} units in its last dim, got shape {tuple(removed.shape)}")
        if sample.numel() == 0:
            return torch.empty(0, dtype=x.dtype if output != "predicted" else torch.int64, device=x.device)
        blocks = removed[:, None, :]
        out = _run(model, x, units, make_reference(x, reference), output, target, 1,
                   lambda b0, b1, v0, v1: blocks[b0:b1], batch_size, target_name, rows=sample)
        return out.squeeze(1)
    _validate.batch_match(x, removed, "x", "removed")
    if removed.shape[-1] != units.n:
        raise ValueError(f"removed must have {units.n} units in its last dim, got shape {tuple(removed.shape)}")
    per_sample = removed.shape[1] if removed.ndim == 3 else 1
    if per_sample == 0:
        raise ValueError(f"removed holds no masks: shape {tuple(removed.shape)}; expected (B, n) or (B, S, n), S ≥ 1")
    blocks = removed.reshape(x.shape[0], per_sample, units.n)
    out = _run(model, x, units, make_reference(x, reference), output, target, per_sample,
               lambda b0, b1, v0, v1: blocks[b0:b1, v0:v1], batch_size, target_name)
    return out if removed.ndim == 3 else out.squeeze(1)

"""The bound removal runner: validate a model, inputs, units, reference, read-out, target and batch size once, then
run any number of mask sets, removal curves or lazily built masks through the engine.

:class:`Removal` is what every metric uses (F-Fidelity's Monte-Carlo masks, the cumulative curves of SaCo's
section, Few-class Fidelity's MIF/LIF curves, TRACE's thousands of search steps): one check of the arguments that
do not change, then one engine call per mask set. The one-shot functions :func:`removal_outputs`,
:func:`removal_curve` and :func:`masked_outputs` bind a :class:`Removal` and run it once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from faithlab import _validate
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.engine import Masks, Output, _prepare, _predict, _run, _Thresholds
from faithlab.perturb.orders import ORDERS, _order_ranks, _ranks
from faithlab.perturb.orders import order as _order
from faithlab.perturb.references import Reference, make_reference
from faithlab.perturb.units import Units, check_attributions, constant_maps, unit_scores, warn_constant

__all__ = ["Removal", "masked_outputs", "removal_curve", "removal_outputs"]


class Removal:
    """Removal of units from a batch x through a model, bound once: ``Removal(model, x, ...)`` checks every
    argument, then :meth:`~faithlab.perturb.runner.Removal.outputs`, :meth:`~faithlab.perturb.runner.Removal.curve`
    and :meth:`~faithlab.perturb.runner.Removal.masked` run mask sets without checking them again.

    model: eval-mode classifier returning logits ``(N, n_classes)``. x: images ``(B, C, H, W)``, series
    ``(B, T, C)``, token ids ``(B, L)`` or embeddings ``(B, L, D)``; finite. units: None infers pixels for 4-D x
    and dim-1 units (time steps, tokens) otherwise. reference: the removal value, see ``make_reference`` (built
    once, a tensor afterwards: ``.reference``). output: the read-out of the logits, one of ``OUTPUTS``
    (``"prob"`` softmax probability of target, ``"logit"``, ``"correct"``, ``"log_odds"``, ``"predicted"``) or a
    callable(logits, target) → ``(N,)`` or ``(N, K)``. target: ``(B,)`` int64 classes; None → the model's
    prediction on the clean x, computed once, on the first run (in chunks of that run's batch size) or when
    ``.target`` is read. batch_size: at most this many perturbed inputs per forward call; results do not depend
    on it. ``"auto"``: resolved per run by a timing probe (:mod:`faithlab.perturb.autobatch`, cached per process).

    Every run raises a ValueError naming the samples and variants if the model returns NaN/inf logits (or a
    callable ``output`` a non-finite read-out) on any input: no score is computed from them.
    """

    def __init__(self, model: Callable, x: torch.Tensor, *, units: Units | None = None, reference: Reference = "zero",
                 output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = 256):
        self.units: Units = _prepare(model, x, units, output, target, batch_size)
        self.model, self.x, self.output, self.batch_size = model, x, output, batch_size
        self.reference: torch.Tensor = make_reference(x, reference)
        self._target = target

    @property
    def target(self) -> torch.Tensor:
        """The ``(B,)`` classes the read-out uses: the given target, or the model's prediction on the clean x
        (computed on first use, ``batch_size`` at a time, and kept)."""
        if self._target is None:
            self._target = _predict(self.model, self.x,
                                    autobatch.resolve(self.batch_size, self.model, self.x, self.x.shape[0]))
        return self._target

    def _go(self, per_sample: int, masks: Masks | _Thresholds, sample: torch.Tensor | None) -> torch.Tensor:
        n_samples = self.x.shape[0] if sample is None else sample.numel()
        batch_size = autobatch.resolve(self.batch_size, self.model, self.x, n_samples * per_sample)
        if self._target is None:  # the prediction in chunks of this run's batch size, as a one-shot call computes it
            self._target = _predict(self.model, self.x, batch_size)
        return _run(self.model, self.x, self.units, self.reference, self.output, self._target, per_sample, masks,
                    batch_size, rows=sample)

    def _sample(self, sample: torch.Tensor, n_masks: int, masks_name: str) -> None:
        _validate.tensor(sample, "sample", ndim=1)
        if sample.dtype != torch.int64:
            raise TypeError(f"sample must be an int64 tensor of indices into x, got dtype {sample.dtype}")
        _validate.same_device(self.x, sample, "x", "sample")
        if sample.numel() != n_masks:
            raise ValueError(f"sample has {sample.numel()} indices but {masks_name} has {n_masks} masks")
        if sample.numel() and (int(sample.min()) < 0 or int(sample.max()) >= self.x.shape[0]):
            raise ValueError(f"sample must index x's {self.x.shape[0]} samples, got values in "
                             f"[{int(sample.min())}, {int(sample.max())}]")

    def _empty(self) -> torch.Tensor:
        return torch.empty(0, dtype=self.x.dtype if self.output != "predicted" else torch.int64, device=self.x.device)

    def outputs(self, removed: torch.Tensor, *, sample: torch.Tensor | None = None) -> torch.Tensor:
        """Model output after removing exactly the units flagged in removed → ``(B,)`` or ``(B, S)``.

        removed: ``(B, n)`` bool, or ``(B, S, n)`` for S masks per sample (True = removed).
        sample: optional ``(R,)`` int64 indices into x for an irregular set of masks: mask ``removed[r]``
        (``(R, n)``) is applied to ``x[sample[r]]`` (with its reference and target) → ``(R,)``; x is not copied
        per mask.
        """
        n = self.units.n
        _validate.tensor(removed, "removed", ndim=(2, 3) if sample is None else 2)
        if removed.dtype != torch.bool:
            raise TypeError(f"removed must be a bool tensor, got dtype {removed.dtype}")
        _validate.same_device(self.x, removed, "x", "removed")
        if sample is not None:
            self._sample(sample, removed.shape[0], "removed")
            if removed.shape[-1] != n:
                raise ValueError(f"removed must have {n} units in its last dim, got shape {tuple(removed.shape)}")
            if sample.numel() == 0:
                return self._empty()
            blocks = removed[:, None, :]
            return self._go(1, lambda b0, b1, v0, v1: blocks[b0:b1], sample).squeeze(1)
        _validate.batch_match(self.x, removed, "x", "removed")
        if removed.shape[-1] != n:
            raise ValueError(f"removed must have {n} units in its last dim, got shape {tuple(removed.shape)}")
        per_sample = removed.shape[1] if removed.ndim == 3 else 1
        if per_sample == 0:
            raise ValueError(f"removed holds no masks: shape {tuple(removed.shape)}; expected (B, n) or (B, S, n), "
                             f"S ≥ 1")
        blocks = removed.reshape(self.x.shape[0], per_sample, n)
        out = self._go(per_sample, lambda b0, b1, v0, v1: blocks[b0:b1, v0:v1], None)
        return out if removed.ndim == 3 else out.squeeze(1)

    def masked(self, masks: Masks, *, n_variants: int, sample: torch.Tensor | None = None) -> torch.Tensor:
        """Model output on ``n_variants`` perturbed variants of every sample, masks built lazily →
        ``(B, n_variants)``.

        For callers whose masks are cheaper to build per chunk than to hold (TRACE's searches, a greedy step over
        every remaining unit). masks: ``masks(b0, b1, v0, v1)`` returns the ``(b1-b0, v1-v0, n)`` bool masks
        (True = removed) of variants v0..v1-1 of samples b0..b1-1; it is called once per piece of every chunk of
        at most ``batch_size`` inputs. sample: optional ``(R,)`` int64 indices into x; the samples are then
        ``x[sample]`` (each with its reference and target, x not copied) and the result ``(R, n_variants)``.
        """
        n_variants = _validate.positive_int(n_variants, "n_variants")
        if not callable(masks):
            raise TypeError(f"masks must be a callable(b0, b1, v0, v1) -> bool tensor, got {type(masks).__name__}")
        if sample is not None:
            self._sample(sample, sample.numel(), "sample")
            if sample.numel() == 0:
                return self._empty().view(0, n_variants)
        return self._go(n_variants, masks, sample)

    def curve(self, attributions: torch.Tensor | None, fractions: Sequence[float] | torch.Tensor, *,
              order: str | torch.Tensor = "morf", reduce: str = "sum_abs",
              generator: torch.Generator | int | None = None) -> torch.Tensor:
        """Model output after cumulatively removing a fraction of units in a given order → ``(B, len(fractions))``.

        At fraction f the first ``round(f·n)`` units of the order are removed (half to even, so ``f = k/n``
        removes exactly k units). attributions: see ``unit_scores``, ties by lower unit id; unused (may be None)
        when order is ``"random"`` or a tensor. order: ``"morf"``, ``"lerf"``, ``"random"`` (needs generator) or a
        ``(B, n)``/``(n,)`` int64 permutation of unit ids. reduce: the unit-reduction rule of ``unit_scores``.
        A constant map defines no order: its units are removed in index order and a
        :class:`~faithlab.perturb.ConstantMapWarning` counts those samples.
        """
        x, n = self.x, self.units.n
        f = _validate.fractions(fractions, "fractions")
        if isinstance(order, torch.Tensor):
            _validate.same_device(x, order, "x", "order")
            perm = order.expand(x.shape[0], -1) if order.ndim == 1 else order
            if perm.shape != (x.shape[0], n) or perm.dtype != torch.int64 or not _is_permutation(perm):
                raise ValueError(f"order tensor must hold an int64 permutation of the {n} unit ids per sample")
        elif order == "random":
            perm = _order(torch.zeros(x.shape[0], n, device=x.device), "random", generator=generator)
        else:
            _validate.one_of(order, "order", ORDERS)
            if attributions is None:
                raise ValueError(f"attributions are required for order={order!r}")
            check_attributions(attributions, x)
            scores = unit_scores(attributions, self.units, reduce=reduce)
            _validate.batch_match(x, scores, "x", "attributions")
            warn_constant(constant_maps(scores), "their units are removed in index order")
            perm = None
        cmp = _exact_float(n, x.dtype if x.is_floating_point() else torch.float32)
        rank = _ranks(perm, cmp) if perm is not None else _order_ranks(scores, order, cmp)
        counts = torch.round(f * n)
        return self._go(f.numel(), _Thresholds(rank, counts), None)


def _exact_float(n: int, dtype: torch.dtype) -> torch.dtype:
    """A float dtype holding the integers 0..n exactly, ``dtype`` itself when it can."""
    for d in (dtype, torch.float32, torch.float64):
        if d.is_floating_point and n <= 2 / torch.finfo(d).eps:  # float32: every integer up to 2^24
            return d
    return torch.float64


def _is_permutation(perm: torch.Tensor) -> bool:
    """Whether every row of an int64 ``(B, n)`` tensor holds each of 0..n-1 once (a count, not a sort)."""
    n = perm.shape[1]
    if not bool(((perm >= 0) & (perm < n)).all()):
        return False
    seen = torch.zeros(perm.shape, dtype=torch.int32, device=perm.device)
    return bool((seen.scatter_add_(1, perm, torch.ones_like(seen)) == 1).all())


def masked_outputs(model: Callable, x: torch.Tensor, masks: Masks, *, n_variants: int, units: Units | None = None,
                   reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                   batch_size: BatchSize = 256) -> torch.Tensor:
    """Model output on ``n_variants`` perturbed variants of every sample, masks built lazily → ``(B, n_variants)``.

    One call of :meth:`Removal.masked` (bind a :class:`Removal` to run several). masks: a callable
    ``masks(b0, b1, v0, v1)`` returning the ``(b1-b0, v1-v0, n)`` bool masks (True = removed) of variants v0..v1-1
    of samples b0..b1-1; it is called once per piece of every chunk of at most ``batch_size`` inputs (an int;
    with ``"auto"`` the size the probe picks). Other arguments as in :func:`removal_curve`.
    """
    return Removal(model, x, units=units, reference=reference, output=output, target=target,
                   batch_size=batch_size).masked(masks, n_variants=n_variants)


def removal_curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None,
                  fractions: Sequence[float] | torch.Tensor, *, order: str | torch.Tensor = "morf",
                  reduce: str = "sum_abs", reference: Reference = "zero", output: Output = "prob",
                  target: torch.Tensor | None = None, units: Units | None = None, batch_size: BatchSize = 256,
                  generator: torch.Generator | int | None = None) -> torch.Tensor:
    """Model output after cumulatively removing a fraction of units in a given order → ``(B, len(fractions))``.

    Deletion curves of TRACE §5.1 (MoRF/LeRF), Few-class MIF/LIF §2.1, SaCo's AOPC/LOdds/AUC §3.2, F-Fidelity's
    Fid± §1.2; one call of :meth:`Removal.curve`. At fraction f the first ``round(f·n)`` units of the order are
    removed; rounding is half to even (Python's ``round``, ``torch.round``), so ``f = k/n`` removes exactly k units.
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
    ``(N,)``, or ``(N, K)`` for K read-outs of the same inputs (the result then has a trailing dim K).
    target: ``(B,)`` int64 classes; None → the model's prediction on the clean x.
    units: None infers pixels for 4-D x and dim-1 units (time steps, tokens) otherwise.
    batch_size: at most this many perturbed inputs per forward call; results do not depend on it. ``"auto"``: the
    size with the least forward time per input for this model and input shape, found by a short timing probe of
    bare forward passes (the first sample repeated, a few percent of the call's forward time, global RNG left
    untouched) on the first call and cached for the process; :mod:`faithlab.perturb.autobatch` has the rules.
    A constant map defines no order: its units are removed in index order and a
    :class:`~faithlab.perturb.ConstantMapWarning` counts those samples. NaN/inf logits raise a ValueError.
    """
    return Removal(model, x, units=units, reference=reference, output=output, target=target,
                   batch_size=batch_size).curve(attributions, fractions, order=order, reduce=reduce,
                                                generator=generator)


def removal_outputs(model: Callable, x: torch.Tensor, removed: torch.Tensor, *, units: Units | None = None,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = 256, sample: torch.Tensor | None = None) -> torch.Tensor:
    """Model output after removing exactly the units flagged in removed → ``(B,)`` or ``(B, S)``.

    The single-step primitive behind Fid±/RFid±/FFid± (F-Fidelity §1.2–1.5), SaCo's group perturbations (§3.1)
    and μF subsets (§4.6); one call of :meth:`Removal.outputs`. removed: ``(B, n)`` bool, or ``(B, S, n)`` for S
    masks per sample. Other arguments as in ``removal_curve``; at most ``batch_size`` perturbed inputs go through
    the model per call (``"auto"``: see ``removal_curve``).
    sample: optional ``(R,)`` int64 indices into x for an irregular set of masks (TRACE's annealing evaluates a
    different number of masks per image each step): mask ``removed[r]`` (``(R, n)``) is applied to
    ``x[sample[r]]`` (with its reference and target) → ``(R,)``; x is not copied per mask.
    """
    return Removal(model, x, units=units, reference=reference, output=output, target=target,
                   batch_size=batch_size).outputs(removed, sample=sample)

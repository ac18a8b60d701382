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
from faithlab.perturb.engine import (Masks, Output, Thresholds, check_read_out, clean_logits, output_fn, prepare, run,
                                     shared_compute)
from faithlab.perturb.orders import ORDERS, order_ranks, ranks_as
from faithlab.perturb.orders import order as _order
from faithlab.perturb.imputation import NoisyLinear
from faithlab.perturb.references import Reference, make_reference
from faithlab.perturb.units import Units, check_attributions, constant_maps, unit_scores, warn_constant

__all__ = ["Removal", "masked_outputs", "removal_curve", "removal_outputs", "deletion_insertion", "CURVE_KINDS",
           "DELETION_INSERTION_FRACTIONS"]

CURVE_KINDS = ("deletion", "insertion")
"""How a curve of :meth:`Removal.curves` moves along its order: removing units from x, or restoring them into the
fully removed x."""
DELETION_INSERTION_FRACTIONS = tuple(i / 20 for i in range(21))
"""The default points of :func:`deletion_insertion`: 0, 5, …, 100 % of the units."""


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
    on it beyond float rounding. ``"auto"``: found on the run's own forward calls (:mod:`faithlab.perturb.autobatch`,
    cached per process).

    Every run raises a ValueError naming the samples and variants if the model returns NaN/inf logits (or a
    callable ``output`` a non-finite read-out) on any input: no score is computed from them.
    """

    def __init__(self, model: Callable, x: torch.Tensor, *, units: Units | None = None, reference: Reference = "zero",
                 output: Output = "prob", target: torch.Tensor | None = None, batch_size: BatchSize = None):
        self.units: Units = prepare(model, x, units, output, target, batch_size)
        self.model, self.x, self.output, self.batch_size = model, x, output, batch_size
        self.reference: torch.Tensor | NoisyLinear = make_reference(x, reference)
        # what makes the fully removed input: the reference's spec (a function of x), the tensor itself or the
        # imputation object (its noise keys)
        self._reference_key = (("imputation", *self.reference.key) if isinstance(self.reference, NoisyLinear)
                               else (reference,) if isinstance(reference, (str, int, float)) else ("tensor",))
        self._target = target
        self._clean: torch.Tensor | None = None
        self._full: torch.Tensor | None = None

    @property
    def target(self) -> torch.Tensor:
        """The ``(B,)`` classes the read-out uses: the given target, or the model's prediction on the clean x
        (computed on first use, ``batch_size`` at a time, and kept)."""
        if self._target is None:
            self._target = self._clean_logits(
                autobatch.plan(self.batch_size, self.model, self.x, self.x.shape[0])).argmax(dim=1)
        return self._target

    def _clean_logits(self, batch_size: int | autobatch.Plan) -> torch.Tensor:
        """The logits of the clean x, computed once (and shared inside :func:`~faithlab.perturb.shared.sharing`)."""
        if self._clean is None:
            self._clean = clean_logits(self.model, self.x, batch_size)
        return self._clean

    def _full_logits(self, batch_size: int | autobatch.Plan) -> torch.Tensor:
        """The logits of the fully removed x (every unit at the reference), computed once (and shared inside
        :func:`~faithlab.perturb.shared.sharing`): the last point of every deletion curve, the first of every
        insertion curve, whatever their order."""
        if self._full is None:
            x, b, n = self.x, self.x.shape[0], self.units.n
            every = Thresholds(torch.zeros(b, n, dtype=torch.float32, device=x.device),
                               torch.tensor([n], dtype=torch.float32, device=x.device))  # rank 0 < n: all removed

            def compute() -> torch.Tensor:
                zeros = torch.zeros(b, dtype=torch.int64, device=x.device)
                return run(self.model, x, self.units, self.reference, lambda z, _: z, zeros, 1, every,
                           batch_size).squeeze(1)

            tensors = ((x, self.reference) if self._reference_key[0] == "tensor"
                       else (x, *self.reference.tensors) if self._reference_key[0] == "imputation" else (x,))
            self._full = shared_compute(("full", *self._reference_key), self.model, tensors, compute)
        return self._full

    def _go(self, per_sample: int, masks: Masks | Thresholds, sample: torch.Tensor | None,
            batch_size: int | autobatch.Plan | None = None) -> torch.Tensor:
        n_samples = self.x.shape[0] if sample is None else sample.numel()
        if batch_size is None:  # one plan for the run's passes (the prediction's and the perturbed inputs')
            batch_size = autobatch.plan(self.batch_size, self.model, self.x, n_samples * (per_sample + 1))
        if self._target is None:  # the prediction in chunks of this run's batch size, as a one-shot call computes it
            self._target = self._clean_logits(batch_size).argmax(dim=1)
        out = run(self.model, self.x, self.units, self.reference, self.output, self._target, per_sample, masks,
                  batch_size, rows=sample)
        if isinstance(self.reference, NoisyLinear):  # an imputation short of its tolerance is said, once
            self.reference.warn_unconverged()
        return out

    def _read(self, logits: torch.Tensor) -> torch.Tensor:
        """The read-out of logits of x's samples (one input each), checked as the engine checks its own."""
        target = self.target.to(logits.device)
        check_read_out(self.output, logits, target)
        out = output_fn(self.output)(logits, target)
        if not isinstance(out, torch.Tensor) or out.ndim not in (1, 2) or out.shape[0] != logits.shape[0]:
            raise ValueError(f"output must give one value per input, shape ({logits.shape[0]},), or the same "
                             f"number of values per input, shape ({logits.shape[0]}, K)")
        if out.is_floating_point() and not bool(torch.isfinite(out).all()):
            bad = (~torch.isfinite(out)).reshape(out.shape[0], -1).any(dim=1).nonzero().flatten()
            raise ValueError(f"output gave NaN or inf on samples {bad[:8].tolist()}; no score can be computed from "
                             f"them")
        return out

    def clean(self) -> torch.Tensor:
        """The read-out on the clean x → ``(B,)`` (or ``(B, K)``), from the logits the prediction was read from
        when the target is predicted: the clean input goes through the model once per :class:`Removal` (once per
        :func:`~faithlab.perturb.shared.sharing` block)."""
        return self._read(self._clean_logits(autobatch.plan(self.batch_size, self.model, self.x,
                                                            self.x.shape[0])))

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
        :class:`~faithlab.perturb.ConstantMapWarning` counts those samples. One curve of :meth:`curves`.
        """
        return self.curves(attributions, fractions, orders=(order,), reduce=reduce, generator=generator)[0]

    def curves(self, attributions: torch.Tensor | None, fractions: Sequence[float] | torch.Tensor, *,
               orders: Sequence[str | torch.Tensor] = ("morf", "lerf"), kinds: str | Sequence[str] = "deletion",
               reduce: str = "sum_abs", generator: torch.Generator | int | None = None) -> torch.Tensor:
        """Several removal curves of the same samples in one run → ``(K, B, len(fractions))``, K = ``len(orders)``.

        Curve k follows ``orders[k]`` (as ``order`` of :meth:`curve`) as ``kinds[k]`` (one kind for all, or one per
        curve): ``"deletion"`` removes the first ``round(f·n)`` units of the order from x at fraction f;
        ``"insertion"`` restores them into the fully removed x (every other unit at the reference), so its
        fraction 0 is the fully removed x and fraction 1 is x (RISE's insertion; inserting in MoRF order is
        deleting in LeRF order, read backwards).

        The inputs the curves have in common go through the model once: the clean x (no unit removed, shared with
        the prediction pass when ``target`` is None), the fully removed x (every unit removed, whatever the order)
        and any removal that recurs (the same count of the same order). Inside a
        :func:`~faithlab.perturb.shared.sharing` block the clean and fully removed x are shared with every other
        run of the block on the same model and x.
        """
        x, n = self.x, self.units.n
        f = _validate.fractions(fractions, "fractions")
        if isinstance(orders, (str, torch.Tensor)) or not hasattr(orders, "__len__") or len(orders) == 0:
            raise TypeError(f"orders must be a non-empty sequence of orders ('morf', 'lerf', 'random' or a "
                            f"permutation tensor), got {type(orders).__name__}")
        kinds = [kinds] * len(orders) if isinstance(kinds, str) else list(kinds)
        if len(kinds) != len(orders):
            raise ValueError(f"kinds must be one kind or one per order ({len(orders)}), got {len(kinds)}")
        for kind in kinds:
            _validate.one_of(kind, "kinds", CURVE_KINDS)
        cmp = _exact_float(n, x.dtype if x.is_floating_point() else torch.float32)
        scores = None
        ranks = []
        for order in orders:
            if isinstance(order, torch.Tensor):
                _validate.same_device(x, order, "x", "order")
                perm = order.expand(x.shape[0], -1) if order.ndim == 1 else order
                if perm.shape != (x.shape[0], n) or perm.dtype != torch.int64 or not _is_permutation(perm):
                    raise ValueError(f"order tensor must hold an int64 permutation of the {n} unit ids per sample")
                ranks.append(ranks_as(perm, cmp))
            elif isinstance(order, str) and order == "random":
                perm = _order(torch.zeros(x.shape[0], n, device=x.device), "random", generator=generator)
                ranks.append(ranks_as(perm, cmp))
            else:
                _validate.one_of(order, "order", ORDERS)
                if attributions is None:
                    raise ValueError(f"attributions are required for order={order!r}")
                if scores is None:
                    attributions = check_attributions(attributions, x)
                    scores = unit_scores(attributions, self.units, reduce=reduce)
                    _validate.batch_match(x, scores, "x", "attributions")
                    warn_constant(constant_maps(scores), "their units are removed in index order")
                ranks.append(order_ranks(scores, order, cmp))
        counts = torch.round(f * n)
        # every curve as deletion counts of a rank: inserting the first k units of an order removes its last n - k
        segments, columns = [], []
        for rank, kind in zip(ranks, kinds):
            d = counts if kind == "deletion" else n - counts
            if kind == "insertion":
                rank = (n - 1) - rank  # the order reversed (exact in cmp)
            inner = torch.unique(d[(d > 0) & (d < n)])  # sorted; a count that recurs is run once
            segments.append((rank, inner))
            columns.append(d)
        n_inner = sum(inner.numel() for _, inner in segments)
        b = x.shape[0]
        batch_size = autobatch.plan(self.batch_size, self.model, x, b * (n_inner + 2))  # one plan, every pass
        parts, at = [], 2  # columns: 0 the clean x, 1 the fully removed x, then the segments' inner counts
        lookup = []
        for (rank, inner), d in zip(segments, columns):
            pos = torch.searchsorted(inner, d.clamp(1, n - 1)) + at if inner.numel() else torch.zeros_like(d)
            lookup.append(torch.where(d == 0, 0, torch.where(d == n, 1, pos)).long())
            at += inner.numel()
        wanted = torch.cat(lookup)
        if self._target is None or bool((wanted == 0).any()):
            clean = self._read(self._clean_logits(batch_size))
        else:
            clean = None
        full = self._read(self._full_logits(batch_size)) if bool((wanted == 1).any()) else None
        if n_inner:
            kept = [(rank, inner) for rank, inner in segments if inner.numel()]
            inner_out = self._go(n_inner, Thresholds([r for r, _ in kept], [i for _, i in kept]), None, batch_size)
            parts.append(inner_out)
        like = parts[0] if parts else (clean if clean is not None else full)[:, None]
        tail = like.shape[2:]
        pad = lambda v: (v[:, None] if v is not None else torch.zeros(b, 1, *tail, dtype=like.dtype,  # noqa: E731
                                                                        device=like.device)).to(like.dtype)
        table = torch.cat([pad(clean), pad(full), *parts], dim=1)  # (B, 2 + n_inner, *tail)
        index = wanted.to(table.device).view(1, -1, *([1] * len(tail))).expand(b, -1, *tail)
        out = table.gather(1, index).view(b, len(orders), f.numel(), *tail)
        return out.movedim(1, 0)


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
                   batch_size: BatchSize = None) -> torch.Tensor:
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
                  target: torch.Tensor | None = None, units: Units | None = None, batch_size: BatchSize = None,
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
    batch_size: at most this many perturbed inputs per forward call; results do not depend on it beyond float
    rounding. None (the default): a size fixed by the model's activations for one input of x's shape, dtype
    and device (:func:`faithlab.perturb.default_batch.default_batch_size`), the same on every call. ``"auto"``: the size with the least forward time per input for this model, input shape and thread
    count, found on the call's own first forward calls (timed at growing sizes, nothing computed twice) and cached
    for the process (:class:`faithlab.perturb.autobatch.Plan`); its chunks follow timings, so repeated calls can
    differ in the last bits (the default does not).
    A constant map defines no order: its units are removed in index order and a
    :class:`~faithlab.perturb.ConstantMapWarning` counts those samples. NaN/inf logits raise a ValueError.
    """
    return Removal(model, x, units=units, reference=reference, output=output, target=target,
                   batch_size=batch_size).curve(attributions, fractions, order=order, reduce=reduce,
                                                generator=generator)


def removal_outputs(model: Callable, x: torch.Tensor, removed: torch.Tensor, *, units: Units | None = None,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = None, sample: torch.Tensor | None = None) -> torch.Tensor:
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


def deletion_insertion(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None,
                       fractions: Sequence[float] | torch.Tensor = DELETION_INSERTION_FRACTIONS, *,
                       order: str | torch.Tensor = "morf", reduce: str = "sum_abs", reference: Reference = "zero",
                       output: Output = "prob", target: torch.Tensor | None = None, units: Units | None = None,
                       batch_size: BatchSize = None,
                       generator: torch.Generator | int | None = None) -> dict[str, torch.Tensor]:
    """RISE's deletion and insertion curves of attribution maps and their areas (Petsiuk et al. 2018), in one run.

    Deletion: the model's output as the first ``round(f·n)`` units of the order (most relevant first by default) are
    removed from x; a faithful map makes it fall fast (low area). Insertion: the output as the same units are
    restored into the fully removed x (every unit at the reference); a faithful map makes it rise fast (high area).
    The clean x, which is deletion's first point and insertion's last (and the prediction pass when ``target`` is
    None), and the fully removed x, deletion's last point and insertion's first, go through the model once per
    sample: B·(F_inner + 2) inputs in all for F_inner distinct counts strictly between 0 and n.

    fractions: the points, in [0, 1] (default 0, 0.05, …, 1); the areas are trapezoids over them, so they are
    areas over the fraction of units when the points span [0, 1]. Other arguments as in :func:`removal_curve`
    (``reduce="sum"`` keeps a signed map's sign: TorchCAM ranks the CAM values themselves). Returns
    ``deletion`` and ``insertion`` ``(B, F)``, ``deletion_auc`` and ``insertion_auc`` ``(B,)`` (trapezoids in the
    curves' dtype) and ``fractions`` ``(F,)`` float64.
    """
    runner = Removal(model, x, units=units, reference=reference, output=output, target=target,
                     batch_size=batch_size)
    f = _validate.fractions(fractions, "fractions")
    deletion, insertion = runner.curves(attributions, f, orders=(order, order), kinds=CURVE_KINDS, reduce=reduce,
                                        generator=generator)
    at = f.to(deletion.device, deletion.dtype) if deletion.is_floating_point() else f.to(deletion.device)
    area = lambda c: torch.trapezoid(c if c.is_floating_point() else c.double(), at, dim=1)  # noqa: E731
    return {"deletion": deletion, "insertion": insertion, "deletion_auc": area(deletion),
            "insertion_auc": area(insertion), "fractions": f}

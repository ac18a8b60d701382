"""The removal engine: the one batched forward loop behind every metric.

Every entry point builds perturbed inputs chunk by chunk (never all at once) and sends exactly ``batch_size`` of
them per forward call, straddling samples, so memory is bounded by ``batch_size`` (removal curves fill up to
:data:`_GROUP_BYTES` of inputs at once) and results do not depend on it beyond float rounding. ``batch_size="auto"``
finds the size on the run's own forward calls (:mod:`faithlab.perturb.autobatch`).
Metrics reach the loop through the bound runner :class:`faithlab.perturb.runner.Removal` (unit removals of x:
given masks, cumulative curves, lazily built masks); this module holds the loop itself and its public pieces for
inputs that are not unit removals: :func:`evaluate_inputs` (generated inputs, e.g. Few-class Fidelity's blurred
candidates) and :func:`grid_chunks` (the chunks of a (sample, variant) grid); the model's read-outs and checked logits
are in :mod:`faithlab.perturb.readout`, the logits shared between metrics in :mod:`faithlab.perturb.shared`.

The loop is written for small models too, where the engine's own cost shows (a 1×32×32 → 10 linear model runs
5,632 forward passes in ~10 ms on one CPU thread): perturbed inputs are computed as ``x·keep + reference·(1-keep)``
from float masks written by one comparison (a select on a bool mask is ~10x slower), removal curves compare
element ranks with the counts and fill whole samples of several chunks per op, read-outs and checks run once per
group of chunks, and the removal order comes from a flat integer sort (:func:`faithlab.perturb.orders.order`).

One concept: the batched forward loop over perturbed inputs — how they are built chunk by chunk (from unit masks
and a reference, or by an imputation such as ROAD's from each input's kept pixels), sent through the model and read
out, with the clean and fully removed inputs shared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import torch

from faithlab import _validate
from faithlab.perturb import autobatch
from faithlab.perturb.orders import top_masks
from faithlab.perturb.units import Units, check_units, expand_units, is_identity, batch_rows, default_units
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.readout import (OUTPUTS, NonFiniteOutput, Output, check_read_out, logits,  # noqa: F401
                                      model_logits, non_finite_error, output_fn)
from faithlab.perturb.shared import clean_logits, shared_compute, sharing  # noqa: F401  (also read from here)

__all__ = ["Masks", "evaluate_inputs", "grid_chunks"]

Masks = Callable[[int, int, int, int], torch.Tensor]
"""``masks(b0, b1, v0, v1)`` → ``(b1-b0, v1-v0, n)`` bool unit masks of variants v0..v1-1 of samples b0..b1-1."""


def _predict(model: Callable, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The model's predicted class (argmax) on the clean x ``(B,)``, ``batch_size`` samples per forward call;
    NaN/inf logits raise naming the samples."""
    return clean_logits(model, x, batch_size).argmax(dim=1)


def prepare(model: Callable, x: torch.Tensor, units: Units | None, output: Output, target: torch.Tensor | None,
            batch_size: BatchSize, target_name: str = "target") -> Units:
    """Validation shared by the engine's entry points; returns the units (inferred when None). ``target_name``:
    the caller's name for the target argument (the F-Fidelity and accuracy metrics call it ``y``)."""
    _validate.model(model, "model")
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    _validate.inputs(x, "x")
    _validate.model_accepts(model, x, "model", "x")  # first: reading x on another device (e.g. meta) would fail
    _validate.finite(x, "x")
    _validate.batch_size(batch_size, "batch_size")
    if not callable(output) and (isinstance(output, (list, dict, set, torch.Tensor)) or output not in OUTPUTS):
        raise ValueError(f"output must be one of {OUTPUTS} or a callable(logits, target), got {output!r}")
    units = default_units(x) if units is None else units
    check_units(units, x)
    if target is not None:
        _validate.tensor(target, target_name, ndim=1)
        if target.dtype != torch.int64:
            raise TypeError(f"{target_name} must be an int64 tensor of class indices, got dtype {target.dtype}")
        _validate.batch_match(x, target, "x", target_name)
        _validate.same_device(x, target, "x", target_name)
        if callable(output) and bool((target < 0).any()):  # a built-in read-out's range: check_read_out
            raise ValueError(f"{target_name} must hold non-negative class indices")
    return units


def _pieces(c0: int, c1: int, per_sample: int) -> list[tuple[int, int, int, int]]:
    """Cells c0..c1-1 of the row-major (sample, variant) grid as rectangular pieces (b0, b1, v0, v1): a partial
    first sample, whole middle samples, a partial last sample."""
    first, v_first = divmod(c0, per_sample)
    last, v_last = divmod(c1 - 1, per_sample)
    if first == last:
        return [(first, first + 1, v_first, v_last + 1)]
    pieces = [(first, first + 1, v_first, per_sample)]
    if last > first + 1:
        pieces.append((first + 1, last, 0, per_sample))
    pieces.append((last, last + 1, 0, v_last + 1))
    return pieces


def grid_chunks(n_samples: int, n_variants: int, *, batch_size: int) -> Iterator[list[tuple[int, int, int, int]]]:
    """The chunks of ``batch_size`` inputs (the last one smaller) of the row-major (sample, variant) grid of
    ``n_samples`` × ``n_variants`` inputs, each as a list of rectangular pieces ``(b0, b1, v0, v1)``: variants
    v0..v1-1 of samples b0..b1-1 (a partial first sample, whole middle samples, a partial last sample).

    The batching the engine uses, for callers that build generated inputs chunk by chunk (Few-class Fidelity's
    candidate images): full chunks keep every forward pass at the batch size the caller chose.
    """
    n_samples = _validate.positive_int(n_samples, "n_samples")
    n_variants = _validate.positive_int(n_variants, "n_variants")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    return (pieces for _, pieces in _blocks(n_samples, n_variants, batch_size))


def _blocks(batch: int, per_sample: int, batch_size: int):
    """Chunks of exactly ``batch_size`` cells (the last one smaller) of the row-major (sample, variant) grid: the
    first cell's flat index and the chunk as a list of rectangular pieces (b0, b1, v0, v1), see :func:`_pieces`.
    Full chunks keep every forward pass at the batch size the caller chose (on CPU a smaller batch can cost far
    more than its share)."""
    total = batch * per_sample
    for c0 in range(0, total, batch_size):
        yield c0, _pieces(c0, min(c0 + batch_size, total), per_sample)


class Thresholds:
    """Cumulative removal masks: variant v of sample b removes the units with ``rank[b, u] < counts[v]``, i.e. the
    first ``counts[v]`` units of its order (rank: ``(B, n)`` positions, a float dtype that holds them exactly).

    Several orders go through one call as segments: ``rank`` and ``counts`` may be sequences of the same length,
    the variants being segment 0's counts, then segment 1's, … (each compared with its own ranks). The engine turns
    the ranks into element ranks once per call and compares them with the counts chunk by chunk, writing the
    perturbed inputs directly (no bool masks, no gather per chunk)."""

    __slots__ = ("ranks", "counts", "starts")

    def __init__(self, rank: torch.Tensor | Sequence[torch.Tensor], counts: torch.Tensor | Sequence[torch.Tensor]):
        ranks = [rank] if isinstance(rank, torch.Tensor) else list(rank)
        counts = [counts] if isinstance(counts, torch.Tensor) else list(counts)
        self.ranks = ranks
        self.counts = [c.to(r.device, r.dtype) for r, c in zip(ranks, counts)]
        self.starts = [0]
        for c in self.counts:
            self.starts.append(self.starts[-1] + c.numel())

    @property
    def rank(self) -> torch.Tensor:
        return self.ranks[0]

    def spans(self, v0: int, v1: int) -> Iterator[tuple[int, int, int, int]]:
        """The segments variants v0..v1-1 touch: (segment, first count, last count + 1, offset in v0..v1)."""
        for j, (s0, s1) in enumerate(zip(self.starts, self.starts[1:])):
            lo, hi = max(v0, s0), min(v1, s1)
            if lo < hi:
                yield j, lo - s0, hi - s0, lo - v0

    def __call__(self, b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        """The ``(b1-b0, v1-v0, n)`` bool unit masks, as a masks callback (used for integer inputs)."""
        parts = [top_masks(self.ranks[j][b0:b1], self.counts[j][c0:c1]) for j, c0, c1, _ in self.spans(v0, v1)]
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def run(model: Callable, x: torch.Tensor, units: Units, reference: torch.Tensor, output: Output,
        target: torch.Tensor | None, per_sample: int, masks: Masks | Thresholds,
        batch_size: BatchSize | autobatch.Plan, target_name: str = "target",
        rows: torch.Tensor | None = None) -> torch.Tensor:
    """Run ``per_sample`` perturbed variants of every sample through the model, ≤ ``batch_size`` inputs per call.

    ``masks(b0, b1, v0, v1)`` gives the ``(b1-b0, v1-v0, n)`` bool unit masks of variants v0..v1-1 of samples
    b0..b1-1 (or a :class:`Thresholds`); perturbed inputs are built chunk by chunk, straight into the buffer that
    goes through the model. target None → prediction on the clean x. batch_size ``"auto"``: the cached size, or a
    :class:`faithlab.perturb.autobatch.Plan` that finds it on this run's own forward calls (a caller running
    several passes of one computation passes its plan).
    rows: optional ``(R,)`` int64 indices into x; the samples are then ``x[rows]`` (gathered chunk by chunk, so a
    sample may appear many times without being copied) and the result is ``(R, per_sample)``.
    Returns ``(B, per_sample)``. Non-finite logits (or a non-finite read-out of a callable ``output``) on any
    input raise a ValueError naming the samples and variants: no score is computed from them. The check is
    accumulated on the device and read once at the end (no synchronisation per chunk).

    Removed elements equal the reference and kept ones x, as ``torch.where(mask, reference, x)`` would give, but
    floating-point inputs are written as ``x·keep + reference·(1 - keep)`` (keep = 1.0 or 0.0; zero reference:
    ``0 + x·keep``), several times faster on the CPU than a select on a bool mask; only the sign of a zero can
    differ (a kept -0.0 may become 0.0).
    """
    fn = output_fn(output)
    n_samples = x.shape[0] if rows is None else rows.numel()
    if not isinstance(batch_size, autobatch.Plan):
        batch_size = autobatch.plan(batch_size, model, x, n_samples * per_sample)
    if target is None:
        target = _predict(model, x, batch_size)
    with torch.no_grad():
        if rows is not None:
            target = target[rows]
        fill = _filler(x, units, reference, masks, rows, per_sample)
        # an imputation solves a system per input: no spans, which may fill up to twice the inputs a chunk needs
        return _forward_grid(model, fill, n_samples, per_sample, fn, output, target, batch_size, target_name,
                             inputs_like=x, spans=isinstance(masks, Thresholds) and isinstance(reference, torch.Tensor))


def _filler(x: torch.Tensor, units: Units, reference: torch.Tensor,
            masks: Callable[[int, int, int, int], torch.Tensor] | Thresholds, rows: torch.Tensor | None,
            per_sample: int = 1):
    """``fill(b0, b1, v0, v1, dest)``: writes the perturbed inputs of variants v0..v1-1 of samples b0..b1-1 into
    ``dest`` ``(b1-b0, v1-v0, *x.shape[1:])``."""
    idx = units.index
    n = units.n
    broadcast = idx.shape[1:] != x.shape[1:]  # a unit spans a dim (channels): element masks broadcast over it
    identity = is_identity(idx, n)

    def take(t: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
        return batch_rows(t, b0, b1) if rows is None or t.shape[0] == 1 else t[rows[b0:b1]]

    if not isinstance(reference, torch.Tensor):  # an imputation (ROAD's NoisyLinear): from each input's kept pixels
        return _imputing_filler(x, units, reference, masks, rows, take, per_sample)
    if not x.is_floating_point():  # token ids: a select (integer arithmetic would serve as well, but they are rare)
        def fill_select(b0: int, b1: int, v0: int, v1: int, dest: torch.Tensor) -> None:
            m = _unit_masks(masks, b0, b1, v0, v1, n)
            element_mask = m.view(*m.shape[:2], *idx.shape[1:]) if identity else expand_units(m, take(idx, b0, b1))
            torch.where(element_mask, take(reference, b0, b1)[:, None], take(x, b0, b1)[:, None], out=dest)

        return fill_select

    zero = reference.numel() == 1 and float(reference.reshape(())) == 0.0
    nothing = torch.zeros((), dtype=x.dtype, device=x.device)
    x1, ref1 = x[:, None], reference[:, None]  # (B | 1, 1, ...): broadcast over the variants
    keep_shape = idx.shape[1:]
    if isinstance(masks, Thresholds):
        def element_ranks(rank: torch.Tensor) -> torch.Tensor:  # each element's unit's position in the order
            if not identity:
                flat = idx.reshape(idx.shape[0], -1)
                rank = rank.gather(1, flat.expand(rank.shape[0], -1))
            return rank.view(rank.shape[0], 1, *keep_shape)

        rank1s = [element_ranks(r) for r in masks.ranks]  # (B, n) positions, exact in their float dtype
        countss = [c.view(-1, *([1] * (x.ndim - 1))) for c in masks.counts]

        def compare(op: Callable) -> Callable:
            if len(rank1s) == 1:
                rank1, counts = rank1s[0], countss[0]
                n_counts = counts.shape[0]

                def one(b0: int, b1: int, v0: int, v1: int, out: torch.Tensor) -> torch.Tensor:
                    c = counts if v0 == 0 and v1 == n_counts else counts[v0:v1]
                    return op(take(rank1, b0, b1), c, out=out)
                return one

            def segments(b0: int, b1: int, v0: int, v1: int, out: torch.Tensor) -> torch.Tensor:
                for j, c0, c1, at in masks.spans(v0, v1):  # each segment compared with its own ranks
                    op(take(rank1s[j], b0, b1), countss[j][c0:c1], out=out[:, at:at + c1 - c0])
                return out
            return segments

        keep_fn, drop_fn = compare(torch.ge), compare(torch.lt)
    else:
        def element_masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
            m = _unit_masks(masks, b0, b1, v0, v1, n)
            return m.view(*m.shape[:2], *keep_shape) if identity else expand_units(m, take(idx, b0, b1))

        def keep_fn(b0: int, b1: int, v0: int, v1: int, out: torch.Tensor) -> torch.Tensor:
            # 1 − removed read as bytes (a bool's byte is 0 or 1): the same 0.0/1.0 as logical_not into a float
            # buffer, whose bool → float cast is about 5x slower on a CPU (0.14 against 0.03 ms per 256 masks of
            # 1,024 units)
            return torch.sub(1, element_masks(b0, b1, v0, v1).view(torch.uint8), out=out)

        def drop_fn(b0: int, b1: int, v0: int, v1: int, out: torch.Tensor) -> torch.Tensor:
            return out.neg_().add_(1)  # called right after keep_fn on the same buffer: 1 - keep

    def fill(b0: int, b1: int, v0: int, v1: int, dest: torch.Tensor) -> None:
        if zero:
            keep = dest if not broadcast else dest.new_empty(b1 - b0, v1 - v0, *keep_shape)
            keep_fn(b0, b1, v0, v1, keep)
            torch.addcmul(nothing, take(x1, b0, b1), keep, out=dest)  # 0 + x·keep: removed elements are +0.0
            return
        keep = dest.new_empty(b1 - b0, v1 - v0, *keep_shape)
        torch.mul(take(x1, b0, b1), keep_fn(b0, b1, v0, v1, keep), out=dest)
        dest.addcmul_(take(ref1, b0, b1), drop_fn(b0, b1, v0, v1, keep))

    return fill


def _imputing_filler(x: torch.Tensor, units: Units, imputation, masks, rows: torch.Tensor | None,
                     take: Callable, per_sample: int) -> Callable:
    """The ``fill`` of :func:`_filler` for an imputation reference: the element masks of the chunk's variants,
    then ``imputation.impute`` of x's rows repeated per variant. Each input's noise is keyed by its sample (x's row)
    and a draw number: for cumulative removals the number of units removed (so a level's noise does not depend on
    the other levels asked, and equal removals get equal noise), otherwise the variant v, or with ``rows`` (masks
    for an irregular list of samples) the mask's position r·V + v in the call."""
    idx, n = units.index, units.n
    identity = is_identity(idx, n)
    keep_shape = idx.shape[1:]
    counts = (torch.cat([c.flatten() for c in masks.counts]).to(torch.int64)
              if isinstance(masks, Thresholds) else None)

    def fill(b0: int, b1: int, v0: int, v1: int, dest: torch.Tensor) -> None:
        m = _unit_masks(masks, b0, b1, v0, v1, n)  # (b, v, n) removed
        removed = m.view(*m.shape[:2], *keep_shape) if identity else expand_units(m, take(idx, b0, b1))
        b, v = b1 - b0, v1 - v0
        inputs = take(x, b0, b1)[:, None].expand(b, v, *x.shape[1:]).reshape(b * v, *x.shape[1:])
        keep = torch.logical_not(removed).reshape(b * v, *keep_shape)
        variants = torch.arange(v0, v1, device=x.device)
        if rows is None:
            ids = torch.arange(b0, b1, device=x.device).repeat_interleave(v)
            draws = (counts.to(x.device)[variants] if counts is not None else variants).repeat(b)
        else:  # the mask's position in the call: each mask of a sample its own noise
            ids = rows[b0:b1].to(x.device).repeat_interleave(v)
            draws = (torch.arange(b0, b1, device=x.device)[:, None] * per_sample + variants[None]).flatten()
        out = imputation.impute(inputs, keep, ids, draws)
        dest.copy_(out.view(b, v, *x.shape[1:]))

    return fill


def _unit_masks(masks: Callable[[int, int, int, int], torch.Tensor], b0: int, b1: int, v0: int, v1: int,
                n: int) -> torch.Tensor:
    m = masks(b0, b1, v0, v1)
    if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.shape != (b1 - b0, v1 - v0, n):
        got = (m.dtype, tuple(m.shape)) if isinstance(m, torch.Tensor) else type(m).__name__
        raise ValueError(f"masks({b0}, {b1}, {v0}, {v1}) must return a bool tensor of shape "
                         f"({b1 - b0}, {v1 - v0}, {n}), got {got}")
    return m


_GROUP_BYTES = 1 << 20
"""Inputs filled at once when they are built by comparisons (removal curves): up to this many bytes (at least one
chunk), then sent through the model ``batch_size`` at a time. On a CPU every small tensor op costs microseconds
whatever its size, so filling and reading out several chunks per op matters for small models; 1 MiB stays in a
CPU's cache."""


def _forward_grid(model: Callable, build: Callable, n_samples: int, per_sample: int,
                  fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], output: Output, target: torch.Tensor,
                  batch_size: int | autobatch.Plan, target_name: str = "target",
                  inputs_like: torch.Tensor | None = None,
                  spans: bool = False) -> torch.Tensor:
    """The one batched forward loop: exactly ``batch_size`` inputs per forward call (the last call smaller), read
    out by ``fn(logits, target)`` → ``(n_samples, per_sample)``. Non-finite logits or read-outs raise a ValueError
    naming the cells, checked on the device and read once at the end.

    inputs_like None: ``build(b0, b1, v0, v1)`` returns the ``(b1-b0, v1-v0, ...)`` inputs of variants v0..v1-1 of
    samples b0..b1-1 (joined by a cat when a chunk has several pieces). Else ``build(b0, b1, v0, v1, dest)`` writes
    them into ``dest``, a view of a fresh buffer of ``inputs_like``'s per-sample shape, dtype and device: one per
    chunk, or with ``spans`` one per group of chunks of up to :data:`_GROUP_BYTES` (see :func:`_fill`).

    The logits of a group are read out together: ``"prob"``/``"logit"`` gathered straight into the result, and the
    finiteness check one reduction into a per-cell buffer (float32/16 logits summed in float64, which no finite
    value overflows; float64 logits as ``logits·0``: 0 if all finite, else NaN).
    """
    total = n_samples * per_sample
    targets = (target.repeat_interleave(per_sample) if per_sample > 1 else target)[:, None]  # (cells, 1)
    shape = None if inputs_like is None else tuple(inputs_like.shape[1:])
    plan = batch_size if isinstance(batch_size, autobatch.Plan) else None
    per_input = None if shape is None else inputs_like.element_size() * math.prod(shape)
    direct = output in ("prob", "logit") if not callable(output) else False
    check_out = callable(output) or output == "log_odds"  # the others are finite when the logits are
    flat = flat2d = check = None
    g1 = 0
    with torch.no_grad():
        while g1 < total:
            g0 = g1
            size = batch_size if plan is None else plan.size(total - g0)  # a plan probing: one timed chunk
            group = size
            if spans and shape is not None and (plan is None or not plan.probing):
                group = size * max(1, _GROUP_BYTES // max(1, per_input * size))
            g1 = min(g0 + group, total)
            if shape is None:
                built = [build(b0, b1, v0, v1).flatten(0, 1) for b0, b1, v0, v1 in _pieces(g0, g1, per_sample)]
                chunks = [built[0] if len(built) == 1 else torch.cat(built)]
            else:
                inputs = _fill(build, g0, g1, per_sample, shape, inputs_like, spans)
                chunks = [inputs[c0:c0 + size] for c0 in range(0, g1 - g0, size)]
            logits = [model_logits(model, chunk, plan) for chunk in chunks]
            logits = logits[0] if len(logits) == 1 else torch.cat(logits)
            if flat is None:
                check_read_out(output, logits, target, target_name)
                targets = targets.to(logits.device)
                exact = torch.float32 if logits.device.type == "mps" else torch.float64  # MPS has no float64
                check = torch.empty(total, dtype=exact, device=logits.device)
            # float32/16 logits summed in float64 cannot overflow; otherwise logits·0 (0, or NaN if not finite)
            wide = logits.dtype != torch.float64 and check.dtype == torch.float64
            if direct and flat is not None and logits.dtype == flat.dtype:
                torch.gather(logits.softmax(dim=1) if output == "prob" else logits, 1, targets[g0:g1],
                             out=flat2d[g0:g1])
                torch.sum(logits if wide else logits.mul(0), dim=1, dtype=check.dtype, out=check[g0:g1])
                continue
            out = fn(logits, targets[g0:g1, 0])
            if not isinstance(out, torch.Tensor) or out.ndim not in (1, 2) or out.shape[0] != logits.shape[0] or (
                    flat is not None and out.shape[1:] != flat.shape[1:]):
                raise ValueError(f"output must give one value per input, shape ({logits.shape[0]},), or the same "
                                 f"number of values per input, shape ({logits.shape[0]}, K)")
            if flat is None:
                flat = torch.empty((total, *out.shape[1:]), dtype=out.dtype, device=out.device)
                flat2d = flat[:, None] if flat.ndim == 1 else None
            flat[g0:g1] = out
            part = logits.sum(dim=1, dtype=torch.float64) if wide else logits.mul(0).sum(dim=1)
            if check_out and out.is_floating_point():
                part = part + out.mul(0).reshape(out.shape[0], -1).sum(1).to(part.device)
            check[g0:g1] = part
    finite = torch.isfinite(check)
    if not bool(finite.all()):
        raise non_finite_error(~finite, per_sample, "inputs it was given")
    return flat.view(n_samples, per_sample, *flat.shape[1:])


def _fill(fill: Callable, c0: int, c1: int, per_sample: int, shape: tuple, like: torch.Tensor,
          spans: bool) -> torch.Tensor:
    """The inputs of cells c0..c1-1, written by ``fill(b0, b1, v0, v1, dest)`` into a fresh buffer.

    spans: their samples are filled whole, in one call (every variant), and the cells are the contiguous slice
    of them, when that computes at most twice as many inputs; one call per piece costs more on a CPU when the
    samples have few variants (a curve of 11 points fills ~6 samples per chunk of 64)."""
    b0, b1 = c0 // per_sample, (c1 - 1) // per_sample + 1
    whole = (b1 - b0) * per_sample
    if spans and whole <= 2 * (c1 - c0):
        buffer = torch.empty((whole, *shape), dtype=like.dtype, device=like.device)
        fill(b0, b1, 0, per_sample, buffer.view(b1 - b0, per_sample, *shape))
        start = c0 - b0 * per_sample
        return buffer[start:start + c1 - c0]
    inputs = torch.empty((c1 - c0, *shape), dtype=like.dtype, device=like.device)
    at = 0
    for b0, b1, v0, v1 in _pieces(c0, c1, per_sample):
        k = (b1 - b0) * (v1 - v0)
        fill(b0, b1, v0, v1, inputs[at:at + k].view(b1 - b0, v1 - v0, *shape))
        at += k
    return inputs


def evaluate_inputs(model: Callable, inputs: Callable[[int, int, int, int], torch.Tensor], *, n_samples: int,
                    n_variants: int, output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: BatchSize = None) -> torch.Tensor:
    """Model read-out on ``n_variants`` generated inputs of each of ``n_samples`` samples → ``(n_samples, n_variants)``.

    The engine's loop for inputs that are not unit removals of x (Few-class Fidelity's 804 blurred candidates per
    image, spec §2.3): ``inputs(b0, b1, v0, v1)`` returns the ``(b1-b0, v1-v0, *input_shape)`` inputs of variants
    v0..v1-1 of samples b0..b1-1, built lazily; exactly ``batch_size`` of them go through the model per call.
    output: as in :func:`~faithlab.perturb.runner.removal_curve`; a callable ``(logits, target) → (N,)`` may
    read every logit (e.g. an uncertainty score). target: ``(n_samples,)`` int64, required by the built-in
    read-outs (there is no clean x to predict from); a callable output gets zeros when it is None. batch_size: as
    in :func:`~faithlab.perturb.runner.removal_curve`; with ``"auto"`` ``inputs(0, 1, 0, 1)`` is called once
    more, to show the probe one input.
    """
    _validate.model(model, "model")
    n_samples = _validate.positive_int(n_samples, "n_samples")
    n_variants = _validate.positive_int(n_variants, "n_variants")
    batch_size = _validate.batch_size(batch_size, "batch_size")
    if not callable(inputs):
        raise TypeError(f"inputs must be a callable(b0, b1, v0, v1) -> tensor, got {type(inputs).__name__}")
    if not callable(output):
        _validate.one_of(output, "output", OUTPUTS)
        if target is None:
            raise ValueError(f"output={output!r} needs target: evaluate_inputs has no clean input to predict from")
    if target is None:
        target = torch.zeros(n_samples, dtype=torch.int64, device="cpu")  # moved to the logits by the loop
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

    if batch_size is None or batch_size == autobatch.AUTO:  # the plan needs one input's shape: the first one, built again
        batch_size = autobatch.plan(batch_size, model, build(0, 1, 0, 1)[0], n_samples * n_variants)
    return _forward_grid(model, build, n_samples, n_variants, output_fn(output), output, target, batch_size)

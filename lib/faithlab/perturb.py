"""The removal engine shared by every metric: feature units, scores, orderings, references and batched removal.

Vocabulary. A *unit* is a group of input elements removed together (a pixel with all its channels, an e×e patch,
a superpixel, a time step with all its channels, a token). Removing a unit replaces its elements by a *reference*
(``make_reference``). Units are described by :class:`Units`; masks over units are ``(B, n)`` bool tensors.

Randomness comes only from an explicit ``torch.Generator`` (or an int seed turned into a CPU one). Random numbers
are drawn on the generator's device and then moved to the inputs' device, so a CPU generator gives the same
results whatever the device of the inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from faithlab import _validate

__all__ = [
    "Units",
    "pixel_units",
    "patch_units",
    "segment_units",
    "time_units",
    "token_units",
    "unit_scores",
    "expand",
    "make_reference",
    "apply_removal",
    "order",
    "ranks",
    "default_units",
    "removal_curve",
    "removal_outputs",
    "bernoulli_subset",
    "exact_subset",
    "uniform_fraction_mask",
]

Reference = str | int | float | torch.Tensor
Output = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
_REDUCE = ("sum_abs", "sum", "mean", "mean_abs", "max")
_OUTPUTS = ("prob", "logit", "correct", "log_odds")


# --------------------------------------------------------------------------------------------------- units
@dataclass(frozen=True, eq=False)
class Units:
    """Feature units of an input: ``index`` gives the unit id (0..n-1) of every input element.

    ``index`` is an int64 tensor broadcastable to x, with size-1 dims where a unit spans the whole dim (channels):
    images ``(1|B, 1, H, W)``, series/embeddings ``(1|B, T, 1)``, token ids ``(1|B, L)``. ``n`` is the unit count.
    """

    index: torch.Tensor
    n: int

    def __post_init__(self) -> None:
        _validate.tensor(self.index, "index")
        if self.index.dtype != torch.int64 or self.index.ndim < 2:
            raise ValueError(f"index must be an int64 tensor with a batch dim, got {self.index.dtype} "
                             f"{tuple(self.index.shape)}")
        _validate.positive_int(self.n, "n")


def pixel_units(x: torch.Tensor) -> Units:
    """One unit per pixel (all channels together) of images x ``(B, C, H, W)``; n = H·W, row-major."""
    _validate.tensor(x, "x", ndim=4)
    h, w = x.shape[-2:]
    return Units(torch.arange(h * w, device=x.device).view(1, 1, h, w), h * w)


def patch_units(x: torch.Tensor, patch_size: int) -> Units:
    """Square ``patch_size``² patches of images x ``(B, C, H, W)``; n = (H/p)·(W/p), row-major (TRACE §5.1)."""
    _validate.tensor(x, "x", ndim=4)
    p = _validate.positive_int(patch_size, "patch_size")
    h, w = x.shape[-2:]
    if h % p or w % p:
        raise ValueError(f"patch_size={p} must divide the image height and width, got {h}x{w}")
    rows = torch.arange(h, device=x.device) // p
    cols = torch.arange(w, device=x.device) // p
    return Units((rows[:, None] * (w // p) + cols[None, :]).view(1, 1, h, w), (h // p) * (w // p))


def segment_units(labels: torch.Tensor) -> Units:
    """Superpixel units from integer label maps ``(B, H, W)`` (one per image) or ``(H, W)`` (shared).

    Labels may be any non-negative integers (e.g. skimage's SLIC, which starts at 1): each map is relabelled to
    0..n-1 keeping the labels' order. Every map of the batch must hold the same number n of segments.
    """
    _validate.tensor(labels, "labels", ndim=(2, 3))
    if labels.is_floating_point() or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must be an integer tensor, got dtype {labels.dtype}")
    maps = labels.long().reshape(-1, *labels.shape[-2:])
    if bool((maps < 0).any()):
        raise ValueError("labels must be non-negative integers")
    b = maps.shape[0]
    span = int(maps.max()) + 1
    keys = maps + span * torch.arange(b, device=maps.device).view(b, 1, 1)
    uniq, inverse = torch.unique(keys, return_inverse=True)
    counts = torch.bincount(uniq // span, minlength=b)
    if bool((counts != counts[0]).any()):
        raise ValueError(f"labels must give every image the same number of segments, got counts {counts.tolist()}")
    start = torch.cumsum(counts, 0) - counts
    index = inverse - start.view(b, 1, 1)
    return Units(index.unsqueeze(1), int(counts[0]))


def _dim1_units(x: torch.Tensor) -> Units:
    t = x.shape[1]
    return Units(torch.arange(t, device=x.device).view(1, t, *([1] * (x.ndim - 2))), t)


def time_units(x: torch.Tensor) -> Units:
    """One unit per time step (all channels together) of series x ``(B, T, C)`` or ``(B, T)``; n = T."""
    _validate.tensor(x, "x", ndim=(2, 3), floating=True)
    return _dim1_units(x)


def token_units(x: torch.Tensor) -> Units:
    """One unit per token of ids ``(B, L)`` (int) or embeddings ``(B, L, D)`` (float); n = L."""
    _validate.tensor(x, "x", ndim=(2, 3))
    if x.ndim == 2 and x.is_floating_point():
        raise TypeError("x of shape (B, L) must hold integer token ids; pass embeddings as (B, L, D)")
    if x.ndim == 3 and not x.is_floating_point():
        raise TypeError("x of shape (B, L, D) must be floating-point embeddings")
    return _dim1_units(x)


def default_units(x: torch.Tensor) -> Units:
    """Default units: pixels for 4-D images, dim-1 units (time steps, tokens, embedding positions) otherwise."""
    if x.ndim == 4:
        return pixel_units(x)
    if x.ndim in (2, 3):
        return _dim1_units(x)
    raise ValueError(f"x must be images (B, C, H, W), series (B, T, C) or tokens (B, L); got shape {tuple(x.shape)}")


def _check_units(units: Units, x: torch.Tensor) -> None:
    if not isinstance(units, Units):
        raise TypeError(f"units must be a faithlab.perturb.Units, got {type(units).__name__}")
    idx = units.index
    _validate.same_device(x, idx, "x", "units")
    if not _broadcasts(idx.shape, x.shape):
        raise ValueError(f"units index of shape {tuple(idx.shape)} does not broadcast to x of shape {tuple(x.shape)}")


def _broadcasts(shape: Sequence[int], target: Sequence[int]) -> bool:
    """True if a tensor of ``shape`` (same rank) broadcasts to ``target`` without changing it."""
    return len(shape) == len(target) and all(a in (1, b) for a, b in zip(shape, target))


def _rows(t: torch.Tensor, b0: int, b1: int) -> torch.Tensor:
    """Samples b0..b1-1 of a tensor whose batch dim is 1 (shared by all samples) or B."""
    return t if t.shape[0] == 1 else t[b0:b1]


def _expand(removed: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Unit masks ``(B, ..., n)`` → element masks ``(B, ..., *index.shape[1:])`` via index ``(1|B, ...)``."""
    lead = removed.shape[:-1]
    flat = index.reshape(index.shape[0], *([1] * (len(lead) - 1)), -1).expand(*lead, -1)
    return removed.gather(-1, flat).view(*lead, *index.shape[1:])


def expand(removed: torch.Tensor, units: Units) -> torch.Tensor:
    """Unit mask ``(B, n)`` bool → element mask ``(B, *units.index.shape[1:])`` bool, broadcastable to x."""
    _validate.tensor(removed, "removed", ndim=2)
    if removed.dtype != torch.bool:
        raise TypeError(f"removed must be a bool tensor, got dtype {removed.dtype}")
    if removed.shape[1] != units.n or units.index.shape[0] not in (1, removed.shape[0]):
        raise ValueError(f"removed must have shape (B, {units.n}) matching units, got {tuple(removed.shape)}")
    _validate.same_device(units.index, removed, "units", "removed")
    return _expand(removed, units.index)


# -------------------------------------------------------------------------------------------------- scores
def unit_scores(attributions: torch.Tensor, units: Units, reduce: str = "sum_abs") -> torch.Tensor:
    """Aggregate an attribution map into one score per unit → ``(B, n)``; higher = more important.

    attributions: shaped like x, or without the dims a unit spans (channels): images ``(B, C|1, H, W)`` or
    ``(B, H, W)``; series ``(B, T, C)`` or ``(B, T)``; tokens ``(B, L)`` or ``(B, L, D)``.
    reduce, over all attribution elements of a unit (channels × member positions):
    ``"sum_abs"`` Σ|a| (default; F-Fidelity and Few-class convention), ``"sum"`` Σa (SaCo group salience),
    ``"mean_abs"`` mean |a|, ``"mean"`` mean a (TRACE average pooling to patches), ``"max"`` max a.
    """
    if reduce not in _REDUCE:
        raise ValueError(f"reduce must be one of {_REDUCE}, got {reduce!r}")
    a = _validate.tensor(attributions, "attributions")
    if not a.is_floating_point():
        raise TypeError(f"attributions must be floating-point, got dtype {a.dtype}")
    idx = units.index
    _validate.same_device(idx, a, "units", "attributions")
    if a.ndim > idx.ndim:  # e.g. (B, L, D) attributions of token ids (B, L): the extra dims act as channels
        idx = idx.reshape(*idx.shape, *([1] * (a.ndim - idx.ndim)))
    spanned = [d for d in range(1, idx.ndim) if idx.shape[d] == 1]

    def fits(t: torch.Tensor) -> bool:
        return t.ndim == idx.ndim and idx.shape[0] in (1, t.shape[0]) and all(
            d in spanned or t.shape[d] == idx.shape[d] for d in range(1, idx.ndim))

    if a.ndim == idx.ndim - 1:
        a = next((a.unsqueeze(d) for d in spanned if fits(a.unsqueeze(d))), a)
    if not fits(a):
        raise ValueError(f"attributions of shape {tuple(attributions.shape)} do not match the units "
                         f"(index shape {tuple(idx.shape)}); expected x's shape or x's shape without channels")
    _validate.finite(a, "attributions")
    if reduce in ("sum_abs", "mean_abs"):
        a = a.abs()
    per_unit_channels = math.prod(a.shape[d] for d in spanned)
    if spanned:
        a = a.amax(dim=spanned, keepdim=True) if reduce == "max" else a.sum(dim=spanned, keepdim=True)
    b = a.shape[0]
    vals = a.reshape(b, -1)
    flat = idx.reshape(idx.shape[0], -1).expand(b, -1)
    if reduce == "max":
        init = torch.full((b, units.n), -math.inf, dtype=vals.dtype, device=vals.device)
        return init.scatter_reduce(1, flat, vals, reduce="amax", include_self=False)
    scores = torch.zeros(b, units.n, dtype=vals.dtype, device=vals.device).scatter_add_(1, flat, vals)
    if reduce in ("mean", "mean_abs"):
        sizes = torch.zeros(flat.shape[0], units.n, dtype=vals.dtype, device=vals.device)
        sizes.scatter_add_(1, flat, torch.ones_like(vals))
        scores = scores / (sizes * per_unit_channels)
    return scores


# ---------------------------------------------------------------------------------------------- references
def _gaussian_blur(x: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur over H, W with reflect padding (no edge repeat; valid for any kernel size)."""
    r = kernel_size // 2
    t = torch.arange(kernel_size, dtype=x.dtype, device=x.device) - r
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    c = x.shape[1]
    out = x
    for dim in (2, 3):
        size = x.shape[dim]
        pos = torch.arange(-r, size + r, device=x.device)
        if size == 1:
            pos = torch.zeros_like(pos)
        else:
            pos = pos.remainder(2 * (size - 1))
            pos = torch.where(pos >= size, 2 * (size - 1) - pos, pos)
        padded = out.index_select(dim, pos)
        weight = k.view(1, 1, -1, 1) if dim == 2 else k.view(1, 1, 1, -1)
        out = F.conv2d(padded, weight.expand(c, 1, *weight.shape[2:]), groups=c)
    return out


def make_reference(x: torch.Tensor, kind: Reference = "zero", *, kernel_size: int = 31,
                   sigma: float = 56.0) -> torch.Tensor:
    """Reference values that replace removed units, as a tensor with x's rank broadcastable to x.

    kind: ``"zero"`` 0 in the model's input space (dataset mean for normalised images; pad id 0 / zero embedding
    for tokens); ``"mean"`` per-sample scalar mean over all elements; ``"channel_mean"`` per-sample per-channel mean
    (images over H, W; series over T); ``"blur"`` Gaussian blur of each image (``kernel_size``, ``sigma``; reflect
    padding; defaults are TRACE's 31 and 56); a number (a constant, e.g. a token id for integer x); or a tensor
    broadcastable to x (e.g. ``(B, C, H, W)`` or ``(C, H, W)``).
    """
    _validate.tensor(x, "x")
    if isinstance(kind, torch.Tensor):
        _validate.same_device(x, kind, "x", "reference")
        if kind.is_floating_point() and not x.is_floating_point():
            raise TypeError(f"reference must be an integer tensor for integer x, got dtype {kind.dtype}")
        _validate.finite(kind, "reference")
        ref = kind.reshape((1,) * (x.ndim - kind.ndim) + tuple(kind.shape)) if kind.ndim <= x.ndim else kind
        if not _broadcasts(ref.shape, x.shape):
            raise ValueError(f"reference of shape {tuple(kind.shape)} does not broadcast to x of shape "
                             f"{tuple(x.shape)}")
        return ref.to(x.dtype)
    if isinstance(kind, (int, float)) and not isinstance(kind, bool):
        if isinstance(kind, float) and not x.is_floating_point():
            raise TypeError(f"reference must be an int token id for integer x, got {kind!r}")
        if not math.isfinite(kind):
            raise ValueError(f"reference must be finite, got {kind!r}")
        return torch.full((1,) * x.ndim, kind, dtype=x.dtype, device=x.device)
    if kind == "zero":
        return torch.zeros((1,) * x.ndim, dtype=x.dtype, device=x.device)
    if kind not in ("mean", "channel_mean", "blur"):
        raise ValueError(f"reference must be 'zero', 'mean', 'channel_mean', 'blur', a number or a tensor, "
                         f"got {kind!r}")
    if not x.is_floating_point():
        raise TypeError(f"reference={kind!r} needs floating-point x; for token ids pass an int token id")
    if kind == "mean":
        return x.mean(dim=tuple(range(1, x.ndim)), keepdim=True)
    if kind == "channel_mean":
        return x.mean(dim=(2, 3) if x.ndim == 4 else 1, keepdim=True)
    if x.ndim != 4:
        raise ValueError(f"reference='blur' needs images (B, C, H, W), got x of shape {tuple(x.shape)}")
    k = _validate.positive_int(kernel_size, "kernel_size")
    if k % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {k}")
    if not float(sigma) > 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    return _gaussian_blur(x, k, float(sigma))


def apply_removal(x: torch.Tensor, removed: torch.Tensor, units: Units, reference: Reference = "zero") -> torch.Tensor:
    """x with the units flagged in removed ``(B, n)`` bool replaced by the reference (``make_reference``)."""
    _validate.tensor(x, "x")
    _check_units(units, x)
    mask = expand(removed, units)
    _validate.batch_match(x, removed, "x", "removed")
    return torch.where(mask, make_reference(x, reference), x)


# ------------------------------------------------------------------------------------------------ ordering
def _rand(shape: Sequence[int], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """Uniform [0, 1) float64 draws made on the generator's device, then moved to ``device``."""
    return torch.rand(tuple(shape), generator=generator, device=generator.device, dtype=torch.float64).to(device)


def order(scores: torch.Tensor, order: str = "morf", generator: torch.Generator | int | None = None,
          ties: str = "index") -> torch.Tensor:
    """Removal order of units → ``(B, n)`` int64 unit ids, first removed first.

    scores: ``(B, n)`` unit scores (``unit_scores``). order: ``"morf"`` most relevant first (descending),
    ``"lerf"`` least relevant first (ascending), ``"random"`` uniform random permutation (needs generator).
    ties: ``"index"`` equal scores are removed lower unit id first (both morf and lerf; TRACE §5.1) or
    ``"random"`` in a random order drawn from generator.
    """
    s = _validate.tensor(scores, "scores", ndim=2)
    _validate.finite(s, "scores")
    if order not in ("morf", "lerf", "random"):
        raise ValueError(f"order must be 'morf', 'lerf' or 'random', got {order!r}")
    if ties not in ("index", "random"):
        raise ValueError(f"ties must be 'index' or 'random', got {ties!r}")
    if order == "random":
        g = _validate.generator(generator, why="for order='random'")
        return _rand(s.shape, g, s.device).argsort(dim=1)
    perm = None
    if ties == "random":
        perm = _rand(s.shape, _validate.generator(generator, why="for ties='random'"), s.device).argsort(dim=1)
        s = s.gather(1, perm)
    idx = torch.sort(s, dim=1, descending=order == "morf", stable=True).indices
    return idx if perm is None else perm.gather(1, idx)


_order = order  # removal_curve's argument ``order`` shadows the function


def ranks(perm: torch.Tensor) -> torch.Tensor:
    """Position of each unit in a removal order ``(B, n)`` (the inverse permutation per row; 0 = removed first)."""
    steps = torch.arange(perm.shape[1], device=perm.device).expand_as(perm)
    return torch.empty_like(perm).scatter_(1, perm, steps)


# ------------------------------------------------------------------------------------------ batched engine
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
        # log p/(1-p) = z_y - logsumexp_{j != y} z_j: exact and finite without clamping
        return logits.gather(1, t).squeeze(1) - logits.scatter(1, t, -math.inf).logsumexp(dim=1)

    return fn


def _logits(model: Callable, inputs: torch.Tensor) -> torch.Tensor:
    logits = model(inputs)
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != inputs.shape[0]:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"model must return logits of shape (N, n_classes), got {shape} for {inputs.shape[0]} inputs")
    return logits


def _prepare(model: Callable, x: torch.Tensor, units: Units | None, output: Output, target: torch.Tensor | None,
             batch_size: int) -> Units:
    """Validation shared by removal_curve and removal_outputs; returns the units (inferred when None)."""
    _validate.eval_mode(model, "model")
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    _validate.finite(x, "x")
    _validate.positive_int(batch_size, "batch_size")
    if not callable(output) and output not in _OUTPUTS:
        raise ValueError(f"output must be one of {_OUTPUTS} or a callable(logits, target), got {output!r}")
    units = default_units(x) if units is None else units
    _check_units(units, x)
    if target is not None:
        _validate.tensor(target, "target", ndim=1)
        if target.dtype != torch.int64:
            raise TypeError(f"target must be an int64 tensor of class indices, got dtype {target.dtype}")
        _validate.batch_match(x, target, "x", "target")
        _validate.same_device(x, target, "x", "target")
        if bool((target < 0).any()):
            raise ValueError("target must hold non-negative class indices")
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


def _evaluate(model: Callable, x: torch.Tensor, units: Units, reference: torch.Tensor, output: Output,
              target: torch.Tensor | None, per_sample: int, masks: Callable[[int, int, int, int], torch.Tensor],
              batch_size: int) -> torch.Tensor:
    """Run ``per_sample`` perturbed variants of every sample through the model, ≤ ``batch_size`` inputs per call.

    ``masks(b0, b1, v0, v1)`` gives the ``(b1-b0, v1-v0, n)`` bool unit masks of variants v0..v1-1 of samples
    b0..b1-1; perturbed inputs are built chunk by chunk. target None → prediction on the clean x.
    Returns ``(B, per_sample)``.
    """
    fn = _output_fn(output)
    idx = units.index
    identity = idx.shape[0] == 1 and idx.numel() == units.n and torch.equal(
        idx.flatten(), torch.arange(units.n, device=idx.device))
    with torch.no_grad():
        if target is None:
            target = torch.cat([_logits(model, x[i:i + batch_size]).argmax(dim=1)
                                for i in range(0, x.shape[0], batch_size)])
        flat = None
        for c0, pieces in _blocks(x.shape[0], per_sample, batch_size):
            batch_inputs, batch_targets = [], []
            for b0, b1, v0, v1 in pieces:
                m = masks(b0, b1, v0, v1)
                element_mask = m.view(*m.shape[:2], *idx.shape[1:]) if identity else _expand(m, _rows(idx, b0, b1))
                batch_inputs.append(torch.where(element_mask, _rows(reference, b0, b1)[:, None], x[b0:b1, None])
                                    .flatten(0, 1))
                batch_targets.append(target[b0:b1].repeat_interleave(v1 - v0))
            inputs = batch_inputs[0] if len(pieces) == 1 else torch.cat(batch_inputs)
            logits = _logits(model, inputs)
            if flat is None and not callable(output):
                if output != "logit" and logits.shape[1] < 2:
                    raise ValueError(f"output={output!r} needs logits for at least 2 classes, got {logits.shape[1]}")
                if int(target.max()) >= logits.shape[1]:
                    raise ValueError(f"target holds class {int(target.max())} but the model returns "
                                     f"{logits.shape[1]} logits")
            out = fn(logits, torch.cat(batch_targets))
            if not isinstance(out, torch.Tensor) or out.shape != (logits.shape[0],):
                raise ValueError(f"output must give one value per input, shape ({logits.shape[0]},)")
            if flat is None:
                flat = torch.empty(x.shape[0] * per_sample, dtype=out.dtype, device=out.device)
            flat[c0:c0 + logits.shape[0]] = out
    return flat.view(x.shape[0], per_sample)


def _fractions(fractions: Sequence[float] | torch.Tensor) -> torch.Tensor:
    f = torch.as_tensor(fractions).detach().to("cpu", torch.float64)
    if f.ndim != 1 or f.numel() == 0:
        raise ValueError(f"fractions must be a non-empty 1-D sequence, got shape {tuple(f.shape)}")
    if not bool(torch.isfinite(f).all()) or bool(((f < 0) | (f > 1)).any()):
        raise ValueError(f"fractions must lie in [0, 1], got {f.tolist()}")
    return f


def removal_curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None,
                  fractions: Sequence[float] | torch.Tensor, order: str | torch.Tensor = "morf",
                  reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                  units: Units | None = None, batch_size: int = 256,
                  generator: torch.Generator | int | None = None) -> torch.Tensor:
    """Model output after cumulatively removing a fraction of units in a given order → ``(B, len(fractions))``.

    Deletion curves of TRACE §5.1 (MoRF/LeRF), Few-class MIF/LIF §2.1, SaCo's AOPC/LOdds/AUC §3.2, F-Fidelity's
    Fid± §1.2. At fraction f the first ``round(f·n)`` units of the order are removed; rounding is half to even
    (Python's ``round``, ``torch.round``), so ``f = k/n`` removes exactly k units.
    Direction: under MoRF a faster drop (lower curve) means a more faithful attribution; under LeRF, slower.

    x: images ``(B, C, H, W)``, series ``(B, T, C)``, token ids ``(B, L)`` or embeddings ``(B, L, D)``.
    attributions: see ``unit_scores`` (reduced with ``"sum_abs"``, ties by lower unit id; for another rule or
    random ties pass ``order=order(unit_scores(a, units, reduce), ..., ties="random")``). Unused (may be None)
    when order is ``"random"`` or a tensor.
    order: ``"morf"``, ``"lerf"``, ``"random"`` (needs generator) or a ``(B, n)``/``(n,)`` permutation of unit ids.
    reference: see ``make_reference`` (pass a tensor for a blur with non-default parameters).
    output: ``"prob"`` softmax probability of target, ``"logit"``, ``"correct"`` (1.0 if argmax == target),
    ``"log_odds"`` log p/(1-p), or a callable(logits, target) → ``(N,)``.
    target: ``(B,)`` int64 classes; None → the model's prediction on the clean x.
    units: None infers pixels for 4-D x and dim-1 units (time steps, tokens) otherwise.
    batch_size: at most this many perturbed inputs per forward call; results do not depend on it.
    """
    units = _prepare(model, x, units, output, target, batch_size)
    f = _fractions(fractions)
    if isinstance(order, torch.Tensor):
        _validate.same_device(x, order, "x", "order")
        perm = order.expand(x.shape[0], -1) if order.ndim == 1 else order
        if perm.shape != (x.shape[0], units.n) or perm.dtype != torch.int64 or not torch.equal(
                perm.sort(dim=1).values.cpu(), torch.arange(units.n).expand(x.shape[0], -1)):
            raise ValueError(f"order tensor must hold an int64 permutation of the {units.n} unit ids per sample")
    elif order == "random":
        perm = _order(torch.zeros(x.shape[0], units.n, device=x.device), "random", generator)
    else:
        if attributions is None:
            raise ValueError(f"attributions are required for order={order!r}")
        scores = unit_scores(attributions, units)
        _validate.batch_match(x, scores, "x", "attributions")
        perm = _order(scores, order, generator)
    rank = ranks(perm)
    counts = torch.round(f * units.n).long().to(x.device)
    ref = make_reference(x, reference)

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        return rank[b0:b1, None, :] < counts[None, v0:v1, None]

    return _evaluate(model, x, units, ref, output, target, f.numel(), masks, batch_size)


def removal_outputs(model: Callable, x: torch.Tensor, removed: torch.Tensor, units: Units | None = None,
                    reference: Reference = "zero", output: Output = "prob", target: torch.Tensor | None = None,
                    batch_size: int = 256) -> torch.Tensor:
    """Model output after removing exactly the units flagged in removed → ``(B,)`` or ``(B, S)``.

    The single-step primitive behind Fid±/RFid±/FFid± (F-Fidelity §1.2–1.5), SaCo's group perturbations (§3.1)
    and μF subsets (§4.6). removed: ``(B, n)`` bool, or ``(B, S, n)`` for S masks per sample. Other arguments as
    in ``removal_curve``; at most ``batch_size`` perturbed inputs go through the model per call.
    """
    units = _prepare(model, x, units, output, target, batch_size)
    _validate.tensor(removed, "removed", ndim=(2, 3))
    if removed.dtype != torch.bool:
        raise TypeError(f"removed must be a bool tensor, got dtype {removed.dtype}")
    _validate.batch_match(x, removed, "x", "removed")
    _validate.same_device(x, removed, "x", "removed")
    if removed.shape[-1] != units.n:
        raise ValueError(f"removed must have {units.n} units in its last dim, got shape {tuple(removed.shape)}")
    per_sample = removed.shape[1] if removed.ndim == 3 else 1
    blocks = removed.reshape(x.shape[0], per_sample, units.n)
    out = _evaluate(model, x, units, make_reference(x, reference), output, target, per_sample,
                    lambda b0, b1, v0, v1: blocks[b0:b1, v0:v1], batch_size)
    return out if removed.ndim == 3 else out.squeeze(1)


# ---------------------------------------------------------------------------------------------- sampling
def _per_row(value: float | int | torch.Tensor, name: str, batch: int, device: torch.device,
             dtype: torch.dtype) -> torch.Tensor:
    """A scalar or ``(B,)`` per-sample parameter as a ``(B, 1)`` tensor."""
    v = torch.as_tensor(value)
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] != batch):
        raise ValueError(f"{name} must be a scalar or have shape ({batch},), got shape {tuple(v.shape)}")
    if v.dtype == torch.bool or v.is_complex() or (dtype == torch.int64 and v.is_floating_point()):
        raise TypeError(f"{name} must be {'an integer' if dtype == torch.int64 else 'a real number'}, got {v.dtype}")
    return v.to(device, dtype).expand(batch).reshape(batch, 1)


def _candidates(candidates: torch.Tensor) -> torch.Tensor:
    _validate.tensor(candidates, "candidates", ndim=2)
    if candidates.dtype != torch.bool:
        raise TypeError(f"candidates must be a bool tensor, got dtype {candidates.dtype}")
    return candidates


def _sample_shape(c: torch.Tensor, n_samples: int | None) -> tuple[int, ...]:
    if n_samples is None:
        return tuple(c.shape)
    return (c.shape[0], _validate.positive_int(n_samples, "n_samples"), c.shape[1])


def bernoulli_subset(candidates: torch.Tensor, rate: float | torch.Tensor, generator: torch.Generator | int,
                     n_samples: int | None = None) -> torch.Tensor:
    """Keep each candidate unit independently with probability rate (R-/F-Fidelity sampler, spec §1.3, §1.5).

    candidates: ``(B, n)`` bool; rate: scalar or ``(B,)`` in [0, 1]. Returns ``(B, n)`` bool, or ``(B, S, n)``
    with ``n_samples=S`` independent draws per sample; a subset of candidates.
    """
    c = _candidates(candidates)
    r = _per_row(rate, "rate", c.shape[0], c.device, torch.float64)
    if not bool(((r >= 0) & (r <= 1)).all()):
        raise ValueError("rate must lie in [0, 1]")
    shape = _sample_shape(c, n_samples)
    if n_samples is not None:
        c, r = c[:, None], r[:, None]
    return c & (_rand(shape, _validate.generator(generator, why="for sampling"), c.device) < r)


def _smallest_keys(keys: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Bool mask of the ``count`` smallest keys per row (last dim)."""
    return ranks(keys.argsort(dim=-1).reshape(-1, keys.shape[-1])).view(keys.shape) < count


def exact_subset(candidates: torch.Tensor, count: int | torch.Tensor, generator: torch.Generator | int,
                 n_samples: int | None = None) -> torch.Tensor:
    """Pick exactly count candidate units uniformly without replacement (exact-count variant, spec §1.3, §6.2).

    candidates: ``(B, n)`` bool; count: int or ``(B,)`` ints, at most the candidates of each row. Returns
    ``(B, n)`` bool, or ``(B, S, n)`` with ``n_samples=S`` independent draws per sample.
    """
    c = _candidates(candidates)
    k = _per_row(count, "count", c.shape[0], c.device, torch.int64)
    available = c.sum(dim=1, keepdim=True)
    if bool(((k < 0) | (k > available)).any()):
        raise ValueError(f"count must lie in [0, number of candidates] per row; candidates per row "
                         f"{available.flatten().tolist()[:8]}, count {k.flatten().tolist()[:8]}")
    shape = _sample_shape(c, n_samples)
    if n_samples is not None:
        c, k = c[:, None], k[:, None]
    keys = _rand(shape, _validate.generator(generator, why="for sampling"), c.device).masked_fill(~c, 2.0)
    return _smallest_keys(keys, k)


def uniform_fraction_mask(batch: int, n: int, max_fraction: float, generator: torch.Generator | int,
                          device: torch.device | str | None = None) -> torch.Tensor:
    """F-Fidelity fine-tuning mask (spec §1.4, [recon]): per sample u ~ U(0, max_fraction), remove ⌊u·n⌋ units.

    The removed units are chosen uniformly without replacement. Returns ``(batch, n)`` bool on device (default
    CPU), each row with at most ⌊max_fraction·n⌋ ones.
    """
    _validate.positive_int(batch, "batch")
    _validate.positive_int(n, "n")
    beta = _validate.fraction(max_fraction, "max_fraction")
    g = _validate.generator(generator, why="for sampling")
    device = torch.device("cpu") if device is None else torch.device(device)
    u = _rand((batch, 1), g, device) * beta
    keys = _rand((batch, n), g, device)
    return _smallest_keys(keys, torch.floor(u * n).long())

"""Random subsets of units: Bernoulli and exact-count subsets of candidate sets (R-/F-Fidelity Monte-Carlo masks,
μF subsets) and the uniform-fraction mask of F-Fidelity's fine-tuning. Draws come from an explicit generator, on its
device, so the result does not depend on the device of the candidates. A :class:`SampleSeeds` in place of the
generator draws each row (and each of its ``n_samples`` copies) from its own stream, on the candidates' device
(randomness keyed to the sample, :mod:`faithlab.perturb.keys`).

A subset of q units is drawn with q random numbers, not one per unit: Floyd's algorithm (Bentley & Floyd 1987,
"Programming pearls: a sample of brilliance") picks, for j = m − q … m − 1, a uniform t ∈ {0, …, j} and takes t, or j
when t is taken already; every q-subset of the m candidates comes out with probability 1/C(m, q). Its steps run over
every row at once (a vectorised gather, where and scatter per step), and a row draws the smaller of its subset and
its complement. Against one uniform key per unit and a selection (the earlier sampler) this draws and sorts nothing
per unit: μF's 200 subsets of 15 % of 1,024 pixels need 154 numbers per subset instead of 1,024. A Bernoulli subset
flips a coin per candidate, from half a hash each (:func:`bernoulli_subset`). :func:`drawn_in_blocks` hands the
engine a metric's masks a block of samples at a time, drawn as its chunks reach them (the same bits as one draw).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from faithlab import _validate
from faithlab.perturb.keys import SampleSeeds, keyed_seed
from faithlab.perturb.orders import random_source, ranks, uniform

__all__ = ["bernoulli_subset", "exact_subset", "bernoulli_rows", "exact_rows", "Rows", "exact_subset_sums",
           "uniform_fraction_mask", "drawn_in_blocks", "keyed_seed", "SampleSeeds"]

_DRAWN_UNITS = 1 << 22
"""Unit masks :func:`drawn_in_blocks` draws at once (at least one sample's): 4 MiB of bools, 16 MiB of the 32-bit
coins behind a Bernoulli draw. Memory only: the draws do not depend on it."""


def _per_row(value: float | int | torch.Tensor, name: str, batch: int, device: torch.device,
             dtype: torch.dtype) -> torch.Tensor:
    """A scalar or ``(B,)`` per-sample parameter as a ``(B, 1)`` tensor."""
    v = value if isinstance(value, torch.Tensor) else torch.as_tensor(value, device="cpu")
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


def _copies(generator, rows: int, n_samples: int | None):
    """The random source of the ``rows · S`` drawn subsets (S = n_samples, 1 for None): a SampleSeeds gives every
    copy its own stream (so a row's draws do not depend on S's neighbours), a torch.Generator is used as it is."""
    source = random_source(generator, why="for sampling")
    if isinstance(source, SampleSeeds) and n_samples is not None:
        return source.repeat_interleave(n_samples)
    return source


def _floyd(m: torch.Tensor, q: torch.Tensor, u: torch.Tensor, width: int) -> torch.Tensor:
    """Floyd's sample of ``q`` of the positions 0 … m − 1 of each row → ``(R, Q)`` int64 positions, ``width`` (a
    column past every position) where a row picks fewer than Q. m, q: ``(R, 1)`` int64 with q ≤ m ≤ width;
    u: ``(R, Q)`` float64 uniforms, Q ≥ max q (step i of a row reads u[:, i] only)."""
    rows, steps = u.shape
    if not steps:
        return torch.empty(rows, 0, dtype=torch.int64, device=u.device)
    # step-major (Q, R): each step reads and writes contiguous rows (a column of (R, Q) is strided, 2x slower)
    i = torch.arange(steps, dtype=torch.int64, device=u.device)[:, None]
    j = (m - q).T + i                                       # (Q, R) Floyd's j; t uniform in 0 … j
    active = i < q.T
    t = torch.where(active, (u.T * (j + 1)).long().clamp_(max=j), width)[:, :, None]
    j = torch.where(active, j, width)[:, :, None]
    taken = torch.zeros(rows, width + 1, dtype=torch.bool, device=u.device)
    picks = torch.empty(steps, rows, 1, dtype=torch.int64, device=u.device)
    true = torch.ones(rows, 1, dtype=torch.bool, device=u.device)  # a source tensor: 3x faster than a scalar value
    for s in range(steps):  # q steps, each over every row at once
        torch.where(taken.gather(1, t[s]), j[s], t[s], out=picks[s])
        taken.scatter_(1, picks[s], true)
    return picks[:, :, 0].T


def _plan(c: torch.Tensor, m: torch.Tensor, k: torch.Tensor) -> tuple[int, bool, bool]:
    """What :func:`_subset` reads on the host, in one read: Floyd's steps (the largest min(k, m − k)), whether any
    copy draws the complement, whether every unit is a candidate. For a block of rows the whole's plan gives the same
    masks: a row reads only its own first min(k, m − k) uniforms, and the other two choose a path, not a result."""
    flip = 2 * k > m
    q = torch.where(flip, m - k, k)
    if not q.numel():
        return 0, False, bool(c.all())
    steps, flips, every = torch.stack([q.max(), flip.any(), c.all()]).tolist()
    return int(steps), bool(flips), bool(every)


def _subset(c: torch.Tensor, m: torch.Tensor, k: torch.Tensor, source,
            plan: tuple[int, bool, bool] | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Uniform subsets of exactly ``k`` of the candidates ``c`` ``(B, n)`` per row (m ``(B, 1)`` their number,
    ``k`` ``(B, S)`` int64 counts ≤ m, one per copy): each copy draws q = min(k, m − k) positions with
    :func:`_floyd` (the complement when k > m/2), mapped to the row's candidate units in order. source: the B·S
    copies' random source (:func:`_copies`); one draw. plan: :func:`_plan`'s (steps, flips, every), read here when
    None (one host read). → the ``(B, S, n)`` bool subsets, the ``(B, S, Q)`` units drawn (n where a copy drew fewer
    than Q) and ``(B, S)`` bool, whether they are the complement's."""
    b, n = c.shape
    s = k.shape[1]
    flip = 2 * k > m                                         # draw the complement: fewer steps
    q = torch.where(flip, m - k, k)
    if not q.numel():
        return (torch.zeros(b, s, n, dtype=torch.bool, device=c.device),
                torch.empty(b, s, 0, dtype=torch.int64, device=c.device), flip)
    steps, flips, every = _plan(c, m, k) if plan is None else plan
    u = uniform((b * s, steps), source, c.device)
    picks = _floyd(m.expand(b, s).reshape(-1, 1), q.reshape(-1, 1), u, n).reshape(b, s, steps)
    if every:  # every unit a candidate: the positions are the units
        picked = picks
    else:  # the units of the positions: a row's candidates in unit order, then n (a dummy) for the unused ones
        units = torch.where(c, torch.arange(n, device=c.device), n).sort(dim=1).values
        units = torch.cat([units, units.new_full((b, 1), n)], dim=1)
        picked = units[:, None, :].expand(b, s, n + 1).gather(2, picks)
    # one flat scatter into a contiguous (B, S, n) mask; the dummy unit lands in one spare element at the end
    row = torch.arange(b * s, device=c.device).view(b, s, 1) * n
    spot = torch.where(picked < n, row + picked, b * s * n)
    flat = torch.zeros(b * s * n + 1, dtype=torch.bool, device=c.device)
    flat.scatter_(0, spot.flatten(), torch.ones(spot.numel(), dtype=torch.bool, device=c.device))
    mask = flat[:-1].view(b, s, n)
    if flips:
        mask = torch.where(flip[:, :, None], c[:, None] & ~mask, mask)
    return mask, picked, flip


def _bits32(shape: tuple[int, ...], source, device: torch.device) -> torch.Tensor:
    """Uniform random int32 of ``shape``: per row from a :class:`SampleSeeds`, else drawn from the generator (on
    its device) and moved to ``device``."""
    if isinstance(source, SampleSeeds):
        return source.bits32(shape, device)
    return torch.randint(-2**31, 2**31, shape, generator=source, device=source.device,
                         dtype=torch.int64).to(device, torch.int32)


def bernoulli_subset(candidates: torch.Tensor, rate: float | torch.Tensor, *, generator: torch.Generator | int,
                     n_samples: int | None = None) -> torch.Tensor:
    """Keep each candidate unit independently with probability rate (R-/F-Fidelity sampler, spec §1.3, §1.5).

    candidates: ``(B, n)`` bool; rate: scalar or ``(B,)`` in [0, 1]. Returns ``(B, n)`` bool, or ``(B, S, n)``
    with ``n_samples=S`` independent draws per sample; a subset of candidates. Each unit's coin is a uniform 32-bit
    integer below round(rate·2^32) (rate 1: every unit), so the rate is kept to 2^-32 — the resolution of a float32
    uniform — at the cost of half a hash per unit (:meth:`SampleSeeds.bits32`). :func:`bernoulli_rows` draws the
    same rows on demand.
    """
    out = bernoulli_rows(candidates, rate, generator=generator, n_samples=n_samples)(0, candidates.shape[0])
    return out if n_samples is not None else out[:, 0]


def exact_subset(candidates: torch.Tensor, count: int | torch.Tensor, *, generator: torch.Generator | int,
                 n_samples: int | None = None) -> torch.Tensor:
    """Pick exactly count candidate units uniformly without replacement (exact-count variant, spec §1.3, §6.2).

    candidates: ``(B, n)`` bool; count: int or ``(B,)`` ints, at most the candidates of each row. Returns
    ``(B, n)`` bool, or ``(B, S, n)`` with ``n_samples=S`` independent draws per sample (Floyd's algorithm, see the
    module docstring). :func:`exact_rows` draws the same rows on demand.
    """
    out = exact_rows(candidates, count, generator=generator, n_samples=n_samples)(0, candidates.shape[0])
    return out if n_samples is not None else out[:, 0]


Rows = Callable[[int, int], torch.Tensor]
"""``rows(r0, r1)`` → the ``(r1-r0, S, n)`` masks of rows r0..r1-1 of a sampler's draw."""


def _row_source(generator, b: int, n_samples: int | None, device: torch.device):
    """The copies' random source of a by-rows sampler (their seeds moved to ``device`` once, not per block) and the
    draw number its one draw takes (None for a torch.Generator), taken now, as the sampler's one call would take
    it, so later draws from the caller's source are unchanged. A SampleSeeds must have one row per candidate row."""
    if isinstance(generator, SampleSeeds) and len(generator) != b:
        raise RuntimeError(f"a draw of {b} rows was asked of SampleSeeds for {len(generator)} rows; every draw must "
                           "be one (rows, ...) block")
    source = _copies(generator, b, n_samples)
    if not isinstance(source, SampleSeeds):
        return source, None
    k = source._next()
    return SampleSeeds(source.seeds.to(device), k), k


def _by_rows(draw_all: Callable[[], torch.Tensor], draw: Callable[[int, int, SampleSeeds], torch.Tensor],
             source, k: int | None, b: int, s: int) -> Rows:
    """``rows(r0, r1)``, 0 ≤ r0 ≤ r1 ≤ b: ``draw(r0, r1, seeds)`` with the rows' copies' streams at draw k, or
    for a torch.Generator (its numbers come in sequence) slices of ``draw_all()``, made now."""
    whole = draw_all() if k is None else None

    def rows(r0: int, r1: int) -> torch.Tensor:
        if not 0 <= r0 <= r1 <= b:
            raise ValueError(f"rows({r0}, {r1}) asks for rows outside 0 … {b}")
        return whole[r0:r1] if whole is not None else draw(r0, r1, SampleSeeds(source.seeds[r0 * s:r1 * s], k))

    return rows


def bernoulli_rows(candidates: torch.Tensor, rate: float | torch.Tensor, *, generator: torch.Generator | int,
                   n_samples: int | None = None) -> Rows:
    """:func:`bernoulli_subset`'s masks by rows: ``rows(r0, r1)`` → ``(r1-r0, S, n)`` (S = n_samples, 1 for None),
    bitwise rows r0..r1-1 of ``bernoulli_subset`` with an equal generator. The arguments are checked and the coins'
    thresholds made once, here (one host read); a call then draws only its rows' coins on the candidates' device,
    with no host sync, so a metric draws a block of samples where its chunks use them (:func:`drawn_in_blocks`). A
    torch.Generator draws every row here."""
    c = _candidates(candidates)
    b, n = c.shape
    r = _per_row(rate, "rate", b, c.device, torch.float64)
    if not bool(((r >= 0) & (r <= 1)).all()):
        raise ValueError("rate must lie in [0, 1]")
    s = 1 if n_samples is None else _validate.positive_int(n_samples, "n_samples")
    # u = bits + 2^31 is uniform on [0, 2^32): u < T = round(rate·2^32) ⇔ bits ≤ T − 2^31 − 1, an int32 for T ≥ 1
    # (rate 1: every unit); rows with T = 0 keep no unit through their candidates
    t = torch.round(r * 2.0**32)
    threshold = (t - 2.0**31 - 1).clamp(min=-(2**31)).to(torch.int32)[:, :, None]
    keep = (c & (t > 0))[:, None]
    source, k = _row_source(generator, b, n_samples, c.device)

    def draw(r0: int, r1: int, seeds) -> torch.Tensor:
        bits = _bits32(((r1 - r0) * s, n), seeds, c.device).view(r1 - r0, s, n)
        return keep[r0:r1] & (bits <= threshold[r0:r1])

    return _by_rows(lambda: draw(0, b, source), draw, source, k, b, s)


def exact_rows(candidates: torch.Tensor, count: int | torch.Tensor, *, generator: torch.Generator | int,
               n_samples: int | None = None) -> Rows:
    """:func:`exact_subset`'s masks by rows, as :func:`bernoulli_rows`: checked once, here (one host read, which
    also fixes Floyd's number of steps for every row), then ``rows(r0, r1)`` draws rows r0..r1-1 with no host sync,
    bitwise those of ``exact_subset``."""
    c = _candidates(candidates)
    b, n = c.shape
    k = _per_row(count, "count", b, c.device, torch.int64)
    m = c.sum(dim=1, keepdim=True)
    if bool(((k < 0) | (k > m)).any()):
        raise ValueError(f"count must lie in [0, number of candidates] per row; candidates per row "
                         f"{m.flatten().tolist()[:8]}, count {k.flatten().tolist()[:8]}")
    s = 1 if n_samples is None else _validate.positive_int(n_samples, "n_samples")
    counts = k.expand(b, s)
    plan = _plan(c, m, counts)
    source, kdraw = _row_source(generator, b, n_samples, c.device)

    def draw(r0: int, r1: int, seeds) -> torch.Tensor:
        return _subset(c[r0:r1], m[r0:r1], counts[r0:r1], seeds, plan)[0]

    return _by_rows(lambda: draw(0, b, source), draw, source, kdraw, b, s)


def exact_subset_sums(candidates: torch.Tensor, count: int | torch.Tensor, scores: torch.Tensor, *,
                      generator: torch.Generator | int, n_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`exact_subset` with ``n_samples`` draws per row, and each drawn subset's sum of the unit ``scores``
    ``(B, n)`` (μF's Σ_{i∈S} e_i), added up over the units drawn (min(count, m − count) per subset) rather than
    over a float copy of every mask → ``(B, S, n)`` bool and ``(B, S)`` in the scores' dtype. The same subsets as
    ``exact_subset`` from an equal generator."""
    c = _candidates(candidates)
    b, n = c.shape
    _validate.tensor(scores, "scores", ndim=2)
    if scores.shape != c.shape:
        raise ValueError(f"scores must have the candidates' shape {tuple(c.shape)}, got {tuple(scores.shape)}")
    k = _per_row(count, "count", b, c.device, torch.int64)
    m = c.sum(dim=1, keepdim=True)
    if bool(((k < 0) | (k > m)).any()):
        raise ValueError(f"count must lie in [0, number of candidates] per row; candidates per row "
                         f"{m.flatten().tolist()[:8]}, count {k.flatten().tolist()[:8]}")
    s = _validate.positive_int(n_samples, "n_samples")
    mask, picked, flip = _subset(c, m, k.expand(b, s), _copies(generator, b, n_samples))
    padded = torch.cat([scores, scores.new_zeros(b, 1)], dim=1)   # the dummy unit n scores 0
    drawn = padded[:, None, :].expand(b, s, n + 1).gather(2, picked).sum(dim=-1)
    total = torch.where(c, scores, 0).sum(dim=1, keepdim=True)
    return mask, torch.where(flip, total - drawn, drawn)


def drawn_in_blocks(draw: Callable[[int, int], torch.Tensor], n_samples: int,
                    units_per_sample: int) -> Callable[[int, int, int, int], torch.Tensor]:
    """Random masks drawn where the engine uses them: ``masks(b0, b1, v0, v1)`` (a :data:`~faithlab.perturb.Masks`
    for :meth:`~faithlab.perturb.Removal.masked`) → variants v0..v1-1 of samples b0..b1-1, sliced from
    ``draw(s0, s1)``, the ``(s1-s0, V, n)`` masks of samples s0..s1-1.

    ``draw`` must give a sample the masks it gets in a draw over every sample (randomness keyed to the sample: a
    :class:`SampleSeeds` sliced to the block's rows continues their streams), so the masks are bitwise those of one
    draw over all ``n_samples``; only memory changes. The samples go in blocks of a fixed grid of
    max(1, :data:`_DRAWN_UNITS` // ``units_per_sample``) samples (V·n units each), each block drawn once when the
    pieces come in increasing sample order, as the engine's chunks do, and let go once a piece ends past it. For
    ``n_samples`` × V masks of n units (F-Fidelity's 9 sizes × 50 masks of 224 × 224 pixels: 22.6 M units per
    image, 2.9 GB of masks for 128 images and four times that in coins) memory is one block, not the whole."""
    block = max(1, _DRAWN_UNITS // max(1, units_per_sample))
    held: dict[int, torch.Tensor] = {}

    def masks(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
        if not 0 <= b0 < b1 <= n_samples:
            raise ValueError(f"masks({b0}, {b1}, ...) asks for samples outside 0 … {n_samples - 1} or for none")
        first, last = b0 // block, (b1 - 1) // block
        parts = []
        for j in range(first, last + 1):
            start = j * block
            if j not in held:
                held[j] = draw(start, min(n_samples, start + block))
            parts.append(held[j][max(b0, start) - start:min(b1, start + block) - start, v0:v1])
        for j in [j for j in held if j < last]:  # the next piece starts in block `last` at the earliest
            del held[j]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    return masks


def _smallest_keys(keys: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Bool mask of the ``count`` smallest keys per row (last dim); ``count`` broadcasts against ``keys[..., :1]``.

    A partial selection (``topk`` from whichever end needs fewer values) gives each row's count-th smallest key as a
    threshold, about 3x faster than ranking every key with a full sort. The mask is the same set as the full sort's:
    should a tie at the threshold let more than ``count`` keys through (float64 uniform keys practically never tie),
    the rows are ranked by the full sort instead.
    """
    n = keys.shape[-1]
    count = count.expand(*keys.shape[:-1], 1)
    lo, hi = (int(v) for v in torch.aminmax(count))
    if hi == 0:
        return torch.zeros(keys.shape, dtype=torch.bool, device=keys.device)
    if hi <= n - lo + 1:  # the count-th smallest key, from the bottom
        low = keys.topk(hi, dim=-1, largest=False).values
        threshold = low.gather(-1, (count - 1).clamp(min=0))
    else:  # the same key as the (n - count + 1)-th largest, from the top
        top = keys.topk(min(n, n - lo + 1), dim=-1).values
        threshold = top.gather(-1, (n - count).clamp(max=top.shape[-1] - 1))
    mask = (keys <= threshold) & (count > 0)
    if torch.equal(mask.sum(dim=-1, keepdim=True), count):
        return mask
    return ranks(keys.argsort(dim=-1).reshape(-1, n)).view(keys.shape) < count


def uniform_fraction_mask(batch: int, n: int, max_fraction: float, *, generator: torch.Generator | int,
                          device: torch.device | str | None = None) -> torch.Tensor:
    """F-Fidelity fine-tuning mask (spec §1.4, [recon]): per sample u ~ U(0, max_fraction), remove ⌊u·n⌋ units.

    The removed units are chosen uniformly without replacement (the ⌊u·n⌋ smallest of n uniform keys: one training
    batch's masks, drawn from the training's generator). Returns ``(batch, n)`` bool on device (default CPU), each
    row with at most ⌊max_fraction·n⌋ ones.
    """
    _validate.positive_int(batch, "batch")
    _validate.positive_int(n, "n")
    beta = _validate.fraction(max_fraction, "max_fraction")
    g = _validate.generator(generator, why="for sampling")
    device = torch.device("cpu") if device is None else torch.device(device)
    u = uniform((batch, 1), g, device) * beta
    keys = uniform((batch, n), g, device)
    return _smallest_keys(keys, torch.floor(u * n).long())

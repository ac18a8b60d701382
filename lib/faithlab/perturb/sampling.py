"""Random subsets of units: Bernoulli and exact-count subsets of candidate sets (R-/F-Fidelity Monte-Carlo masks,
μF subsets) and the uniform-fraction mask of F-Fidelity's fine-tuning. Draws come from an explicit generator, on its
device, so the result does not depend on the device of the candidates. A :class:`SampleSeeds` in place of the
generator draws each row from its own stream (randomness keyed to the sample, :mod:`faithlab.perturb.keys`)."""

from __future__ import annotations

import torch

from faithlab import _validate
from faithlab.perturb.keys import SampleSeeds, keyed_seed
from faithlab.perturb.orders import random_source, ranks, uniform

__all__ = ["bernoulli_subset", "exact_subset", "uniform_fraction_mask", "keyed_seed", "SampleSeeds"]


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


def _sample_shape(c: torch.Tensor, n_samples: int | None) -> tuple[int, ...]:
    if n_samples is None:
        return tuple(c.shape)
    return (c.shape[0], _validate.positive_int(n_samples, "n_samples"), c.shape[1])


def bernoulli_subset(candidates: torch.Tensor, rate: float | torch.Tensor, *, generator: torch.Generator | int,
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
    return c & (uniform(shape, random_source(generator, why="for sampling"), c.device) < r)


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


def exact_subset(candidates: torch.Tensor, count: int | torch.Tensor, *, generator: torch.Generator | int,
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
    keys = uniform(shape, random_source(generator, why="for sampling"), c.device).masked_fill(~c, 2.0)
    return _smallest_keys(keys, k)


def uniform_fraction_mask(batch: int, n: int, max_fraction: float, *, generator: torch.Generator | int,
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
    u = uniform((batch, 1), g, device) * beta
    keys = uniform((batch, n), g, device)
    return _smallest_keys(keys, torch.floor(u * n).long())

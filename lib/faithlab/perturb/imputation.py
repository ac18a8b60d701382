"""Noisy linear imputation (ROAD, Rong et al., ICML 2022, §4): removed pixels take the weighted mean of their eight
neighbours, 1/6 for the four direct and 1/12 for the four diagonal ones, plus Gaussian noise, so that the removal
pattern carries no class information a model could read.

Every removed pixel's value v_i satisfies ``v_i = Σ_j w_ij v_j / Σ_j w_ij`` over its neighbours j inside the image
(kept neighbours at their values, removed ones at their imputed values): one sparse linear system per image and
channel, as the authors' ``NoisyLinearImputer`` sets it up (``road/imputations.py``, which solves each image with
scipy's ``spsolve`` on the CPU, one image at a time). Here the systems of a whole batch are solved at once on the
inputs' device by the conjugate-gradient method preconditioned by the diagonal (Jacobi): multiplied by Σ_j w_ij,
each system's matrix ``D − W`` (D the in-image weight sums, W the neighbour weights among removed pixels) is
symmetric and positive definite whenever the image keeps a pixel, so CG converges, and it needs only the stencil
product (eight shifted adds, no matrix is built), elementwise and in the same order for any batch size. Each
image-channel system has its own step sizes and stops on its own residual (``‖r‖ ≤ rtol·‖b‖``), so its solution
does not depend on the other images of the batch. A direct sparse solve would need a factorisation per image
(scipy, a host loop); a fixed number of Jacobi sweeps converges in O(hole diameter²) sweeps against CG's
O(hole diameter).

Choices where the paper leaves freedom (recorded here and in :func:`noisy_linear_imputation`):

- neighbours outside the image are left out and the weights renormalised over those inside (the authors' code);
- every channel is imputed on its own, with the same removed positions (a pixel unit removes all its channels);
- the noise is added to the removed elements only, independently per element and channel, N(0, noise²) in the
  input space the model reads (the authors' default ``noise=0.01`` on normalised images);
- an image that keeps no pixel has nothing to impute from (its system is singular; scipy rejects it): its removed
  elements are set to 0, the solution CG reaches from its start at 0, plus the noise.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab.perturb.keys import SampleSeeds, stream, to_unit, keyed_seeds
from faithlab.perturb.units import caller_level

__all__ = ["DIRECT_WEIGHT", "DIAGONAL_WEIGHT", "NOISE", "noisy_linear_imputation", "NoisyLinear"]

DIRECT_WEIGHT = 1 / 6
"""ROAD's weight of each of the four direct neighbours."""
DIAGONAL_WEIGHT = 1 / 12
"""ROAD's weight of each of the four diagonal neighbours (the eight weights sum to 1)."""
NOISE = 0.01
"""ROAD's default noise: the standard deviation of the Gaussian noise added to every imputed element (the authors'
``NoisyLinearImputer(noise=0.01)``)."""
_CHECK_EVERY = 8
"""CG iterations between two reads of "is any system still unconverged" (one host read each on a GPU)."""


def _neighbour_sum(v: torch.Tensor) -> torch.Tensor:
    """``Σ_j w_ij v_j`` over the eight neighbours of every element of ``(N, C, H, W)``, zero outside the image: eight
    shifted adds in a fixed order (elementwise, so the same bits for any batch)."""
    h, w = v.shape[-2:]
    p = F.pad(v, (1, 1, 1, 1))
    direct = p[..., 0:h, 1:w + 1] + p[..., 2:h + 2, 1:w + 1] + p[..., 1:h + 1, 0:w] + p[..., 1:h + 1, 2:w + 2]
    diagonal = p[..., 0:h, 0:w] + p[..., 0:h, 2:w + 2] + p[..., 2:h + 2, 0:w] + p[..., 2:h + 2, 2:w + 2]
    return direct * DIRECT_WEIGHT + diagonal * DIAGONAL_WEIGHT


def _default_rtol(dtype: torch.dtype) -> float:
    return 1e-10 if dtype == torch.float64 else 1e-5


def _settings(rtol, max_iter) -> tuple[float | None, int | None]:
    """rtol in (0, 1) and max_iter a positive int, or None (the defaults), checked and named."""
    if rtol is not None:
        rtol = _validate.number(rtol, "rtol")
        if not 0 < rtol < 1:
            raise ValueError(f"rtol must be in (0, 1), got {rtol!r}")
    return rtol, None if max_iter is None else _validate.positive_int(max_iter, "max_iter")


def _solve(x: torch.Tensor, removed: torch.Tensor, rtol: float, max_iter: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The linear imputation of the removed elements ``(N, C, H, W)`` (0 elsewhere) and each system's CG
    iteration count ``(N, C)``. removed: float 0/1 of x's shape."""
    dims = (-2, -1)
    weights = _neighbour_sum(torch.ones((1, 1, *x.shape[-2:]), dtype=x.dtype, device=x.device))  # D: in-image sums
    inverse = weights.reciprocal()
    b = removed * _neighbour_sum(x * (1 - removed))
    z = torch.zeros_like(x)
    r = b.clone()
    y = r * inverse
    p = y.clone()
    rho = (r * y).sum(dims, keepdim=True)
    limit = (b * b).sum(dims, keepdim=True) * (rtol * rtol)
    active = (r * r).sum(dims, keepdim=True) > limit
    iterations = torch.zeros(x.shape[:2], dtype=torch.int64, device=x.device)
    tiny = torch.finfo(x.dtype).tiny
    for k in range(max_iter):
        if k % _CHECK_EVERY == 0 and not bool(active.any()):  # one read per _CHECK_EVERY iterations
            break
        q = removed * (weights * p - _neighbour_sum(p))
        pq = (p * q).sum(dims, keepdim=True)
        alpha = torch.where(active & (pq > 0), rho / pq.clamp_min(tiny), 0)
        z.addcmul_(alpha, p)
        r.addcmul_(alpha, q, value=-1)
        iterations += active.view(iterations.shape)
        active = active & ((r * r).sum(dims, keepdim=True) > limit)
        y = r * inverse
        rho_next = (r * y).sum(dims, keepdim=True)
        beta = torch.where(active, rho_next / rho.clamp_min(tiny), 0)
        p = torch.where(active, y + beta * p, p)
        rho = torch.where(active, rho_next, rho)
    return z, iterations


def _keep_mask(keep: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """keep as float 0/1 broadcast to x's shape; bool ``(B, H, W)``, ``(B, 1, H, W)`` or ``(B, C, H, W)``."""
    _validate.tensor(keep, "keep")
    if keep.dtype != torch.bool:
        raise TypeError(f"keep must be a bool tensor (True = kept), got dtype {keep.dtype}")
    _validate.same_device(x, keep, "x", "keep")
    k = keep[:, None] if keep.ndim == 3 else keep
    if k.ndim != 4 or k.shape[0] != x.shape[0] or k.shape[2:] != x.shape[2:] or k.shape[1] not in (1, x.shape[1]):
        raise ValueError(f"keep must have shape (B, H, W), (B, 1, H, W) or (B, C, H, W) of x {tuple(x.shape)}, got "
                         f"{tuple(keep.shape)}")
    return k.expand_as(x).to(x.dtype)


def noisy_linear_imputation(x: torch.Tensor, keep: torch.Tensor, *, noise: float | torch.Tensor = 0.0,
                            rtol: float | None = None, max_iter: int | None = None,
                            details: bool = False) -> torch.Tensor | dict[str, torch.Tensor]:
    """ROAD's noisy linear imputation of the removed pixels of images → x's shape (module docstring).

    x: images ``(B, C, H, W)``, floating point, finite. keep: bool, True where a pixel (``(B, H, W)`` or
    ``(B, 1, H, W)``: every channel) or an element (``(B, C, H, W)``) is kept; the others are imputed. noise: the
    standard deviation of the Gaussian noise added to each imputed element, drawn from torch's global generator
    (0: the noise-free imputation), or a tensor broadcastable to x added as given to the imputed elements (keyed
    noise: :class:`NoisyLinear` draws it per sample). Kept elements are returned unchanged. rtol: each image and
    channel's CG stops when its residual norm is below rtol times its right-hand side's (default 1e-5 for float32,
    1e-10 for float64); max_iter: at most this many iterations (default ``4·(H + W) + 64``, far more than the
    batches of the tests and benchmarks need; ``details=True`` returns the counts). A system still short of rtol
    after max_iter iterations gives one ``RuntimeWarning`` per call (as :func:`faithlab.metrics.road` does), with
    or without details. An image that keeps no pixel is imputed as 0 plus the noise.

    details: return ``{"imputed", "iterations" (B, C), "converged" (B, C) bool}`` instead of the images.
    """
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.finite(x, "x")
    removed = 1 - _keep_mask(keep, x)
    rtol, max_iter = _settings(rtol, max_iter)
    rtol = _default_rtol(x.dtype) if rtol is None else rtol
    h, w = x.shape[-2:]
    max_iter = 4 * (h + w) + 64 if max_iter is None else max_iter
    if isinstance(noise, torch.Tensor):
        _validate.same_device(x, noise, "x", "noise")
        _validate.finite(noise, "noise")
        drawn = noise.to(x.dtype)
    else:
        sigma = _validate.number(noise, "noise")
        if not (math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"noise must be a finite standard deviation ≥ 0 or a tensor, got {noise!r}")
        drawn = torch.randn_like(x) * sigma if sigma > 0 else None
    imputed, z, iterations = _impute(x, removed, drawn, rtol, max_iter)
    converged = _converged(x.to(z.dtype), removed.to(z.dtype), z, rtol)
    _warn_unconverged(converged, max_iter, rtol)
    if not details:
        return imputed
    return {"imputed": imputed, "iterations": iterations, "converged": converged}


def _warn_unconverged(converged: torch.Tensor, max_iter: int, rtol: float) -> None:
    """One RuntimeWarning, at the caller's line, when some image-channel system of ``converged`` ``(B, C)`` is not
    within its tolerance after ``max_iter`` iterations (one host read)."""
    if bool(converged.all()):
        return
    short = (~converged).nonzero()
    where = ", ".join(f"image {int(i)} channel {int(c)}" for i, c in short[:3].tolist())
    warnings.warn(f"noisy_linear_imputation stopped short of its tolerance (rtol={rtol:g}) after at most "
                  f"max_iter={max_iter} iterations on {short.shape[0]} of {converged.numel()} image-channel system(s) "
                  f"(e.g. {where}); the imputed values are approximate (details=True shows where: 'converged'; a "
                  "larger max_iter converges)", RuntimeWarning, stacklevel=caller_level())


def _impute(x: torch.Tensor, removed: torch.Tensor, noise: torch.Tensor | None, rtol: float,
            max_iter: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Checked arguments → the imputed x, the noise-free solution and the iteration counts (no host read but
    CG's stopping test). Half-precision inputs are solved in float32 (float16 cannot reach the tolerance and
    bfloat16's steps stall above the noise) and the result rounded back."""
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    removed = removed.to(work.dtype)
    z, iterations = _solve(work, removed, rtol, max_iter)
    imputed = torch.addcmul(work * (1 - removed), removed, z if noise is None else z + noise.to(work.dtype))
    return imputed.to(x.dtype), z, iterations


def _converged(x: torch.Tensor, removed: torch.Tensor, z: torch.Tensor, rtol: float) -> torch.Tensor:
    """Whether each image-channel system's residual is within rtol of its right-hand side ``(B, C)``."""
    weights = _neighbour_sum(torch.ones((1, 1, *x.shape[-2:]), dtype=x.dtype, device=x.device))
    b = removed * _neighbour_sum(x * (1 - removed))
    r = b - removed * (weights * z - _neighbour_sum(z))
    dims = (-2, -1)
    # the recurrence's residual drifts from the true one by rounding: allow a factor 10
    return (r * r).sum(dims) <= (b * b).sum(dims) * (10 * rtol) ** 2


class NoisyLinear:
    """ROAD's noisy linear imputation as a removal reference (``reference=`` of :class:`faithlab.perturb.Removal`,
    the F-Fidelity metrics and :func:`faithlab.metrics.road`): removed pixels are imputed from the kept ones of the
    same perturbed input, with Gaussian noise keyed to the sample.

    noise: the noise's standard deviation (default :data:`NOISE`). seeds: a :class:`faithlab.perturb.SampleSeeds`
    with one seed per sample of x (``perturb.sample_seeds(generator, sample_index, B)``): an input of sample b gets
    the noise of stream ``keyed_seed(keyed_seed(seed_b, k), d)`` (k: this reference's draw of the seeds; d: the engine's draw
    number for the input — the count of removed units on a cumulative curve, else the mask's index), the same
    whatever the batch size or the split of the data; None: noise-free (then ``noise`` must be 0). rtol, max_iter:
    as :func:`noisy_linear_imputation`; :attr:`unconverged` tells whether a system stopped at ``max_iter``.
    """

    def __init__(self, noise: float = NOISE, *, seeds: SampleSeeds | None = None, rtol: float | None = None,
                 max_iter: int | None = None):
        sigma = _validate.number(noise, "noise")
        if not (math.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"noise must be a finite standard deviation ≥ 0, got {noise!r}")
        if sigma > 0 and not isinstance(seeds, SampleSeeds):
            raise TypeError("a NoisyLinear reference with noise > 0 needs seeds=perturb.sample_seeds(generator, "
                            "sample_index, B): its noise is keyed to the sample")
        self.noise = sigma
        self.rtol, self.max_iter = _settings(rtol, max_iter)
        self.seeds = seeds
        self._draw = seeds._next() if seeds is not None and sigma > 0 else 0
        # each sample's seed for this draw, made once: a chunk keys its inputs from them with tensors only (an int
        # key would be one host-to-device copy per chunk)
        self._rows = keyed_seeds(seeds.seeds, self._draw) if seeds is not None and sigma > 0 else None
        self._unconverged: torch.Tensor | None = None  # on the inputs' device: read once, by :attr:`unconverged`
        self._warned = False

    @property
    def key(self) -> tuple:
        """What makes its imputations, beside x and :attr:`tensors`: the engine shares the fully removed input's
        logits between references with the same key (inside :func:`faithlab.perturb.sharing`)."""
        return (self.noise, self.rtol, self.max_iter, self._draw)

    @property
    def tensors(self) -> tuple[torch.Tensor, ...]:
        """The noise's seeds (none when noise-free), part of the sharing key."""
        return () if self.seeds is None or self.noise == 0 else (self.seeds.seeds,)

    @property
    def unconverged(self) -> bool:
        """Whether some system of an imputation so far stopped at ``max_iter`` short of ``rtol`` (one host read)."""
        return self._unconverged is not None and bool(self._unconverged)

    def warn_unconverged(self) -> None:
        """One RuntimeWarning per reference, at the caller's line, once an imputation so far stopped at
        ``max_iter`` short of ``rtol`` (one host read): :class:`faithlab.perturb.Removal` calls it after each run,
        so every metric on this reference warns as :func:`noisy_linear_imputation` does."""
        if not self._warned and self.unconverged:
            self._warned = True
            warnings.warn(f"the noisy linear imputation (ROAD's reference) stopped at its iteration cap "
                          f"(max_iter={self.max_iter}) short of its tolerance on some input; the imputed values are "
                          "approximate (perturb.noisy_linear_imputation(details=True) shows where)", RuntimeWarning,
                          stacklevel=caller_level())

    def __repr__(self) -> str:
        return f"NoisyLinear(noise={self.noise})"

    def impute(self, x: torch.Tensor, keep: torch.Tensor, rows: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
        """The imputed inputs ``(N, C, H, W)`` of x ``(N, C, H, W)`` keeping ``keep`` (float or bool,
        ``(N, 1 | C, H, W)``); input i's noise is draw ``draws[i]`` of sample ``rows[i]`` (int64 ``(N,)`` each)."""
        noise: float | torch.Tensor = 0.0
        if self.noise > 0:
            cells = keyed_seeds(self._rows.to(x.device)[rows.to(x.device)], draws.to(x.device))
            u = torch.empty(x.shape[0], x[0].numel(), dtype=torch.float64, device=x.device)
            if u.numel():  # each input's counter-based stream (perturb.keys), keyed by tensors only
                stream(cells, u.shape[1], u, to_unit)
            u = u.view(x.shape)
            noise = torch.special.ndtri(u.clamp_min(torch.finfo(torch.float64).tiny)).mul_(self.noise).to(x.dtype)
        removed = (1 - keep.to(x.dtype)).expand_as(x)
        h, w = x.shape[-2:]
        rtol = _default_rtol(x.dtype) if self.rtol is None else self.rtol
        max_iter = 4 * (h + w) + 64 if self.max_iter is None else self.max_iter
        imputed, _, iterations = _impute(x, removed, noise if isinstance(noise, torch.Tensor) else None, rtol,
                                         max_iter)
        short = (iterations >= max_iter).any()  # a system that used every iteration (no host read here)
        self._unconverged = short if self._unconverged is None else self._unconverged | short
        return imputed

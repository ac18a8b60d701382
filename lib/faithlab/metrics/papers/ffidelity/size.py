"""F-Fidelity's explanation-size read-out (spec §1.10, Theorem 1): the critical point β/α+ and the size an FFid+
curve's rise reveals.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from faithlab import _validate

__all__ = ["critical_points", "explanation_size"]


def critical_points(alpha: float, beta: float) -> float:
    """Second critical point of Theorem 1 (spec §1.10): s = β/α+, where FFid+'s removal budget βn stops growing
    with the explanation (0.2 for the defaults β = 0.1, α+ = 0.5). The first critical point is the unknown size r.
    """
    a = _validate.fraction(alpha, "alpha", closed_low=False)
    b = _validate.fraction(beta, "beta", closed_low=False)
    return b / a


def explanation_size(curve: torch.Tensor, sparsity: Sequence[float] | torch.Tensor, *, alpha: float | None = None,
                     beta: float | None = None, tol: float = 0.05) -> torch.Tensor:
    """Read the explanation size r off an FFid+ curve (Theorem 1, spec §1.10).

    FFid+(s) rises until min(r, β/α), is flat between the two critical points r and β/α, and falls after both.
    The plateau is the set of levels within ``tol``·(max − min) of the curve's maximum; r̂ is its start, or — when
    alpha and beta are given and the start is closer to β/α than the end is — its end (case r > β/α).
    curve: (..., n_levels) FFid+ means; sparsity: (n_levels,) increasing. Returns (...) estimated r.
    """
    _validate.tensor(curve, "curve", floating=True)
    _validate.finite(curve, "curve")
    s = _validate.fractions(sparsity, "sparsity").to(curve.device, curve.dtype)
    if curve.shape[-1] != s.shape[0] or s.shape[0] < 2:
        raise ValueError(f"curve's last dim ({curve.shape[-1]}) must match sparsity's {s.shape[0]} (≥ 2) levels")
    if bool((s[1:] <= s[:-1]).any()):
        raise ValueError("sparsity must be strictly increasing")
    t = _validate.fraction(tol, "tol")
    if (alpha is None) != (beta is None):
        raise ValueError("alpha and beta must be given together (or both None)")
    hi, lo = curve.amax(dim=-1, keepdim=True), curve.amin(dim=-1, keepdim=True)
    near = curve >= hi - t * (hi - lo)
    steps = torch.arange(s.shape[0], device=curve.device)
    start = s[torch.where(near, steps, s.shape[0]).amin(dim=-1)]
    end = s[torch.where(near, steps, -1).amax(dim=-1)]
    if alpha is None:
        return start
    c = critical_points(alpha, beta)
    return torch.where((start - c).abs() < (end - c).abs(), end, start)

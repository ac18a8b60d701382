"""Experimental protocols that combine explainers and metrics (so they cannot live in the pure metric modules).

F-Fidelity's degraded-explainer protocol (spec §1.8–1.9): degrade a clean map at known noise levels ξ with several
seeds, score every degraded map with Fid+ and Fid− curves; :func:`faithlab.metrics.ground_truth_ranking` then turns
the curves into the paper's macro/micro correlations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from faithlab import explainers
from faithlab.metrics import fidelity


def degraded_fidelity_curves(model: Callable, x: torch.Tensor, y: torch.Tensor, clean: torch.Tensor,
                             noise_levels: Sequence[float], sparsity: Sequence[float], *, n_seeds: int = 5,
                             alpha: float = 1.0, beta: float | None = None, n_samples: int = 1,
                             units=None, ties: str = "random", batch_size: int = 256) -> tuple[torch.Tensor, ...]:
    """Mean Fid+ and Fid− curves of ``clean`` degraded at every noise level → two ``(n_seeds, n_levels, n_sparsity)``.

    clean: the explainer's map, any layout ``fid_plus`` accepts. Degradation ``k`` of seed ``s`` uses generator
    ``1000·s + k`` and the Monte-Carlo masks generator ``s``, so every evaluation method sees the same degraded
    maps. "−" curves are index-paired as in the authors' code: at level i they remove the bottom i (keep the top
    1 − i). alpha/beta/n_samples select Fidelity (1, None, 1), R-Fidelity (α, None, N) or F-Fidelity (α, β, N).
    """
    minus_sparsity = [round(1 - s, 6) for s in sparsity]
    plus = torch.zeros(n_seeds, len(noise_levels), len(sparsity))
    minus = torch.zeros_like(plus)
    common = dict(alpha=alpha, beta=beta, n_samples=n_samples, batch_size=batch_size, units=units, ties=ties)
    for s in range(n_seeds):  # a handful of (seed, level) pairs; each call is batched over samples and masks
        for k, xi in enumerate(noise_levels):
            attr = explainers.degrade(clean, xi, generator=1000 * s + k)
            plus[s, k] = fidelity.fid_plus(model, x, y, attr, sparsity, generator=s, **common).mean(0).cpu()
            minus[s, k] = fidelity.fid_minus(model, x, y, attr, minus_sparsity, generator=s, **common).mean(0).cpu()
    return plus, minus

"""F-Fidelity family (Zheng et al., ICLR 2025; spec §1): Fid±, R-Fidelity RFid±, F-Fidelity FFid±, the
ground-truth-ranking correlation analysis and the explanation-size read-out of Theorem 1.

All scores are per sample and per sparsity level. They are built on ``faithlab.perturb``: one batched call of
``removal_outputs`` evaluates the clean input and every (level, Monte-Carlo mask) variant, chunked by
``batch_size``. Random masks are drawn on the generator's device (CPU by default) and moved to x's device, so
results do not depend on the device or on ``batch_size``. The masks of all levels and Monte-Carlo samples are
held at once as a ``(B, L·N, n)`` bool tensor: call on slices of the batch when B·L·N·n bytes is too large.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import torch

from faithlab import _validate, perturb, stats

__all__ = [
    "fid_plus",
    "fid_minus",
    "ground_truth_ranking",
    "rank_methods",
    "explanation_size",
    "critical_points",
]

_OUTPUTS = ("correct", "prob")


def _sparsity(sparsity: Sequence[float] | torch.Tensor) -> torch.Tensor:
    s = torch.as_tensor(sparsity, dtype=torch.float64).detach().cpu()
    if s.ndim != 1 or s.numel() == 0:
        raise ValueError(f"sparsity must be a non-empty 1-D sequence of fractions, got shape {tuple(s.shape)}")
    if not bool(torch.isfinite(s).all()) or bool(((s < 0) | (s > 1)).any()):
        raise ValueError(f"sparsity must lie in [0, 1], got {s.tolist()}")
    return s


def _removal_sets(scores: torch.Tensor, counts: torch.Tensor, plus: bool, ties: str,
                  generator: torch.Generator | None) -> torch.Tensor:
    """Candidate sets ``(B, L, n)``: R+ = the top ``counts[l]`` units (plus) or R− = the rest (minus)."""
    perm = perturb.order(scores, "morf", generator=generator, ties=ties)
    steps = torch.arange(scores.shape[1], device=scores.device).expand_as(perm)
    pos = torch.empty_like(perm).scatter_(1, perm, steps)  # rank of each unit, 0 = most relevant
    top = pos[:, None, :] < counts.to(scores.device)[None, :, None]
    return top if plus else ~top


def _fidelity(plus: bool, model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor,
              sparsity: Sequence[float] | torch.Tensor, alpha: float, beta: float | None, n_samples: int,
              sampling: str, output: str, units: perturb.Units | None, reference: perturb.Reference,
              batch_size: int, generator: torch.Generator | int | None, ties: str) -> torch.Tensor:
    _validate.tensor(x, "x")
    _validate.tensor(y, "y", ndim=1)
    if y.dtype != torch.int64:
        raise TypeError(f"y must be an int64 tensor of class labels, got dtype {y.dtype}")
    _validate.batch_match(x, y, "x", "y")
    a = _validate.fraction(alpha, "alpha", closed_low=False)
    b = None if beta is None else _validate.fraction(beta, "beta", closed_low=False)
    _validate.positive_int(n_samples, "n_samples")
    _validate.positive_int(batch_size, "batch_size")
    if sampling not in ("bernoulli", "exact"):
        raise ValueError(f"sampling must be 'bernoulli' or 'exact', got {sampling!r}")
    if output not in _OUTPUTS:
        raise ValueError(f"output must be 'correct' (accuracy form, the paper's) or 'prob', got {output!r}")
    if ties not in ("index", "random"):
        raise ValueError(f"ties must be 'index' or 'random', got {ties!r}")
    if x.ndim not in (2, 3, 4):
        raise ValueError(f"x must be images (B, C, H, W), series (B, T, C) or tokens (B, L), got {tuple(x.shape)}")
    units = perturb.default_units(x) if units is None else units
    scores = perturb.unit_scores(attributions, units)
    _validate.batch_match(x, scores, "x", "attributions")
    s = _sparsity(sparsity)
    n = units.n
    counts = torch.round(s * n).long()                        # |R+| per level (half to even, as removal_curve)
    size = counts if plus else n - counts                     # |R| per level
    random = a < 1 or (b is not None and bool((b * n < size).any()))
    g = _validate.generator(generator, why="for random removal (alpha < 1 or a beta cap)") if (
        random or ties == "random") else None
    cand = _removal_sets(scores, counts, plus, ties, g)       # (B, L, n)
    bsz, levels = cand.shape[:2]
    if not random:
        masks = cand[:, :, None, :]                           # remove all of R: one mask per level
    elif sampling == "bernoulli":                             # authors' sampler: rate min(α, βn/|R|) (eq. 6)
        rate = torch.full((levels,), a, dtype=torch.float64)
        if b is not None:
            rate = torch.minimum(rate, b * n / size.clamp(min=1).double())
        masks = perturb.bernoulli_subset(cand.flatten(0, 1), rate.repeat(bsz), g, n_samples=n_samples)
    else:                                                     # exact count min(round(α|R|), ⌊βn⌋)
        k = torch.round(a * size.double()).long()
        if b is not None:
            k = k.clamp(max=math.floor(b * n + 1e-9))
        masks = perturb.exact_subset(cand.flatten(0, 1), k.repeat(bsz), g, n_samples=n_samples)
    masks = masks.reshape(bsz, levels * masks.shape[-2], n)
    clean = torch.zeros(bsz, 1, n, dtype=torch.bool, device=masks.device)
    out = perturb.removal_outputs(model, x, torch.cat([clean, masks], dim=1), units, reference,
                                  output, y, batch_size)
    return out[:, :1] - out[:, 1:].reshape(bsz, levels, -1).mean(dim=-1)


_ARGS_DOC = """
    model: eval-mode classifier returning logits. x: images ``(B, C, H, W)`` (normalised), series ``(B, T, C)``,
    token ids ``(B, L)`` or embeddings ``(B, L, D)``. y: ``(B,)`` int64 ground-truth labels.
    attributions: see ``perturb.unit_scores`` (reduced per unit by Σ|a|, spec §1.1).
    sparsity: explanation sizes s ∈ [0, 1]; |R+| = round(s·n) (spec §1.7).
    alpha: removal fraction α of the candidate set (1 → plain Fid±; <1 with n_samples → RFid±, eqs. 3–4).
    beta: F-Fidelity cap; the rate becomes min(α, βn/|R|) (eq. 6). None → no cap.
    n_samples: Monte-Carlo masks N per sample and level (ignored when nothing is random).
    sampling: ``"bernoulli"`` each candidate removed independently (the authors' code) or ``"exact"`` exactly
    min(round(α|R|), ⌊βn⌋) candidates without replacement.
    output: ``"correct"`` accuracy form 1[y = ŷ] (the paper's tables) or ``"prob"`` the softmax f_y.
    units: feature units (default pixels / time steps / tokens). reference: removal value (default ``"zero"``).
    batch_size: forward-pass chunk; results do not depend on it. generator: torch.Generator or int seed, needed
    when masks are random or ``ties="random"``. ties: how equal scores are ordered (``"index"`` or ``"random"``).
    Returns ``(B, len(sparsity))`` per-sample scores; average over samples for the paper's numbers."""


def fid_plus(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor,
             sparsity: Sequence[float] | torch.Tensor, alpha: float = 1.0, beta: float | None = None,
             n_samples: int = 1, sampling: str = "bernoulli", output: str = "correct",
             units: perturb.Units | None = None, reference: perturb.Reference = "zero", batch_size: int = 256,
             generator: torch.Generator | int | None = None, ties: str = "index") -> torch.Tensor:
    """Fid+ / RFid+ / FFid+ (F-Fidelity eqs. 1, 3, 6): 1[y = ŷ(x)] − mean_j 1[y = ŷ(x − x⊙m'_j)], m'_j ⊆ R+
    (the explanation, top round(s·n) units). Higher is better (removing the explanation hurts).
    """
    return _fidelity(True, model, x, y, attributions, sparsity, alpha, beta, n_samples, sampling, output, units,
                     reference, batch_size, generator, ties)


def fid_minus(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor,
              sparsity: Sequence[float] | torch.Tensor, alpha: float = 1.0, beta: float | None = None,
              n_samples: int = 1, sampling: str = "bernoulli", output: str = "correct",
              units: perturb.Units | None = None, reference: perturb.Reference = "zero", batch_size: int = 256,
              generator: torch.Generator | int | None = None, ties: str = "index") -> torch.Tensor:
    """Fid− / RFid− / FFid− (F-Fidelity eqs. 2, 4, 6): as :func:`fid_plus` but m'_j ⊆ R− (the complement of
    the explanation, which is kept). Lower is better (keeping the explanation preserves the prediction).
    """
    return _fidelity(False, model, x, y, attributions, sparsity, alpha, beta, n_samples, sampling, output, units,
                     reference, batch_size, generator, ties)


fid_plus.__doc__ += _ARGS_DOC
fid_minus.__doc__ += _ARGS_DOC


# ------------------------------------------------------------------------------------ ground-truth ranking
def ground_truth_ranking(P: torch.Tensor, Q: torch.Tensor, noise_levels: Sequence[float] | torch.Tensor,
                         sparsity: Sequence[float] | torch.Tensor | None = None) -> dict[str, dict[str, torch.Tensor]]:
    """F-Fidelity correlation analysis (spec §1.8–1.9) of explainers degraded at known noise levels ξ.

    P: (n_seeds, n_explainers, n_levels) mean "+" scores (Fid+/RFid+/FFid+, MoRF-like); Q: same for "−"
    (LeRF-like). noise_levels: (n_explainers,) ξ of each explainer (the ground truth: lower is better).
    sparsity: optional abscissae of the levels for the macro AUC (default: uniform).
    Returns ``{"macro": {key: (n_seeds,)}, "micro": {key: (n_seeds, n_levels)}}`` with keys ``morf_vs_gt`` (ideal
    −1), ``lerf_vs_gt`` (ideal +1), ``morf_vs_lerf`` (ideal −1) — see ``stats.DIRECTIONS``. The micro correlations
    are the inputs of :func:`rank_methods`. NaN where a vector is constant.
    """
    _validate.tensor(P, "P", ndim=3)
    gt = torch.as_tensor(noise_levels, dtype=P.dtype if P.is_floating_point() else torch.float64).to(P.device)
    _validate.tensor(gt, "noise_levels", ndim=1)
    if gt.shape[0] != P.shape[1]:
        raise ValueError(f"noise_levels must give one ξ per explainer ({P.shape[1]}), got {gt.shape[0]}")
    lv = None if sparsity is None else _sparsity(sparsity).to(P.device)
    return {"macro": stats.macro_correlations(P, Q, gt, lv), "micro": stats.micro_correlations(P, Q, gt)}


def rank_methods(micro: Mapping[str, Mapping[str, torch.Tensor]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Micro ranks of evaluation methods (spec §1.9): at every seed and level rank the methods by their micro
    correlation (best = 1 in the ``stats.DIRECTIONS`` sense, ties share the minimum rank, NaN last).

    micro: ``{method: ground_truth_ranking(...)["micro"]}``, all tensors (n_seeds, n_levels) of the same shape.
    Returns ``{key: {method: (mean rank, std rank)}}`` over all seeds × levels (population std). Lower is better.
    """
    if not isinstance(micro, Mapping) or len(micro) < 1:
        raise ValueError("micro must be a non-empty mapping {method: {correlation key: tensor}}")
    methods = list(micro)
    result: dict[str, dict[str, tuple[float, float]]] = {}
    for key, direction in stats.DIRECTIONS.items():
        missing = [m for m in methods if key not in micro[m]]
        if missing:
            raise ValueError(f"micro[{missing[0]!r}] lacks the correlation {key!r}")
        shapes = {tuple(micro[m][key].shape) for m in methods}
        if len(shapes) != 1:
            raise ValueError(f"micro tensors for {key!r} must share one shape, got {sorted(shapes)}")
        ranks = stats.micro_ranks(torch.stack([micro[m][key] for m in methods]), direction).flatten(1)
        mean, std = ranks.mean(dim=1), ranks.std(dim=1, correction=0)
        result[key] = {m: (float(mean[i]), float(std[i])) for i, m in enumerate(methods)}
    return result


# -------------------------------------------------------------------------------------- explanation size
def critical_points(alpha: float, beta: float) -> float:
    """Second critical point of Theorem 1 (spec §1.10): s = β/α+, where FFid+'s removal budget βn stops growing
    with the explanation (0.2 for the defaults β = 0.1, α+ = 0.5). The first critical point is the unknown size r.
    """
    a = _validate.fraction(alpha, "alpha", closed_low=False)
    b = _validate.fraction(beta, "beta", closed_low=False)
    return b / a


def explanation_size(curve: torch.Tensor, sparsity: Sequence[float] | torch.Tensor, alpha: float | None = None,
                     beta: float | None = None, tol: float = 0.05) -> torch.Tensor:
    """Read the explanation size r off an FFid+ curve (Theorem 1, spec §1.10).

    FFid+(s) rises until min(r, β/α), is flat between the two critical points r and β/α, and falls after both.
    The plateau is the set of levels within ``tol``·(max − min) of the curve's maximum; r̂ is its start, or — when
    alpha and beta are given and the start is closer to β/α than the end is — its end (case r > β/α).
    curve: (..., n_levels) FFid+ means; sparsity: (n_levels,) increasing. Returns (...) estimated r.
    """
    _validate.tensor(curve, "curve", floating=True)
    _validate.finite(curve, "curve")
    s = _sparsity(sparsity).to(curve.device, curve.dtype)
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

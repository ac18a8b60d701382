"""F-Fidelity's scores (Zheng et al., ICLR 2025; spec §1.1–1.7): Fid±, R-Fidelity RFid± and F-Fidelity FFid± with
their ``*_details`` twins (each score's Monte-Carlo standard error), the "−" levels paired with the "+" levels
(:func:`minus_sparsity`) and the registry's declarations of the six metrics. One :class:`~faithlab.perturb.Removal`
run evaluates the clean input and every (level, Monte-Carlo mask) variant, chunked by ``batch_size``.
"""

from __future__ import annotations

import inspect

import math
from collections.abc import Callable, Sequence

import torch

from faithlab import _validate, perturb
from faithlab.metrics.registry import Metric, Option, checks, plain, register
from faithlab.metrics.statistics import as_float, trapezoid_auc
from faithlab.perturb.autobatch import BatchSize

__all__ = ["fid_plus", "fid_plus_details", "fid_minus", "fid_minus_details", "minus_sparsity", "SPARSITY"]

OUTPUTS = ("correct", "prob")
SAMPLING = ("bernoulli", "exact")
REDUCE = "sum_abs"
"""The paper's unit-reduction rule: a unit's score is Σ|a| over its elements (spec §1.1)."""
SPARSITY = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""The default explanation sizes s = 0.1, 0.2, …, 0.9 (the levels ``fl.evaluate`` uses)."""


def _fidelity(plus: bool, model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
              target: torch.Tensor | None, sparsity: Sequence[float] | torch.Tensor, alpha: float, beta: float | None,
              n_samples: int, sampling: str, output: str, reduce: str, units: perturb.Units | None,
              reference: perturb.Reference, batch_size: BatchSize, generator: torch.Generator | int | None, ties: str,
              sample_index: torch.Tensor | None) -> dict[str, torch.Tensor]:
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    a = _validate.fraction(alpha, "alpha", closed_low=False)
    b = None if beta is None else _validate.fraction(beta, "beta", closed_low=False)
    _validate.positive_int(n_samples, "n_samples")
    _validate.batch_size(batch_size, "batch_size")  # "auto" goes to the runner, which resolves it per run
    _validate.one_of(sampling, "sampling", SAMPLING)
    _validate.one_of(output, "output", OUTPUTS)
    _validate.one_of(ties, "ties", perturb.TIES)
    runner = perturb.Removal(model, x, units=units, reference=reference, output=output, target=target,
                             batch_size=batch_size)
    attributions = perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, runner.units, reduce=reduce)
    _validate.batch_match(x, scores, "x", "attributions")
    s = _validate.fractions(sparsity, "sparsity")
    constant = perturb.warn_constant(perturb.constant_maps(scores), f"their explanation is the first units by the "
                                     f"ties rule ({ties!r}); the details flag them in 'constant'")
    n = runner.units.n
    counts = torch.round(s * n).long()                        # |R+| per level (half to even, as removal_curve)
    size = counts if plus else n - counts                     # |R| per level
    random = a < 1 or (b is not None and bool((b * n < size).any()))
    taken = None  # exact sampling removes min(round(α|R|), ⌊βn⌋) of R: a level where that is 0 removes nothing
    if random and sampling == "exact":
        taken = torch.round(a * size.double()).long()
        if b is not None:
            taken = taken.clamp(max=math.floor(b * n + 1e-9))
    perturb.check_informative(counts, n, "sparsity", sparsity)
    if taken is not None and not bool(((taken > 0) & (counts > 0) & (counts < n)).any()):
        cause = "beta" if b is not None and math.floor(b * n + 1e-9) == 0 else "alpha"
        raise ValueError(f"{cause}={b if cause == 'beta' else a} measures nothing on inputs of {n} units: exact "
                         f"sampling removes min(round(α·|R|), ⌊β·n⌋) = 0 units at every level (sparsity "
                         f"{s.tolist()}), so the score is the same for every map")
    g = None
    if random or ties == "random":  # one stream per sample (and per level below), keyed by its global index
        g = perturb.sample_seeds(generator, sample_index, x.shape[0],
                                 why="for random removal (alpha < 1 or a beta cap)")
    else:
        perturb.sample_index(sample_index, x.shape[0])  # checked though unused
    top = perturb.top_masks(perturb.ranks(perturb.order(scores, "morf", generator=g, ties=ties)), counts)
    cand = top if plus else ~top                              # (B, L, n) candidate sets R+ or R−
    bsz, levels = cand.shape[:2]
    clean = runner.clean()  # the clean logits, once per run (shared by Fid+ and Fid− inside perturb.sharing)
    if not random:  # remove all of R: one mask per level
        draws = runner.outputs(cand).reshape(bsz, levels, -1)  # (B, L, 1)
    else:
        per_level = g.repeat_interleave(levels)  # one stream per (sample, level)
        if sampling == "bernoulli":                           # authors' sampler: rate min(α, βn/|R|) (eq. 6)
            rate = torch.full((levels,), a, dtype=torch.float64, device=size.device)  # beside size: on the CPU
            if b is not None:
                rate = torch.minimum(rate, b * n / size.clamp(min=1).double())
            sampler, amount = perturb.bernoulli_rows, rate.repeat(bsz)
        else:                                                 # exact count min(round(α|R|), ⌊βn⌋)
            k = torch.round(a * size.double()).long()
            if b is not None:
                k = k.clamp(max=math.floor(b * n + 1e-9))
            sampler, amount = perturb.exact_rows, k.repeat(bsz)
        # checked once here; each block then draws its rows with no host sync
        rows = sampler(cand.flatten(0, 1), amount, generator=per_level, n_samples=n_samples)

        def draw(s0: int, s1: int) -> torch.Tensor:  # the (s1-s0, L·N, n) masks of samples s0..s1-1
            return rows(s0 * levels, s1 * levels).reshape(s1 - s0, levels * n_samples, n)

        # drawn per block of samples as the chunks reach them (bitwise one draw over all): memory one block's masks
        masks = perturb.drawn_in_blocks(draw, bsz, levels * n_samples * n)
        draws = runner.masked(masks, n_variants=levels * n_samples).reshape(bsz, levels, -1)  # (B, L, N)
    removed = draws.mean(dim=-1)
    se, mean_se = _mc_se(draws, random)
    return {"score": clean[:, None] - removed, "clean": clean, "removed": removed, "sparsity": s,
            "constant": constant, "mc_se": se, "mean_mc_se": mean_se}


def _mc_se(draws: torch.Tensor, random: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The Monte-Carlo standard errors of the scores from the per-mask read-outs ``draws`` ``(B, L, N)`` (no other
    forward pass): level l's score is clean − the mean of N i.i.d. masks' read-outs, so its SE is sd_l/√N (sd with
    ddof 1); the levels draw from their own streams (independent), so the SE of the mean over the L levels is
    √(Σ_l sd_l²/N)/L. → ``(B, L)`` and ``(B,)`` float64, NaN where nothing is random (one fixed mask per level: no
    Monte-Carlo error to estimate) or N = 1 (no spread to read)."""
    bsz, levels, n = draws.shape
    if not random or n < 2:
        nan = torch.full((bsz, levels), torch.nan, dtype=torch.float64, device=draws.device)
        return nan, nan[:, 0].clone()
    var = draws.double().var(dim=-1, correction=1) / n                # (B, L) the variance of each level's mean
    return var.sqrt(), var.sum(dim=-1).sqrt() / levels


_ARGS_DOC = """
    model: eval-mode classifier returning logits. x: images ``(B, C, H, W)`` (normalised), series ``(B, T, C)``,
    token ids ``(B, L)`` or embeddings ``(B, L, D)``. attributions: see ``perturb.unit_scores``.
    target: ``(B,)`` int64, the class each sample's score reads; None → the model's prediction ŷ on the clean x
    (one extra forward pass per sample). The paper reads the true labels (its accuracy form 1[y = ŷ]): pass
    ``target=y``.
    sparsity: explanation sizes s ∈ [0, 1]; |R+| = round(s·n) (spec §1.7); default 0.1, 0.2, …, 0.9. A grid
    whose every level takes no unit or every unit (e.g. ``[0.0]``, ``[1.0]``) is the same for every map: refused.
    alpha: removal fraction α of the candidate set (1 → plain Fid±; <1 with n_samples → RFid±, eqs. 3–4).
    beta: F-Fidelity cap; the rate becomes min(α, βn/|R|) (eq. 6). None → no cap.
    n_samples: Monte-Carlo masks N per sample and level (ignored when nothing is random).
    sampling: ``"bernoulli"`` each candidate removed independently (the authors' code) or ``"exact"`` exactly
    min(round(α|R|), ⌊βn⌋) candidates without replacement.
    output: ``"correct"`` accuracy form 1[target = ŷ] (the paper's tables) or ``"prob"`` the softmax f_target.
    reduce: the unit-reduction rule, default Σ|a| (the paper's, §1.1).
    units: feature units (default pixels / time steps / tokens). reference: removal value (default ``"zero"``).
    batch_size: forward-pass chunk, an int or ``"auto"`` (the size a cached timing probe of the model finds
    cheapest per input, see :mod:`faithlab.perturb.autobatch`); results do not depend on it.
    generator: torch.Generator or int seed, needed when masks are random or ``ties="random"``. ties: how equal
    scores are ordered (``"index"`` or ``"random"``).
    sample_index: ``(B,)`` global index of each sample (default 0 … B − 1). Randomness is keyed to the sample: one
    root seed is drawn from ``generator``, and sample i's tie order and masks (each level its own stream) come from
    the root and ``sample_index[i]``, so a slice of the data given its global indices gets the whole's rows.
    A constant map (e.g. an all-zero Grad-CAM) defines no explanation: its "explanation" is the first units by
    the ties rule, the scores are returned and a ``perturb.ConstantMapWarning`` counts those samples (the
    ``*_details`` twins flag them in ``"constant"``). NaN/inf logits raise a ValueError naming the samples."""

_DETAILS_DOC = """
    Returns ``score`` ``(B, L)`` (the plain call's result), ``clean`` ``(B,)`` the read-out on x, ``removed``
    ``(B, L)`` its mean over the Monte-Carlo masks after removal (score = clean − removed), ``sparsity`` ``(L,)``
    float64, ``constant`` ``(B,)`` bool, the samples whose map is constant over the units (no ranking), and the
    Monte-Carlo standard errors read from the same masks' read-outs (no extra forward pass): ``mc_se`` ``(B, L)``
    float64, the SE of each score (sd over the N masks, ddof 1, / √N), and ``mean_mc_se`` ``(B,)`` float64, the SE
    of ``score.mean(1)`` (the levels draw independently: √(Σ_l sd_l²/N)/L); both NaN where nothing is drawn at
    random (α = 1 without a binding β cap) or N = 1."""


def fid_plus_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                     target: torch.Tensor | None = None, sparsity: Sequence[float] | torch.Tensor = SPARSITY,
                     alpha: float = 1.0, beta: float | None = None, n_samples: int = 1, sampling: str = "bernoulli",
                     output: str = "correct", reduce: str = REDUCE, units: perturb.Units | None = None,
                     reference: perturb.Reference = "zero", batch_size: BatchSize = None,
                     generator: torch.Generator | int | None = None, ties: str = "index",
                     sample_index: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """:func:`fid_plus` with its read-outs (F-Fidelity eqs. 1, 3, 6). Arguments as :func:`fid_plus`."""
    return _fidelity(True, model, x, attributions, target=target, sparsity=sparsity, alpha=alpha, beta=beta,
                     n_samples=n_samples, sampling=sampling, output=output, reduce=reduce, units=units,
                     reference=reference, batch_size=batch_size, generator=generator, ties=ties,
                     sample_index=sample_index)


def fid_minus_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor,
                      **options) -> dict[str, torch.Tensor]:
    """:func:`fid_minus` with its read-outs (F-Fidelity eqs. 2, 4, 6). Arguments as :func:`fid_minus`."""
    bound = _DETAILS_SIGNATURE.bind(model, x, attributions, **options)  # an unknown keyword: a TypeError naming it
    bound.apply_defaults()
    return _fidelity(False, **bound.arguments)


# the twins take the same parameters by construction: help() and the API pages show fid_plus_details' real options
_DETAILS_SIGNATURE = inspect.signature(fid_plus_details)
fid_minus_details.__signature__ = _DETAILS_SIGNATURE


fid_plus = plain(fid_plus_details, "score", """
    Fid+ / RFid+ / FFid+ (F-Fidelity eqs. 1, 3, 6): 1[y = ŷ(x)] − mean_j 1[y = ŷ(x − x⊙m'_j)], m'_j ⊆ R+
    (the explanation, top round(s·n) units) → ``(B, len(sparsity))``; average over samples for the paper's
    numbers. Higher is better (removing the explanation hurts). The "−" curve the authors pair with it removes
    the bottom s: :func:`fid_minus` at :func:`minus_sparsity` ``(sparsity)``.
    """)


fid_minus = plain(fid_minus_details, "score", """
    Fid− / RFid− / FFid− (F-Fidelity eqs. 2, 4, 6): as :func:`fid_plus` but m'_j ⊆ R− (the complement of
    the explanation, which is kept) → ``(B, len(sparsity))``. Lower is better (keeping the explanation preserves
    the prediction).
    """)


for _fn in (fid_plus, fid_minus, fid_plus_details, fid_minus_details):
    if _fn.__doc__ is not None:  # None under python -OO
        _fn.__doc__ += _DETAILS_DOC if _fn.__name__.endswith("_details") else _ARGS_DOC
del _fn


# The six metrics of fl.evaluate: one implementation each side (the *_details twin), read as the mean over the sizes.
# Fid± removes the whole candidate set (α = 1); RFid± keeps α of it at random, N masks; FFid± also caps the removal
# at βn and runs on the model fine-tuned with random removal. All read the labels (the paper's accuracy form).
SIZES = Option("sparsity", SPARSITY, "F-Fidelity's explanation sizes (the score is the mean over them)",
               checks.fractions)
_RANDOM = (SIZES, Option("alpha", 0.5, "RFid/FFid: the fraction α of the removal kept at random", checks.open_fraction),
           Option("n_samples", 50, "RFid/FFid: Monte-Carlo masks per sample", checks.positive))
_BETA = Option("beta", 0.1, "FFid: the cap β on the fraction removed", checks.open_fraction)
_DRAWS = ("n_samples", 5, "random masks of RFid±/FFid±")
_MASKS = ("n_samples", 10, "fewer Monte-Carlo masks")


def _mean_over_sizes(details: dict) -> torch.Tensor:
    return details["score"].mean(dim=1)


_DOCS = {  # what each measures, in one line (the report's metrics table, help(fl.evaluate), the API page)
    "fid+": "correct predictions lost when the map's top features are removed",
    "fid-": "correct predictions lost when all but the map's top features are removed",
    "rfid+": "Fid+ removing a random share α of the top features (Monte-Carlo masks)",
    "rfid-": "Fid− removing a random share α of the other features (Monte-Carlo masks)",
    "ffid+": "RFid+ on a copy of the model fine-tuned with random removal",
    "ffid-": "RFid− on a copy of the model fine-tuned with random removal"}
# settings that take no unit or every unit at every size: the same score for every map (refused)
_SAME_FOR_EVERY_MAP = ({"sparsity": [0.0]}, {"sparsity": [1.0]}, {"sparsity": [0.0, 1.0]})
_FID = {"group": "fid", "options": (SIZES,), "fixed": {"alpha": 1.0},
        "tip": ("sparsity", [0.1, 0.5, 0.9], "fewer explanation sizes"), "degenerate": _SAME_FOR_EVERY_MAP}
# n_samples = 0 draws nothing; one mask is an estimate (its mc_se is NaN), so 1 is the least count
_RFID = {"group": "rfid", "options": _RANDOM, "mc_se": "mean_mc_se", "tip": _MASKS, "mc_count": _DRAWS,
         "degenerate": (*_SAME_FOR_EVERY_MAP, {"n_samples": 0})}
# FFid: the paper explains the fine-tuned model; here the given maps serve all three
_FFID = {"group": "ffid", "options": (*_RANDOM, _BETA), "mc_se": "mean_mc_se", "tip": _MASKS, "mc_count": _DRAWS,
         "needs": ("finetuned",), "model": "finetuned",
         "degenerate": (*_SAME_FOR_EVERY_MAP, {"n_samples": 0}, {"sampling": "exact", "alpha": 0.5, "beta": 0.001})}
for _kind, _facts in (("fid", _FID), ("rfid", _RFID), ("ffid", _FFID)):
    for _sign, _label, _fn, _details in (("+", "+", fid_plus, fid_plus_details), ("-", "−", fid_minus,
                                                                                  fid_minus_details)):
        register(Metric(f"{_kind}{_sign}", f"{_kind.upper()[:-3]}{_kind[-3:].capitalize()}{_label}", "ffidelity",
                        _sign == "+", _fn, details=_details, score=_mean_over_sizes, accuracy=True,
                        doc=_DOCS[f"{_kind}{_sign}"], **_facts))
del _kind, _facts, _sign, _label, _fn, _details


def minus_sparsity(sparsity: Sequence[float] | torch.Tensor) -> list[float]:
    """Sparsity levels of the "−" curve index-paired with the "+" levels, as in the authors' code: at level i the
    "+" curve removes the top ``s_i`` and the "−" curve the bottom ``s_i`` (it keeps the top ``1 − s_i``, so its
    explanation size is ``1 − s_i``, rounded to 6 decimals). The paired curves are
    ``fid_plus(..., sparsity=s)`` and ``fid_minus(..., sparsity=minus_sparsity(s))`` with the same options (an int
    ``generator`` restarts for each call)."""
    return [round(1 - s, 6) for s in _validate.fractions(sparsity, "sparsity").tolist()]

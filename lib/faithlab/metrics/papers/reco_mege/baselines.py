"""Bhatt et al. 2020's faithfulness correlation μF and average sensitivity S_avg (spec §4.6), the two measures
ReCo/MeGe's paper (Fel & Vigouroux 2020) compares its own with in Table 3. The public names are gathered in
:mod:`faithlab.metrics` (``fl.metrics.mu_fidelity(...)``, ``fl.metrics.average_stability(...)``); ReCo and MeGe
themselves live in :mod:`faithlab.metrics.papers.reco_mege.crossfold`.

μF (:func:`mu_fidelity`) correlates, over random subsets of units, the attributions' sum on the subset with the
output drop when the subset is removed (every removed input goes through :mod:`faithlab.perturb`'s engine); S_avg
(:func:`average_stability`) is the mean squared ℓ2 distance between an explainer's map of x and its maps of
neighbours within an ℓ1 radius. Each has a ``*_details`` twin, which also returns the score's Monte-Carlo standard
error over its random draws (``mc_se``: μF's jackknife over the subsets, S_avg's sd/√n over the neighbours).
Randomness is keyed to the sample (a root seed and the sample's global index), so batch size and splitting the data
change nothing.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import torch

from faithlab import _validate, perturb
from faithlab.metrics.papers.reco_mege.crossfold import predicted
from faithlab.metrics.registry import Metric, Option, checks, plain, register
from faithlab.metrics.statistics import pearson, rankdata
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize

__all__ = ["mu_fidelity", "mu_fidelity_details", "average_stability", "average_stability_details"]

_BLOCK = 32  # samples whose μF subsets / S_avg neighbours are drawn and held at once (memory, not results)


# ------------------------------------------------------------------------------------------------------------ μF
def mu_fidelity_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                        target: torch.Tensor | None = None, n_subsets: int = 200, subset_fraction: float = 0.15,
                        reference: perturb.Reference = "zero", units: perturb.Units | None = None,
                        output: perturb.Output = "prob", correlation: str = "pearson",
                        generator: torch.Generator | int = 0, sample_index: torch.Tensor | None = None,
                        batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """Per-sample μF (Bhatt et al. 2020; paper eq. 1, spec §4.6) with its raw draws.

    For each sample, ``n_subsets`` random subsets S of round(subset_fraction · n) units (pixels by default, all
    channels together) are removed (replaced by ``reference``, default 0); μF is the correlation over the subsets
    between Σ_{i∈S} e_i (unit scores = Σ over the unit's attribution elements) and f_t(x) − f_t(x with S removed),
    f = ``output`` of ``target``. correlation: ``"pearson"`` (Bhatt, the default) or ``"spearman"`` (xplique).
    Every removed input goes through :mod:`faithlab.perturb`'s engine, ``batch_size`` per forward call: an int, or
    ``"auto"``, which each engine run resolves (:mod:`faithlab.perturb.autobatch`: timings cached per model and
    input shape, so the runs share what the first learnt); results do not depend on it.

    Randomness is keyed to the sample: one root seed is drawn from ``generator`` and sample i's subsets come from its
    own stream, keyed by the root and ``sample_index[i]``, its global index (default its position in x, 0 … B − 1).
    A slice of the data evaluated with its global indices gives the rows of the whole, whatever batch_size.

    x ``(B, ...)``, attributions shaped like x (or without the channel dim), target ``(B,)`` int64 classes; None →
    the model's prediction ŷ on the clean x (the study's Table 3 protocol explains and reads the true labels:
    ``target=y``).
    Returns ``mu_f`` ``(B,)`` (NaN where the attribution sums or the output drops are constant), ``sums`` and
    ``drops`` ``(B, n_subsets)`` and ``mc_se`` ``(B,)`` float64, μF's Monte-Carlo standard error over the random
    subsets, read from these draws (no other forward pass): the jackknife over the subsets (leave one subset out,
    all at once; NaN where μF is, where n_subsets < 4 or a leave-one-out correlation is undefined). n_subsets
    below 3 is refused (a ValueError: over one subset μF is undefined, over two it is ±1 for every map), as is a
    ``subset_fraction`` that removes every unit. Higher is better.
    """
    _validate.tensor(x, "x")
    _validate.one_of(correlation, "correlation", ("pearson", "spearman"))
    n_subsets = _validate.positive_int(n_subsets, "n_subsets")
    if n_subsets < 3:  # a correlation over 1 subset is undefined, over 2 it is ±1 whatever the map
        raise ValueError(f"n_subsets={n_subsets} measures nothing: μF is a correlation over the subsets, undefined "
                         "over one and ±1 for every map over two; use at least 3 (the default is 200)")
    frac = _validate.fraction(subset_fraction, "subset_fraction", closed_low=False)
    batch_size = _validate.batch_size(batch_size, "batch_size")
    units = perturb.units_for(units, x)
    attributions = perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, units, reduce="sum").double()
    count = round(frac * units.n)
    if count < 1:
        raise ValueError(f"subset_fraction={subset_fraction} of {units.n} units removes no unit")
    if count >= units.n:  # every subset is every unit: one sum, one drop, no correlation
        raise ValueError(f"subset_fraction={subset_fraction} of {units.n} units removes every unit in every subset: "
                         "μF is then undefined for every map; use a fraction that leaves some units")
    seeds = perturb.sample_seeds(generator, sample_index, x.shape[0], why="to draw the subsets")
    if isinstance(reference, torch.Tensor):   # x's rank; rows are sliced per block only if it has one per sample
        reference = perturb.make_reference(x, reference)
    # the clean read-out and (target None) the prediction come from one clean pass, the one fl.evaluate's other
    # metrics share inside its perturb.sharing() block
    run = perturb.Removal(model, x, units=units, reference=reference, output=output, target=target,
                          batch_size=batch_size)
    target, clean = run.target, run.clean()
    sums = torch.empty(x.shape[0], n_subsets, dtype=torch.float64, device=x.device)
    drops = torch.empty_like(sums)
    every = torch.ones(1, units.n, dtype=torch.bool, device=x.device)
    for b0 in range(0, x.shape[0], _BLOCK):  # all subsets of _BLOCK samples at once (B·n_subsets·n bools in all)
        b1 = min(x.shape[0], b0 + _BLOCK)
        removed, sums[b0:b1] = perturb.exact_subset_sums(every.expand(b1 - b0, -1), count, scores[b0:b1],
                                                          generator=seeds[b0:b1], n_samples=n_subsets)
        out = perturb.removal_outputs(model, x[b0:b1], removed, units=units,
                                      reference=_rows(reference, b0, b1), output=output, target=target[b0:b1],
                                      batch_size=batch_size)
        drops[b0:b1] = clean[b0:b1, None].double() - out.double()
    if correlation == "spearman":
        mu = pearson(rankdata(sums), rankdata(drops))
    else:
        mu = pearson(sums, drops)
    return {"mu_f": mu, "sums": sums, "drops": drops, "mc_se": _jackknife_se(sums, drops, correlation)}


# The Monte-Carlo standard error of μF, read from the draws μF is computed from (no other forward pass). μF is a
# correlation over n_subsets i.i.d. random subsets, not a mean of them, so sd/√R does not apply; the jackknife over
# the subsets does (Efron & Stein 1981; Efron & Tibshirani 1993, ch. 11): with r_(i) the correlation without
# subset i and r_(·) their mean, SE = √((R − 1)/R · Σ_i (r_(i) − r_(·))²). It assumes nothing about the
# distribution of (sum, drop) (the delta method through Fisher's z would assume bivariate normality, which a
# probability drop is not) and needs no resampling stream. All R leave-one-out correlations are computed at once.
_SPEARMAN_ELEMENTS = 2**22  # (rows, R, R) leave-one-out ranks held at once by the Spearman jackknife (memory only)


def _jackknife_se(sums: torch.Tensor, drops: torch.Tensor, correlation: str) -> torch.Tensor:
    """The jackknife standard error over the subsets (dim 1) of each row's correlation of ``sums`` and ``drops``
    ``(B, R)`` → ``(B,)`` float64; NaN where R < 4 (each leave-one-out correlation over 2 subsets is ±1: their
    spread says nothing) or a leave-one-out correlation is undefined (a constant vector: μF is then NaN, or one
    subset alone makes the vector vary)."""
    rows, r = sums.shape
    if r < 4 or rows == 0:
        return torch.full((rows,), torch.nan, dtype=torch.float64, device=sums.device)
    if correlation == "pearson":
        loo = _loo_pearson(sums, drops)
    else:
        step = max(1, _SPEARMAN_ELEMENTS // (r * r))
        loo = torch.cat([_loo_spearman(sums[b0:b0 + step], drops[b0:b0 + step]) for b0 in range(0, rows, step)])
    spread = (loo - loo.mean(dim=1, keepdim=True)).pow(2).sum(dim=1)
    return ((r - 1) / r * spread).sqrt()


def _loo_correlation(cov: torch.Tensor, va: torch.Tensor, vb: torch.Tensor, full_a: torch.Tensor,
                     full_b: torch.Tensor) -> torch.Tensor:
    """cov / √(va·vb), NaN where a leave-one-out sum of squares vanishes (to rounding, relative to the full one)."""
    flat = (va <= 1e-12 * full_a) | (vb <= 1e-12 * full_b)
    return torch.where(flat, torch.nan, cov / (va.clamp(min=0) * vb.clamp(min=0)).sqrt())


def _loo_pearson(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pearson's correlation of each row of ``a``, ``b`` ``(B, R)`` without draw i, for every i → ``(B, R)``: from
    the centred sums, Σ_{j≠i} of the centred products is S − R/(R − 1)·ã_i·b̃_i (the mean moves by −ã_i/(R − 1))."""
    r = a.shape[1]
    ac, bc = a - a.mean(dim=1, keepdim=True), b - b.mean(dim=1, keepdim=True)
    k = r / (r - 1)
    saa, sbb = (ac * ac).sum(dim=1, keepdim=True), (bc * bc).sum(dim=1, keepdim=True)
    cov = (ac * bc).sum(dim=1, keepdim=True) - k * ac * bc
    return _loo_correlation(cov, saa - k * ac * ac, sbb - k * bc * bc, saa, sbb)


def _loo_ranks(v: torch.Tensor) -> torch.Tensor:
    """Average ranks of each row of ``v`` ``(B, R)`` without draw i → ``(B, R_i, R_j)``: removing v_i lowers the
    rank of every larger value by 1 and of every tied one by ½ (the diagonal j = i is left out by the caller)."""
    pair_less = v[:, :, None] < v[:, None, :]
    pair_tied = v[:, :, None] == v[:, None, :]
    return rankdata(v)[:, None, :] - pair_less.double() - 0.5 * pair_tied.double()


def _loo_spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman's correlation (Pearson of average ranks) of each row of ``a``, ``b`` ``(B, R)`` without draw i, for
    every i → ``(B, R)``."""
    r = a.shape[1]
    keep = ~torch.eye(r, dtype=torch.bool, device=a.device)
    out = []
    for v in (a, b):
        ranks = _loo_ranks(v)
        mean = torch.where(keep, ranks, 0.0).sum(dim=2, keepdim=True) / (r - 1)
        out.append(torch.where(keep, ranks - mean, 0.0))
    ca, cb = out
    full_a = (rankdata(a) - (r + 1) / 2).pow(2).sum(dim=1, keepdim=True)
    full_b = (rankdata(b) - (r + 1) / 2).pow(2).sum(dim=1, keepdim=True)
    return _loo_correlation((ca * cb).sum(dim=2), (ca * ca).sum(dim=2), (cb * cb).sum(dim=2), full_a, full_b)


def _rows(reference: perturb.Reference, b0: int, b1: int) -> perturb.Reference:
    per_sample = isinstance(reference, torch.Tensor) and reference.shape[0] > 1
    return reference[b0:b1] if per_sample else reference


mu_fidelity = plain(mu_fidelity_details, "mu_f", """
    Per-sample μF ``(B,)`` (arguments as in :func:`mu_fidelity_details`); the paper's score is the mean over
    samples (NaN rows, constant maps or outputs, left out and counted by the caller). Higher is better.
    """)


# --------------------------------------------------------------------------------------------------------- S_avg
def _takes_seeds(explainer: Callable) -> bool:
    """Whether ``explainer`` has a ``seeds`` parameter that can be passed by keyword (the explainer contract of
    :func:`faithlab.evaluate`)."""
    try:
        p = inspect.signature(explainer).parameters.get("seeds")
    except (TypeError, ValueError):  # ValueError: a callable without a signature (some builtins)
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _finite_maps(maps: torch.Tensor, samples: list[int], what: str, rows: int, name: str = "explainer",
                 pending: list | None = None) -> None:
    """Raise if ``maps`` is not one map per input, or holds NaN/inf. With ``pending`` (a list) the finiteness
    flag is kept on the maps' device for :func:`_raise_non_finite` after the loop (no host sync per chunk)."""
    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"{name} must return a tensor of maps, got {type(maps).__name__}")
    if maps.ndim == 0 or maps.shape[0] != rows:
        raise ValueError(f"{name} must return one map per input: {rows} inputs ({what}) gave maps of shape "
                         f"{tuple(maps.shape)}")
    if pending is not None:
        pending.append((torch.isfinite(maps).all().reshape(1), samples, what, name))
        return
    if not bool(torch.isfinite(maps).all()):
        raise ValueError(f"{name} returned non-finite maps on {what} of samples {samples[:8]}")


def _raise_non_finite(pending: list) -> None:
    """The first chunk of ``pending`` (see :func:`_finite_maps`) whose maps were not finite, raised as
    :func:`_finite_maps` raises it: one host sync for all the chunks."""
    if not pending:
        return
    finite = torch.cat([flag.to(pending[0][0].device) for flag, *_ in pending])
    if bool(finite.all()):
        pending.clear()
        return
    _, samples, what, name = pending[int((~finite).nonzero()[0, 0])]
    raise ValueError(f"{name} returned non-finite maps on {what} of samples {samples[:8]}")


def average_stability_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor | None = None, *,
                              explainer: Callable[..., torch.Tensor], target: torch.Tensor | None = None,
                              n_neighbours: int = 200, radius: float = 0.1, common_noise: bool = True,
                              sample_index: torch.Tensor | None = None, generator: torch.Generator | int = 0,
                              batch_size: BatchSize = None) -> dict[str, torch.Tensor | None]:
    """Per-sample S_avg (Bhatt et al. 2020 via the paper's eq. 2, spec §4.6, [recon] §6.16): the mean over
    ``n_neighbours`` neighbours z = x + u, u_i ~ U(−r/d, r/d) (so ‖u‖₁ ≤ r = ``radius``, d = elements of one input;
    u_i a uniform 32-bit integer scaled to the interval), of ‖g(x) − g(z)‖²₂, g the ``explainer``. The maps enter
    the distance as the explainer returns them, not normalised: spec §4.6 names no normalisation and xplique's
    AverageStability (the reference, spec §0) applies none (Quantus' AvgSensitivity, which divides by ‖g(x)‖, is a
    different metric).

    S_avg measures the explainer, not one set of maps: ``explainer(model, inputs, target) → maps`` (the contract of
    :func:`faithlab.evaluate`) is called on at most ``batch_size`` inputs at a time (x first, then the neighbours of
    several samples together), each explained for its sample's ``target``. batch_size: an int, or ``"auto"``: the
    model's forward batch for x found by :func:`faithlab.perturb.autobatch.resolve` (once per call, for the
    B·(n_neighbours + 1) inputs): an explainer runs the model on every input it explains, so the model's best batch
    is the natural chunk; how the explainer batches its own further passes (SmoothGrad's noisy copies, say) is its
    business. common_noise (default True): common
    random numbers — an explainer with a ``seeds`` parameter is called as ``explainer(model, inputs, target,
    seeds=seeds)``, ``seeds`` ``(rows,)`` int64, one per input, where every neighbour of sample i carries sample i's
    own seed (e.g. ``lambda m, z, t, seeds=None: explain(m, z, t, method="smoothgrad", sample_seeds=seeds)``). A
    stochastic explainer then draws the same noise for x and for each of its neighbours, so the distance measures how
    the map changes with the input, not the explainer's Monte-Carlo noise (which would otherwise dominate: it does
    not vanish as the radius goes to 0); a deterministic explainer gives the same S_avg either way. With
    common_noise=False, or an explainer without a ``seeds`` parameter (it cannot share its noise), the explainer is
    called as ``explainer(model, inputs, target)``.

    attributions: g(x), the maps of x ``(B, ...)``; None (the default) → the explainer's own maps of x, each
    explained with its sample's seed (computed here first, as Bhatt et al. and xplique do). Maps given here are used
    as they are (Quantus' convention); they give the default's S_avg only when they are what the explainer returns
    on x with those seeds, i.e. for a deterministic explainer. The study passes None: its maps of x for μF draw a
    stochastic method's noise (SmoothGrad) from one ``generator``, not from the per-sample seeds, and with them that
    noise would enter S_avg (and change the book's S_avg of SmoothGrad).

    target: ``(B,)`` int64 classes; None → the model's prediction ŷ on the clean x (``batch_size`` inputs per
    forward call; the study explains the true labels: ``target=y``). Randomness is keyed to the sample: from
    ``generator`` one root seed is drawn, and sample i's neighbours and seed come from
    ``perturb.keyed_seed(root, sample_index[i], ·)``. sample_index: ``(B,)`` integer global indices of x's samples
    (None: 0 … B − 1), so that x split into parts with their global indices (and an int seed, or equally seeded
    generators) gives the scores of the whole; nothing depends on batch_size or on the other samples (beyond the
    float rounding of the model's other batch shapes).

    Returns ``s_avg`` ``(B,)`` float64, ``distances`` ``(B, n_neighbours)``, ``seeds`` (the ``(B,)`` int64 seeds
    given to the explainer, None when it was called without) and ``mc_se`` ``(B,)`` float64, the Monte-Carlo
    standard error of ``s_avg`` over the random neighbours (sd of the distances, ddof 1, / √n_neighbours; NaN with
    one neighbour; with common noise, given the explainer's one noise draw per sample). Lower is better (0 for an
    explainer whose map does not change within the radius).
    """
    if not callable(explainer):
        raise TypeError("explainer must be a callable(model, inputs, target) or (model, inputs, target, seeds=...) "
                        f"-> maps, got {type(explainer).__name__}")
    _validate.model(model)
    _validate.one_device(x=x, attributions=attributions, target=target)
    _validate.tensor(x, "x", floating=True)
    _validate.finite(x, "x")
    if target is not None:
        _validate.tensor(target, "target", ndim=1)
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must be an integer tensor of class indices, got dtype {target.dtype}")
        if target.numel() and int(target.min()) < 0:  # the range needs the model's width: one input's pass
            perturb.readout.check_classes(target, perturb.logits(model, x[:1], finite=False).shape[1], "target")
        _validate.batch_match(x, target, "x", "target")
    if attributions is not None:
        _validate.tensor(attributions, "attributions")
        _validate.batch_match(x, attributions, "x", "attributions")
        _validate.same_device(x, attributions, "x", "attributions")
        _finite_maps(attributions, list(range(x.shape[0])), "x", x.shape[0], "attributions")
    s = _validate.positive_int(n_neighbours, "n_neighbours")
    r = _validate.number(radius, "radius")
    if not 0 < r < math.inf:
        raise ValueError(f"radius must be a positive finite number, got {radius}")
    if not isinstance(common_noise, bool):
        raise TypeError(f"common_noise must be a bool, got {type(common_noise).__name__}")
    batch_size = _validate.batch_size(batch_size, "batch_size")
    n = x.shape[0]
    batch_size = autobatch.resolve(batch_size, model, x, n * (s + 1))
    index = torch.tensor(perturb.sample_index(sample_index, n), dtype=torch.int64, device="cpu").to(x.device)
    gen = _validate.generator(generator, why="to draw the neighbours")
    root = int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device))
    if target is None:
        target = predicted(model, x, batch_size)
    seeds = None
    if common_noise and _takes_seeds(explainer):
        seeds = perturb.keyed_seeds(root, index, 1)
    # sample i's neighbours: one draw of its own stream, keyed by the root seed and its global index
    neighbours = perturb.SampleSeeds(perturb.keyed_seeds(root, index, 0))

    def explain(inputs: torch.Tensor, t: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        return explainer(model, inputs, t) if rows is None else explainer(model, inputs, t, seeds=rows)

    pending: list = []  # the maps' finiteness flags, read once after the loops (no host sync per chunk)
    if attributions is None:
        base = []
        for c0 in range(0, n, batch_size):
            c1 = min(n, c0 + batch_size)
            maps = explain(x[c0:c1], target[c0:c1], None if seeds is None else seeds[c0:c1])
            _finite_maps(maps, list(range(c0, c1)), "x", c1 - c0, pending=pending)
            base.append(maps)
        _raise_non_finite(pending)  # NaN maps of x stop the call before any neighbour is explained
        base = torch.cat(base)
    else:
        base = attributions.detach()
    d = x[0].numel()
    dist = torch.empty(n, s, dtype=torch.float64, device=x.device)
    for b0 in range(0, n, _BLOCK):
        b1 = min(n, b0 + _BLOCK)
        # u_i = bits_i·(r/d)/2^31 ∈ [−r/d, r/d]: uniform 32-bit integers made on x's device, keyed per sample (half a
        # hash per element; the noise needs no 53-bit float64 draw)
        u = neighbours[b0:b1].bits32((b1 - b0, s, *x.shape[1:]), x.device).to(x.dtype).mul_(r / d / 2.0**31)
        z = (x[b0:b1, None] + u).flatten(0, 1)
        t = target[b0:b1].repeat_interleave(s)
        zs = None if seeds is None else seeds[b0:b1].repeat_interleave(s)
        for c0 in range(0, z.shape[0], batch_size):
            c1 = min(z.shape[0], c0 + batch_size)
            maps = explain(z[c0:c1], t[c0:c1], None if zs is None else zs[c0:c1])
            _finite_maps(maps, sorted({b0 + i // s for i in range(c0, c1)}), "neighbours", c1 - c0, pending=pending)
            # each neighbour's own sample's map of x, read per chunk (not a copy per neighbour of the whole block)
            ref = base.index_select(0, torch.arange(c0, c1, device=base.device) // s + b0).double()
            if maps.shape[1:] != ref.shape[1:]:
                _raise_non_finite(pending)  # an earlier chunk's NaN maps are named first, as they happened first
                given = "attributions has" if attributions is not None else "its maps of x have"
                raise ValueError(f"explainer returned maps of shape {tuple(maps.shape[1:])} per neighbour but {given} "
                                 f"{tuple(ref.shape[1:])} per sample")
            sq = (maps.double() - ref).flatten(1).pow(2).sum(1)
            dist.view(-1)[b0 * s + c0: b0 * s + c1] = sq
    _raise_non_finite(pending)
    # the Monte-Carlo standard error of the mean over the i.i.d. neighbours: sd/√n_neighbours (ddof 1), from these
    # distances. With common noise a stochastic explainer's noise is one draw shared by a sample's neighbours, not
    # averaged over: the SE is the neighbours' sampling error given that draw.
    se = dist.std(dim=1, correction=1) / math.sqrt(s) if s > 1 else torch.full_like(dist[:, 0], torch.nan)
    return {"s_avg": dist.mean(1), "distances": dist, "seeds": seeds, "mc_se": se}


average_stability = plain(average_stability_details, "s_avg", """
    Per-sample S_avg ``(B,)`` of ``explainer`` (arguments as in :func:`average_stability_details`; attributions
    None: the explainer's maps of x); the paper reports the mean. Lower is better.
    """)


register(Metric("mu_fidelity", "μF", "reco_mege", True, mu_fidelity, details=mu_fidelity_details, score="mu_f",
                mc_se="mc_se", ideal=1.0, span=2.0,
                options=(Option("n_subsets", doc="μF: random subsets of 15 % of the features",
                                check=checks.at_least(3, "μF correlates over the subsets: undefined over one, ±1 "
                                                         "for every map over two")),),
                tip=("n_subsets", 50, "fewer random subsets"), mc_count=("n_subsets", 20, "random subsets of μF"),
                degenerate=({"n_subsets": 2}, {"subset_fraction": 1.0}),
                doc="correlation of removed attribution and output drop over random subsets"))
# S_avg maps x itself: under common random numbers x's map shares its neighbours' seed, which the given maps
# (drawn with other noise by a stochastic explainer) do not
register(Metric("s_avg", "S_avg", "reco_mege", False, average_stability, details=average_stability_details,
                score="s_avg", mc_se="mc_se", needs=("explainer",), maps=False, ideal=0.0,
                options=(Option("n_neighbours", 50, "S_avg: neighbours per sample", checks.positive),
                         Option("radius", doc="S_avg: the neighbours' radius", check=checks.positive_number)),
                tip=("n_neighbours", 10, "fewer neighbours"), mc_count=("n_neighbours", 5, "random neighbours of S_avg"),
                degenerate=({"n_neighbours": 0}, {"radius": 0.0}),  # one neighbour is an estimate (mc_se NaN)
                doc="how much the map changes for nearby inputs (average sensitivity)"))

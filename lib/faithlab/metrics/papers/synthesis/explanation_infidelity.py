"""Explanation infidelity (Yeh, Hsieh, Suggala, Inouye & Ravikumar, NeurIPS 2019, "On the (In)fidelity and
Sensitivity of Explanations"), computed by captum's own ``captum.metrics.infidelity`` on perturbations keyed to the
sample.

For a sample x, its attributions φ and a random perturbation I, the infidelity is the expected squared error
E_I[(Iᵀφ − (f(x) − f(x − I)))²]: how well the attributions, read as a linear model of the output change, predict the
output change of a perturbed input. With ``normalize=True`` φ is first scaled by the β that minimises that error
(β = E[Iᵀφ·Δf] / E[(Iᵀφ)²], the optimal scaling of Yeh et al.'s code and captum's ``normalize``), so the score does
not depend on the scale of the maps. Lower = more faithful (0: the maps predict every output change exactly).

The public names are gathered in :mod:`faithlab.metrics` (``fl.metrics.infidelity(...)``); the metric is declared
below for ``fl.evaluate`` (``metrics=["infidelity"]``) with paper slug ``synthesis``: it is one of the rival metrics
of the book's synthesis chapter, not one of the study's five papers.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch

from faithlab import _validate, perturb
from faithlab.metrics.registry import Metric, Option, checks, plain, register
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize
from faithlab.perturb.engine import NonFiniteOutput

__all__ = ["N_PERTURB_SAMPLES", "NOISE_STD", "OUTPUTS", "infidelity", "infidelity_details"]

N_PERTURB_SAMPLES = 50
"""Default number of Gaussian perturbations per sample. Our choice: captum's default is 10 and Yeh et al.'s code
draws 10,000 per image (MNIST). With ``normalize=True`` the score is a ratio of means fitted on the same draws, biased
by about a factor (n − 1)/n and noisy at n = 10; 50 keeps that bias near 2 % for n + 2 model inputs per sample (the
perturbed inputs, captum's clean pass, the shared clean pass). Each sample's Monte-Carlo standard error is returned
in ``mc_se``: raise n where it matters."""
NOISE_STD = 0.2
"""Default standard deviation σ of the perturbation I ~ N(0, σ²·Id), in the units of the model's input. The number is
the σ of the Gaussian in Yeh et al.'s official code (``infid_sen_utils.set_zero_infid``, ``np.random.normal(...) *
0.2``); the distribution is not that code's: there the perturbed image is a noisy zero baseline, x̃ = 0 + N(0, 0.2²)
clipped to MNIST's [0, 1] (I = x − x̃, the paper's "noisy baseline"), whereas here x̃ = x − I stays near x, unclipped
(the local Gaussian perturbation of captum's docstring example, whose σ = 0.003 is too small: as σ → 0 every smooth
model looks linear, the gradient becomes the optimal explanation and the metric stops telling maps apart)."""
OUTPUTS = ("logit", "prob")
"""What f reads of the model's output for the target class: its logit (the default: what gradient maps explain, what
Yeh et al.'s code reads as ``model(x)[:, label]``, and what makes a linear model's gradient exactly faithful) or its
softmax probability."""

_TINY = torch.finfo(torch.float64).tiny


def _broadcast(attributions: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The maps as float64 of x's shape: a map with one channel or without the channel dim gives every channel of
    its element the same score (Iᵀφ then sums the element's perturbation over its channels)."""
    a = attributions.detach().double()
    if a.shape == x.shape:
        return a
    channel = 1 if x.ndim == 4 else x.ndim - 1
    if a.ndim == x.ndim - 1:
        a = a.unsqueeze(channel)
    return a.expand(x.shape)


def _check_bool(value, name: str, x=None) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _jackknife_se(dots: torch.Tensor, drops: torch.Tensor, normalize: bool) -> torch.Tensor:
    """The jackknife standard error over the perturbations (dim 1) of each row's infidelity ``(B, n)`` → ``(B,)``
    float64 (Efron & Stein 1981): SE = √((n − 1)/n · Σ_k (θ_(k) − θ_(·))²), θ_(k) the estimate without perturbation
    k, all computed at once from the sums. Without normalisation θ is a mean and this is exactly sd/√n (ddof 1); with
    it θ = (Σb² − (Σab)²/Σa²)/n is a smooth function of three means (a = Iᵀφ, b = f(x) − f(x − I)), for which the
    jackknife is consistent and needs no distributional assumption. NaN below 2 perturbations (3 with normalisation:
    with 2, each leave-one-out fit is exact and the spread says nothing)."""
    rows, n = dots.shape
    if n < (3 if normalize else 2):
        return torch.full((rows,), math.nan, dtype=torch.float64, device=dots.device)
    a, b = dots.double(), drops.double()
    if normalize:
        saa, sab, sbb = (a * a).sum(1, keepdim=True), (a * b).sum(1, keepdim=True), (b * b).sum(1, keepdim=True)
        laa, lab, lbb = saa - a * a, sab - a * b, sbb - b * b
        # captum's convention where Σa² is 0 (safe_div): β = 0, the error is Σb²/n; a leave-one-out Σa² that cancels
        # to rounding counts as 0
        flat = laa <= 1e-12 * saa
        fit = torch.where(flat, 0.0, lab * lab / torch.where(flat, 1.0, laa))
        loo = (lbb - fit) / (n - 1)
    else:
        d = (a - b).pow(2)
        loo = (d.sum(1, keepdim=True) - d) / (n - 1)
    spread = (loo - loo.mean(1, keepdim=True)).pow(2).sum(1)
    return ((n - 1) / n * spread).sqrt()


def _captum_infidelity() -> Callable:
    with warnings.catch_warnings():  # captum imports tqdm.auto (see faithlab.explainers)
        warnings.filterwarnings("ignore", message="IProgress not found")
        from captum.metrics import infidelity
    return infidelity


def infidelity_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                       target: torch.Tensor | None = None, n_perturb_samples: int = N_PERTURB_SAMPLES,
                       noise_std: float = NOISE_STD, normalize: bool = True, output: str = "logit",
                       generator: torch.Generator | int = 0, sample_index: torch.Tensor | None = None,
                       batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """Per-sample infidelity (Yeh et al. 2019, eq. 1 with Gaussian perturbations) with its draws, through
    ``captum.metrics.infidelity``.

    For each sample, ``n_perturb_samples`` perturbations I ~ N(0, noise_std²·Id) of x's shape (default σ
    :data:`NOISE_STD`, n :data:`N_PERTURB_SAMPLES`; see them for the sources) give x̃ = x − I (captum's convention:
    the perturbation is subtracted); a = Iᵀφ, b = f(x) − f(x̃), f the ``output`` (:data:`OUTPUTS`: ``"logit"`` by
    default, or ``"prob"``) of ``target``; the infidelity is the mean over the perturbations of (a − b)² or, with
    ``normalize=True`` (default, the optimal scaling of Yeh et al.'s code), of (β·a − b)², β = Σab / Σa² (0 where
    Σa² = 0, as captum's safe division; captum sums it as (Σb² − (Σab)²/Σa²)/n, so a score within ~1e-15·E[b²] of
    0 is rounding). The perturbation I that enters a is x − x̃ as the model saw it (x̃ rounded to
    x's dtype), so that a linear model with its gradient as map scores 0 up to the model's own rounding. Maps of
    Gaussian perturbations suit local explanations (gradients, SmoothGrad, IG without the input multiplier); Yeh et
    al. perturb global ones (input × gradient) with binary masks instead.

    x: floating ``(B, C, H, W)`` images, ``(B, T, C)`` series or ``(B, L, D)`` embeddings, finite. attributions:
    x's shape, x's shape with one channel or without the channel dim (every channel of an element then gets the
    element's score); finite. target: ``(B,)`` int64 classes; None → the model's prediction ŷ on the clean x (one
    clean pass, shared inside ``fl.evaluate``'s :func:`faithlab.perturb.sharing` block). normalize: a bool;
    with it ``n_perturb_samples`` must be at least 2 (one draw is fitted exactly by β, so every map would score 0:
    refused with a ValueError, as every setting that makes a score the same for every map).

    Randomness is keyed to the sample: one root seed is drawn from ``generator`` (an int seed or a
    ``torch.Generator``) and perturbation j of sample i is drawn from its own stream, keyed by the root,
    ``sample_index[i]`` (the sample's global index; None: 0 … B − 1) and j; a slice of the data with its global
    indices gives the rows of the whole, and no draw depends on ``batch_size``. batch_size: at most this many
    perturbed inputs per forward call (None: the model's default size, ``"auto"``: timed, see
    :mod:`faithlab.perturb.autobatch`); results depend on it only through the model's float rounding.

    Returns ``score`` ``(B,)`` float64 (captum's value), ``beta`` ``(B,)`` the scaling applied (1 when
    ``normalize=False``), ``dots`` ``(B, n)`` a = Iᵀφ and ``drops`` ``(B, n)`` b = f(x) − f(x − I) (the draws the
    score is computed from), ``target`` ``(B,)`` and ``mc_se`` ``(B,)`` float64, the Monte-Carlo standard error of
    the score over the random perturbations, read from the same draws: the jackknife over the perturbations (sd/√n
    without normalisation; NaN below 2 perturbations, 3 with normalisation). A model returning NaN/inf on the clean
    or on a perturbed input raises a ValueError naming the samples. Lower is better.
    """
    _validate.model(model)
    _validate.one_device(x=x, attributions=attributions, target=target)
    _validate.tensor(x, "x", ndim=(2, 3, 4), floating=True)
    _validate.model_accepts(model, x, "model", "x")
    _validate.finite(x, "x")
    attributions = perturb.check_attributions(attributions, x)
    _validate.finite(attributions, "attributions")
    n = _validate.positive_int(n_perturb_samples, "n_perturb_samples")
    sigma = _validate.number(noise_std, "noise_std")
    if not 0 < sigma < math.inf:
        raise ValueError(f"noise_std must be a positive finite number, got {noise_std!r}")
    _check_bool(normalize, "normalize")
    if normalize and n < 2:  # one draw: β·a = b is solved exactly, so every map scores 0 (a perfect score)
        raise ValueError(f"n_perturb_samples={n} with normalize=True measures nothing: with one perturbation the "
                         "optimal β fits it exactly and every map scores 0; use at least 2 (the default is "
                         f"{N_PERTURB_SAMPLES}), or normalize=False")
    _validate.one_of(output, "output", OUTPUTS)
    batch_size = _validate.batch_size(batch_size, "batch_size")
    b = x.shape[0]
    seeds = perturb.sample_seeds(generator, sample_index, b, why="to draw the perturbations", device=x.device)
    # the clean read-out through the engine: it checks the target (dtype, range) and the clean logits (NaN/inf),
    # and inside fl.evaluate it is the clean pass every metric shares
    run = perturb.Removal(model, x, output=output, target=target, batch_size=batch_size)
    target = run.target
    run.clean()
    size = autobatch.resolve(batch_size, model, x, b * (n + 1))
    # perturbation j of sample i: stream j of sample i's n sub-streams (keyed by the root, the global index and j),
    # row i·n + j of the noise
    noise = _Noise(seeds.repeat_interleave(n).seeds, x.shape[1:], sigma, x.device)
    phi = _broadcast(attributions, x)
    per_chunk = max(1, size // n)  # samples per captum call: one call per chunk of at most `size` perturbed inputs
    score = torch.empty(b, dtype=torch.float64, device=x.device)
    dots = torch.empty(b, n, dtype=torch.float64, device=x.device)
    perturbed = torch.empty_like(dots)  # f(x − I)
    clean = torch.empty(b, dtype=torch.float64, device=x.device)  # f(x) as captum read it
    infidelity = _captum_infidelity()
    for b0 in range(0, b, per_chunk):
        b1 = min(b, b0 + per_chunk)
        score[b0:b1] = _chunk(infidelity, model, x[b0:b1], phi[b0:b1], target[b0:b1], noise, b0 * n, normalize,
                              output, min(n, size), dots[b0:b1], perturbed[b0:b1], clean[b0:b1])
    # one finiteness check after the loop (no host sync per chunk)
    bad = ~torch.isfinite(perturbed).all(dim=1) | ~torch.isfinite(clean) | ~torch.isfinite(score)
    if bool(bad.any()):
        samples = bad.nonzero().flatten().tolist()
        raise NonFiniteOutput(f"on the perturbed inputs of sample(s) {samples[:8]}{' …' if len(samples) > 8 else ''}"
                              "; no infidelity can be computed from them")
    drops = clean[:, None] - perturbed
    a2, ab = dots.pow(2).sum(1), (dots * drops).sum(1)
    beta = torch.where(a2 != 0, ab / torch.where(a2 != 0, a2, 1.0), 0.0) if normalize else torch.ones_like(score)
    return {"score": score, "beta": beta, "dots": dots, "drops": drops, "target": target,
            "mc_se": _jackknife_se(dots, drops, normalize)}


_BLOCK_ELEMENTS = 1 << 22
"""Noise elements drawn at once (32 MiB of float64): the draws come in blocks of rows fixed by the input's size, so
their number (one host-to-device key per draw) does not grow with the forward chunks, and memory stays bounded
however many perturbations a sample has."""


class _Noise:
    """σ·N(0, 1) perturbations, row r of ``streams`` (its own keyed stream) → ``(rows, *shape)`` float64, read in
    increasing contiguous ranges of rows (as captum asks for them) from blocks of :data:`_BLOCK_ELEMENTS`, each drawn
    once. The standard normals are ndtri of keyed uniforms (as :func:`faithlab.explainers.core.normal`):
    torch.randn's CPU kernel fills blocks of 16, so its draws would depend on how many are drawn at once."""

    def __init__(self, streams: torch.Tensor, shape: tuple[int, ...], sigma: float, device: torch.device):
        self.streams, self.shape, self.sigma, self.device = streams, tuple(shape), sigma, device
        self.rows = max(1, _BLOCK_ELEMENTS // max(1, math.prod(self.shape)))
        self.index, self.block = -1, None

    def _draw(self, index: int) -> torch.Tensor:
        if index != self.index:
            r0, r1 = index * self.rows, min(self.streams.shape[0], (index + 1) * self.rows)
            u = perturb.SampleSeeds(self.streams[r0:r1]).uniform((r1 - r0, *self.shape), self.device)
            self.index, self.block = index, torch.special.ndtri(u.clamp_min_(_TINY)).mul_(self.sigma)
        return self.block

    def __call__(self, r0: int, r1: int) -> torch.Tensor:
        pieces = []
        while r0 < r1:
            index = r0 // self.rows
            start = index * self.rows
            stop = min(r1, start + self.rows)
            pieces.append(self._draw(index)[r0 - start:stop - start])
            r0 = stop
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


def _chunk(infidelity: Callable, model: Callable, x: torch.Tensor, phi: torch.Tensor, target: torch.Tensor,
           noise: _Noise, first_row: int, normalize: bool, output: str, per_call: int, dots: torch.Tensor,
           perturbed: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
    """captum's infidelity of one chunk of m samples ``(m,)``, filling its ``dots`` a = Iᵀφ, ``perturbed``
    f(x − I) ``(m, n)`` and ``clean`` f(x) ``(m,)``.

    Why captum's own randomness is not used: captum calls ``perturb_func`` on the chunk's inputs repeated
    (``repeat_interleave``) k times, without their identity, and draws nothing itself; a perturb_func drawing from a
    global generator would give sample i other noise in another chunk, batch size or split of the data. Keyed noise
    needs each row's global index and perturbation number, which this closure knows: captum's calls come in order
    (perturbations 0..k−1 of every sample of the chunk, then k..2k−1, …), and each returns exactly the keyed
    perturbations of those rows. ``max_examples_per_batch`` = m·per_call makes captum run m·per_call perturbed
    inputs per forward call: all n perturbations of the chunk in one call when n ≤ batch size, else per_call = batch
    size perturbations of the one sample per call.

    captum is given no target: ``forward`` returns the target's read-out itself (captum's advice), so captum's
    target selection, which reads a one-element target with ``.item()``, makes no host sync per call."""
    m, n = dots.shape
    state = {"done": 0, "perturbed": None}

    def perturb_func(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k = inputs.shape[0] // m
        j0 = state["done"]
        if m == 1:
            drawn = noise(first_row + j0, first_row + j0 + k)
        else:  # every perturbation of the chunk's samples (captum asks for all n at once when m > 1)
            drawn = noise(first_row, first_row + m * n)
        wide = inputs.double()
        moved = (wide - drawn).to(x.dtype)
        exact = wide - moved.double()  # I as the model sees it: x − x̃ after x̃'s rounding to x's dtype
        dots[:, j0:j0 + k] = (exact.view(m, k, -1) * phi.reshape(m, 1, -1)).sum(-1)
        state["perturbed"] = moved
        return exact, moved

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        logits = model(inputs)
        if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[0] != inputs.shape[0]:
            got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise ValueError(f"model must return logits (N, n_classes) for N inputs; {inputs.shape[0]} inputs gave "
                             f"{got}")
        out = logits.double()
        out = out.softmax(dim=1) if output == "prob" else out
        if inputs is state["perturbed"]:
            k = inputs.shape[0] // m
            j0 = state["done"]
            read = out.gather(1, target.repeat_interleave(k)[:, None]).squeeze(1)
            perturbed[:, j0:j0 + k] = read.view(m, k)
            state["done"] = j0 + k
        else:  # the clean chunk, which captum reads once per call
            read = out.gather(1, target[:, None]).squeeze(1)
            clean.copy_(read)
        return read

    with torch.no_grad():
        score = infidelity(forward, perturb_func, x, phi, n_perturb_samples=n, max_examples_per_batch=m * per_call,
                           normalize=normalize)
    if state["done"] != n:
        raise RuntimeError(f"captum's infidelity drew {state['done']} perturbations per sample, not {n}")
    return score.reshape(m).double()


infidelity = plain(infidelity_details, "score", """
    Per-sample infidelity ``(B,)`` (Yeh et al., NeurIPS 2019, through captum): the mean squared error between Iᵀφ
    and f(x) − f(x − I) over Gaussian perturbations I, φ scaled by its optimal β (``normalize=True``). Arguments as
    in :func:`infidelity_details`, which also returns β, the draws and the Monte-Carlo standard error. Lower is
    better.
    """)


def _check_count(options: dict, x: torch.Tensor, name) -> None:
    """One normalised perturbation fits exactly (every map scores 0): refused before any work, naming the option."""
    if options["normalize"] and options["n_perturb_samples"] < 2:
        raise ValueError(f"{name('n_perturb_samples')}={options['n_perturb_samples']} with normalize=True measures "
                         "nothing: with one perturbation the optimal β fits it exactly and every map scores 0; use "
                         "at least 2")


register(Metric("infidelity", "INFD", "synthesis", False, infidelity, details=infidelity_details, score="score",
                mc_se="mc_se", ideal=0.0,
                options=(Option("n_perturb_samples", doc="infidelity: Gaussian perturbations per sample",
                                check=checks.positive),
                         Option("noise_std", doc="infidelity: the perturbations' standard deviation",
                                check=checks.positive_number),
                         Option("normalize", doc="infidelity: scale the maps by their optimal β first",
                                check=_check_bool)),
                tip=("n_perturb_samples", 10, "fewer perturbations"),
                mc_count=("n_perturb_samples", 10, "Gaussian perturbations of infidelity"), check=_check_count,
                degenerate=({"n_perturb_samples": 1},),  # normalised (the default): one draw fits exactly
                doc="squared error of Iᵀφ against the output drop f(x) − f(x − I), I Gaussian"))

"""Few-class Fidelity (Marchadour, Soto Vega, Vermet, Hatt; spec §2): MIF/LIF curves towards an optimised perturbed
image, the Fid score of eq. (1) and the candidate search of eqs. (2)–(5). The localisation protocols of §2.4 (box
IoU, Dice) live in :mod:`faithlab.metrics.papers.fewclass.localisation`.

For each image the search builds candidates (blur operations × σ × 3 adjustments, spec §2.3 and §6.9), scores
each by its uncertainty U and its dissimilarity S, and keeps argmin P = U + (10/Δ)·S among those with U < Δ (the
lowest U when none passes). The paper's grid has 804 candidates (``grid="paper"``, :func:`candidate_grid`); the
default is the 144 of :data:`QUICK_GRID` (its 8 distinct operations, σ on a doubling ladder up to each operation's
largest), a sixth of the model inputs: at 224 px on a CPU, 4 images × 804 candidates take minutes of forward passes
alone. :func:`selection_cost` counts a search's model inputs before it runs, :func:`select_perturbation` shows them on
a progress bar and remembers its last results (:func:`clear_cache`), so that ``fl.evaluate`` after a search of the
same images reuses it. MIF replaces the most important p % of pixels (by Σ_c |map|) with the
selected image's pixels, LIF the least important; the curve is the probability of the originally predicted class
at p = 0, 1, …, 100 %. A faithful map keeps LIF near 1 (area A_LIF → 1) and drops MIF to the uncertain 1/N
(A_MIF → 1/N): Fid = 1 − (|1 − A_LIF| + |1/N − A_MIF|) / (1 + (N − 1)/N) ∈ [0, 1], higher is better.

Models may return N ≥ 2 logits (softmax) or a single logit (binary, sigmoid: N = 2, class 1 = logit > 0).

Pixel space: the operations of §2.3 (G(x)/μ, (1 − μ), x², x³, range and histogram matching) assume pixel
intensities, e.g. in [0, 1]. When x holds normalised model inputs (torchvision's ``Normalize``: x = (pixels − mean) /
std), pass ``normalisation=(mean, std)`` to :func:`select_perturbation`, :func:`candidates` and
:func:`candidate_images`: the candidates and their similarity S are then computed on pixels = x·std + mean and
normalised back, (c − mean)/std, before the model sees them and in what is returned. Without it (the default) x is
taken as pixels.

One concept: Few-class Fidelity's score end to end, the perturbed image it needs (the candidate search of eqs.
(2)–(5), its cost and its memo) and the MIF/LIF curves and Fid of eq. (1) that read it, one paper's metric family in
one module as the house keeps every metric family.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import numbers
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics.registry import Context, Metric, Option, Shared, checks, plain, register
from faithlab.metrics.statistics import trapezoid_auc
from faithlab.perturb import autobatch, references
from faithlab.perturb.autobatch import BatchSize

__all__ = ["OPERATIONS", "ADJUSTMENTS", "FRACTIONS", "QUICK_OPERATIONS", "QUICK_SIGMAS", "QUICK_GRID",
           "candidate_grid", "candidates", "candidate_images", "match_histograms", "match_range",
           "class_probabilities", "predicted_class", "uncertainty", "threshold", "similarity", "perturbation_score",
           "select_perturbation", "selection_cost", "clear_cache", "fid", "fewclass_fid", "fewclass_fid_details"]

OPERATIONS: dict[str, tuple[str, int]] = {
    "V1": ("G(x)", 12), "V2": ("G(x)·x", 80), "V3": ("G(x)·μ", 12), "V4": ("G(x)/μ", 12),
    "V5": ("G(x)·(1−μ)", 12), "V14": ("G(x)·x²", 80), "V8": ("G(x·x)", 12), "V9": ("G(x·μ)", 12),
    "V10": ("G(x/μ)", 12), "V11": ("G(x·(1−μ))", 12), "V15": ("G(x³)", 12)}
"""The 11 label-free operations of spec §2.3 / §6.9: id → (formula, largest σ; σ = 1, 2, …, largest). G is the
Gaussian blur, μ the image mean. V2 and V14 (blur, then multiply by the image) get σ up to 80, the rest 12:
2·80 + 9·12 = 268 blurs × 3 adjustments = 804 candidates. Because μ is a scalar and the blur is linear, V9 ≡ V3,
V10 ≡ V4 and V11 ≡ V5 up to rounding: the grid holds 8 distinct operations, as the paper's formulas imply."""
ADJUSTMENTS = ("o", "s", "m")
"""o: the operation's output as is; s: min–max rescaled to the original image's [min, max]; m: histogram-matched to
the original image, channel by channel (``skimage.exposure.match_histograms``)."""
FRACTIONS = tuple(i / 100 for i in range(101))
"""p = 0, 1, …, 100 % (spec §2.1)."""
_BASE = {"V8": 2, "V15": 3}  # blurred power of x; every other operation blurs x itself


def candidate_grid(operations: Sequence[str] | None = None, *,
                   sigmas: Sequence[int] | None = None) -> list[tuple[str, int, str]]:
    """The candidate list as (operation, σ, adjustment), operation-major, adjustment fastest → the paper's 804
    entries for the default 11 operations and every σ (``grid="paper"``). operations: a subset of
    :data:`OPERATIONS` (in that order of the dict); sigmas: the σ values to keep (None: 1, 2, …, each operation's
    largest), each operation taking those up to its largest σ."""
    ops = list(OPERATIONS) if operations is None else list(operations)
    if not ops:
        raise ValueError("operations must name at least one operation")
    for op in ops:
        _validate.one_of(op, "operations", tuple(OPERATIONS))
    if len(set(ops)) != len(ops):
        raise ValueError(f"operations must not repeat, got {ops}")
    keep = None
    if sigmas is not None:
        if isinstance(sigmas, (str, bytes)) or not isinstance(sigmas, Sequence) or not sigmas:
            raise TypeError(f"sigmas must be a non-empty sequence of positive ints, got {sigmas!r:.80}")
        keep = {_validate.positive_int(v, "sigmas") for v in sigmas}
    return [(op, s, adj) for op in ops for s in range(1, OPERATIONS[op][1] + 1) if keep is None or s in keep
            for adj in ADJUSTMENTS]


QUICK_OPERATIONS = ("V1", "V2", "V3", "V4", "V5", "V14", "V8", "V15")
"""The 8 distinct operations of :data:`OPERATIONS`: V9, V10 and V11 equal V3, V4 and V5 up to rounding (μ is a
scalar and the blur linear), so the quick grid leaves them out."""
QUICK_SIGMAS = (1, 2, 4, 8, 12, 16, 32, 64, 80)
"""The quick grid's σ: a doubling ladder that keeps each operation's largest σ (12, or 80 for V2 and V14)."""
QUICK_GRID = tuple(candidate_grid(QUICK_OPERATIONS, sigmas=QUICK_SIGMAS))
"""The default candidate grid of :func:`select_perturbation`: 6 operations × 5 σ (1, 2, 4, 8, 12) + V2 and V14 × 9
σ (1, 2, 4, …, 64, 80), × 3 adjustments = 144 candidates, the paper's weakest to strongest blur of each distinct
operation, a sixth of the paper's 804 (``grid="paper"``) in model inputs and candidate builds."""


Grid = Sequence[tuple[str, int, str]] | str | None
"""A candidate grid argument: None or ``"quick"`` (:data:`QUICK_GRID`, 144), ``"paper"`` (the paper's 804) or
(operation, σ, adjustment) entries (:func:`candidate_grid`)."""


def _check_grid(grid: Grid) -> list[tuple[str, int, str]]:
    """``grid`` → the list of (operation, σ, adjustment): None or ``"quick"`` :data:`QUICK_GRID`, ``"paper"`` the
    paper's 804 (:func:`candidate_grid`), or the entries given, checked."""
    if isinstance(grid, str):
        _validate.one_of(grid, "grid", ("quick", "paper"))
    grid = (list(QUICK_GRID) if grid is None or grid == "quick" else candidate_grid() if grid == "paper"
            else list(grid))
    if not grid:
        raise ValueError("grid must hold at least one (operation, sigma, adjustment)")
    for entry in grid:
        if (not isinstance(entry, tuple) or len(entry) != 3 or entry[0] not in OPERATIONS
                or isinstance(entry[1], bool) or not isinstance(entry[1], (int, float)) or not entry[1] > 0
                or not math.isfinite(entry[1]) or entry[2] not in ADJUSTMENTS):
            raise ValueError(f"grid entries must be (operation in OPERATIONS, finite sigma > 0, adjustment in "
                             f"{ADJUSTMENTS}), got {entry!r}")
    return grid


def match_histograms(source: torch.Tensor, template: torch.Tensor) -> torch.Tensor:
    """Histogram matching of every row of ``source`` ``(..., R, n)`` to the row of ``template`` ``(R, n)`` →
    like ``source``; equals ``skimage.exposure.match_histograms`` on each row (float images).

    Each source value takes the template value at its quantile (the fraction of the source ≤ it), linearly
    interpolated between the template's distinct values' quantiles (np.interp). Written here because
    scikit-image matches one image at a time on the CPU; the quantiles are integer counts, so this is exact.
    """
    n = source.shape[-1]
    if template.shape[-1] != n or template.shape != source.shape[-template.ndim:]:
        raise ValueError(f"template of shape {tuple(template.shape)} does not match the rows of source "
                         f"{tuple(source.shape)}")
    src_sorted, src_order = source.sort(dim=-1)
    # count of source values ≤ each sorted value (ties share their last position, np.unique's cumulative counts):
    # the next position that ends a run of equal values, by a reversed running minimum (O(n) after the sort)
    is_last = torch.ones_like(src_sorted, dtype=torch.bool)
    is_last[..., :-1] = src_sorted[..., 1:] != src_sorted[..., :-1]
    pos = torch.arange(n, device=source.device).expand_as(src_sorted)
    k_src = torch.where(is_last, pos, n).flip(-1).cummin(dim=-1).values.flip(-1) + 1
    # the matched value depends only on that count c ∈ 1..n: one lookup table per template row,
    # np.interp(c, knots, values) with knots = the template's own counts (ties share a knot and its value)
    tmpl_sorted = template.sort(dim=-1).values.contiguous()
    k_t = torch.searchsorted(tmpl_sorted, tmpl_sorted, right=True)  # (R, n), non-decreasing, ends at n
    c = torch.arange(n + 1, device=source.device).expand(*k_t.shape[:-1], n + 1).contiguous()
    j = torch.searchsorted(k_t, c, right=True) - 1  # last knot ≤ c
    below = j < 0
    j = j.clamp(0, n - 1)
    j1 = (j + 1).clamp(max=n - 1)
    x0, x1 = k_t.gather(-1, j), k_t.gather(-1, j1)
    y0, y1 = tmpl_sorted.gather(-1, j).double(), tmpl_sorted.gather(-1, j1).double()
    slope = (y1 - y0) / (x1 - x0).clamp(min=1).double()
    table = torch.where(below, tmpl_sorted[..., :1].double(), slope * (c - x0).double() + y0).to(source.dtype)
    y = table.expand(*source.shape[:-1], n + 1).gather(-1, k_src)
    return torch.empty_like(source).scatter_(-1, src_order, y)


def match_range(source: torch.Tensor, template: torch.Tensor) -> torch.Tensor:
    """Min–max rescaling of every ``(..., C, H, W)`` source image to the [min, max] of its template ``(C, H, W)``
    (over all channels, as the thesis code does). A constant source has no range to map and is returned as is."""
    dims = tuple(range(-3, 0))
    lo, hi = source.amin(dim=dims, keepdim=True), source.amax(dim=dims, keepdim=True)
    t_lo, t_hi = template.amin(dim=dims, keepdim=True), template.amax(dim=dims, keepdim=True)
    span = hi - lo
    scaled = (source - lo) / torch.where(span > 0, span, torch.ones_like(span)) * (t_hi - t_lo) + t_lo
    return torch.where(span > 0, scaled, source)


_FACTOR = {"V2": ("one", 1), "V14": ("one", 2), "V3": ("mu", 0), "V9": ("mu", 0), "V4": ("inv_mu", 0),
           "V10": ("inv_mu", 0), "V5": ("one_minus_mu", 0), "V11": ("one_minus_mu", 0)}
"""How each operation scales its blur: by a function of the image mean μ and by x to a power (V1, V8, V15: 1).
G(x·μ) = μ·G(x) etc. because the blur is linear and μ a scalar."""
_SCALARS = ("one", "mu", "inv_mu", "one_minus_mu")


class _Layout:
    """A grid's indices and blur matrices on the device of the images x, copied there once per search, before its
    loop (a tensor made from a host list, or a host matrix moved to the device, is a blocking host-to-device copy, a
    sync on a GPU: one per chunk of candidates would stall the device once per forward chunk). ``keys``: the grid's
    distinct (power of x, σ) blurs, sorted; on the device, ``blur`` each candidate's key, ``scale`` its scalar
    (:data:`_SCALARS`), ``power`` its power of x and ``on[adjustment]`` the grid positions of the "s" and "m"
    candidates (``at[adjustment]`` on the host), and :meth:`operator` the blur matrix of each σ at x's height and
    width (:func:`faithlab.perturb.gaussian_filter`'s, ``truncate`` 4): one float64 L × L matrix per σ of the grid
    and distinct side L, held for the search (31 MiB for the paper's 80 σ at 224 × 224)."""

    def __init__(self, grid: list[tuple[str, int, str]], x: torch.Tensor):
        blur = [(_BASE.get(op, 1), float(s)) for op, s, _ in grid]
        self.keys = sorted(set(blur))
        rank = {key: i for i, key in enumerate(self.keys)}
        kind = [_FACTOR.get(op, ("one", 0)) for op, _, _ in grid]
        self.scaled = [k != "one" for k, _ in kind]
        self.powered = [q > 0 for _, q in kind]
        self.at = {a: [i for i, (_, _, b) in enumerate(grid) if b == a] for a in ("s", "m")}
        flat = [*(rank[key] for key in blur), *(_SCALARS.index(k) for k, _ in kind), *(q for _, q in kind),
                *self.at["s"], *self.at["m"]]
        values = torch.tensor(flat, dtype=torch.int64, device=x.device)
        v, n_s = len(grid), len(self.at["s"])
        self.blur, self.scale, self.power = values[:v], values[v:2 * v], values[2 * v:3 * v]
        self.on = {"s": values[3 * v:3 * v + n_s], "m": values[3 * v + n_s:]}
        pairs = [(n, s) for n in sorted({x.shape[2], x.shape[3]}) for s in sorted({s for _, s in self.keys})]
        matrices = torch.cat([references._reflect_operator(n, s, 4.0).flatten() for n, s in pairs]).to(x.device)
        sizes = [n * n for n, _ in pairs]
        self.operators = {pair: m.view(pair[0], pair[0]) for pair, m in zip(pairs, matrices.split(sizes))}

    def operator(self, length: int, sigma: float) -> torch.Tensor:
        """The ``(L, L)`` blur matrix of length L (x's height or width) and σ, on the device."""
        return self.operators[(length, sigma)]

    def positions(self, adjustment: str, v0: int, v1: int) -> torch.Tensor | None:
        """The positions among candidates v0..v1-1 of those with ``adjustment`` ("s" or "m"), on the device (None:
        there are none)."""
        at = self.at[adjustment]
        lo, hi = bisect.bisect_left(at, v0), bisect.bisect_left(at, v1)
        return None if lo == hi else self.on[adjustment][lo:hi] - v0


def _build(x: torch.Tensor, grid: list[tuple[str, int, str]], b0: int, b1: int, v0: int, v1: int,
           layout: _Layout | None = None) -> torch.Tensor:
    """Candidates v0..v1-1 of images b0..b1-1 → ``(b1-b0, v1-v0, C, H, W)``: each needed blur computed once, the
    operations and adjustments applied to all candidates of a kind at once. layout: the grid's :class:`_Layout` for
    x (None: made here); every index and blur matrix is read from it, so a chunk copies nothing from the host."""
    layout = _Layout(grid, x) if layout is None else layout
    xb = x[b0:b1]
    keys = sorted({(_BASE.get(op, 1), float(s)) for op, s, _ in grid[v0:v1]})  # the blurs these candidates read
    blurs = []
    for power in sorted({p for p, _ in keys}):  # perturb.gaussian_filter with the layout's matrices
        blurs.append(references._blurs(xb if power == 1 else xb ** power, [s for p, s in keys if p == power],
                                       layout.operator))  # (b, S, C, H, W)
    g = blurs[0] if len(blurs) == 1 else torch.cat(blurs, dim=1)
    # each candidate's blur among g's, the rank of its key among the keys present, counted on the device
    blur = layout.blur[v0:v1]
    present = torch.zeros(len(layout.keys), dtype=torch.int64, device=x.device).index_fill_(0, blur, 1)
    cand = g.index_select(1, present.cumsum(0).sub_(1).index_select(0, blur))  # (b, v, C, H, W)
    mu = xb.mean(dim=(1, 2, 3))  # (b,)
    if any(layout.scaled[v0:v1]):  # decided on the host (no device sync per chunk); a scale of 1 is exact
        scalars = torch.stack([torch.ones_like(mu), mu, 1 / mu, 1 - mu], dim=1)  # (b, 4)
        cand = cand * scalars.index_select(1, layout.scale[v0:v1])[:, :, None, None, None]
    if any(layout.powered[v0:v1]):
        xpow = torch.stack([torch.ones_like(xb), xb, xb * xb], dim=1).index_select(1, layout.power[v0:v1])
        cand = cand * xpow  # (b, v, C, H, W)
    idx = layout.positions("s", v0, v1)
    if idx is not None:
        cand = cand.index_copy(1, idx, match_range(cand.index_select(1, idx), xb[:, None]))
    idx = layout.positions("m", v0, v1)
    if idx is not None:
        rows = cand.index_select(1, idx).flatten(-2)  # (b, m, C, H·W)
        matched = match_histograms(rows.transpose(0, 1), xb.flatten(-2)).transpose(0, 1)
        cand = cand.index_copy(1, idx, matched.reshape(rows.shape[0], rows.shape[1], *xb.shape[1:]))
    return cand


def _check_normalisation(normalisation, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``normalisation`` (mean, std) → two ``(C, 1, 1)`` (or ``(1, 1, 1)``) tensors in x's dtype on x's device, or
    None; raises naming ``normalisation`` unless each part is a finite number or one per channel of x, std > 0."""
    if normalisation is None:
        return None
    if (isinstance(normalisation, (str, bytes, torch.Tensor)) or not isinstance(normalisation, Sequence)
            or len(normalisation) != 2):
        raise TypeError(f"normalisation must be a pair (mean, std) of numbers or per-channel sequences, or None, got "
                        f"{normalisation!r:.120}")
    channels = x.shape[1]
    parts = []
    for value, part in zip(normalisation, ("mean", "std"), strict=True):
        what = f"normalisation's {part}"
        if hasattr(value, "tolist") and not isinstance(value, numbers.Real):  # tensors, numpy arrays
            value = value.tolist()
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not values or len(values) not in (1, channels):
            raise ValueError(f"{what} must hold one value or one per channel of x ({channels}), got {len(values)}: "
                             f"{values!r:.120}")
        checked = [_validate.number(v, what) for v in values]
        if not all(math.isfinite(v) for v in checked):
            raise ValueError(f"{what} must be finite, got {checked}")
        if part == "std" and not all(v > 0 for v in checked):
            raise ValueError(f"{what} must be > 0, got {checked}")
        parts.append(torch.tensor(checked, dtype=x.dtype, device=x.device).view(-1, 1, 1))
    return parts[0], parts[1]


def _to_pixels(x: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Model inputs → pixels: x·std + mean (x itself without a normalisation)."""
    return x if norm is None else x * norm[1] + norm[0]


def _to_inputs(pixels: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Pixels ``(..., C, H, W)`` → model inputs: (pixels − mean) / std (the pixels without a normalisation)."""
    return pixels if norm is None else (pixels - norm[0]) / norm[1]


def candidate_images(x: torch.Tensor, index: torch.Tensor, *,
                     grid: Grid = None,
                     normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None
                     ) -> torch.Tensor:
    """Candidate ``index[b]`` of ``grid`` for every image b → ``(B, C, H, W)`` in x's space (e.g. the winners of
    :func:`select_perturbation`, or chosen candidates to show), built once per distinct index for all the images
    that use it. grid: the grid the indices point into, as in :func:`select_perturbation` (default
    :data:`QUICK_GRID`, the selection's default; ``"paper"``: the 804). normalisation: ``(mean, std)`` when x holds
    normalised inputs (see :func:`candidates`)."""
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.finite(x, "x")
    grid = _check_grid(grid)
    norm = _check_normalisation(normalisation, x)
    index = _validate.tensor(index, "index", ndim=1)
    if index.shape[0] != x.shape[0] or index.is_floating_point() or bool(((index < 0) | (index >= len(grid))).any()):
        raise ValueError(f"index must hold {x.shape[0]} integers in [0, {len(grid)}), got {index.tolist()[:8]}")
    pixels = _to_pixels(x, norm)
    out = torch.empty_like(x)
    layout = _Layout(grid, x)
    for v in torch.unique(index).tolist():
        rows = (index == v).nonzero().flatten()
        out[rows] = _to_inputs(_build(pixels[rows], grid, 0, rows.numel(), v, v + 1, layout)[:, 0], norm)
    return out


def candidates(x: torch.Tensor, *, grid: Grid = None,
               batch_size: BatchSize = None,
               normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None
               ) -> Iterator[tuple[int, int, int, int, torch.Tensor]]:
    """The perturbed candidates of every image (spec §2.3), in chunks of at most ``batch_size`` images in all:
    yields ``(b0, b1, v0, v1, tensor (b1-b0, v1-v0, C, H, W))`` in row-major (image, candidate) order, in x's
    space.

    x: ``(B, C, H, W)`` floating-point images. normalisation: None (default) when x holds pixel values (the
    operations assume intensities, e.g. in [0, 1]); ``(mean, std)``, per channel or one scalar each, when x holds
    normalised model inputs x = (pixels − mean) / std (torchvision's ``Normalize``, a dataset's ``info['mean']``,
    ``info['std']``): the candidates are built from pixels = x·std + mean (operations, μ, range and histogram
    matching) and returned normalised, (c − mean)/std. grid: as in :func:`select_perturbation` (default
    :data:`QUICK_GRID`; ``"paper"``: the paper's 804). Memory is bounded by ``batch_size`` candidates (plus the
    blurs they need), on x's device; ``"auto"`` (no model here to time): as many candidates as
    :data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` elements hold. The candidates do not depend on it."""
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.finite(x, "x")
    grid = _check_grid(grid)
    norm = _check_normalisation(normalisation, x)
    batch_size = autobatch.map_chunk(batch_size, math.prod(x.shape[1:]))
    return _candidates(_to_pixels(x, norm), grid, batch_size, norm)


def _candidates(pixels: torch.Tensor, grid: list[tuple[str, int, str]], batch_size: int,
                norm: tuple[torch.Tensor, torch.Tensor] | None) -> Iterator[tuple[int, int, int, int, torch.Tensor]]:
    layout = _Layout(grid, pixels)
    for pieces in perturb.grid_chunks(pixels.shape[0], len(grid), batch_size=batch_size):
        for b0, b1, v0, v1 in pieces:
            yield b0, b1, v0, v1, _to_inputs(_build(pixels, grid, b0, b1, v0, v1, layout), norm)


def class_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Class probabilities ``(M, N)``: softmax of N ≥ 2 logits, or ``[1 − σ(z), σ(z)]`` for a single logit z."""
    if logits.shape[1] == 1:
        p = torch.sigmoid(logits[:, 0])
        return torch.stack([1 - p, p], dim=1)
    return logits.softmax(dim=1)


def _class_probability(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return class_probabilities(logits).gather(1, target[:, None]).squeeze(1)


def predicted_class(model: Callable, x: torch.Tensor, *, batch_size: BatchSize = None) -> torch.Tensor:
    """The model's predicted class ``(B,)`` int64: argmax of N ≥ 2 logits, ``logit > 0`` for a single logit.
    ``batch_size`` inputs per forward call: an int or ``"auto"`` (resolved by :func:`faithlab.perturb.logits`, see
    :mod:`faithlab.perturb.autobatch`); the result does not depend on it."""
    _validate.model(model, "model")
    batch_size = _validate.batch_size(batch_size, "batch_size")
    logits = perturb.logits(model, x, batch_size=batch_size, what="clean inputs (read for the predicted class)")
    return class_probabilities(logits).argmax(dim=1)


def _n_classes(logits_width: int) -> int:
    return 2 if logits_width == 1 else logits_width


def uncertainty(probabilities: torch.Tensor) -> torch.Tensor:
    """U of eq. (2): mean over the N classes of |1/N − f_c(x')| → ``probabilities.shape[:-1]``; 0 = maximally
    uncertain. probabilities: ``(..., N)`` (see :func:`class_probabilities`)."""
    n = probabilities.shape[-1]
    if n < 2:
        raise ValueError(f"probabilities must cover at least 2 classes, got {n}")
    return (probabilities - 1.0 / n).abs().mean(dim=-1)


def threshold(n_classes: int) -> float:
    """Δ of eq. (3): min(0.1, N/40) — 0.05 for N = 2, 0.075 for N = 3, 0.1 for N ≥ 4."""
    n = _validate.positive_int(n_classes, "n_classes")
    if n < 2:
        raise ValueError(f"n_classes must be at least 2, got {n}")
    return min(0.1, n / 40)


def similarity(x: torch.Tensor, perturbed: torch.Tensor) -> torch.Tensor:
    """S of eq. (4): MSE(x, x') / (max x − min x)² per image; x ``(B, C, H, W)``, perturbed ``(B, ..., C, H, W)`` →
    ``perturbed.shape[:-3]``. Lower = more similar. A constant x (no range) gives inf unless x' equals it."""
    extra = perturbed.ndim - x.ndim
    xv = x.reshape(x.shape[0], *([1] * extra), *x.shape[1:])
    span = (x.amax(dim=(1, 2, 3)) - x.amin(dim=(1, 2, 3))).reshape(x.shape[0], *([1] * extra))
    mse = (perturbed - xv).pow(2).mean(dim=(-3, -2, -1))
    return torch.where(mse == 0, torch.zeros_like(mse), mse / span.pow(2))


def perturbation_score(u: torch.Tensor, s: torch.Tensor, n_classes: int) -> torch.Tensor:
    """P of eq. (5): U + (10/Δ)·S (U + 200·S for N = 2, U + 133.3·S for N = 3); lower is better."""
    return u + (10 / threshold(n_classes)) * s


def selection_cost(x: torch.Tensor | Sequence[int], *, grid: Grid = None) -> int:
    """The number of model inputs :func:`select_perturbation` evaluates for images x (a tensor ``(B, C, H, W)`` or
    its shape) with this ``grid``, exactly: B × the grid's candidates, plus one input that reads the number of
    classes, whatever the batch size (``"auto"`` included). A call that finds its result in the cache evaluates
    none. Ask before a long call: at 224 px on a 2-core CPU a ResNet-18 input costs ~20 ms and building a
    candidate ~10–20 ms more."""
    if isinstance(x, torch.Tensor):
        _validate.tensor(x, "x", ndim=4)
        b = x.shape[0]
    elif (isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != 4
          or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in x)):
        raise TypeError(f"x must be images (B, C, H, W) or their shape, four positive ints, got {x!r:.80}")
    else:
        b = x[0]
    return b * len(_check_grid(grid)) + 1


def select_perturbation(model: Callable, x: torch.Tensor, *, grid: Grid = None, batch_size: BatchSize = None,
                        normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None,
                        progress: bool | None = None, cache: bool = True) -> dict:
    """Few-class Fidelity's perturbed image per input (spec §2.3): argmin P among the candidates with U < Δ, the
    lowest U when none passes.

    x: ``(B, C, H, W)`` the model's inputs; the model returns N ≥ 2 logits or one (binary). grid: the candidates,
    default (None, ``"quick"``) :data:`QUICK_GRID`, 144 per image; ``"paper"``: the paper's 804 (spec §2.3, 11
    operations, σ = 1…12 or 1…80, 3 adjustments); or (operation, σ, adjustment) entries of :func:`candidate_grid`.
    normalisation: None
    (default) when x holds pixel values (the operations assume intensities, e.g. in [0, 1]); ``(mean, std)``, per
    channel or one scalar each, when x holds normalised inputs x = (pixels − mean) / std (torchvision's
    ``Normalize``; a dataset's ``(info['mean'], info['std'])``): the candidates are built from the pixels
    x·std + mean, S of eq. (4) is computed between pixels (MSE over the pixel range squared), and each candidate is
    normalised back, (c − mean)/std, before the model sees it and in ``image``, so ``image`` lives in x's space
    (:func:`fewclass_fid` takes it with x as is). Candidates are generated and scored chunk by chunk (≤
    ``batch_size`` per forward call) on x's device, in x's dtype. batch_size: an int or ``"auto"``, resolved by
    :func:`faithlab.perturb.evaluate_inputs` (:mod:`faithlab.perturb.autobatch`: the search's own forward calls are
    timed, so the count below holds).
    Cost: :func:`selection_cost` model inputs (B × candidates + 1); progress: a tqdm bar over them whose description
    states that number (None: on unless the environment sets ``FAITHLAB_PROGRESS=0``).
    cache: the last 4 results are remembered (weakly keyed on the model) and a call with the same model — the same
    ``torch.nn.Module`` object, or a wrapper of it that names it in ``__wrapped__``, with the same parameters,
    buffers and structure (a fingerprint of their bytes: training it further or loading other weights misses) —
    the same x (by content: a fingerprint of its bytes, shape, dtype and device), ``grid`` and ``normalisation``
    returns a copy of the remembered result without a forward pass, whatever its ``batch_size``: batch sizes change
    no result beyond float rounding, and ``"auto"`` may resolve to another size from one call to the next, so a key
    holding it would miss a search that ``fl.evaluate`` could reuse. A model that is not a module
    (a function) is never cached, nor is a call with ``cache=False``; :func:`clear_cache` forgets everything (a
    model whose output changes without a change of its weights or structure, e.g. by a hook, needs it).
    Returns a dict: ``image`` ``(B, C, H, W)`` the selected candidates; ``index`` ``(B,)`` into ``grid``; ``u``,
    ``s``, ``p`` ``(B,)`` their scores; ``passed`` ``(B,)`` bool U < Δ; ``all_u``, ``all_s`` ``(B, V)`` every
    candidate's U and S; ``delta`` Δ; ``n_classes`` N; ``grid`` the (operation, σ, adjustment) list;
    ``operation``, ``sigma``, ``adjustment`` lists of the winners.
    """
    _validate.model(model, "model")
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.model_accepts(model, x, "model", "x")
    _validate.finite(x, "x")
    grid = _check_grid(grid)
    norm = _check_normalisation(normalisation, x)
    batch_size = _validate.batch_size(batch_size, "batch_size")  # "auto": resolved by evaluate_inputs below
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False, got {cache!r}")
    show = _validate.progress(progress)
    key = _Memo.key(model, x, grid, norm) if cache else None
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    total = selection_cost(x.shape, grid=grid)
    with tqdm(total=total, unit="input", disable=not show, leave=False,
              desc=f"Few-class candidate search: {x.shape[0]} images × {len(grid)} candidates: {total:,} model "
                   "inputs") as bar:
        width = perturb.logits(model, x[:1], finite=False).shape[1]
        bar.update(1)
        n = _n_classes(width)
        delta = threshold(n)
        pixels = _to_pixels(x, norm)
        all_s = torch.empty(x.shape[0], len(grid), dtype=x.dtype, device=x.device)
        layout = _Layout(grid, x)

        def inputs(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
            c = _build(pixels, grid, b0, b1, v0, v1, layout)
            all_s[b0:b1, v0:v1] = similarity(pixels[b0:b1], c)
            return _to_inputs(c, norm)

        def read(logits: torch.Tensor, _) -> torch.Tensor:
            bar.update(logits.shape[0])
            return uncertainty(class_probabilities(logits))

        all_u = perturb.evaluate_inputs(model, inputs, n_samples=x.shape[0], n_variants=len(grid), output=read,
                                        batch_size=batch_size).to(x.dtype)
    score = perturbation_score(all_u, all_s, n)
    passed_any = (all_u < delta).any(dim=1)
    masked = torch.where(all_u < delta, score, torch.full_like(score, float("inf")))
    index = torch.where(passed_any, masked.argmin(dim=1), all_u.argmin(dim=1))
    rows = torch.arange(x.shape[0], device=x.device)
    picked = [grid[v] for v in index.tolist()]
    result = {"image": candidate_images(x, index, grid=grid, normalisation=normalisation), "index": index,
              "u": all_u[rows, index], "s": all_s[rows, index], "p": score[rows, index], "passed": passed_any,
              "all_u": all_u, "all_s": all_s, "delta": delta, "n_classes": n, "grid": grid,
              "operation": [g[0] for g in picked], "sigma": [g[1] for g in picked],
              "adjustment": [g[2] for g in picked]}
    if key is not None:
        _MEMO.put(key, result)
    return result


def clear_cache() -> None:
    """Forget every result :func:`select_perturbation` remembers (the next call with the same arguments searches
    again)."""
    _MEMO.clear()


def _fingerprint(tensors: Iterable[tuple[str, torch.Tensor]], extra: str = "") -> bytes:
    """A digest of named tensors' names, shapes, dtypes, devices and bytes (blake2b, 128 bits)."""
    h = hashlib.blake2b(extra.encode(), digest_size=16)
    for name, t in tensors:
        t = t.detach()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|{t.device}|".encode())
        h.update(memoryview(t.contiguous().cpu().reshape(-1).view(torch.uint8).numpy()))
    return h.digest()


class _Memo:
    """The last :data:`SIZE` selections: (the model, weakly; the rest of the key) → (the model's weights
    fingerprint, the result). An entry whose model was collected is dropped; a changed fingerprint is a miss."""

    SIZE = 4

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()

    @staticmethod
    def key(model: Callable, x: torch.Tensor, grid: list, norm) -> tuple | None:
        """(the module, its fingerprint, the rest) of a call, or None when the model is not (a wrapper of) a
        ``torch.nn.Module``. The batch size is not part of it (see :func:`select_perturbation`)."""
        module, seen = model, 0
        while not isinstance(module, torch.nn.Module) and hasattr(module, "__wrapped__") and seen < 16:
            module, seen = module.__wrapped__, seen + 1
        if not isinstance(module, torch.nn.Module):
            return None
        weights = _fingerprint(itertools.chain(((f"parameter {n}", p) for n, p in module.named_parameters()),
                                               ((f"buffer {n}", b) for n, b in module.named_buffers())), repr(module))
        rest = (_fingerprint([("x", x)]), tuple(grid),
                None if norm is None else (tuple(norm[0].flatten().tolist()), tuple(norm[1].flatten().tolist())))
        return module, weights, rest

    def get(self, key: tuple) -> dict | None:
        module, weights, rest = key
        slot = (id(module), rest)
        entry = self.entries.get(slot)
        if entry is None or entry[0]() is not module or entry[1] != weights:
            return None
        self.entries.move_to_end(slot)
        return _copy(entry[2])

    def put(self, key: tuple, result: dict) -> None:
        module, weights, rest = key
        for slot in [s for s, e in self.entries.items() if e[0]() is None or s[0] == id(module) and e[1] != weights]:
            del self.entries[slot]  # collected models, and this model's results for other weights
        self.entries[(id(module), rest)] = (weakref.ref(module), weights, _copy(result))
        while len(self.entries) > self.SIZE:
            self.entries.popitem(last=False)

    def clear(self) -> None:
        self.entries.clear()


def _copy(result: dict) -> dict:
    """A selection result whose tensors and lists the caller may change without changing the cache."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v
            for k, v in result.items()}


_MEMO = _Memo()


def fid(a_mif: torch.Tensor, a_lif: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Few-class Fid of eq. (1): 1 − (|1 − A_LIF| + |1/N − A_MIF|) / (1 + (N − 1)/N), in [0, 1] for areas in
    [0, 1]; 1 = ideal (A_LIF = 1, A_MIF = 1/N). Higher is better."""
    n = _validate.positive_int(n_classes, "n_classes")
    if n < 2:
        raise ValueError(f"n_classes must be at least 2, got {n}")
    score = 1 - ((1 - a_lif).abs() + (1.0 / n - a_mif).abs()) / (1 + (n - 1) / n)
    return score.clamp(0, 1)  # only rounding can leave [0, 1] (e.g. −2e-16 at the worst case)


def fewclass_fid_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                         perturbed: torch.Tensor | None = None, target: torch.Tensor | None = None,
                         normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None,
                         grid: Grid = None, generator: torch.Generator | int = 0,
                         fractions: Sequence[float] = FRACTIONS, sample_index: torch.Tensor | None = None,
                         batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`fewclass_fid` with its curves: ``score`` ``(B,)``, ``mif`` and ``lif`` ``(B, F)`` the probability of
    the target class as the most / least important pixels are replaced, ``a_mif``, ``a_lif`` ``(B,)`` their
    trapezoid areas over the fractions, ``fractions`` ``(F,)``, ``target`` ``(B,)``, ``n_classes``,
    ``perturbed`` ``(B, C, H, W)`` the replacement images used (the given ones or the selected ones) and
    ``constant`` ``(B,)`` (maps without a ranking: every pixel ties, the random tie order decides; a
    ``perturb.ConstantMapWarning`` counts them). The tie order is keyed to the sample: image i's comes from a
    stream keyed by a root seed drawn from ``generator`` and ``sample_index[i]`` (its global index, default its
    position), so it does not depend on the other images in the call. Arguments as in :func:`fewclass_fid`."""
    _validate.model(model, "model")
    _validate.one_device(x=x, attributions=attributions, perturbed=perturbed, target=target)
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.model_accepts(model, x, "model", "x")
    _validate.batch_size(batch_size, "batch_size")  # "auto" goes on to each forward loop, which resolves it
    if perturbed is not None:
        _validate.tensor(perturbed, "perturbed", ndim=4, floating=True)
        if perturbed.shape != x.shape:
            raise ValueError(f"perturbed must have x's shape {tuple(x.shape)}, got {tuple(perturbed.shape)}")
        _validate.same_device(x, perturbed, "x", "perturbed")
        _validate.finite(perturbed, "perturbed")
    f = _validate.fractions(fractions, "fractions", increasing=True)
    units = perturb.pixel_units(x)
    perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, units, reduce="sum_abs")
    constant = perturb.warn_constant(perturb.constant_maps(scores), "their pixels are replaced in a random order "
                                     "(flagged in 'constant')")
    g = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the random tie order")
    if target is not None:
        _validate.tensor(target, "target", ndim=1)
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must be an int64 tensor of class indices, got dtype {target.dtype}")
    else:
        target = predicted_class(model, x, batch_size=batch_size)
    n = _n_classes(perturb.logits(model, x[:1], finite=False).shape[1])
    if int(target.max()) >= n:  # the model's classes are known only now; the engine checks the rest of target
        raise ValueError(f"target holds class {int(target.max())} but the model returns {n} classes "
                         f"(0..{n - 1})")
    if perturbed is None:
        perturbed = select_perturbation(model, x, grid=grid, normalisation=normalisation,
                                        batch_size=batch_size)["image"]
    runner = perturb.Removal(model, x, units=units, reference=perturbed, output=_class_probability, target=target,
                             batch_size=batch_size)
    orders = [perturb.order(scores, direction, generator=g, ties="random") for direction in ("morf", "lerf")]
    # one run for both curves: the clean and the fully perturbed image are both curves' end points
    curves = dict(zip(("mif", "lif"), runner.curves(None, f, orders=orders)))
    ff = f.to(x.device, curves["mif"].dtype)
    a_mif, a_lif = trapezoid_auc(curves["mif"], ff), trapezoid_auc(curves["lif"], ff)
    return {"score": fid(a_mif, a_lif, n), "mif": curves["mif"], "lif": curves["lif"], "a_mif": a_mif,
            "a_lif": a_lif, "fractions": ff, "target": target, "n_classes": n, "perturbed": perturbed,
            "constant": constant}


fewclass_fid = plain(fewclass_fid_details, "score", """
    Few-class Fidelity per image (spec §2.1–2.2) → ``(B,)`` in [0, 1], higher = more faithful.

    x: ``(B, C, H, W)``; attributions: x's shape or ``(B, H, W)``, ranked by Σ_c |map| with random tie order. The
    model returns N ≥ 2 logits (softmax) or one (sigmoid, N = 2).
    perturbed: ``(B, C, H, W)`` the replacement images, in x's space; None (default) selects them with
    ``select_perturbation(model, x, grid=grid, normalisation=normalisation, batch_size=batch_size)["image"]``
    (``normalisation`` and ``grid`` are read only then: pass ``(mean, std)`` when x holds normalised inputs, see
    :func:`select_perturbation`; ``grid`` None searches :data:`QUICK_GRID`'s 144 candidates, ``grid="paper"`` the
    paper's 804; a search already done for the same model, images and options is reused). Select once and pass
    ``perturbed=`` to score several maps of the same images.
    target: the class whose probability the curves read (``(B,)`` int64; None → the model's prediction on x).
    generator: the random tie order (seed or torch.Generator, default 0); sample_index: global indices keying it
    (default 0 … B − 1); fractions: the curves' points (default 0, 0.01, …, 1); batch_size: inputs per forward
    call, an int or ``"auto"`` (the size a cached timing probe of the model finds cheapest per input, see
    :mod:`faithlab.perturb.autobatch`); the scores do not depend on it. :func:`fewclass_fid_details` also
    returns the MIF/LIF curves. A constant map (no ranking) is replaced in a random pixel order and counted by a
    ``perturb.ConstantMapWarning``. The paper reports the mean.
    """)


# ------------------------------------------------------------------------------------------- fl.evaluate
def _grid_option(value, name, x):
    try:
        selection_cost((1, 1, 1, 1), grid=value)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise type(exc)(text.replace("grid", name, 1) if "grid" in text else f"{name}: {text}") from None
    return value


def _perturbed_option(value, name, x):
    if value is None:
        return None
    _validate.tensor(value, name, ndim=4)
    # one perturbed image per sample of the data, read by global sample index (x may be one batch of a stream)
    if value.shape[1:] != x.shape[1:] or value.shape[0] < x.shape[0]:
        raise ValueError(f"{name} must have x's shape {tuple(x.shape)} (one image per sample, indexed by the global "
                         f"sample index), got {tuple(value.shape)}")
    return value


def _selection(c: Context):
    """The chunk's perturbed images: the caller's (indexed by global sample index), or one candidate search for all
    explainers."""
    o = c.group_options("fewclass")
    given = o["perturbed"]
    if given is not None:
        if int(c.sample_index.max()) >= given.shape[0]:
            raise ValueError(f"perturbed holds {given.shape[0]} images but the data has sample "
                             f"{int(c.sample_index.max())}: pass one perturbed image per sample of the data")
        return given[c.sample_index.to(given.device)]
    return select_perturbation(c.model, c.x, grid=o["grid"], normalisation=o["normalisation"],
                               batch_size=c.batch_size, progress=c.progress)["image"]


SELECTION = Shared("fewclass selection", _selection, group="fewclass",
                   tip="its search over candidate blurs runs once for all explainers")

register(Metric(
    "fewclass_fid", "Few-class Fid", "fewclass", True, fewclass_fid, details=fewclass_fid_details, score="score",
    group="fewclass", needs=("images",), uses={"perturbed": SELECTION.name}, ideal=1.0, span=1.0,
    options=(Option("fractions", doc="Few-class: the fractions of the MIF/LIF curves", check=checks.increasing),
             Option("normalisation", doc="Few-class: the (mean, std) x was normalised with; the candidate search "
                    "then runs on pixel values"),
             Option("grid", doc="Few-class: the candidate grid of the search (None: the 144 candidates of "
                    "fewclass.QUICK_GRID; 'paper': the paper's 804; or (operation, σ, adjustment) entries)",
                    check=_grid_option),
             Option("perturbed", doc="Few-class: the perturbed images (None: select_perturbation once for all maps)",
                    check=_perturbed_option)),
    tip=("fractions", [0, 0.25, 0.5, 0.75, 1], "fewer curve points"),
    doc="pixels replaced by an uncertain image: MIF falls to 1/N, LIF stays up"),
    shared=(SELECTION,))

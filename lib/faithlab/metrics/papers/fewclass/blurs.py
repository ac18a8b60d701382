"""Few-class Fidelity's candidate perturbed images (spec §2.3, §6.9): the label-free blur operations
(:data:`OPERATIONS`) × σ × 3 adjustments (:data:`ADJUSTMENTS`: as is, range-matched, histogram-matched), the grids
(:func:`candidate_grid`, the default :data:`QUICK_GRID`, the paper's 804) and how the candidates of a grid are built
chunk by chunk (:func:`candidates`, :func:`candidate_images`), in pixel space or from normalised model inputs.
The search that scores them and the MIF/LIF curves and Fid that read its choice are in
:mod:`faithlab.metrics.papers.fewclass.fidelity`.
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Iterator, Sequence

import torch

from faithlab import _validate, perturb
from faithlab.perturb import autobatch, references
from faithlab.perturb.autobatch import BatchSize

__all__ = ["OPERATIONS", "ADJUSTMENTS", "QUICK_OPERATIONS", "QUICK_SIGMAS", "QUICK_GRID", "candidate_grid",
           "candidates", "candidate_images", "match_histograms", "match_range"]

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
"""The default candidate grid of :func:`~faithlab.metrics.papers.fewclass.fidelity.select_perturbation`: 6 operations ×
5 σ (1, 2, 4, 8, 12) + V2 and V14 × 9 σ (1, 2, 4, …, 64, 80), × 3 adjustments = 144 candidates, the paper's weakest to
strongest blur of each distinct
operation, a sixth of the paper's 804 (``grid="paper"``) in model inputs and candidate builds."""


Grid = Sequence[tuple[str, int, str]] | str | None
"""A candidate grid argument: None or ``"quick"`` (:data:`QUICK_GRID`, 144), ``"paper"`` (the paper's 804) or
(operation, σ, adjustment) entries (:func:`candidate_grid`)."""


def check_grid(grid: Grid) -> list[tuple[str, int, str]]:
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


class Layout:
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
        matrices = torch.cat([references.reflect_operator(n, s, 4.0).flatten() for n, s in pairs]).to(x.device)
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


def build_candidates(x: torch.Tensor, grid: list[tuple[str, int, str]], b0: int, b1: int, v0: int, v1: int,
           layout: Layout | None = None) -> torch.Tensor:
    """Candidates v0..v1-1 of images b0..b1-1 → ``(b1-b0, v1-v0, C, H, W)``: each needed blur computed once, the
    operations and adjustments applied to all candidates of a kind at once. layout: the grid's :class:`Layout` for
    x (None: made here); every index and blur matrix is read from it, so a chunk copies nothing from the host."""
    layout = Layout(grid, x) if layout is None else layout
    xb = x[b0:b1]
    keys = sorted({(_BASE.get(op, 1), float(s)) for op, s, _ in grid[v0:v1]})  # the blurs these candidates read
    blurs = []
    for power in sorted({p for p, _ in keys}):  # perturb.gaussian_filter with the layout's matrices
        blurs.append(references.gaussian_blurs(xb if power == 1 else xb ** power, [s for p, s in keys if p == power],
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


def check_normalisation(normalisation, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
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


def to_pixels(x: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Model inputs → pixels: x·std + mean (x itself without a normalisation)."""
    return x if norm is None else x * norm[1] + norm[0]


def to_inputs(pixels: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
    """Pixels ``(..., C, H, W)`` → model inputs: (pixels − mean) / std (the pixels without a normalisation)."""
    return pixels if norm is None else (pixels - norm[0]) / norm[1]


def candidate_images(x: torch.Tensor, index: torch.Tensor, *,
                     grid: Grid = None,
                     normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None
                     ) -> torch.Tensor:
    """Candidate ``index[b]`` of ``grid`` for every image b → ``(B, C, H, W)`` in x's space (e.g. the winners of
    :func:`~faithlab.metrics.papers.fewclass.fidelity.select_perturbation`, or chosen candidates to show), built once
    per distinct index for all the images that use it. grid: the grid the indices point into, as in
    :func:`~faithlab.metrics.papers.fewclass.fidelity.select_perturbation` (default
    :data:`QUICK_GRID`, the selection's default; ``"paper"``: the 804). normalisation: ``(mean, std)`` when x holds
    normalised inputs (see :func:`candidates`)."""
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.finite(x, "x")
    grid = check_grid(grid)
    norm = check_normalisation(normalisation, x)
    index = _validate.tensor(index, "index", ndim=1)
    if index.shape[0] != x.shape[0] or index.is_floating_point() or bool(((index < 0) | (index >= len(grid))).any()):
        raise ValueError(f"index must hold {x.shape[0]} integers in [0, {len(grid)}), got {index.tolist()[:8]}")
    pixels = to_pixels(x, norm)
    out = torch.empty_like(x)
    layout = Layout(grid, x)
    for v in torch.unique(index).tolist():
        rows = (index == v).nonzero().flatten()
        out[rows] = to_inputs(build_candidates(pixels[rows], grid, 0, rows.numel(), v, v + 1, layout)[:, 0], norm)
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
    matching) and returned normalised, (c − mean)/std. grid: as in
    :func:`~faithlab.metrics.papers.fewclass.fidelity.select_perturbation` (default :data:`QUICK_GRID`; ``"paper"``: the
    paper's 804). Memory is bounded by ``batch_size`` candidates (plus the
    blurs they need), on x's device; ``"auto"`` (no model here to time): as many candidates as
    :data:`~faithlab.perturb.autobatch.MAP_ELEMENTS` elements hold. The candidates do not depend on it."""
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.finite(x, "x")
    grid = check_grid(grid)
    norm = check_normalisation(normalisation, x)
    batch_size = autobatch.map_chunk(batch_size, math.prod(x.shape[1:]))
    return _candidates(to_pixels(x, norm), grid, batch_size, norm)


def _candidates(pixels: torch.Tensor, grid: list[tuple[str, int, str]], batch_size: int,
                norm: tuple[torch.Tensor, torch.Tensor] | None) -> Iterator[tuple[int, int, int, int, torch.Tensor]]:
    layout = Layout(grid, pixels)
    for pieces in perturb.grid_chunks(pixels.shape[0], len(grid), batch_size=batch_size):
        for b0, b1, v0, v1 in pieces:
            yield b0, b1, v0, v1, to_inputs(build_candidates(pixels, grid, b0, b1, v0, v1, layout), norm)

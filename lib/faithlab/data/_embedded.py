"""Embedded datasets (no files, no network): scikit-learn's real 8×8 digits, digits on a coloured canvas with a
ground-truth mask, synthetic CT-like slices with a contrast-enhanced (or not) organ mask, synthetic time series with
salient windows, and synthetic sentiment-like token sequences.

Every generator is a pure function of its arguments: the same ``seed`` gives identical tensors, and the train and
test splits come from independent random streams of that seed.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from faithlab import _validate
from faithlab._optional import require

from ._core import TensorData, check_split, generator, split_indices

TASKS = ("seq_comb", "freq_shape")


# --------------------------------------------------------------------------------------------------- digits source
@functools.lru_cache(maxsize=1)
def _sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    require("sklearn", "the embedded digits (fl.data.digits, canvas_digits)")
    from sklearn.datasets import load_digits  # ships with scikit-learn; no download

    bunch = load_digits()
    return bunch.images.astype(np.float32) / 16.0, bunch.target.astype(np.int64)


def _digit_source(
    classes: Sequence[int] | None, n_classes: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    """Digits of the chosen classes: images (M, 8, 8) in [0, 1], labels remapped to 0..K-1 in the order of
    ``classes``, indices into sklearn's 1,797 digits, and the class list."""
    if classes is None:
        k = 10 if n_classes is None else _validate.positive_int(n_classes, "n_classes")
        if not 2 <= k <= 10:
            raise ValueError(f"n_classes must lie in [2, 10], got {n_classes}")
        classes = list(range(k))
    else:
        classes = [int(c) for c in classes]
        if len(classes) < 2 or len(set(classes)) != len(classes) or not all(0 <= c <= 9 for c in classes):
            raise ValueError(f"classes must be at least two distinct digits in 0..9, got {classes}")
        if n_classes is not None and n_classes != len(classes):
            raise ValueError(f"n_classes={n_classes} disagrees with classes={classes}; give one of them")
    images, target = (torch.from_numpy(a) for a in _sklearn_digits())
    lookup = torch.full((10,), -1, dtype=torch.int64)
    lookup[classes] = torch.arange(len(classes))
    keep = (lookup[target] >= 0).nonzero().flatten()
    return images[keep], lookup[target[keep]], keep, classes


def _paint(v: torch.Tensor, color: bool, g: torch.Generator) -> torch.Tensor:
    """Colour intensities v (N, 1, H, W) in [0, 1]: pixel = bg + v·(fg − bg) with random per-sample colours.

    bg ~ U[0,1]³ and fg = (bg + d) mod 1 with d ~ U[0.25, 0.75]³, so every channel contrasts by ≥ 0.25. Colours are
    drawn independently of the label (no colour shortcut). Without ``color`` v is returned (1 channel).
    """
    if not color:
        return v
    n = v.shape[0]
    bg = torch.rand(n, 3, generator=g)
    fg = (bg + 0.25 + 0.5 * torch.rand(n, 3, generator=g)) % 1.0
    return bg[:, :, None, None] + v * (fg - bg)[:, :, None, None]


def _standardize(x_train: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, tuple, tuple]:
    """Normalise x (N, C, H, W) per channel with the mean/std (population) of x_train.

    The statistics are summed by numpy in float64: torch's float32 reductions split the sum by the number of CPU
    threads, so the mean's last bit (and every standardised pixel, model and score after it) depended on -j and on
    the machine's cores; numpy's pairwise sum does not."""
    v = x_train.detach().cpu().double().numpy()
    mean = torch.from_numpy(v.mean(axis=(0, 2, 3))).to(x.dtype)
    std = torch.from_numpy(v.std(axis=(0, 2, 3))).to(x.dtype).clamp_min(1e-8)
    x = (x - mean[None, :, None, None]) / std[None, :, None, None]
    return x, tuple(mean.tolist()), tuple(std.tolist())


def _split_parts(labels: torch.Tensor, seed: int, test_fraction: float) -> dict[str, torch.Tensor]:
    train, test = split_indices(labels.shape[0], seed=seed, test_fraction=test_fraction, labels=labels)
    return {"train": train, "test": test}


def digits(*, split: str = "train", seed: int = 0, size: int = 32, color: bool = False,
           classes: Sequence[int] | None = None, n_classes: int | None = None, test_fraction: float = 0.2) -> TensorData:
    """scikit-learn's 1,797 real 8×8 handwritten digits, upsampled to size×size (bilinear) and optionally coloured.

    Split: stratified, round(test_fraction·n_c) digits of each class to test (80/20 by default), from ``seed``.
    ``color=True`` paints each digit with a random foreground and background colour (3 channels; the F-Fidelity
    "coloured MNIST" analogue, colours independent of the label). ``classes=[3, 8]`` keeps those digits, labels
    remapped to 0..K-1 in that order (``n_classes=k`` is short for ``classes=range(k)``).
    Normalised per channel with the train split's mean/std (``info['mean']``, ``info['std']``).

    Returns TensorData: x (N, C, size, size), y (N,), no mask; extras ``source_index`` (N,) into sklearn's digits.
    """
    check_split(split)
    _validate.positive_int(size, "size")
    images, labels, source, classes = _digit_source(classes, n_classes)
    parts = _split_parts(labels, seed, test_fraction)

    def render(part: str) -> torch.Tensor:
        v = images[parts[part]][:, None]
        v = F.interpolate(v, size=(size, size), mode="bilinear", align_corners=False, antialias=True).clamp(0, 1)
        return _paint(v, color, generator(seed, "digits-colour", part))

    x_train = render("train")
    x, mean, std = _standardize(x_train, x_train if split == "train" else render("test"))
    info = dict(
        name="digits", n_classes=len(classes), class_names=[str(c) for c in classes], classes=classes,
        mean=mean, std=std, split=split, seed=seed, size=size, color=color, test_fraction=test_fraction,
    )
    return TensorData(x, labels[parts[split]], info=info, extras={"source_index": source[parts[split]]})


# --------------------------------------------------------------------------------------------------- canvas digits
def _candidate_sizes(h0: int, w0: int, size: int) -> list[tuple[int, int]]:
    """Box sizes (h, w) tried for a digit crop of shape (h0, w0): its aspect ratio ±1 pixel of width at every
    height, plus stretching along the free axis once the other one fills the canvas."""
    aspect = w0 / h0
    cands = {
        (h, w)
        for h in range(1, size + 1)
        for w in range(round(h * aspect) - 1, round(h * aspect) + 2)
        if 1 <= w <= size
    }
    if aspect <= 1:
        cands |= {(size, w) for w in range(round(size * aspect), size + 1)}
    else:
        cands |= {(h, size) for h in range(round(size / aspect), size + 1)}
    return sorted(cands)


@functools.cache
def _interp(n_in: int, n_out: int) -> torch.Tensor:
    """(n_in, n_out) weights of 1-D linear resizing (align_corners=False): bilinear = Rᵀ · D · C."""
    return F.interpolate(torch.eye(n_in)[:, None, :], size=n_out, mode="linear", align_corners=False)[:, 0, :]


@functools.lru_cache(maxsize=16)
def _fitted_digits(size: int, r: float) -> tuple[torch.Tensor, ...]:
    """For each of sklearn's 1,797 digits, a bool foreground patch (intensity ≥ 0.5 after bilinear resizing of its
    tight crop) whose pixel count is closest to r·size² among the candidate box sizes (ties: least aspect
    distortion). Depends on (size, r) only, hence cached across seeds, splits and class subsets."""
    images, target = torch.from_numpy(_sklearn_digits()[0]), r * size * size
    on = images >= 0.5  # crop to the foreground: faint rims would only pad the box
    rows, cols = on.any(2), on.any(1)
    top, left = rows.int().argmax(1), cols.int().argmax(1)
    heights = 8 - top - rows.flip(1).int().argmax(1)
    widths = 8 - left - cols.flip(1).int().argmax(1)
    patches: list[torch.Tensor] = [torch.empty(0)] * images.shape[0]
    for h0, w0 in torch.stack([heights, widths], 1).unique(dim=0).tolist():
        members = ((heights == h0) & (widths == w0)).nonzero().flatten().tolist()
        crops = torch.stack([images[i, top[i] : top[i] + h0, left[i] : left[i] + w0] for i in members])
        # a box of area < 0.8·target holds < 0.8·target pixels: never closer than the candidates reaching target
        cands = [(h, w) for h, w in _candidate_sizes(h0, w0, size) if h * w >= 0.8 * target or h * w == size * size]
        counts = []
        for h in sorted({h for h, _ in cands}):  # one product per height, all its widths side by side
            ws = [w for hh, w in cands if hh == h]
            fg = (_interp(h0, h).T @ crops @ torch.cat([_interp(w0, w) for w in ws], 1)) >= 0.5
            counts += [c.sum(1) for c in fg.sum(1).split(ws, dim=1)]
        distortion = torch.tensor([abs(math.log(w * h0 / (h * w0))) for h, w in cands], dtype=torch.float64)
        best = ((torch.stack(counts, 1) - target).abs() + 1e-3 * distortion).argmin(1)  # integer counts: no flip
        for k in best.unique().tolist():
            chosen = (best == k).nonzero().flatten()
            h, w = cands[k]
            fitted = (_interp(h0, h).T @ crops[chosen] @ _interp(w0, w)) >= 0.5
            for j, patch in zip(chosen.tolist(), fitted):
                patches[members[j]] = patch
    return tuple(patches)


def _render_canvas(
    source: torch.Tensor, size: int, r: float, color: bool, g: torch.Generator, clutter: int = 0,
    clutter_g: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Digits (indices into sklearn's) → (x (N, C, size, size) in [0, 1], mask (N, size, size) bool, boxes (N, 4)).
    With ``clutter_g``, ``clutter`` fragments of other digits are painted in the digit's colour (:func:`_clutter`);
    they come from their own stream, so placements, colours and masks are those of the clean canvases."""
    fitted = _fitted_digits(size, r)
    patches = [fitted[i] for i in source.tolist()]
    n = len(patches)
    hs = torch.tensor([p.shape[0] for p in patches])
    ws = torch.tensor([p.shape[1] for p in patches])
    ty = (torch.rand(n, generator=g) * (size - hs + 1)).long()
    tx = (torch.rand(n, generator=g) * (size - ws + 1)).long()
    mask = torch.zeros(n, size, size, dtype=torch.bool)
    for i, p in enumerate(patches):
        mask[i, ty[i] : ty[i] + p.shape[0], tx[i] : tx[i] + p.shape[1]] = p
    rows, cols = mask.any(2), mask.any(1)
    y0, x0 = rows.int().argmax(1), cols.int().argmax(1)
    y1, x1 = size - rows.flip(1).int().argmax(1), size - cols.flip(1).int().argmax(1)
    boxes = torch.stack([x0, y0, x1, y1], 1)
    ink = mask if clutter_g is None else mask | _clutter(source, fitted, size, clutter, clutter_g)
    return _paint(ink[:, None].float(), color, g), mask, boxes


def _clutter(source: torch.Tensor, fitted: tuple[torch.Tensor, ...], size: int, k: int,
             g: torch.Generator) -> torch.Tensor:
    """Clutter (N, size, size) bool of ``k`` fragments per canvas, as in cluttered translated MNIST (Mnih et al.,
    2014): each a random window of half the height and width (rounded up) of another digit of the split (fitted to
    the same r), placed uniformly at random. A loop over N·k small crops, once per split (the result is cached)."""
    n = source.numel()
    others = source[torch.randint(n, (n, k), generator=g)]
    u = torch.rand(n, k, 4, generator=g)
    out = torch.zeros(n, size, size, dtype=torch.bool)
    for i in range(n):
        for j in range(k):
            p = fitted[int(others[i, j])]
            h, w = -(-p.shape[0] // 2), -(-p.shape[1] // 2)
            sy, sx = int(u[i, j, 0] * (p.shape[0] - h + 1)), int(u[i, j, 1] * (p.shape[1] - w + 1))
            ty, tx = int(u[i, j, 2] * (size - h + 1)), int(u[i, j, 3] * (size - w + 1))
            out[i, ty : ty + h, tx : tx + w] |= p[sy : sy + h, sx : sx + w]
    return out


@functools.lru_cache(maxsize=4)
def _canvas_part(
    seed: int, size: int, r: float, classes: tuple[int, ...], color: bool, test_fraction: float, part: str,
    n: int | None, clutter: int = 0,
) -> tuple[torch.Tensor, ...]:
    """Unnormalised canvas images of one split (cached: the test split needs the train statistics)."""
    _, labels, source, _ = _digit_source(classes, None)
    idx = _split_parts(labels, seed, test_fraction)[part]
    if n is not None:
        g = generator(seed, "canvas-sample", part)
        reps = -(-n // idx.numel())
        idx = idx[torch.cat([torch.randperm(idx.numel(), generator=g) for _ in range(reps)])[:n]]
    x, mask, boxes = _render_canvas(source[idx], size, r, color, generator(seed, "canvas", part), clutter,
                                    generator(seed, "canvas-clutter", part) if clutter else None)
    return x, mask, boxes, labels[idx], source[idx]


def canvas_digits(*, split: str = "train", seed: int = 0, size: int = 32, r: float = 0.2,
                  n_classes: int | None = None, classes: Sequence[int] | None = None, color: bool = True,
                  n: int | None = None, test_fraction: float = 0.2, clutter: int = 0) -> TensorData:
    """Digits on a size×size canvas, scaled so that the digit's foreground covers a fraction ``r`` of the image.

    For F-Fidelity's explanation-size plateau (spec §1.10: the digit is tier T_1 of |T_1| = r·n pixels), few-class
    localisation (IoU with ``boxes``, Dice with ``mask``) and ground-truth explainers.

    ``r`` is the fraction of the image's pixels in the digit's foreground mask (= ``mask.mean((1, 2))``). Each
    digit's tight 8×8 crop is resized (bilinear, foreground = intensity ≥ 0.5) to the box size whose foreground
    pixel count is closest to r·size²; the aspect ratio is kept up to one pixel of width, and a digit that cannot
    reach r at full canvas height is stretched along its free axis. The realised fraction per sample is
    ``extras['fraction']``: at size 32 the mean |fraction − r| is ≤ 0.003 and 95 % of samples are within 0.007 of r
    for r ≤ 0.3 (a few hollow digits cannot exceed ≈ 0.26; a mean off by > 0.02 warns). The box is placed uniformly
    at random. Images are crisp: pixel = bg + mask·(fg − bg) with random colours independent of the label
    (``color=False``: 1 channel, 0 background, 1 digit), then normalised per channel with the train split's
    statistics (one canvas per train digit).
    ``clutter`` = k > 0 adds k fragments of other digits of the split to every canvas, in the digit's colour, as
    cluttered translated MNIST (Mnih et al., 2014): each a random window of half the height and width of a digit
    fitted to the same r, placed at random (overlaps allowed). A harder task: the classifier must find the whole
    digit among look-alike strokes. ``mask``, ``boxes`` and ``fraction`` stay the digit's; the placements, colours
    and labels are those of ``clutter=0`` (the fragments have their own random stream).
    Split: stratified 80/20 over sklearn's digits as in :func:`digits`. ``classes=[0, 1]`` → N=2 classes,
    relabelled 0..N-1 in that order. ``n``: number of canvases (source digits of the split reused in random order,
    each with a fresh placement and colour); default one per digit of the split.

    Returns TensorData: x (N, C, size, size), y (N,), mask (N, size, size) bool (digit foreground);
    extras ``boxes`` (N, 4) int64 tight box of the mask as (x0, y0, x1, y1), end exclusive; ``fraction`` (N,)
    realised mask fraction; ``source_index`` (N,).
    """
    check_split(split)
    _validate.positive_int(size, "size")
    r = _validate.fraction(r, "r", closed_low=False)
    if r >= 1 or round(r * size * size) < 1:
        raise ValueError(f"r must lie in (0, 1) and cover at least one of the {size}x{size} pixels, got {r}")
    if n is not None:
        _validate.positive_int(n, "n")
    if isinstance(clutter, bool) or not isinstance(clutter, int) or clutter < 0:
        raise ValueError(f"clutter must be a non-negative integer (fragments per canvas), got {clutter!r}")
    classes = tuple(_digit_source(classes, n_classes)[3])
    key = (seed, size, r, classes, color, test_fraction)
    x_train = _canvas_part(*key, "train", None, clutter)[0]
    x, mask, boxes, labels, source = _canvas_part(*key, split, n, clutter)
    x, mean, std = _standardize(x_train, x)
    fraction = mask.float().mean(dim=(1, 2))
    if abs(fraction.mean().item() - r) > 0.02:
        warnings.warn(f"canvas_digits: realised mean foreground fraction {fraction.mean():.3f} is far from r={r}",
                      stacklevel=2)
    info = dict(
        name="canvas_digits", n_classes=len(classes), class_names=[str(c) for c in classes], classes=list(classes),
        mean=mean, std=std, split=split, seed=seed, size=size, r=r, color=color, n=n, test_fraction=test_fraction,
        clutter=clutter,
    )
    extras = {"boxes": boxes.clone(), "fraction": fraction, "source_index": source.clone()}
    return TensorData(x, labels.clone(), mask.clone(), info, extras)


# ------------------------------------------------------------------------------------------------------ time series
def timeseries(task: str = "seq_comb", *, split: str = "train", seed: int = 0, n: int = 1000, length: int = 100,
               channels: int = 1, n_classes: int = 4, n_windows: int = 2, window: tuple[int, int] = (10, 20),
               amplitude: float = 1.0, noise: float = 0.5, offset: float = 0.0) -> TensorData:
    """Synthetic series whose label lives only in ``n_windows`` salient windows (in the spirit of TimeX's benchmarks).

    Background: i.i.d. N(0, noise²) in every channel. Windows: non-overlapping, separated by ≥ 1 step, lengths
    uniform in [window[0], window[1]], positions uniform; the signal is added to all channels.

    * ``seq_comb``: window j (in time order) holds a ramp from −amplitude to +amplitude, increasing if bit j of the
      class index is 1 and decreasing otherwise (class 0 = all decreasing); n_classes ≤ 2**n_windows.
    * ``freq_shape``: every window holds amplitude·sin(2π f_y t + φ) (t counted from the window start, φ random per
      window) at the class frequency f_k = 0.5·(k+1)/(n_classes+1) cycles per step, evenly spaced below Nyquist.

    Labels are uniform over classes. Series are not normalised (info mean 0 / std 1 per channel). ``offset`` shifts
    every value: with 0 a removed (zeroed) step equals the background mean, in distribution; with an offset of a
    few noise levels the zero reference lies outside the data, as an image's black pixel does (F-Fidelity's OOD
    premise).

    Returns TensorData: x (n, length, channels), y (n,), mask (n, length) bool = salient steps; extras
    ``window_start``, ``window_length`` (n, n_windows).
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {list(TASKS)}, got {task!r}")
    check_split(split)
    for value, name in ((n, "n"), (length, "length"), (channels, "channels"), (n_classes, "n_classes"),
                        (n_windows, "n_windows")):
        _validate.positive_int(value, name)
    lo, hi = (int(w) for w in window)
    if not 2 <= lo <= hi:
        raise ValueError(f"window must be (min, max) lengths with 2 <= min <= max, got {window}")
    if length < n_windows * (hi + 1) - 1:
        raise ValueError(f"length={length} cannot hold n_windows={n_windows} windows of up to {hi} steps")
    if n_classes < 2 or (task == "seq_comb" and n_classes > 2**n_windows):
        raise ValueError(f"n_classes must be >= 2 (and <= 2**n_windows for seq_comb), got {n_classes}")
    if amplitude <= 0 or noise < 0:
        raise ValueError(f"amplitude must be > 0 and noise >= 0, got amplitude={amplitude}, noise={noise}")
    offset = float(offset)
    if not math.isfinite(offset):
        raise ValueError(f"offset must be a finite number, got {offset}")

    g = generator(seed, task, split)
    y = torch.randint(0, n_classes, (n,), generator=g)
    lengths = torch.randint(lo, hi + 1, (n, n_windows), generator=g)
    free = length - lengths.sum(1) - (n_windows - 1)
    gaps = (torch.rand(n, n_windows, generator=g) * (free + 1)[:, None]).long().sort(1).values
    starts = gaps + torch.cumsum(lengths + 1, 1) - (lengths + 1)
    pos = torch.arange(length)[None, None, :] - starts[:, :, None]  # (n, windows, T) step within window
    inside = (pos >= 0) & (pos < lengths[:, :, None])
    if task == "seq_comb":
        up = (y[:, None] >> torch.arange(n_windows)) & 1
        shape = (2.0 * up - 1)[:, :, None] * (2.0 * pos / (lengths[:, :, None] - 1) - 1)
        class_names = ["-".join("up" if (k >> j) & 1 else "down" for j in range(n_windows)) for k in range(n_classes)]
        rule = {"ramp_up_bit": "window j increases iff bit j of the class index is 1"}
    else:
        freqs = 0.5 * (torch.arange(n_classes) + 1.0) / (n_classes + 1)
        phase = 2 * math.pi * torch.rand(n, n_windows, generator=g)
        shape = torch.sin(2 * math.pi * freqs[y][:, None, None] * pos + phase[:, :, None])
        class_names = [f"f={f:.3f}" for f in freqs.tolist()]
        rule = {"frequencies": freqs.tolist()}
    signal = amplitude * (shape * inside).sum(1)
    x = signal[:, :, None] + noise * torch.randn(n, length, channels, generator=g) + offset
    info = dict(
        name=task, n_classes=n_classes, class_names=class_names, mean=(0.0,) * channels, std=(1.0,) * channels,
        split=split, seed=seed, n=n, length=length, channels=channels, n_windows=n_windows, window=(lo, hi),
        amplitude=amplitude, noise=noise, offset=offset, **rule,
    )
    return TensorData(x, y, inside.any(1), info, {"window_start": starts, "window_length": lengths})


# ----------------------------------------------------------------------------------------------------------- tokens
def tokens(*, split: str = "train", seed: int = 0, n: int = 1000, length: int = 32, min_length: int | None = None,
           vocab_size: int = 64, n_signal: int = 4, max_signal: int = 3) -> TensorData:
    """Synthetic sentiment-like token classification with a known rationale.

    Vocabulary: 0 = pad, 1 = unk (reserved, unused here), fillers 2..F+1, positive signal ids (next n_signal),
    negative signal ids (last n_signal), F = vocab_size − 2 − 2·n_signal ≥ 1. Each sequence has a true length
    uniform in [min_length, length] (default min_length = max(length // 2, 2·max_signal − 1)) and is padded with 0.
    Rule: y = 1 (positive) iff it holds more positive than negative signal tokens. Generation: the dominant set
    (positive if y = 1) contributes d ~ U{1..max_signal} tokens and the other set m ~ U{0..d−1}, at random
    positions; every other position is a uniform filler. So the label is never tied and is a function of the
    rationale alone.

    Returns TensorData: x (n, length) int64, y (n,), mask (n, length) bool = signal tokens; extras ``lengths`` (n,).
    """
    check_split(split)
    for value, name in ((n, "n"), (length, "length"), (vocab_size, "vocab_size"), (n_signal, "n_signal"),
                        (max_signal, "max_signal")):
        _validate.positive_int(value, name)
    n_filler = vocab_size - 2 - 2 * n_signal
    if n_filler < 1:
        raise ValueError(f"vocab_size must exceed 2 + 2*n_signal = {2 + 2 * n_signal}, got {vocab_size}")
    min_length = max(length // 2, 2 * max_signal - 1) if min_length is None else min_length
    if not 2 * max_signal - 1 <= min_length <= length:
        low = 2 * max_signal - 1
        raise ValueError(f"min_length must lie in [2*max_signal-1={low}, length={length}], got {min_length}")

    g = generator(seed, "tokens", split)
    lengths = torch.randint(min_length, length + 1, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g)
    dominant = torch.randint(1, max_signal + 1, (n,), generator=g)
    minority = (torch.rand(n, generator=g) * dominant).long()
    valid = torch.arange(length)[None, :] < lengths[:, None]
    keys = torch.where(valid, torch.rand(n, length, generator=g), 2.0)
    rank = keys.argsort(1).argsort(1)
    is_dominant = rank < dominant[:, None]
    is_minority = ~is_dominant & (rank < (dominant + minority)[:, None])
    filler = torch.randint(2, 2 + n_filler, (n, length), generator=g)
    which = torch.randint(0, n_signal, (n, length), generator=g)
    positive, negative = 2 + n_filler + which, 2 + n_filler + n_signal + which
    pos_first = (y == 1)[:, None]
    x = torch.where(is_minority, torch.where(pos_first, negative, positive), filler)
    x = torch.where(is_dominant, torch.where(pos_first, positive, negative), x)
    x = torch.where(valid, x, 0)
    info = dict(
        name="tokens", n_classes=2, class_names=["negative", "positive"], mean=None, std=None, split=split, seed=seed,
        n=n, length=length, min_length=min_length, vocab_size=vocab_size, n_signal=n_signal, max_signal=max_signal,
        pad_id=0, unk_id=1, filler_ids=(2, 2 + n_filler), positive_ids=(2 + n_filler, 2 + n_filler + n_signal),
        negative_ids=(2 + n_filler + n_signal, vocab_size),
    )
    return TensorData(x, y, is_dominant | is_minority, info, {"lengths": lengths})


# -------------------------------------------------------------------------------------------------------- CT slices
CT_CLASS_NAMES = ("without contrast", "with contrast")
_CT_STUDY = 1000  # slices of the notional study that the default split sizes divide


def _ct_frame(u: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, cv: torch.Tensor,
              angle: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Coordinates (u, v) seen from per-sample frames centred at (cu, cv) (N,) and rotated by ``angle`` (N,)."""
    du, dv = u - cu[:, None, None], v - cv[:, None, None]
    c, s = angle.cos()[:, None, None], angle.sin()[:, None, None]
    return c * du + s * dv, c * dv - s * du


def _render_ct(y: torch.Tensor, size: int, contrast: tuple[float, float], noise: float,
               g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Unnormalised CT-like slices for labels y (N,): (x (N, 1, size, size), organ mask, body mask, enhancement (N,)).

    Every random draw has the same shape and order whatever the labels, and only the organ's enhancement reads y:
    rendering 1 − y from the same generator state changes the organ's pixels and nothing else.
    """
    n = y.shape[0]

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, generator=g)

    grid = (2 * torch.arange(size, dtype=torch.float32) + 1) / size - 1  # pixel centres in [-1, 1]
    u, v = grid[None, None, :], grid[None, :, None]  # u: column (left → right), v: row (top → bottom)
    # body: an ellipse wider than high, jittered, slightly rotated
    ba, bb = uniform(0.72, 0.9), uniform(0.52, 0.68)
    p, q = _ct_frame(u, v, uniform(-0.06, 0.06), uniform(-0.06, 0.06), uniform(-0.15, 0.15))
    body = (p / ba[:, None, None]) ** 2 + (q / bb[:, None, None]) ** 2 <= 1
    # two dark lungs left and right of the centre, a bright vertebra at the back (bottom): label-free structures
    lungs = torch.zeros_like(body)
    for side in (-1.0, 1.0):
        lp, lq = side * 0.45 * ba * uniform(0.9, 1.1), -0.1 * bb * uniform(0.5, 1.5)
        la, lb = 0.28 * ba * uniform(0.85, 1.1), 0.6 * bb * uniform(0.85, 1.1)
        lp, lq, la, lb = (a[:, None, None] for a in (lp, lq, la, lb))
        lungs |= ((p - lp) / la) ** 2 + ((q - lq) / lb) ** 2 <= 1
    lungs &= body
    rv = uniform(0.08, 0.12)
    vp, vq = uniform(-0.05, 0.05) * ba, bb - rv - 0.05
    vertebra = body & ((p - vp[:, None, None]) ** 2 + (q - vq[:, None, None]) ** 2 <= (rv**2)[:, None, None])
    # organ: a rotated ellipse with a wavy rim (2nd and 3rd angular harmonics), anywhere inside the body
    ra, rb, angle = uniform(0.16, 0.3), uniform(0.16, 0.3), uniform(0.0, math.pi)
    a2, a3, phase2, phase3 = uniform(0.0, 0.1), uniform(0.0, 0.1), uniform(0.0, 2 * math.pi), uniform(0.0, 2 * math.pi)
    reach = torch.maximum(ra, rb) * (1 + a2 + a3)  # no organ pixel lies farther than this from its centre
    radius, theta = uniform(0.0, 1.0).sqrt(), uniform(0.0, 2 * math.pi)  # uniform in the inner ellipse
    op, oq = 0.9 * radius * theta.cos() * (ba - reach), 0.9 * radius * theta.sin() * (bb - reach)
    s, t = _ct_frame(p, q, op, oq, angle)
    s, t = s / ra[:, None, None], t / rb[:, None, None]
    phi = torch.atan2(t, s)
    rim = 1 + a2[:, None, None] * torch.cos(2 * phi + phase2[:, None, None]) \
        + a3[:, None, None] * torch.cos(3 * phi + phase3[:, None, None])
    organ = body & ((s**2 + t**2).sqrt() <= rim)
    # intensities: smooth texture on every tissue, per-image levels, gain, offset and pixel noise
    texture = F.interpolate(torch.randn(n, 1, 6, 6, generator=g), size=(size, size), mode="bicubic",
                            align_corners=False)[:, 0] * uniform(0.03, 0.07)[:, None, None]
    tissue, air, bone = uniform(0.35, 0.5), uniform(0.03, 0.1), uniform(0.3, 0.45)
    draw = uniform(0.0, 1.0)
    lo, hi = contrast
    enhancement = torch.where(y == 1, lo + draw * (hi - lo), -0.1 * draw)  # the label's only trace
    tissue_, air_, bone_, enh_ = (a[:, None, None] for a in (tissue, air, bone, enhancement))
    raw = torch.where(body, tissue_ + texture, torch.zeros(()))
    raw = torch.where(lungs, air_ + 0.5 * texture, raw)
    raw = torch.where(vertebra, tissue_ + bone_ + 0.5 * texture, raw)
    raw = torch.where(organ, tissue_ + enh_ + texture, raw)
    gain, offset, sigma = uniform(0.85, 1.15), uniform(-0.08, 0.08), noise * uniform(0.5, 1.0)
    gain, offset, sigma = (a[:, None, None] for a in (gain, offset, sigma))
    x = gain * raw + offset + sigma * torch.randn(n, size, size, generator=g)
    return x[:, None], organ, body, enhancement


def tight_boxes(mask: torch.Tensor) -> torch.Tensor:
    """Tight boxes (N, 4) int64 (x0, y0, x1, y1), end exclusive, of masks (N, H, W); (0, 0, 0, 0) for an empty one."""
    height, width = mask.shape[1:]
    rows, cols = mask.any(2), mask.any(1)
    y0, x0 = rows.int().argmax(1), cols.int().argmax(1)
    y1, x1 = height - rows.flip(1).int().argmax(1), width - cols.flip(1).int().argmax(1)
    boxes = torch.stack([x0, y0, x1, y1], 1).long()
    return torch.where(mask.flatten(1).any(1)[:, None], boxes, 0)


def _ct_count(part: str, n: int | None, test_fraction: float) -> int:
    if n is not None:
        return n
    n_test = int(math.floor(test_fraction * _CT_STUDY + 0.5))
    return n_test if part == "test" else _CT_STUDY - n_test


@functools.lru_cache(maxsize=4)
def _ct_part(seed: int, size: int, contrast: tuple[float, float], noise: float, test_fraction: float, part: str,
             n: int | None) -> tuple[torch.Tensor, ...]:
    """Unnormalised slices of one split (cached: the test split needs the train statistics)."""
    count = _ct_count(part, n, test_fraction)
    y = torch.randperm(count, generator=generator(seed, "ct_slices-labels", part)) % 2
    return (y, *_render_ct(y, size, contrast, noise, generator(seed, "ct_slices", part)))


def ct_slices(*, split: str = "train", seed: int = 0, size: int = 32, n: int | None = None,
              test_fraction: float = 0.2, contrast: tuple[float, float] = (0.1, 0.4),
              noise: float = 0.05) -> TensorData:
    """Synthetic grey CT-like slices for a binary contrast-agent task: does the organ show contrast agent?

    The stand-in for the Few-class Fidelity paper's CT study (a single-logit classifier decides whether a slice
    shows contrast agent; a manual mediastinum mask is the localisation ground truth); the real data are read by
    :func:`faithlab.data.ct_contrast`. Each slice shows, on black air, a textured elliptical body (size, position
    and tilt jittered) with two dark lungs, a bright vertebra at the bottom and an organ: a rotated ellipse with a
    wavy rim (random size, shape and position inside the body). The label acts on the organ only: y = 1 ("with
    contrast") adds an enhancement drawn uniformly in ``contrast`` to the body's tissue level inside the organ,
    y = 0 ("without contrast") adds one in [−0.1, 0] (body-like to dark). Everything else is drawn independently
    of the label and per image: tissue, lung and bone levels, a smooth texture (bicubic-upsampled 6×6 noise of
    amplitude 0.03–0.07), a gain in [0.85, 1.15], an offset in [−0.08, 0.08] and pixel noise of std
    ``noise``·U[0.5, 1]. The vertebra is as bright as an enhanced organ, so brightness alone does not decide.
    So the mask (the organ) holds all the label's evidence: the pixels outside it have the same distribution for
    both classes.

    Splits: independent random streams of ``seed`` (no slice is shared); ``n`` slices in the split, by default
    those of a notional 1,000-slice study split by ``test_fraction`` (800 train / 200 test). Classes balanced
    (counts differ by at most one), in random order. Normalised with the mean/std of the default train split
    (``info['mean']``, ``info['std']``, one channel). ``size`` ≥ 16 keeps every organ a few pixels wide.

    Returns TensorData: x (N, 1, size, size), y (N,) (0 without, 1 with contrast), mask (N, size, size) bool
    (organ); extras ``boxes`` (N, 4) int64 tight box of the mask as (x0, y0, x1, y1), end exclusive (as
    :func:`canvas_digits`); ``fraction`` (N,) organ area fraction; ``enhancement`` (N,) the organ's intensity
    offset over the tissue level before gain; ``body`` (N, size, size) bool body mask.
    """
    check_split(split)
    size = _validate.positive_int(size, "size")
    if size < 16:
        raise ValueError(f"size must be at least 16 (the organ must stay a few pixels wide), got {size}")
    if n is not None:
        n = _validate.positive_int(n, "n")
    test_fraction = _validate.fraction(test_fraction, "test_fraction", closed_low=False)
    if test_fraction >= 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    lo, hi = (_validate.number(c, "contrast") for c in contrast)
    if not 0 < lo <= hi:
        raise ValueError(f"contrast must be a range (low, high) with 0 < low <= high, got {contrast}")
    noise = _validate.number(noise, "noise")
    if not (noise >= 0 and math.isfinite(noise)):
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")
    key = (seed, size, (lo, hi), noise, test_fraction)
    x_train = _ct_part(*key, "train", None)[1]
    y, x, mask, body, enhancement = _ct_part(*key, split, n)
    x, mean, std = _standardize(x_train, x)
    info = dict(
        name="ct_slices", n_classes=2, class_names=list(CT_CLASS_NAMES), mean=mean, std=std, split=split, seed=seed,
        size=size, n=len(y), test_fraction=test_fraction, contrast=(lo, hi), noise=noise,
    )
    extras = {"boxes": tight_boxes(mask), "fraction": mask.float().mean(dim=(1, 2)),
              "enhancement": enhancement.clone(), "body": body.clone()}
    return TensorData(x, y.clone(), mask.clone(), info, extras)

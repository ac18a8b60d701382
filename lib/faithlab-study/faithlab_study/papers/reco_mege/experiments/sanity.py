"""ReCo/MeGe's sanity checks of distances between explanation maps (Fel & Vigouroux 2020, §4.3, Figs. 2–3): the
maps of each check and the distances between them.

Fig. 2 (spatial correlation): a point of interest moves across the image; the distance between the first map and
each later one should grow with the displacement. Fig. 3 (noise test): isotropic Gaussian noise of growing σ is
added to a map; the distance between the clean map and each noisy copy should grow with σ. Six distances are
checked: 1-Wasserstein (the earth mover's distance of POT, the paper's ref. [9]), Sørensen–Dice, Spearman, SSIM,
ℓ1 and ℓ2. The five tensor distances come from :func:`faithlab.metrics.papers.reco_mege.distances.map_distance`;
the Wasserstein distance is solved here, pair by pair, with ``ot.emd2`` (:func:`wasserstein`,
:func:`distance_frame`). Whether each distance passes is decided in
:mod:`faithlab_study.papers.reco_mege.claims.sanity`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import _validate

from faithlab._optional import require
from faithlab.metrics.papers.reco_mege.distances import DISTANCES, map_distance
from faithlab.metrics.statistics import spearman

__all__ = ["KINDS", "LABELS", "moving_point_maps", "random_paths", "noise_maps", "wasserstein", "distance_frame"]


KINDS = ("wasserstein", "dice", "spearman", "ssim", "l1", "l2")
"""The six distances of Figs. 2–3 in the paper's order (``"spearman"`` = sqrt(1 − |ρ|), xplique's, spec §4.2)."""

LABELS = {"wasserstein": "1-Wasserstein", "dice": "Dice", "spearman": "Spearman", "ssim": "SSIM", "l1": "ℓ1",
          "l2": "ℓ2"}
"""The names of :data:`KINDS` in tables and figures."""


def _path_arguments(size, steps, radius) -> tuple[int, int, float]:
    """The moving point's ``size``, ``steps`` and ``radius``, checked (a start and an end; the point within a quarter
    of the side)."""
    size = _validate.positive_int(size, "size")
    steps = _validate.positive_int(steps, "steps")
    radius = _validate.number(radius, "radius")
    if not 0 < radius < size / 4:
        raise ValueError(f"radius must lie in (0, size / 4) = (0, {size / 4}), got {radius!r}")
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (a start and an end), got {steps}")
    return size, steps, radius


def moving_point_maps(*, size: int = 32, steps: int = 100, radius: float = 2.0,
                      interpolation: str = "centre") -> torch.Tensor:
    """The maps of the moving-point test (Fig. 2): a Gaussian point of interest travelling across the image.

    The paper's masks are lost; it says that a point of interest starts in a left corner of a 32×32 image and moves
    towards the right corner over 100 interpolated masks, and its caption calls them "successive interpolations
    between the baseline image (left) and the target image (right)". Our choice: the point is
    exp(−‖p − c‖² / (2·radius²)) over the pixel centres p, its centre c going in a straight line from
    (2·radius, 2·radius) near the top-left corner to the mirror point near the bottom-right corner (row, column in
    pixels), in ``steps`` equal steps t ∈ [0, 1] (first and last included). interpolation: ``"centre"`` (default)
    moves the point: map t is the point at the interpolated centre c_t; ``"blend"`` (the other reading of the
    caption) cross-fades the end maps: map t = (1 − t)·map_first + t·map_last, so the mass shifts without moving.
    The maps are float64 so that no value underflows to 0 on a 32×32 image: every pixel keeps a distinct rank.

    Returns ``(steps, size, size)`` float64 maps in [0, 1], map 0 the reference.
    """
    size, steps, radius = _path_arguments(size, steps, radius)
    _validate.one_of(interpolation, "interpolation", ("centre", "blend"))
    t = torch.linspace(0.0, 1.0, steps, dtype=torch.float64)
    centre = 2 * radius + (t if interpolation == "centre" else t[[0, -1]]) * (size - 1 - 4 * radius)  # diagonal
    p = torch.arange(size, dtype=torch.float64)
    d2 = (p[None, :, None] - centre[:, None, None]) ** 2 + (p[None, None, :] - centre[:, None, None]) ** 2
    maps = torch.exp(-d2 / (2 * radius ** 2))
    if interpolation == "blend":
        t = t[:, None, None]
        maps = (1 - t) * maps[0] + t * maps[1]
    return maps


def random_paths(n_paths: int, *, size: int = 32, steps: int = 10, radius: float = 2.0,
                 generator: torch.Generator | int) -> torch.Tensor:
    """The moving-point test (Fig. 2) as independent units: ``n_paths`` paths of a Gaussian point of interest (std
    ``radius`` pixels, as :func:`moving_point_maps`), each from a point at 2·radius from the left edge to a point at
    2·radius from the right edge, both rows drawn uniformly between 2·radius and size − 1 − 2·radius (generator), in
    ``steps`` equal steps (first and last included). The paper moves one point from a left corner to the right corner
    over 100 maps and its masks are lost: drawing the path makes each path an independent unit of the check.

    Returns ``(n_paths, steps, size, size)`` float64 maps in [0, 1]; map 0 of each path is its reference."""
    n_paths = _validate.positive_int(n_paths, "n_paths")
    size, steps, radius = _path_arguments(size, steps, radius)
    g = _validate.generator(generator, why="to draw the paths")
    low, high = 2 * radius, size - 1 - 2 * radius
    rows = low + (high - low) * torch.rand((n_paths, 2), generator=g, dtype=torch.float64, device=g.device).cpu()
    t = torch.linspace(0.0, 1.0, steps, dtype=torch.float64)
    row = rows[:, :1] + t[None] * (rows[:, 1:] - rows[:, :1])                   # (n_paths, steps)
    col = (low + t * (high - low)).expand(n_paths, steps)
    p = torch.arange(size, dtype=torch.float64)
    d2 = (p[:, None] - row[..., None, None]) ** 2 + (p[None, :] - col[..., None, None]) ** 2
    return torch.exp(-d2 / (2 * radius ** 2))


def noise_maps(map: torch.Tensor, sigmas: Sequence[float], *, repeats: int = 50,
               generator: torch.Generator | int) -> torch.Tensor:
    """Noisy copies of a map for the noise test (Fig. 3): ``map + σ·ε`` with ε ~ N(0, I), drawn anew per copy.

    map: ``(*shape)`` real tensor; sigmas: non-negative noise standard deviations; repeats: copies per σ (50 in the
    paper); generator: a ``torch.Generator`` or an int seed (the same seed gives the same maps). Returns
    ``(len(sigmas), repeats, *shape)`` on the map's device, in its floating dtype.
    """
    _validate.tensor(map, "map", floating=True)
    _validate.finite(map, "map")
    repeats = _validate.positive_int(repeats, "repeats")
    g = _validate.generator(generator, why="to draw the noise")
    if isinstance(sigmas, (str, bytes)) or not isinstance(sigmas, Sequence) or len(sigmas) == 0:
        raise TypeError(f"sigmas must be a non-empty sequence of numbers, got {sigmas!r}")
    s = torch.tensor([_validate.number(v, "sigmas") for v in sigmas], dtype=map.dtype)
    if bool((s < 0).any()) or not bool(torch.isfinite(s).all()):
        raise ValueError(f"sigmas must be finite and non-negative, got {list(sigmas)}")
    eps = torch.randn((len(s), repeats, *map.shape), generator=g, dtype=map.dtype, device=g.device)
    return map + s.view(-1, 1, *[1] * map.ndim).to(map.device) * eps.to(map.device)


@functools.lru_cache(maxsize=8)
def _ground_cost(h: int, w: int) -> np.ndarray:
    """Euclidean distances (in pixels) between the centres of the pixels of an h×w grid, row-major."""
    rows, cols = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")
    xy = np.stack([rows.ravel(), cols.ravel()], axis=1)
    return np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))


def wasserstein(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1-Wasserstein (earth mover's) distance between maps taken as distributions of mass over pixel positions.

    Each map becomes |map| / Σ|map| (NaN where a map is all 0); the ground cost is the Euclidean distance between
    pixel centres, in pixels, so a unit mass moved by k pixels costs k. Solved exactly by POT's network simplex
    (``ot.emd2``). As the cost is a metric, W1(u, v) depends on u − v only (Kantorovich–Rubinstein): mass common to
    both stays put, so we transport the positive part of u − v onto its negative part, which gives the same optimum
    as the full problem on about half the pixels per side (4–8× faster). a, b: ``(..., H, W)`` real tensors whose
    leading dims broadcast. Returns the broadcast batch shape, float64, on a's device. 0 = identical distributions.
    """
    # Not a hot path: Figs. 2–3 only. ot.emd2 solves one pair at a time on the CPU (a linear programme, about
    # 0.05–0.1 s per pair of 32×32 maps); we loop over the pairs in Python. POT is imported here, not with
    # faithlab: only this check needs it.
    ot = require("ot", "reco_mege.experiments.sanity.wasserstein")
    for x, name in ((a, "a"), (b, "b")):
        _validate.tensor(x, name)
        if x.ndim < 2 or x.is_complex() or x.dtype == torch.bool:
            raise ValueError(f"{name} must hold real 2-D maps (..., H, W), got {x.dtype} of shape {tuple(x.shape)}")
        _validate.finite(x, name)
    if a.shape[-2:] != b.shape[-2:]:
        raise ValueError(f"b holds maps of shape {tuple(b.shape[-2:])} but a holds {tuple(a.shape[-2:])}")
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    h, w = a.shape[-2:]
    cost = _ground_cost(h, w)
    pa = a.detach().abs().double().expand(*batch, h, w).reshape(-1, h * w).cpu().numpy()
    pb = b.detach().abs().double().expand(*batch, h, w).reshape(-1, h * w).cpu().numpy()
    out = np.full(len(pa), np.nan)
    for i, (u, v) in enumerate(zip(pa, pb)):
        if u.sum() > 0 and v.sum() > 0:
            diff = u / u.sum() - v / v.sum()
            give, take = diff > 0, diff < 0
            mass = diff[give].sum()
            out[i] = 0.0 if mass == 0 else mass * ot.emd2(diff[give] / mass, -diff[take] / -diff[take].sum(),
                                                          cost[np.ix_(give, take)], numItermax=10_000_000)
    return torch.from_numpy(out).reshape(batch).to(a.device)


def distance_frame(reference_map: torch.Tensor, maps: torch.Tensor, *, kinds: Sequence[str] = KINDS,
                   coords: Mapping[str, Sequence] | None = None, channel_dim: int | None = None,
                   top_fraction: float = 0.1, data_range: float | None = None) -> pd.DataFrame:
    """Distances between a reference map and a batch of maps, as a tidy frame (one row per map × kind).

    reference_map: ``(H, W)`` (or ``(C, H, W)`` with ``channel_dim``); maps: ``(*lead, H, W)`` (channels likewise).
    kinds: from :data:`KINDS` plus :data:`faithlab.metrics.papers.reco_mege.distances.DISTANCES`. coords: one entry per
    leading axis of ``maps``, in order, column name → the values along that axis (e.g. ``{"sigma": sigmas, "repeat":
    range(repeats)}``); default ``axis0``, ``axis1``, … holding indices. top_fraction, data_range: as in
    :func:`map_distance` (Dice, SSIM; SSIM's default range is the reference's max − min).

    Returns columns ``*coords, "distance", "value"``; ``frame.attrs["seconds"]`` holds each kind's mean computation
    time per map (seconds; the Wasserstein one includes the transfer to numpy).
    """
    _validate.tensor(reference_map, "reference_map")
    _validate.tensor(maps, "maps")
    if isinstance(kinds, str) or not kinds:
        raise ValueError(f"kinds must be a non-empty sequence of names from {KINDS + DISTANCES}, got {kinds!r}")
    for k in kinds:
        _validate.one_of(k, "kinds", tuple(dict.fromkeys(KINDS + DISTANCES)))
    n_map = 2 if channel_dim is None else 3
    lead = tuple(maps.shape[:-n_map])
    if reference_map.ndim != n_map or maps.shape[-n_map:] != reference_map.shape:
        raise ValueError(f"maps must be (*lead, {', '.join(map(str, reference_map.shape))}) for reference_map of "
                         f"shape {tuple(reference_map.shape)} (channel_dim={channel_dim}), got {tuple(maps.shape)}")
    coords = dict(coords) if coords is not None else {f"axis{i}": range(n) for i, n in enumerate(lead)}
    if [len(v) for v in coords.values()] != list(lead):
        raise ValueError(f"coords must give one sequence per leading axis of maps {lead}, got lengths "
                         f"{ {k: len(v) for k, v in coords.items()} }")
    grid = pd.MultiIndex.from_product([list(v) for v in coords.values()], names=list(coords)).to_frame(index=False)
    frames, seconds = [], {}
    for kind in kinds:
        start = time.perf_counter()
        if kind == "wasserstein":
            ref = reference_map if channel_dim is None else reference_map.double().mean(channel_dim)
            mp = maps if channel_dim is None else maps.double().mean(channel_dim)
            values = wasserstein(ref, mp)
        else:
            values = map_distance(reference_map, maps, kind=kind, channel_dim=channel_dim, top_fraction=top_fraction,
                                  data_range=data_range)
        seconds[kind] = (time.perf_counter() - start) / max(1, math.prod(lead))
        frames.append(grid.assign(distance=kind, value=values.double().cpu().reshape(-1).numpy()))
    frame = pd.concat(frames, ignore_index=True)
    frame.attrs["seconds"] = seconds
    return frame

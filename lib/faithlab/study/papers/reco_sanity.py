"""ReCo/MeGe's sanity checks of distances between explanation maps (Fel & Vigouroux 2020, §4.3, Figs. 2–3).

Fig. 2 (spatial correlation): a point of interest moves across the image; the distance between the first map and
each later one should grow with the displacement. Fig. 3 (noise test): isotropic Gaussian noise of growing σ is
added to a map; the distance between the clean map and each noisy copy should grow with σ. Six distances are
checked: 1-Wasserstein (the earth mover's distance of POT, the paper's ref. [9]), Sørensen–Dice, Spearman, SSIM,
ℓ1 and ℓ2. The five tensor distances come from :func:`faithlab.metrics.papers.reco_mege.distances.map_distance`; the
Wasserstein distance is solved here, pair by pair, with ``ot.emd2``. A distance passes a check when the Spearman
correlation between the displacement (or σ) and the distance is positive and strong and lies above its chance level, the
same correlation with the pairing of maps and displacement shuffled (:func:`monotonicity`). Claim R4, "all six distances
pass both checks", is decided over the distances × checks by :func:`claim_sanity_checks`.
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

from faithlab.study import verdicts
from faithlab._optional import require
from faithlab.metrics.papers.reco_mege.distances import DISTANCES, map_distance
from faithlab.metrics.statistics import rankdata, spearman

__all__ = ["KINDS", "LABELS", "moving_point_maps", "random_paths", "noise_maps", "wasserstein", "distance_frame",
           "monotonicity", "unit_spearman", "claim_sanity_checks"]

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
    ot = require("ot", "reco_sanity.wasserstein")
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


def monotonicity(frame: pd.DataFrame, *, x: str = "step", by: str = "distance", value: str = "value",
                 threshold: float = 0.9, n_draws: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Does each distance grow with ``x``? The paper's criterion (§4.3): a monotone positive relation.

    frame: tidy rows (e.g. from :func:`distance_frame`); x: the column of the displacement or noise level; by: the
    column naming the distance. Per group: ``spearman`` = Spearman ρ between x and the distance over every row
    (every repeat; NaN distances dropped, ``n`` rows used), ``spearman of means`` = ρ between x and the mean
    distance per x, ``non-decreasing means`` = whether the mean distance never falls as x grows, ``sign`` of ρ, and
    ``passes`` = ρ ≥ ``threshold`` (kept in column ``threshold``; rule fixed before looking: a strong monotone
    positive relation over all rows). Chance level: ``null low``, ``null median``, ``null high`` = the central
    ``level`` range (column ``null level``) of ρ over ``n_draws`` shuffles of which distance goes with which x
    (generator ``seed``; NaN with fewer than 3 rows or a constant column); ``at chance`` = ρ is undefined or lies
    within that range (the check cannot tell the distance from one unrelated to x), ``above chance`` = ρ > null high.
    Returns one row per group, in order of first appearance.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    for arg, col in (("x", x), ("by", by), ("value", value)):
        if col not in frame.columns:
            raise ValueError(f"{arg}={col!r} is not a column of frame; columns: {list(frame.columns)}")
    threshold = _validate.number(threshold, "threshold")
    n_draws = _validate.positive_int(n_draws, "n_draws")
    if n_draws < 20:
        raise ValueError(f"n_draws must be at least 20 (a chance range needs them), got {n_draws}")
    level = _validate.number(level, "level")
    if not 0.5 <= level < 1:
        raise ValueError(f"level must lie in [0.5, 1), got {level!r}")
    rows = []
    for name, g in frame.groupby(by, sort=False):
        g = g.dropna(subset=[value])
        means = g.groupby(x)[value].mean().sort_index()
        rho = _rho(g[x], g[value]) if len(g) > 1 else math.nan
        null = _shuffled_rho(g[x], g[value], n_draws=n_draws, level=level, seed=seed)
        low, median, high = (null.low, null.median, null.high) if null is not None else (math.nan,) * 3
        rows.append({by: name, "spearman": rho, "spearman of means": _rho(means.index, means) if len(means) > 1
                     else math.nan, "non-decreasing means": bool((np.diff(means.to_numpy()) >= 0).all()),
                     "sign": np.sign(rho), "n": len(g), "passes": bool(rho >= threshold), "threshold": threshold,
                     "null low": low, "null median": median, "null high": high,
                     "null draws": len(null.draws) if null is not None else 0, "null level": level,
                     "at chance": bool(null is None or math.isnan(rho) or null.contains(rho)),
                     "above chance": bool(null is not None and rho > high)})
    return pd.DataFrame(rows)


def _rho(x, y) -> float:
    return float(spearman(torch.tensor(np.asarray(x, dtype=np.float64)), torch.tensor(np.asarray(y, dtype=np.float64))))


def _shuffled_rho(x, y, *, n_draws: int, level: float, seed: int) -> verdicts.Null | None:
    """The chance level of ρ(x, y): ``n_draws`` Spearman ρ with y's rows permuted (generator ``seed``: every group of
    the same length gets the same permutations), batched. A permutation moves the ranks, not their values, so each
    draw is the Pearson correlation of x's fixed centred ranks with y's permuted ones: one gather and one product
    (:func:`faithlab.study.verdicts.null_draws` draws the same null one shuffle at a time). None with fewer than 3 rows
    or a constant column (ρ undefined in every draw)."""
    xs = torch.tensor(np.asarray(x, dtype=np.float64))
    ys = torch.tensor(np.asarray(y, dtype=np.float64))
    n = xs.numel()
    if n < 3:
        return None
    rx, ry = rankdata(xs), rankdata(ys)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = float(rx.norm() * ry.norm())
    if scale == 0:
        return None
    draws = (ry[_permutations(n, n_draws, int(seed))] @ rx) / scale
    return verdicts.Null("ρ with the pairing of maps and x shuffled", tuple(draws.tolist()), level)


@functools.lru_cache(maxsize=4)
def _permutations(n: int, n_draws: int, seed: int) -> torch.Tensor:
    """``(n_draws, n)`` random permutations of range(n) from generator ``seed`` (cached: the checks share them)."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand((n_draws, n), generator=g, dtype=torch.float64).argsort(dim=1)


def unit_spearman(frame: pd.DataFrame, *, x: str, unit: str, by: str = "distance",
                  value: str = "value") -> pd.DataFrame:
    """Per distance (``by``) and independent unit (``unit``: a noise series, a path), the Spearman ρ between ``x``
    (the noise level, the step) and the distance over that unit's maps (NaN distances dropped; NaN with fewer than 3
    maps or a constant column) → rows (``by``, ``unit``, ``spearman``, ``n``)."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    for arg, col in (("x", x), ("unit", unit), ("by", by), ("value", value)):
        if col not in frame.columns:
            raise ValueError(f"{arg}={col!r} is not a column of frame; columns: {list(frame.columns)}")
    rows = []
    for (name, u), g in frame.groupby([by, unit], sort=False):
        g = g.dropna(subset=[value])
        rho = _rho(g[x], g[value]) if len(g) >= 3 else math.nan
        rows.append({by: name, unit: u, "spearman": rho, "n": len(g)})
    return pd.DataFrame(rows)


def claim_sanity_checks(units: pd.DataFrame, *, threshold: float | None = None) -> verdicts.Claim:
    """Study check R4 (§4.3, Figs. 2–3): every candidate distance grows with the displacement of a point of interest
    and with the noise added to an image, decided by its rule (``verdicts.rule("R4")``; ``threshold`` overrides its
    margin).

    units: :func:`unit_spearman` rows of the checks concatenated with a ``check`` column (e.g. "Fig. 2 (moving
    point)" over :func:`random_paths`, "Fig. 3 (noise)" over the noise series of :func:`noise_maps`): per distance
    and independent unit, the Spearman ρ between the displacement (or σ) and the distance. Per (check × distance)
    cell: the mean ρ over the units, its t interval on the units (:func:`faithlab.study.verdicts.effect`), judged above the
    margin (a strong monotone positive relation); the paper says "all six pass both", so every cell must hold. The
    null: ρ = 0, a distance unrelated to the displacement. No model is trained: the units are the independent noise
    draws and paths. A check of our reconstruction of the paper's lost masks, so a study check. Table: one row per
    cell."""
    rule = verdicts.rule("R4")
    if not isinstance(units, pd.DataFrame):
        raise TypeError(f"units must be a pandas DataFrame, got {type(units).__name__}")
    missing = [c for c in ("check", "distance", "spearman") if c not in units.columns]
    if missing:
        raise ValueError(f"units lacks the columns {missing}: build it from unit_spearman(...) frames with a 'check' "
                         "column")
    cells, rows = {}, []
    for (check, kind), part in units.groupby(["check", "distance"], sort=False):
        name = f"{LABELS.get(kind, kind)} in {check}"
        rho = part["spearman"].to_numpy(float)
        if int((~np.isnan(rho)).sum()) < 2:
            cells[name] = None
            rows.append({"check": check, "distance": kind, "units": int((~np.isnan(rho)).sum()),
                         "outcome": "undecided"})
            continue
        j = verdicts.judge(verdicts.mean_interval(rho), rule, what=name, margin=threshold, _units=(rho, None))
        cells[name] = j
        i = j.interval
        rows.append({"check": check, "distance": kind, "mean ρ": i.estimate, "low": i.low, "high": i.high,
                     "lowest unit ρ": float(np.nanmin(rho)), "margin": j.margin, "outcome": j.outcome,
                     "units": i.units})
    if not cells:
        raise ValueError("units must hold at least one (check × distance) cell")
    table = pd.DataFrame(rows)
    v = verdicts.decide(cells, rule)
    n_units = int(table["units"].min())

    def listed(frame: pd.DataFrame) -> str:
        return "; ".join(f"{c}: " + ", ".join(f"{LABELS.get(d, d)} {m:.2f}" for d, m in zip(g["distance"],
                                                                                             g["mean ρ"]))
                         for c, g in frame.groupby("check", sort=False) if "mean ρ" in g)

    return verdicts.Claim(
        rule.claim, rule=rule,
        premise="each check's units are independent: a fresh noise draw per series (Fig. 3), a freshly drawn path per "
                "moving point (Fig. 2); the null of every cell is ρ = 0 (a distance unrelated to the displacement); "
                "the paper's own moving-point masks are lost, so the check tests our reconstruction of them",
        paper_value="Figs. 2–3: all six pass; SSIM and ℓ2 have higher variance",
        our_value=f"{int((table.outcome == 'holds').sum())} of {len(table)} (check × distance) cells hold; mean ρ "
                  f"over {n_units}+ units per cell: {listed(table)}",
        verdict=v, table=table, units=n_units, trained=False)  # synthetic maps with a known displacement

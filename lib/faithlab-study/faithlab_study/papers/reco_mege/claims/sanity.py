"""Claim R4 on ReCo/MeGe's sanity checks of distances (§4.3, Figs. 2–3): a distance passes a check when the
Spearman correlation between the displacement (or σ) and the distance is positive and strong and lies above its
chance level, the same correlation with the pairing of maps and displacement shuffled (:func:`monotonicity`,
:func:`unit_spearman`). R4, "all six distances pass both checks", is decided over the distances × checks by
:func:`claim_sanity_checks`. The maps and distances of the checks are
:mod:`faithlab_study.papers.reco_mege.experiments.sanity`; its names are also reachable here, so that this module
keeps the checks and the claim under one name (the notebook ``reco_mege/distances`` reads both through it).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import torch

from faithlab import _validate

from faithlab_study import verdicts
from faithlab_study.verdicts.decisions import OUTCOMES
from faithlab_study.papers.reco_mege.claims.registration import CHECKS
from faithlab.metrics.statistics import rankdata, spearman
from faithlab_study.papers.reco_mege.experiments.sanity import (  # noqa: F401 - re-exported (the checks)
    KINDS, LABELS, distance_frame, moving_point_maps, noise_maps, random_paths, wasserstein)

__all__ = ["monotonicity", "unit_spearman", "claim_sanity_checks"]


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
    (:func:`faithlab_study.verdicts.null_draws` draws the same null one shuffle at a time). None with fewer than 3 rows
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


@CHECKS.registered(
    "R4", claim="R4: all six distances pass both sanity checks (monotone positive relation)",
    statistic=("per (check × distance) cell, the mean over independent units of the Spearman ρ between the "
               "displacement (Fig. 2: a freshly drawn path per unit) or the noise σ (Fig. 3: a fresh noise series "
               "per unit) and the distance"),
    margin=0.9,
    margin_source=("convention (the paper states no number for 'a monotonous positive correlation'): ρ of 0.9, a "
                   "strong monotone relation"),
    over="(check × distance) cells", null="ρ = 0: a distance unrelated to the displacement or σ",
    premises=["the units are independent draws (paths, noise series)"], unit="path (Fig. 2) or noise series (Fig. 3)",
    note=("reformulated so it can fail with an interval over independent units (it was decided on point estimates); "
          "a study check because the paper's moving-point masks are lost and the maps are our reconstruction; no "
          "model is trained, so the replica rule does not apply"),
    fingerprint="81555b6592a1",
)
def claim_sanity_checks(units: pd.DataFrame, *, threshold: float | None = None) -> verdicts.Claim:
    """Study check R4 (§4.3, Figs. 2–3): every candidate distance grows with the displacement of a point of interest
    and with the noise added to an image, decided by its rule (``verdicts.rule("R4")``; ``threshold`` overrides its
    margin).

    units: :func:`unit_spearman` rows of the checks concatenated with a ``check`` column (e.g. "Fig. 2 (moving
    point)" over :func:`random_paths`, "Fig. 3 (noise)" over the noise series of :func:`noise_maps`): per distance
    and independent unit, the Spearman ρ between the displacement (or σ) and the distance. Per (check × distance)
    cell: the mean ρ over the units, its t interval on the units (:func:`faithlab_study.verdicts.effect`), judged above the
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
        our_value=", ".join(f"{o} in {int((table.outcome == o).sum())}" for o in OUTCOMES
                            if (table.outcome == o).any())
                  + f" of {len(table)} (check × distance) cells; mean ρ "
                  f"over {n_units}+ units per cell: {listed(table)}",
        verdict=v, table=table, units=n_units, trained=False)  # synthetic maps with a known displacement

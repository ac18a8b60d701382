"""The power analysis of a claim, with the interval that decides it (a t interval on the replica-level statistics).

Under :func:`faithlab.study.verdicts.replicated` every judged cell records the data its interval rested on
(:data:`faithlab.study.verdicts.decisions.RECORDER`). :func:`design_needed` estimates, per cell, the effect against its
margin and the between- and within-replica variance (one-way random-effects ANOVA), then the probability that a
design of R replicas × n units per replica decides the cell (its t interval wholly on one side of the margin:
:func:`faithlab.study.verdicts.intervals.decided_probability`, noncentral t). It returns the smallest design of
:data:`REPLICA_OPTIONS` × :data:`UNIT_FACTORS` that decides the weakest cell with probability ≥ :data:`TARGET`.
"""

from __future__ import annotations

import numpy as np

from faithlab.study.verdicts import intervals as iv
from faithlab.study.verdicts.decisions import DECISION_LEVEL

__all__ = ["variance_components", "design_needed", "REPLICA_OPTIONS", "UNIT_FACTORS", "TARGET"]

REPLICA_OPTIONS = (3, 5, 8, 12)
"""Replica counts the power analysis tries."""
UNIT_FACTORS = (1, 2, 4)
"""Multiples of the current units per replica it tries (after more replicas at the current units)."""
TARGET = 0.8
"""Probability of a decided cell the power analysis asks of a design."""


def variance_components(x, groups) -> tuple[float, float, float, int, float]:
    """Mean of the replica means, between-replica variance (floored at 0), within-replica variance, replicas and
    mean units per replica of per-unit values ``x`` with replica codes ``groups`` (one-way random-effects ANOVA)."""
    x = iv.as_array(x, "x")
    codes = np.asarray(groups)
    keep = ~np.isnan(x)
    x, codes = x[keep], codes[keep]
    codes = np.unique(codes, return_inverse=True)[1].reshape(-1)
    k = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=k).astype(float)
    means = np.bincount(codes, weights=x, minlength=k) / np.maximum(counts, 1)
    within = float(((x - means[codes]) ** 2).sum() / max(1.0, counts.sum() - k))
    n_bar = float(counts.mean())
    between = float(means.var(ddof=1)) - within / n_bar if k > 1 else 0.0
    return float(means.mean()), max(0.0, between), within, k, n_bar


def _cells(records) -> list[tuple[float, float, float, int, float, bool]]:
    """Per recorded judgement with data: (effect − margin in the paper's direction, var between, var within,
    replicas, units per replica, whether n can grow); cells whose numbers are not finite are left out."""
    cells = []
    for judgement, data in records:
        if data is None:
            continue
        cell = _cell(judgement, data)
        if cell is not None and all(np.isfinite(v) for v in cell[:5]):
            cells.append(cell)
    return cells


def _cell(judgement, data):
    """One judged cell's (effect − margin in the paper's direction, var between, var within, replicas, units per
    replica, whether n can grow), or None when it rests on one model (no replica to add)."""
    values, groups = data
    values = np.asarray(values, dtype=float)
    sign = 1 if judgement.direction == "above" else -1
    boundary = _deciding_boundary(judgement)
    if groups is None:
        if judgement.interval.method != "t on replica statistics":
            return None
        v = values[~np.isnan(values)]
        if v.size < 2:
            return None
        return (sign * (float(v.mean()) - boundary), float(v.var(ddof=1)), 0.0, v.size,
                judgement.interval.units / max(v.size, 1), False)
    if len(np.unique(groups)) < 2:
        return None
    mean, vb, vw, k, n = variance_components(values, groups)
    return (sign * (mean - boundary), vb, vw, k, n, True)


def _deciding_boundary(judgement) -> float:
    """The boundary whose clearing decides the cell soonest. A cell is decided once its interval clears either the
    value of no effect (present or reversed) or the margin (holds, or inside the band of no meaningful effect), so
    the boundary farther from the estimate is cleared first; a rule with one boundary has only its margin. The
    chance of a decision computed against it is a lower bound (:func:`faithlab.study.verdicts.decisions.outcome_of`
    decides on either)."""
    estimate, zero, margin = judgement.interval.estimate, judgement.zero, judgement.margin
    if not np.isfinite(estimate) or judgement.sign * (margin - zero) <= 0:
        return margin
    return max((margin, zero), key=lambda b: abs(estimate - b))


def design_needed(records, *, target: float = TARGET) -> str:
    """The smallest design (R replicas × n units per replica) that decides the claim's undecided cells (those whose
    interval reaches both the value of no effect and a margin) with probability ≥ ``target`` each: "needs 5 replicas × 40 units (weakest
    undecided cell decided with P 0.61 now)", "needs 8 replicas × 80 units …", "3 replicas × 40 units suffice …"
    (an undecided cell the current design decides most of the time), or "beyond 12 replicas × 4 n: …" when the
    weakest effect sits near its margin; "every cell decided at R replicas × n units" when no cell is undecided;
    "" when nothing was recorded."""
    if not records:
        return ""
    open_cells = [(j, d) for j, d in records if j.outcome == "undecided"]
    if not open_cells:
        decided = [c for c in (_cell(j, d) for j, d in records if d is not None) if c is not None]
        if not decided:
            return "every cell decided"
        return (f"every cell decided at {max(c[3] for c in decided)} replicas × "
                f"{int(round(min(c[4] for c in decided)))} units")
    cells = _cells(open_cells)
    if not cells:
        return "an undecided cell rests on one model: more replicas of it would decide it"

    def weakest(r: int, factor: float) -> float:
        return min(iv.decided_probability(d, vb, vw, r, n * (factor if grows else 1), margin=0.0,
                                          level=DECISION_LEVEL)
                   for d, vb, vw, _, n, grows in cells)

    current_r = max(c[3] for c in cells)
    current_n = int(round(min(c[4] for c in cells)))
    now = weakest(current_r, 1)
    for factor in UNIT_FACTORS:
        for r in REPLICA_OPTIONS:
            if factor == 1 and r < current_r:
                continue
            if weakest(r, factor) >= target:
                n = current_n * factor
                if r <= current_r and factor == 1:
                    return (f"{current_r} replicas × {n} units suffice (weakest undecided cell decided with P "
                            f"{now:.2f} at this design)")
                return f"needs {r} replicas × {n} units (weakest undecided cell decided with P {now:.2f} now)"
    return (f"beyond {REPLICA_OPTIONS[-1]} replicas × {current_n * UNIT_FACTORS[-1]} units: the weakest undecided "
            f"effect sits near a boundary (decided with P {now:.2f} now)")

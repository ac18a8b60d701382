"""The power analysis of a claim, with the interval that decides it (a t interval on the replica-level statistics).

Under :func:`faithlab_study.verdicts.replicated` every judged cell records the data its interval rested on
(:data:`faithlab_study.verdicts.decisions.RECORDER`). :func:`design_needed` estimates, per cell, the effect against its
margin and the between- and within-replica variance (one-way random-effects ANOVA), then the probability that a
design of R replicas × n units per replica decides the cell (its t interval wholly on one side of the margin:
:func:`faithlab_study.verdicts.intervals.decided_probability`, noncentral t). It returns the smallest design of
:data:`REPLICA_OPTIONS` × :data:`UNIT_FACTORS` that decides the weakest cell with probability ≥ :data:`TARGET`.
"""

from __future__ import annotations

import math

import numpy as np

from faithlab_study.verdicts import intervals as iv
from faithlab_study.verdicts.decisions import DECISION_LEVEL

__all__ = ["variance_components", "design_needed", "prospective", "verdict_tree", "tree_cells", "REPLICA_OPTIONS",
           "UNIT_FACTORS", "TARGET", "SETS"]

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
        if judgement.interval.method not in ("t on replica statistics", iv.FISHER):
            return None  # a Fisher-z cell is simulated as a t on its correlations (close away from ±1)
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
    chance of a decision computed against it is a lower bound (:func:`faithlab_study.verdicts.decisions.outcome_of`
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


# ---- the power of the whole rule before the data (issue 90, item 6)
SETS = 200
"""Simulated data sets per design of :func:`prospective`."""


def verdict_tree(decided, verdict):
    """The decisions that make ``verdict``: the :data:`~faithlab_study.verdicts.decisions.DECIDED` entry that returned
    it (the last one when none did: a claim that rewrote its verdict's reason) and, for a claim of parts, the entries
    of its parts, recursively → ``("cells", rule, cells)`` or ``("parts", rule, {name: tree})``; None when nothing was
    decided. A premise's decision, or a cell judged and then left out, is not in it."""
    if not decided:
        return None
    root = next((e for e in reversed(decided) if e[3] is verdict), decided[-1])

    def build(entry, depth: int = 0):
        kind, rule, what, _ = entry
        if kind == "cells":
            return ("cells", rule, tuple(what))
        parts = {}
        for name, v in what.items():
            found = next((e for e in reversed(decided) if e[3] is v), None)
            parts[name] = build(found, depth + 1) if found is not None and depth < 8 else None
        return ("parts", rule, parts)

    return build(root)


def tree_cells(tree) -> list:
    """Every judged cell of a :func:`verdict_tree` (the cells that enter the verdict)."""
    if tree is None:
        return []
    if tree[0] == "cells":
        return [c for c in tree[2] if c is not None]
    return [c for sub in tree[2].values() for c in tree_cells(sub)]


def _pooled(cells, data_of) -> tuple[float, float, int, float, bool] | None:
    """(var between, var within, replicas, units per replica, whether units can grow) pooled over ``cells`` — the
    mean of each cell's variance components (the claim's cells estimate one statistic's noise together: 2 degrees of
    freedom per cell at R = 3 give no usable variance alone) — or None when no cell recorded its data."""
    stats = [s[1:] for s in (_cell(c, data_of[id(c)]) for c in cells if data_of.get(id(c)) is not None)
             if s is not None and all(np.isfinite(v) for v in s[1:5])]
    if not stats:
        return None
    vb, vw, r, n, grows = zip(*stats)
    return float(np.mean(vb)), float(np.mean(vw)), int(max(r)), float(np.mean(n)), bool(all(grows))


def _paper_effect(rule, cell) -> float | None:
    """The paper's effect of a cell where its rule's margin is half of it (the margin's source says so, and the
    value of no effect is 0 or the margin itself): twice the margin; None otherwise (a convention's margin)."""
    source = str(rule.margin_source).strip().lower()
    if not source.startswith("half") or not (cell.zero == 0 or cell.zero == cell.margin):
        return None
    return 2 * cell.margin


def _simulate_cells(tree, where: str, r: int, factor: float, pooled, rng, sets: int, family: int = 1):
    """(sets,) verdict words of a "cells" decision with every cell's truth at ``where`` ("margin" or "paper"), or None
    when a cell has no paper's effect; ``family`` as :func:`~faithlab_study.verdicts.decide` takes it."""
    from faithlab_study.verdicts.decisions import Judgement, decide, outcome_of

    _, rule, cells = tree
    vb, vw, _, n, grows = pooled
    sd = math.sqrt(max(vb + (vw / (n * (factor if grows else 1))), 0.0))
    simulated = []
    for c in cells:
        if c is None:
            simulated.append([None] * sets)
            continue
        truth = c.margin if where == "margin" else _paper_effect(rule, c)
        if truth is None:
            return None
        means = truth + sd * rng.standard_normal((sets, r))
        est, low, high, se = iv.t_rows(means, DECISION_LEVEL)
        column = []
        for e, lo, hi, s, m in zip(est, low, high, se, means):
            interval = iv.Interval(float(e), float(lo), float(hi), DECISION_LEVEL, "t on replica statistics",
                                   int(round(r * n * factor)), r, r - 1, float(s), tuple(m))
            column.append(Judgement(interval, c.margin, c.direction,
                                    outcome_of(float(lo), float(hi), zero=c.zero, margin=c.margin, sign=c.sign),
                                    c.what, c.zero))
        simulated.append(column)
    return np.array([str(decide([col[i] for col in simulated], rule, family=family)) for i in range(sets)])


def _simulate(tree, where: str, r: int, factor: float, pooled, rng, sets: int, family: int = 1):
    """(sets,) verdict words of ``tree`` (cells or parts) at design (r replicas, units × factor), or None. The parts
    of a claim that needs every part (share 1) are decided with ``family`` = their number, as the claim decides
    them (:func:`~faithlab_study.verdicts.decide`)."""
    from faithlab_study.verdicts.decisions import decide_parts

    if tree is None:
        return None
    if tree[0] == "cells":
        return (_simulate_cells(tree, where, r, factor, pooled[id(tree)], rng, sets, family) if id(tree) in pooled
                else None)
    every = len(tree[2]) if float(tree[1].share) >= 1 else 1
    parts = {name: _simulate(sub, where, r, factor, pooled, rng, sets, every) for name, sub in tree[2].items()}
    if any(v is None for v in parts.values()):
        return None
    return np.array([str(decide_parts({k: v[i] for k, v in parts.items()}, tree[1])) for i in range(sets)])


def _pool_tree(tree, data_of, out: dict) -> bool:
    """Fills ``out`` with each cells-decision's pooled variance (keyed by the decision's id); False when one has
    no recorded data."""
    if tree is None:
        return False
    if tree[0] == "cells":
        p = _pooled([c for c in tree[2] if c is not None], data_of)
        if p is None:
            return False
        out[id(tree)] = p
        return True
    return all(_pool_tree(sub, data_of, out) for sub in tree[2].values())


def whole_rule_rate(records, decided, verdict, *, where: str, replicas: int | None = None, factor: float = 1,
                    present: bool = False, sets: int = SETS, seed: int = 0) -> float | None:
    """The share of ``sets`` simulated data sets in which the claim's whole rule (:func:`verdict_tree`) reproduces
    it (``present``: reproduces it or shows it weaker) when every cell of its verdict sits at ``where`` ("paper": the
    paper's effect, twice a margin that is half of it; "margin"), at ``replicas`` (None: today's) × today's units ×
    ``factor``, with each decision's variance pooled over its cells; None when the verdict rests on no recorded cell
    or a cell has no paper's effect."""
    from faithlab_study.verdicts.words import REPRODUCED, WEAKER

    tree = verdict_tree(decided, verdict)
    pooled: dict = {}
    if not tree_cells(tree) or not _pool_tree(tree, {id(j): d for j, d in records}, pooled):
        return None
    r = max(p[2] for p in pooled.values()) if replicas is None else int(replicas)
    rng = np.random.default_rng([seed, r, int(round(factor * 10)), 0 if where == "margin" else 1])
    v = _simulate(tree, where, r, factor, pooled, rng, sets)
    return None if v is None else float(np.isin(v, [REPRODUCED, WEAKER] if present else [REPRODUCED]).mean())


def prospective(records, decided, verdict, *, target: float = TARGET, sets: int = SETS, seed: int = 0) -> str:
    """The power of the claim's whole rule before the data (:func:`whole_rule_rate`): how often today's design
    reproduces the claim at the paper's effect and shows an effect at the margin present (reproduced or weaker),
    and the smallest design of :data:`REPLICA_OPTIONS` × :data:`UNIT_FACTORS` reaching ``target`` (at the paper's
    effect; at the margin for a convention's margin) with its cost against today's; "" when the verdict rests on no
    recorded cell."""
    tree = verdict_tree(decided, verdict)
    pooled: dict = {}
    if not tree_cells(tree) or not _pool_tree(tree, {id(j): d for j, d in records}, pooled):
        return ""
    r0 = max(p[2] for p in pooled.values())
    n0 = min(p[3] for p in pooled.values())
    grows = all(p[4] for p in pooled.values())

    def rate(where, r, factor):
        return whole_rule_rate(records, decided, verdict, where=where, replicas=r, factor=factor,
                               present=where == "margin", sets=sets, seed=seed)

    at_paper, at_margin = rate("paper", r0, 1), rate("margin", r0, 1)
    where, now = ("paper", at_paper) if at_paper is not None else ("margin", at_margin)
    said = [f"reproduced at twice the margin (the paper's effect that the margin halves, often its smallest) with P "
            f"{at_paper:.2f}" if at_paper is not None
            else "no paper's effect to simulate (a convention's margin)",
            f"an effect at the margin shown present with P {at_margin:.2f}"]
    text = (f"before the data, at {r0} replicas × {int(round(n0))} units ({sets} simulated data sets, the variance "
            f"pooled over the verdict's cells): {'; '.join(said)}")
    if now >= target:
        return f"{text}; this design suffices"
    for factor in UNIT_FACTORS if grows else (1,):
        for r in REPLICA_OPTIONS:
            if r < r0 or (r == r0 and factor == 1):
                continue
            if rate(where, r, factor) >= target:
                aim = "reproduce it at the paper's effect" if where == "paper" else "show an effect at the margin"
                return (f"{text}; to {aim} with P ≥ {target:g} needs {r} replicas × {int(round(n0 * factor))} units "
                        f"(≈ {r / r0:.1f}× the trained models, {r * factor / r0:.1f}× the scored units)")
    units = f" × {UNIT_FACTORS[-1]}× the units" if grows else " (its units cannot grow)"
    return f"{text}; no design up to {REPLICA_OPTIONS[-1]} replicas{units} reaches P {target:g}"

"""The error rate of every statement the decisions make, simulated for the whole rule (not only the interval's
coverage).

:func:`simulate` draws nested data sets whose true effects sit exactly where a statement is false — at the margin
for "holds" and "absent", at the value of no effect for "weaker" (the direction), every cell at the margin for "not
reproduced" of an "every" or "share" claim, one cell short for "reproduced" of an "every" claim, one cell per part at
the boundary for a claim that needs every part (each part a share) — and runs them
through the study's own :func:`~faithlab_study.verdicts.judge`, :func:`~faithlab_study.verdicts.decide` and
:func:`~faithlab_study.verdicts.decide_parts`. Each row is one statement × decision shape × design with the share
of data sets in which the statement was made (wrongly). tests/faithlab_study/verdicts/test_error_rates.py asserts at most
:data:`~faithlab_study.verdicts.decisions.ALPHA` plus twice the simulation's standard error in every row.

The designs (:data:`GRID`): R trained replicas, each with a random offset (the between-replica SD as a ratio to the
SD of one unit) over n units; units normal or skewed (exponential − 1; a replica's mean of n of them is drawn exactly,
from a gamma distribution); cells of unequal variance (SDs from 0.5 to 2 times the first) for the multi-cell shapes;
binary units for a level statistic (a share against its chance value), with a between-replica SD on the logit scale.
"""

from __future__ import annotations

import math

import numpy as np

from faithlab_study.verdicts import intervals as iv
from faithlab_study.verdicts.decisions import ALPHA, decide, decide_parts, judge
from faithlab_study.verdicts.rules import Rule
from faithlab_study.verdicts.words import NOT_REPRODUCED, REPRODUCED, WEAKER

__all__ = ["GRID", "simulate", "rule_for_shape"]

GRID = {
    "replicas": (3, 5, 8),
    "units": (20, 200),
    "ratio": (0.0, 1.0, 2.0),
    "kinds": ("normal", "skewed"),
    "cells": (4, 24),
    "share cells": 10,
    "binary units": (30, 100),
    "logit SD": (0.0, 0.5),
}
"""The simulated designs (see the module docstring)."""
MARGIN = 0.5
"""The margin of the simulated rules, in SDs of one unit (the error rates at the boundaries do not depend on it)."""
FAR = 3.0
"""A cell "far beyond" the margin sits at FAR × MARGIN: it holds nearly always, so one other cell decides."""


def rule_for_shape(decision: str, *, direction: str = "above", margin: float = MARGIN, zero: float = 0.0,
                   share: float | None = None, parts: tuple = ()) -> Rule:
    """A rule of one decision shape for the simulation (not registered)."""
    return Rule(id=f"sim-{decision}", paper="simulation", kind="study check", claim="simulated", statistic="simulated",
                direction=direction, margin=margin, margin_source="simulation", decision=decision, null="none",
                premises=(), replicas=3, units=30, interval="t on replica means", share=share, parts=parts,
                zero=zero)


def _replica_means(rng, kind: str, sets: int, r: int, n: int, ratio: float, truths, scales) -> np.ndarray:
    """(sets, K, r) replica means of cells with true means ``truths`` and unit SDs ``scales`` (K each)."""
    truths, scales = np.asarray(truths, float), np.asarray(scales, float)
    shape = (sets, truths.size, r)
    if kind == "normal":
        within = rng.normal(0.0, 1.0 / math.sqrt(n), shape)
    else:  # the mean of n exponential(1) units − 1, drawn exactly
        within = rng.gamma(n, 1.0 / n, shape) - 1.0
    between = rng.normal(0.0, ratio, shape) if ratio else 0.0
    return truths[None, :, None] + scales[None, :, None] * (between + within)


def _intervals(means: np.ndarray, n: int) -> list[list[iv.Interval]]:
    """The t interval on the replica means of each (set, cell), as :func:`~faithlab_study.verdicts.mean_interval`
    makes it (its kernel, vectorised; tested equal in tests/faithlab_study/verdicts/test_coverage.py)."""
    sets, k, r = means.shape
    est, low, high, se = iv.t_rows(means.reshape(sets * k, r), 0.95)
    out = [iv.Interval(float(e), float(lo), float(hi), 0.95, "t on replica means", r * n, r, r - 1, float(s),
                       tuple(m)) for e, lo, hi, s, m in zip(est, low, high, se, means.reshape(sets * k, r))]
    return [out[i * k:(i + 1) * k] for i in range(sets)]


def _row(statement: str, shape: str, design: dict, made: np.ndarray) -> dict:
    p = float(np.mean(made))
    return {"statement": statement, "shape": shape, **design, "rate": p,
            "se": math.sqrt(max(p * (1 - p), ALPHA * (1 - ALPHA)) / made.size), "data sets": int(made.size)}


def _single(rng, sets: int, design: dict) -> list[dict]:
    """One statistic, three orientations: above (zero 0), below with the value of no effect above the margin, and
    below a small value (one boundary)."""
    rows = []
    r, n, ratio, kind = design["replicas"], design["units"], design["ratio"], design["kind"]
    for shape, rule in (("single, above", rule_for_shape("single")),
                        ("single, below", rule_for_shape("single", direction="below", zero=1.0, margin=0.5)),
                        ("single, below one boundary", rule_for_shape("single", direction="below", margin=MARGIN))):
        one_boundary = rule.sign * (rule.margin - rule.zero) <= 0
        at = {"margin": float(rule.margin), "zero": float(rule.zero)}
        verdicts = {}
        for where, truth in at.items():
            if one_boundary and where == "zero":
                continue
            cells = _intervals(_replica_means(rng, kind, sets, r, n, ratio, [truth], [1.0]), n)
            verdicts[where] = [str(decide(judge(c[0], rule), rule)) for c in cells]
        rows.append(_row("holds (reproduced) at the margin", shape, design,
                         np.array([v == REPRODUCED for v in verdicts["margin"]])))
        rows.append(_row("absent (not reproduced) at the margin", shape, design,
                         np.array([v == NOT_REPRODUCED for v in verdicts["margin"]])))
        if not one_boundary:
            rows.append(_row("present (reproduced or weaker) at no effect", shape, design,
                             np.array([v in (REPRODUCED, WEAKER) for v in verdicts["zero"]])))
    return rows


def _many(rng, sets: int, design: dict, k: int, with_share: bool) -> list[dict]:
    """An "every" claim of k cells and a "share" claim (51 % of GRID["share cells"]), cells of unequal variance."""
    r, n, ratio, kind = design["replicas"], design["units"], design["ratio"], design["kind"]
    rows = []

    def verdicts(rule, truths):
        scales = np.geomspace(0.5, 2.0, len(truths))
        cells = _intervals(_replica_means(rng, kind, sets, r, n, ratio, truths, scales), n)
        return np.array([str(decide([judge(i, rule, what=str(j)) for j, i in enumerate(c)], rule)) for c in cells])

    every = rule_for_shape("every")
    shape = f"every, {k} cells"
    far = [FAR * MARGIN] * (k - 1)
    rows.append(_row("not reproduced, every cell at the margin", shape, design,
                     verdicts(every, [MARGIN] * k) == NOT_REPRODUCED))
    rows.append(_row("reproduced, one cell at the margin", shape, design,
                     verdicts(every, [MARGIN, *far]) == REPRODUCED))
    rows.append(_row("present (reproduced or weaker), one cell at no effect", shape, design,
                     np.isin(verdicts(every, [0.0, *far]), [REPRODUCED, WEAKER])))
    if with_share:  # the share claim once per design
        m = GRID["share cells"]
        share = rule_for_shape("share", share=0.51)
        need = math.ceil(0.51 * m)
        shape = f"share 51 %, {m} cells"
        short = [FAR * MARGIN] * (need - 1)
        rows.append(_row("reproduced, one cell too few beyond the margin", shape, design,
                         verdicts(share, [*short, *[MARGIN] * (m - need + 1)]) == REPRODUCED))
        rows.append(_row("present, one cell too few beyond no effect", shape, design,
                         np.isin(verdicts(share, [*short, *[0.0] * (m - need + 1)]), [REPRODUCED, WEAKER])))
        rows.append(_row("not reproduced, every cell at the margin", shape, design,
                         verdicts(share, [MARGIN] * m) == NOT_REPRODUCED))
    return rows


def _parts(rng, sets: int, design: dict) -> list[dict]:
    """A claim of two named parts, each one statistic: reproduced needs both."""
    r, n, ratio, kind = design["replicas"], design["units"], design["ratio"], design["kind"]
    part, whole = rule_for_shape("single"), rule_for_shape("parts", share=0.5, parts=("a", "b"))

    def verdicts(truth_b):
        a = _intervals(_replica_means(rng, kind, sets, r, n, ratio, [FAR * MARGIN], [1.0]), n)
        b = _intervals(_replica_means(rng, kind, sets, r, n, ratio, [truth_b], [1.0]), n)
        return np.array([str(decide_parts({"a": decide(judge(x[0], part), part), "b": decide(judge(y[0], part), part)},
                                          whole)) for x, y in zip(a, b)])

    return [_row("reproduced, one part at the margin", "parts", design, verdicts(MARGIN) == REPRODUCED),
            _row("reproduced or weaker, one part at no effect", "parts", design,
                 np.isin(verdicts(0.0), [REPRODUCED, WEAKER]))]


def _every_part(rng, sets: int, design: dict, parts: int = 4) -> list[dict]:
    """A claim that needs every one of ``parts`` parts, each a share of at least one of GRID["share cells"] cells at
    one boundary (margin 0; S1.cumulative's shape): each part decided with ``family`` = parts, as the claim does.
    "Not reproduced" at its least favourable point: in every part, all cells but one shown absent, that one at the
    boundary."""
    r, n, ratio, kind = design["replicas"], design["units"], design["ratio"], design["kind"]
    m = GRID["share cells"]
    part = rule_for_shape("share", share=0.1, margin=0.0)
    names = tuple(str(k) for k in range(parts))
    whole = rule_for_shape("parts", share=1.0, parts=names)

    def verdicts(truths):
        scales = np.geomspace(0.5, 2.0, m)
        drawn = [_intervals(_replica_means(rng, kind, sets, r, n, ratio, truths, scales), n) for _ in names]
        return np.array([str(decide_parts({k: decide([judge(c, part) for c in cells[i]], part, family=parts)
                                           for k, cells in zip(names, drawn)}, whole)) for i in range(sets)])

    shape = f"every part of {parts}, each a share of 1 in {m}"
    return [_row("not reproduced, one cell per part at the boundary, the rest absent", shape, design,
                 verdicts([0.0, *[-FAR * MARGIN] * (m - 1)]) == NOT_REPRODUCED),
            _row("reproduced, every cell at the boundary", shape, design, verdicts([0.0] * m) == REPRODUCED)]


def _level(rng, sets: int, r: int, n: int, sd: float) -> list[dict]:
    """A level statistic: a share of binary units against its chance value 0.5, margin 0.7 (above)."""
    rule = rule_for_shape("single", zero=0.5, margin=0.7)
    groups = np.repeat(np.arange(r), n)
    rows = []
    design = {"replicas": r, "units": n, "ratio": sd, "kind": "binary"}
    for where, p in (("margin", 0.7), ("zero", 0.5)):
        # the replica shares' mean is p: logit-normal offsets, recentred so that the truth sits on the boundary
        offsets = rng.normal(0.0, sd, (sets, r))
        pr = 1 / (1 + np.exp(-(math.log(p / (1 - p)) + offsets)))
        pr = np.clip(pr - pr.mean() + p, 0.0, 1.0) if sd else pr
        flags = rng.random((sets, r, n)) < pr[..., None]
        v = [str(decide(judge(iv.share_interval(f.reshape(-1).astype(float), groups=groups), rule), rule))
             for f in flags]
        v = np.array(v)
        if where == "margin":
            rows.append(_row("holds (reproduced) at the margin", "level: a share, chance 0.5", design, v == REPRODUCED))
            rows.append(_row("absent (not reproduced) at the margin", "level: a share, chance 0.5", design,
                             v == NOT_REPRODUCED))
        else:
            rows.append(_row("present (reproduced or weaker) at chance", "level: a share, chance 0.5", design,
                             np.isin(v, [REPRODUCED, WEAKER])))
    return rows


def simulate(*, sets: int = 400, seed: int = 0, grid: dict | None = None):
    """The error rate of each statement × decision shape × design → a pandas DataFrame with columns statement,
    shape, replicas, units, ratio, kind, rate (the share of ``sets`` data sets in which the false statement was
    made), se (its simulation standard error, at least that of a rate of ALPHA) and data sets."""
    import pandas as pd

    g = {**GRID, **(grid or {})}
    rng = np.random.default_rng(seed)
    rows = []
    for r in g["replicas"]:
        for ratio in g["ratio"]:
            for kind in g["kinds"]:
                for n in g["units"]:
                    design = {"replicas": r, "units": n, "ratio": ratio, "kind": kind}
                    rows += _single(rng, sets, design)
                    if n == g["units"][0]:
                        rows += _parts(rng, sets, design)
                        rows += _every_part(rng, max(sets // 4, 20), design)
                        for k in g["cells"]:
                            rows += _many(rng, sets // 2 if k > 8 else sets, design, k, k == g["cells"][0])
        for n in g["binary units"]:
            for sd in g["logit SD"]:
                rows += _level(rng, sets // 2, r, n, sd)
    return pd.DataFrame(rows)

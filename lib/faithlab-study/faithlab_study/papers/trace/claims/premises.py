"""TRACE's mechanism premise and the helpers its claims share.

Every statistic is a mean of per-image values, so every interval is the t interval on the replica means
(:func:`faithlab_study.verdicts.effect`): the trained model is the unit of replication, the images of a replica its units.
Nothing is resampled, so no claim function takes a bootstrap seed.

The mechanism premise (:func:`mechanism_premises`): TRACE's claims are about deleting patches and searching for the
order of deletion, so two things must hold on every data set a claim uses, each decided with the same interval:
(a) deleting patches changes the prediction — along a random deletion order the label's output lies below its clean
value f(x) by more than :data:`PREMISE_DROP` on average over the curve; (b) the search beats random orders — its
score lies beyond a random order's by more than :data:`PREMISE_GAIN` per curve point. A premise that fails makes the
claim "not testable here" (the stand-in lacks the mechanism), one whose interval straddles its threshold makes it
"inconclusive".

The helpers (the unit keys and rows of a frame, per-image values and their replicas, the premise sentence and the
verdict under premises) are public for the claim modules beside this one, and kept out of ``__all__``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.trace.experiments import normalised_auc
from faithlab_study.verdicts import replication

__all__ = ["PREMISE_DROP", "PREMISE_GAIN", "PREMISE_COLUMNS", "mechanism_premises", "premise_outcomes",
           "table1_premises", "search_bound_premises", "cross_premises", "random_test_premises"]

PREMISE_DROP = 0.1
"""Premise (a): the least mean drop of the label's output along a random deletion order, f(x) minus the curve's mean
(a tenth of the probability's range; the chapter's convention, registered with the rules)."""
PREMISE_GAIN = 0.1
"""Premise (b): the least lead of a search over a random order, per curve point (a tenth of the probability's range;
the chapter's convention, registered with the rules)."""

SCORE = "LeRF − MoRF"


# ------------------------------------------------------------------------------------------------------ helpers
def as_array(values) -> np.ndarray:
    return np.array(values, dtype=np.float64).ravel()  # a copy: pandas may hand out read-only arrays


def unit_order(frame: pd.DataFrame) -> list[str]:
    """The unit key of a frame: (replica, image) when it carries a ``replica`` column, else image."""
    return replication.unit_keys(frame, "image")


def rows_where(frame: pd.DataFrame, **where) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for key, value in where.items():
        mask &= (frame[key] == value).to_numpy()
    return frame[mask].sort_values(unit_order(frame))


def per_image(frame: pd.DataFrame, column: str, **where) -> np.ndarray:
    """``column`` of the rows of ``frame`` matching ``where`` (column == value), sorted by (replica,) image."""
    return as_array(rows_where(frame, **where)[column])


def replica_groups(frame: pd.DataFrame, **where):
    """The trained replica of each unit of :func:`per_image` (same rows, same order), or None without a replica
    column: the ``groups`` of :func:`faithlab_study.verdicts.effect`."""
    if not replication.has_replicas(frame):
        return None
    return replication.groups(rows_where(frame, **where))


def replica_mean(values: np.ndarray, groups) -> np.ndarray:
    """Per unit, the mean of ``values`` over its replica's units (over all units without groups): a scale that
    turns a per-image difference into a share of the replica's mean without dividing image by image."""
    if groups is None:
        return np.full(values.shape, float(np.nanmean(values)))
    means = pd.Series(values).groupby(np.asarray(groups)).transform("mean")
    return means.to_numpy(dtype=np.float64)


def curve_points(frame: pd.DataFrame) -> float:
    """The curve points behind a frame's sums (its ``points`` column: t + 1 for a whole curve)."""
    if "points" not in frame.columns:
        raise ValueError("the frame must carry the curves' number of points (column 'points')")
    points = set(frame["points"].astype(int))
    if len(points) != 1:
        raise ValueError(f"the frame's sums must all come from curves of one length, got points {sorted(points)}")
    return float(points.pop())


def interval_text(j: verdicts.Judgement, digits: int = 3) -> str:
    i = j.interval
    return f"{i.estimate:+.{digits}f} [{i.low:+.{digits}f}, {i.high:+.{digits}f}]"


def decided(rule: verdicts.Rule, cells, premises: Sequence[verdicts.Premise]) -> verdicts.Verdict:
    """The rule's verdict over ``cells`` under the claim's premises: "not testable here" when one fails (decided
    before the outcome), "inconclusive" when none fails and one is undecided."""
    failing = [p for p in premises if p.holds is False]
    if failing:
        return verdicts.decide(cells, rule, untestable=failing[0].text)
    v = verdicts.decide(cells, rule)
    undecided = [p for p in premises if p.holds is None]
    return undecided[0].apply(v) if undecided else v


def premise_text(frame: pd.DataFrame, extra: Sequence[verdicts.Premise] = ()) -> str:
    """The premise sentence of a claim from its premise frame (:func:`mechanism_premises`): per part of the
    mechanism, on how many data sets it holds and its weakest data set (the lowest interval end over the threshold),
    every data set where it does not hold named; then ``extra`` premises in full."""
    parts = []
    for part, rows in frame.groupby("premise", sort=False):
        room = (rows["low"] - rows["threshold"]).fillna(-np.inf)  # no interval (one image) counts as the weakest
        weakest = rows.loc[room.idxmin()]
        shown = (f"{weakest['data set']}: {weakest['estimate']:.3f} [{weakest['low']:.3f}, {weakest['high']:.3f}]")
        others = rows[rows["outcome"] != "holds"]
        parts.append(f"{part}, needed above {weakest['threshold']:g} (t on replica means, "
                     f"{int(weakest['replicas'])} replicas, {int(weakest['images'])} images): holds on "
                     f"{int((rows['outcome'] == 'holds').sum())} of {len(rows)} data sets, the weakest {shown}"
                     + ("".join(f"; {r['outcome']} on {r['data set']}" for _, r in others.iterrows())))
    outcome = {True: "holds", False: "fails", None: "undecided"}
    parts += [f"{p.text} ({outcome[p.holds]})" for p in extra]
    return "; ".join(parts) + " (the chapter's mechanism premise; the null: random deletion orders)"


# ----------------------------------------------------------------------------------------- the mechanism premise
_OUTCOME = {True: "holds", False: "fails", None: "undecided"}
PREMISE_COLUMNS = ["data set", "premise", "estimate", "low", "high", "threshold", "outcome", "replicas", "images"]
"""The columns of a premise frame (:func:`mechanism_premises`): one row per premise and data set."""


def premise_row(values, groups, threshold: float, *, data: str, part: str) -> dict:
    values = as_array(values)
    if np.count_nonzero(~np.isnan(values)) < 2:  # no interval on one image (the paper-dry profile): undecided
        estimate = float(np.nanmean(values)) if np.any(~np.isnan(values)) else float("nan")
        return {"data set": data, "premise": part, "estimate": estimate, "low": float("nan"), "high": float("nan"),
                "threshold": float(threshold), "outcome": "undecided",
                "replicas": len(set(np.asarray(groups).tolist())) if groups is not None else 1,
                "images": int(np.count_nonzero(~np.isnan(values)))}
    interval = verdicts.mean_interval(values, groups=groups)
    p = verdicts.premise_interval(interval, threshold=threshold, what=part)
    return {"data set": data, "premise": part, "estimate": interval.estimate, "low": interval.low,
            "high": interval.high, "threshold": float(threshold), "outcome": _OUTCOME[p.holds],
            "replicas": interval.replicas, "images": interval.units}


def mechanism_premises(*, clean=None, random_area=None, search=None, random=None, points: float | None = None,
                       groups=None, data: str, search_name: str = "the search") -> pd.DataFrame:
    """The chapter's mechanism premise on one data set (see the module docstring), each part decided with the t
    interval on the replica means (:func:`faithlab_study.verdicts.premise_interval`) → a premise frame
    (:data:`PREMISE_COLUMNS`, one row per part; :func:`premise_outcomes` turns it into premises).

    (a) with ``clean`` (per image f(x)) and ``random_area`` (per image, the mean over its points of a random-order
    deletion curve): f(x) − area above :data:`PREMISE_DROP`; (b) with ``search`` and ``random`` (per image, the
    search's sum and a random order's sum, oriented so that higher is better) and ``points`` (the curves' points):
    (search − random) / points above :data:`PREMISE_GAIN`. groups: the replica of each image. ``data`` names the
    data set (model, reference, grid)."""
    rows = []
    if clean is not None:
        rows.append(premise_row(as_array(clean) - as_array(random_area), groups, PREMISE_DROP, data=data,
                                 part="(a) deletion lowers the prediction: f(x) minus a random-order curve's mean"))
    if search is not None:
        rows.append(premise_row((as_array(search) - as_array(random)) / float(points), groups, PREMISE_GAIN, data=data,
                                 part=f"(b) {search_name} beats random orders: its lead per curve point"))
    return pd.DataFrame(rows, columns=PREMISE_COLUMNS)


def premise_outcomes(frame: pd.DataFrame) -> list[verdicts.Premise]:
    """The premises of a premise frame (:func:`mechanism_premises`), one per row, in order."""
    holds = {"holds": True, "fails": False, "undecided": None}
    return [verdicts.Premise(holds[r["outcome"]],
                             f"{r['premise']}, {r['data set']}: {r['estimate']:.3f} [{r['low']:.3f}, {r['high']:.3f}] "
                             f"(t on replica means, {int(r['replicas'])} replicas, {int(r['images'])} images), needed "
                             f"above {r['threshold']:g}")
            for _, r in frame.iterrows()]


def table1_premises(scores: pd.DataFrame, *, searches: Sequence[str] = ("T-p",), random: str = "Random",
                    output: str = "probability", premise_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """The mechanism premise on Table 1's data sets (one per model × reference): (a) the ``random`` map's LeRF
    curve (a random deletion order) against f(x), (b) each of ``searches`` against the ``random`` map's
    ΣLeRF − ΣMoRF → a premise frame.

    premise_scores: where (a) is decided (:func:`deletion_frames` scores of the ``random`` map only, e.g. more
    trained replicas and test images than the searches can afford: part (a) needs no search); None: on ``scores``.
    It must hold every model × reference of ``scores``."""
    frame = scores[scores["output"] == output]
    drop = frame if premise_scores is None else premise_scores[premise_scores["output"] == output]
    parts = []
    for (model, ref), cell in frame.groupby(["model", "reference"], sort=False):
        rnd = rows_where(cell, method=random)
        if not len(rnd):
            raise ValueError(f"scores must hold {random!r} (a random order, the premise's null) for {model!r}, {ref!r}")
        points = curve_points(rnd)
        groups = replica_groups(cell, method=random)
        own = rows_where(drop, model=model, reference=ref, method=random)
        if not len(own):
            raise ValueError(f"premise_scores must hold {random!r} for {model!r}, {ref!r} and output {output!r}")
        parts.append(mechanism_premises(clean=as_array(own["f(x)"]), random_area=as_array(own["LeRF"]) / curve_points(own),
                                        groups=replica_groups(own), data=f"{model}, {ref}"))
        for name in searches:
            parts.append(mechanism_premises(search=per_image(cell, SCORE, method=name), random=as_array(rnd[SCORE]),
                                            points=points, groups=groups, data=f"{model}, {ref}", search_name=name))
    return pd.concat(parts, ignore_index=True)


def search_bound_premises(sums: pd.DataFrame, random: pd.DataFrame) -> pd.DataFrame:
    """The mechanism premise on the complete search's data set (:func:`claim_search_bound`'s frames): (a) a random
    order against f(x), (b) the bound CS beyond random orders, for -Le and -Mo → a premise frame."""
    rnd = random.groupby(unit_order(random))["sum"].mean().sort_index().to_numpy(dtype=np.float64)
    points = curve_points(sums)
    grid = f"t = {int(points) - 1}"
    first = sorted(set(sums["objective"]))[0]
    parts = [mechanism_premises(clean=per_image(sums, "f(x)", search="CS", objective=first), random_area=rnd / points,
                                groups=replica_groups(sums, search="CS", objective=first), data=grid)]
    for objective, sign in (("Le", 1.0), ("Mo", -1.0)):
        if objective in set(sums["objective"]):
            parts.append(mechanism_premises(search=sign * per_image(sums, "sum", search="CS", objective=objective),
                                            random=sign * rnd, points=points,
                                            groups=replica_groups(sums, search="CS", objective=objective),
                                            data=f"{grid}, -{objective}", search_name="the bound CS"))
    return pd.concat(parts, ignore_index=True)


def cross_premises(cross: pd.DataFrame, random: pd.DataFrame, *, le: str = "SA-Le", mo: str = "SA-Mo") -> pd.DataFrame:
    """The mechanism premise on the cross-test's data set (:func:`claim_cross_test`'s frames), per model: (a) a
    random order against f(x), (b) ``le`` beyond random orders under LeRF and ``mo`` under MoRF → a premise frame."""
    cross, random = with_model(cross), with_model(random)
    points = curve_points(cross)
    parts = []
    for model in dict.fromkeys(cross["model"]):
        part = cross[cross["model"] == model]
        rnd = random[random["model"] == model].groupby(unit_order(random))["sum"].mean().sort_index().to_numpy(np.float64)
        groups = replica_groups(part, method=le)
        parts += [mechanism_premises(clean=per_image(part, "f(x)", method=le), random_area=rnd / points,
                                     groups=groups, data=f"{model}, t = {int(points) - 1}"),
                  mechanism_premises(search=per_image(part, "LeRF", method=le), random=rnd, points=points,
                                     groups=groups, data=f"{model}, LeRF", search_name=le),
                  mechanism_premises(search=-per_image(part, "MoRF", method=mo), random=-rnd, points=points,
                                     groups=groups, data=f"{model}, MoRF", search_name=mo)]
    return pd.concat(parts, ignore_index=True)


def random_test_premises(curves: pd.DataFrame, *, zero: str = "zero", premise_side: int | None = None
                         ) -> pd.DataFrame:
    """The mechanism premise on the random deletion test's data set (:func:`claim_random_test`'s frame), per model:
    (a) the zero-reference random-order curve at ``premise_side`` (px; None: the 7 × 7 grid when present, else the
    smallest patches) against f(x) → a premise frame."""
    rep = replication.unit_keys(curves)
    side = _premise_side(curves, premise_side)
    auc = normalised_auc(curves, by=[*rep, "model", "reference", "patch side"])
    parts = []
    for model in dict.fromkeys(auc["model"]):
        where = {"model": model, "reference": zero, "patch side": side}
        parts.append(mechanism_premises(clean=per_image(curves, "value", deleted=0, **where),
                                        random_area=per_image(auc, "AUC", **where), groups=replica_groups(auc, **where),
                                        data=f"{model}, zero reference, {side} px patches"))
    return pd.concat(parts, ignore_index=True)


def _premise_side(curves: pd.DataFrame, premise_side: int | None) -> int:
    if premise_side is not None:
        return int(premise_side)
    grid = sorted({int(s) for s in curves.loc[curves["edge"] == 7, "patch side"]}) if "edge" in curves.columns else []
    return grid[0] if grid else int(min(curves["patch side"]))


def with_model(frame: pd.DataFrame) -> pd.DataFrame:
    return frame if "model" in frame.columns else frame.assign(model="the model")



"""TRACE's claims T1–T6 as claim functions, each decided by its pre-registered rule
(``faithlab/study/verdicts/registered/trace.toml``: ``verdicts.rule("T2")`` …), and the chapter's mechanism premise.

Every statistic is a mean of per-image values, so every interval is the t interval on the replica means
(:func:`faithlab.study.verdicts.effect`): the trained model is the unit of replication, the images of a replica its units.
Nothing is resampled, so no claim function takes a bootstrap seed.

The mechanism premise (:func:`mechanism_premises`): TRACE's claims are about deleting patches and searching for the
order of deletion, so two things must hold on every data set a claim uses, each decided with the same interval:
(a) deleting patches changes the prediction — along a random deletion order the label's output lies below its clean
value f(x) by more than :data:`PREMISE_DROP` on average over the curve; (b) the search beats random orders — its
score lies beyond a random order's by more than :data:`PREMISE_GAIN` per curve point. A premise that fails makes the
claim "not testable here" (the stand-in lacks the mechanism), one whose interval straddles its threshold makes it
"inconclusive".

One concept: TRACE's verdicts, from the per-image frames to each claim and its mechanism premise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab.study import verdicts
from faithlab.study.papers.trace import paper
from faithlab.study.papers.trace.frames import normalised_auc, reference_spread

__all__ = ["PREMISE_DROP", "PREMISE_GAIN", "PREMISE_COLUMNS", "mechanism_premises", "premise_outcomes",
           "table1_premises", "search_bound_premises", "cross_premises", "random_test_premises", "claim_search_bound",
           "claim_search_beats_greedy", "claim_beats_methods", "claim_probability_beats_logit", "claim_random_test",
           "claim_cross_test", "claim_reference_robust", "claim_insertion_equals_deletion"]

PREMISE_DROP = 0.1
"""Premise (a): the least mean drop of the label's output along a random deletion order, f(x) minus the curve's mean
(a tenth of the probability's range; the chapter's convention, registered with the rules)."""
PREMISE_GAIN = 0.1
"""Premise (b): the least lead of a search over a random order, per curve point (a tenth of the probability's range;
the chapter's convention, registered with the rules)."""

_SCORE = "LeRF − MoRF"


# ------------------------------------------------------------------------------------------------------ helpers
def _array(values) -> np.ndarray:
    return np.array(values, dtype=np.float64).ravel()  # a copy: pandas may hand out read-only arrays


def _order(frame: pd.DataFrame) -> list[str]:
    """The unit key of a frame: (replica, image) when it carries a ``replica`` column, else image."""
    return ["replica", "image"] if "replica" in frame.columns else ["image"]


def _rows(frame: pd.DataFrame, **where) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for key, value in where.items():
        mask &= (frame[key] == value).to_numpy()
    return frame[mask].sort_values(_order(frame))


def _per_image(frame: pd.DataFrame, column: str, **where) -> np.ndarray:
    """``column`` of the rows of ``frame`` matching ``where`` (column == value), sorted by (replica,) image."""
    return _array(_rows(frame, **where)[column])


def _groups(frame: pd.DataFrame, **where):
    """The trained replica of each unit of :func:`_per_image` (same rows, same order), or None without a replica
    column: the ``groups`` of :func:`faithlab.study.verdicts.effect`."""
    if "replica" not in frame.columns:
        return None
    return _rows(frame, **where)["replica"].astype(str).to_numpy()


def _replica_mean(values: np.ndarray, groups) -> np.ndarray:
    """Per unit, the mean of ``values`` over its replica's units (over all units without groups): a scale that
    turns a per-image difference into a share of the replica's mean without dividing image by image."""
    if groups is None:
        return np.full(values.shape, float(np.nanmean(values)))
    means = pd.Series(values).groupby(np.asarray(groups)).transform("mean")
    return means.to_numpy(dtype=np.float64)


def _points(frame: pd.DataFrame) -> float:
    """The curve points behind a frame's sums (its ``points`` column: t + 1 for a whole curve)."""
    if "points" not in frame.columns:
        raise ValueError("the frame must carry the curves' number of points (column 'points')")
    points = set(frame["points"].astype(int))
    if len(points) != 1:
        raise ValueError(f"the frame's sums must all come from curves of one length, got points {sorted(points)}")
    return float(points.pop())


def _interval_text(j: verdicts.Judgement, digits: int = 3) -> str:
    i = j.interval
    return f"{i.estimate:+.{digits}f} [{i.low:+.{digits}f}, {i.high:+.{digits}f}]"


def _decided(rule: verdicts.Rule, cells, premises: Sequence[verdicts.Premise]) -> verdicts.Verdict:
    """The rule's verdict over ``cells`` under the claim's premises: "not testable here" when one fails (decided
    before the outcome), "inconclusive" when none fails and one is undecided."""
    failing = [p for p in premises if p.holds is False]
    if failing:
        return verdicts.decide(cells, rule, untestable=failing[0].text)
    v = verdicts.decide(cells, rule)
    undecided = [p for p in premises if p.holds is None]
    return undecided[0].apply(v) if undecided else v


def _premise_text(frame: pd.DataFrame, extra: Sequence[verdicts.Premise] = ()) -> str:
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


def _premise_row(values, groups, threshold: float, *, data: str, part: str) -> dict:
    values = _array(values)
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
    interval on the replica means (:func:`faithlab.study.verdicts.premise_interval`) → a premise frame
    (:data:`PREMISE_COLUMNS`, one row per part; :func:`premise_outcomes` turns it into premises).

    (a) with ``clean`` (per image f(x)) and ``random_area`` (per image, the mean over its points of a random-order
    deletion curve): f(x) − area above :data:`PREMISE_DROP`; (b) with ``search`` and ``random`` (per image, the
    search's sum and a random order's sum, oriented so that higher is better) and ``points`` (the curves' points):
    (search − random) / points above :data:`PREMISE_GAIN`. groups: the replica of each image. ``data`` names the
    data set (model, reference, grid)."""
    rows = []
    if clean is not None:
        rows.append(_premise_row(_array(clean) - _array(random_area), groups, PREMISE_DROP, data=data,
                                 part="(a) deletion lowers the prediction: f(x) minus a random-order curve's mean"))
    if search is not None:
        rows.append(_premise_row((_array(search) - _array(random)) / float(points), groups, PREMISE_GAIN, data=data,
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
        rnd = _rows(cell, method=random)
        if not len(rnd):
            raise ValueError(f"scores must hold {random!r} (a random order, the premise's null) for {model!r}, {ref!r}")
        points = _points(rnd)
        groups = _groups(cell, method=random)
        own = _rows(drop, model=model, reference=ref, method=random)
        if not len(own):
            raise ValueError(f"premise_scores must hold {random!r} for {model!r}, {ref!r} and output {output!r}")
        parts.append(mechanism_premises(clean=_array(own["f(x)"]), random_area=_array(own["LeRF"]) / _points(own),
                                        groups=_groups(own), data=f"{model}, {ref}"))
        for name in searches:
            parts.append(mechanism_premises(search=_per_image(cell, _SCORE, method=name), random=_array(rnd[_SCORE]),
                                            points=points, groups=groups, data=f"{model}, {ref}", search_name=name))
    return pd.concat(parts, ignore_index=True)


def search_bound_premises(sums: pd.DataFrame, random: pd.DataFrame) -> pd.DataFrame:
    """The mechanism premise on the complete search's data set (:func:`claim_search_bound`'s frames): (a) a random
    order against f(x), (b) the bound CS beyond random orders, for -Le and -Mo → a premise frame."""
    rnd = random.groupby(_order(random))["sum"].mean().sort_index().to_numpy(dtype=np.float64)
    points = _points(sums)
    grid = f"t = {int(points) - 1}"
    first = sorted(set(sums["objective"]))[0]
    parts = [mechanism_premises(clean=_per_image(sums, "f(x)", search="CS", objective=first), random_area=rnd / points,
                                groups=_groups(sums, search="CS", objective=first), data=grid)]
    for objective, sign in (("Le", 1.0), ("Mo", -1.0)):
        if objective in set(sums["objective"]):
            parts.append(mechanism_premises(search=sign * _per_image(sums, "sum", search="CS", objective=objective),
                                            random=sign * rnd, points=points,
                                            groups=_groups(sums, search="CS", objective=objective),
                                            data=f"{grid}, -{objective}", search_name="the bound CS"))
    return pd.concat(parts, ignore_index=True)


def cross_premises(cross: pd.DataFrame, random: pd.DataFrame, *, le: str = "SA-Le", mo: str = "SA-Mo") -> pd.DataFrame:
    """The mechanism premise on the cross-test's data set (:func:`claim_cross_test`'s frames), per model: (a) a
    random order against f(x), (b) ``le`` beyond random orders under LeRF and ``mo`` under MoRF → a premise frame."""
    cross, random = _with_model(cross), _with_model(random)
    points = _points(cross)
    parts = []
    for model in dict.fromkeys(cross["model"]):
        part = cross[cross["model"] == model]
        rnd = random[random["model"] == model].groupby(_order(random))["sum"].mean().sort_index().to_numpy(np.float64)
        groups = _groups(part, method=le)
        parts += [mechanism_premises(clean=_per_image(part, "f(x)", method=le), random_area=rnd / points,
                                     groups=groups, data=f"{model}, t = {int(points) - 1}"),
                  mechanism_premises(search=_per_image(part, "LeRF", method=le), random=rnd, points=points,
                                     groups=groups, data=f"{model}, LeRF", search_name=le),
                  mechanism_premises(search=-_per_image(part, "MoRF", method=mo), random=-rnd, points=points,
                                     groups=groups, data=f"{model}, MoRF", search_name=mo)]
    return pd.concat(parts, ignore_index=True)


def random_test_premises(curves: pd.DataFrame, *, zero: str = "zero", premise_side: int | None = None
                         ) -> pd.DataFrame:
    """The mechanism premise on the random deletion test's data set (:func:`claim_random_test`'s frame), per model:
    (a) the zero-reference random-order curve at ``premise_side`` (px; None: the 7 × 7 grid when present, else the
    smallest patches) against f(x) → a premise frame."""
    rep = ["replica"] if "replica" in curves.columns else []
    side = _premise_side(curves, premise_side)
    auc = normalised_auc(curves, by=[*rep, "model", "reference", "patch side"])
    parts = []
    for model in dict.fromkeys(auc["model"]):
        where = {"model": model, "reference": zero, "patch side": side}
        parts.append(mechanism_premises(clean=_per_image(curves, "value", deleted=0, **where),
                                        random_area=_per_image(auc, "AUC", **where), groups=_groups(auc, **where),
                                        data=f"{model}, zero reference, {side} px patches"))
    return pd.concat(parts, ignore_index=True)


def _premise_side(curves: pd.DataFrame, premise_side: int | None) -> int:
    if premise_side is not None:
        return int(premise_side)
    grid = sorted({int(s) for s in curves.loc[curves["edge"] == 7, "patch side"]}) if "edge" in curves.columns else []
    return grid[0] if grid else int(min(curves["patch side"]))


def _with_model(frame: pd.DataFrame) -> pd.DataFrame:
    return frame if "model" in frame.columns else frame.assign(model="the model")


# ------------------------------------------------------------------------------------------------------- claims
def _search_bound_cells(sums: pd.DataFrame, random: pd.DataFrame, rule: verdicts.Rule, *, versus: str):
    """The two objectives' cells of T1 (``versus`` "CS": SA's gap to the bound) or of its study check (``versus``
    "Greedy": SA's gain over its greedy start), and the table rows."""
    searches = {"CS", "SA", "Greedy"}
    if not searches <= set(sums["search"]):
        raise ValueError(f"sums must hold the searches {sorted(searches)}, got {sorted(set(sums['search']))}")
    rnd = random.groupby(_order(random))["sum"].mean().sort_index().to_numpy(dtype=np.float64)
    cells, rows, units = {}, [], []
    for objective, sign in (("Le", 1.0), ("Mo", -1.0)):
        if objective not in set(sums["objective"]):
            continue
        raw = {s: _per_image(sums, "sum", search=s, objective=objective) for s in sorted(searches)}
        if not len(raw["CS"]) == len(raw["SA"]) == len(raw["Greedy"]) == len(rnd):
            raise ValueError(f"sums and random must hold the same images for objective {objective!r}")
        groups = _groups(sums, search="CS", objective=objective)
        units.append(len(rnd))
        scale = _replica_mean(sign * (raw["CS"] - rnd), groups)  # a random order's distance to the bound (> 0)
        if versus == "CS":
            stat = sign * (raw["CS"] - raw["SA"]) / scale
            what = f"-{objective}: (CS − SA) / (CS − random order)"
        else:
            stat = sign * (raw["SA"] - raw["Greedy"]) / scale
            what = f"-{objective}: (SA − Greedy) / (CS − random order)"
        j = verdicts.effect(stat, rule=rule, groups=groups, what=what)
        cells[f"-{objective}"] = j
        rows.append({"objective": f"-{objective}", "Σ CS": raw["CS"].mean(), "Σ SA": raw["SA"].mean(),
                     "Σ Greedy": raw["Greedy"].mean(), "Σ random order": rnd.mean(), "statistic": what,
                     "estimate": j.interval.estimate, "low": j.interval.low, "high": j.interval.high,
                     "margin": j.margin, "outcome": j.outcome, "replicas": j.interval.replicas,
                     "images": j.interval.units})
    if not cells:
        raise ValueError("sums must hold the objective 'Le' or 'Mo'")
    return cells, pd.DataFrame(rows), min(units)


def claim_search_bound(sums: pd.DataFrame, random: pd.DataFrame) -> verdicts.Claim:
    """Claim T1 (Fig. 2a): TRACE-SA almost reaches the complete-search (CS) bound, for -Le and for -Mo (rule
    ``T1``).

    sums: :func:`curve_sums` of the searches "CS", "SA" and "Greedy" for the objectives "Le" (ΣLeRF, higher is
    better) and "Mo" (ΣMoRF, lower is better), with a ``replica`` column for several trained models; random:
    :func:`random_order_sums` on the same images and grid. Per image, SA's distance to the bound as a share of a
    random order's distance to it (the replica's mean distance, so that no image divides by its own small span);
    the t interval on the replica means below the rule's margin, in each objective. SA ≥ Greedy and CS ≥ SA hold by
    construction: the first is the study check :func:`claim_search_beats_greedy`, the second bounds the statistic
    at 0. Premises: the mechanism (:func:`search_bound_premises`)."""
    return _search_claim(sums, random, "T1", versus="CS", statistic="(CS − SA) / (CS − random)",
                         paper_value="SA–CS gap 'almost negligible' (Fig. 2a; no number given)")


def _search_claim(sums: pd.DataFrame, random: pd.DataFrame, rule_id: str, *, versus: str, statistic: str,
                  paper_value: str) -> verdicts.Claim:
    """T1 or its study check: SA against ``versus`` ("CS" or "Greedy") by rule ``rule_id``, premises of
    :func:`search_bound_premises`."""
    rule = verdicts.rule(rule_id)
    cells, table, units = _search_bound_cells(sums, random, rule, versus=versus)
    frame = search_bound_premises(sums, random)
    return verdicts.Claim(
        rule.claim, rule=rule, premise=_premise_text(frame), paper_value=paper_value,
        our_value="; ".join(f"{k}: {statistic} {_interval_text(j)}" for k, j in cells.items()),
        verdict=_decided(rule, cells, premise_outcomes(frame)), table=table, units=units)


def claim_search_beats_greedy(sums: pd.DataFrame, random: pd.DataFrame) -> verdicts.Claim:
    """Study check of T1 (rule ``T1.greedy``): SA improves on TRACE-Greedy, its own start. SA starts from Greedy
    and keeps its best, so SA ≥ Greedy holds by construction (a study check, not a paper claim); what can fail is a
    mean gain above 0 (the paper's "constantly outperforms"), or, through a bug that loses the best trajectory, a
    loss. Same frames and premises as :func:`claim_search_bound`; per image SA's gain over Greedy as a share of a
    random order's distance to the bound."""
    return _search_claim(sums, random, "T1.greedy", versus="Greedy", statistic="(SA − Greedy) / (CS − random)",
                         paper_value="SA 'constantly outperforms' Greedy (Fig. 2a); ≥ by construction")


def claim_beats_methods(scores: pd.DataFrame, *, model: str, target: str = "T-p", exclude: tuple[str, ...] = ("T-y",),
                        random: str = "Random", output: str = "probability",
                        premise_scores: pd.DataFrame | None = None) -> verdicts.Claim:
    """Claim T2 for one model (Table 1, rule ``T2``): TRACE-SA-Le−Mo (``target``) beats every attribution method in
    ΣLeRF − ΣMoRF, under every reference, by the rule's margin.

    scores: :func:`deletion_frames` scores (columns model, reference, method, output, image, LeRF, MoRF,
    "LeRF − MoRF", f(x), points; replica for several trained models); the methods are every other method of
    ``model`` but ``exclude`` and ``random`` (a uniform random map: a random deletion order, the null of the
    premise). Per reference and method, per image the method's shortfall from ``target`` as a share of
    ``target``'s mean score over the replica's images (its mean per replica: 1 − method / ``target``); the t
    interval on the replica means above the margin in every cell. TRACE maximises this very score, so that it
    wins at all is close to built in; the margin (half the smallest shortfall in the paper's Table 1) asks that it
    win by as much as the paper's smallest lead. Premises, per reference: deletion lowers the prediction (on
    ``premise_scores`` when given) and ``target`` beats random orders (:func:`table1_premises`)."""
    rule = verdicts.rule("T2")
    frame = scores[(scores["model"] == model) & (scores["output"] == output)]
    methods = [m for m in dict.fromkeys(frame["method"]) if m not in (target, random, *exclude)]
    if target not in set(frame["method"]) or random not in set(frame["method"]) or not methods:
        raise ValueError(f"scores must hold {target!r}, {random!r} (a random order, the premise's null) and another "
                         f"method for model {model!r} and output {output!r}, got {sorted(set(frame['method']))}")
    cells, units = {}, []
    for ref in dict.fromkeys(frame["reference"]):
        tp = _per_image(frame, _SCORE, reference=ref, method=target)
        groups = _groups(frame, reference=ref, method=target)
        scale = _replica_mean(tp, groups)
        for m in methods:
            other = _per_image(frame, _SCORE, reference=ref, method=m)
            if len(other) != len(tp):
                raise ValueError(f"scores must hold {m!r} on the images of {target!r} under reference {ref!r}")
            cells[f"{ref}: {m}"] = verdicts.effect((tp - other) / scale, rule=rule, groups=groups,
                                                   what=f"{ref}: ({target} − {m}) / {target}")
            units.append(len(tp))
    checked = table1_premises(frame, searches=(target,), random=random, output=output,
                              premise_scores=premise_scores)
    premises = premise_outcomes(checked)
    means = frame.groupby("method", sort=False)[_SCORE].mean()
    best = means[methods].idxmax()
    weakest = min(cells.values(), key=lambda j: j.interval.low)
    return verdicts.Claim(
        f"T2 ({model}): TRACE-SA-Le−Mo ({target}) beats every attribution method in ΣLeRF − ΣMoRF (Table 1)",
        rule=rule, premise=_premise_text(checked),
        paper_value=f"{target} above every method in all 18 cells; the best method's shortfall "
                    f"{paper.shortfalls().min():.2f}–{paper.shortfalls().max():.2f} of {target}'s score "
                    f"(ResNet-18, zero: {paper.versus_best('zero')})",
        our_value=f"{target} {means[target]:.2f} vs best method {best} {means[best]:.2f}; smallest shortfall "
                  f"({weakest.what}) {_interval_text(weakest)}",
        verdict=_decided(rule, cells, premises), table=pd.DataFrame(verdicts.judgement_table(cells, model=model)),
        units=min(units))


def claim_probability_beats_logit(scores: pd.DataFrame, *, target: str = "T-p", other: str = "T-y",
                                  random: str = "Random", output: str = "probability",
                                  premise_scores: pd.DataFrame | None = None) -> verdicts.Claim:
    """Claim T2b (Table 1, Sec. 5.2; rule ``T2b``): scored with probabilities, the trajectory optimised for the
    probability (``target``, T-p) beats the one optimised for the logit (``other``, T-y) by a non-negligible
    margin, in every model × reference cell.

    T-p maximises the very score it is judged by, so that it is ahead is built in; the paper's claim is that the
    gap is "non-negligible", and that can fail: per image (T-p − T-y) as a share of T-p's mean score over the
    replica's images, the t interval on the replica means above the margin (half the smallest such gap in the
    paper's Table 1); a gap shown inside the margin is "not reproduced". Premises per cell: deletion lowers the
    prediction (on ``premise_scores`` when given) and both searches beat random orders (the ``random`` map,
    :func:`table1_premises`)."""
    rule = verdicts.rule("T2b")
    frame = scores[scores["output"] == output]
    if not {target, other, random} <= set(frame["method"]):
        raise ValueError(f"scores must hold {target!r}, {other!r} and {random!r} (a random order, the premise's null) "
                         f"for output {output!r}")
    cells, units = {}, []
    for (model, ref), cell in frame.groupby(["model", "reference"], sort=False):
        tp, ty = (_per_image(cell, _SCORE, method=m) for m in (target, other))
        groups = _groups(cell, method=target)
        units.append(len(tp))
        cells[f"{model}, {ref}"] = verdicts.effect((tp - ty) / _replica_mean(tp, groups), rule=rule, groups=groups,
                                                   what=f"{model}, {ref}: ({target} − {other}) / {target}")
    checked = table1_premises(frame, searches=(target, other), random=random, output=output,
                              premise_scores=premise_scores)
    premises = premise_outcomes(checked)
    means = frame.groupby("method")[_SCORE].mean()
    weakest = min(cells.values(), key=lambda j: j.interval.low)
    return verdicts.Claim(
        f"T2b: scored with probabilities, {target} (optimised for the probability) beats {other} (optimised for the "
        "logit) by a non-negligible margin",
        rule=rule, premise=_premise_text(checked),
        paper_value=f"{target} > {other} in all 18 cells, by {paper.probability_gaps().min():.2f}–"
                    f"{paper.probability_gaps().max():.2f} of {target}'s score ('non-negligible')",
        our_value=f"{target} {means[target]:.2f} vs {other} {means[other]:.2f}; smallest gap ({weakest.what}) "
                  f"{_interval_text(weakest)}",
        verdict=_decided(rule, cells, premises), table=pd.DataFrame(verdicts.judgement_table(cells)),
        units=min(units))


def claim_random_test(curves: pd.DataFrame, *, zero: str = "zero", blur: str = "blur",
                      premise_side: int | None = None) -> verdicts.Claim:
    """Claim T3 (Fig. 4; rule ``T3``, two named parts): in the random deletion test, (T3a) under the zero reference
    small patches make the prediction fall faster, and (T3b) the zero − blur gap shrinks as patches grow.

    curves: :func:`random_deletion_frame` rows with a ``model`` column (and ``replica`` for several trained
    models). The area of a curve is the mean of its points (:func:`normalised_auc`), per image. Per model, T3a:
    zero-reference area at the largest patches minus at the smallest; T3b: |zero − blur| of the area at the smallest
    patches minus at the largest; each the t interval on the replica means above its part's margin in every model.
    Premise (a), per model: deletion lowers the prediction under the zero reference at ``premise_side`` (patch side
    in px; None: the chapter's 7 × 7 grid when present, else the smallest patches; :func:`random_test_premises`)."""
    rule, rule_a, rule_b = verdicts.rule("T3"), verdicts.rule("T3a"), verdicts.rule("T3b")
    rep = ["replica"] if "replica" in curves.columns else []
    auc = normalised_auc(curves, by=[*rep, "model", "reference", "patch side"])
    sides = sorted(set(auc["patch side"]))
    if len(sides) < 2 or not {zero, blur} <= set(auc["reference"]):
        raise ValueError(f"curves must hold at least two patch sides and the references {zero!r} and {blur!r}")
    small, large = sides[0], sides[-1]
    faster, shrinks, rows, units = {}, {}, [], []
    for model in dict.fromkeys(auc["model"]):
        area = {(ref, side): _per_image(auc, "AUC", model=model, reference=ref, **{"patch side": side})
                for ref in (zero, blur) for side in (small, large)}
        groups = _groups(auc, model=model, reference=zero, **{"patch side": small})
        units.append(len(area[zero, small]))
        gap_small = np.abs(area[zero, small] - area[blur, small])
        gap_large = np.abs(area[zero, large] - area[blur, large])
        faster[model] = verdicts.effect(area[zero, large], area[zero, small], rule=rule_a, groups=groups,
                                        what=f"{model}: zero area {large} px − {small} px")
        shrinks[model] = verdicts.effect(gap_small, gap_large, rule=rule_b, groups=groups,
                                         what=f"{model}: |zero − blur| {small} px − {large} px")
        rows.append({"model": model, f"zero area {small} px": area[zero, small].mean(),
                     f"zero area {large} px": area[zero, large].mean(), f"|zero − blur| {small} px": gap_small.mean(),
                     f"|zero − blur| {large} px": gap_large.mean(),
                     "(a) faster fall": _interval_text(faster[model]), "(a) outcome": faster[model].outcome,
                     "(b) gap shrinks": _interval_text(shrinks[model]), "(b) outcome": shrinks[model].outcome,
                     "margin": faster[model].margin, "replicas": faster[model].interval.replicas,
                     "images": faster[model].interval.units})
    checked = random_test_premises(curves, zero=zero, premise_side=premise_side)
    premises = premise_outcomes(checked)
    failing = [p for p in premises if p.holds is False]
    parts = {"T3a": verdicts.decide(faster, rule_a), "T3b": verdicts.decide(shrinks, rule_b)}
    v = verdicts.decide_parts(parts, rule, untestable=failing[0].text if failing else None)
    undecided = [p for p in premises if p.holds is None]
    if undecided and not failing:
        v = undecided[0].apply(v)
    return verdicts.Claim(
        rule.claim, rule=rule, premise=_premise_text(checked),
        paper_value="Fig. 4 (qualitative, 6 patch sizes)",
        our_value="; ".join(f"{r['model']}: (a) faster fall {r['(a) faster fall']}, (b) gap shrinks "
                            f"{r['(b) gap shrinks']}" for r in rows),
        verdict=v, table=pd.DataFrame(rows), units=min(units))


def claim_cross_test(cross: pd.DataFrame, random: pd.DataFrame, *, le: str = "SA-Le",
                     mo: str = "SA-Mo") -> verdicts.Claim:
    """Claim T4 (Fig. 3b; rule ``T4``): TRACE-Mo fails the LeRF test far more than TRACE-Le fails the MoRF test.

    cross: :func:`search_frames` scores (method, image, LeRF, MoRF, f(x), points; replica and model where there
    are several) of the searches ``le`` and ``mo``; random: :func:`random_order_sums` on the same images and grid.
    Per image, ``mo``'s LeRF loss ΣLeRF(``le``) − ΣLeRF(``mo``) minus ``le``'s MoRF loss
    ΣMoRF(``le``) − ΣMoRF(``mo``), per curve point; the t interval on the replica means above the margin in every
    model. Premises: deletion lowers the prediction, ``le`` beats random orders under LeRF and ``mo`` under MoRF
    (:func:`cross_premises`)."""
    rule = verdicts.rule("T4")
    if not {le, mo} <= set(cross["method"]):
        raise ValueError(f"cross must hold the searches {le!r} and {mo!r}, got {sorted(set(cross['method']))}")
    cross, random = _with_model(cross), _with_model(random)
    points = _points(cross)
    cells, rows, units = {}, [], []
    lerf_col, morf_col = f"{mo}'s LeRF loss", f"{le}'s MoRF loss"
    for model in dict.fromkeys(cross["model"]):
        part = cross[cross["model"] == model]
        get = {(m, c): _per_image(part, c, method=m) for m in (le, mo) for c in ("LeRF", "MoRF")}
        rnd = random[random["model"] == model].groupby(_order(random))["sum"].mean().sort_index().to_numpy(np.float64)
        if len(rnd) != len(get[le, "LeRF"]):
            raise ValueError(f"cross and random must hold the same images of {model!r}")
        groups = _groups(part, method=le)
        units.append(len(rnd))
        lerf_loss = get[le, "LeRF"] - get[mo, "LeRF"]
        morf_loss = get[le, "MoRF"] - get[mo, "MoRF"]
        j = verdicts.effect(lerf_loss / points, morf_loss / points, rule=rule, groups=groups,
                            what=f"{model}: ({mo}'s LeRF loss − {le}'s MoRF loss) per point")
        cells[model] = j
        rows.append({"model": model, lerf_col: lerf_loss.mean(), morf_col: morf_loss.mean(),
                     "share of the way to chance, LeRF": lerf_loss.mean() / (get[le, "LeRF"].mean() - rnd.mean()),
                     "share of the way to chance, MoRF": morf_loss.mean() / (rnd.mean() - get[mo, "MoRF"].mean()),
                     "difference per point": j.interval.estimate, "low": j.interval.low, "high": j.interval.high,
                     "margin": j.margin, "outcome": j.outcome, "replicas": j.interval.replicas,
                     "images": j.interval.units})
    checked = cross_premises(cross, random, le=le, mo=mo)
    premises = premise_outcomes(checked)
    table = pd.DataFrame(rows)
    return verdicts.Claim(
        rule.claim, rule=rule, premise=_premise_text(checked),
        paper_value="TRACE-Mo 'extremely poorly' under LeRF (Fig. 3b); LeRF−MoRF > LeRF >> MoRF",
        our_value="; ".join(f"{r['model']}: {lerf_col} {r[lerf_col]:.2f} vs {morf_col} {r[morf_col]:.2f}; difference "
                            f"per point {_interval_text(cells[r['model']])}" for _, r in table.iterrows()),
        verdict=_decided(rule, cells, premises), table=table, units=min(units))


def claim_reference_robust(patch_scores: pd.DataFrame, pixel_scores: pd.DataFrame, *, target: str = "T-p",
                           against: tuple[str, ...] = ("Grad", "IG"), random: str = "Random",
                           premise_scores: pd.DataFrame | None = None) -> verdicts.Claim:
    """Claim T5 (Table 1, Fig. 1; rule ``T5``): with 7×7 patches TRACE's score barely moves with the reference,
    unlike the pixel-level scores of Gradient and IG (Grad-CAM less affected, shown, not counted).

    patch_scores, pixel_scores: :func:`deletion_frames` scores (columns model, method, reference, image,
    "LeRF − MoRF", f(x), points; replica for several trained models; one output) on the patch grid and at pixel
    level. Per image, how far the reference moves the score: max − min over the references, under two denominators
    — "relative" (over the mean |score| of the method on that model and replica: the paper's sense, but TRACE's
    score is the metric's maximum, the largest denominator, which favours TRACE) and "per point" (over the curve's
    points: the same scale for every method, favouring none). Per counted method and denominator, the method's
    pixel-level spread minus ``target``'s on patches, paired by image; the t interval on the replica means above that
    denominator's margin, in every cell. Premise: the mechanism on the patch scores (:func:`table1_premises`,
    ``random`` the null; part (a) on ``premise_scores`` when given). A relative spread of a score at chance means
    nothing (it divides by about 0), so a "relative" cell counts only when both compared scores lie above chance
    (0, a random order's expectation; the t interval on the replica means), else it is undecided; the "per point"
    cells need no such check."""
    rule = verdicts.rule("T5")
    rep = ["replica"] if "replica" in patch_scores.columns and "replica" in pixel_scores.columns else []
    keys = [*rep, "model", "image"]
    if target not in set(patch_scores["method"]):
        raise ValueError(f"patch_scores must hold {target!r}, got {sorted(set(patch_scores['method']))}")
    run = [m for m in against if m in set(pixel_scores["method"])]
    if not run:
        raise ValueError(f"pixel_scores must hold at least one of {list(against)}, got "
                         f"{sorted(set(pixel_scores['method']))}")
    spreads = {}
    for level, frame in (("patches", patch_scores), ("pixels", pixel_scores)):
        s = reference_spread(frame, value=_SCORE, by=[*rep, "model", "method"]).sort_values(keys)
        s["per point"] = s["spread"] / _points(frame)
        spreads[level] = s.rename(columns={"relative spread": "relative"})

    def spread(level: str, method: str, denominator: str) -> np.ndarray:
        s = spreads[level]
        return _array(s[s["method"] == method][denominator])

    groups = (spreads["patches"][spreads["patches"]["method"] == target]["replica"].astype(str).to_numpy()
              if rep else None)
    checked = (table1_premises(patch_scores, searches=(target,), random=random, output=patch_scores["output"].iloc[0],
                               premise_scores=premise_scores)
               if random in set(patch_scores["method"]) else pd.DataFrame(columns=PREMISE_COLUMNS))
    mechanism = premise_outcomes(checked)
    chance = {}  # each compared score above chance (0): a relative spread of a score at chance means nothing
    for level, frame, names in (("patches", patch_scores, [target]), ("pixels", pixel_scores, run)):
        for m in names:
            sel = frame[frame["method"] == m].sort_values([*rep, "model", "reference", "image"])
            row = _premise_row(sel[_SCORE], sel["replica"].astype(str).to_numpy() if rep else None, 0.0,
                               data=f"{m}, {level}, every model and reference",
                               part="ΣLeRF − ΣMoRF above chance (0)")
            chance[m] = premise_outcomes(pd.DataFrame([row]))[0]
    cells, rows = {}, []
    base = {d: spread("patches", target, d) for d in ("relative", "per point")}
    rows.append({"method": target, "level": "patches", "counted": True,
                 **{f"mean {d} spread": base[d].mean() for d in base}})
    for method in dict.fromkeys(pixel_scores["method"]):
        row = {"method": method, "level": "pixels", "counted": method in run}
        for d in ("relative", "per point"):
            values = spread("pixels", method, d)
            if len(values) != len(base[d]):
                raise ValueError(f"pixel_scores must hold the models × images of patch_scores for {method!r}")
            row[f"mean {d} spread"] = values.mean()
            if method in set(patch_scores["method"]):
                row[f"same method on patches, {d}"] = spread("patches", method, d).mean()
            if method in run:
                j = verdicts.effect(values, base[d], rule=rule, groups=groups, setting=d,
                                    what=f"{method} (pixels) − {target} (patches), {d}")
                shown = d != "relative" or (chance[method].holds and chance[target].holds)
                cells[f"{method}, {d}"] = j if shown else None  # a relative spread of a score at chance: undecided
        rows.append(row)
    judged = verdicts.judgement_table({k: v for k, v in cells.items()})
    table = pd.concat([pd.DataFrame(rows), pd.DataFrame(judged)], ignore_index=True)

    return verdicts.Claim(
        "T5: with 7×7 patches TRACE's score barely moves with the reference, unlike pixel-level scores of Gradient "
        "and IG (Grad-CAM less affected)",
        rule=rule, premise=_premise_text(checked, extra=list(chance.values())),
        paper_value="T-p " + " / ".join(f"{v:.2f}" for v in paper.TABLE1_RESNET18["T-p"])
                    + " (" + "/".join(paper.TABLE1_RESNET18["reference"]) + ", ResNet-18); Fig. 1 qualitative",
        our_value="; ".join(f"{name}: {_interval_text(j) if j is not None else 'undecided (a score at chance)'}"
                            for name, j in cells.items()),
        verdict=_decided(rule, cells, mechanism), table=table, units=len(base["relative"]))


def claim_insertion_equals_deletion(frame: pd.DataFrame) -> verdicts.Claim:
    """Study check T6 (Thm 3.1; rule ``T6``): insertion and deletion give the same AUC (insertion in MoRF order =
    LeRF deletion, and the reverse).

    frame: :func:`insertion_deletion_frame`. An identity of the definitions: inserting in MoRF order passes through
    the very inputs LeRF deletion does, in reverse. It cannot fail for the paper, only through a bug in our two curve
    functions, so it checks our implementation and is not counted among the paper's claims. Per curve the relative
    difference |insertion AUC − deletion AUC| / |deletion AUC|; the t interval on the curves' mean below the float
    tolerance of the rule."""
    rule = verdicts.rule("T6")
    if len(frame) < 2:
        v = verdicts.decide([], rule, untestable="fewer than two curves were computed")
        return verdicts.Claim(rule.claim, rule=rule, premise="no curve to compare", paper_value="Thm 3.1 (exact)",
                              our_value="no curve", verdict=v, table=frame, units=len(frame), trained=False)
    diff = ((frame["insertion AUC"] - frame["deletion AUC"]).abs()
            / frame["deletion AUC"].abs().clip(lower=1e-12)).to_numpy(dtype=np.float64)
    j = verdicts.effect(diff, rule=rule, what="relative |insertion − deletion|")
    table = frame.assign(**{"relative difference": diff}).groupby(["method", "deletion"], sort=False)[
        "relative difference"].max().reset_index()
    return verdicts.Claim(
        rule.claim, rule=rule,
        premise="none needed and none possible: Thm 3.1 holds by construction (insertion in MoRF order evaluates "
                "the inputs of LeRF deletion in reverse), so this can fail only through a bug in our two curve "
                f"functions; checked on {len(frame)} curves of {frame['method'].nunique()} trajectories",
        paper_value="Thm 3.1 (exact)",
        our_value=f"mean relative difference {j.interval.estimate:.1e} (upper end {j.interval.high:.1e}); largest "
                  f"{diff.max():.1e}",
        verdict=verdicts.decide(j, rule), table=table, units=len(frame), trained=False)

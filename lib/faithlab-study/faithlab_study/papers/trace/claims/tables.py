"""TRACE's claims on Table 1's scores: T2 (TRACE beats the attribution methods), T3 (the probability beats the
logit) and the reference robustness (the scores' spread over references), each decided by its pre-registered rule
(registered above its claim function)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.trace.claims.registration import CHAPTER, REGISTERED
from faithlab_study.papers.trace import paper
from faithlab_study.papers.trace.claims.premises import (PREMISE_COLUMNS, SCORE, as_array, curve_points, decided,
                                                         interval_text, per_image, premise_outcomes, premise_row,
                                                         premise_text, replica_groups, replica_mean, table1_premises)
from faithlab_study.papers.trace.experiments import reference_spread
from faithlab_study.verdicts import replication

__all__ = ["claim_beats_methods", "claim_probability_beats_logit", "claim_reference_robust"]


PREMISE_A_WHY = ("the design of premise (a) only, after the book run of 2026-11-27: on the 3 replicas × 10 searched "
                 "images the blur reference stayed undecided on all three models (ResNet-9 0.173 [0.044, 0.302], "
                 "VGG-small 0.231 [0.057, 0.405], MobileNet-small 0.204 [0.076, 0.333]), which left T2 "
                 "(MobileNet-small, VGG-small), T2b and T5 waiting on it; a throwaway run on 3 replicas × 100 images "
                 "each still straddled 0.1 (t with 2 degrees of freedom; between-replica spread remains), so the "
                 "premise gets 5 replicas. Statistic, threshold 0.1 and part (b) unchanged; the claims' own "
                 "statistics, margins and designs unchanged")
"""Why premise (a) of T2, T2b and T5 moved onto images of its own: one change of the chapter's design, logged on
each of the three rules."""
T2_PREMISES = ["(a) deletion lowers the prediction under each reference: f(x) minus the mean of the Random map's LeRF "
               "curve above 0.1, decided on images of its own (part (a) needs no search: more trained replicas per "
               "model and more test images than the searched ones, the notebook's premise_replicas × premise_images)",
               "(b) T-p beats random orders under each reference by more than 0.1 per curve point"]
"""T2's premises (written once: its field and its log's last change of them)."""
T2_ZERO = ('the margin itself: that T-p is ahead at all is built in (it optimises this score), so only the size '
           'is asked')
"""Why T2's value of no effect is its margin (written once: its zero_source and its log's)."""
T2B_PREMISES = ["(a) deletion lowers the prediction in each cell: f(x) minus the mean of the Random map's LeRF curve "
                "above 0.1, decided on images of its own (part (a) needs no search: more trained replicas per model "
                "and more test images than the searched ones, the notebook's premise_replicas × premise_images)",
                "(b) T-p and T-y each beat random orders in each cell by more than 0.1 per curve point"]
"""T2b's premises (written once: its field and its log's last change of them)."""
T2B_ZERO = ('the margin itself: that T-p leads at all is close to built in (it optimises this score), so only the '
            'size is asked')
"""Why T2b's value of no effect is its margin (written once: its zero_source and its log's)."""
T5_PREMISES = ["(a) deletion lowers the prediction (on images of its own, as T2's) and (b) T-p beats random orders, "
               "on the patch scores of every model and reference"]
"""T5's premises (written once: its field and its log's last change of them)."""


def _premise_a_change(old: list, new: list, *, fingerprint: str) -> dict:
    """The change-log entry of T2, T2b or T5 when premise (a) moved onto images of its own (:data:`PREMISE_A_WHY`):
    the rule's premises from ``old`` to ``new``, with its ``fingerprint`` after the change."""
    return {"date": "2026-11-27", "change": "changed", "field": "premises", "old": old, "new": new,
            "why": PREMISE_A_WHY, "fingerprint": fingerprint}


@CHAPTER.registered(
    "T2",
    claim="T2: TRACE-SA-Le−Mo (T-p) beats every attribution method in ΣLeRF − ΣMoRF (Table 1), per model",
    statistic=("per test image, an attribution method's shortfall from T-p in ΣLeRF − ΣMoRF (probabilities, t = 49) "
               "as a share of T-p's mean score over the replica's images; its mean per trained replica (1 − method / "
               "T-p), per reference × method"),
    margin=0.2,
    zero=0.2,
    zero_source=T2_ZERO,
    margin_source=("half the paper's smallest effect: the best method's shortfall from T-p over Table 1's 18 cells "
                   "is 0.40–0.63 (ResNet-18/zero 1 − 16.24 / 31.69 = 0.49, the ×1.95 of the text); the smallest, "
                   "VGG-16/zero 1 − 18.77 / 31.25 = 0.399, halved"),
    over="reference × method cells", null="a random deletion order (the Random map), in the premise",
    premises=T2_PREMISES,
    note=("TRACE maximises this very score, so that it wins at all is close to built in; the margin asks that it win "
          "by as much as the paper's smallest lead. 'Every method in all cells': every reference × method cell of "
          "the model must hold."),
    log=[
        REGISTERED,
        _premise_a_change(["(a) deletion lowers the prediction under each reference: f(x) minus the mean of the Random "
                          "map's LeRF curve above 0.1",
                          "(b) T-p beats random orders under each reference by more than 0.1 per curve point"],
                         T2_PREMISES, fingerprint="05855b2a6182"),
        *verdicts.zero_change(
            "2026-11-29", 0.2,
            ('issue 90 item 5: T-p maximises the very score it is judged by, so a shortfall above 0 is built '
             "in; with zero 0 any method short of T-p would read 'reproduced, weaker'. The value of no effect "
             'is the margin: one boundary, only the size can reproduce'),
            source=T2_ZERO,
            fingerprint="acb5eb1de04b"),
    ],
)
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
        tp = per_image(frame, SCORE, reference=ref, method=target)
        groups = replica_groups(frame, reference=ref, method=target)
        scale = replica_mean(tp, groups)
        for m in methods:
            other = per_image(frame, SCORE, reference=ref, method=m)
            if len(other) != len(tp):
                raise ValueError(f"scores must hold {m!r} on the images of {target!r} under reference {ref!r}")
            cells[f"{ref}: {m}"] = verdicts.effect((tp - other) / scale, rule=rule, groups=groups,
                                                   what=f"{ref}: ({target} − {m}) / {target}")
            units.append(len(tp))
    checked = table1_premises(frame, searches=(target,), random=random, output=output,
                              premise_scores=premise_scores)
    premises = premise_outcomes(checked)
    means = frame.groupby("method", sort=False)[SCORE].mean()
    best = means[methods].idxmax()
    weakest = min(cells.values(), key=lambda j: j.interval.low)
    return verdicts.Claim(
        f"T2 ({model}): TRACE-SA-Le−Mo ({target}) beats every attribution method in ΣLeRF − ΣMoRF (Table 1)",
        rule=rule, premise=premise_text(checked),
        paper_value=f"{target} above every method in all 18 cells; the best method's shortfall "
                    f"{paper.shortfalls().min():.2f}–{paper.shortfalls().max():.2f} of {target}'s score "
                    f"(ResNet-18, zero: {paper.versus_best('zero')})",
        our_value=f"{target} {means[target]:.2f} vs best method {best} {means[best]:.2f}; smallest shortfall "
                  f"({weakest.what}) {interval_text(weakest)}",
        verdict=decided(rule, cells, premises), table=pd.DataFrame(verdicts.judgement_table(cells, model=model)),
        units=min(units))


@CHAPTER.registered(
    "T2b",
    claim="T2b: scored with probabilities, T-p beats T-y by a non-negligible margin",
    statistic=("per test image, T-p's lead over T-y in ΣLeRF − ΣMoRF (probabilities, t = 49) as a share of T-p's "
               "mean score over the replica's images; its mean per trained replica, per model × reference"),
    margin=0.079,
    zero=0.079,
    zero_source=T2B_ZERO,
    margin_source=("half the smallest gap the paper calls non-negligible: (T-p − T-y) / T-p over Table 1's 18 cells, "
                   "GoogLeNet/zero (28.13 − 23.70) / 28.13 = 0.157, halved"),
    over="model × reference cells", null="a random deletion order (the Random map), in the premise",
    premises=T2B_PREMISES,
    note=("Reformulated so that it can fail: T-p optimises the very score it is judged by, so that it is ahead is "
          "built in; the paper's claim is that the gap is non-negligible, and a gap shown inside the margin is 'not "
          "reproduced' (e.g. when the two searches find the same trajectories)."),
    log=[
        REGISTERED,
        _premise_a_change(["(a) deletion lowers the prediction in each cell: f(x) minus the mean of the Random map's "
                          "LeRF curve above 0.1",
                          "(b) T-p and T-y each beat random orders in each cell by more than 0.1 per curve point"],
                         T2B_PREMISES, fingerprint="6006f3580430"),
        *verdicts.zero_change(
            "2026-11-29", 0.079,
            ('issue 90 item 5: T-p optimises the score it is judged by, so its lead over T-y above 0 is close '
             "to built in; the paper's claim is the size (non-negligible). The value of no effect is the "
             'margin: one boundary'),
            source=T2B_ZERO,
            fingerprint="1ee169b353c5"),
    ],
)
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
        tp, ty = (per_image(cell, SCORE, method=m) for m in (target, other))
        groups = replica_groups(cell, method=target)
        units.append(len(tp))
        cells[f"{model}, {ref}"] = verdicts.effect((tp - ty) / replica_mean(tp, groups), rule=rule, groups=groups,
                                                   what=f"{model}, {ref}: ({target} − {other}) / {target}")
    checked = table1_premises(frame, searches=(target, other), random=random, output=output,
                              premise_scores=premise_scores)
    premises = premise_outcomes(checked)
    means = frame.groupby("method")[SCORE].mean()
    weakest = min(cells.values(), key=lambda j: j.interval.low)
    return verdicts.Claim(
        f"T2b: scored with probabilities, {target} (optimised for the probability) beats {other} (optimised for the "
        "logit) by a non-negligible margin",
        rule=rule, premise=premise_text(checked),
        paper_value=f"{target} > {other} in all 18 cells, by {paper.probability_gaps().min():.2f}–"
                    f"{paper.probability_gaps().max():.2f} of {target}'s score ('non-negligible')",
        our_value=f"{target} {means[target]:.2f} vs {other} {means[other]:.2f}; smallest gap ({weakest.what}) "
                  f"{interval_text(weakest)}",
        verdict=decided(rule, cells, premises), table=pd.DataFrame(verdicts.judgement_table(cells)),
        units=min(units))



@CHAPTER.registered(
    "T5",
    claim=("T5: with 7×7 patches TRACE's score barely moves with the reference, unlike pixel-level scores of "
           "Gradient and IG"),
    statistic=("per test image, how far the reference moves ΣLeRF − ΣMoRF (max − min over zero, mean, blur), a "
               "pixel-level method's (Gradient, IG) minus T-p's on 7 × 7 patches, under two denominators: 'relative' "
               "(over the method's mean |score| on that model and replica) and 'per point' (over the curve's points, "
               "the same for every method); its mean per trained replica"),
    margin={"relative": 0.066, "per point": 0.043},
    margin_source=("the paper's 'barely moves': T-p's own spread over the references in Table 1, ResNet-18 (33.84 − "
                   "31.69 = 2.15), over its mean 32.68 (relative, 0.066) and over the 50 curve points (per point, "
                   "0.043): a pixel-level method must move by more than this beyond TRACE"),
    over="method × denominator cells",
    null="a random deletion order, whose ΣLeRF − ΣMoRF is 0 in expectation (the compared scores must lie above it)",
    premises=T5_PREMISES,
    unit="test image of a model",
    note=("The relative denominator is each method's own mean |score|, and TRACE's score is the metric's maximum, "
          "which favours TRACE; the per-point denominator favours no method. The claim must hold under both. A "
          "relative spread of a score at chance divides by about 0, so a 'relative' cell counts only when both "
          "compared scores lie above chance (0; t on replica means), else it is undecided."),
    log=[
        REGISTERED,
        _premise_a_change(["(a) deletion lowers the prediction and (b) T-p beats random orders, on the patch scores of "
                          "every model and reference"],
                         T5_PREMISES, fingerprint="2c6d1bfb9837"),
    ],
)
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
    rep = [replication.REPLICA] if replication.has_replicas(patch_scores, pixel_scores) else []
    keys = [*rep, "model", "image"]
    if target not in set(patch_scores["method"]):
        raise ValueError(f"patch_scores must hold {target!r}, got {sorted(set(patch_scores['method']))}")
    run = [m for m in against if m in set(pixel_scores["method"])]
    if not run:
        raise ValueError(f"pixel_scores must hold at least one of {list(against)}, got "
                         f"{sorted(set(pixel_scores['method']))}")
    spreads = {}
    for level, frame in (("patches", patch_scores), ("pixels", pixel_scores)):
        s = reference_spread(frame, value=SCORE, by=[*rep, "model", "method"]).sort_values(keys)
        s["per point"] = s["spread"] / curve_points(frame)
        spreads[level] = s.rename(columns={"relative spread": "relative"})

    def spread(level: str, method: str, denominator: str) -> np.ndarray:
        s = spreads[level]
        return as_array(s[s["method"] == method][denominator])

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
            row = premise_row(sel[SCORE], sel["replica"].astype(str).to_numpy() if rep else None, 0.0,
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
        rule=rule, premise=premise_text(checked, extra=list(chance.values())),
        paper_value="T-p " + " / ".join(f"{v:.2f}" for v in paper.TABLE1_RESNET18["T-p"])
                    + " (" + "/".join(paper.TABLE1_RESNET18["reference"]) + ", ResNet-18); Fig. 1 qualitative",
        our_value="; ".join(f"{name}: {interval_text(j) if j is not None else 'undecided (a score at chance)'}"
                            for name, j in cells.items()),
        verdict=decided(rule, cells, mechanism), table=table, units=len(base["relative"]))



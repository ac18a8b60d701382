"""Few-class Fidelity's claims on the perturbation and the class flips: C2 (the search finds an uncertain candidate),
C5a (under a fixed reference the images flip class) and the study check C5b (Fid's bounds), each decided by the rule
registered above its claim function (the package's docstring says how)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.fewclass.claims.registration import BINARY, CHAPTER, REGISTERED
from faithlab_study.papers.fewclass.claims.premises import (RANDOM_CANDIDATE_BELOW, SELECTED, both_premises,
                                                            cell_of, replica_groups, share_of, with_replica)


C5A_NOTE = ("partly reproduced when one of the two parts is (half, fixed before the data); the selected perturbation's "
            "uncertainty (C5a.uncertain) is shown beside them as a study check: the candidate search selects for it")
"""C5a's note (written once: its field and its log's last change of it)."""
C5A_CONFIDENT_ZERO = ("the paper's Δ (eq. 3), the margin itself: a U below it is the uncertain end point the paper "
                      "asks for (the null), not a smaller confidence, so the rule keeps one boundary")
"""Why C5a.confident's value of no effect is Δ, its margin (written once: its zero_source and its log's)."""
C5B_ZERO = ("the margin itself: an identity has no smaller effect to report (a value meets its bound or not), "
            "so the rule keeps one boundary")
"""Why C5b's value of no effect is its margin (written once: its zero_source and its log's)."""


@CHAPTER.registered(
    "C2",
    claim="The perturbation framework finds, per image, a similar candidate that makes the model uncertain (U < Δ)",
    statistic=("per task × model, the share of XAI images whose selected candidate reaches U < Δ (eq. 3: Δ = "
               "min(0.1, N/40))"),
    margin=0.9,
    margin_source=("convention: the paper builds its grid 'large enough to ensure at least one alteration candidate "
                   "satisfies' the uncertainty constraint for every image and gives no rate; 'per image' read as at "
                   "least nine images in ten (its code falls back to the lowest U when no candidate passes)"),
    over="task × model cells",
    null="a candidate drawn at random from the grid: the share of an image's candidates with U < Δ",
    premises=["the search is tested: a candidate drawn at random from the grid reaches U < Δ for less than 90 % of "
              "the images (mean over images of the share of their candidates with U < Δ; t interval on the replica "
              "means below 0.9), else any candidate would do"],
    interval="share: t on replica shares ∪ Wilson",
    fingerprint="858224cb99c0",
)
def claim_uncertain_selection(selection: pd.DataFrame) -> verdicts.Claim:
    """Claim C2: the perturbation framework finds, per image, a similar candidate that makes the model uncertain
    (U < Δ), decided by its rule (``verdicts.rule("C2")``).

    selection: :func:`selection_frame` rows with ``task`` and ``model`` columns (and ``replica``, when the models were
    trained more than once). Per task × model, the share of images whose selected candidate reaches U < Δ, its
    interval at the replica level (the t interval on the replica shares joined with the Wilson interval of the
    pooled count, :func:`faithlab_study.verdicts.share_interval`), judged against the margin; every task × model must
    hold. Premise, decided on the candidates and not on the selection: a candidate drawn at random from the grid
    reaches U < Δ for less than :data:`RANDOM_CANDIDATE_BELOW` of the images (the mean of "candidates U < Δ", t
    interval on the replica means), in every task × model, else any candidate would do and the search is not
    tested."""
    if not len(selection):
        raise ValueError("selection must hold at least one image")
    rule = verdicts.rule("C2")
    frame = with_replica(selection)
    cells, checks, rows = {}, [], []
    for (task, model), cell in frame.groupby(["task", "model"], sort=False):
        groups = replica_groups(cell)
        interval = share_of(cell["U < Δ"].astype(bool), groups)
        cells[task, model] = verdicts.judge(interval, rule, what=f"{task}/{model}",
                                            _units=(cell["U < Δ"].astype(float).to_numpy(), groups))
        interval = cells[task, model].interval  # the interval the outcome read (rebuilt at the decision level)
        chance = cell_of(lambda: verdicts.mean_interval(cell["candidates U < Δ"].to_numpy(np.float64),
                                                      groups=groups))
        what = f"{task}/{model}: share of images a random candidate makes uncertain"
        checks.append(verdicts.Premise(None, f"{what}: one image, no interval") if chance is None else
                      verdicts.premise_interval(chance, threshold=RANDOM_CANDIDATE_BELOW, direction="below",
                                                what=what))
        rows.append({"task": task, "model": model, "images": interval.units, "replicas": interval.replicas,
                     "U < Δ": interval.estimate, "low": interval.low, "high": interval.high,
                     "margin": rule.margin_for(), "outcome": cells[task, model].outcome,
                     "random candidate": float(cell["candidates U < Δ"].mean())})
    check = both_premises(checks, "the search is tested (a random candidate would not do)")
    v = check.apply(verdicts.decide(cells, rule))
    table = pd.DataFrame(rows)
    return verdicts.Claim(
        "C2: the perturbation framework finds, per image, a similar candidate that makes the model uncertain (U < Δ)",
        rule=rule, premise=check.text,
        paper_value="the selected perturbation sets the MIF/LIF end point at ≈ 1/N (Fig. 2; method)",
        our_value=", ".join(f"{r['task']}/{r['model']} {r['U < Δ']:.0%} [{r['low']:.0%}, {r['high']:.0%}] (random "
                            f"candidate {r['random candidate']:.0%})" for r in rows),
        verdict=v, table=table, units=int(table["images"].min()))


@CHAPTER.registered(
    "C5a",
    claim=("With few classes, replacing every pixel by a fixed reference switches the class with confidence instead "
           "of reaching 1/N; the selected perturbation reaches it"),
    statistic="its three parts C5a.confident, C5a.switch and C5a.uncertain, each decided by its own rule",
    margin=0.0, margin_source="none of its own: each part has its margin", decision="parts",
    parts=["C5a.confident", "C5a.switch"], share=0.5, null="each part's own",
    premises=["a binary task was run and its models predict every XAI image correctly (the XAI set)"],
    unit="XAI image of a binary model (each trained replica its own, disjoint block of the test split)",
    note=C5A_NOTE,
    log=[
        {**REGISTERED, "fingerprint": "adf65e7b3ad2"},
        {"date": "2026-11-29", "change": "changed", "field": "parts",
         "old": ["C5a.confident", "C5a.switch", "C5a.uncertain"], "new": ["C5a.confident", "C5a.switch"],
         "why": ("issue 90 item 5: C5a.uncertain restates the candidate search's own constraint (the search selects "
                 "a candidate with U < Δ wherever one exists, C2), so it held by construction and inflated C5a; it "
                 "becomes a study check shown beside the claim")},
        {"date": "2026-11-29", "change": "changed", "field": "note",
         "old": "partly reproduced when two of the three parts are reproduced (more than half, fixed before the data)",
         "new": C5A_NOTE,
         "why": "the parts changed (entry above)", "fingerprint": "ee5b7c256e36"},
    ],
)
@BINARY.registered(
    "C5a.confident", claim="A fixed reference leaves the binary model confident",
    statistic=("per binary model × fixed reference (zero: the data set's mean intensity everywhere; mean: the "
               "image's own mean), the uncertainty U (eq. 2) after replacing every pixel by the reference, per XAI "
               "image; its mean per trained replica"),
    margin=0.05,
    margin_source=("the paper's own threshold of uncertainty, Δ = min(0.1, N/40) = 0.05 for N = 2 (eq. 3): below it "
                   "the paper calls the model uncertain"),
    zero=0.05,
    zero_source=C5A_CONFIDENT_ZERO,
    over="model × reference cells", null="the uncertain end point the paper asks for, U < Δ",
    log=[
        REGISTERED,
        *verdicts.zero_change(
            "2026-11-29", 0.05,
            ("issue 90 (verdicts that say what holds): the decisions now read a second boundary, the value of no "
             "effect (0 unless the rule sets it), and a cell beyond it but short of the margin is 'weaker'. U is "
             "never below 0, so with 0 a model that a reference leaves uncertain by the paper's own definition "
             "(0 < U < Δ) would read 'reproduced, weaker'. Below Δ is the null, not a smaller effect: the value "
             "of no effect is Δ, the margin, which keeps the one boundary the rule was registered with. "
             "Statistic, margin, decision and design unchanged"),
            source=C5A_CONFIDENT_ZERO,
            fingerprint="6a8f1591dd7f",
            source_why="a rule that sets zero says why (the entry above)"),
    ],
)
@BINARY.registered(
    "C5a.switch", claim="A fixed reference switches the binary model's class",
    statistic=("per binary model × fixed reference (zero, mean), the share of XAI images whose predicted class "
               "differs from the clean prediction after replacing every pixel by the reference"),
    margin=0.25,
    margin_source=("convention (the paper gives no rate): half of the share that one constant prediction switches on "
                   "a balanced binary XAI set (1/2)"),
    over="model × reference cells", null="no switch: a reference that keeps every prediction",
    interval="share: t on replica shares ∪ Wilson",
    fingerprint="ece8c17fbb3b",
)
@BINARY.registered(
    "C5a.uncertain", kind="study check",
    claim="The selected perturbation leaves the binary model uncertain (near 1/N)",
    statistic=("per binary model, the uncertainty U (eq. 2) after replacing every pixel by the selected "
               "perturbation, per XAI image; its mean per trained replica"),
    direction="below", margin=0.05,
    margin_source="the paper's own threshold of uncertainty, Δ = min(0.1, N/40) = 0.05 for N = 2 (eq. 3)",
    over="binary models", null="the classic references on the same images (C5a.confident)",
    log=[
        {**REGISTERED, "fingerprint": "2cb119e6b00e"},
        {"date": "2026-11-29", "change": "changed", "field": "kind", "old": "paper", "new": "study check",
         "why": ("issue 90 item 5: the candidate search selects a perturbation with U < Δ wherever one exists (its "
                 "success share is C2), so this part held by construction; shown beside C5a, not counted"),
         "fingerprint": "63d752b00843"},
    ],
)
def claim_class_flip(flips: pd.DataFrame, *, binary: Sequence[str]) -> verdicts.Claim:
    """Claim C5a: with few classes, replacing every pixel by a fixed reference switches the class with confidence
    instead of reaching 1/N, while the selected perturbation reaches it; two named parts, each decided by its own
    rule, combined by C5a's (``verdicts.rule("C5a")``, :func:`faithlab_study.verdicts.decide_parts`).

    flips: :func:`flip_frame` rows per image with ``task``, ``model``, ``replacement``, ``flipped``, ``U`` and ``Δ``
    (and ``replica`` when trained more than once); binary: the tasks with two classes. Per binary model:

    - C5a.confident, per classic reference: U after the replacement, per image; the t interval on the replica means
      above the margin (the paper's Δ for N = 2); every model × reference;
    - C5a.switch, per classic reference: the share of images whose class switches, its interval at the replica
      level (:func:`faithlab_study.verdicts.share_interval`) above the margin; every model × reference;
    - C5a.uncertain (a study check, not counted: the candidate search selects for it): U after the selected
      perturbation, per image; the t interval on the replica means below the margin; every model.

    Premise: a binary task was run (else not testable here). Table: every cell with its part."""
    rule = verdicts.rule("C5a")
    r_conf, r_switch = (verdicts.rule(p) for p in rule.parts)
    r_unc = verdicts.rule("C5a.uncertain")
    frame = with_replica(flips)
    frame = frame[frame.task.isin(list(binary))]
    conf, switch, unc, summary = {}, {}, {}, []
    for (task, model), cell in frame.groupby(["task", "model"], sort=False):
        classic = [r for r in dict.fromkeys(cell.replacement) if r != SELECTED]
        for ref in classic:
            p = cell[cell.replacement == ref]
            conf[model, ref] = cell_of(lambda p=p: verdicts.effect(p["U"].to_numpy(np.float64), rule=r_conf,
                                                                 groups=replica_groups(p), what=f"{model}, {ref}"))
            flipped = p["flipped"].astype(float).to_numpy()
            switch[model, ref] = verdicts.judge(share_of(flipped, replica_groups(p)), r_switch, what=f"{model}, {ref}",
                                                _units=(flipped, replica_groups(p)))
            summary.append(f"{model}, {ref}: switched {flipped.mean():.0%}, mean U {p['U'].mean():.2f}")
        sel = cell[cell.replacement == SELECTED]
        if len(sel):
            unc[model] = cell_of(lambda: verdicts.effect(sel["U"].to_numpy(np.float64), rule=r_unc,
                                                       groups=replica_groups(sel), what=f"{model}, selected"))
            summary.append(f"{model}, selected: mean U {sel['U'].mean():.3f}")
    untestable = None if len(frame) else "no binary task was run"
    parts = {r_conf.id: verdicts.decide(conf, r_conf, untestable=untestable),
             r_switch.id: verdicts.decide(switch, r_switch, untestable=untestable)}
    v = verdicts.decide_parts(parts, rule, untestable=untestable)
    parts[r_unc.id] = verdicts.decide(unc, r_unc, untestable=untestable)  # a study check, shown: built in by C2
    rows = []
    for part, cells in ((r_conf.id, conf), (r_switch.id, switch), (r_unc.id, unc)):
        rows += [{"part": part, "part verdict": str(parts[part]), **row}
                 for row in verdicts.judgement_table({f"{k[0]}, {k[1]}" if isinstance(k, tuple) else f"{k}, selected":
                                                      j for k, j in cells.items()})]
    table = pd.DataFrame(rows)
    units = min((j.interval.units for cells in (conf, switch, unc) for j in cells.values() if j is not None),
                default=None)
    return verdicts.Claim(
        "C5a: with few classes, replacing every pixel by a fixed reference switches the class with confidence "
        "instead of reaching 1/N; the selected perturbation reaches it", rule=rule,
        premise=("a binary task was run: " + ", ".join(binary) if len(frame) else "no binary task was run"),
        paper_value="the motivation of the metric (Sec. 1, 3): no table",
        our_value=("; ".join(summary) + " — " + "; ".join(f"{k}{' (study check)' if k == r_unc.id else ''}: {v_}"
                                                         for k, v_ in parts.items())
                   if summary else "no binary model"),
        verdict=v, table=table, units=units)


@CHAPTER.registered(
    "C5b", kind="study check",
    claim="Few-class Fid lies in [0, 1] for any number of classes, 1 at the ideal and 0 at the worst curves",
    statistic=("the share of the computed Fid values (10,000 random area pairs per N = 2, 3, 10, 1000, the real "
               "curves of random maps, and the ideal and worst curves of each N) that meet their bound: in [0, 1], 1 "
               "at the ideal, 0 at the worst"),
    margin=0.999,
    margin_source=("convention: an identity of eq. (1) holds for every value; 0.999 lets the Wilson interval of the "
                   "pooled values decide (a violation rate above one in a thousand fails; the library's oracle tests "
                   "check single values exactly)"),
    zero=0.999,
    zero_source=C5B_ZERO,
    decision="single", null="none: an identity of the metric",
    premises=["none: the bound holds by construction of eq. (1), so this checks our implementation, not the paper"],
    interval="Wilson",
    unit="computed Fid value (not trained: the replica minimum does not apply)",
    note="a study check (an identity of eq. 1), not one of the paper's claims",
    log=[
        REGISTERED,
        *verdicts.zero_change(
            "2026-11-29", 0.999,
            ("issue 90 (verdicts that say what holds): the decisions now read a second boundary, the value of no "
             "effect (0 unless the rule sets it), and a cell beyond it but short of the margin is 'weaker'. With "
             "0, an implementation whose values break their bound one time in ten (share 0.9) would read "
             "'reproduced, weaker'; an identity either holds or does not. The value of no effect is the margin, "
             "which keeps the one boundary the check was registered with. Statistic, margin and decision "
             "unchanged"),
            source=C5B_ZERO,
            fingerprint="559ce5e08717",
            source_why="a rule that sets zero says why (the entry above)"),
    ],
)
def claim_fid_bounds(values: pd.DataFrame) -> verdicts.Claim:
    """Study check C5b: Few-class Fid lies in [0, 1] for any number of classes, 1 at the ideal and 0 at the worst
    curves, decided by its rule (``verdicts.rule("C5b")``).

    values: one row per computed Fid with ``N`` (classes, or a text such as "real curves"), ``case`` ("random
    areas", "real curves", "ideal" or "worst") and ``Fid``. A value meets its bound when it lies in [0, 1] (to
    1e-12), is 1 at the ideal and 0 at the worst. The share of values that do, its Wilson interval
    (:func:`faithlab_study.verdicts.share_interval` without replicas), judged against the rule's margin. This holds by
    construction of eq. (1): an identity that guards our implementation (kind "study check", not trained). Table:
    per N × case, the count, min, max and the share meeting the bound."""
    rule = verdicts.rule("C5b")
    missing = {"N", "case", "Fid"} - set(values.columns)
    if missing or not len(values):
        raise ValueError(f"values must hold rows with the columns N, case and Fid; missing {sorted(missing)}")
    fid = values["Fid"].to_numpy(np.float64)
    tol = 1e-12
    meets = np.where(values["case"] == "ideal", np.abs(fid - 1) <= tol,
                     np.where(values["case"] == "worst", np.abs(fid) <= tol, (fid >= -tol) & (fid <= 1 + tol)))
    j = verdicts.judge(verdicts.share_interval(meets.astype(np.float64)), rule, what="values meeting their bound")
    v = verdicts.decide(j, rule)
    table = (values.assign(meets=meets, N=values["N"].astype(str))
             .groupby(["N", "case"], sort=False)
             .agg(values=("Fid", "size"), min=("Fid", "min"), max=("Fid", "max"), share_meeting=("meets", "mean"))
             .reset_index())
    random = values[values["case"] == "random areas"]
    real = values[values["case"] == "real curves"]
    return verdicts.Claim(
        "C5b: Few-class Fid lies in [0, 1] for any number of classes, 1 at the ideal and 0 at the worst curves",
        rule=rule, premise=rule.premises[0],
        paper_value="Fid ∈ [0, 1] (eq. 1)",
        our_value=(f"{int(meets.sum())} of {len(meets)} values meet their bound; random areas in "
                   f"[{random['Fid'].min():.3f}, {random['Fid'].max():.3f}]"
                   + ("" if real.empty else f"; real curves in [{real['Fid'].min():.3f}, {real['Fid'].max():.3f}]")),
        verdict=v, table=table, units=len(meets), trained=False)  # an identity of the metric

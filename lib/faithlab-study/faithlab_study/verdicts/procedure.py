"""Verdicts of the study's claims: the verdict words, premises and nulls, the :class:`Claim` a claim function
returns and :func:`replicated`, the one wrapper every notebook's claim goes through.

A verdict is one of :data:`VERDICTS`. It comes from a pre-registered rule (:mod:`faithlab_study.verdicts.rules`), in two
steps:

1. **Premise check** — can the comparison discriminate at all? When a baseline is already at the ideal value
   (:func:`at_ideal`), a statistic is undefined (:func:`undefined`), the paper's mechanism is shown absent on the
   stand-in (:func:`premise_interval`, :func:`premise_share`), or the value lies inside the spread of its **null** —
   the same statistic at chance, on shuffled pairings, random maps or permuted labels (:class:`Null`,
   :func:`null_draws`, :func:`within_null`) — the claim is "not testable here" and the reason is kept with the
   verdict.
2. **Decision with uncertainty** — each cell's interval (:mod:`faithlab_study.verdicts.intervals`: the t interval on the
   replica-level statistics, Wilson joined for shares; coverage tested in :mod:`faithlab_study.verdicts.coverage`) against
   the rule's margin from the paper, by the equivalence logic, the cells combined as the rule says
   (:mod:`faithlab_study.verdicts.decisions`).

A claim is a function in ``faithlab_study.papers.<paper>`` that takes the notebook's frames and returns a
:class:`Claim`: the claim, its rule (registered, by id), its premise with the null it was checked against, the
paper's value, ours, the verdict and the table behind it. Notebooks call it and record it with
:meth:`faithlab_study.artifacts.Outputs.claim`; no verdict rule or interval is spelled out in a notebook.

Every function returns a :class:`Verdict`: a plain ``str`` (one of :data:`VERDICTS`) that also carries ``why``, a
sentence with the rule's outcome, which :meth:`faithlab_study.artifacts.Outputs.claim` adds to the claim's note.

One concept: a claim's verdict, from its premises to the published word, in three modules: the premises and nulls
(:mod:`faithlab_study.verdicts.premises`), the :class:`Claim` (:mod:`faithlab_study.verdicts.claim`) and, here, the
wrapper that applies the rule's replica and unit minimums and the bootstrap stability (:func:`replicated`); this
module re-exports the other two, so that no rule has a second copy.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping

import numpy as np

from faithlab_study.verdicts.claim import KINDS, LEFT_OUT, Claim, states_decision  # noqa: F401 (re-exported)
from faithlab_study.verdicts.premises import (MEANINGS, Null, Premise, at_ideal, first_reason, ladder,  # noqa: F401
                                              null_draws, premise_interval, premise_share, share_above_zero,
                                              undefined, verdict, within_null)
from faithlab_study.verdicts.replication import replica_seed  # noqa: F401 (re-exported)
from faithlab_study.verdicts.words import (DECIDED, INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY,  # noqa: F401
                                           PRESENT, REPRODUCED, VERDICTS, WEAKER, Verdict)

__all__ = [
    "VERDICTS", "Verdict", "ladder", "verdict", "at_ideal", "undefined", "first_reason",
    "Null", "null_draws", "within_null", "Claim",
    "REPRODUCED", "WEAKER", "PRESENT", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "INCONCLUSIVE", "DECIDED", "MIN_REPLICAS", "MIN_UNITS",
    "STABILITY_SEEDS", "KINDS", "share_above_zero", "replica_seed", "replicated",
    "Premise", "premise_share", "MEANINGS", "premise_interval", "LEFT_OUT", "judged_alone",
]

MIN_REPLICAS = 3
"""Independently trained replicas per setting that a claim about trained models needs (issue: the unit of
replication is the trained model)."""
MIN_UNITS = 30
"""Units per cell (images, seeds × levels, ... pooled over replicas) below which a claim says it is underpowered."""
STABILITY_SEEDS = 20
"""Bootstrap seeds under which a decided verdict must come out the same (:func:`replicated`), else inconclusive."""


# --------------------------------------------------------------------------------------------------- replication
def _replica_ids(objs, column: str) -> list:
    import pandas as pd

    found: set = set()

    def walk(o):
        if isinstance(o, pd.DataFrame):
            if column in o.columns:
                found.update(o[column].dropna().unique().tolist())
        elif isinstance(o, Mapping):
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(objs)
    return sorted(found, key=str)


_ALONE: contextvars.ContextVar = contextvars.ContextVar("faithlab_judged_alone", default=False)


def judged_alone() -> bool:
    """True while :func:`replicated` calls a claim function on one replica's rows (its replica agreement). A claim
    on one statistic per replica that accepts a single trained model (the paper profile's published weights:
    inconclusive, no interval) raises ValueError here instead, so that the replica is counted as left out (too few
    units alone) and not as one that disagrees."""
    return _ALONE.get()


def _subset(o, column: str, replica):
    """``o`` with every DataFrame that has a ``column`` cut to the rows of ``replica`` (dicts, lists, tuples walked)."""
    import pandas as pd

    if isinstance(o, pd.DataFrame):
        return o[o[column] == replica].reset_index(drop=True) if column in o.columns else o
    if isinstance(o, Mapping):
        return type(o)({k: _subset(v, column, replica) for k, v in o.items()}) if isinstance(o, dict) else {
            k: _subset(v, column, replica) for k, v in o.items()}
    if isinstance(o, tuple):
        return tuple(_subset(v, column, replica) for v in o)
    if isinstance(o, list):
        return [_subset(v, column, replica) for v in o]
    return o


def then(text: str, sentence: str) -> str:
    """``text`` followed by one more ``sentence``, ``text`` closed with a full stop where it ends mid-sentence."""
    text = text.rstrip()
    return f"{text}{'' if text.endswith(('.', '!', '?', '.)')) else '.'} {sentence}"


def replicated(fn, *args, seeds: int = STABILITY_SEEDS, column: str = "replica", trained: bool | None = None,
               **kwargs) -> Claim:
    """Decide a claim with its replica agreement and bootstrap stability: the one wrapper every notebook's claim goes
    through, before :meth:`faithlab_study.artifacts.Outputs.claim` records the claim it returns.

    ``fn(*args, **kwargs)`` → :class:`Claim`, on frames whose rows carry the trained replica in ``column`` (the claim
    function's intervals resample replicas, then units within them). Then:

    - replica agreement: ``fn`` on each replica's rows alone (every DataFrame with ``column`` cut to it), its verdict
      kept per replica ("holds in 3 of 3 replicas");
    - bootstrap stability: when ``fn`` takes ``seed``, ``fn`` again under ``seeds`` other bootstrap seeds; a decided
      verdict that any of them changes is published as "inconclusive" (a verdict that moves with the seed is noise);
    - enough units: a decided verdict on fewer than :data:`MIN_UNITS` units per cell (``Claim.units``) is published
      as "inconclusive", its premise saying it is underpowered;
    - enough trained models: a decided verdict of a claim about models trained here (``trained``; None takes the
      claim function's ``Claim.trained``) on fewer than :data:`MIN_REPLICAS` replicas (the distinct values of
      ``column``, one when there is no such column; ``Claim.kept_replicas`` when the claim function left some out)
      is published as "inconclusive": one model's verdict moved with
      its training seed. "Not testable here" stays: a premise that demonstrably fails on the stand-in is a fact about
      it. Pass ``trained=False`` where the models are not trained here (published weights: nothing to retrain).
    """
    import inspect
    from dataclasses import replace

    if not callable(fn):
        raise TypeError(f"fn must be a claim function, got {type(fn).__name__}")
    claim = fn(*args, **kwargs)
    if not isinstance(claim, Claim):
        raise TypeError(f"{getattr(fn, '__name__', fn)} must return a faithlab_study.verdicts.Claim, got "
                        f"{type(claim).__name__}")
    per = []
    alone = _ALONE.set(True)
    try:
        for r in _replica_ids((args, kwargs), column):
            try:
                per.append(str(fn(*_subset(args, column, r), **_subset(kwargs, column, r)).verdict))
            except ValueError:  # one replica's rows can be too few for a statistic that the pooled rows define
                per.append(LEFT_OUT)
    finally:
        _ALONE.reset(alone)
    stability = ()
    from faithlab_study.verdicts import decisions, power as power_analysis

    token, decided_token = decisions.RECORDER.set([]), decisions.DECIDED.set([])
    try:  # once more, recording the units of its judged cells and the decisions that make its verdict
        again = fn(*args, **kwargs)
        judged, decided = decisions.RECORDER.get(), decisions.DECIDED.get()
    finally:
        decisions.RECORDER.reset(token)
        decisions.DECIDED.reset(decided_token)
    entering = {id(c) for c in power_analysis.tree_cells(power_analysis.verdict_tree(decided, again.verdict))}
    deciding = [(j, d) for j, d in judged if id(j) in entering] if entering else judged  # only the verdict's cells
    power = power_analysis.design_needed(deciding) if deciding else ""
    prospective = power_analysis.prospective(judged, decided, again.verdict) if judged else ""
    cells = decisions.cell_rows([j for j, _ in judged]) if judged else ()
    if claim.verdict == INCONCLUSIVE and claim.verdict.why.startswith("the premise is undecided") and power:
        power = f"{power}; the outcome waits on its undecided premise"
    before_token = decisions.BEFORE.set(True)
    try:  # the same data by the procedure before issue 90, for the pre-registration page's list of moved verdicts
        before = str(fn(*args, **kwargs).verdict)
    except ValueError:
        before = ""
    finally:
        decisions.BEFORE.reset(before_token)
    if seeds and "seed" in inspect.signature(fn).parameters:
        base = int(kwargs.get("seed", 0))
        stability = tuple(str(fn(*args, **{**kwargs, "seed": base + 1000 + s}).verdict) for s in range(int(seeds)))
    v = claim.verdict
    premise = claim.premise
    if v in DECIDED and stability and any(s != str(v) for s in stability):
        same = sum(s == str(v) for s in stability)
        v = v.with_why(f"{v.why}; but only {same} of {len(stability)} other bootstrap seeds give {v}: the verdict moves "
                       "with the seed", INCONCLUSIVE)
    min_units, min_replicas = MIN_UNITS, MIN_REPLICAS
    if claim.rule_id is not None:  # the design its registered rule fixed for this claim (never below the house's)
        from faithlab_study.verdicts.rules import rule as registered

        registered_rule = registered(claim.rule_id)
        min_units, min_replicas = max(min_units, registered_rule.units), max(min_replicas, registered_rule.replicas)
    if v in DECIDED and claim.units is not None and claim.units < min_units:
        v = v.with_why(f"{v.why}; underpowered: {claim.units} units in the smallest cell, below {min_units}",
                       INCONCLUSIVE)
        premise = then(premise, f"Underpowered here: {claim.units} units in the smallest cell (the rule asks "
                                 f"{min_units}).")
    if trained is None:
        trained = claim.trained
    elif not isinstance(trained, (bool, np.bool_)):
        raise TypeError(f"trained must be True, False or None, got {trained!r}")
    models = (max(sum(p != LEFT_OUT for p in per), 1) if claim.kept_replicas is None
              else int(claim.kept_replicas))
    short = (claim.units is not None and claim.units < min_units) or (trained and models < min_replicas)
    if before in DECIDED and short:  # the same minimums as below (the old procedure had them too)
        before = INCONCLUSIVE
    if trained and v in DECIDED and models < min_replicas:
        what = "one trained model" if models == 1 else f"{models} trained models"
        v = v.with_why(f"{v.why}; decided on {what}, below the {min_replicas} independently trained replicas the "
                       "rule asks (a verdict of one model moved with its training seed)", INCONCLUSIVE)
        premise = then(premise, f"Not replicated here: {what} per setting (the rule asks {min_replicas}; the "
                                 "notebook's `replicas` parameter, where it has one, trains more).")
    return replace(claim, verdict=v, premise=premise, replicas=tuple(per), stability=stability, power=power,
                   prospective=prospective,
                   raw=str(claim.verdict), trained=bool(trained), function=f"{fn.__module__}.{fn.__qualname__}",
                   cells=cells, before=before)

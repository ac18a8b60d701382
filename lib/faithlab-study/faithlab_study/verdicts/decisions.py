"""Decisions by the equivalence logic, from a pre-registered :class:`~faithlab_study.verdicts.rules.Rule`.

Direction and size are two questions asked of one interval. Each cell of a claim (a method against Random, a model,
a setting) is an interval (:mod:`faithlab_study.verdicts.intervals`) with two boundaries in the paper's direction:
the value of no effect ``zero`` (0 for a difference; the chance value of a level statistic, the rule's ``zero``) and
the margin ``m``, the smallest effect of interest (:func:`judge`). Every statement is a one-sided test at
:data:`ALPHA` (5 %), so the interval the decisions read is the two-sided ``1 − 2·ALPHA`` (90 %) interval, the
equivalence-testing convention:

- **holds** — the interval lies beyond the margin in the paper's direction (the effect reaches the paper's size);
- **weaker** — it lies beyond ``zero`` in the paper's direction but is not shown to reach the margin: the effect is
  there, smaller or not shown as large as the paper's;
- **absent** — it lies inside the band of no meaningful effect (within ``m − zero`` of ``zero`` either way), or
  beyond ``zero`` the other way (reversed; :attr:`Judgement.reversed`);
- **undecided** — it reaches both ``zero`` and a margin.

A rule whose margin is not beyond ``zero`` in its direction (a non-inferiority or "below a small value" claim, a
sign claim at margin 0) has one boundary: holds beyond it, absent wholly short of it, undecided across it.

The cells then combine as the rule's ``decision`` says (:func:`decide`): one statistic, every cell, a share fixed in
advance, or named parts each decided on its own (:func:`decide_parts`, the only way to "partly reproduced"). Where
one of many cells can decide a statement of the claim ("not reproduced" of an "every" claim; any count of a "share"
claim) the cells' statements are counted after Holm's step-down correction, so that the claim's statement is wrong
at most ALPHA of the time (tests/faithlab_study/verdicts/test_error_rates.py simulates each).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from faithlab.intervals import confidence_level
from faithlab_study.verdicts import intervals as iv
from faithlab_study.verdicts import rules
from faithlab_study.verdicts.rules import Rule
from faithlab_study.verdicts.words import (INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, WEAKER,
                                           Verdict)

if TYPE_CHECKING:
    import torch

__all__ = ["Judgement", "judge", "effect", "decide", "decide_parts", "judgement_table", "OUTCOMES", "ALPHA",
           "DECISION_LEVEL", "cell_rows", "outcome_of", "deciding_before"]

OUTCOMES = ("holds", "weaker", "absent", "undecided")
ALPHA = 0.05
"""The error rate of each one-sided statement (holds, weaker, absent), before Holm's correction over cells."""
DECISION_LEVEL = 1 - 2 * ALPHA
"""The two-sided level of the interval whose ends are the one-sided ALPHA bounds the decisions read."""

# replicated() collects what every judgement rested on, for the power analysis (see faithlab_study.verdicts.power)
RECORDER: contextvars.ContextVar = contextvars.ContextVar("faithlab_judgement_recorder", default=None)
DECIDED: contextvars.ContextVar = contextvars.ContextVar("faithlab_decision_recorder", default=None)
"""While :func:`faithlab_study.verdicts.replicated` records a claim, every :func:`decide` and :func:`decide_parts`
call appends ``(kind, rule, cells or parts, verdict)`` here ("cells": the judgements decided; "parts": the parts'
verdicts), so that the power analysis follows the verdict to the cells that enter it (not a premise's, not a cell
judged and then left out)."""
BEFORE: contextvars.ContextVar = contextvars.ContextVar("faithlab_procedure_before_issue_90", default=False)
"""True while :func:`faithlab_study.verdicts.replicated` decides a claim again by the procedure before issue 90 —
one boundary (the margin), the interval at its own level (95 %), no Holm, each rule as registered before that issue
(:func:`faithlab_study.verdicts.rules.before`: its margins and statistics as they were) — so that the
pre-registration page lists every verdict the issue moved (:attr:`faithlab_study.verdicts.Claim.before`)."""


def deciding_before() -> bool:
    """Whether the claim being decided is decided again by the procedure before issue 90 (:data:`BEFORE`): a claim
    function whose statistic that issue reformulated computes the old one then (its rule's log says which)."""
    return bool(BEFORE.get())


def _as_decided(rule: Rule) -> Rule:
    """``rule``, or, while :data:`BEFORE` is set, the rule as registered before issue 90."""
    if not (BEFORE.get() and isinstance(rule, Rule)):
        return rule
    try:
        return rules.before(rule.id)
    except ValueError:  # a rule built outside the registry (a test's) has no history to undo
        return rule


def outcome_of(low: float, high: float, *, zero: float, margin: float, sign: int) -> str:
    """The outcome (:data:`OUTCOMES`) of an interval [low, high] with the value of no effect ``zero``, the margin and
    the paper's direction ``sign`` (+1 above, −1 below): see the module's docstring."""
    lo, hi = sorted((sign * (low - zero), sign * (high - zero)))
    size = sign * (margin - zero)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undecided"
    if lo > size:
        return "holds"
    if size <= 0:  # one boundary: the margin is not beyond the value of no effect
        return "absent" if hi < size else "undecided"
    if lo > 0:
        return "weaker"
    if hi < 0 or (hi < size and lo > -size):
        return "absent"
    return "undecided"


@dataclass(frozen=True)
class Judgement:
    """One cell of a claim judged against its boundaries: ``interval`` (of the statistic, in its own orientation, at
    :data:`DECISION_LEVEL` where it can be rebuilt), ``margin``, ``zero`` (the value of no effect) and ``direction``
    (the rule's), ``outcome`` (one of :data:`OUTCOMES`) and ``what`` (the cell's name, e.g. "GradCAM − Random")."""

    interval: iv.Interval
    margin: float
    direction: str
    outcome: str
    what: str = ""
    zero: float = 0.0

    @property
    def sign(self) -> int:
        return 1 if self.direction == "above" else -1

    @property
    def holds(self) -> bool | None:
        """True (holds), False (absent) or None (weaker or undecided: not shown to reach the margin, not shown
        absent)."""
        return {"holds": True, "absent": False}.get(self.outcome)

    @property
    def present(self) -> bool:
        """Whether the effect is shown in the paper's direction (holds or weaker)."""
        return self.outcome in ("holds", "weaker")

    @property
    def reversed(self) -> bool:
        """Whether the interval lies beyond the value of no effect the other way (an absent cell, reversed)."""
        i = self.interval
        return self.outcome == "absent" and max(self.sign * (i.low - self.zero), self.sign * (i.high - self.zero)) < 0

    def statement(self, name: str, alpha: float) -> bool:
        """Whether the cell's statement ``name`` ("holds", "present", "absent") is made at one-sided level ``alpha``
        (the interval rebuilt at 1 − 2·alpha; an interval that cannot be rebuilt is read as it is)."""
        i = self.interval.at(1 - 2 * alpha) if alpha != ALPHA or self.interval.level != DECISION_LEVEL \
            else self.interval
        outcome = outcome_of(i.low, i.high, zero=self.zero, margin=self.margin, sign=self.sign)
        if name == "present":
            return outcome in ("holds", "weaker")
        if name == "absent":  # absent, and not shown present at the cell's own level
            return outcome == "absent" and not self.present
        return outcome == name

    def sentence(self, digits: int = 3) -> str:
        i = self.interval
        shown = "absent (reversed)" if self.reversed else self.outcome
        zero = f", no effect at {self.zero:g}" if self.zero else ""
        return (f"{self.what + ': ' if self.what else ''}{i.estimate:.{digits}g} [{i.low:.{digits}g}, "
                f"{i.high:.{digits}g}] {shown} ({self.direction} {self.margin:g}{zero})")


def _margin(rule: Rule, setting: str | None, margin: float | None) -> float:
    if not isinstance(rule, Rule):
        raise TypeError(f"rule must be a faithlab_study.verdicts.Rule as registered (faithlab_study.verdicts.rule(id)), "
                        f"got {type(rule).__name__}")
    rule = _as_decided(rule)
    return rule.margin_for(setting) if margin is None else float(margin)


def judge(interval: iv.Interval, rule: Rule, *, setting: str | None = None, what: str = "",
          margin: float | None = None, _units=None) -> Judgement:
    """``interval`` judged against ``rule``'s boundaries — its value of no effect (``rule.zero``) and its margin (of
    ``setting`` where the rule has one per setting) — in the rule's direction → a :class:`Judgement`, read at
    :data:`DECISION_LEVEL` (the interval is rebuilt there when it can be). ``margin`` overrides the rule's only for a
    threshold the rule states in terms of the data (a premise's own threshold); claims take theirs from the file."""
    if not isinstance(interval, iv.Interval):
        raise TypeError(f"interval must be a faithlab_study.verdicts.Interval, got {type(interval).__name__}")
    m = _margin(rule, setting, margin)
    rule = _as_decided(rule)
    if BEFORE.get():  # the procedure before issue 90: the margin alone, at the interval's own level
        interval, zero = interval, m
    else:
        interval, zero = interval.at(DECISION_LEVEL), rule.zero_for(setting)
    outcome = outcome_of(interval.low, interval.high, zero=zero, margin=m, sign=rule.sign)
    j = Judgement(interval, m, rule.direction, outcome, what, zero)
    record = RECORDER.get()
    if record is not None:
        record.append((j, _units))
    return j


def effect(a: np.ndarray | torch.Tensor, b: np.ndarray | torch.Tensor | None = None, *, rule: Rule, groups=None,
           setting: str | None = None, what: str = "", level: float = 0.95) -> Judgement:
    """The mean of ``a − b`` per unit (``a`` alone when b is None; NaN units dropped), its interval
    (:func:`~faithlab_study.verdicts.intervals.mean_interval`: a t interval on the replica means when ``groups`` names
    ≥ 2 replicas) judged against ``rule`` (:func:`judge`); undecided, with no interval, on fewer than 2 units."""
    x = iv.as_array(a, "a")
    if b is not None:
        y = iv.as_array(b, "b")
        if y.shape != x.shape:
            raise ValueError(f"a and b must hold the same number of paired units, got {x.size} and {y.size}")
        x = x - y
    g = None if groups is None else iv.group_codes(groups, x.size)
    kept = ~np.isnan(x)
    if np.count_nonzero(kept) < 2:  # no interval on fewer than 2 units (the paper-dry profile's one image): undecided
        interval = iv.Interval(float(x[kept].mean()) if kept.any() else math.nan, math.nan, math.nan,
                               confidence_level(level), "t on units", int(np.count_nonzero(kept)),
                               len(set(g[kept].tolist())) if g is not None and kept.any() else 1)
        return judge(interval, rule, setting=setting, what=what)
    interval = iv.mean_interval(x, groups=g, level=level)
    return judge(interval, rule, setting=setting, what=what, _units=(x, g))


def _verdict(value: str, why: str, rule: Rule):
    return Verdict(value, why, rule.decision_text(), rule_id=rule.id)


def decide(judgements: Judgement | Sequence[Judgement] | Mapping[str, Judgement], rule: Rule, *,
           untestable: str | None = None, family: int = 1):
    """The verdict of ``rule``'s claim from its judged cells, as the rule's ``decision`` says (:data:`DECISIONS`).

    untestable: a premise's reason, decided before the outcome (the claim is then "not testable here"). A cell
    judged None (no interval could be computed) counts as undecided. family: how many such decisions are parts of
    one claim any one of which makes it "not reproduced" (a claim of parts that needs every part): the cells'
    "absent" statements are then made at ALPHA / family (Bonferroni over the parts), so that the claim's "not
    reproduced" is wrong at most ALPHA of the time."""
    if not isinstance(rule, Rule):
        raise TypeError(f"rule must be a faithlab_study.verdicts.Rule, got {type(rule).__name__}")
    rule = _as_decided(rule)
    if untestable is not None:
        if not isinstance(untestable, str) or not untestable.strip():
            raise ValueError(f"untestable must be a non-empty reason, got {untestable!r}")
        return _verdict(NOT_TESTABLE, f"not testable: {untestable.strip()}", rule)
    if rule.decision == "parts":
        raise ValueError(f"rule {rule.id} decides by parts: use decide_parts")
    if isinstance(family, bool) or not isinstance(family, int) or family < 1:
        raise ValueError(f"family must be a whole number ≥ 1, got {family!r}")
    if isinstance(judgements, Judgement):
        cells = [judgements]
    elif isinstance(judgements, Mapping):
        cells = list(judgements.values())
    else:
        cells = list(judgements)
    for c in cells:
        if c is not None and not isinstance(c, Judgement):
            raise TypeError(f"judgements must be Judgements (or None for a cell without an interval), got "
                            f"{type(c).__name__}")
    if not cells:
        return _verdict(NOT_TESTABLE, f"not testable: no {rule.over} to judge", rule)
    n = len(cells)
    counts = {o: sum(c is not None and c.outcome == o for c in cells) for o in OUTCOMES}
    counts["undecided"] += sum(c is None for c in cells)
    if rule.decision == "single":
        if n != 1:
            raise ValueError(f"rule {rule.id} decides one statistic, got {n} judgements")
        c = cells[0]
        why = c.sentence() if c is not None else "no interval"
        outcome = "undecided" if c is None else c.outcome
        value = {"holds": REPRODUCED, "weaker": WEAKER, "absent": NOT_REPRODUCED}.get(outcome, INCONCLUSIVE)
        return _recorded("cells", rule, tuple(cells), _verdict(value, why, rule))
    named = {o: [c.what or "?" for c in cells if c is not None and c.outcome == o] for o in ("absent", "weaker")}
    why = ", ".join(f"{o} in {counts[o]}" for o in OUTCOMES if counts[o]) + f" of {n} {rule.over}"
    why += "".join(f"; {o}: {', '.join(names)}" for o, names in named.items() if names and len(names) <= 6)
    if rule.decision == "every":
        absent = holm_count(cells, "absent", ALPHA / family)
        if counts["holds"] == n:
            value = REPRODUCED
        elif absent:
            value = NOT_REPRODUCED
            why += f"; {absent} absent after Holm's correction over the {n} {rule.over}"
        elif counts["holds"] + counts["weaker"] == n:
            value = WEAKER
        else:
            value = INCONCLUSIVE
            if counts["absent"]:
                why += f"; no cell absent after Holm's correction over the {n} {rule.over}"
    else:  # share: every count after Holm's correction (one of many cells can decide it)
        share = float(rule.share)
        need = math.ceil(share * n - 1e-9)
        held, present, absent = (holm_count(cells, s, ALPHA / family if s == "absent" else ALPHA)
                                 for s in ("holds", "present", "absent"))
        value = (REPRODUCED if held >= need else WEAKER if present >= need
                 else NOT_REPRODUCED if n - absent < need else INCONCLUSIVE)
        why += (f"; the rule asks {share:.0%} ({need} of {n}); after Holm's correction {held} hold, {present} shown "
                f"present, {absent} absent")
    return _recorded("cells", rule, tuple(cells), _verdict(value, why, rule))


def _recorded(kind: str, rule: Rule, what, verdict):
    """``verdict``, appended to :data:`DECIDED` with what decided it while a recorder is set."""
    record = DECIDED.get()
    if record is not None:
        record.append((kind, rule, what, verdict))
    return verdict


def holm_count(cells: Sequence[Judgement | None], statement: str, alpha: float = ALPHA) -> int:
    """How many of ``cells`` make ``statement`` ("holds", "present", "absent") after Holm's step-down correction at
    family-wise level ``alpha``: the k-th statement is made when k of the cells make it at alpha / (n − k + 1) (so
    that a claim decided by any one of many cells is wrong at most alpha of the time). A cell without an interval
    makes none."""
    judged = [c for c in cells if c is not None]
    if BEFORE.get():  # the procedure before issue 90 counted every cell at its own level
        return sum(c.outcome == ("holds" if statement == "present" else statement) for c in judged)
    n, made = len(cells), 0
    while made < len(judged):
        level = alpha / (n - made)
        if sum(c.statement(statement, level) for c in judged) < made + 1:
            break
        made += 1
    return made


def decide_parts(parts: Mapping[str, object], rule: Rule, *, untestable: str | None = None):
    """The verdict of a claim of several named parts (``rule.parts``), each already decided (a Verdict):
    reproduced when every part is; reproduced, weaker when every part is reproduced or reproduced weaker (the
    effects are there, some smaller); partly reproduced when the parts shown present (reproduced or weaker) reach
    ``rule.share``, the others decided; not reproduced when fewer are shown present and every part is decided;
    inconclusive when an undecided (inconclusive) part could change the outcome. A part "not testable here" makes
    the claim not testable."""
    if not isinstance(rule, Rule) or rule.decision != "parts":
        raise ValueError(f"rule must be a Rule whose decision is 'parts', got {rule!r}")
    if untestable is not None:
        return _verdict(NOT_TESTABLE, f"not testable: {untestable}", rule)
    if set(parts) != set(rule.parts):
        raise ValueError(f"parts must be the rule's named parts {list(rule.parts)}, got {list(parts)}")
    values = {name: str(v) for name, v in parts.items()}
    why = "; ".join(f"{name}: {v}" for name, v in values.items())
    if any(v == NOT_TESTABLE for v in values.values()):
        return _verdict(NOT_TESTABLE, f"not testable: a part's premise failed ({why})", rule)
    if any(v == PARTLY for v in values.values()):
        raise ValueError("a part is decided as one statistic, every cell or a share: it is never 'partly'")

    def rule_of(words: list[str]) -> str:
        n, full = len(words), sum(w == REPRODUCED for w in words)
        present = full + sum(w == WEAKER for w in words)
        if full == n:
            return REPRODUCED
        if present == n:
            return WEAKER
        return PARTLY if present and present / n >= float(rule.share) - 1e-12 else NOT_REPRODUCED

    words = list(values.values())
    worst = rule_of([NOT_REPRODUCED if w == INCONCLUSIVE else w for w in words])
    best = rule_of([REPRODUCED if w == INCONCLUSIVE else w for w in words])
    value = worst if worst == best else INCONCLUSIVE
    return _recorded("parts", rule, dict(parts), _verdict(value, why, rule))


def judgement_table(judgements: Mapping[str, Judgement] | Sequence[Judgement], **columns) -> list[dict]:
    """Rows (``columns``, cell, estimate, low, high, margin, outcome, replicas, units, interval) for a claim's
    table."""
    items = judgements.items() if isinstance(judgements, Mapping) else ((j.what, j) for j in judgements)
    rows = []
    for name, j in items:
        if j is None:
            rows.append({**columns, "cell": name, "outcome": "undecided"})
            continue
        i = j.interval
        rows.append({**columns, "cell": name or j.what, "estimate": i.estimate, "low": i.low, "high": i.high,
                     "zero": j.zero, "margin": j.margin, "direction": j.direction, "outcome": j.outcome,
                     "replicas": i.replicas, "units": i.units, "interval": i.method})
    return rows


def cell_rows(judgements: Sequence[Judgement]) -> tuple[dict, ...]:
    """A claim's cell table, one dict per judged cell, so that a reader can recompute its verdict: the cell, the
    replica-level ``values`` the interval rests on (";"-joined), the interval (estimate, low, high at ``level``,
    its method and degrees of freedom), the boundaries (``zero``, ``margin``, ``direction``), the ``outcome``, the
    estimate's distance from ``zero`` as a share of the margin's (``of the margin``: 1 at the paper's smallest effect
    of interest; NaN for a margin at zero) and the replicas and units behind it. A cell judged twice with the same interval (a claim function that judges a
    cell for a table and again for its verdict) is listed once."""
    rows, seen = [], set()
    for j in judgements:
        i = j.interval
        row = {"cell": j.what, "values": ";".join(f"{v:.6g}" for v in i.values), "estimate": i.estimate,
               "low": i.low, "high": i.high, "level": i.level, "interval": i.method, "df": i.df, "zero": j.zero,
               "margin": j.margin, "direction": j.direction, "outcome": j.outcome,
               "of the margin": (i.estimate - j.zero) / (j.margin - j.zero) if j.margin != j.zero else math.nan,
               "replicas": i.replicas, "units": i.units}
        key = tuple(str(v) for v in row.values())
        if key not in seen:
            seen.add(key)
            rows.append(row)
    return tuple(rows)


def replica_judgement(values_per_replica, rule: Rule, *, units: int | None = None, setting: str | None = None,
                      what: str = "", level: float = 0.95, correlation: bool = False) -> Judgement:
    """A statistic computed once per trained replica (``values_per_replica``), its t interval judged against
    ``rule``; with ``correlation`` (a correlation per replica, the rule's interval "t on Fisher z of replica
    correlations") the t interval on the Fisher z, mapped back
    (:func:`~faithlab_study.verdicts.intervals.correlation_interval`) — but the plain t interval while the claim is
    decided by the procedure before issue 90."""
    if correlation and not BEFORE.get():
        interval = iv.correlation_interval(values_per_replica, units=units, level=level)
    else:
        interval = iv.replica_interval(values_per_replica, units=units, level=level)
    return judge(interval, rule, setting=setting, what=what, _units=(np.asarray(values_per_replica, float), None))


__all__.append("replica_judgement")

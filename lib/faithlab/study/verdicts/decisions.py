"""Decisions by the equivalence logic, from a pre-registered :class:`~faithlab.study.verdicts.rules.Rule`.

Each cell of a claim (a method against Random, a model, a setting) is an interval
(:mod:`faithlab.study.verdicts.intervals`) judged against the rule's margin in the paper's direction (:func:`judge`):

- **holds** — the interval lies beyond the margin in the paper's direction;
- **fails** — it lies wholly short of the margin: inside the band of no meaningful effect, or beyond it the other way
  (a tight interval around zero is a decision, not a shrug);
- **undecided** — it straddles the margin.

The cells then combine as the rule's ``decision`` says (:func:`decide`): one statistic, every cell ("every", "all
cells", "lowest" = below every competitor), a share fixed in advance ("most"), or named parts each decided on its
own (:func:`decide_parts`, the only way to "partly reproduced").
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from faithlab.evaluation.intervals import confidence_level
from faithlab.study.verdicts import intervals as iv
from faithlab.study.verdicts.rules import Rule
from faithlab.study.verdicts.words import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED, Verdict

if TYPE_CHECKING:
    import torch

__all__ = ["Judgement", "judge", "effect", "decide", "decide_parts", "judgement_table", "OUTCOMES"]

OUTCOMES = ("holds", "fails", "undecided")

# replicated() collects what every judgement rested on, for the power analysis (see faithlab.study.verdicts.power)
RECORDER: contextvars.ContextVar = contextvars.ContextVar("faithlab_judgement_recorder", default=None)


@dataclass(frozen=True)
class Judgement:
    """One cell of a claim judged against its margin: ``interval`` (of the statistic, in its own orientation),
    ``margin`` and ``direction`` (the rule's), ``outcome`` (one of :data:`OUTCOMES`) and ``what`` (the cell's
    name, e.g. "GradCAM − Random")."""

    interval: iv.Interval
    margin: float
    direction: str
    outcome: str
    what: str = ""

    @property
    def holds(self) -> bool | None:
        """True (holds), False (fails) or None (undecided)."""
        return {"holds": True, "fails": False}.get(self.outcome)

    def sentence(self, digits: int = 3) -> str:
        i = self.interval
        return (f"{self.what + ': ' if self.what else ''}{i.estimate:.{digits}g} [{i.low:.{digits}g}, "
                f"{i.high:.{digits}g}] {self.outcome} ({self.direction} {self.margin:g})")


def _margin(rule: Rule, setting: str | None, margin: float | None) -> float:
    if not isinstance(rule, Rule):
        raise TypeError(f"rule must be a faithlab.study.verdicts.Rule as registered (faithlab.study.verdicts.rule(id)), "
                        f"got {type(rule).__name__}")
    return rule.margin_for(setting) if margin is None else float(margin)


def judge(interval: iv.Interval, rule: Rule, *, setting: str | None = None, what: str = "",
          margin: float | None = None, _units=None) -> Judgement:
    """``interval`` judged against ``rule``'s margin (of ``setting`` where the rule has one per setting) in the
    rule's direction → a :class:`Judgement`. ``margin`` overrides the rule's only for a threshold the rule states
    in terms of the data (a premise's own threshold); claims take theirs from the file."""
    if not isinstance(interval, iv.Interval):
        raise TypeError(f"interval must be a faithlab.study.verdicts.Interval, got {type(interval).__name__}")
    m = _margin(rule, setting, margin)
    sign = rule.sign
    lo, hi = sorted((sign * (interval.low - m), sign * (interval.high - m)))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        outcome = "undecided"
    else:
        outcome = "holds" if lo > 0 else "fails" if hi < 0 else "undecided"
    j = Judgement(interval, m, rule.direction, outcome, what)
    record = RECORDER.get()
    if record is not None:
        record.append((j, _units))
    return j


def effect(a: np.ndarray | torch.Tensor, b: np.ndarray | torch.Tensor | None = None, *, rule: Rule, groups=None,
           setting: str | None = None, what: str = "", level: float = 0.95) -> Judgement:
    """The mean of ``a − b`` per unit (``a`` alone when b is None; NaN units dropped), its interval
    (:func:`~faithlab.study.verdicts.intervals.mean_interval`: a t interval on the replica means when ``groups`` names
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
           untestable: str | None = None):
    """The verdict of ``rule``'s claim from its judged cells, as the rule's ``decision`` says (:data:`DECISIONS`).

    untestable: a premise's reason, decided before the outcome (the claim is then "not testable here"). A cell
    judged None (no interval could be computed) counts as undecided."""
    if not isinstance(rule, Rule):
        raise TypeError(f"rule must be a faithlab.study.verdicts.Rule, got {type(rule).__name__}")
    if untestable is not None:
        if not isinstance(untestable, str) or not untestable.strip():
            raise ValueError(f"untestable must be a non-empty reason, got {untestable!r}")
        return _verdict(NOT_TESTABLE, f"not testable: {untestable.strip()}", rule)
    if rule.decision == "parts":
        raise ValueError(f"rule {rule.id} decides by parts: use decide_parts")
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
    holds = sum(c is not None and c.outcome == "holds" for c in cells)
    fails = sum(c is not None and c.outcome == "fails" for c in cells)
    n = len(cells)
    undecided = n - holds - fails
    if rule.decision == "single":
        if n != 1:
            raise ValueError(f"rule {rule.id} decides one statistic, got {n} judgements")
        c = cells[0]
        why = c.sentence() if c is not None else "no interval"
        value = REPRODUCED if holds else NOT_REPRODUCED if fails else INCONCLUSIVE
        return _verdict(value, why, rule)
    failing = [c.what for c in cells if c is not None and c.outcome == "fails"]
    why = (f"holds in {holds} of {n} {rule.over}, fails in {fails}" + (f" ({', '.join(failing)})" if failing else "")
           + (f", undecided in {undecided}" if undecided else ""))
    if rule.decision == "every":
        value = REPRODUCED if holds == n else NOT_REPRODUCED if fails else INCONCLUSIVE
    else:  # share
        share = float(rule.share)
        value = (REPRODUCED if holds / n >= share - 1e-12 else NOT_REPRODUCED if (holds + undecided) / n < share - 1e-12
                 else INCONCLUSIVE)
        why += f"; the rule asks {share:.0%}"
    return _verdict(value, why, rule)


def decide_parts(parts: Mapping[str, object], rule: Rule, *, untestable: str | None = None):
    """The verdict of a claim of several named parts (``rule.parts``), each already decided (a Verdict):
    reproduced when every part is; partly reproduced when the reproduced parts reach ``rule.share`` and every part
    is decided; not reproduced when no part is reproduced and every part is decided; inconclusive when an undecided
    (inconclusive) part could change the outcome. A part "not testable here" makes the claim not testable."""
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

    def rule_of(reproduced: int, n: int) -> str:
        if reproduced == n:
            return REPRODUCED
        if reproduced == 0:
            return NOT_REPRODUCED
        return PARTLY if reproduced / n >= float(rule.share) - 1e-12 else NOT_REPRODUCED

    if any(v == PARTLY for v in values.values()):
        raise ValueError("a part is decided as one statistic, every cell or a share: it is never 'partly'")
    n = len(values)
    sure = sum(v == REPRODUCED for v in values.values())
    undecided = sum(v == INCONCLUSIVE for v in values.values())
    worst, best = rule_of(sure, n), rule_of(sure + undecided, n)
    value = worst if worst == best else INCONCLUSIVE
    return _verdict(value, why, rule)


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
                     "margin": j.margin, "direction": j.direction, "outcome": j.outcome, "replicas": i.replicas,
                     "units": i.units, "interval": i.method})
    return rows


def replica_judgement(values_per_replica, rule: Rule, *, units: int | None = None, setting: str | None = None,
                      what: str = "", level: float = 0.95) -> Judgement:
    """A statistic computed once per trained replica (``values_per_replica``), its t interval judged against
    ``rule``."""
    interval = iv.replica_interval(values_per_replica, units=units, level=level)
    return judge(interval, rule, setting=setting, what=what, _units=(np.asarray(values_per_replica, float), None))


__all__.append("replica_judgement")

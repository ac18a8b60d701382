"""The pre-registered rules, each registered in committed code beside the claim function that decides by it: the
decorator :func:`registered` (:func:`registered_answer` for a study answer) placed directly above the function.

Per claim (its label, e.g. ``C1``) the rule fixes the statistic, the paper's direction, the smallest effect of interest
(``margin``, with ``margin_source``: the paper's numbers it comes from, or the convention where the paper gives none),
how several cells combine (``decision``: one statistic, every cell, a share fixed in advance, or named parts), the
null, the premises, the replicas and units the design needs and the interval. A claim function takes its
:class:`Rule` from :func:`rule` and hands it to :func:`faithlab_study.verdicts.decide`; a
:class:`faithlab_study.verdicts.Claim` carries the rule it was decided by, so no decision uses a rule that is not
registered. :func:`rule`, :func:`all_rules`, :func:`answer`, :func:`all_answers` and :func:`log` first import every
paper's claims (:data:`CLAIMS_MODULES`), so a lookup never depends on what the caller imported.

A study answer (e.g. the synthesis's guide) registers how it decides what it names the same way
(:func:`registered_answer`, :func:`answer`).

Each registration carries its change log (``log=[...]``, oldest first): one entry per change (``date`` YYYY-MM-DD,
``change`` registered/changed/removed, ``why``, and ``field``, ``old``, ``new`` for a change), the registration
first; the last entry carries the ``fingerprint`` of the rule after it (:func:`fingerprint`), so that a change
without a log entry is caught (:func:`audit`, tests/faithlab_study/verdicts/test_rules.py, ``python -m faithlab_study.verdicts``,
which prints the fingerprint to write). A chapter's rules registered together share that first entry, written once
in the chapter's claims package (``claims/registration.py``: ``Chapter(registration=REGISTERED, ...)``); a rule
unchanged since gives only its fingerprint (``fingerprint=...``), a changed one its whole log
(``[{**REGISTERED, "fingerprint": ...}, *changes]``).

Until issue 73 the rules lived in one TOML file per chapter (``registered/<paper>.toml`` beside this module), with a
file-wide change log whose fingerprints covered whole files; those files and their logs stay in git history. Each
rule's log here is its file's entries that named it (or every claim of the file, unless the rule had a registration
entry of its own), the fingerprint recomputed for the rule alone on its last entry.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

__all__ = ["Rule", "Chapter", "registered", "registered_answer", "rule", "all_rules", "log", "fingerprint", "zero_change",
           "before", "REDECIDED_BY", "DECISIONS",
           "DIRECTIONS", "rule_files", "registrations", "audit", "audit_log", "answer", "all_answers", "HOLDS_UP",
           "BEATS", "CLAIMS_MODULES"]

CLAIMS_MODULES = tuple(f"faithlab_study.papers.{p}.claims" for p in (
    "fewclass", "ffidelity", "reco_mege", "saco", "synthesis", "trace")) + ("faithlab_study.papers.basics",)
"""The modules whose claim functions register every rule (imported before any lookup)."""
DECISIONS = {
    "single": "one statistic, its one-sided 5 % bounds (the 90 % interval) against the value of no effect and the "
              "margin: reproduced when it lies beyond the margin in the paper's direction, reproduced, weaker when "
              "it lies beyond the value of no effect but not shown beyond the margin, not reproduced when it lies "
              "inside the band of no meaningful effect or beyond the value of no effect the other way, inconclusive "
              "when it reaches both",
    "every": "every cell must hold (its interval beyond the margin): reproduced when all do, reproduced, weaker when "
             "every cell is shown in the paper's direction and not all reach the margin, not reproduced when a cell "
             "is shown absent after Holm's correction over the cells, inconclusive otherwise",
    "share": "at least the stated share of the cells must hold: reproduced when the cells shown to hold reach it, "
             "reproduced, weaker when the cells shown in the paper's direction reach it, not reproduced when the "
             "cells not shown absent could not, each count after Holm's correction over the cells, inconclusive "
             "otherwise",
    "parts": "a claim of several named parts, each decided on its own: reproduced when every part is, reproduced, "
             "weaker when every part is reproduced or reproduced weaker, partly reproduced when the parts shown "
             "present reach the stated share and the others are decided, not reproduced when fewer are, "
             "inconclusive when an undecided part could change that; where every part is needed (share 1), one part "
             "not reproduced decides it, so each part's absent statements are made at 5 % divided by the number of "
             "parts",
}
"""How a claim's cells combine into its verdict, by the ``decision`` a rule names."""
DIRECTIONS = ("above", "below")
_FIELDS = {"paper": str, "kind": str, "claim": str, "statistic": str, "direction": str, "margin": (int, float, dict),
           "margin_source": str, "decision": str, "null": str, "premises": list, "replicas": int, "units": int,
           "interval": str}
_OPTIONAL = {"share": (int, float), "parts": list, "over": str, "unit": str, "note": str, "zero": (int, float, dict),
             "zero_source": str}
HOLDS_UP = {
    "recovers and not beaten": "a metric holds up when its recovery lies above the margin and no metric beats it "
                               "(absence of a significant difference counts as a tie)",
    "recovers and not worse than any": "a metric holds up when its recovery lies above the margin and, against every "
                                       "other metric, the interval of (other − it) lies below the margin: shown not "
                                       "worse than any by more than the margin (an intersection-union test, each "
                                       "comparison at the interval's level)",
}
"""How the guide's "holds up" is decided, by the ``holds_up`` an ``[answers.<name>]`` table names."""
BEATS = {
    "per comparison": "metric A beats metric B when the interval of their paired difference lies above the margin, "
                      "each pair at the interval's level",
    "holm": "metric A beats metric B when the one-sided t test of their paired difference against the margin "
            "rejects after Holm's step-down correction over every ordered pair of the situation (family-wise error "
            "1 − level)",
}
"""How the guide's "beaten by" is decided, by the ``beats`` an ``[answers.<name>]`` table names."""
_ANSWER_FIELDS = {"paper": str, "statement": str, "margin": str, "margin_source": str, "holds_up": str,
                  "beats": str, "level": float, "replicas": int, "interval": str}


@dataclass(frozen=True)
class Rule:
    """One claim's pre-registered rule (what :func:`registered` records)."""

    id: str
    paper: str
    kind: str
    claim: str
    statistic: str
    direction: str
    margin: float | Mapping
    margin_source: str
    decision: str
    null: str
    premises: tuple
    replicas: int
    units: int
    interval: str
    share: float | None = None
    parts: tuple = ()
    over: str = "cells"
    unit: str = ""
    note: str = ""
    zero: float | Mapping = 0.0
    zero_source: str = ""
    raw: Mapping = field(default_factory=dict, repr=False, compare=False)

    def zero_for(self, setting: str | None = None) -> float:
        """The value of no effect (0 for a difference; the chance value of a level statistic), of ``setting`` where
        the rule gives one per setting: the second boundary of :func:`faithlab_study.verdicts.judge`."""
        return self._per_setting(self.zero, "a value of no effect", setting)

    def _per_setting(self, value, what: str, setting: str | None) -> float:
        if isinstance(value, Mapping):
            if setting is None or setting not in value:
                raise ValueError(f"rule {self.id} has {what} per setting {sorted(value)}; "
                                 f"setting must name one, got {setting!r}")
            return float(value[setting])
        return float(value)

    def margin_for(self, setting: str | None = None) -> float:
        """The margin, of ``setting`` where the rule gives one per setting (a table keyed by setting name)."""
        return self._per_setting(self.margin, "a margin", setting)

    @property
    def sign(self) -> int:
        """+1 when the paper's direction is "above" the margin, −1 when "below"."""
        return 1 if self.direction == "above" else -1

    def margin_text(self) -> str:
        if isinstance(self.margin, Mapping):
            return ", ".join(f"{k}: {float(v):g}" for k, v in self.margin.items())
        return f"{float(self.margin):g}"

    def text(self) -> str:
        """The rule as one sentence for a claim's row: statistic, the paper's direction and the margin with its
        source (and the value of no effect where it is not 0)."""
        zero = ""
        if isinstance(self.zero, Mapping) or float(self.zero) != 0.0:
            shown = (", ".join(f"{k}: {float(v):g}" for k, v in self.zero.items()) if isinstance(self.zero, Mapping)
                     else f"{float(self.zero):g}")
            zero = f"; no effect at {shown} ({self.zero_source})"
        return (f"{self.statistic}; the paper's direction: {self.direction} the margin {self.margin_text()} "
                f"({self.margin_source}){zero}; interval: {self.interval}")

    def decision_text(self) -> str:
        """How the verdict is decided, in the words of :data:`DECISIONS` (with the share where the rule has one)."""
        text = DECISIONS[self.decision]
        if self.decision == "every":
            text = text.replace("every cell", f"every {self.over.rstrip('s')}" if self.over else "every cell")
        if self.share is not None:
            text += f" (share {self.share:.0%}, fixed in advance)"
        return text


def _check_fields(where: str, entry: Mapping, required: Mapping, optional) -> None:
    """Every ``required`` field present with its type (no bool for a number), no field outside ``required`` and
    ``optional``; ValueError naming the table otherwise."""
    for name, kind in required.items():
        if name not in entry:
            raise ValueError(f"{where} lacks {name!r}")
        if not isinstance(entry[name], kind) or isinstance(entry[name], bool):
            raise ValueError(f"{where}: {name} must be {kind}, got {entry[name]!r}")
    unknown = set(entry) - set(required) - set(optional)
    if unknown:
        raise ValueError(f"{where} has unknown fields {sorted(unknown)}")


def _check(cid: str, entry: Mapping) -> Rule:
    where = f"rule {cid}"
    _check_fields(where, entry, _FIELDS, _OPTIONAL)
    if entry["kind"] not in ("paper", "study check"):
        raise ValueError(f"{where}: kind must be 'paper' or 'study check', got {entry['kind']!r}")
    if entry["direction"] not in DIRECTIONS:
        raise ValueError(f"{where}: direction must be one of {DIRECTIONS}, got {entry['direction']!r}")
    if entry["decision"] not in DECISIONS:
        raise ValueError(f"{where}: decision must be one of {tuple(DECISIONS)}, got {entry['decision']!r}")
    margins = entry["margin"].values() if isinstance(entry["margin"], Mapping) else [entry["margin"]]
    if not all(isinstance(m, (int, float)) and not isinstance(m, bool) and math.isfinite(m) for m in margins):
        raise ValueError(f"{where}: margin must be a finite number or a table of them, got {entry['margin']!r}")
    if entry["decision"] in ("share", "parts") and not isinstance(entry.get("share"), (int, float)):
        raise ValueError(f"{where}: a '{entry['decision']}' decision needs its share, fixed in advance")
    if entry["decision"] == "parts" and len(entry.get("parts", ())) < 2:
        raise ValueError(f"{where}: a 'parts' decision names at least two parts")
    zeros = entry["zero"].values() if isinstance(entry.get("zero"), Mapping) else [entry.get("zero", 0.0)]
    if not all(isinstance(z, (int, float)) and not isinstance(z, bool) and math.isfinite(z) for z in zeros):
        raise ValueError(f"{where}: zero must be a finite number or a table of them, got {entry.get('zero')!r}")
    if "zero" in entry and not str(entry.get("zero_source", "")).strip():
        raise ValueError(f"{where}: a rule that sets zero says why in zero_source")
    if entry["replicas"] < 1 or entry["units"] < 1:
        raise ValueError(f"{where}: replicas and units must be ≥ 1")
    if not str(entry["margin_source"]).strip():
        raise ValueError(f"{where}: margin_source must say where the margin comes from")
    return Rule(id=cid, paper=entry["paper"], kind=entry["kind"], claim=entry["claim"], statistic=entry["statistic"],
                direction=entry["direction"], margin=entry["margin"], margin_source=entry["margin_source"],
                decision=entry["decision"], null=entry["null"], premises=tuple(entry["premises"]),
                replicas=int(entry["replicas"]), units=int(entry["units"]), interval=entry["interval"],
                share=None if entry.get("share") is None else float(entry["share"]),
                parts=tuple(entry.get("parts", ())), over=entry.get("over", "cells"), unit=entry.get("unit", ""),
                note=entry.get("note", ""), zero=entry.get("zero", 0.0), zero_source=entry.get("zero_source", ""),
                raw=dict(entry))


def _check_answer(name: str, entry: Mapping) -> dict:
    where = f"answer {name}"
    _check_fields(where, entry, _ANSWER_FIELDS, ("note", "null", "cost_budget"))
    if entry["holds_up"] not in HOLDS_UP:
        raise ValueError(f"{where}: holds_up must be one of {tuple(HOLDS_UP)}, got {entry['holds_up']!r}")
    if entry["beats"] not in BEATS:
        raise ValueError(f"{where}: beats must be one of {tuple(BEATS)}, got {entry['beats']!r}")
    if not 0 < entry["level"] < 1:
        raise ValueError(f"{where}: level must lie in (0, 1), got {entry['level']!r}")
    return dict(entry)


@dataclass(frozen=True)
class Registration:
    """Where a rule or an answer is registered and its change log: ``where`` names the function it decorates
    (``module.qualname``), ``file`` and ``line`` the decorator's first line."""

    name: str
    fields: Mapping
    log: tuple
    where: str
    file: str
    line: int


_RULES: dict[str, tuple[Rule, Registration]] = {}
_ANSWERS: dict[str, tuple[dict, Registration]] = {}


def _register(table: dict, name: str, value, fields: Mapping, log: list[Mapping] | tuple, depth: int) -> Callable:
    caller = sys._getframe(depth)
    file, line = caller.f_code.co_filename, caller.f_lineno

    def decorate(fn):
        where = f"{fn.__module__}.{fn.__qualname__}"
        held = table.get(name)
        if held is not None and held[1].where != where:
            raise ValueError(f"{name!r} is registered twice: on {held[1].where} ({held[1].file}:{held[1].line}) "
                             f"and on {where} ({file}:{line})")
        entries = tuple(dict(entry) for entry in log)
        table[name] = (value, Registration(name, dict(fields), entries, where, file, line))
        return fn

    return decorate


def registered(claim_id: str, *, log: list[Mapping] | tuple, **fields) -> Callable:
    """Register claim ``claim_id``'s rule on the claim function that decides by it (placed directly above it; stack
    several where one function decides several ids): the fields of a :class:`Rule` (paper, kind, claim, statistic,
    direction, margin, margin_source, decision, null, premises, replicas, units, interval; optionally share, parts,
    over, unit, note), checked here, and its change log ``log`` (see the module's docstring). Returns the function
    unchanged; ValueError on a bad field or on an id registered on another function too."""
    checked = _check(claim_id, fields)
    return _register(_RULES, claim_id, checked, fields, log, 2)


@dataclass(frozen=True)
class Chapter:
    """A chapter's shared rule fields, written once (issue 90: rules written once): ``Chapter(paper="saco",
    kind="paper", replicas=3, ...).registered("S3", claim=..., ...)`` registers the rule of :func:`registered` with
    these fields as defaults, the registration holding only what differs. The rule is the same as if every field were
    written out (its fingerprint too: :func:`fingerprint` reads the merged fields).

    ``registration``: the chapter's registration entry, the first entry of the change log of every rule it registered
    together, written once; a rule unchanged since then gives only its ``fingerprint`` (:meth:`registered`).
    :meth:`of_paper` gives the usual chapter of a paper's claims, :meth:`family` a family of the chapter's rules (its
    defaults with a few fields on top, the same entry)."""

    defaults: Mapping = field(default_factory=dict)
    registration: Mapping | None = None

    def __init__(self, *, registration: Mapping | None = None, **defaults):
        unknown = set(defaults) - set(_FIELDS) - set(_OPTIONAL)
        if unknown:
            raise ValueError(f"a chapter's defaults must be rule fields, got {sorted(unknown)}")
        if registration is not None and registration.get("change") != "registered":
            raise ValueError(f"a chapter's registration entry registers (change = \"registered\"), got "
                             f"{registration!r:.80}")
        object.__setattr__(self, "defaults", dict(defaults))
        object.__setattr__(self, "registration", None if registration is None else dict(registration))

    @classmethod
    def of_paper(cls, paper: str, *, registration: Mapping, **fields) -> Chapter:
        """The usual chapter of ``paper``'s claims, under its ``registration`` entry: a paper claim judged above its
        margin in every cell, on the house design (3 trained replicas × 30 units, the house's minimums
        :data:`~faithlab_study.verdicts.MIN_REPLICAS` and :data:`~faithlab_study.verdicts.MIN_UNITS`); ``fields``
        after these, and over them where they name one."""
        return cls(registration=registration, **{"paper": paper, "kind": "paper", "direction": "above",
                                                 "decision": "every", "replicas": 3, "units": 30, **fields})

    def family(self, **fields) -> Chapter:
        """A family of the chapter's rules: its defaults with ``fields`` on top (a shared null, premises, interval),
        under the same registration entry."""
        return Chapter(registration=self.registration, **{**self.defaults, **fields})

    def registered(self, claim_id: str, *, log: list[Mapping] | tuple | None = None, fingerprint: str | None = None,
                   **fields) -> Callable:
        """:func:`registered` of ``claim_id`` with the chapter's defaults under ``fields``, with its change log
        ``log``, or, for a rule unchanged since the chapter registered it, only its ``fingerprint``: the log is then
        the chapter's :attr:`registration` entry carrying that fingerprint."""
        if (log is None) == (fingerprint is None):
            raise TypeError(f"rule {claim_id}: give its change log (log=[...]) or, unchanged since its chapter "
                            "registered it, its fingerprint (fingerprint=...), not both")
        if fingerprint is not None:
            if self.registration is None:
                raise ValueError(f"rule {claim_id}: fingerprint= needs the chapter's registration entry "
                                 "(Chapter(registration=...)); else give its log")
            log = [{**self.registration, "fingerprint": fingerprint}]
        merged = {**copy.deepcopy(self.defaults), **fields}  # each rule its own lists (premises), as written out
        return _register(_RULES, claim_id, _check(claim_id, merged), merged, log, 2)


def registered_answer(name: str, *, log: list[Mapping] | tuple, **fields) -> Callable:
    """Register how the study answer ``name`` (e.g. the synthesis's ``guide``) decides what it names, on the function
    that decides it: paper, statement, margin, margin_source, holds_up (:data:`HOLDS_UP`), beats (:data:`BEATS`),
    level, replicas, interval (optionally note, null, cost_budget), with its change log ``log``."""
    checked = _check_answer(name, fields)
    return _register(_ANSWERS, name, checked, fields, log, 2)


def _import_claims() -> None:
    """Import every paper's claims, so that every rule is registered (lazily: the claims import this module)."""
    import importlib

    for module in CLAIMS_MODULES:
        importlib.import_module(module)


def _order(table: Mapping) -> list[str]:
    return sorted(table, key=lambda k: (table[k][1].fields.get("paper", ""), table[k][1].file, table[k][1].line))


def registrations() -> dict[str, Registration]:
    """Every registration (rules, then answers), by id: its fields, change log and where it is registered."""
    _import_claims()
    return {**{k: _RULES[k][1] for k in _order(_RULES)}, **{k: _ANSWERS[k][1] for k in _order(_ANSWERS)}}


def all_rules() -> dict[str, Rule]:
    """Every registered rule, by claim id (by paper, then in the order of the code)."""
    _import_claims()
    return {k: _RULES[k][0] for k in _order(_RULES)}


def zero_change(date: str, new: float, why: str, *, source: str, fingerprint: str, old: float = 0.0,
                source_why: str = "the source of the value of no effect (entry above)") -> tuple[dict, dict]:
    """The two change-log entries of a rule that sets its value of no effect: ``zero`` from ``old`` to ``new``
    (``why``), then ``zero_source`` (``source``, ``source_why``) with the ``fingerprint`` of the rule after both —
    written once here for every rule that moved its zero (issue 90), spread into its ``log=[...]``."""
    return ({"date": date, "change": "changed", "field": "zero", "old": old, "new": new, "why": why},
            {"date": date, "change": "changed", "field": "zero_source", "old": "", "new": source,
             "why": source_why, "fingerprint": fingerprint})


def log() -> dict[str, list[dict]]:
    """Each rule's and answer's change log (by its id), oldest first."""
    return {k: [dict(e) for e in r.log] for k, r in registrations().items()}


def all_answers() -> dict[str, dict]:
    """Every registered answer, by name."""
    _import_claims()
    return {k: dict(_ANSWERS[k][0]) for k in _order(_ANSWERS)}


def answer(name: str) -> dict:
    """The registered rule of the study answer ``name`` (e.g. ``"guide"``); ValueError when it has none."""
    _import_claims()
    if name not in _ANSWERS:
        raise ValueError(f"answer {name!r} has no rule: register it (faithlab_study.verdicts.registered_answer above "
                         "the function that decides it, with its change log) before deciding it")
    return dict(_ANSWERS[name][0])


def rule(claim_id: str) -> Rule:
    """The registered rule of claim ``claim_id`` (e.g. ``"C1"``); ValueError when it has none."""
    _import_claims()
    if claim_id not in _RULES:
        raise ValueError(f"claim_id {claim_id!r} has no rule: register it (faithlab_study.verdicts.registered above "
                         "the claim function, with its change log) before deciding it")
    return _RULES[claim_id][0]


REDECIDED_BY = 90
"""The issue whose changes :func:`before` undoes: a log entry that changes a field and carries ``"issue": 90`` (a
margin moved onto the stand-in's scale, a statistic reformulated) is undone when the same data are decided again by
the procedure before that issue (:data:`faithlab_study.verdicts.decisions.BEFORE`), so that the pre-registration
page lists every verdict the issue moved, the rules' changes with the procedure's."""


def before(claim_id: str) -> Rule:
    """The rule of ``claim_id`` as registered before issue :data:`REDECIDED_BY`: each change its log marks with
    ``"issue": REDECIDED_BY`` undone, newest first (the field back to the entry's ``old``); the rule itself when none
    is marked."""
    held, reg = _RULES[rule(claim_id).id]
    cached = _BEFORE.get(claim_id)
    if cached is not None and cached[0] is reg:
        return cached[1]
    fields = dict(reg.fields)
    undone = False
    for entry in reversed(reg.log):
        if entry.get("issue") == REDECIDED_BY and entry.get("change") == "changed":
            fields[entry["field"]] = copy.deepcopy(entry["old"])
            undone = True
    old = _check(claim_id, fields) if undone else held
    _BEFORE[claim_id] = (reg, old)
    return old


_BEFORE: dict[str, tuple[Registration, Rule]] = {}


def rule_files() -> list[Path]:
    """The source files that register rules or answers, in name order."""
    return sorted({Path(r.file) for r in registrations().values()})


def fingerprint(fields: Rule | Mapping) -> str:
    """12 hex digits of the SHA-256 of one rule's (or answer's) fields as canonical JSON: what the last entry of its
    change log records."""
    plain = dict(fields.raw) if isinstance(fields, Rule) else dict(fields)
    return hashlib.sha256(json.dumps(plain, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


_LOG_FIELDS = ("date", "change", "why")


def audit_log(name: str, fields: Mapping, entries: list[Mapping] | tuple) -> list[str]:
    """What is wrong with the change log ``entries`` of the rule (or answer) ``name`` whose fields are ``fields``
    (an empty list when nothing is): every entry has a date (YYYY-MM-DD, never earlier than the entry before), a
    change and a reason; the first registers; a change names its field with ``old`` and ``new``, and the last change
    of a field gives its current value; the last entry's fingerprint is the rule's (else it changed without an
    entry: the message gives the fingerprint to write)."""
    import re

    if not entries:
        return [f"{name}: no change log (log=[...] with its registration)"]
    problems: list[str] = []
    previous = ""
    latest: dict[str, object] = {}
    for k, entry in enumerate(entries, 1):
        missing = [f for f in _LOG_FIELDS if not str(entry.get(f, "")).strip()]
        if missing:
            problems.append(f"{name} log entry {k} lacks {missing}")
            continue
        date = str(entry["date"])
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            problems.append(f"{name} log entry {k}: date must read YYYY-MM-DD, got {date!r}")
        elif date < previous:
            problems.append(f"{name} log entry {k}: dated {date}, before the entry above ({previous})")
        previous = max(previous, date)
        change = entry["change"]
        if k == 1 and change != "registered":
            problems.append(f"{name} log entry 1 must register the rule (change = \"registered\")")
        if change == "changed":
            if not all(f in entry for f in ("field", "old", "new")):
                problems.append(f"{name} log entry {k} changes the rule: it names field, old and new")
            else:
                latest[entry["field"]] = entry["new"]
        elif change not in ("registered", "removed"):
            problems.append(f"{name} log entry {k}: change must be registered, changed or removed, got {change!r}")
    current = fingerprint(fields)
    if str(entries[-1].get("fingerprint")) != current:
        problems.append(f"{name}: the rule changed without an entry in its log (the last entry records fingerprint "
                        f"{entries[-1].get('fingerprint')!r}, the rule's is {current!r}): add an entry naming the "
                        f"field, old → new and why, with fingerprint {current}")
    for field_name, new in latest.items():
        if fields.get(field_name) != new:
            problems.append(f"{name}: the log's last change of {field_name} gives {new!r}, the rule holds "
                            f"{fields.get(field_name)!r}")
    return problems


def audit(names: list[str] | tuple | None = None) -> list[str]:
    """What is wrong with the change log of every registered rule and answer (or of those ``names``):
    :func:`audit_log` of each."""
    found = registrations()
    unknown = sorted(set(names or ()) - set(found))
    problems = [f"{n}: no rule or answer is registered under this id" for n in unknown]
    for name, r in found.items():
        if names is None or name in names:
            problems += audit_log(name, r.fields, r.log)
    return problems

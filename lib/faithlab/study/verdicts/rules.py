"""The pre-registered rules: the committed rules files ``registered/<paper>.toml`` beside this module (one per
chapter, so that a chapter's rules and their change log read together), read by every claim function.

Per claim (its label, e.g. ``C1``) the file fixes the statistic, the paper's direction, the smallest effect of interest
(``margin``, with ``margin_source``: the paper's numbers it comes from, or the convention where the paper gives none),
how several cells combine (``decision``: one statistic, every cell, a share fixed in advance, or named parts), the
null, the premises, the replicas and units the design needs and the interval. A claim function takes its
:class:`Rule` from :func:`rule` and hands it to :func:`faithlab.study.verdicts.decide`; a :class:`faithlab.study.verdicts.Claim`
carries the rule it was decided by, so no decision uses a rule that is not in the file.

A file may also register how a study answer decides what it names (``[answers.<name>]``, e.g. the synthesis's
guide: :func:`answer`), under the same change log and fingerprint.

Each file's ``[[log]]`` is its change log: one line per change (date, claim, field, old → new, why), the registration
first. Each line carries the fingerprint (:func:`fingerprint`) of the file's rules after it, so that a change without a
log line is caught (tests/package/test_rules.py): the last line's fingerprint must be the file's, and the last line
that names a claim's field must give its current value.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RULES_DIR", "Rule", "rule", "all_rules", "log", "fingerprint", "DECISIONS", "DIRECTIONS", "load",
           "rule_files", "audit", "answer", "all_answers", "load_answers", "HOLDS_UP", "BEATS"]

RULES_DIR = Path(__file__).with_name("registered")
"""The committed rules files, one ``<paper>.toml`` per chapter."""
DECISIONS = {
    "single": "one statistic: reproduced when its interval lies beyond the margin in the paper's direction, not "
              "reproduced when it lies wholly short of it (inside the band of no meaningful effect or beyond it the "
              "other way), inconclusive when it straddles the margin",
    "every": "every cell must hold (its interval beyond the margin): reproduced when all do, not reproduced when one "
             "is shown short of the margin, inconclusive otherwise",
    "share": "at least the stated share of the cells must hold: reproduced when the cells shown to hold reach it, "
             "not reproduced when even the undecided cells could not, inconclusive otherwise",
    "parts": "a claim of several named parts, each decided on its own: reproduced when every part is, partly "
             "reproduced when at least the stated share of the parts is and the others are decided, not reproduced "
             "when none is, inconclusive when an undecided part could change that",
}
"""How a claim's cells combine into its verdict, by the ``decision`` a rule names."""
DIRECTIONS = ("above", "below")
_FIELDS = {"paper": str, "kind": str, "claim": str, "statistic": str, "direction": str, "margin": (int, float, dict),
           "margin_source": str, "decision": str, "null": str, "premises": list, "replicas": int, "units": int,
           "interval": str}
_OPTIONAL = {"share": (int, float), "parts": list, "over": str, "unit": str, "note": str}
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
    """One claim's pre-registered rule (a ``[claims.<id>]`` table of ``rules.toml``)."""

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
    raw: Mapping = field(default_factory=dict, repr=False, compare=False)

    def margin_for(self, setting: str | None = None) -> float:
        """The margin, of ``setting`` where the rule gives one per setting (a table keyed by setting name)."""
        if isinstance(self.margin, Mapping):
            if setting is None or setting not in self.margin:
                raise ValueError(f"rule {self.id} has a margin per setting {sorted(self.margin)}; "
                                 f"setting must name one, got {setting!r}")
            return float(self.margin[setting])
        return float(self.margin)

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
        source."""
        return (f"{self.statistic}; the paper's direction: {self.direction} the margin {self.margin_text()} "
                f"({self.margin_source}); interval: {self.interval}")

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
    where = f"[claims.{cid}]"
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
                note=entry.get("note", ""), raw=dict(entry))


def _check_answer(name: str, entry: Mapping) -> dict:
    where = f"[answers.{name}]"
    _check_fields(where, entry, _ANSWER_FIELDS, ("note", "null", "cost_budget"))
    if entry["holds_up"] not in HOLDS_UP:
        raise ValueError(f"{where}: holds_up must be one of {tuple(HOLDS_UP)}, got {entry['holds_up']!r}")
    if entry["beats"] not in BEATS:
        raise ValueError(f"{where}: beats must be one of {tuple(BEATS)}, got {entry['beats']!r}")
    if not 0 < entry["level"] < 1:
        raise ValueError(f"{where}: level must lie in (0, 1), got {entry['level']!r}")
    return dict(entry)


def load_answers(path: Path | str) -> dict[str, dict]:
    """The registered answers of one rules file (its ``[answers.<name>]`` tables: how a study answer such as the
    synthesis's guide decides what it names), ``{}`` when it has none."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    answers = data.get("answers", {})
    try:
        return {name: _check_answer(name, entry) for name, entry in answers.items()}
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def load(path: Path | str) -> tuple[dict[str, Rule], list[dict]]:
    """The rules and the change log of one rules file → ``({id: Rule}, [log line, ...])``."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    claims = data.get("claims", {})
    if not isinstance(claims, Mapping) or not claims:
        raise ValueError(f"{path} holds no [claims.<id>] table")
    try:
        return {cid: _check(cid, entry) for cid, entry in claims.items()}, list(data.get("log", []))
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def rule_files(folder: Path | str = RULES_DIR) -> list[Path]:
    """The rules files of ``folder``, in name order."""
    return sorted(Path(folder).glob("*.toml"))


@functools.lru_cache(maxsize=1)
def _loaded() -> tuple[dict[str, Rule], dict[str, list[dict]], dict[str, dict]]:
    found: dict[str, Rule] = {}
    logs: dict[str, list[dict]] = {}
    answers: dict[str, dict] = {}
    for path in rule_files():
        claims, lines = load(path)
        clash = set(claims) & set(found)
        if clash:
            raise ValueError(f"{path} registers {sorted(clash)}, registered in another rules file too")
        found.update(claims)
        logs[path.stem] = lines
        named = load_answers(path)
        clash = set(named) & set(answers)
        if clash:
            raise ValueError(f"{path} registers answers {sorted(clash)}, registered in another rules file too")
        answers.update(named)
    return found, logs, answers


def all_rules() -> dict[str, Rule]:
    """Every committed rule, by claim id."""
    return dict(_loaded()[0])


def log() -> dict[str, list[dict]]:
    """Each rules file's change log (by the file's name without .toml), oldest first."""
    return {k: list(v) for k, v in _loaded()[1].items()}


def all_answers() -> dict[str, dict]:
    """Every registered answer (``[answers.<name>]`` tables), by name."""
    return {k: dict(v) for k, v in _loaded()[2].items()}


def answer(name: str) -> dict:
    """The registered rule of the study answer ``name`` (e.g. ``"guide"``); ValueError naming the folder when it has
    none."""
    found = _loaded()[2].get(name)
    if found is None:
        raise ValueError(f"answer {name!r} has no rule in {RULES_DIR}: register it there (an [answers.{name}] table "
                         "with a line in its file's change log) before deciding it")
    return dict(found)


def rule(claim_id: str) -> Rule:
    """The committed rule of claim ``claim_id`` (e.g. ``"C1"``); ValueError naming the folder when it has none."""
    found = _loaded()[0].get(claim_id)
    if found is None:
        raise ValueError(f"claim_id {claim_id!r} has no rule in {RULES_DIR}: register it there (with a line in its "
                         "file's change log) before deciding it")
    return found


def fingerprint(claims: Mapping[str, Rule | Mapping], answers: Mapping[str, Mapping] | None = None) -> str:
    """12 hex digits of the SHA-256 of the rules (their TOML values as canonical JSON), and of the registered
    answers where the file has some: what a log line records."""
    plain = {cid: dict(r.raw) if isinstance(r, Rule) else dict(r) for cid, r in claims.items()}
    if answers:
        plain["[answers]"] = {k: dict(v) for k, v in answers.items()}
    return hashlib.sha256(json.dumps(plain, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


_LOG_FIELDS = ("date", "claim", "why", "fingerprint")


def audit(path: Path | str) -> list[str]:
    """What is wrong with one rules file's change log (an empty list when nothing is): every line has a date
    (YYYY-MM-DD, never earlier than the line before), a claim (or "*" for every claim of the file), a reason and the
    fingerprint of the rules after it; a line that changes a field names it with ``old`` and ``new``; the first line
    registers; every claim is registered by a line; the last line's fingerprint is the file's (else a rule changed
    without a line in the log); and the last line that changes a claim's field gives its current value."""
    import re

    problems: list[str] = []
    claims, lines = load(path)
    answers = load_answers(path)
    if not lines:
        return [f"{path}: no change log ([[log]] lines)"]
    previous = ""
    registered: set[str] = set()
    latest: dict[tuple[str, str], object] = {}
    for k, line in enumerate(lines, 1):
        missing = [f for f in _LOG_FIELDS if not str(line.get(f, "")).strip()]
        if missing:
            problems.append(f"{path} log line {k} lacks {missing}")
            continue
        date = str(line["date"])
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            problems.append(f"{path} log line {k}: date must read YYYY-MM-DD, got {date!r}")
        elif date < previous:
            problems.append(f"{path} log line {k}: dated {date}, before the line above ({previous})")
        previous = max(previous, date)
        change = line.get("change", "changed")
        if k == 1 and change != "registered":
            problems.append(f"{path} log line 1 must register the rules (change = \"registered\")")
        if change == "registered":
            registered.update([*claims, *answers] if line["claim"] == "*" else [line["claim"]])
        elif change == "changed":
            if not all(f in line for f in ("field", "old", "new")):
                problems.append(f"{path} log line {k} changes a rule: it names field, old and new")
            else:
                latest[(line["claim"], line["field"])] = line["new"]
        elif change == "removed":
            registered.discard(line["claim"])
        else:
            problems.append(f"{path} log line {k}: change must be registered, changed or removed, got {change!r}")
    unregistered = sorted((set(claims) | set(answers)) - registered)
    if unregistered:
        problems.append(f"{path}: {unregistered} have no registration line in the log")
    current = fingerprint(claims, answers)
    if str(lines[-1].get("fingerprint")) != current:
        problems.append(f"{path}: the rules changed without a line in the log (the last line records fingerprint "
                        f"{lines[-1].get('fingerprint')!r}, the file's rules are {current!r}): add a line naming "
                        "the claim, field, old → new and why, with fingerprint = " + repr(current))
    for (cid, name), new in latest.items():
        held = claims[cid].raw if cid in claims else answers.get(cid)
        if held is not None and held.get(name) != new:
            problems.append(f"{path}: the log's last change of {cid}.{name} gives {new!r}, the rule holds "
                            f"{held.get(name)!r}")
    return problems

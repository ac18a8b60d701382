"""The pre-registration is one: every rule is registered in committed code directly above the claim function that
decides by it (faithlab_study.verdicts.registered), complete and valid, every change to it has an entry in its change
log, and no claim is decided by a rule that is not registered."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

import faithlab_study as fs
from faithlab_study.verdicts import rules as R

REGISTERED = R.registrations()


def test_every_paper_registers_its_rules():
    papers = {r.fields["paper"] for r in REGISTERED.values()}
    assert papers >= {"basics", "fewclass", "ffidelity", "reco_mege", "saco", "synthesis", "trace"}, papers
    assert "guide" in R.all_answers()


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_every_rule_is_valid_and_its_change_log_accounts_for_it(name):
    problems = R.audit([name])
    assert not problems, "\n".join(problems)


def test_the_audit_command_passes_and_prints_every_fingerprint():
    done = subprocess.run([sys.executable, "-m", "faithlab_study.verdicts"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = dict(line.split(" ", 1) for line in done.stdout.splitlines() if not line.startswith(" "))
    assert printed == {name: R.fingerprint(r.fields) for name, r in REGISTERED.items()}


@pytest.mark.parametrize("cid", sorted(R.all_rules()))
def test_every_rule_of_a_trained_claim_asks_the_house_design(cid):
    rule = R.rule(cid)
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", cid), cid
    assert rule.replicas >= fs.verdicts.MIN_REPLICAS and rule.units >= fs.verdicts.MIN_UNITS, (
        f"{cid}: replicas {rule.replicas}, units {rule.units}: the house asks ≥ {fs.verdicts.MIN_REPLICAS} "
        f"trained replicas and ≥ {fs.verdicts.MIN_UNITS} independent units")
    assert rule.interval in fs.verdicts.INTERVAL_METHODS, f"{cid}: interval {rule.interval!r} is not tested"
    assert not fs.verdicts.states_decision(rule.statistic), f"{cid}: the statistic states a decision"
    assert rule.margin_source.strip() and rule.null.strip()


def test_every_rule_sits_on_the_claim_function_that_reads_it():
    """A rule is registered in its paper's claims (or basics), on a function that names it or decides its parent."""
    import importlib
    import inspect

    parents = {p: r.id for r in R.all_rules().values() for p in r.parts}
    for cid, r in REGISTERED.items():
        assert r.where.startswith(("faithlab_study.papers.", )), (cid, r.where)
        module, _, name = r.where.rpartition(".")
        source = inspect.getsource(getattr(importlib.import_module(module), name))
        named = f'"{cid}"' in source.split("\ndef ", 1)[1] if "\ndef " in source else False
        assert named or cid in parents or cid in ("F7", "guide"), (cid, r.where)


def test_a_duplicate_id_is_refused_naming_both_places():
    fields = dict(R.rule("B1").raw)
    with pytest.raises(ValueError, match=r"'B1' is registered twice: on faithlab_study\.papers\.basics\."):
        @R.registered("B1", log=[], **fields)
        def elsewhere():
            pass


def test_registering_returns_the_function_unchanged_and_checks_the_fields():
    fields = {**R.rule("B1").raw, "paper": "test"}

    def decide():
        return 1
    try:
        assert R.registered("TEST.unchanged", log=[], **fields)(decide) is decide
        assert R.rule("TEST.unchanged").raw == fields
    finally:
        R._RULES.pop("TEST.unchanged", None)  # noqa: SLF001 (the test's own registration)
    with pytest.raises(ValueError, match="rule TEST.bad: direction must be one of"):
        R.registered("TEST.bad", log=[], **{**fields, "direction": "sideways"})
    with pytest.raises(ValueError, match="rule TEST.bad has unknown fields"):
        R.registered("TEST.bad", log=[], **{**fields, "colour": "red"})


def test_a_chapters_defaults_register_the_same_rule_as_the_fields_written_out():
    """Rules written once: a Chapter's defaults under a registration's own fields give the rule (and fingerprint)
    of every field written out, the registration's own fields win, the place is the decorator's, and a default that
    is not a rule field is refused."""
    fields = dict(R.rule("B1").raw)
    shared = {k: fields[k] for k in ("kind", "replicas", "units", "interval", "direction")}
    chapter = R.Chapter(**shared, paper="another")

    def decide():
        return 1
    try:
        line = sys._getframe().f_lineno + 1
        assert chapter.registered("TEST.chapter", log=[], **{k: v for k, v in fields.items() if k not in shared})(
            decide) is decide
        assert R.rule("TEST.chapter").raw == fields and R.fingerprint(R.rule("TEST.chapter")) == R.fingerprint(fields)
        where = R._RULES["TEST.chapter"][1]  # noqa: SLF001
        assert where.line == line and where.file == __file__
    finally:
        R._RULES.pop("TEST.chapter", None)  # noqa: SLF001 (the test's own registration)
    with pytest.raises(ValueError, match="must be rule fields"):
        R.Chapter(colour="red")


def _entry(fields, **more):
    return {"date": "2026-11-27", "change": "registered", "why": "a test", **more,
            "fingerprint": R.fingerprint(fields)}


def test_a_rule_changed_without_a_log_entry_is_caught_and_the_fingerprint_to_write_is_printed():
    fields = dict(R.rule("B1").raw)
    log = [_entry(fields)]
    assert R.audit_log("B1", fields, log) == []
    changed = {**fields, "margin": 0.5}
    problems = R.audit_log("B1", changed, log)
    assert any("changed without an entry in its log" in p and R.fingerprint(changed) in p for p in problems), problems


def test_a_change_with_its_log_entry_passes_and_a_wrong_new_value_or_date_is_caught():
    fields = dict(R.rule("B1").raw)
    changed = {**fields, "margin": 0.5}
    first = {"date": "2026-11-27", "change": "registered", "why": "a test"}
    change = {"date": "2099-01-01", "change": "changed", "field": "margin", "old": 0.01, "new": 0.5, "why": "a test",
              "fingerprint": R.fingerprint(changed)}
    assert R.audit_log("B1", changed, [first, change]) == []
    assert any("gives 0.4" in p for p in R.audit_log("B1", changed, [first, {**change, "new": 0.4}]))
    assert any("before the entry above" in p
               for p in R.audit_log("B1", changed, [{**first, "date": "2100-01-01"}, change]))
    assert any("names field, old and new" in p
               for p in R.audit_log("B1", changed, [first, {k: v for k, v in change.items() if k != "old"}]))
    assert any("must register" in p for p in R.audit_log("B1", changed, [change]))
    assert R.audit_log("B1", changed, []) == ["B1: no change log (log=[...] with its registration)"]


def test_the_guides_registered_answer_is_read_and_its_changes_are_logged():
    guide = R.answer("guide")
    assert guide["holds_up"] in R.HOLDS_UP and guide["beats"] in R.BEATS and guide["margin_source"].strip()
    with pytest.raises(ValueError, match="answer 'nothing' has no rule"):
        R.answer("nothing")
    registration = REGISTERED["guide"]
    assert R.audit_log("guide", registration.fields, registration.log) == []
    changed = {**registration.fields, "beats": "per comparison"}  # an answer changed without a log entry is caught
    assert any("changed without an entry in its log" in p for p in R.audit_log("guide", changed, registration.log))
    with pytest.raises(ValueError, match=r"answer guide: holds_up must be one of"):
        R.registered_answer("guide", log=registration.log, **{**registration.fields, "holds_up": "whatever"})


def test_a_lookup_imports_every_papers_claims():
    code = ("import faithlab_study.verdicts as V, sys; r = V.rule('T4'); "
            "print(r.paper, 'faithlab_study.papers.trace.claims' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["trace", "True"], done.stdout + done.stderr


def test_no_decision_without_a_registered_rule():
    with pytest.raises(ValueError, match="has no rule"):
        fs.verdicts.rule("no such claim")
    with pytest.raises(TypeError, match="rule must be a faithlab_study.verdicts.Rule"):
        fs.verdicts.effect(np.ones(5), rule={"margin": 0.1})
    rule = fs.verdicts.rule("B1")
    v = fs.verdicts.decide(fs.verdicts.effect(np.linspace(0.2, 0.3, 30), rule=rule), rule)
    assert v.rule_id == "B1"
    with pytest.raises(ValueError, match="decided by rule 'B1' but the claim names rule None"):
        fs.verdicts.Claim("x", rule="a rule in words", premise="none", paper_value="", our_value="", verdict=v)


def test_the_equivalence_logic_reaches_every_verdict():
    rule = fs.verdicts.rule("B1")  # margin 0.01, above
    base = np.linspace(-1, 1, 30) * 0.002
    assert fs.verdicts.decide(fs.verdicts.effect(0.05 + base, rule=rule), rule) == fs.verdicts.REPRODUCED
    assert fs.verdicts.decide(fs.verdicts.effect(0.0 + base, rule=rule), rule) == fs.verdicts.NOT_REPRODUCED
    assert fs.verdicts.decide(fs.verdicts.effect(-0.05 + base, rule=rule), rule) == fs.verdicts.NOT_REPRODUCED
    # shown above 0, not shown above the margin: the effect is there, weaker (whether or not it reaches the margin)
    assert fs.verdicts.decide(fs.verdicts.effect(0.01 + 2 * base, rule=rule), rule) == fs.verdicts.WEAKER
    assert fs.verdicts.decide(fs.verdicts.effect(0.005 + base, rule=rule), rule) == fs.verdicts.WEAKER
    # reaching both 0 and the margin: undecided
    assert fs.verdicts.decide(fs.verdicts.effect(0.005 + 50 * base, rule=rule), rule) == fs.verdicts.INCONCLUSIVE
    assert fs.verdicts.decide(fs.verdicts.effect(0.05 + base, rule=rule), rule,
                              untestable="the mechanism is absent") == fs.verdicts.NOT_TESTABLE


def test_a_cell_of_one_unit_is_undecided_with_no_interval():
    rule = fs.verdicts.rule("B1")
    one = fs.verdicts.effect(np.array([0.5, np.nan]), rule=rule, groups=[0, 1])  # one unit left: no t interval
    assert one.outcome == "undecided" and one.interval.units == 1 and math.isnan(one.interval.low)
    assert one.interval.estimate == 0.5
    assert fs.verdicts.effect(np.array([np.nan]), rule=rule).outcome == "undecided"
    assert fs.verdicts.decide(one, rule) == fs.verdicts.INCONCLUSIVE
    assert fs.verdicts.effect(np.array([0.5, 0.51]), rule=rule).outcome == "holds"  # two units: an interval


MARKED = sorted(n for n, r in REGISTERED.items() if any(e.get("issue") == R.REDECIDED_BY for e in r.log))


def test_issue_90s_rule_changes_are_marked_and_undone_to_the_rules_as_they_were():
    """The verdicts before issue 90 (the pre-registration page's moved list) are decided by the rules as they were:
    :func:`rules.before` undoes every change marked with the issue, and gives back exactly the rule its log's last
    fingerprint before those changes recorded."""
    assert {"F1", "F7", "Series.ranking", "D3.accuracy", "D3.agreement.masked"} <= set(MARKED)
    for name in MARKED:
        log = REGISTERED[name].log
        first = next(k for k, e in enumerate(log) if e.get("issue") == R.REDECIDED_BY)
        assert all(e.get("issue") == R.REDECIDED_BY for e in log[first:]), f"{name}: a later change is not marked"
        was = next(e["fingerprint"] for e in reversed(log[:first]) if "fingerprint" in e)
        assert R.fingerprint(R.before(name)) == was, name
        assert R.fingerprint(R.before(name)) != R.fingerprint(R.rule(name)), name
    unmarked = next(n for n in REGISTERED if n not in MARKED and n in R.all_rules())
    assert R.before(unmarked) is R.rule(unmarked)


def test_a_decision_before_issue_90_reads_the_rule_as_it_was():
    from faithlab_study.verdicts import decisions
    i = fs.verdicts.Interval(0.3, 0.2, 0.4, 0.9, "t on replica statistics", 30, 3)
    rule = R.rule("F1")
    assert fs.verdicts.judge(i, rule, setting="ROAR").margin == 0.4917
    assert fs.verdicts.judge(i, rule, setting="ROAR").outcome == "weaker"  # short of ROAR's 0.4917, above 0
    token = decisions.BEFORE.set(True)
    try:
        assert fs.verdicts.deciding_before()
        j = fs.verdicts.judge(i, rule, setting="ROAR")
    finally:
        decisions.BEFORE.reset(token)
    assert not fs.verdicts.deciding_before()
    assert j.margin == 0.0367 and j.outcome == "holds"

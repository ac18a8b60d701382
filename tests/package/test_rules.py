"""The pre-registration is one: the committed rules files (lib/faithlab/study/verdicts/registered/*.toml) are complete and
valid, every change to them has a line in their change log, and no claim is decided by a rule that is not in them."""

from __future__ import annotations

import re
import shutil

import math

import numpy as np
import pytest

import faithlab as fl
import faithlab.study as fs
from faithlab.study.verdicts import rules as R

FILES = R.rule_files()


def test_there_are_rules_files():
    assert FILES and {p.stem for p in FILES} >= {"basics"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_rules_file_is_valid_and_its_change_log_accounts_for_it(path):
    problems = R.audit(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_rule_of_a_trained_claim_asks_the_house_design(path):
    for cid, rule in R.load(path)[0].items():
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", cid), cid
        assert rule.replicas >= fs.verdicts.MIN_REPLICAS and rule.units >= fs.verdicts.MIN_UNITS, (
            f"{cid}: replicas {rule.replicas}, units {rule.units}: the house asks ≥ {fs.verdicts.MIN_REPLICAS} "
            f"trained replicas and ≥ {fs.verdicts.MIN_UNITS} independent units")
        assert rule.interval in fs.verdicts.INTERVAL_METHODS, f"{cid}: interval {rule.interval!r} is not tested"
        assert not fs.verdicts.states_decision(rule.statistic), f"{cid}: the statistic states a decision"
        assert rule.margin_source.strip() and rule.null.strip()


def test_the_ids_are_unique_across_files():
    seen: dict[str, str] = {}
    for path in FILES:
        for cid in R.load(path)[0]:
            assert cid not in seen, f"{cid} is registered in {seen[cid]} and {path.name}"
            seen[cid] = path.name


def _copy(tmp_path, text_change=None):
    source = FILES[0]
    target = tmp_path / source.name
    shutil.copy(source, target)
    if text_change:
        target.write_text(text_change(target.read_text()))
    return target


def test_a_rule_changed_without_a_log_line_is_caught(tmp_path):
    path = _copy(tmp_path, lambda t: re.sub(r"(?m)^margin = ([0-9.]+)$", "margin = 0.5", t, count=1))
    problems = R.audit(path)
    assert any("changed without a line in the log" in p for p in problems), problems


def test_a_change_with_its_log_line_passes_and_a_wrong_new_value_is_caught(tmp_path):
    path = _copy(tmp_path, lambda t: re.sub(r"(?m)^margin = ([0-9.]+)$", "margin = 0.5", t, count=1))
    claims = R.load(path)[0]
    cid = next(c for c in claims if claims[c].raw.get("margin") == 0.5)
    line = (f'\n[[log]]\ndate = "2099-01-01"\nclaim = "{cid}"\nfield = "margin"\nold = 0.01\nnew = 0.5\n'
            f'why = "a test"\nfingerprint = "{R.fingerprint(claims)}"\n')
    path.write_text(path.read_text() + line)
    assert R.audit(path) == []
    path.write_text(path.read_text().replace("new = 0.5", "new = 0.4"))
    assert any("gives 0.4" in p for p in R.audit(path))
    path.write_text(path.read_text().replace('date = "2099-01-01"', 'date = "2001-01-01"'))
    assert any("before the line above" in p for p in R.audit(path))


def test_the_guides_registered_answer_is_read_and_its_changes_are_logged(tmp_path):
    guide = R.answer("guide")
    assert guide["holds_up"] in R.HOLDS_UP and guide["beats"] in R.BEATS and guide["margin_source"].strip()
    with pytest.raises(ValueError, match="answer 'nothing' has no rule"):
        R.answer("nothing")
    source = next(p for p in FILES if R.load_answers(p))
    target = tmp_path / source.name
    target.write_text(source.read_text())
    assert R.audit(target) == []
    changed = target.read_text().replace('beats = "holm"', 'beats = "per comparison"')
    assert changed != target.read_text()
    target.write_text(changed)  # an answer's rule changed without a log line is caught like a claim's
    assert any("changed without a line in the log" in p for p in R.audit(target))
    target.write_text(changed.replace('holds_up = "recovers and not worse than any"', 'holds_up = "whatever"'))
    with pytest.raises(ValueError, match=r"\[answers.guide\]: holds_up must be one of"):
        R.load_answers(target)


def test_no_decision_without_a_registered_rule():
    with pytest.raises(ValueError, match="has no rule"):
        fs.verdicts.rule("no such claim")
    with pytest.raises(TypeError, match="rule must be a faithlab.study.verdicts.Rule"):
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
    assert fs.verdicts.decide(fs.verdicts.effect(0.01 + 10 * base, rule=rule), rule) == fs.verdicts.INCONCLUSIVE
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

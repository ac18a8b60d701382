"""The verdict helper: every claim's verdict comes from a measured value and a stated rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from faithlab.outputs import VERDICTS, ladder, verdict

REPRODUCED, PARTLY, NOT, UNTESTABLE = VERDICTS


def test_checks_default_rule_all_then_any():
    assert verdict([True, True]) == REPRODUCED
    assert verdict([True, False, False]) == PARTLY
    assert verdict([False, False]) == NOT
    assert verdict(np.array([True, True])) == REPRODUCED
    assert verdict(torch.tensor([False, True])) == PARTLY


@pytest.mark.parametrize("value,expected", [(0.8, REPRODUCED), (0.79, PARTLY), (0.5, PARTLY), (0.49, NOT)])
def test_threshold_rule_higher_is_better(value, expected):
    assert verdict(value, reproduced=">= 0.8", partly=">= 0.5") == expected


@pytest.mark.parametrize("value,expected", [(0.1, REPRODUCED), (0.2, PARTLY), (0.3, PARTLY), (0.31, NOT)])
def test_threshold_rule_lower_is_better(value, expected):
    assert verdict(value, reproduced="<= 0.1", partly="<= 0.3") == expected


def test_strict_comparisons_and_no_partly():
    assert verdict(0.35, reproduced="< 0.35", partly="< 0.5") == PARTLY
    assert verdict(0.0, reproduced="> 0", partly=None) == NOT
    assert verdict(2 / 3, reproduced="== 1", partly=">= 0.5") == PARTLY


def test_premise_undefined_statistic_or_no_check_is_not_testable():
    assert verdict(math.nan, reproduced=">= 0.8") == UNTESTABLE
    assert verdict([]) == UNTESTABLE
    assert verdict([True], untestable="a correlation is undefined") == UNTESTABLE
    assert verdict(1.0, untestable="the baseline is already at the ideal") == UNTESTABLE


def test_ladder_orders_the_two_tests():
    assert ladder(True, False) == REPRODUCED
    assert ladder(False, True) == PARTLY
    assert ladder(False) == NOT
    assert ladder(True, True, untestable="saturated") == UNTESTABLE


def test_bad_rules_and_values_name_the_argument():
    with pytest.raises(ValueError, match="reproduced"):
        verdict(0.5, reproduced="at least 0.8")
    with pytest.raises(ValueError, match="partly"):
        verdict(0.5, partly="=> 0.2")
    with pytest.raises(TypeError, match="value"):
        verdict("high")
    with pytest.raises(TypeError, match="value"):
        verdict(object())
    with pytest.raises(ValueError, match="untestable"):
        verdict(0.5, untestable="  ")

"""A target outside the model's classes is a ValueError that names the caller's argument first and gives the valid
range, ``[0, K−1]``, for every registered sample-level metric (issue 92), a class too large and a negative one
alike."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
from registry_fuzz import K, inputs, own_call

from faithlab import perturb
from faithlab.metrics.papers.saco import cumulative
from faithlab.metrics.registry import METRICS
from faithlab.perturb.readout import check_classes

SAMPLE = sorted(name for name, m in METRICS.items() if m.level == "sample" and m.function is not None)
RANGE = f"[0, {K - 1}]"

def _refusal(name: str, value: int) -> str:
    model, x, y, a = inputs()
    bad = model(x).argmax(1)
    bad[1] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError) as err:
            own_call(name, model, x, a, labels=bad, target=bad)
    return str(err.value)


@pytest.mark.parametrize("kind", ["too large", "negative"])
@pytest.mark.parametrize("name", SAMPLE)
def test_a_target_outside_the_model_s_classes_names_the_argument_and_the_range(name, kind):
    value = K + 5 if kind == "too large" else -1
    message = _refusal(name, value)
    assert re.match(r"(target|labels)\b", message), message  # the caller's argument first
    assert RANGE in message, message
    assert re.search(rf"got \[?{value}\b", message), message  # the value (or the list of values) out of range


def test_the_check_names_the_argument_the_range_and_the_first_bad_value():
    check_classes(torch.tensor([0, 2, 1]), 3, "y")  # in range: nothing
    check_classes(torch.tensor([], dtype=torch.int64), 3, "y")
    with pytest.raises(ValueError, match=re.escape("y must hold classes in [0, 2] (the model returns 3 logits), "
                                                   "got 3")):
        check_classes(torch.tensor([0, 3, 1]), 3, "y")
    with pytest.raises(ValueError, match=re.escape("labels must hold classes in [0, 9] (the model returns 10 "
                                                   "classes), got -4 (2 values out of range)")):
        check_classes(torch.tensor([-4, 2, 12]), 10, "labels", what="classes")


def test_the_engine_names_the_caller_s_argument_with_the_range():
    """The engine's read-out check gives the name the caller used (F-Fidelity's and the accuracy metrics' ``y``)."""
    model, x, _, _ = inputs()
    logits = model(x)
    with pytest.raises(ValueError, match=re.escape(f"y must hold classes in {RANGE} (the model returns {K} logits), "
                                                   f"got {K}")):
        perturb.readout.check_read_out("prob", logits, torch.tensor([0, K, 1, 0]), "y")
    with pytest.raises(ValueError, match=re.escape(f"y must hold classes in {RANGE}")):
        perturb.readout.check_read_out("correct", logits, torch.tensor([0, -2, 1, 0]), "y")
    perturb.readout.check_read_out(lambda z, t: z[:, 0], logits, torch.tensor([0, 99, 1, 0]), "y")  # its own codes


@pytest.mark.parametrize(("bad", "argument"), [("target", "target"), ("labels", "labels")])
@pytest.mark.parametrize("value", [K, -1])
def test_the_shared_morf_run_names_target_or_labels_with_the_range(bad, argument, value):
    """``morf_details`` (fl.evaluate's one run for AUC, AOPC and LOdds) reads two class arguments."""
    model, x, y, a = inputs()
    good = model(x).argmax(1)
    wrong = good.clone()
    wrong[2] = value
    target, labels = (wrong, y) if bad == "target" else (good, wrong)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError) as err:
            cumulative.morf_details(model, x, a, target=target, labels=labels, fractions=[0.0, 0.5, 1.0])
    message = str(err.value)
    assert message.startswith(f"{argument} must hold classes in {RANGE} (the model returns {K} logits), got {value}"), \
        message

"""The fuzz suite generated from the metric registry: every registered sample-level metric's own public call, crossed
with the classes of bad input that apply to every metric of the one call shape ``metric(model, x, attributions, *,
target=None, ...)``. A metric registered tomorrow is fuzzed here without an edit
(tests/faithlab/metrics/test_registry.py registers a toy metric and sees its cases).

Classification as in tests/faithlab/fuzz/test_metrics_and_engine.py: good = a TypeError/ValueError whose message names
the caller's argument; unclear = it raises without naming it; silent = a score from invalid input. The cases and the
classifier live in tests/support/registry_fuzz.py, which tests/faithlab/metrics/test_registry.py shares."""

from __future__ import annotations

import pytest
from registry_fuzz import cases, classify

from faithlab.metrics.registry import METRICS


@pytest.mark.parametrize("name,case", cases())
def test_registered_metric_refuses_bad_input(name, case):
    assert classify(name, case) == "good"


def test_every_sample_metric_is_fuzzed():
    fuzzed = {name for name, _ in cases()}
    assert fuzzed == {n for n, m in METRICS.items() if m.level == "sample" and m.function is not None}
    assert len(fuzzed) >= 17  # the study's own sample-level metrics, each with its public call

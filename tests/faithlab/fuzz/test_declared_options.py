"""The option fuzz generated from the declarations: for every registered metric and every option it declares, each
value of a fixed list of bad candidates that the option's declared check refuses is given to ``fl.evaluate`` under
both spellings (``<keyword>=`` and ``<group>_<keyword>=``); evaluate must refuse it before the model runs, with a
TypeError/ValueError naming the option as the caller spelt it. A metric registered tomorrow is fuzzed here without
an edit. The metric's own function is given the value too where it reads the keyword whatever the other options:
it must refuse it as well, naming the keyword (the declaration's check and the function agree)."""

from __future__ import annotations

import re

import pytest
import torch
from oracles import small_cnn

import faithlab as fl
from faithlab.metrics.registry import METRICS

B, C, SIDE, K = 4, 2, 8, 3
CANDIDATES = (-1, 0, 1.5, 2, float("nan"), float("inf"), "nope", [0.5, 0.2], [], True, (1.0, 2.0))
# the Few-class function reads grid and normalisation only when it searches itself (no perturbed images given)
ONLY_WHEN_SEARCHING = {("fewclass_fid", "grid"), ("fewclass_fid", "normalisation")}


def _inputs():
    model = small_cnn(in_channels=C, side=SIDE, n_classes=K)
    g = torch.Generator().manual_seed(4)
    return model, torch.randn(B, C, SIDE, SIDE, generator=g), torch.randint(0, K, (B,), generator=g), \
        torch.randn(B, C, SIDE, SIDE, generator=g)


def _refused(check, value, name, x) -> bool:
    try:
        check(value, name, x)
    except (TypeError, ValueError):
        return True
    return False


def cases():
    x = _inputs()[1]
    out = []
    for name, metric in METRICS.items():
        for option in metric.options:
            if option.check is None:
                continue
            for i, value in enumerate(CANDIDATES):
                if _refused(option.check, value, option.name, x):
                    out.append(pytest.param(name, option.name, value, id=f"{name}-{option.name}-{i}"))
    return out


class _Counting(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net, self.calls = net, 0

    def forward(self, x):
        self.calls += 1
        return self.net(x)


@pytest.mark.parametrize("metric,keyword,value", cases())
def test_evaluate_refuses_a_bad_option_before_any_work_naming_it(metric, keyword, value):
    model, x, y, a = _inputs()
    counted = _Counting(model).eval()
    group = METRICS[metric].group
    needs = {"explainer": lambda m, i, t: torch.ones_like(i), "finetuned": counted}  # what the metric needs
    given = {k: v for k, v in needs.items() if k in METRICS[metric].needs}
    for spelt in (keyword, f"{group}_{keyword}"):
        with pytest.raises((TypeError, ValueError), match=rf"\b{re.escape(spelt)}\b"):
            fl.evaluate(counted, x, y, a, metrics=[metric], progress=False, hints=False, **given, **{spelt: value})
    assert counted.calls == 0


@pytest.mark.parametrize("metric,keyword,value", [c for c in cases() if (c.values[0], c.values[1])
                                                   not in ONLY_WHEN_SEARCHING])
def test_the_metrics_own_function_refuses_it_too(metric, keyword, value):
    info = METRICS[metric]
    if info.function is None or info.level != "sample":
        pytest.skip("a dataset-level metric has no call of the one shape")
    model, x, y, a = _inputs()
    extra = {"explainer": lambda m, i, t: torch.ones_like(i)} if not info.maps else {}
    with pytest.raises((TypeError, ValueError), match=rf"\b{re.escape(keyword)}\b"):
        info.function(model, x, a if info.maps else None, **extra, **{keyword: value})


def test_every_declared_checked_option_is_fuzzed():
    fuzzed = {(c.values[0], c.values[1]) for c in cases()}
    declared = {(n, o.name) for n, m in METRICS.items() for o in m.options if o.check is not None}
    assert fuzzed == declared  # every check refuses at least one candidate
    assert len(declared) >= 20

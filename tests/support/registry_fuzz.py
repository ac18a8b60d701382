"""The metric registry's fuzz cases, shared by tests/faithlab/fuzz/test_registered_metrics.py (every registered
sample-level metric crossed with the bad-input cases) and tests/faithlab/metrics/test_registry.py (a toy metric
registered by a user is fuzzed too): :func:`inputs` (a seeded small CNN and its batch), :func:`own_call` (a metric's own
public call with the keyword arguments fl.evaluate would pass), :func:`cases` and :func:`classify` (good = a
TypeError/ValueError whose message names the caller's argument; unclear = it raises without naming it; silent = a score
from invalid input)."""

from __future__ import annotations

import warnings

import torch
from oracles import small_cnn

import faithlab as fl
from faithlab.metrics.registry import METRICS, Context, Tally

B, C, SIDE, K = 4, 2, 8, 3
FAST = {"sparsity": [0.5], "n_samples": 2, "n_subsets": 4, "n_neighbours": 2, "saco_k": 4, "edge": 4,
        "fewclass_fractions": [0.0, 0.5, 1.0], "seed": 1}


def _explain(model, inputs, target):
    return fl.explainers.explain(model, inputs, target, method="saliency")


class _Spoilt(torch.nn.Module):
    """A model whose logits pass through ``spoil(inputs, logits)``."""

    def __init__(self, net, spoil):
        super().__init__()
        self.net, self.spoil = net, spoil

    def forward(self, x):
        return self.spoil(x, self.net(x))


def inputs():
    torch.manual_seed(0)
    model = small_cnn(in_channels=C, side=SIDE, n_classes=K)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(B, C, SIDE, SIDE, generator=g)
    y = torch.randint(0, K, (B,), generator=g)
    a = torch.randn(B, C, SIDE, SIDE, generator=g)
    return model, x, y, a


def own_call(name: str, model, x, a, *, labels, target, user_model=None, explainer=_explain, options=None,
             batch_size=256):
    """``METRICS[name]``'s own public call with the keyword arguments fl.evaluate would pass (shared inputs computed
    on the good inputs of :func:`inputs`)."""
    metric = METRICS[name]
    good_model, good_x, _, _ = inputs()
    values = fl.metrics.registry.check_options({**FAST, **(options or {})}, [], good_x)
    tally = Tally()
    base = Context(model=good_model, x=good_x, labels=labels, target=target, attributions=None, name="E",
                   explainer=explainer, sample_index=torch.arange(B), options=values, batch_size=batch_size,
                   user_model=good_model, tally=tally)
    shared = {s: fl.metrics.registry.SHARED[s].compute(base) for s in metric.uses.values()}
    context = Context(model=model, x=x, labels=labels, target=target, attributions=a, name="E", explainer=explainer,
                      sample_index=torch.arange(B), options=values, batch_size=batch_size, inputs=shared,
                      user_model=model if user_model is None else user_model, tally=tally)
    return metric.call(context)


def cases():
    """(metric, case name, spoil) for every registered sample-level metric with a public function."""
    out = []
    for name, metric in METRICS.items():
        if metric.level != "sample" or metric.function is None:
            continue
        for case in CASES:
            if case in MAP_CASES and not metric.maps:  # the metric is given no maps (S_avg maps x itself)
                continue
            out.append((name, case))
    return out


def _case(case: str):
    model, x, y, a = inputs()
    target = model(x).argmax(1)
    kw = {"labels": y, "target": target}
    if case == "nan x":
        x = x.clone()
        x[1, 0, 2, 2] = float("nan")
        return model, x, a, kw, "x"
    if case == "list x":
        return model, x.tolist(), a, kw, "x"
    if case == "inf maps":
        a = a.clone()
        a[2, 0, 1, 1] = float("inf")
        return model, x, a, kw, "attributions"
    if case == "maps of another batch":
        return model, x, a[:3], kw, "attributions"
    if case == "model in training mode":
        return model.train(), x, a, kw, "model"
    if case == "model returning NaN":  # NaN that keeps the graph: explainers reading gradients see it too
        spoilt = _Spoilt(model, lambda inputs, logits: logits * float("nan")).eval()
        return spoilt, x, a, kw, None
    if case == "x on another device":  # "meta": a device without data, so any value read before the check fails
        return model, x.to("meta"), a, kw, "x"
    if case == "maps on another device":
        return model, x, a.to("meta"), kw, "attributions"
    if case == "target on another device":
        return model, x, a, {"labels": y.to("meta"), "target": target.to("meta")}, "target"
    if case == "target out of range":
        bad = target.clone()
        bad[0] = K + 5
        return model, x, a, {"labels": bad, "target": bad}, "target"
    raise AssertionError(case)


CASES = ("nan x", "list x", "inf maps", "maps of another batch", "model in training mode", "model returning NaN",
         "target out of range", "x on another device", "maps on another device", "target on another device")
MAP_CASES = ("inf maps", "maps of another batch", "maps on another device")


def classify(name: str, case: str) -> str:
    model, x, a, kw, arg = _case(case)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = own_call(name, model, x, a, user_model=model, batch_size=3, **kw)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if "got multiple values" in message or "unexpected keyword" in message:
            return f"test bug: {message}"
        if arg is None:  # a model returning NaN: any clear refusal, naming non-finite outputs
            return "good" if ("nan" in message.lower() or "finite" in message.lower()) else f"unclear: {message}"
        named = arg in message or (arg == "target" and "label" in message)
        if named and "another device" in case and "meta" not in message:  # both devices named, not only the arg
            return f"unclear (no device named): {message}"
        return "good" if named else f"unclear: {message}"
    except Exception as exc:  # noqa: BLE001 - anything else is unclear
        return f"unclear: {type(exc).__name__}: {exc}"
    return f"silent: {result!r}"

"""What an evaluation will cost before it runs: :func:`estimate` counts the model inputs (forward passes) and
explainer inputs of every metric group of ``fl.evaluate`` for N samples of a given shape.

The count is not a formula kept beside the metrics (it would drift from them): it is the evaluation itself, run on
one and on two stand-in samples with a stand-in model (a linear read-out of the input's mean, as cheap as a model
can be) and stand-in explainers (random maps). Every metric evaluates the same number of model inputs per sample
whatever the model answers, plus a fixed number per call; two probes give both, and N samples in chunks of
``chunk_size`` cost ``fixed × chunks + per_sample × N`` (dataset-level metrics: ``fixed + per_sample × N``).
``tests/test_streaming.py`` checks the estimate against the counts of real evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from faithlab.evaluation.loop import _choose
from faithlab.metrics.registry import METRICS
from faithlab.perturb.autobatch import BatchSize

__all__ = ["estimate"]


class _StandIn(nn.Module):
    """Logits a + b · mean(input): any input shape, ``n_classes`` outputs, nearly free."""

    def __init__(self, n_classes: int):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.a = nn.Parameter(torch.randn(n_classes, generator=g), requires_grad=False)
        self.b = nn.Parameter(torch.randn(n_classes, generator=g), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a + self.b * x.flatten(1).mean(1, keepdim=True)


class _Folds:
    def __init__(self, models, n: int):
        self.models, self.folds = models, torch.arange(n) % len(models)


def _random_maps(model, inputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(inputs.shape[0])
    return torch.rand(inputs.shape, generator=g, dtype=inputs.dtype)


def _probe(shape, b: int, n_classes: int, explainers, metrics, finetuned: bool, explainer: bool, kfold: int,
           batch_size: int, options: dict):
    """The cost table of ``fl.evaluate`` on ``b`` stand-in samples."""
    from faithlab.evaluation.frame import cost
    from faithlab.evaluation.loop import evaluate

    g = torch.Generator().manual_seed(b)
    x = torch.rand((b, *shape[1:]), generator=g)
    extra = {}
    if finetuned:
        extra["finetuned"] = _StandIn(n_classes).eval()
    if explainer or kfold:
        extra["explainer"] = {name: _random_maps for name in explainers}
    if kfold:
        extra["kfold"] = _Folds([_StandIn(n_classes).eval() for _ in range(kfold)], b)
    maps = {name: _random_maps(None, x, None) for name in explainers}
    frame = evaluate(_StandIn(n_classes).eval(), x, torch.zeros(b, dtype=torch.int64), maps, metrics=metrics,
                     batch_size=batch_size, progress=False, hints=False, **extra, **options)
    return cost(frame)


def estimate(shape: Sequence[int], *, n_classes: int, explainers: Sequence[str] = ("explainer",),
             metrics: Sequence[str] | None = None, finetuned: bool = False, explainer: bool = False,
             kfold: int = 0, chunk_size: int | None = None, batch_size: BatchSize = 256, **options):
    """The work of ``fl.evaluate`` on ``shape[0]`` samples of shape ``shape[1:]`` (e.g. ``(100, 3, 224, 224)``), per
    metric group and explainer, before any real model runs → DataFrame with ``group``, ``metrics`` (their labels),
    ``explainer`` ("all" for work shared by every explainer), ``forward_inputs`` (inputs through the model, the
    fine-tuned model or the fold models), ``explained_inputs`` (inputs given to the explainer) and
    ``per_sample`` (forward inputs per sample).

    n_classes: the model's outputs; explainers: their names (each costs the same); metrics, options, chunk_size
    and batch_size as in ``fl.evaluate`` (batch_size changes no count); finetuned / explainer: whether
    ``fl.evaluate`` will be given a fine-tuned model / an explainer callable (the metrics that need them are
    counted only then, as evaluate computes them only then); kfold: the number of fold models (0: no ReCo/MeGe).
    Multiply ``forward_inputs`` by a timed forward pass of your model per input for seconds.
    """
    import pandas as pd

    shape = tuple(int(s) for s in shape)
    if len(shape) not in (2, 3, 4) or any(s < 1 for s in shape):
        raise ValueError(f"shape must be (N, C, H, W), (N, T, C) or (N, D) with positive sizes, got {shape}")
    if isinstance(explainers, str) or not explainers:
        raise TypeError(f"explainers must be a non-empty list of names, got {explainers!r}")
    n = shape[0]
    chunk = n if chunk_size is None else min(int(chunk_size), n)
    has = {"finetuned": bool(finetuned), "explainer": bool(explainer) or bool(kfold), "kfold": bool(kfold),
           "images": len(shape) == 4}
    chosen = _choose(metrics, has=has)
    tables = []
    for level, base in (("sample", 1), ("dataset", max(2, int(kfold)))):  # ReCo/MeGe: a sample in every fold
        want = [m for m in chosen if METRICS[m].level == level]
        if not want:
            continue
        one, two = (_probe(shape, b, n_classes, explainers, want, finetuned, explainer, kfold, batch_size, options)
                    for b in (base, base + 1))
        if list(one["group"]) != list(two["group"]) or list(one["explainer"]) != list(two["explainer"]):
            raise RuntimeError("the probes of estimate() ran different metric groups")
        if level == "dataset":  # the clean pass is counted with the sample-level metrics (or once here)
            keep = (one["group"] != "clean").to_numpy() | (not tables)
            one, two = one[keep].reset_index(drop=True), two[keep].reset_index(drop=True)
        table = one[["group", "metrics", "explainer"]].copy()
        chunks = table["group"].map(lambda g: 1 if level == "dataset" and g != "clean" else math.ceil(n / chunk))
        chunks = chunks.to_numpy()
        for column in ("forward_inputs", "explained_inputs"):
            per = two[column].to_numpy() - one[column].to_numpy()
            fixed = one[column].to_numpy() - base * per
            table[column] = fixed * chunks + per * n
            if column == "forward_inputs":
                table["per_sample"] = per
        tables.append(table)
    out = pd.concat(tables, ignore_index=True)
    return out[["group", "metrics", "explainer", "forward_inputs", "explained_inputs", "per_sample"]]

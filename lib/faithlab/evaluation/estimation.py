"""What an evaluation will cost before it runs: :func:`estimate` counts the model inputs (forward passes) and
explainer inputs of every metric group of ``fl.evaluate`` for N samples of a given shape.

The count is not a formula kept beside the metrics (it would drift from them): it is the evaluation itself, run on
one and on two stand-in samples with a stand-in model (a linear read-out of the input's mean, as cheap as a model
can be) and stand-in explainers (random maps). Every metric evaluates the same number of model inputs per sample
whatever the model answers, plus a fixed number per call; two probes give both, and N samples in chunks of
``chunk_size`` cost ``fixed × chunks + per_sample × N`` (dataset-level metrics: ``fixed + per_sample × N``).
``tests/faithlab/evaluation/test_streaming.py`` checks the estimate against the counts of real evaluations.

The probes run on small images (:func:`probe_shape`): the counts depend on the image size only through TRACE's patch
grid (its edge divides the side) and through removal steps that coincide when an image has few pixels (the
fractions of Few-class Fid, F-Fidelity's sizes, the MoRF/LeRF levels, SaCo's groups give distinct pixel counts once
the image has enough pixels). A probe image with the same grid edge and enough pixels for every step to be distinct
gives the counts of the full size at a fraction of the cost (224 × 224 images: 35 × 35, about 100 times fewer
pixels). ``tests/faithlab/cli/test_estimate_only.py`` checks the small probes against real evaluations at the full size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from faithlab.evaluation.call import check, choose
from faithlab.metrics.registry import METRICS
from faithlab.perturb.autobatch import BatchSize

__all__ = ["estimate", "probe_shape"]

PROBE_PIXELS = 1024
"""The fewest pixels of a probe image (32 × 32): more than any default removal step needs to be distinct."""


class _StandIn(nn.Module):
    """Logits a + b · mean(input): any input shape, ``n_classes`` outputs, nearly free."""

    def __init__(self, n_classes: int):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.a = nn.Parameter(torch.randn(n_classes, generator=g, device="cpu"), requires_grad=False)
        self.b = nn.Parameter(torch.randn(n_classes, generator=g, device="cpu"), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a + self.b * x.flatten(1).mean(1, keepdim=True)


class _Folds:
    def __init__(self, models, n: int):
        self.models, self.folds = models, torch.arange(n, device="cpu") % len(models)


def _random_maps(model, inputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(inputs.shape[0])
    return torch.rand(inputs.shape, generator=g, dtype=inputs.dtype, device="cpu").to(inputs.device)


def probe_costs(shape, b: int, n_classes: int, explainers, metrics, finetuned: bool, explainer: bool, kfold: int,
           batch_size: int, options: dict, device="cpu"):
    """The cost table of ``fl.evaluate`` on ``b`` stand-in samples on ``device`` (its ``seconds``: the library's
    own work, the stand-in model costing next to nothing)."""
    from faithlab.evaluation.engine import Engine
    from faithlab.evaluation.frame import cost

    g = torch.Generator().manual_seed(b)
    x = torch.rand((b, *shape[1:]), generator=g, device="cpu").to(device)

    def stand_in() -> nn.Module:
        return _StandIn(n_classes).eval().to(device)

    extra = {}
    if finetuned:
        extra["finetuned"] = stand_in()
    if explainer or kfold:
        extra["explainer"] = {name: _random_maps for name in explainers}
    if kfold:
        extra["kfold"] = _Folds([stand_in() for _ in range(kfold)], b)
    maps = {name: _random_maps(None, x, None) for name in explainers}
    frame = Engine(check(stand_in(), x, torch.zeros(b, dtype=torch.int64, device="cpu").to(device), maps,
                         metrics=metrics, batch_size=batch_size, progress=False, hints=False, **extra,
                         options=options)).run()
    return cost(frame)


def _smallest_gap(values) -> float:
    """The smallest gap between the distinct fractions ``values`` with 0 and 1 added (1.0 when there is none)."""
    points = sorted({0.0, 1.0, *(float(v) for v in values)})
    gaps = [b - a for a, b in zip(points, points[1:]) if b > a]
    return min(gaps) if gaps else 1.0


def probe_shape(shape: Sequence[int], metrics: Sequence[str] | None = None, **options) -> tuple[int, ...]:
    """The shape :func:`estimate` probes at for samples of ``shape`` ``(N, C, H, W)``: images with as few pixels as
    give the same counts → ``(N, C, h, w)``, or ``shape`` itself (series, tokens, small images, and options that
    hold tensors of the data's own size: ``perturbed``, ``reference``).

    The counts depend on the image size through TRACE's grid (``edge``, or the default 7, 4 or 2 that divides the
    side: the probe's side is a multiple of the same edge) and through removal steps that coincide when the image has
    few pixels: k = fraction × pixels is distinct for fractions ``gap`` apart once ``gap × pixels ≥ 1``, so the
    probe keeps at least ``max(PROBE_PIXELS, 4 / gap, 4 × saco_k)`` pixels, the smallest gap taken over ``sparsity``,
    ``fewclass_fractions``, ``beta`` and the MoRF/LeRF levels (0, 0.1, …, 1). Where that is not smaller than the
    image, the image itself is probed. metrics: the metrics evaluated (TRACE's grid matters only with TRACE)."""
    from faithlab.metrics import trace
    from faithlab.metrics.registry import resolve

    shape = tuple(int(s) for s in shape)
    if len(shape) != 4:
        return shape
    if any(options.get(k) is not None for k in ("perturbed", "reference")) or any(
            isinstance(v, torch.Tensor) for v in options.values()):
        return shape
    value = {"sparsity": resolve(options, "sparsity", "fid"), "fewclass_fractions": resolve(options, "fractions",
             "fewclass"), "beta": resolve(options, "beta", "ffid"), "saco_k": resolve(options, "k", "saco"),
             "edge": resolve(options, "edge", "trace")}
    try:
        gap = min(_smallest_gap(value["sparsity"] or ()), _smallest_gap(value["fewclass_fractions"] or ()),
                  _smallest_gap([value["beta"]]), _smallest_gap([i / 10 for i in range(11)]))
        pixels = max(PROBE_PIXELS, math.ceil(4 / gap), 4 * int(value["saco_k"] or 1))
    except (TypeError, ValueError):  # a malformed option: the full-size probe names it as evaluate does
        return shape
    n, c, h, w = shape
    if h * w <= pixels:
        return shape
    grid = metrics is None or any(METRICS[m].group == "trace" for m in metrics if m in METRICS)
    if grid and (h == w or value["edge"] is not None):
        try:
            edge = trace.default_edge(torch.empty(1, 1, h, w, device="meta"), value["edge"])
        except ValueError:  # no grid fits: the full-size evaluation names edge
            return shape
        if h != w or h % edge:
            return shape
        side = edge * -(-_root(pixels) // edge)  # the smallest multiple of the edge with side² ≥ pixels
        return shape if side >= h else (n, c, side, side)
    scale = math.sqrt(pixels / (h * w))
    small = (min(h, math.ceil(h * scale)), min(w, math.ceil(w * scale)))
    while small[0] * small[1] < pixels:  # the rounding kept too few pixels
        small = (min(h, small[0] + 1), min(w, small[1] + 1))
    return shape if small == (h, w) else (n, c, *small)


def _root(pixels: int) -> int:
    """The smallest side s with s² ≥ pixels."""
    s = math.isqrt(pixels)
    return s if s * s >= pixels else s + 1


def estimate(shape: Sequence[int], *, n_classes: int, explainers: Sequence[str] = ("explainer",),
             metrics: Sequence[str] | None = None, finetuned: bool = False, explainer: bool = False,
             kfold: int = 0, chunk_size: int | None = None, batch_size: BatchSize = None, shrink: bool = True,
             **options):
    """The work of ``fl.evaluate`` on ``shape[0]`` samples of shape ``shape[1:]`` (e.g. ``(100, 3, 224, 224)``), per
    metric group and explainer, before any real model runs → DataFrame with ``group``, ``metrics`` (their labels),
    ``explainer`` ("all" for work shared by every explainer), ``forward_inputs`` (inputs through the model, the
    fine-tuned model or the fold models), ``explained_inputs`` (inputs given to the explainer), ``per_sample``
    (forward inputs per sample) and ``model_calls`` (the forward calls, extrapolated from the probes like the
    inputs: approximate, as the calls of a batched metric grow by steps of ``batch_size`` inputs; the inputs are
    exact).

    n_classes: the model's outputs; explainers: their names (each costs the same); metrics, options, chunk_size
    and batch_size as in ``fl.evaluate`` (batch_size changes no count but the calls; None: the default size of a
    model whose largest activation is its float32 input, at ``shape``: pass your model's
    ``autobatch.default_batch_size(model, x)`` for its calls); finetuned / explainer: whether
    ``fl.evaluate`` will be given a fine-tuned model / an explainer callable (the metrics that need them are
    counted only then, as evaluate computes them only then); kfold: the number of fold models (0: no ReCo/MeGe).
    Multiply ``forward_inputs`` by a timed forward pass of your model per input for seconds.
    shrink: probe at :func:`probe_shape` (small images with the same counts; the default) or, False, at ``shape``
    itself (as slow as the metrics on stand-in samples of that size). ``attrs["probe_shape"]``: the shape probed;
    ``attrs["chunks"]``: the chunks of ``chunk_size`` samples the work is split into.
    """
    import pandas as pd

    shape = tuple(int(s) for s in shape)
    if len(shape) not in (2, 3, 4) or any(s < 1 for s in shape):
        raise ValueError(f"shape must be (N, C, H, W), (N, T, C) or (N, D) with positive sizes, got {shape}")
    if isinstance(explainers, str) or not explainers:
        raise TypeError(f"explainers must be a non-empty list of names, got {explainers!r}")
    n = shape[0]
    if batch_size is None:  # the default rule for a model whose largest activation is its input, at the real size
        from faithlab.perturb import autobatch

        batch_size = autobatch.size_for(4 * math.prod(shape[1:]), 4 * math.prod(shape[1:]))
    chunk = n if chunk_size is None else min(int(chunk_size), n)
    has = {"finetuned": bool(finetuned), "explainer": bool(explainer) or bool(kfold), "kfold": bool(kfold),
           "images": len(shape) == 4}
    chosen = choose(metrics, has=has)
    probed = probe_shape(shape, chosen, **options) if shrink else shape
    tables = []
    for level, base in (("sample", 1), ("dataset", max(2, int(kfold)))):  # ReCo/MeGe: a sample in every fold
        want = [m for m in chosen if METRICS[m].level == level]
        if not want:
            continue
        one, two = (probe_costs(probed, b, n_classes, explainers, want, finetuned, explainer, kfold, batch_size,
                                options)
                    for b in (base, base + 1))
        if list(one["group"]) != list(two["group"]) or list(one["explainer"]) != list(two["explainer"]):
            raise RuntimeError("the probes of estimate() ran different metric groups")
        if level == "dataset":  # the clean pass is counted with the sample-level metrics (or once here)
            keep = (one["group"] != "clean").to_numpy() | (not tables)
            one, two = one[keep].reset_index(drop=True), two[keep].reset_index(drop=True)
        table = one[["group", "metrics", "explainer"]].copy()
        chunks = table["group"].map(lambda g: 1 if level == "dataset" and g != "clean" else math.ceil(n / chunk))
        chunks = chunks.to_numpy()
        for column in ("forward_inputs", "explained_inputs", "model_calls"):
            per = two[column].to_numpy() - one[column].to_numpy()
            fixed = one[column].to_numpy() - base * per
            table[column] = fixed * chunks + per * n
            if column == "forward_inputs":
                table["per_sample"] = per
        table["model_calls"] = table["model_calls"].clip(lower=(table["forward_inputs"] > 0).astype(int))
        tables.append(table)
    out = pd.concat(tables, ignore_index=True)[["group", "metrics", "explainer", "forward_inputs",
                                                  "explained_inputs", "per_sample", "model_calls"]]
    out.attrs["probe_shape"] = probed
    out.attrs["chunks"] = math.ceil(n / chunk)
    return out

"""A time budget for an evaluation: the Monte-Carlo counts that make the estimated run fit a number of seconds.

``faithlab evaluate --budget 10m`` and ``fl.evaluate(..., budget="10m")`` keep every metric and every image and
choose only the Monte-Carlo counts, :func:`knobs`: RFid±/FFid±'s masks (``n_samples``), μF's subsets
(``n_subsets``) and S_avg's neighbours (``n_neighbours``). Each is a mean (or a correlation) over random draws whose
Monte-Carlo standard error shrinks like one over the square root of its count, and the report gives that error
beside each score, so a budgeted run says how precise it is. The other metrics are exact for their settings
(curves over fixed fractions, searches over fixed grids): they cost what they cost, and a budget they alone
overrun is refused with the number of images that would fit.

How the counts are chosen (:func:`allocate`): the cost of a run is linear in each count (a mask, a subset or a
neighbour is a fixed number of model or explainer inputs per sample), so two estimates, at the paper's counts and
at the fewest (``Knob.floor``), give each count's seconds per draw ``b`` and the fixed rest. Within the budget
the counts ``v`` minimise ``Σ paper / v``, the sum over the Monte-Carlo metrics of their squared standard errors
relative to those at the paper's counts (every metric's precision weighs the same): ``v = λ √(paper / b)``, clipped
to ``[floor, paper]``, ``λ`` the largest that fits. A cheap draw is cut less than a dear one, for the same
precision bought. No budget, or a budget the paper's counts fit, leaves the paper's counts; a count the caller set
is kept as set.

The seconds come from :func:`faithlab.evaluation.estimate` (the inputs each metric group takes) times
:func:`measure`'s timings of the model and the explainers, plus :func:`engine`'s timing of the library's own work
per input (:func:`seconds`): the same estimate the CLI prints before a run and sets beside the measured seconds
after it.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["Knob", "knobs", "Allocation", "parse", "allocate", "measure", "engine", "seconds", "describe",
           "for_evaluate"]


@dataclass(frozen=True)
class Knob:
    """A Monte-Carlo count of ``fl.evaluate``: its option name, the metric groups whose cost grows with it, the
    fewest draws a budget may leave (enough for a standard error) and what one draw is."""

    option: str
    groups: tuple[str, ...]
    floor: int
    draw: str


def knobs() -> tuple[Knob, ...]:
    """The counts a budget chooses: each registered metric's declared ``mc_count`` (RFid±/FFid±'s masks, μF's
    subsets, S_avg's neighbours for the study's own)."""
    from faithlab.metrics.registry import mc_counts

    return tuple(Knob(option, groups, floor, draw) for option, (groups, floor, draw) in mc_counts().items())


def __getattr__(name: str):
    if name == "KNOBS":  # read when asked: a metric registered later counts too
        return knobs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse(text, name: str = "budget") -> float:
    """Seconds from a budget: a positive number of seconds, or text like ``"90s"``, ``"10m"``, ``"1.5h"``,
    ``"300"``. Anything else is a ValueError naming ``name``."""
    if isinstance(text, bool):
        raise TypeError(f"{name} must be seconds (a number) or text like '10m', got bool")
    if isinstance(text, (int, float)):
        value = float(text)
    elif isinstance(text, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", text.lower())
        if match is None or match.group(2) not in _UNITS:
            raise ValueError(f"{name} must be a time like 90s, 10m or 1.5h (or seconds), got {text!r}")
        value = float(match.group(1)) * _UNITS[match.group(2)]
    else:
        raise TypeError(f"{name} must be seconds (a number) or text like '10m', got {type(text).__name__}")
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive time, got {text!r}")
    return value


@dataclass
class Allocation:
    """What :func:`allocate` chose: ``counts`` (option → count, every knob), the estimated ``seconds`` of the run
    with them, the run's ``fixed`` seconds (all but the knobs' draws), the least it can take (``minimum``: every
    knob at its floor), the estimate at the paper's counts (``full``), ``per_draw`` (option → seconds per draw),
    and whether the budget is met (``fits``)."""

    budget: float
    counts: dict[str, int]
    seconds: float
    fixed: float
    minimum: float
    full: float
    per_draw: dict[str, float] = field(default_factory=dict)
    defaults: dict[str, int] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return self.seconds <= self.budget * (1 + 1e-9)

    @property
    def changed(self) -> dict[str, int]:
        """The counts that differ from the paper's."""
        return {k: v for k, v in self.counts.items() if v != self.defaults.get(k)}


def _group_knob(group: str) -> Knob | None:
    return next((k for k in knobs() if group in k.groups), None)


def allocate(seconds_of: Callable[[dict[str, int]], Mapping[str, float]], budget_s: float,
             defaults: Mapping[str, int], given: Sequence[str] = ()) -> Allocation:
    """The Monte-Carlo counts that fit ``budget_s`` seconds (see the module docstring) → :class:`Allocation`.

    seconds_of: counts (option → int, every knob) → estimated seconds per metric group (any keys; a key is charged
    to a knob when its last word, after a colon or a space, is one of the knob's groups, e.g. ``"rfid"`` or
    ``"sanity: rfid"``). defaults: the paper's count of each knob. given: options the caller set, kept as they are."""
    budget_s = parse(budget_s)
    free = [k for k in knobs() if k.option not in given and defaults[k.option] > k.floor]
    paper = {k.option: int(defaults[k.option]) for k in knobs()}
    low = dict(paper, **{k.option: k.floor for k in free})
    hi, lo = dict(seconds_of(paper)), dict(seconds_of(low))
    per_draw = {k.option: 0.0 for k in free}
    for key, value in hi.items():
        knob = _group_knob(re.split(r"[: ]", key)[-1])
        if knob is not None and knob.option in per_draw:
            per_draw[knob.option] += max(0.0, value - lo.get(key, 0.0)) / (paper[knob.option] - knob.floor)
    full = float(sum(hi.values()))
    fixed = full - sum(per_draw[o] * paper[o] for o in per_draw)
    minimum = fixed + sum(per_draw[k.option] * k.floor for k in free)

    def total(counts: Mapping[str, int]) -> float:
        return fixed + sum(per_draw[o] * counts[o] for o in per_draw)

    def at(lam: float) -> dict[str, int]:
        out = dict(paper)
        for k in free:
            b = per_draw[k.option]
            v = paper[k.option] if b <= 0 else lam * math.sqrt(paper[k.option] / b)
            out[k.option] = int(min(paper[k.option], max(k.floor, math.floor(v))))
        return out

    if full <= budget_s or not free:
        counts = paper
    elif minimum > budget_s:
        counts = low
    else:  # the largest λ whose counts fit (total(at(λ)) grows with λ)
        a, b = 0.0, 1.0
        while total(at(b)) <= budget_s and at(b) != paper:
            b *= 2
        for _ in range(60):
            mid = (a + b) / 2
            a, b = (mid, b) if total(at(mid)) <= budget_s else (a, mid)
        counts = at(a)
    return Allocation(budget=budget_s, counts=counts, seconds=total(counts), fixed=fixed, minimum=minimum,
                      full=full, per_draw=per_draw, defaults=paper)


def describe(allocation: Allocation, n: int) -> str:
    """One line for the reader: what the budget chose, or why it cannot be met (with the images that would fit)."""
    budget = allocation.budget
    if allocation.full <= budget:
        return (f"budget {budget:.0f} s: the paper's Monte-Carlo counts fit (est. {allocation.full:.0f} s); nothing "
                f"cut")
    if not allocation.fits:
        per_image = allocation.minimum / max(1, n)
        fit = int(budget // per_image) if per_image > 0 else n
        return (f"budget {budget:.0f} s cannot be met: even at the fewest Monte-Carlo draws the run takes est. "
                f"{allocation.minimum:.0f} s ({per_image:.1f} s per image); {fit} image(s) would fit, or leave out "
                f"metrics")
    chosen = ", ".join(f"{k.option}={allocation.counts[k.option]} (paper {allocation.defaults[k.option]}, "
                       f"{k.draw})" for k in knobs() if allocation.counts[k.option] != allocation.defaults[k.option])
    return (f"budget {budget:.0f} s: {chosen}; est. {allocation.seconds:.0f} s instead of {allocation.full:.0f} s "
            f"at the paper's counts; each score's Monte-Carlo standard error grows like √(paper / count) and is "
            f"reported beside it")


def _sync(device: torch.device) -> Callable[[], None]:
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def measure(model: Callable, x: torch.Tensor, batch_size: int, explainers: Mapping[str, Callable]) -> dict:
    """Times of ``model`` and the ``explainers`` on the first chunk ``x`` before any metric runs →
    ``{"per_input", "per_call", "per_input_in_call", "per_map", "per_explained", "n_classes"}``.

    per_input: seconds per model input at ``batch_size`` inputs per call (the run's perturbed inputs go through the
    model that many at a time): a warm-up call on x and one on ``batch_size`` inputs (a cold process's first call at
    a new shape is slower), then the median of 3 calls on ``batch_size`` inputs (x repeated). A call of k inputs
    costs ``per_call + k × per_input_in_call``, the line through the call on x (timed once after the warm-up) and the
    calls of ``batch_size`` inputs. per_map: seconds per image of each explainer on
    x (a warm-up call on one image, then one call on x). per_explained: an input given to the explainer in batches
    of ``batch_size`` (S_avg's neighbours): per_map scaled by the model's per-input time at ``batch_size`` over its
    time on x. Errors (out of memory, a missing optional package) propagate."""
    b = x.shape[0]
    sync = _sync(x.device)

    def timed(fn, *args) -> float:
        sync()
        start = time.perf_counter()
        fn(*args)
        sync()
        return time.perf_counter() - start

    with torch.no_grad():
        logits = model(x)  # the warm-up (and the class each explainer explains)
        target = logits.argmax(1)
        on_chunk = None
        if batch_size != b:
            on_chunk = timed(model, x) / b
            full = x.repeat(-(-batch_size // b), *([1] * (x.ndim - 1)))[:batch_size]
        else:
            full = x
        model(full)  # a warm-up at the run's batch size: a cold process's first calls at a new shape are slower
        per_input = statistics.median(timed(model, full) for _ in range(3)) / full.shape[0]
    if on_chunk is None:
        on_chunk = per_input
    slope = (per_input * batch_size - on_chunk * b) / (batch_size - b) if batch_size != b else per_input
    per_call = on_chunk * b - slope * b
    if slope < 0 or per_call < 0:  # the timings' noise: no per-call cost
        slope, per_call = per_input, 0.0
    per_map, per_explained = {}, {}
    for name, fn in explainers.items():
        fn(model, x[:1], target[:1])  # the warm-up
        per_map[name] = timed(fn, model, x, target) / b
        per_explained[name] = per_map[name] * per_input / on_chunk if on_chunk > 0 else per_map[name]
    return {"per_input": per_input, "per_call": per_call, "per_input_in_call": slope, "per_map": per_map,
            "per_explained": per_explained, "n_classes": int(logits.shape[1])}


def engine(x: torch.Tensor, *, n_classes: int, metrics: Sequence[str], batch_size: int, options: Mapping = {},
           finetuned: bool = False) -> dict:
    """The library's own seconds of each metric group, at x's sample shape on x's device → ``{"per_input": {group: s
    per model input}, "per_explained": {group: s per explained input}, "per_chunk": {group: s per chunk},
    "seconds": s}`` (``seconds``: what timing them took).

    What :func:`measure` cannot see: building the perturbed inputs, masks and orders, drawing the random ones, the
    Few-class candidates, the metrics' own arithmetic. For a model that is cheap beside its input (a GPU, a small
    network on large images) this is most of a run: on an H200, ResNet-18 at 224 px takes 0.05 ms per input and
    RFid±'s masked inputs 0.5 ms each. Timed by ``fl.evaluate`` itself on one and on two stand-in samples of x's
    shape on x's device, with a model that costs next to nothing (:func:`faithlab.evaluation.estimate`'s linear
    read-out of the input's mean), random maps and an explainer returning them, the sample-level ``metrics`` with
    ``options`` at the Monte-Carlo floors (:func:`knobs`: each draw costs the same at any count), after a warm-up
    call on a small probe image (imports, first-call set-up). As :func:`faithlab.evaluation.estimate` does for the
    inputs, the two give each group a cost per input (the line's slope over its model inputs or, a group without
    any, its explained inputs) and a fixed cost per chunk (its intercept, the work of one call of the group's
    metrics whatever the samples); where timing noise makes either negative, the two samples' mean rate and no fixed
    cost."""
    from faithlab.evaluation.estimation import probe_costs, probe_shape
    from faithlab.metrics.registry import METRICS, OPTIONS

    started = time.perf_counter()
    chosen = [m for m in metrics if METRICS[m].level == "sample"]  # dataset-level ones need k fold models
    out = {"per_input": {}, "per_explained": {}, "per_chunk": {}}
    if chosen:
        counts = {**options}
        for k in knobs():
            value = options.get(k.option, OPTIONS[k.option].default)
            counts[k.option] = min(k.floor, value) if isinstance(value, int) else value
        rest = (n_classes, ["pilot"], chosen, finetuned, True, 0, batch_size, counts)
        probe_costs(probe_shape((1, *x.shape[1:]), chosen, **counts), 1, *rest, device=x.device)  # the warm-up
        one, two = (probe_costs((b, *x.shape[1:]), b, *rest, device=x.device).groupby("group", sort=False)[
            ["forward_inputs", "explained_inputs", "seconds"]].sum() for b in (1, 2))
        for group in one.index:
            column = "forward_inputs" if one.loc[group, "forward_inputs"] > 0 else "explained_inputs"
            n1, n2 = float(one.loc[group, column]), float(two.loc[group, column])
            t1, t2 = float(one.loc[group, "seconds"]), float(two.loc[group, "seconds"])
            if n2 <= 0:
                continue
            slope = (t2 - t1) / (n2 - n1) if n2 > n1 else -1.0
            fixed = t1 - slope * n1
            if slope < 0 or fixed < 0:  # noise (or no growth): the mean rate, nothing fixed
                slope, fixed = (t1 + t2) / (n1 + n2), 0.0
            out["per_input" if column == "forward_inputs" else "per_explained"][str(group)] = slope
            out["per_chunk"][str(group)] = fixed
    out["seconds"] = time.perf_counter() - started
    return out


def seconds(table, timing: Mapping) -> object:
    """The estimated seconds of each row of :func:`faithlab.evaluation.estimate`'s table under :func:`measure`'s
    timings → a pandas Series: model calls × per call + model inputs × per input + explained inputs × the row's
    explainer's per explained input (rows of work shared by all explainers: their mean), plus, where ``timing``
    holds :func:`engine`'s rates under ``"engine"``, the library's own work: model inputs × the group's rate per
    input + explained inputs × its rate per explained input + its fixed cost per chunk × the table's chunks
    (``attrs["chunks"]``, 1 if absent)."""
    explained = timing["per_explained"]
    mean = sum(explained.values()) / len(explained) if explained else 0.0
    out = (table["model_calls"] * timing["per_call"] + table["forward_inputs"] * timing["per_input_in_call"]
           + table["explained_inputs"] * table["explainer"].map(explained).fillna(mean))
    own = timing.get("engine")
    if own:
        chunks = table.attrs.get("chunks", 1)
        out = (out + table["forward_inputs"] * table["group"].map(own["per_input"]).fillna(0.0)
               + table["explained_inputs"] * table["group"].map(own["per_explained"]).fillna(0.0)
               + chunks * table["group"].map(own.get("per_chunk", {})).fillna(0.0))
    return out


def for_evaluate(model: Callable, x: torch.Tensor, budget, options: Mapping, *, explainers: Mapping[str, Callable],
                 names: Sequence[str], metrics: Sequence[str] | None = None, finetuned: bool = False, kfold: int = 0,
                 chunk_size: int | None = None, batch_size=None, given: Sequence[str] = ()) -> tuple[dict, Allocation]:
    """``fl.evaluate(..., budget=)``: the options to run with (the caller's, plus every knob's count) and the
    :class:`Allocation`, from timings of ``model`` and ``explainers`` on x's first chunk and
    :func:`faithlab.evaluation.estimate`'s counts for all of x. The seconds spent here are taken off the budget. A
    budget that cannot be met is a ValueError naming ``budget``, with the number of samples that would fit."""
    from faithlab.evaluation.estimation import estimate
    from faithlab.metrics.registry import OPTIONS
    from faithlab.perturb import autobatch

    started = time.perf_counter()
    total = parse(budget)
    n = x.shape[0]
    first = x[:min(n, chunk_size or n, 64)]
    size = batch_size if isinstance(batch_size, int) else autobatch.default_batch_size(model, first)
    timing = measure(model, first, size, explainers)
    timing["engine"] = engine(first, n_classes=timing["n_classes"], batch_size=size, options=options,
                              metrics=list(metrics or ()), finetuned=finetuned)

    def by_group(counts: Mapping[str, int]) -> dict[str, float]:
        table = estimate(tuple(x.shape), n_classes=timing["n_classes"], explainers=list(names), metrics=metrics,
                         finetuned=finetuned, explainer=bool(explainers), kfold=kfold, chunk_size=chunk_size,
                         batch_size=size, **{**options, **counts})
        table["seconds"] = seconds(table, timing)
        out = {str(g): float(v) for g, v in table.groupby("group", sort=False)["seconds"].sum().items()}
        out["maps"] = n * sum(timing["per_map"].values())
        return out

    defaults = {k.option: options.get(k.option, OPTIONS[k.option].default) for k in knobs()}
    first_guess = by_group(defaults)  # cached below: allocate asks for the paper's counts first
    cache = {tuple(sorted(defaults.items())): first_guess}

    def cached(counts: Mapping[str, int]) -> dict[str, float]:
        key = tuple(sorted(counts.items()))
        if key not in cache:
            cache[key] = by_group(counts)
        return cache[key]

    spent = time.perf_counter() - started
    if spent >= total:
        raise ValueError(f"budget={budget!r}: timing the model and the explainers alone took {spent:.1f} s")
    allocation = allocate(cached, total - spent, defaults, given)
    if not allocation.fits:
        raise ValueError(f"budget={budget!r} ({total - spent:.0f} s left after timing): "
                         + describe(allocation, n).split(": ", 1)[1])
    return {**options, **allocation.counts}, allocation

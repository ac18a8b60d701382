"""The metric contract: every metric of the study declares itself here once, and ``fl.evaluate``, the tests and the
book read the declarations.

A metric is a :class:`Metric`: its name, paper and direction, what it ``needs`` beyond a model, inputs and maps
(``"images"``, ``"finetuned"``, ``"kfold"``, ``"explainer"``), the evaluate ``options`` it reads (each an
:class:`Option` with its default and check, declared once and shared by the metrics that read it), its public
``function`` with the one call shape ``function(model, x, attributions, *, target=None, ...)``, the keyword
``arguments`` evaluate passes it (read from a :class:`Context`) and how its ``score`` reads the function's result
— and, for a Monte-Carlo estimate, how its ``mc_se`` reads the score's Monte-Carlo standard error from that same
result (the frame's ``mc_se`` column; NaN for a deterministic metric).
Metrics that share one computation (accuracy AUC, AOPC and LOdds read one most-salient-first curve) name the same
``group`` and compute through :meth:`Context.shared`; work shared by every explainer of a chunk (Few-class's perturbed
images) is a :class:`Shared` input the metric ``uses``.

Adding a metric: write its function (and ``*_details`` twin) in a module of :mod:`faithlab.metrics`; declare a
:class:`Metric` with :func:`register` (the study's own metrics are declared in :mod:`faithlab.metrics.catalogue`);
``fl.evaluate``, the fuzz suite (``tests/fuzz/test_registered_metrics.py``) and the "evaluate equals the metric's own
call" test then cover it. This module imports no metric: it is the contract only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["NEEDS", "LEVELS", "Option", "Shared", "Metric", "Estimate", "Context", "Counted", "Tally", "register",
           "unregister", "registered", "METRICS", "OPTIONS", "SHARED", "options_of", "check_options", "paper_metrics"]

NEEDS: dict[str, str] = {"finetuned": "finetuned= (or finetune=)", "explainer": "explainer=", "kfold": "kfold=",
                         "images": "x of images (B, C, H, W)"}
"""What a metric may need beyond model, x, labels and maps, and how a caller of ``fl.evaluate`` provides it."""

LEVELS = ("sample", "dataset")


@dataclass(frozen=True)
class Option:
    """An option of ``fl.evaluate`` read by one or more metrics: its ``name`` (the keyword), ``default``, ``doc``
    and ``check(value, name, x)`` returning the value to use (raising a TypeError/ValueError that names ``name``)."""

    name: str
    default: Any
    doc: str
    check: Callable[[Any, str, torch.Tensor], Any] | None = None

    def value(self, given: Any, x: torch.Tensor) -> Any:
        return given if self.check is None else self.check(given, self.name, x)


@dataclass(frozen=True)
class Shared:
    """Work computed once per chunk of samples and shared by every explainer (e.g. Few-class's perturbed images):
    ``compute(context) -> value`` with the chunk's :class:`Context` (no maps). Its model inputs are counted as the
    cost group ``name`` (explainer ``"all"``)."""

    name: str
    compute: Callable[["Context"], Any]


@dataclass(frozen=True)
class Estimate:
    """What a metric's ``compute`` may return in place of its score: the ``score`` and its Monte-Carlo standard
    error ``mc_se`` (same shape; None: deterministic), both read from one computation."""

    score: Any
    mc_se: Any = None


@dataclass(frozen=True)
class Metric:
    """One metric of :func:`faithlab.evaluate`, declared once.

    name: the key ``metrics=[...]`` takes; label: display name; paper: chapter slug; higher_is_better;
    function: the public metric, ``function(model, x, attributions, *, target=None, ...)`` (sample level) — its own
    call, which evaluate must equal; arguments: ``arguments(context) -> dict`` of the keyword arguments evaluate passes
    it; score: ``score(result) -> (B,) tensor`` (sample level) or float (dataset level) from the function's result
    (default: the result itself); compute: ``compute(context)`` when the metric reads work shared with others of its
    ``group`` (default: ``score(function(model, x, attributions, **arguments(context)))``); group: metrics computed and
    costed together (default: the name); level: "sample" or "dataset" (one score per explainer, ``sample`` missing;
    computed once over all samples after the chunks); needs: keys of :data:`NEEDS`; options: names of the evaluate
    options read (:data:`OPTIONS`); uses: names of :class:`Shared` inputs read; model: ``"model"`` or
    ``"finetuned"`` (which model the function is given); maps: whether the function is given the explainer's maps
    of x (False: it is given None and computes them itself, as S_avg does with the explainer's own noise); check:
    ``check(options, x)``, a check of the options against the inputs run before any work when the metric is chosen
    (raising an error that names the option); ideal/span: the metric's ideal value and range width where it defines
    them (the synthesis report card); mc_se: ``mc_se(result) -> (B,) tensor`` (float at dataset level), the score's
    Monte-Carlo standard error read from the same function result as ``score`` (None: a deterministic metric, whose
    frame rows carry NaN; a ``compute`` returns an ``Estimate`` instead).
    """

    name: str
    label: str
    paper: str
    higher_is_better: bool
    function: Callable | None = None
    arguments: Callable[["Context"], dict] = field(default=lambda context: {})
    score: Callable[[Any], Any] = field(default=lambda result: result)
    compute: Callable[["Context"], Any] | None = None
    group: str = ""
    level: str = "sample"
    needs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    model: str = "model"
    maps: bool = True
    check: Callable[[dict, torch.Tensor], None] | None = None
    ideal: float | None = None
    span: float | None = None
    mc_se: Callable[[Any], Any] | None = None

    def __post_init__(self):
        if not self.group:
            object.__setattr__(self, "group", self.name)
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"needs names {unknown}; known: {list(NEEDS)}")
        if self.model not in ("model", "finetuned"):
            raise ValueError(f"model must be 'model' or 'finetuned', got {self.model!r}")
        if self.function is None and self.compute is None:
            raise ValueError(f"metric {self.name!r} needs a function or a compute")

    def run(self, context: "Context"):
        """This metric's score on the context's samples (evaluate's path)."""
        return self.estimate(context)[0]

    def estimate(self, context: "Context") -> tuple[Any, Any]:
        """This metric's score on the context's samples and its Monte-Carlo standard error (None: deterministic),
        both read from one computation (evaluate's path)."""
        if self.compute is not None:
            out = self.compute(context)
            return (out.score, out.mc_se) if isinstance(out, Estimate) else (out, None)
        result = self._result(context)
        return self.score(result), None if self.mc_se is None else self.mc_se(result)

    def call(self, context: "Context"):
        """The metric's own public call on the context's samples, scored: what evaluate must equal."""
        return self.score(self._result(context))

    def _result(self, context: "Context"):
        if self.function is None:
            raise TypeError(f"metric {self.name!r} has no public function")
        maps = context.attributions if self.maps else None
        return self.function(context.model, context.x, maps, **self.arguments(context))


class Counted:
    """A model that counts its calls and the inputs it is given (not an nn.Module: the caller's model is checked
    before it is wrapped)."""

    def __init__(self, model: Callable):
        self.model, self.calls, self.inputs = model, 0, 0
        self.__wrapped__ = model  # what it wraps: caches keyed on the model (Few-class's search) see through it
        self.faithlab_passthrough = True  # it only counts: the default batch size reads the wrapped model's activations

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.inputs += inputs.shape[0]
        return self.model(inputs)


class Tally:
    """Every :class:`Counted` model of one evaluation; :meth:`totals` sums their inputs and calls (the cost of a
    computation is the difference of the totals around it)."""

    def __init__(self):
        self.counters: list[Counted] = []

    def counted(self, model: Callable) -> Counted:
        counter = Counted(model)
        self.counters.append(counter)
        return counter

    def totals(self) -> tuple[int, int]:
        return sum(c.inputs for c in self.counters), sum(c.calls for c in self.counters)


@dataclass
class Context:
    """What a metric's ``arguments``/``compute`` read: the (counted) ``model`` it runs on (the fine-tuned one for
    FFid), the chunk's inputs ``x``, true ``labels``, the model's prediction ``target`` (ŷ on the clean inputs), this
    explainer's ``attributions`` of the chunk (None in a :class:`Shared` computation), the explainer's ``name`` and
    callable (``explainer``, or None), ``sample_index`` (the samples' global indices: random draws are keyed to
    them), the validated ``options``, ``batch_size``, ``kfold`` (or None), the :class:`Shared` inputs computed for the
    chunk (``inputs``), ``user_model`` (the caller's model, uncounted, given to explainers), the ``tally`` of
    counted models and ``progress`` (whether a long computation may show its own progress bar)."""

    model: Callable
    x: torch.Tensor
    labels: torch.Tensor
    target: torch.Tensor
    attributions: torch.Tensor | None
    name: str
    explainer: Callable | None
    sample_index: torch.Tensor
    options: Mapping[str, Any]
    batch_size: int | str
    kfold: Any = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    user_model: Callable | None = None
    tally: Tally = field(default_factory=Tally)
    progress: bool = False
    _shared: dict = field(default_factory=dict)
    explained: int = 0

    def counted(self, model: Callable) -> Counted:
        """``model`` wrapped so that its inputs count in this evaluation's cost."""
        return self.tally.counted(model)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once for this explainer and chunk, read by every metric of a group."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def count_explained(self, n: int) -> None:
        """Record ``n`` inputs given to the explainer (the cost table's ``explained_inputs``)."""
        self.explained += int(n)


METRICS: dict[str, Metric] = {}
"""Every registered metric, by name, in registration order (the order ``fl.evaluate`` computes and lists them)."""

OPTIONS: dict[str, Option] = {}
"""Every evaluate option a registered metric reads, by keyword."""

SHARED: dict[str, Shared] = {}
"""Every :class:`Shared` input a registered metric uses, by name."""

_LISTENERS: list[Callable[[], None]] = []


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


def register(metric: Metric, *, options: tuple[Option, ...] = (), shared: tuple[Shared, ...] = ()) -> Metric:
    """Declare ``metric`` (and the :class:`Option` and :class:`Shared` it introduces). A name already registered, an
    option it reads that nobody declared, or an option declared twice with another default is an error."""
    if not isinstance(metric, Metric):
        raise TypeError(f"metric must be a faithlab.metrics.registry.Metric, got {type(metric).__name__}")
    if metric.name in METRICS:
        raise ValueError(f"a metric named {metric.name!r} is already registered")
    for option in options:
        known = OPTIONS.get(option.name)
        if known is not None and known is not option:
            raise ValueError(f"option {option.name!r} is already declared (default {known.default!r})")
    for item in shared:
        known = SHARED.get(item.name)
        if known is not None and known is not item:
            raise ValueError(f"shared input {item.name!r} is already declared")
    declared = {**OPTIONS, **{o.name: o for o in options}}
    missing = [o for o in metric.options if o not in declared]
    if missing:
        raise ValueError(f"metric {metric.name!r} reads options {missing} that no Option declares")
    have = {**SHARED, **{s.name: s for s in shared}}
    missing = [s for s in metric.uses if s not in have]
    if missing:
        raise ValueError(f"metric {metric.name!r} uses shared inputs {missing} that no Shared declares")
    OPTIONS.update({o.name: o for o in options})
    SHARED.update({s.name: s for s in shared})
    METRICS[metric.name] = metric
    _changed()
    return metric


def unregister(name: str) -> None:
    """Remove a registered metric (and the options and shared inputs only it read)."""
    if name not in METRICS:
        raise KeyError(f"no metric named {name!r} is registered")
    metric = METRICS.pop(name)
    for option in metric.options:
        if not any(option in m.options for m in METRICS.values()):
            OPTIONS.pop(option, None)
    for item in metric.uses:
        if not any(item in m.uses for m in METRICS.values()):
            SHARED.pop(item, None)
    _changed()


@contextlib.contextmanager
def registered(metric: Metric, **declared) -> Iterator[Metric]:
    """Register ``metric`` for the duration of a ``with`` block (tests, a user's experiment)."""
    register(metric, **declared)
    try:
        yield metric
    finally:
        unregister(metric.name)


def options_of(names) -> list[str]:
    """The option names the metrics ``names`` read, in declaration order."""
    read = {o for n in names for o in METRICS[n].options}
    return [o for o in OPTIONS if o in read]


def check_options(given: Mapping[str, Any], chosen, x: torch.Tensor) -> dict[str, Any]:
    """Every option's value (given or its default), checked, then each chosen metric's own ``check``; an unknown
    keyword is a TypeError naming it and the options the registered metrics read."""
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise TypeError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; the registered "
                        f"metrics read: {', '.join(OPTIONS)}")
    values = {name: option.value(given.get(name, option.default), x) for name, option in OPTIONS.items()}
    for name in chosen:
        if METRICS[name].check is not None:
            METRICS[name].check(values, x)
    return values


def paper_metrics() -> dict[str, list[str]]:
    """Display names of the registered metrics of each paper (chapter slug → labels), for the book's study map."""
    out: dict[str, list[str]] = {}
    for metric in METRICS.values():
        out.setdefault(metric.paper, []).append(metric.label)
    return out



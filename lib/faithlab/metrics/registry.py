"""The metric contract: every metric declares itself once, beside its function in its own module, and
``fl.evaluate``, the CLI, the hints, the report, the tests and the book read the declarations.

A metric is a :class:`Metric`: its name, paper and direction, what it ``needs`` beyond a model, inputs and maps
(``"images"``, ``"finetuned"``, ``"kfold"``, ``"explainer"``), the ``options`` evaluate exposes (each an
:class:`Option` named as its function's own keyword, with its default and check; evaluate takes ``<keyword>=`` for
every chosen metric that takes it, or ``<group>_<keyword>=`` for one group's: a prefix rule, no renaming table), its
public ``function`` with the one call shape ``function(model, x, attributions, *, target=None, ...)``, the one
implementation evaluate runs (``details``, its ``*_details`` twin) and how its ``score`` — and, for a Monte-Carlo
estimate, its ``mc_se`` (the frame's ``mc_se`` column; NaN for a deterministic metric) — is read from that result,
whether it reads the labels (``accuracy``), how to make it cheaper (``tip``), its Monte-Carlo count (``mc_count``,
which a time budget may lower) and what it measures (``doc``). The keyword arguments evaluate passes are derived from
the implementation's signature (:meth:`Metric.arguments`), not written per metric. Metrics of one ``group`` that read
the same implementation share one run of it per chunk and explainer; work shared by every explainer of a chunk
(Few-class's perturbed images) is a :class:`Shared` input the metric ``uses`` as a keyword.

Adding a metric: write its function (and ``*_details`` twin) in its paper's module under
:mod:`faithlab.metrics.papers` (``papers/<slug>.py``, with ``paper="<slug>"``) and declare it below the function with
:func:`register` (or :func:`declare`); importing :mod:`faithlab.metrics` imports every module under the package, so
``fl.evaluate``, the CLI, the fuzz suite (``tests/faithlab/fuzz/test_registered_metrics.py``) and the API page find it. This
module imports no metric: it is the contract only.

One concept: the metric declaration and what evaluate derives from it (the declaration classes, the registry of
declarations, the options read by keyword, and the facts derived for the hints, the CLI and the budget). The context
a metric is computed in (:class:`Context`, :class:`Values`, :class:`Tally`, ...) is :mod:`faithlab.metrics.context`,
whose names this module re-exports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import torch

from faithlab import _validate
from faithlab.metrics.context import Context, Counted, Tally, Values, explained, takes_seeds_keyword

__all__ = ["NEEDS", "LEVELS", "PAPERS", "SIGNATURE", "Option", "Shared", "Metric", "Estimate", "Context", "Counted",
           "Tally", "Values", "declare", "register", "unregister", "registered", "METRICS", "OPTIONS", "SHARED",
           "EVALUATE_OPTIONS", "options_of", "check_options", "accuracy_forms", "tips", "mc_counts",
           "explained", "takes_seeds_keyword", "checks", "option_name", "resolve", "plain", "scoped_name",
           "add_listener"]

NEEDS: dict[str, str] = {"finetuned": "finetuned= (or finetune=)", "explainer": "explainer=", "kfold": "kfold=",
                         "images": "x of images (B, C, H, W)"}
"""What a metric may need beyond model, x, labels and maps, and how a caller of ``fl.evaluate`` provides it."""

LEVELS = ("sample", "dataset")

PAPERS: dict[str, str] = {"ffidelity": "F-Fidelity", "fewclass": "Few-class Fidelity", "saco": "SaCo",
                          "reco_mege": "ReCo / MeGe", "trace": "TRACE"}
"""The papers whose metrics the library implements, by slug (the folder under :mod:`faithlab.metrics.papers`), with
their display names, in the order the registry lists their metrics: a metric's ``paper`` is one of them (or a slug
of its own, listed after them)."""


SIGNATURE = inspect.Parameter.empty
"""An :class:`Option`'s default when the metric function's own default is evaluate's."""


@dataclass(frozen=True)
class Option:
    """A keyword of a metric's function that ``fl.evaluate`` exposes, named as the function names it: ``name`` (the
    function's keyword), ``default`` (evaluate's; :data:`SIGNATURE`: the function's own default), ``doc`` and
    ``check(value, name, x)`` returning the value to use (raising a TypeError/ValueError that names ``name``, the
    spelling the caller used). Evaluate reads it as ``name=`` (every chosen metric that takes it) or
    ``<group>_<name>=`` (that group's metrics only, e.g. ``saco_k``): a prefix rule, no renaming table."""

    name: str
    default: Any = SIGNATURE
    doc: str = ""
    check: Callable[[Any, str, torch.Tensor], Any] | None = None

    def value(self, given: Any, x: torch.Tensor, name: str | None = None) -> Any:
        return given if self.check is None else self.check(given, name or self.name, x)


@dataclass(frozen=True)
class Shared:
    """Work computed once per chunk of samples and shared by every explainer (e.g. Few-class's perturbed images):
    ``compute(context) -> value`` with the chunk's :class:`Context` (no maps; its options those of ``group``). Its
    model inputs are counted as the cost group ``name`` (explainer ``"all"``); ``tip`` says what it costs, shown
    before its group's own tip in the CLI's estimate."""

    name: str
    compute: Callable[["Context"], Any]
    group: str = ""
    tip: str | None = None


@dataclass(frozen=True)
class Estimate:
    """What a dataset-level metric's ``compute`` may return in place of its score: the ``score`` and its
    Monte-Carlo standard error ``mc_se`` (same shape; None: deterministic), both read from one computation."""

    score: Any
    mc_se: Any = None


def _reader(read: Callable | str | None) -> Callable[[Any], Any]:
    if read is None:
        return lambda result: result
    if isinstance(read, str):
        return lambda result: result[read]
    return read


@lru_cache(maxsize=None)
def _parameters(function: Callable) -> frozenset[str]:
    return frozenset(inspect.signature(function).parameters)


@dataclass(frozen=True)
class Metric:
    """One metric of :func:`faithlab.evaluate`, declared once, beside its function (see :func:`declare`).

    name: the key ``metrics=[...]`` takes; label: display name; paper: chapter slug (:data:`PAPERS`);
    higher_is_better; function: the public metric, ``function(model, x, attributions, *, target=None, ...)`` —
    what a user calls; details: the one implementation evaluate runs (default ``function``; its ``*_details`` twin,
    which ``function`` reads), called once per chunk and explainer for all metrics of the ``group`` with the same
    ``details``; score: the score read from details' result (a key, a callable, or None: the result itself);
    mc_se: its Monte-Carlo standard error read from the same result (a key or callable; None: a deterministic
    metric, NaN in the frame); group: metrics computed and costed together (default: the name); level: "sample" or
    "dataset" (one score per explainer, ``sample`` missing; computed once over all samples after the chunks);
    needs: keys of :data:`NEEDS`; options: the :class:`Option` s of the function's own keywords that evaluate
    exposes; fixed: keywords evaluate always passes (Fid±: ``alpha=1``); accuracy: the score reads 1[y = ŷ], so
    evaluate passes the labels as ``target`` (a ``details`` with a ``labels`` keyword gets them there) and the hints
    know a degenerate accuracy; unmoved: an accuracy form's score when every prediction is correct and no removal
    changes one (Fid±: 0, the accuracy AUC: 1); uses: ``{keyword: Shared name}``, shared inputs passed as that keyword; model:
    ``"model"`` or ``"finetuned"``; maps: whether the function is given the maps (False: it is given None and an
    ``explainer`` to map inputs itself, as S_avg); check: ``check(options, x, name)``, run before any work when the
    metric is chosen (``options`` resolved for its group, ``name(keyword)`` the option as the caller spelt it;
    raising an error that names it); ideal/span: the metric's ideal value and range width where it defines them
    (the report card); tip: ``(keyword, value, why)``, how to make it cheaper (the CLI's estimate shows ``--set
    <option>=<value>``, the option named by :func:`option_name`); mc_count: ``(keyword,
    floor, what one draw is)``, its Monte-Carlo count, which a time budget may lower to ``floor``; degenerate:
    settings of the function's keywords (each ``{keyword: value}``) that make the score the same for every map, or
    undefined — a Monte-Carlo count too small to measure anything (infidelity's one normalised draw, μF's two
    subsets), a grid whose every level removes no unit or every unit — which the function refuses with a ValueError
    naming the option (the rule of :mod:`faithlab.metrics`; the fuzz suite calls each, and a metric with an
    ``mc_count`` declares one of its count below ``floor``); doc: one line
    for ``help(fl.evaluate)`` and the API page; compute: dataset-level metrics only (ReCo/MeGe read the k fold
    models and the explainer, not one call shape): ``compute(context)`` → score or :class:`Estimate`.

    Evaluate calls ``details(model, x, maps, **arguments)``: the declared options, ``fixed``, the shared inputs and,
    where the function takes them, ``target`` (ŷ; the labels for an accuracy form), ``labels``, ``batch_size``,
    ``sample_index``, ``generator`` (evaluate's ``seed``), ``reference`` (when evaluate's is not None) and
    ``explainer`` (the explainer bound to the user's model, when ``maps`` is False).
    """

    name: str
    label: str
    paper: str
    higher_is_better: bool
    function: Callable | None = None
    details: Callable | None = None
    score: Callable[[Any], Any] | str | None = None
    mc_se: Callable[[Any], Any] | str | None = None
    group: str = ""
    level: str = "sample"
    needs: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)
    accuracy: bool = False
    unmoved: float = 0.0
    uses: Mapping[str, str] = field(default_factory=dict)
    model: str = "model"
    maps: bool = True
    check: Callable[[dict, torch.Tensor, Callable[[str], str]], None] | None = None
    ideal: float | None = None
    span: float | None = None
    tip: tuple | None = None
    mc_count: tuple | None = None
    degenerate: tuple[Mapping[str, Any], ...] = ()
    doc: str = ""
    compute: Callable[["Context"], Any] | None = None

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
        if self.compute is not None and self.level != "dataset":
            raise ValueError(f"metric {self.name!r}: only a dataset-level metric has a compute; a sample-level one "
                             "is computed by its function (or its details twin)")
        if self.function is None and self.compute is None:
            raise ValueError(f"metric {self.name!r} needs a function (or, at dataset level, a compute)")
        bad = [o for o in self.options if not isinstance(o, Option)]
        if bad:
            raise ValueError(f"metric {self.name!r}: options must be Option declarations of the function's own "
                             f"keywords, got {bad!r}")
        if self.function is not None:
            own = _parameters(self.implementation)
            stray = [k for setting in self.degenerate for k in setting if k not in own]
            if stray:
                raise ValueError(f"metric {self.name!r}: degenerate settings name {stray}, which "
                                 f"{self.implementation.__name__} does not take")
            missing = [k for k in [*(o.name for o in self.options), *self.fixed, *self.uses] if k not in own]
            if missing:
                raise ValueError(f"metric {self.name!r}: {self.implementation.__name__} takes no keyword "
                                 f"{', '.join(missing)}")

    @property
    def implementation(self) -> Callable:
        """The function evaluate runs: ``details``, or ``function`` when it has no twin."""
        return self.details if self.details is not None else self.function

    def arguments(self, context: "Context", function: Callable | None = None) -> dict:
        """The keyword arguments evaluate passes ``function`` (default: :attr:`implementation`) on ``context``."""
        function = function or self.implementation
        takes = _parameters(function)
        values = context.group_options(self.group)
        kw: dict[str, Any] = {}
        if "target" in takes:
            kw["target"] = context.labels if self.accuracy and "labels" not in takes else context.target
        if "labels" in takes:
            kw["labels"] = context.labels
        for key, value in (("batch_size", context.batch_size), ("sample_index", context.sample_index),
                           ("generator", values.get("seed", 0))):
            if key in takes:
                kw[key] = value
        if "reference" in takes and values.get("reference") is not None:
            kw["reference"] = values["reference"]
        if "explainer" in takes and not self.maps:
            kw["explainer"] = context.bound_explainer(f"{self.label}'s inputs")
        kw.update(self.fixed)
        kw.update({o.name: values[o.name] for o in self.options})
        kw.update({k: context.inputs[s] for k, s in self.uses.items()})
        return kw

    def run(self, context: "Context"):
        """This metric's score on the context's samples (evaluate's path)."""
        return self.estimate(context)[0]

    def estimate(self, context: "Context") -> tuple[Any, Any]:
        """This metric's score on the context's samples and its Monte-Carlo standard error (None: deterministic),
        both read from one run of :attr:`implementation`, shared with the metrics of its group that read the same
        one (evaluate's path)."""
        if self.compute is not None:
            out = self.compute(context)
            return (out.score, out.mc_se) if isinstance(out, Estimate) else (out, None)
        function = self.implementation
        # one run per group, chunk and explainer for the metrics that pass it the same arguments
        key = (function, self.accuracy and "labels" not in _parameters(function), repr(sorted(self.fixed.items())),
               tuple(o.name for o in self.options), tuple(sorted(self.uses.items())), self.maps)
        result = context.shared(key, lambda: self._result(context, function))
        return _reader(self.score)(result), None if self.mc_se is None else _reader(self.mc_se)(result)

    def call(self, context: "Context"):
        """The metric's own public call on the context's samples, scored as evaluate scores it: what a user gets
        from ``function`` (the score read from its result when ``function`` is the details twin)."""
        if self.function is None:
            raise TypeError(f"metric {self.name!r} has no public function")
        result = self._result(context, self.function)
        if self.function is self.implementation:
            return _reader(self.score)(result)
        return self.from_function(result)

    def from_function(self, result):
        """The score from ``function``'s own result, when ``function`` is not the details twin: the mean over the
        levels of a (B, L) result (F-Fidelity's scores per explanation size), else the result itself."""
        if isinstance(result, torch.Tensor) and result.ndim == 2 and self.level == "sample":
            return result.mean(dim=1)
        return result

    def _result(self, context: "Context", function: Callable):
        maps = context.attributions if self.maps else None
        return function(context.model, context.x, maps, **self.arguments(context, function))


def plain(details: Callable, key: str, doc: str | None, *, name: str | None = None) -> Callable:
    """The plain twin of a ``*_details`` function: same parameters (its signature, written once), returns
    ``details(...)[key]``; named ``name`` (default: ``details``' name without ``_details``) in ``details``' module,
    with ``doc``. A metric module writes ``saco = plain(saco_details, "saco", \"\"\"...\"\"\")``: the score is derived
    from the details twin, so the two cannot drift apart."""
    signature = inspect.signature(details)
    name = name or details.__name__.removesuffix("_details")

    def function(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:  # as Python words it for a def, naming the function the caller called
            raise TypeError(f"{name}() {exc}") from None
        return details(*bound.args, **bound.kwargs)[key]

    function.__signature__ = signature.replace(return_annotation="torch.Tensor")
    function.__name__ = function.__qualname__ = name
    function.__module__ = details.__module__
    function.__doc__ = doc
    return function


# ---------------------------------------------------------------------------------------------- option checks
class checks:  # noqa: N801 - a namespace of the checks declarations share
    """Checks an :class:`Option` may name: each ``check(value, name, x)`` returns the value to use and raises an
    error naming ``name``."""

    @staticmethod
    def fractions(value, name, x):
        return _validate.fractions(value, name).tolist()

    @staticmethod
    def increasing(value, name, x):
        _validate.fractions(value, name, increasing=True)
        return value

    @staticmethod
    def open_fraction(value, name, x):
        _validate.fraction(value, name, closed_low=False)
        return value

    @staticmethod
    def positive(value, name, x):
        return _validate.positive_int(value, name)

    @staticmethod
    def at_least(minimum: int, why: str) -> Callable:
        """A check that ``value`` is an int ≥ ``minimum`` (a Monte-Carlo count below it measures nothing: ``why``)."""
        def check(value, name, x):
            value = _validate.positive_int(value, name)
            if value < minimum:
                raise ValueError(f"{name}={value} measures nothing ({why}); use at least {minimum}")
            return value
        return check

    @staticmethod
    def positive_number(value, name, x):
        if not 0 < _validate.number(value, name) < math.inf:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        return value

    @staticmethod
    def seed(value, name, x):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        return value


EVALUATE_OPTIONS = (
    Option("reference", None, "None keeps each metric's own removal value (zero for F-Fidelity, μF and TRACE, the "
           "per-channel mean for SaCo and the cumulative metrics); any ``perturb.Reference`` replaces it for every "
           "metric whose function takes a ``reference`` (Few-class Fid keeps its perturbed images)."),
    Option("seed", 0, "every random draw, passed as ``generator`` to every metric whose function takes one (the same "
           "for every explainer: common random numbers)", checks.seed),
)
"""Evaluate's own options, read by every metric whose function takes the keyword (``seed`` as ``generator``)."""

METRICS: dict[str, Metric] = {}
"""Every registered metric, by name: sample-level before dataset-level, then by paper in :data:`PAPERS`'s order
(other slugs after), then by module and declaration order (the order ``fl.evaluate`` computes and
lists them)."""

OPTIONS: dict[str, Option] = {}
"""Every evaluate option, by keyword: those the registered metrics declare (with their resolved defaults), then
:data:`EVALUATE_OPTIONS`."""

SHARED: dict[str, Shared] = {}
"""Every :class:`Shared` input a registered metric uses, by name."""

_DECLARED: dict[str, tuple[Metric, tuple[Shared, ...], int]] = {}
_LISTENERS: list[Callable[[], None]] = []
_COUNT = iter(range(1 << 62))


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


def add_listener(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after every change of the registry (a metric registered or unregistered): what derives
    from :data:`METRICS` and :data:`OPTIONS` (``fl.evaluate``'s signature and help) is rebuilt then."""
    _LISTENERS.append(listener)


def _resolved(metric: Metric, option: Option) -> Option:
    if option.default is not SIGNATURE:
        return option
    default = inspect.signature(metric.implementation).parameters[option.name].default
    if default is inspect.Parameter.empty:
        raise ValueError(f"metric {metric.name!r}: option {option.name!r} has no default, in its declaration or in "
                         f"{metric.implementation.__name__}'s signature")
    return dataclasses.replace(option, default=default)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) if not isinstance(a, torch.Tensor) else a is b
    except (TypeError, ValueError, RuntimeError):
        return a is b


def _rebuild(declared: Mapping[str, tuple[Metric, tuple[Shared, ...], int]]) -> None:
    """METRICS, OPTIONS and SHARED from the declarations (raising, with nothing changed, on a conflict)."""
    papers = list(PAPERS)

    def key(item):
        metric, _, count = item
        module = getattr(metric.function or metric.compute, "__module__", "")
        rank = papers.index(metric.paper) if metric.paper in papers else len(papers)
        return LEVELS.index(metric.level), rank, "" if rank < len(papers) else metric.paper, module, count

    ordered = sorted(declared.values(), key=key)
    options: dict[str, Option] = {}
    shared: dict[str, Shared] = {}
    for metric, items, _ in ordered:
        for option in metric.options:
            option = _resolved(metric, option)
            known = options.get(option.name)
            if known is not None and not _same(known.default, option.default):
                raise ValueError(f"option {option.name!r} is already declared (default {known.default!r}); metric "
                                 f"{metric.name!r} declares it with default {option.default!r}")
            options.setdefault(option.name, option)
        for item in items:
            known = shared.get(item.name)
            if known is not None and known is not item:
                raise ValueError(f"shared input {item.name!r} is already declared")
            shared[item.name] = item
    for metric, _, _ in ordered:
        missing = [s for s in metric.uses.values() if s not in shared]
        if missing:
            raise ValueError(f"metric {metric.name!r} uses shared inputs {missing} that no Shared declares")
    for option in EVALUATE_OPTIONS:
        if option.name in options:
            raise ValueError(f"option {option.name!r} is evaluate's own; a metric declares it as another keyword")
        options[option.name] = option
    METRICS.clear()
    METRICS.update({m.name: m for m, _, _ in ordered})
    OPTIONS.clear()
    OPTIONS.update(options)
    SHARED.clear()
    SHARED.update(shared)


def register(metric: Metric, *, shared: tuple[Shared, ...] = ()) -> Metric:
    """Declare ``metric`` (and the :class:`Shared` inputs it introduces). A name already registered, an option
    declared twice with another default or a shared input it uses that nobody declared is an error."""
    if not isinstance(metric, Metric):
        raise TypeError(f"metric must be a faithlab.metrics.registry.Metric, got {type(metric).__name__}")
    if metric.name in _DECLARED:
        raise ValueError(f"a metric named {metric.name!r} is already registered")
    declared = {**_DECLARED, metric.name: (metric, tuple(shared), next(_COUNT))}
    _rebuild(declared)
    _DECLARED.clear()
    _DECLARED.update(declared)
    _changed()
    return metric


def declare(name: str, label: str, paper: str, higher_is_better: bool, *, shared: tuple[Shared, ...] = (),
            **facts) -> Callable[[Callable], Callable]:
    """Decorator declaring the metric the decorated function computes, beside it:
    ``@declare("saco", "SaCo", "saco", True, options=(Option("k"),))`` on ``def saco(model, x, attributions, *,
    target=None, k=10, ...)`` registers ``Metric("saco", ..., function=saco, ...)`` and returns the function
    unchanged. Stack it to declare several metrics of one function (Fid+, RFid+, FFid+)."""
    def decorate(function: Callable) -> Callable:
        register(Metric(name, label, paper, higher_is_better, function, **facts), shared=shared)
        return function
    return decorate


def unregister(name: str) -> None:
    """Remove a registered metric (and the options and shared inputs only it read)."""
    if name not in _DECLARED:
        raise KeyError(f"no metric named {name!r} is registered")
    declared = {k: v for k, v in _DECLARED.items() if k != name}
    _rebuild(declared)
    _DECLARED.pop(name)
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
    read = {o.name for n in names for o in METRICS[n].options}
    return [o for o in OPTIONS if o in read]


def scoped_name(name: str) -> tuple[str, str] | None:
    """``(group, keyword)`` for a ``<group>_<keyword>`` option name a registered group declares (None: not one)."""
    for metric in METRICS.values():
        prefix = f"{metric.group}_"
        if name.startswith(prefix) and any(o.name == name[len(prefix):] for o in metric.options):
            return metric.group, name[len(prefix):]
    return None


def check_options(given: Mapping[str, Any], chosen, x: torch.Tensor) -> Values:
    """Every option's value (given or its default), checked, then each chosen metric's own ``check``; an unknown
    keyword is a TypeError naming it and the options the registered metrics read. ``<group>_<keyword>`` sets the
    keyword for that group's metrics only."""
    scoped, spelling = {}, {}
    for name in given:
        if name in OPTIONS:
            continue
        found = scoped_name(name)
        if found is None:
            raise TypeError(f"unknown option {name}; the registered metrics read: {', '.join(OPTIONS)} (or "
                            "<group>_<option> for one group's metrics, e.g. saco_k)")
        scoped[found] = OPTIONS[found[1]].value(given[name], x, name)
        spelling[found] = name
    flat = {name: option.value(given.get(name, option.default), x) for name, option in OPTIONS.items()}
    values = Values(flat, scoped, spelling)
    for name in chosen:
        metric = METRICS[name]
        if metric.check is not None:
            metric.check(values.for_group(metric.group), x, lambda k, g=metric.group: values.name(g, k))
    return values


def resolve(options: Mapping[str, Any], keyword: str, group: str | None = None) -> Any:
    """The value of ``keyword`` that ``group``'s metrics would read from evaluate's unchecked ``options`` (given
    scoped, given, or the default)."""
    if group is not None and f"{group}_{keyword}" in options:
        return options[f"{group}_{keyword}"]
    return options.get(keyword, OPTIONS[keyword].default)


def accuracy_forms() -> tuple[str, ...]:
    """The registered metrics whose score reads 1[y = ŷ] against the labels (declared ``accuracy``)."""
    return tuple(m.name for m in METRICS.values() if m.accuracy)


def option_name(keyword: str, group: str) -> str:
    """How to name ``group``'s option ``keyword`` so that a reader knows which metric it tunes: the keyword itself
    when no registered metric of another paper has a function taking a keyword of that name, else
    ``<group>_<keyword>`` (``fewclass_fractions``: the cumulative metrics take ``fractions`` too)."""
    papers = {m.paper for m in METRICS.values() if m.group == group}
    for metric in METRICS.values():
        if metric.paper not in papers and metric.function is not None and any(
                keyword in _parameters(f) for f in (metric.function, metric.implementation)):
            return f"{group}_{keyword}"
    return keyword


def tips() -> dict[str, str]:
    """How to make each metric group (and shared input) cheaper, from the declarations' ``tip``: group → text with
    the ``faithlab evaluate --set`` that does it."""
    def text(group: str, tip: tuple) -> str:
        keyword, value, why = tip
        shown = value if not isinstance(value, (list, tuple)) else "[" + ",".join(str(v) for v in value) + "]"
        return f"{why}: --set {option_name(keyword, group)}={shown}"

    out = {}
    for metric in METRICS.values():
        if metric.tip is not None:
            out.setdefault(metric.group, text(metric.group, metric.tip))
    for item in SHARED.values():
        if item.tip is not None:
            out[item.name] = "; ".join(t for t in (item.tip, out.get(item.group)) if t)
    return out


def mc_counts() -> dict[str, tuple[tuple[str, ...], int, str]]:
    """Each Monte-Carlo count a time budget may lower, from the declarations' ``mc_count``: keyword → (the groups
    that read it, its floor, what one draw is)."""
    out: dict[str, tuple[tuple[str, ...], int, str]] = {}
    for metric in METRICS.values():
        if metric.mc_count is not None:
            keyword, floor, draw = metric.mc_count
            groups, _, _ = out.get(keyword, ((), floor, draw))
            out[keyword] = (tuple(dict.fromkeys((*groups, metric.group))), floor, draw)
    return out

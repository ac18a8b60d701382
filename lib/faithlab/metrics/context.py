"""The context a registered metric is computed in: evaluate's checked option values (:class:`Values`, read by
keyword or ``<group>_<keyword>``), the models that count their inputs (:class:`Counted`, :class:`Tally`), the
chunk a metric reads (:class:`Context`) and the explainer bound to the user's model (:func:`explained`,
:func:`takes_seeds_keyword`). :mod:`faithlab.metrics.registry` declares the metrics and re-exports these names.

One concept: what one metric's run on one chunk and explainer reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Values", "Counted", "Tally", "Context", "explained", "takes_seeds_keyword"]


class Values(dict):
    """Evaluate's checked option values by keyword (given or default), and ``scoped``: the values given for one
    group's metrics only, as ``<group>_<keyword>=`` (``saco_k``). :meth:`for_group` is what a group's metrics read;
    ``spelling`` the name the caller used for each (for error messages)."""

    def __init__(self, flat: Mapping[str, Any], scoped: Mapping[tuple[str, str], Any] | None = None,
                 spelling: Mapping[tuple[str, str], str] | None = None):
        super().__init__(flat)
        self.scoped = dict(scoped or {})
        self.spelling = dict(spelling or {})

    def for_group(self, group: str) -> dict[str, Any]:
        return {**self, **{k: v for (g, k), v in self.scoped.items() if g == group}}

    def name(self, group: str, keyword: str) -> str:
        """The option name the caller gave for ``group``'s ``keyword`` (the keyword itself when not given scoped)."""
        return self.spelling.get((group, keyword), keyword)


def explained(who: str, maps, inputs: torch.Tensor, where: str) -> torch.Tensor:
    """The explainer's maps of ``inputs``, detached, checked: a tensor of maps that fit the inputs (one per input,
    any layout ``perturb.check_attributions`` accepts), named by the explainer."""
    from faithlab import perturb

    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"explainer {who!r} must return a tensor of maps, got {type(maps).__name__} on {where}")
    try:
        perturb.check_attributions(maps, inputs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"explainer {who!r} returned maps that do not fit its {inputs.shape[0]} inputs on {where} "
                        f"(shape {tuple(inputs.shape)}): {exc}") from None
    return maps.detach()


def takes_seeds_keyword(explainer) -> bool:
    """Whether the user's explainer has a ``seeds`` parameter that can be passed by keyword."""
    try:
        p = inspect.signature(explainer).parameters.get("seeds")
    except (TypeError, ValueError):  # no signature
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


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

    def group_options(self, group: str) -> dict[str, Any]:
        """The option values ``group``'s metrics read (``<group>_<keyword>`` given values over the others)."""
        return self.options.for_group(group) if isinstance(self.options, Values) else dict(self.options)

    def bound_explainer(self, where: str = "the metric's inputs") -> Callable:
        """This explainer bound to the user's model as a metric that maps inputs itself calls it
        (``explainer(model, inputs, target[, seeds])``): its maps checked and its inputs counted. Given ``seeds``
        only when the user's explainer takes them (common random numbers: a sample and its neighbours share one
        seed); otherwise its own noise, if any, enters the metric."""
        user, who, fn = self.user_model, self.name, self.explainer

        if takes_seeds_keyword(fn):
            def bound(_model, inputs: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor) -> torch.Tensor:
                self.count_explained(inputs.shape[0])
                return explained(who, fn(user, inputs, t, seeds=seeds), inputs, where)
        else:
            def bound(_model, inputs: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
                self.count_explained(inputs.shape[0])
                return explained(who, fn(user, inputs, t), inputs, where)
        return bound

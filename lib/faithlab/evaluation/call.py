"""``fl.evaluate``'s boundary: every argument checked once, before any work, into a :class:`Call` that the engine
(:mod:`faithlab.evaluation.engine`) runs without checking again. The data comes as chunks (:class:`Chunk`), slices of
tensors held in memory or the batches of any iterable, each batch checked as it arrives and against the first."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import torch

from faithlab import _validate, perturb
from faithlab.metrics import registry
from faithlab.metrics.registry import METRICS, NEEDS
from faithlab.perturb.autobatch import BatchSize


def check_maps(attributions, x: torch.Tensor, what: str = "attributions") -> dict[str, torch.Tensor]:
    if isinstance(attributions, torch.Tensor):
        attributions = {"explainer": attributions}
    if not isinstance(attributions, Mapping) or not attributions:
        raise TypeError(f"{what} must be a tensor of maps or a non-empty mapping {{explainer name: maps}}, got "
                        f"{type(attributions).__name__}")
    out = {}
    for name, a in attributions.items():
        if not isinstance(name, str):
            raise TypeError(f"{what} keys must be explainer names (str), got {name!r}")
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"{what}[{name!r}] must be a tensor, got {type(a).__name__}")
        try:
            perturb.check_attributions(a, x)
            _validate.finite(a, "attributions")
            with _validate.checked(a):  # checked just above: unit_scores reads it without checking again
                perturb.unit_scores(a, perturb.default_units(x), reduce="sum")
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{what}[{name!r}]: {exc}") from None
        if a.shape[0] != x.shape[0]:
            raise ValueError(f"{what}[{name!r}] has {a.shape[0]} maps but x has {x.shape[0]} samples")
        _validate.same_device(x, a, "x", f"{what}[{name!r}]")
        out[name] = a
    return out


def _per_explainer(value, names: list[str] | None, arg: str) -> dict[str, Callable]:
    """``explainer=`` as one callable for every explainer or a mapping per explainer name (names None: the
    explainers are the mapping's keys, one callable is named "explainer")."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        if names is not None:
            unknown = sorted(set(value) - set(names))
            if unknown:
                raise ValueError(f"{arg} names explainers {unknown} that attributions does not have ({names})")
        bad = [k for k, v in value.items() if not isinstance(k, str) or not callable(v)]
        if bad:
            raise TypeError(f"{arg}[{bad[0]!r}] must be a callable(model, inputs, target) -> maps named by a str")
        return dict(value)
    if not callable(value):
        raise TypeError(f"{arg} must be a callable(model, inputs, target) -> maps or a mapping of them, got "
                        f"{type(value).__name__}")
    return {name: value for name in (names if names is not None else ["explainer"])}


def choose(requested, *, has: dict[str, bool]) -> list[str]:
    if requested is None:
        return [m for m, info in METRICS.items() if all(has[n] for n in info.needs)]
    if isinstance(requested, str) or not isinstance(requested, Sequence):
        raise TypeError(f"metrics must be a list of metric names (see faithlab.evaluation.available()), got "
                        f"{requested!r}")
    chosen = []
    for m in requested:
        if m not in METRICS:
            raise ValueError(f"metrics: unknown metric {m!r}; known: {', '.join(METRICS)}")
        missing = [NEEDS[n] for n in METRICS[m].needs if not has[n]]
        if missing:
            raise ValueError(f"metrics: {m!r} needs {' and '.join(missing)}")
        if m not in chosen:
            chosen.append(m)
    if not chosen:
        raise ValueError("metrics must name at least one metric")
    return chosen


def check_kfold(kfold, n: int | None, x: torch.Tensor | None = None) -> None:
    """Check a k-fold family before any work: its shape, each fold model (callable, eval mode) and, given the data
    ``x`` (a batch of it when streaming), that each model module lies on x's device and takes its dtype — named
    ``kfold.models[i]``, where torch would stop only at the ReCo/MeGe stage, after every other metric ran."""
    if not hasattr(kfold, "models") or not hasattr(kfold, "folds"):
        raise TypeError("kfold must have .models (k models) and .folds ((N,) fold of each sample), e.g. "
                        "fl.train.cross_train(...)")
    if len(kfold.models) < 2 or kfold.folds.ndim != 1 or (n is not None and kfold.folds.shape[0] != n):
        raise ValueError(f"kfold must hold k ≥ 2 models and folds of shape ({n if n is not None else 'N'},) (one fold "
                         f"per sample of the data), got {len(kfold.models)} models and folds "
                         f"{tuple(kfold.folds.shape)}")
    for i, m in enumerate(kfold.models):
        _validate.model(m, f"kfold.models[{i}]")
        if x is not None:
            _validate.model_device(m, x, f"kfold.models[{i}]", "x")
            _validate.model_accepts(m, x, f"kfold.models[{i}]", "x")


@dataclass
class Chunk:
    """Samples evaluated together: inputs, labels (None: the model's predictions), global indices ``(n,)`` int64 on
    the CPU and the maps (None: the explainers map them)."""

    x: torch.Tensor
    y: torch.Tensor | None
    index: torch.Tensor
    maps: dict[str, torch.Tensor] | None
    digest: str | None = None  # of its inputs, when a checkpoint keeps it


def check_labels(y, x: torch.Tensor, name: str) -> None:
    _validate.tensor(y, name, ndim=1)
    if y.dtype != torch.int64:
        raise TypeError(f"{name} must be an int64 tensor of class labels, got dtype {y.dtype}")
    _validate.batch_match(x, y, "x", name)
    _validate.same_device(x, y, "x", name)


def _batch(item, number: int) -> tuple:
    """One batch of an iterable: ``x``, ``(x,)``, ``(x, y)`` or a mapping with ``x`` and optionally ``y``,
    ``index`` (global indices) and ``attributions`` → (x, y, index, maps)."""
    where = f"data's batch {number}"
    if isinstance(item, torch.Tensor):
        return item, None, None, None
    if isinstance(item, Mapping):
        unknown = sorted(set(item) - {"x", "y", "index", "attributions"})
        if "x" not in item or unknown:
            raise TypeError(f"{where} is a mapping with keys {sorted(item)}; it must have 'x' and may have 'y', "
                            "'index' and 'attributions'")
        return item["x"], item.get("y"), item.get("index"), item.get("attributions")
    if isinstance(item, (tuple, list)) and len(item) in (1, 2):
        return item[0], item[1] if len(item) == 2 else None, None, None
    raise TypeError(f"{where} must be a tensor x, a pair (x, y) or a mapping {{'x': ..., 'y': ...}}, got "
                    f"{type(item).__name__}" + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""))


def split(chunk: Chunk, size: int | None) -> Iterator[Chunk]:
    n = chunk.x.shape[0]
    step = n if size is None else size
    for b0 in range(0, n, step):
        b1 = min(n, b0 + step)
        yield Chunk(chunk.x[b0:b1], None if chunk.y is None else chunk.y[b0:b1], chunk.index[b0:b1],
                     None if chunk.maps is None else {k: v[b0:b1] for k, v in chunk.maps.items()})


def stream(data: Iterable, size: int | None, model: Callable) -> Iterator[Chunk]:
    """The chunks of an iterable of batches, each checked as it arrives (its x as a model input of ``model``, NaN
    and inf refused) and against the first (same sample shape, device, dtype, labels given for all batches or none,
    maps for all or none); global indices count on from 0 unless a batch gives its own."""
    first, seen, start = None, set(), 0
    for number, item in enumerate(data):
        x, y, index, maps = _batch(item, number)
        what = f"data's batch {number}"
        _validate.tensor(x, f"x of {what}", ndim=(2, 3, 4))
        if y is not None:
            check_labels(y, x, f"y of {what}")
        if index is None:
            index = torch.arange(start, start + x.shape[0], device="cpu")
        else:
            _validate.tensor(index, f"index of {what}", ndim=1)
            if index.is_floating_point() or index.dtype == torch.bool or index.shape[0] != x.shape[0]:
                raise ValueError(f"index of {what} must be ({x.shape[0]},) integer global indices, got "
                                 f"{index.dtype} {tuple(index.shape)}")
            index = index.to("cpu", torch.int64)
        if maps is not None:
            maps = check_maps(maps, x, f"attributions of {what}")
        if first is None:
            first = (x.shape[1:], x.device, x.dtype, y is not None, None if maps is None else list(maps))
        else:
            if x.shape[1:] != first[0] or x.device != first[1] or x.dtype != first[2]:
                raise ValueError(f"x of {what} has samples {tuple(x.shape[1:])} {x.dtype} on {x.device}, the first "
                                 f"batch {tuple(first[0])} {first[2]} on {first[1]}: every batch must hold samples "
                                 "alike")
            if (y is not None) != first[3]:
                raise ValueError(f"{what} {'has' if y is not None else 'has no'} labels y but the first batch "
                                 f"{'had' if first[3] else 'had none'}: give labels for every batch or for none")
            if (None if maps is None else list(maps)) != first[4]:
                raise ValueError(f"attributions of {what} name other explainers than the first batch's {first[4]}")
        _validate.inputs(x, f"x of {what}")
        _validate.model_accepts(model, x, "model", f"x of {what}")  # before reading x: it may be on another device
        _validate.finite(x, f"x of {what}")
        again = set(index.tolist()) & seen if len(seen) < 10_000_000 else set()
        if again:
            raise ValueError(f"{what} repeats the global sample indices {sorted(again)[:8]}: each sample must be "
                             "evaluated once")
        seen.update(index.tolist())
        start = int(index.max()) + 1 if index.numel() else start
        yield from split(Chunk(x, y, index, maps), size)  # checked: the engine trusts its chunks, one at a time




@dataclass
class Call:
    """One ``fl.evaluate`` call, checked: what the engine runs. ``head`` is the first chunk of an iterable (read at
    the boundary to learn the data's shape), ``rest`` the chunks after it; with x one tensor both are None and the
    chunks are slices of x. ``values``: the metrics' options, checked
    (:func:`faithlab.metrics.registry.check_options`)."""

    model: Callable
    x: torch.Tensor | None
    y: torch.Tensor | None
    maps: dict[str, torch.Tensor] | None
    head: Chunk | None
    rest: Iterator[Chunk] | None
    names: list[str]
    explainers: dict[str, Callable]
    chunk: int | None
    batches: int | None  # an iterable's number of batches, where it knows it (a DataLoader; not a generator)
    finetuned: Callable | None
    finetune: Callable[[], Callable] | None
    kfold: object
    batch_size: BatchSize
    chosen: list[str]
    has: dict[str, bool]
    options: dict
    progress: bool | None = None
    rows: object = None
    checkpoint: object = None
    hints: bool = True
    values: dict = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return self.x is None

    @property
    def sample_x(self) -> torch.Tensor:
        """A tensor of the data's samples: x, or the first batch's."""
        return self.head.x if self.stream else self.x

    @property
    def labels_given(self) -> bool:
        return (self.head.y if self.stream else self.y) is not None

    @property
    def maps_given(self) -> bool:
        """Whether the maps come with the data (else the explainers map each chunk)."""
        return (self.head.maps if self.stream else self.maps) is not None

    def chunks(self) -> Iterator[Chunk]:
        if self.stream:
            yield self.head
            yield from self.rest
        else:
            yield from split(Chunk(self.x, self.y, torch.arange(self.x.shape[0], device="cpu"), self.maps),
                             self.chunk)

    def with_options(self, options: Mapping) -> Call:
        """The call with other options (a budget's Monte-Carlo counts), checked again."""
        return replace(self, options=dict(options),
                       values=registry.check_options(options, self.chosen, self.sample_x))


def check(model: Callable, x, y=None, attributions=None, *, metrics=None, explainer=None, finetuned=None,
          finetune=None, kfold=None, chunk_size=None, batch_size: BatchSize = None, progress=None, rows=None,
          checkpoint=None, hints: bool = True, options: Mapping | None = None) -> Call:
    """Every argument of ``fl.evaluate`` checked, in the order a user meets them, → a :class:`Call`; each error names
    the argument. x one tensor is checked whole here (NaN/inf included); an iterable's batches as they arrive."""
    _validate.model(model, "model")
    if not isinstance(x, torch.Tensor):
        return _check_stream(model, x, y, attributions, explainer=explainer, finetuned=finetuned, finetune=finetune,
                             kfold=kfold, chunk_size=chunk_size, batch_size=batch_size, metrics=metrics,
                             rest=dict(progress=progress, rows=rows, checkpoint=checkpoint, hints=hints,
                                       options=dict(options or {})))
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    _validate.inputs(x, "x")
    if y is not None:
        check_labels(y, x, "y")
    _validate.model_accepts(model, x, "model", "x")  # first: reading x on another device (e.g. meta) would fail
    _validate.finite(x, "x")
    _validate.trust(x, y)  # inside fl.evaluate's checked() block: not checked again below or by the metrics
    maps = None if attributions is None else check_maps(attributions, x)
    _validate.trust(*(maps or {}).values())
    explainers = _per_explainer(explainer, None if maps is None else list(maps), "explainer")
    if maps is None and not explainers:
        raise TypeError("attributions is None: pass the maps, or explainer= (a callable or {name: callable}) to map "
                        "x chunk by chunk")
    _check_models(finetuned, finetune, kfold, x.shape[0], x)
    _validate.batch_size(batch_size, "batch_size")
    chunk = None if chunk_size is None else _validate.positive_int(chunk_size, "chunk_size")
    names = list(maps) if maps is not None else list(explainers)
    return _finish(Call(model=model, x=x, y=y, maps=maps, head=None, rest=None, names=names, explainers=explainers,
                        chunk=chunk, batches=None, finetuned=finetuned, finetune=finetune, kfold=kfold,
                        batch_size=batch_size,
                        chosen=[], has={}, options=dict(options or {}), progress=progress, rows=rows,
                        checkpoint=checkpoint, hints=hints), metrics)


def _check_stream(model, data, y, attributions, *, explainer, finetuned, finetune, kfold, chunk_size, batch_size,
                  metrics, rest: dict) -> Call:
    """:func:`check` for x an iterable of batches: the first batch is read here (to learn the data's shape)."""
    if isinstance(data, (str, bytes, Mapping)) or not isinstance(data, Iterable):
        raise TypeError(f"x must be a torch.Tensor or an iterable of batches (e.g. a DataLoader), got "
                        f"{type(data).__name__}")
    if y is not None or attributions is not None:
        raise TypeError("with x an iterable of batches, y and attributions come with the batches ((x, y) or "
                        "{'x', 'y', 'attributions'}): pass y=None and attributions=None (and explainer= to map "
                        "the batches)")
    explainers = _per_explainer(explainer, None, "explainer")
    _check_models(finetuned, finetune, kfold, None, None)
    _validate.batch_size(batch_size, "batch_size")
    chunk = None if chunk_size is None else _validate.positive_int(chunk_size, "chunk_size")
    chunks = stream(data, chunk, model)
    try:
        head = next(chunks)
    except StopIteration:
        raise ValueError("x is an iterable with no batch: nothing to evaluate") from None
    _validate.trust(head.x, head.y, *(head.maps or {}).values())  # checked: not again by the checks below
    if kfold is not None:
        check_kfold(kfold, None, head.x)
    if head.maps is None and not explainers:
        raise TypeError("the batches carry no attributions: pass explainer= (a callable or {name: callable}) to "
                        "map them")
    if head.maps is not None:  # explainer= serves S_avg and ReCo/MeGe, for the batches' explainers
        explainers = _per_explainer(explainer, list(head.maps), "explainer")
    names = list(head.maps) if head.maps is not None else list(explainers)
    return _finish(Call(model=model, x=None, y=None, maps=None, head=head, rest=chunks, names=names,
                        explainers=explainers, chunk=chunk, batches=None if chunk is not None else _length(data),
                        finetuned=finetuned, finetune=finetune, kfold=kfold, batch_size=batch_size, chosen=[], has={},
                        **rest), metrics)


def _length(data) -> int | None:
    """An iterable's number of batches, where it knows it (a DataLoader over a map-style dataset; not a generator,
    nor a DataLoader over an IterableDataset, whose ``len`` raises a TypeError)."""
    try:
        return len(data)
    except TypeError:
        return None


def _check_models(finetuned, finetune, kfold, n: int | None, x: torch.Tensor | None) -> None:
    if finetuned is not None and finetune is not None:
        raise ValueError("pass finetuned= (a model) or finetune= (a recipe returning one), not both")
    if finetune is not None and not callable(finetune):
        raise TypeError(f"finetune must be a callable() -> fine-tuned model, got {type(finetune).__name__}")
    if finetuned is not None:
        _validate.model(finetuned, "finetuned")
    if kfold is not None:
        check_kfold(kfold, n, x)


def _finish(call: Call, metrics) -> Call:
    """The metrics the arguments allow (or those asked for, each checked against them) and their options."""
    call.has = {"finetuned": call.finetuned is not None or call.finetune is not None,
                "explainer": bool(call.explainers) and set(call.explainers) == set(call.names),
                "kfold": call.kfold is not None, "images": call.sample_x.ndim == 4}
    call.chosen = choose(metrics, has=call.has)
    call.values = registry.check_options(call.options, call.chosen, call.sample_x)
    if call.checkpoint is not None:
        dataset_level = [METRICS[m].label for m in call.chosen if METRICS[m].level == "dataset"]
        if dataset_level:
            raise ValueError(f"checkpoint cannot keep what the dataset-level metrics ({', '.join(dataset_level)}) "
                             "read at the end (every sample's inputs and maps): evaluate them without checkpoint=")
    return call

"""``fl.evaluate``: the registry loop. Checks the inputs, then, chunk by chunk, runs the clean pass, the shared
inputs and every chosen metric of every explainer, as the metrics declare themselves in
:mod:`faithlab.metrics.registry`; dataset-level metrics run once over all samples after the chunks. The chunks are
slices of tensors held in memory or the batches of any iterable (a ``DataLoader``), each sample keyed by its global
index, so the frame is the same either way. It knows no metric by name: a registered metric is computed like the
study's own."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from faithlab import _progress, _validate, perturb
from faithlab.evaluation import frame as frames
from faithlab.evaluation import hints as hinting
from faithlab.metrics import registry
from faithlab.metrics.catalogue import explained, takes_seeds_keyword
from faithlab.metrics.registry import METRICS, NEEDS, Context, Tally
from faithlab.perturb.autobatch import BatchSize

__all__ = ["evaluate", "available"]

_MAPS_STREAM = 0x6D617073  # "maps": the key of the seeds given to an explainer that maps the chunks itself


def available() -> list[str]:
    """The metric names :func:`evaluate` accepts, in registration order."""
    return list(METRICS)


def _maps(attributions, x: torch.Tensor, what: str = "attributions") -> dict[str, torch.Tensor]:
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


def _choose(requested, *, has: dict[str, bool]) -> list[str]:
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


def _check_kfold(kfold, n: int | None, x: torch.Tensor | None = None) -> None:
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


class _Costs:
    """The cost table: one row per (group, explainer), in the order the work first happened. A run inside a run
    (the shared logits a metric asks for first, see :meth:`shared`) is counted in its own row only."""

    def __init__(self, tally: Tally):
        self.tally, self.rows = tally, {}
        self._inner: list[list] = []  # per open run: the inputs, calls and seconds of the runs nested in it

    def run(self, group: str, who: str, fn: Callable[[], object], explained: Callable[[], int] = lambda: 0):
        before, start = self.tally.totals(), time.perf_counter()
        self._inner.append([0, 0, 0.0])
        try:
            value = fn()
        finally:
            nested = self._inner.pop()
        seconds, after = time.perf_counter() - start, self.tally.totals()
        spent = [after[0] - before[0], after[1] - before[1], seconds]
        if self._inner:  # the enclosing run leaves this work out
            self._inner[-1] = [a + b for a, b in zip(self._inner[-1], spent)]
        row = self.rows.setdefault((group, who), {"group": group, "explainer": who, "forward_inputs": 0,
                                                  "model_calls": 0, "explained_inputs": 0, "seconds": 0.0})
        row["forward_inputs"] += spent[0] - nested[0]
        row["model_calls"] += spent[1] - nested[1]
        row["explained_inputs"] += explained()
        row["seconds"] += spent[2] - nested[2]
        return value

    def shared(self, kind: tuple, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """The ``on_compute`` hook of a chunk's :func:`~faithlab.perturb.sharing` block: the clean logits count in
        the "clean" row, the fully removed inputs in "fully removed", both for every explainer ("all"), whichever
        metric asked first."""
        return self.run("clean" if kind[0] == "clean" else "fully removed", "all", compute)


@dataclass
class _Chunk:
    """Samples evaluated together: inputs, labels (None: the model's predictions), global indices ``(n,)`` int64 on
    the CPU and the maps (None: the explainers map them)."""

    x: torch.Tensor
    y: torch.Tensor | None
    index: torch.Tensor
    maps: dict[str, torch.Tensor] | None


def _check_labels(y, x: torch.Tensor, name: str) -> None:
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


def _split(chunk: _Chunk, size: int | None) -> Iterator[_Chunk]:
    n = chunk.x.shape[0]
    step = n if size is None else size
    for b0 in range(0, n, step):
        b1 = min(n, b0 + step)
        yield _Chunk(chunk.x[b0:b1], None if chunk.y is None else chunk.y[b0:b1], chunk.index[b0:b1],
                     None if chunk.maps is None else {k: v[b0:b1] for k, v in chunk.maps.items()})


def _stream(data: Iterable, size: int | None) -> Iterator[_Chunk]:
    """The chunks of an iterable of batches, each checked against the first (same sample shape, device, dtype,
    labels given for all batches or none, maps for all or none); global indices count on from 0 unless a batch
    gives its own."""
    first, seen, start = None, set(), 0
    for number, item in enumerate(data):
        x, y, index, maps = _batch(item, number)
        what = f"data's batch {number}"
        _validate.tensor(x, f"x of {what}", ndim=(2, 3, 4))
        if y is not None:
            _check_labels(y, x, f"y of {what}")
        if index is None:
            index = torch.arange(start, start + x.shape[0], device="cpu")
        else:
            _validate.tensor(index, f"index of {what}", ndim=1)
            if index.is_floating_point() or index.dtype == torch.bool or index.shape[0] != x.shape[0]:
                raise ValueError(f"index of {what} must be ({x.shape[0]},) integer global indices, got "
                                 f"{index.dtype} {tuple(index.shape)}")
            index = index.to("cpu", torch.int64)
        if maps is not None:
            maps = _maps(maps, x, f"attributions of {what}")
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
        again = set(index.tolist()) & seen if len(seen) < 10_000_000 else set()
        if again:
            raise ValueError(f"{what} repeats the global sample indices {sorted(again)[:8]}: each sample must be "
                             "evaluated once")
        seen.update(index.tolist())
        start = int(index.max()) + 1 if index.numel() else start
        yield from _split(_Chunk(x, y, index, maps), size)


class _Rows:
    """``rows=``: the frame's rows appended to ``<rows>.partial`` (CSV) as chunks finish, then the whole frame
    written to ``rows`` in one rename; after an error the partial file stays (its name says what it is)."""

    def __init__(self, path, chosen: list[str], names: list[str]):
        self.path = Path(os.fspath(path))
        if self.path.is_dir():
            raise ValueError(f"rows must be a CSV file path, got the folder {str(self.path)!r}")
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"rows: the folder {str(self.path.parent)!r} does not exist")
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.chosen, self.names, self.header = chosen, names, True
        self.partial.unlink(missing_ok=True)

    def add(self, records: list[dict]) -> None:
        if records:
            frames.tidy(records, self.chosen, self.names, []).to_csv(self.partial, mode="a", header=self.header,
                                                                     index=False)
            self.header = False

    def finish(self, frame) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        frame.to_csv(tmp, index=False)
        os.replace(tmp, self.path)
        self.partial.unlink(missing_ok=True)


def _hash_tensor(h, t: torch.Tensor) -> None:
    """Feed ``t``'s dtype, shape and bytes (on the CPU) to the hash ``h``."""
    t = t.detach().to("cpu").contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy())


def _digest(*tensors: torch.Tensor | None) -> str:
    """The sha256 of the tensors (None counts as one), in order."""
    h = hashlib.sha256()
    for t in tensors:
        if t is None:
            h.update(b"none")
        else:
            _hash_tensor(h, t)
    return h.hexdigest()


def _described(value):
    """An option's value as JSON (a tensor by its digest, an object JSON cannot hold by its type's name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        return "tensor " + _digest(value)
    if isinstance(value, (list, tuple)):
        return [_described(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _described(v) for k, v in value.items()}
    return type(value).__name__


def _module_digest(model) -> str | None:
    """The sha256 of an ``nn.Module``'s state dict (None for another callable)."""
    if not isinstance(model, torch.nn.Module):
        return None
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        _hash_tensor(h, t)
    return h.hexdigest()


def _write_json(path: Path, value) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value), encoding="utf-8")
    os.replace(tmp, path)


def _category(module: str, qualname: str) -> type[Warning]:
    """The warning class named by a checkpoint, looked up among the modules already imported (nothing is imported
    from data); UserWarning when it is not there."""
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


@contextlib.contextmanager
def _recording(on: bool):
    """With ``on``: the warnings raised inside, recorded (every one, whatever the filters) → the list yielded, and
    issued again on the way out under the caller's filters (so a checkpoint can keep a chunk's warnings)."""
    seen: list = []
    if not on:
        yield seen
        return
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield seen
            finally:
                seen.extend(caught)
    finally:
        for w in seen:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class CheckpointMismatch(ValueError):
    """A ``checkpoint=`` folder written by another call, or holding a chunk of other inputs; ``what`` says what
    differs."""

    def __init__(self, folder: Path, what: str):
        super().__init__(f"checkpoint {str(folder)!r} {what}: pass another folder, or remove it to start over")
        self.what = what


class _Checkpoint:
    """``checkpoint=``: a folder holding each finished chunk as ``chunk-<first index>-<n>.json`` (its global indices,
    a digest of its inputs, its rows, what the hints read, its share of the cost table and the warnings it raised),
    written whole (a temporary file renamed) as the chunk finishes; a chunk found there with the same indices is
    read back instead of computed. JSON only: the scores come back bitwise (Python writes the shortest repr that
    reads back the same float). ``call.json`` names the call (metrics, explainers, options, batch size, the model's
    weights, the faithlab version): a folder written by another call is refused, and so is a chunk whose inputs
    differ."""

    def __init__(self, folder, call: dict):
        self.folder = Path(os.fspath(folder))
        if self.folder.exists() and not self.folder.is_dir():
            raise ValueError(f"checkpoint must be a folder, got the file {str(self.folder)!r}")
        self.folder.mkdir(parents=True, exist_ok=True)
        call = json.loads(json.dumps(call))
        head = self.folder / "call.json"
        if head.is_file():
            stored = json.loads(head.read_text(encoding="utf-8"))
            differ = [k for k in dict.fromkeys([*call, *stored]) if stored.get(k) != call.get(k)]
            if "options" in differ and isinstance(stored.get("options"), dict):
                mine, theirs = call["options"], stored["options"]
                differ[differ.index("options")] = "options " + ", ".join(
                    k for k in dict.fromkeys([*mine, *theirs]) if mine.get(k) != theirs.get(k))
            if differ:
                raise CheckpointMismatch(self.folder, f"holds the chunks of another call (other {'; '.join(differ)})")
        else:
            _write_json(head, call)
        for tmp in self.folder.glob("*.tmp"):  # a write cut short
            tmp.unlink(missing_ok=True)
        self.done = {}
        for path in sorted(self.folder.glob("chunk-*.json")):
            item = json.loads(path.read_text(encoding="utf-8"))
            self.done[tuple(item["index"])] = item

    @staticmethod
    def inputs(c: _Chunk) -> str:
        return _digest(c.x, c.y, *([] if c.maps is None else [c.maps[k] for k in sorted(c.maps)]))

    def find(self, c: _Chunk, digest: str) -> dict | None:
        item = self.done.get(tuple(c.index.tolist()))
        if item is not None and item["inputs"] != digest:
            raise CheckpointMismatch(self.folder, f"holds the samples {int(c.index[0])}…{int(c.index[-1])} computed "
                                                  "from other inputs (images, labels or maps)")
        return item

    def save(self, c: _Chunk, digest: str, done: list[dict], correct, constant: dict, cost: list[dict],
             seen: list) -> None:
        index = c.index.tolist()
        item = {"index": index, "inputs": digest,
                "records": [[r["explainer"], r["sample"], r["metric"], r["score"], r["mc_se"]] for r in done],
                "correct": None if correct is None else correct.tolist(),
                "constant": {who: v.tolist() for who, v in constant.items()}, "cost": cost,
                "warnings": [{"module": w.category.__module__, "category": w.category.__qualname__,
                              "message": str(w.message), "filename": w.filename, "lineno": w.lineno} for w in seen]}
        _write_json(self.folder / f"chunk-{index[0]}-{len(index)}.json", item)


def _cost_rows(rows: dict) -> dict:
    return {key: dict(row) for key, row in rows.items()}


def _cost_delta(before: dict, after: dict) -> list[dict]:
    """The cost rows' growth over one chunk (new rows whole), in the rows' order."""
    out = []
    for key, row in after.items():
        prev = before.get(key)
        if prev is None:
            out.append(dict(row))
        elif any(row[k] != prev[k] for k in _COUNTED):
            out.append({"group": row["group"], "explainer": row["explainer"],
                        **{k: row[k] - prev[k] for k in _COUNTED}})
    return out


_COUNTED = ("forward_inputs", "model_calls", "explained_inputs", "seconds")
_RECORD = ("explainer", "sample", "metric", "score", "mc_se")
"""The fields of a checkpoint's records, named in its ``call.json``: a folder written with other fields (before
``mc_se``) is refused as another call's, never read back without its standard errors."""


def evaluate(model: Callable, x, y: torch.Tensor | None = None, attributions=None, *,
             metrics: Sequence[str] | None = None, explainer=None, finetuned: Callable | None = None,
             finetune: Callable[[], Callable] | None = None, kfold=None, chunk_size: int | None = None,
             batch_size: BatchSize = None, progress: bool | None = None, rows=None, checkpoint=None, hints: bool = True,
             budget: float | str | None = None, **options):
    """Every registered faithfulness metric for one or several explainers of one model → tidy pandas frame.

    model: eval-mode classifier returning logits. x: ``(B, C, H, W)`` images (the patch and Few-class metrics need
    images), ``(B, T, C)`` series or tokens — or any iterable of batches (a ``torch.utils.data.DataLoader``, a list),
    each a tensor ``x``, a pair ``(x, y)`` or a mapping with ``"x"`` and optionally ``"y"``, ``"index"`` (the
    batch's global sample indices) and ``"attributions"`` (its maps): the data then streams through the metrics
    batch by batch (memory bounded by a batch, except for dataset-level metrics, which keep every sample's inputs and
    maps on the CPU until the end), samples numbered 0, 1, … across batches unless a batch gives its ``index``.
    y: ``(B,)`` int64 labels (read by Fid± and the accuracy AUC, where the papers read the true labels); None → the
    model's prediction ŷ (those metrics then read agreement with ŷ). With an iterable, y comes with the batches.
    attributions: maps of x (any layout ``perturb.unit_scores`` accepts), one tensor or ``{explainer name: maps}``;
    they should explain the model's prediction ŷ, the class every other metric reads (``target``). None → each chunk
    is mapped by ``explainer`` (then required: ``{name: callable}`` or one callable, named "explainer"), called as
    ``explainer(model, inputs, ŷ)`` or, if it has a ``seeds`` parameter, with ``seeds=`` one int64 seed per sample
    keyed by ``seed`` and the sample's global index (a stochastic explainer's maps then do not depend on the split
    either). metrics: names from :func:`available` (None: every metric the arguments allow).

    The metrics and their options are those of :mod:`faithlab.metrics.registry` (the study's own are declared in
    :mod:`faithlab.metrics.catalogue`; :func:`faithlab.evaluation.describe` lists each metric's paper, direction,
    needs and options; :func:`faithlab.evaluation.estimate` counts the model inputs a call will take):

    * Fid± (α = 1), RFid± (α = ``alpha``, ``n_samples`` Monte-Carlo masks), FFid± (on ``finetuned``, or the model
      ``finetune()`` returns, with α and the cap ``beta``): F-Fidelity eqs. 1–6, accuracy form, mean over the
      explanation sizes ``sparsity`` (Fid+ removes the top s, Fid− the bottom s). Defaults α 0.5, β 0.1, N 50 (the
      paper's code). The paper explains the fine-tuned model for FFid; here the given maps are used for all three.
    * Few-class Fid: MIF/LIF areas over ``fewclass_fractions`` (default 0, 0.01, …, 1) with ``perturbed`` images
      (None: ``select_perturbation`` once for all maps, on pixel values when ``normalisation`` gives the
      ``(mean, std)`` x was normalised with, e.g. a dataset's ``info['mean']``, ``info['std']``; given: indexed by
      the global sample index).
    * SaCo with ``saco_k`` groups; AUC, AOPC, LOdds (one MoRF curve) and Comprehensiveness at 0, 10, …, 100 %.
    * μF (``n_subsets`` subsets of 15 %), S_avg (``n_neighbours`` neighbours within ``radius``; needs
      ``explainer``), ReCo and MeGe (need ``kfold``, an object with ``models`` (k eval-mode models) and ``folds``
      ``(N,)`` — e.g. ``fl.train.cross_train(...)`` on the data x comes from — and ``explainer``).
    * ΣLeRF, ΣMoRF, ΣLeRF − ΣMoRF: TRACE's patch deletion curves on an ``edge`` × ``edge`` grid (None: 7, 4 or 2,
      the first that divides the side), trajectory from the map's patch means.

    explainer: ``explainer(model, inputs, target) → maps`` (one callable, or one per explainer name), used by
    S_avg on neighbours and by ReCo/MeGe on the fold models. If it has a ``seeds`` parameter with a default (e.g.
    ``lambda m, i, t, seeds=None: explain(m, i, t, method="smoothgrad", generator=0, sample_seeds=seeds)``), S_avg
    passes ``seeds=`` ``(rows,)`` int64, one per input, equal for a sample and its neighbours (common random numbers:
    a stochastic explainer's S_avg then measures the map's change, not its Monte-Carlo noise); without one it
    cannot share its noise and is called as above (ReCo/MeGe never pass seeds). reference: None keeps each metric's
    own removal value (zero for F-Fidelity, μF and TRACE, the per-channel mean for SaCo and the cumulative metrics);
    any ``perturb.Reference`` replaces it for all of them (Few-class Fid keeps its perturbed images). seed: every
    random draw (the same for every explainer). chunk_size: samples per chunk (None: all at once, or each batch of
    an iterable; the Monte-Carlo masks of a chunk are held in memory); every random draw is keyed to the sample's
    global index, so no score depends on the chunks, the batches or how the data is split. batch_size: inputs per
    forward call: None (the default: a size fixed by the model's activations, the same on every run,
    :func:`faithlab.perturb.autobatch.default_batch_size`), an int, or ``"auto"`` (found on the run's own calls;
    not bitwise repeatable). progress: a tqdm bar over the chunks (None: on unless the environment sets
    ``FAITHLAB_PROGRESS=0``, as the study runner does). rows: a CSV path; the rows are appended to
    ``<rows>.partial`` as each chunk finishes and the whole frame is written to ``rows`` at the end (the partial
    file is removed then; after an error it stays, holding the rows computed). checkpoint: a folder (created if
    needed) where each chunk is kept as it finishes (its rows, what the hints and the cost table read, its
    warnings; JSON files), so that a call cut short (Ctrl-C, a crash) and repeated with the same arguments and
    ``chunk_size`` reads the finished chunks back instead of computing them and returns the same frame, scores
    bitwise equal (the cost table's seconds add the first call's); a folder written by a call with other metrics,
    explainers, options, batch size or model weights is refused (``CheckpointMismatch``, a ValueError), and so is a
    chunk whose inputs differ. Not with the dataset-level metrics (ReCo, MeGe), which read every sample at the end.
    The folder is left in place: remove it once the result is kept (``faithlab evaluate --resume`` does).
    budget: seconds, or text like ``"10m"``: the Monte-Carlo counts (``n_samples``, ``n_subsets``,
    ``n_neighbours``; those not passed) are chosen so that the estimated call fits, from timings of the model and
    the explainers on x's first chunk (:mod:`faithlab.evaluation.budget`; x must be one tensor); the choice is in
    ``attrs["budget"]`` and each score's precision in ``mc_se``. A budget that cannot be met is a ValueError naming
    the samples that would fit. None: the papers' counts.

    Returns a DataFrame with columns ``explainer``, ``sample`` (nullable int, the global index; missing for
    dataset-level metrics), ``metric``, ``label``, ``paper``, ``level``, ``score``, ``higher_is_better``,
    ``direction`` and ``mc_se``: the score's Monte-Carlo standard error where the metric is a Monte-Carlo estimate
    (RFid±, FFid±: sd/√N per size, combined over the sizes; μF: the jackknife over its subsets; S_avg: sd/√N over
    its neighbours), read from the draws the score is computed from, NaN for a deterministic metric. Its
    ``attrs["cost"]`` (see :func:`cost`) and ``attrs["forward_inputs"]`` count the model's work.
    A model returning NaN/inf raises a ValueError naming the samples, and so does an explainer returning NaN/inf maps
    (S_avg, ReCo, MeGe); constant maps are scored as each metric documents. A metric constant (or NaN) across the
    samples for a known reason (no correct prediction for an accuracy form, constant maps, a perturbation that never
    moves the model, ...) is explained by a :class:`faithlab.evaluation.hints.DegenerateResultWarning` (hints=False:
    no warning, as for a model randomised on purpose); the messages are in ``attrs["hints"]`` either way
    (:mod:`faithlab.evaluation.hints`).
    """
    from tqdm.auto import tqdm

    _validate.model(model, "model")
    stream = not isinstance(x, torch.Tensor)
    if stream:
        if isinstance(x, (str, bytes, Mapping)) or not isinstance(x, Iterable):
            raise TypeError(f"x must be a torch.Tensor or an iterable of batches (e.g. a DataLoader), got "
                            f"{type(x).__name__}")
        if y is not None or attributions is not None:
            raise TypeError("with x an iterable of batches, y and attributions come with the batches ((x, y) or "
                            "{'x', 'y', 'attributions'}): pass y=None and attributions=None (and explainer= to map "
                            "the batches)")
    else:
        _validate.tensor(x, "x", ndim=(2, 3, 4))
        if y is not None:
            _check_labels(y, x, "y")
        _validate.model_accepts(model, x, "model", "x")
    maps = None if (attributions is None or stream) else _maps(attributions, x)
    explainers = _per_explainer(explainer, None if maps is None else list(maps), "explainer")
    if maps is None and not stream and not explainers:
        raise TypeError("attributions is None: pass the maps, or explainer= (a callable or {name: callable}) to map "
                        "x chunk by chunk")
    if finetuned is not None and finetune is not None:
        raise ValueError("pass finetuned= (a model) or finetune= (a recipe returning one), not both")
    if finetune is not None and not callable(finetune):
        raise TypeError(f"finetune must be a callable() -> fine-tuned model, got {type(finetune).__name__}")
    if finetuned is not None:
        _validate.model(finetuned, "finetuned")
    if kfold is not None:
        _check_kfold(kfold, None if stream else x.shape[0], None if stream else x)
    _validate.batch_size(batch_size, "batch_size")
    chunk = None if chunk_size is None else _validate.positive_int(chunk_size, "chunk_size")
    if stream:
        chunks = _stream(x, chunk)
        try:
            head = next(chunks)
        except StopIteration:
            raise ValueError("x is an iterable with no batch: nothing to evaluate") from None
        _validate.model_accepts(model, head.x, "model", "x")
        if kfold is not None:
            _check_kfold(kfold, None, head.x)
        if head.maps is None and not explainers:
            raise TypeError("the batches carry no attributions: pass explainer= (a callable or {name: callable}) to "
                            "map them")
        if head.maps is not None:  # explainer= serves S_avg and ReCo/MeGe, for the batches' explainers
            explainers = _per_explainer(explainer, list(head.maps), "explainer")
        names = list(head.maps) if head.maps is not None else list(explainers)

        def all_chunks():
            yield head
            yield from chunks
        sample_x = head.x
    else:
        names = list(maps) if maps is not None else list(explainers)
        sample_x = x

        def all_chunks():
            yield from _split(_Chunk(x, y, torch.arange(x.shape[0], device="cpu"), maps), chunk)
    has = {"finetuned": finetuned is not None or finetune is not None,
           "explainer": bool(explainers) and set(explainers) == set(names), "kfold": kfold is not None,
           "images": sample_x.ndim == 4}
    chosen = _choose(metrics, has=has)
    allocation = None
    if budget is not None:
        if stream:
            raise TypeError("budget needs x as one tensor (its number of samples sets the cost), not an iterable of "
                            "batches")
        from faithlab.evaluation import budget as budgeting

        registry.check_options(options, chosen, sample_x)  # a bad option is named before any timing
        options, allocation = budgeting.for_evaluate(
            model, x, budget, options, explainers=explainers, names=names, metrics=chosen,
            finetuned=has["finetuned"], kfold=0 if kfold is None else len(kfold.models), chunk_size=chunk,
            batch_size=batch_size, given=list(options))
    values = registry.check_options(options, chosen, sample_x)
    saved = None
    if checkpoint is not None:
        dataset_level = [METRICS[m].label for m in chosen if METRICS[m].level == "dataset"]
        if dataset_level:
            raise ValueError(f"checkpoint cannot keep what the dataset-level metrics ({', '.join(dataset_level)}) "
                             "read at the end (every sample's inputs and maps): evaluate them without checkpoint=")
        from faithlab import __version__

        saved = _Checkpoint(checkpoint, {
            "faithlab": __version__, "records": list(_RECORD), "metrics": chosen, "explainers": names,
            "labels": "given" if (
                stream and head.y is not None) or (not stream and y is not None) else "predictions",
            "maps": "given" if maps is not None or (stream and head.maps is not None) else "explainer",
            "options": {k: _described(v) for k, v in values.items()}, "batch_size": _described(batch_size),
            "model": _module_digest(model), "finetuned": _module_digest(finetuned)})
    map_with = {} if maps is not None or (stream and head.maps is not None) else explainers

    per_sample = [m for m in chosen if METRICS[m].level == "sample"]
    per_dataset = [m for m in chosen if METRICS[m].level == "dataset"]
    groups = list(dict.fromkeys(METRICS[m].group for m in per_sample))
    dataset_groups = list(dict.fromkeys(METRICS[m].group for m in per_dataset))
    shared_inputs = list(dict.fromkeys(s for m in per_sample for s in METRICS[m].uses))
    dataset_inputs = list(dict.fromkeys(s for m in per_dataset for s in METRICS[m].uses))
    shown = _progress.enabled(progress)
    tally = Tally()
    counted = tally.counted(model)
    costs = _Costs(tally)
    tuned = None
    records: list[dict] = []
    writer = None if rows is None else _Rows(rows, chosen, names)
    correct: list[torch.Tensor] = []
    constant: dict[str, list[torch.Tensor]] = {}
    kept: dict[str, list] = {"x": [], "y": [], "index": [], **{f"maps:{w}": [] for w in names}}
    root = int(perturb.sample_seeds(values.get("seed", 0), [0], 1).seeds[0]) if map_with else 0

    def context(xc, yc, target, index, *, who="all", a=None, model_=None, inputs=None) -> Context:
        return Context(model=model_ if model_ is not None else counted, x=xc, labels=yc, target=target,
                       attributions=a, name=who, explainer=explainers.get(who), sample_index=index, options=values,
                       batch_size=batch_size, kfold=kfold, inputs=inputs or {}, user_model=model, tally=tally,
                       progress=shown)

    def emit(out: list, who: str, metric: str, estimate: tuple, index: torch.Tensor | None) -> None:
        scores, se = estimate  # the score and its Monte-Carlo standard error, from one computation (Metric.estimate)
        if index is None:
            out.append({"explainer": who, "sample": None, "metric": metric, "score": float(scores),
                        "mc_se": math.nan if se is None else float(se)})
            return
        values_ = scores.detach().double().cpu().tolist()
        if se is None:
            errors = [math.nan] * len(values_)
        else:
            if not isinstance(se, torch.Tensor) or tuple(se.shape) != tuple(scores.shape):
                raise ValueError(f"metric {metric!r} declares an mc_se of shape {tuple(getattr(se, 'shape', ()))} "
                                 f"for scores of shape {tuple(scores.shape)}: one standard error per score")
            errors = se.detach().double().cpu().tolist()
        out.extend({"explainer": who, "sample": i, "metric": metric, "score": v, "mc_se": e}
                   for i, v, e in zip(index.tolist(), values_, errors))

    def map_chunk(who: str, xc: torch.Tensor, target: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        fn = map_with[who]
        if takes_seeds_keyword(fn):
            seeds = torch.tensor([perturb.keyed_seed(root, i, _MAPS_STREAM) for i in index.tolist()],
                                 dtype=torch.int64, device=xc.device)
            out = fn(model, xc, target, seeds=seeds)
        else:
            out = fn(model, xc, target)
        a = explained(who, out, xc, "the chunk of samples " + f"{int(index[0])}…{int(index[-1])}")
        _validate.same_device(xc, a, "x", f"explainer {who!r}'s maps")
        return a

    per_chunk = 1 + len(shared_inputs) + len(names) * (len(groups) + bool(map_with))
    if not stream:
        total = -(-x.shape[0] // (chunk or x.shape[0])) * per_chunk
    else:  # a DataLoader knows its number of batches; a generator does not
        total = len(x) * per_chunk if chunk is None and hasattr(x, "__len__") else None
    if total is not None:
        total += len(names) * len(dataset_groups)
    bar = tqdm(total=total, desc="evaluate", disable=not shown, leave=False)
    try:
        for c in all_chunks():
            digest = None if saved is None else saved.inputs(c)
            item = None if saved is None else saved.find(c, digest)
            if item is not None:  # finished by an earlier call: read back
                bar.set_postfix_str("from the checkpoint")
                done = [{"explainer": who, "sample": i, "metric": m, "score": v, "mc_se": e}
                        for who, i, m, v, e in item["records"]]
                if item["correct"] is not None:
                    correct.append(torch.tensor(item["correct"], dtype=torch.bool, device="cpu"))
                for who, flags in item["constant"].items():
                    constant.setdefault(who, []).append(torch.tensor(flags, dtype=torch.bool, device="cpu"))
                for part in item["cost"]:
                    row = costs.rows.setdefault((part["group"], part["explainer"]), {
                        "group": part["group"], "explainer": part["explainer"], "forward_inputs": 0, "model_calls": 0,
                        "explained_inputs": 0, "seconds": 0.0})
                    for k in _COUNTED:
                        row[k] += part[k]
                for w in item["warnings"]:
                    warnings.warn_explicit(w["message"], _category(w["module"], w["category"]), w["filename"],
                                           w["lineno"])
                records.extend(done)
                if writer is not None:
                    writer.add(done)
                bar.update(per_chunk)
                continue
            before = None if saved is None else _cost_rows(costs.rows)
            # sharing: the chunk's clean and fully removed inputs go through the model once
            with _recording(saved is not None) as seen, perturb.sharing(costs.shared):
                xc, index = c.x, c.index

                def clean():  # the clean logits, shared with every metric's clean point and prediction (sharing)
                    zeros = torch.zeros(xc.shape[0], dtype=torch.int64, device=xc.device)
                    logits = perturb.Removal(counted, xc, output=lambda z, _: z, batch_size=batch_size,
                                             target=zeros).clean()
                    if c.y is not None:
                        bad = (c.y < 0) | (c.y >= logits.shape[1])  # the labels are read as classes of these logits
                        if bool(bad.any()):
                            i = int(bad.nonzero()[0, 0])
                            raise ValueError(f"y holds class {int(c.y[i])} (sample {int(index[i])}) but the model "
                                             f"returns {logits.shape[1]} logits: y must hold class indices in [0, "
                                             f"{logits.shape[1] - 1}]")
                    return logits.argmax(dim=1)

                bar.set_postfix_str("clean pass")  # the bar names the step under way
                target = costs.run("clean", "all", clean)
                yc = target if c.y is None else c.y
                bar.update()
                if c.maps is not None:
                    chunk_maps = c.maps
                else:
                    chunk_maps = {}
                    for who in names:
                        bar.set_postfix_str(f"{who}: maps")
                        chunk_maps[who] = costs.run("maps", who, lambda: map_chunk(who, xc, target, index),
                                                    lambda: xc.shape[0])
                        bar.update()
                inputs = {}
                for name in shared_inputs:
                    bar.set_postfix_str(name)
                    inputs[name] = costs.run(name, "all", lambda: registry.SHARED[name].compute(
                        context(xc, yc, target, index)))
                    bar.update()
                if any(METRICS[m].model == "finetuned" for m in per_sample) and tuned is None:
                    tuned = tally.counted(finetuned if finetuned is not None else finetune())
                    _validate.model(tuned.model, "the model finetune() returned" if finetuned is None else "finetuned")
                if c.y is not None:  # for the hints: accuracy forms on a model that predicts no label, ...
                    correct.append((target == c.y).cpu())
                for who in names:  # ... and maps constant over the units
                    s_ = perturb.unit_scores(chunk_maps[who], perturb.default_units(xc), reduce="sum")
                    constant.setdefault(who, []).append((s_.amax(dim=1) == s_.amin(dim=1)).cpu())
                done: list[dict] = []
                for who in names:
                    a = chunk_maps[who]
                    for group in groups:
                        bar.set_postfix_str(f"{who}: {group}")
                        want = [m for m in per_sample if METRICS[m].group == group]
                        use = tuned if METRICS[want[0]].model == "finetuned" else counted
                        ctx = context(xc, yc, target, index, who=who, a=a, model_=use, inputs=inputs)

                        def run_group():
                            for m in want:
                                emit(done, who, m, METRICS[m].estimate(ctx), index)

                        costs.run(group, who, run_group, lambda: ctx.explained)
                        bar.update()
                records.extend(done)
                if writer is not None:
                    writer.add(done)
                if per_dataset:  # what the dataset-level metrics read after the chunks, unless x, y and maps hold it
                    if stream:
                        kept["x"].append(xc.cpu())
                        kept["index"].append(index)
                    if stream or c.y is None:
                        kept["y"].append(yc.cpu())
                    for who in names:
                        if stream or maps is None:
                            kept[f"maps:{who}"].append(chunk_maps[who].cpu())
            if saved is not None:  # kept once whole, its warnings included
                saved.save(c, digest, done, correct[-1] if c.y is not None else None,
                           {who: constant[who][-1] for who in names}, _cost_delta(before, costs.rows), seen)
        if per_dataset:
            device = sample_x.device
            if stream:
                order = torch.cat(kept["index"]).argsort()
                xd = torch.cat(kept["x"])[order].to(device)
                yd = torch.cat(kept["y"])[order].to(device)
                index = torch.cat(kept["index"])[order]
                if kfold is not None:
                    _check_kfold(kfold, xd.shape[0])
                    if not torch.equal(index, torch.arange(xd.shape[0], device="cpu")):
                        raise ValueError("kfold's folds are read by global sample index: the batches must number "
                                         f"their samples 0 … {xd.shape[0] - 1}")
                dmaps = {who: torch.cat(kept[f"maps:{who}"])[order].to(device) for who in names}
            else:
                xd, index = x, torch.arange(x.shape[0], device="cpu")
                yd = y if y is not None else torch.cat(kept["y"]).to(device)
                dmaps = maps if maps is not None else {who: torch.cat(kept[f"maps:{who}"]).to(device)
                                                       for who in names}
            inputs = {}
            for name in dataset_inputs:
                inputs[name] = costs.run(name, "all", lambda: registry.SHARED[name].compute(
                    context(xd, yd, None, index)))
            for who in names:
                for group in dataset_groups:
                    bar.set_postfix_str(f"{who}: {group}")
                    want = [m for m in per_dataset if METRICS[m].group == group]
                    ctx = context(xd, yd, None, index, who=who, a=dmaps[who], inputs=inputs)
                    done = []

                    def run_dataset():
                        for m in want:
                            emit(done, who, m, METRICS[m].estimate(ctx), None)

                    costs.run(group, who, run_dataset, lambda: ctx.explained)
                    records.extend(done)
                    if writer is not None:
                        writer.add(done)
                    bar.update()
    finally:
        bar.close()
    frame = frames.tidy(records, chosen, names, list(costs.rows.values()))
    frame.attrs["hints"] = (hinting.warn_degenerate if hints else hinting.degenerate)(
        frame, correct=torch.cat(correct) if correct else None,
        constant={who: torch.cat(parts) for who, parts in constant.items()})
    if allocation is not None:
        frame.attrs["budget"] = allocation
    if writer is not None:
        writer.finish(frame)
    return frame


def _signature() -> None:
    """``help(evaluate)`` shows every registered option with its default (kept in step with the registry)."""
    params = [p for p in _BASE.parameters.values() if p.kind != p.VAR_KEYWORD]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
               for o in registry.OPTIONS.values()]
    evaluate.__signature__ = _BASE.replace(parameters=params)


_BASE = inspect.signature(evaluate)
registry._LISTENERS.append(_signature)
_signature()

"""``fl.evaluate``'s engine: a checked :class:`~faithlab.evaluation.call.Call` run in phases. Per chunk: the clean
pass (the predictions every metric reads), the maps (given, or made by the explainers), the shared inputs, then each
explainer's metric groups; after the chunks, the dataset-level metrics over every sample; at the end, the tidy frame,
the hints and the rows file. It knows no metric by name: a registered metric (:mod:`faithlab.metrics.registry`) is
computed like the study's own. Nothing is checked again here: the chunks' tensors (slices of inputs checked at the
boundary, and what the engine builds from them) are held in a :func:`faithlab._validate.checked` block, so a metric
called by the engine skips the checks of data already checked."""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from faithlab import _progress, _validate, perturb
from faithlab.evaluation import checkpoint as checkpoints
from faithlab.evaluation import frame as frames
from faithlab.evaluation import hints as hinting
from faithlab.evaluation.call import Call, Chunk, check_kfold
from faithlab.metrics import registry
from faithlab.metrics.registry import explained, takes_seeds_keyword
from faithlab.metrics.registry import METRICS, Context, Tally

_MAPS_STREAM = 0x6D617073  # "maps": the key of the seeds given to an explainer that maps the chunks itself


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
        row = self.row(group, who)
        row["forward_inputs"] += spent[0] - nested[0]
        row["model_calls"] += spent[1] - nested[1]
        row["explained_inputs"] += explained()
        row["seconds"] += spent[2] - nested[2]
        return value

    def row(self, group: str, who: str) -> dict:
        return self.rows.setdefault((group, who), {"group": group, "explainer": who, "forward_inputs": 0,
                                                   "model_calls": 0, "explained_inputs": 0, "seconds": 0.0})

    def shared(self, kind: tuple, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
        """The ``on_compute`` hook of a chunk's :func:`~faithlab.perturb.sharing` block: the clean logits count in
        the "clean" row, the fully removed inputs in "fully removed", both for every explainer ("all"), whichever
        metric asked first."""
        return self.run("clean" if kind[0] == "clean" else "fully removed", "all", compute)


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


def emit(out: list, who: str, metric: str, estimate: tuple, index: torch.Tensor | None) -> None:
    """A metric's scores as rows of the frame: one per sample (``index``: the global indices) or one (None: a
    dataset-level metric); ``estimate`` is the score and its Monte-Carlo standard error (``Metric.estimate``)."""
    scores, se = estimate
    if index is None:
        out.append({"explainer": who, "sample": None, "metric": metric, "score": float(scores),
                    "mc_se": math.nan if se is None else float(se)})
        return
    values = scores.detach().double().cpu().tolist()
    if se is None:
        errors = [math.nan] * len(values)
    else:
        if not isinstance(se, torch.Tensor) or tuple(se.shape) != tuple(scores.shape):
            raise ValueError(f"metric {metric!r} declares an mc_se of shape {tuple(getattr(se, 'shape', ()))} "
                             f"for scores of shape {tuple(scores.shape)}: one standard error per score")
        errors = se.detach().double().cpu().tolist()
    out.extend({"explainer": who, "sample": i, "metric": metric, "score": v, "mc_se": e}
               for i, v, e in zip(index.tolist(), values, errors))


class Engine:
    """Runs one checked call: ``Engine(call).run()`` → the tidy frame (see ``fl.evaluate``)."""

    def __init__(self, call: Call):
        self.call = c = call
        self.per_sample = [m for m in c.chosen if METRICS[m].level == "sample"]
        self.per_dataset = [m for m in c.chosen if METRICS[m].level == "dataset"]
        self.groups = list(dict.fromkeys(METRICS[m].group for m in self.per_sample))
        self.dataset_groups = list(dict.fromkeys(METRICS[m].group for m in self.per_dataset))
        self.shared_inputs = list(dict.fromkeys(s for m in self.per_sample for s in METRICS[m].uses.values()))
        self.dataset_inputs = list(dict.fromkeys(s for m in self.per_dataset for s in METRICS[m].uses.values()))
        self.map_with = {} if c.maps_given else c.explainers
        self.shown = _progress.enabled(c.progress)
        self.tally = Tally()
        self.counted = self.tally.counted(c.model)
        self.costs = _Costs(self.tally)
        self.tuned = None
        self.records: list[dict] = []
        self.correct: list[torch.Tensor] = []
        self.constant: dict[str, list[torch.Tensor]] = {}
        self.kept: dict[str, list] = {"x": [], "y": [], "index": [], **{f"maps:{w}": [] for w in c.names}}
        self.root = int(perturb.sample_seeds(c.values.get("seed", 0), [0], 1).seeds[0]) if self.map_with else 0
        self.saved = None if c.checkpoint is None else checkpoints.Checkpoint(c.checkpoint, self._fingerprint())
        self.writer = None if c.rows is None else _Rows(c.rows, c.chosen, c.names)
        self.bar = None

    def _fingerprint(self) -> dict:
        """What a checkpoint folder's ``call.json`` holds: a folder written by another call is refused."""
        from faithlab import __version__

        c = self.call
        return {"faithlab": __version__, "records": list(checkpoints.RECORD), "metrics": c.chosen,
                "explainers": c.names, "labels": "given" if c.labels_given else "predictions",
                "maps": "given" if c.maps_given else "explainer",
                "options": {**{k: checkpoints.described(v) for k, v in c.values.items()},  # scoped ones too
                            **{f"{g}_{k}": checkpoints.described(v) for (g, k), v in c.values.scoped.items()}},
                "batch_size": checkpoints.described(c.batch_size), "model": checkpoints.module_digest(c.model),
                "finetuned": checkpoints.module_digest(c.finetuned)}

    def run(self):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self._steps(), desc="evaluate", disable=not self.shown, leave=False)
        try:
            for chunk in self.call.chunks():
                # the chunk's tensors were checked at the boundary (x whole, or its batch as it came); what the
                # engine builds from them is trusted inside this block and let go with it, one chunk at a time
                with _validate.checked(chunk.x, chunk.y, *(chunk.maps or {}).values()):
                    chunk.digest = None if self.saved is None else self.saved.inputs(chunk)
                    if not self._restore(chunk):
                        self._chunk(chunk)
            if self.per_dataset:
                self._dataset()
        finally:
            self.bar.close()
        frame = self._frame()
        if self.writer is not None:
            self.writer.finish(frame)
        return frame

    def _per_chunk(self) -> int:
        return 1 + len(self.shared_inputs) + len(self.call.names) * (len(self.groups) + bool(self.map_with))

    def _steps(self) -> int | None:
        """The progress bar's total: steps per chunk times the chunks (None: a generator, whose length is unknown)."""
        c = self.call
        if not c.stream:
            total = -(-c.x.shape[0] // (c.chunk or c.x.shape[0])) * self._per_chunk()
        elif c.chunk is None and c.batches is not None:
            total = c.batches * self._per_chunk()
        else:
            return None
        return total + len(c.names) * len(self.dataset_groups)

    def context(self, xc, yc, target, index, *, who="all", a=None, model=None, inputs=None) -> Context:
        c = self.call
        return Context(model=model if model is not None else self.counted, x=xc, labels=yc, target=target,
                       attributions=a, name=who, explainer=c.explainers.get(who), sample_index=index, options=c.values,
                       batch_size=c.batch_size, kfold=c.kfold, inputs=inputs or {}, user_model=c.model,
                       tally=self.tally, progress=self.shown)

    def _add(self, done: list[dict]) -> None:
        self.records.extend(done)
        if self.writer is not None:
            self.writer.add(done)

    def _restore(self, chunk: Chunk) -> bool:
        """A chunk finished by an earlier call with the same checkpoint folder: read back (True), or not there."""
        if self.saved is None:
            return False
        item = self.saved.find(chunk, chunk.digest)
        if item is None:
            return False
        self.bar.set_postfix_str("from the checkpoint")
        if item["correct"] is not None:
            self.correct.append(torch.tensor(item["correct"], dtype=torch.bool, device="cpu"))
        for who, flags in item["constant"].items():
            self.constant.setdefault(who, []).append(torch.tensor(flags, dtype=torch.bool, device="cpu"))
        for part in item["cost"]:
            row = self.costs.row(part["group"], part["explainer"])
            for k in checkpoints.COUNTED:
                row[k] += part[k]
        for w in item["warnings"]:
            warnings.warn_explicit(w["message"], checkpoints.category(w["module"], w["category"]), w["filename"],
                                   w["lineno"])
        self._add([{"explainer": who, "sample": i, "metric": m, "score": v, "mc_se": e}
                   for who, i, m, v, e in item["records"]])
        self.bar.update(self._per_chunk())
        return True

    def _chunk(self, chunk: Chunk) -> None:
        """One chunk: clean pass, maps, shared inputs, every explainer's metric groups; kept whole in the checkpoint."""
        before = None if self.saved is None else checkpoints.cost_rows(self.costs.rows)
        # sharing: the chunk's clean and fully removed inputs go through the model once
        with checkpoints.recording(self.saved is not None) as seen, perturb.sharing(self.costs.shared):
            target = self._clean(chunk)
            yc = target if chunk.y is None else chunk.y
            maps = chunk.maps if chunk.maps is not None else self._map(chunk, target)
            inputs = self._shared(chunk, yc, target)
            self._note_hints(chunk, target, maps)
            done: list[dict] = []
            for who in self.call.names:
                for group in self.groups:
                    self._group(done, who, group, chunk, yc, target, maps[who], inputs)
            self._add(done)
            self._keep(chunk, yc, maps)
        if self.saved is not None:  # kept once whole, its warnings included
            names = self.call.names
            self.saved.save(chunk, chunk.digest, done, self.correct[-1] if chunk.y is not None else None,
                            {who: self.constant[who][-1] for who in names},
                            checkpoints.cost_delta(before, self.costs.rows), seen)

    def _clean(self, chunk: Chunk) -> torch.Tensor:
        """The clean pass: the predictions every metric reads as its target (the logits shared through
        :func:`~faithlab.perturb.sharing` with every metric's clean point); labels out of the logits' range raise."""
        xc, index = chunk.x, chunk.index

        def clean():
            zeros = torch.zeros(xc.shape[0], dtype=torch.int64, device=xc.device)
            logits = perturb.Removal(self.counted, xc, output=lambda z, _: z, batch_size=self.call.batch_size,
                                     target=zeros).clean()
            if chunk.y is not None:
                bad = (chunk.y < 0) | (chunk.y >= logits.shape[1])  # the labels are read as classes of these logits
                if bool(bad.any()):
                    i = int(bad.nonzero()[0, 0])
                    raise ValueError(f"y holds class {int(chunk.y[i])} (sample {int(index[i])}) but the model "
                                     f"returns {logits.shape[1]} logits: y must hold class indices in [0, "
                                     f"{logits.shape[1] - 1}]")
            return logits.argmax(dim=1)

        self.bar.set_postfix_str("clean pass")  # the bar names the step under way
        target = self.costs.run("clean", "all", clean)
        _validate.trust(target)
        self.bar.update()
        return target

    def _map(self, chunk: Chunk, target: torch.Tensor) -> dict[str, torch.Tensor]:
        """Each explainer's maps of the chunk, checked once as they come (a stochastic explainer with a ``seeds``
        parameter gets one seed per sample, keyed to its global index)."""
        xc, index, out = chunk.x, chunk.index, {}
        for who in self.call.names:
            self.bar.set_postfix_str(f"{who}: maps")
            fn = self.map_with[who]

            def run(fn=fn, who=who):
                if takes_seeds_keyword(fn):
                    seeds = perturb.keyed_seeds(self.root, index.to(xc.device, torch.int64), _MAPS_STREAM)
                    a = fn(self.call.model, xc, target, seeds=seeds)
                else:
                    a = fn(self.call.model, xc, target)
                where = f"the chunk of samples {int(index[0])}…{int(index[-1])}"
                a = explained(who, a, xc, where)
                _validate.same_device(xc, a, "x", f"explainer {who!r}'s maps")
                _validate.finite(a, f"explainer {who!r}'s maps of {where}")
                _validate.trust(a)  # checked here once: the metrics read it without checking again
                return a

            out[who] = self.costs.run("maps", who, run, lambda: xc.shape[0])
            self.bar.update()
        return out

    def _shared(self, chunk: Chunk, yc: torch.Tensor, target: torch.Tensor) -> dict:
        """The inputs several metrics read (e.g. a selection of perturbed images), computed once per chunk; and, the
        first time a chunk needs it, the fine-tuned model (``finetune()`` is called once, when FFid± first run)."""
        inputs = {}
        for name in self.shared_inputs:
            self.bar.set_postfix_str(name)
            ctx = self.context(chunk.x, yc, target, chunk.index)
            inputs[name] = self.costs.run(name, "all", lambda: registry.SHARED[name].compute(ctx))
            self.bar.update()
        if any(METRICS[m].model == "finetuned" for m in self.per_sample) and self.tuned is None:
            c = self.call
            self.tuned = self.tally.counted(c.finetuned if c.finetuned is not None else c.finetune())
            _validate.model(self.tuned.model, "the model finetune() returned" if c.finetuned is None else "finetuned")
        return inputs

    def _note_hints(self, chunk: Chunk, target: torch.Tensor, maps: dict) -> None:
        """What the hints read: whether the model predicts the labels, and which maps are constant over the units."""
        if chunk.y is not None:
            self.correct.append((target == chunk.y).cpu())
        for who in self.call.names:
            s = perturb.unit_scores(maps[who], perturb.default_units(chunk.x), reduce="sum")
            self.constant.setdefault(who, []).append((s.amax(dim=1) == s.amin(dim=1)).cpu())

    def _group(self, done: list, who: str, group: str, chunk: Chunk, yc, target, a, inputs) -> None:
        """One explainer's metrics of one group on a chunk, timed and counted as one row of the cost table."""
        self.bar.set_postfix_str(f"{who}: {group}")
        want = [m for m in self.per_sample if METRICS[m].group == group]
        use = self.tuned if METRICS[want[0]].model == "finetuned" else self.counted
        ctx = self.context(chunk.x, yc, target, chunk.index, who=who, a=a, model=use, inputs=inputs)

        def run():
            for m in want:
                emit(done, who, m, METRICS[m].estimate(ctx), chunk.index)

        self.costs.run(group, who, run, lambda: ctx.explained)
        self.bar.update()

    def _keep(self, chunk: Chunk, yc: torch.Tensor, maps: dict) -> None:
        """What the dataset-level metrics read after the chunks, unless x, y and the maps already hold it."""
        if not self.per_dataset:
            return
        c = self.call
        if c.stream:
            self.kept["x"].append(chunk.x.cpu())
            self.kept["index"].append(chunk.index)
        if c.stream or chunk.y is None:
            self.kept["y"].append(yc.cpu())
        for who in c.names:
            if c.stream or c.maps is None:
                self.kept[f"maps:{who}"].append(maps[who].cpu())

    def _dataset_data(self):
        """Every sample's inputs, labels, global indices and maps, in index order, for the dataset-level metrics."""
        c, kept = self.call, self.kept
        device = c.sample_x.device
        if c.stream:
            order = torch.cat(kept["index"]).argsort()
            xd = torch.cat(kept["x"])[order].to(device)
            yd = torch.cat(kept["y"])[order].to(device)
            index = torch.cat(kept["index"])[order]
            if c.kfold is not None:
                check_kfold(c.kfold, xd.shape[0])
                if not torch.equal(index, torch.arange(xd.shape[0], device="cpu")):
                    raise ValueError("kfold's folds are read by global sample index: the batches must number "
                                     f"their samples 0 … {xd.shape[0] - 1}")
            maps = {who: torch.cat(kept[f"maps:{who}"])[order].to(device) for who in c.names}
        else:
            xd, index = c.x, torch.arange(c.x.shape[0], device="cpu")
            yd = c.y if c.y is not None else torch.cat(kept["y"]).to(device)
            maps = c.maps if c.maps is not None else {who: torch.cat(kept[f"maps:{who}"]).to(device)
                                                      for who in c.names}
        return xd, yd, index, maps

    def _dataset(self) -> None:
        """The dataset-level metrics (ReCo, MeGe), once over every sample, per explainer and group."""
        xd, yd, index, maps = self._dataset_data()
        with _validate.checked(xd, yd, *maps.values()):  # the chunks' checked data, put together again
            self._dataset_metrics(xd, yd, index, maps)

    def _dataset_metrics(self, xd, yd, index, maps) -> None:
        inputs = {}
        for name in self.dataset_inputs:
            ctx = self.context(xd, yd, None, index)
            inputs[name] = self.costs.run(name, "all", lambda: registry.SHARED[name].compute(ctx))
        for who in self.call.names:
            for group in self.dataset_groups:
                self.bar.set_postfix_str(f"{who}: {group}")
                want = [m for m in self.per_dataset if METRICS[m].group == group]
                ctx = self.context(xd, yd, None, index, who=who, a=maps[who], inputs=inputs)
                done: list[dict] = []

                def run():
                    for m in want:
                        emit(done, who, m, METRICS[m].estimate(ctx), None)

                self.costs.run(group, who, run, lambda: ctx.explained)
                self._add(done)
                self.bar.update()

    def _frame(self):
        """The tidy frame of every record, with its cost table and hints."""
        c = self.call
        frame = frames.tidy(self.records, c.chosen, c.names, list(self.costs.rows.values()))
        frame.attrs["hints"] = (hinting.warn_degenerate if c.hints else hinting.degenerate)(
            frame, correct=torch.cat(self.correct) if self.correct else None,
            constant={who: torch.cat(parts) for who, parts in self.constant.items()})
        return frame


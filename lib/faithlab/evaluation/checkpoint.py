"""``fl.evaluate(..., checkpoint=)``: each finished chunk kept in a folder as JSON and read back by a call repeated
after an interruption, and the digests that tell one call's inputs from another's (also read by the CLI's
``--resume``)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from faithlab.evaluation.call import Chunk


def _hash_tensor(h, t: torch.Tensor) -> None:
    """Feed ``t``'s dtype, shape and bytes (on the CPU) to the hash ``h``."""
    t = t.detach().to("cpu").contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy())


def digest(*tensors: torch.Tensor | None) -> str:
    """The sha256 of the tensors (None counts as one), in order."""
    h = hashlib.sha256()
    for t in tensors:
        if t is None:
            h.update(b"none")
        else:
            _hash_tensor(h, t)
    return h.hexdigest()


def described(value):
    """An option's value as JSON (a tensor by its digest, an object JSON cannot hold by its type's name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        return "tensor " + digest(value)
    if isinstance(value, (list, tuple)):
        return [described(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): described(v) for k, v in value.items()}
    return type(value).__name__


def module_digest(model) -> str | None:
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


def category(module: str, qualname: str) -> type[Warning]:
    """The warning class named by a checkpoint, looked up among the modules already imported (nothing is imported
    from data); UserWarning when it is not there."""
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


@contextlib.contextmanager
def recording(on: bool):
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


class Checkpoint:
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
    def inputs(c: Chunk) -> str:
        return digest(c.x, c.y, *([] if c.maps is None else [c.maps[k] for k in sorted(c.maps)]))

    def find(self, c: Chunk, digest: str) -> dict | None:
        item = self.done.get(tuple(c.index.tolist()))
        if item is not None and item["inputs"] != digest:
            raise CheckpointMismatch(self.folder, f"holds the samples {int(c.index[0])}…{int(c.index[-1])} computed "
                                                  "from other inputs (images, labels or maps)")
        return item

    def save(self, c: Chunk, digest: str, done: list[dict], correct, constant: dict, cost: list[dict],
             seen: list) -> None:
        index = c.index.tolist()
        item = {"index": index, "inputs": digest,
                "records": [[r["explainer"], r["sample"], r["metric"], r["score"], r["mc_se"]] for r in done],
                "correct": None if correct is None else correct.tolist(),
                "constant": {who: v.tolist() for who, v in constant.items()}, "cost": cost,
                "warnings": [{"module": w.category.__module__, "category": w.category.__qualname__,
                              "message": str(w.message), "filename": w.filename, "lineno": w.lineno} for w in seen]}
        _write_json(self.folder / f"chunk-{index[0]}-{len(index)}.json", item)


def cost_rows(rows: dict) -> dict:
    return {key: dict(row) for key, row in rows.items()}


def cost_delta(before: dict, after: dict) -> list[dict]:
    """The cost rows' growth over one chunk (new rows whole), in the rows' order."""
    out = []
    for key, row in after.items():
        prev = before.get(key)
        if prev is None:
            out.append(dict(row))
        elif any(row[k] != prev[k] for k in COUNTED):
            out.append({"group": row["group"], "explainer": row["explainer"],
                        **{k: row[k] - prev[k] for k in COUNTED}})
    return out


COUNTED = ("forward_inputs", "model_calls", "explained_inputs", "seconds")
RECORD = ("explainer", "sample", "metric", "score", "mc_se")
"""The fields of a checkpoint's records, named in its ``call.json``: a folder written with other fields (before
``mc_se``) is refused as another call's, never read back without its standard errors."""

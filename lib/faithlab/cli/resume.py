"""What lets an interrupted ``faithlab evaluate`` resume: the run's fingerprint (every argument the scores
depend on, the files and images by their contents, the model's parameters, the versions: :func:`fingerprint`), the
``<out>.partial/`` folder of finished chunks it keeps (:func:`work_folder`, :func:`discard`) and an interrupted
``--budget`` run's Monte-Carlo counts (:func:`resumed_counts`).

One concept: the run's folder of finished chunks, and when ``--resume`` may continue it.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from faithlab.cli import arguments, loading
from faithlab.cli.arguments import UsageError

__all__ = ["fingerprint", "resumed_counts", "work_folder", "discard", "HASHED", "UNFINGERPRINTED"]

def _sha256(path) -> str | None:
    """The sha256 of a file's contents (None for no file)."""
    import hashlib

    if path is None:
        return None
    h = hashlib.sha256()
    with Path(path).expanduser().open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


HASHED = {"--weights": "the file's contents", "--finetuned": "the file's contents",
          "--images": "the images, their order or their labels", "--labels": "the CSV's contents",
          "model weights": "the model's parameters"}
"""Fingerprint entries that are digests: a difference is named by what changed, not by the digests."""

UNFINGERPRINTED = ("command", "list_metrics", "out", "yes", "resume", "estimate_only", "maps")
"""Arguments the scores do not depend on (where the report goes, the map figures, what to print)."""


def _images_digest(data, n: int, batch_size: int) -> str:
    """The sha256 of the ``n`` images evaluated (in order) and their labels: the files' contents when the data
    names its files, else the images as the loader gives them."""
    import hashlib

    h = hashlib.sha256()
    files, root, labels = getattr(data, "files", None), getattr(data, "root", None), getattr(data, "labels", None)
    if isinstance(files, list) and root is not None and len(files) >= n:
        for i, name in enumerate(files[:n]):
            label = "" if labels is None else int(labels[i])
            h.update(f"{name}\0{_sha256(Path(root) / name)}\0{label}\n".encode())
        return h.hexdigest()
    from faithlab.evaluation.checkpoint import digest as _digest

    for batch in loading.first(data.loader(batch_size), n):
        x, y = (batch[0], batch[1] if len(batch) > 1 else None) if isinstance(batch, (tuple, list)) else (
            (batch["x"], batch.get("y")) if isinstance(batch, dict) else (batch, None))
        h.update(_digest(x, y).encode())
    return h.hexdigest()


def fingerprint(args, model, data, n: int, chosen: list[str], chosen_explainers: dict, options: dict,
                 pre) -> dict:
    """What the scores of ``faithlab evaluate`` depend on, by flag: every argument but UNFINGERPRINTED, the files
    and images by their contents (a moved folder still resumes), the model's parameters, the versions. A run
    resumes only when all of it is the same."""
    import torch

    import faithlab as fl
    from faithlab.evaluation.checkpoint import module_digest as _module_digest

    entries = {"--set" if k == "settings" else "--" + k.replace("_", "-"): v for k, v in vars(args).items()
               if k not in UNFINGERPRINTED}
    entries.update({
        "--weights": _sha256(args.weights), "--finetuned": _sha256(args.finetuned),
        "--images": _images_digest(data, n, arguments.chunk(args)), "--n-images": n,
        "--labels": args.labels if args.labels in ("folders", "predictions") else _sha256(args.labels),
        "--explainers": chosen_explainers, "--metrics": chosen,
        "--set": {k: v for k, v in options.items() if k != "seed"}, "model weights": _module_digest(model),
        "preprocessing": str(pre), "faithlab version": fl.__version__, "torch version": torch.__version__})
    return json.loads(json.dumps(entries, default=repr))


def resumed_counts(args) -> dict:
    """The Monte-Carlo counts an interrupted ``--budget`` run chose (read from its ``incomplete.json``), so that
    ``--resume`` runs with them rather than with counts timed anew: {} when there is no such run."""
    from faithlab.evaluation import budget

    marker = Path(args.out).expanduser().resolve()
    marker = marker.with_name(marker.name + ".partial") / "incomplete.json"
    try:
        stored = json.loads(marker.read_text(encoding="utf-8"))["fingerprint"]["--set"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {k.option: int(stored[k.option]) for k in budget.knobs() if isinstance(stored.get(k.option), int)}


def discard(work: Path) -> None:
    """Remove a run's folder of chunks: renamed away first, so that a removal cut short leaves no half folder under
    its name. A folder already gone (removed by hand, or by another process) is nothing to do."""
    import shutil

    trash = work.with_name(f".{work.name}.discarded-{os.getpid()}")
    shutil.rmtree(trash, ignore_errors=True)
    try:
        work.rename(trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def work_folder(args, argv: Sequence[str], fingerprint: dict, echo) -> Path:
    """``<out>.partial/``, the folder beside the report where this run keeps its finished chunks, marked
    incomplete by ``incomplete.json`` (the command, its arguments and the ``fingerprint``). ``--resume``: the
    folder an interrupted run left, or a UsageError naming --resume and what differs; without it such a folder is
    named in one line and replaced. A folder of that name that is not a run's is never touched."""
    import os
    import shutil

    out = Path(args.out).expanduser().resolve()
    work = out.with_name(out.name + ".partial")
    marker = work / "incomplete.json"
    if work.exists():
        if not marker.is_file():
            raise UsageError("--out", f"{work} exists and is not a run's folder of finished chunks (no "
                                      "incomplete.json): move it away, faithlab evaluate keeps its chunks there")
        try:
            stored = json.loads(marker.read_text(encoding="utf-8"))
            command, theirs = str(stored["command"]), dict(stored["fingerprint"])
        except (ValueError, KeyError, TypeError):
            command, theirs = None, None
        if args.resume:
            if theirs is None:
                raise UsageError("--resume", f"{marker} cannot be read: run without --resume to start over")
            differ = [k for k in dict.fromkeys([*fingerprint, *theirs]) if fingerprint.get(k) != theirs.get(k)]
            if differ:
                what = "; ".join(f"{k} ({HASHED[k]})" if k in HASHED else
                                 f"{k} (was {json.dumps(theirs.get(k))}, now {json.dumps(fingerprint.get(k))})"
                                 for k in differ)
                raise UsageError("--resume", f"the interrupted run in {work} differs in {what}: rerun it with the "
                                             "same arguments, or without --resume to start over")
            done = [len(list((work / part).glob("chunk-*.json"))) for part in ("evaluate", "sanity")]
            echo(f"resuming the interrupted run in {work}: {done[0]} chunk(s) of the evaluation and {done[1]} of the "
                 "sanity check are done")
            return work
        echo(f"an interrupted run of {command or 'faithlab evaluate'} is in {work}: pass --resume to continue it "
             "(this run replaces it)")
        discard(work)
    elif args.resume:
        echo(f"--resume: no interrupted run in {work}; starting from the beginning")
    staging = work.with_name(f".{work.name}.{os.getpid()}")  # created whole: a folder without its marker is not ours
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    arguments = {k: v for k, v in vars(args).items() if k not in ("command", "list_metrics", "resume")}
    (staging / "incomplete.json").write_text(json.dumps({
        "incomplete": True, "command": "faithlab " + shlex.join(argv), "arguments": arguments,
        "fingerprint": fingerprint}, indent=1, default=repr), encoding="utf-8")
    staging.rename(work)
    return work

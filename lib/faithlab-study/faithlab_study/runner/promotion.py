"""Locks, staging folders and promotion: how a notebook's new outputs replace the old ones, even with several
runners at once and with a runner killed at any point (the guarantees are listed in :mod:`faithlab_study`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from pathlib import Path

from faithlab import paths
from faithlab_study.book.generated import LOCKS, first_line, locked, outputs_lock
from faithlab_study.runner.parameters import Notebook, StudyError
from faithlab_study.runner.stamps import is_current, output_paths

STAGING = ".staging"  # per-execution staging folders
JOURNAL = ".promoting"  # one journal file per promotion in progress


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()



def notebook_slug(paper: str, experiment: str) -> str:
    """Name of a notebook's lock, journal and (as prefix) staging folders."""
    return f"{paper}--{experiment}"


def notebook_lock(generated: Path, slug: str) -> Path:
    return generated / LOCKS / f"{slug}.lock"


def new_staging(generated: Path, slug: str, experiment: str) -> Path:
    """Create ``<generated>/.staging/<slug>--<id>/<experiment>/`` and return ``<generated>/.staging/<slug>--<id>``."""
    for _ in range(10):
        staging = generated / STAGING / f"{slug}--{uuid.uuid4().hex[:8]}"
        try:
            (staging / experiment).mkdir(parents=True)
            return staging
        except FileNotFoundError:  # another runner's end-of-run tidy removed the empty .staging in between
            continue
    raise StudyError(f"could not create a staging folder under {generated / STAGING}")


def _move_in(paper: str, experiment: str, staging: Path, generated: Path) -> None:
    """Move the outputs staged in ``staging`` into place, replacing the old ones; safe to repeat after a kill.

    The executed notebook leaves first and arrives last, so in every intermediate state ``<experiment>.ipynb`` is
    absent: an ``.ipynb`` always sits beside the complete folder it was executed with, which is what
    :func:`is_current` and :func:`write_scorecard` rely on. Each step checks what is left to do, so a recovery can
    run this again from whatever state a kill left.
    """
    ipynb, folder = generated / paper / f"{experiment}.ipynb", generated / paper / experiment
    staged_ipynb, staged_folder = staging / f"{experiment}.ipynb", staging / experiment
    if not staged_ipynb.is_file():  # nothing left to move: the promotion was complete (or its staging is gone)
        return
    ipynb.parent.mkdir(parents=True, exist_ok=True)
    trash = staging / f"old-{uuid.uuid4().hex[:8]}"  # a fresh one per attempt: an earlier attempt's is not empty
    trash.mkdir()
    if ipynb.exists():
        os.replace(ipynb, trash / ipynb.name)
    if staged_folder.is_dir():  # else it was moved in before the kill
        if folder.exists():
            os.replace(folder, trash / folder.name)
        os.replace(staged_folder, folder)
    os.replace(staged_ipynb, ipynb)


def promote(nb: Notebook, key: str, staging: Path, generated: Path) -> None:
    """Replace a notebook's outputs by the ones staged in ``staging`` (caller holds the notebook's lock)."""
    journal = generated / JOURNAL / f"{notebook_slug(nb.paper, nb.experiment)}.json"
    entry = {"paper": nb.paper, "experiment": nb.experiment, "key": key, "staging": staging.name}
    with locked(outputs_lock(generated)):
        # Written before the first rename and removed after the last: a journal on disk means "this promotion may
        # be half done; finish it from <staging>" (see recover_notebook).
        paths.atomic_write(journal, lambda tmp: tmp.write_text(json.dumps(entry)))
        _move_in(nb.paper, nb.experiment, staging, generated)
        journal.unlink()


def recover_notebook(slug: str, generated: Path, echo) -> None:
    """Finish a promotion that a killed runner left half done and delete that notebook's left-over staging folders.

    The caller holds the notebook's lock, so no live runner uses any ``.staging/<slug>--*`` folder.
    """
    journal = generated / JOURNAL / f"{slug}.json"
    if journal.exists():
        try:
            entry = json.loads(journal.read_text())
            paper, experiment, staging, key = entry["paper"], entry["experiment"], entry["staging"], entry["key"]
            # The journal names folders that are moved: accept only what promote writes, nothing outside.
            if (notebook_slug(paper, experiment) != slug or Path(staging).name != staging
                    or not staging.startswith(f"{slug}--")):
                raise ValueError("it names another notebook or folder")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            echo(f"{journal}: unreadable promotion journal ({first_line(exc)}); ignored (an incomplete notebook "
                 "is executed again)")
        else:
            with locked(outputs_lock(generated)):
                _move_in(paper, experiment, generated / STAGING / staging, generated)
            nb = Notebook(paper, experiment, Path())
            if is_current(nb, key, generated, echo):
                echo(f"[recovered] {nb.name}: completed the promotion of its outputs that a killed runner left")
            elif output_paths(nb, generated)[0].is_file():
                echo(f"[recovered] {nb.name}: the outputs a killed runner was promoting are gone; previous ones kept")
            else:
                echo(f"[recovered] {nb.name}: a killed runner left its outputs incomplete; it will be executed again")
        journal.unlink(missing_ok=True)
    for leftover in _staging_folders(generated):
        if leftover.name.rsplit("--", 1)[0] == slug:
            shutil.rmtree(leftover, ignore_errors=True)


def recover(generated: Path | None = None, echo=print) -> None:
    """Complete the promotions that killed runners left half done and delete their staging folders.

    Each notebook is handled under its lock, taken without waiting: a notebook that another runner is executing is
    left to that runner, which recovers it itself before executing it.
    """
    generated = Path(generated or paths.generated_dir())
    slugs = set()
    if (generated / JOURNAL).is_dir():
        paths.remove_stale_tmp(generated / JOURNAL)
        slugs.update(p.stem for p in (generated / JOURNAL).glob("*.json"))
    slugs.update(p.name.rsplit("--", 1)[0] for p in _staging_folders(generated) if "--" in p.name)
    for slug in sorted(slugs):
        with locked(notebook_lock(generated, slug), block=False) as state:
            if state != "busy":
                recover_notebook(slug, generated, echo)


def _staging_folders(generated: Path) -> list[Path]:
    try:
        return list((generated / STAGING).iterdir())
    except FileNotFoundError:  # none yet, or another runner's tidy has just removed the empty folder
        return []


def tidy(generated: Path) -> None:
    """Remove ``.staging`` if no runner has a folder in it (rmdir fails on a non-empty folder)."""
    with contextlib.suppress(OSError):
        os.rmdir(generated / STAGING)

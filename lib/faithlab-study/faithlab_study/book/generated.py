"""The generated folder (``book/_generated``): what the book reads, the runner writes, and both agree on.

- its locks: :func:`locked` (an exclusive ``flock``) on the files under ``<generated>/.locks`` (:data:`LOCKS`), among
  them :func:`outputs_lock`, which the runner's promotions take and the scorecard
  (:func:`faithlab_study.book.scorecard.write_scorecard`) reads under, so it never sees a promotion half done;
- how a problem with a file in it is reported: one line (:func:`first_line` of the error), on stderr by default
  (:func:`to_stderr`).

The book owns it and imports nothing of the runner; the runner (:mod:`faithlab_study.runner`) imports it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path

LOCKS = ".locks"  # per-notebook lock files, and the lock of the outputs (promotions and scorecard)


@contextlib.contextmanager
def locked(path: Path, *, block: bool = True, on_wait=None):
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block.

    Yields "free" (taken at once), "waited" (taken after ``on_wait()`` and waiting for the holder) or, only with
    ``block=False``, "busy" (not taken). flock belongs to the open file, so it excludes other processes and other
    threads alike, and the system releases it when its holder dies: a killed runner never leaves a lock behind.
    Lock files are never deleted: a process waiting on a deleted file's lock would not exclude one that creates a
    new file under the same name.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # not inherited by the kernels (PEP 446)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            state = "free"
        except BlockingIOError:
            state = "busy"
        if state == "busy" and block:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
            state = "waited"
        yield state
    finally:
        os.close(fd)  # releases the lock


def outputs_lock(generated: Path) -> Path:
    """Taken for each promotion and while the scorecard is read and written (never for long), so the scorecard
    always sees every notebook either before or after its promotion."""
    return generated / LOCKS / "outputs.lock"


def to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)

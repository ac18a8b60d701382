"""One ``faithlab evaluate`` run at a time per ``--out`` folder: an OS advisory lock on ``.<out>.lock`` beside
it, into which the holder writes its pid, start time and command (:func:`out_lock`); a second run on the folder
stops at once, naming the first.

One concept: the report folder's lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from faithlab.cli.arguments import UsageError

__all__ = ["out_lock", "alive"]

def _lock_path(out) -> Path:
    """The lock file of the report folder ``out``: ``.<out name>.lock`` beside it, one for ``<out>`` and
    ``<out>.partial/`` both."""
    out = Path(out).expanduser().resolve()
    return out.with_name(f".{out.name}.lock")


def _try_lock(fd: int) -> bool:
    """Take the exclusive ``fcntl.flock`` of the open file ``fd`` without waiting → whether it was taken (False:
    another process holds it). The kernel releases it when its holder's file is closed or the holder dies, even by
    SIGKILL (the study's locks and the training cache's are the same; the package assumes a POSIX system). Other
    failures (a file system without locks) raise OSError."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> dict:
    """The record the holder of a lock file wrote into it (``pid``, ``started``, ``command``), read through ``fd``;
    waits up to a second for a holder that has just taken the lock and not yet written it ({} if none comes)."""
    for _ in range(20):
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            text = os.read(fd, 1 << 16).decode("utf-8", "replace")
        except OSError:
            return {}
        if text.strip():
            try:
                record = json.loads(text)
            except ValueError:  # being written: read again
                record = None
            if isinstance(record, dict) and alive(record.get("pid")):  # not yet a killed holder's, overwritten
                return record
        time.sleep(0.05)
    return {}


def alive(pid) -> bool:
    """Whether ``pid`` names a running process (a lock file's record may still be that of a killed run, which the
    new holder has not yet overwritten)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _busy(out, record: dict) -> str:
    """The refusal of a run whose ``--out`` another run holds, naming that run from its lock ``record``."""
    command = " ".join(str(record.get("command", "")).split())
    command = command if len(command) <= 300 else command[:299] + "…"
    who = (f"pid {record['pid']}, started {record.get('started', '?')}: {command or '?'}" if "pid" in record else
           "its process did not say which")
    return (f"{out} is in use by another faithlab evaluate ({who}); wait for it to finish or pass another "
            "--out")


def _take(path: Path, out) -> int:
    """The open lock file ``path``, locked by this process → its descriptor; UsageError naming --out when another
    process holds it. A file removed or replaced between its opening and its locking (its holder finished and
    removed it) is not the lock any more: the new one is opened and locked instead."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise UsageError("--out", f"cannot create the lock file {path}: {err.strerror or err}") from None
        try:
            if not _try_lock(fd):
                raise UsageError("--out", _busy(out, _holder(fd)))
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise UsageError("--out", f"cannot lock {path}: other processes keep replacing it")


def _release(fd: int, path: Path) -> None:
    """Remove the lock file, then release its lock by closing it: removed while still locked, so that a run waiting
    for it finds it gone (:func:`_take` then opens a new one), and only when it is still ours."""
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def out_lock(out, command: str, echo):
    """Hold the report folder ``out`` (and its ``<out>.partial/``) for this run while the block runs: one run per
    output folder, since two would write each other's chunks and report. An OS advisory lock on the file
    ``.<out name>.lock`` beside ``out`` (its parent folder is created), into which the holder writes its pid, start
    time and ``command``; another run on the same ``--out`` gets a UsageError naming --out and that run. The lock is
    released and its file removed when the block ends (done, failed, interrupted); a holder killed outright leaves
    the file, but the kernel has released its lock, so the next run takes it over. On a file system without locks
    the run goes on unlocked, with a warning."""
    path = _lock_path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError("--out", f"cannot create the folder {path.parent}: {err.strerror or err}") from None
    try:
        fd = _take(path, out)
    except OSError as err:  # e.g. ENOLCK on a network file system: no lock to take
        echo(f"warning: --out: {path.parent} does not support file locks ({err.strerror or err}): nothing keeps "
             f"another run from writing to {out} at the same time")
        yield path
        return
    try:
        import datetime

        record = {"pid": os.getpid(), "started": datetime.datetime.now().isoformat(sep=" ", timespec="seconds"),
                  "command": command}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(record).encode("utf-8"))
        yield path
    finally:
        _release(fd, path)

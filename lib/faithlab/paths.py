"""Where faithlab reads and writes on disk: the project root, the cache and the generated book artifacts.

The project root is found from the environment variable ``FAITHLAB_ROOT`` if set, else by walking up from the
current working directory to the first folder holding ``_config.yml`` and ``notebooks/`` (notebooks run with the
repository root as working directory), else the current working directory.

Files written with :func:`atomic_write` appear whole or not at all, with the permissions the user's umask gives
any new file (as a notebook or a CSV written with ``open`` gets); a temporary file that a killed writer left behind
is removed by :func:`remove_stale_tmp` once it is clearly abandoned.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

# Temporary names of atomic_write: ".<target name>.<8 random characters>.tmp". The character class also covers the
# names tempfile.mkstemp gave before (same prefix and suffix), so their left-overs are recognised too.
_TMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def project_root() -> Path:
    """The repository root (see module docstring)."""
    env = os.environ.get("FAITHLAB_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if (candidate / "_config.yml").is_file() and (candidate / "notebooks").is_dir():
            return candidate
    return here


def cache_dir() -> Path:
    """Folder for trained weights and cached explanations (``FAITHLAB_CACHE`` or ``<root>/data/cache``)."""
    env = os.environ.get("FAITHLAB_CACHE")
    path = Path(env) if env else project_root() / "data" / "cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def generated_dir() -> Path:
    """Folder for executed notebooks, tables and figures (``FAITHLAB_GENERATED`` or ``<root>/book/_generated``)."""
    env = os.environ.get("FAITHLAB_GENERATED")
    return Path(env).resolve() if env else project_root() / "book" / "_generated"


def _create_tmp(folder: Path, name: str) -> Path:
    """Create a new empty temporary file ``.<name>.<random>.tmp`` in ``folder``, readable as the umask allows.

    tempfile.mkstemp creates its file 0600 whatever the umask, so every artifact and cache file used to be private
    to its writer while the notebooks beside them were 0644. Creating the file with mode 0666 lets the kernel apply
    the process's umask (and any default ACL of the folder) exactly as for a file opened with ``open``; reading the
    umask with ``os.umask`` instead would briefly change it for every thread of the process.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, flags, 0o666))
        except FileExistsError:  # 2**32 names: a clash is rare, so try another one
            continue
        return tmp
    raise FileExistsError(f"could not create a temporary file for {name!r} in {folder}")


def atomic_write(target: Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``target``, then rename it onto ``target``.

    Readers see the old file or the complete new one, never half of it; on failure nothing is left behind. The new
    file gets the permissions the umask gives new files (0644 with the usual umask 022), not mkstemp's 0600.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_tmp(target.parent, target.name)
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def remove_stale_tmp(folder: Path, max_age_s: float = 3600.0) -> list[Path]:
    """Delete the temporary files of :func:`atomic_write` in ``folder`` that were last modified over ``max_age_s``
    seconds ago; returns the deleted paths.

    A writer killed between creating its temporary file and renaming it leaves the file behind forever. Other
    processes may be writing to the same folder at this moment, so a temporary file is only removed when it is
    clearly abandoned: its name has atomic_write's pattern (nothing else is touched) and it has not been written
    for an hour, while a live writer's file is modified continuously from its creation until its rename a few
    seconds later. Should a writer nevertheless stall that long, its rename fails loudly (FileNotFoundError) rather
    than publishing a damaged file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    cutoff = time.time() - max_age_s
    removed = []
    for entry in os.scandir(folder):
        if not _TMP_NAME.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except FileNotFoundError:  # renamed or removed by its writer or another cleaner meanwhile
            continue
    return removed

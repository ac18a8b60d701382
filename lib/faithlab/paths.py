"""Where faithlab reads and writes on disk: the project root, the cache and the generated book artifacts.

The project root is found from the environment variable ``FAITHLAB_ROOT`` if set, else by walking up from the
current working directory to the first folder holding ``_config.yml`` and ``notebooks/`` (notebooks run with the
repository root as working directory), else the current working directory.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


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


def atomic_write(target: Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``target``, then rename it onto ``target``.

    Readers see the old file or the complete new one, never half of it; on failure nothing is left behind.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target

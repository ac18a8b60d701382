"""Stamps: when a notebook's outputs are current (the hash of its source, merged parameters, library and uv.lock).

A run is skipped when the stamp of the last successful run (``<experiment>/.stamp.json``) matches :func:`run_key`; an
unreadable stamp counts as no stamp (the notebook is executed again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from faithlab_study.book.generated import first_line, to_stderr
from faithlab_study.runner.parameters import Notebook

STAMP = ".stamp.json"


def _hash_files(files) -> str:
    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(str(f.name).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()


def library_hash() -> str:
    """Hash of the source files of the library (faithlab) and of the study (faithlab_study): a change in either re-runs
    every notebook."""
    import faithlab

    folders = (Path(faithlab.__file__).resolve().parent, Path(__file__).resolve().parents[1])
    return _hash_files(f for folder in folders for f in folder.rglob("*.py"))


def run_key(nb: Notebook, params: dict, lib_hash: str, root: Path) -> str:
    lock = root / "uv.lock"
    payload = {
        "source": hashlib.sha256(nb.source.read_bytes()).hexdigest(),
        "params": params,
        "lib": lib_hash,
        "lock": hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def output_paths(nb: Notebook, generated: Path) -> tuple[Path, Path]:
    """(executed notebook, artifact folder) of a notebook."""
    return generated / nb.paper / f"{nb.experiment}.ipynb", generated / nb.paper / nb.experiment


def is_current(nb: Notebook, key: str, generated: Path, echo=None) -> bool:
    """Whether the notebook's outputs are complete and stamped with ``key``; an unreadable stamp is reported (with
    ``echo``, default stderr) and counts as missing."""
    ipynb, folder = output_paths(nb, generated)
    stamp = folder / STAMP
    if not (ipynb.is_file() and stamp.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found a {type(data).__name__}")  # noqa: TRY004 - caught below
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        (echo or to_stderr)(f"{stamp}: unreadable stamp ({first_line(exc)}); {nb.name} will be executed again")
        return False
    return data.get("key") == key

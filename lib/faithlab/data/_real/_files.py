"""Reading a real dataset's files from ``data_dir``, shared by every loader: where the folder is, the error that
names the files expected and their layout, and numpy/torch files read without unpickling anything (unpickling can
run code): ``np.load(allow_pickle=False)`` and ``torch.load(weights_only=True)``, a refused file being a ValueError
that names it and says what to save instead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from faithlab import _validate

FOLDER_SPLITS = ("train", "val", "test")
"""The splits of a dataset stored as one folder per split (imagenet_vehicles, ct_contrast)."""


def data_root(data_dir: str | Path | None, name: str) -> Path:
    """``data_dir`` as a path (``~`` expanded); ValueError when it is None (a real dataset needs its folder)."""
    if data_dir is None:
        raise ValueError(f"data_dir is required for the real dataset {name!r} (a folder holding its files)")
    return Path(data_dir).expanduser()


def missing_files(name: str, data_dir: Path, layout: str, downloadable: bool = False) -> FileNotFoundError:
    """The error to raise when ``name``'s files are not under ``data_dir``: it shows the expected ``layout``."""
    hint = "\nPass download=True to fetch it." if downloadable else ""
    where = f"{name}: files not found under data_dir={str(data_dir)!r}"
    return FileNotFoundError(f"{where}. Expected layout:\n{layout}{hint}")


def no_download(name: str, download: bool) -> None:
    """Refuse ``download=True`` for a dataset that cannot be fetched (its files must be placed under data_dir)."""
    if download:
        raise ValueError(f"download=True is not supported for {name!r}; place its files under data_dir")


def read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a comma-separated file whose header names at least ``columns`` (cells stripped of spaces)."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = [h.strip() for h in reader.fieldnames or []]
        missing = [c for c in columns if c not in header]
        if missing:
            raise ValueError(f"{path}: the header must name the columns {list(columns)}, got {header}")
        reader.fieldnames = header
        return [{k: (v or "").strip() for k, v in row.items() if k is not None} for row in reader
                if any((v or "").strip() for v in row.values() if isinstance(v, str))]


def pickled(path: Path, conversion: str) -> ValueError:
    """The error for a file holding pickled objects: never loaded; ``conversion`` says what to save instead."""
    return ValueError(
        f"data_dir file {str(path)!r} holds Python objects (pickled data), which faithlab never loads because "
        f"unpickling can run code; if it is a copy you trust, convert it once outside faithlab into {conversion}")


def read_npy(path: Path, conversion: str) -> np.ndarray:
    """The array in an .npy file, read with ``allow_pickle=False``: an object array would be unpickled."""
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as err:  # numpy's refusals all mention pickling; anything else is a damaged file
        if "pickle" in str(err):
            raise pickled(path, conversion) from None
        raise ValueError(f"data_dir file {str(path)!r} is not a readable .npy array: {err}") from None
    if not isinstance(array, np.ndarray):  # np.load opens a zip archive whatever the file is called
        array.close()
        raise ValueError(f"data_dir file {str(path)!r} is an .npz archive, expected a single .npy array")
    return array


def read_npz(path: Path, keys: tuple[str, ...]) -> list[np.ndarray]:
    """The named arrays of an .npz archive, read with ``allow_pickle=False``: an object array would be unpickled."""
    conversion = f"np.savez(path, {', '.join(f'{k}=<int array>' for k in keys)})"
    try:
        archive = np.load(path, allow_pickle=False)
    except ValueError as err:  # a pickle file with an .npz name
        if "pickle" in str(err):
            raise pickled(path, conversion) from None
        raise ValueError(f"data_dir file {str(path)!r} is not a readable .npz archive: {err}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"data_dir file {str(path)!r} is a single .npy array, expected an .npz archive of {keys}")
    with archive:
        missing = [k for k in keys if k not in archive.files]
        if missing:
            raise ValueError(f"data_dir file {str(path)!r} lacks the arrays {missing} (it holds {archive.files})")
        try:
            return [archive[k] for k in keys]
        except ValueError as err:  # an object array inside the archive
            if "pickle" in str(err):
                raise pickled(path, conversion) from None
            raise


def read_tensors(path: Path, conversion: str):
    """``torch.load(weights_only=True)``: tensors and plain containers only, never arbitrary pickled objects."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise
    # The weights-only loader refuses anything but tensors and plain containers (UnpicklingError; numpy arrays are
    # refused too), a damaged file fails as RuntimeError or EOFError: one ValueError names the file either way.
    except Exception as err:  # noqa: BLE001
        raise ValueError(
            f"data_dir file {str(path)!r} is not a plain tensor file and is not loaded "
            f"({_validate.load_refusal(err)}); if it is a trusted file holding numpy arrays or other objects, "
            f"re-save it once outside faithlab as tensors: {conversion}"
        ) from err


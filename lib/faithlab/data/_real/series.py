"""Loaders of the time series TRACE/TimeX use, in the files TimeX reads: PAMAP2 activity recognition (:func:`pam`,
.npy/.npz read with ``allow_pickle=False``) and Boiler fault detection (:func:`boiler`, .pt read with
``weights_only=True``); returned as :class:`~faithlab.data.TensorData`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from faithlab import _validate

from .._core import TensorData, check_split
from ._files import data_root, missing_files, no_download, read_npy, read_npz, read_tensors

_SERIES_SPLITS = ("train", "val", "test")


def pam(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
        split_no: int = 1) -> TensorData:
    """PAMAP2 activity recognition (8 classes, 600 steps, 17 sensors) in the files TimeX (``process_PAM``) reads.

    Layout (data_dir = the PAMAP2data folder): processed_data/PTdict_list.npy (N, T, F) array,
    processed_data/arr_outcomes.npy (N, ≥1) labels in the last column, and the split: splits/PAMAP2_split_<split_no>
    as .npz with the int arrays ``idx_train``, ``idx_val``, ``idx_test``, or as the published .npy when it holds
    a plain (3, n) int array. Normalisation as TimeX: per-channel mean/std of the *observed* (> 0) train values;
    observed values standardised, missing (≤ 0) set to 0; TimeX's appended missingness channels are not added
    (TimeX drops them too, ``gethalf=True``).

    Files are read with ``allow_pickle=False``, since unpickling a file can run code. The published split files
    are object arrays (three index arrays of different lengths) and are refused with ValueError; convert each
    once, from a copy you trust and outside faithlab (numpy must be told to unpickle it), into the .npz placed next
    to it: ``np.savez("splits/PAMAP2_split_1.npz", idx_train=..., idx_val=..., idx_test=...)`` with the three
    int arrays it holds, in that order.

    Returns TensorData: x (N, T, F) float32, y (N,).
    """
    check_split(split, _SERIES_SPLITS)
    no_download("pam", download)
    _validate.positive_int(split_no, "split_no")
    root = data_root(data_dir, "pam")
    split_file = root / "splits" / f"PAMAP2_split_{split_no}.npz"
    if not split_file.is_file():
        split_file = split_file.with_suffix(".npy")
    files = [root / "processed_data" / "PTdict_list.npy", root / "processed_data" / "arr_outcomes.npy", split_file]
    if not all(f.is_file() for f in files):
        layout = ("  data_dir/processed_data/{PTdict_list.npy, arr_outcomes.npy},\n"
                  f"  data_dir/splits/PAMAP2_split_{split_no}.npz (or PAMAP2_split_{split_no}.npy)")
        raise missing_files("pam", root, layout)

    # what an error message asks the owner of a trusted copy to save instead (the unpickling is theirs, not ours)
    stacked = "the same values stacked into one plain {} array, saved with np.save to {!r}"
    x_all = torch.from_numpy(read_npy(files[0], stacked.format("float32", str(files[0])))).float()
    outcomes = read_npy(files[1], stacked.format("int64", str(files[1])))
    y_all = torch.from_numpy(outcomes.reshape(len(outcomes), -1)[:, -1].astype(np.int64))
    keys = ("idx_train", "idx_val", "idx_test")
    if split_file.suffix == ".npz":
        split_parts = read_npz(split_file, keys)
    else:
        to_npz = (f"its three index arrays (train, val, test) saved with np.savez to "
                  f"{str(split_file.with_suffix('.npz'))!r} as idx_train, idx_val and idx_test")
        split_parts = list(read_npy(split_file, to_npz))
    if len(split_parts) != 3:
        raise ValueError(f"data_dir file {str(split_file)!r} must hold 3 index arrays (train, val, test), "
                         f"got {len(split_parts)}")
    parts = dict(zip(_SERIES_SPLITS, (torch.as_tensor(np.asarray(p, dtype=np.int64)) for p in split_parts)))
    train = x_all[parts["train"]]
    observed = (train > 0).float()
    count = observed.sum(dim=(0, 1)).clamp_min(1)
    mean = (train * observed).sum(dim=(0, 1)) / count
    std = (((train - mean) ** 2 * observed).sum(dim=(0, 1)) / count).sqrt().clamp_min(1e-7)
    part = x_all[parts[split]]
    x = torch.where(part > 0, (part - mean) / std, 0.0)
    n_classes = int(y_all.max()) + 1
    info = {"name": "pam", "n_classes": n_classes, "class_names": [str(c) for c in range(n_classes)],
            "mean": tuple(mean.tolist()), "std": tuple(std.tolist()), "split": split, "split_no": split_no}
    return TensorData(x, y_all[parts[split]], None, info)


def boiler(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
           split_no: int = 1) -> TensorData:
    """Boiler fault detection (2 classes, 36 steps, 20 channels) in the files TimeX (``process_Boiler``) reads.

    Layout: data_dir/xfull.pt (T, N, C) float tensor, data_dir/yfull.pt (N,), data_dir/split=<split_no>.pt holding
    (idx_train, idx_val, idx_test). Not normalised (as TimeX). Files are read with ``torch.load(weights_only=True)``
    (tensors, lists, tuples and numbers; unpickling anything else can run code): a file holding numpy arrays or other
    objects is refused with ValueError, whose message says what to save instead: re-save a trusted copy, outside
    faithlab, as tensors, e.g. ``torch.save(tuple(torch.as_tensor(i) for i in parts), "split=1.pt")``.

    Returns TensorData: x (N, T, C) float32, y (N,).
    """
    check_split(split, _SERIES_SPLITS)
    no_download("boiler", download)
    _validate.positive_int(split_no, "split_no")
    root = data_root(data_dir, "boiler")
    files = [root / "xfull.pt", root / "yfull.pt", root / f"split={split_no}.pt"]
    if not all(f.is_file() for f in files):
        layout = f"  data_dir/xfull.pt (T, N, C), data_dir/yfull.pt (N,), data_dir/split={split_no}.pt"
        raise missing_files("boiler", root, layout)

    def convert(path: Path, expression: str) -> str:  # what to save instead (the unpickling is the owner's, not ours)
        return f"torch.save({expression}, {str(path)!r}), with `a` its current content"

    x_all = read_tensors(files[0], convert(files[0], "torch.as_tensor(a).float()"))
    y_all = read_tensors(files[1], convert(files[1], "torch.as_tensor(a).long()"))
    split_parts = read_tensors(files[2], convert(files[2], "tuple(torch.as_tensor(i).long() for i in a)"))
    index = torch.as_tensor(np.asarray(split_parts[_SERIES_SPLITS.index(split)], dtype=np.int64))
    x = torch.as_tensor(x_all).float().permute(1, 0, 2)[index]
    y_all = torch.as_tensor(y_all).long().flatten()
    n_classes = int(y_all.max()) + 1
    info = {"name": "boiler", "n_classes": n_classes, "class_names": [str(c) for c in range(n_classes)],
            "mean": (0.0,) * x.shape[2], "std": (1.0,) * x.shape[2], "split": split, "split_no": split_no}
    return TensorData(x, y_all[index], None, info)

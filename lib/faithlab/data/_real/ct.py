"""Loader of Few-class Fidelity's CT contrast-agent slices with their organ masks (:func:`ct_contrast`), from .npy or
PNG files; returned as :class:`~faithlab.data.TensorData`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from faithlab import _validate

from .._core import TensorData, check_split
from .._embedded import CT_CLASS_NAMES, tight_boxes
from ._files import FOLDER_SPLITS, data_root, missing_files, no_download, read_csv, read_npy

_CT_SUFFIXES = (".npy", ".png")


def _ct_array(path: Path, what: str) -> np.ndarray:
    """One 2-D slice or mask from an .npy file (``allow_pickle=False``) or a PNG (8 or 16 bit grey; colour → grey)."""
    if path.suffix == ".npy":
        array = read_npy(path, f"the {what} as a plain numeric array, np.save({str(path)!r}, np.asarray(a, "
                               f"dtype=np.float32))")
        if array.dtype.kind not in "biuf":
            raise ValueError(f"data_dir file {str(path)!r} must hold a numeric {what}, got dtype {array.dtype}")
    else:
        from PIL import Image

        with Image.open(path) as image:
            if image.mode not in ("1", "L", "I", "F") and not image.mode.startswith("I;16"):
                image = image.convert("L")
            array = np.asarray(image)
    if array.ndim == 3 and 1 in (array.shape[0], array.shape[-1]):
        array = array.reshape(array.shape[1:] if array.shape[0] == 1 else array.shape[:-1])
    if array.ndim != 2:
        raise ValueError(f"data_dir file {str(path)!r} must hold one 2-D {what} (H, W), got shape {array.shape}")
    return array


def _ct_files(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "images").iterdir() if p.is_file() and p.suffix.lower() in _CT_SUFFIXES)


def _ct_stack(arrays: list[np.ndarray], paths: list[Path]) -> torch.Tensor:
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        first = {a.shape: p.name for a, p in zip(arrays, paths)}
        raise ValueError(f"the CT slices must share one shape (H, W), got {sorted(shapes)} (e.g. {first})")
    return torch.from_numpy(np.stack(arrays).astype(np.float32))


def ct_contrast(*, split: str = "test", data_dir: str | Path | None = None, download: bool = False,
                mean: float | tuple | None = None, std: float | tuple | None = None) -> TensorData:
    """The Few-class Fidelity paper's CT contrast-agent study: slices labelled with (1) or without (0) contrast
    agent, with a manual organ (mediastinum) mask as the localisation ground truth. Embedded stand-in:
    :func:`faithlab.data.ct_slices`.

    Layout, split one of train, val, test:

    - data_dir/<split>/images/<name>.npy or .png: one 2-D slice (H, W) each (.npy any numeric dtype, e.g. float
      HU values; .png 8- or 16-bit grey, colour converted to grey); all slices of a split share one shape.
    - data_dir/<split>/masks/<name>: the slice's mask under the same file name (or the same stem with the other
      suffix, e.g. a .png mask for an .npy slice), same shape; nonzero = organ (bool, 0/1 or 0/255).
    - data_dir/<split>/labels.csv: comma-separated, header ``file,label``, one row per file of images/ (``file`` =
      its name, e.g. ``slice_001.npy``), label 0 (without contrast) or 1 (with contrast).

    Slices are ordered by file name (``info['files']``). Values are used as stored (no windowing), then
    standardised with one mean and one std (population, over every pixel of every slice): those of the train
    split (data_dir/train/images) when it exists, else those of the loaded split, or the given ``mean``/``std``
    (e.g. the statistics the classifier was trained with); ``info['stats_from']`` says which ("train", the split,
    or "given"). .npy files are read with ``allow_pickle=False`` (unpickling can run code): an object array is
    refused with ValueError.

    Returns TensorData: x (N, 1, H, W) float32, y (N,), mask (N, H, W) bool; extras ``boxes`` (N, 4) int64 tight
    box of the mask as (x0, y0, x1, y1), end exclusive ((0, 0, 0, 0) for an empty mask).
    """
    check_split(split, FOLDER_SPLITS)
    no_download("ct_contrast", download)
    root = data_root(data_dir, "ct_contrast")
    folder = root / split
    layout = (f"  data_dir/{split}/images/<name>.npy|.png  (one 2-D slice each),\n"
              f"  data_dir/{split}/masks/<name>.npy|.png  (same name or stem; nonzero = organ),\n"
              f"  data_dir/{split}/labels.csv  (header file,label; label 1 = with contrast, 0 = without)")
    if not (folder / "images").is_dir() or not (folder / "masks").is_dir() or not (folder / "labels.csv").is_file():
        raise missing_files("ct_contrast", root, layout)
    paths = _ct_files(folder)
    if not paths:
        raise missing_files("ct_contrast", root, layout)
    rows = read_csv(folder / "labels.csv", ("file", "label"))
    labels: dict[str, int] = {}
    for row in rows:
        if row["label"] not in ("0", "1") or row["file"] in labels:
            problem = "is listed twice" if row["file"] in labels else f"has label {row['label']!r} (0 or 1 expected)"
            raise ValueError(f"{folder / 'labels.csv'}: {row['file']!r} {problem}")
        labels[row["file"]] = int(row["label"])
    names = [p.name for p in paths]
    unlabelled, unknown = [n for n in names if n not in labels], sorted(set(labels) - set(names))
    if unlabelled or unknown:
        raise ValueError(f"{folder / 'labels.csv'} must hold one row per file of {folder / 'images'}; files without "
                         f"a row: {unlabelled[:5]}, rows without a file: {unknown[:5]}")
    images, masks = [], []
    for path in paths:
        candidates = [folder / "masks" / path.name] + [folder / "masks" / (path.stem + s) for s in _CT_SUFFIXES]
        mask_path = next((c for c in candidates if c.is_file()), None)
        if mask_path is None:
            raise missing_files("ct_contrast", root, f"{layout}\n(no mask for {path.name})")
        images.append(_ct_array(path, "slice"))
        masks.append(_ct_array(mask_path, "mask"))
        if masks[-1].shape != images[-1].shape:
            raise ValueError(f"the mask {str(mask_path)!r} has shape {masks[-1].shape}, "
                             f"its slice {images[-1].shape}")
    x = _ct_stack(images, paths)
    if (mean is None) != (std is None):
        raise ValueError("give both mean and std, or neither")
    if mean is not None:
        stats_from = "given"
        mean, std = (_validate.number(value[0] if isinstance(value, (tuple, list)) else value, label)
                     for value, label in ((mean, "mean"), (std, "std")))
        if not std > 0:
            raise ValueError(f"std must be > 0, got {std}")
    else:
        train = root / "train"
        if split != "train" and (train / "images").is_dir() and _ct_files(train):
            stats_from, train_paths = "train", _ct_files(train)
            reference = _ct_stack([_ct_array(p, "slice") for p in train_paths], train_paths)
        else:
            stats_from, reference = split, x
        mean = reference.double().mean().item()
        std = max(reference.double().std(unbiased=False).item(), 1e-8)
    x = ((x - mean) / std)[:, None]
    mask = torch.from_numpy(np.stack(masks) != 0)
    info = {"name": "ct_contrast", "n_classes": 2, "class_names": list(CT_CLASS_NAMES), "mean": (mean,),
            "std": (std,), "split": split, "stats_from": stats_from, "files": names}
    y = torch.tensor([labels[n] for n in names], dtype=torch.int64)
    return TensorData(x.float(), y, mask, info, {"boxes": tight_boxes(mask)})

"""Loaders for the papers' real datasets, read from ``data_dir`` in their published on-disk layouts.

Nothing is fetched unless ``download=True`` (torchvision datasets only). Image datasets are returned as torch
Datasets yielding (normalised tensor, label) with an ``info`` dict attached; SST-2, PAM, Boiler and the CT slices
(ct_contrast) are small and returned as :class:`TensorData`. Use :func:`to_tensors` to materialise the first n items
of an image dataset.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Subset

from faithlab import _validate

from ._core import TensorData, check_split, split_indices

# Per-channel statistics of the training images (values in [0, 1]).
CIFAR10_STATS = ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
CIFAR100_STATS = ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))
FASHION_MNIST_STATS = ((0.2860,), (0.3530,))
TINY_IMAGENET_STATS = ((0.4802, 0.4481, 0.3975), (0.2302, 0.2265, 0.2262))
IMAGENET_STATS = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def _root(data_dir: str | Path | None, name: str) -> Path:
    if data_dir is None:
        raise ValueError(f"data_dir is required for the real dataset {name!r} (a folder holding its files)")
    return Path(data_dir).expanduser()


def _missing(name: str, data_dir: Path, layout: str, downloadable: bool = False) -> FileNotFoundError:
    hint = "\nPass download=True to fetch it." if downloadable else ""
    where = f"{name}: files not found under data_dir={str(data_dir)!r}"
    return FileNotFoundError(f"{where}. Expected layout:\n{layout}{hint}")


def _no_download(name: str, download: bool) -> None:
    if download:
        raise ValueError(f"download=True is not supported for {name!r}; place its files under data_dir")


def _transform(mean: tuple, std: tuple, resize: int | None = None, crop: int | None = None):
    from torchvision import transforms as T

    steps = ([T.Resize(resize)] if resize else []) + ([T.CenterCrop(crop)] if crop else [])
    return T.Compose([*steps, T.ToTensor(), T.Normalize(mean, std)])


def _stats(default: tuple, mean: tuple | None, std: tuple | None) -> tuple[tuple, tuple]:
    return tuple(default[0] if mean is None else mean), tuple(default[1] if std is None else std)


def _tag(dataset: Dataset, **info: Any) -> Dataset:
    dataset.info = info  # type: ignore[attr-defined]
    return dataset


class ImageFiles(Dataset):
    """Images read with PIL (converted to RGB) from a list of (path, label) pairs, then ``transform``."""

    def __init__(self, samples: list[tuple[Path, int]], transform=None) -> None:
        self.samples = samples
        self.targets = [label for _, label in samples]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        from PIL import Image

        path, label = self.samples[index]
        with Image.open(path) as image:
            image = image.convert("RGB")
        return (self.transform(image) if self.transform else image), label


# ---------------------------------------------------------------------------------------------------- torchvision
def _torchvision(cls_name: str, name: str, folder: str, layout: str, stats: tuple, split: str, data_dir, download,
                 mean, std) -> Dataset:
    check_split(split)
    root = _root(data_dir, name)
    if not download and not (root / folder).exists():
        raise _missing(name, root, layout, downloadable=True)
    import torchvision

    mean, std = _stats(stats, mean, std)
    cls = getattr(torchvision.datasets, cls_name)
    ds = cls(str(root), train=split == "train", download=download, transform=_transform(mean, std))
    return _tag(ds, name=name, n_classes=len(ds.classes), class_names=list(ds.classes), mean=mean, std=std, split=split)


class ArrayImages(Dataset):
    """Images held as one (N, H, W, C) uint8 array (as torchvision's CIFAR datasets hold them): ``data``,
    ``targets`` and ``classes`` as there, items ``(transform(PIL image), label)``."""

    def __init__(self, data: np.ndarray, targets: list[int], classes: list[str], transform=None) -> None:
        self.data, self.targets, self.classes, self.transform = data, targets, classes, transform

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        from PIL import Image

        image = Image.fromarray(self.data[index])
        return (self.transform(image) if self.transform else image), self.targets[index]


# The CIFAR "binary version" (the files for C programs): fixed-size records, label byte(s) then 3072 pixel bytes
# (R, G, B planes of 32×32, row-major, as in the python version's ``data`` rows). No pickle involved.
_CIFAR_BINARY = {
    "cifar10": ("cifar-10-batches-bin", [f"data_batch_{i}.bin" for i in range(1, 6)], ["test_batch.bin"],
                "batches.meta.txt", 1),
    "cifar100": ("cifar-100-binary", ["train.bin"], ["test.bin"], "fine_label_names.txt", 2),
}


def _cifar(name: str, cls_name: str, folder: str, stats: tuple, split: str, data_dir, download, mean,
           std) -> Dataset:
    """CIFAR-10/100 from the python version (torchvision, md5-checked) or, when only it is present, the binary
    version (read here with numpy: fixed-size records, the label in the last label byte)."""
    check_split(split)
    root = _root(data_dir, name)
    binary, train_files, test_files, names_file, label_bytes = _CIFAR_BINARY[name]
    layout = (f"  data_dir/{folder}/ (the python version, md5-checked by torchvision), or\n"
              f"  data_dir/{binary}/{{{', '.join(train_files + test_files)}, {names_file}}} (the binary version)")
    if download or (root / folder).exists() or not (root / binary).is_dir():
        return _torchvision(cls_name, name, folder, layout, stats, split, data_dir, download, mean, std)
    base = root / binary
    files = [base / f for f in (train_files if split == "train" else test_files)]
    if not all(f.is_file() for f in [*files, base / names_file]):
        raise _missing(name, root, layout, downloadable=True)
    record = label_bytes + 3072
    parts = []
    for f in files:
        raw = np.fromfile(f, dtype=np.uint8)
        if raw.size == 0 or raw.size % record:
            raise ValueError(f"data_dir file {str(f)!r} is not a CIFAR binary file: its size {raw.size} is not a "
                             f"positive multiple of the record size {record} ({label_bytes} label byte(s) + 3072)")
        parts.append(raw.reshape(-1, record))
    rows = np.concatenate(parts)
    classes = [line.strip() for line in (base / names_file).read_text().splitlines() if line.strip()]
    targets = rows[:, label_bytes - 1].astype(np.int64).tolist()
    if max(targets) >= len(classes):
        raise ValueError(f"data_dir file {str(base / names_file)!r} names {len(classes)} classes, but the labels "
                         f"go up to {max(targets)}")
    images = np.ascontiguousarray(rows[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    mean, std = _stats(stats, mean, std)
    ds = ArrayImages(images, targets, classes, _transform(mean, std))
    return _tag(ds, name=name, n_classes=len(classes), class_names=classes, mean=mean, std=std, split=split)


def cifar10(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
            mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """CIFAR-10: (3, 32, 32) ToTensor + Normalize(CIFAR10_STATS); 50,000 train / 10,000 test.
    Layout: the python version data_dir/cifar-10-batches-py/{data_batch_1..5, test_batch, batches.meta} (read by
    torchvision, md5-checked: its files are pickles), or, when that folder is absent, the binary version
    data_dir/cifar-10-batches-bin/{data_batch_1..5.bin, test_batch.bin, batches.meta.txt} (no pickle)."""
    return _cifar("cifar10", "CIFAR10", "cifar-10-batches-py", CIFAR10_STATS, split, data_dir, download, mean, std)


def cifar100(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
             mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """CIFAR-100 (fine labels): (3, 32, 32) ToTensor + Normalize(CIFAR100_STATS).
    Layout: the python version data_dir/cifar-100-python/{train, test, meta} (read by torchvision, md5-checked), or,
    when that folder is absent, the binary version data_dir/cifar-100-binary/{train.bin, test.bin,
    fine_label_names.txt} (records: coarse label, fine label, 3072 pixels; no pickle)."""
    return _cifar("cifar100", "CIFAR100", "cifar-100-python", CIFAR100_STATS, split, data_dir, download, mean, std)


def fashion_mnist(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
                  mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """FashionMNIST via torchvision: (1, 28, 28) ToTensor + Normalize(FASHION_MNIST_STATS); 60,000 / 10,000.
    Layout: data_dir/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte (uncompressed idx files)."""
    layout = "  data_dir/FashionMNIST/raw/{train,t10k}-images-idx3-ubyte and {train,t10k}-labels-idx1-ubyte"
    return _torchvision("FashionMNIST", "fashion_mnist", "FashionMNIST/raw", layout, FASHION_MNIST_STATS, split,
                        data_dir, download, mean, std)


def eurosat(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False, seed: int = 0,
            test_fraction: float = 0.2, mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """EuroSAT RGB (27,000 64×64 images, 10 classes) via torchvision, ToTensor + Normalize.

    EuroSAT has no official split: a stratified split from ``seed`` (:func:`split_indices`, 80/20 by default) is
    returned as a ``Subset``. No canonical RGB statistics exist; ImageNet's are used unless mean/std are given.
    Layout: ``data_dir/eurosat/2750/<ClassName>/*.jpg`` (torchvision's).
    """
    import torchvision

    check_split(split)
    root = _root(data_dir, "eurosat")
    if not download and not (root / "eurosat" / "2750").is_dir():
        raise _missing("eurosat", root, "  data_dir/eurosat/2750/<ClassName>/<ClassName>_<k>.jpg", downloadable=True)
    mean, std = _stats(IMAGENET_STATS, mean, std)
    full = torchvision.datasets.EuroSAT(str(root), transform=_transform(mean, std), download=download)
    parts = dict(zip(("train", "test"), split_indices(len(full), seed=seed, test_fraction=test_fraction,
                                                       labels=torch.tensor(full.targets))))
    ds = Subset(full, parts[split].tolist())
    return _tag(ds, name="eurosat", n_classes=len(full.classes), class_names=list(full.classes), mean=mean, std=std,
                split=split, seed=seed, test_fraction=test_fraction)


# --------------------------------------------------------------------------------------------- ImageNet family
def tiny_imagenet(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False,
                  mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """Tiny-ImageNet (200 classes, 64×64): ``train`` = train/, ``test`` = the labelled val/ (the test/ folder has
    no labels). ToTensor + Normalize(TINY_IMAGENET_STATS); class index = position in sorted wnids.

    Layout (the official zip), data_dir/ or data_dir/tiny-imagenet-200/ holding: wnids.txt, [words.txt],
    train/<wnid>/images/*.JPEG, val/images/*.JPEG and val/val_annotations.txt (file, wnid, x0, y0, x1, y1).
    The test split also carries ``boxes`` (N, 4) from val_annotations.txt, in 64×64 pixel coordinates.
    """
    check_split(split)
    _no_download("tiny_imagenet", download)
    root = _root(data_dir, "tiny_imagenet")
    base = root / "tiny-imagenet-200" if (root / "tiny-imagenet-200").is_dir() else root
    layout = ("  data_dir[/tiny-imagenet-200]/wnids.txt, train/<wnid>/images/<wnid>_<k>.JPEG,\n"
              "  val/images/val_<k>.JPEG, val/val_annotations.txt")
    wnids_file = base / "wnids.txt"
    if not wnids_file.is_file():
        raise _missing("tiny_imagenet", root, layout)
    wnids = sorted(line.strip() for line in wnids_file.read_text().splitlines() if line.strip())
    index = {w: i for i, w in enumerate(wnids)}
    boxes = None
    if split == "train":
        samples = [(p, index[w]) for w in wnids for p in sorted((base / "train" / w / "images").glob("*.JPEG"))]
    else:
        annotations = base / "val" / "val_annotations.txt"
        if not annotations.is_file():
            raise _missing("tiny_imagenet", root, layout)
        rows = [line.split("\t") for line in annotations.read_text().splitlines() if line.strip()]
        samples = [(base / "val" / "images" / row[0], index[row[1]]) for row in rows]
        boxes = torch.tensor([[int(v) for v in row[2:6]] for row in rows])
    if not samples:
        raise _missing("tiny_imagenet", root, layout)
    words_file = base / "words.txt"
    words = dict(line.split("\t", 1) for line in words_file.read_text().splitlines() if "\t" in line) \
        if words_file.is_file() else {}
    mean, std = _stats(TINY_IMAGENET_STATS, mean, std)
    ds = ImageFiles(samples, _transform(mean, std))
    if boxes is not None:
        ds.boxes = boxes
    return _tag(ds, name="tiny_imagenet", n_classes=len(wnids), class_names=[words.get(w, w) for w in wnids],
                wnids=wnids, mean=mean, std=std, split=split)


def imagenet_val(*, split: str = "test", data_dir: str | Path | None = None, download: bool = False,
                 resize: int = 256, crop: int = 224, mean: tuple | None = None, std: tuple | None = None) -> Dataset:
    """ILSVRC2012 validation images (the only split: ``split="test"``) as a torchvision ImageFolder: Resize(256),
    CenterCrop(224), ToTensor, Normalize(IMAGENET_STATS). Class index = position in sorted wnid folder names (the
    standard ImageNet index when all 1,000 folders are present).
    Layout: ``data_dir/val/<wnid>/*.JPEG`` (e.g. after the usual valprep reorganisation)."""
    import torchvision

    check_split(split, ("test",))
    _no_download("imagenet_val", download)
    root = _root(data_dir, "imagenet_val")
    if not (root / "val").is_dir():
        raise _missing("imagenet_val", root, "  data_dir/val/<wnid>/<name>.JPEG  (one folder per class)")
    mean, std = _stats(IMAGENET_STATS, mean, std)
    ds = torchvision.datasets.ImageFolder(str(root / "val"), transform=_transform(mean, std, resize, crop))
    return _tag(ds, name="imagenet_val", n_classes=len(ds.classes), class_names=list(ds.classes), mean=mean, std=std,
                split=split)


_FOLDER_SPLITS = ("train", "val", "test")


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
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


def _box_rows(path: Path, files: list[str], crop: int) -> torch.Tensor:
    """Boxes (N, 4) int64 of ``files`` (paths relative to the split folder) from a ``file,x0,y0,x1,y1`` CSV."""
    rows = _read_csv(path, ("file", "x0", "y0", "x1", "y1"))
    boxes: dict[str, list[int]] = {}
    for row in rows:
        name = row["file"].replace("\\", "/")
        if name in boxes:
            raise ValueError(f"{path}: {name!r} has more than one row (one box per image)")
        try:
            box = [int(row[k]) for k in ("x0", "y0", "x1", "y1")]
        except ValueError:
            raise ValueError(f"{path}: the box of {name!r} must be four integers, got {row}") from None
        x0, y0, x1, y1 = box
        if not (0 <= x0 < x1 <= crop and 0 <= y0 < y1 <= crop):
            raise ValueError(f"{path}: the box of {name!r} must satisfy 0 <= x0 < x1 <= {crop} and "
                             f"0 <= y0 < y1 <= {crop} (end exclusive, in the {crop}x{crop} crop), got {box}")
        boxes[name] = box
    unlisted, unknown = [f for f in files if f not in boxes], sorted(set(boxes) - set(files))
    if unlisted or unknown:
        raise ValueError(f"{path} must hold one row per image of the split (file = path relative to the split "
                         f"folder, e.g. {files[0]!r}); images without a row: {unlisted[:5]}, rows without an image: "
                         f"{unknown[:5]}")
    return torch.tensor([boxes[f] for f in files], dtype=torch.int64)


def imagenet_vehicles(*, split: str = "test", data_dir: str | Path | None = None, download: bool = False,
                      resize: int = 256, crop: int = 224, mean: tuple | None = None,
                      std: tuple | None = None) -> Dataset:
    """The Few-class Fidelity paper's 3-class ImageNet "vehicles" task (Kaggle "imagenet-3classes": private,
    two-wheeled, trucks-and-services) as a torchvision ImageFolder: Resize(256), CenterCrop(224), ToTensor,
    Normalize(IMAGENET_STATS), as :func:`imagenet_val`. Class index = position in the sorted class folder names
    (``info['class_names']``), whatever the folders are called.

    Layout: data_dir/<split>/<class>/<name>.jpeg (or .jpg, .png: any format ImageFolder reads), split one of
    train, val, test. Optional ground-truth boxes: data_dir/<split>_boxes.csv, a comma-separated file with the
    header ``file,x0,y0,x1,y1`` and one row per image of the split: ``file`` the image's path relative to
    data_dir/<split> with forward slashes (e.g. ``private/img_001.jpeg``), the box in pixel coordinates of the
    crop×crop centre crop (the model's input), x0, y0 inclusive and x1, y1 exclusive (``boxes`` of
    :func:`canvas_digits` and :func:`faithlab.metrics` localisation). When the file exists the dataset carries
    ``boxes`` (N, 4) int64 in sample order; a missing or extra row, or a box outside the crop, is a ValueError.
    """
    import torchvision

    check_split(split, _FOLDER_SPLITS)
    _no_download("imagenet_vehicles", download)
    _validate.positive_int(resize, "resize")
    _validate.positive_int(crop, "crop")
    root = _root(data_dir, "imagenet_vehicles")
    folder = root / split
    if not folder.is_dir() or not any(p.is_dir() for p in folder.iterdir()):
        raise _missing("imagenet_vehicles", root,
                       f"  data_dir/{split}/<class>/<name>.jpeg|.png  (one folder per class, sorted = class index),\n"
                       f"  optional data_dir/{split}_boxes.csv with header file,x0,y0,x1,y1 (file relative to "
                       f"data_dir/{split})")
    mean, std = _stats(IMAGENET_STATS, mean, std)
    ds = torchvision.datasets.ImageFolder(str(folder), transform=_transform(mean, std, resize, crop))
    box_file = root / f"{split}_boxes.csv"
    if box_file.is_file():
        ds.boxes = _box_rows(box_file, [Path(p).relative_to(folder).as_posix() for p, _ in ds.samples], crop)
    return _tag(ds, name="imagenet_vehicles", n_classes=len(ds.classes), class_names=list(ds.classes), mean=mean,
                std=std, split=split, resize=resize, crop=crop)


# ------------------------------------------------------------------------------------------------------ CT slices
_CT_SUFFIXES = (".npy", ".png")


def _ct_array(path: Path, what: str) -> np.ndarray:
    """One 2-D slice or mask from an .npy file (``allow_pickle=False``) or a PNG (8 or 16 bit grey; colour → grey)."""
    if path.suffix == ".npy":
        array = _npy(path, f"the {what} as a plain numeric array, np.save({str(path)!r}, np.asarray(a, "
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
    from ._embedded import CT_CLASS_NAMES, _tight_boxes

    check_split(split, _FOLDER_SPLITS)
    _no_download("ct_contrast", download)
    root = _root(data_dir, "ct_contrast")
    folder = root / split
    layout = (f"  data_dir/{split}/images/<name>.npy|.png  (one 2-D slice each),\n"
              f"  data_dir/{split}/masks/<name>.npy|.png  (same name or stem; nonzero = organ),\n"
              f"  data_dir/{split}/labels.csv  (header file,label; label 1 = with contrast, 0 = without)")
    if not (folder / "images").is_dir() or not (folder / "masks").is_dir() or not (folder / "labels.csv").is_file():
        raise _missing("ct_contrast", root, layout)
    paths = _ct_files(folder)
    if not paths:
        raise _missing("ct_contrast", root, layout)
    rows = _read_csv(folder / "labels.csv", ("file", "label"))
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
            raise _missing("ct_contrast", root, f"{layout}\n(no mask for {path.name})")
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
    info = dict(name="ct_contrast", n_classes=2, class_names=list(CT_CLASS_NAMES), mean=(mean,), std=(std,),
                split=split, stats_from=stats_from, files=names)
    y = torch.tensor([labels[n] for n in names], dtype=torch.int64)
    return TensorData(x.float(), y, mask, info, {"boxes": _tight_boxes(mask)})


# ---------------------------------------------------------------------------------------------------------- SST-2
def _read_glue_tsv(path: Path) -> tuple[list[str], list[int]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    if "sentence" not in header or "label" not in header:
        raise ValueError(f"{path}: the header must name the columns 'sentence' and 'label', got {header}")
    text, label = header.index("sentence"), header.index("label")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    return [row[text] for row in rows], [int(row[label]) for row in rows]


def sst2(*, split: str = "train", data_dir: str | Path | None = None, download: bool = False, max_len: int = 64,
         min_freq: int = 1, max_vocab: int | None = None) -> TensorData:
    """SST-2 (GLUE): ``train`` = train.tsv (67,349), ``test`` = dev.tsv (872; GLUE's test.tsv has no labels).

    Tokens: lower-cased whitespace split. Vocabulary from train.tsv only: tokens with count ≥ min_freq, most
    frequent first (ties alphabetical), at most max_vocab, ids from 2 (0 = pad, 1 = unk). Sequences truncated
    to max_len and right-padded with 0.
    Layout: data_dir/ or data_dir/SST-2/ holding train.tsv and dev.tsv with header "sentence<TAB>label".

    Returns TensorData: x (N, max_len) int64, y (N,) (0 negative, 1 positive); extras ``lengths`` (N,);
    info ``vocab`` (list: token of id 2 + i).
    """
    check_split(split)
    _no_download("sst2", download)
    _validate.positive_int(max_len, "max_len")
    _validate.positive_int(min_freq, "min_freq")
    if max_vocab is not None:
        _validate.positive_int(max_vocab, "max_vocab")
    root = _root(data_dir, "sst2")
    base = root / "SST-2" if (root / "SST-2").is_dir() else root
    files = {"train": base / "train.tsv", "test": base / "dev.tsv"}
    if not (files["train"].is_file() and files[split].is_file()):
        raise _missing("sst2", root, "  data_dir[/SST-2]/train.tsv and dev.tsv, header 'sentence\\tlabel'")
    counts = Counter(t for sentence in _read_glue_tsv(files["train"])[0] for t in sentence.lower().split())
    vocab = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))[:max_vocab]
    ids = {t: i + 2 for i, t in enumerate(vocab)}
    sentences, labels = _read_glue_tsv(files[split])
    x = torch.zeros(len(sentences), max_len, dtype=torch.int64)
    lengths = torch.zeros(len(sentences), dtype=torch.int64)
    for i, sentence in enumerate(sentences):
        encoded = [ids.get(t, 1) for t in sentence.lower().split()[:max_len]]
        x[i, : len(encoded)] = torch.tensor(encoded, dtype=torch.int64)
        lengths[i] = len(encoded)
    info = dict(name="sst2", n_classes=2, class_names=["negative", "positive"], mean=None, std=None, split=split,
                vocab=vocab, vocab_size=len(vocab) + 2, pad_id=0, unk_id=1, max_len=max_len)
    return TensorData(x, torch.tensor(labels, dtype=torch.int64), None, info, {"lengths": lengths})


# --------------------------------------------------------------------------------------------------- PAM / Boiler
_SERIES_SPLITS = ("train", "val", "test")


def _pickled(path: Path, conversion: str) -> ValueError:
    return ValueError(
        f"data_dir file {str(path)!r} holds Python objects (pickled data), which faithlab never loads because "
        f"unpickling can run code; if it is a copy you trust, convert it once outside faithlab into {conversion}")


def _npy(path: Path, conversion: str) -> np.ndarray:
    """The array in an .npy file, read with ``allow_pickle=False``: an object array would be unpickled."""
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as err:  # numpy's refusals all mention pickling; anything else is a damaged file
        if "pickle" in str(err):
            raise _pickled(path, conversion) from None
        raise ValueError(f"data_dir file {str(path)!r} is not a readable .npy array: {err}") from None
    if not isinstance(array, np.ndarray):  # np.load opens a zip archive whatever the file is called
        array.close()
        raise ValueError(f"data_dir file {str(path)!r} is an .npz archive, expected a single .npy array")
    return array


def _npz_parts(path: Path, keys: tuple[str, ...]) -> list[np.ndarray]:
    """The named arrays of an .npz archive, read with ``allow_pickle=False``: an object array would be unpickled."""
    conversion = f"np.savez(path, {', '.join(f'{k}=<int array>' for k in keys)})"
    try:
        archive = np.load(path, allow_pickle=False)
    except ValueError as err:  # a pickle file with an .npz name
        if "pickle" in str(err):
            raise _pickled(path, conversion) from None
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
                raise _pickled(path, conversion) from None
            raise


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
    _no_download("pam", download)
    _validate.positive_int(split_no, "split_no")
    root = _root(data_dir, "pam")
    split_file = root / "splits" / f"PAMAP2_split_{split_no}.npz"
    if not split_file.is_file():
        split_file = split_file.with_suffix(".npy")
    files = [root / "processed_data" / "PTdict_list.npy", root / "processed_data" / "arr_outcomes.npy", split_file]
    if not all(f.is_file() for f in files):
        raise _missing("pam", root, "  data_dir/processed_data/{PTdict_list.npy, arr_outcomes.npy},\n"
                                    f"  data_dir/splits/PAMAP2_split_{split_no}.npz (or PAMAP2_split_{split_no}.npy)")

    # what an error message asks the owner of a trusted copy to save instead (the unpickling is theirs, not ours)
    stacked = "the same values stacked into one plain {} array, saved with np.save to {!r}"
    x_all = torch.from_numpy(_npy(files[0], stacked.format("float32", str(files[0])))).float()
    outcomes = _npy(files[1], stacked.format("int64", str(files[1])))
    y_all = torch.from_numpy(outcomes.reshape(len(outcomes), -1)[:, -1].astype(np.int64))
    keys = ("idx_train", "idx_val", "idx_test")
    if split_file.suffix == ".npz":
        split_parts = _npz_parts(split_file, keys)
    else:
        to_npz = (f"its three index arrays (train, val, test) saved with np.savez to "
                  f"{str(split_file.with_suffix('.npz'))!r} as idx_train, idx_val and idx_test")
        split_parts = list(_npy(split_file, to_npz))
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
    info = dict(name="pam", n_classes=n_classes, class_names=[str(c) for c in range(n_classes)],
                mean=tuple(mean.tolist()), std=tuple(std.tolist()), split=split, split_no=split_no)
    return TensorData(x, y_all[parts[split]], None, info)


def _torch_tensors(path: Path, conversion: str):
    """``torch.load(weights_only=True)``: tensors and plain containers only, never arbitrary pickled objects."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise
    # The weights-only loader refuses anything but tensors and plain containers (UnpicklingError; numpy arrays are
    # refused too), a damaged file fails as RuntimeError or EOFError: one ValueError names the file either way.
    except Exception as err:  # noqa: BLE001
        raise ValueError(
            f"data_dir file {str(path)!r} is not a plain tensor file and is not loaded ({_validate.load_refusal(err)}); if it "
            f"is a trusted file holding numpy arrays or other objects, re-save it once outside faithlab as tensors: "
            f"{conversion}"
        ) from err


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
    _no_download("boiler", download)
    _validate.positive_int(split_no, "split_no")
    root = _root(data_dir, "boiler")
    files = [root / "xfull.pt", root / "yfull.pt", root / f"split={split_no}.pt"]
    if not all(f.is_file() for f in files):
        layout = f"  data_dir/xfull.pt (T, N, C), data_dir/yfull.pt (N,), data_dir/split={split_no}.pt"
        raise _missing("boiler", root, layout)

    def convert(path: Path, expression: str) -> str:  # what to save instead (the unpickling is the owner's, not ours)
        return f"torch.save({expression}, {str(path)!r}), with `a` its current content"

    x_all = _torch_tensors(files[0], convert(files[0], "torch.as_tensor(a).float()"))
    y_all = _torch_tensors(files[1], convert(files[1], "torch.as_tensor(a).long()"))
    split_parts = _torch_tensors(files[2], convert(files[2], "tuple(torch.as_tensor(i).long() for i in a)"))
    index = torch.as_tensor(np.asarray(split_parts[_SERIES_SPLITS.index(split)], dtype=np.int64))
    x = torch.as_tensor(x_all).float().permute(1, 0, 2)[index]
    y_all = torch.as_tensor(y_all).long().flatten()
    n_classes = int(y_all.max()) + 1
    info = dict(name="boiler", n_classes=n_classes, class_names=[str(c) for c in range(n_classes)],
                mean=(0.0,) * x.shape[2], std=(1.0,) * x.shape[2], split=split, split_no=split_no)
    return TensorData(x, y_all[index], None, info)

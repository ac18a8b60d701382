"""Loaders of the real image datasets: CIFAR-10/100, FashionMNIST and EuroSAT (torchvision's layouts, CIFAR also in its
binary version read without pickle), Tiny-ImageNet, the ILSVRC2012 validation images and Few-class Fidelity's
3-class ImageNet vehicles task. Each returns a torch Dataset yielding (normalised tensor, label) with an ``info`` dict
attached (:func:`faithlab.data.to_tensors` materialises the first n items)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Subset

from faithlab import _validate

from .._core import check_split, split_indices
from ._files import FOLDER_SPLITS, data_root, missing_files, no_download, read_csv

# Per-channel statistics of the training images (values in [0, 1]).
CIFAR10_STATS = ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))
CIFAR100_STATS = ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))
FASHION_MNIST_STATS = ((0.2860,), (0.3530,))
TINY_IMAGENET_STATS = ((0.4802, 0.4481, 0.3975), (0.2302, 0.2265, 0.2262))
IMAGENET_STATS = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


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
    root = data_root(data_dir, name)
    if not download and not (root / folder).exists():
        raise missing_files(name, root, layout, downloadable=True)
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
    root = data_root(data_dir, name)
    binary, train_files, test_files, names_file, label_bytes = _CIFAR_BINARY[name]
    layout = (f"  data_dir/{folder}/ (the python version, md5-checked by torchvision), or\n"
              f"  data_dir/{binary}/{{{', '.join(train_files + test_files)}, {names_file}}} (the binary version)")
    if download or (root / folder).exists() or not (root / binary).is_dir():
        return _torchvision(cls_name, name, folder, layout, stats, split, data_dir, download, mean, std)
    base = root / binary
    files = [base / f for f in (train_files if split == "train" else test_files)]
    if not all(f.is_file() for f in [*files, base / names_file]):
        raise missing_files(name, root, layout, downloadable=True)
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
    root = data_root(data_dir, "eurosat")
    if not download and not (root / "eurosat" / "2750").is_dir():
        raise missing_files("eurosat", root, "  data_dir/eurosat/2750/<ClassName>/<ClassName>_<k>.jpg",
                            downloadable=True)
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
    no_download("tiny_imagenet", download)
    root = data_root(data_dir, "tiny_imagenet")
    base = root / "tiny-imagenet-200" if (root / "tiny-imagenet-200").is_dir() else root
    layout = ("  data_dir[/tiny-imagenet-200]/wnids.txt, train/<wnid>/images/<wnid>_<k>.JPEG,\n"
              "  val/images/val_<k>.JPEG, val/val_annotations.txt")
    wnids_file = base / "wnids.txt"
    if not wnids_file.is_file():
        raise missing_files("tiny_imagenet", root, layout)
    wnids = sorted(line.strip() for line in wnids_file.read_text().splitlines() if line.strip())
    index = {w: i for i, w in enumerate(wnids)}
    boxes = None
    if split == "train":
        samples = [(p, index[w]) for w in wnids for p in sorted((base / "train" / w / "images").glob("*.JPEG"))]
    else:
        annotations = base / "val" / "val_annotations.txt"
        if not annotations.is_file():
            raise missing_files("tiny_imagenet", root, layout)
        rows = [line.split("\t") for line in annotations.read_text().splitlines() if line.strip()]
        samples = [(base / "val" / "images" / row[0], index[row[1]]) for row in rows]
        boxes = torch.tensor([[int(v) for v in row[2:6]] for row in rows])
    if not samples:
        raise missing_files("tiny_imagenet", root, layout)
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
    no_download("imagenet_val", download)
    root = data_root(data_dir, "imagenet_val")
    if not (root / "val").is_dir():
        raise missing_files("imagenet_val", root, "  data_dir/val/<wnid>/<name>.JPEG  (one folder per class)")
    mean, std = _stats(IMAGENET_STATS, mean, std)
    ds = torchvision.datasets.ImageFolder(str(root / "val"), transform=_transform(mean, std, resize, crop))
    return _tag(ds, name="imagenet_val", n_classes=len(ds.classes), class_names=list(ds.classes), mean=mean, std=std,
                split=split)



def _box_rows(path: Path, files: list[str], crop: int) -> torch.Tensor:
    """Boxes (N, 4) int64 of ``files`` (paths relative to the split folder) from a ``file,x0,y0,x1,y1`` CSV."""
    rows = read_csv(path, ("file", "x0", "y0", "x1", "y1"))
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

    check_split(split, FOLDER_SPLITS)
    no_download("imagenet_vehicles", download)
    _validate.positive_int(resize, "resize")
    _validate.positive_int(crop, "crop")
    root = data_root(data_dir, "imagenet_vehicles")
    folder = root / split
    if not folder.is_dir() or not any(p.is_dir() for p in folder.iterdir()):
        raise missing_files("imagenet_vehicles", root,
                            f"  data_dir/{split}/<class>/<name>.jpeg|.png  (one folder per class, sorted = class "
                            f"index),\n  optional data_dir/{split}_boxes.csv with header file,x0,y0,x1,y1 (file "
                            f"relative to data_dir/{split})")
    mean, std = _stats(IMAGENET_STATS, mean, std)
    ds = torchvision.datasets.ImageFolder(str(folder), transform=_transform(mean, std, resize, crop))
    box_file = root / f"{split}_boxes.csv"
    if box_file.is_file():
        ds.boxes = _box_rows(box_file, [Path(p).relative_to(folder).as_posix() for p, _ in ds.samples], crop)
    return _tag(ds, name="imagenet_vehicles", n_classes=len(ds.classes), class_names=list(ds.classes), mean=mean,
                std=std, split=split, resize=resize, crop=crop)

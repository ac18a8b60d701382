"""The ``paper-dry`` profile's fixtures: tiny fake copies of the papers' datasets in their published on-disk formats,
and random-weight models of the ``paper`` profile's architectures at their real sizes: what the ``paper-dry`` profile
reads (``make paper-dry``) and what the loader tests write. It lives with the tests' support modules, not in
:mod:`faithlab.data` nor in the study: it writes test fixtures for the study's paper path, and nothing in the library
or the study reads it. ``python tests/support/paper_dry.py <folder>`` writes the fake data folder (``make paper-dry``).

Writers, one per format read by :mod:`faithlab.data` (each writes under the folder it is given and nothing else):
:func:`write_image` (JPEG/PNG), :func:`write_image_folder` (ImageFolder layouts: ImageNet val, the Few-class
vehicles), :func:`write_boxes_csv`, :func:`write_idx` and :func:`write_fashion_mnist`, :func:`write_cifar_binary`,
:func:`write_eurosat`, :func:`write_tiny_imagenet`, :func:`write_sst2`, :func:`write_pam`, :func:`write_boiler`,
:func:`write_ct_split`, and :func:`put_in_hf_cache` (a file stored as huggingface_hub stores it). CIFAR's python
version is a pickle that torchvision only reads after an md5 check, so a fake copy of it cannot be read by the
loader: the fakes use CIFAR's binary version, which :func:`faithlab.data.cifar10` / ``cifar100`` also read.

:func:`write_paper_dry` writes the whole fake data folder of ``notebooks/params/paper-dry.yaml``. The images are
textured noise tinted with a colour per class (not a stand-in for any result), the weights random (seeded) with one
change: the models of the notebooks that need correctly classified images (Few-class Fidelity's XAI set, SaCo's
case study) get a classifier bias that makes them predict class 0 (a single logit: positive) on every fake image.
Everything is drawn from ``seed`` (numpy Generators; model initialisation inside ``torch.random.fork_rng``), so the
folder is the same on every machine with the same library versions. Nothing is pickled, and weights are plain
``torch.save(state_dict)`` files that the project reads with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from faithlab import _validate
from faithlab._optional import require

__all__ = ["solid", "texture", "write_image", "write_image_folder", "write_boxes_csv", "write_idx",
           "write_fashion_mnist", "write_cifar_binary", "write_eurosat", "write_tiny_imagenet", "write_sst2",
           "write_pam", "write_boiler", "write_ct_split", "put_in_hf_cache", "random_model", "write_paper_dry",
           "IMAGENET_WNIDS", "VEHICLE_CLASSES", "EUROSAT_CLASSES", "TORCHVISION_MODELS", "FEWCLASS_MODELS",
           "TIMM_MODELS", "BIAS_QUANTUM"]

IMAGENET_WNIDS = ("n01440764", "n01443537", "n01484850")
"""The fake ImageNet validation folder's classes (the first three ILSVRC2012 wnids: class index 0, 1, 2)."""
VEHICLE_CLASSES = ("private", "two-wheeled", "trucks-and-services")
"""The Few-class Fidelity vehicles task's class folders (Kaggle imagenet-3classes)."""
EUROSAT_CLASSES = ("AnnualCrop", "Forest", "HerbaceousVegetation", "Highway", "Industrial", "Pasture",
                   "PermanentCrop", "Residential", "River", "SeaLake")
TORCHVISION_MODELS: dict[str, dict] = {
    "resnet18": {}, "vgg16": {}, "alexnet": {},
    "googlenet": {"aux_logits": False, "transform_input": True, "init_weights": False},
    "mobilenet_v3_large": {}, "densenet161": {},
}
"""TRACE's six ImageNet classifiers and the builder arguments of their published form (GoogLeNet's DEFAULT weights
come without the auxiliary heads and with ``transform_input``); saved as ``torchvision/<name>.pt``."""
FEWCLASS_MODELS: dict[str, dict] = {
    "resnet18_vehicles": {"arch": "resnet18", "source": "torchvision", "config": {"num_classes": 3}},
    "resnet50_ct": {"arch": "resnet50", "source": "timm", "config": {"num_classes": 1, "in_chans": 1}},
    "xception_ct": {"arch": "legacy_xception", "source": "timm", "config": {"num_classes": 1, "in_chans": 1}},
}
"""Few-class Fidelity's models (``fewclass/models/<key>.pt``), as the ``paper`` profile's settings build them; its
DenseNet-121 is left out (the dry run does not use it: 804 candidate images per XAI image cost minutes on a CPU,
and TRACE's DenseNet-161 runs torchvision's DenseNet code)."""
TIMM_MODELS = ("vit_base_patch16_224.augreg_in21k_ft_in1k", "vit_tiny_patch16_224.augreg_in21k_ft_in1k")
"""The timm ViTs put in the fake Hugging Face cache: SaCo's ViT-B/16, and ViT-Ti/16 (the same timm class and
conversion at a twelfth of the cost) for the notebook that explains images twelve ways with five metrics each."""

BIAS_QUANTUM = 2.0 ** -8
"""The grid of :func:`random_model`'s classifier-bias steps (about 0.004): far above the few-ULP differences between
float summation orders of logits of order 1-100, far below the margin of 1 it aims for."""


def _seed(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a non-negative int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value}")
    return value


_SOURCE_HASH = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
_STAMP = "paper-dry.json"


# ------------------------------------------------------------------------------------------------------- images
def solid(colour: Sequence[int], *, size: tuple[int, int] = (64, 64)) -> np.ndarray:
    """A (H, W, 3) uint8 image of one RGB ``colour``; ``size`` is (width, height) as PIL gives it."""
    width, height = size
    return np.broadcast_to(np.asarray(colour, dtype=np.uint8), (height, width, 3)).copy()


def texture(rng: np.random.Generator, size: tuple[int, int], *, colour: Sequence[int] = (128, 128, 128),
            channels: int = 3, cells: int = 6) -> np.ndarray:
    """Smooth random texture (a ``cells``² grid of random values, bilinearly upsampled, plus pixel noise) tinted
    towards ``colour``: (H, W, channels) uint8 (``size`` = (width, height)), or (H, W) when ``channels`` is 1."""
    from PIL import Image

    width, height = size
    coarse = rng.uniform(0, 255, size=(cells, cells, channels)).astype(np.uint8)
    up = [np.asarray(Image.fromarray(coarse[..., c]).resize((width, height), Image.BILINEAR), dtype=np.float64)
          for c in range(channels)]
    field = np.stack(up, axis=-1) + rng.normal(0.0, 12.0, size=(height, width, channels))
    tint = np.asarray(colour[:channels], dtype=np.float64)
    image = np.clip(0.5 * field + 0.5 * tint, 0, 255).astype(np.uint8)
    return image[..., 0] if channels == 1 else image


def _colour(c: int) -> tuple[int, int, int]:
    """A distinct colour per class index."""
    palette = [(200, 40, 40), (40, 180, 60), (50, 60, 210), (220, 200, 40), (160, 60, 190), (40, 190, 200),
               (230, 130, 30), (120, 120, 120), (250, 250, 250), (20, 20, 20)]
    r, g, b = palette[c % len(palette)]
    shift = 17 * (c // len(palette))
    return ((r + shift) % 256, (g + 2 * shift) % 256, (b + 3 * shift) % 256)


def write_image(path: str | os.PathLike, image: np.ndarray, *, quality: int = 100) -> Path:
    """Save a uint8 (H, W, 3) / (H, W) or uint16 (H, W) array; the format follows the suffix (.jpg/.jpeg: JPEG at
    ``quality``, .png: PNG). Parent folders are created."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    picture = Image.fromarray(np.asarray(image))
    if path.suffix.lower() in (".jpg", ".jpeg"):
        picture.save(path, "JPEG", quality=quality)
    elif path.suffix.lower() == ".png":
        picture.save(path, "PNG")
    else:
        raise ValueError(f"path must end in .jpg, .jpeg or .png, got {str(path)!r}")
    return path


def write_image_folder(folder: str | os.PathLike, images: Mapping[str, Mapping[str, np.ndarray]]) -> Path:
    """An ImageFolder tree: ``folder/<class>/<file name>`` for ``images`` ``{class: {file name: array}}``."""
    folder = Path(folder)
    for cls, files in images.items():
        for name, array in files.items():
            write_image(folder / cls / name, array)
    return folder


def write_boxes_csv(path: str | os.PathLike, boxes: Mapping[str, Sequence[int]]) -> Path:
    """A ``file,x0,y0,x1,y1`` CSV (as :func:`faithlab.data.imagenet_vehicles` reads) for ``{file: box}``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ["file,x0,y0,x1,y1", *(f"{name},{','.join(str(int(v)) for v in box)}" for name, box in boxes.items())]
    path.write_text("\n".join(rows) + "\n")
    return path


# --------------------------------------------------------------------------------------- torchvision formats
def write_idx(path: str | os.PathLike, array: np.ndarray) -> Path:
    """An uncompressed idx file of unsigned bytes (MNIST/FashionMNIST's format)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    array = np.asarray(array)
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())
    return path


def write_fashion_mnist(data_dir: str | os.PathLike, *, train: tuple[np.ndarray, np.ndarray],
                        test: tuple[np.ndarray, np.ndarray]) -> Path:
    """data_dir/FashionMNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte from (images (N, 28, 28), labels)."""
    raw = Path(data_dir) / "FashionMNIST" / "raw"
    for prefix, (images, labels) in (("train", train), ("t10k", test)):
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images)
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels)
    return raw


def write_cifar_binary(data_dir: str | os.PathLike, name: str, *, train: tuple[np.ndarray, np.ndarray],
                       test: tuple[np.ndarray, np.ndarray], class_names: Sequence[str]) -> Path:
    """CIFAR's binary version from (images (N, 32, 32, 3) uint8, labels): ``name="cifar10"`` →
    data_dir/cifar-10-batches-bin/{data_batch_1..5.bin (the train images split in five), test_batch.bin,
    batches.meta.txt}; ``"cifar100"`` → data_dir/cifar-100-binary/{train.bin, test.bin, fine_label_names.txt,
    coarse_label_names.txt} with coarse label = fine // 5."""
    _validate.one_of(name, "name", ("cifar10", "cifar100"))

    def records(images: np.ndarray, labels: np.ndarray) -> bytes:
        images, labels = np.asarray(images, dtype=np.uint8), np.asarray(labels, dtype=np.int64)
        if images.shape[1:] != (32, 32, 3) or len(images) != len(labels):
            raise ValueError(f"images must be (N, 32, 32, 3) with N labels, got {images.shape} and {labels.shape}")
        pixels = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)
        heads = labels[:, None] if name == "cifar10" else np.stack([labels // 5, labels], axis=1)
        return np.concatenate([heads.astype(np.uint8), pixels], axis=1).tobytes()

    folder = Path(data_dir) / ("cifar-10-batches-bin" if name == "cifar10" else "cifar-100-binary")
    folder.mkdir(parents=True, exist_ok=True)
    if name == "cifar10":
        parts = np.array_split(np.arange(len(train[0])), 5)
        for i, part in enumerate(parts, start=1):
            (folder / f"data_batch_{i}.bin").write_bytes(records(train[0][part], np.asarray(train[1])[part]))
        (folder / "test_batch.bin").write_bytes(records(*test))
        (folder / "batches.meta.txt").write_text("\n".join(class_names) + "\n")
    else:
        (folder / "train.bin").write_bytes(records(*train))
        (folder / "test.bin").write_bytes(records(*test))
        (folder / "fine_label_names.txt").write_text("\n".join(class_names) + "\n")
        (folder / "coarse_label_names.txt").write_text("\n".join(f"superclass{i}" for i in range(20)) + "\n")
    return folder


def write_eurosat(data_dir: str | os.PathLike, images: Mapping[str, Sequence[np.ndarray]]) -> Path:
    """data_dir/eurosat/2750/<ClassName>/<ClassName>_<k>.jpg (k from 1) for ``{class name: [arrays]}``."""
    folder = Path(data_dir) / "eurosat" / "2750"
    for cls, arrays in images.items():
        for k, array in enumerate(arrays, start=1):
            write_image(folder / cls / f"{cls}_{k}.jpg", array)
    return folder


def write_tiny_imagenet(base: str | os.PathLike, *, wnids: Sequence[str], train: Mapping[str, Sequence[np.ndarray]],
                        val: Sequence[tuple[str, np.ndarray, str, Sequence[int]]],
                        words: Mapping[str, str] | None = None) -> Path:
    """The official Tiny-ImageNet layout under ``base``: wnids.txt (in the given order), [words.txt],
    train/<wnid>/images/<wnid>_<k>.JPEG (k from 0) and val/images/<file> with val/val_annotations.txt rows
    (file, wnid, x0, y0, x1, y1) for ``val`` = [(file, array, wnid, box)]."""
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    (base / "wnids.txt").write_text("\n".join(wnids) + "\n")
    if words is not None:
        (base / "words.txt").write_text("".join(f"{w}\t{text}\n" for w, text in words.items()))
    for wnid, arrays in train.items():
        for k, array in enumerate(arrays):
            write_image(base / "train" / wnid / "images" / f"{wnid}_{k}.JPEG", array)
    rows = []
    for file, array, wnid, box in val:
        write_image(base / "val" / "images" / file, array)
        rows.append("\t".join([file, wnid, *(str(int(v)) for v in box)]))
    (base / "val").mkdir(parents=True, exist_ok=True)
    (base / "val" / "val_annotations.txt").write_text("\n".join(rows) + "\n")
    return base


# ------------------------------------------------------------------------------------------ text and series
def write_sst2(folder: str | os.PathLike, *, train: Sequence[tuple[str, int]], dev: Sequence[tuple[str, int]]
               ) -> Path:
    """GLUE SST-2's train.tsv and dev.tsv (header ``sentence<TAB>label``) in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.tsv", train), ("dev.tsv", dev)):
        (folder / name).write_text("sentence\tlabel\n" + "".join(f"{s}\t{int(y)}\n" for s, y in rows))
    return folder


def write_pam(data_dir: str | os.PathLike, x: np.ndarray, outcomes: np.ndarray, *,
              splits: tuple[Sequence[int], Sequence[int], Sequence[int]] | None = None, split_no: int = 1) -> Path:
    """TimeX's PAM files: data_dir/processed_data/PTdict_list.npy (N, T, F), arr_outcomes.npy (N, ≥1), and, when
    ``splits`` (train, val, test indices) is given, data_dir/splits/PAMAP2_split_<split_no>.npz (the non-pickle form
    :func:`faithlab.data.pam` reads); data_dir/splits/ is created either way."""
    root = Path(data_dir)
    (root / "processed_data").mkdir(parents=True, exist_ok=True)
    (root / "splits").mkdir(parents=True, exist_ok=True)
    np.save(root / "processed_data" / "PTdict_list.npy", np.asarray(x))
    np.save(root / "processed_data" / "arr_outcomes.npy", np.asarray(outcomes))
    if splits is not None:
        np.savez(root / "splits" / f"PAMAP2_split_{split_no}.npz",
                 **{k: np.asarray(v, dtype=np.int64) for k, v in zip(("idx_train", "idx_val", "idx_test"), splits)})
    return root


def write_boiler(data_dir: str | os.PathLike, x_full: torch.Tensor, y_full: torch.Tensor, *,
                 splits: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None, split_no: int = 1) -> Path:
    """TimeX's Boiler files (tensors only): data_dir/xfull.pt (T, N, C), yfull.pt (N,) and, when ``splits`` is
    given, split=<split_no>.pt holding (idx_train, idx_val, idx_test)."""
    root = Path(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    torch.save(x_full, root / "xfull.pt")
    torch.save(y_full, root / "yfull.pt")
    if splits is not None:
        torch.save(tuple(torch.as_tensor(s) for s in splits), root / f"split={split_no}.pt")
    return root


# -------------------------------------------------------------------------------------------------- CT slices
def write_ct_split(base: str | os.PathLike, slices: Mapping[str, np.ndarray], masks: Mapping[str, np.ndarray],
                   labels: Mapping[str, int]) -> Path:
    """A ct_contrast split folder: base/images/<name>.npy (each slice), base/masks/<name> (a .png name is written
    as an 8-bit PNG, 255 = organ, else .npy), base/labels.csv (``file,label``)."""
    base = Path(base)
    (base / "images").mkdir(parents=True, exist_ok=True)
    (base / "masks").mkdir(parents=True, exist_ok=True)
    for name, array in slices.items():
        np.save(base / "images" / name, np.asarray(array))
    for name, array in masks.items():
        if name.endswith(".png"):
            write_image(base / "masks" / name, (np.asarray(array) != 0).astype(np.uint8) * 255)
        else:
            np.save(base / "masks" / name, np.asarray(array))
    (base / "labels.csv").write_text("file,label\n" + "".join(f"{k},{int(v)}\n" for k, v in labels.items()))
    return base


# ---------------------------------------------------------------------------------------------------- weights
def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def put_in_hf_cache(cache: str | os.PathLike, repo_id: str, file: str | os.PathLike, filename: str, *,
                    blob_name: str | None = None, revision: str = "0" * 40) -> Path:
    """Move ``file`` into the Hugging Face cache folder ``cache`` as huggingface_hub stores a downloaded file:
    cache/models--<owner>--<name>/blobs/<blob_name> (default: the file's sha256), linked from
    snapshots/<revision>/<filename>, with refs/main = revision. Returns the blob's path."""
    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "blobs").mkdir(exist_ok=True)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    blob = Path(file).replace(repo / "blobs" / (blob_name or _sha256(Path(file))))
    link = snapshot / filename
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path("..", "..", "blobs", blob.name))
    return blob


def _head(model: nn.Module, width: int) -> nn.Module:
    """The classifier: the last ``nn.Linear`` or ``nn.Conv2d`` (SqueezeNet's) with a bias and ``width`` outputs."""
    heads = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d)) and m.bias is not None
             and m.bias.numel() == width]
    if not heads:
        raise ValueError(f"model ({type(model).__name__}) has no nn.Linear or nn.Conv2d classifier with a bias and "
                         f"{width} outputs to favour class 0")
    return heads[-1]


def random_model(build: Callable[[], nn.Module], *, seed: int, inputs: torch.Tensor | None = None,
                 batch_size: int = 16) -> nn.Module:
    """``build()`` with its own random initialisation, drawn inside ``torch.random.fork_rng`` from ``seed`` (the
    caller's global RNG state is left as it was), in eval mode. With ``inputs`` (the images the model will see,
    preprocessed as the notebook does), the classifier bias is raised until the model predicts class 0 on every
    one of them (a single logit: a positive logit) by a margin of at least 1.

    The bias moves in steps of :data:`BIAS_QUANTUM` with at least one quantum of slack beyond the measured margin: a
    linear head is done in one step whatever the float summation order (torch's thread count changes it by a few ULP,
    and a step of exactly the margin can leave the new margin a few ULP above 0, with later ULP-sized steps lost in
    rounding), and the written bias is the same at every thread count unless the margin sits within ULPs of a
    quantum's edge."""
    seed = _seed(seed, "seed")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build().eval()
    if inputs is None:
        return model

    def margin() -> torch.Tensor:  # how far class 0 is from winning by 1 on the worst input (≤ 0: done)
        with torch.no_grad():
            logits = torch.cat([model(inputs[i:i + batch_size]) for i in range(0, len(inputs), batch_size)])
        if logits.shape[1] == 1:
            return 1.0 - logits[:, 0].min()
        return (logits[:, 1:].max(dim=1).values - logits[:, 0] + 1.0).max()

    need = margin()
    head = None
    for _ in range(20):  # one step for a linear head; a few when a ReLU follows it (SqueezeNet)
        if need <= 0:
            return model
        if head is None:
            head = _head(model, _width(model, inputs))
        with torch.no_grad():  # floor(need / q) + 2 quanta: between one and two quanta of slack
            head.bias[0] += (math.floor(float(need) / BIAS_QUANTUM) + 2) * BIAS_QUANTUM
        need = margin()
    raise ValueError(f"could not make {type(model).__name__} predict class 0 on every input")


def _width(model: nn.Module, inputs: torch.Tensor) -> int:
    with torch.no_grad():
        return model(inputs[:1]).shape[1]


def _save_state(model: nn.Module, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}, path)
    return path


# ---------------------------------------------------------------------------------------------- paper-dry
def _imagenet_val(root: Path, rng: np.random.Generator, per_class: int) -> None:
    sizes = [(320, 240), (240, 320), (300, 300), (500, 375)]
    k = 0
    for c, wnid in enumerate(IMAGENET_WNIDS):
        for j in range(per_class):
            k += 1  # file names interleave the classes, as ILSVRC2012_val_<n> numbers do
            number = c + len(IMAGENET_WNIDS) * j + 1
            write_image(root / "imagenet" / "val" / wnid / f"ILSVRC2012_val_{number:08d}.JPEG",
                        texture(rng, sizes[k % len(sizes)], colour=_colour(c)), quality=90)


def _vehicles(root: Path, rng: np.random.Generator, per_class: int) -> None:
    base = root / "fewclass" / "imagenet_vehicles"
    for split in ("train", "val", "test"):
        boxes = {}
        for c, cls in enumerate(VEHICLE_CLASSES):
            for j in range(per_class):
                name = f"{cls}_{split}_{j}.jpeg"
                write_image(base / split / cls / name, texture(rng, (288, 256), colour=_colour(c)), quality=90)
                x0, y0 = (int(v) for v in rng.integers(0, 100, size=2))
                boxes[f"{cls}/{name}"] = (x0, y0, x0 + int(rng.integers(40, 124)), y0 + int(rng.integers(40, 124)))
        write_boxes_csv(base / f"{split}_boxes.csv", boxes)


def _ct(root: Path, rng: np.random.Generator, per_class: int, size: int = 64) -> None:
    base = root / "fewclass" / "ct_contrast"
    yy, xx = np.mgrid[:size, :size]
    for split in ("train", "val", "test"):
        slices, masks, labels = {}, {}, {}
        for j in range(2 * per_class):
            label = j % 2
            cy, cx = (int(v) for v in rng.integers(size // 3, 2 * size // 3, size=2))
            organ = (yy - cy) ** 2 / 0.8 + (xx - cx) ** 2 < (size // 6) ** 2
            body = (yy - size / 2) ** 2 + (xx - size / 2) ** 2 < (0.45 * size) ** 2
            hu = np.where(body, rng.normal(40.0, 60.0, (size, size)), -1000.0)
            hu = np.where(organ, hu + (250.0 if label else -30.0), hu)
            name = f"slice_{split}_{j:03d}.npy"
            slices[name] = hu.astype(np.float32)
            masks[name if j % 3 else name.replace(".npy", ".png")] = organ  # both mask formats
            labels[name] = label
        write_ct_split(base / split, slices, masks, labels)


def _series_and_text(root: Path, rng: np.random.Generator) -> None:
    n = 24
    x = rng.uniform(0.5, 3.0, size=(n, 600, 17)).astype(np.float32)
    x[rng.uniform(size=x.shape) < 0.3] = 0.0  # missing observations
    outcomes = np.stack([np.zeros(n), np.arange(n) % 8], axis=1)
    write_pam(root / "PAMAP2data", x, outcomes, splits=(np.arange(16), np.arange(16, 20), np.arange(20, 24)))
    g = torch.Generator().manual_seed(int(rng.integers(2**31)))
    write_boiler(root / "boiler", torch.randn(36, n, 20, generator=g), torch.arange(n) % 2,
                 splits=(torch.arange(16), torch.arange(16, 20), torch.arange(20, 24)))
    words = ["good", "bad", "movie", "plot", "great", "dull", "actors", "story", "fun", "slow"]

    def sentences(k: int) -> list[tuple[str, int]]:
        return [(" ".join(rng.choice(words, size=int(rng.integers(3, 12)))), int(i % 2)) for i in range(k)]

    write_sst2(root / "SST-2", train=sentences(40), dev=sentences(12))


def _small_image_sets(root: Path, rng: np.random.Generator, per_class: int) -> None:
    def images(n_classes: int, k: int, size: int, channels: int = 3) -> tuple[np.ndarray, np.ndarray]:
        labels = np.arange(n_classes * k) % n_classes  # classes cycle: the first n images hold every class
        return np.stack([texture(rng, (size, size), colour=_colour(int(c)), channels=channels) for c in labels]), labels

    write_cifar_binary(root, "cifar10", train=images(10, per_class, 32), test=images(10, 2, 32),
                       class_names=["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                                    "truck"])
    write_cifar_binary(root, "cifar100", train=images(100, 2, 32), test=images(100, 1, 32),
                       class_names=[f"class{i:02d}" for i in range(100)])
    write_fashion_mnist(root, train=images(10, per_class, 28, channels=1), test=images(10, 2, 28, channels=1))
    write_eurosat(root, {cls: [texture(rng, (64, 64), colour=_colour(c)) for _ in range(per_class)]
                         for c, cls in enumerate(EUROSAT_CLASSES)})
    wnids = [f"n0{i:07d}" for i in range(1, 6)]
    write_tiny_imagenet(root / "tiny-imagenet-200", wnids=wnids,
                        train={w: [texture(rng, (64, 64), colour=_colour(c)) for _ in range(2)]
                               for c, w in enumerate(wnids)},
                        val=[(f"val_{c}.JPEG", texture(rng, (64, 64), colour=_colour(c)), w, (4, 4, 40, 48))
                             for c, w in enumerate(wnids)],
                        words={w: f"thing {c}" for c, w in enumerate(wnids)})


def _timm_inputs(root: Path, name: str) -> torch.Tensor:
    """The fake ImageNet images as SaCo's notebooks feed the timm model ``name`` (its own mean and std)."""
    timm = require("timm", "the paper-dry fake data (tests/support/paper_dry.py)")

    from faithlab import data

    raw = data.load("imagenet_val", split="test", data_dir=root / "imagenet", mean=(0.0, 0.0, 0.0),
                    std=(1.0, 1.0, 1.0))
    cfg = timm.create_model(name, pretrained=False).pretrained_cfg
    mean, std = (torch.tensor(cfg[key]).view(1, -1, 1, 1) for key in ("mean", "std"))
    return (data.to_tensors(raw)[0] - mean) / std


def write_paper_dry(root: str | os.PathLike, *, seed: int = 0, per_class: int = 3, force: bool = False
                    ) -> dict[str, str]:
    """Write the fake data folder that ``notebooks/params/paper-dry.yaml`` points into, and return the environment
    the notebooks need (``{"HF_HUB_CACHE": <root>/huggingface/hub}``: SaCo's timm ViTs are read from the Hugging
    Face cache, where the ``paper`` profile expects them).

    Layout under ``root`` (the ``paper`` profile's ``~/data``), ``per_class`` images per class unless said:

    ::

        imagenet/val/<wnid>/ILSVRC2012_val_<n>.JPEG            3 classes (IMAGENET_WNIDS), various sizes
        fewclass/imagenet_vehicles/{train,val,test}/<class>/   3 classes, with <split>_boxes.csv
        fewclass/ct_contrast/{train,val,test}/                 64×64 float HU slices, .npy and .png masks, labels.csv
        fewclass/models/<key>.pt                               FEWCLASS_MODELS
        torchvision/<name>.pt                                  TORCHVISION_MODELS (1000 classes)
        huggingface/hub/models--timm--<name>/                  TIMM_MODELS (pytorch_model.bin blobs)
        cifar-10-batches-bin/, cifar-100-binary/ (2 per class), FashionMNIST/raw/, eurosat/2750/,
        tiny-imagenet-200/, SST-2/, PAMAP2data/, boiler/       every other format faithlab.data reads

    Weights: random (``seed``) at the architectures' real sizes, state dicts saved with ``torch.save``; the
    Few-class models and the timm ViTs predict class 0 (CT: a positive logit) on every fake image (see the module
    docstring). Only paths under ``root`` are written. A folder already written by this version of this module with
    the same ``seed`` and ``per_class`` (``root/paper-dry.json``) is left as it is unless ``force``.
    """
    seed = _seed(seed, "seed")
    per_class = _validate.positive_int(per_class, "per_class")
    root = Path(root).expanduser().resolve()
    env = {"HF_HUB_CACHE": str(root / "huggingface" / "hub")}
    stamp = {"source": _SOURCE_HASH, "seed": seed, "per_class": per_class, "torch": torch.__version__}
    stamp_file = root / _STAMP
    if not force and stamp_file.is_file():
        try:
            if json.loads(stamp_file.read_text()) == stamp:
                return env
        except (OSError, ValueError):
            pass
    root.mkdir(parents=True, exist_ok=True)
    stamp_file.unlink(missing_ok=True)  # written last: a half-written folder is written again
    rng = np.random.default_rng(seed)
    _imagenet_val(root, rng, per_class)
    _vehicles(root, rng, per_class)
    _ct(root, rng, per_class)
    _small_image_sets(root, rng, per_class)
    _series_and_text(root, rng)
    _write_models(root, seed)
    stamp_file.write_text(json.dumps(stamp))
    return env


def _write_models(root: Path, seed: int) -> None:
    timm = require("timm", "the paper-dry fake data (tests/support/paper_dry.py)")
    import torchvision

    from faithlab import data

    for i, (name, config) in enumerate(TORCHVISION_MODELS.items()):
        model = random_model(lambda: torchvision.models.get_model(name, weights=None, **config), seed=seed + i)
        _save_state(model, root / "torchvision" / f"{name}.pt")

    vehicles = data.to_tensors(data.load("imagenet_vehicles", split="test",
                                         data_dir=root / "fewclass" / "imagenet_vehicles"))[0]
    ct = data.load("ct_contrast", split="test", data_dir=root / "fewclass" / "ct_contrast").x
    for i, (key, spec) in enumerate(FEWCLASS_MODELS.items()):
        create = torchvision.models.get_model if spec["source"] == "torchvision" else timm.create_model
        inputs = ct if key.endswith("_ct") else vehicles
        model = random_model(lambda: create(spec["arch"], **spec["config"]), seed=seed + 100 + i, inputs=inputs)
        _save_state(model, root / "fewclass" / "models" / f"{key}.pt")

    cache = root / "huggingface" / "hub"
    shutil.rmtree(cache, ignore_errors=True)  # ours alone: blobs of an earlier version would stay forever
    for i, name in enumerate(TIMM_MODELS):
        model = random_model(lambda: timm.create_model(name, pretrained=False), seed=seed + 200 + i,
                             inputs=_timm_inputs(root, name))
        hub_id = model.pretrained_cfg["hf_hub_id"]
        tmp = _save_state(model, cache / f".{name}.tmp")
        put_in_hf_cache(cache, hub_id, tmp, "pytorch_model.bin")


if __name__ == "__main__":  # make paper-dry: python tests/support/paper_dry.py data/cache/paper-dry
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python tests/support/paper_dry.py <folder>  (writes the paper-dry profile's fake data there)")
    write_paper_dry(sys.argv[1])

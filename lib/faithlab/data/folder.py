"""Your own images: :func:`image_folder` reads a folder of image files (class subfolders, or a flat folder with an
optional labels CSV) through a model's own preprocessing (:func:`faithlab.models.preprocessing`).

Layouts (torchvision's ``ImageFolder`` conventions; folder links are followed, a loop is not walked twice)::

    root/cat/001.png, root/dog/002.jpg, ...   class subfolders: labels from the folder names (sorted, or ``classes``)
    root/001.png, root/002.png, ...           flat: no labels, unless a CSV (columns ``file,label``) gives them

Without labels the evaluation uses the model's predictions (:meth:`ImageFolderData.tensors` with ``model=``). Files
are listed in a fixed order (class, then path), and every loader keeps it, so row ``i`` of a result is ``files[i]``.
"""

from __future__ import annotations

import csv
import operator
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from faithlab import _pixels, _validate

from ._core import TensorData

__all__ = ["IMAGE_EXTENSIONS", "MAX_PIXELS", "ImageFolderData", "image_folder"]

MAX_PIXELS = _pixels.MAX_PIXELS

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
"""The file endings :func:`image_folder` reads by default (case-insensitive)."""


class ImageFolderData(Dataset):
    """Images of a folder, preprocessed on access: ``data[i]`` is ``(x, y)`` when labelled, ``x`` alone otherwise
    (``x`` a ``(C, H, W)`` float tensor from ``preprocess``, ``y`` an int64 scalar).

    Attributes: ``root`` (Path), ``files`` (paths relative to ``root``, POSIX, in item order), ``labels`` ((N,)
    int64 or None), ``classes`` (class names, index = label; None when unlabelled or when a CSV gives integer labels
    and no ``classes`` were passed), ``labelled``, ``preprocess``, ``max_pixels`` (the largest image read), ``info``
    (``name``, ``root``, ``files``, ``mean``, ``std`` (the preprocessing's normalisation, None when it has none),
    ``n_classes``, ``class_names``, ``labels``: "folders", the CSV's path or None; ``unlisted``: the folders below
    root that could not be listed and were left out, "path/: why")."""

    def __init__(self, root: Path, files: list[str], labels: torch.Tensor | None, classes: list[str] | None,
                 preprocess: Callable, source: str | None, max_pixels: int = _pixels.MAX_PIXELS,
                 unlisted: Sequence[str] = ()) -> None:
        self.root, self.files, self.labels, self.classes = root, files, labels, classes
        self.preprocess, self.max_pixels = preprocess, max_pixels
        mean, std = getattr(preprocess, "normalisation", (None, None))
        n_classes = len(classes) if classes is not None else (int(labels.max()) + 1 if labels is not None else None)
        self.info: dict[str, Any] = {"name": "image_folder", "root": str(root), "files": list(files),
                                     "mean": None if mean is None else tuple(mean),
                                     "std": None if std is None else tuple(std), "n_classes": n_classes,
                                     "class_names": None if classes is None else list(classes), "labels": source,
                                     "unlisted": list(unlisted)}

    @property
    def labelled(self) -> bool:
        """Whether the items carry labels (class subfolders or a CSV)."""
        return self.labels is not None

    def __len__(self) -> int:
        return len(self.files)

    def image(self, index: int):
        """The image of item ``index`` as a PIL image, read by ``faithlab._pixels.open_image``: EXIF orientation
        applied, 8-bit modes as stored ("L", "RGB", "P", "RGBA", "CMYK", ...: the preprocessing converts them),
        16-bit grey as a float image ("F") in [0, 1] (value / 65535, or a TIFF's stated range), a float or 32-bit
        image by its stated range. ValueError naming its file when it is
        unreadable, larger than ``max_pixels`` (an image bomb is refused before it is decoded) or has values that
        cannot be mapped to [0, 1] faithfully."""
        from PIL import UnidentifiedImageError

        path = self.root / self.files[index]
        where = f"the file {self.files[index]!r} in {str(self.root)!r}"
        try:
            return _pixels.open_image(path, max_pixels=self.max_pixels, what=where)
        except _pixels.UnmappableImage as err:
            raise ValueError(f"root: {err}") from err
        except (OSError, UnidentifiedImageError, ValueError) as err:
            raise ValueError(f"root: {where} is not a readable image ({type(err).__name__}: {err})") from err

    def __getitem__(self, index: int):
        x = self.preprocess(self.image(index))
        return (x, self.labels[index]) if self.labels is not None else x

    def loader(self, batch_size: int = 32, num_workers: int = 0) -> DataLoader:
        """A DataLoader over the items in file order (no shuffle): batches ``(x, y)`` or ``x``."""
        batch_size = _validate.positive_int(batch_size, "batch_size")
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"num_workers must be a non-negative int, got {num_workers!r}")
        return DataLoader(self, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                          collate_fn=_collate)

    def tensors(self, n: int | None = None, *, model: torch.nn.Module | None = None,
                batch_size: int = 32) -> TensorData:
        """The first ``n`` items (all when None) in memory: a :class:`faithlab.data.TensorData` with ``x`` stacked.

        ``y``: the labels; an unlabelled folder needs ``model``, whose predictions (argmax of the logits, computed
        in batches of ``batch_size`` on the model's device, no gradient) become ``y`` (``info["labels"]`` then says
        "predictions"). Without labels and without ``model`` this raises ValueError: pass ``labels=`` to
        :func:`image_folder` or ``model=`` here. ``extras["index"]`` holds the item positions (``files[i]``)."""
        count = len(self) if n is None else min(_validate.positive_int(n, "n"), len(self))
        if self.labels is None and model is None:
            raise ValueError(f"the images in {str(self.root)!r} have no labels: pass labels=<CSV> (or class "
                             "subfolders with labels='folders') to image_folder, or tensors(model=model) to use the "
                             "model's predictions as labels")
        batch_size = _validate.positive_int(batch_size, "batch_size")
        x = _stack([self.preprocess(self.image(i)) for i in range(count)])
        info = dict(self.info, files=self.files[:count])
        if self.labels is not None:
            y = self.labels[:count].clone()
        else:
            _validate.model(model)
            param = next(model.parameters(), None)
            device = param.device if param is not None else torch.device("cpu")
            with torch.no_grad():
                logits = torch.cat([model(chunk.to(device)).cpu() for chunk in x.split(batch_size)])
            y = logits.argmax(1)
            info.update(labels="predictions", n_classes=info["n_classes"] or int(logits.shape[1]))
        return TensorData(x, y, info=info, extras={"index": torch.arange(count, device="cpu")})

    def subset(self, indices: Sequence[int]) -> ImageFolderData:
        """The items at ``indices`` (distinct, in the order given) as a dataset of their own: the same root, classes,
        preprocessing and ``info`` (``files`` listing the subset's; ``n_classes`` kept)."""
        try:
            index = [operator.index(i) for i in indices]
        except TypeError:
            raise TypeError(f"indices must be integer positions of items, got {list(indices)[:5]!r}") from None
        bad = [i for i in index if not 0 <= i < len(self)]
        if bad:
            raise IndexError(f"indices {bad[:5]} are outside 0..{len(self) - 1} (the folder's {len(self)} images)")
        if len(set(index)) != len(index):
            raise ValueError("indices must be distinct: each image is evaluated once")
        labels = None if self.labels is None else self.labels[torch.tensor(index, dtype=torch.int64, device="cpu")]
        out = ImageFolderData(self.root, [self.files[i] for i in index], labels, self.classes, self.preprocess,
                              self.info["labels"], self.max_pixels)
        out.info = dict(self.info, files=list(out.files))
        return out

    def balanced_order(self, seed: int = 0) -> list[int]:
        """Every item's index, in the order that spreads a sample evenly over the classes: round-robin over the
        classes (label 0, 1, …: the sorted class folders; an unlabelled folder is one class), taking each class's
        items in an order shuffled by ``seed``. Its first n items are a class-balanced sample of n (a class with
        fewer items than its share gives way to the others); the same seed gives the same order."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        g = torch.Generator().manual_seed(seed % 2 ** 63)
        groups: dict[int, list[int]] = {}
        for i, label in enumerate(self.labels.tolist() if self.labels is not None else [0] * len(self)):
            groups.setdefault(label, []).append(i)
        shuffled = [[members[j] for j in torch.randperm(len(members), generator=g, device="cpu").tolist()]
                    for _, members in sorted(groups.items())]
        return [m[k] for k in range(max(map(len, shuffled), default=0)) for m in shuffled if k < len(m)]

    def sample(self, n: int, *, seed: int = 0) -> ImageFolderData:
        """n items spread evenly over the classes (the first n of :meth:`balanced_order`), in file order (class, then
        path); all of them when n ≥ len(self)."""
        n = _validate.positive_int(n, "n")
        return self.subset(sorted(self.balanced_order(seed)[:n]))


def _stack(images: list[torch.Tensor]) -> torch.Tensor:
    """Stack the images, or a ValueError naming ``preprocess`` when their sizes differ."""
    try:
        return torch.stack(images)
    except RuntimeError as err:
        raise ValueError("preprocess gives images of different sizes (it has no crop or exact resize); pass a "
                         "preprocess with one output size, e.g. fl.models.preprocessing(model) of an ImageNet "
                         f"model ({err})") from None


def _collate(batch: list):
    """DataLoader's default collation, with the different-sizes error naming ``preprocess``."""
    from torch.utils.data import default_collate

    try:
        return default_collate(batch)
    except RuntimeError as err:
        raise ValueError("preprocess gives images of different sizes (it has no crop or exact resize); pass a "
                         f"preprocess with one output size ({err})") from None


def _is_image(name: str, extensions: tuple[str, ...]) -> bool:
    return not name.startswith(".") and name.lower().endswith(extensions)


def _is_image_entry(entry: os.DirEntry, extensions: tuple[str, ...]) -> bool:
    """Whether a folder entry is an image file to read: an image's name, and a regular file (a link to one too) or a
    broken link (kept, so that reading it names it). A named pipe or device called ``x.png``, or a link to one, is
    not: opening it would block the reader forever."""
    if not _is_image(entry.name, extensions):
        return False
    return entry.is_file() or (entry.is_symlink() and not os.path.exists(entry.path))


def _images_under(folder: Path, extensions: tuple[str, ...], seen: set, unlisted: list[str],
                  prefix: str = "") -> list[str]:
    """The image files under ``folder`` (paths ``prefix`` + relative to it, POSIX, sorted; hidden entries skipped),
    following folder links but entering each real folder once: a link back to the folder or above it (a loop) is
    not walked. torchvision's ``make_dataset`` follows links with ``os.walk(followlinks=True)``, which a loop sends
    round until the path is too long, listing every image once per turn. ``seen``: the (device, inode) pairs not to
    enter. A folder that cannot be listed (no permission: ``lost+found``) is left out and appended to ``unlisted``
    ("path/: why")."""
    found: list[str] = []

    def visit(path: Path, prefix: str) -> None:
        try:
            st = path.stat()
        except OSError:  # a broken folder link: nothing to list
            return
        if (st.st_dev, st.st_ino) in seen:
            return
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as err:
            unlisted.append(f"{prefix}: {type(err).__name__}: {err.strerror or err}")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            name = prefix + entry.name
            if entry.is_dir():
                visit(Path(entry.path), name + "/")
            elif _is_image_entry(entry, extensions):
                found.append(name)

    visit(folder, prefix)
    return sorted(found)


def _ancestors(root: Path) -> set:
    """(device, inode) of root and every folder above it: a link to any of them inside root is a loop."""
    out, here = set(), root.resolve()
    for folder in (here, *here.parents):
        try:
            st = folder.stat()
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
    return out


def _layout(root: Path, extensions: tuple[str, ...]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """(class subfolders that hold images → their image files, relative to root; image files directly in root;
    the folders below root that cannot be listed, "path/: why"); hidden entries are skipped, links are followed
    without loops (:func:`_images_under`). ValueError naming root when root itself cannot be listed."""
    subdirs, flat, unlisted = {}, [], []
    above = _ancestors(root)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as err:
        raise ValueError(f"root {str(root)!r} cannot be listed ({type(err).__name__}: "
                         f"{err.strerror or err})") from None
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            files = _images_under(Path(entry.path), extensions, set(above), unlisted, entry.name + "/")
            if files:
                subdirs[entry.name] = files
        elif _is_image_entry(entry, extensions):
            flat.append(entry.name)
    return subdirs, flat, unlisted


def _read_csv(path: Path, files: list[str], classes: list[str] | None) -> tuple[list[int], list[str] | None]:
    """Labels of ``files`` (in that order) from a CSV with columns ``file,label`` (label an int or a class name)."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        header = [h.strip() for h in reader.fieldnames or []]
    if not {"file", "label"} <= set(header):
        raise ValueError(f"labels: the CSV {str(path)!r} must have the columns 'file' and 'label', got {header}")
    rows = [{k.strip(): v for k, v in row.items() if k is not None} for row in rows]
    given: dict[str, str] = {}
    for line, row in enumerate(rows, start=2):
        name = Path(str(row["file"]).strip()).as_posix()
        if name in given:
            raise ValueError(f"labels: the CSV {str(path)!r} names {name!r} twice (line {line})")
        given[name] = str(row["label"]).strip()
    unknown = [f for f in given if f not in set(files)]
    if unknown:
        raise ValueError(f"labels: the CSV {str(path)!r} names files that are not images in the folder: {unknown[:5]}"
                         f"{' …' if len(unknown) > 5 else ''} (paths relative to root, e.g. {files[0]!r})")
    missing = [f for f in files if f not in given]
    if missing:
        raise ValueError(f"labels: the CSV {str(path)!r} gives no label for {len(missing)} image(s) of the folder: "
                         f"{missing[:5]}{' …' if len(missing) > 5 else ''}")
    raw = [given[f] for f in files]
    names = sorted({v for v in raw if not _is_int(v)})
    if classes is None and names:
        if len(names) != len(set(raw)):
            raise ValueError(f"labels: the CSV {str(path)!r} mixes integer labels and class names; use one kind, or "
                             "pass classes=[...] to give the names their indices")
        classes = names
    out = []
    for f, v in zip(files, raw):
        if _is_int(v):
            label = int(v)
            if label < 0 or (classes is not None and label >= len(classes)):
                raise ValueError(f"labels: the CSV {str(path)!r} gives {f!r} the label {label}, outside 0.."
                                 f"{len(classes) - 1 if classes is not None else 'n'}")
        elif classes is not None and v in classes:
            label = classes.index(v)
        else:
            raise ValueError(f"labels: the CSV {str(path)!r} gives {f!r} the unknown class name {v!r}; the classes "
                             f"are {classes}")
        out.append(label)
    return out, classes


def _is_int(value: str) -> bool:
    return value.lstrip("-").isdigit()


def image_folder(
    root: str | os.PathLike,
    *,
    preprocess: Callable,
    labels: str | os.PathLike | None = "folders",
    classes: Sequence[str] | None = None,
    extensions: Sequence[str] = IMAGE_EXTENSIONS,
    max_pixels: int = _pixels.MAX_PIXELS,
) -> ImageFolderData:
    """Your images as a dataset: a folder of class subfolders or a flat folder of image files.

    root: the folder. preprocess: PIL image → ``(C, H, W)`` tensor, normally the model's own
    (``fl.models.preprocessing(model)``, whose ``normalisation`` lands in ``info["mean"]``/``["std"]``).
    labels: "folders" (default): class subfolders give the labels (torchvision ``ImageFolder``'s rule: the sorted
    folder names, or their positions in ``classes``); a flat folder is unlabelled. A path to a CSV with columns
    ``file,label`` (``file`` relative to root, ``label`` an int or a class name): it must name every image of the
    folder and nothing else. None: no labels even with subfolders (the evaluation then uses the model's predictions).
    classes: the class names in the model's output order (a name's index is its label); default: the sorted folder
    names, or the sorted class names of the CSV. extensions: the file endings read (case-insensitive); other files
    are skipped, as are hidden ones. max_pixels: the largest image read, width × height (default
    :data:`MAX_PIXELS`, about 9,459²; at most twice ``PIL.Image.MAX_IMAGE_PIXELS``): a larger one, such as an image
    bomb (a few KB on disk, gigabytes decoded), raises ValueError naming the file and the limit, before it is decoded.

    Pixel values: 8-bit images (grey, RGB, palette, CMYK, YCbCr, with or without alpha, which is dropped as
    torchvision's loader drops it) are value / 255; **16-bit grey** PNG and TIFF files (CT, microscopy) are scaled by
    their bit depth, value / 65535, and kept in floats (PIL's own conversion, and torchvision's ``ImageFolder``,
    clip them at 255: a white image); 16-bit colour PNGs are read by PIL at 8 bits; float and 32-bit integer TIFFs
    by the range their SMinSampleValue/SMaxSampleValue tags state, float files without it only when their values
    lie in [0, 1]. An image whose values cannot be mapped (no stated range, NaN, the LAB colour space) raises
    ValueError naming the file. The EXIF orientation is applied (a phone photo is evaluated upright). A
    ``preprocess`` of your own receives 8-bit images as stored (any PIL mode: convert them yourself) and 16-bit or
    float ones as "F" images already in [0, 1] (``PIL.Image.convert`` would clip those: use ``np.asarray``).
    Folder links are followed without loops; a folder below root that cannot be listed (no permission, e.g.
    ``lost+found``) is left out with a UserWarning and named in ``info["unlisted"]``.
    Errors name the argument: a missing or empty ``root``, a folder with both images and class subfolders, a CSV
    naming files that are not there or leaving images out, an unknown class name; an unreadable image raises
    ValueError naming the file when it is read."""
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a folder path, got {type(root).__name__}")
    path = Path(root).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"root {str(path)!r} is not a folder")
    if not callable(preprocess):
        raise TypeError(f"preprocess must be callable (PIL image → tensor), e.g. fl.models.preprocessing(model); got "
                        f"{type(preprocess).__name__}")
    if isinstance(extensions, str) or not extensions or not all(
            isinstance(e, str) and e.startswith(".") for e in extensions):
        raise ValueError(f"extensions must be a sequence of file endings such as ('.png', '.jpg'), got {extensions!r}")
    exts = tuple(e.lower() for e in extensions)
    max_pixels = _pixels.check_pixels(max_pixels)
    if classes is not None:
        if isinstance(classes, str) or not all(isinstance(c, str) for c in classes) or len(set(classes)) != len(
                classes) or not classes:
            raise ValueError(f"classes must be a sequence of distinct class names, got {classes!r}")
        classes = list(classes)
    subdirs, flat, unlisted = _layout(path, exts)
    if unlisted:
        import warnings

        warnings.warn(f"root: {len(unlisted)} folder(s) of {str(path)!r} cannot be listed and are left out: "
                      f"{'; '.join(unlisted[:3])}{' …' if len(unlisted) > 3 else ''} (info['unlisted'] names them)",
                      UserWarning, stacklevel=2)
    if subdirs and flat:
        raise ValueError(f"root {str(path)!r} mixes images ({flat[:3]}) and class subfolders "
                         f"({list(subdirs)[:3]}); put "
                         "every image in a class subfolder, or all of them directly in root")
    if not subdirs and not flat:
        raise ValueError(f"root {str(path)!r} holds no images with the endings {list(exts)}")
    folder_classes = None
    if subdirs:
        if classes is not None and labels == "folders":
            unknown = [d for d in subdirs if d not in classes]
            if unknown:
                raise ValueError(f"classes {classes} do not include the subfolders {unknown} of root {str(path)!r}")
            folder_classes = classes
        else:
            folder_classes = list(subdirs)
        index = {c: i for i, c in enumerate(folder_classes)}
        samples = sorted((index[d], f) for d, fs in subdirs.items() for f in fs)  # class, then path
        files = [f for _, f in samples]
        folder_labels = [label for label, _ in samples]
    else:
        files, folder_labels = flat, None
    if labels is None:
        return ImageFolderData(path, files, None, None, preprocess, None, max_pixels, unlisted)
    if isinstance(labels, str) and labels == "folders":
        if folder_labels is None:
            return ImageFolderData(path, files, None, None, preprocess, None, max_pixels, unlisted)
        return ImageFolderData(path, files, torch.tensor(folder_labels, dtype=torch.int64, device="cpu"),
                               folder_classes, preprocess, "folders", max_pixels, unlisted)
    if not isinstance(labels, (str, os.PathLike)):
        raise TypeError(f"labels must be 'folders', a CSV path or None, got {type(labels).__name__}")
    csv_path = Path(labels).expanduser()
    if not csv_path.is_file():
        raise FileNotFoundError(f"labels {str(csv_path)!r} is not a file (pass 'folders', a CSV path or None)")
    values, names = _read_csv(csv_path, files, classes)
    return ImageFolderData(path, files, torch.tensor(values, dtype=torch.int64, device="cpu"), names, preprocess,
                           str(csv_path), max_pixels, unlisted)

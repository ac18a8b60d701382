"""Datasets for the study: embedded generators with known ground truth (no network, ever) and loaders for the
papers' real datasets behind a ``data_dir``.

One entry point::

    import faithlab as fl
    train = fl.data.load("canvas_digits", split="train", r=0.2, seed=0)    # TensorData: x, y, mask, info, boxes
    test = fl.data.load("cifar10", split="test", data_dir="~/data")        # torchvision Dataset with .info

Embedded (TensorData, ``data_dir``/``download`` ignored): digits, canvas_digits, ct_slices, seq_comb, freq_shape,
tokens. Real (need ``data_dir``): cifar10, cifar100, fashion_mnist, eurosat, tiny_imagenet, imagenet_val,
imagenet_vehicles, ct_contrast, sst2, pam, boiler.
Images are (N, C, H, W) normalised per channel (``info['mean']``, ``info['std']``), series (N, T, C), tokens (N, L)
int64 with pad id 0. Randomness: a non-negative integer ``seed`` turned into CPU ``torch.Generator`` streams.
Tiny fake copies of the real datasets in their on-disk formats (the loader tests, and the ``paper-dry`` profile's
folder) are written by the tests' support module ``tests/support/paper_dry.py``.
Your own images: :func:`image_folder` (class subfolders or a flat folder, optional labels CSV) through the model's
own preprocessing (``fl.models.preprocessing``).
"""

from ._core import (
    TensorData,
    fraction_subset,
    generator,
    kfold_indices,
    split_indices,
    switch_labels,
    to_tensors,
)
from ._embedded import CT_CLASS_NAMES, canvas_digits, ct_slices, digits, timeseries, tokens
from ._real.ct import ct_contrast
from ._real.images import (
    CIFAR10_STATS,
    CIFAR100_STATS,
    FASHION_MNIST_STATS,
    IMAGENET_STATS,
    TINY_IMAGENET_STATS,
    ArrayImages,
    ImageFiles,
    cifar10,
    cifar100,
    eurosat,
    fashion_mnist,
    imagenet_val,
    imagenet_vehicles,
    tiny_imagenet,
)
from ._real.series import boiler, pam
from ._real.text import sst2
from .folder import IMAGE_EXTENSIONS, ImageFolderData, image_folder
from .loading import available, load

__all__ = [
    "TensorData", "load", "available", "to_tensors", "generator",
    "split_indices", "kfold_indices", "fraction_subset", "switch_labels",
    "digits", "canvas_digits", "ct_slices", "timeseries", "tokens", "CT_CLASS_NAMES",
    "cifar10", "cifar100", "fashion_mnist", "eurosat", "tiny_imagenet", "imagenet_val", "imagenet_vehicles",
    "ct_contrast", "sst2", "pam", "boiler",
    "ImageFiles", "ArrayImages", "image_folder", "ImageFolderData", "IMAGE_EXTENSIONS",
    "CIFAR10_STATS", "CIFAR100_STATS", "FASHION_MNIST_STATS", "IMAGENET_STATS", "TINY_IMAGENET_STATS",
]

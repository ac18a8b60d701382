"""The one entry point of :mod:`faithlab.data`: :func:`load` a dataset by name, :func:`available` the names it
accepts (the embedded generators first, then the papers' real datasets behind a ``data_dir``)."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from faithlab.data._core import TensorData
from faithlab.data._embedded import canvas_digits, ct_slices, digits, timeseries, tokens
from faithlab.data._real.ct import ct_contrast
from faithlab.data._real.images import (cifar10, cifar100, eurosat, fashion_mnist, imagenet_val, imagenet_vehicles,
                                        tiny_imagenet)
from faithlab.data._real.series import boiler, pam
from faithlab.data._real.text import sst2

__all__ = ["available", "load"]

_EMBEDDED = {
    "digits": digits,
    "canvas_digits": canvas_digits,
    "ct_slices": ct_slices,
    "seq_comb": functools.partial(timeseries, "seq_comb"),
    "freq_shape": functools.partial(timeseries, "freq_shape"),
    "tokens": tokens,
}
_REAL = {
    "cifar10": cifar10,
    "cifar100": cifar100,
    "fashion_mnist": fashion_mnist,
    "eurosat": eurosat,
    "tiny_imagenet": tiny_imagenet,
    "imagenet_val": imagenet_val,
    "imagenet_vehicles": imagenet_vehicles,
    "ct_contrast": ct_contrast,
    "sst2": sst2,
    "pam": pam,
    "boiler": boiler,
}


def available() -> list[str]:
    """Names accepted by :func:`load`: the embedded datasets first, then the real ones."""
    return [*_EMBEDDED, *_REAL]


def load(
    name: str,
    *,
    split: str = "train",
    data_dir: str | Path | None = None,
    seed: int = 0,
    download: bool = False,
    **params: Any,
) -> TensorData | Dataset:
    """Load dataset ``name`` (see :func:`available`) — the one entry point of ``faithlab.data``.

    ``params`` go to the dataset's function (e.g. ``size``, ``r``, ``classes`` for canvas_digits; ``n``,
    ``contrast`` for ct_slices; ``n``, ``length`` for the series). Embedded datasets ignore ``data_dir`` and
    ``download``; real ones use ``seed`` only where they draw a split (eurosat). Unknown names raise ValueError
    listing the available ones.
    """
    if name in _EMBEDDED:
        return _EMBEDDED[name](split=split, seed=seed, **params)
    if name in _REAL:
        loader = _REAL[name]
        if "seed" in inspect.signature(loader).parameters:
            params["seed"] = seed
        return loader(split=split, data_dir=data_dir, download=download, **params)
    raise ValueError(f"name must be one of {available()}, got {name!r}")

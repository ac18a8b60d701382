"""Seeded, cached training and fine-tuning, and evaluation.

:func:`fit` trains a :func:`faithlab.models.build` model once per configuration and caches its weights (see
:mod:`faithlab.train.cache`); a second call with the same configuration loads them and trains nothing.
:func:`finetune` does the same starting from a trained model (F-Fidelity eq. 5 with
:class:`~faithlab.train.augment.RandomRemoval`).

Randomness: one ``seed`` gives the weight initialisation, the shuffling, the augmentation draws and dropout. Model
init and dropout use the global RNG inside ``torch.random.fork_rng``, so the caller's global RNG state is left
untouched; shuffling and augmentations use CPU ``torch.Generator`` objects (drawn on CPU, then moved to the device).
Training on CPU is bitwise reproducible; on a GPU, non-deterministic kernels may make runs differ slightly.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

import faithlab
from faithlab import _progress, _validate, models
from faithlab.train.augment import AUGMENTATIONS, Compose, check_hook
from faithlab.train.batching import batches, check_data
from faithlab.train.cache import cache_files, cache_key, data_digest, load_cached, save_cached, training_lock

__all__ = ["TrainConfig", "finetune", "fit", "loss_and_accuracy"]

_OPTIMIZERS = ("adam", "adamw", "sgd")
_SCHEDULERS = (None, "cosine")


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (all part of the cache key).

    optimizer: "adam" | "adamw" | "sgd" (``momentum`` is used by SGD only). scheduler: None or "cosine" (per
    epoch over ``epochs``). augment: names from :data:`AUGMENTATIONS`, applied in order before any hook.
    drop_last: skip the last incomplete batch of each epoch (avoids size-1 batches with batch norm).
    """

    epochs: int = 10
    lr: float = 1e-3
    weight_decay: float = 0.0
    optimizer: str = "adam"
    batch_size: int = 128
    seed: int = 0
    momentum: float = 0.9
    scheduler: str | None = None
    augment: tuple[str, ...] = ()
    drop_last: bool = False

    def __post_init__(self) -> None:
        _validate.positive_int(self.epochs, "epochs")
        _validate.positive_int(self.batch_size, "batch_size")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        for name, positive in (("lr", True), ("weight_decay", False), ("momentum", False)):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not (number and (value > 0 if positive else value >= 0)):
                sign = "positive" if positive else "non-negative"
                raise ValueError(f"{name} must be a finite {sign} number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.optimizer not in _OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {_OPTIMIZERS}, got {self.optimizer!r}")
        if self.scheduler not in _SCHEDULERS:
            raise ValueError(f"scheduler must be one of {_SCHEDULERS}, got {self.scheduler!r}")
        augment = (self.augment,) if isinstance(self.augment, str) else tuple(self.augment)
        unknown = [a for a in augment if a not in AUGMENTATIONS]
        if unknown:
            raise ValueError(f"augment must name entries of {list(AUGMENTATIONS)}, got {unknown}")
        object.__setattr__(self, "augment", augment)


@contextmanager
def _private_global_rng(seed: int) -> Iterator[None]:
    """Seed the global CPU (and CUDA) RNG inside a fork, restoring the caller's state on exit."""
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed)
        yield


def _loss(logits: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy over N ≥ 2 logits; binary cross-entropy on the logit of a single-output model (class 1 =
    logit > 0), the CT classifiers of Few-class Fidelity (spec §2.5)."""
    if logits.shape[1] == 1:
        return F.binary_cross_entropy_with_logits(logits[:, 0], y.to(logits.dtype), reduction=reduction)
    return F.cross_entropy(logits, y, reduction=reduction)


def _predicted(logits: torch.Tensor) -> torch.Tensor:
    return (logits[:, 0] > 0).long() if logits.shape[1] == 1 else logits.argmax(dim=1)


@torch.no_grad()
def loss_and_accuracy(model: nn.Module, data: Dataset, *, batch_size: int = 256,
                      device: torch.device | str | None = None) -> dict[str, float]:
    """Mean cross-entropy ``loss`` and ``accuracy`` (higher is better) of an eval-mode model on a dataset, as the dict
    ``{"loss": float, "accuracy": float}``; a single-logit model is read as binary (sigmoid, class 1 = logit > 0).
    (Model accuracy, not an explanation metric: those are :func:`faithlab.evaluate`.)"""
    _validate.eval_mode(model)
    n = check_data(data, "data")
    _validate.positive_int(batch_size, "batch_size")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    loss = correct = 0.0
    for _, xb, yb in batches(data, torch.arange(n), batch_size, device):
        logits = model(xb)
        loss += float(_loss(logits, yb, reduction="sum"))
        correct += float((_predicted(logits) == yb).sum())
    return {"loss": loss / n, "accuracy": correct / n}


def _optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    cls = torch.optim.Adam if config.optimizer == "adam" else torch.optim.AdamW
    return cls(params, lr=config.lr, weight_decay=config.weight_decay)


def _train(model: nn.Module, train_data: Dataset, config: TrainConfig, hook, test_data: Dataset | None,
           device: torch.device, generators: tuple[torch.Generator, torch.Generator], progress: bool, desc: str
           ) -> dict[str, Any]:
    """The epoch loop; leaves the best-on-test (or last) weights in ``model`` and returns the history."""
    shuffle_gen, aug_gen = generators
    n = len(train_data)
    opt = _optimizer(model, config)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, config.epochs) if config.scheduler == "cosine" else None
    epochs, best_acc, best_epoch, best_state = [], -1.0, config.epochs, None
    bar = tqdm(range(1, config.epochs + 1), desc=desc, disable=not progress)
    for epoch in bar:
        model.train()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device, dtype=torch.long)
        seen = 0
        order = torch.randperm(n, generator=shuffle_gen, device=shuffle_gen.device)
        for idx, xb, yb in batches(train_data, order, config.batch_size, device, config.drop_last):
            if hook is not None:
                xb = hook(xb, yb, idx, aug_gen)
            logits = model(xb)
            loss = _loss(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(yb)
            correct += (_predicted(logits.detach()) == yb).sum()
            seen += len(yb)
        train_loss = float(loss_sum) / seen
        if not math.isfinite(train_loss):
            raise RuntimeError(f"training loss became {train_loss} in epoch {epoch} of {config.epochs} "
                               f"(lr={config.lr}); lower the learning rate or check the data")
        if sched is not None:
            sched.step()
        row = {"epoch": epoch, "train_loss": train_loss, "train_acc": float(correct) / seen}
        if test_data is not None:
            model.eval()
            scores = loss_and_accuracy(model, test_data, batch_size=config.batch_size, device=device)
            row.update(test_loss=scores["loss"], test_acc=scores["accuracy"])
            if scores["accuracy"] > best_acc:
                best_acc, best_epoch = scores["accuracy"], epoch
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        epochs.append(row)
        bar.set_postfix({k: round(v, 4) for k, v in row.items() if k != "epoch"})
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"epochs": epochs, "best_epoch": best_epoch}


def _run(make_model: Callable[[], nn.Module], spec: dict, train_data: Dataset, config: TrainConfig, augment,
         test_data: Dataset | None, cache: bool, cache_dir, device: torch.device, progress: bool, desc: str
         ) -> tuple[nn.Module, dict[str, Any]]:
    """Shared body of fit/finetune: validate, look up the cache, else train seeded and write the cache."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    check_data(train_data, "train_data")
    if test_data is not None:
        check_data(test_data, "test_data")
    if augment is not None:
        check_hook(augment, "augment")
    named = [AUGMENTATIONS[name]() for name in config.augment]
    hooks = [*named, *([augment] if augment is not None else [])]
    hook = Compose(*hooks) if hooks else None
    spec = {**spec, "train": dataclasses.asdict(config), "augment": None if augment is None else augment.key,
            "test_data": None if test_data is None else data_digest(test_data), "version": faithlab.__version__}
    key = cache_key(spec)
    weights_file, history_file = cache_files(key, cache_dir) if cache else (None, None)

    master = torch.Generator().manual_seed(config.seed)
    init_seed, shuffle_seed, aug_seed = torch.randint(0, 2**62, (3,), generator=master, device="cpu").tolist()
    # One process trains a given entry at a time: others (e.g. the shards of a notebook, started together) wait,
    # then load what it saved instead of training the same model again.
    with training_lock(weights_file), _private_global_rng(init_seed):
        model = make_model()
        # An unusable entry is warned about, deleted and retrained (the model is left as initialised).
        history = load_cached(model, weights_file, history_file) if cache else None
        if history is not None:
            return model.to(device).eval(), {**history, "from_cache": True}
        model.to(device)
        start = time.perf_counter()
        generators = (torch.Generator().manual_seed(shuffle_seed), torch.Generator().manual_seed(aug_seed))
        history = _train(model, train_data, config, hook, test_data, device, generators, progress, desc)
        history = {"key": key, **history, "train_seconds": time.perf_counter() - start, "spec": spec}
        if cache:
            state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
            save_cached(state, history, weights_file, history_file)
    return model.eval(), {**history, "from_cache": False}


def fit(
    model_name: str,
    model_config: dict,
    train_data: Dataset,
    config: TrainConfig,
    *,
    data_key: str | dict,
    test_data: Dataset | None = None,
    augment=None,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    device: torch.device | str | None = None,
    progress: bool | None = None,
) -> tuple[nn.Module, dict[str, Any]]:
    """Train ``models.build(model_name, **model_config)`` with cross-entropy (binary cross-entropy on the logit of a
    single-output model, ``n_classes=1``), or load it from the cache.

    train_data/test_data: torch Datasets yielding (x, y); TensorData / TensorDataset are indexed directly (fast
    path). data_key: a string or JSON-serialisable dict that identifies the training data (name, split, size,
    seed, …) in the cache key. With ``test_data`` the weights of the epoch with the best test accuracy are kept (as
    the F-Fidelity code; a digest of its contents is part of the cache key), else the last. augment: a hook (see
    :mod:`faithlab.train.augment`), applied after ``config.augment``. device: default CUDA if available, else CPU.
    progress: a tqdm bar over the epochs (None: on unless the environment sets ``FAITHLAB_PROGRESS=0``, as the study
    runner does for its kernels).
    Raises RuntimeError naming the epoch if the loss becomes NaN/inf.
    Returns (model in eval mode on device, history dict with ``key``, per-epoch ``epochs`` rows, ``best_epoch``,
    ``train_seconds``, ``spec`` and ``from_cache``).
    """
    if model_name not in models.available():
        raise ValueError(f"model_name must be one of {models.available()}, got {model_name!r}")
    if not isinstance(model_config, dict):
        raise TypeError(f"model_config must be a dict, got {type(model_config).__name__}")
    spec = {"model": model_name, "model_config": model_config, "data": data_key}
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return _run(lambda: models.build(model_name, **model_config), spec, train_data, config, augment,
                test_data, cache, cache_dir, dev, _progress.enabled(progress), model_name)


def finetune(
    model: nn.Module,
    train_data: Dataset,
    config: TrainConfig,
    augment=None,
    *,
    data_key: str | dict,
    base_key: str,
    test_data: Dataset | None = None,
    cache: bool = True,
    cache_dir: str | os.PathLike | None = None,
    device: torch.device | str | None = None,
    progress: bool | None = None,
) -> tuple[nn.Module, dict[str, Any]]:
    """:func:`fit` starting from a copy of ``model``'s weights (``model`` itself is not modified), e.g. F-Fidelity
    fine-tuning (eq. 5) with ``augment=RandomRemoval(0.1)``. base_key: the base model's cache key
    (``history["key"]`` of its :func:`fit`). device: default the model's device."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(base_key, str) or not base_key:
        raise ValueError(f"base_key must be a non-empty string (the base model's cache key), got {base_key!r}")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    spec = {"base": base_key, "data": data_key}
    return _run(lambda: copy.deepcopy(model), spec, train_data, config, augment, test_data, cache,
                cache_dir, dev, _progress.enabled(progress), "finetune")

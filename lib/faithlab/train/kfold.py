"""k-fold cross-training (ReCo/MeGe Algorithm 1, spec §4.1) and the model degradations of its validation (§4.5).

:func:`cross_train` splits a dataset D into k random blocks B_0..B_{k−1} and trains model i on D \\ B_i with the
cached, seeded :func:`~faithlab.train.fit` (one cache entry per fold and degradation). Degradations apply to all k
models alike: ``limited`` (each model trained on a random fraction of D \\ B_i), ``switched`` (a fraction of D's
training labels replaced by another class before training) and ``randomised`` (after training, a fraction of the
parameterised layers, cascading from the output, get Gaussian noise of their own weights' std: :func:`randomise_layers`).
"""

from __future__ import annotations

import copy
import hashlib
import math
import numbers
import os
from dataclasses import dataclass, field

import torch
from torch import nn

from faithlab import _validate
from faithlab.data import TensorData
from faithlab.data._core import floor_count, fraction_subset, kfold_indices, switch_labels
from faithlab.train.loop import TrainConfig, fit, loss_and_accuracy

__all__ = ["CrossTrained", "cross_train", "parameterised_layers", "randomise_layers"]


@dataclass
class CrossTrained:
    """k models cross-trained on the folds of D.

    models: the k models (eval mode); folds ``(N,)`` int64: for each sample of D, the index of the one model not
    trained on it (its block); accuracy ``(k,)``: each model's accuracy on its held-out block (true labels);
    histories: the :func:`~faithlab.train.fit` histories; degradation: what was applied
    (``limited``/``switched``/``randomised`` fractions, None = not applied), ``randomised_layers`` (names),
    ``train_sizes`` (samples each model was trained on) and ``labels_switched`` (labels of D changed).
    """

    models: list[nn.Module]
    folds: torch.Tensor
    accuracy: torch.Tensor
    histories: list[dict]
    degradation: dict = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.models)

    def comparable(self, tolerance: float = 0.03) -> bool:
        """True when every model's held-out accuracy lies within ``tolerance`` of their mean (the paper's ±3 %)."""
        return bool(((self.accuracy - self.accuracy.mean()).abs() <= tolerance + 1e-12).all())

    @torch.no_grad()
    def predictions(self, x: torch.Tensor, *, batch_size: int = 256) -> torch.Tensor:
        """Predicted classes ``(k, N)`` of every model on inputs x (single-logit models: logit > 0), on the CPU.

        x must lie on the models' device and hold no NaN or inf: both are checked before any model is called (a
        ValueError naming ``x``)."""
        _validate.tensor(x, "x")
        batch_size = _validate.positive_int(batch_size, "batch_size")
        for i, model in enumerate(self.models):
            _validate.model_device(model, x, f"models[{i}]", "x")
        _validate.finite(x, "x")
        rows = []
        for i, model in enumerate(self.models):
            preds = []
            for b0 in range(0, x.shape[0], batch_size):
                logits = model(x[b0:b0 + batch_size])
                if not bool(torch.isfinite(logits.abs().amax())):
                    raise ValueError(f"models[{i}] returned NaN or inf logits on samples "
                                     f"{b0}..{b0 + len(logits) - 1}")
                preds.append((logits[:, 0] > 0).long() if logits.shape[1] == 1 else logits.argmax(1))
            rows.append(torch.cat(preds).cpu())
        return torch.stack(rows)


def parameterised_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The convolution and linear layers of a model that own a weight (batch-norm and other layers excluded), in
    the order the model registers them (input → output)."""
    kinds = (nn.modules.conv._ConvNd, nn.Linear)
    return [(name, m) for name, m in model.named_modules()
            if isinstance(m, kinds) and isinstance(getattr(m, "weight", None), nn.Parameter)]


@torch.no_grad()
def randomise_layers(model: nn.Module, fraction: float, *, generator: torch.Generator | int,
                     scale: float = 1.0) -> tuple[nn.Module, list[str]]:
    """Weight randomisation (spec §4.5, [recon]): a copy of ``model`` in which the last ⌈fraction · L⌉ of its L
    :func:`parameterised_layers` (cascading from the output, as Adebayo et al.) get N(0, (scale·σ_l)²) added to
    their weights, σ_l the std of that layer's weights. scale: 1 in ReCo/MeGe's degradation; small values give the
    slight model perturbations of a meta-evaluation (MetaQuantus), large ones a model whose weights are mostly
    noise. ``model`` is not modified. Returns (copy in eval mode, the randomised layers' names, output side first)."""
    fraction = _validate.fraction(fraction, "fraction")
    scale = _validate.number(scale, "scale")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    gen = _validate.generator(generator, why="to draw the noise")
    out = copy.deepcopy(model).eval()
    layers = parameterised_layers(out)
    if not layers:
        raise ValueError("model has no convolution or linear layer to randomise")
    count = math.ceil(fraction * len(layers) - 1e-9)
    chosen = layers[::-1][:count]
    for _, layer in chosen:
        w = layer.weight
        noise = torch.randn(w.shape, generator=gen, dtype=torch.float64, device=gen.device).to(w.device, w.dtype)
        w.add_(noise * (scale * w.detach().double().std()).to(w.dtype))
    return out, [name for name, _ in chosen]


def _digest(data: TensorData) -> str:
    """SHA-256 of a data set's tensors x and y (dtype, shape and bytes, on the CPU): its cache identity when the
    caller names none."""
    h = hashlib.sha256()
    for t in (data.x, data.y):
        t = t.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _check_finite(data: TensorData) -> None:
    """Raise, naming ``data.x`` or ``data.y`` and the first sample concerned, if either holds NaN or inf: training
    would only stop later, with "training loss became nan". One vectorised pass per tensor (``_validate.finite``);
    the samples are looked for only once a bad value is known."""
    for name in ("x", "y"):
        t = getattr(data, name)
        try:
            _validate.finite(t, f"data.{name}")
        except ValueError:
            bad = ~torch.isfinite(t.reshape(t.shape[0], -1)).all(dim=1)
            raise ValueError(f"data.{name} holds NaN or inf in {int(bad.sum())} of {t.shape[0]} samples, the first "
                             f"at index {int(bad.nonzero()[0, 0])}; drop or repair them before training (e.g. "
                             f"data.subset(torch.isfinite(data.{name}.reshape(len(data), -1)).all(1)))") from None


def _check_labels(data: TensorData, model_config) -> None:
    """Raise, naming ``data.y``, if a label lies outside ``data.n_classes`` or the classes of the model that
    ``model_config["n_classes"]`` builds (a single logit: classes 0 and 1): training would stop in torch's loss
    with "Target … is out of bounds"."""
    if data.y.numel() == 0:
        return
    low, high = int(data.y.min()), int(data.y.max())
    if low < 0:
        raise ValueError(f"data.y must hold class indices ≥ 0, got label {low}")

    def count(value) -> int | None:
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0
        return int(value) if ok else None

    limits = []
    if (info := count(data.info.get("n_classes"))) is not None:
        limits.append((info, f"data.n_classes is {info}"))
    if (width := count(model_config.get("n_classes") if isinstance(model_config, dict) else None)) is not None:
        classes = 2 if width == 1 else width
        limits.append((classes, f"model_config's n_classes={width} gives the model {classes} classes"))
    for classes, why in limits:
        if high >= classes:
            raise ValueError(f"data.y holds label {high} but {why} (labels 0..{classes - 1})")


def cross_train(model_name: str, model_config: dict, data: TensorData, config: TrainConfig, *,
                data_key: str | dict | None = None, k: int = 5, seed: int = 0, limited: float | None = None,
                switched: float | None = None, randomised: float | None = None, cache: bool = True,
                cache_dir: str | os.PathLike | None = None, device: torch.device | str | None = None,
                progress: bool | None = None) -> CrossTrained:
    """Algorithm 1 of ReCo/MeGe: k models of ``models.build(model_name, **model_config)``, model i trained on
    D \\ B_i with :func:`~faithlab.train.fit` (cached per fold), optionally degraded.

    data_key: a string or JSON-serialisable dict that identifies D in the cache key (name, split, size, …); None:
    a SHA-256 digest of D's tensors ``x`` and ``y`` (read once on the CPU), so that two data sets never share an
    entry.
    data: the TensorData D (every sample is later explained by every model). k: folds (paper 5). seed: the blocks,
    the label switching, the limited subsets and the weight noise (training itself is seeded by ``config.seed``).
    limited: train each model on that fraction of D \\ B_i (75/50/25 % in the paper); switched: that fraction of
    D's labels replaced by a uniformly drawn other class before training (5/10/30 %); randomised: the fraction of
    layers randomised after training (5/10/30 %, :func:`randomise_layers`). Held-out accuracies use the true labels.
    """
    if not isinstance(data, TensorData):
        raise TypeError(f"data must be a faithlab TensorData, got {type(data).__name__}")
    k = _validate.positive_int(k, "k")
    _check_finite(data)
    _check_labels(data, model_config)
    # the degradations are checked here, so that a bad one is named as the caller wrote it (the values, not
    # their float(), go into the cache key as before)
    if limited is not None:
        _validate.fraction(limited, "limited", closed_low=False)
    if switched is not None:
        _validate.fraction(switched, "switched")
    if randomised is not None:
        _validate.fraction(randomised, "randomised")
    n = len(data)
    splits = kfold_indices(n, k, seed=seed)
    if limited is not None:
        smallest = min(train_idx.numel() for train_idx, _ in splits)
        if floor_count(limited, smallest) < 1:
            raise ValueError(f"limited must keep at least one sample: {limited} of a fold's {smallest} training "
                             "samples keeps none")
    folds = torch.empty(n, dtype=torch.int64)
    for i, (_, block) in enumerate(splits):
        folds[block] = i
    labels = data.y
    if switched is not None:
        labels = switch_labels(data.y, switched, data.n_classes, seed=seed)
    if data_key is None:
        data_key = {"digest": _digest(data)} if cache else None
    key = data_key if isinstance(data_key, dict) else {"data": data_key}
    models, histories, accuracy, names, sizes = [], [], [], [], []
    for i, (train_idx, block) in enumerate(splits):
        if limited is not None:
            train_idx = train_idx[fraction_subset(train_idx.numel(), limited, seed=seed + 1000 * (i + 1))]
        sizes.append(train_idx.numel())
        train_data = TensorData(data.x[train_idx], labels[train_idx], info=data.info)
        fold_key = {**key, "kfold": {"k": k, "seed": seed, "fold": i, "limited": limited, "switched": switched}}
        model, history = fit(model_name, model_config, train_data, config, data_key=fold_key, cache=cache,
                             cache_dir=cache_dir, device=device, progress=progress)
        if randomised is not None:
            model, names = randomise_layers(model, randomised, generator=torch.Generator().manual_seed(seed + i))
        accuracy.append(loss_and_accuracy(model, data.subset(block), batch_size=config.batch_size)["accuracy"])
        models.append(model)
        histories.append(history)
    degradation = {"limited": limited, "switched": switched, "randomised": randomised, "randomised_layers": names,
                   "train_sizes": sizes, "labels_switched": int((labels != data.y).sum())}
    return CrossTrained(models, folds, torch.tensor(accuracy, dtype=torch.float64), histories, degradation)

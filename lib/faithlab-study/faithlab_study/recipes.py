"""Trained models that several notebooks share: one recipe, one configuration, one cache entry.

A recipe loads an embedded dataset, trains (or loads from the cache of :func:`faithlab.train.fit`) a model with
fixed hyper-parameters, and returns it in eval mode with its data, so that two notebooks asking for the same
arguments get the very same weights.
"""

from __future__ import annotations

import torch

from faithlab import data, train
from faithlab_study.verdicts.replication import Replica, data_seed, training_seed


def digits_vit(*, image_size: int = 16, patch_size: int = 4, dim: int = 48, depth: int = 4, heads: int = 4,
               n_epochs: int = 30, seed: int = 0, replica: Replica | None = None,
               device: str | torch.device = "cpu"):
    """Small ViT on grey scikit-learn digits (SaCo chapter) → ``(model, train_data, test_data)``.

    Digits upsampled to ``image_size`` ², normalised per channel, split by ``seed``; ``patch_size`` ² patches, CLS
    token, pre-norm blocks; AdamW (lr 2e-3, weight decay 0.05), cosine schedule, batch 64, best test epoch kept.
    replica: the trained replica (:func:`faithlab_study.verdicts.replicas`): ``replica.seed`` seeds the training
    (initialisation, batch order; None: ``seed``), part of the training cache key, so that the replicas of one setting
    share the data split.
    """
    train_seed = training_seed(seed, replica)
    train_data = data.load("digits", split="train", size=image_size, seed=seed)
    test_data = data.load("digits", split="test", size=image_size, seed=seed)
    model_config = {"image_size": image_size, "patch_size": patch_size, "in_channels": 1, "n_classes": 10,
                    "dim": dim, "depth": depth, "heads": heads}
    config = train.TrainConfig(epochs=n_epochs, lr=2e-3, batch_size=64, seed=train_seed, optimizer="adamw",
                               weight_decay=0.05, scheduler="cosine")
    model, _ = train.fit("vit", model_config, train_data, config, test_data=test_data, device=device,
                         progress=False, data_key={"dataset": "digits", "size": image_size, "seed": seed})
    return model.to(device).eval(), train_data, test_data


def canvas_classifier(*, image_size: int = 16, r: float = 0.3, color: bool = False, n_train: int | None = None,
                      model_name: str = "small_cnn", width: float = 16, n_epochs: int = 8, clutter: int = 0,
                      seed: int = 0, replica: Replica | None = None, device: str | torch.device = "cpu"):
    """Classifier of the F-Fidelity image chapter on canvas digits → ``(model, history, train_data, test_data)``.

    Digits covering a fraction ``r`` of an ``image_size``² canvas (grey or coloured; ``clutter`` fragments of other
    digits per canvas), ``n_train`` training images (None: all); ``model_name`` "small_cnn" (or "resnet9") of
    ``width``; Adam lr 3e-3, batch 64, best test epoch kept. ``history`` feeds :func:`ffidelity_finetune`.
    seed: the notebook's; replica: the trained replica (:func:`faithlab_study.verdicts.replicas`), whose
    ``replica.seed`` seeds the training (initialisation, batch order; None: ``seed``), part of the cache key through
    the training config. Each replica trains and is tested on its own draw of the canvases, seeded by
    :func:`~faithlab_study.verdicts.replication.data_seed` of ``seed`` and the replica's index (None: ``seed``
    itself), in the cache key through the data: the models of replica r of every setting share that draw.
    """
    canvas = {"size": image_size, "r": r, "color": color, "seed": data_seed(seed, replica),
              **({"clutter": clutter} if clutter else {})}
    train_data = data.load("canvas_digits", split="train", n=n_train, **canvas)
    test_data = data.load("canvas_digits", split="test", **canvas)
    model_config = {"in_channels": 3 if color else 1, "n_classes": 10, "width": width}
    config = train.TrainConfig(epochs=n_epochs, lr=3e-3, batch_size=64, seed=training_seed(seed, replica))
    model, history = train.fit(model_name, model_config, train_data, config, test_data=test_data, device=device,
                               progress=False, data_key={"dataset": "canvas_digits", "n": n_train, **canvas})
    return model.to(device).eval(), history, train_data, test_data


SERIES_MODELS = ("cnn1d", "bilstm")
TEXT_MODELS = ("lstm_text", "transformer_text")
SERIES_TEXT_LR = 3e-3  # Adam's learning rate of the series/text recipe: training, ROAR retraining, fine-tuning
DISPLAY_NAMES = {"small_cnn": "CNN", "resnet9": "ResNet-9", "vit": "ViT", "cnn1d": "CNN-1D", "bilstm": "Bi-LSTM",
                 "lstm_text": "LSTM", "transformer_text": "Transformer"}
"""How the book names the recipes' architectures in its tables."""


def series_text_classifier(name: str, *, n_train: int, n_test: int, length: int, width: int = 16,
                           kernel_size: int = 9, lstm_layers: int = 1, tf_dim: int = 32, n_epochs: int = 20,
                           offset: float = 0.0, positional: bool = False, seed: int = 0,
                           device: str | torch.device = "cpu"):
    """Classifier of the F-Fidelity series/text chapter → ``(model, history, train_data, test_data)``.

    name: a series model of :data:`SERIES_MODELS` on ``seq_comb`` (one channel, salient windows of 10–20 % of
    ``length``, every value shifted by ``offset``: with an offset the zeroed time step is out of distribution) or
    a text model of :data:`TEXT_MODELS` on ``tokens`` (sequences of ``length`` tokens). width: the CNN-1D channels
    / bi-LSTM hidden size / text LSTM embedding and hidden size; positional: the CNN-1D gets the time position as
    an input channel, so it can tell which window came first; tf_dim: the transformer's width (depth 2, 4 heads).
    Adam lr 3e-3, batch 64, best test epoch kept.
    """
    if name in SERIES_MODELS:
        window = (max(2, length // 10), length // 5)
        splits = [data.load("seq_comb", split=s, n=n, length=length, window=window, offset=offset, seed=seed)
                  for s, n in (("train", n_train), ("test", n_test))]
    elif name in TEXT_MODELS:
        splits = [data.load("tokens", split=s, n=n, length=length, seed=seed)
                  for s, n in (("train", n_train), ("test", n_test))]
    else:
        raise ValueError(f"name must be one of {SERIES_MODELS + TEXT_MODELS}, got {name!r}")
    train_data, test_data = splits
    n_classes, vocab = train_data.info["n_classes"], train_data.info.get("vocab_size")
    model_config = {
        "cnn1d": {"in_channels": 1, "n_classes": n_classes, "width": width, "kernel_size": kernel_size,
                  **({"positional": True} if positional else {})},
        "bilstm": {"in_channels": 1, "n_classes": n_classes, "hidden": width, "layers": lstm_layers},
        "lstm_text": {"vocab_size": vocab, "n_classes": 2, "embed_dim": width, "hidden": width},
        "transformer_text": {"vocab_size": vocab, "n_classes": 2, "dim": tf_dim, "depth": 2, "heads": 4,
                             "max_len": length},
    }[name]
    key = {"dataset": train_data.info["name"], "n": len(train_data), "length": train_data.x.shape[1], "seed": seed,
           "window": list(train_data.info.get("window", ())), **({"offset": float(offset)} if offset else {})}
    config = train.TrainConfig(epochs=n_epochs, lr=SERIES_TEXT_LR, batch_size=64, seed=seed)
    model, history = train.fit(name, model_config, train_data, config, data_key=key, test_data=test_data,
                               device=device, progress=False)
    return model.to(device).eval(), history, train_data, test_data


def ffidelity_finetune(model: torch.nn.Module, history: dict, train_data, test_data, *, beta: float = 0.1,
                       units: str = "pixels", reference: str = "zero", n_epochs: int = 4, lr: float = 1e-3,
                       seed: int = 0, device: str | torch.device = "cpu") -> torch.nn.Module:
    """F-Fidelity fine-tuning (eq. 5) of a model from a recipe above → the fine-tuned model in eval mode.

    ``RandomRemoval(beta, units, reference)`` (up to ⌊β·n⌋ pixels / time steps / tokens replaced by the reference
    per sample: zero, or for text ``"removed_token"``, the zero embedding the evaluation then uses), Adam at
    ``lr``, batch 64, best test epoch kept; cached under the base model's key (``history["key"]``).
    """
    config = train.TrainConfig(epochs=n_epochs, lr=lr, batch_size=64, seed=seed)
    tuned, _ = train.finetune(model, train_data, config, train.RandomRemoval(beta, units=units, reference=reference),
                              data_key=history["spec"]["data"], base_key=history["key"], test_data=test_data,
                              device=device, progress=False)
    return tuned.to(device).eval()

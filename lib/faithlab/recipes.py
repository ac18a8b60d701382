"""Trained models that several notebooks share: one recipe, one configuration, one cache entry.

A recipe loads an embedded dataset, trains (or loads from the cache of :func:`faithlab.train.fit`) a model with
fixed hyper-parameters, and returns it in eval mode with its data, so that two notebooks asking for the same
arguments get the very same weights.
"""

from __future__ import annotations

import torch

from faithlab import data, train


def digits_vit(image_size: int = 16, patch_size: int = 4, dim: int = 48, depth: int = 4, heads: int = 4,
               n_epochs: int = 30, seed: int = 0, device: str | torch.device = "cpu"):
    """Small ViT on grey scikit-learn digits (SaCo chapter) → ``(model, train_data, test_data)``.

    Digits upsampled to ``image_size``², normalised per channel; ``patch_size``² patches, CLS token, pre-norm
    blocks; AdamW (lr 2e-3, weight decay 0.05), cosine schedule, batch 64, best test epoch kept.
    """
    train_data = data.load("digits", split="train", size=image_size, seed=seed)
    test_data = data.load("digits", split="test", size=image_size, seed=seed)
    model_config = {"image_size": image_size, "patch_size": patch_size, "in_channels": 1, "n_classes": 10,
                    "dim": dim, "depth": depth, "heads": heads}
    config = train.TrainConfig(epochs=n_epochs, lr=2e-3, batch_size=64, seed=seed, optimizer="adamw",
                               weight_decay=0.05, scheduler="cosine")
    model, _ = train.fit("vit", model_config, train_data, config, test_data=test_data, device=device,
                         progress=False, data_key={"dataset": "digits", "size": image_size, "seed": seed})
    return model.to(device).eval(), train_data, test_data

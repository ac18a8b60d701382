"""Seeded, cached training: ``fit``/``finetune``/``evaluate`` (loop), the config-hash cache (cache), batches of any
dataset (batching) and the augmentation hooks of F-Fidelity and ROAR (augment). Public names are gathered here."""

from faithlab.train.augment import AUGMENTATIONS, Compose, CropFlip, ExplanationGuidedRemoval, RandomRemoval
from faithlab.train.batching import data_tensors
from faithlab.train.cache import cache_key
from faithlab.train.loop import TrainConfig, evaluate, finetune, fit

__all__ = ["TrainConfig", "fit", "finetune", "evaluate", "cache_key", "data_tensors", "RandomRemoval",
           "ExplanationGuidedRemoval", "CropFlip", "Compose", "AUGMENTATIONS"]

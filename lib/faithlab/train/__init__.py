"""Seeded, cached training: ``fit``/``finetune``/``loss_and_accuracy`` (loop), the config-hash cache (cache), batches
of any dataset (batching), the augmentation hooks of F-Fidelity and ROAR (augment) and ReCo/MeGe's k-fold
cross-training with its degradations (kfold). Public names are gathered here."""

from faithlab.train.augment import AUGMENTATIONS, Compose, CropFlip, ExplanationGuidedRemoval, RandomRemoval
from faithlab.train.batching import data_tensors
from faithlab.train.cache import cache_key
from faithlab.train.kfold import CrossTrained, cross_train, parameterised_layers, randomise_layers
from faithlab.train.loop import TrainConfig, finetune, fit, loss_and_accuracy

__all__ = ["TrainConfig", "fit", "finetune", "loss_and_accuracy", "cache_key", "data_tensors", "RandomRemoval",
           "ExplanationGuidedRemoval", "CropFlip", "Compose", "AUGMENTATIONS", "CrossTrained", "cross_train",
           "parameterised_layers", "randomise_layers"]

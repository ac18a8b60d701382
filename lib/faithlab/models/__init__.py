"""Model zoo of the study: small CNNs, ResNet-9/18, a small VGG and MobileNet, a ViT with reachable attention,
series and text models, a 1-Lipschitz CNN, a fitted scikit-learn decision tree as a torch module
(:class:`DecisionTree`, built from the fitted tree, not by name), and pretrained torchvision/timm architectures.

Every model returns LOGITS ``(B, n_classes)``. Build one by name with :func:`build`; list names with
:func:`available`; add yours with :func:`register`. Image models take normalised ``(B, C, H, W)``, series models
``(B, T, C)``, text models ``(B, L)`` int64 token ids with pad id 0. Convolutional models expose
``model.cam_layer``, the module whose output Grad-CAM should use. :func:`pretrained` loads torchvision/timm
architectures (and their weights, if on disk); :func:`load` builds your model from a spec (``"torchvision:resnet18"``,
``"timm:<name>"``, a zoo name) and a local weights file, :func:`preprocessing` gives its own image transform and
:func:`cam_layer` the layer Grad-CAM reads. One concept per module: ``registry``, ``cnn``, ``vit``,
``sequence``, ``lipschitz``, ``tree``, ``loading``, ``names``, ``specs``, ``transforms``, ``layers``.
"""

from faithlab.models.cnn import (BasicBlock, DenseNetSmall, InvertedResidual, MobileNetSmall, ResNet9, ResNet18CIFAR,
                                SmallCNN, VGGSmall, XceptionSmall)
from faithlab.models.lipschitz import LipschitzCNN
from faithlab.models.layers import cam_layer
from faithlab.models.loading import CAM_LAYERS, pretrained, vit_from_timm
from faithlab.models.registry import available, build, register
from faithlab.models.specs import load
from faithlab.models.sequence import CNN1D, BiLSTM, FromEmbeddings, LSTMText, TransformerText
from faithlab.models.transforms import Preprocess, preprocessing
from faithlab.models.tree import DecisionTree
from faithlab.models.vit import MLP, Attention, Block, ViT

__all__ = ["register", "available", "build", "pretrained", "vit_from_timm", "load", "preprocessing", "Preprocess",
           "cam_layer", "SmallCNN", "ResNet9", "BasicBlock", "ResNet18CIFAR", "VGGSmall", "InvertedResidual",
           "MobileNetSmall", "DenseNetSmall", "XceptionSmall", "Attention", "MLP", "Block", "ViT",
           "BiLSTM", "CNN1D", "LSTMText", "TransformerText", "FromEmbeddings", "LipschitzCNN",
           "DecisionTree", "CAM_LAYERS"]

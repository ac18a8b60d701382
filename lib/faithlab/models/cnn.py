"""Convolutional image classifiers: a small CNN, ResNet-9 (F-Fidelity's CIFAR model) and a CIFAR ResNet-18. Each
returns logits and exposes ``cam_layer``, the feature map Grad-CAM reads."""

from __future__ import annotations

import torch
from torch import nn

from faithlab import _validate
from faithlab.models.registry import register, scaled as _scaled


def _conv_bn(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


@register("small_cnn")
class SmallCNN(nn.Module):
    """Three 3×3 conv blocks (ReLU; max-pool after the first two), global average pool, linear head."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        w = _validate.positive_int(width, "width")
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2 * w, n_classes)

    @property
    def cam_layer(self) -> nn.Module:
        return self.features[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)))


@register("resnet9")
class ResNet9(nn.Module):
    """F-Fidelity's ResNet-9 (App. C): prep conv64 → conv128+pool → res(128) → conv256+pool → conv512+pool →
    res(512) → global max pool → dropout → linear; every conv is 3×3+BN+ReLU; widths × ``width``.
    ``cam_layer`` is ``res2[-1]`` as in the F-Fidelity code."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, width: float = 1.0, dropout: float = 0.2) -> None:
        super().__init__()
        c1, c2, c3, c4 = (_scaled(b, width) for b in (64, 128, 256, 512))
        self.prep = _conv_bn(in_channels, c1)
        self.layer1 = nn.Sequential(_conv_bn(c1, c2), nn.MaxPool2d(2))
        self.res1 = nn.Sequential(_conv_bn(c2, c2), _conv_bn(c2, c2))
        self.layer2 = nn.Sequential(_conv_bn(c2, c3), nn.MaxPool2d(2))
        self.layer3 = nn.Sequential(_conv_bn(c3, c4), nn.MaxPool2d(2))
        self.res2 = nn.Sequential(_conv_bn(c4, c4), _conv_bn(c4, c4))
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(c4, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.res2[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer1(self.prep(x))
        x = x + self.res1(x)
        x = self.layer3(self.layer2(x))
        x = x + self.res2(x)
        return self.head(x)


class BasicBlock(nn.Module):
    """ResNet basic block: two 3×3 conv+BN, identity or 1×1 projection shortcut, ReLU after the sum."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(out + self.shortcut(x))


@register("resnet18_cifar")
class ResNet18CIFAR(nn.Module):
    """CIFAR-style ResNet-18 (ReCo/MeGe §4.7): 3×3 stem, no max-pool, 4 stages of 2 blocks with widths
    ``base_width``·(1, 2, 4, 8), global average pool, dropout, linear. ``cam_layer`` = ``layer4[-1]``."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, base_width: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        w = _validate.positive_int(base_width, "base_width")
        self.stem = nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU())
        widths, stages, c_in = (w, 2 * w, 4 * w, 8 * w), [], w
        for i, c_out in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)))
            c_in = c_out
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout),
                                  nn.Linear(c_in, n_classes))

    @property
    def cam_layer(self) -> nn.Module:
        return self.layer4[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.head(x)

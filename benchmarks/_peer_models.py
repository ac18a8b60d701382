"""The models the peers' side scripts (``_quantus_side.py``, ``_torchcam_side.py``) rebuild in the peer's own
environment, where faithlab is not installed: plain torch, imported from this folder (the side scripts run from
it, so it is on their ``sys.path``). Never imported by the project."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """faithlab's ``small_cnn``, rebuilt with the same parameter names (its state dict is loaded strictly, so a drift
    from the original fails)."""

    def __init__(self, in_channels: int, n_classes: int, width: int) -> None:
        super().__init__()
        w = width
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU()),
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2 * w, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.features(x)))

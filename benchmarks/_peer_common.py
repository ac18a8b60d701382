"""What the peers' side scripts (``_quantus_side.py``, ``_torchcam_side.py``) share, in plain torch: they run in the
peer's own environment, where faithlab is not installed, and import this from their folder (it is on their
``sys.path``); ``torchcam_peer.py`` uses the same recorder and replay on the project side. Never imported by the
project."""

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


class Recorder(nn.Module):
    """Passes inputs to the model and keeps a copy of each call's input (to count them and replay them bare)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model, self.seen = model, []

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        self.seen.append(inputs.detach().clone())
        return self.model(inputs)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def replay(model: nn.Module, calls: list[torch.Tensor]) -> None:
    """Bare forward passes in the very calls a metric made, each input copied afresh (as the project side does)."""
    with torch.no_grad():
        for inputs in calls:
            model(inputs.clone())


def bare(model: nn.Module, inputs: torch.Tensor, batch_size: int) -> None:
    """Bare forward passes, ``batch_size`` per call, each chunk copied afresh (as the project side does)."""
    with torch.no_grad():
        for start in range(0, inputs.shape[0], batch_size):
            model(inputs[start:start + batch_size].clone())

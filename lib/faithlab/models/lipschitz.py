"""The 1-Lipschitz CNN of ReCo/MeGe (deel-torchlip)."""

from __future__ import annotations

from torch import nn

from faithlab._optional import require
from faithlab.models.registry import register, scaled as _scaled


@register("lipschitz_cnn")
class LipschitzCNN(nn.Sequential):
    """1-Lipschitz CNN of ReCo/MeGe §4.7 with deel-torchlip: SpectralConv48–act–ScaledAvgPool–Drop–SpectralConv96–
    act–ScaledAvgPool–Drop–SpectralConv96–ScaledAvgPool–Flatten–SpectralLinear (widths × ``width``);
    ``activation`` "prelu" (LPReLU) or "groupsort" (GroupSort2). 1-Lipschitz in ℓ2 in eval mode.
    ``cam_layer`` is the last spectral conv. ``tau``: the logits are multiplied by τ, the temperature of deel-lip's
    ``TauCategoricalCrossentropy`` folded into the model so that plain cross-entropy can train it (the network
    before the scale is 1-Lipschitz; τ only rescales every gradient map, which leaves rank distances unchanged)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, image_size: int = 32, width: float = 1.0,
                 activation: str = "prelu", dropout: float = 0.2, tau: float = 1.0) -> None:
        torchlip = require("deel.torchlip", "LipschitzCNN (model 'lipschitz_cnn')")

        if activation not in ("prelu", "groupsort"):
            raise ValueError(f"activation must be 'prelu' or 'groupsort', got {activation!r}")
        if image_size % 8:
            raise ValueError(f"image_size must be divisible by 8, got {image_size}")
        c1, c2 = _scaled(48, width), _scaled(96, width)
        if activation == "groupsort" and (c1 % 2 or c2 % 2):
            raise ValueError(f"width must give even channel counts for groupsort, got {c1} and {c2}")

        def act(c: int) -> nn.Module:
            return torchlip.LPReLU(c) if activation == "prelu" else torchlip.GroupSort2()

        if not (isinstance(tau, (int, float)) and not isinstance(tau, bool) and tau > 0):
            raise ValueError(f"tau must be a positive number, got {tau!r}")
        self.tau = float(tau)
        side = image_size // 8
        conv = dict(kernel_size=3, padding=1)
        super().__init__(
            torchlip.SpectralConv2d(in_channels, c1, **conv), act(c1), torchlip.ScaledAvgPool2d(2), nn.Dropout(dropout),
            torchlip.SpectralConv2d(c1, c2, **conv), act(c2), torchlip.ScaledAvgPool2d(2), nn.Dropout(dropout),
            torchlip.SpectralConv2d(c2, c2, **conv), torchlip.ScaledAvgPool2d(2), nn.Flatten(),
            torchlip.SpectralLinear(c2 * side * side, n_classes),
        )

    @property
    def cam_layer(self) -> nn.Module:
        return self[8]

    def forward(self, x):
        out = super().forward(x)
        return out * self.tau if self.tau != 1.0 else out

"""Batch augmentation hooks: F-Fidelity's random removal (eq. 5), ROAR's explanation-guided removal, CIFAR
crop-and-flip, and their composition.

An augmentation hook is any callable ``hook(x, y, idx, generator) -> x`` with a JSON-serialisable ``key`` attribute
(part of the training cache key): x ``(B, ...)`` and y ``(B,)`` are the batch on the training device, idx ``(B,)``
int64 (CPU) the batch's indices into the training set, generator the CPU augmentation generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from faithlab import _validate, perturb
from faithlab.train.cache import tensor_digest

__all__ = ["RandomRemoval", "ExplanationGuidedRemoval", "CropFlip", "Compose", "AUGMENTATIONS", "check_hook"]


def _reference_key(reference: perturb.Reference) -> Any:
    return {"tensor": tensor_digest(reference)} if isinstance(reference, torch.Tensor) else reference


def _reference_on(reference: perturb.Reference, x: torch.Tensor) -> perturb.Reference:
    return reference.to(x.device) if isinstance(reference, torch.Tensor) else reference


def _check_units(units: str) -> str:
    if units not in perturb.UNIT_KINDS:
        raise ValueError(f"units must be one of {list(perturb.UNIT_KINDS)}, got {units!r}")
    return units


class RandomRemoval:
    """F-Fidelity fine-tuning mask M_β (eq. 5, spec §1.4 [recon]): per sample u ~ U(0, β), remove ⌊u·n⌋ units
    (whole pixels / time steps / tokens) chosen uniformly, replacing them by ``reference``."""

    def __init__(self, max_fraction: float = 0.1, units: str = "pixels", reference: perturb.Reference = "zero"):
        self.max_fraction = _validate.fraction(max_fraction, "max_fraction")
        self.units = _check_units(units)
        self.reference = reference

    @property
    def key(self) -> dict:
        return {"random_removal": self.max_fraction, "units": self.units, "reference": _reference_key(self.reference)}

    def __call__(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        units = perturb.UNIT_KINDS[self.units](x)
        removed = perturb.uniform_fraction_mask(len(x), units.n, self.max_fraction, generator=generator, device=x.device)
        return perturb.apply_removal(x, removed, units, reference=_reference_on(self.reference, x))


class ExplanationGuidedRemoval:
    """ROAR training removal (spec §1.6): per sample and draw r ~ U(0, 1), remove its top ⌊r·n⌋ units ranked by
    precomputed training-set unit ``scores`` (N, n).

    ties: how equal scores are ordered — ``"random"`` (default: a fresh random order per draw, from the training
    generator, as the evaluation side orders ties, e.g. GradCAM's zeros and coarse CAM cells) or ``"index"``
    (lower unit id first, which would always remove the top-left of a tied region first).
    key: cache-key label of the scores (default: a sha256 of the scores tensor).
    """

    def __init__(self, scores: torch.Tensor, units: str = "pixels", reference: perturb.Reference = "zero",
                 key: str | None = None, *, ties: str = "random"):
        _validate.tensor(scores, "scores", ndim=2, floating=True)
        _validate.finite(scores, "scores")
        self.scores, self.units, self.reference = scores, _check_units(units), reference
        self.ties = _validate.one_of(ties, "ties", perturb.TIES)
        self._scores_key = key if key is not None else tensor_digest(scores)

    @property
    def key(self) -> dict:
        return {"explanation_guided_removal": self._scores_key, "units": self.units,
                "reference": _reference_key(self.reference), "ties": self.ties}

    def __call__(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        units = perturb.UNIT_KINDS[self.units](x)
        scores = self.scores[idx.to(self.scores.device)].to(x.device)
        if scores.shape[1] != units.n:
            raise ValueError(f"scores has {scores.shape[1]} units per sample but the batch has {units.n} {self.units}")
        r = torch.rand(len(x), generator=generator, dtype=torch.float64, device=generator.device).to(x.device)
        count = torch.floor(r * units.n).long()
        removed = perturb.ranks(perturb.order(scores, "morf", ties=self.ties, generator=generator)) < count[:, None]
        return perturb.apply_removal(x, removed, units, reference=_reference_on(self.reference, x))


class CropFlip:
    """Standard CIFAR augmentation on image batches (B, C, H, W): random crop of the image zero-padded by
    ``padding`` (zero = dataset mean for normalised images), then horizontal flip with probability 1/2."""

    def __init__(self, padding: int = 4):
        self.padding = _validate.positive_int(padding, "padding")

    @property
    def key(self) -> dict:
        return {"crop_flip": self.padding}

    def __call__(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        _validate.tensor(x, "x", ndim=4)
        b, _, h, w = x.shape
        p = self.padding
        shift = torch.randint(0, 2 * p + 1, (b, 2), generator=generator, device=generator.device).to(x.device)
        flip = (torch.rand(b, generator=generator, device=generator.device) < 0.5).to(x.device)
        rows = shift[:, :1] + torch.arange(h, device=x.device)
        cols = torch.arange(w, device=x.device).expand(b, w)
        cols = shift[:, 1:] + torch.where(flip[:, None], cols.flip(1), cols)
        padded = F.pad(x, (p, p, p, p))
        batch = torch.arange(b, device=x.device)[:, None, None]
        return padded[batch, :, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)


class Compose:
    """Apply augmentation hooks in order (each sees the previous one's output and the same generator)."""

    def __init__(self, *hooks):
        for i, hook in enumerate(hooks):
            check_hook(hook, f"hooks[{i}]")
        self.hooks = hooks

    @property
    def key(self) -> list:
        return [hook.key for hook in self.hooks]

    def __call__(self, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        for hook in self.hooks:
            x = hook(x, y, idx, generator)
        return x


AUGMENTATIONS: dict[str, Callable[[], Any]] = {"crop_flip": CropFlip}
"""Standard augmentations selectable by name in ``TrainConfig.augment`` (applied before the ``augment`` hook)."""


def check_hook(hook, name: str) -> None:
    if not callable(hook) or not hasattr(hook, "key"):
        raise TypeError(f"{name} must be a callable (x, y, idx, generator) -> x with a 'key' attribute")

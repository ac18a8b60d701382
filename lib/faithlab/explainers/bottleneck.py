"""Information Bottleneck Attribution, the per-sample bottleneck (Schulz, Sixt, Tombari and Landgraf, "Restricting
the flow: information bottlenecks for attribution", ICLR 2020), registered as ``explain(..., method="iba")``.

At a layer with activations R, the bottleneck replaces R by Z = λ·R + (1 − λ)·ε, ε ~ N(μ_R, σ_R²) (per-neuron mean
and standard deviation over a data set), with λ = smooth(sigmoid(α)) optimised per sample to keep the target while
letting as little information through as it can: loss = CE(target | Z) + β · mean over neurons of
KL(P(Z | R) ‖ N(μ_R, σ_R²)). The attribution is that KL (the capacity, in bits) summed over channels and upsampled
to the input. Defaults are the authors' (their ``IBA.pytorch``): β = 10, 10 Adam steps of lr 1 on 10 noise copies
of the sample, α₀ = 5, a Gaussian smoothing of λ with σ = 1 pixel of the layer, σ_R at least 0.01, neurons active
(non-zero) on at most 1 % of the data switched off.

No maintained package provides it (the authors' ``IBA`` is not on PyPI and optimises one sample at a time), so it
is written here, batched: the α of many samples are optimised together, which gives each sample the same updates
as alone because the loss is a sum of per-sample terms and Adam acts element-wise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from faithlab import _validate
from faithlab.explainers._common import real, resolve_layer
from faithlab.explainers.core import SampleSeeds, normal, register

__all__ = ["BottleneckStatistics", "iba_statistics"]


@dataclass(frozen=True)
class BottleneckStatistics:
    """What the bottleneck needs to know of a layer's activations over a data set (:func:`iba_statistics`):
    per-neuron ``mean`` and ``std`` (sample standard deviation, at least ``min_std``), ``active`` (bool: non-zero on
    more than ``threshold`` of the inputs), whether every activation was ``nonnegative`` (a post-ReLU layer: the
    noisy Z is clamped at 0 as the authors do), the number ``n`` of inputs and the ``layer`` they were read at
    (its dotted name, or None for the model's default CAM layer)."""

    mean: torch.Tensor
    std: torch.Tensor
    active: torch.Tensor
    nonnegative: bool
    n: int
    layer: str | None = None


def _batches(data, batch_size: int) -> Iterable[torch.Tensor]:
    if isinstance(data, torch.Tensor):
        yield from data.split(batch_size)
        return
    x = getattr(data, "x", None)
    if isinstance(x, torch.Tensor):  # a TensorData
        yield from x.split(batch_size)
        return
    for batch in data:
        yield batch[0] if isinstance(batch, (tuple, list)) else batch


def iba_statistics(model: nn.Module, data, *, layer: nn.Module | str | None = None, batch_size: int = 256,
                   threshold: float = 0.01, min_std: float = 0.01) -> BottleneckStatistics:
    """Per-neuron statistics of ``model``'s activations at ``layer`` (default: the model's CAM layer, as
    Grad-CAM's) over ``data``: a tensor of inputs (N, ...), a TensorData (its ``x``) or an iterable of batches
    (tensors or ``(x, y, ...)`` tuples, e.g. a DataLoader). The authors estimate them on 10,000 training images
    (and warn below 1,000). Sums are accumulated in float64 on the model's device, ``batch_size`` inputs at a time.
    """
    _validate.eval_mode(model)
    batch_size = _validate.positive_int(batch_size, "batch_size")
    threshold = real(threshold, "threshold", minimum=0.0)
    min_std = real(min_std, "min_std", minimum=0.0)
    module = resolve_layer(model, layer)
    store: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, _i, out: store.append(out.detach()))
    n, total, squares, nonzero, low = 0, None, None, None, math.inf
    try:
        with torch.no_grad():
            for xb in _batches(data, batch_size):
                _validate.tensor(xb, "data")
                store.clear()
                model(xb)
                if len(store) != 1:
                    raise ValueError(f"layer {layer!r} ran {len(store)} times in one forward pass; pick a layer "
                                     "that runs once")
                r = store[0].double()
                if total is None:
                    total, squares = torch.zeros_like(r[0]), torch.zeros_like(r[0])
                    nonzero = torch.zeros_like(r[0])
                total += r.sum(0)
                squares += (r * r).sum(0)
                nonzero += (r != 0).sum(0)
                low = min(low, float(r.min()))
                n += r.shape[0]
    finally:
        handle.remove()
    if n < 2:
        raise ValueError(f"data must hold at least 2 inputs to estimate a standard deviation, got {n}")
    mean = total / n
    var = ((squares - n * mean * mean) / (n - 1)).clamp_min(0)
    dtype = store[0].dtype
    return BottleneckStatistics(mean.to(dtype), var.sqrt().clamp_min(min_std).to(dtype), nonzero / n > threshold,
                                low >= 0, n, layer if isinstance(layer, str) else None)


def capacity(r: torch.Tensor, lam: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """KL(P(Z | R) ‖ Q(Z)) per neuron, in nats, for Z = λR + (1 − λ)ε, ε ~ N(mean, std²), Q(Z) = N(mean, std²).
    In standardised units r' = (R − mean)/std it is the KL of N(λr', (1 − λ)²) from N(0, 1):
    (−log (1 − λ)² + (1 − λ)² + (λr')² − 1) / 2."""
    var = (1 - lam) ** 2
    mu = (r - mean) / std * lam
    return 0.5 * (var + mu * mu - 1 - torch.log(var))


def _gaussian_smoother(sigma: float, channels: int, dtype, device):
    """Depth-wise Gaussian blur of λ with the authors' kernel side 2·round(2σ) + 1, reflection-padded (replicated when
    the map is too small to reflect)."""
    side = int(round(2 * sigma)) * 2 + 1
    grid = torch.arange(side, dtype=torch.float64, device=device) - (side - 1) / 2
    one = torch.exp(-grid ** 2 / (2 * sigma ** 2))
    kernel = (one[:, None] * one[None, :])
    kernel = (kernel / kernel.sum()).to(dtype).expand(channels, 1, side, side)
    pad = (side - 1) // 2

    def smooth(lam: torch.Tensor) -> torch.Tensor:
        mode = "reflect" if min(lam.shape[-2:]) > pad else "replicate"
        return F.conv2d(F.pad(lam, (pad, pad, pad, pad), mode=mode), kernel, groups=channels)

    return smooth


@register("iba", random=True)
def _iba(model, x, target, extra, *, batch_size, generator, statistics: BottleneckStatistics | None = None,
         layer: nn.Module | str | None = None, beta: float = 10.0, steps: int = 10, lr: float = 1.0,
         copies: int = 10, sigma: float | None = 1.0, initial_alpha: float = 5.0):
    """Information Bottleneck Attribution, per-sample bottleneck (Schulz et al. 2020): the capacity (bits) of the
    bottleneck at ``layer`` (default: the model's CAM layer; the one ``statistics`` was estimated at when it names
    one), summed over channels, scaled by (h·w)/(H·W) and upsampled bilinearly to the input, as the authors'
    ``to_saliency_map``. ``statistics``: :func:`iba_statistics` of the model at that layer (required).

    beta, steps, lr, copies (noise samples per step), sigma (smoothing of λ in layer pixels; None or 0: none) and
    initial_alpha: the authors' defaults. As theirs, the map is the capacity of the last forward pass (α after
    ``steps − 1`` updates). The noise is drawn per sample (``explain``'s ``sample_seeds``, or one seed per sample
    from ``generator`` in sample order), so maps do not depend on ``batch_size``. Each step runs the whole model on
    ``copies`` noisy copies of each sample (forward and backward): samples are optimised ``batch_size // copies``
    (at least 1) at a time.
    """
    if x.ndim != 4:
        raise ValueError(f"method 'iba' needs images (B, C, H, W), got x of shape {tuple(x.shape)}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"method 'iba' needs an nn.Module model (a forward hook goes on its layer), got "
                        f"{type(model).__name__}")
    if not isinstance(statistics, BottleneckStatistics):
        raise TypeError("method 'iba' needs statistics=fl.explainers.iba_statistics(model, data) of the layer's "
                        f"activations over a data set (the authors use 10,000 training images), got "
                        f"{type(statistics).__name__}")
    beta = real(beta, "beta", minimum=0.0)
    lr = real(lr, "lr", minimum=0.0)
    initial_alpha = real(initial_alpha, "initial_alpha")
    steps = _validate.positive_int(steps, "steps")
    copies = _validate.positive_int(copies, "copies")
    sigma = 0.0 if sigma is None else real(sigma, "sigma", minimum=0.0)
    module = resolve_layer(model, statistics.layer if layer is None else layer)
    dev, dtype = x.device, x.dtype
    mean, std = statistics.mean.to(dev, dtype), statistics.std.to(dev, dtype)
    active = statistics.active.to(dev, dtype)
    keys = generator if isinstance(generator, SampleSeeds) else SampleSeeds(
        torch.randint(-2 ** 63, 2 ** 63 - 1, (x.shape[0],), generator=generator, device=generator.device).to(dev))

    hooked: dict[str, torch.Tensor] = {}

    def hook(_m, _i, out):
        if "z" in hooked:
            return hooked["z"]
        hooked["r"] = out.detach()
        return out

    handle = module.register_forward_hook(hook)
    maps = []
    try:
        group = max(1, batch_size // copies)
        for i in range(0, x.shape[0], group):
            xg, tg, kg = x[i : i + group].detach(), target[i : i + group], keys[i : i + group]
            g = xg.shape[0]
            hooked.clear()
            with torch.no_grad():
                model(xg) if extra is None else model(xg, extra[i : i + group])
            if "r" not in hooked:
                raise ValueError("method 'iba': the bottleneck layer did not run in the model's forward pass")
            r = hooked.pop("r")
            if r.shape[1:] != mean.shape:
                raise ValueError(f"method 'iba': statistics are of shape {tuple(mean.shape)} but the layer gives "
                                 f"{tuple(r.shape[1:])}; estimate them at the same layer and input size")
            smooth = _gaussian_smoother(sigma, r.shape[1], dtype, dev) if sigma > 0 else (lambda lam: lam)
            alpha = torch.full_like(r, initial_alpha).requires_grad_(True)
            optimizer = torch.optim.Adam([alpha], lr=lr)
            xs = xg.repeat_interleave(copies, 0)
            ts = tg.repeat_interleave(copies, 0)
            es = None if extra is None else extra[i : i + group].repeat_interleave(copies, 0)
            with torch.enable_grad():
                for _ in range(steps):
                    optimizer.zero_grad()
                    lam = smooth(torch.sigmoid(alpha))
                    eps = normal((g, copies, *r.shape[1:]), kg, r) * std + mean
                    z = (lam[:, None] * r[:, None] + (1 - lam[:, None]) * eps) * active
                    hooked["z"] = (z.clamp_min(0) if statistics.nonnegative else z).flatten(0, 1)
                    logits = model(xs) if es is None else model(xs, es)
                    ce = F.cross_entropy(logits, ts, reduction="none").view(g, copies).mean(1)
                    cap = capacity(r, lam, mean, std) * active
                    loss = (ce + beta * cap.flatten(1).mean(1)).sum()  # per-sample terms: Adam keeps them apart
                    loss.backward()
                    optimizer.step()
                    hooked.pop("z")
            bits = cap.detach().sum(1, keepdim=True) / math.log(2)
            scale = bits.shape[-2] * bits.shape[-1] / (x.shape[-2] * x.shape[-1])
            maps.append(F.interpolate(bits * scale, size=x.shape[-2:], mode="bilinear", align_corners=False))
    finally:
        handle.remove()
    return torch.cat(maps)

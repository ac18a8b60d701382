"""Few-class Fidelity's methods and alterations (spec §2.5) and their maps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from faithlab import _validate, explainers

__all__ = ["METHODS", "ALTERATIONS", "NO_SG", "method_maps"]

METHODS: dict[str, tuple[str, dict]] = {
    "BP": ("gradient", {}),
    "Deconv": ("deconvolution", {}),
    "EG": ("expected_gradients", {}),
    "IG(min)": ("integrated_gradients", {"baseline": "min"}),
    "IG(zero)": ("integrated_gradients", {"baseline": "zero"}),
    "IG(max)": ("integrated_gradients", {"baseline": "max"}),
    "GradCAM": ("gradcam", {}),
    "Random": ("random", {}),
}
"""The methods of spec §2.5 as ``{name: (explainer, options)}``: BP the plain input gradient, Deconv captum's
Deconvolution, EG Expected Gradients over a background set of training images (SHAP's GradientExplainer in the
paper), IG from the image's min / zero / max (PAIR's IG in the paper), GradCAM at the model's last block, Random
U(−1, 1). Every map is scored by Σ_c |·|, so signs do not matter."""
ALTERATIONS = ("none", "XRAI", "SG", "SG²")
"""Alterations applied after the map (spec §2.5): XRAI over the map (PAIR), SmoothGrad and SmoothGrad² of the
method (noise std a fraction of the image range)."""
NO_SG = {"ct": ("Deconv", "IG(max)")}
"""Method × alteration cells the paper leaves empty: SG/SG² not applied to Deconv and IG(max) on CT (Table 2);
Random is never altered."""


def _explain_target(model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> tuple[nn.Module, torch.Tensor]:
    """Single-logit models are explained through their one output (target 0), as the paper's code does."""
    with torch.no_grad():
        width = model(x[:1]).shape[1]
    return model, (torch.zeros_like(target) if width == 1 else target)


def method_maps(model: nn.Module, x: torch.Tensor, target: torch.Tensor, *, methods: Mapping[str, tuple[str, dict]],
                alterations: Sequence[str] = ALTERATIONS, background: torch.Tensor | None = None,
                ig_steps: int = 32, sg_samples: int = 10, sg_noise: float = 0.15, skip: Sequence[str] = (),
                batch_size: int = 256, generator: torch.Generator | int = 0, layer: str | None = None
                ) -> dict[tuple[str, str], torch.Tensor]:
    """Maps ``{(method, alteration): (B, C|1, H, W)}`` of every method × alteration (Random only unaltered;
    ``skip`` lists methods without SG/SG², :data:`NO_SG`). SG/SG²: ``sg_samples`` noisy copies with noise std
    ``sg_noise`` × the range of x; IG ``ig_steps`` steps; EG draws from ``background``. One generator shared in
    the order of the methods, so the maps depend on the seed only. layer: Grad-CAM's layer (``Setup.layers``; None:
    the model's ``cam_layer``)."""
    g = _validate.generator(generator, why="for the random methods and noise")
    model, tgt = _explain_target(model, x, target)
    stdev = float(sg_noise) * float(x.max() - x.min())
    out: dict[tuple[str, str], torch.Tensor] = {}
    for name, (method, options) in methods.items():
        opts = dict(options)
        if method == "integrated_gradients":
            opts.setdefault("n_steps", ig_steps)
        if method == "gradcam" and layer is not None:
            opts.setdefault("layer", layer)
        if method == "expected_gradients":
            if background is None:
                raise ValueError("background images are needed for Expected Gradients")
            opts.setdefault("background", background)
        base = explainers.explain(model, x, tgt, method=method, batch_size=batch_size, generator=g, **opts)
        out[name, "none"] = base
        if method == "random":
            continue
        for alt in alterations:
            if alt == "XRAI":  # PAIR's XRAI over the method's map (recomputed inside, same generator stream)
                out[name, alt] = explainers.explain(model, x, tgt, method="xrai", base=method,
                                                    batch_size=batch_size, generator=g, **opts)
            elif alt in ("SG", "SG²") and name not in skip:
                out[name, alt] = explainers.explain(model, x, tgt, method="smoothgrad" if alt == "SG" else
                                                    "smoothgrad_sq", base=method, nt_samples=sg_samples,
                                                    stdevs=stdev, batch_size=batch_size, generator=g, **opts)
    return out


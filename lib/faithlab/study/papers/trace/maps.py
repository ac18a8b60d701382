"""TRACE's Table 1 attribution methods: their pixel maps and the patch trajectories the maps sort into."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import torch

from faithlab import _validate, explainers, perturb
from faithlab.metrics import trace

__all__ = ["TABLE1_METHODS", "method_maps", "trajectories"]

TABLE1_METHODS: dict[str, tuple[str, dict, str]] = {
    "Grad": ("saliency", {}, "mean"),
    "GC": ("gradcam", {}, "mean"),
    "IBA": ("iba", {}, "mean"),
    "RISE": ("rise", {}, "mean"),
    "EP": ("extremal_perturbation", {}, "mean"),
    "EBP": ("excitation_backprop", {}, "mean"),
    "IG": ("integrated_gradients", {}, "mean_abs"),
    "IxG": ("input_x_gradient", {}, "mean_abs"),
    "Random": ("random", {}, "mean"),
}
"""The attribution methods of Table 1 (spec §5.7) as ``{name: (explainer, options, reduce)}``: Grad is |∂f/∂x|
(captum Saliency) averaged over channels and patch pixels; GC Grad-CAM at the model's ``cam_layer``; RISE,
Extremal Perturbations (EP) and Excitation Backprop (EBP) as in ``faithlab.explainers.perturbation``; IG and
I×G reduced as |·| averaged over channels and patch pixels (``"mean_abs"``); IBA the per-sample information
bottleneck of Schulz et al. (``faithlab.explainers.bottleneck``, the authors' defaults) at the layer Grad-CAM reads,
its statistics from :func:`method_maps`' ``statistics_data``. "Random" (a uniform random map) is our floor, not in
the paper."""
_LAYER_METHODS = ("gradcam", "layercam", "excitation_backprop", "iba")


def method_maps(model: Callable, x: torch.Tensor, target: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]],
                *, batch_size: int, generator: torch.Generator | int, layer: str | None = None,
                statistics_data: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Pixel attribution maps ``{name: (B, C|1, H, W)}`` of ``methods`` (``{name: (explainer, options, reduce)}``,
    e.g. :data:`TABLE1_METHODS`) for the ``target`` class. generator: seeds the random methods (RISE, IBA's noise,
    Random); one generator is shared in the order of ``methods``, so the maps depend on that order and the seed only.
    layer: the layer Grad-CAM, Excitation Backprop and IBA read (``Setup.layers``; None: the model's ``cam_layer``;
    a method's own ``layer`` option wins). statistics_data: the inputs IBA's activation statistics are estimated on
    (``Setup.reference``, :func:`faithlab.explainers.iba_statistics`), required when a method is IBA without its own
    ``statistics`` option."""
    g = _validate.generator(generator, why="for the random methods")
    maps = {}
    for name, (method, options, _) in methods.items():
        where = {"layer": layer} if layer is not None and method in _LAYER_METHODS and "layer" not in options else {}
        if method == "iba" and "statistics" not in options:
            if statistics_data is None:
                raise ValueError(f"method {name!r} (IBA) needs statistics_data: the inputs its activation statistics "
                                 "are estimated on (e.g. Setup.reference)")
            where["statistics"] = explainers.iba_statistics(model, statistics_data, batch_size=batch_size,
                                                            layer=options.get("layer", layer))
        maps[name] = explainers.explain(model, x, target, method=method, batch_size=batch_size, generator=g,
                                        **where, **options)
    return maps


def trajectories(maps: Mapping[str, torch.Tensor], x: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]], *,
                 edge: int) -> dict[str, torch.Tensor]:
    """Bottom-to-top patch trajectories ``{name: (B, t)}`` of pixel maps on an ``edge``×``edge`` grid, each map
    pooled with its method's reduce rule (``methods[name][2]``) and sorted ascending, ties by the smaller patch
    id (``metrics.trace.trajectory_from_map``). A constant map (e.g. an all-zero Grad-CAM) gives the patch ids in
    order; the per-call ``ConstantMapWarning`` is silenced here (the chapters count constant maps themselves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        return {name: trace.trajectory_from_map(a, x, edge=edge, reduce=methods[name][2]) for name, a in maps.items()}


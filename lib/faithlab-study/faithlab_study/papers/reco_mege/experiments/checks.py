"""Checks of the explainers' settings: whether IG's step count (SmoothGrad's sample count) below the paper's 60
changes the maps as much as another model does (:func:`steps_diagnostic`), and the resolution of a model's Grad-CAM
maps (:func:`cam_grid`)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import torch

from faithlab import explainers
from faithlab.metrics.papers.reco_mege.crossfold import explanation_distance, flatten_maps
from faithlab_study.papers.reco_mege.setup import Family, model_seeds
from faithlab_study.papers.reco_mege.setup import method_options

__all__ = ["steps_diagnostic", "cam_grid"]


@torch.no_grad()
def steps_diagnostic(fam: Family, details: Mapping[str, dict], *, used: Mapping[str, int],
                     paper: int = 60, n_images: int = 50, seed: int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Does IG's step count (SmoothGrad's sample count) matter for ReCo and MeGe? For the methods of ``used``
    (``{"IG": steps, "SG": samples}`` the notebook ran with) among ``details``: the first model's maps of the first
    ``n_images`` images at the ``used`` count and at the ``paper``'s (60), and the mean Spearman distance between
    the two (the distance ReCo and MeGe use), beside that method's mean S= distance (two models' maps of one image)
    and its shuffled level. A distance far below S= says the cheaper count changes the maps less than another model
    does. One row per method. A random method draws as model 0 of
    :func:`~faithlab_study.papers.reco_mege.setup.explain_family` (keyed to seed, the family's replica, sample)."""
    rows = []
    model, x = fam.cross.models[0], fam.data.x[:n_images]
    target = fam.predictions[0, :n_images].to(x.device)
    channel_dim = -3 if x.ndim == 4 else None
    for method, count in used.items():
        if method not in details or method not in ("IG", "SG"):
            continue
        key = "ig_steps" if method == "IG" else "sg_samples"
        maps = []
        for c in (count, paper):
            name, options = method_options(method, **{key: c})
            maps.append(explainers.explain(model, x, target, method=name, batch_size=batch_size, **options,
                                           sample_seeds=model_seeds(fam, seed, 0, range(len(x)))))
        a, b = (flatten_maps(m, channel_dim=channel_dim) for m in maps)
        d = explanation_distance(a.flatten(1), b.flatten(1))
        pairs = details[method]["pairs"]
        s_equal = pairs.distance[pairs.kind == 0]
        shuffled = details[method]["shuffled"][pairs.kind == 0]
        rows.append({"method": method, "used": count, "paper": paper, "images": len(x),
                     f"d({count}, {paper}) mean": float(d.nanmean()), "S= mean": float(s_equal.nanmean()),
                     "shuffled mean": float(shuffled.nanmean())})
    return pd.DataFrame(rows)


def cam_grid(model, x: torch.Tensor) -> tuple[int, ...]:
    """Spatial size of the model's ``cam_layer`` output on inputs like x (the resolution of its Grad-CAM maps before
    upsampling)."""
    seen = []
    handle = model.cam_layer.register_forward_hook(lambda m, i, o: seen.append(tuple(o.shape[2:])))
    try:
        model(x[:1])
    finally:
        handle.remove()
    return seen[0]

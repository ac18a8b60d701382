"""R5's experiment (eq. 8): the family's first model standing in for all k identical models, its S= distances
per sample and MeGe (:func:`identical_models`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from faithlab import explainers

from faithlab.metrics.papers.reco_mege.crossfold import reco_mege_details_from_predictions
from faithlab_study.papers.reco_mege.setup import Family, model_seeds
from faithlab_study.papers.reco_mege.setup import method_options

__all__ = ["identical_models"]


def identical_models(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, **settings) -> pd.DataFrame:
    """R5 check: the family's first model standing in for all k (its maps and predictions copied k times) → one row
    per sample of D: ``sample``, ``S= distance`` (the mean of its S= distances, NaN without an S= pair) and ``MeGe``
    (of the whole set, the same on every row); MeGe must be 1 and every distance 0. A random method's maps are
    model 0's of :func:`~faithlab_study.papers.reco_mege.setup.explain_family` (keyed to seed, replica, sample)."""
    name, options = method_options(method, **settings)
    model = fam.cross.models[0]
    maps = explainers.explain(model, fam.data.x, fam.predictions[0].to(fam.data.x.device), method=name,
                              batch_size=batch_size, sample_seeds=model_seeds(fam, seed, 0), **options)
    k = fam.cross.k
    copies = maps[None].expand(k, *maps.shape)
    preds = fam.predictions[:1].expand(k, -1).to(maps.device)
    d = reco_mege_details_from_predictions(copies, preds, fam.data.y.to(maps.device), fam.cross.folds.to(maps.device),
                                           channel_dim=-3 if maps.ndim == 4 else None, batch_size=batch_size)
    return per_image(d, mege=d["mege"])


def per_image(details: dict, *, mege: float) -> pd.DataFrame:
    """The S= distances of :func:`reco_mege_details_from_predictions`' ``details`` per sample (their mean, NaN
    without an S= pair) with the set's ``mege`` → rows (``sample``, ``S= distance``, ``MeGe``)."""
    pairs = details["pairs"]
    dist = pairs.distance.double().cpu()
    ok = (pairs.kind.cpu() == 0) & ~dist.isnan()
    count = ok.sum(1)
    mean = torch.where(ok, dist, 0.0).sum(1) / count.clamp(min=1)
    mean[count == 0] = math.nan
    return pd.DataFrame({"sample": np.arange(len(mean)), "S= distance": mean.numpy(), "MeGe": float(mege)})

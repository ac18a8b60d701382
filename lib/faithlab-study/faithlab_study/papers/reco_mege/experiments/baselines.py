"""Table 3's scores: Bhatt et al.'s μF with its chance level and S_avg of one method on one model, per sample
(spec §4.6; :mod:`faithlab.metrics.papers.reco_mege.baselines`; :func:`fidelity_stability`)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import torch

from faithlab import explainers, perturb

from faithlab.metrics.papers.reco_mege.baselines import average_stability_details, mu_fidelity_details
from faithlab.metrics.papers.reco_mege.crossfold import shuffled_partners
from faithlab_study.papers.reco_mege.experiments.sets import NULL_STREAM
from faithlab_study.papers.reco_mege.setup import RADIUS, SUBSET_FRACTION, method_options
from faithlab_study.verdicts.replication import replica_draws

__all__ = ["fidelity_stability"]

MAPS, SUBSETS, NEIGHBOURS = 2, 3, 4
"""Table 3's streams besides :data:`NULL_STREAM` (the shuffled partners): the μF maps' noise, μF's pixel subsets,
S_avg's neighbours, each ``keyed_seed(draw_key, stream)``."""


def fidelity_stability(model, x: torch.Tensor, y: torch.Tensor, method: str, *, n_subsets: int = 200,
                       subset_fraction: float = SUBSET_FRACTION, n_neighbours: int = 200, radius: float = RADIUS,
                       output: str = "prob", seed: int = 0, batch_size: int = 256, draw_key: int | None = None,
                       **settings) -> pd.DataFrame:
    """Per-sample μF (Pearson, zero baseline, 15 % pixel subsets) and S_avg (squared ℓ2, ‖u‖₁ ≤ radius, common
    random numbers: a sample and its neighbours are explained with the same seed) of one method on one model
    (Table 3), explaining the label → frame (``sample``, ``μF``, ``μF (shuffled)``, ``S_avg``).

    ``μF (shuffled)`` is μF's chance level: the same subsets and output drops scored with the method's map of
    another image (:func:`faithlab.metrics.shuffled_partners` over the samples, stream :data:`NULL_STREAM`), so a
    method whose μF does not exceed it orders pixels no better than an unrelated map of its own kind.

    draw_key: the key of every draw (a replica's :func:`~faithlab_study.papers.reco_mege.setup.family_draws`, so
    replicas and notebook seeds draw apart; None: ``replica_draws(seed, None)``, a single model), one stream each
    (``keyed_seed(draw_key, stream)``, never a sum): the maps' noise per sample (:data:`MAPS`), μF's subsets
    (:data:`SUBSETS`), the shuffled partners (:data:`NULL_STREAM`) and S_avg's neighbours (:data:`NEIGHBOURS`)."""
    name, options = method_options(method, **settings)
    key = replica_draws(seed, None) if draw_key is None else int(draw_key)
    explain = functools.partial(explainers.explain, method=name, batch_size=batch_size,
                                generator=perturb.keyed_seed(key, MAPS), **options)
    attributions = explain(model, x, y, sample_seeds=perturb.keyed_seeds(perturb.keyed_seed(key, MAPS),
                                                                         torch.arange(len(x))))
    mu_options = dict(n_subsets=n_subsets, subset_fraction=subset_fraction, output=output,
                      generator=perturb.keyed_seed(key, SUBSETS), batch_size=batch_size)
    mu = mu_fidelity_details(model, x, attributions, target=y, **mu_options)["mu_f"]
    partners = shuffled_partners(torch.ones(len(x), dtype=torch.bool, device=x.device),
                                 generator=perturb.keyed_seed(key, NULL_STREAM))
    mu_null = mu_fidelity_details(model, x, attributions[partners], target=y, **mu_options)["mu_f"]
    # common random numbers: each sample and its neighbours share one seed, so a stochastic method's S_avg measures
    # how its map changes within the radius, not its Monte-Carlo noise. S_avg explains x itself (attributions None):
    # the attributions for μF draw their noise from the MAPS stream, not from the neighbours' seeds
    def explainer(m, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None) -> torch.Tensor:
        return explain(m, z, t, sample_seeds=seeds)

    s = average_stability_details(model, x, None, explainer=explainer, target=y, n_neighbours=n_neighbours,
                                  radius=radius, generator=perturb.keyed_seed(key, NEIGHBOURS),
                                  batch_size=batch_size)["s_avg"]
    return pd.DataFrame({"method": method, "sample": np.arange(len(x)), "μF": mu.cpu().numpy(),
                         "μF (shuffled)": mu_null.cpu().numpy(), "S_avg": s.cpu().numpy()})

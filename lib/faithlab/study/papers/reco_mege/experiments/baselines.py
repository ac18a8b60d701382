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
from faithlab.study.papers.reco_mege.experiments.sets import NULL_STREAM
from faithlab.study.papers.reco_mege.setup import RADIUS, SUBSET_FRACTION, method_options

__all__ = ["fidelity_stability"]


def fidelity_stability(model, x: torch.Tensor, y: torch.Tensor, method: str, *, n_subsets: int = 200,
                       subset_fraction: float = SUBSET_FRACTION, n_neighbours: int = 200, radius: float = RADIUS,
                       output: str = "prob", seed: int = 0, batch_size: int = 256, **settings) -> pd.DataFrame:
    """Per-sample μF (Pearson, zero baseline, 15 % pixel subsets) and S_avg (squared ℓ2, ‖u‖₁ ≤ radius, common
    random numbers: a sample and its neighbours are explained with the same seed) of one method on one model
    (Table 3), explaining the label → frame (``sample``, ``μF``, ``μF (shuffled)``, ``S_avg``).

    ``μF (shuffled)`` is μF's chance level: the same subsets and output drops scored with the method's map of
    another image (:func:`faithlab.metrics.shuffled_partners` over the samples, generator ``keyed_seed(seed, 1)``),
    so a method whose μF does not exceed it orders pixels no better than an unrelated map of its own kind."""
    name, options = method_options(method, **settings)
    explain = functools.partial(explainers.explain, method=name, batch_size=batch_size, generator=seed, **options)
    attributions = explain(model, x, y)
    mu_options = dict(n_subsets=n_subsets, subset_fraction=subset_fraction, output=output, generator=seed,
                      batch_size=batch_size)
    mu = mu_fidelity_details(model, x, attributions, target=y, **mu_options)["mu_f"]
    partners = shuffled_partners(torch.ones(len(x), dtype=torch.bool, device=x.device),
                                 generator=perturb.keyed_seed(seed, NULL_STREAM))
    mu_null = mu_fidelity_details(model, x, attributions[partners], target=y, **mu_options)["mu_f"]
    # common random numbers: each sample and its neighbours share one seed, so a stochastic method's S_avg measures
    # how its map changes within the radius, not its Monte-Carlo noise. S_avg explains x itself (attributions None):
    # the attributions for μF draw their noise from `generator`, not from the samples' seeds
    def explainer(m, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None) -> torch.Tensor:
        return explain(m, z, t, sample_seeds=seeds)

    s = average_stability_details(model, x, None, explainer=explainer, target=y, n_neighbours=n_neighbours,
                                  radius=radius, generator=seed, batch_size=batch_size)["s_avg"]
    return pd.DataFrame({"method": method, "sample": np.arange(len(x)), "μF": mu.cpu().numpy(),
                         "μF (shuffled)": mu_null.cpu().numpy(), "S_avg": s.cpu().numpy()})

"""Seeded standard-normal maps, shared by the tests of the distances between explanation maps
(tests/faithlab/metrics/papers/reco_mege/test_distances.py) and of ReCo/MeGe's distance sanity checks
(tests/faithlab_study/papers/reco_mege/test_sanity_distances.py)."""

from __future__ import annotations

import torch


def random_maps(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)

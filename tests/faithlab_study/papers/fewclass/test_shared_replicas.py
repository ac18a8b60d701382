"""Few-class Fidelity's three notebooks score the same trained replicas: fidelity trains them, flips and
perturbation read them from the cache (issue 69: they trained a model of their own, ``replica=None``). Every
parameter that keys a model's training (settings, image size, training set, seed) and the replicas are the same in
every profile, so the cache keys are the same."""

import pytest

from faithlab_study.runner import parameters

NOTEBOOKS = ("fewclass/fidelity", "fewclass/flips", "fewclass/perturbation")
KEYS = ("settings", "image_size", "n_train", "seed", "replicas", "paper")


def _params(profile: str) -> dict[str, dict]:
    found = {nb.name: nb for nb in parameters.discover()}
    spec = parameters.load_profile(profile)
    return {name: parameters.merge_parameters(found[name], profile, spec, {}) for name in NOTEBOOKS}


@pytest.mark.parametrize("profile", ["smoke", "book", "paper"])
def test_the_three_notebooks_read_the_same_replicas(profile):
    params = _params(profile)
    first = params[NOTEBOOKS[0]]
    for name in NOTEBOOKS[1:]:
        assert {k: params[name][k] for k in KEYS} == {k: first[k] for k in KEYS}, name


def test_the_book_pools_enough_images_per_cell():
    """≥ 3 replicas and ≥ 30 images per cell pooled over them (the house design); the binary shares (C2, C5a's
    switches) score more, since 30 of 30 cannot clear C2's 90 %."""
    params = _params("book")
    for name, p in params.items():
        assert p["replicas"] >= 3 and p["replicas"] * p["n_images"] >= 30, name
    assert params["fewclass/perturbation"]["replicas"] * params["fewclass/perturbation"]["n_images"] >= 40
    assert "ct" in params["fewclass/flips"]["tasks"]

"""Every Monte-Carlo draw of the synthesis (the degraded ground truth, the random maps, the metrics' draws in
``fl.evaluate``, the OOD diagnostic's removals, the meta-evaluation's noise) is keyed to (notebook seed, setting,
replica, draw): two replicas draw apart, another notebook seed draws apart, the same key draws the same."""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

import faithlab as fl
from faithlab_study.papers import synthesis as syn
from faithlab_study.verdicts.replication import Replica, replica_draws, replicas

KW = dict(noise_levels=[0.5, 1.0], methods={"Random": ("random", {})}, batch_size=4)


def setup(replica: Replica | None) -> syn.Setup:
    """The same linear classifier and images as ``replica``: only the draws' keys differ between two such set-ups."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2)).eval()
    x = torch.rand(4, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    truth = torch.rand(4, 1, 4, 4, generator=torch.Generator().manual_seed(2))
    return syn.Setup("linear", "test", model, None, x, torch.tensor([0, 1, 0, 1]), truth, 1.0, replica=replica)


R0, R1 = replicas(0, "linear", 2)


def test_replica_draw_and_options_are_keyed_to_seed_setting_replica_and_draw():
    assert syn.experiments.replica_draw(setup(R1), 3, "ood") == replica_draws(3, R1, "ood")
    keys = {syn.experiments.replica_draw(setup(r), seed, d) for r in (R0, R1, None) for seed in (0, 1)
            for d in ("ood", "evaluate")}
    assert len(keys) == 12
    options = {"seed": 5, "batch_size": 2}
    assert syn.experiments.replica_options(options, setup(R0)) == {"seed": replica_draws(5, R0, "evaluate"),
                                                                   "batch_size": 2}
    assert options["seed"] == 5  # the notebook's options are left as they are


def test_explainer_maps_draw_per_replica_and_notebook_seed():
    a, _ = syn.explainer_maps(setup(R0), seed=0, **KW)
    again, _ = syn.explainer_maps(setup(R0), seed=0, **KW)
    b, _ = syn.explainer_maps(setup(R1), seed=0, **KW)  # the same model and truth, another replica
    c, _ = syn.explainer_maps(setup(R0), seed=1, **KW)
    for name in a:
        assert torch.equal(a[name], again[name]), name
        assert not torch.equal(a[name], b[name]) and not torch.equal(a[name], c[name]), name
    torch.testing.assert_close(syn.explainer_maps(setup(None), seed=0, **KW)[0]["GT ξ=0.5"], fl.explainers.degrade(
        setup(None).truth, 0.5, generator=replica_draws(0, None, "degrade")))


def test_evaluate_again_draws_as_the_setups_own_evaluation():
    """A condition of the meta-evaluation changes the model or the inputs, never the draws: evaluate_again on the
    setup's own model and inputs is the notebook's keyed evaluation of the setup."""
    s = setup(R1)
    grid = fl.metrics.fewclass.candidate_grid(["V1"])
    options = dict(seed=0, batch_size=4, metrics=["aopc", "ffid+"], sparsity=[0.5], n_samples=2)
    again = syn.evaluate_again(s, s.model, s.model, s.x, grid=grid, noise_levels=[0.5], methods={}, **options)
    maps, _ = syn.explainer_maps(s, noise_levels=[0.5], methods={}, seed=0, batch_size=4)
    direct = fl.evaluate(s.model, s.x, s.y, maps, finetuned=s.model,
                         perturbed=fl.metrics.select_perturbation(s.model, s.x, grid=grid)["image"],
                         **syn.experiments.replica_options(options, s))
    pd.testing.assert_frame_equal(again, direct)
    other = syn.evaluate_again(setup(R0), s.model, s.model, s.x, grid=grid, noise_levels=[0.5], methods={},
                               **options)
    assert not other["score"].equals(again["score"])  # another replica: other degradations and masks

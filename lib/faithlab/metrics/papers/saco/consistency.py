"""SaCo, the Salience-guided Faithfulness Coefficient (Wu et al., CVPR 2024): does the model's output drop more
where the map says the evidence is? A consistency check between salience and effect, on the shared removal engine.
The four cumulative-removal metrics it is compared with live in :mod:`faithlab.metrics.papers.saco.cumulative`. The
functions are gathered in :mod:`faithlab.metrics` (``fl.metrics.saco``, ``fl.metrics.saco_details``).

SaCo (Algorithm 1, spec §3.1). Units (pixels by default) are sorted by salience, most salient first, and split into
K groups G_1..G_K of equal size (sizes differ by one when K does not divide n: unit of rank r goes to group
⌊r·K/n⌋). Each group is removed *alone* and ∇pred(G_i) = p(ŷ|x) − p(ŷ|x without G_i). Over all pairs i < j,
w = s(G_i) − s(G_j); F accumulates +w if ∇pred(G_i) ≥ ∇pred(G_j) else −w, and W accumulates |w|. SaCo = F / W
∈ [−1, 1], higher = more faithful. A map that is constant over the units gives W = 0: the score is then 0 (spec
§6.12) and ``saco_details`` reports it in ``undefined``.

s(G) is the *mean* salience of the group (computed in float64). The paper writes the sum; with groups of equal
size the two differ by the factor 1/|G|, which cancels in F / W, so the score is the paper's. When K does not
divide n the sum would make SaCo depend on an additive offset of the map (a bigger group gains |G|·c); the mean
keeps SaCo exactly invariant to offsets and positive scaling for any K.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from faithlab import _validate, perturb
from faithlab.metrics.papers.saco.cumulative import REDUCE, unit_salience
from faithlab.metrics.registry import Metric, Option, checks, plain, register
from faithlab.perturb.autobatch import BatchSize

__all__ = ["saco", "saco_details"]


def saco_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *, target: torch.Tensor | None = None,
                 k: int = 10, reduce: str = REDUCE, reference: perturb.Reference = "channel_mean",
                 units: perturb.Units | None = None, batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """SaCo with its ingredients (Algorithm 1; Fig. 3 case study).

    x: ``(B, C, H, W)`` images (or any layout the removal engine accepts); attributions: see
    ``perturb.unit_scores`` (e.g. ``(B, 1, H, W)``). target: ``(B,)`` int64 classes; None → the model's prediction
    ŷ on the clean x (the paper). k: number of groups, 2 … the number of units (one group has no pair to compare:
    refused).
    reduce: the unit-salience rule, default the signed sum (the paper's s(G) = Σ M_p). reference: what a removed
    unit becomes (``perturb.make_reference``); units: None → pixels (``perturb.default_units``). All B·(K+1) inputs
    (the clean one and K single-group removals per sample) go through :class:`perturb.Removal`'s batched passes,
    ``batch_size`` at a time: an int or ``"auto"`` (resolved by that call, see :mod:`faithlab.perturb.autobatch`);
    the scores do not depend on it.

    Returns a dict of tensors: ``saco`` ``(B,)`` in [−1, 1] (higher = more faithful); ``salience`` ``(B, K)``
    s(G_i), most salient group first; ``drop`` ``(B, K)`` ∇pred(G_i); ``prob`` ``(B,)`` p(target|x); ``groups``
    ``(B, n)`` group index of every unit; ``undefined`` ``(B,)`` bool, True where W = 0 (score set to 0).
    ``salience`` is the mean salience of each group (float64), see the module docstring; ``saco`` has the dtype of
    the model's probabilities.
    """
    units, scores = unit_salience(x, attributions, units, reduce)
    k = _validate.positive_int(k, "k")
    if k < 2:  # one group: no pair to compare, SaCo is 0 for every map
        raise ValueError(f"k={k} measures nothing: SaCo compares pairs of salience groups and one group has none "
                         "(the score would be 0 for every map); use at least 2 (the paper uses 10)")
    n = units.n
    if k > n:
        raise ValueError(f"k must be at most the number of units ({n}), got {k}")
    ranks = perturb.ranks(perturb.order(scores, "morf"))  # 0 = most salient; ties by lower unit id
    groups = torch.div(ranks * k, n, rounding_mode="floor")  # (B, n), near-equal groups
    ids = torch.arange(k, device=scores.device)
    member = groups[:, None, :] == ids[None, :, None]  # (B, K, n)
    # s(G_i): the group mean (offset-invariant with unequal groups), in float64 so the differences w do not lose
    # digits to a large offset
    salience = (member * scores.double()[:, None, :]).sum(-1) / member.sum(-1)
    run = perturb.Removal(model, x, units=units, reference=reference, output="prob", target=target,
                          batch_size=batch_size)
    # the clean pass (shared with fl.evaluate's other metrics inside its perturb.sharing() block), then the K
    # single-group removals; NaN/inf logits raise, naming the samples
    prob = run.clean()
    drop = prob[:, None] - run.outputs(member)
    i, j = torch.triu_indices(k, k, offset=1, device=scores.device)
    w = salience[:, i] - salience[:, j]
    signed = torch.where(drop[:, i] >= drop[:, j], w, -w).sum(1)
    total = w.abs().sum(1)
    undefined = perturb.warn_constant(total == 0, "SaCo is set to 0 and flagged in 'undefined'",
                                     over="salience groups")
    value = torch.where(undefined, torch.zeros_like(total), signed / torch.where(undefined, 1.0, total)).to(prob.dtype)
    return {"saco": value, "salience": salience, "drop": drop, "prob": prob, "groups": groups,
            "undefined": undefined}


saco = plain(saco_details, "saco", """
    Salience-guided Faithfulness Coefficient per sample → ``(B,)`` in [−1, 1]; higher = more faithful.

    Wu et al. 2024, Algorithm 1 (see the module docstring; arguments as in :func:`saco_details`). Invariant to
    positive scaling of the map and to adding a constant, for any k (groups are compared by their mean salience).
    A constant map (W = 0) scores 0; a uniform random map scores 0 in expectation.
    """)


def _check_k(options: dict, x: torch.Tensor, name) -> None:
    """k must be at least 2 and at most the number of units of x: checked before any work, naming the caller's
    option."""
    if options["k"] < 2:
        raise ValueError(f"{name('k')}={options['k']} measures nothing: SaCo compares pairs of salience groups and one "
                         "group has none; use at least 2")
    if options["k"] > (units := perturb.default_units(x).n):
        raise ValueError(f"{name('k')} must be at most the number of units of x ({units}), got {options['k']}")


register(Metric("saco", "SaCo", "saco", True, saco, details=saco_details, score="saco",
                options=(Option("k", doc="SaCo: the number of salience groups", check=checks.positive),),
                check=_check_k, ideal=1.0, span=2.0, tip=("k", 5, "fewer groups"), degenerate=({"k": 1},),
                doc="do more salient pixel groups, each removed alone, move the prediction more?"))

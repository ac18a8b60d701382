"""Does a removal carry the papers' mechanism here? Diagnostics every chapter that removes features shows.

F-Fidelity's premise is that removal is out of distribution (OOD): a model asked to classify an input with some
of its units replaced by the reference loses accuracy even when the removed units carry no evidence. SaCo and the
cumulative metrics need the opposite of a blind model: removing the salient units must hurt more than removing
others. :func:`removal_diagnostic` measures both at once, for one or several models (e.g. original and fine-tuned):
the accuracy and the mean probability of the label after removing ``k`` units chosen three ways — the ``k`` most
salient, ``k`` random non-salient ones, ``k`` random ones. Removing ``k`` non-salient units costs accuracy only
when removal itself is OOD; a model that shrugs it off reads the reference as ordinary background.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import torch

from faithlab import _validate, perturb
from faithlab.perturb.orders import ranks, uniform

__all__ = ["KINDS", "removal_diagnostic", "ood_gap"]

KINDS = ("salient", "non-salient", "random")
"""How the removed units are chosen: the k most salient, k random non-salient, k uniformly random."""


def _draw_masks(allowed: torch.Tensor, k: int, n_draws: int, g: torch.Generator) -> torch.Tensor:
    """``(B, n_draws, n)`` masks of k units drawn uniformly without replacement among the allowed ones."""
    keys = uniform((allowed.shape[0], n_draws, allowed.shape[1]), g, allowed.device)
    keys = torch.where(allowed[:, None], keys, 2.0)  # disallowed units sort after every allowed one
    return ranks(keys.flatten(0, 1).argsort(dim=1)).view_as(keys) < k


def removal_diagnostic(models: Mapping[str, Callable], x: torch.Tensor, y: torch.Tensor, salient: torch.Tensor, *,
                       ks: Sequence[int], units: perturb.Units | None = None, candidates: torch.Tensor | None = None,
                       reference: perturb.Reference = "zero", n_draws: int = 5,
                       generator: torch.Generator | int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Accuracy and p(label) of every model after removing k salient, non-salient or random units.

    models: ``{name: eval-mode model}``, all seeing the same removals. x, y: inputs and labels (int64).
    salient: ``(B, n)`` per sample, either a bool mask of the salient units (a ground truth: the digit's pixels,
    the class-carrying windows) or float unit scores (an explanation; higher = more salient).

    - bool mask: "salient" removes k units drawn at random inside the mask, "non-salient" k drawn outside it;
      k must not exceed the smallest mask (or its complement) of any sample.
    - scores: "salient" removes the top-k units, "non-salient" the bottom-k (ties in random order).

    "random" removes k units drawn uniformly. Random choices use ``n_draws`` draws from ``generator``, so every
    model sees the same masks. candidates: optional ``(B, n)`` bool, the units that may be removed at all (e.g. the
    real tokens of padded text: a pad position is neither evidence nor background); default all.
    Returns a tidy frame (model, k, removed, accuracy, accuracy std, p(label)) — means over samples and draws;
    "accuracy std" is over the draws; the clean accuracy is the row with k = 0 (removed "none").
    """
    if not isinstance(models, Mapping) or not models:
        raise ValueError("models must be a non-empty mapping {name: model}")
    units = perturb.units_for(units, x)
    _validate.tensor(salient, "salient", ndim=2)
    _validate.batch_match(x, salient, "x", "salient")
    if salient.shape[1] != units.n:
        raise ValueError(f"salient must have one entry per unit ({units.n}), got shape {tuple(salient.shape)}")
    n_draws = _validate.positive_int(n_draws, "n_draws")
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks:
        raise ValueError(f"ks must be a non-empty sequence of unit counts, got {ks!r}")
    ks = [_validate.positive_int(k, "ks") for k in ks]
    g = _validate.generator(generator, why="for the random draws")
    everything = torch.ones_like(salient, dtype=torch.bool)
    if candidates is not None:
        _validate.tensor(candidates, "candidates", ndim=2)
        if candidates.dtype != torch.bool or candidates.shape != salient.shape:
            raise ValueError(f"candidates must be a bool tensor shaped like salient {tuple(salient.shape)}, got "
                             f"{candidates.dtype} {tuple(candidates.shape)}")
        everything = candidates
    if salient.dtype == torch.bool:
        inside, outside = salient & everything, ~salient & everything
        room = min(int(inside.sum(1).min()), int(outside.sum(1).min()))
        if max(ks) > room:
            raise ValueError(f"ks must not exceed {room}, the fewest salient or non-salient units of any sample, "
                             f"got {max(ks)}")
        pick = {"salient": lambda k: _draw_masks(inside, k, n_draws, g),
                "non-salient": lambda k: _draw_masks(outside, k, n_draws, g)}
    else:
        _validate.finite(salient, "salient")
        if max(ks) > int(everything.sum(1).min()):
            raise ValueError(f"ks must not exceed the {int(everything.sum(1).min())} candidate units, got {max(ks)}")
        big = torch.finfo(torch.float64).max
        morf = ranks(perturb.order(salient.double().masked_fill(~everything, -big), "morf", ties="random", generator=g))
        lerf = ranks(perturb.order(salient.double().masked_fill(~everything, big), "lerf", ties="random", generator=g))
        pick = {"salient": lambda k: (morf < k)[:, None], "non-salient": lambda k: (lerf < k)[:, None]}
    pick["random"] = lambda k: _draw_masks(everything, k, n_draws, g)
    plans = [(0, "none", torch.zeros_like(salient, dtype=torch.bool)[:, None])]
    plans += [(k, kind, pick[kind](k)) for k in ks for kind in KINDS]
    rows = []
    for name, model in models.items():
        for k, kind, removed in plans:
            common = dict(units=units, reference=reference, target=y, batch_size=batch_size)
            correct = perturb.removal_outputs(model, x, removed, output="correct", **common).double()
            prob = perturb.removal_outputs(model, x, removed, output="prob", **common).double()
            per_draw = correct.mean(0)
            rows.append({"model": name, "k": k, "removed": kind, "accuracy": per_draw.mean().item(),
                         "accuracy std": per_draw.std(correction=0).item(), "p(label)": prob.mean().item()})
    return pd.DataFrame(rows)


def cap_count(salient: torch.Tensor, beta: float) -> int:
    """F-Fidelity's cap as a diagnostic count: round(β·n) units, but no more than the fewest salient or non-salient
    units of any sample (the most :func:`removal_diagnostic` can remove of each kind). salient: (B, n) bool."""
    _validate.tensor(salient, "salient")
    if salient.ndim != 2 or salient.dtype != torch.bool or salient.shape[0] == 0:
        raise ValueError(f"salient must be a non-empty (B, n) bool mask, got {tuple(salient.shape)} {salient.dtype}")
    beta = _validate.fraction(beta, "beta")
    return min(round(beta * salient.shape[1]), int(salient.sum(1).min()), int((~salient).sum(1).min()))


def ood_gap(diagnostic: pd.DataFrame, *, k: int | None = None) -> pd.Series:
    """Accuracy lost to removing k non-salient units (clean − non-salient), per model: the size of the OOD effect.
    k: the count to read (default: the largest in the frame)."""
    k = int(diagnostic["k"].max()) if k is None else k
    clean = diagnostic[diagnostic["removed"] == "none"].set_index("model")["accuracy"]
    moved = diagnostic[(diagnostic["removed"] == "non-salient") & (diagnostic["k"] == k)].set_index("model")
    if moved.empty:
        raise ValueError(f"k must be one of the counts in the diagnostic, got {k}")
    return (clean - moved["accuracy"]).rename(f"accuracy lost to {k} non-salient units")

"""Cumulative-removal metrics (SaCo spec §3.2): accuracy AUC, AOPC, log-odds and comprehensiveness.

Each removes the top (or bottom) 0, 10, …, 100 % of the units cumulatively, 11 points by default, and reads the
model at every point; each has a score call and a ``*_details`` twin that also returns the curve. Defaults follow
SaCo's comparison (Wu et al., CVPR 2024): units ranked by the signed sum of the map (``reduce="sum"``, the group
salience of SaCo), removed units replaced by the per-image per-channel mean. The fractions must increase strictly
and include 0: the clean output p(ŷ|x) is read there.

Every metric has the call shape ``metric(model, x, attributions, *, target=None, <options>)``: ``target`` is the class
each sample's score reads, None → the model's prediction ŷ on the clean x. The accuracy AUC is the exception in
what the paper reads: the true labels (pass ``target=y``).

A constant map defines no ranking: its units are removed in index order, the score is returned, every ``*_details``
dict flags those samples in ``constant`` ``(B,)`` and a ``perturb.ConstantMapWarning`` counts them. A model
returning NaN/inf logits raises a ValueError naming the samples (never a finite score).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from faithlab import _validate, perturb
from faithlab.metrics.registry import Metric, plain, register
from faithlab.metrics.statistics import trapezoid_auc
from faithlab.perturb.autobatch import BatchSize

__all__ = ["FRACTIONS", "REDUCE", "auc_accuracy", "auc_accuracy_details", "aopc", "aopc_details", "log_odds",
           "log_odds_details", "comprehensiveness", "comprehensiveness_details", "morf_details"]

FRACTIONS = tuple(i / 10 for i in range(11))  # 0, 10, ..., 100 % (spec §3.2)
REDUCE = "sum"
"""SaCo's unit-reduction rule: a unit's salience is the signed sum of the map over its elements (spec §3.1)."""
_EPS = 1e-12


def unit_salience(x: torch.Tensor, attributions: torch.Tensor, units: perturb.Units | None,
                  reduce: str) -> tuple[perturb.Units, torch.Tensor]:
    """Units (pixels / time steps / tokens when None) and the salience of each unit ``(B, n)`` by ``reduce``."""
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    units = perturb.units_for(units, x)
    attributions = perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, units, reduce=reduce)
    _validate.batch_match(x, scores, "x", "attributions")
    return units, scores


def _clean_index(f: torch.Tensor) -> int:
    """Position of fraction 0 (the clean input, read as p(ŷ|x)); the fractions must include it."""
    values = f.tolist()
    if 0.0 not in values:
        raise ValueError(f"fractions must include 0 (the clean input), got {values}")
    return values.index(0.0)


def _curve(model: Callable, x: torch.Tensor, attributions: torch.Tensor, direction: str, output: perturb.Output,
           target: torch.Tensor | None, reduce: str, units: perturb.Units | None, reference: perturb.Reference,
           fractions: Sequence[float], batch_size: int) -> dict[str, torch.Tensor]:
    """Cumulative removal curve ``(B, F)``, its clean value ``(B,)``, the fractions ``(F,)`` and ``constant``
    ``(B,)`` (maps without a ranking, warned about); units ordered by their salience (ties by lower unit id)."""
    f = _validate.fractions(fractions, "fractions", increasing=True)
    clean_at = _clean_index(f)
    units, scores = unit_salience(x, attributions, units, reduce)
    perturb.check_informative(torch.round(f.double() * units.n), units.n, "fractions", fractions)
    constant = perturb.warn_constant(perturb.constant_maps(scores), "their units are removed in index order; "
                                     "flagged in the details' 'constant'")
    runner = perturb.Removal(model, x, units=units, reference=reference, output=output, target=target,
                             batch_size=batch_size)
    curve = runner.curve(None, f, order=perturb.order(scores, direction), reduce=reduce)
    return {"curve": curve, "clean": curve[:, clean_at], "fractions": f.to(curve.device, curve.dtype),
            "constant": constant}


_OPTIONS_DOC = """
    target: ``(B,)`` int64 classes read at every point; None → the model's prediction ŷ on the clean x.
    reduce: the unit-reduction rule (default signed sum, SaCo's). reference: the removal value (default the
    per-image per-channel mean). units: default pixels / time steps / tokens. fractions: increasing, including 0
    (default 0, 0.1, …, 1). batch_size: forward-pass chunk; results do not depend on it."""


def auc_accuracy_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                         target: torch.Tensor | None = None, reduce: str = REDUCE,
                         reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
                         fractions: Sequence[float] = FRACTIONS,
                         batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`auc_accuracy` with its curve: ``score`` ``(B,)``, ``curve`` ``(B, F)`` the 0/1 indicator
    argmax f(x̃_top) = target at each fraction, ``clean`` ``(B,)``, ``fractions`` ``(F,)`` and ``constant``
    ``(B,)``. The paper reads the true labels: pass ``target=y``."""
    d = _curve(model, x, attributions, "morf", "correct", target, reduce, units, reference, fractions, batch_size)
    return {"score": _auc(d["curve"], d["fractions"]), **d}


def _auc(correct: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    return trapezoid_auc(correct, f)


def _aopc(curve: torch.Tensor, clean: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    drop = clean[:, None] - curve
    return drop.mean(1), drop


def _log_odds(curve: torch.Tensor, clean: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    ratio = torch.log(curve + _EPS) - torch.log(clean[:, None] + _EPS)
    return ratio.mean(1), ratio


auc_accuracy = plain(auc_accuracy_details, "score", """
    Per-sample accuracy AUC (spec §3.2; Ancona et al.): trapezoid area, x = fraction removed, under the 0/1
    indicator argmax f(x̃_top) = target as the most salient units are removed cumulatively → ``(B,)`` in [0, 1].
    The dataset AUC is the mean over samples. Lower = more faithful. The paper reads the true labels: pass
    ``target=y`` (None → ŷ, so the clean point is always 1). See :func:`auc_accuracy_details` for the curve.
    """)


def _drop_details(direction: str, model: Callable, x: torch.Tensor, attributions: torch.Tensor,
                  target: torch.Tensor | None, reduce: str, reference: perturb.Reference,
                  units: perturb.Units | None, fractions: Sequence[float], batch_size: int) -> dict[str, torch.Tensor]:
    d = _curve(model, x, attributions, direction, "prob", target, reduce, units, reference, fractions, batch_size)
    score, drop = _aopc(d["curve"], d["clean"])
    return {"score": score, "drop": drop, **d}


def aopc_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *, target: torch.Tensor | None = None,
                 reduce: str = REDUCE, reference: perturb.Reference = "channel_mean",
                 units: perturb.Units | None = None, fractions: Sequence[float] = FRACTIONS,
                 batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`aopc` with its curve: ``score`` ``(B,)``, ``curve`` ``(B, F)`` p(ŷ|x̃_top), ``drop`` ``(B, F)``
    p(ŷ|x) − p(ŷ|x̃_top), ``clean`` ``(B,)`` p(ŷ|x), ``fractions`` ``(F,)``, ``constant`` ``(B,)``."""
    return _drop_details("morf", model, x, attributions, target, reduce, reference, units, fractions, batch_size)


aopc = plain(aopc_details, "score", """
    AOPC (spec §3.2; Samek et al.): mean over the fractions of p(ŷ|x) − p(ŷ|x̃_top) → ``(B,)``, ŷ = target
    (None → the prediction on the clean x). Higher = more faithful. :func:`aopc_details` also returns the curve.
    """)


def log_odds_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                     target: torch.Tensor | None = None, reduce: str = REDUCE,
                     reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
                     fractions: Sequence[float] = FRACTIONS, batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`log_odds` with its curve: ``score`` ``(B,)``, ``curve`` ``(B, F)`` p(ŷ|x̃_top), ``log_ratio``
    ``(B, F)`` log((p(ŷ|x̃_top) + ε) / (p(ŷ|x) + ε)), ``clean`` ``(B,)``, ``fractions`` ``(F,)``, ``constant``
    ``(B,)``."""
    d = _curve(model, x, attributions, "morf", "prob", target, reduce, units, reference, fractions, batch_size)
    score, ratio = _log_odds(d["curve"], d["clean"])
    return {"score": score, "log_ratio": ratio, **d}


log_odds = plain(log_odds_details, "score", """
    LOdds (spec §3.2; Shrikumar et al., ATTCAT): mean over the fractions of log((p(ŷ|x̃_top) + ε) / (p(ŷ|x) +
    ε)), ε = 1e-12, ŷ = target (None → the prediction on the clean x) → ``(B,)``, ≤ 0 when removal only lowers
    p. Lower = more faithful. :func:`log_odds_details` also returns the curve.
    """)


def comprehensiveness_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                              target: torch.Tensor | None = None, reduce: str = REDUCE,
                              reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
                              fractions: Sequence[float] = FRACTIONS,
                              batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`comprehensiveness` with its curve: ``score``, ``curve`` p(ŷ|x̃_bot), ``drop`` p(ŷ|x) − p(ŷ|x̃_bot),
    ``clean``, ``fractions``, ``constant`` (shapes as :func:`aopc_details`)."""
    return _drop_details("lerf", model, x, attributions, target, reduce, reference, units, fractions, batch_size)


comprehensiveness = plain(comprehensiveness_details, "score", """
    Comprehensiveness, SaCo's least-salient-first variant (spec §3.2; DeYoung et al.): mean over the fractions
    of p(ŷ|x) − p(ŷ|x̃_bot), ŷ = target (None → the prediction on the clean x) → ``(B,)``; removing unimportant
    units should change little. Lower = more faithful. :func:`comprehensiveness_details` also returns the curve.
    """)


for _fn in (auc_accuracy_details, auc_accuracy, aopc_details, aopc, log_odds_details, log_odds,
            comprehensiveness_details, comprehensiveness):
    if _fn.__doc__ is not None:  # None under python -OO
        _fn.__doc__ += _OPTIONS_DOC
del _fn


def morf_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *, target: torch.Tensor | None = None,
                 labels: torch.Tensor | None = None, reduce: str = REDUCE,
                 reference: perturb.Reference = "channel_mean", units: perturb.Units | None = None,
                 fractions: Sequence[float] = FRACTIONS, batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """Accuracy AUC, AOPC and LOdds from one most-salient-first removal curve (the three read the same perturbed
    inputs: one forward pass per input instead of three).

    target: the class whose probability AOPC and LOdds read; None → the prediction ŷ on the clean x, found by one
    extra pass. labels: ``(B,)`` int64 true labels, read by the accuracy AUC (required: the paper reads them).
    Other options as in :func:`aopc_details`. Returns ``auc_accuracy``, ``aopc``, ``log_odds`` ``(B,)`` — equal to
    ``auc_accuracy(..., target=labels)``, ``aopc(..., target=target)`` and ``log_odds(..., target=target)`` —,
    ``correct`` ``(B, F)`` the accuracy curve, ``curve`` ``(B, F)`` p(target|x̃_top), ``clean`` ``(B,)``,
    ``fractions`` ``(F,)`` and ``constant`` ``(B,)``.
    """
    if labels is None:
        raise ValueError("labels are required: morf_details reads the true labels for its accuracy AUC (pass "
                         "labels=y)")
    _validate.tensor(labels, "labels", ndim=1)
    _validate.batch_match(x, labels, "x", "labels")
    if labels.dtype != torch.int64:
        raise TypeError(f"labels must be an int64 tensor of class indices, got dtype {labels.dtype}")
    if target is None:
        target = _predicted(model, x, batch_size)
    _validate.tensor(target, "target", ndim=1)
    _validate.batch_match(x, target, "x", "target")
    if target.dtype != torch.int64:
        raise ValueError(f"target must be an int64 tensor of class indices, got dtype {target.dtype}")
    if bool((target < 0).any()) or bool((labels < 0).any()):  # the range needs the model's width: one input's pass
        width = perturb.logits(model, x[:1], finite=False).shape[1]
        perturb.readout.check_classes(target, width, "target")
        perturb.readout.check_classes(labels, width, "labels")
    n_classes = int(torch.maximum(target.max(), labels.max())) + 1
    # one read-out of both classes per input: the cell's target carries (target, labels) as target·C + labels
    both = target.to(labels.device) * n_classes + labels

    def read(logits: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
        if int(n_classes) > logits.shape[1]:
            perturb.readout.check_classes(target, logits.shape[1], "target")
            perturb.readout.check_classes(labels, logits.shape[1], "labels")
        t, label = torch.div(code, n_classes, rounding_mode="floor"), code % n_classes
        prob = logits.softmax(dim=1).gather(1, t[:, None]).squeeze(1)
        return torch.stack([prob, (logits.argmax(dim=1) == label).to(logits.dtype)], dim=1)

    d = _curve(model, x, attributions, "morf", read, both, reduce, units, reference, fractions, batch_size)
    curve, correct = d["curve"][..., 0], d["curve"][..., 1]
    clean = d["clean"][:, 0]
    return {"auc_accuracy": _auc(correct, d["fractions"]), "aopc": _aopc(curve, clean)[0],
            "log_odds": _log_odds(curve, clean)[0], "correct": correct, "curve": curve, "clean": clean,
            "fractions": d["fractions"], "constant": d["constant"]}


def _predicted(model: Callable, x: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The model's predicted class on the clean x ``(B,)``, one forward pass per sample."""
    return perturb.removal_outputs(model, x, torch.zeros(x.shape[0], perturb.default_units(x).n, dtype=torch.bool,
                                                         device=x.device), output="predicted", batch_size=batch_size)


# fl.evaluate: AUC, AOPC and LOdds read one most-salient-first curve (morf_details: one run for the three, ŷ's
# probability and agreement with the labels read from the same logits); Comprehensiveness its least-salient-first
# curve.
# the clean input alone, or it and the input with every unit removed: the same curve for every map (refused)
_SAME_FOR_EVERY_MAP = ({"fractions": [0.0]}, {"fractions": [0.0, 1.0]})
register(Metric("auc_accuracy", "AUC", "saco", False, auc_accuracy, details=morf_details, score="auc_accuracy",
                group="morf", accuracy=True, unmoved=1.0, degenerate=_SAME_FOR_EVERY_MAP,
                doc="area under the accuracy curve as the most salient pixels are removed"))
register(Metric("aopc", "AOPC", "saco", True, aopc, details=morf_details, score="aopc", group="morf",
                degenerate=_SAME_FOR_EVERY_MAP, doc="mean probability drop as the most salient pixels are removed"))
register(Metric("log_odds", "LOdds", "saco", False, log_odds, details=morf_details, score="log_odds", group="morf",
                degenerate=_SAME_FOR_EVERY_MAP, doc="mean log-probability change as the most salient pixels are removed"))
register(Metric("comprehensiveness", "Comprehensiveness", "saco", False, comprehensiveness,
                details=comprehensiveness_details, score="score", group="lerf", degenerate=_SAME_FOR_EVERY_MAP,
                doc="mean probability drop as the least salient pixels are removed (SaCo's form)"))

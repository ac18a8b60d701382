"""SaCo's experimental protocol (Wu et al., CVPR 2024, spec §3): SaCo and the four cumulative metrics per sample,
their orientation (higher = more faithful), the radar rescaling of Fig. 4 and the Random-separation test of S1.
Tables are pandas frames with one column per metric."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pandas as pd
import torch

from faithlab import metrics, perturb, verdicts

__all__ = ["HIGHER_IS_BETTER", "per_sample_metrics", "oriented", "radar_scale", "random_separation",
           "order_sensitivity"]

HIGHER_IS_BETTER = {"SaCo": True, "AUC": False, "AOPC": True, "LOdds": False, "Comprehensiveness": False}
"""Direction of each metric of the SaCo comparison (spec §3.2): True when a higher score means more faithful."""


def per_sample_metrics(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions: torch.Tensor, *, k: int = 10,
                       batch_size: int = 256) -> dict[str, torch.Tensor]:
    """SaCo (K = ``k`` groups) and the cumulative metrics of one map → ``{metric: (B,)}`` in
    :data:`HIGHER_IS_BETTER` order; every removal uses the metrics' defaults (per-channel mean, signed-sum salience).
    AUC is read against the labels ``y``, the others against the predicted class. A last entry ``"constant map"``
    ``(B,)`` bool flags the maps that are constant over the pixels (no ranking: SaCo 0, the cumulative metrics
    remove pixels in index order); the metrics' per-call warnings are silenced here, report the flags instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        scores = {
            "SaCo": metrics.saco(model, x, attributions, k=k, batch_size=batch_size),
            "AUC": metrics.auc_accuracy(model, x, attributions, y, batch_size=batch_size),
            "AOPC": metrics.aopc(model, x, attributions, batch_size=batch_size),
            "LOdds": metrics.log_odds(model, x, attributions, batch_size=batch_size),
            "Comprehensiveness": metrics.comprehensiveness(model, x, attributions, batch_size=batch_size),
        }
    units = perturb.default_units(x)
    return {**scores, "constant map": perturb.constant_maps(perturb.unit_scores(attributions, units, reduce="sum"))}


def oriented(table: pd.DataFrame) -> pd.DataFrame:
    """The metric columns of ``table`` signed so that higher is better (lower-is-better metrics negated)."""
    sign = pd.Series({m: 1.0 if higher else -1.0 for m, higher in HIGHER_IS_BETTER.items()})
    return table[list(HIGHER_IS_BETTER)] * sign


def radar_scale(table: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4's axes (spec §3.5): each metric oriented, then min–max scaled across the rows (methods) to [0, 1],
    1 = best; a metric on which every method ties is set to 0.5."""
    o = oriented(table)
    return ((o - o.min()) / (o.max() - o.min()).replace(0, float("nan"))).fillna(0.5)


def _wide(per_sample: pd.DataFrame, metric: str) -> pd.DataFrame:
    """(sample × method) table of one metric, oriented so that higher is better."""
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0
    return per_sample.pivot(index="sample", columns="method", values=metric) * sign


def random_separation(per_sample: pd.DataFrame, *, random: str = "Random", tolerance: float = 0.05,
                      seed: int = 0) -> tuple[verdicts.Verdict, dict]:
    """Claim S1 on one setting's per-sample metrics (columns method, sample and the metrics of
    :data:`HIGHER_IS_BETTER`): SaCo puts ``random`` near 0 and below most methods, the cumulative metrics do not.

    Paired bootstraps over the samples (95 %, :func:`faithlab.verdicts.bootstrap_diff`) compare every method
    with ``random`` on every oriented metric. SaCo's part holds when |mean SaCo(random)| ≤ ``tolerance`` and more
    than half of the methods beat ``random`` on SaCo (the paper: "most explanation methods obtain positive
    scores"). A cumulative metric fails to separate ``random`` when at least one method does not beat it
    (``random`` ties or wins: "comparable performance, even surpassing some"). Verdict: reproduced when SaCo's part
    holds and at least two of the four cumulative metrics fail; partly reproduced when only SaCo's part holds;
    else not reproduced. Returns the verdict and ``{"SaCo(Random)", "methods beating Random on SaCo", "SaCo part
    holds", "not beating Random": {metric: count}, "methods": n}``.
    """
    methods = [m for m in dict.fromkeys(per_sample["method"]) if m != random]
    if random not in set(per_sample["method"]) or not methods:
        raise ValueError(f"per_sample must hold {random!r} and at least one other method")
    beating = {}
    for metric in HIGHER_IS_BETTER:
        wide = _wide(per_sample, metric)
        beating[metric] = sum(verdicts.bootstrap_diff(wide[m], wide[random], seed=seed).outcome == "win"
                              for m in methods)
    saco_random = float(per_sample.loc[per_sample["method"] == random, "SaCo"].mean())
    saco_ok = abs(saco_random) <= tolerance and beating["SaCo"] > len(methods) / 2
    failing = {m: len(methods) - beating[m] for m in HIGHER_IS_BETTER if m != "SaCo"}
    n_fail = sum(v > 0 for v in failing.values())
    result = verdicts.ladder(saco_ok and n_fail >= 2, saco_ok)
    why = (f"SaCo(Random) {saco_random:+.3f} (tolerance ±{tolerance:g}), {beating['SaCo']}/{len(methods)} methods "
           f"beat it on SaCo; cumulative metrics on which some method does not beat Random: {n_fail}/4")
    return verdicts.Verdict(result, why), {"SaCo(Random)": saco_random, "methods beating Random on SaCo":
                                           beating["SaCo"], "SaCo part holds": saco_ok, "not beating Random": failing,
                                           "methods": len(methods)}


def order_sensitivity(per_sample: pd.DataFrame, *, method: str = "Integrated Gradients",
                      best_on: tuple[str, ...] = ("AOPC", "LOdds", "AUC"), worst_on: str = "Comprehensiveness",
                      seed: int = 0) -> dict[str, bool]:
    """The paper's removal-order observation on one setting's per-sample metrics: ``method`` is best on the
    most-relevant-first metrics ``best_on`` and worst on ``worst_on`` (least-relevant first).

    Paired bootstraps over the samples (95 %) of ``method`` against every other method on each oriented metric:
    "best on M" holds when no method beats ``method`` on M, "worst on M" when ``method`` beats none.
    Returns ``{"best on AOPC": bool, …, "worst on Comprehensiveness": bool}``.
    """
    others = [m for m in dict.fromkeys(per_sample["method"]) if m != method]
    if method not in set(per_sample["method"]) or not others:
        raise ValueError(f"per_sample must hold {method!r} and at least one other method")
    checks = {}
    for metric, want in [*((m, "best") for m in best_on), (worst_on, "worst")]:
        wide = _wide(per_sample, metric)
        outcomes = [verdicts.bootstrap_diff(wide[method], wide[m], seed=seed).outcome for m in others]
        checks[f"{want} on {metric}"] = "loss" not in outcomes if want == "best" else "win" not in outcomes
    return checks

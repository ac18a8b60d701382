"""The study's first check (book chapter "Basics") as a claim function: on a classifier that learned its task, a
deletion curve ordered by integrated gradients must fall faster than one ordered by a random map. The random
explainer is the null of the comparison, permuted test labels the null of the premise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from faithlab_study import verdicts
from faithlab_study.verdicts import replication
from faithlab_study.papers.setup import Setting

__all__ = ["claim_deletion_sanity", "NaNWhenPerturbed"]

SETUP: tuple[Setting, ...] = (
    Setting("data", "—", "basics/digits_classifier", "scikit-learn digits, {image_size} px"),
    Setting("model", "—", "basics/digits_classifier", lambda p: f"small CNN, {p['n_epochs']} epochs"),
    Setting("test images", "—", "basics/digits_classifier", "{n_test}"),
    Setting("explainers", "—", "basics/digits_classifier",
            lambda p: ", ".join(m.replace("_", " ") for m in p["methods"])),
    Setting("fractions removed", "—", "basics/digits_classifier",
            lambda p: f"{min(p['fractions']) * 100:g}–{max(p['fractions']) * 100:g} %, {len(p['fractions'])} levels"),
)
"""The chapter's set-up table: no paper behind it ("—"), ours from the executed notebook's parameters."""


def _predictions(predictions, labels, replicas: list) -> dict:
    """``{replica: (predicted, true) classes}`` from the claim's ``predictions`` and ``labels`` (see
    :func:`claim_deletion_sanity`), validated."""
    labels = np.asarray(labels).ravel()
    if isinstance(predictions, pd.DataFrame):
        missing = {"replica", "sample", "predicted"} - set(predictions.columns)
        if missing:
            raise ValueError(f"predictions as a frame must have the columns replica, sample and predicted; missing "
                             f"{sorted(missing)}")
        sample = predictions["sample"].to_numpy()
        if len(labels) < 3 or len(sample) and (sample.min() < 0 or sample.max() >= len(labels)):
            raise ValueError(f"predictions' samples must index labels (N,) with N ≥ 3, got samples "
                             f"{sample.min() if len(sample) else '—'}…{sample.max() if len(sample) else '—'} for "
                             f"N = {len(labels)}")
        out = {}
        for r, part in predictions.groupby("replica", sort=True):
            idx = part["sample"].to_numpy(np.int64)
            out[r] = (part["predicted"].to_numpy(), labels[idx])
        if set(out) != set(replicas):
            raise ValueError(f"predictions must hold the replicas of deletion, got {sorted(out, key=str)} for "
                             f"{sorted(replicas, key=str)}")
        if any(len(y) < 3 for _, y in out.values()):
            raise ValueError("predictions must hold at least 3 samples per replica")
        return out
    predictions = np.asarray(predictions).ravel()
    if predictions.shape != labels.shape or len(labels) < 3:
        raise ValueError(f"predictions and labels must be (N,) with the same N ≥ 3, got {predictions.shape} and "
                         f"{labels.shape}")
    if len(replicas) > 1:
        raise ValueError(f"deletion holds {len(replicas)} replicas: predictions must be a frame with the columns "
                         "replica, sample and predicted (one row per replica × test sample)")
    return {replicas[0]: (predictions, labels)}


@verdicts.registered(
    "B1", paper="basics", kind="study check", claim="IG deletion AUC below random (sanity check)",
    statistic=("per test digit, the deletion AUC of the random explainer minus that of Integrated Gradients; its "
               "mean per trained replica"),
    direction="above", margin=0.01,
    margin_source="convention (no paper makes this check): 1 % of the deletion curve's range, [0, 1]",
    decision="single", null="the random explainer (the comparison itself)",
    premises=["every replica learned the task: accuracy above the permuted-label chance range and the "
              "majority-class share"],
    replicas=3, units=30, interval="t on replica means", unit="test digit",
    log=[
        {"date": "2026-11-27", "change": "registered",
         "why": ("issue 69: the rules move from the claim function's code into this file; the margin was 0 (any "
                 "positive difference), now 0.01 by convention so that a tie can be decided"),
         "fingerprint": "e2d22038aecd"},
    ],
)
def claim_deletion_sanity(deletion: pd.DataFrame, predictions, labels, *, method: str = "integrated_gradients",
                          random: str = "random", n_null: int = 1000, seed: int = 0) -> verdicts.Claim:
    """Study check B1: ``method``'s deletion AUC (most relevant pixels removed first, lower = more faithful) lies
    below the ``random`` explainer's on the same test digits, decided by its rule (registered above it)
    (``verdicts.rule("B1")``: the margin and the design live there).

    deletion: one row per explainer × sample (columns explainer, sample, ``deletion AUC``), with a ``replica``
    column when it stacks several independently trained models (a unit is then a replica × sample). predictions,
    labels: for one model, ``(N,)`` predicted and true classes of the same N test samples; for replicas,
    ``predictions`` a frame with the columns replica, sample and predicted (one row per replica × test sample) and
    ``labels`` the ``(N,)`` true classes that ``sample`` indexes. Premise: every model learned the task — its
    accuracy on these samples lies above the 95 % range of the accuracy with the labels permuted (``n_null``
    permutations, generator ``seed``) and above the majority-class share; else the maps explain a model that knows
    nothing and the comparison says nothing about the explainer. Null of the comparison: the random explainer.
    Statistic: AUC(random) − AUC(method) per sample, its mean per replica and the t interval on the replica means
    (:func:`faithlab_study.verdicts.effect`), judged against the rule's margin. Table: the two explainers' mean AUC, the
    difference and its interval, the replicas and the lowest replica's accuracy."""
    rule = verdicts.rule("B1")
    names = set(deletion["explainer"])
    if method not in names or random not in names:
        raise ValueError(f"deletion must hold the explainers {method!r} and {random!r}, got {sorted(names)}")
    has_replicas = replication.has_replicas(deletion)
    replicas = sorted(deletion["replica"].unique().tolist(), key=str) if has_replicas else [0]
    by_replica = _predictions(predictions, labels, replicas)
    checks = []
    for r, (p, y) in by_replica.items():
        accuracy = float((p == y).mean())
        null = verdicts.null_draws(lambda a, b: (a == b).mean(), p, y, what="accuracy with the labels permuted",
                                   n_draws=n_null, seed=seed)
        majority = float(pd.Series(y).value_counts(normalize=True).iloc[0])
        checks.append((r, accuracy, null, majority))
    r_low, accuracy, null, majority = min(checks, key=lambda c: c[1] - max(c[2].high, c[3]))  # the weakest model
    reasons = []
    for r, a, n, m in checks:
        who = "the model's" if len(checks) == 1 else f"replica {r}'s"
        reasons += [None if a > n.high else f"{who} accuracy {a:.3f} does not exceed the chance range of "
                                            f"{n.describe()}: it did not learn the task",
                    None if a > m else f"{who} accuracy {a:.3f} does not exceed the majority-class share {m:.3f}: it "
                                       "did not learn the task"]
    untestable = verdicts.first_reason(*reasons)
    index = replication.unit_keys(deletion, "sample")
    wide = deletion.pivot(index=index, columns="explainer", values="deletion AUC")
    groups = replication.groups(wide.index)
    short = "IG" if method == "integrated_gradients" else method
    j = verdicts.effect(wide[random].to_numpy(np.float64), wide[method].to_numpy(np.float64), rule=rule,
                        groups=groups, what=f"{random} − {short}")
    v = verdicts.decide(j, rule, untestable=untestable)
    i = j.interval
    means = wide[[method, random]].mean()
    table = pd.DataFrame([{"explainer": method, "random": random, f"{method} AUC": float(means[method]),
                           f"{random} AUC": float(means[random]), "random − explainer": i.estimate, "low": i.low,
                           "high": i.high, "margin": j.margin, "outcome": j.outcome, "samples": i.units,
                           "replicas": len(checks), "accuracy": accuracy,
                           "chance accuracy (permuted labels), high": null.high, "majority share": majority}])
    learned = (f"accuracy {accuracy:.3f} against {null.describe()} and the majority-class share {majority:.3f}"
               if len(checks) == 1 else
               f"checked for each of {len(checks)} replicas; the weakest, replica {r_low}, has accuracy "
               f"{accuracy:.3f} against {null.describe()} and the majority-class share {majority:.3f}")
    return verdicts.Claim(
        rule.claim, rule=rule,
        premise=f"the model learned the task: {learned}; the random explainer is the null of the comparison",
        paper_value="— (study check)",
        our_value=f"{short} {means[method]:.3f} vs random {means[random]:.3f}; difference {i.estimate:+.3f} "
                  f"[{i.low:+.3f}, {i.high:+.3f}]",
        verdict=v, table=table, units=int(i.units))


class NaNWhenPerturbed(torch.nn.Module):
    """The model, but NaN logits on any input that is not one of the clean digits (the chapter's garbage-in check:
    a model that fails on perturbed inputs only, the case a silent metric would turn into a finite number)."""

    def __init__(self, inner, clean):
        super().__init__()
        self.inner, self.clean = inner, clean.flatten(1)

    def forward(self, inputs):
        is_clean = (inputs.flatten(1)[:, None, :] == self.clean[None]).all(-1).any(1)
        return torch.where(is_clean[:, None], self.inner(inputs), torch.nan)

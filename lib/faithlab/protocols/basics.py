"""The study's first check (book chapter "Basics") as a claim function: on a classifier that learned its task, a
deletion curve ordered by integrated gradients must fall faster than one ordered by a random map. The random
explainer is the null of the comparison, permuted test labels the null of the premise."""

from __future__ import annotations

import numpy as np
import pandas as pd

from faithlab import verdicts
from faithlab.protocols.setup import Setting

__all__ = ["claim_deletion_sanity"]

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


def claim_deletion_sanity(deletion: pd.DataFrame, predictions, labels, *, method: str = "integrated_gradients",
                          random: str = "random", n_null: int = 1000, n_boot: int = 4000,
                          seed: int = 0) -> verdicts.Claim:
    """The sanity claim: ``method``'s deletion AUC (most relevant pixels removed first, lower = more faithful) lies
    below the ``random`` explainer's on the same test digits.

    deletion: one row per explainer × sample (columns explainer, sample, ``deletion AUC``). predictions, labels:
    ``(N,)`` predicted and true classes of the same N test samples (the model's task). Premise: the model learned
    the task — its accuracy on these samples lies above the 95 % range of the accuracy with the labels permuted
    (``n_null`` permutations, generator ``seed``) and above the majority-class share; else the maps explain a model
    that knows nothing and the comparison says nothing about the explainer. Null of the comparison: the random
    explainer. Rule: paired bootstrap over the samples (95 %) of AUC(random) − AUC(method), margin 0, decided by
    :func:`faithlab.verdicts.from_comparison` (an interval holding 0 is inconclusive, never a failure). A study
    check (kind "study check"): no paper makes it. Table: the two explainers' mean AUC, the difference and its
    interval."""
    names = set(deletion["explainer"])
    if method not in names or random not in names:
        raise ValueError(f"deletion must hold the explainers {method!r} and {random!r}, got {sorted(names)}")
    predictions = np.asarray(predictions).ravel()
    labels = np.asarray(labels).ravel()
    if predictions.shape != labels.shape or len(labels) < 3:
        raise ValueError(f"predictions and labels must be (N,) with the same N ≥ 3, got {predictions.shape} and "
                         f"{labels.shape}")
    accuracy = float((predictions == labels).mean())
    null = verdicts.null_draws(lambda p, y: (p == y).mean(), predictions, labels, what="accuracy with the labels "
                               "permuted", n_draws=n_null, seed=seed)
    majority = float(pd.Series(labels).value_counts(normalize=True).iloc[0])
    untestable = verdicts.first_reason(
        None if accuracy > null.high else f"the model's accuracy {accuracy:.3f} does not exceed the chance range of "
                                          f"{null.describe()}: it did not learn the task",
        None if accuracy > majority else f"the model's accuracy {accuracy:.3f} does not exceed the majority-class "
                                         f"share {majority:.3f}: it did not learn the task")
    wide = deletion.pivot(index="sample", columns="explainer", values="deletion AUC")
    c = verdicts.bootstrap_diff(wide[random].to_numpy(np.float64), wide[method].to_numpy(np.float64),
                                n_boot=n_boot, seed=seed)
    v = verdicts.from_comparison({random: c}, untestable=untestable)
    if untestable is None:
        v = v.with_why(f"random − {method} {c.mean:+.3f}, 95 % interval [{c.low:+.3f}, {c.high:+.3f}]")
    means = wide[[method, random]].mean()
    table = pd.DataFrame([{"explainer": method, "random": random, f"{method} AUC": float(means[method]),
                           f"{random} AUC": float(means[random]), "random − explainer": c.mean, "low": c.low,
                           "high": c.high, "outcome": c.outcome, "samples": c.n, "accuracy": accuracy,
                           "chance accuracy (permuted labels), high": null.high, "majority share": majority}])
    short = "IG" if method == "integrated_gradients" else method
    return verdicts.Claim(
        "IG deletion AUC below random (sanity check)",
        rule=f"per test sample, the deletion AUC of the random explainer minus that of {method}; direction: "
             "positive (the explainer deletes the evidence faster than random maps); margin 0; paired bootstrap "
             "over the samples",
        premise=f"the model learned the task: accuracy {accuracy:.3f} against {null.describe()} and the "
                f"majority-class share {majority:.3f}; the random explainer is the null of the comparison",
        paper_value="— (study check)",
        our_value=f"{short} {means[method]:.3f} vs random {means[random]:.3f}",
        verdict=v, table=table, kind="study check", units=int(c.n))

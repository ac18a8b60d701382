"""Table 3 as a claim: ReCo/MeGe's comparison with Bhatt et al.'s μF and S_avg (spec §4.6): Grad-CAM has the
highest μF and Grad-CAM and SmoothGrad the lowest S_avg (:func:`claim_table3`), on the scores of
:func:`~faithlab_study.papers.reco_mege.experiments.baselines.fidelity_stability`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from faithlab_study import verdicts
from faithlab_study.papers.reco_mege.claims.registration import TABLE3, two_parts
from faithlab_study.verdicts import replication
from faithlab_study.papers.reco_mege import paper
from faithlab_study.papers.reco_mege.claims.premise import CHANCE_FACTOR
from faithlab_study.papers.reco_mege.claims.replicas import judge, replica_list, judgement_rows, weakest_text

__all__ = ["claim_table3"]


def _chance_premise(premise: pd.DataFrame | None) -> verdicts.Premise:
    """The model beats chance clearly, over the replicas: premise_row rows (``accuracy``, ``bar``, ``images``; one per
    replica) → the t interval on the replicas' accuracy minus the bar against 0; None → holds (nothing to check)."""
    if premise is None:
        return verdicts.Premise(True, "")
    if not isinstance(premise, pd.DataFrame) or not {"accuracy", "bar", "images"} <= set(premise.columns):
        raise ValueError("premise must be premise_row(...) rows (accuracy, bar, images), one per replica, or None")
    if len(premise) < 2:
        raise ValueError(f"the premise is decided over at least 2 trained replicas, got {len(premise)}")
    interval = verdicts.replica_interval((premise["accuracy"] - premise["bar"]).to_numpy(float),
                                         units=int(premise["images"].sum()))
    return verdicts.premise_interval(interval, threshold=0.0,
                                     what=f"mean accuracy minus {CHANCE_FACTOR:g} × chance "
                                          f"({float(premise['bar'].mean()):.2f}) on images no model saw")


def _mu_discriminates(mu: pd.DataFrame, mu_null: pd.DataFrame, groups) -> tuple[verdicts.Premise, dict]:
    """μF's null: per method, μF minus the same μF with the method's map of another image, its t interval on the
    replica means → holds when some method's lies above 0 (μF can tell a map from an unrelated one here), fails when
    every method's lies wholly below 0, undecided otherwise."""
    intervals = {m: verdicts.mean_interval((mu[m] - mu_null[m]).to_numpy(float), groups=groups) for m in mu.columns}
    above = [m for m, i in intervals.items() if i.low > 0]
    text = "μF minus its chance level (the map of another image): " + ", ".join(
        f"{m} {i.estimate:+.3f} [{i.low:+.3f}, {i.high:+.3f}]" for m, i in intervals.items())
    holds = True if above else False if all(i.high < 0 for i in intervals.values()) else None
    if holds is False:
        text += ": no method's μF lies above its chance level, so μF does not discriminate on these models"
    return verdicts.Premise(holds, text), intervals


def _log_ratio(other: pd.Series, stable: pd.Series) -> np.ndarray:
    """ln(other / stable) of two methods' mean S_avg per replica; NaN (no ratio: the replica is left out) where
    either mean is 0 — maps that never move within the radius, as a ReLU network's saliency can on a few images — or
    not finite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(other.to_numpy(float) / stable.to_numpy(float))
    return np.where(np.isfinite(values), values, np.nan)


@TABLE3.registered(
    "RM-T3", **two_parts("RM-T3.muF", "RM-T3.Savg"),
    claim="Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (paper: CIFAR-10)",
    null="μF: the same μF with the method's map of another image; S_avg: the other methods",
    interval="t on replica means",
    note="partly reproduced when one of the two parts holds in full and the other is decided",
    fingerprint="2a0b3e83a3dd",
)
@TABLE3.registered(
    "RM-T3.muF", claim="Table 3 (μF part): Grad-CAM has the highest μF",
    statistic=("per other method, Grad-CAM's μF minus its, paired per held-out image, on the first model of each "
               "replica"),
    margin=0.301,
    margin_source="half Grad-CAM's lead in μF over the best other method in Table 3 (0.907 − 0.305 = 0.602)",
    over="competitors",
    null="the same μF with the method's map of another image (μF must lie above it for some method to discriminate)",
    premises=["the models beat chance clearly, over the replicas", "some method's μF lies above its chance level"],
    interval="t on replica means",
    fingerprint="07f9b7536ec5",
)
@TABLE3.registered(
    "RM-T3.Savg",
    claim="Table 3 (S_avg part): Grad-CAM and SmoothGrad have the lowest S_avg",
    statistic=("per (Grad-CAM or SmoothGrad, other method) pair, the natural log of the other method's mean S_avg "
               "over theirs, once per replica (first model)"),
    margin=2.2387,
    margin_source=("half the natural log of the smallest ratio in Table 3 of another method's S_avg to Grad-CAM's or "
                   "SmoothGrad's (IG / SG: ln(2.112 / 0.024) = 4.477); S_avg's scale is the maps' own, so ratios are "
                   "compared"),
    over="(stable, other) pairs", null="the other methods' S_avg on the same images",
    fingerprint="58fb18776a20",
)
def claim_table3(per_sample: pd.DataFrame, *, premise: pd.DataFrame | None = None, target: str = "GC",
                 stable: Sequence[str] = ("GC", "SG")) -> verdicts.Claim:
    """Claim of Table 3: Grad-CAM (``target``) has the highest μF, and Grad-CAM and SmoothGrad (``stable``) the
    lowest S_avg (CIFAR-10), decided by its rule (``verdicts.rule("RM-T3")``: two named parts, ``RM-T3.muF`` and
    ``RM-T3.Savg``).

    per_sample: :func:`fidelity_stability` frames of every method, concatenated (``method``, ``sample``, ``μF``,
    ``μF (shuffled)``, ``S_avg``), with a ``replica`` column: one model per independently trained replica, at least
    2; a NaN μF (a constant map) counts as 0, as xplique does. Part RM-T3.muF: per other method, ``target``'s μF minus
    its, paired per sample, a t interval on the replica means; every comparison must hold. Part RM-T3.Savg: per (stable
    method, other method) pair, the natural log of the other's mean S_avg over the stable one's, once per replica
    (S_avg's scale is the maps' own, so the claim compares ratios), a t interval on the R values; every pair must
    hold. premise: premise_row rows of the models' families (``accuracy``, ``bar``, ``images``; one per replica):
    the models beat chance clearly, over the replicas; None skips it. Null of μF: the same μF with the method's map
    of another image (:func:`_mu_discriminates`: without any method above it μF does not discriminate and part
    RM-T3.muF is not testable here). Table: one row per cell."""
    rule = verdicts.rule("RM-T3")
    need = {"method", "sample", "μF", "μF (shuffled)", "S_avg"}
    if not isinstance(per_sample, pd.DataFrame) or not need <= set(per_sample.columns):
        raise ValueError(f"per_sample must be a frame with columns {sorted(need)} (fidelity_stability)")
    methods = list(dict.fromkeys(per_sample["method"]))
    lacking = [m for m in (target, *stable) if m not in methods]
    others = [m for m in methods if m not in stable]
    if lacking or not others:
        raise ValueError(f"per_sample must hold {target!r}, {list(stable)} and another method to compare them with, "
                         f"got {methods}")
    rows = replication.with_replica(per_sample)
    replicas = replica_list(rows, "Table 3")
    wide = {c: rows.pivot(index=["replica", "sample"], columns="method", values=c).reindex(columns=methods)
            for c in ("μF", "μF (shuffled)", "S_avg")}
    mu, mu_null, s_avg = wide["μF"].fillna(0.0), wide["μF (shuffled)"].fillna(0.0), wide["S_avg"]
    groups = mu.index.get_level_values("replica").astype(str).to_numpy()
    units = len(mu)
    chance = _chance_premise(premise)
    untestable = chance.text if chance.holds is False else None
    discriminates, null = _mu_discriminates(mu, mu_null, groups)
    mu_rule, s_rule = verdicts.rule("RM-T3.muF"), verdicts.rule("RM-T3.Savg")
    mu_cells = {f"μF {target} − {m}": verdicts.effect(mu[target].to_numpy(float), mu[m].to_numpy(float),
                                                      rule=mu_rule, groups=groups, what=f"μF {target} − {m}")
                for m in methods if m != target}
    per_replica = s_avg.groupby(level="replica").mean()
    s_cells = {f"S_avg {o} / {s}": judge(_log_ratio(per_replica[o], per_replica[s]), s_rule, units=units,
                                          what=f"ln S_avg {o} / {s}") for s in stable for o in others}
    mu_untestable = untestable or (discriminates.text if discriminates.holds is False else None)
    parts = {"RM-T3.muF": verdicts.decide(mu_cells, mu_rule, untestable=mu_untestable),
             "RM-T3.Savg": verdicts.decide(s_cells, s_rule, untestable=untestable)}
    if discriminates.holds is None and not mu_untestable:
        parts["RM-T3.muF"] = discriminates.apply(parts["RM-T3.muF"])
    v = verdicts.decide_parts(parts, rule, untestable=untestable)
    v = chance.apply(v) if chance.holds is None else v
    table = pd.DataFrame(judgement_rows(mu_cells, part="RM-T3.muF", **{"part verdict": str(parts["RM-T3.muF"])})
                         + judgement_rows(s_cells, part="RM-T3.Savg", **{"part verdict": str(parts["RM-T3.Savg"])}))
    means = pd.DataFrame({"μF": mu.mean(), "μF (shuffled)": mu_null.mean(), "S_avg": s_avg.mean()})
    return verdicts.Claim(
        "Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (paper: CIFAR-10)",
        rule=rule,
        premise="the models beat chance clearly, over the replicas; μF's null is the same μF with the method's map "
                "of another image (at least one method must lie above it for μF to discriminate): "
                + "; ".join(t for t in (chance.text, discriminates.text) if t),
        paper_value=paper.quoted("Table 3"),
        our_value=f"{len(replicas)} replicas × {units // len(replicas)} samples; μF "
                  + ", ".join(f"{m} {means.loc[m, 'μF']:.3f}" for m in methods) + f" ({parts['RM-T3.muF']}, "
                  + weakest_text(mu_cells) + "); S_avg " + ", ".join(f"{m} {means.loc[m, 'S_avg']:.3g}" for m in methods)
                  + f" ({parts['RM-T3.Savg']}, " + weakest_text(s_cells) + " on the log scale)",
        verdict=v, table=table, units=units, kept_replicas=len(replicas))

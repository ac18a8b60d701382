"""Table 3: ReCo/MeGe's comparison with Bhatt et al.'s μF and S_avg (spec §4.6;
:mod:`faithlab.metrics.papers.reco_mege.baselines`): per-sample μF with its chance level and S_avg of one method on one
model (:func:`fidelity_stability`), and the claim that Grad-CAM has the highest μF and Grad-CAM and SmoothGrad the
lowest S_avg (:func:`claim_table3`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import explainers, perturb, verdicts
from faithlab.metrics.papers.reco_mege.baselines import average_stability_details, mu_fidelity_details
from faithlab.metrics.papers.reco_mege.crossfold import shuffled_partners
from faithlab.protocols.reco_mege import paper
from faithlab.protocols.reco_mege.claims import _decide_premises
from faithlab.protocols.reco_mege.sets import _NULL_STREAM
from faithlab.protocols.reco_mege.tasks import method_options

__all__ = ["fidelity_stability", "claim_table3"]


def fidelity_stability(model, x: torch.Tensor, y: torch.Tensor, method: str, *, n_subsets: int = 200,
                       subset_fraction: float = 0.15, n_neighbours: int = 200, radius: float = 0.1,
                       output: str = "prob", seed: int = 0, batch_size: int = 256, **settings) -> pd.DataFrame:
    """Per-sample μF (Pearson, zero baseline, 15 % pixel subsets) and S_avg (squared ℓ2, ‖u‖₁ ≤ radius, common
    random numbers: a sample and its neighbours are explained with the same seed) of one method on one model
    (Table 3), explaining the label → frame (``sample``, ``μF``, ``μF (shuffled)``, ``S_avg``).

    ``μF (shuffled)`` is μF's chance level: the same subsets and output drops scored with the method's map of
    another image (:func:`faithlab.metrics.shuffled_partners` over the samples, generator ``keyed_seed(seed, 1)``),
    so a method whose μF does not exceed it orders pixels no better than an unrelated map of its own kind."""
    name, options = method_options(method, **settings)
    explain = functools.partial(explainers.explain, method=name, batch_size=batch_size, generator=seed, **options)
    attributions = explain(model, x, y)
    mu_options = dict(n_subsets=n_subsets, subset_fraction=subset_fraction, output=output, generator=seed,
                      batch_size=batch_size)
    mu = mu_fidelity_details(model, x, attributions, target=y, **mu_options)["mu_f"]
    partners = shuffled_partners(torch.ones(len(x), dtype=torch.bool, device=x.device),
                                 generator=perturb.keyed_seed(seed, _NULL_STREAM))
    mu_null = mu_fidelity_details(model, x, attributions[partners], target=y, **mu_options)["mu_f"]
    # common random numbers: each sample and its neighbours share one seed, so a stochastic method's S_avg measures
    # how its map changes within the radius, not its Monte-Carlo noise. S_avg explains x itself (attributions None):
    # the attributions for μF draw their noise from `generator`, not from the samples' seeds
    def explainer(m, z: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor | None = None) -> torch.Tensor:
        return explain(m, z, t, sample_seeds=seeds)

    s = average_stability_details(model, x, None, explainer=explainer, target=y, n_neighbours=n_neighbours,
                                  radius=radius, generator=seed, batch_size=batch_size)["s_avg"]
    return pd.DataFrame({"method": method, "sample": np.arange(len(x)), "μF": mu.cpu().numpy(),
                         "μF (shuffled)": mu_null.cpu().numpy(), "S_avg": s.cpu().numpy()})


def claim_table3(per_sample: pd.DataFrame, *, premise=None, target: str = "GC",
                 stable: Sequence[str] = ("GC", "SG"), n_boot: int = 4000, level: float = 0.95,
                 seed: int = 0) -> verdicts.Claim:
    """Claim of Table 3: Grad-CAM (``target``) has the highest μF, and Grad-CAM and SmoothGrad (``stable``) the
    lowest S_avg (CIFAR-10).

    per_sample: :func:`fidelity_stability` frames of every method, concatenated (``method``, ``sample``, ``μF``,
    ``μF (shuffled)``, ``S_avg``), with a ``replica`` column when they come from several independently trained
    models (one per replica; the unit is then a (replica, sample) and every interval a two-stage bootstrap: the
    replicas, then the samples within them); a NaN μF (a constant map) counts as 0, as xplique does. premise: a
    reason the family cannot be tested (:func:`family_premise`), None, a :class:`faithlab.verdicts.Premise`, or a
    frame of per-unit held-out predictions (``replica``, ``correct``, ``bar``: 2 / number of classes) from which
    "the models beat chance" is decided on its own two-stage interval (fails only when it lies wholly below the bar:
    not testable here; straddling it: inconclusive). Null: each method's μF against the same μF with its map of
    another image (paired bootstrap); without any method above that chance level μF does not discriminate on this
    model and the claim is not testable here. Rule, two parts, each decided by paired bootstraps (``level``): (a)
    ``target``'s μF is above the best other method's; (b) every method of
    ``stable`` has a lower S_avg than every other method. Decided by :func:`faithlab.verdicts.from_settings` over
    the two parts (share 1 for reproduced, 1/2 for partly; a tie undecided, never a failure). Table: one row per
    method (means, chance level, comparisons)."""
    need = {"method", "sample", "μF", "μF (shuffled)", "S_avg"}
    if not isinstance(per_sample, pd.DataFrame) or not need <= set(per_sample.columns):
        raise ValueError(f"per_sample must be a frame with columns {sorted(need)} (fidelity_stability)")
    methods = list(dict.fromkeys(per_sample["method"]))
    if target not in methods or len(methods) < 2:
        raise ValueError(f"per_sample must hold {target!r} and at least one other method, got {methods}")
    lacking = [m for m in stable if m not in methods]
    if lacking or len(methods) <= len(set(stable)):
        reason = (f"the run lacks {', '.join(lacking)}" if lacking else
                  f"the run has no method besides {', '.join(stable)} to compare their S_avg with")
        means = per_sample.groupby("method", sort=False)[["μF", "μF (shuffled)", "S_avg"]].mean().reset_index()
        return verdicts.Claim(
            "Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (paper: CIFAR-10)",
            rule="(a) Grad-CAM's μF above every other method's and (b) Grad-CAM's and SmoothGrad's S_avg below every "
                 "other method's, paired bootstraps over samples",
            premise=reason, paper_value=paper.quoted("Table 3"),
            our_value="; ".join(f"{r.method} μF {r['μF']:.3f}, S_avg {r['S_avg']:.3g}" for _, r in means.iterrows()),
            verdict=verdicts.from_settings([], reproduced=1.0, partly=0.5, untestable=reason, what="parts (a, b)"),
            table=means, kind="paper")
    _, decided = _decide_premises(premise, level=level, seed=seed)
    rows = per_sample if "replica" in per_sample else per_sample.assign(replica=0)
    wide = {c: rows.pivot(index=["replica", "sample"], columns="method", values=c).reindex(columns=methods)
            for c in ("μF", "μF (shuffled)", "S_avg")}
    mu, mu_null, s_avg = wide["μF"].fillna(0.0), wide["μF (shuffled)"].fillna(0.0), wide["S_avg"]
    groups = mu.index.get_level_values("replica").astype(str).to_numpy()
    n_replicas = len(set(groups))
    boot = dict(n_boot=n_boot, level=level, seed=seed, groups=groups)
    chance = {m: verdicts.bootstrap_diff(mu[m].to_numpy(), mu_null[m].to_numpy(), **boot) for m in methods}
    above = [m for m in methods if chance[m].outcome == "win"]
    rival = mu.drop(columns=target).mean().idxmax()
    a = verdicts.bootstrap_diff(mu[target].to_numpy(), mu[rival].to_numpy(), **boot)
    others = [m for m in methods if m not in stable]
    b = {(m, o): verdicts.bootstrap_diff(s_avg[m].to_numpy(), s_avg[o].to_numpy(), higher_is_better=False, **boot)
         for m in stable for o in others}
    a_holds, b_holds = a.outcome == "win", all(c.outcome == "win" for c in b.values())
    untestable = verdicts.first_reason(
        decided.text if decided.holds is False else None, None if above else
        f"no method's μF lies above its chance level (the same method's map of another image, paired bootstrap "
        f"over {a.n} samples): μF does not discriminate on this model")
    b_part = (False if any(c.outcome == "loss" for c in b.values()) else True if b_holds else None)  # None: a tie
    v = verdicts.from_settings([a, b_part], reproduced=1.0, partly=0.5, untestable=untestable,
                               what="parts (a, b)")
    if untestable is None:
        v = decided.apply(v)  # a premise that straddles its bar: inconclusive
    if untestable is None:
        v = v.with_why(f"{v.why}: (a) {target} − {rival} μF {a.mean:+.3f} [{a.low:+.3f}, {a.high:+.3f}] → "
                       f"{a.outcome}; (b) {', '.join(stable)} below every other S_avg → "
                       f"{'holds' if b_holds else 'fails' if b_part is False else 'undecided'}")
    table = pd.DataFrame([{"method": m, "μF": float(mu[m].mean()), "μF (shuffled)": float(mu_null[m].mean()),
                           "μF − chance": chance[m].mean, "low": chance[m].low, "high": chance[m].high,
                           "μF above chance": m in above, "S_avg": float(s_avg[m].mean()),
                           "S_avg rank": int(s_avg.mean().rank().loc[m])} for m in methods])
    lowest = list(s_avg.mean().sort_values().index[:len(stable)])
    worst_b = max(b.items(), key=lambda kv: kv[1].high)
    return verdicts.Claim(
        "Table 3: Grad-CAM has the highest μF, and Grad-CAM and SmoothGrad the lowest S_avg (paper: CIFAR-10)",
        rule=f"(a) {target}'s μF minus the best other method's and (b) each of {', '.join(stable)}'s S_avg minus "
             f"each other method's, two-stage paired bootstrap (the independently trained replicas, then the samples "
             f"within them; {level * 100:g} %); the paper's direction: (a) "
             "above 0, (b) below 0 for every pair; margin 0; two parts, both needed in full, one for a part",
        premise="the model beats chance, and μF discriminates: at least one method's "
                "μF lies significantly above the same method's μF with the map of another image (chance); "
                + ", ".join(f"{m} {mu[m].mean():.3f} vs {mu_null[m].mean():.3f}" for m in methods)
                + (f" — {decided.text}" if decided.text else ""),
        paper_value=paper.quoted("Table 3"),
        our_value=f"{n_replicas} replica{'s' if n_replicas > 1 else ''} × samples, {a.n} units; "
                  f"μF {target} − {rival} = {a.mean:.3f} [{a.low:.3f}, {a.high:.3f}]; two lowest S_avg: "
                  f"{', '.join(lowest)}; weakest S_avg comparison {worst_b[0][0]} − {worst_b[0][1]} = "
                  f"{worst_b[1].mean:.3g} [{worst_b[1].low:.3g}, {worst_b[1].high:.3g}] (lower is better)",
        verdict=v, table=table, kind="paper", units=int(min([a.n, *(c.n for c in b.values())])))

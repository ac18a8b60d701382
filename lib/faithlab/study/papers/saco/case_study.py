"""SaCo's Fig. 3 as a claim: the case study's quantities per image and method (SaCo, AOPC, the cumulative drops,
:func:`case_study_frame`) and the claim S5 (the drops saturate for every method while SaCo separates the good
explanation from the poor ones), decided over many images of several trained replicas by its rules."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from faithlab import metrics

from faithlab.study import verdicts
from faithlab.study.papers.saco._common import (ACCURACY_TOLERANCE, FIRST, LAST, MIN_ACCURACY, accuracy_reason, gate,
                                             model_of, premise_sentence, removal_premise)

__all__ = ["case_study_frame", "claim_saturation"]


def case_study_frame(model: Callable, x: torch.Tensor, maps: dict[str, torch.Tensor], *, k: int = 10,
                     saturation: float = 0.9, at: float = 0.3, batch_size: int = 256) -> pd.DataFrame:
    """Fig. 3's quantities for every image of ``x`` and every map of ``maps`` (``{method: (B, 1, H, W)}``),
    explaining the predicted class: SaCo (K = ``k``), AOPC, p(ŷ|x), the cumulative drop p(ŷ|x) − p(ŷ|x̃_top) after
    removing the top ``at`` of the pixels, the largest cumulative drop, and ``saturated`` (the drop at ``at`` is at
    least ``saturation`` of the largest: the paper's "almost unchanged after the removal of the top 30 %"), and the
    drops ∇pred of the most and of the least salient group removed alone (the mechanism premise). One row per image ×
    method (columns image, method, SaCo, AOPC, p, drop at 30 %, max drop, saturated, first group drop, last group
    drop)."""
    rows = []
    for name, a in maps.items():
        details = metrics.saco_details(model, x, a, k=k, batch_size=batch_size)
        aopc = metrics.aopc_details(model, x, a, batch_size=batch_size)
        fractions = aopc["fractions"].to("cpu", torch.float64)
        j = int((fractions - at).abs().argmin())
        drop = aopc["drop"].to("cpu", torch.float64)
        at_drop, top = drop[:, j], drop.amax(1)
        rows.append(pd.DataFrame({"image": range(len(x)), "method": name,
                                  "SaCo": details["saco"].cpu().double().numpy(),
                                  "AOPC": aopc["score"].cpu().double().numpy(),
                                  "p": details["prob"].cpu().double().numpy(),
                                  f"drop at {at:.0%}": at_drop.numpy(), "max drop": top.numpy(),
                                  "saturated": (at_drop >= saturation * top).numpy(),
                                  FIRST: details["drop"][:, 0].cpu().double().numpy(),
                                  LAST: details["drop"][:, -1].cpu().double().numpy()}))
    return pd.concat(rows, ignore_index=True)


def claim_saturation(frame: pd.DataFrame, *, good: str = "Transformer Attribution",
                     poor: tuple[str, ...] = ("Raw Attention", "Random"), at: float = 0.3,
                     accuracy: pd.DataFrame | None = None, min_accuracy: float = MIN_ACCURACY,
                     accuracy_tolerance: float = ACCURACY_TOLERANCE) -> verdicts.Claim:
    """Claim S5 (Fig. 3) over many images: the cumulative drops saturate for every method (so AOPC is high for all),
    while SaCo separates the good explanation from the poor ones. Two parts, each decided by its rule:

    - S5.saturation (``verdicts.rule("S5.saturation")``): per image, 1 when every method's cumulative drop after the
      top ``at`` of the pixels has saturated (``saturated``), else 0; the share of such images with
      :func:`faithlab.study.verdicts.share_interval` (t on the replicas' shares ∪ Wilson) above the rule's margin;
    - S5.separation (``"S5.separation"``): per image, SaCo(``good``) − SaCo(poor) for each of ``poor``, its t
      interval on the replica means above the margin, every comparison.

    The claim by ``"S5"`` (parts). frame: :func:`case_study_frame` with ``setting`` and/or ``replica`` columns naming
    the trained model of every row when several are pooled (each trained model one replica). accuracy: optional, per trained model (the accuracy premise: ``min_accuracy`` within
    ``accuracy_tolerance``). Premise (the mechanism): removal
    matters group by group on ``good``'s groups (:func:`~faithlab.study.papers.saco._common.removal_premise`)."""
    rules = {i: verdicts.rule(i) for i in ("S5", "S5.saturation", "S5.separation")}
    methods = [good, *poor]
    missing = set(methods) - set(frame["method"])
    if missing:
        raise ValueError(f"frame must hold the methods {methods}, lacks {sorted(missing)}")
    index = [c for c in ("setting", "replica", "image") if c in frame.columns]
    wide = frame.pivot_table(index=index, columns="method", aggfunc="first", sort=True)
    n = len(wide)
    if n < 2:
        raise ValueError(f"S5 needs at least two images, got {n}")
    groups = model_of(wide)
    reason = accuracy_reason(accuracy, min_accuracy=min_accuracy, tolerance=accuracy_tolerance)
    premise = removal_premise(frame, method=good)[0] if FIRST in frame.columns else None
    all_saturated = wide["saturated"][methods].astype(bool).all(axis=1).to_numpy(np.float64)
    share = verdicts.share_interval(all_saturated, groups=groups)
    saturation = verdicts.judge(share, rules["S5.saturation"], what="share of images where every method saturates")
    separation = {f"{good} − {m}": verdicts.effect(wide["SaCo"][good].to_numpy(np.float64),
                                                   wide["SaCo"][m].to_numpy(np.float64), rule=rules["S5.separation"],
                                                   groups=groups, what=f"SaCo {good} − {m}") for m in poor}
    parts = {"S5.saturation": verdicts.decide(saturation, rules["S5.saturation"], untestable=reason),
             "S5.separation": verdicts.decide(separation, rules["S5.separation"], untestable=reason)}
    v = gate(verdicts.decide_parts(parts, rules["S5"], untestable=reason), premise)
    drop_col = f"drop at {at:.0%}"
    summary = frame.groupby("method", sort=False)[["SaCo", "AOPC", drop_col, "max drop", "saturated"]].mean()
    table = pd.DataFrame([*verdicts.judgement_table([saturation], part="S5.saturation"),
                          *verdicts.judgement_table(separation, part="S5.separation")])
    models = 1 if groups is None else len(set(groups))
    return verdicts.Claim(
        rules["S5"].claim, rule=rules["S5"], premise=premise_sentence(accuracy, premise, min_accuracy=min_accuracy,
                                                                      tolerance=accuracy_tolerance),
        paper_value="one image: cumulative drops > 0.9 after the top 30 % for all three methods; SaCo high for "
                    "Transformer Attribution, lower for Raw Attention, ≈ 0 for Random",
        our_value=(f"every method saturated on {share.estimate:.0%} [{share.low:.0%}, {share.high:.0%}] of {n} images "
                   f"({models} trained model{'s' if models > 1 else ''}; {parts['S5.saturation']}); mean SaCo "
                   + " / ".join(f"{summary.loc[m, 'SaCo']:.3f}" for m in methods) + ", AOPC "
                   + " / ".join(f"{summary.loc[m, 'AOPC']:.3f}" for m in methods) + f" ({' / '.join(methods)}; "
                   f"separation {parts['S5.separation']})"),
        verdict=v, table=table, units=n)

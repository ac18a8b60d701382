"""SaCo's Fig. 3 as a claim: the case study's quantities per image and method (SaCo, AOPC, the cumulative drops,
:func:`case_study_frame`) and the claim S5 (the drops saturate for every method while SaCo separates the good
explanation from Random)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from faithlab import metrics, verdicts

__all__ = ["case_study_frame", "claim_saturation"]


def case_study_frame(model: Callable, x: torch.Tensor, maps: dict[str, torch.Tensor], *, k: int = 10,
                     saturation: float = 0.9, at: float = 0.3, batch_size: int = 256) -> pd.DataFrame:
    """Fig. 3's quantities for every image of ``x`` and every map of ``maps`` (``{method: (B, 1, H, W)}``),
    explaining the predicted class: SaCo (K = ``k``), AOPC, p(ŷ|x), the cumulative drop p(ŷ|x) − p(ŷ|x̃_top) after
    removing the top ``at`` of the pixels, the largest cumulative drop, and ``saturated`` (the drop at ``at`` is at
    least ``saturation`` of the largest: the paper's "almost unchanged after the removal of the top 30 %"). One row
    per image × method (columns image, method, SaCo, AOPC, p, drop at 30 %, max drop, saturated)."""
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
                                  "saturated": (at_drop >= saturation * top).numpy()}))
    return pd.concat(rows, ignore_index=True)


def claim_saturation(frame: pd.DataFrame, *, good: str = "Transformer Attribution", random: str = "Random",
                     at: float = 0.3, min_random_drop: float = 0.1, share: float = verdicts.REPRODUCED_SHARE,
                     n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """Claim S5 (Fig. 3) over many images: the cumulative drops saturate for every method, so AOPC is high for all,
    while SaCo separates the good explanation from Random better than AOPC does.

    frame: :func:`case_study_frame` (with a ``replica`` column when several trained models are pooled). Two parts,
    each from a bootstrap over the images (replicas, then images; 95 %, generator ``seed``):

    - saturation: the share of images on which every method's cumulative drop has saturated after the top ``at`` of
      the pixels; holds when its interval lies at or above ``share`` (the house's two thirds for "every method …
      almost unchanged"), fails when it lies wholly below, else undecided;
    - separation: per image, SaCo's gap good − Random over its range 2 minus AOPC's gap over its range p(ŷ|x);
      holds when the interval lies above 0 (margin 0), fails when below, else undecided.

    Decided by :func:`faithlab.verdicts.from_settings` over the two parts (reproduced when both hold, partly when
    one does). Premise (the stand-in must carry the mechanism of saturation): removing ``at`` of the pixels at
    random (the Random map's cumulative drop) costs at least ``min_random_drop`` of p(ŷ|x) on average — the stated
    tolerance below which random removal does nothing and nothing can saturate."""
    from faithlab.protocols.saco._common import mean_draws

    if good not in set(frame["method"]) or random not in set(frame["method"]):
        raise ValueError(f"frame must hold the methods {good!r} and {random!r}, got {sorted(set(frame.method))}")
    index = ["replica", "image"] if "replica" in frame else ["image"]
    wide = frame.pivot_table(index=index, columns="method", aggfunc="first", sort=True)
    n = len(wide)
    if n < 2:
        raise ValueError(f"S5 needs at least two images, got {n}")
    groups = wide.index.get_level_values("replica").to_numpy() if "replica" in frame else None
    drop_col = f"drop at {at:.0%}"
    all_saturated = wide["saturated"].astype(bool).all(axis=1).to_numpy(np.float64)
    p = wide["p"][good].to_numpy(dtype=np.float64)
    saco_gap = (wide["SaCo"][good] - wide["SaCo"][random]).to_numpy(dtype=np.float64) / 2
    aopc_gap = (wide["AOPC"][good] - wide["AOPC"][random]).to_numpy(dtype=np.float64) / p
    random_drop = wide[drop_col][random].to_numpy(dtype=np.float64)
    untestable = None
    if float(np.nanmean(random_drop)) < min_random_drop:
        untestable = (f"removing {at:.0%} of the pixels at random costs only {np.nanmean(random_drop):.3f} of p(ŷ|x) "
                      f"on average (< {min_random_drop:g}): the stand-in lacks saturation's mechanism")
    draws = mean_draws(all_saturated, groups, n_boot=n_boot, seed=seed)[:, 0]
    s_low, s_high = torch.quantile(draws, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    saturates = True if s_low >= share - 1e-12 else False if s_high < share - 1e-12 else None
    separation = verdicts.bootstrap_diff(saco_gap, aopc_gap, n_boot=n_boot, seed=seed, groups=groups)
    v = verdicts.from_settings([saturates, separation], reproduced=1.0, partly=0.5, untestable=untestable,
                               what="parts (saturation, separation)")
    if untestable is None:
        v = v.with_why(f"{v.why}; all methods saturated on {all_saturated.mean():.0%} of {n} images "
                       f"[{s_low:.0%}, {s_high:.0%}] against {share:.0%}; SaCo − AOPC relative separation "
                       f"{separation.mean:+.3f} [{separation.low:+.3f}, {separation.high:+.3f}]")
    table = pd.DataFrame({"method": list(dict.fromkeys(frame["method"]))})
    table = table.merge(frame.groupby("method", sort=False)[["SaCo", "AOPC", drop_col, "max drop", "saturated"]]
                        .mean().reset_index(), on="method")
    return verdicts.Claim(
        "S5: the cumulative drops saturate for every method while SaCo separates the explanations (Fig. 3)",
        rule=f"over {n} correctly classified images: the share of images on which every method's cumulative drop "
             f"saturates (≥ 90 % of its largest after the top {at:.0%}), against {share:.0%}; and per image SaCo's "
             f"gap {good} − {random} over its range 2 minus AOPC's gap over p(ŷ|x), direction positive, margin 0; "
             "both bootstrapped over (replicas, then) images",
        premise=f"random removal of {at:.0%} of the pixels must cost at least {min_random_drop:g} of p(ŷ|x) (the "
                f"mechanism of saturation): Random's mean drop {np.nanmean(random_drop):.3f}",
        paper_value="one image: cumulative drops > 0.9 after the top 30 % for all three methods; SaCo high for "
                    "Transformer Attribution, lower for Raw Attention, ≈ 0 for Random",
        our_value=f"all saturated on {all_saturated.mean():.0%} of {n} images; mean SaCo "
                  + " / ".join(f"{v:.3f}" for v in table["SaCo"]) + ", AOPC "
                  + " / ".join(f"{v:.3f}" for v in table["AOPC"]) + f" ({' / '.join(table['method'])})",
        verdict=v, table=table, kind="paper", units=n)

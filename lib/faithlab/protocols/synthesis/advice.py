"""The guide the synthesis chapter and the book open with: per situation the metrics that hold up, with intervals
(:func:`guide`, :func:`guide_sentences`, :func:`answer_sentence`), read from the tables of
:mod:`~faithlab.protocols.synthesis.meta_evaluation`."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

__all__ = ["guide", "guide_sentences", "answer_sentence", "value_range", "REFERENCE_SENSITIVE", "CHAPTER_METRICS",
           "COST_CASE"]


REFERENCE_SENSITIVE = 0.3
"""A metric whose recovery moves by more than this (Spearman) between removal values on some setup is flagged as
reference-sensitive in :func:`guide`: its verdict depends on a choice the user makes."""

CHAPTER_METRICS = {"ffidelity": ("FFid+", "FFid−"), "fewclass": ("Few-class Fid",), "saco": ("SaCo",),
                   "trace": ("ΣLeRF − ΣMoRF",)}
"""The metric(s) each paper's chapter proposes, by report-card label (ReCo/MeGe need k-fold models and are not
in the report card)."""

COST_CASE = "a cost budget"


def guide(recovery_by_setup: pd.DataFrame, use_cases: Mapping[str, str], *, cost_table: pd.DataFrame,
          reference_spread: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The guide's table: one row per situation and metric.

    Per use case (``{situation: setup name}``): each metric's recovery on that setup with its 95 % interval
    (:func:`~faithlab.protocols.synthesis.meta_evaluation.recovery`'s ``spearman low``/``high``), ``holds up`` when
    its interval lies above 0 (it recovers the known ranking better than chance) and overlaps the interval of the
    situation's best metric (the data cannot tell it from the best). One more situation, :data:`COST_CASE`, over the use cases where some metric holds up:
    ``situations held`` counts them per metric, which ``holds up`` in at least half of them, ordered by cost (model
    inputs per image and explainer); its recovery is the mean over those setups, its bounds the widest (lowest
    low, highest high). ``reference spread``: the
    largest change of the metric's recovery between removal values (``reference_spread``, NaN where not measured);
    ``reference-sensitive`` when it exceeds :data:`REFERENCE_SENSITIVE`. Sorted by situation (use-case order, then
    the cost case) and recovery."""
    if recovery_by_setup.empty:
        raise ValueError("recovery_by_setup is empty")
    missing = [c for c in ("spearman low", "spearman high") if c not in recovery_by_setup.columns]
    if missing:
        raise ValueError(f"recovery_by_setup lacks {missing}: compute it with syn.recovery")
    cost = cost_table.set_index("label")["inputs per sample"] if "label" in cost_table.columns else \
        cost_table.set_index("metric")["inputs per sample"]
    spread = dict(reference_spread or {})
    rows = []
    for case, name in use_cases.items():
        part = recovery_by_setup[recovery_by_setup["setup"] == name]
        if part.empty:
            raise ValueError(f"use_cases[{case!r}] names setup {name!r}, absent from recovery_by_setup")
        best = part.loc[part["spearman"].idxmax()]
        for r in part.to_dict("records"):
            low, high = r["spearman low"], r["spearman high"]
            rows.append({"situation": case, "setup": name, "metric": r["metric"], "label": r["label"],
                         "recovery": r["spearman"], "low": low, "high": high,
                         "holds up": bool(low > 0 and high >= best["spearman low"]),
                         "best": r["metric"] == best["metric"]})
    table = pd.DataFrame(rows)
    cases = list(use_cases)
    useful = [c for c in cases if table.loc[table["situation"] == c, "holds up"].any()]
    agg = table[table["situation"].isin(useful)].groupby(["metric", "label"], sort=False).agg(
        recovery=("recovery", "mean"), low=("low", "min"), high=("high", "max"), held=("holds up", "sum"))
    for (metric, label), r in agg.iterrows():
        rows.append({"situation": COST_CASE, "setup": f"{len(useful)} situations", "metric": metric, "label": label,
                     "recovery": r["recovery"], "low": r["low"], "high": r["high"],
                     "holds up": bool(2 * int(r["held"]) >= len(useful) > 0), "best": False,
                     "situations held": int(r["held"])})
    table = pd.DataFrame(rows)
    table["cost"] = [float(cost.get(lab, cost.get(m, float("nan")))) for m, lab in zip(table["metric"], table["label"])]
    table["reference spread"] = [float(spread.get(lab, float("nan"))) for lab in table["label"]]
    table["reference-sensitive"] = table["reference spread"] > REFERENCE_SENSITIVE
    order = {c: i for i, c in enumerate([*cases, COST_CASE])}
    cost_rows = table["situation"] == COST_CASE
    table["_o"] = table["situation"].map(order)
    table["_k"] = (-table["recovery"]).where(~cost_rows, table["cost"])
    return table.sort_values(["_o", "holds up", "_k"], ascending=[True, False, True], kind="stable") \
        .drop(columns=["_o", "_k"]).reset_index(drop=True)


def _interval(r: Mapping) -> str:
    return f"{r['recovery']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


def guide_sentences(table: pd.DataFrame, *, n_images: Mapping[str, int] | None = None, top: int = 3
                    ) -> dict[str, str]:
    """One generated sentence per situation of a :func:`guide` table: the metrics that hold up (at most ``top``,
    with their recovery and 95 % interval), the worst, and the caveat of a reference-sensitive metric among them.
    ``n_images``: ``{setup: images}`` to state the scale."""
    out = {}
    for case, part in table.groupby("situation", sort=False):
        setup = str(part["setup"].iloc[0])
        scale = f", {n_images[setup]} images" if n_images and setup in n_images else ""
        held = part[part["holds up"]]
        if case == COST_CASE:
            if held.empty:
                out[case] = ("On a cost budget: no metric holds up in half of the situations, so no cheap choice "
                             "is safe here.")
                continue
            listed = "; ".join(f"{r['label']} ({r['cost']:.0f} model inputs per image and explainer; holds up in "
                               f"{int(r['situations held'])} of them)" for r in held.head(top).to_dict("records"))
            out[case] = (f"On a cost budget, the cheapest metrics that hold up in at least half of the {setup} where "
                         f"some metric does: {listed}.")
            continue
        head = f"For {case} (setup “{setup}”{scale})"
        worst = part.loc[part["recovery"].idxmin()].to_dict()
        first = part.iloc[0].to_dict()
        if held.empty:
            out[case] = (f"{head}, no metric recovers the known ranking significantly better than chance (every "
                         f"95 % interval reaches 0); the best, {first['label']}, scores {_interval(first)}.")
            continue
        shown = held.head(top)
        listed = ", ".join(f"{r['label']} {_interval(r)}" for r in shown.to_dict("records"))
        more = f" and {len(held) - len(shown)} more" if len(held) > len(shown) else ""
        verb = "holds" if len(held) == 1 else "hold"
        text = (f"{head}, {listed}{more} {verb} up: recovery of the known ranking (mean per-image Spearman, 95 % "
                f"interval) above 0 and not distinguishable from the best; {worst['label']} does worst "
                f"({_interval(worst)}).")
        sensitive = shown[shown["reference-sensitive"]]
        if not sensitive.empty:
            names = ", ".join(f"{r['label']} (by {r['reference spread']:.2f})" for r in sensitive.to_dict("records"))
            text += (f" Caveat: the recovery of {names} {'moves' if len(sensitive) == 1 else 'move'} with the "
                     "removal value.")
        out[case] = text
    return out


def answer_sentence(table: pd.DataFrame, card: pd.DataFrame) -> str:
    """The study's answer to "which metric should I trust?" in one generated paragraph: how many situations each
    metric holds up in (:func:`guide`), the metrics that hold up most often, the reference-sensitive ones among them,
    and the report card's leader for contrast."""
    cases = table[table["situation"] != COST_CASE]
    n_cases = cases["situation"].nunique()
    held = cases[cases["holds up"]].groupby("label", sort=False)["situation"].nunique().sort_values(
        ascending=False, kind="stable")
    if held.empty:
        return (f"No metric recovered a known ranking of explainers significantly better than chance in any of the "
                f"{n_cases} controlled situations of this study: the data here do not single out a metric to trust.")
    top = held[held >= max(int(held.iloc[0]) - 1, 1)].head(4)
    names = ", ".join(f"{name} ({int(k)} of {n_cases})" for name, k in top.items())
    text = (f"No metric is best everywhere. Of {n_cases} controlled situations with a known answer, the metrics "
            f"that hold up most often (recovery of the known ranking above chance and not distinguishable from the "
            f"best, 95 % intervals) are {names}")
    spread = cases.groupby("label")["reference-sensitive"].any()
    sensitive = [n for n in top.index if bool(spread.get(n, False))]
    if sensitive:
        text += f"; {', '.join(sensitive)} {'moves' if len(sensitive) == 1 else 'move'} with the removal value"
    never = sorted(set(cases["label"]) - set(held.index))
    if never:
        text += (f"; {len(never)} of {cases['label'].nunique()} metrics {'holds' if len(never) == 1 else 'hold'} "
                 f"up nowhere ({', '.join(never)})")
    lead = card.iloc[0]
    return text + (f". The report card, which weighs five criteria equally (cost included), ranks {lead.label} first "
                   f"(mean rank {lead.overall:.1f} of {len(card)}).")


def value_range(values, fmt: str = "d") -> str:
    """The range of ``values`` (e.g. a column over the replicas) as text, each end formatted with ``fmt``: "a–b",
    or "a" when both ends read the same."""
    low, high = (format(v, fmt) for v in (min(values), max(values)))
    return low if low == high else f"{low}–{high}"

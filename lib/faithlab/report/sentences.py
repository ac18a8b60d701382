"""What the report's tables say, in words, and its numbers written for a reader: the overall ranking
(:func:`overall_sentence`), the Monte-Carlo precision (:func:`monte_carlo_sentence`, with the draws the run used,
:func:`draws_sentence`), the sanity checks (:func:`sanity_sentences`), the model of a ``--random-weights`` run
(:func:`random_weights`, :func:`weights_sentence`); durations (:func:`duration`), scores (:func:`number_text`), ranks
(:func:`rank_text`) and parameter values (:func:`brief`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from faithlab.report.tables import GOOD_CHANGE, MC_SEPARATION, RANKING_CHANGE

__all__ = ["overall_sentence", "monte_carlo_sentence", "sanity_sentences", "random_weights", "duration", "brief"]


def draws_sentence(parameters: Mapping | None) -> str:
    """The Monte-Carlo counts the run used, from its ``parameters`` (``settings``: the options; ``budget``: the
    command's ``--budget``), beside the papers' defaults; "" when the parameters do not say."""
    from faithlab.evaluation.budget import knobs
    from faithlab.metrics.registry import OPTIONS

    settings = (parameters or {}).get("settings") or {}
    used = [(k, settings.get(k.option, OPTIONS[k.option].default)) for k in knobs() if k.option in OPTIONS]
    if not parameters or not used:
        return ""
    cut = [f"{k.option}={v} ({k.draw}; the paper's {OPTIONS[k.option].default})" for k, v in used
           if v != OPTIONS[k.option].default]
    budget = (parameters or {}).get("budget")
    if not cut:
        return " Draws per image: the papers' counts" + (f" (they fit --budget {budget})." if budget else ".")
    return (" Draws per image: " + ", ".join(cut) + (f", chosen to fit --budget {budget}" if budget else "") + "; "
            "a standard error grows like √(paper / count).")


def random_weights(seed) -> str:
    """What ``faithlab evaluate --random-weights`` evaluates, in its words: the model's random initialisation is drawn
    from ``--seed``, so the same command evaluates the same model."""
    return f"random weights drawn from --seed {seed}"


def weights_sentence(parameters: Mapping | None) -> str:
    """The model of a ``--random-weights`` run, from its ``parameters`` (``random_weights``, ``seed``, ``model``):
    " Model: <spec>, random weights drawn from --seed N."; "" for any other run."""
    if not (parameters or {}).get("random_weights"):
        return ""
    model = parameters.get("model")
    return f" Model: {f'{model}, ' if model else ''}{random_weights(parameters.get('seed'))}."


def monte_carlo_sentence(pairs: pd.DataFrame) -> str:
    """What a :func:`monte_carlo_pairs` table says, in one paragraph: which pairs of explainers each Monte-Carlo
    metric does not separate at its Monte-Carlo precision (those need more draws, or are equal), and where the
    precision is unknown; "" when no metric of the frame is a Monte-Carlo estimate."""
    if pairs.empty:
        return ""
    labels = list(dict.fromkeys(pairs["label"]))
    named = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"
    head = (f"Monte-Carlo precision: {named} {'is a' if len(labels) == 1 else 'are'} Monte-Carlo "
            f"estimate{'' if len(labels) == 1 else 's'} (random draws per image); each mean carries ± its "
            "Monte-Carlo standard error (√(Σ se²)/N over the N images), and two explainers are not separated at that "
            f"precision when their means differ by less than {MC_SEPARATION:g}·√(se_a² + se_b²).")
    close = pairs[pairs["separated"].eq(False).fillna(False)]
    unknown = pairs[pairs["separated"].isna()]
    said = []
    for label in labels:
        part = close[close["label"] == label]
        if len(part):
            said.append(f"{label} does not separate " + "; ".join(
                f"{r.explainer} and {r.versus} (|difference| {number_text(abs(r.difference), 2)} < "
                f"{number_text(r.threshold, 2)})" for r in part.itertuples()))
    text = head + (" Not separated at Monte-Carlo precision: " + "; ".join(said) + "." if said else
                   " Every pair of explainers is separated on every Monte-Carlo metric at its Monte-Carlo precision."
                   if unknown.empty else "")
    if len(unknown):
        where = ", ".join(dict.fromkeys(unknown["label"]))
        text += (f" No standard error for some explainer on {where} (one draw per image, or an undefined "
                 "leave-one-out correlation): its precision is unknown there.")
    return text


def rank_text(v: float) -> str:
    return "NaN" if not np.isfinite(v) else f"{v:.1f}"


def overall_sentence(table: pd.DataFrame, pairs: pd.DataFrame, tied: Sequence[str] = ()) -> str:
    """The :func:`overall` table and its :func:`separation` pairs in one sentence: who ranks first, with the mean
    rank and its interval, and how many metrics separate the first two. tied: the metrics that tie every explainer
    (:func:`tied_metrics`), counted in the sentence."""
    if table.empty:
        return "No per-image metric scores every explainer: there is no overall ranking."
    lo_name, hi_name = table.columns[2], table.columns[3]
    level = lo_name.removesuffix(" low")
    first = table.iloc[0]
    if len(table) == 1:
        return f"Only one explainer, {first['explainer']}, was evaluated: there is nothing to rank."
    leaders = table.loc[table["mean rank"] == first["mean rank"], "explainer"].tolist()
    ties = f", {len(tied)} of which tie every explainer" if len(tied) else ""
    rank = (f"mean rank {rank_text(first['mean rank'])}, {level} interval "
            f"{rank_text(first[lo_name])}–{rank_text(first[hi_name])}, over {int(first['metrics'])} metrics{ties}; "
            "1 = first on every metric")
    text = (f"{first['explainer']} ranks first ({rank})" if len(leaders) == 1 else
            f"{' and '.join(leaders)} share the first place ({rank})")
    second = table.iloc[1]
    pair = pairs[(pairs["explainer"] == first["explainer"]) & (pairs["versus"] == second["explainer"])]
    if len(pair):
        p = pair.iloc[0]
        text += (f"; {first['explainer']} and {second['explainer']} are separated by {p['separating metrics']} of "
                 f"{p['metrics compared']} metrics ({first['explainer']} better on {p['explainer better on']}, "
                 f"{second['explainer']} on {p['versus better on']})")
    overlap = second[lo_name] <= first[hi_name]
    verdict = "overlap: these images do not order them firmly" if overlap else "do not overlap"
    text += f", and the {level} intervals of their mean ranks {verdict}"
    if len(table) > 2:
        last = table.iloc[-1]
        text += f"; {last['explainer']} ranks last (mean rank {rank_text(last['mean rank'])})"
    return text + "."


def sanity_sentences(table: pd.DataFrame, n_explainers: int, *, tied: Sequence[str] = (),
                     tied_randomised: Sequence[str] = ()) -> list[str]:
    """What the :func:`sanity` table says, one sentence per check present: what a ranking change on a randomised
    model means, which value is good (:data:`GOOD_CHANGE` or more) and how many metrics reach it, leaving out the
    metrics ``tied`` on the trained model or ``tied_randomised`` on the randomised one (:func:`tied_metrics`: every
    explainer tied, the change is ½ by definition); what the share of images beating a random map means and how
    often each explainer beats it on most images."""
    out = []
    if RANKING_CHANGE in table:
        change = table.set_index("label")[RANKING_CHANGE]
        void = [m for m in change.index if m in set(tied) | set(tied_randomised)]
        known = change.drop(index=void).dropna()
        two = (" With two explainers a ranking can only stay (0) or reverse (1)." if n_explainers == 2 else "")
        text = ("Ranking change on a randomised model: every weight of the model is drowned in noise and each metric "
                "ranks the explainers again; the value is (1 − Spearman correlation of the two rankings) / 2, so 0 "
                "means the metric ranks the explainers the same on a model that has learnt nothing (it does not "
                f"read what the model learnt: bad), ½ an unrelated ranking and 1 the reverse; {GOOD_CHANGE:g} or more "
                f"is good.{two}")
        if len(known):
            low = known[known < GOOD_CHANGE]
            text += (f" Here {len(known) - len(low)} of the {len(known)} metrics that rank the explainers on both "
                     f"models reach {GOOD_CHANGE:g} or more"
                     + (f"; below: {', '.join(f'{k} ({v:.2f})' for k, v in low.items())}." if len(low) else "."))
        elif len(change.dropna()):
            text += (" Here no metric ranks the explainers on both models, so this check says nothing (a randomised "
                     "model whose outputs do not move ties every explainer: try a smaller randomisation scale).")
        on = [("the trained model", [m for m in change.index if m in set(tied)]),
              ("the randomised one", [m for m in change.index if m in set(tied_randomised) and m not in set(tied)])]
        said = [f"for {', '.join(names)} on {where}" for where, names in on if names]
        if said:
            text += (f" Every explainer ties {' and '.join(said)}: there the value is ½ by definition and says "
                     "nothing.")
        out.append(text)
    beats = [c for c in table.columns if c.startswith("beats random: ")]
    if beats:
        shares = table.set_index("label")[beats]
        parts = [f"{c.removeprefix('beats random: ')} on {int((shares[c] > 0.5).sum())} of "
                 f"{int(shares[c].notna().sum())}" for c in beats]
        out.append("Beats random: the share of images where the explainer scores better than the random map (ties "
                   "count ½); ½ means the metric cannot tell the explainer from noise, 1 that it always scores "
                   f"better. Metrics where the explainer beats the random map on most images: {'; '.join(parts)}.")
    return out


def duration(ms: float) -> str:
    """Milliseconds in a unit a reader takes in: "850 ms", "37.7 s", "2.5 min", "1.2 h" (thousands separated)."""
    if ms is None or not math.isfinite(ms):
        return ""
    seconds = ms / 1000
    if seconds < 1:
        return f"{ms:.2g} ms" if ms < 10 else f"{ms:,.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


def number_text(v, digits: int = 3) -> str:
    """A score with ``digits`` significant digits, no exponent above 10⁻⁴ (a larger number thousands-separated)."""
    if v is None or isinstance(v, str):
        return "" if v is None else v
    v = float(v)
    if not math.isfinite(v):
        return "" if math.isnan(v) else str(v)
    if v == 0:
        return "0"
    if abs(v) < 1e-4:
        return f"{v:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def brief(value, width: int = 40) -> str:
    """A parameter's value in a few words: a list of more than 4 numbers as "101 values 0…1", anything else as its
    repr, cut at ``width`` characters."""
    if isinstance(value, (list, tuple)) and len(value) > 4 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return f"{len(value)} values {min(value):g}…{max(value):g}"
    if isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {brief(v, width)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "…"

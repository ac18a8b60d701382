"""The frame ``fl.evaluate`` returns, and what reads it: the tidy rows with each metric's label, paper, level and
direction from the registry and each score's Monte-Carlo standard error (``mc_se``, the last column), the cost
table (:func:`cost`), scores oriented so that higher is better (:func:`oriented`), and the registered metrics
described (:func:`describe`)."""

from __future__ import annotations

from faithlab.metrics.registry import METRICS, OPTIONS

__all__ = ["tidy", "cost", "oriented", "describe"]

COST_COLUMNS = ["group", "explainer", "forward_inputs", "model_calls", "explained_inputs", "seconds"]


def tidy(records: list[dict], chosen: list[str], names: list[str], cost_rows: list[dict]):
    """The rows of an evaluation as a DataFrame, sorted by explainer (given order), metric (chosen order) and
    sample, with ``attrs["cost"]`` and ``attrs["forward_inputs"]``. Columns: ``explainer``, ``sample``, ``metric``,
    ``label``, ``paper``, ``level``, ``score``, ``higher_is_better``, ``direction`` and, last, ``mc_se``: the
    score's Monte-Carlo standard error (the metric's declared ``mc_se``; NaN for a deterministic metric or a record
    without one). New columns go at the end."""
    import pandas as pd

    frame = pd.DataFrame.from_records(records, columns=["explainer", "sample", "metric", "score", "mc_se"])
    frame["sample"] = frame["sample"].astype("Int64")
    info = frame["metric"].map(METRICS)
    frame.insert(3, "label", info.map(lambda i: i.label))
    frame.insert(4, "paper", info.map(lambda i: i.paper))
    frame.insert(5, "level", info.map(lambda i: i.level))
    frame["higher_is_better"] = info.map(lambda i: i.higher_is_better).astype(bool)
    frame["direction"] = frame["higher_is_better"].map({True: "higher is better", False: "lower is better"})
    frame["mc_se"] = frame.pop("mc_se").astype(float)
    order = {m: i for i, m in enumerate(chosen)}
    frame = frame.sort_values(["explainer", "metric", "sample"], key=lambda s: s.map(order) if s.name == "metric"
                              else s.map({w: i for i, w in enumerate(names)}) if s.name == "explainer" else s,
                              kind="stable").reset_index(drop=True)
    frame.attrs["cost"] = cost_rows
    frame.attrs["forward_inputs"] = int(sum(r["forward_inputs"] for r in cost_rows))
    return frame


def cost(frame) -> "pandas.DataFrame":  # noqa: F821
    """The work behind a frame of :func:`faithlab.evaluate`, one row per metric group and explainer:
    ``forward_inputs`` (inputs through the model), ``model_calls``, ``explained_inputs`` (inputs given to the
    explainer: S_avg's neighbours, ReCo/MeGe's k models) and ``seconds``, with ``metrics`` naming the group's metrics
    in the frame."""
    import pandas as pd

    rows = frame.attrs.get("cost")
    if rows is None:
        raise ValueError("frame has no attrs['cost']: pass the frame evaluate() returned")
    table = pd.DataFrame(rows, columns=COST_COLUMNS)
    present = set(frame["metric"])
    table.insert(1, "metrics", table["group"].map(lambda g: ", ".join(
        METRICS[m].label for m in METRICS if METRICS[m].group == g and m in present) or g))
    return table


def oriented(frame):
    """``frame`` with a column ``oriented``: the score signed so that higher is better for every metric."""
    out = frame.copy()
    out["oriented"] = out["score"].where(out["higher_is_better"], -out["score"])
    return out


def describe() -> "pandas.DataFrame":  # noqa: F821
    """The registered metrics, one row each, read from their declarations: name, label, paper, direction, level,
    group, needs, the options it reads with their defaults, its public function and what it measures."""
    import pandas as pd

    rows = []
    for m in METRICS.values():
        fn = m.function or m.details  # ReCo/MeGe: the function their compute runs
        rows.append({"metric": m.name, "label": m.label, "paper": m.paper,
                     "direction": "higher is better" if m.higher_is_better else "lower is better",
                     "level": m.level, "group": m.group, "needs": ", ".join(m.needs),
                     "options": ", ".join(f"{o.name}={OPTIONS[o.name].default!r}" for o in m.options),
                     "function": "" if fn is None else f"{fn.__module__}.{fn.__qualname__}", "measures": m.doc})
    return pd.DataFrame(rows)

"""The cost of a ``faithlab evaluate`` run, before it starts and beside it afterwards: the model and the
explainers timed on the first chunk, the model inputs counted by :func:`faithlab.evaluation.estimate`, ``--budget``'s
Monte-Carlo counts (:func:`estimate`), and the estimate set beside the measured seconds per metric group
(:func:`compare_estimate`, :func:`with_report`, :func:`record_extras`: ``estimate.csv``).

One concept: the run's estimated cost and its comparison with the measured one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from faithlab.cli import arguments, loading
from faithlab.cli.arguments import UsageError

__all__ = ["estimate", "compare_estimate", "with_report", "record_extras", "REPORT_S", "FIGURE_S"]

def _probe(model, x, batch_size: int, explain: dict, echo) -> dict:
    """Times of the model and the explainers on the first chunk ``x`` (the images :func:`faithlab.evaluate` maps
    and scores together), before any metric runs: :func:`faithlab.evaluation.budget.measure` at the run's forward
    batch size. Out of memory is a UsageError naming ``--batch-size``; a missing optional package of an explainer
    (xrai, TorchRay's) one naming ``--explainers`` and the extra to install."""
    import torch

    from faithlab import _optional
    from faithlab.evaluation import budget

    try:
        return budget.measure(model, x, batch_size, explain)
    except torch.cuda.OutOfMemoryError:
        raise UsageError("--batch-size", f"{batch_size} inputs do not fit in the memory of {x.device} in one "
                                         "forward pass; pass a smaller --batch-size") from None
    except ImportError as err:
        text = _optional.missing(err, "an explainer")
        if text is None:
            raise
        raise UsageError("--explainers", text) from None


REPORT_S, FIGURE_S = 3.0, 0.5
"""Seconds the report takes to write beside its map figures, and per map figure (tables, the bootstrap of the overall
ranking and the plots; measured on a 2-core CPU: estimate.csv's "report" row sets them beside each run's own)."""


def _sanity_metrics(chosen: list[str]) -> list[str]:
    """The metrics the sanity check computes again on a randomised copy (``report.randomisable_metrics``)."""
    from faithlab import evaluation

    return [m for m in chosen if evaluation.METRICS[m].level == "sample"
            and not {"finetuned", "explainer"} & set(evaluation.METRICS[m].needs)]


class _Costs:
    """Estimated seconds of a run per metric group, for given options: :func:`faithlab.evaluation.estimate`'s counts
    (stand-in model and samples, small probe images with the same counts) times the timings of the model and the
    explainers (:func:`_probe`); the sanity check's groups once more. Cached per options (a budget asks twice)."""

    def __init__(self, args, shape, n: int, chosen: list[str], explain: dict, tuned, timing: dict, batch_size: int):
        self.args, self.shape, self.n, self.chosen, self.names = args, tuple(shape), n, chosen, list(explain)
        self.tuned, self.timing, self.batch_size, self.done = tuned, timing, batch_size, {}
        self.sanity = [] if args.no_sanity else _sanity_metrics(chosen)

    def tables(self, options: dict):
        """(the run's table, the sanity check's table or None), each with a ``seconds`` column."""
        import json as _json

        from faithlab import evaluation
        from faithlab.evaluation import budget

        key = _json.dumps(options, sort_keys=True, default=repr)
        if key not in self.done:
            out = []
            for metrics, finetuned in ((self.chosen, self.tuned is not None), (self.sanity, False)):
                if not metrics:
                    out.append(None)
                    continue
                table = evaluation.estimate((self.n, *self.shape), n_classes=self.timing["n_classes"],
                                            explainers=self.names, metrics=metrics, finetuned=finetuned,
                                            explainer=True, chunk_size=arguments.chunk(self.args), batch_size=self.batch_size,
                                            **options)
                table["seconds"] = budget.seconds(table, self.timing)
                out.append(table)
            self.done[key] = tuple(out)
        return self.done[key]

    def maps_seconds(self) -> float:
        return self.n * sum(self.timing["per_map"].values())

    def report_seconds(self) -> float:
        """Writing the report: the map figures' explainer calls on ``--maps`` images, then the page, its tables and
        figures (:data:`REPORT_S` and :data:`FIGURE_S` per map figure, measured on a 2-core CPU)."""
        figures = min(self.args.maps, self.n)
        return REPORT_S + figures * (FIGURE_S + sum(self.timing["per_map"].values()))

    def by_group(self, options: dict) -> dict[str, float]:
        """Seconds per group, the sanity check's as ``"sanity: <group>"``, the maps as ``"maps"``."""
        main, sanity = self.tables(options)
        out = {"maps": self.maps_seconds(), "report": self.report_seconds()}
        for prefix, table in (("", main), ("sanity: ", sanity)):
            if table is not None:
                for group, value in table.groupby("group", sort=False)["seconds"].sum().items():
                    out[prefix + group] = float(value)
        if sanity is not None:
            out["sanity: maps"] = self.maps_seconds()
        return out


def _allocate(args, costs: _Costs, options: dict, given: Sequence[str], spent: float, echo) -> dict:
    """``--budget``: the options with the Monte-Carlo counts that fit what is left of the budget (the seconds
    already ``spent`` by this command subtracted) → options; the choice in one line. A budget that cannot be met is
    a UsageError naming --budget with the number of images that would fit."""
    from faithlab.evaluation import budget
    from faithlab.metrics.registry import OPTIONS

    try:
        total = budget.parse(args.budget, "--budget")
    except (TypeError, ValueError) as err:
        raise UsageError("--budget", str(err).replace("--budget ", "", 1)) from None
    defaults = {k.option: options.get(k.option, OPTIONS[k.option].default) for k in budget.knobs()}
    left = max(1e-3, total - spent)
    allocation = budget.allocate(lambda counts: costs.by_group({**options, **counts}), left, defaults, given)
    line = budget.describe(allocation, costs.n)
    if not allocation.fits:
        raise UsageError("--budget", f"{args.budget} ({left:.0f} s left after loading and timing): "
                                     + line.split(": ", 1)[1] + " (--n-images, --metrics, --no-sanity)")
    echo(line + (f" ({spent:.0f} s of the budget went to loading and timing)" if spent >= 1 else ""))
    return {**options, **allocation.counts}  # every count, even the paper's: --resume reads them back


def estimate(args, model, data, n: int, chosen: list[str], explain: dict, options: dict, tuned, echo,
              given: Sequence[str] = (), started: float | None = None):
    """Print the cost table (per metric group: model inputs and seconds) and the expensive groups; return the
    estimate per group (``group``, ``metrics``, ``forward_inputs``, ``explained_inputs``, ``seconds``; a ``maps``
    row for the explainers' maps), its total in ``attrs["total"]`` and the options to run with in
    ``attrs["options"]`` (``--budget``'s Monte-Carlo counts, :func:`_allocate`).

    The model inputs are counted by :func:`faithlab.evaluation.estimate` (stand-in model and samples, small probe
    images with the same counts: no metric runs on the model); seconds are those counts times :func:`_probe`'s
    times of the model and the explainers at the run's batch size, plus the library's own work per input
    (:func:`faithlab.evaluation.budget.engine`: the metrics timed on one stand-in image of the run's size with a
    model that costs nothing)."""
    import pandas as pd

    from faithlab import evaluation
    from faithlab.evaluation import budget
    from faithlab.perturb import autobatch
    from faithlab.metrics.registry import tips as metric_tips

    xb = loading.inputs(next(iter(loading.first(data.loader(arguments.chunk(args)), n)))).to(next(model.parameters()).device)
    batch_size = args.batch_size or autobatch.default_batch_size(model, xb)
    timing = _probe(model, xb, batch_size, explain, echo)
    timing["engine"] = budget.engine(xb[:1], n_classes=timing["n_classes"], metrics=chosen, batch_size=batch_size,
                                     options=options, finetuned=tuned is not None)
    per_input, per_map = timing["per_input"], timing["per_map"]
    costs = _Costs(args, xb.shape[1:], n, chosen, explain, tuned, timing, batch_size)
    if args.budget is not None:
        spent = 0.0 if started is None else time.perf_counter() - started
        options = _allocate(args, costs, options, given, spent, echo)
    table, again = costs.tables(options)
    by_group = table.groupby("group", sort=False).agg(metrics=("metrics", "first"),
                                                      forward_inputs=("forward_inputs", "sum"),
                                                      explained_inputs=("explained_inputs", "sum"),
                                                      seconds=("seconds", "sum"))
    by_group["per image"] = by_group["forward_inputs"] / n
    by_group["explained per image"] = by_group["explained_inputs"] / n
    maps_seconds = costs.maps_seconds()
    total = float(by_group["seconds"].sum()) + maps_seconds
    shown = by_group.reset_index()[["group", "metrics", "per image", "explained per image", "seconds"]]
    shown = shown.rename(columns={"per image": "model inputs per image", "seconds": "est. seconds"})
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        echo(shown.round(1).to_string(index=False))
    echo("(per image: summed over the explainers; explained: inputs given to an explainer, e.g. S_avg's neighbours)")
    probed = table.attrs.get("probe_shape")
    if probed is not None and tuple(probed[1:]) != tuple(xb.shape[1:]):
        echo(f"(model inputs counted on stand-in images of {tuple(probed[1:])}, which take as many as "
             f"{tuple(xb.shape[1:])})")
    how = "--batch-size" if args.batch_size else "the default batch size for this model and image size"
    echo(f"maps: {len(explain)} explainer(s) x {n} images, est. {maps_seconds:.1f} s ("
         + ", ".join(f"{name} {1000 * s:.1f} ms" for name, s in per_map.items())
         + f" per image, timed on {xb.shape[0]}); model: {1000 * per_input:.2f} ms per input on {args.device} "
           f"(median of 3 calls of {batch_size} inputs, {how}, after a warm-up); the library's own work per "
           f"input (building the perturbed inputs, masks and orders) timed per metric group on one image with a "
           f"stand-in model in {timing['engine']['seconds']:.1f} s")
    expensive = by_group[(by_group["seconds"] > 0.2 * total) & (by_group["seconds"] > 10)]
    for group, row in expensive.iterrows():
        tip = metric_tips().get(group, "")
        work = (f"{row['per image']:.0f} model inputs" if row["per image"] else
                f"{row['explained per image']:.0f} explained inputs")
        echo(f"expensive at {tuple(xb.shape[1:])}: {row['metrics'] or group} (~{row['seconds']:.0f} s, {work} per "
             f"image){'; ' + tip if tip else ''}")
    rows = [{"group": "maps", "metrics": "maps", "forward_inputs": 0, "explained_inputs": n * len(explain),
             "seconds": maps_seconds},
            {"group": "report", "metrics": "report", "forward_inputs": 0, "explained_inputs": 0,
             "seconds": costs.report_seconds()}]
    total += rows[-1]["seconds"]
    if again is not None:  # the same metrics on a randomised copy, with its own maps (report.on_randomised)
        rows.append({"group": "sanity check", "metrics": "sanity check", "forward_inputs":
                     int(again["forward_inputs"].sum()), "explained_inputs": int(again["explained_inputs"].sum())
                     + n * len(explain), "seconds": float(again["seconds"].sum()) + maps_seconds})
        echo(f"sanity check: {len(costs.sanity)} model-only metrics once more on a randomised copy of the model, est. "
             f"{rows[-1]['seconds']:.0f} s (--no-sanity skips it)")
        total += rows[-1]["seconds"]
    echo(f"estimated total: {total:.0f} s ({total / 60:.1f} min) for {n} images")
    if args.budget is None and total > 300:
        echo("(--budget TIME, e.g. --budget 5m, fits the run into TIME by cutting only the Monte-Carlo counts; the "
             "report then gives each score's Monte-Carlo standard error)")
    out = by_group[["metrics", "forward_inputs", "explained_inputs", "seconds"]].reset_index()
    out = pd.concat([out, pd.DataFrame(rows)], ignore_index=True)
    out.attrs["total"] = total
    out.attrs["options"] = options
    return out


def compare_estimate(frame, estimated, echo, randomised=None):
    """The estimate beside what the run measured, per metric group → (``estimate.csv``'s table, the report's cost
    table).

    The first: per group (the clean pass, the fully removed inputs, the maps and each metric group) the estimated
    and measured model inputs, explained inputs and seconds (all explainers together), and their total. The cost
    table (:func:`faithlab.report.cost`) gains each metric's ``group`` with its ``estimated group seconds`` and
    ``measured group seconds`` (Few-class Fid's include its perturbation search, as its cost row does)."""
    import pandas as pd

    from faithlab import evaluation, report

    measured = evaluation.cost(frame).groupby("group", sort=False)[["forward_inputs", "explained_inputs",
                                                                    "seconds"]].sum()
    if randomised is not None:  # the sanity check's whole run, maps included (estimated as one group)
        measured.loc["sanity check"] = evaluation.cost(randomised)[["forward_inputs", "explained_inputs",
                                                                    "seconds"]].sum()
    table = estimated.set_index("group")
    groups = list(dict.fromkeys(list(table.index) + list(measured.index)))
    rows = []
    for g in groups:
        e = table.loc[g] if g in table.index else None
        m = measured.loc[g] if g in measured.index else None
        rows.append({"group": g, "metrics": e["metrics"] if e is not None else g,
                     "estimated model inputs": 0 if e is None else int(e["forward_inputs"]),
                     "measured model inputs": 0 if m is None else int(m["forward_inputs"]),
                     "estimated explained inputs": 0 if e is None else int(e["explained_inputs"]),
                     "measured explained inputs": 0 if m is None else int(m["explained_inputs"]),
                     "estimated seconds": 0.0 if e is None else float(e["seconds"]),
                     "measured seconds": 0.0 if m is None else float(m["seconds"])})
    compared = pd.DataFrame(rows)
    totals = compared.drop(columns=["group", "metrics"]).sum()
    compared = pd.concat([compared, pd.DataFrame([{"group": "total", "metrics": "", **totals.to_dict()}])],
                         ignore_index=True)
    counts = [c for c in compared if c.endswith("inputs")]
    compared[counts] = compared[counts].astype("int64")
    seconds = compared.set_index("group")[["estimated seconds", "measured seconds"]]
    if "fewclass selection" in seconds.index and "fewclass" in seconds.index:
        seconds.loc["fewclass"] += seconds.loc["fewclass selection"]
    cost = report.cost(frame)
    if "metric" in cost:  # one row per metric
        group = cost["metric"].map(lambda m: evaluation.METRICS[m].group if m in evaluation.METRICS else None)
        cost["group"] = group
        cost["estimated group seconds"] = group.map(seconds["estimated seconds"])
        cost["measured group seconds"] = group.map(seconds["measured seconds"])
    est, got = float(totals["estimated seconds"]), float(totals["measured seconds"])
    echo(f"estimate: {est:.1f} s, measured: {got:.1f} s" + (f" ({got / est:.2f} x the estimate)" if est > 0 else "")
         + "; per metric group in estimate.csv and cost.csv")
    return compared, cost


def with_report(compared, seconds: float, echo):
    """:func:`compare_estimate`'s table with the measured seconds of writing the report (its ``report`` row) and
    the totals again; prints the estimate beside the measured total."""
    compared = compared.copy()
    at = compared["group"] == "report"
    compared.loc[at, "measured seconds"] = seconds
    rest = compared["group"] != "total"
    compared.loc[~rest, "measured seconds"] = compared.loc[rest, "measured seconds"].sum()
    compared.loc[~rest, "estimated seconds"] = compared.loc[rest, "estimated seconds"].sum()
    est, got = (float(compared.loc[~rest, c].iloc[0]) for c in ("estimated seconds", "measured seconds"))
    echo(f"estimate: {est:.1f} s, measured: {got:.1f} s" + (f" ({got / est:.2f} x the estimate)" if est > 0 else "")
         + "; per metric group in estimate.csv and cost.csv")
    return compared


def record_extras(out: Path, compared, skipped) -> None:
    """Beside the written report: ``estimate.csv`` (:func:`compare_estimate`) and ``skipped.txt``, the images
    ``--skip-unreadable`` left out (file, tab, why), when there are any."""
    compared.to_csv(out / "estimate.csv", index=False)
    if skipped:
        (out / "skipped.txt").write_text("".join(f"{f}\t{why}\n" for f, why in skipped), encoding="utf-8")

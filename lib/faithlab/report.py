"""What a report on one model's explainers is: the tables, figures and the one HTML page that ``faithlab evaluate``
and the template notebook (``notebooks/templates/evaluate_your_explainer.py``) both produce from an
:func:`faithlab.evaluate` frame.

* :func:`summary`: the mean score per metric × explainer, with the metric's direction;
* :func:`ranks`: each metric's ranking of the explainers (1 = the most faithful by that metric);
* :func:`sanity`: the share of images where each explainer beats a random map
  (:func:`faithlab.protocols.synthesis.beats`) and how much each metric's ranking changes on a randomised model
  (adversary reactivity, :func:`faithlab.protocols.synthesis.reactivity`; the randomised model's frame comes from
  :func:`on_randomised`);
* :func:`cost`: model inputs and milliseconds per image and explainer, per metric;
* :func:`maps_figure`, :func:`ranks_figure`: the figures (matplotlib, imported when called: the ``report`` extra);
* :func:`write`: all of it into a folder (CSVs, PNGs and ``index.html``), atomically.

One copy of each rule: the command and the notebook call these functions and differ only in where the model and
images come from.
"""

from __future__ import annotations

import datetime
import html
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd
import torch

__all__ = ["summary", "ranks", "sanity", "cost", "randomisable_metrics", "on_randomised", "maps_figure",
           "ranks_figure", "write", "TABLES"]

TABLES = ("report", "summary", "ranks", "sanity", "cost")
"""The CSV files of a written report (``<name>.csv``), in the order the HTML page shows them."""

RANKING_CHANGE = "ranking change on a randomised model"


def _check_frame(frame, arg: str = "frame") -> None:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{arg} must be the DataFrame faithlab.evaluate returned, got {type(frame).__name__}")
    missing = {"explainer", "sample", "metric", "label", "level", "score", "higher_is_better", "direction"} - set(
        frame.columns)
    if missing:
        raise ValueError(f"{arg} lacks the columns {sorted(missing)}: pass the frame faithlab.evaluate returned")


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean score over the images per metric (rows, by label) × explainer (columns), and ``direction`` (how to read
    it: "higher is better" or "lower is better"). Scores keep their own sign: read them with the direction."""
    from faithlab import evaluation

    _check_frame(frame)
    table = evaluation.oriented(frame).groupby(["label", "explainer"], sort=False)["score"].mean().unstack()
    table["direction"] = frame.groupby("label", sort=False)["direction"].first()
    return table


def ranks(frame: pd.DataFrame) -> pd.DataFrame:
    """Each metric's ranking of the explainers: rank 1 = the highest mean oriented score (the most faithful by that
    metric), ties averaged → label × explainer."""
    from faithlab import evaluation

    _check_frame(frame)
    return (evaluation.oriented(frame).groupby(["label", "explainer"], sort=False)["oriented"].mean().unstack()
            .rank(axis=1, ascending=False))


def randomisable_metrics(frame: pd.DataFrame) -> list[str]:
    """The per-sample metrics of ``frame`` that can be recomputed on a randomised model as they are (those needing
    no fine-tuned copy and no explainer call: their inputs are the model and the maps), in the registry's order."""
    from faithlab.evaluation import METRICS

    _check_frame(frame)
    present = set(frame["metric"])
    return [m for m in METRICS if m in present and METRICS[m].level == "sample"
            and not {"finetuned", "explainer"} & set(METRICS[m].needs)]


def on_randomised(model: torch.nn.Module, x, y: torch.Tensor | None, explain: Mapping[str, Callable],
                  frame: pd.DataFrame, *, scale: float = 10.0, generator: int = 0, **options) -> pd.DataFrame:
    """The metrics of ``frame`` (:func:`randomisable_metrics`) on a randomised copy of ``model`` (every layer's
    weights plus noise of ``scale`` × their std drawn from ``generator``, :func:`faithlab.train.randomise_layers`),
    with maps of the
    randomised model's predictions by ``explain`` ``{explainer name: callable(model, inputs, target)}`` → the frame
    :func:`sanity` reads as ``randomised``. x: ``(B, ...)`` inputs with labels ``y``, or an iterable of batches
    (then ``y`` None: the labels come with the batches; the maps are computed batch by batch). options: passed to
    :func:`faithlab.evaluate` (use the original call's, so that only the model differs)."""
    from faithlab import evaluate, train

    metrics = randomisable_metrics(frame)
    if not metrics:
        raise ValueError("frame has no metric that can be recomputed on a randomised model (all need a fine-tuned "
                         "model or an explainer call)")
    randomised, _ = train.randomise_layers(model, 1.0, generator=generator, scale=scale)
    if not isinstance(x, torch.Tensor):
        return evaluate(randomised, x, explainer=dict(explain), metrics=metrics, hints=False, **options)
    with torch.no_grad():
        target = randomised(x).argmax(1)
    maps = {name: fn(randomised, x, target) for name, fn in explain.items()}
    return evaluate(randomised, x, y, maps, metrics=metrics, hints=False, **options)


def sanity(frame: pd.DataFrame, randomised: pd.DataFrame | None = None, *, random: str | None = None,
           recovery: pd.DataFrame | None = None) -> pd.DataFrame:
    """The sanity checks, one row per metric: ``label``, ``metric``, the ranking change on a randomised model
    (MetaQuantus' adversary reactivity of the ranking, :func:`faithlab.protocols.synthesis.reactivity`: ½ an
    unrelated ranking, 1 a reversed one; from ``randomised``, the frame :func:`on_randomised` returns; NaN with
    fewer than two explainers, where there is no ranking), ``beats random: <explainer>`` the share of images where
    each explainer scores better than the random map ``random`` (the name of a random explainer in ``frame``; ties
    ½), and ``recovery (...)`` columns when ``recovery`` (a :func:`faithlab.protocols.synthesis.recovery` table) is
    given."""
    from faithlab.evaluation import METRICS
    from faithlab.protocols import synthesis as syn

    _check_frame(frame)
    names = list(dict.fromkeys(frame["explainer"]))
    if random is not None and random not in names:
        raise ValueError(f"random names explainer {random!r}, absent from frame ({names})")
    if randomised is not None:
        _check_frame(randomised, "randomised")
        base = frame[frame["metric"].isin(set(randomised["metric"]))]
        react = syn.reactivity(base, randomised, names, truth=names[0], random=random or names[-1])
        if len(names) < 2:
            react["model"] = float("nan")
        table = react[["metric", "model"]].rename(columns={"model": RANKING_CHANGE})
    else:
        per_sample = frame.loc[frame["level"] == "sample", "metric"]
        table = pd.DataFrame({"metric": list(dict.fromkeys(per_sample))})
    checks = [syn.beats(frame, name, random).assign(explainer=name) for name in names
              if random is not None and name != random]
    if checks:
        wins = pd.concat(checks).pivot(index="metric", columns="explainer", values="share")
        table = table.set_index("metric").join(wins.add_prefix("beats random: ")).reset_index()
    if recovery is not None:
        table = table.merge(recovery[["metric", "spearman", "pairwise"]].rename(
            columns={"spearman": "recovery (Spearman)", "pairwise": "recovery (pairs right)"}), on="metric",
            how="left")
    table.insert(0, "label", table["metric"].map(lambda m: METRICS[m].label))
    return table


def cost(frame: pd.DataFrame) -> pd.DataFrame:
    """Per metric: model inputs, inputs given to the explainer and milliseconds, per image and explainer
    (:func:`faithlab.protocols.synthesis.cost_per_metric`; metrics computed together share one cost)."""
    from faithlab.protocols import synthesis as syn

    _check_frame(frame)
    return syn.cost_per_metric(frame)


def _display(x: torch.Tensor, normalisation) -> torch.Tensor:
    """One image ``(C, H, W)`` as the picture to show: un-normalised with ``normalisation`` ``(mean, std)``
    when given, first channel of a grey image, else RGB ``(3, H, W)``."""
    x = x.detach().float().cpu()
    if normalisation is not None:
        mean, std = (torch.as_tensor(v, dtype=torch.float32).reshape(-1, 1, 1) for v in normalisation)
        x = (x * std + mean).clamp(0, 1)
    return x[0] if x.shape[0] != 3 else x


def maps_figure(x: torch.Tensor, maps: Mapping[str, torch.Tensor], *, index: int = 0, normalisation=None):
    """Image ``index`` of ``x`` ``(B, C, H, W)`` and each explainer's map of it (Σ|a| over the channels) side by
    side → a matplotlib Figure. normalisation: the ``(mean, std)`` x was normalised with (None: shown as it is;
    a grey image shows its first channel)."""
    from faithlab import plots

    if not isinstance(x, torch.Tensor) or x.ndim != 4:
        raise ValueError(f"x must be a (B, C, H, W) tensor of images, got {getattr(x, 'shape', type(x).__name__)}")
    if not 0 <= index < x.shape[0]:
        raise ValueError(f"index must be in [0, {x.shape[0]}), got {index}")
    pictures = [_display(x[index], normalisation)]
    for name, m in maps.items():
        if m.shape[0] != x.shape[0]:
            raise ValueError(f"maps[{name!r}] has {m.shape[0]} maps but x has {x.shape[0]} images")
        a = m[index].detach().float().cpu()
        pictures.append(a.abs().sum(0) if a.ndim == 3 else a.abs())
    return plots.image_grid(pictures, titles=["image"] + list(maps), ncols=len(maps) + 1)


def ranks_figure(table: pd.DataFrame):
    """The :func:`ranks` table as an annotated heat map (rank 1 = best) → a matplotlib Figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    from faithlab import plots

    fig, ax = plt.subplots(figsize=(min(plots.WIDTH_IN, 1.3 * table.shape[1] + 3), 0.4 * len(table) + 1.5))
    values = table.to_numpy(dtype=float)
    image = ax.imshow(values, cmap="viridis_r", aspect="auto", vmin=1, vmax=max(table.shape[1], 2))
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            # viridis_r runs from light (rank 1) to dark: dark text on the light half, white on the dark one
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="black" if v < (table.shape[1] + 1) / 2
                    else "white")
    ax.grid(False)  # the house style's grid would cross the numbers
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(len(table)), [str(i) for i in table.index])
    fig.colorbar(image, ax=ax, label="rank (1 = best)")
    fig.tight_layout()
    return fig


def _save(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
          "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0 1.5em}"
          "th,td{border:1px solid #ccc;padding:0.2em 0.5em;text-align:right}th{background:#f4f4f4}"
          "img{max-width:100%}code,pre{background:#f6f6f6}.hint{color:#8a4b00}")


def _page(tables: Mapping[str, pd.DataFrame], figures: Sequence[tuple[str, str]], *, title: str, command: str | None,
          parameters: Mapping | None, hints: Sequence[str]) -> str:
    from faithlab import __version__

    e = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>",
             f"<p>faithlab {e(__version__)}, written {e(datetime.datetime.now().isoformat(timespec='seconds'))}."
             " Rank 1 = the explainer a metric finds most faithful; read each score with its direction.</p>"]
    if command:
        parts.append(f"<h2>Command</h2><pre>{e(command)}</pre>")
    if parameters:
        rows = pd.DataFrame({"parameter": list(parameters), "value": [repr(v) for v in parameters.values()]})
        parts.append("<h2>Parameters</h2>" + rows.to_html(index=False, escape=True))
    if hints:
        parts.append("<h2>Hints and warnings</h2><ul>" + "".join(f"<li class='hint'>{e(h)}</li>" for h in hints)
                     + "</ul>")
    captions = {"summary": "Mean score per metric and explainer", "ranks": "How each metric ranks the explainers",
                "sanity": "Sanity checks", "cost": "Cost per image and explainer",
                "report": "Every score (report.csv)"}
    for name, table in tables.items():
        if name == "ranks":
            parts += [f"<h2>{e(captions[name])}</h2>"] + [f"<img src='{e(f)}' alt='{e(alt)}'>" for f, alt in figures
                                                           if f == "ranks.png"]
        else:
            parts.append(f"<h2>{e(captions.get(name, name))}</h2>")
        shown = table if len(table) <= 200 else table.head(200)
        parts.append(f"<p><a href='{e(name)}.csv'>{e(name)}.csv</a>"
                     + (f" (first 200 of {len(table)} rows)" if shown is not table else "") + "</p>")
        parts.append(shown.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}", na_rep=""))
        if name == "summary":
            maps = [(f, alt) for f, alt in figures if f != "ranks.png"]
            if maps:
                parts.append("<h2>Maps</h2>" + "".join(f"<p><img src='{e(f)}' alt='{e(alt)}'></p>" for f, alt in maps))
    parts.append("</body></html>")
    return "\n".join(parts)


def write(out_dir: str | os.PathLike, frame: pd.DataFrame, *, randomised: pd.DataFrame | None = None,
          random: str | None = None, images: torch.Tensor | None = None, maps: Mapping[str, torch.Tensor] | None = None,
          n_maps: int = 4, normalisation=None, command: str | None = None, parameters: Mapping | None = None,
          hints: Sequence[str] = (), costs: pd.DataFrame | None = None, title: str = "Faithfulness report") -> Path:
    """Write the report of ``frame`` (an :func:`faithlab.evaluate` frame) into ``out_dir`` → its ``index.html``.

    Files: ``report.csv`` (the tidy frame), ``summary.csv``, ``ranks.csv``, ``sanity.csv`` (with ``randomised`` and
    ``random`` as in :func:`sanity`), ``cost.csv``; ``ranks.png`` and, when ``images`` ``(B, C, H, W)`` and their
    ``maps`` ``{explainer: maps}`` are given, ``maps_<i>.png`` for the first ``n_maps`` images (un-normalised with
    ``normalisation`` ``(mean, std)``); ``index.html``, one self-contained page (tables escaped, images by
    relative path) with the faithlab version, the ``command`` and ``parameters`` used and the ``hints``. costs: the
    :func:`cost` table when ``frame`` no longer carries its ``attrs["cost"]`` (frames concatenated by pandas).
    Everything is written into a temporary folder beside ``out_dir`` and moved into place at the end: on failure
    nothing is left half-written, and an existing ``out_dir`` is replaced only by a complete report."""
    _check_frame(frame)
    if isinstance(n_maps, bool) or not isinstance(n_maps, int) or n_maps < 0:
        raise ValueError(f"n_maps must be a non-negative integer, got {n_maps!r}")
    if (images is None) != (maps is None):
        raise ValueError("pass images and maps together (the map figures need both), or neither")
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} exists and is not a folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tables = {"summary": summary(frame).reset_index(), "ranks": ranks(frame), "sanity": sanity(
        frame, randomised, random=random), "cost": cost(frame) if costs is None else costs, "report": frame}
    tables["ranks"] = tables["ranks"].reset_index()
    hints = list(hints)
    if RANKING_CHANGE in tables["sanity"]:
        undefined = tables["sanity"].loc[tables["sanity"][RANKING_CHANGE].isna(), "label"].tolist()
        if undefined and len(set(frame["explainer"])) > 1:
            hints.append(f"Ranking change on a randomised model undefined for {', '.join(undefined)}: the metric "
                         "has no mean score on the randomised model (NaN, e.g. μF when its outputs do not vary).")
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name in TABLES:
            tables[name].to_csv(staging / f"{name}.csv", index=False)
        figures = []
        _save(ranks_figure(ranks(frame)), staging / "ranks.png")
        figures.append(("ranks.png", "ranks"))
        if images is not None:
            for i in range(min(n_maps, images.shape[0])):
                _save(maps_figure(images, maps, index=i, normalisation=normalisation), staging / f"maps_{i}.png")
                figures.append((f"maps_{i}.png", f"image {i} and its maps"))
        (staging / "index.html").write_text(_page({n: tables[n] for n in ("summary", "ranks", "sanity", "cost",
                                                                          "report")}, figures, title=title,
                                                  command=command, parameters=parameters, hints=hints),
                                            encoding="utf-8")
        os.chmod(staging, 0o755)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            staging.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out / "index.html"

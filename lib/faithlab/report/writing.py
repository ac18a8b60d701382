"""The report written into a folder (:func:`write`): its CSVs, figures and page (:mod:`faithlab.report.page`), into a
temporary folder moved into place at the end; which folders a report may replace (:func:`replaceable`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import torch

from faithlab.report.figures import maps_figure, ranks_figure, save_figure
from faithlab.report.meanings import glossary
from faithlab.report.page import index_page
from faithlab.report.sentences import sanity_sentences
from faithlab.report.tables import (INTERPRETATION, LEVEL, N_BOOT, RANKING_CHANGE, TABLES, check_frame, cost,
                                    monte_carlo_pairs, overall, ranks, sanity, separation, summary, tied_metrics)

__all__ = ["write", "replaceable"]


def replaceable(folder: Path) -> bool:
    """Whether ``folder`` may be replaced by a report: empty but for hidden files (a Finder's .DS_Store, Jupyter's
    .ipynb_checkpoints), or an earlier report (its index.html and report.csv)."""
    names = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    return not names or {"index.html", "report.csv"} <= names


def write(out_dir: str | os.PathLike, frame: pd.DataFrame, *, randomised: pd.DataFrame | None = None,
          random: str | None = None, images: torch.Tensor | None = None, maps: Mapping[str, torch.Tensor] | None = None,
          n_maps: int = 4, normalisation=None, command: str | None = None, parameters: Mapping | None = None,
          hints: Sequence[str] = (), costs: pd.DataFrame | None = None, title: str = "Faithfulness report",
          seed: int = 0, n_boot: int = N_BOOT, level: float = LEVEL) -> Path:
    """Write the report of ``frame`` (an :func:`faithlab.evaluate` frame) into ``out_dir`` → its ``index.html``.

    Files: ``report.csv`` (the tidy frame), ``summary.csv``, ``ranks.csv``, ``sanity.csv`` (with ``randomised`` and
    ``random`` as in :func:`sanity`), ``cost.csv`` (:data:`TABLES`); ``overall.csv`` (:func:`overall`, its intervals
    from ``n_boot`` resamples of the images at ``level``, generator ``seed``), ``pairs.csv`` (:func:`separation`)
    and ``metrics.csv`` (:func:`glossary`) (:data:`INTERPRETATION`); ``ranks.png`` and, when ``images``
    ``(B, C, H, W)`` and their ``maps`` ``{explainer: maps}`` are given, ``maps_<i>.png`` for the first ``n_maps``
    images (un-normalised with ``normalisation`` ``(mean, std)``); ``index.html``, one self-contained page (tables
    escaped, images by relative path): the overall ranking first, what each metric measures with a link to its
    chapter, then the ``hints``, the tables and figures with the sentences that read them, the ``command`` and the
    ``parameters`` used. costs: the :func:`cost` table when ``frame`` no longer carries its ``attrs["cost"]``
    (frames concatenated by pandas). Everything is written into a temporary folder beside ``out_dir`` and moved into
    place at the end: on failure nothing is left half-written, and an existing ``out_dir`` is replaced only by a
    complete report; an existing ``out_dir`` that is neither empty nor a report (index.html and report.csv) is
    refused with ValueError, never replaced."""
    check_frame(frame)
    if isinstance(n_maps, bool) or not isinstance(n_maps, int) or n_maps < 0:
        raise ValueError(f"n_maps must be a non-negative integer, got {n_maps!r}")
    if (images is None) != (maps is None):
        raise ValueError("pass images and maps together (the map figures need both), or neither")
    out = Path(out_dir).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {out} exists and is not a folder")
    if out.is_dir() and not replaceable(out):
        raise ValueError(f"out_dir {out} is a folder that holds other files than a report (no index.html and "
                         "report.csv), and the report replaces its folder: pass a new folder, or an earlier report's")
    out.parent.mkdir(parents=True, exist_ok=True)
    tables = {"summary": summary(frame).reset_index(), "ranks": ranks(frame).reset_index(), "sanity": sanity(
        frame, randomised, random=random), "cost": cost(frame) if costs is None else costs, "report": frame}
    tables["overall"] = overall(frame, n_boot=n_boot, level=level, seed=seed)
    tables["pairs"] = separation(frame, level=level,
                                 order=tables["overall"]["explainer"].tolist() or None)
    tables["metrics"] = glossary(dict.fromkeys(frame["metric"]))
    tables["monte carlo"] = monte_carlo_pairs(frame, order=tables["overall"]["explainer"].tolist() or None)
    hints = list(hints)
    if RANKING_CHANGE in tables["sanity"]:
        undefined = tables["sanity"].loc[tables["sanity"][RANKING_CHANGE].isna(), "label"].tolist()
        if undefined and len(set(frame["explainer"])) > 1:
            hints.append(f"Ranking change on a randomised model undefined for {', '.join(undefined)}: the metric "
                         "has no mean score on the randomised model (NaN, e.g. μF when its outputs do not vary).")
    n_images = int(frame.loc[frame["level"] == "sample", "sample"].nunique())
    tied = tied_metrics(tables["ranks"])
    sanity_text = sanity_sentences(tables["sanity"], len(tables["overall"]), tied=tied, tied_randomised=(
        [] if randomised is None else tied_metrics(ranks(randomised))))
    if not sanity_text:
        sanity_text = ["No sanity check ran: no randomised model's frame was given and no random map is among the "
                       "explainers."]
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name in TABLES + INTERPRETATION:
            tables[name].to_csv(staging / f"{name}.csv", index=False)
        figures = []
        save_figure(ranks_figure(ranks(frame)), staging / "ranks.png")
        figures.append(("ranks.png", "ranks"))
        if images is not None:
            for i in range(min(n_maps, images.shape[0])):
                save_figure(maps_figure(images, maps, index=i, normalisation=normalisation), staging / f"maps_{i}.png")
                figures.append((f"maps_{i}.png", f"image {i} and its maps"))
        (staging / "index.html").write_text(index_page(tables, figures, title=title, command=command,
                                                       parameters=parameters, hints=hints, n_images=n_images,
                                                  n_boot=n_boot, level=level, seed=seed, tied=tied,
                                                  sanity_text=sanity_text), encoding="utf-8")
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

"""The S= / S≠ distance sets of a family and a method with the chance level of every pair (spec §4.1–4.3): the same
distances with the image pairings shuffled (:func:`with_null`), both computed from one set of maps and cached on
disk, so the notebooks that need the same sets compute them once (:func:`distance_sets`); their scores and
histograms as tidy frames (:func:`scores`, :func:`histogram_frame`). The metric is
:mod:`faithlab.metrics.papers.reco_mege.crossfold`."""

from __future__ import annotations

import pandas as pd
import torch

from faithlab import paths, perturb
from faithlab.metrics.papers.reco_mege.crossfold import (Pairs, details_from_pairs, reco_mege_details_from_predictions,
                                                         shuffled_distances, shuffled_partners)
from faithlab_study.papers.reco_mege.setup import Family, explain_family, family_draws
from faithlab_study.papers.reco_mege.setup import method_options
from faithlab.train.cache import cache_key

__all__ = ["with_null", "distance_sets", "scores", "histogram_frame", "pairs_frame"]


_NULL_VERSION = 1
"""What the cached null of :func:`distance_sets` is (shuffled_partners over the samples with an S= pair, stream
:data:`NULL_STREAM` of the seed); a cache file without it, or with another version, is recomputed."""

NULL_STREAM = 1
"""The shuffled pairings' stream: generator ``keyed_seed(draw key, NULL_STREAM)``, apart from the explainers' draws
(the draw key: :func:`~faithlab_study.papers.reco_mege.setup.family_draws` of the notebook's seed and the family's
replica, or Table 3's)."""


def with_null(pairs: Pairs, shuffled: torch.Tensor, partners: torch.Tensor | None = None) -> dict:
    """The dict of :func:`faithlab.metrics.papers.reco_mege.crossfold.details_from_pairs` with the chance level of its
    pairs added: ``shuffled`` ``(N, k − 1)`` (:func:`faithlab.metrics.papers.reco_mege.crossfold.shuffled_distances`,
    the same pairs with the second model's map of another image) and ``partners`` ``(N,)`` (that other image; None
    when unknown)."""
    if not isinstance(shuffled, torch.Tensor) or tuple(shuffled.shape) != tuple(pairs.distance.shape):
        raise ValueError(f"shuffled must be a tensor shaped like pairs.distance {tuple(pairs.distance.shape)}, got "
                         f"{tuple(getattr(shuffled, 'shape', ()))}")
    return {**details_from_pairs(pairs), "shuffled": shuffled, "partners": partners}


def distance_sets(fam: Family, method: str, *, batch_size: int = 256, seed: int = 0, distance: str = "sqrt",
                  cache: bool = True, **settings) -> dict:
    """:func:`faithlab.metrics.papers.reco_mege.crossfold.reco_mege_details_from_predictions` for one family and method
    (the family's predictions), with the chance level of every pair (``"shuffled"``, see :func:`with_null`): the same
    distance with the second model's map of another image, the image pairings shuffled within the samples that have an
    S= pair (:func:`faithlab.metrics.shuffled_partners`, generator ``keyed_seed(family_draws(fam, seed),
    NULL_STREAM)``, drawn once per family and replica, so every method of a family gets the same pairings, each
    replica and notebook seed its own, and batch_size changes nothing); a random method's maps are keyed likewise
    (:func:`~faithlab_study.papers.reco_mege.setup.explain_family`). Both are computed from the same
    maps and cached under ``<cache>/reco_mege/`` (keyed by the models, the method and its settings), so another
    notebook asking for the same sets loads them (``torch.load(weights_only=True)``); a cache file written before
    the null existed is recomputed."""
    name, options = method_options(method, **settings)
    key = cache_key({"family": fam.key, "method": name, "options": {k: v for k, v in options.items()
                                                                    if not isinstance(v, torch.Tensor)},
                     "background": "train" if "background" in options else None, "distance": distance, "seed": seed,
                     "n": len(fam.data), "draws": family_draws(fam, seed)})
    file = paths.cache_dir() / "reco_mege" / f"{key}.pt"
    labels, folds = fam.data.y.cpu(), fam.cross.folds
    if cache and file.exists():
        try:
            state = torch.load(file, weights_only=True)
            if state.get("null_version") == _NULL_VERSION:
                return with_null(Pairs(state["distance"], state["other"], state["kind"]), state["shuffled"],
                                 state["partners"])
        except Exception:  # noqa: BLE001 — any unreadable file (truncated, not a torch file) is recomputed
            pass
        file.unlink(missing_ok=True)  # unreadable, or written before the null existed: recomputed below
    maps = explain_family(fam, method, batch_size=batch_size, seed=seed, **settings)
    channel_dim = -3 if maps.ndim == 5 else None
    details = reco_mege_details_from_predictions(maps, fam.predictions.to(maps.device), labels.to(maps.device),
                                                 folds.to(maps.device), distance=distance, channel_dim=channel_dim,
                                                 batch_size=batch_size)
    pairs = Pairs(*(t.cpu() for t in (details["pairs"].distance, details["pairs"].other, details["pairs"].kind)))
    partners = shuffled_partners((pairs.kind == 0).any(1),
                                 generator=perturb.keyed_seed(family_draws(fam, seed), NULL_STREAM))
    shuffled = shuffled_distances(maps, folds.to(maps.device), partners.to(maps.device), distance=distance,
                                  channel_dim=channel_dim, batch_size=batch_size).cpu()
    if cache:
        paths.atomic_write(file, lambda tmp: torch.save({"distance": pairs.distance, "other": pairs.other,
                                                         "kind": pairs.kind, "shuffled": shuffled,
                                                         "partners": partners, "null_version": _NULL_VERSION}, tmp))
    return with_null(pairs, shuffled, partners)


def scores(details: dict[str, dict], **columns) -> pd.DataFrame:
    """One row per method: ReCo, MeGe, xplique's scan, ReCo_AUC, |S=|, |S≠| and the dropped counts (+ ``columns``)."""
    rows = [{**columns, "method": m, "ReCo": d["reco"], "MeGe": d["mege"], "ReCo (xplique scan)": d["reco_scan"],
             "ReCo_AUC": d["reco_auc"], **{f"n {k}": v for k, v in d["counts"].items()}}
            for m, d in details.items()]
    return pd.DataFrame(rows)


def histogram_frame(details: dict[str, dict], **columns) -> pd.DataFrame:
    """S= and S≠ distances per method, tidy (``method``, ``set``, ``distance``) for Fig. 5."""
    frames = []
    for m, d in details.items():
        for name, values in (("S=", d["s_equal"]), ("S≠", d["s_unequal"])):
            frames.append(pd.DataFrame({**columns, "method": m, "set": name, "distance": values.numpy()}))
    return pd.concat(frames, ignore_index=True)


def pairs_frame(details: dict[str, dict], **columns) -> pd.DataFrame:
    """The S= / S≠ sets of every method as one frame (+ ``columns``, e.g. ``task=``, ``replica=``): one row per
    method × sample with its k − 1 pair distances (``distance j``), their kinds (``kind j``: 0 S=, 1 S≠, 2 both
    wrong) and their shuffled-pairings chance level (``shuffled j``). The frame a claim takes, so that its rows can
    be cut to one replica (:func:`faithlab_study.verdicts.replicated`);
    :func:`~faithlab_study.papers.reco_mege.experiments.bootstrap.pooled_sets` reads it back."""
    frames = []
    for m, d in details.items():
        pairs, shuffled = d["pairs"], d.get("shuffled")
        n, width = pairs.distance.shape
        block = {**columns, "method": m, "sample": range(n)}
        for j in range(width):
            block[f"distance {j}"] = pairs.distance[:, j].double().numpy()
            block[f"kind {j}"] = pairs.kind[:, j].to(torch.int64).numpy()
            block[f"shuffled {j}"] = (shuffled[:, j].double().numpy() if shuffled is not None
                                      else float("nan"))
        frames.append(pd.DataFrame(block))
    return pd.concat(frames, ignore_index=True)

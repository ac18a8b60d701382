"""Few-class Fidelity's experiments: the methods and alterations (spec §2.5) and their maps, and the tidy frames, one
row per image: Fid and its curves, localisation, the selected perturbations, the class-flip diagnostic, and
:func:`evaluate_task` (everything Tables 1–4 need for one task).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, explainers, perturb
from faithlab.metrics.papers import fewclass
from faithlab.metrics.papers.fewclass import localisation
from faithlab_study.papers.fewclass.setup import Setup
from faithlab_study.verdicts import replication

__all__ = ["METHODS", "ALTERATIONS", "NO_SG", "method_maps", "fid_frame", "curve_frame", "localisation_frame",
           "selection_frame", "flip_frame", "rank_agreement", "evaluate_task", "wide_table", "model_draws"]


METHODS: dict[str, tuple[str, dict]] = {
    "BP": ("gradient", {}),
    "Deconv": ("deconvolution", {}),
    "EG": ("expected_gradients", {}),
    "IG(min)": ("integrated_gradients", {"baseline": "min"}),
    "IG(zero)": ("integrated_gradients", {"baseline": "zero"}),
    "IG(max)": ("integrated_gradients", {"baseline": "max"}),
    "GradCAM": ("gradcam", {}),
    "Random": ("random", {}),
}
"""The methods of spec §2.5 as ``{name: (explainer, options)}``: BP the plain input gradient, Deconv captum's
Deconvolution, EG Expected Gradients over a background set of training images (SHAP's GradientExplainer in the
paper), IG from the image's min / zero / max (PAIR's IG in the paper), GradCAM at the model's last block, Random
U(−1, 1). Every map is scored by Σ_c |·|, so signs do not matter."""
ALTERATIONS = ("none", "XRAI", "SG", "SG²")
"""Alterations applied after the map (spec §2.5): XRAI over the map (PAIR), SmoothGrad and SmoothGrad² of the
method (noise std a fraction of the image range)."""
NO_SG = {"ct": ("Deconv", "IG(max)")}
"""Method × alteration cells the paper leaves empty: SG/SG² not applied to Deconv and IG(max) on CT (Table 2);
Random is never altered."""


def _explain_target(model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> tuple[nn.Module, torch.Tensor]:
    """Single-logit models are explained through their one output (target 0), as the paper's code does."""
    with torch.no_grad():
        width = model(x[:1]).shape[1]
    return model, (torch.zeros_like(target) if width == 1 else target)


def method_maps(model: nn.Module, x: torch.Tensor, target: torch.Tensor, *, methods: Mapping[str, tuple[str, dict]],
                alterations: Sequence[str] = ALTERATIONS, background: torch.Tensor | None = None,
                ig_steps: int = 32, sg_samples: int = 10, sg_noise: float = 0.15, skip: Sequence[str] = (),
                batch_size: int = 256, generator: torch.Generator | int = 0, layer: str | None = None
                ) -> dict[tuple[str, str], torch.Tensor]:
    """Maps ``{(method, alteration): (B, C|1, H, W)}`` of every method × alteration (Random only unaltered;
    ``skip`` lists methods without SG/SG², :data:`NO_SG`). SG/SG²: ``sg_samples`` noisy copies with noise std
    ``sg_noise`` × the range of x; IG ``ig_steps`` steps; EG draws from ``background``. One generator shared in
    the order of the methods, so the maps depend on the seed only. layer: Grad-CAM's layer (``Setup.layers``; None:
    the model's ``cam_layer``)."""
    g = _validate.generator(generator, why="for the random methods and noise")
    model, tgt = _explain_target(model, x, target)
    stdev = float(sg_noise) * float(x.max() - x.min())
    out: dict[tuple[str, str], torch.Tensor] = {}
    for name, (method, options) in methods.items():
        opts = dict(options)
        if method == "integrated_gradients":
            opts.setdefault("n_steps", ig_steps)
        if method == "gradcam" and layer is not None:
            opts.setdefault("layer", layer)
        if method == "expected_gradients":
            if background is None:
                raise ValueError("background images are needed for Expected Gradients")
            opts.setdefault("background", background)
        base = explainers.explain(model, x, tgt, method=method, batch_size=batch_size, generator=g, **opts)
        out[name, "none"] = base
        if method == "random":
            continue
        for alt in alterations:
            if alt == "XRAI":  # PAIR's XRAI over the method's map (recomputed inside, same generator stream)
                out[name, alt] = explainers.explain(model, x, tgt, method="xrai", base=method,
                                                    batch_size=batch_size, generator=g, **opts)
            elif alt in ("SG", "SG²") and name not in skip:
                out[name, alt] = explainers.explain(model, x, tgt, method="smoothgrad" if alt == "SG" else
                                                    "smoothgrad_sq", base=method, nt_samples=sg_samples,
                                                    stdevs=stdev, batch_size=batch_size, generator=g, **opts)
    return out


def fid_frame(model: nn.Module, x: torch.Tensor, maps: Mapping[tuple[str, str], torch.Tensor],
              perturbed: torch.Tensor, *, labels: Mapping[str, object] | None = None, batch_size: int = 256,
              generator: int = 0, fractions: Sequence[float] = fewclass.FRACTIONS
              ) -> tuple[pd.DataFrame, dict[tuple[str, str], dict]]:
    """Few-class Fid of every map → (rows per method × alteration × image with ``Fid``, ``A_MIF``, ``A_LIF``;
    the details dicts with the curves). The tie order of each map is seeded by ``generator``; ``fractions``: the
    curves' points (default the paper's p = 0, 1, …, 100 %). The per-call ``ConstantMapWarning`` is silenced
    here: each details dict flags its constant maps (e.g. an all-zero Grad-CAM) in ``constant``."""
    rows, details = [], {}
    for (name, alt), a in maps.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            d = fewclass.fewclass_fid_details(model, x, a, perturbed=perturbed, generator=generator,
                                              batch_size=batch_size, fractions=fractions)
        details[name, alt] = d
        rows.append(pd.DataFrame({**(labels or {}), "method": name, "alteration": alt, "image": range(x.shape[0]),
                                  "Fid": d["score"].cpu().numpy(), "A_MIF": d["a_mif"].cpu().numpy(),
                                  "A_LIF": d["a_lif"].cpu().numpy()}))
    return pd.concat(rows, ignore_index=True), details


def curve_frame(details: Mapping[tuple[str, str], dict], *, labels: Mapping[str, object] | None = None
                ) -> pd.DataFrame:
    """Long rows (method, alteration, curve MIF/LIF, image, p, value) of the curves in ``fid_frame``'s details."""
    rows = []
    for (name, alt), d in details.items():
        f = d["fractions"].cpu().numpy()
        for curve in ("mif", "lif"):
            c = d[curve].detach().cpu().double()
            rows.append(pd.DataFrame({**(labels or {}), "method": name, "alteration": alt, "curve": curve.upper(),
                                      "image": torch.arange(c.shape[0]).repeat_interleave(c.shape[1]).numpy(),
                                      "p": list(f) * c.shape[0], "value": c.flatten().numpy()}))
    return pd.concat(rows, ignore_index=True)


def localisation_frame(maps: Mapping[tuple[str, str], torch.Tensor], *, boxes: torch.Tensor | None = None,
                       masks: torch.Tensor | None = None, labels: Mapping[str, object] | None = None
                       ) -> pd.DataFrame:
    """IoU (boxes, Table 3) or Dice (masks, Table 4; per-image max over p, the paper, and at the p that maximises
    the mean curve, the thesis code) of every map → rows per method × alteration × image, with ``constant``
    flagging the maps without a ranking (their per-call ``ConstantMapWarning`` is silenced here)."""
    if (boxes is None) == (masks is None):
        raise ValueError("pass exactly one of boxes (IoU) or masks (Dice)")
    rows = []
    for (name, alt), a in maps.items():
        constant = perturb.constant_maps(a.abs().sum(dim=1).flatten(1) if a.ndim == 4 else a.abs().flatten(1))
        base = {**(labels or {}), "method": name, "alteration": alt, "image": range(a.shape[0]),
                "constant": constant.cpu().numpy()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            loc = localisation.localisation_iou(a, boxes) if boxes is not None else localisation.dice_curve(a, masks)
        if boxes is not None:
            rows.append(pd.DataFrame({**base, "IoU": loc.cpu().numpy()}))
        else:
            d = loc  # once for both aggregations of localisation_dice
            rows.append(pd.DataFrame({**base, "Dice": d.amax(dim=1).cpu().numpy(),
                                      "Dice (code)": d[:, int(d.mean(dim=0).argmax())].cpu().numpy()}))
    return pd.concat(rows, ignore_index=True)


def selection_frame(selection: Mapping, *, labels: Mapping[str, object] | None = None) -> pd.DataFrame:
    """One row per image of :func:`faithlab.metrics.papers.fewclass.fidelity.select_perturbation`'s result: the winning
    operation, σ and adjustment, its U, S, P, whether U < Δ, the image's best U over all candidates, and the share of
    its candidates with U < Δ (the chance that a candidate drawn at random reaches Δ: claim C2's null)."""
    n = len(selection["operation"])
    return pd.DataFrame({**(labels or {}), "image": range(n), "operation": selection["operation"],
                         "sigma": selection["sigma"], "adjustment": selection["adjustment"],
                         "variation": [f"{o}{a}" for o, a in zip(selection["operation"], selection["adjustment"])],
                         "U": selection["u"].cpu().numpy(), "S": selection["s"].cpu().numpy(),
                         "P": selection["p"].cpu().numpy(), "U < Δ": selection["passed"].cpu().numpy(),
                         "best U": selection["all_u"].amin(dim=1).cpu().numpy(),
                         "candidates U < Δ": (selection["all_u"] < selection["delta"]).double().mean(1).cpu().numpy(),
                         "Δ": selection["delta"]})


def flip_frame(model: Callable, x: torch.Tensor, perturbed: torch.Tensor, *, references: Sequence[str] = ("zero",
               "mean"), labels: Mapping[str, object] | None = None, batch_size: int = 256) -> pd.DataFrame:
    """What replacing every pixel does (claim C5): for each classic reference (``perturb.make_reference``) and the
    selected perturbation, per image, the predicted class, whether it differs from the clean prediction, the
    class probabilities' uncertainty U (eq. 2) and the top probability."""
    target = fewclass.predicted_class(model, x, batch_size=batch_size)
    replaced = {ref: perturb.make_reference(x, ref).expand_as(x) for ref in references}
    replaced["selected perturbation"] = perturbed
    rows = []
    for name, img in replaced.items():
        with torch.no_grad():
            probs = torch.cat([fewclass.class_probabilities(model(img[i:i + batch_size]))
                               for i in range(0, img.shape[0], batch_size)])
        pred = probs.argmax(dim=1)
        rows.append(pd.DataFrame({**(labels or {}), "replacement": name, "image": range(x.shape[0]),
                                  "flipped": (pred != target).cpu().numpy(),
                                  "U": fewclass.uncertainty(probs).cpu().numpy(),
                                  "top probability": probs.amax(dim=1).cpu().numpy()}))
    return pd.concat(rows, ignore_index=True)


def mechanism_frame(s: Setup, *, grid="paper", batch_size: int = 256) -> pd.DataFrame:
    """The units of the chapter's mechanism premise on the images of ``s``, without any map: per model, the selected
    perturbation of every image (:func:`faithlab.metrics.papers.fewclass.fidelity.select_perturbation`, on pixel
    values when ``s.normalisation`` is set) and :func:`flip_frame` of the classic references and that perturbation,
    with ``Δ``. The same rows as the ``flips`` frame of :func:`evaluate_task` on the same setup, at the cost of the
    candidate search alone, so that the premise can be decided on more replicas and images than the maps afford."""
    return pd.concat([_flips(model, m, s, grid=grid, batch_size=batch_size)[1] for m, model in s.models.items()],
                     ignore_index=True)


def _flips(model, name: str, s: Setup, *, grid, batch_size: int) -> tuple[dict, pd.DataFrame]:
    sel = fewclass.select_perturbation(model, s.x, grid=grid, batch_size=batch_size, normalisation=s.normalisation)
    return sel, flip_frame(model, s.x, sel["image"], labels={"model": name, "Δ": sel["delta"]}, batch_size=batch_size)


def rank_agreement(fid: pd.DataFrame, loc: pd.DataFrame, *, score: str, by: Sequence[str] = ("model",)
                   ) -> pd.DataFrame:
    """Spearman correlation, per group of ``by``, between the mean Fid and the mean localisation ``score`` of the
    method × alteration cells (claim C4), with the number of cells."""
    from faithlab.metrics import statistics as stats

    keys = [*by, "method", "alteration"]
    merged = fid.groupby(keys)["Fid"].mean().to_frame().join(loc.groupby(keys)[score].mean()).reset_index()
    rows = []
    for group, frame in merged.groupby(list(by)):
        rho = stats.spearman(torch.tensor(frame["Fid"].to_numpy()), torch.tensor(frame[score].to_numpy()))
        rows.append({**dict(zip(by, group if isinstance(group, tuple) else (group,))), "cells": len(frame),
                     "Spearman": float(rho)})
    return pd.DataFrame(rows)


def model_draws(s: Setup, model: str, seed: int, *keys: int | str) -> int:
    """The seed of the Monte-Carlo draws ``keys`` (a draw's name) of model ``model`` of ``s`` under the notebook's
    ``seed``: :func:`~faithlab_study.verdicts.replication.draw_seed` of (seed, setting ``"<task>/<model>"``, the
    replica ``s.replica`` (None: 0), keys), never a sum: each replica, model and notebook seed draws its own."""
    return replication.draw_seed(seed, f"{s.task}/{model}", 0 if s.replica is None else int(s.replica), *keys)


def evaluate_task(s: Setup, *, methods: Sequence[str] = tuple(METHODS), alterations: Sequence[str] = ALTERATIONS,
                  ig_steps: int = 32, sg_samples: int = 10, sg_noise: float = 0.15, grid="paper", batch_size: int = 256,
                  seed: int = 0, fractions: Sequence[float] = fewclass.FRACTIONS) -> dict[str, pd.DataFrame]:
    """Everything Tables 1–4 need for one task, per model: the selected perturbation of every image (built on pixel
    values when ``s.normalisation`` is set, see :func:`setup`), the maps of ``methods`` × ``alterations``, their Fid
    with curves at ``fractions`` (default p = 0, 1, …, 100 %), and their localisation (IoU for vehicles, Dice for
    CT). grid: the candidate grid of the selection (default ``"paper"``, the paper's 804; see
    :func:`faithlab.metrics.papers.fewclass.fidelity.select_perturbation`). Returns frames ``selection``, ``flips``
    (:func:`flip_frame` of the classic references and the selected perturbation, with ``Δ``: the chapter's
    mechanism premise), ``fid``, ``curves`` and ``localisation`` (a ``model`` column in each). The random maps and
    noise of every model draw from :func:`model_draws` (``"maps"``), Fid's random tie order from ``"ties"``: keyed to
    (``seed``, the task and model, ``s.replica``), so every replica and notebook seed draws its own."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"methods must be names of METHODS {tuple(METHODS)}, got {unknown}")
    if any(METHODS[k][0] == "gradcam" for k in methods):
        no_layer = [m for m, model in s.models.items() if s.layers.get(m) is None and
                    getattr(model, "cam_layer", None) is None]
        if no_layer:
            raise ValueError(f"methods include GradCAM, but the models {no_layer} have no Grad-CAM layer: give their "
                             "settings entries a 'cam_layer' (a dotted module name; defaults in CAM_LAYERS)")
    frames: dict[str, list[pd.DataFrame]] = {"selection": [], "flips": [], "fid": [], "curves": [],
                                             "localisation": []}
    for m, model in s.models.items():
        labels = {"model": m}
        sel, flips = _flips(model, m, s, grid=grid, batch_size=batch_size)
        frames["selection"].append(selection_frame(sel, labels=labels))
        frames["flips"].append(flips)
        maps = method_maps(model, s.x, s.y, methods={k: METHODS[k] for k in methods}, alterations=alterations,
                           background=s.background, ig_steps=ig_steps, sg_samples=sg_samples, sg_noise=sg_noise,
                           skip=NO_SG.get(s.task, ()), batch_size=batch_size,
                           generator=torch.Generator().manual_seed(model_draws(s, m, seed, "maps")),
                           layer=s.layers.get(m))
        fid, details = fid_frame(model, s.x, maps, sel["image"], labels=labels, batch_size=batch_size,
                                 generator=model_draws(s, m, seed, "ties"), fractions=fractions)
        frames["fid"].append(fid)
        frames["curves"].append(curve_frame(details, labels=labels))
        frames["localisation"].append(localisation_frame(maps, boxes=s.boxes, masks=s.masks, labels=labels))
    return {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}


def wide_table(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """Mean ``value`` per model × method (rows, :data:`METHODS` order) and alteration (columns,
    :data:`ALTERATIONS` order; empty where the cell was not computed): the layout of the paper's Tables 1–4."""
    order = {m: i for i, m in enumerate(METHODS)}
    table = frame.groupby(["model", "method", "alteration"], sort=False)[value].mean().unstack("alteration")
    table = table[[a for a in ALTERATIONS if a in table.columns]].reset_index()
    models_order = {m: i for i, m in enumerate(dict.fromkeys(frame["model"]))}
    return table.sort_values(["model", "method"], key=lambda c: c.map(models_order if c.name == "model" else order)
                             ).reset_index(drop=True)

"""TRACE's experiments: the Table 1 attribution methods, their pixel maps and the patch trajectories the maps sort
into; and the tidy frames of deletion scores and curves of trajectories (Table 1 / Appendix G, Fig. 1, 2b, 3b), of
searches, of the random deletion test (Fig. 4) and of insertion against deletion (Thm 3.1), one row per image (or per
image and curve point) so that the claims can bootstrap over images.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import torch
import pandas as pd

from faithlab import _validate, explainers, perturb
from faithlab.metrics import trace
from faithlab.metrics.papers.trace.search import Search, random_deletion_curves
from faithlab.perturb.references import Reference

__all__ = ["TABLE1_METHODS", "method_maps", "trajectories", "OUTPUT_NAMES", "deletion_frames", "table_layout",
           "curve_rows", "search_frames", "random_deletion_frame", "normalised_auc", "reference_spread", "curve_sums",
           "random_order_sums", "insertion_deletion_frame", "META_BUDGET", "TABU_TENURE"]


META_BUDGET = 1.0
"""Appendices E/F's comparison (trace/searches): the genetic algorithm and tabu search each get about this many times
the model inputs that SA-Le−Mo (incremental) spends per image beyond its greedy start (our protocol: the paper's
appendix settings are not in its text)."""

TABU_TENURE = 7
"""Appendices E/F's tabu search (trace/searches): a swapped pair of patches stays tabu for this many iterations unless
it beats the best found (ours, as :data:`META_BUDGET`)."""


TABLE1_METHODS: dict[str, tuple[str, dict, str]] = {
    "Grad": ("saliency", {}, "mean"),
    "GC": ("gradcam", {}, "mean"),
    "IBA": ("iba", {}, "mean"),
    "RISE": ("rise", {}, "mean"),
    "EP": ("extremal_perturbation", {}, "mean"),
    "EBP": ("excitation_backprop", {}, "mean"),
    "IG": ("integrated_gradients", {}, "mean_abs"),
    "IxG": ("input_x_gradient", {}, "mean_abs"),
    "Random": ("random", {}, "mean"),
}
"""The attribution methods of Table 1 (spec §5.7) as ``{name: (explainer, options, reduce)}``: Grad is |∂f/∂x|
(captum Saliency) averaged over channels and patch pixels; GC Grad-CAM at the model's ``cam_layer``; RISE,
Extremal Perturbations (EP) and Excitation Backprop (EBP) as in ``faithlab.explainers.rise``,
``faithlab.explainers.extremal_perturbation`` and ``faithlab.explainers.excitation_backprop``; IG and I×G reduced
as |·| averaged over channels and patch pixels (``"mean_abs"``); IBA the per-sample information
bottleneck of Schulz et al. (``faithlab.explainers.bottleneck``, the authors' defaults) at the layer Grad-CAM reads,
its statistics from :func:`method_maps`' ``statistics_data``. "Random" (a uniform random map) is our floor, not in
the paper."""
_LAYER_METHODS = ("gradcam", "layercam", "excitation_backprop", "iba")


def method_maps(model: Callable, x: torch.Tensor, target: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]],
                *, batch_size: int, generator: torch.Generator | int, layer: str | None = None,
                statistics_data: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Pixel attribution maps ``{name: (B, C|1, H, W)}`` of ``methods`` (``{name: (explainer, options, reduce)}``,
    e.g. :data:`TABLE1_METHODS`) for the ``target`` class. generator: seeds the random methods (RISE, IBA's noise,
    Random); one generator is shared in the order of ``methods``, so the maps depend on that order and the seed only.
    layer: the layer Grad-CAM, Excitation Backprop and IBA read (``Setup.layers``; None: the model's ``cam_layer``;
    a method's own ``layer`` option wins). statistics_data: the inputs IBA's activation statistics are estimated on
    (``Setup.reference``, :func:`faithlab.explainers.iba_statistics`), required when a method is IBA without its own
    ``statistics`` option."""
    g = _validate.generator(generator, why="for the random methods")
    maps = {}
    for name, (method, options, _) in methods.items():
        where = {"layer": layer} if layer is not None and method in _LAYER_METHODS and "layer" not in options else {}
        if method == "iba" and "statistics" not in options:
            if statistics_data is None:
                raise ValueError(f"method {name!r} (IBA) needs statistics_data: the inputs its activation statistics "
                                 "are estimated on (e.g. Setup.reference)")
            where["statistics"] = explainers.iba_statistics(model, statistics_data, batch_size=batch_size,
                                                            layer=options.get("layer", layer))
        maps[name] = explainers.explain(model, x, target, method=method, batch_size=batch_size, generator=g,
                                        **where, **options)
    return maps


def trajectories(maps: Mapping[str, torch.Tensor], x: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]], *,
                 edge: int) -> dict[str, torch.Tensor]:
    """Bottom-to-top patch trajectories ``{name: (B, t)}`` of pixel maps on an ``edge``×``edge`` grid, each map
    pooled with its method's reduce rule (``methods[name][2]``) and sorted ascending, ties by the smaller patch
    id (``metrics.trace.trajectory_from_map``). A constant map (e.g. an all-zero Grad-CAM) gives the patch ids in
    order; the per-call ``ConstantMapWarning`` is silenced here (the chapters count constant maps themselves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", perturb.ConstantMapWarning)
        return {name: trace.trajectory_from_map(a, x, edge=edge, reduce=methods[name][2]) for name, a in maps.items()}


OUTPUT_NAMES = {"prob": "probability", "logit": "logit"}
"""How the frames name the two outputs f: -p (softmax probability of the label) and -y (its logit)."""

def deletion_frames(model: Callable, x: torch.Tensor, target: torch.Tensor, trajs: Mapping[str, torch.Tensor], *,
                    edge: int, reference: Reference, outputs: tuple[str, ...] = ("prob", "logit"),
                    batch_size: int = 256, labels: Mapping[str, object] | None = None, points: int | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LeRF and MoRF deletion curves of every trajectory under one reference, for each output f.

    trajs: ``{name: (B, t)}`` bottom-to-top trajectories (methods or TRACE searches). labels: constant columns
    added to both frames (e.g. ``{"model": ..., "reference": "zero"}``). points: None evaluates every one of the
    t + 1 curve points (``metrics.trace.trajectory_scores_details``); an int evaluates ``points`` evenly spaced
    deleted fractions 0, 1/(points − 1), …, 1 instead (``perturb.removal_curve`` along the same orders, ⌊f·t⌉ patches
    deleted), for pixel-level curves where t + 1 points would cost too much. Returns ``(scores, curves)``: scores
    has one row per name × output × image with ``LeRF`` and ``MoRF`` (plain sums over the evaluated points: with
    ``points=None`` the paper's Table 1 scale), ``LeRF − MoRF``, ``f(x)`` (the clean image's output, the curves'
    first point) and ``points`` (the points each sum runs over); curves one row per name × output × criterion ×
    image × point, with ``deleted`` (number of patches), ``fraction`` and ``value``.
    """
    labels = dict(labels or {})
    scores, curves = [], []
    images = torch.arange(x.shape[0])
    t = edge * edge
    if points is not None:
        points = _validate.positive_int(points, "points")
        if points < 2:
            raise ValueError(f"points must be at least 2 (the clean and the fully deleted image), got {points}")
        fractions = torch.linspace(0, 1, points, dtype=torch.float64)
        units = trace.patch_grid(x, edge)
    for output in outputs:
        for name, tau in trajs.items():
            if points is None:
                d = trace.trajectory_scores_details(model, x, tau, edge=edge, reference=reference, output=output,
                                                    target=target, batch_size=batch_size)
                deleted = None
            else:
                d = {c: perturb.removal_curve(model, x, None, fractions.tolist(), order=order, units=units,
                                              reference=reference, output=output, target=target,
                                              batch_size=batch_size)
                     for c, order in (("lerf", tau), ("morf", tau.flip(1)))}
                d.update(lerf_auc=d["lerf"].sum(1), morf_auc=d["morf"].sum(1),
                         lerf_morf=d["lerf"].sum(1) - d["morf"].sum(1))
                deleted = torch.round(fractions * t).long()
            base = {**labels, "method": name, "output": OUTPUT_NAMES.get(output, output)}
            scores.append(pd.DataFrame({**base, "image": images.numpy(), "LeRF": d["lerf_auc"].cpu().numpy(),
                                        "MoRF": d["morf_auc"].cpu().numpy(),
                                        "LeRF − MoRF": d["lerf_morf"].cpu().numpy(),
                                        "f(x)": d["lerf"][:, 0].detach().cpu().double().numpy(),
                                        "points": d["lerf"].shape[1]}))
            for criterion in ("LeRF", "MoRF"):
                curves.append(curve_rows(d[criterion.lower()], {**base, "criterion": criterion}, deleted=deleted))
    return pd.concat(scores, ignore_index=True), pd.concat(curves, ignore_index=True)


def table_layout(scores: pd.DataFrame, *, output: str, methods: list[str]) -> pd.DataFrame:
    """Table 1 / Appendix G layout of :func:`deletion_frames`' scores: the mean ΣLeRF − ΣMoRF over images per
    reference × model (rows, in order of appearance) and method (columns, in the order ``methods``), for one
    ``output`` ("probability" or "logit")."""
    table = (scores[scores.output == output].groupby(["reference", "model", "method"], sort=False)["LeRF − MoRF"]
             .mean().unstack("method")[list(methods)])
    return table.reset_index()


def curve_rows(curve: torch.Tensor, labels: Mapping[str, object], *, deleted: torch.Tensor | None = None
               ) -> pd.DataFrame:
    """Long rows (image, deleted, fraction, value) of ``(B, P)`` curves, with constant ``labels``. deleted: the
    number of units deleted at each of the P points (default 0..P − 1, a full deletion curve of P − 1 units)."""
    b, n_points = curve.shape
    k = torch.arange(n_points) if deleted is None else deleted.cpu()
    total = n_points - 1 if deleted is None else int(deleted[-1])
    return pd.DataFrame({**labels, "image": torch.arange(b).repeat_interleave(n_points).numpy(),
                         "deleted": k.repeat(b).numpy(), "fraction": (k / total).repeat(b).numpy(),
                         "value": curve.detach().cpu().double().flatten().numpy()})


def search_frames(searches: Mapping[str, Search], *, labels: Mapping[str, object] | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The LeRF/MoRF curves a set of searches already evaluated (``{name: Search}``, e.g. TRACE-SA-Le−Mo, -Le, -Mo
    and Greedy-Le, -Mo), laid out as :func:`deletion_frames` does (with ``f(x)`` and ``points``; without an
    ``output`` column: add it to ``labels``). No model call: each Search carries both curves of its trajectory."""
    labels = dict(labels or {})
    scores, curves = [], []
    for name, s in searches.items():
        base = {**labels, "method": name}
        le, mo = s.lerf.detach().cpu().double(), s.morf.detach().cpu().double()
        scores.append(pd.DataFrame({**base, "image": range(le.shape[0]), "LeRF": le.sum(1).numpy(),
                                    "MoRF": mo.sum(1).numpy(), "LeRF − MoRF": (le.sum(1) - mo.sum(1)).numpy(),
                                    "f(x)": le[:, 0].numpy(), "points": le.shape[1]}))
        curves += [curve_rows(le, {**base, "criterion": "LeRF"}), curve_rows(mo, {**base, "criterion": "MoRF"})]
    return pd.concat(scores, ignore_index=True), pd.concat(curves, ignore_index=True)


def random_deletion_frame(model: Callable, x: torch.Tensor, target: torch.Tensor, *, edges: tuple[int, ...],
                          references: Mapping[str, Reference], n_orders: int, generator: torch.Generator | int,
                          output: str = "prob", batch_size: int = 256) -> pd.DataFrame:
    """The random deletion test (Fig. 4): for each edge e (t = e² patches of side H/e) and reference, the curve
    averaged over ``n_orders`` uniformly random orders per image → rows (edge, patch side, t, reference, image,
    deleted, fraction, value). One generator is shared in the order edges × references."""
    g = _validate.generator(generator, why="for the random orders")
    rows = []
    for edge in edges:
        for ref_name, ref in references.items():
            c = random_deletion_curves(model, x, edge=edge, n_orders=n_orders, generator=g, reference=ref,
                                       output=output, target=target, batch_size=batch_size).mean(1)
            rows.append(curve_rows(c, {"edge": edge, "patch side": x.shape[-1] // edge, "t": edge * edge,
                                        "reference": ref_name}))
    return pd.concat(rows, ignore_index=True)


def normalised_auc(curves: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean of each curve over its points (its AUC over the deleted fraction on [0, 1], trapezoid-free: the plain
    sum divided by t + 1, so grids of different t compare) → one row per ``by`` group and image, column ``AUC``."""
    return curves.groupby([*by, "image"], sort=False)["value"].mean().rename("AUC").reset_index()


def reference_spread(scores: pd.DataFrame, *, value: str, by: list[str]) -> pd.DataFrame:
    """Per image and ``by`` group, how much the reference moves a score → rows (``by``…, image, ``spread``,
    ``relative spread``): ``spread`` = max − min of ``value`` over the ``reference`` column; ``relative spread`` =
    spread / the group's mean |value| over all its images and references (one scale per group, so methods with
    scores of different size compare; NaN when that mean is 0). Used for T5 (TRACE with patches vs methods at
    pixel level)."""
    g = scores.groupby([*by, "image"], sort=False)[value]
    out = (g.max() - g.min()).rename("spread").reset_index()
    scale = scores.assign(_abs=scores[value].abs()).groupby(by, sort=False)["_abs"].mean().rename("_scale")
    out = out.join(scale, on=by)
    out["relative spread"] = out["spread"] / out.pop("_scale").where(lambda v: v > 0)
    return out


# ------------------------------------------------------------------------------------------- frames of the claims
def curve_sums(curves: Mapping[tuple[str, str], torch.Tensor], *, labels: Mapping[str, object] | None = None
               ) -> pd.DataFrame:
    """Plain sums of ``(B, t + 1)`` curves ``{(search, objective): curve}`` (e.g. Fig. 2a's CS, SA and Greedy for
    "Le" and "Mo") → rows (search, objective, image, sum, f(x), points), with constant ``labels`` (e.g.
    ``{"replica": 0}``); ``f(x)`` is the curve's first point (the clean image), ``points`` its length."""
    labels = dict(labels or {})
    return pd.concat([pd.DataFrame({**labels, "search": search, "objective": objective, "image": range(c.shape[0]),
                                    "sum": c.detach().cpu().double().sum(1).numpy(),
                                    "f(x)": c.detach().cpu().double()[:, 0].numpy(), "points": c.shape[1]})
                      for (search, objective), c in curves.items()], ignore_index=True)


def random_order_sums(model: Callable, x: torch.Tensor, target: torch.Tensor, *, edge: int, n_orders: int,
                      generator: torch.Generator | int, reference: Reference = "zero", output: str = "prob",
                      batch_size: int = 256, labels: Mapping[str, object] | None = None) -> pd.DataFrame:
    """Sums of the deletion curves along ``n_orders`` uniformly random orders per image
    (``metrics.search.random_deletion_curves``) → rows (image, order, sum, points), with constant ``labels``. A
    random order and its reverse are equally likely, so these are draws of ΣLeRF and of ΣMoRF of a random
    trajectory alike: the chance level of both criteria (the null of the chapter's mechanism premise,
    :func:`~faithlab_study.papers.trace.claims.mechanism_premises`)."""
    c = random_deletion_curves(model, x, edge=edge, n_orders=n_orders, generator=generator, reference=reference,
                               output=output, target=target, batch_size=batch_size).detach().cpu().double()
    b, n, p = c.shape
    return pd.DataFrame({**dict(labels or {}), "image": torch.arange(b).repeat_interleave(n).numpy(),
                         "order": torch.arange(n).repeat(b).numpy(), "sum": c.sum(2).flatten().numpy(),
                         "points": p})


def insertion_deletion_frame(model: Callable, x: torch.Tensor, searches: Mapping[str, Search], *,
                             edge: int, reference: Reference = "zero", output: str = "prob",
                             target: torch.Tensor | None = None, batch_size: int = 256) -> pd.DataFrame:
    """Thm 3.1 side by side: for every search's trajectory τ, its LeRF deletion AUC (the Search's curve) against
    the AUC of inserting the patches in MoRF order rev(τ) into the fully deleted image
    (``metrics.trace.insertion_curve``), and its MoRF deletion AUC against insertion in LeRF order τ → rows
    (method, deletion, image, deletion AUC, insertion AUC)."""
    rows = []
    for name, s in searches.items():
        for criterion, deletion, order in (("LeRF", s.lerf, s.trajectory.flip(1)), ("MoRF", s.morf, s.trajectory)):
            inserted = trace.insertion_curve(model, x, order, edge=edge, reference=reference, output=output,
                                             target=target, batch_size=batch_size)
            rows.append(pd.DataFrame({"method": name, "deletion": criterion, "image": range(x.shape[0]),
                                      "deletion AUC": deletion.detach().cpu().double().sum(1).numpy(),
                                      "insertion AUC": inserted.detach().cpu().double().sum(1).numpy()}))
    return pd.concat(rows, ignore_index=True)

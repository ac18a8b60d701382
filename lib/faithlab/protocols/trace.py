"""TRACE's experimental protocol (Wang & Wang; spec §5): attribution maps of the Table 1 methods → patch
trajectories, and tidy frames of deletion scores and curves for Table 1 / Appendix G, Fig. 1, 2b, 3b and 4.

The metric and the searches live in :mod:`faithlab.metrics.trace`; this module only runs them over methods,
references and outputs and lays the results out. Every frame has one row per image (or per image and curve
point), so the notebooks can bootstrap over images.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from faithlab import _validate, data, explainers, models, perturb, recipes, train, verdicts
from faithlab.metrics import trace
from faithlab.perturb.references import Reference

__all__ = ["TABLE1_METHODS", "OUTPUT_NAMES", "PAPER_MODELS", "CAM_LAYERS", "Setup", "setup", "first_by_filename", "method_maps", "trajectories", "deletion_frames",
           "search_frames", "curve_rows", "random_deletion_frame", "reference_spread", "normalised_auc", "beats_all",
           "table_layout"]

TABLE1_METHODS: dict[str, tuple[str, dict, str]] = {
    "Grad": ("saliency", {}, "mean"),
    "GC": ("gradcam", {}, "mean"),
    "RISE": ("rise", {}, "mean"),
    "EP": ("extremal_perturbation", {}, "mean"),
    "EBP": ("excitation_backprop", {}, "mean"),
    "IG": ("integrated_gradients", {}, "mean_abs"),
    "IxG": ("input_x_gradient", {}, "mean_abs"),
    "Random": ("random", {}, "mean"),
}
"""The attribution methods of Table 1 (spec §5.7) as ``{name: (explainer, options, reduce)}``: Grad is |∂f/∂x|
(captum Saliency) averaged over channels and patch pixels; GC Grad-CAM at the model's ``cam_layer``; RISE,
Extremal Perturbations (EP) and Excitation Backprop (EBP) as in ``faithlab.explainers.perturbation``; IG and
I×G reduced as |·| averaged over channels and patch pixels (``"mean_abs"``). IBA is not available (no maintained
package). "Random" (a uniform random map) is our floor, not in the paper."""

OUTPUT_NAMES = {"prob": "probability", "logit": "logit"}
"""How the frames name the two outputs f: -p (softmax probability of the label) and -y (its logit)."""


PAPER_MODELS = ("resnet18", "vgg16", "alexnet", "googlenet", "mobilenet_v3_large", "densenet161")
"""The paper's six torchvision ImageNet classifiers (Table 1 (i)–(vi); MobileNetV3 is not said to be Large or
Small, we take Large)."""

CAM_LAYERS = {"resnet18": "layer4", "vgg16": "features.29", "alexnet": "features.11", "googlenet": "inception5b",
              "mobilenet_v3_large": "features.16", "densenet161": "features.norm5"}
"""The last convolutional block of each torchvision model, read by Grad-CAM and Excitation Backprop (spec §5.7:
e.g. ResNet ``layer4``); our own models name theirs ``cam_layer``."""
_LAYER_METHODS = ("gradcam", "layercam", "excitation_backprop")


@dataclass(frozen=True)
class Setup:
    """The models and images of a TRACE notebook: ``models`` ``{name: eval-mode model}``, images ``x``
    ``(N, C, H, W)`` and labels ``y`` ``(N,)`` shared by all models, and ``info`` (one row per model: its test
    accuracy and where it comes from)."""

    models: dict[str, nn.Module]
    x: torch.Tensor
    y: torch.Tensor
    info: pd.DataFrame
    layers: dict[str, str | None]


def first_by_filename(dataset, n: int) -> list[int]:
    """Indices of the ``n`` samples of an ImageFolder-like dataset (``.samples`` of (path, class)) with the smallest
    file names: for ILSVRC2012 val (``ILSVRC2012_val_00000001.JPEG`` …) the paper's "first n validation images",
    whatever class folder they were sorted into."""
    n = _validate.positive_int(n, "n")
    samples = getattr(dataset, "samples", None)
    if samples is None:
        raise TypeError(f"dataset must have .samples (path, class) like torchvision's ImageFolder, got "
                        f"{type(dataset).__name__}")
    names = [Path(path).name for path, _ in samples]
    return sorted(range(len(names)), key=lambda i: (names[i], i))[:n]


def _torchvision_entry(entry) -> tuple[str, dict]:
    """A ``torchvision_models`` entry → (name, keyword arguments of :func:`faithlab.models.pretrained`)."""
    if isinstance(entry, str):
        return entry, {"weights": "DEFAULT"}
    if isinstance(entry, Mapping) and {"name", "weights_path"} <= set(entry) \
            and set(entry) <= {"name", "weights_path", "config"}:
        return str(entry["name"]), {"weights_path": Path(entry["weights_path"]).expanduser(),
                                    **dict(entry.get("config") or {})}
    raise ValueError("torchvision_models entries must be torchvision model names or {'name', 'weights_path', "
                     f"'config'?}} dicts, got {entry!r:.200}")


def setup(settings: list[dict], *, n_images: int, image_size: int = 28, r: float = 0.45,
          dataset: str = "canvas_digits", data_dir: str | None = None, torchvision_models: tuple = (),
          seed: int = 0, device: str | torch.device = "cpu") -> Setup:
    """Stand-ins or the paper's models, and the images they are all evaluated on.

    Default (``torchvision_models`` empty): coloured canvas digits of ``image_size``² pixels whose foreground
    covers a fraction ``r``; one classifier per entry of ``settings`` (``{"name", "model", "width",
    "n_epochs"}``, trained by :func:`faithlab.recipes.canvas_classifier`, cached), all evaluated on the first
    ``n_images`` test digits; accuracy on the whole test split. With ``torchvision_models`` (the ``paper``
    profile, e.g. :data:`PAPER_MODELS`): their ImageNet weights from the local torch-hub cache and the first
    ``n_images`` images of ``dataset`` (``"imagenet_val"``) by file name; accuracy on those images. An entry may
    also be ``{"name": <torchvision name>, "weights_path": <state dict file>, "config": {builder arguments}}``
    (weights read with ``weights_only``, e.g. the ``paper-dry`` profile's random ones); Grad-CAM's layer follows
    the name (:data:`CAM_LAYERS`).
    """
    n_images = _validate.positive_int(n_images, "n_images")
    trained: dict[str, nn.Module] = {}
    if not torchvision_models:
        if not settings or not all(isinstance(s, dict) and {"name", "model", "width", "n_epochs"} <= set(s)
                                   for s in settings):
            raise ValueError("settings must be a non-empty list of {'name', 'model', 'width', 'n_epochs'} dicts, got "
                             f"{settings!r:.200}")
        rows = []
        for s in settings:
            model, _, _, test = recipes.canvas_classifier(image_size=image_size, r=r, color=True,
                                                          model_name=s["model"], width=s["width"],
                                                          n_epochs=s["n_epochs"], seed=seed, device=device)
            trained[s["name"]] = model
            rows.append({"model": s["name"], "architecture": s["model"], "width": s["width"],
                         "epochs": s["n_epochs"], "test accuracy": train.evaluate(model, test)["accuracy"]})
        x, y = test.x[:n_images], test.y[:n_images]
    else:
        ds = data.load(dataset, split="test", data_dir=data_dir)
        chosen = first_by_filename(ds, n_images)
        x = torch.stack([ds[i][0] for i in chosen])
        y = torch.tensor([int(ds[i][1]) for i in chosen])
        rows = []
        for entry in torchvision_models:
            name, how = _torchvision_entry(entry)
            model = models.pretrained(name, **how).to(device).eval()
            trained[name] = model
            rows.append({"model": name, "architecture": name,
                         "weights": str(how.get("weights_path", "torchvision DEFAULT")),
                         "test accuracy": train.evaluate(model, data.TensorData(x, y), device=device)["accuracy"]})
    layers = {name: CAM_LAYERS.get(name) for name in trained} if torchvision_models else dict.fromkeys(trained)
    return Setup(trained, x.to(device), y.to(device), pd.DataFrame(rows), layers)


def method_maps(model: Callable, x: torch.Tensor, target: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]],
                *, batch_size: int, generator: torch.Generator | int, layer: str | None = None
                ) -> dict[str, torch.Tensor]:
    """Pixel attribution maps ``{name: (B, C|1, H, W)}`` of ``methods`` (``{name: (explainer, options, reduce)}``,
    e.g. :data:`TABLE1_METHODS`) for the ``target`` class. generator: seeds the random methods (RISE, Random);
    one generator is shared in the order of ``methods``, so the maps depend on that order and the seed only.
    layer: the layer Grad-CAM and Excitation Backprop read (``Setup.layers``; None: the model's ``cam_layer``)."""
    g = _validate.generator(generator, why="for the random methods")
    return {name: explainers.explain(model, x, target, method=method, batch_size=batch_size, generator=g,
                                     **({"layer": layer} if layer is not None and method in _LAYER_METHODS else {}),
                                     **options)
            for name, (method, options, _) in methods.items()}


def trajectories(maps: Mapping[str, torch.Tensor], x: torch.Tensor, methods: Mapping[str, tuple[str, dict, str]], *,
                 edge: int) -> dict[str, torch.Tensor]:
    """Bottom-to-top patch trajectories ``{name: (B, t)}`` of pixel maps on an ``edge``×``edge`` grid, each map
    pooled with its method's reduce rule (``methods[name][2]``) and sorted ascending, ties by the smaller patch
    id (``metrics.trace.trajectory_from_map``)."""
    return {name: trace.trajectory_from_map(a, x, edge=edge, reduce=methods[name][2]) for name, a in maps.items()}


def deletion_frames(model: Callable, x: torch.Tensor, target: torch.Tensor, trajs: Mapping[str, torch.Tensor], *,
                    edge: int, reference: Reference, outputs: tuple[str, ...] = ("prob", "logit"),
                    batch_size: int = 256, labels: Mapping[str, object] | None = None, points: int | None = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LeRF and MoRF deletion curves of every trajectory under one reference, for each output f.

    trajs: ``{name: (B, t)}`` bottom-to-top trajectories (methods or TRACE searches). labels: constant columns
    added to both frames (e.g. ``{"model": ..., "reference": "zero"}``). points: None evaluates every one of the
    t + 1 curve points (``metrics.trace.lerf_morf_details``); an int evaluates ``points`` evenly spaced deleted
    fractions 0, 1/(points − 1), …, 1 instead (``perturb.removal_curve`` along the same orders, ⌊f·t⌉ patches
    deleted), for pixel-level curves where t + 1 points would cost too much. Returns ``(scores, curves)``: scores
    has one row per name × output × image with ``LeRF`` and ``MoRF`` (plain sums over the evaluated points: with
    ``points=None`` the paper's Table 1 scale) and ``LeRF − MoRF``; curves one row per name × output × criterion ×
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
                d = trace.lerf_morf_details(model, x, tau, edge=edge, reference=reference, output=output,
                                            target=target, batch_size=batch_size)
                deleted = None
            else:
                d = {c: perturb.removal_curve(model, x, None, fractions.tolist(), order=order, units=units,
                                              reference=reference, output=output, target=target,
                                              batch_size=batch_size)
                     for c, order in (("lerf", tau), ("morf", tau.flip(1)))}
                d.update(lerf_auc=d["lerf"].sum(1), morf_auc=d["morf"].sum(1), lerf_morf=d["lerf"].sum(1) - d["morf"].sum(1))
                deleted = torch.round(fractions * t).long()
            base = {**labels, "method": name, "output": OUTPUT_NAMES.get(output, output)}
            scores.append(pd.DataFrame({**base, "image": images.numpy(), "LeRF": d["lerf_auc"].cpu().numpy(),
                                        "MoRF": d["morf_auc"].cpu().numpy(),
                                        "LeRF − MoRF": d["lerf_morf"].cpu().numpy()}))
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


def search_frames(searches: Mapping[str, trace.Search], *, labels: Mapping[str, object] | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The LeRF/MoRF curves a set of searches already evaluated (``{name: Search}``, e.g. TRACE-SA-Le−Mo, -Le, -Mo
    and Greedy-Le, -Mo), laid out as :func:`deletion_frames` does (without an ``output`` column: add it to
    ``labels``). No model call: each Search carries both curves of its trajectory."""
    labels = dict(labels or {})
    scores, curves = [], []
    for name, s in searches.items():
        base = {**labels, "method": name}
        le, mo = s.lerf.detach().cpu().double(), s.morf.detach().cpu().double()
        scores.append(pd.DataFrame({**base, "image": range(le.shape[0]), "LeRF": le.sum(1).numpy(),
                                    "MoRF": mo.sum(1).numpy(), "LeRF − MoRF": (le.sum(1) - mo.sum(1)).numpy()}))
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
            c = trace.random_deletion_curves(model, x, edge=edge, n_orders=n_orders, generator=g, reference=ref,
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


def beats_all(per_image: Mapping[str, object], *, target: str, higher_is_better: bool = True, seed: int = 0
              ) -> tuple[verdicts.Verdict, pd.DataFrame]:
    """Paired bootstrap over images of ``per_image[target]`` against every other entry (``fl.verdicts.compare``)
    → the verdict of "target beats them all" (``from_comparison``) and the comparison table."""
    comparisons = verdicts.compare(per_image, target=target, higher_is_better=higher_is_better, seed=seed)
    return verdicts.from_comparison(comparisons), pd.DataFrame(verdicts.comparison_table(comparisons, target=target))

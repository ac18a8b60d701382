"""TRACE's set-up table (spec §5.1–5.7): the paper's set-up against the executed notebooks' parameters."""

from __future__ import annotations

from collections.abc import Mapping

from faithlab.metrics import search
from faithlab.study.papers.setup import Setting
from faithlab.study.papers.trace.inputs import TraceModels

__all__ = ["SETUP"]


_TORCHVISION_NAMES = {"resnet18": "ResNet-18", "vgg16": "VGG-16", "alexnet": "AlexNet", "googlenet": "GoogLeNet",
                      "mobilenet_v3_large": "MobileNetV3", "densenet161": "DenseNet-161"}


def _names(names) -> str:
    """Model names in a set-up table: all of them, or the first two and a count when they would not fit a cell."""
    names = list(names)
    text = ", ".join(names)
    return text if len(text) <= 60 else f"{', '.join(names[:2])}, … ({len(names)} models)"


def _models(p: Mapping) -> str:
    """The explained models in a set-up table: torchvision's ImageNet CNNs, or the canvas models trained here."""
    if p["torchvision_models"]:
        return _names(_TORCHVISION_NAMES.get(m, m) for m in
                      (m["name"] if isinstance(m, Mapping) else m for m in p["torchvision_models"]))
    return _names(s["name"] for s in _canvas(p).settings)


def _canvas(p: Mapping) -> TraceModels:
    """The canvas stand-ins a notebook's parameters set (its ``trace_models`` overrides)."""
    return TraceModels(**p["trace_models"])


def _side(p: Mapping) -> int:
    """The image side in pixels: 224 for the ImageNet models, else the canvases' ``image_size``."""
    return 224 if p["torchvision_models"] else _canvas(p).image_size


def _images(p: Mapping, per_replica: int) -> str:
    """The images of a claim: per replica and pooled over the trained replicas (or just the count, for one model)."""
    replicas = p.get("replicas", 1)
    return (f"{per_replica} images" if replicas == 1 else
            f"{replicas * per_replica} images ({replicas} replicas × {per_replica})")


def _data(p: Mapping) -> str:
    """The images in a set-up table: ImageNet, or the coloured canvases with the digit's share of the pixels."""
    if p["torchvision_models"]:
        return f"{'ImageNet-1k val' if p['dataset'] == 'imagenet_val' else p['dataset']}, {_side(p)} px"
    return f"coloured digit canvases, {_side(p)} px (digit {_canvas(p).r * 100:g} %)"


SETUP: tuple[Setting, ...] = (
    Setting("data", "ImageNet-1k val, 224 px", "trace/table1", _data),
    Setting("models", "ResNet-18, VGG-16, AlexNet, GoogLeNet, … (6 CNNs)", "trace/table1", _models),
    Setting("training", "torchvision's pre-trained weights", "trace/table1",
            lambda p: "torchvision weights" if p["torchvision_models"] else
            "trained here: " + ", ".join(str(s["n_epochs"]) for s in _canvas(p).settings) + " epochs"),
    Setting("images (Table 1)", "not stated (Fig. 2b: the first 200)", "trace/table1",
            lambda p: f"{p['n_images']}" if p.get("replicas", 1) == 1 else
            f"{p['replicas'] * p['n_images']} per model ({p['replicas']} trained replicas × {p['n_images']})"),
    Setting("patches t", "7×7 = 49 (32 px patches)", "trace/table1",
            lambda p: f"{p['edge']}×{p['edge']} = {p['edge'] ** 2} ({_side(p) // p['edge']} px patches)"),
    Setting("TRACE-SA schedule", "K = 5,000, T0 = 0.1 (-p) / 2 (-y), η = 0.999", "trace/table1",
            lambda p: f"K = {p['iterations']:,}, T0 = {search.T0['prob']:g} (-p) / "
                      f"{search.T0['logit']:g} (-y), η = {p['eta']:g}"),
    Setting("references", "zero, mean, blur (31×31, σ = 56)", "trace/table1",
            lambda p: ", ".join(p["references"]) + (f" ({p['blur_kernel']}×{p['blur_kernel']}, σ = {p['blur_sigma']:g})"
                                                     if "blur" in p["references"] else "")),
    Setting("methods", "Grad, GC, IBA, RISE, EP, EBP, IG, IxG", "trace/table1", lambda p: ", ".join(p["methods"])),
    Setting("RISE masks, EP iterations, IG steps", "not stated in the text", "trace/table1",
            "{rise_masks:,}, {ep_iterations:,}, {ig_steps}"),
    Setting("complete search (Fig. 2a)", "t = 4×4 = 16, all 2^16 subsets", "trace/searches",
            lambda p: f"t = {p['cs_edge']}×{p['cs_edge']} = {p['cs_edge'] ** 2}, "
                      f"{_images(p, min(p['cs_images'], p['n_images']))}, SA K = {p['cs_iterations']:,}"),
    Setting("cross-test (Fig. 3b)", "t = 7×7 = 49, K = 5,000", "trace/searches",
            lambda p: f"t = {p['edge']}×{p['edge']} = {p['edge'] ** 2}, {_images(p, p['n_images'])}, "
                      f"SA K = {p['iterations']:,}"),
    Setting("random deletion test (Fig. 4)", "ResNet-18, 6 patch sizes, several random orders", "trace/random_test",
            lambda p: f"sides {'/'.join(str(_side(p) // e) for e in p['edges'])} px, {p['n_orders']} orders, "
                      f"{_images(p, p['n_images'])}"),
)
"""The chapter's set-up table, paper (spec §5.1–5.7) against ours (the executed notebooks' parameters)."""

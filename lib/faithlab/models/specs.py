"""Your model from a spec and a weights file: :func:`load` builds ``"torchvision:<name>"``, ``"timm:<name>"`` or a
zoo architecture, infers the number of classes from the weights' classifier, loads them weights-only and converts
a timm ViT so that the attention explainers can read it."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch
from torch import nn

from faithlab import _validate
from faithlab.models.loading import load_tensors, timm_vit_problems, vit_from_timm
from faithlab.models.names import build_architecture, is_vit, parse_spec, skeleton
from faithlab.models.transforms import preprocessing

def _classifier_key(model: nn.Module, source: str) -> str | None:
    """The state-dict key of the classifier's weight (one row per class): timm's ``get_classifier()``, torchvision's
    ``fc`` / ``classifier`` / ``heads.head`` (its last Linear or Conv2d when a Sequential); None when there is none."""
    head = None
    if source == "timm" and hasattr(model, "get_classifier"):
        head = model.get_classifier()
    else:
        for attr in ("fc", "classifier", "heads.head", "head"):
            try:
                head = model.get_submodule(attr)
                break
            except AttributeError:
                continue
    if head is not None and not isinstance(head, (nn.Linear, nn.Conv2d)):
        layers = [m for m in head.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
        head = layers[-1] if layers else None
    if head is None:
        return None
    return next((f"{name}.weight" for name, m in model.named_modules() if m is head), None)


def _load_state(model: nn.Module, state: dict, spec: str, path: Path, head: str | None) -> None:
    """``model.load_state_dict(state)``, or a ValueError naming ``weights``, the first mismatching keys and the fix."""
    own = model.state_dict()
    if all(k.startswith("module.") for k in state) and not any(k.startswith("module.") for k in own):
        state = {k[len("module."):]: v for k, v in state.items()}  # saved from nn.DataParallel
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [f"{k}: file {tuple(state[k].shape)} vs model {tuple(own[k].shape)}" for k in own
              if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        parts = [f"{what} {keys[:5]}{' …' if len(keys) > 5 else ''}" for what, keys in
                 (("missing keys", missing), ("unexpected keys", unexpected), ("shape mismatches", shapes)) if keys]
        if head is not None and not missing and not unexpected and all(s.startswith(head.rsplit(".", 1)[0])
                                                                        for s in shapes):
            fix = f"pass n_classes={state[head].shape[0]} (the rows of {head} in the file)"
        else:
            fix = (f"pass the spec of the architecture these weights were saved from (not {spec!r}) and its kwargs, "
                   "or a file saved with torch.save(model.state_dict(), path)")
        raise ValueError(f"weights {str(path)!r} do not fit {spec}: {'; '.join(parts)}; {fix}")
    model.load_state_dict(state)


def load(spec: str, *, weights: str | os.PathLike | None = None, n_classes: int | None = None,
         explainable: bool = True, **kwargs) -> nn.Module:
    """Your model by ``spec``, with ``weights`` from a local file, in eval mode on the CPU.

    spec: ``"torchvision:<name>"`` (``torchvision.models.list_models()``), ``"timm:<name>"`` (``timm.list_models()``,
    a ``name.tag`` too) or a zoo name of :func:`faithlab.models.available` (``kwargs`` are its config; for torchvision
    and timm they go to ``get_model`` / ``create_model``). An unknown spec raises ValueError listing the forms and
    close names.
    weights: a local state dict or checkpoint (under "state_dict" / "model"), read by :func:`load_tensors`
    (safetensors or ``torch.load(weights_only=True)``; a ``module.`` prefix from DataParallel is dropped). None:
    **random initialisation** from the global RNG (seed it first with ``torch.manual_seed`` to repeat it), no
    published weights (use :func:`pretrained` for those). A state dict that does not fit raises ValueError naming
    ``weights``, the first mismatching keys and what to pass.
    n_classes: the classifier's outputs; None: the rows of the classifier's weight in ``weights`` when the file has
    one (a ResNet-18 state dict with a 2-row ``fc.weight`` builds ``resnet18(num_classes=2)``), else the
    architecture's default (1000 for torchvision/timm). The classifier is timm's ``get_classifier()``, torchvision's
    ``fc`` / ``classifier`` / ``heads.head``, a zoo model's ``fc`` / ``classifier`` / ``head``.
    explainable: convert a timm ``VisionTransformer`` with :func:`vit_from_timm` (same logits), so the attention and
    relevance explainers can read its attention; a ViT it cannot convert exactly stays as it is, with a warning.
    The model carries ``faithlab_spec`` and ``faithlab_preprocess`` (what :func:`preprocessing` returns for it; None
    for a model that takes no images).
    """
    source, name = parse_spec(spec)
    if not isinstance(explainable, bool):
        raise TypeError(f"explainable must be True or False, got {explainable!r}")
    if n_classes is not None:
        n_classes = _validate.positive_int(n_classes, "n_classes")
        clash = "n_classes" if source == "zoo" else "num_classes"
        if clash in kwargs:
            raise ValueError(f"pass the number of classes once: n_classes={n_classes} and {clash}={kwargs[clash]}")
    state, path, head = None, None, None
    if weights is not None:
        if not isinstance(weights, (str, os.PathLike)):
            raise TypeError(f"weights must be a file path or None, got {type(weights).__name__}")
        path = Path(weights).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"weights {str(path)!r} does not exist (a state dict file is expected)")
        state = load_tensors(path, "weights")
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise ValueError(f"weights {str(path)!r} is not a state dict of tensors; save it with "
                             "torch.save(model.state_dict(), path)")
        head = _classifier_key(skeleton(source, name, kwargs), source)
        given = "n_classes" if source == "zoo" else "num_classes"
        if n_classes is None and given not in kwargs and head is not None and head in state:
            n_classes = int(state[head].shape[0])
    model = build_architecture(source, name, n_classes, kwargs)
    if state is not None:
        _load_state(model, state, spec, path, head)
    model = model.eval()
    try:
        prep = preprocessing(model if source != "torchvision" else spec)
    except ValueError:  # not an image classifier (a torchvision detector, a sequence model): no image transform
        prep = None
    if explainable:
        model = _explainable(model, spec)
    model.faithlab_spec = spec
    model.faithlab_preprocess = prep
    return model


def _explainable(model: nn.Module, spec: str) -> nn.Module:
    """A timm ViT converted by :func:`vit_from_timm` when it converts exactly; any other model unchanged (a warning for
    a ViT that stays unconverted: the attention and relevance explainers will not work on it)."""
    module = type(model).__module__
    if module.startswith("timm."):
        from timm.models.vision_transformer import VisionTransformer

        if isinstance(model, VisionTransformer):
            problems = timm_vit_problems(model)
            if not problems:
                return vit_from_timm(model)
            warnings.warn(f"{spec} stays a timm model (the attention and relevance explainers will not run on it): it "
                          f"cannot be converted exactly to faithlab.models.ViT, which needs {'; '.join(problems)}",
                          stacklevel=3)
    elif module.startswith("torchvision.") and is_vit(model):
        warnings.warn(f"{spec} stays a torchvision model (the attention and relevance explainers will not run on it): "
                      "only timm ViTs are converted; load the timm equivalent with fl.models.load('timm:<name>')",
                      stacklevel=3)
    return model

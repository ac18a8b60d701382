"""Fuzz of ``faithlab.explainers.explain`` with bad input (issue #11): every registered method crossed with the
classes of bad input that apply to it. Each case raises a ValueError or TypeError whose message names the argument
the caller passed (never captum's AssertionError or a raw torch error), and a model with NaN/inf logits never gives
a map back. Tiny models (a Linear on 1×4×4 images, a conv net with a CAM layer, a one-block ViT): a few seconds.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable

import pytest
import torch
from torch import nn

import faithlab as fl
from faithlab import explainers as ex

B, C, H, W, K = 4, 1, 4, 4, 3
METHODS = [m for m in ex.available() if not m.startswith("test_")]  # test files may register their own
VIT = set(ex.METHODS)
CAM = {"gradcam", "layercam", "iba"}  # the methods that read a layer of the model (the _Cam model's cam_layer)
RANDOM = {"random", "smoothgrad", "smoothgrad_sq", "sg_sq_ig", "expected_gradients", "rise", "iba"}
# the ViT methods that rebuild the logits from the weights (never call model.forward)
REBUILDS_LOGITS = {"conservative_lrp", *ex.LRP_METHODS}


class _Cam(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(C, 2, 3, padding=1)
        self.head = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, K))
        self.cam_layer = self.conv

    def forward(self, x):
        return self.head(self.conv(x))


def _model(method: str) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        if method in VIT:
            return fl.models.build("vit", image_size=H, patch_size=2, in_channels=C, n_classes=K, dim=8, depth=1,
                                   heads=2).eval()
        if method in CAM:
            return _Cam().eval()
        return nn.Sequential(nn.Flatten(), nn.Linear(C * H * W, K)).eval()


def _x() -> torch.Tensor:
    return torch.randn(B, C, H, W, generator=torch.Generator().manual_seed(1))


def _y() -> torch.Tensor:
    return torch.tensor([0, 1, 2, 0])


GOOD_OPTIONS: dict[str, dict] = {
    "integrated_gradients": {"n_steps": 4},
    "smoothgrad": {"nt_samples": 2},
    "rise": {"n_masks": 4},
    "extremal_perturbation": {"max_iter": 2},
    "smoothgrad_sq": {"nt_samples": 2},
    "sg_sq_ig": {"nt_samples": 2, "n_steps": 3},
    "expected_gradients": {"background": torch.zeros(2, C, H, W), "n_samples": 2},
    "occlusion": {"window": 2},
    "xrai": {"base": "saliency"},  # PAIR's segmentation runs at 224 × 224 whatever the size: ~0.7 s per image
    # the bottleneck's statistics of the _Cam model's layer (any copy of it: the bad models keep the layer)
    "iba": {"statistics": ex.iba_statistics(_model("iba"), torch.randn(16, C, H, W, generator=torch.Generator()
                                                                       .manual_seed(2))), "steps": 2, "copies": 2},
}


def _call(method: str, model=None, x=None, target=None, **overrides):
    options = {**GOOD_OPTIONS.get(method, {}), **overrides}
    generator = options.pop("generator", 0 if method in RANDOM else None)
    return ex.explain(_model(method) if model is None else model, _x() if x is None else x,
                      _y() if target is None else target, method=method, generator=generator, **options)


def _with_forward(model: nn.Module, fn: Callable) -> nn.Module:
    """The same model (its attributes kept: cam_layer, the ViT's parts) whose logits z on inputs x become
    ``fn(x, z)``."""
    changed = copy.deepcopy(model)
    cls = type(model)
    changed.__class__ = type(f"Changed{cls.__name__}", (cls,), {"forward": lambda self, x: fn(x, cls.forward(self, x))})
    return changed


def _nan_logits(model: nn.Module) -> nn.Module:
    """NaN logits, also where a ViT method rebuilds them from the weights: the last Linear's bias is NaN."""
    changed = copy.deepcopy(model)
    last = [m for m in changed.modules() if isinstance(m, nn.Linear)][-1]
    with torch.no_grad():
        last.bias.fill_(float("nan"))
    return changed


# ------------------------------------------------------------------------------------------- bad-input classes
# A class is (method -> keyword arguments of _call, the argument the message must name, method -> whether the
# class applies to it).
Class = tuple[Callable[[str], dict], str, Callable[[str], bool]]


def _forward_called(method: str) -> bool:
    # those never call model.forward: its output is not theirs to check (random never uses the model at all)
    return method not in REBUILDS_LOGITS and method != "random"


def _bad_classes() -> dict[str, Class]:
    classes: dict[str, Class] = {}

    def every(name, kwargs: Callable[[str], dict], argument: str, applies: Callable[[str], bool] = lambda m: True):
        classes[name] = (kwargs, argument, applies)

    # target
    every("target_negative_int", lambda m: {"target": -1}, "target")
    every("target_negative_entry", lambda m: {"target": torch.tensor([0, -1, 2, 0])}, "target")
    every("target_too_large_int", lambda m: {"target": K}, "target", _forward_called)  # the width is the model's
    every("target_too_large_entry", lambda m: {"target": torch.tensor([0, 1, 7, 0])}, "target", _forward_called)
    every("target_huge_int", lambda m: {"target": 2**70}, "target")
    every("target_float", lambda m: {"target": 1.0}, "target")
    every("target_float_tensor", lambda m: {"target": _y().float()}, "target")
    every("target_bool_tensor", lambda m: {"target": _y() > 0}, "target")
    every("target_wrong_length", lambda m: {"target": _y()[:3]}, "target")
    every("target_2d", lambda m: {"target": _y()[:, None]}, "target")
    every("target_string", lambda m: {"target": "cat"}, "target")
    # x
    every("x_0d", lambda m: {"x": torch.tensor(1.0)}, "x")
    every("x_1d", lambda m: {"x": _x().flatten()[:B]}, "x")
    every("x_int_images", lambda m: {"x": (_x() * 10).long()}, "x")
    every("x_float64_with_float32_model", lambda m: {"x": _x().double()}, "x")
    every("x_float16_with_float32_model", lambda m: {"x": _x().half()}, "x")
    every("x_complex", lambda m: {"x": _x().to(torch.complex64)}, "x")
    every("x_bool", lambda m: {"x": _x() > 0}, "x")
    every("x_list", lambda m: {"x": _x().tolist()}, "x")
    every("x_empty", lambda m: {"x": _x()[:0], "target": _y()[:0]}, "x")
    every("x_nan", lambda m: {"x": _x().index_put_((torch.tensor([1]),), torch.tensor(float("nan")))}, "x")
    every("x_inf", lambda m: {"x": _x().index_put_((torch.tensor([2]),), torch.tensor(float("inf")))}, "x")
    # model
    every("model_on_other_device", lambda m: {"model": _model(m).to("meta")}, "model")
    every("model_in_training_mode", lambda m: {"model": _model(m).train()}, "model")
    every("model_not_callable", lambda m: {"model": "resnet"}, "model")
    forward_called = _forward_called
    every("model_returns_1d", lambda m: {"model": _with_forward(_model(m), lambda x, z: z[:, 0])}, "model",
          forward_called)
    every("model_returns_3d", lambda m: {"model": _with_forward(_model(m), lambda x, z: z[:, None])}, "model",
          forward_called)
    every("model_returns_tuple", lambda m: {"model": _with_forward(_model(m), lambda x, z: (z, z))}, "model",
          forward_called)
    every("model_returns_int_logits", lambda m: {"model": _with_forward(_model(m), lambda x, z: (z * 100).long())},
          "model", forward_called)
    every("model_returns_too_few_rows", lambda m: {"model": _with_forward(_model(m), lambda x, z: z[:1])}, "model",
          forward_called)
    # the explain call itself
    every("batch_size_zero", lambda m: {"batch_size": 0}, "batch_size")
    every("batch_size_float", lambda m: {"batch_size": 2.5}, "batch_size")
    every("unknown_option", lambda m: {"colour": "red"}, "colour")
    every("generator_overflow", lambda m: {"generator": 2**70}, "generator")
    every("generator_below_range", lambda m: {"generator": -(2**63) - 1}, "generator")
    every("generator_string", lambda m: {"generator": "seed"}, "generator")
    every("generator_missing", lambda m: {"generator": None}, "generator", lambda m: m in RANDOM)
    # method options (captum's AssertionErrors, NaN references, bad numbers)
    ig = {"integrated_gradients", "sg_sq_ig"}
    sg = {"smoothgrad", "smoothgrad_sq", "sg_sq_ig"}
    for bad, value in (("unknown", "simpson"), ("none", None), ("list", ["gausslegendre"])):
        every(f"integration_{bad}", lambda m, v=value: {"integration": v}, "integration", lambda m: m in ig)
    every("n_steps_zero", lambda m: {"n_steps": 0}, "n_steps", lambda m: m in ig)
    every("n_steps_one_riemann", lambda m: {"n_steps": 1, "integration": "riemann_trapezoid"}, "n_steps",
          lambda m: m in ig)
    for bad, value in (("nan", float("nan")), ("inf", float("inf")), ("name", "mean"),
                       ("tensor_nan", torch.full((1, C, H, W), float("nan"))),
                       ("tensor_inf", torch.full((B, C, H, W), float("-inf"))),
                       ("tensor_shape", torch.zeros(1, C, H + 1, W))):
        every(f"baseline_{bad}", lambda m, v=value: {"baseline": v}, "baseline", lambda m: m in ig)
    every("baseline_one_nan_row", lambda m: {"baseline": torch.zeros(B, C, H, W).index_put_(
        (torch.tensor([3]),), torch.tensor(float("nan")))}, "baseline", lambda m: m in ig)
    for bad, value in (("zero", 0), ("negative", -3), ("float", 2.0), ("string", "10")):
        every(f"nt_samples_{bad}", lambda m, v=value: {"nt_samples": v}, "nt_samples", lambda m: m in sg)
    for bad, value in (("nan", float("nan")), ("inf", float("inf")), ("negative", -1.0), ("string", "1"),
                       ("none", None), ("bool", True), ("list", [1.0])):
        every(f"stdevs_{bad}", lambda m, v=value: {"stdevs": v}, "stdevs", lambda m: m in sg)
    every("smoothgrad_base_unknown", lambda m: {"base": "xrai"}, "base",
          lambda m: m in {"smoothgrad", "smoothgrad_sq"})
    every("smoothgrad_base_option_unknown", lambda m: {"n_step": 3}, "n_step", lambda m: m in sg)
    eg = {"expected_gradients"}
    for bad, value in (("nan", torch.full((2, C, H, W), float("nan"))),
                       ("inf_entry", torch.zeros(2, C, H, W).index_fill_(0, torch.tensor([1]), float("inf"))),
                       ("int", torch.zeros(2, C, H, W, dtype=torch.int64)), ("shape", torch.zeros(2, C, H, W + 1)),
                       ("empty", torch.zeros(0, C, H, W)), ("list", [[0.0]]), ("0d", torch.tensor(0.0))):
        every(f"background_{bad}", lambda m, v=value: {"background": v}, "background", lambda m: m in eg)
    every("n_samples_zero", lambda m: {"n_samples": 0}, "n_samples", lambda m: m in eg)
    occ = {"occlusion"}
    every("window_larger_than_image", lambda m: {"window": H + 1}, "window", lambda m: m in occ)
    every("window_zero", lambda m: {"window": 0}, "window", lambda m: m in occ)
    every("stride_larger_than_window", lambda m: {"window": 2, "stride": 3}, "stride", lambda m: m in occ)
    every("stride_zero", lambda m: {"stride": 0}, "stride", lambda m: m in occ)
    for bad, value in (("string", "black"), ("nan", float("nan")), ("none", None)):
        every(f"occlusion_baseline_{bad}", lambda m, v=value: {"baseline": v}, "baseline", lambda m: m in occ)
    every("layer_unknown_name", lambda m: {"layer": "nope"}, "layer", lambda m: m in CAM)
    every("layer_not_a_module", lambda m: {"layer": 3}, "layer", lambda m: m in CAM)
    every("layer_missing", lambda m: {"model": nn.Sequential(nn.Flatten(), nn.Linear(C * H * W, K)).eval()},
          "layer", lambda m: m in CAM)
    every("upsample_unknown", lambda m: {"upsample": "cubic"}, "upsample",
          lambda m: m in VIT and m not in {"conservative_lrp", "lrp"})
    every("layers_unknown", lambda m: {"layers": "first"}, "layers", lambda m: m == "transformer_mm")
    every("vit_method_on_a_cnn", lambda m: {"model": _Cam().eval()}, "model", lambda m: m in VIT)
    xr = {"xrai"}
    for bad, value in (("unknown", "nope"), ("itself", "xrai"), ("none", None), ("list", ["saliency"])):
        every(f"xrai_base_{bad}", lambda m, v=value: {"base": v}, "base", lambda m: m in xr)
    every("xrai_base_option_unknown", lambda m: {"n_step": 3}, "n_step", lambda m: m in xr)
    every("xrai_random_base_without_generator", lambda m: {"base": "random"}, "generator", lambda m: m in xr)
    for bad, value in (("nan", float("nan")), ("above_one", 1.5), ("negative", -0.1), ("string", "all")):
        every(f"area_threshold_{bad}", lambda m, v=value: {"area_threshold": v}, "area_threshold", lambda m: m in xr)
    for bad, value in (("unknown", "slow"), ("none", None), ("list", ["full"])):
        every(f"algorithm_{bad}", lambda m, v=value: {"algorithm": v}, "algorithm", lambda m: m in xr)
    every("xrai_not_images", lambda m: {"x": _x().flatten(1)}, "x", lambda m: m in xr)
    return classes


BAD = _bad_classes()
CASES = [(method, bad) for method in METHODS for bad, (_, _, applies) in BAD.items() if applies(method)]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("method", "bad"), CASES)
def test_bad_input_raises_naming_the_argument(method, bad):
    kwargs, argument, _ = BAD[bad]
    with pytest.raises((ValueError, TypeError)) as err:
        _call(method, **kwargs(method))
    assert re.search(rf"\b{argument}\b", str(err.value)), f"{method}/{bad}: no {argument!r} in: {err.value}"


def test_the_fuzz_covers_every_method_and_enough_cases():
    assert {method for method, _ in CASES} == set(METHODS)
    assert len(METHODS) >= 21 and len(CASES) > 850, (len(METHODS), len(CASES))


# ----------------------------------------------------------------------------------------- non-finite logits
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["nan_bias", "inf_logits", "nan_around_sample_2"])
@pytest.mark.parametrize("method", METHODS)
def test_non_finite_logits_never_give_a_map(method, kind):
    """NaN/inf logits raise naming the samples of x. ``nan_around_sample_2``: NaN wherever the first pixel exceeds
    10, i.e. on sample 2 of x (first pixel 50) and on most points a method builds from it."""
    model, x = _model(method), _x()
    if method == "random":
        pytest.skip("random never uses the model: there are no logits to check")
    if kind == "nan_bias":
        model = _nan_logits(model)
    elif method in REBUILDS_LOGITS:
        pytest.skip("never calls model.forward: covered by nan_bias, which changes the weights")
    elif kind == "inf_logits":
        model = _with_forward(model, lambda inputs, z: z + float("inf"))
    else:
        x[2, 0, 0, 0] = 50.0
        model = _with_forward(model, lambda inputs, z: torch.where(inputs.flatten(1)[:, :1] > 10, torch.nan, z))
    with pytest.raises(ValueError, match=r"NaN or inf") as err:
        _call(method, model=model, x=x)
    message = str(err.value)
    assert "sample(s) [" in message and "model returned NaN or inf logits" in message, message
    if kind == "nan_around_sample_2":
        assert "on x for sample(s) [2]" in message, message

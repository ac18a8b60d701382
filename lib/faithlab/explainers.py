"""Attribution maps over captum, batched and seeded, plus ground-truth maps and the degraded-explainer protocol.

``explain(model, x, target, method=...)`` returns attributions shaped like x (CAM methods: ``(B, 1, H, W)`` for
images, ``(B, T, 1)`` for series; ``random``: x with one channel; token ids ``(B, L)`` → ``(B, L)``, the embedding
attribution summed over the embedding dim). Inputs are processed ``batch_size`` at a time and no forward pass sees
more than ``max(batch_size, n_samples)`` inputs, so results do not depend on ``batch_size``.

Randomness (SmoothGrad noise, expected-gradients references, random maps, ``degrade``) comes only from the
``generator`` argument (a ``torch.Generator`` or an int seed). Numbers are drawn as float64 uniforms on the
generator's device, then moved to the inputs' device: a CPU generator gives identical maps on every device.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from captum.attr import (
    Deconvolution,
    GuidedBackprop,
    InputXGradient,
    IntegratedGradients,
    LayerGradCam,
    Occlusion,
    Saliency,
)
from torch import nn

from faithlab import _validate
from faithlab.models import FromEmbeddings

__all__ = ["available", "explain", "ground_truth", "degrade"]

Baseline = str | float | torch.Tensor
_Method = Callable[..., torch.Tensor]
_METHODS: dict[str, _Method] = {}
_RANDOM = {"smoothgrad", "smoothgrad_sq", "sg_sq_ig", "expected_gradients", "random"}
_PER_SAMPLE_OPTIONS = ("baseline",)  # tensor options that may hold one row per input and are chunked with x


def _register(name: str):
    def deco(fn: _Method) -> _Method:
        _METHODS[name] = fn
        return fn

    return deco


def available() -> list[str]:
    """Names accepted by ``explain(method=...)``."""
    return sorted(_METHODS)


# ------------------------------------------------------------------------------------------------- helpers
def _uniform(shape: tuple[int, ...], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float64 U[0, 1) drawn on the generator's device, then moved to ``device``."""
    return torch.rand(shape, generator=generator, device=generator.device, dtype=torch.float64).to(device)


def _normal(shape: tuple[int, ...], generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    """Standard normal draws. torch.randn's CPU kernel fills blocks of 16 (Box-Muller), so randn(a) then randn(b)
    differs from randn(a + b) and the noise would depend on how the batch is chunked. Uniform draws are consumed
    one by one, so we map uniforms through the inverse normal CDF instead."""
    u = _uniform(shape, generator, like.device).clamp_min(torch.finfo(torch.float64).tiny)
    return torch.special.ndtri(u).to(like.dtype)


def _chunks(size: int, fn: Callable[..., torch.Tensor], *rows: torch.Tensor | None) -> torch.Tensor:
    """Apply ``fn`` to consecutive slices of ``size`` rows of every tensor in ``rows`` (None passes through)."""
    n = rows[0].shape[0]
    return torch.cat([fn(*(None if r is None else r[i : i + size] for r in rows)) for i in range(0, n, size)])


def _leaf(t: torch.Tensor) -> torch.Tensor:
    """A detached copy that requires grad (captum then needs no warning to set it)."""
    return t.detach().requires_grad_(True)


def _repeat(t: torch.Tensor | None, n: int) -> torch.Tensor | None:
    return None if t is None else t.repeat_interleave(n, dim=0)


def _args(extra: torch.Tensor | None) -> tuple | None:
    return None if extra is None else (extra,)


def _baseline(x: torch.Tensor, baseline: Baseline) -> torch.Tensor:
    """IG reference: "zero", "min"/"max" (per-sample minimum/maximum of x), a number, or a tensor broadcastable to x."""
    x = x.detach()
    if isinstance(baseline, torch.Tensor):
        try:
            return baseline.to(x).expand_as(x)
        except RuntimeError:
            raise ValueError(f"baseline of shape {tuple(baseline.shape)} does not broadcast to x {tuple(x.shape)}") from None
    if baseline in ("min", "max"):
        flat = x.flatten(1)
        value = flat.amin(1) if baseline == "min" else flat.amax(1)
        return value.view(-1, *[1] * (x.ndim - 1)).expand_as(x)
    if baseline == "zero":
        return torch.zeros_like(x)
    if isinstance(baseline, (int, float)) and not isinstance(baseline, bool):
        return torch.full_like(x, float(baseline))
    raise ValueError(f"baseline must be 'zero', 'min', 'max', a number or a tensor, got {baseline!r}")


def _layer(model: nn.Module, layer: nn.Module | str | None) -> nn.Module:
    """Resolve a CAM layer: a module, a dotted submodule name, or ``model.cam_layer`` when ``layer`` is None."""
    if layer is None:
        layer = getattr(model, "cam_layer", None)
        if layer is None:
            raise ValueError("layer is required: model has no cam_layer attribute; pass a module or a dotted name")
    if isinstance(layer, str):
        try:
            return model.get_submodule(layer)
        except AttributeError:
            raise ValueError(f"layer {layer!r} is not a submodule of model") from None
    if not isinstance(layer, nn.Module):
        raise TypeError(f"layer must be an nn.Module or a dotted name, got {type(layer).__name__}")
    return layer


def _cam_output(cam: torch.Tensor, x: torch.Tensor, normalize: bool) -> torch.Tensor:
    """Upsample a (b, 1, h, w) / (b, 1, t) CAM to x's size (bilinear / linear), optionally min-max to [0, 1]."""
    if x.ndim == 4 and cam.ndim == 4:
        out = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    elif x.ndim == 3 and cam.ndim == 3:  # series (B, T, C): the conv layer is (B, C', T')
        out = F.interpolate(cam, size=x.shape[1], mode="linear", align_corners=False).transpose(1, 2)
    else:
        raise ValueError(f"CAM methods need images (B, C, H, W) or series (B, T, C) with a matching conv layer; "
                         f"got x {tuple(x.shape)} and a layer map {tuple(cam.shape)}")
    if normalize:  # pytorch-grad-cam's scaling: (cam - min) / (max - min + 1e-7), per sample
        flat = out.flatten(1)
        lo, hi = flat.amin(1), flat.amax(1)
        shape = (-1, *[1] * (out.ndim - 1))
        out = (out - lo.view(shape)) / (hi - lo + 1e-7).view(shape)
    return out


# ------------------------------------------------------------------------------------------------- methods
# Every method: fn(model, x, target, extra, *, batch_size, generator, **options) → attributions of the rows given.
# ``extra`` is None or a per-row tensor passed to the model as a second argument (the pad mask of token inputs).


@_register("saliency")
def _saliency(model, x, target, extra, *, batch_size, generator):
    """|∂f_target/∂x| (Simonyan et al.)."""
    return Saliency(model).attribute(x, target=target, abs=True, additional_forward_args=_args(extra))


@_register("gradient")
def _gradient(model, x, target, extra, *, batch_size, generator):
    """Signed gradient ∂f_target/∂x ("BP" in Few-class Fidelity)."""
    return Saliency(model).attribute(x, target=target, abs=False, additional_forward_args=_args(extra))


@_register("input_x_gradient")
def _input_x_gradient(model, x, target, extra, *, batch_size, generator):
    """x ⊙ ∂f_target/∂x."""
    return InputXGradient(model).attribute(x, target=target, additional_forward_args=_args(extra))


@_register("integrated_gradients")
def _integrated_gradients(model, x, target, extra, *, batch_size, generator, baseline: Baseline = "zero",
                          n_steps: int = 50, integration: str = "gausslegendre"):
    """Integrated gradients from ``baseline``; ``integration`` is captum's ``method`` (e.g. "riemann_trapezoid")."""
    n = _validate.positive_int(n_steps, "n_steps")
    attr = IntegratedGradients(model).attribute(
        x, baselines=_baseline(x, baseline), target=target, additional_forward_args=_args(extra), n_steps=n,
        method=integration, internal_batch_size=max(batch_size, len(x)))
    # captum 0.9's trapezoid weights are 1/n (halved at the ends) on linspace(0, 1, n), summing to (n−1)/n, not 1;
    # rescale so that completeness holds (the true trapezoid rule uses 1/(n−1)).
    return attr * (n / (n - 1)) if integration == "riemann_trapezoid" else attr


@_register("smoothgrad")
def _smoothgrad(model, x, target, extra, *, batch_size, generator, base: str = "saliency", nt_samples: int = 10,
                stdevs: float = 1.0, relative: bool = False, square: bool = False, **base_options):
    """SmoothGrad: mean of ``base`` maps over ``nt_samples`` copies x + N(0, σ²), σ = ``stdevs`` (times the sample's
    max − min when ``relative``); ``square`` averages squared maps (SmoothGrad², captum's "smoothgrad_sq").

    captum's NoiseTunnel draws its noise from the global RNG; we draw it from ``generator`` and call the base
    captum method on the noisy copies ourselves (same estimator, seeded)."""
    if base not in ("saliency", "integrated_gradients"):
        raise ValueError(f"base must be 'saliency' or 'integrated_gradients', got {base!r}")
    n = _validate.positive_int(nt_samples, "nt_samples")
    if float(stdevs) < 0:
        raise ValueError(f"stdevs must be >= 0, got {stdevs!r}")
    base_fn = _METHODS[base]
    # captum keeps the IG baseline fixed across noisy copies: resolve it on the clean inputs.
    ref = _baseline(x, base_options.pop("baseline", "zero")) if base == "integrated_gradients" else None

    def noisy_maps(xc, tc, ec, rc):
        b = len(xc)
        sigma = float(stdevs)
        if relative:
            flat = xc.flatten(1)
            sigma = (sigma * (flat.amax(1) - flat.amin(1))).view(b, 1, *[1] * (xc.ndim - 1))
        noisy = _leaf((xc.unsqueeze(1) + sigma * _normal((b, n, *xc.shape[1:]), generator, xc)).flatten(0, 1))
        options = base_options if rc is None else {**base_options, "baseline": _repeat(rc, n)}
        maps = base_fn(model, noisy, _repeat(tc, n), _repeat(ec, n), batch_size=batch_size, generator=None, **options)
        maps = maps.unflatten(0, (b, n))
        return (maps * maps if square else maps).mean(1)

    return _chunks(max(1, batch_size // n), noisy_maps, x, target, extra, ref)


@_register("smoothgrad_sq")
def _smoothgrad_sq(model, x, target, extra, *, batch_size, generator, **options):
    """SmoothGrad² (mean of squared maps), options as "smoothgrad"."""
    return _smoothgrad(model, x, target, extra, batch_size=batch_size, generator=generator, square=True, **options)


@_register("sg_sq_ig")
def _sg_sq_ig(model, x, target, extra, *, batch_size, generator, nt_samples: int = 10, stdevs: float = 1.0,
              **ig_options):
    """F-Fidelity's "SG-SQ" (spec §1.8): NoiseTunnel(IG, nt_type='smoothgrad_sq', nt_samples=10, stdevs=1)."""
    return _smoothgrad(model, x, target, extra, batch_size=batch_size, generator=generator, base="integrated_gradients",
                       nt_samples=nt_samples, stdevs=stdevs, square=True, **ig_options)


@_register("guided_backprop")
def _guided_backprop(model, x, target, extra, *, batch_size, generator):
    """Guided backpropagation (needs nn.ReLU modules, not functional relu)."""
    return GuidedBackprop(model).attribute(x, target=target, additional_forward_args=_args(extra))


@_register("deconvolution")
def _deconvolution(model, x, target, extra, *, batch_size, generator):
    """Deconvolution (Zeiler & Fergus; needs nn.ReLU modules)."""
    return Deconvolution(model).attribute(x, target=target, additional_forward_args=_args(extra))


@_register("expected_gradients")
def _expected_gradients(model, x, target, extra, *, batch_size, generator, background: torch.Tensor,
                        n_samples: int = 20):
    """Expected gradients (captum's GradientShap without noise; SHAP GradientExplainer): mean over ``n_samples``
    draws of ∂f(r + α(x − r)) ⊙ (x − r), r uniform from ``background`` (N, *x.shape[1:]), α ~ U(0, 1).

    captum's GradientShap draws r and α from the global RNG; here both come from ``generator``."""
    bg = _validate.tensor(background, "background", floating=True)
    if bg.shape[1:] != x.shape[1:]:
        raise ValueError(f"background must be shaped (N, {', '.join(map(str, x.shape[1:]))}), got {tuple(bg.shape)}")
    bg = bg.to(x)
    n = _validate.positive_int(n_samples, "n_samples")
    saliency = Saliency(model)

    def sampled_maps(xc, tc, ec):
        b = len(xc)
        u = _uniform((b, n, 2), generator, xc.device)  # one contiguous block per input: chunking-invariant
        ref = bg[(u[..., 0] * len(bg)).long().clamp_max(len(bg) - 1)]
        alpha = u[..., 1].to(xc.dtype).view(b, n, *[1] * (xc.ndim - 1))
        delta = xc.detach().unsqueeze(1) - ref
        points = _leaf((ref + alpha * delta).flatten(0, 1))
        grads = saliency.attribute(points, target=_repeat(tc, n), abs=False,
                                   additional_forward_args=_args(_repeat(ec, n)))
        return (grads.unflatten(0, (b, n)) * delta).mean(1)

    return _chunks(max(1, batch_size // n), sampled_maps, x, target, extra)


@_register("gradcam")
def _gradcam(model, x, target, extra, *, batch_size, generator, layer: nn.Module | str | None = None,
             normalize: bool = False):
    """Grad-CAM (captum LayerGradCam) at ``layer`` (default ``model.cam_layer``): ReLU(Σ_k mean(∂f/∂A_k) A_k),
    upsampled to the input; ``normalize`` min-max scales each map to [0, 1] as pytorch-grad-cam does."""
    cam = LayerGradCam(model, _layer(model, layer)).attribute(x, target=target, additional_forward_args=_args(extra),
                                                              relu_attributions=True)
    return _cam_output(cam, x, normalize)


@_register("layercam")
def _layercam(model, x, target, extra, *, batch_size, generator, layer: nn.Module | str | None = None,
              normalize: bool = False):
    """LayerCAM (Jiang et al. 2021): ReLU(Σ_k ReLU(∂f/∂A_k) ⊙ A_k), upsampled; options as "gradcam".

    captum 0.9 has no LayerCAM and its layer methods cannot put a ReLU on the gradient alone, so we read the
    layer's activation with a forward hook and its gradient with autograd."""
    module = _layer(model, layer)
    x = _leaf(x)  # so the activation has a gradient even when the weights are frozen
    store: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, _i, out: store.append(out))
    try:
        with torch.enable_grad():
            out = model(x) if extra is None else model(x, extra)
            (grad,) = torch.autograd.grad(out.gather(1, target[:, None]).sum(), store[0])
    finally:
        handle.remove()
    cam = (grad.clamp_min(0) * store[0]).sum(1, keepdim=True).clamp_min(0).detach()
    return _cam_output(cam, x, normalize)


@_register("occlusion")
def _occlusion(model, x, target, extra, *, batch_size, generator, window: int = 4, stride: int | None = None,
               baseline: float = 0.0):
    """Occlusion (captum): drop in f_target when a ``window``-wide square (images) / span (series, embeddings) of
    all channels is set to ``baseline``, averaged over the windows covering each element."""
    w = _validate.positive_int(window, "window")
    s = w if stride is None else _validate.positive_int(stride, "stride")
    if x.ndim == 4:
        shape, strides = (x.shape[1], w, w), (x.shape[1], s, s)
    elif x.ndim == 3:
        shape, strides = (w, x.shape[2]), (s, x.shape[2])
    else:
        shape, strides = (w,), (s,)
    return Occlusion(model).attribute(x, sliding_window_shapes=shape, strides=strides, baselines=float(baseline),
                                      target=target, additional_forward_args=_args(extra),
                                      perturbations_per_eval=max(1, batch_size // len(x)))


@_register("random")
def _random(model, x, target, extra, *, batch_size, generator):
    """U[0, 1) map with one channel: images (B, 1, H, W), series/embeddings (B, T, 1), 2-D inputs (B, F)."""
    shape = list(x.shape)
    if x.ndim == 4:
        shape[1] = 1
    elif x.ndim == 3:
        shape[2] = 1
    return _uniform(tuple(shape), generator, x.device).to(x.dtype)


# ----------------------------------------------------------------------------------------------------- API
def _target(target: int | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if isinstance(target, int) and not isinstance(target, bool):
        return torch.full((len(x),), target, dtype=torch.int64, device=x.device)
    if not isinstance(target, torch.Tensor) or target.is_floating_point() or target.dtype == torch.bool:
        raise TypeError(f"target must be an int or an integer tensor of shape (B,), got {target!r:.80}")
    if target.ndim == 0:
        target = target.expand(len(x))
    _validate.tensor(target, "target", ndim=1)
    _validate.batch_match(x, target, "x", "target")
    return target.to(device=x.device, dtype=torch.int64)


def _check_options(method: str, fn: _Method, options: dict) -> None:
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # forwarded to a base method, which checks them
    accepted = [k for k, p in params.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("batch_size", "generator")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for method {method!r}; accepted: {accepted}")


def explain(model: nn.Module, x: torch.Tensor, target: int | torch.Tensor, method: str = "integrated_gradients",
            batch_size: int = 64, generator: torch.Generator | int | None = None, **options) -> torch.Tensor:
    """Attribution maps of ``model``'s ``target`` logit for inputs ``x``.

    model: eval-mode module returning logits. x: images (B, C, H, W), series (B, T, C), any float (B, ...), or
    token ids (B, L) int64 — then the model must define ``embed`` and ``forward_embeddings`` (see
    ``faithlab.models``), attributions are computed on the embeddings (IG baseline "zero" = zero embeddings, i.e.
    the pad token's) and summed over the embedding dim. target: int or (B,) int64. method: one of
    :func:`available`; ``options`` are the method's keyword options (see each method's docstring, e.g.
    ``baseline``, ``n_steps``, ``nt_samples``, ``stdevs``, ``layer``, ``normalize``, ``window``, ``background``).
    batch_size: inputs per chunk (memory bound). generator: ``torch.Generator`` or int seed, required by
    smoothgrad*, sg_sq_ig, expected_gradients and random. Returns a float tensor (see the module docstring for
    shapes); higher = more important (signed methods: sign gives the direction).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {available()}, got {method!r}")
    fn = _METHODS[method]
    _check_options(method, fn, options)
    _validate.eval_mode(model)
    _validate.tensor(x, "x")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    if method in _RANDOM:
        generator = _validate.generator(generator, why=f"by method {method!r}")
    target = _target(target, x)
    tokens = not x.is_floating_point()
    if tokens:
        if x.ndim != 2 or not (hasattr(model, "embed") and hasattr(model, "forward_embeddings")):
            raise TypeError("x holds token ids: it must be (B, L) int64 and model must define embed and "
                            f"forward_embeddings; got x {tuple(x.shape)} {x.dtype}, model {type(model).__name__}")
        with torch.no_grad():
            options = {k: model.embed(v) if isinstance(v, torch.Tensor) and not v.is_floating_point() else v
                       for k, v in options.items()}
            inputs, extra = model.embed(x).detach(), x != 0
        net = FromEmbeddings(model).eval()
    else:
        _validate.finite(x, "x")
        inputs, extra, net = x, None, model
    rows = {k: v for k, v in options.items() if k in _PER_SAMPLE_OPTIONS and isinstance(v, torch.Tensor)
            and v.ndim == inputs.ndim and v.shape[0] == len(x) > 1}
    fixed = {k: v for k, v in options.items() if k not in rows}

    def run(xc, tc, ec, *row_values):
        per_row = dict(zip(rows, row_values))
        return fn(net, _leaf(xc), tc, ec, batch_size=batch_size, generator=generator, **fixed, **per_row).detach()

    out = _chunks(batch_size, run, inputs, target, extra, *rows.values())
    return out.sum(-1) if tokens else out


def ground_truth(mask: torch.Tensor, x: torch.Tensor | None = None) -> torch.Tensor:
    """Attribution from a dataset's ground-truth mask: 1.0 inside the relevant region, 0.0 outside.

    mask: bool/0-1 (B, H, W) images, (B, T) series or (B, L) tokens. x (optional): the inputs; the mask is checked
    against x's batch and layout and returned on x's device in x's float dtype. Returns a float tensor shaped
    like mask. Ties are left as they are (perturb.order breaks them).
    """
    _validate.tensor(mask, "mask", ndim=(2, 3))
    if x is None:
        return mask.to(torch.get_default_dtype())
    _validate.tensor(x, "x")
    _validate.batch_match(x, mask, "x", "mask")
    layout = {4: tuple(x.shape[2:]), 3: tuple(x.shape[1:2]), 2: tuple(x.shape[1:])}.get(x.ndim)
    if tuple(mask.shape[1:]) != layout:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not match the layout of x {tuple(x.shape)}")
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    return mask.to(device=x.device, dtype=dtype)


def degrade(scores: torch.Tensor, xi: float, generator: torch.Generator | int) -> torch.Tensor:
    """F-Fidelity's degraded explainer (spec §1.8): per sample, permute the values at ⌊ξ·n⌋ positions chosen
    uniformly without replacement (n = elements of one flattened map).

    scores: (B, ...) per-element scores. xi: noise level in [0, 1] (0 → unchanged, 1 → a full random permutation
    with the same values). Returns a tensor shaped like scores.
    """
    _validate.tensor(scores, "scores")
    if scores.ndim < 2:
        raise ValueError(f"scores must be (B, ...) with one map per sample, got shape {tuple(scores.shape)}")
    xi = _validate.fraction(xi, "xi")
    generator = _validate.generator(generator)
    flat = scores.flatten(1)
    n = flat.shape[1]
    k = math.floor(xi * n + 1e-9)  # guard ⌊ξ·n⌋ against float error, e.g. 0.29 · 100 = 28.999…
    keys = _uniform(tuple(flat.shape), generator, flat.device)
    chosen = keys.argsort(dim=1, stable=True)[:, :k]  # a uniform random subset, in uniform random order
    # Writing the values found along that random order back in the subset's sorted order permutes them uniformly.
    return flat.scatter(1, chosen.sort(dim=1).values, flat.gather(1, chosen)).view_as(scores)


# ViT explainers (attention, relevance propagation) live in their own modules and register themselves here
# (imported last: they use _register).
from faithlab import vit_explainers as _vit_explainers, vit_lrp as _vit_lrp  # noqa: E402

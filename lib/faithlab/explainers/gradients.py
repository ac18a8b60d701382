"""Gradient-based and perturbation explainers over captum, registered with :func:`faithlab.explainers.explain`:
saliency, gradient, input × gradient, integrated gradients, SmoothGrad (², and F-Fidelity's SG-SQ IG), guided
backpropagation, deconvolution, expected gradients, occlusion, and the random baseline map. Noise comes from the
``generator`` (captum's NoiseTunnel and GradientShap draw from the global RNG, so we draw it and call the base
captum method ourselves)."""

from __future__ import annotations

import contextlib
import numbers
import warnings

import torch
from captum.attr import Deconvolution, GuidedBackprop, InputXGradient, IntegratedGradients, Occlusion, Saliency

from faithlab import _validate
from faithlab.explainers.core import (SampleSeeds, check_options, chunks, forward_args, get_method, leaf, normal,
                                      real, register, repeat_rows, uniform)

Baseline = str | float | torch.Tensor
_INTEGRATIONS = ("gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid")  # captum's


def _baseline(x: torch.Tensor, baseline: Baseline) -> torch.Tensor:
    """IG reference: "zero", "min"/"max" (per-sample minimum/maximum of x), a number, or a tensor broadcastable to x."""
    x = x.detach()
    if isinstance(baseline, torch.Tensor):
        _validate.finite(baseline, "baseline")
        try:
            return baseline.to(x).expand_as(x)
        except RuntimeError:
            raise ValueError(f"baseline of shape {tuple(baseline.shape)} does not broadcast to x {tuple(x.shape)}") from None
    if isinstance(baseline, str) and baseline in ("min", "max"):
        flat = x.flatten(1)
        value = flat.amin(1) if baseline == "min" else flat.amax(1)
        return value.view(-1, *[1] * (x.ndim - 1)).expand_as(x)
    if isinstance(baseline, str) and baseline == "zero":
        return torch.zeros_like(x)
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool):
        return torch.full_like(x, real(baseline, "baseline"))
    raise ValueError(f"baseline must be 'zero', 'min', 'max', a number or a tensor, got {baseline!r}")


@register("saliency")
def _saliency(model, x, target, extra, *, batch_size, generator):
    """|∂f_target/∂x| (Simonyan et al.)."""
    return Saliency(model).attribute(x, target=target, abs=True, additional_forward_args=forward_args(extra))


@register("gradient")
def _gradient(model, x, target, extra, *, batch_size, generator):
    """Signed gradient ∂f_target/∂x ("BP" in Few-class Fidelity)."""
    return Saliency(model).attribute(x, target=target, abs=False, additional_forward_args=forward_args(extra))


@register("input_x_gradient")
def _input_x_gradient(model, x, target, extra, *, batch_size, generator):
    """x ⊙ ∂f_target/∂x."""
    return InputXGradient(model).attribute(x, target=target, additional_forward_args=forward_args(extra))


@register("integrated_gradients")
def _integrated_gradients(model, x, target, extra, *, batch_size, generator, baseline: Baseline = "zero",
                          n_steps: int = 50, integration: str = "gausslegendre"):
    """Integrated gradients from ``baseline`` (finite); ``integration`` is captum's ``method``, one of
    ``_INTEGRATIONS`` (the Riemann rules need ``n_steps`` >= 2)."""
    if not isinstance(integration, str) or integration not in _INTEGRATIONS:
        raise ValueError(f"integration must be one of {_INTEGRATIONS}, got {integration!r}")
    n = _validate.positive_int(n_steps, "n_steps")
    if n < 2 and integration != "gausslegendre":
        raise ValueError(f"n_steps must be >= 2 for integration {integration!r}, got {n}")
    attr = IntegratedGradients(model).attribute(
        x, baselines=_baseline(x, baseline), target=target, additional_forward_args=forward_args(extra), n_steps=n,
        method=integration, internal_batch_size=max(batch_size, len(x)))
    # captum 0.9's trapezoid weights are 1/n (halved at the ends) on linspace(0, 1, n), summing to (n−1)/n, not 1;
    # rescale so that completeness holds (the true trapezoid rule uses 1/(n−1)).
    return attr * (n / (n - 1)) if integration == "riemann_trapezoid" else attr


_NOT_A_BASE = ("smoothgrad", "smoothgrad_sq", "sg_sq_ig", "xrai", "random")


@register("smoothgrad", random=True)
def _smoothgrad(model, x, target, extra, *, batch_size, generator, base: str = "saliency", nt_samples: int = 10,
                stdevs: float = 1.0, relative: bool = False, square: bool = False, **base_options):
    """SmoothGrad: mean of ``base`` maps over ``nt_samples`` copies x + N(0, σ²), σ = ``stdevs`` (times the sample's
    max − min when ``relative``; a finite number >= 0); ``square`` averages squared maps (SmoothGrad², captum's
    "smoothgrad_sq"). ``base``: any registered method that is not itself a noise or region alteration (e.g.
    "saliency", "gradient", "deconvolution", "integrated_gradients", "expected_gradients", "gradcam": Few-class
    Fidelity applies SG/SG² to every method, spec §2.5); a random base draws from the same generator after the
    noise (with ``sample_seeds``: from streams keyed by the row and the noisy copy). Other options go to ``base`` and
    are checked against its own.

    captum's NoiseTunnel draws its noise from the global RNG; we draw it from ``generator`` and call the base
    method on the noisy copies ourselves (same estimator, seeded)."""
    from faithlab.explainers.core import RANDOM, available

    if not isinstance(base, str) or base in _NOT_A_BASE or base not in available():
        raise ValueError(f"base must name a registered method other than {_NOT_A_BASE} (one of "
                         f"{[m for m in available() if m not in _NOT_A_BASE]}), got {base!r}")
    n = _validate.positive_int(nt_samples, "nt_samples")
    stdevs = real(stdevs, "stdevs", minimum=0)
    base_fn = get_method(base)
    where = (f"SmoothGrad with base {base!r} (its own options: nt_samples, stdevs, relative, base; the base's are "
             "listed)")
    check_options(base, base_fn, base_options, where)
    # captum keeps the IG baseline fixed across noisy copies: resolve it on the clean inputs.
    ref = _baseline(x, base_options.pop("baseline", "zero")) if base == "integrated_gradients" else None

    def noisy_maps(xc, tc, ec, rc, gc):
        b = len(xc)
        sigma = stdevs
        if relative:
            flat = xc.flatten(1)
            sigma = (sigma * (flat.amax(1) - flat.amin(1))).view(b, 1, *[1] * (xc.ndim - 1))
        noisy = leaf((xc.unsqueeze(1) + sigma * normal((b, n, *xc.shape[1:]), gc, xc)).flatten(0, 1))
        options = base_options if rc is None else {**base_options, "baseline": repeat_rows(rc, n)}
        base_gc = None  # a random base draws after the noise: from the same generator, or per row and copy
        if base in RANDOM:
            base_gc = gc.repeat_interleave(n) if isinstance(gc, SampleSeeds) else gc
        maps = base_fn(model, noisy, repeat_rows(tc, n), repeat_rows(ec, n), batch_size=batch_size,
                       generator=base_gc, **options)
        maps = maps.unflatten(0, (b, n))
        return (maps * maps if square else maps).mean(1)

    return chunks(max(1, batch_size // n), noisy_maps, x, target, extra, ref, generator)


@register("smoothgrad_sq", random=True)
def _smoothgrad_sq(model, x, target, extra, *, batch_size, generator, **options):
    """SmoothGrad² (mean of squared maps), options as "smoothgrad"."""
    return _smoothgrad(model, x, target, extra, batch_size=batch_size, generator=generator, square=True, **options)


@register("sg_sq_ig", random=True)
def _sg_sq_ig(model, x, target, extra, *, batch_size, generator, nt_samples: int = 10, stdevs: float = 1.0,
              **ig_options):
    """F-Fidelity's "SG-SQ" (spec §1.8): NoiseTunnel(IG, nt_type='smoothgrad_sq', nt_samples=10, stdevs=1)."""
    return _smoothgrad(model, x, target, extra, batch_size=batch_size, generator=generator, base="integrated_gradients",
                       nt_samples=nt_samples, stdevs=stdevs, square=True, **ig_options)


@contextlib.contextmanager
def _relu_hooks_notice_off():
    """Ignore the one notice captum's GuidedBackprop and Deconvolution give on every ``attribute`` call.

    Both (``ModifiedReluGradientAttribution.attribute``) warn "Setting backward hooks on ReLU activations. The hooks
    will be removed after the attribution is finished" unconditionally: overriding the ReLU gradients with hooks is
    what the two methods are, no argument avoids it, and captum removes the hooks itself. The notice names no
    problem of the call, yet it printed captum's installed path on the book's pages. Only that message, from captum's
    module, is ignored, and only around these calls; every other warning still shows.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Setting backward hooks on ReLU activations", category=UserWarning,
                                module=r"captum\.attr\._core\.guided_backprop_deconvnet")
        yield


@register("guided_backprop")
def _guided_backprop(model, x, target, extra, *, batch_size, generator):
    """Guided backpropagation (needs nn.ReLU modules, not functional relu)."""
    with _relu_hooks_notice_off():
        return GuidedBackprop(model).attribute(x, target=target, additional_forward_args=forward_args(extra))


@register("deconvolution")
def _deconvolution(model, x, target, extra, *, batch_size, generator):
    """Deconvolution (Zeiler & Fergus; needs nn.ReLU modules)."""
    with _relu_hooks_notice_off():
        return Deconvolution(model).attribute(x, target=target, additional_forward_args=forward_args(extra))


@register("expected_gradients", random=True)
def _expected_gradients(model, x, target, extra, *, batch_size, generator, background: torch.Tensor,
                        n_samples: int = 20):
    """Expected gradients (captum's GradientShap without noise; SHAP GradientExplainer): mean over ``n_samples``
    draws of ∂f(r + α(x − r)) ⊙ (x − r), r uniform from ``background`` (N, *x.shape[1:]), α ~ U(0, 1).

    captum's GradientShap draws r and α from the global RNG; here both come from ``generator``."""
    bg = _validate.tensor(background, "background", floating=True)
    if bg.ndim == 0 or bg.shape[1:] != x.shape[1:]:
        raise ValueError(f"background must be shaped (N, {', '.join(map(str, x.shape[1:]))}), got {tuple(bg.shape)}")
    _validate.finite(bg, "background")
    bg = bg.to(x)
    n = _validate.positive_int(n_samples, "n_samples")
    saliency = Saliency(model)

    def sampled_maps(xc, tc, ec, gc):
        b = len(xc)
        u = uniform((b, n, 2), gc, xc.device)  # one contiguous block per input: chunking-invariant
        ref = bg[(u[..., 0] * len(bg)).long().clamp_max(len(bg) - 1)]
        alpha = u[..., 1].to(xc.dtype).view(b, n, *[1] * (xc.ndim - 1))
        delta = xc.detach().unsqueeze(1) - ref
        points = leaf((ref + alpha * delta).flatten(0, 1))
        grads = saliency.attribute(points, target=repeat_rows(tc, n), abs=False,
                                   additional_forward_args=forward_args(repeat_rows(ec, n)))
        return (grads.unflatten(0, (b, n)) * delta).mean(1)

    return chunks(max(1, batch_size // n), sampled_maps, x, target, extra, generator)


@register("occlusion")
def _occlusion(model, x, target, extra, *, batch_size, generator, window: int = 4, stride: int | None = None,
               baseline: float = 0.0):
    """Occlusion (captum): drop in f_target when a ``window``-wide square (images) / span (series, embeddings) of
    all channels is set to ``baseline`` (a finite number), averaged over the windows covering each element.
    ``window`` may not exceed the input; ``stride`` (default ``window``) may not exceed ``window``."""
    w = _validate.positive_int(window, "window")
    s = w if stride is None else _validate.positive_int(stride, "stride")
    value = real(baseline, "baseline")
    if x.ndim == 4:
        shape, strides, sizes = (x.shape[1], w, w), (x.shape[1], s, s), tuple(x.shape[2:])
    elif x.ndim == 3:
        shape, strides, sizes = (w, x.shape[2]), (s, x.shape[2]), tuple(x.shape[1:2])
    elif x.ndim == 2:
        shape, strides, sizes = (w,), (s,), tuple(x.shape[1:])
    else:
        raise ValueError(f"occlusion needs x as images (B, C, H, W), series (B, T, C) or vectors (B, F), got shape "
                         f"{tuple(x.shape)}")
    if w > min(sizes):
        raise ValueError(f"window {w} is larger than the input {sizes}; it must be at most {min(sizes)}")
    if s > w and w < max(sizes):  # captum: windows that do not cover the input may not skip elements
        raise ValueError(f"stride {s} is larger than window {w}; it must be at most {w}")
    return Occlusion(model).attribute(x, sliding_window_shapes=shape, strides=strides, baselines=value,
                                      target=target, additional_forward_args=forward_args(extra),
                                      perturbations_per_eval=max(1, batch_size // len(x)))


@register("random", random=True)
def _random(model, x, target, extra, *, batch_size, generator):
    """U[0, 1) map with one channel: images (B, 1, H, W), series/embeddings (B, T, 1), 2-D inputs (B, F)."""
    shape = list(x.shape)
    if x.ndim == 4:
        shape[1] = 1
    elif x.ndim == 3:
        shape[2] = 1
    return uniform(tuple(shape), generator, x.device).to(x.dtype)

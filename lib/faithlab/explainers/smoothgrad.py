"""SmoothGrad (Smilkov et al. 2017) over any other registered method, registered with
:func:`faithlab.explainers.explain` in its three variants: ``smoothgrad`` (the mean map over noisy copies),
``smoothgrad_sq`` (SmoothGrad², the mean of squared maps) and ``sg_sq_ig`` (F-Fidelity's SG-SQ: SmoothGrad² over
integrated gradients). The noise comes from the ``generator``: captum's NoiseTunnel draws from the global RNG, so we
draw it and call the base method ourselves."""

from __future__ import annotations

from faithlab import _validate
from faithlab.explainers._common import real, reference, repeat_rows
from faithlab.explainers.core import (RANDOM, SampleSeeds, available, check_options, chunks, get_method, leaf, normal,
                                      register)

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
    ref = reference(x, base_options.pop("baseline", "zero")) if base == "integrated_gradients" else None

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

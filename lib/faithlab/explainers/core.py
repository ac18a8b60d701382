"""The explainer registry and ``explain``: attribution maps over captum, batched and seeded.

``explain(model, x, target, method=...)`` returns attributions shaped like x (CAM methods: ``(B, 1, H, W)`` for
images, ``(B, T, 1)`` for series; ``random``: x with one channel; token ids ``(B, L)`` → ``(B, L)``, the embedding
attribution summed over the embedding dim). Inputs are processed ``batch_size`` at a time and no forward pass sees
more than ``max(batch_size, n_samples)`` inputs, so results do not depend on ``batch_size``.

Randomness (SmoothGrad noise, expected-gradients references, random maps, ``degrade``) comes only from the
``generator`` argument (a ``torch.Generator`` or an int seed). Numbers are drawn as float64 uniforms on the
generator's device, then moved to the inputs' device: a CPU generator gives identical maps on every device.

A method is a function ``fn(model, x, target, extra, *, batch_size, generator, **options)`` returning the
attributions of the rows it is given (``extra``: None, or a per-row tensor passed to the model as a second argument,
the pad mask of token inputs). :func:`register` adds one under a name; the method modules of this package
(gradients, cams, vit_attention, vit_lrp) register theirs when ``faithlab.explainers`` is imported.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import nn

from faithlab import _validate
from faithlab.models import FromEmbeddings

__all__ = ["register", "available", "explain"]

Method = Callable[..., torch.Tensor]
_METHODS: dict[str, Method] = {}
_RANDOM: set[str] = set()
_PER_SAMPLE_OPTIONS = ("baseline",)  # tensor options that may hold one row per input and are chunked with x


def register(name: str, *, random: bool = False) -> Callable[[Method], Method]:
    """Decorator adding ``fn(model, x, target, extra, *, batch_size, generator, **options)`` to :func:`explain` under
    ``name``. Its keyword-only options become ``explain``'s options for that method (unknown ones are refused);
    ``random=True`` makes ``explain`` require a ``generator``. A name can be registered once."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in _METHODS:
        raise ValueError(f"name {name!r} is already registered; pick another name")

    def deco(fn: Method) -> Method:
        if not callable(fn):
            raise TypeError(f"register({name!r}) needs a function, got {type(fn).__name__}")
        _METHODS[name] = fn
        if random:
            _RANDOM.add(name)
        return fn

    return deco


def available() -> list[str]:
    """Names accepted by ``explain(method=...)``."""
    return sorted(_METHODS)


def get_method(name: str) -> Method:
    """The registered function of ``name`` (for methods built on another, e.g. SmoothGrad on IG)."""
    if name not in _METHODS:
        raise ValueError(f"method must be one of {available()}, got {name!r}")
    return _METHODS[name]


# ---------------------------------------------------------------------------------- helpers shared by methods
def uniform(shape: tuple[int, ...], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """Float64 U[0, 1) drawn on the generator's device, then moved to ``device``."""
    return torch.rand(shape, generator=generator, device=generator.device, dtype=torch.float64).to(device)


def normal(shape: tuple[int, ...], generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    """Standard normal draws. torch.randn's CPU kernel fills blocks of 16 (Box-Muller), so randn(a) then randn(b)
    differs from randn(a + b) and the noise would depend on how the batch is chunked. Uniform draws are consumed
    one by one, so we map uniforms through the inverse normal CDF instead."""
    u = uniform(shape, generator, like.device).clamp_min(torch.finfo(torch.float64).tiny)
    return torch.special.ndtri(u).to(like.dtype)


def chunks(size: int, fn: Callable[..., torch.Tensor], *rows: torch.Tensor | None) -> torch.Tensor:
    """Apply ``fn`` to consecutive slices of ``size`` rows of every tensor in ``rows`` (None passes through)."""
    n = rows[0].shape[0]
    return torch.cat([fn(*(None if r is None else r[i : i + size] for r in rows)) for i in range(0, n, size)])


def leaf(t: torch.Tensor) -> torch.Tensor:
    """A detached copy that requires grad (captum then needs no warning to set it)."""
    return t.detach().requires_grad_(True)


def repeat_rows(t: torch.Tensor | None, n: int) -> torch.Tensor | None:
    """Each row of t repeated n times in place (None passes through)."""
    return None if t is None else t.repeat_interleave(n, dim=0)


def forward_args(extra: torch.Tensor | None) -> tuple | None:
    """captum's ``additional_forward_args`` for the per-row extra argument."""
    return None if extra is None else (extra,)


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


def _check_options(name: str, fn: Method, options: dict) -> None:
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # forwarded to a base method, which checks them
    accepted = [k for k, p in params.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("batch_size", "generator")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for method {name!r}; accepted: {accepted}")


def explain(model: nn.Module, x: torch.Tensor, target: int | torch.Tensor, *, method: str = "integrated_gradients",
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
    fn = get_method(method)
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
        return fn(net, leaf(xc), tc, ec, batch_size=batch_size, generator=generator, **fixed, **per_row).detach()

    out = chunks(batch_size, run, inputs, target, extra, *rows.values())
    return out.sum(-1) if tokens else out

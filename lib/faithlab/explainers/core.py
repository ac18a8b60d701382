"""The explainer registry and ``explain``: attribution maps over captum, batched and seeded.

``explain(model, x, target, method=...)`` returns attributions shaped like x (CAM methods: ``(B, 1, H, W)`` for
images, ``(B, T, 1)`` for series; ``xrai``: ``(B, 1, H, W)``; ``random``: x with one channel; token ids ``(B, L)`` →
``(B, L)``, the embedding attribution summed over the embedding dim). Inputs are processed ``batch_size`` at a time
and no forward pass sees more than ``max(batch_size, n_samples)`` inputs, so results do not depend on
``batch_size``.

Randomness (SmoothGrad noise, expected-gradients references, random maps, RISE masks, ``degrade``) comes only from
the ``generator`` argument (a ``torch.Generator`` or an int seed), or, with ``explain(..., sample_seeds=...)``, from
one stream per row keyed by the row's own seed (:class:`SampleSeeds`: a row's map then depends only on its input,
target and seed). Numbers are drawn as float64 uniforms on the generator's device (CPU for sample seeds), then moved
to the inputs' device: a CPU generator gives identical maps on every device.

A method is a function ``fn(model, x, target, extra, *, batch_size, generator, **options)`` returning the
attributions of the rows it is given (``extra``: None, or a per-row tensor passed to the model as a second argument,
the pad mask of token inputs). :func:`register` adds one under a name; each algorithm module of this package
declares its method(s) with ``@register`` beside the function, and ``faithlab.explainers`` imports every one of
them. This module registers none and lists none. A random method draws through :func:`uniform` / :func:`normal`,
one ``(rows, ...)`` block per draw for the rows it was given (and passes ``generator`` to :func:`chunks` with its
rows when it splits them), so that it works with a ``torch.Generator`` and with :class:`SampleSeeds` alike.

Bad input raises a ValueError or TypeError naming the argument, before captum sees it. The model's logits are
checked on the forward passes the method already makes (no extra pass; a method that never calls the model, such
as ``random``, is not checked against it): they must be a floating ``(N, n_classes)`` tensor, every
target must lie in ``[0, n_classes)``, and NaN/inf logits raise naming the samples of x. A map that comes out
non-finite raises too, naming the method and the samples: no NaN map is ever returned.
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
import numbers
from collections.abc import Callable

import torch
from torch import nn

from faithlab import _validate, perturb
from faithlab.models import FromEmbeddings

__all__ = ["register", "available", "explain", "explainer", "is_random"]

Method = Callable[..., torch.Tensor]
_METHODS: dict[str, Method] = {}
RANDOM: set[str] = set()
_PER_SAMPLE_OPTIONS = ("baseline",)  # tensor options that may hold one row per input and are chunked with x


def register(name: str, *, random: bool = False) -> Callable[[Method], Method]:
    """Decorator adding ``fn(model, x, target, extra, *, batch_size, generator, **options)`` to :func:`explain` under
    ``name``. Its keyword-only options become ``explain``'s options for that method (unknown ones are refused);
    ``random=True`` makes ``explain`` require a ``generator`` (or ``sample_seeds``); such a method draws through
    :func:`uniform` / :func:`normal` (see the module docstring) so that ``sample_seeds`` reaches its draws. A name can
    be registered once."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in _METHODS:
        raise ValueError(f"name {name!r} is already registered; pick another name")

    def deco(fn: Method) -> Method:
        if not callable(fn):
            raise TypeError(f"register({name!r}) needs a function, got {type(fn).__name__}")
        _METHODS[name] = fn
        if random:
            RANDOM.add(name)
        return fn

    return deco


def is_random(method: str) -> bool:
    """Whether the registered ``method`` draws random numbers (registered with ``random=True``: it needs a
    ``generator`` or per-sample ``sample_seeds``, e.g. SmoothGrad, RISE, the random map)."""
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not registered; known: {', '.join(available())}")
    return method in RANDOM


def available() -> list[str]:
    """Names accepted by ``explain(method=...)``."""
    return sorted(_METHODS)


def get_method(name: str) -> Method:
    """The registered function of ``name`` (for methods built on another, e.g. SmoothGrad on IG)."""
    if name not in _METHODS:
        raise ValueError(f"method must be one of {available()}, got {name!r}")
    return _METHODS[name]


# ------------------------------------------------------------ random draws and rows (the contract of a method)
SampleSeeds = perturb.SampleSeeds
"""The random source of ``explain(..., sample_seeds=...)`` (:class:`faithlab.perturb.SampleSeeds`): a method receives it
as its ``generator`` and draws through :func:`uniform` / :func:`normal` with a shape ``(rows, ...)``."""


def uniform(shape: tuple[int, ...], generator: torch.Generator | SampleSeeds, device: torch.device) -> torch.Tensor:
    """Float64 U[0, 1) drawn on the generator's device, then moved to ``device`` (:class:`SampleSeeds`: per row,
    drawn on ``device``)."""
    if isinstance(generator, SampleSeeds):
        return generator.uniform(shape, device)
    return torch.rand(shape, generator=generator, device=generator.device, dtype=torch.float64).to(device)


def normal(shape: tuple[int, ...], generator: torch.Generator | SampleSeeds, like: torch.Tensor) -> torch.Tensor:
    """Standard normal draws. torch.randn's CPU kernel fills blocks of 16 (Box-Muller), so randn(a) then randn(b)
    differs from randn(a + b) and the noise would depend on how the batch is chunked. Uniform draws are consumed
    one by one, so we map uniforms through the inverse normal CDF instead."""
    u = uniform(shape, generator, like.device).clamp_min(torch.finfo(torch.float64).tiny)
    return torch.special.ndtri(u).to(like.dtype)


def chunks(size: int, fn: Callable[..., torch.Tensor], *rows) -> torch.Tensor:
    """Apply ``fn`` to consecutive slices of ``size`` rows of every tensor and :class:`SampleSeeds` in ``rows``
    (anything else — None, a ``torch.Generator`` — passes through unchanged)."""
    n = rows[0].shape[0]
    return torch.cat([fn(*(r[i : i + size] if isinstance(r, (torch.Tensor, SampleSeeds)) else r for r in rows))
                      for i in range(0, n, size)])


def leaf(t: torch.Tensor) -> torch.Tensor:
    """A detached copy that requires grad (captum then needs no warning to set it)."""
    return t.detach().requires_grad_(True)


def _samples(idx: torch.Tensor) -> str:
    """A short list of sample indices for an error message."""
    idx = idx.flatten().tolist()
    return f"{idx[:8]}{f' and {len(idx) - 8} more' if len(idx) > 8 else ''}"


def _logit_structure(out, n_inputs: int | None) -> None:
    """Raise unless ``out`` is a floating (N, n_classes) tensor with one row per input."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"model must return a tensor of logits (N, n_classes), got {type(out).__name__}")
    if out.ndim != 2 or (n_inputs is not None and out.shape[0] != n_inputs):
        raise ValueError(f"model must return logits of shape (N, n_classes), got shape {tuple(out.shape)}"
                         + ("" if n_inputs is None else f" for {n_inputs} inputs"))
    if not out.is_floating_point():
        raise TypeError(f"model must return floating-point logits, got dtype {out.dtype} (attributions are "
                        "gradients or differences of real-valued logits)")


def _target_range(target: torch.Tensor, n_classes: int) -> None:
    """Raise if a target is not a class index of the model's ``n_classes`` logits."""
    bad = target >= n_classes
    if bool(bad.any()):
        raise ValueError(f"target must hold classes in [0, {n_classes - 1}] (the model returns {n_classes} logits), "
                         f"got "
                         f"{_samples(target[bad].cpu())} for sample(s) {_samples(bad.nonzero().cpu())} of x")


class _LogitCheck:
    """Watches the logits a method computes while ``explain`` runs it: their structure on every forward pass, the
    targets against the width of the first, and whether any is NaN/inf (a flag read once per chunk, so the
    forward passes stay free of device synchronisation)."""

    def __init__(self, method: str, target: torch.Tensor) -> None:
        self.method, self.target = method, target
        self.n_classes: int | None = None
        self.bad: torch.Tensor | None = None  # 0-d bool: a non-finite logit in the current chunk
        self.seen = self.active = False

    def __call__(self, out, n_inputs: int | None = None) -> None:
        if not self.active:
            return
        _logit_structure(out, n_inputs)
        if self.n_classes is None:
            self.n_classes = out.shape[1]
            _target_range(self.target, self.n_classes)
        flag = ~torch.isfinite(out.detach()).all()
        self.bad = flag if self.bad is None else self.bad | flag
        self.seen = True

    def verify(self, maps: torch.Tensor | None, idx: torch.Tensor, call: Callable, xc: torch.Tensor,
               ec: torch.Tensor | None) -> None:
        """After a chunk (global sample indices ``idx``): raise if a logit or the map is NaN/inf."""
        map_bad = None
        if isinstance(maps, torch.Tensor) and maps.ndim > 0 and len(maps) == len(idx) and maps.is_floating_point():
            map_bad = ~torch.isfinite(maps).reshape(len(maps), -1).all(1)
        flags = [f.reshape(1) for f in (self.bad, None if map_bad is None else map_bad.any()) if f is not None]
        if not flags or not bool(torch.cat(flags).any()):  # one synchronisation per chunk
            return
        if self.bad is not None and bool(self.bad):
            self.active = False  # the diagnosis runs the model on x itself; error path only
            try:
                with torch.no_grad():
                    out = call(xc) if ec is None else call(xc, ec)
            finally:
                self.active = True
            on_x = ~torch.isfinite(out).reshape(len(out), -1).all(1).cpu()
            if bool(on_x.any()):
                raise ValueError(f"model returned NaN or inf logits on x for sample(s) {_samples(idx[on_x])}; "
                                 f"method {self.method!r} cannot explain them (check the model and these inputs)")
            raise ValueError(f"model returned NaN or inf logits on the inputs that method {self.method!r} built "
                             f"from sample(s) {_samples(idx)} of x (baselines, interpolation points, noisy copies "
                             "or perturbations; the logits on x are finite); check the method's options")
        raise ValueError(f"method {self.method!r} produced a non-finite (NaN or inf) map for sample(s) "
                         f"{_samples(idx[map_bad.cpu()])} of x")


ACTIVE: contextvars.ContextVar[_LogitCheck | None] = contextvars.ContextVar("faithlab_logit_check", default=None)


def check_logits(logits, target: torch.Tensor, n_inputs: int | None = None) -> None:
    """For methods that compute a model's logits without calling the model (e.g. a relevance pass rebuilt from its
    weights): check them as ``explain`` checks the model's output. Within ``explain`` the check is deferred to the
    end of the chunk (NaN/inf) and the targets are those of all of x; outside, it raises at once."""
    checker = ACTIVE.get()
    if checker is not None:
        checker(logits, n_inputs)
        return
    _logit_structure(logits, n_inputs)
    _target_range(target, logits.shape[1])
    bad = ~torch.isfinite(logits.detach()).all(1)
    if bool(bad.any()):
        raise ValueError(f"model returned NaN or inf logits for sample(s) {_samples(bad.nonzero().cpu())}")


# ----------------------------------------------------------------------------------------------------- API
def _target(target: int | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if isinstance(target, numbers.Integral) and not isinstance(target, bool):
        if not 0 <= int(target) < 2**63:
            raise ValueError(f"target must be a class index (0 <= target < n_classes), got {int(target)}")
        return torch.full((len(x),), int(target), dtype=torch.int64, device=x.device)
    if (not isinstance(target, torch.Tensor) or target.is_floating_point() or target.is_complex()
            or target.dtype == torch.bool):
        raise TypeError(f"target must be an int or an integer tensor of shape (B,), got {target!r:.80}")
    if target.ndim == 0:
        target = target.expand(len(x))
    _validate.tensor(target, "target", ndim=1)
    _validate.batch_match(x, target, "x", "target")
    target = target.to(device=x.device, dtype=torch.int64)
    negative = target < 0
    if bool(negative.any()):
        raise ValueError(f"target must hold class indices >= 0, got {_samples(target[negative].cpu())} for "
                         f"sample(s) {_samples(negative.nonzero().cpu())} of x")
    return target


def _sample_seeds(seeds, n: int) -> torch.Tensor:
    """``sample_seeds`` checked (an integer tensor of shape (n,)) → int64 on its own device (the draws are made
    there, then on x's device)."""
    if not isinstance(seeds, torch.Tensor):
        raise TypeError(f"sample_seeds must be None or an integer tensor of shape ({n},) (one seed per row of x), got "
                        f"{type(seeds).__name__}")
    if seeds.is_floating_point() or seeds.is_complex() or seeds.dtype == torch.bool:
        raise TypeError(f"sample_seeds must have an integer dtype (one seed per row of x), got dtype {seeds.dtype}")
    if seeds.ndim != 1 or seeds.shape[0] != n:
        raise ValueError(f"sample_seeds must have shape ({n},) (one seed per row of x), got shape "
                         f"{tuple(seeds.shape)}")
    return seeds.detach().to(torch.int64)


def _model_input(model, x: torch.Tensor) -> None:
    """Raise if ``x`` cannot go through ``model`` (an nn.Module): parameters/buffers on another device, floating
    parameters of another dtype than x, or integer x (token ids) for a model that takes no tokens."""
    if x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"x must be a floating-point tensor (or int64 token ids (B, L)), got dtype {x.dtype}")
    if not isinstance(model, nn.Module):
        return
    ref = next(itertools.chain(model.parameters(), model.buffers()), None)
    if ref is not None and ref.device != x.device:
        raise ValueError(f"model is on {ref.device} but x is on {x.device}; move them to the same device")
    _validate.model_accepts(model, x, "model", "x")  # floating x of another dtype than the parameters
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if not x.is_floating_point() and not (hasattr(model, "embed") and hasattr(model, "forward_embeddings")):
        wants = f"model's parameters are {param.dtype}" if param is not None else "model takes float inputs"
        raise TypeError(f"dtype mismatch: x has dtype {x.dtype} but {wants}; pass float inputs (e.g. x.to("
                        f"{param.dtype if param is not None else torch.get_default_dtype()})). Integer x is read "
                        f"as token ids (B, L), which need a model defining embed and forward_embeddings; got x "
                        f"{tuple(x.shape)}, model {type(model).__name__}")


def check_options(name: str, fn: Method, options: dict, where: str = "") -> None:
    """Refuse options that ``fn`` (the method ``name``) does not accept; ``where`` overrides the message's
    "for method <name>" (e.g. for the base method of SmoothGrad)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # forwarded to a base method, which checks them
    accepted = [k for k, p in params.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY and k not in ("batch_size", "generator")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(f"unknown option(s) {unknown} for {where or f'method {name!r}'}; accepted: {accepted}")


def explain(model: nn.Module, x: torch.Tensor, target: int | torch.Tensor, *, method: str = "integrated_gradients",
            batch_size: int = 64, generator: torch.Generator | int | None = None,
            sample_seeds: torch.Tensor | None = None, **options) -> torch.Tensor:
    """Attribution maps of ``model``'s ``target`` logit for inputs ``x``.

    model: eval-mode module returning logits. x: images (B, C, H, W), series (B, T, C), any float (B, ...), or
    token ids (B, L) int64 — then the model must define ``embed`` and ``forward_embeddings`` (see
    ``faithlab.models``), attributions are computed on the embeddings (IG baseline "zero" = zero embeddings, i.e.
    the pad token's) and summed over the embedding dim. target: int or (B,) int64. method: one of
    :func:`available`; ``options`` are the method's keyword options (see each method's docstring, e.g.
    ``baseline``, ``n_steps``, ``nt_samples``, ``stdevs``, ``layer``, ``normalize``, ``window``, ``background``).
    batch_size: inputs per chunk (memory bound). generator: ``torch.Generator`` or int seed, required by the
    random methods (smoothgrad*, sg_sq_ig, expected_gradients, rise, random; an int seed must lie in
    [-2**63, 2**64 - 1]) unless sample_seeds is given; their draws follow the rows in order, so a row's noise depends on
    its position in x. sample_seeds: None, or a ``(B,)`` integer tensor: then every random draw of row j comes from its
    own stream seeded with ``sample_seeds[j]`` (:class:`SampleSeeds`) and ``generator`` is not used, so a row's map
    depends only on its input, target and seed (not on batch_size, its position or the other rows) and rows with
    equal seeds get the same noise — common random numbers, e.g. for S_avg (an input and its neighbours share one
    seed). Deterministic methods ignore it. Returns
    a float tensor (see the module docstring for shapes); higher = more important (signed methods: sign gives the
    direction).

    Raises a TypeError/ValueError naming the argument for bad input (target type, shape or range; sample_seeds' dtype
    or shape; x's rank, dtype or device against the model's; the model's output; the method's options), and a
    ValueError naming the samples when the model returns NaN/inf logits or a map comes out NaN/inf.
    """
    fn = get_method(method)
    check_options(method, fn, options)
    _validate.eval_mode(model)
    _validate.one_device(x=x, target=target)  # before the target's values are read
    _validate.tensor(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must be a batch of inputs (B, ...) with at least 2 dimensions, got shape {tuple(x.shape)}")
    batch_size = _validate.positive_int(batch_size, "batch_size")
    if generator is not None or (method in RANDOM and sample_seeds is None):
        generator = _validate.generator(generator, why=f"by method {method!r} (or pass sample_seeds)")
    keys = None if sample_seeds is None else SampleSeeds(_sample_seeds(sample_seeds, len(x)))
    _model_input(model, x)
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

    # every logit the method computes is checked (_LogitCheck): through a forward hook on a module, a wrapper
    # around a plain callable, and core.check_logits for methods that rebuild the logits themselves
    checker = _LogitCheck(method, target)
    handle = None
    if isinstance(net, nn.Module):
        handle = net.register_forward_hook(lambda _m, args, out: checker(out, _rows(args)))
        call = net
    else:
        def call(*args, **kwargs):
            out = net(*args, **kwargs)
            checker(out, _rows(args))
            return out

    def run(ic, xc, tc, ec, kc, *row_values):
        per_row = dict(zip(rows, row_values))
        checker.bad = None
        maps = fn(call, leaf(xc), tc, ec, batch_size=batch_size, generator=generator if kc is None else kc, **fixed,
                 **per_row)
        maps = maps.detach() if isinstance(maps, torch.Tensor) else maps
        checker.verify(maps, ic, call, xc, ec)
        return maps

    checker.active = True
    context = ACTIVE.set(checker)
    try:
        out = chunks(batch_size, run, torch.arange(len(x), device="cpu"), inputs, target, extra, keys, *rows.values())
    finally:
        ACTIVE.reset(context)
        checker.active = False
        if handle is not None:
            handle.remove()
    return out.sum(-1) if tokens else out


def explainer(method: str, *, seed: int = 0, batch_size: int | None = None, **options) -> Callable:
    """The registered ``method`` with its ``options`` as the explainer :func:`faithlab.evaluate` takes:
    ``callable(model, inputs, target)`` → detached maps. A random method (:func:`is_random`) draws from ``seed``, or
    from the per-sample ``seeds`` that ``evaluate`` passes when it maps the batches itself, so that its maps do not
    depend on how the data is batched. batch_size: :func:`explain`'s (None: its default)."""
    is_random(method)  # an unknown method is refused here, before any work
    if batch_size is not None:
        options = {"batch_size": batch_size, **options}
    if not is_random(method):
        def explain_maps(model, inputs, target):
            return explain(model, inputs, target, method=method, **options).detach()
    else:
        def explain_maps(model, inputs, target, seeds=None):
            draws = {"generator": seed} if seeds is None else {"sample_seeds": seeds}
            return explain(model, inputs, target, method=method, **draws, **options).detach()

    explain_maps.__name__ = method
    return explain_maps


def _rows(args: tuple) -> int | None:
    """Rows of a forward call's first positional argument (None when it has none)."""
    return args[0].shape[0] if args and isinstance(args[0], torch.Tensor) and args[0].ndim > 0 else None

"""Few-class Fidelity (Marchadour, Soto Vega, Vermet, Hatt; spec §2): MIF/LIF curves towards an optimised perturbed
image, the Fid score of eq. (1) and the candidate search of eqs. (2)–(5). The localisation protocols of §2.4 (box
IoU, Dice) live in :mod:`faithlab.metrics.papers.fewclass.localisation`.

For each image the search builds candidates (blur operations × σ × 3 adjustments, spec §2.3 and §6.9), scores
each by its uncertainty U and its dissimilarity S, and keeps argmin P = U + (10/Δ)·S among those with U < Δ (the
lowest U when none passes). The paper's grid has 804 candidates (``grid="paper"``,
:func:`~faithlab.metrics.papers.fewclass.blurs.candidate_grid`); the default is the 144 of
:data:`~faithlab.metrics.papers.fewclass.blurs.QUICK_GRID` (its 8 distinct operations, σ on a doubling ladder up to each
operation's
largest), a sixth of the model inputs: at 224 px on a CPU, 4 images × 804 candidates take minutes of forward passes
alone. :func:`selection_cost` counts a search's model inputs before it runs, :func:`select_perturbation` shows them on
a progress bar and remembers its last results (:func:`clear_cache`), so that ``fl.evaluate`` after a search of the
same images reuses it. MIF replaces the most important p % of pixels (by Σ_c |map|) with the
selected image's pixels, LIF the least important; the curve is the probability of the originally predicted class
at p = 0, 1, …, 100 %. A faithful map keeps LIF near 1 (area A_LIF → 1) and drops MIF to the uncertain 1/N
(A_MIF → 1/N): Fid = 1 − (|1 − A_LIF| + |1/N − A_MIF|) / (1 + (N − 1)/N) ∈ [0, 1], higher is better.

Models may return N ≥ 2 logits (softmax) or a single logit (binary, sigmoid: N = 2, class 1 = logit > 0).

Pixel space: the operations of §2.3 (G(x)/μ, (1 − μ), x², x³, range and histogram matching) assume pixel
intensities, e.g. in [0, 1]. When x holds normalised model inputs (torchvision's ``Normalize``: x = (pixels − mean) /
std), pass ``normalisation=(mean, std)`` to :func:`select_perturbation`,
:func:`~faithlab.metrics.papers.fewclass.blurs.candidates` and
:func:`~faithlab.metrics.papers.fewclass.blurs.candidate_images`: the candidates and their similarity S are then
computed on pixels = x·std + mean and
normalised back, (c − mean)/std, before the model sees them and in what is returned. Without it (the default) x is
taken as pixels.

One concept: Few-class Fidelity's score end to end, the perturbed image it needs (the candidate search of eqs.
(2)–(5), its cost and its memo) and the MIF/LIF curves and Fid of eq. (1) that read it. The candidate images the
search scores (the grid of operations × σ × adjustments and how they are built) are in
:mod:`faithlab.metrics.papers.fewclass.blurs`; their names are read from here too.
"""

from __future__ import annotations

import hashlib
import itertools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import torch
from tqdm import tqdm  # plain text bar: tqdm.auto would need ipywidgets inside notebooks

from faithlab import _validate, perturb
from faithlab.metrics.registry import Context, Metric, Option, Shared, checks, plain, register
from faithlab.metrics.statistics import trapezoid_auc
from faithlab.perturb import autobatch
from faithlab.perturb.autobatch import BatchSize

# the candidate images live beside this module; their names are read from here too
from faithlab.metrics.papers.fewclass.blurs import (ADJUSTMENTS, OPERATIONS, QUICK_GRID, QUICK_OPERATIONS,  # noqa: F401
                                                    QUICK_SIGMAS, Grid, Layout, build_candidates, candidate_grid,
                                                    candidate_images, candidates, check_grid, check_normalisation,
                                                    match_histograms, match_range, to_inputs, to_pixels)

__all__ = ["FRACTIONS", "class_probabilities", "predicted_class", "uncertainty", "threshold", "similarity",
           "perturbation_score", "select_perturbation", "selection_cost", "clear_cache", "fid", "fewclass_fid",
           "fewclass_fid_details"]

FRACTIONS = tuple(i / 100 for i in range(101))
"""p = 0, 1, …, 100 % (spec §2.1)."""


def class_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Class probabilities ``(M, N)``: softmax of N ≥ 2 logits, or ``[1 − σ(z), σ(z)]`` for a single logit z."""
    if logits.shape[1] == 1:
        p = torch.sigmoid(logits[:, 0])
        return torch.stack([1 - p, p], dim=1)
    return logits.softmax(dim=1)


def _class_probability(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return class_probabilities(logits).gather(1, target[:, None]).squeeze(1)


def predicted_class(model: Callable, x: torch.Tensor, *, batch_size: BatchSize = None) -> torch.Tensor:
    """The model's predicted class ``(B,)`` int64: argmax of N ≥ 2 logits, ``logit > 0`` for a single logit.
    ``batch_size`` inputs per forward call: an int or ``"auto"`` (resolved by :func:`faithlab.perturb.logits`, see
    :mod:`faithlab.perturb.autobatch`); the result does not depend on it."""
    _validate.model(model, "model")
    batch_size = _validate.batch_size(batch_size, "batch_size")
    logits = perturb.logits(model, x, batch_size=batch_size, what="clean inputs (read for the predicted class)")
    return class_probabilities(logits).argmax(dim=1)


def _n_classes(logits_width: int) -> int:
    return 2 if logits_width == 1 else logits_width


def uncertainty(probabilities: torch.Tensor) -> torch.Tensor:
    """U of eq. (2): mean over the N classes of |1/N − f_c(x')| → ``probabilities.shape[:-1]``; 0 = maximally
    uncertain. probabilities: ``(..., N)`` (see :func:`class_probabilities`)."""
    n = probabilities.shape[-1]
    if n < 2:
        raise ValueError(f"probabilities must cover at least 2 classes, got {n}")
    return (probabilities - 1.0 / n).abs().mean(dim=-1)


def threshold(n_classes: int) -> float:
    """Δ of eq. (3): min(0.1, N/40) — 0.05 for N = 2, 0.075 for N = 3, 0.1 for N ≥ 4."""
    n = _validate.positive_int(n_classes, "n_classes")
    if n < 2:
        raise ValueError(f"n_classes must be at least 2, got {n}")
    return min(0.1, n / 40)


def similarity(x: torch.Tensor, perturbed: torch.Tensor) -> torch.Tensor:
    """S of eq. (4): MSE(x, x') / (max x − min x)² per image; x ``(B, C, H, W)``, perturbed ``(B, ..., C, H, W)`` →
    ``perturbed.shape[:-3]``. Lower = more similar. A constant x (no range) gives inf unless x' equals it."""
    extra = perturbed.ndim - x.ndim
    xv = x.reshape(x.shape[0], *([1] * extra), *x.shape[1:])
    span = (x.amax(dim=(1, 2, 3)) - x.amin(dim=(1, 2, 3))).reshape(x.shape[0], *([1] * extra))
    mse = (perturbed - xv).pow(2).mean(dim=(-3, -2, -1))
    return torch.where(mse == 0, torch.zeros_like(mse), mse / span.pow(2))


def perturbation_score(u: torch.Tensor, s: torch.Tensor, n_classes: int) -> torch.Tensor:
    """P of eq. (5): U + (10/Δ)·S (U + 200·S for N = 2, U + 133.3·S for N = 3); lower is better."""
    return u + (10 / threshold(n_classes)) * s


def selection_cost(x: torch.Tensor | Sequence[int], *, grid: Grid = None) -> int:
    """The number of model inputs :func:`select_perturbation` evaluates for images x (a tensor ``(B, C, H, W)`` or
    its shape) with this ``grid``, exactly: B × the grid's candidates, plus one input that reads the number of
    classes, whatever the batch size (``"auto"`` included). A call that finds its result in the cache evaluates
    none. Ask before a long call: at 224 px on a 2-core CPU a ResNet-18 input costs ~20 ms and building a
    candidate ~10–20 ms more."""
    if isinstance(x, torch.Tensor):
        _validate.tensor(x, "x", ndim=4)
        b = x.shape[0]
    elif (isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != 4
          or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in x)):
        raise TypeError(f"x must be images (B, C, H, W) or their shape, four positive ints, got {x!r:.80}")
    else:
        b = x[0]
    return b * len(check_grid(grid)) + 1


def select_perturbation(model: Callable, x: torch.Tensor, *, grid: Grid = None, batch_size: BatchSize = None,
                        normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None,
                        progress: bool | None = None, cache: bool = True) -> dict:
    """Few-class Fidelity's perturbed image per input (spec §2.3): argmin P among the candidates with U < Δ, the
    lowest U when none passes.

    x: ``(B, C, H, W)`` the model's inputs; the model returns N ≥ 2 logits or one (binary). grid: the candidates,
    default (None, ``"quick"``) :data:`~faithlab.metrics.papers.fewclass.blurs.QUICK_GRID`, 144 per image; ``"paper"``:
    the paper's 804 (spec §2.3, 11 operations, σ = 1…12 or 1…80, 3 adjustments); or (operation, σ, adjustment) entries
    of :func:`~faithlab.metrics.papers.fewclass.blurs.candidate_grid`.
    normalisation: None
    (default) when x holds pixel values (the operations assume intensities, e.g. in [0, 1]); ``(mean, std)``, per
    channel or one scalar each, when x holds normalised inputs x = (pixels − mean) / std (torchvision's
    ``Normalize``; a dataset's ``(info['mean'], info['std'])``): the candidates are built from the pixels
    x·std + mean, S of eq. (4) is computed between pixels (MSE over the pixel range squared), and each candidate is
    normalised back, (c − mean)/std, before the model sees it and in ``image``, so ``image`` lives in x's space
    (:func:`fewclass_fid` takes it with x as is). Candidates are generated and scored chunk by chunk (≤
    ``batch_size`` per forward call) on x's device, in x's dtype. batch_size: an int or ``"auto"``, resolved by
    :func:`faithlab.perturb.evaluate_inputs` (:mod:`faithlab.perturb.autobatch`: the search's own forward calls are
    timed, so the count below holds).
    Cost: :func:`selection_cost` model inputs (B × candidates + 1); progress: a tqdm bar over them whose description
    states that number (None: on unless the environment sets ``FAITHLAB_PROGRESS=0``).
    cache: the last 4 results are remembered (weakly keyed on the model) and a call with the same model — the same
    ``torch.nn.Module`` object, or a wrapper of it that names it in ``__wrapped__``, with the same parameters,
    buffers and structure (a fingerprint of their bytes: training it further or loading other weights misses) —
    the same x (by content: a fingerprint of its bytes, shape, dtype and device), ``grid`` and ``normalisation``
    returns a copy of the remembered result without a forward pass, whatever its ``batch_size``: batch sizes change
    no result beyond float rounding, and ``"auto"`` may resolve to another size from one call to the next, so a key
    holding it would miss a search that ``fl.evaluate`` could reuse. A model that is not a module
    (a function) is never cached, nor is a call with ``cache=False``; :func:`clear_cache` forgets everything (a
    model whose output changes without a change of its weights or structure, e.g. by a hook, needs it).
    Returns a dict: ``image`` ``(B, C, H, W)`` the selected candidates; ``index`` ``(B,)`` into ``grid``; ``u``,
    ``s``, ``p`` ``(B,)`` their scores; ``passed`` ``(B,)`` bool U < Δ; ``all_u``, ``all_s`` ``(B, V)`` every
    candidate's U and S; ``delta`` Δ; ``n_classes`` N; ``grid`` the (operation, σ, adjustment) list;
    ``operation``, ``sigma``, ``adjustment`` lists of the winners.
    """
    _validate.model(model, "model")
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.model_accepts(model, x, "model", "x")
    _validate.finite(x, "x")
    grid = check_grid(grid)
    norm = check_normalisation(normalisation, x)
    batch_size = _validate.batch_size(batch_size, "batch_size")  # "auto": resolved by evaluate_inputs below
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False, got {cache!r}")
    show = _validate.progress(progress)
    key = _Memo.key(model, x, grid, norm) if cache else None
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    total = selection_cost(x.shape, grid=grid)
    with tqdm(total=total, unit="input", disable=not show, leave=False,
              desc=f"Few-class candidate search: {x.shape[0]} images × {len(grid)} candidates: {total:,} model "
                   "inputs") as bar:
        width = perturb.logits(model, x[:1], finite=False).shape[1]
        bar.update(1)
        n = _n_classes(width)
        delta = threshold(n)
        pixels = to_pixels(x, norm)
        all_s = torch.empty(x.shape[0], len(grid), dtype=x.dtype, device=x.device)
        layout = Layout(grid, x)

        def inputs(b0: int, b1: int, v0: int, v1: int) -> torch.Tensor:
            c = build_candidates(pixels, grid, b0, b1, v0, v1, layout)
            all_s[b0:b1, v0:v1] = similarity(pixels[b0:b1], c)
            return to_inputs(c, norm)

        def read(logits: torch.Tensor, _) -> torch.Tensor:
            bar.update(logits.shape[0])
            return uncertainty(class_probabilities(logits))

        all_u = perturb.evaluate_inputs(model, inputs, n_samples=x.shape[0], n_variants=len(grid), output=read,
                                        batch_size=batch_size).to(x.dtype)
    score = perturbation_score(all_u, all_s, n)
    passed_any = (all_u < delta).any(dim=1)
    masked = torch.where(all_u < delta, score, torch.full_like(score, float("inf")))
    index = torch.where(passed_any, masked.argmin(dim=1), all_u.argmin(dim=1))
    rows = torch.arange(x.shape[0], device=x.device)
    picked = [grid[v] for v in index.tolist()]
    result = {"image": candidate_images(x, index, grid=grid, normalisation=normalisation), "index": index,
              "u": all_u[rows, index], "s": all_s[rows, index], "p": score[rows, index], "passed": passed_any,
              "all_u": all_u, "all_s": all_s, "delta": delta, "n_classes": n, "grid": grid,
              "operation": [g[0] for g in picked], "sigma": [g[1] for g in picked],
              "adjustment": [g[2] for g in picked]}
    if key is not None:
        _MEMO.put(key, result)
    return result


def clear_cache() -> None:
    """Forget every result :func:`select_perturbation` remembers (the next call with the same arguments searches
    again)."""
    _MEMO.clear()


def _fingerprint(tensors: Iterable[tuple[str, torch.Tensor]], extra: str = "") -> bytes:
    """A digest of named tensors' names, shapes, dtypes, devices and bytes (blake2b, 128 bits)."""
    h = hashlib.blake2b(extra.encode(), digest_size=16)
    for name, t in tensors:
        t = t.detach()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|{t.device}|".encode())
        h.update(memoryview(t.contiguous().cpu().reshape(-1).view(torch.uint8).numpy()))
    return h.digest()


class _Memo:
    """The last :data:`SIZE` selections: (the model, weakly; the rest of the key) → (the model's weights
    fingerprint, the result). An entry whose model was collected is dropped; a changed fingerprint is a miss."""

    SIZE = 4

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()

    @staticmethod
    def key(model: Callable, x: torch.Tensor, grid: list, norm) -> tuple | None:
        """(the module, its fingerprint, the rest) of a call, or None when the model is not (a wrapper of) a
        ``torch.nn.Module``. The batch size is not part of it (see :func:`select_perturbation`)."""
        module, seen = model, 0
        while not isinstance(module, torch.nn.Module) and hasattr(module, "__wrapped__") and seen < 16:
            module, seen = module.__wrapped__, seen + 1
        if not isinstance(module, torch.nn.Module):
            return None
        weights = _fingerprint(itertools.chain(((f"parameter {n}", p) for n, p in module.named_parameters()),
                                               ((f"buffer {n}", b) for n, b in module.named_buffers())), repr(module))
        rest = (_fingerprint([("x", x)]), tuple(grid),
                None if norm is None else (tuple(norm[0].flatten().tolist()), tuple(norm[1].flatten().tolist())))
        return module, weights, rest

    def get(self, key: tuple) -> dict | None:
        module, weights, rest = key
        slot = (id(module), rest)
        entry = self.entries.get(slot)
        if entry is None or entry[0]() is not module or entry[1] != weights:
            return None
        self.entries.move_to_end(slot)
        return _copy(entry[2])

    def put(self, key: tuple, result: dict) -> None:
        module, weights, rest = key
        for slot in [s for s, e in self.entries.items() if e[0]() is None or s[0] == id(module) and e[1] != weights]:
            del self.entries[slot]  # collected models, and this model's results for other weights
        self.entries[(id(module), rest)] = (weakref.ref(module), weights, _copy(result))
        while len(self.entries) > self.SIZE:
            self.entries.popitem(last=False)

    def clear(self) -> None:
        self.entries.clear()


def _copy(result: dict) -> dict:
    """A selection result whose tensors and lists the caller may change without changing the cache."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v
            for k, v in result.items()}


_MEMO = _Memo()


def fid(a_mif: torch.Tensor, a_lif: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Few-class Fid of eq. (1): 1 − (|1 − A_LIF| + |1/N − A_MIF|) / (1 + (N − 1)/N), in [0, 1] for areas in
    [0, 1]; 1 = ideal (A_LIF = 1, A_MIF = 1/N). Higher is better."""
    n = _validate.positive_int(n_classes, "n_classes")
    if n < 2:
        raise ValueError(f"n_classes must be at least 2, got {n}")
    score = 1 - ((1 - a_lif).abs() + (1.0 / n - a_mif).abs()) / (1 + (n - 1) / n)
    return score.clamp(0, 1)  # only rounding can leave [0, 1] (e.g. −2e-16 at the worst case)


def fewclass_fid_details(model: Callable, x: torch.Tensor, attributions: torch.Tensor, *,
                         perturbed: torch.Tensor | None = None, target: torch.Tensor | None = None,
                         normalisation: tuple[Sequence[float] | float, Sequence[float] | float] | None = None,
                         grid: Grid = None, generator: torch.Generator | int = 0,
                         fractions: Sequence[float] = FRACTIONS, sample_index: torch.Tensor | None = None,
                         batch_size: BatchSize = None) -> dict[str, torch.Tensor]:
    """:func:`fewclass_fid` with its curves: ``score`` ``(B,)``, ``mif`` and ``lif`` ``(B, F)`` the probability of
    the target class as the most / least important pixels are replaced, ``a_mif``, ``a_lif`` ``(B,)`` their
    trapezoid areas over the fractions, ``fractions`` ``(F,)``, ``target`` ``(B,)``, ``n_classes``,
    ``perturbed`` ``(B, C, H, W)`` the replacement images used (the given ones or the selected ones) and
    ``constant`` ``(B,)`` (maps without a ranking: every pixel ties, the random tie order decides; a
    ``perturb.ConstantMapWarning`` counts them). The tie order is keyed to the sample: image i's comes from a
    stream keyed by a root seed drawn from ``generator`` and ``sample_index[i]`` (its global index, default its
    position), so it does not depend on the other images in the call. Arguments as in :func:`fewclass_fid`."""
    _validate.model(model, "model")
    _validate.one_device(x=x, attributions=attributions, perturbed=perturbed, target=target)
    _validate.tensor(x, "x", ndim=4, floating=True)
    _validate.model_accepts(model, x, "model", "x")
    _validate.batch_size(batch_size, "batch_size")  # "auto" goes on to each forward loop, which resolves it
    if perturbed is not None:
        _validate.tensor(perturbed, "perturbed", ndim=4, floating=True)
        if perturbed.shape != x.shape:
            raise ValueError(f"perturbed must have x's shape {tuple(x.shape)}, got {tuple(perturbed.shape)}")
        _validate.same_device(x, perturbed, "x", "perturbed")
        _validate.finite(perturbed, "perturbed")
    f = _validate.fractions(fractions, "fractions", increasing=True)
    units = perturb.pixel_units(x)
    perturb.check_informative(torch.round(f.double() * units.n), units.n, "fractions", fractions)
    attributions = perturb.check_attributions(attributions, x)
    scores = perturb.unit_scores(attributions, units, reduce="sum_abs")
    constant = perturb.warn_constant(perturb.constant_maps(scores), "their pixels are replaced in a random order "
                                     "(flagged in 'constant')")
    g = perturb.sample_seeds(generator, sample_index, x.shape[0], why="for the random tie order")
    if target is not None:
        _validate.tensor(target, "target", ndim=1)
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must be an int64 tensor of class indices, got dtype {target.dtype}")
    else:
        target = predicted_class(model, x, batch_size=batch_size)
    n = _n_classes(perturb.logits(model, x[:1], finite=False).shape[1])
    perturb.readout.check_classes(target, n, "target", what="classes")  # the model's classes are known only now
    if perturbed is None:
        perturbed = select_perturbation(model, x, grid=grid, normalisation=normalisation,
                                        batch_size=batch_size)["image"]
    runner = perturb.Removal(model, x, units=units, reference=perturbed, output=_class_probability, target=target,
                             batch_size=batch_size)
    orders = [perturb.order(scores, direction, generator=g, ties="random") for direction in ("morf", "lerf")]
    # one run for both curves: the clean and the fully perturbed image are both curves' end points
    curves = dict(zip(("mif", "lif"), runner.curves(None, f, orders=orders)))
    ff = f.to(x.device, curves["mif"].dtype)
    a_mif, a_lif = trapezoid_auc(curves["mif"], ff), trapezoid_auc(curves["lif"], ff)
    return {"score": fid(a_mif, a_lif, n), "mif": curves["mif"], "lif": curves["lif"], "a_mif": a_mif,
            "a_lif": a_lif, "fractions": ff, "target": target, "n_classes": n, "perturbed": perturbed,
            "constant": constant}


fewclass_fid = plain(fewclass_fid_details, "score", """
    Few-class Fidelity per image (spec §2.1–2.2) → ``(B,)`` in [0, 1], higher = more faithful.

    x: ``(B, C, H, W)``; attributions: x's shape or ``(B, H, W)``, ranked by Σ_c |map| with random tie order. The
    model returns N ≥ 2 logits (softmax) or one (sigmoid, N = 2).
    perturbed: ``(B, C, H, W)`` the replacement images, in x's space; None (default) selects them with
    ``select_perturbation(model, x, grid=grid, normalisation=normalisation, batch_size=batch_size)["image"]``
    (``normalisation`` and ``grid`` are read only then: pass ``(mean, std)`` when x holds normalised inputs, see
    :func:`select_perturbation`; ``grid`` None searches :data:`~faithlab.metrics.papers.fewclass.blurs.QUICK_GRID`'s 144
    candidates, ``grid="paper"`` the paper's 804; a search already done for the same model, images and options is
    reused). Select once and pass
    ``perturbed=`` to score several maps of the same images.
    target: the class whose probability the curves read (``(B,)`` int64; None → the model's prediction on x).
    generator: the random tie order (seed or torch.Generator, default 0); sample_index: global indices keying it
    (default 0 … B − 1); fractions: the curves' points (default 0, 0.01, …, 1); batch_size: inputs per forward
    call, an int or ``"auto"`` (the size a cached timing probe of the model finds cheapest per input, see
    :mod:`faithlab.perturb.autobatch`); the scores do not depend on it. :func:`fewclass_fid_details` also
    returns the MIF/LIF curves. A constant map (no ranking) is replaced in a random pixel order and counted by a
    ``perturb.ConstantMapWarning``. The paper reports the mean.
    """)


# ------------------------------------------------------------------------------------------- fl.evaluate
def _grid_option(value, name, x):
    try:
        selection_cost((1, 1, 1, 1), grid=value)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise type(exc)(text.replace("grid", name, 1) if "grid" in text else f"{name}: {text}") from None
    return value


def _perturbed_option(value, name, x):
    if value is None:
        return None
    _validate.tensor(value, name, ndim=4)
    # one perturbed image per sample of the data, read by global sample index (x may be one batch of a stream)
    if value.shape[1:] != x.shape[1:] or value.shape[0] < x.shape[0]:
        raise ValueError(f"{name} must have x's shape {tuple(x.shape)} (one image per sample, indexed by the global "
                         f"sample index), got {tuple(value.shape)}")
    return value


def _selection(c: Context):
    """The chunk's perturbed images: the caller's (indexed by global sample index), or one candidate search for all
    explainers."""
    o = c.group_options("fewclass")
    given = o["perturbed"]
    if given is not None:
        if int(c.sample_index.max()) >= given.shape[0]:
            raise ValueError(f"perturbed holds {given.shape[0]} images but the data has sample "
                             f"{int(c.sample_index.max())}: pass one perturbed image per sample of the data")
        return given[c.sample_index.to(given.device)]
    return select_perturbation(c.model, c.x, grid=o["grid"], normalisation=o["normalisation"],
                               batch_size=c.batch_size, progress=c.progress)["image"]


SELECTION = Shared("fewclass selection", _selection, group="fewclass",
                   tip="its search over candidate blurs runs once for all explainers")

register(Metric(
    "fewclass_fid", "Few-class Fid", "fewclass", True, fewclass_fid, details=fewclass_fid_details, score="score",
    group="fewclass", needs=("images",), uses={"perturbed": SELECTION.name}, ideal=1.0, span=1.0,
    options=(Option("fractions", doc="Few-class: the fractions of the MIF/LIF curves", check=checks.increasing),
             Option("normalisation", doc="Few-class: the (mean, std) x was normalised with; the candidate search "
                    "then runs on pixel values"),
             Option("grid", doc="Few-class: the candidate grid of the search (None: the 144 candidates of "
                    "fewclass.QUICK_GRID; 'paper': the paper's 804; or (operation, σ, adjustment) entries)",
                    check=_grid_option),
             Option("perturbed", doc="Few-class: the perturbed images (None: select_perturbation once for all maps)",
                    check=_perturbed_option)),
    tip=("fractions", [0, 0.25, 0.5, 0.75, 1], "fewer curve points"),
    degenerate=({"fractions": [0.0, 1.0]},),  # both curves' end points only: the same for every map
    doc="pixels replaced by an uncertain image: MIF falls to 1/N, LIF stays up"),
    shared=(SELECTION,))

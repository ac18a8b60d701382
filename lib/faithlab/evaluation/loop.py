"""``fl.evaluate``: every registered faithfulness metric for one or several explainers of one model → a tidy frame.
Three phases, each in its own module: the arguments checked once at the boundary (:mod:`faithlab.evaluation.call`),
the Monte-Carlo counts chosen for a time budget (:mod:`faithlab.evaluation.budget`, when one is given), then the
streaming engine (:mod:`faithlab.evaluation.engine`: clean pass, maps, shared inputs and metric groups per chunk,
dataset-level metrics after the chunks, hints and rows at the end)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch

from faithlab import _validate
from faithlab.evaluation import budget as budgeting
from faithlab.evaluation.call import check
from faithlab.evaluation.engine import Engine
from faithlab.metrics import registry
from faithlab.metrics.registry import METRICS
from faithlab.perturb.autobatch import BatchSize

__all__ = ["evaluate", "available"]


def available() -> list[str]:
    """The metric names :func:`evaluate` accepts, in registration order."""
    return list(METRICS)


def evaluate(model: Callable, x, y: torch.Tensor | None = None, attributions=None, *,
             metrics: Sequence[str] | None = None, explainer=None, finetuned: Callable | None = None,
             finetune: Callable[[], Callable] | None = None, kfold=None, chunk_size: int | None = None,
             batch_size: BatchSize = None, progress: bool | None = None, rows=None, checkpoint=None, hints: bool = True,
             budget: float | str | None = None, **options):
    """Every registered faithfulness metric for one or several explainers of one model → tidy pandas frame.

    model: eval-mode classifier returning logits. x: ``(B, C, H, W)`` images (the patch and Few-class metrics need
    images), ``(B, T, C)`` series or tokens — or any iterable of batches (a ``torch.utils.data.DataLoader``, a list),
    each a tensor ``x``, a pair ``(x, y)`` or a mapping with ``"x"`` and optionally ``"y"``, ``"index"`` (the
    batch's global sample indices) and ``"attributions"`` (its maps): the data then streams through the metrics
    batch by batch (memory bounded by a batch, except for dataset-level metrics, which keep every sample's inputs and
    maps on the CPU until the end), samples numbered 0, 1, … across batches unless a batch gives its ``index``.
    y: ``(B,)`` int64 labels (read by Fid± and the accuracy AUC, where the papers read the true labels); None → the
    model's prediction ŷ (those metrics then read agreement with ŷ). With an iterable, y comes with the batches.
    attributions: maps of x (any layout ``perturb.unit_scores`` accepts), one tensor or ``{explainer name: maps}``;
    they should explain the model's prediction ŷ, the class every other metric reads (``target``). None → each chunk
    is mapped by ``explainer`` (then required: ``{name: callable}`` or one callable, named "explainer"), called as
    ``explainer(model, inputs, ŷ)`` or, if it has a ``seeds`` parameter, with ``seeds=`` one int64 seed per sample
    keyed by ``seed`` and the sample's global index (a stochastic explainer's maps then do not depend on the split
    either). metrics: names from :func:`available` (None: every metric the arguments allow).

    The metrics are those registered in :mod:`faithlab.metrics.registry`, each declared beside its function in its
    module (:func:`faithlab.evaluation.describe` lists each metric's paper, direction, needs and options;
    :func:`faithlab.evaluation.estimate` counts the model inputs a call will take). An option is named as the
    metric's function names its keyword and applies to every chosen metric that takes it; ``<group>_<keyword>``
    (``saco_k``, ``fewclass_fractions``) sets it for one group's metrics only. The registered metrics now:

{metrics}

    finetuned: the copy of the model fine-tuned with random removal that FFid± run on (or ``finetune``: a callable
    returning it, called once); the paper explains the fine-tuned model for FFid, here the given maps serve all
    three. kfold: an object with ``models`` (k eval-mode models) and ``folds`` ``(N,)``, the index of the model not
    trained on each sample — e.g. ``fl.train.cross_train(...)`` on the data x comes from — read by ReCo and MeGe
    with ``explainer``. normalisation (Few-class): the ``(mean, std)`` x was normalised with, e.g. a dataset's
    ``info['mean']``, ``info['std']``, so that the candidate search runs on pixel values.
    explainer: ``explainer(model, inputs, target) → maps`` (one callable, or one per explainer name), used by
    S_avg on neighbours and by ReCo/MeGe on the fold models. If it has a ``seeds`` parameter with a default (e.g.
    ``lambda m, i, t, seeds=None: explain(m, i, t, method="smoothgrad", generator=0, sample_seeds=seeds)``), S_avg
    passes ``seeds=`` ``(rows,)`` int64, one per input, equal for a sample and its neighbours (common random numbers:
    a stochastic explainer's S_avg then measures the map's change, not its Monte-Carlo noise); without one it
    cannot share its noise and is called as above (ReCo/MeGe never pass seeds). reference: None keeps each metric's
    own removal value (zero for F-Fidelity, μF and TRACE, the per-channel mean for SaCo and the cumulative metrics);
    any ``perturb.Reference`` replaces it for all of them (Few-class Fid keeps its perturbed images). seed: every
    random draw (the same for every explainer). chunk_size: samples per chunk (None: all at once, or each batch of
    an iterable; the Monte-Carlo masks of a chunk are held in memory); every random draw is keyed to the sample's
    global index, so no score depends on the chunks, the batches or how the data is split. batch_size: inputs per
    forward call: None (the default: a size fixed by the model's activations, the same on every run,
    :func:`faithlab.perturb.default_batch.default_batch_size`), an int, or ``"auto"`` (found on the run's own calls;
    not bitwise repeatable). progress: a tqdm bar over the chunks (None: on unless the environment sets
    ``FAITHLAB_PROGRESS=0``, as the study runner does). rows: a CSV path; the rows are appended to
    ``<rows>.partial`` as each chunk finishes and the whole frame is written to ``rows`` at the end (the partial
    file is removed then; after an error it stays, holding the rows computed). checkpoint: a folder (created if
    needed) where each chunk is kept as it finishes (its rows, what the hints and the cost table read, its
    warnings; JSON files), so that a call cut short (Ctrl-C, a crash) and repeated with the same arguments and
    ``chunk_size`` reads the finished chunks back instead of computing them and returns the same frame, scores
    bitwise equal (the cost table's seconds add the first call's); a folder written by a call with other metrics,
    explainers, options, batch size or model weights is refused (``CheckpointMismatch``, a ValueError), and so is a
    chunk whose inputs differ. Not with the dataset-level metrics (ReCo, MeGe), which read every sample at the end.
    The folder is left in place: remove it once the result is kept (``faithlab evaluate --resume`` does).
    budget: seconds, or text like ``"10m"``: the Monte-Carlo counts (``n_samples``, ``n_subsets``,
    ``n_neighbours``; those not passed) are chosen so that the estimated call fits, from timings of the model and
    the explainers on x's first chunk (:mod:`faithlab.evaluation.budget`; x must be one tensor); the choice is in
    ``attrs["budget"]`` and each score's precision in ``mc_se``. A budget that cannot be met is a ValueError naming
    the samples that would fit. None: the papers' counts.

    Returns a DataFrame with columns ``explainer``, ``sample`` (nullable int, the global index; missing for
    dataset-level metrics), ``metric``, ``label``, ``paper``, ``level``, ``score``, ``higher_is_better``,
    ``direction`` and ``mc_se``: the score's Monte-Carlo standard error where the metric is a Monte-Carlo estimate
    (RFid±, FFid±: sd/√N per size, combined over the sizes; μF: the jackknife over its subsets; S_avg: sd/√N over
    its neighbours), read from the draws the score is computed from, NaN for a deterministic metric. Its
    ``attrs["cost"]`` (see :func:`cost`) and ``attrs["forward_inputs"]`` count the model's work.
    A model returning NaN/inf raises a ValueError naming the samples, and so does an explainer returning NaN/inf maps
    (S_avg, ReCo, MeGe); constant maps are scored as each metric documents. A metric constant (or NaN) across the
    samples for a known reason (no correct prediction for an accuracy form, constant maps, a perturbation that never
    moves the model, ...) is explained by a :class:`faithlab.evaluation.hints.DegenerateResultWarning` (hints=False:
    no warning, as for a model randomised on purpose); the messages are in ``attrs["hints"]`` either way
    (:mod:`faithlab.evaluation.hints`).
    """
    allocation = None
    with _validate.checked():  # what the boundary checks is not checked again inside the call
        call = check(model, x, y, attributions, metrics=metrics, explainer=explainer, finetuned=finetuned,
                     finetune=finetune, kfold=kfold, chunk_size=chunk_size, batch_size=batch_size, progress=progress,
                     rows=rows, checkpoint=checkpoint, hints=hints, options=options)
        if budget is not None:
            if call.stream:
                raise TypeError("budget needs x as one tensor (its number of samples sets the cost), not an iterable "
                                "of batches")
            counts, allocation = budgeting.for_evaluate(
                model, call.x, budget, call.options, explainers=call.explainers, names=call.names,
                metrics=call.chosen, finetuned=call.has["finetuned"], kfold=0 if kfold is None else len(kfold.models),
                chunk_size=call.chunk, batch_size=batch_size, given=list(call.options))
            call = call.with_options(counts)
        frame = Engine(call).run()
    if allocation is not None:
        frame.attrs["budget"] = allocation
    return frame


def _signature() -> None:
    """``help(evaluate)`` shows every registered metric, from its declaration, and every option with its default
    (kept in step with the registry)."""
    params = [p for p in _BASE.parameters.values() if p.kind != p.VAR_KEYWORD]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
               for o in registry.OPTIONS.values()]
    evaluate.__signature__ = _BASE.replace(parameters=params)
    if _DOC is not None:  # None under python -OO
        evaluate.__doc__ = _DOC.replace("{metrics}", "\n".join(_bullet(m) for m in METRICS.values()))


def _bullet(metric: registry.Metric) -> str:
    """One metric in ``help(evaluate)``: its label, name and paper, what it measures, the options and inputs it
    reads."""
    import textwrap

    head = (f"{metric.label} (``{metric.name}``, {registry.PAPERS.get(metric.paper, metric.paper)}): "
            f"{metric.doc or 'see its function'}")
    parts = []
    if metric.options:
        parts.append("options " + ", ".join(f"``{o.name}`` = {_short(registry.OPTIONS[o.name].default)}"
                                            for o in metric.options))
    if metric.needs:
        parts.append("needs " + ", ".join(registry.NEEDS[n] for n in metric.needs))
    tail = "; ".join(parts)
    text = head if not tail else head + (" " if head.endswith(("?", ".")) else ". ") + tail[0].upper() + tail[1:]
    return textwrap.fill(text if text.endswith(("?", ".")) else text + ".", width=112, initial_indent="    * ",
                         subsequent_indent="      ")


def _short(value) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 5:
        return f"({value[0]!r}, {value[1]!r}, …, {value[-1]!r}: {len(value)} values)"
    return repr(value)


_BASE = inspect.signature(evaluate)
_DOC = evaluate.__doc__
registry.add_listener(_signature)
_signature()

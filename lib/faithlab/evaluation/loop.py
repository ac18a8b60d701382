"""``fl.evaluate``: the registry loop. Checks the inputs once, then, chunk by chunk, runs the clean pass, the shared
inputs and every chosen metric of every explainer, as the metrics declare themselves in
:mod:`faithlab.metrics.registry`; dataset-level metrics run once over all samples after the chunks. It knows no
metric by name: a registered metric is computed like the study's own."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence

import torch

from faithlab import _progress, _validate, perturb
from faithlab.evaluation import frame as frames
from faithlab.metrics import registry
from faithlab.metrics.registry import METRICS, NEEDS, Context, Tally

__all__ = ["evaluate", "available"]


def available() -> list[str]:
    """The metric names :func:`evaluate` accepts, in registration order."""
    return list(METRICS)


def _maps(attributions, x: torch.Tensor) -> dict[str, torch.Tensor]:
    if isinstance(attributions, torch.Tensor):
        attributions = {"explainer": attributions}
    if not isinstance(attributions, Mapping) or not attributions:
        raise TypeError("attributions must be a tensor of maps or a non-empty mapping {explainer name: maps}, got "
                        f"{type(attributions).__name__}")
    out = {}
    for name, a in attributions.items():
        if not isinstance(name, str):
            raise TypeError(f"attributions keys must be explainer names (str), got {name!r}")
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"attributions[{name!r}] must be a tensor, got {type(a).__name__}")
        try:
            perturb.check_attributions(a, x)
            perturb.unit_scores(a, perturb.default_units(x), reduce="sum")
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"attributions[{name!r}]: {exc}") from None
        if a.shape[0] != x.shape[0]:
            raise ValueError(f"attributions[{name!r}] has {a.shape[0]} maps but x has {x.shape[0]} samples")
        _validate.same_device(x, a, "x", f"attributions[{name!r}]")
        out[name] = a
    return out


def _per_explainer(value, names: list[str], arg: str):
    """``explainer=`` as one callable for every explainer or a mapping per explainer name."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"{arg} names explainers {unknown} that attributions does not have ({names})")
        bad = [k for k, v in value.items() if not callable(v)]
        if bad:
            raise TypeError(f"{arg}[{bad[0]!r}] must be a callable(model, inputs, target) -> maps")
        return dict(value)
    if not callable(value):
        raise TypeError(f"{arg} must be a callable(model, inputs, target) -> maps or a mapping of them, got "
                        f"{type(value).__name__}")
    return {name: value for name in names}


def _choose(requested, *, has: dict[str, bool]) -> list[str]:
    if requested is None:
        return [m for m, info in METRICS.items() if all(has[n] for n in info.needs)]
    if isinstance(requested, str) or not isinstance(requested, Sequence):
        raise TypeError(f"metrics must be a list of metric names (see faithlab.evaluation.available()), got "
                        f"{requested!r}")
    chosen = []
    for m in requested:
        if m not in METRICS:
            raise ValueError(f"metrics: unknown metric {m!r}; known: {', '.join(METRICS)}")
        missing = [NEEDS[n] for n in METRICS[m].needs if not has[n]]
        if missing:
            raise ValueError(f"metrics: {m!r} needs {' and '.join(missing)}")
        if m not in chosen:
            chosen.append(m)
    if not chosen:
        raise ValueError("metrics must name at least one metric")
    return chosen


def _check_kfold(kfold, x: torch.Tensor) -> None:
    if not hasattr(kfold, "models") or not hasattr(kfold, "folds"):
        raise TypeError("kfold must have .models (k models) and .folds ((B,) fold of each sample), e.g. "
                        "fl.train.cross_train(...)")
    if len(kfold.models) < 2 or tuple(kfold.folds.shape) != (x.shape[0],):
        raise ValueError(f"kfold must hold k ≥ 2 models and folds of shape ({x.shape[0]},) (x's samples), got "
                         f"{len(kfold.models)} models and folds {tuple(kfold.folds.shape)}")


class _Costs:
    """The cost table: one row per (group, explainer), in the order the work first happened."""

    def __init__(self, tally: Tally):
        self.tally, self.rows = tally, {}

    def run(self, group: str, who: str, fn: Callable[[], object], explained: Callable[[], int] = lambda: 0):
        before, start = self.tally.totals(), time.perf_counter()
        value = fn()
        seconds, after = time.perf_counter() - start, self.tally.totals()
        row = self.rows.setdefault((group, who), {"group": group, "explainer": who, "forward_inputs": 0,
                                                  "model_calls": 0, "explained_inputs": 0, "seconds": 0.0})
        row["forward_inputs"] += after[0] - before[0]
        row["model_calls"] += after[1] - before[1]
        row["explained_inputs"] += explained()
        row["seconds"] += seconds
        return value


def evaluate(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions, *,
             metrics: Sequence[str] | None = None, explainer=None, finetuned: Callable | None = None,
             finetune: Callable[[], Callable] | None = None, kfold=None, chunk_size: int | None = None,
             batch_size: int = 256, progress: bool | None = None, **options):
    """Every registered faithfulness metric for one or several explainers of one model → tidy pandas frame.

    model: eval-mode classifier returning logits. x: ``(B, C, H, W)`` images (the patch and Few-class metrics need
    images), ``(B, T, C)`` series or tokens. y: ``(B,)`` int64 labels (read by Fid± and the accuracy AUC, where the
    papers read the true labels). attributions: maps of x (any layout ``perturb.unit_scores`` accepts), one tensor
    or ``{explainer name: maps}``; they should explain the model's prediction ŷ, the class every other metric reads
    (``target``). metrics: names from :func:`available` (None: every metric the arguments allow).

    The metrics and their options are those of :mod:`faithlab.metrics.registry` (the study's own are declared in
    :mod:`faithlab.metrics.catalogue`; :func:`faithlab.evaluation.describe` lists each metric's paper, direction,
    needs and options):

    * Fid± (α = 1), RFid± (α = ``alpha``, ``n_samples`` Monte-Carlo masks), FFid± (on ``finetuned``, or the model
      ``finetune()`` returns, with α and the cap ``beta``): F-Fidelity eqs. 1–6, accuracy form, mean over the
      explanation sizes ``sparsity`` (Fid+ removes the top s, Fid− the bottom s). Defaults α 0.5, β 0.1, N 50 (the
      paper's code). The paper explains the fine-tuned model for FFid; here the given maps are used for all three.
    * Few-class Fid: MIF/LIF areas over ``fewclass_fractions`` (default 0, 0.01, …, 1) with ``perturbed`` images
      (None: ``select_perturbation`` once for all maps, on pixel values when ``normalisation`` gives the
      ``(mean, std)`` x was normalised with, e.g. a dataset's ``info['mean']``, ``info['std']``).
    * SaCo with ``saco_k`` groups; AUC, AOPC, LOdds (one MoRF curve) and Comprehensiveness at 0, 10, …, 100 %.
    * μF (``n_subsets`` subsets of 15 %), S_avg (``n_neighbours`` neighbours within ``radius``; needs
      ``explainer``), ReCo and MeGe (need ``kfold``, an object with ``models`` (k eval-mode models) and ``folds``
      ``(B,)`` — e.g. ``fl.train.cross_train(...)`` on the data x comes from — and ``explainer``).
    * ΣLeRF, ΣMoRF, ΣLeRF − ΣMoRF: TRACE's patch deletion curves on an ``edge`` × ``edge`` grid (None: 7, 4 or 2,
      the first that divides the side), trajectory from the map's patch means.

    explainer: ``explainer(model, inputs, target) → maps`` (one callable, or one per explainer name), used by
    S_avg on neighbours and by ReCo/MeGe on the fold models. If it has a ``seeds`` parameter with a default (e.g.
    ``lambda m, i, t, seeds=None: explain(m, i, t, method="smoothgrad", generator=0, sample_seeds=seeds)``), S_avg
    passes ``seeds=`` ``(rows,)`` int64, one per input, equal for a sample and its neighbours (common random numbers:
    a stochastic explainer's S_avg then measures the map's change, not its Monte-Carlo noise); without one it
    cannot share its noise and is called as above (ReCo/MeGe never pass seeds). reference: None keeps each metric's
    own removal value (zero for F-Fidelity, μF and TRACE, the per-channel mean for SaCo and the cumulative metrics);
    any ``perturb.Reference`` replaces it for all of them (Few-class Fid keeps its perturbed images). seed: every
    random draw (the same for every explainer). chunk_size: samples per chunk (None: all at once; the Monte-Carlo
    masks of a chunk are held in memory); results equal the metric calls on each chunk with the chunk's global
    ``sample_index``: every random draw is keyed to the sample, so no score depends on the chunks. batch_size:
    inputs per forward call. progress: a tqdm bar over the chunks (None: on unless the environment sets
    ``FAITHLAB_PROGRESS=0``, as the study runner does).

    Returns a DataFrame with columns ``explainer``, ``sample`` (nullable int; missing for dataset-level metrics),
    ``metric``, ``label``, ``paper``, ``level``, ``score``, ``higher_is_better`` and ``direction``. Its
    ``attrs["cost"]`` (see :func:`cost`) and ``attrs["forward_inputs"]`` count the model's work. A model returning
    NaN/inf raises a ValueError naming the samples, and so does an explainer returning NaN/inf maps (S_avg, ReCo,
    MeGe); constant maps are scored as each metric documents.
    """
    from tqdm.auto import tqdm

    _validate.model(model, "model")
    _validate.tensor(x, "x", ndim=(2, 3, 4))
    _validate.tensor(y, "y", ndim=1)
    if y.dtype != torch.int64:
        raise TypeError(f"y must be an int64 tensor of class labels, got dtype {y.dtype}")
    _validate.batch_match(x, y, "x", "y")
    _validate.same_device(x, y, "x", "y")
    _validate.model_accepts(model, x, "model", "x")
    maps = _maps(attributions, x)
    names = list(maps)
    explainers = _per_explainer(explainer, names, "explainer")
    if finetuned is not None and finetune is not None:
        raise ValueError("pass finetuned= (a model) or finetune= (a recipe returning one), not both")
    if finetune is not None and not callable(finetune):
        raise TypeError(f"finetune must be a callable() -> fine-tuned model, got {type(finetune).__name__}")
    if finetuned is not None:
        _validate.model(finetuned, "finetuned")
    if kfold is not None:
        _check_kfold(kfold, x)
    has = {"finetuned": finetuned is not None or finetune is not None,
           "explainer": bool(explainers) and set(explainers) == set(names), "kfold": kfold is not None,
           "images": x.ndim == 4}
    chosen = _choose(metrics, has=has)
    _validate.positive_int(batch_size, "batch_size")
    values = registry.check_options(options, chosen, x)
    n = x.shape[0]
    chunk = n if chunk_size is None else _validate.positive_int(chunk_size, "chunk_size")

    per_sample = [m for m in chosen if METRICS[m].level == "sample"]
    per_dataset = [m for m in chosen if METRICS[m].level == "dataset"]
    groups = list(dict.fromkeys(METRICS[m].group for m in per_sample))
    dataset_groups = list(dict.fromkeys(METRICS[m].group for m in per_dataset))
    shared_inputs = list(dict.fromkeys(s for m in per_sample for s in METRICS[m].uses))
    dataset_inputs = list(dict.fromkeys(s for m in per_dataset for s in METRICS[m].uses))
    tally = Tally()
    counted = tally.counted(model)
    costs = _Costs(tally)
    tuned = None
    records: list[dict] = []

    def context(xc, yc, target, index, *, who="all", a=None, model_=None, inputs=None) -> Context:
        return Context(model=model_ if model_ is not None else counted, x=xc, labels=yc, target=target,
                       attributions=a, name=who, explainer=explainers.get(who), sample_index=index, options=values,
                       batch_size=batch_size, kfold=kfold, inputs=inputs or {}, user_model=model, tally=tally)

    def emit(who: str, metric: str, scores, start: int | None) -> None:
        if start is None:
            records.append({"explainer": who, "sample": None, "metric": metric, "score": float(scores)})
            return
        values_ = scores.detach().double().cpu().tolist()
        records.extend({"explainer": who, "sample": start + i, "metric": metric, "score": v}
                       for i, v in enumerate(values_))

    chunks = [(b0, min(n, b0 + chunk)) for b0 in range(0, n, chunk)]
    total = len(chunks) * (1 + len(names) * len(groups)) + len(names) * len(dataset_groups)
    bar = tqdm(total=total, desc="evaluate", disable=not _progress.enabled(progress), leave=False)
    try:
        for b0, b1 in chunks:
            xc, yc = x[b0:b1], y[b0:b1]
            index = torch.arange(b0, b1)  # global sample indices: random draws do not depend on chunk_size

            def clean():
                none = torch.zeros(b1 - b0, perturb.default_units(xc).n, dtype=torch.bool, device=x.device)
                logits = perturb.removal_outputs(counted, xc, none, output=lambda z, _: z,
                                                 target=torch.zeros(b1 - b0, dtype=torch.int64, device=x.device),
                                                 batch_size=batch_size)
                bad = (yc < 0) | (yc >= logits.shape[1])  # the labels are read as classes of these logits
                if bool(bad.any()):
                    i = int(bad.nonzero()[0, 0])
                    raise ValueError(f"y holds class {int(yc[i])} (sample {b0 + i}) but the model returns "
                                     f"{logits.shape[1]} logits: y must hold class indices in [0, "
                                     f"{logits.shape[1] - 1}]")
                return logits.argmax(dim=1)

            target = costs.run("clean", "all", clean)
            bar.set_postfix_str("clean pass")
            bar.update()
            inputs = {}
            for name in shared_inputs:
                inputs[name] = costs.run(name, "all", lambda: registry.SHARED[name].compute(
                    context(xc, yc, target, index)))
            if any(METRICS[m].model == "finetuned" for m in per_sample) and tuned is None:
                tuned = tally.counted(finetuned if finetuned is not None else finetune())
                _validate.model(tuned.model, "the model finetune() returned" if finetuned is None else "finetuned")
            for who in names:
                a = maps[who][b0:b1]
                for group in groups:
                    bar.set_postfix_str(f"{who}: {group}")
                    want = [m for m in per_sample if METRICS[m].group == group]
                    use = tuned if METRICS[want[0]].model == "finetuned" else counted
                    c = context(xc, yc, target, index, who=who, a=a, model_=use, inputs=inputs)

                    def run_group():
                        for m in want:
                            emit(who, m, METRICS[m].run(c), b0)

                    costs.run(group, who, run_group, lambda: c.explained)
                    bar.update()
        if per_dataset:
            index = torch.arange(n)
            inputs = {}
            for name in dataset_inputs:
                inputs[name] = costs.run(name, "all", lambda: registry.SHARED[name].compute(
                    context(x, y, None, index)))
            for who in names:
                for group in dataset_groups:
                    bar.set_postfix_str(f"{who}: {group}")
                    want = [m for m in per_dataset if METRICS[m].group == group]
                    c = context(x, y, None, index, who=who, a=maps[who], inputs=inputs)

                    def run_dataset():
                        for m in want:
                            emit(who, m, METRICS[m].run(c), None)

                    costs.run(group, who, run_dataset, lambda: c.explained)
                    bar.update()
    finally:
        bar.close()
    return frames.tidy(records, chosen, names, list(costs.rows.values()))


def _signature() -> None:
    """``help(evaluate)`` shows every registered option with its default (kept in step with the registry)."""
    params = [p for p in _BASE.parameters.values() if p.kind != p.VAR_KEYWORD]
    params += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
               for o in registry.OPTIONS.values()]
    evaluate.__signature__ = _BASE.replace(parameters=params)


_BASE = inspect.signature(evaluate)
registry._LISTENERS.append(_signature)
_signature()

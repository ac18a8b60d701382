"""Every metric of the study in one call: ``fl.evaluate(model, x, y, attributions)`` → a tidy pandas frame.

One row per explainer × sample × metric (dataset-level metrics, ReCo and MeGe, one row per explainer with
``sample`` missing), with the metric's paper and direction. The metric code is the library's own
(:mod:`faithlab.metrics`); this module only chooses the calls and shares their work:

* the clean forward pass runs once; its prediction ŷ is the class every metric explains (``target``);
* accuracy AUC, AOPC and LOdds read one most-salient-first removal curve
  (:func:`faithlab.metrics.cumulative.morf_details`), TRACE's ΣLeRF, ΣMoRF and their difference one pair of patch deletion curves, Few-class
  Fidelity's perturbed images are selected once for all explainers, the k fold models' predictions once;
* every random metric of every explainer gets the same seed (common random numbers), so explainers differ by
  their maps only.

A progress bar (tqdm) runs over the chunks of samples × explainers × metric groups (``progress``: by default on,
except where ``FAITHLAB_PROGRESS=0``, as in the study runner's kernels), and the frame's ``attrs["cost"]``
records, per metric group and explainer, the model inputs evaluated, the model calls, the inputs given to the
explainer and the seconds (:func:`cost`); ``attrs["forward_inputs"]`` is the total.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from faithlab import _progress, _validate, perturb
from faithlab import metrics as fm
from faithlab.metrics import cumulative, fewclass, trace

__all__ = ["MetricInfo", "METRICS", "PAPER_METRICS", "available", "evaluate", "cost", "oriented"]


@dataclass(frozen=True)
class MetricInfo:
    """What :func:`evaluate` knows of a metric: its display ``label``, ``paper`` (chapter slug), direction,
    ``level`` ("sample" or "dataset"), the arguments it ``needs`` beyond model, x, y and attributions, the shared
    ``group`` it is computed in, and its ``ideal`` value and ``span`` (range width) where the metric defines one."""

    name: str
    label: str
    paper: str
    higher_is_better: bool
    group: str
    level: str = "sample"
    needs: tuple[str, ...] = ()
    ideal: float | None = None
    span: float | None = None


_M = MetricInfo
METRICS: dict[str, MetricInfo] = {m.name: m for m in (
    _M("fid+", "Fid+", "ffidelity", True, "fid"),
    _M("fid-", "Fid−", "ffidelity", False, "fid"),
    _M("rfid+", "RFid+", "ffidelity", True, "rfid"),
    _M("rfid-", "RFid−", "ffidelity", False, "rfid"),
    _M("ffid+", "FFid+", "ffidelity", True, "ffid", needs=("finetuned",)),
    _M("ffid-", "FFid−", "ffidelity", False, "ffid", needs=("finetuned",)),
    _M("fewclass_fid", "Few-class Fid", "fewclass", True, "fewclass", needs=("images",), ideal=1.0, span=1.0),
    _M("saco", "SaCo", "saco", True, "saco", ideal=1.0, span=2.0),
    _M("auc_accuracy", "AUC", "saco", False, "morf"),
    _M("aopc", "AOPC", "saco", True, "morf"),
    _M("log_odds", "LOdds", "saco", False, "morf"),
    _M("comprehensiveness", "Comprehensiveness", "saco", False, "lerf"),
    _M("mu_fidelity", "μF", "reco_mege", True, "mu_fidelity", ideal=1.0, span=2.0),
    _M("s_avg", "S_avg", "reco_mege", False, "s_avg", needs=("explainer",), ideal=0.0),
    _M("lerf", "ΣLeRF", "trace", True, "trace", needs=("images",)),
    _M("morf", "ΣMoRF", "trace", False, "trace", needs=("images",)),
    _M("le-mo", "ΣLeRF − ΣMoRF", "trace", True, "trace", needs=("images",)),
    _M("reco", "ReCo", "reco_mege", True, "reco_mege", level="dataset", needs=("kfold", "explainer")),
    _M("mege", "MeGe", "reco_mege", True, "reco_mege", level="dataset", needs=("kfold", "explainer"), ideal=1.0,
       span=1.0),
)}
"""Every metric :func:`evaluate` computes, by the name ``metrics=[...]`` takes."""

PAPER_METRICS: dict[str, list[str]] = {}
for _info in METRICS.values():
    PAPER_METRICS.setdefault(_info.paper, []).append(_info.label)
"""Display names of the metrics of each paper (chapter slug → labels), for the book's study map."""

SPARSITY = tuple(round(0.1 * i, 1) for i in range(1, 10))
_NEEDS = {"finetuned": "finetuned= (or finetune=)", "explainer": "explainer=", "kfold": "kfold=",
          "images": "x of images (B, C, H, W)"}


def available() -> list[str]:
    """The metric names :func:`evaluate` accepts, in the order of :data:`METRICS`."""
    return list(METRICS)


class _Counted:
    """A model that counts its calls and the inputs it is given (not an nn.Module: the caller's model is checked
    before it is wrapped)."""

    def __init__(self, model: Callable):
        self.model, self.calls, self.inputs = model, 0, 0

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.inputs += inputs.shape[0]
        return self.model(inputs)


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
        missing = [_NEEDS[n] for n in METRICS[m].needs if not has[n]]
        if missing:
            raise ValueError(f"metrics: {m!r} needs {' and '.join(missing)}")
        if m not in chosen:
            chosen.append(m)
    if not chosen:
        raise ValueError("metrics must name at least one metric")
    return chosen


def _edge(x: torch.Tensor, edge: int | None) -> int:
    if edge is not None:
        return _validate.positive_int(edge, "edge")
    side = x.shape[-1]
    for e in (7, 4, 2):  # TRACE's default grid is 7 × 7; the largest of these that divides the image side
        if x.shape[-2] == side and side % e == 0 and side // e >= 1:
            return e
    raise ValueError(f"edge: no default patch grid divides images of {x.shape[-2]}×{side}; pass edge=")


def evaluate(model: Callable, x: torch.Tensor, y: torch.Tensor, attributions, *,
             metrics: Sequence[str] | None = None, explainer=None, finetuned: Callable | None = None,
             finetune: Callable[[], Callable] | None = None, kfold=None, perturbed: torch.Tensor | None = None,
             reference: perturb.Reference | None = None, sparsity: Sequence[float] = SPARSITY,
             alpha: float = 0.5, beta: float = 0.1, n_samples: int = 50, saco_k: int = 10, edge: int | None = None,
             fewclass_fractions: Sequence[float] = fewclass.FRACTIONS, normalisation: tuple | None = None,
             n_subsets: int = 200, n_neighbours: int = 50, radius: float = 0.1, seed: int = 0,
             chunk_size: int | None = None, batch_size: int = 256, progress: bool | None = None):
    """Every faithfulness metric of the study for one or several explainers of one model → tidy pandas frame.

    model: eval-mode classifier returning logits. x: ``(B, C, H, W)`` images (the patch and Few-class metrics need
    images), ``(B, T, C)`` series or tokens. y: ``(B,)`` int64 labels (read by Fid± and the accuracy AUC).
    attributions: maps of x (any layout ``perturb.unit_scores`` accepts), one tensor or ``{explainer name: maps}``;
    they should explain the model's prediction ŷ, the class every metric reads.
    metrics: names from :func:`available` (None: every metric the arguments allow). Options by metric:

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
    own removal value (zero for F-Fidelity, μF and TRACE, the per-channel mean for SaCo and the cumulative metrics); any
    ``perturb.Reference`` replaces it for all of them (Few-class Fid keeps its perturbed images). seed: every random
    draw (the same for every explainer). chunk_size: samples per chunk (None: all at once; the Monte-Carlo masks of
    a chunk are held in memory); results equal the metric calls on each chunk with the chunk's global
    ``sample_index``: every random draw is keyed to the sample, so no score depends on the chunks. batch_size:
    inputs per forward call. progress: a tqdm bar over the chunks (None: on unless the environment sets
    ``FAITHLAB_PROGRESS=0``, as the study runner does).

    Returns a DataFrame with columns ``explainer``, ``sample`` (nullable int; missing for dataset-level metrics),
    ``metric``, ``label``, ``paper``, ``level``, ``score``, ``higher_is_better`` and ``direction``. Its
    ``attrs["cost"]`` (see :func:`cost`) and ``attrs["forward_inputs"]`` count the model's work. A model returning
    NaN/inf raises a ValueError naming the samples, and so does an explainer returning NaN/inf maps (S_avg, ReCo,
    MeGe); constant maps are scored as each metric documents.
    """
    import pandas as pd
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
        if not hasattr(kfold, "models") or not hasattr(kfold, "folds"):
            raise TypeError("kfold must have .models (k models) and .folds ((B,) fold of each sample), e.g. "
                            "fl.train.cross_train(...)")
        if len(kfold.models) < 2 or tuple(kfold.folds.shape) != (x.shape[0],):
            raise ValueError(f"kfold must hold k ≥ 2 models and folds of shape ({x.shape[0]},) (x's samples), got "
                             f"{len(kfold.models)} models and folds {tuple(kfold.folds.shape)}")
    has = {"finetuned": finetuned is not None or finetune is not None,
           "explainer": bool(explainers) and set(explainers) == set(names), "kfold": kfold is not None,
           "images": x.ndim == 4}
    chosen = _choose(metrics, has=has)
    levels = _validate.fractions(sparsity, "sparsity").tolist()
    _validate.fraction(alpha, "alpha", closed_low=False)
    _validate.fraction(beta, "beta", closed_low=False)
    for value, arg in ((n_samples, "n_samples"), (saco_k, "saco_k"), (n_subsets, "n_subsets"),
                       (n_neighbours, "n_neighbours"), (batch_size, "batch_size")):
        _validate.positive_int(value, arg)
    # the metric functions' own checks would name their arguments (k, fractions) or the spoilt inputs: name ours
    if "saco" in chosen and saco_k > (units := perturb.default_units(x).n):
        raise ValueError(f"saco_k must be at most the number of units of x ({units}), got {saco_k}")
    _validate.fractions(fewclass_fractions, "fewclass_fractions", increasing=True)
    if not 0 < _validate.number(radius, "radius") < math.inf:
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    n = x.shape[0]
    chunk = n if chunk_size is None else _validate.positive_int(chunk_size, "chunk_size")
    groups = list(dict.fromkeys(METRICS[m].group for m in chosen))
    edge_ = _edge(x, edge) if "trace" in groups else None
    if perturbed is not None:
        _validate.tensor(perturbed, "perturbed", ndim=4)
        if perturbed.shape != x.shape:
            raise ValueError(f"perturbed must have x's shape {tuple(x.shape)}, got {tuple(perturbed.shape)}")
    counted = _Counted(model)
    tuned = None
    records: list[dict] = []
    cost_rows: dict[tuple[str, str], dict] = {}

    def account(group: str, who: str, model_: _Counted | None, before: tuple[int, int], seconds: float,
                explained: int = 0) -> None:
        row = cost_rows.setdefault((group, who), {"group": group, "explainer": who, "forward_inputs": 0,
                                                  "model_calls": 0, "explained_inputs": 0, "seconds": 0.0})
        if model_ is not None:
            row["forward_inputs"] += model_.inputs - before[0]
            row["model_calls"] += model_.calls - before[1]
        row["explained_inputs"] += explained
        row["seconds"] += seconds

    def emit(who: str, metric: str, scores: torch.Tensor | float, start: int | None) -> None:
        info = METRICS[metric]
        if start is None:
            records.append({"explainer": who, "sample": None, "metric": metric, "score": float(scores)})
            return
        values = scores.detach().double().cpu().tolist()
        records.extend({"explainer": who, "sample": start + i, "metric": metric, "score": v}
                       for i, v in enumerate(values))

    chunks = [(b0, min(n, b0 + chunk)) for b0 in range(0, n, chunk)]
    per_sample_groups = [g for g in groups if g != "reco_mege"]
    total = len(chunks) * (1 + len(names) * len(per_sample_groups)) + (len(names) if "reco_mege" in groups else 0)
    bar = tqdm(total=total, desc="evaluate", disable=not _progress.enabled(progress), leave=False)
    ref = {} if reference is None else {"reference": reference}
    try:
        for b0, b1 in chunks:
            xc, yc = x[b0:b1], y[b0:b1]
            start, before = time.perf_counter(), (counted.inputs, counted.calls)
            none = torch.zeros(b1 - b0, perturb.default_units(xc).n, dtype=torch.bool, device=x.device)
            logits = perturb.removal_outputs(counted, xc, none, output=lambda z, _: z,
                                             target=torch.zeros(b1 - b0, dtype=torch.int64, device=x.device),
                                             batch_size=batch_size)
            target = logits.argmax(dim=1)
            account("clean", "all", counted, before, time.perf_counter() - start)
            bar.set_postfix_str("clean pass")
            bar.update()
            sel = None
            if "fewclass" in groups:
                if perturbed is not None:
                    sel = perturbed[b0:b1]
                else:
                    start, before = time.perf_counter(), (counted.inputs, counted.calls)
                    sel = fewclass.select_perturbation(counted, xc, normalisation=normalisation,
                                                       batch_size=batch_size)["image"]
                    account("fewclass selection", "all", counted, before, time.perf_counter() - start)
            if "ffid" in groups and tuned is None:
                tuned = _Counted(finetuned if finetuned is not None else finetune())
                _validate.model(tuned.model, "the model finetune() returned" if finetuned is None else "finetuned")
            for who in names:
                a = maps[who][b0:b1]
                for group in per_sample_groups:
                    bar.set_postfix_str(f"{who}: {group}")
                    use = tuned if group == "ffid" else counted
                    start, before = time.perf_counter(), (use.inputs, use.calls)
                    explained = _group(group, chosen, emit, who, b0, use, xc, yc, a, target, sel, ref, levels,
                                       alpha=alpha, beta=beta, n_samples=n_samples, saco_k=saco_k, edge=edge_,
                                       fewclass_fractions=fewclass_fractions,
                                       n_subsets=n_subsets, n_neighbours=n_neighbours, radius=radius, seed=seed,
                                       batch_size=batch_size, explainer=explainers.get(who), model_user=model)
                    account(group, who, use, before, time.perf_counter() - start, explained)
                    bar.update()
        if "reco_mege" in groups:
            k = len(kfold.models)
            folded = [_Counted(m) for m in kfold.models]
            start = time.perf_counter()
            none = torch.zeros(n, perturb.default_units(x).n, dtype=torch.bool, device=x.device)
            predictions = []  # once for every explainer
            for i, (m, c) in enumerate(zip(kfold.models, folded)):
                _validate.model(m, f"kfold.models[{i}]")
                predictions.append(perturb.removal_outputs(c, x, none, output="predicted", target=y,
                                                           batch_size=batch_size))
            shared = time.perf_counter() - start
            for who in names:
                bar.set_postfix_str(f"{who}: reco_mege")
                start = time.perf_counter()
                fn = explainers[who]
                stacks = [torch.cat([_explained(who, fn(m, x[c0:c0 + batch_size], pred[c0:c0 + batch_size]),
                                                x[c0:c0 + batch_size], f"kfold.models[{i}]")
                                     for c0 in range(0, n, batch_size)])
                          for i, (m, pred) in enumerate(zip(kfold.models, predictions))]
                for i, maps_i in enumerate(stacks):  # NaN maps would drop out of S= and S≠: a NaN score
                    if maps_i.is_floating_point() and not bool(torch.isfinite(maps_i).all()):
                        bad = (~torch.isfinite(maps_i)).reshape(maps_i.shape[0], -1).any(dim=1)
                        bad = bad.nonzero().flatten()[:8].tolist()
                        raise ValueError(f"explainer {who!r} returned NaN or inf maps on kfold.models[{i}] for "
                                         f"samples {bad}")
                d = fm.reco_mege_details(torch.stack(stacks), torch.stack(predictions), y,
                                         kfold.folds.to(x.device), batch_size=batch_size)
                for metric in ("reco", "mege"):
                    if metric in chosen:
                        emit(who, metric, d[metric], None)
                row = cost_rows.setdefault(("reco_mege", who), {
                    "group": "reco_mege", "explainer": who, "forward_inputs": 0, "model_calls": 0,
                    "explained_inputs": 0, "seconds": 0.0})
                row["explained_inputs"] += k * n
                row["seconds"] += time.perf_counter() - start
                bar.update()
            cost_rows[("reco_mege predictions", "all")] = {
                "group": "reco_mege predictions", "explainer": "all", "forward_inputs": sum(c.inputs for c in folded),
                "model_calls": sum(c.calls for c in folded), "explained_inputs": 0, "seconds": shared}
    finally:
        bar.close()
    frame = pd.DataFrame.from_records(records, columns=["explainer", "sample", "metric", "score"])
    frame["sample"] = frame["sample"].astype("Int64")
    info = frame["metric"].map(METRICS)
    frame.insert(3, "label", info.map(lambda i: i.label))
    frame.insert(4, "paper", info.map(lambda i: i.paper))
    frame.insert(5, "level", info.map(lambda i: i.level))
    frame["higher_is_better"] = info.map(lambda i: i.higher_is_better).astype(bool)
    frame["direction"] = frame["higher_is_better"].map({True: "higher is better", False: "lower is better"})
    order = {m: i for i, m in enumerate(chosen)}
    frame = frame.sort_values(["explainer", "metric", "sample"], key=lambda s: s.map(order) if s.name == "metric"
                              else s.map({w: i for i, w in enumerate(names)}) if s.name == "explainer" else s,
                              kind="stable").reset_index(drop=True)
    frame.attrs["cost"] = list(cost_rows.values())
    frame.attrs["forward_inputs"] = int(sum(r["forward_inputs"] for r in cost_rows.values()))
    return frame


def _explained(who: str, maps, inputs: torch.Tensor, where: str) -> torch.Tensor:
    """The explainer's maps of ``inputs``, detached, checked: a tensor of maps that fit the inputs (one per input,
    any layout ``perturb.check_attributions`` accepts), named by the explainer."""
    if not isinstance(maps, torch.Tensor):
        raise TypeError(f"explainer {who!r} must return a tensor of maps, got {type(maps).__name__} on {where}")
    try:
        perturb.check_attributions(maps, inputs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"explainer {who!r} returned maps that do not fit its {inputs.shape[0]} inputs on {where} "
                        f"(shape {tuple(inputs.shape)}): {exc}") from None
    return maps.detach()


def _takes_seeds_keyword(explainer: Callable) -> bool:
    """Whether the user's explainer has a ``seeds`` parameter that can be passed by keyword."""
    try:
        p = inspect.signature(explainer).parameters.get("seeds")
    except (TypeError, ValueError):  # no signature
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _group(group: str, chosen: list[str], emit: Callable, who: str, b0: int, model: _Counted, x: torch.Tensor,
           y: torch.Tensor, a: torch.Tensor, target: torch.Tensor, perturbed: torch.Tensor | None, ref: dict,
           levels: list[float], *, alpha: float, beta: float, n_samples: int, saco_k: int, edge: int | None,
           fewclass_fractions: Sequence[float],
           n_subsets: int, n_neighbours: int, radius: float, seed: int, batch_size: int, explainer: Callable | None,
           model_user: Callable) -> int:
    """Compute one metric group for one explainer on one chunk; emit its rows; return the inputs explained."""
    want = [m for m in chosen if METRICS[m].group == group]
    index = torch.arange(b0, b0 + x.shape[0])  # global sample indices: random draws do not depend on chunk_size
    if group in ("fid", "rfid", "ffid"):
        options = {"alpha": 1.0} if group == "fid" else {"alpha": alpha, "n_samples": n_samples,
                                                           "generator": seed, "sample_index": index}
        if group == "ffid":
            options["beta"] = beta
        for m in want:
            fn = fm.fid_plus if m.endswith("+") else fm.fid_minus
            scores = fn(model, x, y, a, levels, batch_size=batch_size, **ref, **options)
            emit(who, m, scores.mean(dim=1), b0)
        return 0
    if group == "morf":
        d = cumulative.morf_details(model, x, a, y, target, batch_size=batch_size, **ref)
        for m in want:
            emit(who, m, d[m], b0)
        return 0
    if group == "lerf":
        emit(who, "comprehensiveness", fm.comprehensiveness(model, x, a, target, batch_size=batch_size, **ref),
             b0)
        return 0
    if group == "saco":
        emit(who, "saco", fm.saco(model, x, a, k=saco_k, target=target, batch_size=batch_size, **ref), b0)
        return 0
    if group == "fewclass":
        emit(who, "fewclass_fid", fm.fewclass_fid(model, x, a, perturbed, target=target, generator=seed,
                                                  sample_index=index, fractions=fewclass_fractions,
                                                  batch_size=batch_size), b0)
        return 0
    if group == "mu_fidelity":
        emit(who, "mu_fidelity", fm.mu_fidelity(model, x, a, target, n_subsets=n_subsets, generator=seed,
                                                     sample_index=index, batch_size=batch_size, **ref), b0)
        return 0
    if group == "trace":
        tau = trace.trajectory_from_map(a, x, edge=edge)
        d = trace.lerf_morf_details(model, x, tau, edge=edge, target=target, batch_size=batch_size, **ref)
        for m, key in (("lerf", "lerf_auc"), ("morf", "morf_auc"), ("le-mo", "lerf_morf")):
            if m in want:
                emit(who, m, d[key], b0)
        return 0
    if group == "s_avg":
        explained = [0]

        if _takes_seeds_keyword(explainer):  # common random numbers: a sample and its neighbours share one seed
            def bound(inputs: torch.Tensor, t: torch.Tensor, seeds: torch.Tensor) -> torch.Tensor:
                explained[0] += inputs.shape[0]
                return _explained(who, explainer(model_user, inputs, t, seeds=seeds), inputs, "S_avg's inputs")
        else:  # the explainer cannot be given seeds: its own noise, if any, enters S_avg
            def bound(inputs: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
                explained[0] += inputs.shape[0]
                return _explained(who, explainer(model_user, inputs, t), inputs, "S_avg's inputs")

        emit(who, "s_avg", fm.average_stability(bound, x, target, n_neighbours=n_neighbours, radius=radius,
                                                     sample_index=index, generator=seed, batch_size=batch_size), b0)
        return explained[0]
    raise AssertionError(group)


def cost(frame) -> "pandas.DataFrame":  # noqa: F821
    """The work behind a frame of :func:`evaluate`, one row per metric group and explainer: ``forward_inputs``
    (inputs through the model), ``model_calls``, ``explained_inputs`` (inputs given to the explainer: S_avg's
    neighbours, ReCo/MeGe's k models) and ``seconds``, with ``metrics`` naming the group's metrics in the frame."""
    import pandas as pd

    rows = frame.attrs.get("cost")
    if rows is None:
        raise ValueError("frame has no attrs['cost']: pass the frame evaluate() returned")
    table = pd.DataFrame(rows, columns=["group", "explainer", "forward_inputs", "model_calls", "explained_inputs",
                                        "seconds"])
    present = set(frame["metric"])
    table.insert(1, "metrics", table["group"].map(lambda g: ", ".join(
        METRICS[m].label for m in METRICS if METRICS[m].group == g and m in present) or g))
    return table


def oriented(frame):
    """``frame`` with a column ``oriented``: the score signed so that higher is better for every metric."""
    out = frame.copy()
    out["oriented"] = out["score"].where(out["higher_is_better"], -out["score"])
    return out


del _M, _info

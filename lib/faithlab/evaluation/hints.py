"""Why a result is degenerate: messages for metrics that are constant (or NaN) across samples for a known reason.

A metric that gives every image the same score ranks nothing, and the reason is rarely the explainer: a model that
gets every label wrong makes every accuracy form (Fid±, RFid±, FFid±, the accuracy AUC) 0; replacing pixels by a
perturbed image that does not move the model makes Few-class Fid N/(2N − 1) (≈ 0.5 for many classes) for every
image; an output that does not move when features are removed makes μF NaN; an explainer whose maps are all
constant defines no ranking at all. :func:`degenerate` reads the tidy frame of ``fl.evaluate`` and says which of
these happened, naming the metric, the explainer, the cause and what to do; :func:`warn_degenerate` also issues each
message as a :class:`DegenerateResultWarning`. A metric constant across at least 3 samples for none of these
reasons gets a message that says so, without a cause. A healthy frame gets no message.

The checks read the frame's per-sample rows only (dataset-level metrics, ReCo and MeGe, have one row per
explainer) and cost one pandas groupby over them.

The messages speak the Python API (``y=None``, ``grid='paper'``); :func:`for_command` gives each in the terms of the
``faithlab evaluate`` command (``--labels predictions``, ``--set fewclass_grid=paper``): every phrase that differs
is declared once, with both forms (:data:`COMMAND_FORMS`), and the messages are built from it.
:func:`command_hints` are the command's own notes on what it did not compute.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import pandas as pd
import torch

from faithlab.metrics.registry import METRICS, accuracy_forms

__all__ = ["COMMAND_FORMS", "DegenerateResultWarning", "command_hints", "degenerate", "for_command",
           "warn_degenerate"]



def __getattr__(name: str):
    if name == "ACCURACY_FORMS":  # the metrics declared ``accuracy`` (read when asked: a new one counts too)
        from faithlab.metrics.registry import accuracy_forms
        return accuracy_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
"""The metrics that read whether the prediction equals the label y (F-Fidelity's 1[y = ŷ] forms and the accuracy
AUC of the MoRF curve); every other metric reads the output of the predicted class."""
_MIN_GENERIC = 3
_RTOL = 1e-9

COMMAND_FORMS: dict[str, str] = {}
"""Each phrase of the messages that names a Python argument or function → the same advice in the terms of the
``faithlab evaluate`` command (:func:`for_command`)."""


def _phrase(python: str, command: str) -> str:
    """Declare a phrase of the messages with its form for the command → the Python form (the messages' own)."""
    COMMAND_FORMS[python] = command
    return python


_CHECK_LABELS = _phrase("Check that y holds the model's class indices",
                        "Check that the labels (--labels: sorted subfolder names are classes 0, 1, ...; or a CSV "
                        "file) are the model's class indices")
_PREDICTIONS = _phrase("pass y=None", "pass --labels predictions")
_REFERENCE = _phrase("the removal value (reference)", "the removal value (fl.evaluate's reference=; the command "
                     "keeps each metric's own)")
_GRID = _phrase("search more candidates (grid='paper') or pass perturbed= images that move the model",
                "search more candidates (--set fewclass_grid=paper), or in Python give fl.evaluate perturbed= images "
                "that move the model")
_SIZES = _phrase("(sizes `sparsity`; RFid/FFid remove only α of them at random): evaluate more images, larger sizes",
                 "(sizes: --set sparsity=[...]; RFid/FFid remove only a share --set alpha of them at random): "
                 "evaluate more images (--n-images), larger sizes")
_DESCRIBE = _phrase("See the metric's documentation (fl.evaluation.describe())",
                    "See the metric's description (faithlab evaluate --list-metrics)")
_OPTIONS = _phrase("Check the model, the maps and the metric's options.",
                   "Check the model, the maps and the metric's options (--set).")


def for_command(message: str) -> str:
    """``message`` (one of :func:`degenerate`'s) in the terms of the ``faithlab evaluate`` command: each phrase of
    :data:`COMMAND_FORMS` replaced by its command form (other text unchanged)."""
    for python in sorted(COMMAND_FORMS, key=len, reverse=True):
        message = message.replace(python, COMMAND_FORMS[python])
    return message


def command_hints(*, random_map: bool, labelled: bool) -> list[str]:
    """The notes ``faithlab evaluate`` adds to its report, in the command's terms: no random map among the
    explainers (``random_map`` False: the beats-a-random-map check is missing), no labels (``labelled`` False), and
    the metrics the command never computes (those that need k cross-trained models: ``"kfold"`` in
    :data:`~faithlab.metrics.registry.NEEDS`)."""
    notes = []
    if not random_map:
        notes.append("No random map among the explainers: add 'random' to --explainers for the check that each "
                     "explainer beats a random map.")
    if not labelled:
        notes.append("No labels (--labels predictions, or a flat --images folder): Fid+/- and the accuracy AUC read "
                     "agreement with the model's own predictions; give class subfolders or --labels FILE.csv for "
                     "the true labels.")
    kfold = [m.label for m in METRICS.values() if "kfold" in m.needs]
    if kfold:
        notes.append(f"{' and '.join(kfold)} {'are' if len(kfold) > 1 else 'is'} not computed: "
                     f"{'they need' if len(kfold) > 1 else 'it needs'} k models cross-trained on labelled training "
                     "data, which faithlab evaluate does not train: cross-train your architecture with "
                     "fl.train.cross_train and call fl.evaluate(..., kfold=...) in Python (the template notebook does "
                     "it for a zoo architecture on its own data set, with the study installed: python -m faithlab_study "
                     "run templates/evaluate_your_explainer -p kfold 5).")
    return notes


class DegenerateResultWarning(UserWarning):
    """A metric's scores are constant (or NaN) across samples: they rank nothing (the message says why)."""


def degenerate(frame: pd.DataFrame, *, correct: torch.Tensor | None = None,
               constant: Mapping[str, torch.Tensor] | None = None) -> list[str]:
    """Messages for the metrics of ``frame`` whose scores are degenerate across samples → list of str (empty for a
    healthy frame).

    frame: the tidy frame of ``fl.evaluate`` (columns ``explainer``, ``sample``, ``metric``, ``score``; ``label``
    names the metric in the messages when present). correct: ``(B,)`` bool, whether the model's prediction equals
    the label y of each sample (None when y was not given). constant: ``{explainer name: (B,) bool}``, whether each
    map is constant over the sample's units. The causes, checked in this order (each metric and explainer gets at
    most one message; a cause shared by several explainers or metrics is one message):

    1. an accuracy form (declared ``accuracy``: :func:`faithlab.metrics.registry.accuracy_forms`) while no
       prediction is correct (every 1[y = ŷ] is 0: the scores count only removals that happen to produce the label),
       or constant at its no-change value (0; the AUC 1) while every prediction is correct: no removal changed one;
    2. Few-class Fid equal to N/(2N − 1) for every sample (≈ 0.5 for many classes): the MIF and LIF curves are flat,
       the perturbed images never change the model's output;
    3. every map of an explainer constant (no ranking): SaCo scores such a map 0, μF NaN, the removal metrics remove
       units in index (Few-class: random) order;
    4. an accuracy form of Fid± (not the AUC) at 0 for every sample: no removal changed whether a prediction equals
       its label;
    5. μF NaN for every sample: of every explainer, the model's output does not move when subsets of features are
       removed (the other metrics that are constant share the cause); of some explainers only, their maps are
       constant over the units;
    6. any other metric NaN for every sample;
    7. any other metric constant across at least 3 samples, unless at the metric's ideal value (its registry
       ``ideal``: SaCo 1 for a ground-truth map is not degenerate): said without a cause.
    """
    rows = _sample_rows(frame)
    n_samples = int(rows["sample"].nunique()) if len(rows) else None  # None: only dataset-level rows
    correct = _check_flags(correct, "correct", n_samples)
    constant = {} if constant is None else _check_constant(constant, n_samples)
    if rows.empty:
        return []
    t = _Table(rows)  # the causes in order: each takes the rows it explains from the later ones
    return [*_accuracy_forms(t, correct), *_flat_fewclass(t), *_constant_maps(t, constant), *_unmoved_fid(t),
            *_mu_nan(t), *_nan(t), *_generic(t)]


class _Table:
    """Per (metric, explainer): the number of samples, the finite scores, their range, whether all are NaN or all
    the same (``flat``); and which rows a message has taken (:meth:`take`)."""

    def __init__(self, rows: pd.DataFrame):
        g = rows.groupby(["metric", "explainer"], sort=False)["score"]
        stats = g.agg(n="size", finite="count", lo="min", hi="max").reset_index()
        labels = (rows.drop_duplicates("metric").set_index("metric")["label"] if "label" in rows
                  else pd.Series(dtype=object))
        stats["label"] = [str(labels.get(m, m)) for m in stats["metric"]]
        stats["nan"] = stats["finite"] == 0
        same = (stats["hi"] - stats["lo"]).abs() <= _RTOL * stats[["lo", "hi"]].abs().max(axis=1).clip(lower=1.0)
        stats["flat"] = (stats["finite"] == stats["n"]) & (stats["n"] >= 2) & same
        self.stats, self.done = stats, pd.Series(False, index=stats.index)

    def take(self, mask: pd.Series) -> pd.DataFrame:
        """The rows of ``mask`` no earlier message took, now taken."""
        chosen = self.stats[mask & ~self.done]
        self.done.loc[chosen.index] = True
        return chosen


def _accuracy_forms(t: _Table, correct: torch.Tensor | None) -> list[str]:
    """Cause 1: an accuracy form while no prediction is correct, or unmoved while every one is."""
    stats, messages = t.stats, []
    if correct is not None and not bool(correct.any()):
        hit = t.take(stats["metric"].isin(accuracy_forms()))
        if len(hit):
            messages.append(
                f"{_what(hit, 'are degenerate')}: these accuracy forms read whether the prediction equals the label "
                f"y, and the model predicts none of the {correct.numel()} labels correctly, so 1[y = ŷ(x)] is 0 for "
                "every sample: removing features cannot lower the accuracy and the scores count only removals that "
                f"happen to produce the label, not the explanation. {_CHECK_LABELS} (e.g. ImageNet's order for a "
                f"torchvision model), evaluate images the model classifies correctly, or {_PREDICTIONS} to read "
                "agreement with the prediction.")
    if correct is not None and bool(correct.all()):
        unmoved = stats["lo"] == stats["metric"].map(lambda m: METRICS[m].unmoved if m in METRICS else 0.0)
        hit = t.take(stats["metric"].isin(accuracy_forms()) & stats["flat"] & unmoved)
        if len(hit):
            messages.append(
                f"{_what(hit)}: every prediction is correct and no removal changed one, so these accuracy forms "
                "cannot move. The removals do not reach the model's decision: check that the model reads its input "
                f"and that {_REFERENCE} differs from the images.")
    return messages


def _flat_fewclass(t: _Table) -> list[str]:
    """Cause 2: Few-class Fid at the value of flat MIF and LIF curves for every sample."""
    stats = t.stats
    hit = t.take(stats["flat"] & (stats["metric"] == "fewclass_fid") & stats["lo"].map(_flat_curves_value))
    if not len(hit):
        return []
    n = _classes(float(hit["lo"].iloc[0]))
    return [f"{_what(hit)}: the value of flat MIF and LIF curves, N/(2N − 1) for N = {n} classes. Replacing pixels "
            "by the selected perturbed images never changes the model's output, so the order of the map does not "
            "matter. Check the selection (select_perturbation's 'u' and 'passed': a good perturbed image leaves the "
            f"model uncertain, U < Δ) and that the model reads its input; {_GRID}."]


def _constant_maps(t: _Table, constant: Mapping[str, torch.Tensor]) -> list[str]:
    """Cause 3: every map of an explainer constant over its units."""
    messages = []
    for name, flags in constant.items():
        if not bool(flags.all()):
            continue
        hit = t.take(t.stats["explainer"] == name)
        shown = ", ".join(f"{lab} ({_values(part)})" for lab, part in hit.groupby("label", sort=False))
        messages.append(
            f"Every map of explainer {name!r} is constant over its units: it defines no ranking. SaCo scores such "
            "a map 0 and μF NaN; Fid±, RFid±, FFid±, the cumulative metrics and TRACE remove the units in index "
            "order and Few-class Fid in random order, so their scores describe that order, not the explainer"
            f"{': ' + shown if shown else ''}. Check the explainer (an all-zero Grad-CAM: choose another layer; an "
            "attribution method whose baseline equals the input).")
    return messages


def _unmoved_fid(t: _Table) -> list[str]:
    """Cause 4: an accuracy form of Fid± (not the AUC) at 0 for every sample."""
    stats = t.stats
    hit = t.take(stats["flat"] & stats["metric"].isin([m for m in accuracy_forms() if METRICS[m].unmoved == 0])
                 & (stats["lo"].abs() <= _RTOL))
    if not len(hit):
        return []
    return [f"{_what(hit)}: no removal changed whether any prediction equals its label (every 1[y = ŷ] term is the "
            "same with and without the removal), so these Fid forms are 0 for every sample and rank nothing. The "
            f"model is not moved by these removals {_SIZES}, or read the probability forms (AOPC, μF) that move "
            "before the prediction flips."]


def _mu_nan(t: _Table) -> list[str]:
    """Cause 5: μF NaN for every sample, of every explainer (the output does not move) or of some (constant maps)."""
    stats = t.stats
    mu = (stats["metric"] == "mu_fidelity") & stats["nan"]
    everywhere = bool(mu.any()) and bool(mu[stats["metric"] == "mu_fidelity"].all())
    hit = t.take(mu)
    if len(hit) and everywhere:  # the drops are equal for every subset: every constant removal metric shares it
        also = t.take(stats["flat"])
        return [f"μF is NaN for every sample of {_names(hit)}"
                f"{' (and ' + _what(also, '') + ' are constant across the samples)' if len(also) else ''}: μF is the "
                "correlation between the attribution removed and the output's drop over random subsets of features, "
                "undefined when the drop is the same for every subset: the model's output does not move when "
                "features are removed, and no removal metric can then tell the maps apart. Check that the model reads "
                f"its input (a saturated output moves no more) and {_REFERENCE}."]
    if len(hit):  # other explainers' μF is defined: the drops move, the attribution sums do not
        return [f"μF is NaN for every sample of {_names(hit)}: μF is the correlation between the attribution removed "
                "and the output's drop over random subsets of equal size, undefined when every subset removes the "
                "same attribution sum: the maps are constant over the units (e.g. all zero). Check the explainer."]
    return []


def _nan(t: _Table) -> list[str]:
    """Cause 6: any other metric NaN for every sample."""
    return [f"{part['label'].iloc[0]} is NaN for every sample of {_names(part)}: no score could be computed. "
            f"{_DESCRIBE} for when it is undefined."
            for _, part in t.take(t.stats["nan"]).groupby("metric", sort=False)]


def _generic(t: _Table) -> list[str]:
    """Cause 7: any other metric constant across at least 3 samples, unless at the metric's ideal value."""
    # a metric constant at its ideal value (SaCo 1 for a ground-truth map, S_avg 0 for a locally constant
    # gradient) is not degenerate: the explainer is as good as the metric can say
    stats = t.stats
    ideal = stats["metric"].map(lambda m: getattr(METRICS.get(m), "ideal", None))
    at_ideal = pd.Series([i is not None and abs(lo - i) <= 1e-9 for i, lo in zip(ideal, stats["lo"])],
                         index=stats.index)
    generic = t.take(stats["flat"] & (stats["n"] >= _MIN_GENERIC) & ~at_ideal)
    return [f"{part['label'].iloc[0]} is {_fmt(part['lo'].iloc[0])} for all {part['n'].iloc[0]} samples of "
            f"{_names(part)}, for no cause faithlab recognises: a constant score ranks nothing. {_OPTIONS}"
            for _, part in generic.groupby(["metric", "lo"], sort=False)]


def warn_degenerate(frame: pd.DataFrame, *, correct: torch.Tensor | None = None,
                    constant: Mapping[str, torch.Tensor] | None = None) -> list[str]:
    """:func:`degenerate`, each message also issued as a :class:`DegenerateResultWarning` → the messages."""
    messages = degenerate(frame, correct=correct, constant=constant)
    for message in messages:
        warnings.warn(message, DegenerateResultWarning, stacklevel=2)
    return messages


def _sample_rows(frame) -> pd.DataFrame:
    """The per-sample rows of the frame, checked (naming ``frame``)."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be the pandas DataFrame fl.evaluate returns, got {type(frame).__name__}")
    missing = [c for c in ("explainer", "sample", "metric", "score") if c not in frame.columns]
    if missing:
        raise ValueError(f"frame must have the columns of fl.evaluate's frame; missing {missing}")
    rows = frame[frame["sample"].notna()]
    return rows.assign(score=pd.to_numeric(rows["score"], errors="coerce").astype(float))


def _check_flags(value, name: str, n: int | None) -> torch.Tensor | None:
    """A ``(n,)`` bool tensor (or None), checked naming ``name`` (any length when n is None)."""
    if value is None:
        return None
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a (B,) bool tensor, got {type(value).__name__}")
    if value.dtype != torch.bool or value.ndim != 1:
        raise ValueError(f"{name} must be a 1-D bool tensor, got dtype {value.dtype} and shape {tuple(value.shape)}")
    if n is not None and value.numel() != n:
        raise ValueError(f"{name} must hold one flag per sample of frame ({n}), got {value.numel()}")
    return value


def _check_constant(value, n: int | None) -> dict[str, torch.Tensor]:
    if not isinstance(value, Mapping):
        raise TypeError(f"constant must map explainer names to (B,) bool tensors, got {type(value).__name__}")
    return {str(k): _check_flags(v, f"constant[{k!r}]", n) for k, v in value.items()}


def _flat_curves_value(v: float) -> bool:
    """Whether a Few-class Fid equals N/(2N − 1) for an integer N ≥ 2: the score of flat MIF and LIF curves (the
    predicted class's probability p ≥ 1/N everywhere: |1 − p| + |1/N − p| = 1 − 1/N)."""
    if not 0.5 <= v <= 2 / 3 + 1e-6:
        return False
    n = _classes(v)
    return abs(v - n / (2 * n - 1)) <= 1e-6


def _classes(v: float) -> int:
    """N from a Few-class Fid N/(2N − 1) of flat curves (large for v → 0.5)."""
    return max(2, round(v / (2 * v - 1))) if v > 0.5 + 1e-12 else 10**6


def _fmt(v: float) -> str:
    return "NaN" if math.isnan(v) else f"{v:.4g}"


def _values(part: pd.DataFrame) -> str:
    """The scores of one metric's rows (one per explainer): "NaN", one constant, or their range."""
    if bool(part["nan"].all()):
        return "NaN"
    lo, hi = part["lo"].min(), part["hi"].max()
    flat = bool(part["flat"].all()) and part["lo"].nunique() == 1
    return _fmt(lo) if flat else f"{_fmt(lo)} to {_fmt(hi)}"


def _names(part: pd.DataFrame) -> str:
    names = list(dict.fromkeys(part["explainer"]))
    return ("explainer " if len(names) == 1 else "explainers ") + ", ".join(repr(str(n)) for n in names)


def _what(hit: pd.DataFrame, state: str = "are constant") -> str:
    """"Fid+ (0), Fid− (0) are constant across the samples of explainers 'A', 'B'" for the rows hit (``state``
    after the metrics; "" for the list alone)."""
    parts = [f"{label} ({_values(p)})" for label, p in hit.groupby("label", sort=False)]
    if not state:
        return ", ".join(parts)
    verb = state.replace("are ", "is ", 1) if len(parts) == 1 else state
    return f"{', '.join(parts)} {verb} across the samples of {_names(hit)}"

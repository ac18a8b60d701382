"""F-Fidelity's time-series and text study (spec §1.8–1.9; Tables 3–4, 6–7): the models two notebooks share
(:class:`SeriesTextModels`) and the claims on their rankings (series ranking, text equivalence).

Every claim function takes ``paper``, the paper's value shown beside ours (not ``paper_value``, which
:meth:`faithlab.outputs.Outputs.claim` keeps for a claim given as text), and ``seed``, the generator of all its
resampling; notebooks call them as ``out.claim(fn, frames, ..., seed=seed)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import nn

from faithlab import recipes, verdicts
from faithlab.protocols.ffidelity.robustness import capped_settings


# ---- the series and text models shared by two notebooks
@dataclass(frozen=True)
class SeriesTextModels:
    """The time-series and text models of F-Fidelity's series/text study (spec §1.8–1.9, Tables 3–4, 6–8): one
    setting read by the notebooks ``ffidelity/series_text`` and ``ffidelity/robustness``, so that both train (and
    read from the cache) the very same original and fine-tuned models.

    The defaults are the ``book`` profile's. Each notebook takes its overrides as one parameter,
    ``series_text_models`` (``{}``: the defaults; ``-p series_text_models '{n_epochs: 5}'`` for one run); a profile
    sets them once for both notebooks (a YAML anchor). Unknown names raise TypeError.

    ts_models / text_models: names of :data:`faithlab.recipes.SERIES_MODELS` / :data:`~faithlab.recipes.TEXT_MODELS`.
    ts_n_train, ts_length, ts_offset, ts_positional, ts_width, ts_kernel, ts_lstm_layers: the ``seq_comb`` series
    (training size, steps, level of the background) and the CNN-1D / bi-LSTM (time position as input channel,
    channels or hidden size, kernel, LSTM layers). text_n_train, text_length, text_width, tf_dim: the ``tokens`` task
    and the LSTM's / transformer's widths. n_test: the test split (evaluation inputs; the model keeps its best
    test epoch, so the split is part of its cache key). n_epochs, n_finetune_epochs: training and F-Fidelity
    fine-tuning (eq. 5) epochs. text_removals: ``{label: fine-tuning reference}`` of the text models (one fine-tuned
    model each; ``"removed_token"``: the zero embedding, ``"zero"``: the pad token that deletes the token).
    """

    ts_models: Sequence[str] = ("cnn1d",)
    text_models: Sequence[str] = ("lstm_text", "transformer_text")
    ts_n_train: int = 4000
    ts_length: int = 60
    ts_width: int = 32
    ts_offset: float = 3.0
    ts_positional: bool = True
    ts_kernel: int = 9
    ts_lstm_layers: int = 1
    text_n_train: int = 1000
    text_length: int = 24
    text_width: int = 32
    tf_dim: int = 32
    n_test: int = 100
    n_epochs: int = 30
    n_finetune_epochs: int = 3
    text_removals: Mapping[str, str] = field(
        default_factory=lambda: {"zero embedding": "removed_token", "pad deletion": "zero"})

    def cases(self) -> list[tuple[str, str, str, str]]:
        """``(domain, model name, units, fine-tuning reference)`` of every model pair, series first: one per
        series model (reference ``"zero"``), one per text model and removal of :attr:`text_removals`."""
        cases = [("time series", name, "time", "zero") for name in self.ts_models]
        return cases + [("text", name, "tokens", ref) for name in self.text_models
                        for ref in self.text_removals.values()]

    def label(self, domain: str, name: str, reference: str) -> str:
        """The pages' label of a case of :meth:`cases`: the model's display name, with the removal its fine-tuning
        used for a text model ("LSTM (pad deletion)"); a time-series or image model has one removal only."""
        if domain != "text":
            return recipes.DISPLAY_NAMES[name]
        removal = {ref: label for label, ref in self.text_removals.items()}
        if reference not in removal:
            raise ValueError(f"reference must be one of text_removals' references {list(removal)}, got {reference!r}")
        return f"{recipes.DISPLAY_NAMES[name]} ({removal[reference]})"

    def classifier(self, name: str, *, seed: int = 0, device: str | torch.device = "cpu"):
        """:func:`faithlab.recipes.series_text_classifier` of ``name`` with these settings → ``(model, history,
        train_data, test_data)`` (cached)."""
        if name in self.ts_models:
            sizes = {"n_train": self.ts_n_train, "length": self.ts_length, "width": self.ts_width,
                     "offset": self.ts_offset, "positional": self.ts_positional}
        elif name in self.text_models:
            sizes = {"n_train": self.text_n_train, "length": self.text_length, "width": self.text_width}
        else:
            raise ValueError(f"name must be one of ts_models {list(self.ts_models)} or text_models "
                             f"{list(self.text_models)}, got {name!r}")
        return recipes.series_text_classifier(name, n_test=self.n_test, kernel_size=self.ts_kernel,
                                              lstm_layers=self.ts_lstm_layers, tf_dim=self.tf_dim,
                                              n_epochs=self.n_epochs, seed=seed, device=device, **sizes)

    def finetune(self, model: nn.Module, history: dict, train_data, test_data, *, beta: float, units: str,
                 reference: str = "zero", seed: int = 0, device: str | torch.device = "cpu") -> nn.Module:
        """:func:`faithlab.recipes.ffidelity_finetune` of a model of :meth:`classifier` with ``n_finetune_epochs``
        (cached under the base model's key)."""
        return recipes.ffidelity_finetune(model, history, train_data, test_data, beta=beta, units=units,
                                          reference=reference, n_epochs=self.n_finetune_epochs, seed=seed,
                                          device=device)


def glue_key(label: str) -> str:
    """A short key for the glued numbers of a model labelled ``label`` (:meth:`SeriesTextModels.label`): its first
    word in lower-case letters and digits, ``_pad`` added for a pad-deletion model ("CNN-1D" → "cnn1d",
    "LSTM (pad deletion)" → "lstm_pad")."""
    return "".join(c for c in label.split()[0].lower() if c.isalnum()) + ("_pad" if "pad" in label else "")


# ---------------------------------------------------------------------------------- series and text rankings
def _order(part: pd.DataFrame) -> list[str]:
    return ["replica", "seed", "level"] if "replica" in part.columns else ["seed", "level"]


def _method_units(cells: pd.DataFrame, group: str, value, column: str) -> dict[str, torch.Tensor]:
    """``{method: column}`` of the :func:`micro_cells` rows of ``group == value``, each ordered by replica (when the
    cells carry one), seed and level."""
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    return {m: torch.tensor(v.sort_values(_order(v))[column].to_numpy(dtype="float64"))
            for m, v in part.groupby("method", sort=False)}


def _replicas_of(cells: pd.DataFrame, group: str, value, method: str):
    """The replica of each unit :func:`_method_units` returns for ``method`` (same order), or None without replicas."""
    if "replica" not in cells.columns:
        return None
    part = cells[(cells[group] == value) & (cells["method"] == method)]
    return part.sort_values(_order(part))["replica"].astype(str).to_numpy()


def _replica_note(cells: pd.DataFrame) -> str:
    n = cells["replica"].nunique() if "replica" in cells.columns else 1
    return (f"{n} independently trained replicas per model, bootstrap over replicas then seeds × levels" if n > 1
            else "one trained model per setting: the interval resamples seeds × levels only, not training runs")


def _gt_chance(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, method: str
               ) -> tuple[float, verdicts.Null | None]:
    """One method's mean "GT micro" correlation (:func:`micro_cells`) and its chance level under a permuted
    ground-truth order (:func:`ground_truth_null`'s draws; None when fewer than 20 are defined)."""
    observed = float(cells.loc[(cells[group] == value) & (cells["method"] == method), "GT micro"].mean())
    draws = null.loc[(null[group] == value) & (null["method"] == method), "GT micro"].dropna()
    if not len(null.loc[(null[group] == value) & (null["method"] == method)]):
        raise ValueError(f"null holds no draws for {group} {value!r}, method {method!r}: pass ground_truth_null's "
                         "frame of the same curves")
    what = "ground-truth order permuted over the explainers"
    return observed, (verdicts.Null(what, tuple(draws.tolist())) if len(draws) >= 20 else None)


def _range(value: float, null: verdicts.Null | None) -> str:
    return f"{value:.2f} (chance " + ("undefined" if null is None else f"[{null.low:.2f}, {null.high:.2f}]") + ")"


def claim_series_ranking(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str], group: str = "model",
                         methods: Sequence[str] = ("Fidelity", "ROAR", "R-Fidelity", "F-Fidelity"),
                         target: str = "F-Fidelity", baseline: str = "Fidelity", tol: float = 0.05,
                         paper: str = "", n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """Tables 3 and 6 (time series): ``target`` recovers the degraded-explainer ranking at least as well as the
    other ``methods``, decided over the series ``models`` (values of ``group``).

    cells: :func:`micro_cells` (units: seeds × levels; with a ``replica`` column, of several trained models per
    setting); null: :func:`ground_truth_null` of the same curves.
    Premise and null, per model (decided before the outcome): at least one method's mean GT micro correlation
    (−MoRF vs GT, +LeRF vs GT) lies above its 95 % chance range under a permuted ground-truth order (with a handful
    of explainers a Spearman ρ has a wide chance range; when no method recovers the order the ranks compare noise),
    and ``baseline``'s oriented micro correlation is not within ``tol`` of the ideal +1 (nothing could beat it); a
    model failing either is not testable and leaves the settings. Outcome: per testable model × competitor, a
    paired bootstrap over seeds × levels (two-stage with replicas, 95 %) of the competitor's mean micro rank minus
    the target's, against the margin 0 (the paper's direction: the target ranks better, lower); a pair holds above
    0, fails below, and is undecided while its interval holds 0. :func:`faithlab.verdicts.from_settings` over the
    pairs; a pair where the target ranks significantly worse caps a reproduced verdict at partly (the paper's claim
    is "at least as well"). Table: one row per model × competitor.
    """
    if not models:
        raise ValueError("models must name at least one series model of the cells")
    others = [m for m in methods if m != target]
    rows, holds, losses, reasons, chance_texts, ours, units = [], [], [], [], [], [], []
    for model in models:
        ranks = _method_units(cells, group, model, "micro rank")
        oriented = _method_units(cells, group, model, "oriented micro")
        missing = [m for m in methods if m not in ranks]
        if missing:
            raise ValueError(f"the cells of {model!r} lack the methods {missing}")
        chance = {m: _gt_chance(cells, null, group=group, value=model, method=m) for m in methods}
        above = [m for m, (x, n) in chance.items() if n is not None and x > n.high]  # False for NaN
        reason = verdicts.first_reason(
            None if len(ranks[target]) >= 2 else "fewer than 2 seed × level cells",
            None if above else "no method's correlation with the ground-truth order lies above its chance range "
                               "(permuted order), so the ranks compare noise",
            verdicts.at_ideal(oriented[baseline].nanmean(), ideal=1.0, tol=tol,
                              what=f"{baseline}'s oriented micro correlation"))
        if reason is not None:
            reasons.append(f"{model}: {reason}")
        chance_texts.append(f"{model}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items())
                            + f"; above chance: {', '.join(above) or 'none'}")
        ours.append(f"{model}: " + ", ".join(f"{m} {float(ranks[m].mean()):.2f}" for m in methods))
        if len(ranks[target]) < 2:
            continue
        comparisons = verdicts.compare({m: ranks[m] for m in methods}, target=target, higher_is_better=False,
                                       n_boot=n_boot, seed=seed,
                                       groups=_replicas_of(cells, group, model, target))
        for name, c in comparisons.items():
            if reason is None:
                holds.append(c)
                units.append(c.n)
                losses += [f"{model} vs {name}"] if c.outcome == "loss" else []
            rows.append({group: model, "competitor": name, f"{target} rank": float(ranks[target].mean()),
                         "competitor rank": float(ranks[name].mean()), "mean difference": c.mean, "low": c.low,
                         "high": c.high, "outcome": c.outcome, "units": c.n,
                         f"{target} GT micro": chance[target][0], "competitor GT micro": chance[name][0],
                         "testable": reason is None,
                         "holds": ("holds" if c.outcome == "win" else "fails" if c.outcome == "loss" else "undecided")
                         if reason is None else "not testable"})
    what = "model × competitor pairs"
    if holds:
        flags = [True if c.outcome == "win" else False if c.outcome == "loss" else None for c in holds]
        v = capped_settings(flags, capped=bool(losses), what=what)
        if losses:
            v = v.with_why(f"{v.why} (significantly worse in {', '.join(losses)})")
    else:
        v = verdicts.from_settings([], untestable="; ".join(reasons) or "no testable model", what=what)
    return verdicts.Claim(
        f"Time series: {target} recovers the degraded-explainer ranking at least as well as {', '.join(others)} "
        "(Tables 3, 6)",
        rule=f"per series model and competitor, the competitor's mean micro rank (3 correlations) minus {target}'s, "
             f"paired bootstrap over seeds × levels (95 %; {_replica_note(cells)}), against the margin 0 (the "
             f"paper's direction: {target} ranks better, lower); a pair is undecided while its interval holds 0; "
             "decided over the pairs by the house shares, a pair significantly worse capping it at partly",
        premise=f"per model, some method's mean GT micro correlation (−MoRF vs GT, +LeRF vs GT) lies above its "
                f"95 % chance range with the ground-truth order permuted over the explainers, and {baseline}'s "
                f"oriented micro correlation is not within {tol:g} of the ideal +1: " + "; ".join(chance_texts),
        paper_value=paper, our_value="mean micro rank over 3 correlations: " + "; ".join(ours), verdict=v,
        table=pd.DataFrame(rows), kind="paper", units=min(units) if units else None)


def claim_text_equivalence(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str],
                           counted: Sequence[str] | None = None, group: str = "model", a: str = "F-Fidelity",
                           b: str = "Fidelity", margin: float = 0.1, paper: str = "", n_boot: int = 2000,
                           seed: int = 0) -> verdicts.Claim:
    """Tables 4 and 7 (text): the models are robust to removal, so ``b`` (Fidelity) ranks the explainers as well as
    ``a`` (F-Fidelity).

    cells, null: as :func:`claim_series_ranking`. models: the text models shown (values of ``group``); counted:
    those that decide the verdict (default all; e.g. the paper's zero-embedding removal, with the pad-deletion
    variant shown beside it). An equivalence test per model: paired bootstrap (two-stage with replicas, 95 %) over
    seeds × levels of the a − b oriented micro correlation against the equivalence margin ±``margin`` (0.1 on a
    correlation in [−1, 1]; the paper's largest text gap is 0.06); the model holds when the interval lies inside
    ±margin ("equivalent"), fails when it lies entirely outside ("different") and is undecided across a margin.
    Premise and null: both methods recover the ground-truth order above chance — their mean GT micro correlation
    above its 95 % range under a permuted order — else two rankings at chance are "equal" by construction; a
    counted model failing it is not testable and leaves the settings. :func:`faithlab.verdicts.from_settings` over
    the testable counted models (undecided ones counted both ways). Table: one row per model.
    """
    if not models:
        raise ValueError("models must name at least one text model of the cells")
    counted = list(models) if counted is None else [m for m in models if m in set(counted)]
    rows, holds, reasons, texts, chance_texts, units = [], [], [], [], [], []
    for model in models:
        oriented = _method_units(cells, group, model, "oriented micro")
        for m in (a, b):
            if m not in oriented:
                raise ValueError(f"the cells of {model!r} lack the method {m!r}")
        chance = {m: _gt_chance(cells, null, group=group, value=model, method=m) for m in (b, a)}
        reason = verdicts.first_reason(
            *(None if n is not None and x > n.high else f"{m}'s GT micro correlation {_range(x, n)} is not above "
              "chance (permuted ground-truth order)" for m, (x, n) in chance.items()),
            None if int((oriented[a].isfinite() & oriented[b].isfinite()).sum()) >= 2 else
            "fewer than 2 seed × level cells where both micro correlations are defined")
        c = verdicts.bootstrap_diff(oriented[a], oriented[b], n_boot=n_boot, seed=seed,
                                    groups=_replicas_of(cells, group, model, a)) if reason is None else None
        outcome = ("untestable" if c is None else "equivalent" if -margin < c.low and c.high < margin
                   else "different" if c.low > margin or c.high < -margin else "undecided")
        if model in counted:
            if reason is None:
                holds.append(True if outcome == "equivalent" else False if outcome == "different" else None)
                units.append(c.n)
            else:
                reasons.append(f"{model}: {reason}")
            chance_texts.append(f"{model}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items()))
        rows.append({group: model, "counted": model in counted, b: float(oriented[b].nanmean()),
                     a: float(oriented[a].nanmean()), "difference": float((oriented[a] - oriented[b]).nanmean()),
                     "low": float("nan") if c is None else c.low, "high": float("nan") if c is None else c.high,
                     "outcome": outcome, f"{b} GT micro": chance[b][0], f"{a} GT micro": chance[a][0],
                     "testable": reason is None, "why": reason or "", "holds": outcome == "equivalent"})
        texts.append(f"{model}: {b} {rows[-1][b]:.2f}, {a} {rows[-1][a]:.2f}"
                     + ("" if c is None else f", difference {c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"))
    v = verdicts.from_settings(holds, untestable=None if holds else "; ".join(reasons) or "no counted model",
                               what="counted text models")
    return verdicts.Claim(
        f"Text: models are robust to removal, so {b} ≈ {a} in ranking explainers (Tables 4, 7)",
        rule=f"per text model ({', '.join(counted)}), the {a} − {b} oriented micro correlation, paired bootstrap over "
             f"seeds × levels (95 %; {_replica_note(cells)}), against the equivalence margin ±{margin:g} (the "
             "paper's direction: equal); a model is equivalent inside the margin, different wholly outside it, "
             "undecided across it; decided over the counted models by the house shares",
        premise=f"both {a} and {b} recover the ground-truth order above chance: their mean GT micro correlation "
                "(−MoRF vs GT, +LeRF vs GT) above its 95 % range with the order permuted over the explainers: "
                + "; ".join(chance_texts),
        paper_value=paper, our_value="oriented micro correlation: " + "; ".join(texts), verdict=v,
        table=pd.DataFrame(rows), kind="paper", units=min(units) if units else None)

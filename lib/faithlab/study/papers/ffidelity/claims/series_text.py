"""F-Fidelity's time-series and text study (spec §1.8–1.9; Tables 3–4, 6–7): the models two notebooks share
(:class:`SeriesTextModels`) and the claims on their rankings (series ranking, text equivalence).

Every claim function takes ``paper``, the paper's value shown beside ours (not ``paper_value``, which
:meth:`faithlab.study.artifacts.Outputs.claim` keeps for a claim given as text), and ``seed``, the generator of all its
resampling; notebooks call them as ``out.claim(fn, frames, ..., seed=seed)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import nn

from faithlab.study import recipes, verdicts


# ---- the series and text models shared by two notebooks
@dataclass(frozen=True)
class SeriesTextModels:
    """The time-series and text models of F-Fidelity's series/text study (spec §1.8–1.9, Tables 3–4, 6–8): one
    setting read by the notebooks ``ffidelity/series_text`` and ``ffidelity/robustness``, so that both train (and
    read from the cache) the very same original and fine-tuned models.

    The defaults are the ``book`` profile's. Each notebook takes its overrides as one parameter,
    ``series_text_models`` (``{}``: the defaults; ``-p series_text_models '{n_epochs: 5}'`` for one run); a profile
    sets them once for both notebooks (a YAML anchor). Unknown names raise TypeError.

    ts_models / text_models: names of :data:`faithlab.study.recipes.SERIES_MODELS` / :data:`~faithlab.study.recipes.TEXT_MODELS`.
    ts_n_train, ts_length, ts_offset, ts_positional, ts_width, ts_kernel, ts_lstm_layers: the ``seq_comb`` series
    (training size, steps, level of the background) and the CNN-1D / bi-LSTM (time position as input channel,
    channels or hidden size, kernel, LSTM layers). text_n_train, text_length, text_width, tf_dim: the ``tokens`` task
    and the LSTM's / transformer's widths. n_test: the test split (evaluation inputs; the model keeps its best test
    epoch, so the split is part of its cache key). n_epochs, n_finetune_epochs: training and F-Fidelity fine-tuning
    (eq. 5) epochs; finetune_lr: the fine-tuning's Adam learning rate, by default the training's
    (:data:`faithlab.study.recipes.SERIES_TEXT_LR`; spec §1.4: the fine-tuning hyper-parameters equal the training ones;
    the epochs are cut to a third for time; at 3 epochs and 1e-3 some replicas barely absorbed removal).
    text_removals: ``{label: fine-tuning reference}`` of the text models (one fine-tuned model each;
    ``"removed_token"``: the zero embedding, ``"zero"``: the pad token that deletes the token).
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
    n_finetune_epochs: int = 10
    finetune_lr: float = recipes.SERIES_TEXT_LR
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
        """:func:`faithlab.study.recipes.series_text_classifier` of ``name`` with these settings → ``(model, history,
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
        """:func:`faithlab.study.recipes.ffidelity_finetune` of a model of :meth:`classifier` with ``n_finetune_epochs``
        at ``finetune_lr`` (cached under the base model's key)."""
        return recipes.ffidelity_finetune(model, history, train_data, test_data, beta=beta, units=units,
                                          reference=reference, n_epochs=self.n_finetune_epochs,
                                          lr=self.finetune_lr, seed=seed, device=device)


def glue_key(label: str) -> str:
    """A short key for the glued numbers of a model labelled ``label`` (:meth:`SeriesTextModels.label`): its first
    word in lower-case letters and digits, ``_pad`` added for a pad-deletion model ("CNN-1D" → "cnn1d",
    "LSTM (pad deletion)" → "lstm_pad")."""
    return "".join(c for c in label.split()[0].lower() if c.isalnum()) + ("_pad" if "pad" in label else "")


# ---------------------------------------------------------------------------------- series and text rankings
def _gt_chance(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, method: str
               ) -> tuple[float, verdicts.Null | None]:
    """One method's mean "GT micro" correlation (:func:`micro_cells`) and its chance level under a permuted
    ground-truth order (:func:`ground_truth_null`'s draws, each averaged over the replicas; None when fewer than 20
    are defined)."""
    from faithlab.study.papers.ffidelity.ranking import _draws

    observed = float(cells.loc[(cells[group] == value) & (cells["method"] == method), "GT micro"].mean())
    if not len(null.loc[(null[group] == value) & (null["method"] == method)]):
        raise ValueError(f"null holds no draws for {group} {value!r}, method {method!r}: pass ground_truth_null's "
                         "frame of the same curves")
    draws = _draws(null, group, value, method, "GT micro").dropna()
    what = "ground-truth order permuted over the explainers"
    return observed, (verdicts.Null(what, tuple(draws.tolist())) if len(draws) >= 20 else None)


def _range(value: float, null: verdicts.Null | None) -> str:
    return f"{value:.2f} (chance " + ("undefined" if null is None else f"[{null.low:.2f}, {null.high:.2f}]") + ")"


def claim_series_ranking(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str], n_inputs: int,
                         group: str = "model", competitors: Sequence[str] = ("Fidelity", "ROAR"),
                         target: str = "F-Fidelity", baseline: str = "Fidelity",
                         mechanisms: Mapping[str, verdicts.Premise] | None = None, tol: float = 0.05,
                         paper: str = "") -> verdicts.Claim:
    """Tables 3 and 6 (time series): ``target`` ranks the degraded explainers better than ``competitors`` (the
    paper: "F-Fidelity and R-Fidelity outperform Fidelity and ROAR"), over the series ``models`` (values of
    ``group``), by its rule (``verdicts.rule("Series.ranking")``).

    cells: :func:`micro_cells` with a "replica" column (at least 2; micro ranks among the four methods); null:
    :func:`ground_truth_null` of the same curves. n_inputs: test series per replica. Per model × competitor: the
    competitor's mean micro rank minus the target's, averaged over the seeds and levels of each replica, a t interval
    on the replica values against the rule's margin; every cell of the testable models must hold. Premises, per
    model (a model failing one leaves): some method's mean GT micro correlation lies above its 95 % chance range
    under a permuted ground-truth order; ``baseline``'s oriented micro correlation is not within ``tol`` of +1; its
    FF.OOD premise (``mechanisms[model]``) holds (undecided: the claim is inconclusive). Raises ValueError with
    fewer than 2 replicas. Table: one row per model × competitor."""
    from faithlab.study.papers.ffidelity.ranking import _apply
    from faithlab.study.papers.ffidelity.ranking import _two_replicas, replica_judgement, replica_means

    rule = verdicts.rule("Series.ranking")
    if not models:
        raise ValueError("models must name at least one series model of the cells")
    rows, cells_judged, reasons, chance_texts, ours, undecided, kept = [], {}, [], [], [], [], []
    methods = [*competitors, target]
    for model in models:
        ranks = replica_means(cells, group=group, value=model, column="micro rank", methods=methods)
        _two_replicas(ranks, "claim_series_ranking")
        oriented = replica_means(cells, group=group, value=model, column="oriented micro", methods=[baseline]).mean()
        chance = {m: _gt_chance(cells, null, group=group, value=model, method=m)
                  for m in dict.fromkeys([*methods, *cells.loc[cells[group] == model, "method"]])}
        above = [m for m, (x, n) in chance.items() if n is not None and x > n.high]
        premise = (mechanisms or {}).get(model)
        reason = verdicts.first_reason(
            None if above else "no method's correlation with the ground-truth order lies above its chance range "
                               "(permuted order), so the ranks compare noise",
            verdicts.at_ideal(oriented[baseline], ideal=1.0, tol=tol, what=f"{baseline}'s oriented micro correlation"),
            None if premise is None or premise.holds is not False else f"FF.OOD fails: {premise.text}")
        if reason is not None:
            reasons.append(f"{model}: {reason}")
        elif premise is not None and premise.holds is None:
            undecided.append(premise)
        chance_texts.append(f"{model}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items())
                            + f"; above chance: {', '.join(above) or 'none'}")
        ours.append(f"{model}: " + ", ".join(f"{m} {ranks[m].mean():.2f}" for m in methods))
        units = int(n_inputs) * len(ranks)
        nan = float("nan")
        for m in competitors:
            j = replica_judgement((ranks[m] - ranks[target]).to_numpy(float), rule, units=units,
                                  what=f"{model}: {m} − {target}")
            if reason is None:
                cells_judged[f"{model} vs {m}"] = j
                kept.append(len(ranks))
            rows.append({group: model, "competitor": m, f"{target} rank": float(ranks[target].mean()),
                         "competitor rank": float(ranks[m].mean()), "difference": j.interval.estimate if j else nan,
                         "low": j.interval.low if j else nan, "high": j.interval.high if j else nan,
                         "margin": rule.margin_for(),
                         "outcome": (j.outcome if j else "undefined") if reason is None else "not testable",
                         "replicas": len(ranks),
                         "units": units, "testable": reason is None})
    untestable = None if cells_judged else "; ".join(reasons) or "no testable model"
    v = verdicts.decide(cells_judged, rule, untestable=untestable)
    for premise in undecided:
        v = _apply(v, premise)
    return verdicts.Claim(
        f"Time series: {target} ranks the degraded explainers better than {' and '.join(competitors)} (Tables 3, 6)",
        rule=rule,
        premise=f"per model: its FF.OOD check holds, some method's mean GT micro correlation (−MoRF vs GT, +LeRF vs "
                f"GT) lies above its 95 % chance range with the ground-truth order permuted over the explainers, and "
                f"{baseline}'s oriented micro correlation is not within {tol:g} of the ideal +1: "
                + "; ".join(chance_texts) + (f"; left out: {'; '.join(reasons)}" if reasons else ""),
        paper_value=paper, our_value="mean micro rank over 3 correlations: " + "; ".join(ours), verdict=v,
        table=pd.DataFrame(rows), units=min((j.interval.units for j in cells_judged.values() if j), default=None),
        kept_replicas=min(kept, default=None))


def lead_below_margin(cells: pd.DataFrame, null: pd.DataFrame, rule: verdicts.Rule, *, values: Sequence,
                      counted: Sequence, group: str, a: str, b: str, n_units: int, above_chance: Sequence[str],
                      what: str) -> tuple[verdicts.Verdict, list[dict], list[str], list[str], dict]:
    """The decision of an "``a`` leads ``b`` by less than the margin" rule (Text.equivalence, FF.ROAD), per value of
    ``group``: ``a``'s oriented micro correlation minus ``b``'s, averaged over the seeds and levels of each replica,
    a t interval on the replica values against ``rule``'s margin (direction below). Premise per value: every method
    of ``above_chance`` recovers the ground-truth order above chance (its mean GT micro correlation above its 95 %
    range under a permuted order); a counted value failing it leaves, and every testable counted value must hold.
    Returns the verdict, the table rows (one per value), the "ours" texts, the chance texts and the judgements."""
    from faithlab.study.papers.ffidelity.ranking import _two_replicas, replica_judgement, replica_means

    rows, judged, reasons, texts, chance_texts = [], {}, [], [], []
    for value in values:
        oriented = replica_means(cells, group=group, value=value, column="oriented micro", methods=[a, b])
        _two_replicas(oriented, what)
        chance = {m: _gt_chance(cells, null, group=group, value=value, method=m) for m in (b, a)}
        reason = verdicts.first_reason(
            *(None if n is not None and x > n.high else f"{m}'s GT micro correlation {_range(x, n)} is not above "
              "chance (permuted ground-truth order)" for m, (x, n) in chance.items() if m in above_chance))
        units = int(n_units) * len(oriented)
        j = replica_judgement((oriented[a] - oriented[b]).to_numpy(float), rule, units=units,
                              what=f"{value}: {a} − {b}")
        reason = reason or (None if j is not None else "fewer than 2 replicas with defined correlations")
        if value in counted:
            if reason is None:
                judged[value] = j
            else:
                reasons.append(f"{value}: {reason}")
            chance_texts.append(f"{value}: " + ", ".join(f"{m} {_range(x, n)}" for m, (x, n) in chance.items()))
        nan = float("nan")
        i = j.interval if j is not None else verdicts.Interval(nan, nan, nan, 0.95, rule.interval, units,
                                                                len(oriented))
        rows.append({group: value, "counted": value in counted, b: float(oriented[b].mean()),
                     a: float(oriented[a].mean()), "difference": i.estimate, "low": i.low, "high": i.high,
                     "margin": rule.margin_for(), "outcome": j.outcome if reason is None else "not testable",
                     f"{b} GT micro": chance[b][0], f"{a} GT micro": chance[a][0], "testable": reason is None,
                     "why": reason or "", "replicas": i.replicas, "units": units})
        texts.append(f"{value}: {b} {rows[-1][b]:.2f}, {a} {rows[-1][a]:.2f}, difference {i.estimate:+.3f} "
                     f"[{i.low:+.3f}, {i.high:+.3f}]")
    v = verdicts.decide(judged, rule, untestable=None if judged else "; ".join(reasons) or f"no counted {group}")
    return v, rows, texts, chance_texts, judged


def claim_text_equivalence(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str], n_inputs: int,
                           counted: Sequence[str] | None = None, group: str = "model", a: str = "F-Fidelity",
                           b: str = "Fidelity", paper: str = "") -> verdicts.Claim:
    """Tables 4 and 7 (text): the models are robust to removal, so ``b`` (Fidelity) ranks the explainers about as
    well as ``a`` (F-Fidelity), by its rule (``verdicts.rule("Text.equivalence")``).

    cells, null: as :func:`claim_series_ranking`. models: the text models shown (values of ``group``); counted:
    those that decide the verdict (default all; e.g. the paper's zero-embedding removal, with the pad-deletion
    variant shown beside it). Per model: ``a``'s oriented micro correlation minus ``b``'s, averaged over the seeds
    and levels of each replica, a t interval on the replica values; the paper's direction: below the margin (a lead
    of ``a`` smaller than the smallest meaningful one). Premise and null: both methods recover the ground-truth order
    above chance — their mean GT micro correlation above its 95 % range under a permuted order — else two rankings
    at chance are "equal" by construction; a counted model failing it leaves. Every testable counted model must
    hold. Raises ValueError with fewer than 2 replicas. Table: one row per model."""
    rule = verdicts.rule("Text.equivalence")
    if not models:
        raise ValueError("models must name at least one text model of the cells")
    counted = list(models) if counted is None else [m for m in models if m in set(counted)]
    v, rows, texts, chance_texts, judged = lead_below_margin(cells, null, rule, values=models, counted=counted,
                                                             group=group, a=a, b=b, n_units=n_inputs,
                                                             above_chance=(b, a), what="claim_text_equivalence")
    return verdicts.Claim(
        f"Text: models are robust to removal, so {b} ≈ {a} in ranking explainers (Tables 4, 7)", rule=rule,
        premise=f"both {a} and {b} recover the ground-truth order above chance: their mean GT micro correlation "
                "(−MoRF vs GT, +LeRF vs GT) above its 95 % range with the order permuted over the explainers: "
                + "; ".join(chance_texts),
        paper_value=paper, our_value="oriented micro correlation: " + "; ".join(texts), verdict=v,
        table=pd.DataFrame(rows), units=min((j.interval.units for j in judged.values()), default=None),
        kept_replicas=min((j.interval.replicas for j in judged.values()), default=None))

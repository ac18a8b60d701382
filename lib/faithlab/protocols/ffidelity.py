"""F-Fidelity's experimental protocols (Zheng et al., ICLR 2025), which combine data, training, explainers and
metrics; tables are tidy pandas frames.

The degraded-explainer protocol (spec §1.6–1.9): degrade a clean map at known noise levels ξ with several
seeds and score every degraded map with Fid+ and Fid− curves (:func:`degraded_fidelity_curves`);
:func:`image_ranking_study` runs the whole image study (original, fine-tuned and ROAR models, five evaluation
settings, the wall-clock cost and forward passes of every stage), and :func:`ranking_correlations` turns the curves
into the paper's macro/micro correlations and micro ranks.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import pandas as pd
import torch
from torch import nn
from torch.utils.data import Dataset

from faithlab import _validate, data, explainers, perturb, stats, train, verdicts
from faithlab.metrics import ffidelity


def degraded_fidelity_curves(model: Callable, x: torch.Tensor, y: torch.Tensor, clean: torch.Tensor, *,
                             noise_levels: Sequence[float], sparsity: Sequence[float], n_seeds: int = 5,
                             alpha: float = 1.0, beta: float | None = None, n_samples: int = 1,
                             units=None, reference: perturb.Reference = "zero", ties: str = "random",
                             batch_size: int = 256, cells=None) -> tuple[torch.Tensor, ...]:
    """Mean Fid+ and Fid− curves of ``clean`` degraded at every noise level → two ``(n_seeds, n_levels, n_sparsity)``.

    clean: the explainer's map, any layout ``fid_plus`` accepts. Degradation ``k`` of seed ``s`` uses generator
    ``1000·s + k`` and the Monte-Carlo masks generator ``s``, so every evaluation method sees the same degraded
    maps. The "+" and "−" curves are index-paired by :func:`faithlab.metrics.fid_curves`. alpha/beta/n_samples
    select Fidelity (1, None, 1), R-Fidelity (α, None, N) or F-Fidelity (α, β, N). reference: the removal value
    (e.g. ``"removed_token"`` for F-Fidelity's zero-embedding removal of text).
    A constant map (e.g. an all-zero Grad-CAM, possible at ξ = 0 only) is ranked by the ties rule (random by
    default); the per-call ``ConstantMapWarning`` is silenced here: count those maps once with
    :func:`constant_map_counts` (``RankingStudy.constant_maps()``) and report them.
    cells: the ``(seed, level index)`` pairs to evaluate (default: all); the others stay NaN. Each pair's curves
    depend on that pair only, so a grid split into parts (e.g. the study runner's shards) gives the same numbers.
    """
    plus = torch.full((n_seeds, len(noise_levels), len(sparsity)), float("nan"))
    minus = torch.full_like(plus, float("nan"))
    common = dict(alpha=alpha, beta=beta, n_samples=n_samples, batch_size=batch_size, units=units,
                  reference=reference, ties=ties)
    grid = _grid_cells(cells, n_seeds, len(noise_levels))
    for s in range(n_seeds):  # a handful of (seed, level) pairs; each call is batched over samples and masks
        for k, xi in enumerate(noise_levels):
            if (s, k) not in grid:
                continue
            attr = explainers.degrade(clean, xi, generator=1000 * s + k)
            with warnings.catch_warnings():  # counted once by constant_map_counts, not per (seed, level)
                warnings.simplefilter("ignore", perturb.ConstantMapWarning)
                curves = ffidelity.fid_curves(model, x, y, attr, sparsity, generator=s, **common)
            plus[s, k], minus[s, k] = curves["plus"].mean(0).cpu(), curves["minus"].mean(0).cpu()
    return plus, minus


def _grid_cells(cells, n_seeds: int, n_levels: int) -> set[tuple[int, int]]:
    """The ``cells`` argument as a set of (seed, level index) pairs, checked; None means every pair."""
    if cells is None:
        return {(s, k) for s in range(n_seeds) for k in range(n_levels)}
    grid = set()
    for cell in cells:
        try:
            s, k = (int(v) for v in cell)
        except (TypeError, ValueError):
            raise ValueError(f"cells must hold (seed, level index) pairs, got {cell!r}") from None
        if not (0 <= s < n_seeds and 0 <= k < n_levels):
            raise ValueError(f"cells: ({s}, {k}) is outside {n_seeds} seeds × {n_levels} noise levels")
        grid.add((s, k))
    return grid


def random_masking_predictions(models: Mapping[str, Callable], x: torch.Tensor, ratio: float, *,
                               units: perturb.Units | None = None, n_draws: int = 5,
                               generator: torch.Generator | int, reference: perturb.Reference = "zero",
                               batch_size: int = 256) -> dict[str, torch.Tensor]:
    """Predicted classes of each model on the same randomly masked copies of x → ``{name: (B, n_draws)}`` int64.

    Table 8 and App. D.3 of F-Fidelity (robustness to random removal): every input loses exactly round(ratio·n) of
    its n units, drawn uniformly without replacement (``perturb.exact_subset``), ``n_draws`` independent draws per
    input. The draws depend only on ``generator``, so all models see the very same masked inputs; compare the
    predictions with the labels (accuracy) or with another model's (agreement).
    """
    r = _validate.fraction(ratio, "ratio")
    units = perturb.default_units(x) if units is None else units
    everything = torch.ones(len(x), units.n, dtype=torch.bool, device=x.device)
    removed = perturb.exact_subset(everything, round(r * units.n), generator=generator,
                                   n_samples=_validate.positive_int(n_draws, "n_draws"))
    return {k: perturb.removal_outputs(m, x, removed, units=units, reference=reference, output="predicted",
                                       batch_size=batch_size) for k, m in models.items()}


def constant_map_counts(scores: Mapping[tuple[str, str], torch.Tensor]) -> pd.DataFrame:
    """How many maps define no ranking: ``{(explainer, model): (B, n) unit scores}`` → one row per key with the
    number of maps constant over the units (``perturb.constant_maps``) and the number of maps."""
    rows = [{"explainer": e, "model": m, "constant maps": int(perturb.constant_maps(v).sum()), "maps": v.shape[0]}
            for (e, m), v in scores.items()]
    return pd.DataFrame(rows, columns=["explainer", "model", "constant maps", "maps"])


# ------------------------------------------------------------------------------------------ the image study
SETTINGS: dict[str, tuple[str, bool]] = {
    "Fidelity": ("original", False),
    "ROAR": ("roar", False),
    "R-Fidelity": ("original", True),
    "F-Fidelity": ("fine-tuned", True),
    "Fidelity+Fine-tune": ("fine-tuned", False),  # ablation of App. D.7
}
"""Evaluation settings (spec §1.6): method → (model, randomised). The model is the original one, the ROAR model of
the explainer, or the fine-tuned one, whose own explanations are then scored (as the authors' code). Randomised
settings remove a Bernoulli fraction α of R with N masks, capped at βn for the fine-tuned model (F-Fidelity);
the others remove all of R."""


@dataclass
class RankingStudy:
    """Result of :func:`image_ranking_study`.

    curves: tidy frame (explainer, method, curve "+"/"−", seed, xi, level, score) of the mean scores.
    P, Q: ``{(explainer, method): (n_seeds, n_levels, n_sparsity)}`` mean "+" and "−" curves.
    clean: ``{(explainer, "original" | "fine-tuned"): (n_test, n_pixels)}`` unit scores of the clean explainers.
    accuracy: test accuracy per model ("original", "fine-tuned", "ROAR <explainer>").
    costs: one row per stage (stage, explainer, model, method, seconds, image passes, backward passes, cached).
    models: the eval-mode models by the names of ``accuracy``. x, y: the evaluated test inputs and labels.
    """

    curves: pd.DataFrame
    P: dict[tuple[str, str], torch.Tensor]
    Q: dict[tuple[str, str], torch.Tensor]
    clean: dict[tuple[str, str], torch.Tensor]
    accuracy: dict[str, float]
    costs: pd.DataFrame
    models: dict[str, nn.Module]
    x: torch.Tensor
    y: torch.Tensor
    noise_levels: list[float]
    sparsity: list[float]

    def constant_maps(self) -> pd.DataFrame:
        """:func:`constant_map_counts` of the clean explainers' maps (explainer, model, constant maps, maps)."""
        return constant_map_counts(self.clean)

    def with_curves(self, curves: pd.DataFrame) -> RankingStudy:
        """This study with ``curves`` (rows of :attr:`curves`, e.g. concatenated from studies run on parts of the
        (seed, level) grid with ``cells``) and P, Q rebuilt from them; raises ValueError if a grid cell is missing."""
        P: dict[tuple[str, str], torch.Tensor] = {}
        Q: dict[tuple[str, str], torch.Tensor] = {}
        shape = (int(curves["seed"].max()) + 1 if len(curves) else 0, len(self.noise_levels), len(self.sparsity))
        xi_index = {v: i for i, v in enumerate(self.noise_levels)}
        level_index = {v: i for i, v in enumerate(self.sparsity)}
        # the order image_ranking_study writes: explainers and methods as they first appear, "+" before "−", then
        # seed, noise level and sparsity level (parts of the grid may come in any order)
        order = {"explainer": {v: i for i, v in enumerate(dict.fromkeys(curves["explainer"]))},
                 "method": {v: i for i, v in enumerate(dict.fromkeys(curves["method"]))},
                 "curve": {"+": 0, "−": 1}, "xi": xi_index, "level": level_index}
        curves = curves.sort_values(["explainer", "method", "curve", "seed", "xi", "level"], kind="stable",
                                    key=lambda c: c.map(order[c.name]) if c.name in order else c)
        for (label, name, sign), part in curves.groupby(["explainer", "method", "curve"], sort=False):
            t = torch.full(shape, float("nan"))
            t[torch.tensor(part["seed"].to_numpy(copy=True), dtype=torch.long),
              torch.tensor(part["xi"].map(xi_index).to_numpy(copy=True), dtype=torch.long),
              torch.tensor(part["level"].map(level_index).to_numpy(copy=True), dtype=torch.long)] = torch.tensor(
                part["score"].to_numpy(copy=True), dtype=torch.float32)
            if t.isnan().any():
                raise ValueError(f"curves: {int(t.isnan().sum())} grid values of {label} / {name} {sign} are missing")
            (P if sign == "+" else Q)[label, name] = t
        return replace(self, curves=curves.reset_index(drop=True), P=P, Q=Q)

    def correlations(self, methods: Sequence[str] | None = None) -> pd.DataFrame:
        """:func:`ranking_correlations` (first column "explainer") of ``methods`` (default: all scored)."""
        names = list(dict.fromkeys(m for _, m in self.P)) if methods is None else list(methods)
        return ranking_correlations(self.P, self.Q, noise_levels=self.noise_levels, sparsity=self.sparsity,
                                    methods=names, group="explainer")


@contextmanager
def _count_passes(model: nn.Module) -> Iterator[list[int]]:
    """Count the inputs (rows of the first argument) of every forward call of ``model`` inside the block."""
    count = [0]
    handle = model.register_forward_hook(lambda _m, args, _out: count.__setitem__(0, count[0] + len(args[0])))
    try:
        yield count
    finally:
        handle.remove()


def image_ranking_study(model_name: str, model_config: dict, train_data: Dataset, test_data: Dataset,
                        explainer_specs: Mapping[str, tuple[str, dict]], *, data_key: dict,
                        train_config: train.TrainConfig, finetune_config: train.TrainConfig,
                        roar_config: train.TrainConfig | None = None, methods: Sequence[str] = tuple(SETTINGS),
                        noise_levels: Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
                        sparsity: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                        n_test: int = 150, n_seeds: int = 5, alpha: float = 0.5, beta: float = 0.1,
                        n_samples: int = 50, seed: int = 0, device: str | torch.device = "cpu",
                        batch_size: int = 2048, cache: bool = True, cells=None) -> RankingStudy:
    """F-Fidelity's degraded-explainer study on images (spec §1.4–1.9, Tables 1–2, 5, 10; cost as Table 13).

    Trains (or loads from the cache of :func:`faithlab.train.fit`) the original model ``models.build(model_name,
    **model_config)``, fine-tunes it with ``RandomRemoval(beta)`` (eq. 5) and, when "ROAR" is in ``methods``,
    retrains one model per explainer on ``ExplanationGuidedRemoval`` of its train-set maps (on the original
    model). Then each explainer's clean map of the first ``n_test`` test images (Σ|a| per pixel) is degraded at
    ``noise_levels`` with ``n_seeds`` seeds and scored by :func:`degraded_fidelity_curves` in every setting of
    :data:`SETTINGS` listed in ``methods``.

    explainer_specs: ``{label: (method, options)}`` for :func:`faithlab.explainers.explain` (generator ``seed``).
    data_key: identifies the training data in the cache keys. roar_config: required when "ROAR" is scored.
    cache: False trains every model afresh (to time it) instead of loading cached weights.
    cells: the ``(seed, level index)`` pairs to score (default: all, see :func:`degraded_fidelity_curves`); the
    curves then hold those cells only, and P, Q are NaN elsewhere. Studies of parts of the grid are joined with
    :meth:`RankingStudy.with_curves` (how the study runner's shards split this study).
    train_data/test_data: TensorData (or any Dataset, loaded whole for the ROAR train-set maps).
    costs rows: "train original", "fine-tune", "retrain (ROAR)" (seconds measured when the weights were trained
    — ``cached`` says they were loaded — and image passes epochs·(n_train + n_test), each epoch evaluating the
    test set), "explain train set", "explain test set" and "evaluate" (wall-clock of this call; image passes
    counted by a forward hook on the model). Backward passes: the training images of every epoch, and one per
    image pass of the explain stages (gradient explainers); evaluation has none.
    """
    unknown = [m for m in methods if m not in SETTINGS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty list of {list(SETTINGS)}, got {list(methods)}")
    if not explainer_specs:
        raise ValueError("explainer_specs must map at least one label to (method, options)")
    roar = "ROAR" in methods
    if roar and roar_config is None:
        raise ValueError("roar_config is required when methods include 'ROAR'")
    n_test = _validate.positive_int(n_test, "n_test")
    n_train, n_eval = len(train_data), len(test_data)
    costs: list[dict] = []

    def trained(stage: str, label: str | None, model: str, config: train.TrainConfig, hist: dict) -> None:
        costs.append({"stage": stage, "explainer": label, "model": model, "method": None,
                      "seconds": hist["train_seconds"], "image passes": config.epochs * (n_train + n_eval),
                      "backward passes": config.epochs * n_train, "cached": hist["from_cache"]})

    def timed(stage: str, label: str, model: str, method: str | None, fn: Callable):
        with _count_passes(models[model]) as count:
            start = time.perf_counter()
            result = fn()
            seconds = time.perf_counter() - start
        costs.append({"stage": stage, "explainer": label, "model": model, "method": method, "seconds": seconds,
                      "image passes": count[0], "backward passes": 0 if stage == "evaluate" else count[0],
                      "cached": False})
        return result

    def pixel_scores(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, method: str, options: dict):
        attr = explainers.explain(model, inputs, targets, method=method, generator=seed, **options)
        return perturb.unit_scores(attr, perturb.pixel_units(inputs), reduce=ffidelity.REDUCE)  # (B, H·W)

    base, hist = train.fit(model_name, model_config, train_data, train_config, data_key=data_key,
                           test_data=test_data, cache=cache, device=device, progress=False)
    base = base.to(device).eval()
    models = {"original": base}
    trained("train original", None, "original", train_config, hist)
    if any(SETTINGS[m][0] == "fine-tuned" for m in methods):
        tuned, ft_hist = train.finetune(base, train_data, finetune_config, train.RandomRemoval(beta),
                                        data_key=data_key, base_key=hist["key"], test_data=test_data,
                                        cache=cache, device=device, progress=False)
        models["fine-tuned"] = tuned.to(device).eval()
        trained("fine-tune", None, "fine-tuned", finetune_config, ft_hist)
    if roar:
        train_x, train_y = (t.to(device) for t in data.to_tensors(train_data))
        for label, (method, options) in explainer_specs.items():
            scores = timed("explain train set", label, "original", None,
                           lambda: pixel_scores(base, train_x, train_y, method, options).cpu())
            model, roar_hist = train.fit(model_name, model_config, train_data, roar_config,
                                         data_key={**data_key, "roar": method},
                                         augment=train.ExplanationGuidedRemoval(scores), test_data=test_data,
                                         cache=cache, device=device, progress=False)
            models[f"ROAR {label}"] = model.to(device).eval()
            trained("retrain (ROAR)", label, f"ROAR {label}", roar_config, roar_hist)
    accuracy = {name: train.evaluate(model, test_data, batch_size=batch_size, device=device)["accuracy"]
                for name, model in models.items()}

    x, y = (t[:n_test].to(device) for t in data.to_tensors(test_data))
    grid = _grid_cells(cells, n_seeds, len(noise_levels))
    units = perturb.pixel_units(x)
    sources = {"original" if SETTINGS[m][0] == "roar" else SETTINGS[m][0] for m in methods}
    curve_rows: list[dict] = []
    P: dict[tuple[str, str], torch.Tensor] = {}
    Q: dict[tuple[str, str], torch.Tensor] = {}
    clean: dict[tuple[str, str], torch.Tensor] = {}
    for label, (method, options) in explainer_specs.items():
        for source in ("original", "fine-tuned"):
            if source in sources:
                clean[label, source] = timed("explain test set", label, source, None,
                                             lambda: pixel_scores(models[source], x, y, method, options))
        for name in methods:
            kind, randomised = SETTINGS[name]
            evaluated = f"ROAR {label}" if kind == "roar" else kind
            model = models[evaluated]
            maps = clean[label, "fine-tuned" if kind == "fine-tuned" else "original"].view(-1, *x.shape[2:])
            plus, minus = timed("evaluate", label, evaluated, name, lambda: degraded_fidelity_curves(
                model, x, y, maps, noise_levels=noise_levels, sparsity=sparsity, n_seeds=n_seeds, alpha=alpha if randomised else 1.0,
                beta=beta if kind == "fine-tuned" and randomised else None,
                n_samples=n_samples if randomised else 1, units=units, batch_size=batch_size, cells=grid))
            P[label, name], Q[label, name] = plus, minus
            for sign, t in (("+", plus), ("−", minus)):
                for s in range(n_seeds):
                    for k, xi in enumerate(noise_levels):
                        if (s, k) not in grid:
                            continue
                        curve_rows += [{"explainer": label, "method": name, "curve": sign, "seed": s, "xi": xi,
                                        "level": lv, "score": float(v)} for lv, v in zip(sparsity, t[s, k])]
    curves = pd.DataFrame(curve_rows, columns=["explainer", "method", "curve", "seed", "xi", "level", "score"])
    return RankingStudy(curves, P, Q, clean, accuracy, pd.DataFrame(costs), models, x, y,
                        list(noise_levels), list(sparsity))


# -------------------------------------------------------------------------------------------------- tables
def ranking_correlations(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                         noise_levels: Sequence[float], sparsity: Sequence[float],
                         methods: Sequence[str], group: str = "group") -> pd.DataFrame:
    """Tables 1–7 of F-Fidelity as a tidy frame (<group>, row, correlation, method, mean, std).

    P/Q: ``{(group, method): (n_seeds, n_levels, n_sparsity)}`` curves (a group is an explainer or a model).
    Rows "Macro Corr." (± over seeds) and "Micro Corr." (± over levels, seeds pooled) of
    :func:`faithlab.metrics.ground_truth_ranking`, and "Micro Rank" of :func:`faithlab.metrics.rank_methods` among
    ``methods``; correlation keys as ``ffidelity.DIRECTIONS``. group: the name of the first column.
    """
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        micro = {}
        for method in methods:
            res = ffidelity.ground_truth_ranking(P[g, method], Q[g, method], noise_levels, sparsity)
            micro[method] = res["micro"]
            for kind in ("macro", "micro"):
                for key in ffidelity.DIRECTIONS:
                    mean, std = stats.nan_mean_std(res[kind][key])
                    rows.append({group: g, "row": f"{kind.capitalize()} Corr.", "correlation": key,
                                 "method": method, "mean": mean.item(), "std": std.item()})
        for key, per_method in ffidelity.rank_methods(micro).items():
            for method, (mean, std) in per_method.items():
                rows.append({group: g, "row": "Micro Rank", "correlation": key, "method": method,
                             "mean": mean, "std": std})
    return pd.DataFrame(rows)


CORRELATION_LABELS = {"morf_vs_gt": "MoRF vs GT ↓", "lerf_vs_gt": "LeRF vs GT ↑", "morf_vs_lerf": "MoRF vs LeRF ↓"}
"""Column labels of the correlations with their ideal direction, as in the paper's tables."""


def oriented_correlations(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                          noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                          group: str = "group") -> pd.DataFrame:
    """Mean macro and micro correlations per (<group>, method) with their oriented mean (App. D.7 ablation).

    One row per group, method and kind ("macro"/"micro"); a column per correlation (labelled as
    :data:`CORRELATION_LABELS`, mean over seeds, and levels for micro) and "oriented mean": the three correlations
    signed so that higher is better (−MoRF vs GT, +LeRF vs GT, −MoRF vs LeRF, from ``DIRECTIONS``), averaged.
    """
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in ffidelity.DIRECTIONS.items()}
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        for method in methods:
            res = ffidelity.ground_truth_ranking(P[g, method], Q[g, method], noise_levels, sparsity)
            for kind in ("macro", "micro"):
                row = {group: g, "method": method, "kind": kind}
                for k, label in CORRELATION_LABELS.items():
                    row[label] = stats.nan_mean_std(res[kind][k])[0].item()
                row["oriented mean"] = sum(sign[k] * row[label] for k, label in CORRELATION_LABELS.items()) / len(sign)
                rows.append(row)
    return pd.DataFrame(rows)


def table_layout(tidy: pd.DataFrame, *, group: str, paper: str | None = None) -> pd.DataFrame:
    """The paper's table layout: rows (row, correlation), one column per ``"<group> <method>"``, cells
    "mean ± std" followed by the paper's value in parentheses when the ``paper`` column holds one."""
    def cell(m: float, s: float, p: float) -> str:
        return f"{m:.2f} ± {s:.2f}" + ("" if p != p else f" ({p:.2f})")

    values = tidy[paper] if paper is not None else [float("nan")] * len(tidy)
    table = tidy.assign(cell=[cell(m, s, p) for m, s, p in zip(tidy["mean"], tidy["std"], values)],
                        correlation=tidy["correlation"].map(CORRELATION_LABELS)).pivot_table(
        index=["row", "correlation"], columns=[group, "method"], values="cell", aggfunc="first", sort=False)
    table.columns = [f"{g} {m}" for g, m in table.columns]
    return table.reset_index()


def separation(curves: pd.DataFrame, *, group: str) -> pd.DataFrame:
    """Spread (max − min over ξ) of each method's mean "+" and "−" scores, averaged over levels, per ``group``."""
    means = curves.groupby([group, "method", "curve", "level", "xi"])["score"].mean()
    spread = (means.groupby([group, "method", "curve", "level"]).agg(lambda v: v.max() - v.min())
              .groupby([group, "method", "curve"]).mean().unstack("curve").reset_index())
    spread.columns = [group, "method", "spread of + scores", "spread of − scores"]
    return spread


def micro_cells(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                group: str = "group") -> pd.DataFrame:
    """The units the ranking verdicts resample: one row per (<group>, method, seed, level).

    Columns "micro rank": the method's micro rank among ``methods`` at that seed and level
    (:func:`faithlab.metrics.micro_ranks`), averaged over the three correlations (lower is better); "oriented
    micro": its three micro correlations signed so that higher is better (−MoRF vs GT, +LeRF vs GT, −MoRF vs LeRF)
    and averaged over the defined ones (NaN when all three are undefined; ideal +1).
    """
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in ffidelity.DIRECTIONS.items()}
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        micro = {m: ffidelity.ground_truth_ranking(P[g, m], Q[g, m], noise_levels, sparsity)["micro"]
                 for m in methods}
        ranks = torch.stack([ffidelity.micro_ranks(torch.stack([micro[m][k] for m in methods]), direction=d)
                             for k, d in ffidelity.DIRECTIONS.items()]).mean(0)  # (n_methods, seeds, levels)
        for i, m in enumerate(methods):
            oriented = torch.stack([sign[k] * micro[m][k] for k in ffidelity.DIRECTIONS]).nanmean(0)
            n_seeds, n_levels = oriented.shape
            rows += [{group: g, "method": m, "seed": s, "level": sparsity[j], "micro rank": ranks[i, s, j].item(),
                      "oriented micro": oriented[s, j].item()} for s in range(n_seeds) for j in range(n_levels)]
    return pd.DataFrame(rows)


def _cells(cells: pd.DataFrame, group: str, value, column: str) -> dict[str, torch.Tensor]:
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    return {m: torch.tensor(v.sort_values(["seed", "level"])[column].to_numpy(), dtype=torch.float64)
            for m, v in part.groupby("method", sort=False)}


def _baseline_premise(oriented: Mapping[str, torch.Tensor], target: str, baseline: str, tol: float) -> str | None:
    return verdicts.first_reason(
        verdicts.undefined(oriented[target].nanmean(), what=f"{target}'s micro correlation"),
        verdicts.at_ideal(oriented[baseline].nanmean(), ideal=1.0, tol=tol,
                          what=f"{baseline}'s oriented micro correlation"))


def ranking_verdict(cells: pd.DataFrame, *, group: str, value, target: str = "F-Fidelity",
                    baseline: str = "Fidelity", tol: float = 0.05, seed: int = 0
                    ) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of "``target`` recovers the ground-truth ranking better than the other methods" for one
    ``group == value`` (an explainer or a model), from :func:`micro_cells`.

    Premise: not testable when the target's micro correlations are all undefined or when ``baseline``'s oriented
    micro correlation is already within ``tol`` of the ideal +1 (no method can beat it). Decision: paired
    bootstrap over seeds × levels of the mean micro rank (lower is better) of the target against every other
    method (:func:`faithlab.verdicts.compare`, rule of :func:`faithlab.verdicts.from_comparison`).
    """
    ranks, oriented = _cells(cells, group, value, "micro rank"), _cells(cells, group, value, "oriented micro")
    for name in (target, baseline):
        if name not in ranks:
            raise ValueError(f"{name!r} is not among the methods of the cells ({list(ranks)})")
    comparisons = verdicts.compare(ranks, target=target, higher_is_better=False, seed=seed)
    why = _baseline_premise(oriented, target, baseline, tol)
    return verdicts.from_comparison(comparisons, untestable=why), comparisons


def ablation_verdict(cells: pd.DataFrame, *, group: str, value, chain: Sequence[str] = (
        "Fidelity", "Fidelity+Fine-tune", "F-Fidelity"), tol: float = 0.05, seed: int = 0
                     ) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of App. D.7's ablation "each step of ``chain`` improves on the one before" (Fidelity <
    Fidelity+Fine-tune < F-Fidelity) on the oriented micro correlations of :func:`micro_cells`.

    Micro, not macro: with six explainers the macro correlation takes few values and saturates at ±1. Premise: not
    testable when a consecutive pair shares fewer than 2 cells with defined correlations, the last method's are
    undefined or the first is already within ``tol`` of +1. Decision: a paired bootstrap over seeds × levels for
    each consecutive pair; reproduced when every step is a win, partly reproduced when at least one is, else not
    reproduced. Returns the verdict and the comparisons keyed "<later> vs <earlier>" (empty when not testable).
    """
    oriented = _cells(cells, group, value, "oriented micro")
    missing = [m for m in chain if m not in oriented]
    if len(chain) < 2 or missing:
        raise ValueError(f"chain must name at least two methods of the cells, missing {missing}")
    pairs = list(zip(chain, chain[1:]))
    why = verdicts.first_reason(
        *(f"{a} and {b} share fewer than 2 seed × level cells with defined correlations"
          for a, b in pairs if int((oriented[a].isfinite() & oriented[b].isfinite()).sum()) < 2),
        _baseline_premise(oriented, chain[-1], chain[0], tol))
    if why is not None:
        return verdicts.ladder(False, untestable=why), {}
    comparisons = {f"{b} vs {a}": verdicts.bootstrap_diff(oriented[b], oriented[a], seed=seed) for a, b in pairs}
    wins = [c.outcome == "win" for c in comparisons.values()]
    result = verdicts.ladder(all(wins), any(wins))
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}])" for k, c in comparisons.items())
    return verdicts.Verdict(result, f"95 % bootstrap interval over seeds × levels — {steps}"), comparisons

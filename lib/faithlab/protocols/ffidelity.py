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
from dataclasses import dataclass, field, replace

import pandas as pd
import torch
from torch import nn
from torch.utils.data import Dataset

from faithlab import _validate, data, explainers, perturb, recipes, stats, train, verdicts
from faithlab.metrics import ffidelity
from faithlab.protocols.setup import Setting


def _grid(values, percent: bool = False) -> str:
    """A set-up table's summary of a grid: ``"first–last, n levels"`` (in percent with ``percent``)."""
    values = sorted(values)
    lo, hi = (100 * values[0], 100 * values[-1]) if percent else (values[0], values[-1])
    return f"{lo:g}–{hi:g}{' %' if percent else ''}, {len(values)} levels"


def _series_text(params: Mapping) -> SeriesTextModels:
    """The series/text models of a notebook's parameters (its ``series_text_models`` overrides)."""
    return SeriesTextModels(**params["series_text_models"])


def _model(name: str, width) -> str:
    """A model in a set-up table: its display name and width (``CNN (width 32)``)."""
    return f"{recipes.DISPLAY_NAMES.get(name, name)} (width {width:g})"


SETUP: tuple[Setting, ...] = (
    Setting("image data", "CIFAR-100, Tiny-ImageNet", "ffidelity/images_ranking",
            lambda p: f"{'coloured' if p['color'] else 'grey'} digit canvases, {p['image_size']} px, "
                      f"{'all' if p['n_train'] is None else format(p['n_train'], ',')} train"),
    Setting("image model", "ResNet-9, 100 epochs", "ffidelity/images_ranking",
            lambda p: f"{_model(p['model_name'], p['width'])}, {p['n_epochs']} epochs"),
    Setting("fine-tuning, ROAR retraining", "100 epochs, 100 epochs", "ffidelity/images_ranking",
            "{n_finetune_epochs} epochs, {n_roar_epochs} epochs"),
    Setting("explainers", "SG-SQ over IG (10 samples), GradCAM", "ffidelity/images_ranking",
            lambda p: ", ".join(f"SG-SQ over IG ({p['sg_samples']} samples, {p['ig_steps']} steps)"
                                if e == "sg_sq_ig" else {"gradcam": "GradCAM"}.get(e, e) for e in p["explainers"])),
    Setting("cap β, removal rate α, masks N", "β = 0.1, α+ = α− = 0.5, N = 50", "ffidelity/images_ranking",
            "β = {beta}, α+ = α− = {alpha}, N = {n_samples}"),
    Setting("sparsity grid", "5–95 %, 19 levels", "ffidelity/images_ranking",
            lambda p: _grid(p["sparsity"], percent=True)),
    Setting("noise levels ξ, degradation seeds", "0–1, 6 levels; 5 seeds", "ffidelity/images_ranking",
            lambda p: f"{_grid(p['noise_levels'])}; {p['n_seeds']} seeds"),
    Setting("evaluation images", "10,000 (CIFAR-100), 2,000 (Tiny-ImageNet)", "ffidelity/images_ranking",
            "{n_test:,} test canvases"),
    Setting("series, text data (Tables 3–4, 6–7)", "PAM, Boiler; SST2, BoolQ", "ffidelity/series_text",
            lambda p: f"synthetic series of {_series_text(p).ts_length} steps; "
                      f"{_series_text(p).text_length}-token sentences"),
    Setting("series, text models", "Bi-LSTM, CNN; LSTM, Transformer", "ffidelity/series_text",
            lambda p: "; ".join(", ".join(recipes.DISPLAY_NAMES.get(m, m) for m in names)
                                for names in (_series_text(p).ts_models, _series_text(p).text_models))),
    Setting("plateau (Fig. 4): r × β", "colored-MNIST, 5 r × 3 β", "ffidelity/size_plateau",
            lambda p: f"{'coloured' if p['color'] else 'grey'} digit canvases, {len(p['rs'])} r × {len(p['betas'])} β"),
    Setting("sensitivity grids (Tables 24–26)", "N 10–150, β 0.05–0.25, α 0.2–0.8", "ffidelity/sensitivity",
            lambda p: ", ".join(f"{name} {min(p['grids'][key]):g}–{max(p['grids'][key]):g}"
                                for name, key in (("N", "n_samples"), ("β", "beta"), ("α", "alpha")))),
)
"""The chapter's set-up table, paper (spec §1.4–1.12) against ours (the executed notebooks' parameters)."""


def degraded_fidelity_curves(model: Callable, x: torch.Tensor, y: torch.Tensor, clean: torch.Tensor, *,
                             noise_levels: Sequence[float], sparsity: Sequence[float], n_seeds: int = 5,
                             alpha: float = 1.0, beta: float | None = None, n_samples: int = 1,
                             units=None, reference: perturb.Reference = "zero", ties: str = "random",
                             batch_size: int = 256, cells=None) -> tuple[torch.Tensor, ...]:
    """Mean Fid+ and Fid− curves of ``clean`` degraded at every noise level → two ``(n_seeds, n_levels, n_sparsity)``.

    clean: the explainer's map, any layout ``fid_plus`` accepts. Degradation ``k`` of seed ``s`` uses generator
    ``1000·s + k`` and the Monte-Carlo masks generator ``s``, so every evaluation method sees the same degraded
    maps. The "+" and "−" curves are index-paired by :func:`faithlab.metrics.minus_sparsity`. alpha/beta/n_samples
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
                fid_plus = ffidelity.fid_plus(model, x, attr, target=y, sparsity=sparsity, generator=s, **common)
                fid_minus = ffidelity.fid_minus(model, x, attr, target=y, sparsity=ffidelity.minus_sparsity(sparsity),
                                                generator=s, **common)
            plus[s, k], minus[s, k] = fid_plus.mean(0).cpu(), fid_minus.mean(0).cpu()
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
    accuracy = {name: train.loss_and_accuracy(model, test_data, batch_size=batch_size, device=device)["accuracy"]
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
    and averaged over the defined ones (NaN when all three are undefined; ideal +1); "GT micro": the same over the
    two correlations with the ground-truth order only (−MoRF vs GT, +LeRF vs GT), the statistic whose chance level
    :func:`ground_truth_null` draws.
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
            with_gt = _gt_micro(micro[m])
            n_seeds, n_levels = oriented.shape
            rows += [{group: g, "method": m, "seed": s, "level": sparsity[j], "micro rank": ranks[i, s, j].item(),
                      "oriented micro": oriented[s, j].item(), "GT micro": with_gt[s, j].item()}
                     for s in range(n_seeds) for j in range(n_levels)]
    return pd.DataFrame(rows)


def _gt_micro(micro: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """−MoRF vs GT and +LeRF vs GT micro correlations averaged over the defined ones (the "GT micro" statistic)."""
    return torch.stack([-micro["morf_vs_gt"], micro["lerf_vs_gt"]]).nanmean(0)


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
                    baseline: str = "Fidelity", tol: float = 0.05, seed: int = 0, untestable: str | None = None
                    ) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of "``target`` recovers the ground-truth ranking better than the other methods" for one
    ``group == value`` (an explainer or a model), from :func:`micro_cells`.

    Premise: not testable when the target's micro correlations are all undefined or when ``baseline``'s oriented
    micro correlation is already within ``tol`` of the ideal +1 (no method can beat it). Decision: paired
    bootstrap over seeds × levels of the mean micro rank (lower is better) of the target against every other
    method (:func:`faithlab.verdicts.compare`, rule of :func:`faithlab.verdicts.from_comparison`).
    untestable: a further premise reason (e.g. :func:`claim_ranking`'s chance-level check), used when the premises
    above hold. The claim function with its null is :func:`claim_ranking`.
    """
    ranks, oriented = _cells(cells, group, value, "micro rank"), _cells(cells, group, value, "oriented micro")
    for name in (target, baseline):
        if name not in ranks:
            raise ValueError(f"{name!r} is not among the methods of the cells ({list(ranks)})")
    comparisons = verdicts.compare(ranks, target=target, higher_is_better=False, seed=seed)
    why = verdicts.first_reason(_baseline_premise(oriented, target, baseline, tol), untestable)
    return verdicts.from_comparison(comparisons, untestable=why), comparisons


def ablation_verdict(cells: pd.DataFrame, *, group: str, value, chain: Sequence[str] = (
        "Fidelity", "Fidelity+Fine-tune", "F-Fidelity"), tol: float = 0.05, seed: int = 0,
                     untestable: str | None = None) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of App. D.7's ablation "each step of ``chain`` improves on the one before" (Fidelity <
    Fidelity+Fine-tune < F-Fidelity) on the oriented micro correlations of :func:`micro_cells`.

    Micro, not macro: with six explainers the macro correlation takes few values and saturates at ±1. Premise: not
    testable when a consecutive pair shares fewer than 2 cells with defined correlations, the last method's are
    undefined or the first is already within ``tol`` of +1. Decision: a paired bootstrap over seeds × levels for
    each consecutive pair; reproduced when every step is a win, partly reproduced when at least one is, else not
    reproduced. Returns the verdict and the comparisons keyed "<later> vs <earlier>" (empty when not testable).
    untestable: a further premise reason (:func:`claim_ablation`'s chance-level check), used when those above hold.
    """
    oriented = _cells(cells, group, value, "oriented micro")
    missing = [m for m in chain if m not in oriented]
    if len(chain) < 2 or missing:
        raise ValueError(f"chain must name at least two methods of the cells, missing {missing}")
    pairs = list(zip(chain, chain[1:]))
    why = verdicts.first_reason(
        *(f"{a} and {b} share fewer than 2 seed × level cells with defined correlations"
          for a, b in pairs if int((oriented[a].isfinite() & oriented[b].isfinite()).sum()) < 2),
        _baseline_premise(oriented, chain[-1], chain[0], tol), untestable)
    if why is not None:
        return verdicts.ladder(False, untestable=why), {}
    comparisons = {f"{b} vs {a}": verdicts.bootstrap_diff(oriented[b], oriented[a], seed=seed) for a, b in pairs}
    wins = [c.outcome == "win" for c in comparisons.values()]
    result = verdicts.ladder(all(wins), any(wins))
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}])" for k, c in comparisons.items())
    return verdicts.Verdict(result, f"95 % bootstrap interval over seeds × levels — {steps}"), comparisons


# ---- ranking, variants, plateau and sensitivity claims
# Each claim function takes the notebook's frames and returns a faithlab.verdicts.Claim: its rule, its premise with
# the null it was checked against, the paper's value, ours, the verdict and the table behind it.
def permuted_correlations(P: torch.Tensor, Q: torch.Tensor, *, noise_levels: Sequence[float],
                          sparsity: Sequence[float] | None = None, n_draws: int = 1000, seed: int = 0
                          ) -> pd.DataFrame:
    """Chance levels of one method's correlations with the ground truth (spec §1.9) → one row per draw.

    P, Q: ``(n_seeds, n_explainers, n_sparsity)`` "+" and "−" curves of one evaluation method, the explainers in the
    order of ``noise_levels``. Each draw reassigns the ground-truth order at random — one permutation of ξ over the
    explainers for every seed and level, since the ground truth is one order — and recomputes the correlations of
    :func:`faithlab.metrics.ground_truth_ranking` (Spearman = Pearson of average ranks, so the curves are ranked
    once and only the permuted ranks of ξ change; batched over draws). Columns: "draw"; "GT micro" (micro −MoRF vs
    GT and +LeRF vs GT averaged over the defined ones, then over seeds × levels: :func:`micro_cells`' column);
    "morf_vs_gt", "lerf_vs_gt" (macro, mean over seeds); "morf_vs_lerf" (macro, which involves no ground truth:
    drawn with the "−" curves' explainers permuted against the "+" curves', a shuffled pairing).
    With n explainers one Spearman ρ has a wide chance range — for 6 its central 95 % spans about ±0.83, for 3 it
    holds every value — and averaging over seeds and levels narrows it little, as every cell shares the one order.
    Exact when there are at most ``n_draws`` permutations (every permutation once, repeated up to 20 rows for three
    explainers or fewer: 720 rows for six); else ``n_draws`` random ones from generator ``seed`` (the same for
    every method given the same shapes).
    """
    import itertools
    import math

    from faithlab.metrics.statistics import pearson, rankdata, trapezoid_auc

    _validate.tensor(P, "P", ndim=3)
    _validate.tensor(Q, "Q", ndim=3)
    if P.shape != Q.shape:
        raise ValueError(f"Q must have P's shape {tuple(P.shape)}, got {tuple(Q.shape)}")
    n_draws = _validate.positive_int(n_draws, "n_draws")
    if n_draws < 20:
        raise ValueError(f"n_draws must be at least 20 (a chance range needs them), got {n_draws}")
    n_explainers = P.shape[1]
    xi = torch.as_tensor(noise_levels, dtype=torch.float64).flatten()
    if xi.numel() != n_explainers:
        raise ValueError(f"noise_levels must give one ξ per explainer ({n_explainers}), got {xi.numel()}")
    levels = None if sparsity is None else _validate.fractions(sparsity, "sparsity").to(torch.float64)
    if math.factorial(n_explainers) <= n_draws:  # the exact permutation distribution
        order = torch.tensor(list(itertools.permutations(range(n_explainers))), dtype=torch.long)
        order = order.repeat(-(-20 // len(order)), 1)
        pairing = order.flip(0)
    else:
        g = torch.Generator().manual_seed(int(seed))
        order = torch.rand(n_draws, n_explainers, generator=g).argsort(1)
        pairing = torch.rand(n_draws, n_explainers, generator=g).argsort(1)
    n_draws = len(order)
    p, q = P.detach().to("cpu", torch.float64), Q.detach().to("cpu", torch.float64)
    truth = rankdata(xi)[order]  # (draws, explainers): the permuted ranks of ξ
    micro = [pearson(rankdata(t, dim=1)[None], truth[:, None, :, None], dim=2) for t in (p, q)]  # (D, S, L)
    with_gt = torch.stack([-micro[0], micro[1]]).nanmean(0).flatten(1).nanmean(1)
    auc_p, auc_q = (rankdata(trapezoid_auc(t, levels), dim=-1) for t in (p, q))  # (S, E)
    macro = {"morf_vs_gt": pearson(auc_p[None], truth[:, None], dim=-1),
             "lerf_vs_gt": pearson(auc_q[None], truth[:, None], dim=-1),
             "morf_vs_lerf": pearson(auc_p[None], auc_q[:, pairing].transpose(0, 1), dim=-1)}  # (D, S) each
    return pd.DataFrame({"draw": range(n_draws), "GT micro": with_gt.numpy(),
                         **{k: v.nanmean(1).numpy() for k, v in macro.items()}})


def ground_truth_null(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                      noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                      group: str = "group", n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """:func:`permuted_correlations` of every (<group>, method) of ``P``/``Q`` (as :func:`micro_cells` takes them)
    → one row per <group>, method and draw (columns <group>, method, draw, GT micro, morf_vs_gt, lerf_vs_gt,
    morf_vs_lerf): the chance level of each method's correlations under a permuted ground-truth order."""
    frames = [permuted_correlations(P[g, m], Q[g, m], noise_levels=noise_levels, sparsity=sparsity,
                                    n_draws=n_draws, seed=seed).assign(**{group: g, "method": m})
              for g in dict.fromkeys(g for g, _ in P) for m in methods]
    columns = [group, "method", "draw", "GT micro", *ffidelity.DIRECTIONS]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


_PERMUTED = "ground-truth order permuted over the explainers"


def _null_of(draws: pd.Series, what: str = _PERMUTED) -> verdicts.Null | None:
    """The :class:`faithlab.verdicts.Null` of ``draws``, or None when fewer than 20 are defined."""
    values = pd.to_numeric(draws, errors="coerce").dropna()
    return verdicts.Null(what, tuple(values.tolist())) if len(values) >= 20 else None


def _beyond(null: verdicts.Null | None, value: float) -> bool:
    """Whether ``value`` lies outside ``null``'s range by more than float round-off (the observed statistic and the
    draws are averaged in different orders, and with few explainers the range's ends are values the statistic
    takes); False for a missing null or a NaN value."""
    if null is None or not pd.notna(value):
        return False
    eps = 1e-9 * max(1.0, abs(value))
    return bool(value < null.low - eps or value > null.high + eps)


def _chance_table(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, methods: Sequence[str]
                  ) -> pd.DataFrame:
    """Per method: mean "GT micro" over its cells, its chance range under a permuted order, and whether it lies
    beyond it (either side)."""
    rows = []
    for m in methods:
        observed = float(cells.loc[(cells[group] == value) & (cells["method"] == m), "GT micro"].mean())
        draws = null.loc[(null[group] == value) & (null["method"] == m), "GT micro"]
        if draws.empty:
            raise ValueError(f"null holds no draws for {group} {value!r}, method {m!r}: pass ground_truth_null's frame")
        n = _null_of(draws)
        rows.append({"method": m, "GT micro": observed, "chance low": n.low if n else float("nan"),
                     "chance median": n.median if n else float("nan"), "chance high": n.high if n else float("nan"),
                     "beyond chance": _beyond(n, observed)})
    return pd.DataFrame(rows)


def _chance_premise(chance: pd.DataFrame) -> tuple[str, str | None]:
    """The null's premise sentence and, when no method's GT micro lies beyond its chance range, the reason."""
    beyond = chance.loc[chance["beyond chance"], "method"].tolist()
    ranges = ", ".join(f"{m} {x:.2f} [{lo:.2f}, {hi:.2f}]" for m, x, lo, hi in zip(
        chance["method"], chance["GT micro"], chance["chance low"], chance["chance high"]))
    text = (f"null: each method's mean GT micro correlation (−MoRF vs GT, +LeRF vs GT) against its 95 % chance range "
            f"with the {_PERMUTED} ({ranges}); beyond chance: {', '.join(beyond) or 'none'}")
    why = None if beyond else ("no method's correlation with the ground-truth order can be told from a permuted "
                               "order (with few explainers a Spearman ρ has a wide chance range)")
    return text, why


def claim_ranking(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, methods: Sequence[str] | None = None,
                  target: str = "F-Fidelity", baseline: str = "Fidelity", label: str = "F1",
                  source: str = "Tables 1-2", paper_value: str = "", tol: float = 0.05, seed: int = 0
                  ) -> verdicts.Claim:
    """Claim "``target`` recovers the ground-truth explainer ranking better than the other methods" for one
    ``group == value`` (an explainer, or a model), Tables 1–2, 5, 10 of F-Fidelity.

    cells: :func:`micro_cells`; null: :func:`ground_truth_null` of the same curves. methods: the compared methods
    (default: those of the cells with a micro rank). Premise: ``baseline``'s oriented micro correlation is not within
    ``tol`` of the ideal +1 and the target's is defined (:func:`ranking_verdict`); null: at least one method's mean
    GT micro correlation lies beyond its 95 % chance range under a permuted ground-truth order, else no method
    sees the ground truth and the ranks compare noise. Rule (:func:`ranking_verdict`): paired bootstrap over seeds ×
    levels of the mean micro rank of the target against each other method; reproduced when it loses to none and
    beats at least one, partly when it beats none and loses to none or beats some and loses to others, not
    reproduced when it loses to some and beats none. Table: one row per method (GT micro, its chance range, mean
    micro rank, the comparison with the target)."""
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    if methods is None:
        methods = list(dict.fromkeys(part.loc[part["micro rank"].notna(), "method"]))
    part = part[part["method"].isin(list(methods))]
    chance = _chance_table(part, null, group=group, value=value, methods=methods)
    null_text, null_why = _chance_premise(chance)
    v, comps = ranking_verdict(part, group=group, value=value, target=target, baseline=baseline, tol=tol,
                               seed=seed, untestable=null_why)
    means = part.groupby("method")[["micro rank", "oriented micro"]].mean()
    comparison = pd.DataFrame(verdicts.comparison_table(comps, target=target))
    table = chance.assign(**{"mean micro rank": chance["method"].map(means["micro rank"])}).merge(
        comparison.drop(columns="target").rename(columns={"competitor": "method"}), on="method", how="left")
    others = [m for m in methods if m != target]
    return verdicts.Claim(
        f"{label} ({value}): {target} recovers the ground-truth explainer ranking better than "
        f"{', '.join(others)} ({source})",
        rule=f"paired bootstrap (4000 resamples, 95 %) over seeds × levels of the mean micro rank (3 correlations) of "
             f"{target} against each other method: reproduced when it loses to none and beats at least one, partly "
             f"when it beats none and loses to none or beats some and loses to others, not reproduced when it loses "
             f"to some and beats none",
        premise=f"{baseline}'s oriented micro correlation ({means.loc[baseline, 'oriented micro']:.2f}) must not be "
                f"within {tol:g} of the ideal +1; {null_text}",
        paper_value=paper_value,
        our_value="mean micro rank over 3 correlations: " + ", ".join(
            f"{m} {means.loc[m, 'micro rank']:.2f}" for m in methods),
        verdict=v, table=table)


def claim_lerf_near_one(correlations: pd.DataFrame, null: pd.DataFrame, *, group: str, value,
                        target: str = "F-Fidelity", label: str = "F2", reproduced: float = 0.8,
                        partly: float = 0.5) -> verdicts.Claim:
    """Claim "the LeRF vs GT macro correlation of ``target`` is ≈ +1" (Tables 1–2) for one ``group == value``.

    correlations: :func:`ranking_correlations` (the "Macro Corr." rows); null: :func:`ground_truth_null`. Premise
    and null: the mean macro LeRF vs GT must lie beyond its 95 % chance range under a permuted ground-truth order
    (with six explainers only a ρ near 0.9 or more does), else not testable here; undefined: not testable. Rule:
    reproduced when it is at least ``reproduced``, partly when at least ``partly``, else not reproduced."""
    row = correlations[(correlations[group] == value) & (correlations["row"] == "Macro Corr.")
                       & (correlations["correlation"] == "lerf_vs_gt") & (correlations["method"] == target)]
    if row.empty:
        raise ValueError(f"correlations hold no macro LeRF vs GT of {target!r} for {group} {value!r}")
    observed = float(row["mean"].iloc[0])
    draws = null.loc[(null[group] == value) & (null["method"] == target), "lerf_vs_gt"]
    n = _null_of(draws)
    untestable = verdicts.first_reason(
        verdicts.undefined(observed, what="the macro LeRF vs GT correlation"),
        None if n is not None else "the chance level is undefined (constant curves)",
        None if n is None or _beyond(n, observed) else
        f"the macro LeRF vs GT correlation ({observed:.3f}) lies within the chance range of {n.describe()}")
    v = verdicts.verdict(observed, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable)
    table = pd.DataFrame([{group: value, "method": target, "macro LeRF vs GT": observed,
                           "chance low": n.low if n else float("nan"), "chance high": n.high if n else float("nan")}])
    return verdicts.Claim(
        f"{label} ({value}): {target}'s LeRF vs GT macro correlation is ≈ +1 (Tables 1-2)",
        rule=f"the macro LeRF vs GT correlation (mean over seeds): reproduced from {reproduced:g}, partly from "
             f"{partly:g}, else not reproduced",
        premise="null: the correlation must lie beyond its 95 % chance range, "
                + (n.describe(2) if n is not None else f"{_PERMUTED}: undefined"),
        paper_value="1.00", our_value=f"{observed:.2f}", verdict=v, table=table)


def claim_ablation(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, chain: Sequence[str] = (
        "Fidelity", "Fidelity+Fine-tune", "F-Fidelity"), label: str = "F3", tol: float = 0.05, seed: int = 0
                   ) -> verdicts.Claim:
    """Claim of App. D.7 (Fig. 3): each step of ``chain`` improves on the one before (Fidelity < Fidelity +
    fine-tune < F-Fidelity), for one ``group == value``.

    cells: :func:`micro_cells` holding every method of the chain; null: :func:`ground_truth_null`. Premise (as
    :func:`ablation_verdict`): each consecutive pair shares at least 2 seed × level cells with defined correlations
    and the first method is not within ``tol`` of +1; null: at least one method of the chain has a mean GT micro
    correlation beyond its chance range under a permuted ground-truth order. Rule: paired bootstrap (95 %) over
    seeds × levels of the oriented micro correlation for each step; reproduced when every step is a win, partly
    when at least one is, else not reproduced. Table: the methods' chance rows and the steps."""
    part = cells[(cells[group] == value) & cells["method"].isin(list(chain))]
    if part.empty:
        raise ValueError(f"{group} {value!r} with the methods {list(chain)} is not in the cells")
    chance = _chance_table(part, null, group=group, value=value, methods=chain)
    null_text, null_why = _chance_premise(chance)
    v, comps = ablation_verdict(part, group=group, value=value, chain=chain, tol=tol, seed=seed, untestable=null_why)
    oriented = part.groupby("method")["oriented micro"].mean()
    steps = pd.DataFrame([{"method": k, "mean difference": c.mean, "low": c.low, "high": c.high,
                           "outcome": c.outcome, "units": c.n} for k, c in comps.items()])
    table = pd.concat([chance.assign(**{"oriented micro": chance["method"].map(oriented)}), steps],
                      ignore_index=True)
    return verdicts.Claim(
        f"{label} ({value}): Ablation: {chain[1]} beats {chain[0]} and {chain[-1]} beats both (App. D.7, Fig. 3)",
        rule="paired bootstrap (4000 resamples, 95 %) over seeds × levels of the oriented micro correlation, one per "
             "step of " + " → ".join(chain) + ": reproduced when every step is a win, partly when at least one is, "
             "else not reproduced",
        premise=f"{chain[0]}'s oriented micro correlation ({oriented[chain[0]]:.2f}) must not be within {tol:g} of the "
                f"ideal +1, each step needs 2 cells with defined correlations; {null_text}",
        paper_value="F-Fid > Fid+FT > Fid on all three correlations (Fig. 3)",
        our_value="micro oriented mean " + ", ".join(f"{m} {oriented[m]:.2f}" for m in chain), verdict=v,
        table=table)


def claim_ood_check(diagnostic: pd.DataFrame, *, main: str, control: str, n_images: int, model: str = "original",
                    min_gap: float = 0.05, control_max: float = 0.02, level: float = 0.95,
                    label: str = "Study check") -> verdicts.Claim:
    """Our check of the stand-in (not the paper's claim): removal is out of distribution on the main (coloured)
    canvases and not on the grey control.

    diagnostic: :func:`faithlab.protocols.removal_diagnostic` rows of both settings, with a "setting" column holding
    ``main`` and ``control``; the OOD gap is the accuracy ``model`` loses to the largest k background pixels
    (:func:`faithlab.protocols.ood_gap`). Premise and null: the grey control is the diagnostic's own null — there
    the removal value is the background's grey, so its gap must stay below ``control_max``, else the diagnostic
    flags more than OOD removal and not testable here. Decision: the main gap minus the control's, with a ``level``
    normal interval from a conservative (unpaired) binomial standard error over ``n_images`` images per setting:
    above 0 and a main gap of at least ``min_gap`` → reproduced; above 0 with a smaller gap → partly; below 0 → not
    reproduced; containing 0 → not testable here (the main gap cannot be told from the null's)."""
    from statistics import NormalDist

    from faithlab.protocols.diagnostics import ood_gap

    n = _validate.positive_int(n_images, "n_images")
    rows = {}
    for key, name in (("main", main), ("control", control)):
        part = diagnostic[(diagnostic["setting"] == name) & (diagnostic["model"] == model)]
        if part.empty:
            raise ValueError(f"diagnostic holds no rows of setting {name!r} and model {model!r}")
        k = int(part["k"].max())
        clean = float(part.loc[part["removed"] == "none", "accuracy"].iloc[0])
        gap = float(ood_gap(part, k=k)[model])
        moved = clean - gap
        se2 = (clean * (1 - clean) + moved * (1 - moved)) / n
        rows[key] = {"setting": name, "model": model, "k": k, "clean accuracy": clean, "background removed": moved,
                     "OOD gap": gap, "se": se2 ** 0.5}
    diff = rows["main"]["OOD gap"] - rows["control"]["OOD gap"]
    half = NormalDist().inv_cdf(0.5 + level / 2) * (rows["main"]["se"] ** 2 + rows["control"]["se"] ** 2) ** 0.5
    low, high = diff - half, diff + half
    gap_main, gap_control = rows["main"]["OOD gap"], rows["control"]["OOD gap"]
    untestable = verdicts.first_reason(
        None if gap_control < control_max else
        f"the grey control (the null) loses {gap_control:.3f} to background removal (≥ {control_max:g}): the "
        f"diagnostic flags more than OOD removal",
        None if low > 0 or high < 0 else
        f"the coloured gap minus the control's ({diff:+.3f} [{low:+.3f}, {high:+.3f}]) cannot be told from 0 with "
        f"{n} images")
    v = verdicts.ladder(low > 0 and gap_main >= min_gap, low > 0, untestable=untestable)
    if untestable is None:
        v = verdicts.Verdict(v, f"gap difference {diff:+.3f}, {level:.0%} interval [{low:+.3f}, {high:+.3f}]")
    return verdicts.Claim(
        f"{label}: removal is out of distribution on the coloured canvases and not on the grey control",
        rule=f"the {model} model's accuracy lost to the largest k background pixels, coloured minus grey, with a "
             f"{level:.0%} interval (conservative binomial error over {n} images per setting): reproduced when the "
             f"interval lies above 0 and the coloured gap is at least {min_gap:g}, partly when above 0 with a smaller "
             f"gap, not reproduced when below 0",
        premise=f"null: the grey control, whose removal value is its own background, must lose less than "
                f"{control_max:g} (it loses {gap_control:.3f})",
        paper_value="— (F-Fidelity's premise)",
        our_value=f"accuracy lost to {rows['main']['k']} background pixels: coloured {gap_main:.3f}, grey "
                  f"{gap_control:.3f}",
        verdict=v, table=pd.DataFrame(list(rows.values())))


def claim_map_preferred(per_image: pd.DataFrame, *, better: str = "GradCAM", worse: str = "Saliency",
                        label: str = "F8", paper_value: str = "", n_boot: int = 4000, seed: int = 0
                        ) -> verdicts.Claim:
    """Claim of App. D.10 (Table 11): F-Fidelity rates ``better`` above ``worse`` — higher FFid+ and lower FFid−.

    per_image: one row per image ("case") and explainer with the image's "FFid+" and "FFid−" (means over
    explanation sizes). Null: no difference between the two maps — a paired bootstrap over the images (95 %) calls
    each comparison (FFid+ higher, FFid− lower) a win, a tie or a loss; when both are ties the data cannot tell the
    maps apart and the claim is not testable here. Rule: reproduced when both are wins, partly when one is a win
    and the other a tie, not reproduced when either is a loss."""
    wide = per_image.pivot(index="case", columns="explainer", values=["FFid+", "FFid−"])
    missing = [m for m in (better, worse) if ("FFid+", m) not in wide.columns]
    if missing:
        raise ValueError(f"per_image holds no rows of {missing}")
    if len(wide) < 2:
        comps = {}
        untestable = "fewer than 2 images"
    else:
        comps = {"FFid+ (higher)": verdicts.bootstrap_diff(wide["FFid+", better], wide["FFid+", worse],
                                                           n_boot=n_boot, seed=seed),
                 "FFid− (lower)": verdicts.bootstrap_diff(wide["FFid−", better], wide["FFid−", worse],
                                                          higher_is_better=False, n_boot=n_boot, seed=seed)}
        outcomes = [c.outcome for c in comps.values()]
        untestable = (f"neither FFid+ nor FFid− of {better} can be told from {worse}'s (both 95 % intervals contain 0)"
                      if set(outcomes) == {"tie"} else None)
    outcomes = [c.outcome for c in comps.values()]
    v = verdicts.ladder(outcomes == ["win", "win"], "loss" not in outcomes, untestable=untestable)
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.4f} [{c.low:+.4f}, {c.high:+.4f}])" for k, c in comps.items())
    if untestable is None:
        v = verdicts.Verdict(v, f"95 % bootstrap interval over {len(wide)} images — {steps}")
    means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()
    table = pd.DataFrame([{"comparison": k, "mean difference": c.mean, "low": c.low, "high": c.high,
                           "outcome": c.outcome, "images": c.n} for k, c in comps.items()])
    return verdicts.Claim(
        f"{label}: F-Fidelity rates {better} above {worse}: higher FFid+, lower FFid- (App. D.10, Table 11)",
        rule=f"per image, FFid± of each map averaged over explanation sizes; paired bootstrap over images (4000 "
             f"resamples, 95 %) of {better} − {worse}: reproduced when FFid+ is higher and FFid− lower (both wins), "
             f"partly when one wins and the other ties, not reproduced when either is a loss",
        premise=f"null: no difference between the maps, the paired bootstrap's interval containing 0; with both "
                f"comparisons ties the claim is not testable ({steps or 'no comparison'})",
        paper_value=paper_value,
        our_value=f"FFid+ {means.loc[better, 'FFid+']:.4f} vs {means.loc[worse, 'FFid+']:.4f}, "
                  f"FFid- {means.loc[better, 'FFid−']:.4f} vs {means.loc[worse, 'FFid−']:.4f}",
        verdict=v, table=table)


def claim_cost(cost_table: pd.DataFrame, stages: pd.DataFrame, *, target: str = "F-Fidelity", other: str = "ROAR",
               label: str = "F9", paper_value: str = "") -> verdicts.Claim:
    """Claim of App. D.11 (Table 13): F-Fidelity (one fine-tuning) costs less than ROAR (one retraining per
    explainer).

    cost_table: rows (method, stage, seconds, forward equivalents, …) with a "total" stage per method; stages: the
    study's ``costs`` (one row per stage and explainer, with "cached"). Work is counted exactly (forward hooks;
    forward-pass equivalents = image passes + 2 × backward passes), so the work ratio has no sampling null: it is
    decided by the count of training runs (ROAR retrains once per explainer, F-Fidelity fine-tunes once) against
    F-Fidelity's N-mask evaluation, and it is the same on every machine and run. Rule: reproduced when the work
    ratio target/other is below 1, not reproduced when it is at least 1; not testable when a method's total work is
    missing or zero. Seconds are reported beside it (with the timing noise, the relative range of ROAR's identical
    retrainings), never decided on: they depend on the machine and on what else it runs, and a verdict must not."""
    total = cost_table[cost_table["stage"] == "total"].set_index("method")
    missing = [m for m in (target, other) if m not in total.index]
    work = seconds = float("nan")
    if not missing and float(total.loc[other, "forward equivalents"]) > 0:
        work = float(total.loc[target, "forward equivalents"] / total.loc[other, "forward equivalents"])
        seconds = float(total.loc[target, "seconds"] / total.loc[other, "seconds"])
    retrain = stages[(stages["stage"] == "retrain (ROAR)") & ~stages["cached"].astype(bool)]
    equal = len(retrain) >= 2 and retrain["image passes"].nunique() == 1
    noise = (float((retrain["seconds"].max() - retrain["seconds"].min()) / retrain["seconds"].mean())
             if equal else float("nan"))
    untestable = (f"no total work of {', '.join(missing)}" if missing else
                  None if pd.notna(work) else f"{other}'s total work is zero")
    v = verdicts.ladder(work < 1, untestable=untestable)
    if untestable is None:
        v = verdicts.Verdict(v, f"work ratio {work:.2f}")
    return verdicts.Claim(
        f"{label}: {target} (one fine-tuning) is cheaper than {other} (one retraining per explainer) "
        f"(App. D.11, Table 13)",
        rule=f"ratio {target}/{other} of the total forward-pass equivalents: reproduced when below 1, not reproduced "
             f"when at least 1 (seconds are shown, not decided on: they depend on the machine)",
        premise="no sampling null: work is counted exactly, and the ratio is decided by the number of training runs "
                f"({len(stages[stages['stage'] == 'retrain (ROAR)'])} retrainings against one fine-tuning of as many "
                f"epochs) against the N-mask evaluation",
        paper_value=paper_value,
        our_value=f"ratio {target}/{other}: {work:.2f} in forward-pass equivalents, {seconds:.2f} in seconds",
        verdict=v, table=pd.DataFrame([{"work ratio": work, "seconds ratio": seconds,
                                        "seconds: timing noise": noise}]))


def claim_size_readout(table: pd.DataFrame, *, tolerance: float, reproduced: float = 0.8, partly: float = 0.5,
                       label: str = "F4", n_draws: int = 1000, seed: int = 0) -> verdicts.Claim:
    """Claim of Theorem 1 (Fig. 4, App. D.8): the plateau start / turning point of FFid+ against the explanation
    size reveals the true size r.

    table: one row per (r, β) case with "r", "beta/alpha" and "r read off". Cases with r = β/α+ are left out (the
    two critical points coincide). A read-out is correct when |r̂ − r| ≤ ``tolerance``. Null: the read-outs shuffled
    over the cases (``n_draws``, generator ``seed``) — r̂ carrying no information about r still matches it within
    the tolerance for some cases; the share of correct read-outs must lie beyond that null's 95 % range, else not
    testable here (also with fewer than 3 cases). Rule: reproduced when at least ``reproduced`` of the cases are
    correct, partly from ``partly``, else not reproduced."""
    eligible = table[(table["r"] - table["beta/alpha"]).abs() > 1e-9]
    r = eligible["r"].to_numpy(dtype=float)
    r_hat = eligible["r read off"].to_numpy(dtype=float)

    def share_correct(truth, read):
        return float((abs(read - truth) <= tolerance + 1e-9).mean()) if len(truth) else float("nan")

    share = share_correct(r, r_hat)
    null = (verdicts.null_draws(share_correct, r, r_hat, what="r read off shuffled over the (r, β) cases",
                                n_draws=n_draws, seed=seed) if len(r) >= 3 else None)
    untestable = ("fewer than 3 cases with r ≠ β/α+: no chance level" if null is None
                  else verdicts.within_null(share, null, what="the share of correct read-outs"))
    v = verdicts.verdict(share, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable)
    return verdicts.Claim(
        f"{label}: FFid+ vs explanation size has a plateau/turning point at the true size r (Theorem 1, Fig. 4)",
        rule=f"a read-out is correct when |r̂ − r| ≤ {tolerance:g} (cases with r = β/α+ left out): reproduced when at "
             f"least {reproduced:.0%} of the cases are correct, partly from {partly:.0%}, else not reproduced",
        premise="null: " + (null.describe(2) if null is not None else "not computable (fewer than 3 cases)")
                + "; the share must lie beyond it",
        paper_value="qualitative: plateau on [r, β/α+] (Fig. 4)",
        our_value=(f"{share:.0%} of {len(eligible)} (r, β) cases read r within {tolerance:g}" if len(eligible)
                   else "no (r, β) case with r ≠ β/α+"),
        verdict=v, table=eligible.assign(correct=abs(r_hat - r) <= tolerance + 1e-9))


def claim_robust_hyperparameters(table: pd.DataFrame, null: pd.DataFrame, *, threshold: float = 0.8,
                                 reproduced: float = 1.0, partly: float = 0.5, label: str = "F6"
                                 ) -> verdicts.Claim:
    """Claim of App. D.9 (Tables 24–26): F-Fidelity's ranking of the degraded explainers is robust to N, β and α.

    table: one row per setting (varied, value) with the mean macro correlations "morf_vs_gt", "lerf_vs_gt",
    "morf_vs_lerf"; null: :func:`permuted_correlations` rows of each setting (with its varied and value). Premise
    and null, per setting: each correlation is defined and lies beyond its 95 % chance range (ground-truth order
    permuted; for MoRF vs LeRF, the curves' pairing shuffled), on either side; a setting where one does not cannot
    be told from chance and is not testable (left out; with three explainers every setting is). A testable setting
    holds when each correlation has its ideal sign with magnitude at least ``threshold``. Rule
    (:func:`faithlab.verdicts.from_settings`): reproduced when the share of testable settings that hold is at least
    ``reproduced`` (the paper's "robust" reads every setting), partly from ``partly``, else not reproduced; not
    testable without a testable setting."""
    rows, holds = [], []
    for s in table.itertuples(index=False):
        s = s._asdict()
        draws = null[(null["varied"] == s["varied"]) & (null["value"] == s["value"])]
        row = {"varied": s["varied"], "value": s["value"]}
        passes, beyond = [], []
        for key, direction in ffidelity.DIRECTIONS.items():
            x = float(s[key])
            n = _null_of(draws[key]) if len(draws) else None
            ideal = -1.0 if direction == "min" else 1.0
            passes.append(bool(pd.notna(x)) and ideal * x >= threshold)
            beyond.append(_beyond(n, x))
            row |= {key: x, f"{key} chance": (f"[{n.low:.2f}, {n.high:.2f}]" if n is not None else "undefined")}
        row |= {"passes threshold": all(passes), "testable": all(beyond)}
        row["holds"] = bool(row["testable"] and row["passes threshold"])
        rows.append(row)
        if row["testable"]:
            holds.append(row["holds"])
    frame = pd.DataFrame(rows)
    v = verdicts.from_settings(holds, reproduced=reproduced, partly=partly, what="testable settings of N, β, α",
                               untestable=None if holds else "no setting whose correlations all lie beyond chance")
    n_pass = int(frame["passes threshold"].sum()) if len(frame) else 0
    return verdicts.Claim(
        f"{label}: F-Fidelity's ranking is robust to N, β and α (App. D.9, Tables 24-26)",
        rule=f"a testable setting holds when its three mean macro correlations have the ideal sign with |ρ| ≥ "
             f"{threshold:g}; reproduced when {reproduced:.0%} of the testable settings hold, partly from "
             f"{partly:.0%}, else not reproduced",
        premise="null: a setting is testable when each correlation lies beyond its 95 % chance range with the "
                "ground-truth order permuted over the explainers (MoRF vs LeRF: the + and − curves' pairing "
                f"shuffled); {len(holds)} of {len(frame)} settings are",
        paper_value="robust across N ∈ {10..150}, β ∈ {0.05..0.25}, α ∈ {0.2..0.8}",
        our_value=f"{int(sum(holds))} of {len(holds)} testable settings hold; {n_pass} of {len(frame)} pass "
                  f"|corr| ≥ {threshold:g} with the ideal sign",
        verdict=v, table=frame)


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


# ---- robustness and series/text claims
# Table 8 and App. D.3 (notebook ffidelity/robustness) and Tables 3-4, 6-7 (notebook ffidelity/series_text) as claim
# functions: frames in, a verdicts.Claim out, each comparison held against its null (test inputs resampled, the
# ground-truth ranking permuted).
def _per_sample(samples: pd.DataFrame, value: str, **where) -> torch.Tensor:
    """``value`` of the rows of ``samples`` matching ``where`` (column == value), ordered by "sample" (float64)."""
    mask = pd.Series(True, index=samples.index)
    for column, wanted in where.items():
        mask &= samples[column] == wanted
    part = samples[mask]
    if part.empty:
        raise ValueError(f"samples hold no rows for {where}")
    return torch.tensor(part.sort_values("sample")[value].to_numpy(dtype="float64"), dtype=torch.float64)


def _chance(samples: pd.DataFrame, **where) -> float:
    """Majority-class share of the labels of the inputs matching ``where``: the accuracy of a constant guess."""
    part = samples
    for column, wanted in where.items():
        part = part[part[column] == wanted]
    labels = part.drop_duplicates("sample")["label"]
    return float(labels.value_counts(normalize=True).max())


def _pct(ratio: float) -> str:
    return f"{100 * ratio:g} %"


def _interval(c: verdicts.Comparison, scale: float = 100.0) -> str:
    return f"{scale * c.mean:+.1f} [{scale * c.low:+.1f}, {scale * c.high:+.1f}]"


def _mean_draws(values: torch.Tensor, *, n_boot: int, seed: int) -> torch.Tensor:
    """Means of ``n_boot`` resamples of ``values`` with replacement (generator ``seed``)."""
    idx = torch.randint(len(values), (n_boot, len(values)), generator=torch.Generator().manual_seed(seed))
    return values[idx].mean(1)


def _clean_and_removed(samples: pd.DataFrame, clean: float | None, removed: float | None) -> tuple[float, float]:
    ratios = sorted(samples["ratio"].unique())
    if len(ratios) < 2 and (clean is None or removed is None):
        raise ValueError(f"samples must hold at least two masking ratios, got {ratios}")
    return (float(ratios[0]) if clean is None else float(clean)), (float(ratios[-1]) if removed is None
                                                                   else float(removed))


def claim_finetune_restores(samples: pd.DataFrame, *, domains: Sequence[str] = ("images", "time series"),
                            clean: float | None = None, removed: float | None = None, margin: float = 0.03,
                            paper_value: str = "", n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Table 8 (App. D.2): on images and time series, fine-tuning preserves clean accuracy and restores accuracy
    under random removal.

    samples: one row per (domain, architecture, model "original" | "fine-tuned", ratio, sample) with ``correct``,
    the share of the masking draws on which the model is right (every model sees the same masked copies), and
    ``label``. clean / removed: the masking ratios compared (default: the smallest and the largest).
    Premise and null, per model of ``domains``: there must be accuracy to restore — the original's accuracy drop
    from ``clean`` to ``removed``, paired bootstrap over the test inputs (95 %), must lie above 0 (the null: no
    drop); a model without it is not testable and leaves the settings. Rule, per testable model: clean accuracy is
    preserved when the interval of fine-tuned − original clean accuracy lies above −``margin`` (non-inferiority),
    and accuracy is restored when the interval of fine-tuned − original at ``removed`` lies above 0; the claim
    holds in a model when both do. Reproduced when it holds in 2/3 of the testable models, partly from 1/3
    (:func:`faithlab.verdicts.from_settings`). Table: one row per model with the three intervals.
    """
    clean, removed = _clean_and_removed(samples, clean, removed)
    frame = samples[samples["domain"].isin(list(domains))]
    rows, holds, parts = [], [], []
    for (domain, arch), part in frame.groupby(["domain", "architecture"], sort=False):
        o0, o1 = (_per_sample(part, "correct", model="original", ratio=r) for r in (clean, removed))
        f0, f1 = (_per_sample(part, "correct", model="fine-tuned", ratio=r) for r in (clean, removed))
        drop = verdicts.bootstrap_diff(o0, o1, n_boot=n_boot, seed=seed)
        kept = verdicts.bootstrap_diff(f0, o0, n_boot=n_boot, seed=seed)
        gain = verdicts.bootstrap_diff(f1, o1, n_boot=n_boot, seed=seed)
        testable = drop.outcome == "win"
        preserved, restored = kept.low >= -margin, gain.outcome == "win"
        if testable:
            holds.append(bool(preserved and restored))
        rows.append({"domain": domain, "architecture": arch, "original drop": drop.mean, "drop low": drop.low,
                     "drop high": drop.high, "clean gap": kept.mean, "clean gap low": kept.low,
                     "clean gap high": kept.high, "gain": gain.mean, "gain low": gain.low, "gain high": gain.high,
                     "inputs": drop.n, "testable": testable, "preserved": bool(preserved),
                     "restored": bool(restored), "holds": bool(testable and preserved and restored)})
        parts.append(f"{arch}: clean {_interval(kept)}, at {_pct(removed)} {_interval(gain)} points (original drops "
                     f"{_interval(drop)}{'' if testable else ', not significant: not testable'})")
    if not rows:
        raise ValueError(f"samples hold no model of the domains {list(domains)}")
    untestable = None if holds else (f"no original model loses accuracy significantly to {_pct(removed)} random "
                                     "removal (the null: no drop), so there is no accuracy to restore")
    v = verdicts.from_settings(holds, untestable=untestable, what="testable image and time-series models")
    return verdicts.Claim(
        "Table 8: on images and time series, fine-tuning preserves clean accuracy and restores accuracy under "
        "random removal",
        rule=f"per image or time-series model, paired bootstraps over the test inputs (95 %): clean accuracy is "
             f"preserved when fine-tuned − original lies above −{100 * margin:g} points, and accuracy is restored "
             f"when fine-tuned − original at {_pct(removed)} removal lies above 0; reproduced when both hold in 2/3 of "
             "the testable models, partly from 1/3",
        premise=f"there is accuracy to restore: the original's drop from {_pct(clean)} to {_pct(removed)} removal must "
                f"lie above the null of no drop (paired bootstrap over test inputs, 95 %); significant for "
                f"{sum(r['testable'] for r in rows)} of {len(rows)} models",
        paper_value=paper_value, our_value="fine-tuned − original, points with 95 % interval: " + "; ".join(parts),
        verdict=v, table=pd.DataFrame(rows))


def claim_text_robust(samples: pd.DataFrame, *, text: Sequence[str] | None = None, domain: str = "text",
                      references: Sequence[str] = ("images", "time series"), clean: float | None = None,
                      removed: float | None = None, paper_value: str = "", n_boot: int = 4000,
                      seed: int = 0) -> verdicts.Claim:
    """Table 8 (App. D.2): text models are robust to random removal even without fine-tuning.

    samples: as :func:`claim_finetune_restores` (the original models' rows are used). text: the text architectures
    that count (default: every one of ``domain``; e.g. only the paper's zero-embedding removal), the others are
    shown in the table only. Robust is relative, as in the paper (text drops 2.6–7.6 points, the others 10–31):
    each original text model's accuracy drop from ``clean`` to ``removed`` against the drop of each original model
    of ``references`` (different test inputs: independent bootstraps of the two drops, 95 % interval of the
    difference). Premise and nulls: the removal must be able to hurt — at least one reference model's drop lies
    above 0 (paired bootstrap, the null of no drop) and only those references count, else robustness holds by
    construction; and a text model must be above chance on clean inputs (its accuracy − the majority-class share
    of its labels above 0), since a model at chance has no accuracy to lose. Rule: a (text, reference) pair holds
    when the text drop is significantly smaller; reproduced when 2/3 of the pairs hold, partly from 1/3
    (:func:`faithlab.verdicts.from_settings`). Table: one row per pair.
    """
    clean, removed = _clean_and_removed(samples, clean, removed)
    original = samples[samples["model"] == "original"]

    def drop_of(arch: str) -> torch.Tensor:
        return (_per_sample(original, "correct", architecture=arch, ratio=clean)
                - _per_sample(original, "correct", architecture=arch, ratio=removed))

    text_archs = list(dict.fromkeys(original[original["domain"] == domain]["architecture"]))
    counted = text_archs if text is None else [a for a in text_archs if a in set(text)]
    ref_archs = list(dict.fromkeys(original[original["domain"].isin(list(references))]["architecture"]))
    if not text_archs or not ref_archs:
        raise ValueError(f"samples must hold original models of {domain!r} and of {list(references)}")
    refs = {}
    for arch in ref_archs:
        d = drop_of(arch)
        refs[arch] = (d, verdicts.bootstrap_diff(d, n_boot=n_boot, seed=seed))
    hurting = [a for a, (_, c) in refs.items() if c.outcome == "win"]
    rows, holds, skipped = [], [], []
    for i, arch in enumerate(text_archs):
        d = drop_of(arch)
        chance = _chance(original, architecture=arch)
        above = verdicts.bootstrap_diff(_per_sample(original, "correct", architecture=arch, ratio=clean) - chance,
                                        n_boot=n_boot, seed=seed).outcome == "win"
        if arch in counted and not above:
            skipped.append(arch)
        text_draws = _mean_draws(d, n_boot=n_boot, seed=seed + 1 + i)
        for j, ref in enumerate(ref_archs):
            ref_drop, ref_c = refs[ref]
            draws = _mean_draws(ref_drop, n_boot=n_boot, seed=seed + 101 + j) - text_draws
            c = verdicts.comparison_from_draws(float(ref_drop.mean() - d.mean()), draws)
            counts = arch in counted and above and ref in hurting
            if counts:
                holds.append(c.outcome == "win")
            rows.append({"text model": arch, "reference": ref, "text drop": float(d.mean()),
                         "reference drop": float(ref_drop.mean()), "reference drop low": ref_c.low,
                         "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome,
                         "text above chance": above, "removal hurts the reference": ref in hurting,
                         "counted": counts})
    untestable = verdicts.first_reason(
        None if hurting else f"the removal costs no image or time-series model accuracy significantly at "
                             f"{_pct(removed)} (the null: no drop), so robustness to it holds by construction",
        None if set(counted) - set(skipped) else "no counted text model is above chance on clean inputs")
    v = verdicts.from_settings(holds, untestable=untestable, what="text × reference pairs")
    drops = {r["text model"]: r["text drop"] for r in rows} | {r["reference"]: r["reference drop"] for r in rows}
    return verdicts.Claim(
        "Table 8: text models are robust to random removal even without fine-tuning",
        rule=f"per original text model ({', '.join(counted) or 'none'}) and reference model whose drop is "
             f"significant, the accuracy drop from {_pct(clean)} to {_pct(removed)} random removal, independent bootstraps "
             "over the test inputs (95 %): a pair holds when the text drop is significantly smaller; reproduced when "
             "2/3 of the pairs hold, partly from 1/3",
        premise=f"the removal can hurt: a reference model's drop lies above the null of no drop (significant for "
                f"{', '.join(hurting) or 'none'}); and a text model is above chance on clean inputs (majority-class "
                f"share){'; at chance: ' + ', '.join(skipped) if skipped else ''}",
        paper_value=paper_value,
        our_value="drop of the original, points: " + ", ".join(f"{a} {100 * v:.1f}" for a, v in drops.items()),
        verdict=v, table=pd.DataFrame(rows))


def _consecutive(values: Sequence[float]) -> list[tuple[float, float]]:
    return [(values[i], values[i + 1]) for i in range(len(values) - 1)]


def _beta_steps(samples: pd.DataFrame, ratio: float, value: str, betas: Sequence[float], *, n_boot: int,
                seed: int) -> list[tuple[float, float, verdicts.Comparison]]:
    """Paired bootstraps over the inputs of ``value`` at ``ratio`` between consecutive ``betas`` (larger − smaller)."""
    per = {b: _per_sample(samples, value, beta=b, ratio=ratio) for b in betas}
    return [(a, b, verdicts.bootstrap_diff(per[b], per[a], n_boot=n_boot, seed=seed)) for a, b in _consecutive(betas)]


def _steps_verdict(steps: list, *, want: str, untestable: str | None, what: str) -> verdicts.Verdict:
    """from_settings over the steps (holds when the outcome is ``want``); a step the other way caps at partly."""
    holds = [c.outcome == want for _, _, c in steps]
    v = verdicts.from_settings(holds, untestable=untestable, what=what)
    against = [f"{a:g}→{b:g}" for a, b, c in steps if c.outcome not in (want, "tie")]
    if v == verdicts.VERDICTS[0] and against:
        v = verdicts.Verdict(verdicts.VERDICTS[1], f"{v.why}; but significantly the other way at {', '.join(against)}")
    return v


def claim_beta_accuracy(samples: pd.DataFrame, *, ratio: float | None = None, paper_value: str = "",
                        n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """App. D.3 (Fig. 1(a)): fine-tuning with a larger β keeps accuracy under heavier random masking.

    samples: one row per (beta, ratio, sample) with ``accuracy`` (the share of the masking draws on which the model
    fine-tuned with that β is right; β = 0 is the original model), ``agreement with the original`` and ``label``;
    every model sees the same masked copies. ratio: the masking compared (default the largest).
    Premise and null: masking must cost the original model accuracy — its drop from the clean inputs (the smallest
    ratio) to ``ratio``, paired bootstrap over the inputs (95 %), lies above 0 (the null: no drop); else there is
    no accuracy to keep. Rule: at ``ratio``, each step between consecutive β (0 → smallest β → … → largest) holds
    when the larger β is significantly more accurate (paired bootstrap over the inputs, 95 %); reproduced when 2/3
    of the steps hold, partly from 1/3 (:func:`faithlab.verdicts.from_settings`); a step significantly the other
    way caps it at partly. Table: one row per step.
    """
    clean, top = _clean_and_removed(samples, None, ratio)
    betas = sorted(samples["beta"].unique())
    if len(betas) < 2 or betas[0] != 0:
        raise ValueError(f"samples must hold the original (beta 0) and at least one fine-tuned β, got {betas}")
    drop = verdicts.bootstrap_diff(_per_sample(samples, "accuracy", beta=0.0, ratio=clean),
                                   _per_sample(samples, "accuracy", beta=0.0, ratio=top), n_boot=n_boot, seed=seed)
    untestable = None if drop.outcome == "win" else (f"masking {_pct(top)} of the input costs the original model no "
                                                     "accuracy significantly (the null: no drop)")
    steps = _beta_steps(samples, top, "accuracy", betas, n_boot=n_boot, seed=seed)
    v = _steps_verdict(steps, want="win", untestable=untestable, what="β steps")
    acc = samples[samples["ratio"] == top].groupby("beta")["accuracy"].mean()
    table = pd.DataFrame([{"from β": a, "to β": b, "ratio": top, "accuracy from": acc[a], "accuracy to": acc[b],
                           "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome, "inputs": c.n}
                          for a, b, c in steps])
    return verdicts.Claim(
        "D.3: fine-tuning with a larger β keeps accuracy under heavier random masking",
        rule=f"at {_pct(top)} masking, each step to the next larger β (original = 0) holds when the larger β is "
             "significantly more accurate (paired bootstrap over the test inputs, 95 %): reproduced when 2/3 of the "
             "steps hold, partly from 1/3; a step significantly the other way caps it at partly",
        premise=f"masking costs the original accuracy: its drop from clean to {_pct(top)} masking, "
                f"{_interval(drop)} points (95 %), must lie above the null of no drop",
        paper_value=paper_value,
        our_value=f"accuracy at {_pct(top)} masking: " + ", ".join(f"β={b:g} {100 * a:.1f} %" for b, a in acc.items()),
        verdict=v, table=table)


def claim_beta_agreement(samples: pd.DataFrame, *, ratio: float | None = None, margin: float = 0.05,
                         paper_value: str = "", n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """App. D.3 (Fig. 1(b)): a larger β agrees less with the original model on masked inputs, while on clean inputs
    the fine-tuned models agree with it.

    samples: as :func:`claim_beta_accuracy`. Two parts, each over its settings with
    :func:`faithlab.verdicts.from_settings`: (a) at ``ratio`` (default the largest), each step between consecutive
    fine-tuned β holds when the larger β agrees significantly less with the original (paired bootstrap over the
    inputs, 95 %; a step significantly the other way caps the part at partly); (b) on clean inputs (the smallest
    ratio), each fine-tuned model holds when its agreement with the original is not below the original's own
    accuracy by more than ``margin`` (the interval of agreement − original correct lies above −margin: two models
    right on a share a of the inputs need not agree on more). Premise and null: at least two fine-tuned β, and the
    original is above chance on clean inputs (its accuracy − the majority-class share above 0), else the bar of (b)
    is met by any model. Verdict: reproduced when both parts are reproduced, not reproduced when neither is at
    least partly, else partly reproduced. Table: one row per step and per model.
    """
    clean, top = _clean_and_removed(samples, None, ratio)
    tuned = [b for b in sorted(samples["beta"].unique()) if b != 0]
    if 0.0 not in set(samples["beta"]):
        raise ValueError("samples must hold the original model (beta 0)")
    correct = _per_sample(samples, "accuracy", beta=0.0, ratio=clean)
    chance = _chance(samples, beta=0.0)
    above = verdicts.bootstrap_diff(correct - chance, n_boot=n_boot, seed=seed)
    untestable = verdicts.first_reason(
        None if len(tuned) >= 2 else f"{len(tuned)} fine-tuned β: no step between two β to compare",
        None if above.outcome == "win" else f"the original is not above chance on clean inputs (accuracy − "
                                            f"majority-class share {_interval(above)} points)")
    steps = _beta_steps(samples, top, "agreement with the original", tuned, n_boot=n_boot, seed=seed) \
        if len(tuned) >= 2 else []
    part_a = _steps_verdict(steps, want="loss", untestable=untestable, what="fine-tuned β steps")
    clean_checks = {b: verdicts.bootstrap_diff(_per_sample(samples, "agreement with the original", beta=b,
                                                           ratio=clean), correct, n_boot=n_boot, seed=seed)
                    for b in tuned}
    part_b = verdicts.from_settings([c.low >= -margin for c in clean_checks.values()], untestable=untestable,
                                    what="fine-tuned models")
    R, P_, N = verdicts.VERDICTS[:3]
    if untestable is not None:
        v = verdicts.ladder(False, untestable=untestable)
    else:
        v = verdicts.Verdict(R if part_a == R and part_b == R else N if part_a == N and part_b == N else P_,
                             f"(a) agreement falls with β: {part_a} ({part_a.why}); (b) clean agreement: {part_b} "
                             f"({part_b.why})")
    agree = samples.groupby(["beta", "ratio"])["agreement with the original"].mean()
    rows = [{"part": "(a) masked agreement falls", "β": f"{a:g} → {b:g}", "ratio": top, "value": agree[b, top],
             "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome,
             "holds": c.outcome == "loss"} for a, b, c in steps]
    rows += [{"part": "(b) clean agreement", "β": f"{b:g}", "ratio": clean, "value": agree[b, clean],
              "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome, "holds": c.low >= -margin}
             for b, c in clean_checks.items()]
    return verdicts.Claim(
        "D.3: larger β agrees less with the original model on masked inputs, while clean predictions agree",
        rule=f"(a) at {_pct(top)} masking each step to the next larger fine-tuned β holds when agreement with the "
             f"original falls significantly; (b) each fine-tuned model holds when its clean agreement with the "
             f"original is within {100 * margin:g} points of the original's clean accuracy (interval above "
             f"−{100 * margin:g}); paired bootstraps over the test inputs (95 %), each part decided over its settings "
             "(2/3 reproduced, 1/3 partly): reproduced when both parts are, not reproduced when neither is partly",
        premise=f"at least two fine-tuned β ({len(tuned)}), and the original above chance on clean inputs: accuracy "
                f"− majority-class share {_interval(above)} points (95 %) must lie above 0",
        paper_value=paper_value,
        our_value=f"agreement at {_pct(top)} masking " + ", ".join(f"β={b:g} {100 * agree[b, top]:.1f} %" for b in tuned)
                  + "; clean agreement " + ", ".join(f"β={b:g} {100 * agree[b, clean]:.1f} %" for b in tuned)
                  + f" (original's clean accuracy {100 * float(correct.mean()):.1f} %)",
        verdict=v, table=pd.DataFrame(rows))


# ---------------------------------------------------------------------------------- series and text rankings
def _method_units(cells: pd.DataFrame, group: str, value, column: str) -> dict[str, torch.Tensor]:
    """``{method: column}`` of the :func:`micro_cells` rows of ``group == value``, each ordered by seed and level."""
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    return {m: torch.tensor(v.sort_values(["seed", "level"])[column].to_numpy(dtype="float64"))
            for m, v in part.groupby("method", sort=False)}


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
                         paper_value: str = "", n_boot: int = 4000, seed: int = 0) -> verdicts.Claim:
    """Tables 3 and 6 (time series): ``target`` recovers the degraded-explainer ranking at least as well as the
    other ``methods``, decided over the series ``models`` (values of ``group``).

    cells: :func:`micro_cells` (units: seeds × levels); null: :func:`ground_truth_null` of the same curves.
    Premise and null, per model: at least one method's mean GT micro correlation (−MoRF vs GT, +LeRF vs GT) lies
    above its 95 % chance range under a permuted ground-truth order (with a handful of explainers a Spearman ρ has
    a wide chance range; when no method recovers the order the ranks compare noise), and ``baseline``'s oriented micro
    correlation is not within ``tol`` of the ideal +1 (nothing could beat it); a model failing either is not
    testable and leaves the settings. Rule: per testable model × competitor, a paired bootstrap over seeds × levels
    (95 %) of the target's mean micro rank minus the competitor's; a pair holds when the target ranks significantly
    better (lower). Reproduced when 2/3 of the pairs hold, partly from 1/3 (:func:`faithlab.verdicts.from_settings`);
    a pair where the target ranks significantly worse caps it at partly. Table: one row per model × competitor.
    """
    if not models:
        raise ValueError("models must name at least one series model of the cells")
    others = [m for m in methods if m != target]
    rows, holds, losses, reasons, chance_texts, ours = [], [], [], [], [], []
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
                                       n_boot=n_boot, seed=seed)
        for name, c in comparisons.items():
            if reason is None:
                holds.append(c.outcome == "win")
                losses += [f"{model} vs {name}"] if c.outcome == "loss" else []
            rows.append({group: model, "competitor": name, f"{target} rank": float(ranks[target].mean()),
                         "competitor rank": float(ranks[name].mean()), "mean difference": c.mean, "low": c.low,
                         "high": c.high, "outcome": c.outcome, "units": c.n,
                         f"{target} GT micro": chance[target][0], "competitor GT micro": chance[name][0],
                         "testable": reason is None, "holds": reason is None and c.outcome == "win"})
    v = verdicts.from_settings(holds, untestable=None if holds else "; ".join(reasons),
                               what="model × competitor pairs")
    if v == verdicts.VERDICTS[0] and losses:
        v = verdicts.Verdict(verdicts.VERDICTS[1], f"{v.why}; but significantly worse in {', '.join(losses)}")
    return verdicts.Claim(
        f"Time series: {target} recovers the degraded-explainer ranking at least as well as {', '.join(others)} "
        "(Tables 3, 6)",
        rule=f"per series model and competitor, paired bootstrap (95 %) over seeds × levels of {target}'s mean micro "
             "rank (3 correlations) minus the competitor's: a pair holds when it is significantly lower (better); "
             "reproduced when 2/3 of the pairs hold, partly from 1/3; a pair significantly worse caps it at partly",
        premise=f"per model, some method's mean GT micro correlation (−MoRF vs GT, +LeRF vs GT) lies above its "
                f"95 % chance range with the ground-truth order permuted over the explainers, and {baseline}'s "
                f"oriented micro correlation is not within {tol:g} of the ideal +1: " + "; ".join(chance_texts),
        paper_value=paper_value, our_value="mean micro rank over 3 correlations: " + "; ".join(ours), verdict=v,
        table=pd.DataFrame(rows))


def claim_text_equivalence(cells: pd.DataFrame, null: pd.DataFrame, *, models: Sequence[str],
                           counted: Sequence[str] | None = None, group: str = "model", a: str = "F-Fidelity",
                           b: str = "Fidelity", margin: float = 0.1, paper_value: str = "", n_boot: int = 4000,
                           seed: int = 0) -> verdicts.Claim:
    """Tables 4 and 7 (text): the models are robust to removal, so ``b`` (Fidelity) ranks the explainers as well as
    ``a`` (F-Fidelity).

    cells, null: as :func:`claim_series_ranking`. models: the text models shown (values of ``group``); counted:
    those that decide the verdict (default all; e.g. the paper's zero-embedding removal, with the pad-deletion
    variant shown beside it). An equivalence test per model: paired bootstrap (95 %) over seeds × levels of the
    a − b oriented micro correlation; the model holds when the interval lies inside ±``margin`` (outcome
    "equivalent"; "different" when it lies entirely outside, "inconclusive" across the margin). Premise and null:
    both methods recover the ground-truth order above chance — their mean GT micro correlation above its 95 % range
    under a permuted order — else two rankings at chance are "equal" by construction; a counted model failing it
    is not testable and leaves the settings. Reproduced when 2/3 of the testable counted models hold, partly from
    1/3 (:func:`faithlab.verdicts.from_settings`); below that, not reproduced only when some counted model is
    "different" — when every other interval straddles the margin the data cannot decide, and the claim is not
    testable here. Table: one row per model.
    """
    if not models:
        raise ValueError("models must name at least one text model of the cells")
    counted = list(models) if counted is None else [m for m in models if m in set(counted)]
    rows, holds, reasons, texts, chance_texts = [], [], [], [], []
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
        c = verdicts.bootstrap_diff(oriented[a], oriented[b], n_boot=n_boot, seed=seed) if reason is None else None
        outcome = ("untestable" if c is None else "equivalent" if -margin <= c.low and c.high <= margin
                   else "different" if c.low > margin or c.high < -margin else "inconclusive")
        if model in counted:
            if reason is None:
                holds.append(outcome == "equivalent")
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
    different = [r[group] for r in rows if r["counted"] and r["outcome"] == "different"]
    if v == verdicts.VERDICTS[2] and not different:
        v = verdicts.ladder(False, untestable=f"{v.why}, but no interval lies outside ±{margin:g} either: each "
                                              "straddles the margin, too imprecise to decide")
    return verdicts.Claim(
        f"Text: models are robust to removal, so {b} ≈ {a} in ranking explainers (Tables 4, 7)",
        rule=f"per text model ({', '.join(counted)}), paired bootstrap (95 %) over seeds × levels of the {a} − {b} "
             f"oriented micro correlation: a model holds when the interval lies inside ±{margin:g}; reproduced when "
             "2/3 of the models hold, partly from 1/3; not reproduced only when an interval lies outside the "
             "margin, else (intervals across it) not testable",
        premise=f"both {a} and {b} recover the ground-truth order above chance: their mean GT micro correlation "
                "(−MoRF vs GT, +LeRF vs GT) above its 95 % range with the order permuted over the explainers: "
                + "; ".join(chance_texts),
        paper_value=paper_value, our_value="oriented micro correlation: " + "; ".join(texts), verdict=v,
        table=pd.DataFrame(rows))

"""F-Fidelity's degraded-explainer study on images (spec §1.4–1.9, Tables 1–2, 5, 10, 13): the curves of degraded
maps (:func:`degraded_fidelity_curves`), the whole study with its models and costs (:func:`image_ranking_study`,
:class:`RankingStudy`), and random masking and constant-map counts (the models it trains are
:mod:`~faithlab_study.papers.ffidelity.setup`'s).

One concept: the image study's runs, from the models it trains to the degraded-map curves it scores."""

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

from faithlab import _validate, data, explainers, perturb, train

from faithlab.metrics.papers import ffidelity
from faithlab_study.papers.ffidelity.claims.ranking import ranking_correlations
from faithlab_study.verdicts.replication import Replica


def degraded_fidelity_curves(model: Callable, x: torch.Tensor, y: torch.Tensor, clean: torch.Tensor, *,
                             noise_levels: Sequence[float], sparsity: Sequence[float], n_seeds: int = 5,
                             alpha: float = 1.0, beta: float | None = None, n_samples: int = 1,
                             units=None, reference: perturb.Reference = "zero", ties: str = "random",
                             batch_size: int = 256, cells=None, sample_index: Sequence[int] | None = None,
                             draw_key: int = 0) -> tuple[torch.Tensor, ...]:
    """Mean Fid+ and Fid− curves of ``clean`` degraded at every noise level → two ``(n_seeds, n_levels, n_sparsity)``.

    clean: the explainer's map, any layout ``fid_plus`` accepts. draw_key: the key of every draw (a replica's
    :func:`faithlab_study.verdicts.replication.replica_draws`, so replicas and notebook seeds draw apart):
    degradation ``k`` of seed ``s`` uses generator ``keyed_seed(draw_key, DEGRADATION, s, k)`` and the Monte-Carlo
    masks ``keyed_seed(draw_key, MASKS, s)`` (:func:`draw_generators`), so every evaluation method called with the
    same key sees the same degraded maps and masks. The "+" and "−" curves are index-paired by :func:`faithlab.metrics.minus_sparsity`. alpha/beta/n_samples
    select Fidelity (1, None, 1), R-Fidelity (α, None, N) or F-Fidelity (α, β, N). reference: the removal value
    (e.g. ``"removed_token"`` for F-Fidelity's zero-embedding removal of text; :data:`ROAD_REFERENCE` for ROAD's
    noisy linear imputation, its noise keyed to (draw_key, degradation seed, test image)).
    A constant map (e.g. an all-zero Grad-CAM, possible at ξ = 0 only) is ranked by the ties rule (random by
    default); the per-call ``ConstantMapWarning`` is silenced here: count those maps once with
    :func:`constant_map_counts` (``RankingStudy.constant_maps()``) and report them.
    cells: the ``(seed, level index)`` pairs to evaluate (default: all); the others stay NaN. Each pair's curves
    depend on that pair only, so a grid split into parts (e.g. the study runner's shards) gives the same numbers.
    sample_index: each test image's index in the study (ROAD's noise is keyed to it; default x's positions).
    """
    plus = torch.full((n_seeds, len(noise_levels), len(sparsity)), float("nan"))
    minus = torch.full_like(plus, float("nan"))
    common = dict(alpha=alpha, beta=beta, n_samples=n_samples, batch_size=batch_size, units=units, ties=ties)
    grid = _grid_cells(cells, n_seeds, len(noise_levels))
    for s in range(n_seeds):  # a handful of (seed, level) pairs; each call is batched over samples and masks
        for k, xi in enumerate(noise_levels):
            if (s, k) not in grid:
                continue
            degradation, masks, noise = draw_generators(draw_key, s, k)
            attr = explainers.degrade(clean, xi, generator=degradation)
            common["reference"] = _reference(reference, noise, x, sample_index)
            with warnings.catch_warnings():  # counted once by constant_map_counts, not per (seed, level)
                warnings.simplefilter("ignore", perturb.ConstantMapWarning)
                fid_plus = ffidelity.fid_plus(model, x, attr, target=y, sparsity=sparsity, generator=masks, **common)
                fid_minus = ffidelity.fid_minus(model, x, attr, target=y, sparsity=ffidelity.minus_sparsity(sparsity),
                                                generator=masks, **common)
            plus[s, k], minus[s, k] = fid_plus.mean(0).cpu(), fid_minus.mean(0).cpu()
    return plus, minus


DEGRADATION, MASKS, IMPUTATION = 0, 1, 2
"""The streams of :func:`draw_generators`: the degraded maps, the Monte-Carlo masks, ROAD's imputation noise."""


def draw_generators(draw_key: int, s: int, k: int) -> tuple[int, int, int]:
    """The generator ints of degradation seed ``s`` at noise level ``k`` under ``draw_key`` (keyed, never summed):
    the degradation ``keyed_seed(draw_key, DEGRADATION, s, k)``, the masks ``keyed_seed(draw_key, MASKS, s)`` and
    ROAD's noise ``keyed_seed(draw_key, IMPUTATION, s)`` (the masks and noise the same at every level)."""
    return (perturb.keyed_seed(draw_key, DEGRADATION, s, k), perturb.keyed_seed(draw_key, MASKS, s),
            perturb.keyed_seed(draw_key, IMPUTATION, s))


def _reference(reference: perturb.Reference, seed: int, x: torch.Tensor,
               sample_index: Sequence[int] | None = None) -> perturb.Reference:
    """The removal reference of noise generator ``seed`` (:func:`draw_generators`): :data:`ROAD_REFERENCE` becomes
    ROAD's noisy linear imputation with its noise keyed to (seed, test image: ``sample_index``, default x's
    positions); any other reference is used as it is."""
    if isinstance(reference, str) and reference == ROAD_REFERENCE:
        return perturb.NoisyLinear(seeds=perturb.sample_seeds(seed, sample_index, x.shape[0], device=x.device))
    return reference


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
    units = perturb.units_for(units, x)
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
    "ROAD": ("original", False),  # the rival fix (Rong et al. 2022): Fidelity with noisy linear imputation
}
"""Evaluation settings (spec §1.6): method → (model, randomised). The model is the original one, the ROAR model of
the explainer, or the fine-tuned one, whose own explanations are then scored (as the authors' code). Randomised
settings remove a Bernoulli fraction α of R with N masks, capped at βn for the fine-tuned model (F-Fidelity);
the others remove all of R. "ROAD" is Fidelity (the original model, all of R) with the removed pixels imputed by
ROAD's noisy linear imputation (:data:`RIVALS`) instead of set to zero."""

ROAD_REFERENCE = "road"
"""The removal of :func:`degraded_fidelity_curves` that stands for ROAD's noisy linear imputation with its default
noise (:data:`faithlab.perturb.imputation.NOISE`), keyed to the test image and the degradation seed."""
RIVALS: dict[str, str] = {"ROAD": ROAD_REFERENCE}
"""Settings that are not the paper's, by their removal reference: scored only when ``methods`` names them."""
PAPER_SETTINGS = tuple(m for m in SETTINGS if m not in RIVALS)
"""The paper's settings (and the ablation's): the default ``methods`` of :func:`image_ranking_study`."""


@dataclass
class RankingStudy:
    """Result of :func:`image_ranking_study`.

    curves: tidy frame (explainer, method, curve "+"/"−", seed, xi, level, score) of the mean scores.
    P, Q: ``{(explainer, method): (n_seeds, n_levels, n_sparsity)}`` mean "+" and "−" curves.
    clean: ``{(explainer, "original" | "fine-tuned"): (n_test, n_pixels)}`` unit scores of the clean explainers.
    accuracy: test accuracy per model ("original", "fine-tuned", "ROAR <explainer>").
    costs: one row per stage (stage, explainer, model, method, seconds, image passes, backward passes, cached).
    models: the eval-mode models by the names of ``accuracy``. x, y: the evaluated test inputs and labels.
    options: the evaluation settings of the call (alpha, beta, n_samples, n_seeds, batch_size, methods, draw_key),
    which :meth:`case_study` reuses.
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
    options: dict = field(default_factory=dict)

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

    def case_study(self, index: int, explainer: str, *, methods: Sequence[str] | None = None
                   ) -> tuple[pd.DataFrame, dict[tuple[str, str], torch.Tensor], dict[tuple[str, str], torch.Tensor]]:
        """One test image's curves (F-Fidelity App. D.6, Fig. 2): image ``index`` of :attr:`x` scored alone, its
        clean ``explainer`` map degraded at every noise level and seed as in the study, by every method of
        ``methods`` (default: those of the study) with the study's models and settings.

        Returns the tidy curves (method, curve, seed, xi, level, score) and P, Q as ``{(explainer, method):
        (n_seeds, n_levels, n_sparsity)}``, ready for :func:`ranking_correlations`. The degradations are drawn for
        this one map under the study's ``draw_key`` (:func:`draw_generators`), so they are not the draws that map
        had in the full study."""
        o = self.options
        if not o:
            raise ValueError("this study holds no evaluation options (build it with image_ranking_study)")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.x):
            raise ValueError(f"index must be an int in [0, {len(self.x)}), got {index!r}")
        names = list(o["methods"]) if methods is None else list(methods)
        unknown = [m for m in names if m not in o["methods"]]
        if unknown or not names:
            raise ValueError(f"methods must be a non-empty list of {list(o['methods'])}, got {names}")
        if (explainer, "original") not in self.clean:
            raise ValueError(f"explainer must be one of {sorted({e for e, _ in self.clean})}, got {explainer!r}")
        x, y = self.x[index:index + 1], self.y[index:index + 1]
        rows: list[dict] = []
        P: dict[tuple[str, str], torch.Tensor] = {}
        Q: dict[tuple[str, str], torch.Tensor] = {}
        for name in names:
            kind, randomised = SETTINGS[name]
            model = self.models[f"ROAR {explainer}" if kind == "roar" else kind]
            maps = self.clean[explainer, "fine-tuned" if kind == "fine-tuned" else "original"][index:index + 1]
            plus, minus = degraded_fidelity_curves(
                model, x, y, maps.view(1, *x.shape[2:]), noise_levels=self.noise_levels, sparsity=self.sparsity,
                n_seeds=o["n_seeds"], alpha=o["alpha"] if randomised else 1.0,
                beta=o["beta"] if kind == "fine-tuned" and randomised else None,
                n_samples=o["n_samples"] if randomised else 1, units=perturb.pixel_units(x),
                reference=RIVALS.get(name, "zero"), batch_size=o["batch_size"], sample_index=[index],
                draw_key=o.get("draw_key", 0))
            P[explainer, name], Q[explainer, name] = plus, minus
            rows += [{"method": name, "curve": sign, "seed": s, "xi": xi, "level": lv, "score": float(v)}
                     for sign, t in (("+", plus), ("−", minus)) for s in range(o["n_seeds"])
                     for k, xi in enumerate(self.noise_levels) for lv, v in zip(self.sparsity, t[s, k])]
        return pd.DataFrame(rows), P, Q

    def correlations(self, methods: Sequence[str] | None = None) -> pd.DataFrame:
        """:func:`ranking_correlations` (first column "explainer") of ``methods`` (default: all scored)."""
        names = list(dict.fromkeys(m for _, m in self.P)) if methods is None else list(methods)
        return ranking_correlations(self.P, self.Q, noise_levels=self.noise_levels, sparsity=self.sparsity,
                                    methods=names, group="explainer")


@dataclass
class ReplicaStudies:
    """The ranking studies of several settings × trained replicas, scored cell by cell. :meth:`score_cells` is the
    score function of ``faithlab_study.artifacts.sharded``: it runs every study on the given (seed, noise level) cells and returns
    their curves with a ``column`` (the setting's key) and a ``replica`` column; :meth:`complete` is the reduce step:
    a study this process did not run is rebuilt from the cache (no cell scored) and every study gets its curves from
    the scored frame. ``replicas``: ``{key: the setting's replicas}`` (:class:`faithlab_study.verdicts.Replica` of
    :func:`faithlab_study.verdicts.replicas`); ``make(key, replica, cells)`` returns one :class:`RankingStudy`,
    trained with ``replica.seed``; :attr:`studies` holds them by ``(key, replica.index)``."""

    make: Callable[[object, Replica, Sequence], RankingStudy]
    replicas: Mapping[object, Sequence[Replica]]
    column: str = "key"
    studies: dict = field(default_factory=dict)

    def __post_init__(self):
        self.replicas = {key: list(reps) for key, reps in self.replicas.items()}

    @property
    def keys(self) -> list:
        """The settings' keys, in order."""
        return list(self.replicas)

    def replica(self, key, index: int) -> Replica:
        """Replica ``index`` of setting ``key``."""
        return self.replicas[key][index]

    def score_cells(self, cells: Sequence) -> pd.DataFrame:
        """Every study run on ``cells`` (kept in :attr:`studies`); their curves, one frame."""
        for key, reps in self.replicas.items():
            for replica in reps:
                self.studies[key, replica.index] = self.make(key, replica, cells)
        return pd.concat([st.curves.assign(**{self.column: key}, replica=r) for (key, r), st in self.studies.items()],
                         ignore_index=True)

    def complete(self, scored: pd.DataFrame) -> dict:
        """:attr:`studies` with the curves of ``scored`` (the frame :meth:`score_cells` returned, or the shards')."""
        for key, reps in self.replicas.items():
            for replica in reps:
                r = replica.index
                if (key, r) not in self.studies:  # the reduce step of a sharded run: models from the cache
                    self.studies[key, r] = self.make(key, replica, [])
                mine = (scored[self.column] == key) & (scored["replica"] == r)
                self.studies[key, r] = self.studies[key, r].with_curves(
                    scored[mine].drop(columns=[self.column, "replica"]))
        return self.studies


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
                        roar_config: train.TrainConfig | None = None, methods: Sequence[str] = PAPER_SETTINGS,
                        noise_levels: Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
                        sparsity: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                        n_test: int = 150, n_seeds: int = 5, alpha: float = 0.5, beta: float = 0.1,
                        n_samples: int = 50, seed: int = 0, device: str | torch.device = "cpu",
                        batch_size: int = 256, cache: bool = True, cells=None, draw_key: int = 0) -> RankingStudy:
    """F-Fidelity's degraded-explainer study on images (spec §1.4–1.9, Tables 1–2, 5, 10; cost as Table 13).

    Trains (or loads from the cache of :func:`faithlab.train.fit`) the original model ``models.build(model_name,
    **model_config)``, fine-tunes it with ``RandomRemoval(beta)`` (eq. 5) and, when "ROAR" is in ``methods``,
    retrains one model per explainer on ``ExplanationGuidedRemoval`` of its train-set maps (on the original
    model). Then each explainer's clean map of the first ``n_test`` test images (Σ|a| per pixel) is degraded at
    ``noise_levels`` with ``n_seeds`` seeds and scored by :func:`degraded_fidelity_curves` in every setting of
    :data:`SETTINGS` listed in ``methods`` (default the paper's, :data:`PAPER_SETTINGS`; add ``"ROAD"`` for the
    rival fix, scored with ROAD's imputation).

    explainer_specs: ``{label: (method, options)}`` for :func:`faithlab.explainers.explain` (generator ``seed``).
    draw_key: the key of the degradations, masks and imputation noise (:func:`degraded_fidelity_curves`; a
    replica's :func:`faithlab_study.verdicts.replication.replica_draws`), the same for every method: paired draws.
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
                n_samples=n_samples if randomised else 1, units=units, reference=RIVALS.get(name, "zero"),
                batch_size=batch_size, cells=grid, draw_key=draw_key))
            P[label, name], Q[label, name] = plus, minus
            for sign, t in (("+", plus), ("−", minus)):
                for s in range(n_seeds):
                    for k, xi in enumerate(noise_levels):
                        if (s, k) not in grid:
                            continue
                        curve_rows += [{"explainer": label, "method": name, "curve": sign, "seed": s, "xi": xi,
                                        "level": lv, "score": float(v)} for lv, v in zip(sparsity, t[s, k])]
    curves = pd.DataFrame(curve_rows, columns=["explainer", "method", "curve", "seed", "xi", "level", "score"])
    options = {"alpha": alpha, "beta": beta, "n_samples": n_samples, "n_seeds": n_seeds, "batch_size": batch_size,
               "methods": list(methods), "draw_key": draw_key}
    return RankingStudy(curves, P, Q, clean, accuracy, pd.DataFrame(costs), models, x, y,
                        list(noise_levels), list(sparsity), options)

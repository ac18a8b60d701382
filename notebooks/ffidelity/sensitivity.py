# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # F-Fidelity: sensitivity to N, β and α (App. D.9, Tables 24–26)
#
# The paper varies one hyper-parameter of F-Fidelity at a time — the number of Monte-Carlo masks N, the fine-tuning
# and evaluation budget β, and the removal fraction α (α+ = α−) — on Colored-MNIST digits of size r = 0.2, with the
# ground-truth digit mask degraded at ξ ∈ {0, 0.2, …, 1} as the explainers, and reports the three macro Spearman
# correlations. We do the same on canvas digits with a small CNN fine-tuned once per β.
#
# **Replicas.** The unit of replication is the trained classifier: the notebook trains `replicas` (R) small CNNs on
# the same data, each with its own training seed (`fl.verdicts.replica_seed(seed, "ffidelity/sensitivity", r)`), and
# fine-tunes each once per β (cached per replica). Within a replica the units are the degradation seeds (`n_seeds`)
# of the ground-truth maps; every per-unit frame carries a `replica` column, and the claim's intervals resample the
# replicas, then the seeds within them.

# %% tags=["parameters"]
image_size = 16
r = 0.2
color = False
width = 16
n_epochs = 10
n_finetune_epochs = 4
n_test = 100
noise_levels = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
n_seeds = 2  # degradation seeds of the ground-truth maps per trained replica
replicas = 3  # independently trained classifiers (each fine-tuned once per β)
sparsity = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
default = {"n_samples": 10, "beta": 0.1, "alpha": 0.5}
grids = {"n_samples": [5, 10, 20], "beta": [0.05, 0.1, 0.2], "alpha": [0.3, 0.5, 0.7]}
threshold = 0.8
seed = 0
device = "cpu"
batch_size = 256  # per forward call: on a CPU core twice as fast per input as 2048 (caches); GPUs want more

# %%
import pandas as pd

import faithlab as fl

out = fl.outputs.for_notebook()
fl.plots.set_style()

# %% [markdown]
# ## Models: R replicas, each fine-tuned once per β, and the degraded ground-truth explainers

# %%
if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
    raise ValueError(f"replicas must be an int ≥ 1, got {replicas!r}")
REPLICAS = range(replicas)
TRAIN_SEED = {q: fl.verdicts.replica_seed(seed, "ffidelity/sensitivity", q) for q in REPLICAS}
data = {split: fl.data.load("canvas_digits", split=split, size=image_size, r=r, color=color, seed=seed)
        for split in ("train", "test")}
key = {"dataset": "canvas_digits", "size": image_size, "r": r, "color": color, "seed": seed}
model_config = {"in_channels": 3 if color else 1, "n_classes": 10, "width": width}
tuned, accuracy_rows = {}, []  # tuned[replica, β]
for q in REPLICAS:
    config = fl.train.TrainConfig(epochs=n_epochs, lr=3e-3, batch_size=64, seed=TRAIN_SEED[q])
    base, hist = fl.train.fit("small_cnn", model_config, data["train"], config, data_key=key,
                              test_data=data["test"], device=device, progress=False)
    for beta in sorted(set(grids["beta"]) | {default["beta"]}):
        ft_config = fl.train.TrainConfig(epochs=n_finetune_epochs, lr=1e-3, batch_size=64, seed=TRAIN_SEED[q])
        model, _ = fl.train.finetune(base, data["train"], ft_config, fl.train.RandomRemoval(beta), data_key=key,
                                     base_key=hist["key"], test_data=data["test"], device=device, progress=False)
        tuned[q, beta] = model.to(device).eval()
test = data["test"]
x, y = test.x[:n_test].to(device), test.y[:n_test].to(device)
gt = fl.explainers.ground_truth(test.mask[:n_test], x)

# %% [markdown]
# ## One hyper-parameter at a time
# The ground-truth map degraded at every ξ with every seed and scored as in the ranking notebook
# (`fl.protocols.degraded_fidelity_curves`: index-paired curves, at level i FFid+ samples from the top i and FFid−
# from the bottom i of the pixels). Beside each setting's correlations, their chance level
# (`fl.protocols.permuted_correlations`): the same correlations with the ground-truth order permuted over the six
# explainers (for MoRF vs LeRF, the pairing of the "+" and "−" curves shuffled), 1000 draws, the same permutations
# in every replica (so that the claim averages them over the replicas). The default setting stands in every grid; it
# is scored once per replica and shown under each. Tables and figures show the means over the replicas and seeds;
# `macro_units.csv` keeps the unit the claim resamples, the macro correlations of one seed of one replica.

# %%
settings = {(varied, value): {**default, varied: value} for varied, values in grids.items() for value in values}
scored = {}  # (replica, N, β, α) → the curves and correlations of one distinct setting
for q in REPLICAS:
    for hp in settings.values():
        k = (q, hp["n_samples"], hp["beta"], hp["alpha"])
        if k in scored:
            continue
        plus, minus = fl.protocols.degraded_fidelity_curves(
            tuned[q, hp["beta"]], x, y, gt, noise_levels=noise_levels, sparsity=sparsity, n_seeds=n_seeds,
            alpha=hp["alpha"], beta=hp["beta"], n_samples=hp["n_samples"], batch_size=batch_size)
        scored[k] = (plus, minus, fl.metrics.ground_truth_ranking(plus, minus, noise_levels, sparsity),
                     fl.protocols.permuted_correlations(plus, minus, noise_levels=noise_levels, sparsity=sparsity,
                                                        seed=seed))
unit_rows, micro_rows, curve_rows, nulls = [], [], [], []
for (varied, value), hp in settings.items():
    for q in REPLICAS:
        plus, minus, ranking, null = scored[q, hp["n_samples"], hp["beta"], hp["alpha"]]
        nulls.append(null.assign(varied=varied, value=value, replica=q))
        macro = {k: v.tolist() for k, v in ranking["macro"].items()}  # (n_seeds,) per correlation
        unit_rows += [{"varied": varied, "value": value, "replica": q, "seed": s, **{k: v[s] for k, v in macro.items()}}
                      for s in range(n_seeds)]
        micro_rows += [{"varied": varied, "value": value, "replica": q, "seed": s, "level": lv,
                        **{k: float(v[s, j]) for k, v in ranking["micro"].items()}}
                       for s in range(n_seeds) for j, lv in enumerate(sparsity)]
        # the FFid+ and FFid− curves the paper's Tables 24-26 list: mean over seeds at each ξ and level
        curve_rows += [{"varied": varied, "value": value, "replica": q, "xi": xi, "level": lv, "FFid+": float(p),
                        "FFid−": float(m)}
                       for k, xi in enumerate(noise_levels)
                       for lv, p, m in zip(sparsity, plus[:, k].mean(0), minus[:, k].mean(0))]
units = pd.DataFrame(unit_rows)
nulls = pd.concat(nulls, ignore_index=True)
out.table(units, "macro_units")
table = fl.protocols.ffidelity.setting_means(units)  # macro: ± over the replicas' seeds
micro = fl.protocols.ffidelity.setting_means(pd.DataFrame(micro_rows))  # micro: ± over levels, seeds and replicas pooled
out.table(fl.protocols.ffidelity.setting_table(table), "macro_correlations")
out.table(fl.protocols.ffidelity.setting_table(micro), "micro_correlations")
ffid_curves = (pd.DataFrame(curve_rows).groupby(["varied", "value", "xi", "level"], sort=False)[["FFid+", "FFid−"]]
               .mean().reset_index())
out.table(ffid_curves, "ffid_curves")
table

# %%
long = table.melt(id_vars=["varied", "value"], value_vars=list(fl.metrics.DIRECTIONS), var_name="correlation",
                  value_name="Spearman")
fig, axes = fl.plots.panels(1, len(grids), height=3.0, sharey=True)
for ax, varied in zip(axes[0], grids):
    part = long[long["varied"] == varied].assign(value=lambda d: d["value"].map(lambda v: f"{v:g}"),
                                                 correlation=lambda d: d["correlation"].map(fl.plots.label))
    fl.plots.correlation_bars(part, x="value", y="Spearman", hue="correlation", ax=ax)
    ax.set_xlabel(fl.plots.label(varied))
fig.tight_layout()
fl.plots.legend_outside(fig, where="below")
out.figure(fig, "macro_correlations")

# %% [markdown]
# The paper's Tables 24–26 also give the micro ("local") correlations — the same three Spearman correlations at
# every sparsity level, mean ± std over levels with the seeds and replicas pooled — and the FFid+ and FFid− values
# behind them (`ffid_curves.csv`: the mean over seeds and replicas at each ξ and level). The FFid± of the clean map
# (ξ = 0) and of the fully permuted one (ξ = 1), averaged over levels, show how far apart the explainers are in each
# setting.

# %%
ends = (ffid_curves[ffid_curves["xi"].isin([noise_levels[0], noise_levels[-1]])]
        .groupby(["varied", "value", "xi"], sort=False)[["FFid+", "FFid−"]].mean().unstack("xi"))
ends.columns = [f"{m} (ξ = {xi:g})" for m, xi in ends.columns]
ends = ends.reset_index()
out.table(fl.protocols.ffidelity.setting_table(ends), "ffid_ends")
micro

# %% [markdown]
# ## Claim: F-Fidelity is robust to its hyper-parameters
# **F6**, by `fl.protocols.ffidelity.claim_robust_hyperparameters`. Premise and null, per setting: each mean macro
# correlation lies beyond its chance range (with six explainers one Spearman ρ's central 95 % spans about ±0.83);
# a setting where one does not cannot be told from chance and is not testable (left out). A testable setting holds
# when its correlations have the ideal sign with magnitude ≥ `threshold` (MoRF vs GT ≤ −t, LeRF vs GT ≥ t, MoRF
# vs LeRF ≤ −t), judged by each correlation's 95 % interval over the units — a degradation seed of one of the R
# trained replicas, resampled in two stages (replicas, then seeds within them) — which must lie at or beyond the
# margin t; a setting with an interval across t is undecided, never failed. Statistic: the share of testable
# settings that hold; the paper's direction: all of them (our margins 100 % for the claim and 50 % for a part,
# decided by `fl.verdicts.from_settings`, whose text is shown with the claim); not testable without a testable
# setting. `out.claim` also decides the claim on each replica alone (the replica agreement shown beside the verdict).

# %%
claim = out.claim(fl.protocols.ffidelity.claim_robust_hyperparameters, units, nulls, threshold=threshold, seed=seed,
                  note=f"canvas digits r={r}, {n_test} images, {n_seeds} seeds × {replicas} trained replicas, "
                       "GT-mask explainer").claim
out.table(claim.table, "settings_vs_chance")
out.glue("share_pass", float((claim.table["passes threshold"] == "holds").mean()))
out.glue("replicas", replicas)
claim.table

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
# # Evaluate your explainer
#
# A template to copy: point the parameters cell at your model, data and explainers, run it with
# `python -m faithlab.study run templates/evaluate_your_explainer -p weights_path my.pt -p device cuda ...` (or
# open it in Jupyter), and it reports every faithfulness metric of the study on your explainers, how each metric
# ranks them, the sanity checks of the synthesis chapter on your model, and the plots. As published it runs on the
# embedded canvas digits, with a small CNN trained here.
#
# Your own model: set `model_name` / `model_config` to an architecture `fl.models.build` knows (or register
# yours with `fl.models.register`), or `model_source` to "torchvision" / "timm" and `model_name` to one of
# theirs, and `weights_path` to its state dict (read with `weights_only=True`); your
# data: `dataset` and `data_options` for `fl.data.load` (CIFAR, ImageNet-val, ... from disk: see
# `fl.data.available()`). A dataset with ground-truth masks adds the recovery check.

# %% tags=["parameters"]
dataset = "canvas_digits"
data_options = {"size": 16, "r": 0.3, "color": False, "seed": 0}
model_source = "zoo"
model_name = "small_cnn"
model_config = {"in_channels": 1, "n_classes": 10, "width": 16}
weights_path = None
n_epochs = 8
explainers = {"Saliency": ["saliency", {}], "Integrated Gradients": ["integrated_gradients", {"n_steps": 16}],
              "Grad-CAM": ["gradcam", {}], "Random": ["random", {}]}
metrics = None
n_images = 32
finetune_epochs = 4
kfold = 3
kfold_images = 600
kfold_epochs = 15
noise_levels = [0.0, 0.5, 1.0]
n_samples = 10
n_subsets = 64
fewclass_points = 21
randomise_scale = 10.0
seed = 0
device = "cpu"
batch_size = 512

# %%
import functools

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
import torch

import faithlab as fl
from faithlab.protocols import synthesis as syn

out = fl.outputs.for_notebook()
fl.plots.set_style()
LABELS = {m: i.label for m, i in fl.evaluation.METRICS.items()}

# %% [markdown]
# ## Your model and data

# %%
train = fl.data.load(dataset, split="train", **data_options)
test = fl.data.load(dataset, split="test", **data_options)
key = {"dataset": dataset, **data_options}
config = fl.train.TrainConfig(epochs=n_epochs, lr=3e-3, batch_size=64, seed=seed)
if weights_path is None:
    model, history = fl.train.fit(model_name, model_config, train, config, data_key=key, test_data=test,
                                  device=device, progress=False)
elif model_source == "zoo":
    model = fl.models.build(model_name, **model_config)
    model.load_state_dict(torch.load(weights_path, map_location="cpu", weights_only=True))
    history = {"key": f"weights:{weights_path}"}
else:
    model = fl.models.pretrained(model_name, source=model_source, weights_path=weights_path, **model_config)
    history = {"key": f"weights:{weights_path}"}
model = model.to(device).eval()
x, y = test.x[:n_images].to(device), test.y[:n_images].to(device)
with torch.no_grad():
    target = model(x).argmax(1)
out.glue("accuracy", float((target == y).double().mean()))
print(f"{len(y)} images, accuracy {float((target == y).double().mean()):.3f}")

# %% [markdown]
# ## Your explainers
# Every explainer explains the model's prediction. `explain(model, inputs, target)` is what S_avg and ReCo/MeGe
# call on neighbours and on the fold models.

# %%
def explainer_fn(method, options, model, inputs, target):
    opts = {"generator": seed, **options} if method == "random" else options
    return fl.explainers.explain(model, inputs, target, method=method, batch_size=batch_size, **opts).detach()


explain = {name: functools.partial(explainer_fn, method, options) for name, (method, options) in explainers.items()}
maps = {name: fn(model, x, target) for name, fn in explain.items()}
fig = fl.plots.image_grid([x[0, 0]] + [m[0].abs().sum(0) for m in maps.values()],
                          titles=["image"] + list(maps), ncols=len(maps) + 1)
out.figure(fig, "maps")

# %% [markdown]
# ## Every metric
# F-Fidelity's FFid± read a copy of your model fine-tuned with random removal (skipped when `finetune_epochs` is
# 0); ReCo and MeGe read `kfold` models cross-trained on `kfold_images` training images (skipped when 0).

# %%
tuned = None
if finetune_epochs:
    ft = fl.train.TrainConfig(epochs=finetune_epochs, lr=1e-3, batch_size=64, seed=seed)
    tuned, _ = fl.train.finetune(model, train, ft, fl.train.RandomRemoval(0.1), data_key=key,
                                 base_key=history["key"], test_data=test, device=device, progress=False)
    tuned = tuned.to(device).eval()
chosen = metrics or [m for m, i in fl.evaluation.METRICS.items() if i.level == "sample"
                     and ("finetuned" not in i.needs or tuned is not None)]
options = dict(sparsity=[0.1, 0.3, 0.5, 0.7, 0.9], n_samples=n_samples, n_subsets=n_subsets,
               fewclass_fractions=[i / (fewclass_points - 1) for i in range(fewclass_points)], seed=seed,
               batch_size=batch_size)
report = fl.evaluate(model, x, y, maps, metrics=[m for m in chosen if fl.evaluation.METRICS[m].level == "sample"],
                     finetuned=tuned, explainer=explain, **options)
cost = syn.cost_per_metric(report)
forward_inputs = report.attrs["forward_inputs"]
if kfold:
    d = train.subset(torch.arange(min(kfold_images, len(train))))
    cross = fl.train.cross_train(model_name, model_config, d, fl.train.TrainConfig(
        epochs=kfold_epochs, lr=3e-3, batch_size=64, seed=seed), data_key={**key, "n": len(d)}, k=kfold, seed=seed,
        device=device, progress=False)
    xd, yd = d.x.to(device), d.y.to(device)
    with torch.no_grad():
        td = model(xd).argmax(1)
    report = pd.concat([report, fl.evaluate(model, xd, yd, {n: fn(model, xd, td) for n, fn in explain.items()},
                                            metrics=["reco", "mege"], kfold=cross, explainer=explain, **options)],
                       ignore_index=True)
out.table(report, "report")
summary = fl.evaluation.oriented(report).groupby(["label", "explainer"], sort=False)["score"].mean().unstack()
summary["direction"] = report.groupby("label", sort=False)["direction"].first()
out.table(summary.reset_index(), "summary")
summary.round(3)

# %% [markdown]
# ## How each metric ranks your explainers
# Rank 1 = the explainer the metric finds most faithful (mean over images). Where the metrics disagree, the
# ranking depends on the metric you pick: the synthesis chapter says which metrics recovered a known ranking.

# %%
ranks = (fl.evaluation.oriented(report).groupby(["label", "explainer"], sort=False)["oriented"].mean().unstack()
         .rank(axis=1, ascending=False))
out.table(ranks.reset_index(), "ranks")
fig, ax = plt.subplots(figsize=(min(fl.plots.WIDTH_IN, 1.3 * ranks.shape[1] + 3), 0.4 * len(ranks) + 1.5))
sns.heatmap(ranks, annot=True, fmt=".1f", cmap="viridis_r", ax=ax, cbar_kws={"label": "rank (1 = best)"})
ax.set_xlabel("")
ax.set_ylabel("")
out.figure(fig, "ranks")

# %% [markdown]
# ## Sanity checks on your model
# 1. **A random map should score below your explainers**: per metric, the share of images where each explainer
#    beats the random map (½ = the metric cannot tell them apart).
# 2. **A randomised model should change the ranking** (adversary reactivity; every layer's weights drowned in
#    noise of `randomise_scale` × their std; ½ = unrelated ranking, 1 = reversed).
# 3. **Recovery of a known ranking**, when your data has ground-truth masks: the mask degraded at `noise_levels`.

# %%
random_name = next((n for n, (m, _) in explainers.items() if m == "random"), None)
checks = [syn.beats(report, name, random_name).assign(explainer=name) for name in maps
          if random_name is not None and name != random_name]
random_model, _ = fl.train.randomise_layers(model, 1.0, generator=seed, scale=randomise_scale)
randomised = fl.evaluate(random_model, x, y, {n: fn(random_model, x, random_model(x).argmax(1).detach())
                                              for n, fn in explain.items()},
                         metrics=[m for m in fl.evaluation.METRICS if m in set(report["metric"])
                                  and fl.evaluation.METRICS[m].level == "sample"
                                  and not {"finetuned", "explainer"} & set(fl.evaluation.METRICS[m].needs)],
                         **options)
react = syn.reactivity(report[report["metric"].isin(set(randomised["metric"]))], randomised, list(maps),
                       truth=list(maps)[0], random=random_name or list(maps)[-1])
sanity = react[["metric", "model"]].rename(columns={"model": "ranking change on a randomised model"})
if checks:
    beats = pd.concat(checks).pivot(index="metric", columns="explainer", values="share")
    sanity = sanity.set_index("metric").join(beats.add_prefix("beats random: ")).reset_index()
if test.mask is not None:
    truth = fl.explainers.ground_truth(test.mask[:n_images], x)[:, None]
    known = {syn.degraded_name(xi): fl.explainers.degrade(truth, xi, generator=seed) for xi in noise_levels}
    degraded = fl.evaluate(model, x, y, known, finetuned=tuned, **{**options, "seed": seed},
                           metrics=[m for m in set(report["metric"]) if fl.evaluation.METRICS[m].level == "sample"
                                    and "explainer" not in fl.evaluation.METRICS[m].needs])
    rec = syn.recovery(degraded, {n: -xi for n, xi in zip(known, noise_levels)})
    sanity = sanity.merge(rec[["metric", "spearman", "pairwise"]].rename(
        columns={"spearman": "recovery (Spearman)", "pairwise": "recovery (pairs right)"}), on="metric", how="left")
sanity.insert(0, "label", sanity["metric"].map(LABELS))
out.table(sanity, "sanity")
sanity.drop(columns="metric").round(2)

# %% [markdown]
# ## Cost
# Model inputs and milliseconds per image and explainer, per metric (metrics computed together share one cost;
# ReCo/MeGe, computed on the cross-training images, are left out).

# %%
out.table(cost, "cost")
out.glue("forward_inputs", int(forward_inputs))
cost.drop(columns="metric").round(1)

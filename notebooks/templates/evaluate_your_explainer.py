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
# A template to copy: point the parameters cell at your model, images and explainers, run it with
# `python -m faithlab_study run templates/evaluate_your_explainer -p model torchvision:resnet18 -p weights my.pt
# -p images my_images/` (or open it in Jupyter; `faithlab evaluate` is the same report as a command), and it
# reports every faithfulness metric of the study on your explainers, how each metric ranks them, the sanity checks
# of the synthesis chapter on your model, and the plots. As published it runs on the embedded canvas digits, with a
# small CNN trained here.
#
# Your own model: `model` is `"torchvision:<name>"`, `"timm:<name>"` or a zoo name (`fl.models.available()`) and
# `weights` its state dict (read with `weights_only=True`; the number of classes comes from it); Grad-CAM finds the
# model's last convolutional block and a timm ViT is converted so that the attention and relevance methods read its
# attention. Your images: `images` a folder (flat, or one subfolder per class), resized and normalised as the model
# expects (`image_size` overrides the size), labelled by `labels` ("folders", a CSV file, or None for the model's
# own predictions). Without `images` the test split of `dataset` (`fl.data.load`) is used; a dataset with
# ground-truth masks adds the recovery check. FFid± need a copy of the model fine-tuned with random removal
# (`finetune_epochs`, by default only for the model trained here) and ReCo/MeGe `kfold` models cross-trained on
# labelled training data (`kfold`, off by default; zoo architectures only).

# %% tags=["parameters"]
dataset = "canvas_digits"
data_options = {"size": 16, "r": 0.3, "color": False, "seed": 0}
model = None
weights = None
model_name = "small_cnn"
model_config = {"in_channels": 1, "n_classes": 10, "width": 16}
images = None
labels = "folders"
image_size = None
n_epochs = 8
explainers = {"Saliency": ["saliency", {}], "Integrated Gradients": ["integrated_gradients", {"n_steps": 16}],
              "Grad-CAM": ["gradcam", {}], "Random": ["random", {}]}
metrics = None
n_images = 32
finetune_epochs = None
kfold = 0
kfold_images = 600
kfold_epochs = 15
n_samples = 10
n_subsets = 64
fewclass_points = 21
seed = 0
device = "cpu"
batch_size = 512
report_dir = None

# %%
import dataclasses

import pandas as pd
import torch

import faithlab as fl
import faithlab_study as fs
from faithlab import report as rp
from faithlab_study.papers import synthesis as syn

out = fs.artifacts.for_notebook()
fl.plots.set_style()
LABELS = {m: i.label for m, i in fl.evaluation.METRICS.items()}

# %% [markdown]
# ## Your model and data

# %%
if model is None and images is not None:
    raise ValueError("images needs model: the small CNN trained here reads `dataset`'s images; set model (e.g. "
                     "'torchvision:resnet18') and weights to evaluate your model on your images")
if kfold and (images is not None or (model is not None and ":" in model)):
    raise ValueError("kfold needs k models of the zoo architecture `model_name` cross-trained on `dataset`'s "
                     "labelled training split: set kfold = 0 (ReCo/MeGe skipped), or cross-train your architecture "
                     "yourself (fl.train.cross_train) and call fl.evaluate(..., kfold=...)")
finetune_epochs = (4 if model is None else 0) if finetune_epochs is None else finetune_epochs
key = {"dataset": dataset, **data_options}
train = test = None
if images is None or model is None:
    train = fl.data.load(dataset, split="train", **data_options)
    test = fl.data.load(dataset, split="test", **data_options)
config = fl.train.TrainConfig(epochs=n_epochs, lr=3e-3, batch_size=64, seed=seed)
if model is None:
    net, history = fl.train.fit(model_name, model_config, train, config, data_key=key, test_data=test,
                                device=device, progress=False)
else:
    net = fl.models.load(model, weights=weights, **(model_config if ":" not in model else {}))
    history = {"key": f"weights:{weights}"}
    model_name = model if ":" not in model else model_name

# %% [markdown]
# The images to explain and the explainers' maps.

# %%
net = net.to(device).eval()
normalisation = None
if images is None:
    x, y = test.x[:n_images].to(device), test.y[:n_images].to(device)
else:
    pre = fl.models.preprocessing(net)
    if image_size is not None:
        pre = dataclasses.replace(pre, resize=image_size, crop=(image_size, image_size))
    folder = fl.data.image_folder(images, preprocess=pre, labels=labels)
    data = folder.tensors(n_images, model=None if folder.labelled else net)  # no labels: the model's predictions
    x, normalisation = data.x.to(device), pre.normalisation
    train, key = data, {"images": str(images), "n": len(data)}  # fine-tuning, if asked, reads these images
    print(f"{len(folder)} images in {images}; preprocessing {pre}")
    y = data.y.to(device)
with torch.no_grad():
    target = net(x).argmax(1)
out.glue("accuracy", float((target == y).double().mean()))
print(f"{len(y)} images, accuracy {float((target == y).double().mean()):.3f}")

# %% [markdown]
# ## Your explainers
# Every explainer explains the model's prediction. `explain(model, inputs, target)` is what S_avg and ReCo/MeGe
# call on neighbours and on the fold models.

# %%
# your own explainer is any callable(model, inputs, target) → maps; here each registered method with its options
explain = {name: fl.explainers.explainer(method, seed=seed, batch_size=batch_size, **options)
           for name, (method, options) in explainers.items()}
maps = {name: fn(net, x, target) for name, fn in explain.items()}
out.figure(rp.maps_figure(x, maps, normalisation=normalisation), "maps")

# %% [markdown]
# ## Every metric
# F-Fidelity's FFid± read a copy of your model fine-tuned with random removal (skipped when `finetune_epochs` is
# 0); ReCo and MeGe read `kfold` models cross-trained on `kfold_images` training images (skipped when 0).

# %%
tuned = None
if finetune_epochs:
    ft = fl.train.TrainConfig(epochs=finetune_epochs, lr=1e-3, batch_size=64, seed=seed)
    tuned, _ = fl.train.finetune(net, train, ft, fl.train.RandomRemoval(0.1), data_key=key,
                                 base_key=history["key"], test_data=test, device=device, progress=False)
    tuned = tuned.to(device).eval()
chosen = metrics or [m for m, i in fl.evaluation.METRICS.items() if i.level == "sample"
                     and ("finetuned" not in i.needs or tuned is not None)]
options = dict(sparsity=[0.1, 0.3, 0.5, 0.7, 0.9], n_samples=n_samples, n_subsets=n_subsets,
               fewclass_fractions=[i / (fewclass_points - 1) for i in range(fewclass_points)], seed=seed,
               batch_size=batch_size, **({} if normalisation is None else {"normalisation": normalisation}))
frame = fl.evaluate(net, x, y, maps, metrics=[m for m in chosen if fl.evaluation.METRICS[m].level == "sample"],
                    finetuned=tuned, explainer=explain, hints=False, **options)  # the hints are shown below
hints = list(frame.attrs["hints"])
cost = rp.cost(frame)

# %% [markdown]
# The cost of the evaluation and, when asked, the k-fold retraining.

# %%
forward_inputs = frame.attrs["forward_inputs"]
if kfold:
    d = train.subset(torch.arange(min(kfold_images, len(train))))
    cross = fl.train.cross_train(model_name, model_config, d, fl.train.TrainConfig(
        epochs=kfold_epochs, lr=3e-3, batch_size=64, seed=seed), data_key={**key, "n": len(d)}, k=kfold, seed=seed,
        device=device, progress=False)
    xd, yd = d.x.to(device), d.y.to(device)
    with torch.no_grad():
        td = net(xd).argmax(1)
    frame = pd.concat([frame, fl.evaluate(net, xd, yd, {n: fn(net, xd, td) for n, fn in explain.items()},
                                          metrics=["reco", "mege"], kfold=cross, explainer=explain, **options)],
                      ignore_index=True)
out.table(frame, "report")
summary = rp.summary(frame)
out.table(summary.reset_index(), "summary")
summary.round(3)

# %% [markdown]
# ### Hints
# A metric whose scores are constant (or NaN) across your images ranks nothing; `fl.evaluate` names the cause when
# it knows one (no correct prediction for an accuracy form, constant maps, a perturbation that never moves the
# model, ...): `frame.attrs["hints"]`, one row per message (none: no metric was degenerate).

# %%
hint_table = pd.DataFrame({"hint": hints}, dtype=object)
out.table(hint_table, "hints")
hint_table.style.hide(axis="index") if len(hint_table) else print("No metric was degenerate on these images.")

# %% [markdown]
# ## How each metric ranks your explainers
# Rank 1 = the explainer the metric finds most faithful (mean over images). Where the metrics disagree, the
# ranking depends on the metric you pick: the synthesis chapter says which metrics recovered a known ranking.

# %%
ranks = rp.ranks(frame)
out.table(ranks.reset_index(), "ranks")
out.figure(rp.ranks_figure(ranks), "ranks")

# %% [markdown]
# ## Sanity checks on your model
# 1. **A random map should score below your explainers**: per metric, the share of images where each explainer
#    beats the random map (½ = the metric cannot tell them apart).
# 2. **A randomised model should change the ranking** (adversary reactivity; every layer's weights drowned in
#    noise of 10 × their std, `faithlab evaluate`'s default `--randomise-scale`; ½ = unrelated ranking, 1 = reversed).
# 3. **Recovery of a known ranking**, when your data has ground-truth masks: the mask degraded at noise levels
#    ξ = 0, 0.5 and 1 (`LEVELS`).

# %%
random_name = next((n for n, (m, _) in explainers.items() if m == "random"), None)
randomised = rp.on_randomised(net, x, y, explain, frame[frame["level"] == "sample"], generator=seed, **options)
LEVELS = [0.0, 0.5, 1.0]  # ξ of the degraded masks: the known ranking
rec = None
if test is not None and test.mask is not None and images is None:
    truth = fl.explainers.ground_truth(test.mask[:n_images], x)[:, None]
    known = {syn.degraded_name(xi): fl.explainers.degrade(truth, xi, generator=seed) for xi in LEVELS}
    degraded = fl.evaluate(net, x, y, known, finetuned=tuned, hints=False, **{**options, "seed": seed},
                           metrics=[m for m in set(frame["metric"]) if fl.evaluation.METRICS[m].level == "sample"
                                    and "explainer" not in fl.evaluation.METRICS[m].needs])
    rec = syn.recovery(degraded, {n: -xi for n, xi in zip(known, LEVELS)})
sanity = rp.sanity(frame[frame["level"] == "sample"], randomised, random=random_name, recovery=rec)
out.table(sanity, "sanity")
sanity.drop(columns="metric").round(2)

# %% [markdown]
# ## Cost
# Model inputs and milliseconds per image and explainer, per metric (metrics computed together share one cost;
# ReCo/MeGe, computed on the cross-training images, are left out).

# %%
out.table(cost, "cost")
out.glue("forward_inputs", int(forward_inputs))
if report_dir is not None:  # the same report as `faithlab evaluate`: CSVs, figures and one HTML page
    print(rp.write(report_dir, frame, randomised=randomised, random=random_name, images=x, maps=maps,
                   normalisation=normalisation, costs=cost, hints=hints, parameters={
                       "model": model or model_name, "weights": weights, "images": images, "n_images": len(x),
                       "explainers": explainers, **options}))
cost.drop(columns="metric").round(1)

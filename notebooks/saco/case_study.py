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
# # SaCo case study: one image, three explanations (Fig. 3)
#
# {cite:t}`wu2024saco` (Fig. 3) explain one ImageNet image with Transformer Attribution, Raw Attention and Random
# Attribution, cut the pixels into K = 10 salience groups and compare each group's salience s(G_i) with the drop
# in the predicted class's probability when that group alone is removed (SaCo), and with the drops when the top
# 10 %, 20 %, … of the pixels are removed cumulatively (AOPC). Their claim (S5): the cumulative drops saturate
# for every method, so AOPC is high for all three, while SaCo separates the good explanation from the poor ones.
# Here the explained models are the small digits ViTs of {doc}`random_vs_methods`: the same `vit_settings` and
# training seeds, `replicas` per setting, so that the cached weights of that notebook's trained models are read
# instead of retraining (same cache keys): this notebook trains nothing when that one has run. The figure shows the
# first setting's replica 0 on one image; the `paper` profile sets `timm_model` (ViT-B/16 with its ImageNet weights,
# converted with `fl.models.vit_from_timm`) and `dataset = "imagenet_val"`. One image is an anecdote: the claim is
# decided over the first `n_images` correctly classified test images of every trained model, each trained model one
# replica, its intervals t intervals on the models' means (its share: t on the models' shares ∪ Wilson), as its
# registered rules say.

# %% tags=["parameters"]
vit_settings = [{"name": "16 px, ViT 48×4", "image_size": 16, "patch_size": 4, "dim": 48, "depth": 4, "heads": 4,
                 "n_epochs": 30}]  # random_vs_methods' settings: their trained replicas are read from the cache
replicas = 3  # trained replicas per setting, random_vs_methods' (the figure shows the first setting's replica 0)
k = 10
sample_index = 0
n_images = 100  # S5 is decided over this many correctly classified images per trained model
min_accuracy = 0.8  # premise of S5: each replica's test accuracy at least this, within accuracy_tolerance
accuracy_tolerance = 0.05
dataset = "digits"
data_dir = None
timm_model = None
seed = 0
device = "cpu"
batch_size = 64  # per forward call: on a CPU core these models run fastest per input at 64 (caches); GPUs want more

# %%
import pandas as pd
import torch

import faithlab as fl
import faithlab_study as fs


out = fs.artifacts.for_notebook()
fl.plots.set_style()

# %% [markdown]
# ## Model
# The same ViTs as `random_vs_methods` (`fs.papers.saco.trained_vits`: `fs.recipes.digits_vit` with each setting's
# parameters, each replica r trained with its own seed, derived from `seed`, the setting's name and r,
# `fs.verdicts.replicas`), so the cached weights of that notebook's models are loaded instead of retraining; each
# model's test accuracy is the claim's first premise. With `timm_model`
# (`arch.weights_tag`), the timm ViT is converted with `fl.models.vit_from_timm` and the candidate images are the
# first max(100, 2·`n_images`) of `dataset` from `sample_index` on, normalised with the model's own mean and std.

# %%
vits = {}  # (setting name, replica): (model, candidate images, their labels)
if timm_model is None:
    accuracy_rows = []
    trained = fs.papers.saco.trained_vits(vit_settings, seed=seed, replicas=replicas, device=device)
    for setting, replica, (vit, _, test) in trained:
        vits[setting["name"], replica.index] = (vit, test.x[sample_index:], test.y[sample_index:])
        accuracy_rows.append({"setting": setting["name"], "replica": replica.index,
                              "accuracy": fl.train.loss_and_accuracy(vit, test, device=device)["accuracy"]})
    accuracy_frame = pd.DataFrame(accuracy_rows)
else:
    arch, _, tag = timm_model.partition(".")
    source = fl.models.pretrained(arch, weights=tag or None, source="timm")
    mean, std = (torch.tensor(source.pretrained_cfg[key]).view(1, -1, 1, 1) for key in ("mean", "std"))
    model = fl.models.vit_from_timm(source).to(device)
    raw = fl.data.load(dataset, split="test", data_dir=data_dir, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    candidates = range(sample_index, min(sample_index + max(100, 2 * n_images), len(raw)))
    images = (torch.stack([raw[i][0] for i in candidates]) - mean) / std
    labels = torch.tensor([int(raw[i][1]) for i in candidates])
    vits[timm_model, 0] = (model, images, labels)  # one set of published weights
    accuracy_frame = None  # published weights: no training to check
model, images, labels = next(iter(vits.values()))  # the figure's model: the first setting's replica 0

# %% [markdown]
# ## The image
# The first test image at or after `sample_index` that the model classifies correctly (chosen by this rule, not by
# looking at the scores).

# %%
with torch.no_grad():
    predictions = model(images.to(device)).argmax(1).cpu()
correct = torch.nonzero(predictions == labels).flatten()
if len(correct) == 0:
    raise RuntimeError(f"no correctly classified image among the {len(labels)} from index {sample_index} on")
first = int(correct[0])
index = sample_index + first
x = images[first:first + 1].to(device)
with torch.no_grad():
    predicted = model(x).argmax(1)
out.glue("image_index", index)
out.glue("predicted_class", int(predicted))
print(f"test image {index}, label {int(labels[first])}, predicted {int(predicted)}")

# %% [markdown]
# ## Three explanations, SaCo's individual removals and AOPC's cumulative removals
# Maps as in `random_vs_methods`: Transformer Attribution ({cite:t}`chefer2021transformer`'s relevance propagation,
# rollout of gradient-weighted attention relevance), Raw Attention (last block, CLS row) and Random (uniform per pixel),
# explaining the predicted class, token maps upsampled bilinearly. `saco_details` gives s(G_i) and
# ∇pred(G_i) = p(ŷ|x) − p(ŷ|x without G_i); the cumulative drop after removing the top 10·i % of the pixels is
# p(ŷ|x) − p(ŷ|x̃_top), the curve behind AOPC (`fl.metrics.aopc_details`: same removal engine, reference
# per-image channel mean and salience).

# %%
METHODS = {
    "Transformer Attribution": ("transformer_attribution", {}),
    "Raw Attention": ("raw_attention", {}),
    "Random": ("random", {}),
}
maps, rows, scores = {}, [], []
for name, (method, options) in METHODS.items():
    a = fl.explainers.explain(model, x, predicted, method=method, batch_size=batch_size, **options, sample_seeds=(
        fs.papers.saco.experiments.map_seeds(seed, *next(iter(vits)), name, [first]))).abs().sum(1, keepdim=True)
    maps[name] = a
    details = fl.metrics.saco_details(model, x, a, k=k, batch_size=batch_size)
    aopc = fl.metrics.aopc_details(model, x, a, batch_size=batch_size)  # 0, 10, …, 100 % removed
    cumulative, n_points = aopc["drop"][0].cpu().numpy(), len(aopc["fractions"])
    for i in range(k):
        rows.append({"method": name, "group": i + 1, "salience": details["salience"][0, i].item(),
                     "salience share": (details["salience"][0, i] / details["salience"][0].sum()).item(),
                     "individual drop": details["drop"][0, i].item(),
                     "cumulative drop": cumulative[round((i + 1) * (n_points - 1) / k)]})
    scores.append({"method": name, "SaCo": details["saco"].item(),
                   "AOPC": aopc["score"].item(),
                   "p(ŷ|x)": details["prob"].item(),
                   "cumulative drop at 30 %": cumulative[3], "max cumulative drop": cumulative.max()})

# %% [markdown]
# The groups and the scores of each method, as tables.

# %%
groups = pd.DataFrame(rows)
scores = pd.DataFrame(scores).set_index("method")
out.table(groups, "groups")
out.table(scores.reset_index(), "scores")
for name in METHODS:
    key = name.lower().replace(" ", "_").replace("-", "_")
    out.glue(f"saco_{key}", round(float(scores.loc[name, "SaCo"]), 3))
    out.glue(f"aopc_{key}", round(float(scores.loc[name, "AOPC"]), 3))
out.glue("n_saturated", int((scores["cumulative drop at 30 %"] >= 0.9 * scores["max cumulative drop"]).sum()))
fl.plots.readable(scores)

# %% [markdown]
# The cumulative drop is read at 10·i % removed for group i, which matches the group boundaries exactly when K
# divides 10 (K = 10 here; with another K the nearest 10 % point is used).

# %%
fig, axes = fl.plots.panels(len(METHODS), 2, height=2.3, gridspec_kw={"width_ratios": [1, 2.2]})
for row, name in enumerate(METHODS):  # one row per method: its map, then its groups
    fl.plots.heatmap_overlay(x[0].cpu(), maps[name][0, 0].cpu(), ax=axes[row, 0], colorbar="attribution")
    axes[row, 0].set_title(f"{name}\nSaCo {scores.loc[name, 'SaCo']:.3f}   AOPC {scores.loc[name, 'AOPC']:.3f}")
    g = groups[groups["method"] == name]
    ax = axes[row, 1]
    ax.bar(g["group"], g["salience share"], color="0.75", label="s(G_i) / Σ s")
    ax.plot(g["group"], g["cumulative drop"], "s--", color="C3", label="drop, top 10·i % removed")
    ax.axhline(0, color="k", linewidth=0.5)
    ax.set_xlabel("group i (most salient first)" if row == len(METHODS) - 1 else "")
    ax.set_xticks(list(g["group"]))
    ax.set_ylabel("share / cum. drop")
    twin = ax.twinx()  # individual drops are much smaller than cumulative ones: own scale
    twin.plot(g["group"], g["individual drop"], "o-", color="C0", label="∇pred(G_i), alone (right axis)")
    twin.tick_params(axis="y", colors="C0")
    twin.grid(False)
    twin.set_ylabel("∇pred(G_i)", color="C0")
handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
ax.legend(handles, [h.get_label() for h in handles])
fig.tight_layout()
fl.plots.legend_outside(fig, where="below", ncol=2)
out.figure(fig, "case_study")

# %% [markdown]
# ## Claim S5 over many images
# The same three explanations for the first `n_images` correctly classified images from `sample_index` on (chosen
# by this rule, not by looking at the scores), for every trained model, and the claim function
# `fs.papers.saco.claim_saturation`, which decides the claim's two named parts, the share of images on which every
# method's cumulative drop has saturated after the top 30 % and SaCo's separation of Transformer Attribution from
# Raw Attention and from Random, by the rules listed here. Its premises: each model learned the digits, and removal
# matters group by group on these images (the table below: Transformer Attribution's most minus least salient group
# drop, Random's as the control). The single image above illustrates it.

# %%
out.rules("S5", "S5.saturation", "S5.separation")

# %%
frames = []
for (name_r, r), (vit, images_r, labels_r) in vits.items():
    with torch.no_grad():
        predicted_r = vit(images_r.to(device)).argmax(1).cpu()
    chosen = torch.nonzero(predicted_r == labels_r).flatten()[:n_images]
    xs, ys = images_r[chosen].to(device), predicted_r[chosen].to(device)
    many = {name: fl.explainers.explain(  # Random's draws keyed to (seed, setting, replica, method, image)
        vit, xs, ys, method=method, batch_size=batch_size, **options,
        sample_seeds=fs.papers.saco.experiments.map_seeds(seed, name_r, r, name, chosen.tolist())).abs().sum(1, True)
            for name, (method, options) in METHODS.items()}
    frames.append(fs.papers.saco.case_study_frame(vit, xs, many, k=k, batch_size=batch_size)
                  .assign(setting=name_r, replica=r))
frame = pd.concat(frames, ignore_index=True)
out.table(frame, "per_image")
mechanism = pd.DataFrame([{"method": name, **fs.papers.saco.removal_premise(frame, method=name)[1]}
                          for name in ("Transformer Attribution", "Random")])
out.table(mechanism, "mechanism")
deciding = mechanism.set_index("method").loc["Transformer Attribution"]

# %% [markdown]
# The mechanism's numbers for the text, and the saturation claim S5.

# %%
out.glue("mechanism_low", round(float(deciding["low"]), 3))
out.glue("mechanism_estimate", round(float(deciding["most − least salient group drop"]), 3))
out.glue("mechanism_outcome", str(deciding["outcome"]))
s5 = out.claim(fs.verdicts.replicated(
    fs.papers.saco.claim_saturation, frame, accuracy=accuracy_frame, min_accuracy=min_accuracy,
    accuracy_tolerance=accuracy_tolerance, trained=timm_model is None),
    note=f"{len(vits)} trained model(s), {frame.groupby(['setting', 'replica'])['image'].nunique().min()} "
         "images each at least").claim
out.table(s5.table, "s5_cells")
summary = frame.groupby("method", sort=False)[["SaCo", "AOPC", "drop at 30%", "max drop", "saturated"]].mean()
out.table(summary.reset_index(), "s5_summary")
out.glue("n_images_s5", int(frame.groupby(["setting", "replica"])["image"].nunique().sum()))
out.glue("n_models_s5", len(vits))
out.glue("share_saturated", round(float(frame.pivot(index=["setting", "replica", "image"], columns="method",
                                                    values="saturated").astype(bool).all(axis=1).mean()), 3))
fl.plots.readable(s5.table)

# %%
fl.plots.readable(mechanism)

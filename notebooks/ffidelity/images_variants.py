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
# # F-Fidelity: a ViT, LayerCAM, GradCAM against Saliency, and the cost of ROAR (Tables 5, 10–13)
#
# Four appendix experiments of the paper, all through the shared protocol `fl.protocols.image_ranking_study` that
# also runs Tables 1–2 ({doc}`images_ranking`):
#
# - **Table 5 (App. D.1)**: the degraded-explainer ranking with a Vision Transformer and SG-SQ;
# - **Table 10 (App. D.5)**: the same with LayerCAM on the convolutional network;
# - **Tables 11–12 (App. D.10)**: FFid± of GradCAM against Saliency on the fine-tuned model — a good evaluation
#   method should prefer GradCAM's focused maps;
# - **Table 13 (App. D.11)**: the wall-clock cost and the forward passes of ROAR (one retraining per explainer)
#   against F-Fidelity (one fine-tuning for all explainers), measured in this run.
#
# Our stand-in for CIFAR-100/Tiny-ImageNet is the coloured canvas-digits data of {doc}`images_ranking`'s main
# setting, where a removed pixel (the dataset-mean colour) is out of distribution; the `paper` profile loads
# CIFAR-100, with ResNet-9 and the paper's ViT.
#
# **Replicas.** The unit of replication is the trained model: the claims decided here (F7, F8, F10) are decided over
# `replicas` (R) independently trained replicas of each network. Replica r of the CNN is replica r of
# {doc}`images_ranking`'s main setting (training seed `fl.verdicts.replica_seed(seed, "canvas/main", r)`, the same
# cache entries), replica r of the ViT is trained with `fl.verdicts.replica_seed(seed, "vit/main", r)`; each replica
# gets its own fine-tuning and ROAR retraining, cached per replica, and all replicas see the same data. Every frame
# a claim reads carries a `replica` column, and every verdict's interval resamples replicas, then units within
# them. The cost study (F9) measures one replica's training runs and needs no replicas.

# %% tags=["parameters"]
dataset = "canvas_digits"
data_dir = None
canvas_models = {}  # overrides of fl.protocols.ffidelity.CanvasModels: the CNN (and canvas data) of images_ranking
vit_models = {}  # overrides of fl.protocols.ffidelity.VitModels: the ViT (and its fine-tuning) of robustness too
beta = 0.1
alpha = 0.5
n_samples = 10
n_test = 40  # test images per replica (the units of F7 are seeds × levels; images only sharpen each unit)
noise_levels = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
n_seeds = 2
sparsity = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
sg_samples = 4
ig_steps = 8
n_cases = 5
n_table9 = 2  # images shown in the Table 9 figure (the ViT's Grad-CAM, original and fine-tuned model)
pair_n_test = None  # test images per replica of Tables 11–12 (None: all)
replicas = 3  # independently trained CNNs and ViTs (with their fine-tuned and ROAR models)
ood_ks = [8, 26]
seed = 0
device = "cpu"
batch_size = 256  # per forward call: on a CPU core twice as fast per input as 2048 (caches); GPUs want more
shard = None  # set by the runner: with -p n_shards N the (seed, noise level) grids of Tables 5 and 10 are scored in N shards
n_shards = 1

# %%
import numpy as np
import pandas as pd
import torch

import faithlab as fl

out = fl.outputs.for_notebook()
fl.plots.set_style()
P = fl.protocols.ffidelity
METHODS = ["Fidelity", "ROAR", "R-Fidelity", "F-Fidelity"]

# %% [markdown]
# ## Data and the shared settings
# The convolutional network, its data key and its training recipe are those of {doc}`images_ranking`, so the
# original and fine-tuned CNN of each replica are loaded from the same cache entries (`cnn.train_config(t)` etc.
# with the replica's training seed t, as `CanvasModels.ranking_study`).

# %%
cnn = fl.protocols.ffidelity.CanvasModels(**canvas_models)
if dataset == "canvas_digits":
    train, test = cnn.load(seed)
    data_key = cnn.data_key(seed)
else:
    train = fl.data.load(dataset, split="train", data_dir=data_dir)
    test = fl.data.load(dataset, split="test", data_dir=data_dir)
    data_key = {"dataset": dataset}
in_channels, size = train[0][0].shape[0], train[0][0].shape[-1]
n_classes = train.info["n_classes"]
cnn_config = cnn.model_config(in_channels=in_channels, n_classes=n_classes)
vit_spec = fl.protocols.ffidelity.VitModels(**vit_models)
REPLICAS = range(replicas)
CNN_SEED = {r: fl.verdicts.replica_seed(seed, "canvas/main", r) for r in REPLICAS}  # images_ranking's main setting
VIT_SEED = {r: fl.verdicts.replica_seed(seed, "vit/main", r) for r in REPLICAS}
ranking = dict(noise_levels=noise_levels, sparsity=sparsity, n_test=n_test, n_seeds=n_seeds, alpha=alpha, beta=beta,
               n_samples=n_samples, seed=seed, device=device, batch_size=batch_size)
SG_SQ = ("sg_sq_ig", {"nt_samples": sg_samples, "n_steps": ig_steps})
for name, value in {"n_test": n_test, "n_seeds": n_seeds, "replicas": replicas, "n_samples": n_samples,
                    "n_levels": len(sparsity),
                    "vit_dim": vit_spec.dim, "vit_depth": vit_spec.depth, "vit_heads": vit_spec.heads}.items():
    out.glue(name, value)

# %% [markdown]
# ## Tables 5 and 10: ViT with SG-SQ, CNN with LayerCAM
# Six explainers per table (the clean map degraded at ξ ∈ {0, 0.2, …, 1}), scored by Fidelity, ROAR (a network
# retrained on explanation-guided removal), R-Fidelity and F-Fidelity (the fine-tuned network and its own maps).
# The ViT is trained with AdamW (weight decay 1e-4, as the paper's Adam) and a cosine schedule, and fine-tuned with
# the same recipe (at its `finetune_lr`); `fl.protocols.ffidelity.VitModels` holds the ViT's settings, shared
# with `robustness` (Table 8's ViT row). With `n_shards` > 1 the runner scores the (seed, noise level) grid in
# shards (`fl.outputs.sharded`; each cell depends on that cell only) and the cells below see the same curves. Each
# study runs once per replica; `studies[k, r]` is replica r's.

# %% tags=["shard"]
STUDIES = {
    "ViT SG-SQ": lambda r, cells: fl.protocols.image_ranking_study(  # VitModels' recipe, the replica's seed
        "vit", vit_spec.model_config(train), train, test, {"ViT SG-SQ": SG_SQ}, data_key=data_key,
        train_config=vit_spec.train_config(VIT_SEED[r]), finetune_config=vit_spec.finetune_config(VIT_SEED[r]),
        roar_config=vit_spec.train_config(VIT_SEED[r]), methods=METHODS, cells=cells, **ranking),
    "CNN LayerCAM": lambda r, cells: fl.protocols.image_ranking_study(  # images_ranking's CNN of replica r
        cnn.model_name, cnn_config, train, test, {"CNN LayerCAM": ("layercam", {})}, data_key=data_key,
        train_config=cnn.train_config(CNN_SEED[r]), finetune_config=cnn.finetune_config(CNN_SEED[r]),
        roar_config=cnn.roar_config(CNN_SEED[r]), methods=METHODS, cells=cells, **ranking),
}
runs = P.ReplicaStudies(lambda k, r, cells: STUDIES[k](r, cells), keys=list(STUDIES), replicas=REPLICAS,
                        column="study")
grid = [(s, k) for s in range(n_seeds) for k in range(len(noise_levels))]
scored = fl.outputs.sharded("curves", runs.score_cells, grid, shard=shard, n_shards=n_shards)

# %%
studies = runs.complete(scored)  # the reduce step of a sharded run: models from the cache, the grid from shards
accuracy = pd.DataFrame([{"study": k, "replica": r, "model": m, "test accuracy": a}
                         for (k, r), st in studies.items() for m, a in st.accuracy.items()])
out.table(accuracy, "accuracy")
for k in STUDIES:
    out.glue(f"accuracy_{k.split()[0].lower()}",
             float(accuracy[(accuracy["study"] == k) & (accuracy["model"] == "original")]["test accuracy"].mean()))
constant = pd.concat([st.constant_maps().assign(study=k, replica=r) for (k, r), st in studies.items()],
                     ignore_index=True)
accuracy.pivot_table(index=["study", "model"], columns="replica", values="test accuracy", sort=False)

# %% [markdown]
# Is removal out of distribution for these networks? Accuracy of the original and fine-tuned network after
# removing k digit (salient), background (non-salient) or random pixels (`fl.protocols.removal_diagnostic`), per
# replica; the gaps are averaged over the replicas.

# %%
mask = test.mask.flatten(1) if getattr(test, "mask", None) is not None else None
if mask is not None:
    diagnostic = pd.concat([fl.protocols.removal_diagnostic(
        {m: st.models[m] for m in ("original", "fine-tuned")}, st.x, st.y, mask[:n_test].to(device), ks=ood_ks,
        n_draws=5, generator=seed, batch_size=batch_size).assign(study=k, replica=r)
        for (k, r), st in studies.items()], ignore_index=True)
    out.table(diagnostic, "ood_diagnostic")
    for k in STUDIES:
        gap = pd.DataFrame([fl.protocols.ood_gap(part) for _, part in
                            diagnostic[diagnostic["study"] == k].groupby("replica")]).mean()
        out.glue(f"ood_gap_{k.split()[0].lower()}", float(gap["original"]))
        out.glue(f"ood_gap_{k.split()[0].lower()}_finetuned", float(gap["fine-tuned"]))
    out.glue("ood_k", int(diagnostic["k"].max()))  # the count the gaps are read at (ood_gap: the largest)
    display_diagnostic = diagnostic.pivot_table(index=["study", "model"], columns=["k", "removed"],
                                                values="accuracy", sort=False)
else:  # a dataset without a ground-truth mask (CIFAR-100): no background to remove
    display_diagnostic = None
display_diagnostic

# %% [markdown]
# Cells: our mean ± std, the paper's value in parentheses (Table 5: ViT on CIFAR-100, SG-SQ; Table 10: ResNet-9 on
# CIFAR-100, LayerCAM); ours over the seeds of every replica, pooled. Ranks are among the four methods (1 best).

# %%
PAPER = {"ViT SG-SQ": P.paper.TABLE_5, "CNN LayerCAM": P.paper.TABLE_10}  # CIFAR-100: ViT; ResNet-9, LayerCAM
stacked = {k: [studies[k, r] for r in REPLICAS] for k in STUDIES}  # the replicas' curves along the seeds axis
tidy = pd.concat([fl.protocols.ranking_correlations(
    {key: torch.cat([st.P[key] for st in sts]) for key in sts[0].P},
    {key: torch.cat([st.Q[key] for st in sts]) for key in sts[0].Q}, noise_levels=noise_levels, sparsity=sparsity,
    methods=METHODS, group="explainer") for sts in stacked.values()], ignore_index=True)
tidy["paper (CIFAR-100)"] = [PAPER[t.explainer][t.row, t.correlation][METHODS.index(t.method)]
                             for t in tidy.itertuples()]
out.table(tidy, "correlations_tidy")
display_table = fl.protocols.table_layout(tidy, group="explainer", paper="paper (CIFAR-100)")
out.table(display_table, "tables_5_10_layout")
display_table

# %%
curves = pd.concat([st.curves.assign(replica=r) for (k, r), st in studies.items()], ignore_index=True)
out.table(curves, "curves")
spread = fl.protocols.separation(curves, group="explainer")
out.table(spread, "separation")
for i, label in enumerate(STUDIES):  # one figure per study: methods in rows, the + and − curves in columns
    fig = fl.plots.curves_per_level(curves[curves["explainer"] == label], methods=METHODS, title=label)
    out.figure(fig, "curves_per_level" if i == 0 else f"curves_per_level_{i + 1}")

# %% [markdown]
# ## Claims of Tables 5 and 10
# **F7** *F-Fidelity recovers the ground-truth ranking better than Fidelity, ROAR and R-Fidelity* — with a ViT
# (Table 5) and with LayerCAM (Table 10). The claim function is `fl.protocols.ffidelity.claim_ranking`, as in
# {doc}`images_ranking`: premise — plain Fidelity's oriented micro correlation is not already within 0.05 of the
# ideal +1 and F-Fidelity's is defined; null — at least one method's correlation with the ground-truth order lies
# beyond its chance range with that order permuted over the six explainers (`fl.protocols.ground_truth_null`;
# with six explainers one Spearman ρ's central 95 % spans about ±0.83), else not testable; statistic — F-Fidelity's
# mean micro rank minus each other method's over the degradation seeds × levels of every trained replica (paired
# two-stage bootstrap — replicas, then seed × level units within them — 95 %, margin 0), each comparison a win, tie
# or loss; `fl.verdicts.from_comparison` turns them into the verdict (its generated text is shown with the claim),
# and `out.claim` shows beside it how many of the R replicas give the same verdict alone.

# %%
PAPER_RANKS = {label: P.paper.micro_ranks_text(table) for label, table in PAPER.items()}  # Tables 5 and 10
TABLE = {"ViT SG-SQ": "Table 5, ViT", "CNN LayerCAM": "Table 10, LayerCAM"}
cells = pd.concat([fl.protocols.micro_cells(st.P, st.Q, noise_levels=noise_levels, sparsity=sparsity,
                                            methods=METHODS, group="explainer").assign(replica=r)
                   for (k, r), st in studies.items()], ignore_index=True)
out.table(cells, "micro_cells")
nulls = pd.concat([fl.protocols.ground_truth_null(st.P, st.Q, noise_levels=noise_levels, sparsity=sparsity,
                                                  methods=METHODS, group="explainer", seed=seed).assign(replica=r)
                   for (k, r), st in studies.items()], ignore_index=True)
ranks = cells.groupby(["explainer", "method"])["micro rank"].mean().unstack()
comparison_tables = []
for label in STUDIES:
    claim = out.claim(P.claim_ranking, cells, nulls, group="explainer", value=label, methods=METHODS, label="F7",
                      source=TABLE[label], paper=f"CIFAR-100 micro ranks (MoRF/LeRF/MoRF-LeRF): {PAPER_RANKS[label]}",
                      seed=seed, note=f"{dataset} {size}px, {n_test} images, {replicas} replicas × {n_seeds} seeds × "
                                      f"{len(sparsity)} levels, N={n_samples}").claim
    comparison_tables.append(claim.table.assign(explainer=label))
    out.glue(f"rank_ffid_{label.split()[0].lower()}", float(ranks.loc[label, "F-Fidelity"]))
comparison_rows = pd.concat(comparison_tables, ignore_index=True)
out.table(comparison_rows, "rank_comparisons")
comparison_rows

# %% [markdown]
# ## The ViT's explanations before and after fine-tuning (App. D.4, the paper's Table 9)
# The paper's Table 9 shows GradCAM maps of the original and the fine-tuned ResNet and ViT. The ResNet's stand-in is
# in {doc}`images_ranking`; here the ViT of Table 5: its Grad-CAM (Chefer et al.'s attention Grad-CAM, the ViT
# form of GradCAM in `fl.explainers`) and its SG-SQ maps on the two models, compared image by image with
# `fl.protocols.ffidelity.map_agreement` (Spearman ρ and top-10 % overlap, each against the same statistic with the
# maps of other images). Claim **F10** (`claim_maps_preserved`) is judged on the Grad-CAM maps of every replica's
# test images (the interval resamples replicas, then images); its chance level is that of the mean over the
# replicas (each permutation draw averaged over them).

# %%
vit = studies["ViT SG-SQ", 0]  # replica 0: the one whose maps the figure shows
vit_maps = {r: {"attention Grad-CAM": {m: fl.explainers.explain(studies["ViT SG-SQ", r].models[m],
                                                                studies["ViT SG-SQ", r].x, studies["ViT SG-SQ", r].y,
                                                                method="attention_gradcam")
                                       for m in ("original", "fine-tuned")},
                "SG-SQ": {m: studies["ViT SG-SQ", r].clean["ViT SG-SQ", m] for m in ("original", "fine-tuned")}}
            for r in REPLICAS}


vit_agreement = {name: P.map_agreement_over_replicas(  # each replica's maps; the null averaged over the replicas
    {r: (vit_maps[r][name]["original"], vit_maps[r][name]["fine-tuned"]) for r in REPLICAS}, seed=seed)
    for name in vit_maps[0]}
vit_agreement_table = pd.DataFrame([
    {"explainer": name, "statistic": P.AGREEMENT[s], "mean": float(per_image_vit[s].mean()),
     "images": int(per_image_vit[s].notna().sum()), "chance median": n.median, "chance low": n.low,
     "chance high": n.high}
    for name, (per_image_vit, vit_nulls) in vit_agreement.items() for s, n in vit_nulls.items()])
out.table(vit_agreement_table, "vit_maps_agreement")
fig = fl.plots.map_columns(vit.x[:n_table9].cpu(), {
    f"Grad-CAM, {m}": vit_maps[0]["attention Grad-CAM"][m][:n_table9].reshape(-1, *vit.x.shape[2:]).cpu()
    for m in ("original", "fine-tuned")}, alpha=1.0,  # the maps alone, beside the image
    colorbar="attribution, scaled per map (0–1)")
out.figure(fig, "table_9_vit_maps")
out.claim(P.claim_maps_preserved, *vit_agreement["attention Grad-CAM"], value="ViT attention Grad-CAM", seed=seed,
          note=f"{dataset} {size}px, {len(vit.x)} test images × {replicas} replicas; Spearman of the pixel maps, "
               "chance = maps of other images")
vit_agreement_table

# %% [markdown]
# ## GradCAM against Saliency (App. D.10) and the cost of ROAR (App. D.11)
# One study with two clean explainers (ξ = 0 only): GradCAM and Saliency (|∂f_y/∂x|), scored by ROAR and by
# F-Fidelity on every test image. To time every stage in this run, all networks are trained afresh here (no cache), and the fine-tuning
# gets as many epochs as a ROAR retraining, as in the paper (both 100 epochs). Costs: wall-clock seconds of this
# machine (`time.perf_counter` around each stage) and image passes (images through the network, counted by a
# forward hook; a training epoch counts its training and test images), which do not depend on the machine. The
# costs are those of replica 0's networks; the other replicas serve the claim F8 below (their fine-tuned CNNs only).

# %%
PAIR_TUNE = {r: fl.train.TrainConfig(epochs=cnn.n_roar_epochs, lr=1e-3, batch_size=64, seed=CNN_SEED[r])
             for r in REPLICAS}  # the pair study's F-Fidelity fine-tuning: as many epochs as a ROAR retraining
pair = fl.protocols.image_ranking_study(
    cnn.model_name, cnn_config, train, test, {"GradCAM": ("gradcam", {}), "Saliency": ("saliency", {})},
    data_key=data_key, train_config=cnn.train_config(CNN_SEED[0]), finetune_config=PAIR_TUNE[0],
    roar_config=cnn.roar_config(CNN_SEED[0]), methods=["ROAR", "F-Fidelity"], cache=False,
    **{**ranking, "noise_levels": [0.0], "n_seeds": 1, "n_test": pair_n_test or len(test)})
# maps without a ranking (an all-zero GradCAM): ordered by the random ties rule, counted for every study here
constant = pd.concat([constant, pair.constant_maps().assign(study="GradCAM vs Saliency")], ignore_index=True)
out.table(constant, "constant_maps")
pair_constant = constant[(constant["study"] == "GradCAM vs Saliency") & (constant["model"] == "original")]
out.glue("constant_gradcam_pair", int(pair_constant.loc[pair_constant["explainer"] == "GradCAM", "constant maps"].sum()))
ffid = pair.curves[pair.curves["method"] == "F-Fidelity"].assign(
    **{"explanation size": lambda d: d["level"].where(
        d["curve"] == "+", d["level"].map(dict(zip(sparsity, fl.metrics.minus_sparsity(sparsity)))))})
ffid["metric"] = ffid["curve"].map({"+": "FFid+ (↑)", "−": "FFid− (↓)"})
out.table(ffid[["explainer", "metric", "explanation size", "score"]], "gradcam_vs_saliency_curves")
fig, axes = fl.plots.panels(1, 2, height=3.0, legend="right", sharex=True)
for ax, metric in zip(axes[0], ("FFid+ (↑)", "FFid− (↓)")):
    fl.plots.curves(ffid[ffid["metric"] == metric], x="explanation size", y="score", hue="explainer", band=None,
                    ax=ax, legend=metric == "FFid+ (↑)")
    ax.set_title(metric)
fig.tight_layout()
fl.plots.legend_outside(fig)
out.figure(fig, "gradcam_vs_saliency_curves")

# %% [markdown]
# Per-image FFid± (mean over explanation sizes) of every evaluated test image, with both maps on the fine-tuned
# model, for every replica: replica 0's fine-tuned CNN is the pair study's, replica r's is replica r's original CNN
# (the cached one of the studies above) fine-tuned with the same recipe (cached). The grid shows replica 0's first
# few.

# %%
PAIR_MAPS = P.PAIR_MAPS  # GradCAM's and Saliency's maps of a model on the pair study's images: P.pair_maps
bases = {r: fl.train.fit(cnn.model_name, cnn_config, train, cnn.train_config(CNN_SEED[r]), data_key=data_key,
                         test_data=test, device=device, progress=False) for r in REPLICAS}  # from the cache
tuned = {0: pair.models["fine-tuned"]}
for r in REPLICAS[1:]:
    tuned[r] = fl.train.finetune(bases[r][0], train, PAIR_TUNE[r], fl.train.RandomRemoval(beta), data_key=data_key,
                                 base_key=bases[r][1]["key"], test_data=test, device=device,
                                 progress=False)[0].to(device).eval()
pair_ffid = dict(sparsity=sparsity, alpha=alpha, beta=beta, n_samples=n_samples, seed=seed, batch_size=batch_size)
per_image = pd.concat([P.per_image_ffid(
    tuned[r], pair.x, pair.y, {label: pair.clean[label, "fine-tuned"].view(-1, *pair.x.shape[2:])
                               for label, _ in PAIR_MAPS} if r == 0
    else P.pair_maps(tuned[r], pair.x, pair.y, seed=seed), **pair_ffid).assign(replica=r) for r in REPLICAS],
    ignore_index=True)
out.table(per_image, "per_image_ffid")  # constant maps flagged (and counted in constant_maps.csv)
out.glue("n_pair", len(pair.x))
cases = per_image[(per_image["replica"] == 0) & (per_image["case"] <= n_cases)]
out.table(cases, "cases")
images, maps, titles = [], [], []
for i in range(min(n_cases, len(pair.x))):
    for label in ("GradCAM", "Saliency"):
        c = cases[(cases["case"] == i + 1) & (cases["explainer"] == label)].iloc[0]
        images.append(pair.x[i].cpu())
        maps.append(pair.clean[label, "fine-tuned"][i].view(pair.x.shape[2:]).cpu())
        titles.append(f"{i + 1}: {label}\nFFid+ {c['FFid+']:.2f}, FFid− {c['FFid−']:.2f}")
for start in range(0, len(images), 6):  # three cases (six maps) per figure, each large enough to read
    part = slice(start, start + 6)
    fig = fl.plots.image_grid(images[part], titles=titles[part], ncols=2, attributions=maps[part], size=2.2,
                              colorbar="attribution, scaled per map (0–1)")
    out.figure(fig, "cases" if start == 0 else f"cases_{start // 6 + 1}")

# %% [markdown]
# ### Claim (App. D.10)
# **F8** *F-Fidelity prefers GradCAM to Saliency: higher FFid+ and lower FFid−* (Tiny-ImageNet: 0.2286 vs 0.2020
# and 0.0547 vs 0.1050, Table 11), by `fl.protocols.ffidelity.claim_map_preferred`. Per test image, FFid± of each
# map averaged over explanation sizes; a paired bootstrap over the images (95 % interval) decides each of the two
# comparisons (GradCAM's FFid+ higher, its FFid− lower; margin 0). Null: no difference between the two maps — an
# interval containing 0 is a tie, undecided; the two parts are decided together by `fl.verdicts.from_settings` (its
# generated text is shown with the claim; a tie is never a failure). Units: the test images of every replica's
# fine-tuned CNN (`pair_n_test` per replica, default all); the interval is a two-stage bootstrap over the replicas,
# then the images within them.

# %%
D10 = dict(better="GradCAM", worse="Saliency", seed=seed,
           paper=P.paper.preference_text(P.paper.TABLE_11, "Tiny-ImageNet"))
d10 = P.claim_map_preferred(per_image, **D10)
means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()
out.table(means.reset_index(), "gradcam_vs_saliency")
out.table(d10.table, "gradcam_vs_saliency_comparisons")
for label in ("GradCAM", "Saliency"):
    out.glue(f"ffid_plus_{label.lower()}", float(means.loc[label, "FFid+"]))
    out.glue(f"ffid_minus_{label.lower()}", float(means.loc[label, "FFid−"]))
out.claim(P.claim_map_preferred, per_image, **D10,
          note=f"{dataset} {size}px, {cnn.model_name}, {len(pair.x)} images × {replicas} replicas, N={n_samples}")
means

# %% [markdown]
# ### Fine-tuned on the evaluation set (Table 12)
# The paper's second setting of App. D.10 fine-tunes ResNet-18 on a 5,000-image ImageNet subset and evaluates 500
# of those very images: the F-Fidelity model has seen the evaluated images (with random removal) during its
# fine-tuning. Here each replica's original CNN (the cached one of the studies above) is fine-tuned with the same
# recipe as the pair study's F-Fidelity model (`RandomRemoval(β)`, as many epochs as a ROAR retraining), on the test
# images instead of the training set, and the same images as in Table 11 are scored with GradCAM's and Saliency's
# maps of this model. The claim is F8 again (`claim_map_preferred`, same rule and null), judged in this setting.

# %%
on_eval = {r: fl.train.finetune(
    bases[r][0], test, PAIR_TUNE[r], fl.train.RandomRemoval(beta), data_key={**data_key, "split": "test"},
    base_key=bases[r][1]["key"], test_data=test, device=device, progress=False)[0].to(device).eval()
    for r in REPLICAS}
per_image_eval = pd.concat([P.per_image_ffid(on_eval[r], pair.x, pair.y,
                                             P.pair_maps(on_eval[r], pair.x, pair.y, seed=seed), **pair_ffid)
                            .assign(replica=r) for r in REPLICAS], ignore_index=True)
out.table(per_image_eval, "per_image_ffid_on_eval")
D10_EVAL = dict(better="GradCAM", worse="Saliency", seed=seed, setting="Table 12: fine-tuned on the evaluation set",
                paper=P.paper.preference_text(P.paper.TABLE_12, "ImageNet subset"))
d10_eval = P.claim_map_preferred(per_image_eval, **D10_EVAL)
means_eval = per_image_eval.groupby("explainer")[["FFid+", "FFid−"]].mean()
both = pd.concat([means.assign(setting="Table 11: fine-tuned on the training set"),
                  means_eval.assign(setting="Table 12: fine-tuned on the evaluation set")]).reset_index()
both = both[["setting", "explainer", "FFid+", "FFid−"]]
out.table(both, "gradcam_vs_saliency_settings")
out.table(d10_eval.table, "gradcam_vs_saliency_on_eval_comparisons")
for label in ("GradCAM", "Saliency"):
    out.glue(f"ffid_plus_{label.lower()}_on_eval", float(means_eval.loc[label, "FFid+"]))
    out.glue(f"ffid_minus_{label.lower()}_on_eval", float(means_eval.loc[label, "FFid−"]))
out.glue("accuracy_on_eval", float(np.mean([fl.train.loss_and_accuracy(m, test, batch_size=batch_size,
                                                                         device=device)["accuracy"]
                                            for m in on_eval.values()])))
out.claim(P.claim_map_preferred, per_image_eval, **D10_EVAL,
          note=f"{dataset} {size}px, {cnn.model_name} fine-tuned on the {len(test)} test images, "
               f"{len(pair.x)} of them scored, {replicas} replicas, N={n_samples}")
both

# %% [markdown]
# ### Cost (App. D.11, Table 13)
# ROAR, per explainer: explain the training set, retrain a network, explain the test set and evaluate. F-Fidelity:
# one fine-tuning shared by all explainers, then per explainer: explain the test set with the fine-tuned network and
# evaluate with N Monte-Carlo masks. The original network is needed by both and not counted. Machine-independent
# work is counted in forward-pass equivalents: image passes plus two per backward pass (training images, and the
# images of the gradient explainers), since a backward pass costs about two forward passes.

# %%
PAPER_COST = P.paper.TABLE_13  # F-Fidelity Table 13 (Tiny-ImageNet), seconds summed over GradCAM and Saliency
costs = pair.costs.assign(**{"forward equivalents": lambda d: d["image passes"] + 2 * d["backward passes"]})
part = {
    "ROAR": costs[(costs["stage"] == "explain train set") | costs["model"].str.startswith("ROAR")
                  | ((costs["stage"] == "explain test set") & (costs["model"] == "original"))],
    "F-Fidelity": costs[costs["model"] == "fine-tuned"],
}
STAGE = {"explain train set": "explain train set", "retrain (ROAR)": "train / fine-tune",
         "fine-tune": "train / fine-tune", "explain test set": "evaluate", "evaluate": "evaluate"}
COLUMNS = ["seconds", "image passes", "backward passes", "forward equivalents"]
cost_rows = []
for method, frame in part.items():
    grouped = frame.assign(stage=frame["stage"].map(STAGE)).groupby("stage", sort=False)[COLUMNS].sum()
    grouped.loc["total"] = frame[COLUMNS].sum()
    for stage, row in grouped.iterrows():
        paper = (sum(v for (m, _), v in PAPER_COST.items() if m == method) if stage == "total"
                 else PAPER_COST.get((method, stage)))
        cost_rows.append({"method": method, "stage": stage, **row.to_dict(), "paper seconds": paper})
cost_table = pd.DataFrame(cost_rows).astype({c: int for c in COLUMNS[1:]})
out.table(cost_table, "cost")
out.table(costs, "cost_stages")
total = cost_table[cost_table["stage"] == "total"].set_index("method")
ratio = {c: float(total.loc["F-Fidelity", c] / total.loc["ROAR", c]) for c in ("seconds", "forward equivalents",
                                                                              "image passes", "paper seconds")}
out.glue("cost_ratio_seconds", ratio["seconds"])
out.glue("cost_ratio_work", ratio["forward equivalents"])
out.glue("cost_ratio_passes", ratio["image passes"])
cost_table

# %% [markdown]
# **F9** *F-Fidelity is cheaper than ROAR* (Table 13: 4026 s against 7378 s for two explainers, ratio 0.55), by
# `fl.protocols.ffidelity.claim_cost`. Work is counted exactly, so the F-Fidelity/ROAR ratio of total forward-pass
# equivalents has no sampling null: it is decided by the count of training runs (one ROAR retraining per
# explainer against one fine-tuning of as many epochs) against F-Fidelity's N-mask evaluation — fixed by design, so
# it is shown as a study check, not counted among the paper's claims (its direction: a ratio below 1). Seconds are
# shown with the machine's noise
# (the relative range of the seconds of ROAR's retrainings, which do identical work), never decided on: they
# depend on the machine and on what else it runs, and a verdict must not.

# %%
out.claim(P.claim_cost, cost_table, costs, paper=f"4026 s vs 7378 s for two explainers "
                                               f"(ratio {ratio['paper seconds']:.2f})", seed=seed,
          note=f"two explainers, {cnn.n_roar_epochs} epochs for each retraining and for the fine-tuning, "
               f"{len(pair.x)} test images, N={n_samples}, {len(sparsity)} sizes; forward passes alone: ratio "
               f"{ratio['image passes']:.2f}")

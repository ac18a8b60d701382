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
# Four appendix experiments of the paper, all through the shared protocol `fs.papers.image_ranking_study` that
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
# **Replicas.** The unit of replication is the trained model: every claim here is decided over `replicas` (R)
# independently trained replicas of each network. Each replica r trains with its own seed, derived from `seed`, the
# setting's name and r (`fs.verdicts.replicas`): replica r of the CNN is replica r of {doc}`images_ranking`'s main
# setting ("canvas/main", the same cache entries: its original and fine-tuned models are read, not retrained),
# replica r of the ViT that of "vit/main"; each replica gets its own ROAR retraining, cached per replica. Replica r
# trains and is scored on its own draw of the canvases (`fs.verdicts.replication.data_seed`: split, placements and
# colours), its CNN and ViT on the same draw (the ViT's training canvases are more than the CNN's: `VitModels.n_train`,
# a convolutional stem and more canvases are what a ViT this small needs to learn the task; the test split is one).
# The ranking claims (F7) are decided on one statistic per replica, the others
# (F8, F10) on the test images of every replica with a t interval on the replica means; the cost (F9) is counted in
# every replica's LayerCAM study. The ViT's claims take the FF.OOD check of the ViT as their premise, the CNN's that
# of the CNN (the check of {doc}`images_ranking`'s main setting, recomputed on the same models).

# %% tags=["parameters"]
dataset = "canvas_digits"
data_dir = None
canvas_models = {"palette": "saturated"}  # fs.papers.ffidelity.CanvasModels: images_ranking's CNN and canvases
vit_models = {}  # overrides of fs.papers.ffidelity.VitModels: the ViT (and its fine-tuning) of robustness too
beta = 0.1
alpha = 0.5
n_samples = 10
n_test = 40  # test images per replica scored by the ranking studies (the units behind each replica's statistic)
noise_levels = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
n_seeds = 2
sparsity = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
sg_samples = 4
ig_steps = 8
n_cases = 5
n_table9 = 2  # images shown in the Table 9 figure (the ViT's Grad-CAM, original and fine-tuned model)
pair_n_test = None  # test images per replica of Tables 11–12 (None: all)
n_ood = None  # test images per replica of the mechanism check (None: all)
replicas = 3  # independently trained CNNs and ViTs (with their fine-tuned and ROAR models)
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
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
P = fs.papers.ffidelity
METHODS = ["Fidelity", "ROAR", "R-Fidelity", "F-Fidelity"]

# %% [markdown]
# ## Data and the shared settings
# The convolutional network, its data key and its training recipe are those of {doc}`images_ranking`, so the
# original and fine-tuned CNN of each replica are loaded from the same cache entries (`cnn.train_config(t)` etc.
# with the replica's training seed t, as `CanvasModels.ranking_study`).

# %%
cnn = fs.papers.ffidelity.CanvasModels(**canvas_models)
vit_spec = fs.papers.ffidelity.VitModels(**vit_models)
REPLICAS = range(replicas)
if dataset == "canvas_digits":  # replica r's own draw of the canvases (`fs.verdicts.replication.data_seed`)
    vit_canvas = vit_spec.canvases(cnn)  # the ViT's training canvases (VitModels.n_train); the CNN's test split
    DATA = {r: {"train": (cnn_data := cnn.load(seed, r))[0], "test": cnn_data[1], "key": cnn.data_key(seed, r),
                "vit_train": vit_canvas.load(seed, r)[0], "vit_key": vit_canvas.data_key(seed, r)} for r in REPLICAS}
else:  # a real data set: one, the same for every replica
    train = fl.data.load(dataset, split="train", data_dir=data_dir)
    DATA = dict.fromkeys(REPLICAS, {"train": train, "test": fl.data.load(dataset, split="test", data_dir=data_dir),
                                    "key": {"dataset": dataset}, "vit_train": train, "vit_key": {"dataset": dataset}})
train, test = DATA[0]["train"], DATA[0]["test"]  # replica 0's: shapes, classes and sizes (every replica's alike)
in_channels, size = train[0][0].shape[0], train[0][0].shape[-1]

# %% [markdown]
# The CNN's configuration and the shared settings of the rankings.

# %%
n_classes = train.info["n_classes"]
cnn_config = cnn.model_config(in_channels=in_channels, n_classes=n_classes)
ranking = dict(noise_levels=noise_levels, sparsity=sparsity, n_test=n_test, n_seeds=n_seeds, alpha=alpha, beta=beta,
               n_samples=n_samples, seed=seed, device=device, batch_size=batch_size)
SG_SQ = ("sg_sq_ig", {"nt_samples": sg_samples, "n_steps": ig_steps})
for name, value in {"n_test": n_test, "n_seeds": n_seeds, "replicas": replicas, "n_samples": n_samples,
                    "n_levels": len(sparsity),
                    "vit_dim": vit_spec.dim, "vit_depth": vit_spec.depth, "vit_heads": vit_spec.heads,
                    "vit_stem": vit_spec.stem_width, "vit_n_train": len(DATA[0]["vit_train"]),
                    "cnn_n_train": len(train)}.items():
    out.glue(name, value)

# %% [markdown]
# ## Tables 5 and 10: ViT with SG-SQ, CNN with LayerCAM
# Six explainers per table (the clean map degraded at ξ ∈ {0, 0.2, …, 1}), scored by Fidelity, ROAR (a network
# retrained on explanation-guided removal), R-Fidelity and F-Fidelity (the fine-tuned network and its own maps).
# The ViT is trained with AdamW (weight decay 1e-4, as the paper's Adam) and a cosine schedule, and fine-tuned with
# the same recipe (at its `finetune_lr`); `fs.papers.ffidelity.VitModels` holds the ViT's settings, shared
# with `robustness` (Table 8's ViT row). With `n_shards` > 1 the runner scores the (seed, noise level) grid in
# shards (`fs.artifacts.sharded`; each cell depends on that cell only) and the cells below see the same curves. Each
# study runs once per replica; `studies[k, r]` is replica r's.

# %% tags=["shard"]
STUDIES = {  # each study of replica `replica`: trained with `replica.seed`
    "ViT SG-SQ": lambda replica, cells: vit_spec.ranking_study(  # VitModels' recipe
        DATA[replica.index]["vit_train"], DATA[replica.index]["test"], {"ViT SG-SQ": SG_SQ},
        data_key=DATA[replica.index]["vit_key"], replica=replica, methods=METHODS, cells=cells,
        **ranking),
    "CNN LayerCAM": lambda replica, cells: fs.papers.image_ranking_study(  # images_ranking's CNN of replica r
        cnn.model_name, cnn_config, DATA[replica.index]["train"], DATA[replica.index]["test"],
        {"CNN LayerCAM": ("layercam", {})}, data_key=DATA[replica.index]["key"],
        train_config=cnn.train_config(replica.seed), finetune_config=cnn.finetune_config(replica.seed),
        roar_config=cnn.roar_config(replica.seed), methods=METHODS, cells=cells,
        draw_key=fs.verdicts.replication.replica_draws(seed, replica), **ranking),  # the replica's own draws
}
runs = P.ReplicaStudies(lambda k, replica, cells: STUDIES[k](replica, cells),
                        {"ViT SG-SQ": fs.verdicts.replicas(seed, "vit/main", replicas),
                         "CNN LayerCAM": fs.verdicts.replicas(seed, "canvas/main", replicas)}, column="study")
grid = [(s, k) for s in range(n_seeds) for k in range(len(noise_levels))]
scored = fs.artifacts.sharded("curves", runs.score_cells, grid, shard=shard, n_shards=n_shards)

# %%
studies = runs.complete(scored)  # the reduce step of a sharded run: models from the cache, the grid from shards
accuracy = pd.DataFrame([{"study": k, "replica": r, "model": m, "test accuracy": a}
                         for (k, r), st in studies.items() for m, a in st.accuracy.items()])
out.table(accuracy, "accuracy")
for k in STUDIES:
    out.glue(f"accuracy_{k.split()[0].lower()}",
             float(accuracy[(accuracy["study"] == k) & (accuracy["model"] == "original")]["test accuracy"].mean()))
constant = pd.concat([st.constant_maps().assign(study=k, replica=r) for (k, r), st in studies.items()],
                     ignore_index=True)  # maps without a ranking (an all-zero map): ordered by the random ties rule
out.table(constant, "constant_maps")
accuracy.pivot_table(index=["study", "model"], columns="replica", values="test accuracy", sort=False)

# %% [markdown]
# Is removal out of distribution for these networks? The chapter's mechanism check FF.OOD
# (`fs.papers.ffidelity.claim_ood_check`, as in {doc}`images_ranking`): every test image loses round(β·n) of its
# background pixels (5 draws), and the original model must lose accuracy to them while the fine-tuned one loses
# less, per image, a t interval on the replica means. The ViT's check is recorded here; the CNN's is
# {doc}`images_ranking`'s main check (the same models and data), recomputed as the premise of the CNN's claims.

# %%
has_mask = getattr(test, "mask", None) is not None
MECHANISM = {}
ood_draws = {(k, r): fs.verdicts.replication.replica_draws(seed, runs.replica(k, r), "ood")  # each replica's masks
             for k, r in studies}
ood_inputs = {r: (DATA[r]["test"].x[:n_ood].to(device), DATA[r]["test"].y[:n_ood].to(device),  # its own test split
                  DATA[r]["test"].mask.flatten(1)[:n_ood].to(device)) for r in REPLICAS} if has_mask else {}
x_ood = ood_inputs[0][0] if has_mask else None

# %% [markdown]
# Where the data carry a ground-truth mask, the mechanism check FF.OOD on the ViT's and the CNN's models.

# %%
if has_mask:
    ood = pd.concat([P.ood_per_input({m: st.models[m] for m in ("original", "fine-tuned")}, *ood_inputs[r],
                                     beta=beta, n_draws=5, generator=ood_draws[k, r], batch_size=batch_size)
                     .assign(study=k, replica=r) for (k, r), st in studies.items()], ignore_index=True)
    out.table(ood, "ood_per_input")
    vit_check = out.claim(fs.verdicts.replicated(
        P.claim_ood_check, ood[ood["study"] == "ViT SG-SQ"], data="main canvases, ViT"),
        note=f"{len(x_ood)} test images × {replicas} replicas, 5 draws of "
             f"{int(ood['k'].max())} background pixels").claim
    MECHANISM["ViT SG-SQ"] = P.mechanism(vit_check)
    cnn_check = P.claim_ood_check(ood[ood["study"] == "CNN LayerCAM"], data="main canvases, CNN")
    MECHANISM["CNN LayerCAM"] = P.mechanism(cnn_check)
    ood_table = pd.concat([vit_check.table, cnn_check.table], ignore_index=True)
    out.table(ood_table, "ood_check")
    for k in STUDIES:
        part = ood[ood["study"] == k].groupby("model")["loss"].mean()
        out.glue(f"ood_gap_{k.split()[0].lower()}", float(part["original"]))
        out.glue(f"ood_gap_{k.split()[0].lower()}_finetuned", float(part["fine-tuned"]))
    out.glue("ood_k", int(ood["k"].max()))
    display_diagnostic = ood_table
else:  # a dataset without a ground-truth mask (CIFAR-100): no background to remove
    MECHANISM = {k: None for k in STUDIES}
    display_diagnostic = None
display_diagnostic

# %% [markdown]
# Cells: our mean ± std, the paper's value in parentheses (Table 5: ViT on CIFAR-100, SG-SQ; Table 10: ResNet-9 on
# CIFAR-100, LayerCAM); ours over the seeds of every replica, pooled. Ranks are among the four methods (1 best).

# %%
PAPER = {"ViT SG-SQ": P.paper.TABLE_5, "CNN LayerCAM": P.paper.TABLE_10}  # CIFAR-100: ViT; ResNet-9, LayerCAM
stacked = {k: [studies[k, r] for r in REPLICAS] for k in STUDIES}  # the replicas' curves along the seeds axis
tidy = pd.concat([fs.papers.ranking_correlations(
    {key: torch.cat([st.P[key] for st in sts]) for key in sts[0].P},
    {key: torch.cat([st.Q[key] for st in sts]) for key in sts[0].Q}, noise_levels=noise_levels, sparsity=sparsity,
    methods=METHODS, group="explainer") for sts in stacked.values()], ignore_index=True)
tidy["paper (CIFAR-100)"] = [PAPER[t.explainer][t.row, t.correlation][METHODS.index(t.method)]
                             for t in tidy.itertuples()]
out.table(tidy, "correlations_tidy")
display_table = fs.papers.table_layout(tidy, group="explainer", paper="paper (CIFAR-100)")
out.table(display_table, "tables_5_10_layout")
display_table

# %%
curves = pd.concat([st.curves.assign(replica=r) for (k, r), st in studies.items()], ignore_index=True)
out.table(curves, "curves")
spread = fs.papers.separation(curves, group="explainer")
out.table(spread, "separation")
for i, label in enumerate(STUDIES):  # one figure per study: methods in rows, the + and − curves in columns
    fig = fl.plots.curves_per_level(curves[curves["explainer"] == label], methods=METHODS, title=label)
    out.figure(fig, "curves_per_level" if i == 0 else f"curves_per_level_{i + 1}")

# %% [markdown]
# ## Claims of Tables 5 and 10
# **F7** *F-Fidelity recovers the ground-truth ranking better than Fidelity, ROAR and R-Fidelity* — with a ViT
# (Table 5) and with LayerCAM (Table 10). The claim function is `fs.papers.ffidelity.claim_ranking`, as F1 in
# {doc}`images_ranking`, by the rule F7 (F1's rule, the same margins per competitor; below, as registered).
# Premises: Fidelity's oriented micro correlation is not already within 0.05 of +1; at least one method's
# correlation with the ground-truth order lies beyond its chance range with that order permuted over the six
# explainers (`fs.papers.ground_truth_null`); the network's FF.OOD.

# %%
out.rules("F7")

# %%
PAPER_RANKS = {label: P.paper.micro_ranks_text(table) for label, table in PAPER.items()}  # Tables 5 and 10
TABLE = {"ViT SG-SQ": "Table 5, ViT", "CNN LayerCAM": "Table 10, LayerCAM"}
cells = pd.concat([fs.papers.micro_cells(st.P, st.Q, noise_levels=noise_levels, sparsity=sparsity,
                                            methods=METHODS, group="explainer").assign(replica=r)
                   for (k, r), st in studies.items()], ignore_index=True)
out.table(cells, "micro_cells")
nulls = pd.concat([fs.papers.ground_truth_null(st.P, st.Q, noise_levels=noise_levels, sparsity=sparsity,
                                                  methods=METHODS, group="explainer", seed=seed).assign(replica=r)
                   for (k, r), st in studies.items()], ignore_index=True)
ranks = cells.groupby(["explainer", "method"])["micro rank"].mean().unstack()
comparison_tables = []
for label in STUDIES:
    claim = out.claim(fs.verdicts.replicated(
        P.claim_ranking, cells, nulls, group="explainer", value=label, methods=METHODS, rule_id="F7",
        n_images=n_test, source=TABLE[label], mechanism=MECHANISM[label],
        paper=f"CIFAR-100 micro ranks (MoRF/LeRF/MoRF-LeRF): {PAPER_RANKS[label]}"),
        note=f"{dataset} {size}px, {replicas} replicas × {n_test} test images ({n_seeds} seeds × "
             f"{len(sparsity)} levels each), N={n_samples}").claim
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
# `fs.papers.ffidelity.map_agreement` (Spearman ρ and top-10 % overlap, each against the same statistic with the
# maps of other images). Claim **F10** (`claim_maps_preserved`, its rule F10) is judged on the Grad-CAM maps of every
# replica's test images, a t interval on the replica means; its chance level is that of the mean over the replicas
# (each permutation draw averaged over them).

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

# %% [markdown]
# Grad-CAM maps of the original and the fine-tuned ViT on the first test images.

# %%
out.table(vit_agreement_table, "vit_maps_agreement")
fig = fl.plots.map_columns(vit.x[:n_table9].cpu(), {
    f"Grad-CAM, {m}": vit_maps[0]["attention Grad-CAM"][m][:n_table9].reshape(-1, *vit.x.shape[2:]).cpu()
    for m in ("original", "fine-tuned")}, alpha=1.0,  # the maps alone, beside the image
    colorbar="attribution, scaled per map (0–1)")
out.figure(fig, "table_9_vit_maps")
out.claim(fs.verdicts.replicated(
    P.claim_maps_preserved, *vit_agreement["attention Grad-CAM"], value="ViT attention Grad-CAM",
    mechanism=MECHANISM["ViT SG-SQ"]),
    note=f"{dataset} {size}px, {len(vit.x)} test images × {replicas} replicas; Spearman of the pixel maps, "
         "chance = maps of other images")
vit_agreement_table

# %% [markdown]
# ## GradCAM against Saliency (App. D.10)
# Per test image, FFid± (mean over explanation sizes, `P.per_image_ffid`) of GradCAM's and Saliency's maps on
# F-Fidelity's fine-tuned CNN of every replica — the fine-tuned models of the LayerCAM study above, i.e. of
# {doc}`images_ranking`'s main setting (Table 11: fine-tuned on the training set). The paper's second setting
# (Table 12) fine-tunes ResNet-18 on a 5,000-image ImageNet subset and evaluates 500 of those very images; here each
# replica's original CNN is fine-tuned with the same recipe (`RandomRemoval(β)`, as many epochs as a ROAR
# retraining) on the test images instead, and the same images are scored with the maps of that model. The grid
# shows replica 0's first few images.

# %%
PAIRS = {r: tuple(t.to(device) for t in fl.data.to_tensors(DATA[r]["test"], pair_n_test))  # (lazy real folders)
         for r in REPLICAS}  # each replica's own test split
x_pair, y_pair = PAIRS[0]  # replica 0's: the cases shown below
pair_ffid = dict(sparsity=sparsity, alpha=alpha, beta=beta, n_samples=n_samples, seed=seed, batch_size=batch_size)
tuned = {r: studies["CNN LayerCAM", r].models["fine-tuned"] for r in REPLICAS}
pair_maps = {r: P.pair_maps(tuned[r], *PAIRS[r], seed=seed) for r in REPLICAS}
per_image = pd.concat([P.per_image_ffid(tuned[r], *PAIRS[r], pair_maps[r], **pair_ffid).assign(replica=r)
                       for r in REPLICAS], ignore_index=True)
out.table(per_image, "per_image_ffid")  # constant maps flagged
out.glue("n_pair", len(x_pair))
constant_pair = per_image.groupby(["explainer"])["constant map"].sum()
out.glue("constant_gradcam_pair", int(constant_pair.get("GradCAM", 0)))

# %% [markdown]
# Replica 0's first test images, GradCAM's map beside Saliency's, with their FFid+ and FFid−.

# %%
cases = per_image[(per_image["replica"] == 0) & (per_image["case"] <= n_cases)]
out.table(cases, "cases")
images, maps, titles = [], [], []
for i in range(min(n_cases, len(x_pair))):
    for label in ("GradCAM", "Saliency"):
        c = cases[(cases["case"] == i + 1) & (cases["explainer"] == label)].iloc[0]
        images.append(x_pair[i].cpu())
        maps.append(pair_maps[0][label][i].cpu())
        titles.append(f"{i + 1}: {label}\nFFid+ {c['FFid+']:.2f}, FFid− {c['FFid−']:.2f}")
for start in range(0, len(images), 6):  # three cases (six maps) per figure, each large enough to read
    part = slice(start, start + 6)
    fig = fl.plots.image_grid(images[part], titles=titles[part], ncols=2, attributions=maps[part], size=2.2,
                              colorbar="attribution, scaled per map (0–1)")
    out.figure(fig, "cases" if start == 0 else f"cases_{start // 6 + 1}")

# %% [markdown]
# Table 12's variant: the fine-tuning on the evaluation set, for every replica.

# %%
CNN = runs.replicas["CNN LayerCAM"]  # images_ranking's main-setting replicas
PAIR_TUNE = {rep.index: fl.train.TrainConfig(epochs=cnn.n_roar_epochs, lr=1e-3, batch_size=64, seed=rep.seed)
             for rep in CNN}  # Table 12's fine-tuning: as many epochs as a ROAR retraining
bases = {rep.index: fl.train.fit(cnn.model_name, cnn_config, DATA[rep.index]["train"], cnn.train_config(rep.seed),
                                 data_key=DATA[rep.index]["key"], test_data=DATA[rep.index]["test"], device=device,
                                 progress=False) for rep in CNN}  # from the cache
on_eval = {r: fl.train.finetune(
    bases[r][0], DATA[r]["test"], PAIR_TUNE[r], fl.train.RandomRemoval(beta),
    data_key={**DATA[r]["key"], "split": "test"}, base_key=bases[r][1]["key"], test_data=DATA[r]["test"],
    device=device, progress=False)[0].to(device).eval() for r in REPLICAS}
per_image_eval = pd.concat([P.per_image_ffid(on_eval[r], *PAIRS[r], P.pair_maps(on_eval[r], *PAIRS[r], seed=seed),
                                             **pair_ffid).assign(replica=r) for r in REPLICAS], ignore_index=True)
out.table(per_image_eval, "per_image_ffid_on_eval")
means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()

# %% [markdown]
# Tables 11 and 12 side by side: the mean FFid+ and FFid− per explainer.

# %%
means_eval = per_image_eval.groupby("explainer")[["FFid+", "FFid−"]].mean()
both = pd.concat([means.assign(setting="Table 11: fine-tuned on the training set"),
                  means_eval.assign(setting="Table 12: fine-tuned on the evaluation set")]).reset_index()
both = both[["setting", "explainer", "FFid+", "FFid−"]]
out.table(both, "gradcam_vs_saliency_settings")
for label in ("GradCAM", "Saliency"):
    out.glue(f"ffid_plus_{label.lower()}", float(means.loc[label, "FFid+"]))
    out.glue(f"ffid_minus_{label.lower()}", float(means.loc[label, "FFid−"]))
    out.glue(f"ffid_plus_{label.lower()}_on_eval", float(means_eval.loc[label, "FFid+"]))
    out.glue(f"ffid_minus_{label.lower()}_on_eval", float(means_eval.loc[label, "FFid−"]))
out.glue("accuracy_on_eval", float(np.mean([fl.train.loss_and_accuracy(m, DATA[r]["test"], batch_size=batch_size,
                                                                         device=device)["accuracy"]
                                            for r, m in on_eval.items()])))
both

# %% [markdown]
# ### Claim (App. D.10)
# **F8** *F-Fidelity prefers GradCAM to Saliency: higher FFid+ and lower FFid−* (Tiny-ImageNet: 0.2286 vs 0.2020
# and 0.0547 vs 0.1050, Table 11; ImageNet subset: 0.1123 vs 0.0672 and 0.0046 vs 0.0091, Table 12), by
# `fs.papers.ffidelity.claim_map_preferred`: two named parts, each per image GradCAM's lead (FFid+ higher,
# FFid− lower), a t interval on the replica means against half the paper's gap in that table (rules F8.plus,
# F8.minus); one part of two is partly (rule F8). Decided once per table; premise: the CNN's FF.OOD.

# %%
for frame, setting, where, table in ((per_image, "Table 11", "Tiny-ImageNet", P.paper.TABLE_11),
                                     (per_image_eval, "Table 12", "ImageNet subset", P.paper.TABLE_12)):
    preferred = out.claim(fs.verdicts.replicated(
        P.claim_map_preferred, frame, setting=setting, mechanism=MECHANISM["CNN LayerCAM"],
        paper=P.paper.preference_text(table, where)),
        note=f"{dataset} {size}px, {cnn.model_name} fine-tuned on the "
             f"{'training set' if setting == 'Table 11' else f'{len(test)} test images'}, "
             f"{len(x_pair)} images × {replicas} replicas, N={n_samples}").claim
    out.table(preferred.table, "gradcam_vs_saliency_comparisons" if setting == "Table 11"
              else "gradcam_vs_saliency_on_eval_comparisons")

# %% [markdown]
# ### Cost (App. D.11, Table 13)
# ROAR, per explainer: explain the training set, retrain a network, explain the test set and evaluate. F-Fidelity:
# one fine-tuning shared by all explainers, then per explainer: explain the test set with the fine-tuned network and
# evaluate with N Monte-Carlo masks. Counted in every replica's LayerCAM study (one explainer: more explainers only
# add retrainings to ROAR), the fine-tuning at as many epochs as a ROAR retraining (as the paper's 100 and 100,
# `P.cost_table`); the original network, needed by both, is not counted. Machine-independent work is counted in
# forward-pass equivalents: image passes plus two per backward pass (training images, and the images of the
# gradient explainers), since a backward pass costs about two forward passes. Seconds are those of the run that
# trained each model (a model read from the cache keeps the seconds of its training).

# %%
PAPER_COST = P.paper.TABLE_13  # F-Fidelity Table 13 (Tiny-ImageNet), seconds summed over GradCAM and Saliency
cost_tables = pd.concat([P.cost_table(studies["CNN LayerCAM", r].costs, finetune_epochs=cnn.n_finetune_epochs,
                                      roar_epochs=cnn.n_roar_epochs).assign(replica=r) for r in REPLICAS],
                        ignore_index=True)
cost_tables["paper seconds"] = [sum(v for (m, _), v in PAPER_COST.items() if m == row.method)
                                if row.stage == "total" else PAPER_COST.get((row.method, row.stage))
                                for row in cost_tables.itertuples()]
out.table(cost_tables, "cost")
cost_table = cost_tables[cost_tables["replica"] == 0].drop(columns="replica")
total = cost_tables[cost_tables["stage"] == "total"].groupby("method")[["seconds", "forward equivalents",
                                                                          "image passes"]].mean()
ratio = {c: float(total.loc["F-Fidelity", c] / total.loc["ROAR", c]) for c in total.columns}
paper_ratio = sum(v for (m, _), v in PAPER_COST.items() if m == "F-Fidelity") / sum(
    v for (m, _), v in PAPER_COST.items() if m == "ROAR")
out.glue("cost_ratio_seconds", ratio["seconds"])
out.glue("cost_ratio_work", ratio["forward equivalents"])
out.glue("cost_ratio_passes", ratio["image passes"])
out.claim(fs.verdicts.replicated(
    P.claim_cost, cost_tables, paper=f"4026 s vs 7378 s for two explainers (ratio {paper_ratio:.2f})"),
    note=f"LayerCAM, {cnn.n_roar_epochs} epochs for each retraining and (counted) for the fine-tuning, "
         f"{n_test} test images, N={n_samples}, {len(sparsity)} sizes, {replicas} replicas; forward passes "
         f"alone: ratio {ratio['image passes']:.2f}")
cost_table

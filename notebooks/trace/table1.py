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
# # TRACE against attribution methods: Table 1, Appendix G, Fig. 1 and Fig. 2b
#
# {cite:t}`wang2024trace` find, by simulated annealing, the deletion order that maximises the LeRF − MoRF
# deletion score itself (TRACE-SA-Le−Mo) and compare it with eight attribution methods on six ImageNet models
# under three references (Table 1: probabilities; Appendix G: logits). They claim that TRACE beats every method
# in every setting (T2), that the trajectory optimised for the probability (T-p) beats the one optimised for the
# logit (T-y) when scored with probabilities, and that TRACE's score barely moves with the reference on 7×7
# patches while pixel-level scores of Gradient and IG move a lot (T5, Fig. 1). Here the models are small CNNs
# trained on coloured canvas digits, those of `trace_models`; the `paper` profile sets `torchvision_models`
# and `dataset = "imagenet_val"`.

# %% tags=["parameters"]
trace_models = {}  # overrides of fs.papers.trace.TraceModels (the models of trace/searches, trace/random_test)
replicas = 3  # independently trained replicas of every stand-in model (1 for the paper's pretrained weights)
n_images = 10  # searched images per replica: each replica is evaluated on its own n_images test images
premise_replicas = 5  # trained replicas per model of premise (a), the claims' `replicas` and more (pretrained: 1)
premise_images = 70  # test images per replica of premise (a), each deleted along its own random order
edge = 7
references = ["zero", "mean", "blur"]
blur_kernel = 5
blur_sigma = 7.0
iterations = 50
eta = 0.999
methods = ["Grad", "GC", "IBA", "RISE", "EP", "EBP", "IG", "IxG", "Random"]
rise_masks = 500
ep_iterations = 100
ig_steps = 16
pixel_methods = ["GC", "IG", "Grad"]
pixel_points = 11
dataset = "canvas_digits"
data_dir = None
torchvision_models = []
seed = 0
device = "cpu"
batch_size = 64  # per forward call: on a CPU core these models run fastest per input at 64 (caches); GPUs want more

# %%
import zlib

import pandas as pd
import torch

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
S = fl.metrics.search
P = fs.papers.trace

# %% [markdown]
# ## Models and images
# Default: coloured canvas digits of `image_size`² pixels (foreground fraction `r`; both in `trace_models`, shared
# with the other TRACE notebooks), normalised per channel, so that the zero reference is the dataset's mean colour as
# in the paper; one CNN per entry of its `settings` trained with Adam (`fs.recipes.canvas_classifier`, cached),
# `replicas` times (`fs.papers.trace.replica_models`). Each replica r draws its own canvases (from `seed` and r,
# `fs.verdicts.replication.data_seed`, the same for every model of the replica) and trains with its own seed
# (initialisation and batch order), derived from `seed`, the model's name and r (`fs.verdicts.replicas`), the seeds
# of the other TRACE notebooks' replicas too. Replica r is evaluated on its own `n_images` test
# digits (images r·`n_images` … (r + 1)·`n_images` − 1) and their labels (the paper explains the ground-truth
# label), so every claim pools `replicas` × `n_images` searched images per model and takes the t interval on the
# replica means (the trained model is the unit of replication, its images the units within it). trace/searches and
# trace/random_test read these replicas from the cache. With the paper's pretrained weights there is nothing to
# retrain: `replicas` is 1 there. The grid has t = `edge`² patches.

# %%
canvas = P.TraceModels(**trace_models)
SOURCE = dict(seed=seed, dataset=dataset, data_dir=data_dir, torchvision_models=torchvision_models, device=device)
setups = P.replica_models(canvas, replicas, n_images=n_images, **SOURCE)  # {r: replica r's models and images}
REPLICAS = list(setups)
setup = setups[0]
info = P.models_info(setups)
t = edge * edge
out.table(info, "models")
out.glue("n_images", n_images)
out.glue("replicas", replicas)
out.glue("n_units", n_images * replicas)
out.glue("n_models", len(setup.models))
out.glue("t", t)
out.glue("patch_side", setup.x.shape[-1] // edge)
out.glue("iterations", iterations)
out.glue("accuracy_min", round(float(info["test accuracy"].min()), 3))
fl.plots.readable(info)

# %% [markdown]
# ## References
# zero (0 in normalised space: the dataset's mean colour), mean (the image's scalar mean over all channels) and
# blur (a Gaussian blur of the image with a `blur_kernel`² kernel and σ = `blur_sigma`; the paper's 31×31, σ = 56
# at 224 px scaled to our image size: both an almost flat box filter over a seventh of the image).

# %%
REFERENCES = {r: P.references_of(setups[r].x, references, blur_kernel=blur_kernel, blur_sigma=blur_sigma)
              for r in REPLICAS}  # the blur reference is an image per image

# %% [markdown]
# ## Attribution methods and TRACE
# Each method explains the label; its pixel map is averaged over every patch (|·| first for IG and I×G) and the
# patches are sorted ascending into a trajectory (`fs.papers.trace.TABLE1_METHODS`). RISE uses `rise_masks`
# masks, Extremal Perturbations `ep_iterations` optimisation steps, IG `ig_steps` steps. IBA is the per-sample
# information bottleneck of Schulz et al. (`method="iba"`, the authors' defaults: β = 10, 10 Adam steps of lr 1 on
# 10 noise copies, λ smoothed with σ = 1) at the layer Grad-CAM reads; its activation statistics come from the first
# training images (`Setup.reference`, 1,000; the authors use 10,000). TRACE-SA-Le−Mo starts
# from TRACE-Greedy-Le and runs `iterations` annealing steps (the paper: 5,000) with T0 = 0.1 for -p, 2 for -y
# and η = `eta`, once per model, reference and output: T-p maximises the probability score, T-y the logit
# score.

# %%
out.glue("rise_masks", rise_masks)
out.glue("ep_iterations", ep_iterations)
out.glue("iba_reference", len(setup.reference))
OPTIONS = {"RISE": {"n_masks": rise_masks}, "EP": {"max_iter": ep_iterations}, "IG": {"n_steps": ig_steps}}
METHODS = {name: (P.TABLE1_METHODS[name][0], {**P.TABLE1_METHODS[name][1], **OPTIONS.get(name, {})},
                  P.TABLE1_METHODS[name][2]) for name in methods}

# one random stream per model (keyed by its name), replica and search: a model's numbers do not change when other
# models are added, removed or reordered
KEYS = {m: zlib.crc32(m.encode()) for m in setup.models}
maps, searches = {}, {}
for r in REPLICAS:
    su, x, y = setups[r], setups[r].x, setups[r].y
    for m, model in su.models.items():
        maps[r, m] = P.method_maps(model, x, y, METHODS, batch_size=batch_size, layer=su.layers[m],
                                   generator=torch.Generator().manual_seed(fl.perturb.keyed_seed(seed, KEYS[m], r)),
                                   statistics_data=su.reference)
        for i, ref in enumerate(references):
            for j, output in enumerate(("prob", "logit")):
                g = torch.Generator().manual_seed(fl.perturb.keyed_seed(seed, KEYS[m], i, j, r))
                searches[r, m, ref, output] = S.anneal(model, x, edge=edge, objective="le-mo", iterations=iterations,
                                                       eta=eta, generator=g, reference=REFERENCES[r][ref],
                                                       output=output, target=y, batch_size=batch_size)

# %%
scores, curves = [], []
for r in REPLICAS:
    su, x, y = setups[r], setups[r].x, setups[r].y
    for m, model in su.models.items():
        trajs = P.trajectories(maps[r, m], x, METHODS, edge=edge)
        for ref, reference in REFERENCES[r].items():
            trajs_ref = {"T-y": searches[r, m, ref, "logit"].trajectory, "T-p": searches[r, m, ref, "prob"].trajectory,
                         **trajs}
            s, c = P.deletion_frames(model, x, y, trajs_ref, edge=edge, reference=reference, batch_size=batch_size,
                                     labels={"replica": r, "model": m, "reference": ref})
            scores.append(s)
            curves.append(c)
scores, curves = pd.concat(scores, ignore_index=True), pd.concat(curves, ignore_index=True)
out.table(scores, "scores")
ORDER = ["T-y", "T-p", *METHODS]

# %% [markdown]
# ## Table 1 and Appendix G
# Mean over the images of ΣLeRF − ΣMoRF (t + 1 points each, probabilities for Table 1, logits for Appendix G),
# per reference and model; higher is better. Below it, the paper's Table 1 (ResNet-18 rows for the zero, mean and
# blur references) for scale: the paper's numbers are on 224-px ImageNet images with t = 49 as well.

# %%
table1, appendix_g = (P.table_layout(scores, output=o, methods=ORDER) for o in ("probability", "logit"))
out.table(table1, "table1")
out.table(appendix_g, "appendix_g")
PAPER_TABLE1_RESNET18 = P.paper.TABLE1_RESNET18  # Table 1, rows (i) ResNet-18
out.table(PAPER_TABLE1_RESNET18, "paper_table1_resnet18")
table1.style.format(precision=2, subset=ORDER)

# %%
appendix_g.style.format(precision=2, subset=ORDER)

# %% [markdown]
# ## T2: TRACE beats every method
# The claim functions `fs.papers.trace.claim_beats_methods` (per model) and `claim_probability_beats_logit`
# decide T2 and T2b by their rules, registered above them in `fs.papers.trace.claims`; both are in the claims
# table, and their rules are listed below. TRACE optimises the very score it is judged by, so that it wins at all
# is close to built in: T2 asks, per model, that T-p beat every method under every reference by the paper's size
# (each method's shortfall from T-p as a share of T-p's score). T2b: scored with probabilities, T-p (optimised for
# the probability) leads T-y (optimised for the logit) by a non-negligible share of its score ("their discrepancy
# is non-negligible"), in every model × reference cell — a claim that can fail, where T-p merely being ahead could
# not. Their premise is the
# chapter's mechanism, on every model and reference: deleting patches along a random order (the "Random" map)
# lowers the prediction, and the search beats random orders.

# %% [markdown]
# Part (a) of the premise, that deleting patches lowers the prediction at all under a reference, needs no search:
# it is decided on its own images, `premise_images` test images on each of `premise_replicas` trained replicas of
# every model (the claims' replicas first, then more trained by the same recipe; replica r's images are
# r·`premise_images` … (r + 1)·`premise_images` − 1), each deleted along its own random order (the "Random" map).
# The searches cost too much for more than `n_images` images on `replicas` replicas, and a t interval on few
# replica means is wide (2 degrees of freedom on three); part (a) is cheap, so it gets the replicas and images its
# power analysis asks. Part (b) compares the searches with the random orders of the searched images themselves.

# %%
PREMISE_REPLICAS = REPLICAS if torchvision_models else list(range(premise_replicas))  # pretrained: one model
if len(PREMISE_REPLICAS) < len(REPLICAS):
    raise ValueError(f"premise_replicas must be at least replicas ({replicas}), got {premise_replicas}")
RANDOM = {"Random": P.TABLE1_METHODS["Random"]}
PREMISE_KEY = zlib.crc32(b"premise (a)")  # the premise's random orders: a stream of their own
premise_scores = []

# %% [markdown]
# The premise's scores: the random orders on each premise replica's own images.

# %%
for r, su in P.replica_models(canvas, len(PREMISE_REPLICAS), n_images=premise_images, **SOURCE).items():
    x, y = su.x, su.y
    refs = P.references_of(x, references, blur_kernel=blur_kernel, blur_sigma=blur_sigma)
    for m, model in su.models.items():
        g = torch.Generator().manual_seed(fl.perturb.keyed_seed(seed, KEYS[m], r, PREMISE_KEY))
        trajs = P.trajectories(P.method_maps(model, x, y, RANDOM, batch_size=batch_size, generator=g), x, RANDOM,
                               edge=edge)
        for ref, reference in refs.items():
            premise_scores.append(P.deletion_frames(model, x, y, trajs, edge=edge, reference=reference,
                                                    outputs=("prob",), batch_size=batch_size,
                                                    labels={"replica": r, "model": m, "reference": ref})[0])
premise_scores = pd.concat(premise_scores, ignore_index=True)
out.table(premise_scores, "premise_scores")
out.glue("premise_replicas", len(PREMISE_REPLICAS))
out.glue("premise_images", premise_images)

# %%
out.rules("T2", "T2b")

# %%
t2_claims = [out.claim(fs.verdicts.replicated(P.claim_beats_methods, scores, model=m, target="T-p", exclude=("T-y",),
                        trained=not torchvision_models, premise_scores=premise_scores)).claim
             for m in setup.models]
t2 = pd.concat([c.table for c in t2_claims], ignore_index=True)
out.table(t2, "t2_comparisons")
t2b = out.claim(fs.verdicts.replicated(P.claim_probability_beats_logit, scores, target="T-p", other="T-y",
                 trained=not torchvision_models, premise_scores=premise_scores)).claim
out.table(t2b.table, "t2_p_vs_y")
premise = P.table1_premises(scores, searches=("T-p", "T-y"), premise_scores=premise_scores)
out.table(premise, "premise")
prob = scores[scores.output == "probability"]
fl.plots.readable(premise)

# %% [markdown]
# ## Fig. 2b: mean deletion curves (zero reference)
# For the first model: (i) LeRF and (ii) MoRF curves of the logit, (iii) LeRF and (iv) MoRF of the probability,
# averaged over the images, TRACE-y and TRACE-p against every method.

# %%
first = next(iter(setup.models))
# TRACE's two variants in strong colours, Random grey and dashed, the paper's best attribution method (GC, Table 1)
# and ours (highest mean ΣLeRF − ΣMoRF in probability on this model) picked out, the other methods muted
ours_best = (scores[(scores.model == first) & (scores.output == "probability") & ~scores.method.isin(["T-y", "T-p",
             "Random"])].groupby("method")["LeRF − MoRF"].mean().idxmax())
SHOWN = {"T-y": "T-y (TRACE, logit)", "T-p": "T-p (TRACE, prob.)", "Random": "Random (chance)"}
if "GC" in ORDER:
    SHOWN["GC"] = "GC (paper's best)"
SHOWN[ours_best] = f"{ours_best} (our best)" if ours_best != "GC" else "GC (best, paper and ours)"
SHOWN = {m: SHOWN.get(m, m) for m in ORDER}
STYLE_2B = fl.plots.key_palette(ORDER, key=("T-y", "T-p"), best=[m for m in ("GC", ours_best) if m in ORDER])
order_2b = sorted(ORDER, key=lambda m: (STYLE_2B[m]["zorder"] < 3, ORDER.index(m)))  # key methods first in the legend

# %% [markdown]
# The deletion curves of the first model's first replica, in four panels.

# %%
fig, axes = fl.plots.panels(2, 2, height=2.4, sharex=True)
panels = [("logit", "LeRF"), ("logit", "MoRF"), ("probability", "LeRF"), ("probability", "MoRF")]
sel = curves[(curves.model == first) & (curves.reference == references[0]) & (curves.replica == REPLICAS[0])]
for ax, (output, criterion), tag in zip(axes.flat, panels, ["i", "ii", "iii", "iv"]):
    panel = sel[(sel.output == output) & (sel.criterion == criterion)]
    mean = panel.groupby(["method", "deleted"], sort=False)["value"].mean()
    for m in order_2b:
        if m in mean.index.get_level_values(0):
            ax.plot(mean.loc[m].index, mean.loc[m].to_numpy(), label=SHOWN[m], **STYLE_2B[m])
    ax.set(title=f"({tag}) {criterion}, {output}", xlabel="patches deleted" if tag in ("iii", "iv") else "",
           ylabel=output)
fig.tight_layout()
fl.plots.legend_outside(fig, where="below", title="", ncol=3)
out.figure(fig, "fig2b")

# %% [markdown]
# ## Fig. 1 and T5: the reference at pixel level and with patches
# Fig. 1: pixel-level deletion curves (every pixel a unit, t = H·W) of Grad-CAM, IG and Gradient under the three
# references, LeRF solid and MoRF dashed, for the first model, evaluated at `pixel_points` evenly spaced deleted
# fractions (sums over those points; the t + 1 points of a pixel curve would cost H·W + 1 inputs per curve). T5: how
# much the reference moves a score, per image: max − min over the references of ΣLeRF − ΣMoRF. The paper's claim:
# TRACE on 7×7 patches has "consistent scores across different reference types" while pixel-level Gradient and IG
# do not. Scores of pixel and patch curves, and of methods of different strength, compare only on a common scale,
# and the paper's (the spread relative to the score) divides by the method's own mean |score|: TRACE's score is the
# metric's maximum, the largest denominator, which favours TRACE. So the claim function
# `fs.papers.trace.claim_reference_robust` decides T5 under two denominators, that one ("relative") and the
# curve's number of points ("per point", the same for every method), and the claim must hold under both: per
# image, the pixel-level method's spread minus TRACE-p's on patches, for Gradient and IG (Grad-CAM shown, not
# counted), by the rule listed below. A relative spread of a score at chance means nothing, so a "relative" cell counts
# only when both scores lie above chance (0).

# %%
pixel_edge = setup.x.shape[-1]
out.glue("pixel_points", pixel_points)
PIXEL = {name: METHODS[name] for name in pixel_methods}
pixel_scores, pixel_curves = [], []
for r in REPLICAS:
    su, x, y = setups[r], setups[r].x, setups[r].y
    for m, model in su.models.items():
        trajs = P.trajectories({name: maps[r, m][name] for name in PIXEL}, x, PIXEL, edge=pixel_edge)
        for ref, reference in REFERENCES[r].items():
            s, c = P.deletion_frames(model, x, y, trajs, edge=pixel_edge, reference=reference, outputs=("prob",),
                                     batch_size=batch_size, labels={"replica": r, "model": m, "reference": ref},
                                     points=pixel_points)
            pixel_scores.append(s)
            pixel_curves.append(c if m == first and r == REPLICAS[0] else c.iloc[:0])
pixel_scores = pd.concat(pixel_scores, ignore_index=True)
pixel_curves = pd.concat(pixel_curves, ignore_index=True)
out.table(pixel_scores, "pixel_scores")

fig, axes = fl.plots.panels(len(PIXEL), 1, height=2.4, legend="right", sharex=True, sharey=True)
for ax, name in zip(axes[:, 0], PIXEL):
    fl.plots.curves(pixel_curves[pixel_curves.method == name], x="fraction", y="value", hue="reference",
                    style="criterion", band=None, ax=ax)
    ax.set(title=name, xlabel="fraction of pixels deleted", ylabel="probability\nof the label")
fig.tight_layout()
fl.plots.legend_outside(fig)
out.figure(fig, "fig1")

# %%
out.rules("T5")

# %%
levels = pd.concat([prob.assign(level=f"patches (t = {t})"),
                    pixel_scores.assign(level=f"pixels (t = {pixel_edge ** 2})")], ignore_index=True)
spread = P.reference_spread(levels, value="LeRF − MoRF", by=["level", "replica", "model", "method"])
spread = spread.merge(levels.groupby("level")["points"].first().rename("points"), on="level")
spread["spread per point"] = spread["spread"] / spread["points"]
spread_table = spread.groupby(["level", "method"], sort=False)[["spread", "relative spread",
                                                                  "spread per point"]].mean().reset_index()
out.table(spread_table, "t5_spread")
t5 = out.claim(fs.verdicts.replicated(
    P.claim_reference_robust, prob, pixel_scores, target="T-p", against=("Grad", "IG"),
    trained=not torchvision_models, premise_scores=premise_scores)).claim
out.table(t5.table, "t5_comparisons")
fl.plots.readable(spread_table)

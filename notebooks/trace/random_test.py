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
# # The random deletion test: patch size and reference (Fig. 4)
#
# To separate the out-of-distribution (OOD) effect of deletion from the information deleted, the paper deletes
# patches in uniformly random orders and plots the mean prediction against the fraction deleted, one curve per
# patch size, under the zero reference, under the blur reference, and their difference (Fig. 4). It claims (T3)
# that smaller patches make the prediction fall faster under the zero reference (more OOD) and that the gap
# between the zero and blur references shrinks as patches grow, which is why, on 7×7 patches, TRACE barely
# depends on the reference (T5, see the Table 1 notebook). Here for the first `n_models` of `trace_models` (the paper
# uses one, ResNet-18), in `replicas` independently trained replicas (those trace/table1 trains and caches), each on
# its own `n_images` test digits, with `n_orders` random orders per digit.

# %% tags=["parameters"]
trace_models = {}  # overrides of fs.papers.trace.TraceModels (the models of trace/table1, trace/searches)
n_models = 1  # the first n_models of them
replicas = 3  # trained replicas of each (trace/table1's, read from the cache; 1 for pretrained weights)
n_images = 3  # test digits per replica: replica r reads images r·n_images … (r + 1)·n_images − 1
edges = [2, 7, 28]
n_orders = 2
blur_kernel = 5
blur_sigma = 7.0
output = "prob"
dataset = "canvas_digits"
data_dir = None
torchvision_models = []
seed = 0
device = "cpu"
batch_size = 64  # per forward call: on a CPU core these models run fastest per input at 64 (caches); GPUs want more

# %%
import pandas as pd

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
P = fs.papers.trace

# %% [markdown]
# ## Models and images
# The data are drawn with `seed`; replica r of each model trains with its own seed, derived from `seed`, the model's
# name and r (`fs.verdicts.replicas`; trace/table1 trains it, here it is read from the cache), and is tested on its
# own digits r·`n_images` … (r + 1)·`n_images` − 1. The claim
# pools the replicas' digits and takes the t interval on the replica means: the trained model is the unit of
# replication, its digits the units within it.

# %%
setups = P.replica_models(P.TraceModels(**trace_models), replicas, n_images=n_images, n_models=n_models, seed=seed,
                          dataset=dataset, data_dir=data_dir, torchvision_models=torchvision_models, device=device)
REPLICAS = list(setups)
X, Y = {r: su.x for r, su in setups.items()}, {r: su.y for r, su in setups.items()}
info = P.models_info(setups)
out.table(info, "models")
out.glue("n_images", n_images)
out.glue("replicas", replicas)
out.glue("n_units", n_images * replicas)
out.glue("n_orders", n_orders)
out.glue("patch_sides", ", ".join(str(X[0].shape[-1] // e) for e in edges))
fl.plots.readable(info)

# %% [markdown]
# ## Fig. 4
# The image side is divided into e patches per row for every e in `edges` (patch side H/e pixels; the last is the
# pixel level). Each curve is the mean over digits, replicas and random orders of the label's output (`output`)
# after deleting a fraction k/t of the patches.

# %%
frames = []
for r in REPLICAS:
    references = P.references_of(X[r], ["zero", "blur"], blur_kernel=blur_kernel, blur_sigma=blur_sigma)
    for m, model in setups[r].models.items():
        frames.append(P.random_deletion_frame(model, X[r], Y[r], edges=tuple(edges), references=references,
                                              n_orders=n_orders,  # keyed to (seed, model, replica): its own orders
                                              generator=fs.verdicts.replication.draw_seed(seed, m, r, "orders"),
                                              output=output, batch_size=batch_size).assign(model=m, replica=r))
curves = pd.concat(frames, ignore_index=True)
curves["patch"] = curves["patch side"].map(lambda s: f"{s} px")
PATCHES = [f"{s} px" for s in sorted(set(curves["patch side"]))]  # one colour per patch side in every panel
wide = curves.pivot_table(index=["replica", "model", "patch", "patch side", "image", "deleted", "fraction"],
                          columns="reference", values="value").reset_index()

# %% [markdown]
# The difference between the zero and the blur reference, per patch size, and the curves per model.

# %%
wide["zero − blur"] = wide["zero"] - wide["blur"]
out.table(curves.groupby(["model", "reference", "patch side", "fraction"])["value"].mean().reset_index(), "fig4")
for m in setups[0].models:
    fig, axes = fl.plots.panels(3, 1, height=2.1, legend="right", sharex=True)
    sel, sel_w = curves[curves.model == m], wide[wide.model == m]
    for ax, (title, frame, column) in zip(axes[:, 0], [("(a) zero reference", sel[sel.reference == "zero"], "value"),
                                                  ("(b) blur reference", sel[sel.reference == "blur"], "value"),
                                                  ("(c) (a) − (b)", sel_w, "zero − blur")]):
        fl.plots.curves(frame, x="fraction", y=column, hue="patch", band=None, ax=ax, hue_order=PATCHES)
        ax.set(title=f"{m}: {title}", xlabel="fraction of patches deleted", ylabel=P.OUTPUT_NAMES[output])
    fig.tight_layout()
    fl.plots.legend_outside(fig)
    out.figure(fig, f"fig4_{m}".replace(" ", "_").replace("/", "_"))

# %% [markdown]
# ## T3 and the mechanism premise
# Each curve's mean over its t + 1 points (the area under it over the deleted fraction) per digit. The claim
# function `fs.papers.trace.claim_random_test` decides T3's two named parts by their registered rules (listed
# here), per model: (a) under the zero reference the area with the largest patches exceeds the area at the smallest
# (the pixel level: a faster fall for small patches), and (b) the zero − blur gap of the area shrinks from the
# smallest to the largest patches. Its premise, the chapter's mechanism (a):
# deletion lowers the prediction — on the 7 × 7 grid under the zero reference, f(x) minus the area of a random-order
# curve lies above `fs.papers.trace.PREMISE_DROP` — or there is no OOD effect to measure.

# %%
out.rules("T3", "T3a", "T3b")

# %%
auc = P.normalised_auc(curves, by=["replica", "model", "reference", "patch side"])
table = auc.groupby(["model", "reference", "patch side"])["AUC"].mean().unstack("patch side").reset_index()
out.table(table, "t3_auc")
premise = P.random_test_premises(curves, zero="zero")
out.table(premise, "premise")
t3 = out.claim(fs.verdicts.replicated(
    P.claim_random_test, curves, zero="zero", blur="blur", trained=not torchvision_models)).claim
out.table(t3.table, "t3_checks")
fl.plots.readable(table)

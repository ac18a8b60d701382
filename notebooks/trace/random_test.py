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
# depends on the reference (T5, see the Table 1 notebook). Here for the first `n_models` of `trace_models` on the first
# `n_images` test digits, with `n_orders` random orders per image.

# %% tags=["parameters"]
trace_models = {}  # overrides of fl.protocols.trace.TraceModels (the models of trace/table1, trace/searches)
n_models = 2  # the first n_models of them
n_images = 3
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
import torch

import faithlab as fl

out = fl.outputs.for_notebook()
fl.plots.set_style()
P = fl.protocols.trace

# %%
canvas = P.TraceModels(**trace_models)
# the first replica of trace/table1's models (training seed fl.verdicts.replica_seed(seed, <name>, 0), read from the
# cache): one trained model per setting here, no replicas — T3 bootstraps over the images, and a decided verdict on
# one trained model is published as inconclusive (the house asks 3 replicas: fl.verdicts.replicated)
setup = P.setup(canvas.first(n_models), n_images=n_images, image_size=canvas.image_size, r=canvas.r,
                dataset=dataset, data_dir=data_dir, torchvision_models=torchvision_models, seed=seed, device=device,
                train_seeds={s["name"]: fl.verdicts.replica_seed(seed, s["name"], 0) for s in canvas.first(n_models)})
x, y = setup.x, setup.y
REFERENCES = P.references_of(x, ["zero", "blur"], blur_kernel=blur_kernel, blur_sigma=blur_sigma)
out.table(setup.info, "models")
out.glue("n_images", len(x))
out.glue("n_orders", n_orders)
out.glue("patch_sides", ", ".join(str(x.shape[-1] // e) for e in edges))
fl.plots.readable(setup.info)

# %% [markdown]
# ## Fig. 4
# The image side is divided into e patches per row for every e in `edges` (patch side H/e pixels; the last is the
# pixel level). Each curve is the mean over images and random orders of the label's
# output (`output`) after deleting a fraction k/t of the patches.

# %%
frames = []
for m, model in setup.models.items():
    frames.append(P.random_deletion_frame(model, x, y, edges=tuple(edges), references=REFERENCES, n_orders=n_orders,
                                          generator=torch.Generator().manual_seed(seed), output=output,
                                          batch_size=batch_size).assign(model=m))
curves = pd.concat(frames, ignore_index=True)
curves["patch"] = curves["patch side"].map(lambda s: f"{s} px")
PATCHES = [f"{s} px" for s in sorted(set(curves["patch side"]))]  # one colour per patch side in every panel
wide = curves.pivot_table(index=["model", "patch", "patch side", "image", "deleted", "fraction"],
                          columns="reference", values="value").reset_index()
wide["zero − blur"] = wide["zero"] - wide["blur"]
out.table(curves.groupby(["model", "reference", "patch side", "fraction"])["value"].mean().reset_index(), "fig4")
for m in setup.models:
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
# ## T3
# Each curve's mean over its t + 1 points (the area under it over the deleted fraction) per image. The claim
# function `fl.protocols.trace.claim_random_test` checks, per model, (a) that under the zero reference the area with
# the largest patches exceeds the area at the smallest (the pixel level: a faster fall for small patches), and (b)
# that the zero − blur gap of the area shrinks from the smallest to the largest patches, each by a paired bootstrap
# over images (95 %), and decides over models × checks. Its premise and null: deletion must lower the prediction at
# all (under the zero reference at the smallest patches the area lies below the clean output f(x); the null is a
# flat curve), or there is no OOD effect to measure.

# %%
auc = P.normalised_auc(curves, by=["model", "reference", "patch side"])
table = auc.groupby(["model", "reference", "patch side"])["AUC"].mean().unstack("patch side").reset_index()
out.table(table, "t3_auc")
t3 = out.claim(P.claim_random_test, curves, zero="zero", blur="blur", seed=seed,
               trained=not torchvision_models).claim
out.table(t3.table, "t3_checks")
fl.plots.readable(table)

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
# # Why few classes break classic fidelity, and the bounds of Fid (C5)
#
# The paper's premise: with two or three classes, removing every feature does not leave the classifier uncertain,
# it makes it predict another class, often confidently, so a curve that should fall to 1/N falls to 0 or stays at
# 1 and accuracy-based fidelity reads a class flip as success or failure by chance. Its score Fid is bounded in
# [0, 1] for any number of classes. Here: what the trained models predict when every pixel is replaced by the
# classic zero or mean reference, against the selected perturbation; and the range of Fid on the real curves and on
# arbitrary ones. The models are the fidelity notebook's replicas (the same settings and seeds, read from the
# cache), each replica on its own, disjoint block of the test split.

# %% tags=["parameters"]
tasks = ["vehicles", "ct"]
settings = {}  # per task; a task left out trains fs.papers.fewclass.STAND_INS
image_size = 28
n_train = 300
replicas = 3  # the fidelity notebook's replicas (cached); the paper profile's weights are one model
n_images = 3  # XAI images per replica (its own block of the test split)
n_random_areas = 10000
paper = False
data_dir = None
seed = 0
device = "cpu"
batch_size = 256

# %%
import pandas as pd
import seaborn as sns
import torch

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
P = fs.papers.fewclass
F = fl.metrics.fewclass

# %% [markdown]
# ## Replacing every pixel
# Per image: the prediction after replacing all pixels by the zero reference (0 in the normalised input space,
# the dataset's mean colour), by the image's mean, and by the selected perturbation; whether the class flipped,
# the uncertainty U (eq. 2; 0 = all classes at 1/N) and the top probability.

# %%
n_replicas = 1 if paper else replicas
setups = {(task, r): P.setup(task, settings.get(task), n_images=n_images, image_size=image_size, n_train=n_train,
                             seed=seed, data_dir=data_dir, paper=paper, batch_size=batch_size, device=device,
                             replica=None if paper else r, blocks=None if paper else n_replicas)
          for task in tasks for r in range(n_replicas)}
frames, real_fid = [], []
for (task, r), s in setups.items():
    for m, model in s.models.items():
        sel = F.select_perturbation(model, s.x, grid="paper", batch_size=batch_size, normalisation=s.normalisation)
        frames.append(P.flip_frame(model, s.x, sel["image"], batch_size=batch_size,
                                   labels={"task": task, "model": m, "replica": r, "Δ": sel["delta"]}))
        random_map = fl.explainers.explain(model, s.x, torch.zeros_like(s.y), method="random",
                                           generator=P.experiments.model_draws(s, m, seed, "random map"))
        real_fid.append(F.fewclass_fid(model, s.x, random_map, perturbed=sel["image"], batch_size=batch_size,
                                       generator=P.experiments.model_draws(s, m, seed, "ties")))
flips = pd.concat(frames, ignore_index=True)
out.table(flips, "flips")
out.glue("replicas", n_replicas)
out.glue("n_images_pooled", int(flips[["task", "replica", "image"]].drop_duplicates().groupby("task").size().min()))

# %% [markdown]
# The share of flipped predictions and the uncertainty U per task, model and replacement, and U's distribution against the threshold.

# %%
summary = flips.groupby(["task", "model", "replacement"]).agg(flipped=("flipped", "mean"), mean_U=("U", "mean"),
                                                              top_probability=("top probability", "mean"),
                                                              delta=("Δ", "first"),
                                                              images=("image", "size")).reset_index()
out.table(summary, "summary")
NAME = {task: P.task_label(task, paper=paper) for task in tasks}  # stand-ins named as stand-ins
g = sns.catplot(data=flips.assign(task=flips["task"].map(NAME)), x="replacement", y="U", hue="model", row="task",
                row_order=[NAME[t] for t in tasks], kind="box", height=2.6, aspect=2.3)
for ax, task in zip(g.axes.flat, tasks):
    ax.axhline(F.threshold(setups[task, 0].n_classes), color="grey", ls="--")
    ax.set_title(NAME[task])
g.set_axis_labels("replacement", "uncertainty U")
fl.plots.legend_outside(g.figure, where="below")
out.figure(g.figure, "flips_uncertainty")
fl.plots.readable(summary.assign(task=summary["task"].map(NAME)),
                  names={"flipped": "share flipped", "mean_U": "mean uncertainty U",
                         "top_probability": "mean top probability", "delta": "threshold Δ"})

# %% [markdown]
# ## C5
# **(a) The class-flip failure**, on the binary task (`P.claim_class_flip`), two named parts over the XAI images of
# every trained replica: *C5a.confident* (a classic reference leaves the model confident) and *C5a.switch* (it
# switches the class), and beside them, as a study check not counted (the candidate search selects for it, C2),
# *C5a.uncertain* (the selected perturbation leaves it uncertain); each decided by its own pre-registered rule
# (registered above the function in `fs.papers.fewclass.claims`), listed below. Not testable without a binary task.
# **(b) The bounds** (a study check, not one of the paper's claims): every Fid computed from real curves and from
# `n_random_areas` random area pairs for N = 2, 3, 10, 1000 lies in [0, 1], and the extremes are reached (1 at
# A_LIF = 1, A_MIF = 1/N; 0 at A_LIF = 0, A_MIF = 1). This holds by construction of eq. (1): the check guards our
# implementation (`P.claim_fid_bounds`).

# %%
binary = [t for t in tasks if setups[t, 0].n_classes == 2]
out.rules("C5a", "C5a.confident", "C5a.switch", "C5a.uncertain", "C5b")

# %%
c5a = out.claim(fs.verdicts.replicated(
    P.claim_class_flip, flips.assign(task=flips["task"].map(NAME)), binary=[NAME[t] for t in binary],
    trained=not paper)).claim
out.table(c5a.table, "c5a_checks")

g = torch.Generator().manual_seed(seed)
areas = torch.rand(2, n_random_areas, generator=g, dtype=torch.float64)
values = []
for n in (2, 3, 10, 1000):
    values.append(pd.DataFrame({"N": n, "case": "random areas", "Fid": F.fid(areas[0], areas[1], n).numpy()}))
    values.append(pd.DataFrame({"N": n, "case": ["ideal", "worst"],
                                "Fid": [float(F.fid(torch.tensor(1 / n), torch.tensor(1.0), n)),
                                        float(F.fid(torch.tensor(1.0), torch.tensor(0.0), n))]}))
values.append(pd.DataFrame({"N": "real curves (random maps)", "case": "real curves",
                            "Fid": torch.cat(real_fid).cpu().numpy()}))
values = pd.concat(values, ignore_index=True)
c5b = out.claim(fs.verdicts.replicated(P.claim_fid_bounds, values)).claim
out.table(c5b.table, "bounds")
fl.plots.readable(c5b.table)

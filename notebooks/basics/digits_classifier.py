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
# # Digits: a classifier, three explainers and their deletion curves
#
# The end-to-end path of the study on scikit-learn's real handwritten digits: load the embedded dataset, train a
# small CNN (cached by configuration hash), explain its test predictions with captum, and remove pixels most
# relevant first with the batched removal engine. Every later notebook has this shape: a `parameters` cell, the
# library doing the work, and `fs.artifacts` writing the tables and figures the book shows.
#
# **Replicas.** The unit of replication of a claim about a trained model is the trained model: the CNN is trained
# `replicas` (R) times on the same data split; each replica r trains with its own seed (initialisation and batch
# order), derived from `seed`, the setting's name (`digits/small CNN, <image_size> px`) and r
# (`fs.verdicts.replicas`), and is cached by its configuration hash, and every replica explains and deletes on the same test digits. The
# tables carry a `replica` column; the sanity claim's interval resamples the replicas, then the digits within each
# drawn replica, and the claims table shows how many replicas give the pooled verdict on their own. The example
# maps, the out-of-distribution diagnostic and the guard rails describe replica 0 only: they decide nothing.

# %% tags=["parameters"]
image_size = 16
n_epochs = 15
n_test = 200  # test digits per replica (the same digits for every replica)
replicas = 3  # independently trained CNNs
methods = ["integrated_gradients", "saliency", "random"]
fractions = [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]
seed = 0
device = "cpu"
batch_size = 512

# %%
import pandas as pd
import torch

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
generator = torch.Generator().manual_seed(seed)

# %% [markdown]
# ## Data and model
# The 1,797 digits are upsampled from 8×8 to `image_size`² pixels and normalised per channel with training-split
# statistics, so that "zero" in the model's input space is the mean intensity.

# %%
if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
    raise ValueError(f"replicas must be an int ≥ 1, got {replicas!r}")
train = fl.data.load("digits", split="train", size=image_size, seed=seed)
test = fl.data.load("digits", split="test", size=image_size, seed=seed)
setting = f"digits/small CNN, {image_size} px"
models, rows = {}, []
for replica in fs.verdicts.replicas(seed, setting, replicas):
    rep = replica.index
    config = fl.train.TrainConfig(epochs=n_epochs, lr=3e-3, batch_size=64, seed=replica.seed)
    trained, history = fl.train.fit(
        "small_cnn",
        {"in_channels": 1, "n_classes": 10},
        train,
        config,
        data_key={"dataset": "digits", "size": image_size, "seed": seed},
        test_data=test,
        device=device,
        progress=False,
    )
    models[rep] = trained.to(device).eval()
    rows.append({"replica": rep, "train seed": replica.seed,
                 "test accuracy": fl.train.loss_and_accuracy(models[rep], test, device=device)["accuracy"]})

# %% [markdown]
# The replicas' test accuracies, and the test digits every replica is explained on.

# %%
accuracy_table = pd.DataFrame(rows)
out.table(accuracy_table, "accuracy_per_replica")
model = models[0]  # the replica the examples, the diagnostic and the guard rails describe

x, y = test.x[:n_test].to(device), test.y[:n_test].to(device)
accuracy = float(accuracy_table["test accuracy"].mean())
out.glue("test_accuracy", round(accuracy, 3))
out.glue("test_accuracy_min", round(float(accuracy_table["test accuracy"].min()), 3))
out.glue("n_replicas", replicas)
print(f"test accuracy: {accuracy:.3f} (mean of {replicas} replicas)")
accuracy_table

# %% [markdown]
# ## Explanations and deletion curves
# Each explainer's map is reduced to one score per pixel (sum of absolute values over channels) and pixels are
# replaced by zero, most relevant first. The area under the curve (trapezoid rule over the removed fraction) is
# lower for a more faithful explainer. Every replica explains its own predictions of the same digits; the summary
# pools the replicas × digits (mean and standard deviation) and lists each replica's mean beside it.

# %%
attributions = {
    (rep, method): fl.explainers.explain(m, x, y, method=method, generator=generator)
    for rep, m in models.items() for method in methods
}
curves = {
    (rep, method): fl.perturb.removal_curve(
        models[rep], x, attr, fractions, order="morf", reference="zero", output="prob", target=y,
        batch_size=batch_size
    )
    for (rep, method), attr in attributions.items()
}
fraction_tensor = torch.tensor(fractions)
aucs = {key: fl.metrics.statistics.trapezoid_auc(curve.cpu(), fraction_tensor) for key, curve in curves.items()}
per_replica = pd.DataFrame([{"explainer": method, "replica": rep, "deletion AUC (mean)": auc.mean().item()}
                            for (rep, method), auc in aucs.items()])
out.table(per_replica, "summary_per_replica")
rows = []
for method in methods:
    pooled = torch.cat([aucs[rep, method] for rep in models])
    rows.append({"explainer": method, "deletion AUC (mean)": pooled.mean().item(), "std": pooled.std().item(),
                 **{f"replica {rep}": aucs[rep, method].mean().item() for rep in models}})
summary = pd.DataFrame(rows)
out.table(summary, "summary")
summary

# %%
long = pd.concat(
    [
        pd.DataFrame(
            {
                "explainer": method,
                "replica": rep,
                "sample": torch.arange(len(x)).repeat_interleave(len(fractions)).tolist(),
                "fraction removed": fraction_tensor.repeat(len(x)).tolist(),
                "probability of true class": curve.cpu().flatten().tolist(),
            }
        )
        for (rep, method), curve in curves.items()
    ]
)
out.table(long, "deletion_curves")
ax = fl.plots.curves(long.assign(explainer=long["explainer"].map(fl.plots.label)), x="fraction removed",
                     y="probability of true class", hue="explainer", band="se")
fl.plots.legend_outside(ax)
out.figure(ax.figure, "deletion_curves")

# %%
n_show = 2  # images per explainer: at most 8 maps in one figure, each large enough to read
short = {"integrated_gradients": "IG", "saliency": "saliency", "random": "random"}
images, maps, titles = [], [], []
for method in methods:
    for i in range(n_show):
        images.append(x[i].cpu())
        maps.append(attributions[0, method][i].abs().sum(0).cpu())
        titles.append(f"{short.get(method, method)}, label {int(y[i])}")
fig = fl.plots.image_grid(
    images, titles=titles, ncols=n_show, attributions=maps, mean=test.info["mean"], std=test.info["std"], alpha=0.5,
    colorbar="|attribution|, scaled per map (0–1)",
)
out.figure(fig, "examples")

# %% [markdown]
# ## Is removal out of distribution here?
# The diagnostic every chapter that removes features shows (`fs.papers.removal_diagnostic`), on replica 0: accuracy
# after removing the k pixels integrated gradients ranks highest, the k it ranks lowest, or k random pixels (5 draws).
# When the lowest-ranked pixels cost accuracy too, the replacement value itself confuses the model.

# %%
n_pixels = x.shape[-1] * x.shape[-2]
ks = [round(0.1 * n_pixels), round(0.2 * n_pixels)]
ig_scores = fl.perturb.unit_scores(attributions[0, "integrated_gradients"], fl.perturb.pixel_units(x),
                                   reduce="sum_abs")
diagnostic = fs.papers.removal_diagnostic({"CNN": model}, x, y, ig_scores, ks=ks, generator=seed,
                                             batch_size=batch_size)
out.table(diagnostic, "ood_diagnostic")
out.glue("ood_gap", float(fs.papers.ood_gap(diagnostic)["CNN"]))
out.glue("ood_k", max(ks))
diagnostic

# %% [markdown]
# ## What the library refuses, and what it flags
# Garbage must never come out looking like a score. Each row below calls the library on this notebook's model
# (replica 0) and digits with one thing wrong and records what came back: an error naming the argument, or a flagged
# result with a warning that counts the flagged samples. A model returning NaN on perturbed inputs only is the case a silent
# metric would turn into a finite number.

# %%
import warnings

few, ig = x[:8], attributions[0, "integrated_gradients"][:8]
blank = ig.clone()
blank[:3] = 0.0  # three all-zero maps: no ranking
cases = {
    "model returns NaN on perturbed inputs": lambda: fl.metrics.aopc(
        fs.papers.basics.NaNWhenPerturbed(model, few).eval(), few, ig),
    "float64 images, float32 model": lambda: fl.metrics.aopc(model, few.double(), ig),
    "attributions with 3 channels for 1-channel images": lambda: fl.metrics.aopc(model, few, ig.repeat(1, 3, 1, 1)),
    "fractions not increasing": lambda: fl.metrics.auc_accuracy(model, few, ig, target=y[:8], fractions=[0, 1, 0.5]),
    "target class out of range": lambda: fl.metrics.fid_plus(model, few, ig, target=torch.full_like(y[:8], 12),
                                                             sparsity=[0.2]),
    "three all-zero maps": lambda: fl.metrics.aopc_details(model, few, blank)["constant"],
}
rows = []

# %% [markdown]
# Each malformed input goes to its metric; the table records whether the metric returns, raises or warns.

# %%
for case, call in cases.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
            outcome = f"result returned; flagged samples: {result.nonzero().flatten().tolist()}" if (
                result.dtype == torch.bool) else "result returned"
        except (ValueError, TypeError) as err:
            outcome = f"{type(err).__name__}: {err}"
    rows.append({"input": case, "outcome": outcome,
                 "warning issued": "; ".join(w.category.__name__ for w in caught) or "—",
                 "its message": "; ".join(str(w.message) for w in caught) or "—"})
guard_rails = pd.DataFrame(rows)
out.table(guard_rails, "guard_rails")
out.glue("n_guard_rails", len(guard_rails))
out.glue("n_guard_rails_errors", int(guard_rails["outcome"].str.contains("Error").sum()))
guard_rails

# %% [markdown]
# ## Sanity claim
# Not a paper's claim but the study's first check: on a model that learned the task, integrated gradients must
# order pixels better than chance. The claim function `fs.papers.basics.claim_deletion_sanity` compares IG's
# deletion AUC with the random explainer's (the null) on the same test digits, per trained replica, by its rule
# (B1, listed here; the procedure is on the pre-registration page). Its premise: every replica's accuracy on these
# digits lies above the chance level of permuted labels and the majority-class share.

# %%
out.rules("B1")

# %%
from IPython.display import display

if "integrated_gradients" in methods and "random" in methods:
    with torch.no_grad():
        predicted = pd.concat([pd.DataFrame({"replica": rep, "sample": range(len(x)),
                                             "predicted": m(x).argmax(1).cpu().numpy()})
                               for rep, m in models.items()], ignore_index=True)
    deletion = pd.concat([pd.DataFrame({"explainer": method, "replica": rep, "sample": range(len(x)),
                                        "deletion AUC": auc.numpy()})
                          for (rep, method), auc in aucs.items()], ignore_index=True)
    out.table(deletion, "deletion_auc")
    sanity = out.claim(fs.verdicts.replicated(
        fs.papers.basics.claim_deletion_sanity, deletion, predicted, y.cpu().numpy(), seed=seed),
        note=f"{replicas} replicas × {len(x)} test digits, {image_size}x{image_size}, zero reference")
    out.table(sanity.table, "sanity")
    display(sanity.table)

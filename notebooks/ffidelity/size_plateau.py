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
# # F-Fidelity: reading the explanation size off the FFid+ curve (Sec. 4, App. D.8)
#
# Theorem 1 of F-Fidelity says that, for an explainer that ranks the truly relevant pixels first, FFid+ plotted
# against the explanation size s rises until s reaches the true explanation size r, stays flat between r and
# β/α+, and falls after both critical points. We test this on digits drawn on a canvas so that the digit's
# foreground covers exactly a fraction r of the pixels (our stand-in for the paper's rescaled Colored-MNIST), with
# the ground-truth digit mask as the explainer (ties broken at random), a small CNN fine-tuned with random removal
# of up to β of the pixels, and α+ = 0.5. The canvases are the chapter's coloured ones
# (`fs.papers.ffidelity.palette_canvases`, standing in for Colored-MNIST), on which removal is out of
# distribution: the study check FF.OOD is decided on them and is the claim's premise.
#
# **Replicas.** The unit of replication is the trained classifier on its own data: for every r the notebook trains
# `replicas` classifiers, replica q on its own draw of the canvases (`fs.verdicts.replication.data_seed`) and with
# its own seed, derived from `seed`, the setting's name (`ffidelity/size_plateau/<r>`) and q
# (`fs.verdicts.replicas`), each fine-tuned once per β (cached per replica); the claim counts the (r, β) cases of
# every replica and decides their share with an interval that takes the replicas into account.

# %% tags=["parameters"]
image_size = 16
rs = [0.1, 0.15, 0.2, 0.25, 0.3]
color = True
palette = "saturated"  # fs.papers.ffidelity.palette_canvases: removal is out of distribution on them
replicas = 3  # independently trained classifiers per r (each fine-tuned once per β)
betas = [0.1, 0.2, 0.3]
alpha = 0.5
n_train = 2000  # training canvases per r (digits reused with fresh placements and colours)
width = 32
n_epochs = 30  # enough for every replica to learn the saturated canvases (the accuracy is shown below)
n_finetune_epochs = 6
n_test = 240
n_samples = 20
sparsity = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
tolerance = 0.05
seed = 0
device = "cpu"
batch_size = 256  # per forward call: on a CPU core twice as fast per input as 2048 (caches); GPUs want more

# %%
import matplotlib.pyplot as plt
import pandas as pd

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()

# %% [markdown]
# ## Models: R classifiers per r, each fine-tuned once per β
# Each classifier is a small CNN (`width`) trained for `n_epochs` epochs on `n_train` canvases. A classifier near
# chance has no accuracy to lose to removed pixels, and the mechanism check would fail for want of a model; the
# read-out table shows every fine-tuned model's test accuracy.
# Fine-tuning (eq. 5) starts from the trained classifier and removes, per image and draw, a uniform fraction
# u ~ U(0, β) of the pixels (replaced by zero, the dataset mean colour). Explanations are the digit masks, so they
# are the same for the original and the fine-tuned models. Each replica also gets the mechanism check's per-image
# losses (`ood_per_input`: round(β·n) background pixels removed, its original and its fine-tuned model of the
# smallest β).

# %%
if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
    raise ValueError(f"replicas must be an int ≥ 1, got {replicas!r}")
data, models = {}, {}  # (r, replica): its canvases, test inputs and maps; (r, replica, β): (original, fine-tuned)
for r in rs:
    canvas = fs.papers.ffidelity.CanvasModels(image_size=image_size, r=r, color=color, palette=palette,
                                                 n_train=n_train, width=width, n_epochs=n_epochs,
                                                 n_finetune_epochs=n_finetune_epochs)
    for replica in fs.verdicts.replicas(seed, f"ffidelity/size_plateau/{r:g}", replicas):
        train_data, test = canvas.load(seed, replica)  # the replica's own draw of the canvases
        key = canvas.data_key(seed, replica)
        x, y = test.x[:n_test].to(device), test.y[:n_test].to(device)
        data[r, replica.index] = (test, x, y, fl.explainers.ground_truth(test.mask[:n_test], x))
        base, hist = fl.train.fit("small_cnn", canvas.model_config(), train_data, canvas.train_config(replica.seed),
                                  data_key=key, test_data=test, device=device, progress=False)
        base = base.to(device).eval()
        for beta in betas:
            model, _ = fl.train.finetune(base, train_data, canvas.finetune_config(replica.seed),
                                         fl.train.RandomRemoval(beta), data_key=key, base_key=hist["key"],
                                         test_data=test, device=device, progress=False)
            models[r, replica.index, beta] = (base, model.to(device).eval())

# %% [markdown]
# Each fine-tuned model then scores the digit masks: its FFid+ curve over the explanation sizes, the size read off
# that curve, its test accuracy and, for the smallest β, the mechanism check's per-image losses.

# %%
rows, curves, ood_rows = [], [], []
draws = lambda r, q, name: fs.verdicts.replication.draw_seed(  # noqa: E731  (replica q's own draws)
    seed, f"ffidelity/size_plateau/{r:g}", q, name)
for (r, q, beta), (base, model) in models.items():
    test, x, y, attr = data[r, q]
    if beta == min(betas):
        ood_rows.append(fs.papers.ffidelity.ood_per_input(
            {"original": base, "fine-tuned": model}, x, y, test.mask[:n_test].flatten(1).to(device),
            beta=beta, n_draws=5, generator=draws(r, q, "ood"), batch_size=batch_size).assign(r=r, replica=q))
    scores = fl.metrics.fid_plus(model, x, attr, target=y, sparsity=sparsity, alpha=alpha, beta=beta,
                                 n_samples=n_samples, generator=draws(r, q, "masks"), ties="random",
                                 batch_size=batch_size)
    curve = scores.mean(dim=0).cpu()
    r_hat = fl.metrics.explanation_size(curve.double(), sparsity, alpha=alpha, beta=beta, tol=tolerance).item()
    acc = fl.train.loss_and_accuracy(model, test.subset(range(n_test)), device=device)["accuracy"]
    rows.append({"r": r, "beta": beta, "replica": q, "beta/alpha": fl.metrics.critical_points(alpha, beta),
                 "realised r": test.extras["fraction"][:n_test].mean().item(), "r read off": r_hat,
                 "|error|": abs(r_hat - r), "fine-tuned accuracy": acc})
    curves.append(pd.DataFrame({"r": r, "beta": beta, "replica": q, "explanation size s": sparsity,
                                "FFid+": curve.tolist()}))

# %% [markdown]
# The read-out table (one row per r, β and replica) and the replicas' mean FFid+ curves.

# %%
table = pd.DataFrame(rows)
ood = pd.concat(ood_rows, ignore_index=True)
out.table(ood, "ood_per_input")
table["in F4 (r ≠ β/α+)"] = (table["r"] - table["beta/alpha"]).abs() > 1e-9  # F4 leaves out r = β/α+ (see below)
long = (pd.concat(curves, ignore_index=True).groupby(["r", "beta", "explanation size s"], sort=False)["FFid+"]
        .mean().reset_index())  # the curves' mean over the replicas
out.table(table, "size_readout")
out.glue("n_cases", len(table))  # the page's counts, from the very table it shows
out.glue("n_betas", table["beta"].nunique())
out.glue("n_cases_f4", int(table["in F4 (r ≠ β/α+)"].sum()))
out.glue("n_cases_left_out", int((~table["in F4 (r ≠ β/α+)"]).sum()))
out.table(long, "ffid_plus_curves")
table

# %% [markdown]
# ## FFid+ against explanation size
# One panel per β; solid lines are the curves for each r, the dotted vertical lines the true sizes r (first
# critical point) and the dashed black line β/α+ (second critical point).

# %%
fig, axes = fl.plots.panels(len(betas), 1, height=2.2, legend="right", sharex=True, sharey=True)
palette = plt.get_cmap("viridis")
for ax, beta in zip(axes[:, 0], betas):
    for i, r in enumerate(rs):
        part = long[(long["beta"] == beta) & (long["r"] == r)]
        colour = palette(i / max(1, len(rs) - 1))
        ax.plot(part["explanation size s"], part["FFid+"], color=colour, label=f"r = {r}")
        ax.axvline(r, color=colour, linestyle=":", linewidth=1)
    ax.axvline(fl.metrics.critical_points(alpha, beta), color="black", linestyle="--", linewidth=1)
    ax.set_title(f"β = {beta}, α+ = {alpha}")
    ax.set_ylabel("FFid+")
axes[-1][0].set_xlabel("explanation size s")
fig.tight_layout()
fl.plots.legend_outside(fig)
out.figure(fig, "ffid_plus_vs_size")

# %% [markdown]
# ## The mechanism on these canvases (study check FF.OOD)
# The per-image losses collected above: the accuracy the original model loses when round(β·n) background pixels
# are removed, and the fine-tuned model's, on the canvases of every r (`claim_ood_check`, rule FF.OOD, a t
# interval on the replica means, each replica's mean over its images of every r); the claim below takes the
# outcome as its premise.

# %%
check = out.claim(fs.verdicts.replicated(
    fs.papers.ffidelity.claim_ood_check, ood,  # one row per replica, r and image: each r its models
    data=f"size canvases, r ∈ {{{', '.join(f'{r:g}' for r in rs)}}}"),
    note=f"{n_test} test images × {len(rs)} sizes r × {replicas} replicas, 5 draws of "
         f"{int(ood['k'].max())} background pixels").claim
out.table(check.table, "ood_check")
check.table

# %% [markdown]
# ## Claim: the plateau start / turning point reveals r
# **F4**, by `fs.papers.ffidelity.claim_size_readout` and its rule F4. Rule, fixed before looking at the numbers:
# a read-out is correct when |r̂ − r| ≤ `tolerance` (one grid step of s). Cases with r = β/α+ are excluded (both
# critical points coincide, so the curve only peaks). Statistic: the share of correct read-outs over the remaining
# (r, β) cases of every replica, its interval the hull of a t interval on the replica shares and the Wilson interval
# of the pooled count (`fs.verdicts.share_interval`), against the margin 0.5 (our convention: the paper shows curves
# only). Null: the read-outs shuffled over the cases — an r̂ that carries no information about r still lands within
# one grid step of it for some cases, since neighbouring sizes are one step apart; the share must lie beyond that
# null's 95 % range, else not testable here. Premise: FF.OOD on these canvases.

# %%
claim = out.claim(fs.verdicts.replicated(fs.papers.ffidelity.claim_size_readout, table, tolerance=tolerance,
                  mechanism=fs.papers.ffidelity.mechanism(check), null_seed=seed),
                  note=f"canvas digits {image_size}x{image_size}, small CNN, GT-mask explainer, N={n_samples}, "
                       f"{n_test} images, {replicas} replicas per r").claim
eligible = claim.table
out.glue("share_correct", float(eligible["correct"].mean()) if len(eligible) else float("nan"))
out.glue("mean_abs_error", float(eligible["|error|"].mean()) if len(eligible) else float("nan"))
out.glue("replicas", replicas)

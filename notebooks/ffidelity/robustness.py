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
# # F-Fidelity: robustness of the fine-tuned models (Table 8, App. D.2–D.3)
#
# F-Fidelity fine-tunes the classifier on inputs with a random fraction of up to β of their units removed (eq. 5)
# so that its removal-based scores are not spoiled by out-of-distribution inputs. Two appendix studies check what
# that fine-tuning does to the model itself. **Table 8** (App. D.2) compares the accuracy of the original and the
# fine-tuned model when 0 %, 5 % or 10 % of the input units, chosen uniformly at random, are replaced by the
# reference (the dataset-mean colour, a zero time step, a zero token embedding — or, as a labelled variant, the
# pad token that deletes it). **App. D.3** fine-tunes the image model with several β and
# follows accuracy and agreement with the original model's predictions as the masking ratio grows to 50 %.
# The models are the very ones of the other F-Fidelity notebooks (the same settings, `CanvasModels`, `VitModels` and
# `SeriesTextModels` of `fs.papers.ffidelity`, so they come from the cache): the CNN on the coloured canvas digits
# of `images_ranking` (ResNet-9 in the `paper` profile) and the ViT of `images_variants` on the same kind of canvases
# (more of them: `VitModels.n_train`; the same test split), the CNN-1D and bi-LSTM of `series_text` on series at an
# offset and its LSTM and transformer on tokens, each text model fine-tuned once per removal.
#
# **Replicas.** The unit of replication is the trained model: every architecture comes as `replicas` (R)
# independently trained replicas, replica r being replica r of the notebook that trains it. Each replica r trains
# with its own seed, derived from `seed`, the setting's name and r (`fs.verdicts.replicas`): the CNN's setting is
# "canvas/main" (`images_ranking`'s main setting), the ViT's "vit/main" (`images_variants`), each series and text
# model's `series_text/<model>` (`series_text`, whose replica seed also draws that replica's data) — so that all
# come from the same cache entries. Replica r's CNN and ViT train and are scored on replica r's own draw of the
# canvases (`fs.verdicts.replication.data_seed`); each replica is fine-tuned on its own (once per β for the CNN), cached per
# replica. Within a replica the units are the test inputs; every per-input frame below carries a `replica` column,
# and every claim's interval is a t interval on the replica means (or on one statistic per replica).

# %% tags=["parameters"]
canvas_models = {"palette": "saturated"}  # fs.papers.ffidelity.CanvasModels (ffidelity/images_ranking's models)
series_text_models = {}  # overrides of fs.papers.ffidelity.SeriesTextModels (the models of ffidelity/series_text)
vit_models = {}  # overrides of fs.papers.ffidelity.VitModels (the ViT of ffidelity/images_variants)
beta = 0.1
ratios = [0.0, 0.05, 0.1]
betas = [0.05, 0.1, 0.2, 0.3]
boundary_ratios = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]
n_draws = 5
replicas = 3  # independently trained replicas of every model (each with its own fine-tuning)
seed = 0
device = "cpu"
batch_size = 256  # per forward call: on a CPU core twice as fast per input as 2048 (caches); GPUs want more

# %%
import pandas as pd
import torch

import faithlab as fl
import faithlab_study as fs

out = fs.artifacts.for_notebook()
fl.plots.set_style()
NAMES = fs.recipes.DISPLAY_NAMES
st = fs.papers.ffidelity.SeriesTextModels(**series_text_models)
canvas = fs.papers.ffidelity.CanvasModels(**canvas_models)
vit = fs.papers.ffidelity.VitModels(**vit_models)

# %% [markdown]
# ## Models
# Original and fine-tuned (β) model per architecture and replica, from the shared recipes; for the images one
# fine-tuned model per β of the decision-boundary study as well (β = the chapter's β is the Table 8 model).

# %%
if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
    raise ValueError(f"replicas must be an int ≥ 1, got {replicas!r}")
REPLICAS = range(replicas)
# each setting's replicas, each trained with its own seed (the same settings, hence cache entries, as the chapter's
# other notebooks): images_ranking's main CNN, images_variants' ViT, series_text's models
CNN = list(fs.verdicts.replicas(seed, "canvas/main", replicas))
VIT = list(fs.verdicts.replicas(seed, "vit/main", replicas))
ST = {name: list(fs.verdicts.replicas(seed, f"series_text/{name}", replicas))
      for name in [*st.ts_models, *st.text_models]}
cases, base_of, tuned_by_beta = {}, {}, {}  # cases[domain, name, reference, replica]; the CNN's by replica
vit_canvas = vit.canvases(canvas)  # the ViT's own training canvases (VitModels.n_train), the CNN's test split

# %% [markdown]
# Each replica's CNN, fine-tuned once per β, and the ViT, series and text models of the same replica.

# %%
for r in REPLICAS:
    base, hist, img_train, img_test = canvas.classifier(seed=seed, replica=CNN[r], device=device)
    base_of[r] = base
    tuned_by_beta[r] = {b: canvas.finetune(base, hist, img_train, img_test, beta=b, replica=CNN[r], device=device)
                        for b in sorted({beta, *betas})}
    cases["images", canvas.model_name, "zero", r] = (base, tuned_by_beta[r][beta], img_test, "pixels")
    # replica r's own draw of the canvases (`fs.verdicts.replication.data_seed`), the CNN's and the ViT's alike
    vit_train, vit_key = vit_canvas.load(seed, CNN[r])[0], vit_canvas.data_key(seed, CNN[r])
    vit_base, vit_hist = vit.classifier(vit_train, img_test, data_key=vit_key, replica=VIT[r], device=device)
    cases["images", "vit", "zero", r] = (vit_base, vit.finetune(
        vit_base, vit_hist, vit_train, img_test, beta=beta, data_key=vit_key, replica=VIT[r], device=device),
        img_test, "pixels")
    for domain, name, unit_kind, reference in st.cases():  # the cached models of `ffidelity/series_text`
        model, h, train, test = st.classifier(name, replica=ST[name][r], device=device)
        tuned = st.finetune(model, h, train, test, beta=beta, units=unit_kind, reference=reference,
                            replica=ST[name][r], device=device)
        cases[domain, name, reference, r] = (model, tuned, test, unit_kind)


# %% [markdown]
# ## Random removal
# For a masking ratio ρ, every test input loses exactly round(ρ·n) of its n units, drawn uniformly without
# replacement (`fl.perturb.exact_subset`), `n_draws` independent draws per input; removed units take the reference
# 0 (the dataset-mean colour, a zero time step, the pad token). The draws depend only on the seed and the replica,
# so all models of a replica see the very same masked inputs. For every draw we record each model's predicted class;
# accuracy, agreement and spreads are then taken over the test inputs for each draw and replica (mean ± std over the
# draws of every replica). The claims average per-input values per replica (a t interval on the replica means), so
# we also keep, per input and replica, the share of the draws on which each model is right (`samples`).


# %%
masking = dict(n_draws=n_draws, batch_size=batch_size)
masks = {r: fs.verdicts.replication.draw_seed(seed, "ffidelity/robustness", r) for r in REPLICAS}  # per replica
rows, sample_rows = [], []
for (domain, name, reference, r), (original, tuned, test, unit_kind) in cases.items():
    x, y = test.x.to(device), test.y.to(device)
    for ratio in ratios:
        preds = fs.papers.random_masking_predictions({"original": original, "fine-tuned": tuned}, x, ratio,
                                                        units=fl.perturb.UNIT_KINDS[unit_kind](x),
                                                        reference=reference, generator=masks[r], **masking)
        for version, p in preds.items():
            rows += [{"domain": domain, "architecture": st.label(domain, name, reference), "model": version,
                      "ratio": ratio, "replica": r, "draw": d,
                      "accuracy": float(acc)} for d, acc in enumerate((p == y[:, None]).float().mean(0))]
            sample_rows.append(pd.DataFrame({
                "domain": domain, "architecture": st.label(domain, name, reference), "model": version,
                "ratio": ratio, "replica": r, "sample": range(len(y)), "label": y.cpu().numpy(),
                "correct": (p == y[:, None]).float().mean(1).cpu().numpy()}))
robust = pd.DataFrame(rows)
samples = pd.concat(sample_rows, ignore_index=True)
out.table(robust, "table_8_draws")
out.glue("n_draws", n_draws)
out.glue("n_image_test", len(img_test))
out.glue("n_series_test", st.n_test)
out.glue("replicas", replicas)

# %% [markdown]
# ## Table 8
# Cells: our accuracy (%), mean ± std over the draws of every replica, with the paper's value in parentheses. Paper rows (Table 8):
# CIFAR-100 ResNet / ViT for our image CNN / ViT, Boiler CNN / LSTM for our CNN-1D / bi-LSTM, SST2 LSTM / Transformer
# for our text models.

# %%
PAPER = fs.papers.ffidelity.paper.TABLE_8  # F-Fidelity Table 8 (App. D.2): accuracy (%) at 0 %, 5 %, 10 %
summary = robust.groupby(["domain", "architecture", "model", "ratio"], sort=False)["accuracy"].agg(["mean", "std"])
summary = summary.reset_index()
summary["paper"] = [fs.papers.ffidelity.paper.table_8_value(a, m, q)  # our rows read against the paper's
                    for a, m, q in zip(summary["architecture"], summary["model"], summary["ratio"])]
out.table(summary, "table_8_tidy")
table_8 = summary.assign(
    cell=[f"{100 * m:.1f} ± {100 * s:.1f}" + ("" if p != p else f" ({p:.1f})")
          for m, s, p in zip(summary["mean"], summary["std"], summary["paper"])],
    ratio=[f"{100 * q:g} %" for q in summary["ratio"]],
).pivot_table(index=["domain", "architecture", "model"], columns="ratio", values="cell", aggfunc="first", sort=False)
table_8 = table_8.reset_index()
out.table(table_8, "table_8")
table_8

# %% [markdown]
# ## Decision boundaries under masking (App. D.3)
# The image model fine-tuned with each β, against the original (β = 0), as the test-time masking ratio grows.
# *Accuracy* is against the labels; *agreement with the original* compares a model's prediction with the original
# model's prediction on the same masked input (the paper's Fig. 1(b)); *stability* compares a model's prediction on
# the masked input with its own prediction on the clean input. Each replica's models are compared with their own
# original; the curves show mean ± std over the draws of every replica.

# %%
x, y = img_test.x.to(device), img_test.y.to(device)
rows, sample_rows = [], []
for r in REPLICAS:
    boundary_models = {0.0: base_of[r], **{b: tuned_by_beta[r][b] for b in betas}}
    keyed = dict(masking, generator=fs.verdicts.replication.draw_seed(seed, "ffidelity/robustness/boundary", r))
    clean_pred = {b: fs.papers.random_masking_predictions({b: m}, x, 0.0, **keyed)[b][:, 0]
                  for b, m in boundary_models.items()}
    for ratio in boundary_ratios:
        preds = fs.papers.random_masking_predictions(boundary_models, x, ratio, **keyed)
        for b, p in preds.items():
            scores = {"accuracy": p == y[:, None], "agreement with the original": p == preds[0.0],
                      "stability": p == clean_pred[b][:, None]}
            per_draw = {k: v.float().mean(0) for k, v in scores.items()}
            rows += [{"beta": b, "model": "original" if b == 0 else f"β = {b:g}", "ratio": ratio, "replica": r,
                      "draw": d, **{k: float(v[d]) for k, v in per_draw.items()}} for d in range(n_draws)]
            sample_rows.append(pd.DataFrame({"beta": b, "ratio": ratio, "replica": r, "sample": range(len(y)),
                                             "label": y.cpu().numpy(),
                                             **{k: v.float().mean(1).cpu().numpy() for k, v in scores.items()}}))

# %% [markdown]
# The accuracy and agreement with the original at the boundary, per β and removal ratio.

# %%
boundary = pd.DataFrame(rows)
boundary_samples = pd.concat(sample_rows, ignore_index=True)
out.table(boundary, "boundary_draws")
means = boundary.groupby(["model", "ratio"], sort=False)[["accuracy", "agreement with the original"]].mean()
boundary_table = pd.DataFrame({"model": [m for m, _ in means.index], "ratio": [f"{q:g}" for _, q in means.index],
                               "cell": [f"{a:.2f} / {g:.2f}" for a, g in means.to_numpy()]})
boundary_table = boundary_table.pivot_table(index="model", columns="ratio", values="cell", aggfunc="first",
                                            sort=False).reset_index()
out.table(boundary_table, "boundary")
boundary_table

# %%
metrics = ["accuracy", "agreement with the original", "stability"]
fig, axes = fl.plots.panels(len(metrics), 1, height=2.0, legend="right", sharex=True, sharey=True)
for ax, metric in zip(axes[:, 0], metrics):
    fl.plots.curves(boundary, x="ratio", y=metric, hue="model", band="sd", ax=ax, marker="o",
                    legend=metric == metrics[-1])
    for b in betas:
        ax.axvline(b, color="0.8", lw=0.8, zorder=0)
    ax.set_xlabel("test-time masking ratio")
    ax.set_ylabel("fraction of\ntest images")
    ax.set_title(metric)
fig.tight_layout()
fl.plots.legend_outside(fig, title="fine-tuning")
out.figure(fig, "boundary")

# %% [markdown]
# ## Claims
# Each claim is a function of `fs.papers.ffidelity` decided by its registered rule (registered above it in
# `fs.papers.ffidelity.claims`: statistic, direction, margin from the paper's numbers, how the
# cells combine). The unit is a test input of one trained replica; every comparison is paired (all models of a
# replica see the same masked copies of the same inputs), and its interval is a t interval on the replica means —
# or on one statistic per replica where the compared inputs differ. `out.claim` records each with its replica
# agreement and the power analysis.
# 1. *Table 8: on images and time series, fine-tuning preserves clean accuracy and restores accuracy under removal*
#    (`claim_finetune_restores`), two named parts: per model, clean accuracy fine-tuned − original against the
#    non-inferiority margin of the paper's own largest clean cost (3.34 points, its ViT), and accuracy at 10 %
#    removal fine-tuned − original against half the smallest restoration in Table 8 (2.98 points); each part needs
#    every model. Premise: a model whose original demonstrably loses less than 2 points to 10 % removal has
#    nothing to restore and leaves.
# 2. *Table 8: text models are robust to removal even without fine-tuning* (`claim_text_robust`), judged with the
#    paper's text removal (zero embedding; the pad-deletion rows are in the table): per replica, the mean drop
#    0 → 10 % of that replica's image and time-series originals minus the text model's drop, against half the
#    smallest such lead in Table 8 (6.8 points), for every text model. Premises: the removal can hurt a reference
#    (else robustness holds by construction), and a text model can beat the majority-class share by 5 points.
# 3. *D.3: larger β keeps accuracy under heavier masking* (`claim_beta_accuracy`), over the whole β range. Premise:
#    masking costs the original accuracy (2 points, as above).
# 4. *D.3: larger β agrees less with the original model on masked inputs, while clean predictions agree*
#    (`claim_beta_agreement`), two named parts; the clean part compares a fine-tuned model's clean agreement with the
#    original against the original's accuracy (two models that are each right on a share a of the inputs need not
#    agree on more). Premise: the original can beat the majority-class share by 5 points on clean inputs.
#
# The rules of the D.3 claims, as registered:

# %%
out.rules("D3.accuracy", "D3.agreement.masked", "D3.agreement.clean")

# %%
C = fs.papers.ffidelity
paper_rows = sorted({(ds, arch) for ds, arch, _ in PAPER})
restores = out.claim(fs.verdicts.replicated(
    C.claim_finetune_restores, samples, clean=min(ratios), removed=max(ratios),
    paper="; ".join(f"{ds} {arch}: clean {PAPER[ds, arch, 'fine-tuned'][0] - PAPER[ds, arch, 'original'][0]:+.1f}"
                          f", at 10 % {PAPER[ds, arch, 'fine-tuned'][2] - PAPER[ds, arch, 'original'][2]:+.1f} points"
                          for ds, arch in paper_rows if ds != "SST2")),
    note=f"β = {beta}, {n_draws} draws of exactly round(ρn) removed units per input; {replicas} trained replicas "
         "per setting").claim
out.table(restores.table, "claim_restores")
for r in restores.table[restores.table["domain"] == "images"].to_dict("records"):  # "image_…": the CNN, "vit_…"
    prefix = "vit" if r["architecture"] == NAMES["vit"] else "image"
    for key, column in (("gain", "gain"), ("clean_gap", "clean gap"), ("drop", "original drop")):
        out.glue(f"{prefix}_{key}", 100 * r[column])
restores.table

# %%
acc = summary.set_index(["domain", "architecture", "model", "ratio"])["mean"]
for d, n, ref in dict.fromkeys(k[:3] for k in cases):
    a = st.label(d, n, ref)
    drop = float(acc[d, a, "original", min(ratios)] - acc[d, a, "original", max(ratios)])
    out.glue(f"drop_{a.split()[0].lower()}{'_pad' if 'pad' in a else ''}", 100 * drop)
zero_embedding = [st.label("text", n, st.text_removals["zero embedding"]) for n in st.text_models]
text_robust = out.claim(fs.verdicts.replicated(
    C.claim_text_robust, samples, text=zero_embedding, clean=min(ratios), removed=max(ratios),
    paper="drop 0→10 % of the original: " + ", ".join(
        f"{ds} {arch} {PAPER[ds, arch, 'original'][0] - PAPER[ds, arch, 'original'][2]:.1f}"
        for ds, arch in paper_rows) + " points"),
    note=f"zero-embedding removal for text; the pad-deletion rows are in the table; {replicas} trained replicas per "
         "setting").claim
out.table(text_robust.table, "claim_text_robust")
text_robust.table

# %%
final = boundary.groupby(["beta", "ratio"])[["accuracy", "agreement with the original", "stability"]].mean()
top = max(boundary_ratios)
at_top = final.xs(top, level="ratio")
beta_grid = torch.tensor(at_top.index.tolist(), dtype=torch.float64)
out.glue("boundary_top_ratio", top)
out.glue("spearman_beta_accuracy", float(fl.metrics.statistics.spearman(beta_grid, torch.tensor(at_top["accuracy"].to_numpy()))))
out.glue("original_acc_top", float(at_top.loc[0.0, "accuracy"]))
out.glue("best_acc_top", float(at_top["accuracy"].max()))
tuned_top = at_top.loc[betas]
out.glue("spearman_beta_agreement",
         float(fl.metrics.statistics.spearman(torch.tensor(betas, dtype=torch.float64),
                                 torch.tensor(tuned_top["agreement with the original"].to_numpy())))
         if len(betas) > 1 else float("nan"))

# %% [markdown]
# The clean agreement, and the two claims about β decided on the per-input samples.

# %%
clean = final.xs(min(boundary_ratios), level="ratio")
out.glue("min_clean_agreement", float(clean.loc[betas, "agreement with the original"].min()))
out.glue("clean_agreement_bar", float(clean.loc[0.0, "accuracy"]) + fs.verdicts.rule("D3.agreement.clean").margin)
boundary_note = (f"image model, original = β 0; {n_draws} draws per input; agreement = same predicted class as the "
                 f"original model on the same masked input; {replicas} trained replicas per β")
keeps = out.claim(fs.verdicts.replicated(
    C.claim_beta_accuracy, boundary_samples, ratio=top,
    paper="β large: > 60 % at 50 % masking; original < 40 % at 10 % (CIFAR-100, Fig. 1(a))"), note=boundary_note).claim
agrees = out.claim(fs.verdicts.replicated(
    C.claim_beta_agreement, boundary_samples, ratio=top,
    paper="higher β → lower agreement with the original (Fig. 1(b)); high clean agreement"), note=boundary_note).claim
for claim, name in ((keeps, "claim_beta_accuracy"), (agrees, "claim_beta_agreement")):
    out.table(claim.table, name)
agrees.table

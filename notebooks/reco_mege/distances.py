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
# # Sanity checks of the distances between explanations (Figs. 2–3)
#
# ReCo and MeGe compare the explanations that k cross-trained models give of one sample, so they need a distance
# between explanation maps. The paper (§4.3) puts six candidates through two sanity checks: the 1-Wasserstein
# (earth mover's) distance, Sørensen–Dice, Spearman, SSIM, ℓ1 and ℓ2. In the first check a point of interest moves
# across a 32×32 image over 100 interpolated maps, and the distance from the first map should grow with the
# displacement (Fig. 2). In the second, Gaussian noise of growing σ is added to an image, 50 times per σ, and
# the distance from the clean image should grow with σ (Fig. 3). The paper reports that all six pass both (R4),
# SSIM and ℓ2 with a higher variance, and then keeps Spearman.
#
# The paper's moving-point masks are lost, so the check tests our reconstruction of them: it is a study check. Each
# check is made over independent units: for Fig. 2, `paths` paths of a Gaussian point (std `radius` pixels), each
# drawn from a random row near the left edge to a random row near the right edge in `steps` maps; for Fig. 3,
# `repeats` series of noisy copies, one per σ, each drawn anew. Per unit, the Spearman ρ between the displacement (or
# σ) and the distance; per (check × distance), the mean ρ over the units with its t interval. Spearman here is
# xplique's sqrt(1 − |ρ|); Dice compares each map's top `top_fraction` pixels.

# %% tags=["parameters"]
size = 32
paths = 4
steps = 6
radius = 2.0
sigmas = [0.1, 0.5, 2.0]
repeats = 3
top_fraction = 0.1
seed = 0

# %%
import numpy as np
import pandas as pd

import faithlab as fl
import faithlab_study as fs
from faithlab_study.papers.reco_mege.claims import sanity as R

out = fs.artifacts.for_notebook()
fl.plots.set_style()
NAMES = R.LABELS
out.glue("paths", paths)
out.glue("steps", steps)
out.glue("repeats", repeats)
out.glue("n_sigmas", len(sigmas))

# %% [markdown]
# ## Fig. 2: a moving point of interest
# The distance between the first map of a path and each of its `steps` maps, one panel per distance (bottom; the
# line is the mean over the paths and the band ± 1 standard deviation), under six maps of the first path (top).

# %%
moving = R.random_paths(paths, size=size, steps=steps, radius=radius, generator=seed)
fig2 = pd.concat([R.distance_frame(maps[0], maps, coords={"step": range(steps)}, top_fraction=top_fraction)
                  .assign(path=p) for p, maps in enumerate(moving)], ignore_index=True)
out.table(fig2.groupby(["distance", "step"], sort=False)["value"].agg(["mean", "std"]).reset_index(), "fig2")
shown = np.linspace(0, steps - 1, min(6, steps)).round().astype(int)
fig = fl.plots.strip_and_curves(fig2, moving[0][shown], x="step", panel="distance", order=R.KINDS, names=NAMES,
                                band="sd", titles=[f"step {i}" for i in shown], xlabel="step", ylabel="distance",
                                value_label="map value")
out.figure(fig, "fig2_centre")

# %% [markdown]
# ## Fig. 3: growing noise
# The "original image" is the first test digit (32×32, normalised grey levels). Each σ of `sigmas` gets `repeats`
# noisy copies (series r holds copy r of every σ); the line is the mean distance to the clean image and the band ± 1
# standard deviation (bottom), under the clean image and one noisy copy per σ (top).

# %%
image = fl.data.load("digits", split="test", size=size).x[0, 0]
noisy = R.noise_maps(image, sigmas, repeats=repeats, generator=seed)
fig3 = R.distance_frame(image, noisy, coords={"sigma": sigmas, "repeat": range(repeats)}, top_fraction=top_fraction)
out.table(fig3.groupby(["distance", "sigma"], sort=False)["value"].agg(["mean", "std"]).reset_index(), "fig3")
picked = sorted(set(np.linspace(0, len(sigmas) - 1, min(5, len(sigmas))).round().astype(int)))
fig = fl.plots.strip_and_curves(fig3, [image] + [noisy[i, 0] for i in picked], x="sigma", panel="distance",
                                order=R.KINDS, names=NAMES, band="sd", xlabel="σ", ylabel="distance",
                                value_label="grey level",
                                titles=["original"] + [f"σ = {sigmas[i]:g}" for i in picked])
out.figure(fig, "fig3")

# %% [markdown]
# ## Does each distance pass?
# Per distance and check: the Spearman ρ of each independent unit (a path, a noise series), their mean and lowest,
# and, pooled over every map for reading, the ρ with its chance level (`null low`, `null high`: the central 95 % of ρ
# when the pairing of maps and displacement is shuffled, 1000 draws). The spread per σ (the mean standard deviation
# over σ divided by the distance's overall mean) tests the paper's remark that SSIM and ℓ2 vary most.

# %%
units = pd.concat([R.unit_spearman(fig2, x="step", unit="path").assign(check="Fig. 2 (moving point)"),
                   R.unit_spearman(fig3, x="sigma", unit="repeat").assign(check="Fig. 3 (noise)")],
                  ignore_index=True)
out.table(units, "units")
checks = pd.concat([R.monotonicity(fig2, x="step").assign(check="Fig. 2 (moving point)"),
                    R.monotonicity(fig3, x="sigma").assign(check="Fig. 3 (noise)")], ignore_index=True)
spread = fig3.groupby(["distance", "sigma"], sort=False)["value"].std().groupby("distance", sort=False).mean() \
    / fig3.groupby("distance", sort=False)["value"].mean()
checks["relative spread (Fig. 3)"] = checks["distance"].map(spread).where(checks["check"] == "Fig. 3 (noise)")
out.table(checks, "checks")
seconds = pd.DataFrame({"distance": list(fig3.attrs["seconds"]),
                        "ms per map": [1e3 * s for s in fig3.attrs["seconds"].values()]})
out.table(seconds, "timings")
for kind, s in fig3.attrs["seconds"].items():
    out.glue(f"ms_{kind}", f"{1e3 * s:.2g}")
checks

# %% [markdown]
# ## R4
# Decided by its registered rule (`fs.papers.reco_mege.claims.sanity.claim_sanity_checks`, rule R4, a study check,
# listed here): per (check × distance) cell, the mean over the independent units of their Spearman ρ; "all six pass
# both": every cell. The null is ρ = 0, a distance unrelated to the displacement.

# %%
out.rules("R4")

# %%
r4 = out.claim(fs.verdicts.replicated(R.claim_sanity_checks, units)).claim
out.table(r4.table, "r4_settings")
for _, row in r4.table.iterrows():
    out.glue(f"{'fig2' if row['check'].startswith('Fig. 2') else 'fig3'}_rho_{row['distance']}",
             f"{row['mean ρ']:.2f}")
held = (r4.table["outcome"] == "holds").groupby(r4.table["distance"], sort=False).all()
out.glue("passing_both", ", ".join(NAMES[k] for k in held.index[held]) or "none")
print(r4.verdict, "—", r4.verdict.why)
r4.table

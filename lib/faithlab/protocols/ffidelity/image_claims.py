"""F-Fidelity's other image claims: removal out of distribution on the stand-in (our check), GradCAM preferred to
Saliency (Tables 11–12), the cost of ROAR against F-Fidelity (Table 13), the size read-out of the plateau (Fig. 4),
robustness to the hyperparameters (Tables 24–26) and explanations kept by the fine-tuning (App. D.4, Table 9)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import _validate, explainers, perturb, verdicts
from faithlab.metrics.papers import ffidelity
from faithlab.metrics.papers.reco_mege.distances import top_mask
from faithlab.metrics.statistics import rankdata
from faithlab.protocols.ffidelity.ranking import _beyond, _null_of


def claim_ood_check(diagnostic: pd.DataFrame, *, main: str, control: str, n_images: int, model: str = "original",
                    min_gap: float = 0.05, control_max: float = 0.02, level: float = 0.95,
                    label: str = "Study check", seed: int = 0) -> verdicts.Claim:
    """Our check of the stand-in (a study check, not the paper's claim): removal is out of distribution on the main
    (coloured) canvases and not on the grey control.

    diagnostic: :func:`faithlab.protocols.removal_diagnostic` rows of both settings, with a "setting" column holding
    ``main`` and ``control`` (and a "replica" column when the notebook trains replicas: one diagnostic per trained
    model); the OOD gap is the accuracy ``model`` loses to the largest k background pixels
    (:func:`faithlab.protocols.ood_gap`). Premise and null: the grey control is the diagnostic's own null — there the
    removal value is the background's grey, so its mean gap must not exceed ``control_max`` by more than a tolerance of
    one image's accuracy (1 / ``n_images``; the gap moves in such steps, so the premise never hinges on float
    rounding), else the diagnostic flags more than OOD removal: not testable here. Statistic: the main gap minus the
    control's, averaged over the replicas, with a ``level`` normal interval whose variance is the between-replica
    variance of the differences / R plus the mean conservative (unpaired) binomial variance over ``n_images`` images
    per setting / R. Decision (:func:`faithlab.verdicts.verdict` at both ends of the interval): ≥ ``min_gap`` for the
    full check, > 0 for a part. Exact: no resampling (``seed`` is accepted and unused)."""
    from statistics import NormalDist

    from faithlab.protocols.diagnostics import ood_gap

    n = _validate.positive_int(n_images, "n_images")
    replicas = sorted(diagnostic["replica"].unique(), key=str) if "replica" in diagnostic.columns else [None]
    rows = []
    for rep in replicas:
        frame = diagnostic if rep is None else diagnostic[diagnostic["replica"] == rep]
        for key, name in (("main", main), ("control", control)):
            part = frame[(frame["setting"] == name) & (frame["model"] == model)]
            if part.empty:
                raise ValueError(f"diagnostic holds no rows of setting {name!r} and model {model!r}")
            k = int(part["k"].max())
            clean = float(part.loc[part["removed"] == "none", "accuracy"].iloc[0])
            gap = float(ood_gap(part, k=k)[model])
            moved = clean - gap
            se2 = (clean * (1 - clean) + moved * (1 - moved)) / n
            rows.append({"replica": rep, "which": key, "setting": name, "model": model, "k": k,
                         "clean accuracy": clean, "background removed": moved, "OOD gap": gap, "se": se2 ** 0.5})
    table = pd.DataFrame(rows)
    main_rows, control_rows = table[table["which"] == "main"], table[table["which"] == "control"]
    gaps_main = main_rows["OOD gap"].to_numpy(dtype=float)
    gaps_control = control_rows["OOD gap"].to_numpy(dtype=float)
    diffs = gaps_main - gaps_control  # one per replica, in the same order
    r = len(diffs)
    within = float((main_rows["se"].to_numpy() ** 2 + control_rows["se"].to_numpy() ** 2).mean())
    between = float(np.var(diffs, ddof=1)) if r > 1 else 0.0
    diff = float(diffs.mean())
    half = NormalDist().inv_cdf(0.5 + level / 2) * ((between + within) / r) ** 0.5
    low, high = diff - half, diff + half
    gap_main, gap_control = float(gaps_main.mean()), float(gaps_control.mean())
    tol = 1 / n
    untestable = (None if gap_control <= control_max + tol + 1e-12 else
                  f"the grey control (the null) loses {gap_control:.3f} to background removal (more than "
                  f"{control_max:g} + one image, {tol:.3f}): the diagnostic flags more than OOD removal")
    v = verdicts.verdict(diff, reproduced=f">= {min_gap}", partly="> 0", interval=(low, high), untestable=untestable,
                         what="the coloured minus grey OOD gap")
    return verdicts.Claim(
        f"{label}: removal is out of distribution on the coloured canvases and not on the grey control",
        rule=f"unit: a test image of one trained replica ({r} replicas, {n} images per setting); statistic: the "
             f"{model} model's accuracy lost to the largest k background pixels, coloured minus grey, averaged over "
             f"the replicas, with a {level:.0%} normal interval (between-replica variance plus a conservative "
             f"binomial error); direction: coloured loses more; margins: {min_gap:g} for the full check, 0 for a part",
        premise=f"null: the grey control, whose removal value is its own background, must lose at most "
                f"{control_max:g} (tolerance one image, {tol:.3f}); it loses {gap_control:.3f}",
        paper_value="— (F-Fidelity's premise)",
        our_value=f"accuracy lost to {int(table['k'].max())} background pixels: coloured {gap_main:.3f}, grey "
                  f"{gap_control:.3f}; difference {diff:+.3f} [{low:+.3f}, {high:+.3f}]",
        verdict=v, table=table, kind="study check", units=n * r)


def per_image_ffid(model, x: torch.Tensor, y: torch.Tensor, maps: Mapping[str, torch.Tensor], *,
                   sparsity: Sequence[float], alpha: float = 0.5, beta: float = 0.1, n_samples: int = 50,
                   seed: int = 0, batch_size: int = 256) -> pd.DataFrame:
    """Per-image FFid+ and FFid− of several maps on one (fine-tuned) model, the input of
    :func:`claim_map_preferred` (App. D.10, Tables 11–12) → one row per image ("case", from 1) and map label with
    "FFid+" and "FFid−" (:func:`~faithlab.metrics.fid_plus` at ``sparsity`` and :func:`~faithlab.metrics.fid_minus`
    at its paired :func:`~faithlab.metrics.minus_sparsity`, each averaged over the sizes) and "constant map" (the
    map ranks no pixel above another; its removal order is the random ties rule, so its scores measure random
    removal).

    maps: ``{label: attributions}`` of ``x`` (any layout ``fid_plus`` accepts), explained for ``y``. Every map sees
    the same Monte-Carlo masks (generator ``seed``); the scores of an image do not depend on the other images or
    on ``batch_size``. A map's :class:`~faithlab.perturb.ConstantMapWarning` is not raised: the column counts them.
    """
    import warnings

    from faithlab import perturb

    common = dict(target=y, alpha=alpha, beta=beta, n_samples=n_samples, generator=seed, ties="random",
                  batch_size=batch_size)
    rows = []
    for label, attr in maps.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", perturb.ConstantMapWarning)
            plus = ffidelity.fid_plus_details(model, x, attr, sparsity=sparsity, **common)
            minus = ffidelity.fid_minus(model, x, attr, sparsity=ffidelity.minus_sparsity(sparsity), **common)
        rows += [{"case": i + 1, "explainer": label, "FFid+": float(p), "FFid−": float(m), "constant map": bool(c)}
                 for i, (p, m, c) in enumerate(zip(plus["score"].mean(1), minus.mean(1), plus["constant"]))]
    return pd.DataFrame(rows, columns=["case", "explainer", "FFid+", "FFid−", "constant map"])


def claim_map_preferred(per_image: pd.DataFrame, *, better: str = "GradCAM", worse: str = "Saliency",
                        label: str = "F8", setting: str = "Table 11", paper_value: str = "", n_boot: int = 2000,
                        seed: int = 0, paper: str | None = None) -> verdicts.Claim:
    """Claim of App. D.10 (Tables 11–12): F-Fidelity rates ``better`` above ``worse`` — higher FFid+ and lower FFid−.

    per_image: one row per image ("case") and explainer with the image's "FFid+" and "FFid−" (means over
    explanation sizes), e.g. :func:`per_image_ffid`; with a "replica" column (one fine-tuned model per replica) the
    bootstrap is two-stage (replicas, then images). setting: the table or setting, named in the claim ("Table 12:
    fine-tuned on the evaluation set"). Statistic: per image, ``better`` − ``worse`` of FFid+ (direction: higher)
    and of FFid− (direction: lower), each with a paired bootstrap interval (95 %, generator ``seed``) against the
    margin 0; the two parts are decided by :func:`faithlab.verdicts.from_settings` (both for the full claim, one for
    a part; a tie is undecided, never a failure)."""
    paper_value = paper_value if paper is None else paper  # out.claim keeps paper_value= for itself
    index = ["replica", "case"] if "replica" in per_image.columns else ["case"]
    wide = per_image.pivot_table(index=index, columns="explainer", values=["FFid+", "FFid−"], aggfunc="first")
    missing = [m for m in (better, worse) if ("FFid+", m) not in wide.columns]
    if missing:
        raise ValueError(f"per_image holds no rows of {missing}")
    groups = wide.index.get_level_values("replica").to_numpy() if "replica" in index else None
    what = "parts (FFid+ higher, FFid− lower)"
    if len(wide) < 2:
        comps = {}
        v = verdicts.from_settings([], reproduced=1.0, partly=0.5, untestable="fewer than 2 images", what=what)
    else:
        comps = {"FFid+ (higher)": verdicts.bootstrap_diff(wide["FFid+", better], wide["FFid+", worse],
                                                           n_boot=n_boot, seed=seed, groups=groups),
                 "FFid− (lower)": verdicts.bootstrap_diff(wide["FFid−", better], wide["FFid−", worse],
                                                          higher_is_better=False, n_boot=n_boot, seed=seed,
                                                          groups=groups)}
        v = verdicts.from_settings(list(comps.values()), reproduced=1.0, partly=0.5, what=what)
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.4f} [{c.low:+.4f}, {c.high:+.4f}])" for k, c in comps.items())
    if comps:
        v = v.with_why(f"{v.why} — 95 % bootstrap interval over {len(wide)} images: {steps}")
    means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()
    table = pd.DataFrame([{"comparison": k, "mean difference": c.mean, "low": c.low, "high": c.high,
                           "outcome": c.outcome, "images": c.n} for k, c in comps.items()])
    n_rep = int(per_image["replica"].nunique()) if "replica" in index else 1
    return verdicts.Claim(
        f"{label}: F-Fidelity rates {better} above {worse}: higher FFid+, lower FFid- (App. D.10, {setting})",
        rule=f"unit: a test image ({n_rep} trained replica(s)); per image, FFid± of each map averaged over explanation "
             f"sizes; statistic: {better} − {worse} of FFid+ and of FFid−, each with a paired bootstrap interval "
             f"({n_boot} resamples, 95 %; replicas, then images); the paper's direction: FFid+ higher and FFid− "
             f"lower; margin 0",
        premise=f"null: no difference between the maps (an interval containing 0 is a tie, undecided): "
                f"{steps or 'none'}",
        paper_value=paper_value,
        our_value=f"FFid+ {means.loc[better, 'FFid+']:.4f} vs {means.loc[worse, 'FFid+']:.4f}, "
                  f"FFid- {means.loc[better, 'FFid−']:.4f} vs {means.loc[worse, 'FFid−']:.4f}",
        verdict=v, table=table, kind="paper", units=int(len(wide)))


def claim_cost(cost_table: pd.DataFrame, stages: pd.DataFrame, *, target: str = "F-Fidelity", other: str = "ROAR",
               label: str = "F9", paper_value: str = "", seed: int = 0, paper: str | None = None) -> verdicts.Claim:
    """Claim of App. D.11 (Table 13): F-Fidelity (one fine-tuning) costs less than ROAR (one retraining per
    explainer) — a study check here: the work ratio is fixed by design.

    cost_table: rows (method, stage, seconds, forward equivalents, …) with a "total" stage per method; stages: the
    study's ``costs`` (one row per stage and explainer, with "cached"). Work is counted exactly (forward hooks;
    forward-pass equivalents = image passes + 2 × backward passes), so the work ratio has no sampling null: it is
    fixed by the count of training runs (ROAR retrains once per explainer, F-Fidelity fine-tunes once) against
    F-Fidelity's N-mask evaluation, and it is the same on every machine and run — hence ``kind="study check"``.
    Decision (:func:`faithlab.verdicts.verdict`, an exact value): the ratio target/other below 1; not testable when a
    method's total work is missing or zero. Seconds are reported beside it (with the timing noise, the relative range
    of ROAR's identical retrainings), never decided on. ``seed`` is accepted and unused (nothing is resampled)."""
    paper_value = paper_value if paper is None else paper  # out.claim keeps paper_value= for itself
    total = cost_table[cost_table["stage"] == "total"].set_index("method")
    missing = [m for m in (target, other) if m not in total.index]
    work = seconds = float("nan")
    if not missing and float(total.loc[other, "forward equivalents"]) > 0:
        work = float(total.loc[target, "forward equivalents"] / total.loc[other, "forward equivalents"])
        seconds = float(total.loc[target, "seconds"] / total.loc[other, "seconds"])
    retrain = stages[(stages["stage"] == "retrain (ROAR)") & ~stages["cached"].astype(bool)]
    equal = len(retrain) >= 2 and retrain["image passes"].nunique() == 1
    noise = (float((retrain["seconds"].max() - retrain["seconds"].min()) / retrain["seconds"].mean())
             if equal else float("nan"))
    untestable = (f"no total work of {', '.join(missing)}" if missing else
                  None if pd.notna(work) else f"{other}'s total work is zero")
    v = verdicts.verdict(work if pd.notna(work) else 0.0, reproduced="< 1", partly=None, untestable=untestable,
                         what=f"the work ratio {target}/{other}")
    return verdicts.Claim(
        f"{label}: {target} (one fine-tuning) is cheaper than {other} (one retraining per explainer) "
        f"(App. D.11, Table 13)",
        rule=f"the ratio {target}/{other} of the total forward-pass equivalents, counted exactly; the paper's "
             f"direction: below 1 (seconds are shown, not decided on: they depend on the machine)",
        premise="no sampling null: work is counted exactly, and the ratio is fixed by the number of training runs "
                f"({len(stages[stages['stage'] == 'retrain (ROAR)'])} retrainings against one fine-tuning of as many "
                f"epochs) against the N-mask evaluation — a study check of the design, not a measurement",
        paper_value=paper_value,
        our_value=f"ratio {target}/{other}: {work:.2f} in forward-pass equivalents, {seconds:.2f} in seconds",
        verdict=v, table=pd.DataFrame([{"work ratio": work, "seconds ratio": seconds,
                                        "seconds: timing noise": noise}]), kind="study check",
        trained=False)  # a ratio of training runs fixed by the design: no training seed changes it


def claim_size_readout(table: pd.DataFrame, *, tolerance: float, reproduced: float = 0.8, partly: float = 0.5,
                       label: str = "F4", n_draws: int = 1000, seed: int = 0) -> verdicts.Claim:
    """Claim of Theorem 1 (Fig. 4, App. D.8): the plateau start / turning point of FFid+ against the explanation
    size reveals the true size r.

    table: one row per (r, β) case with "r", "beta/alpha" and "r read off". Cases with r = β/α+ are left out (the
    two critical points coincide). A read-out is correct when |r̂ − r| ≤ ``tolerance``. Null: the read-outs shuffled
    over the cases (``n_draws``, generator ``seed``) — r̂ carrying no information about r still matches it within
    the tolerance for some cases; the share of correct read-outs must lie beyond that null's 95 % range, else not
    testable here (also with fewer than 3 cases). Decision (:func:`faithlab.verdicts.verdict` at both ends of the
    share's 95 % bootstrap interval over the cases, generator ``seed``): ``reproduced`` for the claim, ``partly`` for
    a part (our margins: the paper shows curves). Units: the cases."""
    eligible = table[(table["r"] - table["beta/alpha"]).abs() > 1e-9]
    r = eligible["r"].to_numpy(dtype=float)
    r_hat = eligible["r read off"].to_numpy(dtype=float)

    def share_correct(truth, read):
        return float((abs(read - truth) <= tolerance + 1e-9).mean()) if len(truth) else float("nan")

    share = share_correct(r, r_hat)
    null = (verdicts.null_draws(share_correct, r, r_hat, what="r read off shuffled over the (r, β) cases",
                                n_draws=n_draws, seed=seed) if len(r) >= 3 else None)
    untestable = ("fewer than 3 cases with r ≠ β/α+: no chance level" if null is None
                  else verdicts.within_null(share, null, what="the share of correct read-outs"))
    interval = (share, share)
    if untestable is None:
        correct = torch.as_tensor(abs(r_hat - r) <= tolerance + 1e-9, dtype=torch.float64)
        draws = verdicts.hierarchical_means(correct, groups=None, n_boot=2000, seed=seed)
        interval = tuple(torch.quantile(draws, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist())
    v = verdicts.verdict(share, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable,
                         interval=interval, what="the share of correct read-outs")
    return verdicts.Claim(
        f"{label}: FFid+ vs explanation size has a plateau/turning point at the true size r (Theorem 1, Fig. 4)",
        rule=f"unit: an (r, β) case (cases with r = β/α+ left out); a read-out is correct when |r̂ − r| ≤ "
             f"{tolerance:g}; statistic: the share of correct read-outs with a bootstrap interval over the cases "
             f"(95 %); the paper's direction: r is read off; margins (ours): {reproduced:.0%} for the claim, "
             f"{partly:.0%} for a part",
        premise="null: " + (null.describe(2) if null is not None else "not computable (fewer than 3 cases)")
                + "; the share must lie beyond it",
        paper_value="qualitative: plateau on [r, β/α+] (Fig. 4)",
        our_value=(f"{share:.0%} of the {len(eligible)} (r, β) cases with r ≠ β/α+ (of {len(table)} in all) read r "
                   f"within {tolerance:g}" if len(eligible)
                   else "no (r, β) case with r ≠ β/α+"),
        verdict=v, table=eligible.assign(correct=abs(r_hat - r) <= tolerance + 1e-9), kind="paper",
        units=int(len(eligible)))


def _setting_units(table: pd.DataFrame) -> list[str]:
    """The columns that order one setting's units: replica (when the frame has one), then degradation seed."""
    return [c for c in ("replica", "seed") if c in table.columns]


def _oriented_interval(values: pd.Series, replicas, *, n_boot: int, seed: int) -> tuple[float, float, float, int]:
    """Mean of ``values`` (NaN left out) with its 95 % percentile interval (:func:`faithlab.verdicts.bootstrap_diff`):
    two-stage (replicas, then the units within them) when ``replicas`` is given, else over the units; a single unit
    gives a zero-width interval, none a NaN one."""
    x = values.to_numpy(dtype="float64")
    keep = ~np.isnan(x)
    n = int(keep.sum())
    if n < 2:
        mean = float(x[keep][0]) if n else float("nan")
        return mean, mean, mean, n
    groups = None if replicas is None else np.asarray(replicas, dtype=str)[keep]
    c = verdicts.bootstrap_diff(torch.tensor(x[keep], dtype=torch.float64), n_boot=n_boot, seed=seed, groups=groups)
    return c.mean, c.low, c.high, n


def _null_mean_over_replicas(draws: pd.DataFrame, key: str) -> pd.Series:
    """The null draws of ``key`` for one setting; with a "replica" column, the mean over the replicas of each draw
    (the same permutation in every replica when the notebook draws them from one seed): the chance level of the
    correlation averaged over the replicas, as the observed one is."""
    if "replica" in draws.columns and draws["replica"].nunique() > 1 and "draw" in draws.columns:
        return draws.groupby("draw")[key].mean()
    return draws[key]


def claim_robust_hyperparameters(table: pd.DataFrame, null: pd.DataFrame, *, threshold: float = 0.8,
                                 reproduced: float = 1.0, partly: float = 0.5, label: str = "F6",
                                 n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """Claim of App. D.9 (Tables 24–26): F-Fidelity's ranking of the degraded explainers is robust to N, β and α.

    table: the macro correlations "morf_vs_gt", "lerf_vs_gt", "morf_vs_lerf" of each setting (varied, value), one
    row per unit: a degradation ``seed`` of the explained maps and, when the notebook trains replicas, a ``replica``
    (one independently trained classifier with its fine-tuned models); one row per setting is one unit. null:
    :func:`permuted_correlations` rows of each setting (with its varied and value, and the replica when the table has
    one: the draws of one permutation are averaged over the replicas). Premise and null, per setting: each mean
    correlation is defined and lies beyond its 95 % chance range (ground-truth order permuted; for MoRF vs LeRF, the
    curves' pairing shuffled), on either side; a setting where one does not cannot be told from chance and is not
    testable (left out; with three explainers every setting is). Outcome, per testable setting: each correlation
    signed so that its ideal is +1, its mean over the units with a 95 % bootstrap interval (two-stage: replicas, then
    seeds within them; generator ``seed``) against the margin ``threshold``: the setting holds when all three
    intervals lie at or above it, fails when one lies wholly below it, and is undecided otherwise (never failed by a
    tie). Decision (:func:`faithlab.verdicts.from_settings`, its text generated): the share of testable settings that
    hold, against ``reproduced`` (the paper's "robust" reads every setting) and ``partly``; not testable without a
    testable setting. Units: the smallest setting's (replica, seed) units."""
    threshold = float(threshold)
    keys = list(ffidelity.DIRECTIONS)
    missing = [c for c in ("varied", "value", *keys) if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks the columns {missing} (one row per setting and unit with the macro "
                         "correlations)")
    order = _setting_units(table)
    has_replicas = "replica" in table.columns
    rows, holds, units = [], [], []
    for (varied, value), part in table.groupby(["varied", "value"], sort=False):
        part = part.sort_values(order) if order else part
        draws = null[(null["varied"] == varied) & (null["value"] == value)]
        row = {"varied": varied, "value": value}
        flags, beyond, n_units = [], [], []
        for j, (key, direction) in enumerate(ffidelity.DIRECTIONS.items()):
            ideal = -1.0 if direction == "min" else 1.0
            mean, low, high, n = _oriented_interval(ideal * part[key].astype(float),
                                                    part["replica"] if has_replicas else None,
                                                    n_boot=n_boot, seed=seed + j)
            x = ideal * mean  # the mean correlation itself, in its own direction
            nl = _null_of(_null_mean_over_replicas(draws, key)) if len(draws) else None
            beyond.append(_beyond(nl, x))
            flags.append(None if n == 0 else True if low >= threshold else False if high < threshold else None)
            n_units.append(n)
            row |= {key: x, f"{key} low": ideal * (high if ideal < 0 else low),
                    f"{key} high": ideal * (low if ideal < 0 else high),
                    f"{key} chance": (f"[{nl.low:.2f}, {nl.high:.2f}]" if nl is not None else "undefined")}
        setting = None if any(f is None for f in flags) and not any(f is False for f in flags) else \
            not any(f is False for f in flags)
        row |= {"units": min(n_units), "passes threshold": _setting_word(setting), "testable": all(beyond)}
        row["holds"] = _setting_word(setting) if row["testable"] else "not testable"
        rows.append(row)
        if row["testable"]:
            holds.append(setting)
            units.append(min(n_units))
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise ValueError("table holds no setting")
    v = verdicts.from_settings(holds, reproduced=reproduced, partly=partly, what="testable settings of N, β, α",
                               untestable=None if holds else "no setting whose correlations all lie beyond chance")
    n_rep = int(table["replica"].nunique()) if has_replicas else 1
    replicas_note = (f"{n_rep} independently trained replicas, bootstrap over replicas then seeds" if n_rep > 1
                     else "one trained model: the interval resamples degradation seeds only, not training runs")
    n_pass = int((frame["passes threshold"] == "holds").sum())
    return verdicts.Claim(
        f"{label}: F-Fidelity's ranking is robust to N, β and α (App. D.9, Tables 24-26)",
        rule=f"unit: a degradation seed of a trained replica; per setting of N, β or α, each of its three macro "
             f"correlations signed so that the ideal is +1, its mean with a 95 % interval ({replicas_note}) against "
             f"the margin |ρ| = {threshold:g} with the ideal sign; a setting holds when all three intervals lie at or "
             "beyond it and is undecided while one straddles it; statistic: the share of testable settings that "
             "hold; the paper's direction: all of them",
        premise="null: a setting is testable when each mean correlation lies beyond its 95 % chance range with the "
                "ground-truth order permuted over the explainers (MoRF vs LeRF: the + and − curves' pairing "
                f"shuffled); {len(holds)} of {len(frame)} settings are testable",
        paper_value="robust across N ∈ {10..150}, β ∈ {0.05..0.25}, α ∈ {0.2..0.8}",
        our_value=f"{sum(h is True for h in holds)} of {len(holds)} testable settings hold "
                  f"({sum(h is None for h in holds)} undecided); {n_pass} of {len(frame)} settings lie at or beyond "
                  f"|corr| ≥ {threshold:g} with the ideal sign",
        verdict=v, table=frame, units=min(units) if units else None)


def _setting_word(flag: bool | None) -> str:
    return "holds" if flag is True else "fails" if flag is False else "undecided"


AGREEMENT = {"spearman": "Spearman ρ", "top overlap": "top-10 % overlap"}
"""The per-image statistics of :func:`map_agreement` and their names in tables."""


def map_agreement_over_replicas(pairs: Mapping, *, seed: int = 0, **options
                                ) -> tuple[pd.DataFrame, dict[str, verdicts.Null]]:
    """:func:`map_agreement` of each replica's ``(original, finetuned)`` maps (``pairs``: replica → the pair) → the
    per-image frames stacked with a ``replica`` column, and per statistic the Null of its mean over the replicas:
    each permutation draw averaged over the replicas (the same draws in every replica, from ``seed``), or the draws
    pooled when a replica dropped undefined draws (constant maps)."""
    if not isinstance(pairs, Mapping) or not pairs:
        raise ValueError(f"pairs must map each replica to its (original, finetuned) maps, got {type(pairs).__name__}")
    per = {r: map_agreement(o, f, seed=seed, **options) for r, (o, f) in pairs.items()}
    frame = pd.concat([f.assign(replica=r) for r, (f, _) in per.items()], ignore_index=True)
    nulls = {}
    for stat, null in next(iter(per.values()))[1].items():
        draws = [np.asarray(per[r][1][stat].draws, dtype=float) for r in per]
        pooled = np.mean(draws, axis=0) if len({len(d) for d in draws}) == 1 else np.concatenate(draws)
        nulls[stat] = verdicts.Null(null.what, tuple(pooled))
    return frame, nulls


def map_agreement(original: torch.Tensor, finetuned: torch.Tensor, *, top_fraction: float = 0.1,
                  n_draws: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, dict[str, verdicts.Null]]:
    """How alike the maps of one explainer on the original and on the fine-tuned model are, image by image (App.
    D.4, Table 9), with the chance level of each statistic.

    original, finetuned: ``(B, ...)`` maps of the same B images (e.g. ``RankingStudy.clean[label, "original"]``
    and ``[label, "fine-tuned"]``), flattened per image. Per image: the Spearman correlation of the two maps
    (average ranks; NaN when either is constant) and the overlap of their top ``top_fraction`` pixels (the Dice
    coefficient, 1 − :func:`faithlab.metrics.map_distance` ``kind="dice"``). Null of the mean of each statistic
    over the images: the fine-tuned maps' images shuffled (``n_draws`` permutations, numpy generator ``seed``),
    i.e. how alike the maps of two images are — what a map that kept nothing of its image would score. Returns the
    per-image frame (image, spearman, top overlap) and ``{statistic: Null}``.

    Cost: the B × B agreement of every map with every other is computed once as two matrix products (the ranks,
    centred and normalised, and the top masks); each permutation then reads B of its entries."""
    for t, name in ((original, "original"), (finetuned, "finetuned")):
        _validate.tensor(t, name)
        if t.ndim < 2 or len(t) < 3:
            raise ValueError(f"{name} must hold at least 3 maps (B, ...), got shape {tuple(t.shape)}")
    if original.shape != finetuned.shape:
        raise ValueError(f"finetuned has shape {tuple(finetuned.shape)} but original has {tuple(original.shape)}")
    top_fraction = _validate.fraction(top_fraction, "top_fraction", closed_low=False)
    a, b = (t.detach().flatten(1).double() for t in (original, finetuned))
    za, zb = (r - r.mean(1, keepdim=True) for r in (rankdata(a), rankdata(b)))
    za, zb = (z / z.norm(dim=1, keepdim=True) for z in (za, zb))  # a constant map: 0 / 0, NaN
    ma, mb = (top_mask(t, top_fraction).double() for t in (a, b))
    pairwise = {"spearman": (za @ zb.T).clamp(-1.0, 1.0),  # [i, j]: map i of original against map j of finetuned
                "top overlap": 2 * (ma @ mb.T) / (ma.sum(1)[:, None] + mb.sum(1)[None, :])}
    n = len(a)
    per_image = pd.DataFrame({"image": range(n), **{k: m.diagonal().cpu().numpy() for k, m in pairwise.items()}})
    rng = np.random.default_rng(seed)
    perms = torch.as_tensor(np.stack([rng.permutation(n) for _ in range(n_draws)]), device=a.device)
    rows = torch.arange(n, device=a.device).expand_as(perms)
    nulls = {k: verdicts.Null("maps of other images (shuffled pairings)",
                              tuple(torch.nanmean(m[rows, perms], dim=1).tolist())) for k, m in pairwise.items()}
    return per_image, nulls


def claim_maps_preserved(per_image: pd.DataFrame, nulls: dict[str, verdicts.Null], *, value: str,
                         statistic: str = "spearman", reproduced: float = 0.7, partly: float = 0.4,
                         label: str = "F10", seed: int = 0) -> verdicts.Claim:
    """Claim of App. D.4 (Table 9): the fine-tuning keeps the explanations — the maps of the original and of the
    fine-tuned model highlight the same regions, with minor changes of intensity.

    per_image, nulls: :func:`map_agreement` of one explainer and model (``value`` names it in the claim); with a
    "replica" column in ``per_image`` (the rows of every trained replica), the interval is two-stage. Statistic: the
    mean over images of ``statistic`` (NaN images, constant maps, left out) with a 95 % bootstrap interval (replicas,
    then images; generator ``seed``). Premise and null: the statistic is defined and lies beyond the 95 % range of its
    chance level — the same mean with the maps of other images — else an image's maps on the two models cannot be
    told from maps of two different images: not testable here. Decision (:func:`faithlab.verdicts.verdict` at both
    ends of the interval): ``reproduced`` for the claim, ``partly`` for a part (our margins: the paper's evidence is
    visual)."""
    if statistic not in AGREEMENT:
        raise ValueError(f"statistic must be one of {list(AGREEMENT)}, got {statistic!r}")
    if not 0 < partly <= reproduced <= 1:
        raise ValueError(f"need 0 < partly ≤ reproduced ≤ 1, got partly={partly!r}, reproduced={reproduced!r}")
    values = per_image[statistic].astype(float)
    keep = values.notna().to_numpy()
    observed = float(values.mean()) if keep.any() else float("nan")
    null = nulls[statistic]
    untestable = verdicts.first_reason(
        verdicts.undefined(observed, what=f"the mean {AGREEMENT[statistic]}"),
        None if keep.sum() >= 2 else "fewer than 2 images with a defined statistic",
        verdicts.within_null(observed, null, what=f"the mean {AGREEMENT[statistic]}"))
    interval = (observed, observed)
    if untestable is None:
        x = torch.tensor(values.to_numpy(dtype=float)[keep], dtype=torch.float64)
        codes = (verdicts._group_codes(per_image["replica"].to_numpy()[keep], int(keep.sum()))
                 if "replica" in per_image.columns else None)
        draws = verdicts.hierarchical_means(x, groups=codes, n_boot=2000, seed=seed)
        interval = tuple(torch.quantile(draws, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist())
    v = verdicts.verdict(observed, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable,
                         interval=interval, what=f"the mean {AGREEMENT[statistic]}")
    table = pd.DataFrame([{"statistic": AGREEMENT[k], "mean": float(per_image[k].mean()),
                           "images": int(per_image[k].notna().sum()), "chance median": n.median,
                           "chance low": n.low, "chance high": n.high} for k, n in nulls.items()])
    n_rep = int(per_image["replica"].nunique()) if "replica" in per_image.columns else 1
    return verdicts.Claim(
        f"{label} ({value}): fine-tuning keeps the explanations: the maps of the original and the fine-tuned model "
        f"highlight the same regions (App. D.4, Table 9)",
        rule=f"unit: a test image of one trained replica ({n_rep} replica(s)); statistic: the mean "
             f"{AGREEMENT[statistic]} of an image's two maps, with a bootstrap interval (95 %; replicas, then "
             f"images); the paper's direction: high agreement; margins (ours, the paper shows maps): {reproduced:g} "
             f"for the claim, {partly:g} for a part",
        premise=f"null: the mean must lie beyond the range of the same mean with the maps of other images, "
                f"{null.describe(2)}",
        paper_value="similar regions, minor changes of intensity (qualitative)",
        our_value=f"{AGREEMENT[statistic]} {observed:.2f} [{interval[0]:.2f}, {interval[1]:.2f}] (chance "
                  f"{null.median:.2f})", verdict=v, table=table, kind="paper", units=int(keep.sum()))


PAIR_MAPS = (("GradCAM", "gradcam"), ("Saliency", "saliency"))
"""The two maps of App. D.10 (Tables 11–12): label and explainer method."""


def pair_maps(model, x: torch.Tensor, y: torch.Tensor, *, seed: int = 0,
              maps: Sequence[tuple[str, str]] = PAIR_MAPS) -> dict[str, torch.Tensor]:
    """GradCAM's and Saliency's maps (``maps``: label, method) of ``model`` on the images x (N, C, H, W) for the
    targets y (N,), per pixel as the ranking study's: ``{label: (N, H, W)}``."""
    return {label: perturb.unit_scores(
        explainers.explain(model, x, y, method=method, generator=seed), perturb.pixel_units(x),
        reduce=ffidelity.REDUCE).view(-1, *x.shape[2:]) for label, method in maps}

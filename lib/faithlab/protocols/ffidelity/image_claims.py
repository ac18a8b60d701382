"""F-Fidelity's other image claims: removal out of distribution on the stand-in (our check), GradCAM preferred to
Saliency (Tables 11–12), the cost of ROAR against F-Fidelity (Table 13), the size read-out of the plateau (Fig. 4),
robustness to the hyperparameters (Tables 24–26) and explanations kept by the fine-tuning (App. D.4, Table 9)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import _validate, verdicts
from faithlab.metrics import ffidelity
from faithlab.metrics.distances import top_mask
from faithlab.metrics.statistics import rankdata
from faithlab.protocols.ffidelity.ranking import _beyond, _null_of


def claim_ood_check(diagnostic: pd.DataFrame, *, main: str, control: str, n_images: int, model: str = "original",
                    min_gap: float = 0.05, control_max: float = 0.02, level: float = 0.95,
                    label: str = "Study check") -> verdicts.Claim:
    """Our check of the stand-in (not the paper's claim): removal is out of distribution on the main (coloured)
    canvases and not on the grey control.

    diagnostic: :func:`faithlab.protocols.removal_diagnostic` rows of both settings, with a "setting" column holding
    ``main`` and ``control``; the OOD gap is the accuracy ``model`` loses to the largest k background pixels
    (:func:`faithlab.protocols.ood_gap`). Premise and null: the grey control is the diagnostic's own null — there
    the removal value is the background's grey, so its gap must stay below ``control_max``, else the diagnostic
    flags more than OOD removal and not testable here. Decision: the main gap minus the control's, with a ``level``
    normal interval from a conservative (unpaired) binomial standard error over ``n_images`` images per setting:
    above 0 and a main gap of at least ``min_gap`` → reproduced; above 0 with a smaller gap → partly; below 0 → not
    reproduced; containing 0 → not testable here (the main gap cannot be told from the null's)."""
    from statistics import NormalDist

    from faithlab.protocols.diagnostics import ood_gap

    n = _validate.positive_int(n_images, "n_images")
    rows = {}
    for key, name in (("main", main), ("control", control)):
        part = diagnostic[(diagnostic["setting"] == name) & (diagnostic["model"] == model)]
        if part.empty:
            raise ValueError(f"diagnostic holds no rows of setting {name!r} and model {model!r}")
        k = int(part["k"].max())
        clean = float(part.loc[part["removed"] == "none", "accuracy"].iloc[0])
        gap = float(ood_gap(part, k=k)[model])
        moved = clean - gap
        se2 = (clean * (1 - clean) + moved * (1 - moved)) / n
        rows[key] = {"setting": name, "model": model, "k": k, "clean accuracy": clean, "background removed": moved,
                     "OOD gap": gap, "se": se2 ** 0.5}
    diff = rows["main"]["OOD gap"] - rows["control"]["OOD gap"]
    half = NormalDist().inv_cdf(0.5 + level / 2) * (rows["main"]["se"] ** 2 + rows["control"]["se"] ** 2) ** 0.5
    low, high = diff - half, diff + half
    gap_main, gap_control = rows["main"]["OOD gap"], rows["control"]["OOD gap"]
    untestable = verdicts.first_reason(
        None if gap_control < control_max else
        f"the grey control (the null) loses {gap_control:.3f} to background removal (≥ {control_max:g}): the "
        f"diagnostic flags more than OOD removal",
        None if low > 0 or high < 0 else
        f"the coloured gap minus the control's ({diff:+.3f} [{low:+.3f}, {high:+.3f}]) cannot be told from 0 with "
        f"{n} images")
    v = verdicts.ladder(low > 0 and gap_main >= min_gap, low > 0, untestable=untestable)
    if untestable is None:
        v = verdicts.Verdict(v, f"gap difference {diff:+.3f}, {level:.0%} interval [{low:+.3f}, {high:+.3f}]")
    return verdicts.Claim(
        f"{label}: removal is out of distribution on the coloured canvases and not on the grey control",
        rule=f"the {model} model's accuracy lost to the largest k background pixels, coloured minus grey, with a "
             f"{level:.0%} interval (conservative binomial error over {n} images per setting): reproduced when the "
             f"interval lies above 0 and the coloured gap is at least {min_gap:g}, partly when above 0 with a smaller "
             f"gap, not reproduced when below 0",
        premise=f"null: the grey control, whose removal value is its own background, must lose less than "
                f"{control_max:g} (it loses {gap_control:.3f})",
        paper_value="— (F-Fidelity's premise)",
        our_value=f"accuracy lost to {rows['main']['k']} background pixels: coloured {gap_main:.3f}, grey "
                  f"{gap_control:.3f}",
        verdict=v, table=pd.DataFrame(list(rows.values())))


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
                        label: str = "F8", setting: str = "Table 11", paper_value: str = "", n_boot: int = 4000,
                        seed: int = 0) -> verdicts.Claim:
    """Claim of App. D.10 (Tables 11–12): F-Fidelity rates ``better`` above ``worse`` — higher FFid+ and lower FFid−.

    per_image: one row per image ("case") and explainer with the image's "FFid+" and "FFid−" (means over
    explanation sizes), e.g. :func:`per_image_ffid`. setting: the table or setting, named in the claim ("Table
    12: fine-tuned on the evaluation set"). Null: no difference between the two maps — a paired bootstrap over the images (95 %) calls
    each comparison (FFid+ higher, FFid− lower) a win, a tie or a loss; when both are ties the data cannot tell the
    maps apart and the claim is not testable here. Rule: reproduced when both are wins, partly when one is a win
    and the other a tie, not reproduced when either is a loss."""
    wide = per_image.pivot(index="case", columns="explainer", values=["FFid+", "FFid−"])
    missing = [m for m in (better, worse) if ("FFid+", m) not in wide.columns]
    if missing:
        raise ValueError(f"per_image holds no rows of {missing}")
    if len(wide) < 2:
        comps = {}
        untestable = "fewer than 2 images"
    else:
        comps = {"FFid+ (higher)": verdicts.bootstrap_diff(wide["FFid+", better], wide["FFid+", worse],
                                                           n_boot=n_boot, seed=seed),
                 "FFid− (lower)": verdicts.bootstrap_diff(wide["FFid−", better], wide["FFid−", worse],
                                                          higher_is_better=False, n_boot=n_boot, seed=seed)}
        outcomes = [c.outcome for c in comps.values()]
        untestable = (f"neither FFid+ nor FFid− of {better} can be told from {worse}'s (both 95 % intervals contain 0)"
                      if set(outcomes) == {"tie"} else None)
    outcomes = [c.outcome for c in comps.values()]
    v = verdicts.ladder(outcomes == ["win", "win"], "loss" not in outcomes, untestable=untestable)
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.4f} [{c.low:+.4f}, {c.high:+.4f}])" for k, c in comps.items())
    if untestable is None:
        v = verdicts.Verdict(v, f"95 % bootstrap interval over {len(wide)} images — {steps}")
    means = per_image.groupby("explainer")[["FFid+", "FFid−"]].mean()
    table = pd.DataFrame([{"comparison": k, "mean difference": c.mean, "low": c.low, "high": c.high,
                           "outcome": c.outcome, "images": c.n} for k, c in comps.items()])
    return verdicts.Claim(
        f"{label}: F-Fidelity rates {better} above {worse}: higher FFid+, lower FFid- (App. D.10, {setting})",
        rule=f"per image, FFid± of each map averaged over explanation sizes; paired bootstrap over images (4000 "
             f"resamples, 95 %) of {better} − {worse}: reproduced when FFid+ is higher and FFid− lower (both wins), "
             f"partly when one wins and the other ties, not reproduced when either is a loss",
        premise=f"null: no difference between the maps, the paired bootstrap's interval containing 0; with both "
                f"comparisons ties the claim is not testable ({steps or 'no comparison'})",
        paper_value=paper_value,
        our_value=f"FFid+ {means.loc[better, 'FFid+']:.4f} vs {means.loc[worse, 'FFid+']:.4f}, "
                  f"FFid- {means.loc[better, 'FFid−']:.4f} vs {means.loc[worse, 'FFid−']:.4f}",
        verdict=v, table=table)


def claim_cost(cost_table: pd.DataFrame, stages: pd.DataFrame, *, target: str = "F-Fidelity", other: str = "ROAR",
               label: str = "F9", paper_value: str = "") -> verdicts.Claim:
    """Claim of App. D.11 (Table 13): F-Fidelity (one fine-tuning) costs less than ROAR (one retraining per
    explainer).

    cost_table: rows (method, stage, seconds, forward equivalents, …) with a "total" stage per method; stages: the
    study's ``costs`` (one row per stage and explainer, with "cached"). Work is counted exactly (forward hooks;
    forward-pass equivalents = image passes + 2 × backward passes), so the work ratio has no sampling null: it is
    decided by the count of training runs (ROAR retrains once per explainer, F-Fidelity fine-tunes once) against
    F-Fidelity's N-mask evaluation, and it is the same on every machine and run. Rule: reproduced when the work
    ratio target/other is below 1, not reproduced when it is at least 1; not testable when a method's total work is
    missing or zero. Seconds are reported beside it (with the timing noise, the relative range of ROAR's identical
    retrainings), never decided on: they depend on the machine and on what else it runs, and a verdict must not."""
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
    v = verdicts.ladder(work < 1, untestable=untestable)
    if untestable is None:
        v = verdicts.Verdict(v, f"work ratio {work:.2f}")
    return verdicts.Claim(
        f"{label}: {target} (one fine-tuning) is cheaper than {other} (one retraining per explainer) "
        f"(App. D.11, Table 13)",
        rule=f"ratio {target}/{other} of the total forward-pass equivalents: reproduced when below 1, not reproduced "
             f"when at least 1 (seconds are shown, not decided on: they depend on the machine)",
        premise="no sampling null: work is counted exactly, and the ratio is decided by the number of training runs "
                f"({len(stages[stages['stage'] == 'retrain (ROAR)'])} retrainings against one fine-tuning of as many "
                f"epochs) against the N-mask evaluation",
        paper_value=paper_value,
        our_value=f"ratio {target}/{other}: {work:.2f} in forward-pass equivalents, {seconds:.2f} in seconds",
        verdict=v, table=pd.DataFrame([{"work ratio": work, "seconds ratio": seconds,
                                        "seconds: timing noise": noise}]))


def claim_size_readout(table: pd.DataFrame, *, tolerance: float, reproduced: float = 0.8, partly: float = 0.5,
                       label: str = "F4", n_draws: int = 1000, seed: int = 0) -> verdicts.Claim:
    """Claim of Theorem 1 (Fig. 4, App. D.8): the plateau start / turning point of FFid+ against the explanation
    size reveals the true size r.

    table: one row per (r, β) case with "r", "beta/alpha" and "r read off". Cases with r = β/α+ are left out (the
    two critical points coincide). A read-out is correct when |r̂ − r| ≤ ``tolerance``. Null: the read-outs shuffled
    over the cases (``n_draws``, generator ``seed``) — r̂ carrying no information about r still matches it within
    the tolerance for some cases; the share of correct read-outs must lie beyond that null's 95 % range, else not
    testable here (also with fewer than 3 cases). Rule: reproduced when at least ``reproduced`` of the cases are
    correct, partly from ``partly``, else not reproduced."""
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
    v = verdicts.verdict(share, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable)
    return verdicts.Claim(
        f"{label}: FFid+ vs explanation size has a plateau/turning point at the true size r (Theorem 1, Fig. 4)",
        rule=f"a read-out is correct when |r̂ − r| ≤ {tolerance:g} (cases with r = β/α+ left out): reproduced when at "
             f"least {reproduced:.0%} of the cases are correct, partly from {partly:.0%}, else not reproduced",
        premise="null: " + (null.describe(2) if null is not None else "not computable (fewer than 3 cases)")
                + "; the share must lie beyond it",
        paper_value="qualitative: plateau on [r, β/α+] (Fig. 4)",
        our_value=(f"{share:.0%} of {len(eligible)} (r, β) cases read r within {tolerance:g}" if len(eligible)
                   else "no (r, β) case with r ≠ β/α+"),
        verdict=v, table=eligible.assign(correct=abs(r_hat - r) <= tolerance + 1e-9))


def claim_robust_hyperparameters(table: pd.DataFrame, null: pd.DataFrame, *, threshold: float = 0.8,
                                 reproduced: float = 1.0, partly: float = 0.5, label: str = "F6"
                                 ) -> verdicts.Claim:
    """Claim of App. D.9 (Tables 24–26): F-Fidelity's ranking of the degraded explainers is robust to N, β and α.

    table: one row per setting (varied, value) with the mean macro correlations "morf_vs_gt", "lerf_vs_gt",
    "morf_vs_lerf"; null: :func:`permuted_correlations` rows of each setting (with its varied and value). Premise
    and null, per setting: each correlation is defined and lies beyond its 95 % chance range (ground-truth order
    permuted; for MoRF vs LeRF, the curves' pairing shuffled), on either side; a setting where one does not cannot
    be told from chance and is not testable (left out; with three explainers every setting is). A testable setting
    holds when each correlation has its ideal sign with magnitude at least ``threshold``. Rule
    (:func:`faithlab.verdicts.from_settings`): reproduced when the share of testable settings that hold is at least
    ``reproduced`` (the paper's "robust" reads every setting), partly from ``partly``, else not reproduced; not
    testable without a testable setting."""
    rows, holds = [], []
    for s in table.itertuples(index=False):
        s = s._asdict()
        draws = null[(null["varied"] == s["varied"]) & (null["value"] == s["value"])]
        row = {"varied": s["varied"], "value": s["value"]}
        passes, beyond = [], []
        for key, direction in ffidelity.DIRECTIONS.items():
            x = float(s[key])
            n = _null_of(draws[key]) if len(draws) else None
            ideal = -1.0 if direction == "min" else 1.0
            passes.append(bool(pd.notna(x)) and ideal * x >= threshold)
            beyond.append(_beyond(n, x))
            row |= {key: x, f"{key} chance": (f"[{n.low:.2f}, {n.high:.2f}]" if n is not None else "undefined")}
        row |= {"passes threshold": all(passes), "testable": all(beyond)}
        row["holds"] = bool(row["testable"] and row["passes threshold"])
        rows.append(row)
        if row["testable"]:
            holds.append(row["holds"])
    frame = pd.DataFrame(rows)
    v = verdicts.from_settings(holds, reproduced=reproduced, partly=partly, what="testable settings of N, β, α",
                               untestable=None if holds else "no setting whose correlations all lie beyond chance")
    n_pass = int(frame["passes threshold"].sum()) if len(frame) else 0
    return verdicts.Claim(
        f"{label}: F-Fidelity's ranking is robust to N, β and α (App. D.9, Tables 24-26)",
        rule=f"a testable setting holds when its three mean macro correlations have the ideal sign with |ρ| ≥ "
             f"{threshold:g}; reproduced when {reproduced:.0%} of the testable settings hold, partly from "
             f"{partly:.0%}, else not reproduced",
        premise="null: a setting is testable when each correlation lies beyond its 95 % chance range with the "
                "ground-truth order permuted over the explainers (MoRF vs LeRF: the + and − curves' pairing "
                f"shuffled); {len(holds)} of {len(frame)} settings are",
        paper_value="robust across N ∈ {10..150}, β ∈ {0.05..0.25}, α ∈ {0.2..0.8}",
        our_value=f"{int(sum(holds))} of {len(holds)} testable settings hold; {n_pass} of {len(frame)} pass "
                  f"|corr| ≥ {threshold:g} with the ideal sign",
        verdict=v, table=frame)



AGREEMENT = {"spearman": "Spearman ρ", "top overlap": "top-10 % overlap"}
"""The per-image statistics of :func:`map_agreement` and their names in tables."""


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
                         label: str = "F10") -> verdicts.Claim:
    """Claim of App. D.4 (Table 9): the fine-tuning keeps the explanations — the maps of the original and of the
    fine-tuned model highlight the same regions, with minor changes of intensity.

    per_image, nulls: :func:`map_agreement` of one explainer and model (``value`` names it in the claim). Statistic:
    the mean over images of ``statistic`` (NaN images, constant maps, left out). Premise and null: the statistic
    is defined and lies beyond the 95 % range of its chance level — the same mean with the maps of other images —
    else an image's maps on the two models cannot be told from maps of two different images: not testable here.
    Rule: reproduced from ``reproduced``, partly from ``partly``, else not reproduced (the thresholds are ours:
    the paper's evidence is visual)."""
    if statistic not in AGREEMENT:
        raise ValueError(f"statistic must be one of {list(AGREEMENT)}, got {statistic!r}")
    if not 0 < partly <= reproduced <= 1:
        raise ValueError(f"need 0 < partly ≤ reproduced ≤ 1, got partly={partly!r}, reproduced={reproduced!r}")
    values = per_image[statistic].astype(float)
    observed = float(values.mean()) if values.notna().any() else float("nan")
    null = nulls[statistic]
    untestable = verdicts.first_reason(
        verdicts.undefined(observed, what=f"the mean {AGREEMENT[statistic]}"),
        verdicts.within_null(observed, null, what=f"the mean {AGREEMENT[statistic]}"))
    v = verdicts.verdict(observed, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable)
    table = pd.DataFrame([{"statistic": AGREEMENT[k], "mean": float(per_image[k].mean()),
                           "images": int(per_image[k].notna().sum()), "chance median": n.median,
                           "chance low": n.low, "chance high": n.high} for k, n in nulls.items()])
    return verdicts.Claim(
        f"{label} ({value}): fine-tuning keeps the explanations: the maps of the original and the fine-tuned model "
        f"highlight the same regions (App. D.4, Table 9)",
        rule=f"the mean {AGREEMENT[statistic]} of an image's two maps over the images: reproduced from "
             f"{reproduced:g}, partly from {partly:g}, else not reproduced (our thresholds: the paper shows maps)",
        premise=f"null: the mean must lie beyond the range of the same mean with the maps of other images, "
                f"{null.describe(2)}",
        paper_value="similar regions, minor changes of intensity (qualitative)",
        our_value=f"{AGREEMENT[statistic]} {observed:.2f} (chance {null.median:.2f})", verdict=v, table=table)

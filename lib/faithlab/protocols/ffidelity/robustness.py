"""F-Fidelity's robustness claims (Table 8, App. D.2–D.3): fine-tuning restores accuracy under random removal,
the text models are robust to it, and accuracy and agreement step with β; each comparison held against its null
(test inputs resampled).

Every claim function takes ``paper``, the paper's value shown beside ours (not ``paper_value``, which
:meth:`faithlab.outputs.Outputs.claim` keeps for a claim given as text), and ``seed``, the generator of all its
resampling; notebooks call them as ``out.claim(fn, frames, ..., seed=seed)``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from faithlab import verdicts


# ---- robustness and series/text claims
# Table 8 and App. D.3 (notebook ffidelity/robustness) and Tables 3-4, 6-7 (notebook ffidelity/series_text) as claim
# functions: frames in, a verdicts.Claim out. Every interval is a bootstrap over the test inputs, two-stage
# (replicas, then inputs within them) when the frame carries a "replica" column (independently trained models);
# every premise is checked with a tolerance before the outcome is looked at, and an interval that straddles its
# margin leaves its setting undecided (counted both ways by verdicts.from_settings), never failed.
MIN_DROP = 0.02
"""The smallest accuracy drop (2 points) that counts as "removal costs the model accuracy": a model whose drop's
95 % interval lies wholly below it has nothing to restore or to keep (the mechanism is absent)."""
ABOVE_CHANCE = 0.05
"""The accuracy above the majority-class share (5 points) a model must be able to reach: a model whose interval of
accuracy − majority share lies wholly below it is at chance and has nothing to lose."""


def _rows(samples: pd.DataFrame, **where) -> pd.DataFrame:
    mask = pd.Series(True, index=samples.index)
    for column, wanted in where.items():
        mask &= samples[column] == wanted
    part = samples[mask]
    if part.empty:
        raise ValueError(f"samples hold no rows for {where}")
    return part.sort_values(["replica", "sample"] if "replica" in part.columns else "sample")


def _per_sample(samples: pd.DataFrame, value: str, **where) -> torch.Tensor:
    """``value`` of the rows of ``samples`` matching ``where`` (column == value), ordered by replica (when the frame
    has one) and "sample" (float64)."""
    return torch.tensor(_rows(samples, **where)[value].to_numpy(dtype="float64"), dtype=torch.float64)


def _groups(samples: pd.DataFrame, **where):
    """The replica of each row :func:`_per_sample` returns (same order), or None for a frame without replicas."""
    if "replica" not in samples.columns:
        return None
    return _rows(samples, **where)["replica"].astype(str).to_numpy()


def _codes(groups) -> torch.Tensor | None:
    if groups is None:
        return None
    return torch.from_numpy(np.unique(np.asarray(groups, dtype=str), return_inverse=True)[1].reshape(-1)
                            .astype(np.int64))


def _units(samples: pd.DataFrame, **where) -> int:
    """Test inputs of the cell ``where``, pooled over replicas."""
    part = _rows(samples, **where)
    return int(len(part.drop_duplicates(["replica", "sample"] if "replica" in part.columns else ["sample"])))


def _chance(samples: pd.DataFrame, **where) -> float:
    """Majority-class share of the labels of the inputs matching ``where``: the accuracy of a constant guess."""
    part = _rows(samples, **where)
    labels = part.drop_duplicates(["replica", "sample"] if "replica" in part.columns else ["sample"])["label"]
    return float(labels.value_counts(normalize=True).max())


def _pct(ratio: float) -> str:
    return f"{100 * ratio:g} %"


def _interval(c: verdicts.Comparison, scale: float = 100.0) -> str:
    return f"{scale * c.mean:+.1f} [{scale * c.low:+.1f}, {scale * c.high:+.1f}]"


def _against(c: verdicts.Comparison, margin: float = 0.0) -> bool | None:
    """Whether ``c``'s interval (oriented: > 0 favours the claim) lies above ``margin`` (True), wholly below it
    (False) or straddles it (None: undecided, never a failure)."""
    if margin == 0:
        return True if c.outcome == "win" else False if c.outcome == "loss" else None
    return True if c.low > margin else False if c.high < margin else None


def _all(*flags: bool | None) -> bool | None:
    """Three-valued AND: False when one is False, True when all are True, else None (undecided)."""
    if any(f is False for f in flags):
        return False
    return True if all(f is True for f in flags) else None


def _word(flag: bool | None) -> str:
    return "holds" if flag is True else "fails" if flag is False else "undecided"


def _diff(a: torch.Tensor, b: torch.Tensor | None, groups, *, n_boot: int, seed: int) -> verdicts.Comparison:
    return verdicts.bootstrap_diff(a, b, n_boot=n_boot, seed=seed, groups=groups)


def _clean_and_removed(samples: pd.DataFrame, clean: float | None, removed: float | None) -> tuple[float, float]:
    ratios = sorted(samples["ratio"].unique())
    if len(ratios) < 2 and (clean is None or removed is None):
        raise ValueError(f"samples must hold at least two masking ratios, got {ratios}")
    return (float(ratios[0]) if clean is None else float(clean)), (float(ratios[-1]) if removed is None
                                                                   else float(removed))


def _replica_note(samples: pd.DataFrame) -> str:
    n = samples["replica"].nunique() if "replica" in samples.columns else 1
    return (f"{n} independently trained replicas per model, bootstrap over replicas then inputs" if n > 1 else
            "one trained model per setting: the interval resamples test inputs only, not training runs")


def claim_finetune_restores(samples: pd.DataFrame, *, domains: Sequence[str] = ("images", "time series"),
                            clean: float | None = None, removed: float | None = None, margin: float = 0.05,
                            min_drop: float = MIN_DROP, paper: str = "", n_boot: int = 2000,
                            seed: int = 0) -> verdicts.Claim:
    """Table 8 (App. D.2): on images and time series, fine-tuning preserves clean accuracy and restores accuracy
    under random removal.

    samples: one row per (domain, architecture, model "original" | "fine-tuned", ratio, sample) — and ``replica``
    when several models were trained per setting — with ``correct``, the share of the masking draws on which the
    model is right (every model sees the same masked copies), and ``label``. clean / removed: the masking ratios
    compared (default: the smallest and the largest).
    Premise, per model of ``domains`` (decided before the outcome): there must be accuracy to restore — a model
    whose original drop from ``clean`` to ``removed`` has a 95 % interval wholly below ``min_drop`` is not testable
    and leaves the settings. Outcome, per testable model, two paired bootstraps over the test inputs (two-stage
    with replicas): clean accuracy fine-tuned − original against the non-inferiority margin −``margin`` (5 points:
    the paper's own largest clean cost in Table 8, 3.3 points for the ViT, must count as preserved), and accuracy
    at ``removed`` fine-tuned − original
    against 0. The model holds when both intervals lie above their margins, fails when one lies wholly below it,
    and is undecided otherwise (a tie is never a failure); :func:`faithlab.verdicts.from_settings` over the
    testable models. Table: one row per model with the three intervals.
    """
    clean, removed = _clean_and_removed(samples, clean, removed)
    frame = samples[samples["domain"].isin(list(domains))]
    rows, holds, parts, units = [], [], [], []
    for (domain, arch), part in frame.groupby(["domain", "architecture"], sort=False):
        o0, o1 = (_per_sample(part, "correct", model="original", ratio=r) for r in (clean, removed))
        f0, f1 = (_per_sample(part, "correct", model="fine-tuned", ratio=r) for r in (clean, removed))
        g = _groups(part, model="original", ratio=clean)
        drop = _diff(o0, o1, g, n_boot=n_boot, seed=seed)
        kept = _diff(f0, o0, g, n_boot=n_boot, seed=seed)
        gain = _diff(f1, o1, g, n_boot=n_boot, seed=seed)
        testable = not drop.high < min_drop
        preserved, restored = _against(kept, -margin), _against(gain, 0.0)
        holds_here = _all(preserved, restored)
        if testable:
            holds.append(holds_here)
            units.append(drop.n)
        rows.append({"domain": domain, "architecture": arch, "original drop": drop.mean, "drop low": drop.low,
                     "drop high": drop.high, "clean gap": kept.mean, "clean gap low": kept.low,
                     "clean gap high": kept.high, "gain": gain.mean, "gain low": gain.low, "gain high": gain.high,
                     "inputs": drop.n, "testable": testable, "preserved": _word(preserved),
                     "restored": _word(restored), "holds": _word(holds_here) if testable else "not testable"})
        parts.append(f"{arch}: clean {_interval(kept)}, at {_pct(removed)} {_interval(gain)} points (original drops "
                     f"{_interval(drop)}{'' if testable else f', below {100 * min_drop:g} points: not testable'})")
    if not rows:
        raise ValueError(f"samples hold no model of the domains {list(domains)}")
    untestable = None if holds else (f"no original model loses {100 * min_drop:g} points or more to "
                                     f"{_pct(removed)} random removal, so there is no accuracy to restore")
    v = verdicts.from_settings(holds, untestable=untestable, what="testable image and time-series models")
    return verdicts.Claim(
        "Table 8: on images and time series, fine-tuning preserves clean accuracy and restores accuracy under "
        "random removal",
        rule=f"per image or time-series model, paired bootstraps over the test inputs (95 %; "
             f"{_replica_note(frame)}): clean accuracy fine-tuned − original against the non-inferiority margin "
             f"−{100 * margin:g} points (the paper's own largest clean cost, 3.3 points for the ViT, lies within it), "
             f"and accuracy at "
             f"{_pct(removed)} removal fine-tuned − original against 0 (the paper's direction: fine-tuned higher); a "
             "model holds when both intervals lie above their margins and is undecided while one straddles it; "
             "decided over the testable models by the house shares",
        premise=f"there is accuracy to restore: the original's drop from {_pct(clean)} to {_pct(removed)} removal must "
                f"not lie wholly below {100 * min_drop:g} points (paired bootstrap over test inputs, 95 %); testable: "
                f"{sum(r['testable'] for r in rows)} of {len(rows)} models",
        paper_value=paper, our_value="fine-tuned − original, points with 95 % interval: " + "; ".join(parts),
        verdict=v, table=pd.DataFrame(rows), kind="paper", units=min(units) if units else None)


def claim_text_robust(samples: pd.DataFrame, *, text: Sequence[str] | None = None, domain: str = "text",
                      references: Sequence[str] = ("images", "time series"), clean: float | None = None,
                      removed: float | None = None, min_drop: float = MIN_DROP, above_chance: float = ABOVE_CHANCE,
                      paper: str = "", n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """Table 8 (App. D.2): text models are robust to random removal even without fine-tuning.

    samples: as :func:`claim_finetune_restores` (the original models' rows are used). text: the text architectures
    that count (default: every one of ``domain``; e.g. only the paper's zero-embedding removal), the others are
    shown in the table only. Robust is relative, as in the paper (text drops 2.6–7.6 points, the others 10–31):
    each original text model's accuracy drop from ``clean`` to ``removed`` against the drop of each original model
    of ``references`` (different test inputs: independent bootstraps of the two drops, two-stage with replicas,
    95 % interval of reference drop − text drop, margin 0). Premises (tolerances, decided before the outcome): the
    removal must be able to hurt — a reference counts only when its drop's interval does not lie wholly below
    ``min_drop``, and without one the claim is not testable (robustness would hold by construction); and a text
    model counts only when its clean accuracy can exceed the majority-class share by ``above_chance`` (the interval
    of accuracy − share does not lie wholly below it), since a model at chance has no accuracy to lose. A pair
    holds when its interval lies above 0, fails when below, and is undecided when it straddles 0;
    :func:`faithlab.verdicts.from_settings` over the counted pairs. Table: one row per pair.
    """
    clean, removed = _clean_and_removed(samples, clean, removed)
    original = samples[samples["model"] == "original"]

    def drop_of(arch: str) -> tuple[torch.Tensor, object]:
        d = (_per_sample(original, "correct", architecture=arch, ratio=clean)
             - _per_sample(original, "correct", architecture=arch, ratio=removed))
        return d, _groups(original, architecture=arch, ratio=clean)

    text_archs = list(dict.fromkeys(original[original["domain"] == domain]["architecture"]))
    counted = text_archs if text is None else [a for a in text_archs if a in set(text)]
    ref_archs = list(dict.fromkeys(original[original["domain"].isin(list(references))]["architecture"]))
    if not text_archs or not ref_archs:
        raise ValueError(f"samples must hold original models of {domain!r} and of {list(references)}")
    refs = {}
    for j, arch in enumerate(ref_archs):
        d, g = drop_of(arch)
        draws = verdicts.hierarchical_means(d, groups=_codes(g), n_boot=n_boot, seed=seed + 101 + j)
        refs[arch] = (d, verdicts.comparison_from_draws(float(d.mean()), draws), draws)
    hurting = [a for a, (_, c, _) in refs.items() if not c.high < min_drop]
    rows, holds, skipped, units = [], [], [], []
    for i, arch in enumerate(text_archs):
        d, g = drop_of(arch)
        chance = _chance(original, architecture=arch, ratio=clean)
        above_c = verdicts.bootstrap_diff(_per_sample(original, "correct", architecture=arch, ratio=clean) - chance,
                                          n_boot=n_boot, seed=seed, groups=g)
        above = not above_c.high < above_chance
        if arch in counted and not above:
            skipped.append(arch)
        text_draws = verdicts.hierarchical_means(d, groups=_codes(g), n_boot=n_boot, seed=seed + 1 + i)
        for ref in ref_archs:
            ref_drop, ref_c, ref_draws = refs[ref]
            c = verdicts.comparison_from_draws(float(ref_drop.mean() - d.mean()), ref_draws - text_draws)
            counts = arch in counted and above and ref in hurting
            if counts:
                holds.append(c)
                units.append(min(len(d), len(ref_drop)))
            rows.append({"text model": arch, "reference": ref, "text drop": float(d.mean()),
                         "reference drop": float(ref_drop.mean()), "reference drop low": ref_c.low,
                         "reference drop high": ref_c.high, "difference": c.mean, "low": c.low, "high": c.high,
                         "outcome": c.outcome, "text above chance": above, "removal hurts the reference": ref in hurting,
                         "counted": counts})
    untestable = verdicts.first_reason(
        None if hurting else f"no image or time-series model loses {100 * min_drop:g} points or more to "
                             f"{_pct(removed)} removal, so robustness to it holds by construction",
        None if set(counted) - set(skipped) else f"no counted text model can exceed the majority-class share by "
                                                 f"{100 * above_chance:g} points on clean inputs")
    v = verdicts.from_settings(holds, untestable=untestable, what="text × reference pairs")
    drops = {r["text model"]: r["text drop"] for r in rows} | {r["reference"]: r["reference drop"] for r in rows}
    return verdicts.Claim(
        "Table 8: text models are robust to random removal even without fine-tuning",
        rule=f"per original text model ({', '.join(counted) or 'none'}) and counted reference model, the accuracy drop "
             f"from {_pct(clean)} to {_pct(removed)} random removal, independent bootstraps over the test inputs "
             f"(95 %; {_replica_note(original)}): the interval of reference drop − text drop against the margin 0 "
             "(the paper's direction: the text drop smaller); a pair is undecided while its interval holds 0; "
             "decided over the pairs by the house shares",
        premise=f"the removal can hurt: a reference model's drop must not lie wholly below {100 * min_drop:g} points "
                f"(counted: {', '.join(hurting) or 'none'}); and a text model must be able to beat the majority-class "
                f"share by {100 * above_chance:g} points on clean inputs (to have accuracy to lose)"
                f"{'; at chance: ' + ', '.join(skipped) if skipped else ''}",
        paper_value=paper,
        our_value="drop of the original, points: " + ", ".join(f"{a} {100 * v:.1f}" for a, v in drops.items()),
        verdict=v, table=pd.DataFrame(rows), kind="paper", units=min(units) if units else None)


def _consecutive(values: Sequence[float]) -> list[tuple[float, float]]:
    return [(values[i], values[i + 1]) for i in range(len(values) - 1)]


def _beta_steps(samples: pd.DataFrame, ratio: float, value: str, betas: Sequence[float], *, n_boot: int,
                seed: int) -> list[tuple[float, float, verdicts.Comparison]]:
    """Paired bootstraps over the inputs (two-stage with replicas) of ``value`` at ``ratio`` between consecutive
    ``betas`` (larger − smaller)."""
    per = {b: _per_sample(samples, value, beta=b, ratio=ratio) for b in betas}
    g = _groups(samples, beta=betas[0], ratio=ratio)
    return [(a, b, _diff(per[b], per[a], g, n_boot=n_boot, seed=seed)) for a, b in _consecutive(betas)]


def _step_flags(steps: list, *, want: str) -> list[bool | None]:
    """Per step: True when its outcome is ``want`` ("win": the larger β higher; "loss": lower), False when it is the
    opposite, None for a tie (undecided)."""
    other = {"win": "loss", "loss": "win"}[want]
    return [True if c.outcome == want else False if c.outcome == other else None for _, _, c in steps]


_CAP = "; a setting significantly the other way caps a reproduced verdict at partly"


def capped_settings(flags: Sequence[bool | None], *, capped: bool, what: str) -> verdicts.Verdict:
    """:func:`faithlab.verdicts.from_settings` over ``flags`` (None: undecided), with a reproduced verdict capped at
    partly when ``capped`` (a setting significantly the other way, a decided fact). The cap is applied at both ends
    (every undecided setting failing / holding), so the verdict is inconclusive only when the capped ends
    disagree."""
    v = verdicts.from_settings(list(flags), what=what)
    decision = v.decision + _CAP
    if not flags:
        return verdicts.Verdict(v, v.why, decision)
    ends = [str(verdicts.from_settings([bool(f) for f in flags], what=what)),
            str(verdicts.from_settings([f is not False for f in flags], what=what))]
    if capped:
        ends = [verdicts.PARTLY if e == verdicts.REPRODUCED else e for e in ends]
    k, u = sum(f is True for f in flags), sum(f is None for f in flags)
    why = (f"holds in {k} of {len(flags)} {what}" + (f", undecided in {u}" if u else "")
           + ("; one significantly the other way caps it at partly" if capped else ""))
    if ends[0] == ends[1]:
        return verdicts.Verdict(ends[0], why, decision)
    return verdicts.Verdict(verdicts.INCONCLUSIVE, f"{why}: {ends[1]} if the undecided held, {ends[0]} if not",
                            decision)


def _steps_verdict(steps: list, *, want: str, untestable: str | None, what: str) -> verdicts.Verdict:
    """:func:`capped_settings` over the steps; a step significantly the other way caps it at partly."""
    if untestable is not None:
        v = verdicts.from_settings([], untestable=untestable, what=what)
        return verdicts.Verdict(v, v.why, v.decision + _CAP)
    flags = _step_flags(steps, want=want)
    return capped_settings(flags, capped=any(f is False for f in flags), what=what)


def _drop_premise(samples: pd.DataFrame, clean: float, top: float, *, min_drop: float, n_boot: int, seed: int
                  ) -> tuple[verdicts.Comparison, str | None]:
    drop = _diff(_per_sample(samples, "accuracy", beta=0.0, ratio=clean),
                 _per_sample(samples, "accuracy", beta=0.0, ratio=top), _groups(samples, beta=0.0, ratio=clean),
                 n_boot=n_boot, seed=seed)
    return drop, None if not drop.high < min_drop else (
        f"masking {_pct(top)} of the input costs the original model less than {100 * min_drop:g} points "
        f"(drop {_interval(drop)} points, 95 %): there is no accuracy to keep")


def claim_beta_accuracy(samples: pd.DataFrame, *, ratio: float | None = None, min_drop: float = MIN_DROP,
                        paper: str = "", n_boot: int = 2000, seed: int = 0) -> verdicts.Claim:
    """App. D.3 (Fig. 1(a)): fine-tuning with a larger β keeps accuracy under heavier random masking.

    samples: one row per (beta, ratio, sample) — and ``replica`` with several trained models per β — with
    ``accuracy`` (the share of the masking draws on which the model fine-tuned with that β is right; β = 0 is the
    original model), ``agreement with the original`` and ``label``; every model sees the same masked copies.
    ratio: the masking compared (default the largest).
    Premise (a tolerance, decided first): masking must cost the original model accuracy — its drop from the clean
    inputs (the smallest ratio) to ``ratio`` must not lie wholly below ``min_drop``; else there is no accuracy to
    keep. Outcome: at ``ratio``, each step between consecutive β (0 → smallest β → … → largest) is a paired
    bootstrap over the inputs (two-stage with replicas, 95 %) of accuracy(larger) − accuracy(smaller) against 0:
    holds above, fails below, undecided across; :func:`faithlab.verdicts.from_settings` over the steps, a step
    significantly the other way capping it at partly. Table: one row per step.
    """
    clean, top = _clean_and_removed(samples, None, ratio)
    betas = sorted(samples["beta"].unique())
    if len(betas) < 2 or betas[0] != 0:
        raise ValueError(f"samples must hold the original (beta 0) and at least one fine-tuned β, got {betas}")
    drop, untestable = _drop_premise(samples, clean, top, min_drop=min_drop, n_boot=n_boot, seed=seed)
    steps = _beta_steps(samples, top, "accuracy", betas, n_boot=n_boot, seed=seed)
    v = _steps_verdict(steps, want="win", untestable=untestable, what="β steps")
    acc = samples[samples["ratio"] == top].groupby("beta")["accuracy"].mean()
    table = pd.DataFrame([{"from β": a, "to β": b, "ratio": top, "accuracy from": acc[a], "accuracy to": acc[b],
                           "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome, "inputs": c.n}
                          for a, b, c in steps])
    return verdicts.Claim(
        "D.3: fine-tuning with a larger β keeps accuracy under heavier random masking",
        rule=f"at {_pct(top)} masking, per step to the next larger β (original = 0), accuracy of the larger β minus "
             f"the smaller's, paired bootstrap over the test inputs (95 %; {_replica_note(samples)}), against the "
             "margin 0 (the paper's direction: the larger β more accurate); decided over the steps by the house "
             "shares, a step significantly the other way capping it at partly",
        premise=f"masking costs the original accuracy: its drop from clean to {_pct(top)} masking, "
                f"{_interval(drop)} points (95 %), must not lie wholly below {100 * min_drop:g} points",
        paper_value=paper,
        our_value=f"accuracy at {_pct(top)} masking: " + ", ".join(f"β={b:g} {100 * a:.1f} %" for b, a in acc.items()),
        verdict=v, table=table, kind="paper", units=min(c.n for _, _, c in steps))


def _combine_parts(a: str, b: str) -> str:
    """Two parts → reproduced when both are, not reproduced when neither is at least partly, else partly."""
    R, P, N = verdicts.DECIDED
    return R if a == R and b == R else N if a == N and b == N else P


def _ends(flags: list[bool | None], what: str) -> tuple[str, str]:
    """The verdict of ``flags`` with every undecided setting failing and holding (worst, best)."""
    worst = verdicts.from_settings([bool(f) for f in flags], what=what)
    best = verdicts.from_settings([f is not False for f in flags], what=what)
    return str(worst), str(best)


def claim_beta_agreement(samples: pd.DataFrame, *, ratio: float | None = None, margin: float = 0.05,
                         above_chance: float = ABOVE_CHANCE, paper: str = "", n_boot: int = 2000,
                         seed: int = 0) -> verdicts.Claim:
    """App. D.3 (Fig. 1(b)): a larger β agrees less with the original model on masked inputs, while on clean inputs
    the fine-tuned models agree with it.

    samples: as :func:`claim_beta_accuracy`. Two parts, each over its settings with
    :func:`faithlab.verdicts.from_settings`, paired bootstraps over the inputs (two-stage with replicas, 95 %):
    (a) at ``ratio`` (default the largest), each step between consecutive fine-tuned β, agreement(larger) −
    agreement(smaller) against 0 in the paper's direction (lower; a step significantly the other way caps the part
    at partly); (b) on clean inputs (the smallest ratio), each fine-tuned model's agreement with the original minus
    the original's own accuracy against the non-inferiority margin −``margin`` (two models right on a share a of the
    inputs need not agree on more). A setting whose interval straddles its margin is undecided (never failed).
    Premises: at least two fine-tuned β (design), and the original can beat the majority-class share by
    ``above_chance`` on clean inputs (the interval of accuracy − share does not lie wholly below it), else the bar
    of (b) is met by any model. The two parts combine as: reproduced when both are reproduced, not reproduced when
    neither is at least partly, else partly; computed with every undecided setting failing and holding, inconclusive
    when the two disagree. Table: one row per step and per model.
    """
    clean, top = _clean_and_removed(samples, None, ratio)
    tuned = [b for b in sorted(samples["beta"].unique()) if b != 0]
    if 0.0 not in set(samples["beta"]):
        raise ValueError("samples must hold the original model (beta 0)")
    correct = _per_sample(samples, "accuracy", beta=0.0, ratio=clean)
    g = _groups(samples, beta=0.0, ratio=clean)
    chance = _chance(samples, beta=0.0, ratio=clean)
    above = _diff(correct - chance, None, g, n_boot=n_boot, seed=seed)
    untestable = verdicts.first_reason(
        None if len(tuned) >= 2 else f"{len(tuned)} fine-tuned β: no step between two β to compare",
        None if not above.high < above_chance else
        f"the original cannot beat the majority-class share by {100 * above_chance:g} points on clean inputs "
        f"(accuracy − share {_interval(above)} points)")
    steps = _beta_steps(samples, top, "agreement with the original", tuned, n_boot=n_boot, seed=seed) \
        if len(tuned) >= 2 else []
    clean_checks = {b: _diff(_per_sample(samples, "agreement with the original", beta=b, ratio=clean), correct, g,
                             n_boot=n_boot, seed=seed) for b in tuned}
    a_flags = _step_flags(steps, want="loss")
    b_flags = [_against(c, -margin) for c in clean_checks.values()]
    decision = ("(a) and (b) each decided over its settings by the house shares (reproduced from 67 %, partly from "
                "33 %), a step of (a) significantly the other way capping (a) at partly; the claim reproduced when "
                "both parts are, not reproduced when neither is at least partly, else partly; applied with every "
                "undecided setting failing and holding, inconclusive when the two disagree")
    if untestable is not None:
        v = verdicts.ladder(False, untestable=untestable).with_why_decision(decision)
    else:
        capped = any(f is False for f in a_flags)
        a_ends = [verdicts.PARTLY if capped and e == verdicts.REPRODUCED else e
                  for e in _ends(a_flags, "fine-tuned β steps")]
        b_ends = _ends(b_flags, "fine-tuned models")
        worst, best = _combine_parts(a_ends[0], b_ends[0]), _combine_parts(a_ends[1], b_ends[1])
        why = (f"(a) masked agreement falls with β in {sum(f is True for f in a_flags)} of {len(a_flags)} steps "
               f"({sum(f is None for f in a_flags)} undecided{', one significantly rises' if capped else ''}); "
               f"(b) clean agreement within {100 * margin:g} points of the original's accuracy for "
               f"{sum(f is True for f in b_flags)} of {len(b_flags)} models ({sum(f is None for f in b_flags)} "
               "undecided)")
        v = verdicts.Verdict(worst if worst == best else verdicts.INCONCLUSIVE,
                             why if worst == best else f"{why}: {best} if the undecided held, {worst} if not",
                             decision)
    agree = samples.groupby(["beta", "ratio"])["agreement with the original"].mean()
    rows = [{"part": "(a) masked agreement falls", "β": f"{a:g} → {b:g}", "ratio": top, "value": agree[b, top],
             "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome,
             "holds": _word(f)} for (a, b, c), f in zip(steps, a_flags)]
    rows += [{"part": "(b) clean agreement", "β": f"{b:g}", "ratio": clean, "value": agree[b, clean],
              "difference": c.mean, "low": c.low, "high": c.high, "outcome": c.outcome, "holds": _word(f)}
             for (b, c), f in zip(clean_checks.items(), b_flags)]
    return verdicts.Claim(
        "D.3: larger β agrees less with the original model on masked inputs, while clean predictions agree",
        rule=f"(a) at {_pct(top)} masking, per step to the next larger fine-tuned β, agreement with the original of "
             "the larger β minus the smaller's against the margin 0 (the paper's direction: lower); (b) per "
             "fine-tuned model, clean agreement with the original minus the original's clean accuracy against the "
             f"non-inferiority margin −{100 * margin:g} points; paired bootstraps over the test inputs (95 %; "
             f"{_replica_note(samples)}), each part decided over its settings, the claim needing both",
        premise=f"at least two fine-tuned β ({len(tuned)}), and the original able to beat the majority-class share by "
                f"{100 * above_chance:g} points on clean inputs: accuracy − share {_interval(above)} points (95 %)",
        paper_value=paper,
        our_value=f"agreement at {_pct(top)} masking " + ", ".join(f"β={b:g} {100 * agree[b, top]:.1f} %" for b in tuned)
                  + "; clean agreement " + ", ".join(f"β={b:g} {100 * agree[b, clean]:.1f} %" for b in tuned)
                  + f" (original's clean accuracy {100 * float(correct.mean()):.1f} %)",
        verdict=v, table=pd.DataFrame(rows), kind="paper", units=len(correct))

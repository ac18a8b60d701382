"""F-Fidelity's ranking tables and claims (spec §1.9; Tables 1–2, 5, 10; App. D.7): the macro/micro correlations
and micro ranks of degraded explainers, their chance levels with the ground-truth order permuted, and the ranking,
LeRF and ablation claims judged against those nulls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch

from faithlab import _validate, stats, verdicts
from faithlab.metrics.papers import ffidelity


N_BOOT = 2000
"""Bootstrap resamples of every interval of the ranking claims (each claim runs some 25 times under
:func:`faithlab.verdicts.replicated`)."""


# -------------------------------------------------------------------------------------------------- tables
def ranking_correlations(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                         noise_levels: Sequence[float], sparsity: Sequence[float],
                         methods: Sequence[str], group: str = "group") -> pd.DataFrame:
    """Tables 1–7 of F-Fidelity as a tidy frame (<group>, row, correlation, method, mean, std).

    P/Q: ``{(group, method): (n_seeds, n_levels, n_sparsity)}`` curves (a group is an explainer or a model).
    Rows "Macro Corr." (± over seeds) and "Micro Corr." (± over levels, seeds pooled) of
    :func:`faithlab.metrics.ground_truth_ranking`, and "Micro Rank" of :func:`faithlab.metrics.rank_methods` among
    ``methods``; correlation keys as ``ffidelity.DIRECTIONS``. group: the name of the first column.
    """
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        micro = {}
        for method in methods:
            res = ffidelity.ground_truth_ranking(P[g, method], Q[g, method], noise_levels, sparsity)
            micro[method] = res["micro"]
            for kind in ("macro", "micro"):
                for key in ffidelity.DIRECTIONS:
                    mean, std = stats.nan_mean_std(res[kind][key])
                    rows.append({group: g, "row": f"{kind.capitalize()} Corr.", "correlation": key,
                                 "method": method, "mean": mean.item(), "std": std.item()})
        for key, per_method in ffidelity.rank_methods(micro).items():
            for method, (mean, std) in per_method.items():
                rows.append({group: g, "row": "Micro Rank", "correlation": key, "method": method,
                             "mean": mean, "std": std})
    return pd.DataFrame(rows)


CORRELATION_LABELS = {"morf_vs_gt": "MoRF vs GT ↓", "lerf_vs_gt": "LeRF vs GT ↑", "morf_vs_lerf": "MoRF vs LeRF ↓"}
"""Column labels of the correlations with their ideal direction, as in the paper's tables."""


def oriented_correlations(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                          noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                          group: str = "group") -> pd.DataFrame:
    """Mean macro and micro correlations per (<group>, method) with their oriented mean (App. D.7 ablation).

    One row per group, method and kind ("macro"/"micro"); a column per correlation (labelled as
    :data:`CORRELATION_LABELS`, mean over seeds, and levels for micro) and "oriented mean": the three correlations
    signed so that higher is better (−MoRF vs GT, +LeRF vs GT, −MoRF vs LeRF, from ``DIRECTIONS``), averaged.
    """
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in ffidelity.DIRECTIONS.items()}
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        for method in methods:
            res = ffidelity.ground_truth_ranking(P[g, method], Q[g, method], noise_levels, sparsity)
            for kind in ("macro", "micro"):
                row = {group: g, "method": method, "kind": kind}
                for k, label in CORRELATION_LABELS.items():
                    row[label] = stats.nan_mean_std(res[kind][k])[0].item()
                row["oriented mean"] = sum(sign[k] * row[label] for k, label in CORRELATION_LABELS.items()) / len(sign)
                rows.append(row)
    return pd.DataFrame(rows)


def table_layout(tidy: pd.DataFrame, *, group: str, paper: str | None = None) -> pd.DataFrame:
    """The paper's table layout: rows (row, correlation), one column per ``"<group> <method>"``, cells
    "mean ± std" followed by the paper's value in parentheses when the ``paper`` column holds one."""
    def cell(m: float, s: float, p: float) -> str:
        return f"{m:.2f} ± {s:.2f}" + ("" if p != p else f" ({p:.2f})")

    values = tidy[paper] if paper is not None else [float("nan")] * len(tidy)
    table = tidy.assign(cell=[cell(m, s, p) for m, s, p in zip(tidy["mean"], tidy["std"], values)],
                        correlation=tidy["correlation"].map(CORRELATION_LABELS)).pivot_table(
        index=["row", "correlation"], columns=[group, "method"], values="cell", aggfunc="first", sort=False)
    table.columns = [f"{g} {m}" for g, m in table.columns]
    return table.reset_index()


SETTING_SYMBOLS = {"n_samples": "N", "beta": "β", "alpha": "α"}
"""How the sensitivity tables write a varied hyper-parameter of F-Fidelity."""


def setting_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Per setting (columns ``varied``, ``value``, in order of appearance): each correlation of ``DIRECTIONS``, its
    mean and its population std (column ``"<correlation> std"``) over the setting's rows, NaN left out."""
    keys = list(ffidelity.DIRECTIONS)
    grouped = frame.groupby(["varied", "value"], sort=False)[keys]
    return pd.concat([grouped.mean(), grouped.std(ddof=0).add_suffix(" std")], axis=1)[
        [c for k in keys for c in (k, f"{k} std")]].reset_index()


def setting_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The page's copy of a per-setting table: the setting as text first ("β = 0.05", which a numeric column would
    show with the column's decimals), then the other columns, correlations under :data:`CORRELATION_LABELS`."""
    labels = {**CORRELATION_LABELS, **{f"{k} std": f"{v} std" for k, v in CORRELATION_LABELS.items()}}
    setting = [f"{SETTING_SYMBOLS.get(k, k)} = {v:g}" for k, v in zip(frame["varied"], frame["value"])]
    return frame.drop(columns=["varied", "value"]).rename(columns=labels).assign(setting=setting)[
        ["setting", *(labels.get(c, c) for c in frame.columns if c not in ("varied", "value"))]]


def separation(curves: pd.DataFrame, *, group: str) -> pd.DataFrame:
    """Spread (max − min over ξ) of each method's mean "+" and "−" scores, averaged over levels, per ``group``."""
    means = curves.groupby([group, "method", "curve", "level", "xi"])["score"].mean()
    spread = (means.groupby([group, "method", "curve", "level"]).agg(lambda v: v.max() - v.min())
              .groupby([group, "method", "curve"]).mean().unstack("curve").reset_index())
    spread.columns = [group, "method", "spread of + scores", "spread of − scores"]
    return spread


def micro_cells(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                group: str = "group") -> pd.DataFrame:
    """The units the ranking verdicts resample: one row per (<group>, method, seed, level).

    Columns "micro rank": the method's micro rank among ``methods`` at that seed and level
    (:func:`faithlab.metrics.micro_ranks`), averaged over the three correlations (lower is better); "oriented
    micro": its three micro correlations signed so that higher is better (−MoRF vs GT, +LeRF vs GT, −MoRF vs LeRF)
    and averaged over the defined ones (NaN when all three are undefined; ideal +1); "GT micro": the same over the
    two correlations with the ground-truth order only (−MoRF vs GT, +LeRF vs GT), the statistic whose chance level
    :func:`ground_truth_null` draws; "LeRF micro": the LeRF vs GT micro correlation alone (claim F2's unit).
    A notebook that trains replicas concatenates the frames of each with a "replica" column.
    """
    sign = {k: -1.0 if d == "min" else 1.0 for k, d in ffidelity.DIRECTIONS.items()}
    rows: list[dict] = []
    for g in dict.fromkeys(g for g, _ in P):
        micro = {m: ffidelity.ground_truth_ranking(P[g, m], Q[g, m], noise_levels, sparsity)["micro"]
                 for m in methods}
        ranks = torch.stack([ffidelity.micro_ranks(torch.stack([micro[m][k] for m in methods]), direction=d)
                             for k, d in ffidelity.DIRECTIONS.items()]).mean(0)  # (n_methods, seeds, levels)
        for i, m in enumerate(methods):
            oriented = torch.stack([sign[k] * micro[m][k] for k in ffidelity.DIRECTIONS]).nanmean(0)
            with_gt = _gt_micro(micro[m])
            n_seeds, n_levels = oriented.shape
            lerf = micro[m]["lerf_vs_gt"]
            rows += [{group: g, "method": m, "seed": s, "level": sparsity[j], "micro rank": ranks[i, s, j].item(),
                      "oriented micro": oriented[s, j].item(), "GT micro": with_gt[s, j].item(),
                      "LeRF micro": lerf[s, j].item()}
                     for s in range(n_seeds) for j in range(n_levels)]
    return pd.DataFrame(rows)


def _gt_micro(micro: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """−MoRF vs GT and +LeRF vs GT micro correlations averaged over the defined ones (the "GT micro" statistic)."""
    return torch.stack([-micro["morf_vs_gt"], micro["lerf_vs_gt"]]).nanmean(0)


def _order(part: pd.DataFrame) -> list[str]:
    """The columns that order one method's units: replica (when the frame has one), degradation seed, level."""
    return [c for c in ("replica", "seed", "level") if c in part.columns]


def _cells(cells: pd.DataFrame, group: str, value, column: str) -> dict[str, torch.Tensor]:
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    return {m: torch.tensor(v.sort_values(_order(v))[column].to_numpy(dtype=float), dtype=torch.float64)
            for m, v in part.groupby("method", sort=False)}


def _replicas(cells: pd.DataFrame, group: str, value):
    """The replica (trained model) of each unit of one method, in :func:`_cells`' order; None without a replica
    column (every unit then comes from one model)."""
    part = cells[cells[group] == value]
    if "replica" not in part.columns or part.empty:
        return None
    first = part[part["method"] == part["method"].iloc[0]]
    return first.sort_values(_order(first))["replica"].to_numpy()


def _units(cells: pd.DataFrame, group: str, value, methods) -> int:
    """Units of the smallest cell: the fewest (replica ×) seed × level rows of any of ``methods``."""
    part = cells[(cells[group] == value) & cells["method"].isin(list(methods))]
    counts = part.groupby("method").size()
    return int(counts.min()) if len(counts) else 0


def _baseline_premise(oriented: Mapping[str, torch.Tensor], target: str, baseline: str, tol: float) -> str | None:
    return verdicts.first_reason(
        verdicts.undefined(oriented[target].nanmean(), what=f"{target}'s micro correlation"),
        verdicts.at_ideal(oriented[baseline].nanmean(), ideal=1.0, tol=tol,
                          what=f"{baseline}'s oriented micro correlation"))


def ranking_verdict(cells: pd.DataFrame, *, group: str, value, target: str = "F-Fidelity",
                    baseline: str = "Fidelity", tol: float = 0.05, seed: int = 0, untestable: str | None = None
                    ) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of "``target`` recovers the ground-truth ranking better than the other methods" for one
    ``group == value`` (an explainer or a model), from :func:`micro_cells`.

    Premise: not testable when the target's micro correlations are all undefined or when ``baseline``'s oriented
    micro correlation is already within ``tol`` of the ideal +1 (no method can beat it). Decision: paired
    bootstrap over seeds × levels of the mean micro rank (lower is better) of the target against every other
    method (:func:`faithlab.verdicts.compare`, rule of :func:`faithlab.verdicts.from_comparison`); with a
    "replica" column the bootstrap is two-stage (trained replicas, then seed × level cells within them).
    untestable: a further premise reason (e.g. :func:`claim_ranking`'s chance-level check), used when the premises
    above hold. The claim function with its null is :func:`claim_ranking`.
    """
    ranks, oriented = _cells(cells, group, value, "micro rank"), _cells(cells, group, value, "oriented micro")
    for name in (target, baseline):
        if name not in ranks:
            raise ValueError(f"{name!r} is not among the methods of the cells ({list(ranks)})")
    comparisons = verdicts.compare(ranks, target=target, higher_is_better=False, seed=seed, n_boot=N_BOOT,
                                   groups=_replicas(cells, group, value))
    why = verdicts.first_reason(_baseline_premise(oriented, target, baseline, tol), untestable)
    return verdicts.from_comparison(comparisons, untestable=why), comparisons


def ablation_verdict(cells: pd.DataFrame, *, group: str, value, chain: Sequence[str] = (
        "Fidelity", "Fidelity+Fine-tune", "F-Fidelity"), tol: float = 0.05, seed: int = 0,
                     untestable: str | None = None) -> tuple[verdicts.Verdict, dict[str, verdicts.Comparison]]:
    """Verdict of App. D.7's ablation "each step of ``chain`` improves on the one before" (Fidelity <
    Fidelity+Fine-tune < F-Fidelity) on the oriented micro correlations of :func:`micro_cells`.

    Micro, not macro: with six explainers the macro correlation takes few values and saturates at ±1. Premise: not
    testable when a consecutive pair shares fewer than 2 cells with defined correlations, the last method's are
    undefined or the first is already within ``tol`` of +1. Decision: a paired bootstrap over seeds × levels
    (two-stage with a "replica" column) for each consecutive pair, each step a setting of
    :func:`faithlab.verdicts.from_settings` (all of them for the full claim, one for a part; a tie is undecided).
    Returns the verdict and the comparisons keyed "<later> vs <earlier>" (empty when not testable).
    untestable: a further premise reason (:func:`claim_ablation`'s chance-level check), used when those above hold.
    """
    oriented = _cells(cells, group, value, "oriented micro")
    missing = [m for m in chain if m not in oriented]
    if len(chain) < 2 or missing:
        raise ValueError(f"chain must name at least two methods of the cells, missing {missing}")
    pairs = list(zip(chain, chain[1:]))
    why = verdicts.first_reason(
        *(f"{a} and {b} share fewer than 2 seed × level cells with defined correlations"
          for a, b in pairs if int((oriented[a].isfinite() & oriented[b].isfinite()).sum()) < 2),
        _baseline_premise(oriented, chain[-1], chain[0], tol), untestable)
    what = "steps of " + " → ".join(chain)
    if why is not None:
        return verdicts.from_settings([], reproduced=1.0, partly=1 / len(pairs), untestable=why, what=what), {}
    groups = _replicas(cells, group, value)
    comparisons = {f"{b} vs {a}": verdicts.bootstrap_diff(oriented[b], oriented[a], seed=seed, groups=groups,
                                                                 n_boot=N_BOOT)
                   for a, b in pairs}
    result = verdicts.from_settings(list(comparisons.values()), reproduced=1.0, partly=1 / len(pairs), what=what)
    steps = "; ".join(f"{k}: {c.outcome} ({c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}])" for k, c in comparisons.items())
    return result.with_why(f"{result.why} — 95 % bootstrap interval over (replicas,) seeds × levels: {steps}"), \
        comparisons



# ---- ranking, variants, plateau and sensitivity claims
# Each claim function takes the notebook's frames and returns a faithlab.verdicts.Claim: its rule, its premise with
# the null it was checked against, the paper's value, ours, the verdict and the table behind it.
def permuted_correlations(P: torch.Tensor, Q: torch.Tensor, *, noise_levels: Sequence[float],
                          sparsity: Sequence[float] | None = None, n_draws: int = 1000, seed: int = 0
                          ) -> pd.DataFrame:
    """Chance levels of one method's correlations with the ground truth (spec §1.9) → one row per draw.

    P, Q: ``(n_seeds, n_explainers, n_sparsity)`` "+" and "−" curves of one evaluation method, the explainers in the
    order of ``noise_levels``. Each draw reassigns the ground-truth order at random — one permutation of ξ over the
    explainers for every seed and level, since the ground truth is one order — and recomputes the correlations of
    :func:`faithlab.metrics.ground_truth_ranking` (Spearman = Pearson of average ranks, so the curves are ranked
    once and only the permuted ranks of ξ change; batched over draws). Columns: "draw"; "GT micro" (micro −MoRF vs
    GT and +LeRF vs GT averaged over the defined ones, then over seeds × levels: :func:`micro_cells`' column);
    "morf_vs_gt", "lerf_vs_gt" (macro, mean over seeds); "morf_vs_lerf" (macro, which involves no ground truth:
    drawn with the "−" curves' explainers permuted against the "+" curves', a shuffled pairing).
    With n explainers one Spearman ρ has a wide chance range — for 6 its central 95 % spans about ±0.83, for 3 it
    holds every value — and averaging over seeds and levels narrows it little, as every cell shares the one order.
    Exact when there are at most ``n_draws`` permutations (every permutation once, repeated up to 20 rows for three
    explainers or fewer: 720 rows for six); else ``n_draws`` random ones from generator ``seed`` (the same for
    every method given the same shapes).
    """
    import itertools
    import math

    from faithlab.metrics.statistics import pearson, rankdata, trapezoid_auc

    _validate.tensor(P, "P", ndim=3)
    _validate.tensor(Q, "Q", ndim=3)
    if P.shape != Q.shape:
        raise ValueError(f"Q must have P's shape {tuple(P.shape)}, got {tuple(Q.shape)}")
    n_draws = _validate.positive_int(n_draws, "n_draws")
    if n_draws < 20:
        raise ValueError(f"n_draws must be at least 20 (a chance range needs them), got {n_draws}")
    n_explainers = P.shape[1]
    xi = torch.as_tensor(noise_levels, dtype=torch.float64).flatten()
    if xi.numel() != n_explainers:
        raise ValueError(f"noise_levels must give one ξ per explainer ({n_explainers}), got {xi.numel()}")
    levels = None if sparsity is None else _validate.fractions(sparsity, "sparsity").to(torch.float64)
    if math.factorial(n_explainers) <= n_draws:  # the exact permutation distribution
        order = torch.tensor(list(itertools.permutations(range(n_explainers))), dtype=torch.long)
        order = order.repeat(-(-20 // len(order)), 1)
        pairing = order.flip(0)
    else:
        g = torch.Generator().manual_seed(int(seed))
        order = torch.rand(n_draws, n_explainers, generator=g).argsort(1)
        pairing = torch.rand(n_draws, n_explainers, generator=g).argsort(1)
    n_draws = len(order)
    p, q = P.detach().to("cpu", torch.float64), Q.detach().to("cpu", torch.float64)
    truth = rankdata(xi)[order]  # (draws, explainers): the permuted ranks of ξ
    micro = [pearson(rankdata(t, dim=1)[None], truth[:, None, :, None], dim=2) for t in (p, q)]  # (D, S, L)
    with_gt = torch.stack([-micro[0], micro[1]]).nanmean(0).flatten(1).nanmean(1)
    auc_p, auc_q = (rankdata(trapezoid_auc(t, levels), dim=-1) for t in (p, q))  # (S, E)
    macro = {"morf_vs_gt": pearson(auc_p[None], truth[:, None], dim=-1),
             "lerf_vs_gt": pearson(auc_q[None], truth[:, None], dim=-1),
             "morf_vs_lerf": pearson(auc_p[None], auc_q[:, pairing].transpose(0, 1), dim=-1)}  # (D, S) each
    return pd.DataFrame({"draw": range(n_draws), "GT micro": with_gt.numpy(),
                         **{k: v.nanmean(1).numpy() for k, v in macro.items()}})


def ground_truth_null(P: Mapping[tuple[str, str], torch.Tensor], Q: Mapping[tuple[str, str], torch.Tensor], *,
                      noise_levels: Sequence[float], sparsity: Sequence[float], methods: Sequence[str],
                      group: str = "group", n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """:func:`permuted_correlations` of every (<group>, method) of ``P``/``Q`` (as :func:`micro_cells` takes them)
    → one row per <group>, method and draw (columns <group>, method, draw, GT micro, morf_vs_gt, lerf_vs_gt,
    morf_vs_lerf): the chance level of each method's correlations under a permuted ground-truth order."""
    frames = [permuted_correlations(P[g, m], Q[g, m], noise_levels=noise_levels, sparsity=sparsity,
                                    n_draws=n_draws, seed=seed).assign(**{group: g, "method": m})
              for g in dict.fromkeys(g for g, _ in P) for m in methods]
    columns = [group, "method", "draw", "GT micro", *ffidelity.DIRECTIONS]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


_PERMUTED = "ground-truth order permuted over the explainers"


def _draws(null: pd.DataFrame, group: str, value, method: str, column: str) -> pd.Series:
    """The null draws of ``column`` for one method; with a "replica" column, the mean over the replicas of each draw
    (the same permutation in every replica, since :func:`permuted_correlations` draws them from one seed): the
    chance level of the statistic averaged over the replicas, as the observed one is."""
    part = null[(null[group] == value) & (null["method"] == method)]
    if "replica" in part.columns and part["replica"].nunique() > 1:
        return part.groupby("draw")[column].mean()
    return part[column]


def _null_of(draws: pd.Series, what: str = _PERMUTED) -> verdicts.Null | None:
    """The :class:`faithlab.verdicts.Null` of ``draws``, or None when fewer than 20 are defined."""
    values = pd.to_numeric(draws, errors="coerce").dropna()
    return verdicts.Null(what, tuple(values.tolist())) if len(values) >= 20 else None


def _beyond(null: verdicts.Null | None, value: float) -> bool:
    """Whether ``value`` lies outside ``null``'s range by more than float round-off (the observed statistic and the
    draws are averaged in different orders, and with few explainers the range's ends are values the statistic
    takes); False for a missing null or a NaN value."""
    if null is None or not pd.notna(value):
        return False
    eps = 1e-9 * max(1.0, abs(value))
    return bool(value < null.low - eps or value > null.high + eps)


def _chance_table(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, methods: Sequence[str]
                  ) -> pd.DataFrame:
    """Per method: mean "GT micro" over its cells, its chance range under a permuted order, and whether it lies
    beyond it (either side)."""
    rows = []
    for m in methods:
        observed = float(cells.loc[(cells[group] == value) & (cells["method"] == m), "GT micro"].mean())
        draws = _draws(null, group, value, m, "GT micro")
        if draws.empty:
            raise ValueError(f"null holds no draws for {group} {value!r}, method {m!r}: pass ground_truth_null's frame")
        n = _null_of(draws)
        rows.append({"method": m, "GT micro": observed, "chance low": n.low if n else float("nan"),
                     "chance median": n.median if n else float("nan"), "chance high": n.high if n else float("nan"),
                     "beyond chance": _beyond(n, observed)})
    return pd.DataFrame(rows)


def _chance_premise(chance: pd.DataFrame) -> tuple[str, str | None]:
    """The null's premise sentence and, when no method's GT micro lies beyond its chance range, the reason."""
    beyond = chance.loc[chance["beyond chance"], "method"].tolist()
    ranges = ", ".join(f"{m} {x:.2f} [{lo:.2f}, {hi:.2f}]" for m, x, lo, hi in zip(
        chance["method"], chance["GT micro"], chance["chance low"], chance["chance high"]))
    text = (f"null: each method's mean GT micro correlation (−MoRF vs GT, +LeRF vs GT) against its 95 % chance range "
            f"with the {_PERMUTED} ({ranges}); beyond chance: {', '.join(beyond) or 'none'}")
    why = None if beyond else ("no method's correlation with the ground-truth order can be told from a permuted "
                               "order (with few explainers a Spearman ρ has a wide chance range)")
    return text, why


def claim_ranking(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, methods: Sequence[str] | None = None,
                  target: str = "F-Fidelity", baseline: str = "Fidelity", label: str = "F1",
                  source: str = "Tables 1-2", paper_value: str = "", tol: float = 0.05, seed: int = 0,
                  paper: str | None = None
                  ) -> verdicts.Claim:
    """Claim "``target`` recovers the ground-truth explainer ranking better than the other methods" for one
    ``group == value`` (an explainer, or a model), Tables 1–2, 5, 10 of F-Fidelity.

    cells: :func:`micro_cells` (with a "replica" column when the notebook trains replicas: one trained classifier and
    its fine-tuned and ROAR models per replica); null: :func:`ground_truth_null` of the same curves (with the same
    replica column). methods: the compared methods (default: those of the cells with a micro rank). Premise:
    ``baseline``'s oriented micro correlation is not within ``tol`` of the ideal +1 and the target's is defined
    (:func:`ranking_verdict`); null: at least one method's mean GT micro correlation lies beyond its 95 % chance range
    under a permuted ground-truth order, else no method sees the ground truth and the ranks compare noise. Decision
    (:func:`ranking_verdict`): paired two-stage bootstrap (replicas, then seed × level cells; generator ``seed``) of
    the target's mean micro rank minus each other method's, each comparison a win, tie or loss, turned into the
    verdict by :func:`faithlab.verdicts.from_comparison` (whose generated text states the share). Table: one row per
    method (GT micro, its chance range, mean micro rank, the comparison with the target)."""
    paper_value = paper_value if paper is None else paper  # out.claim keeps paper_value= for itself
    part = cells[cells[group] == value]
    if part.empty:
        raise ValueError(f"{group} {value!r} is not in the cells (have {sorted(cells[group].unique())})")
    if methods is None:
        methods = list(dict.fromkeys(part.loc[part["micro rank"].notna(), "method"]))
    part = part[part["method"].isin(list(methods))]
    chance = _chance_table(part, null, group=group, value=value, methods=methods)
    null_text, null_why = _chance_premise(chance)
    v, comps = ranking_verdict(part, group=group, value=value, target=target, baseline=baseline, tol=tol,
                               seed=seed, untestable=null_why)
    means = part.groupby("method")[["micro rank", "oriented micro"]].mean()
    comparison = pd.DataFrame(verdicts.comparison_table(comps, target=target))
    table = chance.assign(**{"mean micro rank": chance["method"].map(means["micro rank"])}).merge(
        comparison.drop(columns="target").rename(columns={"competitor": "method"}), on="method", how="left")
    others = [m for m in methods if m != target]
    n_rep = int(part["replica"].nunique()) if "replica" in part.columns else 1
    return verdicts.Claim(
        f"{label} ({value}): {target} recovers the ground-truth explainer ranking better than "
        f"{', '.join(others)} ({source})",
        rule=f"unit: a degradation seed × sparsity level of one trained replica ({n_rep} replicas); per unit the micro "
             f"rank of each method among the compared ones (mean over the 3 correlations, lower is better); statistic: "
             f"{target}'s mean micro rank minus each competitor's, with a two-stage bootstrap interval (2000 "
             f"resamples, 95 %: replicas, then units); the paper's direction: {target} ranked best; margin 0",
        premise=f"{baseline}'s oriented micro correlation ({means.loc[baseline, 'oriented micro']:.2f}) must not be "
                f"within {tol:g} of the ideal +1; {null_text}",
        paper_value=paper_value,
        our_value="mean micro rank over 3 correlations: " + ", ".join(
            f"{m} {means.loc[m, 'micro rank']:.2f}" for m in methods),
        verdict=v, table=table, kind="paper", units=_units(part, group, value, methods))


def claim_lerf_near_one(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value,
                        target: str = "F-Fidelity", label: str = "F2", source: str = "Tables 1-2",
                        reproduced: float = 0.8, partly: float = 0.5, seed: int = 0) -> verdicts.Claim:
    """Claim "the LeRF vs GT correlation of ``target`` is ≈ +1" (Tables 1–2; ``source`` ends the claim text) for one
    ``group == value``.

    cells: :func:`micro_cells` (its "LeRF micro" column: one LeRF vs GT micro correlation per (replica,) degradation
    seed and level; the paper reports macro 1.00 and micro 0.98–1.00, and a macro correlation per seed gives too few
    units for an interval); null: :func:`ground_truth_null`. Premise and null: the target's mean GT micro correlation
    must lie beyond its 95 % chance range under a permuted ground-truth order, else the target does not see the ground
    truth here (not testable); an undefined statistic is not testable. Decision
    (:func:`faithlab.verdicts.verdict` with the interval): the mean over units with its two-stage bootstrap interval
    (replicas, then units; generator ``seed``) against ``reproduced`` (≈ +1: our convention, 0.8) and ``partly``."""
    part = cells[(cells[group] == value) & (cells["method"] == target)]
    if part.empty:
        raise ValueError(f"cells hold no rows of {target!r} for {group} {value!r}")
    part = part.sort_values(_order(part))
    x = torch.tensor(part["LeRF micro"].to_numpy(dtype=float), dtype=torch.float64)
    groups = part["replica"].to_numpy() if "replica" in part.columns else None
    keep = ~x.isnan()
    observed = float(x[keep].mean()) if bool(keep.any()) else float("nan")
    chance = _chance_table(cells[cells[group] == value], null, group=group, value=value, methods=[target])
    row = chance.iloc[0]
    untestable = verdicts.first_reason(
        verdicts.undefined(observed, what="the LeRF vs GT micro correlation"),
        None if int(keep.sum()) >= 2 else "fewer than 2 units with a defined LeRF vs GT correlation",
        None if bool(row["beyond chance"]) else
        f"{target}'s GT micro correlation ({row['GT micro']:.3f}) lies within its chance range "
        f"[{row['chance low']:.3f}, {row['chance high']:.3f}] with the {_PERMUTED}")
    interval = None
    if untestable is None:
        codes = None if groups is None else verdicts._group_codes(groups[keep.numpy()], int(keep.sum()))
        draws = verdicts.hierarchical_means(x[keep], groups=codes, n_boot=N_BOOT, seed=seed)
        interval = tuple(torch.quantile(draws, torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist())
    v = verdicts.verdict(observed, reproduced=f">= {reproduced}", partly=f">= {partly}", untestable=untestable,
                         interval=interval if interval is not None else (observed, observed),
                         what=f"the mean LeRF vs GT micro correlation")
    table = pd.DataFrame([{group: value, "method": target, "LeRF vs GT micro": observed,
                           "low": interval[0] if interval else float("nan"),
                           "high": interval[1] if interval else float("nan"), "units": int(keep.sum()),
                           "GT micro": row["GT micro"], "chance low": row["chance low"],
                           "chance high": row["chance high"]}])
    return verdicts.Claim(
        f"{label} ({value}): {target}'s LeRF vs GT correlation is ≈ +1 ({source})",
        rule="unit: a degradation seed × sparsity level of one trained replica; statistic: the mean LeRF vs GT micro "
             "correlation with a two-stage bootstrap interval (replicas, then units; 95 %); the paper's direction: "
             f"near +1; margins (ours): {reproduced:g} for ≈ +1, {partly:g} for a part of it",
        premise=f"null: {target}'s mean GT micro correlation must lie beyond its 95 % chance range with the "
                f"{_PERMUTED} ({row['GT micro']:.2f} against [{row['chance low']:.2f}, {row['chance high']:.2f}])",
        paper_value="1.00", our_value=f"{observed:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval
                                                          else ""),
        verdict=v, table=table, kind="paper", units=int(keep.sum()))


def claim_ablation(cells: pd.DataFrame, null: pd.DataFrame, *, group: str, value, chain: Sequence[str] = (
        "Fidelity", "Fidelity+Fine-tune", "F-Fidelity"), label: str = "F3", tol: float = 0.05, seed: int = 0
                   ) -> verdicts.Claim:
    """Claim of App. D.7 (Fig. 3): each step of ``chain`` improves on the one before (Fidelity < Fidelity +
    fine-tune < F-Fidelity), for one ``group == value``.

    cells: :func:`micro_cells` holding every method of the chain; null: :func:`ground_truth_null`. Premise (as
    :func:`ablation_verdict`): each consecutive pair shares at least 2 seed × level cells with defined correlations
    and the first method is not within ``tol`` of +1; null: at least one method of the chain has a mean GT micro
    correlation beyond its chance range under a permuted ground-truth order. Decision (:func:`ablation_verdict`):
    a paired two-stage bootstrap (95 %; replicas, then cells; generator ``seed``) of the oriented micro correlation
    for each step, the steps decided by :func:`faithlab.verdicts.from_settings`. Table: the methods' chance rows and
    the steps."""
    part = cells[(cells[group] == value) & cells["method"].isin(list(chain))]
    if part.empty:
        raise ValueError(f"{group} {value!r} with the methods {list(chain)} is not in the cells")
    chance = _chance_table(part, null, group=group, value=value, methods=chain)
    null_text, null_why = _chance_premise(chance)
    v, comps = ablation_verdict(part, group=group, value=value, chain=chain, tol=tol, seed=seed, untestable=null_why)
    oriented = part.groupby("method")["oriented micro"].mean()
    steps = pd.DataFrame([{"method": k, "mean difference": c.mean, "low": c.low, "high": c.high,
                           "outcome": c.outcome, "units": c.n} for k, c in comps.items()])
    table = pd.concat([chance.assign(**{"oriented micro": chance["method"].map(oriented)}), steps],
                      ignore_index=True)
    return verdicts.Claim(
        f"{label} ({value}): Ablation: {chain[1]} beats {chain[0]} and {chain[-1]} beats both (App. D.7, Fig. 3)",
        rule="unit: a degradation seed × sparsity level of one trained replica; per step of " + " → ".join(chain)
             + ", the later method's oriented micro correlation minus the earlier's, with a two-stage bootstrap "
             "interval (2000 resamples, 95 %: replicas, then units); the paper's direction: every step improves; "
             "margin 0",
        premise=f"{chain[0]}'s oriented micro correlation ({oriented[chain[0]]:.2f}) must not be within {tol:g} of the "
                f"ideal +1, each step needs 2 cells with defined correlations; {null_text}",
        paper_value="F-Fid > Fid+FT > Fid on all three correlations (Fig. 3)",
        our_value="micro oriented mean " + ", ".join(f"{m} {oriented[m]:.2f}" for m in chain), verdict=v,
        table=table, kind="paper", units=_units(part, group, value, chain))


def record_claim(out, spec: tuple, *, note: str) -> verdicts.Claim:
    """Decide one claim by ``out.claim`` (a notebook's :func:`faithlab.outputs.for_notebook`, which adds the replica
    agreement and the bootstrap stability and records the claim) from its ``spec``: the claim function, its positional
    and its keyword arguments, as the notebook calls it directly; ``note`` describes the units. Returns the claim."""
    fn, args, kwargs = spec
    return out.claim(fn, *args, **kwargs, note=note).claim

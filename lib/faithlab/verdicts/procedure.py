"""Verdicts of the study's claims: one home for the rules every notebook applies.

A verdict is one of :data:`VERDICTS`. It comes from a stated rule, in two steps:

1. **Premise check** — can the comparison discriminate at all? When a baseline is already at the ideal value
   (:func:`at_ideal`), a statistic is undefined (:func:`undefined`), a comparison has too few paired units, or the
   value lies inside the spread of its **null** — the same statistic at chance, on shuffled pairings, random maps or
   permuted labels (:class:`Null`, :func:`null_draws`, :func:`within_null`) — the claim is "not testable here" and
   the reason is kept with the verdict.
2. **Decision with uncertainty** — a threshold rule on a measured value (:func:`verdict`), or a paired bootstrap
   over the experiment's units (seeds × levels, images, draws) that calls each comparison a win, a tie or a loss
   from the confidence interval of the mean difference (:func:`bootstrap_diff`, :func:`compare`) and turns the
   outcomes into a verdict (:func:`from_comparison`). A claim made over several settings (tasks × models ×
   methods) is decided by the share of settings where it holds significantly, with thresholds fixed before any
   result (:func:`from_settings`: reproduced from :data:`REPRODUCED_SHARE`, partly from :data:`PARTLY_SHARE`), so
   one significant cell of 28 cannot read as "partly reproduced".

A claim is a function in ``faithlab.protocols.<paper>`` that takes the notebook's frames and returns a
:class:`Claim`: the claim, its rule (one sentence, fixed before the result), its premise with the null it was checked
against, the paper's value, ours, the verdict and the table behind it. Notebooks call it and record it with
:meth:`faithlab.outputs.Outputs.claim`; no verdict rule or bootstrap is spelled out in a notebook.

Every function returns a :class:`Verdict`: a plain ``str`` (one of :data:`VERDICTS`) that also carries ``why``, a
sentence with the rule's outcome, which :meth:`faithlab.outputs.Outputs.claim` adds to the claim's note.

One concept: the study's one pre-registered verdict procedure (premises and nulls, paired bootstrap comparisons,
shares over settings, replicas and the :class:`Claim` that carries the result), kept whole so that no rule has a
second copy.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that compute: faithlab.outputs imports this module for VERDICTS, and a
# notebook that only writes tables then starts without torch's 1.2 s import.

__all__ = [
    "VERDICTS", "Verdict", "ladder", "verdict", "at_ideal", "undefined", "first_reason", "Comparison",
    "bootstrap_diff", "comparison_from_draws", "compare", "from_comparison", "comparison_table",
    "Null", "null_draws", "within_null", "REPRODUCED_SHARE", "PARTLY_SHARE", "from_settings", "Claim",
    "REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "INCONCLUSIVE", "DECIDED", "MIN_REPLICAS", "MIN_UNITS",
    "STABILITY_SEEDS", "KINDS", "hierarchical_means", "share_above_zero", "decide_draws", "replica_seed", "replicated",
    "POWER_REPLICAS", "POWER_TARGET", "variance_components", "decided_probability", "replicas_needed",
    "Premise", "premise_share", "MEANINGS", "premise_interval", "LEFT_OUT",
]

VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "not testable here", "inconclusive")
REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE, INCONCLUSIVE = VERDICTS
DECIDED = VERDICTS[:3]
"""The verdicts that decide a claim; "not testable here" (a failed premise) and "inconclusive" (the interval
straddles the margin, or the verdict moves with the bootstrap seed) do not."""
MEANINGS = {
    REPRODUCED: "the 95 % interval lies beyond the claim's margin (its smallest effect of interest, from the paper's "
                "numbers) in the paper's direction, in every cell the claim's rule names",
    PARTLY: "a claim of several named parts: the share of its parts fixed in advance is reproduced, not all of them",
    NOT_REPRODUCED: "the 95 % interval lies wholly short of the margin — inside the band of no meaningful effect or "
                    "beyond it the other way — in a cell the rule needs: the effect is shown absent or reversed here",
    NOT_TESTABLE: "a premise about the stand-in failed (the paper's mechanism is absent here), so the claim was not "
                  "tested; it says nothing about the paper",
    INCONCLUSIVE: "the data here do not decide: an interval straddles the margin, the verdict moves with the bootstrap "
                  "seed, or fewer replicas or units back it than its rule asks (the power column says what design "
                  "would decide it); how many replicas alone give the same verdict is shown beside it, not used",
}
"""What each verdict means, in one phrase (the book's legend)."""
MIN_REPLICAS = 3
"""Independently trained replicas per setting that a claim about trained models needs (issue: the unit of
replication is the trained model)."""
MIN_UNITS = 30
"""Units per cell (images, seeds × levels, ... pooled over replicas) below which a claim says it is underpowered."""
LEFT_OUT = "left out"
"""A replica's entry in :attr:`Claim.replicas` when its rows alone are too few for the claim's statistic (it is not
counted as agreeing or disagreeing)."""
STABILITY_SEEDS = 20
"""Bootstrap seeds under which a decided verdict must come out the same (:func:`replicated`), else inconclusive."""


class Verdict(str):
    """One of :data:`VERDICTS`, with ``why``: the rule's outcome (or the reason it is not testable), and ``decision``:
    the decision rule's text, generated by the function that decided (so the rule a reader sees is the rule applied;
    empty for a verdict built by hand), and ``rule_id``: the claim id of the pre-registered rule it was decided by
    (:func:`faithlab.verdicts.rule`; None for a verdict not decided from the rules file)."""

    why: str
    decision: str
    rule_id: str | None

    def __new__(cls, value: str, why: str = "", decision: str = "", rule_id: str | None = None):
        if value not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {value!r}")
        obj = super().__new__(cls, value)
        obj.why = why
        obj.decision = decision
        obj.rule_id = rule_id
        return obj

    def with_why_decision(self, decision: str) -> Verdict:
        """A copy that carries the decision rule's text ``decision``."""
        return Verdict(self, self.why, decision, self.rule_id)

    def with_why(self, why: str, value: str | None = None) -> Verdict:
        """A copy with another ``why`` (and verdict ``value`` if given) that keeps the decision rule's text."""
        return Verdict(self if value is None else value, why, self.decision, self.rule_id)


def _two_ends(worst: Verdict, best: Verdict, decision: str, what: str) -> Verdict:
    """The one procedure: a verdict is decided only when it comes out the same at both ends of the uncertainty
    (every tie lost / every tie won; the interval's low and high end), else it is inconclusive."""
    if str(worst) == str(best):
        return Verdict(worst, worst.why, decision)
    return Verdict(INCONCLUSIVE, f"{best.why or best} if {what} fell one way, {worst.why or worst} if the other: "
                                 f"the interval straddles the rule's threshold", decision)


# ----------------------------------------------------------------------------------------------- threshold rules
_COMPARISONS = {">=": float.__ge__, ">": float.__gt__, "<=": float.__le__, "<": float.__lt__, "==": float.__eq__}


def _condition(rule: str, name: str) -> tuple[str, float]:
    """Parse a rule such as ``">= 0.8"`` into (operator, threshold); the text is parsed, never evaluated."""
    op, _, number = str(rule).strip().partition(" ")
    try:
        threshold = float(number)
    except ValueError:
        threshold = float("nan")
    if op not in _COMPARISONS or threshold != threshold:
        raise ValueError(f"{name} must read '<op> <number>' with op in {tuple(_COMPARISONS)}, got {rule!r}")
    return op, threshold


def _reason(untestable) -> str:
    if not isinstance(untestable, str) or not untestable.strip():
        raise ValueError(f"untestable must be a non-empty reason, got {untestable!r}")
    return untestable.strip()


def ladder(reproduced: bool, partly: bool = False, *, untestable: str | None = None) -> Verdict:
    """The verdict ladder from two stated tests: "reproduced" if the first holds, else "partly reproduced" if the
    second holds, else "not reproduced"; "not testable here" when ``untestable`` gives a reason."""
    if untestable is not None:
        return Verdict(NOT_TESTABLE, f"not testable: {_reason(untestable)}")
    return Verdict(VERDICTS[0] if bool(reproduced) else VERDICTS[1] if bool(partly) else VERDICTS[2])


def verdict(value, *, reproduced: str = "== 1", partly: str | None = "> 0", untestable: str | None = None,
            interval=None, what: str = "the value") -> Verdict:
    """The verdict of a claim from the value our run measured and a stated threshold rule.

    value: a number (a correlation, a share, a gap), or a sequence of booleans — one per check the claim needs —
    read as the share of checks that hold. reproduced / partly: the rule, as ``"<op> <threshold>"`` with op in
    ``>=, >, <=, <, ==`` (e.g. ``reproduced=">= 0.8", partly=">= 0.5"``); the default reads "every check holds →
    reproduced, at least one → partly reproduced". untestable: a reason why the comparison cannot discriminate
    here (see :func:`at_ideal`, :func:`undefined`); when given, the verdict is "not testable here" whatever the value.
    interval: ``(low, high)``, the value's confidence interval (a bootstrap over replicas and units): the rule is
    applied at both ends, and the verdict is "inconclusive" when they disagree (the interval straddles a threshold).
    Without it the value is exact (an identity, a count fixed by design). ``what`` names the value in the text.
    Premise check: a NaN value (an undefined statistic) or an empty sequence of checks is "not testable here".
    """
    op, threshold = _condition(reproduced, "reproduced")
    p_op, p_threshold = _condition(partly, "partly") if partly is not None else (None, None)
    decision = (f"reproduced when {what} {op} {threshold:g}"
                + (f", partly when {p_op} {p_threshold:g}" if partly is not None else "") + ", else not reproduced"
                + ("; applied at both ends of its 95 % interval, inconclusive when they disagree"
                   if interval is not None else " (an exact value, no interval)"))
    if untestable is not None:
        return ladder(False, untestable=untestable).with_why_decision(decision)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}")
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1:  # list, array, Series or tensor of checks
        checks = [bool(v) for v in value]
        if not checks:
            return ladder(False, untestable="no check to make").with_why_decision(decision)
        value = sum(checks) / len(checks)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}") from None
    if number != number:
        return ladder(False, untestable="the statistic is undefined (NaN)").with_why_decision(decision)

    def at(x: float) -> Verdict:
        partly_holds = p_op is not None and _COMPARISONS[p_op](x, p_threshold)
        return ladder(_COMPARISONS[op](x, threshold), partly_holds)

    if interval is None:
        return Verdict(at(number), f"{what} = {number:.3g}", decision)
    low, high = (_number(v, "interval") for v in interval)
    if low != low or high != high:
        return ladder(False, untestable="the interval is undefined (NaN)").with_why_decision(decision)
    v_low, v_high = at(low), at(high)
    where = f"{what} = {number:.3g}, 95 % interval [{low:.3g}, {high:.3g}]"
    if v_low == v_high:
        return Verdict(v_low, where, decision)
    return Verdict(INCONCLUSIVE, f"{where} straddles a threshold: {v_low} at its low end, {v_high} at its high end",
                   decision)


# ------------------------------------------------------------------------------------------------ premise checks
def _number(value, name: str) -> float:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None


@dataclass(frozen=True)
class Premise:
    """A premise decided with its uncertainty: ``holds`` True (its interval lies on the right side of the
    threshold), False (wholly on the wrong side: the mechanism is absent, "not testable here") or None (the interval
    straddles the threshold: whether the claim can be tested here is itself undecided, so its verdict is
    "inconclusive"); ``text`` says what was checked and how it came out."""

    holds: bool | None
    text: str

    def apply(self, v: Verdict) -> Verdict:
        """The verdict under this premise: ``v`` when it holds, "not testable here" when it fails, "inconclusive"
        when undecided (both keep ``v``'s decision text)."""
        if self.holds is True:
            return v
        if self.holds is False:
            return Verdict(NOT_TESTABLE, f"not testable: {self.text}", v.decision, v.rule_id)
        return Verdict(INCONCLUSIVE, f"the premise is undecided: {self.text}", v.decision, v.rule_id)


def premise_share(successes: int, n: int, *, at_least: float, what: str, level: float = 0.95) -> Premise:
    """A premise on a share (e.g. "the replacement makes the model uncertain for at least half the images"): the
    Wilson score interval of ``successes`` of ``n`` against ``at_least`` — holds when it lies above, fails when it
    lies below, undecided when it straddles (so that a share near the threshold never decides testability by
    sampling noise, and another training seed cannot turn a decided claim "not testable")."""
    from statistics import NormalDist

    k, n = int(successes), int(n)
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 ≤ successes ≤ n and n ≥ 1, got {successes} of {n}")
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = centre - half, centre + half
    text = (f"{what}: {k} of {n} ({p:.0%}), {math.floor(level * 100 + 0.5)} % interval [{low:.0%}, {high:.0%}] "
            f"against at least {at_least:.0%}")
    return Premise(True if low >= at_least else False if high < at_least else None, text)


def premise_interval(interval, *, threshold: float, direction: str = "above", what: str) -> Premise:
    """A premise on a quantity with its interval (:mod:`faithlab.verdicts.intervals`): holds when the whole
    interval lies ``direction`` ("above" or "below") ``threshold``, fails when it lies wholly on the other side,
    undecided when it straddles the threshold."""
    from faithlab.verdicts.intervals import Interval

    if not isinstance(interval, Interval):
        raise TypeError(f"interval must be a faithlab.verdicts.Interval, got {type(interval).__name__}")
    if direction not in ("above", "below"):
        raise ValueError(f"direction must be 'above' or 'below', got {direction!r}")
    t = _number(threshold, "threshold")
    lo, hi = interval.low, interval.high
    above, below = lo > t, hi < t
    holds = (above if direction == "above" else below) or None
    if (direction == "above" and below) or (direction == "below" and above):
        holds = False
    text = f"{what}: {interval.describe()}, needed {direction} {t:g}"
    return Premise(holds, text)


def at_ideal(value, *, ideal: float, tol: float, what: str) -> str | None:
    """Premise check: the reason "<what> is already at the ideal …" when ``|value − ideal| ≤ tol`` (a baseline that
    leaves no room to improve on it), else None. value: a number, or a sequence whose mean is checked."""
    import torch

    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) >= 1:
        value = _values(value, "value").nanmean()  # a copy: pandas may hand out read-only arrays
    number, ideal, tol = _number(value, "value"), _number(ideal, "ideal"), _number(tol, "tol")
    if not tol >= 0:
        raise ValueError(f"tol must be ≥ 0, got {tol}")
    if abs(number - ideal) <= tol:
        return f"{what} is already at the ideal ({number:.2f} vs {ideal:g} ± {tol:g}), so nothing can beat it"
    return None


def undefined(value, *, what: str) -> str | None:
    """Premise check: the reason "<what> is undefined" when ``value`` (a number or any of a sequence) is NaN."""
    import torch

    values = torch.as_tensor(value, dtype=torch.float64, device="cpu").flatten()
    if values.numel() == 0 or bool(values.isnan().any()):
        return f"{what} is undefined (a constant vector or no data)"
    return None


def first_reason(*reasons: str | None) -> str | None:
    """The first premise that fails (a non-None reason), or None when every premise holds."""
    return next((r for r in reasons if r is not None), None)


# ------------------------------------------------------------------------------------------ bootstrap comparisons
@dataclass(frozen=True)
class Comparison:
    """Paired comparison of a target with one competitor: mean difference (oriented so that > 0 favours the
    target), its bootstrap confidence interval [low, high] at ``level``, the number of paired units, and the
    outcome: "win" (low > 0), "loss" (high < 0) or "tie"."""

    mean: float
    low: float
    high: float
    level: float
    n: int
    outcome: str


def _values(values, name: str) -> torch.Tensor:
    import torch

    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be numbers (a sequence, array or tensor), got {values!r}")
    if isinstance(values, torch.Tensor):
        return values.detach().to("cpu", torch.float64).flatten()
    try:  # lists, numpy arrays, pandas Series
        return torch.from_numpy(np.array(values, dtype=np.float64)).flatten()
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers (a sequence, array or tensor), got {type(values).__name__}") from None


_RECORDER: contextvars.ContextVar = contextvars.ContextVar("faithlab_bootstrap_recorder", default=None)


def _group_codes(groups, n: int, name: str = "groups"):
    import torch

    codes = np.unique(np.asarray(groups if not hasattr(groups, "to_numpy") else groups.to_numpy(), dtype=object)
                      .astype(str), return_inverse=True)[1].reshape(-1)
    if codes.size != n:
        raise ValueError(f"{name} must give one group (replica) per unit, got {codes.size} for {n} units")
    return torch.from_numpy(codes.astype(np.int64))


def hierarchical_means(x, *, groups=None, n_boot: int = 4000, seed: int = 0):
    """Bootstrap draws of the mean of ``x`` (a 1-D float64 tensor without NaN): with ``groups`` (one replica id per
    unit), each draw resamples the replicas with replacement and then the units within each drawn replica — the
    two-stage bootstrap for nested data (Davison & Hinkley 1997, §3.8), chosen over a mixed model because the
    statistics decided here (means, shares, ranks) need no distributional assumption and the replicas are few.
    Every drawn replica keeps its own number of units. With fewer than 2 replicas (or no groups) it is the plain
    bootstrap of the units. Returns ``n_boot`` means (generator ``seed``)."""
    import torch

    n = x.numel()
    g = torch.Generator().manual_seed(int(seed))
    if groups is None or int(groups.max()) == 0:
        return x[torch.randint(n, (n_boot, n), generator=g, device="cpu")].mean(1)
    order = torch.argsort(groups, stable=True)
    x, groups = x[order], groups[order]
    n_groups = int(groups.max()) + 1
    counts = torch.bincount(groups, minlength=n_groups)
    starts = torch.cumsum(counts, 0) - counts
    width = int(counts.max())
    picked = torch.randint(n_groups, (n_boot, n_groups), generator=g, device="cpu")  # replicas of each draw
    c = counts[picked]  # (n_boot, n_groups)
    within = (torch.rand(n_boot, n_groups, width, generator=g, dtype=torch.float64, device="cpu") * c[..., None]).long()
    # a replica contributes its own count of units
    taken = torch.arange(width, device="cpu")[None, None, :] < c[..., None]
    values = x[(starts[picked][..., None] + within.clamp(max=width - 1)).clamp(max=n - 1)]
    return (values * taken).sum((1, 2)) / taken.sum((1, 2))


def bootstrap_diff(a, b=None, *, higher_is_better: bool = True, n_boot: int = 4000, level: float = 0.95,
                   seed: int = 0, groups=None) -> Comparison:
    """Paired percentile bootstrap of the mean difference ``a − b`` (or of ``a`` alone when b is None).

    a, b: per-unit values of the target and the competitor on the same units (e.g. one micro rank per seed ×
    level, one score per image), flattened; units where either is NaN are dropped. higher_is_better: False flips
    the sign so that a positive mean always favours ``a``. groups: the replica (independently trained model) of each
    unit; given, the resamples are two-stage (:func:`hierarchical_means`: replicas, then units within them), so the
    interval counts the training run as the unit of replication. The ``n_boot`` resamples (generator ``seed``, so
    the outcome is reproducible) give the ``level`` percentile interval.
    Raises ValueError when fewer than 2 paired units remain (use :func:`undefined` as a premise check first).
    """
    import torch

    x = _values(a, "a")
    if b is not None:
        y = _values(b, "b")
        if y.shape != x.shape:
            raise ValueError(f"a and b must hold the same number of paired units, got {x.numel()} and {y.numel()}")
        x = x - y
    codes = None if groups is None else _group_codes(groups, x.numel())
    keep = ~x.isnan()
    x = x[keep]
    if codes is not None:
        codes = torch.unique(codes[keep], return_inverse=True)[1]
    if not higher_is_better:
        x = -x
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 100:
        raise ValueError(f"n_boot must be an int ≥ 100, got {n_boot!r}")
    if not 0.5 <= _number(level, "level") < 1:
        raise ValueError(f"level must lie in [0.5, 1), got {level!r}")
    n = x.numel()
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 paired units without NaN, got {n}")
    record = _RECORDER.get()
    if record is not None:  # replicated() collects the units of every comparison for its power analysis
        record.append((x.clone(), None if codes is None else codes.clone()))
    means = hierarchical_means(x, groups=codes, n_boot=n_boot, seed=seed)
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64, device="cpu")).tolist()
    mean = x.mean().item()
    spread = 1e-12 * max(1.0, abs(mean))  # a constant difference has a zero-width interval: exact ties are ties
    outcome = "win" if low > spread else "loss" if high < -spread else "tie"
    return Comparison(mean, low, high, float(level), n, outcome)


def comparison_from_draws(estimate: float, draws, *, level: float = 0.95) -> Comparison:
    """A :class:`Comparison` from bootstrap draws of a difference that is not a mean of per-unit values (e.g. ReCo,
    a maximum over thresholds, resampled by samples): ``estimate`` the difference on the data (> 0 favours the
    target), its ``level`` percentile interval from ``draws``; outcome as in :func:`bootstrap_diff`."""
    import torch

    x = _values(draws, "draws")
    x = x[~x.isnan()]
    if x.numel() < 100:
        raise ValueError(f"draws must hold at least 100 bootstrap values without NaN, got {x.numel()}")
    if not 0.5 <= _number(level, "level") < 1:
        raise ValueError(f"level must lie in [0.5, 1), got {level!r}")
    mean = _number(estimate, "estimate")
    tail = (1 - level) / 2
    low, high = torch.quantile(x, torch.tensor([tail, 1 - tail], dtype=torch.float64, device="cpu")).tolist()
    spread = 1e-12 * max(1.0, abs(mean))
    outcome = "win" if low > spread else "loss" if high < -spread else "tie"
    return Comparison(mean, low, high, float(level), int(x.numel()), outcome)


def compare(scores: Mapping[str, object], *, target: str, higher_is_better: bool, n_boot: int = 4000,
            level: float = 0.95, seed: int = 0, groups=None) -> dict[str, Comparison]:
    """Paired bootstrap comparison of ``scores[target]`` with every other entry → ``{competitor: Comparison}``.

    scores: ``{name: per-unit values}``, all on the same units in the same order (e.g. micro ranks per seed ×
    level). higher_is_better: the direction of the scores (False for ranks). groups: the replica of each unit (see
    :func:`bootstrap_diff`). Each comparison uses generator ``seed`` (the same resamples for every competitor).
    """
    if not isinstance(scores, Mapping) or target not in scores:
        raise ValueError(f"target must be one of the keys of scores, got {target!r} for {list(scores)!r}")
    if len(scores) < 2:
        raise ValueError("scores must hold the target and at least one competitor")
    return {name: bootstrap_diff(scores[target], values, higher_is_better=higher_is_better, n_boot=n_boot,
                                 level=level, seed=seed, groups=groups)
            for name, values in scores.items() if name != target}


def from_comparison(comparisons: Mapping[str, Comparison], *, untestable: str | None = None,
                    reproduced: float | None = None) -> Verdict:
    """Verdict of "the target beats its competitors" from :func:`compare`'s outcomes.

    Rule (fixed before any result): reproduced when the target loses to no competitor and beats at least
    ``reproduced`` of them (the house share, two thirds); partly reproduced when it beats at least one (fewer, or
    while losing to others); not reproduced when it loses to at least one and beats none. A tie (the interval holds
    0) is never a failure: the rule is applied with every tie counted as a win and as a loss, and the verdict is
    "inconclusive" when the two disagree. ``untestable`` (a premise reason) wins over all.
    """
    reproduced = REPRODUCED_SHARE if reproduced is None else _number(reproduced, "reproduced")
    decision = (f"per competitor a win (95 % interval above 0), tie or loss; reproduced when it loses to none and beats "
                f"at least {reproduced:.0%} of them, partly when it beats at least one, not reproduced when it beats "
                "none and loses to one; inconclusive when the ties could fall either way")
    if untestable is not None:
        return ladder(False, untestable=untestable).with_why_decision(decision)
    if not comparisons:
        raise ValueError("comparisons must hold at least one Comparison")
    wins = [n for n, c in comparisons.items() if c.outcome == "win"]
    losses = [n for n, c in comparisons.items() if c.outcome == "loss"]
    ties = len(comparisons) - len(wins) - len(losses)
    level = next(iter(comparisons.values())).level
    why = (f"{math.floor(level * 100 + 0.5)} % bootstrap interval: beats {', '.join(wins) or 'none'}; "
           f"loses to {', '.join(losses) or 'none'}; ties {ties}")

    def rule(w: int, l: int) -> str:
        if w == 0:
            return NOT_REPRODUCED if l else INCONCLUSIVE
        return REPRODUCED if not l and w / len(comparisons) >= reproduced - 1e-12 else PARTLY

    worst, best = rule(len(wins), len(losses) + ties), rule(len(wins) + ties, len(losses))
    if worst == best:
        return Verdict(worst, why, decision)
    return Verdict(INCONCLUSIVE, f"{why}: {best} if the ties were wins, {worst} if they were losses", decision)


def comparison_table(comparisons: Mapping[str, Comparison], *, target: str) -> list[dict]:
    """Rows (target, competitor, mean difference, low, high, outcome, units) of :func:`compare` for a table."""
    return [{"target": target, "competitor": name, "mean difference": c.mean, "low": c.low, "high": c.high,
             "outcome": c.outcome, "units": c.n} for name, c in comparisons.items()]



# ------------------------------------------------------------------------------------------------------- nulls
@dataclass(frozen=True)
class Null:
    """The chance level of a compared quantity: ``draws`` of the same statistic under a null hypothesis (``what``:
    "shuffled image pairings", "random maps", "permuted labels", ...), summarised by its central ``level`` interval
    [low, high] and median. A measured value inside [low, high] cannot be told from chance."""

    what: str
    draws: tuple
    level: float = 0.95

    def __post_init__(self):
        if not isinstance(self.what, str) or not self.what.strip():
            raise ValueError(f"what must name the null (e.g. 'shuffled pairings'), got {self.what!r}")
        values = _values(self.draws, "draws")
        values = values[~values.isnan()]
        if values.numel() < 20:
            raise ValueError(f"draws must hold at least 20 values without NaN, got {values.numel()}")
        if not 0.5 <= _number(self.level, "level") < 1:
            raise ValueError(f"level must lie in [0.5, 1), got {self.level!r}")
        object.__setattr__(self, "draws", tuple(values.tolist()))

    def _quantiles(self, *qs: float) -> list[float]:
        import torch

        return torch.quantile(torch.tensor(self.draws, dtype=torch.float64, device="cpu"),
                              torch.tensor(qs, dtype=torch.float64, device="cpu")).tolist()

    @property
    def low(self) -> float:
        return self._quantiles((1 - self.level) / 2)[0]

    @property
    def high(self) -> float:
        return self._quantiles(1 - (1 - self.level) / 2)[0]

    @property
    def median(self) -> float:
        return self._quantiles(0.5)[0]

    def contains(self, value) -> bool:
        """Whether ``value`` (a number; NaN counts as inside) lies within [low, high]."""
        number = _number(value, "value")
        return not (number < self.low or number > self.high)

    def describe(self, digits: int = 3) -> str:
        """One phrase for a table: "<what>: median m, 95 % range [low, high] (n draws)"."""
        return (f"{self.what}: median {self.median:.{digits}f}, {math.floor(self.level * 100 + 0.5)} % range "
                f"[{self.low:.{digits}f}, {self.high:.{digits}f}] ({len(self.draws)} draws)")


def null_draws(statistic, *arrays, what: str, n_draws: int = 1000, seed: int = 0, level: float = 0.95) -> Null:
    """The null of ``statistic(*arrays)`` under shuffled pairings: ``n_draws`` values of ``statistic`` with the
    rows of the last array permuted (generator ``seed``), every other array kept in place.

    statistic: a function of the arrays (numpy arrays, tensors or sequences of equal length) returning a number,
    e.g. a correlation between per-image scores and per-image references, or a mean distance between paired maps.
    Use it for "does this pairing carry information?"; for a random-map or permuted-label null, compute the draws in
    the protocol and pass them to :class:`Null` directly."""
    if not callable(statistic):
        raise TypeError(f"statistic must be a callable of the arrays, got {type(statistic).__name__}")
    if not arrays:
        raise ValueError("arrays must hold at least one array whose rows are shuffled")
    if not isinstance(n_draws, int) or isinstance(n_draws, bool) or n_draws < 20:
        raise ValueError(f"n_draws must be an int ≥ 20, got {n_draws!r}")
    n = len(arrays[-1])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"arrays must hold the same number of rows, got {[len(a) for a in arrays]}")
    if n < 3:
        raise ValueError(f"a shuffled-pairing null needs at least 3 rows, got {n}")
    rng = np.random.default_rng(seed)
    last = arrays[-1]
    draws = [float(statistic(*arrays[:-1], last[rng.permutation(n)])) for _ in range(n_draws)]
    return Null(what, tuple(draws), level)


def within_null(value, null: Null, *, what: str) -> str | None:
    """Premise check: the reason "<what> (value) lies within the null's range …" when ``value`` cannot be told from
    ``null``'s draws (inside its central interval, or NaN), else None."""
    if not isinstance(null, Null):
        raise TypeError(f"null must be a faithlab.verdicts.Null, got {type(null).__name__}")
    number = _number(value, "value")
    if number != number or null.contains(number):
        return f"{what} ({number:.3f}) lies within the chance range of {null.describe()}"
    return None


# ----------------------------------------------------------------------------------------------- several settings
REPRODUCED_SHARE = 2 / 3
"""Share of a claim's settings that must hold significantly for "reproduced" (fixed before any result)."""
PARTLY_SHARE = 1 / 3
"""Share of a claim's settings that must hold significantly for "partly reproduced" (fixed before any result)."""


def from_settings(holds, *, reproduced: float = REPRODUCED_SHARE, partly: float = PARTLY_SHARE,
                  untestable: str | None = None, what: str = "settings") -> Verdict:
    """Verdict of a claim made over several settings from whether it holds significantly in each.

    holds: one entry per testable setting — a bool (the claim holds there, an exact fact), a :class:`Comparison`
    (holds when its outcome is "win", fails on "loss", undecided on "tie"), or None (undecided: its interval
    straddles the margin). Rule: reproduced when the share that holds is at least ``reproduced``, partly reproduced
    when it is at least ``partly`` (> 0), else not reproduced — applied with every undecided setting counted as
    holding and as failing; "inconclusive" when the two disagree (ties are never failures). "Not testable here"
    without testable settings or when ``untestable`` gives a reason. The thresholds are the house's
    (:data:`REPRODUCED_SHARE`, :data:`PARTLY_SHARE`) unless a claim states others before its result (e.g. "most"
    read as more than a half)."""
    r, p = _number(reproduced, "reproduced"), _number(partly, "partly")
    if not 0 < p <= r <= 1:
        raise ValueError(f"need 0 < partly ≤ reproduced ≤ 1, got partly={partly!r}, reproduced={reproduced!r}")
    decision = (f"the share of {what} where it holds significantly: reproduced from {r:.0%}, partly from {p:.0%}, "
                f"else not reproduced; inconclusive when the undecided {what} could tip it either way")
    if untestable is not None:
        return ladder(False, untestable=untestable).with_why_decision(decision)
    if isinstance(holds, (str, bytes)):
        raise TypeError(f"holds must be a sequence of bools or Comparisons, got {holds!r}")
    flags = []
    for h in list(holds):
        if isinstance(h, Comparison):
            flags.append(True if h.outcome == "win" else False if h.outcome == "loss" else None)
        elif isinstance(h, (bool, np.bool_)) or h is None:
            flags.append(None if h is None else bool(h))
        else:
            raise TypeError(f"holds must hold bools, Comparisons or None, got {type(h).__name__}")
    if not flags:
        return ladder(False, untestable=f"no testable {what}").with_why_decision(decision)
    k, u, n = sum(f is True for f in flags), sum(f is None for f in flags), len(flags)

    def rule(share: float) -> str:
        return REPRODUCED if share >= r - 1e-12 else PARTLY if share >= p - 1e-12 else NOT_REPRODUCED

    why = f"holds in {k} of {n} {what}" + (f", undecided in {u}" if u else "") + f" ({k / n:.0%})"
    worst, best = rule(k / n), rule((k + u) / n)
    if worst == best:
        return Verdict(worst, f"{why}; reproduced from {r:.0%}, partly from {p:.0%}", decision)
    return Verdict(INCONCLUSIVE, f"{why}: {best} if the undecided held, {worst} if not", decision)


def share_above_zero(values) -> float:
    """Share of ``values`` above 0 with ties (exact zeros) counted half and NaN left out (NaN when none is left)."""
    x = _values(values, "values")
    x = x[~x.isnan()]
    if x.numel() == 0:
        return float("nan")
    return float(((x > 0).double() + 0.5 * (x == 0).double()).mean())


def decide_draws(estimate, draws, *, margin: float = 0.0, higher_is_better: bool = True, level: float = 0.95,
           what: str = "the effect", untestable: str | None = None) -> Verdict:
    """The house procedure for one directional effect: ``estimate`` with bootstrap ``draws`` (replicas and units
    resampled), the paper's direction and the smallest effect of interest ``margin``. Reproduced when the ``level``
    interval lies beyond the margin in the paper's direction; not reproduced when it lies wholly on the other side
    (the effect is shown absent or reversed); inconclusive when it straddles the margin; not testable here when
    ``untestable`` gives a premise reason (decided before this call) or the statistic is undefined."""
    import torch

    direction = "above" if higher_is_better else "below"
    decision = (f"reproduced when the {math.floor(level * 100 + 0.5)} % interval of {what} lies {direction} "
                f"{margin:g}; not reproduced when it lies wholly on the other side; inconclusive when it straddles it")
    if untestable is not None:
        return ladder(False, untestable=untestable).with_why_decision(decision)
    x = _values(draws, "draws")
    x = x[~x.isnan()]
    est = _number(estimate, "estimate")
    if x.numel() < 100 or est != est:
        return ladder(False, untestable=f"{what} is undefined").with_why_decision(decision)
    tail = (1 - level) / 2
    low, high = torch.quantile(x, torch.tensor([tail, 1 - tail], dtype=torch.float64, device="cpu")).tolist()
    sign = 1 if higher_is_better else -1
    lo, hi = sorted((sign * (low - margin), sign * (high - margin)))
    where = f"{what} = {est:.3g}, interval [{low:.3g}, {high:.3g}] against the margin {margin:g}"
    value = REPRODUCED if lo > 0 else NOT_REPRODUCED if hi < 0 else INCONCLUSIVE
    return Verdict(value, where, decision)


# ----------------------------------------------------------------------------------------------------- claims
KINDS = ("paper", "study check")
"""What a claim is: a paper's claim (counted in the paper's scorecard row), or a study check — an identity, a ratio
fixed by design, a check of our own stand-ins — shown apart and never counted among the papers' claims."""

_DECISION_WORDS = ("reproduced when", "reproduced if", "reproduced from", "partly when", "partly if", "partly from",
                   "not reproduced when", "not testable when", "inconclusive when")


def _states_decision(rule: str) -> bool:
    return any(w in rule.lower() for w in _DECISION_WORDS)


@dataclass(frozen=True)
class Claim:
    """What a claim function returns (see the module docstring).

    claim: the claim's label and text ("C3 (vehicles): SmoothGrad raises Fid for most methods"). rule: one sentence
    saying how the verdict is decided, written before the result. premise: one sentence naming what must hold for
    the comparison to discriminate and the null it was checked against, with that check's outcome. paper_value /
    our_value: short texts. verdict: a :class:`Verdict`. table: the frame behind the verdict (one row per setting
    or comparison), or None. trained: whether its units come from models trained here (stand-ins), so that the
    training seed is a source of variance and :func:`replicated` decides it only over :data:`MIN_REPLICAS` trained
    replicas; False for identities, analytic or given models and published weights (nothing to retrain).
    kept_replicas: how many trained replicas the verdict rests on when the claim function leaves some out (a
    per-replica premise that fails; the fewest over the cells that decide), None when it keeps every replica of its
    frames; :func:`replicated` counts these, not the replicas it was given."""

    claim: str
    rule: str
    premise: str
    paper_value: str
    our_value: str
    verdict: Verdict
    table: object = None
    kind: str = "paper"
    units: int | None = None
    replicas: tuple = ()
    stability: tuple = ()
    power: str = ""
    raw: str = ""
    trained: bool = True
    kept_replicas: int | None = None
    rule_id: str | None = None

    def __post_init__(self):
        from faithlab.verdicts.rules import Rule

        if isinstance(self.rule, Rule):  # the pre-registered rule: its id, kind and sentence come from the file
            object.__setattr__(self, "rule_id", self.rule.id)
            object.__setattr__(self, "kind", self.rule.kind)
            object.__setattr__(self, "rule", self.rule.text())
        elif self.rule_id is not None:
            from faithlab.verdicts.rules import rule as registered

            object.__setattr__(self, "rule", registered(self.rule_id).text() if not str(self.rule).strip()
                               else self.rule)
        for name in ("claim", "rule", "premise"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty sentence, got {value!r}")
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"verdict must be a faithlab.verdicts.Verdict, got {type(self.verdict).__name__}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.trained, (bool, np.bool_)):
            raise TypeError(f"trained must be True or False, got {self.trained!r}")
        if self.kept_replicas is not None and (not isinstance(self.kept_replicas, (int, np.integer))
                                               or isinstance(self.kept_replicas, (bool, np.bool_))
                                               or self.kept_replicas < 0):
            raise ValueError(f"kept_replicas must be a count ≥ 0 or None, got {self.kept_replicas!r}")
        if self.units is not None and (not isinstance(self.units, (int, np.integer)) or self.units < 0):
            raise ValueError(f"units must be a count ≥ 0 (the smallest cell's units), got {self.units!r}")
        if _states_decision(self.rule):
            raise ValueError(f"rule states a decision threshold ({self.rule!r}): the rule says what is measured, in "
                             "which direction and against which margin; the decision's text comes from the function "
                             "that decided (verdict.decision), so the two cannot disagree")
        if self.verdict.rule_id is not None and self.verdict.rule_id != self.rule_id:
            raise ValueError(f"verdict was decided by rule {self.verdict.rule_id!r} but the claim names rule "
                             f"{self.rule_id!r}: a claim is decided by its own pre-registered rule")

    @property
    def decision(self) -> str:
        """The decision rule's text, generated by the function that decided the verdict."""
        return self.verdict.decision

    @property
    def replica_agreement(self) -> str:
        """"k of R replicas" whose own verdict is the claim function's verdict on all replicas pooled, with how many
        of the others are merely undecided alone (one replica's interval is wider) and how many were left out (too
        few units alone); "one trained model" when the frames of a claim about trained models carry no replica
        column, "—" for a claim that rests on no training (``trained`` False). A description: it is not part of
        the decision."""
        if not self.replicas:
            return "one trained model" if self.trained else "—"
        own = self.raw or str(self.verdict)
        kept = [str(v) for v in self.replicas if str(v) != LEFT_OUT]
        out = len(self.replicas) - len(kept)
        alone = sum(v == INCONCLUSIVE for v in kept) if own != INCONCLUSIVE else 0
        notes = [f"{alone} undecided alone" if alone else "", f"{out} left out: too few units alone" if out else ""]
        notes = [n for n in notes if n]
        return f"{sum(v == own for v in kept)} of {len(kept)} replicas" + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def bootstrap_stability(self) -> str:
        """"k of S seeds": other bootstrap seeds under which the claim function gives its own verdict (``raw``, before
        :func:`replicated` publishes an unstable or underpowered one as inconclusive)."""
        if not self.stability:
            return "exact (no resampling)"
        own = self.raw or str(self.verdict)
        return f"{sum(str(v) == own for v in self.stability)} of {len(self.stability)} seeds"


# --------------------------------------------------------------------------------------------------- replication
def replica_seed(seed: int, name: str, replica: int) -> int:
    """The training seed of replica ``replica`` of setting ``name`` under the study's ``seed``: a SHA-256 key of
    the three (never a sum, so two settings never share a seed), below 2**31."""
    import hashlib

    if not isinstance(replica, (int, np.integer)) or replica < 0:
        raise ValueError(f"replica must be an index ≥ 0, got {replica!r}")
    digest = hashlib.sha256(f"{int(seed)}/{name}/{int(replica)}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _replica_ids(objs, column: str) -> list:
    import pandas as pd

    found: set = set()

    def walk(o):
        if isinstance(o, pd.DataFrame):
            if column in o.columns:
                found.update(o[column].dropna().unique().tolist())
        elif isinstance(o, Mapping):
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(objs)
    return sorted(found, key=str)


def _subset(o, column: str, replica):
    """``o`` with every DataFrame that has a ``column`` cut to the rows of ``replica`` (dicts, lists, tuples walked)."""
    import pandas as pd

    if isinstance(o, pd.DataFrame):
        return o[o[column] == replica].reset_index(drop=True) if column in o.columns else o
    if isinstance(o, Mapping):
        return type(o)({k: _subset(v, column, replica) for k, v in o.items()}) if isinstance(o, dict) else {
            k: _subset(v, column, replica) for k, v in o.items()}
    if isinstance(o, tuple):
        return tuple(_subset(v, column, replica) for v in o)
    if isinstance(o, list):
        return [_subset(v, column, replica) for v in o]
    return o


def _then(text: str, sentence: str) -> str:
    """``text`` followed by one more ``sentence``, ``text`` closed with a full stop where it ends mid-sentence."""
    text = text.rstrip()
    return f"{text}{'' if text.endswith(('.', '!', '?', '.)')) else '.'} {sentence}"


def replicated(fn, *args, seeds: int = STABILITY_SEEDS, column: str = "replica", trained: bool | None = None,
               **kwargs) -> Claim:
    """Decide a claim with its replica agreement and bootstrap stability: the one wrapper every notebook's claim goes
    through (:meth:`faithlab.outputs.Outputs.claim` calls it when given a claim function).

    ``fn(*args, **kwargs)`` → :class:`Claim`, on frames whose rows carry the trained replica in ``column`` (the claim
    function's intervals resample replicas, then units within them). Then:

    - replica agreement: ``fn`` on each replica's rows alone (every DataFrame with ``column`` cut to it), its verdict
      kept per replica ("holds in 3 of 3 replicas");
    - bootstrap stability: when ``fn`` takes ``seed``, ``fn`` again under ``seeds`` other bootstrap seeds; a decided
      verdict that any of them changes is published as "inconclusive" (a verdict that moves with the seed is noise);
    - enough units: a decided verdict on fewer than :data:`MIN_UNITS` units per cell (``Claim.units``) is published
      as "inconclusive", its premise saying it is underpowered;
    - enough trained models: a decided verdict of a claim about models trained here (``trained``; None takes the
      claim function's ``Claim.trained``) on fewer than :data:`MIN_REPLICAS` replicas (the distinct values of
      ``column``, one when there is no such column; ``Claim.kept_replicas`` when the claim function left some out)
      is published as "inconclusive": one model's verdict moved with
      its training seed. "Not testable here" stays: a premise that demonstrably fails on the stand-in is a fact about
      it. Pass ``trained=False`` where the models are not trained here (published weights: nothing to retrain).
    """
    import inspect
    from dataclasses import replace

    if not callable(fn):
        raise TypeError(f"fn must be a claim function, got {type(fn).__name__}")
    claim = fn(*args, **kwargs)
    if not isinstance(claim, Claim):
        raise TypeError(f"{getattr(fn, '__name__', fn)} must return a faithlab.verdicts.Claim, got "
                        f"{type(claim).__name__}")
    per = []
    for r in _replica_ids((args, kwargs), column):
        try:
            per.append(str(fn(*_subset(args, column, r), **_subset(kwargs, column, r)).verdict))
        except ValueError:  # one replica's rows can be too few for a statistic that the pooled rows define
            per.append(LEFT_OUT)
    stability = ()
    from faithlab.verdicts import decisions, power as power_analysis

    token, token2 = _RECORDER.set([]), decisions.RECORDER.set([])
    try:
        fn(*args, **kwargs)  # once more, recording the units of its judged cells for the power analysis
        records, judged = _RECORDER.get(), decisions.RECORDER.get()
    finally:
        _RECORDER.reset(token)
        decisions.RECORDER.reset(token2)
    power = power_analysis.design_needed(judged) if judged else replicas_needed(records)
    if seeds and "seed" in inspect.signature(fn).parameters:
        base = int(kwargs.get("seed", 0))
        stability = tuple(str(fn(*args, **{**kwargs, "seed": base + 1000 + s}).verdict) for s in range(int(seeds)))
    v = claim.verdict
    premise = claim.premise
    if v in DECIDED and stability and any(s != str(v) for s in stability):
        same = sum(s == str(v) for s in stability)
        v = v.with_why(f"{v.why}; but only {same} of {len(stability)} other bootstrap seeds give {v}: the verdict moves "
                       "with the seed", INCONCLUSIVE)
    min_units, min_replicas = MIN_UNITS, MIN_REPLICAS
    if claim.rule_id is not None:  # the design the rules file fixed for this claim (never below the house's)
        from faithlab.verdicts.rules import rule as registered

        registered_rule = registered(claim.rule_id)
        min_units, min_replicas = max(min_units, registered_rule.units), max(min_replicas, registered_rule.replicas)
    if v in DECIDED and claim.units is not None and claim.units < min_units:
        v = v.with_why(f"{v.why}; underpowered: {claim.units} units in the smallest cell, below {min_units}",
                       INCONCLUSIVE)
        premise = _then(premise, f"Underpowered here: {claim.units} units in the smallest cell (the rule asks "
                                 f"{min_units}).")
    if trained is None:
        trained = claim.trained
    elif not isinstance(trained, (bool, np.bool_)):
        raise TypeError(f"trained must be True, False or None, got {trained!r}")
    models = (max(sum(p != LEFT_OUT for p in per), 1) if claim.kept_replicas is None
              else int(claim.kept_replicas))
    if trained and v in DECIDED and models < min_replicas:
        what = "one trained model" if models == 1 else f"{models} trained models"
        v = v.with_why(f"{v.why}; decided on {what}, below the {min_replicas} independently trained replicas the "
                       "rule asks (a verdict of one model moved with its training seed)", INCONCLUSIVE)
        premise = _then(premise, f"Not replicated here: {what} per setting (the rule asks {min_replicas}; the "
                                 "notebook's `replicas` parameter, where it has one, trains more).")
    return replace(claim, verdict=v, premise=premise, replicas=tuple(per), stability=stability, power=power,
                   raw=str(claim.verdict), trained=bool(trained))


# --------------------------------------------------------------------------------------------------------- power
POWER_REPLICAS = (3, 5, 8, 12)
"""Replica counts the power analysis tries (each with the claim's current units per replica)."""
POWER_TARGET = 0.8
"""Probability of a decided comparison the power analysis asks of a design."""


def variance_components(x, *, groups=None) -> tuple[float, float, float, int, float]:
    """Mean, between-replica and within-replica variance of per-unit values ``x`` with replica ids ``groups``
    (one-way random-effects ANOVA estimates, the between part floored at 0) → ``(mean, var_between, var_within,
    replicas, units per replica)``; without groups every unit is its own replica-free draw (var_between 0)."""
    import torch

    x = _values(x, "x")
    if groups is None:
        return float(x.mean()), 0.0, float(x.var()) if x.numel() > 1 else 0.0, 1, float(x.numel())
    codes = torch.as_tensor(groups, device="cpu").long()
    k = int(codes.max()) + 1
    counts = torch.bincount(codes, minlength=k).double()
    sums = torch.zeros(k, dtype=torch.float64, device="cpu").index_add_(0, codes, x)
    means = sums / counts.clamp(min=1)
    within = float(((x - means[codes]) ** 2).sum() / max(1.0, float(counts.sum() - k)))
    n_bar = float(counts.mean())
    between = float(means.var()) - within / n_bar if k > 1 else 0.0
    return float(x.mean()), max(0.0, between), within, k, n_bar


def decided_probability(mean: float, var_between: float, var_within: float, replicas: int, units: float, *,
                        margin: float = 0.0, z: float = 1.959963984540054) -> float:
    """Probability that a two-stage interval of a mean effect ``mean`` (with those variance components) lies wholly
    on one side of ``margin`` in a design of ``replicas`` × ``units``: the mean of the design is normal with
    variance var_between / R + var_within / (R·n), and the interval is its ± z standard errors (the normal
    approximation of the bootstrap; tests compare it with simulated two-stage bootstraps)."""
    from statistics import NormalDist

    se = math.sqrt(max(var_between / replicas + var_within / (replicas * units), 0.0))
    if se == 0:
        return 1.0 if mean != margin else 0.0
    d = (mean - margin) / se
    phi = NormalDist().cdf
    return phi(d - z) + phi(-d - z)


def replicas_needed(records, *, target: float = POWER_TARGET, options=POWER_REPLICAS) -> str:
    """The power analysis of one claim from the units of its paired comparisons (what :func:`bootstrap_diff`
    recorded under :func:`replicated`): per comparison its mean effect and variance components at the claim's current
    units per replica, then the smallest replica count of ``options`` at which every comparison whose effect is not
    nil is decided with probability ≥ ``target``. Returns e.g. "3 replicas suffice (weakest P 0.93 at R = 3)",
    "needs 8 replicas (P 0.71 at R = 3)", or "" when the claim makes no paired comparison."""
    if not records:
        return ""
    comps = [variance_components(x, groups=g) for x, g in records if x.numel() >= 2]
    if not comps:
        return ""
    def weakest(r: int) -> float:
        return min(decided_probability(m, vb, vw, r, n) for m, vb, vw, _, n in comps)

    current = max(k for *_, k, _ in comps)
    now = weakest(max(current, 1))
    for r in options:
        if weakest(r) >= target:
            return (f"{r} replicas suffice" if r <= current else f"needs {r} replicas") + (
                f" (weakest comparison decided with P {now:.2f} at R = {current})")
    return (f"more than {options[-1]} replicas: an effect near 0 (weakest comparison decided with P {now:.2f} at "
            f"R = {current})")

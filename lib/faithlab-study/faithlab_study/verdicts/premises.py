"""Premises and nulls of the study's claims, the first step of the procedure (:mod:`faithlab_study.verdicts.procedure`):
the verdict words' meanings (:data:`MEANINGS`), verdicts from threshold rules (:func:`ladder`, :func:`verdict`), the
premise checks — a baseline already at the ideal (:func:`at_ideal`), an undefined statistic (:func:`undefined`), the
paper's mechanism shown absent on the stand-in (:class:`Premise`, :func:`premise_interval`, :func:`premise_share`) —
and the nulls, the same statistic at chance (:class:`Null`, :func:`null_draws`, :func:`within_null`).

One concept: whether a comparison can discriminate at all, before any interval is judged against its margin."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from faithlab_study.verdicts.words import (DECIDED, INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY,  # noqa: F401
                                           REPRODUCED, VERDICTS, WEAKER, Verdict)

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that compute: faithlab_study.artifacts imports this module for VERDICTS, and a
# notebook that only writes tables then starts without torch's 1.2 s import.

__all__ = ["MEANINGS", "ladder", "verdict", "Premise", "premise_share", "premise_interval", "at_ideal", "undefined",
           "first_reason", "Null", "null_draws", "within_null", "share_above_zero"]

MEANINGS = {
    REPRODUCED: "the effect reaches the paper's size: in every cell the claim's rule needs, the 90 % interval (its "
                "ends the one-sided 5 % bounds) lies beyond the margin — the smallest effect of interest, from the "
                "paper's numbers — in the paper's direction",
    WEAKER: "the paper's direction is shown, its size is not: where the rule needs it the 90 % interval lies beyond "
            "the value of no effect (0, or the chance value of a level statistic) in the paper's direction, but in "
            "some needed cell it is not shown to reach the margin",
    PARTLY: "a claim of several named parts: the share of its parts fixed in advance is reproduced, not all of them",
    NOT_REPRODUCED: "the effect is shown absent or reversed here: in a cell the rule needs, the 90 % interval lies "
                    "inside the band of no meaningful effect (within the margin of the value of no effect) or beyond "
                    "the value of no effect the other way; over several cells, counted at Holm's adjusted level",
    NOT_TESTABLE: "a premise about the stand-in failed (the paper's mechanism is absent here), so the claim was not "
                  "tested; it says nothing about the paper",
    INCONCLUSIVE: "the data here do not decide: an interval reaches both the value of no effect and a margin, the "
                  "verdict moves with the bootstrap seed, or fewer replicas or units back it than its rule asks (the "
                  "power column says what design would decide it); how many replicas alone give the same verdict is "
                  "shown beside it, not used",
}
"""What each verdict means, in one phrase (the book's legend)."""


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
    return Verdict(REPRODUCED if bool(reproduced) else PARTLY if bool(partly) else NOT_REPRODUCED)


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
    """A premise on a quantity with its interval (:mod:`faithlab_study.verdicts.intervals`): holds when the whole
    interval lies ``direction`` ("above" or "below") ``threshold``, fails when it lies wholly on the other side,
    undecided when it straddles the threshold."""
    from faithlab_study.verdicts.intervals import Interval

    if not isinstance(interval, Interval):
        raise TypeError(f"interval must be a faithlab_study.verdicts.Interval, got {type(interval).__name__}")
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


# ----------------------------------------------------------------------------------------------------- values
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
        raise TypeError(f"null must be a faithlab_study.verdicts.Null, got {type(null).__name__}")
    number = _number(value, "value")
    if number != number or null.contains(number):
        return f"{what} ({number:.3f}) lies within the chance range of {null.describe()}"
    return None


def share_above_zero(values) -> float:
    """Share of ``values`` above 0 with ties (exact zeros) counted half and NaN left out (NaN when none is left)."""
    x = _values(values, "values")
    x = x[~x.isnan()]
    if x.numel() == 0:
        return float("nan")
    return float(((x > 0).double() + 0.5 * (x == 0).double()).mean())

"""Verdicts of the study's claims: the verdict words, premises and nulls, the :class:`Claim` a claim function
returns and :func:`replicated`, the one wrapper every notebook's claim goes through.

A verdict is one of :data:`VERDICTS`. It comes from a pre-registered rule (:mod:`faithlab.study.verdicts.rules`), in two
steps:

1. **Premise check** — can the comparison discriminate at all? When a baseline is already at the ideal value
   (:func:`at_ideal`), a statistic is undefined (:func:`undefined`), the paper's mechanism is shown absent on the
   stand-in (:func:`premise_interval`, :func:`premise_share`), or the value lies inside the spread of its **null** —
   the same statistic at chance, on shuffled pairings, random maps or permuted labels (:class:`Null`,
   :func:`null_draws`, :func:`within_null`) — the claim is "not testable here" and the reason is kept with the
   verdict.
2. **Decision with uncertainty** — each cell's interval (:mod:`faithlab.study.verdicts.intervals`: the t interval on the
   replica-level statistics, Wilson joined for shares; coverage tested in :mod:`faithlab.study.verdicts.coverage`) against
   the rule's margin from the paper, by the equivalence logic, the cells combined as the rule says
   (:mod:`faithlab.study.verdicts.decisions`).

A claim is a function in ``faithlab.study.papers.<paper>`` that takes the notebook's frames and returns a
:class:`Claim`: the claim, its rule (registered, by id), its premise with the null it was checked against, the
paper's value, ours, the verdict and the table behind it. Notebooks call it and record it with
:meth:`faithlab.study.artifacts.Outputs.claim`; no verdict rule or interval is spelled out in a notebook.

Every function returns a :class:`Verdict`: a plain ``str`` (one of :data:`VERDICTS`) that also carries ``why``, a
sentence with the rule's outcome, which :meth:`faithlab.study.artifacts.Outputs.claim` adds to the claim's note.

One concept: a claim's verdict, from its premises to the published word (the verdict words, premises and nulls, the
:class:`Claim` and the wrapper that applies the rule's replica and unit minimums), kept whole so that no rule has a
second copy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from faithlab.study.verdicts.replication import replica_seed  # noqa: F401 (re-exported)
from faithlab.study.verdicts.words import (DECIDED, INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, PARTLY,  # noqa: F401
                                     REPRODUCED, VERDICTS, Verdict)

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that compute: faithlab.study.artifacts imports this module for VERDICTS, and a
# notebook that only writes tables then starts without torch's 1.2 s import.

__all__ = [
    "VERDICTS", "Verdict", "ladder", "verdict", "at_ideal", "undefined", "first_reason",
    "Null", "null_draws", "within_null", "Claim",
    "REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "INCONCLUSIVE", "DECIDED", "MIN_REPLICAS", "MIN_UNITS",
    "STABILITY_SEEDS", "KINDS", "share_above_zero", "replica_seed", "replicated",
    "Premise", "premise_share", "MEANINGS", "premise_interval", "LEFT_OUT",
]

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
    """A premise on a quantity with its interval (:mod:`faithlab.study.verdicts.intervals`): holds when the whole
    interval lies ``direction`` ("above" or "below") ``threshold``, fails when it lies wholly on the other side,
    undecided when it straddles the threshold."""
    from faithlab.study.verdicts.intervals import Interval

    if not isinstance(interval, Interval):
        raise TypeError(f"interval must be a faithlab.study.verdicts.Interval, got {type(interval).__name__}")
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
        raise TypeError(f"null must be a faithlab.study.verdicts.Null, got {type(null).__name__}")
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
        from faithlab.study.verdicts.rules import Rule

        if isinstance(self.rule, Rule):  # the pre-registered rule: its id, kind and sentence come from the file
            object.__setattr__(self, "rule_id", self.rule.id)
            object.__setattr__(self, "kind", self.rule.kind)
            object.__setattr__(self, "rule", self.rule.text())
        elif self.rule_id is not None:
            from faithlab.study.verdicts.rules import rule as registered

            object.__setattr__(self, "rule", registered(self.rule_id).text() if not str(self.rule).strip()
                               else self.rule)
        for name in ("claim", "rule", "premise"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty sentence, got {value!r}")
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"verdict must be a faithlab.study.verdicts.Verdict, got {type(self.verdict).__name__}")
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
        few units alone); "R replicas (each too few units to decide alone)" when none can be decided alone (a
        claim on one statistic per replica), not "0 of 0", which reads as disagreement — R counts every replica,
        with the reasons apart when they differ ("5 replicas (3 too few units to decide alone; 2 not testable
        alone)"); "one trained model" when
        the frames of a claim about trained models carry no replica column, "—" for a claim that rests on no
        training (``trained`` False). A replica not testable alone while the claim is testable pooled is counted
        apart ("k not testable alone"), neither agreeing nor disagreeing. A description: it is not part of the
        decision."""
        if not self.replicas:
            return "one trained model" if self.trained else "—"
        own = self.raw or str(self.verdict)
        # a replica not testable alone while the pooled claim is testable (e.g. one that only a premise frame holds:
        # Few-class's premise replicas) neither agrees nor disagrees: counted apart
        apart = [str(v) for v in self.replicas if str(v) == NOT_TESTABLE and own != NOT_TESTABLE]
        kept = [str(v) for v in self.replicas if str(v) != LEFT_OUT and str(v) not in apart]
        out = len(self.replicas) - len(kept) - len(apart)
        untestable = f"{len(apart)} not testable alone" if apart else ""
        if not kept:  # every replica is left out or apart (never "0 replicas", nor R short of the apart ones)
            reasons = [f"{n} {why}" for n, why in ((out, "too few units to decide alone"),
                                                    (len(apart), "not testable alone")) if n]
            each = "each " + reasons[0].split(" ", 1)[1] if len(reasons) == 1 else "; ".join(reasons)
            return f"{len(self.replicas)} replicas ({each})"
        alone = sum(v == INCONCLUSIVE for v in kept) if own != INCONCLUSIVE else 0
        notes = [f"{alone} undecided alone" if alone else "", f"{out} left out: too few units alone" if out else "",
                 untestable]
        notes = [n for n in notes if n]
        return f"{sum(v == own for v in kept)} of {len(kept)} replicas" + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def trained_replicas(self) -> int | None:
        """How many trained replicas the claim's frames hold (every replica of :attr:`replica_agreement`, left out
        and not testable alone included): 1 for a claim about one trained model, None for a claim that rests on
        no training (``trained`` False)."""
        if self.replicas:
            return len(self.replicas)
        return 1 if self.trained else None

    @property
    def bootstrap_stability(self) -> str:
        """"k of S seeds": other bootstrap seeds under which the claim function gives its own verdict (``raw``, before
        :func:`replicated` publishes an unstable or underpowered one as inconclusive)."""
        if not self.stability:
            return "exact (no resampling)"
        own = self.raw or str(self.verdict)
        return f"{sum(str(v) == own for v in self.stability)} of {len(self.stability)} seeds"


# --------------------------------------------------------------------------------------------------- replication
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
    through (:meth:`faithlab.study.artifacts.Outputs.claim` calls it when given a claim function).

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
        raise TypeError(f"{getattr(fn, '__name__', fn)} must return a faithlab.study.verdicts.Claim, got "
                        f"{type(claim).__name__}")
    per = []
    for r in _replica_ids((args, kwargs), column):
        try:
            per.append(str(fn(*_subset(args, column, r), **_subset(kwargs, column, r)).verdict))
        except ValueError:  # one replica's rows can be too few for a statistic that the pooled rows define
            per.append(LEFT_OUT)
    stability = ()
    from faithlab.study.verdicts import decisions, power as power_analysis

    token = decisions.RECORDER.set([])
    try:
        fn(*args, **kwargs)  # once more, recording the units of its judged cells for the power analysis
        judged = decisions.RECORDER.get()
    finally:
        decisions.RECORDER.reset(token)
    power = power_analysis.design_needed(judged) if judged else ""
    if claim.verdict == INCONCLUSIVE and claim.verdict.why.startswith("the premise is undecided") and power:
        power = f"{power}; the outcome waits on its undecided premise"
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
        from faithlab.study.verdicts.rules import rule as registered

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

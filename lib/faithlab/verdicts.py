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
"""

from __future__ import annotations

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
]

VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "not testable here")


class Verdict(str):
    """One of :data:`VERDICTS`, with ``why``: the rule's outcome (or the reason it is not testable)."""

    why: str

    def __new__(cls, value: str, why: str = ""):
        if value not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {value!r}")
        obj = super().__new__(cls, value)
        obj.why = why
        return obj


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
        return Verdict(VERDICTS[3], f"not testable: {_reason(untestable)}")
    return Verdict(VERDICTS[0] if bool(reproduced) else VERDICTS[1] if bool(partly) else VERDICTS[2])


def verdict(value, *, reproduced: str = "== 1", partly: str | None = "> 0", untestable: str | None = None) -> Verdict:
    """The verdict of a claim from the value our run measured and a stated threshold rule.

    value: a number (a correlation, a share, a gap), or a sequence of booleans — one per check the claim needs —
    read as the share of checks that hold. reproduced / partly: the rule, as ``"<op> <threshold>"`` with op in
    ``>=, >, <=, <, ==`` (e.g. ``reproduced=">= 0.8", partly=">= 0.5"``); the default reads "every check holds →
    reproduced, at least one → partly reproduced". untestable: a reason why the comparison cannot discriminate
    here (see :func:`at_ideal`, :func:`undefined`); when given, the verdict is "not testable here" whatever the value.
    Premise check: a NaN value (an undefined statistic) or an empty sequence of checks is "not testable here".
    """
    if untestable is not None:
        return ladder(False, untestable=untestable)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}")
    if isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1:  # list, array, Series or tensor of checks
        checks = [bool(v) for v in value]
        if not checks:
            return ladder(False, untestable="no check to make")
        value = sum(checks) / len(checks)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"value must be a number or a sequence of booleans, got {value!r}") from None
    if number != number:
        return ladder(False, untestable="the statistic is undefined (NaN)")
    op, threshold = _condition(reproduced, "reproduced")
    partly_holds = False
    if partly is not None:
        p_op, p_threshold = _condition(partly, "partly")
        partly_holds = _COMPARISONS[p_op](number, p_threshold)
    return ladder(_COMPARISONS[op](number, threshold), partly_holds)


# ------------------------------------------------------------------------------------------------ premise checks
def _number(value, name: str) -> float:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None


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

    values = torch.as_tensor(value, dtype=torch.float64).flatten()
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


def bootstrap_diff(a, b=None, *, higher_is_better: bool = True, n_boot: int = 4000, level: float = 0.95,
                   seed: int = 0) -> Comparison:
    """Paired percentile bootstrap of the mean difference ``a − b`` (or of ``a`` alone when b is None).

    a, b: per-unit values of the target and the competitor on the same units (e.g. one micro rank per seed ×
    level, one score per image), flattened; units where either is NaN are dropped. higher_is_better: False flips
    the sign so that a positive mean always favours ``a``. The ``n_boot`` resamples of the units (generator
    ``seed``, so the outcome is reproducible) give the ``level`` percentile interval.
    Raises ValueError when fewer than 2 paired units remain (use :func:`undefined` as a premise check first).
    """
    import torch

    x = _values(a, "a")
    if b is not None:
        y = _values(b, "b")
        if y.shape != x.shape:
            raise ValueError(f"a and b must hold the same number of paired units, got {x.numel()} and {y.numel()}")
        x = x - y
    x = x[~x.isnan()]
    if not higher_is_better:
        x = -x
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 100:
        raise ValueError(f"n_boot must be an int ≥ 100, got {n_boot!r}")
    if not 0.5 <= _number(level, "level") < 1:
        raise ValueError(f"level must lie in [0.5, 1), got {level!r}")
    n = x.numel()
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 paired units without NaN, got {n}")
    g = torch.Generator().manual_seed(int(seed))
    means = x[torch.randint(n, (n_boot, n), generator=g)].mean(1)
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
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
    low, high = torch.quantile(x, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    spread = 1e-12 * max(1.0, abs(mean))
    outcome = "win" if low > spread else "loss" if high < -spread else "tie"
    return Comparison(mean, low, high, float(level), int(x.numel()), outcome)


def compare(scores: Mapping[str, object], *, target: str, higher_is_better: bool, n_boot: int = 4000,
            level: float = 0.95, seed: int = 0) -> dict[str, Comparison]:
    """Paired bootstrap comparison of ``scores[target]`` with every other entry → ``{competitor: Comparison}``.

    scores: ``{name: per-unit values}``, all on the same units in the same order (e.g. micro ranks per seed ×
    level). higher_is_better: the direction of the scores (False for ranks). Each comparison uses generator
    ``seed`` (the same resamples of the units for every competitor).
    """
    if not isinstance(scores, Mapping) or target not in scores:
        raise ValueError(f"target must be one of the keys of scores, got {target!r} for {list(scores)!r}")
    if len(scores) < 2:
        raise ValueError("scores must hold the target and at least one competitor")
    return {name: bootstrap_diff(scores[target], values, higher_is_better=higher_is_better, n_boot=n_boot,
                                 level=level, seed=seed)
            for name, values in scores.items() if name != target}


def from_comparison(comparisons: Mapping[str, Comparison], *, untestable: str | None = None,
                    reproduced: float | None = None) -> Verdict:
    """Verdict of "the target beats its competitors" from :func:`compare`'s outcomes.

    Rule (fixed before any result): reproduced when the target loses to no competitor and beats at least
    ``reproduced`` of them (the house share, two thirds); partly reproduced when it beats at least one (fewer, or
    while losing to others); not reproduced when it loses to at least one and beats none; "not testable here" when
    it ties with every competitor (each difference lies within its interval: the comparison cannot tell them apart
    here). ``untestable`` (a premise reason) wins over all.
    """
    if untestable is not None:
        return ladder(False, untestable=untestable)
    if not comparisons:
        raise ValueError("comparisons must hold at least one Comparison")
    reproduced = REPRODUCED_SHARE if reproduced is None else _number(reproduced, "reproduced")
    wins = [n for n, c in comparisons.items() if c.outcome == "win"]
    losses = [n for n, c in comparisons.items() if c.outcome == "loss"]
    level = next(iter(comparisons.values())).level
    why = (f"{math.floor(level * 100 + 0.5)} % bootstrap interval: beats {', '.join(wins) or 'none'}; "
           f"loses to {', '.join(losses) or 'none'}; ties the rest")
    if not wins and not losses:
        return ladder(False, untestable=f"ties with every competitor ({why})")
    if losses and not wins:
        return Verdict(VERDICTS[2], why)
    share = len(wins) / len(comparisons)
    return Verdict(VERDICTS[0] if not losses and share >= reproduced - 1e-12 else VERDICTS[1],
                   f"{why}; reproduced from {reproduced:.0%} of the competitors beaten")


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

        return torch.quantile(torch.tensor(self.draws, dtype=torch.float64),
                              torch.tensor(qs, dtype=torch.float64)).tolist()

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

    holds: one entry per testable setting — a bool (the claim holds significantly there), or a
    :class:`Comparison` (holds when its outcome is "win"). Rule: reproduced when the share that holds is at least
    ``reproduced``, partly reproduced when it is at least ``partly`` (> 0), else not reproduced; "not testable
    here" without testable settings or when ``untestable`` gives a reason. The thresholds are the house's
    (:data:`REPRODUCED_SHARE`, :data:`PARTLY_SHARE`) unless a claim states others before its result (e.g. "most"
    read as more than a half)."""
    if untestable is not None:
        return ladder(False, untestable=untestable)
    if isinstance(holds, (str, bytes)):
        raise TypeError(f"holds must be a sequence of bools or Comparisons, got {holds!r}")
    items = list(holds)
    flags = []
    for h in items:
        if isinstance(h, Comparison):
            flags.append(h.outcome == "win")
        elif isinstance(h, (bool, np.bool_)):
            flags.append(bool(h))
        else:
            raise TypeError(f"holds must hold bools or Comparisons, got {type(h).__name__}")
    r, p = _number(reproduced, "reproduced"), _number(partly, "partly")
    if not 0 < p <= r <= 1:
        raise ValueError(f"need 0 < partly ≤ reproduced ≤ 1, got partly={partly!r}, reproduced={reproduced!r}")
    if not flags:
        return ladder(False, untestable=f"no testable {what}")
    k, n = sum(flags), len(flags)
    share = k / n
    why = f"holds in {k} of {n} {what} ({share:.0%}); reproduced from {r:.0%}, partly from {p:.0%}"
    return Verdict(VERDICTS[0] if share >= r else VERDICTS[1] if share >= p else VERDICTS[2], why)


# ----------------------------------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class Claim:
    """What a claim function returns (see the module docstring).

    claim: the claim's label and text ("C3 (vehicles): SmoothGrad raises Fid for most methods"). rule: one sentence
    saying how the verdict is decided, written before the result. premise: one sentence naming what must hold for
    the comparison to discriminate and the null it was checked against, with that check's outcome. paper_value /
    our_value: short texts. verdict: a :class:`Verdict`. table: the frame behind the verdict (one row per setting
    or comparison), or None."""

    claim: str
    rule: str
    premise: str
    paper_value: str
    our_value: str
    verdict: Verdict
    table: object = None

    def __post_init__(self):
        for name in ("claim", "rule", "premise"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty sentence, got {value!r}")
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"verdict must be a faithlab.verdicts.Verdict, got {type(self.verdict).__name__}")

"""What a claim function returns: the :class:`Claim` (the claim, its rule, its premise with the null it was checked
against, the paper's value, ours, the verdict and the table behind it) and its :data:`KINDS`.

One concept: the record of one claim's verdict, checked on construction (a rule that states a decision threshold,
:func:`states_decision`, is refused: the decision's text comes from the function that decided)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faithlab_study.verdicts.words import INCONCLUSIVE, NOT_TESTABLE, Verdict

__all__ = ["KINDS", "Claim", "LEFT_OUT", "states_decision"]

LEFT_OUT = "left out"
"""A replica's entry in :attr:`Claim.replicas` when its rows alone are too few for the claim's statistic (it is not
counted as agreeing or disagreeing)."""

# ----------------------------------------------------------------------------------------------------- claims
KINDS = ("paper", "study check")
"""What a claim is: a paper's claim (counted in the paper's scorecard row), or a study check — an identity, a ratio
fixed by design, a check of our own stand-ins — shown apart and never counted among the papers' claims."""

DECISION_WORDS = ("reproduced when", "reproduced if", "reproduced from", "partly when", "partly if", "partly from",
                   "not reproduced when", "not testable when", "inconclusive when")


def states_decision(rule: str) -> bool:
    return any(w in rule.lower() for w in DECISION_WORDS)


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
    frames; :func:`replicated` counts these, not the replicas it was given. function: the claim function that decided
    it (``module.qualname``), set by :func:`replicated` (the scorecard names its rule's commit from it). cells: the
    cell table behind the verdict, one dict per judged cell (:func:`faithlab_study.verdicts.decisions.cell_rows`:
    its replica-level values, interval, boundaries and outcome), set by :func:`replicated` so that a reader can
    recompute the verdict; empty for a claim decided outside it. before: the verdict the same data got by the
    decision procedure before issue 90 (one boundary, the margin; 95 % intervals; no Holm), with the same replica and
    unit minimums, set by :func:`replicated` so that the pre-registration page lists every verdict the change moved;
    empty for a claim decided outside it. prospective: the power of the claim's whole rule before the data
    (:func:`faithlab_study.verdicts.power.prospective`: at the paper's effect and at the margin, the variance pooled
    over the verdict's cells, and the design that would decide it), set by :func:`replicated`."""

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
    function: str = ""
    cells: tuple = ()
    before: str = ""
    prospective: str = ""

    def __post_init__(self):
        from faithlab_study.verdicts.rules import Rule

        if isinstance(self.rule, Rule):  # the pre-registered rule: its id, kind and sentence come from the file
            object.__setattr__(self, "rule_id", self.rule.id)
            object.__setattr__(self, "kind", self.rule.kind)
            object.__setattr__(self, "rule", self.rule.text())
        elif self.rule_id is not None:
            from faithlab_study.verdicts.rules import rule as registered

            object.__setattr__(self, "rule", registered(self.rule_id).text() if not str(self.rule).strip()
                               else self.rule)
        for name in ("claim", "rule", "premise"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty sentence, got {value!r}")
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"verdict must be a faithlab_study.verdicts.Verdict, got {type(self.verdict).__name__}")
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
        if states_decision(self.rule):
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

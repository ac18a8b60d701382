"""Verdicts of the study's claims: one pre-registered procedure that every claim function applies.

- :mod:`.rules` — the pre-registered rules, each registered by :func:`registered` directly above the claim function
  that decides by it: per claim its statistic, the paper's direction, the smallest effect of interest (margin) with
  its source in the paper, the null, the premises, the design (R × n) and the interval, with its change log;
  :func:`rule` hands a claim function its :class:`Rule`.
- :mod:`faithlab_study.verdicts.intervals` — intervals whose coverage is tested by simulation (:mod:`.coverage`):
  a t interval on the replica-level statistics (the trained model is the unit of replication), Wilson for shares.
- :mod:`.decisions` — direction and size from one interval: each cell's interval, at one-sided 5 %, against the value
  of no effect and the margin (holds / weaker / absent / undecided: :func:`judge`, :func:`effect`), the cells
  combined as the rule says, with Holm's correction where one of many cells decides (:func:`decide`,
  :func:`decide_parts`).
- :mod:`.error_rates` — each statement's error rate for the whole rule, simulated through those functions.
- :mod:`.power` — the design (replicas × units) that would decide a claim, with the same interval.
- :mod:`.premises` — premises and nulls (the first step: can the comparison discriminate at all).
- :mod:`.claim` — :class:`Claim`, what a claim function returns.
- :mod:`.procedure` — :func:`replicated`, the one wrapper every notebook's claim goes through (replica agreement,
  stability, the rule's replica and unit minimums, the power analysis); it re-exports the premises and the claim.
- :mod:`.replication` — the replica loop (:func:`replicas`, the replicas' seeds) and the frames' ``replica`` column.
"""

from faithlab_study.verdicts import procedure
from faithlab_study.verdicts.procedure import *  # noqa: F401,F403
from faithlab_study.verdicts.procedure import states_decision, then  # noqa: F401
from faithlab_study.verdicts.intervals import (Interval, mean_interval, replica_interval, share_interval,  # noqa: F401
                                         draws_interval, wilson, INTERVAL_METHODS)
from faithlab_study.verdicts.rules import (Rule, Chapter, rule, all_rules, DECISIONS, registered,  # noqa: F401
                                         registered_answer, zero_change)
from faithlab_study.verdicts.decisions import (Judgement, judge, effect, decide, decide_parts,  # noqa: F401
                                         judgement_table, replica_judgement, OUTCOMES, deciding_before)
from faithlab_study.verdicts.power import design_needed  # noqa: F401
from faithlab_study.verdicts import replication  # noqa: F401
from faithlab_study.verdicts.replication import Replica, replicas  # noqa: F401

__all__ = [*procedure.__all__, "Interval", "mean_interval", "replica_interval", "share_interval", "draws_interval",
           "wilson", "INTERVAL_METHODS", "Rule", "Chapter", "rule", "all_rules", "DECISIONS", "registered",
           "registered_answer", "zero_change", "Judgement", "judge", "effect",
           "decide", "decide_parts", "judgement_table", "replica_judgement", "OUTCOMES", "deciding_before",
           "design_needed", "replication", "Replica", "replicas"]

"""TRACE's claims T1–T6 as claim functions, each decided by its pre-registered rule
(registered above each claim function by :func:`faithlab_study.verdicts.registered`:
``verdicts.rule("T2")`` …), and the chapter's mechanism premise,
one module per concept:

- :mod:`~faithlab_study.papers.trace.claims.premises`: the mechanism premise (``mechanism_premises`` and the premise
  frames of each claim's data set) and the helpers the claims share;
- :mod:`~faithlab_study.papers.trace.claims.searches`: T1 (the search bound), its study check (SA beats greedy) and the
  cross test;
- :mod:`~faithlab_study.papers.trace.claims.tables`: Table 1's claims (TRACE beats the methods, the probability beats
  the logit) and the reference robustness;
- :mod:`~faithlab_study.papers.trace.claims.deletion`: the random deletion test and insertion against deletion (T6).

Every public name is re-exported here (``faithlab_study.papers.trace.claims.claim_search_bound``).
"""

# Every statistic is a mean of per-image values (images of independently trained replicas), decided by the t
# interval on the replica means. The margins come from the paper's Table 1 (typed in faithlab_study.papers.trace.paper,
# whose margin_* functions recompute them; tests/faithlab_study/papers/trace/test_paper_tables.py fails when they drift) or, for
# the claims the paper makes from figures without numbers (Fig. 4, Fig. 3b), from one stated convention of the
# chapter: 0.05 of the probability's range for a difference of a curve's mean probability.
#
# The chapter's mechanism premise (faithlab_study.papers.trace.mechanism_premises), the same for every claim on every
# data set it uses: (a) deleting patches lowers the prediction — f(x) minus the mean of a random-order deletion curve
# above 0.1; (b) the search beats random orders — its lead per curve point above 0.1 (both a tenth of the
# probability's range, by convention), each decided with the t interval on the replica means.


from faithlab_study.papers.trace.claims.premises import (PREMISE_COLUMNS, PREMISE_DROP, PREMISE_GAIN, cross_premises,
                                                         mechanism_premises, premise_outcomes, random_test_premises,
                                                         search_bound_premises, table1_premises)
from faithlab_study.papers.trace.claims.searches import (claim_cross_test, claim_search_beats_greedy,
                                                         claim_search_bound)
from faithlab_study.papers.trace.claims.tables import (claim_beats_methods, claim_probability_beats_logit,
                                                       claim_reference_robust)
from faithlab_study.papers.trace.claims.deletion import claim_insertion_equals_deletion, claim_random_test

__all__ = ["PREMISE_DROP", "PREMISE_GAIN", "PREMISE_COLUMNS", "mechanism_premises", "premise_outcomes",
           "table1_premises", "search_bound_premises", "cross_premises", "random_test_premises", "claim_search_bound",
           "claim_search_beats_greedy", "claim_beats_methods", "claim_probability_beats_logit", "claim_random_test",
           "claim_cross_test", "claim_reference_robust", "claim_insertion_equals_deletion"]

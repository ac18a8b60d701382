"""TRACE's claims T1–T6 as claim functions, each decided by its pre-registered rule
(``faithlab/study/verdicts/registered/trace.toml``: ``verdicts.rule("T2")`` …), and the chapter's mechanism premise,
one module per concept:

- :mod:`~faithlab.study.papers.trace.claims.premises`: the mechanism premise (``mechanism_premises`` and the premise
  frames of each claim's data set) and the helpers the claims share;
- :mod:`~faithlab.study.papers.trace.claims.searches`: T1 (the search bound), its study check (SA beats greedy) and the
  cross test;
- :mod:`~faithlab.study.papers.trace.claims.tables`: Table 1's claims (TRACE beats the methods, the probability beats
  the logit) and the reference robustness;
- :mod:`~faithlab.study.papers.trace.claims.deletion`: the random deletion test and insertion against deletion (T6).

Every public name is re-exported here (``faithlab.study.papers.trace.claims.claim_search_bound``).
"""

from faithlab.study.papers.trace.claims.premises import (PREMISE_COLUMNS, PREMISE_DROP, PREMISE_GAIN, cross_premises,
                                                         mechanism_premises, premise_outcomes, random_test_premises,
                                                         search_bound_premises, table1_premises)
from faithlab.study.papers.trace.claims.searches import (claim_cross_test, claim_search_beats_greedy,
                                                         claim_search_bound)
from faithlab.study.papers.trace.claims.tables import (claim_beats_methods, claim_probability_beats_logit,
                                                       claim_reference_robust)
from faithlab.study.papers.trace.claims.deletion import claim_insertion_equals_deletion, claim_random_test

__all__ = ["PREMISE_DROP", "PREMISE_GAIN", "PREMISE_COLUMNS", "mechanism_premises", "premise_outcomes",
           "table1_premises", "search_bound_premises", "cross_premises", "random_test_premises", "claim_search_bound",
           "claim_search_beats_greedy", "claim_beats_methods", "claim_probability_beats_logit", "claim_random_test",
           "claim_cross_test", "claim_reference_robust", "claim_insertion_equals_deletion"]

"""The synthesis' claims, one module per concept (every public name re-exported here):

- :mod:`~faithlab_study.papers.synthesis.claims.ideal_gap`: claim MN1 (Miró-Nicolau et al. 2024), decided against
  random maps (:func:`~faithlab_study.papers.synthesis.claims.ideal_gap.claim_ideal_gap`, ``PREMISE_BAND``);
- :mod:`~faithlab_study.papers.synthesis.claims.advice`: the guide the book opens with: per situation the metrics
  that hold up across independently trained replicas, judged with t intervals on the replica means against a margin
  fixed by the design.
"""

from faithlab_study.papers.synthesis.claims.advice import (CHAPTER_METRICS, COST_CASE, REFERENCE_SENSITIVE,
                                                           answer_sentence, guide, guide_sentences,
                                                           reference_sensitivity, reference_sentence,
                                                           separation_margin, separations, value_range)
from faithlab_study.papers.synthesis.claims.ideal_gap import PREMISE_BAND, claim_ideal_gap

__all__ = ["claim_ideal_gap", "PREMISE_BAND", "guide", "guide_sentences", "answer_sentence", "separation_margin",
           "separations", "reference_sensitivity", "reference_sentence", "REFERENCE_SENSITIVE", "CHAPTER_METRICS",
           "COST_CASE", "value_range"]

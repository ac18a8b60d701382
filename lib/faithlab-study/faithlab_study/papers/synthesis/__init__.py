"""The synthesis protocol: every metric of the study on setups whose right answer is known, in the files of every
paper package:

- :mod:`~faithlab_study.papers.synthesis.setup`: the classifiers of canvas digits with their ground-truth maps
  (:func:`~faithlab_study.papers.synthesis.setup.setup`, the decision tree of
  :func:`~faithlab_study.papers.synthesis.setup.tree_setup`) and the explainers of known quality, the ground truth
  degraded at noise levels ξ (:func:`~faithlab_study.papers.synthesis.setup.explainer_maps`; F-Fidelity's protocol,
  spec §1.8): lower ξ is better; the chapter's set-up table (``SETUP``);
- :mod:`~faithlab_study.papers.synthesis.experiments`: per metric, how well it recovers that ranking
  (:func:`~faithlab_study.papers.synthesis.experiments.recovery`), how far the perfect explanation lands from the
  metric's own ideal (:func:`~faithlab_study.papers.synthesis.experiments.ideal_gap`), a MetaQuantus-style
  meta-evaluation (:func:`~faithlab_study.papers.synthesis.experiments.resilience`,
  :func:`~faithlab_study.papers.synthesis.experiments.reactivity`; Hedström et al., TMLR 2023), and the report
  card that ranks the metrics (:func:`~faithlab_study.papers.synthesis.experiments.report_card`);
- :mod:`~faithlab_study.papers.synthesis.claims`: Miró-Nicolau et al.'s claim decided against random maps
  (:func:`~faithlab_study.papers.synthesis.claims.ideal_gap.claim_ideal_gap`) and the guide the book opens with: per
  situation the metrics that hold up across independently trained replicas, judged with t intervals on the replica
  means against a margin fixed by the design (:func:`~faithlab_study.papers.synthesis.claims.advice.guide`,
  :func:`~faithlab_study.papers.synthesis.claims.advice.separations`,
  :func:`~faithlab_study.papers.synthesis.claims.advice.guide_sentences`,
  :func:`~faithlab_study.papers.synthesis.claims.advice.answer_sentence`);
- :mod:`~faithlab_study.papers.synthesis.paper`: the published finding the chapter decides (``PAPER_IDEAL_GAP``,
  ``PAPER_THRESHOLD``).

Every public name is re-exported here (``faithlab_study.papers.synthesis.recovery``). The function
:func:`~faithlab_study.papers.synthesis.setup.setup` shares its name with its module: ``synthesis.setup`` is the
function; the module is ``faithlab_study.papers.synthesis.setup`` in ``sys.modules``.
"""

from faithlab_study.papers.synthesis.claims import (CHAPTER_METRICS, COST_CASE, PREMISE_BAND, REFERENCE_SENSITIVE,
                                                    answer_sentence, claim_ideal_gap, guide, guide_sentences,
                                                    reference_sensitivity, reference_sentence, separation_margin,
                                                    separations, value_range)
from faithlab_study.papers.synthesis.experiments import (CRITERIA, INPUT_NOISE, META_SETUP, MODEL_NOISE, OOD_SETUP,
                                                         RANDOMISE_SCALE, REFERENCE_SETUPS, beats, cost_per_metric,
                                                         ideal_gap, noisy_inputs, reactivity, recovery, recovery_units,
                                                         report_card, resilience)
from faithlab_study.papers.synthesis.paper import PAPER_IDEAL_GAP, PAPER_THRESHOLD
from faithlab_study.papers.synthesis.setup import (SETUP, Setup, degraded_name, evaluate_again, explainer_maps,
                                                   part_rows, setup, tree_setup)

__all__ = ["Setup", "setup", "tree_setup", "part_rows", "claim_ideal_gap", "PREMISE_BAND", "PAPER_IDEAL_GAP",
           "PAPER_THRESHOLD", "degraded_name", "explainer_maps", "recovery", "recovery_units", "ideal_gap",
           "resilience", "reactivity", "report_card", "CRITERIA", "guide", "guide_sentences", "answer_sentence",
           "separation_margin", "separations", "reference_sensitivity", "reference_sentence", "REFERENCE_SENSITIVE",
           "CHAPTER_METRICS", "COST_CASE", "cost_per_metric", "noisy_inputs", "beats", "evaluate_again", "value_range",
           "META_SETUP", "OOD_SETUP", "REFERENCE_SETUPS", "MODEL_NOISE", "INPUT_NOISE", "RANDOMISE_SCALE"]

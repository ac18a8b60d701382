"""What a report on one model's explainers is: the tables, figures and the one HTML page that ``faithlab evaluate``
and the template notebook (``notebooks/templates/evaluate_your_explainer.py``) both produce from an
:func:`faithlab.evaluate` frame.

* :func:`overall`, :func:`separation`: the explainers ranked over all the metrics (mean rank, each metric by its own
  direction, with a bootstrap interval over the images) and, per pair of explainers, how many metrics separate them
  (the t interval of their mean per-image score difference excludes 0); :func:`overall_sentence` says it;
* :func:`glossary`: what each metric measures (each declaration's ``doc``), its direction and the book chapter that
  tests it;
* :func:`summary`: the mean score per metric × explainer, with the metric's direction and, for a Monte-Carlo
  metric, the Monte-Carlo standard error of that mean; :func:`monte_carlo_pairs` and :func:`monte_carlo_sentence`:
  which pairs of explainers a Monte-Carlo metric does not separate at its Monte-Carlo precision;
* :func:`ranks`: each metric's ranking of the explainers (1 = the most faithful by that metric);
* :func:`sanity`: the share of images where each explainer beats a random map
  (:func:`faithlab.evaluation.meta.beats`) and how much each metric's ranking changes on a randomised model
  (adversary reactivity, :func:`faithlab.evaluation.meta.reactivity`; the randomised model's frame comes from
  :func:`on_randomised`); :func:`sanity_sentences` reads it;
* :func:`cost`: model inputs and milliseconds per image and explainer, per metric;
* :func:`maps_figure`, :func:`ranks_figure`: the figures (matplotlib, imported when called: the ``report`` extra);
* :func:`write`: all of it into a folder (CSVs, PNGs and ``index.html``), atomically; :func:`replaceable`: whether a
  folder may be replaced by a report.

One copy of each rule: the command and the notebook call these functions and differ only in where the model and
images come from. Every number and result sentence of the page is computed from the frame.

One concept: the report on one model's explainers, from an evaluate frame to its tables, sentences, figures and
page, one module per part: :mod:`~faithlab.report.tables` (the tables), :mod:`~faithlab.report.sentences` (what they
say, and numbers written for a reader), :mod:`~faithlab.report.meanings` (what each metric measures, the links into
the book), :mod:`~faithlab.report.figures` (the figures), :mod:`~faithlab.report.page` (``index.html``, from
:mod:`faithlab.html`'s pieces) and :mod:`~faithlab.report.writing` (the folder). Every public name is re-exported here
(``faithlab.report.write``).
"""

from faithlab.report.figures import MAP_SCALE, maps_figure, ranks_figure
from faithlab.report.meanings import (BOOK_URL, BOOK_URL_ENV, book_link, chapter_names, comprehensiveness_note,
                                      glossary, meaning)
from faithlab.report.sentences import (brief, duration, monte_carlo_sentence, overall_sentence, random_weights,
                                       sanity_sentences)
from faithlab.report.tables import (GOOD_CHANGE, INTERPRETATION, LEVEL, MC_SE, MC_SEPARATION, N_BOOT, RANKING_CHANGE,
                                    TABLES, WITHIN_MC, cost, monte_carlo_means, monte_carlo_pairs, on_randomised,
                                    overall, randomisable_metrics, ranks, sanity, separation, summary, tied_metrics)
from faithlab.report.writing import replaceable, write

__all__ = ["summary", "monte_carlo_means", "monte_carlo_pairs", "monte_carlo_sentence", "MC_SE", "MC_SEPARATION",
           "ranks", "overall", "separation", "overall_sentence", "tied_metrics", "glossary", "meaning",
           "book_link", "comprehensiveness_note", "sanity", "sanity_sentences", "cost", "brief", "duration",
           "random_weights", "randomisable_metrics", "on_randomised", "maps_figure", "ranks_figure", "write", "TABLES",
           "INTERPRETATION", "BOOK_URL", "replaceable"]


"""Few-class Fidelity's experimental protocol (Marchadour et al.; spec §2.5): the two few-class tasks, their models
and XAI sets, the maps of every method × alteration, and tidy frames of Fid, localisation and the class-flip
diagnostic for Tables 1–4 and Figs. 2–7.

The metric, the candidate search and the localisation scores live in :mod:`faithlab.metrics.papers.fewclass.fidelity`
and :mod:`faithlab.metrics.papers.fewclass.localisation`; this package only runs them over tasks, models, methods and
alterations and lays the results out, one row per image, one module per concept:

- :mod:`~faithlab_study.papers.fewclass.setup`: the tasks, their models and XAI sets (:func:`setup`), and the
  chapter's set-up table (``SETUP``);
- :mod:`~faithlab_study.papers.fewclass.experiments`: the methods and alterations and their maps, and the frames of
  Fid, curves, localisation, selections and flips;
- :mod:`~faithlab_study.papers.fewclass.claims`: the claims C1–C5 (``claim_*``), decided by the rules registered above
  them, and the chapter's mechanism premise (:func:`mechanism`, :func:`mechanism_table`);
- :mod:`~faithlab_study.papers.fewclass.paper`: the paper's numbers (Tables 1–2), which the claims quote.

Every public name is re-exported here (``faithlab_study.papers.fewclass.evaluate_task``).
"""

from faithlab_study.papers.fewclass.claims import (SWITCH_AT, UNCERTAIN_AT, alteration_gains, claim_alteration_gains,
                                                   claim_class_flip, claim_fid_bounds, claim_random_lowest,
                                                   claim_rank_agreement, claim_uncertain_selection, mechanism,
                                                   mechanism_table)
from faithlab_study.papers.fewclass.experiments import (ALTERATIONS, METHODS, NO_SG, curve_frame, evaluate_task,
                                                        fid_frame, flip_frame, localisation_frame, mechanism_frame,
                                                        method_maps, rank_agreement, selection_frame, wide_table)
from faithlab_study.papers.fewclass.paper import PAPER_C1
from faithlab_study.papers.fewclass.setup import (CAM_LAYERS, PAPER_TASK_LABELS, SETUP, STAND_INS, TASK_LABELS, TASKS,
                                                  Setup, setup, task_label)

__all__ = ["TASK_LABELS", "PAPER_TASK_LABELS", "task_label",
           "METHODS", "ALTERATIONS", "NO_SG", "TASKS", "STAND_INS", "CAM_LAYERS", "Setup", "setup", "method_maps",
           "fid_frame", "evaluate_task",
           "curve_frame", "localisation_frame", "selection_frame", "flip_frame", "mechanism_frame",
           "rank_agreement", "wide_table",
           "mechanism", "mechanism_table", "SWITCH_AT", "UNCERTAIN_AT", "alteration_gains", "PAPER_C1",
           "claim_random_lowest", "claim_alteration_gains",
           "claim_rank_agreement", "claim_uncertain_selection", "claim_class_flip", "claim_fid_bounds", "SETUP"]

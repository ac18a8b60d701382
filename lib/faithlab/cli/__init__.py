"""The ``faithlab`` command: ``faithlab evaluate`` scores explainers of your model on your images with every
faithfulness metric of the study and writes a report (tables, map figures, one HTML page).

::

    faithlab evaluate --model torchvision:resnet18 --weights my.pt --images my_images/ --out report/

Before any real work it shows the images, the model's preprocessing and the cost of each metric (model inputs
counted exactly by :func:`faithlab.evaluation.estimate`, seconds from the median of three warm forward passes at
``--batch-size`` and one warm call of each explainer), naming the metrics that are expensive at this image size;
``--estimate-only`` stops there. The report's ``estimate.csv`` and ``cost.csv`` set the estimate beside the
measured seconds per metric group. A run interrupted with Ctrl-C keeps its finished chunks in ``<out>.partial/``;
``--resume`` continues from them. One run at a time writes to an ``--out`` folder: it holds an OS lock on
``.<out>.lock`` beside it, and a second run on the same folder stops at once, naming the first. Then
:func:`faithlab.evaluate` streams the images through every metric under a progress bar, a randomised copy of the
model gives the sanity check of :func:`faithlab.report.sanity`, and :func:`faithlab.report.write` writes the
report. Usage errors (a flag's value that cannot work) print one line naming the flag and its fix and exit with
status 2, without a traceback.

One concept: the ``faithlab`` command line, from its flags to a written report (parsing, loading the model and
images, the estimate, the streamed evaluation and its resume); the rules it applies live in the library.

The package's modules: :mod:`~faithlab.cli.command` (:func:`main`, the entry point),
:mod:`~faithlab.cli.arguments` (the flags and their checks), :mod:`~faithlab.cli.loading` (the model and images),
:mod:`~faithlab.cli.estimate` (the cost, before and after), :mod:`~faithlab.cli.run` (the evaluate command's run),
:mod:`~faithlab.cli.resume` (the folder of finished chunks), :mod:`~faithlab.cli.lock` (one run per ``--out``) and
:mod:`~faithlab.cli.listing` (``--list-metrics``). Each imports the heavy packages (torch, pandas, the metrics)
inside its functions, so that the command starts light.
"""

from faithlab.cli import arguments, command, estimate, listing, loading, lock, resume, run
from faithlab.cli.arguments import UsageError, parse_explainers, parse_settings
from faithlab.cli.command import main

__all__ = ["main", "UsageError", "parse_explainers", "parse_settings", "arguments", "command", "estimate", "listing",
           "loading", "lock", "resume", "run"]
